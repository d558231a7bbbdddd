# tools/: bp-run, the front door for tracing a command.
bin_PROGRAMS += bp-run
bp_run_SOURCES = tools/bp-run.c
bp_run_CPPFLAGS = $(AM_CPPFLAGS) -DLIBDIR='"$(libdir)"' -DBINDIR='"$(bindir)"'
bp_run_CFLAGS = $(AM_CFLAGS) $(SAN_CFLAGS)
bp_run_LDFLAGS = $(SAN_CFLAGS)
