# lib.sh - shared helpers of the transparency tests (sourced by bash).
#
# Every script runs in its own temp directory ($T, kept when BP_KEEP=1),
# starts its own bp-logd with a pidfile when it needs one, bounds every
# wait, and kills only the processes it started, by pid, in its EXIT trap.
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
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
if [ -z "${top_builddir:-}" ]; then
	if [ -x "$top_srcdir/build/bp-logd" ]; then
		top_builddir=$top_srcdir/build
	else
		top_builddir=$(pwd)
	fi
fi
B=$top_builddir
SHIM=$B/.libs/libbtrace.so
LOGD=$B/bp-logd
DUMP=$B/bp-dump
BPRUN=$B/bp-run
PY=/usr/bin/python3
LINE_RULES='line port 1-65535; line unix *; line exe .'

for f in "$SHIM" "$LOGD" "$DUMP" "$BPRUN"; do
	[ -e "$f" ] || { echo "FAIL: $f is not built (run make first)"; exit 99; }
done

T=$(mktemp -d /tmp/bp-transp.XXXXXX)
STARTED=""

tp_cleanup() {
	for p in $STARTED; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in $STARTED; do
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null
	done
	if [ -n "${BP_KEEP:-}" ]; then
		echo "kept $T"
	else
		rm -rf "$T"
	fi
}
trap tp_cleanup EXIT
trap 'exit 1' INT TERM

fail() {
	echo "FAIL: $*"
	exit 1
}

# start_logd: a bp-logd on $T/logd.sock writing $T/logs; sets LOGD_PID.
start_logd() {
	rm -f "$T/logd.pid"
	"$LOGD" -s "$T/logd.sock" -d "$T/logs" -H transp -p "$T/logd.pid" \
		2>>"$T/logd.err" &
	LOGD_PID=$!
	STARTED="$STARTED $LOGD_PID"
	for _ in $(seq 100); do
		[ -s "$T/logd.pid" ] && [ -S "$T/logd.sock" ] && return 0
		sleep 0.1
	done
	fail "bp-logd did not start (see $T/logd.err)"
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
