#!/bin/bash
# nginx-ir.sh - instructions per request of a traced (or untraced) nginx
# worker, the method of BENCHMARKS.md phases 4 and 6.
#
# Usage: bench/nginx-ir.sh BUILD_DIR [traced|untraced] [N1 N2]
#
# Runs nginx (master_process off, daemon off) under callgrind twice, with
# one keep-alive connection fetching a 1 KB file N1 (default 200) and N2
# (default 1200) times, and prints the difference of the two totals per
# request.  NGINX_IR_CONNS=C: C keep-alive connections instead of one,
# each sent a request at once, round after round (N1 and N2 requests in
# all; multiples of C): the worker then finds several ready at each wait,
# as under load.  Traced: LD_PRELOAD=BUILD_DIR/.libs/libbtrace.so with no
# bp-logd, so the shim writes its own spool.  Needs nginx, valgrind and
# python3.  Works in a temporary directory under /tmp (removed at the
# end unless NGINX_IR_KEEP=1); the callgrind files are DIR/N/cg.out.
# NGINX_IR_DIR=DIR: work in DIR (made; it must not exist) instead, so
# that two builds compared run with the same file paths: a path's
# dictionary slots, and so what it collides with, depend on it.
# NGINX_IR_LOGD=1 (traced): a BUILD_DIR/bp-logd drains the ring, as in
# bench/run, instead of the shim writing its spool at every wait.
set -eu

B=$(cd "${1:?usage: nginx-ir.sh BUILD_DIR [traced|untraced] [N1 N2]}" && pwd)
MODE=${2:-traced}
N1=${3:-200}
N2=${4:-1200}
CONNS=${NGINX_IR_CONNS:-1}
if [ -n "${NGINX_IR_DIR:-}" ]; then
	W=$NGINX_IR_DIR
	mkdir "$W"
else
	W=$(mktemp -d /tmp/bp-nginx-ir.XXXXXX)
fi
trap '[ "${NGINX_IR_KEEP:-0}" = 1 ] && echo "nginx-ir.sh: kept $W" >&2 || rm -rf "$W"' EXIT

one() {   # one N -> total instructions
	local n=$1 d=$W/$1 port vp i
	mkdir -p "$d/www" "$d/tmp" "$d/spool"
	head -c 1024 /dev/zero | tr '\0' 'x' >"$d/www/1k.html"
	port=$((20000 + RANDOM % 20000))
	cat >"$d/nginx.conf" <<-EOC
	master_process off;
	daemon off;
	worker_processes 1;
	pid $d/nginx.pid;
	error_log $d/error.log warn;
	events { worker_connections 64; }
	http {
	    access_log off;
	    sendfile on;
	    tcp_nopush on;
	    keepalive_requests 1000000;
	    client_body_temp_path $d/tmp/body;
	    proxy_temp_path $d/tmp/proxy;
	    fastcgi_temp_path $d/tmp/fastcgi;
	    uwsgi_temp_path $d/tmp/uwsgi;
	    scgi_temp_path $d/tmp/scgi;
	    include /etc/nginx/mime.types;
	    server { listen 127.0.0.1:$port; root $d/www; }
	}
	EOC
	local env=(env) lp=""
	[ "$MODE" = traced ] && env=(env "LD_PRELOAD=$B/.libs/libbtrace.so"
		"BTRACE_SPOOL=$d/spool" "BTRACE_RULES=http port $port")
	if [ "$MODE" = traced ] && [ "${NGINX_IR_LOGD:-0}" = 1 ]; then
		"$B/bp-logd" -f -d "$d/logs" -s "$d/logd.sock" -p "$d/logd.pid" \
			>"$d/logd.out" 2>&1 &
		lp=$!
		for ((i = 0; i < 100; i++)); do
			[ -S "$d/logd.sock" ] && break
			sleep 0.1
		done
		env+=("BTRACE_LOGD=$d/logd.sock")
	fi
	"${env[@]}" valgrind --tool=callgrind --callgrind-out-file="$d/cg.out" \
		nginx -p "$d" -c "$d/nginx.conf" >"$d/vg.out" 2>&1 &
	vp=$!
	for ((i = 0; i < 300; i++)); do
		python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), timeout=0.2)" \
			2>/dev/null && break
		sleep 0.1
	done
	python3 - "$port" "$n" "$CONNS" <<-'EOP'
	import socket, sys
	port, n, c = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
	ss = [socket.create_connection(("127.0.0.1", port), timeout=30)
	      for _ in range(c)]
	req = (b"GET /1k.html HTTP/1.1\r\nHost: 127.0.0.1\r\n"
	       b"User-Agent: bp-cg/1.0\r\nAccept: */*\r\n\r\n")
	bufs = [b""] * c
	for _ in range(n // c):
	    # a request on every connection at once: with C > 1 the worker
	    # finds several ready at each wait, as under load
	    for s in ss:
	        s.sendall(req)
	    for k, s in enumerate(ss):
	        buf = bufs[k]
	        while True:
	            h = buf.find(b"\r\n\r\n")
	            if h >= 0:
	                cl = [int(l.split(b":", 1)[1]) for l in buf[:h].split(b"\r\n")
	                      if l.lower().startswith(b"content-length:")][0]
	                if len(buf) >= h + 4 + cl:
	                    buf = buf[h + 4 + cl:]
	                    break
	            d = s.recv(65536)
	            if not d:
	                sys.exit("connection closed")
	            buf += d
	        bufs[k] = buf
	EOP
	sleep 0.3
	kill -QUIT "$vp"
	wait "$vp" || true
	if [ -n "$lp" ]; then
		kill -TERM "$lp"
		wait "$lp" || true
	fi
	awk '/^(summary|totals):/ { print $2; exit }' "$d/cg.out"
}

a=$(one "$N1")
b=$(one "$N2")
awk -v a="$a" -v b="$b" -v n=$((N2 - N1)) \
	'BEGIN { printf "%s %s %.1f\n", a, b, (b - a) / n }'
