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
  mysql  to MariaDB with a certificate: the greeting, an SSL request
         (CLIENT_SSL, sequence id 1), TLS, the handshake response
         (sequence id 2, user root), COM_QUERY: a result set, an error,
         a 30,000-byte row, two queries in one write; COM_QUIT.
  pymysql  the same server through pymysql (ssl=): its sockets, the
         plain one and the SSLSocket, log what they move (recv_into,
         sendall); a query, a multi-statement query, an error.
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


def my_packet(c):
    h = c.take(4)
    return h[3], c.take(int.from_bytes(h[:3], 'little'))


def my_result(c):
    """One command's answer (no CLIENT_DEPRECATE_EOF): OK, ERR, or
    column count, definitions, EOF, rows, EOF.  Returns the first byte
    of its first packet."""
    seq, b = my_packet(c)
    if b[0] in (0x00, 0xff):
        return b[0]
    for _ in range(b[0]):
        my_packet(c)
    assert my_packet(c)[1][0] == 0xfe
    while True:
        seq, r = my_packet(c)
        if r[0] == 0xfe and len(r) < 9:
            return 1


def mysql(port, tag, log):
    c = Conn(port, log)
    seq, g = my_packet(c)
    assert g[0] == 0x0a, 'no greeting'
    # LONG_PASSWORD, PROTOCOL_41, SSL, TRANSACTIONS, SECURE_CONNECTION,
    # PLUGIN_AUTH
    caps = 0x1 | 0x200 | 0x800 | 0x2000 | 0x8000 | 0x80000
    head = struct.pack('<IIB23s', caps, 1 << 24, 45, b'')
    c.send(struct.pack('<I', len(head))[:3] + b'\x01' + head)
    c.wrap()
    resp = head + b'root\0' + b'\0' + b'mysql_native_password\0'
    c.send(struct.pack('<I', len(resp))[:3] + b'\x02' + resp)
    seq, b = my_packet(c)
    if b[0] == 0xfe:                    # auth switch: an empty answer
        c.send(b'\0\0\0' + bytes([seq + 1]))
        seq, b = my_packet(c)
    assert b[0] == 0x00, 'login failed: %r' % b

    def q(sql):
        sql = sql.encode()
        return struct.pack('<I', len(sql) + 1)[:3] + b'\0\x03' + sql
    c.send(q("SELECT 'tm1-%s'" % tag))
    assert my_result(c) == 1
    c.send(q("SELECT 'tm2-%s' FROM nosuch_tls.t" % tag))
    assert my_result(c) == 0xff
    c.send(q("SELECT REPEAT('x', 30000), 'tm3-%s'" % tag))
    assert my_result(c) == 1
    c.send(q("SELECT 'tm4-%s'" % tag) + q("DO 'tm5-%s'" % tag))
    assert my_result(c) == 1 and my_result(c) == 0
    c.send(b'\x01\0\0\0\x01')
    c.close()


def pymysql_run(port, tag, log):
    import pymysql
    from pymysql.constants import CLIENT
    lport = []

    def note(d, data):
        log.write('%d %d %s %s\n' % (lport[0], port, d, bytes(data).hex()))
        log.flush()

    class Plain(socket.socket):
        def recv_into(self, b, n=0, flags=0):
            k = super().recv_into(b, n, flags)
            note('in', memoryview(b)[:k])
            return k

        def sendall(self, data, flags=0):
            super().sendall(data, flags)
            note('out', data)

    class Tls(ssl.SSLSocket):
        def recv_into(self, b, n=0, flags=0):
            k = super().recv_into(b, n, flags)
            note('in', memoryview(b)[:k])
            return k

        def sendall(self, data, flags=0):
            super().sendall(data, flags)
            note('out', data)

    def connect(addr, timeout=None, *a, **kw):
        s = Plain(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(addr)
        lport.append(s.getsockname()[1])
        return s
    socket.create_connection = connect
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.sslsocket_class = Tls
    c = pymysql.connect(host='127.0.0.1', port=port, user='root', ssl=ctx,
                        client_flag=CLIENT.MULTI_STATEMENTS)
    assert isinstance(c._sock, Tls), 'pymysql did not use TLS'
    cur = c.cursor()
    cur.execute("SELECT 'tp1-%s'" % tag)
    assert cur.fetchall() == (('tp1-' + tag,),)
    cur.execute("SELECT 'tp2-%s'; SELECT 'tp2b-%s'" % (tag, tag))
    assert cur.fetchall() == (('tp2-' + tag,),)
    assert cur.nextset() and cur.fetchall() == (('tp2b-' + tag,),)
    try:
        cur.execute("SELECT 'tp3-%s' FROM nosuch_tls.t" % tag)
    except pymysql.err.MySQLError as e:
        assert e.args[0] in (1049, 1146), e
    else:
        raise SystemExit('no error')
    c.close()


def main():
    mode, port, tag, path = sys.argv[1:5]
    with open(path, 'w') as log:
        {'https': https, 'pg': pg, 'mysql': mysql,
         'pymysql': pymysql_run}[mode](int(port), tag, log)


if __name__ == '__main__':
    main()
