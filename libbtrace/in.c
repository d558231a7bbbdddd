/*
 * in.c - the read family: byte accounting, protocol processors and event
 * isolation (paper sections 3.2 and 5.2; docs/events.md).  The isolation
 * buffer (keep, scan, serve) is iso.c; the bytes of a read go to the
 * processor through bt_iov_feed (iov.h), as a write's do (out.c); shared
 * helpers are in iopath.h and msg.c.
 *
 * Input on a channel with a processor.  A read first serves bytes the shim
 * holds (read earlier from the kernel but not yet handed over); only when
 * it holds none does it call the real function, into the application's own
 * buffers, asking for no more than the application asked for.  The
 * processor sees every byte once, in order, and stops at the first message
 * boundary: the read returns exactly up to it and the shim keeps the rest
 * (copied out of the application's buffer).  So each read returns at most
 * one message end, and a message's bytes are never mixed with the next
 * one's.  Exceptions keep POSIX semantics: MSG_WAITALL returns what was
 * asked for (every boundary inside is logged), MSG_PEEK consumes nothing,
 * datagrams are whole messages already.  With BTRACE_ISOLATION=0 reads are
 * never shortened (the comparison run of the tests).
 *
 * Read-until-EAGAIN loops: on a non-blocking fd, after a read that handed
 * over a message end while more input is held, the next read by the same
 * thread before it calls a readiness function returns EAGAIN once, and the
 * fd is reported readable by the next readiness call (ready.c).
 *
 * Locking: the channel mutex is held while the processor runs and the
 * buffer changes, never across the real call.
 */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bt.h"
#include "impl.h"
#include "iov.h"

/* Is this read non-blocking?  O_NONBLOCK is cached per channel (fcntl
 * F_SETFL through the shim forgets it; ioctl FIONBIO is usually done right
 * after accept, before the first message, so the first look sees it). */
static __attribute__((noinline)) void fd_nb_learn(struct bt_chan *ch, int fd)
{
	int fl = REAL(fcntl)(fd, F_GETFL);
	ch->nb = fl >= 0 && (fl & O_NONBLOCK) ? 2 : 1;
}

static inline int fd_nonblocking(struct bt_chan *ch, int fd, int flags)
{
	if (flags & MSG_DONTWAIT)
		return 1;
	if (unlikely(!ch->nb))
		fd_nb_learn(ch, fd);
	return ch->nb == 2;
}

/* Some epoll set watches CH's input edge-triggered. */
static int et_input(const struct bt_chan *ch)
{
	struct bt_epiter it;

	BT_EPREG_EACH(ch, r, it)
		if (r->epfd >= 0 &&
		    (r->events & (EPOLLIN | EPOLLET)) == (EPOLLIN | EPOLLET))
			return 1;
	return 0;
}

/* ---- the real read calls ----------------------------------------------- */

enum rd_kind { RK_READ, RK_READV, RK_RECV, RK_RECVFROM, RK_RECVMSG, RK_TLS };

struct rd {
	int              fd;
	int              kind;
	int              flags;        /* MSG_* of the call */
	const struct iovec *iov;       /* the application's buffers */
	int              iovcnt;
	struct sockaddr *from;         /* recvfrom */
	socklen_t       *fromlen;
	struct msghdr   *mh;           /* recvmsg */
	struct rd_tls   *tls;          /* RK_TLS: the library's read */
};

/* A TLS library's read (ssl.c) standing for the kernel's. */
struct rd_tls {
	const struct bt_tls_lib *lib;  /* its library (tls.h) */
	void *ssl;                     /* the session */
	int   ex;                      /* read through SSL_read_ex */
	int   ret;                     /* what the library's call returned */
	int   faked;                   /* out: -1 is the EAGAIN-once */
	int   nofake;                  /* never the EAGAIN-once (ssl.c) */
};

static inline ssize_t rd_real(struct rd *r, const struct iovec *iov, int cnt,
			      int flags)
{
	switch (r->kind) {
	case RK_READ:
		return REAL(read)(r->fd, iov[0].iov_base, iov[0].iov_len);
	case RK_READV:
		return REAL(readv)(r->fd, iov, cnt);
	case RK_RECV:
		return REAL(recv)(r->fd, iov[0].iov_base, iov[0].iov_len, flags);
	case RK_RECVFROM:
		return REAL(recvfrom)(r->fd, iov[0].iov_base, iov[0].iov_len,
				      flags, r->from, r->fromlen);
	case RK_RECVMSG: {
		struct iovec *save = r->mh->msg_iov;
		size_t savecnt = r->mh->msg_iovlen;
		ssize_t n;
		r->mh->msg_iov = (struct iovec *)iov;
		r->mh->msg_iovlen = (size_t)cnt;
		n = REAL(recvmsg)(r->fd, r->mh, flags);
		r->mh->msg_iov = save;
		r->mh->msg_iovlen = savecnt;
		return n;
	}
	case RK_TLS:
		return r->tls->lib->read(r->tls->ssl, iov[0].iov_base,
					 iov[0].iov_len, flags & MSG_PEEK,
					 r->tls->ex, &r->tls->ret);
	}
	errno = EINVAL;
	return -1;
}

/* Served from the shim's buffer: say "no address, no ancillary data", as
 * the kernel does for a connected stream socket. */
static void rd_no_meta(struct rd *r)
{
	if (r->kind == RK_RECVFROM && r->from && r->fromlen)
		*r->fromlen = 0;
	if (r->kind == RK_RECVMSG) {
		r->mh->msg_namelen = 0;
		r->mh->msg_controllen = 0;
		r->mh->msg_flags = 0;
	}
}

static int sockaddr_of_rd(struct rd *r, struct bt_addr *peer);

/* ---- stream input with isolation ---------------------------------------- */

/*
 * The application's buffers hold N fresh bytes from the kernel.  Feed the
 * processor; SHORTEN: stop at the first boundary and keep the rest.
 * Returns the bytes handed over.  Channel locked.
 */
/* deliver cut at a boundary at K: keep the rest, or (cannot) hand it over
 * up to the next boundary, and so on.  Apart, so the common read (one
 * whole message) compiles as it did. */
static __attribute__((noinline)) size_t deliver_cut(struct bt_chan *ch,
		int fd, const struct rd *r, size_t k, size_t n, int shorten)
{
	while (k < n && bt_iso_keep(ch, fd, r->iov, r->iovcnt, k, n) < 0)
		k = bt_iov_feed(ch, fd, BT_DIR_IN, r->iov, r->iovcnt, k, n,
				shorten);
	return k;
}

static size_t deliver(struct bt_chan *ch, int fd, struct rd *r, size_t n,
		      int shorten)
{
	size_t k = bt_iov_feed(ch, fd, BT_DIR_IN, r->iov, r->iovcnt, 0, n,
			       shorten);

	if (unlikely(k < n))
		k = deliver_cut(ch, fd, r, k, n, shorten);
	return k;
}

/*
 * A message end was handed over on a non-blocking fd: the next read by this
 * thread, before it asks a readiness function, gets EAGAIN once, so a
 * read-until-EAGAIN loop handles one message per pass.
 */
static void after_boundary(struct bt_chan *ch, int fd, int flags)
{
	if (ch->ended && bt_conf.isolation && fd_nonblocking(ch, fd, flags)) {
		ch->eagain_armed = 1;
		ch->eagain_tid = bt_self.tid;
		ch->eagain_epoch = bt_self.epoch;
	}
	io_ready_changed(ch);
}

/*
 * Does the kernel report FD readable right now (bytes, end of file, an
 * error)?  A read that returned a whole message may have left the peer's
 * end of file behind it: an edge-triggered loop told EAGAIN instead of 0
 * would wait for an edge that never comes.
 */
static int kernel_readable(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN | POLLRDHUP };
	int e = errno, r = REAL(poll)(&pf, 1, 0);

	errno = e;
	return r > 0 && (pf.revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR));
}

/*
 * Can a read of CH (through FD) go straight to the kernel, with nothing to
 * do before it: a processor attached, nothing held or owed, no EAGAIN
 * armed, no edge-triggered report to forget?  Looked at without the lock
 * (one lock round trip per read instead of two); the bytes are then fed
 * under the lock, by generation, as after any real call.  Another thread
 * may change what is looked at the moment after, as it may the moment
 * after the lock is released: no order between concurrent readers of one
 * descriptor is lost.  *GEN: the channel's generation while FD referred
 * to it.
 */
static inline int read_plain(struct bt_chan *ch, int fd, uint32_t *gen)
{
	uint32_t g = __atomic_load_n(&ch->gen, __ATOMIC_ACQUIRE);

	if (!__atomic_load_n(&ch->pp, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&ch->rd, __ATOMIC_RELAXED) !=
	    __atomic_load_n(&ch->wr, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&ch->owed, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&ch->eagain_armed, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&ch->et_told, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&ch->sniff, __ATOMIC_RELAXED) ||
	    bt_fd_get(fd) != (uintptr_t)ch ||
	    __atomic_load_n(&ch->gen, __ATOMIC_ACQUIRE) != g)
		return 0;
	*gen = g;
	return 1;
}

static ssize_t stream_read(struct bt_chan *ch, struct rd *r)
{
	uint32_t gen;
	int fd = r->fd, e;
	int peek = r->flags & MSG_PEEK;
	int waitall = (r->flags & MSG_WAITALL) && !peek;
	int shorten = bt_conf.isolation && !waitall;
	size_t want = bt_iov_total(r->iov, r->iovcnt);
	ssize_t n;
	size_t k;
	int safe;

	if (!peek && want && read_plain(ch, fd, &gen))
		goto from_kernel;
	if (lock_chan(ch, fd) < 0)
		return rd_real(r, r->iov, r->iovcnt, r->flags);
	/* After the real call, another thread may already have closed the
	 * fd; the bytes came from this channel: re-lock it by generation. */
	gen = ch->gen;
	if (ch->et_told) {
		struct bt_epiter it;
		BT_EPREG_EACH(ch, reg, it)
			reg->told = 0;
		ch->et_told = 0;
	}
	if (ch->owed && ch->rd == ch->wr) {
		/* the application reads now: whatever the kernel has, it gets */
		ch->owed = 0;
		bt_msg_ready_changed(ch);
	}

	/* Fast path: nothing held, nothing to parse. */
	if (!ch->pp && !ch->sniff && ch->rd == ch->wr) {
		bt_mutex_unlock(&ch->mu);
		safe = r->kind != RK_TLS && bt_call_safe_begin(ch);
		n = rd_real(r, r->iov, r->iovcnt, r->flags);
		bt_call_safe_end(safe);
		if (n <= 0 || peek)
			return n;
		e = errno;
		if (lock_gen(ch, gen) == 0) {
			data(ch, fd, BT_DIR_IN, (uint64_t)n);
			bt_mutex_unlock(&ch->mu);
		}
		errno = e;
		return n;
	}

	if (unlikely(r->kind == RK_TLS) && r->tls->nofake)
		ch->eagain_armed = 0;
	if (ch->eagain_armed) {
		ch->eagain_armed = 0;
		if (ch->eagain_tid == bt_self.tid &&
		    ch->eagain_epoch == bt_self.epoch &&
		    fd_nonblocking(ch, fd, r->flags)) {
			/* Readiness is owed if input is held, or if the kernel
			 * may hold bytes or an end of file whose edge was
			 * already reported; bytes that arrive later make their
			 * own edge. */
			if (ch->rd < ch->wr || ch->kfull || kernel_readable(fd) ||
			    (r->kind == RK_TLS && r->tls->lib->buffered(r->tls->ssl))) {
				ch->owed = 1;
				bt_msg_ready_changed(ch);
			}
			bt_mutex_unlock(&ch->mu);
			if (r->kind == RK_TLS)
				r->tls->faked = 1;
			errno = EAGAIN;
			return -1;
		}
	}

	if (want == 0) {
		bt_mutex_unlock(&ch->mu);
		return rd_real(r, r->iov, r->iovcnt, r->flags);
	}

	ch->ended = 0;
	if (ch->rd < ch->wr) {
		ch->owed = 0;
		k = bt_iso_serve(ch, fd, r->iov, r->iovcnt, shorten, peek);
		if (!peek && waitall && k < want) {
			/* MSG_WAITALL: the rest must come from the kernel, in
			 * windows of at most 64 of the application's iovecs;
			 * a window the kernel does not fill (end of file, a
			 * signal, a timeout, an error) ends the call. */
			struct iovec rest[64];
			bt_mutex_unlock(&ch->mu);
			e = errno;
			while (k < want) {
				size_t win;
				int cnt = bt_iov_window(rest, 64, r->iov,
							r->iovcnt, k, &win);
				n = rd_real(r, rest, cnt, r->flags);
				e = errno;
				if (n <= 0)
					break;
				if (lock_gen(ch, gen) < 0) {
					k += (size_t)n;
					break;
				}
				{
					struct rd sub = *r;
					sub.iov = rest;
					sub.iovcnt = cnt;
					deliver(ch, fd, &sub, (size_t)n, 0);
				}
				bt_mutex_unlock(&ch->mu);
				k += (size_t)n;
				if ((size_t)n < win)
					break;
			}
			errno = e;
			return (ssize_t)k;
		}
		if (!peek) {
			rd_no_meta(r);
			if (shorten && ch->ended && k < want && ch->rd < ch->wr)
				bt_iso_log(ch, fd, want, k);
			/* Held input alone, and less than asked: an
			 * edge-triggered reader takes that for "drained",
			 * yet the kernel may hold bytes whose edge it was
			 * told while we held these.  Owe it a report
			 * (spurious is harmless: its next read gets EAGAIN). */
			if (ch->rd == ch->wr && k < want && et_input(ch) &&
			    fd_nonblocking(ch, fd, r->flags))
				ch->owed = 1;
			after_boundary(ch, fd, r->flags);
		}
		bt_mutex_unlock(&ch->mu);
		return (ssize_t)k;
	}
	bt_mutex_unlock(&ch->mu);

	/* Nothing held and a peek: the kernel's own peek consumes nothing, so
	 * the bytes stay in the socket for whoever reads them next (this
	 * process, a child, a program it execs); the read that consumes them
	 * feeds the processor. */
	if (peek)
		return rd_real(r, r->iov, r->iovcnt, r->flags);

from_kernel:
	/* Nothing held: the real call, into the application's buffers (a
	 * signal handler's calls during it are recorded: not a TLS
	 * library's, which holds its session's state) */
	safe = r->kind != RK_TLS && bt_call_safe_begin(ch);
	n = r->kind == RK_READ ? REAL(read)(fd, r->iov[0].iov_base,
					    r->iov[0].iov_len) :
	    r->kind == RK_RECV ? REAL(recv)(fd, r->iov[0].iov_base,
					    r->iov[0].iov_len, r->flags) :
	    rd_real(r, r->iov, r->iovcnt, r->flags);
	bt_call_safe_end(safe);
	if (n < 0)
		return n;
	e = errno;
	if (lock_gen(ch, gen) < 0) {
		errno = e;
		return n;
	}
	if (n == 0) {
		bt_msg_eof(ch, fd, BT_DIR_IN);
		bt_mutex_unlock(&ch->mu);
		errno = e;
		return 0;
	}
	ch->ended = 0;
	ch->kfull = (size_t)n == want;
	if (ch->sniff) {
		size_t first = r->iov[0].iov_len < (size_t)n ? r->iov[0].iov_len
							     : (size_t)n;
		bt_chan_sniff(ch, fd, BT_DIR_IN, r->iov[0].iov_base, first);
	}
	turn(ch, fd, BT_DIR_IN);
	k = deliver(ch, fd, r, (size_t)n, shorten);
	after_boundary(ch, fd, r->flags);
	bt_mutex_unlock(&ch->mu);
	errno = e;
	return (ssize_t)k;
}

/* ---- datagrams ------------------------------------------------------------ */

static void dgram_in(struct bt_chan *ch, uint32_t gen, int fd, struct rd *r,
		     size_t n)
{
	struct bt_addr peer;
	const uint8_t *p;
	uint8_t small[2048];
	size_t len = n;

	if (lock_gen(ch, gen) < 0)
		return;
	sockaddr_of_rd(r, &peer);
	/* a datagram spread over several iovecs: processors want it whole */
	p = bt_iov_gather(r->iov, r->iovcnt, n, small, sizeof small, &len);
	if (ch->sniff)
		bt_chan_sniff(ch, fd, BT_DIR_IN, p, len);
	if (ch->pp) {
		struct bt_msg m;
		long k;
		bt_msg_init(&m);
		k = ch->pp->feed(ch->pps, BT_DIR_IN, p, len, &m);
		if (k < 0) {
			bt_msg_lost(ch, fd, BT_DIR_IN);
		} else {
			if (!m.kind)
				m.kind = BT_MK_ONEWAY;
			ch->msg_open[BT_DIR_IN] = 1;
			ch->msg_start[BT_DIR_IN] = ch->off[BT_DIR_IN];
			ch->off[BT_DIR_IN]++;
			bt_msg_log(ch, fd, BT_DIR_IN, &m, ch->msg_start[BT_DIR_IN],
				n, &peer);
			ch->msg_open[BT_DIR_IN] = 0;
			bt_mutex_unlock(&ch->mu);
			return;
		}
	}
	log_simple(ch, BT_EV_DATA, fd, BT_DIR_IN, ch->off[BT_DIR_IN], n);
	ch->off[BT_DIR_IN]++;
	bt_mutex_unlock(&ch->mu);
}

static int sockaddr_of_rd(struct rd *r, struct bt_addr *peer)
{
	const struct sockaddr *sa = NULL;
	socklen_t len = 0;

	memset(peer, 0, sizeof *peer);
	if (r->kind == RK_RECVFROM && r->from && r->fromlen) {
		sa = r->from;
		len = *r->fromlen;
	} else if (r->kind == RK_RECVMSG && r->mh->msg_name) {
		sa = r->mh->msg_name;
		len = r->mh->msg_namelen;
	}
	if (!sa || len < (socklen_t)sizeof(struct sockaddr_in))
		return -1;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)sa;
		peer->family = BT_AF_INET;
		peer->port = ntohs(s->sin_port);
		memcpy(peer->addr, &s->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6 &&
		   len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *s = (const void *)sa;
		peer->family = BT_AF_INET6;
		peer->port = ntohs(s->sin6_port);
		memcpy(peer->addr, &s->sin6_addr, 16);
	}
	return 0;
}

/* ---- read family entry --------------------------------------------------- */

/*
 * A read while paused, or from a dark channel or descriptor.  Input the
 * shim holds goes first (through the normal path, which records nothing
 * for a dark channel); otherwise the real call.  Paused: a channel whose
 * bytes moved goes dark.  Dark, not paused: data read starts work the log
 * cannot attribute (READY -1).
 */
static ssize_t untraced_read(struct rd *r, uintptr_t w)
{
	struct bt_chan *ch = BT_FD_IS_CHAN(w) ? (struct bt_chan *)w : NULL;
	int paused = bt_paused(), e;
	ssize_t n;

	if (paused)
		bt_paused_call();
	if (ch && __atomic_load_n(&ch->in_ready_list, __ATOMIC_RELAXED) &&
	    ch->transport == BT_TR_STREAM) {
		n = stream_read(ch, r);
		if (paused)
			bt_chan_go_dark(ch, r->fd);
	} else {
		n = rd_real(r, r->iov, r->iovcnt, r->flags);
	}
	if (n > 0 && !(r->flags & MSG_PEEK)) {
		e = errno;
		if (paused)
			bt_fd_paused_io(r->fd);
		else
			bt_emit_unknown_input();
		errno = e;
	}
	return n;
}

static ssize_t do_read(struct rd *r)
{
	struct bt_chan *ch;
	uint64_t pc;
	ssize_t n;
	int e;

	{
		uintptr_t w = bt_fd_get(r->fd);
		if (w != BT_FD_NONE && !BT_FD_IS_CHAN(w)) {
			if (likely(w != BT_FD_DARK))
				return rd_real(r, r->iov, r->iovcnt, r->flags);
			if (!bt_enter()) {
				n = rd_real(r, r->iov, r->iovcnt, r->flags);
				bt_leave_pass();
				return n;
			}
			n = untraced_read(r, w);
			bt_leave();
			return n;
		}
	}
	if (!bt_enter()) {
		if (unlikely(bt_tls_cur) && bt_conf.enabled)
			bt_tls_learn(r->fd);
		n = rd_real(r, r->iov, r->iovcnt, r->flags);
		bt_leave_pass();
		return n;
	}
	if (unlikely(bt_paused())) {
		/* no classification of new descriptors while paused */
		n = untraced_read(r, bt_fd_get(r->fd));
		bt_leave();
		return n;
	}
	pc = bt_self.pause_lost;
	{
		uintptr_t w = bt_fd_get(r->fd);
		ch = BT_FD_IS_CHAN(w) ? (struct bt_chan *)w : bt_chan_of(r->fd);
	}
	if (!ch || (unlikely(bt_self.in_sig) &&
		    ch == bt_self.sig_saved.sig_ch)) {
		/* (a signal handler that reads the channel whose read it
		 * interrupted: passed through, as before handlers' calls
		 * were recorded: bt_call_safe_begin) */
		n = rd_real(r, r->iov, r->iovcnt, r->flags);
		bt_leave();
		return n;
	}
	if (unlikely(bt_chan_dark_or_tls(ch))) {
		if (ch->dark)
			n = untraced_read(r, (uintptr_t)ch);
		else if (bt_tls_inside || !bt_chan_tls_unseen(ch, r->fd))
			/* the ciphertext of a TLS session read on its
			 * plaintext */
			n = rd_real(r, r->iov, r->iovcnt, r->flags);
		else
			goto framed;
		bt_leave();
		return n;
	}
framed:
	if (unlikely(!ch->announced)) {
		e = errno;
		bt_chan_announce(ch, r->fd);
		errno = e;
	}
	if (ch->transport == BT_TR_DGRAM) {
		uint32_t gen = ch->gen;
		n = rd_real(r, r->iov, r->iovcnt, r->flags);
		if (n > 0 && !(r->flags & MSG_PEEK)) {
			e = errno;
			dgram_in(ch, gen, r->fd, r, (size_t)n);
			errno = e;
		}
		goto out;
	}
	n = stream_read(ch, r);
out:
	if (unlikely(bt_self.pause_lost != pc)) {
		/* a pause began while this call was traced: what it did is
		 * not all in the log */
		e = errno;
		bt_chan_go_dark(ch, r->fd);
		errno = e;
	}
	bt_leave();
	return n;
}

BT_HIDDEN ssize_t bt_read(int fd, void *buf, size_t len)
{
	struct iovec iov = { buf, len };
	struct rd r = { .fd = fd, .kind = RK_READ, .iov = &iov, .iovcnt = 1 };
	return do_read(&r);
}

ssize_t bt_readv(int fd, const struct iovec *iov, int cnt)
{
	struct rd r = { .fd = fd, .kind = RK_READV, .iov = iov, .iovcnt = cnt };
	if (cnt < 0 || cnt > IOV_MAX)
		return REAL(readv)(fd, iov, cnt);
	return do_read(&r);
}

ssize_t bt_recv(int fd, void *buf, size_t len, int flags)
{
	struct iovec iov = { buf, len };
	struct rd r = { .fd = fd, .kind = RK_RECV, .flags = flags, .iov = &iov,
			.iovcnt = 1 };
	return do_read(&r);
}

ssize_t bt_recvfrom(int fd, void *buf, size_t len, int flags,
		    struct sockaddr *from, socklen_t *fromlen)
{
	struct iovec iov = { buf, len };
	struct rd r = { .fd = fd, .kind = RK_RECVFROM, .flags = flags,
			.iov = &iov, .iovcnt = 1, .from = from,
			.fromlen = fromlen };
	return do_read(&r);
}

ssize_t bt_recvmsg(int fd, struct msghdr *mh, int flags)
{
	struct rd r = { .fd = fd, .kind = RK_RECVMSG, .flags = flags,
			.iov = mh ? mh->msg_iov : NULL,
			.iovcnt = mh ? (int)mh->msg_iovlen : 0, .mh = mh };
	if (!mh || mh->msg_iovlen > IOV_MAX)
		return REAL(recvmsg)(fd, mh, flags);
	return do_read(&r);
}

/*
 * A TLS library's read of plaintext (tls.c): LIB's read (SSL_read,
 * SSL_read_ex, with PEEK SSL_peek(_ex), gnutls_record_recv) of session SSL
 * whose ciphertext comes through FD, CH's descriptor (bound by
 * bt_chan_tls_start).  Framed and isolated
 * as a stream read, the library's call standing for the kernel's.
 * Returns bytes handed over (> 0), or 0 / -1 with *TLS_RET the library's
 * own return; *FAKED when -1 is the EAGAIN-once (errno then as on entry).
 * *FAKED on entry: 1 never to fake it (reads are still cut at message
 * boundaries).  Called inside bt_enter.
 */
ssize_t bt_in_tls(struct bt_chan *ch, int fd, const struct bt_tls_lib *lib,
		  void *ssl, int ex, void *buf, size_t len, int peek,
		  int *tls_ret, int *faked)
{
	struct iovec iov = { buf, len };
	struct rd_tls t = { .lib = lib, .ssl = ssl, .ex = ex, .ret = -1,
			    .nofake = *faked };
	struct rd r = { .fd = fd, .kind = RK_TLS, .flags = peek ? MSG_PEEK : 0,
			.iov = &iov, .iovcnt = 1, .tls = &t };
	int e = errno;
	ssize_t n;

	if (unlikely(!ch->announced)) {
		bt_chan_announce(ch, fd);
		errno = e;
	}
	n = stream_read(ch, &r);
	*tls_ret = t.ret;
	*faked = t.faked;
	if (t.faked)
		errno = e;
	return n;
}

/* recvmmsg: datagram sockets only in practice; each message accounted. */
int bt_recvmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags,
		struct timespec *tmo)
{
	struct bt_chan *ch;
	int r, e;

	if (!bt_enter()) {
		r = REAL(recvmmsg)(fd, v, n, flags, tmo);
		bt_leave_pass();
		return r;
	}
	if (unlikely(bt_paused())) {
		bt_paused_call();
		r = REAL(recvmmsg)(fd, v, n, flags, tmo);
		if (r > 0 && !(flags & MSG_PEEK)) {
			e = errno;
			bt_fd_paused_io(fd);
			errno = e;
		}
		bt_leave();
		return r;
	}
	ch = bt_chan_of(fd);
	r = REAL(recvmmsg)(fd, v, n, flags, tmo);
	if (r > 0 && ch && ch->dark && !(flags & MSG_PEEK)) {
		e = errno;
		bt_emit_unknown_input();
		errno = e;
	} else if (r > 0 && ch && !(flags & MSG_PEEK)) {
		e = errno;
		if (!ch->announced)
			bt_chan_announce(ch, fd);
		for (int i = 0; i < r; i++) {
			struct rd rr = { .fd = fd, .kind = RK_RECVMSG,
					 .iov = v[i].msg_hdr.msg_iov,
					 .iovcnt = (int)v[i].msg_hdr.msg_iovlen,
					 .mh = &v[i].msg_hdr };
			if (ch->transport == BT_TR_DGRAM) {
				dgram_in(ch, ch->gen, fd, &rr, v[i].msg_len);
			} else if (lock_chan(ch, fd) == 0) {
				if (ch->pp)
					bt_msg_lost(ch, fd, BT_DIR_IN);
				data(ch, fd, BT_DIR_IN, v[i].msg_len);
				bt_mutex_unlock(&ch->mu);
			}
		}
		errno = e;
	}
	bt_leave();
	return r;
}
