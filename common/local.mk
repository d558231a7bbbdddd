# common/: the record codec, checksums and log segments, shared by the
# shim, bp-logd and the tools.  Built PIC so the shim can link it.
noinst_LTLIBRARIES += libbtcommon.la
libbtcommon_la_SOURCES = \
	common/event.c \
	common/crc32c.c \
	common/segment.c \
	include/btrace/event.h \
	include/btrace/proto.h \
	include/btrace/ring.h \
	include/btrace/segment.h
libbtcommon_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden

# The reader of a set of segments (btrace/segread.h): which files, their
# blocks, streams and the cut of repeated bytes; bp-dump, bp-reconstruct
# and the bench tools share it (not the shim, which never reads logs).
noinst_LTLIBRARIES += libbtsegread.la
libbtsegread_la_SOURCES = common/segread.c include/btrace/segread.h
