#!/usr/bin/python3
"""tbaio.py - the asyncio application of tb-aiohttp.sh (docs/accuracy.md).

  tbaio.py front PORT BACKEND_PORT PIDFILE   (TB_PG_HOST, TB_PG_PORT)
  tbaio.py backend PORT PIDFILE

front: an aiohttp server; GET /py/app?id=ID&n=N runs N SQL statements
(1..3, ID in each, the third repeating the first) on a connection of an
asyncpg pool of 2 shared by all requests (Connection.execute without
arguments: the simple query protocol, one statement per message; no
reset query when a connection goes back), then
calls the backend GET /b?id=ID through one aiohttp ClientSession limited
to 4 connections (keep-alive), and answers "id ID", "sql TEXT" per
statement, "call /b?id=ID", "end ID" (tb-client --calls 1 checks it).
A backend answer that does not name ID is a 502: the application's own
ground truth.
backend: GET /b?id=ID answers "id ID\\nend ID\\n".
Both listen on 127.0.0.1 and write PIDFILE once they do; SIGTERM stops
them cleanly.
"""
import asyncio
import os
import re
import signal
import sys

import aiohttp
import asyncpg
from aiohttp import web

SQL = (
    "SELECT v FROM tb_kv WHERE k = '%s'",
    "INSERT INTO tb_hits (id, n) VALUES ('%s', 1)",
    "SELECT v FROM tb_kv WHERE k = '%s'",
)
ID_RE = re.compile(r'^[a-z0-9]{1,40}$')


class NoReset(asyncpg.Connection):
    """A pooled connection given back as it is: the pool's reset query
    (advisory unlocks, CLOSE ALL, UNLISTEN, RESET ALL) would be work of
    the request that the answer does not report."""

    async def reset(self, *, timeout=None):
        return None


def text(status, body):
    return web.Response(status=status, text=body)


async def backend_handler(request):
    rid = request.query.get('id', '')
    if not ID_RE.match(rid):
        return text(400, 'bad request\n')
    return text(200, 'id %s\nend %s\n' % (rid, rid))


def front_app(bport):
    async def handler(request):
        rid = request.query.get('id', '')
        try:
            n = int(request.query.get('n', 'x'))
        except ValueError:
            n = -1
        if not ID_RE.match(rid) or not 0 <= n <= 3:
            return text(400, 'bad request: id [a-z0-9], n 0..3\n')
        out = ['id ' + rid]
        app = request.app
        if n:
            async with app['pool'].acquire() as con:
                for i in range(n):
                    stmt = SQL[i] % rid
                    await con.execute(stmt)
                    out.append('sql ' + stmt)
        path = '/b?id=' + rid
        async with app['http'].get('http://127.0.0.1:%d%s' % (bport, path)) \
                as r:
            body = await r.text()
        if r.status != 200 or body != 'id %s\nend %s\n' % (rid, rid):
            return text(502, 'backend answered %d %r\n' % (r.status, body))
        out.append('call ' + path)
        out.append('end ' + rid)
        return text(200, '\n'.join(out) + '\n')

    async def start(app):
        app['pool'] = await asyncpg.create_pool(
            host=os.environ['TB_PG_HOST'], port=int(os.environ['TB_PG_PORT']),
            user='tb', database='tb', min_size=2, max_size=2,
            connection_class=NoReset)
        app['http'] = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=4, keepalive_timeout=300))

    async def stop(app):
        await app['http'].close()
        await app['pool'].close()

    app = web.Application()
    app.router.add_get('/py/app', handler)
    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    return app


async def serve(app, port, pidfile):
    runner = web.AppRunner(app, keepalive_timeout=300, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, '127.0.0.1', port, backlog=511)
    await site.start()
    with open(pidfile, 'w') as f:
        f.write('%d\n' % os.getpid())
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await runner.cleanup()


def main():
    if len(sys.argv) == 5 and sys.argv[1] == 'front':
        app = front_app(int(sys.argv[3]))
        asyncio.run(serve(app, int(sys.argv[2]), sys.argv[4]))
    elif len(sys.argv) == 4 and sys.argv[1] == 'backend':
        app = web.Application()
        app.router.add_get('/b', backend_handler)
        asyncio.run(serve(app, int(sys.argv[2]), sys.argv[3]))
    else:
        print('usage: tbaio.py front PORT BACKEND_PORT PIDFILE | backend '
              'PORT PIDFILE', file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
