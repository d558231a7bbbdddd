#!/bin/bash
# census-fork.sh - bp-logd's look at a new tracer's sockets (the census,
# docs/logd.md "Programs that cannot be traced") is skipped exactly when
# the tracer can never be named, and naming is unchanged:
#  - a traced python makes a socket through libc (its shim counts it) and
#    forks three children; each makes a TCP connection with syscall(2) by
#    number and holds it past two looks: never named (their count is their
#    parent's), and bp-logd says (-vv) that it did not read a child's
#    /proc/PID/fd at HELLO (chunk 0, sent with the HELLO, already showed
#    the count);
#  - the parent, whose count was 0 at HELLO, was looked at then;
#  - tests/integ/rawsys (every socket call by number, count 0) is still
#    named, so the census still runs for the tracers it can name.
. "$(dirname "$0")/lib.sh"

bp_setup census-fork
bp_require_tracing
RAW=$top_builddir/tests/integ/rawsys
[ -x "$RAW" ] || bp_fail "$RAW is not built (run make check or make tests/integ/rawsys)"
SECS=3.5


# the traced parent: a socket through libc, then a child that connects by
# system call number (the shim's syscall() passes these numbers through)
cat >"$T/fork.py" <<'PYEOF'
import ctypes, os, socket, struct, sys, time
port, secs = int(sys.argv[1]), float(sys.argv[2])
s = socket.socket()            # counted by the parent's shim
s.close()
def child():
    libc = ctypes.CDLL(None, use_errno=True)
    L = ctypes.c_long
    fd = libc.syscall(L(41), L(socket.AF_INET), L(socket.SOCK_STREAM), L(0))
    sa = (struct.pack('H', socket.AF_INET) + struct.pack('!H', port) +
          socket.inet_aton('127.0.0.1') + b'\0' * 8)
    buf = ctypes.create_string_buffer(sa, 16)
    if fd < 0 or libc.syscall(L(42), L(fd), buf, L(16)) < 0:
        os._exit(3)
    time.sleep(secs)
    os._exit(0)
kids = []
for i in range(3):
    pid = os.fork()
    if pid == 0:
        child()
    kids.append(pid)
bad = 0
for pid in kids:
    _, st = os.waitpid(pid, 0)
    bad += st != 0
print('parent %d children %s' % (os.getpid(), ' '.join(map(str, kids))))
sys.exit(1 if bad else 0)
PYEOF

bp_logd_start "$T" -vv
bp_free_port PORT
bp_start echo "$T/echo.pid" "$PY" "$top_srcdir/tests/integ/echo-server.py" "$PORT" "$T/echo.pid"

timeout 30 env "LD_PRELOAD=$BP_SHIM" "BTRACE_LOGD=$BP_LOGD_SOCK" \
	"$PY" "$T/fork.py" "$PORT" "$SECS" >"$T/fork.out" 2>"$T/fork.err" ||
	bp_fail "the forking client failed: $(cat "$T/fork.out" "$T/fork.err")"
read -r _ ppid _ cpids < "$T/fork.out" ||
	bp_fail "no pids from the forking client: $(cat "$T/fork.out")"
[ -n "$cpids" ] || bp_fail "no children from the forking client: $(cat "$T/fork.out")"
timeout 30 env "LD_PRELOAD=$BP_SHIM" "BTRACE_LOGD=$BP_LOGD_SOCK" \
	"$RAW" "$PORT" "$SECS" >"$T/raw.out" 2>"$T/raw.err" ||
	bp_fail "rawsys failed: $(cat "$T/raw.out" "$T/raw.err")"
bp_stop echo any
bp_logd_stop

# (bp-logd waits up to 1 ms for chunk 0's CHUNK behind a HELLO; a child
# whose CHUNK took longer, its CPU taken away between the two messages
# of one sendmmsg, is looked at, as before: two of three at least)
skipped=0
for c in $cpids; do
	grep -q "census: pid $c not looked at: its shim counts socket calls already" "$T/logd.log" &&
		skipped=$((skipped + 1))
done
[ "$skipped" -ge 2 ] ||
	bp_fail "bp-logd looked at the sockets of $((3 - skipped)) of the forked children ($cpids), whose count was their parent's: $(grep "census:" "$T/logd.log" | head -20)"
if grep -q "census: pid $ppid not looked at" "$T/logd.log"; then
	bp_fail "bp-logd skipped the look at the parent $ppid, whose count was 0 at HELLO"
fi

"$BP_RECONSTRUCT" "$T/logs" -o "$T/paths.db" 2>"$T/recon.err" ||
	bp_fail "bp-reconstruct failed: $(cat "$T/recon.err")"
grep -q "^bp-reconstruct: rawsys ($RAW, pid [0-9]*) does its network I/O past libc" "$T/recon.err" ||
	bp_fail "the summary does not name rawsys: $(cat "$T/recon.err")"
n=$(grep -c "does its network I/O past libc" "$T/recon.err")
[ "$n" = 1 ] || bp_fail "$n programs named in the summary, not 1 (the forked child must not be): $(cat "$T/recon.err")"

echo "PASS: $BP_TEST: $skipped of the forked children ($cpids) of a counting parent not looked at at HELLO, none named; the parent looked at; rawsys named"
