#!/bin/bash
# tb-haproxy.sh - haproxy 2.6 traced, as a multi-threaded epoll proxy with
# connection reuse and a per-server queue, must behave as it does untraced.
#
# haproxy (nbthread 2: one epoll set per thread; idle server connections
# are taken over from one thread by the other under http-reuse always, so
# a socket is registered in both sets for a while; threads wake each other
# through pipes) -> two gunicorns (the Python application, HTTP/1.1
# keep-alive) -> PostgreSQL, with at most 2 connections per server: with
# more requests in flight, haproxy queues them per server.  Every server
# traced; tb-client at concurrency 1, 16 and 64, keep-alive, pipelining
# depth 4 (so the shim holds pipelined requests of the client connections
# for event isolation).
#
# Asserted (the traced program must behave as untraced):
#   - every answer is a 200 with the right body (no 503 "No server is
#     available", which haproxy sends when a queued request waits past its
#     queue timeout), tb-client's checks;
#   - no stall: tb-client's max_gap_ms (the longest time with requests in
#     flight and none answered) stays under TB_STALL_MS (default 1000 ms;
#     untraced and traced runs on a 2-core machine show 5-15 ms, the
#     slowest single answers 50-150 ms).
#   - never silently wrong (the certainty contract, docs/reconstruct.md
#     "Certainty"): check-testbed.py --certainty against the client's
#     ground truth (front "haproxy") fails on any request whose path is
#     wrong and labelled exact (silently-WRONG) or resolved (resolved-WRONG).
#     haproxy sends a queued request's call from whichever request's event
#     frees a server connection, so at c=16 and 64 nearly every request is
#     uncertain; at c=1 every one is exact and right.
#
# TB_REQUESTS (default 1000 here) requests per run: the CI run takes about
# 13 s on a 2-core machine.  By hand, TB_HAPROXY_RUNS=N adds N more traced
# runs (concurrency TB_HAPROXY_CONC, default 64, pipelining depth
# TB_HAPROXY_DEPTH, default 4; TB_REQUESTS each) and prints how many
# stalled, saw a failed or non-200 answer, or had a silently-WRONG or
# resolved-WRONG request; the test fails unless all are 0.  The knobs of
# the stall hunt (haproxy 2.6 nbthread 2 reported stalls of 0.9-9.3 s and
# 503s, traced only): TB_HAPROXY_NBTHREAD, TB_HAPROXY_QUEUE=none (haproxy's
# default queue timeout), TB_HAPROXY_POLLER=poll, TB_APP_SLEEP_MS (a slow
# backend), TB_HAPROXY_BUSY=1 (two CPU-bound loops beside the runs, bounded
# by the runs' time):
#   TB_HAPROXY_RUNS=50 TB_HAPROXY_BUSY=1 TB_HAPROXY_QUEUE=none \
#     make check TESTS=tests/testbeds/tb-haproxy.sh
TB_FRONT=haproxy
TB_APPS=py
TB_MIX=py:1
: "${TB_REQUESTS:=1000}" "${TB_NOISO_CONCS:=none}" "${TB_STALL_MS:=1000}"
: "${TB_HAPROXY_RUNS:=0}"
. "$(dirname "$0")/lib.sh"

# tb_gap DIR: tb-client's max_gap_ms of the run in DIR.
tb_gap() {
	awk '{ for (i = 1; i < NF; i++) if ($i == "max_gap_ms") print $(i + 1) }' \
		"$1/client.out" | tail -n 1
}

tb_init haproxy
for c in 1 16 64; do
	tb_run "$c" 4 1 certainty
	dir=$T/run$TB_RUN_NO
	gap=$(tb_gap "$dir")
	[ -n "$gap" ] || bp_fail "c=$c: tb-client printed no max_gap_ms"
	[ "$gap" -lt "$TB_STALL_MS" ] ||
		bp_fail "c=$c: stalled: nothing answered for $gap ms" \
			"(threshold $TB_STALL_MS ms)"
	bp_note "c=$c: longest time without an answer $gap ms"
done

# tb_busy SECS: two CPU-bound loops for at most SECS seconds (a busy
# machine); their pids in TB_BUSY_PIDS, killed by tb_busy_stop.
TB_BUSY_PIDS=""
tb_busy() {
	local i
	for i in 1 2; do
		timeout "$1" sh -c 'while :; do :; done' &
		TB_BUSY_PIDS="$TB_BUSY_PIDS $!"
	done
}
tb_busy_stop() {
	local rc=$? p
	for p in $TB_BUSY_PIDS; do kill "$p" 2>/dev/null; done
	for p in $TB_BUSY_PIDS; do wait "$p" 2>/dev/null; done
	TB_BUSY_PIDS=""
	return $rc
}
trap 'tb_busy_stop; tb_cleanup' EXIT

if [ "$TB_HAPROXY_RUNS" -gt 0 ]; then
	stalls=0 bad=0 worst=0 wrong=0
	conc=${TB_HAPROXY_CONC:-64} depth=${TB_HAPROXY_DEPTH:-4}
	[ "${TB_HAPROXY_BUSY:-0}" = 1 ] && tb_busy $((TB_HAPROXY_RUNS * 60))
	for ((k = 1; k <= TB_HAPROXY_RUNS; k++)); do
		: >"$T/client.log"
		tb_run "$conc" "$depth" 1 report "by hand $k/$TB_HAPROXY_RUNS" \
			>"$T/byhand.out"
		dir=$T/run$TB_RUN_NO
		gap=$(tb_gap "$dir")
		[ -n "$gap" ] || gap=999999
		[ "$gap" -gt "$worst" ] && worst=$gap
		[ "$gap" -lt "$TB_STALL_MS" ] || stalls=$((stalls + 1))
		if grep -q 'status [0-9]' "$T/client.log" ||
			! grep -q ' failed 0 ' "$dir/client.out"; then
			bad=$((bad + 1))
			bp_note "run $k: $(grep -m 1 'status\|fail' "$T/client.log")"
		fi
		grep -q 'silently-WRONG [1-9]\|resolved-WRONG [1-9]' \
			"$T/byhand.out" && wrong=$((wrong + 1))
		# keep the disk use of 50 runs small
		[ "${BP_KEEP:-0}" = 1 ] || rm -rf "$dir/logs"
	done
	tb_busy_stop
	bp_note "by hand: $TB_HAPROXY_RUNS traced runs at c=$conc: $stalls" \
		"stalled (>= $TB_STALL_MS ms without an answer), $bad with a" \
		"failed or non-200 answer, $wrong with silently-WRONG or" \
		"resolved-WRONG requests; longest gap $worst ms"
	[ "$stalls" = 0 ] && [ "$bad" = 0 ] && [ "$wrong" = 0 ] ||
		bp_fail "by hand: $stalls stalls, $bad runs with failed" \
			"answers, $wrong runs silently wrong"
fi
echo "PASS: tb-haproxy"
