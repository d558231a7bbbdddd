/*
 * check_recon_more.c - rc_input_more: logs that grow while they are read.
 *
 * A generated log (two hosts, images and threads that start as it goes,
 * a few blocks lost) is revealed a little at a time in a directory of its
 * own, as bp-logd writes it: segment files appear in order and the last
 * one of each host grows block by block.  After each step rc_input_more
 * takes what is new and every stream is read on from where its cursor
 * stopped.  At the end every stream must have given exactly the records
 * a fresh index of the whole log gives, in order, and have the rank a
 * fresh index gives it.  Logs that changed otherwise than by growing (a
 * file gone, a block before what a stream had) must be refused, with
 * the context left as it was.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "btrace/proto.h"
#include "btrace/segment.h"
#include "check_recon.h"
#include "input.h"
#include "keeper.h"
#include "rc.h"

/* ---- the log ---------------------------------------------------------- */

/* Leave out a few blocks: losses the growing reader must cut as the
 * fresh one does. */
static int keep_most(void *ctx, const char *host, uint32_t pid,
		     unsigned slot, unsigned blk)
{
	(void)ctx;
	(void)slot;
	return !(strcmp(host, "db") == 0 && pid == 300 && blk == 5) &&
	       !(pid == 104 && blk == 2);
}

static int keep_all(void *ctx, const char *host, uint32_t pid,
		    unsigned slot, unsigned blk)
{
	(void)ctx;
	(void)host;
	(void)pid;
	(void)slot;
	(void)blk;
	return 1;
}

/* LOSSY: with the blocks keep_most leaves out. */
/* STATICS: every third request answered without a query (nothing but
 * its own spans names it: db_rows.c, "requests no row names"), and
 * every third one with a connection to an untraced server instead */
static void make_log_x(struct rt *t, int lossy, int statics)
{
	struct gen *g = gen_new();
	struct gen_host *web = gen_host(g, "web", 0, 0);
	struct gen_host *db = gen_host(g, "db", 5000000, 0);
	struct gen_thr *d = gen_proc_main(db, 300, "/usr/lib/postgresql/15/bin/postgres", 0);
	struct gen_thr *w[4];
	struct gen_write_opts o = { .block_bytes = 200, .blocks_per_seg = 6,
				    .keep = lossy ? keep_most : keep_all };

	rt_init(t);
	/* web servers that start one after the other, threads later */
	for (int k = 0; k < 4; k++)
		w[k] = gen_proc_main(web, 100 + (uint32_t)k, "/usr/sbin/apache2",
				     (int64_t)k * 2000);
	for (int i = 0; i < 400; i++) {
		int64_t t0 = 10000 + (int64_t)i * 50;
		struct gen_thr *x = w[i % 4];
		char cli[32], lport[32];

		if (i == 200)
			w[1] = gen_thread(gen_thr_proc(w[1]), t0 - 5, 1101, 101, 77);
		snprintf(cli, sizeof cli, "10.0.0.9:%d", 20000 + i);
		snprintf(lport, sizeof lport, "10.0.0.1:%d", 40000 + i);
		gen_tcp(x, t0, 5, BT_CR_ACCEPT, "10.0.0.1:80", cli);
		gen_msg(x, t0 + 1, 5, BT_DIR_IN, BT_MK_REQUEST, BT_PROTO_HTTP,
			80, 0, 0, 0, GEN_A(BT_AK_METHOD, "GET"),
			GEN_A(BT_AK_TARGET, "/x"), 0);
		if (statics && i % 3 == 2) {
			gen_msg(x, t0 + 9, 5, BT_DIR_OUT, BT_MK_REPLY,
				BT_PROTO_HTTP, 100, 0, 200, 0, 0);
			gen_close(x, t0 + 10, 5);
			continue;
		}
		if (statics && i % 3 == 1) {
			/* a connection to a server no tracer sees, closed
			 * after the next requests began: it names the
			 * request while a bound keeps its row */
			gen_tcp(x, t0 + 2, 9, BT_CR_CONNECT, lport, "10.0.0.3:6379");
			gen_msg(x, t0 + 9, 5, BT_DIR_OUT, BT_MK_REPLY,
				BT_PROTO_HTTP, 100, 0, 200, 0, 0);
			gen_close(x, t0 + 10, 5);
			gen_close(x, t0 + 120, 9);
			continue;
		}
		gen_tcp(x, t0 + 2, 7, BT_CR_CONNECT, lport, "10.0.0.2:5432");
		gen_msg(x, t0 + 3, 7, BT_DIR_OUT, BT_MK_REQUEST, BT_PROTO_PGSQL,
			40, 0, 0, 0, GEN_A(BT_AK_SQL, "SELECT 1"), 0);
		gen_tcp(d, t0 + 3, 5, BT_CR_ACCEPT, "10.0.0.2:5432", lport);
		gen_msg(d, t0 + 4, 5, BT_DIR_IN, BT_MK_REQUEST, BT_PROTO_PGSQL,
			40, 0, 0, 0, GEN_A(BT_AK_SQL, "SELECT 1"), 0);
		gen_msg(d, t0 + 5, 5, BT_DIR_OUT, BT_MK_REPLY, BT_PROTO_PGSQL,
			60, 0, 0, 0, 0);
		gen_close(d, t0 + 6, 5);
		gen_msg(x, t0 + 7, 7, BT_DIR_IN, BT_MK_REPLY, BT_PROTO_PGSQL,
			60, 0, 0, 0, 0);
		gen_close(x, t0 + 8, 7);
		gen_msg(x, t0 + 9, 5, BT_DIR_OUT, BT_MK_REPLY, BT_PROTO_HTTP,
			100, 0, 200, 0, 0);
		gen_close(x, t0 + 10, 5);
	}
	ck_assert_int_gt(rt_write(t, g, &o), 20);
}

static void make_log(struct rt *t, int lossy)
{
	make_log_x(t, lossy, 0);
}

/* ---- growing a copy of it --------------------------------------------- */

/* A segment of the log: its path under the two roots and where its
 * blocks end. */
struct seg {
	char     rel[300];           /* <host>/<name> */
	uint64_t starts[64], ends[64];
	unsigned nends, shown;       /* blocks shown in the copy */
};

struct grow {
	char     from[300], to[300];
	struct seg segs[128];
	unsigned nsegs;
};

/* Are segments A and B of one host? */
static int same_host(const struct seg *a, const struct seg *b)
{
	size_t n = (size_t)(strchr(a->rel, '/') - a->rel);
	return strncmp(a->rel, b->rel, n + 1) == 0;
}

static int by_rel(const void *a, const void *b)
{
	return strcmp(((const struct seg *)a)->rel, ((const struct seg *)b)->rel);
}

static void list_host(struct grow *gr, const char *host)
{
	char dir[400];
	struct dirent *e;

	snprintf(dir, sizeof dir, "%s/%s", gr->from, host);
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		ck_assert_uint_lt(gr->nsegs, 128);
		struct seg *s = &gr->segs[gr->nsegs++];
		char path[700];
		struct bt_blk_header h;
		const uint8_t *pl;
		uint64_t off;
		const char *why = NULL;

		memset(s, 0, sizeof *s);
		snprintf(s->rel, sizeof s->rel, "%s/%s", host, e->d_name);
		snprintf(path, sizeof path, "%s/%s", gr->from, s->rel);
		struct bt_seg_reader *rd = bt_seg_open(path, NULL, NULL, &why);
		ck_assert_ptr_nonnull(rd);
		while (bt_seg_next(rd, &h, &pl, &off) == 1) {
			ck_assert_uint_lt(s->nends, 64);
			s->starts[s->nends] = off;
			s->ends[s->nends++] = off + BT_BLK_HDR_SIZE + h.len;
		}
		bt_seg_close(rd);
	}
	closedir(d);
}

/* Write the first SHOWN blocks of segment S into the copy (the file
 * appears with its first block). */
static void show(struct grow *gr, struct seg *s, unsigned shown)
{
	char src[700], dst[700], dir[700];
	static uint8_t buf[1 << 16];

	s->shown = shown;
	snprintf(src, sizeof src, "%s/%s", gr->from, s->rel);
	snprintf(dst, sizeof dst, "%s/%s", gr->to, s->rel);
	if (shown == 0) {
		unlink(dst);
		return;
	}
	snprintf(dir, sizeof dir, "%s", dst);
	*strrchr(dir, '/') = 0;
	mkdir(gr->to, 0755);
	mkdir(dir, 0755);
	int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT, 0644);
	ck_assert_int_ge(in, 0);
	ck_assert_int_ge(out, 0);
	uint64_t n = s->ends[shown - 1];
	ck_assert_uint_le(n, sizeof buf);
	ck_assert_int_eq(pread(in, buf, n, 0), (ssize_t)n);
	ck_assert_int_eq(pwrite(out, buf, n, 0), (ssize_t)n);
	ck_assert_int_eq(ftruncate(out, (off_t)n), 0);
	close(in);
	close(out);
}

/* Make the log in T, and GR to show it in T->dir/live: the segments of
 * host web (and of db with BOTH), none shown yet; OUT names the output
 * (the temporary tables' prefix). */
static void grow_init(struct grow *gr, struct rt *t, char *out, size_t len,
		      int both)
{
	make_log(t, 1);
	memset(gr, 0, sizeof *gr);
	snprintf(gr->from, sizeof gr->from, "%s", t->logs);
	snprintf(gr->to, sizeof gr->to, "%s/live", t->dir);
	snprintf(out, len, "%s/out.db", t->dir);
	list_host(gr, "web");
	if (both)
		list_host(gr, "db");
	qsort(gr->segs, gr->nsegs, sizeof gr->segs[0], by_rel);
}

/* ---- reading the streams ---------------------------------------------- */

/* Per stream: the records read so far (count and a digest of each
 * record's type, time and bytes, in order). */
struct sum {
	uint64_t n, h;
};

static void read_on(struct rc_ctx *c, struct sum *sums)
{
	for (uint32_t i = 0; i < c->nstreams; i++) {
		struct rc_stream *s = &c->streams[i];
		struct rc_rec r;

		if (!s->run) {
			s->run = calloc(1, sizeof *s->run);
			ck_assert_ptr_nonnull(s->run);
			s->run->st = s;
			rc_input_cur_reset(c, s->run, 0);
		}
		while (rc_input_cur_next(c, s->run, &r)) {
			uint64_t v[3] = { r.type, r.ts, sums[i].h };
			sums[i].n++;
			sums[i].h = rc_hash64(rc_hash64(7, v, sizeof v), r.p, r.len);
		}
	}
}

static void free_runs(struct rc_ctx *c)
{
	for (uint32_t i = 0; i < c->nstreams; i++) {
		if (c->streams[i].run) {
			rc_input_run_free(c->streams[i].run);
			free(c->streams[i].run);
			c->streams[i].run = NULL;
		}
	}
}

static void ctx_open(struct rc_ctx *c, struct rc_options *o, const char **in,
		     const char *out)
{
	memset(o, 0, sizeof *o);
	o->inputs = in;
	o->ninputs = 1;
	o->output = out;
	o->quiet = 1;
	o->progress = 0;
	memset(c, 0, sizeof *c);
	c->opt = o;
	ck_assert_int_eq(rc_input_open(c), 0);
}

/* The stream of C with the key of stream I of F, or -1. */
static int64_t same_stream(const struct rc_ctx *c, const struct rc_ctx *f,
			   uint32_t i)
{
	const struct rc_image *fi = &f->images[f->streams[i].image];
	const struct bt_sr_host *fh = &f->hosts[fi->host];

	for (uint32_t k = 0; k < c->nstreams; k++) {
		const struct rc_image *ci = &c->images[c->streams[k].image];
		const struct bt_sr_host *ch = &c->hosts[ci->host];
		if (ci->ring_id == fi->ring_id && ci->pid == fi->pid &&
		    c->streams[k].slot == f->streams[i].slot &&
		    ch->boot_id == fh->boot_id && strcmp(ch->name, fh->name) == 0)
			return k;
	}
	return -1;
}

START_TEST(grows_as_a_fresh_index)
{
	struct rt t;
	struct grow gr;
	struct rc_ctx c, f;
	struct rc_options co, fo;
	static struct sum sums[4096], fsums[4096];
	char why[256], out[400];
	uint64_t seed = 0x2545f4914f6cdd1dull + (uint64_t)_i;
	unsigned steps = 0, grown = 0;

	grow_init(&gr, &t, out, sizeof out, 1);

	/* the first block of each host's first segment */
	for (unsigned k = 0; k < gr.nsegs; k++)
		if (k == 0 || !same_host(&gr.segs[k], &gr.segs[k - 1]))
			show(&gr, &gr.segs[k], 1);
	const char *in[1] = { gr.to };
	ctx_open(&c, &co, in, out);
	memset(sums, 0, sizeof sums);
	read_on(&c, sums);

	for (;;) {
		/* each host's next few blocks, segment by segment */
		int more = 0;
		for (unsigned k = 0; k < gr.nsegs; k++) {
			struct seg *s = &gr.segs[k];
			if (s->shown == s->nends)
				continue;
			/* a host's next segment starts when the one before
			 * it is whole */
			if (k > 0 && gr.segs[k - 1].shown < gr.segs[k - 1].nends &&
			    same_host(s, &gr.segs[k - 1]))
				continue;
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			unsigned add = (unsigned)(seed >> 33) % 4;
			if (s->shown + add > s->nends)
				add = s->nends - s->shown;
			if (add)
				show(&gr, s, s->shown + add);
			more = 1;
		}
		if (!more)
			break;
		uint32_t before = c.nstreams;
		ck_assert_int_eq(rc_input_more(&c, why, sizeof why), 0);
		grown += c.nstreams > before;
		read_on(&c, sums);
		steps++;
		ck_assert_uint_lt(steps, 1000);
	}
	ck_assert_uint_gt(steps, 10);
	ck_assert_uint_ge(grown, 2);            /* streams came on the way */

	/* the whole log, indexed once */
	const char *fin[1] = { t.logs };
	ctx_open(&f, &fo, fin, out);
	memset(fsums, 0, sizeof fsums);
	read_on(&f, fsums);
	ck_assert_uint_eq(c.nstreams, f.nstreams);
	ck_assert_uint_eq(c.nimages, f.nimages);
	ck_assert_uint_eq(c.nhosts, f.nhosts);
	ck_assert_uint_eq(c.nblocks, f.nblocks);
	uint64_t records = 0, moved = 0;
	for (uint32_t i = 0; i < f.nstreams; i++) {
		int64_t k = same_stream(&c, &f, i);
		ck_assert_int_ge(k, 0);
		ck_assert_uint_eq(c.streams[k].rank, i);
		ck_assert_uint_eq(sums[k].n, fsums[i].n);
		ck_assert_uint_eq(sums[k].h, fsums[i].h);
		records += fsums[i].n;
		moved += (uint64_t)k != i;
	}
	ck_assert_uint_gt(records, 4000);
	ck_assert_uint_gt(moved, 0);       /* numbers kept, not re-sorted */
	free_runs(&c);
	free_runs(&f);
	rc_input_close(&c);
	rc_input_close(&f);
	rt_done(&t);
}
END_TEST

/*
 * Changes that are not growth: refused with a reason, the context as it
 * was (it reads on once the logs are right again).  A copy of a file
 * already read (a spool of the same bytes) is growth by nothing.
 */
START_TEST(refuses_what_is_not_growth)
{
	struct rt t;
	struct grow gr;
	struct rc_ctx c;
	struct rc_options co;
	static struct sum sums[4096];
	char why[256], out[400], src[700], dst[700];

	grow_init(&gr, &t, out, sizeof out, 0);
	ck_assert_uint_gt(gr.nsegs, 6);
	for (unsigned k = 0; k < 3; k++)
		show(&gr, &gr.segs[k], gr.segs[k].nends);
	const char *in[1] = { gr.to };
	ctx_open(&c, &co, in, out);
	memset(sums, 0, sizeof sums);
	read_on(&c, sums);
	uint32_t nblocks = c.nblocks, nstreams = c.nstreams;

	/* segment 1 gone */
	show(&gr, &gr.segs[1], 0);
	ck_assert_int_eq(rc_input_more(&c, why, sizeof why), RC_MORE_REBUILD);
	ck_assert_ptr_nonnull(strstr(why, "no longer among the logs"));
	ck_assert_uint_eq(c.nblocks, nblocks);
	show(&gr, &gr.segs[1], gr.segs[1].nends);
	ck_assert_int_eq(rc_input_more(&c, why, sizeof why), 0);
	ck_assert_uint_eq(c.nblocks, nblocks);

	/* segment 4 before segment 3: then 3's blocks come before what
	 * streams have */
	show(&gr, &gr.segs[4], gr.segs[4].nends);
	ck_assert_int_eq(rc_input_more(&c, why, sizeof why), 0);
	read_on(&c, sums);
	nblocks = c.nblocks;
	nstreams = c.nstreams;
	show(&gr, &gr.segs[3], gr.segs[3].nends);
	ck_assert_int_eq(rc_input_more(&c, why, sizeof why), RC_MORE_REBUILD);
	ck_assert_ptr_nonnull(strstr(why, "comes before what a stream had read"));
	ck_assert_uint_eq(c.nblocks, nblocks);
	ck_assert_uint_eq(c.nstreams, nstreams);
	show(&gr, &gr.segs[3], 0);

	/* segment 2 shorter */
	show(&gr, &gr.segs[2], gr.segs[2].nends - 1);
	ck_assert_int_eq(rc_input_more(&c, why, sizeof why), RC_MORE_REBUILD);
	ck_assert_ptr_nonnull(strstr(why, "shorter than it was"));
	show(&gr, &gr.segs[2], gr.segs[2].nends);

	/* a copy of segment 0 under a name that sorts after it: its blocks
	 * are repeats, nothing new to read */
	uint64_t n0 = 0, n1 = 0;
	for (uint32_t i = 0; i < c.nstreams; i++)
		n0 += sums[i].n;
	snprintf(src, sizeof src, "%s/%s", gr.to, gr.segs[0].rel);
	snprintf(dst, sizeof dst, "%s/web/zz-spool.btl", gr.to);
	ck_assert_int_eq(link(src, dst), 0);
	ck_assert_msg(rc_input_more(&c, why, sizeof why) == 0, "%s", why);
	ck_assert_uint_gt(c.nblocks, nblocks);
	read_on(&c, sums);
	for (uint32_t i = 0; i < c.nstreams; i++)
		n1 += sums[i].n;
	ck_assert_uint_eq(n1, n0);
	free_runs(&c);
	rc_input_close(&c);
	rt_done(&t);
}
END_TEST

/* ---- the merge in steps ------------------------------------------------ */

/*
 * T's database by content: every row of the tables a user reads, its
 * ids replaced by what they name (a request by its start and its root's
 * thread, a span by its start, thread and name, a channel by its
 * process, descriptor and open time), sorted.  The row ids themselves
 * follow the order rows were written in, which the merge in steps may
 * change: a stream that ran dry at a pause and got no more records ends
 * when the logs are final, not at its last record.
 */
#define RQ(x) "COALESCE((SELECT r.start_ns || '/' || rs.pid || '/' || rs.tid FROM requests r " \
	"JOIN spans rs ON rs.span_id = r.root_span_id WHERE r.request_id = " x "), '-')"
#define SP(x) "COALESCE((SELECT z.start_ns || '/' || z.pid || '/' || z.tid || '/' || " \
	"COALESCE(z.name, '') FROM spans z WHERE z.span_id = " x "), '-')"
#define CH(x) "COALESCE((SELECT y.pid || '/' || y.fd || '/' || y.open_ns FROM channels y " \
	"WHERE y.channel_id = " x "), '-')"
static const char *const canon_sql[] = {
	"SELECT 'R', " RQ("q.request_id") ", end_ns, protocol, method, target, status,"
	" client, complete, certainty, certainty_reason, " SP("q.root_span_id")
	" FROM requests q",
	"SELECT 'S', " SP("s.span_id") ", " RQ("s.request_id") ", " SP("s.parent_span_id")
	", kind, protocol, target, status, host, exe, peer, end_ns, " CH("s.channel_id")
	", certainty, certainty_reason FROM spans s",
	"SELECT 'F', " RQ("f.request_id") ", " SP("f.span_id") ", pid, tid, start_ns,"
	" end_ns, trigger, fd, " CH("f.channel_id") ", events FROM fragments f",
	"SELECT 'M', " RQ("m.request_id") ", " SP("m.span_id") ", " CH("m.channel_id")
	", pid, tid, begin_ns, ts_ns, dir, kind, protocol, flags, off, len, status,"
	" witness FROM messages m",
	"SELECT 'A', " SP("a.span_id") ", a.key, a.value FROM attrs a",
	"SELECT 'I', " RQ("i.request_id") ", " SP("i.span_id") ", pid, tid, ts_ns, path,"
	" flags, result FROM files i",
	"SELECT 'P', host, pid, ppid, exe, cmdline, ring_id, start_ns, end_ns,"
	" COALESCE((SELECT x.pid || '/' || x.start_ns FROM processes x"
	" WHERE x.process_id = p.parent_process_id), '-'), how, "
	RQ("p.request_id") ", events FROM processes p",
	"SELECT 'C', pid, fd, kind, role, protocol, local, remote, path, ino, peer_ino, "
	CH("c.peer_channel_id") ", traced_peer, " RQ("c.request_id") ", open_ns, close_ns"
	" FROM channels c",
	"SELECT 'W', file, offset, text FROM warnings",
	"SELECT 'T', key, value FROM stats",
	"SELECT 'N', rank, n, complete, protocol, service, root, nodes, depth,"
	" signature, min_ns, max_ns, p50_ns, p90_ns, p99_ns FROM patterns",
};

static int by_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *dump(struct rt *t)
{
	char **lines = NULL;
	size_t n = 0, cap = 0, len = 0;
	char *out = NULL;

	for (size_t k = 0; k < sizeof canon_sql / sizeof canon_sql[0]; k++) {
		sqlite3_stmt *r;
		ck_assert_msg(sqlite3_prepare_v2(t->h, canon_sql[k], -1, &r, NULL) == SQLITE_OK,
			      "%s: %s", canon_sql[k], sqlite3_errmsg(t->h));
		while (sqlite3_step(r) == SQLITE_ROW) {
			char *l = NULL;
			size_t ll = 0;
			FILE *f = open_memstream(&l, &ll);
			for (int i = 0; i < sqlite3_column_count(r); i++) {
				const char *v = (const char *)sqlite3_column_text(r, i);
				const char *d = v ? strstr(v, t->dir) : NULL;
				/* the scratch directory's name aside */
				if (d)
					fprintf(f, "%s%.*s<dir>%s", i ? "|" : "",
						(int)(d - v), v, d + strlen(t->dir));
				else
					fprintf(f, "%s%s", i ? "|" : "", v ? v : "<null>");
			}
			fclose(f);
			if (n == cap) {
				cap = cap ? cap * 2 : 1024;
				lines = realloc(lines, cap * sizeof *lines);
				ck_assert_ptr_nonnull(lines);
			}
			lines[n++] = l;
			len += ll + 1;
		}
		sqlite3_finalize(r);
	}
	qsort(lines, n, sizeof *lines, by_line);
	out = malloc(len + 1);
	ck_assert_ptr_nonnull(out);
	len = 0;
	for (size_t i = 0; i < n; i++) {
		size_t ll = strlen(lines[i]);
		memcpy(out + len, lines[i], ll);
		out[len + ll] = '\n';
		len += ll + 1;
		free(lines[i]);
	}
	out[len] = 0;
	free(lines);
	return out;
}

/* A and B the same, or fail naming the first line that differs. */
static void same_text(const char *a, const char *b, int steps)
{
	size_t line = 1;
	const char *la = a, *lb = b;

	while (*a && *a == *b) {
		if (*a == '\n') {
			line++;
			la = a + 1;
			lb = b + 1;
		}
		a++;
		b++;
	}
	if (!*a && !*b)
		return;
	ck_abort_msg("%d steps: line %zu differs:\n at once: %.200s\n steps:   %.200s",
		     steps, line, la, lb);
}

/*
 * The merge that sees its logs grow in N steps (rc_options.steps: it
 * pauses at each step's watermark, streams run dry and read on, streams
 * begin between steps) writes the database the merge at once writes,
 * by content (dump above).
 */
START_TEST(steps_same_as_at_once)
{
	static const int steps[] = { 2, 5, 17, 60 };
	/* the merge's hold (rc_options.hold_ns): the default (the whole log
	 * is 30 ms: the merge holds back every channel end without a peer
	 * until the logs are final), and 100 us (an accept follows its
	 * connect by 1 us here) */
	static const int64_t holds[] = { 0, 100000 };
	struct rt a;

	make_log(&a, 0);
	ck_assert_int_eq(rt_run(&a), RC_EXIT_OK);
	ck_assert_int_ge(a.sum.requests, 400);
	char *want = dump(&a);
	for (size_t h = 0; h < sizeof holds / sizeof holds[0]; h++)
		for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
			struct rt b;
			make_log(&b, 0);
			b.steps = steps[i];
			b.hold_ns = holds[h];
			int rb = rt_run(&b);
			ck_assert_msg(rb == RC_EXIT_OK, "%d steps, hold %lld: exit %d: %s",
				      steps[i], (long long)holds[h], rb,
				      rt_stderr(&b));
			char *got = dump(&b);
			ck_assert_uint_gt(strlen(got), 10000);
			same_text(want, got, steps[i]);
			free(got);
			rt_done(&b);
		}
	free(want);
	rt_done(&a);

	/* without the hold (1 ns), a connect the merge applied is paired
	 * with an accept that came with a later step: pass 1 reading on
	 * says so, and the merge refuses to go on */
	struct rt n;
	make_log(&n, 0);
	n.steps = 60;
	n.hold_ns = 1;
	ck_assert_int_eq(rt_run(&n), RC_EXIT_INPUT);
	ck_assert_ptr_nonnull(strstr(rt_stderr(&n), "is paired otherwise now"));
	rt_done(&n);

	/* a watermark too late: a record older than what was applied comes
	 * with the next step (or pass 1 finds a channel end it read paired
	 * otherwise, whichever comes first), and the merge refuses to go
	 * on */
	struct rt u;
	make_log(&u, 0);
	u.steps = 17;
	u.steps_unsafe = 1;
	u.hold_ns = 1;
	ck_assert_int_eq(rt_run(&u), RC_EXIT_INPUT);
	ck_assert_msg(strstr(rt_stderr(&u), "older than what the merge had applied") ||
		      strstr(rt_stderr(&u), "is paired otherwise now"),
		      "%s", rt_stderr(&u));
	rt_done(&u);
}
END_TEST

/*
 * A stream that stops while the logs grow is not ended: more may come.
 * Here a client connects and stops for good without sending; the server
 * reads from it.  Merged at once, the client's stream ends at its last
 * record, its connection has no sender left, and the read proceeds as
 * from an untraced peer at its own place.  Merged in steps with a pause
 * between the two, the read waits for a send until the logs are final,
 * past later records: the merge must say so rather than write what the
 * merge at once did not (merge.c, resume).  With no pause there (two
 * steps whose pause is before the connect), the same rows.
 */
START_TEST(stopped_sender_refused)
{
	int refused = 0, same = 0;

	for (int steps = 0; steps <= 30; steps += steps < 4 ? 1 : 13) {
		struct rt t;
		struct gen *g = gen_new();
		struct gen_host *h = gen_host(g, "web", 0, 0);
		struct gen_thr *a = gen_proc_main(h, 500, "/usr/bin/client", 0);
		struct gen_thr *b = gen_proc_main(h, 600, "/usr/bin/server", 0);
		struct gen_thr *k = gen_proc_main(h, 700, "/usr/bin/ticker", 0);

		gen_tcp(a, 100, 4, BT_CR_CONNECT, "10.0.0.1:40000", "10.0.0.2:80");
		gen_cut(a);
		gen_accept(b, 105, 5, 3, "10.0.0.2:80", "10.0.0.1:40000");
		gen_cut(b);
		gen_msg(b, 300, 5, BT_DIR_IN, BT_MK_REQUEST, BT_PROTO_HTTP, 80,
			0, 0, 0, GEN_A(BT_AK_METHOD, "GET"), GEN_A(BT_AK_TARGET, "/x"), 0);
		for (int i = 0; i < 40; i++) {
			/* another process's work, on and on */
			gen_open(k, 10 + i * 10, 9, "/etc/hosts");
			gen_close(k, 12 + i * 10, 9);
			gen_cut(k);
		}
		rt_init(&t);
		t.steps = steps;
		rt_write(&t, g, NULL);
		int rc = rt_run(&t);
		if (rc == RC_EXIT_INPUT) {
			ck_assert_ptr_nonnull(strstr(rt_stderr(&t),
				"a receive whose sender had ended"));
			refused++;
		} else {
			ck_assert_int_eq(rc, RC_EXIT_OK);
			ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM requests WHERE target = '/x'"), 1);
			same++;
		}
		rt_done(&t);
	}
	ck_assert_int_gt(refused, 0);
	ck_assert_int_gt(same, 0);
}
END_TEST

/* A PEER_GONE note of pid PID's ring at AT in bp-logd's stream L. */
static void gen_gone(struct gen_thr *l, int64_t at, uint32_t pid,
		     struct gen_thr *of)
{
	struct bt_event ev;
	char text[96];

	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_LOGD;
	ev.flags = BT_LN_PEER_GONE;
	ev.pid = pid;
	snprintf(text, sizeof text, "ring=%016llx blocks=1 lost=0",
		 (unsigned long long)gen_proc_ring(gen_thr_proc(of)));
	ev.str = text;
	ev.str_len = (uint32_t)strlen(text);
	gen_ev(l, at, &ev);
}

/*
 * The same client, on a host whose logs have bp-logd's notes: bp-logd
 * says its tracer is gone (PEER_GONE) at NOTE, before the server's read
 * (150) or after it (400).  Its stream ends at that note, at once as in
 * steps: for every number of steps the rows of the merge at once, no
 * refusal (where the stepped merge without notes refuses, above), and
 * the read counts as from an untraced peer.  (What the note changes at
 * once, against ending at the end of the merge, shows in a CGI stack's
 * rows: docs/reconstruct.md, "The merge in steps".)
 */
START_TEST(gone_sender_ends_at_its_note)
{
	static const int64_t notes[] = { 150, 400 };

	for (size_t n = 0; n < 2; n++) {
		char *want = NULL;
		for (int steps = 0; steps <= 30; steps += steps < 4 ? 1 : 13) {
			struct rt t;
			struct gen *g = gen_new();
			struct gen_host *h = gen_host(g, "web", 0, 0);
			struct gen_proc *lp = gen_proc(h, 50, "/usr/sbin/bp-logd");
			struct gen_thr *a = gen_proc_main(h, 500, "/usr/bin/client", 0);
			struct gen_thr *b = gen_proc_main(h, 600, "/usr/bin/server", 0);
			struct gen_thr *k = gen_proc_main(h, 700, "/usr/bin/ticker", 0);

			gen_proc_set_ring(lp, 0);
			struct gen_thr *l = gen_thread(lp, 0, 50, 0, 0);
			gen_tcp(a, 100, 4, BT_CR_CONNECT, "10.0.0.1:40000", "10.0.0.2:80");
			gen_cut(a);
			gen_accept(b, 105, 5, 3, "10.0.0.2:80", "10.0.0.1:40000");
			gen_cut(b);
			gen_msg(b, 300, 5, BT_DIR_IN, BT_MK_REQUEST, BT_PROTO_HTTP,
				80, 0, 0, 0, GEN_A(BT_AK_METHOD, "GET"),
				GEN_A(BT_AK_TARGET, "/x"), 0);
			for (int i = 0; i < 40; i++) {
				gen_open(k, 10 + i * 10, 9, "/etc/hosts");
				gen_close(k, 12 + i * 10, 9);
				gen_cut(k);
			}
			gen_gone(l, notes[n], 500, a);
			gen_cut(l);

			rt_init(&t);
			t.steps = steps;
			rt_write(&t, g, NULL);
			ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
			ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM warnings WHERE text LIKE '%%pid 600: the peer of fd 5 closed without logging the send%%'"), 1);
			char *got = dump(&t);
			if (!want)
				want = got;
			else {
				same_text(want, got, steps);
				free(got);
			}
			rt_done(&t);
		}
		free(want);
	}
}
END_TEST

/*
 * A tracer whose PEER_GONE note comes while its stream waits: a middle
 * process reads (300) from a client that never logs its send and is gone
 * at 400, and its own note says it is gone at 350, while it still waits.
 * Released at 400, it reads its last records and ends there, its image
 * gone: at once as in steps (the stepped merge let it run dry instead,
 * past its note, and a server reading from it at 500 then waited until
 * the end: "a stream that stopped while the logs grew kept a record of
 * another waiting" - with exec'd images that start without a wait, the
 * merge in steps of tb-dns-cgi wrote another fragment than at once).
 */
START_TEST(gone_while_waiting_ends_when_read)
{
	char *want = NULL;

	for (int steps = 0; steps <= 30; steps += steps < 6 ? 1 : 12) {
		struct rt t;
		struct gen *g = gen_new();
		struct gen_host *h = gen_host(g, "web", 0, 0);
		struct gen_proc *lp = gen_proc(h, 50, "/usr/sbin/bp-logd");
		struct gen_thr *a = gen_proc_main(h, 500, "/usr/bin/client", 0);
		struct gen_thr *m = gen_proc_main(h, 600, "/usr/bin/middle", 0);
		struct gen_thr *b = gen_proc_main(h, 700, "/usr/bin/server", 0);
		struct gen_thr *k = gen_proc_main(h, 800, "/usr/bin/ticker", 0);

		gen_proc_set_ring(lp, 0);
		struct gen_thr *l = gen_thread(lp, 0, 50, 0, 0);
		gen_tcp(a, 100, 4, BT_CR_CONNECT, "10.0.0.1:40000", "10.0.0.2:80");
		gen_cut(a);
		gen_accept(m, 105, 5, 3, "10.0.0.2:80", "10.0.0.1:40000");
		gen_tcp(m, 110, 6, BT_CR_CONNECT, "10.0.0.2:41000", "10.0.0.3:81");
		gen_cut(m);
		gen_accept(b, 115, 7, 3, "10.0.0.3:81", "10.0.0.2:41000");
		gen_cut(b);
		gen_msg(m, 300, 5, BT_DIR_IN, BT_MK_REQUEST, BT_PROTO_HTTP,
			80, 0, 0, 0, GEN_A(BT_AK_METHOD, "GET"),
			GEN_A(BT_AK_TARGET, "/m"), 0);
		gen_open(m, 320, 9, "/etc/hosts");
		gen_close(m, 330, 9);
		gen_cut(m);
		gen_msg(b, 500, 7, BT_DIR_IN, BT_MK_REQUEST, BT_PROTO_HTTP,
			80, 0, 0, 0, GEN_A(BT_AK_METHOD, "GET"),
			GEN_A(BT_AK_TARGET, "/b"), 0);
		gen_open(b, 520, 9, "/etc/passwd");
		gen_cut(b);
		for (int i = 0; i < 60; i++) {
			/* another process's work, on and on */
			gen_open(k, 10 + i * 10, 9, "/etc/hosts");
			gen_close(k, 12 + i * 10, 9);
			gen_cut(k);
		}
		gen_gone(l, 350, 600, m);
		gen_cut(l);
		gen_gone(l, 400, 500, a);
		gen_cut(l);

		rt_init(&t);
		t.steps = steps;
		rt_write(&t, g, NULL);
		ck_assert_msg(rt_run(&t) == RC_EXIT_OK, "%d steps: %s", steps,
			      rt_stderr(&t));
		ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM requests WHERE target IN ('/m', '/b')"), 2);
		char *got = dump(&t);
		if (!want)
			want = got;
		else {
			same_text(want, got, steps);
			free(got);
		}
		rt_done(&t);
	}
	free(want);
}
END_TEST

/* ---- the whole reconstruction on logs that grow on disk ---------------- */

/* The log shown on disk in steps (rc_options.grow_fn): step k of N shows
 * each segment's leading blocks whose records are all at or before V =
 * t0 + (t1 - t0) k / N (a host's next segment once the one before it is
 * whole, as bp-logd writes them), and W is just before the earliest
 * record not shown, less a millisecond. */
struct dgrow {
	struct grow gr;
	uint64_t first[128][64], last[128][64];   /* per segment and block,
						    Unix ns (none: first
						    UINT64_MAX) */
	int64_t  t0, t1;
	int      k, n;
};

/* Every block's record times, from an index of the whole log. */
static void dgrow_times(struct dgrow *d)
{
	struct rc_ctx f;
	struct rc_options fo;
	struct rc_run *run = calloc(1, sizeof *run);
	const char *fin[1] = { d->gr.from };
	char out[400];

	ck_assert_ptr_nonnull(run);
	snprintf(out, sizeof out, "%s/unused.db", d->gr.to);
	ctx_open(&f, &fo, fin, out);
	for (unsigned k = 0; k < d->gr.nsegs; k++)
		for (unsigned b = 0; b < 64; b++) {
			d->first[k][b] = UINT64_MAX;
			d->last[k][b] = 0;
		}
	d->t0 = INT64_MAX;
	d->t1 = INT64_MIN;
	for (uint32_t i = 0; i < f.nstreams; i++) {
		struct rc_stream *st = &f.streams[i];
		struct rc_rec r;
		struct bt_event ev;
		int64_t delta = 0;

		run->st = st;
		rc_input_cur_reset(&f, run, 0);
		while (rc_input_cur_next(&f, run, &r)) {
			const struct bt_sr_block *b = &f.blocks[st->blk_first + run->cur.bi];
			if (r.type == BT_EV_TIME) {
				uint64_t prev = r.prev_ts;
				if (!delta && bt_ev_decode(r.p, r.len, &ev, &prev) > 0)
					delta = (int64_t)(ev.realtime - ev.ts);
				continue;
			}
			/* its segment and block in D */
			const char *path = rc_file_path(&f, b->file);
			unsigned k = 0, n;
			for (; k < d->gr.nsegs; k++) {
				size_t l = strlen(d->gr.segs[k].rel);
				if (strlen(path) > l &&
				    strcmp(path + strlen(path) - l, d->gr.segs[k].rel) == 0)
					break;
			}
			ck_assert_uint_lt(k, d->gr.nsegs);
			for (n = 0; n < d->gr.segs[k].nends &&
			     d->gr.segs[k].starts[n] != b->foff; n++)
				;
			ck_assert_uint_lt(n, d->gr.segs[k].nends);
			uint64_t t = r.ts + (uint64_t)delta;
			if (t < d->first[k][n])
				d->first[k][n] = t;
			if (t > d->last[k][n])
				d->last[k][n] = t;
			if ((int64_t)t < d->t0)
				d->t0 = (int64_t)t;
			if ((int64_t)t > d->t1)
				d->t1 = (int64_t)t;
		}
	}
	rc_input_run_free(run);
	free(run);
	rc_input_close(&f);
}

static void dgrow_show(struct dgrow *d, int64_t *w)
{
	int64_t v = d->t0 + (int64_t)((double)(d->t1 - d->t0) * d->k / d->n);
	int64_t wm = INT64_MAX;

	for (unsigned k = 0; k < d->gr.nsegs; k++) {
		struct seg *s = &d->gr.segs[k];
		unsigned n = s->shown;
		int gated = k > 0 && same_host(s, &d->gr.segs[k - 1]) &&
			    d->gr.segs[k - 1].shown < d->gr.segs[k - 1].nends;
		while (!gated && n < s->nends &&
		       (d->first[k][n] == UINT64_MAX ||
			(int64_t)d->last[k][n] <= v))
			n++;
		if (n != s->shown)
			show(&d->gr, s, n);
		for (unsigned b = n; b < s->nends; b++)
			if (d->first[k][b] != UINT64_MAX &&
			    (int64_t)d->first[k][b] - 1 < wm)
				wm = (int64_t)d->first[k][b] - 1;
	}
	*w = wm - 1000000;
}

static int dgrow_fn(void *arg, int64_t *w)
{
	struct dgrow *d = arg;

	if (++d->k >= d->n) {
		for (unsigned k = 0; k < d->gr.nsegs; k++)
			if (d->gr.segs[k].shown != d->gr.segs[k].nends)
				show(&d->gr, &d->gr.segs[k], d->gr.segs[k].nends);
		return 0;
	}
	dgrow_show(d, w);
	return 1;
}

/* D grows B's two-host log on disk (B->dir/live) in N steps, shown up to
 * the first step that shows something (the inputs must have a block to
 * begin with); its watermark into *W. */
static void dgrow_begin(struct dgrow *d, const struct rt *b, int n, int64_t *w)
{
	memset(d, 0, sizeof *d);
	snprintf(d->gr.from, sizeof d->gr.from, "%s", b->logs);
	snprintf(d->gr.to, sizeof d->gr.to, "%s/live", b->dir);
	list_host(&d->gr, "web");
	list_host(&d->gr, "db");
	qsort(d->gr.segs, d->gr.nsegs, sizeof d->gr.segs[0], by_rel);
	mkdir(d->gr.to, 0755);
	dgrow_times(d);
	d->n = n;
	int any = 0;
	for (d->k = 1; !any && d->k < d->n; d->k++) {
		dgrow_show(d, w);
		for (unsigned k = 0; k < d->gr.nsegs; k++)
			any |= d->gr.segs[k].shown > 0;
	}
	d->k--;
}

/*
 * The whole reconstruction (rc_run) on a log that grows on disk while it
 * runs: the inputs indexed again (rc_input_more), pass 1 reading on
 * (rc_scan_more), the merge resuming at each watermark: the rows of a
 * reconstruction at once of the finished log, by content, in 5 to 40
 * steps.
 */
START_TEST(grown_on_disk_same_as_at_once)
{
	static const int steps[] = { 5, 12, 40, 12 };
	static struct dgrow d;
	struct rt a;
	int64_t w;

	make_log(&a, 0);
	ck_assert_int_eq(rt_run(&a), RC_EXIT_OK);
	ck_assert_int_ge(a.sum.requests, 400);
	char *want = dump(&a);
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		struct rt b;
		char out[400];

		make_log(&b, 0);
		snprintf(out, sizeof out, "%s/out.db", b.dir);
		dgrow_begin(&d, &b, steps[i], &w);
		ck_assert_int_lt(d.k, d.n - 1);
		/* the last: the channel ends paired in runs of 16, the
		 * runs sorted before kept as they are (pair.c) */
		if (i == 3)
			b.pair_run = 16;
		b.live = d.gr.to;
		b.grow_fn = dgrow_fn;
		b.grow_arg = &d;
		b.hold_ns = 100000;
		int rb = rt_run(&b);
		ck_assert_msg(rb == RC_EXIT_OK, "%d steps: exit %d: %s",
			      steps[i], rb, rt_stderr(&b));
		ck_assert_int_eq(d.k, steps[i]);     /* it grew every time */
		char *got = dump(&b);
		ck_assert_uint_gt(strlen(got), 10000);
		same_text(want, got, steps[i]);
		free(got);
		rt_done(&b);
	}
	free(want);
	rt_done(&a);
}
END_TEST


/* The value of stats key KEY in database PATH (-1: none). */
static int64_t db_stat(const char *path, const char *key)
{
	sqlite3 *h;
	sqlite3_stmt *s;
	int64_t v = -1;

	ck_assert_int_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(h, "SELECT value FROM stats WHERE key = ?",
					    -1, &s, NULL), SQLITE_OK);
	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(h);
	return v;
}

/*
 * The keeper of --follow (keeper.c) on a log that grows on disk: at each
 * step a pass whose child finishes the kept merge over the logs as they
 * are, against rc_run at once over the same logs (rc_keeper_compare: every
 * table's rows), then the keeper merges on to the step's watermark.  With
 * the window's rows (rc_options.rows_from_ns) and the peers expected
 * (pending_ns) as --follow sets them; no pass may need the fallback.
 */
START_TEST(keeper_same_as_at_once)
{
	static const int steps[] = { 6, 25 };
	static struct dgrow d;
	int64_t w;

	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		struct rt b;
		char pass[400], once[400], why[1024];
		const char *in[1];

		make_log_x(&b, 0, 1);
		snprintf(pass, sizeof pass, "%s/pass.db", b.dir);
		snprintf(once, sizeof once, "%s/once.db", b.dir);
		dgrow_begin(&d, &b, steps[i], &w);
		int first = d.k;
		in[0] = d.gr.to;
		FILE *err = fopen(b.err, "w");
		ck_assert_ptr_nonnull(err);
		struct rc_options o = {
			.inputs = in, .ninputs = 1, .output = pass,
			.progress = 0, .quiet = 1, .err = err, .no_patterns = 1,
			.hold_ns = 100000,
			.pending_new_ns = 10000000,
			/* the second: channel ends paired in runs of 16
			 * (the keeper's runs sorted before kept as they
			 * are, pair.c) */
			.pair_run = i == 1 ? 16 : 0,
		};
		struct rc_keeper *k = NULL;
		int passes = 0, requests = 0, renewed = 0;
		int64_t left_out = 0;
		for (;;) {
			struct rc_summary ks, as;
			int64_t used = -1;
			/* the rows of the requests that began in the last
			 * half of what the logs have (--follow's window);
			 * the peers expected from W on */
			o.output = pass;
			o.pending_ns = w + 1000000;
			o.rows_from_ns = d.t0 + (w - d.t0) / 2;
			if (!k)
				k = rc_keeper_start(&o, passes ? w : INT64_MIN);
			ck_assert_ptr_nonnull(k);
			int r = rc_keeper_pass(k, &o, w, 0, &ks, &used, why, sizeof why);
			ck_assert_msg(r == RC_EXIT_OK, "%d steps, step %d: %s",
				      steps[i], d.k, why);
			/* the pass's own window: the keeper spooled the
			 * rows since its first, and the replay left out
			 * those before this one's (rc_options.row_keys;
			 * without that, attrs, messages and spans more) */
			ck_assert_int_eq(used, o.rows_from_ns);
			ck_assert_int_gt(used, 0);
			o.output = once;
			o.rows_from_ns = used;
			ck_assert_int_eq(rc_run(&o, &as), RC_EXIT_OK);
			int c = rc_keeper_compare(pass, once, NULL, why, sizeof why);
			ck_assert_msg(c == 0, "%d steps, step %d: %s", steps[i],
				      d.k, why);
			ck_assert_uint_eq(ks.events, as.events);
			ck_assert_uint_eq(ks.requests, as.requests);
			ck_assert_uint_eq(ks.pending, as.pending);
			requests = (int)as.requests;
			/* of the requests before the window, those no row
			 * names are left out alike (db_rows.c) */
			left_out += db_stat(pass, "follow_requests_left_out");
			ck_assert_int_eq(db_stat(pass, "follow_requests_left_out"),
					 db_stat(once, "follow_requests_left_out"));
			passes++;
			/* half way: a keeper anew, with its own window */
			if (passes == steps[i] / 2) {
				rc_keeper_stop(k);
				k = NULL;
				renewed++;
			}
			if (!dgrow_fn(&d, &w))
				break;
		}
		rc_keeper_stop(k);
		fclose(err);
		/* the comparison sees a difference: one span's status */
		sqlite3 *h;
		ck_assert_int_eq(sqlite3_open(pass, &h), SQLITE_OK);
		ck_assert_int_eq(sqlite3_exec(h, "UPDATE spans SET status = 999 WHERE span_id = (SELECT max(span_id) FROM spans)",
					      NULL, NULL, NULL), SQLITE_OK);
		sqlite3_close(h);
		ck_assert_int_eq(rc_keeper_compare(pass, once, NULL, why, sizeof why), 1);
		ck_assert_ptr_nonnull(strstr(why, "table spans"));
		ck_assert_int_eq(passes, steps[i] - first);
		ck_assert_int_ge(passes, 3);
		ck_assert_int_eq(renewed, 1);
		ck_assert_int_ge(requests, 100);
		ck_assert_int_gt(left_out, 0);
		rt_done(&b);
	}
}
END_TEST

Suite *recon_more_suite(void)
{
	Suite *s = suite_create("recon_more");
	TCase *tc = tcase_create("more");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, grows_as_a_fresh_index, 0, 4);
	tcase_add_test(tc, refuses_what_is_not_growth);
	suite_add_tcase(s, tc);
	tc = tcase_create("steps");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, steps_same_as_at_once);
	tcase_add_test(tc, grown_on_disk_same_as_at_once);
	tcase_add_test(tc, keeper_same_as_at_once);
	tcase_add_test(tc, stopped_sender_refused);
	tcase_add_test(tc, gone_sender_ends_at_its_note);
	tcase_add_test(tc, gone_while_waiting_ends_when_read);
	suite_add_tcase(s, tc);
	return s;
}
