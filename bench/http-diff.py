#!/usr/bin/python3
"""http-diff.py OLD_PP_REPLAY NEW_PP_REPLAY CAPTURE_DIR [N]

Differential check of two builds of the HTTP processor: runs both
pp-replay binaries over every HTTP capture of CAPTURE_DIR and N (default
700) mutated copies of them (header names in other cases and near-miss
names, colons and control bytes in names and values, long lines, lines
of 1 to 40 bytes, obs-fold, bare CR and LF, cut and repeated bytes), each
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


def mutate(recs):
    recs = [list(r) for r in recs]
    data = [r for r in recs if r[0] < 2 and r[1]]
    if not data:
        return recs
    for _ in range(rng.randint(1, 4)):
        r = rng.choice(data)
        d = bytearray(r[1])
        k = rng.randint(0, 11)
        pos = rng.randint(0, len(d))
        if k <= 2:          # a header line inserted at a line start
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
