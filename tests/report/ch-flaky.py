#!/usr/bin/python3
"""ch-flaky.py - a proxy in front of ClickHouse's HTTP interface that
fails the first requests (tests/report/clickhouse.sh).

  ch-flaky.py DIR UPSTREAM MODE N

Listens on 127.0.0.1 (a free port, written to DIR/port once listening)
and passes every POST on to UPSTREAM (http://127.0.0.1:PORT), except:
  MODE before: the first N requests are answered 503 without reaching
               ClickHouse;
  MODE after:  the first N INSERTs reach ClickHouse (and are stored)
               but the answer is replaced by 503, as when an answer is
               lost - the client must send them again;
  MODE always: every request is answered 503.
One line per request in DIR/requests.log: its number, the answer, what
ClickHouse answered ("-": not asked), the first line of the statement.  Runs until SIGTERM.
"""
import gzip
import http.server
import os
import signal
import sys
import threading
import urllib.error
import urllib.request

DIR, UPSTREAM, MODE, N = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
lock = threading.Lock()
count = [0]
inserts = [0]


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *a):
        pass

    def answer(self, status, body, extra=()):
        self.send_response(status)
        self.send_header('Content-Type', 'text/plain; charset=UTF-8')
        self.send_header('Content-Length', str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers.get('Content-Length', '0'))
        body = self.rfile.read(n)
        with lock:
            count[0] += 1
            i = count[0]
        raw = body
        if self.headers.get('Content-Encoding') == 'gzip':
            raw = gzip.decompress(body)
        first = raw.split(b'\n', 1)[0][:120].decode('utf-8', 'replace')
        if MODE == 'after':
            with lock:
                if first.startswith('INSERT'):
                    inserts[0] += 1
                fail = first.startswith('INSERT') and inserts[0] <= N
        else:
            fail = MODE == 'always' or i <= N
        upstream = '-'
        if fail and MODE in ('before', 'always'):
            status, out = 503, b'busy (test)\n'
        else:
            req = urllib.request.Request(UPSTREAM + self.path, data=body, method='POST')
            for k in ('Content-Type', 'Content-Encoding', 'Authorization'):
                if self.headers.get(k):
                    req.add_header(k, self.headers[k])
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    status, out = r.status, r.read()
            except urllib.error.HTTPError as e:
                status, out = e.code, e.read()
            upstream = str(status)
            if fail:
                status, out = 503, b'answer lost (test)\n'
        with open(os.path.join(DIR, 'requests.log'), 'a') as f:
            f.write('%d %d %s %s\n' % (i, status, upstream, first))
        self.answer(status, out)


class S(http.server.ThreadingHTTPServer):
    daemon_threads = True


srv = S(('127.0.0.1', 0), H)
signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
with open(os.path.join(DIR, 'port.tmp'), 'w') as f:
    f.write(str(srv.server_address[1]))
os.rename(os.path.join(DIR, 'port.tmp'), os.path.join(DIR, 'port'))
srv.serve_forever()
