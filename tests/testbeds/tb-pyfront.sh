#!/bin/bash
# tb-pyfront.sh - a threaded Python server (/usr/bin/python3,
# http.server.ThreadingHTTPServer, a thread per client connection) as its
# own front: each request runs 1-3 SQL statements on a psycopg2
# connection from a pool of 4 shared by every thread, then calls a
# Python backend (the same program) on a connection from a pool of 4
# keep-alive connections shared by every thread, so a call goes out on a
# connection another request used last (app/tbpyfront.py).  The pool
# holds http.client.HTTPConnection(timeout=30) (a socket with a timeout:
# CPython polls for POLLOUT before each send), or is a requests.Session()
# with timeout=30, or, the control, http.client without a timeout
# (blocking sockets); tb-client drives it with keep-alive connections at
# concurrency 1, 16 and 64.  Every request is classified by certainty
# (check-testbed.py --shape app --certainty); the test fails on any
# silently-WRONG or resolved-WRONG request.  TB_PYFRONT_MODES picks the
# pools; TB_PRECONNECT=1 opens http.client's connections at start, for no
# request, instead of in the first request that uses each.  See
# docs/accuracy.md.
TB_FRONT=nginx
TB_APPS=""
: "${TB_REQUESTS:=500}"
: "${TB_PYFRONT_MODES:=httpclient requests blocking}"
. "$(dirname "$0")/lib.sh"
TB_FRONT=none
tb_init pyfront
"$PY" -c 'import psycopg2, requests' 2>/dev/null ||
	bp_fail "$PY cannot import psycopg2 and requests: apt-get install -y" \
		"python3-psycopg2 python3-requests"
PYEXE=$(basename "$(readlink -f "$PY")")
cp "$TB_SRC/app/tbpyfront.py" "$TB_SRC/app/tbserve.py" "$T/app/"

tb_app_start() {
	local dir=$1
	bp_start backend "$dir/run/backend.pid" "${PRE_APP[@]}" "$PY" \
		"$T/app/tbpyfront.py" backend "$BACK_PORT" "$dir/run/backend.pid"
	bp_start front "$dir/run/front.pid" env \
		TB_PG="host=$T/pgsock port=$PGPORT dbname=tb user=tb" \
		TB_POOL=4 "${PRE_APP[@]}" "$PY" "$T/app/tbpyfront.py" front \
		"$FRONT_PORT" "$BACK_PORT" "$dir/run/front.pid" "$TB_PYFRONT_MODE"
}
TB_CLIENT_OPTS="--mix py:1 --max-sql 3 --calls 1"
TB_APP_CHECK="--py $PYEXE --backend $PYEXE"
for TB_PYFRONT_MODE in $TB_PYFRONT_MODES; do
	TB_APP_LABEL="$TB_PYFRONT_MODE "
	tb_app_runs
done
tb_app_verdict
echo "PASS: tb-pyfront"
