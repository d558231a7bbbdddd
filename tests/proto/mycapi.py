#!/usr/bin/python3
"""mycapi.py - MariaDB Connector/C (libmariadb.so.3, through ctypes: the
Debian package ships no headers) for the mysql captures (record.sh my).

  mycapi.py PORT USER PASSWORD DB

Server-side prepared statements as C programs run them: mysql_stmt_prepare
and mysql_stmt_execute (COM_STMT_PREPARE, then COM_STMT_EXECUTE once the
answer came), and mariadb_stmt_execute_direct, which sends
COM_STMT_PREPARE and COM_STMT_EXECUTE with statement id 0xffffffff ("the
last prepared") in one write, once for a statement that fails to
prepare; every statement closed (COM_STMT_CLOSE).  No parameters: the
statements are run whole.
"""
import ctypes
import sys

L = ctypes.CDLL('libmariadb.so.3')
VP = ctypes.c_void_p
L.mysql_init.restype = VP
L.mysql_init.argtypes = [VP]
L.mysql_real_connect.restype = VP
L.mysql_real_connect.argtypes = [VP, ctypes.c_char_p, ctypes.c_char_p,
                                 ctypes.c_char_p, ctypes.c_char_p,
                                 ctypes.c_uint, ctypes.c_char_p,
                                 ctypes.c_ulong]
L.mysql_stmt_init.restype = VP
L.mysql_stmt_init.argtypes = [VP]
for f in ('mysql_stmt_prepare', 'mariadb_stmt_execute_direct'):
    getattr(L, f).argtypes = [VP, ctypes.c_char_p, ctypes.c_ulong]
for f in ('mysql_stmt_execute', 'mysql_stmt_store_result',
          'mysql_stmt_close', 'mysql_stmt_free_result', 'mysql_close'):
    getattr(L, f).argtypes = [VP]
L.mysql_error.restype = ctypes.c_char_p
L.mysql_error.argtypes = [VP]


def run(m, sql, direct=False):
    """Prepare and execute SQL (bytes), fetch its rows, close it."""
    st = L.mysql_stmt_init(m)
    if direct:
        r = L.mariadb_stmt_execute_direct(st, sql, len(sql))
    else:
        r = L.mysql_stmt_prepare(st, sql, len(sql)) or \
            L.mysql_stmt_execute(st)
    if not r:
        L.mysql_stmt_store_result(st)
        L.mysql_stmt_free_result(st)
    L.mysql_stmt_close(st)


def main():
    port, user, pw, db = sys.argv[1:5]
    m = L.mysql_init(None)
    if not L.mysql_real_connect(m, b'127.0.0.1', user.encode(), pw.encode(),
                                db.encode(), int(port), None, 0):
        sys.exit('mycapi.py: %s' % L.mysql_error(m).decode())
    run(m, b"CREATE TABLE IF NOT EXISTS capi_t (a INT, b VARCHAR(20))")
    run(m, b"INSERT INTO capi_t VALUES (1, 'one'), (2, 'two')")
    run(m, b"SELECT a, b FROM capi_t ORDER BY a")
    run(m, b"SELECT b FROM capi_t WHERE a = 2", direct=True)
    run(m, b"SELECT nosuch FROM capi_t", direct=True)
    run(m, b"DROP TABLE capi_t")
    L.mysql_close(m)


if __name__ == '__main__':
    main()
