#!/bin/bash
# bp-logd SIGKILLed while a traced program is idle, then started again:
# what the program published before the kill is written at once, while
# it still sleeps, not at its next event (logd/adopt.c: the new bp-logd
# finds the rings its predecessor left through /proc and drains them).
# A bp-logd on another socket does not touch them, and nothing is
# written twice when the program later hands its ring over itself.
#
# The drain interval of the first bp-logd is a minute, so what the
# traced program writes at its start (PROC_START, THREAD_START) is still
# in its ring when bp-logd is killed.  A bp-logd without adoption leaves
# it there until the program's next call of bp-logd (here, its exit).
. "${srcdir:-.}/tests/logd/lib.sh"

bp_find_tools
[ -n "$BP_SHIM" ] || fail "libbtrace.so is not built"

# proc_starts DIR PID: the PROC_START records of PID in DIR's segments
proc_starts() {
	"$DUMP" "$1" 2>/dev/null | grep -c "^$2:[0-9]* [0-9]* proc_start pid=$2 " || true
}

start_logd -i 60000
BTRACE_LOGD=$SOCK LD_PRELOAD=$BP_SHIM sleep 6 &
S=$!
bp_track "$S"
sleep 0.5
kill -0 "$S" 2>/dev/null || fail "the traced sleep is not running"
n=$(proc_starts "$LOGS" "$S")
[ "$n" -eq 0 ] || fail "the first bp-logd drained the ring already ($n PROC_START): the test needs it undrained"
kill -KILL "$LOGD_PID"
wait_for "bp-logd to die" 100 dead "$LOGD_PID"

# Another bp-logd, on another socket and directory: not its rings.
OTHER=$T/other
mkdir -p "$OTHER"
BP_LOGD=$LOGD
bp_logd_start -n other -s "$OTHER/logd.sock" -l "$OTHER/logs" "$T" \
	-H testhost -i 10 -v
sleep 0.5
n=$(proc_starts "$OTHER/logs" "$S")
[ "$n" -eq 0 ] || fail "a bp-logd on another socket adopted the ring ($n PROC_START)"
grep -q "adopt" "$T/other.log" && fail "a bp-logd on another socket says it adopted: $(grep adopt "$T/other.log")"
bp_kill TERM "${BP_PID[other]}"

# The same socket again: the ring is drained while sleep still sleeps.
start_logd -i 10 -v
k=0
until [ "$(proc_starts "$LOGS" "$S")" -ge 1 ]; do
	k=$((k + 1))
	[ $k -lt 30 ] || fail "the PROC_START of the idle tracer did not arrive within 3 s of the restart"
	sleep 0.1
done
kill -0 "$S" 2>/dev/null || fail "sleep ended before its ring was drained: the drain was not the adoption's"
grep -q "adopting ring [0-9a-f]* of pid $S (sleep)" "$T/logd.log" ||
	fail "bp-logd did not say it adopted the ring of pid $S"
echo "the idle tracer's PROC_START arrived within $(((k + 1) * 100)) ms of the restart, while it slept"

# sleep exits normally: its tracer reconnects and hands the ring over.
wait_for "sleep to end" 100 dead "$S"
wait "$S" || fail "the traced sleep failed"
stop_logd
n=$(proc_starts "$LOGS" "$S")
[ "$n" -eq 1 ] || fail "expected the PROC_START of pid $S once, found $n"
# (the shim, at sleep's exit, reconnected to hand over what it had: the
# path on which a ring is written twice if the adoption's tail were lost)
grep -q "peer pid $S .* connected" "$T/logd.log" ||
	fail "sleep's tracer did not reconnect at its exit: the hand-over was not tested"
echo "logd_adopt: OK"
