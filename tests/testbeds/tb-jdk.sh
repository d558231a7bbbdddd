#!/bin/bash
# tb-jdk.sh - JDK 17 as its own front: com.sun.net.httpserver.HttpServer
# with a fixed pool of 8 threads whose handlers call a backend (the same
# program, 4 threads) through one java.net.http.HttpClient (HTTP/1.1;
# its selector thread reads every answer and hands it to the waiting
# handler), app/TbJava.java, compiled with javac into the test's
# directory; tb-client drives it with keep-alive connections at
# concurrency 1, 16 and 64.  Every request is classified by certainty
# (check-testbed.py --shape app --certainty); the test fails on any
# silently-WRONG or resolved-WRONG request.  See docs/accuracy.md.
#
# HttpClient hands each call to its own threads through memory: the
# handler thread reading request r waits on a condition variable while a
# selector or worker thread, designated by the request whose reply it read
# last (answered) or by none, sends r's call.  Such a call is unowned and
# resolved by content, or marked ambiguous:answered (docs/reconstruct.md,
# "Unowned messages"); a call sent while requests are parked, likewise.
TB_FRONT=nginx
TB_APPS=""
: "${TB_REQUESTS:=500}"
. "$(dirname "$0")/lib.sh"
TB_FRONT=none
JDK=$(tb_latest '/usr/lib/jvm/java-17-openjdk-*')
tb_init jdk
if [ -z "$JDK" ] || [ ! -x "$JDK/bin/javac" ] || [ ! -x "$JDK/bin/java" ]; then
	bp_fail "JDK 17 is missing: apt-get install -y openjdk-17-jdk-headless"
fi
cp "$TB_SRC/app/TbJava.java" "$T/app/TbJava.java"
mkdir -p "$T/app/classes"
timeout 120 "$JDK/bin/javac" -d "$T/app/classes" "$T/app/TbJava.java" \
	>"$T/javac.log" 2>&1 || bp_fail "javac failed: $(tail -n 5 "$T/javac.log")"
chmod -R a+rX "$T/app"
JAVA=("$JDK/bin/java" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k
	-Xmx128m -Dsun.net.httpserver.nodelay=true -cp "$T/app/classes" TbJava)

tb_app_start() {
	local dir=$1
	bp_start backend "$dir/run/backend.pid" "${PRE_APP[@]}" "${JAVA[@]}" \
		backend "$BACK_PORT" "$dir/run/backend.pid"
	bp_start front "$dir/run/front.pid" "${PRE_APP[@]}" "${JAVA[@]}" \
		front "$FRONT_PORT" "$BACK_PORT" "$dir/run/front.pid"
}
TB_APP_STOP_OK=143
TB_CLIENT_OPTS="--mix py:1 --max-sql 0 --calls 1"
TB_APP_CHECK="--py java --backend java"
tb_app_testbed
echo "PASS: tb-jdk"
