#!/bin/bash
# tb-pyclient.sh - traced Python clients (/usr/bin/python3) as the
# originators of their requests (docs/reconstruct.md, rule 5: a request
# sent for no request starts one; its client span is the root) against
# gunicorn (2 workers of 8 threads) -> PostgreSQL, all traced
# (app/tbpyclient.py, app/tbapp.py).  C threads, one keep-alive
# connection each, one request at a time: http.client.HTTPConnection
# with timeout=30 (a socket with a timeout: CPython polls before each
# send), a requests.Session() with a timeout, and the control, blocking
# sockets (no timeout); each at concurrency 1, 16 and 64.  Every request
# is classified by certainty (check-testbed.py --shape app --client
# --certainty); the test fails on any silently-WRONG or resolved-WRONG
# request.  TB_PYCLIENT_MODES picks the clients.  See docs/accuracy.md.
TB_FRONT=nginx
TB_APPS=py
: "${TB_REQUESTS:=200}"
: "${TB_PYCLIENT_MODES:=httpclient requests blocking}"
. "$(dirname "$0")/lib.sh"
TB_FRONT=none
tb_init pyclient
"$PY" -c 'import requests' 2>/dev/null ||
	bp_fail "$PY cannot import requests: apt-get install -y python3-requests"
cp "$TB_SRC/app/tbpyclient.py" "$T/app/tbpyclient.py"

# TB_PYCLIENT_VIA=nginx: the clients reach gunicorn through nginx
tb_app_start() {
	if [ "${TB_PYCLIENT_VIA:-}" = nginx ]; then
		PY_PORT=$BACK_PORT
		tb_gunicorn_start "$1" "127.0.0.9:$PY_PORT"
		tb_nginx_start "$1"
	else
		tb_gunicorn_start "$1" "127.0.0.1:$FRONT_PORT"
	fi
}
# the client, traced like the servers (PRE_APP; empty when untraced)
tb_app_client() {
	local dir=$1 conns=$2
	timeout 300 "${PRE_APP[@]}" "$PY" "$T/app/tbpyclient.py" \
		--port "$FRONT_PORT" --conns "$conns" \
		--requests "$TB_REQUESTS" --mode "$TB_PYCLIENT_MODE" \
		--max-sql 3 --truth "$dir/truth" \
		>"$dir/client.out" 2>>"$T/client.log"
}
TB_APP_STOP=gunicorn
TB_APP_CHECK="--py $PYEXE --client $PYEXE"
if [ "${TB_PYCLIENT_VIA:-}" = nginx ]; then
	TB_APP_STOP="front gunicorn"
	TB_APP_CHECK="$TB_APP_CHECK --via nginx"
fi
for TB_PYCLIENT_MODE in $TB_PYCLIENT_MODES; do
	TB_APP_LABEL="$TB_PYCLIENT_MODE "
	tb_app_runs
done
tb_app_verdict
echo "PASS: tb-pyclient"
