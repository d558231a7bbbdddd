/*
 * emit.c - getting events out of the traced process (btrace/ring.h).
 *
 * Each thread that emits claims a slot of a memfd chunk shared with
 * bp-logd and is its only writer: an event costs an encode and a release
 * store, no system call and no lock.  bp-logd drains slots on a timer and
 * when kicked (one packet per half ring).  A full slot kicks and waits for
 * the drain (bounded); with no bp-logd the thread writes its slot to the
 * spool directory itself.  Nothing is dropped silently: what cannot be
 * written is counted and reported by a BT_EV_DROP record.
 *
 * Pausing: bp-logd sets BT_CF_PAUSED in the chunk headers; bt_pause_word
 * points at chunk 0's.  While it is set bt_emit records nothing and counts
 * what it dropped; the thread's first record after the resume reports the
 * count (DROP, reason paused) and READY -1 (io.c has the dark-channel
 * rule, docs/security.md "Pausing").
 *
 * The shim's own descriptors (logd socket, memfds, spool file, netlink
 * socket, epoll wake-up eventfds) live at high numbers, close-on-exec, and
 * are hidden from the application: closing one fails with EBADF, dup2 onto
 * one moves ours away first.
 */
#include "config.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "btrace/segment.h"
#include "bt.h"

struct bt_chunk {
	int                  memfd;
	struct bt_chunk_hdr *hdr;
	size_t               map_size;
	uint32_t             index, nslots, slot_size;
	int                  sent;       /* registered with the current logd */
};

static struct bt_chunk chunks[BT_RING_MAX_CHUNKS];
static const uint32_t no_pause;          /* before chunk 0 exists */
const volatile uint32_t *bt_pause_word = &no_pause;
static unsigned nchunks;                 /* published with release */
static pthread_mutex_t chunk_mu = PTHREAD_MUTEX_INITIALIZER;

enum { LINK_DOWN = 0, LINK_UP = 1 };
static int logd_fd = -1;
static int link_state = LINK_DOWN;
static uint64_t link_retry_at;           /* monotonic ns of the next try */
static uint32_t logd_flags;              /* BT_CF_* of the last WELCOME */
static pthread_mutex_t link_mu = PTHREAD_MUTEX_INITIALIZER;

static int spool_fd = -1;
static pthread_mutex_t spool_mu = PTHREAD_MUTEX_INITIALIZER;

static pthread_key_t thread_key;
static int thread_key_ok;

/* ---- the shim's own descriptors ------------------------------------- */

#define OWN_MAX 256
static int *own_vars[OWN_MAX];           /* variables holding our fds */
static pthread_mutex_t own_mu = PTHREAD_MUTEX_INITIALIZER;
static int own_base = -1;

/*
 * The lowest number for the shim's own descriptors: 1024 (past select's
 * FD_SETSIZE and the numbers programs use on purpose), or three quarters of
 * a lower limit.  Not the top of a large RLIMIT_NOFILE: the kernel sizes a
 * process's descriptor table to its highest open number, and fork copies
 * that table: one at 19,744 (the floor when it was the limit less 256,
 * under a limit of 20,000) made every fork of a traced process copy and
 * free 32,768 entries, 57 us more per fork here.
 */
static int own_floor(void)
{
	if (own_base < 0) {
		struct rlimit rl;
		long lim = 1024;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
			lim = (long)rl.rlim_cur;
		own_base = lim > 1024 ? (int)(lim - 256 > 1024 ? 1024 : lim - 256)
				      : (int)(lim * 3 / 4);
		if (own_base < 64)
			own_base = 64;
	}
	return own_base;
}

/*
 * Duplicate FD to a close-on-exec number the application will not be
 * handed: the lowest free one at or above own_floor(), else the highest
 * free one below it.  Never simply the lowest free descriptor, which
 * open(), socket(), accept() and dup() must give the application (the
 * top of the range may be full when a program dup2s onto high numbers).
 * F_DUPFD from the probed number keeps this atomic against other threads.
 * Returns the new fd or -1; errno preserved.
 */
static int own_dup_away(int fd)
{
	int e = errno, nfd = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, own_floor());

	for (int f = own_floor() - 1; nfd < 0 && f > 2; f--)
		if (REAL(fcntl)(f, F_GETFD) < 0 && errno == EBADF)
			nfd = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, f);
	errno = e;
	return nfd;
}

int bt_own_fd_hide(int fd)
{
	int nfd;

	if (fd < 0)
		return fd;
	nfd = own_dup_away(fd);
	if (nfd < 0) {
		REAL(fcntl)(fd, F_SETFD, FD_CLOEXEC);
		bt_fd_set(fd, BT_FD_OWN);
		return fd;
	}
	REAL(close)(fd);
	bt_fd_set(nfd, BT_FD_OWN);
	return nfd;
}

static void own_register(int *var)
{
	pthread_mutex_lock(&own_mu);
	for (int i = 0; i < OWN_MAX; i++)
		if (!own_vars[i]) {
			own_vars[i] = var;
			break;
		}
	pthread_mutex_unlock(&own_mu);
}

static void own_unregister(int *var)
{
	pthread_mutex_lock(&own_mu);
	for (int i = 0; i < OWN_MAX; i++)
		if (own_vars[i] == var)
			own_vars[i] = NULL;
	pthread_mutex_unlock(&own_mu);
}

/* Register/unregister an fd variable kept elsewhere (ready.c, chan.c). */
void bt_own_var(int *var, int add)
{
	if (add)
		own_register(var);
	else
		own_unregister(var);
}

/* The smallest descriptor of the shim in [FROM, TO], or -1. */
int bt_own_next(unsigned from, unsigned to)
{
	int best = -1;

	pthread_mutex_lock(&own_mu);
	for (int i = 0; i < OWN_MAX; i++) {
		int fd = own_vars[i] ? *own_vars[i] : -1;
		if (fd >= 0 && (unsigned)fd >= from && (unsigned)fd <= to &&
		    (best < 0 || fd < best))
			best = fd;
	}
	pthread_mutex_unlock(&own_mu);
	return best;
}

int bt_is_own_fd(int fd)
{
	return fd >= 0 && bt_fd_get(fd) == BT_FD_OWN;
}

void bt_own_fd_evict(int fd)
{
	pthread_mutex_lock(&own_mu);
	for (int i = 0; i < OWN_MAX; i++) {
		if (own_vars[i] && *own_vars[i] == fd) {
			int nfd = own_dup_away(fd);
			if (nfd >= 0) {
				bt_fd_set(nfd, BT_FD_OWN);
				*own_vars[i] = nfd;
			} else {
				*own_vars[i] = -1;
			}
		}
	}
	pthread_mutex_unlock(&own_mu);
	bt_fd_set(fd, BT_FD_NONE);
	/* The caller's dup2/dup3 replaces the descriptor atomically. */
}

/* ---- chunks and slots ------------------------------------------------ */

static uint32_t chunk_slots(unsigned index)
{
	uint32_t n = 8u << (index < 3 ? index : 3);
	return n > BT_RING_MAX_SLOTS ? BT_RING_MAX_SLOTS : n;
}

static int link_send(const void *msg, size_t len, int fd_to_pass);

static void chunk_msg(const struct bt_chunk *c, struct bt_lm_chunk *m)
{
	memset(m, 0, sizeof *m);
	m->h.type = BT_LM_CHUNK;
	m->h.len = sizeof *m;
	m->h.version = BT_RING_VERSION;
	m->chunk = c->index;
	m->nslots = c->nslots;
	m->slot_size = c->slot_size;
	m->map_size = c->map_size;
}

static void chunk_register(struct bt_chunk *c)
{
	struct bt_lm_chunk m;

	chunk_msg(c, &m);
	c->sent = link_send(&m, sizeof m, c->memfd) == 0;
}

/* Create chunk number nchunks.  Called with chunk_mu held. */
static struct bt_chunk *chunk_create(void)
{
	struct bt_chunk *c;
	unsigned index = nchunks;
	uint32_t nslots, size = bt_conf.slot_size;
	size_t map;
	void *base;
	int fd;

	if (index >= BT_RING_MAX_CHUNKS)
		return NULL;
	nslots = chunk_slots(index);
	map = BT_RING_PAGE + (size_t)nslots * size;
	fd = (int)syscall(SYS_memfd_create, "btrace-ring", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)map) < 0) {
		REAL(close)(fd);
		return NULL;
	}
	base = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		REAL(close)(fd);
		return NULL;
	}
	c = &chunks[index];
	memset(c, 0, sizeof *c);
	c->memfd = bt_own_fd_hide(fd);
	c->hdr = base;
	c->map_size = map;
	c->index = index;
	c->nslots = nslots;
	c->slot_size = size;
	c->hdr->magic = BT_RING_MAGIC;
	c->hdr->version = BT_RING_VERSION;
	c->hdr->ring_id = bt_proc.ring_id;
	c->hdr->pid = (uint32_t)bt_proc.pid;
	c->hdr->chunk = index;
	c->hdr->nslots = nslots;
	c->hdr->slot_size = size;
	/* paused as bp-logd said in its WELCOME (chunk 0), or as chunk 0 is */
	if (index == 0 ? (logd_flags & BT_CF_PAUSED) :
	    (chunks[0].hdr && (chunks[0].hdr->flags & BT_CF_PAUSED)))
		c->hdr->flags = BT_CF_PAUSED;
	else
		c->hdr->flags = 0;
	own_register(&c->memfd);
	if (index == 0)
		__atomic_store_n(&bt_pause_word, &c->hdr->flags, __ATOMIC_RELEASE);
	__atomic_store_n(&nchunks, index + 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&link_mu);
	/* a link_connect since the store above registered it already */
	if (link_state == LINK_UP && !c->sent)
		chunk_register(c);
	pthread_mutex_unlock(&link_mu);
	return c;
}

static int slot_try_claim(struct bt_chunk *c, unsigned i)
{
	struct bt_slot_hdr *sh = &c->hdr->slot[i];
	uint32_t st = __atomic_load_n(&sh->state, __ATOMIC_ACQUIRE);

	if (st == BT_SLOT_EXITED &&
	    __atomic_load_n(&sh->tail, __ATOMIC_ACQUIRE) != sh->head)
		return 0;                 /* still holds undrained events */
	if (st != BT_SLOT_FREE && st != BT_SLOT_EXITED)
		return 0;
	return __atomic_compare_exchange_n(&sh->state, &st, BT_SLOT_ACTIVE, 0,
					   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

static void slot_bind(struct bt_chunk *c, unsigned i)
{
	struct bt_slot *s = &bt_self.slot;

	s->chunk = c;
	s->idx = i;
	s->sh = &c->hdr->slot[i];
	s->data = BT_SLOT_DATA(c->hdr, c->slot_size, i);
	s->size = c->slot_size;
	s->head = s->sh->head;
	s->prev_ts = 0;
	s->need_time = 1;
	s->sh->tid = (uint32_t)bt_gettid();
	__atomic_add_fetch(&s->sh->gen, 1, __ATOMIC_RELEASE);
	bt_self.have_slot = 1;
	bt_self.noreq_mark = UINT64_MAX;   /* a mark in another slot says nothing */
	if (thread_key_ok)
		pthread_setspecific(thread_key, (void *)1);
}

/* Claim a free (or drained) slot of any chunk.  1 if bound. */
static int slot_scan(void)
{
	unsigned n = __atomic_load_n(&nchunks, __ATOMIC_ACQUIRE);

	for (unsigned k = 0; k < n; k++)
		for (unsigned i = 0; i < chunks[k].nslots; i++)
			if (slot_try_claim(&chunks[k], i)) {
				slot_bind(&chunks[k], i);
				return 1;
			}
	return 0;
}

/*
 * Claim a slot, adding chunks while there is none.  A chunk is published
 * before its creator claims in it, so another thread may take its slots
 * first: scan again rather than give up.  Fails only when no chunk can be
 * added (BT_RING_MAX_CHUNKS reached, memfd or mmap failed).
 */
static int slot_claim(void)
{
	for (int round = 0; round < 2 * (int)BT_RING_MAX_CHUNKS; round++) {
		unsigned seen;

		if (slot_scan())
			return 0;
		seen = __atomic_load_n(&nchunks, __ATOMIC_ACQUIRE);
		pthread_mutex_lock(&chunk_mu);
		/* add a chunk unless another thread did since our scan */
		if (nchunks == seen && !chunk_create()) {
			pthread_mutex_unlock(&chunk_mu);
			return slot_scan() ? 0 : -1;
		}
		pthread_mutex_unlock(&chunk_mu);
	}
	return -1;
}

/* ---- the logd link ---------------------------------------------------- */

static int link_send(const void *msg, size_t len, int fd_to_pass)
{
	struct iovec iov = { (void *)msg, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	union { struct cmsghdr c; char buf[CMSG_SPACE(sizeof(int))]; } u;
	ssize_t r;

	if (logd_fd < 0)
		return -ENOTCONN;
	if (fd_to_pass >= 0) {
		memset(&u, 0, sizeof u);
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof u.buf;
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd_to_pass, sizeof(int));
	}
	do
		r = REAL(sendmsg)(logd_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return 0;
}

/*
 * HELLO and chunk 0's CHUNK in one system call (sendmmsg): bp-logd, woken
 * by the first, finds the second queued too and registers the ring in one
 * pass.  Marks chunk 0 sent if it went; 0 if the HELLO went, else -errno.
 */
static int link_send_hello(const struct bt_lm_hello *hello)
{
	struct bt_lm_chunk m;
	struct iovec iov[2] = { { (void *)hello, sizeof *hello },
				{ &m, sizeof m } };
	struct mmsghdr mm[2];
	union { struct cmsghdr c; char buf[CMSG_SPACE(sizeof(int))]; } u;
	struct cmsghdr *cm;
	int r;

	if (!nchunks || logd_fd < 0 || !REAL(sendmmsg))
		return link_send(hello, sizeof *hello, -1);
	chunk_msg(&chunks[0], &m);
	memset(mm, 0, sizeof mm);
	memset(&u, 0, sizeof u);
	mm[0].msg_hdr.msg_iov = &iov[0];
	mm[0].msg_hdr.msg_iovlen = 1;
	mm[1].msg_hdr.msg_iov = &iov[1];
	mm[1].msg_hdr.msg_iovlen = 1;
	mm[1].msg_hdr.msg_control = u.buf;
	mm[1].msg_hdr.msg_controllen = sizeof u.buf;
	cm = CMSG_FIRSTHDR(&mm[1].msg_hdr);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &chunks[0].memfd, sizeof(int));
	do
		r = REAL(sendmmsg)(logd_fd, mm, 2, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	chunks[0].sent = r == 2;
	return 0;
}

static void link_drop(void)
{
	if (logd_fd >= 0) {
		int fd = logd_fd;
		logd_fd = -1;
		own_unregister(&logd_fd);
		bt_fd_set(fd, BT_FD_NONE);
		REAL(close)(fd);
	}
	link_state = LINK_DOWN;
	for (unsigned k = 0; k < nchunks; k++)
		chunks[k].sent = 0;
}

/* One line on the traced program's stderr, once per process and KIND. */
static void warn_once(unsigned kind, const char *text)
{
	static unsigned warned;

	if (warned & kind)
		return;
	warned |= kind;
	(void)!REAL(write)(2, text, strlen(text));
}

/*
 * May we hand our events to the daemon on FD?  Only to a bp-logd of our
 * own effective uid or root's: anyone can put a socket where we were told
 * to look (/tmp/btrace-UID/ before its owner made it), and a daemon gets
 * every event and the memory they live in (docs/security.md).
 */
static int logd_trusted(int fd)
{
	struct ucred cr;
	socklen_t l = sizeof cr;
	char msg[PATH_MAX + 200];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) < 0)
		return 0;
	if (cr.uid == geteuid() || cr.uid == 0)
		return 1;
	snprintf(msg, sizeof msg,
		 "libbtrace: the bp-logd on %s runs as uid %u, neither ours (%u) nor root: not sending it our events (spooling instead)\n",
		 bt_conf.logd_path, (unsigned)cr.uid, (unsigned)geteuid());
	warn_once(1, msg);
	return 0;
}

/* Connect and register every chunk.  Called with link_mu held. */
static int link_connect(void)
{
	struct sockaddr_un sa;
	struct bt_lm_hello hello;
	struct bt_lm_welcome w;
	struct pollfd pfd;
	int fd, e = errno;
	ssize_t r;

	link_retry_at = bt_now() + 1000000000ull;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (strlen(bt_conf.logd_path) >= sizeof sa.sun_path)
		return -1;
	strcpy(sa.sun_path, bt_conf.logd_path);
	memset(&hello, 0, sizeof hello);
	hello.h.type = BT_LM_HELLO;
	hello.h.len = sizeof hello;
	hello.h.version = BT_RING_VERSION;
	hello.ring_id = bt_proc.ring_id;
	hello.pid = (uint32_t)bt_proc.pid;
	hello.ppid = (uint32_t)bt_proc.ppid;
	memcpy(hello.exe, bt_proc.exe, strnlen(bt_proc.exe, sizeof hello.exe - 1));
	/* Every CHUNK right behind the HELLO, before the WELCOME: bp-logd
	 * reads them in one pass instead of waking for each.  A chunk's
	 * flags are then bp-logd's once it has mapped it (BT_CF_LOGD), the
	 * WELCOME's until then. */
	for (unsigned k = 0; k < nchunks; k++) {
		/* a new bp-logd owes no drain for kicks sent to the old one */
		for (unsigned i = 0; i < chunks[k].nslots; i++)
			chunks[k].hdr->slot[i].kicked = 0;
		__atomic_and_fetch(&chunks[k].hdr->flags, ~BT_CF_LOGD,
				   __ATOMIC_ACQ_REL);
	}
	fd = REAL(socket)(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	if (REAL(connect)(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    !logd_trusted(fd)) {
		REAL(close)(fd);
		goto fail;
	}
	/* HELLO first, then the socket moves to the shim's numbers: bp-logd,
	 * woken by the connection, then usually finds HELLO and CHUNK queued
	 * when it accepts it */
	logd_fd = fd;
	r = link_send_hello(&hello);
	logd_fd = bt_own_fd_hide(fd);
	own_register(&logd_fd);
	if (r < 0)
		goto drop;
	for (unsigned k = 0; k < nchunks; k++) {
		if (!chunks[k].sent)
			chunk_register(&chunks[k]);
		if (!chunks[k].sent)
			goto drop;
	}
	pfd.fd = logd_fd;
	pfd.events = POLLIN;
	do
		r = REAL(poll)(&pfd, 1, 2000);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		goto drop;
	do
		r = REAL(recv)(logd_fd, &w, sizeof w, MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r < (ssize_t)sizeof(struct bt_lm_hdr) || w.h.type != BT_LM_WELCOME)
		goto drop;
	link_state = LINK_UP;
	logd_flags = w.flags;
	for (unsigned k = 0; k < nchunks; k++) {
		/* paused or not as this bp-logd says (a new one may not be),
		 * unless it has mapped the chunk and set its flags since:
		 * those are newer than the WELCOME (a pause or resume may
		 * have come in between) */
		volatile uint32_t *fl = &chunks[k].hdr->flags;
		uint32_t old = __atomic_load_n(fl, __ATOMIC_ACQUIRE);
		while (!(old & BT_CF_LOGD) &&
		       !__atomic_compare_exchange_n(fl, &old,
				(old & ~BT_CF_PAUSED) | (w.flags & BT_CF_PAUSED),
				0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			;
	}
	errno = e;
	return 0;
drop:
	link_drop();
fail:
	link_state = LINK_DOWN;
	errno = e;
	return -1;
}

/*
 * Is bp-logd still there?  It sends us nothing but its welcome, so
 * draining what is queued and finding end-of-file means it died.  Marks the
 * link down then.  Called with link_mu held.
 */
static int link_alive(void)
{
	char buf[sizeof(struct bt_lm_welcome)];
	int e = errno;

	if (logd_fd < 0 || link_state != LINK_UP)
		return 0;
	for (int i = 0; i < 16; i++) {
		ssize_t r = REAL(recv)(logd_fd, buf, sizeof buf, MSG_DONTWAIT);
		if (r > 0)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
			errno = e;
			return 1;
		}
		break;                  /* 0: end of file; other errors: gone */
	}
	link_drop();
	link_retry_at = 0;
	errno = e;
	return 0;
}

/* Try to (re)connect if it is time to.  Returns 1 if the link is up. */
static int link_ensure(void)
{
	int up;

	if (__atomic_load_n(&link_state, __ATOMIC_ACQUIRE) == LINK_UP)
		return 1;
	if (bt_now() < __atomic_load_n(&link_retry_at, __ATOMIC_RELAXED))
		return 0;
	if (pthread_mutex_trylock(&link_mu) != 0)
		return 0;
	if (link_state != LINK_UP)
		link_connect();
	up = link_state == LINK_UP;
	pthread_mutex_unlock(&link_mu);
	return up;
}

static void link_kick(struct bt_slot *s)
{
	struct bt_lm_kick k;
	int r;

	memset(&k, 0, sizeof k);
	k.h.type = BT_LM_KICK;
	k.h.len = sizeof k;
	k.h.version = BT_RING_VERSION;
	k.chunk = s->chunk->index;
	k.slot = s->idx;
	r = link_send(&k, sizeof k, -1);
	if (r == -EPIPE || r == -ECONNRESET || r == -ENOTCONN) {
		pthread_mutex_lock(&link_mu);
		if (link_state == LINK_UP)
			link_drop();
		link_retry_at = bt_now();
		pthread_mutex_unlock(&link_mu);
	}
	/* EAGAIN: the socket is full of kicks already; logd will drain. */
}

/* ---- spool ------------------------------------------------------------ */

static long spool_write_fn(int fd, const void *buf, size_t len)
{
	return REAL(write)(fd, buf, len);
}

/* The boot id bp-logd puts in its headers, so spool files join its
 * segments as one host (read with the real calls: nothing to trace). */
static uint64_t spool_boot_id(void)
{
	char b[64];
	ssize_t n;
	int fd = REAL(open)("/proc/sys/kernel/random/boot_id",
			    O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = REAL(read)(fd, b, sizeof b - 1);
	REAL(close)(fd);
	b[n > 0 ? n : 0] = 0;
	return bt_boot_id_parse(b);
}

/*
 * May we spool into DIR?  Each of its directories must belong to us or to
 * root and be writable by nobody else, unless it is root's and sticky
 * (/tmp): otherwise another user could remove our spool files or put
 * something in their place.
 */
static int spool_dir_safe(char *dir)
{
	uid_t me = geteuid();
	struct stat st;

	for (char *c = dir + 1;; c++) {
		char save = *c;
		if (save && save != '/')
			continue;
		*c = 0;
		int bad = stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
			  (st.st_uid != me && st.st_uid != 0) ||
			  ((st.st_mode & 022) &&
			   !(st.st_uid == 0 && (st.st_mode & S_ISVTX)));
		*c = save;
		if (bad)
			return 0;
		if (!save)
			return 1;
	}
}

/* Create BASE/HOST (mkdir -p, private) and open this process's file. */
static int spool_create(const char *base)
{
	char dir[PATH_MAX], path[PATH_MAX + 64], msg[PATH_MAX + 160];

	if (snprintf(dir, sizeof dir, "%s/%s", base, bt_proc.host) >=
	    (int)sizeof dir)
		return -1;
	for (char *p = dir + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(dir, 0700);
			*p = '/';
		}
	mkdir(dir, 0700);
	if (!spool_dir_safe(dir)) {
		snprintf(msg, sizeof msg,
			 "libbtrace: not spooling into %s: a directory of it belongs to another user or others may write it\n",
			 dir);
		warn_once(2, msg);
		return -1;
	}
	snprintf(path, sizeof path, "%s/%d-%016llx.btl", dir, (int)bt_proc.pid,
		 (unsigned long long)bt_proc.ring_id);
	return REAL(open)(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
				O_NOFOLLOW, 0600);
}

static int spool_open(void)
{
	uint8_t hdr[BT_SEG_HDR_SIZE];
	struct bt_seg_header h;
	int fd;

	if (spool_fd >= 0)
		return 0;
	fd = spool_create(bt_conf.spool_dir);
	if (fd < 0) {
		/* A server that dropped privileges after start-up cannot write
		 * where its root parent chose: its own user's spool instead. */
		char alt[64];
		snprintf(alt, sizeof alt, "/tmp/btrace-%u/spool",
			 (unsigned)geteuid());
		if (strcmp(alt, bt_conf.spool_dir) != 0)
			fd = spool_create(alt);
	}
	if (fd < 0)
		return -1;
	if (lseek(fd, 0, SEEK_END) == 0) {
		struct timespec rt;
		memset(&h, 0, sizeof h);
		h.created_mono = bt_now();
		clock_gettime(CLOCK_REALTIME, &rt);
		h.created_real = (uint64_t)rt.tv_sec * 1000000000ull +
				 (uint64_t)rt.tv_nsec;
		snprintf(h.host, sizeof h.host, "%s", bt_proc.host);
		h.boot_id = spool_boot_id();
		h.writer = BT_SEG_BY_SPOOL;
		h.writer_pid = (uint32_t)bt_proc.pid;
		bt_seg_header_encode(hdr, &h);
		if (spool_write_fn(fd, hdr, sizeof hdr) != (long)sizeof hdr) {
			REAL(close)(fd);
			return -1;
		}
	}
	spool_fd = bt_own_fd_hide(fd);
	own_register(&spool_fd);
	return 0;
}

/* Write slot S's undrained bytes to the spool and advance its tail. */
static int spool_drain(struct bt_chunk *c, unsigned i)
{
	struct bt_slot_hdr *sh = &c->hdr->slot[i];
	uint8_t *data = BT_SLOT_DATA(c->hdr, c->slot_size, i);
	uint64_t h, t;
	int rc = 0;

	pthread_mutex_lock(&spool_mu);
	if (spool_open() < 0) {
		pthread_mutex_unlock(&spool_mu);
		return -1;
	}
	h = __atomic_load_n(&sh->head, __ATOMIC_ACQUIRE);
	t = __atomic_load_n(&sh->tail, __ATOMIC_ACQUIRE);
	while (t < h && rc == 0) {
		uint64_t pos = t & (c->slot_size - 1);
		uint64_t n = h - t;
		struct bt_blk_header bh;

		if (n > c->slot_size - pos)
			n = c->slot_size - pos;
		memset(&bh, 0, sizeof bh);
		bh.len = (uint32_t)n;
		bh.ring_id = bt_proc.ring_id;
		bh.pid = (uint32_t)bt_proc.pid;
		bh.slot = (uint16_t)BT_STREAM_SLOT(c->index, i);
		bh.gen = (uint16_t)sh->gen;
		bh.stream_off = t;
		bh.flags = BT_BF_SPOOL;
		rc = bt_seg_write_block(spool_fd, spool_write_fn, &bh, data + pos);
		if (rc == 0)
			t += n;
	}
	if (t > __atomic_load_n(&sh->tail, __ATOMIC_ACQUIRE))
		__atomic_store_n(&sh->tail, t, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&spool_mu);
	return rc == 0 ? 0 : -1;
}

/* ---- writing records --------------------------------------------------- */

static void futex_wait(volatile uint32_t *w, uint32_t val, long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	syscall(SYS_futex, w, FUTEX_WAIT, val, &ts, NULL, 0);
}

/*
 * Make room in the slot: kick bp-logd and wait for its drain (bounded),
 * or spool when there is no bp-logd.  Returns 0 when there is room.
 */
static int slot_wait(struct bt_slot *s, uint64_t need)
{
	for (int round = 0; round < 40; round++) {
		uint64_t t = __atomic_load_n(&s->sh->tail, __ATOMIC_ACQUIRE);
		if (s->size - (s->head - t) >= need)
			return 0;
		if (!link_ensure()) {
			if (spool_drain(s->chunk, s->idx) < 0)
				return -1;
			continue;
		}
		uint32_t d = __atomic_load_n(&s->sh->drained, __ATOMIC_ACQUIRE);
		s->sh->kicked = 1;
		link_kick(s);
		futex_wait(&s->sh->drained, d, 50);
	}
	return -1;
}

static void pad_lap(struct bt_slot *s, uint32_t pos, uint32_t rem)
{
	uint8_t *p = s->data + pos;
	p[0] = BT_EV_PAD;
	if (rem == 2) {
		p[1] = 0;
	} else {
		uint32_t body = rem - 3;   /* 2-byte varint length, may be non-canonical */
		p[1] = (uint8_t)(0x80 | (body & 0x7f));
		p[2] = (uint8_t)(body >> 7);
	}
}

static void publish(struct bt_slot *s, uint64_t h)
{
	s->head = h;
	__atomic_store_n(&s->sh->head, h, __ATOMIC_RELEASE);
}

/*
 * An upper bound of EV's encoded size (common/event.c): the header, at
 * most 30 varint fields of 10 bytes, two addresses, the strings, and each
 * attribute with its key and length; no more than a record can be.
 */
static size_t ev_bound(const struct bt_event *ev)
{
	size_t n = 3 + 30 * 10 + 2 * 32 + ev->str_len + ev->str2_len;

	for (unsigned i = 0; i < ev->nattr && i < BT_EV_MAX_ATTR; i++)
		n += 4 + ev->attr[i].len;
	return n < BT_EV_MAX_RECORD ? n : BT_EV_MAX_RECORD;
}

static int slot_write(struct bt_slot *s, const struct bt_event *ev);

/*
 * The thread's dictionary, mapped when it first writes a value that may
 * repeat (7,688 bytes; a thread that writes none never has one).  Empty
 * when mapped, so it agrees with the readers' (the stream's values so far
 * went out plain).  Without one every value goes out plain.
 */
static __attribute__((noinline)) void slot_dict_map(struct bt_slot *s)
{
	int e = errno;
	void *p;

	if (s->dict_failed)
		return;
	p = mmap(NULL, sizeof *s->dict, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		s->dict_failed = 1;
		errno = e;
		return;
	}
	s->dict = p;
	bt_ev_dict_init(s->dict);
	errno = e;
}

static inline void slot_dict_need(struct bt_slot *s)
{
	if (unlikely(!s->dict))
		slot_dict_map(s);
}

/*
 * Room for a record of at most NEED bytes at the head of slot S: a TIME
 * record first when one is due (TS is the record's time), the rest of a
 * lap too short padded, or a bounded wait for bp-logd.  Returns where to
 * write and *CAP, the room there (>= NEED, the encoders cut nothing);
 * NULL when there is no room.  slot_commit() publishes what was written.
 */
static uint8_t *slot_reserve_slow(struct bt_slot *s, size_t need, uint64_t ts,
				  size_t *capp)
{
	if (need > s->size - 2)
		need = s->size - 2;

	for (int tries = 0; tries < 8; tries++) {
		uint64_t t = __atomic_load_n(&s->sh->tail, __ATOMIC_ACQUIRE);
		uint64_t used = s->head - t;
		uint32_t pos = (uint32_t)(s->head & (s->size - 1));
		uint32_t lap = s->size - pos;
		uint64_t freeb = s->size - used;
		size_t cap;

		if (used > s->size) {          /* corrupted control block */
			publish(s, t);
			continue;
		}
		if (s->need_time) {
			struct timespec rt;
			struct bt_event te;
			memset(&te, 0, sizeof te);
			te.type = BT_EV_TIME;
			te.ts = ts;
			clock_gettime(CLOCK_REALTIME, &rt);
			te.realtime = (uint64_t)rt.tv_sec * 1000000000ull +
				      (uint64_t)rt.tv_nsec;
			s->need_time = 0;
			if (slot_write(s, &te) < 0) {
				s->need_time = 1;
				return NULL;
			}
			continue;
		}
		cap = lap - 2 < freeb ? lap - 2 : freeb;
		if (cap >= need) {
			*capp = cap;
			return s->data + pos;
		}
		if (lap - 2 < need && freeb >= lap) {
			/* The rest of the lap is too short: pad it and wrap. */
			pad_lap(s, pos, lap);
			publish(s, s->head + lap);
			s->need_time = 1;
			continue;
		}
		if (slot_wait(s, lap - 2 < need ? lap : need + 2) < 0)
			return NULL;
	}
	return NULL;
}

static inline uint8_t *slot_reserve(struct bt_slot *s, size_t need,
				    uint64_t ts, size_t *capp)
{
	if (likely(!s->need_time)) {
		uint64_t t = __atomic_load_n(&s->sh->tail, __ATOMIC_ACQUIRE);
		uint64_t used = s->head - t;
		if (likely(used <= s->size)) {
			uint32_t pos = (uint32_t)(s->head & (s->size - 1));
			uint32_t lap = s->size - pos;
			uint64_t freeb = s->size - used;
			size_t cap = lap - 2 < freeb ? lap - 2 : freeb;
			if (likely(cap >= need)) {
				*capp = cap;
				return s->data + pos;
			}
		}
	}
	return slot_reserve_slow(s, need, ts, capp);
}

/* N bytes were written where slot_reserve said: publish them. */
static inline void slot_commit(struct bt_slot *s, size_t n)
{
	uint64_t nh = s->head + n;
	uint64_t t = __atomic_load_n(&s->sh->tail, __ATOMIC_ACQUIRE);

	publish(s, nh);
	/* Kick at half full (kicked 1), and once more past three quarters
	 * (kicked 2) in case the first went to a bp-logd that died since: a
	 * failed send is how its death is noticed.  bp-logd clears the
	 * flag. */
	uint64_t fill = nh - t;
	uint32_t k = s->sh->kicked;
	if (unlikely((fill > s->size / 2 && k == 0) ||
		     (fill > s->size / 4 * 3 && k == 1))) {
		if (link_ensure()) {
			s->sh->kicked = k + 1;
			link_kick(s);
		} else {
			spool_drain(s->chunk, s->idx);
		}
	}
}

/* Encode EV into the slot.  0 ok, -1 not recorded.  The encoder cuts
 * attributes to the room it is given: it is given room for the whole
 * record (wrapping or waiting first); only a record larger than the ring
 * allows is cut. */
static int slot_write(struct bt_slot *s, const struct bt_event *ev)
{
	size_t cap, n;
	uint8_t *p = slot_reserve(s, ev_bound(ev), ev->ts, &cap);

	if (!p)
		return -1;
	n = bt_ev_encode_dict(p, cap, ev, &s->prev_ts, s->dict);
	if (!n)
		return -1;
	slot_commit(s, n);
	return 0;
}

static int paused_flag(void)
{
	return bt_paused();
}

static void emit_drop_report(void);
static void emit_resumed(uint64_t ts);

/*
 * Claim this thread's slot and write its first records.  A thread that
 * gets none cannot report its own losses: they are counted on the
 * process's first slot, whose lost counter bp-logd reports.
 */
static int claim(void)
{
	if (bt_self.noslot || slot_claim() < 0) {
		bt_self.noslot = 1;
		bt_self.dropped++;
		bt_self.drop_reason = BT_DR_NO_SLOT;
		if (__atomic_load_n(&nchunks, __ATOMIC_ACQUIRE))
			__atomic_add_fetch(&chunks[0].hdr->slot[0].lost, 1,
					   __ATOMIC_RELAXED);
		return -1;
	}
	bt_thread_first_records();
	return 0;
}

void bt_emit_claim(void)
{
	if (!bt_self.have_slot && !paused_flag())
		claim();
}

void bt_msg_rec_event(const struct bt_msg_rec *m, struct bt_event *ev)
{
	memset(ev, 0, sizeof *ev);
	ev->type = BT_EV_MSG;
	ev->ts = m->ts;
	ev->fd = m->fd;
	ev->dir = m->dir;
	ev->kind = m->kind;
	ev->proto = m->proto;
	ev->flags = m->flags;
	ev->off = m->off;
	ev->len = m->len;
	ev->status = m->status;
	ev->witness = m->witness;
	ev->nattr = m->nattr > BT_EV_MAX_ATTR ? BT_EV_MAX_ATTR : m->nattr;
	memcpy(ev->attr, m->attr, sizeof ev->attr[0] * ev->nattr);
}

/* A record that found no room: counted in the ring and reported by the
 * thread's next record (DROP). */
static void ring_full(struct bt_slot *s)
{
	bt_self.dropped++;
	bt_self.drop_reason = BT_DR_RING_FULL;
	__atomic_add_fetch(&s->sh->lost, 1, __ATOMIC_RELAXED);
}

/*
 * What every record written straight into the ring goes through first:
 * not from inside the shim, not while paused (counted: the caller's
 * channel goes dark, io.c), its time, the thread's slot, and the records
 * owed before it (losses, the end of a pause).  0 when it may be written.
 */
static inline int fast_begin(uint64_t *ts)
{
	if (unlikely(bt_self.depth > 1)) {
		bt_self.dropped++;
		bt_self.drop_reason = BT_DR_REENTRANT;
		return -1;
	}
	if (unlikely(paused_flag())) {
		bt_self.paused_calls++;
		bt_self.pause_lost++;
		return -1;
	}
	if (!*ts)
		*ts = bt_now();
	if (unlikely(!bt_self.have_slot) && claim() < 0)
		return -1;
	if (unlikely(bt_self.dropped))
		emit_drop_report();
	if (unlikely(bt_self.paused_calls))
		emit_resumed(*ts);
	return 0;
}

void bt_emit_msg(struct bt_msg_rec *m)
{
	struct bt_slot *s = &bt_self.slot;
	size_t bound = bt_ev_msg_bound(m);

	if (unlikely(bound > 2048)) {
		/* long (or too long: the careful encoder cuts it, and a ring
		 * slot smaller than the record gets it cut, not dropped):
		 * the general path */
		struct bt_event ev;
		bt_msg_rec_event(m, &ev);
		bt_emit(&ev);
		return;
	}
	if (fast_begin(&m->ts) < 0)
		return;
	if (m->nattr)
		slot_dict_need(s);
	size_t cap;
	uint8_t *p = slot_reserve(s, bound + 3, m->ts, &cap);
	if (likely(p))          /* bound <= 2048, cap >= bound + 3 */
		slot_commit(s, bt_ev_encode_msg_fit(p, m, &s->prev_ts,
						    s->dict));
	else
		ring_full(s);
}

/* bt_emit of an OPEN (bt_opened), without a struct bt_event: the same
 * record, the same room reserved (ev_bound's), the same dictionary. */
void bt_emit_open(int fd, uint32_t flags, const char *path, uint32_t len)
{
	struct bt_slot *s = &bt_self.slot;
	uint64_t ts = 0;

	if (fast_begin(&ts) < 0)
		return;
	slot_dict_need(s);
	size_t cap;
	uint8_t *p = slot_reserve(s, 3 + 30 * 10 + 2 * 32 + (size_t)len, ts,
				  &cap);
	if (likely(p))          /* cap >= 367 + len, len <= BT_EV_MAX_STR */
		slot_commit(s, bt_ev_encode_open(p, ts, &s->prev_ts, fd, flags,
						 fd, path, len, s->dict));
	else
		ring_full(s);
}

void bt_emit_ints(unsigned type, uint64_t ts, unsigned n, const uint64_t *v)
{
	struct bt_slot *s = &bt_self.slot;

	if (fast_begin(&ts) < 0)
		return;
	size_t cap;
	uint8_t *p = slot_reserve(s, BT_EV_INTS_ROOM(n), ts, &cap);
	if (likely(p))
		slot_commit(s, bt_ev_encode_ints(p, type, ts, &s->prev_ts, n, v));
	else
		ring_full(s);
}

static void emit_now(struct bt_event *ev)
{
	struct bt_slot *s = &bt_self.slot;

	if (!ev->ts)
		ev->ts = bt_now();
	if (unlikely(!bt_self.have_slot) && claim() < 0)
		return;
	if (unlikely(bt_self.dropped))
		emit_drop_report();
	if (unlikely(bt_self.paused_calls) && !paused_flag())
		emit_resumed(ev->ts);
	if (ev->nattr || ev->type == BT_EV_OPEN)
		slot_dict_need(s);
	if (slot_write(s, ev) < 0)
		ring_full(s);
}

void bt_emit(struct bt_event *ev)
{
	if (unlikely(bt_self.depth > 1)) {
		bt_self.dropped++;
		bt_self.drop_reason = BT_DR_REENTRANT;
		return;
	}
	if (unlikely(paused_flag())) {
		/* not recorded: the caller's channel goes dark (io.c) */
		bt_self.paused_calls++;
		bt_self.pause_lost++;
		return;
	}
	emit_now(ev);
}

void bt_emit_always(struct bt_event *ev)
{
	if (unlikely(bt_self.depth > 1)) {
		bt_self.dropped++;
		bt_self.drop_reason = BT_DR_REENTRANT;
		return;
	}
	emit_now(ev);
}

/*
 * The first record of a thread that made calls while tracing was paused:
 * how many went untraced (DROP, reason paused), and that what the thread
 * does now belongs to no request until its next input (READY -1): it may
 * have read a request during the pause that the log does not show.
 */
static void emit_resumed(uint64_t ts)
{
	struct bt_event d;
	uint64_t n = bt_self.paused_calls;

	memset(&d, 0, sizeof d);
	d.type = BT_EV_DROP;
	d.ts = ts;
	d.len = n;
	d.flags = BT_DR_PAUSED;
	if (slot_write(&bt_self.slot, &d) < 0)
		return;
	memset(&d, 0, sizeof d);
	d.type = BT_EV_READY;
	d.ts = ts;
	d.fd = -1;
	if (slot_write(&bt_self.slot, &d) < 0)
		return;
	bt_self.paused_calls -= n;
	bt_self.noreq_mark = bt_self.slot.head;
}

void bt_emit_unknown_input(void)
{
	struct bt_event d;

	if (bt_self.have_slot && bt_self.noreq_mark == bt_self.slot.head)
		return;                  /* our last record says so already */
	if (bt_self.have_slot && bt_self.paused_calls && !paused_flag()) {
		emit_resumed(bt_now());  /* which ends with READY -1 */
		return;
	}
	uint64_t h0 = bt_self.slot.head;
	memset(&d, 0, sizeof d);
	d.type = BT_EV_READY;
	d.fd = -1;
	bt_emit(&d);
	bt_noreq_mark(h0);
}

static void emit_drop_report(void)
{
	struct bt_event d;
	uint64_t n = bt_self.dropped;

	memset(&d, 0, sizeof d);
	d.type = BT_EV_DROP;
	d.ts = bt_now();
	d.len = n;
	d.flags = bt_self.drop_reason;
	if (slot_write(&bt_self.slot, &d) == 0)
		bt_self.dropped -= n;
}

/*
 * The thread is about to block (readiness call with a timeout, accept).
 * Without bp-logd, write its ring to the spool now: a server is usually
 * killed while it waits, and a killed process cannot flush afterwards.
 * With bp-logd this is one load and a compare.
 */
int bt_idle_spool = 1;   /* the unit tests read records from the ring */

void bt_emit_idle(void)
{
	struct bt_slot *s = &bt_self.slot;
	static uint64_t last_check;

	if (!bt_self.have_slot ||
	    __atomic_load_n(&s->sh->tail, __ATOMIC_ACQUIRE) == s->head)
		return;
	if (likely(__atomic_load_n(&link_state, __ATOMIC_RELAXED) == LINK_UP)) {
		/* Undrained events while bp-logd should drain every 50 ms:
		 * look whether it is still there, at most 5 times a second. */
		uint64_t now = bt_now();
		if (now - __atomic_load_n(&last_check, __ATOMIC_RELAXED) < 200000000ull)
			return;
		__atomic_store_n(&last_check, now, __ATOMIC_RELAXED);
		if (pthread_mutex_trylock(&link_mu) != 0)
			return;
		int alive = link_alive();
		pthread_mutex_unlock(&link_mu);
		if (alive)
			return;
	}
	if (link_ensure() || !bt_idle_spool)
		return;
	spool_drain(s->chunk, s->idx);
}

/* ---- lifecycle -------------------------------------------------------- */

static void thread_key_dtor(void *v)
{
	(void)v;
	bt_emit_thread_exit();
}

void bt_emit_start(void)
{
	if (!thread_key_ok)
		thread_key_ok = pthread_key_create(&thread_key, thread_key_dtor) == 0;
	pthread_mutex_lock(&chunk_mu);
	if (!nchunks)
		chunk_create();
	pthread_mutex_unlock(&chunk_mu);
	pthread_mutex_lock(&link_mu);
	if (link_state != LINK_UP)
		link_connect();
	pthread_mutex_unlock(&link_mu);
}

void bt_emit_thread_exit(void)
{
	struct bt_event ev;

	if (!bt_self.have_slot)
		return;
	bt_self.depth++;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_THREAD_EXIT;
	ev.ts = bt_now();
	slot_write(&bt_self.slot, &ev);
	if (__atomic_load_n(&link_state, __ATOMIC_ACQUIRE) != LINK_UP)
		spool_drain(bt_self.slot.chunk, bt_self.slot.idx);
	__atomic_store_n(&bt_self.slot.sh->state, BT_SLOT_EXITED,
			 __ATOMIC_RELEASE);
	if (bt_self.slot.dict) {
		munmap(bt_self.slot.dict, sizeof *bt_self.slot.dict);
		bt_self.slot.dict = NULL;
	}
	bt_self.have_slot = 0;
	bt_self.noslot = 1;          /* a dying thread claims no new slot */
	bt_self.depth--;
}

/*
 * Before exec or at exit: every published event must reach bp-logd or the
 * spool.  With a link, logd drains on our socket's EOF (exec closes it,
 * exit kills it), so only the disconnected case needs work here.
 */
void bt_emit_flush(int final)
{
	unsigned n = __atomic_load_n(&nchunks, __ATOMIC_ACQUIRE);

	/* The link must really be there: bp-logd may have died (and been
	 * restarted) without our noticing.  Reconnect at once if needed. */
	pthread_mutex_lock(&link_mu);
	if (!link_alive())
		link_connect();
	if (link_state == LINK_UP) {
		struct bt_lm_hdr bye = { BT_LM_BYE, sizeof bye, BT_RING_VERSION };
		if (!final || link_send(&bye, sizeof bye, -1) == 0) {
			pthread_mutex_unlock(&link_mu);
			return;
		}
		link_drop();
	}
	pthread_mutex_unlock(&link_mu);
	for (unsigned k = 0; k < n; k++)
		for (unsigned i = 0; i < chunks[k].nslots; i++)
			if (chunks[k].hdr->slot[i].head != chunks[k].hdr->slot[i].tail)
				spool_drain(&chunks[k], i);
}

void bt_emit_atfork_prepare(void)
{
	pthread_mutex_lock(&chunk_mu);
	pthread_mutex_lock(&link_mu);
	pthread_mutex_lock(&spool_mu);
	pthread_mutex_lock(&own_mu);
}

void bt_emit_atfork_parent(void)
{
	pthread_mutex_unlock(&own_mu);
	pthread_mutex_unlock(&spool_mu);
	pthread_mutex_unlock(&link_mu);
	pthread_mutex_unlock(&chunk_mu);
}

/* The child owns nothing of the parent's rings: unmap, close, start over. */
void bt_emit_atfork_child(void)
{
	pthread_mutex_init(&chunk_mu, NULL);
	pthread_mutex_init(&link_mu, NULL);
	pthread_mutex_init(&spool_mu, NULL);
	pthread_mutex_init(&own_mu, NULL);
	bt_pause_word = &no_pause;       /* until the child has its chunk 0 */
	for (unsigned k = 0; k < nchunks; k++) {
		own_unregister(&chunks[k].memfd);
		bt_fd_set(chunks[k].memfd, BT_FD_NONE);
		REAL(close)(chunks[k].memfd);
		munmap(chunks[k].hdr, chunks[k].map_size);
		memset(&chunks[k], 0, sizeof chunks[k]);
	}
	nchunks = 0;
	if (logd_fd >= 0) {
		own_unregister(&logd_fd);
		bt_fd_set(logd_fd, BT_FD_NONE);
		REAL(close)(logd_fd);
		logd_fd = -1;
	}
	link_state = LINK_DOWN;
	link_retry_at = 0;
	if (spool_fd >= 0) {
		own_unregister(&spool_fd);
		bt_fd_set(spool_fd, BT_FD_NONE);
		REAL(close)(spool_fd);
		spool_fd = -1;
	}
	{
		/* the thread's dictionary is the child's copy: kept (the
		 * child's stream starts with TIME, which empties it) */
		struct bt_ev_dict *d = bt_self.slot.dict;
		memset(&bt_self.slot, 0, sizeof bt_self.slot);
		bt_self.slot.dict = d;
	}
	bt_self.have_slot = 0;
	bt_self.noslot = 0;
	bt_self.dropped = 0;
}

/* ---- test hook ---------------------------------------------------------- */

/*
 * bt_test_events - decode the calling thread's undrained records, calling
 * CB for each; CONSUME marks them drained (as bp-logd would).  For the unit
 * tests, which link the shim's core without LD_PRELOAD and without logd.
 * Returns the number of records, or -1 if the thread has no slot.
 */
int bt_test_events(void (*cb)(const struct bt_event *ev, void *ctx),
		   void *ctx, int consume)
{
	struct bt_slot *s = &bt_self.slot;
	uint64_t t, h, prev = 0;
	int n = 0;

	if (!bt_self.have_slot)
		return -1;
	/* A reader's dictionary as it stood at the tail (kept from the
	 * last call that consumed up to there), so that records read
	 * again, or read after consumed ones, resolve as bp-logd's reader
	 * would.  For the tests only: allocated on first use. */
	static struct {
		struct bt_ev_dict at_tail, work;
		const struct bt_slot_hdr *sh;
		uint64_t tail;
	} *td;
	if (!td && !(td = calloc(1, sizeof *td)))
		return -1;
	t = __atomic_load_n(&s->sh->tail, __ATOMIC_ACQUIRE);
	if (td->sh != s->sh || td->tail != t) {
		bt_ev_dict_init(&td->at_tail);
		td->sh = s->sh;
		td->tail = t;
	}
	td->work = td->at_tail;
	h = __atomic_load_n(&s->sh->head, __ATOMIC_ACQUIRE);
	while (t < h) {
		uint32_t pos = (uint32_t)(t & (s->size - 1));
		uint32_t lim = s->size - pos;
		struct bt_event ev;
		long k;

		if (lim > h - t)
			lim = (uint32_t)(h - t);
		k = bt_ev_decode_dict(s->data + pos, lim, &ev, &prev,
				      &td->work);
		if (k <= 0)
			return -1;
		if (ev.type != BT_EV_PAD) {
			if (cb)
				cb(&ev, ctx);
			n++;
		}
		t += (uint64_t)k;
	}
	if (consume) {
		__atomic_store_n(&s->sh->tail, h, __ATOMIC_RELEASE);
		td->at_tail = td->work;
		td->tail = h;
	}
	return n;
}
