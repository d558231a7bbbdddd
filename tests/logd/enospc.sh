#!/bin/bash
# Disk full: bp-logd writes to a 16 MiB tmpfs (a private mount namespace,
# so nothing outside the test sees it) that a file then fills completely.
# bp-logd must say so in one line, keep the events in the rings (tracers
# wait), leave no torn block behind, and once the file is removed resume by
# itself; every record must arrive exactly once.
if [ -z "${BP_ENOSPC_NS:-}" ]; then
	if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
		echo "SKIP: needs root and unshare -m (a private tmpfs mount)"
		exit 77
	fi
	BP_ENOSPC_NS=1 exec unshare -m bash "$0" "$@"
fi
. "${srcdir:-.}/tests/logd/lib.sh"

mkdir "$T/disk"
mount -t tmpfs -o size=16m,mode=0700 tmpfs "$T/disk" || fail "cannot mount a tmpfs"
CLEANUP_HOOK="umount -l $T/disk"
LOGS=$T/disk/logs
start_logd -i 20 -S 2M
dd if=/dev/zero of="$T/disk/fill" bs=64k >/dev/null 2>&1
avail=$(df -k --output=avail "$T/disk" | tail -n 1)
[ "$avail" -eq 0 ] || fail "tmpfs not full ($avail KiB free)"
start_tracer full -t 4 -n 30000 -S 65536 -P "$T/pfull" -T 90
tr=$TRACER_PID
wait_for "the disk-full message" 100 grep -q "No space left on device" "$T/logd.log"
sleep 2
n=$(grep -c "No space left on device" "$T/logd.log")
[ "$n" -eq 1 ] || fail "disk full reported $n times, expected once"
alive "$tr" || fail "tracer finished while the disk was full: events were dropped?"
st=$("$LOGD" -c status -s "$SOCK") || fail "status during disk full"
echo "$st" | grep -q "disk error: No space left on device" || fail "status: $st"
pend=$(echo "$st" | sed -n 's/^total: \([0-9]*\) bytes pending.*/\1/p')
[ "${pend:-0}" -gt 0 ] || fail "no bytes pending in the rings while the disk is full"
echo "pending while full: $pend bytes"
rm -f "$T/disk/fill"
wait_tracer "$tr" full
grep -q "again after" "$T/logd.log" || fail "no recovery message"
stop_logd
"$VERIFY" -n 120000 -P "$T/pfull" "$LOGS" || fail "records lost or damaged around ENOSPC"

# Again, with the disk filling up while a tracer writes (blocks then fail
# half written and must be cut back).
start_logd -i 20 -S 2M
# it also drops its connection every 300 ms: while the disk is full the old
# connection's memory is still being drained when the new one hands the
# same memfds over
start_tracer mid -t 3 -n 40000 -d 30 -S 32768 -R 300 -P "$T/pmid" -T 90
tr=$TRACER_PID
sleep 0.5
dd if=/dev/zero of="$T/disk/fill" bs=4k >/dev/null 2>&1
wait_for "the second disk-full message" 100 sh -c "[ \$(grep -c 'No space left' '$T/logd.log') -eq 2 ]"
sleep 1
alive "$tr" || fail "tracer finished while the disk was full"
rm -f "$T/disk/fill"
wait_tracer "$tr" mid
stop_logd
cat "$T/logd.log"
n=$(grep -c "No space left on device" "$T/logd.log")
[ "$n" -eq 2 ] || fail "disk full reported $n times in two episodes"
"$VERIFY" -n $((120000 + 120000)) -P "$T/pfull" -P "$T/pmid" "$LOGS" ||
	fail "records lost or damaged around ENOSPC"
echo "enospc: OK"
