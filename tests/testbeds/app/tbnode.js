// tbnode.js - the Node.js application of tb-node.sh (docs/accuracy.md).
//
//   node tbnode.js front PORT BACKEND_PORT PIDFILE   (needs pg, TB_PG_HOST,
//                                                    TB_PG_PORT)
//   node tbnode.js backend PORT PIDFILE
//
// front: GET /py/app?id=ID&n=N runs N SQL statements (1..3, ID in each,
// the third repeating the first) through a pg.Pool of 4 connections
// shared by all requests (the first and third in the simple query
// protocol, the second with ID bound as a parameter), then calls the backend GET /b?id=ID through an
// http.Agent({keepAlive: true, maxSockets: 4}), and answers "id ID",
// "sql TEXT" per statement, "call /b?id=ID", "end ID" (tb-client
// --calls 1 checks it).  A backend answer that does not name ID is a 502:
// the application's own ground truth.
// backend: GET /b?id=ID answers "id ID\nend ID\n".
// Both write PIDFILE once they listen, on 127.0.0.1.
'use strict';
const http = require('http');
const fs = require('fs');

// The second statement binds the id as a parameter (pg's extended query
// protocol): its text carries the id only in a comment, which content
// resolution does not read, so only the parameter's hash can tell whose
// it is (docs/reconstruct.md, "Resolving by content").
const SQL = [
    "SELECT v FROM tb_kv WHERE k = '%s'",
    "INSERT INTO tb_hits (id, n) VALUES ($1, 1) /* '%s' */",
    "SELECT v FROM tb_kv WHERE k = '%s'",
];
const BOUND = [false, true, false];
const ID_RE = /^[a-z0-9]{1,40}$/;

function answer(res, status, text) {
    res.writeHead(status, {'Content-Type': 'text/plain',
                           'Content-Length': Buffer.byteLength(text)});
    res.end(text);
}

function listen(server, port, pidfile) {
    server.keepAliveTimeout = 300000;
    server.headersTimeout = 310000;
    server.listen(port, '127.0.0.1', () => {
        fs.writeFileSync(pidfile, process.pid + '\n');
    });
    process.on('SIGTERM', () => {
        server.close(() => process.exit(0));
        server.closeAllConnections();
    });
}

function backend(port, pidfile) {
    const server = http.createServer((req, res) => {
        const u = new URL(req.url, 'http://tb');
        const id = u.searchParams.get('id') || '';
        if (u.pathname !== '/b' || !ID_RE.test(id))
            return answer(res, 400, 'bad request\n');
        answer(res, 200, 'id ' + id + '\nend ' + id + '\n');
    });
    listen(server, port, pidfile);
}

function call(agent, port, path) {
    return new Promise((resolve, reject) => {
        const req = http.get({host: '127.0.0.1', port, path, agent}, (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (d) => { body += d; });
            res.on('end', () => resolve([res.statusCode, body]));
            res.on('error', reject);
        });
        req.on('error', reject);
    });
}

function front(port, bport, pidfile) {
    const pg = require('pg');
    const pool = new pg.Pool({host: process.env.TB_PG_HOST,
                              port: +process.env.TB_PG_PORT,
                              user: 'tb', database: 'tb', max: 4,
                              idleTimeoutMillis: 0});
    const agent = new http.Agent({keepAlive: true, maxSockets: 4});
    const server = http.createServer(async (req, res) => {
        const u = new URL(req.url, 'http://tb');
        const id = u.searchParams.get('id') || '';
        const n = +(u.searchParams.get('n') || 'x');
        if (!ID_RE.test(id) || !(n >= 0 && n <= 3))
            return answer(res, 400, 'bad request: id [a-z0-9], n 0..3\n');
        const out = ['id ' + id];
        try {
            for (let i = 0; i < n; i++) {
                const text = SQL[i].replace('%s', id);
                await (BOUND[i] ? pool.query(text, [id]) : pool.query(text));
                out.push('sql ' + text);
            }
            const path = '/b?id=' + id;
            const [status, body] = await call(agent, bport, path);
            if (status !== 200 || body !== 'id ' + id + '\nend ' + id + '\n')
                return answer(res, 502, 'backend answered ' + status +
                              ' ' + JSON.stringify(body) + '\n');
            out.push('call ' + path);
        } catch (e) {
            return answer(res, 500, 'error: ' + e.message + '\n');
        }
        out.push('end ' + id);
        answer(res, 200, out.join('\n') + '\n');
    });
    server.on('close', () => pool.end());
    listen(server, port, pidfile);
}

const [mode, a, b, c] = process.argv.slice(2);
if (mode === 'front')
    front(+a, +b, c);
else if (mode === 'backend')
    backend(+a, b);
else {
    process.stderr.write('usage: tbnode.js front PORT BACKEND_PORT PIDFILE' +
                         ' | backend PORT PIDFILE\n');
    process.exit(2);
}
