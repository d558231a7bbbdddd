#!/bin/bash
# exports.sh - bp-reconstruct --otlp, --perfetto and --dot, each read back
# by an independent reader: the OTLP/JSON lines against the OpenTelemetry
# .proto files with protobufjs (otlp-check.js), the Chrome trace JSON with
# Python's json (perfetto-check.py), every DOT file with dot -Tsvg.  On the
# scripted shop over two hosts and on the three-tier workload over three
# hosts; then the errors of the export options.
. "$(dirname "$0")/lib.sh"
rp_init exports
rp_node

# the shop: nginx, php-fpm, PostgreSQL on a second host
"$DEMOLOG" -2 -n 60 "$T/shop" || rp_fail "demolog"
"$RECON" "$T/shop" -o "$T/shop.db" --otlp "$T/shop.json" \
	--perfetto "$T/shop.trace.json" --dot "$T/dot" --dot-max 10 \
	2>"$T/err" || rp_fail "bp-reconstruct with exports: $(cat "$T/err")"
grep -q '^bp-reconstruct: OTLP: 60 traces, [0-9]* spans -> ' "$T/err" ||
	rp_fail "no OTLP summary line: $(cat "$T/err")"
grep -q '^bp-reconstruct: Perfetto: ' "$T/err" || rp_fail "no Perfetto summary line"
grep -q '^bp-reconstruct: DOT: 10 request graphs, 8 pattern graphs -> ' "$T/err" ||
	rp_fail "no DOT summary line: $(cat "$T/err")"
db=$T/shop.db
spans=$(sqlite3 "$db" "SELECT COUNT(*) FROM spans WHERE request_id IS NOT NULL")
errs=$(sqlite3 "$db" "SELECT COUNT(*) FROM errors WHERE request_id IS NOT NULL")
[ "$errs" -gt 0 ] || rp_fail "the shop has no errors to export"
rp_check_otlp "$T/shop.json" --traces 60 --spans "$spans" --errors "$errs"
# every span carries its certainty (all exact in the shop)
n=$(grep -o '"key":"bp.certainty","value":{"stringValue":"exact"}' "$T/shop.json" | wc -l)
[ "$n" = "$spans" ] || rp_fail "bp.certainty exact on $n of $spans OTLP spans"
grep -q '"bp.certainty":"exact"' "$T/shop.trace.json" ||
	rp_fail "no bp.certainty in the Perfetto trace"
# what the OTLP says about the failed query
grep -q '"key":"db.response.status_code","value":{"stringValue":"23505"}' "$T/shop.json" ||
	rp_fail "the SQLSTATE of the failed INSERT is not in the OTLP file"
grep -q '"key":"service.name","value":{"stringValue":"postgres"}' "$T/shop.json" ||
	rp_fail "no postgres service in the OTLP file"
[ "$(grep -c . "$T/shop.json")" = 60 ] || rp_fail "not one line per request"
rp_check_perfetto "$db" "$T/shop.trace.json"
[ "$(ls "$T/dot"/request-*.dot | wc -l)" = 10 ] || rp_fail "not 10 request graphs"
[ "$(ls "$T/dot"/pattern-*.dot | wc -l)" = 8 ] || rp_fail "not 8 pattern graphs"
for id in $(sqlite3 "$db" "SELECT DISTINCT request_id FROM errors WHERE request_id IS NOT NULL"); do
	[ -f "$T/dot/request-$id.dot" ] || rp_fail "request $id has an error but no graph"
done
slow=$(sqlite3 "$db" "SELECT request_id FROM slowest_requests LIMIT 1")
[ -f "$T/dot/request-$slow.dot" ] || rp_fail "the slowest request has no graph"
grep -q 'color="#cc0000"' "$T/dot/request-$id.dot" || rp_fail "a failed span is not red"
rp_check_dot "$T/dot"

# three hosts, clocks seconds apart
"$GENLOG" -3 -n 200 -w 4 "$T/three" || rp_fail "genlog"
"$RECON" -q "$T/three" -o "$T/three.db" --otlp "$T/three.json" \
	--perfetto "$T/three.trace.json" --dot "$T/dot3" --dot-max 0 ||
	rp_fail "bp-reconstruct on three hosts"
rp_check_otlp "$T/three.json" --traces 200 --spans 1000 --errors 0
rp_check_perfetto "$T/three.db" "$T/three.trace.json"
[ "$(ls "$T/dot3"/request-*.dot | wc -l)" = 200 ] || rp_fail "--dot-max 0 did not draw every request"
rp_check_dot "$T/dot3"

# errors: the database is written, the export fails with the file named
"$RECON" -q "$T/three" -o "$T/x.db" --otlp "$T/nodir/t.json" 2>"$T/err"
[ $? = 3 ] || rp_fail "an unwritable --otlp file did not exit 3"
grep -q "cannot create $T/nodir/t.json.tmp-[0-9]*: No such file or directory (check that its directory exists and is writable)" "$T/err" ||
	rp_fail "unwritable --otlp message: $(cat "$T/err")"
touch "$T/afile"
"$RECON" -q "$T/three" -o "$T/x.db" --dot "$T/afile" 2>"$T/err"
[ $? = 3 ] || rp_fail "--dot onto a file did not exit 3"
grep -q "$T/afile is not a directory" "$T/err" || rp_fail "--dot message: $(cat "$T/err")"
"$RECON" -q "$T/three" -o "$T/x.db" --dot-max lots 2>"$T/err"
[ $? = 1 ] || rp_fail "a bad --dot-max is not a usage error"
ls "$T" | grep -q 'tmp-' && rp_fail "a failed export left a temporary file"
echo "PASS: exports"
exit 0
