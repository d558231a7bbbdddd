#!/bin/sh
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
echo "logd_restart: OK"
