#!/bin/sh
# bp-reconstruct's command line: --help, usage errors and exit codes, the
# summary, quiet mode, the progress bar, three hosts.  Run from the build
# directory (make check does); keeps nothing unless KEEP=1.
set -u
bin=./bp-reconstruct
gen=./tests/recon/genlog
tmp=$(mktemp -d "${TMPDIR:-/tmp}/recon-cli.XXXXXX") || exit 99
if [ "${KEEP:-0}" = 1 ]; then
	echo "keeping $tmp"
else
	trap 'rm -rf "$tmp"' EXIT INT TERM
fi
fail() { echo "FAIL: $*"; [ -f "$tmp/err" ] && sed 's/^/  stderr: /' "$tmp/err"; exit 1; }
expect() {   # expect STATUS DESCRIPTION -- COMMAND...
	want=$1 what=$2; shift 3
	"$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	[ "$got" -eq "$want" ] || fail "$what: exit status $got, wanted $want"
}
command -v sqlite3 >/dev/null || { echo "SKIP: no sqlite3 command"; exit 77; }

expect 0 "--help" -- $bin --help
grep -q '^EXIT STATUS' "$tmp/out" || fail "--help lacks EXIT STATUS"
grep -q 'bp-reconstruct \[OPTION\]... LOGDIR... -o PATHS.db' "$tmp/out" || fail "--help lacks the synopsis"
expect 0 "--version" -- $bin --version
grep -q '^bp-reconstruct ' "$tmp/out" || fail "--version"

expect 1 "no arguments" -- $bin
grep -q 'no output database: add -o PATHS.db' "$tmp/err" || fail "no-output message"
expect 1 "no LOGDIR" -- $bin -o "$tmp/x.db"
grep -q 'no LOGDIR given' "$tmp/err" || fail "no-LOGDIR message"
expect 1 "unknown option" -- $bin --frobnicate -o "$tmp/x.db" "$tmp"
expect 1 "bad --warnings" -- $bin -w many -o "$tmp/x.db" "$tmp"

expect 2 "missing LOGDIR" -- $bin "$tmp/nope" -o "$tmp/x.db"
grep -q "cannot read '$tmp/nope': No such file or directory (give the logs/ directory" "$tmp/err" ||
	fail "missing-LOGDIR message"
mkdir "$tmp/empty"
expect 2 "LOGDIR without segments" -- $bin "$tmp/empty" -o "$tmp/x.db"
grep -q 'no readable log block in the input' "$tmp/err" || fail "empty-LOGDIR message"
[ ! -e "$tmp/x.db" ] || fail "a failed run left $tmp/x.db"
ls "$tmp" | grep -q 'tmp-' && fail "a failed run left a temporary database"

$gen -n 50 "$tmp/logs" || fail "genlog"
expect 3 "unwritable output" -- $bin "$tmp/logs" -o "$tmp/nodir/x.db"
grep -q "cannot create $tmp/nodir/x.db.tmp-" "$tmp/err" || fail "output error message"

expect 0 "reconstruct" -- $bin "$tmp/logs" -o "$tmp/p.db"
grep -q '^bp-reconstruct: [0-9]* events read (0 lost), 50 requests (50 exact, 0 resolved, 0 uncertain), 250 spans, [0-9]* unattributed, 0 warnings -> ' "$tmp/err" ||
	fail "summary line"
[ "$(sqlite3 "$tmp/p.db" 'SELECT COUNT(*) FROM requests WHERE complete = 1')" = 50 ] || fail "50 complete requests"
[ "$(sqlite3 "$tmp/p.db" "SELECT COUNT(*) FROM files WHERE request_id IS NULL")" = 0 ] || fail "files attributed"
[ "$(sqlite3 "$tmp/p.db" "SELECT COUNT(*) FROM spans s JOIN spans p ON s.parent_span_id = p.span_id WHERE s.start_ns < p.start_ns OR s.end_ns > p.end_ns")" = 0 ] ||
	fail "spans nested in their parents"

# Unary gRPC methods named (docs/reconstruct.md, "Unary gRPC methods"):
# a pattern, a .proto; what cannot be read is a usage error.
expect 1 "bad --grpc-unary" -- $bin --grpc-unary 'tb.Svc/*' "$tmp/logs" -o "$tmp/g.db"
grep -q -- "--grpc-unary wants a gRPC method path" "$tmp/err" || fail "--grpc-unary message"
printf 'package tb;\nservice S {\n  rpc A (B) returns C;\n}\n' >"$tmp/bad.proto"
expect 1 "unreadable --grpc-proto" -- $bin --grpc-proto "$tmp/bad.proto" "$tmp/logs" -o "$tmp/g.db"
grep -q -- "--grpc-proto: $tmp/bad.proto:3: rpc: '(' expected" "$tmp/err" || fail "--grpc-proto message"
expect 1 "missing --grpc-proto" -- $bin --grpc-proto "$tmp/none.proto" "$tmp/logs" -o "$tmp/g.db"
printf 'syntax = "proto3";\npackage tb; // x\nservice S { rpc A (B) returns (C); rpc W (stream B) returns (C); }\n' >"$tmp/ok.proto"
expect 1 "--grpc-unary with --join" -- $bin --join --grpc-unary '/tb.S/*' "$tmp/a.db" -o "$tmp/g.db"
grep -q -- "--grpc-unary and --grpc-proto go with the reconstruction" "$tmp/err" || fail "--join message"
expect 0 "--grpc-proto" -- $bin --grpc-proto "$tmp/ok.proto" --grpc-unary '/tb.T/*' "$tmp/logs" -o "$tmp/g.db"
grep -q ' 50 requests (50 exact, 0 resolved, 0 uncertain)' "$tmp/err" || fail "--grpc-proto run"
grep -q '^bp-reconstruct: gRPC methods named unary: 0 calls of them; 0 request messages judged without a call whose body had not come (no call matched a name' "$tmp/err" ||
	fail "--grpc-proto summary line"

# The output is replaced atomically: a second run over the same file.
expect 0 "rerun, quiet" -- $bin -q "$tmp/logs" -o "$tmp/p.db"
[ -s "$tmp/err" ] && fail "-q printed something"

expect 0 "progress bar" -- $bin --progress "$tmp/logs" -o "$tmp/p2.db"
grep -q 'bp-reconstruct: scanning' "$tmp/err" || fail "no progress bar with --progress"

$gen -3 -n 40 "$tmp/logs3" || fail "genlog -3"
expect 0 "three hosts" -- $bin "$tmp/logs3/front" "$tmp/logs3/app" "$tmp/logs3/db" -o "$tmp/p3.db"
grep -q 'clock: front is the reference' "$tmp/err" || fail "reference host line"
grep -q 'clock: app monotonic offset -5.000' "$tmp/err" ||
	grep -q 'clock: app monotonic offset -4.999' "$tmp/err" || fail "app offset line"
[ "$(sqlite3 "$tmp/p3.db" 'SELECT COUNT(*) FROM requests WHERE complete = 1')" = 40 ] || fail "40 requests over three hosts"
# the span of the requests' starts in stats (--follow reads it there):
# counted as the rows went in, the times corrected (three clock domains)
# and read back in one thread or two; so too with one host
for d in p3 p; do
	[ "$(sqlite3 "$tmp/$d.db" "SELECT (SELECT value FROM stats WHERE key = 'requests_first_ns') = min(start_ns)
		AND (SELECT value FROM stats WHERE key = 'requests_last_ns') = max(start_ns) FROM requests")" = 1 ] ||
		fail "$d.db: stats requests_first_ns / requests_last_ns are not the requests' first and last start"
done
expect 0 "reference by name" -- $bin -r db "$tmp/logs3" -o "$tmp/p4.db"
[ "$(sqlite3 "$tmp/p4.db" 'SELECT name FROM hosts WHERE reference = 1')" = db ] || fail "-r db"
# --detail=spans: messages and fragments created empty, every other
# table (and view) the same rows as the full database, whose dump has no
# trace of the option; usage errors for bad levels and the readers of
# the missing tables.
expect 0 "--detail=spans" -- $bin -q --detail=spans "$tmp/logs3/front" "$tmp/logs3/app" "$tmp/logs3/db" -o "$tmp/ds.db"
expect 0 "--detail=full" -- $bin -q --detail=full "$tmp/logs3/front" "$tmp/logs3/app" "$tmp/logs3/db" -o "$tmp/df.db"
sqlite3 "$tmp/p3.db" .dump >"$tmp/p3.sql"
sqlite3 "$tmp/df.db" .dump >"$tmp/df.sql"
cmp -s "$tmp/p3.sql" "$tmp/df.sql" || fail "--detail=full differs from the default"
[ "$(sqlite3 "$tmp/p3.db" 'SELECT COUNT(*) FROM messages')" -gt 100 ] || fail "few messages in the full database"
[ "$(sqlite3 "$tmp/p3.db" 'SELECT COUNT(*) FROM fragments')" -gt 100 ] || fail "few fragments in the full database"
[ "$(sqlite3 "$tmp/ds.db" 'SELECT COUNT(*) FROM messages') $(sqlite3 "$tmp/ds.db" 'SELECT COUNT(*) FROM fragments')" = "0 0" ] ||
	fail "--detail=spans wrote messages or fragments"
[ "$(sqlite3 "$tmp/ds.db" "SELECT value FROM stats WHERE key = 'detail_spans_only'")" = 1 ] || fail "stats.detail_spans_only"
[ -z "$(sqlite3 "$tmp/p3.db" "SELECT value FROM stats WHERE key = 'detail_spans_only'")" ] || fail "detail_spans_only in a full database"
for q in requests spans attrs files processes channels hosts warnings span_candidates \
	 patterns pattern_nodes span_patterns latency_per_target request_paths errors \
	 span_self_time uncertain_requests; do
	a=$(sqlite3 "$tmp/p3.db" "SELECT * FROM $q ORDER BY 1" | md5sum)
	b=$(sqlite3 "$tmp/ds.db" "SELECT * FROM $q ORDER BY 1" | md5sum)
	[ "$a" = "$b" ] || fail "--detail=spans changed $q"
done
expect 1 "bad --detail" -- $bin --detail=some "$tmp/logs3" -o "$tmp/x.db"
grep -q -- "--detail is full or spans, not 'some'" "$tmp/err" || fail "bad --detail message"
for o in --host-local "--otlp=$tmp/o.json" "--perfetto=$tmp/p.json" --otlp-endpoint=http://127.0.0.1:9/; do
	expect 1 "--detail=spans $o" -- $bin --detail=spans $o "$tmp/logs3/app" -o "$tmp/x.db"
	grep -q -- '--detail=spans leaves the messages and fragments tables empty' "$tmp/err" ||
		fail "--detail=spans $o: message"
done
[ ! -e "$tmp/x.db" ] || fail "a refused --detail left its database"
# Hosts reconstructed apart (--host-local) and joined (--join): the same
# spans under the same parents, and the clocks related again.
edges() {   # edges DB: one line per span: it, its parent, its request
	sqlite3 "$1" "SELECT c.kind || ' ' || c.protocol || ' ' ||
		IFNULL(c.target, '') || ' ' || c.host || ' ' || c.exe || ' ' ||
		c.certainty || ' <- ' || IFNULL(p.kind || ' ' || IFNULL(p.target, '')
		|| ' ' || p.host, 'root') || ' in ' || IFNULL(r.target, '-')
		FROM spans c LEFT JOIN spans p ON p.span_id = c.parent_span_id
		LEFT JOIN requests r ON r.request_id = c.request_id ORDER BY 1"
}
expect 1 "--host-local on three hosts" -- $bin --host-local "$tmp/logs3" -o "$tmp/hl.db"
grep -q -- '--host-local: the logs hold 3 hosts (.*): give the logs of one host' "$tmp/err" ||
	fail "--host-local message for three hosts"
[ ! -e "$tmp/hl.db" ] || fail "a refused --host-local left its database"
expect 1 "--host-local with --join" -- $bin --host-local --join "$tmp/p3.db" -o "$tmp/j.db"
for h in front app db; do
	expect 0 "--host-local $h" -- $bin -q --host-local "$tmp/logs3/$h" -o "$tmp/hl-$h.db"
done
[ "$(sqlite3 "$tmp/hl-app.db" 'SELECT COUNT(*) FROM requests')" = 40 ] ||
	fail "app alone: its requests from front should be requests of their own"
[ "$(sqlite3 "$tmp/hl-app.db" 'SELECT COUNT(*) FROM span_links')" = 80 ] ||
	fail "app alone: a link per server span from front and per call to db"
expect 0 "--join" -- $bin --join "$tmp/hl-front.db" "$tmp/hl-app.db" "$tmp/hl-db.db" -o "$tmp/j.db"
grep -q '^bp-reconstruct: joined 3 databases: 40 requests (40 exact, 0 resolved, 0 uncertain), ' "$tmp/err" ||
	fail "--join summary line"
edges "$tmp/p3.db" >"$tmp/e-central"
edges "$tmp/j.db" >"$tmp/e-joined"
[ "$(wc -l <"$tmp/e-central")" -ge 200 ] || fail "few spans in the central database"
cmp -s "$tmp/e-central" "$tmp/e-joined" ||
	fail "the join differs from the central reconstruction: $(diff "$tmp/e-central" "$tmp/e-joined" | head -5)"
# The central run makes the patterns as its rows go in, the join from
# the rows it copied (the pass): the same patterns either way.
case "$(sqlite3 "$tmp/p3.db" "SELECT value FROM stats WHERE key = 'patterns_stream'") $(sqlite3 "$tmp/j.db" "SELECT value FROM stats WHERE key = 'patterns_stream'")" in
"1 0"|"2 0") ;;
*) fail "patterns_stream: central and joined databases" ;;
esac
pq="SELECT n, complete, nodes, signature FROM patterns ORDER BY signature"
[ "$(sqlite3 "$tmp/p3.db" "$pq")" = "$(sqlite3 "$tmp/j.db" "$pq")" ] && [ -n "$(sqlite3 "$tmp/p3.db" "$pq")" ] ||
	fail "the join's patterns differ from the central reconstruction's"
[ "$(sqlite3 "$tmp/j.db" "SELECT COUNT(*) FROM requests WHERE pattern_id IS NULL")" = 0 ] ||
	fail "joined requests without a pattern"
[ "$(sqlite3 "$tmp/j.db" "SELECT COUNT(*) FROM spans s JOIN requests r USING (request_id) WHERE s.span_id NOT IN (SELECT span_id FROM span_patterns)")" = 0 ] ||
	fail "joined spans without their span_patterns row"
[ "$(sqlite3 "$tmp/j.db" "SELECT COUNT(*) FROM spans s JOIN spans p ON s.parent_span_id = p.span_id WHERE s.start_ns < p.start_ns OR s.end_ns > p.end_ns")" = 0 ] ||
	fail "joined spans not nested in their parents (clocks)"
sqlite3 "$tmp/j.db" "SELECT method FROM hosts WHERE name = 'app'" | grep -qx links ||
	fail "app's clock not related by links"
expect 2 "--join of a central database" -- $bin --join "$tmp/p3.db" "$tmp/hl-app.db" -o "$tmp/j2.db"
grep -q "p3.db is not a database of bp-reconstruct --host-local" "$tmp/err" || fail "--join message for a central database"
expect 2 "--join of one host twice" -- $bin --join "$tmp/hl-app.db" "$tmp/hl-app.db" -o "$tmp/j2.db"
grep -q "holds a host that another input holds too" "$tmp/err" || fail "--join message for a host twice"
expect 2 "--join of a missing database" -- $bin --join "$tmp/hl-app.db" "$tmp/nope.db" -o "$tmp/j2.db"
[ ! -e "$tmp/j2.db" ] || fail "a failed --join left its database"
ls "$tmp" | grep -q 'j2.db.tmp-' && fail "a failed --join left a temporary database"
# A key two connections claim that cannot be paired one to one: no link,
# the spans uncertain ('join:ambiguous'), never a guess.
cp "$tmp/hl-app.db" "$tmp/hl-app2.db"
sqlite3 "$tmp/hl-app2.db" "UPDATE span_links SET link = (SELECT link FROM span_links ORDER BY span_id LIMIT 1)
	WHERE span_id = (SELECT l.span_id FROM span_links l JOIN spans s USING (span_id)
	WHERE s.kind = 'server' ORDER BY l.span_id LIMIT 1 OFFSET 1)" || fail "sqlite3 update"
expect 0 "--join, an ambiguous key" -- $bin --join "$tmp/hl-front.db" "$tmp/hl-app2.db" "$tmp/hl-db.db" -o "$tmp/j3.db"
[ "$(sqlite3 "$tmp/j3.db" "SELECT value FROM stats WHERE key = 'join_ambiguous'")" -ge 3 ] ||
	fail "ambiguous key: join_ambiguous $(sqlite3 "$tmp/j3.db" "SELECT value FROM stats WHERE key = 'join_ambiguous'")"
[ "$(sqlite3 "$tmp/j3.db" "SELECT COUNT(*) FROM requests WHERE certainty_reason LIKE '%join:ambiguous%'")" -ge 2 ] ||
	fail "ambiguous key: requests not marked"
[ "$(sqlite3 "$tmp/j3.db" "SELECT COUNT(*) FROM requests WHERE certainty = 'exact'")" -lt 40 ] || fail "ambiguous key: all exact"

# The same logs with each stream's repeated values written as references
# to its dictionary, as libbtrace writes them: the same database but for
# the bytes read.  (Many requests: slots get reused within a record.)
$gen -3 -w 4 -n 200 "$tmp/logsp" || fail "genlog, plain"
BP_GEN_DICT=1 $gen -3 -w 4 -n 200 "$tmp/logsd" || fail "genlog, dictionary"
expect 0 "plain values" -- $bin "$tmp/logsp" -o "$tmp/pp.db"
expect 0 "dictionary references" -- $bin "$tmp/logsd" -o "$tmp/pd.db"
grep -q ' 0 warnings -> ' "$tmp/err" || fail "warnings reading the dictionary logs"
sqlite3 "$tmp/pp.db" .dump | grep -v "'payload_bytes'" >"$tmp/pp.sql"
sqlite3 "$tmp/pd.db" .dump | grep -v "'payload_bytes'" >"$tmp/pd.sql"
[ "$(wc -l <"$tmp/pp.sql")" -gt 1000 ] || fail "a short dump"
cmp -s "$tmp/pp.sql" "$tmp/pd.sql" ||
	fail "the dictionary changed the database: $(diff "$tmp/pp.sql" "$tmp/pd.sql" | head -5)"
bp=$(sqlite3 "$tmp/pp.db" "SELECT value FROM stats WHERE key = 'payload_bytes'")
bd=$(sqlite3 "$tmp/pd.db" "SELECT value FROM stats WHERE key = 'payload_bytes'")
[ "$bd" -lt "$bp" ] || fail "the dictionary saved no bytes ($bd of $bp)"
echo "PASS: bp-reconstruct command line"
exit 0
