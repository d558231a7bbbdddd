# bench/lib.sh - helpers of bench/run (bash): servers started with
# pidfiles in the current benchmark's directory, bp-logd, wrk, CPU time of
# a process, and the results file.  The work directory ($W, bp_setup),
# free ports (bp_free_port), bounded waits (bp_wait_listen), bp_stop and
# the EXIT trap are the test fixtures of tests/lib/ (see tests/README.md).
#
# Every server runs on 127.0.0.1 in the work directory $W; whatever was
# started is stopped by the EXIT trap.  Results are "key value" lines in
# $RESULTS, turned into BENCHMARKS.md's table by bench/report.py.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${top_srcdir:=$(cd "$BENCH_DIR/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
# shellcheck source=../tests/lib/logd.sh
. "$top_srcdir/tests/lib/logd.sh"
# shellcheck source=../tests/lib/servers.sh
. "$top_srcdir/tests/lib/servers.sh"

WRK_EXTRA=()
BP_FAIL_PREFIX="bench: FAIL: "
[ "${BENCH_KEEP:-0}" = 1 ] && BP_KEEP=1

say() { echo "bench: $*" >&2; }
fail() { bp_fail "$@"; }

# The last lines of the logs of the current benchmark (what a failure
# shows).
bp_show_logs() {
	local f
	[ -n "${BD:-}" ] && [ -d "$BD" ] || return 0
	for f in $(find "$BD" -maxdepth 3 \( -name '*.log' -o -name '*.err' \) \
		   -size +0 2>/dev/null | sort); do
		echo "---- ${f#"$W"/} (last 10 lines)" >&2
		tail -n 10 "$f" >&2
	done
}

# start NAME PIDFILE COMMAND...: bp_start in a session of its own, its
# output in $BD/NAME.out and NAME.log, up to 20 s for the pidfile.
start() {
	BP_LOGDIR=$BD BP_WAIT=200 bp_start "$1" "$2" setsid "${@:3}"
}

# stop NAME: bp_stop, whatever NAME exits with.
stop() {
	bp_stop "$1" any
}

# logd_start DIR: bp-logd on DIR/logd.sock writing DIR/logs, serving the
# users the servers switch to; sets LOGD_SOCK.
logd_start() {
	BP_LOGD=$LOGD BP_LOGDIR=$BD bp_logd_start "$1" -u www-data -u postgres
	LOGD_SOCK=$BP_LOGD_SOCK
}

# traced_env RULES: TRACED, the env(1) prefix that runs a program traced.
traced_env() {
	TRACED=(env "LD_PRELOAD=$SHIM" "BTRACE_LOGD=$LOGD_SOCK"
		"BTRACE_RULES=$(usable_rules "$1")")
}

# usable_rules RULES: RULES without the rules of processors this build
# does not have (a rule naming an unknown protocol makes the shim ignore
# all of them); each one left out is noted in the results.
usable_rules() {
	local out="" r proto
	local IFS=';'
	for r in $1; do
		r=$(echo "$r" | sed 's/^ *//; s/ *$//')
		[ -n "$r" ] || continue
		proto=${r%% *}
		if proto_known "$proto"; then
			out="$out${out:+; }$r"
		else
			note "no '$proto' processor in this build: rule '$r' left out"
		fi
	done
	echo "$out"
}

declare -A B_PROTO_KNOWN
# proto_known NAME: does this build's shim accept a rule for NAME?
proto_known() {
	local p=$1
	if [ -z "${B_PROTO_KNOWN[$p]:-}" ]; then
		if env "LD_PRELOAD=$SHIM" "BTRACE_LOGD=$W/none.sock" \
		       "BTRACE_SPOOL=$W/spool-probe" "BTRACE_RULES=$p port 9" \
		       /bin/true 2>&1 | grep -q 'BTRACE_RULES'; then
			B_PROTO_KNOWN[$p]=no
		else
			B_PROTO_KNOWN[$p]=yes
		fi
	fi
	[ "${B_PROTO_KNOWN[$p]}" = yes ]
}

# cpu_ticks PID: utime+stime in clock ticks (0 if gone).
cpu_ticks() {
	[ -r "/proc/$1/stat" ] || { echo 0; return; }
	sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# cpu_ticks_tree PID...: CPU ticks of each PID and its children (workers,
# backends), with what their reaped children used (cutime, cstime: CGI
# programs, recycled workers), summed.
cpu_ticks_tree() {
	local p c all=()
	for p in "$@"; do
		[ -n "$p" ] || continue
		all+=("$p")
		for c in $(pgrep -P "$p" 2>/dev/null); do
			all+=("$c")
		done
	done
	[ ${#all[@]} -gt 0 ] || { echo 0; return; }
	for p in "${all[@]}"; do
		[ -r "/proc/$p/stat" ] && sed 's/^.*) //' "/proc/$p/stat"
	done | awk '{ t += $12 + $13 + $14 + $15 } END { print t + 0 }'
}

# wrk_run URL CONNS SECONDS OUT: run wrk (one thread, plus the options
# in the array WRK_EXTRA); OUT gets its output.  Prints "RPS P99_US
# REQUESTS".
wrk_run() {
	local url=$1 conns=$2 secs=$3 out=$4
	timeout $((secs + 30)) wrk -t1 -c"$conns" -d"${secs}s" --latency \
		"${WRK_EXTRA[@]}" "$url" >"$out" 2>&1 || fail "wrk failed on $url: $(tail -3 "$out")"
	grep -q 'Non-2xx' "$out" && fail "wrk got errors from $url: $(grep Non-2xx "$out")"
	awk '
	function us(v) {
		if (v ~ /us$/) return v + 0;
		if (v ~ /ms$/) return v * 1000;
		if (v ~ /s$/)  return v * 1000000;
		return v + 0;
	}
	/^ +99%/ { p99 = us($2) }
	/requests in/ { n = $1 }
	/^Requests\/sec:/ { rps = $2 }
	END { if (rps == "" || p99 == "") exit 1; printf "%s %.1f %s\n", rps, p99, n }
	' "$out" || fail "cannot read wrk's output $out"
}

# result KEY VALUE...: one line of the results file.
result() {
	echo "$*" >>"$RESULTS"
}

# note TEXT: a remark shown under the table.
note() {
	grep -qxF "note $*" "$RESULTS" 2>/dev/null || echo "note $*" >>"$RESULTS"
}

# ratio_pairs KEY A... -- B...: per-pair ratios B/A, their median.
median() {
	"$PY" -c 'import sys, statistics; v = [float(x) for x in sys.argv[1:]]; print("%.4f" % statistics.median(v)) if v else sys.exit(1)' "$@"
}
