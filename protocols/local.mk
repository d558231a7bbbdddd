# protocols/: the protocol processors (one file each), their registry and
# the default selection rules; their unit test (tests/unit/check_proto*),
# the capture replay tool (tests/proto/) and the fuzz targets (fuzz/).
BTPROTO_SOURCES = \
	protocols/registry.c \
	protocols/defaults.c \
	protocols/line.c \
	protocols/oneshot.c \
	protocols/http.c \
	protocols/fastcgi.c \
	protocols/pgsql.c \
	protocols/dns.c

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
