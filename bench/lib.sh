# bench/lib.sh - helpers of bench/run (bash): the work directory, free
# ports, servers started with pidfiles and bounded waits and stopped by
# their pid, bp-logd, wrk, CPU time of a process, and the results file.
#
# Every server runs on 127.0.0.1 in the work directory $W; whatever was
# started is stopped by the EXIT trap.  Results are "key value" lines in
# $RESULTS, turned into BENCHMARKS.md's table by bench/report.py.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${top_srcdir:=$(cd "$BENCH_DIR/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
top_srcdir=$(cd "$top_srcdir" && pwd)
top_builddir=$(cd "$top_builddir" && pwd)
PY=/usr/bin/python3

declare -A B_PID B_LAUNCHER
WRK_EXTRA=()
B_NAMES=()
B_PORTS=""

say() { echo "bench: $*" >&2; }

fail() {
	echo "bench: FAIL: $*" >&2
	bench_show_logs
	exit 1
}

# The last lines of the logs of the current benchmark.
bench_show_logs() {
	local f
	[ -n "${BD:-}" ] && [ -d "$BD" ] || return 0
	for f in $(find "$BD" -maxdepth 3 \( -name '*.log' -o -name '*.err' \) \
		   -size +0 2>/dev/null | sort); do
		echo "---- ${f#"$W"/} (last 10 lines)" >&2
		tail -n 10 "$f" >&2
	done
}

bench_cleanup() {
	local n
	for n in "${B_NAMES[@]}"; do
		[ -n "${B_PID[$n]:-}" ] || continue
		kill -TERM "${B_PID[$n]}" 2>/dev/null
	done
	for n in "${B_NAMES[@]}"; do
		[ -n "${B_PID[$n]:-}" ] || continue
		wait_gone "${B_PID[$n]}" 50 || kill -KILL "${B_PID[$n]}" 2>/dev/null
		[ -n "${B_LAUNCHER[$n]:-}" ] && kill "${B_LAUNCHER[$n]}" 2>/dev/null
	done
	wait 2>/dev/null
	if [ "${BENCH_KEEP:-0}" = 1 ] || [ -z "${W:-}" ]; then
		[ -n "${W:-}" ] && say "work files kept in $W"
	else
		rm -rf "$W"
	fi
}

# wait_gone PID TENTHS
wait_gone() {
	local i
	for ((i = 0; i < $2; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	! kill -0 "$1" 2>/dev/null
}

# free_port VAR: a loopback TCP port nobody listens on, not given before.
free_port() {
	local p i hex
	for ((i = 0; i < 200; i++)); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		case " $B_PORTS " in *" $p "*) continue ;; esac
		hex=$(printf ':%04X ' "$p")
		grep -q "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null && continue
		B_PORTS="$B_PORTS $p"
		printf -v "$1" '%s' "$p"
		return 0
	done
	fail "found no free port in 200 tries"
}

# start NAME PIDFILE COMMAND...: COMMAND in the background (output in
# $BD/NAME.log), waits up to 20 s for PIDFILE to name a live process.
start() {
	local name=$1 pidfile=$2 i pid
	shift 2
	rm -f "$pidfile"
	setsid "$@" >"$BD/$name.log" 2>&1 &
	B_LAUNCHER[$name]=$!
	B_PID[$name]=""
	B_NAMES+=("$name")
	for ((i = 0; i < 200; i++)); do
		if [ -s "$pidfile" ]; then
			read -r pid <"$pidfile"
			if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
				B_PID[$name]=$pid
				return 0
			fi
		fi
		kill -0 "${B_LAUNCHER[$name]}" 2>/dev/null ||
			fail "$name exited at start: $*"
		sleep 0.1
	done
	fail "$name did not write $pidfile within 20 s: $*"
}

# stop NAME: SIGTERM, wait up to 15 s (then SIGKILL and fail).
stop() {
	local name=$1
	[ -n "${B_PID[$name]:-}" ] || return 0
	kill -TERM "${B_PID[$name]}" 2>/dev/null
	if ! wait_gone "${B_PID[$name]}" 150; then
		kill -KILL "${B_PID[$name]}" 2>/dev/null
		fail "$name did not stop within 15 s of SIGTERM"
	fi
	wait_gone "${B_LAUNCHER[$name]}" 50 ||
		kill -KILL "${B_LAUNCHER[$name]}" 2>/dev/null
	wait "${B_LAUNCHER[$name]}" 2>/dev/null
	B_PID[$name]=""
}

# wait_port PORT NAME: until something accepts on 127.0.0.1:PORT (10 s).
wait_port() {
	local i
	for ((i = 0; i < 100; i++)); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	fail "$2 does not accept connections on port $1 within 10 s"
}

# logd_start DIR: bp-logd on DIR/logd.sock writing DIR/logs, serving the
# users the servers switch to; sets LOGD_SOCK.
logd_start() {
	local dir=$1
	mkdir -p "$dir/logs"
	LOGD_SOCK=$dir/logd.sock
	start logd "$dir/logd.pid" "$LOGD" -f -d "$dir/logs" -s "$LOGD_SOCK" \
		-p "$dir/logd.pid" -u www-data -u postgres
	local i
	for ((i = 0; i < 100; i++)); do
		[ -S "$LOGD_SOCK" ] && return 0
		sleep 0.1
	done
	fail "bp-logd did not create $LOGD_SOCK within 10 s"
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
