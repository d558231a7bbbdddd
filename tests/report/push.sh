#!/bin/bash
# push.sh - bp-reconstruct --otlp-endpoint against a real OTLP/HTTP
# receiver (otlp-receiver.js: node's http server, protobufjs with the
# OpenTelemetry .proto files), every span checked against the database and
# against the --otlp file (otlp-push-check.py):
#   - the encoder's edge cases (otlpwire.c): protobuf and JSON alike, bytes
#     that are not UTF-8 sent as U+FFFD (otlp-wire-check.js);
#   - protobuf + gzip in batches of 50, two auth headers, one kept-alive
#     connection;
#   - OTLP/JSON without compression, a receiver answering 503 with
#     Retry-After for its first three requests and closing every
#     connection: retried, all arrive once;
#   - 429 without Retry-After: exponential backoff; chunked answers;
#   - a slow receiver: the queue fills, nothing is lost; and with a time
#     bound: what was not sent in time is dropped and counted;
#   - an OTLP partial success (protobuf and JSON): the rejected spans
#     count as dropped;
#   - a batch refused with 400: dropped and counted, the rest arrive,
#     exit 4;
#   - a receiver that is down: bounded retries, a clear error, exit 4,
#     the database and the --otlp file written; the time bound;
#   - https:// (OpenSSL) to a receiver with a certificate of a test CA:
#     trusted with --otlp-ca (by IP address and by name), refused at once
#     without it and when the certificate names another host;
#   - the option errors (schemes, headers, options without an endpoint).
. "$(dirname "$0")/lib.sh"
rp_init push
rp_node

# a receiver: rp_rx NAME [OPTIONS], rp_stop_rx (lib.sh)
rx() { rp_rx "$@"; }
stop_rx() { rp_stop_rx; }

# push LABEL ARGS...: bp-reconstruct, bounded; RC, ERR (stderr file), SECS
push() {
	rp_recon "$@"
}

# reqs DIR PYTHON-EXPR-OVER-r: every request logged in DIR satisfies it
reqs() {
	"$PY" - "$1/requests.jsonl" "$2" <<'EOF' || rp_fail "requests in $1: $2"
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
bad = [r for r in rs if not eval(sys.argv[2], {}, {'r': r, 'h': r['headers']})]
for r in bad[:3]:
    print('not %s: %s' % (sys.argv[2], json.dumps(r)), file=sys.stderr)
sys.exit(1 if bad or not rs else 0)
EOF
}

# conns DIR: the number of connections the requests came on
conns() {
	"$PY" -c "import json,sys; print(len({json.loads(l)['conn'] for l in open(sys.argv[1])}))" "$1/requests.jsonl"
}

count() {
	grep -c . "$1" 2>/dev/null || echo 0
}

check() {
	"$PY" "$RP_DIR/otlp-push-check.py" "$@" || rp_fail "the spans received do not match $1"
}

# 0. the encoder's edge cases, both encodings, read back by protobufjs
"$top_builddir/tests/report/otlpwire" "$T/wire.pb" "$T/wire.json" ||
	rp_fail "tests/report/otlpwire"
node "$RP_DIR/otlp-wire-check.js" "$PROTO_DIR" "$T/wire.pb" "$T/wire.json" ||
	rp_fail "the encoder's edge cases do not read back"

"$DEMOLOG" -2 -n 60 "$T/shop" >/dev/null || rp_fail "demolog"
"$GENLOG" -3 -n 200 -w 4 "$T/three" >/dev/null || rp_fail "genlog"

# 1. protobuf, gzip, batches of 50, auth headers, kept alive
rx ok
push ok "$T/shop" -o "$T/shop.db" --otlp "$T/shop.json" --otlp-endpoint "$RX" \
	--otlp-batch 50 --otlp-header 'Authorization: Bearer t0ken' \
	--otlp-header 'X-Scope-OrgID:shop'
[ "$RC" = 0 ] || rp_fail "push to a receiver: exit $RC: $(cat "$ERR")"
spans=$(sqlite3 "$T/shop.db" "SELECT COUNT(*) FROM spans s JOIN requests r ON r.request_id = s.request_id")
nb=$(( (spans + 49) / 50 ))
grep -q "^bp-reconstruct: OTLP push: $spans spans sent in $nb batches, 0 retries, 0 dropped -> $RX (protobuf, gzip, " "$ERR" ||
	rp_fail "summary line: $(cat "$ERR")"
[ "$(count "$T/ok/requests.jsonl")" = "$nb" ] || rp_fail "$nb batches expected at the receiver"
reqs "$T/ok" "r['status'] == 200 and r['method'] == 'POST' and r['url'] == '/v1/traces' and r['httpVersion'] == '1.1'"
reqs "$T/ok" "h['content-type'] == 'application/x-protobuf' and h['content-encoding'] == 'gzip' and r['spans'] <= 50"
reqs "$T/ok" "h['authorization'] == 'Bearer t0ken' and h['x-scope-orgid'] == 'shop' and h['user-agent'].startswith('bp-reconstruct/')"
conns=$(conns "$T/ok")
[ "$conns" = 1 ] || rp_fail "$nb batches over $conns connections: the connection is not kept alive"
check "$T/shop.db" "$T/ok/batches.jsonl" --file "$T/shop.json"
bp_note "protobuf+gzip: $spans spans in $nb batches over 1 connection, ${SECS}s"
stop_rx

# 2. OTLP/JSON, no compression, 503 with Retry-After: 1 three times
rx busy --fail 3 --fail-status 503 --retry-after 1 --close 1
push busy "$T/three" -o "$T/three.db" --otlp "$T/three.json" \
	--otlp-endpoint "$RX/v1/traces" --otlp-json --otlp-compression none
[ "$RC" = 0 ] || rp_fail "push through 503s: exit $RC: $(cat "$ERR")"
grep -q "^bp-reconstruct: OTLP push: 1000 spans sent in 2 batches, 3 retries, 0 dropped -> $RX/v1/traces (JSON, " "$ERR" ||
	rp_fail "summary line after 503s: $(cat "$ERR")"
reqs "$T/busy" "h['content-type'] == 'application/json' and 'content-encoding' not in h"
reqs "$T/busy" "r['status'] == (503 if r['n'] <= 3 else 200)"
[ "$(count "$T/busy/requests.jsonl")" = 5 ] || rp_fail "3 refusals and 2 batches expected"
[ "$(conns "$T/busy")" = 5 ] || rp_fail "Connection: close, yet not a connection per request"
[ "$(echo "$SECS >= 3" | bc)" = 1 ] || rp_fail "Retry-After: 1 three times, yet done in ${SECS}s"
check "$T/three.db" "$T/busy/batches.jsonl" --file "$T/three.json"
bp_note "JSON through three 503s (Retry-After: 1): 1000 spans once each, ${SECS}s"
stop_rx

# 3. 429 without Retry-After: backoff 0.5 s then 1 s (less up to 20%);
# answers chunked, on one connection
rx slow --fail 2 --fail-status 429 --chunked 1
push slow "$T/three" -o "$T/three2.db" --otlp-endpoint "$RX" --otlp-batch 300
[ "$RC" = 0 ] || rp_fail "push through 429s: exit $RC: $(cat "$ERR")"
grep -q "^bp-reconstruct: OTLP push: 1000 spans sent in 4 batches, 2 retries, 0 dropped" "$ERR" ||
	rp_fail "summary line after 429s: $(cat "$ERR")"
[ "$(echo "$SECS >= 1.2" | bc)" = 1 ] || rp_fail "two backoffs took only ${SECS}s"
check "$T/three2.db" "$T/slow/batches.jsonl"
[ "$(conns "$T/slow")" = 1 ] || rp_fail "chunked answers: the connection was not kept"
stop_rx

# 3b. a slow receiver (40 ms an answer), 39 batches of 10: the queue of 8
# fills and the reader waits; everything arrives once
rx lag --delay 40
push lag "$T/shop" -o "$T/lag.db" --otlp-endpoint "$RX" --otlp-batch 10
[ "$RC" = 0 ] || rp_fail "push to a slow receiver: exit $RC: $(cat "$ERR")"
grep -q "^bp-reconstruct: OTLP push: $spans spans sent in $(( (spans + 9) / 10 )) batches, 0 retries, 0 dropped" "$ERR" ||
	rp_fail "summary line, slow receiver: $(cat "$ERR")"
check "$T/lag.db" "$T/lag/batches.jsonl"
stop_rx

# ... and too slow for the time bound: what was not sent is dropped, counted
rx crawl --delay 400
push crawl "$T/shop" -o "$T/crawl.db" --otlp-endpoint "$RX" --otlp-batch 10 \
	--otlp-timeout 2
[ "$RC" = 4 ] || rp_fail "a push past its time bound: exit $RC, not 4: $(cat "$ERR")"
grep -q "the time bound (2 s) ran out" "$ERR" || rp_fail "time bound message: $(cat "$ERR")"
line=$(grep "^bp-reconstruct: OTLP push: " "$ERR")
sent=$(echo "$line" | sed -n 's/^bp-reconstruct: OTLP push: \([0-9]*\) spans sent.*/\1/p')
dropped=$(echo "$line" | sed -n 's/.* \([0-9]*\) dropped -> .*/\1/p')
[ -n "$sent" ] && [ -n "$dropped" ] && [ "$sent" -gt 0 ] && [ "$dropped" -gt 0 ] &&
	[ $((sent + dropped)) = "$spans" ] ||
	rp_fail "sent $sent + dropped $dropped is not $spans: $line"
[ "$(echo "$SECS < 6" | bc)" = 1 ] || rp_fail "--otlp-timeout 2 with a slow receiver took ${SECS}s"
bp_note "time bound with a slow receiver: $sent sent, $dropped dropped, ${SECS}s"
stop_rx

# 3c. OTLP partial success: 7 spans of the first batch rejected
for enc in protobuf json; do
	if [ $enc = json ]; then flag=--otlp-json; else flag=--otlp-batch; fi
	rx "partial-$enc" --partial 7
	push partial "$T/shop" -o "$T/partial.db" --otlp-endpoint "$RX" \
		$flag $([ $enc = json ] || echo 50)
	[ "$RC" = 4 ] || rp_fail "a partial success ($enc): exit $RC, not 4: $(cat "$ERR")"
	grep -q "^bp-reconstruct: error: OTLP push: $RX accepted [0-9]* of [0-9]* spans, rejected 7 (partial success: spans too old (test)): 7 of $spans spans not delivered" "$ERR" ||
		rp_fail "partial success message ($enc): $(cat "$ERR")"
	grep -q "^bp-reconstruct: OTLP push: $((spans - 7)) spans sent in [0-9]* batches, 0 retries, 7 dropped" "$ERR" ||
		rp_fail "summary line after a partial success ($enc): $(cat "$ERR")"
	stop_rx
done

# 4. the first batch refused for good: dropped and counted, the rest arrive
rx refuse --fail 1 --fail-status 400
push refuse "$T/shop" -o "$T/shop2.db" --otlp-endpoint "$RX" --otlp-batch 50
[ "$RC" = 4 ] || rp_fail "a refused batch did not exit 4 (exit $RC): $(cat "$ERR")"
grep -q "^bp-reconstruct: error: OTLP push: $RX refused 50 spans: HTTP 400 Bad Request: not now (test): 50 of $spans spans not delivered" "$ERR" ||
	rp_fail "refusal message: $(cat "$ERR")"
grep -q "^bp-reconstruct: OTLP push: $((spans - 50)) spans sent in $((nb - 1)) batches, 0 retries, 50 dropped" "$ERR" ||
	rp_fail "summary line after a refusal: $(cat "$ERR")"
check "$T/shop2.db" "$T/refuse/batches.jsonl" --missing 50
stop_rx

# 5. the receiver is down: bounded retries, a clear error, the files kept
port=${RX##*:}
push down "$T/shop" -o "$T/down.db" --otlp "$T/down.json" --otlp-endpoint "$RX" \
	--otlp-retries 2
[ "$RC" = 4 ] || rp_fail "a receiver that is down: exit $RC, not 4: $(cat "$ERR")"
grep -q "^bp-reconstruct: error: OTLP push: $RX after 2 retries: cannot connect to 127.0.0.1 port $port: Connection refused: $spans of $spans spans not delivered" "$ERR" ||
	rp_fail "connection refused message: $(cat "$ERR")"
grep -q "^bp-reconstruct: OTLP push: 0 spans sent in 0 batches, 2 retries, $spans dropped" "$ERR" ||
	rp_fail "summary line when down: $(cat "$ERR")"
[ "$(echo "$SECS < 10" | bc)" = 1 ] || rp_fail "two retries took ${SECS}s"
[ "$(sqlite3 "$T/down.db" "SELECT COUNT(*) FROM spans s JOIN requests r USING (request_id)")" = "$spans" ] ||
	rp_fail "the database is not complete after a failed push"
[ "$(count "$T/down.json")" = 60 ] || rp_fail "the --otlp file is not complete after a failed push"
bp_note "receiver down: exit 4 after 2 retries in ${SECS}s, database and file written"

# ... and the time bound of the whole push
push bound "$T/shop" -o "$T/bound.db" --otlp-endpoint "$RX" --otlp-retries 100 \
	--otlp-timeout 2
[ "$RC" = 4 ] || rp_fail "out of time: exit $RC, not 4: $(cat "$ERR")"
grep -q "the time bound (2 s) ran out" "$ERR" || rp_fail "time bound message: $(cat "$ERR")"
[ "$(echo "$SECS < 8" | bc)" = 1 ] || rp_fail "--otlp-timeout 2 took ${SECS}s"

# 5b. https: a self-signed certificate for localhost and 127.0.0.1, and
# one for another name
mkdir -p "$T/tls" "$T/tls-other" || rp_fail "mkdir"
for d in tls tls-other; do
	if [ $d = tls ]; then san="DNS:localhost,IP:127.0.0.1"; else san="DNS:elsewhere.invalid"; fi
	timeout 60 openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=bp-test \
		-addext "subjectAltName=$san" -keyout "$T/$d/key.pem" \
		-out "$T/$d/cert.pem" >"$T/$d/openssl.log" 2>&1 ||
		rp_fail "openssl req: $(cat "$T/$d/openssl.log")"
done
rx tls --tls "$T/tls"
HTTPS=https://127.0.0.1:${RX##*:}
push tls "$T/shop" -o "$T/tls.db" --otlp "$T/tls.json" --otlp-endpoint "$HTTPS" \
	--otlp-ca "$T/tls/cert.pem" --otlp-batch 50 --otlp-header 'Authorization: Bearer t0ken'
[ "$RC" = 0 ] || rp_fail "https push: exit $RC: $(cat "$ERR")"
grep -q "^bp-reconstruct: OTLP push: $spans spans sent in $nb batches, 0 retries, 0 dropped -> $HTTPS (protobuf, gzip, " "$ERR" ||
	rp_fail "summary line over https: $(cat "$ERR")"
reqs "$T/tls" "r['tls'] and r['status'] == 200 and h['authorization'] == 'Bearer t0ken'"
[ "$(conns "$T/tls")" = 1 ] || rp_fail "https: the connection is not kept alive"
check "$T/tls.db" "$T/tls/batches.jsonl" --file "$T/tls.json"
n0=$(count "$T/tls/requests.jsonl")
push tlsname "$T/shop" -o "$T/tls2.db" --otlp-endpoint "https://localhost:${RX##*:}" \
	--otlp-ca "$T/tls/cert.pem" --otlp-json
[ "$RC" = 0 ] || rp_fail "https push to localhost: exit $RC: $(cat "$ERR")"
[ "$(count "$T/tls/requests.jsonl")" = $((n0 + 1)) ] || rp_fail "https to localhost: not one more request"
# not trusted: no retries, the reason, exit 4
push untrusted "$T/shop" -o "$T/tls3.db" --otlp-endpoint "$HTTPS"
[ "$RC" = 4 ] || rp_fail "an untrusted certificate: exit $RC, not 4: $(cat "$ERR")"
grep -q "^bp-reconstruct: error: OTLP push: $HTTPS: the certificate of 127.0.0.1 port ${RX##*:} is not trusted: self-signed certificate (give its CA with --otlp-ca FILE): $spans of $spans spans not delivered" "$ERR" ||
	rp_fail "untrusted certificate message: $(cat "$ERR")"
grep -q " 0 retries, $spans dropped" "$ERR" || rp_fail "an untrusted certificate was retried: $(cat "$ERR")"
stop_rx
rx tls-other --tls "$T/tls-other"
push othername "$T/shop" -o "$T/tls4.db" --otlp-endpoint "https://127.0.0.1:${RX##*:}" \
	--otlp-ca "$T/tls-other/cert.pem"
[ "$RC" = 4 ] || rp_fail "a certificate for another host: exit $RC, not 4: $(cat "$ERR")"
grep -q "is not trusted: IP address mismatch" "$ERR" ||
	rp_fail "certificate for another host: $(cat "$ERR")"
[ -s "$T/tls-other/requests.jsonl" ] && rp_fail "a request went to a host whose certificate names another"
stop_rx
push badca "$T/shop" -o "$T/tls5.db" --otlp-endpoint "$HTTPS" --otlp-ca "$T/nothere.pem"
[ "$RC" = 4 ] || rp_fail "a missing --otlp-ca file: exit $RC: $(cat "$ERR")"
grep -q "otlp-ca $T/nothere.pem: .*(give a file of PEM certificates)" "$ERR" ||
	rp_fail "missing --otlp-ca message: $(cat "$ERR")"
bp_note "https: verified by IP and by name, refused untrusted and misnamed certificates"

# 6. the option errors: usage (exit 1), before any reading
usage() {
	rp_usage "$T/shop" "$@"
}
usage "ftp://localhost:4318: not an http:// or https:// URL" --otlp-endpoint ftp://localhost:4318
usage "not an http:// or https:// URL" --otlp-endpoint localhost:4318
usage "the port is not a number from 1 to 65535" --otlp-endpoint http://localhost:99999
usage "--otlp-header wants 'Name: value'" --otlp-endpoint "$RX" --otlp-header Bearer
usage "bp-reconstruct sets Content-Length itself" --otlp-endpoint "$RX" --otlp-header 'Content-Length: 1'
usage "go with --otlp-endpoint URL" --otlp-json
usage "--otlp-compression wants gzip or none" --otlp-endpoint "$RX" --otlp-compression br
usage "--otlp-batch wants a number of spans from 1 to 100000" --otlp-endpoint "$RX" --otlp-batch 0
"$RECON" --help | grep -q -- '--otlp-ca=FILE' || rp_fail "--help does not tell --otlp-ca"
echo "PASS: push"
exit 0
