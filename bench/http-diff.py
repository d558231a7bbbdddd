#!/usr/bin/python3
"""http-diff.py OLD_PP_REPLAY NEW_PP_REPLAY CAPTURE_DIR [N]

Differential check of two builds of the HTTP processor: runs both
pp-replay binaries over every HTTP capture of CAPTURE_DIR, N (default
700) mutated copies of them and N/2 captures of made-up heads only (header names in other cases and near-miss
names, colons and control bytes in names and values, long lines, lines
of 1 to 40 bytes, obs-fold, bare CR and LF, cut and repeated bytes, whole
heads made up with lines of random lengths), each
in several chunkings (records, whole, bytes, front and random with four
seeds), with and without -d, and reports every output that differs.
Exit status 1 if any does."""
import os, random, subprocess, sys, tempfile

old, new, caps = sys.argv[1], sys.argv[2], sys.argv[3]
N = int(sys.argv[4]) if len(sys.argv) > 4 else 700
rng = random.Random(15)


def parse(path):
    b = open(path, 'rb').read()
    head, body = b.split(b'\n\n', 1)
    recs, pos = [], 0
    while pos < len(body):
        t = body[pos]
        n = int.from_bytes(body[pos + 1:pos + 5], 'big')
        recs.append((t, body[pos + 5:pos + 5 + n]))
        pos += 5 + n
    return head, recs


def write(path, head, recs):
    out = bytearray(head + b'\n\n')
    for t, d in recs:
        if t < 2 and not d:
            continue
        out += bytes([t]) + len(d).to_bytes(4, 'big') + d
    open(path, 'wb').write(out)


NAMES = [b'Host', b'HOST', b'host', b'hosT', b'Hos', b'Hostx', b'Content-Length',
         b'content-length', b'CONTENT-LENGTH', b'Content_Length', b'Content-Lengt',
         b'Transfer-Encoding', b'transfer-encoding', b'Transfer-EncodinG',
         b'Upgrade', b'upgrade', b'Traceparent', b'X-Request-Id', b'x-request-iD',
         b'Date', b'ETag', b'Content-Type', b'X', b'', b'A' * 17, b'B' * 33,
         b'Host ', b' Host', b'Ho\rst', b'Ho:st', b'Con\x7ftent-Length']
VALS = [b'1', b'0', b'12', b' 5 ', b'5, 5', b'5,6', b'chunked', b'gzip, chunked',
        b'chunked, gzip', b'h2c', b'h2c, websocket', b'a:b:c', b'127.0.0.1:8080',
        b'', b' ', b'x' * 15, b'y' * 16, b'z' * 17, b'w' * 200, b'v' * 1800,
        b'\x01\x02', b'\x7f', b'\xff\xfe', b'a\rb']


def synth_head(t, start=None):
    """A head of lines of random lengths (so that lines cross the 64-byte
    blocks of the processor's scan anywhere), kept and near-miss names,
    ':' where a kept name would end and elsewhere, lines without ':',
    obs-fold, bare LF; from under 16 bytes to past 1700; sometimes the
    next head right after (a ':' in its start line, absolute-form, shows
    a head's end missed)."""
    if start is not None:
        pass
    elif rng.random() < 0.5:
        start = rng.choice([b'GET / HTTP/1.1', b'GET /' + b'p' * rng.randint(0, 90) +
                            b' HTTP/1.0', b'POST /f HTTP/1.1', b'HEAD /h HTTP/1.1',
                            b'GET /a b HTTP/1.1', b'GET /\x01 HTTP/1.1',
                            b'GET /\x80\t HTTP/1.1', b'GET  HTTP/1.1',
                            b'HTTP/1.1 200 OK', b'HTTP/1.1 204 No Content',
                            b'HTTP/1.1 304 \x01', b'HTTP/1.1 099 x', b'HTTP/1.0 200 OK',
                            b'HTTP/1.1 2000 OK', b'HTTP/1.1 101 Switching',
                            b'GET http://h:80/x HTTP/1.1', b'OPTIONS * HTTP/1.1'])
    else:
        start = b'GET /' + bytes(rng.choice(b'abc/?=&%:.\t\r') for _ in
                                 range(rng.randint(0, 70))) + b' HTTP/1.1'
    eol = rng.choice([b'\r\n', b'\n'])
    out = bytearray(start + eol)
    nl = rng.randint(0, 40 if rng.random() < 0.9 else 120)
    align_end = rng.random() < 0.5
    for i in range(nl):
        name = rng.choice(NAMES + [b'Hxst', b'Date', b'ETag', b'Content-Type',
                                   b'Connection', b'Upgrade', b'Ho', b'C' * 14,
                                   b'Transfer-Encodinh', b'tRACEPARENT'])
        sep = rng.choice([b':', b': ', b'::', b'', b' :', b':\t'])
        val = rng.choice(VALS + [b'x' * rng.randint(0, 130), b'a:b', b'h2c'])
        end = rng.choice([eol, eol, eol, b'\n', b'\r\r\n'])
        if rng.random() < 0.2 or (align_end and i == nl - 1):
            # its LF the last byte of a 64-byte block
            fixed = len(out) + len(name) + len(sep) + len(end) - 1
            val = b'v' * ((63 - fixed) % 64 + 64 * rng.randint(0, 1))
        line = name + sep + val
        if rng.random() < 0.05:
            line = rng.choice([b' ', b'\t']) + line
        out += line + end
    if rng.random() < 0.3 and not align_end:
        out += b'Content-Length: ' + str(rng.randint(0, 20)).encode() + eol
    out += rng.choice([eol, eol, b'\n', b''])
    if rng.random() < 0.5:      # pipelined: the next head in the same bytes
        out += synth_head(t, rng.choice([None, b'GET http://h:80/x HTTP/1.1']))
    return bytes(out)


def mutate(recs):
    recs = [list(r) for r in recs]
    data = [r for r in recs if r[0] < 2 and r[1]]
    if not data:
        return recs
    for _ in range(rng.randint(1, 4)):
        r = rng.choice(data)
        d = bytearray(r[1])
        k = rng.randint(0, 13)
        pos = rng.randint(0, len(d))
        if k >= 12:         # a whole head made up, put at a head's start
            starts = [0] + [i + 2 + (d[i + 1] == 13) for i in range(len(d) - 2)
                            if d[i] == 10 and (d[i + 1] == 10 or
                                               d[i + 1:i + 3] == b'\r\n')]
            at = rng.choice(starts)
            d[at:at] = synth_head(r[0])
        elif k <= 2:          # a header line inserted at a line start
            starts = [0] + [i + 1 for i in range(len(d)) if d[i] == 10]
            pos = rng.choice(starts)
            line = rng.choice(NAMES) + rng.choice([b':', b': ', b' : ', b'']) + \
                rng.choice(VALS) + rng.choice([b'\r\n', b'\n', b'\r\r\n'])
            if rng.random() < 0.1:
                line = rng.choice([b' ', b'\t']) + line
            d[pos:pos] = line
        elif k == 3:        # a byte changed
            if d:
                d[min(pos, len(d) - 1)] = rng.choice(b'\r\n: \t\x00\x7f\x80Aa-')
        elif k == 4:        # bytes cut
            del d[pos:pos + rng.randint(1, 20)]
        elif k == 5:        # bytes repeated
            d[pos:pos] = d[pos:pos + rng.randint(1, 60)]
        elif k == 6:        # case flipped in a run
            for i in range(pos, min(len(d), pos + 30)):
                if 65 <= d[i] <= 90 or 97 <= d[i] <= 122:
                    d[i] ^= 0x20
        elif k == 7:        # a record split in two
            i = recs.index(r)
            recs[i:i + 1] = [[r[0], bytes(d[:pos])], [r[0], bytes(d[pos:])]]
            data = [x for x in recs if x[0] < 2 and x[1]]
            continue
        elif k == 8:        # a long line
            d[pos:pos] = rng.choice([b'a' * 40, b'G' * 1700, b'/' * 800])
        elif k >= 10:       # a byte of a start line (mostly near its end)
            e = d.find(b'\n')
            if e > 0:
                at = max(0, e - rng.randint(1, 12)) if k == 10 else rng.randint(0, e)
                d[at] = rng.choice(list(range(0, 32)) + [0x7f, 0x80, 0xff, 0x20])
        else:               # records merged
            i = recs.index(r)
            if i + 1 < len(recs) and recs[i + 1][0] == r[0]:
                recs[i:i + 2] = [[r[0], bytes(d) + recs[i + 1][1]]]
                data = [x for x in recs if x[0] < 2 and x[1]]
                continue
        r[1] = bytes(d)
    return recs


def run(binary, args):
    p = subprocess.run([binary] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    return p.returncode, p.stdout


tmp = tempfile.mkdtemp(prefix='bp-http-diff.')
files = []
for f in sorted(os.listdir(caps)):
    if f.endswith('.cap') and (f.startswith('http-') or f.startswith('http1')):
        files.append(os.path.join(caps, f))
base = list(files)
for k in range(N):
    head, recs = parse(rng.choice(base))
    p = os.path.join(tmp, 'm%04d.cap' % k)
    write(p, head, mutate(recs))
    files.append(p)
for k in range(N // 2):       # made-up heads only, one to three records
    head, recs = parse(rng.choice(base))
    p = os.path.join(tmp, 's%04d.cap' % k)
    write(p, head, [(t, synth_head(t)) for t in
                    [rng.randint(0, 1) for _ in range(rng.randint(1, 3))]])
    files.append(p)
modes = [['-m', 'records'], ['-m', 'whole'], ['-m', 'bytes'], ['-m', 'front']] + \
    [['-m', 'random', '-s', str(s)] for s in (1, 2, 3, 4)]
bad = runs = 0
for f in files:
    for m in modes:
        for dflag in ([], ['-d']):
            a = run(old, m + dflag + [f])
            b = run(new, m + dflag + [f])
            runs += 1
            if a != b:
                bad += 1
                if bad <= 10:
                    print('DIFF', f, ' '.join(m + dflag))
print('http-diff: %d captures, %d outputs compared, %d differ' %
      (len(files), runs, bad))
if bad == 0:
    subprocess.run(['rm', '-rf', tmp])
else:
    print('kept', tmp)
sys.exit(1 if bad else 0)
