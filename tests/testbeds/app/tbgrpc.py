#!/usr/bin/python3
"""tbgrpc.py - the gRPC server and client of tb-grpc.sh (docs/accuracy.md).

  tbgrpc.py server PORT PIDFILE            (TB_PG, TB_POOL)
  tbgrpc.py client PORT N CONC TRUTH OUT [PROTO]

server: grpcio (python3-grpcio; the C core's threads read the socket, a
ThreadPoolExecutor of 8 runs the handlers), unary calls with raw bytes
(no protoc: a generic handler), every method of service tb.Svc: the
method name is the request id, /tb.Svc/ID; the request body is "N" (1..3):
the handler runs the first N statements (ID in each) on a psycopg2
connection from a pool of TB_POOL (default 4, autocommit) shared by the
handler threads (a handler waits for a free one), and answers "id ID" (status OK).  A method named eID answers
NOT_FOUND (grpc-status 5) after one statement (the error case).  Listens
on 127.0.0.1:PORT, writes PIDFILE, exits 0 at SIGTERM.

client: grpcio on one channel (so one HTTP/2 connection) to 127.0.0.1:PORT
(nginx's grpc_pass, or the server), N calls, CONC in flight at once
(futures); every 25th is an error call.  The truth file gets one line per
call that must succeed: ID, py, /tb.Svc/ID, "sql TEXT" per statement.  OUT
gets "calls N ok K errors E" and the exit status is 1 unless every call
answered as expected.  PROTO, when given, gets the service as a .proto
would declare it (package tb, service Svc, every method called, all
unary, and one streaming method never called): what bp-reconstruct
--grpc-proto reads (docs/reconstruct.md, "Unary gRPC methods").
"""
import os
import signal
import sys
import threading
from concurrent import futures

import grpc

SQL = (
    "SELECT v FROM tb_kv WHERE k = '%s'",
    "INSERT INTO tb_hits (id, n) VALUES ('%s', 1)",
    "SELECT v FROM tb_kv WHERE k = '%s'",
)


class Handler(grpc.GenericRpcHandler):
    def __init__(self, pool, size):
        self.pool = pool
        # ThreadedConnectionPool raises when exhausted: handlers wait here
        self.free = threading.Semaphore(size)

    def service(self, details):
        if not details.method.startswith('/tb.Svc/'):
            return None
        name = details.method.rsplit('/', 1)[1]
        return grpc.unary_unary_rpc_method_handler(
            lambda req, ctx: self.call(name, req, ctx))

    def call(self, name, req, ctx):
        err = name.startswith('e')
        rid = name[1:] if err else name
        body = pb_decode(req)
        n = 1 if err else body.get(2, 0)
        if not err and body.get(1) != rid.encode():
            n = 0
        if not 1 <= n <= 3 or not rid.isalnum():
            ctx.abort(grpc.StatusCode.INVALID_ARGUMENT, 'bad request')
        with self.free:
            pg = self.pool.getconn()
            try:
                pg.autocommit = True        # no BEGIN/COMMIT around them
                with pg.cursor() as cur:
                    for i in range(n):
                        cur.execute(SQL[i] % rid)
                        if cur.description:
                            cur.fetchall()
            finally:
                self.pool.putconn(pg)
        if err:
            ctx.abort(grpc.StatusCode.NOT_FOUND, 'no such thing')
        return ('id %s\n' % rid).encode()


def pb_encode(rid, k):
    """The request message, protobuf without a schema: field 1 the id
    (a string), field 2 the number of queries (a varint)."""
    b = rid.encode()
    return b'\x0a' + bytes([len(b)]) + b + b'\x10' + bytes([k])


def pb_decode(m):
    """{field: bytes or int} of a message pb_encode made (short fields)."""
    out, i = {}, 0
    try:
        while i < len(m):
            key = m[i]
            i += 1
            if key & 7 == 2:
                n = m[i]
                out[key >> 3] = m[i + 1:i + 1 + n]
                i += 1 + n
            elif key & 7 == 0:
                out[key >> 3] = m[i]
                i += 1
            else:
                return {}
    except IndexError:
        return {}
    return out


def server(port, pidfile):
    import psycopg2.pool
    size = int(os.environ.get('TB_POOL', '4'))
    pool = psycopg2.pool.ThreadedConnectionPool(size, size,
                                                os.environ['TB_PG'])
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    srv.add_generic_rpc_handlers((Handler(pool, size),))
    srv.add_insecure_port('127.0.0.1:%s' % port)
    srv.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with open(pidfile, 'w') as f:
        f.write('%d\n' % os.getpid())
    while not stop.wait(1):
        pass
    srv.stop(2).wait()
    return 0


def write_proto(path, names):
    """The service's .proto: the messages pb_encode makes, every method
    in NAMES unary, a streaming one besides."""
    with open(path, 'w') as f:
        f.write('// tb-grpc: the service tbgrpc.py serves (generic handler)\n'
                'syntax = "proto3";\npackage tb;\n\n'
                'message Req {\n  string id = 1;  // the request id\n'
                '  uint32 n = 2;   /* statements to run */\n}\n'
                'message Resp { bytes text = 1; }\n\n'
                'service Svc {\n'
                '  rpc Watch (stream Req) returns (stream Resp);  // never called\n')
        for name in names:
            f.write('  rpc %s (Req) returns (Resp);\n' % name)
        f.write('}\n')


def client(port, n, conc, truth, out, proto=None):
    run = os.urandom(3).hex()
    if proto:
        write_proto(proto, [('e' if i % 25 == 24 else '') + 'q%dx%s' % (i, run)
                            for i in range(n)])
    ch = grpc.insecure_channel('127.0.0.1:%s' % port)
    grpc.channel_ready_future(ch).result(timeout=30)
    sem = threading.Semaphore(conc)
    results, lines = [], []
    for i in range(n):
        rid = 'q%dx%s' % (i, run)
        err = i % 25 == 24
        k = 1 + (i * 7 + 3) % 3
        path = '/tb.Svc/%s%s' % ('e' if err else '', rid)
        sem.acquire()
        f = ch.unary_unary(path).future(pb_encode(rid, k), timeout=60)
        f.add_done_callback(lambda _f: sem.release())
        results.append((rid, err, f))
        if not err:
            lines.append('\t'.join([rid, 'py', path] +
                                   ['sql ' + SQL[j] % rid for j in range(k)]))
    ok = errors = bad = 0
    for rid, err, f in results:
        try:
            r = f.result()
            if not err and r == ('id %s\n' % rid).encode():
                ok += 1
            else:
                bad += 1
        except grpc.RpcError as e:
            if err and e.code() == grpc.StatusCode.NOT_FOUND:
                errors += 1
            else:
                bad += 1
                sys.stderr.write('%s: %s\n' % (rid, e))
    with open(truth, 'w') as t:
        t.write('\n'.join(lines) + '\n')
    with open(out, 'w') as o:
        o.write('calls %d ok %d errors %d bad %d\n' % (n, ok, errors, bad))
    ch.close()
    return 1 if bad else 0


if __name__ == '__main__':
    if sys.argv[1] == 'server':
        sys.exit(server(sys.argv[2], sys.argv[3]))
    sys.exit(client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                    sys.argv[5], sys.argv[6],
                    sys.argv[7] if len(sys.argv) > 7 else None))
