#!/bin/bash
# sigwait.sh - a signal handler's calls made while the program sleeps in
# an event loop's wait are recorded, not lost.  tests/integ/sigwait's
# SIGUSR1 handler writes a byte to a socketpair (the self-pipe trick of
# php-fpm's master, libevent, many daemons) while the main thread sleeps
# in epoll_pwait, ppoll or pselect of two fds (the signal is blocked
# outside them); the loop reads the bytes.  Traced with bp-logd, 150
# signals: bp-reconstruct must report 0 lost events and no warning, the
# socketpair's ends must carry every byte both ways, and each handler's
# work must be a fragment of its own for no request (trigger 'signal').
# Before the handler's calls were recorded, each of its writes was a lost
# event and a warning that cost paths.
# Then the same inside a blocking read ("sigwait N read": a pipe the
# child writes to 2 ms after each signal, half the run with SA_RESTART):
# the handler's calls between SIGNAL begin and end, again none lost,
# every handler a fragment of its own for no request, and the pipe's
# bytes read in fragments the handler did not end.
. "$(dirname "$0")/lib.sh"
bp_setup sigwait
bp_require_tracing
SW=$top_builddir/tests/integ/sigwait
[ -x "$SW" ] || bp_fail "$SW is not built (run make check or make tests/integ/sigwait)"
N=150

bp_logd_start "$T"
timeout 60 env "LD_PRELOAD=$BP_SHIM" "BTRACE_LOGD=$BP_LOGD_SOCK" "$SW" "$N" \
	>"$T/sw.out" 2>&1 || bp_fail "sigwait failed: $(cat "$T/sw.out")"
bp_logd_stop
line=$(grep '^sigwait: ' "$T/sw.out") || bp_fail "no summary from sigwait: $(cat "$T/sw.out")"
read -r _ sigs _ bytes _ _ ep _ _ po _ _ se _ _ <<<"$line"
[ "$sigs" = "$bytes" ] && [ "$ep" -gt 0 ] && [ "$po" -gt 0 ] && [ "$se" -gt 0 ] ||
	bp_fail "sigwait did not use all three waits: $line"

# recon_check DB SIGS WHAT: reconstruct $T/logs into DB; no event lost, no
# warning, the socketpair's ends carry SIGS bytes each way; SIGFRAGS: the
# fragments begun by a signal handler and how many belong to a request.
recon_check() {
	local db=$1 n=$2 what=$3 got a b
	"$BP_RECONSTRUCT" "$T/logs" -o "$db" 2>"$db.err" ||
		bp_fail "$what: bp-reconstruct failed: $(cat "$db.err")"
	grep -q "events read (0 lost), .* 0 warnings -> " "$db.err" ||
		bp_fail "$what: the handler's events were not all recorded: $(grep -m3 'could not record\|events read' "$db.err")"
	got=$("$PY" - "$db" <<'PYEOF'
import sqlite3, sys
h = sqlite3.connect(sys.argv[1])
ends = h.execute("""SELECT bytes_in, bytes_out FROM channels
  WHERE role = 'socketpair' ORDER BY bytes_out""").fetchall()
sig = h.execute("""SELECT count(*), count(request_id) FROM fragments
  WHERE trigger = 'signal'""").fetchone()
print(' '.join('%d/%d' % e for e in ends), sig[0], sig[1])
PYEOF
) || bp_fail "reading $db failed"
	read -r a b SIGFRAGS <<<"$got"
	[ "$a $b" = "$n/0 0/$n" ] ||
		bp_fail "$what: socketpair ends (in/out): $a $b, not $n/0 0/$n"
}

recon_check "$T/paths.db" "$sigs" waits
read -r nsig nreq <<<"$SIGFRAGS"
# one per handler (each interrupts its wait); two signals that arrive as
# one run one handler
[ "$nsig" -ge $((sigs / 2)) ] && [ "$nsig" -le "$sigs" ] ||
	bp_fail "$nsig fragments begun by a signal handler for $sigs signals"
[ "$nreq" = 0 ] || bp_fail "$nreq signal handler fragments belong to a request"

# ---- inside a read ----
rm -rf "$T/logs"
bp_logd_start "$T"
timeout 60 env "LD_PRELOAD=$BP_SHIM" "BTRACE_LOGD=$BP_LOGD_SOCK" "$SW" "$N" read \
	>"$T/sr.out" 2>&1 || bp_fail "sigwait read failed: $(cat "$T/sr.out")"
bp_logd_stop
line=$(grep '^sigread: ' "$T/sr.out") || bp_fail "no summary from sigwait read: $(cat "$T/sr.out")"
read -r _ rsigs _ rbytes _ _ rpipe _ <<<"$line"
[ "$rsigs" = "$rbytes" ] && [ "$rpipe" = "$N" ] ||
	bp_fail "sigwait read: $line"
nbeg=$("$BP_DUMP" "$T/logs" 2>/dev/null | grep -c ' signal begin') || true
nend=$("$BP_DUMP" "$T/logs" 2>/dev/null | grep -c ' signal end') || true
[ "$nbeg" -ge $((rsigs / 2)) ] && [ "$nbeg" = "$nend" ] ||
	bp_fail "$nbeg SIGNAL begin and $nend end records for $rsigs signals in reads"
recon_check "$T/paths2.db" "$rsigs" "read mode"
read -r rsig rreq <<<"$SIGFRAGS"
[ "$rsig" = "$nbeg" ] ||
	bp_fail "read mode: $rsig fragments begun by a signal handler for $nbeg SIGNAL begin records"
[ "$rreq" = 0 ] || bp_fail "read mode: $rreq signal handler fragments belong to a request"

echo "PASS: $BP_TEST: $sigs handler writes during epoll_pwait ($ep), ppoll ($po) and pselect ($se): none lost, every byte on the socketpair's ends, $nsig fragments begun by the handler, for no request; $rsigs inside blocking reads: none lost, $nbeg recorded between SIGNAL begin and end, $rsig fragments for no request"
