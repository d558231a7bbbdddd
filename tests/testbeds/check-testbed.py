#!/usr/bin/python3
"""check-testbed.py - compare the request paths bp-reconstruct wrote for a
real-server testbed with the ground truth tb-client wrote.

usage: check-testbed.py --truth FILE --db paths.db --label TEXT
                        [--front EXE] [--php EXE] [--py EXE] [--cgi EXE]
                        [--psql EXE] [--getent EXE] [--db-exe EXE]
                        [--shape front|app] [--client EXE] [--via EXE]
                        [--backend EXE] [--redis EXE] [--front-proto P]
                        [--app-proto P] [--method M]
                        [--certainty] [--report-only] [--explain N]

The truth file has one line per request, tab-separated: ID, KIND (php, py,
pyr, cgi, static), URL, then the operations the application reported in
the order it ran them: "sql TEXT", "name NAME ADDR" (a glibc lookup),
"pgconnect HOST" (libpq resolved the database host for a new connection),
"mysql TEXT" and "mysqlprep TEXT" (a MySQL statement run or prepared,
--shape app: a client mysql span of the app, the database's server span
under it),
"lookup HOST" (the application resolved HOST, an address too, to open a
connection to its backend, --shape app),
"call PATH" (the application called its backend, --shape app),
"redis TARGET" (a Redis command, "GET tb:ID:a", "MULTI", --shape app).

A request is correct when its spans in the database are exactly these and
nothing else (EXE names are basenames of spans.exe):

  front   server http   target URL, the root of request R (no parent);
          the requests row R says protocol http (--front-proto: http2
          for a front read as HTTP/2), method GET (--method), target URL,
          status 200
  static  nothing else in R; the front opened the file (files row in R)
  php     front client fastcgi (target URL) under the root; php-fpm
          server fastcgi (URL) under it
  py      front client http (URL) under the root; python server http (URL)
          under it (--app-proto: another protocol for both, http2 for
          gRPC)
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
  lookup  a client dns span HOST (the app, --shape app)

Every span ended, and lies within its parent's time span.  No other span
in R; no span anywhere else (another request, or unattributed) carries
ID.  --shape app checks applications that are their own front (node,
aiohttp, the JDK's server) and, with --client, traced clients: see
AppChecker.

Certainty (the contract of docs/accuracy.md): each request is classified
exact-right, resolved-right, resolved-WRONG, uncertain or silently-WRONG
from whether its path is right and the label requests.certainty gives
the request holding its root (without that column every request counts
as exact; with no root found, uncertain when a span carrying its id is).
A second line per run gives the five counts and the share right
(exact-right + resolved-right).

It prints one summary line per run and the certainty line, the first few
wrong requests with the reason (--explain N shows N of them with their
spans), and exits 1 when any request is wrong, or with --certainty only
when one is silently-WRONG or resolved-WRONG (0 with --report-only), 2
when the inputs cannot be read.
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
                    elif verb in ('mysql', 'mysqlprep') and arg:
                        ops.append(('mysql', arg))
                    elif verb == 'name' and arg:
                        ops.append(('dns', arg.split(' ')[0]))
                    elif verb in ('pgconnect', 'lookup') and arg:
                        ops.append(('dns', arg))
                    elif verb == 'call' and arg:
                        ops.append(('http', arg))
                    elif verb == 'redis' and arg:
                        ops.append(('redis', arg))
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
            self.read_certainty(con, path)
            self.files = defaultdict(list)
            for rid, path, pid in con.execute(
                    'SELECT request_id, path, pid FROM files '
                    'WHERE request_id IS NOT NULL'):
                self.files[rid].append((path or '', pid))
            self.n_unattr = con.execute('SELECT count(*) FROM spans WHERE '
                                        'request_id IS NULL').fetchone()[0]
            # programs bp-logd named as doing their network I/O past
            # libc (docs/accuracy.md): every testbed program goes through
            # libc, so any row is a wrongly named program
            self.untraced = []
            if con.execute("SELECT count(*) FROM sqlite_master WHERE "
                           "name = 'untraced_programs'").fetchone()[0]:
                self.untraced = con.execute(
                    'SELECT exe, pid, examples FROM untraced_programs'
                ).fetchall()
            # events the tracers could not record (DROP records: a
            # call re-entered the shim, a full ring): printed; a loss that
            # could cost a path makes its request uncertain ('lost-events',
            # docs/reconstruct.md), which the checks of the paths catch
            stats = {}
            if con.execute("SELECT count(*) FROM sqlite_master WHERE "
                           "name = 'stats'").fetchone()[0]:
                stats = dict(con.execute('SELECT key, value FROM stats'))
            self.lost = (int(stats.get('dropped_by_tracer', 0) or 0),
                         int(stats.get('lost_records', 0) or 0))
        except sqlite3.Error as e:
            fatal('%s: %s (it must have the tables of docs/schema.md)'
                  % (path, e))


    def read_certainty(self, con, path):
        """requests.certainty and spans.certainty (the certainty contract,
        docs/accuracy.md), when the database has them: self.has_certainty,
        self.req_cert {request: label}, self.span_cert {span: label}.
        Without the columns every request counts as 'exact'."""
        def columns(table):
            return {r[1] for r in con.execute('PRAGMA table_info(%s)'
                                              % table)}
        self.has_certainty = 'certainty' in columns('requests')
        self.req_cert, self.span_cert = {}, {}
        if not self.has_certainty:
            return
        for rid, label in con.execute('SELECT request_id, certainty '
                                      'FROM requests'):
            if label not in CERTAINTIES:
                fatal('%s: request %s has certainty %r (want one of %s)'
                      % (path, rid, label, ', '.join(CERTAINTIES)))
            self.req_cert[rid] = label
        if 'certainty' in columns('spans'):
            for sid, label in con.execute('SELECT span_id, certainty '
                                          'FROM spans'):
                if label not in CERTAINTIES:
                    fatal('%s: span %s has certainty %r (want one of %s)'
                          % (path, sid, label, ', '.join(CERTAINTIES)))
                self.span_cert[sid] = label

    def label(self, rid, root_req):
        """The certainty the database gives truth request RID whose root
        is in request ROOT_REQ (None: no root found): that request's
        label; without one, 'uncertain' when a span carrying RID is
        uncertain or in an uncertain request, else 'exact' (nothing warns
        the reader)."""
        if not self.has_certainty:
            return 'exact'
        if root_req is not None and root_req in self.req_cert:
            return self.req_cert[root_req]
        for s in self.by_id.get(rid, ()):
            if self.span_cert.get(s.span_id) == 'uncertain' or \
                    self.req_cert.get(s.request_id) == 'uncertain':
                return 'uncertain'
        return 'exact'


CERTAINTIES = ('exact', 'resolved', 'uncertain')
CLASSES = ('exact-right', 'resolved-right', 'resolved-WRONG', 'uncertain',
           'silently-WRONG')


def classify(right, label):
    """One of CLASSES for a request whose path is RIGHT (bool) and that
    the database labels LABEL."""
    if label == 'uncertain':
        return 'uncertain'
    if label == 'resolved':
        return 'resolved-right' if right else 'resolved-WRONG'
    return 'exact-right' if right else 'silently-WRONG'


class Walk:
    """The spans of one request R taken one by one as the truth wants
    them (take), then checked for leftovers and nesting (finish)."""

    def __init__(self, db, r, root):
        self.db, self.r = db, r
        self.want = [root]
        self.used = {root.span_id}

    def pick(self, kind, proto, exe, target):
        return [s for s in self.db.by_req.get(self.r, ())
                if s.kind == kind and s.protocol == proto and
                s.exe == exe and s.target == target]

    def take(self, cands, what, parent):
        """The earliest unused span of CANDS under PARENT."""
        got = sorted((s for s in cands if s.span_id not in self.used),
                     key=lambda s: (s.start or 0, s.span_id))
        if not got:
            return None, 'no %s' % what
        ok = [s for s in got if s.parent == parent.span_id]
        if not ok:
            return None, '%s has parent %s, want %d (%s)' % (
                got[0], got[0].parent, parent.span_id, parent)
        s = ok[0]
        self.used.add(s.span_id)
        self.want.append(s)
        return s, None

    def finish(self):
        """None when R holds nothing else and every span taken ended
        within its parent, else the reason."""
        db, r = self.db, self.r
        for s in db.by_req.get(r, ()):
            if s.span_id not in self.used:
                return 'request %s also holds %s' % (r, s)
        for s in self.want:
            if s.end is None or s.start is None:
                return '%s never ended' % s
            if s.parent is not None:
                p = db.spans.get(s.parent)
                if p.start > s.start or (p.end is not None and
                                         p.end < s.end):
                    return '%s [%d, %d] is not within its parent %s ' \
                           '[%d, %s]' % (s, s.start, s.end, p, p.start,
                                         p.end)
        return None


def in_order(seq):
    """None when the spans SEQ (in the order the application ran them)
    start in that order, else the reason."""
    order = sorted(seq, key=lambda s: (s.start, s.span_id))
    if order != seq:
        return 'operations out of order: ran %s, spans start %s' % (
            [s.target for s in seq], [s.target for s in order])
    return None


class Checker:
    def __init__(self, db, exes):
        self.db = db
        self.x = exes

    def one(self, t):
        """None when request t is right, else the first reason; sets
        self.req to the request holding t's root (None: not found)."""
        db, x = self.db, self.x
        self.req = None
        mine = db.by_id.get(t.id, [])
        roots = [s for s in mine if s.kind == 'server' and
                 s.protocol == x['front_proto'] and s.exe == x['front'] and
                 s.target == t.url]
        if len(roots) != 1:
            return 'found %d front server spans "%s" in %s (want 1)' % (
                len(roots), t.url, x['front'])
        root = roots[0]
        r = self.req = root.request_id
        if r is None:
            return 'the front server span is unattributed'
        if root.parent is not None:
            return 'the front server span has parent %s (want none: it is ' \
                   'the root)' % root.parent
        row = db.reqs.get(r)
        if row is None:
            return 'request %s of "%s" has no row in requests' % (r, t.url)
        want = (x['front_proto'], x['method'], t.url, 200)
        if row != want:
            return 'requests row %s is %r, want %r' % (r, row, want)
        for s in mine:
            if s.request_id != r:
                return '%s, not in request %s' % (s, r)
        w = Walk(db, r, root)
        take, pick = w.take, w.pick
        app_server = None
        if t.kind == 'pyr':
            _, why = take(pick('client', 'dns', x['front'],
                               'r-%s.test' % t.id),
                          'front dns lookup r-%s.test' % t.id, root)
            if why:
                return why
        if t.kind != 'static':
            proto = x['app_proto'] if t.kind in ('py', 'pyr') else 'fastcgi'
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
                dns = w.want[1]
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
            why = in_order(seq)
            if why:
                return why
        else:
            name = t.url.split('?')[0].rsplit('/', 1)[-1]
            if not any(p.endswith('/' + name) and pid == root.pid
                       for p, pid in db.files.get(r, ())):
                return 'no files row in request %s: %s[%s] opening %s' % (
                    r, x['front'], root.pid, name)
        return w.finish()

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


class AppChecker(Checker):
    """--shape app: the application server is the front (no web server
    before it), or, with --client EXE, a traced client is.  Request t is
    right when its spans are exactly:

      root     --client: the client's client http span (URL, no parent),
               the app's server http span (URL) under it (with --via EXE:
               EXE's server http span under the client's, EXE's client
               http span under that, then the app's); else the app's
               server http span (URL, no parent); the requests row says
               http, GET, URL, status 200 (with --client: status 200 or
               none)
      sql      a client postgresql span of the app (TEXT) under the app's
               server span, the database's server span (TEXT) under it
      call     a client http span of the app (PATH) under the app's
               server span, the backend's server http span (PATH) under
               it (--backend EXE)
      lookup   a client dns span of the app (HOST) under the app's
               server span
      redis    a client redis span of the app (TARGET) under the app's
               server span, the Redis server's server span (TARGET)
               under it (--redis EXE)
    in the order the app ran them; every span ended, within its parent;
    nothing else in the request; no span elsewhere carries the id."""

    def one(self, t):
        db, x = self.db, self.x
        self.req = None
        mine = db.by_id.get(t.id, [])
        top = x['client'] or x['py']
        kind = 'client' if x['client'] else 'server'
        roots = [s for s in mine if s.kind == kind and
                 s.protocol == 'http' and s.exe == top and
                 s.target == t.url]
        if len(roots) != 1:
            return 'found %d %s http spans "%s" of %s (want 1)' % (
                len(roots), kind, t.url, top)
        root = roots[0]
        r = self.req = root.request_id
        if r is None:
            return 'the %s span of %s is unattributed' % (kind, top)
        if root.parent is not None:
            return 'the %s span of %s has parent %s (want none: it is ' \
                   'the root)' % (kind, top, root.parent)
        row = db.reqs.get(r)
        if row is None:
            return 'request %s of "%s" has no row in requests' % (r, t.url)
        if row[:3] != ('http', 'GET', t.url) or \
                row[3] not in ((200, None) if x['client'] else (200,)):
            return 'requests row %s is %r, want %r' % (
                r, row, ('http', 'GET', t.url, 200))
        for s in mine:
            if s.request_id != r:
                return '%s, not in request %s' % (s, r)
        w = Walk(db, r, root)
        app_server = root
        if x['client']:
            up = root
            if x['via']:            # the client -> a web server -> the app
                front, why = w.take(w.pick('server', 'http', x['via'],
                                           t.url),
                                    '%s server http span "%s"' % (
                                        x['via'], t.url), root)
                if why:
                    return why
                up, why = w.take(w.pick('client', 'http', x['via'], t.url),
                                 '%s client http span "%s"' % (
                                     x['via'], t.url), front)
                if why:
                    return why
            app_server, why = w.take(w.pick('server', 'http', x['py'], t.url),
                                     '%s server http span "%s"' % (
                                         x['py'], t.url), up)
            if why:
                return why
        seq = []
        for proto, target in t.ops:
            if proto in ('postgresql', 'mysql'):
                far, far_exe = 'the database', x['db']
            elif proto == 'http':
                far, far_exe = 'the backend', x['backend']
            elif proto == 'redis':
                far, far_exe = 'the Redis server', x['redis']
            elif proto == 'dns':
                far = far_exe = None
            else:
                return 'operation %s %s: the app shape knows sql, call, ' \
                       'lookup and redis' % (proto, target)
            c, why = w.take(w.pick('client', proto, x['py'], target),
                            '%s client %s span "%s"' % (x['py'], proto,
                                                       target), app_server)
            if why:
                return why
            seq.append(c)
            if far is None:
                continue
            _, why = w.take(w.pick('server', proto, far_exe, target),
                            '%s server %s span "%s" (%s)' % (
                                far_exe, proto, target, far), c)
            if why:
                return why
        return in_order(seq) or w.finish()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--truth', required=True)
    ap.add_argument('--db', required=True)
    ap.add_argument('--label', default='run')
    ap.add_argument('--front', default='nginx')
    ap.add_argument('--front-proto', default='http')
    ap.add_argument('--app-proto', default='http')
    ap.add_argument('--method', default='GET')
    ap.add_argument('--php', default='php-fpm8.2')
    ap.add_argument('--py', default='python3.11')
    ap.add_argument('--cgi', default='fcgiwrap')
    ap.add_argument('--psql', default='psql')
    ap.add_argument('--getent', default='getent')
    ap.add_argument('--db-exe', default='postgres')
    ap.add_argument('--shape', choices=('front', 'app'), default='front')
    ap.add_argument('--client', default='')
    ap.add_argument('--backend', default='')
    ap.add_argument('--via', default='')
    ap.add_argument('--redis', default='redis-server')
    ap.add_argument('--certainty', action='store_true')
    ap.add_argument('--report-only', action='store_true')
    ap.add_argument('--explain', type=int, default=0)
    a = ap.parse_args()

    truth = read_truth(a.truth)
    db = Db(a.db)
    cls = AppChecker if a.shape == 'app' else Checker
    ck = cls(db, {'front': a.front, 'php': a.php, 'py': a.py,
                  'cgi': a.cgi, 'psql': a.psql, 'getent': a.getent,
                  'db': a.db_exe, 'client': a.client,
                  'backend': a.backend, 'via': a.via,
                  'redis': a.redis, 'front_proto': a.front_proto,
                  'app_proto': a.app_proto, 'method': a.method})
    wrong = []
    per_kind = defaultdict(lambda: [0, 0])
    counts = dict.fromkeys(CLASSES, 0)
    cls_of = {}
    for t in truth:
        why = ck.one(t)
        c = classify(why is None, db.label(t.id, ck.req))
        counts[c] += 1
        cls_of[t.id] = c
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
    print('%s: certainty %s right %.2f%% (labels: %s)' % (
        a.label, ' '.join('%s %d' % (c, counts[c]) for c in CLASSES),
        100.0 * (counts['exact-right'] + counts['resolved-right']) / total,
        'requests.certainty' if db.has_certainty else
        'no certainty column, every request counts as exact'))
    print('%s: programs named as not traced (network I/O past libc): %s'
          % (a.label, ', '.join('%s[%d] (%s)' % r for r in db.untraced)
             or 'none'))
    print('%s: events the tracers could not record: %d, records lost: %d'
          % ((a.label,) + db.lost))
    for t, why in wrong[:SHOW_WRONG]:
        print('  wrong %s (%s, %s): %s' % (t.id, t.kind, cls_of[t.id], why))
    if len(wrong) > SHOW_WRONG:
        print('  ... and %d more' % (len(wrong) - SHOW_WRONG))
    for t, _ in wrong[:a.explain]:
        ck.explain(t)
    if db.untraced:
        print('%s: FAIL: a testbed program named as not traced' % a.label)
        return 1
    if a.report_only:
        return 0
    if a.certainty:
        bad = counts['silently-WRONG'] + counts['resolved-WRONG']
        return 1 if bad else 0
    return 1 if wrong else 0


if __name__ == '__main__':
    sys.exit(main())
