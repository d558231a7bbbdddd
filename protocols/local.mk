# protocols/: the protocol processors (one file each), their registry and
# the default selection rules; their unit test (tests/unit/check_proto*),
# the capture replay tool (tests/proto/) and the fuzz targets (fuzz/).
BTPROTO_SOURCES = \
	protocols/registry.c \
	protocols/defaults.c \
	protocols/line.c \
	protocols/oneshot.c \
	protocols/http.c protocols/http.h protocols/http_sniff.c \
	protocols/fastcgi.c \
	protocols/pgsql.c \
	protocols/dns.c \
	protocols/redis.c \
	protocols/mysql.c \
	protocols/http2.c

noinst_LTLIBRARIES += libbtproto.la
libbtproto_la_SOURCES = $(BTPROTO_SOURCES)
libbtproto_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden

# pp-replay: print the messages a processor finds in a capture file
# (tests/proto/README.md); the processors are compiled in again so that
# --enable-debug builds them with the sanitizers.
noinst_PROGRAMS += tests/proto/pp-replay
tests_proto_pp_replay_SOURCES = tests/proto/pp_replay.c \
	tests/unit/check_proto_lib.c tests/unit/check_proto.h $(BTPROTO_SOURCES)
tests_proto_pp_replay_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
tests_proto_pp_replay_CFLAGS = $(AM_CFLAGS) $(SAN_CFLAGS)
tests_proto_pp_replay_LDFLAGS = $(SAN_CFLAGS)
tests_proto_pp_replay_LDADD = libbtcommon.la

# the golden logs against an independent framing (python3)
TESTS += tests/proto/check-golden.sh
# real clients against real servers, both traced, every message checked
# against the bytes on the wire (root; nginx, apache2, PostgreSQL, dnsmasq)
TESTS += tests/proto/e2e.sh

# the unit test: every capture and synthetic case in every chunking
if HAVE_CHECK
check_PROGRAMS += tests/unit/check_proto
TESTS += tests/unit/check_proto
tests_unit_check_proto_SOURCES = tests/unit/check_proto.c \
	tests/unit/check_proto_lib.c tests/unit/check_proto.h $(BTPROTO_SOURCES)
tests_unit_check_proto_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/tests/unit \
	-DPROTO_TESTDIR='"$(abs_top_srcdir)/tests/proto"'
tests_unit_check_proto_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(SAN_CFLAGS)
tests_unit_check_proto_LDFLAGS = $(SAN_CFLAGS)
tests_unit_check_proto_LDADD = libbtcommon.la $(CHECK_LIBS)
endif

# libFuzzer targets, one per processor (./configure --enable-fuzzing
# CC=clang); fuzz/run.sh SECONDS runs each with seeds from the captures.
if ENABLE_FUZZING
FUZZ_FLAGS = -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer
FUZZ_SOURCES = fuzz/fuzz_proto.c tests/unit/check_proto_lib.c \
	tests/unit/check_proto.h $(BTPROTO_SOURCES)
FUZZ_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
noinst_PROGRAMS += fuzz/fuzz-http fuzz/fuzz-fastcgi fuzz/fuzz-postgresql \
	fuzz/fuzz-dns fuzz/fuzz-line fuzz/fuzz-oneshot fuzz/fuzz-redis \
	fuzz/fuzz-mysql fuzz/fuzz-http2
fuzz_fuzz_http_SOURCES = $(FUZZ_SOURCES)
fuzz_fuzz_http_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_PROTO=bt_proto_http
fuzz_fuzz_http_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
fuzz_fuzz_http_LDFLAGS = $(FUZZ_FLAGS)
fuzz_fuzz_http_LDADD = libbtcommon.la
fuzz_fuzz_fastcgi_SOURCES = $(FUZZ_SOURCES)
fuzz_fuzz_fastcgi_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_PROTO=bt_proto_fastcgi
fuzz_fuzz_fastcgi_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
fuzz_fuzz_fastcgi_LDFLAGS = $(FUZZ_FLAGS)
fuzz_fuzz_fastcgi_LDADD = libbtcommon.la
fuzz_fuzz_postgresql_SOURCES = $(FUZZ_SOURCES)
fuzz_fuzz_postgresql_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_PROTO=bt_proto_pgsql
fuzz_fuzz_postgresql_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
fuzz_fuzz_postgresql_LDFLAGS = $(FUZZ_FLAGS)
fuzz_fuzz_postgresql_LDADD = libbtcommon.la
fuzz_fuzz_dns_SOURCES = $(FUZZ_SOURCES)
fuzz_fuzz_dns_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_PROTO=bt_proto_dns
fuzz_fuzz_dns_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
fuzz_fuzz_dns_LDFLAGS = $(FUZZ_FLAGS)
fuzz_fuzz_dns_LDADD = libbtcommon.la
fuzz_fuzz_line_SOURCES = $(FUZZ_SOURCES)
fuzz_fuzz_line_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_PROTO=bt_proto_line
fuzz_fuzz_line_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
fuzz_fuzz_line_LDFLAGS = $(FUZZ_FLAGS)
fuzz_fuzz_line_LDADD = libbtcommon.la
fuzz_fuzz_oneshot_SOURCES = $(FUZZ_SOURCES)
fuzz_fuzz_oneshot_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_PROTO=bt_proto_oneshot
fuzz_fuzz_oneshot_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
fuzz_fuzz_oneshot_LDFLAGS = $(FUZZ_FLAGS)
fuzz_fuzz_oneshot_LDADD = libbtcommon.la
fuzz_fuzz_redis_SOURCES = $(FUZZ_SOURCES)
fuzz_fuzz_redis_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_PROTO=bt_proto_redis
fuzz_fuzz_redis_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
fuzz_fuzz_redis_LDFLAGS = $(FUZZ_FLAGS)
fuzz_fuzz_redis_LDADD = libbtcommon.la
fuzz_fuzz_mysql_SOURCES = $(FUZZ_SOURCES)
fuzz_fuzz_mysql_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_PROTO=bt_proto_mysql
fuzz_fuzz_mysql_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
fuzz_fuzz_mysql_LDFLAGS = $(FUZZ_FLAGS)
fuzz_fuzz_mysql_LDADD = libbtcommon.la
fuzz_fuzz_http2_SOURCES = $(FUZZ_SOURCES)
fuzz_fuzz_http2_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_PROTO=bt_proto_http2
fuzz_fuzz_http2_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
fuzz_fuzz_http2_LDFLAGS = $(FUZZ_FLAGS)
fuzz_fuzz_http2_LDADD = libbtcommon.la
endif
EXTRA_DIST += fuzz/run.sh fuzz/mkseeds.py tests/proto/README.md \
	tests/proto/captures tests/proto/golden tests/proto/record.sh \
	tests/proto/strace2cap.py tests/proto/check_golden.py \
	tests/proto/pipeline.py tests/proto/pgclient.c tests/proto/myclient.py \
	tests/proto/mycapi.py \
	tests/proto/check-golden.sh tests/proto/e2e.sh tests/proto/e2e_check.py
