#!/bin/bash
# report.sh - bp-report: --help, usage errors and the messages that name
# the file and the fix; then the report of the scripted shop opened in
# headless Chromium: the script runs without a console error, the page
# has its sections, a timeline per request and the histograms, fetches
# nothing from the network, and its screenshot is taken
# (tests/report/report.png in the build tree; with BP_UPDATE_DOCS=1 also
# docs/report.png in the source tree).
. "$(dirname "$0")/lib.sh"
rp_init report

expect() {   # expect STATUS DESCRIPTION -- COMMAND...
	local want=$1 what=$2
	shift 3
	"$@" >"$T/out" 2>"$T/err"
	local got=$?
	[ "$got" = "$want" ] || rp_fail "$what: exit status $got, wanted $want: $(cat "$T/err")"
}

expect 0 "--help" -- "$REPORT" --help
for h in NAME SYNOPSIS DESCRIPTION OPTIONS 'EXIT STATUS' EXAMPLES 'SEE ALSO'; do
	grep -q "^$h" "$T/out" || rp_fail "--help lacks $h"
done
expect 0 "--version" -- "$REPORT" --version
expect 1 "no arguments" -- "$REPORT"
grep -q 'no database given' "$T/err" || rp_fail "no-database message"
expect 1 "no -o" -- "$REPORT" "$T/x.db"
grep -q 'no output file: add -o REPORT.html' "$T/err" || rp_fail "no-output message"
expect 1 "bad -n" -- "$REPORT" -n many "$T/x.db" -o "$T/r.html"
expect 2 "missing database" -- "$REPORT" "$T/nope.db" -o "$T/r.html"
grep -q "cannot read $T/nope.db: No such file or directory (give the database bp-reconstruct wrote" "$T/err" ||
	rp_fail "missing-database message: $(cat "$T/err")"
echo "not a database" >"$T/text.db"
expect 2 "not a database" -- "$REPORT" "$T/text.db" -o "$T/r.html"
grep -q "$T/text.db is not an SQLite database" "$T/err" || rp_fail "not-a-database message: $(cat "$T/err")"
sqlite3 "$T/other.db" "CREATE TABLE t(x)"
expect 2 "another database" -- "$REPORT" "$T/other.db" -o "$T/r.html"
grep -q "is not a BorderPatrol paths database" "$T/err" || rp_fail "other-database message"

"$DEMOLOG" -n 60 "$T/shop" || rp_fail "demolog"
"$RECON" -q "$T/shop" -o "$T/shop.db" || rp_fail "bp-reconstruct"
cp "$T/shop.db" "$T/old.db"
sqlite3 "$T/old.db" "DROP TABLE patterns" || rp_fail "making an old database"
expect 2 "an older database" -- "$REPORT" "$T/old.db" -o "$T/r.html"
grep -q "written by an older bp-reconstruct (no patterns table, errors or uncertain_requests view): run bp-reconstruct on its logs again" "$T/err" ||
	rp_fail "old-database message: $(cat "$T/err")"
expect 3 "unwritable report" -- "$REPORT" "$T/shop.db" -o "$T/nodir/r.html"
grep -q "cannot create $T/nodir/r.html.tmp-" "$T/err" || rp_fail "unwritable-report message"
expect 3 "unknown request" -- "$REPORT" "$T/shop.db" -o "$T/r.html" -r 99999
grep -q "has no request 99999" "$T/err" || rp_fail "unknown-request message"
ls "$T" | grep -q 'tmp-' && rp_fail "a failed run left a temporary file"

# every request drawn (60 <= 100); the summary line
expect 0 "report" -- "$REPORT" "$T/shop.db" -o "$T/report.html"
grep -q "^bp-report: 60 requests, 60 timelines, 8 patterns, 8 histograms, 3 requests with errors, 0 uncertain, 0 channels not read -> $T/report.html" "$T/err" ||
	rp_fail "summary line: $(cat "$T/err")"
# the cap: errors, pattern examples, the slowest, and -r
expect 0 "capped report" -- "$REPORT" "$T/shop.db" -o "$T/capped.html" -n 8 -r 2
grep -q "^bp-report: 60 requests, 9 timelines" "$T/err" || rp_fail "cap: $(cat "$T/err")"
grep -q 'id="r2"' "$T/capped.html" || rp_fail "-r 2 not drawn"
slow=$(sqlite3 "$T/shop.db" "SELECT request_id FROM slowest_requests LIMIT 1")
grep -q "id=\"r$slow\"" "$T/capped.html" || rp_fail "the slowest request not drawn under the cap"

# self-contained: nothing to fetch
html=$T/report.html
grep -Eiq '<(link|img|iframe|object|embed)[ >]|src=|@import|url\((https?:)?//' "$html" &&
	rp_fail "the report refers to an outside resource"
grep -o 'https\?://[^"]*' "$html" | grep -v '^http://www.w3.org/2000/svg$' | grep -q . &&
	rp_fail "the report names an URL other than the SVG namespace"

# headless Chromium
BROWSER=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$BROWSER" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq chromium >/dev/null 2>&1
	BROWSER=$(command -v chromium || true)
fi
if [ -z "$BROWSER" ]; then
	echo "SKIP: report: no chromium to open the report (apt-get install chromium)"
	exit 77
fi
browse() {   # browse OUT ARGS...: run headless Chromium, stderr to OUT.err
	local out=$1
	shift
	timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu \
		--disable-background-networking --no-first-run \
		--user-data-dir="$(mktemp -d "$T/chrome.XXXXXX")" \
		--enable-logging=stderr --v=0 "$@" >"$out" 2>"$out.err" ||
		rp_fail "chromium failed: $(tail -5 "$out.err")"
}
browse "$T/dom.html" --dump-dom "file://$html"
grep -E ':CONSOLE|Uncaught' "$T/dom.html.err" &&
	rp_fail "the page logged to the console (errors above)"
grep -q '<body data-ready="1">' "$T/dom.html" || rp_fail "the page's script did not run to its end"
for id in summary slowest errors patterns latency tiers static repeated timelines warnings; do
	grep -q "<section id=\"$id\">" "$T/dom.html" || rp_fail "no section $id in the DOM"
done
[ "$(grep -o '<svg class="timeline"' "$T/dom.html" | wc -l)" = 60 ] || rp_fail "not 60 timelines in the DOM"
[ "$(grep -o '<svg class="histogram"' "$T/dom.html" | wc -l)" = 8 ] || rp_fail "not 8 histograms in the DOM"
grep -q '<rect x="[0-9.]*" y="[0-9]*" width="[0-9.]*" height="15" rx="2" fill="#59a14f">' "$T/dom.html" ||
	rp_fail "no PostgreSQL span bar in the timelines"
grep -q 'marker-end="url(#bp-arr-req)"' "$T/dom.html" || rp_fail "no message arrows"
grep -q 'postgresql 23505' "$T/dom.html" || rp_fail "the SQL error is not listed"
grep -q '/img/banner-' "$T/dom.html" || rp_fail "the static request with backend work is not listed"

# the picture: a short report of the shop over two hosts
"$DEMOLOG" -2 -n 40 "$T/shop2" || rp_fail "demolog -2"
"$RECON" -q "$T/shop2" -o "$T/shop2.db" || rp_fail "bp-reconstruct"
"$REPORT" -q "$T/shop2.db" -o "$T/pic.html" --rows 3 -n 4 -t "BorderPatrol report: web shop" ||
	rp_fail "bp-report for the picture"
png=$top_builddir/tests/report/report.png
rm -f "$png"
browse "$T/shot.out" --hide-scrollbars --window-size=1280,4300 --screenshot="$png" "file://$T/pic.html"
grep -E ':CONSOLE|Uncaught' "$T/shot.out.err" && rp_fail "console output while taking the screenshot"
[ -s "$png" ] || rp_fail "no screenshot"
[ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || rp_fail "the screenshot is not a PNG"
[ "$(stat -c %s "$png")" -gt 50000 ] || rp_fail "the screenshot is nearly empty"
if [ "${BP_UPDATE_DOCS:-0}" = 1 ]; then
	cp "$png" "$top_srcdir/docs/report.png" || rp_fail "cannot write $top_srcdir/docs/report.png"
	echo "report: wrote $top_srcdir/docs/report.png"
fi
echo "PASS: report"
exit 0
