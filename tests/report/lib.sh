# tests/report/lib.sh - shared by the report and export tests (bash).
#
#   rp_init NAME       temporary directory $T (kept with BP_KEEP=1), trap
#   rp_fail MESSAGE    print, exit 1
#   rp_node            NODE_PATH and PROTO_DIR for otlp-check.js: protobufjs
#                      and the OpenTelemetry .proto files, installed once
#                      from the npm registry into $top_builddir/tests/report/node
#                      (exits 77, skipped, only when node itself is missing)
#   rp_check_otlp FILE [--traces N --spans N --errors N]
#   rp_check_perfetto DB FILE
#   rp_check_dot DIR   every .dot file renders with dot -Tsvg
#   rp_recon LABEL ARGS...  bp-reconstruct ARGS, bounded (180 s); sets RC,
#                      ERR (its stderr, $T/LABEL.err) and SECS
#   rp_usage LOGDIR WANT ARGS...  bp-reconstruct LOGDIR -o $T/usage.db ARGS
#                      must be a usage error (exit 1) saying WANT, and
#                      write nothing
#   rp_stop_follow PID SIGINT to bp-reconstruct --follow, bounded wait;
#                      FRC its exit status
#   (temporary directory, trap, failing: tests/lib/core.sh)
# shellcheck source=../lib/core.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/core.sh"
RP_DIR=$top_srcdir/tests/report
RECON=$top_builddir/bp-reconstruct
REPORT=$top_builddir/bp-report
DEMOLOG=$top_builddir/tests/report/demolog
GENLOG=$top_builddir/tests/recon/genlog

rp_fail() {
	BP_TEST=$RP_TEST bp_fail "$@"
}

rp_init() {
	RP_TEST=$1
	bp_setup "$1"
	for p in "$RECON" "$REPORT" "$DEMOLOG" "$GENLOG"; do
		[ -x "$p" ] || rp_fail "$p is not built (run make check)"
	done
	command -v sqlite3 >/dev/null || rp_fail "no sqlite3 command (apt-get install sqlite3)"
	[ -x "$PY" ] || rp_fail "$PY is missing (apt-get install python3)"
}

# The pinned versions: protobufjs, and the last release of
# @opentelemetry/otlp-grpc-exporter-base that ships the .proto files
# (opentelemetry-proto with ScopeSpans and TracesData).
RP_PROTOBUFJS=protobufjs@7.4.0
RP_PROTOS=@opentelemetry/otlp-grpc-exporter-base@0.38.0

rp_node() {
	local dir=$top_builddir/tests/report/node tgz
	if ! command -v node >/dev/null; then
		echo "SKIP: $RP_TEST: no node (apt-get install nodejs npm)"
		exit 77
	fi
	mkdir -p "$top_builddir/tests/report" || rp_fail "mkdir $top_builddir/tests/report"
	# Tests run in parallel (make -j): one installs, the others wait.
	exec 9>"$top_builddir/tests/report/node.lock"
	flock -w 600 9 || rp_fail "waited 10 minutes for $top_builddir/tests/report/node.lock"
	if [ ! -f "$dir/ready" ]; then
		command -v npm >/dev/null || rp_fail "no npm to install protobufjs (apt-get install npm)"
		rm -rf "$dir"
		mkdir -p "$dir" || rp_fail "mkdir $dir"
		(cd "$dir" &&
			timeout 300 npm install --no-audit --no-fund --ignore-scripts \
				--loglevel=error --prefix . "$RP_PROTOBUFJS" >npm.log 2>&1 &&
			tgz=$(timeout 300 npm pack --silent "$RP_PROTOS" 2>>npm.log | tail -n 1) &&
			tar xzf "$tgz" package/build/protos && rm -f "$tgz") ||
			rp_fail "installing $RP_PROTOBUFJS and $RP_PROTOS from the npm registry failed (see $dir/npm.log)"
		touch "$dir/ready"
	fi
	exec 9>&-
	export NODE_PATH=$dir/node_modules
	PROTO_DIR=$dir/package/build/protos
	[ -f "$PROTO_DIR/opentelemetry/proto/trace/v1/trace.proto" ] ||
		rp_fail "$PROTO_DIR has no trace.proto: remove $dir and rerun"
}

rp_recon() {
	local label=$1 t0
	shift
	t0=$(date +%s.%N)
	timeout 180 "$RECON" "$@" 2>"$T/$label.err"
	RC=$?
	SECS=$(echo "$(date +%s.%N) - $t0" | bc)
	ERR=$T/$label.err
	[ "$RC" = 124 ] && rp_fail "$label: bp-reconstruct did not finish in 180 s"
	return 0
}

rp_usage() {
	local logs=$1 want=$2
	shift 2
	rp_recon usage "$logs" -o "$T/usage.db" "$@"
	[ "$RC" = 1 ] || rp_fail "$* did not exit 1 (exit $RC)"
	grep -qF -e "$want" "$ERR" || rp_fail "$*: $(cat "$ERR")"
	[ -e "$T/usage.db" ] && rp_fail "$*: a usage error wrote the database"
	return 0
}

rp_check_otlp() {
	node "$RP_DIR/otlp-check.js" "$PROTO_DIR" "$@" || rp_fail "OTLP check of $1"
}

rp_check_perfetto() {
	local db=$1 file=$2 spans flows procs
	spans=$(sqlite3 "$db" "SELECT COUNT(*) FROM spans WHERE process_id IS NOT NULL")
	flows=$(sqlite3 "$db" "SELECT COUNT(*) FROM messages r JOIN messages o ON o.message_id = r.peer_message_id WHERE r.dir = 'in' AND r.span_id IS NOT NULL AND o.span_id IS NOT NULL")
	procs=$(sqlite3 "$db" "SELECT COUNT(*) FROM processes")
	"$PY" "$RP_DIR/perfetto-check.py" "$file" --spans "$spans" --flows "$flows" \
		--processes "$procs" || rp_fail "Perfetto check of $file"
}

rp_check_dot() {
	local f n=0
	command -v dot >/dev/null || rp_fail "no dot (apt-get install graphviz)"
	for f in "$1"/*.dot; do
		[ -e "$f" ] || rp_fail "no .dot file in $1"
		timeout 60 dot -Tsvg "$f" -o "$f.svg" 2>"$f.err" ||
			rp_fail "dot -Tsvg $f: $(cat "$f.err")"
		[ -s "$f.err" ] && rp_fail "dot -Tsvg $f warned: $(cat "$f.err")"
		grep -q '<svg' "$f.svg" || rp_fail "dot -Tsvg $f made no SVG"
		n=$((n + 1))
	done
	echo "$RP_TEST: $n DOT files render with dot -Tsvg"
}

# rp_rx NAME [OPTIONS]: start an OTLP receiver (otlp-receiver.js) in
# $T/NAME; RX is its URL, RX_PID its process.  rp_stop_rx stops it.
rp_rx() {
	local d=$T/$1
	shift
	mkdir -p "$d" || rp_fail "mkdir $d"
	node "$RP_DIR/otlp-receiver.js" "$PROTO_DIR" "$d" "$@" >"$d/log" 2>&1 &
	RX_PID=$!
	bp_track "$RX_PID"
	bp_wait_for "the receiver in $d" 150 test -s "$d/port"
	RX=http://127.0.0.1:$(cat "$d/port")
}

rp_stop_rx() {
	bp_kill TERM "$RX_PID"
	wait "$RX_PID" 2>/dev/null    # it exits on TERM; the port is closed after
}

# rp_stop_follow PID: SIGINT to bp-reconstruct --follow PID (its last
# pass), wait for it (60 s at most); its exit status in FRC.
rp_stop_follow() {
	local i=0
	kill -INT "$1"
	while kill -0 "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 600 ] || rp_fail "--follow did not stop 60 s after SIGINT"
		sleep 0.1
	done
	wait "$1"
	FRC=$?
}

# rp_until_db DB PID ERRFILE SQL WANT: until SQL on DB (written by
# bp-reconstruct --follow, process PID, stderr in ERRFILE) answers WANT;
# fails after 30 s or when PID is gone.
rp_until_db() {
	local i=0 got
	while got=$(sqlite3 "$1" "$4" 2>/dev/null); [ "$got" != "$5" ]; do
		i=$((i + 1))
		[ $i -le 300 ] || rp_fail "$1: after 30 s, '$4' is '$got', not '$5': $(tail -n 3 "$3")"
		kill -0 "$2" 2>/dev/null || rp_fail "bp-reconstruct --follow ended: $(tail -n 3 "$3")"
		sleep 0.1
	done
}
