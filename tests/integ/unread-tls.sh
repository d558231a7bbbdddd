#!/bin/bash
# unread-tls.sh - a channel the tracer cannot read is said to be so.
# `openssl s_server -www` (Debian's openssl) serves three HTTPS requests
# from curl (untraced) under `bp-run --wait`: the shim sees only TLS
# records (the program encrypts before write(2); until TLS is interposed
# a dynamically linked OpenSSL counts as inside the program too), so every
# accepted channel must be named 'tls-in-program' in channels, counted by
# program and port in bp-reconstruct's summary line, listed in bp-report's
# section "Channels that could not be read", and bp-run must say so in
# one line when the server exits.
. "$(dirname "$0")/lib.sh"
bp_setup unread-tls
bp_require_tracing
OPENSSL=/usr/bin/openssl
CURL=/usr/bin/curl
for p in "$OPENSSL" "$CURL" "$PY"; do
	[ -x "$p" ] || bp_fail "$p is missing (apt-get install openssl curl python3)"
done
[ -n "$BP_RUN" ] || bp_fail "bp-run is not built: run make"
REPORT=$(bp_find_tool bp-report)
[ -n "$REPORT" ] || bp_fail "bp-report is not built: run make"
N=3

"$OPENSSL" req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
	-nodes -subj /CN=localhost -days 1 -keyout "$T/key.pem" \
	-out "$T/cert.pem" >"$T/req.log" 2>&1 ||
	bp_fail "openssl req could not make a certificate: $(cat "$T/req.log")"

bp_logd_start "$T"
bp_free_port PORT
# the shell writes its pid and becomes bp-run, which waits for openssl
# shellcheck disable=SC2016
bp_start front "$T/front.pid" sh -c 'echo $$ >"$0"; exec "$@"' "$T/front.pid" \
	"$BP_RUN" --wait -s "$BP_LOGD_SOCK" -- "$OPENSSL" s_server -www \
	-accept "127.0.0.1:$PORT" -cert "$T/cert.pem" -key "$T/key.pem" \
	-naccept "$N"
# s_server counts the probe of bp_wait_listen as a connection: wait on
# the port without connecting
for ((i = 0; i < 100; i++)); do
	grep -qi "$(printf ':%04X ' "$PORT")" /proc/net/tcp && break
	bp_alive front
	sleep 0.1
done
[ "$i" -lt 100 ] || bp_fail "openssl s_server did not listen on $PORT within 10 s"
for ((k = 1; k <= N; k++)); do
	timeout 20 "$CURL" -sk --max-time 15 "https://127.0.0.1:$PORT/r$k" \
		>"$T/curl$k.out" 2>"$T/curl$k.err" ||
		bp_fail "curl request $k failed: $(cat "$T/curl$k.err")"
	grep -q "s_server" "$T/curl$k.out" ||
		bp_fail "request $k: not s_server's status page: $(head -c 300 "$T/curl$k.out")"
done
# -naccept: the server exits by itself after N connections
bp_wait_gone "${BP_LAUNCHER[front]}" 150 ||
	bp_fail "openssl s_server did not exit after $N connections"
wait "${BP_LAUNCHER[front]}"
rc=$?
BP_LAUNCHER[front]=""
[ "$rc" = 0 ] || bp_fail "bp-run --wait openssl exited $rc: $(cat "$T/front.log")"
grep -q "^bp-run: $N channels of openssl could not be read: $N encrypted inside the program (tls-in-program); requests through them are not traced" "$T/front.log" ||
	bp_fail "bp-run did not say the channels could not be read: $(cat "$T/front.log")"
bp_logd_stop

"$BP_RECONSTRUCT" "$T/logs" -o "$T/paths.db" 2>"$T/recon.err" ||
	bp_fail "bp-reconstruct failed: $(cat "$T/recon.err")"
grep -q "^bp-reconstruct: $N channels of openssl:$PORT encrypted inside the program: not traced$" "$T/recon.err" ||
	bp_fail "the summary does not count the TLS channels by program and port: $(cat "$T/recon.err")"
grep -q "^bp-reconstruct: .* warnings\? -> .*look at: .*$N channels not read" "$T/recon.err" ||
	bp_fail "the summary line does not point at the unread channels: $(cat "$T/recon.err")"
got=$("$PY" - "$T/paths.db" <<'PYEOF'
import sqlite3, sys
h = sqlite3.connect(sys.argv[1])
rows = h.execute("""SELECT ch.role, ch.readable, ch.unreadable_reason, p.exe
  FROM channels ch JOIN processes p USING (process_id)
  WHERE ch.kind = 'tcp' AND ch.role = 'accept'""").fetchall()
tls = [r for r in rows if r[1] == 0 and r[2] == 'tls-in-program'
       and r[3].endswith('/openssl')]
print(len(rows), len(tls))
PYEOF
) || bp_fail "reading $T/paths.db failed"
[ "$got" = "$N $N" ] ||
	bp_fail "accepted channels / named tls-in-program: $got, not $N $N"

"$REPORT" "$T/paths.db" -o "$T/report.html" 2>"$T/report.err" ||
	bp_fail "bp-report failed: $(cat "$T/report.err")"
grep -q "$N channels not read -> " "$T/report.err" ||
	bp_fail "bp-report's summary does not count the channels: $(cat "$T/report.err")"
"$PY" - "$T/report.html" "$PORT" "$N" <<'PYEOF' || bp_fail "the report lacks the unread channels"
import re, sys
html = open(sys.argv[1], encoding='utf-8').read()
m = re.search(r'<section id="unreadable"><h2>Channels that could not be read</h2>(.*?)</section>', html, re.S)
if not m:
    sys.exit("no section 'Channels that could not be read'")
row = '<tr><td>openssl</td><td class="t">%s</td><td>encrypted inside the program' % sys.argv[2]
if row not in m.group(1) or '<td class="n">%s</td>' % sys.argv[3] not in m.group(1):
    sys.exit("no row for openssl:%s with %s channels: %s" % (sys.argv[2], sys.argv[3], m.group(1)[:2000]))
PYEOF
echo "PASS: $BP_TEST: $N TLS channels named tls-in-program in channels, the summary, the report and bp-run's line"
