#!/usr/bin/python3
"""tbredis.py - the threaded Python front of tb-redis.sh (docs/accuracy.md):
a server whose requests share a small pool of Redis connections.

  tbredis.py PORT REDIS_PORT PIDFILE        (TB_POOL)

http.server.ThreadingHTTPServer (a thread per client connection, HTTP/1.1
keep-alive); GET /py/app?id=ID&n=N runs, on connections of one redis-py
BlockingConnectionPool of TB_POOL (default 4) connections shared by every
thread (a command waits for a free one, so a connection carries the
commands of many requests in turn):

  GET tb:ID:a, SET tb:ID:a, INCR tb:ID:n      one command each
  SET tb:ID:p, GET tb:ID:p, INCR tb:ID:c      one pipeline (one write)
  MULTI, INCR tb:ID:m, EXPIRE tb:ID:m, EXEC   one transaction (one write)

(redis-py sends INCR as INCRBY KEY 1).
(N, 0..3, is ignored: tb-client draws it, the work is always this).  Every
key names ID.  It answers "id ID", "redis COMMAND KEY" per command in the
order they were sent ("redis MULTI" and "redis EXEC" name no key), with
"lookup 127.0.0.1" before the commands for which the pool opened a
connection (redis-py resolves the host with getaddrinfo, a dns span of
the request: socket.getaddrinfo is wrapped to note it, per thread), "end
ID"; a reply that is not what the commands must give is a 502: the
application's own ground truth.  Listens on 127.0.0.1, writes PIDFILE
once it does, exits 0 on SIGTERM.
"""
import os
import socket
import sys
import urllib.parse

import redis

import tbserve
from tbserve import ID_RE, NOTED, noting_getaddrinfo

class Handler(tbserve.Handler):
    def work(self, rid):
        """The commands of request RID: (ops, None) or (ops, what went
        wrong)."""
        r = self.server.redis
        k = 'tb:%s:' % rid
        ops = []

        def run(names, fn):
            """FN() sends the commands NAMES; a connection the pool
            opens for them resolves its host first: noted before them."""
            NOTED.lookups = []
            try:
                return fn()
            finally:
                ops.extend('lookup ' + h for h in NOTED.lookups)
                ops.extend('redis ' + n for n in names)
                NOTED.lookups = None
        if run(['GET %sa' % k], lambda: r.get(k + 'a')) is not None:
            return ops, 'GET %sa found a value' % k
        run(['SET %sa' % k], lambda: r.set(k + 'a', rid, ex=600))
        if run(['INCRBY %sn' % k], lambda: r.incr(k + 'n')) != 1:
            return ops, 'INCR %sn is not 1' % k
        p = r.pipeline(transaction=False)
        p.set(k + 'p', rid, ex=600).get(k + 'p').incr(k + 'c')
        got = run(['SET %sp' % k, 'GET %sp' % k, 'INCRBY %sc' % k],
                  p.execute)
        if got != [True, rid.encode(), 1]:
            return ops, 'pipeline answered %r' % got
        t = r.pipeline(transaction=True)
        t.incr(k + 'm').expire(k + 'm', 600)
        got = run(['MULTI', 'INCRBY %sm' % k, 'EXPIRE %sm' % k, 'EXEC'],
                  t.execute)
        if got != [1, True]:
            return ops, 'MULTI/EXEC answered %r' % got
        return ops, None

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        rid = q.get('id', [''])[0]
        if not ID_RE.match(rid):
            return self.answer(400, 'bad request: id [a-z0-9]\n')
        if url.path != '/py/app':
            return self.answer(404, 'no such path\n')
        try:
            ops, bad = self.work(rid)
        except redis.RedisError as e:
            return self.answer(502, 'redis: %s\n' % e)
        if bad:
            return self.answer(502, 'redis: %s\n' % bad)
        self.answer(200, '\n'.join(['id ' + rid] + ops + ['end ' + rid]) +
                    '\n')


def main():
    if len(sys.argv) != 4:
        print('usage: tbredis.py PORT REDIS_PORT PIDFILE', file=sys.stderr)
        return 2
    port, rport, pidfile = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    srv = tbserve.Server(('127.0.0.1', port), Handler)
    socket.getaddrinfo = noting_getaddrinfo
    size = int(os.environ.get('TB_POOL', '') or 4)
    srv.redis = redis.Redis(connection_pool=redis.BlockingConnectionPool(
        host='127.0.0.1', port=rport, max_connections=size, timeout=30))
    return tbserve.serve(srv, pidfile)


if __name__ == '__main__':
    sys.exit(main())
