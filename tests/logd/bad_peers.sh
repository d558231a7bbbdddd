#!/bin/bash
# Misbehaving peers: each is dropped with exactly one line on stderr naming
# its pid, while a well-behaved tracer keeps being served and loses
# nothing.  Also: running out of fds (EMFILE) pauses accepting without
# harming anyone.  (Other uids: peer_uid.sh.)
. "${srcdir:-.}/tests/logd/lib.sh"

start_logd -i 20
start_tracer good -t 3 -n 40000 -d 50 -S 16384 -P "$T/pgood" -T 90
good=$TRACER_PID

modes="garbage short oversize badlen ring0 unknown nofd pipe file small huge notpow2 badmagic twofds kick headtail records shrink"
for mode in $modes; do
	before=$(wc -l <"$T/logd.log")
	"$TRACER" -s "$SOCK" --bad "$mode" >"$T/bad.out" 2>"$T/bad.err" &
	bp=$!
	wait_for "bad peer $mode" 100 dead "$bp"
	wait "$bp" || fail "bad peer '$mode' was not dropped: $(cat "$T/bad.out" "$T/bad.err")"
	sleep 0.05
	after=$(wc -l <"$T/logd.log")
	[ $((after - before)) -eq 1 ] ||
		fail "mode $mode: expected one line on stderr, got $((after - before))"
	line=$(tail -n 1 "$T/logd.log")
	echo "$mode: $line"
	echo "$line" | grep -q "pid $bp " || fail "mode $mode: line does not name pid $bp: $line"
	alive "$LOGD_PID" || fail "bp-logd died on mode $mode"
done
alive "$good" || fail "the good tracer died"

wait_tracer "$good" good
stop_logd
"$VERIFY" -n 120000 -P "$T/pgood" "$LOGS" || fail "the good tracer lost records"

# EMFILE: 60 idle connections against a limit of 40 fds.
rm -rf "$LOGS"
rm -f "$T/logd.pid"
(ulimit -n 40 && exec "$LOGD" -s "$SOCK" -d "$LOGS" -H testhost -p "$T/logd.pid") 2>>"$T/logd.log" &
LOGD_PID=$!
bp_track "$LOGD_PID"
wait_for "bp-logd's pidfile" 100 test -s "$T/logd.pid"
/usr/bin/python3 - "$SOCK" <<'PY' &
import socket, sys, time
socks = []
for i in range(60):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1])
    socks.append(s)
time.sleep(2.5)
PY
flood=$!
bp_track "$flood"
wait_for "the EMFILE message" 50 grep -q "not accepting for" "$T/logd.log"
wait_for "the flood to end" 100 dead "$flood"
"$TRACER" -s "$SOCK" -q -t 2 -n 1000 -T 20 >"$T/after.out" 2>&1 ||
	fail "tracer after EMFILE: $(cat "$T/after.out")"
stop_logd
"$VERIFY" -n 2000 "$LOGS" || fail "records after EMFILE"
echo "bad_peers: OK"
