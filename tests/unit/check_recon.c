/*
 * check_recon.c - the bp-reconstruct unit tests: helpers and runner.
 *
 * Set CHECK_RECON_KEEP=1 to keep each test's scratch directory (logs and
 * database) for a look with sqlite3; the path is printed.
 */
#include "config.h"

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_recon.h"

void rt_init(struct rt *t)
{
	const char *tmp = getenv("TMPDIR");
	memset(t, 0, sizeof *t);
	snprintf(t->dir, sizeof t->dir, "%s/check_recon.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(t->dir));
	snprintf(t->logs, sizeof t->logs, "%s/logs", t->dir);
	snprintf(t->db, sizeof t->db, "%s/paths.db", t->dir);
	snprintf(t->err, sizeof t->err, "%s/stderr", t->dir);
}

int rt_write(struct rt *t, struct gen *g, const struct gen_write_opts *o)
{
	int n = gen_write(g, t->logs, o);
	gen_free(g);
	ck_assert_int_gt(n, 0);
	return n;
}

int rt_run(struct rt *t)
{
	const char *in[2] = { t->live ? t->live : t->logs, t->extra };
	FILE *err = fopen(t->err, "w");
	ck_assert_ptr_nonnull(err);
	struct rc_options o = {
		.inputs = in, .ninputs = t->extra ? 2 : 1, .output = t->db,
		.progress = 0,
		.max_warn_lines = 50, .err = err,
		.grpc_unary = t->unary, .ngrpc_unary = t->nunary,
		.pending_ns = t->pending_ns, .pending_new_ns = t->pending_new_ns,
		.spool_all = t->spool_all,
		.replay_serial = t->replay_serial,
		.pair_run = t->pair_run,
		.db_later = t->db_later,
		.rows_from_ns = t->rows_from_ns,
		.steps = t->steps,
		.steps_unsafe = t->steps_unsafe,
		.hold_ns = t->hold_ns,
		.grow_fn = t->grow_fn,
		.grow_arg = t->grow_arg,
	};
	t->rc = rc_run(&o, &t->sum);
	fclose(err);
	if (t->rc == RC_EXIT_OK)
		ck_assert_int_eq(sqlite3_open_v2(t->db, &t->h,
						 SQLITE_OPEN_READONLY, NULL),
				 SQLITE_OK);
	return t->rc;
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	return remove(p);
}

void rt_done(struct rt *t)
{
	if (t->h)
		sqlite3_close(t->h);
	t->h = NULL;
	if (getenv("CHECK_RECON_KEEP"))
		fprintf(stderr, "check_recon: kept %s\n", t->dir);
	else
		nftw(t->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static char qbuf[4096];

static const char *vq(struct rt *t, const char *fmt, va_list ap)
{
	char sql[2048];
	sqlite3_stmt *s;

	vsnprintf(sql, sizeof sql, fmt, ap);
	ck_assert_ptr_nonnull(t->h);
	if (sqlite3_prepare_v2(t->h, sql, -1, &s, NULL) != SQLITE_OK)
		ck_abort_msg("bad test SQL %s: %s", sql, sqlite3_errmsg(t->h));
	int r = sqlite3_step(s);
	if (r == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(s, 0);
		snprintf(qbuf, sizeof qbuf, "%s", v ? (const char *)v : "NULL");
	} else {
		snprintf(qbuf, sizeof qbuf, "<none>");
	}
	sqlite3_finalize(s);
	return qbuf;
}

const char *rt_q(struct rt *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	const char *r = vq(t, fmt, ap);
	va_end(ap);
	return r;
}

int64_t rt_qi(struct rt *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	const char *r = vq(t, fmt, ap);
	va_end(ap);
	ck_assert_msg(strcmp(r, "<none>") != 0 && strcmp(r, "NULL") != 0,
		      "query gave no number: %s", fmt);
	return strtoll(r, NULL, 10);
}

const char *rt_stderr(struct rt *t)
{
	static char buf[16384];
	FILE *f = fopen(t->err, "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	return buf;
}

/* ---- path rendering --------------------------------------------------------- */

static char *pbuf;
static size_t plen, pcap;

static void app(const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(pbuf + plen, pcap - plen, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < pcap - plen) {
			plen += (size_t)n;
			return;
		}
		pcap = pcap ? pcap * 2 : 4096;
		pbuf = realloc(pbuf, pcap);
		ck_assert_ptr_nonnull(pbuf);
	}
}

static const char *col(sqlite3_stmt *s, int i)
{
	const unsigned char *v = sqlite3_column_text(s, i);
	return v ? (const char *)v : "NULL";
}

static void span_tree(struct rt *t, const char *where, int64_t parent,
		      int depth)
{
	char sql[512];
	sqlite3_stmt *s;

	snprintf(sql, sizeof sql,
		 "SELECT span_id, kind, protocol, name, target, host, pid, tid, status, CASE certainty WHEN 'exact' THEN '' ELSE ' [' || certainty || ' ' || IFNULL(certainty_reason, '-') || ']' END FROM spans WHERE %s AND %s ORDER BY start_ns, span_id",
		 where, parent ? "parent_span_id = ?" :
		 "(parent_span_id IS NULL OR parent_span_id NOT IN (SELECT span_id FROM spans x WHERE x.request_id IS spans.request_id))");
	ck_assert_int_eq(sqlite3_prepare_v2(t->h, sql, -1, &s, NULL), SQLITE_OK);
	if (parent)
		sqlite3_bind_int64(s, 1, parent);
	while (sqlite3_step(s) == SQLITE_ROW) {
		app("%*s%s %s '%s' %s %s/%s/%s st=%s%s\n", 2 + 2 * depth, "",
		    col(s, 1), col(s, 2), col(s, 3), col(s, 4), col(s, 5),
		    col(s, 6), col(s, 7), col(s, 8), col(s, 9));
		span_tree(t, where, sqlite3_column_int64(s, 0), depth + 1);
	}
	sqlite3_finalize(s);
}

const char *rt_paths(struct rt *t)
{
	sqlite3_stmt *s;

	plen = 0;
	app("%s", "");
	ck_assert_int_eq(sqlite3_prepare_v2(t->h,
		"SELECT request_id, protocol, method, target, status, client, CASE certainty WHEN 'exact' THEN '' ELSE ' [' || certainty || ' ' || IFNULL(certainty_reason, '-') || ']' END FROM requests ORDER BY start_ns, request_id",
		-1, &s, NULL), SQLITE_OK);
	while (sqlite3_step(s) == SQLITE_ROW) {
		char where[64];
		app("R %s %s %s st=%s client=%s%s\n", col(s, 1), col(s, 2),
		    col(s, 3), col(s, 4), col(s, 5), col(s, 6));
		snprintf(where, sizeof where, "request_id = %lld",
			 (long long)sqlite3_column_int64(s, 0));
		span_tree(t, where, 0, 0);
	}
	sqlite3_finalize(s);
	app("unattributed:\n");
	span_tree(t, "request_id IS NULL", 0, 0);
	return pbuf;
}

int64_t rt_badly_nested(struct rt *t)
{
	return rt_qi(t,
		"SELECT COUNT(*) FROM spans c JOIN spans p ON c.parent_span_id = p.span_id "
		"WHERE c.start_ns < p.start_ns OR (c.end_ns IS NOT NULL AND p.end_ns IS NOT NULL AND c.end_ns > p.end_ns)");
}

int main(void)
{
	SRunner *sr = srunner_create(recon_unit_suite());
	srunner_add_suite(sr, recon_paths_suite());
	srunner_add_suite(sr, recon_loss_suite());
	srunner_add_suite(sr, recon_clock_suite());
	srunner_add_suite(sr, recon_certainty_suite());
	srunner_add_suite(sr, recon_unread_suite());
	srunner_add_suite(sr, recon_more_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
