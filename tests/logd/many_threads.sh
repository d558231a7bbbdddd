#!/bin/bash
# 1000 tracer threads at once (17 chunks of up to 60 slots in one process),
# plus a second process with 200 more: every record arrives exactly once.
. "${srcdir:-.}/tests/logd/lib.sh"

start_logd
start_tracer m1 -t 1000 -n 300 -S 8192 -P "$T/p1" -T 90
m1=$TRACER_PID
start_tracer m2 -t 200 -n 500 -S 8192 -c 7 -P "$T/p2" -T 90
m2=$TRACER_PID
wait_tracer "$m1" m1
wait_tracer "$m2" m2
cat "$T/m1.out"
# Full slots were waited for on the futex and bp-logd's FUTEX_WAKE (shared,
# not private: the waiter is another process) ended those waits.
grep -q " [1-9][0-9]* woken by bp-logd" "$T/m1.out" ||
	fail "no futex wait was ended by bp-logd's wake: $(cat "$T/m1.out")"
st=$("$LOGD" -c status -s "$SOCK") || fail "status"
echo "$st" | grep -q "peers: 2 connected since start, 0 dropped" || fail "status: $st"
stop_logd
"$VERIFY" -n $((1000 * 300 + 200 * 500)) -P "$T/p1" -P "$T/p2" "$LOGS" ||
	fail "records lost or duplicated with 1200 threads"
n=$("$DUMP" -q -s "$LOGS" | sed -n 's/.* streams \([0-9]*\)$/\1/p')
[ "$n" -eq 1201 ] || fail "expected 1201 streams (1200 slots + bp-logd's), found $n"
echo "many_threads: OK"
