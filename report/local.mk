# report/: bp-report, the HTML report of a paths database.  It reads the
# database with SQL through libbtexport (reconstruct/export.h).
bin_PROGRAMS += bp-report
bp_report_SOURCES = report/main.c report/report.c report/report.h \
	report/page.h report/page.c report/hist.c report/trust.c report/timeline.c report/html.c
bp_report_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/reconstruct
bp_report_CFLAGS = $(AM_CFLAGS) $(SAN_CFLAGS) $(SQLITE3_CFLAGS)
bp_report_LDFLAGS = $(SAN_CFLAGS)
bp_report_LDADD = libbtexport.la $(SQLITE3_LIBS) -lm
