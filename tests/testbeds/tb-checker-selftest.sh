#!/bin/bash
# tb-checker-selftest.sh - check-testbed.py against hand-made databases:
# right paths pass; a missing span, a statement in another request, a
# repeated statement seen once, operations out of order, a span outside
# its parent, a static request with backend work, an unattributed span
# and a wrong requests row are each caught and named, for Redis
# operations too; events the tracers could not record are printed;
# --report-only
# reports without failing.  (A checker that cannot fail would make the
# testbeds worthless.)  Needs no server.
. "$(dirname "$0")/../integ/lib.sh"
bp_init tb-checker-selftest
TB_SRC=$top_srcdir/tests/testbeds

# mkdb DB CASE [LABEL]: a paths.db for request a (php: 3 statements, the
# third repeating the first, and a lookup) and b (static).  With LABEL the
# database has the certainty columns (docs/accuracy.md): both requests
# and the spans the case moved get LABEL, the others 'exact'; LABEL
# "resolved1" labels request 1 resolved (handoff:sync) and nothing else.
mkdb() {
	"$PY" - "$1" "$2" "${3:-}" <<'PYEOF'
import sqlite3, sys
db, case, label = sys.argv[1], sys.argv[2], sys.argv[3]
con = sqlite3.connect(db)
con.executescript('''
CREATE TABLE requests(request_id, start_ns, end_ns, duration_ns, protocol,
  method, target, status, client);
CREATE TABLE spans(span_id, request_id, parent_span_id, kind, protocol, name,
  target, status, host, pid, tid, exe, peer, start_ns, end_ns);
CREATE TABLE files(file_id, request_id, span_id, host_id, process_id, pid,
  tid, ts_ns, path, flags, result);
''')
A = 'q1x00000a'
B = 'q2x00000a'
ua = '/app.php?id=%s&n=3&dns=1' % A
ub = '/static/f1.txt?id=%s' % B
s1 = "SELECT v FROM tb_kv WHERE k = '%s'" % A
s2 = "INSERT INTO tb_hits (id, n) VALUES ('%s', 1)" % A
# id, request, parent, kind, protocol, target, exe, pid, start, end
spans = [
    [1, 1, None, 'server', 'http', ua, '/usr/sbin/nginx', 10, 100, 900],
    [2, 1, 1, 'client', 'fastcgi', ua, '/usr/sbin/nginx', 10, 110, 890],
    [3, 1, 2, 'server', 'fastcgi', ua, '/usr/sbin/php-fpm8.2', 20, 120, 880],
    [4, 1, 3, 'client', 'postgresql', s1, '/usr/sbin/php-fpm8.2', 20, 200, 300],
    [5, 1, 4, 'server', 'postgresql', s1, '/usr/lib/postgresql/15/bin/postgres', 30, 210, 290],
    [6, 1, 3, 'client', 'postgresql', s2, '/usr/sbin/php-fpm8.2', 20, 310, 400],
    [7, 1, 6, 'server', 'postgresql', s2, '/usr/lib/postgresql/15/bin/postgres', 30, 320, 390],
    [8, 1, 3, 'client', 'postgresql', s1, '/usr/sbin/php-fpm8.2', 20, 410, 500],
    [9, 1, 8, 'server', 'postgresql', s1, '/usr/lib/postgresql/15/bin/postgres', 30, 420, 490],
    [10, 1, 3, 'client', 'dns', 'r-%s.test' % A, '/usr/sbin/php-fpm8.2', 20, 510, 520],
    [11, 2, None, 'server', 'http', ub, '/usr/sbin/nginx', 11, 100, 150],
]
reqs = {1: ('http', 'GET', ua, 200), 2: ('http', 'GET', ub, 200)}
files = [(2, '/srv/www/static/f1.txt', 11)]
if case == 'missing':        # postgres never logged the second statement
    del spans[6]
elif case == 'mixup':        # the INSERT ended up in request 2
    spans[5][1] = spans[6][1] = 2
elif case == 'repeat':       # the repeated SELECT seen only once
    del spans[7:9]
elif case == 'order':        # the INSERT logged before the first SELECT
    spans[5][8], spans[5][9], spans[6][8] = 150, 190, 160
elif case == 'nesting':      # php-fpm's span starts before nginx's call
    spans[2][8] = 105
elif case == 'static':       # a static request that called the backend
    spans.append([12, 2, 11, 'client', 'fastcgi', ub, '/usr/sbin/nginx', 11, 110, 140])
elif case == 'unattributed': # the lookup belongs to no request
    spans[9][1] = None
elif case == 'badrow':       # the requests row lost its status
    reqs[1] = ('http', 'GET', ua, None)
elif case == 'nofile':       # the static file was opened for no request
    files = [(None, '/srv/www/static/f1.txt', 11)]
moved = {6, 7} if case == 'mixup' else set()
req_label = {}
if label == 'resolved1':
    req_label = {1: 'resolved'}
elif label:
    req_label = {1: label, 2: label}
if label:
    for t in ('requests', 'spans'):
        con.execute("ALTER TABLE %s ADD COLUMN certainty TEXT NOT NULL "
                    "DEFAULT 'exact'" % t)
        con.execute('ALTER TABLE %s ADD COLUMN certainty_reason TEXT' % t)
for sp in spans:
    i, r, p, kind, proto, target, exe, pid, t0, t1 = sp
    con.execute('INSERT INTO spans(span_id, request_id, parent_span_id, kind,'
                ' protocol, target, exe, pid, start_ns, end_ns) VALUES '
                '(?,?,?,?,?,?,?,?,?,?)',
                (i, r, p, kind, proto, target, exe, pid, t0, t1))
    if label and i in moved and label != 'resolved1':
        con.execute('UPDATE spans SET certainty = ?, certainty_reason = ? '
                    'WHERE span_id = ?', (label, 'ambiguous:parked', i))
for r, (proto, method, target, status) in reqs.items():
    con.execute('INSERT INTO requests(request_id, protocol, method, target, '
                'status) VALUES (?,?,?,?,?)', (r, proto, method, target, status))
    if r in req_label:
        con.execute('UPDATE requests SET certainty = ?, certainty_reason = ? '
                    'WHERE request_id = ?', (req_label[r], 'handoff:sync'
                    if req_label[r] == 'resolved' else 'ambiguous:parked', r))
if case == 'lost':           # a tracer could not record an event
    con.executescript("CREATE TABLE stats(key TEXT PRIMARY KEY, value INTEGER);"
                      "INSERT INTO stats VALUES ('dropped_by_tracer', 1),"
                      " ('lost_records', 0);")
elif case == 'good':
    con.executescript("CREATE TABLE stats(key TEXT PRIMARY KEY, value INTEGER);"
                      "INSERT INTO stats VALUES ('dropped_by_tracer', 0),"
                      " ('lost_records', 0);")
if case == 'badlabel':
    con.execute("UPDATE requests SET certainty = 'maybe' WHERE request_id = 2")
for r, path, pid in files:
    con.execute('INSERT INTO files(request_id, path, pid) VALUES (?,?,?)',
                (r, path, pid))
con.commit()
PYEOF
}

A=q1x00000a
B=q2x00000a
S1="SELECT v FROM tb_kv WHERE k = '$A'"
S2="INSERT INTO tb_hits (id, n) VALUES ('$A', 1)"
printf '%s\tphp\t/app.php?id=%s&n=3&dns=1\tsql %s\tsql %s\tsql %s\tname r-%s.test 127.0.0.9\n%s\tstatic\t/static/f1.txt?id=%s\n' \
	"$A" "$A" "$S1" "$S2" "$S1" "$A" "$B" "$B" >"$T/truth"

# expect CASE STATUS WRONG PATTERN [OPTIONS]: run the checker on CASE
# (LABEL=L: with the certainty columns, see mkdb).
expect() {
	local case=$1 want_rc=$2 want_wrong=$3 pattern=$4 rc out
	shift 4
	rm -f "$T/$case.db"
	mkdb "$T/$case.db" "$case" "${LABEL:-}" || bp_fail "cannot build $case.db"
	out=$("$PY" "$TB_SRC/check-testbed.py" --truth "$T/truth" \
		--db "$T/$case.db" --label "$case" "$@")
	rc=$?
	echo "$out"
	[ "$rc" = "$want_rc" ] || bp_fail "$case: status $rc, want $want_rc"
	echo "$out" | grep -q "wrong $want_wrong precision" ||
		bp_fail "$case: not 'wrong $want_wrong'"
	echo "$out" | grep -q -- "$pattern" ||
		bp_fail "$case: the reason does not say '$pattern'"
}

expect good 0 0 'precision 100.00%'
expect good 0 0 'could not record: 0, records lost: 0'
expect lost 0 0 'could not record: 1, records lost: 0'
expect missing 1 1 'no postgres server span "INSERT'
expect mixup 1 2 'not in request 1'
expect mixup 0 2 'request 2 also holds' --report-only
expect repeat 1 1 "no php-fpm8.2 client postgresql span \"SELECT v"
expect order 1 1 'operations out of order'
expect nesting 1 1 'is not within its parent'
expect static 1 1 'request 2 also holds client fastcgi span'
expect unattributed 1 1 'in request None, not in request 1'
expect badrow 1 1 'requests row 1 is'
expect nofile 1 1 'no files row in request 2'

# Certainty (docs/accuracy.md): the same mistake (the INSERT's spans
# moved into request 2) is silently wrong when labelled exact, uncertain
# when labelled uncertain, resolved-wrong when labelled resolved; with
# --certainty only the first and the last fail the run.
C="exact-right %s resolved-right %s resolved-WRONG %s uncertain %s silently-WRONG %s"
# shellcheck disable=SC2059
{
expect good 0 0 "$(printf "$C" 2 0 0 0 0) right 100.00% (labels: no certainty" --certainty
expect mixup 1 2 "$(printf "$C" 0 0 0 0 2) right 0.00% (labels: no certainty" --certainty
LABEL=exact expect good 0 0 "$(printf "$C" 2 0 0 0 0) right 100.00% (labels: requests.certainty" --certainty
LABEL=resolved1 expect good 0 0 "$(printf "$C" 1 1 0 0 0) right 100.00%" --certainty
LABEL=exact expect mixup 1 2 "$(printf "$C" 0 0 0 0 2) right 0.00%" --certainty
LABEL=exact expect mixup 1 2 "silently-WRONG): client postgresql span 6" --certainty
LABEL=uncertain expect mixup 0 2 "$(printf "$C" 0 0 0 2 0) right 0.00%" --certainty
LABEL=uncertain expect mixup 1 2 "$(printf "$C" 0 0 0 2 0) right 0.00%"
LABEL=resolved expect mixup 1 2 "$(printf "$C" 0 0 2 0 0) right 0.00%" --certainty
LABEL=resolved expect mixup 1 2 "resolved-WRONG): client postgresql span 6" --certainty
LABEL=uncertain expect good 0 0 "$(printf "$C" 0 0 0 2 0) right 0.00%" --certainty
}
rm -f "$T/badlabel.db"
mkdb "$T/badlabel.db" badlabel exact || bp_fail "cannot build badlabel.db"
out=$("$PY" "$TB_SRC/check-testbed.py" --truth "$T/truth" \
	--db "$T/badlabel.db" --label badlabel 2>&1)
rc=$?
echo "$out"
[ "$rc" = 2 ] && echo "$out" | grep -q "has certainty 'maybe'" ||
	bp_fail "badlabel: status $rc, want 2 and the bad label named"

# --shape app: an application that is its own front (one statement and
# one call to a backend), and the same reached from a traced client.
mkapp() {
	"$PY" - "$1" "$2" <<'PYEOF'
import sqlite3, sys
db, case = sys.argv[1], sys.argv[2]
con = sqlite3.connect(db)
con.executescript('''
CREATE TABLE requests(request_id, protocol, method, target, status);
CREATE TABLE spans(span_id, request_id, parent_span_id, kind, protocol, name,
  target, host, pid, exe, start_ns, end_ns);
CREATE TABLE files(request_id, path, pid);
''')
A = 'q1x00000b'
u = '/py/app?id=%s&n=1' % A
s1 = "SELECT v FROM tb_kv WHERE k = '%s'" % A
b = '/b?id=%s' % A
spans = [
    [1, 1, None, 'server', 'http', u, '/usr/bin/node', 10, 100, 900],
    [2, 1, 1, 'client', 'postgresql', s1, '/usr/bin/node', 10, 200, 300],
    [3, 1, 2, 'server', 'postgresql', s1, '/usr/lib/postgresql/15/bin/postgres', 30, 210, 290],
    [4, 1, 1, 'client', 'http', b, '/usr/bin/node', 10, 400, 500],
    [5, 1, 4, 'server', 'http', b, '/usr/bin/node', 11, 410, 490],
]
if case in ('client', 'client-mixup'):   # python3.11 sent the request
    spans = [[i + 1, r, (p + 1 if p else 1), k, pr, t, e, pid, t0, t1]
             for i, r, p, k, pr, t, e, pid, t0, t1 in spans]
    spans.insert(0, [1, 1, None, 'client', 'http', u, '/usr/bin/python3.11',
                     9, 50, 950])
if case == 'mixup':          # the backend's span in another request
    spans[4][1] = 2
    spans.append([6, 2, None, 'server', 'http', '/other', '/usr/bin/node', 10, 1000, 1100])
if case == 'client-mixup':   # in the request of an earlier one
    spans[0][1] = 2
    spans.append([7, 2, None, 'client', 'http', '/other', '/usr/bin/python3.11', 9, 10, 20])
for sp in spans:
    con.execute('INSERT INTO spans(span_id, request_id, parent_span_id, kind,'
                ' protocol, target, exe, pid, start_ns, end_ns) VALUES '
                '(?,?,?,?,?,?,?,?,?,?)', sp)
con.execute("INSERT INTO requests VALUES (1, 'http', 'GET', ?, 200)", (u,))
con.execute("INSERT INTO requests VALUES (2, 'http', 'GET', '/other', 200)")
con.commit()
PYEOF
}
printf '%s\tpy\t/py/app?id=%s&n=1\tsql %s\tcall /b?id=%s\n' q1x00000b \
	q1x00000b "SELECT v FROM tb_kv WHERE k = 'q1x00000b'" q1x00000b \
	>"$T/app-truth"
# expect_app CASE STATUS PATTERN [OPTIONS]
expect_app() {
	local case=$1 want_rc=$2 pattern=$3 rc out
	shift 3
	rm -f "$T/app-$case.db"
	mkapp "$T/app-$case.db" "$case" || bp_fail "cannot build app-$case.db"
	out=$("$PY" "$TB_SRC/check-testbed.py" --truth "$T/app-truth" \
		--db "$T/app-$case.db" --label "app-$case" --shape app \
		--py node --backend node --certainty "$@")
	rc=$?
	echo "$out"
	[ "$rc" = "$want_rc" ] || bp_fail "app-$case: status $rc, want $want_rc"
	echo "$out" | grep -q -- "$pattern" ||
		bp_fail "app-$case: the output does not say '$pattern'"
}
expect_app good 0 'precision 100.00%'
expect_app mixup 1 'server http span 5 "/b?id=q1x00000b" (node\[11\]) in request 2, not in request 1'
expect_app client 0 'precision 100.00%' --client python3.11
expect_app client 1 'server span of node has parent 1 (want none'
expect_app client-mixup 1 'requests row 2 is' --client python3.11

# Redis operations (tb-redis.sh): a command with a key and MULTI, each a
# client redis span of the app with redis-server's span under it
mkredis() {
	"$PY" - "$1" "$2" <<'PYEOF'
import sqlite3, sys
db, case = sys.argv[1], sys.argv[2]
con = sqlite3.connect(db)
con.executescript('''
CREATE TABLE requests(request_id, protocol, method, target, status);
CREATE TABLE spans(span_id, request_id, parent_span_id, kind, protocol, name,
  target, host, pid, exe, start_ns, end_ns);
CREATE TABLE files(request_id, path, pid);
''')
A = 'q1x00000c'
u = '/py/app?id=%s&n=0' % A
k = 'GET tb:%s:a' % A
py, rs = '/usr/bin/python3.11', '/usr/bin/redis-check-rdb'
spans = [
    [1, 1, None, 'server', 'http', u, py, 10, 100, 900],
    [2, 1, 1, 'client', 'redis', k, py, 10, 200, 300],
    [3, 1, 2, 'server', 'redis', k, rs, 30, 210, 290],
    [4, 1, 1, 'client', 'redis', 'MULTI', py, 10, 400, 500],
    [5, 1, 4, 'server', 'redis', 'MULTI', rs, 30, 410, 490],
]
if case == 'redis-mixup':    # MULTI's server span under another request
    spans[4][1] = 2
    spans[4][2] = 6
    spans.append([6, 2, None, 'client', 'redis', 'MULTI', py, 10, 405, 495])
if case == 'redis-missing':  # redis-server never logged the GET
    del spans[2]
for sp in spans:
    con.execute('INSERT INTO spans(span_id, request_id, parent_span_id, kind,'
                ' protocol, target, exe, pid, start_ns, end_ns) VALUES '
                '(?,?,?,?,?,?,?,?,?,?)', sp)
con.execute("INSERT INTO requests VALUES (1, 'http', 'GET', ?, 200)", (u,))
con.execute("INSERT INTO requests VALUES (2, 'http', 'GET', '/other', 200)")
con.commit()
PYEOF
}
printf '%s\tpy\t/py/app?id=%s&n=0\tredis GET tb:%s:a\tredis MULTI\n' \
	q1x00000c q1x00000c q1x00000c >"$T/redis-truth"
# expect_redis CASE STATUS PATTERN
expect_redis() {
	local case=$1 want_rc=$2 pattern=$3 rc out
	rm -f "$T/$case.db"
	mkredis "$T/$case.db" "$case" || bp_fail "cannot build $case.db"
	out=$("$PY" "$TB_SRC/check-testbed.py" --truth "$T/redis-truth" \
		--db "$T/$case.db" --label "$case" --shape app \
		--py python3.11 --redis redis-check-rdb --certainty)
	rc=$?
	echo "$out"
	[ "$rc" = "$want_rc" ] || bp_fail "$case: status $rc, want $want_rc"
	echo "$out" | grep -q -- "$pattern" ||
		bp_fail "$case: the output does not say '$pattern'"
}
expect_redis redis-good 0 'precision 100.00%'
expect_redis redis-mixup 1 'no redis-check-rdb server redis span "MULTI"'
expect_redis redis-missing 1 'no redis-check-rdb server redis span "GET tb:q1x00000c:a"'
echo "PASS: tb-checker-selftest"
