# tests/transparency/: proof that libbtrace.so changes no traced program's
# behaviour beyond the documented event isolation (docs/reliability.md,
# "Transparency").
#   behaviour.sh   small C programs (tp-*.c), one per behaviour, run
#                  untraced and traced, transcripts compared
#   bprun-refuse.sh  bp-run refuses statically linked and setuid programs
#   cpython.sh     a bounded selection of CPython's own test suite,
#                  untraced and traced, results compared per test
#   glib.sh        a bounded selection of GLib's installed tests, likewise
# BP_KEEP=1 keeps a script's temp directory.

TP_PROGS = \
	tests/transparency/tp-cleanenv \
	tests/transparency/tp-close-range \
	tests/transparency/tp-daemon \
	tests/transparency/tp-dup2 \
	tests/transparency/tp-epoll \
	tests/transparency/tp-epq \
	tests/transparency/tp-fork-threads \
	tests/transparency/tp-halfclose \
	tests/transparency/tp-highfd \
	tests/transparency/tp-iovec \
	tests/transparency/tp-nbconnect \
	tests/transparency/tp-peek \
	tests/transparency/tp-scm-rights \
	tests/transparency/tp-select \
	tests/transparency/tp-sig-eintr \
	tests/transparency/tp-splice \
	tests/transparency/tp-vfork \
	tests/transparency/tp-waitall

check_PROGRAMS += $(TP_PROGS)
TP_COMMON = tests/transparency/tp.c tests/transparency/tp.h
TP_CFLAGS = $(AM_CFLAGS)
TP_LIBS = -lpthread

tests_transparency_tp_cleanenv_SOURCES = tests/transparency/tp-cleanenv.c $(TP_COMMON)
tests_transparency_tp_cleanenv_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_cleanenv_LDADD = $(TP_LIBS)

tests_transparency_tp_close_range_SOURCES = tests/transparency/tp-close-range.c $(TP_COMMON)
tests_transparency_tp_close_range_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_close_range_LDADD = $(TP_LIBS)

tests_transparency_tp_daemon_SOURCES = tests/transparency/tp-daemon.c $(TP_COMMON)
tests_transparency_tp_daemon_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_daemon_LDADD = $(TP_LIBS)

tests_transparency_tp_dup2_SOURCES = tests/transparency/tp-dup2.c $(TP_COMMON)
tests_transparency_tp_dup2_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_dup2_LDADD = $(TP_LIBS)

tests_transparency_tp_epoll_SOURCES = tests/transparency/tp-epoll.c $(TP_COMMON)
tests_transparency_tp_epoll_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_epoll_LDADD = $(TP_LIBS)

tests_transparency_tp_epq_SOURCES = tests/transparency/tp-epq.c $(TP_COMMON)
tests_transparency_tp_epq_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_epq_LDADD = $(TP_LIBS)

tests_transparency_tp_fork_threads_SOURCES = tests/transparency/tp-fork-threads.c $(TP_COMMON)
tests_transparency_tp_fork_threads_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_fork_threads_LDADD = $(TP_LIBS)

tests_transparency_tp_halfclose_SOURCES = tests/transparency/tp-halfclose.c $(TP_COMMON)
tests_transparency_tp_halfclose_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_halfclose_LDADD = $(TP_LIBS)

tests_transparency_tp_highfd_SOURCES = tests/transparency/tp-highfd.c $(TP_COMMON)
tests_transparency_tp_highfd_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_highfd_LDADD = $(TP_LIBS)

tests_transparency_tp_iovec_SOURCES = tests/transparency/tp-iovec.c $(TP_COMMON)
tests_transparency_tp_iovec_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_iovec_LDADD = $(TP_LIBS)

tests_transparency_tp_nbconnect_SOURCES = tests/transparency/tp-nbconnect.c $(TP_COMMON)
tests_transparency_tp_nbconnect_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_nbconnect_LDADD = $(TP_LIBS)

tests_transparency_tp_peek_SOURCES = tests/transparency/tp-peek.c $(TP_COMMON)
tests_transparency_tp_peek_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_peek_LDADD = $(TP_LIBS)

tests_transparency_tp_scm_rights_SOURCES = tests/transparency/tp-scm-rights.c $(TP_COMMON)
tests_transparency_tp_scm_rights_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_scm_rights_LDADD = $(TP_LIBS)

tests_transparency_tp_select_SOURCES = tests/transparency/tp-select.c $(TP_COMMON)
tests_transparency_tp_select_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_select_LDADD = $(TP_LIBS)

tests_transparency_tp_sig_eintr_SOURCES = tests/transparency/tp-sig-eintr.c $(TP_COMMON)
tests_transparency_tp_sig_eintr_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_sig_eintr_LDADD = $(TP_LIBS)

tests_transparency_tp_splice_SOURCES = tests/transparency/tp-splice.c $(TP_COMMON)
tests_transparency_tp_splice_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_splice_LDADD = $(TP_LIBS)

tests_transparency_tp_vfork_SOURCES = tests/transparency/tp-vfork.c $(TP_COMMON)
tests_transparency_tp_vfork_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_vfork_LDADD = $(TP_LIBS)

tests_transparency_tp_waitall_SOURCES = tests/transparency/tp-waitall.c $(TP_COMMON)
tests_transparency_tp_waitall_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_waitall_LDADD = $(TP_LIBS)

# bprun-refuse.sh: one program, linked statically and dynamically
check_PROGRAMS += tests/transparency/refuse-static tests/transparency/refuse-dynamic
tests_transparency_refuse_static_SOURCES = tests/transparency/refuse-static.c
tests_transparency_refuse_static_CFLAGS = $(TP_CFLAGS)
tests_transparency_refuse_static_LDFLAGS = -all-static
tests_transparency_refuse_dynamic_SOURCES = tests/transparency/refuse-static.c
tests_transparency_refuse_dynamic_CFLAGS = $(TP_CFLAGS)

TRANSP_TESTS = \
	tests/transparency/behaviour.sh \
	tests/transparency/bprun-refuse.sh \
	tests/transparency/cpython.sh \
	tests/transparency/glib.sh

TESTS += $(TRANSP_TESTS)
EXTRA_DIST += $(TRANSP_TESTS) tests/transparency/lib.sh \
	tests/transparency/results.py tests/transparency/expected-cpython.txt \
	tests/transparency/expected-glib.txt
