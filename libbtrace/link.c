/*
 * link.c - the link to bp-logd: connect, register chunks, kick, notice
 * its death.
 */
#include "config.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <stddef.h>
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
#include "logpath.h"

int bt_link_fd = -1;
int bt_link_state = LINK_DOWN;
uint64_t bt_link_retry_at;           /* monotonic ns of the next try */
uint32_t bt_link_logd_flags;         /* BT_CF_* of the last WELCOME */
uint32_t bt_link_logd_features;      /* BT_LW_* of the last WELCOME */
/* LINK_LAZY: the first connection goes to the lazy listener
 * (link_connect_lazy): 1 a forked child's (bt_link_atfork_child), 2 an
 * exec'd image's (bt_link_exec_lazy); LINK_LAZY_UP while that connection
 * may not have been accepted yet (lazy_poke) */
static int link_lazy, link_lazy_up;
pthread_mutex_t bt_link_mu = PTHREAD_MUTEX_INITIALIZER;

/* ---- the logd link ---------------------------------------------------- */

int bt_link_send(const void *msg, size_t len, int fd_to_pass)
{
	struct iovec iov = { (void *)msg, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	union { struct cmsghdr c; char buf[CMSG_SPACE(sizeof(int))]; } u;
	ssize_t r;

	if (bt_link_fd < 0)
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
		r = REAL(sendmsg)(bt_link_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return 0;
}

/*
 * HELLO, the tracer's census list when CENSUS is not NULL, and chunk 0's
 * CHUNK in one system call (sendmmsg): bp-logd, woken by the first, finds
 * the others queued too and registers the ring in one pass.  Marks chunk 0
 * sent if it went.  Returns how many of HELLO and CENSUS went (1 or 2),
 * or -errno when the HELLO did not.
 */
static int link_send_hello(const struct bt_lm_hello *hello,
			   const struct bt_lm_census *census)
{
	struct bt_lm_chunk m;
	struct iovec iov[3];
	struct mmsghdr mm[3];
	union { struct cmsghdr c; char buf[CMSG_SPACE(sizeof(int))]; } u;
	struct cmsghdr *cm;
	unsigned k = 0, want = census ? 2 : 1;
	int r;

	if (!REAL(sendmmsg) || bt_link_fd < 0) {
		r = bt_link_send(hello, sizeof *hello, -1);
		if (r < 0)
			return r;
		return census && bt_link_send(census, census->h.len, -1) < 0 ? 1 : (int)want;
	}
	memset(mm, 0, sizeof mm);
	iov[k] = (struct iovec){ (void *)hello, sizeof *hello };
	mm[k].msg_hdr.msg_iov = &iov[k];
	mm[k++].msg_hdr.msg_iovlen = 1;
	if (census) {
		iov[k] = (struct iovec){ (void *)census, census->h.len };
		mm[k].msg_hdr.msg_iov = &iov[k];
		mm[k++].msg_hdr.msg_iovlen = 1;
	}
	if (bt_ring_nchunks) {
		bt_ring_chunk_msg(&bt_ring_chunks[0], &m);
		memset(&u, 0, sizeof u);
		iov[k] = (struct iovec){ &m, sizeof m };
		mm[k].msg_hdr.msg_iov = &iov[k];
		mm[k].msg_hdr.msg_iovlen = 1;
		mm[k].msg_hdr.msg_control = u.buf;
		mm[k].msg_hdr.msg_controllen = sizeof u.buf;
		cm = CMSG_FIRSTHDR(&mm[k].msg_hdr);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &bt_ring_chunks[0].memfd, sizeof(int));
		k++;
	}
	do
		r = REAL(sendmmsg)(bt_link_fd, mm, k, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -EAGAIN;
	if (bt_ring_nchunks)
		bt_ring_chunks[0].sent = (unsigned)r == k;
	return r < (int)want ? r : (int)want;
}

void bt_link_drop(void)
{
	if (bt_link_fd >= 0) {
		int fd = bt_link_fd;
		bt_link_fd = -1;
		bt_own_unregister(&bt_link_fd);
		bt_fd_set(fd, BT_FD_NONE);
		REAL(close)(fd);
	}
	bt_link_state = LINK_DOWN;
	link_lazy_up = 0;
	for (unsigned k = 0; k < bt_ring_nchunks; k++)
		bt_ring_chunks[k].sent = 0;
}

/* One line on the traced program's stderr, once per process and KIND. */
void bt_link_warn_once(unsigned kind, const char *text)
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
	bt_link_warn_once(1, msg);
	return 0;
}

/*
 * After fork, in the child: the parent's connection is closed (the child
 * makes its own), and the child's first connection goes to bp-logd's lazy
 * listener when that is exact (docs/logd.md, "Forked children"): the
 * parent's link was up, its bp-logd has the listener (BT_LW_LAZY), and
 * the census would not look at the child anyway (the parent counted a
 * socket call, CENSUS > 0: the child does not wait until bp-logd has
 * looked).  PARENT_FLAGS: the parent's chunk 0 flags at the fork, whose
 * pause state the child starts from until bp-logd maps its chunk.
 */
void bt_link_atfork_child(uint32_t parent_flags, uint32_t census)
{
	link_lazy_up = 0;
	link_lazy = bt_link_fd >= 0 && bt_link_state == LINK_UP &&
		    (bt_link_logd_features & BT_LW_LAZY) && census > 0 &&
		    bt_conf.child_lazy;
	if (bt_link_fd >= 0) {
		bt_own_unregister(&bt_link_fd);
		bt_fd_set(bt_link_fd, BT_FD_NONE);
		REAL(close)(bt_link_fd);
		bt_link_fd = -1;
	}
	bt_link_state = LINK_DOWN;
	bt_link_retry_at = 0;
	bt_link_logd_flags = (bt_link_logd_flags & ~BT_CF_PAUSED) |
			     (parent_flags & BT_CF_PAUSED);
}

/*
 * May an image this one execs start without waiting for bp-logd
 * (exec_common marks the exec so, "BTRACE_EXECED=<pid>:L")?  When our
 * link is up and our bp-logd has the lazy listener and takes a tracer's
 * census list (BT_LW_LAZY, BT_LW_CENSUS), and BTRACE_CHILD_LAZY=2 asks
 * for it (not the default: docs/logd.md, "Exec'd images").  The caller
 * knows we are not paused.
 */
int bt_link_exec_lazy_ok(void)
{
	const uint32_t both = BT_LW_LAZY | BT_LW_CENSUS;

	return __atomic_load_n(&bt_link_state, __ATOMIC_ACQUIRE) == LINK_UP &&
	       (bt_link_logd_features & both) == both && bt_conf.child_lazy >= 2;
}

/* In an image so exec'd: its first connection goes to the lazy listener,
 * with its census list (link_connect_lazy). */
void bt_link_exec_lazy(void)
{
	link_lazy = 2;
	bt_link_logd_features = BT_LW_LAZY | BT_LW_CENSUS;
}

/*
 * FD, just connected, becomes the link: HELLO (with the census list when
 * CENSUS is not NULL, and chunk 0) first, then the socket moves to the
 * shim's numbers (bp-logd, woken by the connection, then usually finds
 * all of it queued when it accepts it), then every chunk not sent yet.
 * 0 when all went; -1 when the HELLO did not (nothing is queued on FD);
 * -2 when the HELLO did but not the rest.  bt_link_fd is FD's new number
 * either way.
 */
static int link_hand_over(int fd, const struct bt_lm_hello *hello,
			  const struct bt_lm_census *census)
{
	int r;

	bt_link_fd = fd;
	r = link_send_hello(hello, census);
	bt_link_fd = bt_own_fd_hide(fd);
	bt_own_register(&bt_link_fd);
	if (r < 0)
		return -1;
	if (census && r < 2)
		return -2;
	for (unsigned k = 0; k < bt_ring_nchunks; k++) {
		if (!bt_ring_chunks[k].sent)
			bt_ring_chunk_register(&bt_ring_chunks[k]);
		if (!bt_ring_chunks[k].sent)
			return -2;
	}
	return 0;
}

/*
 * Wait (up to 2 s) for bp-logd's WELCOME on the link and take its flags:
 * the link is up then.  0, or -1 (the caller drops the link).
 */
static int link_await_welcome(void)
{
	struct bt_lm_welcome w;
	struct pollfd pfd;
	ssize_t r;

	pfd.fd = bt_link_fd;
	pfd.events = POLLIN;
	do
		r = REAL(poll)(&pfd, 1, 2000);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return -1;
	do
		r = REAL(recv)(bt_link_fd, &w, sizeof w, MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r < (ssize_t)sizeof(struct bt_lm_hdr) || w.h.type != BT_LM_WELCOME)
		return -1;
	bt_link_state = LINK_UP;
	bt_link_logd_flags = w.flags;
	/* (an older bp-logd's WELCOME has zeros there) */
	bt_link_logd_features = r >= (ssize_t)sizeof w ? w.features : 0;
	for (unsigned k = 0; k < bt_ring_nchunks; k++) {
		/* paused or not as this bp-logd says (a new one may not be),
		 * unless it has mapped the chunk and set its flags since:
		 * those are newer than the WELCOME (a pause or resume may
		 * have come in between) */
		volatile uint32_t *fl = &bt_ring_chunks[k].hdr->flags;
		uint32_t old = __atomic_load_n(fl, __ATOMIC_ACQUIRE);
		while (!(old & BT_CF_LOGD) &&
		       !__atomic_compare_exchange_n(fl, &old,
				(old & ~BT_CF_PAUSED) | (w.flags & BT_CF_PAUSED),
				0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			;
	}
	return 0;
}

static void lazy_poke(void);

/*
 * The sockets this image holds, listed for bp-logd's census into M
 * (BT_LM_CENSUS): what bp-logd would have found at HELLO while the
 * tracer waited.  Read with getdents64 from /proc/self/fd and fstat, by
 * system call numbers (no record of our own).  0, or -1 when it cannot be
 * known here (no /proc, more than 256 descriptors or BT_LM_CENSUS_MAX
 * sockets, as bp-logd's look at HELLO would refuse): then the image
 * waits for the WELCOME as any other.
 */
static int census_list(struct bt_lm_census *m)
{
	char buf[4096] __attribute__((aligned(8)));
	unsigned fds = 0;
	long got;
	int dfd, bad = 0;

	memset(m, 0, offsetof(struct bt_lm_census, ino));
	m->h.type = BT_LM_CENSUS;
	m->h.version = BT_RING_VERSION;
	dfd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/fd",
			   O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	do {
		got = syscall(SYS_getdents64, dfd, buf, sizeof buf);
		if (got < 0)
			bad = 1;
		for (long off = 0; !bad && off < got;) {
			const char *name = buf + off + 19;   /* d_name */
			unsigned short reclen;
			struct stat st;
			long fd = 0;

			memcpy(&reclen, buf + off + 16, sizeof reclen);
			off += reclen;
			if (*name < '0' || *name > '9')
				continue;
			for (; *name >= '0' && *name <= '9'; name++)
				fd = fd * 10 + (*name - '0');
			if (fd == dfd)
				continue;
			if (++fds > 256) {
				bad = 1;
				break;
			}
			if (fstat((int)fd, &st) < 0 ||
			    !S_ISSOCK(st.st_mode))
				continue;
			if (m->n >= BT_LM_CENSUS_MAX) {
				bad = 1;
				break;
			}
			m->ino[m->n++] = (uint64_t)st.st_ino;
		}
	} while (!bad && got > 0);
	(void)syscall(SYS_close, dfd);
	return bad ? -1 : 0;
}

/*
 * The first connection of a forked child (MODE 1) or of an image exec'd
 * by a traced one (MODE 2), to the lazy listener: HELLO and the chunks
 * (and an exec'd image's own census list, BT_LM_CENSUS) are queued there,
 * and the image goes on without a WELCOME; bp-logd accepts on its drain
 * timer without waking for it.  Whatever the image writes is safe from
 * then on: the memfd is in bp-logd's queue, and the end of file of an
 * exec or exit follows it there.  If bp-logd dies with the connection
 * queued, the image's end is reset, which bt_link_alive sees (the flush
 * before exec and at exit then connects again or spools, and the mapping
 * still holds every record).  When the HELLO went but not the rest (no
 * room on the socket, or too many descriptors in flight), the image waits
 * for the WELCOME on this connection, as on any other.  0 when the link
 * is up; -1 when nothing was queued (the caller connects as usual); -2
 * when the HELLO went but the link was dropped after all (the caller does
 * not connect again now: bp-logd may still hold that ring's first
 * connection).  Called with bt_link_mu held.
 */
static int link_connect_lazy(const struct sockaddr_un *main_sa,
			     const struct bt_lm_hello *hello, int mode)
{
	struct sockaddr_un sa = *main_sa;
	struct bt_lm_census census;
	size_t l = strlen(sa.sun_path);
	struct stat st;
	int fd, r;

	if (l + sizeof BT_LAZY_SUFFIX > sizeof sa.sun_path)
		return -1;
	memcpy(sa.sun_path + l, BT_LAZY_SUFFIX, sizeof BT_LAZY_SUFFIX);
	/* an exec'd image lists its sockets before its program runs, as
	 * bp-logd would look at them while it waited */
	if (mode == 2 && census_list(&census) < 0)
		return -1;
	/* non-blocking: a full queue (bp-logd far behind) is EAGAIN, and the
	 * image then connects as any tracer */
	fd = REAL(socket)(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (REAL(connect)(fd, (const struct sockaddr *)&sa, sizeof sa) < 0 ||
	    !logd_trusted(fd)) {
		REAL(close)(fd);
		return -1;
	}
	if (mode == 2) {
		/* and this connection, which bp-logd's look would see */
		if (census.n >= BT_LM_CENSUS_MAX ||
		    fstat(fd, &st) < 0) {
			REAL(close)(fd);
			return -1;
		}
		census.ino[census.n++] = (uint64_t)st.st_ino;
		census.h.len = (uint16_t)(offsetof(struct bt_lm_census, ino) +
					  census.n * sizeof census.ino[0]);
	}
	r = link_hand_over(fd, hello, mode == 2 ? &census : NULL);
	if (r == -1) {
		bt_link_drop();
		return -1;
	}
	if (r == -2) {
		lazy_poke();            /* (link_lazy_up stays 0: we wait) */
		if (link_await_welcome() < 0)
			goto drop;
		for (unsigned k = 0; k < bt_ring_nchunks; k++) {
			if (!bt_ring_chunks[k].sent)
				bt_ring_chunk_register(&bt_ring_chunks[k]);
			if (!bt_ring_chunks[k].sent)
				goto drop;
		}
		return 0;
	}
	bt_link_state = LINK_UP;
	link_lazy_up = 1;
	return 0;
drop:
	bt_link_drop();
	bt_link_state = LINK_DOWN;
	return -2;
}

/*
 * A kick on a connection to the lazy listener that bp-logd may not have
 * accepted yet would wait for its drain timer: wake bp-logd with an empty
 * connection to its socket, on which it accepts the lazy listener's queue
 * first (docs/logd.md, "Forked children").  Once a WELCOME is queued on
 * ours (bp-logd accepted it), kicks are read as on any connection.
 */
static void lazy_poke(void)
{
	struct sockaddr_un sa;
	char b;
	int fd, e = errno;
	ssize_t r = REAL(recv)(bt_link_fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);

	if (r != 0 && !(r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) {
		link_lazy_up = 0;            /* accepted (or gone) */
		errno = e;
		return;
	}
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (strlen(bt_conf.logd_path) < sizeof sa.sun_path &&
	    (fd = REAL(socket)(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC |
			       SOCK_NONBLOCK, 0)) >= 0) {
		strcpy(sa.sun_path, bt_conf.logd_path);
		(void)REAL(connect)(fd, (struct sockaddr *)&sa, sizeof sa);
		REAL(close)(fd);
	}
	errno = e;
}

/* Connect and register every chunk.  Called with bt_link_mu held. */
int bt_link_connect(void)
{
	struct sockaddr_un sa;
	struct bt_lm_hello hello;
	int fd, e = errno;

	bt_link_retry_at = bt_now() + 1000000000ull;
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
	for (unsigned k = 0; k < bt_ring_nchunks; k++) {
		/* a new bp-logd owes no drain for kicks sent to the old one */
		for (unsigned i = 0; i < bt_ring_chunks[k].nslots; i++)
			bt_ring_chunks[k].hdr->slot[i].kicked = 0;
		__atomic_and_fetch(&bt_ring_chunks[k].hdr->flags, ~BT_CF_LOGD,
				   __ATOMIC_ACQ_REL);
	}
	if (link_lazy) {
		int mode = link_lazy, r;

		link_lazy = 0;          /* once: a reconnection waits */
		r = link_connect_lazy(&sa, &hello, mode);
		if (r == 0 || r == -2) {
			errno = e;
			return r == 0 ? 0 : -1;
		}
	}
	fd = REAL(socket)(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	if (REAL(connect)(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    !logd_trusted(fd)) {
		REAL(close)(fd);
		goto fail;
	}
	if (link_hand_over(fd, &hello, NULL) < 0 || link_await_welcome() < 0)
		goto drop;
	errno = e;
	return 0;
drop:
	bt_link_drop();
fail:
	bt_link_state = LINK_DOWN;
	errno = e;
	return -1;
}

/*
 * Is bp-logd still there?  It sends us nothing but its welcome, so
 * draining what is queued and finding end-of-file means it died.  Marks the
 * link down then.  Called with bt_link_mu held.
 */
int bt_link_alive(void)
{
	char buf[sizeof(struct bt_lm_welcome)];
	int e = errno;

	if (bt_link_fd < 0 || bt_link_state != LINK_UP)
		return 0;
	for (int i = 0; i < 16; i++) {
		ssize_t r = REAL(recv)(bt_link_fd, buf, sizeof buf, MSG_DONTWAIT);
		if (r > 0)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
			errno = e;
			return 1;
		}
		break;                  /* 0: end of file; other errors: gone */
	}
	bt_link_drop();
	bt_link_retry_at = 0;
	errno = e;
	return 0;
}

/* Try to (re)connect if it is time to.  Returns 1 if the link is up. */
int bt_link_ensure(void)
{
	int up;

	if (__atomic_load_n(&bt_link_state, __ATOMIC_ACQUIRE) == LINK_UP)
		return 1;
	if (bt_now() < __atomic_load_n(&bt_link_retry_at, __ATOMIC_RELAXED))
		return 0;
	if (pthread_mutex_trylock(&bt_link_mu) != 0)
		return 0;
	if (bt_link_state != LINK_UP)
		bt_link_connect();
	up = bt_link_state == LINK_UP;
	pthread_mutex_unlock(&bt_link_mu);
	return up;
}

unsigned bt_link_register_unsent(void)
{
	unsigned n = __atomic_load_n(&bt_ring_nchunks, __ATOMIC_ACQUIRE);
	unsigned left = 0;

	for (unsigned k = 0; k < n; k++) {
		if (!bt_ring_chunks[k].sent)
			bt_ring_chunk_register(&bt_ring_chunks[k]);
		left += !bt_ring_chunks[k].sent;
	}
	return left;
}

void bt_link_kick(struct bt_slot *s)
{
	struct bt_lm_kick k;
	int r;

	/* A chunk made while the socket was full has not been sent: send it
	 * first (bp-logd drops a tracer that kicks a chunk it does not
	 * have); if it still cannot go, no kick now: the slot's next one
	 * tries again (docs/libbtrace.md, "A chunk that could not be
	 * sent"). */
	if (!__atomic_load_n(&s->chunk->sent, __ATOMIC_ACQUIRE)) {
		int sent = 0;
		/* trylock, as bt_link_ensure: a signal handler's records may
		 * kick while this thread holds the link's lock */
		if (pthread_mutex_trylock(&bt_link_mu) != 0)
			return;
		if (bt_link_state == LINK_UP)
			sent = bt_link_register_unsent() == 0 ||
			       s->chunk->sent;
		pthread_mutex_unlock(&bt_link_mu);
		if (!sent)
			return;
	}

	memset(&k, 0, sizeof k);
	k.h.type = BT_LM_KICK;
	k.h.len = sizeof k;
	k.h.version = BT_RING_VERSION;
	k.chunk = s->chunk->index;
	k.slot = s->idx;
	r = bt_link_send(&k, sizeof k, -1);
	if (r == 0 && link_lazy_up)
		lazy_poke();
	if (r == -EPIPE || r == -ECONNRESET || r == -ENOTCONN) {
		pthread_mutex_lock(&bt_link_mu);
		if (bt_link_state == LINK_UP)
			bt_link_drop();
		bt_link_retry_at = bt_now();
		pthread_mutex_unlock(&bt_link_mu);
	}
	/* EAGAIN: the socket is full of kicks already; logd will drain. */
}
