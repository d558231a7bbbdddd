/*
 * main.c - bp-report: a self-contained HTML report of a paths database.
 */
#include "config.h"

#include <sys/stat.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

static const char help[] =
"NAME\n"
"    bp-report - an HTML report of the request paths bp-reconstruct found\n"
"\n"
"SYNOPSIS\n"
"    bp-report [OPTION]... PATHS.db -o REPORT.html\n"
"\n"
"DESCRIPTION\n"
"    Reads the paths database bp-reconstruct wrote and makes one HTML file\n"
"    that opens from disk in any browser, with no network access: its\n"
"    style, script and pictures (SVG) are inside it.  It shows\n"
"      - a summary: requests, spans, patterns, errors, hosts and clocks;\n"
"      - the slowest requests, and every error (HTTP 5xx, SQL errors, failed\n"
"        name lookups, calls never answered) with its path from the root;\n"
"      - each request's certainty (exact, resolved, uncertain), and the\n"
"        uncertain requests with the reason their path may be wrong;\n"
"      - the channels that could not be read (encrypted inside the\n"
"        program, an unknown protocol, a processor that lost track);\n"
"      - the path patterns: requests whose paths have the same shape, with\n"
"        their latency percentiles and the mean time each node adds;\n"
"      - latency histograms of the most frequent request targets (ids and\n"
"        query values folded);\n"
"      - time per tier, static requests that reached a backend, and\n"
"        queries a request ran twice (or with different values, N+1);\n"
"      - a timeline of each chosen request: a lane per thread, spans as\n"
"        bars, the work done as a strip, messages as arrows;\n"
"      - the warnings bp-reconstruct reported.\n"
"\n"
"    Timelines: every request when there are at most N (--timelines);\n"
"    otherwise the requests named with -r, requests with errors (up to\n"
"    N/4), an example of each of the most common patterns (up to N/4) and\n"
"    the slowest, N in all.  Tables show at most --rows rows.  A timeline\n"
"    draws at most 2000 spans and 200 threads.\n"
"\n"
"OPTIONS\n"
"    -o, --output=FILE      write the report to FILE (required); it is\n"
"                           written to FILE.tmp-PID and renamed when done.\n"
"    -n, --timelines=N      draw at most N timelines (default 100; 0: every\n"
"                           request - large databases make large files).\n"
"    -r, --request=ID       always draw request ID (may be repeated).\n"
"        --rows=N           rows per table (default 50).\n"
"    -t, --title=TEXT       the page's title (default \"BorderPatrol report\").\n"
"        --otlp=FILE        also export OTLP/JSON traces (as bp-reconstruct\n"
"                           --otlp does).\n"
"        --perfetto=FILE    also export Chrome trace-event JSON for Perfetto.\n"
"        --dot=DIR          also export Graphviz graphs (--dot-max=N, default\n"
"                           100).\n"
"    -q, --quiet            print nothing but errors.\n"
"    -h, --help             show this help and exit.\n"
"    -V, --version          show the version and exit.\n"
"\n"
"EXIT STATUS\n"
"    0  the report was written\n"
"    1  usage error\n"
"    2  the database cannot be read (missing, not a paths database, or\n"
"       written by an older bp-reconstruct)\n"
"    3  the report or an export cannot be written\n"
"\n"
"EXAMPLES\n"
"    bp-reconstruct logs/ -o paths.db\n"
"    bp-report paths.db -o report.html\n"
"    bp-report paths.db -o slow.html -n 20 -r 4711\n"
"\n"
"SEE ALSO\n"
"    bp-reconstruct(1), docs/report.md, docs/schema.md\n";

static void usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "bp-report: %s%s%s%s\n", what, arg ? " '" : "",
		arg ? arg : "", arg ? "'" : "");
	fprintf(stderr, "Usage: bp-report [OPTION]... PATHS.db -o REPORT.html (see bp-report --help)\n");
}

static int number(const char *opt, const char *arg, long max, long *out)
{
	char *end;
	long n = strtol(arg, &end, 10);
	if (end == arg || *end || n < 0 || n > max) {
		char what[96];
		snprintf(what, sizeof what, "%s wants a number from 0 to %ld, not", opt, max);
		usage_error(what, arg);
		return -1;
	}
	*out = n;
	return 0;
}

int main(int argc, char **argv)
{
	enum { OPT_ROWS = 256, OPT_OTLP, OPT_PERFETTO, OPT_DOT, OPT_DOT_MAX };
	static const struct option longopts[] = {
		{ "output",    required_argument, NULL, 'o' },
		{ "timelines", required_argument, NULL, 'n' },
		{ "request",   required_argument, NULL, 'r' },
		{ "rows",      required_argument, NULL, OPT_ROWS },
		{ "title",     required_argument, NULL, 't' },
		{ "otlp",      required_argument, NULL, OPT_OTLP },
		{ "perfetto",  required_argument, NULL, OPT_PERFETTO },
		{ "dot",       required_argument, NULL, OPT_DOT },
		{ "dot-max",   required_argument, NULL, OPT_DOT_MAX },
		{ "quiet",     no_argument,       NULL, 'q' },
		{ "help",      no_argument,       NULL, 'h' },
		{ "version",   no_argument,       NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct report_options o = { .timelines = 100, .rows = 50 };
	const char *otlp = NULL, *perfetto = NULL, *dot = NULL;
	long dot_max = 100, v;
	int ch, rc = 0;

	o.force = calloc((size_t)argc + 1, sizeof *o.force);
	if (!o.force) {
		fprintf(stderr, "bp-report: out of memory\n");
		return 3;
	}
	/* what we write holds what the logs hold: private (docs/security.md) */
	umask(077);
	while ((ch = getopt_long(argc, argv, "o:n:r:t:qhV", longopts, NULL)) != -1) {
		switch (ch) {
		case 'o': o.output = optarg; break;
		case 'n':
			if (number("--timelines", optarg, 1000000, &o.timelines) < 0)
				goto usage;
			break;
		case 'r':
			if (number("--request", optarg, 0x7fffffffffffffffL, &v) < 0)
				goto usage;
			o.force[o.nforce++] = v;
			break;
		case OPT_ROWS:
			if (number("--rows", optarg, 1000000, &o.rows) < 0)
				goto usage;
			break;
		case 't': o.title = optarg; break;
		case OPT_OTLP: otlp = optarg; break;
		case OPT_PERFETTO: perfetto = optarg; break;
		case OPT_DOT: dot = optarg; break;
		case OPT_DOT_MAX:
			if (number("--dot-max", optarg, 100000000, &dot_max) < 0)
				goto usage;
			break;
		case 'q': o.quiet = 1; break;
		case 'h': fputs(help, stdout); free(o.force); return 0;
		case 'V': printf("bp-report %s\n", PACKAGE_VERSION); free(o.force); return 0;
		default:
			usage_error("unknown option or missing argument", NULL);
			goto usage;
		}
	}
	if (optind >= argc) {
		usage_error("no database given: name the PATHS.db bp-reconstruct wrote", NULL);
		goto usage;
	}
	if (optind + 1 < argc) {
		usage_error("one database at a time; unexpected", argv[optind + 1]);
		goto usage;
	}
	if (!o.output) {
		usage_error("no output file: add -o REPORT.html", NULL);
		goto usage;
	}
	o.db = argv[optind];

	struct export_db x;
	if (export_open(&x, o.db) < 0) {
		fprintf(stderr, "bp-report: error: %s\n", x.err);
		free(o.force);
		return 2;
	}
	struct report_summary sum;
	if (report_write(&x, &o, &sum) < 0) {
		fprintf(stderr, "bp-report: error: %s\n", x.err);
		rc = 3;
	} else if (!o.quiet) {
		char untraced[96] = "";
		if (sum.untraced)
			snprintf(untraced, sizeof untraced,
				 ", %llu process%s not traced (network I/O past libc)",
				 (unsigned long long)sum.untraced,
				 sum.untraced == 1 ? "" : "es");
		fprintf(stderr, "bp-report: %llu requests, %llu timelines, %llu patterns, %llu histograms, %llu requests with errors, %llu uncertain, %llu channels not read%s -> %s\n",
			(unsigned long long)sum.requests,
			(unsigned long long)sum.timelines,
			(unsigned long long)sum.patterns,
			(unsigned long long)sum.histograms,
			(unsigned long long)sum.errors,
			(unsigned long long)sum.uncertain,
			(unsigned long long)sum.unreadable, untraced, o.output);
	}
	if (!rc && otlp && export_otlp(&x, otlp) < 0)
		rc = 3;
	if (!rc && perfetto && export_perfetto(&x, perfetto) < 0)
		rc = 3;
	if (!rc && dot && export_dot(&x, dot, dot_max) < 0)
		rc = 3;
	if (rc == 3 && (otlp || perfetto || dot) && x.err[0])
		fprintf(stderr, "bp-report: error: %s\n", x.err);
	export_close(&x);
	free(o.force);
	return rc;
usage:
	free(o.force);
	return 1;
}
