/*
 * genbig.c - bp-genbig: a large BorderPatrol log for measuring
 * bp-reconstruct (benchmark 8), written as it is generated so the
 * generator's memory does not grow with the log.
 *
 *   bp-genbig [-n EVENTS] [-F HOSTS] [-A HOSTS] [-D HOSTS] [-w WORKERS]
 *             [-c CONCURRENCY] [-f FORK_EVERY] DIR
 *
 * A three-tier system on F front hosts (one process each, W worker
 * threads), A application hosts and D database hosts.  Each front worker
 * keeps one persistent connection to a thread of an application host,
 * which keeps one to a thread of a database host: F x W lanes.  Requests
 * from untraced clients arrive at CONCURRENCY in flight on average
 * (request k starts at k x 185 us / CONCURRENCY and takes 185 us), lane
 * k mod (F x W).  A request is 13 records on three hosts: the front
 * accepts the client, reads its HTTP request, calls the application,
 * which queries the database, which opens a file and answers; the
 * replies travel back and the front closes the client.  Every
 * FORK_EVERY-th request (default 20; 0: never) the front forks a child
 * that writes the reply (a new process image per such request, 7 more
 * records).  Hosts' monotonic clocks differ by seconds and their wall
 * clocks by up to 1.5 s.  Streams are cut into blocks of at most 64 KiB,
 * each later block opening with a TIME record as a ring lap does;
 * segments of 64 MiB go to DIR/<host>/.
 *
 * It stops after the first request that brings the record count to
 * EVENTS (default 1000000) and prints "events=N requests=R hosts=H
 * processes=P bytes=B".
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "btrace/event.h"
#include "btrace/proto.h"
#include "btrace/segment.h"

#define MONO_BASE  (1000ll * 1000000000ll)
#define EPOCH_BASE 1767225600000000000ll      /* 2026-01-01 UTC */
#define BLOCK_MAX  65536u
#define SEG_MAX    (64u << 20)
#define REQ_NS     185000ll                   /* one request, end to end */

struct host {
	char     name[32];
	int64_t  mono_shift, real_shift;
	uint64_t boot;
	int      fd;                  /* current segment */
	uint64_t seg_bytes;
	unsigned seq;
	char     dir[4096];
};

struct stream {
	struct host *h;
	uint64_t ring;
	uint32_t pid;
	uint16_t slot;
	uint64_t prev_ts;
	int64_t  last_at;             /* true ns of the last record */
	uint64_t soff;                /* stream offset of buf[0] */
	uint32_t len;
	uint8_t  buf[BLOCK_MAX];
};

struct end { uint64_t off[2]; };

static uint64_t nevents, nbytes, nprocs;

static void die(const char *what)
{
	fprintf(stderr, "bp-genbig: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t mono(const struct host *h, int64_t at)
{
	return (uint64_t)(MONO_BASE + h->mono_shift + at);
}

static uint64_t real(const struct host *h, int64_t at)
{
	return (uint64_t)(EPOCH_BASE + h->real_shift + at);
}

static long wr(int fd, const void *buf, size_t len)
{
	return (long)write(fd, buf, len);
}

static void seg_open(struct host *h, int64_t at)
{
	char path[4200];
	struct bt_seg_header sh;
	uint8_t hb[BT_SEG_HDR_SIZE];

	if (h->fd >= 0)
		close(h->fd);
	snprintf(path, sizeof path, "%s/%06u%s", h->dir, h->seq, BT_SEG_SUFFIX);
	h->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (h->fd < 0)
		die(path);
	memset(&sh, 0, sizeof sh);
	sh.created_mono = mono(h, at);
	sh.created_real = real(h, at);
	snprintf(sh.host, sizeof sh.host, "%s", h->name);
	sh.boot_id = h->boot;
	sh.writer = BT_SEG_BY_LOGD;
	sh.writer_pid = 1;
	sh.seq = h->seq++;
	bt_seg_header_encode(hb, &sh);
	if (write(h->fd, hb, sizeof hb) != (ssize_t)sizeof hb)
		die("write");
	h->seg_bytes = sizeof hb;
	nbytes += sizeof hb;
}

/* Write S's buffered records as one block; the next block opens with a
 * TIME record carrying the time of the last one, as after a ring lap. */
static void flush(struct stream *s, int more)
{
	struct bt_blk_header bh;

	if (!s->len)
		return;
	if (s->h->fd < 0 || s->h->seg_bytes > SEG_MAX)
		seg_open(s->h, s->last_at);
	memset(&bh, 0, sizeof bh);
	bh.len = s->len;
	bh.ring_id = s->ring;
	bh.pid = s->pid;
	bh.slot = s->slot;
	bh.stream_off = s->soff;
	if (bt_seg_write_block(s->h->fd, wr, &bh, s->buf) < 0)
		die("writing a block");
	s->h->seg_bytes += BT_BLK_HDR_SIZE + s->len;
	nbytes += BT_BLK_HDR_SIZE + s->len;
	s->soff += s->len;
	s->len = 0;
	if (more) {
		struct bt_event te;
		uint64_t p = 0;
		memset(&te, 0, sizeof te);
		te.type = BT_EV_TIME;
		te.ts = s->prev_ts;
		te.realtime = real(s->h, s->last_at);
		s->len = (uint32_t)bt_ev_encode(s->buf, BLOCK_MAX, &te, &p);
		nevents++;
	}
}

/* Append EV at true time AT (ns) to S.  A record that does not fit the
 * block goes to the next one, after its TIME record (which carries the
 * previous record's time, so the record's delta is the same). */
static void put(struct stream *s, int64_t at, struct bt_event *ev)
{
	uint8_t tmp[BT_EV_MAX_RECORD];
	uint64_t prev = s->prev_ts;
	size_t n;

	if (at < s->last_at)
		at = s->last_at;
	ev->ts = mono(s->h, at);
	n = bt_ev_encode(tmp, sizeof tmp, ev, &prev);
	if (!n) {
		fprintf(stderr, "bp-genbig: a record does not encode\n");
		exit(1);
	}
	if (s->len + n > BLOCK_MAX)
		flush(s, 1);
	memcpy(s->buf + s->len, tmp, n);
	s->len += (uint32_t)n;
	s->prev_ts = prev;
	s->last_at = at;
	nevents++;
}

static struct stream *stream_new(struct host *h, uint64_t ring, uint32_t pid,
				 uint16_t slot, int64_t at, uint32_t tid,
				 uint32_t ptid)
{
	struct stream *s = calloc(1, sizeof *s);
	struct bt_event ev;

	if (!s)
		die("calloc");
	s->h = h;
	s->ring = ring;
	s->pid = pid;
	s->slot = slot;
	s->last_at = at;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_TIME;
	ev.realtime = real(h, at);
	put(s, at, &ev);
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_THREAD_START;
	ev.tid = tid;
	ev.ptid = ptid;
	ev.pid = pid;
	put(s, at, &ev);
	return s;
}

static void proc_start(struct stream *s, int64_t at, uint32_t ppid,
		       uint32_t ptid, uint32_t flags, const char *exe)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_PROC_START;
	ev.pid = s->pid;
	ev.ppid = ppid;
	ev.ptid = ptid;
	ev.flags = flags;
	ev.realtime = real(s->h, at);
	ev.str = exe;
	ev.str_len = (uint32_t)strlen(exe);
	ev.str2 = exe;
	ev.str2_len = ev.str_len;
	put(s, at, &ev);
	nprocs++;
}

static void addr(struct bt_addr *a, uint32_t ip, uint16_t port)
{
	memset(a, 0, sizeof *a);
	a->family = BT_AF_INET;
	a->addr[0] = (uint8_t)(ip >> 24);
	a->addr[1] = (uint8_t)(ip >> 16);
	a->addr[2] = (uint8_t)(ip >> 8);
	a->addr[3] = (uint8_t)ip;
	a->port = port;
}

static void tcp(struct stream *s, int64_t at, int fd, int role, uint32_t lip,
		uint16_t lport, uint32_t rip, uint16_t rport)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_CHAN;
	ev.fd = fd;
	ev.fd2 = role == BT_CR_ACCEPT ? 3 : -1;
	ev.chan_kind = BT_CK_TCP;
	ev.role = (uint8_t)role;
	addr(&ev.local, lip, lport);
	addr(&ev.remote, rip, rport);
	put(s, at, &ev);
}

static void msg(struct stream *s, int64_t at, int fd, struct end *e, int dir,
		int kind, int proto, uint64_t len, uint32_t status,
		int k1, const char *v1, int k2, const char *v2)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_MSG;
	ev.fd = fd;
	ev.dir = (uint8_t)dir;
	ev.kind = (uint8_t)kind;
	ev.proto = (uint8_t)proto;
	ev.off = e->off[dir];
	ev.len = len;
	ev.status = status;
	if (k1) {
		ev.attr[ev.nattr].key = (uint8_t)k1;
		ev.attr[ev.nattr].val = v1;
		ev.attr[ev.nattr].len = (uint16_t)strlen(v1);
		ev.nattr++;
	}
	if (k2) {
		ev.attr[ev.nattr].key = (uint8_t)k2;
		ev.attr[ev.nattr].val = v2;
		ev.attr[ev.nattr].len = (uint16_t)strlen(v2);
		ev.nattr++;
	}
	put(s, at, &ev);
	e->off[dir] += len;
}

static void simple(struct stream *s, int64_t at, int type, int fd,
		   int64_t result, const char *str)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = (uint8_t)type;
	ev.fd = fd;
	ev.result = result;
	if (str) {
		ev.str = str;
		ev.str_len = (uint32_t)strlen(str);
	}
	put(s, at, &ev);
}

#define IP(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | \
			(uint32_t)(c) << 8 | (uint32_t)(d))
/* Descriptors of the I-th thread of a process (threads share the table). */
#define FD_CLIENT(i) (10 + 4 * (i))
#define FD_UP(i)     (11 + 4 * (i))    /* connection to the next tier */
#define FD_FILE(i)   (12 + 4 * (i))

int main(int argc, char **argv)
{
	long long target = 1000000;
	int F = 8, A = 4, D = 2, W = 16, conc = 64, fork_every = 20, opt;

	while ((opt = getopt(argc, argv, "n:F:A:D:w:c:f:h")) != -1) {
		switch (opt) {
		case 'n': target = atoll(optarg); break;
		case 'F': F = atoi(optarg); break;
		case 'A': A = atoi(optarg); break;
		case 'D': D = atoi(optarg); break;
		case 'w': W = atoi(optarg); break;
		case 'c': conc = atoi(optarg); break;
		case 'f': fork_every = atoi(optarg); break;
		case 'h':
			printf("usage: bp-genbig [-n EVENTS] [-F HOSTS] [-A HOSTS] "
			       "[-D HOSTS] [-w WORKERS] [-c CONCURRENCY] "
			       "[-f FORK_EVERY] DIR\n(see bench/genbig.c)\n");
			return 0;
		default:
			fprintf(stderr, "bp-genbig: bad usage (-h for help)\n");
			return 2;
		}
	}
	if (optind != argc - 1 || target < 1 || F < 1 || F > 200 || A < 1 ||
	    A > 200 || D < 1 || D > 200 || W < 1 || W > 1000 || conc < 1 ||
	    fork_every < 0) {
		fprintf(stderr, "bp-genbig: bad usage (-h for help)\n");
		return 2;
	}
	int L = F * W;
	if (L <= conc) {
		fprintf(stderr, "bp-genbig: %d lanes (-F x -w) cannot carry %d "
			"requests in flight: raise -w\n", L, conc);
		return 2;
	}
	const char *dir = argv[optind];
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		die(dir);

	int H = F + A + D;
	struct host *hosts = calloc((size_t)H, sizeof *hosts);
	if (!hosts)
		die("calloc");
	for (int i = 0; i < H; i++) {
		struct host *h = &hosts[i];
		const char *tier = i < F ? "web" : i < F + A ? "app" : "db";
		int n = i < F ? i : i < F + A ? i - F : i - F - A;
		snprintf(h->name, sizeof h->name, "%s%d", tier, n + 1);
		h->mono_shift = (int64_t)(i * 7919 % 13 - 6) * 1000000000ll +
				i * 1234567;
		h->real_shift = (int64_t)(i * 104729 % 31 - 15) * 100000000ll;
		h->boot = 0xb0070000ull + (uint64_t)i;
		h->fd = -1;
		snprintf(h->dir, sizeof h->dir, "%s/%s", dir, h->name);
		if (mkdir(h->dir, 0755) < 0 && errno != EEXIST)
			die(h->dir);
	}
	/* processes: one per host; pid 1000 + host index */
	struct stream **fs = calloc((size_t)L, sizeof *fs);
	struct stream **as = calloc((size_t)L, sizeof *as);
	struct stream **ds = calloc((size_t)L, sizeof *ds);
	struct end *f_up = calloc((size_t)L, sizeof *f_up);
	struct end *a_in = calloc((size_t)L, sizeof *a_in);
	struct end *a_up = calloc((size_t)L, sizeof *a_up);
	struct end *d_in = calloc((size_t)L, sizeof *d_in);
	int *aslot = calloc((size_t)H, sizeof *aslot);
	int *aidx = calloc((size_t)L, sizeof *aidx);   /* lane's app thread */
	int *didx = calloc((size_t)L, sizeof *didx);   /* lane's db thread */
	if (!fs || !as || !ds || !f_up || !a_in || !a_up || !d_in || !aslot ||
	    !aidx || !didx)
		die("calloc");
	static const char *const exe[3] = { "/usr/sbin/nginx",
		"/usr/sbin/php-fpm8.2", "/usr/lib/postgresql/15/bin/postgres" };
	for (int l = 0; l < L; l++) {
		int f = l / W, w = l % W, a = F + l % A, d = F + A + l % D;
		struct host *hf = &hosts[f], *ha = &hosts[a], *hd = &hosts[d];
		uint32_t fpid = 1000 + (uint32_t)f, apid = 1000 + (uint32_t)a,
			 dpid = 1000 + (uint32_t)d;
		uint32_t fip = IP(10, 1, 0, f + 1), aip = IP(10, 2, 0, a + 1),
			 dip = IP(10, 3, 0, d + 1);
		int sa = aslot[a]++, sd = aslot[d]++;
		aidx[l] = sa;
		didx[l] = sd;
		fs[l] = stream_new(hf, 0x5a00000000000000ull | fpid, fpid,
				   (uint16_t)w, 0, fpid * 100 + (uint32_t)w,
				   w ? fpid * 100 : 0);
		if (w == 0)
			proc_start(fs[l], 0, 1, 0, 0, exe[0]);
		as[l] = stream_new(ha, 0x5b00000000000000ull | apid, apid,
				   (uint16_t)sa, 0, apid * 100 + (uint32_t)sa,
				   sa ? apid * 100 : 0);
		if (sa == 0)
			proc_start(as[l], 0, 1, 0, 0, exe[1]);
		ds[l] = stream_new(hd, 0x5c00000000000000ull | dpid, dpid,
				   (uint16_t)sd, 0, dpid * 100 + (uint32_t)sd,
				   sd ? dpid * 100 : 0);
		if (sd == 0)
			proc_start(ds[l], 0, 1, 0, 0, exe[2]);
		tcp(fs[l], 1000, FD_UP(w), BT_CR_CONNECT, fip,
		    (uint16_t)(41000 + w), aip, 8000);
		tcp(as[l], 2000, FD_CLIENT(sa), BT_CR_ACCEPT, aip, 8000, fip,
		    (uint16_t)(41000 + w));
		tcp(as[l], 3000, FD_UP(sa), BT_CR_CONNECT, aip,
		    (uint16_t)(42000 + sa), dip, 5432);
		tcp(ds[l], 4000, FD_CLIENT(sd), BT_CR_ACCEPT, dip, 5432, aip,
		    (uint16_t)(42000 + sa));
	}

	long long k;
	uint32_t next_child = 100000;
	int64_t step = REQ_NS / conc;
	for (k = 0; (long long)nevents < target; k++) {
		int l = (int)(k % L);
		int64_t S = 10000 + k * step;
		struct stream *f = fs[l], *a = as[l], *d = ds[l];
		int wi = l % W, ai = aidx[l], di = didx[l];
		struct end cl = { { 0, 0 } };
		char target_s[48], sql[64], tag[24];
		uint32_t cip = IP(172, 16 + (k >> 16) % 16, (k >> 8) & 255, k & 255);

		snprintf(target_s, sizeof target_s, "/item/%lld?v=%lld", k % 97, k);
		snprintf(sql, sizeof sql, "SELECT * FROM items WHERE id = %lld",
			 k % 97);
		snprintf(tag, sizeof tag, "SELECT %lld", 1 + k % 3);
		tcp(f, S, FD_CLIENT(wi), BT_CR_ACCEPT, IP(10, 1, 0, l / W + 1), 80,
		    cip, (uint16_t)(20000 + k % 40000));
		msg(f, S + 5000, FD_CLIENT(wi), &cl, BT_DIR_IN, BT_MK_REQUEST,
		    BT_PROTO_HTTP, 90, 0, BT_AK_METHOD, "GET", BT_AK_TARGET,
		    target_s);
		msg(f, S + 10000, FD_UP(wi), &f_up[l], BT_DIR_OUT, BT_MK_REQUEST,
		    BT_PROTO_FASTCGI, 420, 0, BT_AK_FCGI_SCRIPT, "/srv/app.php",
		    BT_AK_FCGI_URI, target_s);
		msg(a, S + 40000, FD_CLIENT(ai), &a_in[l], BT_DIR_IN, BT_MK_REQUEST,
		    BT_PROTO_FASTCGI, 420, 0, BT_AK_FCGI_SCRIPT, "/srv/app.php",
		    BT_AK_FCGI_URI, target_s);
		msg(a, S + 50000, FD_UP(ai), &a_up[l], BT_DIR_OUT, BT_MK_REQUEST,
		    BT_PROTO_PGSQL, 60, 0, BT_AK_SQL, sql, 0, NULL);
		msg(d, S + 80000, FD_CLIENT(di), &d_in[l], BT_DIR_IN, BT_MK_REQUEST,
		    BT_PROTO_PGSQL, 60, 0, BT_AK_SQL, sql, 0, NULL);
		simple(d, S + 85000, BT_EV_OPEN, -100, FD_FILE(di), "base/16384/2619");
		msg(d, S + 100000, FD_CLIENT(di), &d_in[l], BT_DIR_OUT, BT_MK_REPLY,
		    BT_PROTO_PGSQL, 400, 0, BT_AK_TAG, tag, 0, NULL);
		msg(a, S + 130000, FD_UP(ai), &a_up[l], BT_DIR_IN, BT_MK_REPLY,
		    BT_PROTO_PGSQL, 400, 0, BT_AK_TAG, tag, 0, NULL);
		msg(a, S + 140000, FD_CLIENT(ai), &a_in[l], BT_DIR_OUT, BT_MK_REPLY,
		    BT_PROTO_FASTCGI, 900, 0, 0, NULL, 0, NULL);
		msg(f, S + 170000, FD_UP(wi), &f_up[l], BT_DIR_IN, BT_MK_REPLY,
		    BT_PROTO_FASTCGI, 900, 0, 0, NULL, 0, NULL);
		if (fork_every && k % fork_every == fork_every - 1) {
			/* a child answers on the inherited socket */
			uint32_t cpid = next_child++, fpid = f->pid;
			struct bt_event ev;
			struct stream *c;
			memset(&ev, 0, sizeof ev);
			ev.type = BT_EV_FORK;
			ev.result = cpid;
			put(f, S + 172000, &ev);
			c = stream_new(f->h, 0x5d00000000000000ull | cpid, cpid, 0,
				       S + 173000, cpid, 0);
			proc_start(c, S + 173000, fpid, fpid * 100 + (uint32_t)wi,
				   BT_PF_FORKED, exe[0]);
			simple(c, S + 175000, BT_EV_OPEN, -100, FD_FILE(wi),
			       "/srv/www/page.tpl");
			msg(c, S + 180000, FD_CLIENT(wi), &cl, BT_DIR_OUT, BT_MK_REPLY,
			    BT_PROTO_HTTP, 950, 200, 0, NULL, 0, NULL);
			simple(c, S + 181000, BT_EV_CLOSE, FD_CLIENT(wi), 0, NULL);
			simple(c, S + 182000, BT_EV_THREAD_EXIT, 0, 0, NULL);
			flush(c, 0);
			free(c);
		} else {
			msg(f, S + 180000, FD_CLIENT(wi), &cl, BT_DIR_OUT, BT_MK_REPLY,
			    BT_PROTO_HTTP, 950, 200, 0, NULL, 0, NULL);
		}
		simple(f, S + 185000, BT_EV_CLOSE, FD_CLIENT(wi), 0, NULL);
	}
	for (int l = 0; l < L; l++) {
		flush(fs[l], 0);
		flush(as[l], 0);
		flush(ds[l], 0);
		free(fs[l]);
		free(as[l]);
		free(ds[l]);
	}
	for (int i = 0; i < H; i++)
		if (hosts[i].fd >= 0 && close(hosts[i].fd) < 0)
			die("close");
	printf("events=%llu requests=%lld hosts=%d processes=%llu bytes=%llu\n",
	       (unsigned long long)nevents, k, H, (unsigned long long)nprocs,
	       (unsigned long long)nbytes);
	free(fs); free(as); free(ds); free(f_up); free(a_in); free(a_up);
	free(d_in); free(aslot); free(aidx); free(didx); free(hosts);
	return 0;
}
