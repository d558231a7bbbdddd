#!/bin/bash
# tb-redis.sh - a threaded Python server (/usr/bin/python3,
# http.server.ThreadingHTTPServer, a thread per client connection) as its
# own front, its requests sharing one redis-py BlockingConnectionPool of 4
# connections to a redis-server started by hand in the test's directory
# (no persistence, loopback): each request runs GET, SET and INCR, one
# pipeline of three commands (one write) and one MULTI/EXEC transaction
# (one write), the request's id in every key (app/tbredis.py).  The front
# and redis-server are traced; tb-client drives the front with keep-alive
# connections at concurrency 1, 16 and 64.  Every request is classified
# by certainty (check-testbed.py --shape app --certainty): its spans must
# be the front's server span, under it one client redis span per command
# in the order sent ("GET tb:ID:a", ..., "MULTI", "INCRBY tb:ID:m",
# "EXPIRE tb:ID:m", "EXEC": redis-py sends INCR as INCRBY), each with
# redis-server's server span of the same target under it; the test
# fails on any silently-WRONG or resolved-WRONG request.  See
# docs/accuracy.md.
TB_FRONT=nginx
TB_APPS=""
: "${TB_REQUESTS:=500}"
. "$(dirname "$0")/lib.sh"
TB_FRONT=none
tb_init redis
REDIS_SERVER=$(command -v redis-server) ||
	bp_fail "redis-server is missing: apt-get install -y redis-server"
"$PY" -c 'import redis' 2>/dev/null ||
	bp_fail "$PY cannot import redis: apt-get install -y python3-redis"
PYEXE=$(basename "$(readlink -f "$PY")")
# the executable the kernel runs (Debian's redis-server is a symlink)
REDISEXE=$(basename "$(readlink -f "$REDIS_SERVER")")
cp "$TB_SRC/app/tbredis.py" "$TB_SRC/app/tbserve.py" "$T/app/"

# tb_redis_run CONNS [untraced]: one run (tb_app_run with redis-server in
# place of PostgreSQL): a fresh bp-logd, redis-server and the front
# traced, the load, everything stopped, bp-reconstruct, check-testbed.py.
tb_redis_run() {
	local conns=$1 how=${2:-traced} dir rc label name
	TB_RUN_NO=$((TB_RUN_NO + 1))
	dir=$T/run$TB_RUN_NO
	mkdir -p "$dir/run" "$dir/redis"
	chmod 755 "$dir"
	label="c=$conns $how"
	bp_free_port FRONT_PORT
	bp_free_port REDIS_PORT
	PRE_APP=()
	if [ "$how" = traced ]; then
		bp_logd_start "$dir"
		bp_trace_prefix "$BP_LOGD_SOCK" "http port $FRONT_PORT;
			redis port $REDIS_PORT" 1
		PRE_APP=("${BP_PREFIX[@]}")
	fi
	local t0=$SECONDS
	bp_start redis "$dir/run/redis.pid" "${PRE_APP[@]}" "$REDIS_SERVER" \
		--port "$REDIS_PORT" --bind 127.0.0.1 --save '' \
		--appendonly no --dir "$dir/redis" --daemonize no \
		--pidfile "$dir/run/redis.pid" --logfile "$dir/redis/log"
	bp_start front "$dir/run/front.pid" env TB_POOL=4 "${PRE_APP[@]}" \
		"$PY" "$T/app/tbredis.py" "$FRONT_PORT" "$REDIS_PORT" \
		"$dir/run/front.pid"
	# shellcheck disable=SC2086
	timeout 300 "$TB_CLIENT" --host 127.0.0.1 --port "$FRONT_PORT" \
		--conns "$conns" --pipeline 1 --requests "$TB_REQUESTS" \
		--mix py:1 --max-sql 0 --truth "$dir/truth" \
		>"$dir/client.out" 2>>"$T/client.log"
	rc=$?
	bp_note "$label: $(tail -n 1 "$dir/client.out" 2>/dev/null) ($((SECONDS - t0)) s)"
	for name in front redis; do
		bp_alive "$name"
		bp_stop "$name"
	done
	[ "$how" = traced ] && bp_stop logd
	for name in front redis logd; do
		[ -f "$T/$name.log" ] && mv "$T/$name.log" "$dir/$name.log"
		[ -f "$T/$name.out" ] && mv "$T/$name.out" "$dir/$name.out"
	done
	[ "$rc" = 0 ] || bp_fail "$label: the client failed (status $rc):" \
		"$(tail -n 5 "$T/client.log")"
	[ -s "$dir/truth" ] || bp_fail "$label: the client wrote no truth"
	[ "$how" = traced ] || return 0
	timeout 300 "$BP_RECONSTRUCT" "$dir/logs" -o "$dir/paths.db" \
		>"$dir/reconstruct.out" 2>"$dir/reconstruct.log" ||
		bp_fail "bp-reconstruct failed (status $?) on $dir/logs:" \
			"$(tail -n 3 "$dir/reconstruct.log")"
	[ -s "$dir/paths.db" ] || bp_fail "bp-reconstruct wrote no $dir/paths.db"
	"$PY" "$TB_SRC/check-testbed.py" --truth "$dir/truth" \
		--db "$dir/paths.db" --label "$BP_TEST: $label" --shape app \
		--certainty --py "$PYEXE" --redis "$REDISEXE" \
		--explain "$TB_EXPLAIN" | tee -a "$T/results.txt"
	case ${PIPESTATUS[0]} in
	0) ;;
	1) TB_APP_BAD+=("$label") ;;
	*) bp_fail "$label: check-testbed.py could not check the run" ;;
	esac
}

concs=${TB_APP_CONCS:-1 16 64}
tb_redis_run "${concs##* }" untraced
for c in $concs; do
	tb_redis_run "$c"
done
tb_app_verdict
echo "PASS: tb-redis"
