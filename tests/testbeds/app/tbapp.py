"""tbapp.py - the Python (WSGI) application of the testbeds, run by gunicorn
with threaded workers behind nginx.

GET /py/app?id=ID&n=N[&dns=1] (also /pyr/app, the same application reached
through nginx's resolver):
  - runs N SQL statements (1..5), each with ID in its text, on a
    PostgreSQL connection taken from a pool shared by the worker's threads
    and reused across requests (psycopg2 ThreadedConnectionPool, opened
    when the worker starts, so no request pays for a connection); the
    third statement repeats the first identically;
  - with dns=1 resolves "r-ID.test" through glibc (socket.getaddrinfo);
  - answers text/plain: "id ID", one line per operation in the order it
    ran ("sql TEXT", "name NAME ADDR"), then "end ID".
The same recipe as app.php; tb-client checks the answer.  The connection
string comes from the environment (TB_PG), the pool size from TB_POOL
(default: as many connections as threads).
"""
import os
import re
import socket
import time
import urllib.parse

import psycopg2
import psycopg2.pool

SQL = (
    "SELECT v FROM tb_kv WHERE k = '%s'",
    "INSERT INTO tb_hits (id, n) VALUES ('%s', 1)",
    "SELECT v FROM tb_kv WHERE k = '%s'",
    "UPDATE tb_hits SET n = n + 1 WHERE id = '%s'",
    "SELECT n FROM tb_hits WHERE id = '%s'",
)
ID_RE = re.compile(r'^[a-z0-9]{1,40}$')
POOL_SIZE = int(os.environ.get('TB_POOL', '0') or 0) or 8
SLEEP = int(os.environ.get('TB_APP_SLEEP_MS', '0') or 0) / 1000.0

# Opened at import, in the worker (gunicorn imports the application after
# forking it): the connections exist before the first request.
pool = psycopg2.pool.ThreadedConnectionPool(POOL_SIZE, POOL_SIZE,
                                            os.environ['TB_PG'])
for _c in [pool.getconn() for _ in range(POOL_SIZE)]:
    _c.autocommit = True
    pool.putconn(_c)


def answer(start_response, status, text):
    body = text.encode()
    start_response(status, [('Content-Type', 'text/plain'),
                            ('Content-Length', str(len(body)))])
    return [body]


def application(environ, start_response):
    q = urllib.parse.parse_qs(environ.get('QUERY_STRING', ''))
    rid = q.get('id', [''])[0]
    try:
        n = int(q.get('n', ['0'])[0])
    except ValueError:
        n = -1
    if not ID_RE.match(rid) or not 0 <= n <= 5:
        return answer(start_response, '400 Bad Request',
                      'bad request: id must be [a-z0-9]{1,40}, n 0..5\n')
    out = ['id ' + rid]
    if SLEEP:
        time.sleep(SLEEP)   # a slow backend (by hand: TB_APP_SLEEP_MS)
    if n:
        conn = pool.getconn()
        try:
            with conn.cursor() as cur:
                for i in range(n):
                    text = SQL[i] % rid
                    cur.execute(text)
                    if cur.description:
                        cur.fetchall()
                    out.append('sql ' + text)
        finally:
            pool.putconn(conn)
    if q.get('dns', [''])[0]:
        name = 'r-%s.test' % rid
        try:
            addr = socket.getaddrinfo(name, None, socket.AF_INET,
                                      socket.SOCK_STREAM)[0][4][0]
        except socket.gaierror as e:
            addr = 'error:%s' % e.errno
        out.append('name %s %s' % (name, addr))
    out.append('end ' + rid)
    return answer(start_response, '200 OK', '\n'.join(out) + '\n')
