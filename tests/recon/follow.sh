#!/bin/sh
# bp-reconstruct --follow without servers (the live testbed is
# tests/testbeds/tb-follow.sh): three hosts' logs (genlog -3) appear one
# host at a time while --follow runs, and it is killed (SIGKILL) and
# started again on the same database between them.  The requests first
# written without their downstream hosts must be replaced (revised) as
# the hosts arrive, or withdrawn when their root changed; at the end the
# database must hold what the offline run holds - each request once, the
# same spans, by content - and the command-line errors must be clear.  Run from the build directory
# (make check does); keeps nothing unless KEEP=1.
set -u
bin=./bp-reconstruct
gen=./tests/recon/genlog
tmp=$(mktemp -d "${TMPDIR:-/tmp}/recon-follow.XXXXXX") || exit 99
pid= waker=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	[ -n "$waker" ] && kill "$waker" 2>/dev/null
	[ "${KEEP:-0}" = 1 ] && echo "keeping $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; [ -f "$tmp/err" ] && sed 's/^/  stderr: /' "$tmp/err" | tail -n 20; exit 1; }
command -v sqlite3 >/dev/null || { echo "SKIP: no sqlite3 command"; exit 77; }
q() { sqlite3 "$tmp/live.db" "$1" 2>/dev/null; }

# canon DB: one line per request by content (no ids, no absolute times)
canon() {
	sqlite3 "$1" "
SELECT r.method || ' ' || r.target || ' ' || COALESCE(r.status, '') || ' ' ||
  r.complete || ' ' || r.certainty || ' :: ' ||
  (SELECT group_concat(x, ' | ') FROM (SELECT s.kind || ',' || s.protocol || ',' ||
     COALESCE(s.name, '') || ',' || COALESCE(s.target, '') || ',' ||
     COALESCE(s.status, '') || ',' || s.host || ',' || s.pid || ',' || s.tid || ',' ||
     COALESCE(p.name, '-') || ',' || COALESCE(s.end_ns - s.start_ns, 'open') || ',' ||
     s.certainty AS x
   FROM spans s LEFT JOIN spans p ON p.span_id = s.parent_span_id
   WHERE s.request_id = r.request_id ORDER BY s.start_ns, s.pid, s.tid, s.name)) ||
  ' :: ' || (SELECT count(*) FROM messages m WHERE m.request_id = r.request_id) ||
  ' ' || (SELECT count(*) FROM fragments g WHERE g.request_id = r.request_id) ||
  ' ' || (SELECT count(*) FROM files i WHERE i.request_id = r.request_id)
FROM requests r" | sort
}

# wait_for SQL WANT: until SQL on live.db answers WANT (10 s at most)
wait_for() {
	i=0
	while [ "$(q "$1")" != "$2" ]; do
		i=$((i + 1))
		[ $i -le 300 ] || fail "after 30 s, '$1' is '$(q "$1")', not '$2'"
		sleep 0.1
	done
}

# stop_follow WHAT: the waker stopped, SIGINT to --follow, which must
# exit with status 0
stop_follow() {
	if [ -n "$waker" ]; then kill $waker; wait $waker 2>/dev/null; waker=; fi
	kill -INT $pid
	wait $pid
	st=$?
	pid=
	[ $st -eq 0 ] || fail "$1: SIGINT: exit status $st, wanted 0 ($(grep -v '^ ' "$tmp/err" | tail -n 2))"
}

start() {
	$bin --follow --follow-interval=0.2 --follow-grace=0.1 "$tmp/live" \
		-o "$tmp/live.db" 2>>"$tmp/err" &
	pid=$!
}

# command-line errors
expect_usage() {   # expect_usage MESSAGE ARGS...
	msg=$1; shift
	$bin "$@" >"$tmp/out" 2>"$tmp/uerr"
	st=$?
	[ $st -eq 1 ] || fail "'$*': exit status $st, wanted 1"
	grep -q -- "$msg" "$tmp/uerr" || fail "'$*': no '$msg' in: $(cat "$tmp/uerr")"
}
mkdir "$tmp/live"
expect_usage "go with --follow" --follow-grace=1 "$tmp/live" -o "$tmp/x.db"
expect_usage "not with --host-local" --follow --otlp "$tmp/t.json" "$tmp/live" -o "$tmp/x.db"
expect_usage "wants seconds" --follow --follow-interval=0 "$tmp/live" -o "$tmp/x.db"
expect_usage "wants a number from 0 to 1000" --follow --follow-full-share=-1 "$tmp/live" -o "$tmp/x.db"
expect_usage "go with --follow" --follow-full=5 "$tmp/live" -o "$tmp/x.db"
expect_usage "go with --follow" --follow-hold=5 "$tmp/live" -o "$tmp/x.db"
expect_usage "follow-hold wants seconds" --follow --follow-hold=0 "$tmp/live" -o "$tmp/x.db"
$bin --help | grep -q -- '--follow-hold=SECONDS' || fail "--help lacks --follow-hold"
$bin --help | grep -q -- '--follow-grace=SECONDS' || fail "--help lacks --follow-grace"
$bin --help | grep -q -- '--follow-full-share=N' || fail "--help lacks --follow-full-share"

$gen -3 -n 300 "$tmp/logs" || fail "genlog"
$bin -q "$tmp/logs" -o "$tmp/offline.db" || fail "the offline run"
[ "$(sqlite3 "$tmp/offline.db" 'SELECT count(*) FROM requests')" = 300 ] ||
	fail "the offline run has not 300 requests"

# a database an offline run wrote is not taken over
cp "$tmp/offline.db" "$tmp/off2.db"
$bin --follow "$tmp/live" -o "$tmp/off2.db" 2>"$tmp/uerr" &
p2=$!
i=0
while kill -0 $p2 2>/dev/null; do
	i=$((i + 1)); [ $i -le 50 ] || { kill -9 $p2; fail "--follow on an offline database did not stop"; }
	sleep 0.1
done
wait $p2
st=$?
[ $st -eq 3 ] || fail "--follow on an offline database: exit status $st, wanted 3"
grep -q "written by an offline run" "$tmp/uerr" || fail "offline database message: $(cat "$tmp/uerr")"

# no logs yet: it waits, and SIGINT ends it cleanly
: >"$tmp/err"
start
i=0
until grep -q "waiting for the logs" "$tmp/err"; do
	i=$((i + 1)); [ $i -le 100 ] || fail "no 'waiting for the logs' in 10 s"
	sleep 0.1
done
# the app host alone: its client (the front) is not in the logs, so each
# of its requests is a request of its own, final without the database
cp -r "$tmp/logs/app" "$tmp/live/app"
wait_for "SELECT count(*) FROM requests" 300
[ "$(q "SELECT count(*) FROM spans")" = 600 ] || fail "app alone: $(q "SELECT count(*) FROM spans") spans, wanted 600 (server and client span per request)"
[ "$(q "PRAGMA journal_mode")" = wal ] || fail "the database is not in WAL mode"

# killed, then the front host, then started again on the same database:
# the app's requests are now the front's, and the 300 written with the
# app's server span as their root are withdrawn, not left beside them
kill -9 $pid; wait $pid 2>/dev/null; pid=
cp -r "$tmp/logs/front" "$tmp/live/front"
start
wait_for "SELECT count(*) FROM spans" 1200
wait_for "SELECT value FROM stats WHERE key = 'follow_withdrawn'" 300
[ "$(q "SELECT count(*) FROM requests")" = 300 ] || fail "front and app: $(q "SELECT count(*) FROM requests") requests, wanted 300"
kill -9 $pid; wait $pid 2>/dev/null; pid=
# a pass database a killed run left (its process gone) is removed
sh -c 'exit 0' & dead=$!
wait $dead
: >"$tmp/live.db.pass.tmp-$dead"
start
cp -r "$tmp/logs/db" "$tmp/live/db"
wait_for "SELECT count(*) FROM spans" 1500
wait_for "SELECT value FROM stats WHERE key = 'follow_pid'" "$pid"
kill -INT $pid
wait $pid
st=$?
pid=
[ $st -eq 0 ] || fail "SIGINT: exit status $st, wanted 0"
grep -q "^bp-reconstruct: follow: [0-9]* events read (0 lost), 300 requests in $tmp/live.db (300 exact, 0 resolved, 0 uncertain; [1-9][0-9]* revised after they were first written, 300 withdrawn)" "$tmp/err" ||
	fail "the last line does not say 300 requests, some revised, 300 withdrawn"
[ ! -e "$tmp/live.db.pass" ] || fail "the pass database was left behind"
[ ! -e "$tmp/live.db.pass.tmp-$dead" ] || fail "the pass database of a killed run (pid $dead, gone) was left behind"

[ "$(q "SELECT count(*) FROM requests")" = 300 ] || fail "$(q "SELECT count(*) FROM requests") requests, wanted 300 (each once)"
[ "$(q "SELECT count(DISTINCT key) FROM follow_requests")" = 300 ] || fail "follow_requests keys"
[ "$(q "SELECT count(*) FROM follow_requests WHERE revised > 0")" = 300 ] ||
	fail "$(q "SELECT count(*) FROM follow_requests WHERE revised > 0") of 300 requests revised, wanted all (their hosts came later)"
canon "$tmp/offline.db" >"$tmp/a"
canon "$tmp/live.db" >"$tmp/b"
[ "$(wc -l <"$tmp/a")" = 300 ] || fail "the canonical dump has not 300 lines"
diff "$tmp/a" "$tmp/b" >"$tmp/diff" || fail "--follow's requests differ from the offline run's: $(head -n 4 "$tmp/diff")"
# the tables of the whole run are there too, with their own ids
for t in hosts processes channels patterns span_patterns; do
	[ "$(q "SELECT count(*) FROM $t")" = "$(sqlite3 "$tmp/offline.db" "SELECT count(*) FROM $t")" ] ||
		fail "table $t: $(q "SELECT count(*) FROM $t") rows, offline $(sqlite3 "$tmp/offline.db" "SELECT count(*) FROM $t")"
done
# and each span's pattern row is its own (a full pass maps the span ids
# of the requests it does not write again: follow.c, ordinal_spans)
spq="SELECT s.kind, s.name, s.target, s.host, s.pid, s.tid, s.start_ns, s.end_ns, sp.node, sp.label, sp.self_ns FROM span_patterns sp JOIN spans s ON s.span_id = sp.span_id ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9"
sqlite3 "$tmp/offline.db" "$spq" >"$tmp/spa"
q "$spq" >"$tmp/spb"
[ "$(wc -l <"$tmp/spa")" -gt 1000 ] || fail "span_patterns joined to spans: $(wc -l <"$tmp/spa") rows offline"
diff "$tmp/spa" "$tmp/spb" >"$tmp/diff" || fail "span_patterns rows name other spans than offline: $(head -n 4 "$tmp/diff")"
[ "$(q "SELECT count(*) FROM spans s LEFT JOIN processes p USING (process_id) WHERE s.process_id IS NOT NULL AND p.process_id IS NULL")" = 0 ] ||
	fail "spans name processes that are not in processes"
[ "$(q "SELECT count(*) FROM requests WHERE pattern_id IS NULL")" = 0 ] || fail "requests without a pattern"
echo "PASS: --follow: 300 requests over three hosts arriving one by one (300 withdrawn, 300 revised), two kills, the same paths as offline"

# A segment file written anew in place (cp over it, rsync --inplace)
# shrinks while it is written: the passes wait for it, with a warning
# naming it, and withdraw nothing (without the wait, the pass that read
# it half withdrew the requests of its second half)
rm -rf "$tmp/live" "$tmp/live.db" "$tmp/live.db-wal" "$tmp/live.db-shm"
mkdir "$tmp/live"
$gen -n 2000 "$tmp/one" >/dev/null || fail "genlog -n 2000"
cp -r "$tmp/one/one" "$tmp/live/one"
: >"$tmp/err"
start
wait_for "SELECT count(*) FROM requests" 2000
seg=$(ls "$tmp/live/one/"*.btl | head -n 1)
cp "$seg" "$tmp/seg.orig"
truncate -s $(( $(stat -c %s "$seg") / 2 )) "$seg"
i=0
until grep -q "warning: the segment file $seg (.*) shrank" "$tmp/err"; do
	i=$((i + 1)); [ $i -le 100 ] || fail "no warning in 10 s that $seg shrank"
	sleep 0.1
done
sleep 1
[ "$(q "SELECT value FROM stats WHERE key = 'follow_withdrawn'")" = 0 ] ||
	fail "a segment that shrank: $(q "SELECT value FROM stats WHERE key = 'follow_withdrawn'") requests withdrawn"
cat "$tmp/seg.orig" >"$seg"
sleep 1
kill -INT $pid
wait $pid
st=$?
pid=
[ $st -eq 0 ] || fail "shrunk segment: exit status $st, wanted 0"
grep -q "2000 requests in $tmp/live.db (2000 exact, 0 resolved, 0 uncertain; 0 revised after they were first written, 0 withdrawn)" "$tmp/err" ||
	fail "shrunk segment: the last line does not say 2000 requests, none revised or withdrawn"
# bp-logd itself takes back a torn block after a failed write (a full
# disk): the file shrinks by bytes no pass could read.  The passes wait
# --follow-hold seconds at most (1 s here), then take it as it is.  The
# block stays until a pass has begun after it was written (the second
# pass that ends after it: BP_FOLLOW_TIMING prints a line for each), so
# that a look at the sizes saw it, however slow the passes are (a fixed
# half second was too short on a loaded machine)
rm -rf "$tmp/live.db" "$tmp/live.db-wal" "$tmp/live.db-shm"
: >"$tmp/err"
BP_FOLLOW_TIMING=1 $bin --follow --follow-interval=0.2 --follow-grace=0.1 --follow-hold=1 "$tmp/live" \
	-o "$tmp/live.db" 2>>"$tmp/err" &
pid=$!
wait_for "SELECT count(*) FROM requests" 2000
size=$(stat -c %s "$seg")
head -c 700 /dev/zero >>"$seg"          # a block being written
n0=$(grep -c '^pass ' "$tmp/err" || true)
i=0
until [ "$(grep -c '^pass ' "$tmp/err" || true)" -ge $((n0 + 2)) ]; do
	i=$((i + 1)); [ $i -le 150 ] || fail "a torn block: no two passes in 30 s after it was written"
	: >"$tmp/live/one/wake"             # something to pass for
	sleep 0.2
done
truncate -s "$size" "$seg"              # taken back
i=0
until grep -q "warning: the segment file $seg (.*) is still smaller after 1 s (--follow-hold): taken as it is" "$tmp/err"; do
	i=$((i + 1)); [ $i -le 100 ] || fail "a torn block taken back: no warning in 10 s that the file is taken as it is"
	: >"$tmp/live/one/wake"             # something to pass for
	sleep 0.2
done
kill -INT $pid
wait $pid
st=$?
pid=
[ $st -eq 0 ] || fail "torn block: exit status $st, wanted 0"
grep -q "2000 requests in $tmp/live.db (2000 exact, 0 resolved, 0 uncertain; 0 revised after they were first written, 0 withdrawn)" "$tmp/err" ||
	fail "torn block: the last line does not say 2000 requests, none revised or withdrawn"
echo "PASS: --follow: a segment file that shrank (written anew in place) held the passes back, nothing withdrawn; a torn block taken back, after the hold"

# Full passes in the background race the window passes: the three hosts
# arrive one at a time (each renamed into place whole, so a pass sees a
# host entire or not at all) while a full pass starts every 0.1 s in a
# child process (which waits 0.6 s before it ends: BP_FOLLOW_FULL_DELAY, a
# hook for this test).  A full pass that read the logs before a host came writes
# after window passes that read them with it: it may write only what no
# window pass wrote or withdrew since it began.  So the counts are those
# of one pass per arrival (3000 withdrawn when the front came, each
# request revised once when the database came: a stale full pass would
# write the old version back, or bring back a withdrawn request, and the
# next window pass would count another revision or withdrawal), and the
# end is the offline run's.
full=0
until_full() {   # until_full N: until N full passes in the background
	i=0
	while [ "$(q "SELECT COALESCE((SELECT value FROM stats WHERE key = 'follow_full_background'), 0)")" -lt "$1" ]; do
		i=$((i + 1))
		[ $i -le 200 ] || fail "after 20 s, $(q "SELECT value FROM stats WHERE key = 'follow_full_background'") full passes in the background, not $1"
		sleep 0.1
	done
}
rm -rf "$tmp/live" "$tmp"/live.db* "$tmp/stage"
mkdir "$tmp/live" "$tmp/stage"
$gen -3 -n 3000 "$tmp/logs3" >/dev/null || fail "genlog -3 -n 3000"
$bin -q "$tmp/logs3" -o "$tmp/offline3.db" || fail "the offline run (3000 requests)"
: >"$tmp/err"
BP_FOLLOW_FULL_DELAY=0.6 $bin --follow --follow-interval=0.1 --follow-grace=0.1 \
	--follow-full=0.1 --follow-full-share=0 "$tmp/live" -o "$tmp/live.db" 2>>"$tmp/err" &
pid=$!
# a pass every 0.1 s (a full one starts in a pass), so that one is under
# way whenever a host comes (at most 60 s)
( i=0; while [ $i -lt 1200 ]; do : >"$tmp/live/wake"; sleep 0.05; i=$((i + 1)); done ) &
waker=$!
for h in app front db; do
	cp -r "$tmp/logs3/$h" "$tmp/stage/$h"
	# a full pass began reading since the last one ended
	sleep 0.4
	mv "$tmp/stage/$h" "$tmp/live/$h"
	n0=$(q "SELECT COALESCE((SELECT value FROM stats WHERE key = 'follow_full_background'), 0)")
	case $h in
	app) wait_for "SELECT count(*) FROM requests" 3000 ;;
	front) wait_for "SELECT value FROM stats WHERE key = 'follow_withdrawn'" 3000 ;;
	db) wait_for "SELECT count(*) FROM follow_requests WHERE revised > 0" 3000 ;;
	esac
	# the full pass that ran when the host came, and one after it
	until_full $((${n0:-0} + 2))
done
# the last of those wrote the span_patterns rows of only the requests
# whose rows' fingerprint moved (follow.c, pat_moved_sql; all of them,
# revised by the window passes since): each span's row is the offline
# run's already, before the last pass writes them all
sqlite3 "$tmp/offline3.db" "$spq" >"$tmp/spa"
q "$spq" >"$tmp/spb"
[ "$(wc -l <"$tmp/spa")" -gt 10000 ] || fail "span_patterns joined to spans: $(wc -l <"$tmp/spa") rows offline (3000 requests)"
diff "$tmp/spa" "$tmp/spb" >"$tmp/diff" ||
	fail "full passes in the background: span_patterns rows differ from offline's before the last pass: $(head -n 4 "$tmp/diff")"
# and every span id a row names is a span's (it maps those of only the
# requests such rows name: moved_sql)
dang=$(q "SELECT (SELECT count(*) FROM spans s WHERE s.parent_span_id IS NOT NULL
	AND NOT EXISTS (SELECT 1 FROM spans p WHERE p.span_id = s.parent_span_id)) + (SELECT count(*)
	FROM messages m WHERE m.span_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM spans p
	WHERE p.span_id = m.span_id)) + (SELECT count(*) FROM fragments g WHERE g.span_id IS NOT
	NULL AND NOT EXISTS (SELECT 1 FROM spans p WHERE p.span_id = g.span_id)) + (SELECT count(*)
	FROM files i WHERE i.span_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM spans p
	WHERE p.span_id = i.span_id))")
[ "$dang" = 0 ] || fail "full passes in the background: ${dang:-?} rows name a span that is not there, before the last pass"
# and each request's pattern is the offline run's (the window passes
# wrote the requests the database revised without one: a full pass in
# the background names it, pat_id_bg_sql)
paq="SELECT r.method, r.target, r.start_ns, replace(p.signature, char(10), ' / ') FROM requests r
	LEFT JOIN patterns p ON p.pattern_id = r.pattern_id ORDER BY 1, 2, 3, 4"
sqlite3 "$tmp/offline3.db" "$paq" >"$tmp/pa"
q "$paq" >"$tmp/pb"
[ "$(wc -l <"$tmp/pa")" = 3000 ] && ! grep -q '|$' "$tmp/pa" ||
	fail "requests' patterns offline: $(wc -l <"$tmp/pa") rows, $(grep -c '|$' "$tmp/pa") without one"
diff "$tmp/pa" "$tmp/pb" >"$tmp/diff" ||
	fail "full passes in the background: requests' patterns differ from offline's before the last pass: $(head -n 4 "$tmp/diff")"
# the channels too are the offline run's, each with its peer, connection
# and request (here the window passes look at every channel: the log is
# shorter than a window; the case below has a full pass in the background
# write them)
chq="SELECT h.name, c.pid, c.fd, c.kind, c.role, c.protocol, c.local, c.remote, c.path,
	c.ino, c.peer_ino, c.traced_peer, c.open_ns, c.close_ns, c.bytes_in, c.bytes_out,
	c.msgs_in, c.msgs_out, c.lost_sync, c.readable, c.unreadable_reason,
	p.pid, p.fd, p.open_ns, (SELECT count(*) FROM channels x WHERE x.conn_id = c.conn_id),
	(SELECT group_concat(x.pid || '/' || x.fd, ',') FROM channels x WHERE x.conn_id = c.conn_id
	 AND x.channel_id <> c.channel_id), r.start_ns, r.target
	FROM channels c LEFT JOIN hosts h ON h.host_id = c.host_id
	LEFT JOIN channels p ON p.channel_id = c.peer_channel_id
	LEFT JOIN requests r ON r.request_id = c.request_id ORDER BY 1, 2, 3, 13"
sqlite3 "$tmp/offline3.db" "$chq" >"$tmp/cha"
q "$chq" >"$tmp/chb"
npeer=$(sqlite3 "$tmp/offline3.db" "SELECT count(*) FROM channels WHERE peer_channel_id IS NOT NULL")
[ "$(wc -l <"$tmp/cha")" -gt 1000 ] && [ "${npeer:-0}" -gt 10 ] ||
	fail "channels: ${npeer:-?} of $(wc -l <"$tmp/cha") offline with a peer, wanted more than 10 of 1000"
diff "$tmp/cha" "$tmp/chb" >"$tmp/diff" ||
	fail "full passes in the background: channels differ from offline's before the last pass: $(head -n 4 "$tmp/diff")"
stop_follow "full passes in the background"
set -- $(q "SELECT (SELECT value FROM stats WHERE key = 'follow_withdrawn') || ' ' ||
	(SELECT count(*) FROM follow_requests WHERE revised = 1) || ' ' ||
	(SELECT max(revised) FROM follow_requests) || ' ' ||
	(SELECT value FROM stats WHERE key = 'follow_full_background') || ' ' ||
	(SELECT value FROM stats WHERE key = 'follow_full_left')")
[ $# -eq 5 ] && [ "$1" = 3000 ] && [ "$2" = 3000 ] && [ "$3" = 1 ] ||
	fail "full passes in the background: $1 withdrawn (wanted 3000), $2 requests revised once (wanted 3000), at most $3 times (wanted 1)"
canon "$tmp/offline3.db" >"$tmp/a"
canon "$tmp/live.db" >"$tmp/b"
diff "$tmp/a" "$tmp/b" >"$tmp/diff" || fail "full passes in the background: --follow's requests differ from the offline run's: $(head -n 4 "$tmp/diff")"
[ ! -e "$tmp/live.db.full" ] || fail "the background pass's database was left behind"
echo "PASS: --follow: $4 full passes in the background beside the window passes (they left $5 requests to them) wrote each request once, revised once, 3000 withdrawn, as offline"

# The channels a window pass does not look at (closed before its horizon,
# less a margin of 1 s) only full passes write; one in the background
# writes those whose row moved since PATHS.db got it (its child compares
# them: follow.c, bg_judge_sql).  genlog -3 -n 15000 spans 1.5 s of log
# time.  The database host's clock is the reference (-r db).  The front
# host comes first, alone (its clock the reference then); once a full
# pass in the background wrote its channels, the app and database hosts
# come, and the front's times move by the difference of the clocks (1.5
# s): every front channel's row moves, most of them closed long before
# the window.  Those of the first 0.4 s are closed before the horizon of
# any window pass, less the margin, and only a full pass writes them:
# before the last pass (which writes every channel), once a full pass
# began after the hosts came, they must be the offline run's.  (The
# channels closed between that and the window's horizon wait for a full
# pass that began with the horizon past them: with logs that no longer
# grow, the last pass.)
rm -rf "$tmp/live" "$tmp"/live.db* "$tmp/stage" "$tmp/logs3"
mkdir "$tmp/live" "$tmp/stage"
$gen -3 -n 15000 "$tmp/logs3" >/dev/null || fail "genlog -3 -n 15000"
$bin -q -r db "$tmp/logs3" -o "$tmp/offline3.db" || fail "the offline run (15000 requests)"
chq="${chq% ORDER BY*} WHERE c.close_ns < (SELECT min(open_ns) FROM channels) + 400000000 ORDER BY 1, 2, 3, 13"
sqlite3 "$tmp/offline3.db" "$chq" >"$tmp/cha"
: >"$tmp/err"
cp -r "$tmp/logs3/front" "$tmp/live/"
$bin --follow --follow-interval=0.1 --follow-grace=0.1 --follow-window=0.05 \
	--follow-full=0.1 --follow-full-share=0 -r db "$tmp/live" -o "$tmp/live.db" 2>>"$tmp/err" &
pid=$!
( i=0; while [ $i -lt 1200 ]; do : >"$tmp/live/wake"; sleep 0.05; i=$((i + 1)); done ) &
waker=$!
wait_for "SELECT count(*) > 0 FROM requests" 1
n0=$(q "SELECT COALESCE((SELECT value FROM stats WHERE key = 'follow_full_background'), 0)")
until_full $((${n0:-0} + 2))
q "$chq" >"$tmp/chb"
moved=$(diff "$tmp/cha" "$tmp/chb" | grep -c '^>')
[ "$moved" -gt 1000 ] || fail "full passes in the background, channels: $moved of the front's first channels differ from offline's before the other hosts came, wanted more than 1000"
for h in app db; do cp -r "$tmp/logs3/$h" "$tmp/stage/$h"; done
mv "$tmp/stage/app" "$tmp/stage/db" "$tmp/live/"
wait_for "SELECT count(*) FROM hosts" 3
n0=$(q "SELECT value FROM stats WHERE key = 'follow_full_background'")
until_full $((${n0:-0} + 2))
q "$chq" >"$tmp/chb"
diff "$tmp/cha" "$tmp/chb" >"$tmp/diff" ||
	fail "full passes in the background: channels differ from offline's before the last pass (of the $moved that moved): $(head -n 4 "$tmp/diff")"
stop_follow "full passes in the background, channels"
canon "$tmp/offline3.db" >"$tmp/a"
canon "$tmp/live.db" >"$tmp/b"
diff "$tmp/a" "$tmp/b" >"$tmp/diff" || fail "full passes in the background, channels: --follow's requests differ from the offline run's: $(head -n 4 "$tmp/diff")"
echo "PASS: --follow: full passes in the background wrote again the $moved channels closed before the window whose rows moved when the other hosts came, as offline"

# A full pass in the background looks the keys of its requests up in
# live.db once it has reconstructed the logs, and the write looks up again
# only those a window pass wrote or withdrew since it began (follow.c,
# req_bg_w_sql); the requests withdrawn it finds there too (gone_bg_sql).
# Here the child takes its copy of live.db when it begins
# (BP_FOLLOW_FULL_EARLY, a hook for this test), the front host comes
# (the same 15,000 requests; the app's and database's came first), and
# only then does the child read the logs (once the file go exists).  With
# a window of 0.05 s the window passes write the front's requests from a
# second before the newest on (new keys), after the child's copy; the
# others, and the app's requests to withdraw, are the full pass's.  Without the second lookup the write takes the front's
# requests the window passes wrote for new ones and writes them twice;
# without the withdrawn found in the copy, the app's requests before the
# window stay.
$bin -q "$tmp/logs3" -o "$tmp/offline15.db" || fail "the offline run (15000 requests, no reference)"
rm -rf "$tmp/live" "$tmp"/live.db* "$tmp/stage" "$tmp/go"
mkdir "$tmp/live" "$tmp/stage"
cp -r "$tmp/logs3/app" "$tmp/logs3/db" "$tmp/live/"
: >"$tmp/err"
BP_FOLLOW_FULL_EARLY="$tmp/go" BP_FOLLOW_FULL_DELAY=0.3 $bin --follow --follow-interval=0.1 \
	--follow-grace=0.1 --follow-window=0.05 --follow-full=0.1 --follow-full-share=0 \
	"$tmp/live" -o "$tmp/live.db" 2>>"$tmp/err" &
pid=$!
( i=0; while [ $i -lt 1200 ]; do : >"$tmp/live/wake"; sleep 0.05; i=$((i + 1)); done ) &
waker=$!
wait_for "SELECT count(*) FROM requests" 15000
i=0
until [ -e "$tmp/live.db.full.snap" ]; do
	i=$((i + 1))
	[ $i -le 200 ] || fail "keys looked up again: no full pass in the background took its copy of live.db in 20 s"
	sleep 0.1
done
cp -r "$tmp/logs3/front" "$tmp/stage/front"
mv "$tmp/stage/front" "$tmp/live/front"
wait_for "SELECT count(*) > 0 FROM requests r JOIN spans s ON s.span_id = r.root_span_id
	WHERE s.host = 'front'" 1
sleep 0.5
set -- $(q "SELECT (SELECT count(*) FROM requests r JOIN spans s ON s.span_id = r.root_span_id
	WHERE s.host = 'front') || ' ' || (SELECT value FROM stats WHERE key = 'follow_withdrawn')")
[ $# -eq 2 ] && [ "$1" -gt 1000 ] && [ "$1" -lt 14000 ] ||
	fail "keys looked up again: the window passes wrote $1 of the front's requests before the full pass read the logs, wanted more than 1000 of 15000, not all"
fronts=$1
n0=$(q "SELECT COALESCE((SELECT value FROM stats WHERE key = 'follow_full_background'), 0)")
: >"$tmp/go"
until_full $((${n0:-0} + 1))
set -- $(q "SELECT (SELECT count(*) FROM requests) || ' ' || (SELECT count(*) FROM follow_requests)
	|| ' ' || (SELECT count(*) FROM follow_requests WHERE revised > 0) || ' ' ||
	(SELECT value FROM stats WHERE key = 'follow_withdrawn')")
[ $# -eq 4 ] && [ "$1" = 15000 ] && [ "$2" = 15000 ] && [ "$3" = 0 ] && [ "$4" = 15000 ] ||
	fail "keys looked up again: $1 requests, $2 keys, $3 revised, $4 withdrawn after the full pass in the background (wanted 15000, 15000, 0, 15000)"
canon "$tmp/offline15.db" >"$tmp/a"
canon "$tmp/live.db" >"$tmp/b"
diff "$tmp/a" "$tmp/b" >"$tmp/diff" || fail "keys looked up again: before the last pass, --follow's requests differ from the offline run's: $(head -n 4 "$tmp/diff")"
stop_follow "keys looked up again"
[ ! -e "$tmp/live.db.full.snap" ] || fail "keys looked up again: the copy of live.db was left behind"
echo "PASS: --follow: a full pass in the background whose child looked its keys up before the front came wrote the $((15000 - fronts)) front requests the window passes had not, withdrew the app's they had not, and none twice, as offline"

# window passes: genlog -n 20000 spans about 2 s of log time; with a
# window of 0.05 s a pass woken by a new file looks at the newest requests
# only and its reconstruction leaves out the messages, fragments and files
# of the requests more than a second before them (stats
# follow_rows_skipped); the requests it may write still have all their
# rows, and the end is the offline run's.  window_case NAME "RECON-ARGS"
# GENLOG-ARGS: "one" is one host (one clock domain, its times final);
# "three" is genlog -3, three hosts whose clocks differ by up to 1.5 s,
# where the reconstruction chooses by times it corrects only at its end
# (the pass must not write a request whose root, once corrected, lies
# after one whose rows it left out: stats follow_rows_skip_max_ns); with
# the database host's clock as the reference (-r db) the front's times,
# where the requests begin, move by 1.5 s when corrected
window_case() {
	local name=$1 ra=$2 st nwin
	shift 2
	rm -rf "$tmp/live" "$tmp"/live.db* "$tmp/logs1"
	mkdir "$tmp/live"
	: >"$tmp/err"
	$gen "$@" -n 20000 "$tmp/logs1" >/dev/null || fail "genlog $* -n 20000"
	$bin -q $ra "$tmp/logs1" -o "$tmp/offline1.db" || fail "the offline run ($name)"
	cp -r "$tmp/logs1"/* "$tmp/live/"
	$bin --follow --follow-interval=0.2 --follow-grace=0.1 --follow-window=0.05 \
		$ra "$tmp/live" -o "$tmp/live.db" 2>>"$tmp/err" &
	pid=$!
	wait_for "SELECT count(*) FROM requests" 20000
	for k in 1 2 3 4 5 6 7 8 9 10; do
		for h in "$tmp"/live/*/; do : >"$h/wake-$k"; done
		[ "$(q "SELECT value > 0 FROM stats WHERE key = 'follow_rows_skipped'")" = 1 ] && break
		sleep 0.5
	done
	[ "$(q "SELECT value > 0 FROM stats WHERE key = 'follow_rows_skipped'")" = 1 ] ||
		fail "$name: no window pass left rows out (stats: $(q "SELECT group_concat(key || '=' || value) FROM stats WHERE key LIKE 'follow%'"))"
	# with one host the times are final during the merge: the rows left
	# out are those of the requests that began before follow_rows_from_ns
	# (while their root is open), exact spans but the root included; more
	# than their messages, fragments and files alone
	if [ "$name" = one ]; then
		sk=$(sqlite3 "$tmp/live.db" "ATTACH '$tmp/offline1.db' AS o;
			WITH f AS (SELECT value AS v FROM stats WHERE key = 'follow_rows_from_ns'),
			r AS (SELECT request_id FROM o.requests, f WHERE start_ns < f.v)
			SELECT (SELECT value FROM stats WHERE key = 'follow_rows_skipped') || ' ' ||
			  ((SELECT count(*) FROM o.messages WHERE request_id IN r) +
			   (SELECT count(*) FROM o.fragments WHERE request_id IN r) +
			   (SELECT count(*) FROM o.files WHERE request_id IN r)) || ' ' ||
			  (SELECT count(*) FROM o.spans s WHERE request_id IN r AND certainty = 'exact'
			   AND span_id NOT IN (SELECT root_span_id FROM o.requests)) || ' ' ||
			  (SELECT value FROM stats WHERE key = 'follow_channel_rows_skipped') || ' ' ||
			  (SELECT count(*) FROM o.channels c JOIN f
			   LEFT JOIN (SELECT conn_id, count(*) AS n FROM o.channels
			              WHERE conn_id IS NOT NULL GROUP BY conn_id) k ON k.conn_id = c.conn_id
			   WHERE c.close_ns < f.v AND c.peer_channel_id IS NULL
			   AND (c.conn_id IS NULL OR k.n = 1))" 2>&1)
		set -- $sk
		[ $# -eq 5 ] && [ "$4" = "$5" ] && [ "$4" -gt 0 ] &&
			[ "$(($1 - $4))" -gt "$2" ] && [ "$(($1 - $4))" -le $(($2 + $3)) ] ||
			fail "$name: rows left out: $sk (skipped, per-event rows, exact non-root spans of the requests before the bound, channels skipped, channels alone in their connection closed before it)"
		echo "PASS: --follow: window passes, one: $1 rows left out ($2 per-event rows and $3 exact spans of the requests before the bound; the $4 channels closed before it with no other end)"
	fi
	# the channels a window pass left out were named by no row it wrote
	# (follow.c checks, and would write nothing), and live.db's channels
	# are still the offline run's, by content (peers by their process and
	# descriptor)
	[ "$(q "SELECT value FROM stats WHERE key = 'follow_channel_rows_missing'")" = 0 ] ||
		fail "$name: a window pass needed the row of a channel it left out"
	for t in spans messages fragments; do
		[ "$(q "SELECT count(*) FROM $t x WHERE x.channel_id IS NOT NULL AND x.channel_id NOT IN (SELECT channel_id FROM channels)")" = 0 ] ||
			fail "$name: rows of $t name channels live.db does not have"
		[ "$(q "SELECT count(*) FROM $t WHERE channel_id IS NULL")" = "$(sqlite3 "$tmp/offline1.db" "SELECT count(*) FROM $t WHERE channel_id IS NULL")" ] ||
			fail "$name: $(q "SELECT count(*) FROM $t WHERE channel_id IS NULL") rows of $t without a channel, offline $(sqlite3 "$tmp/offline1.db" "SELECT count(*) FROM $t WHERE channel_id IS NULL")"
	done
	chq="SELECT c.host_id IS NULL, c.pid, c.fd, c.kind, c.role, c.protocol, c.local, c.remote,
		c.open_ns, c.close_ns, c.bytes_in, c.bytes_out, c.msgs_in, c.msgs_out, c.readable,
		p.pid, p.fd, p.open_ns, k.n
		FROM channels c LEFT JOIN channels p ON p.channel_id = c.peer_channel_id
		LEFT JOIN (SELECT conn_id, count(*) AS n FROM channels GROUP BY conn_id) k ON k.conn_id = c.conn_id
		ORDER BY 2, 3, 9, 4, 5"
	sqlite3 "$tmp/offline1.db" "$chq" >"$tmp/cha"
	q "$chq" >"$tmp/chb"
	diff "$tmp/cha" "$tmp/chb" >"$tmp/diff" || fail "$name: after window passes, live.db's channels differ from the offline run's: $(head -n 4 "$tmp/diff")"
	nwin=$(q "SELECT value FROM stats WHERE key = 'follow_window_requests'")
	[ "$nwin" -gt 0 ] && [ "$nwin" -lt 20000 ] || fail "$name: the window pass looked at $nwin requests of 20000"
	canon "$tmp/live.db" >"$tmp/b1"
	canon "$tmp/offline1.db" >"$tmp/a1"
	diff "$tmp/a1" "$tmp/b1" >"$tmp/diff" || fail "$name: after window passes, --follow's requests differ from the offline run's: $(head -n 4 "$tmp/diff")"
	kill -INT $pid
	wait $pid
	st=$?
	pid=
	[ $st -eq 0 ] || fail "$name: window passes: SIGINT: exit status $st, wanted 0"
	canon "$tmp/live.db" >"$tmp/b1"
	diff "$tmp/a1" "$tmp/b1" >"$tmp/diff" || fail "$name: after the last pass, --follow's requests differ from the offline run's: $(head -n 4 "$tmp/diff")"
	[ "$(q "SELECT count(*) FROM follow_requests WHERE revised > 0")" = 0 ] ||
		fail "$name: window passes revised requests they should have left alone"
	echo "PASS: --follow: window passes, $name (each looked at $nwin of 20000 requests and left out the rows of the older ones) wrote the offline run's paths"
}
window_case one ""
window_case three "" -3
window_case "three, reference db" "-r db" -3

# A live.db of the version before follow_requests.span_fp, follow_ch_del
# and follow_state's ch_resent (made here by taking them out): the same
# command goes on with it, adds them, and writes nothing again.
rm -rf "$tmp/live" "$tmp"/live.db* "$tmp/err"
mkdir -p "$tmp/live"
$gen -n 200 "$tmp/up" >/dev/null || fail "genlog -n 200"
cp -r "$tmp/up"/* "$tmp/live/"
start
wait_for "SELECT count(*) FROM follow_requests" 200
kill -INT $pid
wait $pid || fail "upgrade: the first run's SIGINT: exit status $?"
pid=
sqlite3 "$tmp/live.db" "ALTER TABLE follow_requests DROP COLUMN span_fp;
	DROP TABLE follow_ch_del; DELETE FROM follow_state WHERE key = 'ch_resent'" ||
	fail "upgrade: cannot make the older live.db"
start
wait_for "SELECT count(*) FROM pragma_table_info('follow_requests') WHERE name = 'span_fp'" 1
wait_for "SELECT (SELECT count(*) FROM follow_state WHERE key = 'ch_resent') || ' ' ||
	(SELECT count(*) FROM sqlite_master WHERE name = 'follow_ch_del')" "1 1"
kill -INT $pid
wait $pid || fail "upgrade: the second run's SIGINT: exit status $?"
pid=
[ "$(q "SELECT count(*) || ' ' || sum(revised) FROM follow_requests")" = "200 0" ] ||
	fail "upgrade: $(q "SELECT count(*) || ' ' || sum(revised) FROM follow_requests") (requests, revised), wanted 200 0"
echo "PASS: --follow: a live.db without span_fp, follow_ch_del and ch_resent is carried on, nothing written again"

# The kept merge checked against the pass at once over a copy of the
# bytes it read (BP_FOLLOW_KEEPER=check, as tb-follow-check.sh), with a
# segment file shorter than a header among the logs (bp-logd or a
# spooling tracer creating it): the kept pass skips it with a warning,
# and the copy must hold it too, or the pass at once has one warning
# fewer and the check fails (it did, in tb-follow-check under load)
rm -rf "$tmp/live" "$tmp"/live.db* "$tmp/err"
mkdir -p "$tmp/live"
$gen -n 2000 "$tmp/ck" >/dev/null || fail "genlog -n 2000"
cp -r "$tmp/ck"/* "$tmp/live/"
hd=$(ls -d "$tmp"/live/*/ | head -n 1)
: >"$hd/zz-being-created.btl"
BP_FOLLOW_KEEPER=check $bin --follow --follow-interval=0.2 --follow-grace=0.1 \
	--follow-window=0.05 "$tmp/live" -o "$tmp/live.db" 2>>"$tmp/err" &
pid=$!
wait_for "SELECT count(*) FROM requests" 2000
for k in $(seq 1 50); do
	: >"$hd/wake-$k"
	[ "$(q "SELECT value >= 3 FROM stats WHERE key = 'follow_kept_checked'")" = 1 ] && break
	kill -0 $pid 2>/dev/null || break
	sleep 0.2
done
ck=$(q "SELECT value FROM stats WHERE key = 'follow_kept_checked'")
kill -0 $pid 2>/dev/null ||
	fail "kept merge, a file shorter than a header: --follow ended ($(grep -m 1 'error' "$tmp/err"))"
[ "${ck:-0}" -ge 3 ] || fail "kept merge, a file shorter than a header: ${ck:-no} passes checked, wanted 3 (stats: $(q "SELECT group_concat(key || '=' || value) FROM stats WHERE key LIKE 'follow_kept%'"))"
stop_follow "kept merge, a file shorter than a header"
[ "$(q "SELECT count(*) FROM warnings WHERE text LIKE '%too short for a segment header%' AND file LIKE '%zz-being-created.btl'")" = 1 ] ||
	fail "kept merge: no warning names the file shorter than a header"
echo "PASS: --follow: the kept merge's passes ($ck checked) are the passes at once with a file shorter than a header among the logs"
