#!/usr/bin/python3
"""tlsclient.py MODE PORT TAG LOG - a TLS client (Python's ssl, OpenSSL)
that writes every plaintext chunk it sends and receives to LOG, the ground
truth e2e_check.py frames for an encrypted connection (strace sees only
ciphertext there).  Used by e2e.sh.

LOG has one line per chunk, in call order:

    LPORT PORT DIR HEX

DIR 'out' (sent) or 'in' (received); the bytes a connection moves before
its TLS handshake (PostgreSQL's SSLRequest and the 'S' answer) are logged
the same way: the channel counts them too.

Modes:
  https  to an HTTPS server: one keep-alive connection with a GET, a GET
         with a query, a 404, a POST with a 3,000-byte body, two GETs and
         a HEAD pipelined in one write, then a GET with Connection: close;
         a second connection with one GET.  Paths /tls1-TAG.html ...
  pg     to PostgreSQL with ssl = on (SSLRequest, 'S', TLS): the start-up
         (user and database postgres, trust), simple queries (one an
         error), an extended query (Parse/Bind/Describe/Execute/Sync),
         two simple queries in one write, Terminate.
"""
import socket
import ssl
import struct
import sys


class Conn:
    """A TCP connection whose plaintext is logged."""

    def __init__(self, port, log):
        self.port = port
        self.log = log
        self.s = socket.create_connection(('127.0.0.1', port), timeout=20)
        self.lport = self.s.getsockname()[1]
        self.buf = b''

    def wrap(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(['http/1.1'])
        self.s = ctx.wrap_socket(self.s)

    def note(self, d, data):
        self.log.write('%d %d %s %s\n' % (self.lport, self.port, d,
                                          data.hex()))
        self.log.flush()

    def send(self, data):
        self.s.sendall(data)
        self.note('out', data)

    def fill(self):
        b = self.s.recv(65536)
        if not b:
            raise SystemExit('connection closed by the server')
        self.note('in', b)
        self.buf += b

    def take(self, n):
        while len(self.buf) < n:
            self.fill()
        b, self.buf = self.buf[:n], self.buf[n:]
        return b

    def line_block(self):
        while b'\r\n\r\n' not in self.buf:
            self.fill()
        h, self.buf = self.buf.split(b'\r\n\r\n', 1)
        return h

    def close(self):
        self.s.close()


def http_reply(c, head=False):
    h = c.line_block().decode('latin-1')
    status = int(h.split(' ', 2)[1])
    n = 0
    for line in h.split('\r\n')[1:]:
        k, _, v = line.partition(':')
        if k.strip().lower() == 'content-length':
            n = int(v)
    if not head:
        c.take(n)
    return status


def req(method, path, extra=b'', body=b''):
    r = b'%s %s HTTP/1.1\r\nHost: tls.test\r\n' % (method, path) + extra
    if body:
        r += b'Content-Length: %d\r\n' % len(body)
    return r + b'\r\n' + body


def https(port, tag, log):
    t = tag.encode()
    c = Conn(port, log)
    c.wrap()
    want = [(b'GET', b'/tls1-%s.html' % t, 200),
            (b'GET', b'/tls2-%s.html?q=2' % t, 200),
            (b'GET', b'/tlsmissing-%s.html' % t, 404),
            (b'POST', b'/tls3-%s.html' % t, 200)]
    for m, p, st in want:
        body = b'b' * 3000 if m == b'POST' else b''
        c.send(req(m, p, body=body))
        assert http_reply(c) == st, p
    c.send(req(b'GET', b'/tls4-%s.html' % t) +
           req(b'GET', b'/tls5-%s.html' % t) +
           req(b'HEAD', b'/tls6-%s.html' % t))
    assert http_reply(c) == 200 and http_reply(c) == 200
    assert http_reply(c, head=True) == 200
    c.send(req(b'GET', b'/tls7-%s.html' % t, b'Connection: close\r\n'))
    assert http_reply(c) == 200
    c.close()
    c = Conn(port, log)
    c.wrap()
    c.send(req(b'GET', b'/tls8-%s.html' % t))
    assert http_reply(c) == 200
    c.close()


def pg_msg(t, body):
    return t + struct.pack('!I', len(body) + 4) + body


def pg_until_z(c):
    """Messages up to ReadyForQuery: [(type, body)]."""
    out = []
    while True:
        h = c.take(5)
        body = c.take(struct.unpack('!I', h[1:])[0] - 4)
        out.append((h[:1], body))
        if h[:1] == b'Z':
            return out


def pg(port, tag, log):
    c = Conn(port, log)
    c.send(struct.pack('!II', 8, 80877103))
    if c.take(1) != b'S':
        raise SystemExit('the server refused SSL')
    c.wrap()
    params = b'user\0postgres\0database\0postgres\0\0'
    c.send(struct.pack('!II', 8 + len(params), 196608) + params)
    assert (b'R', b'\0\0\0\0') in pg_until_z(c)

    def q(sql):
        return pg_msg(b'Q', sql.encode() + b'\0')
    c.send(q('/* tq1-%s */ SELECT 1' % tag))
    assert pg_until_z(c)[-2][0] == b'C'
    c.send(q('/* tq2-%s */ SELECT * FROM nosuch_tls' % tag))
    assert any(t == b'E' for t, b in pg_until_z(c))
    sql = '/* tq3-%s */ SELECT $1::int + 1' % tag
    c.send(pg_msg(b'P', b'\0' + sql.encode() + b'\0\0\0') +
           pg_msg(b'B', b'\0\0' + b'\0\0' + b'\0\x01' +
                  struct.pack('!I', 1) + b'4' + b'\0\0') +
           pg_msg(b'D', b'P\0') + pg_msg(b'E', b'\0\0\0\0\0') +
           pg_msg(b'S', b''))
    assert (b'D', struct.pack('!HI', 1, 1) + b'5') in pg_until_z(c)
    c.send(q('/* tq4-%s */ SELECT repeat(\'x\', 20000)' % tag) +
           q('/* tq5-%s */ SELECT 2' % tag))
    pg_until_z(c)
    pg_until_z(c)
    c.send(pg_msg(b'X', b''))
    c.close()


def main():
    mode, port, tag, path = sys.argv[1:5]
    with open(path, 'w') as log:
        {'https': https, 'pg': pg}[mode](int(port), tag, log)


if __name__ == '__main__':
    main()
