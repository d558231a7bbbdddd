#!/usr/bin/python3
"""clickhouse-check.py - compare what bp-reconstruct --clickhouse wrote
with the SQLite database it came from (tests/report/clickhouse.sh).

  clickhouse-check.py tables DB HTTP DATABASE RUN
      every table, every row, every column: SQLite's rows (by rowid)
      against ClickHouse's (FINAL, WHERE run = RUN, by row_id; not the
      follow_* tables of bp-reconstruct --follow, which it keeps to
      itself); then each
      request's (request_id, target, certainty, span count, span tree)
      built from both; prints the raw count() (without FINAL) too.
  clickhouse-check.py views DB HTTP DATABASE RUN DOC
      create every CREATE VIEW of the ```sql blocks of DOC
      (docs/clickhouse.md; "bp." replaced by DATABASE) and compare each
      with the SQLite view of the same name, rows as multisets.
  clickhouse-check.py count HTTP QUERY
      print the answer of QUERY.
"""
import math
import re
import sqlite3
import sys
import urllib.error
import urllib.request


def ch(http, sql):
    try:
        with urllib.request.urlopen(http, sql.encode(), timeout=60) as r:
            return r.read()
    except urllib.error.HTTPError as e:
        sys.exit('clickhouse-check: %s: HTTP %d: %s' %
                 (sql[:200], e.code, e.read()[:400].decode(errors='replace')))


UNESC = {'\\': '\\', 't': '\t', 'n': '\n', 'r': '\r', '0': '\0', "'": "'",
         'b': '\b', 'f': '\f', 'a': '\a', 'v': '\v', '"': '"'}


def unescape(f):
    if f == b'\\N':
        return None
    out, i = bytearray(), 0
    while i < len(f):
        c = f[i]
        if c == 0x5c and i + 1 < len(f):
            out += UNESC.get(chr(f[i + 1]), chr(f[i + 1])).encode('latin-1')
            i += 2
        else:
            out.append(c)
            i += 1
    return bytes(out)


def ch_rows(http, sql):
    body = ch(http, sql + ' FORMAT TabSeparated')
    return [[unescape(f) for f in line.split(b'\t')]
            for line in body.split(b'\n') if line != b'']


def norm(sq, cv):
    """SQLite value SQ and ClickHouse field CV (bytes or None), both as
    comparable Python values."""
    if sq is None or cv is None:
        return sq, (None if cv is None else cv.decode('utf-8', 'replace'))
    if isinstance(sq, int):
        try:
            return sq, int(cv)
        except ValueError:
            return sq, float(cv)
    if isinstance(sq, float):
        return sq, float(cv)
    if isinstance(sq, bytes):
        return sq, cv
    return sq.encode('utf-8', 'surrogateescape'), cv


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        a, b = float(a), float(b)
        return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
    return a == b


def sqlite_db(path):
    db = sqlite3.connect('file:%s?mode=ro' % path, uri=True)
    db.text_factory = lambda b: b.decode('utf-8', 'surrogateescape')
    return db


def tables(path, http, database, run):
    db = sqlite_db(path)
    names = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        " AND name NOT LIKE 'follow_%' ORDER BY name")]
    total = raw_total = 0
    for t in names:
        cols = [r[1] for r in db.execute('PRAGMA table_info("%s")' % t)]
        sq = db.execute('SELECT rowid, %s FROM "%s" ORDER BY rowid' %
                        (', '.join('"%s"' % c for c in cols), t)).fetchall()
        cr = ch_rows(http, "SELECT row_id, %s FROM `%s`.`%s` FINAL WHERE run = '%s' ORDER BY row_id" %
                     (', '.join('`%s`' % c for c in cols), database, t, run))
        raw = int(ch(http, "SELECT count() FROM `%s`.`%s` WHERE run = '%s'" % (database, t, run)))
        if len(sq) != len(cr):
            sys.exit('clickhouse-check: %s: %d rows in SQLite, %d in ClickHouse (FINAL)' %
                     (t, len(sq), len(cr)))
        for s, c in zip(sq, cr):
            for name, sv, cv in zip(['rowid'] + cols, s, c):
                a, b = norm(sv, cv)
                if not same(a, b):
                    sys.exit('clickhouse-check: %s rowid %s column %s: SQLite %r, ClickHouse %r' %
                             (t, s[0], name, a, b))
        total += len(sq)
        raw_total += raw
    # each request's path, built the same way from both stores
    def paths(reqs, spans):
        kids = {}
        for rid, sid, parent, kind, name in spans:
            kids.setdefault(rid, []).append((int(sid), parent, kind, name))
        return sorted((int(r), t, c, len(kids.get(int(r), [])),
                       repr(sorted(kids.get(int(r), []), key=lambda k: k[0])))
                      for r, t, c in reqs)
    sreq = db.execute('SELECT request_id, target, certainty FROM requests').fetchall()
    sspan = [(r, s, p, k, n) for r, s, p, k, n in db.execute(
        'SELECT request_id, span_id, parent_span_id, kind, name FROM spans WHERE request_id IS NOT NULL')]
    dec = lambda v: None if v is None else v.decode('utf-8', 'surrogateescape')
    creq = [(int(r), dec(t), dec(c)) for r, t, c in ch_rows(http,
            "SELECT request_id, target, certainty FROM `%s`.requests FINAL WHERE run = '%s'" % (database, run))]
    cspan = [(int(r), int(s), None if p is None else int(p), dec(k), dec(n))
             for r, s, p, k, n in ch_rows(http,
             "SELECT request_id, span_id, parent_span_id, kind, name FROM `%s`.spans FINAL WHERE run = '%s' AND request_id IS NOT NULL" % (database, run))]
    a, b = paths(sreq, sspan), paths(creq, cspan)
    if a != b:
        for x, y in zip(a, b):
            if x != y:
                sys.exit('clickhouse-check: request paths differ:\n  SQLite     %r\n  ClickHouse %r' % (x, y))
        sys.exit('clickhouse-check: %d request paths in SQLite, %d in ClickHouse' % (len(a), len(b)))
    unc = sum(1 for r in a if r[2] == 'uncertain')
    print('clickhouse-check: %d tables, %d rows equal column by column (%d stored before merges); %d request paths equal (%d uncertain)' %
          (len(names), total, raw_total, len(a), unc))


def views(path, http, database, run, doc):
    text = open(doc).read()
    blocks = re.findall(r'```sql\n(.*?)```', text, re.S)
    stmts = [s.strip() for b in blocks for s in b.split(';\n') if s.strip()]
    # the join_* views read the host-local runs (clickhouse-join-check.py)
    stmts = [s.rstrip(';') for s in stmts if s.startswith('CREATE VIEW')
             and not s.split()[2].startswith('bp.join_')]
    if not stmts:
        sys.exit('clickhouse-check: no CREATE VIEW in %s' % doc)
    db = sqlite_db(path)
    done = []
    for st in stmts:
        name = st.split()[2].split('.', 1)[1]
        st = st.replace('bp.', '`%s`.' % database)
        ch(http, 'DROP TABLE IF EXISTS `%s`.`%s`' % (database, name))
        ch(http, st)
        if name == 'error_spans':
            continue       # the helper of errors: no SQLite view of it
        ccols = [r[0].decode() for r in ch_rows(http, 'DESCRIBE TABLE `%s`.`%s`' % (database, name))]
        scols = [d[1] for d in db.execute('PRAGMA table_info("%s")' % name)]
        if not scols:
            sys.exit('clickhouse-check: %s: no such view in SQLite' % name)
        cols = [c for c in ccols if c not in ('run', 'row_id')]
        if sorted(cols) != sorted(scols):
            sys.exit('clickhouse-check: %s: columns %s in ClickHouse, %s in SQLite' %
                     (name, cols, scols))
        sq = db.execute('SELECT %s FROM "%s"' % (', '.join('"%s"' % c for c in cols), name)).fetchall()
        cr = ch_rows(http, "SELECT %s FROM `%s`.`%s` WHERE run = '%s'" %
                     (', '.join('`%s`' % c for c in cols), database, name, run))
        # SQLite's rows as keys; match each ClickHouse row to one
        def key(row):
            return tuple('N' if v is None else
                         ('%.6g' % v if isinstance(v, float) else v) for v in row)
        srows = sorted((tuple(r) for r in sq), key=lambda r: repr(key(r)))
        if len(srows) != len(cr):
            sys.exit('clickhouse-check: view %s: %d rows in SQLite, %d in ClickHouse' %
                     (name, len(srows), len(cr)))
        # typed comparison: convert ClickHouse fields by SQLite's types per column
        types = {}
        for r in sq:
            for i, v in enumerate(r):
                if v is not None:
                    types.setdefault(i, type(v))
        def conv(i, f):
            if f is None:
                return None
            t = types.get(i, str)
            try:
                if t is int:
                    try:
                        return int(f)
                    except ValueError:
                        v = float(f)
                        return int(v) if v == int(v) else v
                if t is float:
                    return float(f)
            except ValueError:
                pass
            return f.decode('utf-8', 'surrogateescape')
        crows = sorted((tuple(conv(i, f) for i, f in enumerate(r)) for r in cr),
                       key=lambda r: repr(key(r)))
        for s, c in zip(srows, crows):
            if len(s) != len(c) or not all(same(a, b) for a, b in zip(s, c)):
                sys.exit('clickhouse-check: view %s differs:\n  SQLite     %r\n  ClickHouse %r' %
                         (name, s, c))
        done.append('%s %d' % (name, len(srows)))
    print('clickhouse-check: %d views give the SQLite answers (rows: %s)' %
          (len(done), ', '.join(done)))


if __name__ == '__main__':
    if sys.argv[1] == 'tables':
        tables(*sys.argv[2:6])
    elif sys.argv[1] == 'views':
        views(*sys.argv[2:7])
    elif sys.argv[1] == 'count':
        sys.stdout.write(ch(sys.argv[2], sys.argv[3]).decode())
    else:
        sys.exit(__doc__)
