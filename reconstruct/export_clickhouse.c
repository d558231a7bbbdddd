/*
 * export_clickhouse.c - the ClickHouse sink (see clickhouse.h and
 * docs/clickhouse.md): the tables of a finished paths database, created
 * in ClickHouse when missing and filled with batched INSERTs over the
 * HTTP interface (the shared client, http_client.c).
 *
 * Each request is a POST whose body is the statement, and for an INSERT
 * the rows after it in TabSeparated (escapes: \\ \t \n \r \0, NULL as
 * \N), gzip'd.  The statements are written for ClickHouse 18.16 (Debian
 * 12's) and later: no IF NOT EXISTS on ADD COLUMN, no LowCardinality, no
 * DateTime64 (times stay Int64 nanoseconds as in SQLite).
 */
#include "config.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clickhouse.h"
#include "export.h"
#include "http_client.h"

#define CH_BODY_MAX (32u << 20)      /* raw bytes per INSERT, at most */

/* A growing buffer. */
struct buf {
	char  *b;
	size_t n, cap;
	int    oom;
};

static void put(struct buf *b, const void *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *nb = realloc(b->b, cap);
		if (!nb) {
			b->oom = 1;
			return;
		}
		b->b = nb;
		b->cap = cap;
	}
	memcpy(b->b + b->n, s, n);
	b->n += n;
	b->b[b->n] = 0;
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void putf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void putf(struct buf *b, const char *fmt, ...)
{
	char t[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t, sizeof t, fmt, ap);
	va_end(ap);
	if (n > 0)
		put(b, t, (size_t)n < sizeof t ? (size_t)n : sizeof t - 1);
}

/* S[0..N) as a TabSeparated field. */
static void put_tsv(struct buf *b, const unsigned char *s, size_t n)
{
	size_t i = 0, run = 0;
	while (i < n) {
		const char *e = NULL;
		switch (s[i]) {
		case '\\': e = "\\\\"; break;
		case '\t': e = "\\t"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\0': e = "\\0"; break;
		}
		if (e) {
			put(b, s + run, i - run);
			put(b, e, 2);
			run = i + 1;
		}
		i++;
	}
	put(b, s + run, n - run);
}

/* ---- the URL, the names ------------------------------------------------------ */

static int name_ok(const char *s, size_t n, const char *extra)
{
	if (!n || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && !strchr(extra, s[i]))
			return 0;
	return 1;
}

/* The URL without the database parameter (malloc'd: *REST), the database
 * (DB, "default" when none) and the URL as messages may show it (SHOWN:
 * password and password= replaced by ***).  0 or -1 with ERR. */
static int split_url(const char *url, char **rest, char *db, size_t dblen,
		     char *shown, size_t slen, char *err, size_t len)
{
	const char *q = strchr(url, '?');
	size_t hl = q ? (size_t)(q - url) : strlen(url);
	struct buf r = { 0 }, s = { 0 };
	snprintf(db, dblen, "default");
	/* scheme://user:password@host */
	const char *h = strstr(url, "://");
	const char *at = h ? memchr(h, '@', hl - (size_t)(h - url)) : NULL;
	const char *colon = at ? memchr(h + 3, ':', (size_t)(at - h - 3)) : NULL;
	if (colon) {
		put(&s, url, (size_t)(colon - url));
		puts_(&s, ":***");
		put(&s, at, hl - (size_t)(at - url));
	} else {
		put(&s, url, hl);
	}
	put(&r, url, hl);
	char sep = '?';
	for (const char *p = q ? q + 1 : NULL; p && *p;) {
		size_t n = strcspn(p, "&");
		if (n > 9 && !strncmp(p, "database=", 9)) {
			if (!name_ok(p + 9, n - 9, "")) {
				snprintf(err, len, "%.300s: the database name '%.*s' is not 1-64 letters, digits and _",
					 s.b ? s.b : url, (int)(n - 9), p + 9);
				free(r.b);
				free(s.b);
				return -1;
			}
			snprintf(db, dblen, "%.*s", (int)(n - 9), p + 9);
		} else if (n) {
			put(&r, &sep, 1);
			put(&r, p, n);
			put(&s, &sep, 1);
			if (n > 9 && !strncmp(p, "password=", 9))
				puts_(&s, "password=***");
			else
				put(&s, p, n);
			sep = '&';
		}
		p += n + (p[n] == '&');
	}
	if (r.oom || s.oom || !r.b || !s.b) {
		snprintf(err, len, "out of memory");
		free(r.b);
		free(s.b);
		return -1;
	}
	snprintf(shown, slen, "%s", s.b);
	free(s.b);
	*rest = r.b;
	return 0;
}

static struct http_opts http_opts(const struct ch_opts *o, const char *url,
				  const char *shown)
{
	struct http_opts h = {
		.url = url, .shown = shown, .default_path = "/",
		.example_port = "8123", .ca = o->ca, .ca_option = "--clickhouse-ca",
		.header_option = "--clickhouse-header", .userinfo = 1,
		.content_type = "text/plain; charset=UTF-8", .gzip = o->gzip,
		.headers = o->headers, .nheaders = o->nheaders,
		.timeout = o->timeout, .io_max = CH_IO_MAX, .retries = o->retries,
	};
	return h;
}

int ch_check_url(const char *url, char *err, size_t len)
{
	char db[80], shown[600], *rest;
	struct ch_opts o = { .url = url };
	if (split_url(url, &rest, db, sizeof db, shown, sizeof shown, err, len) < 0)
		return -1;
	struct http_opts h = http_opts(&o, rest, shown);
	int r = http_check_url(&h, err, len);
	free(rest);
	return r;
}

int ch_check_header(const char *h, char *err, size_t len)
{
	return http_check_header(h, "--clickhouse-header", err, len);
}

int ch_check_run(const char *run, char *err, size_t len)
{
	if (!name_ok(run, strlen(run), ".:-")) {
		snprintf(err, len, "--clickhouse-run wants 1-64 letters, digits and _.:-, not '%.80s'", run);
		return -1;
	}
	return 0;
}

/* ---- talking to the server ------------------------------------------------ */

struct ch {
	struct export_db   *x;
	const struct ch_opts *o;
	struct ch_stats    *st;
	struct http_client *h;
	const char         *db;
	char                run[80];
};

/* POST BODY (N bytes, a statement and maybe data); 0 with the answer's
 * first bytes in O, or -1 with X->err naming the URL and ClickHouse's
 * message.  WHAT says what was sent. */
static int ch_post(struct ch *c, const char *body, size_t n,
		   struct http_resp *o, const char *what)
{
	char err[900];
	const void *b = body;
	size_t len = n;
	unsigned char *z = NULL;
	if (c->o->gzip) {
		z = http_gzip(body, n, &len);
		if (!z) {
			snprintf(c->x->err, sizeof c->x->err, "ClickHouse: gzip: out of memory");
			return -1;
		}
		b = z;
	}
	int e = http_post(c->h, NULL, b, len, o, &c->st->retries, err, sizeof err);
	free(z);
	if (e < 0) {
		snprintf(c->x->err, sizeof c->x->err, "ClickHouse: %.200s: %.700s", what, err);
		return -1;
	}
	if (o->status != 200) {
		http_resp_text(c->h, o, err, sizeof err);
		snprintf(c->x->err, sizeof c->x->err, "ClickHouse %.250s refused %.200s: %.500s",
			 c->st->shown, what, err);
		return -1;
	}
	c->st->bytes += len;
	c->st->raw_bytes += n;
	return 0;
}

/* Run one statement SQL (no data). */
static int ch_exec(struct ch *c, const char *sql, const char *what)
{
	struct http_resp o;
	return ch_post(c, sql, strlen(sql), &o, what);
}

/* ---- the tables -------------------------------------------------------------- */

struct col {
	char *name;
	char  type;          /* 'i' Int64, 'f' Float64, 's' String */
	int   notnull;
};

struct table {
	char       *name;
	struct col *cols;
	int         ncols;
};

static void table_free(struct table *t)
{
	for (int i = 0; i < t->ncols; i++)
		free(t->cols[i].name);
	free(t->cols);
	free(t->name);
}

/* The columns of SQLite table T->name (PRAGMA table_info). */
static int table_cols(struct ch *c, struct table *t)
{
	char sql[200];
	snprintf(sql, sizeof sql, "PRAGMA table_info(\"%s\")", t->name);
	sqlite3_stmt *s = export_prep(c->x, sql);
	if (!s)
		return -1;
	while (sqlite3_step(s) == SQLITE_ROW) {
		struct col *nc = realloc(t->cols, (size_t)(t->ncols + 1) * sizeof *nc);
		if (!nc) {
			sqlite3_finalize(s);
			snprintf(c->x->err, sizeof c->x->err, "out of memory");
			return -1;
		}
		t->cols = nc;
		struct col *k = &t->cols[t->ncols++];
		const char *decl = export_col(s, 2);
		k->name = strdup(export_col(s, 1));
		k->type = strcasestr(decl, "INT") ? 'i' :
			  strcasestr(decl, "REAL") || strcasestr(decl, "FLOA") ||
			  strcasestr(decl, "DOUB") ? 'f' : 's';
		/* NOT NULL, or the INTEGER PRIMARY KEY (the rowid) */
		k->notnull = sqlite3_column_int(s, 3) ||
			     (sqlite3_column_int(s, 5) && k->type == 'i');
		if (!k->name || !name_ok(k->name, strlen(k->name), "")) {
			sqlite3_finalize(s);
			snprintf(c->x->err, sizeof c->x->err, k->name ?
				 "ClickHouse: the column name %.80s.'%.80s' cannot be sent" :
				 "out of memory", t->name, k->name);
			return -1;
		}
	}
	sqlite3_finalize(s);
	return 0;
}

static const char *ch_type(const struct col *k)
{
	static const char *const t[2][3] = {
		{ "Nullable(Int64)", "Nullable(Float64)", "Nullable(String)" },
		{ "Int64", "Float64", "String" },
	};
	return t[k->notnull ? 1 : 0][k->type == 'i' ? 0 : k->type == 'f' ? 1 : 2];
}

/* Create DB.T if missing, and add the columns an older version of the
 * table lacks. */
static int table_create(struct ch *c, const struct table *t)
{
	struct buf b = { 0 };
	char what[200];
	putf(&b, "CREATE TABLE IF NOT EXISTS `%s`.`%s` (run String, row_id UInt64",
	     c->db, t->name);
	for (int i = 0; i < t->ncols; i++)
		putf(&b, ", `%s` %s", t->cols[i].name, ch_type(&t->cols[i]));
	puts_(&b, ") ENGINE = ReplacingMergeTree ORDER BY (run, row_id)");
	snprintf(what, sizeof what, "CREATE TABLE %s.%s", c->db, t->name);
	int r = b.oom ? -1 : ch_exec(c, b.b, what);
	free(b.b);
	if (r < 0)
		return -1;
	/* the columns it has (their names fit in the answer's first 8 KB) */
	char sql[300];
	struct http_resp o;
	snprintf(sql, sizeof sql,
		 "SELECT name FROM system.columns WHERE database = '%s' AND table = '%s' FORMAT TabSeparated",
		 c->db, t->name);
	snprintf(what, sizeof what, "the columns of %s.%s", c->db, t->name);
	if (ch_post(c, sql, strlen(sql), &o, what) < 0)
		return -1;
	for (int i = 0; i < t->ncols; i++) {
		char want[80];
		snprintf(want, sizeof want, "\n%s\n", t->cols[i].name);
		char have[HTTP_KEEP_MAX + 3];
		snprintf(have, sizeof have, "\n%s", o.body);
		if (strstr(have, want))
			continue;
		snprintf(sql, sizeof sql, "ALTER TABLE `%s`.`%s` ADD COLUMN `%s` %s",
			 c->db, t->name, t->cols[i].name, ch_type(&t->cols[i]));
		snprintf(what, sizeof what, "ADD COLUMN %s to %s.%s",
			 t->cols[i].name, c->db, t->name);
		if (ch_exec(c, sql, what) < 0)
			return -1;
	}
	return 0;
}

/* "INSERT INTO db.t (run, row_id, cols...) FORMAT TabSeparated\n" */
static void insert_head(struct ch *c, const struct table *t, struct buf *b)
{
	b->n = 0;
	putf(b, "INSERT INTO `%s`.`%s` (run, row_id", c->db, t->name);
	for (int i = 0; i < t->ncols; i++)
		putf(b, ", `%s`", t->cols[i].name);
	puts_(b, ") FORMAT TabSeparated\n");
}

/* Column I of row S as a field of type K. */
static void put_value(struct buf *b, sqlite3_stmt *s, int i, const struct col *k)
{
	int ty = sqlite3_column_type(s, i);
	if (ty == SQLITE_NULL) {
		/* NOT NULL columns never hold NULL; a default just in case */
		puts_(b, k->notnull ? (k->type == 's' ? "" : "0") : "\\N");
		return;
	}
	if (k->type == 'i') {
		putf(b, "%" PRId64, (int64_t)sqlite3_column_int64(s, i));
	} else if (k->type == 'f') {
		putf(b, "%.17g", sqlite3_column_double(s, i));
	} else {
		const unsigned char *v = ty == SQLITE_BLOB ? sqlite3_column_blob(s, i) :
					 sqlite3_column_text(s, i);
		put_tsv(b, v, (size_t)sqlite3_column_bytes(s, i));
	}
}

/* With X->req_ids (bp-reconstruct --follow): the tables whose rows are
 * a request's, and which column names it. */
static const char *const req_tables[] = {
	"requests", "spans", "messages", "fragments", "files",
	"span_candidates", "span_patterns", NULL,
};

/* How T is sent: 'a' every row, 'r' the rows of X->req_ids's requests,
 * 'w' every row after the run's rows there are deleted (a table of the
 * whole run, with run_tables), 0 not at all. */
static int table_mode(const struct ch *c, const struct table *t)
{
	if (!c->x->req_ids)
		return 'a';
	if (!strncmp(t->name, "follow_", 7))
		return 0;
	if (!strcmp(t->name, "attrs"))
		return 'r';
	/* the patterns of the whole run, made again by every full pass
	 * (and by none of the window passes, which write a request's
	 * pattern_id NULL): at the last pass every row again, after the
	 * run's rows there are deleted, as for the patterns themselves */
	if (c->x->run_tables && (!strcmp(t->name, "requests") ||
				 !strcmp(t->name, "span_patterns")))
		return 'w';
	for (int i = 0; req_tables[i]; i++)
		if (!strcmp(t->name, req_tables[i]))
			return 'r';
	return c->x->run_tables ? 'w' : 0;
}

/* The WHERE of T's rows in mode 'r'; with run_tables the rows of no
 * request too. */
static void req_where(struct buf *sel, const struct ch *c, const struct table *t)
{
	const char *ids = c->x->req_ids;
	if (!strcmp(t->name, "attrs"))
		putf(sel, " WHERE span_id IN (SELECT span_id FROM spans WHERE request_id IN (%s))"
		     " OR (span_id IS NULL AND message_id IN (SELECT message_id FROM messages"
		     " WHERE request_id IN (%s)))", ids, ids);
	else
		putf(sel, " WHERE request_id IN (%s)", ids);
	if (c->x->run_tables)
		putf(sel, " OR rowid >= %lld", EXPORT_UNATTR);
}

/* Row ids per ALTER TABLE ... DELETE: each is a mutation, which
 * ClickHouse applies to the parts that exist when it is made (rows
 * inserted after it stay), in the background. */
#define CH_DEL_IDS 5000

/* Send the deletions X->ch_del names, one ALTER TABLE ... DELETE per
 * table and CH_DEL_IDS ids.  0, or -1 with X->err. */
static int run_deletes(struct ch *c)
{
	sqlite3_stmt *s = export_prep(c->x, c->x->ch_del);
	struct buf b = { 0 };
	char tbl[40] = "", what[120];
	size_t n = 0;
	int r = 0, st;

	if (!s)
		return -1;
	for (;;) {
		st = sqlite3_step(s);
		const char *t = st == SQLITE_ROW ?
			(const char *)sqlite3_column_text(s, 0) : NULL;
		if (st == SQLITE_ROW) {
			int known = t && !strcmp(t, "attrs");
			for (int i = 0; t && !known && req_tables[i]; i++)
				known = !strcmp(t, req_tables[i]);
			if (!known) {
				snprintf(c->x->err, sizeof c->x->err,
					 "%s: a deletion names table '%s', not a table of requests",
					 c->x->path, t ? t : "(null)");
				r = -1;
				break;
			}
		} else if (st != SQLITE_DONE) {
			r = export_sql_fail(c->x, "the rows to delete");
			break;
		}
		/* the statement so far goes when the table changes, at the
		 * end, or when it holds CH_DEL_IDS ids */
		if (n && (st == SQLITE_DONE || strcmp(t, tbl) || n >= CH_DEL_IDS)) {
			puts_(&b, ")");
			snprintf(what, sizeof what, "ALTER TABLE %s DELETE of %zu rows",
				 tbl, n);
			if (b.oom || ch_exec(c, b.b, what) < 0) {
				if (b.oom)
					snprintf(c->x->err, sizeof c->x->err,
						 "ClickHouse: out of memory");
				r = -1;
				break;
			}
			c->st->mutations++;
			c->st->deleted += n;
			n = 0;
		}
		if (st == SQLITE_DONE)
			break;
		if (!n) {
			snprintf(tbl, sizeof tbl, "%s", t);
			b.n = 0;
			putf(&b, "ALTER TABLE `%s`.`%s` DELETE WHERE run = '%s' AND row_id IN (",
			     c->db, tbl, c->run);
		}
		putf(&b, "%s%lld", n ? "," : "", (long long)sqlite3_column_int64(s, 1));
		n++;
	}
	sqlite3_finalize(s);
	free(b.b);
	return r;
}

/* Send the rows of T in INSERTs of at most O->batch rows (those MODE
 * says: table_mode). */
static int table_rows(struct ch *c, const struct table *t, int mode)
{
	struct buf sel = { 0 }, b = { 0 };
	char what[200];
	int r = 0;
	puts_(&sel, "SELECT rowid");
	for (int i = 0; i < t->ncols; i++)
		putf(&sel, ", \"%s\"", t->cols[i].name);
	putf(&sel, " FROM \"%s\"", t->name);
	if (mode == 'r')
		req_where(&sel, c, t);
	puts_(&sel, " ORDER BY rowid");
	if (mode == 'w' || (mode == 'r' && c->x->run_tables)) {
		/* the rows an earlier last pass sent (before a restart) */
		char sql[300], alter[120];
		snprintf(sql, sizeof sql, "ALTER TABLE `%s`.`%s` DELETE WHERE run = '%s'%s",
			 c->db, t->name, c->run, mode == 'r' ?
			 " AND row_id >= 1099511627776" : "");
		snprintf(alter, sizeof alter, "ALTER TABLE %s DELETE", t->name);
		if (ch_exec(c, sql, alter) < 0) {
			free(sel.b);
			return -1;
		}
	}
	sqlite3_stmt *s = sel.oom ? NULL : export_prep(c->x, sel.b);
	free(sel.b);
	if (!s)
		return -1;
	insert_head(c, t, &b);
	size_t head = b.n, n = 0;
	for (;;) {
		int st = sqlite3_step(s);
		if (st == SQLITE_ROW) {
			put_tsv(&b, (const unsigned char *)c->run, strlen(c->run));
			putf(&b, "\t%" PRId64, (int64_t)sqlite3_column_int64(s, 0));
			for (int i = 0; i < t->ncols; i++) {
				put(&b, "\t", 1);
				put_value(&b, s, i + 1, &t->cols[i]);
			}
			put(&b, "\n", 1);
			n++;
		} else if (st != SQLITE_DONE) {
			r = export_sql_fail(c->x, t->name);
			break;
		}
		if (b.oom) {
			snprintf(c->x->err, sizeof c->x->err, "ClickHouse: out of memory");
			r = -1;
			break;
		}
		if (n && (st == SQLITE_DONE || n >= c->o->batch || b.n >= CH_BODY_MAX)) {
			struct http_resp o;
			snprintf(what, sizeof what, "INSERT of %zu rows into %s.%s",
				 n, c->db, t->name);
			if (ch_post(c, b.b, b.n, &o, what) < 0) {
				r = -1;
				break;
			}
			c->st->inserts++;
			c->st->rows += n;
			n = 0;
			b.n = head;
		}
		if (st == SQLITE_DONE)
			break;
	}
	sqlite3_finalize(s);
	free(b.b);
	return r;
}

/* ---- the run ------------------------------------------------------------------- */

static void fnv(uint64_t *h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		*h ^= s[i];
		*h *= 0x100000001b3ULL;
	}
	*h ^= 0xff;                       /* field separator */
	*h *= 0x100000001b3ULL;
}

/* The run id from the content: the hosts (name, boot id, offsets) and
 * every request (id, times, target, certainty), so the same logs give
 * the same id and other logs another. */
static int run_id(struct ch *c)
{
	static const char *const q[] = {
		"SELECT name, boot_id, domain, offset_ns FROM hosts ORDER BY host_id",
		"SELECT request_id, start_ns, end_ns, target, certainty FROM requests ORDER BY request_id",
	};
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t k = 0; k < sizeof q / sizeof *q; k++) {
		sqlite3_stmt *s = export_prep(c->x, q[k]);
		if (!s)
			return -1;
		while (sqlite3_step(s) == SQLITE_ROW)
			for (int i = 0; i < sqlite3_column_count(s); i++) {
				const unsigned char *v = sqlite3_column_text(s, i);
				fnv(&h, v ? (const char *)v : "\\N",
				    v ? (size_t)sqlite3_column_bytes(s, i) : 2);
			}
		sqlite3_finalize(s);
	}
	snprintf(c->run, sizeof c->run, "%016" PRIx64, h);
	return 0;
}

/* The runs table: one row per run (what it holds, when it was written). */
static int run_row(struct ch *c)
{
	struct buf b = { 0 };
	char sql[600];
	snprintf(sql, sizeof sql,
		 "CREATE TABLE IF NOT EXISTS `%s`.runs (run String, written_at DateTime,"
		 " source String, requests UInt64, spans UInt64, rows UInt64)"
		 " ENGINE = ReplacingMergeTree ORDER BY run", c->db);
	if (ch_exec(c, sql, "CREATE TABLE runs") < 0)
		return -1;
	sqlite3_stmt *s = export_prep(c->x,
		"SELECT (SELECT COUNT(*) FROM requests), (SELECT COUNT(*) FROM spans)");
	if (!s)
		return -1;
	int64_t nreq = 0, nspan = 0;
	if (sqlite3_step(s) == SQLITE_ROW) {
		nreq = sqlite3_column_int64(s, 0);
		nspan = sqlite3_column_int64(s, 1);
	}
	sqlite3_finalize(s);
	putf(&b, "INSERT INTO `%s`.runs FORMAT TabSeparated\n", c->db);
	put_tsv(&b, (const unsigned char *)c->run, strlen(c->run));
	putf(&b, "\t%lld\t", (long long)time(NULL));
	put_tsv(&b, (const unsigned char *)c->x->path, strlen(c->x->path));
	putf(&b, "\t%lld\t%lld\t%llu\n", (long long)nreq, (long long)nspan,
	     (unsigned long long)c->st->rows);
	struct http_resp o;
	int r = b.oom ? -1 : ch_post(c, b.b, b.n, &o, "INSERT into runs");
	free(b.b);
	return r;
}

/* The tables of the database (not SQLite's own), by name. */
static int list_tables(struct ch *c, struct table **out, int *n)
{
	sqlite3_stmt *s = export_prep(c->x,
		"SELECT name FROM sqlite_master WHERE type = 'table'"
		" AND name NOT LIKE 'sqlite_%' ORDER BY name");
	if (!s)
		return -1;
	*out = NULL;
	*n = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *name = export_col(s, 0);
		struct table *nt = realloc(*out, (size_t)(*n + 1) * sizeof *nt);
		if (!nt || !name_ok(name, strlen(name), "")) {
			if (nt)
				*out = nt;
			sqlite3_finalize(s);
			snprintf(c->x->err, sizeof c->x->err, nt ?
				 "ClickHouse: the table name '%.80s' cannot be sent" :
				 "out of memory", name);
			return -1;
		}
		*out = nt;
		memset(&nt[*n], 0, sizeof *nt);
		nt[*n].name = strdup(name);
		(*n)++;
	}
	sqlite3_finalize(s);
	return 0;
}

/* O's headers and the credentials of the environment (BP_CLICKHOUSE_USER,
 * BP_CLICKHOUSE_PASSWORD: X-ClickHouse-User and X-ClickHouse-Key), into
 * H; the strings added are malloc'd into ENV[0..1].  0 or -1 (ERR). */
static int env_headers(const struct ch_opts *o, struct http_opts *h,
		       const char **list, char *env[2], char *err, size_t len)
{
	static const char *const var[2] = { "BP_CLICKHOUSE_USER",
					    "BP_CLICKHOUSE_PASSWORD" };
	static const char *const name[2] = { "X-ClickHouse-User",
					     "X-ClickHouse-Key" };
	size_t n = 0;
	for (size_t i = 0; i < o->nheaders; i++)
		list[n++] = o->headers[i];
	for (int i = 0; i < 2; i++) {
		const char *v = getenv(var[i]);
		if (!v || !*v)
			continue;
		if (strpbrk(v, "\r\n")) {
			snprintf(err, len, "%s has a line break", var[i]);
			return -1;
		}
		env[i] = malloc(strlen(name[i]) + strlen(v) + 3);
		if (!env[i]) {
			snprintf(err, len, "out of memory");
			return -1;
		}
		sprintf(env[i], "%s: %s", name[i], v);
		list[n++] = env[i];
	}
	h->headers = list;
	h->nheaders = n;
	return 0;
}

int export_clickhouse(struct export_db *x, const struct ch_opts *o,
		      struct ch_stats *st)
{
	struct ch c = { .x = x, .o = o, .st = st };
	struct table *t = NULL;
	char *url = NULL, sql[300], *env[2] = { NULL, NULL };
	int nt = 0, r = -1;
	double t0 = http_now();

	memset(st, 0, sizeof *st);
	if (split_url(o->url, &url, st->database, sizeof st->database,
		      st->shown, sizeof st->shown, x->err, sizeof x->err) < 0)
		return -1;
	c.db = st->database;
	struct http_opts h = http_opts(o, url, st->shown);
	const char **list = calloc(o->nheaders + 2, sizeof *list);
	if (!list) {
		snprintf(x->err, sizeof x->err, "out of memory");
		goto out;
	}
	if (env_headers(o, &h, list, env, x->err, sizeof x->err) < 0)
		goto out;
	c.h = http_open(&h, x->err, sizeof x->err);
	if (!c.h)
		goto out;
	if (o->run)
		snprintf(c.run, sizeof c.run, "%s", o->run);
	else if (run_id(&c) < 0)
		goto out;
	snprintf(st->run, sizeof st->run, "%s", c.run);
	snprintf(sql, sizeof sql, "CREATE DATABASE IF NOT EXISTS `%s`", c.db);
	if (ch_exec(&c, sql, "CREATE DATABASE") < 0 || list_tables(&c, &t, &nt) < 0)
		goto out;
	for (int i = 0; i < nt; i++)
		if (table_mode(&c, &t[i]) &&
		    (table_cols(&c, &t[i]) < 0 || table_create(&c, &t[i]) < 0))
			goto out;
	/* the rows of revised and withdrawn requests go before their new
	 * rows come (a revised request keeps its request_id) */
	if (x->ch_del && run_deletes(&c) < 0)
		goto out;
	st->deleted_ok = 1;
	for (int i = 0; i < nt; i++) {
		int mode = table_mode(&c, &t[i]);
		if (!mode)
			continue;
		if (table_rows(&c, &t[i], mode) < 0)
			goto out;
		st->tables++;
	}
	r = run_row(&c);
out:
	st->secs = http_now() - t0;
	for (int i = 0; i < nt; i++)
		table_free(&t[i]);
	free(t);
	http_close(c.h);
	free(list);
	free(env[0]);
	free(env[1]);
	free(url);
	return r;
}
