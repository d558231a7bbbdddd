#!/usr/bin/python3
"""ssl-seeds.py DIR - seed inputs for fuzz/fuzz-ssl (fuzz/fuzz_ssl.c):
per processor a pair opened, its requests written by the client in one
record, read back in small and large reads with readiness checks, an
answer written, then one hostile ending each (free before shutdown,
SSL_clear and reuse, re-binding, a closed descriptor, an unknown
session); for PostgreSQL and MySQL also with the cleartext that asks for
TLS first, so that the processor starts over on the plaintext."""
import os
import sys

OPEN, CW, RD, SW, FREE, SHUT, CLEAR, REBIND, CLOSE, UNK, POLL, PEND = \
    range(12)
REQ = [b'aa\nbbb\nc\n',
       b'GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n'
       b'Content-Length: 3\r\n\r\nabc',
       b'\0\0\0\x08\x04\xd2\x16\x2f' + b'\0\0\0\x1d\0\x03\0\0user\0pg\0'
       b'database\0pg\0\0' + b'Q\0\0\0\x0dSELECT 1\0',
       b'\x0a\0\0\x01\x03SELECT 1' + b'\x05\0\0\0\x0eSELECT',
       b'*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n',
       b'\x01\x01\0\x01\0\x08\0\0\0\x01\0\0\0\0\0\0\x01\x04\0\x01\0\0\0\0',
       b'hello oneshot'
       ]
ENDS = [[FREE], [CLEAR, 1, 0], [REBIND], [CLOSE], [UNK, 9], [SHUT]]


def op(o, pair=0):
    return bytes([o + 12 * pair])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    n = 0
    for k, req in enumerate(REQ):
        for how in range(3):
            for e, end in enumerate(ENDS):
                s = op(OPEN) + bytes([k, how])
                s += op(CW) + bytes([len(req)]) + req
                s += op(POLL) + op(RD) + bytes([1, 0]) + op(POLL)
                s += op(RD) + bytes([2, 2]) + op(RD) + bytes([200, 1])
                s += op(PEND) + op(POLL)
                s += op(SW) + bytes([5, how & 1]) + b'ok\r\n\n'
                s += op(end[0]) + bytes(end[1:])
                s += op(CW) + bytes([len(req)]) + req + op(RD) + \
                    bytes([100, 0]) + op(POLL)
                s += op(OPEN, 1) + bytes([k, how]) + op(CW, 1) + \
                    bytes([len(req)]) + req + op(RD, 1) + bytes([3, 1])
                with open(os.path.join(out, 'seed-%03d' % n), 'wb') as f:
                    f.write(s)
                n += 1
    # the cleartext asking for TLS first (open with B & 4), then the
    # plaintext a restarted processor expects: PostgreSQL's startup and a
    # query, MySQL's handshake response (sequence id 2) and a query
    hsr = (b'\x08\x8a\x08\x00\x00\x00\x00\x01\x21' + bytes(23) +
           b'alice\0\x14' + b'0123456789' * 2 + b'shop\0' +
           b'mysql_native_password\0')
    after = {2: REQ[2][8:],
             3: len(hsr).to_bytes(3, 'little') + b'\x02' + hsr +
             b'\x09\0\0\0\x03SELECT 1'}
    for k, req in after.items():
        for how in (4, 5, 6):
            for e, end in enumerate(ENDS):
                s = op(OPEN) + bytes([k, how])
                s += op(CW) + bytes([len(req)]) + req
                s += op(RD) + bytes([3, 0]) + op(POLL) + op(RD) + \
                    bytes([200, 1]) + op(RD) + bytes([200, 0])
                s += op(SW) + bytes([4, 0]) + b'Z\0\0\0'
                s += op(end[0]) + bytes(end[1:])
                with open(os.path.join(out, 'seed-%03d' % n), 'wb') as f:
                    f.write(s)
                n += 1
    print('%d seeds in %s' % (n, out))


if __name__ == '__main__':
    main()
