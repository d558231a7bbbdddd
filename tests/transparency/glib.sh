#!/bin/bash
# glib.sh - GLib's installed tests (Debian's libglib2.0-tests), run
# untraced and traced, results compared test case by test case.
#
#   glib.sh                        the CI selection, modes plain noiso line
#   glib.sh -m "plain logd" socket gsubprocess ...
#
# Each program of the selection (/usr/libexec/installed-tests/glib/NAME)
# prints TAP; results.py turns every "ok"/"not ok"/"# SKIP" line into a
# result and compares each traced mode with the untraced run, failing on a
# difference that expected-glib.txt does not list for that mode (with the
# reason).  A program that exits non-zero or is killed by the time limit
# counts as one more failed test case, "NAME:(exit)".  A line
# "skip PROGRAM:/test/path REASON" of expected-glib.txt leaves that test
# case out of every run, untraced too (g_test's -s), for a test whose
# failure under isolation would abort the rest of its program.  Skipped
# (exit 77) when the tests are not installed.
. "$(dirname "$0")/lib.sh"

GT=/usr/libexec/installed-tests/glib
MODES="plain noiso line"
while getopts m: o; do
	case $o in
	m) MODES=$OPTARG ;;
	*) echo "usage: $0 [-m MODES] [PROGRAM...]"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))

if [ ! -x "$GT/socket" ]; then
	echo "SKIP: GLib's installed tests are not installed (apt-get install libglib2.0-tests)"
	exit 77
fi

# The CI selection: GIO sockets and streams, the main loop's poll, unix
# fd passing, spawning and subprocesses, threads (about 45 s per mode).
CI_TESTS="socket socket-listener socket-service gsocketclient-slow
unix-streams unix-fd pollable io-channel mainloop unix spawn-singlethread
spawn-multithreaded spawn-path-search gsubprocess thread-pool sleepy-stream
converter-stream async-splice-output-stream network-address simple-proxy
proxy-test io-stream"
TESTS=${*:-$CI_TESTS}
EXPECTED=$top_srcdir/tests/transparency/expected-glib.txt

case " $MODES " in *" plain "*) ;; *) MODES="plain $MODES" ;; esac
for m in $MODES; do
	[ "$m" = plain ] || [ "$m" = spool ] || [ -n "${LOGD_PID:-}" ] || start_logd
done

for m in $MODES; do
	start=$(date +%s)
	: >"$T/$m.tsv"
	for t in $TESTS; do
		[ -x "$GT/$t" ] || fail "no GLib test program $GT/$t"
		mkdir -p "$T/$m.run/$t"
		skips=$(sed -n "s|^skip $t:\([^ ]*\) .*|-s \1|p" "$EXPECTED")
		# shellcheck disable=SC2086
		# TMPDIR in the test's directory: GLib's tests make temporary
		# directories there (spawn's glib-spawn-test-*), left in /tmp
		(cd "$T/$m.run/$t" && mkdir -p tmp && export TMPDIR=$PWD/tmp &&
			run_mode "$m" "${GLIB_TIMEOUT:-120}" "$GT/$t" $skips \
			>"$T/$m.$t.tap" 2>"$T/$m.$t.err")
		rc=$?
		"$PY" "$here/results.py" tap "$T/$m.$t.tap" "$t:" >>"$T/$m.tsv"
		if [ "$rc" -ne 0 ]; then
			printf '%s:(exit)\tfail\n' "$t" >>"$T/$m.tsv"
			echo "glib [$m]: $t exited $rc"
		fi
	done
	echo "glib [$m]: $(wc -l <"$T/$m.tsv") test cases in $(( $(date +%s) - start )) s"
done

npass=0 nfail=0
for m in $MODES; do
	[ "$m" = plain ] && continue
	if "$PY" "$here/results.py" compare "$T/plain.tsv" "$m" "$T/$m.tsv" \
		"$EXPECTED" "$T/summary"; then
		npass=$((npass + 1))
	else
		nfail=$((nfail + 1))
	fi
done
[ -n "${GLIB_SUMMARY:-}" ] && cp "$T/summary" "$GLIB_SUMMARY"
echo "glib (traced modes matching the untraced run): $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
