#!/usr/bin/python3
"""check-testbed.py - compare the request paths bp-reconstruct wrote for a
real-server testbed with the ground truth tb-client wrote.

usage: check-testbed.py --truth FILE --db paths.db --label TEXT
                        [--front EXE] [--php EXE] [--py EXE] [--cgi EXE]
                        [--psql EXE] [--getent EXE] [--db-exe EXE]
                        [--report-only] [--explain N]

The truth file has one line per request, tab-separated: ID, KIND (php, py,
pyr, cgi, static), URL, then the operations the application reported in
the order it ran them: "sql TEXT", "name NAME ADDR" (a glibc lookup),
"pgconnect HOST" (libpq resolved the database host for a new connection).

A request is correct when its spans in the database are exactly these and
nothing else (EXE names are basenames of spans.exe):

  front   server http   target URL, the root of request R (no parent);
          the requests row R says protocol http, method GET, target URL,
          status 200
  static  nothing else in R; the front opened the file (files row in R)
  php     front client fastcgi (target URL) under the root; php-fpm
          server fastcgi (URL) under it
  py      front client http (URL) under the root; python server http (URL)
          under it
  pyr     first a front client dns span "r-ID.test" under the root, then
          the same as py
  cgi     front client fastcgi (URL) under the root; fcgiwrap server
          fastcgi (URL) under it; the CGI's work below it
  and for each operation, in the order the application ran them (by
  start time), under the application's server span:
  sql     a client postgresql span (the app; psql for cgi) with target
          TEXT, and a server postgresql span (postgres) with target TEXT
          under it
  name    a client dns span NAME (the app; getent for cgi)
  pgconnect  a client dns span HOST (the app)

Every span ended, and lies within its parent's time span.  No other span
in R; no span anywhere else (another request, or unattributed) carries
ID.  It prints one summary line per run, the first few wrong requests with
the reason (--explain N shows N of them with their spans), and exits 1
when any request is wrong (0 with --report-only), 2 when the inputs
cannot be read.
"""
import argparse
import os
import re
import sqlite3
import sys
from collections import defaultdict

SHOW_WRONG = 5
ID_RE = re.compile(r'q\d+x[0-9a-f]{6}')
KINDS = ('php', 'py', 'pyr', 'cgi', 'static')


def fatal(msg):
    print('check-testbed: ' + msg, file=sys.stderr)
    sys.exit(2)


class Truth:
    __slots__ = ('id', 'kind', 'url', 'ops')

    def __init__(self, rid, kind, url, ops):
        self.id, self.kind, self.url, self.ops = rid, kind, url, ops


def read_truth(path):
    truth, seen = [], set()
    try:
        with open(path) as f:
            for lineno, line in enumerate(f, 1):
                parts = line.rstrip('\n').split('\t')
                if len(parts) < 3 or parts[1] not in KINDS or \
                        not ID_RE.fullmatch(parts[0]):
                    fatal('%s:%d: expected "ID<tab>KIND<tab>URL[<tab>OP]...",'
                          ' got %r' % (path, lineno, line.rstrip('\n')))
                if parts[0] in seen:
                    fatal('%s:%d: id %s appears twice: the client must make '
                          'unique ids' % (path, lineno, parts[0]))
                seen.add(parts[0])
                ops = []
                for op in parts[3:]:
                    verb, _, arg = op.partition(' ')
                    if verb == 'sql' and arg:
                        ops.append(('postgresql', arg))
                    elif verb == 'name' and arg:
                        ops.append(('dns', arg.split(' ')[0]))
                    elif verb == 'pgconnect' and arg:
                        ops.append(('dns', arg))
                    else:
                        fatal('%s:%d: unknown operation %r' % (path, lineno,
                                                               op))
                truth.append(Truth(parts[0], parts[1], parts[2], ops))
    except OSError as e:
        fatal('cannot read the truth file %s: %s' % (path, e.strerror))
    if not truth:
        fatal('%s holds no request: nothing to check (did the client run?)'
              % path)
    return truth


class Span:
    __slots__ = ('span_id', 'request_id', 'parent', 'kind', 'protocol',
                 'name', 'target', 'host', 'pid', 'exe', 'start', 'end')

    def __init__(self, row):
        (self.span_id, self.request_id, self.parent, self.kind,
         self.protocol, self.name, self.target, self.host, self.pid, exe,
         self.start, self.end) = row
        self.exe = os.path.basename(exe) if exe else ''

    def __str__(self):
        return '%s %s span %d "%s" (%s[%s]) in request %s' % (
            self.kind, self.protocol, self.span_id, self.target,
            self.exe or '?', self.pid, self.request_id)


class Db:
    def __init__(self, path):
        if not os.path.exists(path):
            fatal('%s does not exist: did bp-reconstruct run?' % path)
        try:
            con = sqlite3.connect('file:%s?mode=ro' % path, uri=True)
            self.spans = {}
            self.by_req = defaultdict(list)
            self.by_id = defaultdict(list)
            for row in con.execute(
                    'SELECT span_id, request_id, parent_span_id, kind, '
                    'protocol, name, target, host, pid, exe, start_ns, '
                    'end_ns FROM spans'):
                s = Span(row)
                self.spans[s.span_id] = s
                self.by_req[s.request_id].append(s)
                for rid in set(ID_RE.findall(s.target or '')):
                    self.by_id[rid].append(s)
            self.reqs = {}
            for row in con.execute('SELECT request_id, protocol, method, '
                                   'target, status FROM requests'):
                self.reqs[row[0]] = row[1:]
            self.files = defaultdict(list)
            for rid, path, pid in con.execute(
                    'SELECT request_id, path, pid FROM files '
                    'WHERE request_id IS NOT NULL'):
                self.files[rid].append((path or '', pid))
            self.n_unattr = con.execute('SELECT count(*) FROM spans WHERE '
                                        'request_id IS NULL').fetchone()[0]
        except sqlite3.Error as e:
            fatal('%s: %s (it must have the tables of docs/schema.md)'
                  % (path, e))


class Checker:
    def __init__(self, db, exes):
        self.db = db
        self.x = exes

    def one(self, t):
        """None when request t is right, else the first reason."""
        db, x = self.db, self.x
        mine = db.by_id.get(t.id, [])
        roots = [s for s in mine if s.kind == 'server' and
                 s.protocol == 'http' and s.exe == x['front'] and
                 s.target == t.url]
        if len(roots) != 1:
            return 'found %d front server spans "%s" in %s (want 1)' % (
                len(roots), t.url, x['front'])
        root = roots[0]
        r = root.request_id
        if r is None:
            return 'the front server span is unattributed'
        if root.parent is not None:
            return 'the front server span has parent %s (want none: it is ' \
                   'the root)' % root.parent
        row = db.reqs.get(r)
        if row is None:
            return 'request %s of "%s" has no row in requests' % (r, t.url)
        if row != ('http', 'GET', t.url, 200):
            return 'requests row %s is %r, want %r' % (
                r, row, ('http', 'GET', t.url, 200))
        for s in mine:
            if s.request_id != r:
                return '%s, not in request %s' % (s, r)
        want = [root]               # every span R must hold
        used = {root.span_id}

        def take(cands, what, parent):
            """The earliest unused span of CANDS under PARENT."""
            got = sorted((s for s in cands if s.span_id not in used),
                         key=lambda s: (s.start or 0, s.span_id))
            if not got:
                return None, 'no %s' % what
            ok = [s for s in got if s.parent == parent.span_id]
            if not ok:
                return None, '%s has parent %s, want %d (%s)' % (
                    got[0], got[0].parent, parent.span_id, parent)
            s = ok[0]
            used.add(s.span_id)
            want.append(s)
            return s, None

        def pick(kind, proto, exe, target):
            return [s for s in db.by_req.get(r, ())
                    if s.kind == kind and s.protocol == proto and
                    s.exe == exe and s.target == target]

        app_server = None
        if t.kind == 'pyr':
            _, why = take(pick('client', 'dns', x['front'],
                               'r-%s.test' % t.id),
                          'front dns lookup r-%s.test' % t.id, root)
            if why:
                return why
        if t.kind != 'static':
            proto = 'http' if t.kind in ('py', 'pyr') else 'fastcgi'
            app = {'php': x['php'], 'py': x['py'], 'pyr': x['py'],
                   'cgi': x['cgi']}[t.kind]
            call, why = take(pick('client', proto, x['front'], t.url),
                             'front client %s span "%s"' % (proto, t.url),
                             root)
            if why:
                return why
            app_server, why = take(pick('server', proto, app, t.url),
                                   '%s server %s span "%s"' % (app, proto,
                                                               t.url), call)
            if why:
                return why
            if t.kind == 'pyr':
                dns = want[1]
                if dns.end is None or dns.end > call.start:
                    return 'the front dns lookup did not end before the ' \
                           'http call started'
            sql_exe = x['psql'] if t.kind == 'cgi' else app
            name_exe = x['getent'] if t.kind == 'cgi' else app
            seq = []
            for proto, target in t.ops:
                exe = sql_exe if proto == 'postgresql' else name_exe
                c, why = take(pick('client', proto, exe, target),
                              '%s client %s span "%s"' % (exe, proto,
                                                         target),
                              app_server)
                if why:
                    return why
                seq.append(c)
                if proto == 'postgresql':
                    _, why = take(pick('server', proto, x['db'], target),
                                  '%s server span "%s"' % (x['db'], target),
                                  c)
                    if why:
                        return why
            order = sorted(seq, key=lambda s: (s.start, s.span_id))
            if order != seq:
                return 'operations out of order: ran %s, spans start %s' % (
                    [s.target for s in seq], [s.target for s in order])
        else:
            name = t.url.split('?')[0].rsplit('/', 1)[-1]
            if not any(p.endswith('/' + name) and pid == root.pid
                       for p, pid in db.files.get(r, ())):
                return 'no files row in request %s: %s[%s] opening %s' % (
                    r, x['front'], root.pid, name)
        for s in db.by_req.get(r, ()):
            if s.span_id not in used:
                return 'request %s also holds %s' % (r, s)
        for s in want:
            if s.end is None or s.start is None:
                return '%s never ended' % s
            if s.parent is not None:
                p = db.spans.get(s.parent)
                if p.start > s.start or (p.end is not None and
                                         p.end < s.end):
                    return '%s [%d, %d] is not within its parent %s ' \
                           '[%d, %s]' % (s, s.start, s.end, p, p.start, p.end)
        return None

    def explain(self, t):
        mine = self.db.by_id.get(t.id, [])
        reqs = sorted({s.request_id for s in mine},
                      key=lambda v: (v is None, v or 0))
        print('    %s %s ops=%s' % (t.id, t.url, t.ops))
        for r in reqs:
            print('    request %s:' % r)
            for s in sorted(self.db.by_req.get(r, []),
                            key=lambda s: (s.start or 0, s.span_id)):
                print('      %s parent=%s [%s, %s]' % (s, s.parent, s.start,
                                                      s.end))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--truth', required=True)
    ap.add_argument('--db', required=True)
    ap.add_argument('--label', default='run')
    ap.add_argument('--front', default='nginx')
    ap.add_argument('--php', default='php-fpm8.2')
    ap.add_argument('--py', default='python3.11')
    ap.add_argument('--cgi', default='fcgiwrap')
    ap.add_argument('--psql', default='psql')
    ap.add_argument('--getent', default='getent')
    ap.add_argument('--db-exe', default='postgres')
    ap.add_argument('--report-only', action='store_true')
    ap.add_argument('--explain', type=int, default=0)
    a = ap.parse_args()

    truth = read_truth(a.truth)
    db = Db(a.db)
    ck = Checker(db, {'front': a.front, 'php': a.php, 'py': a.py,
                      'cgi': a.cgi, 'psql': a.psql, 'getent': a.getent,
                      'db': a.db_exe})
    wrong = []
    per_kind = defaultdict(lambda: [0, 0])
    for t in truth:
        why = ck.one(t)
        per_kind[t.kind][0] += 1
        if why:
            wrong.append((t, why))
        else:
            per_kind[t.kind][1] += 1
    known = {t.id for t in truth}
    extra = sum(1 for row in db.reqs.values()
                if not (set(ID_RE.findall(row[2] or '')) & known))
    total = len(truth)
    correct = total - len(wrong)
    kinds = ' '.join('%s %d/%d' % (k, v[1], v[0])
                     for k, v in sorted(per_kind.items()))
    print('%s: requests %d correct %d wrong %d precision %.2f%% [%s] '
          '(db: %d requests, %d not from the client; %d spans, %d '
          'unattributed)' % (a.label, total, correct, len(wrong),
                              100.0 * correct / total, kinds, len(db.reqs),
                              extra, len(db.spans), db.n_unattr))
    for t, why in wrong[:SHOW_WRONG]:
        print('  wrong %s (%s): %s' % (t.id, t.kind, why))
    if len(wrong) > SHOW_WRONG:
        print('  ... and %d more' % (len(wrong) - SHOW_WRONG))
    for t, _ in wrong[:a.explain]:
        ck.explain(t)
    if wrong and not a.report_only:
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
