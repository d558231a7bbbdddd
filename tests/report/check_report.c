/*
 * check_report.c - the views and the path patterns of the paths database,
 * each on a scripted log whose answer is worked out by hand in the test
 * (timelines: tests/report/demo.h), and the normaliser of the patterns.
 *
 * CHECK_REPORT_KEEP=1 keeps each test's directory (logs, paths.db).
 */
#include "config.h"

#include <check.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "btrace/proto.h"
#include "demo.h"
#include "pattern_norm.h"
#include "patterns.h"
#include "recon.h"
#include "views.h"

#define US 1000ll                /* ns per us */

/* ---- a scratch database ------------------------------------------------------ */

struct db {
	char dir[256], logs[300], path[300], err[300];
	sqlite3 *h;
	struct rc_summary sum;
};

static void db_build(struct db *d, struct gen *g)
{
	const char *tmp = getenv("TMPDIR");
	memset(d, 0, sizeof *d);
	snprintf(d->dir, sizeof d->dir, "%s/check_report.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(d->dir));
	snprintf(d->logs, sizeof d->logs, "%s/logs", d->dir);
	snprintf(d->path, sizeof d->path, "%s/paths.db", d->dir);
	snprintf(d->err, sizeof d->err, "%s/stderr", d->dir);
	ck_assert_int_gt(gen_write(g, d->logs, NULL), 0);
	gen_free(g);
	const char *in[1] = { d->logs };
	FILE *err = fopen(d->err, "w");
	ck_assert_ptr_nonnull(err);
	struct rc_options o = { .inputs = in, .ninputs = 1, .output = d->path,
				.progress = 0, .max_warn_lines = 50, .err = err };
	int rc = rc_run(&o, &d->sum);
	fclose(err);
	ck_assert_int_eq(rc, RC_EXIT_OK);
	ck_assert_int_eq(d->sum.warnings, 0);
	ck_assert_int_eq(sqlite3_open_v2(d->path, &d->h, SQLITE_OPEN_READONLY,
					 NULL), SQLITE_OK);
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	return remove(p);
}

static void db_done(struct db *d)
{
	sqlite3_close(d->h);
	if (getenv("CHECK_REPORT_KEEP"))
		fprintf(stderr, "check_report: kept %s\n", d->dir);
	else
		nftw(d->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Every row of SQL, columns joined by '|', rows by '\n' ("NULL" for
 * NULL; reals that are whole printed as integers).  Valid until the next
 * call. */
static const char *q(struct db *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static const char *q(struct db *d, const char *fmt, ...)
{
	static char out[16384];
	char sql[4096];
	size_t n = 0;
	sqlite3_stmt *s;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	if (sqlite3_prepare_v2(d->h, sql, -1, &s, NULL) != SQLITE_OK)
		ck_abort_msg("bad test SQL %s: %s", sql, sqlite3_errmsg(d->h));
	out[0] = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		for (int i = 0; i < sqlite3_column_count(s); i++) {
			char v[1024];
			if (sqlite3_column_type(s, i) == SQLITE_NULL) {
				snprintf(v, sizeof v, "NULL");
			} else if (sqlite3_column_type(s, i) == SQLITE_FLOAT) {
				double x = sqlite3_column_double(s, i);
				if (x == (double)(long long)x)
					snprintf(v, sizeof v, "%lld", (long long)x);
				else
					snprintf(v, sizeof v, "%.3f", x);
			} else {
				snprintf(v, sizeof v, "%s", sqlite3_column_text(s, i));
			}
			n += (size_t)snprintf(out + n, sizeof out - n, "%s%s",
					      i ? "|" : "", v);
			ck_assert_uint_lt(n, sizeof out - 1);
		}
		n += (size_t)snprintf(out + n, sizeof out - n, "\n");
	}
	sqlite3_finalize(s);
	if (n && out[n - 1] == '\n')
		out[n - 1] = 0;
	return out;
}

static long long qi(struct db *d, const char *sql)
{
	const char *r = q(d, "%s", sql);
	ck_assert_msg(*r && strcmp(r, "NULL"), "no number from %s", sql);
	return strtoll(r, NULL, 10);
}

static struct demo_page page(const char *method, const char *target,
			     const char *client)
{
	struct demo_page p = { .method = method, .target = target,
			       .client = client, .status = 200 };
	return p;
}

/* ---- the normaliser ------------------------------------------------------------ */

START_TEST(norm_table)
{
	static const struct { int url; const char *in, *out; } t[] = {
		{ 1, "/item/17?v=3&ref=home", "/item/*?v=*&ref=*" },
		{ 1, "/products/42", "/products/*" },
		{ 1, "/api/v2/users/123e4567-e89b-12d3-a456-426614174000/x",
		  "/api/v2/users/*/x" },
		{ 1, "/static/app.3f9a2c1b.js", "/static/app.*.js" },
		{ 1, "/img/banner-3.jpg", "/img/banner-*.jpg" },
		{ 1, "/search?q=red%20chair", "/search?q=*" },
		{ 1, "/a?flag&b=", "/a?flag&b=" },
		{ 1, "/utf8/html5/oauth2", "/utf8/html5/oauth2" },
		{ 0, "SELECT * FROM t WHERE id = 42", "SELECT * FROM t WHERE id = ?" },
		{ 0, "SELECT * FROM t WHERE name = 'O''Brien' AND x = -1.5e3",
		  "SELECT * FROM t WHERE name = ? AND x = -?" },
		{ 0, "SELECT * FROM t WHERE id IN (1, 2, 3,4)",
		  "SELECT * FROM t WHERE id IN (?)" },
		{ 0, "SELECT  a,\n\tb FROM t2  ", "SELECT a, b FROM t2" },
		{ 0, "UPDATE t SET h = 0xDEADBEEF WHERE k = 'a\\'b'",
		  "UPDATE t SET h = ? WHERE k = ?" },
		{ 0, "SELECT \"col1\" FROM t1", "SELECT \"col1\" FROM t1" },
		{ 0, "REQ c1s3x5f2a 3", "REQ ? ?" },
		{ 0, "CALL c12s7x0a1b2c3d 0", "CALL ? ?" },
		{ 0, "GET deadbeef00", "GET ?" },
		{ 0, "md5 sha256 v2", "md5 ? v2" },
		{ 0, "", "" },
	};
	char out[256];
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		rc_pattern_norm(t[i].in, strlen(t[i].in), t[i].url, out, sizeof out);
		ck_assert_msg(!strcmp(out, t[i].out), "norm(%s) = '%s', wanted '%s'",
			      t[i].in, out, t[i].out);
	}
}
END_TEST

START_TEST(norm_limits)
{
	char big[2000], out[64];
	memset(big, 'a', sizeof big);
	size_t n = rc_pattern_norm(big, sizeof big, 0, out, sizeof out);
	ck_assert_uint_eq(n, strlen(out));
	ck_assert_uint_lt(n, sizeof out);
	ck_assert_str_eq(out + n - 3, "...");
	/* a cut never splits a UTF-8 character */
	for (size_t i = 0; i + 1 < sizeof big; i += 2) {
		big[i] = (char)0xc3;
		big[i + 1] = (char)0xa9;
	}
	n = rc_pattern_norm(big, sizeof big, 0, out, sizeof out);
	ck_assert_str_eq(out + n - 3, "...");
	ck_assert_int_ne((unsigned char)out[n - 4], 0xc3);
	/* control characters and NULs become spaces */
	n = rc_pattern_norm("a\0b\x01" "c", 5, 0, out, sizeof out);
	ck_assert_str_eq(out, "a b c");
	ck_assert_uint_eq(rc_pattern_norm("x", 1, 0, out, 4), 0);
}
END_TEST

/* ---- self time -------------------------------------------------------------------- */

/*
 * One PHP page with one query of 100 us (demo.h timeline, t = 100):
 *   nginx server http    [105, 295]  190, child fcgi [110, 290] -> self 10
 *   nginx client fastcgi [110, 290]  180, child php [115, 285] -> self 10
 *   php server fastcgi   [115, 285]  170, child pg  [120, 230] -> self 60
 *   php client pgsql     [120, 230]  110, child pg  [125, 225] -> self 10
 *   postgres server      [125, 225]  100                          self 100
 */
START_TEST(self_time_chain)
{
	struct db d;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct demo_chain *c = demo_chain(h, h, 0, 0);
	struct demo_query qs[] = { { "SELECT 1", 100, NULL } };
	struct demo_page p = page("GET", "/one.php", "203.0.113.1:4000");
	p.q = qs;
	p.nq = 1;
	p.php_us = 50;
	ck_assert_int_eq(demo_request(c, 100, &p), 295);
	demo_chain_free(c);
	db_build(&d, g);

	ck_assert_str_eq(q(&d, "SELECT service, kind, protocol, duration_ns / 1000, children_ns / 1000, self_ns / 1000 FROM span_self_time WHERE request_id IS NOT NULL ORDER BY start_ns"),
		"nginx|server|http|190|180|10\n"
		"nginx|client|fastcgi|180|170|10\n"
		"php-fpm8.2|server|fastcgi|170|110|60\n"
		"php-fpm8.2|client|postgresql|110|100|10\n"
		"postgres|server|postgresql|100|0|100");
	ck_assert_str_eq(q(&d, "SELECT service, pid, spans, self_ns / 1000, server_self_ns / 1000, client_self_ns / 1000 FROM self_time_per_process"),
		"postgres|3000|1|100|100|0\n"
		"php-fpm8.2|2000|2|70|60|10\n"
		"nginx|1000|2|20|10|10");
	ck_assert_str_eq(q(&d, "SELECT service, requests, spans, self_ns / 1000, avg_self_per_request_ns / 1000 FROM self_time_per_tier"),
		"postgres|1|1|100|100\nphp-fpm8.2|1|2|70|70\nnginx|1|2|20|20");
	/* the self times add up to the request's duration */
	ck_assert_int_eq(qi(&d, "SELECT SUM(self_ns) FROM span_self_time WHERE request_id = 1"),
			 190 * US);
	/* the patterns' per-node delays and span_patterns agree */
	ck_assert_str_eq(q(&d, "SELECT node, parent_node, depth, service, n, mean_ns / 1000, mean_self_ns / 1000 FROM pattern_nodes ORDER BY node"),
		"0|NULL|0|nginx|1|190|10\n"
		"1|0|1|nginx|1|180|10\n"
		"2|1|2|php-fpm8.2|1|170|60\n"
		"3|2|3|php-fpm8.2|1|110|10\n"
		"4|3|4|postgres|1|100|100");
	ck_assert_int_eq(qi(&d, "SELECT COUNT(*) FROM span_patterns sp JOIN span_self_time v USING (span_id) WHERE sp.self_ns = v.self_ns"), 5);
	db_done(&d);
}
END_TEST

/*
 * Calls in parallel are counted once: a server span [0, 100] with client
 * spans [10, 60] and [30, 80] to untraced peers, and [85, 90] after them,
 * covers 70 + 5: self time 25 (summing the children would give 0).
 */
START_TEST(self_time_parallel_children)
{
	struct db d;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/bin/gateway", 0);

	gen_tcp(w, 1, 5, BT_CR_ACCEPT, "10.0.0.1:80", "10.0.0.9:4000");
	gen_msg(w, 100, 5, BT_DIR_IN, BT_MK_REQUEST, BT_PROTO_HTTP, 80, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/fan"), 0);
	gen_tcp(w, 105, 6, BT_CR_CONNECT, "10.0.0.1:5001", "10.0.0.2:80");
	gen_tcp(w, 106, 7, BT_CR_CONNECT, "10.0.0.1:5002", "10.0.0.3:80");
	gen_tcp(w, 107, 8, BT_CR_CONNECT, "10.0.0.1:5003", "10.0.0.4:80");
	gen_msg(w, 110, 6, BT_DIR_OUT, BT_MK_REQUEST, BT_PROTO_HTTP, 80, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/a"), 0);
	gen_msg(w, 130, 7, BT_DIR_OUT, BT_MK_REQUEST, BT_PROTO_HTTP, 80, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/b"), 0);
	gen_msg(w, 160, 6, BT_DIR_IN, BT_MK_REPLY, BT_PROTO_HTTP, 80, 0, 200, 0, 0);
	gen_msg(w, 180, 7, BT_DIR_IN, BT_MK_REPLY, BT_PROTO_HTTP, 80, 0, 200, 0, 0);
	gen_msg(w, 185, 8, BT_DIR_OUT, BT_MK_REQUEST, BT_PROTO_HTTP, 80, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/c"), 0);
	gen_msg(w, 190, 8, BT_DIR_IN, BT_MK_REPLY, BT_PROTO_HTTP, 80, 0, 200, 0, 0);
	gen_msg(w, 200, 5, BT_DIR_OUT, BT_MK_REPLY, BT_PROTO_HTTP, 80, 0, 200, 0, 0);
	db_build(&d, g);
	ck_assert_str_eq(q(&d, "SELECT target, duration_ns / 1000, children_ns / 1000, self_ns / 1000 FROM span_self_time ORDER BY start_ns"),
		"/fan|100|75|25\n/a|50|0|50\n/b|50|0|50\n/c|5|0|5");
	ck_assert_int_eq(qi(&d, "SELECT mean_self_ns / 1000 FROM pattern_nodes WHERE node = 0"), 25);
	db_done(&d);
}
END_TEST

/*
 * Self time has one definition (RC_SELF_COVER_CTE), which span_patterns
 * uses too.  Hand-made rows: root span 1 [0, 100] of request 1 with
 * children 3 [10, 40], 5 [50, 70] (given to request 2, as the certainty
 * rules may) and 6 (no start, ends at 5: taken from the parent's start);
 * span 2 [15, 20] is a child of 3 with a smaller id (a server span opened
 * before the client span that called it).  Span 1 covers 30 + 20 + 5 =
 * 55: self 45 (the patterns once said 65, without the other request's
 * child; the view once said 50, without the child with no start); span
 * 3's self is 25 (the patterns once left child 2 out: 30).
 */
START_TEST(self_time_one_definition)
{
	sqlite3 *h;
	char err[256] = "";
	ck_assert_int_eq(sqlite3_open(":memory:", &h), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(h,
		"CREATE TABLE requests(request_id INTEGER PRIMARY KEY,\n"
		"  root_span_id INTEGER, duration_ns INTEGER);\n"
		"CREATE TABLE spans(span_id INTEGER PRIMARY KEY, request_id INTEGER,\n"
		"  parent_span_id INTEGER, kind TEXT, protocol TEXT, name TEXT,\n"
		"  target TEXT, exe TEXT, start_ns INTEGER, end_ns INTEGER);\n"
		"CREATE TABLE stats(key TEXT PRIMARY KEY, value);\n"
		"INSERT INTO requests VALUES(1, 1, 100), (2, 5, 20);\n"
		"INSERT INTO spans VALUES\n"
		"  (1, 1, NULL, 'server', 'http', 'GET /', '/', '/bin/a', 0, 100),\n"
		"  (2, 1, 3, 'server', 'http', 'GET /x', '/x', '/bin/b', 15, 20),\n"
		"  (3, 1, 1, 'client', 'http', 'GET /x', '/x', '/bin/a', 10, 40),\n"
		"  (5, 2, 1, 'client', 'http', 'GET /y', '/y', '/bin/a', 50, 70),\n"
		"  (6, 1, 1, 'client', 'http', 'GET /z', '/z', '/bin/a', NULL, 5);\n",
		NULL, NULL, NULL), SQLITE_OK);
	ck_assert_msg(rc_patterns_build(h, err, sizeof err) == 0, "%s", err);
	struct db d = { .h = h };
	ck_assert_str_eq(q(&d, "SELECT span_id, self_ns FROM span_patterns ORDER BY span_id"),
		"1|45\n2|5\n3|25\n5|20\n6|NULL");
	ck_assert_str_eq(q(&d, RC_SELF_COVER_CTE
			   "SELECT s.span_id, " RC_SELF_NS " FROM spans s\n"
			   "LEFT JOIN cov ON cov.sid = s.span_id ORDER BY s.span_id"),
		"1|45\n2|5\n3|25\n5|20\n6|NULL");
	sqlite3_close(h);
}
END_TEST

/*
 * The patterns' self times are computed in C (patterns.c) and must equal
 * the CTE's (the view's) on any spans: random trees of 3,000 spans in
 * 200 requests with overlapping, touching, nested and out-of-bounds
 * children, missing starts and ends, a span that is its own parent, and
 * children given to other requests.  Then times so large that a
 * difference overflows: the CTE's own answer (SQLite's arithmetic, a
 * real that the patterns read as an integer, as they always did).  Then
 * (SELF_NONE) children of no request, computed again after the pass
 * (self_fixups), and (SELF_NOROW) spans of a request that has no row,
 * which makes the pass the first way (self_fill).  Each pattern node's
 * mean self time must be the mean of its spans' (the corrections of
 * self_fixups reach the sums).
 */
enum { SELF_PLAIN, SELF_HUGE, SELF_NONE, SELF_NOROW, SELF_MODES };

static void self_random_spans(sqlite3 *h, unsigned seed, int mode)
{
	int huge = mode == SELF_HUGE;
	sqlite3_stmt *s;
	char *err = NULL;
	ck_assert_int_eq(sqlite3_exec(h,
		"CREATE TABLE requests(request_id INTEGER PRIMARY KEY,\n"
		"  root_span_id INTEGER, duration_ns INTEGER);\n"
		"CREATE TABLE spans(span_id INTEGER PRIMARY KEY, request_id INTEGER,\n"
		"  parent_span_id INTEGER, kind TEXT, protocol TEXT, name TEXT,\n"
		"  target TEXT, exe TEXT, start_ns INTEGER, end_ns INTEGER);\n"
		"CREATE TABLE stats(key TEXT PRIMARY KEY, value);\n",
		NULL, NULL, &err), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(h,
		"INSERT INTO spans VALUES(?, ?, ?, 'server', 'http', 'GET /',\n"
		"  '/', '/bin/a', ?, ?)", -1, &s, NULL), SQLITE_OK);
	/* each request's last 8 spans: three children in four take their
	 * parent there, as real requests mostly do */
	static int mine[201][8];
	memset(mine, 0, sizeof mine);
	for (int id = 1; id <= 3000; id++) {
		int req = 1 + (int)(rand_r(&seed) % 200);
		int own = mine[req][rand_r(&seed) % 8];
		int none = mode >= SELF_NONE && id > 200 && rand_r(&seed) % 9 == 0;
		long long st = (long long)(rand_r(&seed) % 1000);
		long long en = st + (long long)(rand_r(&seed) % 300) - 20;
		int r = (int)(rand_r(&seed) % 100);
		sqlite3_bind_int(s, 1, id);
		if (none) {
			sqlite3_bind_null(s, 2);
		} else {
			sqlite3_bind_int(s, 2, req);
			mine[req][id % 8] = id;
		}
		if (id <= 200 || r < 3)
			sqlite3_bind_null(s, 3);
		else if (r < 5)
			sqlite3_bind_int(s, 3, id);
		else if (own && own != id && !none && r % 4)
			sqlite3_bind_int(s, 3, own);
		else
			sqlite3_bind_int(s, 3, 1 + (int)(rand_r(&seed) % (unsigned)(id - 1)));
		/* roots whose length overflows (SQLite makes it a real) */
		if (huge && id <= 200 && r % 3 == 0) {
			st = -5;
			en = INT64_MAX - 1;
		}
		if (r % 11 == 0)
			sqlite3_bind_null(s, 4);
		else
			sqlite3_bind_int64(s, 4, st);
		if (r % 13 == 0)
			sqlite3_bind_null(s, 5);
		else
			sqlite3_bind_int64(s, 5, en);
		ck_assert_int_eq(sqlite3_step(s), SQLITE_DONE);
		sqlite3_reset(s);
	}
	sqlite3_finalize(s);
	ck_assert_int_eq(sqlite3_exec(h,
		"INSERT INTO requests SELECT request_id, MIN(span_id), 100\n"
		"  FROM spans WHERE request_id IS NOT NULL GROUP BY request_id;\n"
		"CREATE INDEX spans_parent ON spans(parent_span_id);\n",
		NULL, NULL, &err), SQLITE_OK);
	if (mode == SELF_NOROW)
		ck_assert_int_eq(sqlite3_exec(h,
			"DELETE FROM requests WHERE request_id = 7",
			NULL, NULL, &err), SQLITE_OK);
}

/* Every row of SQL as text ("id|value\n" ..., exact types kept: an
 * integer, a real in %.17g, NULL; with AS_INT a real is read as the
 * patterns read span_self, sqlite3_column_int64), malloc'd; *RC the last
 * step's code. */
static char *rows_text(sqlite3 *h, const char *sql, int as_int, int *rc)
{
	sqlite3_stmt *s;
	size_t n = 0, cap = 1 << 16;
	char *out = malloc(cap);
	ck_assert_ptr_nonnull(out);
	out[0] = 0;
	ck_assert_int_eq(sqlite3_prepare_v2(h, sql, -1, &s, NULL), SQLITE_OK);
	while ((*rc = sqlite3_step(s)) == SQLITE_ROW) {
		char v[64];
		int t = sqlite3_column_type(s, 1);
		if (t == SQLITE_NULL)
			snprintf(v, sizeof v, "NULL");
		else if (t == SQLITE_FLOAT && !as_int)
			snprintf(v, sizeof v, "r%.17g", sqlite3_column_double(s, 1));
		else
			snprintf(v, sizeof v, "%lld", (long long)sqlite3_column_int64(s, 1));
		if (n + 96 > cap) {
			cap *= 2;
			out = realloc(out, cap);
			ck_assert_ptr_nonnull(out);
		}
		n += (size_t)snprintf(out + n, cap - n, "%lld|%s\n",
				      (long long)sqlite3_column_int64(s, 0), v);
	}
	sqlite3_finalize(s);
	return out;
}

/* The pattern nodes whose mean self time is not the mean of their
 * spans' (self_ns, NULL as 0, over the spans with an end). */
static const char self_mean_sql[] =
	"SELECT COUNT(*) FROM pattern_nodes pn LEFT JOIN (\n"
	"  SELECT sp.pattern_id AS p, sp.node AS k,\n"
	"    CAST(SUM(COALESCE(sp.self_ns, 0)) AS REAL) / COUNT(*) AS m\n"
	"  FROM span_patterns sp JOIN spans s ON s.span_id = sp.span_id\n"
	"  WHERE s.end_ns IS NOT NULL GROUP BY 1, 2) x\n"
	"ON x.p = pn.pattern_id AND x.k = pn.node\n"
	"WHERE pn.mean_self_ns IS NOT x.m";

START_TEST(self_time_same_as_cte)
{
	for (int mode = 0; mode < SELF_MODES; mode++) {
		sqlite3 *h;
		char err[256] = "";
		int rc_want, rc_got = SQLITE_DONE;
		ck_assert_int_eq(sqlite3_open(":memory:", &h), SQLITE_OK);
		self_random_spans(h, 1234u + (unsigned)mode, mode);
		if (mode >= SELF_NONE) {
			/* children of no request whose parent's self time
			 * counts them */
			struct db d0 = { .h = h };
			ck_assert_int_gt(qi(&d0, "SELECT COUNT(*) FROM spans c\n"
				"JOIN spans p ON p.span_id = c.parent_span_id\n"
				"WHERE c.request_id IS NULL AND p.request_id IS NOT NULL\n"
				"  AND p.start_ns IS NOT NULL AND p.end_ns IS NOT NULL"), 20);
		}
		/* the CTE's answer first, as the view gives it, for the
		 * spans the patterns name (those of a request with a row) */
		char *want = rows_text(h, RC_SELF_COVER_CTE
			"SELECT s.span_id, " RC_SELF_NS " FROM spans s\n"
			"LEFT JOIN cov ON cov.sid = s.span_id\n"
			"WHERE s.request_id IN (SELECT request_id FROM requests)\n"
			"ORDER BY s.span_id",
			1, &rc_want);
		int r = rc_patterns_build(h, err, sizeof err);
		if (rc_want != SQLITE_DONE) {
			/* the CTE fails (an integer overflow in SUM): so do
			 * the patterns */
			ck_assert_msg(mode == SELF_HUGE && r < 0, "%d %s", rc_want, err);
		} else {
			ck_assert_msg(r == 0, "%s", err);
			char *got = rows_text(h, "SELECT span_id, self_ns FROM span_patterns ORDER BY span_id",
					      0, &rc_got);
			ck_assert_int_eq(rc_got, SQLITE_DONE);
			ck_assert_uint_gt(strlen(got), 20000);
			size_t k = 0;
			while (got[k] && got[k] == want[k])
				k++;
			while (k && got[k - 1] != '\n')
				k--;
			ck_assert_msg(!strcmp(got, want),
				      "mode %d: self times differ from row %.40s (want %.40s)",
				      mode, got + k, want + k);
			free(got);
			if (mode != SELF_HUGE) {
				struct db d = { .h = h };
				ck_assert_int_eq(qi(&d, self_mean_sql), 0);
			}
		}
		free(want);
		sqlite3_close(h);
	}
}
END_TEST

/*
 * The patterns made as the rows go in (rc_pat_stream, as db_rows.c feeds
 * it) are the pass's, table for table: the random spans of
 * self_time_same_as_cte, written a request at a time in a shuffled order
 * (its spans, then its row, as span.c writes them), the spans of no
 * request in between.  The stream gives the ids again in the pass's
 * order (patterns_stream 2); with the requests in their own order it
 * need not (1).  Where it cannot be the pass's (a span written after its
 * request's row; spans of a request with no row; a length that
 * overflows) the pass makes them (0), with the same tables.
 */
enum { STREAM_SHUFFLED, STREAM_IN_ORDER, STREAM_NONE, STREAM_LATE,
       STREAM_NOROW, STREAM_HUGE, STREAM_MODES };

static char *table_text(sqlite3 *h, const char *sql)
{
	sqlite3_stmt *s;
	size_t n = 0, cap = 1 << 16;
	char *out = malloc(cap);
	int rc;
	ck_assert_ptr_nonnull(out);
	out[0] = 0;
	ck_assert_int_eq(sqlite3_prepare_v2(h, sql, -1, &s, NULL), SQLITE_OK);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		for (int k = 0; k < sqlite3_column_count(s); k++) {
			const char *v = (const char *)sqlite3_column_text(s, k);
			size_t l = v ? strlen(v) : 4;
			while (n + l + 24 > cap) {
				cap *= 2;
				out = realloc(out, cap);
				ck_assert_ptr_nonnull(out);
			}
			n += (size_t)snprintf(out + n, cap - n, "%d:%s%c",
					      sqlite3_column_type(s, k),
					      v ? v : "NULL",
					      k + 1 < sqlite3_column_count(s) ? '|' : '\n');
		}
	}
	ck_assert_int_eq(rc, SQLITE_DONE);
	sqlite3_finalize(s);
	return out;
}

/* The span of row Q (span_id, request_id, parent_span_id, kind,
 * protocol, name, target, exe, start_ns, end_ns), as db_rows.c hands it
 * to the stream; its texts are Q's until it steps. */
static struct rc_pat_span pat_span_of(sqlite3_stmt *q)
{
	return (struct rc_pat_span){
		.id = (uint64_t)sqlite3_column_int64(q, 0),
		.req = (uint64_t)sqlite3_column_int64(q, 1),
		.parent = (uint64_t)sqlite3_column_int64(q, 2),
		.kind = (const char *)sqlite3_column_text(q, 3),
		.protocol = (const char *)sqlite3_column_text(q, 4),
		.name = (const char *)sqlite3_column_text(q, 5),
		.target = (const char *)sqlite3_column_text(q, 6),
		.exe = (const char *)sqlite3_column_text(q, 7),
		.has_start = sqlite3_column_type(q, 8) != SQLITE_NULL,
		.start = sqlite3_column_int64(q, 8),
		.has_end = sqlite3_column_type(q, 9) != SQLITE_NULL,
		.end = sqlite3_column_int64(q, 9),
	};
}

static const char *const stream_tables[] = {
	"SELECT * FROM patterns ORDER BY pattern_id",
	"SELECT * FROM pattern_nodes ORDER BY pattern_id, node",
	"SELECT * FROM span_patterns ORDER BY span_id",
	"SELECT request_id, pattern_id FROM requests ORDER BY request_id",
};

START_TEST(patterns_stream_same_as_pass)
{
	static const int base_mode[STREAM_MODES] = {
		[STREAM_SHUFFLED] = SELF_PLAIN, [STREAM_IN_ORDER] = SELF_PLAIN,
		[STREAM_NONE] = SELF_NONE, [STREAM_LATE] = SELF_PLAIN,
		[STREAM_NOROW] = SELF_NOROW, [STREAM_HUGE] = SELF_HUGE,
	};
	static const int want_stream[STREAM_MODES] = {
		[STREAM_SHUFFLED] = 2, [STREAM_IN_ORDER] = 1,
		[STREAM_NONE] = 2, [STREAM_LATE] = 0, [STREAM_NOROW] = 0,
		[STREAM_HUGE] = 0,
	};
	for (int mode = 0; mode < STREAM_MODES; mode++) {
		sqlite3 *a, *b;
		sqlite3_stmt *rq, *sp, *ins_s, *ins_r;
		char err_a[256] = "", err_b[256] = "", *e = NULL;
		unsigned seed = 99u + (unsigned)mode;
		ck_assert_int_eq(sqlite3_open(":memory:", &a), SQLITE_OK);
		ck_assert_int_eq(sqlite3_open(":memory:", &b), SQLITE_OK);
		self_random_spans(a, 1234u + (unsigned)base_mode[mode],
				  base_mode[mode]);
		/* B: the same tables, requests with its pattern_id (as
		 * db.c makes it); the stream makes its own */
		ck_assert_int_eq(sqlite3_exec(b,
			"CREATE TABLE requests(request_id INTEGER PRIMARY KEY,\n"
			"  root_span_id INTEGER, duration_ns INTEGER, pattern_id INTEGER);\n"
			"CREATE TABLE spans(span_id INTEGER PRIMARY KEY, request_id INTEGER,\n"
			"  parent_span_id INTEGER, kind TEXT, protocol TEXT, name TEXT,\n"
			"  target TEXT, exe TEXT, start_ns INTEGER, end_ns INTEGER);\n"
			"CREATE TABLE stats(key TEXT PRIMARY KEY, value);\n",
			NULL, NULL, &e), SQLITE_OK);
		struct rc_pat_stream *ps = rc_pat_stream_open(b, err_b, sizeof err_b);
		ck_assert_msg(ps != NULL, "%s", err_b);
		ck_assert_int_eq(sqlite3_prepare_v2(b,
			"INSERT INTO spans VALUES(?,?,?,?,?,?,?,?,?,?)", -1, &ins_s, NULL), SQLITE_OK);
		ck_assert_int_eq(sqlite3_prepare_v2(b,
			"INSERT INTO requests VALUES(?,?,?,?)", -1, &ins_r, NULL), SQLITE_OK);
		/* the requests in a shuffled order (a Fisher-Yates of their
		 * ids; in order for STREAM_IN_ORDER); the ids of A's spans
		 * of each, and of spans of no request or of no row */
		int64_t req[256];
		int nreq = 0;
		ck_assert_int_eq(sqlite3_prepare_v2(a,
			"SELECT DISTINCT request_id FROM spans WHERE request_id IS NOT NULL ORDER BY 1",
			-1, &rq, NULL), SQLITE_OK);
		while (sqlite3_step(rq) == SQLITE_ROW && nreq < 256)
			req[nreq++] = sqlite3_column_int64(rq, 0);
		sqlite3_finalize(rq);
		ck_assert_int_gt(nreq, 150);
		if (mode != STREAM_IN_ORDER)
			for (int i = nreq - 1; i > 0; i--) {
				int j = (int)(rand_r(&seed) % (unsigned)(i + 1));
				int64_t t = req[i];
				req[i] = req[j];
				req[j] = t;
			}
		ck_assert_int_eq(sqlite3_prepare_v2(a,
			"SELECT span_id, request_id, parent_span_id, kind, protocol,\n"
			"  name, target, exe, start_ns, end_ns FROM spans\n"
			"WHERE request_id IS ? ORDER BY span_id", -1, &sp, NULL), SQLITE_OK);
		int64_t late = 0;
		for (int i = 0; i <= nreq; i++) {
			/* the spans of no request first, then each request's */
			if (i < nreq)
				sqlite3_bind_int64(sp, 1, req[i]);
			else
				sqlite3_bind_null(sp, 1);
			int nsp = 0;
			while (sqlite3_step(sp) == SQLITE_ROW) {
				struct rc_pat_span s = pat_span_of(sp);
				for (int k = 0; k < 10; k++)
					sqlite3_bind_value(ins_s, k + 1, sqlite3_column_value(sp, k));
				ck_assert_int_eq(sqlite3_step(ins_s), SQLITE_DONE);
				sqlite3_reset(ins_s);
				/* STREAM_LATE: the tenth request's second span
				 * comes after the request's row */
				if (mode == STREAM_LATE && i == 10 && nsp++ == 1) {
					late = (int64_t)s.id;
					continue;
				}
				rc_pat_stream_span(ps, &s);
				if (late && i == 11) {
					/* ... here: re-read it from B */
					sqlite3_stmt *l;
					ck_assert_int_eq(sqlite3_prepare_v2(b,
						"SELECT span_id, request_id, parent_span_id, kind, protocol,\n"
						"  name, target, exe, start_ns, end_ns FROM spans WHERE span_id = ?",
						-1, &l, NULL), SQLITE_OK);
					sqlite3_bind_int64(l, 1, late);
					ck_assert_int_eq(sqlite3_step(l), SQLITE_ROW);
					struct rc_pat_span ls = pat_span_of(l);
					rc_pat_stream_span(ps, &ls);
					sqlite3_finalize(l);
					late = 0;
				}
			}
			sqlite3_reset(sp);
			if (i == nreq)
				break;
			/* the request's row, if A has one */
			ck_assert_int_eq(sqlite3_prepare_v2(a,
				"SELECT request_id, root_span_id, duration_ns FROM requests WHERE request_id = ?",
				-1, &rq, NULL), SQLITE_OK);
			sqlite3_bind_int64(rq, 1, req[i]);
			if (sqlite3_step(rq) == SQLITE_ROW) {
				int64_t pid = rc_pat_stream_request(ps,
					(uint64_t)sqlite3_column_int64(rq, 0),
					(uint64_t)sqlite3_column_int64(rq, 1));
				for (int k = 0; k < 3; k++)
					sqlite3_bind_value(ins_r, k + 1, sqlite3_column_value(rq, k));
				if (pid)
					sqlite3_bind_int64(ins_r, 4, pid);
				else
					sqlite3_bind_null(ins_r, 4);
				ck_assert_int_eq(sqlite3_step(ins_r), SQLITE_DONE);
				sqlite3_reset(ins_r);
			}
			sqlite3_finalize(rq);
		}
		ck_assert_int_eq(late, 0);
		sqlite3_finalize(sp);
		sqlite3_finalize(ins_s);
		sqlite3_finalize(ins_r);
		ck_assert_int_eq(sqlite3_exec(b,
			"CREATE INDEX spans_parent ON spans(parent_span_id);\n",
			NULL, NULL, &e), SQLITE_OK);
		/* the same rows in both */
		char *ra = table_text(a, "SELECT * FROM spans ORDER BY span_id");
		char *rb = table_text(b, "SELECT * FROM spans ORDER BY span_id");
		ck_assert_str_eq(ra, rb);
		free(ra);
		free(rb);
		int r_a = rc_patterns_build(a, err_a, sizeof err_a);
		int r_b = rc_patterns_finish(b, ps, err_b, sizeof err_b);
		ck_assert_msg(r_a == r_b, "mode %d: pass %d (%s), stream %d (%s)",
			      mode, r_a, err_a, r_b, err_b);
		if (!r_a) {
			for (size_t t = 0; t < sizeof stream_tables / sizeof *stream_tables; t++) {
				ra = table_text(a, stream_tables[t]);
				rb = table_text(b, stream_tables[t]);
				ck_assert_uint_gt(strlen(ra), 100);
				ck_assert_msg(!strcmp(ra, rb), "mode %d: %s differs",
					      mode, stream_tables[t]);
				free(ra);
				free(rb);
			}
			struct db d = { .h = b };
			ck_assert_int_eq(qi(&d, "SELECT value FROM stats WHERE key = 'patterns_stream'"),
					 want_stream[mode]);
			struct db d2 = { .h = a };
			ck_assert_int_eq(qi(&d2, "SELECT value FROM stats WHERE key = 'patterns_stream'"), 0);
			ck_assert_int_gt(qi(&d2, "SELECT COUNT(*) FROM patterns"), 20);
		}
		sqlite3_close(a);
		sqlite3_close(b);
	}
}
END_TEST

/* ---- latency: exact percentiles ------------------------------------------------- */

/*
 * 20 PHP pages without queries: duration = 25 + php_us (demo.h), php_us
 * 10, 20, ..., 200 us in a shuffled order: 35 ... 225 us.  Nearest rank:
 * p50 = 10th = 125, p90 = 18th = 205, p99 = 20th = 225.  The FastCGI
 * client spans last 15 + php_us: 115, 195, 215.
 */
START_TEST(latency_percentiles)
{
	struct db d;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct demo_chain *c = demo_chain(h, h, 0, 0);
	char targets[20][32];

	for (int k = 0; k < 20; k++) {
		char client[32];
		int64_t t = 100 + 1000 * k;
		snprintf(client, sizeof client, "203.0.113.1:%d", 4000 + k);
		struct demo_page p = page("GET", "/report", client);
		p.php_us = 10 * ((k * 7) % 20 + 1);
		demo_request(c, t, &p);
		/* the same page with a different id each time */
		snprintf(targets[k], sizeof targets[k], "/item/%d?x=%d", k, k * 3);
		struct demo_page p2 = page("GET", targets[k], client);
		p2.php_us = p.php_us;
		demo_request(c, t + 500, &p2);
	}
	demo_chain_free(c);
	db_build(&d, g);
	ck_assert_str_eq(q(&d, "SELECT n, min_ns / 1000, max_ns / 1000, avg_ns / 1000, p50_ns / 1000, p90_ns / 1000, p99_ns / 1000 FROM request_latency WHERE target = '/report'"),
			 "20|35|225|130|125|205|225");
	ck_assert_str_eq(q(&d, "SELECT kind, protocol, n, p50_ns / 1000, p90_ns / 1000, p99_ns / 1000, total_ns / 1000 FROM latency_per_target WHERE target = '/report' ORDER BY kind, protocol"),
			 "client|fastcgi|20|115|195|215|2400\n"
			 "server|fastcgi|20|105|185|205|2200\n"
			 "server|http|20|125|205|225|2600");
	/* 20 distinct targets of one shape */
	ck_assert_int_eq(qi(&d, "SELECT COUNT(*) FROM request_latency WHERE target LIKE '/item/%'"), 20);
	ck_assert_str_eq(q(&d, "SELECT protocol, service, shape, n, p50_ns / 1000, p90_ns / 1000, p99_ns / 1000 FROM latency_per_shape ORDER BY shape"),
			 "http|nginx|GET /item/*?x=*|20|125|205|225\n"
			 "http|nginx|GET /report|20|125|205|225");
	/* the patterns carry the same percentiles and their median request */
	ck_assert_str_eq(q(&d, "SELECT rank, n, complete, root, nodes, p50_ns / 1000, p90_ns / 1000, p99_ns / 1000 FROM patterns ORDER BY pattern_id"),
			 "1|20|20|GET /report|3|125|205|225\n"
			 "2|20|20|GET /item/*?x=*|3|125|205|225");
	ck_assert_int_eq(qi(&d, "SELECT r.duration_ns / 1000 FROM patterns p JOIN requests r ON r.request_id = p.example_request_id WHERE p.pattern_id = 1"), 125);
	ck_assert_int_eq(qi(&d, "SELECT COUNT(*) FROM requests WHERE pattern_id IS NULL"), 0);
	/* slowest first */
	ck_assert_str_eq(q(&d, "SELECT duration_ns / 1000 FROM slowest_requests LIMIT 3"),
			 "225\n225\n215");
	db_done(&d);
}
END_TEST

/* ---- queries ------------------------------------------------------------------------ */

START_TEST(queries_repeated)
{
	struct db d;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct demo_chain *c = demo_chain(h, h, 0, 0);
	struct demo_query qs[] = {
		{ "SELECT * FROM carts WHERE user_id = 7", 90, NULL },
		{ "SELECT * FROM carts WHERE user_id = 7", 90, NULL },
		{ "SELECT price FROM products WHERE id = 1", 70, NULL },
		{ "SELECT price FROM products WHERE id = 2", 70, NULL },
		{ "SELECT price FROM products WHERE id = 3", 70, NULL },
	};
	struct demo_page p = page("GET", "/cart?user=7", "203.0.113.1:4000");
	p.q = qs;
	p.nq = 5;
	demo_request(c, 100, &p);
	struct demo_page p2 = page("GET", "/about", "203.0.113.1:4001");
	demo_request(c, 2000, &p2);
	demo_chain_free(c);
	db_build(&d, g);
	/* each query span lasts its time in the database + 10 us */
	ck_assert_str_eq(q(&d, "SELECT target, queries, query_ns / 1000, distinct_queries, repeats FROM queries_per_request ORDER BY request_id"),
			 "/cart?user=7|5|440|4|1\n/about|0|0|0|0");
	ck_assert_str_eq(q(&d, "SELECT request_id, target, n, total_ns / 1000, request_target FROM repeated_queries"),
			 "1|SELECT * FROM carts WHERE user_id = 7|2|200|/cart?user=7");
	ck_assert_str_eq(q(&d, "SELECT request_id, shape, n, texts, total_ns / 1000 FROM repeated_query_shapes ORDER BY shape"),
			 "1|SELECT * FROM carts WHERE user_id = ?|2|1|200\n"
			 "1|SELECT price FROM products WHERE id = ?|3|3|240");
	db_done(&d);
}
END_TEST

/* ---- static content -------------------------------------------------------------- */

START_TEST(static_requests)
{
	struct db d;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct demo_chain *c = demo_chain(h, h, 0, 0);
	struct demo_query qs[] = { { "SELECT data FROM images WHERE name = 'b.jpg'", 400, NULL } };
	static const char *const nginx_files[] = {
		"/static/a.css", "/download/file.tar.gz", "/Photo.JPG?size=2" };
	static const char *const php_pages[] = {
		"/img/b.jpg", "/index.php?x=1.5", "/api/v1.2", "/dir/", "/cart" };
	int64_t t = 100;

	for (size_t i = 0; i < 3; i++) {
		struct demo_page p = page("GET", nginx_files[i], "203.0.113.1:4000");
		p.static_file = "/srv/www/file";
		t = demo_request(c, t, &p) + 100;
	}
	for (size_t i = 0; i < 5; i++) {
		struct demo_page p = page("GET", php_pages[i], "203.0.113.1:4001");
		p.q = qs;
		p.nq = 1;
		t = demo_request(c, t, &p) + 100;
	}
	demo_chain_free(c);
	db_build(&d, g);
	ck_assert_str_eq(q(&d, "SELECT target, path, extension, backend_calls, queries, backend_ns / 1000 FROM static_requests ORDER BY request_id"),
		"/static/a.css|/static/a.css|css|0|0|0\n"
		"/download/file.tar.gz|/download/file.tar.gz|gz|0|0|0\n"
		"/Photo.JPG?size=2|/Photo.JPG|jpg|0|0|0\n"
		"/img/b.jpg|/img/b.jpg|jpg|2|1|430");
	ck_assert_str_eq(q(&d, "SELECT target FROM static_backend_work"), "/img/b.jpg");
	db_done(&d);
}
END_TEST

/* ---- errors ------------------------------------------------------------------------- */

START_TEST(errors_with_path)
{
	struct db d;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct demo_chain *c = demo_chain(h, h, 0, 0);
	struct demo_chain *c2 = demo_chain(h, h, 1, 0);
	struct demo_query ins[] = { { "INSERT INTO orders VALUES (1)", 120, "23505" } };
	struct demo_query ok[] = { { "SELECT 1", 50, NULL } };

	struct demo_page p = page("POST", "/checkout", "203.0.113.1:4000");
	p.q = ins;
	p.nq = 1;
	p.status = 500;
	int64_t t = demo_request(c, 100, &p) + 100;
	struct demo_page p2 = page("GET", "/search?q=x", "203.0.113.1:4001");
	p2.dns_name = "search.internal";
	p2.dns_us = 30;
	p2.dns_result = -2;              /* EAI_NONAME */
	p2.status = 404;
	t = demo_request(c, t, &p2) + 100;
	struct demo_page p3 = page("GET", "/fine", "203.0.113.1:4002");
	p3.q = ok;
	p3.nq = 1;
	t = demo_request(c, t, &p3) + 100;
	/* php never answers this one: the trace ends first */
	struct demo_page p4 = page("GET", "/hang", "203.0.113.1:4003");
	p4.q = ok;
	p4.nq = 1;
	p4.no_reply = 1;
	demo_request(c2, t, &p4);
	demo_chain_free(c);
	demo_chain_free(c2);
	db_build(&d, g);
	ck_assert_str_eq(q(&d, "SELECT request_id, request_target, kind, protocol, error, origin, path FROM errors"),
		"1|/checkout|server|http|http 500|1|nginx POST /checkout\n"
		"1|/checkout|client|postgresql|postgresql 23505|0|nginx POST /checkout > nginx POST /index.php > php-fpm8.2 POST /index.php > php-fpm8.2 INSERT\n"
		"1|/checkout|server|postgresql|postgresql 23505|1|nginx POST /checkout > nginx POST /index.php > php-fpm8.2 POST /index.php > php-fpm8.2 INSERT > postgres INSERT\n"
		"2|/search?q=x|client|dns|dns -2|1|nginx GET /search > nginx GET /index.php > php-fpm8.2 GET /index.php > php-fpm8.2 getaddrinfo\n"
		"4|/hang|server|http|no reply|0|nginx GET /hang\n"
		"4|/hang|client|fastcgi|no reply|0|nginx GET /hang > nginx GET /index.php\n"
		"4|/hang|server|fastcgi|no reply|1|nginx GET /hang > nginx GET /index.php > php-fpm8.2 GET /index.php");
	/* HTTP 4xx is the client's error, not the server's */
	ck_assert_int_eq(qi(&d, "SELECT COUNT(*) FROM errors WHERE protocol = 'http' AND status = 404"), 0);
	db_done(&d);
}
END_TEST

/* ---- patterns ----------------------------------------------------------------------- */

/*
 * Product pages with different ids and SQL literals share one pattern;
 * a static file and a page with a third query make their own.
 */
START_TEST(patterns_fold_ids)
{
	struct db d;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct demo_chain *c = demo_chain(h, h, 0, 0);
	int64_t t = 100;

	for (int k = 0; k < 6; k++) {
		char target[64], s1[96], s2[96], client[32];
		snprintf(target, sizeof target, "/products/%d?ref=home%d", 100 + k * 7, k);
		snprintf(s1, sizeof s1, "SELECT * FROM products WHERE id = %d", 100 + k * 7);
		snprintf(s2, sizeof s2, "SELECT name FROM categories WHERE name = 'c%d'", k);
		snprintf(client, sizeof client, "203.0.113.%d:4000", k + 1);
		struct demo_query qs[3] = { { s1, 100 + 10 * k, NULL }, { s2, 50, NULL },
					    { "SELECT now()", 20, NULL } };
		struct demo_page p = page("GET", target, client);
		p.q = qs;
		p.nq = k == 5 ? 3 : 2;
		t = demo_request(c, t, &p) + 100;
	}
	struct demo_page s = page("GET", "/static/logo.png", "203.0.113.9:4000");
	s.static_file = "/srv/www/logo.png";
	demo_request(c, t, &s);
	demo_chain_free(c);
	db_build(&d, g);
	ck_assert_str_eq(q(&d, "SELECT pattern_id, rank, n, protocol, service, root, nodes, depth FROM patterns ORDER BY pattern_id"),
		"1|1|5|http|nginx|GET /products/*?ref=*|7|4\n"
		"2|2|1|http|nginx|GET /products/*?ref=*|9|4\n"
		"3|3|1|http|nginx|GET /static/logo.png|1|0");
	ck_assert_str_eq(q(&d, "SELECT signature FROM patterns WHERE pattern_id = 1"),
		"0\tserver\thttp\tnginx\tGET /products/*?ref=*\n"
		"1\tclient\tfastcgi\tnginx\tGET /products/*?ref=*\n"
		"2\tserver\tfastcgi\tphp-fpm8.2\tGET /products/*?ref=*\n"
		"3\tclient\tpostgresql\tphp-fpm8.2\tSELECT * FROM products WHERE id = ?\n"
		"4\tserver\tpostgresql\tpostgres\tSELECT * FROM products WHERE id = ?\n"
		"3\tclient\tpostgresql\tphp-fpm8.2\tSELECT name FROM categories WHERE name = ?\n"
		"4\tserver\tpostgresql\tpostgres\tSELECT name FROM categories WHERE name = ?\n");
	/* per-node delay: the product query takes 100..140 us in the
	 * database (mean 120), the category query 50 */
	ck_assert_str_eq(q(&d, "SELECT node, parent_node, label, n, mean_self_ns / 1000 FROM pattern_nodes WHERE pattern_id = 1 AND service = 'postgres' ORDER BY node"),
		"4|3|SELECT * FROM products WHERE id = ?|5|120\n"
		"6|5|SELECT name FROM categories WHERE name = ?|5|50");
	ck_assert_str_eq(q(&d, "SELECT pattern_id, COUNT(*) FROM requests GROUP BY pattern_id"),
		"1|5\n2|1\n3|1");
	ck_assert_int_eq(qi(&d, "SELECT COUNT(*) FROM span_patterns WHERE pattern_id = 1"), 35);
	ck_assert_int_eq(qi(&d, "SELECT value FROM stats WHERE key = 'patterns'"), 3);
	ck_assert_int_eq(qi(&d, "SELECT value FROM stats WHERE key = 'schema_version'"), 3);
	db_done(&d);
}
END_TEST

/* ---- the shop: every view answers, and each is tested here ---------------------- */

START_TEST(every_view_tested)
{
	/* The views this file checks against a known answer; a view added
	 * to views.c without a test here fails this test. */
	static const char *const tested[] = {
		"errors", "latency_per_shape", "latency_per_target",
		"queries_per_request", "repeated_queries",
		"repeated_query_shapes", "request_latency", "request_paths",
		"self_time_per_process", "self_time_per_tier", "slowest_requests",
		"span_self_time", "static_backend_work", "static_requests",
		"unattributed", "uncertain_requests",
	};
	struct db d;
	struct gen *g = gen_new();
	demo_shop(g, 40, 0);
	db_build(&d, g);
	const char *views = q(&d, "SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name)");
	char want[1024] = "";
	for (size_t i = 0; i < sizeof tested / sizeof tested[0]; i++)
		snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s",
			 i ? " " : "", tested[i]);
	ck_assert_str_eq(views, want);
	/* the shop's mix (demo.c): 40 requests, 8 shapes */
	ck_assert_int_eq(qi(&d, "SELECT COUNT(*) FROM patterns"), 8);
	/* every path of the shop is exact (the view with rows:
	 * check_recon_certainty.c) */
	ck_assert_int_eq(qi(&d, "SELECT COUNT(*) FROM uncertain_requests"), 0);
	ck_assert_int_eq(qi(&d, "SELECT COUNT(*) FROM requests WHERE certainty = 'exact' AND certainty_reason IS NULL"), 40);
	ck_assert_int_eq(qi(&d, "SELECT COUNT(*) FROM spans WHERE certainty <> 'exact'"), 0);
	ck_assert_int_eq(qi(&d, "SELECT COUNT(*) FROM static_backend_work"), 4);
	ck_assert_int_eq(qi(&d, "SELECT COUNT(*) FROM static_requests"), 10);
	ck_assert_int_eq(qi(&d, "SELECT COUNT(DISTINCT request_id) FROM errors"), 2);
	ck_assert_int_eq(qi(&d, "SELECT COUNT(*) FROM repeated_queries"), 4);
	/* the slowest is the page whose query took 5 ms */
	ck_assert_str_eq(q(&d, "SELECT target FROM slowest_requests LIMIT 1"),
			 "/products/143?ref=home4");
	ck_assert_int_eq(qi(&d, "SELECT COUNT(*) FROM request_paths"),
			 qi(&d, "SELECT COUNT(*) FROM spans WHERE request_id IS NOT NULL"));
	ck_assert_str_eq(q(&d, "SELECT what, n FROM unattributed"),
			 "fragments|52\nmessages|0\nfiles|0\nspans|0");
	db_done(&d);
}
END_TEST

static Suite *report_suite(void)
{
	Suite *s = suite_create("report");
	TCase *n = tcase_create("normalise");
	tcase_add_test(n, norm_table);
	tcase_add_test(n, norm_limits);
	suite_add_tcase(s, n);
	TCase *v = tcase_create("views");
	tcase_set_timeout(v, 60);
	tcase_add_test(v, self_time_chain);
	tcase_add_test(v, self_time_parallel_children);
	tcase_add_test(v, self_time_one_definition);
	tcase_add_test(v, self_time_same_as_cte);
	tcase_add_test(v, patterns_stream_same_as_pass);
	tcase_add_test(v, latency_percentiles);
	tcase_add_test(v, queries_repeated);
	tcase_add_test(v, static_requests);
	tcase_add_test(v, errors_with_path);
	tcase_add_test(v, patterns_fold_ids);
	tcase_add_test(v, every_view_tested);
	suite_add_tcase(s, v);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(report_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
