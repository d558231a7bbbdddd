#!/bin/bash
# behaviour.sh - the behaviour programs (tests/transparency/tp-*.c), each
# run untraced and traced, transcripts compared byte for byte.
#
#   behaviour.sh [PROGRAM...]      default: every tp-* program
#
# Each program prints what it observed; lines starting with "~ " record
# what event isolation may legally change and are left out of the
# comparison.  For every traced mode (lib.sh: logd, line, spool, noiso) the
# test of a program passes when
#   - its exit status is 0 (the program's own checks passed) and equals the
#     untraced one,
#   - its transcript without "~ " lines equals the untraced one,
#   - in mode line, every "tp-isolated: REGEX" of the program's source
#     matches a line of the transcript (the deliberate change did happen,
#     so the program really checked it),
#   - in mode spool, every "tp-events: REGEX" of the source matches a line
#     of bp-dump's print of the spooled events (the shim kept tracing).
# "SKIP - " lines are sub-cases that cannot run here; they are counted as
# skipped, never as passed.
. "$(dirname "$0")/lib.sh"

MODES="logd line spool noiso"
SRC=$top_srcdir/tests/transparency
if [ $# -gt 0 ]; then
	PROGS="$*"
else
	PROGS=$(cd "$SRC" && ls tp-*.c | sed 's/\.c$//')
fi

start_logd
pass=0 failn=0 skipped=0

show() {  # show FILE: the end of FILE, indented
	[ -s "$1" ] && sed -n '1,40p' "$1" | sed 's/^/    | /'
}

for p in $PROGS; do
	exe=$B/tests/transparency/$p
	[ -x "$exe" ] || fail "$exe is not built"
	run_mode plain 120 "$exe" >"$T/$p.plain" 2>"$T/$p.plain.err"
	st0=$?
	grep -v '^~ ' "$T/$p.plain" >"$T/$p.plain.cmp"
	if [ "$st0" -ne 0 ]; then
		echo "FAIL: $p untraced: exit status $st0 (its own checks fail without the shim)"
		show "$T/$p.plain"
		failn=$((failn + 1))
		continue
	fi
	skipped=$((skipped + $(grep -c '^SKIP - ' "$T/$p.plain")))
	for m in $MODES; do
		out=$T/$p.$m
		rm -rf "$T/spool"
		run_mode "$m" 120 "$exe" >"$out" 2>"$out.err"
		st=$?
		why=""
		grep -v '^~ ' "$out" >"$out.cmp"
		if [ "$st" -ne "$st0" ]; then
			why="exit status $st, untraced $st0"
		elif ! cmp -s "$T/$p.plain.cmp" "$out.cmp"; then
			why="transcript differs from the untraced one"
		fi
		if [ -z "$why" ] && [ "$m" = line ]; then
			while IFS= read -r re; do
				grep -Eq -- "$re" "$out" ||
					{ why="no isolation seen: no line matches /$re/"; break; }
			done < <(sed -n 's/.*tp-isolated: \(.*\)$/\1/p' "$SRC/$p.c")
		fi
		if [ -z "$why" ] && [ "$m" = spool ]; then
			"$DUMP" "$T/spool" >"$out.events" 2>"$out.dump.err"
			while IFS= read -r re; do
				grep -Eq -- "$re" "$out.events" ||
					{ why="no traced event matches /$re/"; break; }
			done < <(sed -n 's/.*tp-events: \(.*\)$/\1/p' "$SRC/$p.c")
		fi
		if [ -z "$why" ]; then
			echo "PASS: $p [$m]"
			pass=$((pass + 1))
		else
			echo "FAIL: $p [$m]: $why"
			diff -u "$T/$p.plain" "$out" | sed -n '1,60p' | sed 's/^/    /'
			show "$out.err"
			failn=$((failn + 1))
		fi
	done
done
echo "behaviour: $pass passed, $failn failed, $skipped skipped"
[ "$failn" -eq 0 ]
