#!/bin/bash
# tb-node.sh - Node.js (v20, /usr/bin/node) as its own front: an HTTP
# server whose handlers run 1-3 SQL statements through a pg.Pool of 4
# connections shared by every request and call a node backend through a
# keep-alive http.Agent of 4 sockets (app/tbnode.js); tb-client drives it
# with keep-alive connections at concurrency 1, 16 and 64.  Every request
# is classified by certainty (check-testbed.py --shape app --certainty);
# the test fails on any silently-WRONG or resolved-WRONG request, and
# when no statement whose only value is a bound parameter (the INSERT)
# was ever resolved by content (the parameters' hashes).  `pg`
# comes from the npm registry, pinned, installed once into the build tree.
# See docs/accuracy.md.
TB_FRONT=nginx
TB_APPS=""
: "${TB_REQUESTS:=500}"
. "$(dirname "$0")/lib.sh"
TB_FRONT=none
PG_VERSION=8.23.1
NODE=/usr/bin/node
NPM_DIR=$top_builddir/tests/testbeds/npm-pg-$PG_VERSION

tb_need "$NODE" nodejs
tb_need npm npm
tb_init node
"$NODE" -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' ||
	bp_fail "$NODE is $("$NODE" --version), want v20 or later"
if [ "$("$PY" -c 'import json, sys; print(json.load(sys.stdin)["version"])' \
	<"$NPM_DIR/node_modules/pg/package.json" 2>/dev/null)" != "$PG_VERSION" ]
then
	timeout 300 npm install --prefix "$NPM_DIR" --no-audit --no-fund \
		"pg@$PG_VERSION" >"$T/npm.log" 2>&1 ||
		bp_fail "npm install pg@$PG_VERSION failed: $(tail -n 5 "$T/npm.log")"
fi
cp "$TB_SRC/app/tbnode.js" "$T/app/tbnode.js"

tb_app_start() {
	local dir=$1
	bp_start backend "$dir/run/backend.pid" "${PRE_APP[@]}" "$NODE" \
		"$T/app/tbnode.js" backend "$BACK_PORT" "$dir/run/backend.pid"
	bp_start front "$dir/run/front.pid" env \
		NODE_PATH="$NPM_DIR/node_modules" TB_PG_HOST="$T/pgsock" \
		TB_PG_PORT="$PGPORT" "${PRE_APP[@]}" "$NODE" \
		"$T/app/tbnode.js" front "$FRONT_PORT" "$BACK_PORT" \
		"$dir/run/front.pid"
}
TB_CLIENT_OPTS="--mix py:1 --max-sql 3 --calls 1"
TB_APP_CHECK="--py node --backend node"
tb_app_runs
bound=0
for db in "$T"/run*/paths.db; do
	[ -f "$db" ] || continue
	n=$(sqlite3 "$db" "SELECT count(*) FROM spans WHERE kind = 'client'
		AND protocol = 'postgresql' AND target LIKE 'INSERT%'
		AND certainty_reason = 'handoff:content'")
	bp_note "$(basename "$(dirname "$db")"): $n INSERT spans resolved by their bound parameter"
	bound=$((bound + n))
done
[ "$bound" -gt 0 ] || bp_fail "no statement resolved by its bound" \
	"parameter (BT_AK_PARAMS): see docs/reconstruct.md"
tb_app_verdict
echo "PASS: tb-node"
