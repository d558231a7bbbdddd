#!/bin/bash
# tb-multihost.sh - testbed 2 over three hosts: network namespaces web
# (the client and nginx), app (php-fpm) and db (PostgreSQL) joined by veth
# pairs; nginx reaches php-fpm and php-fpm reaches PostgreSQL over TCP.
# Each host has its own bp-logd (-H web/app/db) and log directory, and its
# own CLOCK_MONOTONIC: a time namespace shifted by TB_MONO_WEB, _APP, _DB
# seconds (1000, 2500, 4000).  bp-reconstruct gets the three log
# directories: at concurrency 1, 16 and 64 with keep-alive and pipelining
# every path must be right (100%) and every child span within its parent
# once the times are converted; the clock offsets it estimates are
# printed next to the ones injected (and must agree within 50 ms).  Each
# run is also reconstructed host by host (--host-local) and joined
# (--join): the same request trees as the central reconstruction, and
# clock offsets within 50 ms.  See docs/accuracy.md.
TB_FRONT=nginx
TB_APPS=php
TB_MIX=php:8,static:2
TB_MULTIHOST=1
. "$(dirname "$0")/lib.sh"
tb_init multihost

# tb_offsets DB: the hosts table next to the injected offsets.
tb_offsets() {
	"$PY" - "$1" "$TB_MONO_WEB" "$TB_MONO_APP" "$TB_MONO_DB" <<'PYEOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
inj = dict(zip(('web', 'app', 'db'), (float(v) for v in sys.argv[2:5])))
rows = db.execute('SELECT name, domain, reference, offset_ns, lo_ns, hi_ns, '
                  'samples, method FROM hosts ORDER BY host_id').fetchall()
ref = [r for r in rows if r[2] == 1]
if len(rows) != 3 or len(ref) != 1 or set(r[0] for r in rows) != set(inj):
    print('hosts table: %r' % rows)
    sys.exit('want the three hosts web, app, db with one reference')
ref = ref[0][0]
worst = 0.0
for name, dom, r, off, lo, hi, n, method in rows:
    want = (inj[ref] - inj[name]) * 1e9
    err = (off - want) / 1e3
    worst = max(worst, abs(err))
    print('  host %-4s clock shifted %+7.1f s: offset to %s injected %+10.3f s,'
          ' estimated %+15.6f s, error %+8.1f us (%s%s)' % (
              name, inj[name], ref, want / 1e9, off / 1e9, err, method,
              '' if r else ', %d messages' % n))
if worst > 50000:
    sys.exit('clock offsets off by %.1f us (more than 50 ms)' % worst)
PYEOF
}

# tb_join DIR: each host's logs of run DIR reconstructed alone
# (--host-local, the three at once, as the hosts would) and the three
# databases joined (--join): the same request trees as the central
# reconstruction of DIR/paths.db (compare-trees.py), and the clocks
# related again from the linked spans.
tb_join() {
	local dir=$1 h pids=() st=0
	for h in web app db; do
		timeout 300 "$BP_RECONSTRUCT" -q --host-local "$dir/logs-$h" \
			-o "$dir/local-$h.db" 2>"$dir/local-$h.log" &
		pids+=($!)
	done
	for h in "${pids[@]}"; do
		wait "$h" || st=$?
	done
	[ "$st" = 0 ] || bp_fail "bp-reconstruct --host-local failed (status" \
		"$st): $(cat "$dir"/local-*.log | tail -n 3)"
	timeout 300 "$BP_RECONSTRUCT" --join "$dir/local-web.db" \
		"$dir/local-app.db" "$dir/local-db.db" -o "$dir/joined.db" \
		2>"$dir/join.log" ||
		bp_fail "bp-reconstruct --join failed: $(tail -n 3 "$dir/join.log")"
	echo "  $(tail -n 1 "$dir/join.log")"
	grep -q ' 0 spans ambiguous' "$dir/join.log" ||
		bp_fail "--join: ambiguous links: $(tail -n 1 "$dir/join.log")"
	"$PY" "$BP_LIB_DIR/compare-trees.py" "$dir/paths.db" "$dir/joined.db" ||
		bp_fail "the joined host-local databases are not the central paths"
}

for c in 1 16 64; do
	tb_run "$c" 4 1 assert
	tb_offsets "$T/run$TB_RUN_NO/paths.db" | tee -a "$T/results.txt" ||
		bp_fail "c=$c: the estimated clock offsets are wrong (above)"
	tb_join "$T/run$TB_RUN_NO" | tee -a "$T/results.txt"
	[ "${PIPESTATUS[0]}" = 0 ] || exit 1
	tb_offsets "$T/run$TB_RUN_NO/joined.db" | tee -a "$T/results.txt" ||
		bp_fail "c=$c: the clock offsets of the join are wrong (above)"
done
echo "PASS: tb-multihost"
