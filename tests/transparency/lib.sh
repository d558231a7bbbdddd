# lib.sh - shared helpers of the transparency tests (sourced by bash).
#
# Every script runs in its own temp directory ($T, kept when BP_KEEP=1),
# starts its own bp-logd with a pidfile when it needs one, bounds every
# wait, and kills only the processes it started, by pid, in its EXIT trap
# (the fixtures of tests/lib/; see tests/README.md).
# make check runs the scripts from the build directory with top_builddir
# and top_srcdir set; run by hand, they find them from their own path.
#
# The ways a program is run (MODE):
#   plain   untraced: the reference
#   logd    LD_PRELOAD=libbtrace.so, a bp-logd, built-in rules (no
#           processor matches here: readiness isolation only)
#   line    as logd, with the line processor on every channel (every TCP
#           and UDP port, every unix path, pipes and socketpairs through an
#           exe rule): short reads at every newline, EAGAIN once after each
#           message on non-blocking fds, one ready fd per readiness call
#   spool   as line, without bp-logd: events go to a spool directory
#   noiso   as line, with BTRACE_ISOLATION=0 (observation only)
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/logd.sh
. "$here/../lib/logd.sh"
B=$top_builddir
SHIM=$B/.libs/libbtrace.so
LOGD=$B/bp-logd
DUMP=$B/bp-dump
BPRUN=$B/bp-run
LINE_RULES='line port 1-65535; line unix *; line exe .'

for f in "$SHIM" "$LOGD" "$DUMP" "$BPRUN"; do
	[ -e "$f" ] || { echo "FAIL: $f is not built (run make first)"; exit 99; }
done

# failures: "FAIL: MESSAGE" on stdout, nothing more
BP_FAIL_PREFIX="FAIL: "
BP_FAIL_FD=1
bp_show_logs() { :; }
bp_setup transp
trap 'exit 1' INT TERM

fail() { bp_fail "$@"; }

# start_logd: a bp-logd on $T/logd.sock writing $T/logs (stderr appended
# to $T/logd.log); sets LOGD_PID.
start_logd() {
	BP_LOGD=$LOGD
	bp_logd_start "$T" -H transp
	LOGD_PID=$BP_LOGD_PID
}

# mode_env MODE: print the environment assignments of MODE, one per line
# (for env(1)); nothing for plain.
mode_env() {
	case $1 in
	plain) ;;
	logd) printf '%s\n' "LD_PRELOAD=$SHIM" "BTRACE_LOGD=$T/logd.sock" ;;
	line) printf '%s\n' "LD_PRELOAD=$SHIM" "BTRACE_LOGD=$T/logd.sock" \
		"BTRACE_RULES=$LINE_RULES" ;;
	spool) printf '%s\n' "LD_PRELOAD=$SHIM" "BTRACE_LOGD=$T/nonexistent.sock" \
		"BTRACE_SPOOL=$T/spool" "BTRACE_RULES=$LINE_RULES" ;;
	noiso) printf '%s\n' "LD_PRELOAD=$SHIM" "BTRACE_LOGD=$T/logd.sock" \
		"BTRACE_RULES=$LINE_RULES" "BTRACE_ISOLATION=0" ;;
	*) fail "unknown mode $1" ;;
	esac
}

# run_mode MODE SECS CMD...: run CMD in MODE with a time limit; returns
# its status (124 when the limit hit).
run_mode() {
	local mode=$1 secs=$2
	shift 2
	local -a envs=()
	mapfile -t envs < <(mode_env "$mode")
	timeout -k 5 "$secs" env -u LD_PRELOAD -u BTRACE_RULES -u BTRACE_CONF \
		-u BTRACE_ISOLATION -u BTRACE_LOGD -u BTRACE_SPOOL -u BTRACE_DISABLE \
		${envs[@]+"${envs[@]}"} "$@"
}
