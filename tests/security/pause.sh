#!/bin/bash
# pause.sh - tracing paused and resumed under load (docs/security.md,
# "Pausing").
#
# The example servers (backend, front), all traced, under load from
# clients A (back-to-back runs, so the load spans the pause and the
# resume).  Meanwhile: bp-logd -c pause; a client B runs entirely while
# paused; bp-logd -c resume; a client C runs on new connections.  Then:
#
#  - C's requests (made after the resume, on new connections): every path
#    100% right (check-paths.py), asserted for the thread-per-connection
#    front (ex-threads); for the others (pooled backend connections that
#    went dark during the pause) reported;
#  - B's requests (made while paused): absent, no span carries their ids;
#  - nothing misattributed anywhere: no request holds spans of two ids, no
#    span of one request's id is in another request (A's requests that
#    straddle the pause may be incomplete, never mixed);
#  - the pause is reported: bp-reconstruct's count of events the tracers
#    could not record includes the paused calls (DROP, reason 5), and
#    bp-logd's PAUSE and RESUME notes are in its stream.
#
# PAUSE_ARCHS (default "threads epoll") chooses the fronts; an
# architecture listed in PAUSE_ASSERT (default "threads") fails the test
# when C is not 100% right.
. "$(dirname "$0")/../integ/lib.sh"

bp_init pause
bp_require_tracing
BP_DUMP=$(bp_find_tool bp-dump)
[ -n "$BP_DUMP" ] || bp_fail "bp-dump is not built: run make"

# ctl DIR CMD: bp-logd -c CMD
ctl() {
	timeout 10 "$BP_LOGD" -c "$2" -s "$1/logd.sock" >>"$T/ctl.out" 2>&1 ||
		bp_fail "bp-logd -c $2 failed: $(tail -n 2 "$T/ctl.out")"
}

# client DIR NAME CONNS REQUESTS: a traced ex-client run in the background
# (pid in CLIENT_PID), truth in DIR/truth-NAME
client() {
	local dir=$1 name=$2 conns=$3 n=$4
	timeout 120 "${BP_PREFIX[@]}" "$EX/ex-client" --port "$FRONT_PORT" \
		--conns "$conns" --requests "$n" --pipeline 2 --max-calls 4 \
		--truth "$dir/truth-$name" --timeout-ms 60000 \
		>"$dir/client-$name.out" 2>>"$T/client.log" &
	CLIENT_PID=$!
}

run() {
	local arch=$1 dir=$T/$1 a b c rc
	mkdir -p "$dir"
	bp_logd_start "$dir"
	bp_free_port BACKEND_PORT
	bp_free_port FRONT_PORT
	bp_trace_prefix "$BP_LOGD_SOCK" \
		"line port $FRONT_PORT,$BACKEND_PORT; line unix $dir/*.sock" 1
	POOL=64
	bp_start_servers "$dir" "$arch"

	# A: back-to-back runs of 400 requests (new connections each), so
	# the load spans the pause and the resume whatever the machine's speed
	(
		for ((i = 1; i <= 500; i++)); do
			[ -e "$dir/stop-A" ] && break
			timeout 120 "${BP_PREFIX[@]}" "$EX/ex-client" \
				--port "$FRONT_PORT" --conns 4 --requests 400 \
				--pipeline 2 --max-calls 4 --truth "$dir/truth-A$i" \
				--timeout-ms 60000 >>"$dir/client-A.out" \
				2>>"$T/client.log" || echo "run A$i failed" >>"$dir/client-A.err"
		done
	) &
	a=$!
	sleep 1
	ctl "$dir" pause
	client "$dir" B 4 200
	b=$CLIENT_PID
	wait "$b" || bp_fail "$arch: client B failed: $(cat "$dir/client-B.out")"
	sleep 0.5
	ctl "$dir" resume
	client "$dir" C 8 320
	c=$CLIENT_PID
	wait "$c" || bp_fail "$arch: client C failed: $(cat "$dir/client-C.out")"
	sleep 0.3
	touch "$dir/stop-A"
	wait "$a"
	[ ! -s "$dir/client-A.err" ] ||
		bp_fail "$arch: clients A failed under tracing: $(cat "$dir/client-A.err")"
	cat "$dir"/truth-A[0-9]* >"$dir/truth-A"
	bp_alive front
	bp_alive backend
	bp_stop front
	bp_stop backend
	bp_stop logd
	timeout 300 "$BP_RECONSTRUCT" "$dir/logs" -o "$dir/paths.db" \
		>"$dir/reconstruct.out" 2>"$dir/reconstruct.err" ||
		bp_fail "$arch: bp-reconstruct failed: $(tail -n 3 "$dir/reconstruct.err")"
	"$BP_DUMP" "$dir/logs" >"$dir/dump.txt" 2>/dev/null ||
		bp_fail "$arch: bp-dump found damage in the log"

	# the pause is in the log: bp-logd's notes, the tracers' DROPs
	grep -q ' logd .* flags=0xa ' "$dir/dump.txt" &&
		grep -q ' logd .* flags=0xb ' "$dir/dump.txt" ||
		bp_fail "$arch: bp-logd's PAUSE and RESUME notes are not in the log"
	ndrop=$(grep -c ' drop .*reason=5' "$dir/dump.txt" || true)
	[ "$ndrop" -gt 0 ] || bp_fail "$arch: no tracer reported its paused calls (DROP reason 5)"
	calls=$(grep ' drop .*reason=5' "$dir/dump.txt" |
		sed -n 's/.*count=\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')

	# C: after the resume, new connections
	rc=0
	"$PY" "$BP_LIB_DIR/check-paths.py" --truth "$dir/truth-C" \
		--db "$dir/paths.db" --label "pause: $arch, after the resume" \
		--front-exe "ex-$arch" --backend-exe ex-backend || rc=$?
	case " ${PAUSE_ASSERT:-threads} " in
	*" $arch "*)
		[ "$rc" = 0 ] || bp_fail "$arch: requests made after the resume on new connections are not all right" ;;
	esac
	# B absent, nothing mixed, A accounted
	"$PY" - "$dir" "$arch" <<'PY' || bp_fail "$arch: see above"
import sqlite3, sys, re
d, arch = sys.argv[1], sys.argv[2]
def truth(n):
    return {l.split()[0] for l in open('%s/truth-%s' % (d, n)) if l.strip()}
A, B, C = truth('A'), truth('B'), truth('C')
con = sqlite3.connect('file:%s/paths.db?mode=ro' % d, uri=True)
rx = re.compile(r'^(REQ|CALL) (\S+) (\d+)$')
byreq, byid = {}, {}
for rid, target in con.execute(
        "SELECT request_id, target FROM spans WHERE target LIKE 'REQ %' "
        "OR target LIKE 'CALL %'"):
    m = rx.match(target or '')
    if not m:
        continue
    byid.setdefault(m.group(2), []).append(rid)
    if rid is not None:
        byreq.setdefault(rid, set()).add(m.group(2))
bad = 0
inb = [i for i in B if i in byid]
if inb:
    print('%s: %d of B\'s %d requests (made while paused) are in the log, e.g. %s'
          % (arch, len(inb), len(B), inb[0]))
    bad = 1
mixed = {r: ids for r, ids in byreq.items() if len(ids) > 1}
if mixed:
    r, ids = next(iter(mixed.items()))
    print('%s: %d requests hold spans of several ids, e.g. request %s: %s'
          % (arch, len(mixed), r, sorted(ids)[:4]))
    bad = 1
split = [i for i, rs in byid.items() if len({r for r in rs if r is not None}) > 1]
# A: complete (4 + 4 per call spans... as check-paths counts), partial, absent
seen_a = sum(1 for i in A if i in byid)
print('%s: A %d requests (%d in the log, %d absent: sent while paused or '
      'on connections dark since), B %d requests (0 in the log), C %d '
      'requests; %d requests in paths.db, none holding two ids; %d ids '
      'split over several requests'
      % (arch, len(A), seen_a, len(A) - seen_a, len(B), len(C),
         con.execute('SELECT count(*) FROM requests').fetchone()[0],
         len(split)))
sys.exit(bad)
PY
	bp_note "$arch: $ndrop DROP records (reason paused) from threads that ran on after the resume, for $calls calls passed through"
	mv "$T/front.log" "$dir/front.log"
	mv "$T/backend.log" "$dir/backend.log"
}

for arch in ${PAUSE_ARCHS:-threads epoll}; do
	run "$arch"
done
echo "PASS: pause"
