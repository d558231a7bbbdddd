/*
 * db.c - the paths database: schema, statements, warnings and candidates,
 * and the end of a run: the rows (db_rows.c), hosts, indexes, certainty,
 * stats, patterns and views, then the rename into place (see db.h and
 * docs/schema.md).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include <sqlite3.h>

#include "db_impl.h"
#include "patterns.h"
#include "sql.h"
#include "views.h"

#define SCHEMA_VERSION RC_SCHEMA_VERSION

static const char schema_sql[] =
	"CREATE TABLE requests(\n"
	"  request_id INTEGER PRIMARY KEY, start_ns INTEGER, end_ns INTEGER,\n"
	"  duration_ns INTEGER, protocol TEXT, method TEXT, target TEXT,\n"
	"  status INTEGER, client TEXT, root_span_id INTEGER,\n"
	"  host_id INTEGER, complete INTEGER,\n"
	"  certainty TEXT NOT NULL DEFAULT 'exact', certainty_reason TEXT, pattern_id INTEGER);\n"
	"CREATE TABLE spans(\n"
	"  span_id INTEGER PRIMARY KEY, request_id INTEGER,\n"
	"  parent_span_id INTEGER, kind TEXT, protocol TEXT, name TEXT,\n"
	"  target TEXT, status INTEGER, host TEXT, pid INTEGER, tid INTEGER,\n"
	"  exe TEXT, peer TEXT, start_ns INTEGER, end_ns INTEGER,\n"
	"  host_id INTEGER, process_id INTEGER, channel_id INTEGER,\n"
	"  certainty TEXT NOT NULL DEFAULT 'exact', certainty_reason TEXT);\n"
	"CREATE TABLE span_candidates(span_id INTEGER, request_id INTEGER,\n"
	"  chosen INTEGER, reason TEXT);\n"
	"CREATE TABLE messages(\n"
	"  message_id INTEGER PRIMARY KEY, request_id INTEGER, span_id INTEGER,\n"
	"  channel_id INTEGER, host_id INTEGER, process_id INTEGER,\n"
	"  pid INTEGER, tid INTEGER, begin_ns INTEGER, ts_ns INTEGER,\n"
	"  dir TEXT, kind TEXT, protocol TEXT, flags INTEGER, off INTEGER,\n"
	"  len INTEGER, status INTEGER, witness INTEGER,\n"
	"  peer_message_id INTEGER);\n"
	"CREATE TABLE attrs(span_id INTEGER, message_id INTEGER, key TEXT,\n"
	"  value TEXT);\n"
	"CREATE TABLE fragments(\n"
	"  fragment_id INTEGER PRIMARY KEY, request_id INTEGER, span_id INTEGER,\n"
	"  host_id INTEGER, process_id INTEGER, pid INTEGER, tid INTEGER,\n"
	"  start_ns INTEGER, end_ns INTEGER, trigger TEXT, fd INTEGER,\n"
	"  channel_id INTEGER, events INTEGER);\n"
	"CREATE TABLE files(\n"
	"  file_id INTEGER PRIMARY KEY, request_id INTEGER, span_id INTEGER,\n"
	"  host_id INTEGER, process_id INTEGER, pid INTEGER, tid INTEGER,\n"
	"  ts_ns INTEGER, path TEXT, flags INTEGER, result INTEGER);\n"
	"CREATE TABLE processes(\n"
	"  process_id INTEGER PRIMARY KEY, host TEXT, host_id INTEGER,\n"
	"  pid INTEGER, ppid INTEGER, exe TEXT, cmdline TEXT, ring_id TEXT,\n"
	"  start_ns INTEGER, end_ns INTEGER, parent_process_id INTEGER,\n"
	"  how TEXT, request_id INTEGER, events INTEGER);\n"
	"CREATE TABLE channels(\n"
	"  channel_id INTEGER PRIMARY KEY, conn_id INTEGER, host_id INTEGER,\n"
	"  process_id INTEGER, pid INTEGER, fd INTEGER, kind TEXT, role TEXT,\n"
	"  protocol TEXT, local TEXT, remote TEXT, path TEXT, ino INTEGER,\n"
	"  peer_ino INTEGER, peer_channel_id INTEGER, traced_peer INTEGER,\n"
	"  request_id INTEGER, open_ns INTEGER, close_ns INTEGER,\n"
	"  bytes_in INTEGER, bytes_out INTEGER, msgs_in INTEGER,\n"
	"  msgs_out INTEGER, lost_sync INTEGER, readable INTEGER,\n"
	"  unreadable_reason TEXT);\n"
	"CREATE TABLE untraced_programs(\n"
	"  process_id INTEGER, host TEXT, pid INTEGER, exe TEXT, comm TEXT,\n"
	"  sockets INTEGER, tcp_listen INTEGER, tcp INTEGER, udp INTEGER,\n"
	"  unix_listen INTEGER, examples TEXT);\n"
	"CREATE TABLE hosts(\n"
	"  host_id INTEGER PRIMARY KEY, name TEXT, domain TEXT, boot_id TEXT,\n"
	"  reference INTEGER, offset_ns INTEGER, lo_ns INTEGER, hi_ns INTEGER,\n"
	"  samples INTEGER, method TEXT, realtime_delta_ns INTEGER,\n"
	"  correction_ns INTEGER, events INTEGER);\n"
	"CREATE TABLE warnings(warning_id INTEGER PRIMARY KEY, file TEXT,\n"
	"  offset INTEGER, text TEXT);\n"
	"CREATE TABLE stats(key TEXT PRIMARY KEY, value INTEGER);\n";

const char *const rc_db_stmt_sql[S_MAX] = {
	[S_REQUEST] = "INSERT INTO requests VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_SPAN] = "INSERT INTO spans VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_MESSAGE] = "INSERT INTO messages VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_ATTR] = "INSERT INTO attrs VALUES(?,?,?,?)",
	[S_FRAGMENT] = "INSERT INTO fragments VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_FILE] = "INSERT INTO files VALUES(?,?,?,?,?,?,?,?,?,?,?)",
	[S_PROCESS] = "INSERT INTO processes VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_CHANNEL] = "INSERT INTO channels VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_WARNING] = "INSERT INTO warnings(file, offset, text) VALUES(?,?,?)",
	[S_CANDIDATE] = "INSERT INTO span_candidates VALUES(?,?,?,?)",
	/* the table is the patterns' (patterns.c, rc_pat_stream_open) */
	[S_SPAN_PATTERN] = "INSERT INTO span_patterns VALUES(?,?,?,?,?,?)",
};

/* Indexes, created after the rows are in (then the patterns and the
 * views: patterns.c, views.c). */
static const char finish_sql[] =
	"CREATE INDEX spans_request ON spans(request_id);\n"
	"CREATE INDEX spans_parent ON spans(parent_span_id);\n"
	"CREATE INDEX messages_request ON messages(request_id);\n"
	"CREATE INDEX messages_span ON messages(span_id);\n"
	"CREATE INDEX fragments_request ON fragments(request_id);\n"
	"CREATE INDEX files_request ON files(request_id);\n"
	"CREATE INDEX attrs_span ON attrs(span_id);\n"
	"CREATE INDEX attrs_message ON attrs(message_id);\n"
	"CREATE INDEX processes_request ON processes(request_id);\n"
	"CREATE INDEX channels_request ON channels(request_id);\n";

void rc_db_error(struct rc_ctx *c, const char *what)
{
	struct rc_db *d = c->db;
	if (d->failed)
		return;
	d->failed = 1;
	rc_fail(c, RC_EXIT_OUTPUT, "cannot write %s (%s: %s): check free space and permissions of its directory",
		c->opt->output, what, d->h ? sqlite3_errmsg(d->h) : "no database");
}

static int exec(struct rc_ctx *c, const char *sql)
{
	char what[256];
	struct rc_sql x = { c->db->h, NULL, what, sizeof what, 0 };
	if (rc_sql_exec(&x, sql) < 0) {
		rc_db_error(c, what);
		return -1;
	}
	return 0;
}

static int create(struct rc_ctx *c, int queue);

int rc_db_open(struct rc_ctx *c)
{
	struct rc_db *d = calloc(1, sizeof *d);

	if (!d)
		return rc_fail(c, RC_EXIT_OUTPUT, "out of memory");
	c->db = d;
	/* The spool (db_rows.c): unlinked at once, gone with the process. */
	if (rc_db_rows_open(c) != 0)
		return RC_EXIT_OUTPUT;
	return c->opt->db_later ? 0 : create(c, 1);
}

/* Create the temporary database, its schema and statements; QUEUE:
 * start the queue's thread.  0 or RC_EXIT_OUTPUT. */
static int create(struct rc_ctx *c, int queue)
{
	struct rc_db *d = c->db;
	const char *out = c->opt->output;
	size_t l = strlen(out) + 32;

	d->tmp = malloc(l);
	if (!d->tmp)
		return rc_fail(c, RC_EXIT_OUTPUT, "out of memory");
	snprintf(d->tmp, l, "%s.tmp-%ld", out, (long)getpid());
	unlink(d->tmp);
	/* One thread at a time writes (the queue's, then this one): no
	 * mutexes. */
	if (sqlite3_open_v2(d->tmp, &d->h, SQLITE_OPEN_READWRITE |
			    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		int e = d->h ? sqlite3_extended_errcode(d->h) : 0;
		rc_fail(c, RC_EXIT_OUTPUT,
			"cannot create %s (%s, sqlite error %d): check that its directory exists and is writable",
			d->tmp, d->h ? sqlite3_errmsg(d->h) : "out of memory", e);
		sqlite3_close(d->h);
		d->h = NULL;
		d->failed = 1;
		return RC_EXIT_OUTPUT;
	}
	/* A fresh file renamed into place only when complete: no journal.
	 * 16 KiB pages: a quarter of the page reads, writes and b-tree
	 * cells moved of 4 KiB ones while rows and index entries go in
	 * (2 million bp-genbig events: 70% fewer pread/pwrite calls, about
	 * 15% less CPU).  BENCHMARKS.md, phase 16.  The page cache is
	 * 4 MiB: SQLite's sorter, which builds the indexes, sizes its
	 * buffers by it, and a 16 MiB cache made it the larger part of the
	 * peak RSS (bench 8 at 5 million events 47 MB, 27 with 4 MiB, the
	 * same speed; the window passes of --follow no slower; phase 32). */
	if (exec(c, "PRAGMA page_size=16384;"
		    "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
		    "PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-4096;"
		    "PRAGMA temp_store=FILE;") < 0 ||
	    exec(c, schema_sql) < 0 || exec(c, "BEGIN") < 0)
		return RC_EXIT_OUTPUT;
	for (int i = 0; i < S_SPAN_PATTERN; i++) {
		if (sqlite3_prepare_v3(d->h, rc_db_stmt_sql[i], -1,
				       SQLITE_PREPARE_PERSISTENT, &d->st[i],
				       NULL) != SQLITE_OK) {
			rc_db_error(c, "prepare");
			return RC_EXIT_OUTPUT;
		}
	}
	/* The patterns as the rows go in, unless this run writes none or
	 * not every request's spans (--follow's passes); without the
	 * stream they are made from the rows at the end. */
	if (!c->opt->no_patterns && !c->opt->rows_from_ns) {
		char why[256];
		d->pat = rc_pat_stream_open(d->h, why, sizeof why);
	}
	/* attrs, warnings and candidates: inserted while the merge runs */
	if (queue && rc_db_queue_start(c) == RC_EXIT_OUTPUT)
		return RC_EXIT_OUTPUT;
	return 0;
}

static void finalize_all(struct rc_db *d)
{
	for (int i = 0; i < S_MAX; i++) {
		sqlite3_finalize(d->st[i]);
		d->st[i] = NULL;
	}
}

void rc_db_abort(struct rc_ctx *c)
{
	struct rc_db *d = c->db;
	if (!d)
		return;
	rc_db_queue_abort(d);
	finalize_all(d);
	rc_pat_stream_free(d->pat);
	d->pat = NULL;
	if (d->h)
		sqlite3_close(d->h);
	if (d->tmp)
		unlink(d->tmp);
	rc_db_rows_free(d);
	free(d->tmp);
	free(d);
	c->db = NULL;
}

/* ---- warnings and candidates, inserted at once ----------------------------- */

static sqlite3_stmt *begin(struct rc_ctx *c, enum stmt_id id)
{
	if (!c->db || c->db->failed)
		return NULL;
	return c->db->st[id];
}

static void ins_warning(struct rc_ctx *c, const char *file, uint64_t off,
			const char *text)
{
	sqlite3_stmt *s = begin(c, S_WARNING);
	if (!s)
		return;
	b_t(s, 1, file);
	b_i(s, 2, file ? (int64_t)off : RC_DB_NULL);
	b_t(s, 3, text);
	step(c, s, "warnings");
}

void rc_db_candidate(struct rc_ctx *c, uint64_t span, uint64_t req,
		     int chosen, const char *reason)
{
	if (rc_db_queue_candidate(c, span, req, chosen, reason) == 0) {
		rc_db_rows_named(c, req);
		return;
	}
	if (c->db && !c->db->h && !c->db->failed) {
		rc_db_spool_candidate(c, span, req, chosen, reason);
		return;
	}
	rc_db_rows_named(c, req);
	sqlite3_stmt *s = begin(c, S_CANDIDATE);
	if (!s)
		return;
	b_id(s, 1, span);
	b_id(s, 2, req);
	b_i(s, 3, chosen);
	b_t(s, 4, reason);
	step(c, s, "span_candidates");
}


void rc_db_warning(struct rc_ctx *c, const char *file, uint64_t off,
		   const char *text)
{
	if (rc_db_queue_warning(c, file, off, text) == 0)
		return;
	if (c->db && !c->db->h && !c->db->failed) {
		rc_db_spool_warning(c, file, off, text);
		return;
	}
	ins_warning(c, file, off, text);
}

/* ---- finish ----------------------------------------------------------------- */

static int write_hosts(struct rc_ctx *c)
{
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(c->db->h,
			       "INSERT INTO hosts VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
			       -1, &s, NULL) != SQLITE_OK) {
		rc_db_error(c, "hosts");
		return -1;
	}
	for (uint32_t k = 0; k < c->ndoms; k++) {
		const struct rc_domain *D = &c->doms[k];
		char boot[24];
		snprintf(boot, sizeof boot, "%016" PRIx64,
			 c->hosts[D->host].boot_id);
		b_i(s, 1, k + 1);
		b_t(s, 2, c->hosts[D->host].name);
		b_t(s, 3, D->label);
		sqlite3_bind_text(s, 4, boot, -1, SQLITE_TRANSIENT);
		b_i(s, 5, D->reference);
		b_i(s, 6, D->off);
		b_i(s, 7, D->has_lo ? D->lo : RC_DB_NULL);
		b_i(s, 8, D->has_hi ? D->hi : RC_DB_NULL);
		b_i(s, 9, (int64_t)D->samples);
		b_t(s, 10, D->method);
		b_i(s, 11, D->delta);
		b_i(s, 12, D->corr);
		b_i(s, 13, (int64_t)D->events);
		step(c, s, "hosts");
	}
	sqlite3_finalize(s);
	return c->db->failed ? -1 : 0;
}

/*
 * Certainty, once every span is in (docs/schema.md): the spans below an
 * uncertain span inherit its mark; a request is 'uncertain' if one of its
 * spans is, or if it was a candidate owner of an ambiguous span (it may
 * miss that span), 'resolved' if a span of it was resolved and none is
 * uncertain; its reason lists its spans' and candidacies' reasons once
 * each.  Nothing to do (and nothing read) when no span was marked.
 */
static const char inherit_sql[] =
	"WITH RECURSIVE u(id, why) AS (\n"
	"  SELECT span_id, certainty_reason FROM spans\n"
	"  WHERE certainty = 'uncertain'\n"
	"  UNION SELECT s.span_id, u.why FROM spans s JOIN u\n"
	"  ON s.parent_span_id = u.id WHERE s.certainty <> 'uncertain')\n"
	"UPDATE spans SET certainty = 'uncertain',\n"
	"  certainty_reason = (SELECT why FROM u WHERE id = span_id)\n"
	"WHERE certainty <> 'uncertain' AND span_id IN (SELECT id FROM u);\n";

static const char marks_sql[] =
	"SELECT request_id, certainty, certainty_reason FROM spans\n"
	"  WHERE certainty <> 'exact' AND request_id IS NOT NULL\n"
	"UNION ALL SELECT request_id, 'uncertain', reason FROM span_candidates\n"
	"  WHERE request_id IS NOT NULL\n"
	"ORDER BY 1";

/* Add the comma-separated reasons of WHY to the set in BUF (LEN). */
static void reasons_add(char *buf, size_t len, const char *why)
{
	while (why && *why) {
		size_t n = strcspn(why, ",");
		int have = 0;
		for (const char *p = buf; *p && !have;) {
			size_t m = strcspn(p, ",");
			have = m == n && !memcmp(p, why, n);
			p += m + (p[m] == ',');
		}
		size_t bl = strlen(buf);
		if (!have && n && bl + n + 2 < len) {
			if (bl)
				buf[bl++] = ',';
			memcpy(buf + bl, why, n);
			buf[bl + n] = 0;
		}
		why += n + (why[n] == ',');
	}
}

static int mark_request(sqlite3_stmt *up, int64_t req, int level,
			const char *why)
{
	if (!level)
		return 0;
	sqlite3_bind_text(up, 1, certainty_name[level], -1, SQLITE_STATIC);
	if (why[0])
		sqlite3_bind_text(up, 2, why, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(up, 2);
	sqlite3_bind_int64(up, 3, req);
	int r = sqlite3_step(up);
	sqlite3_reset(up);
	return r == SQLITE_DONE ? 0 : -1;
}

int rc_db_certainty_apply(sqlite3 *h, char *err, size_t errlen)
{
	struct rc_sql x = { h, "certainty", err, errlen, 0 };
	sqlite3_stmt *q = NULL, *up = NULL;
	int64_t cur = -1;
	int level = 0, rc, bad = 0;
	char why[256] = "";

	if (rc_sql_exec(&x, inherit_sql) < 0 ||
	    !(q = rc_sql_prep(&x, marks_sql)) ||
	    !(up = rc_sql_prep(&x, "UPDATE requests SET certainty = ?,"
			       " certainty_reason = ? WHERE request_id = ?"))) {
		sqlite3_finalize(q);
		return -1;
	}
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t req = sqlite3_column_int64(q, 0);
		const char *ct = (const char *)sqlite3_column_text(q, 1);
		const char *r = (const char *)sqlite3_column_text(q, 2);
		int l = ct && !strcmp(ct, "uncertain") ? 2 :
			ct && !strcmp(ct, "resolved") ? 1 : 0;
		if (req != cur) {
			bad |= mark_request(up, cur, level, why);
			cur = req;
			level = 0;
			why[0] = 0;
		}
		if (l > level)
			level = l;
		reasons_add(why, sizeof why, r);
	}
	if (rc != SQLITE_DONE)
		bad = -1;
	bad |= mark_request(up, cur, level, why);
	if (bad)
		rc_sql_fail_db(&x, "requests");
	sqlite3_finalize(q);
	sqlite3_finalize(up);
	return bad ? -1 : 0;
}

static int certainty_finish(struct rc_ctx *c)
{
	struct rc_db *d = c->db;
	sqlite3_stmt *q = NULL;
	char what[256];

	if (!c->st.marked_spans && !c->st.ambiguous_files) {
		c->st.req_exact = c->st.requests;
		return 0;
	}
	if (rc_db_certainty_apply(d->h, what, sizeof what) < 0) {
		rc_db_error(c, what);
		return -1;
	}
	if (sqlite3_prepare_v2(d->h, "SELECT certainty, count(*) FROM requests"
			       " GROUP BY 1", -1, &q, NULL) != SQLITE_OK) {
		rc_db_error(c, "certainty");
		return -1;
	}
	while (sqlite3_step(q) == SQLITE_ROW) {
		const char *ct = (const char *)sqlite3_column_text(q, 0);
		uint64_t n = (uint64_t)sqlite3_column_int64(q, 1);
		if (!ct)
			continue;
		if (!strcmp(ct, "exact"))
			c->st.req_exact = n;
		else if (!strcmp(ct, "resolved"))
			c->st.req_resolved = n;
		else
			c->st.req_uncertain = n;
	}
	/* a window pass's requests that no row named, left out: exact
	 * (db_rows.c, "requests no row names") */
	c->st.req_exact += c->st.req_unnamed;
	sqlite3_finalize(q);
	return d->failed ? -1 : 0;
}

static int write_stats(struct rc_ctx *c)
{
	const struct rc_stats *t = &c->st;
	const struct { const char *k; uint64_t v; } kv[] = {
		{ "schema_version", SCHEMA_VERSION },
		{ "files", t->files }, { "blocks", t->blocks },
		{ "duplicate_blocks", t->dup_blocks },
		{ "payload_bytes", t->payload_bytes },
		{ "events", t->events }, { "lost_records", t->lost_records },
		{ "lost_bytes", t->lost_bytes }, { "gaps", t->gaps },
		{ "dropped_by_tracer", t->dropped },
		{ "malformed_records", t->malformed },
		{ "unknown_type_records", t->unknown_types },
		{ "hosts", c->nhosts }, { "domains", c->ndoms },
		{ "images", c->nimages }, { "streams", c->nstreams },
		{ "requests", t->requests }, { "spans", t->spans },
		{ "messages", t->messages }, { "fragments", t->fragments },
		{ "files_opened", t->files_opened }, { "channels", t->channels },
		{ "unattributed_fragments", t->unattr_fragments },
		{ "unattributed_messages", t->unattr_messages },
		{ "unattributed_files", t->unattr_files },
		{ "unattributed_spans", t->unattr_spans },
		{ "unattributed_data_bytes", t->unattr_data_bytes },
		{ "released_waits", t->released },
		{ "unlogged_senders", t->unlogged },
		{ "peer_not_logged", t->peer_pending },
		{ "closed_unread_spans", t->closed_unread },
		{ "lost_event_spans", t->lost_in_span },
		{ "unknown_fd_spans", t->unknown_fd_spans },
		{ "gap_fragments", t->gap_fragments },
		{ "lost_input_roots", t->lost_roots },
		{ "peer_gap", t->peer_gap },
		{ "orphan_images", t->orphans },
		{ "unpaired_receives", t->unpaired_recv },
		{ "unmatched_replies", t->unmatched_replies },
		{ "reply_designation_mismatch", t->reply_mismatch },
		{ "causal_clamps", t->clamps },
		{ "isolations", t->isolations },
		{ "unknown_fd_records", t->unknown_fd },
		{ "send_queue_overflow", t->queue_overflow },
		{ "warnings", t->warnings },
		{ "requests_exact", t->req_exact },
		{ "requests_resolved", t->req_resolved },
		{ "requests_uncertain", t->req_uncertain },
		{ "parked_spans", t->parks },
		{ "ambiguous_spans", t->ambiguous_spans },
		{ "content_resolved", t->content_resolved },
		{ "grpc_unary_calls", t->grpc_unary_calls },
		{ "grpc_unary_excluded", t->grpc_unary_excluded },
	};
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(c->db->h, "INSERT INTO stats VALUES(?,?)", -1,
			       &s, NULL) != SQLITE_OK) {
		rc_db_error(c, "stats");
		return -1;
	}
	for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
		b_t(s, 1, kv[i].k);
		sqlite3_bind_int64(s, 2, (int64_t)kv[i].v);
		step(c, s, "stats");
	}
	/* the span of the requests' starts (follow.c, window: a scan of
	 * the table took 24 ms at 400,000 requests) */
	if (c->db->req_n) {
		b_t(s, 1, "requests_first_ns");
		sqlite3_bind_int64(s, 2, c->db->req_first);
		step(c, s, "stats");
		b_t(s, 1, "requests_last_ns");
		sqlite3_bind_int64(s, 2, c->db->req_last);
		step(c, s, "stats");
	}
	/* what --follow's window pass left out (follow.c) */
	if (c->opt->rows_from_ns) {
		b_t(s, 1, "follow_rows_skipped");
		sqlite3_bind_int64(s, 2, (int64_t)c->st.rows_skipped);
		step(c, s, "stats");
		b_t(s, 1, "follow_channel_rows_skipped");
		sqlite3_bind_int64(s, 2, (int64_t)c->st.chan_rows_skipped);
		step(c, s, "stats");
		b_t(s, 1, "follow_rows_from_ns");
		sqlite3_bind_int64(s, 2, c->opt->rows_from_ns);
		step(c, s, "stats");
		b_t(s, 1, "follow_requests_left_out");
		sqlite3_bind_int64(s, 2, (int64_t)c->st.req_unnamed);
		step(c, s, "stats");
		/* the latest request start (corrected) whose rows were left
		 * out: no request from there on may be written */
		int any = 0;
		int64_t skip = 0;
		for (uint32_t d = 0; d < c->ndoms; d++) {
			const struct rc_domain *D = &c->doms[d];
			if (D->has_skip && (!any || D->skip_max + D->corr > skip)) {
				skip = D->skip_max + D->corr;
				any = 1;
			}
		}
		if (any) {
			b_t(s, 1, "follow_rows_skip_max_ns");
			sqlite3_bind_int64(s, 2, skip);
			step(c, s, "stats");
		}
	}
	/* --detail=spans says so (a full database has no such row) */
	if (c->opt->detail == RC_DETAIL_SPANS) {
		b_t(s, 1, "detail_spans_only");
		sqlite3_bind_int64(s, 2, 1);
		step(c, s, "stats");
	}
	sqlite3_finalize(s);
	return c->db->failed ? -1 : 0;
}

int rc_db_finish(struct rc_ctx *c)
{
	struct rc_db *d = c->db;

	if (!d || d->failed)
		return RC_EXIT_OUTPUT;
	/* rc_options.db_later: every row is in the spool */
	if (!d->h && (create(c, 0) != 0 || d->failed))
		return RC_EXIT_OUTPUT;
	if (rc_db_rows_replay(c) < 0)
		return RC_EXIT_OUTPUT;
	finalize_all(d);
	if (write_hosts(c) < 0)
		return RC_EXIT_OUTPUT;
	if (exec(c, finish_sql) < 0 || certainty_finish(c) < 0 ||
	    write_stats(c) < 0)
		return RC_EXIT_OUTPUT;
	char why[512];
	struct rc_pat_stream *ps = d->pat;
	d->pat = NULL;
	if ((c->opt->no_patterns ? rc_patterns_empty(d->h, why, sizeof why) :
	     rc_patterns_finish(d->h, ps, why, sizeof why)) < 0 ||
	    rc_views_create(d->h, why, sizeof why) < 0) {
		rc_db_error(c, why);
		return RC_EXIT_OUTPUT;
	}
	if (rc_notes_unread_collect(c, d->h) < 0) {
		rc_db_error(c, "reading the unread channels");
		return RC_EXIT_OUTPUT;
	}
	if (rc_notes_rawio_write(c, d->h) < 0) {
		rc_db_error(c, "untraced_programs");
		return RC_EXIT_OUTPUT;
	}
	if (exec(c, "COMMIT") < 0)
		return RC_EXIT_OUTPUT;
	if (sqlite3_close(d->h) != SQLITE_OK) {
		rc_db_error(c, "close");
		return RC_EXIT_OUTPUT;
	}
	d->h = NULL;
	if (rename(d->tmp, c->opt->output) < 0) {
		rc_fail(c, RC_EXIT_OUTPUT,
			"cannot rename %s to %s: %s (check the output directory)",
			d->tmp, c->opt->output, strerror(errno));
		return RC_EXIT_OUTPUT;
	}
	free(d->tmp);
	d->tmp = NULL;
	free(d);
	c->db = NULL;
	return 0;
}
