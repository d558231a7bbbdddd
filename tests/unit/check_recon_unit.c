/*
 * check_recon_unit.c - the reconstructor's building blocks: the hash map
 * every table uses (checked against a plain array under heavy collisions
 * and deletions), and the whole core on random but well-formed records:
 * whatever a buggy or hostile tracer writes, the run ends with a database
 * whose rows refer to each other consistently (and, in the debug build,
 * without a memory error).
 */
#include "config.h"

#include <stdlib.h>

#include "check_recon.h"
#include "map.h"
#include "rc.h"
#include "span.h"

#include <string.h>

#include "btrace/proto.h"

START_TEST(map_matches_model)
{
	enum { RANGE = 4096, OPS = 200000 };
	static uint64_t model[RANGE];
	static uint8_t present[RANGE];
	struct rc_map m;
	uint64_t x = 88172645463325252ull;

	rc_map_init(&m);
	for (int i = 0; i < OPS; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		/* Keys that share low bits collide into long clusters. */
		uint32_t k = (uint32_t)(x % RANGE);
		uint64_t key = (uint64_t)k << 20;
		switch ((x >> 32) % 3) {
		case 0:
			ck_assert_int_eq(rc_map_put(&m, key, x), 0);
			model[k] = x;
			present[k] = 1;
			break;
		case 1:
			ck_assert_int_eq(rc_map_del(&m, key), present[k]);
			present[k] = 0;
			break;
		default: {
			uint64_t v = 0;
			ck_assert_int_eq(rc_map_get(&m, key, &v), present[k]);
			if (present[k])
				ck_assert_uint_eq(v, model[k]);
		}
		}
	}
	size_t n = 0;
	for (int k = 0; k < RANGE; k++) {
		uint64_t v;
		n += present[k];
		ck_assert_int_eq(rc_map_get(&m, (uint64_t)k << 20, &v), present[k]);
	}
	ck_assert_uint_eq(m.n, n);
	rc_map_free(&m);
}
END_TEST

START_TEST(map_counts)
{
	struct rc_map m;
	rc_map_init(&m);
	ck_assert_uint_eq(rc_map_add(&m, 7, 2), 2);
	ck_assert_uint_eq(rc_map_add(&m, 7, -1), 1);
	ck_assert_int_eq(rc_map_get(&m, 7, NULL), 1);
	ck_assert_uint_eq(rc_map_add(&m, 7, -1), 0);
	/* A count that reaches zero leaves the map. */
	ck_assert_int_eq(rc_map_get(&m, 7, NULL), 0);
	ck_assert_uint_eq(m.n, 0);
	ck_assert_ptr_null(rc_map_getp(&m, 7));
	rc_map_free(&m);
}
END_TEST

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* One random record of any type, with fields from small ranges so that
 * fds, channels, offsets and lineage keys meet each other. */
static void random_record(struct gen_thr *t, int64_t at, uint64_t *x)
{
	static const char *const addrs[] = {
		"10.0.0.1:80", "10.0.0.2:5000", "10.0.0.3:5432", "127.0.0.1:7000",
	};
	static const char *const vals[] = { "GET", "/a?b", "SELECT 1", "x", "" };
	struct bt_event ev;

	memset(&ev, 0, sizeof ev);
	ev.type = (uint8_t)(1 + rnd(x) % (BT_EV_TYPE_MAX - 1));
	if (ev.type == BT_EV_TIME)
		ev.type = BT_EV_MSG;
	ev.fd = (int32_t)(rnd(x) % 12) - 1;
	ev.fd2 = (int32_t)(rnd(x) % 12);
	ev.result = (int64_t)(rnd(x) % 8) - 2;
	ev.pid = 100 + (uint32_t)(rnd(x) % 4);
	ev.ppid = 100 + (uint32_t)(rnd(x) % 4);
	ev.tid = ev.pid + (uint32_t)(rnd(x) % 3);
	ev.cookie = rnd(x) % 4;
	ev.flags = (uint32_t)(rnd(x) % 16);
	ev.proto = (uint8_t)(rnd(x) % 8);
	ev.dir = (uint8_t)(rnd(x) % 2);
	ev.kind = (uint8_t)(rnd(x) % 6);
	ev.chan_kind = (uint8_t)(rnd(x) % 7);
	ev.role = (uint8_t)(rnd(x) % 8);
	ev.off = rnd(x) % 300;
	ev.len = rnd(x) % 100;
	ev.status = (uint32_t)(rnd(x) % 3) * 200;
	ev.witness = rnd(x) % 3;
	ev.ino = rnd(x) % 5;
	ev.peer_ino = rnd(x) % 5;
	if (ev.type == BT_EV_CHAN && (ev.chan_kind == BT_CK_TCP ||
				      ev.chan_kind == BT_CK_UDP)) {
		const char *l = addrs[rnd(x) % 4], *r = addrs[rnd(x) % 4];
		unsigned b[4], port;
		sscanf(l, "%u.%u.%u.%u:%u", &b[0], &b[1], &b[2], &b[3], &port);
		ev.local.family = BT_AF_INET;
		for (int i = 0; i < 4; i++)
			ev.local.addr[i] = (uint8_t)b[i];
		ev.local.port = (uint16_t)port;
		sscanf(r, "%u.%u.%u.%u:%u", &b[0], &b[1], &b[2], &b[3], &port);
		ev.remote.family = BT_AF_INET;
		for (int i = 0; i < 4; i++)
			ev.remote.addr[i] = (uint8_t)b[i];
		ev.remote.port = (uint16_t)port;
	}
	ev.str = vals[rnd(x) % 5];
	ev.str_len = (uint32_t)strlen(ev.str);
	ev.nattr = (uint8_t)(rnd(x) % 4);
	for (unsigned i = 0; i < ev.nattr; i++) {
		ev.attr[i].key = (uint8_t)(1 + rnd(x) % (BT_AK_MAX - 1));
		ev.attr[i].val = vals[rnd(x) % 5];
		ev.attr[i].len = (uint16_t)strlen(ev.attr[i].val);
	}
	gen_ev(t, at, &ev);
}

START_TEST(random_records_consistent)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(_i + 1);
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h[3];
	struct gen_thr *th[8];

	h[0] = gen_host(g, "a", 0, 0);
	h[1] = gen_host(g, "b", 2000000000ll, 0);
	h[2] = gen_host_ns(h[0], 50000000000ll);
	for (int i = 0; i < 8; i++) {
		struct gen_proc *p = gen_proc(h[i % 3], 100 + (uint32_t)(i % 4),
					      "/bin/x");
		th[i] = gen_thread(p, 0, 100 + (uint32_t)i, 0, i > 3 ? (uint64_t)(i % 4) : 0);
		if (i < 4)
			gen_proc_start(th[i], 0, 100, 100, (uint32_t)(rnd(&x) % 4));
	}
	int64_t now[8] = { 0 };
	for (int k = 0; k < 800; k++) {
		int i = (int)(rnd(&x) % 8);
		now[i] += (int64_t)(rnd(&x) % 5);
		random_record(th[i], now[i], &x);
	}
	rt_init(&t);
	struct gen_write_opts o = { .block_bytes = 200 + (unsigned)(rnd(&x) % 400) };
	rt_write(&t, g, &o);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM spans WHERE request_id IS NOT NULL AND request_id NOT IN (SELECT request_id FROM requests)"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM requests WHERE root_span_id NOT IN (SELECT span_id FROM spans)"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM messages WHERE span_id IS NOT NULL AND span_id NOT IN (SELECT span_id FROM spans)"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM spans WHERE end_ns < start_ns"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'events'"),
			 (int64_t)t.sum.events);
	rt_done(&t);
}
END_TEST

/*
 * The spool's compact form (db_rows.c) against the queue: with one clock
 * domain the rows go to the database through the queue, as they are;
 * spool_all sends them through the spool instead.  Both databases must
 * hold the same rows, every table, in rowid order.  The logs: a web
 * server and a database on one host, 3,000 requests with targets and
 * queries that differ or repeat, empty ones, long ones (4 KB, the most
 * a record holds), NULLs (no status), files: more than one spool buffer
 * (1 MiB), so strings repeated across a refill are read back too.
 */
/* STATICS: every 5th request is answered without a query (and so
 * without the database connection that names it) */
static void spool_logs_x(struct rt *t, int statics)
{
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/sbin/apache2", 0);
	struct gen_thr *d = gen_proc_main(h, 200, "/usr/lib/postgresql/15/bin/postgres", 0);
	static char longq[5000];
	char target[64], sql[64];

	memset(longq, 'x', sizeof longq - 1);
	memcpy(longq, "SELECT ", 7);
	for (int i = 0; i < 3000; i++) {
		int64_t t0 = 100 + (int64_t)i * 100;
		int fd = 5, dbfd = 7;
		char cli[32], lport[32];
		const char *q = sql;

		snprintf(cli, sizeof cli, "10.0.0.9:%d", 20000 + i);
		snprintf(lport, sizeof lport, "10.0.0.1:%d", 40000 + i);
		snprintf(target, sizeof target, "/u?id=%d", i % 7 ? i : 7);
		snprintf(sql, sizeof sql, "SELECT name FROM u WHERE id = %d",
			 i % 3 ? i : 3);
		if (i % 500 == 17)
			q = longq;
		else if (i % 500 == 18)
			q = "";
		gen_tcp(w, t0, fd, BT_CR_ACCEPT, "10.0.0.1:80", cli);
		gen_msg(w, t0 + 2, fd, BT_DIR_IN, BT_MK_REQUEST, BT_PROTO_HTTP,
			80, 0, 0, 0, GEN_A(BT_AK_METHOD, "GET"),
			GEN_A(BT_AK_TARGET, i % 250 == 5 ? "" : target), 0);
		if (statics && i % 5 == 4) {
			gen_msg(w, t0 + 60, fd, BT_DIR_OUT, BT_MK_REPLY,
				BT_PROTO_HTTP, 500, 0, 200, 0, 0);
			gen_close(w, t0 + 64, fd);
			continue;
		}
		gen_tcp(w, t0 + 10, dbfd, BT_CR_CONNECT, lport, "10.0.0.2:5432");
		gen_msg(w, t0 + 20, dbfd, BT_DIR_OUT, BT_MK_REQUEST,
			BT_PROTO_PGSQL, 40, 0, 0, 0, GEN_A(BT_AK_SQL, q), 0);
		gen_tcp(d, t0 + 11, 5, BT_CR_ACCEPT, "10.0.0.2:5432", lport);
		gen_msg(d, t0 + 25, 5, BT_DIR_IN, BT_MK_REQUEST, BT_PROTO_PGSQL,
			40, 0, 0, 0, GEN_A(BT_AK_SQL, q), 0);
		gen_msg(d, t0 + 40, 5, BT_DIR_OUT, BT_MK_REPLY, BT_PROTO_PGSQL,
			60, 0, 0, 0, GEN_A(BT_AK_TAG, "SELECT 1"), 0);
		gen_msg(w, t0 + 50, dbfd, BT_DIR_IN, BT_MK_REPLY,
			BT_PROTO_PGSQL, 60, 0, 0, 0, 0);
		if (i % 4 == 0)
			gen_open(w, t0 + 55, 8, i % 8 ? "/var/www/a.html" : "/var/www/b.html");
		gen_msg(w, t0 + 60, fd, BT_DIR_OUT, BT_MK_REPLY, BT_PROTO_HTTP,
			500, 0, i % 9 ? 200 : 0, 0, 0);
		if (i % 4 == 0)
			gen_close(w, t0 + 61, 8);
		gen_close(w, t0 + 62, dbfd);
		gen_close(d, t0 + 63, 5);
		gen_close(w, t0 + 64, fd);
	}
	rt_init(t);
	rt_write(t, g, NULL);
}

static void spool_logs(struct rt *t)
{
	spool_logs_x(t, 0);
}

/* Every table of T's database, rows in rowid order, as text. */
static char *db_text(struct rt *t)
{
	sqlite3_stmt *tabs, *s;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(sqlite3_prepare_v2(t->h, "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name", -1, &tabs, NULL), SQLITE_OK);
	while (sqlite3_step(tabs) == SQLITE_ROW) {
		char q[300];
		const char *name = (const char *)sqlite3_column_text(tabs, 0);
		snprintf(q, sizeof q, "SELECT * FROM \"%s\"%s", name,
			 strcmp(name, "stats") ? " ORDER BY rowid" : " WHERE key NOT LIKE '%time%' ORDER BY key");
		fprintf(f, "== %s\n", name);
		if (sqlite3_prepare_v2(t->h, q, -1, &s, NULL) != SQLITE_OK) {
			/* a view or a WITHOUT ROWID table: no rowid */
			snprintf(q, sizeof q, "SELECT * FROM \"%s\"", name);
			ck_assert_int_eq(sqlite3_prepare_v2(t->h, q, -1, &s, NULL), SQLITE_OK);
		}
		while (sqlite3_step(s) == SQLITE_ROW) {
			for (int i = 0; i < sqlite3_column_count(s); i++) {
				int ty = sqlite3_column_type(s, i);
				const char *v = (const char *)sqlite3_column_text(s, i);
				fprintf(f, "%s%d:%s", i ? "|" : "", ty, v ? v : "");
			}
			fputc('\n', f);
		}
		sqlite3_finalize(s);
	}
	sqlite3_finalize(tabs);
	fclose(f);
	return out;
}

/* The rows of table TAB (ordered by ORDER) of the requests that began at
 * or after FROM (or of every request before it, BEFORE), as text. */
static char *rows_of(struct rt *t, const char *tab, const char *order,
		     int64_t from, int before)
{
	sqlite3_stmt *s;
	char q[400], *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	ck_assert_ptr_nonnull(f);
	snprintf(q, sizeof q, "SELECT x.* FROM %s x JOIN requests r ON r.request_id = x.request_id"
		 " WHERE r.start_ns %s %lld ORDER BY x.%s", tab, before ? "<" : ">=",
		 (long long)from, order);
	ck_assert_int_eq(sqlite3_prepare_v2(t->h, q, -1, &s, NULL), SQLITE_OK);
	while (sqlite3_step(s) == SQLITE_ROW) {
		for (int i = 0; i < sqlite3_column_count(s); i++) {
			const char *v = (const char *)sqlite3_column_text(s, i);
			fprintf(f, "%s%d:%s", i ? "|" : "", sqlite3_column_type(s, i), v ? v : "");
		}
		fputc('\n', f);
	}
	sqlite3_finalize(s);
	fclose(f);
	return out;
}

/*
 * A window pass of --follow (rc_options.rows_from_ns) leaves out the
 * per-event rows of the requests that began before its bound, those
 * that come after the request's root span ended too (the fragment of
 * the answer, which closes at the thread's next input); the rows of the
 * requests from the bound on are those of the whole run.
 */
START_TEST(window_rows_left_out)
{
	struct rt a, w;
	static const struct { const char *tab, *order; } tabs[] = {
		{ "fragments", "fragment_id" }, { "messages", "message_id" },
		{ "files", "file_id" }, { "spans", "span_id" },
	};

	spool_logs_x(&a, 1);
	ck_assert_int_eq(rt_run(&a), RC_EXIT_OK);
	int64_t from = rt_qi(&a, "SELECT start_ns FROM requests ORDER BY start_ns LIMIT 1 OFFSET 2000");
	/* the answer's fragment is written after its request's root ended */
	ck_assert_int_gt(rt_qi(&a, "SELECT COUNT(*) FROM fragments f JOIN spans s ON s.span_id = "
			       "(SELECT root_span_id FROM requests r WHERE r.request_id = f.request_id)"
			       " WHERE f.end_ns > s.end_ns"), 1000);

	spool_logs_x(&w, 1);
	w.rows_from_ns = from;
	ck_assert_int_eq(rt_run(&w), RC_EXIT_OK);
	/* the requests from the bound on, and of those before it the ones
	 * a row names (db_rows.c, "requests no row names"): here a
	 * channel's (the query's connection: every 5th request has none) */
	int64_t named = rt_qi(&w, "SELECT COUNT(*) FROM requests r WHERE r.start_ns < %lld AND"
			      " (r.request_id IN (SELECT request_id FROM channels)"
			      "  OR r.request_id IN (SELECT request_id FROM processes)"
			      "  OR r.request_id IN (SELECT request_id FROM span_candidates)"
			      "  OR r.certainty <> 'exact')", (long long)from);
	ck_assert_int_gt(named, 0);
	ck_assert_int_eq(rt_qi(&w, "SELECT COUNT(*) FROM requests"), 1000 + named);
	ck_assert_int_eq(rt_qi(&w, "SELECT value FROM stats WHERE key = 'follow_requests_left_out'"), 2000 - named);
	ck_assert_int_lt(named, 2000);
	/* ... each of those that the whole run's rows name: none lost */
	ck_assert_int_eq(rt_qi(&a, "SELECT COUNT(*) FROM requests r WHERE r.start_ns < %lld AND"
			       " (r.request_id IN (SELECT request_id FROM processes)"
			       "  OR r.request_id IN (SELECT request_id FROM span_candidates)"
			       "  OR r.certainty <> 'exact')", (long long)from),
			 rt_qi(&w, "SELECT COUNT(*) FROM requests r WHERE r.start_ns < %lld AND"
			       " (r.request_id IN (SELECT request_id FROM processes)"
			       "  OR r.request_id IN (SELECT request_id FROM span_candidates)"
			       "  OR r.certainty <> 'exact')", (long long)from));
	/* the span of the starts and the certainty counts are the whole
	 * run's (follow.c's window starts from them) */
	ck_assert_int_eq(rt_qi(&w, "SELECT value FROM stats WHERE key = 'requests_first_ns'"),
			 rt_qi(&a, "SELECT value FROM stats WHERE key = 'requests_first_ns'"));
	ck_assert_int_eq(rt_qi(&w, "SELECT value FROM stats WHERE key = 'requests_last_ns'"),
			 rt_qi(&a, "SELECT value FROM stats WHERE key = 'requests_last_ns'"));
	ck_assert_int_eq(rt_qi(&w, "SELECT value FROM stats WHERE key = 'requests_exact'") +
			 rt_qi(&w, "SELECT value FROM stats WHERE key = 'requests_resolved'") +
			 rt_qi(&w, "SELECT value FROM stats WHERE key = 'requests_uncertain'"), 3000);
	ck_assert_int_gt(rt_qi(&w, "SELECT value FROM stats WHERE key = 'follow_rows_skipped'"), 2000 * 3);
	for (size_t i = 0; i < sizeof tabs / sizeof tabs[0]; i++) {
		char *x = rows_of(&a, tabs[i].tab, tabs[i].order, from, 0);
		char *y = rows_of(&w, tabs[i].tab, tabs[i].order, from, 0);
		ck_assert_uint_gt(strlen(x), 0);
		ck_assert_str_eq(x, y);
		free(x);
		free(y);
	}
	/* before the bound: no fragment, message or file; of the spans,
	 * the roots (the requests' keys) */
	ck_assert_int_eq(rt_qi(&w, "SELECT COUNT(*) FROM fragments f JOIN requests r ON r.request_id = f.request_id WHERE r.start_ns < %lld", (long long)from), 0);
	ck_assert_int_eq(rt_qi(&w, "SELECT COUNT(*) FROM messages m JOIN requests r ON r.request_id = m.request_id WHERE r.start_ns < %lld", (long long)from), 0);
	ck_assert_int_eq(rt_qi(&w, "SELECT COUNT(*) FROM files f JOIN requests r ON r.request_id = f.request_id WHERE r.start_ns < %lld", (long long)from), 0);
	ck_assert_int_eq(rt_qi(&w, "SELECT COUNT(*) FROM spans s JOIN requests r ON r.request_id = s.request_id WHERE r.start_ns < %lld AND s.span_id <> r.root_span_id", (long long)from), 0);
	ck_assert_int_eq(rt_qi(&w, "SELECT COUNT(*) FROM spans s JOIN requests r ON r.root_span_id = s.span_id WHERE r.start_ns < %lld", (long long)from), named);
	/* ... and no span of a request left out */
	ck_assert_int_eq(rt_qi(&w, "SELECT COUNT(*) FROM spans WHERE request_id NOT IN (SELECT request_id FROM requests)"), 0);
	/* the latest time left out: at or after the last request's start
	 * before the bound (channels closed before it count too), never at
	 * or after the bound */
	int64_t skip = rt_qi(&w, "SELECT value FROM stats WHERE key = 'follow_rows_skip_max_ns'");
	ck_assert_int_ge(skip, rt_qi(&a, "SELECT max(start_ns) FROM requests WHERE start_ns < %lld", (long long)from));
	ck_assert_int_lt(skip, from);
	rt_done(&a);
	rt_done(&w);
}

START_TEST(spool_same_as_queue)
{
	struct rt a, b, s;
	char *ta, *tb, *ts;

	spool_logs(&a);
	ck_assert_int_eq(rt_run(&a), RC_EXIT_OK);
	ck_assert_int_eq(a.sum.requests, 3000);
	ck_assert_uint_eq(a.sum.spool_bytes, 0);       /* the queue */
	ck_assert_uint_eq(a.sum.replay_threads, 0);
	ta = db_text(&a);

	/* the spool, read back by one thread and inserted by the queue's
	 * (the span_patterns rows too) */
	spool_logs(&b);
	b.spool_all = 1;
	ck_assert_int_eq(rt_run(&b), RC_EXIT_OK);
	ck_assert_uint_gt(b.sum.spool_bytes, 1u << 20); /* refilled */
	ck_assert_uint_eq(b.sum.replay_threads, 2);
	tb = db_text(&b);

	/* the spool, one thread doing it all */
	spool_logs(&s);
	s.spool_all = 1;
	s.replay_serial = 1;
	ck_assert_int_eq(rt_run(&s), RC_EXIT_OK);
	ck_assert_uint_eq(s.sum.replay_threads, 1);
	ts = db_text(&s);

	ck_assert_uint_gt(strlen(ta), 1000000);
	/* the long query went through both, whole */
	ck_assert_int_eq(rt_qi(&b, "SELECT COUNT(*) FROM spans WHERE length(target) = 4096"), 12);
	/* every span of a request has its pattern row, made by the stream */
	ck_assert_int_eq(rt_qi(&b, "SELECT value FROM stats WHERE key = 'patterns_stream'"), 1);
	ck_assert_int_gt(rt_qi(&b, "SELECT COUNT(*) FROM span_patterns"), 6000);
	ck_assert_int_eq(rt_qi(&b, "SELECT COUNT(*) FROM spans s WHERE s.request_id IS NOT NULL"
			       " AND NOT EXISTS (SELECT 1 FROM span_patterns p WHERE p.span_id = s.span_id)"), 0);
	ck_assert_int_eq(strlen(ta), strlen(tb));
	ck_assert_str_eq(ta, tb);
	ck_assert_str_eq(ts, tb);
	/* the database created at the end (rc_options.db_later, as the
	 * keeper of --follow does): every row spooled, warnings and
	 * candidates too, and inserted in the order they came, by two
	 * threads or one */
	for (int serial = 0; serial < 2; serial++) {
		struct rt l;
		spool_logs(&l);
		l.db_later = 1;
		l.replay_serial = serial;
		ck_assert_int_eq(rt_run(&l), RC_EXIT_OK);
		ck_assert_uint_eq(l.sum.replay_threads, serial ? 1 : 2);
		char *tl = db_text(&l);
		ck_assert_str_eq(tl, tb);
		free(tl);
		rt_done(&l);
	}
	free(ta);
	free(tb);
	free(ts);
	rt_done(&a);
	rt_done(&b);
	rt_done(&s);
}
END_TEST

/*
 * park.c's per-thread cache of a server span (rc_span_srv_cached) gives
 * what the map gives, whatever happened since it was filled: random
 * spans opened (server and client kinds) and discarded (their memory
 * reused by later spans with new ids), looked up by ids that are open,
 * gone, of a client span, none or not given yet, through 16 caches.
 */
START_TEST(srv_cache_matches_map)
{
	struct rc_ctx c;
	struct rc_image im;
	struct rc_span *open[64] = { 0 };
	uint64_t cid[16] = { 0 };
	struct rc_span *csp[16] = { 0 };
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	unsigned hits = 0, nulls = 0;

	memset(&c, 0, sizeof c);
	memset(&im, 0, sizeof im);
	ck_assert_int_eq(rc_span_init(&c), 0);
	for (unsigned i = 0; i < 200000; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		unsigned r = (unsigned)(seed >> 33);
		unsigned k = r % 64;
		if (r % 3 == 0) {
			if (open[k]) {
				struct rc_span *head = NULL;
				uint64_t gone = open[k]->id;
				rc_span_discard(&c, &head, open[k]);
				open[k] = NULL;
				/* the caches that held it must not give it */
				for (unsigned j = 0; j < 16; j++)
					ck_assert_ptr_eq(rc_span_srv_cached(&c,
						gone, &cid[j], &csp[j]), NULL);
			} else {
				open[k] = rc_span_new(&c, (r >> 8) % 4 ?
						      RC_SK_SERVER : RC_SK_CLIENT,
						      0, 1 + k, 0, &im, 1, i, 0);
				ck_assert_ptr_nonnull(open[k]);
			}
			continue;
		}
		/* an id: recent, any, none or one not given yet */
		uint64_t next = rc_span_last_id(&c);
		uint64_t id = r % 7 == 0 ? 0 : r % 11 == 0 ? next + 1 + r % 3 :
			      r % 2 && open[(r >> 6) % 64] ?
			      open[(r >> 6) % 64]->id :
			      next > 0 ? next - (r >> 6) % (next < 200 ? next : 200) : 0;
		unsigned q = (r >> 12) % 16;
		struct rc_span *want = rc_span_srv(&c, id);
		struct rc_span *got = rc_span_srv_cached(&c, id, &cid[q], &csp[q]);
		ck_assert_ptr_eq(got, want);
		if (want)
			hits++;
		else
			nulls++;
	}
	ck_assert_uint_gt(hits, 1000);
	ck_assert_uint_gt(nulls, 1000);
	rc_span_free(&c);
}
END_TEST

Suite *recon_unit_suite(void)
{
	Suite *s = suite_create("recon_unit");
	TCase *tc = tcase_create("map");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, map_matches_model);
	tcase_add_test(tc, map_counts);
	tcase_add_test(tc, srv_cache_matches_map);
	suite_add_tcase(s, tc);
	tc = tcase_create("random");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, random_records_consistent, 0, 40);
	suite_add_tcase(s, tc);
	tc = tcase_create("spool");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, spool_same_as_queue);
	tcase_add_test(tc, window_rows_left_out);
	suite_add_tcase(s, tc);
	return s;
}
