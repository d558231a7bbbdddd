#!/usr/bin/python3
"""mkseeds.py CAPTURE_DIR OUT_DIR - write fuzz seed inputs (the format of
fuzz/fuzz_proto.c) from the capture files: OUT_DIR/<proto>/<capture>,
one directory per processor name as used by the fuzz targets (http,
fastcgi, postgresql, dns, line, oneshot, redis, mysql, http2).  Every capture seeds its own
processor; the HTTP captures also seed line, and all seed oneshot."""
import os
import sys

ROLES = {'client': 1, 'server': 2, 'unknown': 0}


def convert(path):
    b = open(path, 'rb').read()
    head, body = b.split(b'\n\n', 1)
    meta = dict(l.split(' ', 1) for l in head.decode().split('\n')[1:])
    first = ROLES[meta['role']] | (4 if meta['transport'] == 'dgram' else 0)
    out = bytearray([first | (len(body) % 32) << 3])
    pos = 0
    while pos < len(body):
        t = body[pos]
        n = int.from_bytes(body[pos + 1:pos + 5], 'big')
        d = body[pos + 5:pos + 5 + n]
        pos += 5 + n
        if t >= 2:
            out.append(2 | (t & 1))
            continue
        for i in range(0, len(d), 65535):
            piece = d[i:i + 65535]
            out += bytes([t]) + len(piece).to_bytes(2, 'big') + piece
    return meta['proto'], bytes(out)


def main():
    caps, outdir = sys.argv[1], sys.argv[2]
    n = 0
    for f in sorted(os.listdir(caps)):
        if not f.endswith('.cap'):
            continue
        proto, seed = convert(os.path.join(caps, f))
        targets = {proto, 'oneshot'}
        if proto == 'http':
            targets.add('line')
        for t in targets:
            os.makedirs(os.path.join(outdir, t), exist_ok=True)
            with open(os.path.join(outdir, t, f[:-4]), 'wb') as o:
                o.write(seed)
            n += 1
    print('mkseeds: %d seeds in %s' % (n, outdir))


if __name__ == '__main__':
    main()
