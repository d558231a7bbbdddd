# tests/report/: the views, the patterns, the exporters (OTLP, Perfetto,
# DOT) and bp-report, on scripted logs (demo.c: a web shop through nginx,
# php-fpm and PostgreSQL, written with tests/recon/gen.c) and on traced
# runs of the example servers.
check_PROGRAMS += tests/report/demolog
tests_report_demolog_SOURCES = tests/report/demolog.c \
	tests/report/demo.c tests/report/demo.h \
	tests/recon/gen.c tests/recon/gen.h
tests_report_demolog_CFLAGS = $(AM_CFLAGS) $(SAN_CFLAGS)
tests_report_demolog_LDFLAGS = $(SAN_CFLAGS)
tests_report_demolog_LDADD = libbtcommon.la

# The OTLP encoder's edge cases in both encodings, read back by push.sh.
check_PROGRAMS += tests/report/otlpwire
tests_report_otlpwire_SOURCES = tests/report/otlpwire.c
tests_report_otlpwire_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/reconstruct
tests_report_otlpwire_CFLAGS = $(AM_CFLAGS) $(SAN_CFLAGS)
tests_report_otlpwire_LDFLAGS = $(SAN_CFLAGS)
tests_report_otlpwire_LDADD = libbtexport.la

# The views and patterns against known answers (Check).
if HAVE_CHECK
check_PROGRAMS += tests/report/check_report
TESTS += tests/report/check_report
tests_report_check_report_SOURCES = tests/report/check_report.c \
	tests/report/demo.c tests/report/demo.h \
	tests/recon/gen.c tests/recon/gen.h
tests_report_check_report_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/reconstruct
tests_report_check_report_CFLAGS = $(AM_CFLAGS) $(SAN_CFLAGS) $(CHECK_CFLAGS) $(SQLITE3_CFLAGS)
tests_report_check_report_LDFLAGS = $(SAN_CFLAGS)
tests_report_check_report_LDADD = libbtrecon.la $(CHECK_LIBS) $(SQLITE3_LIBS)
endif

# The exporters read back by independent readers (protobufjs with the
# OpenTelemetry .proto files from npm, Python's json, dot -Tsvg), the OTLP
# push by a receiver built on the same (push.sh), the ClickHouse sink by
# a ClickHouse server started by hand (clickhouse.sh), and bp-report in
# headless Chromium (tests/report/lib.sh).
REPORT_TESTS = tests/report/exports.sh tests/report/report.sh \
	tests/report/follow-push.sh \
	tests/report/traced.sh tests/report/push.sh tests/report/clickhouse.sh
TESTS += $(REPORT_TESTS)
EXTRA_DIST += $(REPORT_TESTS) tests/report/lib.sh tests/report/otlp-check.js \
	tests/report/perfetto-check.py tests/report/otlp-receiver.js \
	tests/report/otlp-push-check.py tests/report/otlp-wire-check.js \
	tests/report/clickhouse-check.py tests/report/ch-flaky.py \
	tests/report/clickhouse-join-check.py
CLEANFILES += tests/report/report.png
clean-local: clean-report-node
clean-report-node:
	-rm -rf tests/report/node
.PHONY: clean-report-node
