#!/usr/bin/python3
"""clickhouse-join-check.py - the join of host-local runs in ClickHouse
(the join_* views of docs/clickhouse.md) against bp-reconstruct --join of
the same databases (tests/report/clickhouse-join.sh).

  clickhouse-join-check.py create HTTP DATABASE DOC
      run every statement of the ```sql blocks of DOC (docs/clickhouse.md)
      that makes a join_* table or view ("bp." replaced by DATABASE).
  clickhouse-join-check.py DB HTTP DATABASE JOINED
      one line per span from both: the span (kind, protocol, target, host,
      exe, certainty, start and end on the joined clocks, reason), its parent's
      (kind, target, host, start) and its request's (the root request's
      target and start); the lines compared as multisets; then each
      request's tree (its spans' lines nested under their parents)
      compared as multisets; then the requests (join_requests against
      the requests table: target, times, spans, certainty, the set of
      reasons).  Prints the counts.
"""
import sqlite3
import sys

sys.path.insert(0, __file__.rsplit('/', 1)[0])
import importlib.util
spec = importlib.util.spec_from_file_location(
    'chk', __file__.rsplit('/', 1)[0] + '/clickhouse-check.py')
chk = importlib.util.module_from_spec(spec)
spec.loader.exec_module(chk)


def dec(v):
    return None if v is None else v.decode('utf-8', 'surrogateescape')


def num(v):
    return None if v is None else int(v)


def lines(spans, reqs):
    """SPANS: {key: (parent_key, request_key, kind, protocol, target, host,
    exe, certainty, start, end, reason)}; REQS: {request_key: (target, start)}.
    The span lines, and the request trees."""
    out, kids, byreq = {}, {}, {}
    for k, s in spans.items():
        p = spans.get(s[0]) if s[0] is not None else None
        r = reqs.get(s[1]) if s[1] is not None else None
        out[k] = ' '.join(str(x) for x in s[2:]) + ' <- ' + (
            'root' if p is None else '%s %s %s %s' % (p[2], p[4], p[5], p[8])) + \
            ' in ' + ('-' if r is None else '%s %s' % r)
        kids.setdefault(s[0], []).append(k)
        byreq.setdefault(s[1], []).append(k)

    def tree(k):
        return '(' + out[k] + ''.join(sorted(tree(c) for c in kids.get(k, []))) + ')'
    trees = []
    for r, ks in byreq.items():
        tops = [k for k in ks if spans[k][0] is None or spans[spans[k][0]][1] != r]
        trees.append(''.join(sorted(tree(k) for k in tops)))
    return sorted(out.values()), sorted(trees)


def main(path, http, database, joined):
    db = chk.sqlite_db(path)
    sspans = {r[0]: r[1:] for r in db.execute(
        'SELECT span_id, parent_span_id, request_id, kind, protocol, target,'
        ' host, exe, certainty, start_ns, end_ns, certainty_reason FROM spans')}
    sreqs = {r[0]: r[1:] for r in db.execute(
        'SELECT request_id, target, start_ns FROM requests')}
    cspans, creqs = {}, {}
    for r in chk.ch_rows(http,
            "SELECT run, span_id, parent_run, parent_span_id, request_run,"
            " global_request_id, kind, protocol, target, host, exe, certainty,"
            " start_ns, end_ns, certainty_reason FROM `%s`.join_spans"
            " WHERE joined = '%s'"
            % (database, joined)):
        k = (dec(r[0]), int(r[1]))
        par = None if r[3] is None else (dec(r[2]), int(r[3]))
        req = None if r[5] is None else (dec(r[4]), int(r[5]))
        cspans[k] = (par, req, dec(r[6]), dec(r[7]), dec(r[8]), dec(r[9]),
                     dec(r[10]), dec(r[11]), num(r[12]), num(r[13]), dec(r[14]))
    for r in chk.ch_rows(http,
            "SELECT run, request_id, target, start_ns + offset_ns FROM"
            " (SELECT run, request_id, target, start_ns FROM `%s`.requests FINAL)"
            " ALL INNER JOIN (SELECT run, offset_ns FROM `%s`.join_clocks"
            " WHERE joined = '%s') USING (run)" % (database, database, joined)):
        creqs[(dec(r[0]), int(r[1]))] = (dec(r[2]), num(r[3]))
    a, ta = lines(sspans, sreqs)
    b, tb = lines(cspans, creqs)
    if a != b:
        sa, sb = set(a), set(b)
        sys.exit('clickhouse-join-check: %d spans from --join, %d from ClickHouse;'
                 ' only in --join: %r; only in ClickHouse: %r' %
                 (len(a), len(b), sorted(sa - sb)[:3], sorted(sb - sa)[:3]))
    if ta != tb:
        sys.exit('clickhouse-join-check: the request trees differ (%d from --join, %d from ClickHouse): %r'
                 % (len(ta), len(tb), sorted(set(ta) ^ set(tb))[:2]))
    nspans = {}
    for sp in sspans.values():
        nspans[sp[1]] = nspans.get(sp[1], 0) + 1
    def why(w):
        return ','.join(sorted(set(w.split(',')))) if w else None
    ra = sorted(((r[0], r[1], r[2], nspans.get(k, 0), r[3], why(r[4])) for k, r in
                 ((r[0], r[1:]) for r in db.execute(
                     'SELECT request_id, target, start_ns, end_ns, certainty,'
                     ' certainty_reason FROM requests'))), key=repr)
    rb = sorted(((dec(r[0]), num(r[1]), num(r[2]), int(r[3]), dec(r[4]), why(dec(r[5])))
                 for r in chk.ch_rows(http,
                     "SELECT target, start_ns, end_ns, spans, certainty,"
                     " certainty_reason FROM `%s`.join_requests WHERE joined = '%s'"
                     % (database, joined))), key=repr)
    ra = [tuple(x) for x in ra]
    if ra != rb:
        sys.exit('clickhouse-join-check: the requests differ (%d from --join, %d in join_requests): %r'
                 % (len(ra), len(rb), sorted(set(ra) ^ set(rb), key=repr)[:3]))
    unc = sum(1 for s in sspans.values() if s[7] == 'uncertain')
    print('clickhouse-join-check: %d spans, %d request trees and %d requests equal (%d spans uncertain, %d requests)'
          % (len(a), len(ta), len(ra), unc, sum(1 for r in ra if r[4] == 'uncertain')))


def create(http, database, doc):
    import re
    text = open(doc).read()
    blocks = re.findall(r'```sql\n(.*?)```', text, re.S)
    stmts = [s.strip().rstrip(';') for b in blocks for s in b.split(';\n')
             if s.strip()]
    n = 0
    for st in stmts:
        w = st.split()
        if len(w) < 3 or w[0] != 'CREATE':
            continue
        name = w[5] if w[1] == 'TABLE' and w[2] == 'IF' else w[2]
        if not name.startswith('bp.join_'):
            continue
        if w[1] == 'VIEW':
            chk.ch(http, 'DROP TABLE IF EXISTS `%s`.`%s`' % (database, name[3:]))
        chk.ch(http, st.replace('bp.', '`%s`.' % database))
        n += 1
    if n < 10:
        sys.exit('clickhouse-join-check: only %d join_* statements in %s' % (n, doc))
    print('clickhouse-join-check: %d join_* tables and views created' % n)


if __name__ == '__main__':
    if len(sys.argv) == 5 and sys.argv[1] == 'create':
        create(*sys.argv[2:])
        sys.exit(0)
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
