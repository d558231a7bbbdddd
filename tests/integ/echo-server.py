# echo-server.py PORT PIDFILE - an echo server on 127.0.0.1:PORT, one
# thread per connection, until SIGTERM; writes its pid to PIDFILE once it
# listens (census-fork.sh, census-exec.sh, rawsys.sh).
import os, socket, sys, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', int(sys.argv[1])))
s.listen(16)
open(sys.argv[2], 'w').write('%d\n' % os.getpid())
def serve(c):
    while True:
        d = c.recv(4096)
        if not d:
            break
        c.sendall(d)
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
