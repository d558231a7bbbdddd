# reconstruct/: bp-reconstruct, the offline path reconstructor.
# The core is a convenience library so the unit tests can run it directly.
noinst_LTLIBRARIES += libbtrecon.la
libbtrecon_la_SOURCES = \
	reconstruct/chan.c reconstruct/chan.h \
	reconstruct/clock.c reconstruct/clock.h \
	reconstruct/db.c reconstruct/db.h reconstruct/db_impl.h \
	reconstruct/db_rows.c \
	reconstruct/grpc.c reconstruct/grpc.h \
	reconstruct/input.c reconstruct/input.h \
	reconstruct/keeper.c reconstruct/keeper.h \
	reconstruct/join.c reconstruct/join.h \
	reconstruct/lineage.c reconstruct/lineage.h \
	reconstruct/map.c reconstruct/map.h \
	reconstruct/merge.c reconstruct/merge.h \
	reconstruct/apply.h \
	reconstruct/model.c reconstruct/model.h \
	reconstruct/msg.c reconstruct/msg.h \
	reconstruct/notes.c \
	reconstruct/pair.c reconstruct/pair.h \
	reconstruct/park.c reconstruct/park.h \
	reconstruct/pattern_norm.c reconstruct/pattern_norm.h \
	reconstruct/patterns.c reconstruct/patterns.h \
	reconstruct/rc.h \
	reconstruct/recon.c reconstruct/recon.h \
	reconstruct/scan.c reconstruct/scan.h \
	reconstruct/span.c reconstruct/span.h \
	reconstruct/steps.c reconstruct/steps.h \
	reconstruct/spill.c reconstruct/spill.h \
	reconstruct/sql.c reconstruct/sql.h \
	reconstruct/tokens.c reconstruct/tokens.h \
	reconstruct/views.c reconstruct/views.h
libbtrecon_la_CFLAGS = $(AM_CFLAGS) $(SAN_CFLAGS) $(SQLITE3_CFLAGS)
libbtrecon_la_LIBADD = libbtproto.la libbtsegread.la libbtcommon.la $(SQLITE3_LIBS)

# The exporters and what bp-report shares with them: they read a finished
# database with SQL.  The OTLP push (otlp_push.c) adds a sender thread,
# zlib for gzip and OpenSSL for https.
noinst_LTLIBRARIES += libbtexport.la
libbtexport_la_SOURCES = \
	reconstruct/export.c reconstruct/export.h \
	reconstruct/export_clickhouse.c reconstruct/clickhouse.h \
	reconstruct/export_dot.c \
	reconstruct/export_otlp.c \
	reconstruct/export_perfetto.c \
	reconstruct/http_client.c reconstruct/http_client.h \
	reconstruct/otlp_push.c reconstruct/otlp_push.h \
	reconstruct/otlp_wire.c reconstruct/otlp_wire.h
libbtexport_la_CFLAGS = $(AM_CFLAGS) $(SAN_CFLAGS) $(SQLITE3_CFLAGS) $(ZLIB_CFLAGS) $(OPENSSL_CFLAGS)
libbtexport_la_LIBADD = $(SQLITE3_LIBS) $(ZLIB_LIBS) $(OPENSSL_LIBS)

bin_PROGRAMS += bp-reconstruct
# --follow drives the reconstruction and the exports: it is the
# command's, not the library's (the fuzz targets link the library alone).
bp_reconstruct_SOURCES = reconstruct/main.c reconstruct/follow.c reconstruct/follow.h
bp_reconstruct_CFLAGS = $(AM_CFLAGS) $(SAN_CFLAGS) $(SQLITE3_CFLAGS)
bp_reconstruct_LDFLAGS = $(SAN_CFLAGS)
bp_reconstruct_LDADD = libbtrecon.la libbtexport.la

# Unit tests: scripted logs (tests/recon/gen.c) through the core.  The
# program is built in tests/recon/ with the generator.
if HAVE_CHECK
check_PROGRAMS += tests/recon/check_recon
TESTS += tests/recon/check_recon
tests_recon_check_recon_SOURCES = \
	tests/unit/check_recon.c tests/unit/check_recon.h \
	tests/unit/check_recon_paths.c \
	tests/unit/check_recon_certainty.c \
	tests/unit/check_recon_loss.c \
	tests/unit/check_recon_clock.c \
	tests/unit/check_recon_unit.c \
	tests/unit/check_recon_unread.c \
	tests/unit/check_recon_more.c \
	tests/recon/gen.c tests/recon/gen.h
tests_recon_check_recon_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/reconstruct
tests_recon_check_recon_CFLAGS = $(AM_CFLAGS) $(SAN_CFLAGS) $(CHECK_CFLAGS) $(SQLITE3_CFLAGS)
tests_recon_check_recon_LDFLAGS = $(SAN_CFLAGS)
tests_recon_check_recon_LDADD = libbtrecon.la $(CHECK_LIBS) $(SQLITE3_LIBS)
endif

# The command line, on logs from the workload generator.
check_PROGRAMS += tests/recon/genlog
tests_recon_genlog_SOURCES = tests/recon/genlog.c tests/recon/gen.c tests/recon/gen.h
tests_recon_genlog_CFLAGS = $(AM_CFLAGS) $(SAN_CFLAGS)
tests_recon_genlog_LDFLAGS = $(SAN_CFLAGS)
tests_recon_genlog_LDADD = libbtcommon.la
TESTS += tests/recon/cli.sh tests/recon/follow.sh
EXTRA_DIST += tests/recon/cli.sh tests/recon/follow.sh
