#!/bin/bash
# clickhouse.sh - bp-reconstruct --clickhouse against a real ClickHouse:
# Debian's clickhouse-server (18.16) started by hand in $T with its own
# configuration (docs/clickhouse.md, "Running ClickHouse by hand"), never
# as a service.  Every table written is read back and compared with the
# SQLite database column by column, and the views of docs/clickhouse.md
# with SQLite's (clickhouse-check.py):
#   - a traced run of the example servers through tb-limits preempt
#     (some requests uncertain) and the scripted
#     web shop (PostgreSQL queries, patterns, errors);
#   - the same reconstruction written twice: no row counts twice with
#     FINAL (ReplacingMergeTree keyed by run and row_id);
#   - a proxy that fails the first requests with 503 before ClickHouse
#     (retried, then all arrive) and one that lets ClickHouse store them
#     and then answers 503 (sent again: still no duplicates);
#   - a server that is down: bounded retries, a clear error naming the
#     URL, exit 4, the SQLite database complete; the time bound;
#   - a server answering an error (a read-only user): ClickHouse's
#     message, exit 4 at once, no retries;
#   - USER:PASSWORD@ in the URL (Basic), BP_CLICKHOUSE_USER and
#     BP_CLICKHOUSE_PASSWORD, the password never printed;
#   - hosts reconstructed apart (--host-local, a run each) and joined by
#     the join_* views of docs/clickhouse.md: the same spans, parents,
#     requests, clocks and certainty as bp-reconstruct --join
#     (clickhouse-join-check.py), a key of two servers ambiguous in both,
#     a key two connections used one after the other linked in both,
#     an uncertain client span whose mark the other hosts' spans inherit,
#     a client span in no request (not an end of its key), sets no link
#     holds together (a run on its own clock) and a set of one run;
#   - bp-reconstruct --follow --clickhouse: killed and started again,
#     every request sent once, the tables of the whole run at the end;
#   - the option errors.
# Running 18.16 by hand: the root element is <yandex>; every path (data,
# tmp, user_files, format_schemas, logs) must point into the temporary
# directory or it writes under /var/lib/clickhouse; no
# interserver_http_port, so it opens no replication port; a small
# mark_cache_size (the default is 5 GB); /ping answers "Ok." within about
# a second; SIGTERM stops it in a few seconds.
. "$(dirname "$0")/../integ/lib.sh"
. "$(dirname "$0")/lib.sh"
RP_TEST=clickhouse
: "${BP_REQUESTS:=100}"
bp_init report-clickhouse
bp_require_tracing
for p in "$RECON" "$DEMOLOG" "$GENLOG"; do
	[ -x "$p" ] || bp_fail "$p is not built (run make check)"
done
CHECK=$RP_DIR/clickhouse-check.py
# shellcheck source=../lib/clickhouse.sh
. "$(dirname "$0")/../lib/clickhouse.sh"
ch_start() { bp_ch_start; }

# q SQL: ClickHouse's answer
q() {
	curl -sS -m 30 "$CH" --data-binary "$1" || rp_fail "ClickHouse query: $1"
}

# recon LABEL ARGS...: bp-reconstruct, bounded; RC, ERR, SECS (lib.sh)
recon() {
	rp_recon "$@"
}

# run_of ERRFILE: the run id the summary line names
run_of() {
	sed -n 's/^bp-reconstruct: ClickHouse: .* run \([^ ]*\) (.*/\1/p' "$1"
}

# check DB DATABASE RUN: every table and every view against SQLite
check() {
	"$PY" "$CHECK" tables "$1" "$CH" "$2" "$3" ||
		rp_fail "the tables in ClickHouse ($2, run $3) are not those of $1"
	"$PY" "$CHECK" views "$1" "$CH" "$2" "$3" "$top_srcdir/docs/clickhouse.md" ||
		rp_fail "the views of docs/clickhouse.md do not give the answers of $1's"
}

# sqlite_complete DB: a finished paths database (integrity, views, rows)
sqlite_complete() {
	[ "$(sqlite3 "$1" 'PRAGMA integrity_check')" = ok ] || rp_fail "$1 is damaged"
	[ "$(sqlite3 "$1" 'SELECT COUNT(*) FROM requests')" = "$2" ] ||
		rp_fail "$1: not $2 requests"
	sqlite3 "$1" 'SELECT COUNT(*) FROM uncertain_requests' >/dev/null ||
		rp_fail "$1 has no views"
}

ch_start

# 1. a traced run: ex-client -> tb-limits preempt (user-level threads
# preempted by a timer, tests/testbeds/tb-limits.sh) -> ex-backend, all
# traced through bp-logd; the preempted threads' paths are ambiguous, so
# some requests are uncertain
TL=$top_builddir/tests/testbeds/tb-limits
[ -x "$TL" ] || bp_fail "$TL is not built: run make"
dir=$T/run1
mkdir -p "$dir"
bp_logd_start "$dir"
bp_free_port BACKEND_PORT
bp_free_port FRONT_PORT
bp_trace_prefix "$BP_LOGD_SOCK" "line port $FRONT_PORT,$BACKEND_PORT; line unix $dir/*.sock" 1
bp_start backend "$dir/backend.pid" "${BP_PREFIX[@]}" "$EX/ex-backend" \
	--port "$BACKEND_PORT" --unix "$dir/backend.sock" \
	--pidfile "$dir/backend.pid" --delay-us 100
bp_start front "$dir/front.pid" "${BP_PREFIX[@]}" "$TL" preempt \
	--port "$FRONT_PORT" --backend-port "$BACKEND_PORT" \
	--backend-unix "$dir/backend.sock" --pidfile "$dir/front.pid" \
	--workers 4 --timeout-ms 20000
bp_client "$dir" 16 4 || bp_fail "the client failed: $(cat "$dir/client.out")"
bp_stop front
bp_stop backend
bp_stop logd
logs=$dir/logs
recon traced "$logs" -o "$T/traced.db" --clickhouse "$CH?database=bp"
[ "$RC" = 0 ] || rp_fail "traced: exit $RC: $(cat "$ERR")"
grep -q "^bp-reconstruct: ClickHouse: [0-9]* rows of [0-9]* tables in [0-9]* inserts, 0 retries -> $CH database bp run [0-9a-f]\{16\} (" "$ERR" ||
	rp_fail "traced: summary line: $(cat "$ERR")"
RUN1=$(run_of "$ERR")
check "$T/traced.db" bp "$RUN1"
nreq=$(sqlite3 "$T/traced.db" 'SELECT COUNT(*) FROM requests')
nunc=$(sqlite3 "$T/traced.db" 'SELECT COUNT(*) FROM uncertain_requests')
[ "$nunc" -gt 0 ] || bp_fail "no uncertain request in the preempt run: nothing to compare in uncertain_requests"
bp_note "traced run: $nreq requests ($nunc uncertain) in SQLite and ClickHouse alike, $SECS s"

# 2. the web shop, into the same tables as another run; small batches
"$DEMOLOG" -2 -n 60 "$T/shop" >/dev/null || rp_fail "demolog"
recon shop "$T/shop" -o "$T/shop.db" --clickhouse "$CH?database=bp" \
	--clickhouse-batch 50 --clickhouse-compression none
[ "$RC" = 0 ] || rp_fail "shop: exit $RC: $(cat "$ERR")"
RUN2=$(run_of "$ERR")
[ -n "$RUN2" ] && [ "$RUN2" != "$RUN1" ] || rp_fail "the shop got the run id of the traced run"
check "$T/shop.db" bp "$RUN2"
check "$T/traced.db" bp "$RUN1"
[ "$(q "SELECT count() FROM bp.runs FINAL")" = 2 ] || rp_fail "not 2 runs in bp.runs"

# 3. idempotence: the same reconstruction again gives the same run id and
# no duplicate in FINAL; the raw count shows the copies were sent
recon shop2 "$T/shop" -o "$T/shop2.db" --clickhouse "$CH?database=bp"
[ "$RC" = 0 ] || rp_fail "shop again: exit $RC: $(cat "$ERR")"
[ "$(run_of "$ERR")" = "$RUN2" ] || rp_fail "the same logs got another run id: $(cat "$ERR")"
check "$T/shop2.db" bp "$RUN2"
spans=$(sqlite3 "$T/shop.db" 'SELECT COUNT(*) FROM spans')
raw=$(q "SELECT count() FROM bp.spans WHERE run = '$RUN2'")
fin=$(q "SELECT count() FROM bp.spans FINAL WHERE run = '$RUN2'")
[ "$fin" = "$spans" ] || rp_fail "after two runs $fin spans with FINAL, $spans in SQLite"
bp_note "written twice: $raw span rows stored, $fin with FINAL ($spans in SQLite)"
q "OPTIMIZE TABLE bp.spans FINAL" >/dev/null
[ "$(q "SELECT count() FROM bp.spans WHERE run = '$RUN2'")" = "$spans" ] ||
	rp_fail "OPTIMIZE FINAL did not merge the copies"

# 4. 503 for the first three requests, before ClickHouse: retried
flaky() {
	local d=$T/$1
	mkdir -p "$d"
	"$PY" "$RP_DIR/ch-flaky.py" "$d" "http://127.0.0.1:$CH_HTTP" "$2" "$3" \
		>"$d/log" 2>&1 &
	FL_PID=$!
	bp_track "$FL_PID"
	bp_wait_for "the proxy in $d" 100 test -s "$d/port"
	FL=http://127.0.0.1:$(cat "$d/port")/
}
"$GENLOG" -3 -n 200 -w 4 "$T/three" >/dev/null || rp_fail "genlog"
flaky busy before 3
recon busy "$T/three" -o "$T/three.db" --clickhouse "$FL?database=bp3" --clickhouse-batch 500
[ "$RC" = 0 ] || rp_fail "503 three times: exit $RC: $(cat "$ERR")"
grep -q "^bp-reconstruct: ClickHouse: [0-9]* rows of [0-9]* tables in [0-9]* inserts, 3 retries -> $FL database bp3 run " "$ERR" ||
	rp_fail "503 three times: summary: $(cat "$ERR")"
[ "$(grep -c '^[0-9]* 503 - ' "$T/busy/requests.log")" = 3 ] || rp_fail "not 3 refusals: $(cat "$T/busy/requests.log")"
RUN3=$(run_of "$ERR")
check "$T/three.db" bp3 "$RUN3"
bp_note "503 three times before ClickHouse: 3 retries in $SECS s, every row once"

# 5. ClickHouse stores the first two INSERTs but the answers are lost
flaky lost after 2
q "DROP DATABASE IF EXISTS bp3" >/dev/null
recon lost "$T/three" -o "$T/three2.db" --clickhouse "$FL?database=bp3" --clickhouse-batch 500
[ "$RC" = 0 ] || rp_fail "answers lost: exit $RC: $(cat "$ERR")"
grep -q " 2 retries -> " "$ERR" || rp_fail "answers lost: not 2 retries: $(cat "$ERR")"
[ "$(grep -c '^[0-9]* 503 200 INSERT' "$T/lost/requests.log")" = 2 ] ||
	rp_fail "not 2 INSERTs stored and then refused: $(cat "$T/lost/requests.log")"
check "$T/three2.db" bp3 "$RUN3"
bp_note "answers lost after ClickHouse stored 2 INSERTs: both sent again, every row once with FINAL"

# 6. the server is down: bounded retries, exit 4, SQLite complete
bp_free_port DEAD
recon down "$T/shop" -o "$T/down.db" --clickhouse "http://127.0.0.1:$DEAD/?database=bp" \
	--clickhouse-retries 2 --otlp "$T/down.json"
[ "$RC" = 4 ] || rp_fail "server down: exit $RC (want 4): $(cat "$ERR")"
grep -q "^bp-reconstruct: error: ClickHouse: CREATE DATABASE: http://127.0.0.1:$DEAD/ after 2 retries: cannot connect to 127.0.0.1 port $DEAD: Connection refused" "$ERR" ||
	rp_fail "server down: message: $(cat "$ERR")"
grep -q "^bp-reconstruct: ClickHouse: stopped after 0 rows of 0 tables in 0 inserts, 2 retries" "$ERR" ||
	rp_fail "server down: summary: $(cat "$ERR")"
sqlite_complete "$T/down.db" 60
[ -s "$T/down.json" ] || rp_fail "server down: the --otlp file was not written"
bp_note "server down: exit 4 after 2 retries in $SECS s, the database and the OTLP file written"

# the time bound: a server answering 503 for ever
flaky always always 0
recon bound "$T/shop" -o "$T/bound.db" --clickhouse "$FL?database=bp" \
	--clickhouse-timeout 2 --clickhouse-retries 100
[ "$RC" = 4 ] || rp_fail "503 for ever: exit $RC: $(cat "$ERR")"
grep -q "ran out while retrying (HTTP 503 Service Unavailable: busy (test)" "$ERR" ||
	rp_fail "503 for ever: message: $(cat "$ERR")"
(( $(echo "$SECS < 10" | bc) )) || rp_fail "the 2 s time bound took $SECS s"
sqlite_complete "$T/bound.db" 60

# 7. an error answer (read-only user): ClickHouse's message, no retry
recon ro "$T/shop" -o "$T/ro.db" --clickhouse "$CH?database=bpro&user=ro"
[ "$RC" = 4 ] || rp_fail "read-only: exit $RC: $(cat "$ERR")"
grep -q "^bp-reconstruct: error: ClickHouse $CH?user=ro refused CREATE DATABASE: HTTP [45][0-9][0-9] .*Code: 164.*readonly" "$ERR" ||
	rp_fail "read-only: message: $(cat "$ERR")"
grep -q " 0 retries " "$ERR" || rp_fail "read-only: an error answer was retried: $(cat "$ERR")"
sqlite_complete "$T/ro.db" 60

# 8. USER:PASSWORD@ (Basic), never printed; a wrong password is refused
recon pw "$T/shop" -o "$T/pw.db" --clickhouse "http://bpw:s3cret@127.0.0.1:$CH_HTTP/?database=bppw"
[ "$RC" = 0 ] || rp_fail "user:password: exit $RC: $(cat "$ERR")"
grep -q "s3cret" "$ERR" && rp_fail "the password was printed: $(cat "$ERR")"
grep -q -- "-> http://bpw:\*\*\*@127.0.0.1:$CH_HTTP/ database bppw run $RUN2 " "$ERR" ||
	rp_fail "user:password: summary: $(cat "$ERR")"
[ "$(q "SELECT count() FROM bppw.requests FINAL")" = 60 ] || rp_fail "user:password: rows missing"
BP_CLICKHOUSE_USER=bpw BP_CLICKHOUSE_PASSWORD=s3cret \
	recon envpw "$T/shop" -o "$T/pw3.db" --clickhouse "$CH?database=bppw"
[ "$RC" = 0 ] || rp_fail "BP_CLICKHOUSE_USER and _PASSWORD: exit $RC: $(cat "$ERR")"
grep -q "s3cret" "$ERR" && rp_fail "the password was printed: $(cat "$ERR")"
BP_CLICKHOUSE_USER=bpw BP_CLICKHOUSE_PASSWORD=wrong \
	recon envbad "$T/shop" -o "$T/pw4.db" --clickhouse "$CH?database=bppw"
[ "$RC" = 4 ] || rp_fail "a wrong BP_CLICKHOUSE_PASSWORD: exit $RC: $(cat "$ERR")"
grep -q "Code: 193" "$ERR" || rp_fail "a wrong BP_CLICKHOUSE_PASSWORD: message: $(cat "$ERR")"
recon badpw "$T/shop" -o "$T/pw2.db" --clickhouse "http://bpw:wrong@127.0.0.1:$CH_HTTP/?database=bppw&password=wrong2"
[ "$RC" = 4 ] || rp_fail "wrong password: exit $RC: $(cat "$ERR")"
grep -q "wrong" "$ERR" && rp_fail "the wrong password was printed: $(cat "$ERR")"
grep -q "bpw:\*\*\*@.*password=\*\*\*.*refused" "$ERR" || rp_fail "wrong password: message: $(cat "$ERR")"

# 9. throughput: 2,000 requests of three hosts
"$GENLOG" -3 -n 2000 -w 8 "$T/big" >/dev/null || rp_fail "genlog big"
recon big "$T/big" -o "$T/big.db" --clickhouse "$CH?database=bpbig" -q
[ "$RC" = 0 ] || rp_fail "big: exit $RC: $(cat "$ERR")"
recon bigv "$T/big" -o "$T/big2.db" --clickhouse "$CH?database=bpbig"
line=$(grep "^bp-reconstruct: ClickHouse: " "$ERR")
rows=$(echo "$line" | sed 's/.*ClickHouse: \([0-9]*\) rows.*/\1/')
secs=$(echo "$line" | sed 's/.*(\([0-9.]*\) s, .*/\1/')
"$PY" "$CHECK" tables "$T/big2.db" "$CH" bpbig "$(run_of "$ERR")" >/dev/null ||
	rp_fail "big: tables differ"
bp_note "throughput: $rows rows in $secs s ($(echo "$rows / ($secs + 0.001)" | bc) rows/s)"

# 10. hosts reconstructed apart, joined in ClickHouse by the join_* views
# of docs/clickhouse.md: each host of genlog -3 a run of its own
# (--host-local), the views against bp-reconstruct --join of the same
# databases (spans, parents, requests, clocks, certainty); then a key two
# server spans claim: ambiguous in both, never linked; and a key two
# connections used one after the other: paired by time in both.
JCHECK=$RP_DIR/clickhouse-join-check.py
"$GENLOG" -3 -n 40 "$T/multi" >/dev/null || rp_fail "genlog -3"
for h in front app db; do
	recon "hl-$h" --host-local "$T/multi/$h" -o "$T/hl-$h.db" \
		--clickhouse "$CH?database=bpj" --clickhouse-run "hl-$h"
	[ "$RC" = 0 ] || rp_fail "--host-local $h: exit $RC: $(cat "$ERR")"
done
recon join --join "$T/hl-front.db" "$T/hl-app.db" "$T/hl-db.db" -o "$T/joined.db"
[ "$RC" = 0 ] || rp_fail "--join: exit $RC: $(cat "$ERR")"
"$PY" "$JCHECK" create "$CH" bpj "$top_srcdir/docs/clickhouse.md" ||
	rp_fail "the join_* views of docs/clickhouse.md"
q "INSERT INTO bpj.join_runs VALUES ('three', 1, 'hl-front'), ('three', 2, 'hl-app'), ('three', 3, 'hl-db')" >/dev/null
t0=$(date +%s.%N)
"$PY" "$JCHECK" "$T/joined.db" "$CH" bpj three ||
	rp_fail "the join in ClickHouse differs from bp-reconstruct --join"
bp_note "join_spans against --join: $(echo "$(date +%s.%N) - $t0" | bc) s"
[ "$(q "SELECT status, count() FROM bpj.join_pairs WHERE joined = 'three' GROUP BY status ORDER BY status" | tr '\t\n' ' ')" = "linked 80 unmatched 40 " ] ||
	rp_fail "join_pairs: $(q "SELECT status, count() FROM bpj.join_pairs GROUP BY status")"
[ "$(q "SELECT max(hops) FROM bpj.join_request_roots WHERE joined = 'three'")" = 2 ] ||
	rp_fail "join_request_roots: not two hops from db to front"
[ "$(q "SELECT run, placed, intDiv(offset_ns, 1000000) FROM bpj.join_clocks WHERE joined = 'three' ORDER BY pos" | tr '\t\n' '  ')" = "hl-front 1 0 hl-app 1 -250 hl-db 1 1500 " ] ||
	rp_fail "join_clocks: $(q "SELECT * FROM bpj.join_clocks")"
# app's second server span given the first client's key (in SQLite and
# as the newer row of run hl-app2 in ClickHouse)
cp "$T/hl-app.db" "$T/hl-app2.db" || rp_fail "cp"
sid=$(sqlite3 "$T/hl-app.db" "SELECT l.span_id FROM span_links l JOIN spans s USING (span_id) WHERE s.kind = 'server' ORDER BY l.span_id LIMIT 1 OFFSET 1")
key=$(sqlite3 "$T/hl-app.db" "SELECT link FROM span_links ORDER BY span_id LIMIT 1")
[ -n "$sid" ] && [ -n "$key" ] || rp_fail "no server span in hl-app.db"
sqlite3 "$T/hl-app2.db" "UPDATE span_links SET link = '$key' WHERE span_id = $sid" || rp_fail "sqlite3 update"
recon hl-app2 --host-local "$T/multi/app" -o "$T/hl-app2-ch.db" \
	--clickhouse "$CH?database=bpj" --clickhouse-run hl-app2
[ "$RC" = 0 ] || rp_fail "--host-local app again: exit $RC: $(cat "$ERR")"
q "INSERT INTO bpj.span_links (run, row_id, span_id, link) VALUES ('hl-app2', $sid, $sid, '$key')" >/dev/null
q "INSERT INTO bpj.join_runs VALUES ('amb', 1, 'hl-front'), ('amb', 2, 'hl-app2'), ('amb', 3, 'hl-db')" >/dev/null
recon join2 --join "$T/hl-front.db" "$T/hl-app2.db" "$T/hl-db.db" -o "$T/joined2.db"
[ "$RC" = 0 ] || rp_fail "--join, an ambiguous key: exit $RC: $(cat "$ERR")"
[ "$(sqlite3 "$T/joined2.db" "SELECT value FROM stats WHERE key = 'join_ambiguous'")" = 3 ] ||
	rp_fail "--join: not 3 ambiguous spans"
[ "$(q "SELECT count() FROM bpj.join_pairs WHERE joined = 'amb' AND status = 'ambiguous' AND link = '$key'")" = 1 ] ||
	rp_fail "join_pairs: the key of two servers is not ambiguous"
[ "$(q "SELECT countIf(linked), countIf(certainty_reason = 'join:ambiguous') FROM bpj.join_spans WHERE joined = 'amb'" | tr '\t' ' ')" = "78 7" ] ||
	rp_fail "join_spans, an ambiguous key: $(q "SELECT countIf(linked), countIf(certainty_reason = 'join:ambiguous') FROM bpj.join_spans WHERE joined = 'amb'")"
"$PY" "$JCHECK" "$T/joined2.db" "$CH" bpj amb ||
	rp_fail "an ambiguous key: the join in ClickHouse differs from bp-reconstruct --join"
# the first set is untouched by the second
"$PY" "$JCHECK" "$T/joined.db" "$CH" bpj three >/dev/null ||
	rp_fail "the set 'three' changed when 'amb' was added"
# a key two connections used one after the other (the second client
# starts after the first ended): paired in start order by both
k1=$(sqlite3 "$T/hl-front.db" "SELECT l.link FROM span_links l JOIN spans s USING (span_id) WHERE s.kind = 'client' ORDER BY s.start_ns LIMIT 1")
k2=$(sqlite3 "$T/hl-front.db" "SELECT l.link FROM span_links l JOIN spans s USING (span_id) WHERE s.kind = 'client' AND s.start_ns > (SELECT s2.end_ns FROM span_links l2 JOIN spans s2 USING (span_id) WHERE l2.link = '$k1' AND s2.kind = 'client') ORDER BY s.start_ns LIMIT 1")
[ -n "$k1" ] && [ -n "$k2" ] || rp_fail "no two client spans one after the other in hl-front.db"
for h in front app; do
	cp "$T/hl-$h.db" "$T/hl-${h}3.db" || rp_fail "cp"
	sqlite3 "$T/hl-${h}3.db" "UPDATE span_links SET link = '$k1' WHERE link = '$k2'" || rp_fail "sqlite3 update"
	recon "hl-${h}3" --host-local "$T/multi/$h" -o "$T/hl-${h}3-ch.db" \
		--clickhouse "$CH?database=bpj" --clickhouse-run "hl-${h}3"
	[ "$RC" = 0 ] || rp_fail "--host-local $h again: exit $RC: $(cat "$ERR")"
	for sid in $(sqlite3 "$T/hl-${h}3.db" "SELECT span_id FROM span_links WHERE link = '$k1'"); do
		q "INSERT INTO bpj.span_links (run, row_id, span_id, link) VALUES ('hl-${h}3', $sid, $sid, '$k1')" >/dev/null
	done
done
q "INSERT INTO bpj.join_runs VALUES ('reuse', 1, 'hl-front3'), ('reuse', 2, 'hl-app3'), ('reuse', 3, 'hl-db')" >/dev/null
recon join3 --join "$T/hl-front3.db" "$T/hl-app3.db" "$T/hl-db.db" -o "$T/joined3.db"
[ "$RC" = 0 ] || rp_fail "--join, a key used twice: exit $RC: $(cat "$ERR")"
grep -q ' 80 links across hosts, 0 spans ambiguous' "$ERR" || rp_fail "--join, a key used twice: $(cat "$ERR")"
[ "$(q "SELECT count() FROM bpj.join_pairs WHERE joined = 'reuse' AND status = 'linked' AND link = '$k1' AND clients = 2 AND servers = 2")" = 2 ] ||
	rp_fail "join_pairs: the key used twice is not two linked pairs: $(q "SELECT * FROM bpj.join_pairs WHERE joined = 'reuse' AND link = '$k1'")"
"$PY" "$JCHECK" "$T/joined3.db" "$CH" bpj reuse ||
	rp_fail "a key used twice: the join in ClickHouse differs from bp-reconstruct --join"
# a front client span uncertain (as a parked request's call is): the
# spans below it on app and db inherit the mark across hosts, in both
sid=$(sqlite3 "$T/hl-front.db" "SELECT l.span_id FROM span_links l JOIN spans s USING (span_id) WHERE s.kind = 'client' ORDER BY s.start_ns LIMIT 1 OFFSET 3")
[ -n "$sid" ] || rp_fail "no fourth client span in hl-front.db"
cp "$T/hl-front.db" "$T/hl-front4.db" || rp_fail "cp"
sqlite3 "$T/hl-front4.db" "UPDATE spans SET certainty = 'uncertain', certainty_reason = 'ambiguous:parked' WHERE span_id = $sid" ||
	rp_fail "sqlite3 update"
recon hl-front4 --host-local "$T/multi/front" -o "$T/hl-front4-ch.db" \
	--clickhouse "$CH?database=bpj" --clickhouse-run hl-front4
[ "$RC" = 0 ] || rp_fail "--host-local front again: exit $RC: $(cat "$ERR")"
cols=$(q "SELECT name FROM system.columns WHERE database = 'bpj' AND table = 'spans'" | tr '\n' ',' | sed 's/,$//')
sel=$(echo "$cols" | sed "s/,certainty,certainty_reason/,'uncertain','ambiguous:parked'/")
[ "$sel" != "$cols" ] || rp_fail "spans columns: $cols"
q "INSERT INTO bpj.spans ($cols) SELECT $sel FROM bpj.spans FINAL WHERE run = 'hl-front4' AND span_id = $sid" >/dev/null
q "INSERT INTO bpj.join_runs VALUES ('unc', 1, 'hl-front4'), ('unc', 2, 'hl-app'), ('unc', 3, 'hl-db')" >/dev/null
recon join4 --join "$T/hl-front4.db" "$T/hl-app.db" "$T/hl-db.db" -o "$T/joined4.db"
[ "$RC" = 0 ] || rp_fail "--join, an uncertain span: exit $RC: $(cat "$ERR")"
[ "$(sqlite3 "$T/joined4.db" "SELECT COUNT(*) FROM spans WHERE certainty_reason = 'ambiguous:parked'")" = 4 ] ||
	rp_fail "--join: the mark not inherited by 3 spans on app and db"
[ "$(q "SELECT groupArray(host) FROM (SELECT host FROM bpj.join_spans WHERE joined = 'unc' AND certainty = 'uncertain' ORDER BY start_ns)")" = "['front','app','app','db']" ] ||
	rp_fail "join_spans: the mark not inherited across hosts: $(q "SELECT run, span_id, host, certainty_reason FROM bpj.join_spans WHERE joined = 'unc' AND certainty = 'uncertain'")"
"$PY" "$JCHECK" "$T/joined4.db" "$CH" bpj unc ||
	rp_fail "an uncertain span: the join in ClickHouse differs from bp-reconstruct --join"
# a front client span in no request (as an unattributed call is): not an
# end of its key, so app's server span stays a request of its own
sid=$(sqlite3 "$T/hl-front.db" "SELECT l.span_id FROM span_links l JOIN spans s USING (span_id) WHERE s.kind = 'client' ORDER BY s.start_ns LIMIT 1 OFFSET 5")
[ -n "$sid" ] || rp_fail "no sixth client span in hl-front.db"
cp "$T/hl-front.db" "$T/hl-front5.db" || rp_fail "cp"
sqlite3 "$T/hl-front5.db" "UPDATE spans SET request_id = NULL WHERE span_id = $sid" || rp_fail "sqlite3 update"
recon hl-front5 --host-local "$T/multi/front" -o "$T/hl-front5-ch.db" \
	--clickhouse "$CH?database=bpj" --clickhouse-run hl-front5
[ "$RC" = 0 ] || rp_fail "--host-local front again: exit $RC: $(cat "$ERR")"
sel=$(echo "$cols" | sed "s/,request_id,/,NULL,/")
[ "$sel" != "$cols" ] || rp_fail "spans columns: $cols"
q "INSERT INTO bpj.spans ($cols) SELECT $sel FROM bpj.spans FINAL WHERE run = 'hl-front5' AND span_id = $sid" >/dev/null
q "INSERT INTO bpj.join_runs VALUES ('noreq', 1, 'hl-front5'), ('noreq', 2, 'hl-app'), ('noreq', 3, 'hl-db')" >/dev/null
recon join5 --join "$T/hl-front5.db" "$T/hl-app.db" "$T/hl-db.db" -o "$T/joined5.db"
[ "$RC" = 0 ] || rp_fail "--join, a span in no request: exit $RC: $(cat "$ERR")"
grep -q ': 41 requests .* 79 links across hosts' "$ERR" || rp_fail "--join, a span in no request: $(cat "$ERR")"
[ "$(q "SELECT count() FROM bpj.join_requests WHERE joined = 'noreq'")" = 41 ] ||
	rp_fail "join_requests, a span in no request: not 41 requests"
"$PY" "$JCHECK" "$T/joined5.db" "$CH" bpj noreq ||
	rp_fail "a span in no request: the join in ClickHouse differs from bp-reconstruct --join"
# sets no link holds together: front and db (db keeps its own clock),
# app alone
q "INSERT INTO bpj.join_runs VALUES ('apart', 1, 'hl-front'), ('apart', 2, 'hl-db'), ('solo', 1, 'hl-app')" >/dev/null
[ "$(q "SELECT run, placed FROM bpj.join_clocks WHERE joined = 'apart' ORDER BY pos" | tr '\t\n' '  ')" = "hl-front 1 hl-db 0 " ] ||
	rp_fail "join_clocks, no link: $(q "SELECT * FROM bpj.join_clocks WHERE joined = 'apart'")"
recon join6 --join "$T/hl-front.db" "$T/hl-db.db" -o "$T/joined6.db"
[ "$RC" = 0 ] || rp_fail "--join of front and db: exit $RC: $(cat "$ERR")"
"$PY" "$JCHECK" "$T/joined6.db" "$CH" bpj apart ||
	rp_fail "front and db: the join in ClickHouse differs from bp-reconstruct --join"
recon join7 --join "$T/hl-app.db" -o "$T/joined7.db"
[ "$RC" = 0 ] || rp_fail "--join of app alone: exit $RC: $(cat "$ERR")"
"$PY" "$JCHECK" "$T/joined7.db" "$CH" bpj solo ||
	rp_fail "app alone: the join in ClickHouse differs from bp-reconstruct --join"

# mutations_wait LABEL: until ClickHouse has applied every mutation of
# database bpf (they run in the background; 30 s)
mutations_wait() { bp_ch_mutations_wait "$1" bpf; }

# 12. --follow: three hosts' logs while it runs, killed (SIGKILL) after
# the requests went and started again, then SIGINT: every request once
# (the raw count, before any merge but once the mutations are applied,
# equals SQLite's: nothing was sent twice), then at the last pass the tables of the whole run and the rows
# of no request; every table and view as in live.db
"$GENLOG" -3 -n 200 "$T/f3" >/dev/null || rp_fail "genlog"
mkdir -p "$T/live12"
follow12() {
	"$RECON" --follow --follow-interval=0.2 --follow-grace=0.1 "$T/live12" \
		-o "$T/live12.db" --clickhouse "$CH?database=bpf" \
		--clickhouse-run live12 2>>"$T/live12.err" &
	FPID=$!
	bp_track "$FPID"
}
# until12 SQL WANT: until SQL on live12.db answers WANT (30 s)
until12() {
	rp_until_db "$T/live12.db" "$FPID" "$T/live12.err" "$1" "$2"
}
follow12
cp -r "$T/f3/front" "$T/f3/app" "$T/f3/db" "$T/live12/"
until12 "SELECT count(*) FROM follow_requests WHERE ch_pushed = 1" 200
[ "$(q "SELECT count() FROM bpf.requests WHERE run = 'live12'")" = 200 ] ||
	rp_fail "--follow: not 200 requests in ClickHouse before the last pass"
bp_kill KILL "$FPID"
wait "$FPID" 2>/dev/null
follow12
# a pass of the new process (the stats of the killed one are still there)
until12 "SELECT value FROM stats WHERE key = 'follow_pid'" "$FPID"
rp_stop_follow "$FPID"
[ "$FRC" = 0 ] || rp_fail "--follow: exit $FRC: $(tail -n 5 "$T/live12.err")"
grep -q "^bp-reconstruct: ClickHouse: .* run live12; requests: 200 sent, 0 sent again when revised, 0 withdrawn after they were sent (0 rows deleted there in 0 mutations), 0 not sent$" "$T/live12.err" ||
	rp_fail "--follow: the ClickHouse summary: $(grep ClickHouse "$T/live12.err")"
# (the last pass sends requests and span_patterns again whole, with the
# patterns of the whole run, after a mutation deletes the run's rows)
mutations_wait live12
for t in requests spans; do
	[ "$(q "SELECT count() FROM bpf.$t WHERE run = 'live12'")" = \
	  "$(sqlite3 "$T/live12.db" "SELECT count(*) FROM $t")" ] ||
		rp_fail "--follow: bpf.$t holds rows twice before any merge"
done
check "$T/live12.db" bpf live12
bp_note "--follow: 200 requests into ClickHouse once each across a SIGKILL, every table and view as in live.db"

# 13. --follow, requests sent to ClickHouse and then revised (the
# database host's logs come after the front's and the application's:
# each request gains its queries) or withdrawn (the application's logs
# come first: each request is the application's until the front's logs
# show it is the front's): the rows of the version sent are deleted
# there (a mutation) before the new version goes; once ClickHouse has
# applied the mutations, every table holds each row once (the raw
# count() equals SQLite's) and every table and view equals live.db's
follow13() {   # follow13 NAME HOSTS-FIRST HOSTS-THEN SQL-ANSWERING-200
	local name=$1 first=$2 then=$3 key=$4 h
	mkdir -p "$T/$name"
	"$RECON" --follow --follow-interval=0.2 --follow-grace=0.1 "$T/$name" \
		-o "$T/$name.db" --clickhouse "$CH?database=bpf" \
		--clickhouse-run "$name" 2>>"$T/$name.err" &
	FPID=$!
	bp_track "$FPID"
	for h in $first; do cp -r "$T/f3/$h" "$T/$name/"; done
	rp_until_db "$T/$name.db" "$FPID" "$T/$name.err" \
		"SELECT count(*) FROM follow_requests WHERE ch_pushed = 1" 200
	[ "$(q "SELECT count() FROM bpf.requests WHERE run = '$name'")" = 200 ] ||
		rp_fail "$name: not 200 requests in ClickHouse before the other hosts came"
	for h in $then; do cp -r "$T/f3/$h" "$T/$name/"; done
	rp_until_db "$T/$name.db" "$FPID" "$T/$name.err" "$key" 200
	rp_until_db "$T/$name.db" "$FPID" "$T/$name.err" \
		"SELECT count(*) FROM follow_requests WHERE ch_pushed <> 0" 200
	rp_stop_follow "$FPID"
	[ "$FRC" = 0 ] || rp_fail "$name: --follow: exit $FRC: $(tail -n 5 "$T/$name.err")"
	mutations_wait "$name"
	for t in requests spans messages attrs; do
		[ "$(q "SELECT count() FROM bpf.$t WHERE run = '$name'")" = \
		  "$(sqlite3 "$T/$name.db" "SELECT count(*) FROM $t")" ] ||
			rp_fail "$name: bpf.$t has $(q "SELECT count() FROM bpf.$t WHERE run = '$name'") rows, live.db $(sqlite3 "$T/$name.db" "SELECT count(*) FROM $t") (the version first sent left behind?)"
	done
	check "$T/$name.db" bpf "$name"
}
follow13 live13r "front app" db "SELECT count(*) FROM follow_requests WHERE revised > 0"
grep -q "^bp-reconstruct: ClickHouse: .* run live13r; requests: 200 sent, 200 sent again when revised, 0 withdrawn after they were sent ([1-9][0-9]* rows deleted there in [1-9][0-9]* mutations), 0 not sent$" "$T/live13r.err" ||
	rp_fail "revised: the ClickHouse summary: $(grep ClickHouse "$T/live13r.err")"
follow13 live13w app "front db" "SELECT value FROM follow_state WHERE key = 'withdrawn'"
grep -q "^bp-reconstruct: ClickHouse: .* run live13w; requests: 200 sent, [0-9]* sent again when revised, 200 withdrawn after they were sent ([1-9][0-9]* rows deleted there in [1-9][0-9]* mutations), 0 not sent$" "$T/live13w.err" ||
	rp_fail "withdrawn: the ClickHouse summary: $(grep ClickHouse "$T/live13w.err")"
bp_note "--follow: 200 requests revised and 200 withdrawn after ClickHouse had them: $(sed -n 's/.*(\([0-9]* rows deleted there in [0-9]* mutations\)).*/\1/p' "$T/live13r.err") and $(sed -n 's/.*(\([0-9]* rows deleted there in [0-9]* mutations\)).*/\1/p' "$T/live13w.err"); every table and view as in live.db"

# 11. the option errors: usage (exit 1), nothing written
usage() {
	rp_usage "$T/shop" "$@"
}
usage "not an http:// or https:// URL (e.g. http://localhost:8123)" --clickhouse localhost:8123
usage "the database name 'a-b' is not" --clickhouse "$CH?database=a-b"
usage "go with --clickhouse URL" --clickhouse-run x
usage "--clickhouse-run wants 1-64 letters" --clickhouse "$CH" --clickhouse-run 'a b'
usage "--clickhouse-header wants 'Name: value'" --clickhouse "$CH" --clickhouse-header x
usage "--clickhouse-batch wants a number of rows" --clickhouse "$CH" --clickhouse-batch 0
"$RECON" --help | grep -q -- '--clickhouse=URL' || rp_fail "--help does not tell --clickhouse"
echo "PASS: clickhouse"
exit 0
