#!/bin/bash
# redaction.sh - secrets are not recorded (docs/security.md).
#
# Real programs, all traced (curl, nginx as a front and an upstream,
# psql, PostgreSQL):
#
# 1. By default.  curl sends Authorization, Cookie and
#    Proxy-Authorization headers (from a file, so they are not on its
#    command line), nginx and its upstream answer with Set-Cookie;
#    psql creates two roles with passwords (SQL text with PASSWORD '...')
#    and logs in as each over TCP: one with a cleartext PasswordMessage,
#    one with SCRAM-SHA-256 (SASL messages).  None of these values may
#    appear anywhere: not in the segment files (raw bytes), not in
#    bp-dump's print, not in paths.db.  Positive controls: the same
#    values did cross the wire (nginx's access logs, curl's response
#    headers), and the requests and queries themselves were recorded.
# 2. With BTRACE_REDACT=sql-literals,query-strings (every traced process):
#    the query string of a URL and the literals of a query are gone from
#    the log and paths.db (spans.target shows "/app/item?" and
#    "... name = ? AND id = ?"), while without it they are recorded (the
#    default keeps them: ground truths put ids there); the programs' own
#    results show that the wire did not change.
# With SEC_TLS=1 (redaction-tls.sh) every connection is encrypted with
# OpenSSL (curl, nginx front and upstream over HTTPS, psql over
# sslmode=require, PostgreSQL ssl = on): the plaintext read at
# SSL_read/SSL_write is redacted the same, and no byte of the TLS keys
# (their PEM files) is in the log or paths.db.
. "$(dirname "$0")/lib.sh"

sec_init "${SEC_NAME:-redaction}"
sec_pg_init
bp_free_port NGX_PORT
bp_free_port UP_PORT
RULES="http port $NGX_PORT,$UP_PORT; postgresql port $PGPORT"
SCHEME=http PGSSLMODE=disable
[ "${SEC_TLS:-0}" = 1 ] && SCHEME=https PGSSLMODE=require
export PGSSLMODE PGCONNECT_TIMEOUT=10

# run DIR [ENV=VALUE...]: one traced run of everything into DIR/logs
run() {
	local dir=$1 q
	shift
	mkdir -p "$dir"
	chmod 711 "$dir"
	bp_logd_start "$dir" -u postgres
	sec_traced "$BP_LOGD_SOCK" "$@"
	sec_pg_start "${SEC_PRE[@]}"
	sec_nginx_start "$dir" "${SEC_PRE[@]}"
	PSQL=("${SEC_PRE[@]}" timeout 30 psql -X -q -A -t -h 127.0.0.1 -p "$PGPORT")

	# roles with passwords, through the traced psql (SQL text)
	"${PSQL[@]}" -v ON_ERROR_STOP=1 -U postgres -d postgres \
		-c "DROP TABLE IF EXISTS items" \
		-c "DROP ROLE IF EXISTS pwuser" -c "DROP ROLE IF EXISTS scramuser" \
		-c "CREATE ROLE pwuser LOGIN" \
		-c "ALTER ROLE pwuser PASSWORD 'SECRET_PGPW1_$TAG'" \
		-c "CREATE ROLE scramuser LOGIN PASSWORD 'SECRET_PGPW2_$TAG'" \
		>"$dir/psql-roles.out" 2>&1 ||
		bp_fail "psql could not create the roles: $(cat "$dir/psql-roles.out")"
	"${PSQL[@]}" -v ON_ERROR_STOP=1 -U postgres -d postgres \
		>"$dir/psql-table.out" 2>&1 <<-EOF ||
	CREATE TABLE items (id int, name text);
	INSERT INTO items VALUES (42, 'alice'), (43, 'bob');
	GRANT SELECT ON items TO pwuser, scramuser;
	EOF
		bp_fail "psql could not create the table: $(cat "$dir/psql-table.out")"
	# log in with the passwords (from the environment, not argv)
	q="SELECT name FROM items WHERE name = 'alice' AND id = 42"
	# (the query on stdin: sql-literals covers SQL text in messages, a
	# command line keeps its arguments unless BTRACE_REDACT has cmdline)
	echo "$q;" | PGPASSWORD=SECRET_PGPW1_$TAG "${PSQL[@]}" -U pwuser \
		-d postgres >"$dir/psql-pw.out" 2>&1 ||
		bp_fail "cleartext login failed: $(cat "$dir/psql-pw.out")"
	echo "$q;" | PGPASSWORD=SECRET_PGPW2_$TAG "${PSQL[@]}" -U scramuser \
		-d postgres >"$dir/psql-scram.out" 2>&1 ||
		bp_fail "SCRAM login failed: $(cat "$dir/psql-scram.out")"
	[ "$(cat "$dir/psql-pw.out")" = alice ] && [ "$(cat "$dir/psql-scram.out")" = alice ] ||
		bp_fail "the query gave a wrong answer under tracing: $(cat "$dir"/psql-*.out)"

	# HTTP with secret headers (from a file: not on curl's command line)
	cat >"$dir/hdrs" <<-EOF
	Authorization: Bearer SECRET_AUTH_$TAG
	Cookie: session=SECRET_COOKIE_$TAG
	Proxy-Authorization: Basic $(printf 'proxy:SECRET_PROXY_%s' "$TAG" | base64 -w0)
	EOF
	"${SEC_PRE[@]}" timeout 30 curl -sSk -D "$dir/curl.headers" -H "@$dir/hdrs" \
		"$SCHEME://127.0.0.1:$NGX_PORT/app/item?token=SECRETQ_$TAG&id=7" \
		>"$dir/curl.out" 2>&1 || bp_fail "curl failed: $(cat "$dir/curl.out")"
	[ "$(cat "$dir/curl.out")" = item ] ||
		bp_fail "curl got a wrong answer under tracing: $(cat "$dir/curl.out")"

	bp_stop nginx
	bp_stop pg
	bp_stop logd
	sec_dump "$dir"
	timeout 120 "$BP_RECONSTRUCT" -q "$dir/logs" -o "$dir/paths.db" \
		2>"$dir/reconstruct.err" ||
		bp_fail "bp-reconstruct failed: $(head -n 3 "$dir/reconstruct.err")"
	sqlite3 "$dir/paths.db" .dump >"$dir/paths.sql" ||
		bp_fail "cannot dump $dir/paths.db"
	sqlite3 "$dir/paths.db" "SELECT DISTINCT target FROM spans WHERE target IS NOT NULL" \
		>"$dir/targets.txt"
}

command -v sqlite3 >/dev/null || bp_fail "sqlite3 is missing: apt-get install sqlite3"
command -v base64 >/dev/null || bp_fail "base64 (coreutils) is missing"

# ---- 1. defaults ------------------------------------------------------------
D=$T/default
run "$D"
proxy=$(printf 'proxy:SECRET_PROXY_%s' "$TAG" | base64 -w0)
secrets="SECRET_AUTH_$TAG SECRET_COOKIE_$TAG $proxy SECRET_SETCOOKIE_$TAG SECRET_UPCOOKIE_$TAG SECRET_PGPW1_$TAG SECRET_PGPW2_$TAG"
# they crossed the wire ...
sec_present "Bearer SECRET_AUTH_$TAG|session=SECRET_COOKIE_$TAG|Basic $proxy" "$D/front.access"
sec_present "Bearer SECRET_AUTH_$TAG|session=SECRET_COOKIE_$TAG" "$D/up.access"
sec_present "SECRET_SETCOOKIE_$TAG" "$D/curl.headers"
sec_present "SECRET_UPCOOKIE_$TAG" "$D/curl.headers"
# ... the requests and queries were traced ...
sec_present "/app/item?token=SECRETQ_$TAG&id=7" "$D/targets.txt"
sec_present "ALTER ROLE pwuser PASSWORD ?" "$D/targets.txt"
sec_present "CREATE ROLE scramuser LOGIN PASSWORD ?" "$D/targets.txt"
sec_present "SELECT name FROM items WHERE name = 'alice' AND id = 42" "$D/targets.txt"
n_pg=$(grep -c "exe=.*postgres\|postgres" "$D/dump.txt" || true)
[ "$n_pg" -gt 0 ] || bp_fail "no record of the PostgreSQL server in the log"
# ... and nothing secret was recorded
for s in $secrets; do
	sec_absent "$s" "$D"/logs/*/*.btl "$D/dump.txt" "$D/paths.sql"
done
if [ "${SEC_TLS:-0}" = 1 ]; then
	# the plaintext was read: every TCP channel framed, none unreadable
	unread=$(sqlite3 "$D/paths.db" "SELECT count(*) FROM channels WHERE kind = 'tcp' AND readable = 0")
	framed=$(sqlite3 "$D/paths.db" "SELECT count(*) FROM channels WHERE kind = 'tcp' AND readable = 1")
	[ "$unread" = 0 ] && [ "$framed" -gt 0 ] ||
		bp_fail "TLS channels not read: $framed framed, $unread unreadable"
	# key material never read: no line of a private key's PEM body
	keys=0
	for k in "$T"/tls/*.key; do
		while read -r line; do
			case $line in -----*) continue ;; esac
			[ "${#line}" -ge 16 ] || continue
			sec_absent "$line" "$D"/logs/*/*.btl "$D/dump.txt" "$D/paths.sql"
			keys=$((keys + 1))
		done <"$k"
	done
	[ "$keys" -gt 0 ] || bp_fail "no key lines to look for (the test would prove nothing)"
	bp_note "TLS: $framed TCP channels read on their plaintext, none unreadable; $keys lines of the private keys in none of the files"
fi
bp_note "defaults: 7 secrets crossed the wire, none of them in $(ls "$D"/logs/*/*.btl | wc -l) segment(s), bp-dump or paths.db; $(wc -l <"$D/targets.txt") distinct span targets"

# ---- 2. the options -----------------------------------------------------------
R=$T/redact
run "$R" BTRACE_REDACT=sql-literals,query-strings
for s in $secrets "SECRETQ_$TAG" alice; do
	sec_absent "$s" "$R"/logs/*/*.btl "$R/dump.txt" "$R/paths.sql"
done
sec_present "/app/item?" "$R/targets.txt"
sec_present "SELECT name FROM items WHERE name = ? AND id = ?" "$R/targets.txt"
sec_present "CREATE TABLE items (id int, name text)" "$R/targets.txt"
sec_present "INSERT INTO items VALUES (?, ?), (?, ?)" "$R/targets.txt"
grep -q -F "SELECT name FROM items WHERE name = ? AND id = ?" "$D/targets.txt" &&
	bp_fail "literals were folded without the option"
# the wire: nginx saw the whole query string, psql the right row
sec_present "GET /app/item?token=SECRETQ_${TAG}&id=7 " "$R/front.access"
sec_present "GET /app/item?token=SECRETQ_${TAG}&id=7 " "$R/up.access"
bp_note "BTRACE_REDACT=sql-literals,query-strings: query string and literals gone from the log, unchanged on the wire"
echo "PASS: $BP_TEST"
