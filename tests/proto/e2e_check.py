#!/usr/bin/python3
"""e2e_check - check bp-reconstruct's messages against the bytes real
clients put on the wire (tests/proto/e2e.sh).

Usage: e2e_check.py --db paths.db --st DIR --truth FILE [--xfail NAME]...

Every client ran under strace (DIR/NAME.*, the options of strace2cap.py)
as well as under the tracer.  For each line of FILE

    NAME PROTO PORT [ID[*COUNT]]...

the connections of client run NAME to 127.0.0.1:PORT are rebuilt from
strace (the bytes the kernel really moved) and framed here, the simple way
(check_golden.py's HTTP, Redis and MySQL framing, and a PostgreSQL and DNS
framing of this file), into the messages the protocol defines.  Then, in the reconstructed
database:

* client side: the channel of each connection holds exactly these
  messages, each once: same direction, offset, length, kind, protocol and
  status (HTTP status, DNS rcode), and the key attributes decoded from the
  wire (HTTP method and target, PostgreSQL SQL text, DNS name and type,
  Redis command and target, error word, MySQL query text);
  each reply is in the span of the request it answers (HTTP,
  PostgreSQL and Redis: in order; DNS: by id, which must be the witness);
* server side (traced too): every client message is linked
  (peer_message_id) to exactly one message of the server with the same
  length, kind, protocol, status and attributes, replies in their
  request's span there too, and the server's channels hold nothing else;
* every ID of the line is in the key attribute (target, sql, dns_name) of
  exactly COUNT (default 1) requests on each side.

A run whose only log is DIR/NAME.plain is a TLS client's (tlsclient.py):
its connections are rebuilt from the plaintext it logged, call by call,
the bytes before the handshake included (the channel counts plaintext
from the binding on, docs/libbtrace.md, "TLS (OpenSSL)"); both ends are
checked the same way.

Each --lookup NAME:QLOG:CALLS is a name glibc's resolver looked up inside libc
(getaddrinfo, gethostbyname2: traced at the API level) from a dnsmasq
that logged its queries to QLOG (--log-queries): the database must hold
exactly CALLS client name-lookup spans for NAME, and on the dnsmasq side
exactly the queries QLOG lists for NAME (same types), each answered by
one reply with its id, in its span.

A line whose NAME is given with --xfail is an expected failure (a known
limitation documented in docs/protocols.md): its mismatches are printed
but do not fail the check; if it has none, that is reported as an error
(the limitation is gone: remove the --xfail).

Exit status 0 when everything agrees, 1 otherwise.
"""
import argparse
import glob
import os
import re
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_golden  # noqa: E402  (HTTP framing)
import strace2cap    # noqa: E402  (strace log parsing)

READS = strace2cap.READS
WRITES = strace2cap.WRITES


# ---- the wire ---------------------------------------------------------------

def connections(logs, port):
    """{annotation: [streams in/out, datagrams in/out, transport]} of every
    TCP/UDP socket of the logs whose peer is 127.0.0.1:PORT, in the order
    of first data."""
    rx = re.compile(r'^(TCP|UDP):\[127\.0\.0\.1:(\d+)->127\.0\.0\.1:%d\]$'
                    % port)
    conns = {}
    for t, path, no, name, fd, ann, rest, res in strace2cap.calls(logs):
        m = rx.match(ann)
        if not m or res <= 0:
            continue
        if name not in READS and name not in WRITES:
            continue
        c = conns.setdefault(ann, {'st': [bytearray(), bytearray()],
                                   'grams': [[], []], 'tr': m.group(1),
                                   'lport': int(m.group(2)), 'order': []})
        d = 0 if name in READS else 1
        for p in strace2cap.payloads(name, rest, res, '%s:%d' % (path, no)):
            c['st'][d] += p
            c['grams'][d].append(bytes(p))
            c['order'].append((d, len(c['st'][d])))
    return conns


def plain_connections(path, port):
    """connections() from the plaintext log of tlsclient.py (a TLS client
    logging every plaintext chunk it moved: strace sees ciphertext)."""
    conns = {}
    for line in open(path):
        lport, peer, d, data = line.split()
        if int(peer) != port:
            continue
        ann = 'TCP:[127.0.0.1:%s->127.0.0.1:%d]' % (lport, port)
        c = conns.setdefault(ann, {'st': [bytearray(), bytearray()],
                                   'grams': [[], []], 'tr': 'TCP',
                                   'lport': int(lport), 'order': []})
        d = 0 if d == 'in' else 1
        c['st'][d] += bytes.fromhex(data)
        c['order'].append((d, len(c['st'][d])))
    return conns


def frame_http(c):
    st = [bytes(s) for s in c['st']]
    reqs = check_golden.http_msgs(st[1], [], False)
    methods = [st[1][o:].split(b' ', 1)[0].decode() for o, n, k, s in reqs]
    reps = check_golden.http_msgs(st[0], list(methods), True)
    out = []
    for o, n, k, s in reqs:
        line = st[1][o:o + n].split(b'\r\n', 1)[0].decode('latin-1')
        meth, target = line.split(' ')[:2]
        out.append({'dir': 'out', 'off': o, 'len': n, 'kind': k,
                    'status': None,
                    'attrs': {'method': meth, 'target': target[:768]},
                    'key': target})
    for o, n, k, s in reps:
        out.append({'dir': 'in', 'off': o, 'len': n, 'kind': k,
                    'status': s, 'attrs': {}, 'key': None})
    return out


def pg_messages(s, frontend):
    """(type, start, end, body) of every protocol message of a stream."""
    out = []
    pos = 0
    for end, t in check_golden.pg_units(s, frontend):
        body = s[pos + 5:end] if len(t) == 1 and end - pos >= 5 else b''
        out.append((t, pos, end, body))
        pos = end
    return out


def cstr(b, i):
    e = b.index(b'\0', i)
    return b[i:e].decode('utf-8', 'replace'), e + 1


def frame_pg(c):
    st = [bytes(s) for s in c['st']]
    out = []
    # frontend (what the client wrote)
    stmts = {}
    msgs = pg_messages(st[1], True)
    i = 0
    last_ext = False
    while i < len(msgs):
        t, start, end, body = msgs[i]
        if t in ('startup', 'packet', 'p', 'X'):
            out.append(dict(dir='out', off=start, len=end - start,
                            kind='control', status=None, attrs={},
                            key=None))
            i += 1
        elif t in 'QF':
            sql = cstr(body, 0)[0] if t == 'Q' else None
            a = {'sql': sql[:1024]} if sql is not None else {}
            out.append(dict(dir='out', off=start, len=end - start,
                            kind='request', status=None, attrs=a, key=sql))
            last_ext = False
            i += 1
        elif t in 'dcf':
            j = i
            while msgs[j][0] == 'd':
                j += 1
            if last_ext and j + 1 < len(msgs) and msgs[j + 1][0] == 'S':
                j += 1
            out.append(dict(dir='out', off=start, len=msgs[j][2] - start,
                            kind='oneway', status=None, attrs={}, key=None))
            i = j + 1
        else:           # extended query: up to and including the Sync
            portals, first_parse, run = {}, None, None
            j = i
            while True:
                t, s0, e0, b = msgs[j]
                if t == 'P':
                    name, k = cstr(b, 0)
                    q = cstr(b, k)[0]
                    stmts[name] = q
                    if first_parse is None:
                        first_parse = q
                elif t == 'B':
                    portal, k = cstr(b, 0)
                    portals[portal] = cstr(b, k)[0]
                elif t == 'E' and run is None:
                    run = stmts.get(portals.get(cstr(b, 0)[0]))
                if t == 'S':
                    break
                j += 1
            sql = run if run is not None else first_parse
            a = {'sql': sql[:1024]} if sql is not None else {}
            out.append(dict(dir='out', off=start, len=msgs[j][2] - start,
                            kind='request', status=None, attrs=a, key=sql))
            last_ext = True
            i = j + 1
    # backend: the SSL answer, the start-up phase up to the first
    # ReadyForQuery, then one reply per ReadyForQuery
    msgs = pg_messages(st[0], False)
    start, started = 0, False
    for t, s0, e0, b in msgs:
        if t in 'NS' and not started and e0 - s0 == 1:
            out.append(dict(dir='in', off=s0, len=1, kind='control',
                            status=None, attrs={}, key=None))
            start = e0
        elif t == 'Z':
            out.append(dict(dir='in', off=start, len=e0 - start,
                            kind='reply' if started else 'control',
                            status=None, attrs={}, key=None))
            started = True
            start = e0
    return out


def dns_name(m):
    """The first question's name and type of a DNS message (no
    compression: a question's name never needs it)."""
    pos, labels = 12, []
    while m[pos]:
        n = m[pos]
        labels.append(m[pos + 1:pos + 1 + n].decode('ascii'))
        pos += 1 + n
    qtype = int.from_bytes(m[pos + 1:pos + 3], 'big')
    types = {1: 'A', 28: 'AAAA', 12: 'PTR', 15: 'MX', 16: 'TXT',
             2: 'NS', 5: 'CNAME', 6: 'SOA', 33: 'SRV'}
    return '.'.join(labels) or '.', types.get(qtype, 'TYPE%d' % qtype)


def frame_dns(c):
    out = []
    for d in (0, 1):
        if c['tr'] == 'UDP':
            msgs = [(i, len(g), g) for i, g in enumerate(c['grams'][d])]
        else:
            s, pos, msgs = bytes(c['st'][d]), 0, []
            while pos + 2 <= len(s):
                n = int.from_bytes(s[pos:pos + 2], 'big')
                msgs.append((pos, n + 2, s[pos + 2:pos + 2 + n]))
                pos += 2 + n
        for off, n, g in msgs:
            qr = g[2] >> 7
            name, qtype = dns_name(g)
            out.append(dict(dir=('in', 'out')[d], off=off, len=n,
                            kind='reply' if qr else 'request',
                            status=(g[3] & 15) if qr else None,
                            attrs={'dns_name': name, 'dns_type': qtype},
                            key=name if not qr else None,
                            witness=int.from_bytes(g[0:2], 'big')))
    return out


# Redis commands whose target is the command alone (their first argument
# is a password, a message or a script), and those with subcommands
REDIS_ALONE = {b'AUTH', b'ECHO', b'PING', b'EVAL', b'EVAL_RO'}
REDIS_SUB = {b'ACL', b'CLIENT', b'CLUSTER', b'COMMAND', b'CONFIG', b'DEBUG',
             b'FUNCTION', b'LATENCY', b'MEMORY', b'MODULE', b'OBJECT',
             b'PUBSUB', b'SCRIPT', b'SENTINEL', b'SLOWLOG', b'XGROUP',
             b'XINFO'}


def redis_target(words):
    cmd = words[0].upper()
    if cmd == b'HELLO':
        arg = words[1:2] if len(words) > 1 and words[1].isdigit() else []
    elif cmd in REDIS_SUB:
        arg = [words[1].upper()] if len(words) > 1 else []
    elif cmd in REDIS_ALONE:
        arg = []
    else:
        arg = words[1:2]
    return cmd.decode(), b' '.join([cmd] + arg).decode('latin-1')


def frame_redis(c):
    st = [bytes(s) for s in c['st']]
    meta = {'role': 'client'}
    framed = check_golden.redis(meta, st, [])
    reqs = check_golden.resp_stream(st[1], True)
    reps = check_golden.resp_stream(st[0], False)
    out = []
    for (o, n, k, s), (_, _, _, words) in zip(framed[1], reqs):
        meth, target = redis_target(words)
        out.append({'dir': 'out', 'off': o, 'len': n, 'kind': k,
                    'status': None,
                    'attrs': {'method': meth, 'target': target},
                    'key': target})
    for (o, n, k, s), (_, _, t, v) in zip(framed[0], reps):
        a = {}
        if s:
            a['error'] = v.split(b' ', 1)[0].decode('latin-1')
        out.append({'dir': 'in', 'off': o, 'len': n, 'kind': k,
                    'status': s or None, 'attrs': a, 'key': None})
    return out


def frame_mysql(c):
    """check_golden.py's MySQL framing, in the order the client's calls
    moved the bytes; a COM_QUERY's key is its text."""
    st = [bytes(s) for s in c['st']]
    framed = check_golden.mysql({'role': 'client'}, st, c['order'])
    out = []
    for o, n, k, s in framed[1]:
        a, key = {}, None
        body = st[1][o + 4:o + n]
        if k == 'request' and body[:1] == b'\x03':
            key = body[1:].decode('utf-8', 'replace')
            a = {'method': 'query', 'sql': key[:1024]}
        out.append({'dir': 'out', 'off': o, 'len': n, 'kind': k,
                    'status': None, 'attrs': a, 'key': key})
    for o, n, k, s in framed[0]:
        out.append({'dir': 'in', 'off': o, 'len': n, 'kind': k,
                    'status': s or None, 'attrs': {}, 'key': None})
    return out


def frame_http2(c):
    """check_golden.py's HTTP/2 framing (every frame a message, the
    stream id its witness); HPACK is not decoded here: no attributes."""
    st = [bytes(s) for s in c['st']]
    framed = check_golden.http2({'role': 'client'}, st, c['order'], True)
    out = []
    for d, name in ((1, 'out'), (0, 'in')):
        for o, n, k, s, sid in framed[d]:
            out.append({'dir': name, 'off': o, 'len': n, 'kind': k,
                        'status': None, 'attrs': {}, 'key': None,
                        'witness': sid})
    return out


FRAMERS = {'http': frame_http, 'postgresql': frame_pg, 'dns': frame_dns,
           'redis': frame_redis, 'mysql': frame_mysql, 'http2': frame_http2}
KEY = {'http': 'target', 'postgresql': 'sql', 'dns': 'dns_name',
       'redis': 'target', 'mysql': 'sql', 'http2': 'target'}


# ---- the database --------------------------------------------------------

class Db:
    def __init__(self, path):
        self.c = sqlite3.connect(path)
        self.c.row_factory = sqlite3.Row

    def q(self, sql, *args):
        return self.c.execute(sql, args).fetchall()

    def attrs(self, mid):
        return {r['key']: r['value'] for r in
                self.q('SELECT key, value FROM attrs WHERE message_id = ?',
                       mid)}


def pairs(proto, msgs):
    """[(request, reply)] of a framed or stored list of messages."""
    reqs = [m for m in msgs if m['kind'] == 'request']
    reps = [m for m in msgs if m['kind'] == 'reply']
    if proto in ('dns', 'http2'):
        byid = {}
        for m in reqs:
            byid.setdefault(m['witness'], []).append(m)
        out = []
        for r in sorted(reps, key=lambda m: m['off']):
            q = byid.get(r['witness'])
            if q:
                out.append((q.pop(0), r))
        return out
    return list(zip(reqs, reps))


class Checker:
    def __init__(self, db):
        self.db = db
        self.errors = []
        self.checked = {'client': 0, 'server': 0}

    def err(self, text):
        self.errors.append(text)

    def check_run(self, name, proto, port, ids, logs):
        if len(logs) == 1 and logs[0].endswith('.plain'):
            conns = plain_connections(logs[0], port)
        else:
            conns = connections(logs, port)
        if not conns:
            self.err('%s: strace shows no connection to port %d' %
                     (name, port))
            return
        server_rows = {}            # server message_id -> client row
        server_chans = set()
        key = KEY[proto]
        keys = {'client': [], 'server': []}
        for ann, c in conns.items():
            where = '%s %s' % (name, ann)
            truth = FRAMERS[proto](c)
            truth.sort(key=lambda m: (m['dir'], m['off']))
            chans = self.db.q(
                "SELECT * FROM channels WHERE kind = ? AND local = ? AND "
                "remote = ? AND role <> 'accept'", c['tr'].lower(),
                '127.0.0.1:%d' % c['lport'], '127.0.0.1:%d' % port)
            if len(chans) != 1:
                self.err('%s: %d client channels in the database, want 1'
                         % (where, len(chans)))
                continue
            ch = chans[0]
            rows = [dict(r) for r in self.db.q(
                'SELECT * FROM messages WHERE channel_id = ? '
                'ORDER BY dir, off', ch['channel_id'])]
            for r in rows:
                r['attrs'] = self.db.attrs(r['message_id'])
            if len(rows) != len(truth):
                self.err('%s: %d messages in the database, %d on the wire'
                         % (where, len(rows), len(truth)))
            for k, t in enumerate(truth):
                r = rows[k] if k < len(rows) else None
                if not self.same(where + ' client', t, r, proto):
                    continue
                self.checked['client'] += 1
                t['row'] = r
                if t['key'] is not None:
                    keys['client'].append(r['attrs'].get(key, ''))
                # the other end
                if c['tr'] == 'UDP':
                    # the server's socket is unconnected: the reconstructor
                    # pairs it with nothing (docs/reconstruct.md, Limits);
                    # its message is found by port, id, name and length
                    peers = self.db.q(
                        "SELECT m.* FROM messages m JOIN channels c "
                        "USING (channel_id) JOIN attrs a USING (message_id) "
                        "WHERE c.kind = 'udp' AND c.local = ? AND m.dir = ? "
                        "AND m.witness = ? AND m.len = ? AND a.key = "
                        "'dns_name' AND a.value = ?", '127.0.0.1:%d' % port,
                        {'in': 'out', 'out': 'in'}[t['dir']], t['witness'],
                        t['len'], t['attrs']['dns_name'])
                elif t['dir'] == 'out':
                    peers = self.db.q('SELECT * FROM messages WHERE '
                                      'peer_message_id = ?',
                                      r['message_id'])
                else:
                    peers = self.db.q('SELECT * FROM messages WHERE '
                                      'message_id = ?',
                                      r['peer_message_id'] or -1)
                if len(peers) != 1:
                    self.err('%s client %s %s off=%d: %d server messages '
                             'linked, want 1' % (where, t['dir'],
                                                 t['kind'], t['off'],
                                                 len(peers)))
                    continue
                s = dict(peers[0])
                s['attrs'] = self.db.attrs(s['message_id'])
                if s['message_id'] in server_rows:
                    self.err('%s: server message %d linked twice' %
                             (where, s['message_id']))
                server_rows[s['message_id']] = t
                if c['tr'] != 'UDP':
                    server_chans.add(s['channel_id'])
                st = dict(t, dir={'in': 'out', 'out': 'in'}[t['dir']],
                          off=s['off'])
                if self.same(where + ' server', st, s, proto):
                    self.checked['server'] += 1
                    t['srow'] = s
                    if t['key'] is not None:
                        keys['server'].append(s['attrs'].get(key, ''))
            # a reply is in its request's span, on both sides
            for q, a in pairs(proto, truth):
                for side, col in (('client', 'row'), ('server', 'srow')):
                    if col in q and col in a and \
                            q[col]['span_id'] != a[col]['span_id']:
                        self.err('%s %s: the reply at off=%d is in span %s, '
                                 'its request (off=%d) in %s' %
                                 (where, side, a['off'], a[col]['span_id'],
                                  q['off'], q[col]['span_id']))
        # the server's channels hold nothing but these messages
        for cid in server_chans:
            for r in self.db.q('SELECT * FROM messages WHERE channel_id = ?',
                               cid):
                if r['message_id'] not in server_rows:
                    self.err('%s: server channel %d has a message nobody '
                             'sent: %s %s off=%d len=%d' %
                             (name, cid, r['dir'], r['kind'], r['off'],
                              r['len']))
        # the unique ids
        for spec in ids:
            uid, _, cnt = spec.partition('*')
            cnt = int(cnt or 1)
            for side in ('client', 'server'):
                n = sum(uid in (v or '') for v in keys[side])
                if n != cnt:
                    self.err('%s %s: id %s in %d requests, want %d' %
                             (name, side, uid, n, cnt))

    def same(self, where, t, r, proto):
        if r is None:
            self.err('%s: missing %s %s off=%d len=%d %s' %
                     (where, t['dir'], t['kind'], t['off'], t['len'],
                      t['attrs']))
            return False
        want = (t['dir'], t['off'], t['len'], t['kind'], proto)
        got = (r['dir'], r['off'], r['len'], r['kind'], r['protocol'])
        bad = []
        if want != got:
            bad.append('want %s got %s' % (want, got))
        if t['status'] is not None and r['status'] != t['status']:
            bad.append('status want %s got %s' % (t['status'], r['status']))
        if 'witness' in t and r['witness'] != t['witness']:
            bad.append('witness want %s got %s' % (t['witness'],
                                                   r['witness']))
        for k, v in t['attrs'].items():
            if r['attrs'].get(k) != v:
                bad.append('%s want %r got %r' % (k, v, r['attrs'].get(k)))
        if bad:
            self.err('%s %s %s off=%d: %s' % (where, t['dir'], t['kind'],
                                              t['off'], '; '.join(bad)))
            return False
        return True


def check_lookup(db, name, qlog, calls):
    errs, checked = [], 0
    spans = db.q("SELECT * FROM spans WHERE kind = 'client' AND "
                 "channel_id IS NULL AND target = ?", name)
    if len(spans) != calls:
        errs.append('lookup %s: %d client name-lookup spans, want %d' %
                    (name, len(spans), calls))
    else:
        checked += calls
    want = sorted(m.group(1) for m in re.finditer(
        r'query\[(\w+)\] (\S+) from', open(qlog).read())
        if m.group(2) == name)
    rows = [dict(r) for r in db.q(
        "SELECT m.* FROM messages m JOIN attrs a USING (message_id) "
        "WHERE a.key = 'dns_name' AND a.value = ? ORDER BY m.off", name)]
    for r in rows:
        r['attrs'] = db.attrs(r['message_id'])
    reqs = [r for r in rows if r['kind'] == 'request']
    reps = [r for r in rows if r['kind'] == 'reply']
    got = sorted(r['attrs'].get('dns_type') for r in reqs)
    if not want:
        errs.append('lookup %s: dnsmasq logged no query for it' % name)
    if got != want:
        errs.append('lookup %s: dnsmasq received %s (its log), the database '
                    'has %s' % (name, want, got))
    if len(reps) != len(reqs) or len(rows) != len(reqs) + len(reps):
        errs.append('lookup %s: %d requests, %d replies, %d messages' %
                    (name, len(reqs), len(reps), len(rows)))
    # the k-th query with an id is answered by the k-th reply with it
    for q in reqs:
        same = [r for r in reqs if r['witness'] == q['witness'] and
                r['channel_id'] == q['channel_id']]
        a = [r for r in reps if r['witness'] == q['witness'] and
             r['channel_id'] == q['channel_id']]
        k = same.index(q)
        a = a[k:k + 1] if len(a) == len(same) else a
        if len(a) != 1 or q['protocol'] != 'dns' or \
                a[0]['span_id'] != q['span_id'] or q['dir'] != 'in':
            errs.append('lookup %s: query id %s: %d replies, protocol %s, '
                        'dir %s, not in one span' % (name, q['witness'],
                                                     len(a), q['protocol'],
                                                     q['dir']))
        else:
            checked += 2
    return errs, checked


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--db', required=True)
    ap.add_argument('--st', required=True)
    ap.add_argument('--truth', required=True)
    ap.add_argument('--xfail', action='append', default=[])
    ap.add_argument('--lookup', action='append', default=[])
    a = ap.parse_args()
    db = Db(a.db)
    failed = False
    total = {'client': 0, 'server': 0}
    for line in open(a.truth):
        w = line.split()
        if not w or w[0].startswith('#'):
            continue
        name, proto, port, ids = w[0], w[1], int(w[2]), w[3:]
        logs = sorted(glob.glob(os.path.join(a.st, name + '.*')))
        ck = Checker(db)
        if not logs:
            ck.err('%s: no strace logs %s/%s.*' % (name, a.st, name))
        else:
            ck.check_run(name, proto, port, ids, logs)
        for k in total:
            total[k] += ck.checked[k]
        xf = name in a.xfail
        for e in ck.errors:
            print('%s%s' % ('XFAIL ' if xf else 'MISMATCH ', e))
        print('%-14s %-10s %4d client %4d server messages, %d mismatches%s'
              % (name, proto, ck.checked['client'], ck.checked['server'],
                 len(ck.errors), ' (expected failure)' if xf else ''))
        if xf and not ck.errors:
            print('ERROR %s: expected to fail but passed: remove its '
                  '--xfail and the limitation from docs/protocols.md' % name)
            failed = True
        elif ck.errors and not xf:
            failed = True
    for spec in a.lookup:
        name, qlog, calls = spec.split(':', 2)
        errs, n = check_lookup(db, name, qlog, int(calls))
        total['server'] += n
        for e in errs:
            print('MISMATCH ' + e)
        print('%-30s lookup %4d messages and spans, %d mismatches' %
              (name, n, len(errs)))
        failed = failed or bool(errs)
    print('e2e: %d client and %d server messages checked against the wire'
          % (total['client'], total['server']))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
