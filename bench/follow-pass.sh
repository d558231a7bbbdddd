#!/bin/bash
# bench/follow-pass.sh - what a pass of bp-reconstruct --follow costs
# against the size of the log (BENCHMARKS.md, phase 24).
#
#   bench/follow-pass.sh [-3] [-w WINDOW] [-p PASSES] REQUESTS...
#
# For each REQUESTS: tests/recon/genlog -n REQUESTS writes a log of one
# host (13 events a request, about 10,000 requests per second of log
# time; with -3, genlog -3: the same requests over three hosts whose
# clocks differ, three clock domains); the offline run reconstructs it (/usr/bin/time: wall, peak
# RSS); then --follow --follow-window=WINDOW (default 0.5 s of log time,
# about 5,000 requests, as 10 s at 500 requests/s) follows a copy of it:
# the first pass (full: writes every request), PASSES (default 3) steady
# window passes (a file created in the directory wakes each, nothing new
# to write), and the last pass (SIGINT: full, nothing new to write). The
# times are those BP_FOLLOW_TIMING=1 prints (reconstruct + write), the
# medians of the steady window passes.
#
# Run from the build directory (top_builddir): it needs
# tests/recon/genlog and bp-reconstruct there.
set -eu

window=0.5
passes=3
three=()
while getopts 3w:p: o; do
	case $o in
	3) three=(-3) ;;
	w) window=$OPTARG ;;
	p) passes=$OPTARG ;;
	*) echo "usage: $0 [-3] [-w WINDOW] [-p PASSES] REQUESTS..." >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-w WINDOW] [-p PASSES] REQUESTS..." >&2; exit 2; }

top=${top_builddir:-.}
genlog=$top/tests/recon/genlog
recon=$top/bp-reconstruct
[ -x "$genlog" ] && [ -x "$recon" ] || {
	echo "$0: run it in the build directory (no $genlog or $recon)" >&2
	exit 2
}
tmp=$(mktemp -d /tmp/bp-follow-pass.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

printf '| requests | events | offline run | first pass | window pass | last (full) pass | rows left out | peak RSS offline / follow |\n'
printf '|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for n in "$@"; do
	rm -rf "$tmp/gen" "$tmp/f" "$tmp"/live.db* "$tmp/o.db"
	"$genlog" ${three[@]+"${three[@]}"} -n "$n" "$tmp/gen" >/dev/null
	/usr/bin/time -f '%e %M' -o "$tmp/off.time" \
		"$recon" -q "$tmp/gen" -o "$tmp/o.db"
	events=$(sqlite3 "$tmp/o.db" "SELECT value FROM stats WHERE key = 'events'")
	mkdir -p "$tmp/f"
	cp -r "$tmp/gen"/* "$tmp/f/"
	wake=$(ls -d "$tmp"/f/*/ | head -n 1)
	BP_FOLLOW_TIMING=1 /usr/bin/time -f '%e %M' -o "$tmp/fol.time" \
		"$recon" --follow --follow-window="$window" "$tmp/f" \
		-o "$tmp/live.db" 2>"$tmp/err" &
	pid=$!
	# the first pass, then one steady pass per file created
	k=0
	until [ "$(grep -c '^pass ' "$tmp/err" || true)" -ge 1 ]; do
		sleep 0.2; k=$((k + 1)); [ $k -lt 3000 ] || { echo "$0: no first pass" >&2; exit 1; }
	done
	for i in $(seq "$passes"); do
		: >"$wake/wake-$i"
		k=0
		until [ "$(grep -c '^pass ' "$tmp/err" || true)" -ge $((i + 1)) ]; do
			sleep 0.2; k=$((k + 1)); [ $k -lt 3000 ] || { echo "$0: no pass $i" >&2; exit 1; }
		done
	done
	# (GNU time ignores SIGINT while it waits: the signal goes to its child)
	pkill -INT -P "$pid"
	wait "$pid"
	pid=
	python3 - "$tmp/err" "$tmp/off.time" "$tmp/fol.time" "$n" "$events" \
		"$tmp/live.db" <<-'EOF'
	import re, sqlite3, statistics, sys
	err, off, fol, n, events, live = sys.argv[1:]
	passes = []
	for line in open(err):
	    m = re.match(r'pass \d+: (\w+), reconstruct ([\d.]+) s, write ([\d.]+) s(?: \(the sinks [\d.]+ s(?:, the heap trimmed [\d.]+ s)?\))?, horizon \w+, rows left out (\w+)', line)
	    if m:
	        passes.append((m.group(1), float(m.group(2)), float(m.group(3)), m.group(4)))
	first, last = passes[0], passes[-1]
	win = [p for p in passes[1:-1] if p[0] == 'window']
	if not win:
	    sys.exit('no window pass (is the log shorter than the window?)')
	ow, om = open(off).read().split()[-2:]
	fw, fm = open(fol).read().split()[-2:]
	db = sqlite3.connect(live)
	nreq = db.execute('SELECT count(*) FROM requests').fetchone()[0]
	if nreq != int(n):
	    sys.exit('live.db has %d requests, not %s' % (nreq, n))
	def t(p):
	    return '%.2f s (%.2f + %.2f)' % (p[1] + p[2], p[1], p[2])
	med = lambda i: statistics.median(p[i] for p in win)
	print('| %s | %s | %.2f s | %s | %s | %s | %s | %d / %d MB |' % (
	    format(int(n), ','), format(int(events), ','), float(ow), t(first),
	    t(('window', med(1), med(2), '')), t(last), '/'.join(sorted(set(p[3] for p in win))),
	    int(om) // 1024, int(fm) // 1024))
	EOF
done
