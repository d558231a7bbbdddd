#!/bin/bash
# checker-selftest.sh - check-paths.py against hand-made databases: right
# paths pass; a missing backend span, a call in another request's path, a
# request split in two and a wrong requests row are each caught and named;
# --report-only reports without failing.  (A checker that cannot fail
# would make the tracing tests worthless.)
. "$(dirname "$0")/lib.sh"
bp_init checker-selftest

# mkdb DB CASE: build a paths.db for ids a (2 calls) and b (0 calls).
mkdb() {
	"$PY" - "$1" "$2" <<'PYEOF'
import sqlite3, sys
db, case = sys.argv[1], sys.argv[2]
con = sqlite3.connect(db)
con.executescript('''
CREATE TABLE requests(request_id, start_ns, end_ns, duration_ns, protocol,
  method, target, status, client);
CREATE TABLE spans(span_id, request_id, parent_span_id, kind, protocol, name,
  target, status, host, pid, tid, exe, peer, start_ns, end_ns);
''')
reqs = {1: 'REQ a 2', 2: 'REQ b 0'}
spans = [  # request, kind, target, exe
    (1, 'client', 'REQ a 2', '/x/ex-client'),
    (1, 'server', 'REQ a 2', '/x/ex-epoll'),
    (1, 'client', 'CALL a 0', '/x/ex-epoll'),
    (1, 'server', 'CALL a 0', '/x/ex-backend'),
    (1, 'client', 'CALL a 1', '/x/ex-epoll'),
    (1, 'server', 'CALL a 1', '/x/ex-backend'),
    (2, 'client', 'REQ b 0', '/x/ex-client'),
    (2, 'server', 'REQ b 0', '/x/ex-epoll'),
]
if case == 'missing':      # the backend's span of CALL a 1 is lost
    del spans[5]
elif case == 'mixup':      # CALL a 1 attributed to request b
    spans[4] = (2,) + spans[4][1:]
    spans[5] = (2,) + spans[5][1:]
elif case == 'split':      # the front's server span in a request of its own
    spans[1] = (3,) + spans[1][1:]
    reqs[3] = 'REQ a 2'
elif case == 'badrow':     # requests.target is not the line
    reqs[2] = 'REQ b 1'
for i, (r, kind, target, exe) in enumerate(spans, 1):
    con.execute('INSERT INTO spans(span_id, request_id, kind, protocol, '
                'target, exe) VALUES (?, ?, ?, ?, ?, ?)',
                (i, r, kind, 'line', target, exe))
for r, target in reqs.items():
    con.execute('INSERT INTO requests(request_id, protocol, target) '
                'VALUES (?, ?, ?)', (r, 'line', target))
con.commit()
PYEOF
}

printf 'a 2\nb 0\n' >"$T/truth"

# expect CASE STATUS WRONG PATTERN [OPTIONS]: run the checker on CASE.
expect() {
	local case=$1 want_rc=$2 want_wrong=$3 pattern=$4 rc out
	shift 4
	rm -f "$T/$case.db"
	mkdb "$T/$case.db" "$case" || bp_fail "cannot build $case.db"
	out=$("$PY" "$BP_LIB_DIR/check-paths.py" --truth "$T/truth" \
		--db "$T/$case.db" --label "$case" --front-exe ex-epoll \
		--backend-exe ex-backend "$@")
	rc=$?
	echo "$out"
	[ "$rc" = "$want_rc" ] || bp_fail "$case: status $rc, want $want_rc"
	echo "$out" | grep -q "wrong $want_wrong precision" ||
		bp_fail "$case: not 'wrong $want_wrong'"
	echo "$out" | grep -q -- "$pattern" ||
		bp_fail "$case: the reason does not say '$pattern'"
}

expect good 0 0 'precision 100.00%'
expect missing 1 1 'found 0 server spans "CALL a 1"'
expect mixup 1 2 'not in request 1'
expect mixup 0 2 'request 2 also holds' --report-only
expect split 1 1 'the client span "REQ a 2" is in request 1, the front.s in 3'
expect badrow 1 1 'requests row 2 has target "REQ b 1"'

# bad inputs are named, with status 2
"$PY" "$BP_LIB_DIR/check-paths.py" --truth "$T/nonexistent" --db "$T/good.db" \
	2>"$T/err.txt"
[ $? = 2 ] && grep -q 'cannot read the truth file' "$T/err.txt" ||
	bp_fail "a missing truth file is not reported"
: >"$T/empty"
"$PY" "$BP_LIB_DIR/check-paths.py" --truth "$T/empty" --db "$T/good.db" \
	2>"$T/err.txt"
[ $? = 2 ] && grep -q 'holds no request' "$T/err.txt" ||
	bp_fail "an empty truth file is not refused"
echo "PASS: checker-selftest"
