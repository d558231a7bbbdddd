#!/bin/bash
# tb-checker-selftest.sh - check-testbed.py against hand-made databases:
# right paths pass; a missing span, a statement in another request, a
# repeated statement seen once, operations out of order, a span outside
# its parent, a static request with backend work, an unattributed span
# and a wrong requests row are each caught and named; --report-only
# reports without failing.  (A checker that cannot fail would make the
# testbeds worthless.)  Needs no server.
. "$(dirname "$0")/../integ/lib.sh"
bp_init tb-checker-selftest
TB_SRC=$top_srcdir/tests/testbeds

# mkdb DB CASE: a paths.db for request a (php: 3 statements, the third
# repeating the first, and a lookup) and b (static).
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
for sp in spans:
    i, r, p, kind, proto, target, exe, pid, t0, t1 = sp
    con.execute('INSERT INTO spans(span_id, request_id, parent_span_id, kind,'
                ' protocol, target, exe, pid, start_ns, end_ns) VALUES '
                '(?,?,?,?,?,?,?,?,?,?)',
                (i, r, p, kind, proto, target, exe, pid, t0, t1))
for r, (proto, method, target, status) in reqs.items():
    con.execute('INSERT INTO requests(request_id, protocol, method, target, '
                'status) VALUES (?,?,?,?,?)', (r, proto, method, target, status))
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

# expect CASE STATUS WRONG PATTERN [OPTIONS]: run the checker on CASE.
expect() {
	local case=$1 want_rc=$2 want_wrong=$3 pattern=$4 rc out
	shift 4
	rm -f "$T/$case.db"
	mkdb "$T/$case.db" "$case" || bp_fail "cannot build $case.db"
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
echo "PASS: tb-checker-selftest"
