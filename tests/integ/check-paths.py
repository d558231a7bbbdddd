#!/usr/bin/python3
"""check-paths.py - compare the request paths bp-reconstruct wrote with the
ground truth ex-client wrote.

usage: check-paths.py --truth FILE --db paths.db --label TEXT
                      [--front-exe NAME] [--backend-exe NAME] [--report-only]

The truth file has one line "<id> <ncalls>" per request the client sent.
A request is correct when, in the database:
  - exactly one front server span has target "REQ <id> <n>", and its
    request_id R names a row of `requests` whose target is that line;
  - exactly one client span "REQ <id> <n>" (ex-client's) exists, in R;
  - for every k in 0..n-1 exactly one client span "CALL <id> k" (the
    front's, exe --front-exe) and exactly one server span "CALL <id> k"
    (the backend's, exe --backend-exe) exist, both in R;
  - no other span carries <id> (no CALL with k >= n, no duplicates), and
    R holds no span that carries another request's id.
It prints one summary line per run, the first few wrong ids with the
reason, and exits 1 when any request is wrong (0 with --report-only),
2 when the inputs cannot be read.
"""
import argparse
import os
import re
import sqlite3
import sys
from collections import defaultdict

SHOW_WRONG = 5
LINE_RE = re.compile(r'^(REQ|CALL) (\S+) (\d+)$')


def fatal(msg):
    print('check-paths: ' + msg, file=sys.stderr)
    sys.exit(2)


def read_truth(path):
    truth = []
    seen = set()
    try:
        with open(path) as f:
            for lineno, line in enumerate(f, 1):
                parts = line.split()
                if len(parts) != 2 or not parts[1].isdigit():
                    fatal('%s:%d: expected "<id> <ncalls>", got %r'
                          % (path, lineno, line.rstrip('\n')))
                if parts[0] in seen:
                    fatal('%s:%d: id %s appears twice: the client must '
                          'make unique ids' % (path, lineno, parts[0]))
                seen.add(parts[0])
                truth.append((parts[0], int(parts[1])))
    except OSError as e:
        fatal('cannot read the truth file %s: %s' % (path, e.strerror))
    if not truth:
        fatal('%s holds no request: nothing to check (did the client run?)'
              % path)
    return truth


class Span:
    __slots__ = ('span_id', 'request_id', 'kind', 'verb', 'id', 'num',
                 'target', 'exe')

    def __init__(self, row, m):
        self.span_id, self.request_id, self.kind, self.target, exe = row
        self.verb, self.id, self.num = m.group(1), m.group(2), int(m.group(3))
        self.exe = os.path.basename(exe) if exe else ''

    def __str__(self):
        return '%s span "%s" (%s) in request %s' % (
            self.kind, self.target, self.exe or '?', self.request_id)


def load(db):
    if not os.path.exists(db):
        fatal('%s does not exist: did bp-reconstruct run?' % db)
    try:
        con = sqlite3.connect('file:%s?mode=ro' % db, uri=True)
        rows = con.execute(
            "SELECT span_id, request_id, kind, target, exe FROM spans "
            "WHERE target LIKE 'REQ %' OR target LIKE 'CALL %'").fetchall()
        reqs = dict(con.execute(
            'SELECT request_id, target FROM requests').fetchall())
        n_spans = con.execute('SELECT count(*) FROM spans').fetchone()[0]
        n_unattr = con.execute('SELECT count(*) FROM spans '
                               'WHERE request_id IS NULL').fetchone()[0]
        cols = [r[1] for r in con.execute('PRAGMA table_info(requests)')]
        certainty = dict(con.execute(
            'SELECT request_id, certainty FROM requests').fetchall()) \
            if 'certainty' in cols else {}
    except sqlite3.Error as e:
        fatal('%s: %s (it must have the tables of docs/schema.md)' % (db, e))
    by_id = defaultdict(list)
    by_req = defaultdict(list)
    for row in rows:
        m = LINE_RE.match(row[3] or '')
        if not m:
            continue
        s = Span(row, m)
        by_id[s.id].append(s)
        by_req[s.request_id].append(s)
    return by_id, by_req, reqs, n_spans, n_unattr, certainty


def check_one(rid, n, by_id, by_req, reqs, front_exe, backend_exe):
    """Return None when request rid is right, else the first reason."""
    line = 'REQ %s %d' % (rid, n)
    mine = by_id.get(rid, [])
    front = [s for s in mine if s.verb == 'REQ' and s.kind == 'server']
    if len(front) != 1:
        return 'found %d front server spans "%s" (want 1)' % (len(front), line)
    f = front[0]
    r = f.request_id
    if r is None:
        return 'the front server span "%s" belongs to no request' % line
    if front_exe and f.exe and f.exe != front_exe:
        return 'the server span "%s" is in %s, not %s' % (line, f.exe,
                                                           front_exe)
    if f.target != line:
        return 'the front server span says "%s", the client sent "%s"' % (
            f.target, line)
    if r not in reqs:
        return 'request %s of "%s" has no row in requests' % (r, line)
    if reqs[r] != line:
        return 'requests row %s has target "%s", want "%s"' % (r, reqs[r],
                                                               line)
    client = [s for s in mine if s.verb == 'REQ' and s.kind == 'client']
    if len(client) != 1:
        return 'found %d client spans "%s" (want 1, from ex-client)' % (
            len(client), line)
    if client[0].request_id != r:
        return 'the client span "%s" is in request %s, the front\'s in %s' % (
            line, client[0].request_id, r)
    for k in range(n):
        for kind, exe in (('client', front_exe), ('server', backend_exe)):
            got = [s for s in mine if s.verb == 'CALL' and s.num == k
                   and s.kind == kind]
            if len(got) != 1:
                return 'found %d %s spans "CALL %s %d" (want 1)' % (
                    len(got), kind, rid, k)
            if got[0].request_id != r:
                return '%s, not in request %s' % (got[0], r)
            if exe and got[0].exe and got[0].exe != exe:
                return '%s: want exe %s' % (got[0], exe)
    for s in mine:
        if s.verb == 'CALL' and s.num >= n:
            return 'unexpected %s (the request made %d calls)' % (s, n)
        if s.verb == 'REQ' and s.num != n:
            return 'unexpected %s' % s
    for s in by_req.get(r, []):
        if s.id != rid:
            return 'request %s also holds %s' % (r, s)
    return None


def untraced_programs(path):
    """Rows (exe, pid, examples) of untraced_programs, if the table
    exists."""
    con = sqlite3.connect('file:%s?mode=ro' % path, uri=True)
    try:
        if not con.execute("SELECT count(*) FROM sqlite_master WHERE "
                           "name = 'untraced_programs'").fetchone()[0]:
            return []
        return con.execute('SELECT exe, pid, examples FROM '
                           'untraced_programs').fetchall()
    finally:
        con.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--truth', required=True)
    ap.add_argument('--db', required=True)
    ap.add_argument('--label', default='run')
    ap.add_argument('--front-exe', default='')
    ap.add_argument('--backend-exe', default='')
    ap.add_argument('--report-only', action='store_true')
    ap.add_argument('--exact', action='store_true',
                    help='also fail when a request is not labelled exact')
    ap.add_argument('--no-silent', action='store_true',
                    help='fail when a wrong request is not marked uncertain '
                    '(also with --report-only)')
    a = ap.parse_args()

    truth = read_truth(a.truth)
    by_id, by_req, reqs, n_spans, n_unattr, certainty = load(a.db)
    wrong = []
    flagged = 0
    for rid, n in truth:
        why = check_one(rid, n, by_id, by_req, reqs, a.front_exe,
                        a.backend_exe)
        if why:
            wrong.append((rid, why))
    known = {rid for rid, _ in truth}
    extra = sum(1 for target in reqs.values()
                if not (LINE_RE.match(target or '') and
                        LINE_RE.match(target).group(2) in known))
    total = len(truth)
    correct = total - len(wrong)
    print('%s: requests %d correct %d wrong %d precision %.2f%% '
          '(db: %d requests, %d not from the client; %d spans, %d '
          'unattributed)' % (a.label, total, correct, len(wrong),
                              100.0 * correct / total, len(reqs), extra,
                              n_spans, n_unattr))
    if certainty:
        # the label of each truth request: that of every request holding
        # one of its spans (uncertain if any is)
        right_uncertain = 0
        bad = {rid for rid, _ in wrong}
        for rid, _ in truth:
            labels = {certainty.get(s.request_id) for s in by_id.get(rid, [])}
            unc = 'uncertain' in labels
            if rid in bad and unc:
                flagged += 1
            elif rid not in bad and unc:
                right_uncertain += 1
        print('%s: certainty: wrong and marked uncertain %d, silently '
              'wrong %d, right but uncertain %d, db uncertain %d' % (
                  a.label, flagged, len(wrong) - flagged, right_uncertain,
                  sum(1 for v in certainty.values() if v == 'uncertain')))
    silent = len(wrong) - flagged if certainty else len(wrong)
    # programs bp-logd named as doing their network I/O past libc
    # (docs/accuracy.md): the examples and tb-limits.sh's fronts all make
    # socket calls through libc, so any row is a wrongly named program
    untraced = untraced_programs(a.db)
    print('%s: programs named as not traced (network I/O past libc): %s'
          % (a.label, ', '.join('%s[%d] (%s)' % r for r in untraced)
             or 'none'))
    if untraced:
        return 1
    for rid, why in wrong[:SHOW_WRONG]:
        print('  wrong %s: %s' % (rid, why))
    if len(wrong) > SHOW_WRONG:
        print('  ... and %d more' % (len(wrong) - SHOW_WRONG))
    if a.no_silent and silent:
        print('%s: %d wrong requests not marked uncertain (silently wrong)'
              % (a.label, silent))
        return 1
    if wrong and not a.report_only:
        return 1
    notexact = sum(1 for v in certainty.values() if v != 'exact')
    if a.exact and notexact:
        print('%s: %d requests not labelled exact (an ordinary architecture '
              'must not leave requests parked)' % (a.label, notexact))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
