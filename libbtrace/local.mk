# libbtrace/: the LD_PRELOAD shim.  wrapped.def lists every interposed
# symbol once; the version script that limits the exports is generated
# from it.  The modules form a core library (libbtcore) that the unit tests
# link directly, calling the wrappers' implementations without LD_PRELOAD.
noinst_LTLIBRARIES += libbtcore.la
libbtcore_la_SOURCES = \
	libbtrace/bt.h \
	libbtrace/core.h \
	libbtrace/conf.h \
	libbtrace/redact.h \
	libbtrace/proc.h \
	libbtrace/emit.h \
	libbtrace/fdtab.h \
	libbtrace/chan.h \
	libbtrace/io.h \
	libbtrace/ready.h \
	libbtrace/impl.h \
	libbtrace/real.h \
	libbtrace/real.c \
	libbtrace/conf.c \
	libbtrace/logpath.h \
	libbtrace/emit.c \
	libbtrace/ring.c \
	libbtrace/link.c \
	libbtrace/spool.c \
	libbtrace/own.c \
	libbtrace/mutex.c \
	libbtrace/fdtab.c \
	libbtrace/chan.c \
	libbtrace/fdops.c \
	libbtrace/iopath.h \
	libbtrace/msg.c \
	libbtrace/iov.h \
	libbtrace/iov.c \
	libbtrace/iso.c \
	libbtrace/in.c \
	libbtrace/out.c \
	libbtrace/readypath.h \
	libbtrace/ready.c \
	libbtrace/epoll.c \
	libbtrace/poll.c \
	libbtrace/proc.c \
	libbtrace/names.c \
	libbtrace/tls.h \
	libbtrace/tls.c \
	libbtrace/ssl.c \
	libbtrace/gnutls.c \
	libbtrace/redact.c
libbtcore_la_CFLAGS = $(AM_CFLAGS) $(PCRE2_CFLAGS) -fvisibility=hidden \
	-fno-strict-aliasing -ftls-model=initial-exec
libbtcore_la_LIBADD = libbtproto.la libbtcommon.la -ldl -lpthread

lib_LTLIBRARIES += libbtrace.la
libbtrace_la_SOURCES = libbtrace/shim.c
EXTRA_DIST += libbtrace/wrapped.def
libbtrace_la_CFLAGS = $(libbtcore_la_CFLAGS)
libbtrace_la_LDFLAGS = -module -avoid-version -shared \
	-Wl,--version-script=$(builddir)/libbtrace/libbtrace.map \
	-Wl,--no-undefined-version -Wl,-z,nodelete
libbtrace_la_LIBADD = libbtcore.la
EXTRA_libbtrace_la_DEPENDENCIES = libbtrace/libbtrace.map
CLEANFILES += libbtrace/libbtrace.map

# { global: <every BT_W name>; local: *; };
libbtrace/libbtrace.map: $(srcdir)/libbtrace/wrapped.def
	$(AM_V_GEN)$(MKDIR_P) libbtrace && { \
	  echo '{ global:'; \
	  sed -n 's/^BT_W([^,]*, *\([A-Za-z0-9_]*\),.*/    \1;/p' $(srcdir)/libbtrace/wrapped.def; \
	  echo '  local: *; };'; \
	} > $@.tmp && mv $@.tmp $@

if HAVE_CHECK
check_PROGRAMS += tests/unit/check_shim
TESTS += tests/unit/check_shim
tests_unit_check_shim_SOURCES = tests/unit/check_shim.c tests/unit/check_spool.h
tests_unit_check_shim_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) -I$(srcdir)/libbtrace
tests_unit_check_shim_LDADD = libbtcore.la $(CHECK_LIBS)
# ssl.c against real OpenSSL sessions: only this test links libssl
check_PROGRAMS += tests/unit/check_tls
TESTS += tests/unit/check_tls
tests_unit_check_tls_SOURCES = tests/unit/check_tls.c tests/unit/check_spool.h tests/unit/check_tlsrec.h
tests_unit_check_tls_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(OPENSSL_CFLAGS) -I$(srcdir)/libbtrace
tests_unit_check_tls_LDADD = libbtcore.la $(CHECK_LIBS) $(OPENSSL_LIBS)
# gnutls.c against real GnuTLS sessions: only this test links libgnutls
check_PROGRAMS += tests/unit/check_gnutls
TESTS += tests/unit/check_gnutls
tests_unit_check_gnutls_SOURCES = tests/unit/check_gnutls.c tests/unit/check_spool.h tests/unit/check_tlsrec.h
tests_unit_check_gnutls_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(GNUTLS_CFLAGS) -I$(srcdir)/libbtrace
tests_unit_check_gnutls_LDADD = libbtcore.la $(CHECK_LIBS) $(GNUTLS_LIBS)
endif

# a project function is declared once, in a header (issue 14)
TESTS += tests/unit/no-stray-prototypes.sh
EXTRA_DIST += tests/unit/no-stray-prototypes.sh
