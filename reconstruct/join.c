/*
 * join.c - host-local databases and their join (see join.h).
 *
 * Two passes over the inputs, each attached in turn.  The first reads
 * what the join decides from: each input's largest ids (so the ids its
 * rows will have in the output are known before any is written), its
 * hosts and its link ends; then the links are paired, the clocks
 * related and the requests merged, in memory.  The second appends every
 * input's rows to OUTPUT.tmp-PID once, transformed on the way: ids moved
 * past the inputs before, times moved by the input's clock offset, a
 * linked server span put under its client span, merged requests renamed
 * (and their rows in requests left out), ambiguous spans marked.  Then
 * the indexes, certainty, patterns and views, as the writer makes them.
 * Memory: the link ends and one request id per request (union-find).
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

/* Id families: a column holding an id of the family is moved by the
 * family's offset when its input's rows are appended. */
enum fam { F_REQ, F_SPAN, F_MSG, F_FRAG, F_FILE, F_PROC, F_CHAN, F_CONN,
	   F_HOST, F_WARN, F_N };

static const char *const fam_max[F_N] = {
	"SELECT COALESCE(MAX(request_id), 0) FROM src.requests",
	"SELECT COALESCE(MAX(span_id), 0) FROM src.spans",
	"SELECT COALESCE(MAX(message_id), 0) FROM src.messages",
	"SELECT COALESCE(MAX(fragment_id), 0) FROM src.fragments",
	"SELECT COALESCE(MAX(file_id), 0) FROM src.files",
	"SELECT COALESCE(MAX(process_id), 0) FROM src.processes",
	"SELECT COALESCE(MAX(channel_id), 0) FROM src.channels",
	"SELECT COALESCE(MAX(conn_id), 0) FROM src.channels",
	"SELECT COALESCE(MAX(host_id), 0) FROM src.hosts",
	"SELECT COALESCE(MAX(warning_id), 0) FROM src.warnings",
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
	"span_links", "stats",
};

/* The times moved by an input's clock offset. */
static const struct { const char *table, *col; } time_cols[] = {
	{ "requests", "start_ns" }, { "requests", "end_ns" },
	{ "spans", "start_ns" }, { "spans", "end_ns" },
	{ "messages", "begin_ns" }, { "messages", "ts_ns" },
	{ "fragments", "start_ns" }, { "fragments", "end_ns" },
	{ "files", "ts_ns" },
	{ "processes", "start_ns" }, { "processes", "end_ns" },
	{ "channels", "open_ns" }, { "channels", "close_ns" },
};

struct input {
	const char *path;
	int64_t max[F_N];            /* its largest ids */
	int64_t off[F_N];            /* what its ids are moved by */
	int64_t ref_host;            /* its reference host, as in the output */
	int64_t rd;                  /* that host's wall - monotonic clock */
	int     aligned;
	int64_t d;                   /* how far its times are moved */
	int64_t lo, hi;              /* bounds on d (INT64_MIN/MAX: none) */
	int64_t samples;
	char  **hosts;               /* its host names */
	int     nhosts;
};

/* A span of span_links, with what the pairing needs (ids as in the
 * output, times as in its input). */
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
	char *schema;                /* CREATE TABLE of the row tables */
	char *indexes;               /* CREATE INDEX of the first input */
	struct lend *e;
	size_t ne, cap;
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

/*
 * The statements below are formatted by sqlite3_vmprintf (%Q, %w: not
 * checked as printf's): what they do with the SQL text, JX_*.
 */
enum { JX_EXEC, JX_INT, JX_PREP };

static int jsql(struct join *j, int what, int64_t *v, sqlite3_stmt **q,
		const char *fmt, va_list ap)
{
	char *sql = sqlite3_vmprintf(fmt, ap);
	int r;

	if (!sql)
		return jfail(j, "out of memory");
	if (what == JX_EXEC)
		r = rc_sql_exec(&j->x, sql);
	else if (what == JX_INT)
		r = one_int(j->h, sql, v) < 0 ? rc_sql_fail_db(&j->x, "query") : 0;
	else
		r = (*q = rc_sql_prep(&j->x, sql)) ? 0 : -1;
	sqlite3_free(sql);
	return r;
}

/* Run the statements FMT. */
static int jexec(struct join *j, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = jsql(j, JX_EXEC, NULL, NULL, fmt, ap);
	va_end(ap);
	return r;
}

/* The integer the query FMT answers, in *V. */
static int jint(struct join *j, int64_t *v, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = jsql(j, JX_INT, v, NULL, fmt, ap);
	va_end(ap);
	return r;
}

/* Prepare FMT; NULL on error. */
static sqlite3_stmt *jprep(struct join *j, const char *fmt, ...)
{
	va_list ap;
	sqlite3_stmt *q = NULL;
	va_start(ap, fmt);
	jsql(j, JX_PREP, NULL, &q, fmt, ap);
	va_end(ap);
	return q;
}

/* Is src.TABLE there? */
static int has_table(struct join *j, const char *table)
{
	int64_t n = 0;
	if (jint(j, &n, "SELECT COUNT(*) FROM src.sqlite_master"
		 " WHERE type = 'table' AND name = %Q", table) < 0)
		return -1;
	return n > 0;
}

/* Input I, attached as src, must be a host-local database of this
 * version; the first one's schema is kept. */
static int check_input(struct join *j, int i)
{
	const char *path = j->in[i].path;
	int r = has_table(j, "span_links");
	if (r < 0)
		return -1;
	if (!r || has_table(j, "requests") != 1)
		return jfail(j, "%s is not a database of bp-reconstruct --host-local (no span_links table): reconstruct each host's logs with --host-local first",
			     path);
	int64_t v = 0;
	if (jint(j, &v, "SELECT COALESCE((SELECT value FROM src.stats WHERE"
		 " key = 'schema_version'), 0)") < 0)
		return -1;
	if (v != RC_SCHEMA_VERSION)
		return jfail(j, "%s was written by another version of bp-reconstruct (schema %" PRId64 ", this one writes %d): reconstruct it again",
			     path, v, RC_SCHEMA_VERSION);
	return 0;
}

/* The first input's tables and indexes, to make the output's. */
static int keep_schema(struct join *j)
{
	sqlite3_stmt *q = jprep(j, "SELECT type, sql FROM src.sqlite_master"
		" WHERE sql IS NOT NULL AND ((type = 'table' AND name IN"
		" ('requests', 'spans', 'span_candidates', 'messages', 'attrs',"
		" 'fragments', 'files', 'processes', 'channels', 'hosts',"
		" 'warnings', 'span_links', 'stats')) OR (type = 'index' AND"
		" tbl_name NOT IN ('patterns', 'pattern_nodes', 'span_patterns',"
		" 'script_extensions') AND name <> 'requests_pattern'))");
	if (!q)
		return -1;
	while (sqlite3_step(q) == SQLITE_ROW) {
		char **to = !strcmp((const char *)sqlite3_column_text(q, 0),
				    "table") ? &j->schema : &j->indexes;
		*to = sqlite3_mprintf("%z%s;\n", *to,
				      (const char *)sqlite3_column_text(q, 1));
		if (!*to) {
			sqlite3_finalize(q);
			return jfail(j, "out of memory");
		}
	}
	sqlite3_finalize(q);
	return 0;
}

static int add_end(struct join *j, const struct lend *e)
{
	if (j->ne == j->cap) {
		size_t n = j->cap ? j->cap * 2 : 1024;
		struct lend *ne = realloc(j->e, n * sizeof *ne);
		if (!ne)
			return jfail(j, "out of memory (%zu link ends)", j->ne);
		j->e = ne;
		j->cap = n;
	}
	j->e[j->ne] = *e;
	if (!(j->e[j->ne].link = strdup(e->link)))
		return jfail(j, "out of memory (%zu link ends)", j->ne);
	j->ne++;
	return 0;
}

/* Input I's link ends, ids as they will be in the output. */
static int load_links(struct join *j, int i)
{
	const struct input *in = &j->in[i];
	sqlite3_stmt *q;
	int rc;

	q = jprep(j, "SELECT l.link, s.span_id, s.request_id, s.start_ns,"
		  " s.end_ns, s.kind = 'server' FROM src.span_links l"
		  " JOIN src.spans s ON s.span_id = l.span_id"
		  " WHERE s.request_id IS NOT NULL AND s.start_ns IS NOT NULL");
	if (!q)
		return -1;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct lend e = {
			.link = (char *)sqlite3_column_text(q, 0),
			.span = sqlite3_column_int64(q, 1) + in->off[F_SPAN],
			.req = sqlite3_column_int64(q, 2) + in->off[F_REQ],
			.start = sqlite3_column_int64(q, 3),
			.end = sqlite3_column_type(q, 4) == SQLITE_NULL ?
			       INT64_MIN : sqlite3_column_int64(q, 4),
			.input = i, .server = sqlite3_column_int(q, 5),
		};
		if (!e.link || add_end(j, &e) < 0) {
			sqlite3_finalize(q);
			return jfail(j, "out of memory");
		}
	}
	sqlite3_finalize(q);
	if (rc != SQLITE_DONE)
		return rc_sql_fail_db(&j->x, "span_links");
	return 0;
}

/* Input I's hosts: its reference's clock, and no host in two inputs. */
static int load_hosts(struct join *j, int i)
{
	struct input *in = &j->in[i];
	sqlite3_stmt *q;

	if (jint(j, &in->ref_host, "SELECT COALESCE((SELECT host_id FROM"
		 " src.hosts ORDER BY reference DESC, host_id LIMIT 1), 1)") < 0 ||
	    jint(j, &in->rd, "SELECT COALESCE((SELECT realtime_delta_ns FROM"
		 " src.hosts WHERE host_id = %lld), 0)", (long long)in->ref_host) < 0)
		return -1;
	in->ref_host += in->off[F_HOST];
	if (!(q = jprep(j, "SELECT DISTINCT name FROM src.hosts")))
		return -1;
	while (sqlite3_step(q) == SQLITE_ROW) {
		const char *n = (const char *)sqlite3_column_text(q, 0);
		if (!n)
			continue;
		for (int k = 0; k < i; k++)
			for (int m = 0; m < j->in[k].nhosts; m++)
				if (!strcmp(j->in[k].hosts[m], n)) {
					jfail(j, "%s holds a host that another input holds too (%s, also in %s): join databases of different hosts",
					      in->path, n, j->in[k].path);
					sqlite3_finalize(q);
					return -1;
				}
		char **nh = realloc(in->hosts, (size_t)(in->nhosts + 1) * sizeof *nh);
		if (!nh || !(nh[in->nhosts] = strdup(n))) {
			if (nh)
				in->hosts = nh;
			sqlite3_finalize(q);
			return jfail(j, "out of memory");
		}
		in->hosts = nh;
		in->nhosts++;
	}
	sqlite3_finalize(q);
	in->lo = INT64_MIN;
	in->hi = INT64_MAX;
	return 0;
}

static int attach(struct join *j, int i)
{
	if (jexec(j, "ATTACH %Q AS src", j->in[i].path) < 0)
		return jfail(j, "cannot open %s: %s", j->in[i].path, j->err);
	return 0;
}

static void detach(struct join *j)
{
	sqlite3_exec(j->h, "DETACH src", NULL, NULL, NULL);
}

/* The first pass: ids, hosts and link ends of every input. */
static int survey(struct join *j)
{
	for (int i = 0; i < j->nin; i++) {
		struct input *in = &j->in[i];
		if (attach(j, i) < 0)
			return -1;
		int r = check_input(j, i);
		if (!r && i == 0)
			r = keep_schema(j);
		for (int f = 0; f < F_N && !r; f++)
			r = jint(j, &in->max[f], "%s", fam_max[f]);
		for (int f = 0; f < F_N && !r && i > 0; f++)
			in->off[f] = j->in[i - 1].off[f] + j->in[i - 1].max[f];
		if (!r)
			r = load_hosts(j, i);
		if (!r)
			r = load_links(j, i);
		detach(j);
		if (r < 0)
			return -1;
	}
	return 0;
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

/* The group of link ends from E[I] on with its link: [I, end) with
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

/* Bound input S's offset with the pair client C, server V: one of them
 * in S, the other in an input placed already. */
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

/*
 * Relate the clocks: from the first input, in rounds, each input linked
 * by one-to-one keys to inputs already placed gets the offset in the
 * middle of the bounds they give (docs/reconstruct.md); inputs no link
 * reaches keep their own wall clocks.
 */
static void clocks(struct join *j)
{
	int progress = 1;

	j->in[0].aligned = 1;
	while (progress) {
		progress = 0;
		for (size_t i = 0, k, nc; i < j->ne; i = k) {
			k = link_group(j, i, &nc);
			if (nc != 1 || k - i != 2)
				continue;
			const struct lend *c = &j->e[i], *v = &j->e[i + 1];
			if (c->input == v->input)
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
}

static int64_t uf_find(struct join *j, int64_t r)
{
	while (j->uf[r] != r) {
		j->uf[r] = j->uf[j->uf[r]];
		r = j->uf[r];
	}
	return r;
}

/* Do the ends of group [I, K) (NC clients first) pair one to one, k-th
 * client with k-th server by start, each server inside its client on the
 * estimated clocks, one connection after the other? */
static int group_fits(const struct join *j, size_t i, size_t k, size_t nc)
{
	if (nc * 2 != k - i)
		return 0;
	for (size_t n = 0; n < nc; n++) {
		const struct lend *c = &j->e[i + n], *v = &j->e[i + nc + n];
		int64_t cd = j->in[c->input].d, vd = j->in[v->input].d;
		if (c->input == v->input || v->start + vd + JOIN_TOL_NS < c->start + cd)
			return 0;
		if (c->end != INT64_MIN && v->end != INT64_MIN &&
		    v->end + vd > c->end + cd + JOIN_TOL_NS)
			return 0;
		if (n + 1 < nc) {
			const struct lend *c2 = &j->e[i + n + 1];
			int64_t last = c->end == INT64_MIN ? c->start : c->end;
			if (c2->start + j->in[c2->input].d < last + cd)
				return 0;   /* connections overlapping in time */
		}
	}
	return 1;
}

/* Pair the link ends into temp.link (server span -> client span) and
 * temp.amb (ambiguous spans), merge the requests into temp.remap. */
static int pair_links(struct join *j)
{
	sqlite3_stmt *ln, *am, *rm;

	j->nreq = j->in[j->nin - 1].off[F_REQ] + j->in[j->nin - 1].max[F_REQ];
	j->uf = malloc((size_t)(j->nreq + 1) * sizeof *j->uf);
	if (!j->uf)
		return jfail(j, "out of memory (%lld requests)", (long long)j->nreq);
	for (int64_t r = 0; r <= j->nreq; r++)
		j->uf[r] = r;
	if (jexec(j, "CREATE TEMP TABLE link(s INTEGER PRIMARY KEY, c INTEGER);"
		  " CREATE TEMP TABLE amb(span_id INTEGER PRIMARY KEY);"
		  " CREATE TEMP TABLE remap(old INTEGER PRIMARY KEY, new INTEGER)") < 0)
		return -1;
	ln = rc_sql_prep(&j->x, "INSERT INTO temp.link VALUES(?1, ?2)");
	am = rc_sql_prep(&j->x, "INSERT OR IGNORE INTO temp.amb VALUES(?1)");
	rm = rc_sql_prep(&j->x, "INSERT INTO temp.remap VALUES(?1, ?2)");
	for (size_t i = 0, k, nc; ln && am && rm && i < j->ne && !j->x.failed; i = k) {
		k = link_group(j, i, &nc);
		if (nc == 0 || nc == k - i) {
			j->unmatched += k - i;   /* the other end is not here */
			continue;
		}
		if (group_fits(j, i, k, nc)) {
			for (size_t n = 0; n < nc; n++) {
				const struct lend *c = &j->e[i + n], *v = &j->e[i + nc + n];
				sqlite3_bind_int64(ln, 1, v->span);
				sqlite3_bind_int64(ln, 2, c->span);
				if (sqlite3_step(ln) != SQLITE_DONE)
					rc_sql_fail_db(&j->x, "link");
				sqlite3_reset(ln);
				int64_t a = uf_find(j, c->req), b = uf_find(j, v->req);
				if (a != b)
					j->uf[b] = a;
				j->links++;
			}
			continue;
		}
		for (size_t n = i; n < k; n++) {
			sqlite3_bind_int64(am, 1, j->e[n].span);
			if (sqlite3_step(am) != SQLITE_DONE)
				rc_sql_fail_db(&j->x, "amb");
			sqlite3_reset(am);
			j->ambiguous++;
		}
	}
	for (int64_t r = 1; rm && r <= j->nreq && !j->x.failed; r++) {
		int64_t f = uf_find(j, r);
		if (f == r)
			continue;
		sqlite3_bind_int64(rm, 1, r);
		sqlite3_bind_int64(rm, 2, f);
		if (sqlite3_step(rm) != SQLITE_DONE)
			rc_sql_fail_db(&j->x, "remap");
		sqlite3_reset(rm);
	}
	sqlite3_finalize(ln);
	sqlite3_finalize(am);
	sqlite3_finalize(rm);
	return j->x.failed ? -1 : 0;
}

static int is_time(const char *t, const char *c)
{
	for (size_t i = 0; i < sizeof time_cols / sizeof *time_cols; i++)
		if (!strcmp(time_cols[i].table, t) && !strcmp(time_cols[i].col, c))
			return 1;
	return 0;
}

/* The expression that appends column C of table T of input IN. */
static char *col_expr(const struct input *in, int first, const char *t,
		      const char *c)
{
	for (size_t i = 0; i < sizeof id_cols / sizeof *id_cols; i++) {
		if (strcmp(c, id_cols[i].col))
			continue;
		long long o = (long long)in->off[id_cols[i].fam];
		if (id_cols[i].fam == F_REQ)
			return sqlite3_mprintf("COALESCE((SELECT new FROM temp.remap"
					       " WHERE old = \"%w\" + %lld), \"%w\" + %lld)",
					       c, o, c, o);
		if (!strcmp(t, "spans") && !strcmp(c, "parent_span_id"))
			return sqlite3_mprintf("COALESCE((SELECT c FROM temp.link"
					       " WHERE s = span_id + %lld), \"%w\" + %lld)",
					       o, c, o);
		return sqlite3_mprintf("\"%w\" + %lld", c, o);
	}
	if (is_time(t, c))
		return sqlite3_mprintf("\"%w\" + %lld", c, (long long)in->d);
	if (!strcmp(t, "hosts") && !strcmp(c, "reference"))
		return sqlite3_mprintf(first ? "reference" : "0");
	if (!strcmp(t, "spans") && !strcmp(c, "certainty"))
		return sqlite3_mprintf("CASE WHEN span_id + %lld IN temp.amb THEN"
				       " 'uncertain' ELSE certainty END",
				       (long long)in->off[F_SPAN]);
	if (!strcmp(t, "spans") && !strcmp(c, "certainty_reason"))
		return sqlite3_mprintf("CASE WHEN span_id + %lld IN temp.amb THEN"
				       " 'join:ambiguous' ELSE certainty_reason END",
				       (long long)in->off[F_SPAN]);
	return sqlite3_mprintf("\"%w\"", c);
}

/* Append table T of input I (attached as src), transformed. */
static int append_table(struct join *j, int i, const char *t)
{
	const struct input *in = &j->in[i];
	sqlite3_stmt *q;
	char *cols = NULL, *exprs = NULL;
	int r = -1;

	if (!strcmp(t, "stats"))
		return jexec(j, "INSERT INTO main.stats SELECT key, value FROM"
			     " src.stats WHERE key <> 'schema_version' OR %d"
			     " ON CONFLICT(key) DO UPDATE SET value = CASE key"
			     " WHEN 'schema_version' THEN value"
			     " ELSE value + excluded.value END", i == 0);
	if (!(q = jprep(j, "SELECT name FROM pragma_table_info(%Q, 'main')", t)))
		return -1;
	while (sqlite3_step(q) == SQLITE_ROW) {
		const char *c = (const char *)sqlite3_column_text(q, 0);
		if (!c)
			continue;
		char *e = col_expr(in, i == 0, t, c);
		if (!e)
			goto out;
		cols = sqlite3_mprintf("%z%s\"%w\"", cols, cols ? ", " : "", c);
		exprs = sqlite3_mprintf("%z%s%z", exprs, exprs ? ", " : "", e);
		if (!cols || !exprs)
			goto out;
	}
	if (!cols) {
		r = 0;
		goto out;
	}
	/* a merged request's row goes: the request it joined stays */
	if (!strcmp(t, "requests"))
		r = jexec(j, "INSERT INTO main.\"%w\"(%s) SELECT %s FROM src.\"%w\""
			  " WHERE request_id + %lld NOT IN (SELECT old FROM temp.remap)",
			  t, cols, exprs, t, (long long)in->off[F_REQ]);
	else
		r = jexec(j, "INSERT INTO main.\"%w\"(%s) SELECT %s FROM src.\"%w\"",
			  t, cols, exprs, t);
out:
	sqlite3_finalize(q);
	sqlite3_free(cols);
	sqlite3_free(exprs);
	if (r < 0 && !j->x.failed)
		jfail(j, "out of memory");
	return r;
}

/* The second pass: every input's rows, transformed. */
static int append(struct join *j)
{
	for (int i = 0; i < j->nin; i++) {
		if (attach(j, i) < 0)
			return -1;
		int r = jexec(j, "BEGIN");
		for (size_t t = 0; !r && t < sizeof row_tables / sizeof *row_tables; t++)
			r = append_table(j, i, row_tables[t]);
		if (!r)
			r = jexec(j, "COMMIT");
		else
			sqlite3_exec(j->h, "ROLLBACK", NULL, NULL, NULL);
		detach(j);
		if (r < 0)
			return -1;
	}
	return 0;
}

/* The hosts table: offsets to the first input's reference. */
static int hosts_update(struct join *j)
{
	int64_t rd0 = j->in[0].rd;

	for (int s = 1; s < j->nin; s++) {
		const struct input *in = &j->in[s];
		long long lo = in->off[F_HOST] + 1, hi = in->off[F_HOST] + in->max[F_HOST];
		if (jexec(j, "UPDATE hosts SET offset_ns = offset_ns + %lld,"
			  " correction_ns = COALESCE(correction_ns, 0) + %lld"
			  " WHERE host_id BETWEEN %lld AND %lld",
			  (long long)(in->rd + in->d - rd0), (long long)in->d,
			  lo, hi) < 0)
			return -1;
		if (!in->samples) {
			if (jexec(j, "UPDATE hosts SET method = 'realtime', lo_ns = NULL,"
				  " hi_ns = NULL, samples = 0 WHERE host_id = %lld",
				  (long long)in->ref_host) < 0)
				return -1;
			continue;
		}
		char l[32] = "NULL", h[32] = "NULL";
		if (in->lo != INT64_MIN)
			snprintf(l, sizeof l, "%lld", (long long)(in->rd + in->lo - rd0));
		if (in->hi != INT64_MAX)
			snprintf(h, sizeof h, "%lld", (long long)(in->rd + in->hi - rd0));
		if (jexec(j, "UPDATE hosts SET method = 'links', lo_ns = %s,"
			  " hi_ns = %s, samples = %lld WHERE host_id = %lld", l, h,
			  (long long)in->samples, (long long)in->ref_host) < 0)
			return -1;
	}
	return 0;
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
	"INSERT OR REPLACE INTO stats VALUES('span_links',\n"
	"  (SELECT COUNT(*) FROM span_links));\n";

static int join_run(struct join *j, const char *tmp)
{
	if (sqlite3_open(tmp, &j->h) != SQLITE_OK) {
		jfail(j, "cannot create %s: %s", tmp,
		      j->h ? sqlite3_errmsg(j->h) : "out of memory");
		return RC_EXIT_OUTPUT;
	}
	j->x.h = j->h;
	if (jexec(j, "PRAGMA synchronous = OFF; PRAGMA journal_mode = OFF;"
		  " PRAGMA temp_store = FILE; PRAGMA cache_size = -32768") < 0)
		return RC_EXIT_OUTPUT;
	if (survey(j) < 0)
		return RC_EXIT_INPUT;
	qsort(j->e, j->ne, sizeof *j->e, lend_cmp);
	clocks(j);
	/* the tables (as the first input has them, without the patterns'
	 * column: made again), the decisions, the rows */
	if (jexec(j, "%s", j->schema) < 0 ||
	    jexec(j, "ALTER TABLE requests DROP COLUMN pattern_id") < 0 ||
	    pair_links(j) < 0 || append(j) < 0)
		return RC_EXIT_OUTPUT;
	if (jexec(j, "BEGIN") < 0 || hosts_update(j) < 0 ||
	    (j->indexes && jexec(j, "%s", j->indexes) < 0) ||
	    jexec(j, "%s", peers_sql) < 0)
		return RC_EXIT_OUTPUT;
	if (rc_db_certainty_apply(j->h, j->err, sizeof j->err) < 0 ||
	    rc_patterns_build(j->h, j->err, sizeof j->err) < 0 ||
	    rc_views_create(j->h, j->err, sizeof j->err) < 0) {
		j->x.failed = 1;
		return RC_EXIT_OUTPUT;
	}
	if (jexec(j, "%s", stats_sql) < 0 ||
	    jexec(j, "INSERT OR REPLACE INTO stats VALUES('join_inputs', %d);"
		  " INSERT OR REPLACE INTO stats VALUES('join_links', %llu);"
		  " INSERT OR REPLACE INTO stats VALUES('join_ambiguous', %llu);"
		  " DROP TABLE temp.link; DROP TABLE temp.amb;"
		  " DROP TABLE temp.remap; COMMIT", j->nin,
		  (unsigned long long)j->links,
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
	fprintf(stderr, "bp-reconstruct: joined %d databases: %lld requests (%lld exact, %lld resolved, %lld uncertain), %lld spans; %llu links across hosts, %llu spans ambiguous, %llu whose other end is not in the join\n",
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
	for (int i = 0; i < j.nin; i++) {
		for (int k = 0; k < j.in[i].nhosts; k++)
			free(j.in[i].hosts[k]);
		free(j.in[i].hosts);
	}
	free(j.e);
	free(j.uf);
	free(j.in);
	sqlite3_free(j.schema);
	sqlite3_free(j.indexes);
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
