#!/bin/bash
# A slow disk: every block bp-logd writes takes 40 ms and every fsync
# 200 ms (tests/logd/slowio.c, preloaded into bp-logd only), while four
# tracer threads publish as fast as they can into small slots.  The rings
# fill, bp-logd falls behind and the tracers wait for room; none of that
# may lose, duplicate or damage a record, and bp-logd must stay responsive
# (status answers while it is behind).  Then the same with a tracer that
# drops its connection every 250 ms while bp-logd is behind.
. "${srcdir:-.}/tests/logd/lib.sh"

SLOWIO=$B/tests/logd/.libs/libslowio.so
[ -f "$SLOWIO" ] || fail "$SLOWIO is not built (make check builds it)"

LOGD_REAL=$LOGD
LOGD=$T/slow-logd
printf '#!/bin/sh\nLD_PRELOAD=%s SLOWIO_MS=40 SLOWIO_SYNC_MS=200 exec %s "$@"\n' \
	"$SLOWIO" "$LOGD_REAL" >"$LOGD"
chmod +x "$LOGD"
start_logd -i 20 -S 1M
t0=$(date +%s)
start_tracer slow -t 4 -n 25000 -S 16384 -P "$T/pslow" -T 110
tr=$TRACER_PID
sleep 2
alive "$tr" || fail "the tracers were never held up: the disk is not slow enough to test anything"
st=$("$LOGD_REAL" -c status -s "$SOCK") || fail "status while behind"
pend=$(echo "$st" | sed -n 's/^total: \([0-9]*\) bytes pending.*/\1/p')
[ "${pend:-0}" -gt 0 ] || fail "no bytes pending while the disk is slow: $st"
echo "pending while slow: $pend bytes"
wait_tracer "$tr" slow
t1=$(date +%s)
echo "4 x 25000 records through the slow disk in $((t1 - t0)) s"
start_tracer drop -t 2 -n 20000 -S 16384 -R 250 -P "$T/pdrop" -T 110
wait_tracer "$TRACER_PID" drop
stop_logd
"$VERIFY" -n $((100000 + 40000)) -P "$T/pslow" -P "$T/pdrop" "$LOGS" ||
	fail "records lost, duplicated or damaged behind a slow disk"
echo "slow_disk: OK"
