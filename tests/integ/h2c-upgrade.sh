#!/bin/bash
# h2c-upgrade.sh - HTTP/2 reached by "Upgrade: h2c" from HTTP/1.1: curl
# --http2 (traced), which asks for the upgrade on an http:// URL, against
# apache2 (event MPM, mod_http2, "Protocols h2c http/1.1", traced).  The
# http processor reads the HTTP/1.1 request and the 101, then hands the
# channel to http2 (bt_msg.next_proto): the answer comes as stream 1 and
# closes the HTTP/1.1 request's exchange.  Checked in paths.db: both ends
# of the channel end as http2, readable (no lost sync); curl's client span
# and apache's server span of the request end with status 200, in one
# request; the 101 is an interim (oneway) message at both ends.  One
# request per connection: apache (mod_http2 2.0.42) sends GOAWAY
# "timeout" as soon as an upgraded connection is idle, so a second request
# on it fails, traced or not.  docs/protocols.md, "http2".  Needs root
# (apache's workers run as www-data).
. "$(dirname "$0")/lib.sh"
# shellcheck source=../lib/servers.sh
. "$(dirname "$0")/../lib/servers.sh"
bp_setup h2c-upgrade
bp_require_tracing
[ "$(id -u)" = 0 ] || bp_fail "run as root (apache's workers switch to www-data)"
M=/usr/lib/apache2/modules
for f in "$M/mod_http2.so" "$M/mod_mpm_event.so"; do
	[ -f "$f" ] || bp_fail "$f is missing: apt-get install -y apache2"
done
command -v curl >/dev/null || bp_fail "curl is missing: apt-get install -y curl"
curl -V | grep -q nghttp2 || bp_fail "this curl has no HTTP/2 (nghttp2)"
chmod 755 "$T"
mkdir -p "$T/www" "$T/apache" "$T/run"
echo "hello upgrade" >"$T/www/u1.txt"
chmod -R a+rX "$T/www"

bp_free_port PORT
bp_logd_start "$T" -u www-data
bp_trace_prefix "$BP_LOGD_SOCK" "http port $PORT" 1
cat >"$T/apache/httpd.conf" <<CONF
ServerRoot $T/apache
ServerName localhost
Listen 127.0.0.1:$PORT
PidFile $T/run/apache.pid
ErrorLog $T/apache/error.log
User www-data
Group www-data
LoadModule mpm_event_module $M/mod_mpm_event.so
LoadModule authz_core_module $M/mod_authz_core.so
LoadModule mime_module $M/mod_mime.so
LoadModule http2_module $M/mod_http2.so
Protocols h2c http/1.1
TypesConfig /etc/mime.types
DocumentRoot $T/www
<Directory $T/www>
  Require all granted
</Directory>
CONF
bp_apache_start "$T/apache/httpd.conf" "$T/run/apache.pid" "$PORT" \
	"${BP_PREFIX[@]}"
timeout 30 "${BP_PREFIX[@]}" curl -sS --http2 -o "$T/o1" \
	"http://127.0.0.1:$PORT/u1.txt" 2>"$T/curl.err" ||
	bp_fail "curl failed: $(cat "$T/curl.err")"
grep -q "hello upgrade" "$T/o1" || bp_fail "curl did not get the answer"
bp_stop apache any
bp_stop logd
timeout 120 "$BP_RECONSTRUCT" "$T/logs" -o "$T/paths.db" >"$T/rc.out" \
	2>"$T/rc.log" || bp_fail "bp-reconstruct failed: $(tail -n 3 "$T/rc.log")"
out=$("$PY" - "$T/paths.db" "$PORT" <<'PYEOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
port = sys.argv[2]
bad = []
ends = sorted(c.execute("SELECT role, protocol, readable FROM channels"
                        " WHERE kind = 'tcp' AND (local LIKE ? OR remote"
                        " LIKE ?) AND role IN ('accept', 'connect')",
                        ('%:' + port, '%:' + port)).fetchall())
# (bp_wait_listen's probe is one more accepted channel, without data)
if ('accept', 'http2', 1) not in ends or ('connect', 'http2', 1) not in ends \
        or any(r != 1 for _, _, r in ends):
    bad.append('channel ends %r (want accept and connect, http2, all '
               'readable)' % ends)
spans = c.execute("SELECT kind, protocol, status, end_ns IS NOT NULL,"
                  " request_id FROM spans WHERE target = '/u1.txt'"
                  " ORDER BY start_ns").fetchall()
if [s[:4] for s in spans] != [('client', 'http', 200, 1),
                              ('server', 'http', 200, 1)] or \
        len({s[4] for s in spans}) != 1:
    bad.append('spans %r, want curl\'s client and apache\'s server span, '
               'status 200, ended, one request' % spans)
ow = c.execute("SELECT count(*) FROM messages WHERE kind = 'oneway' AND"
               " status = 101").fetchone()[0]
if ow != 2:
    bad.append('%d oneway 101 messages, want 2 (both ends)' % ow)
print('; '.join(bad) if bad else
      'h2c upgrade: both ends read as http, then http2; the spans right, '
      'the 101 interim')
sys.exit(1 if bad else 0)
PYEOF
) || bp_fail "$out"
echo "$out"
echo "PASS: h2c-upgrade"
