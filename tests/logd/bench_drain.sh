#!/bin/bash
# bench_drain.sh - how many events bp-logd drains per second of its own
# CPU time, on one core.  Not a test (nothing is asserted about speed):
# it prints the figures.  Run from a build directory, ideally one
# configured without --enable-debug:
#
#   sh tests/logd/bench_drain.sh [EVENTS_PER_THREAD]
#
# bp-logd is pinned to CPU 0 and the tracer to CPU 1 (taskset), segments
# go to /dev/shm so the disk is not measured.  Each run checks that every
# record arrived (verify_log) before it reports.
. "${srcdir:-.}/tests/logd/lib.sh"

N=${1:-10000000}
command -v taskset >/dev/null || fail "taskset (util-linux) is needed"
SHM=$(mktemp -d /dev/shm/bp-bench.XXXXXX)
CLEANUP_HOOK="rm -rf $SHM"
LOGS=$SHM/logs
tck=$(getconf CLK_TCK)

cpu_ticks() {
	# "utime stime" of $1 (fields 14 and 15 of /proc/PID/stat)
	sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12, $13 }'
}

run() {
	label=$1; threads=$2; per=$3; shift 3
	rm -rf "$LOGS"
	rm -f "$T/logd.pid"
	taskset -c 0 "$LOGD" -s "$SOCK" -d "$LOGS" -H bench -p "$T/logd.pid" -S 1G \
		2>>"$T/logd.log" &
	LOGD_PID=$!
	bp_track "$LOGD_PID"
	wait_for "bp-logd" 100 test -s "$T/logd.pid"
	c0=$(cpu_ticks "$LOGD_PID")
	t0=$(date +%s.%N)
	taskset -c 1 "$TRACER" -s "$SOCK" -q -t "$threads" -n "$per" -T 300 "$@" \
		>"$T/bench.out" 2>&1 || fail "tracer: $(cat "$T/bench.out")"
	t1=$(date +%s.%N)
	c1=$(cpu_ticks "$LOGD_PID")
	bytes=$(du -sb "$LOGS" | cut -f1)
	stop_logd
	"$VERIFY" -n $((threads * per)) "$LOGS" >"$T/verify.out" ||
		fail "records lost in the benchmark: $(cat "$T/verify.out")"
	awk -v d="$label" -v n=$((threads * per)) -v c0="$c0" -v c1="$c1" -v tck="$tck" \
	    -v t0="$t0" -v t1="$t1" -v b="$bytes" 'BEGIN {
		split(c0, a, " "); split(c1, z, " ")
		usr = (z[1] - a[1]) / tck; sys = (z[2] - a[2]) / tck
		cpu = usr + sys; wall = t1 - t0
		if (cpu <= 0) cpu = 1 / tck
		printf "%-34s %9d events %6.1f MB  wall %6.3f s  bp-logd cpu %6.3f s (user %.2f, sys %.2f)  %6.2f M events/s per core  %7.1f MB/s\n",
		       d, n, b / 1e6, wall, cpu, usr, sys, n / cpu / 1e6, b / cpu / 1e6
	}'
	sed -n 's/^published.*(\(.*\))$/    tracer: \1/p' "$T/bench.out"
}

echo "bench_drain: $(nproc) CPUs; $(uname -r); binaries in $B"
run "2 threads, 1 MiB slots, ~45 B/ev" 2 "$N" -S 1048576 -z 32
run "2 threads, 1 MiB slots, ~150 B/ev" 2 $((N / 2)) -S 1048576 -z 240
run "200 threads, 64 KiB slots" 200 $((N / 100)) -S 65536 -z 32
run "1000 threads, 16 KiB slots" 1000 $((N / 500)) -S 16384 -z 32
