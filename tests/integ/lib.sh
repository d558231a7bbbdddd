# tests/integ/lib.sh - shared by the integration tests (bash).
#
# Source it, then call bp_init NAME.  It gives each test a temporary
# directory, free loopback ports, servers started with pidfiles and
# bounded waits, a cleanup trap that stops whatever the test started, and
# the tracing tools found in the build tree.
#
# Environment:
#   top_builddir, top_srcdir  the build and source trees (`make check` sets
#                             them; by hand they default to this file's
#                             ../..)
#   BP_KEEP=1                 keep the temporary directory (logs, traces,
#                             paths.db) and print where it is
#   BP_REQUESTS               requests per client run (default 320)
#
# Tracing tools, found in the build tree (a test fails, never skips, when
# one it needs is missing):
#   bp-logd        -f -d LOGDIR -s SOCKET
#   bp-run         -s SOCKET [--no-isolation] [-r RULES] -- COMMAND...
#                  (without it: LD_PRELOAD=libbtrace.so and BTRACE_LOGD,
#                  BTRACE_RULES, BTRACE_ISOLATION=0 set here)
#   bp-reconstruct LOGDIR -o paths.db

BP_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${top_srcdir:=$(cd "$BP_LIB_DIR/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
top_srcdir=$(cd "$top_srcdir" && pwd)
top_builddir=$(cd "$top_builddir" && pwd)
EX=$top_builddir/examples
PY=/usr/bin/python3
: "${BP_REQUESTS:=320}"

declare -A BP_LAUNCHER BP_PID BP_PIDFILE
BP_NAMES=()
BP_PREFIX=()
BACKEND_OPTS=()
BP_PORTS=""
BP_FAILED=0

# bp_fail MESSAGE: report, show the logs of what runs, exit 1.
bp_fail() {
	echo "FAIL: $BP_TEST: $*" >&2
	BP_FAILED=1
	bp_show_logs
	exit 1
}

bp_note() {
	echo "$BP_TEST: $*"
}

# The last lines of every log in the test directory.
bp_show_logs() {
	local f
	[ -n "${T:-}" ] && [ -d "$T" ] || return 0
	for f in $(find "$T" -name '*.log' -size +0 2>/dev/null | sort); do
		echo "---- ${f#"$T"/} (last 15 lines)" >&2
		tail -n 15 "$f" >&2
	done
}

bp_cleanup() {
	local name
	for name in "${BP_NAMES[@]}"; do
		[ -n "${BP_LAUNCHER[$name]:-}" ] || continue
		# never "kill 0": a server that died before its pidfile has no
		# pid, and 0 would signal this test's whole process group
		kill -TERM ${BP_PID[$name]:+"${BP_PID[$name]}"} \
			"${BP_LAUNCHER[$name]}" 2>/dev/null
	done
	for name in "${BP_NAMES[@]}"; do
		[ -n "${BP_LAUNCHER[$name]:-}" ] || continue
		bp_wait_gone "${BP_LAUNCHER[$name]}" 30 ||
			kill -KILL ${BP_PID[$name]:+"${BP_PID[$name]}"} \
				"${BP_LAUNCHER[$name]}" 2>/dev/null
	done
	wait 2>/dev/null
	if [ "${BP_KEEP:-0}" = 1 ]; then
		echo "$BP_TEST: files kept in $T" >&2
	elif [ -n "${T:-}" ]; then
		rm -rf "$T"
	fi
}

# bp_init NAME: temp dir, trap.
bp_init() {
	BP_TEST=$1
	T=$(mktemp -d "${TMPDIR:-/tmp}/bp-$1.XXXXXX") ||
		{ echo "FAIL: $1: mktemp" >&2; exit 1; }
	trap bp_cleanup EXIT
	trap 'bp_fail "interrupted"' INT TERM
	local p
	for p in ex-backend ex-client ex-threads ex-prefork ex-pool ex-epoll \
		 ex-libevent; do
		[ -x "$EX/$p" ] || bp_fail "$EX/$p is not built (run make)"
	done
	[ -x "$PY" ] || bp_fail "$PY is missing (apt-get install python3)"
}

# bp_wait_gone PID TENTHS: wait up to TENTHS/10 s for PID to exit.
bp_wait_gone() {
	local i
	for ((i = 0; i < $2; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	! kill -0 "$1" 2>/dev/null
}

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

# bp_start NAME PIDFILE COMMAND...: start COMMAND in the background
# (stdout NAME.out, stderr NAME.log in $T), wait up to 10 s for it to write
# PIDFILE.  The pid in PIDFILE is the server's; the launcher is what we
# started (the same process unless a wrapper forks).
bp_start() {
	local name=$1 pidfile=$2 i pid
	shift 2
	rm -f "$pidfile"
	"$@" >"$T/$name.out" 2>"$T/$name.log" &
	BP_LAUNCHER[$name]=$!
	BP_PIDFILE[$name]=$pidfile
	BP_PID[$name]=""
	BP_NAMES+=("$name")
	for ((i = 0; i < 100; i++)); do
		if [ -s "$pidfile" ]; then
			read -r pid <"$pidfile"
			if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
				BP_PID[$name]=$pid
				return 0
			fi
		fi
		kill -0 "${BP_LAUNCHER[$name]}" 2>/dev/null ||
			bp_fail "$name exited at start: $*"
		sleep 0.1
	done
	bp_fail "$name did not write $pidfile within 10 s: $*"
}

# bp_alive NAME: fail unless NAME still runs.
bp_alive() {
	kill -0 "${BP_PID[$1]}" 2>/dev/null || bp_fail "$1 died"
}

# bp_stop NAME: SIGTERM, wait up to 10 s, fail unless it exits 0.
bp_stop() {
	local name=$1 rc
	[ -n "${BP_LAUNCHER[$name]:-}" ] || bp_fail "bp_stop: $name not started"
	kill -TERM "${BP_PID[$name]}" 2>/dev/null
	if ! bp_wait_gone "${BP_LAUNCHER[$name]}" 100; then
		kill -KILL "${BP_PID[$name]}" "${BP_LAUNCHER[$name]}" 2>/dev/null
		bp_fail "$name did not stop within 10 s of SIGTERM"
	fi
	wait "${BP_LAUNCHER[$name]}"
	rc=$?
	BP_LAUNCHER[$name]=""
	[ "$rc" = 0 ] || bp_fail "$name exited with status $rc after SIGTERM"
}

# bp_stat NAME KEY: the value of KEY in NAME's "stats" lines, summed over
# them (pre-forked workers print one each; see bp_stat_lines).
bp_stat() {
	grep ': stats ' "$T/$1.log" | grep -o " $2=[0-9]*" |
		awk -F= '{ s += $2 } END { print s + 0 }'
}

# bp_stat_lines NAME PATTERN: how many stats lines match PATTERN.
bp_stat_lines() {
	grep ': stats ' "$T/$1.log" | grep -c -- "$2"
}

# /proc/PID/status "Threads:" of a running process.
bp_threads() {
	awk '/^Threads:/ { print $2 }' "/proc/$1/status" 2>/dev/null
}

# Children of PID whose command is NAME.
bp_children() {
	local pid=$1 name=$2 n=0 d ppid comm
	for d in /proc/[0-9]*; do
		[ -r "$d/stat" ] || continue
		read -r comm <"$d/comm" 2>/dev/null || continue
		[ "$comm" = "$name" ] || continue
		ppid=$(awk '{ print $4 }' "$d/stat" 2>/dev/null)
		[ "$ppid" = "$pid" ] && n=$((n + 1))
	done
	echo "$n"
}

# ---- the examples --------------------------------------------------------

# bp_front_cmd ARCH: the front's command line (without the common options)
# into the array FRONT_CMD.  POOL overrides the event-driven fronts' pool.
bp_front_cmd() {
	case $1 in
	threads) FRONT_CMD=("$EX/ex-threads") ;;
	prefork) FRONT_CMD=("$EX/ex-prefork" --workers 4) ;;
	pool) FRONT_CMD=("$EX/ex-pool" --workers 4 --pool 2) ;;
	epoll | libevent) FRONT_CMD=("$EX/ex-$1" --pool "${POOL:-4}") ;;
	*) bp_fail "unknown architecture $1" ;;
	esac
}

# bp_start_servers DIR ARCH: backend (--delay-us 100, plus BACKEND_OPTS)
# then front, each under the prefix BP_PREFIX (empty: untraced), on
# BACKEND_PORT, DIR/backend.sock and FRONT_PORT (pick them with
# bp_free_port first).
bp_start_servers() {
	local dir=$1 arch=$2
	bp_start backend "$dir/backend.pid" "${BP_PREFIX[@]}" \
		"$EX/ex-backend" --port "$BACKEND_PORT" \
		--unix "$dir/backend.sock" --pidfile "$dir/backend.pid" \
		--delay-us 100 "${BACKEND_OPTS[@]}"
	bp_front_cmd "$arch"
	bp_start front "$dir/front.pid" "${BP_PREFIX[@]}" "${FRONT_CMD[@]}" \
		--port "$FRONT_PORT" --backend-port "$BACKEND_PORT" \
		--backend-unix "$dir/backend.sock" --pidfile "$dir/front.pid" \
		--timeout-ms 20000
}

# bp_client DIR CONNS DEPTH: run ex-client (under BP_PREFIX) against the
# front, bounded to 120 s; its summary goes to DIR/client.out, its truth to
# DIR/truth.  Returns the client's exit status.
bp_client() {
	local dir=$1 conns=$2 depth=$3
	timeout 120 "${BP_PREFIX[@]}" "$EX/ex-client" --port "$FRONT_PORT" \
		--conns "$conns" --requests "$BP_REQUESTS" --pipeline "$depth" \
		--max-calls 4 --truth "$dir/truth" --timeout-ms 60000 \
		>"$dir/client.out" 2>>"$T/client.log"
}

# ---- tracing ---------------------------------------------------------------

# bp_find_tool NAME: its path in the build tree, or nothing.
bp_find_tool() {
	local d
	for d in "$top_builddir" "$top_builddir/tools" "$top_builddir/logd" \
		 "$top_builddir/reconstruct"; do
		if [ -x "$d/$1" ] && [ -f "$d/$1" ]; then
			echo "$d/$1"
			return 0
		fi
	done
}

# bp_require_tracing: find bp-logd, bp-reconstruct and bp-run or the shim;
# fail loudly (never skip) when one is missing.
bp_require_tracing() {
	local d
	BP_LOGD=$(bp_find_tool bp-logd)
	BP_RECONSTRUCT=$(bp_find_tool bp-reconstruct)
	BP_RUN=$(bp_find_tool bp-run)
	BP_SHIM=""
	for d in "$top_builddir/.libs" "$top_builddir/libbtrace/.libs"; do
		[ -f "$d/libbtrace.so" ] && { BP_SHIM=$d/libbtrace.so; break; }
	done
	[ -n "$BP_LOGD" ] || bp_fail "bp-logd is not built (looked in" \
		"$top_builddir and its tools/ logd/ reconstruct/): run make"
	[ -n "$BP_RECONSTRUCT" ] || bp_fail "bp-reconstruct is not built" \
		"(looked in $top_builddir and its tools/ logd/ reconstruct/):" \
		"run make"
	[ -n "$BP_RUN" ] || [ -n "$BP_SHIM" ] || bp_fail "neither bp-run nor" \
		"libbtrace.so is built (looked in $top_builddir): run make"
}

# bp_trace_prefix SOCKET RULES ISOLATION: set BP_PREFIX, the command prefix
# that runs a program traced (bp-run, or LD_PRELOAD when bp-run is not
# built).  ISOLATION 0 turns event isolation off.
bp_trace_prefix() {
	local sock=$1 rules=$2 iso=$3
	if [ -n "$BP_RUN" ]; then
		BP_PREFIX=("$BP_RUN" -s "$sock")
		[ "$iso" = 0 ] && BP_PREFIX+=(--no-isolation)
		BP_PREFIX+=(-r "$rules" --)
	else
		BP_PREFIX=(env "LD_PRELOAD=$BP_SHIM" "BTRACE_LOGD=$sock"
			"BTRACE_RULES=$rules")
		[ "$iso" = 0 ] && BP_PREFIX+=(BTRACE_ISOLATION=0)
	fi
}

# bp_logd_start DIR: bp-logd on DIR/logd.sock writing DIR/logs; waits up
# to 10 s for the socket.
bp_logd_start() {
	local dir=$1 i
	mkdir -p "$dir/logs"
	BP_LOGD_SOCK=$dir/logd.sock
	"$BP_LOGD" -f -d "$dir/logs" -s "$BP_LOGD_SOCK" \
		>"$T/logd.out" 2>>"$T/logd.log" &
	BP_LAUNCHER[logd]=$!
	BP_PID[logd]=$!
	BP_NAMES+=(logd)
	for ((i = 0; i < 100; i++)); do
		[ -S "$BP_LOGD_SOCK" ] && return 0
		kill -0 "${BP_PID[logd]}" 2>/dev/null ||
			bp_fail "bp-logd exited at start"
		sleep 0.1
	done
	bp_fail "bp-logd did not create $BP_LOGD_SOCK within 10 s"
}

# bp_reconstruct DIR: DIR/logs -> DIR/paths.db, bounded to 300 s.
bp_reconstruct() {
	local dir=$1
	timeout 300 "$BP_RECONSTRUCT" "$dir/logs" -o "$dir/paths.db" \
		>"$dir/reconstruct.out" 2>>"$T/reconstruct.log" ||
		bp_fail "bp-reconstruct failed (status $?) on $dir/logs"
	[ -s "$dir/paths.db" ] || bp_fail "bp-reconstruct wrote no $dir/paths.db"
	grep -o '[0-9]* requests ([0-9]* exact, [0-9]* resolved, [0-9]* uncertain)' \
		"$T/reconstruct.log" | tail -n 1 | sed 's/^/reconstructed: /'
}

# bp_traced_run ARCH CONNS DEPTH ISOLATION MODE [LABEL]: one traced run:
# logd, backend, front, client all traced, stop everything, reconstruct,
# check the paths against the client's truth.  MODE "assert" fails the
# test on any wrong path; "certain" on any wrong path not marked uncertain
# (silently wrong); "report" only prints.
bp_traced_run() {
	local arch=$1 conns=$2 depth=$3 iso=$4 mode=$5 label=${6:-}
	local dir rules rc flag=""
	BP_RUN_NO=$((${BP_RUN_NO:-0} + 1))
	dir=$T/run$BP_RUN_NO
	mkdir -p "$dir"
	[ -n "$label" ] || label="$arch c=$conns d=$depth $([ "$iso" = 0 ] &&
		echo no-isolation || echo isolation)"
	bp_logd_start "$dir"
	bp_free_port BACKEND_PORT
	bp_free_port FRONT_PORT
	rules="line port $FRONT_PORT,$BACKEND_PORT; line unix $dir/*.sock"
	bp_trace_prefix "$BP_LOGD_SOCK" "$rules" "$iso"
	bp_start_servers "$dir" "$arch"
	bp_client "$dir" "$conns" "$depth"
	rc=$?
	bp_alive front
	bp_alive backend
	bp_stop front
	bp_stop backend
	bp_stop logd
	if [ "$rc" != 0 ]; then
		[ "$mode" = assert ] &&
			bp_fail "$label: the client failed (status $rc):" \
				"$(cat "$dir/client.out")"
		bp_note "$label: the client failed (status $rc) under tracing"
	fi
	bp_reconstruct "$dir"
	[ "$mode" = report ] && flag=--report-only
	[ "$mode" = certain ] && flag="--report-only --no-silent"
	[ "$mode" = assert ] && flag=--exact
	"$PY" "$BP_LIB_DIR/check-paths.py" --truth "$dir/truth" \
		--db "$dir/paths.db" --label "$BP_TEST: $label" \
		--front-exe "$(basename "${FRONT_CMD[0]}")" \
		--backend-exe ex-backend $flag ||
		bp_fail "$label: wrong request paths (see above)"
	# what the front did, for the record
	bp_note "$label: front stats: $(grep -h ': stats ' "$T/front.log" |
		sed 's/.*: stats //' | paste -s -d '|')"
	# With isolation, an event loop that reads until EAGAIN must never
	# get two requests in one read pass (docs/events.md, immediacy).
	case $arch in
	epoll | libevent)
		if [ "$iso" = 1 ] && [ "$(bp_stat front batched_reads)" != 0 ]
		then
			bp_fail "$label: ex-$arch read several requests in one" \
				"read pass although event isolation is on"
		fi
		# asserted runs must not contain the untraceable hand-over
		if [ "$mode" = assert ] && [ "$(bp_stat front pool_waits)" != 0 ]
		then
			bp_fail "$label: requests waited for a pooled backend" \
				"connection (pool ${POOL:-4}): raise POOL"
		fi
		;;
	esac
	mv "$T/front.log" "$dir/front.log"
	mv "$T/backend.log" "$dir/backend.log"
}

# bp_trace_arch ARCH: the whole traced test of one architecture: client
# concurrency 1, 8 and 64 with pipelining depth 4, paths asserted 100%
# right; then one run without event isolation, reported; for the
# event-driven fronts also one run with a contended backend pool (requests
# wait for a connection another request gives back): its wrong paths are
# reported, and every one of them must be marked uncertain.
bp_trace_arch() {
	local arch=$1 c
	bp_init "trace-$arch"
	bp_require_tracing
	# Event-driven fronts: a pool as large as the number of concurrent
	# requests, so no request ever waits for a connection (see
	# docs/examples.md: that hand-over is invisible to black-box tracing).
	POOL=64
	for c in 1 8 64; do
		bp_traced_run "$arch" "$c" 4 1 assert
	done
	bp_traced_run "$arch" 64 4 0 report
	case $arch in
	epoll | libevent)
		POOL=2
		bp_traced_run "$arch" 64 4 1 certain \
			"$arch c=64 d=4 isolation, contended pool of 2"
		;;
	esac
}
