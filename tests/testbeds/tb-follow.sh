#!/bin/bash
# tb-follow.sh - live mode (issue 16): `bp-reconstruct --follow` on the
# nginx -> php-fpm -> PostgreSQL testbed while it serves steady load, with
# bp-logd and bp-reconstruct --follow each SIGKILLed and restarted once
# on the way.  See docs/accuracy.md, "Live mode".
#
# One traced run (event isolation on, the servers and rules of
# tb-nginx-fpm.sh): bp-logd writes DIR/logs, the tracers' spool is
# DIR/spool (where their events go while bp-logd is down), and
#   bp-reconstruct --follow --follow-interval=I --follow-grace=G \
#       DIR/logs DIR/spool -o DIR/live.db --otlp-endpoint RX \
#       --clickhouse CH?database=bpt --clickhouse-run tbfollow
# runs from before the first request to after the last, pushing to the
# OTLP receiver of the push tests (tests/report/otlp-receiver.js) and
# writing into a clickhouse-server started by hand (tests/lib/clickhouse.sh).  tb-client drives
# the load in rounds of one second: each round TB_FOLLOW_RATE requests
# (default 50) on 4 keep-alive connections, then it sleeps for the rest
# of the second; each round writes its own ground truth.  At 30% of the
# run bp-logd is SIGKILLed and started again TB_FOLLOW_DOWN seconds later
# (default 2; the tracers spool meanwhile and reconnect: docs/logd.md,
# "Crashes"); at 60% bp-reconstruct --follow is SIGKILLed and the same
# command started again on the same live.db.  Every second a monitor
# notes the RSS of bp-reconstruct (/proc/PID/status VmRSS) and reads
# live.db (read-only, while it is written) for what was emitted.  At the
# end: the load stops, live.db is copied as it is (DIR/snapshot.db), the
# servers and bp-logd stop, bp-reconstruct --follow gets SIGINT (its last
# pass, exit 0), and the offline bp-reconstruct reads the same logs into
# DIR/offline.db.  The servers stop before the last pass so that it reads
# what the offline run reads (the processes' exits add their last
# records; what an idle process held in its ring when bp-logd was
# killed, the restarted bp-logd adopts and writes at once: docs/logd.md,
# "Crashes").
#
# Asserted:
#   - every round of the client verified every answer;
#   - live.db could be read at every poll once it existed;
#   - check-testbed.py: every request's path in live.db is right (100%,
#     all exact), and the same for offline.db;
#   - every ground-truth id is the target of exactly one row of live.db's
#     requests; count(requests) = count(DISTINCT follow_requests.key) =
#     the offline count;
#   - the sinks: every request pushed and in ClickHouse; the receiver's
#     spans exactly live.db's (otlp-push-check.py: ids, parents, names,
#     times, attributes), the requests written again after their first
#     time set apart and counted (the receiver may hold their first
#     version) but each must be whole there (--revised-whole: no request
#     pushed in part), and the spans of the one push the SIGKILL of
#     --follow cut before it was marked, sent again on its restart (at
#     least once), counted when both copies are the same
#     (--resent-identical); ClickHouse, once it applied its mutations, every table
#     row for row and every view of docs/clickhouse.md as live.db
#     (clickhouse-check.py);
#   - the same trees: a dump of each database by content (per request:
#     method, target, status, complete, certainty and its spans by start:
#     kind, protocol, name, target, status, exe, pid, tid, the parent's
#     name, duration), sorted, is the same for both;
#   - while the servers ran (the copy): no id in more than one request,
#     and every request labelled exact the same as offline (one whose
#     events came late may be missing or labelled uncertain: counted and
#     printed);
#   - lag (follow_requests.emitted_ns - requests.end_ns) of the requests
#     that ended while the run was steady (at least I + G + 1 s before
#     the copy, and not from I + G + 1 s before a kill to 2 s after its
#     restart; at least 50 of them): p99 <= TB_FOLLOW_MAXLAG seconds
#     (default: the grace and a pass interval rounded up to whole
#     seconds, plus 1 s for the pass itself on a run of 60 s or more,
#     2 s on a shorter one: 2 s and 3 s with the defaults); no request
#     emitted before it ended; none that ended I + G + 1 s before the
#     copy or earlier (restart windows too) emitted more than
#     TB_FOLLOW_MAXWAIT seconds after it ended (a request no window
#     pass took waits for the next full pass).
# Printed, not asserted: the lag distribution (p50, p99, max) of the
# steady requests and of the others, bp-reconstruct's RSS (first-quarter
# median, last-quarter median, peak: the engine re-reads every log each
# pass, so it grows with the logs), what went through the spool.
#
# Environment (besides lib.sh's):
#   TB_FOLLOW_SECS      seconds of load, at least 20 (default 60 by hand
#                       or with BP_FULL=1; 20 under make check, where
#                       MAKELEVEL is set)
#   TB_FOLLOW_RATE      requests per one-second round (default 50)
#   TB_FOLLOW_INTERVAL  --follow-interval (default 0.5)
#   TB_FOLLOW_GRACE     --follow-grace (default 0.5)
#   TB_FOLLOW_WINDOW    --follow-window (default 10)
#   TB_FOLLOW_DOWN      seconds bp-logd stays dead (default 2)
#   TB_FOLLOW_MAXWAIT   bound on every request's lag in seconds, the
#                       restart windows too (default 60): one left for
#                       the next full pass waits minutes at a long
#                       history
#   TB_FOLLOW_MAXLAG    bound on the steady p99 lag in seconds (default
#                       1 + TB_FOLLOW_INTERVAL + TB_FOLLOW_GRACE, the
#                       sum rounded up to whole seconds: 2 s with the
#                       defaults, the issue's figure, when the run is 60
#                       s or more; 3 s on the 20 s run of make check)
#   TB_FOLLOW_LATE=1    (tb-follow-late.sh) php-fpm and PostgreSQL are
#                       traced by a second bp-logd that drains their rings
#                       every TB_FOLLOW_LATE_MS ms (default 3000) into
#                       DIR/logs2: their records reach the logs seconds
#                       after nginx's, as a slow drain, a restart or a
#                       remote host's logs copied in batches make them.
#                       A pass then sees nginx's part of a request alone:
#                       asserted besides the above, that live.db held such
#                       requests as uncertain (polled) and that none
#                       reached the receiver in part (the revised ones
#                       too: otlp-push-check.py --revised-whole)
#   BP_KEEP=1           keep the directory: besides the servers' and the
#                       tools' logs, run1/events (kills and restarts,
#                       Unix ns), rss (ns pid KiB), poll (each read of
#                       live.db), lag (end_ns emitted_ns steady), the
#                       dumps live.dump and offline.dump, both databases
TB_FRONT=nginx
TB_APPS=php
TB_MIX=php:8,static:2
. "$(dirname "$0")/lib.sh"

if [ -z "${TB_FOLLOW_SECS:-}" ]; then
	if [ -n "${MAKELEVEL:-}" ] && [ "${BP_FULL:-0}" != 1 ]; then
		TB_FOLLOW_SECS=20
	else
		TB_FOLLOW_SECS=60
	fi
fi
: "${TB_FOLLOW_RATE:=50}" "${TB_FOLLOW_INTERVAL:=0.5}" "${TB_FOLLOW_GRACE:=0.5}"
: "${TB_FOLLOW_DOWN:=2}"
: "${TB_FOLLOW_WINDOW:=10}"
: "${TB_FOLLOW_LATE:=0}" "${TB_FOLLOW_LATE_MS:=3000}"
case $TB_FOLLOW_LATE_MS in '' | *[!0-9]*)
	echo "FAIL: tb-follow: TB_FOLLOW_LATE_MS must be a whole number (${TB_FOLLOW_LATE_MS})" >&2
	exit 1 ;;
esac
for v in TB_FOLLOW_SECS TB_FOLLOW_RATE TB_FOLLOW_DOWN; do
	case ${!v} in '' | *[!0-9]*)
		echo "FAIL: tb-follow: $v must be a whole number (${!v})" >&2
		exit 1 ;;
	esac
done
for v in TB_FOLLOW_INTERVAL TB_FOLLOW_GRACE TB_FOLLOW_WINDOW; do
	case ${!v} in '' | .* | *.*.* | *[!0-9.]*)
		echo "FAIL: tb-follow: $v must be a number of seconds (${!v})" >&2
		exit 1 ;;
	esac
done
# whole seconds for the shell's sleeps: I + G rounded up
IG=$(awk -v i="$TB_FOLLOW_INTERVAL" -v g="$TB_FOLLOW_GRACE" \
	'BEGIN { s = i + g; printf "%d", s == int(s) ? s : int(s) + 1 }')
# the issue's figure (99% within 2 s) on the full run; a second more under
# make check, where other work may share the two cores
if [ "$TB_FOLLOW_SECS" -ge 60 ]; then
	: "${TB_FOLLOW_MAXLAG:=$((1 + IG))}"
else
	: "${TB_FOLLOW_MAXLAG:=$((2 + IG))}"
fi
: "${TB_FOLLOW_MAXWAIT:=60}"
case $TB_FOLLOW_MAXWAIT in '' | *[!0-9]*)
	echo "FAIL: tb-follow: TB_FOLLOW_MAXWAIT must be a whole number of seconds ($TB_FOLLOW_MAXWAIT)" >&2
	exit 1 ;;
esac
case $TB_FOLLOW_MAXLAG in '' | .* | *.*.* | *[!0-9.]*)
	echo "FAIL: tb-follow: TB_FOLLOW_MAXLAG must be a number of seconds ($TB_FOLLOW_MAXLAG)" >&2
	exit 1 ;;
esac
[ "$TB_FOLLOW_SECS" -ge 20 ] || {
	echo "FAIL: tb-follow: TB_FOLLOW_SECS must be at least 20" >&2
	exit 1
}

tb_init follow
tb_need sqlite3 sqlite3
# The sinks (issue 16: every request in SQLite, at an OTLP receiver and
# in ClickHouse, once, with the offline run's tree): the OTLP receiver
# of the push tests (node, protobufjs pinned in the build tree) and a
# clickhouse-server started by hand.  Both are installed by run-tests:
# missing, they fail the test (never a skip).
command -v node >/dev/null || bp_fail "no node for the OTLP receiver (apt-get install nodejs npm)"
# shellcheck source=../report/lib.sh
. "$TB_SRC/../report/lib.sh"
RP_TEST=$BP_TEST
# shellcheck source=../lib/clickhouse.sh
. "$TB_SRC/../lib/clickhouse.sh"
rp_node

FOLLOW_PID=""
MON_PID=""
LOAD_PID=""

# Processes started here by hand, not by bp_start: stopped first on exit.
follow_cleanup() {
	local p
	[ -n "${T:-}" ] && [ -d "$T" ] && touch "$T/stop" 2>/dev/null
	for p in "$LOAD_PID" "$MON_PID" "$FOLLOW_PID"; do
		bp_running "$p" && bp_kill TERM "$p"
	done
	for p in "$LOAD_PID" "$MON_PID" "$FOLLOW_PID"; do
		bp_running "$p" && { bp_wait_gone "$p" 30 || bp_kill KILL "$p"; }
	done
	return 0
}
bp_cleanup_first follow_cleanup

now_ns() { date +%s%N; }

# event NAME: when something happened to the run (DIR/events).
event() {
	echo "$1 $(now_ns)" >>"$dir/events"
	bp_note "$(printf '%6.1f s' "$(awk -v a="$(now_ns)" -v b="$T0" \
		'BEGIN { print (a - b) / 1e9 }')") $1"
}

# follow_start: bp-reconstruct --follow in the background (FOLLOW_PID,
# also written to DIR/follow.pid for the monitor); its output appended.
follow_start() {
	"$BP_RECONSTRUCT" --follow --follow-interval="$TB_FOLLOW_INTERVAL" \
		--follow-grace="$TB_FOLLOW_GRACE" \
		--follow-window="$TB_FOLLOW_WINDOW" "${TB_LOGDIRS[@]}" \
		-o "$dir/live.db" --otlp-endpoint "$RX" \
		--clickhouse "$CH?database=bpt" --clickhouse-run tbfollow \
		>>"$dir/follow.out" 2>>"$dir/follow.log" &
	FOLLOW_PID=$!
	echo "$FOLLOW_PID" >"$dir/follow.pid"
	sleep 0.3
	bp_running "$FOLLOW_PID" || bp_fail "bp-reconstruct --follow exited" \
		"at start: $(tail -n 5 "$dir/follow.log")"
}

# follow_alive: fail unless bp-reconstruct --follow still runs.
follow_alive() {
	local rc
	bp_running "$FOLLOW_PID" && return 0
	wait "$FOLLOW_PID"
	rc=$?
	bp_fail "bp-reconstruct --follow died (status $rc):" \
		"$(tail -n 5 "$dir/follow.log")"
}

# load: rounds of one second until TB_FOLLOW_SECS have passed (at most
# 2 * TB_FOLLOW_SECS rounds), each TB_FOLLOW_RATE requests on 4
# connections, its truth in DIR/truth.N; a failed round ends the load
# and is noted in DIR/load.failed.  Runs in the background.
load() {
	local n=0 end=$((SECONDS + TB_FOLLOW_SECS)) t0 left rc
	while [ "$SECONDS" -lt "$end" ] && [ "$n" -lt $((2 * TB_FOLLOW_SECS)) ] &&
		[ ! -e "$T/stop" ]; do
		n=$((n + 1))
		t0=$(now_ns)
		timeout 60 "$TB_CLIENT" --host 127.0.0.1 --port "$FRONT_PORT" \
			--conns 4 --pipeline 1 --requests "$TB_FOLLOW_RATE" \
			--mix "$TB_MIX" --static-dir "$T/www/static" \
			--timeout-ms 50000 --idle-ms 30000 \
			--run "$(printf '%06x' "$n")" \
			--truth "$dir/truth.$n" >>"$dir/client.out" \
			2>>"$T/client.log"
		rc=$?
		if [ "$rc" != 0 ]; then
			echo "round $n: tb-client status $rc" >"$dir/load.failed"
			break
		fi
		left=$(( (1000000000 - ($(now_ns) - t0)) / 1000000 ))
		[ "$left" -gt 0 ] && sleep "$(printf '0.%03d' "$left")"
	done
	echo "$n" >"$dir/load.rounds"
}

# wait_until SECS: sleep until SECS seconds after T0 (the load's start),
# failing when the load failed meanwhile.
wait_until() {
	local at=$(($1 * 1000000000 + T0)) left
	while :; do
		[ -e "$dir/load.failed" ] && bp_fail "the client failed:" \
			"$(cat "$dir/load.failed"): $(tail -n 5 "$T/client.log")"
		left=$(( (at - $(now_ns)) / 1000000 ))
		[ "$left" -le 0 ] && return 0
		[ "$left" -gt 500 ] && left=500
		sleep "$(printf '0.%03d' "$left")"
	done
}

# ---- the run ---------------------------------------------------------------
dir=$T/run1
mkdir -p "$dir/run" "$dir/state"
chmod 1777 "$dir/run" "$dir/state"
chmod 755 "$dir"
bp_free_port FRONT_PORT
bp_free_port PY_PORT
bp_free_port PY2_PORT
bp_free_port FPM_PORT
bp_free_port PGPORT
# The spool: where a tracer writes its events while bp-logd is down
# (libbtrace/spool.c: BTRACE_SPOOL/HOST, every directory owned by the
# writer or root and writable by nobody else unless root's and sticky).
# The host directory is made here, root's and sticky, so that the root
# masters and the www-data and postgres processes all spool into it
# rather than into /tmp/btrace-UID/spool.
SPOOL_HOST=${BTRACE_HOST:-$(uname -n)}
mkdir -p "$dir/spool/$SPOOL_HOST"
chmod 755 "$dir/spool"
chmod 1777 "$dir/spool/$SPOOL_HOST"
export BTRACE_SPOOL=$dir/spool
TB_LOGDIRS=("$dir/logs" "$dir/spool")

bp_logd_start -w NS_WEB "$dir" -u www-data -u postgres
bp_trace_prefix "$BP_LOGD_SOCK" "$(tb_rules "$dir")" 1
PRE_WEB=("${BP_PREFIX[@]}") PRE_APP=("${BP_PREFIX[@]}")
PRE_DB=("${BP_PREFIX[@]}")
if [ "$TB_FOLLOW_LATE" = 1 ]; then
	# php-fpm and PostgreSQL drained late, into a directory of their own
	bp_logd_start -n logd2 -s "$dir/logd2.sock" -l "$dir/logs2" -w NS_WEB \
		"$dir" -u www-data -u postgres -i "$TB_FOLLOW_LATE_MS"
	bp_trace_prefix "$dir/logd2.sock" "$(tb_rules "$dir")" 1
	PRE_APP=("${BP_PREFIX[@]}") PRE_DB=("${BP_PREFIX[@]}")
	TB_LOGDIRS+=("$dir/logs2")
fi
tb_start_all "$dir"

rp_rx sinks
bp_ch_start
T0=$(now_ns)
: >"$dir/events"
follow_start
event follow-start
# the monitor: every second (bounded: the run plus 10 minutes) the RSS of
# the running bp-reconstruct --follow and a read of live.db
"$PY" - "$dir" "$T/stop" $((TB_FOLLOW_SECS + 600)) <<-'PYEOF' \
	>"$dir/monitor.out" 2>"$dir/monitor.log" &
import os, sqlite3, sys, time
d, stop, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
rss = open(os.path.join(d, 'rss'), 'a', buffering=1)
crss = open(os.path.join(d, 'rss_child'), 'a', buffering=1)
poll = open(os.path.join(d, 'poll'), 'a', buffering=1)
held = open(os.path.join(d, 'held'), 'a', buffering=1)
db = os.path.join(d, 'live.db')
t_end = time.time() + limit
while time.time() < t_end and not os.path.exists(stop):
    now = time.time_ns()
    try:
        pid = int(open(os.path.join(d, 'follow.pid')).read())
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    rss.write('%d %d %s\n' % (now, pid, line.split()[1]))
        # its child: a full pass in the background
        kids = open('/proc/%d/task/%d/children' % (pid, pid)).read().split()
        for k in kids:
            with open('/proc/%s/status' % k) as f:
                for line in f:
                    if line.startswith('VmRSS:'):
                        crss.write('%d %s %s\n' % (now, k, line.split()[1]))
    except (OSError, ValueError):
        pass
    if os.path.exists(db):
        try:
            c = sqlite3.connect('file:%s?mode=ro' % db, uri=True,
                                timeout=2)
            n, e = c.execute('SELECT count(*), max(emitted_ns) FROM '
                             'follow_requests').fetchone()
            # written, uncertain for records on their way
            u = c.execute("SELECT count(*) FROM requests WHERE certainty = "
                          "'uncertain' AND (certainty_reason LIKE "
                          "'%unlogged-send%' OR certainty_reason LIKE "
                          "'%peer-not-logged%')").fetchone()[0]
            c.close()
            poll.write('%d ok %d %d\n' % (now, n, e or 0))
            held.write('%d %d\n' % (now, u))
        except sqlite3.Error as ex:
            poll.write('%d error %s\n' % (now, str(ex).replace('\n', ' ')))
    time.sleep(max(0.0, 1.0 - (time.time_ns() - now) / 1e9))
PYEOF
MON_PID=$!
# live.db with its tables (the first pass) before the first request
live_ready() {
	sqlite3 -readonly "$dir/live.db" 'SELECT count(*) FROM follow_requests' \
		>/dev/null 2>&1
}
bp_wait_for "bp-reconstruct --follow to create live.db" 300 live_ready
follow_alive

T0=$(now_ns)
load &
LOAD_PID=$!
event load-start

# bp-logd SIGKILLed at 30%, started again TB_FOLLOW_DOWN s later
wait_until $((TB_FOLLOW_SECS * 3 / 10))
event logd-kill
bp_kill KILL "${BP_PID[logd]}"
wait "${BP_LAUNCHER[logd]}" 2>/dev/null
BP_LAUNCHER[logd]=""
sleep "$TB_FOLLOW_DOWN"
bp_logd_start -w NS_WEB "$dir" -u www-data -u postgres
event logd-up

# bp-reconstruct --follow SIGKILLed at 60% and started again
wait_until $((TB_FOLLOW_SECS * 6 / 10))
follow_alive
event follow-kill
bp_kill KILL "$FOLLOW_PID"
wait "$FOLLOW_PID" 2>/dev/null
sleep 1
follow_start
event follow-up

# the end of the load
wait_until "$TB_FOLLOW_SECS"
bp_wait_gone "$LOAD_PID" 900 || bp_fail "the load did not end within" \
	"90 s of its time"
wait "$LOAD_PID"
LOAD_PID=""
[ -e "$dir/load.failed" ] && bp_fail "the client failed:" \
	"$(cat "$dir/load.failed"): $(tail -n 5 "$T/client.log")"
event load-end
ROUNDS=$(cat "$dir/load.rounds")
cat "$dir"/truth.* >"$dir/truth"
SENT=$(wc -l <"$dir/truth")
bp_note "load: $ROUNDS rounds, $SENT requests; last round: $(tail -n 1 "$dir/client.out")"
# let the live passes see the end of the load, then a copy of live.db as
# it is while the servers run (SQLite's backup API: one read transaction)
sleep $((IG + 2))
follow_alive
event snapshot
"$PY" -c 'import sqlite3, sys
src = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=10)
dst = sqlite3.connect(sys.argv[2])
src.backup(dst)
dst.close()' "$dir/live.db" "$dir/snapshot.db" ||
	bp_fail "cannot copy live.db while bp-reconstruct --follow writes it"
# The servers and bp-logd stop before the last pass, so that it reads
# the logs the offline run reads (docs/accuracy.md, "Live mode").
tb_stop_all "$dir"
bp_stop logd
[ "$TB_FOLLOW_LATE" = 1 ] && bp_stop logd2
event servers-stopped
event follow-sigint
bp_kill INT "$FOLLOW_PID"
bp_wait_gone "$FOLLOW_PID" 1200 || bp_fail "bp-reconstruct --follow did" \
	"not exit within 120 s of SIGINT"
wait "$FOLLOW_PID"
rc=$?
FOLLOW_PID=""
event follow-exit
[ "$rc" = 0 ] || bp_fail "bp-reconstruct --follow exited with status $rc" \
	"after SIGINT: $(tail -n 5 "$dir/follow.log")"
touch "$T/stop"
bp_wait_gone "$MON_PID" 50 || bp_kill TERM "$MON_PID"
wait "$MON_PID" 2>/dev/null
MON_PID=""
bp_note "live.db: $(sqlite3 -readonly "$dir/snapshot.db" \
	'SELECT count(*) FROM follow_requests') requests before the servers" \
	"stopped, $(sqlite3 -readonly "$dir/live.db" \
	'SELECT count(*) FROM follow_requests') after the last pass"

timeout 300 "$BP_RECONSTRUCT" "${TB_LOGDIRS[@]}" -o "$dir/offline.db" \
	>"$dir/reconstruct.out" 2>"$dir/reconstruct.log" ||
	bp_fail "bp-reconstruct failed (status $?) on ${TB_LOGDIRS[*]}:" \
		"$(tail -n 3 "$dir/reconstruct.log")"
bp_note "offline: $(grep -o '[0-9]* requests ([0-9]* exact, [0-9]* resolved, [0-9]* uncertain)' \
	"$dir/reconstruct.log" | tail -n 1)"
bp_note "logs $(du -sk "$dir/logs" | cut -f1) KiB; spool $(find "$dir/spool" \
	-name '*.btl' | wc -l) files, $(du -sk "$dir/spool" | cut -f1) KiB"

# ---- the checks ------------------------------------------------------------
# check DB LABEL: check-testbed.py on DB against the whole truth.
check() {
	"$PY" "$TB_SRC/check-testbed.py" --truth "$dir/truth" --db "$1" \
		--label "$BP_TEST: $2" --front nginx \
		--php "$(basename "${PHPFPM:-php-fpm}")" --explain "$TB_EXPLAIN" |
		tee -a "$T/results.txt"
	return "${PIPESTATUS[0]}"
}
check "$dir/offline.db" offline || bp_fail "offline: wrong request paths" \
	"(see above)"
LIVE_BAD=""
check "$dir/live.db" live || LIVE_BAD="live: wrong request paths (see above)"

# the restart windows: requests that ended from W_PRE s before a kill to
# W_POST s after the restart may be emitted late by design
W_PRE=$((IG + 1))
W_POST=2
"$PY" - "$dir" "$W_PRE" "$W_POST" "$TB_FOLLOW_MAXLAG" "$TB_FOLLOW_MAXWAIT" <<-'PYEOF' ||
import os, re, sqlite3, statistics, sys
from collections import Counter
d, maxlag, maxwait = sys.argv[1], float(sys.argv[4]), float(sys.argv[5])
W_PRE, W_POST = int(sys.argv[2]) * 10**9, int(sys.argv[3]) * 10**9
ID_RE = re.compile(r'q\d+x[0-9a-f]{6}')
bad = []
live = sqlite3.connect('file:%s?mode=ro' % os.path.join(d, 'live.db'),
                       uri=True)
off = sqlite3.connect('file:%s?mode=ro' % os.path.join(d, 'offline.db'),
                      uri=True)
one = lambda c, q: c.execute(q).fetchone()[0]

# every id of the truth in exactly one row of requests
truth = [l.split('\t', 1)[0] for l in open(os.path.join(d, 'truth'))]
seen = Counter()
for (target,) in live.execute('SELECT target FROM requests'):
    for rid in set(ID_RE.findall(target or '')):
        seen[rid] += 1
missing = [t for t in truth if seen[t] == 0]
twice = [t for t in truth if seen[t] > 1]
print('tb-follow: ids: %d sent, %d in exactly one live request, %d missing, '
      '%d in more than one' % (len(truth), len(truth) - len(missing) -
                               len(twice), len(missing), len(twice)))
if missing or twice:
    bad.append('ids missing %s, in more than one request %s'
               % (missing[:5], twice[:5]))
n_live = one(live, 'SELECT count(*) FROM requests')
n_keys = one(live, 'SELECT count(DISTINCT key) FROM follow_requests')
n_fr = one(live, 'SELECT count(*) FROM follow_requests')
n_join = one(live, 'SELECT count(*) FROM requests r JOIN follow_requests f '
             'ON f.request_id = r.request_id')
n_off = one(off, 'SELECT count(*) FROM requests')
revised = one(live, 'SELECT count(*) FROM follow_requests WHERE revised > 0')
print('tb-follow: requests: live %d, follow_requests keys %d (rows %d, %d '
      'matching a request, %d revised), offline %d'
      % (n_live, n_keys, n_fr, n_join, revised, n_off))
if not n_live == n_keys == n_fr == n_join == n_off:
    bad.append('request counts differ: live %d, keys %d, follow_requests %d, '
               'joined %d, offline %d' % (n_live, n_keys, n_fr, n_join, n_off))
for name, c in (('live', live), ('offline', off)):
    n = one(c, "SELECT count(*) FROM requests WHERE certainty != 'exact'")
    if n:
        bad.append('%s: %d requests not labelled exact' % (name, n))

# the same trees, by content
def dump(c):
    spans = {}
    for row in c.execute(
            'SELECT s.request_id, s.start_ns, s.kind, s.protocol, s.name, '
            's.target, s.status, s.exe, s.pid, s.tid, p.name, '
            's.end_ns - s.start_ns FROM spans s LEFT JOIN spans p '
            'ON p.span_id = s.parent_span_id '
            'WHERE s.request_id IS NOT NULL'):
        spans.setdefault(row[0], []).append(row[1:])
    out = []
    for rid, method, target, status, complete, cert in c.execute(
            'SELECT request_id, method, target, status, complete, '
            'certainty FROM requests'):
        ss = sorted(spans.get(rid, ()), key=lambda s: (
            s[0] is None, s[0] or 0, repr(s[1:])))
        out.append('%r %r %r %r %r | %s' % (
            method, target, status, complete, cert,
            ' ; '.join(repr(s[1:]) for s in ss)))
    return sorted(out)
dl, do = dump(live), dump(off)
for name, lines in (('live', dl), ('offline', do)):
    with open(os.path.join(d, name + '.dump'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
if dl != do:
    import difflib
    diff = list(difflib.unified_diff(do, dl, 'offline.dump', 'live.dump',
                                     n=0, lineterm=''))
    print('tb-follow: the trees differ (%d lines of diff; first 20):'
          % len(diff))
    for l in diff[:20]:
        print('  ' + l[:300])
    bad.append('live and offline trees differ')
else:
    print('tb-follow: trees: the %d requests of live.db and offline.db are '
          'the same by content' % len(dl))

ev = {}
for l in open(os.path.join(d, 'events')):
    k, v = l.split()
    ev.setdefault(k, []).append(int(v))
windows = [(ev['logd-kill'][0] - W_PRE, ev['logd-up'][0] + W_POST),
           (ev['follow-kill'][0] - W_PRE, ev['follow-up'][0] + W_POST)]
sigint = ev['follow-sigint'][0]
snap_t = ev['snapshot'][0]

# live.db while the servers ran (snapshot.db): every request in it is
# once, and the same as offline unless it is labelled other than exact
# (a request whose events were late); what it does not hold yet is
# counted, with whether it ended in a restart window
snap = sqlite3.connect('file:%s?mode=ro' % os.path.join(d, 'snapshot.db'),
                       uri=True)
ds, off_set = dump(snap), set(do)
sseen = Counter()
for (target,) in snap.execute('SELECT target FROM requests'):
    for rid in set(ID_RE.findall(target or '')):
        sseen[rid] += 1
stwice = [t for t in truth if sseen[t] > 1]
differ = [l for l in ds if l not in off_set]
differ_exact = [l for l in differ if " 'exact' | " in l]
held = []                       # (end_ns, late by design) of each
for target, end in off.execute('SELECT target, end_ns FROM requests'):
    ids = set(ID_RE.findall(target or ''))
    if ids and not any(sseen[x] for x in ids) and end is not None:
        held.append((end, end >= snap_t - W_PRE or
                     any(a <= end <= b for a, b in windows)))
print('tb-follow: while the servers ran: %d requests, %d of them not as '
      'offline (%d labelled exact), %d ids in more than one; not yet '
      'written: %d (%d of them ended in a restart window or within %d s of '
      'the copy)' % (len(ds), len(differ), len(differ_exact), len(stwice),
                     len(held), sum(1 for h in held if h[1]),
                     W_PRE // 10**9))
for l in differ[:5]:
    print('  ' + l[:300])
if differ_exact:
    bad.append('%d requests labelled exact in live.db while the servers ran '
               'are not as offline' % len(differ_exact))
if stwice:
    bad.append('ids in more than one request of live.db while the servers '
               'ran: %s' % stwice[:5])
steady, other, by_end, late = [], [], [], []
# every request's lag in DIR/lag: end_ns emitted_ns steady(1/0)
lagf = open(os.path.join(d, 'lag'), 'w')
for e, end in live.execute(
        'SELECT f.emitted_ns, r.end_ns FROM follow_requests f JOIN requests '
        'r ON r.request_id = f.request_id WHERE r.end_ns IS NOT NULL '
        'ORDER BY r.end_ns'):
    lag = (e - end) / 1e9
    # steady: ended outside the restart windows, early enough to be
    # written before the copy (a request held back past it counts with
    # its whole lag)
    ok = end < snap_t - W_PRE and not any(a <= end <= b for a, b in windows)
    if end < snap_t - W_PRE and lag > maxwait:
        late.append(lag)
    lagf.write('%d %d %d\n' % (end, e, ok))
    if ok:
        steady.append(lag)
        by_end.append((end, lag))
    else:
        other.append(lag)
lagf.close()

def dist(xs):
    if not xs:
        return 'none'
    xs = sorted(xs)
    q = lambda p: xs[min(len(xs) - 1, int(p * len(xs)))]
    return 'n %d p50 %.3f s p99 %.3f s max %.3f s min %.3f s' % (
        len(xs), q(0.5), q(0.99), xs[-1], xs[0])
print('tb-follow: lag (emitted - end), steady: %s' % dist(steady))
print('tb-follow: lag, in a restart window or near the end: %s'
      % dist(other))
# the passes that wrote (one emitted_ns each) while the servers ran: the lag
# is the grace, the wait for a pass to begin and the pass's own time
em = [e for (e,) in live.execute('SELECT DISTINCT emitted_ns FROM '
                                 'follow_requests ORDER BY 1') if e < snap_t]
gaps = sorted((b - a) / 1e9 for a, b in zip(em, em[1:]))
if gaps:
    print('tb-follow: %d passes wrote while the servers ran, %.2f s apart '
          '(median; max %.2f s)' % (len(em), statistics.median(gaps),
                                    gaps[-1]))
# the steady lag along the run (each pass reads the logs from their start)
t0, t1 = ev['load-start'][0], ev['load-end'][0]
quarters = [[] for _ in range(4)]
for end, lag in by_end:
    quarters[min(3, max(0, int(4 * (end - t0) / max(1, t1 - t0))))].append(lag)
print('tb-follow: steady lag p50 / max by quarter of the load: %s' % ', '.join(
    '%.2f / %.2f s (%d)' % (statistics.median(q), max(q), len(q)) if q
    else 'none' for q in quarters))
if len(steady) < max(50, n_live / 10):
    bad.append('only %d of %d requests in the steady windows'
               % (len(steady), n_live))
elif sorted(steady)[min(len(steady) - 1, int(0.99 * len(steady)))] > maxlag:
    bad.append('steady p99 lag above %g s' % maxlag)
# (a request that ended before the copy, restart windows too: the last
# pass, after the servers stopped, writes the others)
if late:
    bad.append('%d requests written more than %g s after their end (at most '
               '%.1f s): left for a full pass' % (len(late), maxwait, max(late)))
if any(x < 0 for x in steady + other):
    bad.append('requests emitted before they ended: %d'
               % sum(1 for x in steady + other if x < 0))

# live.db readable while written
polls = [l.split(None, 2) for l in open(os.path.join(d, 'poll'))]
# from the first poll that read it (the file may exist before its tables)
polls = polls[next((i for i, p in enumerate(polls) if p[1] == 'ok'),
                   len(polls)):]
ok = [p for p in polls if p[1] == 'ok']
err = [p for p in polls if p[1] != 'ok']
print('tb-follow: polls of live.db while written: %d read, %d failed%s'
      % (len(ok), len(err), (' (first: %s)' % err[0][2].strip()) if err
         else ''))
if err or not ok:
    bad.append('live.db not readable at %d of %d polls'
               % (len(err), len(polls)))
counts = [int(p[2].split()[0]) for p in ok]
down = sum(1 for a, b in zip(counts, counts[1:]) if b < a)
stats = {}
try:
    stats = dict(live.execute("SELECT key, value FROM stats WHERE key LIKE "
                              "'follow%'"))
except sqlite3.Error:
    pass
print('tb-follow: rows of follow_requests fell between two polls %d times '
      '(a request withdrawn); live.db stats: %s' % (down, ', '.join(
          '%s %s' % kv for kv in sorted(stats.items())) or 'none'))

# RSS of bp-reconstruct --follow
allrss = [l.split() for l in open(os.path.join(d, 'rss'))]
# the samples of the run; those after the SIGINT are the last pass's
rss = [r for r in allrss if int(r[0]) < sigint]
last = [int(r[2]) for r in allrss if int(r[0]) >= sigint]
if last:
    print('tb-follow: RSS during the last pass (after SIGINT): peak %.1f '
          'MiB' % (max(last) / 1024))
if rss:
    kb = [int(r[2]) for r in rss]
    k = max(1, len(kb) // 4)
    per = {}
    for r in rss:
        per.setdefault(r[1], []).append(int(r[2]))
    print('tb-follow: RSS of bp-reconstruct --follow before the SIGINT: %d '
          'samples, first '
          'quarter median %.1f MiB, last quarter median %.1f MiB, peak %.1f '
          'MiB; per process: %s' % (
              len(kb), statistics.median(kb[:k]) / 1024,
              statistics.median(kb[-k:]) / 1024, max(kb) / 1024,
              ', '.join('%s peak %.1f MiB last %.1f MiB (%d samples)' % (
                  p, max(v) / 1024, v[-1] / 1024, len(v))
                  for p, v in per.items())))
else:
    bad.append('no RSS sample of bp-reconstruct --follow')
crss = [l.split() for l in open(os.path.join(d, 'rss_child'))]
if crss:
    print('tb-follow: RSS of the full passes in the background (children of '
          '--follow): %d samples of %d processes, peak %.1f MiB' % (
              len(crss), len(set(r[1] for r in crss)),
              max(int(r[2]) for r in crss) / 1024))
# events lost (a restart of bp-logd must lose none: docs/logd.md,
# "Crashes"; a loss would make paths wrong, which the checks above catch)
for name, c in (('live', live), ('offline', off)):
    got = []
    for k in ('dropped_by_tracer', 'lost_records'):
        try:
            v = c.execute('SELECT value FROM stats WHERE key = ?',
                          (k,)).fetchone()
        except sqlite3.Error:
            v = None
        got.append('%s %s' % (k, v[0] if v else 'none'))
    print('tb-follow: %s: %s' % (name, ', '.join(got)))
for b in bad:
    print('FAIL: tb-follow: ' + b)
sys.exit(1 if bad else 0)
PYEOF
	LIVE_BAD="${LIVE_BAD:+$LIVE_BAD; }live: see the FAIL lines above"

# The sinks.  Their summary lines; then every request was pushed and is
# in ClickHouse, and the OTLP receiver holds the spans of live.db's
# requests, once, with their ids, names, times and attributes, and
# nothing else (otlp-push-check.py): so every request it holds has the
# tree of live.db, which is the offline run's (above).  Set apart and
# counted (not failed): the requests a pass wrote again after their first
# time, whose first version the receiver may hold (pushed before the
# revision: OTLP cannot take it back; docs/reconstruct.md, "Live").
# ClickHouse, once it has applied its mutations (the rows of requests
# revised or withdrawn after they were sent, deleted there): every table
# row for row and every view of docs/clickhouse.md as live.db.
grep "^bp-reconstruct: \(OTLP push\|ClickHouse\):" "$dir/follow.log" | tail -n 2 |
	sed 's/^bp-reconstruct: /tb-follow: sink: /'
sinks=$(sqlite3 -readonly "$dir/live.db" "SELECT
	(SELECT count(*) FROM follow_requests WHERE pushed NOT IN (1, 2)) || ' ' ||
	(SELECT count(*) FROM follow_requests WHERE ch_pushed <> 1) || ' ' ||
	(SELECT count(*) FROM follow_requests WHERE pushed = 2) || ' ' ||
	(SELECT value FROM follow_state WHERE key = 'push_withdrawn')")
read -r not_pushed not_ch pushed_revised pushed_withdrawn <<<"$sinks"
echo "tb-follow: sinks: $not_pushed requests not pushed, $not_ch not in ClickHouse as they are; the receiver holds the first version of $pushed_revised revised and $pushed_withdrawn withdrawn after they were pushed"
[ "$not_pushed" = 0 ] && [ "$not_ch" = 0 ] ||
	LIVE_BAD="${LIVE_BAD:+$LIVE_BAD; }sinks: $not_pushed requests not pushed, $not_ch not in ClickHouse"
# (the checkers' first problem goes into the FAIL line: a CI report may
# show a failed test's log from that line on only)
"$PY" "$TB_SRC/../report/otlp-push-check.py" "$dir/live.db" "$T/sinks/batches.jsonl" \
	--revised-whole --resent-identical 2>"$T/otlp-check.err" | sed 's/^/tb-follow: /'
[ "${PIPESTATUS[0]}" = 0 ] ||
	LIVE_BAD="${LIVE_BAD:+$LIVE_BAD; }the OTLP receiver's spans are not live.db's ($(head -n 1 "$T/otlp-check.err"))"
sed 's/^/tb-follow: /' "$T/otlp-check.err" >&2
# late records: live.db held requests as uncertain while their records
# were on their way (the polls' largest count; none would mean the run
# did not test what it is for)
UNC_MAX=$(sort -k2,2n "$dir/held" 2>/dev/null | tail -n 1 | cut -d' ' -f2)
echo "tb-follow: requests uncertain for late records (unlogged-send, peer-not-logged) at a poll: at most ${UNC_MAX:-0}"
[ "$TB_FOLLOW_LATE" = 1 ] && [ "${UNC_MAX:-0}" -lt 1 ] &&
	LIVE_BAD="${LIVE_BAD:+$LIVE_BAD; }TB_FOLLOW_LATE: no poll saw a request waiting for late records"
bp_ch_mutations_wait tb-follow bpt
for what in tables views; do
	"$PY" "$TB_SRC/../report/clickhouse-check.py" "$what" "$dir/live.db" "$CH" \
		bpt tbfollow "$top_srcdir/docs/clickhouse.md" 2>"$T/ch-check.err" |
		sed 's/^/tb-follow: /'
	[ "${PIPESTATUS[0]}" = 0 ] ||
		LIVE_BAD="${LIVE_BAD:+$LIVE_BAD; }ClickHouse's $what are not live.db's ($(head -n 1 "$T/ch-check.err"))"
	sed 's/^/tb-follow: /' "$T/ch-check.err" >&2
done
# the kept merge (docs/reconstruct.md, "The kept merge"): the window
# passes of the last --follow process, made by the keeper; with
# BP_FOLLOW_KEEPER=check (tb-follow-check.sh) each also made at once over
# the same bytes of the logs and found the same (a difference stops the
# run with an error)
kstat() {
	sqlite3 -readonly "$dir/live.db" \
		"SELECT COALESCE((SELECT value FROM stats WHERE key = 'follow_kept_$1'), 0)"
}
KP=$(kstat passes) KR=$(kstat rebuilt) KN=$(kstat renewed) KC=$(kstat checked)
echo "tb-follow: kept merge (last --follow process): $KP passes, $KR made at once after it could not, $KN times made anew beside the old, $KC checked against a pass at once"
grep "kept merge\|kept between passes" "$dir/follow.log" | sed 's/^/tb-follow: follow.log: /' | head -n 5
case ${BP_FOLLOW_KEEPER:-1} in
0) ;;
check)
	[ "$KC" -ge 3 ] && [ "$KC" = "$KP" ] ||
		LIVE_BAD="${LIVE_BAD:+$LIVE_BAD; }kept merge: $KC of $KP passes checked (at least 3, all)" ;;
*)
	[ "$KP" -ge 3 ] ||
		LIVE_BAD="${LIVE_BAD:+$LIVE_BAD; }kept merge: $KP window passes made by it (at least 3)" ;;
esac
[ -z "$LIVE_BAD" ] || bp_fail "$LIVE_BAD"
echo "PASS: tb-follow"
