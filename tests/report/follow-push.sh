#!/bin/bash
# follow-push.sh - bp-reconstruct --follow --otlp-endpoint against a real
# OTLP/HTTP receiver (otlp-receiver.js), every span checked against the
# live database (otlp-push-check.py):
#   1. three hosts' logs, a receiver that takes everything: each request
#      pushed once a later pass found it unchanged; --follow killed
#      (SIGKILL) after the push and started again: nothing is sent twice;
#   2. a receiver that answers 503 to its first three requests, no
#      retries within a push: the requests wait for the next passes and
#      all arrive once, with a warning per failed pass;
#   3. the application host's logs before the front's: its requests are
#      pushed, then withdrawn when the front's logs show whose they are;
#      the summary says how many the receiver holds that no longer exist;
#   4. as 3, with full passes in the background racing the window passes:
#      nothing withdrawn comes back, nothing is pushed twice (with the
#      full pass's rules taken out: 400 withdrawn instead of 200);
#   5. one host whose database process's records of its last 100
#      requests come late (as a php-fpm child's drained after nginx's):
#      a. a connection per query: the requests are peer-not-logged
#         (uncertain) in PATHS.db and wait for the sink, then pushed
#         once, whole (with --follow-hold=0.001, as before it: 100 pushed
#         without their database part, exact, then revised);
#      b. persistent connections: unlogged-send, waiting the same way;
#      c. as a, the records never come: after --follow-hold (2 s) the
#         peer counts as untraced, as offline, and each request is
#         pushed once;
#      d. three hosts, the front's records late: the application's
#         requests (unlogged-send) are held, then withdrawn unpushed.
. "$(dirname "$0")/lib.sh"
rp_init follow-push
rp_node

rx() { rp_rx "$@"; }
stop_rx() { rp_stop_rx; }

# follow LABEL ARGS...: --follow on $T/live-LABEL into $T/LABEL.db, in
# the background (FPID); stderr appended to $T/LABEL.err
follow() {
	local label=$1
	shift
	"$RECON" --follow --follow-interval=0.2 --follow-grace=0.1 \
		"$T/live-$label" -o "$T/$label.db" "$@" 2>>"$T/$label.err" &
	FPID=$!
	bp_track "$FPID"
}

# until_db LABEL SQL WANT: until SQL on $T/LABEL.db answers WANT (30 s)
until_db() {
	rp_until_db "$T/$1.db" "$FPID" "$T/$1.err" "$2" "$3"
}

# stop_follow: SIGINT, its exit status in FRC (bounded: 60 s)
stop_follow() { rp_stop_follow "$FPID"; }

check() {
	"$PY" "$RP_DIR/otlp-push-check.py" "$@" || rp_fail "the spans received do not match $1"
}

summary() {   # summary LABEL TEXT: the push's summary line says TEXT
	grep -q "^bp-reconstruct: OTLP push: .*; requests: $2\$" "$T/$1.err" ||
		rp_fail "$1: no summary 'requests: $2' in: $(grep 'OTLP push' "$T/$1.err")"
}

"$GENLOG" -3 -n 200 -w 4 "$T/three" >/dev/null || rp_fail "genlog"

# 1. all three hosts at once; killed after the push, started again
rx ok
mkdir -p "$T/live-ok"
follow ok --otlp-endpoint "$RX" --otlp-batch 300
cp -r "$T/three/front" "$T/three/app" "$T/three/db" "$T/live-ok/"
until_db ok "SELECT count(*) FROM follow_requests WHERE pushed = 1" 200
bp_kill KILL "$FPID"
wait "$FPID" 2>/dev/null
follow ok --otlp-endpoint "$RX" --otlp-batch 300
# a pass of the new process (the stats of the killed one are still there)
until_db ok "SELECT value FROM stats WHERE key = 'follow_pid'" "$FPID"
stop_follow
[ "$FRC" = 0 ] || rp_fail "1: exit status $FRC: $(tail -n 3 "$T/ok.err")"
summary ok "200 sent, 0 sent then revised, 0 in part, 0 not sent, 0 sent then withdrawn"
[ "$(sqlite3 "$T/ok.db" 'SELECT count(*) FROM requests')" = 200 ] || rp_fail "1: not 200 requests"
check "$T/ok.db" "$T/ok/batches.jsonl"
bp_note "1: 200 requests, 1000 spans pushed once each across a SIGKILL and a restart"
stop_rx

# 2. 503 three times, no retries within a push: later passes push them
rx busy --fail 3 --fail-status 503
mkdir -p "$T/live-busy"
follow busy --otlp-endpoint "$RX" --otlp-batch 100000 --otlp-retries 0
cp -r "$T/three/front" "$T/three/app" "$T/three/db" "$T/live-busy/"
until_db busy "SELECT count(*) FROM follow_requests WHERE pushed = 1" 200
stop_follow
[ "$FRC" = 0 ] || rp_fail "2: exit status $FRC: $(tail -n 3 "$T/busy.err")"
summary busy "200 sent, 0 sent then revised, 0 in part, 0 not sent, 0 sent then withdrawn"
[ "$(grep -c 'the requests wait for the next pass' "$T/busy.err")" -ge 1 ] ||
	rp_fail "2: no warning that the requests wait: $(cat "$T/busy.err")"
[ "$(grep -c '"status":503' "$T/busy/requests.jsonl")" = 3 ] ||
	rp_fail "2: not three 503 answers: $(cat "$T/busy/requests.jsonl")"
check "$T/busy.db" "$T/busy/batches.jsonl"
bp_note "2: three refusals (503), then all 1000 spans once each"
stop_rx

# 3. the application host first: its requests are pushed as their own,
# then withdrawn once the front's logs show they are the front's
rx late
mkdir -p "$T/live-late"
follow late --otlp-endpoint "$RX"
cp -r "$T/three/app" "$T/live-late/"
until_db late "SELECT count(*) FROM follow_requests WHERE pushed = 1" 200
cp -r "$T/three/front" "$T/three/db" "$T/live-late/"
until_db late "SELECT value FROM stats WHERE key = 'follow_withdrawn'" 200
until_db late "SELECT count(*) FROM follow_requests WHERE pushed = 1" 200
stop_follow
[ "$FRC" = 0 ] || rp_fail "3: exit status $FRC: $(tail -n 3 "$T/late.err")"
summary late "200 sent, 0 sent then revised, 0 in part, 0 not sent, 200 sent then withdrawn"
check "$T/late.db" "$T/late/batches.jsonl" --extra 400
bp_note "3: 200 requests pushed, 200 pushed before their front's logs came and withdrawn (said so)"
stop_rx

# 4. as 3, with a full pass in the background started every 0.1 s (its
# child ends 0.6 s late: BP_FOLLOW_FULL_DELAY) and a pass every 0.05 s:
# full passes that read the logs before the front came end after window
# passes withdrew the application's requests, and must neither bring
# them back nor push anything twice
rx bg
mkdir -p "$T/live-bg"
BP_FOLLOW_FULL_DELAY=0.6 follow bg --otlp-endpoint "$RX" --follow-full=0.1 \
	--follow-full-share=0
(i=0; while [ $i -lt 1200 ]; do : >"$T/live-bg/wake"; sleep 0.05; i=$((i + 1)); done) &
WAKER=$!
bp_track "$WAKER"
cp -r "$T/three/app" "$T/live-bg/"
until_db bg "SELECT count(*) FROM follow_requests WHERE pushed = 1" 200
until_db bg "SELECT value >= 2 FROM stats WHERE key = 'follow_full_background'" 1
sleep 0.4
cp -r "$T/three/front" "$T/three/db" "$T/live-bg/"
until_db bg "SELECT value FROM stats WHERE key = 'follow_withdrawn'" 200
until_db bg "SELECT count(*) FROM follow_requests WHERE pushed = 1" 200
n=$(sqlite3 "$T/bg.db" "SELECT value FROM stats WHERE key = 'follow_full_background'")
until_db bg "SELECT value >= $((n + 2)) FROM stats WHERE key = 'follow_full_background'" 1
kill "$WAKER" 2>/dev/null
wait "$WAKER" 2>/dev/null
stop_follow
[ "$FRC" = 0 ] || rp_fail "4: exit status $FRC: $(tail -n 3 "$T/bg.err")"
summary bg "200 sent, 0 sent then revised, 0 in part, 0 not sent, 200 sent then withdrawn"
[ "$(sqlite3 "$T/bg.db" "SELECT value FROM stats WHERE key = 'follow_withdrawn'")" = 200 ] ||
	rp_fail "4: $(sqlite3 "$T/bg.db" "SELECT value FROM stats WHERE key = 'follow_withdrawn'") withdrawn, wanted 200 (a withdrawn request brought back?)"
check "$T/bg.db" "$T/bg/batches.jsonl" --extra 400
bp_note "4: the same with full passes in the background ($(sqlite3 "$T/bg.db" "SELECT value FROM stats WHERE key = 'follow_full_background'") of them, $(sqlite3 "$T/bg.db" "SELECT value FROM stats WHERE key = 'follow_full_left'") requests left to window passes): each pushed once, 200 withdrawn"
stop_rx

# 5. the records of requests 100-199 of one process drained late
# late LABEL HOLD PID GENLOG-ARGS...: its logs, all but the late segment
# of process PID (300 the database, 100 the front) copied; the case
# copies the rest
late() {
	local label=$1 hold=$2 pid=$3 s h
	shift 3
	rm -rf "$T/gen-$label"
	LATE=$("$GENLOG" -n 200 -w 4 -N -L "$pid:100" "$@" "$T/gen-$label") ||
		rp_fail "genlog $*"
	LATE=$(printf '%06d.btl' "${LATE#late }")
	ls "$T/gen-$label/"*/"$LATE" >/dev/null 2>&1 || rp_fail "genlog: no late segment $LATE"
	# segments are numbered across the hosts: in the late process's
	# host those before the late one, in the others all
	for s in "$T/gen-$label/"*/*.btl; do
		h=$(basename "$(dirname "$s")")
		mkdir -p "$T/live-$label/$h"
		{ [ ! -f "$T/gen-$label/$h/$LATE" ] || [ "$(basename "$s")" \< "$LATE" ]; } &&
			cp "$s" "$T/live-$label/$h/"
	done
	rx "$label"
	follow "$label" --otlp-endpoint "$RX" --follow-hold="$hold"
}
# the rest: every host's segments not there yet, each copied under
# another name and renamed (as rsync does: a pass never reads half a
# segment file)
rest() {
	local s h
	for s in "$T/gen-$1/"*/*.btl; do
		h=$(basename "$(dirname "$s")")
		[ -f "$T/live-$1/$h/$(basename "$s")" ] && continue
		cp "$s" "$T/live-$1/$h/.$(basename "$s").part" &&
			mv "$T/live-$1/$h/.$(basename "$s").part" "$T/live-$1/$h/$(basename "$s")"
	done
}
# held LABEL REASON: 100 pushed, 100 uncertain for REASON not pushed,
# still after 1 s
held() {
	until_db "$1" "SELECT count(*) FROM follow_requests WHERE pushed = 1" 100
	sleep 1
	local got
	got=$(sqlite3 "$T/$1.db" "SELECT count(*) FROM follow_requests f JOIN requests r
		USING (request_id) WHERE f.pushed = 0 AND r.certainty = 'uncertain'
		AND r.certainty_reason = '$2'")
	[ "$got" = 100 ] || rp_fail "5 $1: $got requests $2 not pushed, wanted 100: $(sqlite3 "$T/$1.db" \
		"SELECT f.pushed, r.certainty, r.certainty_reason, count(*) FROM follow_requests f
		 JOIN requests r USING (request_id) GROUP BY 1, 2, 3")"
	[ "$(sqlite3 "$T/$1.db" "SELECT count(*) FROM follow_requests WHERE pushed <> 0")" = 100 ] ||
		rp_fail "5 $1: a request held was pushed"
}
# whole LABEL: stopped, each request pushed once, exact, the trees the
# offline run of all the logs has
whole() {
	stop_follow
	[ "$FRC" = 0 ] || rp_fail "5 $1: exit status $FRC: $(tail -n 3 "$T/$1.err")"
	summary "$1" "200 sent, 0 sent then revised, 0 in part, 0 not sent, 0 sent then withdrawn"
	check "$T/$1.db" "$T/$1/batches.jsonl"
	stop_rx
}

late pnl 30 300 -c
held pnl peer-not-logged
rest pnl
until_db pnl "SELECT count(*) FROM follow_requests WHERE pushed = 1" 200
[ "$(sqlite3 "$T/pnl.db" "SELECT count(*) FROM requests WHERE certainty = 'exact'")" = 200 ] ||
	rp_fail "5a: not 200 exact requests once the records came"
"$RECON" -q "$T/gen-pnl" -o "$T/pnl-off.db" || rp_fail "5a: the offline run"
[ "$(sqlite3 "$T/pnl.db" "SELECT count(*) FROM spans")" = \
  "$(sqlite3 "$T/pnl-off.db" "SELECT count(*) FROM spans")" ] ||
	rp_fail "5a: live and offline spans differ"
whole pnl
bp_note "5a: 100 requests whose database peer's records came late: peer-not-logged, held, then pushed once whole"

late uls 30 300
held uls unlogged-send
rest uls
until_db uls "SELECT count(*) FROM follow_requests WHERE pushed = 1" 200
whole uls
bp_note "5b: the same on persistent connections (unlogged-send): held, then pushed once whole"

late never 2 300 -c
until_db never "SELECT count(*) FROM follow_requests WHERE pushed = 1" 200
[ "$(sqlite3 "$T/never.db" "SELECT count(*) FROM requests WHERE certainty = 'exact'")" = 200 ] ||
	rp_fail "5c: not 200 exact requests once the peer was overdue"
whole never
bp_note "5c: records that never come: after the hold the peer counts as untraced; each request pushed once"

# d. three hosts, the front's records of requests 100-199 late (as a
# remote host's logs copied in batches): the application's part of
# each is a request of its own, unlogged-send, held, then withdrawn
# when the front's records come; nothing withdrawn was pushed
late lag3 30 100 -3
held lag3 unlogged-send
rest lag3
until_db lag3 "SELECT count(*) FROM follow_requests WHERE pushed = 1" 200
until_db lag3 "SELECT value FROM stats WHERE key = 'follow_withdrawn'" 100
whole lag3
bp_note "5d: three hosts, the front's logs late: the application's requests held, withdrawn unpushed, each request pushed once whole"
echo "PASS: follow-push"
exit 0
