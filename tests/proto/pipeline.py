#!/usr/bin/python3
"""pipeline.py PORT - pipeline three HTTP/1.1 requests (GET, HEAD, GET with
Connection: close) in one write to 127.0.0.1:PORT and read until the server
closes.  Used by record.sh: curl no longer pipelines."""
import socket
import sys

s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=10)
s.sendall(b'GET /index.html HTTP/1.1\r\nHost: pipe.test\r\n'
          b'traceparent: 00-0af7651916cd43dd8448eb211c80319c-'
          b'b7ad6b7169203331-01\r\n'
          b'X-Request-ID: req-1\r\n\r\n'
          b'HEAD /big.txt HTTP/1.1\r\nHost: pipe.test\r\n\r\n'
          b'GET /index.html?third HTTP/1.1\r\nHost: pipe.test\r\n'
          b'Connection: close\r\n\r\n')
while s.recv(65536):
    pass
