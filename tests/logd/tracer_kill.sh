#!/bin/bash
# Crash safety: a tracer SIGKILLed loses none of what it published.
#  1. Records sit in the rings (drain timer 60 s, no kicks: slots are big)
#     when the tracer is killed; bp-logd must drain them at EOF.
#  2. A tracer killed at a random moment mid-run: every record it had
#     published (progress file) is in the log, in order, once.
. "${srcdir:-.}/tests/logd/lib.sh"

start_logd -i 60000
start_tracer k1 -t 8 -n 2000 -S 1048576 -w -P "$T/p1"
k1=$TRACER_PID
wait_for "tracer k1 to publish" 300 grep -q published "$T/k1.out"
kill -KILL "$k1"
wait_for "tracer k1 to die" 100 dead "$k1"
# EOF drain: the status must show no pending bytes soon
wait_for "bp-logd to drain the dead tracer" 100 sh -c "\"$LOGD\" -c status -s \"$SOCK\" | grep -q 'total: 0 bytes pending'"
stop_logd
"$VERIFY" -n 16000 -P "$T/p1" "$LOGS" || fail "records of the killed tracer lost"

rm -rf "$LOGS"
start_logd
start_tracer k2 -t 6 -n 1000000 -d 20 -S 16384 -P "$T/p2"
k2=$TRACER_PID
sleep 1.3
kill -KILL "$k2"
wait_for "tracer k2 to die" 100 dead "$k2"
sleep 0.3
stop_logd
"$VERIFY" -P "$T/p2" "$LOGS" || fail "records of the tracer killed mid-run lost"
echo "tracer_kill: OK"
