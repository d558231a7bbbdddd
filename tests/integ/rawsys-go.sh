#!/bin/bash
# rawsys-go.sh - a Go program is named as not traced.
# Go makes its system calls itself (net/http's sockets never reach the C
# library), even in a binary linked dynamically through cgo, where
# LD_PRELOAD loads the shim and its constructor runs: before the census it
# was traced to nothing without a word.  A net/http server built here with
# cgo (Debian's golang-go) runs under `bp-run --wait` while curl (traced,
# so its side is in the log) sends it N requests over about 4 s; the
# server exits by itself (os.Exit: exit_group, no destructors).  It must
# be named by program and pid in bp-run's line at its exit, in
# bp-reconstruct's summary and last line, in untraced_programs (with its
# listening socket) and in bp-report's section; curl is not named, and its
# requests are still there (client spans of an untraced peer).  Then the
# same binary as a net/http client (keep-alive, N requests 200 ms apart)
# of an untraced copy of itself: named too (its connection), in the same
# summary line as the server (one line per program).
. "$(dirname "$0")/lib.sh"
bp_setup rawsys-go
bp_require_tracing
GO=$(command -v go || true)
CURL=/usr/bin/curl
[ -n "$GO" ] || bp_fail "go is missing (apt-get install golang-go)"
[ -x "$CURL" ] || bp_fail "$CURL is missing (apt-get install curl)"
[ -n "$BP_RUN" ] || bp_fail "bp-run is not built: run make"
REPORT=$(bp_find_tool bp-report)
[ -n "$REPORT" ] || bp_fail "bp-report is not built: run make"
N=20

mkdir -p "$T/go"
cat >"$T/go/main.go" <<'EOF'
// goserver PORT N: net/http on 127.0.0.1:PORT, linked through cgo; exits
// (os.Exit) 300 ms after its N-th answer.  goserver client URL N: a
// client.
package main

/*
#include <unistd.h>
static int cpid(void) { return (int)getpid(); }
*/
import "C"

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// goserver client URL N: N GETs of URL on one keep-alive connection,
// 200 ms apart
func client(url string, n int) {
	c := &http.Client{}
	for i := 0; i < n; i++ {
		r, err := c.Get(fmt.Sprintf("%s%d", url, i))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Printf("goclient: pid %d (through cgo): %d answers\n", int(C.cpid()), n)
}

func main() {
	if os.Args[1] == "client" {
		n, _ := strconv.Atoi(os.Args[3])
		client(os.Args[2], n)
		return
	}
	n, _ := strconv.Atoi(os.Args[2])
	left := int64(n)
	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("goserver: pid %d (through cgo) listening\n", int(C.cpid()))
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "go %s\n", r.URL.Path)
		if atomic.AddInt64(&left, -1) == 0 {
			// after net/http has sent this answer (an exit at once
			// raced with it: curl's last request got no reply)
			go func() {
				time.Sleep(300 * time.Millisecond)
				os.Exit(0)
			}()
		}
	})
	http.Serve(ln, nil)
}
EOF
(cd "$T/go" && HOME=$T/go GOCACHE=$T/go/cache GOPATH=$T/go/path \
	GO111MODULE=off CGO_ENABLED=1 GOFLAGS= timeout 300 "$GO" build \
	-o goserver main.go) >"$T/build.log" 2>&1 ||
	bp_fail "go build failed: $(cat "$T/build.log")"
ldd "$T/go/goserver" | grep -q 'libc\.so' ||
	bp_fail "goserver is not linked dynamically (cgo): $(ldd "$T/go/goserver" 2>&1)"

bp_logd_start "$T"
bp_free_port PORT
# the shell writes its pid and becomes bp-run, which waits for goserver
# shellcheck disable=SC2016
bp_start front "$T/front.pid" sh -c 'echo $$ >"$0"; exec "$@"' "$T/front.pid" \
	"$BP_RUN" --wait -s "$BP_LOGD_SOCK" -- "$T/go/goserver" "$PORT" "$N"
for ((i = 0; i < 100; i++)); do
	grep -qi "$(printf ':%04X ' "$PORT")" /proc/net/tcp && break
	bp_alive front
	sleep 0.1
done
[ "$i" -lt 100 ] || bp_fail "goserver did not listen on $PORT within 10 s"
CURLT=(env "LD_PRELOAD=$BP_SHIM" "BTRACE_LOGD=$BP_LOGD_SOCK" timeout 20 "$CURL")
for ((k = 1; k <= N; k++)); do
	"${CURLT[@]}" -s --max-time 15 "http://127.0.0.1:$PORT/r$k" \
		>"$T/curl$k.out" 2>"$T/curl$k.err" ||
		bp_fail "curl request $k failed: $(cat "$T/curl$k.err")"
	grep -q "^go /r$k$" "$T/curl$k.out" ||
		bp_fail "request $k: not goserver's answer: $(head -c 300 "$T/curl$k.out")"
	sleep 0.2
done
bp_wait_gone "${BP_LAUNCHER[front]}" 150 ||
	bp_fail "goserver did not exit after $N requests"
wait "${BP_LAUNCHER[front]}"
rc=$?
BP_LAUNCHER[front]=""
[ "$rc" = 0 ] || bp_fail "bp-run --wait goserver exited $rc: $(cat "$T/front.log")"
grep -q "^goserver: pid [0-9]* (through cgo) listening" "$T/front.out" ||
	bp_fail "goserver did not start through cgo: $(cat "$T/front.out" "$T/front.log")"
gopid=$(sed -n 's/^goserver: pid \([0-9]*\) .*/\1/p' "$T/front.out")
grep -q "^bp-run: 1 process of goserver did its network I/O past the C library (raw system calls: Go, io_uring, ...): not traced" "$T/front.log" ||
	bp_fail "bp-run did not say that goserver could not be traced: $(cat "$T/front.log")"

# the same binary as a client (net/http, keep-alive) under bp-run, of the
# same binary run untraced as its server
bp_free_port PORT2
# shellcheck disable=SC2016
bp_start plain "$T/plain.pid" sh -c 'echo $$ >"$0"; exec "$@"' "$T/plain.pid" \
	"$T/go/goserver" "$PORT2" "$N"
for ((i = 0; i < 100; i++)); do
	grep -qi "$(printf ':%04X ' "$PORT2")" /proc/net/tcp && break
	bp_alive plain
	sleep 0.1
done
[ "$i" -lt 100 ] || bp_fail "the untraced goserver did not listen on $PORT2 within 10 s"
timeout 60 "$BP_RUN" --wait -s "$BP_LOGD_SOCK" -- "$T/go/goserver" client \
	"http://127.0.0.1:$PORT2/c" "$N" >"$T/client.out" 2>"$T/client.err" ||
	bp_fail "the Go client failed: $(cat "$T/client.out" "$T/client.err")"
grep -q "^goclient: pid [0-9]* (through cgo): $N answers" "$T/client.out" ||
	bp_fail "the Go client did not get its answers: $(cat "$T/client.out")"
clpid=$(sed -n 's/^goclient: pid \([0-9]*\) .*/\1/p' "$T/client.out")
grep -q "^bp-run: 1 process of goserver did its network I/O past the C library" "$T/client.err" ||
	bp_fail "bp-run did not say that the Go client could not be traced: $(cat "$T/client.err")"
bp_wait_gone "${BP_LAUNCHER[plain]}" 150 ||
	bp_fail "the untraced goserver did not exit after $N requests"
wait "${BP_LAUNCHER[plain]}"
BP_LAUNCHER[plain]=""
bp_logd_stop

"$BP_RECONSTRUCT" "$T/logs" -o "$T/paths.db" 2>"$T/recon.err" ||
	bp_fail "bp-reconstruct failed: $(cat "$T/recon.err")"
grep -q "^bp-reconstruct: goserver ($T/go/goserver, pids $gopid, $clpid) does its network I/O past libc (raw system calls: Go, io_uring, ...): [0-9]* sockets the tracer never saw, e.g. tcp 127.0.0.1:$PORT listening.*: not traced$" "$T/recon.err" ||
	bp_fail "the summary does not name goserver (pids $gopid, $clpid) in one line: $(cat "$T/recon.err")"
n=$(grep -c "past libc (raw system calls" "$T/recon.err")
[ "$n" = 1 ] || bp_fail "$n programs named in the summary, not 1: $(cat "$T/recon.err")"
grep -q "^bp-reconstruct: .* -> .*look at: .*2 processes not traced (network I/O past libc" "$T/recon.err" ||
	bp_fail "the summary line does not point at the untraced processes: $(cat "$T/recon.err")"
got=$("$PY" - "$T/paths.db" <<'PYEOF'
import sqlite3, sys
h = sqlite3.connect(sys.argv[1])
rows = h.execute("""SELECT u.pid, u.comm, u.tcp_listen, u.tcp, p.exe
  FROM untraced_programs u LEFT JOIN processes p USING (process_id)
  ORDER BY u.tcp_listen DESC""").fetchall()
curl = h.execute("""SELECT count(*) FROM spans s JOIN processes p USING (process_id)
  WHERE p.exe LIKE '%/curl' AND s.kind = 'client'""").fetchone()[0]
# the server's connections come and go (curl's, 200 ms apart): only its
# listening socket is sure to be there; the client's keep-alive connection
print(len(rows), ' '.join('%d:%s:%d:%s:%s' % (r[0], r[1], r[2], 'conn' if r[3] else '-',
                                              (r[4] or 'none').rsplit('/', 1)[-1])
                          for r in rows[1:2] + rows[:1]), curl)
PYEOF
) || bp_fail "reading $T/paths.db failed"
want="2 $clpid:goserver:0:conn:goserver $gopid:goserver:1:"
case $got in
"$want"*":goserver $N") ;;
*) bp_fail "untraced_programs (count, pid:comm:tcp_listen:connections:process exe, the client first) and curl's client spans: $got, not $want...:goserver $N" ;;
esac

"$REPORT" "$T/paths.db" -o "$T/report.html" 2>"$T/report.err" ||
	bp_fail "bp-report failed: $(cat "$T/report.err")"
grep -q ", 2 processes not traced (network I/O past libc) -> " "$T/report.err" ||
	bp_fail "bp-report's summary does not count goserver: $(cat "$T/report.err")"
"$PY" - "$T/report.html" "$gopid" "$clpid" <<'PYEOF' || bp_fail "the report lacks goserver"
import re, sys
html = open(sys.argv[1], encoding='utf-8').read()
m = re.search(r'<section id="untraced"><h2>Programs that could not be traced</h2>(.*?)</section>', html, re.S)
if not m:
    sys.exit("no section 'Programs that could not be traced'")
rows = re.findall(r'<tr><td>([^<]*)</td>', m.group(1))
if rows != ['goserver'] or '>%s, %s<' % (sys.argv[2], sys.argv[3]) not in m.group(1):
    sys.exit("rows %s, not ['goserver'] with pids %s, %s: %s" % (rows, sys.argv[2], sys.argv[3], m.group(1)[:2000]))
PYEOF
echo "PASS: $BP_TEST: a net/http server built with cgo (pid $gopid) and the same binary as a keep-alive client (pid $clpid) named as not traced in bp-run's lines, the summary (one line), untraced_programs and the report; traced curl not named, its $N client spans kept"
