/*
 * check_recon_certainty.c - never silently wrong: the writability rule of
 * a one-fd wait (a socket timeout), the parked detector and the
 * certainty labels it gives (docs/reconstruct.md, "Certainty").  Each
 * test scripts the records the shim would write, runs the reconstructor
 * and checks the paths and their labels.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btrace/proto.h"
#include "check_recon.h"
#include "grpc.h"
#include "tokens.h"

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
static const char *labels(struct rt *t)
{
	return rt_q(t, "SELECT group_concat(l, '\n') FROM (SELECT target || ' ' || certainty || ' ' || IFNULL(certainty_reason, '-') AS l FROM requests ORDER BY start_ns, request_id)");
}

/* ---- without event isolation: requests read in one batch -------------- */

/* An event loop without event isolation (PROC_START without
 * BT_PF_ISOLATION), its backend connection on fd 9. */
static struct gen_thr *front_noiso(struct gen_host *h, struct gen_thr **b)
{
	struct gen_thr *w = gen_thread(gen_proc(h, 300, "/usr/bin/front"), 0,
				       300, 0, 0);
	gen_proc_start(w, 0, 1, 0, 0);
	gen_tcp(w, 10, 9, BT_CR_CONNECT, "10.0.0.1:50010", "10.0.0.2:5432");
	*b = backend(h, "10.0.0.1:50010");
	return w;
}


/*
 * A live pass (rc_options.pending_ns): a front (pid 100) calls a
 * database at 10.1.0.3:5432 for each request on a new connection.
 * Request 1: the database's records are there.  Request 2: they are not
 * (drained late).  Request 3: a call to 10.9.9.9:6379, which no traced
 * program ever accepted on.  Request 4: the database accepts a
 * connection whose traced client's records are not there.  Requests
 * begin at 1, 2, 3, 4 ms.  The database also connects to the front's
 * port once (a health check whose accepted end is not logged): one
 * traced client of four does not make the front's clients expected.
 */
static const char *pending(struct rt *t, int64_t pending_ns, int64_t new_ns)
{
	rt_init(t);
	t->pending_ns = pending_ns;
	t->pending_new_ns = new_ns;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "one", 0, 0);
	struct gen_thr *f = gen_thread(gen_proc(h, 100, "/usr/sbin/frontd"), 0, 100, 0, 0);
	struct gen_thr *d = gen_thread(gen_proc(h, 300, "/usr/lib/postgresql/15/bin/postgres"),
				       0, 300, 0, 0);
	gen_proc_start(f, 0, 1, 0, 0);
	gen_proc_start(d, 0, 1, 0, 0);
	for (int k = 1; k <= 3; k++) {
		int64_t S = 1000 * k;
		char cl[32], me[32], tg[16];
		snprintf(cl, sizeof cl, "10.0.0.%d:30000", k);
		snprintf(me, sizeof me, "10.1.0.1:4100%d", k);
		snprintf(tg, sizeof tg, "/r%d", k);
		gen_tcp(f, S, 10, BT_CR_ACCEPT, "10.1.0.1:80", cl);
		http_in(f, S + 5, 10, tg);
		gen_tcp(f, S + 10, 20, BT_CR_CONNECT, me, k == 3 ? "10.9.9.9:6379" : "10.1.0.3:5432");
		gen_msg(f, S + 20, 20, OUT, REQ, BT_PROTO_PGSQL, 60, 0, 0, 0,
			GEN_A(BT_AK_SQL, "SELECT 1"), 0);
		if (k == 1) {
			gen_tcp(d, S + 30, 30, BT_CR_ACCEPT, "10.1.0.3:5432", me);
			gen_msg(d, S + 40, 30, IN, REQ, BT_PROTO_PGSQL, 60, 0, 0, 0,
				GEN_A(BT_AK_SQL, "SELECT 1"), 0);
			gen_msg(d, S + 50, 30, OUT, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
			gen_close(d, S + 95, 30);
		}
		gen_msg(f, S + 60, 20, IN, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
		gen_close(f, S + 70, 20);
		gen_msg(f, S + 80, 10, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);
		gen_close(f, S + 90, 10);
	}
	/* a traced health check of the front's port, among three untraced
	 * clients: the front's clients are not expected */
	gen_tcp(d, 3500, 31, BT_CR_CONNECT, "10.1.0.3:39000", "10.1.0.1:80");
	gen_close(d, 3510, 31);
	gen_tcp(d, 4000, 30, BT_CR_ACCEPT, "10.1.0.3:5432", "10.1.0.2:47000");
	gen_msg(d, 4010, 30, IN, REQ, BT_PROTO_PGSQL, 60, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 4"), 0);
	gen_msg(d, 4020, 30, OUT, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_close(d, 4030, 30);
	rt_write(t, g, NULL);
	ck_assert_int_eq(rt_run(t), RC_EXIT_OK);
	return rt_q(t, "SELECT group_concat(COALESCE(target, '-') || ' ' || certainty || ' ' ||"
		    " COALESCE(certainty_reason, '-') || ' ' || (SELECT count(*) FROM spans s"
		    " WHERE s.request_id = r.request_id), char(10)) FROM"
		    " (SELECT * FROM requests ORDER BY start_ns) r");
}

START_TEST(pending_peer_uncertain)
{
	struct rt t;

	ck_assert_str_eq(pending(&t, 1, 0),
		"/r1 exact - 3\n"
		"/r2 uncertain peer-not-logged 2\n"
		"/r3 exact - 2\n"
		"SELECT 4 uncertain peer-not-logged 1");
	ck_assert_str_eq(rt_q(&t, "SELECT value FROM stats WHERE key = 'peer_not_logged'"), "2");
	rt_done(&t);
	/* the logs complete: the peers are untraced */
	ck_assert_str_eq(pending(&t, 0, 500 * GEN_US),
		"/r1 exact - 3\n/r2 exact - 2\n/r3 exact - 2\nSELECT 4 exact - 1");
	rt_done(&t);
	/* overdue: only what came after the time may still come */
	ck_assert_str_eq(pending(&t, gen_epoch(3000), 0),
		"/r1 exact - 3\n/r2 exact - 2\n/r3 exact - 2\n"
		"SELECT 4 uncertain peer-not-logged 1");
	rt_done(&t);
	/* a new address (0.5 ms): 10.9.9.9:6379 at /r3's call, its first
	 * (the server may be traced, its records not logged yet); not the
	 * front's port at /r1, though its first: accepted ends are not */
	ck_assert_str_eq(pending(&t, 1, 500 * GEN_US),
		"/r1 exact - 3\n"
		"/r2 uncertain peer-not-logged 2\n"
		"/r3 uncertain peer-not-logged 2\n"
		"SELECT 4 uncertain peer-not-logged 1");
	rt_done(&t);
}
END_TEST

/*
 * One read hands over two pipelined requests (two MSG records) and the
 * loop then sends /a's call: the rules give it to /b, the last one read.
 * Both may own it: it is uncertain, 'ambiguous:batched', and so are both
 * requests.  QA, QB: the calls' SQL; WARM: a query sent before, so its
 * shape is known (NULL: none).
 */
static const char *batched(struct rt *t, const char *warm, const char *ta,
			   const char *tb, const char *qa, const char *qb)
{
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *w = front_noiso(h, &b);

	if (warm) {
		gen_accept(w, 50, 7, 3, "10.0.0.1:80", "10.0.0.8:3333");
		gen_ready(w, 51, 7, POLLIN);
		http_in(w, 52, 7, "/w?id=www000");
		sql_out(w, 53, 9, warm);
		sql_in(b, 54, 4, warm);
		rep_out(b, 55, 4);
		gen_ready(w, 56, 9, POLLIN);
		rep_in(w, 57, 9);
		http_out(w, 58, 7);
	}
	gen_accept(w, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_ready(w, 110, 5, POLLIN);
	http_in(w, 111, 5, ta);
	http_in(w, 111, 5, tb);              /* the same read */
	sql_out(w, 112, 9, qa);              /* /a's, given to /b */
	sql_in(b, 113, 4, qa);
	rep_out(b, 114, 4);
	gen_ready(w, 115, 9, POLLIN);
	rep_in(w, 116, 9);
	http_out(w, 117, 5);                 /* /a answered */
	sql_out(w, 118, 9, qb);              /* nothing batched is left */
	sql_in(b, 119, 4, qb);
	rep_out(b, 120, 4);
	gen_ready(w, 121, 9, POLLIN);
	rep_in(w, 122, 9);
	http_out(w, 123, 5);

	rt_init(t);
	rt_write(t, g, NULL);
	ck_assert_int_eq(rt_run(t), RC_EXIT_OK);
	return labels(t);
}

START_TEST(batched_fires)
{
	struct rt t;

	ck_assert_str_eq(batched(&t, NULL, "/a", "/b", "SELECT a", "SELECT b"),
		"/a uncertain ambiguous:batched\n/b uncertain ambiguous:batched");
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(r.target || ':' || k.chosen || ':' || k.reason, ' ') FROM span_candidates k JOIN requests r USING (request_id)"),
			 "/a:0:ambiguous:batched /b:1:ambiguous:batched");
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(target || ':' || certainty || ':' || IFNULL(certainty_reason, '-'), ' ') FROM spans WHERE kind = 'client'"),
			 "SELECT a:uncertain:ambiguous:batched SELECT b:exact:-");
	rt_done(&t);
}
END_TEST

/* The call carries a value only /a received: it is given to /a,
 * 'resolved', and nothing is marked (/b's own call, its values its own,
 * is confirmed by content too). */
START_TEST(batched_resolved_by_content)
{
	struct rt t;

	ck_assert_str_eq(batched(&t, "SELECT v FROM kv WHERE k = 'www000'",
		"/a?id=aaa111", "/b?id=bbb222",
		"SELECT v FROM kv WHERE k = 'aaa111'",
		"SELECT v FROM kv WHERE k = 'bbb222'"),
		"/w?id=www000 exact -\n"
		"/a?id=aaa111 resolved handoff:content\n"
		"/b?id=bbb222 resolved handoff:content");
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(r.target || ':' || s.target, ' ') FROM spans s JOIN requests r USING (request_id) WHERE s.kind = 'client'"),
			 "/w?id=www000:SELECT v FROM kv WHERE k = 'www000' "
			 "/a?id=aaa111:SELECT v FROM kv WHERE k = 'aaa111' "
			 "/b?id=bbb222:SELECT v FROM kv WHERE k = 'bbb222'");
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM span_candidates"), 0);
	rt_done(&t);
}
END_TEST

/* No query of the shape was sent before the batch: pass 1 has seen the
 * shape carry two values over the run, so the first one decides too. */
START_TEST(batched_first_of_shape_resolved)
{
	struct rt t;

	ck_assert_str_eq(batched(&t, NULL, "/a?id=aaa111", "/b?id=bbb222",
		"SELECT v FROM kv WHERE k = 'aaa111'",
		"SELECT v FROM kv WHERE k = 'bbb222'"),
		"/a?id=aaa111 resolved handoff:content\n"
		"/b?id=bbb222 resolved handoff:content");
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM span_candidates"), 0);
	rt_done(&t);
}
END_TEST

/* A constant stays one: the shape is only ever sent with 'aaa111', so it
 * decides nothing, however much of the run pass 1 saw. */
START_TEST(batched_constant_does_not_decide)
{
	struct rt t;

	ck_assert_str_eq(batched(&t, NULL, "/a?id=aaa111", "/b?id=bbb222",
		"SELECT v FROM kv WHERE k = 'aaa111'",
		"SELECT v FROM kv WHERE k = 'aaa111'"),
		"/a?id=aaa111 uncertain ambiguous:batched\n"
		"/b?id=bbb222 uncertain ambiguous:batched");
	rt_done(&t);
}
END_TEST

/*
 * Bound parameters: the SQL text carries no value ($1), the hashes of
 * the values bound to it do (BT_AK_PARAMS, protocols/pgsql.c): each call
 * goes to the request whose URL carried its value.
 */
START_TEST(batched_resolved_by_params)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *w = front_noiso(h, &b);
	static const char q[] = "SELECT v FROM kv WHERE k = $1";
	static const char pa[] = "0:3a6b7d409c6d463b";   /* aaa111 */
	static const char pb[] = "0:995bf47d96ed51b5";   /* bbb222 */

	gen_accept(w, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_ready(w, 110, 5, POLLIN);
	http_in(w, 111, 5, "/a?id=aaa111");
	http_in(w, 111, 5, "/b?id=bbb222");
	gen_msg(w, 112, 9, OUT, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, q), GEN_A(BT_AK_PARAMS, pa), 0);
	gen_msg(b, 113, 4, IN, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, q), GEN_A(BT_AK_PARAMS, pa), 0);
	rep_out(b, 114, 4);
	gen_ready(w, 115, 9, POLLIN);
	rep_in(w, 116, 9);
	http_out(w, 117, 5);
	gen_msg(w, 118, 9, OUT, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, q), GEN_A(BT_AK_PARAMS, pb), 0);
	gen_msg(b, 119, 4, IN, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, q), GEN_A(BT_AK_PARAMS, pb), 0);
	rep_out(b, 120, 4);
	gen_ready(w, 121, 9, POLLIN);
	rep_in(w, 122, 9);
	http_out(w, 123, 5);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(labels(&t),
		"/a?id=aaa111 resolved handoff:content\n"
		"/b?id=bbb222 resolved handoff:content");
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(r.target || ':' || s.exe, ' ') FROM spans s JOIN requests r USING (request_id) WHERE s.protocol = 'postgresql' ORDER BY s.start_ns"),
			 "/a?id=aaa111:/usr/bin/front /a?id=aaa111:/usr/bin/db "
			 "/b?id=bbb222:/usr/bin/front /b?id=bbb222:/usr/bin/db");
	rt_done(&t);
}
END_TEST

/*
 * A request whose sender is a traced program that never logged the send
 * (io_uring, raw system calls, lost records): not a request from an
 * untraced client (rule 4) but one whose cause is unknown, 'uncertain',
 * 'unlogged-send'.  From an untraced peer it stays exact.
 */
START_TEST(unlogged_send_uncertain)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 300, "/usr/bin/front", 0);
	struct gen_thr *b = backend(h, "10.0.0.1:50010");

	gen_tcp(w, 10, 9, BT_CR_CONNECT, "10.0.0.1:50010", "10.0.0.2:5432");
	gen_accept(b, 13, 5, 12, "10.0.0.2:5432", "10.0.0.9:50020");
	sql_in(b, 104, 4, "SELECT a");        /* the front's: not logged */
	rep_out(b, 105, 4);
	sql_in(b, 106, 5, "SELECT b");        /* an untraced client's */
	rep_out(b, 107, 5);
	/* and the other way: a traced client answered by the front
	 * without a logged send */
	struct gen_thr *cl = gen_proc_main(h, 500, "/usr/bin/cli", 0);
	gen_tcp(cl, 110, 3, BT_CR_CONNECT, "10.0.0.5:50030", "10.0.0.1:80");
	gen_accept(w, 111, 7, 3, "10.0.0.1:80", "10.0.0.5:50030");
	gen_msg(cl, 112, 3, OUT, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/c"), 0);
	gen_msg(cl, 113, 3, IN, REP, BT_PROTO_HTTP, 90, 0, 200, 0, 0);
	gen_close(w, 200, 9);
	gen_close(w, 201, 7);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(labels(&t), "SELECT a uncertain unlogged-send\n"
				     "SELECT b exact -\n"
				     "/c uncertain unlogged-send");
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'unlogged_senders'"), 2);
	rt_done(&t);
}
END_TEST

/*
 * A traced client reads its reply (thread 500) and another of its
 * threads (501) closes the socket.  The front answered past the shim, so
 * the read waits for a send that never comes and is let go only when the
 * front closes; the close, logged later but merged first, has dropped
 * the fd: the reply finds no channel.  The exchange ends unanswered,
 * uncertain 'closed-unread' (and the front's span under it), never
 * exact.
 */
START_TEST(closed_while_read_waits)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 300, "/usr/bin/front", 0);
	struct gen_thr *cl = gen_proc_main(h, 500, "/usr/bin/cli", 0);

	gen_thread_create(cl, 1, 7);
	struct gen_thr *cl2 = gen_thread(gen_thr_proc(cl), 2, 501, 500, 7);
	gen_tcp(cl, 110, 3, BT_CR_CONNECT, "10.0.0.5:50030", "10.0.0.1:80");
	gen_accept(w, 111, 7, 3, "10.0.0.1:80", "10.0.0.5:50030");
	gen_msg(cl, 112, 3, OUT, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/c"), 0);
	http_in(w, 113, 7, "/c");
	gen_msg(cl, 120, 3, IN, REP, BT_PROTO_HTTP, 90, 0, 200, 0, 0);
	gen_close(cl2, 150, 3);
	gen_close(w, 300, 7);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(l, '\n') FROM (SELECT s.target || ' ' || s.kind || ' ' || s.certainty || ' ' || IFNULL(s.certainty_reason, '-') AS l FROM spans s JOIN requests r USING (request_id) WHERE r.target = '/c' ORDER BY s.start_ns, s.span_id)"),
		"/c client uncertain closed-unread\n"
		"/c server uncertain closed-unread");
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM requests WHERE certainty = 'exact'"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'closed_unread_spans'"), 1);
	rt_done(&t);
}
END_TEST

/* Two static requests in one read: the loop opens /a's file in /b's
 * designation.  Both requests are marked (span_candidates, span_id
 * NULL); the one-request fragment after them stays exact. */
START_TEST(batched_file_fires)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *w = front_noiso(h, &b);

	gen_accept(w, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_ready(w, 110, 5, POLLIN);
	http_in(w, 111, 5, "/a");
	http_in(w, 111, 5, "/b");
	gen_open(w, 112, 11, "/www/a.txt");
	http_out(w, 113, 5);
	gen_open(w, 114, 12, "/www/b.txt");
	http_out(w, 115, 5);
	gen_ready(w, 120, 5, POLLIN);
	http_in(w, 121, 5, "/c");
	gen_open(w, 122, 13, "/www/c.txt");
	sql_out(w, 123, 9, "SELECT c");
	sql_in(b, 124, 4, "SELECT c");
	rep_out(b, 125, 4);
	gen_ready(w, 126, 9, POLLIN);
	rep_in(w, 127, 9);
	http_out(w, 128, 5);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(labels(&t),
		"/a uncertain ambiguous:batched\n/b uncertain ambiguous:batched\n"
		"/c exact -");
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(r.target || ':' || k.chosen, ' ') FROM span_candidates k JOIN requests r USING (request_id) WHERE k.span_id IS NULL"),
			 "/a:0 /b:1");
	rt_done(&t);
}
END_TEST

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

/*
 * urllib3 before it reuses a pooled connection polls it for input with a
 * zero timeout (is the connection dropped?), then for POLLOUT: two waits
 * on one fd alone, a timeout and a writable one, part of the fragment of
 * the request that makes the call.  The connection was last used by /a:
 * /b's query is /b's, exact (not /a's, nor /b parked at the timeout).
 */
START_TEST(alone_timeout_stays)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 300, "/usr/bin/python3", 0);
	struct gen_thr *b = backend(h, "10.0.0.1:50010");

	gen_accept(w, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	http_in(w, 101, 5, "/a");
	gen_tcp(w, 102, 9, BT_CR_CONNECT, "10.0.0.1:50010", "10.0.0.2:5432");
	gen_ready(w, 103, 9, POLLOUT | BT_RF_ALONE);
	sql_out(w, 104, 9, "SELECT a");
	sql_in(b, 105, 4, "SELECT a");
	rep_out(b, 106, 4);
	gen_ready(w, 107, 9, POLLIN | BT_RF_ALONE);
	rep_in(w, 108, 9);
	http_out(w, 109, 5);
	http_in(w, 200, 5, "/b");
	gen_ready(w, 201, -1, BT_RF_ALONE);
	gen_ready(w, 202, 9, POLLOUT | BT_RF_ALONE);
	sql_out(w, 203, 9, "SELECT b");
	sql_in(b, 204, 4, "SELECT b");
	rep_out(b, 205, 4);
	gen_ready(w, 206, 9, POLLIN | BT_RF_ALONE);
	rep_in(w, 207, 9);
	http_out(w, 208, 5);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /a st=200 client=10.0.0.7:1111\n"
		"  server http 'GET /a' /a web/300/300 st=200\n"
		"    client postgresql 'SELECT' SELECT a web/300/300 st=NULL\n"
		"      server postgresql 'SELECT' SELECT a web/400/400 st=NULL\n"
		"R http GET /b st=200 client=10.0.0.7:1111\n"
		"  server http 'GET /b' /b web/300/300 st=200\n"
		"    client postgresql 'SELECT' SELECT b web/300/300 st=NULL\n"
		"      server postgresql 'SELECT' SELECT b web/400/400 st=NULL\n"
		"unattributed:\n");
	ck_assert_str_eq(labels(&t), "/a exact -\n/b exact -");
	/* the waits begin no fragment: /b's is the one its request began */
	ck_assert_str_eq(rt_q(&t, "SELECT count(*) FROM fragments WHERE pid = 300 AND request_id = (SELECT request_id FROM requests WHERE target = '/b')"), "2");
	rt_done(&t);
}
END_TEST

/* ---- the parked detector ------------------------------------------------- */

/* The front (pid 300) with its pooled backend connection, fd 9, opened at
 * start-up for no request; the backend (pid 400) behind it. */
static struct gen_thr *front(struct gen_host *h, struct gen_thr **b)
{
	struct gen_thr *w = gen_proc_main(h, 300, "/usr/bin/front", 0);
	gen_tcp(w, 10, 9, BT_CR_CONNECT, "10.0.0.1:50010", "10.0.0.2:5432");
	*b = backend(h, "10.0.0.1:50010");
	return w;
}

/*
 * An event loop whose one backend connection is busy: /b waits in a queue
 * in memory, and its query is sent from the fragment of /a's reply.  The
 * query goes to /a (its fragment's request), marked, and /b, parked when
 * the query went, may miss it: both are uncertain, never silently wrong.
 * The backend's span below the marked one inherits the mark.
 */
START_TEST(hidden_queue_fires)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *w = front(h, &b);

	gen_accept(w, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_accept(w, 101, 6, 3, "10.0.0.1:80", "10.0.0.6:2222");
	gen_ready(w, 110, 5, POLLIN);
	http_in(w, 111, 5, "/a");
	sql_out(w, 112, 9, "SELECT a");
	gen_ready(w, 120, 6, POLLIN);
	http_in(w, 121, 6, "/b");           /* the pool is busy: queued */
	sql_in(b, 113, 4, "SELECT a");
	rep_out(b, 130, 4);
	gen_ready(w, 131, 9, POLLIN);
	rep_in(w, 132, 9);
	http_out(w, 133, 5);
	sql_out(w, 134, 9, "SELECT b");     /* /b's, from /a's fragment */
	sql_in(b, 135, 4, "SELECT b");
	rep_out(b, 140, 4);
	gen_ready(w, 141, 9, POLLIN);
	rep_in(w, 142, 9);
	http_out(w, 143, 6);
	sql_out(w, 150, 9, "SELECT c");     /* nothing parked any more */

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /a st=200 client=10.0.0.7:1111 [uncertain ambiguous:parked]\n"
		"  server http 'GET /a' /a web/300/300 st=200\n"
		"    client postgresql 'SELECT' SELECT a web/300/300 st=NULL\n"
		"      server postgresql 'SELECT' SELECT a web/400/400 st=NULL\n"
		"    client postgresql 'SELECT' SELECT b web/300/300 st=NULL [uncertain ambiguous:parked]\n"
		"      server postgresql 'SELECT' SELECT b web/400/400 st=NULL [uncertain ambiguous:parked]\n"
		"    client postgresql 'SELECT' SELECT c web/300/300 st=NULL\n"
		"R http GET /b st=200 client=10.0.0.6:2222 [uncertain ambiguous:parked]\n"
		"  server http 'GET /b' /b web/300/300 st=200\n"
		"unattributed:\n");
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(r.target || ':' || k.chosen, ' ') FROM span_candidates k JOIN requests r USING (request_id)"),
			 "/b:0 /a:1");
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(target, ' ') FROM uncertain_requests"),
			 "/a /b");
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'requests_uncertain'"), 2);
	ck_assert_int_eq(t.sum.uncertain, 2);
	ck_assert_int_eq(t.sum.exact, 0);
	rt_done(&t);
}
END_TEST

/*
 * Read-ahead: one thread reads the requests of two connections (blocking
 * reads) before it works on the first.  /a is parked when the thread
 * reads /b's input; the query it then sends is ambiguous.
 */
START_TEST(readahead_fires)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *w = front(h, &b);

	gen_accept(w, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_accept(w, 101, 6, 3, "10.0.0.1:80", "10.0.0.6:2222");
	http_in(w, 110, 5, "/a");
	http_in(w, 111, 6, "/b");
	sql_out(w, 112, 9, "SELECT a");
	sql_in(b, 113, 4, "SELECT a");
	rep_out(b, 114, 4);
	rep_in(w, 115, 9);
	http_out(w, 116, 5);
	http_out(w, 117, 6);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(labels(&t),
		"/a uncertain readahead\n/b uncertain ambiguous:parked");
	rt_done(&t);
}
END_TEST

/*
 * A thread pool fed through memory: the reader thread (300) reads /a and
 * goes back to wait, the READY that ends its wait logged at BACK; the
 * worker (301) sends the query at 120 in its stale designation.  CUT:
 * each thread's block ends after its work (as a drain would), so that a
 * merge in steps can pause between the query and BACK.
 */
static struct gen *handoff(int64_t back, int cut)
{
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *r = front(h, &b);

	gen_thread_create(r, 11, 1);
	struct gen_thr *wk = gen_thread(gen_thr_proc(r), 12, 301, 300, 1);
	gen_accept(r, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_ready(r, 110, 5, POLLIN);
	http_in(r, 111, 5, "/a");
	if (cut)
		gen_cut(r);
	sql_out(wk, 120, 9, "SELECT a");     /* the worker, for no request */
	if (cut)
		gen_cut(wk);
	gen_ready(r, back, 3, POLLIN);       /* back to wait: /a parked */
	sql_in(b, 121, 4, "SELECT a");
	rep_out(b, 122, 4);
	rep_in(wk, 123, 9);
	http_out(wk, 124, 5);
	return g;
}

/*
 * The parked detector reads ahead: the worker's query is sent while the
 * reader, which read /a, is back in its wait, whose READY the log has
 * only from its return on (130).  Merged at once, /a is parked.  Merged
 * as the logs grow (rc_options.steps), a pause between the query and
 * that READY leaves the reader without a next record when the query
 * comes: the merge must not guess, it waits for that record before it
 * applies the query (merge.c, rc_park_needs_ahead), for every number of
 * steps that puts a pause there: the same labels.  (Applying the query
 * without it, the stepped merge labelled both "ambiguous:answered".)
 */
START_TEST(read_ahead_waits_for_the_record)
{
	int waited = 0;

	for (int steps = 0; steps <= 40; steps += steps < 10 ? 1 : 5) {
		struct rt t;

		rt_init(&t);
		t.steps = steps;
		/* (not held back at the accept of an untraced client:
		 * rc_options.hold_ns) */
		t.hold_ns = 1;
		rt_write(&t, handoff(130, 1), NULL);
		ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
		ck_assert_str_eq(labels(&t),
			"/a uncertain ambiguous:parked\n"
			"SELECT a uncertain ambiguous:parked");
		const char *w = strstr(rt_stderr(&t), " pauses for a look ahead");
		if (steps > 1) {
			ck_assert_ptr_nonnull(w);
			while (w[-1] >= '0' && w[-1] <= '9')
				w--;
			waited += atoi(w) > 0;
			ck_assert_ptr_nonnull(strstr(rt_stderr(&t),
				", 0 asked for a next record they did not have"));
		}
		rt_done(&t);
	}
	ck_assert_int_gt(waited, 3);
}
END_TEST

/*
 * A thread pool fed through memory: the reader thread reads each request
 * and goes back to wait; the worker sends the query in its stale
 * designation (the previous request it answered).  Marked.
 */
START_TEST(thread_handoff_fires)
{
	struct rt t;
	struct gen *g = handoff(112, 0);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(labels(&t),
		"/a uncertain ambiguous:parked\n"
		"SELECT a uncertain ambiguous:parked");
	rt_done(&t);
}
END_TEST

/*
 * A pool thread started while its creator worked for /a (rule 3 gives it
 * /a) runs /b's job, handed over in memory, before it reads any input:
 * /a is still being served (a call of its own awaits its reply, so it is
 * not parked), /b is open and read whole.  The worker's query may be
 * /b's: uncertain, 'ambiguous:inherited', with /b a candidate; never
 * exact in /a.  With the query naming /b's value it is resolved to /b.
 */
static void inherited_run(struct rt *t, const char *sql)
{
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *r = front(h, &b);
	struct gen_thr *d = gen_thread(gen_thr_proc(r), 2, 302, 300, 0);

	gen_accept(r, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_accept(d, 101, 6, 3, "10.0.0.1:80", "10.0.0.6:2222");
	gen_pipe(d, 102, 12, 11, 7777);              /* a pipe of its own */
	gen_ready(r, 110, 5, POLLIN);
	http_in(r, 111, 5, "/a/k1x");
	gen_thread_create(r, 112, 1);                /* the pool grows */
	struct gen_thr *wk = gen_thread(gen_thr_proc(r), 113, 301, 300, 1);
	sql_out(r, 114, 9, "SELECT 'k1x'");          /* /a's own call */
	sql_in(b, 115, 4, "SELECT 'k1x'");
	gen_ready(d, 120, 6, POLLIN);
	http_in(d, 121, 6, "/b/k2x");                /* read by another thread */
	gen_tcp(wk, 130, 10, BT_CR_CONNECT, "10.0.0.1:50011", "10.0.0.2:5432");
	struct gen_thr *b2 = gen_thread(gen_thr_proc(b), 131, 401, 400, 0);
	gen_tcp(b2, 132, 7, BT_CR_ACCEPT, "10.0.0.2:5432", "10.0.0.1:50011");
	sql_out(wk, 140, 10, sql);                   /* the worker's first */
	sql_in(b2, 141, 7, sql);
	rep_out(b2, 142, 7);
	rep_in(wk, 143, 10);
	rep_out(b, 150, 4);
	rep_in(r, 151, 9);
	http_out(r, 152, 5);
	http_out(wk, 153, 6);
	gen_data(d, 160, 11, OUT, 8);  /* d goes on (its next record no wait:
					 * /b not parked) */
	rt_init(t);
	rt_write(t, g, NULL);
	ck_assert_int_eq(rt_run(t), RC_EXIT_OK);
}

START_TEST(inherited_designation_fires)
{
	struct rt t;

	inherited_run(&t, "SELECT 1");
	ck_assert_str_eq(rt_q(&t, "SELECT certainty || ' ' || certainty_reason FROM spans WHERE target = 'SELECT 1' AND kind = 'client'"),
			 "uncertain ambiguous:inherited");
	ck_assert_str_eq(labels(&t),
		"/a/k1x uncertain ambiguous:inherited\n"
		"/b/k2x uncertain ambiguous:inherited");
	rt_done(&t);
	inherited_run(&t, "SELECT 'k2x'");
	ck_assert_str_eq(rt_q(&t, "SELECT s.certainty || ' ' || s.certainty_reason || ' ' || r.target FROM spans s JOIN requests r USING (request_id) WHERE s.target = 'SELECT ''k2x''' AND s.kind = 'client'"),
			 "resolved handoff:content /b/k2x");
	rt_done(&t);
}
END_TEST

/*
 * gRPC: two calls /S/Get on one HTTP/2 connection, their ids only in
 * their messages (the http2 processor's params on each call's last
 * frame).  A handler thread created while the reader served the first
 * sends the second's SQL: decided by the body's value (handoff:content).
 * With the values redacted (params empty) the bodies are unknown: the
 * call stays uncertain (the first, read ahead of, is parked), never
 * given to the first by its thread.
 */
static void grpc_body_run(struct rt *t, int redacted)
{
	char p1[40], p2[40];
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *r = front(h, &b);

	snprintf(p1, sizeof p1, "0:%016llx",
		 (unsigned long long)bt_value_hash("id-one", 6));
	snprintf(p2, sizeof p2, "0:%016llx",
		 (unsigned long long)bt_value_hash("id-two", 6));
	gen_accept(r, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_ready(r, 110, 5, POLLIN);
	gen_msg(r, 111, 5, IN, REQ, BT_PROTO_HTTP2, 40, BT_MF_WITNESS, 0, 1,
		GEN_A(BT_AK_METHOD, "POST"), GEN_A(BT_AK_TARGET, "/S/Get"), 0);
	gen_thread_create(r, 112, 1);
	struct gen_thr *wk = gen_thread(gen_thr_proc(r), 113, 301, 300, 1);
	gen_msg(r, 114, 5, IN, BT_MK_ONEWAY, BT_PROTO_HTTP2, 20,
		BT_MF_WITNESS, 0, 1, GEN_A(BT_AK_PARAMS, redacted ? "" : p1), 0);
	gen_msg(r, 115, 5, IN, REQ, BT_PROTO_HTTP2, 40, BT_MF_WITNESS, 0, 3,
		GEN_A(BT_AK_METHOD, "POST"), GEN_A(BT_AK_TARGET, "/S/Get"), 0);
	gen_msg(r, 116, 5, IN, BT_MK_ONEWAY, BT_PROTO_HTTP2, 20,
		BT_MF_WITNESS, 0, 3, GEN_A(BT_AK_PARAMS, redacted ? "" : p2), 0);
	gen_data(r, 117, 5, OUT, 9);     /* the reader goes on (no wait) */
	sql_out(wk, 120, 9, "SELECT v FROM t WHERE k = 'id-two'");
	sql_in(b, 121, 4, "SELECT v FROM t WHERE k = 'id-two'");
	rep_out(b, 122, 4);
	rep_in(wk, 123, 9);
	/* the same query with another value later: its literal carries
	 * data (a constant would decide nothing) */
	sql_out(wk, 130, 9, "SELECT v FROM t WHERE k = 'id-one'");
	sql_in(b, 131, 4, "SELECT v FROM t WHERE k = 'id-one'");
	rep_out(b, 132, 4);
	rep_in(wk, 133, 9);
	rt_init(t);
	rt_write(t, g, NULL);
	ck_assert_int_eq(rt_run(t), RC_EXIT_OK);
}

START_TEST(grpc_body_values_decide)
{
	struct rt t;
	const char *q = "SELECT s.certainty || ' ' || IFNULL(s.certainty_reason, '-') || ' ' || r.request_id FROM spans s JOIN requests r USING (request_id) WHERE s.protocol = 'postgresql' AND s.kind = 'client' AND s.target LIKE '%id-two%'";

	grpc_body_run(&t, 0);
	ck_assert_str_eq(rt_q(&t, "%s", q), "resolved handoff:content 2");
	rt_done(&t);
	grpc_body_run(&t, 1);
	ck_assert_str_eq(rt_q(&t, "%s", q), "uncertain ambiguous:parked 1");
	rt_done(&t);
}
END_TEST

/*
 * Unary gRPC methods (--grpc-unary, docs/reconstruct.md "Unary gRPC
 * methods").  Three calls of /S/Get on one HTTP/2 connection: the first
 * and the second read whole (their ids in their messages), the third's
 * header block read but not its body.  A handler thread created while
 * the reader served the first sends the second's SQL.  Without the
 * methods named, the third may own it (a streaming handler starts before
 * its body ends): uncertain.  With /S/Get named unary, the third cannot
 * have started: the SQL is decided by content, for the second.  When the
 * third's body frame was read before the SQL but its values are unknown
 * (redacted), it may have started: uncertain again, named or not; so
 * in a program that sends HTTP/2 requests (a relay), and while another
 * thread of the server is held back in the merge at or before the SQL's
 * time (HELD_AT: its read waits for a traced client's later send).
 */
static void grpc_unary_run(struct rt *t, const char *const *unary,
			   int nunary, int body_first, int relay,
			   int64_t held_at)
{
	char p[3][40];
	const char *id[3] = { "id-one", "id-two", "id-six" };
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *r = front(h, &b);

	for (int i = 0; i < 3; i++)
		snprintf(p[i], sizeof p[i], "0:%016llx",
			 (unsigned long long)bt_value_hash(id[i], 6));
	gen_accept(r, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_ready(r, 110, 5, POLLIN);
	gen_msg(r, 111, 5, IN, REQ, BT_PROTO_HTTP2, 40, BT_MF_WITNESS, 0, 1,
		GEN_A(BT_AK_METHOD, "POST"), GEN_A(BT_AK_TARGET, "/S/Get"), 0);
	gen_thread_create(r, 112, 1);
	struct gen_thr *wk = gen_thread(gen_thr_proc(r), 113, 301, 300, 1);
	gen_msg(r, 114, 5, IN, BT_MK_ONEWAY, BT_PROTO_HTTP2, 20,
		BT_MF_WITNESS, 0, 1, GEN_A(BT_AK_PARAMS, p[0]), 0);
	gen_msg(r, 115, 5, IN, REQ, BT_PROTO_HTTP2, 40, BT_MF_WITNESS, 0, 3,
		GEN_A(BT_AK_METHOD, "POST"), GEN_A(BT_AK_TARGET, "/S/Get"), 0);
	gen_msg(r, 116, 5, IN, BT_MK_ONEWAY, BT_PROTO_HTTP2, 20,
		BT_MF_WITNESS, 0, 3, GEN_A(BT_AK_PARAMS, p[1]), 0);
	gen_msg(r, 117, 5, IN, REQ, BT_PROTO_HTTP2, 40, BT_MF_WITNESS, 0, 5,
		GEN_A(BT_AK_METHOD, "POST"), GEN_A(BT_AK_TARGET, "/S/Get"), 0);
	if (body_first)      /* the third's body, its values unknown */
		gen_msg(r, 118, 5, IN, BT_MK_ONEWAY, BT_PROTO_HTTP2, 20,
			BT_MF_WITNESS, 0, 5, GEN_A(BT_AK_PARAMS, ""), 0);
	if (held_at) {
		/* another thread of the server reads at HELD_AT what a
		 * traced client sends only at 126: held in the merge until
		 * then (it might have held the third's body frame) */
		struct gen_thr *r2 = gen_thread(gen_thr_proc(r), 101, 302,
						300, 0);
		struct gen_thr *cl = gen_proc_main(h, 500, "/usr/bin/cli", 0);
		gen_tcp(cl, 102, 3, BT_CR_CONNECT, "10.0.0.1:40000",
			"10.0.0.1:7000");
		gen_accept(r2, 103, 8, 6, "10.0.0.1:7000", "10.0.0.1:40000");
		gen_data(r2, held_at, 8, IN, 10);
		gen_data(cl, 126, 3, OUT, 10);
	}
	gen_data(r, 119, 5, OUT, 9);     /* the reader goes on (no wait) */
	sql_out(wk, 120, 9, "SELECT v FROM t WHERE k = 'id-two'");
	sql_in(b, 121, 4, "SELECT v FROM t WHERE k = 'id-two'");
	rep_out(b, 122, 4);
	rep_in(wk, 123, 9);
	if (!body_first)
		gen_msg(r, 125, 5, IN, BT_MK_ONEWAY, BT_PROTO_HTTP2, 20,
			BT_MF_WITNESS, 0, 5, GEN_A(BT_AK_PARAMS, p[2]), 0);
	/* the same query with other values later: its literal carries
	 * data (a constant would decide nothing) */
	sql_out(wk, 130, 9, "SELECT v FROM t WHERE k = 'id-one'");
	sql_in(b, 131, 4, "SELECT v FROM t WHERE k = 'id-one'");
	rep_out(b, 132, 4);
	rep_in(wk, 133, 9);
	sql_out(wk, 140, 9, "SELECT v FROM t WHERE k = 'id-six'");
	sql_in(b, 141, 4, "SELECT v FROM t WHERE k = 'id-six'");
	rep_out(b, 142, 4);
	rep_in(wk, 143, 9);
	if (relay) {         /* later, the process sends an HTTP/2 request */
		gen_tcp(r, 150, 12, BT_CR_CONNECT, "10.0.0.1:50099",
			"10.0.0.9:50051");
		gen_msg(r, 151, 12, OUT, REQ, BT_PROTO_HTTP2, 40,
			BT_MF_WITNESS, 0, 1, GEN_A(BT_AK_METHOD, "POST"),
			GEN_A(BT_AK_TARGET, "/S/Get"), 0);
	}
	rt_init(t);
	t->unary = unary;
	t->nunary = nunary;
	rt_write(t, g, NULL);
	ck_assert_int_eq(rt_run(t), RC_EXIT_OK);
}

START_TEST(grpc_unary_excludes_unstarted)
{
	struct rt t;
	const char *exact[] = { "/S/Get" }, *glob[] = { "/S/*" };
	const char *other[] = { "/T/*" };
	const char *q = "SELECT s.certainty || ' ' || IFNULL(s.certainty_reason, '-') || ' ' || r.request_id FROM spans s JOIN requests r USING (request_id) WHERE s.protocol = 'postgresql' AND s.kind = 'client' AND s.target LIKE '%id-two%'";
	const char *third = "SELECT certainty FROM requests WHERE request_id = 3";

	grpc_unary_run(&t, NULL, 0, 0, 0, 0);          /* the sound default */
	ck_assert_str_eq(rt_q(&t, "%s", q), "uncertain ambiguous:parked 1");
	ck_assert_str_eq(rt_q(&t, "%s", third), "uncertain");
	rt_done(&t);
	grpc_unary_run(&t, other, 1, 0, 0, 0);         /* another service named */
	ck_assert_str_eq(rt_q(&t, "%s", q), "uncertain ambiguous:parked 1");
	rt_done(&t);
	grpc_unary_run(&t, exact, 1, 0, 0, 0);
	ck_assert_str_eq(rt_q(&t, "%s", q), "resolved handoff:content 2");
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM span_candidates c JOIN spans s USING (span_id) WHERE s.target LIKE '%%id-two%%' AND c.request_id = 3"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'grpc_unary_calls'"), 3);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'grpc_unary_excluded'"), 1);
	rt_done(&t);
	grpc_unary_run(&t, glob, 1, 0, 0, 0);
	ck_assert_str_eq(rt_q(&t, "%s", q), "resolved handoff:content 2");
	rt_done(&t);
	grpc_unary_run(&t, glob, 1, 1, 0, 0);       /* its body came first */
	ck_assert_str_eq(rt_q(&t, "%s", q), "uncertain ambiguous:parked 1");
	ck_assert_str_eq(rt_q(&t, "%s", third), "uncertain");
	rt_done(&t);
	/* a program that sends HTTP/2 requests may relay calls (nginx's
	 * grpc_pass works for a call from its header block on): the rule
	 * is not applied in it, even before its first such request */
	grpc_unary_run(&t, glob, 1, 0, 1, 0);
	ck_assert_str_eq(rt_q(&t, "%s", q), "uncertain ambiguous:parked 1");
	rt_done(&t);
	/* another thread of the server held back in the merge at or
	 * before the SQL's time (a read waiting for its send): its records
	 * may hold the third's body frame, the rule is not applied */
	grpc_unary_run(&t, glob, 1, 0, 0, 119);
	ck_assert_str_eq(rt_q(&t, "%s", q), "uncertain ambiguous:parked 1");
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'grpc_unary_excluded'"), 0);
	rt_done(&t);
	grpc_unary_run(&t, glob, 1, 0, 0, 120);    /* the same time */
	ck_assert_str_eq(rt_q(&t, "%s", q), "uncertain ambiguous:parked 1");
	rt_done(&t);
	grpc_unary_run(&t, glob, 1, 0, 0, 121);    /* after it: applied */
	ck_assert_str_eq(rt_q(&t, "%s", q), "resolved handoff:content 2");
	rt_done(&t);
}
END_TEST

/* The .proto reader: package, services, rpcs with and without stream,
 * comments, options with braces and strings; errors with their line. */
START_TEST(grpc_proto_reader)
{
	static const char proto[] =
		"// rpc Fake (A) returns (B);\n"
		"syntax = \"proto3\";\n"
		"package tb.v1;\n"
		"import \"google/api/annotations.proto\";\n"
		"option go_package = \"x/y;tb\";  /* block\n"
		"   comment } { rpc No (A) returns (B); */\n"
		"message Req { string id = 1; map<string, int32> m = 3;\n"
		"  message In { int32 x = 1; } }\n"
		"service Svc {\n"
		"  option (o) = { a: \"}\" };\n"
		"  rpc Get (Req) returns (.tb.v1.Resp);\n"
		"  rpc Up (stream Req) returns (Resp) {}\n"
		"  rpc Down(Req)returns(stream Resp){ option (h) = { get: \"/v1/{id}\" }; };\n"
		"  rpc Both (stream Req) returns (stream Resp);\n"
		"  rpc Odd (stream) returns (Resp);\n"
		"}\n"
		"enum E { A = 0; B = -1; }\n"
		"service Other { rpc Ping (Req) returns (Resp); }\n";
	char **l = NULL, err[256];
	int n = 0, nall = 0;

	ck_assert_int_eq(rc_grpc_proto_parse("t.proto", proto, sizeof proto - 1,
					     &l, &n, &nall, err, sizeof err), 3);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(nall, 6);
	ck_assert_str_eq(l[0], "/tb.v1.Svc/Get");
	ck_assert_str_eq(l[1], "/tb.v1.Svc/Odd");   /* a type named stream */
	ck_assert_str_eq(l[2], "/tb.v1.Other/Ping");
	ck_assert(rc_grpc_unary_match((const char *const *)l, n, "/tb.v1.Svc/Get"));
	ck_assert(!rc_grpc_unary_match((const char *const *)l, n, "/tb.v1.Svc/Up"));
	ck_assert(!rc_grpc_unary_match((const char *const *)l, n, "/tb.v1.Svc/Gets"));
	for (int i = 0; i < n; i++)
		free(l[i]);
	free(l);
	l = NULL;
	n = 0;
	/* no package: "/Service/Method" */
	ck_assert_int_eq(rc_grpc_proto_parse("p", "service S{rpc A(B)returns(C);}", 30,
					     &l, &n, &nall, err, sizeof err), 1);
	ck_assert_str_eq(l[0], "/S/A");
	free(l[0]);
	free(l);
	l = NULL;
	n = 0;
	ck_assert_int_eq(rc_grpc_proto_parse("b.proto", "service S {\n rpc A (B) returns C;\n}", 34,
					     &l, &n, &nall, err, sizeof err), -EINVAL);
	ck_assert_str_eq(err, "b.proto:2: rpc: '(' expected");
	ck_assert_int_eq(rc_grpc_proto_parse("m.proto", "message M { int32 a = 1; }", 26,
					     &l, &n, &nall, err, sizeof err), -EINVAL);
	ck_assert_int_eq(rc_grpc_proto_parse("c.proto", "/* open", 7,
					     &l, &n, &nall, err, sizeof err), -EINVAL);
	ck_assert_int_eq(n, 0);
	free(l);
	ck_assert_int_eq(rc_grpc_pattern_check("/a.B/*", err, sizeof err), 0);
	ck_assert_int_eq(rc_grpc_pattern_check("a.B/C", err, sizeof err), -EINVAL);
}
END_TEST

/*
 * Not parked: a request whose fragment opened a backend connection that
 * is still connecting (its query is sent from the writable event), and a
 * request whose body is still arriving.  Another request's query sent
 * meanwhile is exact.
 */
START_TEST(connecting_and_body_do_not_fire)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *w = front(h, &b);

	gen_accept(w, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_accept(w, 101, 6, 3, "10.0.0.1:80", "10.0.0.6:2222");
	gen_accept(w, 102, 7, 3, "10.0.0.1:80", "10.0.0.5:3333");
	gen_ready(w, 110, 5, POLLIN);
	http_in(w, 111, 5, "/a");
	/* /a's own connection to a second backend, connecting */
	gen_tcp(w, 112, 10, BT_CR_CONNECT, "10.0.0.1:50011", "10.0.0.3:5432");
	gen_ready(w, 120, 7, POLLIN);
	gen_msg_begin(w, 121, 7, IN);        /* /c: its body still comes */
	gen_ready(w, 130, 6, POLLIN);
	http_in(w, 131, 6, "/b");
	sql_out(w, 132, 9, "SELECT b");      /* exact */
	sql_in(b, 133, 4, "SELECT b");
	rep_out(b, 134, 4);
	gen_ready(w, 135, 10, POLLOUT);
	sql_out(w, 136, 10, "SELECT a");     /* exact */
	gen_ready(w, 140, 9, POLLIN);
	rep_in(w, 141, 9);
	http_out(w, 142, 6);
	gen_ready(w, 150, 7, POLLIN);
	gen_msg(w, 151, 7, IN, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "POST"), GEN_A(BT_AK_TARGET, "/c"), 0);
	http_out(w, 152, 7);
	gen_ready(w, 160, 10, POLLIN);
	rep_in(w, 161, 10);
	http_out(w, 162, 5);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(labels(&t),
		"/a exact -\n/c exact -\n/b exact -");
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM spans WHERE certainty <> 'exact'"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM span_candidates"), 0);
	rt_done(&t);
}
END_TEST

/*
 * Not parked: a poller thread's READY designates the request a worker
 * thread then reads and works on (Tomcat's NIO connector); the poller
 * goes back to wait while the worker works for it.
 */
START_TEST(poller_and_workers_do_not_fire)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *p = front(h, &b);

	gen_thread_create(p, 11, 1);
	gen_thread_create(p, 11, 2);
	struct gen_thr *w1 = gen_thread(gen_thr_proc(p), 12, 301, 300, 1);
	struct gen_thr *w2 = gen_thread(gen_thr_proc(p), 12, 302, 300, 2);
	gen_accept(p, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_accept(p, 101, 6, 3, "10.0.0.1:80", "10.0.0.6:2222");
	gen_ready(p, 110, 5, POLLIN);
	http_in(w1, 111, 5, "/a");
	gen_ready(p, 112, 6, POLLIN);
	http_in(w2, 113, 6, "/b");
	gen_ready(p, 114, 3, POLLIN);
	gen_tcp(w1, 115, 11, BT_CR_CONNECT, "10.0.0.1:50020", "10.0.0.2:5432");
	sql_out(w1, 116, 11, "SELECT a");
	sql_out(w2, 117, 9, "SELECT b");
	rep_in(w1, 120, 11);
	http_out(w1, 121, 5);
	sql_in(b, 118, 4, "SELECT b");
	rep_out(b, 119, 4);
	rep_in(w2, 122, 9);
	http_out(w2, 123, 6);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(labels(&t), "/a exact -\n/b exact -");
	rt_done(&t);
}
END_TEST

/*
 * A hidden queue whose reader has gone back to wait before the worker
 * sends: the reader reads /a and waits (its next record, a timeout, comes
 * after the worker's query); the worker, which took /a from memory, sends
 * /a's query for no request.  /a is parked from the moment its reader
 * waits, not from the record that ends that wait: the query is marked.
 */
START_TEST(waiting_reader_parks)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *r = front(h, &b);

	gen_thread_create(r, 11, 1);
	struct gen_thr *w = gen_thread(gen_thr_proc(r), 12, 301, 300, 1);
	gen_accept(r, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_ready(r, 110, 5, POLLIN);
	http_in(r, 111, 5, "/a");
	sql_out(w, 120, 9, "SELECT a");      /* taken from the queue */
	sql_in(b, 121, 4, "SELECT a");
	rep_out(b, 122, 4);
	gen_ready(w, 123, 9, POLLIN);
	rep_in(w, 124, 9);
	http_out(w, 125, 5);
	gen_ready(r, 130, -1, 0);            /* the reader's wait ends */

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(labels(&t), "/a uncertain ambiguous:parked\n"
			 "SELECT a uncertain ambiguous:parked");
	rt_done(&t);
}
END_TEST

/* A WANT record: FD's writability asked for (EVENTS: poll bits). */
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
 * ex-libevent with a busy pool and pipelining: /b is read while /a's
 * answer waits in the connection's output buffer, and its fragment asks
 * for out again (libevent turns reading off and keeps writing on): that
 * writable event is counted as where /b's work goes on.  But it only
 * writes /a's answer, and /b's call waits in memory for the pool's
 * connection, which /x's reply fragment sends.  When out is given up
 * (the output is out) in a fragment that is not /b's, /b, unanswered
 * and with nothing else to continue it, is parked then: its call is
 * marked.
 */
START_TEST(want_given_up_parks)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *w = front(h, &b);

	gen_accept(w, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_accept(w, 101, 6, 3, "10.0.0.1:80", "10.0.0.6:2222");
	gen_ready(w, 105, 6, POLLIN);
	http_in(w, 106, 6, "/x");
	sql_out(w, 107, 9, "SELECT x");      /* the pool's one connection */
	sql_in(b, 108, 4, "SELECT x");
	gen_ready(w, 110, 5, POLLIN);
	http_in(w, 111, 5, "/a");
	want(w, 112, 5, POLLIN | POLLOUT);    /* /a's answer queued */
	gen_ready(w, 113, 5, POLLIN);
	http_in(w, 114, 5, "/b");            /* pipelined; waits for the pool */
	want(w, 115, 5, POLLOUT);
	gen_ready(w, 116, 5, POLLOUT);
	http_out(w, 117, 5);                 /* /a's answer */
	rep_out(b, 120, 4);
	gen_ready(w, 121, 9, POLLIN);
	rep_in(w, 122, 9);
	want(w, 123, 5, 0);                  /* 5's output is out */
	sql_out(w, 124, 9, "SELECT b");      /* /b's, from /x's fragment */
	http_out(w, 125, 6);
	sql_in(b, 126, 4, "SELECT b");
	rep_out(b, 127, 4);
	gen_ready(w, 128, 9, POLLIN);
	rep_in(w, 129, 9);
	http_out(w, 130, 5);                 /* /b's answer */

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(labels(&t), "/x uncertain ambiguous:parked\n"
			 "/a exact -\n/b uncertain ambiguous:parked");
	rt_done(&t);
}
END_TEST

/*
 * Not parked: apache's prefork and worker MPMs.  The thread makes /a's
 * call (a one-fd wait on the backend socket before each send and read),
 * reads its reply, then reads the next pipelined request /b on /a's
 * connection without waiting (its check for a pipelined request before
 * it flushes: /a's answer stays in the output filter) and makes /b's
 * call; /d, a static file, is read the same way, and the three answers
 * go out together.  Another thread's query meanwhile is exact, and so is
 * every request: /a's and /b's work, call by call, was over when the
 * thread came back to their connection.
 */
START_TEST(pipelined_after_calls_does_not_fire)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *w = front(h, &b);

	gen_thread_create(w, 11, 1);
	struct gen_thr *w2 = gen_thread(gen_thr_proc(w), 12, 301, 300, 1);
	gen_accept(w, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_accept(w2, 101, 6, 3, "10.0.0.1:80", "10.0.0.6:2222");
	http_in(w, 110, 5, "/a");
	gen_ready(w, 111, 9, POLLOUT | BT_RF_ALONE);
	sql_out(w, 112, 9, "SELECT a");
	sql_in(b, 113, 4, "SELECT a");
	rep_out(b, 114, 4);
	gen_ready(w, 115, 9, POLLIN | BT_RF_ALONE);
	rep_in(w, 116, 9);
	http_in(w, 120, 5, "/b");            /* /a's answer not out yet */
	http_in(w2, 121, 6, "/c");
	gen_ready(w, 122, 9, POLLOUT | BT_RF_ALONE);
	sql_out(w, 123, 9, "SELECT b");
	sql_out(w2, 124, 9, "SELECT c");
	sql_in(b, 125, 4, "SELECT b");
	rep_out(b, 126, 4);
	sql_in(b, 127, 4, "SELECT c");
	rep_out(b, 128, 4);
	gen_ready(w, 129, 9, POLLIN | BT_RF_ALONE);
	rep_in(w, 130, 9);
	http_in(w, 131, 5, "/d");            /* static, no call */
	http_out(w, 132, 5);                 /* /a */
	http_out(w, 133, 5);                 /* /b */
	http_out(w, 134, 5);                 /* /d */
	rep_in(w2, 135, 9);
	http_out(w2, 136, 6);
	gen_ready(w, 140, 5, POLLIN | BT_RF_ALONE);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(labels(&t),
		"/a exact -\n/b exact -\n/c exact -\n/d exact -");
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(r.target || ':' || s.target, ' ') FROM spans s JOIN requests r USING (request_id) WHERE s.kind = 'client'"),
			 "/a:SELECT a /b:SELECT b /c:SELECT c");
	rt_done(&t);
}
END_TEST

/*
 * A read-ahead proxy: it reads the next pipelined request /b on /a's
 * connection before it makes /a's call, then sends both calls from /b's
 * fragment.  /a made no call before /b was read: it is parked
 * (readahead), and both calls are ambiguous.  Never silently wrong.
 */
START_TEST(pipelined_readahead_fires)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *w = front(h, &b);

	gen_accept(w, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	http_in(w, 110, 5, "/a");
	http_in(w, 111, 5, "/b");
	sql_out(w, 112, 9, "SELECT a");      /* /a's, in /b's fragment */
	sql_in(b, 113, 4, "SELECT a");
	rep_out(b, 114, 4);
	rep_in(w, 115, 9);
	sql_out(w, 116, 9, "SELECT b");
	sql_in(b, 117, 4, "SELECT b");
	rep_out(b, 118, 4);
	rep_in(w, 119, 9);
	http_out(w, 120, 5);                 /* /a */
	http_out(w, 121, 5);                 /* /b */

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(labels(&t),
		"/a uncertain readahead\n/b uncertain ambiguous:parked");
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM span_candidates WHERE chosen = 0"), 2);
	rt_done(&t);
}
END_TEST

/*
 * The same thread, /a's calls all answered, but the next request it
 * reads without waiting is on another connection: /a's work is not
 * shown to be over (its answer must precede nothing on that connection),
 * so /a is parked (readahead) and /b's call is ambiguous.
 */
START_TEST(readahead_other_connection_after_calls_fires)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *w = front(h, &b);

	gen_accept(w, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_accept(w, 101, 6, 3, "10.0.0.1:80", "10.0.0.6:2222");
	http_in(w, 110, 5, "/a");
	sql_out(w, 111, 9, "SELECT a");
	sql_in(b, 112, 4, "SELECT a");
	rep_out(b, 113, 4);
	rep_in(w, 114, 9);
	http_in(w, 115, 6, "/b");
	sql_out(w, 116, 9, "SELECT b");
	sql_in(b, 117, 4, "SELECT b");
	rep_out(b, 118, 4);
	rep_in(w, 119, 9);
	http_out(w, 120, 5);                 /* /a */
	http_out(w, 121, 6);                 /* /b */

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(labels(&t),
		"/a uncertain readahead\n/b uncertain ambiguous:parked");
	rt_done(&t);
}
END_TEST

/*
 * haproxy with a per-server queue: one thread reads /a, opens a backend
 * connection for it (connecting: /a is not parked, its work goes on at
 * the connect), then reads /b; in /b's fragment it asks to be told when
 * the connection is writable, and the writable event sends /a's call.
 * The call goes to /b (the WANT's request); /a's continuation, its own
 * connection, carried another request's message: /a is a candidate of
 * that call and is parked from then on.  Never silently wrong.
 */
START_TEST(connect_taken_by_another_fires)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *w = front(h, &b);

	gen_ready(w, 100, 3, POLLIN);
	gen_accept(w, 101, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_accept(w, 102, 6, 3, "10.0.0.1:80", "10.0.0.6:2222");
	http_in(w, 110, 5, "/a");
	gen_tcp(w, 111, 10, BT_CR_CONNECT, "10.0.0.1:50011", "10.0.0.3:5432");
	http_in(w, 112, 6, "/b");
	want(w, 113, 10, POLLIN | POLLOUT);
	gen_ready(w, 120, 10, POLLOUT);
	sql_out(w, 121, 10, "SELECT a");     /* /a's, in /b's designation */
	want(w, 122, 10, POLLIN);
	gen_ready(w, 130, 10, POLLIN);
	rep_in(w, 131, 10);
	http_out(w, 132, 5);
	sql_out(w, 133, 9, "SELECT b");
	sql_in(b, 134, 4, "SELECT b");
	rep_out(b, 135, 4);
	gen_ready(w, 140, 9, POLLIN);
	rep_in(w, 141, 9);
	http_out(w, 142, 6);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(labels(&t),
		"/a uncertain ambiguous:parked\n"
		"/b uncertain ambiguous:parked");
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(r.target || ':' || k.chosen, ' ') FROM span_candidates k JOIN requests r USING (request_id)"),
			 "/a:0 /b:1");
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(target || ' ' || certainty, ', ') FROM spans WHERE kind = 'client' ORDER BY start_ns"),
			 "SELECT a uncertain, SELECT b exact");
	rt_done(&t);
}
END_TEST

/* ---- resolving an ambiguous message by content (tokens.c) --------------- */

/*
 * The hidden queue above with content.  First /w's query WARM (nothing
 * parked: it only shows which positions of its shape carry data), then
 * /a's query QA from /a's fragment, /b (TB, body length BODY, NULL: none)
 * queued, and the query QB sent from /a's reply fragment while /b is
 * parked, before that fragment answers /a.  Returns the labels of the requests (labels()).
 */
static const char *content_queue(struct rt *t, const char *warm,
				 const char *ta, const char *qa,
				 const char *tb, const char *body,
				 const char *qb)
{
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *w = front(h, &b);

	gen_accept(w, 50, 7, 3, "10.0.0.1:80", "10.0.0.8:3333");
	gen_ready(w, 51, 7, POLLIN);
	http_in(w, 52, 7, "/w?id=www000");
	sql_out(w, 53, 9, warm);
	sql_in(b, 54, 4, warm);
	rep_out(b, 55, 4);
	gen_ready(w, 56, 9, POLLIN);
	rep_in(w, 57, 9);
	http_out(w, 58, 7);

	gen_accept(w, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_accept(w, 101, 6, 3, "10.0.0.1:80", "10.0.0.6:2222");
	gen_ready(w, 110, 5, POLLIN);
	http_in(w, 111, 5, ta);
	sql_out(w, 112, 9, qa);
	gen_ready(w, 120, 6, POLLIN);
	if (body)
		gen_msg(w, 121, 6, IN, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
			GEN_A(BT_AK_METHOD, "POST"), GEN_A(BT_AK_TARGET, tb),
			GEN_A(BT_AK_BODY_LEN, body), 0);
	else
		http_in(w, 121, 6, tb);      /* the pool is busy: queued */
	sql_in(b, 113, 4, qa);
	rep_out(b, 130, 4);
	gen_ready(w, 131, 9, POLLIN);
	rep_in(w, 132, 9);
	sql_out(w, 133, 9, qb);              /* /b's, from /a's fragment */
	http_out(w, 134, 5);                 /* which goes on for /a */
	sql_in(b, 135, 4, qb);
	rep_out(b, 140, 4);
	gen_ready(w, 141, 9, POLLIN);
	rep_in(w, 142, 9);
	http_out(w, 143, 6);

	rt_init(t);
	rt_write(t, g, NULL);
	ck_assert_int_eq(rt_run(t), RC_EXIT_OK);
	return labels(t);
}

/* The request the backend's span of QB is in, and the stat. */
static const char *qb_owner(struct rt *t)
{
	return rt_q(t, "SELECT r.target || ' ' || s.certainty FROM spans s JOIN requests r USING (request_id) WHERE s.exe = '/usr/bin/db' AND s.start_ns = (SELECT max(start_ns) FROM spans WHERE exe = '/usr/bin/db')");
}

/*
 * One candidate's target shares a value with the message that no other
 * candidate's carries: the span, and the backend's span below it, move to
 * /b ('resolved', 'handoff:content'); /a is no longer marked on its
 * account, and no candidate is listed.
 */
START_TEST(content_one_shares)
{
	struct rt t;

	ck_assert_str_eq(content_queue(&t,
		"SELECT v FROM kv WHERE k = 'www000'",
		"/a?id=aaa111&n=2", "SELECT v FROM kv WHERE k = 'aaa111'",
		"/b?id=bbb222&n=2", NULL,
		"SELECT v FROM kv WHERE k = 'bbb222'"),
		"/w?id=www000 exact -\n"
		"/a?id=aaa111&n=2 exact -\n"
		"/b?id=bbb222&n=2 resolved handoff:content");
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /w?id=www000 st=200 client=10.0.0.8:3333\n"
		"  server http 'GET /w' /w?id=www000 web/300/300 st=200\n"
		"    client postgresql 'SELECT' SELECT v FROM kv WHERE k = 'www000' web/300/300 st=NULL\n"
		"      server postgresql 'SELECT' SELECT v FROM kv WHERE k = 'www000' web/400/400 st=NULL\n"
		"R http GET /a?id=aaa111&n=2 st=200 client=10.0.0.7:1111\n"
		"  server http 'GET /a' /a?id=aaa111&n=2 web/300/300 st=200\n"
		"    client postgresql 'SELECT' SELECT v FROM kv WHERE k = 'aaa111' web/300/300 st=NULL\n"
		"      server postgresql 'SELECT' SELECT v FROM kv WHERE k = 'aaa111' web/400/400 st=NULL\n"
		"R http GET /b?id=bbb222&n=2 st=200 client=10.0.0.6:2222 [resolved handoff:content]\n"
		"  server http 'GET /b' /b?id=bbb222&n=2 web/300/300 st=200\n"
		"    client postgresql 'SELECT' SELECT v FROM kv WHERE k = 'bbb222' web/300/300 st=NULL [resolved handoff:content]\n"
		"      server postgresql 'SELECT' SELECT v FROM kv WHERE k = 'bbb222' web/400/400 st=NULL\n"
		"unattributed:\n");
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM span_candidates"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'content_resolved'"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'ambiguous_spans'"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'requests_resolved'"), 1);
	rt_done(&t);
}
END_TEST

/* The fragment's own request is the one that shares: it keeps the span,
 * now 'resolved'; /b is not marked. */
START_TEST(content_fragment_shares)
{
	struct rt t;

	ck_assert_str_eq(content_queue(&t,
		"SELECT v FROM kv WHERE k = 'www000'",
		"/a?id=aaa111", "SELECT v FROM kv WHERE k = 'aaa111'",
		"/b?id=bbb222", NULL,
		"SELECT v FROM kv WHERE k = 'aaa111'"),
		"/w?id=www000 exact -\n"
		"/a?id=aaa111 resolved handoff:content\n"
		"/b?id=bbb222 exact -");
	ck_assert_str_eq(qb_owner(&t), "/a?id=aaa111 exact");
	rt_done(&t);
}
END_TEST

/* Two candidates each share a value of their own: uncertain, as
 * without content. */
START_TEST(content_two_share)
{
	struct rt t;

	ck_assert_str_eq(content_queue(&t,
		"SELECT v FROM kv WHERE k = 'www000' AND j = 'www001'",
		"/a?id=aaa111", "SELECT v FROM kv WHERE k = 'aaa111' AND j = 'aaa112'",
		"/b?id=bbb222", NULL,
		"SELECT v FROM kv WHERE k = 'bbb222' AND j = 'aaa111'"),
		"/w?id=www000 exact -\n"
		"/a?id=aaa111 uncertain ambiguous:parked\n"
		"/b?id=bbb222 uncertain ambiguous:parked");
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'content_resolved'"), 0);
	rt_done(&t);
}
END_TEST

/* A value every candidate carries (the same user id) does not decide:
 * alone it leaves the span uncertain; beside a value only /b carries it
 * does not stand in the way. */
START_TEST(content_common_does_not_decide)
{
	struct rt t;

	ck_assert_str_eq(content_queue(&t,
		"SELECT v FROM kv WHERE u = 'usr000'",
		"/a?u=usr777&id=aaa111", "SELECT v FROM kv WHERE u = 'usr555'",
		"/b?u=usr777&id=bbb222", NULL,
		"SELECT v FROM kv WHERE u = 'usr777'"),
		"/w?id=www000 exact -\n"
		"/a?u=usr777&id=aaa111 uncertain ambiguous:parked\n"
		"/b?u=usr777&id=bbb222 uncertain ambiguous:parked");
	rt_done(&t);
	ck_assert_str_eq(content_queue(&t,
		"SELECT v FROM kv WHERE u = 'usr000' AND k = 'www000'",
		"/a?u=usr777&id=aaa111", "SELECT v FROM kv WHERE u = 'usr555' AND k = 'aaa111'",
		"/b?u=usr777&id=bbb222", NULL,
		"SELECT v FROM kv WHERE u = 'usr777' AND k = 'bbb222'"),
		"/w?id=www000 exact -\n"
		"/a?u=usr777&id=aaa111 exact -\n"
		"/b?u=usr777&id=bbb222 resolved handoff:content");
	rt_done(&t);
}
END_TEST

/*
 * No decision: the message carries no value (no literal); a value at a
 * position always seen with that value (a constant of the program: LIMIT
 * 500) although /b's target carries it; a short value; a candidate with
 * a body (what it received is not all in its target).
 */
START_TEST(content_no_tokens)
{
	struct rt t;
	const char *unsure = "/w?id=www000 exact -\n"
		"/a?id=aaa111 uncertain ambiguous:parked\n"
		"/b?id=bbb222&n=500 uncertain ambiguous:parked";

	ck_assert_str_eq(content_queue(&t, "SELECT v FROM kv",
		"/a?id=aaa111", "SELECT v FROM kv",
		"/b?id=bbb222&n=500", NULL, "SELECT v FROM kv"), unsure);
	rt_done(&t);
	ck_assert_str_eq(content_queue(&t, "SELECT v FROM kv LIMIT 500",
		"/a?id=aaa111", "SELECT v FROM kv LIMIT 500",
		"/b?id=bbb222&n=500", NULL, "SELECT v FROM kv LIMIT 500"),
		unsure);
	rt_done(&t);
	ck_assert_str_eq(content_queue(&t, "SELECT v FROM kv WHERE k = 'w0'",
		"/a?id=aaa111&s=a1", "SELECT v FROM kv WHERE k = 'a1'",
		"/b?id=bbb222&s=b2", NULL, "SELECT v FROM kv WHERE k = 'b2'"),
		"/w?id=www000 exact -\n"
		"/a?id=aaa111&s=a1 uncertain ambiguous:parked\n"
		"/b?id=bbb222&s=b2 uncertain ambiguous:parked");
	rt_done(&t);
	ck_assert_str_eq(content_queue(&t,
		"SELECT v FROM kv WHERE k = 'www000'",
		"/a?id=aaa111", "SELECT v FROM kv WHERE k = 'aaa111'",
		"/b?id=bbb222&n=500", "12",
		"SELECT v FROM kv WHERE k = 'bbb222'"), unsure);
	rt_done(&t);
}
END_TEST

/* ---- unowned request messages: sent for an answered request or none --- */

/*
 * The JDK's HttpServer with java.net.http.HttpClient at one request at a
 * time: the handler thread (300) reads each request and waits on a
 * condition variable (no record); HttpClient's selector thread (301),
 * designated by the request whose reply it read last (already answered)
 * or by none, sends the call.  Nothing is ever parked.  /w's own query
 * (sent by its handler) shows which position of the shape carries data.
 * Then: /a's query (the selector works for no request) and /b's (the
 * selector works for /a, answered) carry their request's value:
 * resolved by content.  /c's query carries /c's value only when C_OWN;
 * else it is uncertain between /c and /b (the request the rules give it).
 */
static const char *jdk_like(struct rt *t, int c_own)
{
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *hd = front(h, &b);
	static const char *const tg[] = { "/a?id=aaa111", "/b?id=bbb222",
					  "/c?id=ccc333" };
	static const char *const q[] = {
		"SELECT v FROM kv WHERE k = 'aaa111'",
		"SELECT v FROM kv WHERE k = 'bbb222'",
		"SELECT v FROM kv WHERE k = 'ccc333'",
		"SELECT v FROM kv WHERE k = 'zzz999'" };

	gen_thread_create(hd, 11, 1);
	struct gen_thr *sel = gen_thread(gen_thr_proc(hd), 12, 301, 300, 1);
	gen_accept(hd, 50, 7, 3, "10.0.0.1:80", "10.0.0.8:3333");
	http_in(hd, 51, 7, "/w?id=www000");
	sql_out(hd, 52, 9, "SELECT v FROM kv WHERE k = 'www000'");
	sql_in(b, 53, 4, "SELECT v FROM kv WHERE k = 'www000'");
	rep_out(b, 54, 4);
	rep_in(hd, 55, 9);
	http_out(hd, 56, 7);
	for (int i = 0; i < 3; i++) {
		int64_t at = 100 + 20 * i;
		const char *sql = i == 2 && !c_own ? q[3] : q[i];
		gen_accept(hd, at, 5 + i, 3, "10.0.0.1:80", "10.0.0.7:1111");
		http_in(hd, at + 1, 5 + i, tg[i]);
		sql_out(sel, at + 2, 9, sql);
		sql_in(b, at + 3, 4, sql);
		rep_out(b, at + 4, 4);
		gen_ready(sel, at + 5, 9, POLLIN);
		rep_in(sel, at + 6, 9);
		http_out(hd, at + 7, 5 + i);
	}
	rt_init(t);
	rt_write(t, g, NULL);
	ck_assert_int_eq(rt_run(t), RC_EXIT_OK);
	return labels(t);
}

START_TEST(answered_sender_resolved_by_content)
{
	struct rt t;

	ck_assert_str_eq(jdk_like(&t, 1),
		"/w?id=www000 exact -\n"
		"/a?id=aaa111 resolved handoff:content\n"
		"/b?id=bbb222 resolved handoff:content\n"
		"/c?id=ccc333 resolved handoff:content");
	ck_assert_str_eq(qb_owner(&t), "/c?id=ccc333 exact");
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'content_resolved'"), 3);
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM span_candidates"), 0);
	rt_done(&t);
}
END_TEST

START_TEST(answered_sender_uncertain_without_content)
{
	struct rt t;

	ck_assert_str_eq(jdk_like(&t, 0),
		"/w?id=www000 exact -\n"
		"/a?id=aaa111 resolved handoff:content\n"
		"/b?id=bbb222 uncertain handoff:content,ambiguous:answered\n"
		"/c?id=ccc333 uncertain ambiguous:answered");
	ck_assert_str_eq(rt_q(&t, "SELECT group_concat(r.target || ':' || k.chosen || ':' || k.reason, ' ') FROM span_candidates k JOIN requests r USING (request_id)"),
			 "/c?id=ccc333:0:ambiguous:answered /b?id=bbb222:1:ambiguous:answered");
	ck_assert_str_eq(qb_owner(&t), "/b?id=bbb222 uncertain");
	rt_done(&t);
}
END_TEST

/*
 * Not unowned: a traced client (rule 5 roots; its process has no open
 * server span) stays exact, whatever its queries carry; so does a pool
 * whose thread answers /a and goes back to its queue while the other
 * thread, working for /b, sends /b's query with /c open (read by the
 * first thread): the sender's request is open.
 */
START_TEST(client_and_pool_stay_exact)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *b, *w1 = front(h, &b);
	struct gen_thr *cl = gen_proc_main(h, 500, "/usr/bin/psql", 0);

	gen_tcp(cl, 10, 3, BT_CR_CONNECT, "10.0.0.1:50030", "10.0.0.2:5432");
	gen_accept(b, 13, 5, 12, "10.0.0.2:5432", "10.0.0.1:50030");
	gen_accept(b, 15, 6, 12, "10.0.0.2:5432", "10.0.0.1:50020");

	gen_thread_create(w1, 11, 1);
	struct gen_thr *w2 = gen_thread(gen_thr_proc(w1), 12, 301, 300, 1);
	gen_tcp(w2, 14, 11, BT_CR_CONNECT, "10.0.0.1:50020", "10.0.0.2:5432");
	gen_accept(w1, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	http_in(w1, 101, 5, "/a?id=aaa111");
	sql_out(w1, 102, 9, "SELECT v FROM kv WHERE k = 'aaa111'");
	gen_accept(w2, 103, 6, 3, "10.0.0.1:80", "10.0.0.6:2222");
	http_in(w2, 104, 6, "/b?id=bbb222");
	sql_in(b, 105, 4, "SELECT v FROM kv WHERE k = 'aaa111'");
	rep_out(b, 106, 4);
	rep_in(w1, 107, 9);
	http_out(w1, 108, 5);                /* /a answered */
	gen_accept(w1, 109, 7, 3, "10.0.0.1:80", "10.0.0.5:3333");
	http_in(w1, 110, 7, "/c?id=ccc333");  /* /c open, no call */
	sql_out(w2, 111, 11, "SELECT v FROM kv WHERE k = 'bbb222'");
	sql_in(b, 112, 6, "SELECT v FROM kv WHERE k = 'bbb222'");
	rep_out(b, 113, 6);
	rep_in(w2, 114, 11);
	http_out(w2, 115, 6);                /* nothing sent after it */
	sql_out(w1, 116, 9, "SELECT v FROM kv WHERE k = 'ccc333'");
	sql_in(b, 117, 4, "SELECT v FROM kv WHERE k = 'ccc333'");
	rep_out(b, 118, 4);
	rep_in(w1, 119, 9);
	http_out(w1, 120, 7);
	for (int i = 0; i < 3; i++) {
		char sql[64];
		snprintf(sql, sizeof sql, "SELECT v FROM kv WHERE k = 'cli%03d'", i);
		sql_out(cl, 200 + 4 * i, 3, sql);
		sql_in(b, 201 + 4 * i, 5, sql);
		rep_out(b, 202 + 4 * i, 5);
		rep_in(cl, 203 + 4 * i, 3);
	}

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM requests"), 6);
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM requests WHERE certainty <> 'exact'"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM spans WHERE certainty <> 'exact'"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM span_candidates"), 0);
	rt_done(&t);
}
END_TEST

/*
 * An event loop told that the reply on its pooled connection is ready
 * runs a queued callback before it reads it (asyncio): the call made in
 * between hangs under /a's span here, not under the backend's span that
 * sent the reply (tb-aiohttp c=64: a client span under PostgreSQL's).
 */
START_TEST(ready_reply_parent_here)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 300, "/usr/bin/front", 0);
	struct gen_thr *b = backend(h, "10.0.0.1:50010");

	gen_tcp(w, 10, 9, BT_CR_CONNECT, "10.0.0.1:50010", "10.0.0.2:5432");
	gen_tcp(w, 11, 12, BT_CR_CONNECT, "10.0.0.1:50020", "10.0.0.9:8080");
	gen_accept(w, 100, 5, 3, "10.0.0.1:80", "10.0.0.7:1111");
	gen_ready(w, 101, 5, POLLIN);
	http_in(w, 102, 5, "/a");
	sql_out(w, 103, 9, "SELECT a");
	sql_in(b, 104, 4, "SELECT a");
	rep_out(b, 105, 4);
	gen_ready(w, 106, 9, POLLIN);
	gen_msg(w, 107, 12, OUT, REQ, BT_PROTO_HTTP, 70, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/c"), 0);
	rep_in(w, 108, 9);
	gen_ready(w, 109, 12, POLLIN);
	gen_msg(w, 110, 12, IN, REP, BT_PROTO_HTTP, 90, 0, 200, 0, 0);
	http_out(w, 111, 5);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /a st=200 client=10.0.0.7:1111\n"
		"  server http 'GET /a' /a web/300/300 st=200\n"
		"    client postgresql 'SELECT' SELECT a web/300/300 st=NULL\n"
		"      server postgresql 'SELECT' SELECT a web/400/400 st=NULL\n"
		"    client http 'GET /c' /c web/300/300 st=200\n"
		"unattributed:\n");
	rt_done(&t);
}
END_TEST

/* MySQL strings take backslash escapes (PostgreSQL's only in E'...'), and
 * a Redis target's key is a value too. */
START_TEST(values_mysql_redis)
{
	uint64_t v[8];
	static const char my[] = "SELECT v FROM kv WHERE k = 'it\\'s aaa111'";
	static const char want[] = "it's aaa111";

	ck_assert_int_eq(rc_tok_values(BT_PROTO_MYSQL, my, strlen(my), v, 8), 1);
	ck_assert_uint_eq(v[0], bt_value_hash(want, strlen(want)));
	ck_assert_int_eq(rc_tok_values(BT_PROTO_PGSQL, my, strlen(my), v, 8), 2);
	ck_assert_uint_ne(v[0], bt_value_hash(want, strlen(want)));
	ck_assert_int_eq(rc_tok_values(BT_PROTO_REDIS, "GET user:42", 11, v, 8), 1);
	ck_assert_uint_eq(v[0], bt_value_hash("user:42", 7));
}
END_TEST

Suite *recon_certainty_suite(void)
{
	Suite *s = suite_create("recon_certainty");
	TCase *tc = tcase_create("certainty");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, pollout_alone_stays);
	tcase_add_test(tc, pollout_alone_client);
	tcase_add_test(tc, alone_timeout_stays);
	tcase_add_test(tc, hidden_queue_fires);
	tcase_add_test(tc, readahead_fires);
	tcase_add_test(tc, thread_handoff_fires);
	tcase_add_test(tc, read_ahead_waits_for_the_record);
	tcase_add_test(tc, connecting_and_body_do_not_fire);
	tcase_add_test(tc, poller_and_workers_do_not_fire);
	tcase_add_test(tc, pipelined_after_calls_does_not_fire);
	tcase_add_test(tc, pipelined_readahead_fires);
	tcase_add_test(tc, readahead_other_connection_after_calls_fires);
	tcase_add_test(tc, connect_taken_by_another_fires);
	tcase_add_test(tc, want_given_up_parks);
	tcase_add_test(tc, waiting_reader_parks);
	tcase_add_test(tc, content_one_shares);
	tcase_add_test(tc, content_fragment_shares);
	tcase_add_test(tc, content_two_share);
	tcase_add_test(tc, content_common_does_not_decide);
	tcase_add_test(tc, content_no_tokens);
	tcase_add_test(tc, answered_sender_resolved_by_content);
	tcase_add_test(tc, answered_sender_uncertain_without_content);
	tcase_add_test(tc, client_and_pool_stay_exact);
	tcase_add_test(tc, batched_fires);
	tcase_add_test(tc, batched_resolved_by_content);
	tcase_add_test(tc, batched_first_of_shape_resolved);
	tcase_add_test(tc, batched_constant_does_not_decide);
	tcase_add_test(tc, batched_resolved_by_params);
	tcase_add_test(tc, unlogged_send_uncertain);
	tcase_add_test(tc, values_mysql_redis);
	tcase_add_test(tc, batched_file_fires);
	tcase_add_test(tc, ready_reply_parent_here);
	tcase_add_test(tc, closed_while_read_waits);
	tcase_add_test(tc, inherited_designation_fires);
	tcase_add_test(tc, grpc_body_values_decide);
	tcase_add_test(tc, grpc_unary_excludes_unstarted);
	tcase_add_test(tc, grpc_proto_reader);
	tcase_add_test(tc, pending_peer_uncertain);
	suite_add_tcase(s, tc);
	return s;
}
