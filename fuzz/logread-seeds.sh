#!/bin/sh
# logread-seeds.sh GENLOG OUTDIR - seeds for fuzz-logread: the segment
# files of small generated logs (one, two and three hosts, a forked child
# per request), alone and joined with the "\377SEG" separator.
set -eu
GENLOG=$1 OUT=$2
W=$(mktemp -d /tmp/bp-seeds.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p "$OUT"
n=0
for args in "-n 3 -w 2" "-n 3 -w 2 -3" "-n 3 -w 2 -3 -f" "-n 6 -w 3 -f"; do
	rm -rf "$W/log"
	# shellcheck disable=SC2086
	"$GENLOG" $args "$W/log" >/dev/null
	files=$(find "$W/log" -name '*.btl' | sort)
	for f in $files; do
		n=$((n + 1))
		cp "$f" "$OUT/seed-$n"
	done
	n=$((n + 1))
	first=1
	for f in $files; do
		[ $first = 1 ] || printf '\377SEG' >>"$OUT/seed-$n"
		cat "$f" >>"$OUT/seed-$n"
		first=0
	done
done
echo "$n seeds in $OUT"
