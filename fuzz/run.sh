#!/bin/sh
# run.sh - run every protocol processor fuzz target for a bounded time.
#
# Usage: fuzz/run.sh [SECONDS] [TARGET...]
#
# Builds nothing: configure with --enable-fuzzing CC=clang and make first.
# Seeds each target with the captures of tests/proto (fuzz/mkseeds.py),
# runs fuzz/fuzz-NAME for SECONDS (default 60) with libFuzzer's
# -max_total_time on a scratch corpus in a temporary directory, and prints
# per target the executions, the time, executions per second, the corpus
# size and new coverage features.  TARGETs default to all of http fastcgi
# postgresql dns line oneshot redis mysql http2.  A crash leaves its reproducer (crash-*,
# timeout-*, leak-*) in fuzz/artifacts/ and makes the exit status 1.
# FUZZ_BIN names the directory of the built targets (default: fuzz/ of the
# source tree, an in-tree build).  FUZZ_MAX_LEN (default 8192) caps the input length (longer seeds are cut,
# which is a valid input too).  FUZZ_KEEP=1 keeps the scratch directory.  The targets run one after the
# other, one process each (the machine is shared).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
SECS=${1:-60}
[ $# -gt 0 ] && shift
TARGETS=${*:-http fastcgi postgresql dns line oneshot redis mysql http2}
case $SECS in *[!0-9]*|'') echo "run.sh: SECONDS must be a number" >&2; exit 2 ;; esac

W=$(mktemp -d /tmp/bp-fuzz.XXXXXX)
trap '[ "${FUZZ_KEEP:-0}" = 1 ] && echo "run.sh: kept $W" >&2 || rm -rf "$W"' EXIT INT TERM
mkdir -p "$HERE/artifacts"
/usr/bin/python3 "$HERE/mkseeds.py" "$TOP/tests/proto/captures" "$W/seeds" >/dev/null

status=0
printf '%-11s %12s %8s %10s %7s %6s  %s\n' target execs seconds "exec/s" corpus cov result
for t in $TARGETS; do
	bin=${FUZZ_BIN:-$HERE}/fuzz-$t
	if [ ! -x "$bin" ]; then
		echo "run.sh: $bin not built (./configure --enable-fuzzing CC=clang && make)" >&2
		exit 2
	fi
	mkdir -p "$W/corpus-$t" "$W/seeds/$t"
	start=$(date +%s)
	if "$bin" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=1024 \
		-max_len="${FUZZ_MAX_LEN:-8192}" \
		-print_final_stats=1 -artifact_prefix="$HERE/artifacts/$t-" \
		"$W/corpus-$t" "$W/seeds/$t" > "$W/$t.log" 2>&1; then
		res=ok
	else
		res=CRASH
		status=1
	fi
	end=$(date +%s)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$W/$t.log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$W/$t.log")
	cov=$(grep -o 'cov: [0-9]*' "$W/$t.log" | tail -1 | cut -d' ' -f2)
	corp=$(ls "$W/corpus-$t" | wc -l)
	printf '%-11s %12s %8s %10s %7s %6s  %s\n' "$t" "${execs:-?}" \
		$((end - start)) "${rate:-?}" "$corp" "${cov:-?}" "$res"
	if [ $res != ok ]; then
		grep -E 'ERROR|fuzz-|SUMMARY|artifact' "$W/$t.log" | head -20 >&2
	fi
done
exit $status
