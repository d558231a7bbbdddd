/*
 * io.c - the read and write families: byte accounting, protocol processors
 * and event isolation (paper sections 3.2 and 5.2; docs/events.md).
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
 * Output is never changed: after the real write, the bytes actually
 * written are fed to the processor and logged.
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


/* ---- logging helpers -------------------------------------------------- */

/* A message with an attribute to redact: through the general encoder,
 * after redact.c rewrote the copy that goes into the log.  Rare (SQL, a
 * URL that is not a plain path), so the struct copy does not matter. */
static __attribute__((noinline)) void msg_redact_emit(const struct bt_msg_rec *r)
{
	struct bt_event ev;

	bt_msg_rec_event(r, &ev);
	bt_redact_emit(&ev);
}

static void log_msg(struct bt_chan *ch, int fd, int dir, const struct bt_msg *m,
		    uint64_t off, uint64_t len, const struct bt_addr *peer)
{
	struct bt_msg_rec r;
	struct bt_attr at[BT_EV_MAX_ATTR];
	char pbuf[64];

	if (unlikely(ch->dark))
		return;
	r.ts = dir == BT_DIR_OUT ? bt_self.out_ts : 0;
	r.fd = fd;
	r.dir = (uint8_t)dir;
	r.kind = m->kind;
	r.proto = ch->pp ? ch->pp->id : 0;
	r.flags = m->flags;
	if (ch->transport == BT_TR_DGRAM)
		r.flags |= BT_MF_DGRAM;
	r.off = off;
	r.len = len;
	r.status = m->status;
	r.witness = m->witness;
	r.nattr = m->nattr;
	r.attr = m->attr;
	if (peer && peer->family && m->nattr < BT_EV_MAX_ATTR) {
		/* one more attribute: the processor's list and the peer */
		memcpy(at, m->attr, sizeof at[0] * m->nattr);
		bt_addr_format(peer, pbuf, sizeof pbuf);
		at[m->nattr].key = BT_AK_PEER;
		at[m->nattr].val = pbuf;
		at[m->nattr].len = (uint16_t)strlen(pbuf);
		r.nattr = (uint8_t)(m->nattr + 1);
		r.attr = at;
	}
	/* secrets out of the attributes (redact.c); the wire is untouched */
	if (r.nattr && unlikely(bt_redact_needed(r.attr, r.nattr, bt_conf.redact)))
		msg_redact_emit(&r);
	else
		bt_emit_msg(&r);
}

/* MSG_BEGIN (fd dir off) or DATA (fd dir off len). */
static void log_simple(struct bt_chan *ch, int type, int fd, int dir,
		       uint64_t off, uint64_t len)
{
	uint64_t v[4] = { bt_zigzag(fd), (uint64_t)(uint8_t)dir, off, len };

	if (unlikely(ch->dark))
		return;
	bt_emit_ints((unsigned)type, dir == BT_DIR_OUT ? bt_self.out_ts : 0,
		     type == BT_EV_DATA ? 4 : 3, v);
}

static void log_lost(struct bt_chan *ch, int fd, int dir)
{
	struct bt_event ev;

	if (unlikely(ch->dark))
		return;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_LOST_SYNC;
	ev.fd = fd;
	ev.dir = (uint8_t)dir;
	ev.proto = ch->pp ? ch->pp->id : 0;
	ev.off = ch->off[dir];
	bt_emit(&ev);
}

/* The processor gave up: the channel carries DATA from now on. */
static void go_lost(struct bt_chan *ch, int fd, int dir)
{
	log_lost(ch, fd, dir);
	if (ch->pp && ch->pp->fini)
		ch->pp->fini(ch->pps);
	ch->pp = NULL;
	ch->lost = 1;
	ch->msg_open[0] = ch->msg_open[1] = 0;
	ch->pending = 0;
}

/*
 * N bytes of DIR moved (handed to the application, or written).  MSG, if
 * it has a kind, ends exactly after them.  Logs MSG at message ends.
 */
static void track(struct bt_chan *ch, int fd, int dir, uint64_t n,
		  const struct bt_msg *m, const struct bt_addr *peer)
{
	if (!ch->msg_open[dir]) {
		ch->msg_open[dir] = 1;
		ch->msg_start[dir] = ch->off[dir];
		ch->msg_begun[dir] = 0;
	}
	ch->off[dir] += n;
	if (m && m->kind) {
		if (dir == BT_DIR_IN)
			ch->ended = 1;
		log_msg(ch, fd, dir, m, ch->msg_start[dir],
			ch->off[dir] - ch->msg_start[dir], peer);
		ch->msg_open[dir] = 0;
	}
}

/* End of a call: a message whose first bytes moved but that did not end
 * gets its MSG_BEGIN (the designation switches there). */
static void track_end(struct bt_chan *ch, int fd, int dir)
{
	if (ch->msg_open[dir] && !ch->msg_begun[dir] &&
	    ch->off[dir] > ch->msg_start[dir]) {
		log_simple(ch, BT_EV_MSG_BEGIN, fd, dir, ch->msg_start[dir], 0);
		ch->msg_begun[dir] = 1;
	}
}

static void data(struct bt_chan *ch, int fd, int dir, uint64_t n)
{
	if (!n)
		return;
	log_simple(ch, BT_EV_DATA, fd, dir, ch->off[dir], n);
	ch->off[dir] += n;
}

/* A read was cut at a boundary: asked for ASKED, got GAVE (diagnostic). */
static void log_isolate(struct bt_chan *ch, int fd, size_t asked, size_t gave)
{
	struct bt_event ev;

	if (unlikely(ch->dark))
		return;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_ISOLATE;
	ev.fd = fd;
	ev.off = ch->off[BT_DIR_IN];
	ev.len = asked;
	ev.result = (int64_t)gave;
	bt_emit(&ev);
}

/* One-shot style processors: bytes in DIR end the other direction's
 * message. */
static void turn_ends(struct bt_chan *ch, int fd, int dir)
{
	int other = !dir;

	if (!ch->pp->eof || !ch->msg_open[other])
		return;
	struct bt_msg m;
	memset(&m, 0, sizeof m);
	ch->pp->eof(ch->pps, other, &m);
	if (m.kind)
		track(ch, fd, other, 0, &m, NULL);
}

static inline void turn(struct bt_chan *ch, int fd, int dir)
{
	if (ch->pp && unlikely(ch->pp->flags & BT_PPF_TURN_ENDS))
		turn_ends(ch, fd, dir);
}

void bt_io_eof(struct bt_chan *ch, int fd, int dir)
{
	struct bt_msg m;

	if (ch->eof[dir])
		return;
	ch->eof[dir] = 1;
	if (!ch->pp || !ch->pp->eof)
		return;
	memset(&m, 0, sizeof m);
	ch->pp->eof(ch->pps, dir, &m);
	if (m.kind && ch->msg_open[dir])
		track(ch, fd, dir, 0, &m, NULL);
	else if (m.kind)
		ch->msg_open[dir] = 0;
}

static inline void io_ready_changed(struct bt_chan *ch)
{
	int want = ch->rd < ch->wr || ch->owed;
	if (want && !ch->in_ready_list)
		bt_ready_add(ch);
	else if (!want && ch->in_ready_list)
		bt_ready_del(ch);
}

void bt_io_ready_changed(struct bt_chan *ch)
{
	io_ready_changed(ch);
}

/* ---- iovec helpers ------------------------------------------------------ */

/* Copy up to N bytes of BUF into IOV; returns bytes copied. */
static size_t iov_put(const struct iovec *iov, int cnt, const uint8_t *buf,
		      size_t n)
{
	size_t done = 0;
	for (int i = 0; i < cnt && done < n; i++) {
		size_t k = iov[i].iov_len < n - done ? iov[i].iov_len : n - done;
		memcpy(iov[i].iov_base, buf + done, k);
		done += k;
	}
	return done;
}

static size_t iov_total(const struct iovec *iov, int cnt)
{
	size_t t = 0;
	for (int i = 0; i < cnt; i++)
		t += iov[i].iov_len;
	return t;
}

/* Append N bytes at offset FROM of the iovec data to the channel buffer. */
static int stash(struct bt_chan *ch, const struct iovec *iov, int cnt,
		 size_t from, size_t n)
{
	size_t need = (size_t)(ch->wr - ch->rd) + n;

	if (ch->rd && ch->rd == ch->wr)
		ch->rd = ch->wr = 0;
	if (ch->wr + n > ch->cap) {
		if (ch->rd && !ch->pending) {  /* attribute pointers into buf */
			memmove(ch->buf, ch->buf + ch->rd, ch->wr - ch->rd);
			ch->wr -= ch->rd;
			ch->rd = 0;
		}
		if (ch->wr + n > ch->cap) {
			size_t ncap = ch->cap ? ch->cap : 4096;
			uint8_t *nb;
			while (ncap < ch->wr + n)
				ncap *= 2;
			if (ncap > UINT32_MAX || ch->pending)
				return -1;
			nb = realloc(ch->buf, ncap);
			if (!nb)
				return -1;
			ch->buf = nb;
			ch->cap = (uint32_t)ncap;
		}
	}
	(void)need;
	for (int i = 0; i < cnt && n; i++) {
		if (from >= iov[i].iov_len) {
			from -= iov[i].iov_len;
			continue;
		}
		size_t k = iov[i].iov_len - from;
		if (k > n)
			k = n;
		memcpy(ch->buf + ch->wr, (uint8_t *)iov[i].iov_base + from, k);
		ch->wr += (uint32_t)k;
		n -= k;
		from = 0;
	}
	return 0;
}

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

enum rd_kind { RK_READ, RK_READV, RK_RECV, RK_RECVFROM, RK_RECVMSG };

struct rd {
	int              fd;
	int              kind;
	int              flags;        /* MSG_* of the call */
	const struct iovec *iov;       /* the application's buffers */
	int              iovcnt;
	struct sockaddr *from;         /* recvfrom */
	socklen_t       *fromlen;
	struct msghdr   *mh;           /* recvmsg */
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
 * Feed the processor from the buffer until it reports a boundary or has
 * seen everything held.  Channel locked.
 */
static void scan_buffer(struct bt_chan *ch, int fd)
{
	while (ch->pp && !ch->pending && ch->scanned < ch->wr - ch->rd) {
		struct bt_msg m;
		long r;
		bt_msg_init(&m);
		r = ch->pp->feed(ch->pps, BT_DIR_IN,
				 ch->buf + ch->rd + ch->scanned,
				 ch->wr - ch->rd - ch->scanned, &m);
		if (r <= 0 || (size_t)r > ch->wr - ch->rd - ch->scanned) {
			go_lost(ch, fd, BT_DIR_IN);
			return;
		}
		ch->scanned += (uint32_t)r;
		if (m.kind) {
			ch->pending = 1;
			ch->boundary = ch->scanned;
			ch->pmsg = m;
		}
	}
}

/*
 * Hand over bytes the shim holds.  SHORTEN: stop at the first boundary.
 * PEEK: copy without consuming.  Returns bytes copied into the
 * application's buffers.  Channel locked.
 */
static size_t serve(struct bt_chan *ch, int fd, struct rd *r, int shorten,
		    int peek)
{
	size_t want = iov_total(r->iov, r->iovcnt), done = 0;
	uint8_t *tmp = NULL;

	if (peek) {
		/* Copy what the application may see without consuming. */
		scan_buffer(ch, fd);
		size_t avail = ch->wr - ch->rd;
		if (shorten && ch->pp && ch->pending)
			avail = ch->boundary;
		if (avail > want)
			avail = want;
		return iov_put(r->iov, r->iovcnt, ch->buf + ch->rd, avail);
	}
	(void)tmp;
	while (done < want && ch->rd < ch->wr) {
		size_t avail, k;
		const struct bt_msg *end = NULL;

		scan_buffer(ch, fd);
		if (ch->pp && ch->pending)
			avail = ch->boundary;
		else if (ch->pp)
			avail = ch->scanned;
		else
			avail = ch->wr - ch->rd;
		if (!avail)
			break;
		k = avail < want - done ? avail : want - done;
		/* copy into the iovecs after DONE bytes */
		{
			size_t skip = done, left = k;
			const uint8_t *src = ch->buf + ch->rd;
			for (int i = 0; i < r->iovcnt && left; i++) {
				if (skip >= r->iov[i].iov_len) {
					skip -= r->iov[i].iov_len;
					continue;
				}
				size_t c = r->iov[i].iov_len - skip;
				if (c > left)
					c = left;
				memcpy((uint8_t *)r->iov[i].iov_base + skip, src, c);
				src += c;
				left -= c;
				skip = 0;
			}
		}
		if (ch->pp && ch->pending && k == ch->boundary)
			end = &ch->pmsg;
		if (ch->pp)
			track(ch, fd, BT_DIR_IN, k, end, NULL);
		else
			data(ch, fd, BT_DIR_IN, k);
		ch->rd += (uint32_t)k;
		if (ch->pp) {
			ch->scanned -= (uint32_t)k;
			if (ch->pending) {
				ch->boundary -= (uint32_t)k;
				if (end)
					ch->pending = 0;
			}
		} else {
			ch->scanned = 0;
		}
		done += k;
		if (end && shorten)
			break;
	}
	if (ch->rd == ch->wr)
		ch->rd = ch->wr = ch->scanned = 0;
	if (ch->pp)
		track_end(ch, fd, BT_DIR_IN);
	return done;
}

/*
 * The application's buffers hold N fresh bytes from the kernel.  Feed the
 * processor; SHORTEN: stop at the first boundary and keep the rest.
 * Returns the bytes handed over.  Channel locked.
 */
static size_t deliver(struct bt_chan *ch, int fd, struct rd *r, size_t n,
		      int shorten, const struct bt_addr *peer)
{
	size_t done = 0;

	for (int i = 0; i < r->iovcnt && done < n; i++) {
		const uint8_t *p = r->iov[i].iov_base;
		size_t len = r->iov[i].iov_len < n - done ? r->iov[i].iov_len
							  : n - done;
		size_t pos = 0;

		while (pos < len) {
			struct bt_msg m;
			long k;

			if (!ch->pp) {
				data(ch, fd, BT_DIR_IN, (n - done) - pos);
				return n;
			}
			bt_msg_init(&m);
			k = ch->pp->feed(ch->pps, BT_DIR_IN, p + pos, len - pos, &m);
			if (k <= 0 || (size_t)k > len - pos) {
				go_lost(ch, fd, BT_DIR_IN);
				continue;
			}
			track(ch, fd, BT_DIR_IN, (uint64_t)k, &m, peer);
			pos += (size_t)k;
			if (m.kind && shorten && done + pos < n) {
				size_t keep = n - (done + pos);
				if (stash(ch, r->iov, r->iovcnt, done + pos, keep) == 0) {
					log_isolate(ch, fd, iov_total(r->iov, r->iovcnt),
						    done + pos);
					return done + pos;
				}
				/* cannot keep them: hand everything over */
			}
		}
		done += len;
	}
	track_end(ch, fd, BT_DIR_IN);
	return n;
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

/* Lock CH if it is still the channel of generation GEN (not recycled). */
static int lock_gen(struct bt_chan *ch, uint32_t gen)
{
	bt_mutex_lock(&ch->mu);
	if (ch->gen != gen) {
		bt_mutex_unlock(&ch->mu);
		return -1;
	}
	return 0;
}

/* Lock CH and check FD still refers to it.  0 ok. */
static int lock_chan(struct bt_chan *ch, int fd)
{
	bt_mutex_lock(&ch->mu);
	if (bt_fd_get(fd) != (uintptr_t)ch) {
		bt_mutex_unlock(&ch->mu);
		return -1;
	}
	return 0;
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
	size_t want = iov_total(r->iov, r->iovcnt);
	ssize_t n;
	size_t k;

	if (!peek && want && read_plain(ch, fd, &gen))
		goto from_kernel;
	if (lock_chan(ch, fd) < 0)
		return rd_real(r, r->iov, r->iovcnt, r->flags);
	/* After the real call, another thread may already have closed the
	 * fd; the bytes came from this channel: re-lock it by generation. */
	gen = ch->gen;
	if (ch->et_told) {
		struct bt_epiter it;
		BT_EPREG_EACH(ch, r, it)
			r->told = 0;
		ch->et_told = 0;
	}
	if (ch->owed && ch->rd == ch->wr) {
		/* the application reads now: whatever the kernel has, it gets */
		ch->owed = 0;
		bt_io_ready_changed(ch);
	}

	/* Fast path: nothing held, nothing to parse. */
	if (!ch->pp && !ch->sniff && ch->rd == ch->wr) {
		bt_mutex_unlock(&ch->mu);
		n = rd_real(r, r->iov, r->iovcnt, r->flags);
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

	if (ch->eagain_armed) {
		ch->eagain_armed = 0;
		if (ch->eagain_tid == bt_self.tid &&
		    ch->eagain_epoch == bt_self.epoch &&
		    fd_nonblocking(ch, fd, r->flags)) {
			/* Readiness is owed if input is held, or if the kernel
			 * may hold bytes or an end of file whose edge was
			 * already reported; bytes that arrive later make their
			 * own edge. */
			if (ch->rd < ch->wr || ch->kfull || kernel_readable(fd)) {
				ch->owed = 1;
				bt_io_ready_changed(ch);
			}
			bt_mutex_unlock(&ch->mu);
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
		k = serve(ch, fd, r, shorten, peek);
		if (!peek && waitall && k < want) {
			/* MSG_WAITALL: the rest must come from the kernel, in
			 * windows of at most 64 of the application's iovecs;
			 * a window the kernel does not fill (end of file, a
			 * signal, a timeout, an error) ends the call. */
			struct iovec rest[64];
			bt_mutex_unlock(&ch->mu);
			e = errno;
			while (k < want) {
				int cnt = 0;
				size_t skip = k, win = 0;
				for (int i = 0; i < r->iovcnt && cnt < 64; i++) {
					if (skip >= r->iov[i].iov_len) {
						skip -= r->iov[i].iov_len;
						continue;
					}
					rest[cnt].iov_base = (uint8_t *)r->iov[i].iov_base + skip;
					rest[cnt].iov_len = r->iov[i].iov_len - skip;
					win += rest[cnt].iov_len;
					skip = 0;
					cnt++;
				}
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
					deliver(ch, fd, &sub, (size_t)n, 0, NULL);
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
				log_isolate(ch, fd, want, k);
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
	/* Nothing held: the real call, into the application's buffers. */
	n = r->kind == RK_READ ? REAL(read)(fd, r->iov[0].iov_base,
					    r->iov[0].iov_len) :
	    r->kind == RK_RECV ? REAL(recv)(fd, r->iov[0].iov_base,
					    r->iov[0].iov_len, r->flags) :
	    rd_real(r, r->iov, r->iovcnt, r->flags);
	if (n < 0)
		return n;
	e = errno;
	if (lock_gen(ch, gen) < 0) {
		errno = e;
		return n;
	}
	if (n == 0) {
		bt_io_eof(ch, fd, BT_DIR_IN);
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
	k = deliver(ch, fd, r, (size_t)n, shorten, NULL);
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
	if (r->iovcnt == 1 || r->iov[0].iov_len >= n) {
		p = r->iov[0].iov_base;
	} else {
		if (len > sizeof small)
			len = sizeof small;
		size_t got = 0;
		for (int i = 0; i < r->iovcnt && got < len; i++) {
			size_t c = r->iov[i].iov_len < len - got ? r->iov[i].iov_len : len - got;
			memcpy(small + got, r->iov[i].iov_base, c);
			got += c;
		}
		p = small;
	}
	if (ch->sniff)
		bt_chan_sniff(ch, fd, BT_DIR_IN, p, len);
	if (ch->pp) {
		struct bt_msg m;
		long k;
		memset(&m, 0, sizeof m);
		k = ch->pp->feed(ch->pps, BT_DIR_IN, p, len, &m);
		if (k < 0) {
			go_lost(ch, fd, BT_DIR_IN);
		} else {
			if (!m.kind)
				m.kind = BT_MK_ONEWAY;
			ch->msg_open[BT_DIR_IN] = 1;
			ch->msg_start[BT_DIR_IN] = ch->off[BT_DIR_IN];
			ch->off[BT_DIR_IN]++;
			log_msg(ch, fd, BT_DIR_IN, &m, ch->msg_start[BT_DIR_IN],
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
	if (!ch) {
		n = rd_real(r, r->iov, r->iovcnt, r->flags);
		bt_leave();
		return n;
	}
	if (unlikely(ch->dark)) {
		n = untraced_read(r, (uintptr_t)ch);
		bt_leave();
		return n;
	}
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
					go_lost(ch, fd, BT_DIR_IN);
				data(ch, fd, BT_DIR_IN, v[i].msg_len);
				bt_mutex_unlock(&ch->mu);
			}
		}
		errno = e;
	}
	bt_leave();
	return r;
}

/* ---- output ------------------------------------------------------------- */

/*
 * A write made while the thread was inside the shim (a signal handler)
 * passed straight through: count its bytes so offsets stay exact, and
 * count the record it could not have (reported by the next DROP).
 */
void bt_io_out_nested(int fd, ssize_t n)
{
	uintptr_t w = bt_fd_get(fd);

	if (n <= 0 || !BT_FD_IS_CHAN(w))
		return;
	__atomic_add_fetch(&((struct bt_chan *)w)->unseen, (uint64_t)n,
			   __ATOMIC_RELAXED);
	bt_self.dropped++;
	bt_self.drop_reason = BT_DR_REENTRANT;
}

void bt_io_out(struct bt_chan *ch, int fd, const struct iovec *iov,
	       int iovcnt, size_t n, int dgram)
{
	size_t done = 0;
	uint64_t unseen = 0;

	/* (looked at first: the exchange is a locked instruction) */
	if (unlikely(__atomic_load_n(&ch->unseen, __ATOMIC_RELAXED)))
		unseen = __atomic_exchange_n(&ch->unseen, 0, __ATOMIC_RELAXED);

	if (unlikely(unseen) && !dgram) {
		/* bytes a nested call wrote: the processor missed them */
		if (ch->pp)
			go_lost(ch, fd, BT_DIR_OUT);
		data(ch, fd, BT_DIR_OUT, unseen);
	}

	if (ch->sniff && n && iovcnt > 0) {
		size_t first = iov[0].iov_len < n ? iov[0].iov_len : n;
		bt_chan_sniff(ch, fd, BT_DIR_OUT, iov[0].iov_base, first);
	}
	if (n)
		turn(ch, fd, BT_DIR_OUT);
	if (!ch->pp) {
		if (dgram) {
			log_simple(ch, BT_EV_DATA, fd, BT_DIR_OUT, ch->off[BT_DIR_OUT], n);
			ch->off[BT_DIR_OUT]++;
		} else {
			data(ch, fd, BT_DIR_OUT, n);
		}
		return;
	}
	if (dgram) {
		uint8_t small[2048];
		const uint8_t *p = iov[0].iov_base;
		size_t len = n;
		struct bt_msg m;
		long k;
		if (iovcnt > 1 && iov[0].iov_len < n) {
			size_t got = 0;
			if (len > sizeof small)
				len = sizeof small;
			for (int i = 0; i < iovcnt && got < len; i++) {
				size_t c = iov[i].iov_len < len - got ? iov[i].iov_len : len - got;
				memcpy(small + got, iov[i].iov_base, c);
				got += c;
			}
			p = small;
		}
		memset(&m, 0, sizeof m);
		k = ch->pp->feed(ch->pps, BT_DIR_OUT, p, len, &m);
		if (k < 0) {
			go_lost(ch, fd, BT_DIR_OUT);
			log_simple(ch, BT_EV_DATA, fd, BT_DIR_OUT, ch->off[BT_DIR_OUT], n);
		} else {
			if (!m.kind)
				m.kind = BT_MK_ONEWAY;
			log_msg(ch, fd, BT_DIR_OUT, &m, ch->off[BT_DIR_OUT], n, NULL);
		}
		ch->off[BT_DIR_OUT]++;
		return;
	}
	for (int i = 0; i < iovcnt && done < n; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t len = iov[i].iov_len < n - done ? iov[i].iov_len : n - done;
		size_t pos = 0;
		while (pos < len) {
			struct bt_msg m;
			long k;
			if (!ch->pp) {
				data(ch, fd, BT_DIR_OUT, (n - done) - pos);
				return;
			}
			bt_msg_init(&m);
			k = ch->pp->feed(ch->pps, BT_DIR_OUT, p + pos, len - pos, &m);
			if (k <= 0 || (size_t)k > len - pos) {
				go_lost(ch, fd, BT_DIR_OUT);
				continue;
			}
			track(ch, fd, BT_DIR_OUT, (uint64_t)k, &m, NULL);
			pos += (size_t)k;
		}
		done += len;
	}
	track_end(ch, fd, BT_DIR_OUT);
}

/* Common tail of every write-family wrapper. */
/*
 * Before a write-family call: its time, and the channel it writes to (with
 * its generation).  Another thread may close the fd the moment the call
 * returns (apache's event MPM closes connections in its listener); the
 * bytes went to this channel all the same and its record must be written.
 */
static void out_start(int fd)
{
	bt_self.out_ts = bt_now();
	/* paused: not classified now (a channel made during the pause is
	 * announced at its first use after it, if it moved nothing) */
	uintptr_t w = bt_fd_get(fd);
	bt_self.out_ch = bt_paused() ? NULL :
			 BT_FD_IS_CHAN(w) ? (struct bt_chan *)w : bt_chan_of(fd);
	bt_self.out_gen = bt_self.out_ch ? bt_self.out_ch->gen : 0;
}

static void out_done(int fd, const struct iovec *iov, int cnt, ssize_t n)
{
	struct bt_chan *ch = bt_self.out_ch;
	int e = errno;

	if (n <= 0)
		return;
	if (unlikely(bt_paused())) {
		bt_paused_call();
		bt_fd_paused_io(fd);
		errno = e;
		return;
	}
	uint64_t pc = bt_self.pause_lost;
	if (!ch || ch->dark)
		return;
	if (unlikely(!ch->announced))
		bt_chan_announce(ch, fd);
	if (lock_gen(ch, bt_self.out_gen) == 0) {
		bt_io_out(ch, fd, iov, cnt, (size_t)n,
			  ch->transport == BT_TR_DGRAM);
		bt_mutex_unlock(&ch->mu);
	}
	if (unlikely(bt_self.pause_lost != pc))
		bt_chan_go_dark(ch, fd);
	errno = e;
}

/* Fast check: is FD something whose output we account? */
static inline int out_tracked(int fd)
{
	uintptr_t w = bt_fd_get(fd);
	return BT_FD_IS_CHAN(w) || w == BT_FD_NONE;
}

ssize_t bt_write(int fd, const void *buf, size_t len)
{
	ssize_t n;
	if (!out_tracked(fd))
		return REAL(write)(fd, buf, len);
	if (!bt_enter()) {
		n = REAL(write)(fd, buf, len);
		if (bt_conf.enabled)
			bt_io_out_nested(fd, n);
		bt_leave_pass();
		return n;
	}
	out_start(fd);
	n = REAL(write)(fd, buf, len);
	{
		struct iovec iov = { (void *)buf, len };
		out_done(fd, &iov, 1, n);
	}
	bt_leave();
	return n;
}

ssize_t bt_writev(int fd, const struct iovec *iov, int cnt)
{
	ssize_t n;
	if (!out_tracked(fd))
		return REAL(writev)(fd, iov, cnt);
	if (!bt_enter()) {
		n = REAL(writev)(fd, iov, cnt);
		if (bt_conf.enabled)
			bt_io_out_nested(fd, n);
		bt_leave_pass();
		return n;
	}
	out_start(fd);
	n = REAL(writev)(fd, iov, cnt);
	out_done(fd, iov, cnt, n);
	bt_leave();
	return n;
}

ssize_t bt_send(int fd, const void *buf, size_t len, int flags)
{
	ssize_t n;
	if (!bt_enter()) {
		n = REAL(send)(fd, buf, len, flags);
		if (bt_conf.enabled)
			bt_io_out_nested(fd, n);
		bt_leave_pass();
		return n;
	}
	out_start(fd);
	n = REAL(send)(fd, buf, len, flags);
	{
		struct iovec iov = { (void *)buf, len };
		out_done(fd, &iov, 1, n);
	}
	bt_leave();
	return n;
}

ssize_t bt_sendto(int fd, const void *buf, size_t len, int flags,
		  const struct sockaddr *to, socklen_t tolen)
{
	ssize_t n;
	if (!bt_enter()) {
		n = REAL(sendto)(fd, buf, len, flags, to, tolen);
		if (bt_conf.enabled)
			bt_io_out_nested(fd, n);
		bt_leave_pass();
		return n;
	}
	out_start(fd);
	n = REAL(sendto)(fd, buf, len, flags, to, tolen);
	{
		struct iovec iov = { (void *)buf, len };
		out_done(fd, &iov, 1, n);
	}
	bt_leave();
	return n;
}

ssize_t bt_sendmsg(int fd, const struct msghdr *mh, int flags)
{
	ssize_t n;
	if (!bt_enter()) {
		n = REAL(sendmsg)(fd, mh, flags);
		if (bt_conf.enabled)
			bt_io_out_nested(fd, n);
		bt_leave_pass();
		return n;
	}
	out_start(fd);
	n = REAL(sendmsg)(fd, mh, flags);
	if (mh)
		out_done(fd, mh->msg_iov, (int)mh->msg_iovlen, n);
	bt_leave();
	return n;
}

int bt_sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags)
{
	int r;
	if (!bt_enter()) {
		r = REAL(sendmmsg)(fd, v, n, flags);
		bt_leave_pass();
		return r;
	}
	out_start(fd);
	r = REAL(sendmmsg)(fd, v, n, flags);
	for (int i = 0; i < r; i++)
		out_done(fd, v[i].msg_hdr.msg_iov, (int)v[i].msg_hdr.msg_iovlen,
			 (ssize_t)v[i].msg_len);
	bt_leave();
	return r;
}

/*
 * sendfile: the bytes went from a file to the channel without passing
 * through the application.  The processor needs them (body framing), so
 * they are read back from the file with pread at the offsets sendfile
 * used; the page cache makes this a copy, not I/O.
 */
static void file_bytes_out(int out_fd, int in_fd, off_t start, size_t n)
{
	struct bt_chan *ch = bt_self.out_ch;      /* out_start() */
	uint8_t buf[8192];
	int e = errno;
	uint64_t pc = bt_self.pause_lost;

	if (unlikely(bt_paused())) {
		bt_paused_call();
		bt_fd_paused_io(out_fd);
		errno = e;
		return;
	}
	if (!ch || ch->dark)
		return;
	if (!ch->announced)
		bt_chan_announce(ch, out_fd);
	if (lock_gen(ch, bt_self.out_gen) < 0)
		return;
	if (!ch->pp && !ch->sniff) {
		data(ch, out_fd, BT_DIR_OUT, n);
	} else {
		/* Bytes the processor only counts (a body of known length)
		 * are not read back: what bt_io_out does, without them. */
		if (ch->pp && ch->pp->skip && !ch->sniff &&
		    !__atomic_load_n(&ch->unseen, __ATOMIC_RELAXED)) {
			int moved = 0;
			turn(ch, out_fd, BT_DIR_OUT);
			while (n && ch->pp && ch->pp->skip) {
				struct bt_msg m;
				long k;
				bt_msg_init(&m);   /* the header: attrs count from nattr */
				k = ch->pp->skip(ch->pps, BT_DIR_OUT, n, &m);
				if (k <= 0 || (size_t)k > n)
					break;
				track(ch, out_fd, BT_DIR_OUT, (uint64_t)k, &m, NULL);
				start += k;
				n -= (size_t)k;
				moved = 1;
			}
			if (moved)
				track_end(ch, out_fd, BT_DIR_OUT);
		}
		while (n) {
			size_t want = n < sizeof buf ? n : sizeof buf;
			ssize_t got = pread(in_fd, buf, want, start);
			struct iovec iov = { buf, 0 };
			if (got <= 0) {
				/* cannot see the bytes: keep offsets, lose framing */
				if (ch->pp)
					go_lost(ch, out_fd, BT_DIR_OUT);
				data(ch, out_fd, BT_DIR_OUT, n);
				break;
			}
			iov.iov_len = (size_t)got;
			bt_io_out(ch, out_fd, &iov, 1, (size_t)got, 0);
			start += got;
			n -= (size_t)got;
		}
	}
	bt_mutex_unlock(&ch->mu);
	if (unlikely(bt_self.pause_lost != pc))
		bt_chan_go_dark(ch, out_fd);
	errno = e;
}

ssize_t bt_sendfile(int out_fd, int in_fd, off_t *off, size_t n)
{
	ssize_t r;
	off_t start;

	if (!out_tracked(out_fd))
		return REAL(sendfile)(out_fd, in_fd, off, n);
	if (!bt_enter()) {
		r = REAL(sendfile)(out_fd, in_fd, off, n);
		bt_leave_pass();
		return r;
	}
	out_start(out_fd);
	start = off ? *off : lseek(in_fd, 0, SEEK_CUR);
	r = REAL(sendfile)(out_fd, in_fd, off, n);
	if (r > 0 && start >= 0)
		file_bytes_out(out_fd, in_fd, start, (size_t)r);
	bt_leave();
	return r;
}

ssize_t bt_sendfile64(int out_fd, int in_fd, off64_t *off, size_t n)
{
	ssize_t r;
	off64_t start;

	if (!out_tracked(out_fd))
		return REAL(sendfile64)(out_fd, in_fd, off, n);
	if (!bt_enter()) {
		r = REAL(sendfile64)(out_fd, in_fd, off, n);
		bt_leave_pass();
		return r;
	}
	out_start(out_fd);
	start = off ? *off : lseek64(in_fd, 0, SEEK_CUR);
	r = REAL(sendfile64)(out_fd, in_fd, off, n);
	if (r > 0 && start >= 0)
		file_bytes_out(out_fd, in_fd, (off_t)start, (size_t)r);
	bt_leave();
	return r;
}

/*
 * Bytes the shim holds for IN come before the kernel's: a splice from IN
 * hands them over first, written to OUT (a short splice, as the kernel
 * may give), so the stream keeps its order.  Returns the bytes moved,
 * -1 with errno, or -2 when IN holds nothing (the real splice runs).
 */
static ssize_t splice_held(int in, loff_t *ioff, int out, loff_t *ooff,
			   size_t n, unsigned int fl)
{
	uintptr_t w = bt_fd_get(in);
	struct bt_chan *ch;
	uint8_t tmp[4096];
	size_t k;
	ssize_t r;

	if (!BT_FD_IS_CHAN(w) || ioff || !n)
		return -2;
	ch = (struct bt_chan *)w;
	if (lock_chan(ch, in) < 0)
		return -2;
	if (ch->rd == ch->wr) {
		bt_mutex_unlock(&ch->mu);
		return -2;
	}
	k = ch->wr - ch->rd;
	if (k > n)
		k = n;
	if (k > sizeof tmp)
		k = sizeof tmp;
	memcpy(tmp, ch->buf + ch->rd, k);
	bt_mutex_unlock(&ch->mu);
	if (fl & SPLICE_F_NONBLOCK) {
		struct pollfd pf = { .fd = out, .events = POLLOUT };
		if (REAL(poll)(&pf, 1, 0) == 0) {
			errno = EAGAIN;
			return -1;
		}
	}
	r = ooff ? pwrite(out, tmp, k, *ooff) : REAL(write)(out, tmp, k);
	if (r <= 0)
		return r < 0 ? -1 : 0;
	if (ooff)
		*ooff += r;
	if (lock_chan(ch, in) == 0) {
		/* the bytes leave the shim's buffer in order; what they were
		 * part of can no longer be framed */
		/* (another thread reading the same fd meanwhile may have
		 * taken some: never step past what is held) */
		uint32_t took = (size_t)r < ch->wr - ch->rd ? (uint32_t)r
							  : ch->wr - ch->rd;
		if (ch->pp)
			go_lost(ch, in, BT_DIR_IN);
		data(ch, in, BT_DIR_IN, (uint64_t)r);
		ch->rd += took;
		ch->scanned = 0;
		if (ch->rd == ch->wr)
			ch->rd = ch->wr = 0;
		bt_io_ready_changed(ch);
		bt_mutex_unlock(&ch->mu);
	}
	return r;
}

/*
 * splice moves bytes between a pipe and another fd inside the kernel; the
 * shim cannot see them.  Offsets stay exact (DATA), framing on a channel
 * with a processor is given up (LOST_SYNC) because bytes were missed.
 * Input the shim holds for the source goes first (splice_held).
 */
ssize_t bt_splice(int in, off64_t *ioff, int out, off64_t *ooff, size_t n,
		  unsigned int fl)
{
	ssize_t r;
	int e, held = 0;

	if (!bt_enter()) {
		r = REAL(splice)(in, ioff, out, ooff, n, fl);
		bt_leave_pass();
		return r;
	}
	/* held input first, paused or not (what the application sees) */
	bt_self.out_ts = bt_now();
	r = splice_held(in, ioff, out, ooff, n, fl);
	if (r == -2)
		r = REAL(splice)(in, ioff, out, ooff, n, fl);
	else
		held = 1;
	e = errno;
	if (r > 0 && bt_paused()) {
		bt_paused_call();
		bt_fd_paused_io(in);
		bt_fd_paused_io(out);
	} else if (r > 0) {
		int fds[2] = { in, out };
		for (int d = held; d < 2; d++) {
			struct bt_chan *ch = bt_chan_of(fds[d]);
			int dir = d ? BT_DIR_OUT : BT_DIR_IN;
			if (!ch || ch->dark) {
				if (ch && !d)
					bt_emit_unknown_input();
				continue;
			}
			if (lock_chan(ch, fds[d]) < 0)
				continue;
			if (!ch->announced)
				bt_chan_announce(ch, fds[d]);
			if (ch->pp || ch->rd < ch->wr)
				go_lost(ch, fds[d], dir);
			data(ch, fds[d], dir, (uint64_t)r);
			bt_mutex_unlock(&ch->mu);
		}
	}
	errno = e;
	bt_leave();
	return r;
}
