#!/bin/bash
# gnutls-cli.sh - a GnuTLS client read on its plaintext (issue 12, GnuTLS;
# docs/libbtrace.md, "TLS (GnuTLS)").  gnutls-cli (Debian's gnutls-bin,
# linked with libgnutls) talks HTTPS to nginx (OpenSSL, a self-signed
# certificate made at test time with openssl), both traced: N requests on
# one connection, written to gnutls-cli's stdin, the last with
# "Connection: close", twice: TLS 1.3 with --save-client-trace and
# --save-server-trace, where gnutls-cli gives its session push and pull
# functions of its own (the shim learns the socket from the handshake,
# libbtrace/tls.c), and TLS 1.2 without, where it gives GnuTLS the
# descriptor (gnutls_transport_set_int2, GnuTLS's own transport).
# Asserted: every answer arrived; each of the client's connections is one
# channel, readable and read as http; its N requests are client spans of
# gnutls-cli with the targets sent, each paired with nginx's server span
# of the same target in the same request (the server span's parent);
# nothing unreadable on the HTTPS port; every request exact; the secret
# headers each request carries and the private key's lines are in no log
# segment nor the database.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../lib/servers.sh"
bp_setup gnutls-cli
bp_require_tracing
OPENSSL=/usr/bin/openssl
GNUTLS_CLI=/usr/bin/gnutls-cli
for p in "$OPENSSL" "$GNUTLS_CLI" "$PY"; do
	[ -x "$p" ] || bp_fail "$p is missing (apt-get install openssl gnutls-bin python3)"
done
command -v nginx >/dev/null || bp_fail "nginx is missing (apt-get install nginx-light)"
[ -n "$BP_RUN" ] || bp_fail "bp-run is not built: run make"
N=${BP_GNUTLS_REQUESTS:-5}

"$OPENSSL" req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
	-nodes -subj /CN=localhost -days 1 -keyout "$T/key.pem" \
	-out "$T/cert.pem" >"$T/req.log" 2>&1 ||
	bp_fail "openssl req could not make a certificate: $(cat "$T/req.log")"

bp_logd_start "$T"
bp_free_port PORT
RULES="http port $PORT"
mkdir -p "$T/nginx" "$T/run"
cat >"$T/nginx.conf" <<EOC
daemon off;
master_process on;
worker_processes 1;
user root root;
pid $T/run/nginx.pid;
error_log $T/nginx-error.log warn;
events { worker_connections 64; }
http {
    access_log off;
$(bp_nginx_temp_paths "$T/nginx")
    default_type text/plain;
    keepalive_requests 1000;
    server {
        listen 127.0.0.1:$PORT ssl;
        ssl_certificate $T/cert.pem;
        ssl_certificate_key $T/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        location /x { return 200 "answer \$arg_id\n"; }
    }
}
EOC
bp_nginx_start "$T/nginx" "$T/nginx.conf" "$T/run/nginx.pid" \
	"127.0.0.1:$PORT" "$BP_RUN" --exec -s "$BP_LOGD_SOCK" -r "$RULES" --

# cli TAG PRIORITY VERSION [OPTION...]: N requests /x?id=TAGk on one connection of a traced
# gnutls-cli, written while it runs; stdin stays open until every answer
# is in (gnutls-cli ends the session at stdin's end), bounded
# (the writer reads gnutls-cli's output while gnutls-cli writes it: on
# purpose, to keep stdin open until the answers are in)
# shellcheck disable=SC2094
cli() {
	local tag=$1 prio=$2 vers=$3 k i c rc
	shift 3
	{
		for ((k = 1; k <= N; k++)); do
			c=""
			[ "$k" = "$N" ] && c=$'Connection: close\r\n'
			# secret header values: redacted on the plaintext
			# as on cleartext (docs/security.md)
			printf 'GET /x?id=%s%d HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer SECRET_AUTH_%s%d\r\nCookie: session=SECRET_COOKIE_%s%d\r\n%s\r\n' \
				"$tag" "$k" "$tag" "$k" "$tag" "$k" "$c"
			sleep 0.2
		done
		for ((i = 0; i < 100; i++)); do
			[ "$(grep -c "^answer $tag" "$T/cli-$tag.out" 2>/dev/null)" -ge "$N" ] &&
				break
			sleep 0.1
		done
	} | timeout 30 "$BP_RUN" -s "$BP_LOGD_SOCK" -r "$RULES" -- "$GNUTLS_CLI" \
		--insecure --priority "$prio" "$@" -p "$PORT" 127.0.0.1 \
		>"$T/cli-$tag.out" 2>"$T/cli-$tag.err"
	rc=$?
	for ((k = 1; k <= N; k++)); do
		grep -q "^answer $tag$k\$" "$T/cli-$tag.out" ||
			bp_fail "gnutls-cli $prio (status $rc) did not get answer $k:" \
				"$(tail -n 20 "$T/cli-$tag.out" "$T/cli-$tag.err")"
	done
	grep -q "^- Description: ($vers-" "$T/cli-$tag.out" ||
		bp_fail "gnutls-cli $prio did not negotiate $vers: $(grep Description "$T/cli-$tag.out")"
}
# TLS 1.3 (session tickets read inside gnutls_record_recv) through
# gnutls-cli's own push and pull functions (they copy the records to the
# trace files), then 1.2 through GnuTLS's own transport
cli g NORMAL:-VERS-ALL:+VERS-TLS1.3 TLS1.3 \
	--save-client-trace="$T/client.trace" --save-server-trace="$T/server.trace"
[ -s "$T/client.trace" ] && [ -s "$T/server.trace" ] ||
	bp_fail "gnutls-cli wrote no trace files: its push/pull functions were not used"
cli h NORMAL:-VERS-ALL:+VERS-TLS1.2 TLS1.2
bp_stop nginx
bp_logd_stop

# redaction: no secret header value and no line of the private key in the
# log segments or the database
"$BP_RECONSTRUCT" "$T/logs" -o "$T/paths.db" 2>"$T/recon.err" ||
	bp_fail "bp-reconstruct failed: $(cat "$T/recon.err")"
sqlite3 "$T/paths.db" .dump >"$T/paths.sql" || bp_fail "sqlite3 .dump failed"
nseg=$(ls "$T"/logs/*/*.btl 2>/dev/null | wc -l)
[ "$nseg" -gt 0 ] || bp_fail "no log segments in $T/logs"
secrets=0
for tag in g h; do
	for ((k = 1; k <= N; k++)); do
		for s in "SECRET_AUTH_$tag$k" "SECRET_COOKIE_$tag$k"; do
			grep -q -a -F "$s" "$T"/logs/*/*.btl "$T/paths.sql" &&
				bp_fail "the secret $s was recorded"
			secrets=$((secrets + 1))
		done
	done
done
while read -r line; do
	case $line in -----*) continue ;; esac
	grep -q -a -F "$line" "$T"/logs/*/*.btl "$T/paths.sql" &&
		bp_fail "a line of the private key was recorded"
	secrets=$((secrets + 1))
done <"$T/key.pem"
bp_note "redaction: $secrets secrets (header values, key lines) in none of $nseg segments nor paths.db"

out=$("$PY" - "$T/paths.db" "$PORT" "$N" <<'PYEOF'
import sqlite3, sys
db, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
h = sqlite3.connect(db)
bad = []
cli = h.execute("""SELECT ch.channel_id, ch.readable, ch.unreadable_reason,
  ch.protocol FROM channels ch JOIN processes p USING (process_id)
  WHERE ch.kind = 'tcp' AND ch.role = 'connect' AND ch.remote LIKE ?
  AND p.exe LIKE '%/gnutls-cli'""", ('%:' + port,)).fetchall()
if len(cli) != 2 or any(c[1] != 1 or c[3] != 'http' for c in cli):
    bad.append("gnutls-cli's channels to port %s: %r (want two, readable, http)" % (port, cli))
unread = h.execute("""SELECT count(*) FROM channels WHERE kind = 'tcp'
  AND readable = 0 AND (local LIKE ? OR remote LIKE ?)""",
  ('%:' + port, '%:' + port)).fetchone()[0]
if unread:
    bad.append("%d channels of port %s unreadable" % (unread, port))
paired = 0
for k in [('g', k) for k in range(1, n + 1)] + [('h', k) for k in range(1, n + 1)]:
    t = '/x?id=%s%d' % k
    c = h.execute("""SELECT s.span_id, s.request_id FROM spans s
      WHERE s.kind = 'client' AND s.target = ? AND s.exe LIKE '%/gnutls-cli'""",
      (t,)).fetchall()
    s = h.execute("""SELECT s.span_id, s.request_id, s.parent_span_id FROM spans s
      WHERE s.kind = 'server' AND s.target = ? AND s.exe LIKE '%/nginx'""",
      (t,)).fetchall()
    if len(c) != 1 or len(s) != 1:
        bad.append("%s: client spans %r, server spans %r" % (t, c, s))
        continue
    if s[0][1] != c[0][1] or s[0][2] != c[0][0]:
        bad.append("%s: nginx's span %r not the child of gnutls-cli's %r" % (t, s[0], c[0]))
        continue
    paired += 1
req = h.execute("""SELECT count(*), sum(certainty = 'exact') FROM requests
  WHERE request_id IN (SELECT request_id FROM spans WHERE exe LIKE '%/gnutls-cli')""").fetchone()
if req[0] != 2 * n or req[1] != 2 * n:
    bad.append("gnutls-cli's requests: %d, %s exact (want %d)" % (req[0], req[1], 2 * n))
print("gnutls-cli's channels (TLS 1.3 learned, 1.2 set_int2) readable as http: %d; %d of %d requests paired client -> nginx, %s exact"
      % (sum(c[1] == 1 and c[3] == 'http' for c in cli), paired, 2 * n, req[1]))
if bad:
    print("\n".join(bad))
    sys.exit(1)
PYEOF
) || bp_fail "$out"
echo "$out"
echo "PASS: $BP_TEST: $out"
