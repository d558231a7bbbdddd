# tests/testbeds/: the real-server testbeds (docs/accuracy.md).  Each
# tb-*.sh starts Debian's servers (apache2, nginx, php-fpm, gunicorn,
# fcgiwrap, PostgreSQL, dnsmasq) traced, on loopback in a temporary
# directory, drives them with tb-client and checks every request's path
# against the client's ground truth (check-testbed.py).  They need root
# and the packages run-tests installs; a missing one fails the test.
# tb-nginx-h2.sh (nginx serving HTTP/2 to h2load, many streams on one
# connection) and tb-grpc.sh (grpcio through nginx's grpc_pass) read
# HTTP/2.  tb-node.sh, tb-pyclient.sh, tb-aiohttp.sh, tb-jdk.sh,
# tb-pyfront.sh, tb-tomcat.sh, tb-redis.sh and tb-mariadb.sh are the
# testbeds of the certainty contract: applications that are their own front (node,
# aiohttp, the JDK, a threaded Python server, Tomcat, a Python server
# sharing a pool of Redis or of MariaDB connections) or traced clients,
# each request classified
# exact-right ... silently-WRONG; they fail on a request labelled exact or
# resolved whose path is wrong.  tb-follow.sh runs bp-reconstruct --follow
# on the nginx -> php-fpm testbed under load, bp-logd and bp-reconstruct
# each SIGKILLed and restarted once: live.db must hold every request once,
# the trees of the offline run, within a bounded lag.
noinst_PROGRAMS += tests/testbeds/tb-client
tests_testbeds_tb_client_SOURCES = tests/testbeds/tb-client.c $(EX_UTIL)
# --tls (tb-nginx-tls.sh): the test client links libssl; the shim never does
tests_testbeds_tb_client_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/examples $(OPENSSL_CFLAGS)
tests_testbeds_tb_client_LDADD = $(OPENSSL_LIBS)
noinst_PROGRAMS += tests/testbeds/tb-limits
tests_testbeds_tb_limits_SOURCES = tests/testbeds/tb-limits.c $(EX_FRONT)
tests_testbeds_tb_limits_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/examples
tests_testbeds_tb_limits_LDADD = -lpthread

TESTBED_TESTS = \
	tests/testbeds/tb-checker-selftest.sh \
	tests/testbeds/tb-apache-prefork.sh \
	tests/testbeds/tb-apache-worker.sh \
	tests/testbeds/tb-apache-event.sh \
	tests/testbeds/tb-apache-tls.sh \
	tests/testbeds/tb-nginx-fpm.sh \
	tests/testbeds/tb-nginx-tls.sh \
	tests/testbeds/tb-nginx-gunicorn.sh \
	tests/testbeds/tb-haproxy.sh \
	tests/testbeds/tb-dns-cgi.sh \
	tests/testbeds/tb-multihost.sh \
	tests/testbeds/tb-limits.sh \
	tests/testbeds/tb-node.sh \
	tests/testbeds/tb-pyclient.sh \
	tests/testbeds/tb-aiohttp.sh \
	tests/testbeds/tb-jdk.sh \
	tests/testbeds/tb-pyfront.sh \
	tests/testbeds/tb-tomcat.sh \
	tests/testbeds/tb-redis.sh \
	tests/testbeds/tb-mariadb.sh \
	tests/testbeds/tb-nginx-h2.sh \
	tests/testbeds/tb-grpc.sh \
	tests/testbeds/tb-follow.sh \
	tests/testbeds/tb-follow-late.sh \
	tests/testbeds/tb-follow-check.sh

TESTS += $(TESTBED_TESTS)
EXTRA_DIST += $(TESTBED_TESTS) tests/testbeds/lib.sh \
	tests/testbeds/check-testbed.py tests/testbeds/same-content.py \
	tests/testbeds/app/app.php \
	tests/testbeds/app/tbapp.py tests/testbeds/app/tb.cgi \
	tests/testbeds/show-paths.py tests/testbeds/app/tbnode.js \
	tests/testbeds/app/tbpyclient.py tests/testbeds/app/tbaio.py \
	tests/testbeds/app/TbJava.java tests/testbeds/app/tbpyfront.py \
	tests/testbeds/app/TbServlet.java \
	tests/testbeds/app/tbredis.py tests/testbeds/app/tbmyfront.py \
	tests/testbeds/app/tbserve.py tests/testbeds/app/tbgrpc.py
