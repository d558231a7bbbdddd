# fuzz/: libFuzzer target for bp-reconstruct's input (the processors'
# targets are in protocols/local.mk).  ./configure --enable-fuzzing CC=clang.
if ENABLE_FUZZING
noinst_PROGRAMS += fuzz/fuzz-logread
fuzz_fuzz_logread_SOURCES = fuzz/fuzz_logread.c \
	common/event.c common/crc32c.c common/segment.c \
	$(libbtrecon_la_SOURCES)
fuzz_fuzz_logread_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)
fuzz_fuzz_logread_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS) $(SQLITE3_CFLAGS)
fuzz_fuzz_logread_LDFLAGS = $(FUZZ_FLAGS)
fuzz_fuzz_logread_LDADD = libbtproto.la $(SQLITE3_LIBS)
endif
EXTRA_DIST += fuzz/logread-seeds.sh
