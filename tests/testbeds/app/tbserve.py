"""tbserve.py - what the threaded Python servers of the testbeds share
(tbpyfront.py, tbredis.py, tbmyfront.py; copied beside them into the
test's directory): the id check, a handler that answers plain text in one
send, the server class, the getaddrinfo wrapper that notes the names a
request's thread looks up, and serving until SIGTERM.
"""
import os
import re
import signal
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ID_RE = re.compile(r'^[a-z0-9]{1,40}$')
NOTED = threading.local()
_getaddrinfo = socket.getaddrinfo


def noting_getaddrinfo(host, *args, **kw):
    """socket.getaddrinfo, noting HOST for the request of this thread
    (NOTED.lookups, when it is a list)."""
    lookups = getattr(NOTED, 'lookups', None)
    if lookups is not None:
        lookups.append(host)
    return _getaddrinfo(host, *args, **kw)


class Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive, no access log, answer(): the rest is the
    application's."""
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def answer(self, status, text):
        body = text.encode()
        self.send_response(status)
        self.send_header('Content-Type', 'text/plain')
        self.send_header('Content-Length', str(len(body)))
        # head and body in one send (two would meet delayed ACKs)
        self._headers_buffer.append(b'\r\n' + body)
        self.flush_headers()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 511


def serve(srv, pidfile):
    """Serve SRV in a thread, write PIDFILE, return 0 at SIGTERM."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    with open(pidfile, 'w') as f:
        f.write('%d\n' % os.getpid())
    while not stop.wait(1):
        pass
    srv.shutdown()
    srv.server_close()
    return 0
