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
# 13 s on a 2-core machine.  By hand, TB_HAPROXY_RUNS=N adds N more traced runs (concurrency
# 64, TB_REQUESTS each, paths not checked) and prints how many stalled or
# saw a non-200 answer; the test fails unless both are 0:
#   TB_HAPROXY_RUNS=50 make check TESTS=tests/testbeds/tb-haproxy.sh
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

if [ "$TB_HAPROXY_RUNS" -gt 0 ]; then
	stalls=0 bad=0 worst=0
	for ((k = 1; k <= TB_HAPROXY_RUNS; k++)); do
		: >"$T/client.log"
		tb_run 64 4 1 report "by hand $k/$TB_HAPROXY_RUNS" >/dev/null
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
		# keep the disk use of 50 runs small
		[ "${BP_KEEP:-0}" = 1 ] || rm -rf "$dir/logs"
	done
	bp_note "by hand: $TB_HAPROXY_RUNS traced runs at c=64: $stalls" \
		"stalled (>= $TB_STALL_MS ms without an answer), $bad with a" \
		"failed or non-200 answer; longest gap $worst ms"
	[ "$stalls" = 0 ] && [ "$bad" = 0 ] ||
		bp_fail "by hand: $stalls stalls, $bad runs with failed answers"
fi
echo "PASS: tb-haproxy"
