#!/bin/bash
# record.sh - record the captures of tests/proto/captures from real servers.
#
# Usage: tests/proto/record.sh [web|pg|dns|line|redis|my|h2|all] [OUTDIR]
#
# Starts nginx, apache2 (prefork, proxy_fcgi), php-fpm, PostgreSQL and
# dnsmasq on loopback in a temporary directory, drives them with curl, ab, a
# raw pipelining client, psql, a libpq program (tests/proto/pgclient.c), dig
# and getaddrinfo(3), records every read and write under strace (client or
# server side, see each scenario), and turns the channel of each scenario
# into OUTDIR/NAME.cap with strace2cap.py.  The golden event logs are not
# made here: see tests/proto/README.md.  Needs root (PostgreSQL runs as the
# postgres user, the resolver test in a network namespace).
#
# Environment: BP_KEEP=1 keeps the temporary directory (its path is
# printed); BP_PORT_BASE (default 18480) is the first of the ports used:
# +1 nginx, +2 apache, +3 PostgreSQL, +4 dnsmasq, +5 smtpd, +6 redis,
# +7 mariadbd, +8 nginx serving h2c.
# h2: nginx with "listen ... http2" (h2c) driven by nghttp (nghttp2-client):
# concurrent GETs on one connection, a POST.
# my: mariadbd (mariadb-install-db in the temporary directory, run as
# root) driven by the mariadb client, pymysql (myclient.py) and
# Connector/C (mycapi.py).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
WHAT=${1:-all}
OUT=$(realpath -m "${2:-$HERE/captures}")
BASE=${BP_PORT_BASE:-18480}
P_NGINX=$((BASE + 1)) P_APACHE=$((BASE + 2)) P_PG=$((BASE + 3))
P_DNS=$((BASE + 4))
T=$(mktemp -d /tmp/bp-record.XXXXXX)
chmod 755 "$T"
S2C="/usr/bin/python3 $HERE/strace2cap.py"
TRACE=read,write,readv,writev,recvfrom,sendto,recvmsg,sendmsg,recvmmsg,sendmmsg,sendfile,close,shutdown
PIDS=()
NETNS=

# stop: a server runs under strace (its pid in PIDS): stop the server (the
# tracee strace started), then strace ends by itself; or directly.
cleanup() {
	set +e
	trap - EXIT INT TERM
	for p in "${PIDS[@]}"; do
		for c in $(ps -o pid= --ppid "$p"); do kill "$c" 2>/dev/null; done
		case $(ps -o comm= -p "$p") in strace) ;; *) kill "$p" 2>/dev/null ;; esac
	done
	for p in "${PIDS[@]}"; do
		for _ in $(seq 50); do
			case $(ps -o stat= -p "$p") in ''|Z*) break ;; esac
			sleep 0.1
		done
		kill -9 "$p" 2>/dev/null
	done
	if [ -n "$NETNS" ]; then
		ip netns del "$NETNS" 2>/dev/null
		rm -rf "/etc/netns/$NETNS"
	fi
	if [ "${BP_KEEP:-0}" = 1 ]; then echo "record.sh: kept $T" >&2
	else rm -rf "$T"; fi
}
trap cleanup EXIT INT TERM

die() { echo "record.sh: $*" >&2; exit 1; }

# st NAME CMD...: run CMD under strace, logs in $T/st/NAME.*
st() {
	local name=$1; shift
	mkdir -p "$T/st"
	strace -f -ff -ttt -yy -xx -s 1048576 -e trace=$TRACE \
		-o "$T/st/$name" "$@"
}

# wait_port PORT: bounded wait for a TCP listener on 127.0.0.1
# st_bg NAME CMD... &: the same for a server started in the background;
# the subshell becomes strace, so $! is strace's pid, in a session of its
# own (apache signals its whole process group when it stops)
st_bg() {
	local name=$1; shift
	mkdir -p "$T/st"
	exec setsid strace -f -ff -ttt -yy -xx -s 1048576 -e trace=$TRACE \
		-o "$T/st/$name" "$@"
}

wait_port() {
	for _ in $(seq 100); do
		(exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
		sleep 0.1
	done
	die "nothing listens on port $1 after 10 s"
}

wait_file() {
	for _ in $(seq 100); do [ -e "$1" ] && return 0; sleep 0.1; done
	die "$1 did not appear after 10 s"
}

# cap NAME LOG CHANREGEX PROTO ROLE TRANSPORT NTH SOURCE...
cap() {
	local name=$1 log=$2 chan=$3 proto=$4 role=$5 tr=$6 nth=$7; shift 7
	$S2C --chan="$chan" --nth "$nth" --proto "$proto" --role "$role" \
		--min-fd "${MINFD:-0}" \
		--transport "$tr" --source "$*" -o "$OUT/$name.cap" \
		"$T/st/$log".*
}

# chan_of NAME: the channel recorded in capture NAME ("TCP:[a:p->b:q]")
chan_of() { sed -n 's/^channel //p;/^$/q' "$OUT/$1.cap"; }
# lport_of NAME: its local port; peer_ino_of NAME: "peer->local" inodes
lport_of() { chan_of "$1" | sed 's/^TCP:\[[0-9.]*:\([0-9]*\)->.*/\1/'; }
peer_ino_of() {
	chan_of "$1" | sed 's/^UNIX-STREAM:\[\([0-9]*\)->\([0-9]*\).*/\2->\1/'
}

mkdir -p "$OUT"
for p in $P_NGINX $P_APACHE $P_PG $P_DNS $((BASE + 5)) $((BASE + 6)) $((BASE + 7)) $((BASE + 8)); do
	if (exec 3<>/dev/tcp/127.0.0.1/"$p") 2>/dev/null; then
		die "port $p is in use: choose other ports with BP_PORT_BASE"
	fi
done

# ---------------------------------------------------------------- web ---
web() {
	mkdir -p "$T/www" "$T/nginx" "$T/apache" "$T/fpm" "$T/cgi"
	printf '#!/bin/sh\necho "Content-Type: text/plain"\necho\nwc -c\n' \
		> "$T/cgi/count.sh"
	chmod 755 "$T/cgi/count.sh"
	head -c 40000 /dev/urandom | base64 -w 76 > "$T/www/big.txt"
	printf '<html><body><p>BorderPatrol test page</p></body></html>\n' \
		> "$T/www/index.html"
	cat > "$T/www/info.php" <<'EOF'
<?php
header('X-Served-By: php');
echo "q=", htmlspecialchars($_GET['q'] ?? ''), "\n";
echo str_repeat("0123456789abcdef", 200), "\n";
EOF
	cat > "$T/www/post.php" <<'EOF'
<?php
$b = file_get_contents('php://input');
echo strlen($b), " bytes, md5 ", md5($b), "\n";
EOF
	head -c 3000 /dev/urandom | base64 -w 0 > "$T/post.bin"
	head -c 700 /dev/urandom | base64 -w 0 > "$T/small.bin"
	chmod -R a+rX "$T/www" "$T/cgi" "$T/post.bin" "$T/small.bin"
	chown www-data "$T/fpm"

	cat > "$T/fpm/fpm.conf" <<EOF
[global]
pid = $T/fpm/fpm.pid
error_log = $T/fpm/error.log
daemonize = no
[www]
user = www-data
group = www-data
listen = $T/fpm/php.sock
listen.owner = www-data
listen.mode = 0666
pm = static
pm.max_children = 6
EOF
	st_bg fpm /usr/sbin/php-fpm8.2 -n -y "$T/fpm/fpm.conf" &
	PIDS+=($!)
	wait_file "$T/fpm/php.sock"

	cat > "$T/nginx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $T/nginx/nginx.pid;
error_log $T/nginx/error.log;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $T/nginx/body;
  proxy_temp_path $T/nginx/proxy;
  fastcgi_temp_path $T/nginx/fastcgi;
  uwsgi_temp_path $T/nginx/uwsgi;
  scgi_temp_path $T/nginx/scgi;
  sendfile on;
  upstream fpm_keep { server unix:$T/fpm/php.sock; keepalive 2; }
  server {
    listen 127.0.0.1:$P_NGINX;
    root $T/www;
    location ~ ^/k/(.*\.php)\$ {
      fastcgi_pass fpm_keep;
      fastcgi_keep_conn on;
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME \$document_root/\$1;
      fastcgi_param SCRIPT_NAME /\$1;
    }
    location ~ \.php\$ {
      fastcgi_pass unix:$T/fpm/php.sock;
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
    }
  }
}
EOF
	st_bg nginx /usr/sbin/nginx -p "$T/nginx" -c "$T/nginx/nginx.conf" &
	PIDS+=($!)

	local M=/usr/lib/apache2/modules
	cat > "$T/apache/httpd.conf" <<EOF
ServerRoot $T/apache
ServerName localhost
Listen 127.0.0.1:$P_APACHE
PidFile $T/apache/httpd.pid
ErrorLog $T/apache/error.log
User www-data
Group www-data
LoadModule mpm_prefork_module $M/mod_mpm_prefork.so
LoadModule authz_core_module $M/mod_authz_core.so
LoadModule mime_module $M/mod_mime.so
LoadModule proxy_module $M/mod_proxy.so
LoadModule proxy_fcgi_module $M/mod_proxy_fcgi.so
LoadModule alias_module $M/mod_alias.so
LoadModule cgi_module $M/mod_cgi.so
ScriptAlias /cgi-bin/ $T/cgi/
TypesConfig /etc/mime.types
StartServers 1
MinSpareServers 1
MaxSpareServers 1
DocumentRoot $T/www
<Directory $T/www>
  Require all granted
</Directory>
<FilesMatch "\.php\$">
  SetHandler "proxy:unix:$T/fpm/php.sock|fcgi://localhost"
</FilesMatch>
EOF
	st_bg apache /usr/sbin/apache2 -f "$T/apache/httpd.conf" -DFOREGROUND &
	PIDS+=($!)
	wait_port "$P_NGINX"
	wait_port "$P_APACHE"

	local U=http://127.0.0.1:$P_NGINX A=http://127.0.0.1:$P_APACHE
	local H="^TCP:\[127.0.0.1:$P_NGINX->127.0.0.1:"
	local HA="^TCP:\[127.0.0.1:$P_APACHE->127.0.0.1:"
	local HC="->127.0.0.1:$P_NGINX\]" HAC="->127.0.0.1:$P_APACHE\]"
	local FPMC="^UNIX-STREAM:\[[0-9]+->[0-9]+\]$"

	# 1. keep-alive: three GETs (200, 200 with a query, 404) on one
	#    connection; client side (curl) and server side (nginx)
	st curl-keepalive curl -sS -o /dev/null -o /dev/null -o /dev/null \
		"$U/index.html" "$U/index.html?a=1&b=2" "$U/missing.html"
	cap http-keepalive-client curl-keepalive "$HC" http client stream 1 \
		"curl 7.88: three GETs on one keep-alive connection to nginx 1.22"
	cap http-keepalive-server nginx "$H$(lport_of http-keepalive-client)\]" \
		http server stream 1 \
		"nginx 1.22 worker: three GETs on one keep-alive connection from curl"
	# 2. pipelining: GET, HEAD, GET (Connection: close) written at once
	st pipeline /usr/bin/python3 "$HERE/pipeline.py" "$P_NGINX"
	cap http-pipeline-client pipeline "$HC" http client stream 1 \
		"python3 socket: GET, HEAD, GET+close pipelined in one write to nginx 1.22"
	cap http-pipeline-server nginx "$H$(lport_of http-pipeline-client)\]" \
		http server stream 1 \
		"nginx 1.22 worker: GET, HEAD, GET+close pipelined by the client"
	# 3. HEAD then GET, and a conditional GET answered 304
	local lm
	lm=$(curl -sSI "$U/index.html" | tr -d '\r' | sed -n 's/^Last-Modified: //p')
	st curl-cond curl -sS -o /dev/null -I "$U/index.html" \
		--next -o /dev/null -H "If-Modified-Since: $lm" "$U/index.html" \
		--next -o /dev/null "$U/big.txt"
	cap http-head-304-client curl-cond "$HC" http client stream 1 \
		"curl 7.88: HEAD, conditional GET (304), GET of 54 KB on one connection to nginx 1.22"
	cap http-head-304-server nginx "$H$(lport_of http-head-304-client)\]" \
		http server stream 1 \
		"nginx 1.22 worker: HEAD, conditional GET (304), GET of 54 KB sent with sendfile"
	# 4. 100-continue: POST through nginx to php-fpm
	st curl-expect curl -sS -o /dev/null -H 'Expect: 100-continue' \
		--data-binary @"$T/post.bin" "$U/post.php"
	cap http-expect-client curl-expect "$HC" http client stream 1 \
		"curl 7.88: POST of 4 KB with Expect: 100-continue to nginx 1.22 (php-fpm behind)"
	cap fcgi-nginx-post nginx "$FPMC" fastcgi client stream 1 \
		"nginx 1.22 worker to php-fpm 8.2: POST post.php with a 4 KB body (no keep-conn)"
	cap fcgi-fpm-post fpm "^UNIX-STREAM:\[$(peer_ino_of fcgi-nginx-post)" \
		fastcgi server stream 1 \
		"php-fpm 8.2 child: POST post.php with a 4 KB body from nginx"
	# 5. HTTP/1.0: PHP through nginx, no length: the body ends at close
	st curl-10 curl -sS -0 -o /dev/null "$U/info.php?q=ten"
	cap http10-close-client curl-10 "$HC" http client stream 1 \
		"curl 7.88 -0: HTTP/1.0 GET of a PHP page via nginx 1.22, body ended by close"
	cap fcgi-nginx-get nginx "$FPMC" fastcgi client stream 2 \
		"nginx 1.22 worker to php-fpm 8.2: GET info.php (no keep-conn)"
	cap fcgi-fpm-get fpm "^UNIX-STREAM:\[$(peer_ino_of fcgi-nginx-get)" \
		fastcgi server stream 1 "php-fpm 8.2 child: GET info.php from nginx"
	# 6. ab: HTTP/1.0 keep-alive, three requests
	st ab ab -q -k -n 3 -c 1 "$U/index.html" >/dev/null
	cap http10-keepalive-client ab "$HC" http client stream 1 \
		"ab 2.3 -k: three HTTP/1.0 keep-alive GETs to nginx 1.22"
	# 7. nginx with fastcgi_keep_conn: three requests on one connection
	st curl-keep curl -sS -o /dev/null "$U/k/info.php?q=k1" \
		--next -o /dev/null --data-binary @"$T/small.bin" "$U/k/post.php" \
		--next -o /dev/null "$U/k/info.php?q=k3"
	cap fcgi-nginx-keepconn nginx "$FPMC" fastcgi client stream 3 \
		"nginx 1.22 worker to php-fpm 8.2 with fastcgi_keep_conn: GET, POST, GET on one connection"
	cap fcgi-fpm-keepconn fpm \
		"^UNIX-STREAM:\[$(peer_ino_of fcgi-nginx-keepconn)" fastcgi server \
		stream 1 "php-fpm 8.2 child: GET, POST, GET from nginx on one kept connection"
	# 8. apache + PHP: chunked responses, a POST, keep-alive
	st curl-apache curl -sS -o /dev/null "$A/info.php?q=apache" \
		--next -o /dev/null --data-binary @"$T/small.bin" "$A/post.php" \
		--next -o /dev/null "$A/index.html"
	cap http-chunked-client curl-apache "$HAC" http client stream 1 \
		"curl 7.88: GET (chunked PHP reply), POST, GET static on one connection to apache 2.4 prefork + proxy_fcgi"
	cap http-chunked-server apache "$HA$(lport_of http-chunked-client)\]" \
		http server stream 1 \
		"apache 2.4 prefork child: GET (chunked PHP reply), POST, GET static"
	cap fcgi-apache apache "$FPMC" fastcgi client stream 1 \
		"apache 2.4 mod_proxy_fcgi to php-fpm 8.2: GET info.php"
	# 9. apache 100-continue
	st curl-apache-expect curl -sS -o /dev/null -H 'Expect: 100-continue' \
		--data-binary @"$T/post.bin" "$A/post.php"
	cap http-expect-apache-client curl-apache-expect "$HAC" http client \
		stream 1 "curl 7.88: POST with Expect: 100-continue to apache 2.4 (chunked PHP reply)"
	# 10. CGI: apache writes the body to the script's stdin pipe and
	#     reads its stdout pipe: one-shot messages (apache's ends: fd > 2)
	st curl-cgi curl -sS -o /dev/null --data-binary @"$T/small.bin" \
		"$A/cgi-bin/count.sh"
	MINFD=3 cap oneshot-cgi-stdin apache "^pipe:" oneshot unknown stream 1 \
		"apache 2.4 mod_cgi: the POST body written to a CGI's stdin pipe"
	MINFD=3 cap oneshot-cgi-stdout apache "^pipe:" oneshot unknown stream 2 \
		"apache 2.4 mod_cgi: the CGI's output read from its stdout pipe"
}

# ----------------------------------------------------------------- pg ---
pg() {
	local B=/usr/lib/postgresql/15/bin D=$T/pg
	mkdir -p "$D" "$T/st"
	chown postgres "$D"
	chmod 777 "$T/st"
	setpriv --reuid=postgres --regid=postgres --init-groups \
		"$B/initdb" -D "$D/data" -A trust -U postgres >/dev/null
	# password authentication (SCRAM) for user "scram" over TCP
	sed -i '1i host all scram 127.0.0.1/32 scram-sha-256' "$D/data/pg_hba.conf"
	cc -o "$T/pgclient" "$HERE/pgclient.c" -I"$(pg_config --includedir)" -lpq
	(
		exec setsid setpriv --reuid=postgres --regid=postgres \
		--init-groups strace -f -ff -ttt -yy -xx -s 1048576 -e trace=$TRACE \
		-o "$T/st/postgres" "$B/postgres" -D "$D/data" -p "$P_PG" -k "$D" \
		-c listen_addresses=127.0.0.1 -c ssl=off -c logging_collector=off
	) > "$D/log" 2>&1 &
	PIDS+=($!)
	wait_port "$P_PG"
	local C="host=127.0.0.1 port=$P_PG user=postgres dbname=postgres"
	local PC="->127.0.0.1:$P_PG\]" PS="^TCP:\[127.0.0.1:$P_PG->127.0.0.1:"
	psql -X -q "$C" -c "CREATE ROLE scram LOGIN PASSWORD 'secret'"

	cat > "$T/script.sql" <<'EOF'
CREATE TABLE t (a int, b text);
SELECT 1 AS one, 'two' AS two;
SELECT * FROM nosuchtable;
COPY t FROM STDIN;
1	one
2	two
\.
COPY t FROM STDIN;
\.
COPY t TO STDOUT;
DO $$ BEGIN RAISE NOTICE 'hello notice'; END $$;
LISTEN ch;
NOTIFY ch, 'during';
\! psql -X -q "$PGNOTIFY" -c "NOTIFY ch, 'idle'"
\! sleep 0.3
SELECT count(*) FROM t;
DROP TABLE t;
EOF
	# 1. psql over TCP: SSLRequest refused, simple queries, an error,
	#    COPY in (with and without rows) and out, NOTICE, NOTIFY inside a
	#    reply and while idle; client side and the backend's side
	PGNOTIFY="$C" st psql psql -X -q "$C sslmode=prefer" \
		-v ON_ERROR_STOP=0 -f "$T/script.sql" >/dev/null 2>&1
	cap pg-psql-client psql "$PC" postgresql client stream 1 \
		"psql 15 over TCP (sslmode=prefer, refused): simple queries, an error, COPY in/out, NOTICE, NOTIFY in a reply and while idle"
	cap pg-psql-server postgres "$PS$(lport_of pg-psql-client)\]" \
		postgresql server stream 1 \
		"postgres 15 backend: the psql session of pg-psql-client"
	# 2. libpq extended query: parameters, named statements, extended
	#    COPY, pipeline mode, cancel
	st pgclient "$T/pgclient" "$C sslmode=disable"
	cap pg-libpq-client pgclient "$PC" postgresql client stream 1 \
		"libpq 15 (tests/proto/pgclient.c): extended query, prepared statements, COPY via extended protocol, pipeline mode with an error, NOTIFY, multi-statement query, cancelled query"
	cap pg-libpq-server postgres "$PS$(lport_of pg-libpq-client)\]" \
		postgresql server stream 1 \
		"postgres 15 backend: the session of pg-libpq-client"
	cap pg-cancel-client pgclient "$PC" postgresql client stream 2 \
		"libpq 15: CancelRequest on its own connection"
	# 3. SCRAM-SHA-256 password authentication
	PGPASSWORD=secret st psql-scram psql -X -q \
		"host=127.0.0.1 port=$P_PG user=scram dbname=postgres sslmode=disable" \
		-c "SELECT current_user" >/dev/null
	cap pg-scram-client psql-scram "$PC" postgresql client stream 1 \
		"psql 15: SCRAM-SHA-256 authentication, one query"
	# 4. sslmode=require against a server without SSL: refused, gives up
	st psql-ssl psql -X -q "$C sslmode=require" -c "SELECT 1" \
		>/dev/null 2>&1 || true
	cap pg-sslrequire-client psql-ssl "$PC" postgresql client stream 1 \
		"psql 15 sslmode=require: SSLRequest refused ('N'), connection dropped"
}

# ---------------------------------------------------------------- dns ---
dns() {
	local Q="-p $P_DNS @127.0.0.1 +tries=1 +time=2"
	st_bg dnsmasq dnsmasq -k -p "$P_DNS" --listen-address=127.0.0.1 \
		--bind-interfaces --no-resolv --no-hosts -C /dev/null \
		--pid-file="$T/dnsmasq.pid" --address=/test/127.0.0.9 \
		--address=/test/::9 --address=/nx.test/ \
		--ptr-record=9.0.0.127.in-addr.arpa,host.test &
	PIDS+=($!)
	wait_port "$P_DNS"
	local DC="^UDP:\[127.0.0.1:[0-9]+->127.0.0.1:$P_DNS\]"
	# 1. dig over UDP: A, AAAA, PTR, and a name dnsmasq refuses
	st dig-a dig $Q host.test A +noall >/dev/null
	cap dns-dig-a dig-a "$DC" dns client dgram 1 \
		"dig 9.18 over UDP: A host.test (EDNS, cookie) to dnsmasq 2.90"
	st dig-aaaa dig $Q host.test AAAA +noall >/dev/null
	cap dns-dig-aaaa dig-aaaa "$DC" dns client dgram 1 \
		"dig 9.18 over UDP: AAAA host.test to dnsmasq 2.90"
	st dig-ptr dig $Q -x 127.0.0.9 +noall >/dev/null
	cap dns-dig-ptr dig-ptr "$DC" dns client dgram 1 \
		"dig 9.18 over UDP: PTR 9.0.0.127.in-addr.arpa to dnsmasq 2.90"
	st dig-refused dig $Q nosuch.example A +noall >/dev/null
	cap dns-dig-refused dig-refused "$DC" dns client dgram 1 \
		"dig 9.18 over UDP: A nosuch.example, which dnsmasq (no upstream) refuses"
	# 2. dig over TCP: two queries on one connection
	st dig-tcp dig $Q +tcp +keepopen a.test A b.nx.test MX +noall >/dev/null
	cap dns-dig-tcp dig-tcp "^TCP:\[127.0.0.1:[0-9]+->127.0.0.1:$P_DNS\]" \
		dns client stream 1 \
		"dig 9.18 +tcp +keepopen: A a.test and MX b.nx.test (NXDOMAIN) on one TCP connection to dnsmasq 2.90"
	# 3. dnsmasq's side: every UDP query above on its one socket
	cap dns-dnsmasq-server dnsmasq "^UDP:\[127.0.0.1:$P_DNS\]" dns server \
		dgram 1 "dnsmasq 2.90: the UDP queries of the dig runs and its answers"
	# 4. glibc getaddrinfo: A and AAAA together on one socket, through
	#    a resolv.conf of a network namespace of our own
	NETNS=bp-rec-$$
	ip netns add "$NETNS"
	mkdir -p "/etc/netns/$NETNS"
	echo "nameserver 127.0.0.1" > "/etc/netns/$NETNS/resolv.conf"
	ip netns exec "$NETNS" ip link set lo up
	ip netns exec "$NETNS" dnsmasq -k -p 53 --listen-address=127.0.0.1 \
		--bind-interfaces --no-resolv --no-hosts -C /dev/null \
		--pid-file="$T/dnsmasq-ns.pid" --address=/test/127.0.0.9 \
		--address=/test/::9 &
	PIDS+=($!)
	local ok=
	for _ in $(seq 50); do
		[ -s "$T/dnsmasq-ns.pid" ] && ok=1 && break; sleep 0.1
	done
	[ -n "$ok" ] || die "dnsmasq in $NETNS did not start"
	ip netns exec "$NETNS" strace -f -ff -ttt -yy -xx -s 1048576 \
		-e trace=$TRACE -o "$T/st/gai" getent ahosts www.host.test >/dev/null
	cap dns-getaddrinfo gai "^UDP:\[127.0.0.1:[0-9]+->127.0.0.1:53\]" dns \
		client dgram 1 "glibc 2.36 getaddrinfo (getent ahosts): A and AAAA sent together with sendmmsg on one socket, dnsmasq 2.90 answering"
}

# --------------------------------------------------------------- line ---
line() {
	local P_SMTP=$((BASE + 5))
	/usr/bin/python3 -W ignore -m smtpd -n -c DebuggingServer \
		"127.0.0.1:$P_SMTP" > "$T/smtpd.log" 2>&1 &
	PIDS+=($!)
	wait_port "$P_SMTP"
	# SMTP is line-oriented: every line, the server's greeting and the
	# lines of the DATA phase included, is a message of its own
	st smtp /usr/bin/python3 -c '
import smtplib, sys
s = smtplib.SMTP("127.0.0.1", int(sys.argv[1]), timeout=10)
s.sendmail("a@example.test", ["b@example.test"],
           "Subject: line test\r\n\r\nfirst body line\r\nsecond\r\n")
s.quit()' "$P_SMTP"
	cap line-smtp-client smtp "^TCP:\[127.0.0.1:[0-9]+->127.0.0.1:$P_SMTP\]" \
		line client stream 1 \
		"python3 smtplib to python3 smtpd (SMTP: EHLO, MAIL, RCPT, DATA, QUIT)"
}

# -------------------------------------------------------------- redis ---
redis() {
	local P_REDIS=$((BASE + 6))
	mkdir -p "$T/redis"
	# redis-server by hand: no persistence, a password (AUTH must be
	# redacted), traced from its start; COMMAND renamed away, so that
	# redis-cli's COMMAND DOCS (170 KB of help text) gets an error
	st_bg redis redis-server --port "$P_REDIS" --bind 127.0.0.1 \
		--save '' --appendonly no --dir "$T/redis" \
		--requirepass s3cret --daemonize no --logfile "$T/redis.log" \
		--rename-command COMMAND '' &
	PIDS+=($!)
	wait_port "$P_REDIS"
	local RC="^TCP:\[127.0.0.1:[0-9]+->127.0.0.1:$P_REDIS\]"
	# 1. redis-cli in RESP3 (HELLO 3 AUTH ...): strings, a miss (null),
	#    a hash (map), a set, a double, a WRONGTYPE error, one command per
	#    line from stdin
	printf '%s\n' 'SET user:42 alice' 'GET user:42' 'GET user:nobody' \
		'INCR hits' 'HSET h:1 name bob age 7' 'HGETALL h:1' \
		'SADD s:1 a b' 'SMEMBERS s:1' 'ZADD z:1 1.5 m' 'ZSCORE z:1 m' \
		'LPUSH user:42 x' 'EXISTS user:42 h:1' |
		st cli redis-cli -3 -p "$P_REDIS" --user default --pass s3cret \
		--no-auth-warning >/dev/null
	cap redis-cli-resp3-client cli "$RC" redis client stream 1 \
		"redis-cli 7.0 -3 (AUTH, HELLO 3) to redis-server 7.0: COMMAND DOCS refused, strings, null, map, set, double, WRONGTYPE error"
	# 2. redis-py: AUTH, commands, a pipeline, MULTI/EXEC, BLPOP answered
	#    when another connection pushes; pub/sub on a connection of its own
	st py /usr/bin/python3 -c '
import sys, threading, time, redis
port = int(sys.argv[1])
r = redis.Redis(connection_pool=redis.BlockingConnectionPool(
    port=port, password="s3cret", max_connections=1))
r.set("k:1", "v" * 300)
r.get("k:1")
r.incr("n:1")
p = r.pipeline(transaction=False)
p.set("p:1", "a").get("p:1").incr("p:n").get("nosuch")
p.execute()
t = r.pipeline(transaction=True)
t.incr("t:n").lpush("t:l", "x").lrange("t:l", 0, -1)
t.execute()
try:
    r.hset("k:1", "f", "v")
except redis.ResponseError:
    pass
o = redis.Redis(port=port, password="s3cret")
threading.Timer(0.3, lambda: o.rpush("q:1", "job")).start()
r.blpop("q:1", timeout=5)
s = redis.Redis(port=port, password="s3cret").pubsub()
s.subscribe("ch:a", "ch:b")
for _ in range(2):
    s.get_message(timeout=1)
o.publish("ch:a", "hello")
o.publish("ch:b", "world")
for _ in range(2):
    s.get_message(timeout=1)
s.unsubscribe()
for _ in range(2):
    s.get_message(timeout=1)
s.close()
' "$P_REDIS"
	cap redis-py-client py "$RC" redis client stream 1 \
		"python3 redis-py 4.3 (RESP2): AUTH, SET/GET/INCR, a pipeline of 4 in one write, MULTI/EXEC, WRONGTYPE, BLPOP answered 0.3 s later"
	cap redis-py-pubsub-client py "$RC" redis client stream 3 \
		"python3 redis-py 4.3 (RESP2): AUTH, SUBSCRIBE two channels, two messages, UNSUBSCRIBE all"
	cap redis-server-py redis "^TCP:\[127.0.0.1:$P_REDIS->127.0.0.1:[0-9]+\]" \
		redis server stream 2 \
		"redis-server 7.0: the redis-py connection of the pipeline, MULTI/EXEC and BLPOP, server side"
}

# ----------------------------------------------------------------- my ---
my() {
	local D=$T/my P_MY=$((BASE + 7))
	mkdir -p "$D"
	mariadb-install-db --no-defaults --datadir="$D/data" --user=root \
		--auth-root-authentication-method=normal --skip-test-db \
		> "$D/install.log" 2>&1 || die "mariadb-install-db failed"
	st_bg mariadbd /usr/sbin/mariadbd --no-defaults --datadir="$D/data" \
		--socket="$D/mysqld.sock" --port="$P_MY" --bind-address=127.0.0.1 \
		--user=root --skip-name-resolve --pid-file="$D/pid" \
		--log-error="$D/err.log" --skip-log-bin --local-infile=1 \
		--innodb-buffer-pool-size=16M &
	PIDS+=($!)
	wait_port "$P_MY"
	mariadb --no-defaults -S "$D/mysqld.sock" -uroot -e "CREATE DATABASE tb;
		CREATE USER 'tb'@'127.0.0.1' IDENTIFIED BY 'tbpw';
		CREATE USER 'tb'@'localhost' IDENTIFIED BY 'tbpw';
		GRANT ALL ON tb.* TO 'tb'@'127.0.0.1';
		GRANT ALL ON tb.* TO 'tb'@'localhost';"
	printf '10\tten\n11\televen\n' > "$D/in.tsv"
	cat > "$D/cli.sql" <<EOF
CREATE TABLE cli_t (a INT, b TEXT);
INSERT INTO cli_t VALUES (1, 'x'), (2, NULL);
SELECT * FROM cli_t; SELECT COUNT(*) FROM cli_t;
SELECT nosuchcol FROM cli_t;
LOAD DATA LOCAL INFILE '$D/in.tsv' INTO TABLE cli_t;
USE tb;
DROP TABLE cli_t;
EOF
	local MC="->127.0.0.1:$P_MY\]" MS="^TCP:\[127.0.0.1:$P_MY->127.0.0.1:"
	# 1. pymysql over TCP: text queries, an error, multi-statement,
	#    LOCAL INFILE, ping, select_db, prepared statements, reset
	st pymysql /usr/bin/python3 "$HERE/myclient.py" "$P_MY" tb tbpw tb \
		"$D/in.tsv"
	cap mysql-pymysql-client pymysql "$MC" mysql client stream 1 \
		"pymysql 1.0.2 (tests/proto/myclient.py) to mariadbd 10.11: queries, an error, multi-statement, LOCAL INFILE, ping, init_db, COM_STMT_PREPARE/EXECUTE/CLOSE, execute of a closed statement, reset connection"
	cap mysql-pymysql-server mariadbd "$MS$(lport_of mysql-pymysql-client)\]" \
		mysql server stream 1 "mariadbd 10.11: the session of mysql-pymysql-client"
	# 2. the mariadb client (Connector/C) over TCP: result sets with
	#    MariaDB's metadata flag, an error, LOCAL INFILE with a progress
	#    report, USE (init_db)
	st mariadb-cli mariadb --no-defaults -h 127.0.0.1 -P "$P_MY" -utb -ptbpw \
		--local-infile=1 --force tb < "$D/cli.sql" > /dev/null 2>&1
	cap mysql-cli-client mariadb-cli "$MC" mysql client stream 1 \
		"mariadb 10.11 client: queries, two statements in a script line, an error, LOAD DATA LOCAL INFILE, USE"
	# 3. Connector/C prepared statements, execute_direct pipelined
	st capi /usr/bin/python3 "$HERE/mycapi.py" "$P_MY" tb tbpw tb
	cap mysql-capi-client capi "$MC" mysql client stream 1 \
		"libmariadb 3.3 (tests/proto/mycapi.py) to mariadbd 10.11: prepare/execute/close, and mariadb_stmt_execute_direct (PREPARE and EXECUTE id -1 in one write, once failing to prepare)"
	cap mysql-capi-server mariadbd "$MS$(lport_of mysql-capi-client)\]" \
		mysql server stream 1 "mariadbd 10.11: the session of mysql-capi-client"
	# 4. a wrong password, over the unix socket: ERR 1045 in the handshake
	st mariadb-badpw mariadb --no-defaults -S "$D/mysqld.sock" -utb -pwrong \
		-e "SELECT 1" > /dev/null 2>&1 || true
	cap mysql-badpw-client mariadb-badpw "^UNIX-STREAM:" mysql client \
		stream 1 "mariadb 10.11 client over the unix socket: access denied (ERR 1045 in the handshake)"
}

# ---------------------------------------------------------------- h2 ---
# nginx serving h2c (prior knowledge), a worker of its own under strace;
# nghttp: four GETs at once on one connection (a query string with a
# token, a 52 KiB file, a 404, "return 444", which HTTP/2 answers with
# RST_STREAM), then a POST with a body on a second connection.
h2() {
	local P_H2=$((BASE + 8)) D=$T/h2
	mkdir -p "$D/www" "$D/tmp"
	echo hello >"$D/www/a.txt"
	head -c 40000 /dev/urandom | base64 >"$D/www/big.txt"
	echo "some body data" >"$D/body.txt"
	chmod -R a+rX "$D"
	cat >"$D/nginx.conf" <<-EOF
	daemon off;
	master_process off;
	worker_processes 1;
	pid $D/nginx.pid;
	error_log $D/error.log warn;
	events { worker_connections 64; }
	http {
	    access_log off;
	    client_body_temp_path $D/tmp/body;
	    proxy_temp_path $D/tmp/proxy;
	    fastcgi_temp_path $D/tmp/fcgi;
	    uwsgi_temp_path $D/tmp/uwsgi;
	    scgi_temp_path $D/tmp/scgi;
	    server {
	        listen 127.0.0.1:$P_H2 http2;
	        root $D/www;
	        location /post { return 201 "made\n"; }
	        location /rst { return 444; }
	    }
	}
	EOF
	st_bg nginx-h2 nginx -c "$D/nginx.conf" -p "$D" &
	PIDS+=($!)
	wait_port "$P_H2"
	local U=http://127.0.0.1:$P_H2 HC="^TCP:\[127.0.0.1:[0-9]+->127.0.0.1:$P_H2\]"
	local HS="^TCP:\[127.0.0.1:$P_H2->127.0.0.1:"
	st nghttp nghttp -n "$U/a.txt?x=1&token=s3cret" "$U/big.txt" \
		"$U/missing" "$U/rst" >/dev/null || true
	cap h2-nghttp-client nghttp "$HC" http2 client stream 1 \
		"nghttp 1.52 h2c prior knowledge, 4 concurrent GETs on one connection (a query string with a token, 52 KiB body, 404, nginx return 444 = RST_STREAM), priority anchor streams"
	cap h2-nginx-server nginx-h2 "$HS$(lport_of h2-nghttp-client)\]" http2 \
		server stream 1 "nginx 1.22 listen http2 (h2c), nghttp 1.52: 4 concurrent GETs on one connection (a query string with a token, 52 KiB body, 404, return 444 = RST_STREAM)"
	st nghttp-post nghttp -n -d "$D/body.txt" "$U/post" >/dev/null
	cap h2-nghttp-post-client nghttp-post "$HC" http2 client stream 1 \
		"nghttp 1.52 -d: a POST with a body (HEADERS, DATA with END_STREAM), 201"
	cap h2-nginx-post-server nginx-h2 \
		"$HS$(lport_of h2-nghttp-post-client)\]" http2 server stream 1 \
		"nginx 1.22 listen http2 (h2c): a POST with a body from nghttp -d, 201"
}

case $WHAT in
web) web ;;
pg) pg ;;
dns) dns ;;
line) line ;;
redis) redis ;;
my) my ;;
h2) h2 ;;
all) web; pg; dns; line; redis; my; h2 ;;
*) die "unknown part '$WHAT' (web, pg, dns, line, redis, my, h2, all)" ;;
esac
