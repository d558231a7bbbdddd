# lib.sh - shared helpers of bp-logd's integration tests (sourced).
#
# Every test runs in its own temp directory (kept when KEEP=1 or
# BP_KEEP=1), starts bp-logd with a pidfile, bounds every wait, and kills
# only the processes it started, by pid, in its EXIT trap: the fixtures
# of tests/lib/ (core.sh, logd.sh; see tests/README.md).  Run from the
# build directory (make check does); BUILDDIR overrides.
set -u
: "${top_builddir:=${BUILDDIR:-$(pwd)}}"
# shellcheck source=../lib/logd.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/logd.sh"

B=$top_builddir
LOGD=$B/bp-logd
DUMP=$B/bp-dump
TRACER=$B/tests/logd/fake_tracer
VERIFY=$B/tests/logd/verify_log
for f in "$LOGD" "$DUMP" "$TRACER" "$VERIFY"; do
	[ -x "$f" ] || { echo "FAIL: $f is not built (run make check)"; exit 99; }
done

# failures: "FAIL: MESSAGE" on stdout, then bp-logd's stderr
BP_FAIL_PREFIX="FAIL: "
BP_FAIL_FD=1
: "${BP_KEEP:=${KEEP:-}}"
# what the tests start is killed outright on exit (SIGKILL)
BP_CLEANUP_SIG=KILL
bp_setup logd-test
trap 'exit 1' INT TERM
SOCK=$T/logd.sock
LOGS=$T/logs
bp_cleanup_last '${CLEANUP_HOOK:-true}'

bp_show_logs() {
	if [ -s "$T/logd.log" ]; then
		echo "--- bp-logd stderr:"
		tail -n 20 "$T/logd.log"
	fi
}

fail() { bp_fail "$@"; }
wait_for() { bp_wait_for "$@"; }
alive() { bp_running "$1"; }
dead() { bp_gone "$1"; }

# start_logd [OPTIONS...]: bp-logd on $SOCK writing $LOGS (bp_logd_start
# with -H testhost and LOGD_EXTRA, more options for every bp-logd, e.g.
# -v when debugging), stderr appended to $T/logd.log; sets LOGD_PID.
start_logd() {
	BP_LOGD=$LOGD
	# shellcheck disable=SC2086
	bp_logd_start -s "$SOCK" -l "$LOGS" "$T" -H testhost ${LOGD_EXTRA:-} "$@"
	LOGD_PID=$BP_LOGD_PID
	[ "$(cat "$T/logd.pid")" = "$LOGD_PID" ] || fail "pidfile does not hold bp-logd's pid"
}

# stop_logd: SIGTERM, wait (bounded) and check exit status 0.
stop_logd() {
	bp_kill TERM "${LOGD_PID:-}" || fail "stop_logd: no bp-logd running"
	wait_for "bp-logd to exit" 300 dead "$LOGD_PID"
	wait "$LOGD_PID"
	st=$?
	[ "$st" -eq 0 ] || fail "bp-logd exited with status $st"
	[ ! -e "$T/logd.pid" ] || fail "pidfile left behind"
	BP_LAUNCHER[logd]=""
}

# start_tracer NAME ARGS...: fake_tracer in the background, output in
# $T/NAME.out; sets TRACER_PID.
start_tracer() {
	name=$1; shift
	"$TRACER" -s "$SOCK" ${TRACER_Q--q} "$@" >"$T/$name.out" 2>"$T/$name.err" &
	TRACER_PID=$!
	bp_track "$TRACER_PID"
}

# wait_tracer PID NAME: wait (bounded, 120 s) and require exit status 0.
wait_tracer() {
	wait_for "tracer $2" 1200 dead "$1"
	wait "$1"
	st=$?
	[ "$st" -eq 0 ] || { cat "$T/$2.err"; fail "tracer $2 exited with status $st"; }
}
