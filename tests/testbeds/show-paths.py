#!/usr/bin/python3
"""show-paths.py - print request paths from a bp-reconstruct database as
indented trees, then summary counts.

usage: show-paths.py paths.db [--requests N] [--like PATTERN] [--no-summary]

For each of the first N requests (default 4) whose target matches PATTERN
(SQL LIKE, default: any), one line for the request (id, method, target,
status, duration, client), then its spans, each under its parent: kind,
protocol, process (exe[pid] on host), target, duration.  Then the counts
the database answers for the whole run: requests per protocol and status,
spans per kind and protocol, what is left unattributed, the queries per
request, the statements repeated within a request and the slowest
requests (docs/schema.md: tables requests, spans; views
queries_per_request, repeated_queries, slowest_requests, unattributed).
"""
import argparse
import os
import sqlite3
import sys


def ms(a, b):
    if a is None or b is None:
        return '      open'
    return '%8.3f ms' % ((b - a) / 1e6)


def cut(s, n):
    s = (s or '').replace('\n', ' ')
    return s if len(s) <= n else s[:n - 3] + '...'


def tree(con, rid):
    spans = con.execute(
        'SELECT span_id, parent_span_id, kind, protocol, exe, pid, host, '
        'target, status, start_ns, end_ns FROM spans WHERE request_id = ? '
        'ORDER BY start_ns, span_id', (rid,)).fetchall()
    kids = {}
    ids = {s[0] for s in spans}
    for s in spans:
        p = s[1] if s[1] in ids else None
        kids.setdefault(p, []).append(s)

    def show(parent, depth):
        for s in kids.get(parent, []):
            sid, _, kind, proto, exe, pid, host, target, status, t0, t1 = s
            who = '%s[%s]@%s' % (os.path.basename(exe or '?'), pid, host)
            st = '' if status is None else ' -> %s' % status
            line = '  %s%-6s %-10s %-26s %s%s' % (
                '  ' * depth, kind, proto, who, cut(target, 60), st)
            print('%-118s %s' % (line, ms(t0, t1)))
            show(sid, depth + 1)
    show(None, 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('db')
    ap.add_argument('--requests', type=int, default=4)
    ap.add_argument('--like', default='%')
    ap.add_argument('--no-summary', action='store_true')
    a = ap.parse_args()
    if not os.path.exists(a.db):
        sys.exit('show-paths: %s does not exist' % a.db)
    con = sqlite3.connect('file:%s?mode=ro' % a.db, uri=True)

    rows = con.execute(
        'SELECT request_id, method, target, status, start_ns, end_ns, client '
        'FROM requests WHERE target LIKE ? ORDER BY start_ns LIMIT ?',
        (a.like, a.requests)).fetchall()
    for rid, method, target, status, t0, t1, client in rows:
        print('request %s: %s %s -> %s  %s  from %s' % (
            rid, method or '', target, status, ms(t0, t1).strip(), client))
        tree(con, rid)
        print()
    if a.no_summary:
        return 0

    print('requests per protocol and status:')
    for row in con.execute('SELECT protocol, status, count(*) FROM requests '
                           'GROUP BY 1, 2 ORDER BY 3 DESC'):
        print('  %-12s %-6s %6d' % row)
    print('spans per kind and protocol:')
    for row in con.execute('SELECT kind, protocol, count(*), '
                           'round(avg(end_ns - start_ns) / 1e6, 3) FROM spans '
                           'GROUP BY 1, 2 ORDER BY 3 DESC'):
        print('  %-6s %-12s %6d  avg %s ms' % row)
    print('unattributed (fragments, messages, files, spans):')
    for row in con.execute('SELECT * FROM unattributed'):
        print('  ' + '  '.join(str(v) for v in row))
    print('queries per request (distribution):')
    for row in con.execute(
            'SELECT n, count(*) FROM (SELECT count(s.span_id) AS n '
            'FROM requests r LEFT JOIN spans s ON s.request_id = r.request_id '
            "AND s.kind = 'client' AND s.protocol = 'postgresql' "
            'GROUP BY r.request_id) GROUP BY n ORDER BY n'):
        print('  %2d SQL statements: %d requests' % row)
    print('statements repeated within one request (first 5):')
    cols = [d[1] for d in con.execute('PRAGMA table_info(repeated_queries)')]
    for row in con.execute('SELECT * FROM repeated_queries LIMIT 5'):
        d = dict(zip(cols, row))
        print('  ' + '  '.join('%s=%s' % (k, cut(str(v), 60))
                               for k, v in d.items()))
    print('slowest requests:')
    for row in con.execute('SELECT request_id, target, duration_ns / 1e6 '
                           'FROM slowest_requests LIMIT 3'):
        print('  %s %-50s %.3f ms' % (row[0], cut(row[1], 50), row[2] or 0))
    return 0


if __name__ == '__main__':
    sys.exit(main())
