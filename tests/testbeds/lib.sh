# tests/testbeds/lib.sh - the real-server testbeds' harness (bash).
#
# Source it from a tests/testbeds/tb-*.sh script, describe the testbed in
# the TB_* variables below, call tb_init NAME, then tb_run for each traced
# run.  It builds on tests/integ/lib.sh and tests/lib/ (temporary directory,
# free ports, servers started with pidfiles and bounded waits, cleanup
# trap, bp-logd and the tracing tools found in the build tree, the Debian
# servers' common parts: tests/lib/servers.sh) and runs PostgreSQL,
# php-fpm, gunicorn, fcgiwrap, nginx, apache2 and dnsmasq, all from
# their packages on loopback in the test's directory, never as services.
# See docs/accuracy.md.
#
# The testbed (set before tb_init):
#   TB_FRONT    nginx | apache | haproxy (haproxy: nbthread 2, http-reuse
#               always, per-server maxconn TB_HAPROXY_MAXCONN (default 2)
#               in front of two gunicorns; TB_APPS=py, TB_MIX py only)
#   TB_MPM      prefork | worker | event (apache)
#   TB_APPS     the application servers: any of php py cgi
#   TB_MIX      tb-client's --mix (kinds and weights)
#   TB_DNS      1: a network namespace with its own resolver (dnsmasq on
#               its 127.0.0.1:53, /etc/netns/NAME/resolv.conf); every
#               server and the client run in it; dynamic requests resolve
#               r-ID.test
#   TB_TLS      1: everything encrypted with OpenSSL: the front serves
#               HTTPS (tb-client --tls), PostgreSQL runs with ssl = on and
#               php-fpm connects over TCP with sslmode=require; both
#               certificates are self-signed, made at test time (tb_tls_cert)
#   TB_MULTIHOST  1: three hosts: network namespaces web (client, front),
#               app (php-fpm) and db (PostgreSQL) joined by veth pairs,
#               each with its own monotonic clock (a time namespace shifted
#               by TB_MONO_WEB/APP/DB seconds) and its own bp-logd and log
#               directory (tb_mh_setup)
#   TB_DB       postgresql (default) | mariadb: the database of the
#               tb_app_* runs (mariadb: mariadbd on $T/my/mysqld.sock)
#   TB_NGINX_LISTEN  appended to nginx's listen directive (" http2": h2c)
#   TB_FRONT_PROTO, TB_APP_PROTO, TB_METHOD  what check-testbed.py wants
#               of the front's server span, of its call and the app's
#               server span, and the request's method (http, http, GET)
#
# Environment:
#   TB_REQUESTS   requests per run (default 2000; the figures of
#                 docs/accuracy.md come from runs of at least 2000)
#   TB_ISO_CONCS  concurrencies of the asserted runs with event
#                 isolation (default "1 16 64")
#   TB_NOISO_CONCS  concurrencies of the reported runs without event
#                 isolation (default 64; "none": no such run)
#   BP_KEEP=1     keep the temporary directory and print where it is
#   TB_EXPLAIN=N  show the spans of N wrong requests
#   TB_PORT_RANGE "LO HI": the ephemeral ports of the DNS testbed's
#                 namespace (unset: the kernel's); a narrow range makes
#                 connections reuse address tuples within a run
#
# Users: servers that drop privileges run as www-data (apache and nginx
# workers, php-fpm children, fcgiwrap) and postgres (PostgreSQL refuses
# root); bp-logd lets both connect (-u).  The test runs as root.

# shellcheck source=../integ/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../integ/lib.sh"
# shellcheck source=../lib/servers.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/servers.sh"

TB_SRC=$top_srcdir/tests/testbeds
TB_CLIENT=$top_builddir/tests/testbeds/tb-client
: "${TB_REQUESTS:=2000}"
: "${TB_FRONT:=nginx}" "${TB_MPM:=event}" "${TB_APPS:=php}"
: "${TB_MIX:=php:8,static:2}" "${TB_DNS:=0}" "${TB_EXPLAIN:=0}"
: "${TB_TLS:=0}"
TB_NETNS=""
TB_NS=()                        # command prefix: ip netns exec NAME
# Per role (web: client and front, app: application servers, db:
# PostgreSQL): the command prefix that puts a process on its host (NS_*)
# and the one that traces it (PRE_*, set by tb_run).
NS_WEB=() NS_APP=() NS_DB=()
PRE_WEB=() PRE_APP=() PRE_DB=()
: "${TB_MULTIHOST:=0}" "${TB_MONO_WEB:=1000}" "${TB_MONO_APP:=2500}"
: "${TB_MONO_DB:=4000}"
TB_MH_NS=()
TB_RUN_NO=0
TB_RECON_OPTS=()                # bp-reconstruct's options (tb_recon)

APT_FIX="apt-get install -y nginx-light apache2 haproxy php-fpm php-pgsql postgresql postgresql-client dnsmasq-base gunicorn python3-psycopg2 fcgiwrap iproute2 util-linux"

# tb_need PROGRAM PACKAGE: fail (never skip) when PROGRAM is missing.
tb_need() {
	[ -x "$1" ] || command -v "$1" >/dev/null 2>&1 ||
		bp_fail "$1 is missing: apt-get install -y $2 (all the" \
			"testbeds need: $APT_FIX)"
}

# tb_latest GLOB: the highest version among the paths GLOB matches.
tb_latest() { bp_latest "$@"; }

# tb_cleanup: bp_cleanup (PostgreSQL first, fast shutdown: bp_pg_start),
# then the namespaces.
tb_cleanup() {
	local rc=$?
	bp_cleanup "$rc"
	if [ -n "$TB_NETNS" ]; then
		ip netns del "$TB_NETNS" 2>/dev/null
		rm -rf "/etc/netns/$TB_NETNS"
	fi
	local ns
	for ns in "${TB_MH_NS[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	return $rc
}

# tb_init NAME: temporary directory, trap, the programs this testbed
# needs, the document root, the database (initialised once per test).
tb_init() {
	bp_init "$1"
	trap tb_cleanup EXIT
	chmod 755 "$T"
	[ "$(id -u)" = 0 ] || bp_fail "the testbeds start servers that switch" \
		"users (www-data, postgres): run them as root"
	[ -x "$TB_CLIENT" ] || bp_fail "$TB_CLIENT is not built (run make)"
	bp_require_tracing
	tb_need setpriv util-linux
	id www-data >/dev/null 2>&1 || bp_fail "no user www-data: $APT_FIX"
	"$PY" -c 'import sqlite3' 2>/dev/null ||
		bp_fail "$PY cannot import sqlite3: apt-get install -y python3"
	bp_find_pgbin
	[ -n "$PGBIN" ] && [ -x "$PGBIN/postgres" ] && [ -x "$PGBIN/psql" ] ||
		bp_fail "PostgreSQL is missing: apt-get install -y postgresql" \
			"postgresql-client"
	id postgres >/dev/null 2>&1 || bp_fail "no user postgres: apt-get" \
		"install -y postgresql"
	case $TB_FRONT in
	none) ;;                # tb_app_*: the application is the front
	nginx) tb_need nginx nginx-light ;;
	haproxy) tb_need haproxy haproxy ;;
	apache)
		tb_need apache2 apache2
		[ -f /usr/lib/apache2/modules/mod_proxy_fcgi.so ] ||
			bp_fail "mod_proxy_fcgi is missing: apt-get install -y apache2"
		;;
	*) bp_fail "unknown TB_FRONT $TB_FRONT" ;;
	esac
	case " $TB_APPS " in *" php "*)
		bp_find_phpfpm
		[ -n "$PHPFPM" ] || bp_fail "php-fpm is missing: apt-get install" \
			"-y php-fpm php-pgsql"
		"$PHPFPM" -n -d extension=pgsql -m 2>/dev/null | grep -qx pgsql ||
			bp_fail "PHP's pgsql extension is missing: apt-get install" \
				"-y php-pgsql"
	esac
	case " $TB_APPS " in *" py "*)
		tb_need /usr/bin/gunicorn gunicorn
		"$PY" -c 'import psycopg2' 2>/dev/null ||
			bp_fail "$PY cannot import psycopg2: apt-get install -y" \
				"python3-psycopg2"
		PYEXE=$(basename "$(readlink -f "$PY")")
	esac
	case " $TB_APPS " in *" cgi "*)
		tb_need fcgiwrap fcgiwrap
		tb_need getent libc-bin
	esac
	if [ "$TB_DNS" = 1 ]; then
		tb_need ip iproute2
		tb_need dnsmasq dnsmasq-base
		tb_netns_setup
	fi
	NS_WEB=("${TB_NS[@]}") NS_APP=("${TB_NS[@]}") NS_DB=("${TB_NS[@]}")
	if [ "$TB_MULTIHOST" = 1 ]; then
		tb_need ip iproute2
		tb_need unshare util-linux
		tb_mh_setup
	fi
	tb_docroot
	case $TB_DB in
	mariadb) tb_my_init ;;
	*) tb_pg_init ;;
	esac
}

# ---- the pieces every run shares ---------------------------------------

# The network namespace of a DNS testbed: loopback only, its own
# resolv.conf (glibc asks port 53 of the servers listed there).
tb_netns_setup() {
	TB_NETNS="bp-$BP_TEST-$$"
	ip netns add "$TB_NETNS" ||
		bp_fail "ip netns add $TB_NETNS failed (network namespaces" \
			"need root and CONFIG_NET_NS)"
	ip -n "$TB_NETNS" link set lo up || bp_fail "ip link set lo up failed"
	if [ -n "${TB_PORT_RANGE:-}" ]; then
		ip netns exec "$TB_NETNS" sysctl -q -w \
			net.ipv4.ip_local_port_range="$TB_PORT_RANGE" ||
			bp_fail "cannot set the port range $TB_PORT_RANGE"
	fi
	mkdir -p "/etc/netns/$TB_NETNS"
	echo "nameserver 127.0.0.1" >"/etc/netns/$TB_NETNS/resolv.conf"
	TB_NS=(ip netns exec "$TB_NETNS")
}

# The three hosts of TB_MULTIHOST: namespaces web, app and db, veth pairs
# web 10.77.1.1 <-> app 10.77.1.2 and app 10.77.2.1 <-> db 10.77.2.2, each
# host's processes in a time namespace whose CLOCK_MONOTONIC is shifted by
# TB_MONO_<HOST> seconds (unshare --time: the processes it starts inherit
# it).
tb_mh_setup() {
	local tag=$(($$ % 100000)) h
	for h in web app db; do
		TB_MH_NS+=("bp-$h-$tag")
		ip netns add "bp-$h-$tag" ||
			bp_fail "ip netns add bp-$h-$tag failed (network" \
				"namespaces need root and CONFIG_NET_NS)"
		ip -n "bp-$h-$tag" link set lo up
	done
	ip link add "bpwa$tag" type veth peer name "bpaw$tag" &&
		ip link set "bpwa$tag" netns "bp-web-$tag" &&
		ip link set "bpaw$tag" netns "bp-app-$tag" &&
		ip link add "bpad$tag" type veth peer name "bpda$tag" &&
		ip link set "bpad$tag" netns "bp-app-$tag" &&
		ip link set "bpda$tag" netns "bp-db-$tag" &&
		ip -n "bp-web-$tag" addr add 10.77.1.1/24 dev "bpwa$tag" &&
		ip -n "bp-app-$tag" addr add 10.77.1.2/24 dev "bpaw$tag" &&
		ip -n "bp-app-$tag" addr add 10.77.2.1/24 dev "bpad$tag" &&
		ip -n "bp-db-$tag" addr add 10.77.2.2/24 dev "bpda$tag" &&
		ip -n "bp-web-$tag" link set "bpwa$tag" up &&
		ip -n "bp-app-$tag" link set "bpaw$tag" up &&
		ip -n "bp-app-$tag" link set "bpad$tag" up &&
		ip -n "bp-db-$tag" link set "bpda$tag" up ||
		bp_fail "cannot set up the veth pairs between the namespaces"
	unshare --time --monotonic 1 true ||
		bp_fail "unshare --time failed (time namespaces need root and" \
			"Linux 5.6 with CONFIG_TIME_NS)"
	NS_WEB=(ip netns exec "bp-web-$tag" unshare --time --monotonic "$TB_MONO_WEB")
	NS_APP=(ip netns exec "bp-app-$tag" unshare --time --monotonic "$TB_MONO_APP")
	NS_DB=(ip netns exec "bp-db-$tag" unshare --time --monotonic "$TB_MONO_DB")
	TB_PG_LISTEN=10.77.2.2
	TB_PG_HBA="host all all 10.77.0.0/16 trust"
}

# The document root: the PHP application, the CGI, static files.
tb_docroot() {
	local i
	mkdir -p "$T/www/static" "$T/www/cgi-bin" "$T/app"
	cp "$TB_SRC/app/app.php" "$T/www/app.php"
	cp "$TB_SRC/app/tb.cgi" "$T/www/cgi-bin/tb.cgi"
	cp "$TB_SRC/app/tbapp.py" "$T/app/tbapp.py"
	chmod 755 "$T/www/cgi-bin/tb.cgi"
	for i in 0 1 2 3 4 5 6 7; do
		# sizes from 15 bytes to a few KiB
		"$PY" -c "import sys; n = int(sys.argv[1]); \
sys.stdout.write(''.join('static file f%d line %d\n' % (n, k) \
for k in range(1 + n * n * 6)))" "$i" >"$T/www/static/f$i.txt"
	done
	chmod -R a+rX "$T/www" "$T/app"
}

# tb_tls_cert NAME OWNER: a self-signed certificate and its key in
# $T/tls/NAME.crt and NAME.key (the key 0600, owned by OWNER).
tb_tls_cert() {
	local name=$1 owner=$2
	mkdir -p "$T/tls"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -days 2 -subj "/CN=$name.test" -keyout "$T/tls/$name.key" \
		-out "$T/tls/$name.crt" >"$T/tls/$name.log" 2>&1 ||
		bp_fail "openssl req failed: $(tail -n 3 "$T/tls/$name.log")"
	chown "$owner" "$T/tls/$name.key" "$T/tls/$name.crt"
	chmod 600 "$T/tls/$name.key"
	chmod 755 "$T/tls"
}

# tb_pg_init: a database cluster in $T/pg (socket directory $T/pgsock, port
# PGPORT) with user and database tb and the application's tables.
tb_pg_init() {
	local i
	bp_free_port PGPORT
	bp_pg_initdb "$T/pg" "$T/pgsock" "$T/initdb.log"
	cat >>"$T/pg/postgresql.conf" <<-EOF
	port = $PGPORT
	listen_addresses = '${TB_PG_LISTEN:-127.0.0.1}'
	unix_socket_directories = '$T/pgsock'
	max_connections = 300
	shared_buffers = 32MB
	fsync = off
	synchronous_commit = off
	full_page_writes = off
	log_min_messages = warning
	EOF
	[ -n "${TB_PG_HBA:-}" ] && echo "$TB_PG_HBA" >>"$T/pg/pg_hba.conf"
	if [ "$TB_TLS" = 1 ]; then
		# TCP only encrypted: a connection without SSL is refused
		tb_tls_cert pg postgres
		cat >>"$T/pg/postgresql.conf" <<-EOF
		ssl = on
		ssl_cert_file = '$T/tls/pg.crt'
		ssl_key_file = '$T/tls/pg.key'
		EOF
		sed -i '1i hostnossl all all 0.0.0.0/0 reject' "$T/pg/pg_hba.conf"
	fi
	PRE_DB=()
	tb_pg_start
	"$PGBIN/psql" -X -q -h "$T/pgsock" -p "$PGPORT" -U postgres \
		-c "CREATE USER tb" -c "CREATE DATABASE tb OWNER tb" \
		>>"$T/initdb.log" 2>&1 || bp_fail "cannot create the database"
	"$PGBIN/psql" -X -q -h "$T/pgsock" -p "$PGPORT" -U tb -d tb \
		-c "CREATE TABLE tb_kv (k text PRIMARY KEY, v text)" \
		-c "CREATE TABLE tb_hits (id text, n int)" \
		-c "CREATE INDEX ON tb_hits (id)" \
		-c "INSERT INTO tb_kv SELECT 'k' || i, 'v' || i FROM generate_series(1, 1000) i" \
		>>"$T/initdb.log" 2>&1 || bp_fail "cannot create the tables"
	bp_stop pg
	mv "$T/pg.log" "$T/pg-init.log"
}

# tb_my_init (TB_DB=mariadb): a MariaDB data directory in $T/my
# (mariadb-install-db, root without a password on the unix socket), the
# database tb and the application's tables; the server stops again.
tb_my_init() {
	tb_need mariadb-install-db mariadb-server
	tb_need mariadbd mariadb-server
	tb_need mariadb mariadb-client
	"$PY" -c 'import pymysql' 2>/dev/null ||
		bp_fail "$PY cannot import pymysql: apt-get install -y python3-pymysql"
	mkdir -p "$T/my"
	mariadb-install-db --no-defaults --datadir="$T/my/data" --user=root \
		--auth-root-authentication-method=normal --skip-test-db \
		>"$T/my/install.log" 2>&1 ||
		bp_fail "mariadb-install-db failed: $(tail -n 3 "$T/my/install.log")"
	tb_my_start
	mariadb --no-defaults -S "$T/my/mysqld.sock" -uroot -e "
		CREATE DATABASE tb;
		CREATE TABLE tb.tb_kv (k VARCHAR(64) PRIMARY KEY, v TEXT);
		CREATE TABLE tb.tb_hits (id VARCHAR(64), n INT);
		INSERT INTO tb.tb_kv VALUES ('none', 'nothing');" ||
		bp_fail "cannot create the MariaDB database tb"
	bp_stop mariadb
}

# tb_my_start: mariadbd (root, traced with PRE_DB) with the data directory
# of tb_my_init, its unix socket $T/my/mysqld.sock (the default rule
# "mysql unix */mysqld.sock" picks the processor) and no TCP listener,
# --thread-handling TB_MY_THREADS (default one-thread-per-connection;
# pool-of-threads: MariaDB's thread pool, epoll and worker threads);
# waits (at most 30 s) for the socket.
tb_my_start() {
	rm -f "$T/my/mysqld.sock"
	bp_start mariadb "$T/my/mariadbd.pid" "${PRE_DB[@]}" /usr/sbin/mariadbd \
		--no-defaults --datadir="$T/my/data" --user=root \
		--socket="$T/my/mysqld.sock" --skip-networking \
		--pid-file="$T/my/mariadbd.pid" --skip-log-bin \
		--skip-name-resolve --innodb-buffer-pool-size=16M \
		--log-error="$T/my/error.log" --max-connections=20 \
		--thread-handling="${TB_MY_THREADS:-one-thread-per-connection}"
	bp_wait_listen "$T/my/mysqld.sock" mariadb 300
}

# tb_db_start, TB_DB_NAME: the database of the run (TB_DB: postgresql,
# the default, or mariadb) and the name bp_stop knows it by.
tb_db_start() {
	case $TB_DB in
	mariadb) tb_my_start ;;
	*) tb_pg_start ;;
	esac
}

# tb_pg_start: PostgreSQL as postgres (db host, PRE_DB) on PGPORT; waits
# until it accepts connections (at most 20 s).  Each run picks PGPORT
# anew (tb_run): a port freed when the previous run stopped may have been
# taken by a test running in parallel.
tb_pg_start() {
	bp_pg_start -w NS_DB -h "$T/pgsock" "$T/pg" "$PGPORT" "${PRE_DB[@]}"
}

# ---- application servers -------------------------------------------------

# tb_fpm_start DIR LISTEN CHILDREN PGCONN PGHOST: php-fpm (master root,
# children www-data, a fixed number of children) on LISTEN (a unix path or
# address:port).
tb_fpm_start() {
	local dir=$1 listen=$2 children=$3 pgconn=$4 pghost=$5
	cat >"$dir/fpm.conf" <<-EOF
	[global]
	pid = $dir/run/fpm.pid
	error_log = $dir/fpm-error.log
	daemonize = no
	[tb]
	user = www-data
	group = www-data
	listen = $listen
	listen.owner = www-data
	listen.group = www-data
	listen.mode = 0660
	listen.backlog = 511
	pm = static
	pm.max_children = $children
	pm.max_requests = 0
	clear_env = yes
	env[TB_PG] = "$pgconn"
	env[TB_PG_HOST] = "$pghost"
	env[TB_STATE] = "$dir/state"
	catch_workers_output = yes
	EOF
	bp_fpm_start -w NS_APP "$dir/fpm.conf" "$dir/run/fpm.pid" "$listen" \
		"${PRE_APP[@]}"
}

# tb_gunicorn_start DIR ADDR:PORT [NAME]: gunicorn, 2 workers of 8 threads
# each (gthread), the Python application with a pool of 8 connections per
# worker over PostgreSQL's unix socket.  NAME (default gunicorn) names the
# server (a second one for the haproxy testbed).
tb_gunicorn_start() {
	local dir=$1 bind=$2 name=${3:-gunicorn}
	bp_start "$name" "$dir/run/$name.pid" "${NS_APP[@]}" env \
		TB_PG="host=$T/pgsock port=$PGPORT dbname=tb user=tb" TB_POOL=8 \
		TB_APP_SLEEP_MS="${TB_APP_SLEEP_MS:-0}" \
		"${PRE_APP[@]}" /usr/bin/gunicorn --workers 2 --threads 8 \
		--worker-class gthread --bind "$bind" --keep-alive 120 \
		--graceful-timeout 5 --pid "$dir/run/$name.pid" \
		--chdir "$T/app" --log-level warning tbapp:application
	bp_wait_listen "$bind" "$name" 100 NS_APP
}

# tb_fcgiwrap_start DIR: fcgiwrap as www-data, 4 pre-forked processes, on
# DIR/run/fcgiwrap.sock.
tb_fcgiwrap_start() {
	local dir=$1
	bp_start fcgiwrap "$dir/run/fcgiwrap.pid" "${NS_APP[@]}" \
		setpriv --reuid=www-data --regid=www-data --clear-groups \
		"${PRE_APP[@]}" sh -c 'echo $$ >"$0"; exec "$@"' \
		"$dir/run/fcgiwrap.pid" fcgiwrap -c 4 \
		-s "unix:$dir/run/fcgiwrap.sock"
	bp_wait_listen "$dir/run/fcgiwrap.sock" fcgiwrap 100 NS_APP
}

# tb_dnsmasq_start DIR: dnsmasq on the namespace's 127.0.0.1:53, answering
# every name under .test with 127.0.0.9; not traced (the resolver is the
# remote, untraced service the DNS processor's witnesses are for).
tb_dnsmasq_start() {
	local dir=$1
	bp_start dnsmasq "$dir/run/dnsmasq.pid" "${NS_WEB[@]}" dnsmasq -k \
		-p 53 --listen-address=127.0.0.1 --bind-interfaces --no-resolv \
		--no-hosts --address=/test/127.0.0.9 -C /dev/null -u root \
		--pid-file="$dir/run/dnsmasq.pid"
	local i
	for ((i = 0; i < 100; i++)); do
		"${NS_WEB[@]}" getent ahosts r-probe.test >/dev/null && return 0
		sleep 0.1
	done
	bp_fail "dnsmasq does not answer r-probe.test after 10 s"
}

# ---- fronts ---------------------------------------------------------------

# tb_nginx_start DIR: nginx (master root, 2 workers as www-data) on
# 127.0.0.1:FRONT_PORT: /static/ from disk, /app.php to php-fpm (unix
# socket, FastCGI keep-alive: requests share backend connections), /py/ to
# gunicorn (HTTP/1.1 keep-alive), /pyr/ to gunicorn at r-ID.test (nginx's
# own resolver), /cgi-bin/ to fcgiwrap.
tb_nginx_start() {
	local dir=$1
	local ssl="" certs=""
	mkdir -p "$dir/nginx"
	if [ "$TB_TLS" = 1 ]; then
		[ -f "$T/tls/web.crt" ] || tb_tls_cert web root
		ssl=" ssl"
		certs="ssl_certificate $T/tls/web.crt; ssl_certificate_key $T/tls/web.key;"
	fi
	cat >"$dir/nginx.conf" <<-EOF
	daemon off;
	master_process on;
	worker_processes 2;
	user www-data www-data;
	pid $dir/run/nginx.pid;
	error_log $dir/nginx-error.log warn;
	events { worker_connections 1024; }
	http {
	    access_log off;
	$(bp_nginx_temp_paths "$dir/nginx")
	    types { text/plain txt; }
	    default_type text/plain;
	    keepalive_requests 1000000;
	    keepalive_timeout 300s;
	    upstream fpm {
	        server ${TB_FPM_ADDR:-unix:$dir/run/php-fpm.sock};
	        keepalive 4;
	    }
	    upstream py {
	        server 127.0.0.9:$PY_PORT;
	        keepalive 4;
	    }
	    server {
	        listen 127.0.0.1:$FRONT_PORT$ssl${TB_NGINX_LISTEN:-};
	        $certs
	        root $T/www;
	        location /static/ { }
	        location = /app.php {
	            fastcgi_pass fpm;
	            fastcgi_keep_conn on;
	            include /etc/nginx/fastcgi_params;
	            fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
	        }
	        location /py/ {
	            proxy_pass http://py;
	            proxy_http_version 1.1;
	            proxy_set_header Connection "";
	        }
	        location /pyr/ {
	            resolver 127.0.0.1:53 ipv6=off valid=1s;
	            resolver_timeout 10s;
	            proxy_pass http://r-\$arg_id.test:$PY_PORT;
	            proxy_http_version 1.1;
	        }
	        location /cgi-bin/ {
	            fastcgi_pass unix:$dir/run/fcgiwrap.sock;
	            include /etc/nginx/fastcgi_params;
	            fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
	            fastcgi_param TB_PG_HOST $T/pgsock;
	            fastcgi_param TB_PG_PORT $PGPORT;
	            fastcgi_param TB_PSQL $PGBIN/psql;
	        }
	    }
	}
	EOF
	bp_nginx_start -n front -w NS_WEB "$dir/nginx" "$dir/nginx.conf" \
		"$dir/run/nginx.pid" "127.0.0.1:$FRONT_PORT" "${PRE_WEB[@]}"
}

# tb_apache_start DIR: apache2 with TB_MPM (parent root, children
# www-data) on 127.0.0.1:FRONT_PORT: static files from disk, app.php to
# php-fpm through mod_proxy_fcgi (a new FastCGI connection per request),
# keep-alive without a request limit.
tb_apache_start() {
	local dir=$1 mpm
	case $TB_MPM in
	prefork) mpm="StartServers 70
MinSpareServers 70
MaxSpareServers 80
ServerLimit 80
MaxRequestWorkers 80" ;;
	# More threads per child than the client has connections: the event
	# MPM closes idle keep-alive connections of a child whose workers
	# are all busy ("All workers are busy or dying, will shutdown N
	# keep-alive connections"), and the client does not retry.
	worker | event) mpm="StartServers 2
ServerLimit 2
ThreadLimit 80
ThreadsPerChild 80
MinSpareThreads 80
MaxSpareThreads 160
MaxRequestWorkers 160" ;;
	*) bp_fail "unknown TB_MPM $TB_MPM" ;;
	esac
	local ssl=""
	if [ "$TB_TLS" = 1 ]; then
		[ -f "$T/tls/web.crt" ] || tb_tls_cert web root
		ssl="LoadModule socache_shmcb_module /usr/lib/apache2/modules/mod_socache_shmcb.so
LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so
SSLEngine on
SSLCertificateFile $T/tls/web.crt
SSLCertificateKeyFile $T/tls/web.key
SSLSessionCache shmcb:$dir/ssl_scache(512000)"
	fi
	mkdir -p "$dir/apache"
	cat >"$dir/apache.conf" <<-EOF
	ServerRoot $dir/apache
	ServerName tb
	Listen 127.0.0.1:$FRONT_PORT
	PidFile $dir/run/apache.pid
	ErrorLog $dir/apache-error.log
	LogLevel warn
	User www-data
	Group www-data
	LoadModule mpm_${TB_MPM}_module /usr/lib/apache2/modules/mod_mpm_${TB_MPM}.so
	LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
	LoadModule mime_module /usr/lib/apache2/modules/mod_mime.so
	LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so
	LoadModule proxy_fcgi_module /usr/lib/apache2/modules/mod_proxy_fcgi.so
	$ssl
	TypesConfig /etc/mime.types
	KeepAlive On
	MaxKeepAliveRequests 0
	KeepAliveTimeout 300
	MaxConnectionsPerChild 0
	$mpm
	DocumentRoot $T/www
	<Directory $T/www>
	  Require all granted
	</Directory>
	<Files "app.php">
	  SetHandler "proxy:unix:$dir/run/php-fpm.sock|fcgi://localhost"
	</Files>
	EOF
	# its own session: the prefork parent signals its whole process group
	# when it stops, which would otherwise include this script
	bp_apache_start -n front -w NS_WEB "$dir/apache.conf" \
		"$dir/run/apache.pid" "127.0.0.1:$FRONT_PORT" "${PRE_WEB[@]}"
}

# tb_haproxy_start DIR: haproxy (2 threads: one epoll set per thread, idle
# server connections taken over between threads, threads woken through
# pipes) on 127.0.0.1:FRONT_PORT, in front of the two gunicorns with
# http-reuse always and at most TB_HAPROXY_MAXCONN (default 2) connections
# per server: requests beyond that wait in haproxy's per-server queue.
# By hand: TB_HAPROXY_NBTHREAD (default 2), TB_HAPROXY_QUEUE (timeout
# queue, default 30s; "none" leaves it unset: haproxy then uses timeout
# connect, 5s), TB_HAPROXY_POLLER=poll (noepoll: the poll poller).
tb_haproxy_start() {
	local dir=$1 queue=${TB_HAPROXY_QUEUE:-30s} extra=""
	[ "$queue" = none ] && queue="" || queue="timeout queue $queue"
	[ "${TB_HAPROXY_POLLER:-epoll}" = poll ] && extra="noepoll"
	cat >"$dir/haproxy.cfg" <<-EOF
	global
	    nbthread ${TB_HAPROXY_NBTHREAD:-2}
	    maxconn 2000
	    $extra
	defaults
	    mode http
	    timeout connect 5s
	    timeout client 60s
	    timeout server 60s
	    $queue
	    timeout http-keep-alive 60s
	frontend fe
	    bind 127.0.0.1:$FRONT_PORT
	    default_backend py
	backend py
	    balance roundrobin
	    http-reuse always
	    server py1 127.0.0.9:$PY_PORT maxconn ${TB_HAPROXY_MAXCONN:-2}
	    server py2 127.0.0.9:$PY2_PORT maxconn ${TB_HAPROXY_MAXCONN:-2}
	EOF
	# haproxy -db writes no pid file: the shell writes its pid and execs
	bp_start front "$dir/run/haproxy.pid" "${NS_WEB[@]}" "${PRE_WEB[@]}" \
		sh -c 'echo $$ >"$0"; exec "$@"' "$dir/run/haproxy.pid" \
		haproxy -f "$dir/haproxy.cfg" -db
	bp_wait_listen "127.0.0.1:$FRONT_PORT" front 100 NS_WEB
}

# ---- one traced run ----------------------------------------------------------

# tb_rules DIR: the protocol rules of a run.
tb_rules() {
	local dir=$1
	echo "http port $FRONT_PORT,$PY_PORT,$PY2_PORT; fastcgi unix $dir/run/*.sock;" \
		"fastcgi port $FPM_PORT; postgresql port $PGPORT;" \
		"postgresql unix $T/pgsock/*; dns port 53"
}

# tb_start_all DIR: database, application servers, front, each on its
# host (NS_*) and traced as PRE_* says.  With TB_MULTIHOST the front talks
# to php-fpm and php-fpm to PostgreSQL over TCP across the veth pairs.
tb_start_all() {
	local dir=$1 app
	tb_pg_start
	[ "$TB_DNS" = 1 ] && tb_dnsmasq_start "$dir"
	for app in $TB_APPS; do
		case $app in
		php)
			if [ "$TB_MULTIHOST" = 1 ]; then
				TB_FPM_ADDR=10.77.1.2:$FPM_PORT
				tb_fpm_start "$dir" "$TB_FPM_ADDR" 16 \
					"host=10.77.2.2 port=$PGPORT dbname=tb user=tb" \
					10.77.2.2
			elif [ "$TB_TLS" = 1 ]; then
				TB_FPM_ADDR=unix:$dir/run/php-fpm.sock
				tb_fpm_start "$dir" "$dir/run/php-fpm.sock" 16 \
					"host=127.0.0.1 port=$PGPORT dbname=tb user=tb sslmode=require" \
					127.0.0.1
			else
				TB_FPM_ADDR=unix:$dir/run/php-fpm.sock
				tb_fpm_start "$dir" "$dir/run/php-fpm.sock" 16 \
					"host=$T/pgsock port=$PGPORT dbname=tb user=tb" \
					"$T/pgsock"
			fi ;;
		py)
			tb_gunicorn_start "$dir" "127.0.0.9:$PY_PORT"
			[ "$TB_FRONT" = haproxy ] && tb_gunicorn_start "$dir" \
				"127.0.0.9:$PY2_PORT" gunicorn2
			;;
		cgi) tb_fcgiwrap_start "$dir" ;;
		*) bp_fail "unknown application server $app" ;;
		esac
	done
	case $TB_FRONT in
	nginx) tb_nginx_start "$dir" ;;
	apache) tb_apache_start "$dir" ;;
	haproxy) tb_haproxy_start "$dir" ;;
	esac
}

# tb_stop_all DIR: front, application servers, database, in that order;
# each must exit cleanly.  Their logs go to DIR.
tb_stop_all() {
	local dir=$1 app name
	bp_alive front
	# haproxy -db ends by SIGTERM untraced too (a hard stop): status 143
	if [ "$TB_FRONT" = haproxy ]; then bp_stop front 143; else bp_stop front; fi
	for app in $TB_APPS; do
		case $app in
		php) bp_stop fpm ;;
		py)
			bp_stop gunicorn
			[ "$TB_FRONT" = haproxy ] && bp_stop gunicorn2
			;;
		cgi)
			bp_stop fcgiwrap 143
			# fcgiwrap -c 4's parent does not pass SIGTERM on to
			# its pre-forked children (and forks new ones as they
			# die): they would outlive the test
			pkill -TERM -f "^fcgiwrap .*unix:$dir/run/fcgiwrap.sock" \
				2>/dev/null
			;;
		esac
	done
	[ "$TB_DNS" = 1 ] && bp_stop dnsmasq
	bp_stop pg
	for name in front fpm gunicorn gunicorn2 fcgiwrap dnsmasq pg logd logd-web \
		logd-app logd-db; do
		[ -f "$T/$name.log" ] && mv "$T/$name.log" "$dir/$name.log"
		[ -f "$T/$name.out" ] && mv "$T/$name.out" "$dir/$name.out"
	done
	return 0
}

# tb_client DIR CONNS DEPTH: tb-client (untraced: requests come from
# outside) against the front, bounded to 600 s.  Returns its status.
tb_client() {
	local dir=$1 conns=$2 depth=$3 dns=()
	[ "$TB_DNS" = 1 ] && dns=(--dns)
	[ "$TB_TLS" = 1 ] && dns+=(--tls)
	"${NS_WEB[@]}" timeout 600 "$TB_CLIENT" --host 127.0.0.1 \
		--port "$FRONT_PORT" --conns "$conns" --pipeline "$depth" \
		--requests "$TB_REQUESTS" --mix "$TB_MIX" "${dns[@]}" \
		--static-dir "$T/www/static" --truth "$dir/truth" \
		>"$dir/client.out" 2>>"$T/client.log"
}

# tb_check DIR LABEL MODE: check-testbed.py on DIR's truth and paths.db.
tb_check() {
	local dir=$1 label=$2 mode=$3 flag=()
	case $mode in
	assert) ;;
	certainty) flag=(--certainty) ;;
	*) flag=(--report-only) ;;
	esac
	"$PY" "$TB_SRC/check-testbed.py" --truth "$dir/truth" \
		--db "$dir/paths.db" --label "$BP_TEST: $label" \
		--front "$(case $TB_FRONT in apache) echo apache2 ;;
			haproxy) echo haproxy ;; *) echo nginx ;; esac)" \
		--php "$(basename "${PHPFPM:-php-fpm}")" \
		--py "${PYEXE:-python3}" --explain "$TB_EXPLAIN" \
		--front-proto "${TB_FRONT_PROTO:-http}" \
		--app-proto "${TB_APP_PROTO:-http}" --method "${TB_METHOD:-GET}" \
		"${flag[@]}" >"$dir/check.out" 2>&1
	local rc=$?
	tee -a "$T/results.txt" <"$dir/check.out"
	return "$rc"
}

# tb_run CONNS DEPTH ISOLATION MODE [LABEL]: one traced run of the
# testbed: a fresh bp-logd, every server traced (bp-run), the client
# untraced, servers stopped, bp-reconstruct, then the paths checked
# against the client's truth.  MODE "assert" fails the test on any wrong
# path; "report" only prints; "behaviour" fails the test when the client
# fails (a wrong or missing answer, a stall past its --idle-ms) but only
# prints the path figures; "certainty" fails it as "behaviour" does and on
# any silently-WRONG or resolved-WRONG request (check-testbed.py
# --certainty: a wrong path must be labelled uncertain).
tb_run() {
	local conns=$1 depth=$2 iso=$3 mode=$4 label=${5:-} dir rc
	TB_RUN_NO=$((TB_RUN_NO + 1))
	dir=$T/run$TB_RUN_NO
	mkdir -p "$dir/run" "$dir/state"
	chmod 1777 "$dir/run" "$dir/state"
	chmod 755 "$dir"
	[ -n "$label" ] || label="c=$conns d=$depth $([ "$iso" = 0 ] &&
		echo no-isolation || echo isolation)"
	bp_free_port FRONT_PORT
	bp_free_port PY_PORT
	bp_free_port PY2_PORT
	bp_free_port FPM_PORT
	bp_free_port PGPORT
	if [ "$TB_MULTIHOST" = 1 ]; then
		# a bp-logd per host, in that host's namespaces
		bp_logd_start -n logd-web -s "$dir/web.sock" -l "$dir/logs-web" \
			-w NS_WEB "$dir" -H web -u www-data -u postgres
		bp_trace_prefix "$BP_LOGD_SOCK" "$(tb_rules "$dir")" "$iso"
		PRE_WEB=("${BP_PREFIX[@]}")
		bp_logd_start -n logd-app -s "$dir/app.sock" -l "$dir/logs-app" \
			-w NS_APP "$dir" -H app -u www-data -u postgres
		bp_trace_prefix "$BP_LOGD_SOCK" "$(tb_rules "$dir")" "$iso"
		PRE_APP=("${BP_PREFIX[@]}")
		bp_logd_start -n logd-db -s "$dir/db.sock" -l "$dir/logs-db" \
			-w NS_DB "$dir" -H db -u www-data -u postgres
		bp_trace_prefix "$BP_LOGD_SOCK" "$(tb_rules "$dir")" "$iso"
		PRE_DB=("${BP_PREFIX[@]}")
		TB_LOGDIRS=("$dir/logs-web" "$dir/logs-app" "$dir/logs-db")
	else
		bp_logd_start -w NS_WEB "$dir" -u www-data -u postgres
		bp_trace_prefix "$BP_LOGD_SOCK" "$(tb_rules "$dir")" "$iso"
		PRE_WEB=("${BP_PREFIX[@]}") PRE_APP=("${BP_PREFIX[@]}")
		PRE_DB=("${BP_PREFIX[@]}")
		TB_LOGDIRS=("$dir/logs")
	fi
	tb_start_all "$dir"
	tb_client "$dir" "$conns" "$depth"
	rc=$?
	bp_note "$label: $(tail -n 1 "$dir/client.out")"
	tb_stop_all "$dir"
	if [ "$TB_MULTIHOST" = 1 ]; then
		bp_stop logd-web
		bp_stop logd-app
		bp_stop logd-db
	else
		bp_stop logd
	fi
	if [ "$rc" != 0 ]; then
		[ "$mode" != report ] && bp_fail "$label: the client failed" \
			"(status $rc): $(tail -n 5 "$T/client.log")"
		bp_note "$label: the client failed (status $rc) under tracing"
	fi
	[ -s "$dir/truth" ] || bp_fail "$label: the client wrote no truth"
	tb_recon "$dir" "$label" "$mode"
}

# tb_steps DIR LABEL: the same logs shown to pass 1 and the merge as if
# they grew while they ran (BP_RECONSTRUCT_STEPS: pass 1 reading on, the
# merge's pause at a watermark, dry streams read on; docs/reconstruct.md,
# "The merge in steps") give the
# same rows by content, or one of the merge's refusals ("reconstruct the
# logs again": what it applied may have depended on a record it could
# not have yet), which is noted with its reason.
tb_steps() {
	local dir=$1 label=$2 n=${TB_STEPS:-7}
	if ! BP_RECONSTRUCT_STEPS=$n timeout 300 "$BP_RECONSTRUCT" \
		"${TB_RECON_OPTS[@]}" "${TB_LOGDIRS[@]}" -o "$dir/steps.db" \
		>"$dir/steps.out" 2>"$dir/steps.log"; then
		grep -q "reconstruct the logs again" "$dir/steps.log" ||
			bp_fail "$label: bp-reconstruct in $n steps failed:" \
				"$(tail -n 3 "$dir/steps.log")"
		bp_note "$label: the merge in $n steps refused:" \
			"$(grep -o 'error: .*' "$dir/steps.log" | head -n 1)"
		return 0
	fi
	"$PY" "$TB_SRC/same-content.py" "$dir/paths.db" "$dir/steps.db" \
		"$label: the merge in $n steps" >"$dir/same.out" 2>&1 || {
		cat "$dir/same.out"
		bp_fail "$label: the merge in steps wrote other rows than" \
			"the merge at once: $(head -n 6 "$dir/same.out")"
	}
	cat "$dir/same.out"
	rm -f "$dir/steps.db"
}

# tb_recon DIR LABEL MODE: bp-reconstruct on run DIR's logs into
# DIR/paths.db (options: the array TB_RECON_OPTS), then the paths checked
# against the client's truth (tb_check) as MODE says (see tb_run).  A
# testbed may call it again on the same logs with other options.
tb_recon() {
	local dir=$1 label=$2 mode=$3
	timeout 300 "$BP_RECONSTRUCT" "${TB_RECON_OPTS[@]}" "${TB_LOGDIRS[@]}" \
		-o "$dir/paths.db" \
		>"$dir/reconstruct.out" 2>"$dir/reconstruct.log" ||
		bp_fail "bp-reconstruct failed (status $?) on ${TB_LOGDIRS[*]}:" \
			"$(tail -n 3 "$dir/reconstruct.log")"
	[ -s "$dir/paths.db" ] || bp_fail "bp-reconstruct wrote no $dir/paths.db"
	tb_steps "$dir" "$label"
	local sum
	sum=$(grep -o '[0-9]* requests ([0-9]* exact, [0-9]* resolved, [0-9]* uncertain)' \
		"$dir/reconstruct.log" | tail -n 1)
	echo "$label: reconstructed: $sum"
	# an ordinary architecture leaves no request parked (docs/reconstruct.md,
	# "Certainty"): every path of an asserted run is exact
	case $sum in
	*" 0 resolved, 0 uncertain)") ;;
	*) [ "$mode" = assert ] && bp_fail "$label: requests not labelled" \
		"exact: $sum" ;;
	esac
	tb_check "$dir" "$label" "$mode" || {
		local said
		# the checker's verdict lines and first wrong paths, and its
		# last line (a Python error's message, when it failed so)
		said=$(grep -v ': precision\|: events the tracers' \
			"$dir/check.out" | head -n 8; tail -n 1 "$dir/check.out")
		[ "$mode" = certainty ] && bp_fail "$label: silently-WRONG or" \
			"resolved-WRONG requests, or a program named as not" \
			"traced:" "$said"
		bp_fail "$label: wrong request paths, or a program named as" \
			"not traced:" "$said"
	}
}

# tb_tls_check DIR: the encrypted channels of run DIR (TB_TLS) were read:
# every HTTPS channel the front accepted framed as http, every PostgreSQL
# TCP channel (both ends) as postgresql, no TCP channel unreadable, SQL
# spans at both ends.
tb_tls_check() {
	local db=$1/paths.db out
	out=$("$PY" - "$db" "$FRONT_PORT" "$PGPORT" <<-'PYEOF'
	import sqlite3, sys
	db, front, pg = sys.argv[1], sys.argv[2], sys.argv[3]
	c = sqlite3.connect(db)
	def one(q, *a):
	    return c.execute(q, a).fetchone()[0]
	https = one("SELECT count(*) FROM channels WHERE local LIKE ? AND role = 'accept'", "%:" + front)
	https_read = one("SELECT count(*) FROM channels WHERE local LIKE ? AND role = 'accept' AND readable = 1 AND protocol = 'http'", "%:" + front)
	pgc = one("SELECT count(*) FROM channels WHERE (local LIKE ? OR remote LIKE ?) AND kind = 'tcp'", "%:" + pg, "%:" + pg)
	pg_read = one("SELECT count(*) FROM channels WHERE (local LIKE ? OR remote LIKE ?) AND kind = 'tcp' AND readable = 1 AND protocol = 'postgresql'", "%:" + pg, "%:" + pg)
	unread = one("SELECT count(*) FROM channels WHERE readable = 0 AND kind = 'tcp'")
	sql = one("SELECT count(*) FROM spans WHERE protocol = 'postgresql' AND kind = 'client'")
	sqlsrv = one("SELECT count(*) FROM spans WHERE protocol = 'postgresql' AND kind = 'server'")
	print("https channels %d read %d; postgresql tcp channels %d read %d; unreadable tcp %d; sql client spans %d server spans %d"
	      % (https, https_read, pgc, pg_read, unread, sql, sqlsrv))
	ok = https > 0 and https == https_read and pgc > 0 and pgc == pg_read and unread == 0 and sql > 0 and sqlsrv > 0
	sys.exit(0 if ok else 1)
	PYEOF
	) || bp_fail "$1: encrypted channels not read: $out"
	echo "$out"
	bp_note "$(basename "$1"): $out"
}

# tb_testbed: the standard set of runs: client concurrency 1, 16 and 64,
# pipelining depth 4, keep-alive: 100% asserted; then the runs without
# event isolation at the concurrencies TB_NOISO_CONCS lists (default 64;
# docs/accuracy.md's figures used "1 16 64"): their paths are reported,
# but a silently-WRONG or resolved-WRONG request fails the test
# (docs/reconstruct.md, "Without event isolation").
tb_testbed() {
	local c
	for c in ${TB_ISO_CONCS:-1 16 64}; do
		tb_run "$c" 4 1 assert
	done
	[ "${TB_NOISO_CONCS:-}" = none ] && return 0
	for c in ${TB_NOISO_CONCS:-64}; do
		tb_run "$c" 4 0 certainty
	done
}

# ---- applications that are their own front (tb_app_*) ---------------------
#
# The testbeds of the certainty contract (docs/accuracy.md, "Pools,
# event loops and timeouts"): an application server that is its own
# front (node, aiohttp, the JDK's HttpServer), its SQL straight to
# PostgreSQL and its calls to a backend, or a traced client.  The script
# sets TB_FRONT=none and defines:
#   tb_app_start DIR   start the backend and the front (bp_start names
#                      "backend" and "front", traced with PRE_APP) on
#                      127.0.0.1:BACK_PORT and FRONT_PORT
#   TB_APP_STOP        the names tb_app_run stops, in order (default
#                      "front backend")
#   TB_APP_STOP_OK     exit statuses after SIGTERM that count as clean
#                      besides 0 (the JVM's is 143)
#   TB_APP_CHECK       check-testbed.py's options for the exes (--py EXE
#                      --backend EXE [--client EXE])
#   TB_CLIENT_OPTS     tb-client's options for the app (--mix, --max-sql,
#                      --calls)
# and may replace tb_app_client DIR CONNS (default: tb-client, untraced,
# keep-alive, TB_DEPTH requests in flight per connection, default 1).
# TB_APP_CONCS: the concurrencies (default "1 16 64").  TB_APP_RULES:
# selection rules put before the testbed's (e.g. "none unix */mysqld.sock"
# to see the paths without a processor: the verdict then fails).

: "${TB_DEPTH:=1}"
TB_APP_STOP="front backend"
: "${TB_DB:=postgresql}"
TB_DB_NAME=$([ "$TB_DB" = mariadb ] && echo mariadb || echo pg)
TB_APP_BAD=()

# tb_app_client DIR CONNS: the load of one run (default: tb-client).
tb_app_client() {
	local dir=$1 conns=$2
	# shellcheck disable=SC2086
	timeout 300 "$TB_CLIENT" --host 127.0.0.1 --port "$FRONT_PORT" \
		--conns "$conns" --pipeline "$TB_DEPTH" \
		--requests "$TB_REQUESTS" $TB_CLIENT_OPTS --truth "$dir/truth" \
		>"$dir/client.out" 2>>"$T/client.log"
}

# tb_app_run CONNS [untraced]: one run.  Traced: a fresh bp-logd, the
# database and the application traced, the load, everything stopped,
# bp-reconstruct, check-testbed.py --shape app --certainty; a run with
# silently-WRONG or resolved-WRONG requests is remembered in TB_APP_BAD
# (tb_app_verdict fails the test after every run has printed its
# figures).  "untraced": the same servers without the tracer, to show
# the application and the client's ground truth work on their own; any
# failure of the client fails the test at once.
tb_app_run() {
	local conns=$1 how=${2:-traced} dir rc label name
	TB_RUN_NO=$((TB_RUN_NO + 1))
	dir=$T/run$TB_RUN_NO
	mkdir -p "$dir/run"
	chmod 1777 "$dir/run"
	chmod 755 "$dir"
	label="${TB_APP_LABEL:-}c=$conns $how"
	bp_free_port FRONT_PORT
	bp_free_port BACK_PORT
	bp_free_port PGPORT
	PRE_APP=() PRE_DB=() PRE_WEB=()
	if [ "$how" = traced ]; then
		bp_logd_start -w NS_WEB "$dir" -u www-data -u postgres
		bp_trace_prefix "$BP_LOGD_SOCK" "${TB_APP_RULES:+$TB_APP_RULES;}
			http port $FRONT_PORT,$BACK_PORT;
			postgresql port $PGPORT; postgresql unix $T/pgsock/*" 1
		PRE_APP=("${BP_PREFIX[@]}") PRE_DB=("${BP_PREFIX[@]}")
		PRE_WEB=("${BP_PREFIX[@]}")
	fi
	local t0=$SECONDS
	tb_db_start
	tb_app_start "$dir"
	tb_app_client "$dir" "$conns"
	rc=$?
	bp_note "$label: $(tail -n 1 "$dir/client.out" 2>/dev/null) ($((SECONDS - t0)) s)"
	for name in $TB_APP_STOP; do
		bp_alive "$name"
		# shellcheck disable=SC2086
		bp_stop "$name" ${TB_APP_STOP_OK:-}
	done
	bp_stop "$TB_DB_NAME"
	[ "$how" = traced ] && bp_stop logd
	for name in $TB_APP_STOP "$TB_DB_NAME" logd; do
		[ -f "$T/$name.log" ] && mv "$T/$name.log" "$dir/$name.log"
		[ -f "$T/$name.out" ] && mv "$T/$name.out" "$dir/$name.out"
	done
	[ "$rc" = 0 ] || bp_fail "$label: the client failed (status $rc):" \
		"$(tail -n 5 "$T/client.log")"
	[ -s "$dir/truth" ] || bp_fail "$label: the client wrote no truth"
	[ "$how" = traced ] || return 0
	timeout 300 "$BP_RECONSTRUCT" "$dir/logs" -o "$dir/paths.db" \
		>"$dir/reconstruct.out" 2>"$dir/reconstruct.log" ||
		bp_fail "bp-reconstruct failed (status $?) on $dir/logs:" \
			"$(tail -n 3 "$dir/reconstruct.log")"
	[ -s "$dir/paths.db" ] || bp_fail "bp-reconstruct wrote no $dir/paths.db"
	# shellcheck disable=SC2086
	"$PY" "$TB_SRC/check-testbed.py" --truth "$dir/truth" \
		--db "$dir/paths.db" --label "$BP_TEST: $label" --shape app \
		--certainty $TB_APP_CHECK --explain "$TB_EXPLAIN" |
		tee -a "$T/results.txt"
	case ${PIPESTATUS[0]} in
	0) ;;
	1) TB_APP_BAD+=("$label") ;;
	*) bp_fail "$label: check-testbed.py could not check the run" ;;
	esac
}

# tb_app_testbed: an untraced run at the highest concurrency, then the
# traced runs at each of TB_APP_CONCS, then the verdict.
tb_app_testbed() {
	tb_app_runs
	tb_app_verdict
}

# tb_app_runs: the runs of one mode: untraced once at the highest of
# TB_APP_CONCS (default 1 16 64), then traced at each.
tb_app_runs() {
	local concs=${TB_APP_CONCS:-1 16 64} c
	tb_app_run "${concs##* }" untraced
	for c in $concs; do
		tb_app_run "$c"
	done
}

# tb_app_verdict: fail when a run had silently-WRONG or resolved-WRONG
# requests.
tb_app_verdict() {
	[ "${#TB_APP_BAD[@]}" = 0 ] || bp_fail "silently-WRONG or" \
		"resolved-WRONG requests in: ${TB_APP_BAD[*]} (see the" \
		"certainty lines above)"
}
