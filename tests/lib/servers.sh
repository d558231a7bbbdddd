# tests/lib/servers.sh - the Debian servers of the tests (bash): PostgreSQL,
# nginx, apache2 and php-fpm run from their packages on loopback in the
# test's directory, never as services, started with bp_start and a bounded
# wait until they accept.  Each test writes its own configuration (they
# differ on purpose); what is the same everywhere is here.  Needs
# tests/lib/core.sh (sourced here).
#
#   bp_find_pgbin            PGBIN: the newest /usr/lib/postgresql/*/bin
#                            (empty when there is none)
#   bp_find_phpfpm           PHPFPM: the newest /usr/sbin/php-fpm* (or empty)
#   bp_pg_initdb DATADIR SOCKDIR LOG   a cluster owned by postgres (initdb
#                            as postgres, trust, UTF8, C) and a socket
#                            directory (unless ""); fails with LOG's last
#                            lines
#   bp_pg_start [-n NAME] [-w PREFIXVAR] [-h HOST] [-t TENTHS] [-o OPTSVAR]
#               DATADIR PORT [PREFIX...]
#                            postgres as user postgres under PREFIX (the
#                            tracer), itself under the array PREFIXVAR (a
#                            namespace); waits (default 20 s) until
#                            pg_isready -h HOST (default 127.0.0.1) -p PORT;
#                            on exit it is stopped fast (SIGINT) first.
#                            postgres gets -p PORT and the options in the
#                            array named OPTSVAR
#   bp_pg_fast_stop NAME     SIGINT (fast shutdown: it disconnects its
#                            clients), wait up to 5 s
#   bp_nginx_temp_paths DIR  the *_temp_path lines of an http block
#   bp_nginx_start [-n NAME] [-w PREFIXVAR] DIR CONF PIDFILE LISTEN [PREFIX...]
#   bp_apache_start [-n NAME] [-w PREFIXVAR] CONF PIDFILE LISTEN [PREFIX...]
#                            apache2 -DFOREGROUND in a session of its own
#                            (it signals its process group when it stops)
#   bp_fpm_start [-n NAME] [-w PREFIXVAR] [-o OPTSVAR] CONF PIDFILE LISTEN
#                [PREFIX...]   $PHPFPM -n -y CONF -d extension=pgsql and the
#                            options in the array named OPTSVAR
# LISTEN: what bp_wait_listen waits for (a unix path, HOST:PORT or PORT).
. "$(dirname "${BASH_SOURCE[0]}")/core.sh"

BP_AS_PG=(setpriv --reuid=postgres --regid=postgres --clear-groups)

# bp_latest GLOB: the highest version among the paths GLOB matches.
bp_latest() {
	# shellcheck disable=SC2086
	ls -d $1 2>/dev/null | sort -V | tail -n 1
}

bp_find_pgbin() { PGBIN=$(bp_latest '/usr/lib/postgresql/*/bin'); }
bp_find_phpfpm() { PHPFPM=$(bp_latest '/usr/sbin/php-fpm*'); }

# bp_pg_initdb DATADIR SOCKDIR LOG: see above.
bp_pg_initdb() {
	local data=$1 sock=$2 log=$3
	[ -n "${PGBIN:-}" ] || bp_find_pgbin
	install -d -o postgres -g postgres -m 700 "$data"
	[ -z "$sock" ] || install -d -o postgres -g postgres -m 755 "$sock"
	"${BP_AS_PG[@]}" env HOME="$data" "$PGBIN/initdb" -D "$data" -A trust \
		-U postgres --no-sync -E UTF8 --locale=C >"$log" 2>&1 ||
		bp_fail "initdb failed: $(tail -n 3 "$log")"
}

# bp_pg_start ...: see above.
bp_pg_start() {
	local name=pg host=127.0.0.1 tenths=200 data port i
	local -a ns=() pre=() opts=()
	while [ $# -gt 0 ]; do
		case $1 in
		-n) name=$2; shift 2 ;;
		-w) local -n bp_ps_ns=$2; ns=("${bp_ps_ns[@]}"); shift 2 ;;
		-h) host=$2; shift 2 ;;
		-t) tenths=$2; shift 2 ;;
		-o) local -n bp_ps_opts=$2; opts=("${bp_ps_opts[@]}"); shift 2 ;;
		*) break ;;
		esac
	done
	data=$1 port=$2
	shift 2
	pre=("$@")
	[ -n "${PGBIN:-}" ] || bp_find_pgbin
	bp_start "$name" "$data/postmaster.pid" "${ns[@]}" "${BP_AS_PG[@]}" \
		"${pre[@]}" "$PGBIN/postgres" -D "$data" -p "$port" "${opts[@]}"
	case " ${BP_CLEANUP_FIRST[*]} " in
	*" bp_pg_fast_stop $name "*) ;;
	*) bp_cleanup_first "bp_pg_fast_stop $name" ;;
	esac
	for ((i = 0; i < tenths; i++)); do
		"${ns[@]}" "$PGBIN/pg_isready" -q -h "$host" -p "$port" && return 0
		bp_alive "$name"
		sleep 0.1
	done
	bp_fail "PostgreSQL ($name) did not accept connections within" \
		"$((tenths / 10)) s"
}

# bp_pg_fast_stop NAME: see above (the first thing bp_cleanup does).
bp_pg_fast_stop() {
	[ -n "${BP_LAUNCHER[$1]:-}" ] || return 0
	bp_kill INT "${BP_PID[$1]:-}"
	bp_wait_gone "${BP_LAUNCHER[$1]}" 50
}

# bp_nginx_temp_paths DIR: nginx's temporary directories under DIR.
bp_nginx_temp_paths() {
	local t
	echo "    client_body_temp_path $1/body;"
	for t in proxy fastcgi uwsgi scgi; do
		echo "    ${t}_temp_path $1/$t;"
	done
}

# bp_srv_args: the options -n NAME and -w PREFIXVAR shared by the server
# starters; sets bp_name, bp_ns and bp_shift (how many words they took).
bp_srv_args() {
	bp_shift=0 bp_ns=()
	while [ $# -gt 0 ]; do
		case $1 in
		-n) bp_name=$2 ;;
		-w) local -n bp_sa_ns=$2; bp_ns=("${bp_sa_ns[@]}") ;;
		*) return 0 ;;
		esac
		shift 2
		bp_shift=$((bp_shift + 2))
	done
}

# bp_nginx_start [-n NAME] [-w PREFIXVAR] DIR CONF PIDFILE LISTEN [PREFIX...]
bp_nginx_start() {
	local bp_name=nginx bp_shift bp_ns
	bp_srv_args "$@"
	shift "$bp_shift"
	local dir=$1 conf=$2 pidfile=$3 listen=$4
	shift 4
	bp_start "$bp_name" "$pidfile" "${bp_ns[@]}" "$@" nginx -p "$dir" \
		-c "$conf"
	bp_wait_listen "$listen" "$bp_name" 100 bp_ns
}

# bp_apache_start [-n NAME] [-w PREFIXVAR] CONF PIDFILE LISTEN [PREFIX...]
bp_apache_start() {
	local bp_name=apache bp_shift bp_ns
	bp_srv_args "$@"
	shift "$bp_shift"
	local conf=$1 pidfile=$2 listen=$3
	shift 3
	bp_start "$bp_name" "$pidfile" "${bp_ns[@]}" setsid "$@" apache2 \
		-f "$conf" -DFOREGROUND
	bp_wait_listen "$listen" "$bp_name" 100 bp_ns
}

# bp_fpm_start [-n NAME] [-w PREFIXVAR] [-o OPTSVAR] CONF PIDFILE LISTEN
# [PREFIX...]
bp_fpm_start() {
	local bp_name=fpm bp_shift bp_ns
	local -a opts=()
	if [ "$1" = -o ]; then
		local -n bp_fs_opts=$2
		opts=("${bp_fs_opts[@]}")
		shift 2
	fi
	bp_srv_args "$@"
	shift "$bp_shift"
	local conf=$1 pidfile=$2 listen=$3
	shift 3
	[ -n "${PHPFPM:-}" ] || bp_find_phpfpm
	bp_start "$bp_name" "$pidfile" "${bp_ns[@]}" "$@" "$PHPFPM" -n \
		-y "$conf" -d extension=pgsql "${opts[@]}"
	bp_wait_listen "$listen" "$bp_name" 100 bp_ns
}
