#!/bin/bash
# tb-nginx-gunicorn.sh - testbed 3: nginx -> gunicorn (2 workers of 8
# threads, gthread) over HTTP/1.1 keep-alive -> a Python application whose
# psycopg2 pool, shared by the threads, reuses connections across requests
# -> PostgreSQL, plus static files.  Every server traced; tb-client at
# concurrency 1, 16 and 64 with keep-alive and pipelining depth 4: every
# request's path must be exactly right (100%); the run without event
# isolation is reported.  See docs/accuracy.md.
TB_FRONT=nginx
TB_APPS=py
TB_MIX=py:8,static:2
. "$(dirname "$0")/lib.sh"
tb_init nginx-gunicorn
tb_testbed
echo "PASS: tb-nginx-gunicorn"
