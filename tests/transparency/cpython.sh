#!/bin/bash
# cpython.sh - CPython's own test suite (Debian's libpython3.11-testsuite),
# run untraced and traced, results compared test by test.
#
#   cpython.sh                     the CI selection, modes plain noiso line
#   cpython.sh -m "plain logd" test_socket test_asyncio ...
#   CPY_JOBS=2 CPY_TIMEOUT=120     worker processes, per-test time limit
#   CPY_ARGS="-i '*VSOCK*'"        more options for python -m test
#
# Each mode runs `python3 -m test --junit-xml` (lib.sh describes the
# modes); results.py compares each traced mode with the untraced run and
# fails on a test whose result (pass, fail, skip) differs, unless
# expected-cpython.txt lists it for that mode with the reason (each such
# reason is one of the deliberate changes of event isolation, or a
# documented limit).  Tests failing both ways are the environment's:
# reported, not failed.  Skipped (exit 77) when the test suite is not
# installed.
. "$(dirname "$0")/lib.sh"

MODES="plain noiso line"
while getopts m: o; do
	case $o in
	m) MODES=$OPTARG ;;
	*) echo "usage: $0 [-m MODES] [TEST...]"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))

if ! "$PY" -c 'import test.support, test.libregrtest' 2>/dev/null; then
	echo "SKIP: CPython's test suite is not installed (apt-get install libpython3.11-testsuite)"
	exit 77
fi

# The CI selection: sockets, pipes, readiness, processes, threads, signals
# (bounded: about a minute per mode on two cores).
CI_TESTS="test_poll test_epoll test_select test_selectors test_socketserver
test_fork1 test_wait4 test_subprocess test_threading test_eintr
test_httpservers test_asyncio.test_events test_asyncio.test_sock_lowlevel
test_asyncio.test_subprocess test_asyncio.test_unix_events"
TESTS=${*:-$CI_TESTS}
EXPECTED=$top_srcdir/tests/transparency/expected-cpython.txt

case " $MODES " in *" plain "*) ;; *) MODES="plain $MODES" ;; esac
for m in $MODES; do
	[ "$m" = plain ] || [ "$m" = spool ] || [ -n "${LOGD_PID:-}" ] || start_logd
done

st=0
for m in $MODES; do
	mkdir -p "$T/$m" && cd "$T/$m" || fail "cannot make $T/$m"
	start=$(date +%s)
	# shellcheck disable=SC2086
	run_mode "$m" "${CPY_LIMIT:-1500}" "$PY" -m test --timeout "${CPY_TIMEOUT:-120}" \
		-j "${CPY_JOBS:-2}" -u network,subprocess --junit-xml "$T/$m.xml" \
		${CPY_ARGS:-} $TESTS >"$T/$m.out" 2>&1
	rc=$?
	echo "cpython [$m]: python -m test exited $rc after $(( $(date +%s) - start )) s"
	if [ ! -s "$T/$m.xml" ]; then
		echo "FAIL: [$m] no results (see the end of its output):"
		tail -n 20 "$T/$m.out" | sed 's/^/    | /'
		st=1
		continue
	fi
	"$PY" "$here/results.py" junit "$T/$m.xml" >"$T/$m.tsv" || st=1
done
cd "$T" || exit 1
npass=0 nfail=0
for m in $MODES; do
	[ "$m" = plain ] && continue
	if [ -s "$T/$m.tsv" ] && [ -s "$T/plain.tsv" ] &&
	   "$PY" "$here/results.py" compare "$T/plain.tsv" "$m" "$T/$m.tsv" \
		"$EXPECTED" "$T/summary"; then
		npass=$((npass + 1))
	else
		nfail=$((nfail + 1))
	fi
done
[ -n "${CPY_SUMMARY:-}" ] && cp "$T/summary" "$CPY_SUMMARY"
echo "cpython (traced modes matching the untraced run): $npass passed, $nfail failed"
[ "$st" -eq 0 ] && [ "$nfail" -eq 0 ]
