/*
 * check_recon_paths.c - request paths through the server architectures of
 * the paper (section 4): thread per connection, event loop, pipelining,
 * fork/exec (CGI), threads, untraced peers matched by witness, traced
 * clients (rule 5), name lookups.  Each test scripts the records the shim
 * would write, runs the reconstructor and compares the whole result.
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
#define WIT  BT_MF_WITNESS
#define POLLIN 1

/* ---- thread per connection, with a traced database behind ------------- */

static void tpc_worker(struct gen_thr *w, int64_t t0, int fd, int dbfd,
		       const char *client, const char *target, const char *lport,
		       const char *sql, uint32_t status)
{
	gen_tcp(w, t0, fd, BT_CR_ACCEPT, "10.0.0.1:80", client);
	gen_msg_begin(w, t0 + 10, fd, IN);
	gen_msg(w, t0 + 12, fd, IN, REQ, BT_PROTO_HTTP, 80, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, target), 0);
	gen_tcp(w, t0 + 20, dbfd, BT_CR_CONNECT, lport, "10.0.0.2:5432");
	gen_msg(w, t0 + 30, dbfd, OUT, REQ, BT_PROTO_PGSQL, 40, 0, 0, 0,
		GEN_A(BT_AK_SQL, sql), 0);
	(void)status;
}

static void tpc_db(struct gen_thr *d, int64_t t0, int fd, const char *peer,
		   const char *sql, int64_t rx, int64_t tx)
{
	gen_tcp(d, t0, fd, BT_CR_ACCEPT, "10.0.0.2:5432", peer);
	gen_msg(d, rx, fd, IN, REQ, BT_PROTO_PGSQL, 40, 0, 0, 0,
		GEN_A(BT_AK_SQL, sql), 0);
	gen_msg(d, tx, fd, OUT, REP, BT_PROTO_PGSQL, 60, 0, 0, 0,
		GEN_A(BT_AK_TAG, "SELECT 1"), 0);
}

START_TEST(thread_per_connection)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *m = gen_proc_main(h, 100, "/usr/sbin/apache2", 0);
	struct gen_thr *dm = gen_proc_main(h, 200, "/usr/lib/postgresql/15/bin/postgres", 0);

	gen_thread_create(m, 1, 1);
	gen_thread_create(m, 2, 2);
	gen_thread_create(dm, 1, 1);
	gen_thread_create(dm, 2, 2);
	struct gen_thr *w1 = gen_thread(gen_thr_proc(m), 3, 101, 100, 1);
	struct gen_thr *w2 = gen_thread(gen_thr_proc(m), 4, 102, 100, 2);
	struct gen_thr *d1 = gen_thread(gen_thr_proc(dm), 3, 201, 200, 1);
	struct gen_thr *d2 = gen_thread(gen_thr_proc(dm), 4, 202, 200, 2);

	tpc_worker(w1, 100, 5, 7, "10.0.0.9:40000", "/users?id=7",
		   "10.0.0.1:50001", "SELECT name FROM users WHERE id = 7", 200);
	tpc_worker(w2, 105, 6, 9, "10.0.0.8:40001", "/orders",
		   "10.0.0.1:50002", "SELECT * FROM orders", 404);
	/* The database logs its receive 1 us before the client logs the
	 * send (the write returned late): the merge must still put the
	 * send first and the server span inside the client span. */
	tpc_db(d1, 121, 5, "10.0.0.1:50001",
	       "SELECT name FROM users WHERE id = 7", 129, 150);
	tpc_db(d2, 126, 6, "10.0.0.1:50002", "SELECT * FROM orders", 140, 170);
	gen_msg(w1, 160, 7, IN, REP, BT_PROTO_PGSQL, 60, 0, 0, 0, 0);
	gen_open(w1, 170, 8, "/var/www/tpl/user.html");
	gen_msg(w2, 175, 9, IN, REP, BT_PROTO_PGSQL, 60, 0, 0, 0, 0);
	gen_msg(w1, 180, 5, OUT, REP, BT_PROTO_HTTP, 500, 0, 200, 0, 0);
	gen_msg(w2, 185, 6, OUT, REP, BT_PROTO_HTTP, 300, 0, 404, 0, 0);
	gen_close(w1, 190, 7);
	gen_close(w1, 191, 5);
	gen_close(d1, 192, 5);
	gen_close(w2, 195, 9);
	gen_close(w2, 195, 6);
	gen_close(d2, 196, 6);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /users?id=7 st=200 client=10.0.0.9:40000\n"
		"  server http 'GET /users' /users?id=7 web/100/101 st=200\n"
		"    client postgresql 'SELECT' SELECT name FROM users WHERE id = 7 web/100/101 st=NULL\n"
		"      server postgresql 'SELECT' SELECT name FROM users WHERE id = 7 web/200/201 st=NULL\n"
		"R http GET /orders st=404 client=10.0.0.8:40001\n"
		"  server http 'GET /orders' /orders web/100/102 st=404\n"
		"    client postgresql 'SELECT' SELECT * FROM orders web/100/102 st=NULL\n"
		"      server postgresql 'SELECT' SELECT * FROM orders web/200/202 st=NULL\n"
		"unattributed:\n");
	/* Request times: first byte in (MSG_BEGIN) to the reply. */
	ck_assert_int_eq(rt_qi(&t, "SELECT start_ns FROM requests WHERE target = '/users?id=7'"),
			 gen_epoch(110));
	ck_assert_int_eq(rt_qi(&t, "SELECT end_ns FROM requests WHERE target = '/users?id=7'"),
			 gen_epoch(180));
	/* The early receive was placed at its send. */
	ck_assert_int_eq(rt_qi(&t, "SELECT start_ns FROM spans WHERE pid = 200 AND tid = 201"),
			 gen_epoch(130));
	ck_assert_int_eq(rt_badly_nested(&t), 0);
	ck_assert_str_eq(rt_q(&t, "SELECT r.target FROM files f JOIN requests r USING (request_id) WHERE f.path = '/var/www/tpl/user.html'"),
			 "/users?id=7");
	/* Every message of the database is paired with its sender's. */
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM messages WHERE pid = 200 AND dir = 'in' AND peer_message_id IS NULL"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'causal_clamps'"), 1);
	ck_assert_int_eq(t.sum.requests, 2);
	ck_assert_int_eq(t.sum.warnings, 0);
	rt_done(&t);
}
END_TEST

/* ---- a single-threaded event loop with one pooled backend connection ---- */

START_TEST(event_loop_pooled_backend)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 300, "/usr/sbin/nginx", 0);
	struct gen_thr *b = gen_proc_main(h, 400, "/usr/lib/postgresql/15/bin/postgres", 0);

	/* The pool connects at start-up, for no request. */
	gen_tcp(w, 10, 9, BT_CR_CONNECT, "10.0.0.1:50010", "10.0.0.2:5432");
	gen_msg(w, 11, 9, OUT, CTL, BT_PROTO_PGSQL, 30, 0, 0, 0, 0);
	gen_tcp(b, 12, 4, BT_CR_ACCEPT, "10.0.0.2:5432", "10.0.0.1:50010");
	gen_msg(b, 13, 4, IN, CTL, BT_PROTO_PGSQL, 30, 0, 0, 0, 0);
	gen_msg(b, 14, 4, OUT, CTL, BT_PROTO_PGSQL, 20, 0, 0, 0, 0);
	gen_ready(w, 15, 9, POLLIN);
	gen_msg(w, 16, 9, IN, CTL, BT_PROTO_PGSQL, 20, 0, 0, 0, 0);

	gen_ready(w, 100, 3, POLLIN);
	gen_accept(w, 101, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_ready(w, 102, 3, POLLIN);
	gen_accept(w, 103, 6, 3, "10.0.0.1:80", "10.0.0.6:2222");
	gen_ready(w, 110, 5, POLLIN);
	gen_msg(w, 111, 5, IN, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/a"), 0);
	gen_msg(w, 112, 9, OUT, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT a"), 0);
	gen_ready(w, 120, 6, POLLIN);
	gen_msg(w, 121, 6, IN, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/b"), 0);
	gen_msg(w, 122, 9, OUT, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT b"), 0);

	gen_msg(b, 113, 4, IN, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT a"), 0);
	gen_msg(b, 130, 4, OUT, REP, BT_PROTO_PGSQL, 50, 0, 0, 0, 0);
	gen_msg(b, 131, 4, IN, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT b"), 0);
	gen_msg(b, 140, 4, OUT, REP, BT_PROTO_PGSQL, 50, 0, 0, 0, 0);

	gen_ready(w, 132, 9, POLLIN);
	gen_msg(w, 133, 9, IN, REP, BT_PROTO_PGSQL, 50, 0, 0, 0, 0);
	gen_msg(w, 134, 5, OUT, REP, BT_PROTO_HTTP, 200, 0, 200, 0, 0);
	gen_ready(w, 141, 9, POLLIN);
	gen_msg(w, 142, 9, IN, REP, BT_PROTO_PGSQL, 50, 0, 0, 0, 0);
	gen_msg(w, 143, 6, OUT, REP, BT_PROTO_HTTP, 200, 0, 200, 0, 0);
	gen_ready(w, 150, -1, 0);
	gen_open(w, 151, 12, "/var/log/nginx/access.log");

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
	/* The fragment each backend reply starts works for its request. */
	ck_assert_str_eq(rt_q(&t, "SELECT r.target FROM fragments f JOIN requests r USING (request_id) WHERE f.start_ns = %lld",
			      (long long)gen_epoch(132)), "/a");
	ck_assert_str_eq(rt_q(&t, "SELECT r.target FROM fragments f JOIN requests r USING (request_id) WHERE f.start_ns = %lld",
			      (long long)gen_epoch(141)), "/b");
	ck_assert_str_eq(rt_q(&t, "SELECT trigger || ' ' || fd FROM fragments WHERE start_ns = %lld",
			      (long long)gen_epoch(141)), "ready 9");
	/* Accepting after READY on the listening fd is one fragment. */
	ck_assert_str_eq(rt_q(&t, "SELECT trigger || ' ' || fd || ' ' || events || ' ' || IFNULL(request_id, 'none') FROM fragments WHERE start_ns = %lld",
			      (long long)gen_epoch(100)), "ready 3 2 none");
	/* A timeout: the work that follows is nobody's. */
	ck_assert_str_eq(rt_q(&t, "SELECT trigger || ' ' || IFNULL(request_id, 'none') FROM fragments WHERE start_ns = %lld",
			      (long long)gen_epoch(150)), "timeout none");
	ck_assert_str_eq(rt_q(&t, "SELECT IFNULL(request_id, 'none') FROM files"), "none");
	/* Start-up messages are control: no request, not unattributed. */
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM messages WHERE kind = 'control' AND request_id IS NULL"), 4);
	ck_assert_int_eq(rt_qi(&t, "SELECT n FROM unattributed WHERE what = 'messages'"), 0);
	ck_assert_int_eq(rt_badly_nested(&t), 0);
	rt_done(&t);
}
END_TEST

/* ---- output queued in the program, written when the fd is writable ----- */

static void want(struct gen_thr *t, int64_t at, int fd, uint32_t events)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_WANT;
	ev.fd = fd;
	ev.flags = events;
	gen_ev(t, at, &ev);
}

/*
 * An event library (libevent bufferevents) queues a fragment's output and
 * writes it from the writable event later.  On a pooled backend connection
 * the writable fragment must work for the request whose fragment asked to
 * write (WANT), not for the previous request, which used the connection
 * last.
 */
START_TEST(deferred_writes_follow_want)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 300, "/usr/bin/evserver", 0);
	struct gen_thr *b = gen_proc_main(h, 400, "/usr/bin/backend", 0);

	gen_tcp(w, 10, 9, BT_CR_CONNECT, "10.0.0.1:50010", "10.0.0.2:7000");
	gen_tcp(b, 12, 4, BT_CR_ACCEPT, "10.0.0.2:7000", "10.0.0.1:50010");
	gen_ready(w, 100, 3, POLLIN);
	gen_accept(w, 101, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_ready(w, 102, 3, POLLIN);
	gen_accept(w, 103, 6, 3, "10.0.0.1:80", "10.0.0.6:2222");

	/* /a: its call is queued, written when fd 9 is writable */
	gen_ready(w, 110, 5, POLLIN);
	gen_msg(w, 111, 5, IN, REQ, BT_PROTO_LINE, 6, 0, 0, 0,
		GEN_A(BT_AK_LINE, "REQ a"), 0);
	want(w, 112, 9, 1 | 4);
	gen_ready(w, 113, 9, 4);
	gen_msg(w, 114, 9, OUT, REQ, BT_PROTO_LINE, 7, 0, 0, 0,
		GEN_A(BT_AK_LINE, "CALL a"), 0);
	want(w, 115, 9, 1);
	gen_msg(b, 116, 4, IN, REQ, BT_PROTO_LINE, 7, 0, 0, 0,
		GEN_A(BT_AK_LINE, "CALL a"), 0);
	gen_msg(b, 117, 4, OUT, REP, BT_PROTO_LINE, 5, 0, 0, 0,
		GEN_A(BT_AK_LINE, "OK a"), 0);
	gen_ready(w, 118, 9, POLLIN);
	gen_msg(w, 119, 9, IN, REP, BT_PROTO_LINE, 5, 0, 0, 0,
		GEN_A(BT_AK_LINE, "OK a"), 0);
	want(w, 120, 5, 1 | 4);
	gen_ready(w, 121, 5, 4);
	gen_msg(w, 122, 5, OUT, REP, BT_PROTO_LINE, 7, 0, 0, 0,
		GEN_A(BT_AK_LINE, "RESP a"), 0);

	/* /b: the pooled connection was last used by /a */
	gen_ready(w, 130, 6, POLLIN);
	gen_msg(w, 131, 6, IN, REQ, BT_PROTO_LINE, 6, 0, 0, 0,
		GEN_A(BT_AK_LINE, "REQ b"), 0);
	want(w, 132, 9, 1 | 4);
	gen_ready(w, 133, 9, 4);
	gen_msg(w, 134, 9, OUT, REQ, BT_PROTO_LINE, 7, 0, 0, 0,
		GEN_A(BT_AK_LINE, "CALL b"), 0);
	want(w, 135, 9, 1);
	gen_msg(b, 136, 4, IN, REQ, BT_PROTO_LINE, 7, 0, 0, 0,
		GEN_A(BT_AK_LINE, "CALL b"), 0);
	gen_msg(b, 137, 4, OUT, REP, BT_PROTO_LINE, 5, 0, 0, 0,
		GEN_A(BT_AK_LINE, "OK b"), 0);
	gen_ready(w, 138, 9, POLLIN);
	gen_msg(w, 139, 9, IN, REP, BT_PROTO_LINE, 5, 0, 0, 0,
		GEN_A(BT_AK_LINE, "OK b"), 0);
	gen_msg(w, 140, 6, OUT, REP, BT_PROTO_LINE, 7, 0, 0, 0,
		GEN_A(BT_AK_LINE, "RESP b"), 0);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM requests"), 2);
	ck_assert_str_eq(rt_q(&t, "SELECT r.target FROM spans s JOIN requests r USING (request_id) WHERE s.kind = 'client' AND s.target = 'CALL a'"), "REQ a");
	ck_assert_str_eq(rt_q(&t, "SELECT r.target FROM spans s JOIN requests r USING (request_id) WHERE s.kind = 'client' AND s.target = 'CALL b'"), "REQ b");
	ck_assert_str_eq(rt_q(&t, "SELECT r.target FROM spans s JOIN requests r USING (request_id) WHERE s.kind = 'server' AND s.target = 'CALL b'"), "REQ b");
	ck_assert_int_eq(rt_badly_nested(&t), 0);
	rt_done(&t);
}
END_TEST

/* ---- a pooled connection shared by worker threads ------------------------ */

/*
 * Worker A and worker B use one pooled backend connection in turn: A's call
 * goes first on the wire (offset 0), B's after (offset 8).  A's stream
 * waits at its first receive (its client logged the send late), so the
 * merge meets B's send first.  The backend's receive of A's call must wait
 * for A's send (not take the connection for untraced), and the replies
 * must answer the calls in wire order, not in merge order.
 */
START_TEST(pooled_connection_shared_by_threads)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *c = gen_proc_main(h, 500, "/usr/bin/client", 0);
	struct gen_thr *a = gen_proc_main(h, 300, "/usr/bin/front", 0);
	struct gen_thr *b = gen_thread(gen_thr_proc(a), 5, 302, 0, 0);
	struct gen_thr *k = gen_proc_main(h, 400, "/usr/bin/backend", 0);

	/* connections: client->front (two), front->backend (one, pooled) */
	gen_tcp(c, 10, 3, BT_CR_CONNECT, "10.0.0.5:40001", "10.0.0.1:80");
	gen_tcp(c, 11, 4, BT_CR_CONNECT, "10.0.0.5:40002", "10.0.0.1:80");
	gen_accept(a, 12, 5, 3, "10.0.0.1:80", "10.0.0.5:40001");
	gen_accept(a, 13, 6, 3, "10.0.0.1:80", "10.0.0.5:40002");
	gen_tcp(a, 14, 9, BT_CR_CONNECT, "10.0.0.1:50010", "10.0.0.2:7000");
	gen_tcp(k, 15, 4, BT_CR_ACCEPT, "10.0.0.2:7000", "10.0.0.1:50010");

	/* A: REQ a read at 110 (its send is logged only at 150) */
	gen_msg(a, 110, 5, IN, REQ, BT_PROTO_LINE, 6, 0, 0, 0,
		GEN_A(BT_AK_LINE, "REQ a"), 0);
	gen_msg(a, 111, 9, OUT, REQ, BT_PROTO_LINE, 8, 0, 0, 0,
		GEN_A(BT_AK_LINE, "CALL a"), 0);
	gen_msg(k, 112, 4, IN, REQ, BT_PROTO_LINE, 8, 0, 0, 0,
		GEN_A(BT_AK_LINE, "CALL a"), 0);
	gen_msg(k, 113, 4, OUT, REP, BT_PROTO_LINE, 6, 0, 0, 0,
		GEN_A(BT_AK_LINE, "OK a"), 0);
	gen_msg(a, 114, 9, IN, REP, BT_PROTO_LINE, 6, 0, 0, 0,
		GEN_A(BT_AK_LINE, "OK a"), 0);
	gen_msg(a, 115, 5, OUT, REP, BT_PROTO_LINE, 7, 0, 0, 0,
		GEN_A(BT_AK_LINE, "RESP a"), 0);
	/* B: takes the connection after A */
	gen_msg(c, 119, 4, OUT, REQ, BT_PROTO_LINE, 6, 0, 0, 0,
		GEN_A(BT_AK_LINE, "REQ b"), 0);
	gen_msg(b, 120, 6, IN, REQ, BT_PROTO_LINE, 6, 0, 0, 0,
		GEN_A(BT_AK_LINE, "REQ b"), 0);
	gen_msg(b, 121, 9, OUT, REQ, BT_PROTO_LINE, 8, 0, 0, 0,
		GEN_A(BT_AK_LINE, "CALL b"), 0);
	gen_msg(k, 122, 4, IN, REQ, BT_PROTO_LINE, 8, 0, 0, 0,
		GEN_A(BT_AK_LINE, "CALL b"), 0);
	gen_msg(k, 123, 4, OUT, REP, BT_PROTO_LINE, 6, 0, 0, 0,
		GEN_A(BT_AK_LINE, "OK b"), 0);
	gen_msg(b, 124, 9, IN, REP, BT_PROTO_LINE, 6, 0, 0, 0,
		GEN_A(BT_AK_LINE, "OK b"), 0);
	gen_msg(b, 125, 6, OUT, REP, BT_PROTO_LINE, 7, 0, 0, 0,
		GEN_A(BT_AK_LINE, "RESP b"), 0);
	/* the client's write of REQ a is logged late */
	gen_msg(c, 150, 3, OUT, REQ, BT_PROTO_LINE, 6, 0, 0, 0,
		GEN_A(BT_AK_LINE, "REQ a"), 0);
	gen_msg(c, 151, 3, IN, REP, BT_PROTO_LINE, 7, 0, 0, 0,
		GEN_A(BT_AK_LINE, "RESP a"), 0);
	gen_msg(c, 152, 4, IN, REP, BT_PROTO_LINE, 7, 0, 0, 0,
		GEN_A(BT_AK_LINE, "RESP b"), 0);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM requests"), 2);
	for (int i = 0; i < 2; i++) {
		const char *x = i ? "b" : "a";
		ck_assert_str_eq(rt_q(&t, "SELECT r.target FROM spans s JOIN requests r USING (request_id) WHERE s.kind = 'client' AND s.target = 'CALL %s'", x),
				 i ? "REQ b" : "REQ a");
		ck_assert_str_eq(rt_q(&t, "SELECT r.target FROM spans s JOIN requests r USING (request_id) WHERE s.kind = 'server' AND s.target = 'CALL %s'", x),
				 i ? "REQ b" : "REQ a");
		/* the client span of CALL x ends with OK x, read by x's
		 * thread.  A's records follow its first receive, which cannot
		 * precede the client's send logged at 150; the backend answers
		 * B only after A's call, so B's reply is clamped there too. */
		ck_assert_int_eq(rt_qi(&t, "SELECT end_ns FROM spans WHERE kind = 'client' AND target = 'CALL %s'", x),
				 gen_epoch(150));
		ck_assert_int_ge(rt_qi(&t, "SELECT end_ns - start_ns FROM spans WHERE kind = 'client' AND target = 'CALL %s'", x), 0);
	}
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'unpaired_receives'"), 0);
	ck_assert_int_eq(rt_badly_nested(&t), 0);
	rt_done(&t);
}
END_TEST

/* ---- pipelined requests on one connection -------------------------------- */

START_TEST(pipelined_requests)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 500, "/usr/sbin/apache2", 0);

	gen_tcp(w, 10, 5, BT_CR_ACCEPT, "10.0.0.1:80", "10.0.0.5:3333");
	gen_msg(w, 20, 5, IN, REQ, BT_PROTO_HTTP, 50, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/one"), 0);
	gen_msg(w, 21, 5, IN, REQ, BT_PROTO_HTTP, 50, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/two"), 0);
	gen_msg(w, 30, 5, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);
	gen_msg(w, 40, 5, OUT, REP, BT_PROTO_HTTP, 100, 0, 201, 0, 0);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /one st=200 client=10.0.0.5:3333\n"
		"  server http 'GET /one' /one web/500/500 st=200\n"
		"R http GET /two st=201 client=10.0.0.5:3333\n"
		"  server http 'GET /two' /two web/500/500 st=201\n"
		"unattributed:\n");
	ck_assert_int_eq(rt_qi(&t, "SELECT end_ns FROM requests WHERE target = '/one'"),
			 gen_epoch(30));
	ck_assert_int_eq(rt_qi(&t, "SELECT end_ns FROM requests WHERE target = '/two'"),
			 gen_epoch(40));
	/* The first reply answers /one although /two was read last. */
	ck_assert_str_eq(rt_q(&t, "SELECT r.target FROM messages m JOIN requests r USING (request_id) WHERE m.dir = 'out' AND m.ts_ns = %lld",
			      (long long)gen_epoch(30)), "/one");
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'reply_designation_mismatch'"), 1);
	rt_done(&t);
}
END_TEST

/* ---- fork and exec of a CGI program with pipes --------------------------- */

START_TEST(fork_exec_cgi)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 600, "/usr/sbin/apache2", 0);

	gen_tcp(w, 10, 5, BT_CR_ACCEPT, "10.0.0.1:80", "10.0.0.4:4444");
	gen_msg(w, 20, 5, IN, REQ, BT_PROTO_HTTP, 120, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "POST"),
		GEN_A(BT_AK_TARGET, "/cgi-bin/hello"), 0);
	gen_pipe(w, 30, 7, 8, 9001);
	gen_pipe(w, 31, 9, 10, 9002);
	struct gen_proc *cp = gen_fork(w, 40, 601, NULL);
	/* The child runs before the parent logs the fork. */
	struct gen_thr *c = gen_thread(cp, 38, 601, 0, 0);
	gen_proc_start(c, 38, 600, 600, BT_PF_FORKED);
	gen_dup(c, 39, 7, 0);
	gen_dup(c, 39, 10, 1);
	gen_close(c, 41, 7);
	gen_close(c, 41, 8);
	gen_close(c, 41, 9);
	gen_close(c, 41, 10);
	struct gen_proc *xp = gen_exec(c, 42, "/usr/lib/cgi-bin/hello");
	struct gen_thr *x = gen_thread(xp, 45, 601, 0, 0);
	gen_proc_start(x, 45, 600, 0, BT_PF_EXECED);
	gen_inherit_pipe(x, 46, 0, 9001);
	gen_inherit_pipe(x, 47, 1, 9002);
	gen_msg(x, 60, 0, IN, REQ, BT_PROTO_ONESHOT, 10, BT_MF_EOF, 0, 0, 0);
	gen_open(x, 65, 3, "/etc/hello.conf");
	gen_msg_begin(x, 70, 1, OUT);
	gen_msg(x, 80, 1, OUT, REQ, BT_PROTO_ONESHOT, 100, BT_MF_EOF, 0, 0, 0);
	gen_thread_exit(x, 81);

	gen_close(w, 41, 7);
	gen_close(w, 41, 10);
	gen_data(w, 50, 8, OUT, 10);
	gen_close(w, 51, 8);
	gen_data(w, 75, 9, IN, 60);
	gen_data(w, 82, 9, IN, 40);
	gen_close(w, 83, 9);
	gen_msg(w, 90, 5, OUT, REP, BT_PROTO_HTTP, 400, 0, 200, 0, 0);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http POST /cgi-bin/hello st=200 client=10.0.0.4:4444\n"
		"  server http 'POST /cgi-bin/hello' /cgi-bin/hello web/600/600 st=200\n"
		"    server oneshot 'oneshot' NULL web/601/601 st=NULL\n"
		"      client oneshot 'oneshot' NULL web/601/601 st=NULL\n"
		"unattributed:\n");
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(how || ':' || r.target || ':' || exe, ',') FROM (SELECT * FROM processes WHERE pid = 601 ORDER BY process_id) p JOIN requests r USING (request_id)"),
			 "fork:/cgi-bin/hello:/usr/sbin/apache2,exec:/cgi-bin/hello:/usr/lib/cgi-bin/hello");
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM processes x JOIN processes y ON y.process_id = x.parent_process_id WHERE x.how = 'exec' AND y.how = 'fork' AND y.pid = 601"), 1);
	ck_assert_str_eq(rt_q(&t, "SELECT cmdline FROM processes WHERE pid = 601 AND how = 'exec'"),
			 "/usr/lib/cgi-bin/hello");
	ck_assert_str_eq(rt_q(&t, "SELECT r.target FROM files f JOIN requests r USING (request_id) WHERE path = '/etc/hello.conf'"),
			 "/cgi-bin/hello");
	/* The CGI's stdin span lasts for the work it starts. */
	ck_assert_int_eq(rt_qi(&t, "SELECT end_ns - start_ns FROM spans WHERE pid = 601 AND kind = 'server'"),
			 20 * GEN_US);
	/* The child's records stamped before the fork come after it. */
	ck_assert_int_eq(rt_qi(&t, "SELECT start_ns FROM processes WHERE pid = 601 AND how = 'fork'"),
			 gen_epoch(40));
	ck_assert_int_eq(rt_badly_nested(&t), 0);
	ck_assert_int_eq(t.sum.warnings, 0);
	rt_done(&t);
}
END_TEST

/* ---- a thread created for the request does the work ---------------------- */

START_TEST(pthread_worker)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *m = gen_proc_main(h, 700, "/usr/bin/python3", 0);

	gen_tcp(m, 10, 5, BT_CR_ACCEPT, "10.0.0.1:80", "10.0.0.3:5555");
	gen_msg(m, 20, 5, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/work"), 0);
	/* The new thread writes before its creator logs the creation. */
	struct gen_thr *k = gen_thread(gen_thr_proc(m), 28, 701, 700, 77);
	gen_thread_create(m, 30, 77);
	gen_tcp(k, 31, 6, BT_CR_CONNECT, "10.0.0.1:50020", "10.0.0.20:11211");
	gen_msg(k, 32, 6, OUT, REQ, BT_PROTO_LINE, 12, 0, 0, 0,
		GEN_A(BT_AK_LINE, "get user:7"), 0);
	gen_msg(k, 45, 6, IN, REP, BT_PROTO_LINE, 30, 0, 0, 0,
		GEN_A(BT_AK_LINE, "VALUE user:7 0 5"), 0);
	gen_msg(k, 50, 5, OUT, REP, BT_PROTO_HTTP, 200, 0, 200, 0, 0);
	gen_thread_exit(k, 55);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /work st=200 client=10.0.0.3:5555\n"
		"  server http 'GET /work' /work web/700/700 st=200\n"
		"    client line 'get' get user:7 web/700/701 st=NULL\n"
		"unattributed:\n");
	ck_assert_int_eq(rt_qi(&t, "SELECT end_ns FROM spans WHERE kind = 'client'"),
			 gen_epoch(45));
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM fragments WHERE tid = 701 AND request_id IS NULL"), 0);
	ck_assert_int_eq(rt_badly_nested(&t), 0);
	rt_done(&t);
}
END_TEST

/* ---- threads sharing a keep-alive connection, one of them waiting ------- */

/*
 * Thread 711 reads /one, asks the database and waits for its reply, which
 * the database logs after 711 logged receiving it (its write returned
 * late), so the merge holds 711 back.  Meanwhile thread 712 reads the
 * pipelined /two on the same connection and answers it after 711 answered
 * /one.  The answers must pair with the requests in byte order, not in the
 * order the merge reaches them.
 */
START_TEST(shared_connection_byte_order)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *m = gen_proc_main(h, 710, "/usr/sbin/apache2", 0);
	struct gen_thr *d = gen_proc_main(h, 720, "/usr/lib/postgresql/15/bin/postgres", 0);

	gen_thread_create(m, 1, 1);
	gen_thread_create(m, 2, 2);
	struct gen_thr *a = gen_thread(gen_thr_proc(m), 3, 711, 710, 1);
	struct gen_thr *b = gen_thread(gen_thr_proc(m), 4, 712, 710, 2);

	gen_tcp(a, 10, 5, BT_CR_ACCEPT, "10.0.0.1:80", "10.0.0.9:40000");
	gen_msg(a, 20, 5, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/one"), 0);
	gen_tcp(a, 21, 9, BT_CR_CONNECT, "10.0.0.1:50050", "10.0.0.2:5432");
	gen_tcp(d, 22, 4, BT_CR_ACCEPT, "10.0.0.2:5432", "10.0.0.1:50050");
	gen_msg(a, 25, 9, OUT, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 1"), 0);
	gen_msg(d, 26, 4, IN, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 1"), 0);
	gen_msg(a, 35, 9, IN, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_msg(b, 36, 5, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/two"), 0);
	gen_msg(a, 37, 5, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);
	gen_msg(b, 38, 5, OUT, REP, BT_PROTO_HTTP, 100, 0, 404, 0, 0);
	gen_msg(d, 40, 4, OUT, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /one st=200 client=10.0.0.9:40000\n"
		"  server http 'GET /one' /one web/710/711 st=200\n"
		"    client postgresql 'SELECT' SELECT 1 web/710/711 st=NULL\n"
		"      server postgresql 'SELECT' SELECT 1 web/720/720 st=NULL\n"
		"R http GET /two st=404 client=10.0.0.9:40000\n"
		"  server http 'GET /two' /two web/710/712 st=404\n"
		"unattributed:\n");
	ck_assert_int_eq(rt_qi(&t, "SELECT end_ns FROM requests WHERE target = '/two'"),
			 gen_epoch(38));
	ck_assert_int_eq(rt_badly_nested(&t), 0);
	ck_assert_int_eq(t.sum.warnings, 0);
	rt_done(&t);
}
END_TEST

/*
 * Thread 731 waits for a reply on fd 9 (logged late by the database, as
 * above) and then closes fd 9; thread 732 opens a new connection under the
 * same number and uses it, all before the database's record.  The merge
 * applies 732's records first: 731's reply must still be read from the
 * connection fd 9 was when 731 logged it.
 */
START_TEST(fd_reused_by_another_thread)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *m = gen_proc_main(h, 730, "/usr/sbin/apache2", 0);
	struct gen_thr *d = gen_proc_main(h, 740, "/usr/lib/postgresql/15/bin/postgres", 0);

	gen_thread_create(m, 1, 1);
	gen_thread_create(m, 2, 2);
	gen_thread_create(d, 3, 3);
	struct gen_thr *a = gen_thread(gen_thr_proc(m), 4, 731, 730, 1);
	struct gen_thr *b = gen_thread(gen_thr_proc(m), 5, 732, 730, 2);
	struct gen_thr *d2 = gen_thread(gen_thr_proc(d), 6, 741, 740, 3);

	gen_tcp(a, 10, 5, BT_CR_ACCEPT, "10.0.0.1:80", "10.0.0.9:40001");
	gen_msg(a, 11, 5, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/a"), 0);
	gen_tcp(a, 12, 9, BT_CR_CONNECT, "10.0.0.1:50060", "10.0.0.2:5432");
	gen_tcp(d, 13, 4, BT_CR_ACCEPT, "10.0.0.2:5432", "10.0.0.1:50060");
	gen_msg(a, 14, 9, OUT, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 1"), 0);
	gen_msg(d, 15, 4, IN, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 1"), 0);
	gen_msg(a, 20, 9, IN, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_close(a, 21, 9);
	gen_tcp(b, 22, 6, BT_CR_ACCEPT, "10.0.0.1:80", "10.0.0.9:40002");
	gen_msg(b, 23, 6, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/b"), 0);
	gen_tcp(b, 24, 9, BT_CR_CONNECT, "10.0.0.1:50061", "10.0.0.2:5432");
	gen_tcp(d2, 25, 5, BT_CR_ACCEPT, "10.0.0.2:5432", "10.0.0.1:50061");
	gen_msg(b, 26, 9, OUT, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 2"), 0);
	gen_msg(d2, 27, 5, IN, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 2"), 0);
	gen_msg(d2, 28, 5, OUT, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_msg(b, 29, 9, IN, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_msg(b, 30, 6, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);
	gen_msg(d, 32, 4, OUT, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_msg(a, 33, 5, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /a st=200 client=10.0.0.9:40001\n"
		"  server http 'GET /a' /a web/730/731 st=200\n"
		"    client postgresql 'SELECT' SELECT 1 web/730/731 st=NULL\n"
		"      server postgresql 'SELECT' SELECT 1 web/740/740 st=NULL\n"
		"R http GET /b st=200 client=10.0.0.9:40002\n"
		"  server http 'GET /b' /b web/730/732 st=200\n"
		"    client postgresql 'SELECT' SELECT 2 web/730/732 st=NULL\n"
		"      server postgresql 'SELECT' SELECT 2 web/740/741 st=NULL\n"
		"unattributed:\n");
	/* the first query ended with its own (late) reply */
	ck_assert_int_eq(rt_qi(&t, "SELECT end_ns FROM spans WHERE kind = 'client' AND target = 'SELECT 1'"),
			 gen_epoch(32));
	ck_assert_int_eq(t.sum.warnings, 0);
	rt_done(&t);
}
END_TEST

/* ---- untraced FastCGI backend answering out of order (witness) ----------- */

START_TEST(untraced_backend_witness)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 800, "/usr/sbin/nginx", 0);

	gen_tcp(w, 5, 9, BT_CR_CONNECT, "10.0.0.1:50030", "10.0.0.30:9000");
	gen_ready(w, 10, 3, POLLIN);
	gen_accept(w, 11, 5, 3, "10.0.0.1:80", "10.0.0.2:1000");
	gen_ready(w, 12, 3, POLLIN);
	gen_accept(w, 13, 6, 3, "10.0.0.1:80", "10.0.0.2:1001");
	gen_ready(w, 20, 5, POLLIN);
	gen_msg(w, 21, 5, IN, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/a.php"), 0);
	gen_msg(w, 22, 9, OUT, REQ, BT_PROTO_FASTCGI, 300, WIT, 0, 1,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_FCGI_SCRIPT, "/a.php"),
		GEN_A(BT_AK_FCGI_URI, "/a.php"), 0);
	gen_ready(w, 30, 6, POLLIN);
	gen_msg(w, 31, 6, IN, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/b.php"), 0);
	gen_msg(w, 32, 9, OUT, REQ, BT_PROTO_FASTCGI, 300, WIT, 0, 2,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_FCGI_SCRIPT, "/b.php"),
		GEN_A(BT_AK_FCGI_URI, "/b.php?x=1"), 0);
	/* The second request is answered first. */
	gen_ready(w, 40, 9, POLLIN);
	gen_msg_begin(w, 41, 9, IN);
	gen_msg(w, 42, 9, IN, REP, BT_PROTO_FASTCGI, 200, WIT, 0, 2, 0);
	gen_msg(w, 43, 6, OUT, REP, BT_PROTO_HTTP, 200, 0, 200, 0, 0);
	gen_ready(w, 50, 9, POLLIN);
	gen_msg(w, 51, 9, IN, REP, BT_PROTO_FASTCGI, 200, WIT, 0, 1, 0);
	gen_msg(w, 52, 5, OUT, REP, BT_PROTO_HTTP, 200, 0, 200, 0, 0);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /a.php st=200 client=10.0.0.2:1000\n"
		"  server http 'GET /a.php' /a.php web/800/800 st=200\n"
		"    client fastcgi 'GET /a.php' /a.php web/800/800 st=NULL\n"
		"R http GET /b.php st=200 client=10.0.0.2:1001\n"
		"  server http 'GET /b.php' /b.php web/800/800 st=200\n"
		"    client fastcgi 'GET /b.php' /b.php?x=1 web/800/800 st=NULL\n"
		"unattributed:\n");
	ck_assert_int_eq(rt_qi(&t, "SELECT end_ns FROM spans WHERE target = '/b.php?x=1'"),
			 gen_epoch(42));
	ck_assert_int_eq(rt_qi(&t, "SELECT end_ns FROM spans WHERE target = '/a.php' AND kind = 'client'"),
			 gen_epoch(51));
	ck_assert_str_eq(rt_q(&t, "SELECT r.target FROM messages m JOIN requests r USING (request_id) WHERE m.ts_ns = %lld",
			      (long long)gen_epoch(42)), "/b.php");
	ck_assert_str_eq(rt_q(&t, "SELECT peer FROM spans WHERE target = '/b.php?x=1'"),
			 "10.0.0.30:9000");
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(key || '=' || value, ' ') FROM attrs WHERE span_id = (SELECT span_id FROM spans WHERE target = '/b.php?x=1')"),
			 "method=GET fcgi_script=/b.php fcgi_uri=/b.php?x=1");
	rt_done(&t);
}
END_TEST

/* ---- HTTP/2: frames of two streams interleaved on one connection ------- */

/*
 * nginx reads HEADERS of streams 1 and 3 (two requests from an untraced
 * client), opens an upstream stream for each on one HTTP/2 connection to
 * an untraced backend, then reads the DATA frames (oneway, witness = the
 * stream id) and forwards each on its stream; the backend answers stream
 * 3 first.  Each oneway frame designates the exchange of its witness, not
 * the request that last used the channel: each forwarded frame is in its
 * own request, and each reply closes its own spans.
 */
START_TEST(http2_streams_by_witness)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 900, "/usr/sbin/nginx", 0);
	const int ONE = BT_MK_ONEWAY, H2 = BT_PROTO_HTTP2;

	gen_tcp(w, 5, 9, BT_CR_CONNECT, "10.0.0.1:50040", "10.0.0.40:50051");
	gen_ready(w, 10, 3, POLLIN);
	gen_accept(w, 11, 5, 3, "10.0.0.1:80", "10.0.0.2:1000");
	gen_ready(w, 20, 5, POLLIN);
	gen_msg(w, 21, 5, IN, REQ, H2, 40, WIT, 0, 1,
		GEN_A(BT_AK_METHOD, "POST"), GEN_A(BT_AK_TARGET, "/p.S/A"), 0);
	gen_msg(w, 22, 9, OUT, REQ, H2, 40, WIT, 0, 1,
		GEN_A(BT_AK_METHOD, "POST"), GEN_A(BT_AK_TARGET, "/p.S/A"), 0);
	gen_ready(w, 30, 5, POLLIN);
	gen_msg(w, 31, 5, IN, REQ, H2, 40, WIT, 0, 3,
		GEN_A(BT_AK_METHOD, "POST"), GEN_A(BT_AK_TARGET, "/p.S/B"), 0);
	gen_msg(w, 32, 9, OUT, REQ, H2, 40, WIT, 0, 3,
		GEN_A(BT_AK_METHOD, "POST"), GEN_A(BT_AK_TARGET, "/p.S/B"), 0);
	gen_ready(w, 40, 5, POLLIN);
	gen_msg(w, 41, 5, IN, ONE, H2, 20, WIT, 0, 1, 0);
	gen_msg(w, 42, 9, OUT, ONE, H2, 20, WIT, 0, 1, 0);
	gen_ready(w, 50, 5, POLLIN);
	gen_msg(w, 51, 5, IN, ONE, H2, 20, WIT, 0, 3, 0);
	gen_msg(w, 52, 9, OUT, ONE, H2, 20, WIT, 0, 3, 0);
	/* the backend answers stream 3 first: headers, then the trailers */
	gen_ready(w, 60, 9, POLLIN);
	gen_msg(w, 61, 9, IN, ONE, H2, 30, WIT, 0, 3, 0);
	gen_msg(w, 62, 5, OUT, ONE, H2, 30, WIT, 0, 3, 0);
	gen_ready(w, 63, 9, POLLIN);
	gen_msg(w, 64, 9, IN, REP, H2, 20, WIT, 200, 3, 0);
	gen_msg(w, 65, 5, OUT, REP, H2, 20, WIT, 200, 3, 0);
	gen_ready(w, 70, 9, POLLIN);
	gen_msg(w, 71, 9, IN, ONE, H2, 30, WIT, 0, 1, 0);
	gen_msg(w, 72, 5, OUT, ONE, H2, 30, WIT, 0, 1, 0);
	gen_ready(w, 73, 9, POLLIN);
	gen_msg(w, 74, 9, IN, REP, H2, 20, WIT, 200, 1, 0);
	gen_msg(w, 75, 5, OUT, REP, H2, 20, WIT, 200, 1, 0);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http2 POST /p.S/A st=200 client=10.0.0.2:1000\n"
		"  server http2 'POST /p.S/A' /p.S/A web/900/900 st=200\n"
		"    client http2 'POST /p.S/A' /p.S/A web/900/900 st=200\n"
		"R http2 POST /p.S/B st=200 client=10.0.0.2:1000\n"
		"  server http2 'POST /p.S/B' /p.S/B web/900/900 st=200\n"
		"    client http2 'POST /p.S/B' /p.S/B web/900/900 st=200\n"
		"unattributed:\n");
	/* every frame nginx forwarded is in its own stream's request */
	static const struct { int at; const char *req; } fw[] = {
		{ 42, "/p.S/A" }, { 52, "/p.S/B" }, { 62, "/p.S/B" },
		{ 72, "/p.S/A" },
	};
	for (unsigned i = 0; i < sizeof fw / sizeof fw[0]; i++)
		ck_assert_str_eq(rt_q(&t, "SELECT r.target FROM messages m JOIN requests r USING (request_id) WHERE m.ts_ns = %lld",
				      (long long)gen_epoch(fw[i].at)), fw[i].req);
	ck_assert_int_eq(rt_qi(&t, "SELECT end_ns FROM spans WHERE target = '/p.S/B' AND kind = 'client'"),
			 gen_epoch(64));
	rt_done(&t);
}
END_TEST

/* ---- a request answered before its last byte is read (php-fpm) --------- */

/*
 * php-fpm reads a FastCGI request up to its parameters, runs the script (a
 * query), answers, and reads the empty FCGI_STDIN record that ends the
 * request last.  SPLIT: the front writes the request in two calls (apache's
 * mod_proxy_fcgi), so its kind is not known at php-fpm's first byte.
 */
static void reply_before_end(int split)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 820, "/usr/sbin/nginx", 0);
	struct gen_thr *f = gen_proc_main(h, 830, "/usr/sbin/php-fpm8.2", 0);

	gen_tcp(w, 5, 9, BT_CR_CONNECT, "10.0.0.1:50040", "10.0.0.1:9000");
	gen_tcp(f, 6, 4, BT_CR_ACCEPT, "10.0.0.1:9000", "10.0.0.1:50040");
	gen_tcp(f, 7, 5, BT_CR_CONNECT, "10.0.0.1:50041", "10.0.0.40:5432");
	gen_ready(w, 10, 3, POLLIN);
	gen_accept(w, 11, 6, 3, "10.0.0.1:80", "10.0.0.2:1000");
	gen_ready(w, 20, 6, POLLIN);
	gen_msg(w, 21, 6, IN, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/a.php"), 0);
	if (split)
		gen_msg_begin(w, 22, 9, OUT);
	else
		gen_msg(w, 22, 9, OUT, REQ, BT_PROTO_FASTCGI, 300, WIT, 0, 1,
			GEN_A(BT_AK_METHOD, "GET"),
			GEN_A(BT_AK_FCGI_URI, "/a.php"), 0);
	gen_ready(f, 25, 4, POLLIN);
	gen_msg_begin(f, 26, 4, IN);
	if (split)
		gen_msg(w, 27, 9, OUT, REQ, BT_PROTO_FASTCGI, 300, WIT, 0, 1,
			GEN_A(BT_AK_METHOD, "GET"),
			GEN_A(BT_AK_FCGI_URI, "/a.php"), 0);
	gen_msg(f, 30, 5, OUT, REQ, BT_PROTO_PGSQL, 40, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 1"), 0);
	gen_msg(f, 40, 5, IN, REP, BT_PROTO_PGSQL, 30, 0, 0, 0, 0);
	gen_msg(f, 50, 4, OUT, REP, BT_PROTO_FASTCGI, 200, WIT, 0, 1, 0);
	gen_msg(f, 51, 4, IN, REQ, BT_PROTO_FASTCGI, 300, WIT, 0, 1,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_FCGI_URI, "/a.php"), 0);
	gen_ready(w, 60, 9, POLLIN);
	gen_msg(w, 61, 9, IN, REP, BT_PROTO_FASTCGI, 200, WIT, 0, 1, 0);
	gen_msg(w, 62, 6, OUT, REP, BT_PROTO_HTTP, 200, 0, 200, 0, 0);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /a.php st=200 client=10.0.0.2:1000\n"
		"  server http 'GET /a.php' /a.php web/820/820 st=200\n"
		"    client fastcgi 'GET /a.php' /a.php web/820/820 st=NULL\n"
		"      server fastcgi 'GET /a.php' /a.php web/830/830 st=NULL\n"
		"        client postgresql 'SELECT' SELECT 1 web/830/830 st=NULL\n"
		"unattributed:\n");
	/* The server span: its first byte to its reply. */
	ck_assert_int_eq(rt_qi(&t, "SELECT start_ns FROM spans WHERE kind = 'server' AND pid = 830"),
			 gen_epoch(26));
	ck_assert_int_eq(rt_qi(&t, "SELECT end_ns FROM spans WHERE kind = 'server' AND pid = 830"),
			 gen_epoch(50));
	ck_assert_int_eq(rt_badly_nested(&t), 0);
	rt_done(&t);
}

START_TEST(reply_before_request_end)
{
	reply_before_end(0);
}
END_TEST

START_TEST(reply_before_request_end_split)
{
	reply_before_end(1);
}
END_TEST

/* ---- a traced client that starts requests itself (rule 5) ---------------- */

START_TEST(traced_client_rule5)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "db", 0, 0);
	struct gen_thr *c = gen_proc_main(h, 900, "psql", 0);
	struct gen_thr *s = gen_proc_main(h, 910, "/usr/lib/postgresql/15/bin/postgres", 0);

	gen_tcp(c, 10, 3, BT_CR_CONNECT, "127.0.0.1:40000", "127.0.0.1:5432");
	gen_msg(c, 11, 3, OUT, CTL, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_tcp(s, 12, 9, BT_CR_ACCEPT, "127.0.0.1:5432", "127.0.0.1:40000");
	gen_msg(s, 13, 9, IN, CTL, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_msg(s, 14, 9, OUT, CTL, BT_PROTO_PGSQL, 30, 0, 0, 0, 0);
	gen_msg(c, 15, 3, IN, CTL, BT_PROTO_PGSQL, 30, 0, 0, 0, 0);
	gen_msg(c, 20, 3, OUT, REQ, BT_PROTO_PGSQL, 14, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 1"), 0);
	gen_msg(s, 21, 9, IN, REQ, BT_PROTO_PGSQL, 14, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 1"), 0);
	gen_open(s, 22, 20, "base/16384/1259");
	gen_msg(s, 25, 9, OUT, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_msg(c, 26, 3, IN, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	/* Work after the reply still belongs to the finished request... */
	gen_open(c, 27, 4, "/root/.psql_history");
	/* ... but the next query starts a new one. */
	gen_msg(c, 30, 3, OUT, REQ, BT_PROTO_PGSQL, 22, 0, 0, 0,
		GEN_A(BT_AK_SQL, "select 2 -- again"), 0);
	gen_msg(s, 31, 9, IN, REQ, BT_PROTO_PGSQL, 22, 0, 0, 0,
		GEN_A(BT_AK_SQL, "select 2 -- again"), 0);
	gen_msg(s, 35, 9, OUT, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_msg(c, 36, 3, IN, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_msg(c, 40, 3, OUT, CTL, BT_PROTO_PGSQL, 5, 0, 0, 0, 0);
	gen_msg(s, 41, 9, IN, CTL, BT_PROTO_PGSQL, 5, 0, 0, 0, 0);
	gen_close(c, 42, 3);
	gen_close(s, 43, 9);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R postgresql NULL SELECT 1 st=NULL client=psql[900]@db\n"
		"  client postgresql 'SELECT' SELECT 1 db/900/900 st=NULL\n"
		"    server postgresql 'SELECT' SELECT 1 db/910/910 st=NULL\n"
		"R postgresql NULL select 2 -- again st=NULL client=psql[900]@db\n"
		"  client postgresql 'SELECT' select 2 -- again db/900/900 st=NULL\n"
		"    server postgresql 'SELECT' select 2 -- again db/910/910 st=NULL\n"
		"unattributed:\n");
	ck_assert_int_eq(rt_qi(&t, "SELECT duration_ns FROM requests WHERE target = 'SELECT 1'"),
			 6 * GEN_US);
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(f.path || ':' || r.target, ',') FROM files f JOIN requests r USING (request_id)"),
			 "base/16384/1259:SELECT 1,/root/.psql_history:SELECT 1");
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM channels WHERE traced_peer = 1"), 2);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM channels a JOIN channels b ON a.peer_channel_id = b.channel_id AND b.peer_channel_id = a.channel_id"), 2);
	rt_done(&t);
}
END_TEST

/* ---- name lookups: libc calls and DNS over UDP --------------------------- */

START_TEST(dns_lookups)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 1000, "/usr/bin/python3", 0);

	gen_name_begin(w, 5, 1, "metrics.internal");
	gen_name_end(w, 6, 1, 0, "10.9.9.9");
	gen_tcp(w, 10, 5, BT_CR_ACCEPT, "10.0.0.1:80", "10.0.0.2:2000");
	gen_msg(w, 11, 5, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/dns"), 0);
	gen_name_begin(w, 20, 2, "api.example.test");
	gen_name_end(w, 25, 2, 0, "192.0.2.10");
	gen_udp(w, 30, 6, BT_CR_DGRAM, "10.0.0.1:53001", NULL);
	gen_msg(w, 31, 6, OUT, REQ, BT_PROTO_DNS, 40, WIT, 0, 0x1234,
		GEN_A(BT_AK_DNS_NAME, "api.example.test"),
		GEN_A(BT_AK_DNS_TYPE, "AAAA"), GEN_A(BT_AK_PEER, "10.0.0.53:53"),
		0);
	gen_msg(w, 35, 6, IN, REP, BT_PROTO_DNS, 60, WIT, 0, 0x1234,
		GEN_A(BT_AK_PEER, "10.0.0.53:53"), 0);
	gen_msg(w, 40, 5, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /dns st=200 client=10.0.0.2:2000\n"
		"  server http 'GET /dns' /dns web/1000/1000 st=200\n"
		"    client dns 'getaddrinfo' api.example.test web/1000/1000 st=0\n"
		"    client dns 'QUERY AAAA' api.example.test web/1000/1000 st=0\n"
		"unattributed:\n"
		"  client dns 'getaddrinfo' metrics.internal web/1000/1000 st=0\n");
	ck_assert_str_eq(rt_q(&t, "SELECT peer FROM spans WHERE name = 'QUERY AAAA'"),
			 "10.0.0.53:53");
	ck_assert_int_eq(rt_qi(&t, "SELECT end_ns - start_ns FROM spans WHERE name = 'getaddrinfo' AND request_id IS NOT NULL"),
			 5 * GEN_US);
	ck_assert_str_eq(rt_q(&t, "SELECT value FROM attrs WHERE key = 'addr' AND span_id = (SELECT span_id FROM spans WHERE target = 'metrics.internal')"),
			 "10.9.9.9");
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'unattributed_spans'"), 1);
	rt_done(&t);
}
END_TEST

/* ---- a dual-stack server sees its IPv4 client as ::ffff:a.b.c.d ---------- */

START_TEST(dual_stack_pairing)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "h", 0, 0);
	struct gen_thr *c = gen_proc_main(h, 10, "curl", 0);
	struct gen_thr *s = gen_proc_main(h, 20, "/usr/sbin/apache2", 0);

	gen_tcp(c, 10, 3, BT_CR_CONNECT, "10.0.0.1:50000", "10.0.0.2:80");
	gen_tcp(s, 11, 4, BT_CR_ACCEPT, "[::ffff:10.0.0.2]:80",
		"[::ffff:10.0.0.1]:50000");
	gen_msg(c, 20, 3, OUT, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/v6"), 0);
	gen_msg(s, 21, 4, IN, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/v6"), 0);
	gen_msg(s, 30, 4, OUT, REP, BT_PROTO_HTTP, 90, 0, 200, 0, 0);
	gen_msg(c, 31, 3, IN, REP, BT_PROTO_HTTP, 90, 0, 200, 0, 0);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /v6 st=200 client=curl[10]@h\n"
		"  client http 'GET /v6' /v6 h/10/10 st=200\n"
		"    server http 'GET /v6' /v6 h/20/20 st=200\n"
		"unattributed:\n");
	ck_assert_str_eq(rt_q(&t, "SELECT peer FROM spans WHERE kind = 'server'"),
			 "10.0.0.1:50000");
	ck_assert_str_eq(rt_q(&t, "SELECT local || ' ' || remote FROM channels WHERE pid = 20"),
			 "10.0.0.2:80 10.0.0.1:50000");
	rt_done(&t);
}
END_TEST

/* ---- a loopback tuple reused after a connection from an untraced peer ----- */

/*
 * The server accepts a connection from an untraced program (a readiness
 * probe) that connects and closes; 11 s later the traced front's
 * connection gets the same source port.  The server has two ends of the
 * tuple, the front one: the front's end is the server's second, the one
 * 1 ms from it, not the first one 11 s before.
 */
START_TEST(reused_tuple_after_untraced_peer)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "h", 0, 0);
	struct gen_thr *c = gen_proc_main(h, 10, "/usr/sbin/nginx", 0);
	struct gen_thr *s = gen_proc_main(h, 20, "/usr/bin/python3.11", 0);

	gen_tcp(s, 10, 4, BT_CR_ACCEPT, "127.0.0.9:8000", "127.0.0.1:58486");
	gen_close(s, 20, 4);
	gen_tcp(c, 11000000, 3, BT_CR_CONNECT, "127.0.0.1:58486",
		"127.0.0.9:8000");
	gen_tcp(s, 11001000, 5, BT_CR_ACCEPT, "127.0.0.9:8000",
		"127.0.0.1:58486");
	gen_msg(c, 11001100, 3, OUT, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/pyr/app"), 0);
	gen_msg(s, 11001200, 5, IN, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/pyr/app"), 0);
	gen_msg(s, 11002000, 5, OUT, REP, BT_PROTO_HTTP, 90, 0, 200, 0, 0);
	gen_msg(c, 11002100, 3, IN, REP, BT_PROTO_HTTP, 90, 0, 200, 0, 0);
	gen_close(s, 11002200, 5);
	gen_close(c, 11002300, 3);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /pyr/app st=200 client=/usr/sbin/nginx[10]@h\n"
		"  client http 'GET /pyr/app' /pyr/app h/10/10 st=200\n"
		"    server http 'GET /pyr/app' /pyr/app h/20/20 st=200\n"
		"unattributed:\n");
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM channels WHERE pid = 20 AND fd = 5 AND peer_channel_id = (SELECT channel_id FROM channels WHERE pid = 10)"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM channels WHERE pid = 20 AND fd = 4 AND peer_channel_id IS NULL"), 1);
	rt_done(&t);
}
END_TEST

/* ---- a blocking accept starts work for no request ------------------------ */

START_TEST(accept_starts_fragment)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 1100, "/usr/sbin/apache2", 0);

	gen_tcp(w, 10, 5, BT_CR_ACCEPT, "10.0.0.1:80", "10.0.0.2:3000");
	gen_msg(w, 11, 5, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/first"), 0);
	gen_msg(w, 20, 5, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);
	gen_close(w, 21, 5);
	/* The next connection: nothing of /first any more. */
	gen_tcp(w, 30, 5, BT_CR_ACCEPT, "10.0.0.1:80", "10.0.0.3:3001");
	gen_open(w, 31, 6, "/etc/hosts.allow");
	gen_msg(w, 40, 5, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/second"), 0);
	gen_msg(w, 50, 5, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /first st=200 client=10.0.0.2:3000\n"
		"  server http 'GET /first' /first web/1100/1100 st=200\n"
		"R http GET /second st=200 client=10.0.0.3:3001\n"
		"  server http 'GET /second' /second web/1100/1100 st=200\n"
		"unattributed:\n");
	ck_assert_str_eq(rt_q(&t, "SELECT IFNULL(request_id, 'none') FROM files"), "none");
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(IFNULL(request_id, 'none'), ',') FROM channels"),
			 "none,none");
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(trigger || ':' || IFNULL(r.target, 'none'), ',') FROM (SELECT * FROM fragments ORDER BY start_ns) f LEFT JOIN requests r USING (request_id)"),
			 "start:none,accept:/first,accept:/second");
	rt_done(&t);
}
END_TEST

/* ---- READYs for no request in a row ---------------------------------------- */

/*
 * A server loop woken by its eventfd (fd 7), timeouts and its listening
 * socket (fd 3) with nothing recorded between: libbtrace writes only the
 * first READY of such a run (ALL = 0); an older one wrote them all.
 */
static void idle_server(struct gen *g, int all)
{
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 1200, "/usr/sbin/evserver", 0);

	gen_ready(w, 100, 7, POLLIN);
	if (all) {
		gen_ready(w, 101, 7, POLLIN);
		gen_ready(w, 102, -1, 0);
		gen_ready(w, 103, 7, POLLIN);
	}
	gen_open(w, 104, 12, "/var/log/evserver.log");
	gen_ready(w, 105, 7, POLLIN);
	if (all)
		gen_ready(w, 106, 3, POLLIN);
	gen_accept(w, 107, 5, 3, "10.0.0.1:80", "10.0.0.2:3000");
	gen_ready(w, 108, 5, POLLIN);
	gen_msg(w, 109, 5, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/a"), 0);
	gen_msg(w, 110, 5, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);
	gen_ready(w, 111, -1, 0);
	if (all) {
		gen_ready(w, 112, 7, POLLIN);
		gen_ready(w, 113, -1, 0);
	}
	gen_ready(w, 114, 5, POLLIN);
	gen_msg(w, 115, 5, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/b"), 0);
	gen_msg(w, 116, 5, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);
	gen_ready(w, 120, 7, POLLIN);
	if (all)
		gen_ready(w, 121, 7, POLLIN);
	gen_close(w, 122, 5);
}

/* Every row of SQL, one line each ("|" after each value). */
static char *rows(struct rt *t, const char *sql)
{
	sqlite3_stmt *s;
	size_t n = 1 << 16, o = 0;
	char *buf = malloc(n);

	ck_assert_ptr_nonnull(buf);
	buf[0] = 0;
	ck_assert_int_eq(sqlite3_prepare_v2(t->h, sql, -1, &s, NULL), SQLITE_OK);
	while (sqlite3_step(s) == SQLITE_ROW) {
		for (int i = 0; i < sqlite3_column_count(s); i++) {
			const unsigned char *v = sqlite3_column_text(s, i);
			o += (size_t)snprintf(buf + o, o < n ? n - o : 0, "%s|",
					      v ? (const char *)v : "NULL");
		}
		o += (size_t)snprintf(buf + o, o < n ? n - o : 0, "\n");
	}
	ck_assert_uint_lt(o, n);
	sqlite3_finalize(s);
	return buf;
}

START_TEST(ready_runs_for_no_request)
{
	static const char *const tables[] = {
		"SELECT * FROM requests ORDER BY 1",
		"SELECT * FROM spans ORDER BY 1",
		"SELECT * FROM messages ORDER BY 1",
		"SELECT * FROM attrs ORDER BY 1, 2, 3",
		"SELECT * FROM fragments ORDER BY 1",
		"SELECT * FROM files ORDER BY 1",
		"SELECT * FROM channels ORDER BY 1",
		"SELECT * FROM warnings ORDER BY 1",
		/* what counts records (the log's, not the model's) differs */
		"SELECT process_id, host, host_id, pid, ppid, exe, cmdline, ring_id,"
		" start_ns, end_ns, parent_process_id, how, request_id"
		" FROM processes ORDER BY 1",
		"SELECT * FROM stats WHERE key NOT IN ('events', 'payload_bytes',"
		" 'blocks', 'files', 'duplicate_blocks') ORDER BY 1",
	};
	struct rt a, b;
	struct gen *ga = gen_new(), *gb = gen_new();

	idle_server(ga, 1);
	idle_server(gb, 0);
	rt_init(&a);
	rt_write(&a, ga, NULL);
	ck_assert_int_eq(rt_run(&a), RC_EXIT_OK);
	rt_init(&b);
	rt_write(&b, gb, NULL);
	ck_assert_int_eq(rt_run(&b), RC_EXIT_OK);

	/* one fragment from the first READY of a run to the last record
	 * before the next one: the file opened after four of them is in the
	 * first one's fragment */
	ck_assert_str_eq(rt_q(&a, "SELECT group_concat(trigger || ' ' || IFNULL(fd, '-') || ' ' || ((f.start_ns - %lld) / 1000) || '-' || ((f.end_ns - %lld) / 1000) || ' ' || events || ' ' || IFNULL(r.target, 'none'), ', ') FROM (SELECT * FROM fragments ORDER BY start_ns) f LEFT JOIN requests r USING (request_id)",
			      (long long)gen_epoch(0), (long long)gen_epoch(0)),
			 "start - 0-0 2 none, ready 7 100-104 2 none, "
			 "ready 7 105-105 1 none, accept 5 107-107 1 none, "
			 "ready 5 108-110 3 /a, timeout - 111-111 1 none, "
			 "ready 5 114-116 3 /b, ready 7 120-122 2 none");
	ck_assert_int_eq(rt_qi(&a, "SELECT COUNT(*) FROM files WHERE request_id IS NULL"), 1);
	/* and the same database whether the run's other READYs were written */
	for (unsigned i = 0; i < sizeof tables / sizeof *tables; i++) {
		char *ra = rows(&a, tables[i]), *rb = rows(&b, tables[i]);
		ck_assert_msg(strcmp(ra, rb) == 0, "%s:\n%s\nvs\n%s",
			      tables[i], ra, rb);
		free(ra);
		free(rb);
	}
	ck_assert_int_gt(rt_qi(&a, "SELECT value FROM stats WHERE key = 'events'"),
			 rt_qi(&b, "SELECT value FROM stats WHERE key = 'events'"));
	rt_done(&a);
	rt_done(&b);
}
END_TEST

Suite *recon_paths_suite(void)
{
	Suite *s = suite_create("recon_paths");
	TCase *tc = tcase_create("paths");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, thread_per_connection);
	tcase_add_test(tc, event_loop_pooled_backend);
	tcase_add_test(tc, deferred_writes_follow_want);
	tcase_add_test(tc, pooled_connection_shared_by_threads);
	tcase_add_test(tc, pipelined_requests);
	tcase_add_test(tc, fork_exec_cgi);
	tcase_add_test(tc, pthread_worker);
	tcase_add_test(tc, untraced_backend_witness);
	tcase_add_test(tc, http2_streams_by_witness);
	tcase_add_test(tc, reply_before_request_end);
	tcase_add_test(tc, reply_before_request_end_split);
	tcase_add_test(tc, shared_connection_byte_order);
	tcase_add_test(tc, fd_reused_by_another_thread);
	tcase_add_test(tc, traced_client_rule5);
	tcase_add_test(tc, dns_lookups);
	tcase_add_test(tc, dual_stack_pairing);
	tcase_add_test(tc, accept_starts_fragment);
	tcase_add_test(tc, ready_runs_for_no_request);
	tcase_add_test(tc, reused_tuple_after_untraced_peer);
	suite_add_tcase(s, tc);
	return s;
}
