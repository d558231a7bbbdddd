#!/bin/bash
# private.sh - the logs and the socket are private to bp-logd's user, and
# a traced process hands its events to no one else (docs/security.md,
# "Who can read it").  Needs root (other users via setpriv).
#
# 1. bp-logd run by another user (nobody) with its default socket: the
#    directory /tmp/btrace-UID is created 0700, the socket 0600, the log
#    directory 0700 and the segments 0600; a tracer of another uid (root's
#    traced program) is refused with one line; bp-logd refuses a default
#    socket directory that belongs to someone else or others may write.
# 2. root's traced program pointed at that bp-logd does not send it its
#    events (the shim checks SO_PEERCRED too): one line on its stderr, and
#    its events go to its own spool.
# 3. A spool directory another user owns or may write is not used.
# 4. Root's segments cannot be read nor listed by nobody; control commands
#    from nobody are refused even where nobody may trace (-u nobody).
. "$(dirname "$0")/../integ/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
	echo "SKIP: private.sh needs root and setpriv"
	exit 77
fi
bp_init private
bp_require_tracing
BP_DUMP=$(bp_find_tool bp-dump)
NOBODY=$(id -u nobody) || bp_fail "no user nobody"
AS_NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
chmod 711 "$T"
DEF=/tmp/btrace-$NOBODY
TRACED=(env "LD_PRELOAD=$BP_SHIM" BTRACE_RULES= BTRACE_CONF=)

mode() { stat -c %a "$1"; }
owner() { stat -c %u "$1"; }

# nobody's own default directory must not be ours to break: use it only
# if absent (or left by an earlier run of this test), and remove it after
if [ -e "$DEF" ]; then
	[ "$(owner "$DEF")" = "$NOBODY" ] && [ ! -S "$DEF/logd.sock" ] ||
		bp_fail "$DEF exists (in use?): remove it to run this test"
	rm -rf "$DEF"
fi
cleanup_def() { rm -rf "$DEF"; }
trap 'cleanup_def; bp_cleanup' EXIT

# ---- 1. nobody's bp-logd, default socket ---------------------------------
# first, a default directory that is not its own: refused
mkdir -m 0777 "$DEF"
chmod 0777 "$DEF"
install -d -o nobody -m 700 "$T/nlogs"
"${AS_NOBODY[@]}" env -u BTRACE_LOGD "$BP_LOGD" -f -d "$T/nlogs" \
	>"$T/refuse.out" 2>&1 && bp_fail "bp-logd used a socket directory of another user"
grep -q "belongs to uid 0, not to us\|writable by others" "$T/refuse.out" ||
	bp_fail "bp-logd's refusal: $(cat "$T/refuse.out")"
rmdir "$DEF"

bp_start nlogd "$T/nlogs/nlogd.pid" "${AS_NOBODY[@]}" env -u BTRACE_LOGD \
	"$BP_LOGD" -f -d "$T/nlogs" -p "$T/nlogs/nlogd.pid" -H nhost
for ((i = 0; i < 100; i++)); do
	[ -S "$DEF/logd.sock" ] && break
	sleep 0.1
done
[ -S "$DEF/logd.sock" ] || bp_fail "nobody's bp-logd made no socket in $DEF"
[ "$(mode "$DEF")" = 700 ] && [ "$(owner "$DEF")" = "$NOBODY" ] ||
	bp_fail "$DEF: mode $(mode "$DEF") owner $(owner "$DEF"), expected 700 and $NOBODY"
[ "$(mode "$DEF/logd.sock")" = 600 ] ||
	bp_fail "the socket's mode is $(mode "$DEF/logd.sock"), expected 600"
[ "$(mode "$T/nlogs/nhost")" = 700 ] ||
	bp_fail "the host directory's mode is $(mode "$T/nlogs/nhost"), expected 700"
for f in "$T"/nlogs/nhost/*.btl; do
	[ "$(mode "$f")" = 600 ] || bp_fail "$f: mode $(mode "$f"), expected 600"
done
bp_note "nobody's bp-logd: $DEF 700, socket 600, logs 700, segments 600"

# ---- 2. root's traced program does not trust it ------------------------
mkdir "$T/rspool"
"${TRACED[@]}" "BTRACE_LOGD=$DEF/logd.sock" "BTRACE_SPOOL=$T/rspool" \
	sh -c 'echo traced | cat >/dev/null' 2>"$T/root.err" ||
	bp_fail "the traced program failed: $(cat "$T/root.err")"
grep -q "runs as uid $NOBODY, neither ours (0) nor root" "$T/root.err" ||
	bp_fail "no line about the untrusted bp-logd: $(cat "$T/root.err")"
grep libbtrace "$T/root.err" | grep -v -q "runs as uid $NOBODY, neither ours" &&
	bp_fail "other messages from the shim: $(cat "$T/root.err")"
ls "$T"/rspool/*/*.btl >/dev/null 2>&1 ||
	bp_fail "the events did not go to the program's own spool"
"$BP_DUMP" "$T/rspool" 2>/dev/null | grep -q proc_start ||
	bp_fail "the spool has no record of the program"
bp_stop nlogd
"$BP_DUMP" "$T/nlogs" >"$T/nlogs.txt" 2>/dev/null
grep -v ' logd ' "$T/nlogs.txt" | grep -q . &&
	bp_fail "nobody's bp-logd got records of root's program: $(grep -v ' logd ' "$T/nlogs.txt" | head -n 2)"
bp_note "root's traced program refused nobody's bp-logd and spooled its events"

# ---- 3. a spool directory someone else may write -----------------------
# (as nobody, whose fallback spool is $DEF/spool, removed at the end)
install -d -o root -m 0777 "$T/evil"
chmod 0777 "$T/evil"
"${AS_NOBODY[@]}" "${TRACED[@]}" "BTRACE_LOGD=$T/none.sock" \
	"BTRACE_SPOOL=$T/evil" sh -c 'echo x | cat >/dev/null' 2>"$T/evil.err" ||
	bp_fail "the traced program failed: $(cat "$T/evil.err")"
grep -q "not spooling into $T/evil" "$T/evil.err" ||
	bp_fail "no line about the unsafe spool: $(cat "$T/evil.err")"
[ -z "$(find "$T/evil" -name '*.btl')" ] ||
	bp_fail "events were spooled into a directory others may write"
ls "$DEF"/spool/*/*.btl >/dev/null 2>&1 ||
	bp_fail "the events did not go to nobody's own spool $DEF/spool"
bp_note "an unsafe spool directory was refused; the events went to the user's own spool"

# ---- 3b. no spool at all: the program is not slowed down --------------
# Both the chosen spool and the user's own are unsafe now, and there is
# no bp-logd: the events the ring cannot hold are dropped.  Every record
# past a half-full ring used to try the spool again (a mkdir and a stat
# of each directory of its path): 20,000 opens made tens of thousands of
# mkdir calls.  A failed spool is tried again once a second.
command -v strace >/dev/null || bp_fail "strace is missing (apt-get install -y strace)"
chmod 0777 "$DEF/spool"
strace -f -c -e trace=mkdir -o "$T/nospool.strace" \
	"${AS_NOBODY[@]}" "${TRACED[@]}" "BTRACE_LOGD=$T/none.sock" \
	"BTRACE_SPOOL=$T/evil" sh -c 'i=0; while [ $i -lt 20000 ]; do
		: </etc/hostname; i=$((i + 1)); done' 2>"$T/nospool.err" ||
	bp_fail "the traced program failed: $(cat "$T/nospool.err")"
mkdirs=$(awk '$NF == "mkdir" { print $4 }' "$T/nospool.strace")
[ -n "$mkdirs" ] || bp_fail "strace counted no mkdir: $(cat "$T/nospool.strace")"
[ "$mkdirs" -lt 400 ] ||
	bp_fail "the shim tried the unusable spool $mkdirs times (mkdir) for 20,000 opens"
grep -q "not spooling into" "$T/nospool.err" ||
	bp_fail "no line about the unsafe spool: $(cat "$T/nospool.err")"
chmod 0700 "$DEF/spool"
bp_note "no usable spool: $mkdirs mkdir calls for 20,000 opens (tried again once a second)"

# ---- 4. root's logs against nobody --------------------------------------
mkdir -p "$T/rlogs"
bp_start rlogd "$T/rlogd.pid" "$BP_LOGD" -f -d "$T/rlogs" -s "$T/rlogd.sock" \
	-p "$T/rlogd.pid" -u nobody
for ((i = 0; i < 100; i++)); do
	[ -S "$T/rlogd.sock" ] && break
	sleep 0.1
done
"${TRACED[@]}" "BTRACE_LOGD=$T/rlogd.sock" sh -c 'echo x | cat >/dev/null' ||
	bp_fail "root's traced program failed"
"${AS_NOBODY[@]}" "$BP_LOGD" -c status -s "$T/rlogd.sock" >"$T/ctl.out" 2>&1 &&
	bp_fail "nobody's control command was served: $(cat "$T/ctl.out")"
grep -q "refusing control command from pid [0-9]*: uid $NOBODY" "$T/rlogd.log" ||
	bp_fail "no refusal line for nobody's control command"
bp_stop rlogd
seg=$(ls "$T"/rlogs/*/*.btl | head -n 1)
"${AS_NOBODY[@]}" cat "$seg" >/dev/null 2>&1 && bp_fail "nobody read $seg"
"${AS_NOBODY[@]}" ls "$(dirname "$seg")" >/dev/null 2>&1 &&
	bp_fail "nobody listed $(dirname "$seg")"
bp_note "root's segments: neither readable nor listable by nobody; its control command refused"

# ---- 5. what bp-reconstruct and bp-report write -------------------------
BP_RECON=$(bp_find_tool bp-reconstruct)
BP_REPORT=$(bp_find_tool bp-report)
(umask 022; "$BP_RECON" -q -o "$T/paths.db" --dot "$T/paths.dot" --otlp "$T/otlp.json" "$T/rlogs") ||
	bp_fail "bp-reconstruct failed on root's logs"
(umask 022; "$BP_REPORT" -q -o "$T/report.html" "$T/paths.db") ||
	bp_fail "bp-report failed"
for f in "$T/paths.db" "$T/otlp.json" "$T/report.html" $(find "$T/paths.dot" -type f); do
	[ "$(mode "$f")" = 600 ] || bp_fail "$f: mode $(mode "$f") under umask 022, expected 600"
done
[ "$(mode "$T/paths.dot")" = 700 ] || bp_fail "the DOT directory: mode $(mode "$T/paths.dot"), expected 700"
"${AS_NOBODY[@]}" cat "$T/paths.db" >/dev/null 2>&1 && bp_fail "nobody read paths.db"
bp_note "paths.db, OTLP, DOT files and the HTML report: 600 even under umask 022 (the DOT directory 700)"
echo "PASS: private"
