/*
 * main.c - bp-reconstruct: rebuild per-request paths from BorderPatrol logs.
 */
#include "config.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse.h"
#include "export.h"
#include "grpc.h"
#include "follow.h"
#include "join.h"
#include "otlp_push.h"
#include "recon.h"

static const char help[] =
"NAME\n"
"    bp-reconstruct - rebuild the path of every request from BorderPatrol logs\n"
"\n"
"SYNOPSIS\n"
"    bp-reconstruct [OPTION]... LOGDIR... -o PATHS.db\n"
"    bp-reconstruct --host-local [OPTION]... HOSTLOGDIR -o HOST.db\n"
"    bp-reconstruct --join [OPTION]... HOST.db... -o PATHS.db\n"
"    bp-reconstruct --follow [OPTION]... LOGDIR... -o PATHS.db\n"
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
"    -w, --warnings=N       echo the first N warnings one by one on stderr\n"
"                           (default none); they are always summed up by\n"
"                           kind (a count, one example, expected or costs\n"
"                           paths) and all are in the warnings table.\n"
"        --otlp=FILE        also write the paths as OpenTelemetry traces\n"
"                           (OTLP/JSON, one line per request: the collector's\n"
"                           otlpjsonfile receiver, Jaeger and Tempo read it).\n"
"        --otlp-endpoint=URL\n"
"                           also send the paths to an OpenTelemetry\n"
"                           collector or backend over OTLP/HTTP, after the\n"
"                           database is written:\n"
"                           http[s]://HOST[:PORT][/PATH] (port 80 or 443\n"
"                           when none; path /v1/traces when none, e.g.\n"
"                           http://localhost:4318).  HTTP/1.1 over TCP, or\n"
"                           TLS 1.2+ for https:// (OpenSSL; the server's\n"
"                           certificate must chain to a CA of the system\n"
"                           or of --otlp-ca and name the host).  Protobuf\n"
"                           (application/x-protobuf) and gzip by default;\n"
"                           the same traces, ids and attributes as --otlp.\n"
"                           A request that gets 429, 502, 503 or 504 or\n"
"                           cannot connect is retried after 0.5 s, 1 s,\n"
"                           2 s ... (at most 30 s, less up to 20%; the\n"
"                           server's Retry-After when it sends one); a\n"
"                           request refused with another status is\n"
"                           dropped; one still failing after its retries\n"
"                           ends the push; spans a 2xx answer rejects\n"
"                           (OTLP partial success) count as dropped.  Up\n"
"                           to 8 requests wait in a queue while one is\n"
"                           sent.  One line sums up spans sent, requests\n"
"                           (batches), retries and spans dropped; when\n"
"                           any span was not delivered the exit status\n"
"                           is 4.\n"
"        --otlp-json        send OTLP/JSON (application/json) instead of\n"
"                           protobuf.\n"
"        --otlp-header='NAME: VALUE'\n"
"                           add a header to every request, e.g.\n"
"                           'Authorization: Bearer TOKEN' (repeatable).\n"
"        --otlp-ca=FILE     trust the CA certificates in FILE (PEM) for an\n"
"                           https:// endpoint instead of the system's.\n"
"        --otlp-compression=gzip|none\n"
"                           Content-Encoding of the requests (default gzip).\n"
"        --otlp-batch=N     at most N spans per request (default 512).\n"
"        --otlp-timeout=SECONDS\n"
"                           time bound of the whole push, retries\n"
"                           included (default 60); what is not delivered\n"
"                           by then is dropped.  One attempt waits at most\n"
"                           30 s for its answer.\n"
"        --otlp-retries=N   retries of one request (default 5).\n"
"        --clickhouse=URL   also write every table of the database into\n"
"                           ClickHouse over its HTTP interface, after the\n"
"                           database is written (docs/clickhouse.md):\n"
"                           http[s]://[USER[:PASSWORD]@]HOST[:PORT]/[?database=DB]\n"
"                           (database default when none; other parameters,\n"
"                           e.g. user= and password=, are passed on; the\n"
"                           password is never printed; the environment's\n"
"                           BP_CLICKHOUSE_USER and BP_CLICKHOUSE_PASSWORD\n"
"                           are sent as X-ClickHouse-User and\n"
"                           X-ClickHouse-Key).  The database and\n"
"                           ReplacingMergeTree tables of the same names and\n"
"                           columns are created when missing, with two more\n"
"                           columns, run and row_id, the key: several runs\n"
"                           share the tables, and a row sent twice (a\n"
"                           retry, the same logs reconstructed again) is\n"
"                           one row to queries with FINAL.  Batched\n"
"                           INSERTs in TabSeparated, gzip; retried like the\n"
"                           OTLP push (503 and the others, connection\n"
"                           errors); any other answer ends the sink with\n"
"                           ClickHouse's message and exit status 4.\n"
"        --clickhouse-run=NAME\n"
"                           the run id of the rows (default: 16 hex digits\n"
"                           hashed from the hosts and requests, the same\n"
"                           for the same logs).\n"
"        --clickhouse-header='NAME: VALUE'\n"
"                           add a header to every request (repeatable).\n"
"        --clickhouse-ca=FILE\n"
"                           trust the CA certificates in FILE (PEM) for an\n"
"                           https:// URL instead of the system's.\n"
"        --clickhouse-compression=gzip|none\n"
"                           Content-Encoding of the requests (default gzip).\n"
"        --clickhouse-batch=N\n"
"                           at most N rows per INSERT (default 100000).\n"
"        --clickhouse-timeout=SECONDS\n"
"                           time bound of the whole sink (default 300).\n"
"        --clickhouse-retries=N\n"
"                           retries of one request (default 5).\n"
"        --perfetto=FILE    also write a Chrome trace-event JSON file for\n"
"                           ui.perfetto.dev: a track per thread, spans,\n"
"                           fragments of work and messages as flow arrows.\n"
"        --dot=DIR          also write Graphviz graphs into DIR:\n"
"                           request-ID.dot (the requests with errors, then\n"
"                           the slowest) and pattern-ID.dot (the most\n"
"                           common path patterns); dot -Tsvg renders them.\n"
"        --dot-max=N        at most N request graphs and N pattern graphs\n"
"                           (default 100; 0: all).\n"
"        --grpc-unary=PATTERN\n"
"                           name the gRPC methods whose path matches\n"
"                           PATTERN ('/package.Service/Method'; shell\n"
"                           wildcards: '/package.Service/*') as unary:\n"
"                           one request message, one reply (repeatable).\n"
"                           A unary handler cannot start before its\n"
"                           request message came, so a call of such a\n"
"                           method whose body the server has not read yet\n"
"                           is no candidate owner of what its process\n"
"                           sends (a pool thread's SQL): more handler calls\n"
"                           are decided by content (handoff:content).\n"
"                           Not applied in a program that sends HTTP/2\n"
"                           requests (a relay such as nginx's grpc_pass\n"
"                           works for a call before its body).  The\n"
"                           declaration is trusted: a method named unary\n"
"                           that in fact streams its request, or whose\n"
"                           server sends work for a call before its message\n"
"                           came (an interceptor run at the call's headers),\n"
"                           can have that work given to another call,\n"
"                           labelled resolved yet wrong.  Methods not named\n"
"                           are treated as possibly streaming (the sound\n"
"                           default).  docs/reconstruct.md, \"Unary gRPC\n"
"                           methods\".\n"
"        --grpc-proto=FILE  name as unary every rpc of the services in the\n"
"                           .proto FILE neither of whose sides is 'stream'\n"
"                           ('/package.Service/Method'; repeatable); the\n"
"                           same trust as --grpc-unary.  A file this reader\n"
"                           cannot read (no rpc in a service, an rpc of\n"
"                           another form) is a usage error.\n"
"        --host-local       the logs are one host's: reconstruct them alone\n"
"                           (the other hosts are like untraced peers) and\n"
"                           add the table span_links, a key per span that\n"
"                           crossed to another host over TCP, which the\n"
"                           other end computes alone (the connection's\n"
"                           addresses, client first, and the request's\n"
"                           byte offset).  Each host can so reconstruct\n"
"                           its own logs, in parallel; exit status 1 when\n"
"                           the logs hold more than one host.\n"
"        --join             the arguments are databases written with\n"
"                           --host-local, one per host: join them into\n"
"                           one (-o).  A server span that started a\n"
"                           request (its client was on another host) is\n"
"                           put under the client span with the same key\n"
"                           and its request merged into the client's; the\n"
"                           clocks are related by the linked spans (the\n"
"                           first database's host is the reference); a\n"
"                           key that more than one connection used, whose\n"
"                           ends cannot be paired one to one in time, is\n"
"                           left unlinked and its spans marked uncertain\n"
"                           ('join:ambiguous').  Certainty, patterns and\n"
"                           views are made again; the exports work on\n"
"                           the result.  docs/reconstruct.md, \"Hosts\n"
"                           reconstructed apart\".\n"
"        --detail=LEVEL     which tables are written: full (the default)\n"
"                           writes every table; spans leaves the per-event\n"
"                           tables messages and fragments empty (created,\n"
"                           no rows) and writes everything else as full\n"
"                           does: requests, spans, attrs, files,\n"
"                           processes, channels, the patterns and the\n"
"                           views (unattributed then counts no messages\n"
"                           or fragments; stats.detail_spans_only is 1).\n"
"                           About a third fewer rows: about 30% less CPU\n"
"                           and a file 37% smaller on bp-genbig's logs.\n"
"                           Not with --host-local, --join, --otlp,\n"
"                           --otlp-endpoint or --perfetto, which read\n"
"                           messages or fragments.\n"
"        --follow           live: read the logs while bp-logd writes them\n"
"                           and add each request to PATHS.db once it is\n"
"                           final - complete (its root answered), every\n"
"                           span ended, and ended more than the grace\n"
"                           period ago - until SIGINT or SIGTERM; then\n"
"                           one last pass writes every request, also the\n"
"                           incomplete ones, as the offline run does, and\n"
"                           it exits 0.  A pass runs when the logs\n"
"                           changed (inotify), at most once an interval.\n"
"                           PATHS.db is in WAL mode and never replaced:\n"
"                           sqlite3 and bp-report may read it at any time.\n"
"                           A request is written once; if a later pass\n"
"                           finds it changed (a late span), its rows are\n"
"                           replaced under the same request_id (counted in\n"
"                           follow_requests.revised).  Run again on the\n"
"                           same PATHS.db after a stop or a crash, it goes\n"
"                           on: nothing is written twice or lost.  Most\n"
"                           passes are made by a process that keeps the\n"
"                           merge between them and reads on from where it\n"
"                           stopped (docs/reconstruct.md, \"The kept\n"
"                           merge\"); the first, the last, the full ones,\n"
"                           and any it cannot make (the logs changed\n"
"                           otherwise than by growing) read the logs from\n"
"                           their start.  BP_FOLLOW_KEEPER=0 makes every\n"
"                           pass so; =check makes each kept pass at once\n"
"                           too and stops at a difference.  With --otlp-endpoint and\n"
"                           --clickhouse, each request is sent once a\n"
"                           later pass found it unchanged, and the tables\n"
"                           of the whole run go to ClickHouse at the end\n"
"                           (exit status 4 if some were not sent); a\n"
"                           request revised or withdrawn later is deleted\n"
"                           from ClickHouse and sent again if revised (an\n"
"                           OTLP receiver keeps what it got).  Not\n"
"                           with --host-local, --join or the file exports\n"
"                           (bp-report makes those from PATHS.db).\n"
"        --follow-interval=SECONDS\n"
"                           the time between passes (default 0.5).\n"
"        --follow-grace=SECONDS\n"
"                           how long a final request waits before it is\n"
"                           written (default 0.5): for the records of\n"
"                           other processes that bp-logd has not yet\n"
"                           drained (it drains every 50 ms).\n"
"        --follow-hold=SECONDS\n"
"                           how long a pass expects records that may be on\n"
"                           their way (default 10).  A request or reply\n"
"                           from a peer no log has yet is uncertain\n"
"                           (certainty_reason peer-not-logged) when traced\n"
"                           programs accepted on (or mostly connected to)\n"
"                           its address, or a connection's address was\n"
"                           first used less than SECONDS ago; once such a\n"
"                           peer is SECONDS overdue it counts as untraced,\n"
"                           as offline.  --otlp-endpoint and --clickhouse\n"
"                           get a request uncertain for peer-not-logged\n"
"                           only once the label is gone, and one for\n"
"                           unlogged-send (a traced sender's records not in\n"
"                           the logs) once it ended SECONDS ago; the last\n"
"                           pass sends all.  PATHS.db has them at once,\n"
"                           labelled.\n"
"        --follow-window=SECONDS\n"
"                           the requests most passes look at: those that\n"
"                           began in the last SECONDS of the logs (default\n"
"                           10), and every request not yet written.  A\n"
"                           request that began before them is revised or\n"
"                           withdrawn by the next full pass (the first, the\n"
"                           last, and one every --follow-full seconds or\n"
"                           more), as is one still open 30 times SECONDS\n"
"                           after it began (stats follow_deferred).\n"
"        --follow-full=SECONDS\n"
"                           the least time between two full passes\n"
"                           (default 10).  A full pass looks at every\n"
"                           request and writes the patterns; but for the\n"
"                           first and the last, it reconstructs the logs\n"
"                           in a child process while window passes go on,\n"
"                           and writes only what no window pass wrote\n"
"                           meanwhile.\n"
"        --follow-full-share=N\n"
"                           a full pass waits at least N times as long as\n"
"                           the last one took (default 20: a full pass\n"
"                           grows with the logs; 0: no such wait).\n"
"    -h, --help             show this help and exit.\n"
"    -V, --version          show the version and exit.\n"
"\n"
"OUTPUT\n"
"    Tables requests, spans, messages, attrs, fragments, files, processes,\n"
"    channels, untraced_programs, hosts, warnings, stats and\n"
"    span_candidates; every request and span labelled exact, resolved\n"
"    or uncertain (certainty,\n"
"    certainty_reason); the path patterns (patterns,\n"
"    pattern_nodes, span_patterns, requests.pattern_id); and views for the\n"
"    common questions: latency_per_target, request_latency,\n"
"    latency_per_shape, span_self_time, self_time_per_process,\n"
"    self_time_per_tier, queries_per_request, repeated_queries,\n"
"    repeated_query_shapes, static_requests, static_backend_work,\n"
"    slowest_requests, errors, request_paths, unattributed and\n"
"    uncertain_requests.  At the end one line on stderr sums up events\n"
"    read, requests (exact, resolved, uncertain), spans, unattributed\n"
"    work and warnings, preceded by the clock offsets when there is more\n"
"    than one host, and followed by a line per export.  bp-report(1) makes\n"
"    an HTML report of the database.\n"
"\n"
"EXIT STATUS\n"
"    0  the database was written (warnings may have been reported)\n"
"    1  usage error: bad option or missing argument\n"
"    2  the input cannot be read: no directory or no readable log segment\n"
"    3  the database or an export cannot be written (or memory ran out)\n"
"    4  the database and the exports were written, but the OTLP push did\n"
"       not deliver every span (refused, out of retries or out of time),\n"
"       or the ClickHouse sink did not finish\n"
"\n"
"EXAMPLES\n"
"    bp-reconstruct logs/ -o paths.db\n"
"    bp-reconstruct /var/log/bp/web /var/log/bp/db spool/ -o paths.db\n"
"    sqlite3 paths.db 'SELECT * FROM slowest_requests LIMIT 10'\n"
"    bp-reconstruct logs/ -o paths.db --otlp traces.json --dot graphs/\n"
"    bp-reconstruct --host-local logs/web -o web.db    (on each host)\n"
"    bp-reconstruct --join web.db app.db db.db -o paths.db\n"
"    bp-reconstruct --follow logs/ -o live.db    (until Ctrl-C)\n"
"    bp-reconstruct logs/ -o paths.db --otlp-endpoint http://localhost:4318 \\\n"
"        --otlp-header 'Authorization: Bearer TOKEN'\n"
"    bp-reconstruct logs/ -o paths.db \\\n"
"        --clickhouse 'http://127.0.0.1:8123/?database=bp'\n"
"\n"
"SEE ALSO\n"
"    bp-logd(8), bp-run(1), bp-report(1), docs/reconstruct.md,\n"
"    docs/schema.md, docs/report.md, docs/clickhouse.md\n";

static void usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "bp-reconstruct: %s%s%s%s", what, arg ? " '" : "",
		arg ? arg : "", arg ? "'" : "");
	fprintf(stderr, "\nUsage: bp-reconstruct [OPTION]... LOGDIR... -o PATHS.db (see bp-reconstruct --help)\n");
}

/* ARG as a whole number from LO to HI into *N; -1 after a usage error
 * (WHAT, then ARG). */
static int opt_num(const char *arg, long lo, long hi, const char *what, long *n)
{
	char *end;
	*n = strtol(arg, &end, 10);
	if (*end || end == arg || *n < lo || *n > hi) {
		usage_error(what, arg);
		return -1;
	}
	return 0;
}

/* ARG as seconds (more than 0, at most a day) for OPTION into *T. */
static int opt_secs(const char *arg, const char *option, double *t)
{
	char *end, what[128];
	double v = strtod(arg, &end);
	if (*end || end == arg || !(v > 0 && v <= 86400)) {
		snprintf(what, sizeof what, "%s wants seconds (more than 0, at most 86400), not", option);
		usage_error(what, arg);
		return -1;
	}
	*t = v;
	return 0;
}

/* ARG gzip or none for OPTION into *GZIP. */
static int opt_gzip(const char *arg, const char *option, int *gzip)
{
	char what[128];
	if (strcmp(arg, "gzip") && strcmp(arg, "none")) {
		snprintf(what, sizeof what, "%s wants gzip or none, not", option);
		usage_error(what, arg);
		return -1;
	}
	*gzip = !strcmp(arg, "gzip");
	return 0;
}

/* Header ARG of OPTION, checked by CHECK, appended to LIST (64 at most,
 * *N of them). */
static int opt_header(const char *arg, int (*check)(const char *, char *, size_t),
		      const char *option, const char **list, size_t *n)
{
	char err[512];
	if (check(arg, err, sizeof err) < 0) {
		usage_error(err, NULL);
		return -1;
	}
	if (*n == 64) {
		snprintf(err, sizeof err, "too many %s options (at most 64)", option);
		usage_error(err, NULL);
		return -1;
	}
	list[(*n)++] = arg;
	return 0;
}

/* The exports asked for, run on the finished database. */
struct exports {
	const char *otlp, *perfetto, *dot;
	long        dot_max;
	struct otlp_push_opts push;         /* push.url NULL: no push */
	const char *headers[64];
	struct ch_opts ch;                  /* ch.url NULL: no ClickHouse */
	const char *ch_headers[64];
};

static int run_clickhouse(const struct exports *e, struct export_db *x, int quiet)
{
	struct ch_stats st;
	int r = export_clickhouse(x, &e->ch, &st);
	if (r < 0)
		fprintf(stderr, "bp-reconstruct: error: %s\n", x->err);
	if (!quiet || r < 0)
		fprintf(stderr, "bp-reconstruct: ClickHouse: %s%llu rows of %llu tables in %llu inserts, %llu retries -> %s database %s run %s (%.1f s, %llu KB)\n",
			r < 0 ? "stopped after " : "",
			(unsigned long long)st.rows,
			(unsigned long long)st.tables,
			(unsigned long long)st.inserts,
			(unsigned long long)st.retries, st.shown, st.database,
			st.run, st.secs,
			(unsigned long long)(st.bytes + 1023) / 1024);
	return r < 0 ? RC_EXIT_PUSH : RC_EXIT_OK;
}

static int run_push(const struct exports *e, struct export_db *x, int quiet)
{
	struct otlp_push_stats st;
	uint64_t total;
	int r = export_otlp_push(x, &e->push, &st, &total);
	if (r < 0)
		fprintf(stderr, "bp-reconstruct: error: %s\n", x->err);
	if (!quiet || r < 0)
		fprintf(stderr, "bp-reconstruct: OTLP push: %llu spans sent in %llu batches, %llu retries, %llu dropped -> %s (%s%s, %.1f s, %llu KB)\n",
			(unsigned long long)st.spans,
			(unsigned long long)st.batches,
			(unsigned long long)st.retries,
			(unsigned long long)(total - st.spans), e->push.url,
			e->push.json ? "JSON" : "protobuf",
			e->push.gzip ? ", gzip" : "", st.secs,
			(unsigned long long)(st.bytes + 1023) / 1024);
	return r < 0 ? RC_EXIT_PUSH : RC_EXIT_OK;
}

static int run_exports(const struct exports *e, const char *db, int quiet)
{
	struct export_db x;

	if (!e->otlp && !e->perfetto && !e->dot && !e->push.url && !e->ch.url)
		return RC_EXIT_OK;
	if (export_open(&x, db) < 0) {
		fprintf(stderr, "bp-reconstruct: error: %s\n", x.err);
		return RC_EXIT_OUTPUT;
	}
	if (e->otlp) {
		if (export_otlp(&x, e->otlp) < 0)
			goto fail;
		if (!quiet)
			fprintf(stderr, "bp-reconstruct: OTLP: %llu traces, %llu spans -> %s\n",
				(unsigned long long)x.n_traces,
				(unsigned long long)x.n_spans, e->otlp);
	}
	if (e->perfetto) {
		if (export_perfetto(&x, e->perfetto) < 0)
			goto fail;
		if (!quiet)
			fprintf(stderr, "bp-reconstruct: Perfetto: %llu spans, %llu fragments and messages -> %s\n",
				(unsigned long long)x.n_spans,
				(unsigned long long)x.n_events, e->perfetto);
	}
	if (e->dot) {
		if (export_dot(&x, e->dot, e->dot_max) < 0)
			goto fail;
		if (!quiet)
			fprintf(stderr, "bp-reconstruct: DOT: %llu request graphs, %llu pattern graphs -> %s/\n",
				(unsigned long long)x.n_traces,
				(unsigned long long)(x.n_files - x.n_traces), e->dot);
	}
	/* last: the files are written whatever happens to the network */
	int r = e->push.url ? run_push(e, &x, quiet) : RC_EXIT_OK;
	if (e->ch.url && run_clickhouse(e, &x, quiet) != RC_EXIT_OK)
		r = RC_EXIT_PUSH;
	export_close(&x);
	return r;
fail:
	fprintf(stderr, "bp-reconstruct: error: %s\n", x.err);
	export_close(&x);
	return RC_EXIT_OUTPUT;
}

int main(int argc, char **argv)
{
	enum { OPT_PROGRESS = 256, OPT_NO_PROGRESS, OPT_OTLP, OPT_PERFETTO,
	       OPT_DOT, OPT_DOT_MAX, OPT_OTLP_ENDPOINT, OPT_OTLP_JSON,
	       OPT_OTLP_HEADER, OPT_OTLP_COMPRESSION, OPT_OTLP_BATCH,
	       OPT_OTLP_TIMEOUT, OPT_OTLP_RETRIES, OPT_OTLP_CA, OPT_CH,
	       OPT_CH_RUN, OPT_CH_HEADER, OPT_CH_CA, OPT_CH_COMPRESSION,
	       OPT_CH_BATCH, OPT_CH_TIMEOUT, OPT_CH_RETRIES,
	       OPT_HOST_LOCAL, OPT_JOIN, OPT_GRPC_UNARY, OPT_GRPC_PROTO,
	       OPT_DETAIL, OPT_FOLLOW, OPT_FOLLOW_INTERVAL, OPT_FOLLOW_GRACE,
	       OPT_FOLLOW_HOLD,
	       OPT_FOLLOW_WINDOW, OPT_FOLLOW_FULL, OPT_FOLLOW_FULL_SHARE };
	static const struct option longopts[] = {
		{ "output",      required_argument, NULL, 'o' },
		{ "reference",   required_argument, NULL, 'r' },
		{ "quiet",       no_argument,       NULL, 'q' },
		{ "warnings",    required_argument, NULL, 'w' },
		{ "progress",    no_argument,       NULL, OPT_PROGRESS },
		{ "no-progress", no_argument,       NULL, OPT_NO_PROGRESS },
		{ "otlp",        required_argument, NULL, OPT_OTLP },
		{ "perfetto",    required_argument, NULL, OPT_PERFETTO },
		{ "dot",         required_argument, NULL, OPT_DOT },
		{ "dot-max",     required_argument, NULL, OPT_DOT_MAX },
		{ "otlp-endpoint", required_argument, NULL, OPT_OTLP_ENDPOINT },
		{ "otlp-json",   no_argument,       NULL, OPT_OTLP_JSON },
		{ "otlp-header", required_argument, NULL, OPT_OTLP_HEADER },
		{ "otlp-compression", required_argument, NULL, OPT_OTLP_COMPRESSION },
		{ "otlp-batch",  required_argument, NULL, OPT_OTLP_BATCH },
		{ "otlp-timeout", required_argument, NULL, OPT_OTLP_TIMEOUT },
		{ "otlp-retries", required_argument, NULL, OPT_OTLP_RETRIES },
		{ "otlp-ca",     required_argument, NULL, OPT_OTLP_CA },
		{ "clickhouse",  required_argument, NULL, OPT_CH },
		{ "clickhouse-run", required_argument, NULL, OPT_CH_RUN },
		{ "clickhouse-header", required_argument, NULL, OPT_CH_HEADER },
		{ "clickhouse-ca", required_argument, NULL, OPT_CH_CA },
		{ "clickhouse-compression", required_argument, NULL, OPT_CH_COMPRESSION },
		{ "clickhouse-batch", required_argument, NULL, OPT_CH_BATCH },
		{ "clickhouse-timeout", required_argument, NULL, OPT_CH_TIMEOUT },
		{ "clickhouse-retries", required_argument, NULL, OPT_CH_RETRIES },
		{ "grpc-unary",  required_argument, NULL, OPT_GRPC_UNARY },
		{ "grpc-proto",  required_argument, NULL, OPT_GRPC_PROTO },
		{ "host-local",  no_argument,       NULL, OPT_HOST_LOCAL },
		{ "join",        no_argument,       NULL, OPT_JOIN },
		{ "detail",      required_argument, NULL, OPT_DETAIL },
		{ "follow",      no_argument,       NULL, OPT_FOLLOW },
		{ "follow-interval", required_argument, NULL, OPT_FOLLOW_INTERVAL },
		{ "follow-grace", required_argument, NULL, OPT_FOLLOW_GRACE },
		{ "follow-hold", required_argument, NULL, OPT_FOLLOW_HOLD },
		{ "follow-window", required_argument, NULL, OPT_FOLLOW_WINDOW },
		{ "follow-full", required_argument, NULL, OPT_FOLLOW_FULL },
		{ "follow-full-share", required_argument, NULL, OPT_FOLLOW_FULL_SHARE },
		{ "help",        no_argument,       NULL, 'h' },
		{ "version",     no_argument,       NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct rc_options o = { .progress = -1 };
	struct exports ex = { .dot_max = 100 };
	char err[512];
	int ch, push_opt = 0, ch_opt = 0, host_local = 0, join = 0;
	int follow = 0, follow_opt = 0;
	struct rc_follow_opts fo = { .interval = 0.5, .grace = 0.5, .hold = 10,
				      .window = 10, .full = 10,
				      .full_share = 20 };
	char **unary = NULL;                /* --grpc-unary, --grpc-proto */
	int nunary = 0, grpc_opt = 0, nall;
	long n;

	ex.push.gzip = 1;
	ex.push.batch = OTLP_PUSH_BATCH;
	ex.push.timeout = OTLP_PUSH_TIMEOUT;
	ex.push.retries = OTLP_PUSH_RETRIES;
	ex.push.headers = ex.headers;
	ex.ch.gzip = 1;
	ex.ch.batch = CH_BATCH;
	ex.ch.timeout = CH_TIMEOUT;
	ex.ch.retries = CH_RETRIES;
	ex.ch.headers = ex.ch_headers;

	/* what we write holds what the logs hold: private (docs/security.md) */
	umask(077);
	while ((ch = getopt_long(argc, argv, "o:r:qw:hV", longopts, NULL)) != -1) {
		switch (ch) {
		case 'o': o.output = optarg; break;
		case 'r': o.reference = optarg; break;
		case 'q': o.quiet = 1; break;
		case 'w':
			if (opt_num(optarg, 0, 1000000, "--warnings wants a number from 0 to 1000000, not", &n) < 0)
				return RC_EXIT_USAGE;
			o.max_warn_lines = n ? (int)n : -1;
			break;
		case OPT_PROGRESS: o.progress = 1; break;
		case OPT_NO_PROGRESS: o.progress = 0; break;
		case OPT_OTLP: ex.otlp = optarg; break;
		case OPT_PERFETTO: ex.perfetto = optarg; break;
		case OPT_DOT: ex.dot = optarg; break;
		case OPT_DOT_MAX:
			if (opt_num(optarg, 0, LONG_MAX, "--dot-max wants a number (0: all), not", &n) < 0)
				return RC_EXIT_USAGE;
			ex.dot_max = n;
			break;
		case OPT_OTLP_ENDPOINT:
			if (otlp_push_check_url(optarg, err, sizeof err) < 0) {
				usage_error(err, NULL);
				return RC_EXIT_USAGE;
			}
			ex.push.url = optarg;
			break;
		case OPT_OTLP_JSON: ex.push.json = 1; push_opt = 1; break;
		case OPT_OTLP_CA: ex.push.ca = optarg; push_opt = 1; break;
		case OPT_OTLP_HEADER:
			push_opt = 1;
			if (opt_header(optarg, otlp_push_check_header, "--otlp-header",
				       ex.headers, &ex.push.nheaders) < 0)
				return RC_EXIT_USAGE;
			break;
		case OPT_OTLP_COMPRESSION:
			push_opt = 1;
			if (opt_gzip(optarg, "--otlp-compression", &ex.push.gzip) < 0)
				return RC_EXIT_USAGE;
			break;
		case OPT_OTLP_BATCH:
			push_opt = 1;
			if (opt_num(optarg, 1, 100000, "--otlp-batch wants a number of spans from 1 to 100000, not", &n) < 0)
				return RC_EXIT_USAGE;
			ex.push.batch = (size_t)n;
			break;
		case OPT_OTLP_RETRIES:
			push_opt = 1;
			if (opt_num(optarg, 0, 100, "--otlp-retries wants a number from 0 to 100, not", &n) < 0)
				return RC_EXIT_USAGE;
			ex.push.retries = (int)n;
			break;
		case OPT_OTLP_TIMEOUT:
			push_opt = 1;
			if (opt_secs(optarg, "--otlp-timeout", &ex.push.timeout) < 0)
				return RC_EXIT_USAGE;
			break;
		case OPT_CH:
			if (ch_check_url(optarg, err, sizeof err) < 0) {
				usage_error(err, NULL);
				return RC_EXIT_USAGE;
			}
			ex.ch.url = optarg;
			break;
		case OPT_CH_RUN:
			ch_opt = 1;
			if (ch_check_run(optarg, err, sizeof err) < 0) {
				usage_error(err, NULL);
				return RC_EXIT_USAGE;
			}
			ex.ch.run = optarg;
			break;
		case OPT_CH_CA: ex.ch.ca = optarg; ch_opt = 1; break;
		case OPT_CH_HEADER:
			ch_opt = 1;
			if (opt_header(optarg, ch_check_header, "--clickhouse-header",
				       ex.ch_headers, &ex.ch.nheaders) < 0)
				return RC_EXIT_USAGE;
			break;
		case OPT_CH_COMPRESSION:
			ch_opt = 1;
			if (opt_gzip(optarg, "--clickhouse-compression", &ex.ch.gzip) < 0)
				return RC_EXIT_USAGE;
			break;
		case OPT_CH_BATCH:
			ch_opt = 1;
			if (opt_num(optarg, 1, 10000000, "--clickhouse-batch wants a number of rows from 1 to 10000000, not", &n) < 0)
				return RC_EXIT_USAGE;
			ex.ch.batch = (size_t)n;
			break;
		case OPT_CH_RETRIES:
			ch_opt = 1;
			if (opt_num(optarg, 0, 100, "--clickhouse-retries wants a number from 0 to 100, not", &n) < 0)
				return RC_EXIT_USAGE;
			ex.ch.retries = (int)n;
			break;
		case OPT_CH_TIMEOUT:
			ch_opt = 1;
			if (opt_secs(optarg, "--clickhouse-timeout", &ex.ch.timeout) < 0)
				return RC_EXIT_USAGE;
			break;
		case OPT_GRPC_UNARY: {
			grpc_opt = 1;
			if (rc_grpc_pattern_check(optarg, err, sizeof err) < 0) {
				usage_error(err, NULL);
				return RC_EXIT_USAGE;
			}
			char **l = realloc(unary, (size_t)(nunary + 1) * sizeof *l);
			if (!l || !(l[nunary] = strdup(optarg))) {
				fprintf(stderr, "bp-reconstruct: out of memory\n");
				return RC_EXIT_OUTPUT;
			}
			unary = l;
			nunary++;
			break;
		}
		case OPT_GRPC_PROTO: {
			char what[600];
			grpc_opt = 1;
			if (rc_grpc_proto_read(optarg, &unary, &nunary, &nall,
					       err, sizeof err) < 0) {
				snprintf(what, sizeof what, "--grpc-proto: %s", err);
				usage_error(what, NULL);
				return RC_EXIT_USAGE;
			}
			break;
		}
		case OPT_HOST_LOCAL: host_local = 1; break;
		case OPT_JOIN: join = 1; break;
		case OPT_FOLLOW: follow = 1; break;
		case OPT_FOLLOW_INTERVAL:
			follow_opt = 1;
			if (opt_secs(optarg, "--follow-interval", &fo.interval) < 0)
				return RC_EXIT_USAGE;
			break;
		case OPT_FOLLOW_GRACE:
			follow_opt = 1;
			if (opt_secs(optarg, "--follow-grace", &fo.grace) < 0)
				return RC_EXIT_USAGE;
			break;
		case OPT_FOLLOW_HOLD:
			follow_opt = 1;
			if (opt_secs(optarg, "--follow-hold", &fo.hold) < 0)
				return RC_EXIT_USAGE;
			break;
		case OPT_FOLLOW_WINDOW:
			follow_opt = 1;
			if (opt_secs(optarg, "--follow-window", &fo.window) < 0)
				return RC_EXIT_USAGE;
			break;
		case OPT_FOLLOW_FULL:
			follow_opt = 1;
			if (opt_secs(optarg, "--follow-full", &fo.full) < 0)
				return RC_EXIT_USAGE;
			break;
		case OPT_FOLLOW_FULL_SHARE: {
			char *end;
			follow_opt = 1;
			fo.full_share = strtod(optarg, &end);
			if (*end || end == optarg || !(fo.full_share >= 0 &&
						       fo.full_share <= 1000)) {
				usage_error("--follow-full-share wants a number from 0 to 1000, not", optarg);
				return RC_EXIT_USAGE;
			}
			break;
		}
		case OPT_DETAIL:
			if (!strcmp(optarg, "full"))
				o.detail = RC_DETAIL_FULL;
			else if (!strcmp(optarg, "spans"))
				o.detail = RC_DETAIL_SPANS;
			else {
				usage_error("--detail is full or spans, not", optarg);
				return RC_EXIT_USAGE;
			}
			break;
		case 'h': fputs(help, stdout); return RC_EXIT_OK;
		case 'V': printf("bp-reconstruct %s\n", PACKAGE_VERSION); return RC_EXIT_OK;
		default:
			usage_error("unknown option or missing argument", NULL);
			return RC_EXIT_USAGE;
		}
	}
	if (push_opt && !ex.push.url) {
		usage_error("--otlp-json, --otlp-header, --otlp-ca, --otlp-compression, --otlp-batch, --otlp-timeout and --otlp-retries go with --otlp-endpoint URL", NULL);
		return RC_EXIT_USAGE;
	}
	if (ch_opt && !ex.ch.url) {
		usage_error("--clickhouse-run, --clickhouse-header, --clickhouse-ca, --clickhouse-compression, --clickhouse-batch, --clickhouse-timeout and --clickhouse-retries go with --clickhouse URL", NULL);
		return RC_EXIT_USAGE;
	}
	if (!o.output) {
		usage_error("no output database: add -o PATHS.db", NULL);
		return RC_EXIT_USAGE;
	}
	if (follow_opt && !follow) {
		usage_error("--follow-interval, --follow-grace, --follow-hold, --follow-window, --follow-full and --follow-full-share go with --follow", NULL);
		return RC_EXIT_USAGE;
	}
	if (follow && (host_local || join || ex.otlp || ex.perfetto || ex.dot)) {
		usage_error("--follow writes PATHS.db, --otlp-endpoint and --clickhouse only: not with --host-local, --join, --otlp, --perfetto or --dot (bp-report PATHS.db --otlp FILE --perfetto FILE --dot DIR exports once --follow has stopped)", NULL);
		return RC_EXIT_USAGE;
	}
	if (host_local && join) {
		usage_error("--host-local and --join go apart: reconstruct each host with --host-local, then --join the databases", NULL);
		return RC_EXIT_USAGE;
	}
	if (o.detail == RC_DETAIL_SPANS &&
	    (host_local || join || ex.otlp || ex.push.url || ex.perfetto)) {
		usage_error("--detail=spans leaves the messages and fragments tables empty, which --host-local, --join, --otlp, --otlp-endpoint and --perfetto read: use --detail=full (the default) with them", NULL);
		return RC_EXIT_USAGE;
	}
	if (optind >= argc) {
		usage_error(join ? "no database given: name the databases written with --host-local" :
			    "no LOGDIR given: name the logs/ directory bp-logd writes", NULL);
		return RC_EXIT_USAGE;
	}
	if (join && grpc_opt) {
		usage_error("--grpc-unary and --grpc-proto go with the reconstruction (with --host-local on each host), not --join", NULL);
		return RC_EXIT_USAGE;
	}
	if (join) {
		struct rc_join_opts jo = {
			.inputs = (const char *const *)(argv + optind),
			.ninputs = argc - optind, .output = o.output,
			.quiet = o.quiet,
		};
		int r = rc_join(&jo);
		return r != RC_EXIT_OK ? r : run_exports(&ex, o.output, o.quiet);
	}
	o.inputs = (const char *const *)(argv + optind);
	o.ninputs = argc - optind;
	o.grpc_unary = (const char *const *)unary;
	o.ngrpc_unary = nunary;
	/* One thread at a time uses SQLite here (the queue's thread during
	 * the merge and the replay, the main thread before and after them:
	 * db_rows.c, handed over under a mutex): no mutexes, no memory
	 * accounting (both cost on every row). */
	sqlite3_config(SQLITE_CONFIG_SINGLETHREAD);
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	if (follow) {
		fo.rc = &o;
		fo.push = ex.push.url ? &ex.push : NULL;
		fo.ch = ex.ch.url ? &ex.ch : NULL;
		return rc_follow(&fo);
	}
	/* a check of the merge's pause and resumption (steps.c;
	 * docs/reconstruct.md, "The merge in steps") */
	const char *steps = getenv("BP_RECONSTRUCT_STEPS");
	if (steps && *steps)
		o.steps = atoi(steps);
	/* ... and the merge's hold in it, in ns (rc_options.hold_ns) */
	const char *hold = getenv("BP_RECONSTRUCT_HOLD_NS");
	if (hold && *hold)
		o.hold_ns = strtoll(hold, NULL, 10);
	int r = rc_run(&o, NULL);
	if (r != RC_EXIT_OK)
		return r;
	if (host_local && (r = rc_links_write(o.output, err, sizeof err)) != RC_EXIT_OK) {
		fprintf(stderr, "bp-reconstruct: %s\n", err);
		return r;
	}
	return run_exports(&ex, o.output, o.quiet);
}
