/*
 * check_recon_clock.c - hosts whose clocks disagree.
 *
 * Three hosts whose monotonic clocks are seconds apart and whose wall
 * clocks are wrong by up to 1.5 s: the offsets must be estimated within
 * the true message delays, the paths must be exact and every span must
 * lie inside its parent.  Then a time namespace on one host.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "btrace/proto.h"
#include "check_recon.h"

#define IN   BT_DIR_IN
#define OUT  BT_DIR_OUT
#define REQ  BT_MK_REQUEST
#define REP  BT_MK_REPLY

#define NREQ 5

START_TEST(three_hosts_offsets)
{
	struct rt t;
	struct gen *g = gen_new();
	/* true offsets: mono_front = mono_app - 5 s = mono_db + 3 s */
	struct gen_host *ha = gen_host(g, "front", 0, 0);
	struct gen_host *hb = gen_host(g, "app", 5000000000ll, 250000000ll);
	struct gen_host *hc = gen_host(g, "db", -3000000000ll, -1500000000ll);
	struct gen_thr *a = gen_proc_main(ha, 100, "/usr/sbin/nginx", 0);
	struct gen_thr *b = gen_proc_main(hb, 200, "/usr/bin/gunicorn", 0);
	struct gen_thr *c = gen_proc_main(hc, 300, "/usr/lib/postgresql/15/bin/postgres", 0);
	char exp[8192] = "";

	gen_tcp(a, 10, 9, BT_CR_CONNECT, "10.1.0.1:41000", "10.1.0.2:8000");
	gen_tcp(b, 11, 4, BT_CR_ACCEPT, "10.1.0.2:8000", "10.1.0.1:41000");
	gen_tcp(b, 12, 6, BT_CR_CONNECT, "10.1.0.2:42000", "10.1.0.3:5432");
	gen_tcp(c, 13, 5, BT_CR_ACCEPT, "10.1.0.3:5432", "10.1.0.2:42000");
	for (int k = 0; k < NREQ; k++) {
		int64_t T = 1000 + 2000 * k;
		int64_t dab = 150 + 10 * k, dba = 120 + 7 * k;
		int64_t dbc = 200 + 5 * k, dcb = 180 + 3 * k;
		char item[32], api[32], sql[32], client[32];
		snprintf(item, sizeof item, "/item/%d", k);
		snprintf(api, sizeof api, "/api/%d", k);
		snprintf(sql, sizeof sql, "SELECT %d", k);
		snprintf(client, sizeof client, "10.0.0.9:%d", 50000 + k);

		gen_tcp(a, T, 5, BT_CR_ACCEPT, "10.1.0.1:80", client);
		gen_msg(a, T + 10, 5, IN, REQ, BT_PROTO_HTTP, 80, 0, 0, 0,
			GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, item), 0);
		gen_msg(a, T + 20, 9, OUT, REQ, BT_PROTO_HTTP, 90, 0, 0, 0,
			GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, api), 0);
		gen_msg(b, T + 20 + dab, 4, IN, REQ, BT_PROTO_HTTP, 90, 0, 0, 0,
			GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, api), 0);
		gen_msg(b, T + 200 + dab, 6, OUT, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
			GEN_A(BT_AK_SQL, sql), 0);
		gen_msg(c, T + 200 + dab + dbc, 5, IN, REQ, BT_PROTO_PGSQL, 20, 0,
			0, 0, GEN_A(BT_AK_SQL, sql), 0);
		gen_msg(c, T + 300 + dab + dbc, 5, OUT, REP, BT_PROTO_PGSQL, 50, 0,
			0, 0, 0);
		gen_msg(b, T + 300 + dab + dbc + dcb, 6, IN, REP, BT_PROTO_PGSQL,
			50, 0, 0, 0, 0);
		gen_msg(b, T + 400 + dab + dbc + dcb, 4, OUT, REP, BT_PROTO_HTTP,
			300, 0, 200, 0, 0);
		gen_msg(a, T + 400 + dab + dbc + dcb + dba, 9, IN, REP,
			BT_PROTO_HTTP, 300, 0, 200, 0, 0);
		gen_msg(a, T + 450 + dab + dbc + dcb + dba, 5, OUT, REP,
			BT_PROTO_HTTP, 320, 0, 200, 0, 0);
		gen_close(a, T + 460 + dab + dbc + dcb + dba, 5);

		size_t n = strlen(exp);
		snprintf(exp + n, sizeof exp - n,
			 "R http GET %s st=200 client=%s\n"
			 "  server http 'GET %s' %s front/100/100 st=200\n"
			 "    client http 'GET %s' %s front/100/100 st=200\n"
			 "      server http 'GET %s' %s app/200/200 st=200\n"
			 "        client postgresql 'SELECT' %s app/200/200 st=NULL\n"
			 "          server postgresql 'SELECT' %s db/300/300 st=NULL\n",
			 item, client, item, item, api, api, api, api, sql, sql);
	}
	strcat(exp, "unattributed:\n");

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t), exp);
	ck_assert_int_eq(rt_badly_nested(&t), 0);
	ck_assert_str_eq(rt_q(&t, "SELECT name FROM hosts WHERE reference = 1"), "front");

	/* ref_mono = mono + offset: app is 5 s ahead, db 3 s behind. */
	static const struct { const char *host; int64_t off; } want[] = {
		{ "app", -5000000000ll }, { "db", 3000000000ll },
	};
	for (int i = 0; i < 2; i++) {
		int64_t off = rt_qi(&t, "SELECT offset_ns FROM hosts WHERE name = '%s'", want[i].host);
		int64_t lo = rt_qi(&t, "SELECT lo_ns FROM hosts WHERE name = '%s'", want[i].host);
		int64_t hi = rt_qi(&t, "SELECT hi_ns FROM hosts WHERE name = '%s'", want[i].host);
		ck_assert_str_eq(rt_q(&t, "SELECT method FROM hosts WHERE name = '%s'", want[i].host),
				 "messages");
		ck_assert_msg(lo <= want[i].off && want[i].off <= hi,
			      "%s: true offset %lld outside [%lld, %lld]", want[i].host,
			      (long long)want[i].off, (long long)lo, (long long)hi);
		ck_assert_msg(lo <= off && off <= hi, "%s: estimate outside its bounds",
			      want[i].host);
		/* The bounds are as wide as the shortest delays each way. */
		ck_assert_msg(hi - lo <= 2 * 400 * GEN_US, "%s: bounds %lld wide",
			      want[i].host, (long long)(hi - lo));
		ck_assert_msg(llabs(off - want[i].off) <= 400 * GEN_US,
			      "%s: estimate %lld off by %lld", want[i].host,
			      (long long)off, (long long)(off - want[i].off));
	}
	/* Times are on the reference clock: front's exactly, app's within
	 * the estimate's error of the truth. */
	ck_assert_int_eq(rt_qi(&t, "SELECT start_ns FROM requests WHERE target = '/item/0'"),
			 gen_epoch(1010));
	int64_t app0 = rt_qi(&t, "SELECT start_ns FROM spans WHERE host = 'app' AND kind = 'server' AND target = '/api/0'");
	ck_assert_msg(llabs(app0 - gen_epoch(1170)) <= 400 * GEN_US,
		      "app span at %lld, true %lld", (long long)app0,
		      (long long)gen_epoch(1170));
	const char *err = rt_stderr(&t);
	ck_assert_msg(strstr(err, "clock: front is the reference"), "%s", err);
	ck_assert_msg(strstr(err, "clock: app monotonic offset "), "%s", err);
	ck_assert_msg(strstr(err, "from 10 messages"), "%s", err);
	rt_done(&t);
}
END_TEST

START_TEST(time_namespace_same_host)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "box", 0, 0);
	struct gen_host *ns = gen_host_ns(h, 100000000000ll);   /* +100 s */
	struct gen_thr *c = gen_proc_main(ns, 50, "/usr/bin/curl", 0);
	struct gen_thr *s = gen_proc_main(h, 60, "/usr/sbin/nginx", 0);

	gen_unix(c, 10, 3, BT_CR_CONNECT, 7001, 7002, "/run/web.sock");
	gen_unix(s, 11, 8, BT_CR_ACCEPT, 7002, 7001, "/run/web.sock");
	gen_msg(c, 20, 3, OUT, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/ns"), 0);
	gen_msg(s, 21, 8, IN, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/ns"), 0);
	gen_msg(s, 30, 8, OUT, REP, BT_PROTO_HTTP, 90, 0, 200, 0, 0);
	gen_msg(c, 31, 3, IN, REP, BT_PROTO_HTTP, 90, 0, 200, 0, 0);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /ns st=200 client=/usr/bin/curl[50]@box\n"
		"  client http 'GET /ns' /ns box/50/50 st=200\n"
		"    server http 'GET /ns' /ns box/60/60 st=200\n"
		"unattributed:\n");
	ck_assert_int_eq(t.sum.domains, 2);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM hosts WHERE name = 'box'"), 2);
	/* Domains in order of realtime - monotonic: the namespace first;
	 * equal event counts make the first one the reference. */
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(domain || ':' || method, ',') FROM hosts"),
			 "box:reference,box#2:host");
	/* One wall clock: the namespace's times are exact. */
	ck_assert_int_eq(rt_qi(&t, "SELECT start_ns FROM spans WHERE kind = 'server'"),
			 gen_epoch(21));
	ck_assert_int_eq(rt_qi(&t, "SELECT end_ns FROM spans WHERE kind = 'client'"),
			 gen_epoch(31));
	ck_assert_int_eq(rt_qi(&t, "SELECT offset_ns FROM hosts WHERE method = 'host'"),
			 100000000000ll);
	rt_done(&t);
}
END_TEST

/* ---- a host whose wall clock is two hours off ------------------------------ */

START_TEST(wall_clock_hours_off)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *ha = gen_host(g, "front", 0, 0);
	struct gen_host *hb = gen_host(g, "back", 123000000000ll, 7200000000000ll);
	struct gen_thr *a = gen_proc_main(ha, 100, "/usr/sbin/nginx", 0);
	struct gen_thr *a2 = gen_proc_main(ha, 101, "/usr/bin/cron", 0);
	struct gen_thr *b = gen_proc_main(hb, 200, "/usr/bin/app", 0);

	gen_tcp(a, 10, 9, BT_CR_CONNECT, "10.1.0.1:41000", "10.1.0.2:8000");
	gen_tcp(b, 11, 4, BT_CR_ACCEPT, "10.1.0.2:8000", "10.1.0.1:41000");
	for (int k = 0; k < 3; k++) {
		int64_t T = 100 + 1000 * k;
		gen_tcp(a, T, 5, BT_CR_ACCEPT, "10.1.0.1:80", "10.0.0.9:50000");
		gen_msg(a, T + 10, 5, IN, REQ, BT_PROTO_HTTP, 80, 0, 0, 0,
			GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/x"), 0);
		gen_msg(a, T + 20, 9, OUT, REQ, BT_PROTO_HTTP, 90, 0, 0, 0,
			GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/y"), 0);
		gen_msg(b, T + 120, 4, IN, REQ, BT_PROTO_HTTP, 90, 0, 0, 0,
			GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/y"), 0);
		gen_msg(b, T + 300, 4, OUT, REP, BT_PROTO_HTTP, 300, 0, 200, 0, 0);
		gen_msg(a, T + 400, 9, IN, REP, BT_PROTO_HTTP, 300, 0, 200, 0, 0);
		gen_msg(a, T + 450, 5, OUT, REP, BT_PROTO_HTTP, 320, 0, 200, 0, 0);
		gen_close(a, T + 460, 5);
		/* Unrelated work on the reference host, to make it busiest. */
		gen_open(a2, T + 500, 3, "/var/spool/cron/x");
	}

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	const char *one =
		"R http GET /x st=200 client=10.0.0.9:50000\n"
		"  server http 'GET /x' /x front/100/100 st=200\n"
		"    client http 'GET /y' /y front/100/100 st=200\n"
		"      server http 'GET /y' /y back/200/200 st=200\n";
	char exp[1024];
	snprintf(exp, sizeof exp, "%s%s%sunattributed:\n", one, one, one);
	ck_assert_str_eq(rt_paths(&t), exp);
	ck_assert_int_eq(rt_badly_nested(&t), 0);
	int64_t off = rt_qi(&t, "SELECT offset_ns FROM hosts WHERE name = 'back'");
	ck_assert_msg(llabs(off + 123000000000ll) <= 100 * GEN_US,
		      "offset %lld", (long long)off);
	/* back's times are on front's clock, not two hours late. */
	int64_t s = rt_qi(&t, "SELECT MIN(start_ns) FROM spans WHERE host = 'back'");
	ck_assert_msg(llabs(s - gen_epoch(220)) <= 100 * GEN_US, "%lld", (long long)s);
	rt_done(&t);
}
END_TEST

/* ---- a server that works before its request's last byte, on another host -- */

/*
 * php-fpm on host app reads the start of a FastCGI request (MSG_BEGIN),
 * works and answers, and reads the request's last byte long after.  Only
 * the first byte bounds app's clock from below tightly: without it the
 * estimate lets app's server span start before nginx's client span.
 */
START_TEST(early_first_byte_bounds_the_clock)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *hw = gen_host(g, "web", 0, 0);
	struct gen_host *ha = gen_host(g, "app", 1500000000000ll, 0);
	struct gen_thr *w = gen_proc_main(hw, 100, "/usr/sbin/nginx", 0);
	struct gen_thr *w2 = gen_proc_main(hw, 101, "/usr/bin/cron", 0);
	struct gen_thr *f = gen_proc_main(ha, 200, "/usr/sbin/php-fpm8.2", 0);

	gen_tcp(w, 5, 9, BT_CR_CONNECT, "10.1.0.1:41000", "10.1.0.2:9000");
	gen_tcp(f, 6, 4, BT_CR_ACCEPT, "10.1.0.2:9000", "10.1.0.1:41000");
	for (int k = 0; k < 3; k++) {
		int64_t T = 100 + 1000 * k;
		gen_tcp(w, T, 5, BT_CR_ACCEPT, "10.1.0.1:80", "10.0.0.9:50000");
		gen_msg(w, T + 10, 5, IN, REQ, BT_PROTO_HTTP, 80, 0, 0, 0,
			GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/a.php"), 0);
		gen_msg(w, T + 20, 9, OUT, REQ, BT_PROTO_FASTCGI, 300, 0, 0, 0,
			GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_FCGI_URI, "/a.php"), 0);
		gen_msg_begin(f, T + 22, 4, IN);
		gen_msg(f, T + 300, 4, OUT, REP, BT_PROTO_FASTCGI, 200, 0, 0, 0, 0);
		gen_msg(f, T + 900, 4, IN, REQ, BT_PROTO_FASTCGI, 300, 0, 0, 0,
			GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_FCGI_URI, "/a.php"), 0);
		gen_msg(w, T + 310, 9, IN, REP, BT_PROTO_FASTCGI, 200, 0, 0, 0, 0);
		gen_msg(w, T + 320, 5, OUT, REP, BT_PROTO_HTTP, 320, 0, 200, 0, 0);
		gen_close(w, T + 330, 5);
		gen_open(w2, T + 500, 3, "/var/spool/cron/x");
	}

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	const char *one =
		"R http GET /a.php st=200 client=10.0.0.9:50000\n"
		"  server http 'GET /a.php' /a.php web/100/100 st=200\n"
		"    client fastcgi 'GET /a.php' /a.php web/100/100 st=NULL\n"
		"      server fastcgi 'GET /a.php' /a.php app/200/200 st=NULL\n";
	char exp[1024];
	snprintf(exp, sizeof exp, "%s%s%sunattributed:\n", one, one, one);
	ck_assert_str_eq(rt_paths(&t), exp);
	ck_assert_int_eq(rt_badly_nested(&t), 0);
	rt_done(&t);
}
END_TEST

Suite *recon_clock_suite(void)
{
	Suite *s = suite_create("recon_clock");
	TCase *tc = tcase_create("clock");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, three_hosts_offsets);
	tcase_add_test(tc, time_namespace_same_host);
	tcase_add_test(tc, wall_clock_hours_off);
	tcase_add_test(tc, early_first_byte_bounds_the_clock);
	suite_add_tcase(s, tc);
	return s;
}
