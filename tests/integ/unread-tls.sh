#!/bin/bash
# unread-tls.sh - a channel the tracer cannot read is said to be so.
# A Node.js HTTPS server (Node's OpenSSL is linked into the node binary:
# its TLS calls never reach libbtrace's SSL_* wrappers) serves three
# requests from curl (untraced) under `bp-run --wait`: the shim sees only
# TLS records, so every accepted channel must be named 'tls-in-program'
# in channels, counted by program and port in bp-reconstruct's summary
# line, listed in bp-report's section "Channels that could not be read",
# and bp-run must say so in one line when the server exits.
# The client is curl, traced: it links libssl dynamically and calls
# SSL_read/SSL_write, so its own channels are read on their plaintext
# (http).  Then `openssl s_server -www` (Debian's openssl, libssl linked
# dynamically) the same way: -www reads and writes through an SSL BIO
# (BIO_f_ssl), which drives SSL_read_ex from inside libssl, where no
# wrapper sees it: its channels too must be named tls-in-program, not
# left silently empty.
. "$(dirname "$0")/lib.sh"
bp_setup unread-tls
bp_require_tracing
OPENSSL=/usr/bin/openssl
CURL=/usr/bin/curl
NODE=$(command -v node || true)
for p in "$OPENSSL" "$CURL" "$PY" "$NODE"; do
	[ -x "$p" ] || bp_fail "${p:-node} is missing (apt-get install openssl curl python3 nodejs)"
done
ldd "$NODE" | grep -q 'libssl\.so' &&
	bp_fail "$NODE links libssl dynamically: its TLS would be read; this test needs a node with OpenSSL inside (the nodesource build)"
[ -n "$BP_RUN" ] || bp_fail "bp-run is not built: run make"
REPORT=$(bp_find_tool bp-report)
[ -n "$REPORT" ] || bp_fail "bp-report is not built: run make"
N=3

"$OPENSSL" req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
	-nodes -subj /CN=localhost -days 1 -keyout "$T/key.pem" \
	-out "$T/cert.pem" >"$T/req.log" 2>&1 ||
	bp_fail "openssl req could not make a certificate: $(cat "$T/req.log")"

cat >"$T/srv.js" <<'EOF'
// three HTTPS requests, then the server closes (keep-alive off)
const https = require('https'), fs = require('fs');
const [key, cert, port, n] = process.argv.slice(2);
let left = +n;
const srv = https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) },
	(req, res) => {
		res.setHeader('Connection', 'close');
		res.end('tls inside node ' + req.url + '\n');
		if (--left === 0) srv.close();
	});
srv.listen(+port, '127.0.0.1');
EOF

# wait_port PORT NAME: listening, without connecting (a probe would be a
# channel of its own)
wait_port() {
	for ((i = 0; i < 100; i++)); do
		grep -qi "$(printf ':%04X ' "$1")" /proc/net/tcp && return 0
		bp_alive "$2"
		sleep 0.1
	done
	bp_fail "$2 did not listen on $1 within 10 s"
}

bp_logd_start "$T"
bp_free_port PORT
# the shell writes its pid and becomes bp-run, which waits for node
# shellcheck disable=SC2016
bp_start front "$T/front.pid" sh -c 'echo $$ >"$0"; exec "$@"' "$T/front.pid" \
	"$BP_RUN" --wait -s "$BP_LOGD_SOCK" -- "$NODE" "$T/srv.js" \
	"$T/key.pem" "$T/cert.pem" "$PORT" "$N"
wait_port "$PORT" front
CURLT=(env "LD_PRELOAD=$BP_SHIM" "BTRACE_LOGD=$BP_LOGD_SOCK" timeout 20 "$CURL")
for ((k = 1; k <= N; k++)); do
	"${CURLT[@]}" -sk --max-time 15 "https://127.0.0.1:$PORT/r$k" \
		>"$T/curl$k.out" 2>"$T/curl$k.err" ||
		bp_fail "curl request $k failed: $(cat "$T/curl$k.err")"
	grep -q "tls inside node /r$k" "$T/curl$k.out" ||
		bp_fail "request $k: not the server's answer: $(head -c 300 "$T/curl$k.out")"
done
# the server exits by itself after N requests
bp_wait_gone "${BP_LAUNCHER[front]}" 150 ||
	bp_fail "node did not exit after $N requests"
wait "${BP_LAUNCHER[front]}"
rc=$?
BP_LAUNCHER[front]=""
[ "$rc" = 0 ] || bp_fail "bp-run --wait node exited $rc: $(cat "$T/front.log")"
grep -q "^bp-run: $N channels of node could not be read: $N encrypted inside the program (tls-in-program); requests through them are not traced" "$T/front.log" ||
	bp_fail "bp-run did not say the channels could not be read: $(cat "$T/front.log")"

# libssl linked dynamically, but driven through an SSL BIO
bp_free_port PORT2
# shellcheck disable=SC2016
bp_start s_server "$T/s_server.pid" sh -c 'echo $$ >"$0"; exec "$@"' \
	"$T/s_server.pid" "$BP_RUN" --wait -s "$BP_LOGD_SOCK" -- "$OPENSSL" \
	s_server -www -accept "127.0.0.1:$PORT2" -cert "$T/cert.pem" \
	-key "$T/key.pem" -naccept "$N"
wait_port "$PORT2" s_server
for ((k = 1; k <= N; k++)); do
	"${CURLT[@]}" -sk --max-time 15 "https://127.0.0.1:$PORT2/s$k" \
		>"$T/scurl$k.out" 2>"$T/scurl$k.err" ||
		bp_fail "curl request $k to s_server failed: $(cat "$T/scurl$k.err")"
	grep -q "s_server" "$T/scurl$k.out" ||
		bp_fail "request $k: not s_server's status page: $(head -c 300 "$T/scurl$k.out")"
done
bp_wait_gone "${BP_LAUNCHER[s_server]}" 150 ||
	bp_fail "openssl s_server did not exit after $N connections"
wait "${BP_LAUNCHER[s_server]}"
rc=$?
BP_LAUNCHER[s_server]=""
[ "$rc" = 0 ] || bp_fail "bp-run --wait openssl exited $rc: $(cat "$T/s_server.log")"
grep -q "^bp-run: $N channels of openssl could not be read: $N encrypted inside the program (tls-in-program)" "$T/s_server.log" ||
	bp_fail "bp-run did not say s_server's channels could not be read: $(cat "$T/s_server.log")"
bp_logd_stop

"$BP_RECONSTRUCT" "$T/logs" -o "$T/paths.db" 2>"$T/recon.err" ||
	bp_fail "bp-reconstruct failed: $(cat "$T/recon.err")"
grep -q "^bp-reconstruct: $N channels of node:$PORT encrypted inside the program: not traced$" "$T/recon.err" ||
	bp_fail "the summary does not count the TLS channels by program and port: $(cat "$T/recon.err")"
grep -q "^bp-reconstruct: $N channels of openssl:$PORT2 encrypted inside the program: not traced$" "$T/recon.err" ||
	bp_fail "the summary does not count s_server's TLS channels: $(cat "$T/recon.err")"
grep -q "^bp-reconstruct: .* warnings\? -> .*look at: .*$((2 * N)) channels not read" "$T/recon.err" ||
	bp_fail "the summary line does not point at the unread channels: $(cat "$T/recon.err")"
got=$("$PY" - "$T/paths.db" <<'PYEOF'
import sqlite3, sys
h = sqlite3.connect(sys.argv[1])
rows = h.execute("""SELECT ch.role, ch.readable, ch.unreadable_reason, p.exe,
  ch.protocol FROM channels ch JOIN processes p USING (process_id)
  WHERE ch.kind = 'tcp' AND ch.role = 'accept'""").fetchall()
node = [r for r in rows if r[3].endswith('/node')]
tls = [r for r in node if r[1] == 0 and r[2] == 'tls-in-program']
ssl = [r for r in rows if r[3].endswith('/openssl')]
bio = [r for r in ssl if r[1] == 0 and r[2] == 'tls-in-program']
curl = h.execute("""SELECT count(*) FROM channels ch JOIN processes p
  USING (process_id) WHERE ch.kind = 'tcp' AND ch.role = 'connect'
  AND p.exe LIKE '%/curl' AND ch.readable = 1 AND ch.protocol = 'http'""").fetchone()[0]
print(len(node), len(tls), len(ssl), len(bio), curl)
PYEOF
) || bp_fail "reading $T/paths.db failed"
[ "$got" = "$N $N $N $N $((2 * N))" ] ||
	bp_fail "node's accepted channels / named tls-in-program, s_server's / named tls-in-program, curl's read as http: $got, not $N $N $N $N $((2 * N))"

"$REPORT" "$T/paths.db" -o "$T/report.html" 2>"$T/report.err" ||
	bp_fail "bp-report failed: $(cat "$T/report.err")"
grep -q "$((2 * N)) channels not read -> " "$T/report.err" ||
	bp_fail "bp-report's summary does not count the channels: $(cat "$T/report.err")"
"$PY" - "$T/report.html" "$PORT" "$N" <<'PYEOF' || bp_fail "the report lacks the unread channels"
import re, sys
html = open(sys.argv[1], encoding='utf-8').read()
m = re.search(r'<section id="unreadable"><h2>Channels that could not be read</h2>(.*?)</section>', html, re.S)
if not m:
    sys.exit("no section 'Channels that could not be read'")
row = '<tr><td>node</td><td class="t">%s</td><td>encrypted inside the program' % sys.argv[2]
if row not in m.group(1) or '<td class="n">%s</td>' % sys.argv[3] not in m.group(1):
    sys.exit("no row for node:%s with %s channels: %s" % (sys.argv[2], sys.argv[3], m.group(1)[:2000]))
if 'curl' in m.group(1):
    sys.exit("curl's channels (read on their plaintext) are listed: %s" % m.group(1)[:2000])
PYEOF
echo "PASS: $BP_TEST: $N TLS channels of node and $N of s_server -www named tls-in-program in channels, the summary, the report and bp-run's line; traced curl's $((2 * N)) read as http"
