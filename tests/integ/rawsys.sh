#!/bin/bash
# rawsys.sh - a program that does its network I/O past libc is named.
# tests/integ/rawsys makes its socket, connect, write and read calls with
# syscall(2) by number, as a Go program does: the shim sees none of them.
# Traced under `bp-run --wait` while it talks to an untraced echo server
# for 3.5 s (longer than bp-logd's two looks one second apart), it must be
# named by program and pid in bp-reconstruct's summary, in its last line,
# in the untraced_programs table, in bp-report's section "Programs that
# could not be traced", and in bp-run's line at its exit.
# bp-logd's note for bp-run goes only to a regular file called
# bp-run-unread.* (not through a symbolic link, not to another file).
# Never named (no false positives):
#  - the same client going through libc (rawsys --libc), traced;
#  - a program handed a connected socket at exec that it never touches
#    (sleep with fd 3 a TCP connection made by the untraced shell): the
#    sockets a process holds when its tracer starts are not counted;
#  - a traced program that holds a socket made through libc and idles
#    (python3 connected, then sleeping).
. "$(dirname "$0")/lib.sh"
bp_setup rawsys
bp_require_tracing
RAW=$top_builddir/tests/integ/rawsys
[ -x "$RAW" ] || bp_fail "$RAW is not built (run make check or make tests/integ/rawsys)"
[ -n "$BP_RUN" ] || bp_fail "bp-run is not built: run make"
REPORT=$(bp_find_tool bp-report)
[ -n "$REPORT" ] || bp_fail "bp-report is not built: run make"
SECS=3.5


bp_logd_start "$T"
bp_free_port PORT
bp_start echo "$T/echo.pid" "$PY" "$top_srcdir/tests/integ/echo-server.py" "$PORT" "$T/echo.pid"

# 1. raw system calls, under bp-run --wait
timeout 30 "$BP_RUN" --wait -s "$BP_LOGD_SOCK" -- "$RAW" "$PORT" "$SECS" \
	>"$T/raw.out" 2>"$T/raw.err" ||
	bp_fail "rawsys failed: $(cat "$T/raw.out" "$T/raw.err")"
grep -q "^rawsys: [1-9][0-9]* round trips" "$T/raw.out" ||
	bp_fail "rawsys did not talk to the echo server: $(cat "$T/raw.out")"
grep -q "^bp-run: 1 process of rawsys did its network I/O past the C library (raw system calls: Go, io_uring, ...): not traced" "$T/raw.err" ||
	bp_fail "bp-run did not say that rawsys could not be traced: $(cat "$T/raw.err")"

# bp-logd writes bp-run's note only to a regular file called
# bp-run-unread.* of the tracer's uid, never through a symbolic link
: >"$T/victim"
ln -s "$T/victim" "$T/bp-run-unread.link"
: >"$T/not-a-note"
for note in "$T/bp-run-unread.link" "$T/not-a-note"; do
	timeout 30 env "LD_PRELOAD=$BP_SHIM" "BTRACE_LOGD=$BP_LOGD_SOCK" \
		"BTRACE_UNREAD=$note" "$RAW" "$PORT" "$SECS" >"$T/note.out" 2>&1 ||
		bp_fail "rawsys with BTRACE_UNREAD=$note failed: $(cat "$T/note.out")"
done
[ ! -s "$T/victim" ] && [ ! -s "$T/not-a-note" ] ||
	bp_fail "bp-logd wrote a note through a symbolic link or to a file not bp-run's"

# 2. the control: the same through libc, traced
timeout 30 "$BP_RUN" --wait -s "$BP_LOGD_SOCK" -- "$RAW" --libc "$PORT" "$SECS" \
	>"$T/libc.out" 2>"$T/libc.err" ||
	bp_fail "rawsys --libc failed: $(cat "$T/libc.out" "$T/libc.err")"
grep -q "^rawsys: [1-9][0-9]* round trips" "$T/libc.out" ||
	bp_fail "rawsys --libc did not talk to the echo server: $(cat "$T/libc.out")"
grep -q "past the C library" "$T/libc.err" &&
	bp_fail "bp-run named rawsys --libc, which goes through libc: $(cat "$T/libc.err")"

# 3. a socket inherited at exec, never touched; 4. a socket made through
# libc, then idle
# shellcheck disable=SC2016
timeout 30 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
	LD_PRELOAD=$2 BTRACE_LOGD=$3 exec sleep "$4"' inherit "$PORT" \
	"$BP_SHIM" "$BP_LOGD_SOCK" "$SECS" 2>"$T/inherit.err" ||
	bp_fail "the inherited-socket run failed: $(cat "$T/inherit.err")"
timeout 30 env "LD_PRELOAD=$BP_SHIM" "BTRACE_LOGD=$BP_LOGD_SOCK" "$PY" -c '
import socket, sys, time
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
time.sleep(float(sys.argv[2]))' "$PORT" "$SECS" 2>"$T/idle.err" ||
	bp_fail "the idle python client failed: $(cat "$T/idle.err")"
bp_stop echo any
bp_logd_stop

"$BP_RECONSTRUCT" "$T/logs" -o "$T/paths.db" 2>"$T/recon.err" ||
	bp_fail "bp-reconstruct failed: $(cat "$T/recon.err")"
grep -q "^bp-reconstruct: rawsys ($RAW, pids [0-9]*, [0-9]*, [0-9]*) does its network I/O past libc (raw system calls: Go, io_uring, ...): 3 sockets the tracer never saw, e.g. tcp 127.0.0.1:[0-9]*->127.0.0.1:$PORT: not traced$" "$T/recon.err" ||
	bp_fail "the summary does not name rawsys: $(cat "$T/recon.err")"
n=$(grep -c "past libc (raw system calls" "$T/recon.err")
[ "$n" = 1 ] || bp_fail "$n programs named in the summary, not 1: $(cat "$T/recon.err")"
grep -q "^bp-reconstruct: .* -> .*look at: .*3 processes not traced (network I/O past libc" "$T/recon.err" ||
	bp_fail "the summary line does not point at the untraced process: $(cat "$T/recon.err")"
got=$("$PY" - "$T/paths.db" <<'PYEOF'
import sqlite3, sys
h = sqlite3.connect(sys.argv[1])
rows = h.execute("""SELECT u.exe, u.comm, u.sockets, u.tcp, p.exe
  FROM untraced_programs u LEFT JOIN processes p USING (process_id)""").fetchall()
print(len(rows), ' '.join('%s:%s:%d:%d:%s' % (r[0].rsplit('/', 1)[-1], r[1], r[2], r[3],
                                              (r[4] or 'none').rsplit('/', 1)[-1]) for r in rows))
PYEOF
) || bp_fail "reading $T/paths.db failed"
want="3 rawsys:rawsys:1:1:rawsys rawsys:rawsys:1:1:rawsys rawsys:rawsys:1:1:rawsys"
[ "$got" = "$want" ] ||
	bp_fail "untraced_programs (count, exe:comm:sockets:tcp:process exe): $got, not $want"

"$REPORT" "$T/paths.db" -o "$T/report.html" 2>"$T/report.err" ||
	bp_fail "bp-report failed: $(cat "$T/report.err")"
grep -q ", 3 processes not traced (network I/O past libc) -> " "$T/report.err" ||
	bp_fail "bp-report's summary does not count the process: $(cat "$T/report.err")"
"$PY" - "$T/report.html" <<'PYEOF' || bp_fail "the report lacks the untraced program"
import re, sys
html = open(sys.argv[1], encoding='utf-8').read()
m = re.search(r'<section id="untraced"><h2>Programs that could not be traced</h2>(.*?)</section>', html, re.S)
if not m:
    sys.exit("no section 'Programs that could not be traced'")
rows = re.findall(r'<tr><td>([^<]*)</td>', m.group(1))
if rows != ['rawsys']:
    sys.exit("rows %s, not ['rawsys']: %s" % (rows, m.group(1)[:2000]))
PYEOF
echo "PASS: $BP_TEST: rawsys (socket calls by number) named in bp-run's line, the summary, untraced_programs and the report (three runs, one line); bp-run's note never written through a symbolic link or to another file; its libc twin, a process with an inherited untouched socket and an idle traced client not named"
