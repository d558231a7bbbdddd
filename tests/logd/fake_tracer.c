/*
 * fake_tracer.c - plays the traced process's side of btrace/ring.h for
 * bp-logd's tests: memfd chunks, one slot per thread, numbered records
 * encoded with bt_ev_encode, a KICK per half ring, a futex wait when a
 * slot is full, and a reconnect (same ring_id, chunks sent again) when
 * bp-logd goes away.  With --bad MODE it is instead a misbehaving peer.
 *
 * Records: each thread T writes TIME, THREAD_START, then N records
 * MSG fd=T off=SEQ (SEQ = 0..N-1) with an INFO attribute of varying
 * length, then THREAD_EXIT.  tests/logd/verify_log checks them.
 *
 * A progress file (-P) holds, after a header, one u64 per thread: the
 * number of MSG records published so far (updated after each head
 * store), so a test that SIGKILLs this process knows what must arrive.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "btrace/event.h"
#include "btrace/ring.h"

#define PROGRESS_MAGIC 0x5347525052544642ull   /* "BFTRPRGS" */

struct progress {
	uint64_t magic, ring_id, nthreads, records_per_thread;
	uint64_t done[];                          /* per thread */
};

struct wslot {
	struct bt_slot_hdr *sh;
	uint8_t  *data;
	uint32_t  size;
	uint32_t  chunk, slot;
	uint64_t  head;
	uint64_t  prev_ts;
	unsigned  tindex;
	pthread_t th;
	uint64_t  waits, kicks, woken;
};

static struct {
	const char *sock;
	unsigned threads, records, slot_size, per_chunk, max_attr;
	unsigned delay_us, timeout_s;
	uint64_t ring_id;
	const char *progress_path;
	const char *bad;
	int wait_forever, quiet, show_flags;
	unsigned lost, reconnect_ms;
	int lazy;                       /* --lazy: a forked child's way */
	const char *go;                 /* --go FILE (with --lazy) */
} opt = { NULL, 4, 10000, 65536, BT_RING_MAX_SLOTS, 64, 0, 60, 0, NULL,
	  NULL, 0, 0, 0, 0, 0, 0, NULL };

static int sockfd = -1;                 /* stable number, see reconnect() */
static unsigned nchunks;
static int memfd[BT_RING_MAX_CHUNKS];
static uint8_t *chunk_base[BT_RING_MAX_CHUNKS];
static size_t chunk_size;
static struct wslot *slots;
static struct progress *prog;
static uint64_t deadline_ns;
static atomic_int failed;
static atomic_uint finished;            /* writer threads done */
static uint32_t welcome_flags;
static unsigned reconnects;
static char filler[4096];

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "fake_tracer[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(3);
}

static void hdr_init(struct bt_lm_hdr *h, unsigned type, size_t len)
{
	h->type = (uint16_t)type;
	h->len = (uint16_t)len;
	h->version = BT_RING_VERSION;
}

static int send_fd(int fd, const void *msg, size_t len, const int *fds, int nfds)
{
	union { struct cmsghdr c; char b[CMSG_SPACE(sizeof(int) * 4)]; } cb;
	struct iovec iov = { (void *)msg, len };
	struct msghdr mh;

	memset(&mh, 0, sizeof mh);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (nfds) {
		memset(&cb, 0, sizeof cb);
		mh.msg_control = cb.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -errno;
}

/* A connection to bp-logd's socket (SUFFIX "") or its lazy listener. */
static int connect_once(const char *suffix)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket: %s", strerror(errno));
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (snprintf(sa.sun_path, sizeof sa.sun_path, "%s%s", opt.sock,
		     suffix) >= (int)sizeof sa.sun_path)
		die("socket path too long");
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(fd);
		return -errno;
	}
	return fd;
}

static void send_hello(int fd, uint64_t ring_id)
{
	struct bt_lm_hello h;

	memset(&h, 0, sizeof h);
	hdr_init(&h.h, BT_LM_HELLO, sizeof h);
	h.ring_id = ring_id;
	h.pid = (uint32_t)getpid();
	h.ppid = (uint32_t)getppid();
	snprintf(h.exe, sizeof h.exe, "fake_tracer");
	send(fd, &h, sizeof h, MSG_NOSIGNAL);
}

/* Wait up to MS for a packet; returns its length, 0 at EOF, -1 timeout. */
static long recv_wait(int fd, void *buf, size_t len, int ms)
{
	struct pollfd pf = { fd, POLLIN, 0 };
	if (poll(&pf, 1, ms) <= 0)
		return -1;
	ssize_t n = recv(fd, buf, len, 0);
	return n < 0 ? 0 : n;
}

static void chunk_msg(struct bt_lm_chunk *m, unsigned k)
{
	memset(m, 0, sizeof *m);
	hdr_init(&m->h, BT_LM_CHUNK, sizeof *m);
	m->chunk = k;
	m->nslots = ((struct bt_chunk_hdr *)(void *)chunk_base[k])->nslots;
	m->slot_size = opt.slot_size;
	m->map_size = BT_RING_PAGE + (uint64_t)m->nslots * opt.slot_size;
}

/* Connect, HELLO, WELCOME, CHUNKs on a fresh socket; then make it sockfd
 * with dup2, so threads sending KICKs never see a half-set-up socket or a
 * reused fd number.  Returns 0, or -1 if nobody answers. */
static int handshake(void)
{
	struct bt_lm_welcome w;
	int fd = connect_once("");

	if (fd < 0)
		return -1;
	send_hello(fd, opt.ring_id);
	long n = recv_wait(fd, &w, sizeof w, 5000);
	if (n != (long)sizeof w || w.h.type != BT_LM_WELCOME) {
		close(fd);
		return -1;
	}
	welcome_flags = w.flags;
	for (unsigned k = 0; k < nchunks; k++) {
		struct bt_lm_chunk m;
		chunk_msg(&m, k);
		if (send_fd(fd, &m, sizeof m, &memfd[k], 1) < 0) {
			close(fd);
			return -1;
		}
	}
	if (sockfd < 0) {
		sockfd = fd;
	} else {
		dup2(fd, sockfd);
		close(fd);
	}
	return 0;
}

static void reconnect(void)
{
	while (now_ns(CLOCK_MONOTONIC) < deadline_ns) {
		if (handshake() == 0) {
			reconnects++;
			if (!opt.quiet)
				fprintf(stderr, "fake_tracer[%d]: reconnected\n",
					(int)getpid());
			return;
		}
		usleep(50000);
	}
	die("bp-logd did not come back before the deadline");
}

static void create_chunks(void)
{
	nchunks = (opt.threads + opt.per_chunk - 1) / opt.per_chunk;
	if (nchunks > BT_RING_MAX_CHUNKS)
		die("too many threads for %u chunks of %u slots",
		    BT_RING_MAX_CHUNKS, opt.per_chunk);
	for (unsigned k = 0; k < nchunks; k++) {
		unsigned ns = opt.threads - k * opt.per_chunk;
		if (ns > opt.per_chunk)
			ns = opt.per_chunk;
		chunk_size = BT_RING_PAGE + (size_t)ns * opt.slot_size;
		memfd[k] = (int)syscall(SYS_memfd_create, "btrace-ring",
					MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (memfd[k] < 0 || ftruncate(memfd[k], (off_t)chunk_size) < 0)
			die("memfd: %s", strerror(errno));
		chunk_base[k] = mmap(NULL, chunk_size, PROT_READ | PROT_WRITE,
				     MAP_SHARED, memfd[k], 0);
		if (chunk_base[k] == MAP_FAILED)
			die("mmap: %s", strerror(errno));
		struct bt_chunk_hdr *h = (void *)chunk_base[k];
		h->magic = BT_RING_MAGIC;
		h->version = BT_RING_VERSION;
		h->ring_id = opt.ring_id;
		h->pid = (uint32_t)getpid();
		h->chunk = k;
		h->nslots = ns;
		h->slot_size = opt.slot_size;
	}
}

/* ---- the writer side of a slot ----------------------------------------- */

static void kick(struct wslot *w)
{
	struct bt_lm_kick m;

	memset(&m, 0, sizeof m);
	hdr_init(&m.h, BT_LM_KICK, sizeof m);
	m.chunk = w->chunk;
	m.slot = w->slot;
	__atomic_store_n(&w->sh->kicked, 1, __ATOMIC_RELAXED);
	/* EPIPE while bp-logd is away: the main thread reconnects. */
	send(sockfd, &m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT);
	w->kicks++;
}

/* Wait until NEED bytes are free in the slot. */
static void reserve(struct wslot *w, size_t need)
{
	for (;;) {
		uint64_t t = __atomic_load_n(&w->sh->tail, __ATOMIC_ACQUIRE);
		if (w->head - t + need <= w->size)
			return;
		uint32_t d = __atomic_load_n(&w->sh->drained, __ATOMIC_ACQUIRE);
		t = __atomic_load_n(&w->sh->tail, __ATOMIC_ACQUIRE);
		if (w->head - t + need <= w->size)
			return;
		kick(w);
		w->waits++;
		struct timespec ts = { 0, 100 * 1000000 };
		/* shared futex: bp-logd (another process) wakes it */
		if (syscall(SYS_futex, &w->sh->drained, FUTEX_WAIT, d, &ts, NULL, 0) == 0)
			w->woken++;
		if (now_ns(CLOCK_MONOTONIC) > deadline_ns) {
			fprintf(stderr, "fake_tracer[%d]: thread %u: slot stayed full until the deadline\n",
				(int)getpid(), w->tindex);
			atomic_store(&failed, 1);
			atomic_fetch_add(&finished, 1);
			pthread_exit(NULL);
		}
	}
}

static void publish(struct wslot *w, uint64_t h)
{
	__atomic_store_n(&w->sh->head, h, __ATOMIC_RELEASE);
	w->head = h;
	uint64_t used = h - __atomic_load_n(&w->sh->tail, __ATOMIC_ACQUIRE);
	if (used > w->size / 2 && !__atomic_load_n(&w->sh->kicked, __ATOMIC_RELAXED))
		kick(w);
}

static void put_pad(uint8_t *p, size_t n)
{
	memset(p, 0, n);
	p[0] = BT_EV_PAD;
	if (n - 2 < 0x80) {
		p[1] = (uint8_t)(n - 2);
	} else {
		p[1] = (uint8_t)((n - 3) | 0x80);
		p[2] = (uint8_t)((n - 3) >> 7);
	}
}

/* Append one record, padding the lap's end and re-basing time (TIME at
 * offset 0) when it does not fit or would leave a single byte. */
static void put_record(struct wslot *w, const struct bt_event *ev)
{
	uint8_t rec[8192], tim[64];
	uint64_t pts = w->prev_ts;
	size_t n = bt_ev_encode(rec, sizeof rec, ev, &pts);
	size_t pos = (size_t)(w->head & (w->size - 1)), rem = w->size - pos;

	if (!n)
		die("record does not encode");
	if (n <= rem && rem - n != 1) {
		reserve(w, n);
		memcpy(w->data + pos, rec, n);
		w->prev_ts = pts;
		publish(w, w->head + n);
		return;
	}
	struct bt_event te;
	memset(&te, 0, sizeof te);
	te.type = BT_EV_TIME;
	te.ts = ev->ts;
	te.realtime = now_ns(CLOCK_REALTIME);
	pts = w->prev_ts;
	size_t tn = bt_ev_encode(tim, sizeof tim, &te, &pts);
	n = bt_ev_encode(rec, sizeof rec, ev, &pts);
	reserve(w, rem + tn + n);
	put_pad(w->data + pos, rem);
	memcpy(w->data, tim, tn);
	memcpy(w->data + tn, rec, n);
	w->prev_ts = pts;
	publish(w, w->head + rem + tn + n);
}

static void *writer(void *arg)
{
	struct wslot *w = arg;
	struct bt_event ev;
	uint64_t rnd = 0x9e3779b97f4a7c15ull ^ w->tindex;

	w->head = __atomic_load_n(&w->sh->head, __ATOMIC_RELAXED);
	__atomic_store_n(&w->sh->tid, (uint32_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
	__atomic_add_fetch(&w->sh->gen, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&w->sh->state, BT_SLOT_ACTIVE, __ATOMIC_RELEASE);

	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_TIME;
	ev.ts = now_ns(CLOCK_MONOTONIC);
	ev.realtime = now_ns(CLOCK_REALTIME);
	put_record(w, &ev);
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_THREAD_START;
	ev.ts = now_ns(CLOCK_MONOTONIC);
	ev.tid = (uint32_t)syscall(SYS_gettid);
	ev.pid = (uint32_t)getpid();
	put_record(w, &ev);

	for (unsigned seq = 0; seq < opt.records; seq++) {
		memset(&ev, 0, sizeof ev);
		ev.type = BT_EV_MSG;
		ev.ts = now_ns(CLOCK_MONOTONIC);
		ev.fd = (int32_t)w->tindex;
		ev.dir = BT_DIR_IN;
		ev.kind = BT_MK_REQUEST;
		ev.off = seq;
		rnd ^= rnd << 13; rnd ^= rnd >> 7; rnd ^= rnd << 17;
		unsigned alen = opt.max_attr ? (unsigned)(rnd % (opt.max_attr + 1)) : 0;
		ev.len = alen;
		ev.nattr = 1;
		ev.attr[0].key = BT_AK_INFO;
		ev.attr[0].len = (uint16_t)alen;
		ev.attr[0].val = filler;
		put_record(w, &ev);
		if (prog)
			__atomic_store_n(&prog->done[w->tindex], seq + 1, __ATOMIC_RELEASE);
		if (opt.delay_us)
			usleep(opt.delay_us);
	}
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_THREAD_EXIT;
	ev.ts = now_ns(CLOCK_MONOTONIC);
	put_record(w, &ev);
	if (opt.lost)
		__atomic_store_n(&w->sh->lost, opt.lost, __ATOMIC_RELAXED);
	__atomic_store_n(&w->sh->state, BT_SLOT_EXITED, __ATOMIC_RELEASE);
	atomic_fetch_add(&finished, 1);
	return NULL;
}

static int all_drained(void)
{
	for (unsigned i = 0; i < opt.threads; i++)
		if (__atomic_load_n(&slots[i].sh->tail, __ATOMIC_ACQUIRE) !=
		    __atomic_load_n(&slots[i].sh->head, __ATOMIC_ACQUIRE))
			return 0;
	return 1;
}

/* Watch the socket for a while; reconnect if bp-logd went away. */
static void watch(int ms)
{
	struct pollfd pf = { sockfd, POLLIN, 0 };
	char b[2048];

	if (poll(&pf, 1, ms) <= 0)
		return;
	ssize_t n = recv(sockfd, b, sizeof b, MSG_DONTWAIT);
	if (n > 0 || (n < 0 && errno == EAGAIN))
		return;
	if (!opt.quiet)
		fprintf(stderr, "fake_tracer[%d]: bp-logd went away, reconnecting\n",
			(int)getpid());
	reconnect();
}

/* One writer thread per slot, thread I in slot I % per_chunk of chunk
 * I / per_chunk. */
static void start_writers(void)
{
	pthread_attr_t at;

	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 256 * 1024);
	for (unsigned i = 0; i < opt.threads; i++) {
		struct wslot *w = &slots[i];
		w->tindex = i;
		w->chunk = i / opt.per_chunk;
		w->slot = i % opt.per_chunk;
		w->size = opt.slot_size;
		w->sh = &((struct bt_chunk_hdr *)(void *)chunk_base[w->chunk])->slot[w->slot];
		w->data = BT_SLOT_DATA(chunk_base[w->chunk], opt.slot_size, w->slot);
		int e = pthread_create(&w->th, &at, writer, w);
		if (e)
			die("pthread_create %u: %s", i, strerror(e));
	}
	pthread_attr_destroy(&at);
}

/* ---- a forked child on the lazy listener (--lazy) ------------------------ */

/*
 * As libbtrace's forked child (docs/logd.md, "Forked children"): connect
 * to SOCK.lazy, send HELLO and chunk 0's CHUNK, and do not wait for the
 * WELCOME.  Once bp-logd has accepted (its WELCOME is queued on our end,
 * never read), print "welcomed", wait for --go FILE (the test stops
 * bp-logd in between), then register the other chunks (threads started
 * since), write every record, and exit without BYE and without reading:
 * as a child killed, or one that _exit()s.
 */
static int run_lazy(void)
{
	struct bt_lm_chunk m;
	struct pollfd pf;
	int fd = connect_once(BT_LAZY_SUFFIX);

	if (fd < 0)
		die("connect %s" BT_LAZY_SUFFIX ": %s", opt.sock, strerror(-fd));
	send_hello(fd, opt.ring_id);
	chunk_msg(&m, 0);
	if (send_fd(fd, &m, sizeof m, &memfd[0], 1) < 0)
		die("CHUNK 0: %s", strerror(errno));
	sockfd = fd;
	pf = (struct pollfd){ fd, POLLIN, 0 };
	if (poll(&pf, 1, 10000) != 1)
		die("bp-logd did not accept from its lazy listener in 10 s");
	printf("welcomed\n");
	fflush(stdout);
	while (opt.go && access(opt.go, F_OK) != 0) {
		if (now_ns(CLOCK_MONOTONIC) > deadline_ns)
			die("--go %s: not there before the deadline", opt.go);
		usleep(10000);
	}
	for (unsigned k = 1; k < nchunks; k++) {
		chunk_msg(&m, k);
		if (send_fd(fd, &m, sizeof m, &memfd[k], 1) < 0)
			die("CHUNK %u: %s", k, strerror(errno));
	}
	start_writers();
	for (unsigned i = 0; i < opt.threads; i++)
		pthread_join(slots[i].th, NULL);
	if (atomic_load(&failed))
		die("a thread gave up (its slot filled: use larger -S or fewer -n)");
	printf("published %llu records\n",
	       (unsigned long long)opt.threads * opt.records);
	fflush(stdout);
	_exit(0);
}

/* ---- misbehaving peers ---------------------------------------------------- */

/* Set up a chunk of 1 slot of 4096 and send it; returns its memfd. */
static int bad_chunk(int fd, size_t map, uint32_t nslots, uint32_t slot_size,
		     int hdr_ok, int fd_kind)
{
	int m = (int)syscall(SYS_memfd_create, "bad", MFD_CLOEXEC);
	struct bt_lm_chunk c;
	int sendfd = m;
	int p[2];

	if (ftruncate(m, (off_t)(map ? map : BT_RING_PAGE + 4096)) < 0)
		die("ftruncate: %s", strerror(errno));
	if (hdr_ok) {
		struct bt_chunk_hdr h;
		memset(&h, 0, sizeof h);
		h.magic = BT_RING_MAGIC;
		h.version = BT_RING_VERSION;
		h.ring_id = opt.ring_id;
		h.pid = (uint32_t)getpid();
		h.nslots = nslots;
		h.slot_size = slot_size;
		if (pwrite(m, &h, sizeof h, 0) != (ssize_t)sizeof h)
			die("pwrite: %s", strerror(errno));
	}
	memset(&c, 0, sizeof c);
	hdr_init(&c.h, BT_LM_CHUNK, sizeof c);
	c.nslots = nslots;
	c.slot_size = slot_size;
	c.map_size = BT_RING_PAGE + (uint64_t)nslots * slot_size;
	if (fd_kind == 1) {                 /* a pipe instead of a memfd */
		if (pipe(p) < 0)
			die("pipe: %s", strerror(errno));
		sendfd = p[0];
	} else if (fd_kind == 2) {          /* a regular file on disk */
		char tmpl[] = "/tmp/fake_tracer_XXXXXX";
		sendfd = mkstemp(tmpl);
		unlink(tmpl);
		if (sendfd < 0 || ftruncate(sendfd, (off_t)c.map_size) < 0)
			die("mkstemp: %s", strerror(errno));
	}
	send_fd(fd, &c, sizeof c, &sendfd, 1);
	return m;
}

static void bad_kick(int fd, uint32_t chunk, uint32_t slot)
{
	struct bt_lm_kick k;
	memset(&k, 0, sizeof k);
	hdr_init(&k.h, BT_LM_KICK, sizeof k);
	k.chunk = chunk;
	k.slot = slot;
	send(fd, &k, sizeof k, MSG_NOSIGNAL);
}

static int run_bad(const char *mode)
{
	int fd = connect_once("");
	struct bt_lm_welcome w;
	uint8_t junk[4096];
	int m = -1;

	if (fd < 0)
		die("connect %s: %s", opt.sock, strerror(-fd));
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (uint8_t)(i * 37 + 11);
	if (strcmp(mode, "garbage") == 0) {
		send(fd, junk, 100, MSG_NOSIGNAL);
	} else if (strcmp(mode, "short") == 0) {
		send(fd, junk, 3, MSG_NOSIGNAL);
	} else if (strcmp(mode, "oversize") == 0) {
		send(fd, junk, sizeof junk, MSG_NOSIGNAL);
	} else if (strcmp(mode, "badlen") == 0) {
		struct bt_lm_hello h;
		memset(&h, 0, sizeof h);
		hdr_init(&h.h, BT_LM_HELLO, sizeof h);
		h.h.len = 7;
		send(fd, &h, sizeof h, MSG_NOSIGNAL);
	} else if (strcmp(mode, "ring0") == 0) {
		send_hello(fd, 0);
	} else {
		send_hello(fd, opt.ring_id);
		if (recv_wait(fd, &w, sizeof w, 5000) != (long)sizeof w)
			die("no WELCOME");
		if (strcmp(mode, "unknown") == 0) {
			struct bt_lm_hdr h;
			hdr_init(&h, 99, sizeof h);
			send(fd, &h, sizeof h, MSG_NOSIGNAL);
		} else if (strcmp(mode, "nofd") == 0) {
			struct bt_lm_chunk c;
			memset(&c, 0, sizeof c);
			hdr_init(&c.h, BT_LM_CHUNK, sizeof c);
			send(fd, &c, sizeof c, MSG_NOSIGNAL);
		} else if (strcmp(mode, "pipe") == 0) {
			m = bad_chunk(fd, 0, 1, 4096, 1, 1);
		} else if (strcmp(mode, "file") == 0) {
			m = bad_chunk(fd, 0, 1, 4096, 1, 2);
		} else if (strcmp(mode, "small") == 0) {
			m = bad_chunk(fd, 4096, 1, 4096, 1, 0);
		} else if (strcmp(mode, "huge") == 0) {
			m = bad_chunk(fd, 0, 60, 1u << 30, 1, 0);
		} else if (strcmp(mode, "notpow2") == 0) {
			m = bad_chunk(fd, BT_RING_PAGE + 5000, 1, 5000, 1, 0);
		} else if (strcmp(mode, "badmagic") == 0) {
			m = bad_chunk(fd, 0, 1, 4096, 0, 0);
		} else if (strcmp(mode, "twofds") == 0) {
			struct bt_lm_chunk c;
			int fds[2] = { 0, 1 };
			memset(&c, 0, sizeof c);
			hdr_init(&c.h, BT_LM_CHUNK, sizeof c);
			send_fd(fd, &c, sizeof c, fds, 2);
		} else if (strcmp(mode, "kick") == 0) {
			bad_kick(fd, 7, 3);
		} else if (strcmp(mode, "headtail") == 0 ||
			   strcmp(mode, "records") == 0 ||
			   strcmp(mode, "shrink") == 0) {
			m = bad_chunk(fd, 0, 1, 4096, 1, 0);
			uint8_t *b = mmap(NULL, BT_RING_PAGE + 4096,
					  PROT_READ | PROT_WRITE, MAP_SHARED, m, 0);
			if (b == MAP_FAILED)
				die("mmap: %s", strerror(errno));
			struct bt_chunk_hdr *h = (void *)b;
			usleep(100000);     /* let bp-logd map it first */
			if (strcmp(mode, "headtail") == 0) {
				h->slot[0].head = 3 * 4096;
			} else if (strcmp(mode, "records") == 0) {
				memset(b + BT_RING_PAGE, 0xff, 100);
				h->slot[0].head = 100;
			} else {
				h->slot[0].head = 10;
				if (ftruncate(m, 0) < 0)
					die("ftruncate: %s", strerror(errno));
			}
			bad_kick(fd, 0, 0);
		} else {
			die("unknown --bad mode '%s'", mode);
		}
	}
	/* Dropped: bp-logd closes the connection. */
	for (int i = 0; i < 50; i++) {
		char b[2048];
		long n = recv_wait(fd, b, sizeof b, 100);
		if (n == 0) {
			printf("dropped\n");
			return 0;
		}
	}
	printf("still connected after 5 s\n");
	(void)m;
	return 1;
}

static void usage(void)
{
	fputs("Usage: fake_tracer -s SOCKET [OPTION]...\n"
	      "Test tracer for bp-logd (plays libbtrace's side of btrace/ring.h).\n"
	      "  -s PATH     bp-logd's socket\n"
	      "  -t N        threads, one slot each (default 4)\n"
	      "  -n N        MSG records per thread (default 10000)\n"
	      "  -S BYTES    slot size, a power of two (default 65536)\n"
	      "  -c N        slots per chunk (default 60)\n"
	      "  -z BYTES    largest INFO attribute (default 64; lengths vary)\n"
	      "  -d USEC     pause after each record (default 0)\n"
	      "  -r HEX      ring id (default random)\n"
	      "  -P FILE     progress file (published records per thread)\n"
	      "  -T SEC      give up after SEC seconds (default 60, exit 3)\n"
	      "  -w          when done, stay connected without BYE until killed\n"
	      "  -F          print the WELCOME flags and the chunk flags at the end\n"
	      "  -q          quiet\n"
	      "  -L N        set every slot's lost counter to N at thread exit\n"
	      "  -R MS       close the connection every MS ms and reconnect\n"
	      "  --lazy      as a forked child: connect to SOCKET.lazy, HELLO and\n"
	      "              chunk 0 without waiting; once accepted print 'welcomed',\n"
	      "              wait for --go, send the other chunks, write, and exit\n"
	      "              without BYE and with the WELCOME unread\n"
	      "  --go FILE   (--lazy) wait until FILE exists after 'welcomed'\n"
	      "  --bad MODE  misbehave: garbage short oversize badlen ring0 unknown\n"
	      "              nofd pipe file small huge notpow2 badmagic twofds kick\n"
	      "              headtail records shrink; prints 'dropped' and exits 0\n"
	      "              if bp-logd closes the connection\n"
	      "Prints 'published N records' (N = MSG records) on stdout.\n", stdout);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "bad", required_argument, NULL, 'B' },
		{ "lazy", no_argument, NULL, 'Z' },
		{ "go", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "s:t:n:S:c:z:d:r:P:T:wFqL:R:h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': opt.sock = optarg; break;
		case 't': opt.threads = (unsigned)atoi(optarg); break;
		case 'n': opt.records = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'S': opt.slot_size = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'c': opt.per_chunk = (unsigned)atoi(optarg); break;
		case 'z': opt.max_attr = (unsigned)atoi(optarg); break;
		case 'd': opt.delay_us = (unsigned)atoi(optarg); break;
		case 'r': opt.ring_id = strtoull(optarg, NULL, 16); break;
		case 'P': opt.progress_path = optarg; break;
		case 'T': opt.timeout_s = (unsigned)atoi(optarg); break;
		case 'w': opt.wait_forever = 1; break;
		case 'F': opt.show_flags = 1; break;
		case 'q': opt.quiet = 1; break;
		case 'L': opt.lost = (unsigned)atoi(optarg); break;
		case 'R': opt.reconnect_ms = (unsigned)atoi(optarg); break;
		case 'B': opt.bad = optarg; break;
		case 'Z': opt.lazy = 1; break;
		case 'G': opt.go = optarg; break;
		case 'h': usage(); return 0;
		default: usage(); return 2;
		}
	}
	if (!opt.sock)
		die("-s SOCKET is required");
	if (opt.threads == 0 || opt.per_chunk == 0 || opt.per_chunk > BT_RING_MAX_SLOTS ||
	    opt.max_attr > sizeof filler || (opt.slot_size & (opt.slot_size - 1)) ||
	    opt.slot_size < 8192)
		die("bad option values");
	memset(filler, 'x', sizeof filler);
	if (!opt.ring_id) {
		if (getrandom(&opt.ring_id, sizeof opt.ring_id, 0) != sizeof opt.ring_id)
			opt.ring_id = now_ns(CLOCK_REALTIME) ^ (uint64_t)getpid() << 32;
		if (!opt.ring_id)
			opt.ring_id = 1;
	}
	deadline_ns = now_ns(CLOCK_MONOTONIC) + (uint64_t)opt.timeout_s * 1000000000u;
	signal(SIGPIPE, SIG_IGN);
	if (opt.bad)
		return run_bad(opt.bad);

	if (opt.progress_path) {
		size_t sz = sizeof *prog + sizeof(uint64_t) * opt.threads;
		int pf = open(opt.progress_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (pf < 0 || ftruncate(pf, (off_t)sz) < 0)
			die("%s: %s", opt.progress_path, strerror(errno));
		prog = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, pf, 0);
		if (prog == MAP_FAILED)
			die("mmap %s: %s", opt.progress_path, strerror(errno));
		close(pf);
		prog->ring_id = opt.ring_id;
		prog->nthreads = opt.threads;
		prog->records_per_thread = opt.records;
		__atomic_store_n(&prog->magic, PROGRESS_MAGIC, __ATOMIC_RELEASE);
	}
	create_chunks();
	slots = calloc(opt.threads, sizeof *slots);
	if (!slots)
		die("out of memory");
	if (opt.lazy)
		return run_lazy();
	if (handshake() < 0)
		die("no bp-logd answers on %s", opt.sock);

	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	start_writers();
	/* Watch the connection while the threads write. */
	uint64_t next_re = now_ns(CLOCK_MONOTONIC) + (uint64_t)opt.reconnect_ms * 1000000u;
	while (atomic_load(&finished) < opt.threads) {
		watch(20);
		if (opt.reconnect_ms && now_ns(CLOCK_MONOTONIC) > next_re) {
			/* close the connection on purpose and come back with
			 * the same ring_id, as after a lost connection */
			shutdown(sockfd, SHUT_RDWR);
			reconnect();
			next_re = now_ns(CLOCK_MONOTONIC) + (uint64_t)opt.reconnect_ms * 1000000u;
		}
		if (now_ns(CLOCK_MONOTONIC) > deadline_ns + 1000000000u)
			break;
	}
	for (unsigned i = 0; i < opt.threads; i++)
		pthread_join(slots[i].th, NULL);
	if (atomic_load(&failed))
		die("a thread gave up (bp-logd did not drain in %u s)", opt.timeout_s);
	uint64_t t1 = now_ns(CLOCK_MONOTONIC);
	uint64_t waits = 0, kicks = 0, woken = 0;
	for (unsigned i = 0; i < opt.threads; i++) {
		waits += slots[i].waits;
		kicks += slots[i].kicks;
		woken += slots[i].woken;
	}
	printf("published %llu records in %.3f s (%u threads, %llu kicks, %llu full waits, %llu woken by bp-logd)\n",
	       (unsigned long long)opt.threads * opt.records,
	       (double)(t1 - t0) / 1e9, opt.threads,
	       (unsigned long long)kicks, (unsigned long long)waits,
	       (unsigned long long)woken);
	fflush(stdout);
	if (opt.wait_forever) {
		while (now_ns(CLOCK_MONOTONIC) < deadline_ns)
			watch(100);
		die("-w: not killed before the deadline");
	}
	/* Wait until everything is drained (reconnecting if needed), BYE. */
	while (!all_drained()) {
		if (now_ns(CLOCK_MONOTONIC) > deadline_ns)
			die("bp-logd did not drain everything before the deadline");
		for (unsigned i = 0; i < opt.threads; i++)
			if (__atomic_load_n(&slots[i].sh->tail, __ATOMIC_ACQUIRE) !=
			    slots[i].head)
				kick(&slots[i]);
		watch(20);
	}
	uint64_t t2 = now_ns(CLOCK_MONOTONIC);
	printf("drained %.3f s after the start, %u reconnects\n",
	       (double)(t2 - t0) / 1e9, reconnects);
	if (opt.show_flags) {
		uint32_t f = ((struct bt_chunk_hdr *)(void *)chunk_base[0])->flags;
		/* the pause bit, and whether bp-logd marked the chunk as
		 * mapped by it (BT_CF_LOGD) */
		printf("welcome_flags=%u chunk_flags=%u logd_mapped=%u\n",
		       welcome_flags, f & BT_CF_PAUSED, !!(f & BT_CF_LOGD));
	}
	struct bt_lm_hdr bye;
	hdr_init(&bye, BT_LM_BYE, sizeof bye);
	send(sockfd, &bye, sizeof bye, MSG_NOSIGNAL);
	close(sockfd);
	return 0;
}
