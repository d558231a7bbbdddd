#!/bin/bash
# tb-mariadb.sh - a threaded Python server (/usr/bin/python3,
# http.server.ThreadingHTTPServer, a thread per client connection) as its
# own front, its SQL on a pool of 4 pymysql connections shared by every
# thread, to mariadbd (mariadb-install-db and mariadbd from Debian, run by
# hand as root in the test's directory on a unix socket, never as a
# service): each request runs 1-3 statements, text queries (COM_QUERY)
# and server-side prepared statements (COM_STMT_PREPARE, COM_STMT_EXECUTE,
# COM_STMT_CLOSE), the request's id in each (app/tbmyfront.py).  Both the
# front and mariadbd are traced; mariadbd reads the next command on a
# pooled connection without polling first, so the mysql processor's
# framing must make each command its own fragment.  tb-client drives it
# with keep-alive connections at concurrency 1, 16 and 64; every request
# is classified by certainty (check-testbed.py --shape app --certainty);
# the test fails on any silently-WRONG or resolved-WRONG request.
# mariadbd runs with each --thread-handling of TB_MY_MODES (default both:
# one-thread-per-connection, a thread per connection, blocking reads; and
# pool-of-threads, its thread pool: epoll with EPOLLONESHOT, worker
# threads taking whichever connection is ready, which failed while the
# shim reported a connection a second time to a second worker:
# docs/accuracy.md, "MariaDB").  See docs/accuracy.md.
TB_FRONT=nginx
TB_APPS=""
TB_DB=mariadb
: "${TB_REQUESTS:=1000}"
: "${TB_MY_MODES:=one-thread-per-connection pool-of-threads}"
. "$(dirname "$0")/lib.sh"
TB_FRONT=none
tb_init mariadb
PYEXE=$(basename "$(readlink -f "$PY")")
cp "$TB_SRC/app/tbmyfront.py" "$TB_SRC/app/tbserve.py" "$T/app/"

tb_app_start() {
	local dir=$1
	bp_start front "$dir/run/front.pid" env \
		TB_MY_SOCKET="$T/my/mysqld.sock" TB_MY_DB=tb TB_POOL=4 \
		"${PRE_APP[@]}" "$PY" "$T/app/tbmyfront.py" "$FRONT_PORT" \
		"$dir/run/front.pid"
}
TB_APP_STOP="front"
TB_CLIENT_OPTS="--mix py:1 --max-sql 3"
TB_APP_CHECK="--py $PYEXE --db-exe mariadbd"
for TB_MY_THREADS in $TB_MY_MODES; do
	TB_APP_LABEL="$TB_MY_THREADS "
	tb_app_runs
done
tb_app_verdict
echo "PASS: tb-mariadb"
