/*
 * check_recon_loss.c - damaged and incomplete logs: a truncated segment,
 * blocks that never reached the disk, a send whose record was lost.  The
 * reconstructor must say what is missing (file and offset) and use all
 * the rest.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "btrace/proto.h"
#include "btrace/segment.h"
#include "check_recon.h"

#ifndef POLLIN
#define POLLIN 1
#endif

#define IN   BT_DIR_IN
#define OUT  BT_DIR_OUT
#define REQ  BT_MK_REQUEST
#define REP  BT_MK_REPLY

static void http_request(struct gen_thr *w, int64_t t0, int k)
{
	char target[32], client[32];
	snprintf(target, sizeof target, "/r%d", k);
	snprintf(client, sizeof client, "10.0.0.9:%d", 40000 + k);
	gen_cut(w);
	gen_tcp(w, t0, 5, BT_CR_ACCEPT, "10.0.0.1:80", client);
	gen_msg(w, t0 + 10, 5, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, target), 0);
	gen_msg(w, t0 + 50, 5, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);
	gen_close(w, t0 + 60, 5);
}

/* Name of the last segment of DIR (the one written last). */
static void last_segment(const char *dir, char *out, size_t len)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	ck_assert_int_gt(n, 2);
	snprintf(out, len, "%s/%s", dir, names[n - 1]->d_name);
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* File offsets of the blocks of segment PATH. */
static int block_offsets(const char *path, uint64_t *off, int max)
{
	const char *why;
	struct bt_seg_reader *r = bt_seg_open(path, NULL, NULL, &why);
	struct bt_blk_header h;
	const uint8_t *p;
	int n = 0;

	ck_assert_ptr_nonnull(r);
	while (n < max && bt_seg_next(r, &h, &p, &off[n]) == 1)
		n++;
	bt_seg_close(r);
	return n;
}

START_TEST(truncated_segment)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/sbin/apache2", 0);
	struct gen_write_opts o = { .block_bytes = 4096, .blocks_per_seg = 2 };
	char seg[1024], dir[400];
	uint64_t off[8];

	for (int k = 1; k <= 5; k++)
		http_request(w, 100 * k, k);
	rt_init(&t);
	/* blocks: start, r1 | r2, r3 | r4, r5 */
	ck_assert_int_eq(rt_write(&t, g, &o), 3);
	snprintf(dir, sizeof dir, "%s/web", t.logs);
	last_segment(dir, seg, sizeof seg);
	ck_assert_int_eq(block_offsets(seg, off, 8), 2);
	/* A crash tore the last block. */
	ck_assert_int_eq(truncate(seg, (off_t)(off[1] + 30)), 0);

	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /r1 st=200 client=10.0.0.9:40001\n"
		"  server http 'GET /r1' /r1 web/100/100 st=200\n"
		"R http GET /r2 st=200 client=10.0.0.9:40002\n"
		"  server http 'GET /r2' /r2 web/100/100 st=200\n"
		"R http GET /r3 st=200 client=10.0.0.9:40003\n"
		"  server http 'GET /r3' /r3 web/100/100 st=200\n"
		"R http GET /r4 st=200 client=10.0.0.9:40004\n"
		"  server http 'GET /r4' /r4 web/100/100 st=200\n"
		"unattributed:\n");
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM warnings"), 1);
	ck_assert_str_eq(rt_q(&t, "SELECT file FROM warnings"), seg);
	ck_assert_int_eq(rt_qi(&t, "SELECT offset FROM warnings"), (int64_t)off[1]);
	ck_assert_str_eq(rt_q(&t, "SELECT text FROM warnings"),
			 "truncated block header (torn tail); the blocks before and after it are used");
	/* One line on stderr with file and offset. */
	char line[1200];
	snprintf(line, sizeof line, "warning: %s: offset %llu: truncated block header",
		 seg, (unsigned long long)off[1]);
	ck_assert_msg(strstr(rt_stderr(&t), line), "stderr lacks '%s': %s", line,
		      rt_stderr(&t));
	rt_done(&t);
}
END_TEST

/* ---- a block of one stream never reached the disk ------------------------ */

/* Leave out block CTX[1] of pid CTX[0]'s stream (a gap). */
static int drop_block(void *ctx, const char *host, uint32_t pid,
		      unsigned slot, unsigned blk)
{
	const uint32_t *which = ctx;
	(void)host; (void)slot;
	return !(pid == which[0] && blk == which[1]);
}

/* What front_db_request writes in place of, or after, the request's
 * MSG: a record as no writer of this version makes it (gen_raw). */
enum { RAW_NONE,
       RAW_MALFORMED,   /* the request's MSG with its fields missing (its
			   bytes were read all the same) */
       RAW_NEWER };     /* after the request, a record of type 200 */

/* Request /rK of the front W (pid 100) at 100*K us: accepted on fd 5, a
 * query to the database D on fd 9 (its fd 4), the answer.  The front's
 * records begin a block; with INPUT_CUT its query begins another (the
 * request's input alone in the first); with FILE it opens a file after
 * the query's reply; RAW: above. */
static void front_db_request(struct gen_thr *w, struct gen_thr *d, int k,
			     int input_cut, int file, int raw)
{
	static const uint8_t what[] = { 1, 2, 3 };
	int64_t t0 = 100 * k;
	char target[16], client[32], sql[32];
	snprintf(target, sizeof target, "/r%d", k);
	snprintf(client, sizeof client, "10.0.0.9:%d", 40000 + k);
	snprintf(sql, sizeof sql, "SELECT %d", k);
	gen_cut(w);
	gen_tcp(w, t0, 5, BT_CR_ACCEPT, "10.0.0.1:80", client);
	if (raw == RAW_MALFORMED) {
		gen_raw(w, t0 + 10, BT_EV_MSG, NULL, 0);
		gen_skip(w, 5, IN, 60);
	} else {
		gen_msg(w, t0 + 10, 5, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
			GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, target), 0);
	}
	if (raw == RAW_NEWER)
		gen_raw(w, t0 + 15, 200, what, sizeof what);
	if (input_cut)
		gen_cut(w);
	gen_msg(w, t0 + 20, 9, OUT, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, sql), 0);
	gen_msg(d, t0 + 25, 4, IN, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, sql), 0);
	gen_msg(d, t0 + 30, 4, OUT, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_msg(w, t0 + 35, 9, IN, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	/* a file opened after the reply: the request's, were the reply's
	 * channel known and the request's input seen */
	if (file)
		gen_open(w, t0 + 40, 7, "/srv/page.html");
	gen_msg(w, t0 + 50, 5, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);
	gen_close(w, t0 + 60, 5);
}

START_TEST(lost_block)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/sbin/nginx", 0);
	struct gen_thr *d = gen_proc_main(h, 200, "/usr/lib/postgresql/15/bin/postgres", 0);
	struct gen_write_opts o = { .block_bytes = 4096, .blocks_per_seg = 4,
				    .keep = drop_block,
				    .keep_ctx = (uint32_t[]){ 100, 3 } };

	gen_tcp(w, 10, 9, BT_CR_CONNECT, "10.0.0.1:50000", "10.0.0.2:5432");
	gen_tcp(d, 11, 4, BT_CR_ACCEPT, "10.0.0.2:5432", "10.0.0.1:50000");
	/* web blocks: 0 start, 1 r1, 2 r2, 3 r3 (lost), 4 r4 ... */
	for (int k = 1; k <= 5; k++)
		front_db_request(w, d, k, 0, 0, RAW_NONE);
	rt_init(&t);
	rt_write(&t, g, &o);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /r1 st=200 client=10.0.0.9:40001\n"
		"  server http 'GET /r1' /r1 web/100/100 st=200\n"
		"    client postgresql 'SELECT' SELECT 1 web/100/100 st=NULL\n"
		"      server postgresql 'SELECT' SELECT 1 web/200/200 st=NULL\n"
		"R http GET /r2 st=200 client=10.0.0.9:40002\n"
		"  server http 'GET /r2' /r2 web/100/100 st=200\n"
		"    client postgresql 'SELECT' SELECT 2 web/100/100 st=NULL\n"
		"      server postgresql 'SELECT' SELECT 2 web/200/200 st=NULL\n"
		/* The query whose send was lost: a request of its own,
		 * never guessed into /r3, and uncertain: its sender is
		 * traced, so it is not an untraced client's. */
		"R postgresql NULL SELECT 3 st=NULL client=10.0.0.1:50000 [uncertain unlogged-send]\n"
		"  server postgresql 'SELECT' SELECT 3 web/200/200 st=NULL [uncertain unlogged-send]\n"
		"R http GET /r4 st=200 client=10.0.0.9:40004\n"
		"  server http 'GET /r4' /r4 web/100/100 st=200\n"
		"    client postgresql 'SELECT' SELECT 4 web/100/100 st=NULL\n"
		"      server postgresql 'SELECT' SELECT 4 web/200/200 st=NULL\n"
		"R http GET /r5 st=200 client=10.0.0.9:40005\n"
		"  server http 'GET /r5' /r5 web/100/100 st=200\n"
		"    client postgresql 'SELECT' SELECT 5 web/100/100 st=NULL\n"
		"      server postgresql 'SELECT' SELECT 5 web/200/200 st=NULL\n"
		"unattributed:\n");
	/* Two warnings: the gap in web's stream, and the query's receive
	 * that waited for the send lost in it (later ones pair again). */
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM warnings"), 2);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM warnings WHERE text LIKE '%%waited for a send that was never logged%%'"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'gaps'"), 1);
	ck_assert_int_gt(rt_qi(&t, "SELECT value FROM stats WHERE key = 'lost_bytes'"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'unpaired_receives'"), 1);
#define GAPW "SELECT %s FROM warnings WHERE text LIKE '%%bytes missing before this block%%'"
	ck_assert_msg(strstr(rt_q(&t, GAPW, "text"), "host web pid 100 ring ") != NULL,
		      "%s", rt_q(&t, GAPW, "text"));
	/* The warning names the file and offset of the block after the gap. */
	char path[512];
	snprintf(path, sizeof path, "%s", rt_q(&t, GAPW, "file"));
	uint64_t off = (uint64_t)rt_qi(&t, GAPW, "offset");
#undef GAPW
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	uint8_t hb[BT_BLK_HDR_SIZE];
	ck_assert_int_eq(pread(fd, hb, sizeof hb, (off_t)off), (ssize_t)sizeof hb);
	close(fd);
	struct bt_blk_header bh;
	uint32_t pcrc;
	ck_assert_int_eq(bt_blk_header_decode(hb, &bh, &pcrc), 0);
	ck_assert_uint_eq(bh.pid, 100);
	ck_assert_int_eq(rt_badly_nested(&t), 0);
	rt_done(&t);
}
END_TEST

/* ---- the block with a channel's opening never reached the disk ----------- */

/* The front's connection to the database was opened in a block that is in
 * no log (lost, or in a segment removed before the logs were read): its
 * queries go out on a descriptor no channel record announced.  The
 * requests that sent them are not known to be whole, so none may be
 * labelled exact (they were, with their server span only); the queries
 * arrive as requests of their own, uncertain; and the work a read on such
 * a descriptor begins is given to no request, not to the one before. */
START_TEST(lost_channel_opening)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/sbin/nginx", 0);
	struct gen_thr *d = gen_proc_main(h, 200, "/usr/lib/postgresql/15/bin/postgres", 0);
	struct gen_write_opts o = { .block_bytes = 4096, .blocks_per_seg = 4,
				    .keep = drop_block,
				    .keep_ctx = (uint32_t[]){ 100, 1 } };

	/* web blocks: 0 start, 1 the connection (lost), 2 r1, 3 r2, ... */
	gen_cut(w);
	gen_tcp(w, 10, 9, BT_CR_CONNECT, "10.0.0.1:50000", "10.0.0.2:5432");
	gen_tcp(d, 11, 4, BT_CR_ACCEPT, "10.0.0.2:5432", "10.0.0.1:50000");
	for (int k = 1; k <= 3; k++)
		front_db_request(w, d, k, 0, 1, RAW_NONE);
	rt_init(&t);
	rt_write(&t, g, &o);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /r1 st=200 client=10.0.0.9:40001 [uncertain unknown-fd]\n"
		"  server http 'GET /r1' /r1 web/100/100 st=200 [uncertain unknown-fd]\n"
		/* the database's client looks untraced, but an address of
		 * its host is in logs with a gap: not exact either */
		"R postgresql NULL SELECT 1 st=NULL client=10.0.0.1:50000 [uncertain peer-gap]\n"
		"  server postgresql 'SELECT' SELECT 1 web/200/200 st=NULL [uncertain peer-gap]\n"
		"R http GET /r2 st=200 client=10.0.0.9:40002 [uncertain unknown-fd]\n"
		"  server http 'GET /r2' /r2 web/100/100 st=200 [uncertain unknown-fd]\n"
		"R postgresql NULL SELECT 2 st=NULL client=10.0.0.1:50000 [uncertain peer-gap]\n"
		"  server postgresql 'SELECT' SELECT 2 web/200/200 st=NULL [uncertain peer-gap]\n"
		"R http GET /r3 st=200 client=10.0.0.9:40003 [uncertain unknown-fd]\n"
		"  server http 'GET /r3' /r3 web/100/100 st=200 [uncertain unknown-fd]\n"
		"R postgresql NULL SELECT 3 st=NULL client=10.0.0.1:50000 [uncertain peer-gap]\n"
		"  server postgresql 'SELECT' SELECT 3 web/200/200 st=NULL [uncertain peer-gap]\n"
		"unattributed:\n");
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'unknown_fd_records'"), 6);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'unknown_fd_spans'"), 3);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'peer_gap'"), 3);
	/* the file each opened after the reply came on fd 9: no request's */
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM files WHERE request_id IS NULL"), 3);
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM fragments WHERE trigger = 'message'"
				   " AND request_id IS NULL AND fd = 9"), 3);
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM warnings WHERE text LIKE"
				   " '%%a fragment working for a request used fd 9, which no channel record announced%%'"), 1);
	rt_done(&t);
}
END_TEST

/* ---- a block with a request's input never reached the disk --------------- */

/* The block with /r3's accept and request is in no log; the next one,
 * with its query, its reply and its close, is.  The thread's work after
 * the gap is for a request nobody saw: it must not be given to /r2, the
 * request the thread worked for before the gap. */
START_TEST(lost_input_block)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/sbin/nginx", 0);
	struct gen_thr *d = gen_proc_main(h, 200, "/usr/lib/postgresql/15/bin/postgres", 0);
	struct gen_write_opts o = { .block_bytes = 4096, .blocks_per_seg = 4,
				    .keep = drop_block,
				    .keep_ctx = (uint32_t[]){ 100, 5 } };

	gen_tcp(w, 10, 9, BT_CR_CONNECT, "10.0.0.1:50000", "10.0.0.2:5432");
	gen_tcp(d, 11, 4, BT_CR_ACCEPT, "10.0.0.2:5432", "10.0.0.1:50000");
	/* web blocks: 0 start, 2k-1 /rk's input, 2k the rest */
	for (int k = 1; k <= 4; k++)
		front_db_request(w, d, k, 1, 1, RAW_NONE);
	rt_init(&t);
	rt_write(&t, g, &o);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /r1 st=200 client=10.0.0.9:40001\n"
		"  server http 'GET /r1' /r1 web/100/100 st=200\n"
		"    client postgresql 'SELECT' SELECT 1 web/100/100 st=NULL\n"
		"      server postgresql 'SELECT' SELECT 1 web/200/200 st=NULL\n"
		"R http GET /r2 st=200 client=10.0.0.9:40002\n"
		"  server http 'GET /r2' /r2 web/100/100 st=200\n"
		"    client postgresql 'SELECT' SELECT 2 web/100/100 st=NULL\n"
		"      server postgresql 'SELECT' SELECT 2 web/200/200 st=NULL\n"
		/* /r3's query: work after the gap, for a request nobody
		 * saw, so a request of its own and not exact (it was /r2's,
		 * exact, before) */
		"R postgresql NULL SELECT 3 st=NULL client=/usr/sbin/nginx[100]@web [uncertain lost-events]\n"
		"  client postgresql 'SELECT' SELECT 3 web/100/100 st=NULL [uncertain lost-events]\n"
		"    server postgresql 'SELECT' SELECT 3 web/200/200 st=NULL [uncertain lost-events]\n"
		"R http GET /r4 st=200 client=10.0.0.9:40004\n"
		"  server http 'GET /r4' /r4 web/100/100 st=200\n"
		"    client postgresql 'SELECT' SELECT 4 web/100/100 st=NULL\n"
		"      server postgresql 'SELECT' SELECT 4 web/200/200 st=NULL\n"
		"unattributed:\n");
	/* /r2 keeps its own file only */
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM files f JOIN requests r"
				   " ON r.request_id = f.request_id WHERE r.target = '/r2'"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM fragments WHERE trigger = 'gap'"
				   " AND request_id IS NULL"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'gap_fragments'"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'lost_input_roots'"), 1);
	ck_assert_int_eq(rt_badly_nested(&t), 0);
	rt_done(&t);
}
END_TEST

/* ---- a connect the tracer could not record ------------------------------ */

static void raw_msg(struct gen_thr *w, int64_t at, int fd, int dir, int kind,
		    uint64_t off, uint64_t len)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_MSG;
	ev.fd = fd;
	ev.dir = (uint8_t)dir;
	ev.kind = (uint8_t)kind;
	ev.proto = BT_PROTO_PGSQL;
	ev.off = off;
	ev.len = len;
	gen_ev(w, at, &ev);
}

/* Two requests of the front W (pid 100) whose connect to the database D
 * (pid 200, its accept on fd 4) left no channel record: each sends a
 * query on fd 9, which no record announced, as the shim writes them. */
static void unannounced_queries(struct gen_thr *w, struct gen_thr *d)
{
	gen_tcp(d, 11, 4, BT_CR_ACCEPT, "10.0.0.2:5432", "10.0.0.1:50000");
	for (int k = 1; k <= 2; k++) {
		int64_t t0 = 100 * k;
		char target[16], client[32], sql[32];
		snprintf(target, sizeof target, "/r%d", k);
		snprintf(client, sizeof client, "10.0.0.9:%d", 40000 + k);
		snprintf(sql, sizeof sql, "SELECT %d", k);
		gen_tcp(w, t0, 5, BT_CR_ACCEPT, "10.0.0.1:80", client);
		gen_msg(w, t0 + 10, 5, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
			GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, target), 0);
		/* fd 9 has no channel in the script: its records as the
		 * shim writes them, offsets and all */
		raw_msg(w, t0 + 20, 9, OUT, REQ, 20 * (uint64_t)(k - 1), 20);
		gen_msg(d, t0 + 25, 4, IN, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
			GEN_A(BT_AK_SQL, sql), 0);
		gen_msg(d, t0 + 30, 4, OUT, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
		raw_msg(w, t0 + 35, 9, IN, REP, 40 * (uint64_t)(k - 1), 40);
		gen_msg(w, t0 + 50, 5, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);
		gen_close(w, t0 + 60, 5);
	}
}

/* Their paths: neither side's requests exact. */
static const char unannounced_paths[] =
	"R http GET /r1 st=200 client=10.0.0.9:40001 [uncertain unknown-fd]\n"
	"  server http 'GET /r1' /r1 web/100/100 st=200 [uncertain unknown-fd]\n"
	"R postgresql NULL SELECT 1 st=NULL client=10.0.0.1:50000 [uncertain peer-gap]\n"
	"  server postgresql 'SELECT' SELECT 1 web/200/200 st=NULL [uncertain peer-gap]\n"
	"R http GET /r2 st=200 client=10.0.0.9:40002 [uncertain unknown-fd]\n"
	"  server http 'GET /r2' /r2 web/100/100 st=200 [uncertain unknown-fd]\n"
	"R postgresql NULL SELECT 2 st=NULL client=10.0.0.1:50000 [uncertain peer-gap]\n"
	"  server postgresql 'SELECT' SELECT 2 web/200/200 st=NULL [uncertain peer-gap]\n"
	"unattributed:\n";

/* The front's connect record was lost to a full ring (a DROP): its
 * queries go out on an fd no record announced, and the database's
 * connection from it looks like an untraced client's.  Neither side's
 * requests may be exact. */
START_TEST(dropped_connect)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/sbin/nginx", 0);
	struct gen_thr *d = gen_proc_main(h, 200, "/usr/lib/postgresql/15/bin/postgres", 0);
	struct bt_event drop = { .type = BT_EV_DROP, .len = 1,
				 .flags = BT_DR_RING_FULL };

	gen_ev(w, 10, &drop);
	unannounced_queries(w, d);
	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t), unannounced_paths);
	rt_done(&t);
}
END_TEST

/* The front works for no request (a wait timed out) when the tracer
 * loses events to a full ring: they may have been the input of a request
 * whose query follows.  That query is a request of its own, as rule 5
 * makes it, but not an exact one. */
START_TEST(dropped_input_for_no_request)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/sbin/nginx", 0);
	struct gen_thr *d = gen_proc_main(h, 200, "/usr/lib/postgresql/15/bin/postgres", 0);
	struct bt_event drop = { .type = BT_EV_DROP, .len = 2,
				 .flags = BT_DR_RING_FULL };

	gen_tcp(w, 10, 9, BT_CR_CONNECT, "10.0.0.1:50000", "10.0.0.2:5432");
	gen_tcp(d, 11, 4, BT_CR_ACCEPT, "10.0.0.2:5432", "10.0.0.1:50000");
	front_db_request(w, d, 1, 0, 0, RAW_NONE);
	gen_ready(w, 180, -1, 0);             /* a timeout: no request */
	gen_ev(w, 190, &drop);
	gen_msg(w, 220, 9, OUT, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 2"), 0);
	gen_msg(d, 225, 4, IN, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 2"), 0);
	gen_msg(d, 230, 4, OUT, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_msg(w, 235, 9, IN, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	/* a timeout again, then a query with nothing lost before it */
	gen_ready(w, 280, -1, 0);
	gen_msg(w, 320, 9, OUT, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 3"), 0);
	gen_msg(d, 325, 4, IN, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 3"), 0);
	gen_msg(d, 330, 4, OUT, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_msg(w, 335, 9, IN, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /r1 st=200 client=10.0.0.9:40001\n"
		"  server http 'GET /r1' /r1 web/100/100 st=200\n"
		"    client postgresql 'SELECT' SELECT 1 web/100/100 st=NULL\n"
		"      server postgresql 'SELECT' SELECT 1 web/200/200 st=NULL\n"
		"R postgresql NULL SELECT 2 st=NULL client=/usr/sbin/nginx[100]@web [uncertain lost-events]\n"
		"  client postgresql 'SELECT' SELECT 2 web/100/100 st=NULL [uncertain lost-events]\n"
		"    server postgresql 'SELECT' SELECT 2 web/200/200 st=NULL [uncertain lost-events]\n"
		"R postgresql NULL SELECT 3 st=NULL client=/usr/sbin/nginx[100]@web\n"
		"  client postgresql 'SELECT' SELECT 3 web/100/100 st=NULL\n"
		"    server postgresql 'SELECT' SELECT 3 web/200/200 st=NULL\n"
		"unattributed:\n");
	rt_done(&t);
}
END_TEST

/* ---- a record that does not decode, inside a good block ---------------- */

/* /r3's request is a record the reader cannot decode (its block is whole
 * and its checksum good: a writer's defect, or damage before the block
 * was sealed).  The thread's work after it is for a request nobody saw,
 * as after a lost block: /r3's query must not be given to /r2, the
 * request the thread worked for before. */
START_TEST(malformed_input_record)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/sbin/nginx", 0);
	struct gen_thr *d = gen_proc_main(h, 200, "/usr/lib/postgresql/15/bin/postgres", 0);

	gen_tcp(w, 10, 9, BT_CR_CONNECT, "10.0.0.1:50000", "10.0.0.2:5432");
	gen_tcp(d, 11, 4, BT_CR_ACCEPT, "10.0.0.2:5432", "10.0.0.1:50000");
	for (int k = 1; k <= 4; k++)
		front_db_request(w, d, k, 0, 0,
				 k == 3 ? RAW_MALFORMED : RAW_NONE);
	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	const char *paths = rt_paths(&t);
	/* /r2 and /r4 whole and exact; nothing of /r3 in /r2 */
	ck_assert_msg(strstr(paths,
		"R http GET /r2 st=200 client=10.0.0.9:40002\n"
		"  server http 'GET /r2' /r2 web/100/100 st=200\n"
		"    client postgresql 'SELECT' SELECT 2 web/100/100 st=NULL\n"
		"      server postgresql 'SELECT' SELECT 2 web/200/200 st=NULL\n"
		"R ") != NULL, "%s", paths);
	ck_assert_msg(strstr(paths,
		"R http GET /r4 st=200 client=10.0.0.9:40004\n"
		"  server http 'GET /r4' /r4 web/100/100 st=200\n"
		"    client postgresql 'SELECT' SELECT 4 web/100/100 st=NULL\n"
		"      server postgresql 'SELECT' SELECT 4 web/200/200 st=NULL\n") != NULL,
		"%s", paths);
	/* /r3's query: a request of its own, and not exact */
	ck_assert_msg(strstr(paths,
		"R postgresql NULL SELECT 3 st=NULL client=/usr/sbin/nginx[100]@web [uncertain lost-events]\n"
		"  client postgresql 'SELECT' SELECT 3 web/100/100 st=NULL [uncertain lost-events]\n"
		"    server postgresql 'SELECT' SELECT 3 web/200/200 st=NULL [uncertain lost-events]\n") != NULL,
		"%s", paths);
	/* no span of /r3's work is exact */
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM spans WHERE certainty = 'exact'"
				   " AND (name LIKE '%%3%%' OR target LIKE '%%3%%')"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'malformed_records'"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM fragments WHERE trigger = 'gap'"
				   " AND request_id IS NULL"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM warnings WHERE text LIKE"
				   " '%%malformed MSG record skipped%%'"), 1);
	ck_assert_int_eq(rt_badly_nested(&t), 0);
	rt_done(&t);
}
END_TEST

/* A record of a type this reader does not know, written by a newer
 * tracer in /r2's work (SIGNAL was such a type once: the bounds of a
 * handler whose calls are no request's).  It is skipped by its length,
 * but what it said is not known: /r2 and the work after it are not
 * exact; /r1 and /r3, around it, are. */
START_TEST(newer_record_type)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/sbin/nginx", 0);
	struct gen_thr *d = gen_proc_main(h, 200, "/usr/lib/postgresql/15/bin/postgres", 0);

	gen_tcp(w, 10, 9, BT_CR_CONNECT, "10.0.0.1:50000", "10.0.0.2:5432");
	gen_tcp(d, 11, 4, BT_CR_ACCEPT, "10.0.0.2:5432", "10.0.0.1:50000");
	for (int k = 1; k <= 3; k++)
		front_db_request(w, d, k, 0, 0, k == 2 ? RAW_NEWER : RAW_NONE);
	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	const char *paths = rt_paths(&t);
	ck_assert_msg(strstr(paths,
		"R http GET /r1 st=200 client=10.0.0.9:40001\n"
		"  server http 'GET /r1' /r1 web/100/100 st=200\n"
		"    client postgresql 'SELECT' SELECT 1 web/100/100 st=NULL\n"
		"      server postgresql 'SELECT' SELECT 1 web/200/200 st=NULL\n") != NULL,
		"%s", paths);
	ck_assert_msg(strstr(paths,
		"R http GET /r3 st=200 client=10.0.0.9:40003\n"
		"  server http 'GET /r3' /r3 web/100/100 st=200\n"
		"    client postgresql 'SELECT' SELECT 3 web/100/100 st=NULL\n"
		"      server postgresql 'SELECT' SELECT 3 web/200/200 st=NULL\n") != NULL,
		"%s", paths);
	/* every span of /r2's work uncertain, wherever it went */
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM spans WHERE"
				   " (name LIKE '%%2%%' OR target LIKE '%%2%%')"), 3);
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM spans WHERE certainty = 'exact'"
				   " AND (name LIKE '%%2%%' OR target LIKE '%%2%%')"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM requests WHERE certainty = 'exact'"), 2);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'unknown_type_records'"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM warnings WHERE text LIKE"
				   " '%%record of type 200, newer than this reader, skipped%%'"), 1);
	ck_assert_int_eq(rt_badly_nested(&t), 0);
	rt_done(&t);
}
END_TEST

/* The front's connect is a CHAN record that does not decode: as when it
 * was lost to a full ring (dropped_connect), the database's connection
 * from the front looks like an untraced client's, and neither side's
 * requests may be exact. */
START_TEST(malformed_connect)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/sbin/nginx", 0);
	struct gen_thr *d = gen_proc_main(h, 200, "/usr/lib/postgresql/15/bin/postgres", 0);
	static const uint8_t fam9[] = { 2, 2, 1, 1, 0, 0, 9 };  /* family 9 */

	gen_raw(w, 10, BT_EV_CHAN, fam9, sizeof fam9);
	unannounced_queries(w, d);
	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t), unannounced_paths);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'peer_gap'"), 2);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'malformed_records'"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM warnings WHERE text LIKE"
				   " '%%malformed CHAN record skipped%%'"), 1);
	rt_done(&t);
}
END_TEST

/* A signal handler's call lost (DROP reason 1: seen in apache's prefork
 * workers under load) cannot have been a channel's announcement in
 * practice: the host's untraced clients stay untraced, their requests
 * exact (counting it made a whole testbed run uncertain). */
START_TEST(handler_drop_keeps_peers)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/sbin/apache2", 0);
	struct bt_event drop = { .type = BT_EV_DROP, .len = 1,
				 .flags = BT_DR_REENTRANT };

	for (int k = 1; k <= 3; k++) {
		char client[32];
		snprintf(client, sizeof client, "127.0.0.1:%d", 40000 + k);
		if (k == 2)
			gen_ev(w, 100 * k - 5, &drop);
		gen_tcp(w, 100 * k, 5, BT_CR_ACCEPT, "127.0.0.1:80", client);
		gen_msg(w, 100 * k + 10, 5, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
			GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/"), 0);
		gen_msg(w, 100 * k + 50, 5, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);
		gen_close(w, 100 * k + 60, 5);
	}
	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM requests WHERE certainty = 'exact'"), 3);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'peer_gap'"), 0);
	rt_done(&t);
}
END_TEST

/* ---- a fork record in no log ---------------------------------------------- */

/* apache forks a child for the request, but the block with its FORK is
 * in no log: the child starts without its parent's state, for no
 * request, and its query starts a request of its own (rule 5), which
 * may be the parent's request's part: not exact. */
START_TEST(lost_fork_record)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 600, "/usr/sbin/apache2", 0);
	struct gen_thr *d = gen_proc_main(h, 200, "/usr/lib/postgresql/15/bin/postgres", 0);
	struct gen_write_opts o = { .block_bytes = 4096, .blocks_per_seg = 4,
				    .keep = drop_block,
				    .keep_ctx = (uint32_t[]){ 600, 1 } };

	gen_tcp(w, 10, 5, BT_CR_ACCEPT, "10.0.0.1:80", "10.0.0.4:4444");
	gen_msg(w, 20, 5, IN, REQ, BT_PROTO_HTTP, 120, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/report"), 0);
	/* apache blocks: 0 start and request, 1 the fork (lost), 2 reply */
	gen_cut(w);
	struct gen_proc *cp = gen_fork(w, 40, 601, NULL);
	gen_cut(w);
	struct gen_thr *c = gen_thread(cp, 41, 601, 0, 0);
	gen_proc_start(c, 41, 600, 600, BT_PF_FORKED);
	gen_tcp(c, 42, 12, BT_CR_CONNECT, "10.0.0.1:50001", "10.0.0.2:5432");
	gen_tcp(d, 43, 4, BT_CR_ACCEPT, "10.0.0.2:5432", "10.0.0.1:50001");
	gen_msg(c, 44, 12, OUT, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT report"), 0);
	gen_msg(d, 45, 4, IN, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT report"), 0);
	gen_msg(d, 46, 4, OUT, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_msg(c, 47, 12, IN, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_thread_exit(c, 48);
	gen_msg(w, 90, 5, OUT, REP, BT_PROTO_HTTP, 400, 0, 200, 0, 0);

	rt_init(&t);
	rt_write(&t, g, &o);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /report st=200 client=10.0.0.4:4444 [uncertain lost-events]\n"
		"  server http 'GET /report' /report web/600/600 st=200 [uncertain lost-events]\n"
		"R postgresql NULL SELECT report st=NULL client=/usr/sbin/apache2[601]@web [uncertain lost-events]\n"
		"  client postgresql 'SELECT' SELECT report web/601/601 st=NULL [uncertain lost-events]\n"
		"    server postgresql 'SELECT' SELECT report web/200/200 st=NULL [uncertain lost-events]\n"
		"unattributed:\n");
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'lost_input_roots'"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT count(*) FROM warnings WHERE text LIKE"
				   " '%%pid 601: its parent (pid 600) is traced, but the fork record that made it is in no log%%'"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'orphan_images'"), 1);
	rt_done(&t);
}
END_TEST

/* ---- a receive whose send was never logged --------------------------------- */

START_TEST(blocked_receive_released)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/sbin/apache2", 0);
	struct gen_thr *d = gen_proc_main(h, 200, "/usr/lib/postgresql/15/bin/postgres", 0);
	struct bt_event drop = { .type = BT_EV_DROP, .len = 1,
				 .flags = BT_DR_REENTRANT };

	gen_tcp(w, 10, 9, BT_CR_CONNECT, "10.0.0.1:50000", "10.0.0.2:5432");
	gen_tcp(d, 11, 4, BT_CR_ACCEPT, "10.0.0.2:5432", "10.0.0.1:50000");
	gen_tcp(w, 100, 5, BT_CR_ACCEPT, "10.0.0.1:80", "10.0.0.9:1234");
	gen_msg(w, 110, 5, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/x"), 0);
	gen_msg(w, 120, 9, OUT, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 1"), 0);
	gen_msg(d, 125, 4, IN, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 1"), 0);
	gen_msg(d, 130, 4, OUT, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_msg(w, 135, 9, IN, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	/* The second query was sent, but its record was lost. */
	gen_ev(w, 140, &drop);
	gen_skip(w, 9, OUT, 20);
	gen_msg(d, 145, 4, IN, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 2"), 0);
	gen_msg(d, 150, 4, OUT, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_msg(w, 155, 9, IN, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_msg(w, 160, 5, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	/* /x lost its second query's record (it shows as a request of its
	 * own): the request whose fragment lost it is uncertain, never
	 * labelled exact with a span missing. */
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /x st=200 client=10.0.0.9:1234 [uncertain lost-events]\n"
		"  server http 'GET /x' /x web/100/100 st=200 [uncertain lost-events]\n"
		"    client postgresql 'SELECT' SELECT 1 web/100/100 st=NULL [uncertain lost-events]\n"
		"      server postgresql 'SELECT' SELECT 1 web/200/200 st=NULL [uncertain lost-events]\n"
		"R postgresql NULL SELECT 2 st=NULL client=10.0.0.1:50000 [uncertain unlogged-send]\n"
		"  server postgresql 'SELECT' SELECT 2 web/200/200 st=NULL [uncertain unlogged-send]\n"
		"unattributed:\n");
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'released_waits'"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'dropped_by_tracer'"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'lost_event_spans'"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM warnings"), 2);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM warnings WHERE text LIKE 'host web pid 200 tid 200: receive on fd 4 at offset 20 waited for a send that was never logged%%' AND file LIKE '%%.btl' AND offset > 0"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM warnings WHERE text LIKE 'host web pid 100: the tracer could not record 1 events%%'"), 1);
	/* The web server's reply still answers /x. */
	ck_assert_str_eq(rt_q(&t, "SELECT r.target FROM messages m JOIN requests r USING (request_id) WHERE m.ts_ns = %lld",
			      (long long)gen_epoch(160)), "/x");
	rt_done(&t);
}
END_TEST

/* ---- the receiver's peer closed without logging the send ----------------- */

START_TEST(peer_gone_released)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *c = gen_proc_main(h, 100, "client", 0);
	struct gen_thr *s = gen_proc_main(h, 200, "server", 0);

	gen_tcp(c, 10, 3, BT_CR_CONNECT, "10.0.0.1:50000", "10.0.0.2:7000");
	gen_tcp(s, 11, 4, BT_CR_ACCEPT, "10.0.0.2:7000", "10.0.0.1:50000");
	gen_skip(c, 3, OUT, 6);          /* "PING\r\n", never logged */
	gen_close(c, 20, 3);
	gen_msg(s, 30, 4, IN, REQ, BT_PROTO_LINE, 6, 0, 0, 0,
		GEN_A(BT_AK_LINE, "PING"), 0);

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R line NULL PING st=NULL client=10.0.0.1:50000 [uncertain unlogged-send]\n"
		"  server line 'PING' PING web/200/200 st=NULL [uncertain unlogged-send]\n"
		"unattributed:\n");
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM warnings WHERE text LIKE '%%closed without logging the send of offset 0%%'"), 1);
	rt_done(&t);
}
END_TEST

/* ---- blocks written twice, and blocks in the spool directory ------------- */

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t n;
	ck_assert_int_ge(in, 0);
	ck_assert_int_ge(out, 0);
	while ((n = read(in, buf, sizeof buf)) > 0)
		ck_assert_int_eq(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

START_TEST(duplicates_and_spool)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/sbin/apache2", 0);
	struct gen_write_opts o = { .block_bytes = 4096, .blocks_per_seg = 2 };
	char a[600], b[600], spool[400];

	for (int k = 1; k <= 5; k++)
		http_request(w, 100 * k, k);
	rt_init(&t);
	ck_assert_int_eq(rt_write(&t, g, &o), 3);
	/* bp-logd wrote the first segment's blocks again in a later file. */
	snprintf(a, sizeof a, "%s/web/000000.btl", t.logs);
	snprintf(b, sizeof b, "%s/web/000009.btl", t.logs);
	copy_file(a, b);
	/* The middle segment went to the spool directory instead. */
	snprintf(spool, sizeof spool, "%s/spool", t.dir);
	ck_assert_int_eq(mkdir(spool, 0755), 0);
	snprintf(a, sizeof a, "%s/web/000001.btl", t.logs);
	snprintf(b, sizeof b, "%s/000001.btl", spool);
	ck_assert_int_eq(rename(a, b), 0);

	t.extra = spool;
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_str_eq(rt_paths(&t),
		"R http GET /r1 st=200 client=10.0.0.9:40001\n"
		"  server http 'GET /r1' /r1 web/100/100 st=200\n"
		"R http GET /r2 st=200 client=10.0.0.9:40002\n"
		"  server http 'GET /r2' /r2 web/100/100 st=200\n"
		"R http GET /r3 st=200 client=10.0.0.9:40003\n"
		"  server http 'GET /r3' /r3 web/100/100 st=200\n"
		"R http GET /r4 st=200 client=10.0.0.9:40004\n"
		"  server http 'GET /r4' /r4 web/100/100 st=200\n"
		"R http GET /r5 st=200 client=10.0.0.9:40005\n"
		"  server http 'GET /r5' /r5 web/100/100 st=200\n"
		"unattributed:\n");
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'duplicate_blocks'"), 2);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM warnings"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'files'"), 4);
	rt_done(&t);
}
END_TEST

/* ---- a signal handler's calls inside a read ------------------------------ */

/*
 * A worker reads the database's reply for /x when a signal handler runs
 * inside that read and writes a byte to the worker's self-pipe (SIGNAL
 * begin .. end, libbtrace's bt_call_safe_begin).  The handler works for
 * no request: its byte, and the work its event loop does when it reads
 * the byte later, are no request's; the interrupted fragment goes on
 * after it (the reply, the answer to /x).  LOSE_END: the SIGNAL end was
 * lost (the ring was full): a DROP comes instead, after which the
 * records are the interrupted fragment's again, and /x is uncertain.
 */
static void signal_in_read(int lose_end)
{
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h = gen_host(g, "web", 0, 0);
	struct gen_thr *w = gen_proc_main(h, 100, "/usr/sbin/apache2", 0);
	struct gen_thr *d = gen_proc_main(h, 200, "/usr/lib/postgresql/15/bin/postgres", 0);
	struct bt_event sb = { .type = BT_EV_SIGNAL, .flags = BT_SG_BEGIN };
	struct bt_event se = { .type = BT_EV_SIGNAL, .flags = BT_SG_END };
	struct bt_event drop = { .type = BT_EV_DROP, .len = 1,
				 .flags = BT_DR_RING_FULL };

	gen_tcp(w, 10, 9, BT_CR_CONNECT, "10.0.0.1:50000", "10.0.0.2:5432");
	gen_tcp(d, 11, 4, BT_CR_ACCEPT, "10.0.0.2:5432", "10.0.0.1:50000");
	gen_pipe(w, 12, 21, 22, 7001);                 /* its self-pipe */
	gen_tcp(w, 100, 5, BT_CR_ACCEPT, "10.0.0.1:80", "10.0.0.9:1234");
	gen_msg(w, 110, 5, IN, REQ, BT_PROTO_HTTP, 60, 0, 0, 0,
		GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/x"), 0);
	gen_msg(w, 120, 9, OUT, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 1"), 0);
	gen_msg(d, 125, 4, IN, REQ, BT_PROTO_PGSQL, 20, 0, 0, 0,
		GEN_A(BT_AK_SQL, "SELECT 1"), 0);
	/* the read of the reply: the handler runs inside it */
	gen_ev(w, 126, &sb);
	gen_data(w, 127, 22, OUT, 1);
	if (lose_end)
		gen_ev(w, 133, &drop);
	else
		gen_ev(w, 133, &se);
	gen_msg(d, 130, 4, OUT, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_msg(w, 135, 9, IN, REP, BT_PROTO_PGSQL, 40, 0, 0, 0, 0);
	gen_open(w, 140, 8, "/var/www/x.tpl");
	gen_msg(w, 160, 5, OUT, REP, BT_PROTO_HTTP, 100, 0, 200, 0, 0);
	/* the event loop reads its self-pipe, then opens a log file */
	gen_ready(w, 170, 21, POLLIN);
	gen_data(w, 171, 21, IN, 1);
	gen_open(w, 172, 10, "/var/log/app/reload.log");

	rt_init(&t);
	rt_write(&t, g, NULL);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	/* exact, or (the end lost) uncertain for the loss */
	const char *u = lose_end ? " [uncertain lost-events]" : "";
	char want[1024];
	snprintf(want, sizeof want,
		 "R http GET /x st=200 client=10.0.0.9:1234%s\n"
		 "  server http 'GET /x' /x web/100/100 st=200%s\n"
		 "    client postgresql 'SELECT' SELECT 1 web/100/100 st=NULL%s\n"
		 "      server postgresql 'SELECT' SELECT 1 web/200/200 st=NULL%s\n"
		 "unattributed:\n", u, u, u, u);
	ck_assert_str_eq(rt_paths(&t), want);
	/* the self-pipe's byte, and what the loop did on reading it, are no
	 * request's (before SIGNAL was understood: /x's) */
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM files WHERE path = '/var/log/app/reload.log' AND request_id IS NULL"), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM fragments WHERE fd = 21 AND request_id IS NULL"), 1);
	/* the handler's fragment: no request's, inside the interrupted one */
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM fragments WHERE trigger = 'signal' AND request_id IS NULL AND start_ns = %lld",
			       (long long)gen_epoch(126)), 1);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM fragments WHERE trigger = 'signal'"), 1);
	/* the reply and the file after the handler are still /x's */
	ck_assert_str_eq(rt_q(&t, "SELECT r.target FROM files f JOIN requests r USING (request_id) WHERE f.path = '/var/www/x.tpl'"), "/x");
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM warnings"), lose_end ? 1 : 0);
	ck_assert_int_eq(rt_badly_nested(&t), 0);
	rt_done(&t);
}

START_TEST(signal_inside_read)
{
	signal_in_read(0);
}
END_TEST

START_TEST(signal_inside_read_end_lost)
{
	signal_in_read(1);
}
END_TEST

Suite *recon_loss_suite(void)
{
	Suite *s = suite_create("recon_loss");
	TCase *tc = tcase_create("loss");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, truncated_segment);
	tcase_add_test(tc, lost_block);
	tcase_add_test(tc, lost_channel_opening);
	tcase_add_test(tc, lost_input_block);
	tcase_add_test(tc, dropped_connect);
	tcase_add_test(tc, dropped_input_for_no_request);
	tcase_add_test(tc, malformed_input_record);
	tcase_add_test(tc, malformed_connect);
	tcase_add_test(tc, newer_record_type);
	tcase_add_test(tc, handler_drop_keeps_peers);
	tcase_add_test(tc, lost_fork_record);
	tcase_add_test(tc, blocked_receive_released);
	tcase_add_test(tc, peer_gone_released);
	tcase_add_test(tc, duplicates_and_spool);
	tcase_add_test(tc, signal_inside_read);
	tcase_add_test(tc, signal_inside_read_end_lost);
	suite_add_tcase(s, tc);
	return s;
}
