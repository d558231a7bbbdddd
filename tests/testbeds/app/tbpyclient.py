#!/usr/bin/python3
"""tbpyclient.py - a Python HTTP client of tb-pyclient.sh, itself traced:
the requests it sends are sent for no request, so each starts one
(docs/reconstruct.md, rule 5) and its client span is the root.

usage: tbpyclient.py --host ADDR --port PORT --conns C --requests N
                     --mode httpclient|requests|blocking --truth FILE
                     [--max-sql K] [--timeout S]

C threads, each with one keep-alive connection, send N requests in all
(GET /py/app?id=ID&n=K, K drawn from 1..--max-sql, ID q<seq>x<run>), one
at a time per connection:

  httpclient  http.client.HTTPConnection(timeout=S): a socket with a
              timeout (CPython polls before each send and receive)
  requests    a requests.Session() per thread, each get with timeout=S
  blocking    http.client.HTTPConnection without a timeout: blocking
              socket calls (the control)

Every answer is checked as tb-client does (status 200, "id ID", exactly
K statements naming ID, "end ID"); any failure makes the exit status 1.
The truth file gets one line per request, tab-separated: ID, py, URL,
the operations the application reported (check-testbed.py).  The last
line of stdout sums up the run.
"""
import argparse
import http.client
import random
import sys
import threading
import time


def check(rid, n, status, body):
    """None when the answer is right, else why; and the operations."""
    if status != 200:
        return 'status %d: %.80r' % (status, body), None
    lines = body.split('\n')
    if lines[-1] == '':
        lines.pop()
    if len(lines) < 2 or lines[0] != 'id ' + rid or \
            lines[-1] != 'end ' + rid:
        return 'answer %.80r is not for %s' % (body, rid), None
    ops = lines[1:-1]
    want = "'%s'" % rid
    if len(ops) != n or any(not o.startswith('sql ') or want not in o or
                            '\t' in o for o in ops):
        return 'operations %r, want %d statements naming %s' % (
            ops, n, rid), None
    return None, ops


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--host', default='127.0.0.1')
    ap.add_argument('--port', type=int, required=True)
    ap.add_argument('--conns', type=int, default=1)
    ap.add_argument('--requests', type=int, default=100)
    ap.add_argument('--mode', choices=('httpclient', 'requests', 'blocking'),
                    required=True)
    ap.add_argument('--truth', required=True)
    ap.add_argument('--max-sql', type=int, default=3)
    ap.add_argument('--timeout', type=float, default=30)
    a = ap.parse_args()
    if a.mode == 'requests':
        import requests
    run = '%06x' % random.getrandbits(24)
    lock = threading.Lock()
    state = {'next': 0, 'ok': 0, 'failed': 0}
    truth = {}
    errors = []

    def take():
        with lock:
            i = state['next']
            if i >= a.requests:
                return None
            state['next'] = i + 1
            return i

    def worker():
        conn = sess = None
        base = 'http://%s:%d' % (a.host, a.port)
        if a.mode == 'requests':
            sess = requests.Session()
        elif a.mode == 'httpclient':
            conn = http.client.HTTPConnection(a.host, a.port,
                                              timeout=a.timeout)
        else:
            conn = http.client.HTTPConnection(a.host, a.port)
        while True:
            i = take()
            if i is None:
                break
            rid = 'q%dx%s' % (i, run)
            n = random.randint(1, a.max_sql)
            url = '/py/app?id=%s&n=%d' % (rid, n)
            try:
                if sess is not None:
                    r = sess.get(base + url, timeout=a.timeout)
                    status, body = r.status_code, r.text
                else:
                    conn.request('GET', url)
                    r = conn.getresponse()
                    status, body = r.status, r.read().decode()
                why, ops = check(rid, n, status, body)
            except Exception as e:          # any failure fails the run
                why, ops = '%s: %s' % (type(e).__name__, e), None
            with lock:
                if why:
                    state['failed'] += 1
                    errors.append('%s %s: %s' % (rid, url, why))
                else:
                    state['ok'] += 1
                    truth[i] = '\t'.join([rid, 'py', url] + ops)
        if sess is not None:
            sess.close()
        else:
            conn.close()

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(a.conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ms = (time.monotonic() - t0) * 1000
    with open(a.truth, 'w') as f:
        for i in sorted(truth):
            f.write(truth[i] + '\n')
    for e in errors[:5]:
        print('tbpyclient: ' + e, file=sys.stderr)
    print('tbpyclient: mode %s requests %d ok %d failed %d conns %d '
          'elapsed_ms %.0f' % (a.mode, a.requests, state['ok'],
                               state['failed'], a.conns, ms))
    return 1 if state['failed'] or state['ok'] != a.requests else 0


if __name__ == '__main__':
    sys.exit(main())
