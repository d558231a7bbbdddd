#!/usr/bin/python3
"""tbpyfront.py - the threaded Python server of tb-pyfront.sh
(docs/accuracy.md): a server that calls its backend on pooled keep-alive
connections whose sockets have a timeout.

  tbpyfront.py front PORT BACKEND_PORT PIDFILE MODE   (TB_PG, TB_POOL)
  tbpyfront.py backend PORT PIDFILE

front: http.server.ThreadingHTTPServer (a thread per client connection,
HTTP/1.1 keep-alive); GET /py/app?id=ID&n=N runs N SQL statements (0..3,
ID in each, the third repeating the first) on a psycopg2 connection taken
from a pool of TB_POOL (default 4) shared by every thread (a request
waits for a free one), then calls the backend GET /b?id=ID on a
connection taken from a pool of TB_POOL keep-alive connections shared by
every thread: so a call goes out on a connection another request used
last.  The pool's connections open when first used, in a request, as
http.client and requests open them (TB_PRECONNECT=1, http.client only:
all at start, for no request).  MODE says what the pool holds:

  httpclient  http.client.HTTPConnection(timeout=30): CPython polls the
              socket (POLLOUT) before each send, POLLIN before each recv
  requests    one requests.Session() whose adapter keeps TB_POOL
              connections (pool_block), each get with timeout=30
  blocking    http.client.HTTPConnection without a timeout: blocking
              socket calls (the control)

It answers "id ID", "sql TEXT" per statement, "lookup 127.0.0.1" when the
call opened a connection (http.client and urllib3 resolve the address
with getaddrinfo, a dns span of the request: socket.getaddrinfo is
wrapped to note it, per thread), "call /b?id=ID", "end ID" (tb-client
--calls 1 checks it); a backend answer that does not name ID
is a 502: the application's own ground truth.
backend: the same server; GET /b?id=ID answers "id ID\\nend ID\\n".
Both listen on 127.0.0.1, write PIDFILE once they do, and exit 0 on
SIGTERM.
"""
import http.client
import os
import queue
import socket
import sys
import urllib.parse

import tbserve
from tbserve import ID_RE, NOTED, noting_getaddrinfo

SQL = (
    "SELECT v FROM tb_kv WHERE k = '%s'",
    "INSERT INTO tb_hits (id, n) VALUES ('%s', 1)",
    "SELECT v FROM tb_kv WHERE k = '%s'",
)
TIMEOUT = 30
class Handler(tbserve.Handler):
    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        rid = q.get('id', [''])[0]
        if not ID_RE.match(rid):
            return self.answer(400, 'bad request: id [a-z0-9]\n')
        if self.server.role == 'backend':
            if url.path != '/b':
                return self.answer(404, 'no such path\n')
            return self.answer(200, 'id %s\nend %s\n' % (rid, rid))
        try:
            n = int(q.get('n', ['x'])[0])
        except ValueError:
            n = -1
        if url.path != '/py/app' or not 0 <= n <= 3:
            return self.answer(400, 'bad request: /py/app, n 0..3\n')
        out = ['id ' + rid]
        if n:
            pg = self.server.pg.get()
            try:
                with pg.cursor() as cur:
                    for i in range(n):
                        stmt = SQL[i] % rid
                        cur.execute(stmt)
                        if cur.description:
                            cur.fetchall()
                        out.append('sql ' + stmt)
            finally:
                self.server.pg.put(pg)
        path = '/b?id=' + rid
        NOTED.lookups = []
        try:
            status, body = self.server.call(path)
        finally:
            lookups, NOTED.lookups = NOTED.lookups, None
        if status != 200 or body != 'id %s\nend %s\n' % (rid, rid):
            return self.answer(502, 'backend answered %d %r\n' % (status,
                                                                   body))
        out.extend('lookup ' + h for h in lookups)
        out.append('call ' + path)
        out.append('end ' + rid)
        self.answer(200, '\n'.join(out) + '\n')


def http_pool(port, size, mode):
    """The call function of MODE over SIZE keep-alive connections."""
    if mode == 'requests':
        import requests
        import requests.adapters
        sess = requests.Session()
        sess.mount('http://', requests.adapters.HTTPAdapter(
            pool_connections=1, pool_maxsize=size, pool_block=True))
        base = 'http://127.0.0.1:%d' % port

        def call(path):
            r = sess.get(base + path, timeout=TIMEOUT)
            return r.status_code, r.text
        return call
    free = queue.Queue()
    for _ in range(size):
        if mode == 'httpclient':
            c = http.client.HTTPConnection('127.0.0.1', port,
                                           timeout=TIMEOUT)
        else:
            c = http.client.HTTPConnection('127.0.0.1', port)
        if os.environ.get('TB_PRECONNECT') == '1':
            c.connect()
        free.put(c)

    def call(path):
        c = free.get()
        try:
            c.request('GET', path)
            r = c.getresponse()
            return r.status, r.read().decode()
        finally:
            free.put(c)
    return call


def main():
    if len(sys.argv) == 6 and sys.argv[1] == 'front' and \
            sys.argv[5] in ('httpclient', 'requests', 'blocking'):
        role, port, pidfile = 'front', int(sys.argv[2]), sys.argv[4]
    elif len(sys.argv) == 4 and sys.argv[1] == 'backend':
        role, port, pidfile = 'backend', int(sys.argv[2]), sys.argv[3]
    else:
        print('usage: tbpyfront.py front PORT BACKEND_PORT PIDFILE '
              'httpclient|requests|blocking | backend PORT PIDFILE',
              file=sys.stderr)
        return 2
    srv = tbserve.Server(('127.0.0.1', port), Handler)
    srv.role = role
    if role == 'front':
        import psycopg2
        socket.getaddrinfo = noting_getaddrinfo
        size = int(os.environ.get('TB_POOL', '') or 4)
        srv.pg = queue.Queue()
        for _ in range(size):
            c = psycopg2.connect(os.environ['TB_PG'])
            c.autocommit = True
            srv.pg.put(c)
        srv.call = http_pool(int(sys.argv[3]), size, sys.argv[5])
    return tbserve.serve(srv, pidfile)


if __name__ == '__main__':
    sys.exit(main())
