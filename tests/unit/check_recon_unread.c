/*
 * check_recon_unread.c - saying what cannot be read: the reason on each
 * channel (tls-in-program from the shim's PROTO how 5, unknown-protocol,
 * lost-sync), their count by program and port in the summary, and the
 * warnings summed up by kind (count, one example, expected or costs
 * paths) while each one stays in the warnings table.
 */
#include "config.h"

#include <string.h>

#include "check_recon.h"
#include "btrace/proto.h"

#define IN   BT_DIR_IN
#define OUT  BT_DIR_OUT
#define REQ  BT_MK_REQUEST
#define REP  BT_MK_REPLY

static void proto(struct gen_thr *w, int64_t at, int fd, int id, int how,
		  const char *why)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_PROTO;
	ev.fd = fd;
	ev.proto = (uint8_t)id;
	ev.flags = (uint32_t)how;
	ev.str = why;
	ev.str_len = (uint32_t)strlen(why);
	gen_ev(w, at, &ev);
}

static void lost_sync(struct gen_thr *w, int64_t at, int fd, int dir)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_LOST_SYNC;
	ev.fd = fd;
	ev.dir = (uint8_t)dir;
	ev.proto = BT_PROTO_HTTP;
	gen_ev(w, at, &ev);
}

/* An accepted TLS connection on :443 (the program encrypts). */
static void tls_conn(struct gen_thr *w, int64_t t0, int k)
{
	char client[32];
	snprintf(client, sizeof client, "10.0.0.9:%d", 41000 + k);
	gen_tcp(w, t0, 5, BT_CR_ACCEPT, "10.0.0.1:443", client);
	proto(w, t0 + 1, 5, BT_PROTO_NONE, BT_PH_TLS,
	      "a TLS record: encrypted inside the program");
	gen_data(w, t0 + 2, 5, IN, 517);
	gen_data(w, t0 + 5, 5, OUT, 1400);
	gen_close(w, t0 + 9, 5);
}

START_TEST(channel_reasons)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/bin/node", 0);

	tls_conn(w, 100, 1);
	tls_conn(w, 200, 2);
	/* A client channel no processor recognised. */
	gen_tcp(w, 300, 6, BT_CR_CONNECT, "10.0.0.1:50000", "10.0.0.2:6379");
	gen_data(w, 301, 6, OUT, 14);
	proto(w, 301, 6, BT_PROTO_NONE, BT_PH_NONE,
	      "no processor recognised the first bytes");
	gen_data(w, 305, 6, IN, 5);
	gen_close(w, 309, 6);
	/* HTTP read, then lost. */
	gen_tcp(w, 400, 7, BT_CR_ACCEPT, "10.0.0.1:80", "10.0.0.9:42001");
	proto(w, 401, 7, BT_PROTO_HTTP, BT_PH_SNIFF, "sniffed");
	gen_msg(w, 410, 7, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/a"), 0);
	gen_msg(w, 450, 7, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);
	lost_sync(w, 460, 7, IN);
	gen_data(w, 461, 7, IN, 30);
	gen_close(w, 470, 7);
	/* HTTP read to the end. */
	gen_tcp(w, 500, 8, BT_CR_ACCEPT, "10.0.0.1:80", "10.0.0.9:42002");
	proto(w, 501, 8, BT_PROTO_HTTP, BT_PH_SNIFF, "sniffed");
	gen_msg(w, 510, 8, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/b"), 0);
	gen_msg(w, 550, 8, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);
	gen_close(w, 560, 8);
	/* A pipe never framed (stdio): not counted as a problem. */
	gen_pipe(w, 600, 10, 11, 777);
	gen_data(w, 601, 11, OUT, 20);
	gen_data(w, 602, 10, IN, 20);
	gen_close(w, 603, 10);
	gen_close(w, 604, 11);
	/* A channel nothing moved on. */
	gen_tcp(w, 700, 12, BT_CR_CONNECT, "10.0.0.1:50001", "10.0.0.3:5432");
	gen_close(w, 701, 12);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM channels WHERE unreadable_reason = 'tls-in-program' AND readable = 0 AND local = '10.0.0.1:443'"), 2);
	ck_assert_str_eq(rt_q(&t, "SELECT unreadable_reason FROM channels WHERE remote = '10.0.0.2:6379'"),
			 "unknown-protocol");
	ck_assert_str_eq(rt_q(&t, "SELECT unreadable_reason FROM channels WHERE remote = '10.0.0.9:42001'"),
			 "lost-sync");
	ck_assert_str_eq(rt_q(&t, "SELECT readable || ' ' || IFNULL(unreadable_reason, '-') FROM channels WHERE remote = '10.0.0.9:42002'"),
			 "1 -");
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM channels WHERE kind = 'pipe' AND readable = 0 AND unreadable_reason = 'no-processor'"), 2);
	ck_assert_str_eq(rt_q(&t, "SELECT IFNULL(readable, 'NULL') || ' ' || IFNULL(unreadable_reason, '-') FROM channels WHERE remote = '10.0.0.3:5432'"),
			 "NULL -");
	/* The readable request is still traced. */
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM requests WHERE target = '/b'"), 1);
	/* Summary: by program and port; pipes and rule-none not counted. */
	ck_assert_uint_eq(t.sum.unreadable, 4);
	const char *err = rt_stderr(&t);
	ck_assert_msg(strstr(err, "bp-reconstruct: 2 channels of node:443 encrypted inside the program: not traced\n"),
		      "%s", err);
	ck_assert_msg(strstr(err, "bp-reconstruct: 1 channel of node:6379 in a protocol no processor knows: not traced\n"),
		      "%s", err);
	ck_assert_msg(strstr(err, "bp-reconstruct: 1 channel of node:80 lost by their processor (lost-sync)"),
		      "%s", err);
	ck_assert_msg(strstr(err, "look at: 4 channels not read"), "%s", err);
	rt_done(&t);
}
END_TEST

/* DATA on an fd no CHAN announced (start-up): expected, harmless. */
static void stray_data(struct gen_thr *w, int64_t at, int fd)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_DATA;
	ev.fd = fd;
	ev.dir = BT_DIR_OUT;
	ev.len = 10;
	gen_ev(w, at, &ev);
}

static void drop(struct gen_thr *w, int64_t at, uint64_t n)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_DROP;
	ev.len = n;
	ev.flags = BT_DR_RING_FULL;
	gen_ev(w, at, &ev);
}

START_TEST(warnings_by_kind)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/sbin/nginx", 0);

	/* Said once a run (then counted in stats). */
	for (int i = 0; i < 3; i++)
		stray_data(w, 100 + 10 * i, 20 + i);
	drop(w, 200, 5);
	drop(w, 210, 7);
	drop(w, 220, 1);
	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), 0);
	/* Every warning is a row. */
	ck_assert_msg(rt_qi(&t, "SELECT COUNT(*) FROM warnings") == 4, "%s",
		      rt_stderr(&t));
	ck_assert_int_eq(t.sum.warnings, 4);
	ck_assert_int_eq(t.sum.costly_warnings, 3);
	const char *err = rt_stderr(&t);
	ck_assert_msg(strstr(err, "bp-reconstruct: 4 warnings of 2 kinds"), "%s", err);
	const char *costs = strstr(err, "     3 x COSTS PATHS (the tracer lost events), e.g.: ");
	const char *fine = strstr(err, "     1 x expected, harmless (fds opened before the tracer started, or whose opening is in no log;");
	ck_assert_msg(costs && fine && costs < fine, "%s", err);
	/* One example each: the first. */
	ck_assert_msg(strstr(costs, "could not record 5 events") &&
		      !strstr(costs, "could not record 7 events"), "%s", err);
	ck_assert_msg(strstr(err, "; look at: 3 warnings that cost paths (above), the lost events\n"),
		      "%s", err);
	rt_done(&t);
}
END_TEST

/* Only expected warnings: the summary says there is nothing to look at. */
START_TEST(only_expected)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/bin/python3", 0);

	for (int i = 0; i < 4; i++)
		stray_data(w, 100 + 10 * i, 3 + i);
	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), 0);
	ck_assert_int_eq(t.sum.costly_warnings, 0);
	const char *err = rt_stderr(&t);
	ck_assert_msg(strstr(err, "bp-reconstruct: 1 warning of 1 kind (each"), "%s", err);
	ck_assert_msg(strstr(err, "; nothing to look at: the warnings are expected\n"),
		      "%s", err);
	rt_done(&t);
}
END_TEST

/* bp-logd's note naming a process (BT_LN_RAW_IO, logd/census.c). */
static void raw_io(struct gen_thr *w, int64_t at, uint32_t pid,
		   uint64_t ring, const char *exe, int64_t socks,
		   const char *rest)
{
	char text[512];
	struct bt_event ev;

	snprintf(text, sizeof text, "ring=%llx exe=%s comm=goserver %s",
		 (unsigned long long)ring, exe, rest);
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_LOGD;
	ev.pid = pid;
	ev.flags = BT_LN_RAW_IO;
	ev.result = socks;
	ev.str = text;
	ev.str_len = (uint32_t)strlen(text);
	gen_ev(w, at, &ev);
}

/*
 * A program named as doing its network I/O past libc: a row of
 * untraced_programs joined to its process, one line per program in the
 * summary (two processes of one executable in one line), counted in the
 * last line; a note repeated (a log read twice) counts once.
 */
START_TEST(untraced_programs)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *a = gen_proc_main(h, 300, "/srv/goserver", 0);
	struct gen_thr *b = gen_proc_main(h, 301, "/srv/goserver", 0);
	/* gen.c's ring ids: process index << 16 | pid */
	uint64_t ra = 0x5a00000000000000ull | 0ull << 16 | 300;
	uint64_t rb = 0x5a00000000000000ull | 1ull << 16 | 301;

	raw_io(a, 2000000, 300, ra, "/srv/goserver", 2,
	       "tcp_listen=1 tcp=1 udp=0 unix_listen=0: tcp 127.0.0.1:8080 listening, tcp 127.0.0.1:8080->127.0.0.1:40000");
	raw_io(a, 2000001, 300, ra, "/srv/goserver", 2,
	       "tcp_listen=1 tcp=1 udp=0 unix_listen=0: tcp 127.0.0.1:8080 listening, tcp 127.0.0.1:8080->127.0.0.1:40000");
	raw_io(b, 2000002, 301, rb, "/srv/goserver", 1,
	       "tcp_listen=0 tcp=0 udp=1 unix_listen=0: udp 127.0.0.1:9999");
	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM untraced_programs"), 2);
	ck_assert_str_eq(rt_q(&t, "SELECT u.pid || ' ' || u.comm || ' ' || u.sockets || ' ' || u.tcp_listen || ' ' || u.tcp || ' ' || u.udp || ' ' || p.exe FROM untraced_programs u JOIN processes p USING (process_id) WHERE u.pid = 300"),
			 "300 goserver 2 1 1 0 /srv/goserver");
	ck_assert_str_eq(rt_q(&t, "SELECT examples FROM untraced_programs WHERE pid = 301"),
			 "udp 127.0.0.1:9999");
	ck_assert_uint_eq(t.sum.untraced, 2);
	const char *err = rt_stderr(&t);
	ck_assert_msg(strstr(err, "bp-reconstruct: goserver (/srv/goserver, pids 300, 301) does its network I/O past libc (raw system calls: Go, io_uring, ...): 3 sockets the tracer never saw, e.g. tcp 127.0.0.1:8080 listening, tcp 127.0.0.1:8080->127.0.0.1:40000: not traced\n"),
		      "%s", err);
	ck_assert_msg(strstr(err, "look at: 2 processes not traced (network I/O past libc"), "%s", err);
	rt_done(&t);
}
END_TEST

Suite *recon_unread_suite(void)
{
	Suite *s = suite_create("recon_unread");
	TCase *tc = tcase_create("unread");
	tcase_add_test(tc, channel_reasons);
	tcase_add_test(tc, warnings_by_kind);
	tcase_add_test(tc, only_expected);
	tcase_add_test(tc, untraced_programs);
	suite_add_tcase(s, tc);
	return s;
}
