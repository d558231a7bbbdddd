#!/bin/bash
# tb-dns-cgi.sh - testbed 4: name lookups and process creation.  In a
# network namespace with its own resolver (dnsmasq on 127.0.0.1:53, not
# traced), nginx serves
#   /app.php     php-fpm: SQL, then gethostbyname("r-ID.test") (glibc:
#                traced at the API level)
#   /py/app      gunicorn: SQL, then getaddrinfo("r-ID.test")
#   /pyr/app     the same application at http://r-ID.test:PORT: nginx
#                resolves the name itself (its own UDP DNS, traced by the
#                DNS processor, reply matched by witness)
#   /cgi-bin/    fcgiwrap forks and execs a shell CGI, which runs psql
#                (its SQL) and getent (the lookup): the path crosses
#                fork and exec three times
#   /static/     files
# Every server traced; concurrency 1, 16 and 64 with keep-alive and
# pipelining depth 4 must give 100% right paths; the run without event
# isolation is reported.  See docs/accuracy.md.
TB_FRONT=nginx
TB_APPS="php py cgi"
TB_MIX=php:3,py:2,pyr:3,cgi:1,static:1
TB_DNS=1
. "$(dirname "$0")/lib.sh"
tb_init dns-cgi
tb_testbed
echo "PASS: tb-dns-cgi"
