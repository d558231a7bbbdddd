#!/usr/bin/python3
"""tbmyfront.py - the threaded Python server of tb-mariadb.sh
(docs/accuracy.md): a server whose requests share a pool of MariaDB
connections.

  tbmyfront.py PORT PIDFILE        (TB_MY_SOCKET, TB_MY_DB, TB_POOL)

http.server.ThreadingHTTPServer (a thread per client connection, HTTP/1.1
keep-alive); GET /py/app?id=ID&n=N runs N statements (0..3, ID in each)
on a pymysql connection taken from a pool of TB_POOL (default 4) shared
by every thread (a request waits for a free one; a connection serves
whichever request takes it next, and mariadbd reads that request's first
command without polling first):

  1  a text query (COM_QUERY): SELECT v FROM tb_kv WHERE k = 'ID'
  2  a server-side prepared statement: COM_STMT_PREPARE of
     INSERT INTO tb_hits (id, n) VALUES ('ID', ?), COM_STMT_EXECUTE with
     the parameter 1, COM_STMT_CLOSE
  3  the same with SELECT v FROM tb_kv WHERE k = 'ID' OR k = ? and the
     parameter 'none'

pymysql has no prepared statements of its own: the COM_STMT_* packets go
through its packet layer (_execute_command, _read_packet), the binary
protocol a C client speaks.  It answers "id ID", per prepared statement
"mysqlprep TEXT" (its prepare) and per statement run "mysql TEXT" (a text
query or an execute), then "end ID".  Listens on 127.0.0.1, writes
PIDFILE once it does, exits 0 on SIGTERM.
"""
import os
import queue
import struct
import sys
import urllib.parse

import pymysql

import tbserve
from tbserve import ID_RE

COM_STMT_PREPARE, COM_STMT_EXECUTE, COM_STMT_CLOSE = 0x16, 0x17, 0x19
MORE_RESULTS = 0x0008


def read_to_eof(conn):
    """Packets up to an EOF packet (pymysql does not negotiate
    CLIENT_DEPRECATE_EOF); its status flags."""
    while True:
        p = conn._read_packet()
        if p.is_eof_packet():
            return struct.unpack('<H', p.get_all_data()[3:5])[0]


def prepare(conn, sql):
    """COM_STMT_PREPARE: the statement id."""
    conn._execute_command(COM_STMT_PREPARE, sql)
    d = conn._read_packet().get_all_data()
    sid, cols, params = struct.unpack('<IHH', d[1:9])
    for n in (params, cols):
        if n:
            read_to_eof(conn)
    return sid


def execute(conn, sid, args):
    """COM_STMT_EXECUTE with string parameters; the number of rows."""
    body = struct.pack('<IBI', sid, 0, 1)
    if args:
        body += b'\x00' * ((len(args) + 7) // 8) + b'\x01'
        body += b'\xfd\x00' * len(args)
        for a in args:
            b = a.encode()
            body += bytes([len(b)]) + b
    conn._execute_command(COM_STMT_EXECUTE, body)
    rows = 0
    while True:
        p = conn._read_packet()
        if p.is_ok_packet():
            return rows
        read_to_eof(conn)               # column definitions
        while True:
            p = conn._read_packet()
            if p.is_eof_packet():
                break
            rows += 1
        if not struct.unpack('<H', p.get_all_data()[3:5])[0] & MORE_RESULTS:
            return rows


def close(conn, sid):
    """COM_STMT_CLOSE (no reply)."""
    conn._execute_command(COM_STMT_CLOSE, struct.pack('<I', sid))


def run(conn, rid, n):
    """The N statements of request RID: the lines of the answer."""
    out = []
    with conn.cursor() as cur:
        if n >= 1:
            stmt = "SELECT v FROM tb_kv WHERE k = '%s'" % rid
            cur.execute(stmt)
            cur.fetchall()
            out.append('mysql ' + stmt)
    if n >= 2:
        stmt = "INSERT INTO tb_hits (id, n) VALUES ('%s', ?)" % rid
        sid = prepare(conn, stmt)
        out.append('mysqlprep ' + stmt)
        execute(conn, sid, ['1'])
        out.append('mysql ' + stmt)
        close(conn, sid)
    if n >= 3:
        stmt = "SELECT v FROM tb_kv WHERE k = '%s' OR k = ?" % rid
        sid = prepare(conn, stmt)
        out.append('mysqlprep ' + stmt)
        execute(conn, sid, ['none'])
        out.append('mysql ' + stmt)
        close(conn, sid)
    return out


class Handler(tbserve.Handler):
    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        rid = q.get('id', [''])[0]
        try:
            n = int(q.get('n', ['x'])[0])
        except ValueError:
            n = -1
        if not ID_RE.match(rid) or url.path != '/py/app' or \
                not 0 <= n <= 3:
            return self.answer(400, 'bad request: /py/app?id=ID&n=0..3\n')
        out = ['id ' + rid]
        if n:
            conn = self.server.pool.get()
            try:
                out += run(conn, rid, n)
            finally:
                self.server.pool.put(conn)
        out.append('end ' + rid)
        self.answer(200, '\n'.join(out) + '\n')


def main():
    if len(sys.argv) != 3:
        print('usage: tbmyfront.py PORT PIDFILE', file=sys.stderr)
        return 2
    port, pidfile = int(sys.argv[1]), sys.argv[2]
    srv = tbserve.Server(('127.0.0.1', port), Handler)
    srv.pool = queue.Queue()
    for _ in range(int(os.environ.get('TB_POOL', '') or 4)):
        srv.pool.put(pymysql.connect(
            unix_socket=os.environ['TB_MY_SOCKET'], user='root',
            database=os.environ.get('TB_MY_DB', 'tb'), autocommit=True))
    return tbserve.serve(srv, pidfile)


if __name__ == '__main__':
    sys.exit(main())
