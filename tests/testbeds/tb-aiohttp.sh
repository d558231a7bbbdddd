#!/bin/bash
# tb-aiohttp.sh - Python asyncio as its own front: an aiohttp server
# whose handlers run 1-3 SQL statements on an asyncpg pool of 2 shared by
# every request and call an aiohttp backend through one ClientSession
# limited to 4 keep-alive connections (app/tbaio.py; Debian's
# python3-aiohttp and python3-asyncpg); tb-client drives it with
# keep-alive connections at concurrency 1, 16 and 64.  Every request is
# classified by certainty (check-testbed.py --shape app --certainty); the
# test fails on any silently-WRONG or resolved-WRONG request.  See
# docs/accuracy.md.
TB_FRONT=nginx
TB_APPS=""
: "${TB_REQUESTS:=500}"
. "$(dirname "$0")/lib.sh"
TB_FRONT=none
tb_init aiohttp
"$PY" -c 'import aiohttp, asyncpg' 2>/dev/null ||
	bp_fail "$PY cannot import aiohttp and asyncpg: apt-get install -y" \
		"python3-aiohttp python3-asyncpg"
PYEXE=$(basename "$(readlink -f "$PY")")
cp "$TB_SRC/app/tbaio.py" "$T/app/tbaio.py"

tb_app_start() {
	local dir=$1
	bp_start backend "$dir/run/backend.pid" "${PRE_APP[@]}" "$PY" \
		"$T/app/tbaio.py" backend "$BACK_PORT" "$dir/run/backend.pid"
	bp_start front "$dir/run/front.pid" env TB_PG_HOST="$T/pgsock" \
		TB_PG_PORT="$PGPORT" "${PRE_APP[@]}" "$PY" "$T/app/tbaio.py" \
		front "$FRONT_PORT" "$BACK_PORT" "$dir/run/front.pid"
}
TB_CLIENT_OPTS="--mix py:1 --max-sql 3 --calls 1"
TB_APP_CHECK="--py $PYEXE --backend $PYEXE"
tb_app_testbed
echo "PASS: tb-aiohttp"
