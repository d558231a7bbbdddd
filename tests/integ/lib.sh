# tests/integ/lib.sh - shared by the integration tests (bash).
#
# Source it, then call bp_init NAME.  The fixtures (temporary directory,
# free loopback ports, servers started with pidfiles and bounded waits, a
# cleanup trap that stops whatever the test started, bp-logd and the
# tracing tools found in the build tree) are tests/lib/core.sh and
# tests/lib/logd.sh; this file adds the example servers of examples/ and
# the traced runs that check their paths.  See tests/README.md.
#
# Environment:
#   top_builddir, top_srcdir  the build and source trees (`make check` sets
#                             them; by hand see tests/lib/core.sh)
#   BP_KEEP=1                 keep the temporary directory (logs, traces,
#                             paths.db) and print where it is
#   BP_REQUESTS               requests per client run (default 320)
#
# Tracing tools, found in the build tree (a test fails, never skips, when
# one it needs is missing):
#   bp-logd        bp_logd_start DIR (tests/lib/logd.sh)
#   bp-run         -s SOCKET [--no-isolation] [-r RULES] -- COMMAND...
#                  (without it: LD_PRELOAD=libbtrace.so and BTRACE_LOGD,
#                  BTRACE_RULES, BTRACE_ISOLATION=0 set here)
#   bp-reconstruct LOGDIR -o paths.db

BP_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/logd.sh
. "$BP_LIB_DIR/../lib/logd.sh"
EX=$top_builddir/examples
: "${BP_REQUESTS:=320}"

BP_PREFIX=()
BACKEND_OPTS=()

# bp_init NAME: temp dir, trap, the examples.
bp_init() {
	bp_setup "$1"
	local p
	for p in ex-backend ex-client ex-threads ex-prefork ex-pool ex-epoll \
		 ex-libevent; do
		[ -x "$EX/$p" ] || bp_fail "$EX/$p is not built (run make)"
	done
	[ -x "$PY" ] || bp_fail "$PY is missing (apt-get install python3)"
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
# right; then one run without event isolation, reported, every wrong
# path of which must be marked uncertain; for the
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
	bp_traced_run "$arch" 64 4 0 certain
	case $arch in
	epoll | libevent)
		POOL=2
		bp_traced_run "$arch" 64 4 1 certain \
			"$arch c=64 d=4 isolation, contended pool of 2"
		;;
	esac
}
