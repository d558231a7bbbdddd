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
# 2xx.  Then one run at 16 each (400 requests; TB_H2_MORE=0: none) with
# the other clients (TB_H2_CLIENT, below): nghttp and curl
# --http2-prior-knowledge.  Every path must be exact-right (100%); the
# run without event isolation is reported.  TB_TLS=1: nginx serves h2
# over TLS (OpenSSL, ALPN h2; the http2 processor reads the plaintext),
# the clients use https.
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

# tb_h2_uris DIR: DIR/uris (h2load's -i format: the first URI absolute,
# the others paths) and DIR/truth for TB_REQUESTS requests, each URI
# carrying its request id.
tb_h2_uris() {
	"$PY" - "$1" "$FRONT_PORT" "$TB_REQUESTS" \
		"$([ "$TB_TLS" = 1 ] && echo https || echo http)" <<-'PYEOF'
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
}

# tb_h2_groups DIR CONNS: DIR/group.K (K = 0 .. CONNS-1), the absolute
# URIs of DIR/uris dealt round-robin, one per line.
tb_h2_groups() {
	local base
	base=$(head -n 1 "$1/uris" | sed -E 's|^(https?://[^/]*).*|\1|')
	rm -f "$1"/group.*
	sed -E "2,\$ s|^|$base|" "$1/uris" |
		awk -v d="$1" -v n="$2" '{ print > (d "/group." ((NR - 1) % n)) }'
}

# tb_client DIR CONNS DEPTH: TB_H2_CLIENT (default h2load) sends
# TB_REQUESTS requests, bounded to 600 s; every one must be answered 2xx.
#  h2load: ONE connection with CONNS streams at once (DEPTH unused);
#  nghttp: CONNS connections one after another, each with about
#    TB_REQUESTS / CONNS concurrent streams (all of its URIs at once);
#  curl (--http2-prior-knowledge, or ALPN h2 over TLS): one request per
#    process and connection, CONNS at once.
tb_client() {
	local dir=$1 conns=$2 out ok k
	tb_h2_uris "$dir" || return 1
	case ${TB_H2_CLIENT:-h2load} in
	h2load)
		"${NS_WEB[@]}" timeout 600 h2load -c 1 -m "$conns" \
			-n "$TB_REQUESTS" -i "$dir/uris" >"$dir/h2load.out" \
			2>>"$T/client.log" || {
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
		;;
	nghttp)
		tb_h2_groups "$dir" "$conns"
		: >"$dir/nghttp.out"
		for k in $(seq 0 $((conns - 1))); do
			[ -s "$dir/group.$k" ] || continue
			# shellcheck disable=SC2046
			"${NS_WEB[@]}" timeout 600 nghttp -n -s -t 60 \
				$(cat "$dir/group.$k") \
				>>"$dir/nghttp.out" 2>>"$T/client.log" || {
				echo "nghttp failed on group $k" >>"$T/client.log"
				return 1
			}
		done
		# -s: one line per request, its status code in the fifth column
		ok=$(awk '$NF ~ /^\/py\/app/ && $5 ~ /^2/' "$dir/nghttp.out" | wc -l)
		echo "nghttp, $conns connections in turn: $ok of $TB_REQUESTS answered 2xx" >"$dir/client.out"
		[ "$ok" = "$TB_REQUESTS" ] || {
			echo "nghttp: $ok of $TB_REQUESTS answered 2xx" >>"$T/client.log"
			return 1
		}
		;;
	curl)
		# one request per curl: curl 7.88 fails every request after the
		# first on a reused h2c connection ("Error in the HTTP2 framing
		# layer"), untraced too
		sed -E "2,\$ s|^|$(head -n 1 "$dir/uris" | sed -E 's|^(https?://[^/]*).*|\1|')|" \
			"$dir/uris" >"$dir/urls"
		"${NS_WEB[@]}" timeout 600 xargs -P "$conns" -n 1 curl -s -k \
			"$([ "$TB_TLS" = 1 ] && echo --http2 || echo --http2-prior-knowledge)" \
			-o /dev/null -w 'TBCODE %{http_version} %{http_code}\n' \
			<"$dir/urls" >"$dir/curl.out" 2>>"$T/client.log" || {
			echo "curl failed" >>"$T/client.log"
			return 1
		}
		ok=$(grep -c '^TBCODE 2 2' "$dir/curl.out")
		echo "curl $([ "$TB_TLS" = 1 ] && echo --http2 || echo --http2-prior-knowledge), one request per connection, $conns at once: $ok of $TB_REQUESTS answered 2xx over HTTP/2" >"$dir/client.out"
		[ "$ok" = "$TB_REQUESTS" ] || {
			echo "curl: $ok of $TB_REQUESTS answered 2xx over HTTP/2" >>"$T/client.log"
			return 1
		}
		;;
	*)
		echo "TB_H2_CLIENT=$TB_H2_CLIENT: h2load, nghttp or curl" >>"$T/client.log"
		return 1 ;;
	esac
}

tb_init nginx-h2
tb_testbed
# the other clients, one asserted run each at 16 (TB_H2_MORE=0: none)
if [ "${TB_H2_MORE:-1}" = 1 ]; then
	TB_REQUESTS=${TB_H2_MORE_REQUESTS:-400}
	TB_H2_CLIENT=nghttp tb_run 16 4 1 assert
	TB_H2_CLIENT=curl tb_run 16 4 1 assert
fi
echo "PASS: tb-nginx-h2"
