# libbtrace/: the LD_PRELOAD shim.  wrapped.def lists every interposed
# symbol once; the version script that limits the exports is generated
# from it.
lib_LTLIBRARIES += libbtrace.la
libbtrace_la_SOURCES = \
	libbtrace/bt.h \
	libbtrace/real.h \
	libbtrace/real.c \
	libbtrace/conf.c \
	libbtrace/emit.c \
	libbtrace/fdtab.c \
	libbtrace/chan.c \
	libbtrace/fdops.c \
	libbtrace/io.c \
	libbtrace/ready.c \
	libbtrace/proc.c \
	libbtrace/names.c \
	libbtrace/shim.c
EXTRA_DIST += libbtrace/wrapped.def
libbtrace_la_CFLAGS = $(AM_CFLAGS) $(PCRE2_CFLAGS) -fvisibility=hidden \
	-fno-strict-aliasing -ftls-model=initial-exec
libbtrace_la_LDFLAGS = -module -avoid-version -shared \
	-Wl,--version-script=$(builddir)/libbtrace/libbtrace.map \
	-Wl,--no-undefined-version -Wl,-z,nodelete
libbtrace_la_LIBADD = libbtproto.la libbtcommon.la $(PCRE2_LIBS) -ldl -lpthread
EXTRA_libbtrace_la_DEPENDENCIES = libbtrace/libbtrace.map
CLEANFILES += libbtrace/libbtrace.map

# { global: <every BT_W name>; local: *; };
libbtrace/libbtrace.map: $(srcdir)/libbtrace/wrapped.def
	$(AM_V_GEN)$(MKDIR_P) libbtrace && { \
	  echo '{ global:'; \
	  sed -n 's/^BT_W([^,]*, *\([A-Za-z0-9_]*\),.*/    \1;/p' $(srcdir)/libbtrace/wrapped.def; \
	  echo '  local: *; };'; \
	} > $@.tmp && mv $@.tmp $@
