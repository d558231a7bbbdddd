#!/bin/bash
# child-lazy.sh - a forked child connects to bp-logd's lazy listener and
# does not wait for it (docs/logd.md "Forked children"), and loses
# nothing.
#
# A traced python makes a socket through libc (its shim counts it, so the
# census would not look at its children) and forks
#   - three children that exec /bin/true at once,
#   - one that SIGKILLs itself at once (what it published is in the log:
#     its memory is in bp-logd's queue from its connection on),
#   - one that writes to a pipe its parent reads, then exits,
#   - one that forks a grandchild of its own before it exits.
# Asserted, from bp-dump of the log, strace -f of the run and bp-logd's
# status: every child's PROC_START (forked) is there, and the exec'd
# children's EXEC and their new images' PROC_START, the living child's
# pipe record, the grandchild's PROC_START; before its exec or exit no
# forked child connected anywhere but to the lazy listener or waited in
# poll(); bp-logd counted all seven.  The same program with
# BTRACE_CHILD_LAZY=0, and once without the parent's socket (its count 0:
# the census must look at the children, so they connect and wait as
# before): the same records, the children connect to the socket itself
# and wait, none counted.  A parent paused by bp-logd -c pause: no
# record of its children (they start from its pause state).
# bp-reconstruct reads each log without error.
. "$(dirname "$0")/lib.sh"

bp_setup child-lazy
bp_require_tracing
command -v strace >/dev/null || bp_fail "strace is missing (apt-get install -y strace)"
TRUE=$(type -P true)
[ -n "$TRUE" ] || bp_fail "no true(1) on the PATH"

cat >"$T/forks.py" <<'PYEOF'
import os, signal, socket, sys
if sys.argv[1] == 'count':
    s = socket.socket()        # counted by the parent's shim
    s.close()
kids = []
for i in range(3):
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(sys.argv[2], [sys.argv[2]])
        finally:
            os._exit(127)
    kids.append(('exec', pid))
pid = os.fork()
if pid == 0:
    os.kill(os.getpid(), signal.SIGKILL)
kids.append(('killed', pid))
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    os.write(w, b'x' * 10)
    os._exit(0)
os.close(w)
got = os.read(r, 100)
kids.append(('lives', pid))
r2, w2 = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r2)
    g = os.fork()
    if g == 0:
        os._exit(0)
    os.waitpid(g, 0)
    os.write(w2, b'%d' % g)
    os._exit(0)
os.close(w2)
g = int(os.read(r2, 100))
kids.append(('middle', pid))
kids.append(('grand', g))
bad = []
for kind, p in kids:
    if kind != 'grand':
        _, st = os.waitpid(p, 0)
        want = -signal.SIGKILL if kind == 'killed' else 0
        code = -os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st)
        if code != want:
            bad.append('%s:%d:%d' % (kind, p, code))
if bad:
    print('children ended otherwise than expected:', ' '.join(bad), file=sys.stderr)
    sys.exit(1)
print(os.getpid(), ' '.join('%s:%d' % k for k in kids))
sys.exit(0 if got == b'x' * 10 else 1)
PYEOF

# run NAME MODE LAZY [PAUSE]: the program traced under strace, into $T/NAME/
run() {
	local name=$1 mode=$2 lazy=$3 pause=${4:-} d=$T/$1
	mkdir -p "$d"
	bp_logd_start "$d" ${LOGD_ARGS:-}
	[ -S "$BP_LOGD_SOCK.lazy" ] || bp_fail "$name: bp-logd made no $BP_LOGD_SOCK.lazy"
	if [ -n "$pause" ]; then
		"$BP_LOGD" -c pause -s "$BP_LOGD_SOCK" >/dev/null ||
			bp_fail "$name: bp-logd -c pause failed"
	fi
	timeout 60 env "LD_PRELOAD=$BP_SHIM" "BTRACE_LOGD=$BP_LOGD_SOCK" \
		"BTRACE_CHILD_LAZY=$lazy" \
		strace -f -qq -o "$d/strace" -e trace=connect,socketpair,execve,poll \
		"$PY" "$T/forks.py" "$mode" "$TRUE" >"$d/out" 2>"$d/err" ||
		bp_fail "$name: the forking program failed: $(cat "$d/out" "$d/err")"
	"$BP_LOGD" -c status -s "$BP_LOGD_SOCK" >"$d/status" ||
		bp_fail "$name: bp-logd -c status failed"
	bp_logd_stop
	"$BP_DUMP" "$d/logs" >"$d/dump" 2>"$d/dump.err" ||
		bp_fail "$name: bp-dump failed: $(cat "$d/dump.err")"
	"$BP_RECONSTRUCT" "$d/logs" -o "$d/paths.db" 2>"$d/recon.err" ||
		bp_fail "$name: bp-reconstruct failed: $(cat "$d/recon.err")"
	read -r PARENT KIDS <"$d/out" || bp_fail "$name: no pids: $(cat "$d/out")"
}

# strace lines of PID up to its execve (the forked image), or all of them
pre_exec() {
	awk -v p="$2" '$1 == p { if ($2 ~ /^execve\(/) exit; print }' "$1/strace"
}

# check NAME LAZY: the records, and how the children connected
check() {
	local name=$1 lazy=$2 d=$T/$1 kind pid n=0 pre
	for k in $KIDS; do
		kind=${k%%:*} pid=${k#*:}
		grep -q "^$pid:0 [0-9]* proc_start pid=$pid .*flags=0x5 " "$d/dump" ||
			bp_fail "$name: no PROC_START of the forked $kind child $pid: $(grep "^$pid:" "$d/dump" | head -5)"
		case $kind in
		exec)
			grep -q "^$pid:0 [0-9]* exec result=0 .*$TRUE" "$d/dump" ||
				bp_fail "$name: no EXEC record of child $pid"
			grep -q "^$pid:0 [0-9]* proc_start pid=$pid .*flags=0x6 exe=$(readlink -f "$TRUE")" "$d/dump" ||
				bp_fail "$name: no PROC_START of the image child $pid exec'd: $(grep "^$pid:" "$d/dump")" ;;
		lives)
			grep -q "^$pid:0 [0-9]* data .*dir=out off=0 len=10" "$d/dump" ||
				bp_fail "$name: no record of child $pid's write to the pipe: $(grep "^$pid:" "$d/dump")" ;;
		esac
		n=$((n + 1))
		pre=$(pre_exec "$d" "$pid")
		if [ "$lazy" = 1 ]; then
			echo "$pre" | grep "connect(" | grep -qv 'sun_path="[^"]*\.lazy"' &&
				bp_fail "$name: the forked $kind child $pid connected elsewhere than to the lazy listener: $pre"
			echo "$pre" | grep -q 'connect(.*\.lazy"' ||
				bp_fail "$name: the forked $kind child $pid did not connect to the lazy listener: $pre"
			echo "$pre" | grep -q "poll(" &&
				bp_fail "$name: the forked $kind child $pid waited in poll(): $pre"
		else
			echo "$pre" | grep -q 'connect(.*logd\.sock"' ||
				bp_fail "$name: the forked $kind child $pid did not connect to bp-logd's socket: $pre"
			echo "$pre" | grep -q "\.lazy" &&
				bp_fail "$name: the forked $kind child $pid used the lazy listener: $pre"
		fi
	done
	[ "$n" = 7 ] || bp_fail "$name: $n children checked, expected 7: $KIDS"
	local want=0
	[ "$lazy" = 1 ] && want=7
	grep -q "refused; $want forked children without a wait" "$d/status" ||
		bp_fail "$name: bp-logd did not count $want children without a wait: $(cat "$d/status")"
}

run lazy count 1
check lazy 1
run nolazy count 0
check nolazy 0
run nocount nocount 1
check nocount 0
run paused count 1 pause
for k in $KIDS; do
	pid=${k#*:}
	grep -q "^$pid:0 [0-9]* proc_start pid=$pid .*flags=0x5 " "$T/paused/dump" &&
		bp_fail "paused: the forked child $pid of a paused parent wrote its PROC_START"
done

# A child that fills half its ring before bp-logd accepted it (the drain
# timer at 60 s: only a wake-up makes bp-logd accept) pokes bp-logd with
# an empty connection to its socket instead of waiting for the timer: its
# 30,000 writes are all in the log.
cat >"$T/fill.py" <<'PYEOF'
import os, socket, sys
s = socket.socket()
s.close()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    for i in range(30000):
        os.write(w, b'y')
    os._exit(0)
os.close(w)
n = 0
while True:
    b = os.read(r, 65536)
    if not b:
        break
    n += len(b)
_, st = os.waitpid(pid, 0)
print(os.getpid(), 'fill:%d' % pid)
sys.exit(0 if n == 30000 and st == 0 else 1)
PYEOF
d=$T/fill
mkdir -p "$d"
bp_logd_start "$d" -i 60000
timeout 60 env "LD_PRELOAD=$BP_SHIM" "BTRACE_LOGD=$BP_LOGD_SOCK" \
	BTRACE_CHILD_LAZY=1 strace -f -qq -o "$d/strace" -e trace=connect,poll \
	"$PY" "$T/fill.py" >"$d/out" 2>"$d/err" ||
	bp_fail "fill: the program failed: $(cat "$d/out" "$d/err")"
bp_logd_stop
read -r _ k <"$d/out" || bp_fail "fill: no pid: $(cat "$d/out")"
pid=${k#fill:}
"$BP_DUMP" "$d/logs" >"$d/dump" 2>"$d/dump.err" || bp_fail "fill: bp-dump failed"
n=$(grep -c "^$pid:0 [0-9]* data .*dir=out .*len=1$" "$d/dump")
[ "$n" = 30000 ] || bp_fail "fill: $n of the child's 30000 writes in the log"
pre=$(awk -v p="$pid" '$1 == p' "$d/strace")
echo "$pre" | grep -q 'connect(.*\.lazy"' || bp_fail "fill: the child did not connect to the lazy listener: $pre"
echo "$pre" | grep -q 'connect(.*logd\.sock"' || bp_fail "fill: the child did not poke bp-logd: $pre"
echo "$pre" | grep -q "poll(" && bp_fail "fill: the child waited in poll(): $pre"

echo "PASS: $BP_TEST: a child that filled half its ring before it was accepted poked bp-logd, all 30000 records kept; 7 forked children (exec, killed, living, forking, a grandchild) connected to the lazy listener without a wait, every record in the log; with BTRACE_CHILD_LAZY=0 or a parent the census looks at, they connect and wait as before; a paused parent's children record nothing"
