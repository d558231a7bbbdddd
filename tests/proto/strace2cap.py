#!/usr/bin/python3
"""strace2cap - turn strace logs of a real program into a capture file.

Usage:
  strace2cap.py --list LOG...
  strace2cap.py --chan REGEX --proto NAME --role client|server|unknown
                [--transport stream|dgram] [--source TEXT] [--nth N]
                [--min-fd N]
                -o OUT.cap LOG...

The logs come from
  strace -f -ff -ttt -yy -xx -s 1048576 -o PREFIX \\
         -e trace=read,write,readv,writev,recvfrom,sendto,recvmsg,sendmsg,\\
recvmmsg,sendmmsg,sendfile,close,shutdown  COMMAND
(one file per thread, PREFIX.TID; -ttt lets the files be merged in time
order, -yy names each socket, -xx shows every byte).

--list prints every channel seen (the socket annotation strace gives the
fd, e.g. TCP:[127.0.0.1:8080->127.0.0.1:40000] or UNIX-STREAM:[123->124])
with its syscall count and bytes in and out.  Otherwise the syscalls on the
channels whose annotation matches REGEX (the --nth one, counting from 1, in
order of first data, if several carrying data match; only calls on fds
of --min-fd and above, so that the two ends of a pipe in a parent and its
traced child can be told apart) become the records of OUT: data
read/received is "in", data written/sent is "out", a read returning 0 is
the end of input, shutdown(SHUT_WR/RDWR) or close() the end of output (and
close() of input).  sendfile() bytes are read from the file named by strace
at the offset it shows.  Failed calls (-1) are skipped.  Capture format:
tests/proto/README.md.
"""
import argparse
import glob
import re
import sys

ANN = r'<((?:->|<[^<>]*>|[^<>])*)>'
LINE = re.compile(r'^(\d+\.\d+) (\w+)\((\d+)' + ANN + r'(.*)\) += (-?\d+)')
STR = re.compile(r'"((?:\\x[0-9a-f]{2})*)"(\.\.\.)?')
IOV = re.compile(r'iov_base="((?:\\x[0-9a-f]{2})*)"(\.\.\.)?')
SENDFILE = re.compile(r'^, (\d+)' + ANN + r', (?:\[(\d+)\] => \[\d+\]|NULL), ')

READS = {'read', 'recvfrom', 'readv', 'recvmsg', 'recvmmsg'}
WRITES = {'write', 'sendto', 'writev', 'sendmsg', 'sendmmsg', 'sendfile'}


def hexstr(s):
    return bytes(int(s[i + 2:i + 4], 16) for i in range(0, len(s), 4))


def die(msg):
    sys.stderr.write('strace2cap: %s\n' % msg)
    sys.exit(1)


def calls(logs):
    """Yield (time, file, lineno, name, fd, annotation, rest, result)."""
    rows = []
    for path in logs:
        with open(path, encoding='latin-1') as f:
            for no, line in enumerate(f, 1):
                m = LINE.match(line)
                if not m:
                    if ('resumed>' in line or 'unfinished' in line) and \
                            any(w in line for w in READS | WRITES):
                        die('%s:%d: split call (use -ff, one file per '
                            'thread): %s' % (path, no, line.strip()))
                    continue
                t, name, fd, ann, rest, res = m.groups()
                ann = re.sub(r'\\x([0-9a-f]{2})',
                             lambda x: chr(int(x.group(1), 16)), ann)
                rows.append((float(t), path, no, name, int(fd), ann, rest,
                             int(res)))
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    return rows


def payloads(name, rest, res, where):
    """The datagrams/byte strings a call moved, cut to what it returned."""
    if name in ('recvmmsg', 'sendmmsg'):
        out = []
        for part in rest.split('msg_hdr=')[1:res + 1]:
            iov = b''.join(chunk(IOV, part, where))
            ml = re.search(r'msg_len=(\d+)', part)
            out.append(iov[:int(ml.group(1))] if ml else iov)
        return out
    if name in ('readv', 'writev', 'recvmsg', 'sendmsg'):
        data = b''.join(chunk(IOV, rest, where))
    else:
        m = STR.search(rest)
        if not m:
            die('%s: no data string' % where)
        if m.group(2):
            die('%s: string cut by strace (raise -s)' % where)
        data = hexstr(m.group(1))
    if len(data) < res:
        die('%s: %d bytes shown, %d moved (raise -s)' % (where, len(data),
                                                         res))
    return [data[:res]]


def chunk(rx, text, where):
    out = []
    for m in rx.finditer(text):
        if m.group(2):
            die('%s: string cut by strace (raise -s)' % where)
        out.append(hexstr(m.group(1)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('logs', nargs='+')
    ap.add_argument('--list', action='store_true')
    ap.add_argument('--chan')
    ap.add_argument('--nth', type=int, default=1)
    ap.add_argument('--min-fd', type=int, default=0)
    ap.add_argument('--proto')
    ap.add_argument('--role', choices=['client', 'server', 'unknown'])
    ap.add_argument('--transport', choices=['stream', 'dgram'],
                    default='stream')
    ap.add_argument('--source', default='')
    ap.add_argument('-o', '--output')
    a = ap.parse_args()
    logs = []
    for p in a.logs:
        logs += sorted(glob.glob(p)) or [p]
    rows = calls(logs)

    if a.list:
        seen = {}
        for t, path, no, name, fd, ann, rest, res in rows:
            s = seen.setdefault(ann, [0, 0, 0])
            s[0] += 1
            if res > 0 and name in READS:
                s[1] += res
            elif res > 0 and name in WRITES:
                s[2] += res if name != 'sendmmsg' else 0
        for ann, (n, i, o) in seen.items():
            print('%6d calls %9d in %9d out  %s' % (n, i, o, ann))
        return
    if not (a.chan and a.proto and a.role and a.output):
        die('need --chan, --proto, --role and -o (or --list)')
    rx = re.compile(a.chan)
    order = []
    for r in rows:
        moved = r[7] > 0 and (r[3] in READS or r[3] in WRITES) and \
            r[4] >= a.min_fd
        if moved and rx.search(r[5]) and r[5] not in order:
            order.append(r[5])
    if len(order) < a.nth:
        die('%d channel(s) match %r, wanted number %d' % (len(order),
                                                          a.chan, a.nth))
    chan = order[a.nth - 1]
    # the fds that carried data: a close of another fd of the same channel
    # (the other end of a pipe, closed after fork) is not its end
    fds = {(r[1], r[4]) for r in rows if r[5] == chan and r[7] > 0 and
           r[4] >= a.min_fd and (r[3] in READS or r[3] in WRITES)}
    recs = []
    eof = [False, False]
    for t, path, no, name, fd, ann, rest, res in rows:
        if ann != chan or fd < a.min_fd:
            continue
        where = '%s:%d' % (path, no)
        if name == 'close':
            if (path, fd) not in fds:
                continue
            for d in (0, 1):
                if not eof[d]:
                    recs.append((2 + d, b''))
                    eof[d] = True
            continue
        if name == 'shutdown':
            how = rest.strip(', ')
            if how in ('SHUT_WR', 'SHUT_RDWR') and not eof[1]:
                recs.append((3, b''))
                eof[1] = True
            continue
        if res < 0:
            continue
        if name in READS and res == 0 and a.transport == 'stream':
            if not eof[0]:
                recs.append((2, b''))
                eof[0] = True
            continue
        if name == 'sendfile':
            m = SENDFILE.match(rest)
            if not m or m.group(3) is None:
                die('%s: sendfile without an explicit offset' % where)
            path = re.sub(rb'\\x([0-9a-f]{2})',
                          lambda x: bytes([int(x.group(1), 16)]),
                          m.group(2).split('<')[0].encode())
            with open(path, 'rb') as f:
                f.seek(int(m.group(3)))
                data = f.read(res)
            if len(data) != res:
                die('%s: %s changed since the capture' % (where,
                                                          m.group(2)))
            recs.append((1, data))
            continue
        d = 0 if name in READS else 1
        for data in payloads(name, rest, res, where):
            if data or a.transport == 'dgram':
                recs.append((d, data))
    with open(a.output, 'wb') as f:
        f.write(b'BPCAP1\n')
        f.write(('proto %s\nrole %s\ntransport %s\nsource %s\nchannel %s\n\n'
                 % (a.proto, a.role, a.transport, a.source, chan)).encode())
        for typ, data in recs:
            if typ < 2 and not data:
                continue
            f.write(bytes([typ]) + len(data).to_bytes(4, 'big') + data)
    nin = sum(len(d) for t, d in recs if t == 0)
    nout = sum(len(d) for t, d in recs if t == 1)
    sys.stderr.write('strace2cap: %s: %s: %d records, %d bytes in, %d out\n'
                     % (a.output, chan, len(recs), nin, nout))


if __name__ == '__main__':
    main()
