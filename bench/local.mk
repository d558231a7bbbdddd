# bench/: the benchmark suite (BENCHMARKS.md; `bench/run --help`).
# Its programs are built by `make` (not installed) so bench/run works
# from any build tree; `make check` runs `bench/run --smoke` (every
# benchmark once, briefly, asserting that it runs, never its speed).

# The floor shim: every symbol of libbtrace/wrapped.def forwarding
# straight to libc (bench/floor.c).  A shared object is needed for
# LD_PRELOAD, hence -rpath on a library that is never installed.
noinst_LTLIBRARIES += bench/libbtfloor.la
bench_libbtfloor_la_SOURCES = bench/floor.c libbtrace/wrapped.def
bench_libbtfloor_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
bench_libbtfloor_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere \
	-Wl,--version-script=$(builddir)/libbtrace/libbtrace.map
bench_libbtfloor_la_LIBADD = -ldl
EXTRA_bench_libbtfloor_la_DEPENDENCIES = libbtrace/libbtrace.map

noinst_PROGRAMS += \
	bench/bp-calls \
	bench/bp-echo \
	bench/bp-epchurn \
	bench/bp-execloop \
	bench/bp-hello-cgi \
	bench/bp-logstat \
	bench/bp-genbig \
	bench/bp-nesting

bench_bp_calls_SOURCES = bench/calls.c
bench_bp_calls_CFLAGS = $(AM_CFLAGS) $(OPENSSL_CFLAGS)
bench_bp_calls_LDADD = $(OPENSSL_LIBS)
bench_bp_echo_SOURCES = bench/echo.c
bench_bp_epchurn_SOURCES = bench/epchurn.c
bench_bp_hello_cgi_SOURCES = bench/hello-cgi.c
bench_bp_execloop_SOURCES = bench/execloop.c
bench_bp_logstat_SOURCES = bench/logstat.c
bench_bp_logstat_LDADD = libbtsegread.la libbtcommon.la
bench_bp_genbig_SOURCES = bench/genbig.c
bench_bp_genbig_LDADD = libbtcommon.la
bench_bp_nesting_SOURCES = bench/nesting.c
bench_bp_nesting_LDADD = libbtsegread.la libbtcommon.la -lm

BENCH_FILES = bench/run bench/lib.sh bench/report.py bench/smoke.sh \
	bench/nginx-ir.sh bench/http-diff.py
EXTRA_DIST += $(BENCH_FILES)

# The smoke run: every benchmark once, short; asserts only that each
# runs and reports its figures.
TESTS += bench/smoke.sh
