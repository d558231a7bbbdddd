#!/bin/bash
# tb-nginx-tls.sh - testbed 2 encrypted (issue 12): nginx serving HTTPS
# (OpenSSL, a self-signed certificate made at test time) -> php-fpm over a
# unix socket with FastCGI keep-alive -> PostgreSQL with ssl = on, PHP's
# libpq connecting over TCP with sslmode=require (SSLRequest, then TLS),
# plus static files.  Every server traced; tb-client --tls at concurrency
# 1, 16 and 64 with keep-alive and pipelining depth 4: every request's
# path must be exactly right (100%), as in tb-nginx-fpm.sh, read on the
# plaintext that libbtrace takes at SSL_read/SSL_write (docs/libbtrace.md,
# "TLS").  Each run must also show the encrypted channels framed: the
# HTTPS channels nginx accepted read as http and the PostgreSQL channels
# (both ends) as postgresql, none unreadable, and SQL spans that carry
# the statements.  The run without event isolation is reported.
TB_FRONT=nginx
TB_APPS=php
TB_MIX=php:8,static:2
TB_TLS=1
. "$(dirname "$0")/lib.sh"
tb_init nginx-tls

# tb_tls_check DIR: the encrypted channels of run DIR were read.
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

for c in ${TB_ISO_CONCS:-1 16 64}; do
	tb_run "$c" 4 1 assert
	tb_tls_check "$T/run$TB_RUN_NO"
done
if [ "${TB_NOISO_CONCS:-}" != none ]; then
	for c in ${TB_NOISO_CONCS:-64}; do
		tb_run "$c" 4 0 certainty
	done
fi
echo "PASS: tb-nginx-tls"
