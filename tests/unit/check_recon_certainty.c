/*
 * check_recon_certainty.c - never silently wrong: the writability rule of
 * a one-fd wait (a socket timeout), the parked detector and the
 * certainty labels it gives (docs/reconstruct.md, "Certainty").  Each
 * test scripts the records the shim would write, runs the reconstructor
 * and checks the paths and their labels.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btrace/proto.h"
#include "check_recon.h"

#define IN   BT_DIR_IN
#define OUT  BT_DIR_OUT
#define REQ  BT_MK_REQUEST
#define REP  BT_MK_REPLY
#define CTL  BT_MK_CONTROL
#define POLLIN  1
#define POLLOUT 4

/* An HTTP request for TARGET received on FD (whole, one record). */
static void http_in(struct gen_thr *t, int64_t at, int fd, const char *target)
{
	gen_msg(t, at, fd, IN, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, target), 0);
}

static void http_out(struct gen_thr *t, int64_t at, int fd)
{
	gen_msg(t, at, fd, OUT, REP, BT_PROTO_HTTP, 200, 0, 200, 0, 0);
}

static void sql_out(struct gen_thr *t, int64_t at, int fd, const char *sql)
{
	gen_msg(t, at, fd, OUT, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, sql), 0);
}

static void sql_in(struct gen_thr *t, int64_t at, int fd, const char *sql)
{
	gen_msg(t, at, fd, IN, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, sql), 0);
}

static void rep_out(struct gen_thr *t, int64_t at, int fd)
{
	gen_msg(t, at, fd, OUT, REP, BT_PROTO_PGSQL, 50, 0, 0, 0, 0);
}

static void rep_in(struct gen_thr *t, int64_t at, int fd)
{
	gen_msg(t, at, fd, IN, REP, BT_PROTO_PGSQL, 50, 0, 0, 0, 0);
}

/* The backend (pid 400) serving queries on its fd 4 at the given times. */
static struct gen_thr *backend(struct gen_host *h, const char *peer)
{
	struct gen_thr *b = gen_proc_main(h, 400, "/usr/bin/db", 0);
	gen_tcp(b, 12, 4, BT_CR_ACCEPT, "10.0.0.2:5432", peer);
	return b;
}

/* The labels of every request: "target certainty reason" lines. */
static __attribute__((unused)) const char *labels(struct rt *t)
{
	return rt_q(t, "SELECT group_concat(l, '\n') FROM (SELECT target || ' ' || certainty || ' ' || IFNULL(certainty_reason, '-') AS l FROM requests ORDER BY start_ns, request_id)");
}

/* ---- the writability rule: a one-fd wait for POLLOUT ------------------- */

/*
 * A Python worker with a socket timeout: before every send it polls its
 * one socket for POLLOUT.  The backend connection is pooled: the request
 * that last used it is the previous one (and, for the first, none).  The
 * wait must not move the thread into that request.
 */
START_TEST(pollout_alone_stays)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 300, "/usr/bin/python3", 0);
	struct gen_thr *b = backend(h, "10.0.0.1:50010");

	gen_tcp(w, 10, 9, BT_CR_CONNECT, "10.0.0.1:50010", "10.0.0.2:5432");
	gen_accept(w, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	http_in(w, 101, 5, "/a");
	gen_ready(w, 102, 9, POLLOUT | BT_RF_ALONE);
	sql_out(w, 103, 9, "SELECT a");
	sql_in(b, 104, 4, "SELECT a");
	rep_out(b, 105, 4);
	gen_ready(w, 106, 9, POLLIN | BT_RF_ALONE);
	rep_in(w, 107, 9);
	gen_ready(w, 108, 5, POLLOUT | BT_RF_ALONE);
	http_out(w, 109, 5);
	gen_close(w, 110, 5);
	gen_accept(w, 200, 5, 3, "10.0.0.1:80", "10.0.0.6:2222");
	http_in(w, 201, 5, "/b");
	gen_ready(w, 202, 9, POLLOUT | BT_RF_ALONE);
	sql_out(w, 203, 9, "SELECT b");
	sql_in(b, 204, 4, "SELECT b");
	rep_out(b, 205, 4);
	gen_ready(w, 206, 9, POLLIN | BT_RF_ALONE);
	rep_in(w, 207, 9);
	gen_ready(w, 208, 5, POLLOUT | BT_RF_ALONE);
	http_out(w, 209, 5);
	gen_close(w, 210, 5);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /a st=200 client=10.0.0.7:1111\n"
		"  server http 'GET /a' /a web/300/300 st=200\n"
		"    client postgresql 'SELECT' SELECT a web/300/300 st=NULL\n"
		"      server postgresql 'SELECT' SELECT a web/400/400 st=NULL\n"
		"R http GET /b st=200 client=10.0.0.6:2222\n"
		"  server http 'GET /b' /b web/300/300 st=200\n"
		"    client postgresql 'SELECT' SELECT b web/300/300 st=NULL\n"
		"      server postgresql 'SELECT' SELECT b web/400/400 st=NULL\n"
		"unattributed:\n");
	rt_done(&t);
}
END_TEST

/*
 * A traced client with a socket timeout on a keep-alive connection: each
 * request it sends for no request starts one (rule 5), also after it
 * polled for POLLOUT, whatever request last used the connection.
 */
START_TEST(pollout_alone_client)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *c = gen_proc_main(h, 300, "/usr/bin/python3", 0);

	gen_tcp(c, 10, 9, BT_CR_CONNECT, "10.0.0.1:50010", "10.0.0.2:80");
	for (int i = 0; i < 3; i++) {
		int64_t t0 = 100 + 100 * i;
		char tg[8];
		snprintf(tg, sizeof tg, "/%d", i);
		gen_ready(c, t0, 9, POLLOUT | BT_RF_ALONE);
		gen_msg(c, t0 + 1, 9, OUT, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
			GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, tg), 0);
		gen_ready(c, t0 + 2, 9, POLLIN | BT_RF_ALONE);
		gen_msg(c, t0 + 3, 9, IN, REP, BT_PROTO_HTTP, 200, 0, 200, 0, 0);
	}

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /0 st=200 client=/usr/bin/python3[300]@web\n"
		"  client http 'GET /0' /0 web/300/300 st=200\n"
		"R http GET /1 st=200 client=/usr/bin/python3[300]@web\n"
		"  client http 'GET /1' /1 web/300/300 st=200\n"
		"R http GET /2 st=200 client=/usr/bin/python3[300]@web\n"
		"  client http 'GET /2' /2 web/300/300 st=200\n"
		"unattributed:\n");
	rt_done(&t);
}
END_TEST

Suite *recon_certainty_suite(void)
{
	Suite *s = suite_create("recon_certainty");
	TCase *tc = tcase_create("certainty");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, pollout_alone_stays);
	tcase_add_test(tc, pollout_alone_client);
	suite_add_tcase(s, tc);
	return s;
}
