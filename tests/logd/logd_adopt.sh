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

# arrived PID WHAT: until the PROC_START of PID is in $LOGS (3 s), while
# PID still runs (else the drain was not the adoption's); ARRIVED: the
# milliseconds it took, to 100 ms
arrived() {
	local k=0
	until [ "$(proc_starts "$LOGS" "$1")" -ge 1 ]; do
		k=$((k + 1))
		[ $k -lt 30 ] || fail "$2 not adopted within 3 s of the restart"
		sleep 0.1
	done
	kill -0 "$1" 2>/dev/null ||
		fail "$2 ended before its ring was drained: the drain was not the adoption's"
	ARRIVED=$(((k + 1) * 100))
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
arrived "$S" "the idle sleep's ring"
grep -q "adopting ring [0-9a-f]* of pid $S (sleep)" "$T/logd.log" ||
	fail "bp-logd did not say it adopted the ring of pid $S"
echo "the idle tracer's PROC_START arrived within $ARRIVED ms of the restart, while it slept"

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
# Another uid (needs root and setpriv): a tracer of uid nobody served by
# a bp-logd with -u nobody.  Started again without -u, bp-logd must not
# adopt its ring (it would not serve it either); with -u it does.
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
	echo "logd_adopt: the case of another uid needs root and setpriv: not run"
	echo "logd_adopt: OK"
	exit 0
fi
rm -rf "$LOGS"
chmod 711 "$T"
# a copy of the shim nobody can read, wherever the build tree is
cp "$BP_SHIM" "$T/libbtrace.so"
chmod 755 "$T/libbtrace.so"
mark=$(wc -l <"$T/logd.log")
start_logd -u nobody -i 60000 -v
setpriv --reuid=nobody --regid=nogroup --clear-groups \
	env BTRACE_LOGD="$SOCK" BTRACE_SPOOL="$T/spool-nobody" \
	LD_PRELOAD="$T/libbtrace.so" sleep 8 &
S=$!
bp_track "$S"
k=0
# (only what this bp-logd and those after it said)
since() { tail -n +$((mark + 1)) "$T/logd.log"; }
until since | grep -q "peer pid [0-9]* (/usr/bin/sleep) connected"; do
	k=$((k + 1))
	[ $k -lt 50 ] || fail "the traced sleep of uid nobody did not connect"
	sleep 0.1
done
S=$(since | sed -n 's/.*peer pid \([0-9]*\) (\/usr\/bin\/sleep) connected.*/\1/p' | tail -n 1)
[ "$(stat -c %u "/proc/$S")" = "$(id -u nobody)" ] || fail "pid $S is not the sleep of uid nobody"
kill -KILL "$LOGD_PID"
wait_for "bp-logd to die" 100 dead "$LOGD_PID"
start_logd -i 10 -v
sleep 1
n=$(proc_starts "$LOGS" "$S")
[ "$n" -eq 0 ] || fail "a bp-logd without -u adopted the ring of uid nobody ($n PROC_START)"
since | grep -q "adopting ring [0-9a-f]* of pid $S" &&
	fail "a bp-logd without -u says it adopted the ring of uid nobody"
kill -KILL "$LOGD_PID"
wait_for "bp-logd to die" 100 dead "$LOGD_PID"
start_logd -u nobody -i 10 -v
arrived "$S" "with -u nobody, the sleep of uid nobody"
echo "another uid: not adopted without -u, adopted with -u nobody within $ARRIVED ms"
echo "logd_adopt: OK"
