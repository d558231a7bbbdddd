#!/bin/bash
# chunk-late.sh - a ring chunk made while bp-logd's socket is full is not
# lost.  tests/integ/chunk-late (traced, 64 KiB slots) starts 175 threads
# whose slots (and the main thread's) fill chunks 0..4, registered with
# bp-logd; bp-logd is then stopped (SIGSTOP), the threads write past
# three quarters of their slots (350 KICKs bp-logd does not read: its
# socket holds about 278), and 4 more threads
# start: their chunk 5's CHUNK message cannot be sent (EAGAIN).  Each
# writes 3 records of 7 bytes, too few to kick.  bp-logd goes on and
# catches up (its status shows the 5 chunks it has), then the program
# exits with its link up.  All 12 writes of 7 bytes must be in the log:
# before, the shim sent that chunk only on a reconnection, so its records
# were never drained and nothing counted them lost.
. "$(dirname "$0")/lib.sh"
bp_setup chunk-late
bp_require_tracing
CL=$top_builddir/tests/integ/chunk-late
[ -x "$CL" ] || bp_fail "$CL is not built (run make check or make tests/integ/chunk-late)"
BUSY=175 LATE=4

bp_logd_start "$T"
env "LD_PRELOAD=$BP_SHIM" "BTRACE_LOGD=$BP_LOGD_SOCK" BTRACE_BUFSIZE=64 \
	"$CL" "$T" "$BUSY" "$LATE" >"$T/cl.out" 2>&1 &
cl=$!
bp_track "$cl"
bp_wait_for "chunk-late's threads to start" 300 grep -q '^ready' "$T/cl.out"
bp_kill STOP "$BP_LOGD_PID"
touch "$T/go"
bp_wait_for "chunk-late's late threads" 300 grep -q '^late' "$T/cl.out"
bp_kill CONT "$BP_LOGD_PID"
# bp-logd reads the KICKs and drains the slots: the chunks it has
bp_wait_for "bp-logd to catch up" 300 sh -c \
	"\"$BP_LOGD\" -c status -s \"$BP_LOGD_SOCK\" | grep -q '^total: 0 bytes pending'"
line=$("$BP_LOGD" -c status -s "$BP_LOGD_SOCK" 2>/dev/null | grep "pid $cl ")
echo "chunk-late: bp-logd before the exit: $line"
echo "$line" | grep -q ': 5 chunk(s),' ||
	bp_fail "the scenario did not happen: bp-logd should have chunks 0..4 of chunk-late and not the late one: $line"
touch "$T/go2"
bp_wait_for "chunk-late to exit" 300 bp_gone "$cl"
wait "$cl" || bp_fail "chunk-late failed: $(cat "$T/cl.out")"
bp_logd_stop
n=$("$BP_DUMP" "$T/logs" 2>/dev/null | grep -c ' data fd=[0-9]* dir=out off=[0-9]* len=7$')
[ "$n" = $((LATE * 3)) ] ||
	bp_fail "the late threads' writes in the log: $n of $((LATE * 3)) (their chunk never reached bp-logd)"
echo "chunk-late: OK ($n of $((LATE * 3)) late writes)"
