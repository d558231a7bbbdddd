# logd/: bp-logd (the per-host logging daemon) and bp-dump (prints log
# segments).  Their tests live in tests/logd/ and tests/unit/check_segment.c.

LOGD_COMPILE_FLAGS = $(AM_CFLAGS) $(SAN_CFLAGS)
LOGD_LINK_FLAGS = $(SAN_CFLAGS)

# The reading half shared by bp-dump and the tests.
noinst_LTLIBRARIES += libbtreadlog.la
libbtreadlog_la_SOURCES = logd/readlog.c logd/readlog.h
libbtreadlog_la_LIBADD = libbtsegread.la
libbtreadlog_la_CFLAGS = $(LOGD_COMPILE_FLAGS)

bin_PROGRAMS += bp-logd bp-dump
bp_logd_SOURCES = \
	logd/logd.h \
	logd/main.c \
	logd/log.c \
	logd/server.c \
	logd/peer.c \
	logd/chunk.c \
	logd/store.c \
	logd/notes.c \
	logd/census.c \
	logd/adopt.c
bp_logd_CFLAGS = $(LOGD_COMPILE_FLAGS) $(LIBEVENT_CFLAGS)
bp_logd_LDFLAGS = $(LOGD_LINK_FLAGS)
bp_logd_LDADD = libbtcommon.la $(LIBEVENT_LIBS)

bp_dump_SOURCES = logd/dump.c
bp_dump_CFLAGS = $(LOGD_COMPILE_FLAGS)
bp_dump_LDFLAGS = $(LOGD_LINK_FLAGS)
bp_dump_LDADD = libbtreadlog.la libbtcommon.la

# ---- tests -------------------------------------------------------------------
# fake_tracer plays libbtrace's side of the ring protocol; verify_log checks
# its records in the segments; the scripts start bp-logd in a temp dir.
check_PROGRAMS += tests/logd/fake_tracer tests/logd/verify_log
tests_logd_fake_tracer_SOURCES = tests/logd/fake_tracer.c
tests_logd_fake_tracer_CFLAGS = $(LOGD_COMPILE_FLAGS)
tests_logd_fake_tracer_LDFLAGS = $(LOGD_LINK_FLAGS)
tests_logd_fake_tracer_LDADD = libbtcommon.la -lpthread
tests_logd_verify_log_SOURCES = tests/logd/verify_log.c
tests_logd_verify_log_CFLAGS = $(LOGD_COMPILE_FLAGS) -I$(top_srcdir)/logd
tests_logd_verify_log_LDFLAGS = $(LOGD_LINK_FLAGS)
tests_logd_verify_log_LDADD = libbtreadlog.la libbtcommon.la
TESTS += \
	tests/logd/basic.sh \
	tests/logd/tracer_kill.sh \
	tests/logd/logd_restart.sh \
	tests/logd/logd_adopt.sh \
	tests/logd/bad_peers.sh \
	tests/logd/peer_uid.sh \
	tests/logd/enospc.sh \
	tests/logd/many_threads.sh \
	tests/logd/slow_disk.sh \
	tests/logd/lazy_reset.sh
EXTRA_DIST += tests/logd/lib.sh
# a slow disk for bp-logd (slow_disk.sh preloads it)
check_LTLIBRARIES += tests/logd/libslowio.la
tests_logd_libslowio_la_SOURCES = tests/logd/slowio.c
tests_logd_libslowio_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
tests_logd_libslowio_la_LIBADD = -ldl

if HAVE_CHECK
check_PROGRAMS += tests/unit/check_segment
TESTS += tests/unit/check_segment
tests_unit_check_segment_SOURCES = tests/unit/check_segment.c logd/chunk.c
tests_unit_check_segment_CFLAGS = $(LOGD_COMPILE_FLAGS) $(CHECK_CFLAGS) -I$(top_srcdir)/logd
tests_unit_check_segment_LDFLAGS = $(LOGD_LINK_FLAGS)
tests_unit_check_segment_LDADD = libbtreadlog.la libbtcommon.la $(CHECK_LIBS)
endif
