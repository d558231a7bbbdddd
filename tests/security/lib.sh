# tests/security/lib.sh - shared by the security tests (bash).  Builds on
# tests/integ/lib.sh (temporary directory, ports, servers with pidfiles,
# cleanup trap, the tracing tools) and adds PostgreSQL and nginx on
# loopback, run by other users than root, traced.
#
#   sec_init NAME          bp_init + tools + the real servers' binaries
#   sec_pg_init            a cluster in $T/pg (users: see the function)
#   sec_pg_start [PREFIX...]
#   sec_nginx_start DIR [PREFIX...]  nginx: a front on NGX_PORT proxying
#                          /app/ to an upstream server block on UP_PORT
#   sec_dump DIR           bp-dump of DIR/logs into DIR/dump.txt
#
# bp-logd: chmod 711 DIR; bp_logd_start DIR -u postgres (tests/lib/logd.sh);
# servers stop with bp_stop NAME.  The servers: tests/lib/servers.sh.
#
# Needs root (PostgreSQL runs as user postgres); the tests exit 77 (skip)
# without it, which automake counts as skipped, never as passed.
. "$(dirname "${BASH_SOURCE[0]}")/../integ/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/servers.sh"

sec_init() {
	if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
		echo "SKIP: $1 needs root and setpriv (PostgreSQL runs as postgres)"
		exit 77
	fi
	bp_init "$1"
	bp_require_tracing
	chmod 711 "$T"
	[ -n "$BP_DUMP" ] || bp_fail "bp-dump is not built: run make"
	[ -n "$BP_SHIM" ] || bp_fail "libbtrace.so is not built: run make"
	bp_find_pgbin
	[ -n "$PGBIN" ] && [ -x "$PGBIN/postgres" ] ||
		bp_fail "PostgreSQL is missing: apt-get install postgresql"
	command -v psql >/dev/null ||
		bp_fail "psql is missing: apt-get install postgresql-client"
	command -v nginx >/dev/null ||
		bp_fail "nginx is missing: apt-get install nginx-light"
	command -v curl >/dev/null || bp_fail "curl is missing: apt-get install curl"
	id postgres >/dev/null 2>&1 ||
		bp_fail "no user postgres: apt-get install postgresql"
	# a random tag: secrets of this run cannot be found by chance
	TAG=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
}

# sec_traced SOCKET [ENV=VALUE...]: set SEC_PRE, the prefix that runs a
# program traced with the rules for this test's ports (RULES).
sec_traced() {
	local sock=$1
	shift
	SEC_PRE=(env "LD_PRELOAD=$BP_SHIM" "BTRACE_LOGD=$sock"
		"BTRACE_RULES=$RULES" "$@")
}

# sec_pg_init: a cluster in $T/pg, socket directory $T/pgsock, port
# PGPORT.  Local connections are trusted; over TCP the user pwuser must
# give its password in clear text (PasswordMessage), scramuser by
# SCRAM-SHA-256 (SASL messages), everyone else is trusted.
sec_pg_init() {
	bp_free_port PGPORT
	bp_pg_initdb "$T/pg" "$T/pgsock" "$T/initdb.log"
	cat >>"$T/pg/postgresql.conf" <<-EOF
	port = $PGPORT
	listen_addresses = '127.0.0.1'
	unix_socket_directories = '$T/pgsock'
	fsync = off
	synchronous_commit = off
	log_min_messages = warning
	password_encryption = 'scram-sha-256'
	EOF
	local host=host
	if [ "${SEC_TLS:-0}" = 1 ]; then
		# SEC_TLS: every TCP connection encrypted (ssl = on, hostssl)
		sec_tls_cert pg postgres
		cat >>"$T/pg/postgresql.conf" <<-EOF
		ssl = on
		ssl_cert_file = '$T/tls/pg.crt'
		ssl_key_file = '$T/tls/pg.key'
		EOF
		host=hostssl
	fi
	cat >"$T/pg/pg_hba.conf" <<-EOF
	local all all trust
	$host all pwuser 127.0.0.1/32 password
	$host all scramuser 127.0.0.1/32 scram-sha-256
	$host all all 127.0.0.1/32 trust
	EOF
	chown postgres:postgres "$T/pg/pg_hba.conf"
}

# sec_tls_cert NAME OWNER: a self-signed certificate and its key in
# $T/tls/NAME.crt and NAME.key (SEC_TLS).
sec_tls_cert() {
	mkdir -p "$T/tls"
	chmod 755 "$T/tls"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -days 2 -subj "/CN=$1.test" -keyout "$T/tls/$1.key" \
		-out "$T/tls/$1.crt" >"$T/tls/$1.log" 2>&1 ||
		bp_fail "openssl req failed: $(tail -n 3 "$T/tls/$1.log")"
	chown "$2" "$T/tls/$1.key" "$T/tls/$1.crt"
	chmod 600 "$T/tls/$1.key"
}

# sec_pg_start [PREFIX...]: PostgreSQL as postgres, run under PREFIX (the
# tracing prefix, or nothing); waits until it accepts connections (20 s).
sec_pg_start() {
	bp_pg_start "$T/pg" "$PGPORT" "$@"
}

# sec_nginx_start DIR [PREFIX...]: one nginx process (no master) in DIR:
# the front on NGX_PORT adds a Set-Cookie and proxies /app/ to the
# upstream server block on UP_PORT, which adds its own Set-Cookie; both
# log the request line and the secret-bearing headers they received
# (DIR/front.access, DIR/up.access), which shows that tracing changed
# nothing on the wire.
sec_nginx_start() {
	local dir=$1 ssl="" up=http certs=""
	shift
	mkdir -p "$dir/nginx"
	if [ "${SEC_TLS:-0}" = 1 ]; then
		# SEC_TLS: HTTPS on both server blocks, nginx a TLS client of
		# its upstream too
		[ -f "$T/tls/web.crt" ] || sec_tls_cert web root
		ssl=" ssl" up=https
		certs="ssl_certificate $T/tls/web.crt; ssl_certificate_key $T/tls/web.key;"
	fi
	cat >"$dir/nginx/nginx.conf" <<-EOF
	daemon off;
	master_process off;
	worker_processes 1;
	pid $dir/nginx/nginx.pid;
	error_log $dir/nginx/error.log warn;
	events { worker_connections 64; }
	http {
	$(bp_nginx_temp_paths "$dir/nginx")
	    log_format sec '\$request|\$http_authorization|\$http_cookie|\$http_proxy_authorization';
	    server {
	        listen 127.0.0.1:$NGX_PORT$ssl;
	        $certs
	        access_log $dir/front.access sec;
	        location /app/ {
	            add_header Set-Cookie "sid=SECRET_SETCOOKIE_$TAG";
	            proxy_pass $up://127.0.0.1:$UP_PORT;
	        }
	    }
	    server {
	        listen 127.0.0.1:$UP_PORT$ssl;
	        $certs
	        access_log $dir/up.access sec;
	        location / {
	            add_header Set-Cookie "up=SECRET_UPCOOKIE_$TAG";
	            return 200 "item\n";
	        }
	    }
	}
	EOF
	bp_nginx_start "$dir/nginx" "$dir/nginx/nginx.conf" \
		"$dir/nginx/nginx.pid" "$UP_PORT" "$@"
}

# sec_dump DIR: every record of DIR/logs, printed, into DIR/dump.txt.
sec_dump() {
	"$BP_DUMP" "$1/logs" >"$1/dump.txt" 2>"$1/dump.err" ||
		bp_fail "bp-dump found damage in $1/logs: $(head -n 3 "$1/dump.err")"
}

# sec_absent WHAT FILE...: fail if the string WHAT occurs in any FILE
# (binary files too).
sec_absent() {
	local what=$1 f
	shift
	for f in "$@"; do
		if grep -a -q -F -- "$what" "$f"; then
			bp_fail "'$what' was recorded: $f: $(grep -a -o -F -m 1 -- "$what" "$f" | head -c 200)"
		fi
	done
}

# sec_present WHAT FILE: fail unless WHAT occurs in FILE (the positive
# control that makes an absence check mean something).
sec_present() {
	grep -a -q -F -- "$1" "$2" ||
		bp_fail "'$1' not found in $2 (the test would prove nothing)"
}
