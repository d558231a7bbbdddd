#!/bin/bash
# traced.sh - the exports and the report on a real traced database: the
# example servers of examples/ (ex-backend and ex-threads, driven by
# ex-client, everything traced through bp-logd; tests/integ/lib.sh), their
# paths checked against the client's truth, then bp-report with --otlp,
# --perfetto and --dot on that database, each output read back by its
# independent reader (tests/report/lib.sh) and the report opened in
# headless Chromium.
. "$(dirname "$0")/../integ/lib.sh"
. "$(dirname "$0")/lib.sh"
RP_TEST=traced
: "${BP_REQUESTS:=100}"
bp_init report-traced
bp_require_tracing
for p in "$REPORT"; do
	[ -x "$p" ] || bp_fail "$p is not built (run make)"
done
rp_node
POOL=64
bp_traced_run threads 8 4 1 assert
db=$T/run1/paths.db
nreq=$(sqlite3 "$db" "SELECT COUNT(*) FROM requests")
[ "$nreq" -ge "$BP_REQUESTS" ] || bp_fail "$nreq requests in $db, wanted at least $BP_REQUESTS"
"$REPORT" "$db" -o "$T/report.html" --otlp "$T/traces.json" \
	--perfetto "$T/trace.json" --dot "$T/dot" --dot-max 20 2>"$T/report.err" ||
	bp_fail "bp-report on the traced database: $(cat "$T/report.err")"
grep -q "^bp-report: $nreq requests, 100 timelines" "$T/report.err" ||
	bp_fail "report summary: $(cat "$T/report.err")"
spans=$(sqlite3 "$db" "SELECT COUNT(*) FROM spans WHERE request_id IS NOT NULL")
errs=$(sqlite3 "$db" "SELECT COUNT(*) FROM errors WHERE request_id IS NOT NULL")
rp_check_otlp "$T/traces.json" --traces "$nreq" --spans "$spans" --errors "$errs"
grep -q '"key":"service.name","value":{"stringValue":"ex-backend"}' "$T/traces.json" ||
	bp_fail "no ex-backend service in the OTLP file"
rp_check_perfetto "$db" "$T/trace.json"
rp_check_dot "$T/dot"
# every request of the client has a shape: REQ <id> <n> folds to REQ ? ?
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM patterns WHERE root = 'REQ ? ?' AND service = 'ex-client'")" -ge 1 ] ||
	bp_fail "the client's requests did not fold into REQ ? ?: $(sqlite3 "$db" "SELECT root FROM patterns LIMIT 5")"
BROWSER=$(command -v chromium || true)
if [ -n "$BROWSER" ]; then
	timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu \
		--disable-background-networking --no-first-run \
		--user-data-dir="$(mktemp -d "$T/chrome.XXXXXX")" \
		--enable-logging=stderr --v=0 --dump-dom "file://$T/report.html" \
		>"$T/dom.html" 2>"$T/dom.err" || bp_fail "chromium failed"
	grep -E ':CONSOLE|Uncaught' "$T/dom.err" && bp_fail "console output in the report"
	grep -q '<body data-ready="1">' "$T/dom.html" || bp_fail "the report's script did not run"
	[ "$(grep -o '<svg class="timeline"' "$T/dom.html" | wc -l)" = 100 ] ||
		bp_fail "not 100 timelines"
else
	bp_note "no chromium: the report was not opened (tests/report/report.sh does)"
fi
bp_note "$nreq requests, $spans spans, $(sqlite3 "$db" "SELECT COUNT(*) FROM patterns") patterns"
echo "PASS: traced"
