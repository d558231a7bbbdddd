#!/usr/bin/python3
"""pipeline.py PORT [TAG] - pipeline three HTTP/1.1 requests (GET, HEAD,
GET with Connection: close) in one write to 127.0.0.1:PORT and read until
the server closes.  Used by record.sh (curl no longer pipelines) and, with
TAG, by e2e.sh: the requests then ask for /pipe1-TAG.html, /pipe2-TAG.html
and /pipe3-TAG.html?third."""
import socket
import sys

if len(sys.argv) > 2:
    paths = [('/pipe%d-%s.html' % (i, sys.argv[2])).encode()
             for i in (1, 2, 3)]
else:
    paths = [b'/index.html', b'/big.txt', b'/index.html']
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=10)
s.sendall(b'GET ' + paths[0] + b' HTTP/1.1\r\nHost: pipe.test\r\n'
          b'traceparent: 00-0af7651916cd43dd8448eb211c80319c-'
          b'b7ad6b7169203331-01\r\n'
          b'X-Request-ID: req-1\r\n\r\n'
          b'HEAD ' + paths[1] + b' HTTP/1.1\r\nHost: pipe.test\r\n\r\n'
          b'GET ' + paths[2] + b'?third HTTP/1.1\r\nHost: pipe.test\r\n'
          b'Connection: close\r\n\r\n')
while s.recv(65536):
    pass
