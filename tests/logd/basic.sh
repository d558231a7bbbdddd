#!/bin/bash
# bp-logd basics: every record a tracer publishes is read back exactly once
# (counted through the segment reader); files and socket are private;
# control commands work; SIGHUP and the rotate command start new segments
# and a reader sees one stream across them; -S rotates by size.
. "${srcdir:-.}/tests/logd/lib.sh"

umask 022
start_logd -i 20 -S 256k
perm=$(stat -c %a "$SOCK")
[ "$perm" = 600 ] || fail "socket mode is $perm, expected 600"

start_tracer t1 -t 4 -n 20000 -P "$T/p1"
t1=$TRACER_PID
start_tracer t2 -t 3 -n 15000 -P "$T/p2" -z 300
t2=$TRACER_PID
# t5 drops its connection on purpose every 150 ms and comes back with the
# same ring_id while bp-logd keeps running
"$TRACER" -s "$SOCK" -q -t 3 -n 20000 -d 20 -R 150 -P "$T/p5" >"$T/t5.out" 2>"$T/t5.err" &
t5=$!
bp_track "$t5"
sleep 0.2
kill -HUP "$LOGD_PID"
out=$("$LOGD" -c rotate -s "$SOCK") || fail "rotate command failed: $out"
echo "$out" | grep -q "now writing" || fail "rotate reply: $out"
wait_tracer "$t1" t1
wait_tracer "$t2" t2
wait_tracer "$t5" t5
grep -q " 0 reconnects" "$T/t5.out" && fail "t5 never reconnected: $(cat "$T/t5.out")"

out=$("$LOGD" -c status -s "$SOCK") || fail "status failed"
echo "$out"
echo "$out" | grep -q "0 dropped, 0 refused" || fail "status: $out"

# pause: a connected tracer sees it in its chunk header, a new one also in
# WELCOME
"$TRACER" -s "$SOCK" -q -t 1 -n 4000 -d 200 -F >"$T/t6.out" 2>&1 &
t6=$!
bp_track "$t6"
sleep 0.2
"$LOGD" -c pause -s "$SOCK" >/dev/null || fail "pause failed"
"$TRACER" -s "$SOCK" -q -t 1 -n 10 -F >"$T/t3.out" 2>&1 || fail "tracer t3"
grep -q "welcome_flags=1 chunk_flags=1 logd_mapped=1" "$T/t3.out" || fail "pause not seen: $(cat "$T/t3.out")"
wait_for "tracer t6" 300 dead "$t6"
grep -q "welcome_flags=0 chunk_flags=1 logd_mapped=1" "$T/t6.out" || fail "pause not seen by a connected tracer: $(cat "$T/t6.out")"
"$LOGD" -c resume -s "$SOCK" >/dev/null || fail "resume failed"
"$TRACER" -s "$SOCK" -q -t 2 -n 5 -F -L 3 >"$T/t4.out" 2>&1 || fail "tracer t4"
grep -q "welcome_flags=0 chunk_flags=0 logd_mapped=1" "$T/t4.out" || fail "resume not seen: $(cat "$T/t4.out")"

# a second bp-logd on the same socket refuses to start
"$LOGD" -s "$SOCK" -d "$T/other" 2>"$T/second.err" && fail "a second bp-logd started"
grep -q "another bp-logd is listening on $SOCK" "$T/second.err" ||
	fail "second bp-logd: $(cat "$T/second.err")"
"$LOGD" -c bogus -s "$SOCK" 2>/dev/null && fail "unknown control command accepted"
"$LOGD" -c status -s "$T/nothing.sock" 2>/dev/null
[ $? -eq 2 ] || fail "control command without a daemon: exit status not 2"

stop_logd

nseg=$(ls "$LOGS/testhost" | grep -c '\.btl$')
[ "$nseg" -ge 4 ] || fail "expected at least 4 segments (size, SIGHUP, rotate), found $nseg"
for f in "$LOGS/testhost"/*.btl; do
	m=$(stat -c %a "$f")
	[ "$m" = 600 ] || fail "$f has mode $m, expected 600"
done
m=$(stat -c %a "$LOGS/testhost")
[ "$m" = 700 ] || fail "host directory mode $m, expected 700"
m=$(stat -c %a "$LOGS")
[ "$m" = 700 ] || fail "log directory mode $m, expected 700"

"$VERIFY" -n $((4 * 20000 + 3 * 15000 + 3 * 20000 + 4000 + 10 + 10)) -P "$T/p1" -P "$T/p2" -P "$T/p5" "$LOGS" ||
	fail "records lost or duplicated"

# bp-dump: every record once, bp-logd's notes present, exit 0 when intact
"$DUMP" "$LOGS" >"$T/dump.txt" || fail "bp-dump exit status $?"
n=$(grep -c ' msg ' "$T/dump.txt")
[ "$n" -eq $((4 * 20000 + 3 * 15000 + 3 * 20000 + 4000 + 10 + 10)) ] || fail "bp-dump printed $n msg lines"
grep -q ' logd .* logd pid=[0-9]* flags=0x3 ' "$T/dump.txt" || fail "no peer-connected note"
grep -q ' logd .* logd pid=[0-9]* flags=0x4 ' "$T/dump.txt" || fail "no peer-gone note"
grep -q ' logd .* logd pid=[0-9]* flags=0x9 ' "$T/dump.txt" || fail "no rotation note"
grep -q ' logd .* flags=0x4 .* lost=6 slot0=3 slot1=3$' "$T/dump.txt" ||
	fail "peer-gone note without the slots' lost counters"
"$DUMP" --blocks "$LOGS" | grep -q '^# block @128 len=' || fail "bp-dump --blocks"
"$LOGD" --help | grep -q 'Exit status' || fail "bp-logd --help"
"$DUMP" --help | grep -q 'Exit status' || fail "bp-dump --help"
"$LOGD" --version | grep -q 'bp-logd' || fail "--version"
# -D: detaches once ready, pidfile, stop command, pidfile removed
rm -rf "$LOGS"
"$LOGD" -D -s "$SOCK" -d "$LOGS" -H testhost -p "$T/d.pid" 2>>"$T/logd.log" ||
	fail "bp-logd -D exited with status $?"
[ -s "$T/d.pid" ] || fail "no pidfile after -D returned"
dpid=$(cat "$T/d.pid")
bp_track "$dpid"
alive "$dpid" || fail "daemon not running after -D"
"$TRACER" -s "$SOCK" -q -t 2 -n 1000 >/dev/null 2>&1 || fail "tracer with -D daemon"
"$LOGD" -c stop -s "$SOCK" | grep -q stopping || fail "stop command"
wait_for "the -D daemon to exit" 100 dead "$dpid"
[ ! -e "$T/d.pid" ] || fail "-D daemon left its pidfile"
[ ! -e "$SOCK" ] || fail "socket left behind"
"$VERIFY" -n 2000 "$LOGS" || fail "records with -D"
echo "basic: OK"
