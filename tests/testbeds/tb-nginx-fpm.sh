#!/bin/bash
# tb-nginx-fpm.sh - testbed 2: nginx (event driven, 2 workers) -> php-fpm
# over a unix socket with FastCGI keep-alive (fastcgi_keep_conn on and an
# upstream keepalive pool: requests share backend connections) ->
# PostgreSQL, plus static files.  Every server traced; tb-client at
# concurrency 1, 16 and 64 with keep-alive and pipelining depth 4: every
# request's path must be exactly right (100%); the run without event
# isolation is reported.  See docs/accuracy.md.
TB_FRONT=nginx
TB_APPS=php
TB_MIX=php:8,static:2
. "$(dirname "$0")/lib.sh"
tb_init nginx-fpm
tb_testbed
echo "PASS: tb-nginx-fpm"
