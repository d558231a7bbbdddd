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
