/*
 * out.c - the write family, sendfile and splice (docs/events.md).  Output
 * is never changed: after the real write, the bytes actually written are
 * fed to the processor and logged.  A write's records carry the time the
 * call began (bt_self.out_ts).
 *
 * Locking: the channel mutex is held while the processor runs, never
 * across the real call.
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

/* ---- output ------------------------------------------------------------- */

/*
 * A write made while the thread was inside the shim (a signal handler)
 * passed straight through: count its bytes so offsets stay exact, and
 * count the record it could not have (reported by the next DROP).  The
 * ciphertext a TLS library writes inside an SSL_* call is neither (a
 * channel read on its plaintext), and during a handshake of a session
 * with no descriptor BIO it names the session's socket (bt_tls_learn).
 */
void bt_out_nested(int fd, ssize_t n)
{
	uintptr_t w;

	if (unlikely(bt_tls_cur))
		bt_tls_learn(fd);
	w = bt_fd_get(fd);

	if (n <= 0 || !BT_FD_IS_CHAN(w) || ((struct bt_chan *)w)->tls)
		return;       /* (a TLS library's ciphertext: not counted) */
	struct bt_chan *ch = (struct bt_chan *)w;
	__atomic_add_fetch(&ch->unseen, (uint64_t)n, __ATOMIC_RELAXED);
	/* A signal handler's write (not a recorded one's; not while
	 * the kept ones are written) on a channel whose bytes are plain
	 * data, by stream: kept for the interrupted wrapper's end
	 * (bt_out_stash_flush).  Its bytes count as unseen meanwhile, so a
	 * write on the channel before then accounts for them as before.
	 * Inside a TLS library's call a nested write may be the library's
	 * own (a push function the program gave it), whose work is the
	 * caller's, not a handler's: not kept. */
	if (!bt_self.in_sig && !bt_self.stash_busy &&
	    !bt_tls_cur && !bt_tls_inside &&
	    bt_self.nstash < sizeof bt_self.stash / sizeof bt_self.stash[0] &&
	    !ch->pp && !ch->sniff && !ch->dark &&
	    ch->transport == BT_TR_STREAM) {
		unsigned i = bt_self.nstash;
		bt_self.stash[i].ch = ch;
		bt_self.stash[i].gen = ch->gen;
		bt_self.stash[i].fd = fd;
		bt_self.stash[i].n = (uint64_t)n;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		bt_self.nstash = (uint8_t)(i + 1);
		bt_self.leave_hook = 1;
		return;
	}
	bt_self.dropped++;
	bt_self.drop_reason = BT_DR_REENTRANT;
}

/*
 * The wrapper a signal handler's writes interrupted has left (depth 0,
 * bt_leave_slow): their records now, between SIGNAL begin and end (the
 * handler's work, for no request: docs/events.md), each where its bytes
 * still are on the channel's count - unseen, no write since having
 * accounted for them.  Else (the channel closed or reused, another
 * write took them in) it is a loss, as such a write always was.  Another
 * handler's write meanwhile is not kept (stash_busy).
 */
void bt_out_stash_flush(void)
{
	int e = errno, begun = 0;
	uint64_t lost = 0;

	bt_self.stash_busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	bt_self.depth = 1;
	for (unsigned i = 0; i < bt_self.nstash; i++) {
		struct bt_chan *ch = bt_self.stash[i].ch;
		uint64_t n = bt_self.stash[i].n;
		int kept = 0;
		if (lock_gen(ch, bt_self.stash[i].gen) == 0) {
			/* (paused: its record would not be written, the
			 * bytes stay unseen, a loss as before) */
			if (__atomic_load_n(&ch->unseen, __ATOMIC_RELAXED) >= n &&
			    !ch->pp && !ch->dark && !bt_paused()) {
				__atomic_sub_fetch(&ch->unseen, n,
						   __ATOMIC_RELAXED);
				if (!begun) {
					bt_emit_signal(BT_SG_BEGIN);
					begun = 1;
				}
				data(ch, bt_self.stash[i].fd, BT_DIR_OUT, n);
				kept = 1;
			}
			bt_mutex_unlock(&ch->mu);
		}
		lost += !kept;
	}
	if (begun)
		bt_emit_signal(BT_SG_END);
	if (lost) {              /* (after the end: a DROP ends a handler) */
		bt_self.dropped += lost;
		bt_self.drop_reason = BT_DR_REENTRANT;
	}
	bt_self.nstash = 0;
	bt_self.leave_hook = 0;
	bt_self.depth = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	bt_self.stash_busy = 0;
	errno = e;
}

/* A datagram of N bytes written: one message (ONEWAY if the processor
 * says no kind).  Apart from the stream path, which it would slow. */
static __attribute__((noinline)) void dgram_out(struct bt_chan *ch, int fd,
		const struct iovec *iov, int iovcnt, size_t n)
{
	uint8_t small[2048];
	size_t len;
	const uint8_t *p = bt_iov_gather(iov, iovcnt, n, small, sizeof small,
					 &len);
	struct bt_msg m;
	long k;

	bt_msg_init(&m);
	k = ch->pp->feed(ch->pps, BT_DIR_OUT, p, len, &m);
	if (k < 0) {
		bt_msg_lost(ch, fd, BT_DIR_OUT);
		log_simple(ch, BT_EV_DATA, fd, BT_DIR_OUT, ch->off[BT_DIR_OUT], n);
	} else {
		if (!m.kind)
			m.kind = BT_MK_ONEWAY;
		bt_msg_log(ch, fd, BT_DIR_OUT, &m, ch->off[BT_DIR_OUT], n, NULL);
	}
	ch->off[BT_DIR_OUT]++;
}

void bt_out_iov(struct bt_chan *ch, int fd, const struct iovec *iov,
		int iovcnt, size_t n, int dgram)
{
	uint64_t unseen = 0;

	/* (looked at first: the exchange is a locked instruction) */
	if (unlikely(__atomic_load_n(&ch->unseen, __ATOMIC_RELAXED)))
		unseen = __atomic_exchange_n(&ch->unseen, 0, __ATOMIC_RELAXED);

	if (unlikely(unseen) && !dgram) {
		/* bytes a nested call wrote: the processor missed them */
		if (ch->pp)
			bt_msg_lost(ch, fd, BT_DIR_OUT);
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
	if (likely(!dgram))
		bt_iov_feed(ch, fd, BT_DIR_OUT, iov, iovcnt, 0, n, 0);
	else
		dgram_out(ch, fd, iov, iovcnt, n);
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

/*
 * A write on a dark channel or one bound to a TLS session: framed only
 * when the ciphertext moved outside the SSL_* calls the shim sees and the
 * channel was read as it comes again (bt_chan_tls_unseen).
 */
static __attribute__((noinline)) int out_framed(struct bt_chan *ch, int fd)
{
	return !ch->dark && !bt_tls_inside && bt_chan_tls_unseen(ch, fd);
}

static void out_done_as(int fd, const struct iovec *iov, int cnt, ssize_t n,
			int plaintext)
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
	if (!ch)
		return;
	if (unlikely(bt_self.in_sig) &&
	    ch == bt_self.sig_saved.sig_ch) {
		/* a signal handler writes on the channel whose read it
		 * interrupted: its record could not be put in the right
		 * order with that read's, so not recorded, as before
		 * handlers' calls were (bt_call_safe_begin) */
		if (!plaintext)
			bt_out_nested(fd, n);
		errno = e;
		return;
	}
	if (plaintext) {
		if (ch->dark || !ch->tls)
			return;
	} else if (unlikely(bt_chan_dark_or_tls(ch)) && !out_framed(ch, fd)) {
		return;       /* dark, or the ciphertext of a TLS session */
	}
	if (unlikely(!ch->announced))
		bt_chan_announce(ch, fd);
	if (lock_gen(ch, bt_self.out_gen) == 0) {
		bt_out_iov(ch, fd, iov, cnt, (size_t)n,
			  ch->transport == BT_TR_DGRAM);
		bt_mutex_unlock(&ch->mu);
	}
	if (unlikely(bt_self.pause_lost != pc))
		bt_chan_go_dark(ch, fd);
	errno = e;
}

static void out_done(int fd, const struct iovec *iov, int cnt, ssize_t n)
{
	out_done_as(fd, iov, cnt, n, 0);
}

/*
 * A TLS library's write of plaintext (tls.c): bt_out_tls_begin before the
 * library's call (its time, its channel), bt_out_tls_done after it with the
 * N plaintext bytes written from BUF, framed as a write's would be.  The
 * ciphertext written underneath passes through (out_done, bt_out_nested).
 */
void bt_out_tls_begin(int fd)
{
	out_start(fd);
}

void bt_out_tls_done(int fd, const void *buf, ssize_t n)
{
	struct iovec iov = { (void *)buf, n > 0 ? (size_t)n : 0 };

	out_done_as(fd, &iov, 1, n, 1);
}

/* A TLS library moved N bytes of plaintext on FD that the processor
 * cannot see (SSL_sendfile's file, a GnuTLS retry naming no buffer):
 * LOST_SYNC, offsets stay exact. */
void bt_out_tls_unseen(int fd, ssize_t n)
{
	struct bt_chan *ch = bt_self.out_ch;

	if (n <= 0 || !ch || ch->dark || !ch->tls ||
	    lock_gen(ch, bt_self.out_gen) < 0)
		return;
	if (ch->pp)
		bt_msg_lost(ch, fd, BT_DIR_OUT);
	data(ch, fd, BT_DIR_OUT, (uint64_t)n);
	bt_mutex_unlock(&ch->mu);
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
			bt_out_nested(fd, n);
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
			bt_out_nested(fd, n);
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
			bt_out_nested(fd, n);
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
			bt_out_nested(fd, n);
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
			bt_out_nested(fd, n);
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
		 * are not read back: what bt_out_iov does, without them. */
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
					bt_msg_lost(ch, out_fd, BT_DIR_OUT);
				data(ch, out_fd, BT_DIR_OUT, n);
				break;
			}
			iov.iov_len = (size_t)got;
			bt_out_iov(ch, out_fd, &iov, 1, (size_t)got, 0);
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
			bt_msg_lost(ch, in, BT_DIR_IN);
		data(ch, in, BT_DIR_IN, (uint64_t)r);
		ch->rd += took;
		ch->scanned = 0;
		if (ch->rd == ch->wr)
			ch->rd = ch->wr = 0;
		bt_msg_ready_changed(ch);
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
				bt_msg_lost(ch, fds[d], dir);
			data(ch, fds[d], dir, (uint64_t)r);
			bt_mutex_unlock(&ch->mu);
		}
	}
	errno = e;
	bt_leave();
	return r;
}
