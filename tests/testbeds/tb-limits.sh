#!/bin/bash
# tb-limits.sh - what BorderPatrol reports for the architectures it cannot
# follow (docs/accuracy.md, "What cannot be traced"): tb-limits fronts
# (tests/testbeds/tb-limits.c) between the examples' ex-client and
# ex-backend, all traced, checked with tests/integ/check-paths.py.
#
#   coop     user-level threads switched only when a read would block: the
#            control, traceable like an event loop: 100% asserted
#   queue    requests handed to worker threads through a queue in memory:
#            backend calls follow the worker's previous request unless
#            their content (the request's id) resolves them (asserted:
#            some resolved by content, none silently or resolved wrong)
#   preempt  user-level threads preempted by a timer: asserted wrong paths,
#            every one marked uncertain, and the front's stats show
#            preemptions
#   uring    all socket I/O through io_uring: the shim sees no byte of the
#            front; asserted: no front server span at all, the backends'
#            calls arrive as requests of their own, uncertain, and no
#            request of the client is silently wrong
#
# Every run must have the client's verification pass (the servers are
# correct; only the paths are not).  Needs nothing but the build.
BP_REQUESTS=${BP_REQUESTS:-2000}
. "$(dirname "$0")/../integ/lib.sh"
bp_init tb-limits
bp_require_tracing
TL=$top_builddir/tests/testbeds/tb-limits
[ -x "$TL" ] || bp_fail "$TL is not built: run make"

# tl_run MODE CONNS DEPTH: one traced run; sets DIR and PREC (precision
# in percent, from check-paths.py's summary line).
tl_run() {
	local mode=$1 conns=$2 depth=$3 rules rc label
	BP_RUN_NO=$((${BP_RUN_NO:-0} + 1))
	DIR=$T/run$BP_RUN_NO
	label="$mode c=$conns d=$depth"
	mkdir -p "$DIR"
	bp_logd_start "$DIR"
	bp_free_port BACKEND_PORT
	bp_free_port FRONT_PORT
	rules="line port $FRONT_PORT,$BACKEND_PORT; line unix $DIR/*.sock"
	bp_trace_prefix "$BP_LOGD_SOCK" "$rules" 1
	bp_start backend "$DIR/backend.pid" "${BP_PREFIX[@]}" \
		"$EX/ex-backend" --port "$BACKEND_PORT" \
		--unix "$DIR/backend.sock" --pidfile "$DIR/backend.pid" \
		--delay-us 100
	bp_start front "$DIR/front.pid" "${BP_PREFIX[@]}" "$TL" "$mode" \
		--port "$FRONT_PORT" --backend-port "$BACKEND_PORT" \
		--backend-unix "$DIR/backend.sock" --pidfile "$DIR/front.pid" \
		--workers 4 --timeout-ms 20000
	bp_client "$DIR" "$conns" "$depth"
	rc=$?
	bp_alive front
	bp_alive backend
	bp_stop front
	bp_stop backend
	bp_stop logd
	[ "$rc" = 0 ] || bp_fail "$label: the client failed (status $rc):" \
		"$(cat "$DIR/client.out")"
	bp_reconstruct "$DIR"
	"$PY" "$BP_LIB_DIR/check-paths.py" --truth "$DIR/truth" \
		--db "$DIR/paths.db" --label "$BP_TEST: $label" \
		--front-exe tb-limits --backend-exe ex-backend --report-only \
		>"$DIR/check.out" 2>&1 ||
		bp_fail "$label: check-paths.py failed: $(cat "$DIR/check.out")"
	cat "$DIR/check.out"
	PREC=$(sed -n 's/.* precision \([0-9.]*\)%.*/\1/p' "$DIR/check.out" |
		head -n 1)
	[ -n "$PREC" ] || bp_fail "$label: no precision in check-paths.py's" \
		"output"
	STATS=$(grep -h ': stats ' "$T/front.log" | sed 's/.*: stats //')
	bp_note "$label: front stats: $STATS"
	mv "$T/front.log" "$DIR/front.log"
	mv "$T/backend.log" "$DIR/backend.log"
}

# sql DB QUERY: one value.
sql() {
	"$PY" -c 'import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$@"
}

# backend_spans LABEL: the backend's server spans (CALL ID K) in all
# (B_ALL), in the request of the client's REQ ID (B_OWN), in no request
# (B_NONE); the front's server spans (F_SERVER); requests the front
# started (F_REQS: sent with no request, rule 5).
backend_spans() {
	local db=$DIR/paths.db
	B_ALL=$(sql "$db" "SELECT count(*) FROM spans WHERE kind = 'server'
		AND exe LIKE '%/ex-backend'")
	B_NONE=$(sql "$db" "SELECT count(*) FROM spans WHERE kind = 'server'
		AND exe LIKE '%/ex-backend' AND request_id IS NULL")
	B_OWN=$(sql "$db" "SELECT count(*) FROM spans s JOIN requests r
		USING (request_id) WHERE s.kind = 'server'
		AND s.exe LIKE '%/ex-backend' AND r.target LIKE 'REQ ' ||
		substr(s.target, 6, instr(substr(s.target, 6), ' ')) || '%'")
	F_SERVER=$(sql "$db" "SELECT count(*) FROM spans WHERE kind = 'server'
		AND exe LIKE '%/tb-limits'")
	F_REQS=$(sql "$db" "SELECT count(*) FROM requests
		WHERE client LIKE '%/tb-limits[%'")
	bp_note "$1: backend call spans $B_ALL: in their client request" \
		"$B_OWN, in no request $B_NONE; requests started by the front" \
		"$F_REQS; front server spans $F_SERVER"
}

# no_silent LABEL: every wrong path of the last run is marked uncertain
# (check-paths.py's certainty line says "silently wrong 0").
no_silent() {
	local n
	n=$(sed -n 's/.*certainty: .* silently wrong \([0-9]*\),.*/\1/p' \
		"$DIR/check.out" | head -n 1)
	[ -n "$n" ] || bp_fail "$1: no certainty line in check-paths.py's output"
	[ "$n" = 0 ] || bp_fail "$1: $n wrong paths not marked uncertain" \
		"(silently wrong)"
}

# The control: cooperative user-level threads are an event loop.
tl_run coop 64 4
[ "$PREC" = 100.00 ] || bp_fail "coop: $PREC% right paths, expected 100%" \
	"(cooperative user-level threads are traceable)"

# A hidden queue between a reader thread and workers.  The hand-over
# cannot be seen, but each call names its request's id (CALL ID K for
# REQ ID K): content resolves most calls ('handoff:content',
# docs/reconstruct.md); whatever it does not must stay marked.
tl_run queue 16 4
backend_spans queue
grep -q 'silently wrong 0,' "$DIR/check.out" ||
	bp_fail "queue: requests silently wrong (or resolved wrong):" \
		"$(grep 'certainty:' "$DIR/check.out")"
CR=$(sql "$DIR/paths.db" "SELECT value FROM stats WHERE key = 'content_resolved'")
[ "${CR:-0}" -gt 0 ] || bp_fail "queue: no call resolved by content"
bp_note "queue: calls resolved by content: $CR"
echo "$STATS" | grep -q 'handoffs=[1-9]' ||
	bp_fail "queue: no request went through the queue ($STATS)"
no_silent queue

# Preemptive user-level threads.
tl_run preempt 16 4
backend_spans preempt
echo "$STATS" | grep -q 'preemptions=[1-9]' ||
	bp_fail "preempt: the timer never preempted a user thread ($STATS)"
[ "$(sql "$DIR/paths.db" "SELECT $PREC < 100")" = 1 ] ||
	bp_fail "preempt: 100% right paths although user threads were" \
		"preempted between a read and the calls it causes"
[ "$B_OWN" -lt "$B_ALL" ] || bp_fail "preempt: every backend call in its" \
	"own request"
no_silent preempt

# io_uring: the front is invisible.
tl_run uring 16 4
backend_spans uring
[ "$F_SERVER" = 0 ] || bp_fail "uring: $F_SERVER front server spans:" \
	"the shim does not see io_uring, there should be none"
[ "$PREC" = 0.00 ] || bp_fail "uring: $PREC% right paths, expected 0%"
# the backend's requests came from a traced program that logged no send:
# each is uncertain, 'unlogged-send', none passes for an untraced client's
B_UNLOGGED=$(sql "$DIR/paths.db" "SELECT count(*) FROM spans
	WHERE kind = 'server' AND exe LIKE '%/ex-backend'
	AND certainty = 'uncertain' AND certainty_reason = 'unlogged-send'")
[ "$B_ALL" -gt 0 ] && [ "$B_UNLOGGED" = "$B_ALL" ] ||
	bp_fail "uring: $B_UNLOGGED of $B_ALL backend spans marked" \
		"'unlogged-send'"
bp_note "uring: $B_UNLOGGED backend spans uncertain, 'unlogged-send'"
no_silent uring
W='without logging the send|never logged'
grep -Eq "$W" "$T/reconstruct.log" ||
	bp_fail "uring: bp-reconstruct did not warn that the backends" \
		"received bytes whose send was never logged"
bp_note "uring: bp-reconstruct: $(grep -Eo '[0-9]+ warnings' \
	"$T/reconstruct.log" | tail -n 1), like: $(grep -Em 1 "$W" \
	"$T/reconstruct.log" | sed 's/.*: host /host /' | cut -c 1-160)"
echo "PASS: tb-limits"
