/*
 * db.c - the paths database: schema, row writers, the final time
 * correction, indexes and views (see db.h and docs/schema.md).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include <sqlite3.h>

#include "db.h"
#include "patterns.h"
#include "views.h"

#define SCHEMA_VERSION 3
#define SPOOL_BUF (1u << 20)   /* spool buffer (see "the spool") */

enum stmt_id {
	S_REQUEST, S_SPAN, S_MESSAGE, S_ATTR, S_FRAGMENT, S_FILE, S_PROCESS,
	S_CHANNEL, S_WARNING, S_CANDIDATE, S_MAX
};

struct rc_db {
	sqlite3      *h;
	sqlite3_stmt *st[S_MAX];
	char         *tmp;           /* temporary path */
	int           failed;
	/* the spool: rows with times, until the clock corrections are known */
	int           spool_fd;
	char         *sbuf;
	size_t        slen, scap;
	uint64_t      sbytes;        /* written to spool_fd */
	struct batch *batch;         /* replay: rows waiting, per kind */
};

static void batch_free(struct rc_db *d);

static const char schema_sql[] =
	"CREATE TABLE requests(\n"
	"  request_id INTEGER PRIMARY KEY, start_ns INTEGER, end_ns INTEGER,\n"
	"  duration_ns INTEGER, protocol TEXT, method TEXT, target TEXT,\n"
	"  status INTEGER, client TEXT, root_span_id INTEGER,\n"
	"  host_id INTEGER, complete INTEGER,\n"
	"  certainty TEXT NOT NULL DEFAULT 'exact', certainty_reason TEXT);\n"
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
	"  msgs_out INTEGER, lost_sync INTEGER);\n"
	"CREATE TABLE hosts(\n"
	"  host_id INTEGER PRIMARY KEY, name TEXT, domain TEXT, boot_id TEXT,\n"
	"  reference INTEGER, offset_ns INTEGER, lo_ns INTEGER, hi_ns INTEGER,\n"
	"  samples INTEGER, method TEXT, realtime_delta_ns INTEGER,\n"
	"  correction_ns INTEGER, events INTEGER);\n"
	"CREATE TABLE warnings(warning_id INTEGER PRIMARY KEY, file TEXT,\n"
	"  offset INTEGER, text TEXT);\n"
	"CREATE TABLE stats(key TEXT PRIMARY KEY, value INTEGER);\n";

static const char *const stmt_sql[S_MAX] = {
	[S_REQUEST] = "INSERT INTO requests VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_SPAN] = "INSERT INTO spans VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_MESSAGE] = "INSERT INTO messages VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_ATTR] = "INSERT INTO attrs VALUES(?,?,?,?)",
	[S_FRAGMENT] = "INSERT INTO fragments VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_FILE] = "INSERT INTO files VALUES(?,?,?,?,?,?,?,?,?,?,?)",
	[S_PROCESS] = "INSERT INTO processes VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_CHANNEL] = "INSERT INTO channels VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_WARNING] = "INSERT INTO warnings(file, offset, text) VALUES(?,?,?)",
	[S_CANDIDATE] = "INSERT INTO span_candidates VALUES(?,?,?,?)",
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

static void db_error(struct rc_ctx *c, const char *what)
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
	char *msg = NULL;
	if (sqlite3_exec(c->db->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
		char what[256];
		snprintf(what, sizeof what, "%s", msg ? msg : "error");
		sqlite3_free(msg);
		db_error(c, what);
		return -1;
	}
	return 0;
}

int rc_db_open(struct rc_ctx *c)
{
	struct rc_db *d = calloc(1, sizeof *d);
	const char *out = c->opt->output;
	size_t l = strlen(out) + 32;

	if (!d)
		return rc_fail(c, RC_EXIT_OUTPUT, "out of memory");
	c->db = d;
	d->spool_fd = -1;
	d->tmp = malloc(l);
	if (!d->tmp)
		return rc_fail(c, RC_EXIT_OUTPUT, "out of memory");
	snprintf(d->tmp, l, "%s.tmp-%ld", out, (long)getpid());
	unlink(d->tmp);
	/* The spool (see below): unlinked at once, gone with the process. */
	{
		char *sp = malloc(l + 8);
		if (!sp)
			return rc_fail(c, RC_EXIT_OUTPUT, "out of memory");
		snprintf(sp, l + 8, "%s-rows", d->tmp);
		unlink(sp);
		d->spool_fd = open(sp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (d->spool_fd < 0) {
			rc_fail(c, RC_EXIT_OUTPUT,
				"cannot create %s (%s): check that its directory exists and is writable",
				sp, strerror(errno));
			free(sp);
			d->failed = 1;
			return RC_EXIT_OUTPUT;
		}
		unlink(sp);
		free(sp);
		d->sbuf = malloc(SPOOL_BUF);
		if (!d->sbuf)
			return rc_fail(c, RC_EXIT_OUTPUT, "out of memory");
		d->scap = SPOOL_BUF;
	}
	/* One thread writes: no mutexes. */
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
	/* A fresh file renamed into place only when complete: no journal. */
	if (exec(c, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
		    "PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-32768;"
		    "PRAGMA temp_store=FILE;") < 0 ||
	    exec(c, schema_sql) < 0 || exec(c, "BEGIN") < 0)
		return RC_EXIT_OUTPUT;
	for (int i = 0; i < S_MAX; i++) {
		if (sqlite3_prepare_v3(d->h, stmt_sql[i], -1,
				       SQLITE_PREPARE_PERSISTENT, &d->st[i],
				       NULL) != SQLITE_OK) {
			db_error(c, "prepare");
			return RC_EXIT_OUTPUT;
		}
	}
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
	finalize_all(d);
	if (d->h)
		sqlite3_close(d->h);
	if (d->tmp)
		unlink(d->tmp);
	if (d->spool_fd >= 0)
		close(d->spool_fd);
	batch_free(d);
	free(d->sbuf);
	free(d->tmp);
	free(d);
	c->db = NULL;
}

/* ---- binding helpers ----------------------------------------------------- */

static void b_i(sqlite3_stmt *s, int i, int64_t v)
{
	if (v == RC_DB_NULL)
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_int64(s, i, v);
}

/* An id: 0 means NULL. */
static void b_id(sqlite3_stmt *s, int i, uint64_t v)
{
	if (v == 0)
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_int64(s, i, (int64_t)v);
}

static void b_t(sqlite3_stmt *s, int i, const char *v)
{
	if (!v)
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
}

static void b_tn(sqlite3_stmt *s, int i, const char *v, uint32_t n)
{
	if (!v)
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_text(s, i, v, (int)n, SQLITE_STATIC);
}

static sqlite3_stmt *begin(struct rc_ctx *c, enum stmt_id id)
{
	if (!c->db || c->db->failed)
		return NULL;
	return c->db->st[id];
}

static void step(struct rc_ctx *c, sqlite3_stmt *s, const char *table)
{
	if (sqlite3_step(s) != SQLITE_DONE)
		db_error(c, table);
	sqlite3_reset(s);
}

/* ---- row writers ----------------------------------------------------------- */

/* requests.certainty and spans.certainty, by enum rc_certainty */
static const char *const certainty_name[3] = { "exact", "resolved",
					       "uncertain" };

static void bind_request(sqlite3_stmt *s, int o, const struct rc_row_request *r)
{
	b_id(s, o + 1, r->id);
	b_i(s, o + 2, r->start);
	b_i(s, o + 3, r->end);
	b_i(s, o + 4, r->end == RC_DB_NULL ? RC_DB_NULL : r->end - r->start);
	b_t(s, o + 5, r->protocol);
	b_t(s, o + 6, r->method);
	b_t(s, o + 7, r->target);
	b_i(s, o + 8, r->status);
	b_t(s, o + 9, r->client);
	b_id(s, o + 10, r->root_span);
	b_i(s, o + 11, r->dom + 1);
	b_i(s, o + 12, r->end != RC_DB_NULL);
	b_t(s, o + 13, certainty_name[r->certainty < 3 ? r->certainty : 2]);
	b_t(s, o + 14, r->reason);
}

static void bind_span(sqlite3_stmt *s, int o, const struct rc_row_span *r)
{
	b_id(s, o + 1, r->id);
	b_id(s, o + 2, r->req);
	b_id(s, o + 3, r->parent);
	b_t(s, o + 4, r->kind);
	b_t(s, o + 5, r->protocol);
	b_t(s, o + 6, r->name);
	b_t(s, o + 7, r->target);
	b_i(s, o + 8, r->status);
	b_t(s, o + 9, r->host);
	b_i(s, o + 10, r->pid);
	b_i(s, o + 11, r->tid);
	b_t(s, o + 12, r->exe);
	b_t(s, o + 13, r->peer);
	b_i(s, o + 14, r->start);
	b_i(s, o + 15, r->end);
	b_i(s, o + 16, r->dom + 1);
	b_id(s, o + 17, r->process_id);
	b_id(s, o + 18, r->channel_id);
	b_t(s, o + 19, certainty_name[r->certainty < 3 ? r->certainty : 2]);
	b_t(s, o + 20, r->reason);
}

static void bind_message(sqlite3_stmt *s, int o, const struct rc_row_message *r)
{
	b_id(s, o + 1, r->id);
	b_id(s, o + 2, r->req);
	b_id(s, o + 3, r->span);
	b_id(s, o + 4, r->channel_id);
	b_i(s, o + 5, r->dom + 1);
	b_id(s, o + 6, r->process_id);
	b_i(s, o + 7, r->pid);
	b_i(s, o + 8, r->tid);
	b_i(s, o + 9, r->begin);
	b_i(s, o + 10, r->ts);
	b_t(s, o + 11, r->dir);
	b_t(s, o + 12, r->kind);
	b_t(s, o + 13, r->protocol);
	b_i(s, o + 14, r->flags);
	b_i(s, o + 15, (int64_t)r->off);
	b_i(s, o + 16, (int64_t)r->len);
	b_i(s, o + 17, r->status);
	b_i(s, o + 18, r->witness);
	b_id(s, o + 19, r->peer_message);
}

/* An attrs row (spooled like the others, so attrs keep their order). */
struct rc_row_attr {
	uint64_t span, message;
	const char *key, *val;
	uint32_t len;
};

static void bind_attr(sqlite3_stmt *s, int o, const struct rc_row_attr *r)
{
	b_id(s, o + 1, r->span);
	b_id(s, o + 2, r->message);
	b_t(s, o + 3, r->key);
	b_tn(s, o + 4, r->val, r->len);
}

static void bind_fragment(sqlite3_stmt *s, int o, const struct rc_row_fragment *r)
{
	b_id(s, o + 1, r->id);
	b_id(s, o + 2, r->req);
	b_id(s, o + 3, r->span);
	b_i(s, o + 4, r->dom + 1);
	b_id(s, o + 5, r->process_id);
	b_i(s, o + 6, r->pid);
	b_i(s, o + 7, r->tid);
	b_i(s, o + 8, r->start);
	b_i(s, o + 9, r->end);
	b_t(s, o + 10, r->trigger);
	b_i(s, o + 11, r->fd);
	b_id(s, o + 12, r->channel_id);
	b_i(s, o + 13, (int64_t)r->events);
}

static void bind_file(sqlite3_stmt *s, int o, const struct rc_row_file *r)
{
	b_id(s, o + 1, r->id);
	b_id(s, o + 2, r->req);
	b_id(s, o + 3, r->span);
	b_i(s, o + 4, r->dom + 1);
	b_id(s, o + 5, r->process_id);
	b_i(s, o + 6, r->pid);
	b_i(s, o + 7, r->tid);
	b_i(s, o + 8, r->ts);
	b_tn(s, o + 9, r->path, r->path_len);
	b_i(s, o + 10, r->flags);
	b_i(s, o + 11, r->result);
}

static void bind_process(sqlite3_stmt *s, int o, const struct rc_row_process *r)
{
	char ring[24];
	snprintf(ring, sizeof ring, "%016" PRIx64, r->ring_id);
	b_id(s, o + 1, r->id);
	b_t(s, o + 2, r->host);
	b_i(s, o + 3, r->dom + 1);
	b_i(s, o + 4, r->pid);
	b_i(s, o + 5, r->ppid ? (int64_t)r->ppid : RC_DB_NULL);
	b_t(s, o + 6, r->exe);
	b_t(s, o + 7, r->cmdline);
	sqlite3_bind_text(s, o + 8, ring, -1, SQLITE_TRANSIENT);
	b_i(s, o + 9, r->start);
	b_i(s, o + 10, r->end);
	b_id(s, o + 11, r->parent);
	b_t(s, o + 12, r->how);
	b_id(s, o + 13, r->req);
	b_i(s, o + 14, (int64_t)r->events);
}

static void bind_channel(sqlite3_stmt *s, int o, const struct rc_row_channel *r)
{
	b_id(s, o + 1, r->id);
	b_i(s, o + 2, (int64_t)r->conn);
	b_i(s, o + 3, r->dom + 1);
	b_id(s, o + 4, r->process_id);
	b_i(s, o + 5, r->pid);
	b_i(s, o + 6, r->fd);
	b_t(s, o + 7, r->kind);
	b_t(s, o + 8, r->role);
	b_t(s, o + 9, r->protocol);
	b_t(s, o + 10, r->local);
	b_t(s, o + 11, r->remote);
	b_t(s, o + 12, r->path);
	b_i(s, o + 13, r->ino ? (int64_t)r->ino : RC_DB_NULL);
	b_i(s, o + 14, r->peer_ino ? (int64_t)r->peer_ino : RC_DB_NULL);
	b_id(s, o + 15, r->peer);
	b_i(s, o + 16, r->traced_peer);
	b_id(s, o + 17, r->req);
	b_i(s, o + 18, r->open);
	b_i(s, o + 19, r->close);
	b_i(s, o + 20, (int64_t)r->bytes_in);
	b_i(s, o + 21, (int64_t)r->bytes_out);
	b_i(s, o + 22, (int64_t)r->msgs_in);
	b_i(s, o + 23, (int64_t)r->msgs_out);
	b_i(s, o + 24, r->lost_sync);
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
	sqlite3_stmt *s = begin(c, S_CANDIDATE);
	if (!s)
		return;
	b_id(s, 1, span);
	b_id(s, 2, req);
	b_i(s, 3, chosen);
	b_t(s, 4, reason);
	step(c, s, "span_candidates");
}

/* ---- the spool ---------------------------------------------------------------
 *
 * Rows are not inserted during the merge: the clock corrections are known
 * only at its end, and shifting every row in place then (one UPDATE per
 * table) rewrote the whole database.  They are appended instead to an
 * unlinked temporary file next to the output, in the order they come (the
 * row struct, then each of its strings), and inserted with corrected times
 * by rc_db_finish in that same order (attrs, which have no times, come
 * along so that they go in batches too).  Memory stays one buffer.
 */

enum spool_kind { K_REQUEST = 1, K_SPAN, K_MESSAGE, K_FRAGMENT, K_FILE,
		  K_PROCESS, K_CHANNEL, K_ATTR };

/* A string field of a row struct: its pointer, and its length field or
 * -1 when NUL-terminated. */
struct sfield { size_t ptr; long len; };

#define SF(T, f) { offsetof(T, f), -1 }
#define SFL(T, f, l) { offsetof(T, f), (long)offsetof(T, l) }

static const struct sfield sf_request[] = {
	SF(struct rc_row_request, protocol), SF(struct rc_row_request, method),
	SF(struct rc_row_request, target), SF(struct rc_row_request, client) };
static const struct sfield sf_span[] = {
	SF(struct rc_row_span, kind), SF(struct rc_row_span, protocol),
	SF(struct rc_row_span, name), SF(struct rc_row_span, target),
	SF(struct rc_row_span, host), SF(struct rc_row_span, exe),
	SF(struct rc_row_span, peer) };
static const struct sfield sf_message[] = {
	SF(struct rc_row_message, dir), SF(struct rc_row_message, kind),
	SF(struct rc_row_message, protocol) };
static const struct sfield sf_fragment[] = {
	SF(struct rc_row_fragment, trigger) };
static const struct sfield sf_file[] = {
	SFL(struct rc_row_file, path, path_len) };
static const struct sfield sf_process[] = {
	SF(struct rc_row_process, host), SF(struct rc_row_process, exe),
	SF(struct rc_row_process, cmdline), SF(struct rc_row_process, how) };
static const struct sfield sf_attr[] = {
	SF(struct rc_row_attr, key), SFL(struct rc_row_attr, val, len) };
static const struct sfield sf_channel[] = {
	SF(struct rc_row_channel, kind), SF(struct rc_row_channel, role),
	SF(struct rc_row_channel, protocol), SF(struct rc_row_channel, local),
	SF(struct rc_row_channel, remote), SF(struct rc_row_channel, path) };

#define NF(a) (sizeof a / sizeof a[0])

static const struct {
	const struct sfield *f;
	size_t nf, size;
} spool_desc[] = {
	[K_REQUEST] = { sf_request, NF(sf_request), sizeof(struct rc_row_request) },
	[K_SPAN] = { sf_span, NF(sf_span), sizeof(struct rc_row_span) },
	[K_MESSAGE] = { sf_message, NF(sf_message), sizeof(struct rc_row_message) },
	[K_FRAGMENT] = { sf_fragment, NF(sf_fragment), sizeof(struct rc_row_fragment) },
	[K_FILE] = { sf_file, NF(sf_file), sizeof(struct rc_row_file) },
	[K_PROCESS] = { sf_process, NF(sf_process), sizeof(struct rc_row_process) },
	[K_CHANNEL] = { sf_channel, NF(sf_channel), sizeof(struct rc_row_channel) },
	[K_ATTR] = { sf_attr, NF(sf_attr), sizeof(struct rc_row_attr) },
};

union spool_row {
	struct rc_row_request  request;
	struct rc_row_span     span;
	struct rc_row_message  message;
	struct rc_row_fragment fragment;
	struct rc_row_file     file;
	struct rc_row_process  process;
	struct rc_row_channel  channel;
	struct rc_row_attr     attr;
};

#define SPOOL_NULL UINT32_MAX

static void spool_error(struct rc_ctx *c, const char *what, int e)
{
	struct rc_db *d = c->db;
	if (d->failed)
		return;
	d->failed = 1;
	rc_fail(c, RC_EXIT_OUTPUT, "cannot %s the temporary rows next to %s (%s): check free space and permissions of its directory",
		what, c->opt->output, strerror(e));
}

static int spool_flush(struct rc_ctx *c)
{
	struct rc_db *d = c->db;
	size_t done = 0;
	while (done < d->slen) {
		ssize_t n = write(d->spool_fd, d->sbuf + done, d->slen - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			spool_error(c, "write", n < 0 ? errno : ENOSPC);
			return -1;
		}
		done += (size_t)n;
	}
	d->sbytes += d->slen;
	d->slen = 0;
	return 0;
}

static int spool_reserve(struct rc_ctx *c, size_t n)
{
	struct rc_db *d = c->db;
	if (d->slen + n <= d->scap)
		return 0;
	if (d->slen && spool_flush(c) < 0)
		return -1;
	if (n > d->scap) {
		char *b = realloc(d->sbuf, n);
		if (!b) {
			spool_error(c, "buffer", ENOMEM);
			return -1;
		}
		d->sbuf = b;
		d->scap = n;
	}
	return 0;
}

static const char *sf_str(const void *row, const struct sfield *f,
			  uint32_t *len)
{
	const char *s;
	memcpy(&s, (const char *)row + f->ptr, sizeof s);
	if (!s)
		return NULL;
	if (f->len >= 0)
		memcpy(len, (const char *)row + f->len, sizeof *len);
	else
		*len = (uint32_t)strlen(s);
	return s;
}

static void spool_put(struct rc_ctx *c, enum spool_kind k, const void *row)
{
	struct rc_db *d = c->db;
	const struct sfield *f = spool_desc[k].f;
	size_t nf = spool_desc[k].nf, size = spool_desc[k].size;
	size_t need = 8 + size;
	uint32_t len[8];

	if (!d || d->failed)
		return;
	for (size_t i = 0; i < nf; i++) {
		if (sf_str(row, &f[i], &len[i]))
			need += 4 + (size_t)len[i] + 1;
		else
			need += 4;
	}
	if (spool_reserve(c, need) < 0)
		return;
	char *p = d->sbuf + d->slen;
	uint32_t n32 = (uint32_t)need, k32 = k;
	memcpy(p, &n32, 4);
	memcpy(p + 4, &k32, 4);
	memcpy(p + 8, row, size);
	p += 8 + size;
	for (size_t i = 0; i < nf; i++) {
		const char *s = sf_str(row, &f[i], &len[i]);
		uint32_t l = s ? len[i] : SPOOL_NULL;
		memcpy(p, &l, 4);
		p += 4;
		if (s) {
			memcpy(p, s, len[i]);
			p[len[i]] = 0;
			p += len[i] + 1;
		}
	}
	d->slen += need;
}


/*
 * Replayed rows go in BATCH rows per INSERT statement: one statement keeps
 * its table's cursor open from row to row (rows mostly come in rowid
 * order, each lands next to the last), where a statement per row seeks
 * from the root and sets up and tears down its program each time.
 * Strings point into the spool buffer: batches are flushed before it is
 * refilled.
 */
#define BATCH 64

struct batch {
	union spool_row row[BATCH];
	unsigned n;
	sqlite3_stmt *full;      /* BATCH rows */
};

static const struct {
	enum stmt_id id;
	const char *table;
} kind_stmt[] = {
	[K_REQUEST] = { S_REQUEST, "requests" },
	[K_SPAN] = { S_SPAN, "spans" },
	[K_MESSAGE] = { S_MESSAGE, "messages" },
	[K_FRAGMENT] = { S_FRAGMENT, "fragments" },
	[K_FILE] = { S_FILE, "files" },
	[K_PROCESS] = { S_PROCESS, "processes" },
	[K_CHANNEL] = { S_CHANNEL, "channels" },
	[K_ATTR] = { S_ATTR, "attrs" },
};

#define NKIND (sizeof kind_stmt / sizeof kind_stmt[0])

/* "INSERT INTO t VALUES(?,...),(?,...)..." for N rows; *NCOLS its columns. */
static sqlite3_stmt *prep_rows(struct rc_ctx *c, enum stmt_id id, unsigned n,
			       int *ncols)
{
	const char *one = stmt_sql[id];
	const char *v = strstr(one, "VALUES");
	const char *tuple = strchr(v, '(');
	size_t tl = strlen(tuple), hl = (size_t)(tuple - one);
	char *sql = malloc(hl + n * (tl + 1) + 1);
	sqlite3_stmt *st = NULL;
	int k = 0;

	for (const char *q = tuple; *q; q++)
		k += *q == '?';
	*ncols = k;
	if (!sql) {
		rc_fail(c, RC_EXIT_OUTPUT, "out of memory");
		c->db->failed = 1;
		return NULL;
	}
	memcpy(sql, one, hl);
	char *p = sql + hl;
	for (unsigned i = 0; i < n; i++) {
		if (i)
			*p++ = ',';
		memcpy(p, tuple, tl);
		p += tl;
	}
	*p = 0;
	if (sqlite3_prepare_v3(c->db->h, sql, -1, SQLITE_PREPARE_PERSISTENT,
			       &st, NULL) != SQLITE_OK) {
		db_error(c, "prepare");
		st = NULL;
	}
	free(sql);
	return st;
}

static void bind_row(sqlite3_stmt *s, int o, uint32_t k,
		     const union spool_row *u)
{
	switch (k) {
	case K_REQUEST: bind_request(s, o, &u->request); break;
	case K_SPAN: bind_span(s, o, &u->span); break;
	case K_MESSAGE: bind_message(s, o, &u->message); break;
	case K_FRAGMENT: bind_fragment(s, o, &u->fragment); break;
	case K_FILE: bind_file(s, o, &u->file); break;
	case K_PROCESS: bind_process(s, o, &u->process); break;
	case K_CHANNEL: bind_channel(s, o, &u->channel); break;
	case K_ATTR: bind_attr(s, o, &u->attr); break;
	}
}

static void batch_flush(struct rc_ctx *c, uint32_t k)
{
	struct rc_db *d = c->db;
	struct batch *b = &d->batch[k];
	int ncols;

	if (!b->n || d->failed) {
		b->n = 0;
		return;
	}
	if (b->n == BATCH) {
		if (!b->full)
			b->full = prep_rows(c, kind_stmt[k].id, BATCH, &ncols);
		if (b->full) {
			int nc = sqlite3_bind_parameter_count(b->full) / BATCH;
			for (unsigned i = 0; i < BATCH; i++)
				bind_row(b->full, (int)i * nc, k, &b->row[i]);
			step(c, b->full, kind_stmt[k].table);
		}
	} else {
		/* a part batch (the buffer is refilled): a row at a time */
		sqlite3_stmt *s = d->st[kind_stmt[k].id];
		for (unsigned i = 0; i < b->n && !d->failed; i++) {
			bind_row(s, 0, k, &b->row[i]);
			step(c, s, kind_stmt[k].table);
		}
	}
	b->n = 0;
}

static void batch_flush_all(struct rc_ctx *c)
{
	for (uint32_t k = 1; k < NKIND; k++)
		batch_flush(c, k);
}

static void batch_add(struct rc_ctx *c, uint32_t k, const union spool_row *u)
{
	struct batch *b = &c->db->batch[k];
	b->row[b->n++] = *u;
	if (b->n == BATCH)
		batch_flush(c, k);
}

static void batch_free(struct rc_db *d)
{
	if (!d->batch)
		return;
	for (uint32_t k = 1; k < NKIND; k++)
		sqlite3_finalize(d->batch[k].full);
	free(d->batch);
	d->batch = NULL;
}

static void shift(int64_t *t, int64_t corr)
{
	if (*t != RC_DB_NULL)
		*t += corr;
}

/* Insert one spooled record (at P, NEED bytes) with corrected times. */
static void spool_apply(struct rc_ctx *c, const char *p)
{
	uint32_t k;
	union spool_row u;

	memcpy(&k, p + 4, 4);
	const struct sfield *f = spool_desc[k].f;
	memcpy(&u, p + 8, spool_desc[k].size);
	p += 8 + spool_desc[k].size;
	for (size_t i = 0; i < spool_desc[k].nf; i++) {
		uint32_t l;
		const char *s = NULL;
		memcpy(&l, p, 4);
		p += 4;
		if (l != SPOOL_NULL) {
			s = p;
			p += l + 1;
		}
		memcpy((char *)&u + f[i].ptr, &s, sizeof s);
	}
	const struct rc_domain *D = c->doms;
	switch (k) {
	case K_REQUEST:
		shift(&u.request.start, D[u.request.dom].corr);
		shift(&u.request.end, D[u.request.dom].corr);
		break;
	case K_SPAN:
		shift(&u.span.start, D[u.span.dom].corr);
		shift(&u.span.end, D[u.span.dom].corr);
		break;
	case K_MESSAGE:
		shift(&u.message.begin, D[u.message.dom].corr);
		shift(&u.message.ts, D[u.message.dom].corr);
		break;
	case K_FRAGMENT:
		shift(&u.fragment.start, D[u.fragment.dom].corr);
		shift(&u.fragment.end, D[u.fragment.dom].corr);
		break;
	case K_FILE:
		shift(&u.file.ts, D[u.file.dom].corr);
		break;
	case K_PROCESS:
		shift(&u.process.start, D[u.process.dom].corr);
		shift(&u.process.end, D[u.process.dom].corr);
		break;
	case K_CHANNEL:
		shift(&u.channel.open, D[u.channel.dom].corr);
		shift(&u.channel.close, D[u.channel.dom].corr);
		break;
	}
	batch_add(c, k, &u);
}

/* Insert every spooled row, in order. */
static int spool_replay(struct rc_ctx *c)
{
	struct rc_db *d = c->db;
	size_t have = 0, pos = 0;
	uint64_t left;

	if (d->slen && spool_flush(c) < 0)
		return -1;
	left = d->sbytes;
	d->batch = calloc(NKIND, sizeof *d->batch);
	if (!d->batch) {
		spool_error(c, "buffer", ENOMEM);
		return -1;
	}
	if (lseek(d->spool_fd, 0, SEEK_SET) < 0) {
		spool_error(c, "read", errno);
		return -1;
	}
	while (!d->failed && (left || pos < have)) {
		uint32_t need = 0;
		if (have - pos >= 4)
			memcpy(&need, d->sbuf + pos, 4);
		if (have - pos < 4 || have - pos < need) {
			/* the rows waiting point into the buffer */
			batch_flush_all(c);
			/* move the partial record to the front and read on */
			memmove(d->sbuf, d->sbuf + pos, have - pos);
			have -= pos;
			pos = 0;
			if (need > d->scap) {
				char *b = realloc(d->sbuf, need);
				if (!b) {
					spool_error(c, "buffer", ENOMEM);
					return -1;
				}
				d->sbuf = b;
				d->scap = need;
			}
			size_t want = d->scap - have;
			if (want > left)
				want = (size_t)left;
			if (!want) {
				spool_error(c, "read", EIO);
				return -1;
			}
			ssize_t n = read(d->spool_fd, d->sbuf + have, want);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				spool_error(c, "read", n < 0 ? errno : EIO);
				return -1;
			}
			have += (size_t)n;
			left -= (uint64_t)n;
			continue;
		}
		spool_apply(c, d->sbuf + pos);
		pos += need;
	}
	batch_flush_all(c);
	batch_free(d);
	close(d->spool_fd);
	d->spool_fd = -1;
	free(d->sbuf);
	d->sbuf = NULL;
	d->slen = d->scap = 0;
	return d->failed ? -1 : 0;
}

void rc_db_request(struct rc_ctx *c, const struct rc_row_request *r)
{
	spool_put(c, K_REQUEST, r);
}

void rc_db_span(struct rc_ctx *c, const struct rc_row_span *r)
{
	spool_put(c, K_SPAN, r);
}

void rc_db_message(struct rc_ctx *c, const struct rc_row_message *r)
{
	spool_put(c, K_MESSAGE, r);
}

void rc_db_fragment(struct rc_ctx *c, const struct rc_row_fragment *r)
{
	spool_put(c, K_FRAGMENT, r);
}

void rc_db_file(struct rc_ctx *c, const struct rc_row_file *r)
{
	spool_put(c, K_FILE, r);
}

void rc_db_process(struct rc_ctx *c, const struct rc_row_process *r)
{
	spool_put(c, K_PROCESS, r);
}

void rc_db_channel(struct rc_ctx *c, const struct rc_row_channel *r)
{
	spool_put(c, K_CHANNEL, r);
}

void rc_db_attr(struct rc_ctx *c, uint64_t span, uint64_t message,
		const char *key, const char *val, uint32_t len)
{
	struct rc_row_attr r = { span, message, key, val, len };
	spool_put(c, K_ATTR, &r);
}

/* Warnings go in at once. */

void rc_db_warning(struct rc_ctx *c, const char *file, uint64_t off,
		   const char *text)
{
	ins_warning(c, file, off, text);
}

/* ---- finish ----------------------------------------------------------------- */

static int write_hosts(struct rc_ctx *c)
{
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(c->db->h,
			       "INSERT INTO hosts VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
			       -1, &s, NULL) != SQLITE_OK) {
		db_error(c, "hosts");
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

static void mark_request(struct rc_ctx *c, sqlite3_stmt *up, int64_t req,
			 int level, const char *why)
{
	if (!level)
		return;
	sqlite3_bind_text(up, 1, certainty_name[level], -1, SQLITE_STATIC);
	if (why[0])
		sqlite3_bind_text(up, 2, why, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(up, 2);
	sqlite3_bind_int64(up, 3, req);
	step(c, up, "requests");
}

static int certainty_finish(struct rc_ctx *c)
{
	struct rc_db *d = c->db;
	sqlite3_stmt *q = NULL, *up = NULL;
	int64_t cur = -1;
	int level = 0;
	char why[256] = "";

	if (!c->st.marked_spans) {
		c->st.req_exact = c->st.requests;
		return 0;
	}
	if (exec(c, inherit_sql) < 0)
		return -1;
	if (sqlite3_prepare_v2(d->h, marks_sql, -1, &q, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(d->h, "UPDATE requests SET certainty = ?,"
			       " certainty_reason = ? WHERE request_id = ?",
			       -1, &up, NULL) != SQLITE_OK) {
		db_error(c, "certainty");
		sqlite3_finalize(q);
		return -1;
	}
	while (sqlite3_step(q) == SQLITE_ROW) {
		int64_t req = sqlite3_column_int64(q, 0);
		const char *ct = (const char *)sqlite3_column_text(q, 1);
		const char *r = (const char *)sqlite3_column_text(q, 2);
		int l = ct && !strcmp(ct, "uncertain") ? 2 :
			ct && !strcmp(ct, "resolved") ? 1 : 0;
		if (req != cur) {
			mark_request(c, up, cur, level, why);
			cur = req;
			level = 0;
			why[0] = 0;
		}
		if (l > level)
			level = l;
		reasons_add(why, sizeof why, r);
	}
	mark_request(c, up, cur, level, why);
	sqlite3_finalize(q);
	sqlite3_finalize(up);
	if (sqlite3_prepare_v2(d->h, "SELECT certainty, count(*) FROM requests"
			       " GROUP BY 1", -1, &q, NULL) != SQLITE_OK) {
		db_error(c, "certainty");
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
	};
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(c->db->h, "INSERT INTO stats VALUES(?,?)", -1,
			       &s, NULL) != SQLITE_OK) {
		db_error(c, "stats");
		return -1;
	}
	for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
		b_t(s, 1, kv[i].k);
		sqlite3_bind_int64(s, 2, (int64_t)kv[i].v);
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
	if (spool_replay(c) < 0)
		return RC_EXIT_OUTPUT;
	finalize_all(d);
	if (write_hosts(c) < 0)
		return RC_EXIT_OUTPUT;
	if (exec(c, finish_sql) < 0 || certainty_finish(c) < 0 ||
	    write_stats(c) < 0)
		return RC_EXIT_OUTPUT;
	char why[512];
	if (rc_patterns_build(d->h, why, sizeof why) < 0 ||
	    rc_views_create(d->h, why, sizeof why) < 0) {
		db_error(c, why);
		return RC_EXIT_OUTPUT;
	}
	if (exec(c, "COMMIT") < 0)
		return RC_EXIT_OUTPUT;
	if (sqlite3_close(d->h) != SQLITE_OK) {
		db_error(c, "close");
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
