#!/bin/bash
# A forked child from the lazy listener that dies with bp-logd's WELCOME
# unread (killed, or _exit without the shim's flush): its socket's close
# makes the kernel report ECONNRESET to bp-logd once, BEFORE the packets
# the child queued behind the WELCOME - here the CHUNKs of its chunks 1..3
# (threads it started after bp-logd had accepted it).  bp-logd must read
# on: every record of every chunk is in the log.  bp-logd is stopped
# (SIGSTOP) from the WELCOME to the child's exit, so that the reset is
# what it finds first (as a busy bp-logd does).
. "${srcdir:-.}/tests/logd/lib.sh"

start_logd -v -v
[ -S "$SOCK.lazy" ] || fail "bp-logd made no lazy listener at $SOCK.lazy"
start_tracer lz --lazy --go "$T/go" -t 4 -c 1 -n 300 -S 65536
lz=$TRACER_PID
wait_for "bp-logd to accept the child from its lazy listener" 100 \
	grep -q welcomed "$T/lz.out"
kill -STOP "$LOGD_PID"
touch "$T/go"
wait_tracer "$lz" lz
grep -q 'published 1200 records' "$T/lz.out" || fail "the child did not publish its 1200 records"
kill -CONT "$LOGD_PID"
wait_for "bp-logd to reap the child" 100 \
	sh -c "\"$LOGD\" -c status -s \"$SOCK\" | grep -q '^total: 0 bytes pending'"
stop_logd
grep -q 'peer pid [0-9]* (fake_tracer) gone' "$T/logd.log" ||
	fail "bp-logd did not say the child was gone"
"$VERIFY" -n 1200 "$LOGS" >"$T/verify.out" 2>&1 || {
	cat "$T/verify.out"
	fail "records of the lazy child's chunks were lost (its ECONNRESET taken for the end of file)"
}
echo "lazy_reset: OK"
