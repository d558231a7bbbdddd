/*
 * fuzz_logd_peer.c - libFuzzer target for bp-logd's socket protocol
 * (btrace/ring.h, docs/logd.md "Security model").
 *
 * Everything a local process can do to bp-logd goes through bp-logd's own
 * code (logd/peer.c, chunk.c, server.c, store.c, notes.c, linked as they
 * are): connections over real SOCK_SEQPACKET socketpairs (peer_accept),
 * packets of any type, length and content, file descriptors of every kind
 * passed with them (memfds of the right and the wrong size, pipes, regular
 * files, none, several), chunk headers and slots that say anything, heads
 * that jump, records that are torn, memory shrunk under bp-logd (SIGBUS),
 * control commands, BYE, hang-ups, and drain passes in between.  Only the
 * event loop is left out: the harness calls what its callbacks call
 * (peer_read_pending, server_drain_peer, peer_reap, server_control).
 *
 * The input is a program of operations, one opcode byte each followed by
 * its arguments (fuzz/logd-peer-seeds.py writes seeds in this form):
 *
 *   op & 15: 0 connect, 1 HELLO, 2 CHUNK, 3 KICK, 4 BYE, 5 CTL,
 *            6 raw packet, 7 write into a slot, 8 shrink a memfd,
 *            9 drain pass, 10 hang up, 11 pause/resume, 12 header scribble,
 *            13 the timer of WELCOMEs owed fires (peer_welcome_late),
 *            14 connect through the lazy listener (a forked child's way:
 *               bp-logd accepts it later), 15 the drain timer fires
 *               (server_accept_lazy, then a drain pass)
 *   op >> 4 & 3: which of four connections
 *
 * After every input, besides ASan/UBSan/LSan:
 *  - every fuzzed peer is gone (dropped, or drained and reaped) once its
 *    connection is hung up and a drain pass ran (connections still queued
 *    on the lazy listener are accepted first, as bp-logd's stop does);
 *  - a well-behaved tracer connected at start-up is still served: a
 *    record written into its slot is drained to the segment;
 *  - no file descriptor leaked (received memfds, pipes, sockets);
 *  - every message bp-logd printed is one line, and each dropped peer
 *    produced exactly one "dropping peer pid N (...): REASON" line
 *    (the count of lines equals bp-logd's count of dropped peers);
 *  - bp-logd never took the disk for full nor called fatal().
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "logd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__asan_default_options(void);

/* bp-logd answers SIGBUS of a shrunk memfd with its own handler. */
const char *__asan_default_options(void)
{
	return "allow_user_segv_handler=1:handle_sigbus=0";
}

/* ---- bp-logd's log.c, replaced: lines are counted and checked ---------- */

static unsigned warn_lines, drop_lines;
static int verbose;

static void vcheck(const char *fmt, va_list ap, int count)
	__attribute__((format(printf, 1, 0)));
static void vcheck(const char *fmt, va_list ap, int count)
{
	char line[1024];

	vsnprintf(line, sizeof line, fmt, ap);
	if (strchr(line, '\n')) {
		fprintf(stderr, "bp-logd printed a message of several lines: %s\n", line);
		abort();
	}
	if (!count)
		return;
	warn_lines++;
	if (!strncmp(line, "dropping peer pid ", 18)) {
		drop_lines++;
		if (!strstr(line, "): ")) {
			fprintf(stderr, "a drop line without its reason: %s\n", line);
			abort();
		}
	} else if (!strncmp(line, "cannot write ", 13)) {
		fprintf(stderr, "bp-logd took a fuzzed peer for a disk error: %s\n", line);
		abort();
	}
	if (verbose)
		fprintf(stderr, "bp-logd: %s\n", line);
}

void log_set_verbose(int level) { (void)level; }
void log_warn(const char *fmt, ...)
{ va_list ap; va_start(ap, fmt); vcheck(fmt, ap, 1); va_end(ap); }
void log_info(const char *fmt, ...)
{ va_list ap; va_start(ap, fmt); vcheck(fmt, ap, 0); va_end(ap); }
void log_debug(const char *fmt, ...)
{ va_list ap; va_start(ap, fmt); vcheck(fmt, ap, 0); va_end(ap); }
void fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vcheck(fmt, ap, 0);
	va_end(ap);
	fprintf(stderr, "bp-logd called fatal()\n");
	abort();
}

static uint64_t now_clock(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
uint64_t logd_now_mono(void) { return now_clock(CLOCK_MONOTONIC); }
uint64_t logd_now_real(void) { return now_clock(CLOCK_REALTIME); }

/* ---- reading the program --------------------------------------------- */

struct in {
	const uint8_t *p;
	size_t n;
};

static unsigned u8(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint64_t uN(struct in *in, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)u8(in) << (8 * i);
	return v;
}

static size_t take(struct in *in, void *dst, size_t want)
{
	size_t k = want < in->n ? want : in->n;
	memcpy(dst, in->p, k);
	memset((uint8_t *)dst + k, 0, want - k);
	in->p += k;
	in->n -= k;
	return k;
}

/* ---- the harness's side of connections and memfds --------------------- */

#define NCONN 4
#define NMEM  4
#define MEM_MAX (2u << 20)     /* larger chunks are announced, not made */

struct mem {
	int      fd;
	uint8_t *map;
	size_t   size;             /* what we may touch (shrinks) */
	uint32_t nslots, slot_size;
	uint64_t head[BT_RING_MAX_SLOTS];
};

#define DFD_LAZY (-2)          /* conn.dfd: bp-logd's end is not known */

struct conn {
	int      fd;               /* our end, -1 if none */
	int      dfd;              /* bp-logd's end while it has the peer, or
				      DFD_LAZY: connected through the lazy
				      listener (queued, or accepted by bp-logd
				      under a descriptor we do not know) */
	uint64_t ring_id;
	struct mem mem[NMEM];
	int      nmem;
};

static struct server *srv;
static struct logd_opts opts;
static char dir[128];
static int devnull_file = -1;
static struct conn good;
static struct peer *good_peer;
static struct conn *conns;           /* this input's NCONN connections */
static char lazy_path[160];         /* the lazy listener's socket */
static int fd_baseline = -1;
static uint64_t store_mark;

static struct peer *peer_by_fd(int dfd)
{
	struct peer *p;

	if (dfd < 0)
		return NULL;
	TAILQ_FOREACH(p, &srv->peers, entry)
		if (p->fd == dfd && p != good_peer)
			return p;
	return NULL;
}

static void mem_close(struct mem *m)
{
	if (m->map)
		munmap(m->map, m->size);
	if (m->fd >= 0)
		close(m->fd);
	memset(m, 0, sizeof *m);
	m->fd = -1;
}

static void conn_reset(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	for (int i = 0; i < c->nmem; i++)
		mem_close(&c->mem[i]);
	memset(c, 0, sizeof *c);
	c->fd = c->dfd = -1;
	for (int i = 0; i < NMEM; i++)
		c->mem[i].fd = -1;
}

/* Send one packet with up to NFDS descriptors; errors are the fuzzer's
 * business (the peer may be gone already). */
static void send_pkt(struct conn *c, const void *buf, size_t len,
		     const int *fds, int nfds)
{
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	union { struct cmsghdr c; char b[CMSG_SPACE(sizeof(int) * 12)]; } u;

	if (c->fd < 0)
		return;
	if (nfds > 0) {
		memset(&u, 0, sizeof u);
		mh.msg_control = u.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	(void)!sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Throw away what bp-logd sent us (WELCOME, CTL_REPLY). */
static void drain_replies(struct conn *c)
{
	char buf[2048];

	if (c->fd < 0)
		return;
	for (int i = 0; i < 64; i++)
		if (recv(c->fd, buf, sizeof buf, MSG_DONTWAIT) <= 0)
			break;
}

/* Is P a fuzzed peer whose descriptor no connection knows (accepted from
 * the lazy listener)? */
static int peer_unknown(const struct peer *p)
{
	if (p == good_peer || p->fd < 0)
		return 0;
	for (int i = 0; i < NCONN; i++)
		if (conns[i].dfd == p->fd)
			return 0;
	return 1;
}

/* bp-logd reads what is queued on C's connection, as its read callback.
 * A lazy connection's peer is not known by its descriptor: every peer
 * whose descriptor no connection knows reads (its read callback may run
 * at any time; with nothing queued it reads nothing). */
static void deliver(struct conn *c)
{
	struct peer *p = peer_by_fd(c->dfd), *next;

	if (p)
		peer_read_pending(p);
	else if (c->dfd == DFD_LAZY)
		for (p = TAILQ_FIRST(&srv->peers); p; p = next) {
			next = TAILQ_NEXT(p, entry);
			if (peer_unknown(p))
				peer_read_pending(p);
		}
	if (c->dfd != DFD_LAZY)
		drain_replies(c);       /* (a forked child never reads its
					   WELCOME: at its close bp-logd's
					   end reads ECONNRESET first) */
}

/* One drain pass over every peer, as the timer does. */
static void drain_all(void)
{
	struct peer *p, *next;

	for (p = TAILQ_FIRST(&srv->peers); p; p = next) {
		next = TAILQ_NEXT(p, entry);
		if (p->state != PEER_LIVE && p->state != PEER_CLOSING)
			continue;
		int r = server_drain_peer(srv, p);
		if (r == 0 && p->state == PEER_CLOSING)
			peer_reap(p);
	}
}

/* The drain timer's or a stop's accept from the lazy listener; then the
 * loop's read callbacks of the peers accepted (level-triggered: a peer
 * whose accept read stopped at its WELCOME is read again for what is
 * queued behind, its end of file too). */
static void accept_lazy(void)
{
	struct peer *p, *next;

	server_accept_lazy(srv);
	for (p = TAILQ_FIRST(&srv->peers); p; p = next) {
		next = TAILQ_NEXT(p, entry);
		if (peer_unknown(p))
			peer_read_pending(p);
	}
}

/* Forget connections whose peer bp-logd no longer reads. */
static void reconcile(struct conn *cs)
{
	for (int i = 0; i < NCONN; i++)
		if (cs[i].dfd >= 0 && !peer_by_fd(cs[i].dfd))
			cs[i].dfd = -1;
}

static void hdr_init(struct bt_lm_hdr *h, unsigned type, size_t len)
{
	h->type = (uint16_t)type;
	h->len = (uint16_t)len;
	h->version = BT_RING_VERSION;
}

/* Mutate a built packet as the program says: header fields, length. */
static size_t mutate(struct in *in, uint8_t *pkt, size_t len, size_t cap)
{
	unsigned m = u8(in);
	struct bt_lm_hdr h;

	memcpy(&h, pkt, sizeof h);
	if (m & 1)
		h.len = (uint16_t)uN(in, 2);
	if (m & 2)
		h.version = (uint32_t)uN(in, 4);
	if (m & 4)
		h.type = (uint16_t)u8(in);
	memcpy(pkt, &h, sizeof h);
	if (m & 8) {
		size_t k = u8(in);
		len = k < len ? len - k : 0;
	}
	if (m & 16) {
		size_t k = u8(in);
		if (len + k > cap)
			k = cap - len;
		take(in, pkt + len, k);
		len += k;
	}
	return len;
}

/* ---- operations ------------------------------------------------------- */

static void op_connect(struct conn *c)
{
	int sv[2];

	if (c->fd >= 0 || c->dfd >= 0)
		return;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       0, sv) < 0)
		abort();
	c->fd = sv[0];
	c->dfd = sv[1];
	peer_accept(srv, sv[1]);
}

/* A forked child's connection: to the lazy listener, accepted by bp-logd
 * on its drain timer (op 15), a control command or its stop. */
static void op_connect_lazy(struct conn *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s;

	if (c->fd >= 0 || c->dfd >= 0)
		return;
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		abort();
	memcpy(sa.sun_path, lazy_path, strlen(lazy_path) + 1);
	if (connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
		if (errno != EAGAIN) {          /* (the backlog is full) */
			fprintf(stderr, "connect %s: %s\n", lazy_path,
				strerror(errno));
			abort();
		}
		close(s);
		return;
	}
	c->fd = s;
	c->dfd = DFD_LAZY;
}

static void op_hello(struct conn *c, struct conn *cs, struct in *in)
{
	uint8_t pkt[sizeof(struct bt_lm_hello) + 256];
	struct bt_lm_hello m;
	unsigned sel = u8(in);

	memset(&m, 0, sizeof m);
	hdr_init(&m.h, BT_LM_HELLO, sizeof m);
	switch (sel & 3) {
	case 0: m.ring_id = 0x1000 + (uint64_t)(c - cs); break;
	case 1: m.ring_id = good.ring_id; break;              /* a clash */
	case 2: m.ring_id = 0x1000 + (sel >> 2) % NCONN; break; /* another's */
	default: m.ring_id = uN(in, 8); break;
	}
	m.pid = (sel & 0x80) ? (uint32_t)uN(in, 4) : (uint32_t)getpid();
	take(in, m.exe, (sel & 0x40) ? sizeof m.exe : u8(in) % 24);
	c->ring_id = m.ring_id;
	memcpy(pkt, &m, sizeof m);
	size_t len = mutate(in, pkt, sizeof m, sizeof pkt);
	send_pkt(c, pkt, len, NULL, 0);
	deliver(c);
}

/* A chunk: its message, its memfd (or something else), its header. */
static void op_chunk(struct conn *c, struct in *in)
{
	uint8_t pkt[sizeof(struct bt_lm_chunk) + 256];
	struct bt_lm_chunk m;
	unsigned idx = u8(in) % 70, ns = u8(in) % 64, sz = u8(in) % 24;
	unsigned kind = u8(in), hmask = u8(in);
	uint32_t slot_size = 1u << sz;
	uint64_t want = BT_RING_PAGE + (uint64_t)ns * slot_size;
	struct mem *mm = NULL;
	int fds[3], nfds = 0, memfd = -1;
	size_t real = want <= MEM_MAX ? (size_t)want : 8192;

	memset(&m, 0, sizeof m);
	hdr_init(&m.h, BT_LM_CHUNK, sizeof m);
	m.chunk = idx;
	m.nslots = ns;
	m.slot_size = slot_size;
	m.map_size = (kind & 0x40) ? uN(in, 8) : want;
	if (kind & 0x80)
		real = (size_t)(u8(in) + 1) * 64;        /* the wrong size */

	switch (kind & 7) {
	case 0: case 1: case 2: case 3: case 7:
		memfd = (int)syscall(SYS_memfd_create, "fuzz-ring", MFD_CLOEXEC);
		if (memfd < 0 || ftruncate(memfd, (off_t)real) < 0)
			abort();
		if (c->nmem < NMEM) {
			mm = &c->mem[c->nmem++];
			mm->fd = memfd;
			mm->size = real;
			mm->map = mmap(NULL, real, PROT_READ | PROT_WRITE,
				       MAP_SHARED, memfd, 0);
			if (mm->map == MAP_FAILED)
				abort();
			mm->nslots = ns < BT_RING_MAX_SLOTS ? ns : BT_RING_MAX_SLOTS;
			mm->slot_size = slot_size;
		}
		fds[nfds++] = memfd;
		if ((kind & 7) == 7) {               /* and a second fd */
			int pp[2];
			if (pipe2(pp, O_CLOEXEC) < 0)
				abort();
			fds[nfds++] = pp[0];
			fds[nfds++] = pp[1];
		}
		break;
	case 4:
		break;                               /* no fd at all */
	case 5: {
		int pp[2];
		if (pipe2(pp, O_CLOEXEC) < 0)
			abort();
		fds[nfds++] = pp[0];
		fds[nfds++] = pp[1];
		nfds = 1;                            /* send the read end */
		send_pkt(c, &m, sizeof m, fds, nfds);
		close(pp[0]);
		close(pp[1]);
		deliver(c);
		return;
	}
	case 6:
		fds[nfds++] = devnull_file;          /* a regular file */
		break;
	}
	if (mm && mm->size >= sizeof(struct bt_chunk_hdr) && !(hmask & 0x80)) {
		struct bt_chunk_hdr *h = (struct bt_chunk_hdr *)(void *)mm->map;
		h->magic = (hmask & 1) ? (uint32_t)uN(in, 4) : BT_RING_MAGIC;
		h->version = (hmask & 2) ? (uint32_t)u8(in) : BT_RING_VERSION;
		h->ring_id = (hmask & 4) ? uN(in, 8) : c->ring_id;
		h->pid = (hmask & 8) ? (uint32_t)uN(in, 4) : (uint32_t)getpid();
		h->chunk = (hmask & 16) ? u8(in) : idx;
		h->nslots = (hmask & 32) ? u8(in) : ns;
		h->slot_size = (hmask & 64) ? (uint32_t)uN(in, 4) : slot_size;
		for (unsigned i = 0; i < mm->nslots; i++) {
			uint64_t t = u8(in);              /* tails bp-logd adopts */
			t = t < 200 ? 0 : t * 977;
			h->slot[i].head = h->slot[i].tail = t;
			mm->head[i] = t;
		}
	}
	memcpy(pkt, &m, sizeof m);
	size_t len = mutate(in, pkt, sizeof m, sizeof pkt);
	send_pkt(c, pkt, len, fds, nfds);
	for (int i = 0; i < nfds; i++)
		if (fds[i] != memfd && fds[i] != devnull_file)
			close(fds[i]);
	if (memfd >= 0 && !mm)
		close(memfd);
	deliver(c);
}

static void op_small(struct conn *c, struct in *in, unsigned type)
{
	uint8_t pkt[sizeof(struct bt_lm_ctl) + 256];
	size_t len = sizeof(struct bt_lm_hdr);

	memset(pkt, 0, sizeof pkt);
	if (type == BT_LM_KICK) {
		struct bt_lm_kick k;
		memset(&k, 0, sizeof k);
		hdr_init(&k.h, type, sizeof k);
		k.chunk = u8(in) % 66;
		k.slot = u8(in) % 62;
		memcpy(pkt, &k, sizeof k);
		len = sizeof k;
	} else if (type == BT_LM_CTL) {
		struct bt_lm_ctl k;
		memset(&k, 0, sizeof k);
		hdr_init(&k.h, type, sizeof k);
		k.cmd = u8(in) % 8;
		memcpy(pkt, &k, sizeof k);
		len = sizeof k;
	} else {
		struct bt_lm_hdr h;
		hdr_init(&h, type, sizeof h);
		memcpy(pkt, &h, sizeof h);
	}
	len = mutate(in, pkt, len, sizeof pkt);
	send_pkt(c, pkt, len, NULL, 0);
	deliver(c);
}

static void op_raw(struct conn *c, struct in *in)
{
	static uint8_t pkt[2300];
	size_t len = (size_t)uN(in, 2) % sizeof pkt;
	unsigned nf = u8(in) % 12;
	int fds[12];

	take(in, pkt, len);
	if (len >= sizeof(struct bt_lm_hdr) && (nf & 1)) {
		struct bt_lm_hdr h;                  /* a plausible header */
		memcpy(&h, pkt, sizeof h);
		h.len = (uint16_t)len;
		h.version = BT_RING_VERSION;
		h.type = (uint16_t)(h.type % 40);
		memcpy(pkt, &h, sizeof h);
	}
	nf = nf > 9 ? 10 : nf < 4 ? 0 : nf - 3;      /* 0, 1..6, 10 fds */
	for (unsigned i = 0; i < nf; i++)
		fds[i] = devnull_file;
	send_pkt(c, pkt, len, fds, (int)nf);
	deliver(c);
}

/* The tracer writes into one of its slots: whole records, garbage, or a
 * head that says anything. */
static void op_write(struct conn *c, struct in *in)
{
	unsigned which = u8(in), mode = u8(in);
	struct mem *m;

	if (!c->nmem)
		return;
	m = &c->mem[which % c->nmem];
	if (!m->nslots || !m->map)
		return;
	unsigned i = (which >> 2) % m->nslots;
	uint64_t base = BT_RING_PAGE + (uint64_t)i * m->slot_size;
	struct bt_chunk_hdr *h = (struct bt_chunk_hdr *)(void *)m->map;
	if (m->size < sizeof *h || base + m->slot_size > m->size)
		return;
	uint8_t *data = m->map + base;
	uint64_t head = m->head[i];

	if ((mode & 3) == 0) {                /* whole records, padded laps */
		unsigned nrec = u8(in) % 16 + 1;
		for (unsigned r = 0; r < nrec; r++) {
			uint8_t body[130];
			size_t bl = u8(in) % 128, rl = 1 + (bl < 128 ? 1 : 2) + bl;
			uint32_t pos = (uint32_t)(head & (m->slot_size - 1));
			uint32_t lap = m->slot_size - pos;
			if (rl + 2 > m->slot_size || lap < 2)
				break;
			if (lap < rl + 2 && lap != rl) {
				/* pad the rest of the lap (PAD record) */
				size_t pb = lap - 2 - (lap - 2 >= 128 ? 1 : 0);
				data[pos] = BT_EV_PAD;
				size_t k = bt_put_varint(data + pos + 1, pb);
				memset(data + pos + 1 + k, 0, pb);
				head += lap;
				pos = 0;
			}
			take(in, body, bl);
			data[pos] = (uint8_t)(1 + u8(in) % (BT_EV_TYPE_MAX + 2));
			size_t k = bt_put_varint(data + pos + 1, bl);
			memcpy(data + pos + 1 + k, body, bl);
			head += 1 + k + bl;
		}
	} else if ((mode & 3) == 1) {         /* raw bytes */
		size_t n = u8(in);
		uint32_t pos = (uint32_t)(head & (m->slot_size - 1));
		if (n > m->slot_size - pos)
			n = m->slot_size - pos;
		take(in, data + pos, n);
		head += n;
	} else if ((mode & 3) == 2) {         /* a head that jumps */
		head += uN(in, 4) * ((mode & 4) ? m->slot_size : 1);
	} else {
		head = uN(in, 8);
	}
	m->head[i] = head;
	__atomic_store_n(&h->slot[i].head, head, __ATOMIC_RELEASE);
	if (mode & 0x10) {                    /* and kick it */
		struct bt_lm_kick k;
		memset(&k, 0, sizeof k);
		hdr_init(&k.h, BT_LM_KICK, sizeof k);
		k.chunk = h->chunk;
		k.slot = i;
		send_pkt(c, &k, sizeof k, NULL, 0);
		deliver(c);
	}
}

static void op_shrink(struct conn *c, struct in *in)
{
	unsigned which = u8(in);
	struct mem *m;
	size_t to;

	if (!c->nmem)
		return;
	m = &c->mem[which % c->nmem];
	if (!m->map)
		return;
	to = (size_t)u8(in) * 256;
	if (to >= m->size)
		return;
	if (ftruncate(m->fd, (off_t)to) < 0)
		abort();
	/* we must not touch what is gone either */
	munmap(m->map, m->size);
	m->map = NULL;
	m->size = 0;
	m->nslots = 0;
}

static void op_scribble(struct conn *c, struct in *in)
{
	unsigned which = u8(in);
	struct mem *m;

	if (!c->nmem)
		return;
	m = &c->mem[which % c->nmem];
	size_t off = (size_t)uN(in, 2) % BT_RING_PAGE, n = u8(in) % 64;
	if (!m->map || off + n > m->size)
		return;
	take(in, m->map + off, n);
}

static void op_hangup(struct conn *c)
{
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
	deliver(c);                          /* reads EOF: drains, reaps */
	if (c->dfd == DFD_LAZY)
		c->dfd = -1;                 /* (its peer is read at the end) */
}

static void op_pause(struct in *in)
{
	char text[16384];
	server_control(srv, (u8(in) & 1) ? BT_CTL_PAUSE : BT_CTL_RESUME, text,
		       sizeof text);
}

/* ---- set-up and the checks --------------------------------------------- */

static void noop_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		abort();
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;                        /* the directory's own */
}

/* For a report: what each open descriptor is. */
static void list_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char p[300], t[256];

	while (d && (e = readdir(d))) {
		ssize_t n;
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
		n = readlink(p, t, sizeof t - 1);
		t[n > 0 ? n : 0] = 0;
		fprintf(stderr, "  fd %s -> %s\n", e->d_name, t);
	}
	if (d)
		closedir(d);
}

/* Remove every segment but the current one (the store grows otherwise). */
static void prune_segments(void)
{
	const char *cur = strrchr(store_path(srv->store), '/');
	DIR *d;
	struct dirent *e;
	char p[512];

	if (store_rotate(srv->store) < 0)
		abort();
	cur = strrchr(store_path(srv->store), '/');
	d = opendir(store_dir(srv->store));
	if (!d)
		abort();
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && strcmp(e->d_name, cur + 1)) {
			snprintf(p, sizeof p, "%s/%s", store_dir(srv->store),
				 e->d_name);
			unlink(p);
		}
	closedir(d);
	store_mark = store_bytes(srv->store);
}

/* The good tracer writes one record and bp-logd must drain it. */
static void check_good(void)
{
	struct mem *m = &good.mem[0];
	struct bt_chunk_hdr *h = (struct bt_chunk_hdr *)(void *)m->map;
	uint8_t *data = m->map + BT_RING_PAGE;
	uint32_t pos = (uint32_t)(m->head[0] & (m->slot_size - 1));
	struct peer *p;
	int found = 0;

	TAILQ_FOREACH(p, &srv->peers, entry)
		found |= p == good_peer;
	if (!found || good_peer->state != PEER_LIVE || good_peer->fd < 0) {
		fprintf(stderr, "the well-behaved tracer was dropped\n");
		abort();
	}
	if (m->slot_size - pos < 16) {           /* pad to the lap's end */
		data[pos] = BT_EV_PAD;
		data[pos + 1] = (uint8_t)(m->slot_size - pos - 2);
		memset(data + pos + 2, 0, m->slot_size - pos - 2);
		m->head[0] += m->slot_size - pos;
		pos = 0;
	}
	data[pos] = BT_EV_THREAD_EXIT;
	data[pos + 1] = 1;
	data[pos + 2] = 0;
	m->head[0] += 3;
	__atomic_store_n(&h->slot[0].head, m->head[0], __ATOMIC_RELEASE);
	if (server_drain_slot(srv, good_peer, good_peer->chunk[0], 0) <= 0 ||
	    good_peer->chunk[0]->tail[0] != m->head[0] ||
	    h->slot[0].tail != m->head[0]) {
		fprintf(stderr, "the well-behaved tracer's record was not drained\n");
		abort();
	}
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	remove(p);
	return 0;
}

/* The scratch directory and what is in it, at exit (as the unit tests
 * remove theirs): each run left up to 17 MB in /dev/shm, that is in
 * memory, for good.  A crash (abort) keeps it, to look at. */
static void remove_scratch(void)
{
	if (dir[0])
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void setup(void)
{
	const char *cause;
	struct store *store;
	const char *tmp = getenv("FUZZ_LOGD_DIR");
	char path[256];
	int sv[2];

	snprintf(dir, sizeof dir, "%s/bp-fuzz-logd.XXXXXX",
		 tmp ? tmp : access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(dir))
		abort();
	atexit(remove_scratch);
	snprintf(path, sizeof path, "%s/plain-file", dir);
	devnull_file = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (devnull_file < 0 || ftruncate(devnull_file, 8192) < 0)
		abort();
	opts.interval_ms = 50;
	opts.seg_size = 1u << 20;
	if (store_open(&store, dir, "fuzz", opts.seg_size, &cause) < 0) {
		fprintf(stderr, "store: %s\n", cause);
		abort();
	}
	srv = calloc(1, sizeof *srv);
	srv->o = &opts;
	srv->store = store;
	srv->logdir = store_dir(store);
	TAILQ_INIT(&srv->peers);
	srv->buf = malloc(BT_RING_MAX_SLOT);
	srv->base = event_base_new();
	if (!srv->buf || !srv->base)
		abort();
	srv->ev_sig[0] = event_new(srv->base, -1, 0, noop_cb, NULL);
	/* the timer of WELCOMEs owed (server.c): op 13 fires it */
	srv->ev_welcome = evtimer_new(srv->base, noop_cb, NULL);
	if (!srv->ev_welcome)
		abort();
	notes_init(&srv->notes);

	/* the lazy listener (server.c server_accept_lazy accepts from it) */
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(lazy_path, sizeof lazy_path, "%s/lazy.sock", dir);
	memcpy(sa.sun_path, lazy_path, strlen(lazy_path) + 1);
	srv->lazy_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK |
			      SOCK_CLOEXEC, 0);
	if (srv->lazy_fd < 0 ||
	    bind(srv->lazy_fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    listen(srv->lazy_fd, 8) < 0)
		abort();

	/* the well-behaved tracer: one chunk of one 4 KiB slot (a zeroed
	 * struct conn says fd 0: conn_reset would close our stdin, or
	 * whatever took descriptor 0) */
	good.fd = good.dfd = -1;
	conn_reset(&good);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       0, sv) < 0)
		abort();
	good.fd = sv[0];
	good.dfd = sv[1];
	good.ring_id = 0x600d600d;
	peer_accept(srv, sv[1]);
	good_peer = TAILQ_LAST(&srv->peers, peer_list);
	struct bt_lm_hello hm;
	memset(&hm, 0, sizeof hm);
	hdr_init(&hm.h, BT_LM_HELLO, sizeof hm);
	hm.ring_id = good.ring_id;
	hm.pid = (uint32_t)getpid();
	strcpy(hm.exe, "good-tracer");
	send_pkt(&good, &hm, sizeof hm, NULL, 0);
	peer_read_pending(good_peer);
	drain_replies(&good);
	struct mem *m = &good.mem[good.nmem++];
	m->slot_size = 4096;
	m->nslots = 1;
	m->size = BT_RING_PAGE + 4096;
	m->fd = (int)syscall(SYS_memfd_create, "good-ring", MFD_CLOEXEC);
	if (m->fd < 0 || ftruncate(m->fd, (off_t)m->size) < 0)
		abort();
	m->map = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      m->fd, 0);
	if (m->map == MAP_FAILED)
		abort();
	struct bt_chunk_hdr *h = (struct bt_chunk_hdr *)(void *)m->map;
	h->magic = BT_RING_MAGIC;
	h->version = BT_RING_VERSION;
	h->ring_id = good.ring_id;
	h->pid = (uint32_t)getpid();
	h->nslots = 1;
	h->slot_size = 4096;
	struct bt_lm_chunk cm;
	memset(&cm, 0, sizeof cm);
	hdr_init(&cm.h, BT_LM_CHUNK, sizeof cm);
	cm.nslots = 1;
	cm.slot_size = 4096;
	cm.map_size = m->size;
	send_pkt(&good, &cm, sizeof cm, &m->fd, 1);
	peer_read_pending(good_peer);
	if (good_peer->state != PEER_LIVE || !good_peer->chunk[0]) {
		fprintf(stderr, "set-up: the good tracer was not registered\n");
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conn cs[NCONN];
	struct in in = { data, size };
	uint64_t dropped0;
	unsigned drop_lines0;

	if (!srv) {
		verbose = getenv("FUZZ_LOGD_VERBOSE") != NULL;
		chunk_guard_install();     /* after libFuzzer's own handlers */
		setup();
	}
	/* (counted per input: between inputs the sanitizers' symbolizer may
	 * open pipes of its own) */
	fd_baseline = count_fds();
	dropped0 = srv->peers_dropped;
	drop_lines0 = drop_lines;
	conns = cs;
	for (int i = 0; i < NCONN; i++) {
		memset(&cs[i], 0, sizeof cs[i]);
		cs[i].fd = cs[i].dfd = -1;
		for (int k = 0; k < NMEM; k++)
			cs[i].mem[k].fd = -1;
	}
	for (unsigned steps = 0; in.n && steps < 256; steps++) {
		unsigned op = u8(&in);
		struct conn *c = &cs[(op >> 4) & 3];

		if (verbose)
			fprintf(stderr, "op %u on connection %u\n", op & 15,
				(op >> 4) & 3);

		switch (op & 15) {
		case 0: op_connect(c); break;
		case 1: op_hello(c, cs, &in); break;
		case 2: op_chunk(c, &in); break;
		case 3: op_small(c, &in, BT_LM_KICK); break;
		case 4: op_small(c, &in, BT_LM_BYE); break;
		case 5: op_small(c, &in, BT_LM_CTL); break;
		case 6: op_raw(c, &in); break;
		case 7: op_write(c, &in); break;
		case 8: op_shrink(c, &in); break;
		case 9: drain_all(); break;
		case 10: op_hangup(c); break;
		case 11: op_pause(&in); break;
		case 12: op_scribble(c, &in); break;
		case 13: peer_welcome_late(srv); break;   /* its timer fires */
		case 14: op_connect_lazy(c); break;
		case 15: accept_lazy(); drain_all(); break;
		default: break;
		}
		reconcile(cs);
	}

	/* Everyone hangs up; bp-logd reads the EOFs and drains.  What is
	 * still queued on the lazy listener is accepted (as the drain timer
	 * or bp-logd's stop would) and reads its end of file at once. */
	for (int i = 0; i < NCONN; i++)
		op_hangup(&cs[i]);
	accept_lazy();
	drain_all();
	drain_all();
	if (srv->npeers != 1 || TAILQ_FIRST(&srv->peers) != good_peer) {
		struct peer *p;
		TAILQ_FOREACH(p, &srv->peers, entry)
			fprintf(stderr, "left over: peer #%u pid %u state %s fd %d%s%s\n",
				p->id, p->pid, peer_state_name(p->state), p->fd,
				p == good_peer ? " (the good tracer)" : "",
				peer_unknown(p) ? " (no connection knows it)" : "");
		for (int i = 0; i < NCONN; i++)
			fprintf(stderr, "connection %d: fd %d, bp-logd's end %d\n",
				i, cs[i].fd, cs[i].dfd);
		fprintf(stderr, "good tracer: fd %d, bp-logd's end %d; lazy listener %d\n",
			good.fd, good.dfd, srv->lazy_fd);
		list_fds();
		fprintf(stderr, "a fuzzed peer outlived its connection and a drain\n");
		abort();
	}
	for (int i = 0; i < NCONN; i++)
		conn_reset(&cs[i]);
	if (srv->flags & BT_CF_PAUSED) {
		char text[256];
		server_control(srv, BT_CTL_RESUME, text, sizeof text);
	}
	srv->ctl_stop = 0;
	check_good();
	if (notes_flush(&srv->notes, srv->store) < 0)
		abort();
	if (srv->peers_dropped - dropped0 != drop_lines - drop_lines0) {
		fprintf(stderr, "%llu peers dropped but %u drop lines printed\n",
			(unsigned long long)(srv->peers_dropped - dropped0),
			drop_lines - drop_lines0);
		abort();
	}
	if (count_fds() != fd_baseline) {
		fprintf(stderr, "file descriptors: %d open, %d before the input:\n",
			count_fds(), fd_baseline);
		list_fds();
		abort();
	}
	if (store_bytes(srv->store) - store_mark > (16u << 20))
		prune_segments();
	return 0;
}
