#!/usr/bin/python3
"""myclient.py - a pymysql session for the mysql captures (record.sh my).

  myclient.py SOCKET_OR_PORT USER PASSWORD DB INFILE

Runs, on one connection: text queries with and without a result set, an
error, a multi-statement query (two result sets and an OK), LOAD DATA
LOCAL INFILE of the file INFILE, COM_PING, COM_INIT_DB (select_db),
server-side prepared statements (COM_STMT_PREPARE, COM_STMT_EXECUTE with
a parameter, twice, COM_STMT_CLOSE, an execute of the closed statement:
an error), COM_RESET_CONNECTION and COM_QUIT.  pymysql has no prepared
statements of its own; they are sent here through its packet layer
(_execute_command, _read_packet), as a binary-protocol client does.
pymysql does not negotiate CLIENT_DEPRECATE_EOF: its result sets end
with EOF packets.
"""
import struct
import sys

import pymysql
from pymysql.constants import CLIENT

COM_STMT_PREPARE, COM_STMT_EXECUTE, COM_STMT_CLOSE = 0x16, 0x17, 0x19
COM_RESET_CONNECTION = 0x1f
MORE_RESULTS = 0x0008


def lenenc_str(b):
    n = len(b)
    if n < 251:
        return bytes([n]) + b
    if n < 1 << 16:
        return b'\xfc' + struct.pack('<H', n) + b
    return b'\xfd' + struct.pack('<I', n)[:3] + b


def read_eof_terminated(conn):
    """Packets up to an EOF; its status flags."""
    while True:
        p = conn._read_packet()
        if p.is_eof_packet():
            return struct.unpack('<H', p.get_all_data()[3:5])[0]


def prepare(conn, sql):
    """COM_STMT_PREPARE: (statement id, number of parameters)."""
    conn._execute_command(COM_STMT_PREPARE, sql)
    d = conn._read_packet().get_all_data()
    sid, cols, params = struct.unpack('<IHH', d[1:9])
    for n in (params, cols):
        if n:
            read_eof_terminated(conn)
    return sid, params


def execute(conn, sid, args):
    """COM_STMT_EXECUTE with string parameters; the rows (binary, not
    decoded: their count)."""
    body = struct.pack('<IBI', sid, 0, 1)
    if args:
        body += b'\x00' * ((len(args) + 7) // 8) + b'\x01'
        body += b'\xfd\x00' * len(args)
        body += b''.join(lenenc_str(a.encode()) for a in args)
    conn._execute_command(COM_STMT_EXECUTE, body)
    rows = 0
    while True:
        p = conn._read_packet()
        if p.is_ok_packet():
            return rows
        read_eof_terminated(conn)           # column definitions
        while True:
            p = conn._read_packet()
            if p.is_eof_packet():
                break
            rows += 1
        status = struct.unpack('<H', p.get_all_data()[3:5])[0]
        if not status & MORE_RESULTS:
            return rows


def close(conn, sid):
    conn._execute_command(COM_STMT_CLOSE, struct.pack('<I', sid))


def main():
    where, user, pw, db, infile = sys.argv[1:6]
    kw = dict(user=user, password=pw, database=db, autocommit=True,
              local_infile=True,
              client_flag=CLIENT.MULTI_STATEMENTS | CLIENT.MULTI_RESULTS)
    if where.isdigit():
        kw.update(host='127.0.0.1', port=int(where))
    else:
        kw.update(unix_socket=where)
    c = pymysql.connect(**kw)
    cur = c.cursor()
    cur.execute("CREATE TABLE IF NOT EXISTS cap_t (a INT, b VARCHAR(40))")
    cur.execute("INSERT INTO cap_t VALUES (1, 'one'), (2, 'two')")
    cur.execute("SELECT a, b FROM cap_t WHERE b <> 'secret' ORDER BY a")
    cur.fetchall()
    try:
        cur.execute("SELECT * FROM no_such_table")
    except pymysql.err.ProgrammingError:
        pass
    cur.execute("SELECT 1 AS x; SELECT 2 AS y, 'z' AS z; DO 3")
    while cur.nextset():
        pass
    cur.execute("LOAD DATA LOCAL INFILE '%s' INTO TABLE cap_t" % infile)
    c.ping(reconnect=False)
    c.select_db(db)
    sid, _ = prepare(c, "SELECT b FROM cap_t WHERE a = ?")
    execute(c, sid, ['1'])
    execute(c, sid, ['2'])
    sid2, _ = prepare(c, "INSERT INTO cap_t VALUES (7, ?)")
    execute(c, sid2, ['seven'])
    close(c, sid)
    try:
        execute(c, sid, ['1'])
    except pymysql.err.MySQLError:
        pass
    c._execute_command(COM_RESET_CONNECTION, b'')
    c._read_packet()
    cur.execute("DROP TABLE cap_t")
    c.close()


if __name__ == '__main__':
    main()
