# tests/: the integration tests (tests/integ/, bash).  They start the
# example servers of examples/ on loopback in a temporary directory and,
# for the trace-* tests, run everything under the tracing tools; see
# tests/integ/lib.sh.  BP_KEEP=1 keeps a test's files.
INTEG_TESTS = \
	tests/integ/checker-selftest.sh \
	tests/integ/untraced.sh \
	tests/integ/trace-threads.sh \
	tests/integ/trace-prefork.sh \
	tests/integ/trace-pool.sh \
	tests/integ/trace-epoll.sh \
	tests/integ/trace-libevent.sh \
	tests/integ/faults.sh \
	tests/integ/unread-tls.sh \
	tests/integ/gnutls-cli.sh \
	tests/integ/rawsys.sh \
	tests/integ/rawsys-go.sh \
	tests/integ/census-fork.sh \
	tests/integ/child-lazy.sh \
	tests/integ/census-exec.sh \
	tests/integ/h2c-upgrade.sh \
	tests/integ/sigwait.sh \
	tests/integ/chunk-late.sh

TESTS += $(INTEG_TESTS)
EXTRA_DIST += $(INTEG_TESTS) tests/integ/lib.sh tests/integ/check-paths.py \
	tests/integ/compare-trees.py tests/integ/echo-server.py
# the fixtures every test library builds on (tests/README.md)
EXTRA_DIST += tests/lib/core.sh tests/lib/logd.sh tests/lib/servers.sh tests/lib/clickhouse.sh \
	tests/README.md
# every test runs under a time limit (tests/bounded, BP_TEST_TIMEOUT)
LOG_COMPILER = $(SHELL) $(top_srcdir)/tests/bounded
EXTRA_DIST += tests/bounded
AM_TESTS_ENVIRONMENT = \
	top_builddir='$(abs_top_builddir)'; top_srcdir='$(abs_top_srcdir)'; \
	export top_builddir top_srcdir;

# rawsys.sh's client that makes its socket calls by number, past libc
check_PROGRAMS += tests/integ/rawsys
tests_integ_rawsys_SOURCES = tests/integ/rawsys.c

# sigwait.sh's signal handler writing during the waits
check_PROGRAMS += tests/integ/sigwait
tests_integ_sigwait_SOURCES = tests/integ/sigwait.c

# chunk-late.sh's program: a chunk made while bp-logd's socket is full
check_PROGRAMS += tests/integ/chunk-late
tests_integ_chunk_late_SOURCES = tests/integ/chunk-late.c
tests_integ_chunk_late_LDADD = -lpthread

# faults.sh's burst of threads
check_PROGRAMS += tests/integ/thread-burst
tests_integ_thread_burst_SOURCES = tests/integ/thread-burst.c
tests_integ_thread_burst_LDADD = -lpthread
