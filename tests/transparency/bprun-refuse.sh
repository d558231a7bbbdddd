#!/bin/bash
# bprun-refuse.sh - bp-run refuses, with a clear reason and exit status
# 126, to run a program that cannot be traced: statically linked (no
# dynamic loader, LD_PRELOAD never applies), setuid or setgid to another
# user (the loader ignores LD_PRELOAD in secure mode), or a script whose
# interpreter is one of those.  As controls, a dynamic program and a
# setuid program owned by the caller (no secure mode) are run, traced.
. "$(dirname "$0")/lib.sh"

STATIC=$B/tests/transparency/refuse-static
DYN=$B/tests/transparency/refuse-dynamic
[ -x "$STATIC" ] && [ -x "$DYN" ] || fail "refuse-static/refuse-dynamic not built"
start_logd
pass=0 failn=0 skipped=0

# expect NAME STATUS REGEX CMD...: bp-run CMD exits STATUS, stderr matches
expect() {
	local name=$1 want=$2 re=$3
	shift 3
	timeout 30 "$BPRUN" -q -s "$T/logd.sock" -- "$@" >"$T/out" 2>"$T/err"
	local st=$?
	if [ "$st" -eq "$want" ] && { [ -z "$re" ] || grep -Eq -- "$re" "$T/err" "$T/out"; }; then
		echo "PASS: $name (exit $st)"
		pass=$((pass + 1))
	else
		echo "FAIL: $name: exit $st (want $want), output:"
		sed 's/^/    | /' "$T/err" "$T/out" | head -10
		failn=$((failn + 1))
	fi
}
skip() { echo "SKIP: $*"; skipped=$((skipped + 1)); }

if LC_ALL=C readelf -l "$STATIC" 2>/dev/null | grep -Eq 'INTERP|DYNAMIC'; then
	fail "$STATIC is not statically linked"
fi

expect "static program refused" 126 'statically linked.*LD_PRELOAD' "$STATIC"
cp "$STATIC" "$T/static-copy"
printf '#!%s\necho never\n' "$T/static-copy" >"$T/script"
chmod +x "$T/script"
expect "script with a static interpreter refused" 126 'statically linked' "$T/script"
expect "dynamic program runs traced" 0 '^static program ran$' "$DYN"
expect "its exit status passes through" 7 '' sh -c 'exit 7'
expect "a missing command" 127 'command not found' "$T/does-not-exist"

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	cp "$DYN" "$T/suid-other"
	chown nobody "$T/suid-other"
	chmod 4755 "$T/suid-other"
	expect "setuid to another user refused" 126 'setuid/setgid.*LD_PRELOAD' "$T/suid-other"
	cp "$DYN" "$T/sgid"
	chmod 2755 "$T/sgid"
	expect "setgid refused" 126 'setuid/setgid' "$T/sgid"
	cp "$DYN" "$T/suid-self"
	chmod 4755 "$T/suid-self"
	expect "setuid to oneself runs traced" 0 '^static program ran$' "$T/suid-self"
	# it really was traced: its process is in the log
	sleep 0.3
	if "$DUMP" "$T/logs" 2>/dev/null | grep -q "proc_start .*exe=$T/suid-self"; then
		echo "PASS: setuid to oneself: traced (its PROC_START is in the log)"
		pass=$((pass + 1))
	else
		echo "FAIL: setuid to oneself: no PROC_START of $T/suid-self in the log"
		failn=$((failn + 1))
	fi
else
	skip "setuid/setgid cases need root (to chown a copy to nobody)"
	skip "setgid case needs root"
	skip "setuid-to-oneself case needs root"
	skip "its trace check needs root"
fi
echo "bprun-refuse: $pass passed, $failn failed, $skipped skipped"
[ "$failn" -eq 0 ]
