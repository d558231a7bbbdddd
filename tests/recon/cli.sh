#!/bin/sh
# bp-reconstruct's command line: --help, usage errors and exit codes, the
# summary, quiet mode, the progress bar, three hosts.  Run from the build
# directory (make check does); keeps nothing unless KEEP=1.
set -u
bin=./bp-reconstruct
gen=./tests/recon/genlog
tmp=$(mktemp -d "${TMPDIR:-/tmp}/recon-cli.XXXXXX") || exit 99
if [ "${KEEP:-0}" = 1 ]; then
	echo "keeping $tmp"
else
	trap 'rm -rf "$tmp"' EXIT INT TERM
fi
fail() { echo "FAIL: $*"; [ -f "$tmp/err" ] && sed 's/^/  stderr: /' "$tmp/err"; exit 1; }
expect() {   # expect STATUS DESCRIPTION -- COMMAND...
	want=$1 what=$2; shift 3
	"$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	[ "$got" -eq "$want" ] || fail "$what: exit status $got, wanted $want"
}
command -v sqlite3 >/dev/null || { echo "SKIP: no sqlite3 command"; exit 77; }

expect 0 "--help" -- $bin --help
grep -q '^EXIT STATUS' "$tmp/out" || fail "--help lacks EXIT STATUS"
grep -q 'bp-reconstruct \[OPTION\]... LOGDIR... -o PATHS.db' "$tmp/out" || fail "--help lacks the synopsis"
expect 0 "--version" -- $bin --version
grep -q '^bp-reconstruct ' "$tmp/out" || fail "--version"

expect 1 "no arguments" -- $bin
grep -q 'no output database: add -o PATHS.db' "$tmp/err" || fail "no-output message"
expect 1 "no LOGDIR" -- $bin -o "$tmp/x.db"
grep -q 'no LOGDIR given' "$tmp/err" || fail "no-LOGDIR message"
expect 1 "unknown option" -- $bin --frobnicate -o "$tmp/x.db" "$tmp"
expect 1 "bad --warnings" -- $bin -w many -o "$tmp/x.db" "$tmp"

expect 2 "missing LOGDIR" -- $bin "$tmp/nope" -o "$tmp/x.db"
grep -q "cannot read '$tmp/nope': No such file or directory (give the logs/ directory" "$tmp/err" ||
	fail "missing-LOGDIR message"
mkdir "$tmp/empty"
expect 2 "LOGDIR without segments" -- $bin "$tmp/empty" -o "$tmp/x.db"
grep -q 'no readable log block in the input' "$tmp/err" || fail "empty-LOGDIR message"
[ ! -e "$tmp/x.db" ] || fail "a failed run left $tmp/x.db"
ls "$tmp" | grep -q 'tmp-' && fail "a failed run left a temporary database"

$gen -n 50 "$tmp/logs" || fail "genlog"
expect 3 "unwritable output" -- $bin "$tmp/logs" -o "$tmp/nodir/x.db"
grep -q "cannot create $tmp/nodir/x.db.tmp-" "$tmp/err" || fail "output error message"

expect 0 "reconstruct" -- $bin "$tmp/logs" -o "$tmp/p.db"
grep -q '^bp-reconstruct: [0-9]* events read (0 lost), 50 requests (50 exact, 0 resolved, 0 uncertain), 250 spans, [0-9]* unattributed, 0 warnings -> ' "$tmp/err" ||
	fail "summary line"
[ "$(sqlite3 "$tmp/p.db" 'SELECT COUNT(*) FROM requests WHERE complete = 1')" = 50 ] || fail "50 complete requests"
[ "$(sqlite3 "$tmp/p.db" "SELECT COUNT(*) FROM files WHERE request_id IS NULL")" = 0 ] || fail "files attributed"
[ "$(sqlite3 "$tmp/p.db" "SELECT COUNT(*) FROM spans s JOIN spans p ON s.parent_span_id = p.span_id WHERE s.start_ns < p.start_ns OR s.end_ns > p.end_ns")" = 0 ] ||
	fail "spans nested in their parents"

# The output is replaced atomically: a second run over the same file.
expect 0 "rerun, quiet" -- $bin -q "$tmp/logs" -o "$tmp/p.db"
[ -s "$tmp/err" ] && fail "-q printed something"

expect 0 "progress bar" -- $bin --progress "$tmp/logs" -o "$tmp/p2.db"
grep -q 'bp-reconstruct: scanning' "$tmp/err" || fail "no progress bar with --progress"

$gen -3 -n 40 "$tmp/logs3" || fail "genlog -3"
expect 0 "three hosts" -- $bin "$tmp/logs3/front" "$tmp/logs3/app" "$tmp/logs3/db" -o "$tmp/p3.db"
grep -q 'clock: front is the reference' "$tmp/err" || fail "reference host line"
grep -q 'clock: app monotonic offset -5.000' "$tmp/err" ||
	grep -q 'clock: app monotonic offset -4.999' "$tmp/err" || fail "app offset line"
[ "$(sqlite3 "$tmp/p3.db" 'SELECT COUNT(*) FROM requests WHERE complete = 1')" = 40 ] || fail "40 requests over three hosts"
expect 0 "reference by name" -- $bin -r db "$tmp/logs3" -o "$tmp/p4.db"
[ "$(sqlite3 "$tmp/p4.db" 'SELECT name FROM hosts WHERE reference = 1')" = db ] || fail "-r db"
# The same logs with each stream's repeated values written as references
# to its dictionary, as libbtrace writes them: the same database but for
# the bytes read.  (Many requests: slots get reused within a record.)
$gen -3 -w 4 -n 200 "$tmp/logsp" || fail "genlog, plain"
BP_GEN_DICT=1 $gen -3 -w 4 -n 200 "$tmp/logsd" || fail "genlog, dictionary"
expect 0 "plain values" -- $bin "$tmp/logsp" -o "$tmp/pp.db"
expect 0 "dictionary references" -- $bin "$tmp/logsd" -o "$tmp/pd.db"
grep -q ' 0 warnings -> ' "$tmp/err" || fail "warnings reading the dictionary logs"
sqlite3 "$tmp/pp.db" .dump | grep -v "'payload_bytes'" >"$tmp/pp.sql"
sqlite3 "$tmp/pd.db" .dump | grep -v "'payload_bytes'" >"$tmp/pd.sql"
[ "$(wc -l <"$tmp/pp.sql")" -gt 1000 ] || fail "a short dump"
cmp -s "$tmp/pp.sql" "$tmp/pd.sql" ||
	fail "the dictionary changed the database: $(diff "$tmp/pp.sql" "$tmp/pd.sql" | head -5)"
bp=$(sqlite3 "$tmp/pp.db" "SELECT value FROM stats WHERE key = 'payload_bytes'")
bd=$(sqlite3 "$tmp/pd.db" "SELECT value FROM stats WHERE key = 'payload_bytes'")
[ "$bd" -lt "$bp" ] || fail "the dictionary saved no bytes ($bd of $bp)"
echo "PASS: bp-reconstruct command line"
exit 0
