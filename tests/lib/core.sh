# tests/lib/core.sh - the core of the test fixtures (bash), sourced by every
# test library (tests/*/lib.sh, tests/proto/e2e.sh, bench/lib.sh): the build
# and source trees, a temporary directory with a cleanup trap, loopback
# ports below the kernel's ephemeral range, processes started with a
# pidfile and stopped by their pid, and bounded waits.  See tests/README.md.
#
#   bp_setup NAME            T=a new temporary directory, BP_TEST=NAME, the
#                            traps: EXIT bp_cleanup, INT/TERM bp_fail
#   bp_fail MESSAGE          "FAIL: NAME: MESSAGE" (stderr), bp_show_logs,
#                            exit 1
#   bp_note MESSAGE          "NAME: MESSAGE" (stdout)
#   bp_kill SIGNAL PID...    kill(1), never with an empty pid, 0, 1 or a
#                            negative one (a process group)
#   bp_running PID / bp_gone PID   is PID alive / gone
#   bp_wait_gone PID TENTHS  wait up to TENTHS/10 s for PID to go
#   bp_wait_for DESC TENTHS CMD...  run CMD every 0.1 s until it succeeds;
#                            fail ("timed out waiting for DESC") after
#                            TENTHS tries
#   bp_free_port VAR         a free loopback TCP port below (or above) the
#                            ephemeral range
#   bp_start NAME PIDFILE CMD...    start a server, wait for its pidfile
#   bp_track PID...          stop PID too on exit (started by hand)
#   bp_alive NAME            fail unless NAME runs
#   bp_stop NAME [STATUS...|any]    stop NAME, check its exit status
#   bp_wait_listen ADDR NAME [TENTHS [PREFIXVAR]]  wait until ADDR (a unix
#                            socket path, HOST:PORT or PORT) accepts
#   bp_cleanup_first CMD / bp_cleanup_last CMD   more work for bp_cleanup,
#                            before / after the processes are stopped
#
# Settings (environment or the sourcing library):
#   BP_KEEP       non-empty and not 0: keep $T and say where it is;
#                 "fail": only when the test failed (long loops of a
#                 test, or the whole suite, without filling the disk)
#   BP_FAIL_PREFIX  what precedes a failure's message (default
#                 "FAIL: $BP_TEST: ")
#   BP_FAIL_FD    where failures go (default 2)
#   BP_CLEANUP_SIG  the signal of bp_cleanup (default TERM, then KILL
#                 after 3 s)
# A library may redefine bp_show_logs (what a failure shows).

# sourced once: the libraries that build on it source it again
[ -n "${BP_CORE_DIR:-}" ] && return 0
BP_CORE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The trees: top_srcdir is this file's ../..; top_builddir, when make check
# did not set it, is top_srcdir/build or the current directory when either
# holds bp-logd, else top_srcdir (an in-tree build).
: "${top_srcdir:=$(cd "$BP_CORE_DIR/../.." && pwd)}"
top_srcdir=$(cd "$top_srcdir" && pwd)
if [ -z "${top_builddir:-}" ]; then
	if [ -x "$top_srcdir/build/bp-logd" ]; then
		top_builddir=$top_srcdir/build
	elif [ -x "./bp-logd" ]; then
		top_builddir=$(pwd)
	else
		top_builddir=$top_srcdir
	fi
fi
top_builddir=$(cd "$top_builddir" && pwd)
PY=/usr/bin/python3

declare -A BP_LAUNCHER BP_PID BP_PIDFILE
BP_NAMES=()
BP_TRACKED=()
BP_PORTS=""
BP_FAILED=0
BP_CLEANUP_FIRST=()
BP_CLEANUP_LAST=()

# ---- failing and reporting ------------------------------------------------

# bp_fail MESSAGE: report, show the logs, exit 1.  The message is said
# again after the logs: a report that keeps only the head and the tail of
# a long output (a CI summary) still has it.
bp_fail() {
	local msg
	msg="${BP_FAIL_PREFIX-FAIL: ${BP_TEST:+$BP_TEST: }}$*"
	printf '%s\n' "$msg" >&"${BP_FAIL_FD:-2}"
	BP_FAILED=1
	bp_show_logs
	[ -n "${T:-}" ] && [ -d "$T" ] &&
		printf '%s\n' "---- the failure (said above the logs)" "$msg" \
			>&"${BP_FAIL_FD:-2}"
	exit 1
}

# bp_note MESSAGE: one line of the test's output.
bp_note() {
	echo "$BP_TEST: $*"
}

# bp_show_logs: the last lines of every log in the test directory.
bp_show_logs() {
	local f
	[ -n "${T:-}" ] && [ -d "$T" ] || return 0
	for f in $(find "$T" -name '*.log' -size +0 2>/dev/null | sort); do
		echo "---- ${f#"$T"/} (last 15 lines)" >&2
		tail -n 15 "$f" >&2
	done
}

# ---- processes ---------------------------------------------------------------

# bp_kill SIGNAL PID...: signal each PID that is a number above 1 and not
# this shell; empty ones are skipped.  Never "kill 0" (this test's whole
# process group, and make's with it) nor a negative pid.  Returns 1 when
# no PID was signalled.
bp_kill() {
	local sig=$1 p pids=()
	shift
	for p in "$@"; do
		case $p in '' | *[!0-9]*) continue ;; esac
		[ "$p" -gt 1 ] && [ "$p" != "$$" ] && [ "$p" != "$BASHPID" ] ||
			continue
		pids+=("$p")
	done
	[ ${#pids[@]} -gt 0 ] || return 1
	kill -"$sig" "${pids[@]}" 2>/dev/null
}

# bp_running PID: true while PID runs (false for an empty PID).
bp_running() {
	[ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null
}

# bp_gone PID: true once PID has exited.
bp_gone() {
	! bp_running "${1:-}"
}

# bp_wait_gone PID TENTHS: wait up to TENTHS/10 s for PID to exit.
bp_wait_gone() {
	local i
	for ((i = 0; i < $2; i++)); do
		bp_running "$1" || return 0
		sleep 0.1
	done
	bp_gone "$1"
}

# bp_wait_for DESC TENTHS CMD...: run CMD every 0.1 s until it succeeds;
# fail after TENTHS tries.
bp_wait_for() {
	local desc=$1 tenths=$2 i=0
	shift 2
	while ! "$@" 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -gt "$tenths" ] && bp_fail "timed out waiting for $desc"
		sleep 0.1
	done
	return 0
}

# bp_track PID...: processes started by hand, stopped by bp_cleanup.
bp_track() {
	local p
	for p in "$@"; do
		[ -n "$p" ] && BP_TRACKED+=("$p")
	done
	return 0
}

# bp_cleanup: the EXIT trap: BP_CLEANUP_FIRST, then every process started
# (bp_start, bp_track) gets BP_CLEANUP_SIG (TERM), 3 s, then KILL; then
# BP_CLEANUP_LAST; $T is removed unless BP_KEEP.  STATUS: the test's exit
# status (default $?, right for a trap that calls it first).
bp_cleanup() {
	local st=${1:-$?}
	local name cmd p sig=${BP_CLEANUP_SIG:-TERM} keep=${BP_KEEP:-}
	for cmd in "${BP_CLEANUP_FIRST[@]}"; do
		eval "$cmd"
	done
	for name in "${BP_NAMES[@]}"; do
		[ -n "${BP_LAUNCHER[$name]:-}" ] || continue
		bp_kill "$sig" "${BP_PID[$name]:-}" "${BP_LAUNCHER[$name]}"
	done
	bp_kill "$sig" "${BP_TRACKED[@]}"
	for name in "${BP_NAMES[@]}"; do
		[ -n "${BP_LAUNCHER[$name]:-}" ] || continue
		bp_wait_gone "${BP_LAUNCHER[$name]}" 30 ||
			bp_kill KILL "${BP_PID[$name]:-}" "${BP_LAUNCHER[$name]}"
	done
	for p in "${BP_TRACKED[@]}"; do
		bp_wait_gone "$p" 30 || bp_kill KILL "$p"
	done
	wait 2>/dev/null
	for cmd in "${BP_CLEANUP_LAST[@]}"; do
		eval "$cmd"
	done
	[ "$keep" = fail ] && { [ "$st" != 0 ] || keep=; }
	if [ -n "$keep" ] && [ "$keep" != 0 ]; then
		[ -n "${T:-}" ] && echo "${BP_TEST:-test}: files kept in $T" >&2
	elif [ -n "${T:-}" ]; then
		rm -rf "$T"
	fi
}

bp_cleanup_first() { BP_CLEANUP_FIRST+=("$1"); }
bp_cleanup_last() { BP_CLEANUP_LAST+=("$1"); }

# bp_setup NAME: BP_TEST=NAME, T=${TMPDIR:-/tmp}/bp-NAME.XXXXXX, the traps.
bp_setup() {
	BP_TEST=$1
	T=$(mktemp -d "${TMPDIR:-/tmp}/bp-$1.XXXXXX") ||
		{ echo "FAIL: $1: mktemp" >&2; exit 1; }
	trap bp_cleanup EXIT
	trap 'bp_fail "interrupted"' INT TERM
}

# ---- ports -------------------------------------------------------------------

# bp_free_port VAR: a loopback TCP port no socket uses, not handed out
# before in this test, and outside the kernel's ephemeral range: a
# listener port inside it can be taken as the source port of an outgoing
# connection between the check and the bind (seen in a network namespace,
# where the check of /proc/net/tcp does not even look).
bp_free_port() {
	local p i hex lo=32768 hi=60999 base span
	read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
	if [ "$lo" -ge 22000 ]; then
		base=20000 span=$((lo - 20000))
	else
		base=$((hi + 1)) span=$((65535 - hi))
	fi
	[ "$span" -ge 1000 ] || base=20000 span=40000
	for ((i = 0; i < 100; i++)); do
		p=$((base + (RANDOM * 32768 + RANDOM) % span))
		case " $BP_PORTS " in *" $p "*) continue ;; esac
		hex=$(printf ':%04X ' "$p")
		grep -q "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null &&
			continue
		BP_PORTS="$BP_PORTS $p"
		printf -v "$1" '%s' "$p"
		return 0
	done
	bp_fail "found no free port in 100 tries"
}

# ---- servers -------------------------------------------------------------------

# bp_start NAME PIDFILE COMMAND...: start COMMAND in the background (stdout
# NAME.out, stderr NAME.log in BP_LOGDIR, default $T; BP_START_APPEND=1
# appends to them), wait up to BP_WAIT tenths of a second (default 100)
# for it to write PIDFILE.  The pid in PIDFILE is the server's; the
# launcher is what we started (the same process unless a wrapper forks).
bp_start() {
	local name=$1 pidfile=$2 i pid dir=${BP_LOGDIR:-$T}
	local tenths=${BP_WAIT:-100}
	shift 2
	rm -f "$pidfile"
	if [ "${BP_START_APPEND:-0}" = 1 ]; then
		"$@" >>"$dir/$name.out" 2>>"$dir/$name.log" &
	else
		"$@" >"$dir/$name.out" 2>"$dir/$name.log" &
	fi
	BP_LAUNCHER[$name]=$!
	BP_PIDFILE[$name]=$pidfile
	BP_PID[$name]=""
	case " ${BP_NAMES[*]} " in *" $name "*) ;; *) BP_NAMES+=("$name") ;; esac
	for ((i = 0; i < tenths; i++)); do
		if [ -s "$pidfile" ]; then
			read -r pid <"$pidfile"
			if bp_running "$pid"; then
				BP_PID[$name]=$pid
				return 0
			fi
		fi
		bp_running "${BP_LAUNCHER[$name]}" ||
			bp_fail "$name exited at start: $*"
		sleep 0.1
	done
	bp_fail "$name did not write $pidfile within $((tenths / 10)) s: $*"
}

# bp_alive NAME: fail unless NAME still runs.
bp_alive() {
	bp_running "${BP_PID[$1]:-}" || bp_fail "$1 died"
}

# bp_stop NAME [STATUS...]: BP_STOP_SIGNAL (default TERM) to NAME's pid,
# wait up to 15 s for the launcher (then SIGKILL and fail); fail unless it
# exits 0 or one of the STATUSes ("any": whatever it exits with).
bp_stop() {
	local name=$1 sig=${BP_STOP_SIGNAL:-TERM} rc s
	shift
	[ -n "${BP_LAUNCHER[$name]:-}" ] || bp_fail "bp_stop: $name not started"
	bp_kill "$sig" "${BP_PID[$name]:-}"
	if ! bp_wait_gone "${BP_LAUNCHER[$name]}" 150; then
		bp_kill KILL "${BP_PID[$name]:-}" "${BP_LAUNCHER[$name]}"
		bp_fail "$name did not stop within 15 s of SIG$sig"
	fi
	wait "${BP_LAUNCHER[$name]}"
	rc=$?
	BP_LAUNCHER[$name]=""
	for s in 0 "$@"; do
		[ "$rc" = "$s" ] || [ "$s" = any ] && return 0
	done
	bp_fail "$name exited with status $rc after SIG$sig"
}

# bp_wait_listen ADDR NAME [TENTHS [PREFIXVAR]]: wait up to TENTHS/10 s
# (default 10 s) until ADDR accepts: a unix socket path (it exists), or
# HOST:PORT or PORT (127.0.0.1) that a TCP connection reaches, run under
# the command prefix in the array named PREFIXVAR (a network namespace).
# Fails at once when NAME (bp_start's) dies.
bp_wait_listen() {
	local addr=$1 name=$2 tenths=${3:-100} i host port
	local -a pre=()
	[ -n "${4:-}" ] && { local -n bp_wl_pre=$4; pre=("${bp_wl_pre[@]}"); }
	case $addr in
	/*) ;;
	*:*) host=${addr%:*} port=${addr##*:} ;;
	*) host=127.0.0.1 port=$addr ;;
	esac
	for ((i = 0; i < tenths; i++)); do
		case $addr in
		/*) [ -S "$addr" ] && return 0 ;;
		*) "${pre[@]}" bash -c "exec 3<>/dev/tcp/$host/$port" \
			2>/dev/null && return 0 ;;
		esac
		[ -n "${BP_LAUNCHER[$name]:-}" ] && bp_alive "$name"
		sleep 0.1
	done
	bp_fail "$name does not listen on $addr after $((tenths / 10)) s"
}
