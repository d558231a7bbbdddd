/*
 * join.c - host-local databases and their join (see join.h).
 *
 * The join works on SQLite alone: the first input is copied (backup API)
 * to OUTPUT.tmp-PID, every other input is attached and its rows appended
 * with their ids moved past the ones already there, then the links are
 * paired, the clocks related, the requests merged, and certainty,
 * patterns and views made again.  Memory: the links and one request id
 * per request (union-find).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "db.h"
#include "join.h"
#include "patterns.h"
#include "recon.h"
#include "sql.h"
#include "views.h"

/* Matching the ends of one link: a server span may start up to this much
 * before its client span on the estimated clocks (estimation error). */
#define JOIN_TOL_NS 1000000LL

static const char links_sql[] =
	"DROP TABLE IF EXISTS span_links;\n"
	"CREATE TABLE span_links(span_id INTEGER PRIMARY KEY,\n"
	"  link TEXT NOT NULL);\n"
	"INSERT INTO span_links\n"
	"SELECT s.span_id, 'tcp ' || CASE s.kind WHEN 'client'\n"
	"    THEN c.local || '>' || c.remote ELSE c.remote || '>' || c.local END\n"
	"  || ' +' || m.off\n"
	"FROM spans s JOIN channels c ON c.channel_id = s.channel_id\n"
	"JOIN (SELECT span_id, dir, MIN(off) AS off FROM messages\n"
	"      WHERE kind = 'request' AND span_id IS NOT NULL\n"
	"      GROUP BY span_id, dir) m\n"
	"  ON m.span_id = s.span_id\n"
	"  AND m.dir = CASE s.kind WHEN 'client' THEN 'out' ELSE 'in' END\n"
	"WHERE c.kind = 'tcp' AND NOT c.traced_peer\n"
	"  AND c.local IS NOT NULL AND c.remote IS NOT NULL\n"
	"  AND (s.kind = 'client' OR s.parent_span_id IS NULL);\n"
	"CREATE INDEX span_links_link ON span_links(link);\n"
	"INSERT OR REPLACE INTO stats VALUES('span_links',\n"
	"  (SELECT COUNT(*) FROM span_links));\n";

static int one_int(sqlite3 *h, const char *sql, int64_t *v)
{
	sqlite3_stmt *q;
	int r = -1;

	if (sqlite3_prepare_v2(h, sql, -1, &q, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(q) == SQLITE_ROW) {
		*v = sqlite3_column_int64(q, 0);
		r = 0;
	}
	sqlite3_finalize(q);
	return r;
}

int rc_links_write(const char *db, char *err, size_t errlen)
{
	sqlite3 *h = NULL;
	struct rc_sql x = { NULL, NULL, err, errlen, 0 };
	int64_t nhosts = 0;
	char *names = NULL;

	if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "--host-local: cannot open %s: %s", db,
			 h ? sqlite3_errmsg(h) : "out of memory");
		sqlite3_close(h);
		return RC_EXIT_OUTPUT;
	}
	x.h = h;
	if (one_int(h, "SELECT COUNT(DISTINCT name) FROM hosts", &nhosts) < 0) {
		rc_sql_fail_db(&x, db);
		goto out;
	}
	if (nhosts != 1) {
		sqlite3_stmt *q;
		if (sqlite3_prepare_v2(h, "SELECT group_concat(name, ', ') FROM"
				       " (SELECT DISTINCT name FROM hosts)", -1,
				       &q, NULL) == SQLITE_OK &&
		    sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
			names = strdup((const char *)sqlite3_column_text(q, 0));
		sqlite3_finalize(q);
		snprintf(err, errlen,
			 "--host-local: the logs hold %" PRId64 " hosts (%s): give the logs of one host (its bp-logd directory), and join the databases with --join",
			 nhosts, names ? names : "?");
		free(names);
		sqlite3_close(h);
		unlink(db);
		return RC_EXIT_USAGE;
	}
	if (rc_sql_exec(&x, "BEGIN") == 0 && rc_sql_exec(&x, links_sql) == 0)
		rc_sql_exec(&x, "COMMIT");
out:
	sqlite3_close(h);
	return x.failed ? RC_EXIT_OUTPUT : RC_EXIT_OK;
}

/* ---- the join ----------------------------------------------------------- */

/* Id families: a column holding an id of the family is moved by the
 * family's offset when its input's rows are appended. */
enum fam { F_REQ, F_SPAN, F_MSG, F_FRAG, F_FILE, F_PROC, F_CHAN, F_CONN,
	   F_HOST, F_WARN, F_N };

static const char *const fam_max[F_N] = {
	"SELECT COALESCE(MAX(request_id), 0) FROM requests",
	"SELECT COALESCE(MAX(span_id), 0) FROM spans",
	"SELECT COALESCE(MAX(message_id), 0) FROM messages",
	"SELECT COALESCE(MAX(fragment_id), 0) FROM fragments",
	"SELECT COALESCE(MAX(file_id), 0) FROM files",
	"SELECT COALESCE(MAX(process_id), 0) FROM processes",
	"SELECT COALESCE(MAX(channel_id), 0) FROM channels",
	"SELECT COALESCE(MAX(conn_id), 0) FROM channels",
	"SELECT COALESCE(MAX(host_id), 0) FROM hosts",
	"SELECT COALESCE(MAX(warning_id), 0) FROM warnings",
};

static const struct { const char *col; int fam; } id_cols[] = {
	{ "request_id", F_REQ }, { "span_id", F_SPAN },
	{ "parent_span_id", F_SPAN }, { "root_span_id", F_SPAN },
	{ "message_id", F_MSG }, { "peer_message_id", F_MSG },
	{ "fragment_id", F_FRAG }, { "file_id", F_FILE },
	{ "process_id", F_PROC }, { "parent_process_id", F_PROC },
	{ "channel_id", F_CHAN }, { "peer_channel_id", F_CHAN },
	{ "conn_id", F_CONN }, { "host_id", F_HOST },
	{ "warning_id", F_WARN },
};

/* The tables whose rows are appended (the others are made again). */
static const char *const row_tables[] = {
	"requests", "spans", "span_candidates", "messages", "attrs",
	"fragments", "files", "processes", "channels", "hosts", "warnings",
	"span_links",
};

/* The times moved by a host's clock offset, per table. */
static const struct { const char *table, *cols[2]; } time_cols[] = {
	{ "requests",  { "start_ns", "end_ns" } },
	{ "spans",     { "start_ns", "end_ns" } },
	{ "messages",  { "begin_ns", "ts_ns" } },
	{ "fragments", { "start_ns", "end_ns" } },
	{ "files",     { "ts_ns", NULL } },
	{ "processes", { "start_ns", "end_ns" } },
	{ "channels",  { "open_ns", "close_ns" } },
};

/* The tables whose request_id a merge rewrites. */
static const char *const req_tables[] = {
	"spans", "span_candidates", "messages", "fragments", "files",
	"processes", "channels",
};

struct input {
	const char *path;
	int64_t host_lo, host_hi;    /* its host ids in the output */
	int64_t rd;                  /* its reference's wall - monotonic */
	int     aligned;
	int64_t d;                   /* how far its times were moved */
	int64_t lo, hi;              /* bounds on d (INT64_MIN/MAX: none) */
	int64_t samples;
};

/* A span of span_links, with what the pairing needs. */
struct lend {
	char   *link;
	int64_t span, req, start, end;   /* end INT64_MIN: none */
	int     input, server;
};

struct join {
	sqlite3 *h;
	struct rc_sql x;
	char err[512];
	struct input *in;
	int nin;
	struct lend *e;
	size_t ne;
	int64_t *uf;                 /* request id -> its representative */
	int64_t nreq;
	uint64_t links, ambiguous, unmatched, inconsistent;
};

static int jfail(struct join *j, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int jfail(struct join *j, const char *fmt, ...)
{
	va_list ap;

	if (j->x.failed)
		return -1;
	j->x.failed = 1;
	va_start(ap, fmt);
	vsnprintf(j->err, sizeof j->err, fmt, ap);
	va_end(ap);
	return -1;
}

/* FMT is sqlite3_mprintf's (%Q, %w): not checked as printf's. */
static int jexec(struct join *j, const char *fmt, ...)
{
	va_list ap;
	char *sql;

	va_start(ap, fmt);
	sql = sqlite3_vmprintf(fmt, ap);
	va_end(ap);
	if (!sql)
		return jfail(j, "out of memory");
	int r = rc_sql_exec(&j->x, sql);
	sqlite3_free(sql);
	return r;
}

static int jint(struct join *j, int64_t *v, const char *fmt, ...)
{
	va_list ap;
	char *sql;

	va_start(ap, fmt);
	sql = sqlite3_vmprintf(fmt, ap);
	va_end(ap);
	if (!sql)
		return jfail(j, "out of memory");
	int r = one_int(j->h, sql, v);
	sqlite3_free(sql);
	return r < 0 ? rc_sql_fail_db(&j->x, "query") : 0;
}

/* Is SCHEMA.TABLE there? */
static int has_table(struct join *j, const char *schema, const char *table)
{
	int64_t n = 0;
	if (jint(j, &n, "SELECT COUNT(*) FROM %s.sqlite_master"
		 " WHERE type = 'table' AND name = %Q", schema, table) < 0)
		return -1;
	return n > 0;
}

/* INPUT (attached as SCHEMA) must be a host-local database. */
static int check_input(struct join *j, const char *schema, const char *path)
{
	int r = has_table(j, schema, "span_links");
	if (r < 0)
		return -1;
	if (!r || has_table(j, schema, "requests") != 1)
		return jfail(j, "%s is not a database of bp-reconstruct --host-local (no span_links table): reconstruct each host's logs with --host-local first",
			     path);
	int64_t v = 0, v0 = 0;
	if (jint(j, &v, "SELECT COALESCE((SELECT value FROM %s.stats WHERE"
		 " key = 'schema_version'), 0)", schema) < 0 ||
	    jint(j, &v0, "SELECT COALESCE((SELECT value FROM main.stats WHERE"
		 " key = 'schema_version'), 0)") < 0)
		return -1;
	if (v != v0)
		return jfail(j, "%s was written by another version of bp-reconstruct (schema %" PRId64 ", the first database's %" PRId64 "): reconstruct it again",
			     path, v, v0);
	return 0;
}

/* Append the rows of table T of schema src to main, ids moved by OFF. */
static int append_table(struct join *j, const char *t, const int64_t *off)
{
	sqlite3_stmt *q;
	char *cols = NULL, *exprs = NULL;
	int r = -1;
	char *sql = sqlite3_mprintf("SELECT name FROM pragma_table_info(%Q,"
				    " 'main')", t);

	if (!sql || sqlite3_prepare_v2(j->h, sql, -1, &q, NULL) != SQLITE_OK) {
		sqlite3_free(sql);
		return rc_sql_fail_db(&j->x, t);
	}
	sqlite3_free(sql);
	while (sqlite3_step(q) == SQLITE_ROW) {
		const char *c = (const char *)sqlite3_column_text(q, 0);
		char *e = NULL;
		if (!c)
			continue;
		for (size_t i = 0; i < sizeof id_cols / sizeof *id_cols; i++)
			if (!strcmp(c, id_cols[i].col))
				e = sqlite3_mprintf("\"%w\" + %lld", c,
						    (long long)off[id_cols[i].fam]);
		if (!e && !strcmp(t, "hosts") && !strcmp(c, "reference"))
			e = sqlite3_mprintf("0");
		if (!e && !strcmp(c, "pattern_id"))
			e = sqlite3_mprintf("NULL");
		if (!e)
			e = sqlite3_mprintf("\"%w\"", c);
		char *nc = sqlite3_mprintf("%z%s\"%w\"", cols, cols ? ", " : "", c);
		char *ne = sqlite3_mprintf("%z%s%z", exprs, exprs ? ", " : "", e);
		cols = nc;
		exprs = ne;
		if (!cols || !exprs)
			goto out;
	}
	if (cols)
		r = jexec(j, "INSERT INTO main.\"%w\"(%s) SELECT %s FROM src.\"%w\"",
			  t, cols, exprs, t);
	else
		r = 0;
out:
	sqlite3_finalize(q);
	sqlite3_free(cols);
	sqlite3_free(exprs);
	if (r < 0 && !j->x.failed)
		jfail(j, "out of memory");
	return r;
}

static int add_input(struct join *j, int i)
{
	struct input *in = &j->in[i];
	int64_t off[F_N];

	if (jexec(j, "ATTACH %Q AS src", in->path) < 0)
		return jfail(j, "cannot open %s: %s", in->path, j->err);
	if (check_input(j, "src", in->path) < 0 || jexec(j, "BEGIN") < 0)
		goto fail;
	for (int f = 0; f < F_N; f++)
		if (jint(j, &off[f], "%s", fam_max[f]) < 0)
			goto fail;
	for (size_t t = 0; t < sizeof row_tables / sizeof *row_tables; t++)
		if (append_table(j, row_tables[t], off) < 0)
			goto fail;
	if (jexec(j, "INSERT INTO main.stats SELECT key, value FROM src.stats"
		  " WHERE key <> 'schema_version' AND true"
		  " ON CONFLICT(key) DO UPDATE SET value = value + excluded.value") < 0)
		goto fail;
	in->host_lo = off[F_HOST] + 1;
	if (jint(j, &in->host_hi, "SELECT MAX(host_id) FROM main.hosts") < 0 ||
	    jexec(j, "COMMIT") < 0)
		goto fail;
	return jexec(j, "DETACH src");
fail:
	sqlite3_exec(j->h, "ROLLBACK; DETACH src", NULL, NULL, NULL);
	return -1;
}

/* The hosts of the inputs: their ids, the reference's wall-clock delta,
 * and no host in two inputs. */
static int input_hosts(struct join *j)
{
	for (int i = 0; i < j->nin; i++) {
		struct input *in = &j->in[i];
		int64_t dup = 0;
		if (jint(j, &in->rd, "SELECT COALESCE((SELECT realtime_delta_ns"
			 " FROM hosts WHERE host_id BETWEEN %lld AND %lld"
			 " ORDER BY reference DESC, offset_ns = 0 DESC LIMIT 1), 0)",
			 (long long)in->host_lo, (long long)in->host_hi) < 0 ||
		    jint(j, &dup, "SELECT COUNT(*) FROM hosts a JOIN hosts b"
			 " ON a.name = b.name WHERE a.host_id BETWEEN %lld AND %lld"
			 " AND b.host_id NOT BETWEEN %lld AND %lld",
			 (long long)in->host_lo, (long long)in->host_hi,
			 (long long)in->host_lo, (long long)in->host_hi) < 0)
			return -1;
		if (dup)
			return jfail(j, "%s holds a host that another input holds too: join databases of different hosts",
				     in->path);
		in->lo = INT64_MIN;
		in->hi = INT64_MAX;
	}
	return 0;
}

static int input_of_host(const struct join *j, int64_t host)
{
	for (int i = 0; i < j->nin; i++)
		if (host >= j->in[i].host_lo && host <= j->in[i].host_hi)
			return i;
	return -1;
}

static int lend_cmp(const void *a, const void *b)
{
	const struct lend *x = a, *y = b;
	int c = strcmp(x->link, y->link);
	if (c)
		return c;
	if (x->server != y->server)
		return x->server - y->server;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int load_links(struct join *j)
{
	sqlite3_stmt *q;
	size_t cap = 0;

	q = rc_sql_prep(&j->x,
		"SELECT l.link, s.span_id, s.request_id, s.start_ns, s.end_ns,\n"
		"  s.host_id, s.kind = 'server' FROM span_links l\n"
		"JOIN spans s ON s.span_id = l.span_id\n"
		"WHERE s.request_id IS NOT NULL AND s.start_ns IS NOT NULL");
	if (!q)
		return -1;
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (j->ne == cap) {
			size_t n = cap ? cap * 2 : 1024;
			struct lend *ne = realloc(j->e, n * sizeof *ne);
			if (!ne)
				break;
			j->e = ne;
			cap = n;
		}
		struct lend *e = &j->e[j->ne];
		e->link = strdup((const char *)sqlite3_column_text(q, 0));
		if (!e->link)
			break;
		e->span = sqlite3_column_int64(q, 1);
		e->req = sqlite3_column_int64(q, 2);
		e->start = sqlite3_column_int64(q, 3);
		e->end = sqlite3_column_type(q, 4) == SQLITE_NULL ? INT64_MIN :
			 sqlite3_column_int64(q, 4);
		e->input = input_of_host(j, sqlite3_column_int64(q, 5));
		e->server = sqlite3_column_int(q, 6);
		j->ne++;
	}
	sqlite3_finalize(q);
	if (rc != SQLITE_DONE && !j->x.failed)
		return jfail(j, "reading span_links: out of memory or %s",
			     sqlite3_errmsg(j->h));
	qsort(j->e, j->ne, sizeof *j->e, lend_cmp);
	return 0;
}

/* The group of link ends from E[*I] on with its link: [*I, end) with
 * clients first; *NC clients. */
static size_t link_group(const struct join *j, size_t i, size_t *nc)
{
	size_t k = i;
	*nc = 0;
	while (k < j->ne && !strcmp(j->e[k].link, j->e[i].link)) {
		if (!j->e[k].server)
			(*nc)++;
		k++;
	}
	return k;
}

/* Bound input S's offset with the pair client C (input aligned), server
 * V (input S), or the other way round. */
static void bound(struct input *s, const struct lend *c, const struct lend *v,
		  const struct join *j, int server_in_s)
{
	int64_t lo, hi = INT64_MAX;
	if (server_in_s) {
		int64_t cd = j->in[c->input].d;
		lo = c->start + cd - v->start;
		if (c->end != INT64_MIN && v->end != INT64_MIN)
			hi = c->end + cd - v->end;
	} else {
		int64_t vd = j->in[v->input].d;
		hi = v->start + vd - c->start;
		lo = INT64_MIN;
		if (c->end != INT64_MIN && v->end != INT64_MIN)
			lo = v->end + vd - c->end;
	}
	if (lo > s->lo)
		s->lo = lo;
	if (hi < s->hi)
		s->hi = hi;
	s->samples++;
}

/* Move every input's times by its offset: one pass per table. */
static int shift_times(struct join *j)
{
	sqlite3_stmt *ins;
	int any = 0;

	if (jexec(j, "CREATE TEMP TABLE hoff(lo INTEGER, hi INTEGER, d INTEGER)") < 0 ||
	    !(ins = rc_sql_prep(&j->x, "INSERT INTO temp.hoff VALUES(?1, ?2, ?3)")))
		return -1;
	for (int i = 0; i < j->nin; i++) {
		if (!j->in[i].d)
			continue;
		any = 1;
		sqlite3_bind_int64(ins, 1, j->in[i].host_lo);
		sqlite3_bind_int64(ins, 2, j->in[i].host_hi);
		sqlite3_bind_int64(ins, 3, j->in[i].d);
		int r = sqlite3_step(ins);
		sqlite3_reset(ins);
		if (r != SQLITE_DONE) {
			sqlite3_finalize(ins);
			return rc_sql_fail_db(&j->x, "hoff");
		}
	}
	sqlite3_finalize(ins);
	for (size_t t = 0; any && t < sizeof time_cols / sizeof *time_cols; t++) {
		const char *tb = time_cols[t].table, *a = time_cols[t].cols[0],
			   *b = time_cols[t].cols[1] ? time_cols[t].cols[1] : a;
		/* (b = a when the table has one time: set twice, the same) */
		if (jexec(j, "UPDATE \"%w\" SET \"%w\" = \"%w\" + o.d, \"%w\" = \"%w\" + o.d"
			  " FROM temp.hoff o WHERE \"%w\".host_id BETWEEN o.lo AND o.hi",
			  tb, a, a, b, b, tb) < 0)
			return -1;
	}
	return jexec(j, "DROP TABLE temp.hoff");
}

/*
 * Relate the clocks: from the first input, each input linked by
 * one-to-one links to inputs already placed gets the offset in the middle
 * of the bounds they give (docs/reconstruct.md); inputs no link reaches
 * keep their own wall clocks.
 */
static int clocks(struct join *j)
{
	int progress = 1;

	j->in[0].aligned = 1;
	while (progress) {
		/* one pass: every one-to-one link between an input placed
		 * and one not yet bounds the latter */
		progress = 0;
		for (size_t i = 0, k, nc; i < j->ne; i = k) {
			k = link_group(j, i, &nc);
			if (nc != 1 || k - i != 2)
				continue;
			const struct lend *c = &j->e[i], *v = &j->e[i + 1];
			if (c->input < 0 || v->input < 0 || c->input == v->input)
				continue;
			struct input *ci = &j->in[c->input], *vi = &j->in[v->input];
			if (ci->aligned && !vi->aligned)
				bound(vi, c, v, j, 1);
			else if (vi->aligned && !ci->aligned)
				bound(ci, c, v, j, 0);
		}
		for (int s = 1; s < j->nin; s++) {
			struct input *in = &j->in[s];
			if (in->aligned || !in->samples)
				continue;
			if (in->lo != INT64_MIN && in->hi != INT64_MAX)
				in->d = in->lo / 2 + in->hi / 2;
			else
				in->d = in->lo != INT64_MIN ? in->lo : in->hi;
			if (in->lo > in->hi)
				j->inconsistent++;
			in->aligned = 1;
			progress = 1;
		}
	}
	if (shift_times(j) < 0)
		return -1;
	/* the hosts table: offsets to the first input's reference */
	int64_t rd0 = j->in[0].rd;
	for (int s = 1; s < j->nin; s++) {
		const struct input *in = &j->in[s];
		int64_t m = in->rd + in->d - rd0;
		if (jexec(j, "UPDATE hosts SET offset_ns = offset_ns + %lld,"
			  " correction_ns = COALESCE(correction_ns, 0) + %lld"
			  " WHERE host_id BETWEEN %lld AND %lld",
			  (long long)m, (long long)in->d, (long long)in->host_lo,
			  (long long)in->host_hi) < 0)
			return -1;
		if (!in->samples) {
			if (jexec(j, "UPDATE hosts SET method = 'realtime', lo_ns = NULL,"
				  " hi_ns = NULL, samples = 0 WHERE host_id = %lld",
				  (long long)in->host_lo) < 0)
				return -1;
			continue;
		}
		char lo[32] = "NULL", hi[32] = "NULL";
		if (in->lo != INT64_MIN)
			snprintf(lo, sizeof lo, "%lld", (long long)(in->rd + in->lo - rd0));
		if (in->hi != INT64_MAX)
			snprintf(hi, sizeof hi, "%lld", (long long)(in->rd + in->hi - rd0));
		if (jexec(j, "UPDATE hosts SET method = 'links', lo_ns = %s,"
			  " hi_ns = %s, samples = %lld WHERE host_id = %lld"
			  " AND reference_of_input", lo, hi,
			  (long long)in->samples, (long long)in->host_lo) < 0)
			return -1;
	}
	return 0;
}

static int64_t uf_find(struct join *j, int64_t r)
{
	while (j->uf[r] != r) {
		j->uf[r] = j->uf[j->uf[r]];
		r = j->uf[r];
	}
	return r;
}

/* Mark span SPAN uncertain, 'join:ambiguous'. */
static int mark_ambiguous(struct join *j, int64_t span)
{
	j->ambiguous++;
	return jexec(j, "UPDATE spans SET certainty = 'uncertain',"
		     " certainty_reason = 'join:ambiguous' WHERE span_id = %lld",
		     (long long)span);
}

static int link_pair(struct join *j, sqlite3_stmt *up, const struct lend *c,
		     const struct lend *v)
{
	sqlite3_bind_int64(up, 1, c->span);
	sqlite3_bind_int64(up, 2, v->span);
	int r = sqlite3_step(up);
	sqlite3_reset(up);
	if (r != SQLITE_DONE)
		return rc_sql_fail_db(&j->x, "spans");
	int64_t a = uf_find(j, c->req), b = uf_find(j, v->req);
	if (a != b)
		j->uf[b] = a;
	j->links++;
	return 0;
}

/* Do the ends of group [I, K) (NC clients first) pair one to one, k-th
 * client with k-th server by start, each server inside its client? */
static int group_fits(const struct join *j, size_t i, size_t k, size_t nc)
{
	if (nc * 2 != k - i)
		return 0;
	for (size_t n = 0; n < nc; n++) {
		const struct lend *c = &j->e[i + n], *v = &j->e[i + nc + n];
		int64_t cs = c->start + j->in[c->input].d;
		int64_t vs = v->start + j->in[v->input].d;
		if (c->input == v->input || vs + JOIN_TOL_NS < cs)
			return 0;
		if (c->end != INT64_MIN && v->end != INT64_MIN &&
		    v->end + j->in[v->input].d > c->end + j->in[c->input].d +
		    JOIN_TOL_NS)
			return 0;
		if (n + 1 < nc && j->e[i + n + 1].start + j->in[j->e[i + n + 1].input].d <
		    (c->end == INT64_MIN ? cs : c->end + j->in[c->input].d))
			return 0;           /* the connections overlap in time */
	}
	return 1;
}

static int pair_links(struct join *j)
{
	sqlite3_stmt *up;

	if (jint(j, &j->nreq, "SELECT COALESCE(MAX(request_id), 0) FROM requests") < 0)
		return -1;
	j->uf = malloc((size_t)(j->nreq + 1) * sizeof *j->uf);
	if (!j->uf)
		return jfail(j, "out of memory (%lld requests)", (long long)j->nreq);
	for (int64_t r = 0; r <= j->nreq; r++)
		j->uf[r] = r;
	up = rc_sql_prep(&j->x, "UPDATE spans SET parent_span_id = ?1 WHERE span_id = ?2");
	if (!up)
		return -1;
	for (size_t i = 0, k, nc; i < j->ne && !j->x.failed; i = k) {
		k = link_group(j, i, &nc);
		if (nc == 0 || nc == k - i) {
			j->unmatched += k - i;   /* the other end is not here */
			continue;
		}
		if (group_fits(j, i, k, nc)) {
			for (size_t n = 0; n < nc; n++)
				link_pair(j, up, &j->e[i + n], &j->e[i + nc + n]);
			continue;
		}
		for (size_t n = i; n < k; n++)
			mark_ambiguous(j, j->e[n].span);
	}
	sqlite3_finalize(up);
	if (j->x.failed)
		return -1;
	/* one request per linked tree */
	if (jexec(j, "CREATE TEMP TABLE remap(old INTEGER PRIMARY KEY, new INTEGER)") < 0)
		return -1;
	up = rc_sql_prep(&j->x, "INSERT INTO temp.remap VALUES(?1, ?2)");
	if (!up)
		return -1;
	for (int64_t r = 1; r <= j->nreq; r++) {
		int64_t f = uf_find(j, r);
		if (f == r)
			continue;
		sqlite3_bind_int64(up, 1, r);
		sqlite3_bind_int64(up, 2, f);
		int s = sqlite3_step(up);
		sqlite3_reset(up);
		if (s != SQLITE_DONE) {
			sqlite3_finalize(up);
			return rc_sql_fail_db(&j->x, "remap");
		}
	}
	sqlite3_finalize(up);
	for (size_t t = 0; t < sizeof req_tables / sizeof *req_tables; t++)
		if (jexec(j, "UPDATE \"%w\" SET request_id = r.new FROM temp.remap r"
			  " WHERE r.old = \"%w\".request_id", req_tables[t],
			  req_tables[t]) < 0)
			return -1;
	return jexec(j, "DELETE FROM requests WHERE request_id IN"
		     " (SELECT old FROM temp.remap); DROP TABLE temp.remap");
}

/* The peers of TCP channels whose ends are both in the join (one
 * candidate only). */
static const char peers_sql[] =
	"CREATE TEMP TABLE ends AS SELECT channel_id, host_id, local, remote\n"
	"  FROM channels WHERE kind = 'tcp' AND NOT traced_peer\n"
	"  AND local IS NOT NULL AND remote IS NOT NULL;\n"
	"CREATE INDEX temp.ends_addr ON ends(local, remote);\n"
	"CREATE TEMP TABLE peer AS SELECT a.channel_id AS id,\n"
	"  MIN(b.channel_id) AS peer, COUNT(*) AS n FROM ends a JOIN ends b\n"
	"  ON b.local = a.remote AND b.remote = a.local AND b.host_id <> a.host_id\n"
	"  GROUP BY a.channel_id;\n"
	"UPDATE channels SET traced_peer = 1, peer_channel_id = p.peer\n"
	"  FROM temp.peer p WHERE p.id = channels.channel_id AND p.n = 1;\n"
	"DROP TABLE temp.peer; DROP TABLE temp.ends;\n";

/* What the inputs' own patterns and views were: made again. */
static int drop_derived(struct join *j)
{
	sqlite3_stmt *q;
	char *drops = NULL;

	q = rc_sql_prep(&j->x, "SELECT type, name FROM sqlite_master"
			" WHERE type = 'view' OR (type = 'table' AND name IN"
			" ('patterns', 'pattern_nodes', 'span_patterns',"
			" 'script_extensions')) OR (type = 'index' AND name IN"
			" ('requests_pattern'))");
	if (!q)
		return -1;
	while (sqlite3_step(q) == SQLITE_ROW)
		drops = sqlite3_mprintf("%z DROP %s IF EXISTS \"%w\";", drops,
					(const char *)sqlite3_column_text(q, 0),
					(const char *)sqlite3_column_text(q, 1));
	sqlite3_finalize(q);
	if (drops && jexec(j, "%s", drops) < 0) {
		sqlite3_free(drops);
		return -1;
	}
	sqlite3_free(drops);
	int64_t has = 0;
	if (jint(j, &has, "SELECT COUNT(*) FROM pragma_table_info('requests')"
		 " WHERE name = 'pattern_id'") < 0)
		return -1;
	return has ? jexec(j, "ALTER TABLE requests DROP COLUMN pattern_id") : 0;
}

static const char stats_sql[] =
	"INSERT OR REPLACE INTO stats VALUES('requests',\n"
	"  (SELECT COUNT(*) FROM requests));\n"
	"INSERT OR REPLACE INTO stats VALUES('spans', (SELECT COUNT(*) FROM spans));\n"
	"INSERT OR REPLACE INTO stats VALUES('requests_exact',\n"
	"  (SELECT COUNT(*) FROM requests WHERE certainty = 'exact'));\n"
	"INSERT OR REPLACE INTO stats VALUES('requests_resolved',\n"
	"  (SELECT COUNT(*) FROM requests WHERE certainty = 'resolved'));\n"
	"INSERT OR REPLACE INTO stats VALUES('requests_uncertain',\n"
	"  (SELECT COUNT(*) FROM requests WHERE certainty = 'uncertain'));\n"
	"INSERT OR REPLACE INTO stats VALUES('hosts', (SELECT COUNT(*) FROM hosts));\n"
	"INSERT OR REPLACE INTO stats VALUES('span_links',\n"
	"  (SELECT COUNT(*) FROM span_links));\n";

/* The first input's indexes, dropped while the rows go in (kept in
 * *SAVED, to be run again). */
static int indexes_drop(struct join *j, char **saved)
{
	sqlite3_stmt *q;
	char *drops = NULL;

	*saved = NULL;
	q = rc_sql_prep(&j->x, "SELECT name, sql FROM sqlite_master"
			" WHERE type = 'index' AND sql IS NOT NULL");
	if (!q)
		return -1;
	while (sqlite3_step(q) == SQLITE_ROW) {
		drops = sqlite3_mprintf("%z DROP INDEX \"%w\";", drops,
					(const char *)sqlite3_column_text(q, 0));
		*saved = sqlite3_mprintf("%z%s;\n", *saved,
					 (const char *)sqlite3_column_text(q, 1));
		if (!drops || !*saved)
			break;
	}
	sqlite3_finalize(q);
	int r = drops ? jexec(j, "%s", drops) : 0;
	sqlite3_free(drops);
	return r;
}

static int join_rows(struct join *j, const char *tmp, char **indexes);

static int join_run(struct join *j, const char *tmp)
{
	char *indexes = NULL;
	int r = join_rows(j, tmp, &indexes);
	sqlite3_free(indexes);
	return r;
}

static int join_rows(struct join *j, const char *tmp, char **indexes)
{
	sqlite3 *src = NULL;
	sqlite3_backup *b;
	int r;

	/* the first input, whole, is where the others go */
	if (sqlite3_open_v2(j->in[0].path, &src, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		jfail(j, "cannot open %s: %s", j->in[0].path,
		      src ? sqlite3_errmsg(src) : "out of memory");
		sqlite3_close(src);
		return RC_EXIT_INPUT;
	}
	if (sqlite3_open(tmp, &j->h) != SQLITE_OK) {
		sqlite3_close(src);
		jfail(j, "cannot create %s: %s", tmp,
		      j->h ? sqlite3_errmsg(j->h) : "out of memory");
		return RC_EXIT_OUTPUT;
	}
	j->x.h = j->h;
	b = sqlite3_backup_init(j->h, "main", src, "main");
	r = b ? sqlite3_backup_step(b, -1) : SQLITE_ERROR;
	if (b)
		sqlite3_backup_finish(b);
	if (r != SQLITE_DONE) {
		jfail(j, "cannot copy %s to %s: %s", j->in[0].path, tmp,
		      sqlite3_errmsg(b ? j->h : src));
		sqlite3_close(src);
		return RC_EXIT_OUTPUT;
	}
	sqlite3_close(src);
	if (check_input(j, "main", j->in[0].path) < 0)
		return RC_EXIT_INPUT;
	if (indexes_drop(j, indexes) < 0)
		return RC_EXIT_OUTPUT;
	if (jexec(j, "PRAGMA synchronous = OFF; PRAGMA journal_mode = OFF;"
		  " PRAGMA temp_store = FILE") < 0)
		return RC_EXIT_OUTPUT;
	j->in[0].host_lo = 1;
	if (jint(j, &j->in[0].host_hi, "SELECT MAX(host_id) FROM hosts") < 0)
		return RC_EXIT_OUTPUT;
	for (int i = 1; i < j->nin; i++)
		if (add_input(j, i) < 0)
			return RC_EXIT_INPUT;
	if (jexec(j, "BEGIN") < 0)
		return RC_EXIT_OUTPUT;
	/* the reference of each input (its row with offset 0) */
	if (jexec(j, "ALTER TABLE hosts ADD COLUMN reference_of_input INTEGER") < 0)
		return RC_EXIT_OUTPUT;
	for (int i = 0; i < j->nin; i++)
		if (jexec(j, "UPDATE hosts SET reference_of_input = 1 WHERE host_id ="
			  " (SELECT host_id FROM hosts WHERE host_id BETWEEN %lld AND %lld"
			  " ORDER BY offset_ns = 0 DESC, events DESC LIMIT 1)",
			  (long long)j->in[i].host_lo, (long long)j->in[i].host_hi) < 0)
			return RC_EXIT_OUTPUT;
	if (input_hosts(j) < 0)
		return RC_EXIT_INPUT;
	if (load_links(j) < 0 || clocks(j) < 0 ||
	    pair_links(j) < 0 || jexec(j, "%s", peers_sql) < 0 ||
	    (*indexes && jexec(j, "%s", *indexes) < 0) ||
	    jexec(j, "ALTER TABLE hosts DROP COLUMN reference_of_input") < 0)
		return RC_EXIT_OUTPUT;
	if (rc_db_certainty_apply(j->h, j->err, sizeof j->err) < 0) {
		j->x.failed = 1;
		return RC_EXIT_OUTPUT;
	}
	if (drop_derived(j) < 0)
		return RC_EXIT_OUTPUT;
	if (rc_patterns_build(j->h, j->err, sizeof j->err) < 0 ||
	    rc_views_create(j->h, j->err, sizeof j->err) < 0) {
		j->x.failed = 1;
		return RC_EXIT_OUTPUT;
	}
	if (jexec(j, "%s", stats_sql) < 0 ||
	    jexec(j, "INSERT OR REPLACE INTO stats VALUES('join_inputs', %d);"
		  " INSERT OR REPLACE INTO stats VALUES('join_links', %llu);"
		  " INSERT OR REPLACE INTO stats VALUES('join_ambiguous', %llu);"
		  " COMMIT", j->nin, (unsigned long long)j->links,
		  (unsigned long long)j->ambiguous) < 0)
		return RC_EXIT_OUTPUT;
	return RC_EXIT_OK;
}

static void summary(struct join *j)
{
	int64_t n = 0, ex = 0, rs = 0, un = 0, sp = 0;

	jint(j, &n, "SELECT COUNT(*) FROM requests");
	jint(j, &ex, "SELECT COUNT(*) FROM requests WHERE certainty = 'exact'");
	jint(j, &rs, "SELECT COUNT(*) FROM requests WHERE certainty = 'resolved'");
	jint(j, &un, "SELECT COUNT(*) FROM requests WHERE certainty = 'uncertain'");
	jint(j, &sp, "SELECT COUNT(*) FROM spans");
	for (int i = 1; i < j->nin; i++) {
		const struct input *in = &j->in[i];
		if (in->samples)
			fprintf(stderr, "bp-reconstruct: clock of %s: moved %+.3f ms (%lld links%s)\n",
				in->path, (double)in->d / 1e6, (long long)in->samples,
				in->lo > in->hi ? ", inconsistent bounds" : "");
		else
			fprintf(stderr, "bp-reconstruct: clock of %s: no link to the others, its own wall clock kept\n",
				in->path);
	}
	fprintf(stderr, "bp-reconstruct: joined %d databases: %lld requests (%lld exact, %lld resolved, %lld uncertain), %lld spans; %llu links across hosts, %llu spans ambiguous, %llu with no other end in the join\n",
		j->nin, (long long)n, (long long)ex, (long long)rs,
		(long long)un, (long long)sp, (unsigned long long)j->links,
		(unsigned long long)j->ambiguous,
		(unsigned long long)j->unmatched);
}

int rc_join(const struct rc_join_opts *o)
{
	struct join j;
	char tmp[4096];
	int r;

	memset(&j, 0, sizeof j);
	j.x.who = NULL;
	j.x.err = j.err;
	j.x.errlen = sizeof j.err;
	if (o->ninputs < 1) {
		fprintf(stderr, "bp-reconstruct: --join wants the databases to join\n");
		return RC_EXIT_USAGE;
	}
	if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp-%ld", o->output,
			     (long)getpid()) >= sizeof tmp) {
		fprintf(stderr, "bp-reconstruct: output name too long: %s\n", o->output);
		return RC_EXIT_USAGE;
	}
	j.nin = o->ninputs;
	j.in = calloc((size_t)j.nin, sizeof *j.in);
	if (!j.in) {
		fprintf(stderr, "bp-reconstruct: out of memory\n");
		return RC_EXIT_OUTPUT;
	}
	for (int i = 0; i < j.nin; i++) {
		j.in[i].path = o->inputs[i];
		if (access(o->inputs[i], R_OK) < 0) {
			fprintf(stderr, "bp-reconstruct: cannot read %s: %s\n",
				o->inputs[i], strerror(errno));
			free(j.in);
			return RC_EXIT_INPUT;
		}
	}
	unlink(tmp);
	r = join_run(&j, tmp);
	if (r == RC_EXIT_OK && !o->quiet)
		summary(&j);
	sqlite3_close(j.h);
	for (size_t i = 0; i < j.ne; i++)
		free(j.e[i].link);
	free(j.e);
	free(j.uf);
	free(j.in);
	if (r != RC_EXIT_OK) {
		fprintf(stderr, "bp-reconstruct: --join: %s\n",
			j.err[0] ? j.err : "failed");
		unlink(tmp);
		return r;
	}
	if (rename(tmp, o->output) < 0) {
		fprintf(stderr, "bp-reconstruct: cannot rename %s to %s: %s\n",
			tmp, o->output, strerror(errno));
		unlink(tmp);
		return RC_EXIT_OUTPUT;
	}
	return RC_EXIT_OK;
}
