#!/bin/bash
# e2e.sh - (make check) the protocol processors end to end with real
# programs: traced clients against traced servers on loopback, every
# message of the reconstruction checked against the bytes on the wire.
#
# Servers (Debian's packages, in a temporary directory, ports
# BP_E2E_PORT+1..+8, default 18700): nginx (static files, over HTTP and
# HTTPS with a self-signed certificate made at test time), apache2 prefork
# (static files, a CGI that reads its body), PostgreSQL (a private
# cluster, ssl = on), dnsmasq (names from a hosts file), redis-server (no
# persistence), mariadbd (a data directory of its own, no grant tables)
# (with a certificate: TLS on request) and, for glibc's resolver, a
# second dnsmasq on 127.0.0.1:53 of a network namespace of the test's own.
# Clients: curl (keep-alive, HEAD, POST, chunked request body, 404,
# Expect: 100-continue), ab -k, pipeline.py (HTTP pipelining), psql
# (simple queries, PREPARE/EXECUTE, an error, COPY in and out), pgclient
# (libpq: extended query, pipeline mode, COPY, cancel), dig (UDP and TCP),
# getent ahosts/hosts (getaddrinfo, gethostbyname2), redis-cli (RESP3:
# HELLO 3, COMMAND DOCS, strings, a map, an error), redis-py (a
# pipeline and MULTI/EXEC in one write each), nghttp (HTTP/2 over h2c:
# four concurrent GETs on one connection), the mariadb client
# (statements one by one, a result set) and pymysql (a multi-statement
# query with two result sets, an error); tlsclient.py (Python's ssl over
# OpenSSL: HTTPS keep-alive, a POST, pipelining; PostgreSQL over SSL:
# SSLRequest, then simple and extended queries; PostgreSQL refusing SSL:
# psql with sslmode=prefer answered 'N', then plaintext; MariaDB over TLS: an SSL
# request, then the handshake response and queries, by hand and through
# pymysql).  Every program runs
# under bp-run; the clients also under strace, whose logs are the ground
# truth; a TLS client logs the plaintext it sent and received itself
# (strace sees ciphertext), and that log is its ground truth.
# e2e_check.py then compares the messages table with the wire on
# the client side and, through peer_message_id, on the server side
# (docs/protocols.md, "End to end with real programs").
#
# Needs root (PostgreSQL runs as postgres, the servers' workers as
# www-data, the resolver test in a network namespace).  Missing programs
# fail the test (with the apt-get line), never skip it.  BP_KEEP=1 keeps
# the temporary directory.
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../integ/lib.sh
. "$HERE/../integ/lib.sh"
# shellcheck source=../lib/servers.sh
. "$HERE/../lib/servers.sh"

APT="apt-get install -y nginx-light apache2 apache2-utils curl postgresql postgresql-client libpq-dev dnsmasq-base bind9-dnsutils strace iproute2 util-linux gcc python3 redis-server redis-tools python3-redis mariadb-server mariadb-client python3-pymysql nghttp2-client"
BASE=${BP_E2E_PORT:-18700}
P_NGINX=$((BASE + 1)) P_APACHE=$((BASE + 2)) P_PG=$((BASE + 3))
P_DNS=$((BASE + 4)) P_REDIS=$((BASE + 5)) P_MY=$((BASE + 6))
P_NGINXS=$((BASE + 7)) P_H2=$((BASE + 8))
NETNS=""
TRACE=read,write,readv,writev,recvfrom,sendto,recvmsg,sendmsg,recvmmsg,sendmmsg,sendfile,close,shutdown

# e2e_cleanup: bp_cleanup (PostgreSQL first: bp_pg_start), the namespace.
e2e_cleanup() {
	local rc=$?
	bp_cleanup "$rc"
	if [ -n "$NETNS" ]; then
		ip netns del "$NETNS" 2>/dev/null
		rm -rf "/etc/netns/$NETNS"
	fi
	return $rc
}

need() {
	[ -x "$1" ] || command -v "$1" >/dev/null 2>&1 ||
		bp_fail "$1 is missing: $APT"
}

# st NAME CMD...: run CMD traced and under strace (logs $T/st/NAME.*),
# bounded to 60 s; fail if it fails.
st() {
	local name=$1
	shift
	timeout 60 strace -f -ff -ttt -yy -xx -s 1048576 -e trace=$TRACE \
		-o "$T/st/$name" "${BP_PREFIX[@]}" "$@" \
		>"$T/$name.out" 2>"$T/$name.log" ||
		bp_fail "client $name failed (status $?): $*"
}

# truth NAME PROTO PORT ID...: what e2e_check.py checks for run NAME
truth() { echo "$*" >>"$T/truth"; }

bp_init e2e
trap e2e_cleanup EXIT
chmod 755 "$T"
[ "$(id -u)" = 0 ] || bp_fail "run as root (servers switch to www-data" \
	"and postgres; a network namespace for the resolver)"
bp_require_tracing
for p in nginx apache2 ab curl psql dnsmasq dig strace ip setpriv getent cc \
	 pg_config redis-server redis-cli mariadb-install-db mariadb \
	 /usr/sbin/mariadbd openssl nghttp; do
	need "$p"
done
bp_find_pgbin
[ -n "$PGBIN" ] && [ -x "$PGBIN/postgres" ] || bp_fail "PostgreSQL is" \
	"missing: $APT"
id www-data >/dev/null 2>&1 && id postgres >/dev/null 2>&1 ||
	bp_fail "the users www-data and postgres are missing: $APT"
[ -f /usr/lib/apache2/modules/mod_cgi.so ] || bp_fail "mod_cgi is missing: $APT"
"$PY" -c 'import redis' 2>/dev/null || bp_fail "$PY cannot import redis: $APT"
"$PY" -c 'import pymysql' 2>/dev/null ||
	bp_fail "$PY cannot import pymysql: $APT"
for p in $P_NGINX $P_APACHE $P_PG $P_DNS $P_REDIS $P_MY $P_NGINXS $P_H2; do
	if (exec 3<>/dev/tcp/127.0.0.1/"$p") 2>/dev/null ||
		grep -q "$(printf ':%04X ' "$p")" /proc/net/udp 2>/dev/null; then
		bp_fail "port $p is in use: choose other ports with BP_E2E_PORT"
	fi
done
cc -o "$T/pgclient" "$HERE/pgclient.c" -I"$(pg_config --includedir)" -lpq \
	2>"$T/cc.log" || bp_fail "cannot build pgclient.c: $APT"

R=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')    # this run's id
mkdir -p "$T/st" "$T/www" "$T/cgi" "$T/nginx" "$T/apache" "$T/run"
chmod 777 "$T/st"
: >"$T/truth"

# ---- files and names ---------------------------------------------------
for n in ka1 ka2 head post chunk ab pipe1 pipe2 pipe3 ap1 ap2; do
	printf '<html><body><p>%s %s</p></body></html>\n' "$n" "$R" \
		>"$T/www/$n-$R.html"
done
head -c 30000 /dev/urandom | base64 -w 76 >"$T/www/big-$R.txt"
head -c 3000 /dev/urandom | base64 -w 0 >"$T/post.bin"
head -c 5000 /dev/urandom | base64 -w 76 >"$T/chunk.bin"
printf '#!/bin/sh\necho "Content-Type: text/plain"\necho\nwc -c\n' \
	>"$T/cgi/count.sh"
chmod 755 "$T/cgi/count.sh"
chmod -R a+rX "$T/www" "$T/cgi"
{
	for n in dig1 dig2 tcp1 tcp2 gai ghbn; do
		echo "127.0.0.9 $n-$R.e2e.test"
	done
	echo "::9 dig2-$R.e2e.test"
} >"$T/hosts"

# one self-signed certificate for nginx's HTTPS and PostgreSQL's SSL
mkdir -p "$T/tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-days 2 -subj /CN=e2e.test -keyout "$T/tls/key.pem" \
	-out "$T/tls/cert.pem" >"$T/tls/req.log" 2>&1 ||
	bp_fail "openssl req failed: $(tail -n 3 "$T/tls/req.log")"
chown postgres "$T/tls/key.pem" "$T/tls/cert.pem"
chmod 600 "$T/tls/key.pem"
chmod 755 "$T/tls"
for n in 1 2 3 4 5 6 7 8; do
	printf '<html><body><p>tls%s %s</p></body></html>\n' "$n" "$R" \
		>"$T/www/tls$n-$R.html"
done
chmod -R a+rX "$T/www"

# ---- logd and the tracing prefix ------------------------------------------
bp_logd_start "$T" -u www-data -u postgres
RULES="http port $P_NGINX,$P_APACHE,$P_NGINXS; postgresql port $P_PG; dns port $P_DNS;
	redis port $P_REDIS; mysql port $P_MY; http2 port $P_H2"
bp_trace_prefix "$BP_LOGD_SOCK" "$RULES" 1

# ---- servers ---------------------------------------------------------------
cat >"$T/nginx/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
user www-data www-data;
pid $T/run/nginx.pid;
error_log $T/nginx/error.log;
events { worker_connections 64; }
http {
  access_log off;
$(bp_nginx_temp_paths "$T/nginx")
  sendfile on;
  keepalive_requests 1000;
  server {
    listen 127.0.0.1:$P_NGINX;
    root $T/www;
    error_page 405 =200 \$uri;
  }
  server {
    listen 127.0.0.1:$P_H2 http2;
    root $T/www;
    error_page 405 =200 \$uri;
  }
  server {
    listen 127.0.0.1:$P_NGINXS ssl;
    ssl_certificate $T/tls/cert.pem;
    ssl_certificate_key $T/tls/key.pem;
    root $T/www;
    error_page 405 =200 \$uri;
  }
}
EOF
bp_nginx_start "$T/nginx" "$T/nginx/nginx.conf" "$T/run/nginx.pid" \
	"$P_NGINX" "${BP_PREFIX[@]}"

M=/usr/lib/apache2/modules
cat >"$T/apache/httpd.conf" <<EOF
ServerRoot $T/apache
ServerName localhost
Listen 127.0.0.1:$P_APACHE
PidFile $T/run/apache.pid
ErrorLog $T/apache/error.log
User www-data
Group www-data
LoadModule mpm_prefork_module $M/mod_mpm_prefork.so
LoadModule authz_core_module $M/mod_authz_core.so
LoadModule mime_module $M/mod_mime.so
LoadModule alias_module $M/mod_alias.so
LoadModule cgi_module $M/mod_cgi.so
ScriptAlias /cgi-bin/ $T/cgi/
TypesConfig /etc/mime.types
StartServers 2
MinSpareServers 1
MaxSpareServers 2
DocumentRoot $T/www
<Directory $T/www>
  Require all granted
</Directory>
<Directory $T/cgi>
  Require all granted
</Directory>
EOF
bp_apache_start "$T/apache/httpd.conf" "$T/run/apache.pid" "$P_APACHE" \
	"${BP_PREFIX[@]}"

bp_pg_initdb "$T/pg" "$T/pgsock" "$T/initdb.log"
cat >>"$T/pg/postgresql.conf" <<EOF
port = $P_PG
listen_addresses = '127.0.0.1'
unix_socket_directories = '$T/pgsock'
ssl = on
ssl_cert_file = '$T/tls/cert.pem'
ssl_key_file = '$T/tls/key.pem'
fsync = off
EOF
bp_pg_start -h "$T/pgsock" "$T/pg" "$P_PG" "${BP_PREFIX[@]}"

bp_start dnsmasq "$T/run/dnsmasq.pid" "${BP_PREFIX[@]}" dnsmasq -k \
	-p "$P_DNS" --listen-address=127.0.0.1 --bind-interfaces --no-resolv \
	--no-hosts --addn-hosts="$T/hosts" -C /dev/null -u root \
	--pid-file="$T/run/dnsmasq.pid"

NETNS=bp-e2e-$$
ip netns add "$NETNS" || bp_fail "ip netns add failed (needs root and" \
	"CONFIG_NET_NS)"
ip -n "$NETNS" link set lo up
mkdir -p "/etc/netns/$NETNS"
echo "nameserver 127.0.0.1" >"/etc/netns/$NETNS/resolv.conf"
echo "hosts: dns" >"/etc/netns/$NETNS/nsswitch.conf"
bp_start dnsmasq-ns "$T/run/dnsmasq-ns.pid" ip netns exec "$NETNS" \
	"${BP_PREFIX[@]}" dnsmasq -k -p 53 --listen-address=127.0.0.1 \
	--bind-interfaces --no-resolv --no-hosts --addn-hosts="$T/hosts" \
	-C /dev/null -u root --pid-file="$T/run/dnsmasq-ns.pid" --log-queries \
	--log-facility="$T/dnsmasq-ns.qlog"

mkdir -p "$T/redis"
bp_start redis "$T/run/redis.pid" "${BP_PREFIX[@]}" redis-server \
	--port "$P_REDIS" --bind 127.0.0.1 --save '' --appendonly no \
	--dir "$T/redis" --daemonize no --pidfile "$T/run/redis.pid" \
	--logfile "$T/redis/log"

# mariadbd: root, its own data directory, TCP on 127.0.0.1 (the rule
# "mysql port $P_MY"), no grant tables (no password exchange to script)
mkdir -p "$T/my"
mariadb-install-db --no-defaults --datadir="$T/my/data" --user=root \
	--auth-root-authentication-method=normal --skip-test-db \
	>"$T/my/install.log" 2>&1 ||
	bp_fail "mariadb-install-db failed: $(tail -n 3 "$T/my/install.log")"
bp_start mariadb "$T/run/mariadb.pid" "${BP_PREFIX[@]}" /usr/sbin/mariadbd \
	--no-defaults --datadir="$T/my/data" --user=root \
	--socket="$T/my/mysqld.sock" --port="$P_MY" --bind-address=127.0.0.1 \
	--pid-file="$T/run/mariadb.pid" --skip-log-bin --skip-name-resolve \
	--skip-grant-tables --innodb-buffer-pool-size=16M \
	--ssl-cert="$T/tls/cert.pem" --ssl-key="$T/tls/key.pem" \
	--log-error="$T/my/error.log"

bp_wait_listen "$P_DNS" dnsmasq 150
bp_wait_listen "$P_MY" mariadb 300

# ---- clients -----------------------------------------------------------------
N=http://127.0.0.1:$P_NGINX A=http://127.0.0.1:$P_APACHE

# nginx: keep-alive (three GETs on one connection, the last a 404)
st curl-ka curl -sS -o /dev/null -o /dev/null -o /dev/null \
	"$N/ka1-$R.html" "$N/ka2-$R.html?q=2" "$N/missing-$R.html"
truth curl-ka http "$P_NGINX" "ka1-$R" "ka2-$R" "missing-$R"
# HEAD, then a GET of 40 KB (sendfile) on the same connection
st curl-head curl -sS -I -o /dev/null "$N/head-$R.html" \
	--next -o /dev/null "$N/big-$R.txt"
truth curl-head http "$P_NGINX" "head-$R" "big-$R"
# POST with a body, and a chunked request body
st curl-post curl -sS -o /dev/null --data-binary @"$T/post.bin" \
	"$N/post-$R.html"
truth curl-post http "$P_NGINX" "post-$R"
st curl-chunk curl -sS -o /dev/null -H 'Transfer-Encoding: chunked' \
	--data-binary @"$T/chunk.bin" "$N/chunk-$R.html"
truth curl-chunk http "$P_NGINX" "chunk-$R"
# ab: 50 keep-alive HTTP/1.0 requests over 4 connections
st ab ab -q -k -n 50 -c 4 "$N/ab-$R.html"
grep -q '^Failed requests: *0$' "$T/ab.out" || bp_fail "ab: failed requests"
truth ab http "$P_NGINX" "ab-$R*50"
# pipelining: GET, HEAD, GET + close in one write
st pipeline "$PY" "$HERE/pipeline.py" "$P_NGINX" "$R"
truth pipeline http "$P_NGINX" "pipe1-$R" "pipe2-$R" "pipe3-$R"
# apache: keep-alive, HEAD, 404; Expect: 100-continue to a CGI
st curl-apache curl -sS -o /dev/null "$A/ap1-$R.html" \
	--next -o /dev/null -I "$A/ap2-$R.html" \
	--next -o /dev/null "$A/apmissing-$R.html"
truth curl-apache http "$P_APACHE" "ap1-$R" "ap2-$R" "apmissing-$R"
st curl-expect curl -sS -o /dev/null -H 'Expect: 100-continue' \
	--data-binary @"$T/post.bin" "$A/cgi-bin/count.sh?expect-$R"
truth curl-expect http "$P_APACHE" "expect-$R"

# PostgreSQL: psql (no SSL: strace must see the plaintext; simple
# queries, an error, PREPARE/EXECUTE, COPY in and out), then libpq's
# extended query
C="host=127.0.0.1 port=$P_PG user=postgres dbname=postgres"
printf '1\tcopy-%s-a\n2\tcopy-%s-b\n' "$R" "$R" >"$T/copy.txt"
st psql psql -X -q "$C sslmode=disable" \
	-c "/* q1-$R */ CREATE TABLE t_$R (a int, b text)" \
	-c "/* q2-$R */ INSERT INTO t_$R VALUES (0, 'ins')" \
	-c "/* q3-$R */ SELECT b FROM t_$R" \
	-c "/* q4-$R */ SELECT * FROM nosuch_$R" \
	-c "/* q5-$R */ PREPARE prep_$R AS SELECT b FROM t_$R WHERE a = \$1" \
	-c "/* q6-$R */ EXECUTE prep_$R(0)" \
	-c "/* q7-$R */ COPY t_$R FROM STDIN" \
	-c "/* q8-$R */ COPY t_$R TO STDOUT" <"$T/copy.txt"
grep -q "copy-$R-b" "$T/psql.out" || bp_fail "psql: COPY did not work"
truth psql postgresql "$P_PG" "q1-$R" "q2-$R" "q3-$R" "q4-$R" "q5-$R" \
	"q6-$R" "q7-$R" "q8-$R"
st pgclient "$T/pgclient" "$C sslmode=disable" "pgc-$R"
truth pgclient postgresql "$P_PG" "pgc-$R"

# TLS: Python's ssl (OpenSSL) logging its plaintext (tlsclient.py): HTTPS
# to nginx, PostgreSQL over SSL (MariaDB below)
tls() {
	timeout 60 "${BP_PREFIX[@]}" "$PY" "$HERE/tlsclient.py" "$@" \
		"$T/st/tls-$1.plain" >"$T/tls-$1.out" 2>&1 ||
		bp_fail "tlsclient.py $1 failed: $(tail -n 3 "$T/tls-$1.out")"
}
tls https "$P_NGINXS" "$R"
truth tls-https http "$P_NGINXS" "tls1-$R" "tls2-$R" "tlsmissing-$R" \
	"tls3-$R" "tls4-$R" "tls5-$R" "tls6-$R" "tls7-$R" "tls8-$R"
tls pg "$P_PG" "$R"
truth tls-pg postgresql "$P_PG" "tq1-$R" "tq2-$R" "tq3-$R" "tq4-$R" "tq5-$R"

# PostgreSQL refusing SSL: ssl turned off by a reload, psql with
# sslmode=prefer sends an SSLRequest, is answered 'N' and goes on in
# plaintext on the same connection (strace sees it all)
echo "ssl = off" >>"$T/pg/postgresql.conf"
kill -HUP "$(head -n 1 "$T/pg/postmaster.pid")" ||
	bp_fail "cannot signal PostgreSQL to reload"
for ((i = 0; i < 100; i++)); do
	[ "$(psql -X -At "$C sslmode=disable" -c "SHOW ssl" 2>/dev/null)" = off ] &&
		break
	sleep 0.1
done
[ "$i" -lt 100 ] || bp_fail "PostgreSQL still has ssl on 10 s after a reload"
st psql-nossl psql -X -q "$C sslmode=prefer" \
	-c "/* nq1-$R */ SELECT 'nossl-$R'" \
	-c "/* nq2-$R */ SELECT count(*) FROM t_$R"
grep -q "nossl-$R" "$T/psql-nossl.out" ||
	bp_fail "psql with sslmode=prefer did not get its answer: $(cat "$T/psql-nossl.out" "$T/psql-nossl.log")"
grep -q 'read([0-9]*<TCP:.*>, "\\x4e", ' "$T"/st/psql-nossl* ||
	grep -q 'recvfrom([0-9]*<TCP:.*>, "\\x4e", ' "$T"/st/psql-nossl* ||
	bp_fail "psql-nossl: no 'N' answer to the SSLRequest on the wire"
truth psql-nossl postgresql "$P_PG" "nq1-$R" "nq2-$R"

# DNS: dig over UDP (A, AAAA, a refused name) and TCP (two queries on
# one connection)
Q=(-p "$P_DNS" @127.0.0.1 +tries=1 +time=5)
st dig-a dig "${Q[@]}" "dig1-$R.e2e.test" A
st dig-aaaa dig "${Q[@]}" "dig2-$R.e2e.test" AAAA
st dig-refused dig "${Q[@]}" "nx-$R.example" A
st dig-tcp dig "${Q[@]}" +tcp +keepopen "tcp1-$R.e2e.test" A \
	"tcp2-$R.e2e.test" A
grep -q 127.0.0.9 "$T/dig-a.out" || bp_fail "dig: no answer"
truth dig-a dns "$P_DNS" "dig1-$R"
truth dig-aaaa dns "$P_DNS" "dig2-$R"
truth dig-refused dns "$P_DNS" "nx-$R"
truth dig-tcp dns "$P_DNS" "tcp1-$R" "tcp2-$R"
# glibc's resolver in the namespace: getaddrinfo (A and AAAA) and
# gethostbyname2; traced at the API level, dnsmasq sees the queries
ip netns exec "$NETNS" "${BP_PREFIX[@]}" getent ahosts "gai-$R.e2e.test" \
	>"$T/gai.out" 2>&1 || bp_fail "getent ahosts failed: $(cat "$T/gai.out")"
ip netns exec "$NETNS" "${BP_PREFIX[@]}" getent hosts "ghbn-$R.e2e.test" \
	>"$T/ghbn.out" 2>&1 || bp_fail "getent hosts failed: $(cat "$T/ghbn.out")"

# Redis: redis-cli in RESP3 (HELLO 3, COMMAND DOCS: a large nested map),
# strings, a hash read back as a map, a WRONGTYPE error; redis-py: a
# pipeline and a MULTI/EXEC transaction, each in one write
printf '%s\n' "SET rk1-$R v" "GET rk1-$R" "HSET rk2-$R f v" \
	"HGETALL rk2-$R" "LPUSH rk1-$R x" >"$T/redis-cli.in"
st redis-cli redis-cli -3 -p "$P_REDIS" <"$T/redis-cli.in"
grep -q WRONGTYPE "$T/redis-cli.out" || bp_fail "redis-cli: no WRONGTYPE"
truth redis-cli redis "$P_REDIS" "rk1-$R*3" "rk2-$R*2"
st redis-py "$PY" -c '
import sys, redis
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
k = sys.argv[2]
p = r.pipeline(transaction=False)
p.set("rp1-" + k, "v").get("rp1-" + k).incr("rp2-" + k)
assert p.execute() == [True, b"v", 1]
t = r.pipeline(transaction=True)
t.incr("rp3-" + k).lrange("rp4-" + k, 0, -1)
assert t.execute() == [1, []]
' "$P_REDIS" "$R"
truth redis-py redis "$P_REDIS" "rp1-$R*2" "rp2-$R" "rp3-$R" "rp4-$R"

# HTTP/2 (h2c, prior knowledge): nghttp, four GETs at once on one
# connection (a 40 KB file in DATA frames, a 404).  (A POST is in the
# golden captures: here nginx's RST_STREAM(NO_ERROR) after the answer
# comes in the read that ends the reply, is held by isolation, and nghttp,
# told EAGAIN once, closes without reading it: the wire has one message
# more than the program received.)
H=http://127.0.0.1:$P_H2
st nghttp nghttp -n "$H/ka1-$R.html" "$H/ka2-$R.html?q=2" "$H/big-$R.txt" \
	"$H/missing-$R.html"
truth nghttp http2 "$P_H2"
# MariaDB: the mariadb client, one COM_QUERY per statement (a table, an
# insert, a result set); pymysql: a multi-statement query (two result
# sets in one reply) and an error (ERR packet: status 1146)
st mariadb-cli mariadb --no-defaults --skip-ssl -h 127.0.0.1 -P "$P_MY" \
	-uroot -e "
	CREATE DATABASE e2e; CREATE TABLE e2e.t (k VARCHAR(40), v INT);
	INSERT INTO e2e.t VALUES ('mk1-$R', 1), ('mk2-$R', 2);
	SELECT * FROM e2e.t WHERE k = 'mk1-$R'"
truth mariadb-cli mysql "$P_MY" "mk1-$R*2" "mk2-$R"
st mariadb-py "$PY" -c '
import sys, pymysql
from pymysql.constants import CLIENT
c = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="root",
                    client_flag=CLIENT.MULTI_STATEMENTS)
k = sys.argv[2]
cur = c.cursor()
cur.execute("SELECT \x27mp1-%s\x27; SELECT \x27mp1b-%s\x27" % (k, k))
assert cur.fetchall() == (("mp1-" + k,),)
assert cur.nextset() and cur.fetchall() == (("mp1b-" + k,),)
try:
    cur.execute("SELECT \x27mp2-%s\x27 FROM e2e.nosuch" % k)
except pymysql.err.ProgrammingError as e:
    assert e.args[0] == 1146, e
else:
    raise SystemExit("no error")
c.close()
' "$P_MY" "$R"
truth mariadb-py mysql "$P_MY" "mp1-$R" "mp2-$R"
# MariaDB over TLS (mariadbd --ssl-cert, OpenSSL): tlsclient.py's SSL
# request, then the handshake response and queries on the plaintext
tls mysql "$P_MY" "$R"
truth tls-mysql mysql "$P_MY" "tm1-$R" "tm2-$R" "tm3-$R" "tm4-$R" "tm5-$R"
tls pymysql "$P_MY" "$R"
truth tls-pymysql mysql "$P_MY" "tp1-$R" "tp2-$R" "tp3-$R"

# ---- stop, rebuild, check -----------------------------------------------
for s in nginx apache dnsmasq dnsmasq-ns redis mariadb; do bp_alive "$s"; done
bp_alive pg
bp_stop nginx any
bp_stop apache any
BP_STOP_SIGNAL=INT bp_stop pg any
bp_stop dnsmasq any
bp_stop dnsmasq-ns any
bp_stop redis any
bp_stop mariadb any
bp_stop logd any
timeout 300 "$BP_RECONSTRUCT" "$T/logs" -o "$T/paths.db" \
	>"$T/reconstruct.out" 2>"$T/reconstruct.log" ||
	bp_fail "bp-reconstruct failed"
"$PY" "$HERE/e2e_check.py" --db "$T/paths.db" --st "$T/st" \
	--truth "$T/truth" --lookup "gai-$R.e2e.test:$T/dnsmasq-ns.qlog:1" \
	--lookup "ghbn-$R.e2e.test:$T/dnsmasq-ns.qlog:2" --xfail curl-expect | tee "$T/check.out"
[ "${PIPESTATUS[0]}" = 0 ] || bp_fail "the messages differ from the wire" \
	"(see above)"
