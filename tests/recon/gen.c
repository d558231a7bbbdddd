/*
 * gen.c - scripted BorderPatrol logs (see gen.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include "btrace/segment.h"
#include "gen.h"

#define MONO_BASE  (1000ll * 1000000000ll)        /* 1000 s after boot */
#define EPOCH_BASE 1767225600000000000ll          /* 2026-01-01 UTC */

struct gend {                   /* one channel end: shared offsets */
	uint64_t off[2];
	int      dgram;
};

struct grec {                   /* one record of a thread's stream */
	uint64_t off;           /* in the thread's encoded bytes */
	uint64_t ts;            /* its monotonic time */
	int64_t  at;            /* true time, ns */
	int      cut_before;    /* a block boundary before this record */
};

struct gen_thr {
	struct gen_proc *p;
	unsigned slot;
	int      cut_next;
	int64_t  last;
	uint64_t prev_ts;       /* encoder's time base */
	struct bt_ev_dict *wd;  /* gen_write's dictionary (opts dict) */
	uint64_t dprev, eprev;  /* its decoder's and encoder's time bases */
	uint8_t *bytes;         /* the stream, encoded */
	size_t   nbytes, capbytes;
	struct grec *v;
	size_t   n, cap;
};

struct gen_proc {
	struct gen_host *h;
	uint32_t pid;
	uint64_t ring;
	char    *exe;
	struct gend *fds[256];
	unsigned nthr;
};

struct gen_host {
	struct gen      *g;
	struct gen_host *base;  /* the host itself, or the host of a namespace */
	char     name[64];
	uint64_t boot;
	int64_t  mono_shift, real_shift;
	unsigned nproc;
};

struct gen {
	struct gen_host **hosts; unsigned nhosts;
	struct gen_proc **procs; unsigned nprocs;
	struct gen_thr  **thrs;  unsigned nthrs;
	struct gend     **ends;  unsigned nends;
};

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "gen: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n, sz);
	if (!p)
		die("out of memory");
	return p;
}

#define PUSH(arr, n, x) do { \
	void *np_ = realloc((arr), ((n) + 1) * sizeof *(arr)); \
	if (!np_) die("out of memory"); \
	(arr) = np_; (arr)[(n)++] = (x); } while (0)

struct gen *gen_new(void)
{
	return xcalloc(1, sizeof(struct gen));
}

void gen_free(struct gen *g)
{
	if (!g)
		return;
	for (unsigned i = 0; i < g->nthrs; i++) {
		free(g->thrs[i]->bytes);
		free(g->thrs[i]->wd);
		free(g->thrs[i]->v);
		free(g->thrs[i]);
	}
	for (unsigned i = 0; i < g->nprocs; i++) {
		free(g->procs[i]->exe);
		free(g->procs[i]);
	}
	for (unsigned i = 0; i < g->nhosts; i++)
		free(g->hosts[i]);
	for (unsigned i = 0; i < g->nends; i++)
		free(g->ends[i]);
	free(g->thrs);
	free(g->procs);
	free(g->hosts);
	free(g->ends);
	free(g);
}

int64_t gen_epoch(int64_t at_us)
{
	return EPOCH_BASE + at_us * GEN_US;
}

struct gen_host *gen_host(struct gen *g, const char *name, int64_t mono_shift,
			  int64_t real_shift)
{
	struct gen_host *h = xcalloc(1, sizeof *h);
	h->g = g;
	h->base = h;
	snprintf(h->name, sizeof h->name, "%s", name);
	h->boot = 0x1000 + g->nhosts;
	h->mono_shift = mono_shift;
	h->real_shift = real_shift;
	PUSH(g->hosts, g->nhosts, h);
	return h;
}

struct gen_host *gen_host_ns(struct gen_host *h, int64_t mono_shift)
{
	struct gen_host *n = gen_host(h->g, h->name, h->mono_shift + mono_shift,
				      h->real_shift);
	n->base = h->base;
	n->boot = h->base->boot;
	return n;
}

uint64_t gen_mono(const struct gen_host *h, int64_t at_us)
{
	return (uint64_t)(MONO_BASE + h->mono_shift + at_us * GEN_US);
}

static uint64_t mono_ns(const struct gen_host *h, int64_t at_ns)
{
	return (uint64_t)(MONO_BASE + h->mono_shift + at_ns);
}

static uint64_t real_ns(const struct gen_host *h, int64_t at_ns)
{
	return (uint64_t)(EPOCH_BASE + h->base->real_shift + at_ns);
}

struct gen_proc *gen_proc(struct gen_host *h, uint32_t pid, const char *exe)
{
	struct gen *g = h->g;
	struct gen_proc *p = xcalloc(1, sizeof *p);
	p->h = h;
	p->pid = pid;
	p->ring = 0x5a00000000000000ull | (uint64_t)g->nprocs << 16 | pid;
	p->exe = strdup(exe);
	PUSH(g->procs, g->nprocs, p);
	h->nproc++;
	return p;
}

uint64_t gen_proc_ring(const struct gen_proc *p)
{
	return p->ring;
}

void gen_proc_set_ring(struct gen_proc *p, uint64_t ring)
{
	p->ring = ring;
}

/* Append the N bytes of one record at TMP, at true time AT (ns) and
 * monotonic time TS, onto T's stream. */
static void push_bytes(struct gen_thr *t, int64_t at, uint64_t ts,
		       const uint8_t *tmp, size_t n)
{
	if (t->nbytes + n > t->capbytes) {
		t->capbytes = (t->capbytes + n) * 2;
		t->bytes = realloc(t->bytes, t->capbytes);
		if (!t->bytes)
			die("out of memory");
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->v = realloc(t->v, t->cap * sizeof *t->v);
		if (!t->v)
			die("out of memory");
	}
	t->v[t->n++] = (struct grec){ .off = t->nbytes, .ts = ts, .at = at,
				      .cut_before = t->cut_next };
	t->cut_next = 0;
	memcpy(t->bytes + t->nbytes, tmp, n);
	t->nbytes += n;
}

/* T's clock at true time AT_US (ns), which must not go backwards. */
static int64_t step(struct gen_thr *t, int64_t at_us)
{
	int64_t at = at_us * GEN_US;

	if (at < t->last)
		die("thread %u of pid %u: time goes backwards (%lld < %lld us)",
		    t->slot, t->p->pid, (long long)at_us,
		    (long long)(t->last / GEN_US));
	t->last = at;
	return at;
}

/* Encode EV at true time AT_US onto T's stream. */
static void push(struct gen_thr *t, int64_t at_us, const struct bt_event *ev)
{
	int64_t at = step(t, at_us);
	uint8_t tmp[BT_EV_MAX_RECORD];
	struct bt_event e = *ev;

	e.ts = mono_ns(t->p->h, at);
	size_t n = bt_ev_encode(tmp, sizeof tmp, &e, &t->prev_ts);
	if (!n)
		die("a record of pid %u does not encode", t->p->pid);
	push_bytes(t, at, e.ts, tmp, n);
}

void gen_raw(struct gen_thr *t, int64_t at_us, int type,
	     const uint8_t *fields, size_t len)
{
	int64_t at = step(t, at_us);
	uint64_t ts = mono_ns(t->p->h, at);
	uint8_t body[BT_EV_MAX_RECORD], tmp[BT_EV_MAX_RECORD];
	size_t b = bt_put_varint(body, ts - t->prev_ts), h = 1;

	if (len > sizeof body - b - 16)
		die("gen_raw: %zu bytes of fields", len);
	memcpy(body + b, fields, len);
	b += len;
	tmp[0] = (uint8_t)type;
	h += bt_put_varint(tmp + 1, b);
	memcpy(tmp + h, body, b);
	t->prev_ts = ts;
	push_bytes(t, at, ts, tmp, h + b);
}

void gen_ev(struct gen_thr *t, int64_t at, const struct bt_event *ev)
{
	push(t, at, ev);
}

struct gen_thr *gen_thread(struct gen_proc *p, int64_t at, uint32_t tid,
			   uint32_t ptid, uint64_t cookie)
{
	struct gen *g = p->h->g;
	struct gen_thr *t = xcalloc(1, sizeof *t);
	struct bt_event ev;

	t->p = p;
	t->slot = p->nthr++;
	PUSH(g->thrs, g->nthrs, t);
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_TIME;
	ev.realtime = real_ns(p->h, at * GEN_US);
	push(t, at, &ev);
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_THREAD_START;
	ev.tid = tid;
	ev.ptid = ptid;
	ev.cookie = cookie;
	ev.pid = p->pid;
	push(t, at, &ev);
	return t;
}

struct gen_thr *gen_proc_main(struct gen_host *h, uint32_t pid,
			      const char *exe, int64_t at)
{
	struct gen_thr *t = gen_thread(gen_proc(h, pid, exe), at, pid, 0, 0);
	gen_proc_start(t, at, 1, 0, BT_PF_ISOLATION); /* the shim's default */
	return t;
}

struct gen_proc *gen_thr_proc(struct gen_thr *t)
{
	return t->p;
}

void gen_proc_start(struct gen_thr *t, int64_t at, uint32_t ppid,
		    uint32_t ptid, uint32_t flags)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_PROC_START;
	ev.pid = t->p->pid;
	ev.ppid = ppid;
	ev.ptid = ptid;
	ev.flags = flags;
	ev.realtime = real_ns(t->p->h, at * GEN_US);
	ev.str = t->p->exe;
	ev.str_len = (uint32_t)strlen(t->p->exe);
	ev.str2 = t->p->exe;
	ev.str2_len = ev.str_len;
	push(t, at, &ev);
}

static struct gend *new_end(struct gen *g, int dgram)
{
	struct gend *e = xcalloc(1, sizeof *e);
	e->dgram = dgram;
	PUSH(g->ends, g->nends, e);
	return e;
}

static void set_fd(struct gen_proc *p, int fd, struct gend *e)
{
	if (fd < 0 || fd >= 256)
		die("fd %d out of the generator's range", fd);
	p->fds[fd] = e;
}

static struct gend *get_fd(struct gen_thr *t, int fd)
{
	if (fd < 0 || fd >= 256 || !t->p->fds[fd])
		die("pid %u: fd %d has no channel in the script", t->p->pid, fd);
	return t->p->fds[fd];
}

/* "a.b.c.d:port" or "[v6]:port" */
static void parse_addr(const char *s, struct bt_addr *a)
{
	unsigned b[4], port;
	memset(a, 0, sizeof *a);
	if (!s)
		return;
	if (s[0] == '[') {
		char host[64];
		const char *e = strchr(s, ']');
		if (!e || e - s - 1 >= (long)sizeof host || e[1] != ':')
			die("bad address '%s'", s);
		memcpy(host, s + 1, (size_t)(e - s - 1));
		host[e - s - 1] = 0;
		if (inet_pton(AF_INET6, host, a->addr) != 1)
			die("bad address '%s'", s);
		a->family = BT_AF_INET6;
		a->port = (uint16_t)strtoul(e + 2, NULL, 10);
		return;
	}
	if (sscanf(s, "%u.%u.%u.%u:%u", &b[0], &b[1], &b[2], &b[3], &port) != 5)
		die("bad address '%s'", s);
	a->family = BT_AF_INET;
	for (int i = 0; i < 4; i++)
		a->addr[i] = (uint8_t)b[i];
	a->port = (uint16_t)port;
}

static void chan(struct gen_thr *t, int64_t at, int fd, int fd2, int kind,
		 int role, const char *local, const char *remote, uint64_t ino,
		 uint64_t peer_ino, const char *path)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_CHAN;
	ev.fd = fd;
	ev.fd2 = fd2;
	ev.chan_kind = (uint8_t)kind;
	ev.role = (uint8_t)role;
	parse_addr(local, &ev.local);
	parse_addr(remote, &ev.remote);
	if (kind == BT_CK_UNIX_STREAM || kind == BT_CK_UNIX_DGRAM) {
		ev.local.family = BT_AF_UNIX;
		ev.remote.family = BT_AF_UNIX;
	}
	ev.ino = ino;
	ev.peer_ino = peer_ino;
	if (path) {
		ev.str = path;
		ev.str_len = (uint32_t)strlen(path);
	}
	push(t, at, &ev);
	set_fd(t->p, fd, new_end(t->p->h->g, kind == BT_CK_UDP ||
				 kind == BT_CK_UNIX_DGRAM));
}

void gen_tcp(struct gen_thr *t, int64_t at, int fd, int role,
	     const char *local, const char *remote)
{
	chan(t, at, fd, -1, BT_CK_TCP, role, local, remote, 0, 0, NULL);
}

void gen_accept(struct gen_thr *t, int64_t at, int fd, int lfd,
		const char *local, const char *remote)
{
	chan(t, at, fd, lfd, BT_CK_TCP, BT_CR_ACCEPT, local, remote, 0, 0, NULL);
}

void gen_udp(struct gen_thr *t, int64_t at, int fd, int role,
	     const char *local, const char *remote)
{
	chan(t, at, fd, -1, BT_CK_UDP, role, local, remote, 0, 0, NULL);
}

void gen_unix(struct gen_thr *t, int64_t at, int fd, int role, uint64_t ino,
	      uint64_t peer_ino, const char *path)
{
	chan(t, at, fd, -1, BT_CK_UNIX_STREAM, role, NULL, NULL, ino, peer_ino,
	     path);
}

void gen_pipe(struct gen_thr *t, int64_t at, int rfd, int wfd, uint64_t ino)
{
	chan(t, at, rfd, wfd, BT_CK_PIPE, BT_CR_PIPE_READ, NULL, NULL, ino, 0,
	     NULL);
	chan(t, at, wfd, rfd, BT_CK_PIPE, BT_CR_PIPE_WRITE, NULL, NULL, ino, 0,
	     NULL);
}

void gen_inherit_pipe(struct gen_thr *t, int64_t at, int fd, uint64_t ino)
{
	chan(t, at, fd, -1, BT_CK_PIPE, BT_CR_INHERITED, NULL, NULL, ino, 0,
	     NULL);
}

static void simple(struct gen_thr *t, int64_t at, int type, int fd, int fd2)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = (uint8_t)type;
	ev.fd = fd;
	ev.fd2 = fd2;
	push(t, at, &ev);
}

void gen_close(struct gen_thr *t, int64_t at, int fd)
{
	simple(t, at, BT_EV_CLOSE, fd, 0);
	set_fd(t->p, fd, NULL);
}

void gen_dup(struct gen_thr *t, int64_t at, int fd, int fd2)
{
	struct gend *e = get_fd(t, fd);
	simple(t, at, BT_EV_DUP, fd, fd2);
	set_fd(t->p, fd2, e);
}

void gen_open(struct gen_thr *t, int64_t at, int fd, const char *path)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_OPEN;
	ev.fd = -100;
	ev.result = fd;
	ev.str = path;
	ev.str_len = (uint32_t)strlen(path);
	push(t, at, &ev);
	if (fd >= 0 && fd < 256)
		t->p->fds[fd] = NULL;
}

void gen_msg(struct gen_thr *t, int64_t at, int fd, int dir, int kind,
	     int proto, uint64_t len, uint32_t flags, uint32_t status,
	     uint64_t witness, ...)
{
	struct gend *e = get_fd(t, fd);
	struct bt_event ev;
	va_list ap;
	int key;

	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_MSG;
	ev.fd = fd;
	ev.dir = (uint8_t)dir;
	ev.kind = (uint8_t)kind;
	ev.proto = (uint8_t)proto;
	ev.flags = flags | (e->dgram ? BT_MF_DGRAM : 0);
	ev.off = e->off[dir];
	ev.len = len;
	ev.status = status;
	ev.witness = witness;
	va_start(ap, witness);
	while ((key = va_arg(ap, int)) != 0 && ev.nattr < BT_EV_MAX_ATTR) {
		const char *v = va_arg(ap, const char *);
		ev.attr[ev.nattr].key = (uint8_t)key;
		ev.attr[ev.nattr].val = v;
		ev.attr[ev.nattr].len = (uint16_t)strlen(v);
		ev.nattr++;
	}
	va_end(ap);
	push(t, at, &ev);
	e->off[dir] += e->dgram ? 1 : len;
}

void gen_msg_begin(struct gen_thr *t, int64_t at, int fd, int dir)
{
	struct gend *e = get_fd(t, fd);
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_MSG_BEGIN;
	ev.fd = fd;
	ev.dir = (uint8_t)dir;
	ev.off = e->off[dir];
	push(t, at, &ev);
}

void gen_data(struct gen_thr *t, int64_t at, int fd, int dir, uint64_t len)
{
	struct gend *e = get_fd(t, fd);
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_DATA;
	ev.fd = fd;
	ev.dir = (uint8_t)dir;
	ev.off = e->off[dir];
	ev.len = len;
	push(t, at, &ev);
	e->off[dir] += e->dgram ? 1 : len;
}

void gen_ready(struct gen_thr *t, int64_t at, int fd, uint32_t events)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_READY;
	ev.fd = fd;
	ev.flags = events;
	ev.result = 1;
	push(t, at, &ev);
}

struct gen_proc *gen_fork(struct gen_thr *t, int64_t at, uint32_t child,
			  const char *exe)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_FORK;
	ev.result = child;
	push(t, at, &ev);
	struct gen_proc *c = gen_proc(t->p->h, child, exe ? exe : t->p->exe);
	memcpy(c->fds, t->p->fds, sizeof c->fds);
	return c;
}

struct gen_proc *gen_exec(struct gen_thr *t, int64_t at, const char *exe)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_EXEC;
	ev.str = exe;
	ev.str_len = (uint32_t)strlen(exe);
	push(t, at, &ev);
	return gen_proc(t->p->h, t->p->pid, exe);
}

void gen_thread_create(struct gen_thr *t, int64_t at, uint64_t cookie)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_THREAD_CREATE;
	ev.cookie = cookie;
	push(t, at, &ev);
}

void gen_name_begin(struct gen_thr *t, int64_t at, uint64_t cookie,
		    const char *name)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_NAME_BEGIN;
	ev.cookie = cookie;
	ev.flags = 1 | 2 << 8;
	ev.str = name;
	ev.str_len = (uint32_t)strlen(name);
	ev.str2 = "http";
	ev.str2_len = 4;
	push(t, at, &ev);
}

void gen_name_end(struct gen_thr *t, int64_t at, uint64_t cookie,
		  int result, const char *addr)
{
	struct bt_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_NAME_END;
	ev.cookie = cookie;
	ev.result = result;
	ev.str = addr;
	ev.str_len = addr ? (uint32_t)strlen(addr) : 0;
	push(t, at, &ev);
}

void gen_thread_exit(struct gen_thr *t, int64_t at)
{
	simple(t, at, BT_EV_THREAD_EXIT, 0, 0);
}

void gen_skip(struct gen_thr *t, int fd, int dir, uint64_t len)
{
	struct gend *e = get_fd(t, fd);
	e->off[dir] += e->dgram ? 1 : len;
}

void gen_cut(struct gen_thr *t)
{
	t->cut_next = 1;
}

/* ---- writing -------------------------------------------------------------- */

struct gblock {
	int64_t  at;            /* true time of its first record */
	unsigned order;         /* creation order: a stable tie-break */
	struct gen_thr *t;
	unsigned idx;           /* block number within its stream */
	uint64_t soff;
	uint32_t len;
	uint8_t *payload;
};

static int cmp_block(const void *pa, const void *pb)
{
	const struct gblock *a = pa, *b = pb;
	if (a->at != b->at)
		return a->at < b->at ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

static long wr(int fd, const void *buf, size_t len)
{
	return (long)write(fd, buf, len);
}

static void add_block(struct gen_thr *t, unsigned idx, uint64_t soff,
		      int64_t at, const uint8_t *p, uint32_t len,
		      struct gblock **v, unsigned *n)
{
	struct gblock b = { .at = at, .order = *n, .t = t, .idx = idx,
			    .soff = soff, .len = len };
	b.payload = malloc(len);
	if (!b.payload)
		die("out of memory");
	memcpy(b.payload, p, len);
	PUSH(*v, *n, b);
}

/*
 * The LEN bytes of records at BUF once more, with T's dictionary: as
 * libbtrace writes them (a TIME empties it).  Returns the new length;
 * BUF must have room for twice LEN.
 */
static uint32_t recode(struct gen_thr *t, uint8_t *buf, uint32_t len)
{
	uint8_t *out = xcalloc(1, 2 * (size_t)len + BT_EV_MAX_RECORD);
	size_t pos = 0, n = 0;

	if (!t->wd) {
		t->wd = xcalloc(1, sizeof *t->wd);
		bt_ev_dict_init(t->wd);
	}
	while (pos < len) {
		struct bt_event ev;
		uint64_t dprev = t->dprev;
		long k = bt_ev_decode(buf + pos, len - pos, &ev, &t->dprev);
		if (k <= 0 || ev.type >= BT_EV_TYPE_MAX) {
			/* gen_raw's: kept as it is, its time counted */
			uint64_t body = 0, dt = 0;
			t->dprev = dprev;
			size_t h = bt_get_varint(buf + pos + 1,
						 len - pos - 1, &body);
			if (!h || body > len - pos - 1 - h ||
			    !bt_get_varint(buf + pos + 1 + h, body, &dt))
				die("recode: a generated record does not decode");
			k = (long)(1 + h + body);
			memcpy(out + n, buf + pos, (size_t)k);
			t->dprev += dt;
			t->eprev = t->dprev;
			pos += (size_t)k;
			n += (size_t)k;
			continue;
		}
		size_t w = bt_ev_encode_dict(out + n, BT_EV_MAX_RECORD, &ev,
					     &t->eprev, t->wd);
		if (!w)
			die("recode: a record does not encode");
		pos += (size_t)k;
		n += w;
	}
	if (n > 2 * (size_t)len)
		die("recode: the records grew more than twice");
	memcpy(buf, out, n);
	free(out);
	return (uint32_t)n;
}

/*
 * Cut thread T's stream into blocks of at most CAP bytes at record
 * boundaries (and where the script asked).  Unless NO_TIME, every block
 * after the first starts with a TIME record, as a ring lap does; it
 * carries the time of the record before, so the deltas stay valid.
 */
static void cut(struct gen_thr *t, unsigned cap, int time_per_block,
		int dict, struct gblock **v, unsigned *n)
{
	uint8_t *buf = xcalloc(1, 2 * (cap + t->nbytes + BT_EV_MAX_RECORD));

	/* the stream is written from its start: so is its dictionary */
	t->dprev = t->eprev = 0;
	if (t->wd)
		bt_ev_dict_init(t->wd);
	uint64_t soff = 0;
	uint32_t len = 0;
	int64_t first_at = 0;
	unsigned idx = 0;
	int fresh = 1;          /* the block has no record of the script yet */

	for (size_t i = 0; i < t->n; i++) {
		size_t end = i + 1 < t->n ? t->v[i + 1].off : t->nbytes;
		uint32_t rl = (uint32_t)(end - t->v[i].off);
		if (len && (len + rl > cap || t->v[i].cut_before)) {
			if (dict)
				len = recode(t, buf, len);
			add_block(t, idx++, soff, first_at, buf, len, v, n);
			soff += len;
			len = 0;
			fresh = 1;
			if (time_per_block) {
				struct bt_event te;
				uint64_t prev = 0;
				memset(&te, 0, sizeof te);
				te.type = BT_EV_TIME;
				te.ts = t->v[i - 1].ts;
				te.realtime = real_ns(t->p->h, t->v[i - 1].at);
				len = (uint32_t)bt_ev_encode(buf, BT_EV_MAX_RECORD,
							     &te, &prev);
			}
		}
		if (fresh)
			first_at = t->v[i].at;
		fresh = 0;
		memcpy(buf + len, t->bytes + t->v[i].off, rl);
		len += rl;
	}
	if (len && dict)
		len = recode(t, buf, len);
	if (len)
		add_block(t, idx, soff, first_at, buf, len, v, n);
	free(buf);
}

/* Is B one of the blocks O writes late? */
static int is_late(const struct gen_write_opts *o, const struct gblock *b)
{
	return b->t->p->pid == o->late_pid && b->at >= o->late_from * GEN_US;
}

int gen_write(struct gen *g, const char *dir, const struct gen_write_opts *o)
{
	struct gen_write_opts d = { 0 };
	int files = 0;

	int late_seg = -1;
	if (!o)
		o = &d;
	unsigned cap = o->block_bytes ? o->block_bytes : 256;
	const char *env = getenv("BP_GEN_DICT");
	int dict = o->dict || (env && strcmp(env, "1") == 0);
	unsigned per = o->blocks_per_seg ? o->blocks_per_seg : 8;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -1;
	for (unsigned hi = 0; hi < g->nhosts; hi++) {
		struct gen_host *h = g->hosts[hi];
		struct gblock *v = NULL;
		unsigned n = 0;
		char path[4096];

		if (h->base != h)
			continue;           /* written with its host */
		for (unsigned ti = 0; ti < g->nthrs; ti++)
			if (g->thrs[ti]->p->h->base == h)
				cut(g->thrs[ti], cap, !o->no_time_per_block,
				    dict, &v, &n);
		if (!n)
			continue;
		qsort(v, n, sizeof *v, cmp_block);
		unsigned nearly = n;
		if (o->late_pid) {
			/* stable: the late pid's blocks to the end */
			struct gblock *sv = malloc((size_t)n * sizeof *sv);
			unsigned a = 0;
			if (!sv)
				return -1;
			for (unsigned k = 0; k < n; k++)
				if (!is_late(o, &v[k]))
					sv[a++] = v[k];
			nearly = a;
			for (unsigned k = 0; k < n; k++)
				if (is_late(o, &v[k]))
					sv[a++] = v[k];
			memcpy(v, sv, (size_t)n * sizeof *sv);
			free(sv);
		}
		snprintf(path, sizeof path, "%s/%s", dir, h->name);
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			return -1;
		int fd = -1;
		unsigned inseg = 0;
		for (unsigned k = 0; k < n; k++) {
			struct gblock *b = &v[k];
			if (o->keep && !o->keep(o->keep_ctx, h->name, b->t->p->pid,
						b->t->slot, b->idx))
				continue;
			int late = k >= nearly && o->late_pid;
			if (late && late_seg < 0 && fd >= 0)
				inseg = per;    /* a segment of their own */
			if (fd < 0 || inseg == per) {
				if (late && late_seg < 0)
					late_seg = files;
				if (fd >= 0)
					close(fd);
				snprintf(path, sizeof path, "%s/%s/%06d%s", dir,
					 h->name, files, BT_SEG_SUFFIX);
				fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
				if (fd < 0)
					return -1;
				struct bt_seg_header sh;
				uint8_t hb[BT_SEG_HDR_SIZE];
				memset(&sh, 0, sizeof sh);
				sh.created_mono = mono_ns(h, b->at);
				sh.created_real = real_ns(h, b->at);
				snprintf(sh.host, sizeof sh.host, "%s", h->name);
				sh.boot_id = h->boot;
				sh.writer = BT_SEG_BY_LOGD;
				sh.writer_pid = 1;
				sh.seq = (uint64_t)files;
				bt_seg_header_encode(hb, &sh);
				if (write(fd, hb, sizeof hb) != (ssize_t)sizeof hb)
					return -1;
				files++;
				inseg = 0;
			}
			struct bt_blk_header bh = {
				.len = b->len, .ring_id = b->t->p->ring,
				.pid = b->t->p->pid, .slot = (uint16_t)b->t->slot,
				.gen = 0, .stream_off = b->soff, .flags = 0,
			};
			if (bt_seg_write_block(fd, wr, &bh, b->payload) < 0)
				return -1;
			inseg++;
		}
		if (fd >= 0)
			close(fd);
		for (unsigned k = 0; k < n; k++)
			free(v[k].payload);
		free(v);
	}
	if (o->late_seg)
		*o->late_seg = late_seg;
	return files;
}
