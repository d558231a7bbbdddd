#!/bin/bash
# Processes of another uid: refused with one line on stderr unless -u (or
# -g) allows them; with -u the socket is opened to all and they are served.
# Needs root (to run the tracer as nobody); skipped (exit 77) otherwise.
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
	echo "SKIP: needs root and setpriv to run a tracer as another uid"
	exit 77
fi
. "${srcdir:-.}/tests/logd/lib.sh"

start_logd
# Another uid: the socket is opened to all by hand (as an admin might);
# without -u the peer is refused in one line, with -u it is served.
chmod 711 "$T"
chmod 666 "$SOCK"
before=$(wc -l <"$T/logd.log")
setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$TRACER" -s "$SOCK" -q -t 1 -n 10 -T 5 >"$T/nobody.out" 2>&1 &&
	fail "a tracer of uid nobody was served without -u"
after=$(wc -l <"$T/logd.log")
[ $((after - before)) -eq 1 ] || fail "refusal: expected one line, got $((after - before))"
tail -n 1 "$T/logd.log" | grep -q "refusing pid [0-9]* (fake_tracer): uid 65534" ||
	fail "refusal line: $(tail -n 1 "$T/logd.log")"

stop_logd

# -u nobody: a socket opened to all (0666) by bp-logd itself, peer served.
rm -rf "$LOGS"
start_logd -u nobody
perm=$(stat -c %a "$SOCK")
[ "$perm" = 666 ] || fail "with -u the socket mode is $perm, expected 666"
setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$TRACER" -s "$SOCK" -q -t 2 -n 500 -T 20 >"$T/nobody.out" 2>&1 ||
	fail "tracer of an allowed uid: $(cat "$T/nobody.out")"
stop_logd
"$VERIFY" -n 1000 "$LOGS" || fail "allowed uid's records"

# -g users: a tracer of uid nobody whose *supplementary* group is users
# (SO_PEERGROUPS) is served; one without that group is refused.
rm -rf "$LOGS"
start_logd -g users
setpriv --reuid=nobody --regid=nogroup --groups=users \
	"$TRACER" -s "$SOCK" -q -t 2 -n 300 -T 20 >"$T/grp.out" 2>&1 ||
	fail "tracer in an allowed supplementary group: $(cat "$T/grp.out")"
setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$TRACER" -s "$SOCK" -q -t 1 -n 10 -T 5 >"$T/nogrp.out" 2>&1 &&
	fail "a tracer outside the allowed group was served"
stop_logd
"$VERIFY" -n 600 "$LOGS" || fail "allowed group's records"
echo "peer_uid: OK"
