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
	tests/transparency/tp-epoll \
	tests/transparency/tp-peek \
	tests/transparency/tp-sig-eintr \
	tests/transparency/tp-splice \
	tests/transparency/tp-waitall

check_PROGRAMS += $(TP_PROGS)
TP_COMMON = tests/transparency/tp.c tests/transparency/tp.h
TP_CFLAGS = $(AM_CFLAGS)
TP_LIBS = -lpthread

tests_transparency_tp_epoll_SOURCES = tests/transparency/tp-epoll.c $(TP_COMMON)
tests_transparency_tp_epoll_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_epoll_LDADD = $(TP_LIBS)

tests_transparency_tp_peek_SOURCES = tests/transparency/tp-peek.c $(TP_COMMON)
tests_transparency_tp_peek_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_peek_LDADD = $(TP_LIBS)

tests_transparency_tp_sig_eintr_SOURCES = tests/transparency/tp-sig-eintr.c $(TP_COMMON)
tests_transparency_tp_sig_eintr_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_sig_eintr_LDADD = $(TP_LIBS)

tests_transparency_tp_splice_SOURCES = tests/transparency/tp-splice.c $(TP_COMMON)
tests_transparency_tp_splice_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_splice_LDADD = $(TP_LIBS)

tests_transparency_tp_waitall_SOURCES = tests/transparency/tp-waitall.c $(TP_COMMON)
tests_transparency_tp_waitall_CFLAGS = $(TP_CFLAGS)
tests_transparency_tp_waitall_LDADD = $(TP_LIBS)

TRANSP_TESTS = \
	tests/transparency/behaviour.sh

TESTS += $(TRANSP_TESTS)
EXTRA_DIST += $(TRANSP_TESTS) tests/transparency/lib.sh
