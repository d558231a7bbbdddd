/*
 * export.h - reading a finished paths database for the exporters
 * (OTLP/JSON, Perfetto/Chrome JSON, Graphviz DOT) and the HTML report.
 *
 * The exporters run after bp-reconstruct has written and renamed the
 * database: they only read it, with SQL, and never touch the merge.  Each
 * output file is written to FILE.tmp-PID and renamed into place when
 * complete.  Errors are one line in X->err naming the file and the fix.
 * Nothing here is thread-safe; one struct export_db per thread.
 */
#ifndef RC_EXPORT_H
#define RC_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

/* bp-reconstruct --follow gives the rows of no request ids (and attrs
 * rowids) from here up. */
#define EXPORT_UNATTR 1099511627776LL

struct export_db {
	sqlite3    *h;
	const char *path;
	char        err[1024];
	/* only the requests this SQL query names ("SELECT request_id FROM
	 * ..."; NULL: all of them): the OTLP exports send their traces, the
	 * ClickHouse sink their rows of the tables of requests (requests,
	 * spans, messages, attrs, fragments, files, span_candidates,
	 * span_patterns) and the tables of the whole run only with
	 * run_tables, after deleting the run's rows there (bp-reconstruct
	 * --follow: docs/clickhouse.md, "Live") */
	const char *req_ids;
	int         run_tables;   /* and the rows of no request (their ids
				     from EXPORT_UNATTR up) */
	/* ClickHouse, before anything is sent: delete the rows this SQL
	 * query names ("SELECT tbl, row_id FROM ..." with tbl a table of
	 * requests or attrs), those of requests that were sent and then
	 * revised or withdrawn (bp-reconstruct --follow); NULL: none */
	const char *ch_del;
	/* what the last export wrote, for the caller's summary line */
	uint64_t    n_files, n_traces, n_spans, n_events;
};

/*
 * Open the paths database PATH read-only and check that it is one
 * (tables requests, spans, patterns).  Returns 0, or -1 with X->err set
 * (missing file, not a database, written by an older bp-reconstruct).
 */
int  export_open(struct export_db *x, const char *path);
void export_close(struct export_db *x);

/*
 * OTLP/JSON (the OpenTelemetry protobuf JSON mapping) into FILE: one line
 * per request, each a complete TracesData object - one trace per request,
 * one resourceSpans per process.  Returns 0 or -1 (X->err).
 */
int export_otlp(struct export_db *x, const char *file);

/*
 * The same traces sent to an OpenTelemetry collector or backend over
 * OTLP/HTTP as OPTS says (otlp_push.h): protobuf or JSON, OPTS->batch
 * spans per request.  ST gets what was sent and retried, TOTAL the spans
 * there were to send.  Returns 0 when every span was delivered, or -1
 * with X->err (the push failed or was refused in part; ST tells how far
 * it went).
 */
struct otlp_push_opts;
struct otlp_push_stats;
int export_otlp_push(struct export_db *x, const struct otlp_push_opts *opts,
		     struct otlp_push_stats *st, uint64_t *total);

/*
 * Every table of the database into ClickHouse as OPTS says (clickhouse.h,
 * docs/clickhouse.md): tables created when missing, rows in batched
 * INSERTs, keyed by (run, row_id) so a row sent twice counts once.  ST
 * gets what was sent.  Returns 0, or -1 with X->err naming the URL (its
 * password hidden) and ClickHouse's message.
 */
struct ch_opts;
struct ch_stats;
int export_clickhouse(struct export_db *x, const struct ch_opts *opts,
		      struct ch_stats *st);

/*
 * Chrome trace-event JSON for ui.perfetto.dev into FILE: a complete event
 * per span and per fragment of work, a process per traced process, a
 * thread per thread (nested lanes where spans of a thread overlap), and a
 * flow arrow per message between traced processes.  Returns 0 or -1.
 */
int export_perfetto(struct export_db *x, const char *file);

/*
 * Graphviz DOT files into directory DIR (created if missing):
 * request-ID.dot for the requests in the errors view and then the
 * slowest, MAX in all (0: every request), and pattern-ID.dot for the MAX
 * most common patterns (0: all).  Returns 0 or -1.
 */
int export_dot(struct export_db *x, const char *dir, long max);

/* ---- helpers shared with bp-report ---------------------------------------- */

/* A file being written: FILE.tmp-PID until export_file_commit. */
struct export_file {
	FILE *f;
	char *path, *tmp;
};

/* Create the temporary file for PATH; -1 with X->err set. */
int  export_file_open(struct export_db *x, struct export_file *o,
		      const char *path);
/* Flush, close and rename into place; -1 with X->err set (the temporary
 * file is removed).  Always releases O. */
int  export_file_commit(struct export_db *x, struct export_file *o);
/* Drop a file being written. */
void export_file_abort(struct export_file *o);

/* S (may be NULL: null) as a JSON string: quotes, escapes, control
 * characters as \u00XX, bytes that are not UTF-8 as U+FFFD. */
void export_json_str(FILE *f, const char *s);
/* S with every byte that is not part of valid UTF-8 replaced by '?' and
 * control characters by ' ', in place; returns S. */
char *export_utf8_clean(char *s);
/* Length of the valid UTF-8 sequence at S (1..4), or 0 if invalid (S is
 * NUL-terminated). */
size_t export_utf8_len(const unsigned char *s);
/* The base name of PATH ("" for NULL). */
const char *export_basename(const char *path);
/* NS as "12.3 ms", "450 us", "1.25 s" into BUF (at least 32 bytes). */
const char *export_dur(char *buf, size_t len, double ns);

/* Prepare SQL on X's database; NULL with X->err set. */
sqlite3_stmt *export_prep(struct export_db *x, const char *sql);
/* Set X->err to "WHAT: SQLite's message"; returns -1. */
int export_sql_fail(struct export_db *x, const char *what);
/* Column I of S as text, or "" when NULL. */
const char *export_col(sqlite3_stmt *s, int i);

#endif /* RC_EXPORT_H */
