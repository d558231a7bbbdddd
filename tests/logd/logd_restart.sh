#!/bin/bash
# bp-logd SIGKILLed and restarted while tracers run: each tracer reconnects
# with the same ring_id and sends its chunks again; bp-logd continues every
# slot from the tail in shared memory.  Nothing may be lost or duplicated
# (the reader drops bytes written twice by their stream offset).  Done
# three times, with small slots so tracers also wait on full rings.
. "${srcdir:-.}/tests/logd/lib.sh"

start_logd -i 10
start_tracer r1 -t 4 -n 40000 -d 30 -S 8192 -T 60
r1=$TRACER_PID
start_tracer r2 -t 2 -n 60000 -d 20 -S 65536 -T 60
r2=$TRACER_PID
for round in 1 2 3; do
	sleep 0.7
	kill -KILL "$LOGD_PID"
	wait_for "bp-logd to die" 100 dead "$LOGD_PID"
	sleep 0.3              # tracers fill their rings meanwhile
	start_logd -i 10
done
wait_tracer "$r1" r1
wait_tracer "$r2" r2
stop_logd
nseg=$(ls "$LOGS/testhost" | grep -c '\.btl$')
[ "$nseg" -eq 4 ] || fail "expected 4 segments (one per bp-logd run), found $nseg"
# -d: a SIGKILLed writer may leave a torn block at a segment's end.
"$VERIFY" -d -n $((4 * 40000 + 2 * 60000)) "$LOGS" || fail "lost or duplicated records"
grep -q "3 reconnects" "$T/r1.out" || fail "r1 did not reconnect 3 times: $(cat "$T/r1.out")"
grep -q "3 reconnects" "$T/r2.out" || fail "r2 did not reconnect 3 times: $(cat "$T/r2.out")"
# Deterministic overlap: bp-logd kills itself right after writing its
# 40th tracer block and before acknowledging it (test hook), so the next
# bp-logd writes those bytes again.  Without duplicate removal the log
# must show them; with it, every record exactly once.
rm -rf "$LOGS"
rm -f "$T/logd.pid"
BTRACE_LOGD_CRASH_AFTER=40 "$LOGD" -s "$SOCK" -d "$LOGS" -H testhost -i 10 \
	2>>"$T/logd.log" &
LOGD_PID=$!
bp_track "$LOGD_PID"
wait_for "the socket" 100 test -S "$SOCK"
start_tracer r3 -t 2 -n 20000 -d 20 -S 8192 -T 60
r3=$TRACER_PID
wait_for "bp-logd to kill itself" 200 dead "$LOGD_PID"
start_logd -i 10
wait_tracer "$r3" r3
stop_logd
"$VERIFY" -a -d "$LOGS" >"$T/nodedup.out" 2>&1 &&
	fail "no duplicate in the log although bp-logd died before acknowledging"
grep -q "[1-9][0-9]* duplicates" "$T/nodedup.out" ||
	fail "expected duplicates without removal: $(tail -n 2 "$T/nodedup.out")"
sed -n 's/^verify_log: \(.* duplicates\).*/without duplicate removal: \1/p' "$T/nodedup.out"
"$VERIFY" -d -n 40000 "$LOGS" || fail "lost or duplicated records after the overlap"
echo "logd_restart: OK"
