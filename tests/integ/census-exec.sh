#!/bin/bash
# census-exec.sh - with BTRACE_CHILD_LAZY=2, an image exec'd by a traced
# one starts without waiting for bp-logd, and the census still names
# exactly what it names when the image waits (docs/logd.md, "Exec'd
# images" and "Programs that cannot be traced"):
#  - a traced python holds a TCP connection made through libc, and runs
#    two programs that inherit it (subprocess, pass_fds): tests/integ/rawsys,
#    which connects by system call number and holds that connection, and
#    sleep, which only holds the inherited one;
#  - each exec'd image listed its sockets itself (bp-logd -vv: "2 sockets
#    held at HELLO, as its shim listed them": the inherited one and its own
#    connection to bp-logd) and connected to the lazy listener (strace: no
#    poll for a WELCOME);
#  - rawsys is named, sleep is not (its inherited socket was in its list),
#    and neither is the parent;
#  - with BTRACE_CHILD_LAZY=1 (forked children only) the exec'd images wait, and
#    bp-logd looked at them itself, with the same verdicts.
. "$(dirname "$0")/lib.sh"

bp_setup census-exec
bp_require_tracing
RAW=$top_builddir/tests/integ/rawsys
[ -x "$RAW" ] || bp_fail "$RAW is not built (run make check or make tests/integ/rawsys)"
command -v strace >/dev/null || bp_fail "strace is needed (apt-get install strace)"
SECS=2.5


# the traced parent: a connection through libc, inherited by both programs
cat >"$T/parent.py" <<'PYEOF'
import os, socket, subprocess, sys
port, secs, raw = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(('127.0.0.1', port))
s.sendall(b'x')
s.recv(1)
kids = [subprocess.Popen([raw, str(port), secs], pass_fds=(s.fileno(),),
                         stdout=subprocess.DEVNULL),
        subprocess.Popen(['sleep', secs], pass_fds=(s.fileno(),))]
bad = sum(k.wait() != 0 for k in kids)
print('parent %d raw %d sleep %d' % (os.getpid(), kids[0].pid, kids[1].pid))
sys.exit(1 if bad else 0)
PYEOF

bp_free_port PORT
bp_start echo "$T/echo.pid" "$PY" "$top_srcdir/tests/integ/echo-server.py" "$PORT" "$T/echo.pid"

# run LAZY: the parent under strace, bp-logd -vv, bp-reconstruct's summary
run() {
	local lazy=$1 d=$T/lazy$1
	mkdir -p "$d"
	bp_logd_start -s "$d/logd.sock" -l "$d/logs" "$d" -vv
	timeout 60 env "LD_PRELOAD=$BP_SHIM" "BTRACE_LOGD=$BP_LOGD_SOCK" \
		"BTRACE_CHILD_LAZY=$lazy" strace -f -qq -o "$d/strace" \
		-e trace=connect,poll,execve \
		"$PY" "$T/parent.py" "$PORT" "$SECS" "$RAW" \
		>"$d/parent.out" 2>"$d/parent.err" ||
		bp_fail "the traced parent failed (lazy $lazy): $(cat "$d/parent.out" "$d/parent.err")"
	bp_stop logd
	read -r _ ppid _ rawpid _ sleeppid < "$d/parent.out" ||
		bp_fail "no pids from the parent: $(cat "$d/parent.out")"
	"$BP_RECONSTRUCT" "$d/logs" -o "$d/paths.db" 2>"$d/recon.err" ||
		bp_fail "bp-reconstruct failed: $(cat "$d/recon.err")"
	grep -q "^bp-reconstruct: rawsys ($RAW, pid $rawpid) does its network I/O past libc" "$d/recon.err" ||
		bp_fail "lazy $lazy: the summary does not name rawsys (pid $rawpid): $(cat "$d/recon.err")"
	n=$(grep -c "does its network I/O past libc" "$d/recon.err")
	[ "$n" = 1 ] ||
		bp_fail "lazy $lazy: $n programs named in the summary, not 1 (sleep $sleeppid holds only an inherited socket): $(cat "$d/recon.err")"
}

run 2
d=$T/lazy2
for pid in $rawpid $sleeppid; do
	grep -q "census: pid $pid: 2 sockets held at HELLO, as its shim listed them$" "$T/logd.log" ||
		bp_fail "pid $pid did not list its 2 sockets (the inherited one, its link): $(grep "census: pid $pid" "$T/logd.log")"
	# after its execve, the image connects to the lazy listener, and no
	# poll waits for a WELCOME
	awk -v p="$pid" '$1 == p && /execve\(/ { x = 1 } x && $1 == p' \
		"$d/strace" >"$d/after-exec.$pid"
	grep -q 'connect(.*\.lazy"' "$d/after-exec.$pid" ||
		bp_fail "pid $pid did not connect to the lazy listener after its exec: $(cat "$d/after-exec.$pid")"
	! grep -q 'poll(' "$d/after-exec.$pid" ||
		bp_fail "pid $pid waited (poll) after its exec: $(grep 'poll(' "$d/after-exec.$pid")"
done
lazy_rawpid=$rawpid

run 1
d=$T/lazy1
for pid in $rawpid $sleeppid; do
	! grep -q "census: pid $pid: .* as its shim listed them" "$T/logd.log" ||
		bp_fail "with BTRACE_CHILD_LAZY=1, pid $pid listed its sockets itself"
	awk -v p="$pid" '$1 == p && /execve\(/ { x = 1 } x && $1 == p' \
		"$d/strace" >"$d/after-exec.$pid"
	grep -q 'poll(' "$d/after-exec.$pid" ||
		bp_fail "with BTRACE_CHILD_LAZY=1, pid $pid did not wait for its WELCOME: $(cat "$d/after-exec.$pid")"
done
bp_stop echo any

echo "PASS: $BP_TEST: with BTRACE_CHILD_LAZY=2, two images exec'd by a traced python (rawsys $lazy_rawpid, sleep) listed their 2 sockets, connected to the lazy listener and did not wait; rawsys named, sleep (an inherited socket) not; with BTRACE_CHILD_LAZY=1 they waited and bp-logd looked, with the same verdicts"
