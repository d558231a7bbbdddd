#!/bin/bash
# tb-nginx-h2.sh - nginx serving HTTP/2 in clear text (h2c with prior
# knowledge: "listen ... http2") -> gunicorn (2 workers of 8 threads) over
# HTTP/1.1 keep-alive (proxy_pass) -> the Python application and its
# shared psycopg2 pool -> PostgreSQL: the testbed of nginx-gunicorn with
# an HTTP/2 front.  The client is h2load (nghttp2-client, untraced) on ONE
# connection with C concurrent streams (-c 1 -m C), C = 1, 16 and 64, so
# that the streams of different requests interleave on that connection;
# each URI carries its request id (-i FILE).  nginx's channel is read by
# the http2 processor ("http2 port FRONT"), every stream one exchange.
# Ground truth: the application is deterministic (/py/app?id=ID&n=N runs
# the first N of its statements with ID in each), so the truth is written
# from the URIs, and h2load must report every request succeeded with a
# 2xx.  Every path must be exact-right (100%); the run without event
# isolation is reported.  TB_TLS=1: nginx serves h2 over TLS (OpenSSL,
# ALPN h2; the http2 processor reads the plaintext), h2load uses https.
# See docs/accuracy.md.
TB_FRONT=nginx
TB_APPS=py
TB_MIX=py:1
TB_NGINX_LISTEN=" http2"
TB_FRONT_PROTO=http2
. "$(dirname "$0")/lib.sh"
tb_need h2load nghttp2-client

# the front's port is HTTP/2: that rule first (the first match wins);
# TB_H2_SNIFF=1: no rule names the front's port, sniffing finds the preface
eval "$(declare -f tb_rules | sed '1s/tb_rules/tb_rules_h1/')"
tb_rules() {
	if [ "${TB_H2_SNIFF:-0}" = 1 ]; then
		tb_rules_h1 "$@" | sed "s/port $FRONT_PORT,/port /"
	else
		echo "http2 port $FRONT_PORT; $(tb_rules_h1 "$@")"
	fi
}

# tb_client DIR CONNS DEPTH: h2load, one connection, CONNS streams at once
# (DEPTH unused), bounded to 600 s; the truth from the URIs.
tb_client() {
	local dir=$1 conns=$2 out
	"$PY" - "$dir" "$FRONT_PORT" "$TB_REQUESTS" \
		"$([ "$TB_TLS" = 1 ] && echo https || echo http)" <<-'PYEOF' || return 1
	import os, random, sys
	d, port, n, scheme = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
	SQL = ("SELECT v FROM tb_kv WHERE k = '%s'",
	       "INSERT INTO tb_hits (id, n) VALUES ('%s', 1)",
	       "SELECT v FROM tb_kv WHERE k = '%s'")
	run = os.urandom(3).hex()
	rnd = random.Random(run)
	with open(d + '/uris', 'w') as u, open(d + '/truth', 'w') as t:
	    for i in range(n):
	        rid = 'q%dx%s' % (i, run)
	        k = 1 + rnd.randrange(3)
	        url = '/py/app?id=%s&n=%d' % (rid, k)
	        u.write(('%s://127.0.0.1:%s%s\n' % (scheme, port, url)) if i == 0
	                else url + '\n')
	        t.write('\t'.join([rid, 'py', url] +
	                          ['sql ' + SQL[j] % rid for j in range(k)]) + '\n')
	PYEOF
	"${NS_WEB[@]}" timeout 600 h2load -c 1 -m "$conns" -n "$TB_REQUESTS" \
		-i "$dir/uris" >"$dir/h2load.out" 2>>"$T/client.log" || {
		cat "$dir/h2load.out" >>"$T/client.log"
		return 1
	}
	out=$(grep -E '^(requests|status codes):' "$dir/h2load.out" | tr '\n' ' ')
	echo "h2load -c 1 -m $conns: $out" >"$dir/client.out"
	case $out in
	"requests: $TB_REQUESTS total, $TB_REQUESTS started, $TB_REQUESTS done, $TB_REQUESTS succeeded,"*"status codes: $TB_REQUESTS 2xx,"*) ;;
	*) echo "h2load: not every request answered 2xx: $out" >>"$T/client.log"
	   return 1 ;;
	esac
}

tb_init nginx-h2
tb_testbed
echo "PASS: tb-nginx-h2"
