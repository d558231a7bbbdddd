#!/bin/bash
# tb-apache-event.sh - testbed 1 with apache's event MPM: apache2 ->
# mod_proxy_fcgi (a FastCGI connection per request) -> php-fpm -> PostgreSQL
# (the paper's dearinter.net shape), plus static files.  Every server
# traced; tb-client at concurrency 1, 16 and 64 with keep-alive and
# pipelining depth 4: every request's path must be exactly right (100%);
# the run without event isolation is reported.  See docs/accuracy.md.
TB_FRONT=apache
TB_MPM=event
TB_APPS=php
TB_MIX=php:8,static:2
. "$(dirname "$0")/lib.sh"
tb_init apache-event
tb_testbed
echo "PASS: tb-apache-event"
