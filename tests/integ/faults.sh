#!/bin/bash
# faults.sh - nothing is lost when things break, with the real shim and
# real traced programs (the bp-logd tests in tests/logd use a scripted
# tracer; this one uses libbtrace.so in the example servers):
#
# 1. bp-logd SIGKILLed under load and restarted: the tracers reconnect (or
#    spool meanwhile) and carry on; every message of every request is in
#    the logs and spool, counted exactly, and the paths are 100% right.
# 2. A traced client SIGKILLed mid-run: every request the front read was
#    logged by the client (at most the one in its writer's hands when it
#    died is missing), and its stream has no gap.
# 3. A segment truncated in the middle: bp-reconstruct warns with the file
#    and the offset and uses everything before it.
. "$(dirname "$0")/lib.sh"

bp_init faults
bp_require_tracing

# messages one request makes, all processes traced: client REQ out and
# RESP in, front REQ in and RESP out, and per backend call CALL out and
# OK in (front) and CALL in and OK out (backend)
expected_msgs() {
	awk '{ n += 4 + 4 * $2 } END { print n + 0 }' "$1"
}

count_msgs() {
	"$BP_DUMP" "$@" 2>/dev/null | grep -c ' msg fd=' || true
}

BP_DUMP=$(bp_find_tool bp-dump)

# ---- 1. bp-logd killed and restarted under load ---------------------------
dir=$T/restart
mkdir -p "$dir"
export BTRACE_SPOOL=$dir/spool
bp_logd_start "$dir"
bp_free_port BACKEND_PORT
bp_free_port FRONT_PORT
rules="line port $FRONT_PORT,$BACKEND_PORT; line unix $dir/*.sock"
bp_trace_prefix "$BP_LOGD_SOCK" "$rules" 1
bp_start_servers "$dir" threads
BP_REQUESTS=3000
bp_client "$dir" 4 2 &
client=$!
sleep 0.15
kill -9 "${BP_PID[logd]}"
wait "${BP_PID[logd]}" 2>/dev/null
sleep 0.3
bp_logd_start "$dir"                      # same socket, same directory
wait "$client" || bp_fail "restart: the client failed: $(cat "$dir/client.out")"
bp_stop front
bp_stop backend
bp_stop logd
want=$(expected_msgs "$dir/truth")
got_logs=$(count_msgs "$dir/logs")
got_spool=0
[ -d "$dir/spool" ] && got_spool=$(count_msgs "$dir/spool")
got=$((got_logs + got_spool))
bp_note "restart: messages expected $want, found $got (bp-logd $got_logs, spool $got_spool)"
[ "$got" = "$want" ] ||
	bp_fail "restart: $((want - got)) messages lost across the bp-logd restart"
"$BP_RECONSTRUCT" -q "$dir/logs" $([ -d "$dir/spool" ] && echo "$dir/spool") \
	-o "$dir/paths.db" 2>"$dir/reconstruct.out" ||
	bp_fail "restart: bp-reconstruct failed: $(cat "$dir/reconstruct.out")"
"$PY" "$BP_LIB_DIR/check-paths.py" --truth "$dir/truth" --db "$dir/paths.db" \
	--label "faults: after a bp-logd restart" --front-exe ex-threads \
	--backend-exe ex-backend ||
	bp_fail "restart: wrong request paths after the bp-logd restart"
unset BTRACE_SPOOL

# ---- 1b. bp-logd stalled (SIGSTOP) under load ------------------------------
# Rings fill; tracers wait (bounded) for the drain.  Whatever cannot wait
# is counted by the tracer (DROP), reported by bp-reconstruct in
# stats.dropped_by_tracer and on stderr: found + dropped = expected.
dir=$T/stall
mkdir -p "$dir"
bp_logd_start "$dir"
bp_free_port BACKEND_PORT
bp_free_port FRONT_PORT
rules="line port $FRONT_PORT,$BACKEND_PORT; line unix $dir/*.sock"
bp_trace_prefix "$BP_LOGD_SOCK" "$rules" 1
bp_start_servers "$dir" threads
BP_REQUESTS=3000
bp_client "$dir" 4 2 &
client=$!
sleep 0.1
kill -STOP "${BP_PID[logd]}"
sleep 3
kill -CONT "${BP_PID[logd]}"
wait "$client" || bp_fail "stall: the client failed: $(cat "$dir/client.out")"
bp_stop front
bp_stop backend
bp_stop logd
want=$(expected_msgs "$dir/truth")
got=$(count_msgs "$dir/logs")
"$BP_RECONSTRUCT" "$dir/logs" -o "$dir/paths.db" >"$dir/reconstruct.out" 2>&1 ||
	bp_fail "stall: bp-reconstruct failed: $(cat "$dir/reconstruct.out")"
dropped=$(sqlite3 "$dir/paths.db" "SELECT value FROM stats WHERE key = 'dropped_by_tracer'")
bp_note "stall: messages expected $want, found $got; events the tracers counted as dropped: $dropped"
[ "$got" -le "$want" ] || bp_fail "stall: more messages than sent ($got > $want)"
if [ "$got" -lt "$want" ]; then
	[ "$dropped" -ge $((want - got)) ] ||
		bp_fail "stall: $((want - got)) messages missing but only $dropped drops reported"
	grep -q "([1-9][0-9]* lost)" "$dir/reconstruct.out" ||
		bp_fail "stall: the loss is not on bp-reconstruct's stderr: $(cat "$dir/reconstruct.out")"
fi

# ---- 1c. 1000 traced threads at once ---------------------------------------
# Every thread gets a ring slot and every thread's start reaches the log.
dir=$T/threads
mkdir -p "$dir"
bp_logd_start "$dir"
bp_trace_prefix "$BP_LOGD_SOCK" "line port 1" 1
THR=$(bp_find_tool tests/integ/thread-burst)
[ -n "$THR" ] || bp_fail "tests/integ/thread-burst is not built: run make check"
"${BP_PREFIX[@]}" "$THR" 1000 >"$dir/burst.out" 2>&1 ||
	bp_fail "threads: thread-burst failed: $(cat "$dir/burst.out")"
bp_stop logd
starts=$("$BP_DUMP" "$dir/logs" 2>/dev/null | grep -c ' thread_start .*cookie=[1-9]' || true)
bp_note "threads: 1000 threads created, $starts THREAD_START records"
[ "$starts" = 1000 ] || bp_fail "threads: $((1000 - starts)) threads left no record"

# ---- 2. a traced client SIGKILLed mid-run ---------------------------------
dir=$T/kill
mkdir -p "$dir"
bp_logd_start "$dir"
bp_free_port BACKEND_PORT
bp_free_port FRONT_PORT
rules="line port $FRONT_PORT,$BACKEND_PORT; line unix $dir/*.sock"
bp_trace_prefix "$BP_LOGD_SOCK" "$rules" 1
bp_start_servers "$dir" threads
BP_REQUESTS=20000
bp_client "$dir" 1 1 &
client=$!
sleep 0.4
cpid=$(pgrep -f -n "ex-client --port $FRONT_PORT") ||
	bp_fail "kill: the client is not running"
kill -9 "$cpid"
wait "$client" 2>/dev/null
sleep 0.3
fpid=${BP_PID[front]}
bp_stop front
bp_stop backend
bp_stop logd
"$BP_DUMP" "$dir/logs" >"$dir/dump.txt" 2>"$dir/dump.err"
front_in=$(grep -c "^$fpid:.* msg fd=.* dir=in kind=request .*line=\"REQ " "$dir/dump.txt" || true)
client_out=$(grep -c "^$cpid:.* msg fd=.* dir=out kind=request .*line=\"REQ " "$dir/dump.txt" || true)
bp_note "kill: the front read $front_in requests, the killed client logged $client_out sent"
[ "$front_in" -gt 100 ] || bp_fail "kill: the client was killed too early to test ($front_in requests)"
missing=$((front_in - client_out))
[ "$missing" -ge 0 ] && [ "$missing" -le 1 ] ||
	bp_fail "kill: $missing requests the front read were not logged by the killed client"
"$BP_RECONSTRUCT" -q "$dir/logs" -o "$dir/paths.db" 2>"$dir/reconstruct.out" ||
	bp_fail "kill: bp-reconstruct failed: $(cat "$dir/reconstruct.out")"
gaps=$(sqlite3 "$dir/paths.db" "SELECT value FROM stats WHERE key = 'gaps'")
lost=$(sqlite3 "$dir/paths.db" "SELECT value FROM stats WHERE key = 'lost_records'")
[ "$gaps" = 0 ] && [ "$lost" = 0 ] ||
	bp_fail "kill: the killed client's log has gaps ($gaps) or lost records ($lost)"

# ---- 3. a truncated segment -----------------------------------------------
# The first segment of the restart run (its streams begin in it), whole and
# cut in the middle of a block: the cut copy warns with the file and an
# offset at or before the cut and uses the records before it.
seg=$(ls "$T"/restart/logs/*/*.btl | sort | head -n 1)
size=$(stat -c %s "$seg")
cut=$((size / 2 + 7))
mkdir -p "$T/whole/h" "$T/trunc/h"
cp "$seg" "$T/whole/h/"
head -c "$cut" "$seg" >"$T/trunc/h/$(basename "$seg")"
"$BP_RECONSTRUCT" -q "$T/whole" -o "$T/whole/paths.db" >"$T/whole/out" 2>&1 ||
	bp_fail "trunc: bp-reconstruct failed on the whole segment: $(cat "$T/whole/out")"
"$BP_RECONSTRUCT" "$T/trunc" -o "$T/trunc/paths.db" >"$T/trunc/out" 2>&1 ||
	bp_fail "trunc: bp-reconstruct failed on a truncated segment: $(cat "$T/trunc/out")"
grep -q "$(basename "$seg")" "$T/trunc/out" ||
	bp_fail "trunc: no warning naming the truncated file: $(cat "$T/trunc/out")"
woff=$(sqlite3 "$T/trunc/paths.db" "SELECT offset FROM warnings WHERE file LIKE '%$(basename "$seg")' ORDER BY offset DESC LIMIT 1")
[ -n "$woff" ] && [ "$woff" -le "$cut" ] && [ "$woff" -ge $((cut - 4 * 1024 * 1024)) ] ||
	bp_fail "trunc: the warning's offset ($woff) is not where the file was cut ($cut)"
ev_whole=$(sqlite3 "$T/whole/paths.db" "SELECT value FROM stats WHERE key = 'events'")
ev=$(sqlite3 "$T/trunc/paths.db" "SELECT value FROM stats WHERE key = 'events'")
# blocks are written in time order: about half the records lie before a
# cut at half the file (30% is a safe floor with uneven record sizes)
[ "$ev" -gt 0 ] && [ $((ev * 10)) -ge $((ev_whole * 3)) ] && [ "$ev" -lt "$ev_whole" ] ||
	bp_fail "trunc: $ev events used of $ev_whole in the whole segment: the records before the cut were not all used"
bp_note "trunc: cut at $cut of $size bytes: warning at offset $woff, $ev of $ev_whole events used"
echo "PASS: faults"
