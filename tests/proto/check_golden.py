#!/usr/bin/python3
"""check_golden - check golden event logs against their captures with a
second, independent framing of each protocol.

Usage: check_golden.py CAPTURE_DIR GOLDEN_DIR

For every CAPTURE_DIR/NAME.cap with a GOLDEN_DIR/NAME.txt, the messages of
each direction are found again here, the simple way (whole streams in
memory, no chunking, no shared code with the C processors), and compared
with the golden lines: same offsets, lengths, kinds and statuses.  This is
how a golden file is accepted after pp-replay wrote it (README.md).  For
PostgreSQL, where the framing rules are the same by nature, the check is
that messages tile each stream and end exactly at protocol messages of the
right types.  Exit status 0 when all agree, 1 otherwise (each difference
on stderr).
"""
import os
import re
import struct
import sys

GOLD = re.compile(r'^(in|out) (\w+) off=(\d+) len=(\d+)(?: status=(\d+))?')


def load_cap(path):
    b = open(path, 'rb').read()
    head, body = b.split(b'\n\n', 1)
    meta = dict(l.split(' ', 1) for l in head.decode().split('\n')[1:])
    streams = [bytearray(), bytearray()]
    grams = [[], []]
    order = []              # (dir, offset after) of every record, in order
    pos = 0
    while pos < len(body):
        t = body[pos]
        n = int.from_bytes(body[pos + 1:pos + 5], 'big')
        d = body[pos + 5:pos + 5 + n]
        pos += 5 + n
        if t < 2:
            streams[t] += d
            grams[t].append(bytes(d))
            order.append((t, len(streams[t])))
    return meta, [bytes(s) for s in streams], grams, order


def gold(path):
    out = [[], []]
    for line in open(path):
        m = GOLD.match(line)
        if not m:
            continue
        d = 0 if m.group(1) == 'in' else 1
        out[d].append((int(m.group(3)), int(m.group(4)), m.group(2),
                       int(m.group(5) or 0)))
    return out


# ---- HTTP -----------------------------------------------------------------

def http_msgs(s, methods, eof_body):
    """Messages of one HTTP stream; METHODS: methods of the requests the
    responses answer (consumed), None for the request stream."""
    out, pos = [], 0
    while pos < len(s):
        while s.startswith(b'\r\n', pos):
            pos += 2
        start = pos
        end = s.find(b'\r\n\r\n', pos)
        if end < 0:
            break
        head = s[pos:end].decode('latin-1').split('\r\n')
        pos = end + 4
        fields = {}
        for h in head[1:]:
            k, v = h.split(':', 1)
            fields.setdefault(k.strip().lower(), []).append(v.strip())
        te = ','.join(fields.get('transfer-encoding', []))
        cl = fields.get('content-length')
        status = 0
        if head[0].startswith('HTTP/'):
            status = int(head[0].split()[1])
            kind = 'oneway' if status < 200 and status != 101 else 'reply'
            if status < 200:
                out.append((start, pos - start, kind, status))
                continue
            method = methods.pop(0) if methods else 'GET'
            if method == 'HEAD' or status in (204, 304):
                out.append((start, pos - start, kind, status))
                continue
        else:
            kind = 'request'
            methods.append(head[0].split()[0])
        if te.lower().replace(' ', '').endswith('chunked'):
            while True:
                e = s.find(b'\r\n', pos)
                size = int(s[pos:e].split(b';')[0], 16)
                pos = e + 2
                if size == 0:
                    while not s.startswith(b'\r\n', pos):
                        pos = s.find(b'\r\n', pos) + 2
                    pos += 2
                    break
                pos += size + 2
        elif cl:
            pos += int(cl[0])
        elif kind == 'reply':
            pos = len(s)
        out.append((start, pos - start, kind, status))
    return out


def http(meta, st, order):
    req = 1 if meta['role'] == 'client' else 0
    # feed requests before the responses that answer them: replay the
    # records in order, framing each direction as far as it goes
    reqs = http_msgs(st[req], [], False)
    methods = []
    for off, n, kind, status in reqs:
        methods.append(st[req][off:].split(b' ', 1)[0].decode())
    reps = http_msgs(st[1 - req], methods, True)
    out = [None, None]
    out[req], out[1 - req] = reqs, reps
    return out


# ---- FastCGI ---------------------------------------------------------------

def fcgi(meta, st, order):
    out = [[], []]
    for d in (0, 1):
        s, pos, start, roles = st[d], 0, 0, {}
        while pos + 8 <= len(s):
            t, rid = s[pos + 1], int.from_bytes(s[pos + 2:pos + 4], 'big')
            cl = int.from_bytes(s[pos + 4:pos + 6], 'big')
            content = s[pos + 8:pos + 8 + cl]
            pos += 8 + cl + s[pos + 6]
            if t == 1:
                roles[rid] = int.from_bytes(content[:2], 'big')
            end = (t == 5 and cl == 0 and roles.get(rid) != 2) or \
                (t == 4 and cl == 0 and roles.get(rid) == 2) or t == 3
            if end:
                out[d].append((start, pos - start,
                               'reply' if t == 3 else 'request', None))
                start = pos
    return out


# ---- PostgreSQL -------------------------------------------------------------

def pg_units(s, frontend):
    """(end offset, type) of every protocol message of a stream."""
    out, pos, typed = [], 0, False
    while pos < len(s):
        if frontend and not typed and s[pos] == 0:
            n = int.from_bytes(s[pos:pos + 4], 'big')
            code = int.from_bytes(s[pos + 4:pos + 8], 'big')
            pos += n
            out.append((pos, 'startup' if code >> 16 == 3 else 'packet'))
            typed = code >> 16 == 3
        elif not frontend and pos == 0 and s[0:1] in (b'N', b'S'):
            pos += 1        # the answer to SSLRequest: refused, or TLS
            out.append((pos, chr(s[0])))
        elif not frontend and s[pos:pos + 1] == b'N' and \
                len(s) - pos > 1 and out and out[-1][1] == 'N':
            pos += 1
            out.append((pos, 'N'))
        else:
            typed = True
            n = int.from_bytes(s[pos + 1:pos + 5], 'big')
            out.append((pos + 1 + n, chr(s[pos])))
            pos += 1 + n
    return out


def pg(meta, st, order, golden):
    fe = 1 if meta['role'] == 'client' else 0
    ok_end = {fe: {'request': 'QFS', 'oneway': 'cfS', 'control':
                   'startup packet p X'.split() + list('pX')},
              1 - fe: {'reply': 'Z', 'oneway': 'NASE',
                       'control': ['N', 'R', 'E', 'Z']}}
    errs = []
    for d in (0, 1):
        units = dict(pg_units(st[d], d == fe))
        pos = 0
        for off, n, kind, status in golden[d]:
            if kind == 'lost':
                break
            if off != pos:
                errs.append('%s: message at %d, previous ended at %d' %
                            (('in', 'out')[d], off, pos))
            pos = off + n
            t = units.get(pos)
            if t is None or t not in ok_end[d].get(kind, ''):
                errs.append('%s %s at %d+%d ends inside a message or at '
                            'type %r' % (('in', 'out')[d], kind, off, n, t))
    return errs


# ---- DNS -------------------------------------------------------------------

def dns(meta, st, grams, order):
    out = [[], []]
    for d in (0, 1):
        if meta['transport'] == 'dgram':
            for i, g in enumerate(grams[d]):
                qr = g[2] >> 7
                out[d].append((i, len(g), 'reply' if qr else 'request',
                               g[3] & 15 if qr else 0))
            continue
        s, pos = st[d], 0
        while pos + 2 <= len(s):
            n = int.from_bytes(s[pos:pos + 2], 'big')
            g = s[pos + 2:pos + 2 + n]
            qr = g[2] >> 7
            out[d].append((pos, n + 2, 'reply' if qr else 'request',
                           g[3] & 15 if qr else 0))
            pos += 2 + n
    return out


# ---- line and one-shot ------------------------------------------------------

def line(meta, st, order):
    req = {'client': 1, 'server': 0}.get(meta['role'])
    if req is None:                     # unknown: the first line's direction
        req = order[0][0] if order else 0
    out = [[], []]
    for d in (0, 1):
        pos = 0
        while pos < len(st[d]):
            e = st[d].find(b'\n', pos)
            e = len(st[d]) if e < 0 else e + 1
            out[d].append((pos, e - pos,
                           'request' if d == req else 'reply', 0))
            pos = e
    return out


def oneshot(meta, st, order):
    req = {'client': 1, 'server': 0}.get(meta['role'])
    if req is None:
        req = order[0][0] if order else 0
    return [[(0, len(st[d]), 'request' if d == req else 'reply', 0)]
            if st[d] else [] for d in (0, 1)]

# ---- MySQL -------------------------------------------------------------------

def my_packets(s):
    """(end offset, payload) of every logical packet (parts of 0xffffff
    joined)."""
    out, pos, buf = [], 0, b''
    while pos + 4 <= len(s):
        n = int.from_bytes(s[pos:pos + 3], 'little')
        buf += s[pos + 4:pos + 4 + n]
        pos += 4 + n
        if n < 0xffffff:
            out.append((pos, buf))
            buf = b''
    return out


def my_lenenc(b, i):
    c = b[i]
    if c < 0xfb:
        return c, i + 1
    w = {0xfc: 2, 0xfd: 3, 0xfe: 8}[c]
    return int.from_bytes(b[i + 1:i + 1 + w], 'little'), i + 1 + w


def my_ok_status(b):
    _, i = my_lenenc(b, 1)
    _, i = my_lenenc(b, i)
    return int.from_bytes(b[i:i + 2], 'little')


def mysql(meta, st, order):
    """Walk the packets of both streams in the order of the records that
    completed them, as the conversation went."""
    cl = 1 if meta['role'] == 'client' else 0
    pk = [my_packets(st[d]) for d in (0, 1)]
    events, seen = [], [0, 0]
    for d, end in order:
        while seen[d] < len(pk[d]) and pk[d][seen[d]][0] <= end:
            events.append((d, pk[d][seen[d]]))
            seen[d] += 1
    out, start = [[], []], [0, 0]
    phase, queue, infile, deprecate = 'greet', [], False, False
    res = {}

    def emit(d, end, kind, status=0):
        out[d].append((start[d], end - start[d], kind, status))
        start[d] = end
    for d, (end, b) in events:
        if d == cl:
            if phase == 'auth':
                if 'caps' not in res:
                    res['caps'] = int.from_bytes(b[0:4], 'little')
                    deprecate = bool(res['caps'] & res['scaps'] & (1 << 24))
                emit(d, end, 'control')
            elif infile:
                if not b:
                    infile = False
                    emit(d, end, 'oneway')
            elif b[0] in (0x18, 0x19):
                emit(d, end, 'oneway')
            elif b[0] == 0x01:
                emit(d, end, 'control')
            else:
                queue.append([b[0], 'first', 0])
                emit(d, end, 'request')
            continue
        if phase == 'greet':
            res['scaps'] = 0
            if b[0] == 0x0a:
                v = b.index(b'\0', 1)
                res['scaps'] = int.from_bytes(b[v + 14:v + 16], 'little') | \
                    int.from_bytes(b[v + 19:v + 21], 'little') << 16
            phase = 'auth'
            emit(d, end, 'control', 0 if b[0] == 0x0a else
                 int.from_bytes(b[1:3], 'little'))
            continue
        if phase == 'auth':
            if b[0] == 0:
                phase = 'cmd'
            emit(d, end, 'control', int.from_bytes(b[1:3], 'little')
                 if b[0] == 0xff else 0)
            continue
        if b[0] == 0xff and b[1:3] == b'\xff\xff':
            continue                        # progress report
        cmd, where, count = queue[0]
        done, status = False, 0
        if b[0] == 0xff:
            done, status = True, int.from_bytes(b[1:3], 'little')
        elif cmd == 0x16:                   # prepare: count definitions
            if where == 'first':
                cols, params = struct.unpack('<HH', b[5:9])
                count = params + cols + (0 if deprecate else
                                         (params > 0) + (cols > 0))
                where = 'defs'
            else:
                count -= 1
            done = count == 0
        elif cmd in (0x03, 0x17, 0xfa):
            term = b[0] == 0xfe and len(b) < 0xffffff
            if where == 'first':
                if b[0] == 0:
                    done = not my_ok_status(b) & 8
                elif b[0] == 0xfb:
                    infile = True
                else:
                    where = 'cols'
            elif where == 'cols' and term and not deprecate:
                where = 'rows'
            elif term:
                flags = my_ok_status(b) if deprecate else \
                    int.from_bytes(b[3:5], 'little')
                where = 'first'
                done = not flags & 8
        else:
            done = True
        queue[0] = [cmd, where, count]
        if done:
            queue.pop(0)
            emit(d, end, 'reply', status)
    return out


# ---- Redis -----------------------------------------------------------------

def resp_value(s, pos):
    """Parse one RESP2/RESP3 value at POS: (end, type, value) where value
    is a list for aggregates, bytes for strings, an int for integers."""
    t = s[pos:pos + 1].decode('latin-1')
    e = s.index(b'\r\n', pos)
    line = s[pos + 1:e]
    pos = e + 2
    if t in '$=!' and line == b'?':
        chunks = []
        while True:
            e = s.index(b'\r\n', pos)
            n = int(s[pos + 1:e])
            pos = e + 2
            if n == 0:
                return pos, t, b''.join(chunks)
            chunks.append(s[pos:pos + n])
            pos += n + 2
    if t in '$=!':
        n = int(line)
        if n < 0:
            return pos, t, None
        return pos + n + 2, t, s[pos:pos + n]
    if t in '*%~>|':
        if line == b'?':
            items = []
            while s[pos:pos + 1] != b'.':
                pos, _, v = resp_value(s, pos)
                items.append(v)
            return pos + 3, t, items
        n = int(line) * (2 if t in '%|' else 1)
        items = []
        if n < 0:
            return pos, t, None
        for _ in range(n):
            pos, it, v = resp_value(s, pos)
            if it == '|':               # an attribute: the value follows
                pos, it, v = resp_value(s, pos)
            items.append(v)
        if t == '|':
            return pos, t, items
        return pos, t, items
    if t == ':':
        return pos, t, int(line)
    return pos, t, line


def resp_stream(s, client):
    """(offset, length, type, value) of each top-level value; a client's
    blank inline lines and empty arrays join the next command."""
    out, pos, start = [], 0, 0
    while pos < len(s):
        if client and s[pos:pos + 1] != b'*':
            e = s.index(b'\n', pos) + 1
            words = s[pos:e].split()
            pos = e
            if words:
                out.append((start, pos - start, 'i', words))
                start = pos
            continue
        pos, t, v = resp_value(s, pos)
        if t == '|':                    # attribute of the next value
            continue
        if client and not v:
            continue
        out.append((start, pos - start, t, v))
        start = pos
    return out


SUBS = {b'subscribe', b'psubscribe', b'ssubscribe', b'unsubscribe',
        b'punsubscribe', b'sunsubscribe'}


def redis(meta, st, order):
    cl = 1 if meta['role'] == 'client' else 0
    reqs = resp_stream(st[cl], True)
    cmds = [v[0].upper() for _, _, _, v in reqs]
    out = [None, None]
    out[cl] = [(o, n, 'request', 0) for o, n, _, _ in reqs]
    reps, subscribed, resp3, q = [], False, False, list(cmds)
    for o, n, t, v in resp_stream(st[1 - cl], False):
        head = v[0].lower() if t in '*>' and v and \
            isinstance(v[0], bytes) else None
        resp3 = resp3 or t in '%~>_,#(=!'
        # a confirmation answers the pending command of its own name
        mine = head in SUBS and q and q[0] == head.upper()
        if head in SUBS and (t == '>' or (t == '*' and not resp3 and (
                subscribed or mine))):
            if t == '*':
                subscribed = v[2] > 0
            if mine:
                q.pop(0)
                reps.append((o, n, 'reply', 0))
            else:
                reps.append((o, n, 'oneway', 0))
        elif t == '>' or (t == '*' and subscribed and not resp3 and head in
                          (b'message', b'pmessage', b'smessage')):
            reps.append((o, n, 'oneway', 0))
        else:
            if q:
                q.pop(0)
            reps.append((o, n, 'reply', 1 if t in '-!' else 0))
    out[1 - cl] = reps
    return out


# ---- HTTP/2 ---------------------------------------------------------------

H2_PRI = b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'


def h2_frames(s, client):
    """(offset after, type, flags, stream) of every whole frame."""
    pos = len(H2_PRI) if client else 0
    out = []
    while pos + 9 <= len(s):
        n = int.from_bytes(s[pos:pos + 3], 'big')
        if pos + 9 + n > len(s):
            break
        sid = int.from_bytes(s[pos + 5:pos + 9], 'big') & 0x7fffffff
        pos += 9 + n
        out.append((pos, s[pos - 9 - n + 3], s[pos - 9 - n + 4], sid))
    return out


def http2(meta, st, order, with_sid=False):
    """Every frame is a message (a header block with its CONTINUATION
    frames one): the client's first header block of a stream is its
    request, its other frames oneway; the server's frames of a stream are
    oneway up to the one with END_STREAM, the reply (a RST_STREAM ends an
    open reply too; streams the server opened, even ids, are control);
    everything else is control."""
    cl = 1 if meta['role'] == 'client' else 0
    out = [None, None]
    asked = set()
    for client, d in ((True, cl), (False, 1 - cl)):
        msgs, start, blk, done = [], 0, None, set()
        for end, t, fl, sid in h2_frames(st[d], client):
            if t in (1, 5):                     # HEADERS, PUSH_PROMISE
                blk = (t, fl & 1)
            if t in (1, 9):
                if not fl & 4:
                    continue                    # the block goes on
                first, es = blk
                if first == 5:
                    kind = 'control'
                elif client:
                    kind = 'oneway' if sid in asked else 'request'
                    asked.add(sid)
                else:
                    kind = 'reply' if es else 'oneway'
            elif t == 0:
                kind = ('oneway' if client or not fl & 1 else 'reply')
            elif t == 3:
                if client:
                    kind = 'oneway' if sid in asked else 'control'
                else:
                    kind = 'reply' if sid in asked and sid not in done \
                        else 'control'
            else:
                kind = 'control'
            if not client and kind == 'reply':
                done.add(sid)
            if not client and sid % 2 == 0 and kind != 'control':
                kind = 'control'
            msgs.append((start, end - start, kind, None) +
                        ((sid if kind != 'control' else None,)
                         if with_sid else ()))
            start = end
        out[d] = msgs
    return out

def compare(name, want, got):
    errs = []
    for d in (0, 1):
        w = [(o, n, k) + ((s,) if s is not None else ())
             for o, n, k, s in want[d]]
        g = [(o, n, k) + ((s,) if want[d] and want[d][0][3] is not None
                          else ()) for o, n, k, s in got[d]]
        if w != g:
            errs.append('%s: %s: independent %s, golden %s' %
                        (name, ('in', 'out')[d], w, g))
    return errs


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    caps, golds = sys.argv[1], sys.argv[2]
    errs, n = [], 0
    for f in sorted(os.listdir(caps)):
        name = f[:-4]
        g = os.path.join(golds, name + '.txt')
        if not f.endswith('.cap') or not os.path.exists(g):
            continue
        meta, st, grams, order = load_cap(os.path.join(caps, f))
        golden = gold(g)
        p = meta['proto']
        n += 1
        if p == 'http':
            errs += compare(name, http(meta, st, order), golden)
        elif p == 'fastcgi':
            want = fcgi(meta, st, order)
            errs += compare(name, want, [[(o, l, k, None) for o, l, k, s in
                                          golden[d]] for d in (0, 1)])
        elif p == 'postgresql':
            errs += ['%s: %s' % (name, e) for e in pg(meta, st, order,
                                                      golden)]
        elif p == 'dns':
            errs += compare(name, dns(meta, st, grams, order), golden)
        elif p == 'line':
            errs += compare(name, line(meta, st, order), golden)
        elif p == 'oneshot':
            errs += compare(name, oneshot(meta, st, order), golden)
        elif p == 'redis':
            errs += compare(name, redis(meta, st, order), golden)
        elif p == 'mysql':
            errs += compare(name, mysql(meta, st, order), golden)
        elif p == 'http2':
            errs += compare(name, http2(meta, st, order),
                            [[(o, l, k, None) for o, l, k, s in golden[d]]
                             for d in (0, 1)])
        else:
            n -= 1
    for e in errs:
        sys.stderr.write('check_golden: %s\n' % e)
    print('check_golden: %d captures checked, %d differences' % (n,
                                                               len(errs)))
    sys.exit(1 if errs else 0)


if __name__ == '__main__':
    main()
