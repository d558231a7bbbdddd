# libbtrace/: the LD_PRELOAD shim.
lib_LTLIBRARIES += libbtrace.la
libbtrace_la_SOURCES = libbtrace/shim.c
libbtrace_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
libbtrace_la_LDFLAGS = -module -avoid-version -shared
libbtrace_la_LIBADD = libbtproto.la libbtcommon.la $(PCRE2_LIBS) -ldl -lpthread
