# tests/security/lib.sh - shared by the security tests (bash).  Builds on
# tests/integ/lib.sh (temporary directory, ports, servers with pidfiles,
# cleanup trap, the tracing tools) and adds PostgreSQL and nginx on
# loopback, run by other users than root, traced.
#
#   sec_init NAME          bp_init + tools + the real servers' binaries
#   sec_logd_start DIR     bp-logd on DIR/logd.sock, serving postgres too
#   sec_pg_init            a cluster in $T/pg (users: see the function)
#   sec_pg_start [PREFIX...] / sec_stop NAME
#   sec_nginx_start DIR [PREFIX...]  nginx: a front on NGX_PORT proxying
#                          /app/ to an upstream server block on UP_PORT
#   sec_dump DIR           bp-dump of DIR/logs into DIR/dump.txt
#
# Needs root (PostgreSQL runs as user postgres); the tests exit 77 (skip)
# without it, which automake counts as skipped, never as passed.
. "$(dirname "${BASH_SOURCE[0]}")/../integ/lib.sh"

sec_init() {
	if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
		echo "SKIP: $1 needs root and setpriv (PostgreSQL runs as postgres)"
		exit 77
	fi
	bp_init "$1"
	bp_require_tracing
	chmod 711 "$T"
	BP_DUMP=$(bp_find_tool bp-dump)
	[ -n "$BP_DUMP" ] || bp_fail "bp-dump is not built: run make"
	[ -n "$BP_SHIM" ] || bp_fail "libbtrace.so is not built: run make"
	PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
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

# sec_logd_start DIR: bp-logd for DIR/logs on DIR/logd.sock, serving the
# postgres user too (-u); waits up to 10 s.  Sets BP_LOGD_SOCK.
sec_logd_start() {
	local dir=$1 i
	mkdir -p "$dir/logs"
	chmod 711 "$dir"
	BP_LOGD_SOCK=$dir/logd.sock
	bp_start logd "$dir/logd.pid" "$BP_LOGD" -f -d "$dir/logs" \
		-s "$BP_LOGD_SOCK" -p "$dir/logd.pid" -u postgres
	for ((i = 0; i < 100; i++)); do
		[ -S "$BP_LOGD_SOCK" ] && return 0
		bp_alive logd
		sleep 0.1
	done
	bp_fail "bp-logd did not create $BP_LOGD_SOCK within 10 s"
}

# sec_stop NAME: SIGTERM, wait up to 15 s, fail unless it exits 0.
sec_stop() {
	local name=$1 rc
	kill -TERM "${BP_PID[$name]}" 2>/dev/null
	if ! bp_wait_gone "${BP_LAUNCHER[$name]}" 150; then
		kill -KILL "${BP_PID[$name]}" "${BP_LAUNCHER[$name]}" 2>/dev/null
		bp_fail "$name did not stop within 15 s of SIGTERM"
	fi
	wait "${BP_LAUNCHER[$name]}"
	rc=$?
	BP_LAUNCHER[$name]=""
	[ "$rc" = 0 ] || bp_fail "$name exited with status $rc after SIGTERM"
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
	install -d -o postgres -g postgres -m 700 "$T/pg"
	install -d -o postgres -g postgres -m 755 "$T/pgsock"
	setpriv --reuid=postgres --regid=postgres --clear-groups \
		env HOME="$T/pg" "$PGBIN/initdb" -D "$T/pg" -A trust \
		-U postgres --no-sync -E UTF8 --locale=C >"$T/initdb.log" 2>&1 ||
		bp_fail "initdb failed: $(tail -n 3 "$T/initdb.log")"
	cat >>"$T/pg/postgresql.conf" <<-EOF
	port = $PGPORT
	listen_addresses = '127.0.0.1'
	unix_socket_directories = '$T/pgsock'
	fsync = off
	synchronous_commit = off
	log_min_messages = warning
	password_encryption = 'scram-sha-256'
	EOF
	cat >"$T/pg/pg_hba.conf" <<-EOF
	local all all trust
	host all pwuser 127.0.0.1/32 password
	host all scramuser 127.0.0.1/32 scram-sha-256
	host all all 127.0.0.1/32 trust
	EOF
	chown postgres:postgres "$T/pg/pg_hba.conf"
}

# sec_pg_start [PREFIX...]: PostgreSQL as postgres, run under PREFIX (the
# tracing prefix, or nothing); waits until it accepts connections (20 s).
sec_pg_start() {
	local i
	bp_start pg "$T/pg/postmaster.pid" setpriv --reuid=postgres \
		--regid=postgres --clear-groups "$@" "$PGBIN/postgres" -D "$T/pg"
	for ((i = 0; i < 200; i++)); do
		"$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PGPORT" && return 0
		bp_alive pg
		sleep 0.1
	done
	bp_fail "PostgreSQL did not accept connections within 20 s"
}

# sec_nginx_start DIR [PREFIX...]: one nginx process (no master) in DIR:
# the front on NGX_PORT adds a Set-Cookie and proxies /app/ to the
# upstream server block on UP_PORT, which adds its own Set-Cookie; both
# log the request line and the secret-bearing headers they received
# (DIR/front.access, DIR/up.access), which shows that tracing changed
# nothing on the wire.
sec_nginx_start() {
	local dir=$1 i
	shift
	mkdir -p "$dir/nginx"
	cat >"$dir/nginx/nginx.conf" <<-EOF
	daemon off;
	master_process off;
	worker_processes 1;
	pid $dir/nginx/nginx.pid;
	error_log $dir/nginx/error.log warn;
	events { worker_connections 64; }
	http {
	    client_body_temp_path $dir/nginx/tmp-body;
	    proxy_temp_path $dir/nginx/tmp-proxy;
	    fastcgi_temp_path $dir/nginx/tmp-fcgi;
	    uwsgi_temp_path $dir/nginx/tmp-uwsgi;
	    scgi_temp_path $dir/nginx/tmp-scgi;
	    log_format sec '\$request|\$http_authorization|\$http_cookie|\$http_proxy_authorization';
	    server {
	        listen 127.0.0.1:$NGX_PORT;
	        access_log $dir/front.access sec;
	        location /app/ {
	            add_header Set-Cookie "sid=SECRET_SETCOOKIE_$TAG";
	            proxy_pass http://127.0.0.1:$UP_PORT;
	        }
	    }
	    server {
	        listen 127.0.0.1:$UP_PORT;
	        access_log $dir/up.access sec;
	        location / {
	            add_header Set-Cookie "up=SECRET_UPCOOKIE_$TAG";
	            return 200 "item\n";
	        }
	    }
	}
	EOF
	bp_start nginx "$dir/nginx/nginx.pid" "$@" nginx -p "$dir/nginx" \
		-c "$dir/nginx/nginx.conf"
	for ((i = 0; i < 100; i++)); do
		curl -s -o /dev/null "http://127.0.0.1:$UP_PORT/ready" && return 0
		bp_alive nginx
		sleep 0.1
	done
	bp_fail "nginx did not answer within 10 s"
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
