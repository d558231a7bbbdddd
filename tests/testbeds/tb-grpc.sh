#!/bin/bash
# tb-grpc.sh - gRPC: a grpcio client (untraced, one channel: one HTTP/2
# connection, C calls in flight, C = 1, 16, 64) -> nginx (h2c, grpc_pass,
# traced) -> a Python grpcio server (traced: the C core's threads read the
# sockets, a pool of 8 threads runs the handlers) whose handlers share a
# psycopg2 pool of 4 -> PostgreSQL (traced).  The method name is the
# request id (/tb.Svc/ID, a generic handler: no protoc), so every span of
# the path carries it: nginx's server and client http2 spans, the app's
# server http2 span, its SQL.  Every 25th call is answered NOT_FOUND
# (grpc-status 5); those are checked to end with that status, the others
# against the truth (check-testbed.py --front-proto http2 --app-proto
# http2 --method POST).  The grpcio server hands each call from the thread
# that read it to a handler thread, whose SQL the reconstructor cannot
# follow by the rules; it is decided by content when the call's gRPC
# message (protobuf: field 1 the id, field 2 the number of queries) holds
# a value the SQL carries and no other open call may.  Each run's logs are
# reconstructed three times: with the service's .proto (the client writes
# it: every method unary; bp-reconstruct --grpc-proto), with the pattern
# --grpc-unary '/tb.Svc/*', and with neither.  Named unary, a call whose
# body has not come cannot own a handler's SQL: 100% of the whole paths
# right (exact or resolved) is asserted at c=1, >= 98% at 16 and 64 (the
# rule waits for the app's other threads in the merge; below), the same
# figure by both ways of naming them.  Unnamed (the sound
# default: a streaming handler may start before its body ends), the rest
# is uncertain: >= 95% asserted at c=1 only.  Every reconstruction fails
# the test on any silently-WRONG or resolved-WRONG whole path
# (TB_GRPC_MODE=behaviour checks only what follows); what must hold
# besides is the HTTP/2 part of every path (nginx's server and client
# spans, the app's server span, one request), the error calls' status,
# and every call answered.  See docs/accuracy.md, docs/reconstruct.md
# "Unary gRPC methods".
TB_FRONT=nginx
TB_APPS=""
TB_FRONT_PROTO=http2
TB_APP_PROTO=http2
TB_METHOD=POST
: "${TB_REQUESTS:=500}"
. "$(dirname "$0")/lib.sh"
"$PY" -c 'import grpc, psycopg2' 2>/dev/null ||
	bp_fail "$PY cannot import grpc and psycopg2: apt-get install -y" \
		"python3-grpcio python3-psycopg2"
PYEXE=$(basename "$(readlink -f "$PY")")

eval "$(declare -f tb_rules | sed '1s/tb_rules/tb_rules_h1/')"
tb_rules() { echo "http2 port $FRONT_PORT,$PY_PORT; $(tb_rules_h1 "$@")"; }

# nginx: h2c on FRONT_PORT, everything to the gRPC server (keep-alive
# upstream: calls of different requests share its connections)
tb_nginx_start() {
	local dir=$1
	mkdir -p "$dir/nginx"
	cat >"$dir/nginx.conf" <<-NGINX
	daemon off;
	master_process on;
	worker_processes 2;
	user www-data www-data;
	pid $dir/run/nginx.pid;
	error_log $dir/nginx-error.log warn;
	events { worker_connections 1024; }
	http {
	    access_log off;
	$(bp_nginx_temp_paths "$dir/nginx")
	    keepalive_requests 1000000;
	    keepalive_timeout 300s;
	    http2_max_concurrent_streams 256;
	    upstream grpcapp {
	        server 127.0.0.1:$PY_PORT;
	        keepalive 4;
	    }
	    server {
	        listen 127.0.0.1:$FRONT_PORT http2;
	        location / { grpc_pass grpc://grpcapp; }
	    }
	}
	NGINX
	bp_nginx_start -n front -w NS_WEB "$dir/nginx" "$dir/nginx.conf" \
		"$dir/run/nginx.pid" "127.0.0.1:$FRONT_PORT" "${PRE_WEB[@]}"
}

tb_start_all() {
	local dir=$1
	tb_pg_start
	cp "$TB_SRC/app/tbgrpc.py" "$dir/tbgrpc.py"
	bp_start grpcapp "$dir/run/grpc.pid" env \
		TB_PG="host=$T/pgsock port=$PGPORT dbname=tb user=tb" TB_POOL=4 \
		"${PRE_APP[@]}" "$PY" "$dir/tbgrpc.py" server "$PY_PORT" \
		"$dir/run/grpc.pid"
	tb_nginx_start "$dir"
}

tb_stop_all() {
	local dir=$1 name
	bp_alive front
	bp_stop front
	bp_stop grpcapp
	bp_stop pg
	for name in front grpcapp pg logd; do
		[ -f "$T/$name.log" ] && mv "$T/$name.log" "$dir/$name.log"
		[ -f "$T/$name.out" ] && mv "$T/$name.out" "$dir/$name.out"
	done
	return 0
}

# the grpcio client, untraced (TB_GRPC_CLIENT_TRACED=1: traced): CONNS
# calls in flight on one channel
tb_client() {
	local dir=$1 conns=$2 pre=()
	[ "${TB_GRPC_CLIENT_TRACED:-0}" = 1 ] && pre=("${PRE_WEB[@]}")
	timeout 600 "${pre[@]}" "$PY" "$TB_SRC/app/tbgrpc.py" client "$FRONT_PORT" \
		"$TB_REQUESTS" "$conns" "$dir/truth" "$dir/client.out" \
		"$dir/tbgrpc.proto" 2>>"$T/client.log"
}

# the share of whole paths right (exact or resolved) check-testbed.py
# printed last for LABEL
tb_grpc_right() {
	grep -F "$1: certainty " "$T/results.txt" | tail -n 1 |
		sed -n 's/.* right \([0-9.]*\)%.*/\1/p'
}

# why the uncertain requests of run DIR are (requests.certainty_reason,
# counted), for a failure's message
tb_grpc_why() {
	"$PY" - "$1/paths.db" <<-'PYEOF'
	import sqlite3, sys
	c = sqlite3.connect(sys.argv[1])
	rows = c.execute("SELECT certainty_reason, count(*) FROM uncertain_requests"
	                 " GROUP BY 1 ORDER BY 2 DESC").fetchall()
	print("; ".join("%s: %d" % r for r in rows) or "none uncertain")
	PYEOF
}

# the error calls: nginx's server span of each ends with grpc-status 5
tb_grpc_errors() {
	local dir=$1 out
	out=$("$PY" - "$dir/paths.db" "$TB_REQUESTS" <<-'PYEOF'
	import sqlite3, sys
	c = sqlite3.connect(sys.argv[1])
	want = sum(1 for i in range(int(sys.argv[2])) if i % 25 == 24)
	rows = c.execute("SELECT s.span_id FROM spans s WHERE s.kind = 'server'"
	                 " AND s.protocol = 'http2' AND s.exe LIKE '%nginx'"
	                 " AND s.target LIKE '/tb.Svc/e%'").fetchall()
	err = c.execute("SELECT count(*) FROM attrs a JOIN spans s USING (span_id)"
	                " WHERE s.kind = 'server' AND s.protocol = 'http2' AND"
	                " s.exe LIKE '%nginx' AND s.target LIKE '/tb.Svc/e%'"
	                " AND a.key = 'error' AND a.value = 'grpc-status 5'"
	                ).fetchone()[0]
	print("error calls %d, nginx server spans %d, with grpc-status 5 %d"
	      % (want, len(rows), err))
	sys.exit(0 if want == len(rows) == err else 1)
	PYEOF
	) || bp_fail "$1: $out"
	echo "$out"
}

# the HTTP/2 part of every successful call's path, whatever its SQL: nginx's
# server span (the root; under the client's call when the client is
# traced), its client span under it, the app's server span under that, all
# in one request
tb_grpc_h2paths() {
	local dir=$1 out
	out=$("$PY" - "$dir/paths.db" "$dir/truth" "${TB_GRPC_CLIENT_TRACED:-0}" <<-'PYEOF'
	import sqlite3, sys
	c = sqlite3.connect(sys.argv[1])
	ids = [l.split('\t')[0] for l in open(sys.argv[2]) if l.strip()]
	traced = sys.argv[3] == '1'
	ok = 0
	for rid in ids:
	    rows = c.execute("SELECT span_id, parent_span_id, kind, exe, request_id"
	                     " FROM spans WHERE protocol = 'http2' AND target = ?"
	                     " ORDER BY start_ns", ('/tb.Svc/' + rid,)).fetchall()
	    top = None
	    if traced and rows and rows[0][2] == 'client' and 'python' in rows[0][3]:
	        top = rows.pop(0)
	    if len(rows) != 3 or (traced and top is None):
	        continue
	    (a, pa, ka, xa, ra), (b, pb, kb, xb, rb), (d, pd, kd, xd, rd) = rows
	    if ((pa == top[0] and top[1] is None and top[4] == ra if traced
	         else pa is None) and
	            ka == 'server' and xa.endswith('nginx') and
	            pb == a and kb == 'client' and xb.endswith('nginx') and
	            pd == b and kd == 'server' and 'python' in xd and
	            ra is not None and ra == rb == rd):
	        ok += 1
	print("http2 paths (%snginx server, nginx client, app server) right: "
	      "%d of %d" % ("the client's call, " if traced else "", ok, len(ids)))
	sys.exit(0 if ok == len(ids) else 1)
	PYEOF
	) || bp_fail "$1: $out"
	echo "$out"
	bp_note "$(basename "$1"): $out"
}

tb_init grpc
mode=${TB_GRPC_MODE:-certainty}
for c in ${TB_ISO_CONCS:-1 16 64}; do
	# the service's methods named unary by the .proto the client writes
	# (tb_client): a call whose body has not come is no candidate owner
	# of a handler's SQL, so a handler's SQL is decided by what its
	# call's gRPC message carried (docs/reconstruct.md, "Unary gRPC
	# methods"). Asserted, none wrong, and right (exact or resolved):
	# 100% at c=1; at c=16 and 64 >= TB_GRPC_NAMED_MIN (98%): the rule
	# stands aside where the log cannot show a call unstarted (another
	# thread of the app held back in the merge at the SQL's time, a
	# frame read in pieces), which a loaded machine's timing can bring
	# about; what is left then is uncertain, not wrong (one CI run: 475
	# of 480 at c=16, why not recorded; a failure now prints the reasons)
	dir=$T/run$((TB_RUN_NO + 1))
	TB_RECON_OPTS=(--grpc-proto "$dir/tbgrpc.proto")
	label="c=$c d=1 isolation"
	min=100
	[ "$c" = 1 ] || min=${TB_GRPC_NAMED_MIN:-98}
	tb_run "$c" 1 1 "$mode" "$label, --grpc-proto"
	tb_grpc_errors "$dir"
	tb_grpc_h2paths "$dir"
	pct=$(tb_grpc_right "$label, --grpc-proto")
	bp_note "$label, --grpc-proto: ${pct:-no}% of the whole paths right"
	if [ "$mode" = certainty ]; then
		awk -v p="${pct:-0}" -v m="$min" 'BEGIN { exit !(p >= m) }' ||
			bp_fail "$label, --grpc-proto: ${pct:-no}% of the whole" \
				"paths right, not >= $min%; uncertain:" \
				"$(tb_grpc_why "$dir")"
	fi
	# the same methods named by a pattern: the same share right on the
	# same logs
	TB_RECON_OPTS=(--grpc-unary '/tb.Svc/*')
	tb_recon "$dir" "$label, --grpc-unary" "$mode"
	pct2=$(tb_grpc_right "$label, --grpc-unary")
	bp_note "$label, --grpc-unary: ${pct2:-no}% of the whole paths right"
	if [ "$mode" = certainty ] && [ "${pct2:-x}" != "${pct:-y}" ]; then
		bp_fail "$label: --grpc-unary gave ${pct2:-no}% of the whole" \
			"paths right, --grpc-proto ${pct:-no}% on the same logs;" \
			"uncertain: $(tb_grpc_why "$dir")"
	fi
	# the same logs without the methods named (the sound default: a
	# streaming handler may start before its body ends): never wrong, the
	# rest uncertain; one call at a time still all decided by content
	# (asserted >= 95%, 100% in every run seen)
	TB_RECON_OPTS=()
	tb_recon "$dir" "$label, unnamed" "$mode"
	pct=$(tb_grpc_right "$label, unnamed")
	bp_note "$label, methods not named: ${pct:-no}% of the whole paths right"
	if [ "$c" = 1 ] && [ "$mode" = certainty ]; then
		awk -v p="${pct:-0}" 'BEGIN { exit !(p >= 95) }' ||
			bp_fail "c=1, unnamed: ${pct:-no}% of the whole paths" \
				"right, not >= 95% (content: the calls' gRPC values)"
	fi
done
echo "PASS: tb-grpc"
