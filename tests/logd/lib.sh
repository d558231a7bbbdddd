# lib.sh - shared helpers of bp-logd's integration tests (sourced).
#
# Every test runs in its own temp directory (kept when KEEP=1), starts
# bp-logd with a pidfile, bounds every wait, and kills only the processes
# it started, by pid, in its EXIT trap.  Run from the build directory
# (make check does); BUILDDIR overrides.
set -u

B=${BUILDDIR:-$(pwd)}
LOGD=$B/bp-logd
DUMP=$B/bp-dump
TRACER=$B/tests/logd/fake_tracer
VERIFY=$B/tests/logd/verify_log
for f in "$LOGD" "$DUMP" "$TRACER" "$VERIFY"; do
	[ -x "$f" ] || { echo "FAIL: $f is not built (run make check)"; exit 99; }
done

T=$(mktemp -d /tmp/bp-logd-test.XXXXXX)
SOCK=$T/logd.sock
LOGS=$T/logs
STARTED=""

cleanup() {
	for p in $STARTED; do
		kill -KILL "$p" 2>/dev/null
	done
	${CLEANUP_HOOK:-true}
	if [ -n "${KEEP:-}" ]; then
		echo "kept $T"
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
	echo "FAIL: $*"
	if [ -s "$T/logd.err" ]; then
		echo "--- bp-logd stderr:"
		tail -n 20 "$T/logd.err"
	fi
	exit 1
}

# wait_for DESC TENTHS CMD...: run CMD every 0.1 s until it succeeds.
wait_for() {
	desc=$1; tenths=$2; shift 2
	i=0
	while ! "$@" 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -gt "$tenths" ] && fail "timed out waiting for $desc"
		sleep 0.1
	done
	return 0
}

alive() { kill -0 "$1" 2>/dev/null; }
dead() { ! kill -0 "$1" 2>/dev/null; }

# start_logd [OPTIONS...]: bp-logd on $SOCK writing $LOGS, stderr to
# $T/logd.err; sets LOGD_PID.
start_logd() {
	rm -f "$T/logd.pid"
	# LOGD_EXTRA: more options for every bp-logd (e.g. -v when debugging)
	"$LOGD" -s "$SOCK" -d "$LOGS" -H testhost -p "$T/logd.pid" ${LOGD_EXTRA:-} "$@" \
		2>>"$T/logd.err" &
	LOGD_PID=$!
	STARTED="$STARTED $LOGD_PID"
	wait_for "bp-logd's pidfile" 100 test -s "$T/logd.pid"
	[ "$(cat "$T/logd.pid")" = "$LOGD_PID" ] || fail "pidfile does not hold bp-logd's pid"
}

# stop_logd: SIGTERM, wait (bounded) and check exit status 0.
stop_logd() {
	kill -TERM "$LOGD_PID"
	wait_for "bp-logd to exit" 300 dead "$LOGD_PID"
	wait "$LOGD_PID"
	st=$?
	[ "$st" -eq 0 ] || fail "bp-logd exited with status $st"
	[ ! -e "$T/logd.pid" ] || fail "pidfile left behind"
}

# start_tracer NAME ARGS...: fake_tracer in the background, output in
# $T/NAME.out; sets TRACER_PID.
start_tracer() {
	name=$1; shift
	"$TRACER" -s "$SOCK" ${TRACER_Q--q} "$@" >"$T/$name.out" 2>"$T/$name.err" &
	TRACER_PID=$!
	STARTED="$STARTED $TRACER_PID"
}

# wait_tracer PID NAME: wait (bounded, 120 s) and require exit status 0.
wait_tracer() {
	wait_for "tracer $2" 1200 dead "$1"
	wait "$1"
	st=$?
	[ "$st" -eq 0 ] || { cat "$T/$2.err"; fail "tracer $2 exited with status $st"; }
}
