# protocols/: the protocol processors (one file each) and their registry.
noinst_LTLIBRARIES += libbtproto.la
libbtproto_la_SOURCES = \
	protocols/registry.c \
	protocols/line.c \
	protocols/oneshot.c \
	protocols/defaults.c
libbtproto_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
