#!/bin/bash
# tb-tomcat.sh - Tomcat 10 (Debian's tomcat10, run by hand from
# /usr/share/tomcat10 with its CATALINA_BASE in the test's directory, its
# own server.xml: the NIO connector on loopback, 8 worker threads,
# keep-alive without limit, no shutdown port) as its own front, with a
# servlet (app/TbServlet.java, compiled at test time against Tomcat's
# servlet API) running 1-3 SQL statements through PostgreSQL JDBC
# (libpostgresql-jdbc-java, over TCP) on a pool of 4 connections shared
# by every request; tb-client drives it with keep-alive connections at
# concurrency 1, 16 and 64.  Modes (TB_TOMCAT_MODES): plain (the driver's
# defaults: blocking sockets) and timeout (socketTimeout=30: the JDK reads
# a non-blocking socket and polls on EAGAIN).  Every request is classified by certainty
# (check-testbed.py --shape app --certainty); the test fails on any
# silently-WRONG or resolved-WRONG request.  See docs/accuracy.md.
TB_FRONT=nginx
TB_APPS=""
: "${TB_REQUESTS:=500}"
: "${TB_TOMCAT_MODES:=plain timeout}"
. "$(dirname "$0")/lib.sh"
TB_FRONT=none
JDK=$(tb_latest '/usr/lib/jvm/java-17-openjdk-*')
CATALINA_HOME=/usr/share/tomcat10
SERVLET_API=/usr/share/java/tomcat10-servlet-api.jar
PGJDBC=/usr/share/java/postgresql.jar
tb_init tomcat
if [ -z "$JDK" ] || [ ! -x "$JDK/bin/javac" ] || [ ! -x "$JDK/bin/java" ]; then
	bp_fail "JDK 17 is missing: apt-get install -y openjdk-17-jdk-headless"
fi
if [ ! -f "$CATALINA_HOME/bin/bootstrap.jar" ] || [ ! -f "$SERVLET_API" ]; then
	bp_fail "Tomcat 10 is missing: apt-get install -y tomcat10"
fi
[ -f "$PGJDBC" ] ||
	bp_fail "$PGJDBC is missing: apt-get install -y libpostgresql-jdbc-java"

# CATALINA_BASE: the web application (ROOT), its classes and the driver
CB=$T/tomcat
WEBINF=$CB/webapps/ROOT/WEB-INF
mkdir -p "$CB/conf" "$CB/logs" "$CB/temp" "$CB/work" "$WEBINF/classes" \
	"$WEBINF/lib"
cp "$TB_SRC/app/TbServlet.java" "$T/app/TbServlet.java"
timeout 120 "$JDK/bin/javac" -cp "$SERVLET_API" -d "$WEBINF/classes" \
	"$T/app/TbServlet.java" >"$T/javac.log" 2>&1 ||
	bp_fail "javac failed: $(tail -n 5 "$T/javac.log")"
cp "$PGJDBC" "$WEBINF/lib/postgresql.jar"
cat >"$WEBINF/web.xml" <<-EOF2
<?xml version="1.0" encoding="UTF-8"?>
<web-app xmlns="https://jakarta.ee/xml/ns/jakartaee" version="6.0"
         metadata-complete="true">
  <servlet>
    <servlet-name>tb</servlet-name>
    <servlet-class>TbServlet</servlet-class>
    <load-on-startup>1</load-on-startup>
  </servlet>
  <servlet-mapping>
    <servlet-name>tb</servlet-name>
    <url-pattern>/py/app</url-pattern>
  </servlet-mapping>
</web-app>
EOF2
# no jar scanning (start-up time), the rest as Debian ships it
sed 's/^tomcat\.util\.scan\.StandardJarScanFilter\.jarsToSkip=.*/&,*.jar/' \
	"$CATALINA_HOME/etc/catalina.properties" >"$CB/conf/catalina.properties"
cp "$CATALINA_HOME/etc/web.xml" "$CB/conf/web.xml"
chmod -R a+rX "$T/app" "$CB"

tb_app_start() {
	local dir=$1 i
	cat >"$CB/conf/server.xml" <<-EOF2
	<?xml version="1.0" encoding="UTF-8"?>
	<Server port="-1" shutdown="SHUTDOWN">
	  <Service name="Catalina">
	    <Connector address="127.0.0.1" port="$FRONT_PORT"
	               protocol="org.apache.coyote.http11.Http11NioProtocol"
	               maxThreads="8" minSpareThreads="8" acceptCount="511"
	               maxKeepAliveRequests="-1" keepAliveTimeout="300000"
	               connectionTimeout="60000" />
	    <Engine name="Catalina" defaultHost="localhost">
	      <Host name="localhost" appBase="webapps" unpackWARs="false"
	            autoDeploy="false" deployOnStartup="true" />
	    </Engine>
	  </Service>
	</Server>
	EOF2
	rm -rf "${CB:?}/work/"*
	# the shell writes its pid and becomes the JVM (bp-run execs too)
	# shellcheck disable=SC2016
	bp_start front "$dir/run/front.pid" sh -c 'echo $$ >"$0"; exec "$@"' \
		"$dir/run/front.pid" "${PRE_APP[@]}" "$JDK/bin/java" \
		-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -Xmx256m \
		-Dcatalina.home="$CATALINA_HOME" -Dcatalina.base="$CB" \
		-Djava.io.tmpdir="$CB/temp" \
		-Dtb.pg.url="jdbc:postgresql://127.0.0.1:$PGPORT/tb?user=tb$JDBC_OPTS" \
		-cp "$CATALINA_HOME/bin/bootstrap.jar:$CATALINA_HOME/bin/tomcat-juli.jar" \
		org.apache.catalina.startup.Bootstrap start
	# Tomcat listens once the servlet's pool is open (at most 60 s)
	for ((i = 0; i < 600; i++)); do
		bash -c "exec 3<>/dev/tcp/127.0.0.1/$FRONT_PORT" 2>/dev/null &&
			return 0
		bp_alive front
		sleep 0.1
	done
	bp_fail "tomcat does not listen on 127.0.0.1:$FRONT_PORT after 60 s:" \
		"$(tail -n 5 "$T/front.log")"
}
TB_APP_STOP=front
TB_APP_STOP_OK=143
TB_CLIENT_OPTS="--mix py:1 --max-sql 3"
TB_APP_CHECK="--py java"
for TB_TOMCAT_MODE in $TB_TOMCAT_MODES; do
	case $TB_TOMCAT_MODE in
	plain) JDBC_OPTS="" ;;
	timeout) JDBC_OPTS="&socketTimeout=30&connectTimeout=10" ;;
	*) bp_fail "unknown mode $TB_TOMCAT_MODE (plain, timeout)" ;;
	esac
	TB_APP_LABEL="$TB_TOMCAT_MODE "
	tb_app_runs
done
tb_app_verdict
echo "PASS: tb-tomcat"
