/*
 * main.c - bp-reconstruct: rebuild per-request paths from BorderPatrol logs.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon.h"

static const char help[] =
"NAME\n"
"    bp-reconstruct - rebuild the path of every request from BorderPatrol logs\n"
"\n"
"SYNOPSIS\n"
"    bp-reconstruct [OPTION]... LOGDIR... -o PATHS.db\n"
"\n"
"DESCRIPTION\n"
"    Reads the event logs that bp-logd (and the shim's spool) wrote on every\n"
"    host, merges them in causal order - a receive is never placed before\n"
"    its send, a child before its parent's fork - and applies BorderPatrol's\n"
"    rules: the work that follows a received message belongs to that\n"
"    message's request; a message belongs to the request of the work that\n"
"    sent it; children start in their parent's request; a request from an\n"
"    untraced client starts a new request.  The result, one row per request\n"
"    with its spans, messages, fragments of work and files, is written to\n"
"    the SQLite database PATHS.db (see docs/schema.md).\n"
"\n"
"    Clocks of different hosts are related by the messages they exchange:\n"
"    each host's offset to the reference host is bounded by the messages\n"
"    in both directions and estimated in the middle; every time in the\n"
"    database is Unix-epoch nanoseconds on the reference host's clock.\n"
"\n"
"INPUT\n"
"    LOGDIR is a host directory of *.btl segments (logs/HOST/), a directory\n"
"    of host directories (logs/), a spool directory, or a segment file.\n"
"    The host of a segment is the name in its header, not the directory.\n"
"    Damaged or truncated segments are reported (file and byte offset) and\n"
"    everything readable in them is used.\n"
"\n"
"OPTIONS\n"
"    -o, --output=FILE      write the database to FILE (required).  It is\n"
"                           written to FILE.tmp-PID and renamed when\n"
"                           complete; an existing FILE is replaced.\n"
"    -r, --reference=HOST   use HOST's clock as the reference (default: the\n"
"                           host with the most events).\n"
"    -q, --quiet            print nothing but errors.\n"
"        --progress         always draw the progress bar on stderr.\n"
"        --no-progress      never draw it (default: only on a terminal).\n"
"    -w, --warnings=N       echo at most N warnings on stderr (default 20);\n"
"                           all of them are in the warnings table.\n"
"    -h, --help             show this help and exit.\n"
"    -V, --version          show the version and exit.\n"
"\n"
"OUTPUT\n"
"    Tables requests, spans, messages, attrs, fragments, files, processes,\n"
"    channels, hosts, warnings and stats, and the views latency_per_target,\n"
"    queries_per_request, repeated_queries, slowest_requests, request_paths\n"
"    and unattributed.  At the end one line on stderr sums up events read,\n"
"    requests, spans, unattributed work and warnings, preceded by the clock\n"
"    offsets when there is more than one host.\n"
"\n"
"EXIT STATUS\n"
"    0  the database was written (warnings may have been reported)\n"
"    1  usage error: bad option or missing argument\n"
"    2  the input cannot be read: no directory or no readable log segment\n"
"    3  the database cannot be written (or memory ran out)\n"
"\n"
"EXAMPLES\n"
"    bp-reconstruct logs/ -o paths.db\n"
"    bp-reconstruct /var/log/bp/web /var/log/bp/db spool/ -o paths.db\n"
"    sqlite3 paths.db 'SELECT * FROM slowest_requests LIMIT 10'\n"
"\n"
"SEE ALSO\n"
"    bp-logd(8), bp-run(1), docs/reconstruct.md, docs/schema.md\n";

static void usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "bp-reconstruct: %s%s%s%s", what, arg ? " '" : "",
		arg ? arg : "", arg ? "'" : "");
	fprintf(stderr, "\nUsage: bp-reconstruct [OPTION]... LOGDIR... -o PATHS.db (see bp-reconstruct --help)\n");
}

int main(int argc, char **argv)
{
	enum { OPT_PROGRESS = 256, OPT_NO_PROGRESS };
	static const struct option longopts[] = {
		{ "output",      required_argument, NULL, 'o' },
		{ "reference",   required_argument, NULL, 'r' },
		{ "quiet",       no_argument,       NULL, 'q' },
		{ "warnings",    required_argument, NULL, 'w' },
		{ "progress",    no_argument,       NULL, OPT_PROGRESS },
		{ "no-progress", no_argument,       NULL, OPT_NO_PROGRESS },
		{ "help",        no_argument,       NULL, 'h' },
		{ "version",     no_argument,       NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct rc_options o = { .progress = -1 };
	int ch;

	while ((ch = getopt_long(argc, argv, "o:r:qw:hV", longopts, NULL)) != -1) {
		switch (ch) {
		case 'o': o.output = optarg; break;
		case 'r': o.reference = optarg; break;
		case 'q': o.quiet = 1; break;
		case 'w': {
			char *end;
			long n = strtol(optarg, &end, 10);
			if (*end || n < 0 || n > 1000000) {
				usage_error("--warnings wants a number from 0 to 1000000, not", optarg);
				return RC_EXIT_USAGE;
			}
			o.max_warn_lines = n ? (int)n : -1;
			break;
		}
		case OPT_PROGRESS: o.progress = 1; break;
		case OPT_NO_PROGRESS: o.progress = 0; break;
		case 'h': fputs(help, stdout); return RC_EXIT_OK;
		case 'V': printf("bp-reconstruct %s\n", PACKAGE_VERSION); return RC_EXIT_OK;
		default:
			usage_error("unknown option or missing argument", NULL);
			return RC_EXIT_USAGE;
		}
	}
	if (!o.output) {
		usage_error("no output database: add -o PATHS.db", NULL);
		return RC_EXIT_USAGE;
	}
	if (optind >= argc) {
		usage_error("no LOGDIR given: name the logs/ directory bp-logd writes", NULL);
		return RC_EXIT_USAGE;
	}
	o.inputs = (const char *const *)(argv + optind);
	o.ninputs = argc - optind;
	return rc_run(&o, NULL);
}
