#!/bin/bash
# tb-apache-tls.sh - testbed 1 encrypted (issue 12): apache2 with the
# event MPM serving HTTPS through mod_ssl (OpenSSL, whose BIOs are
# apache's own: the shim learns each session's socket from its
# handshake) -> php-fpm -> PostgreSQL with ssl = on, PHP connecting with
# sslmode=require.  The same runs and checks as tb-nginx-tls.sh.
TB_FRONT=apache
TB_MPM=event
TB_APPS=php
TB_MIX=php:8,static:2
TB_TLS=1
. "$(dirname "$0")/lib.sh"
tb_init apache-tls
for c in ${TB_ISO_CONCS:-1 16 64}; do
	tb_run "$c" 4 1 assert
	tb_tls_check "$T/run$TB_RUN_NO"
done
if [ "${TB_NOISO_CONCS:-}" != none ]; then
	for c in ${TB_NOISO_CONCS:-64}; do
		tb_run "$c" 4 0 certainty
	done
fi
echo "PASS: tb-apache-tls"
