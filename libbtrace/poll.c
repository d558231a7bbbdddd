/*
 * poll.c - poll, ppoll, select and pselect: held input reported, one
 * ready entry per call, round-robin (ready.c has the whole story).
 */
#include "config.h"

#include <poll.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/select.h>
#include <unistd.h>

#include "bt.h"
#include "impl.h"
#include "readypath.h"

/* ---- poll --------------------------------------------------------------- */

enum poll_kind { PK_POLL, PK_PPOLL };

/* Does a poll wait on one fd alone, or on none (a sleep: urllib3 polls
 * nothing with a zero timeout to see that poll works)?  A blocking wait on
 * it, not an event loop's: its READY is flagged BT_RF_ALONE. */
static int poll_alone(const struct pollfd *fds, nfds_t n)
{
	int k = 0;

	for (nfds_t i = 0; i < n; i++)
		if (fds[i].fd >= 0 && ++k > 1)
			return 0;
	return 1;
}

static int poll_real(int kind, struct pollfd *fds, nfds_t n, int tmo,
		     const struct timespec *ts, const sigset_t *sig)
{
	if (kind == PK_POLL)
		return REAL(poll)(fds, n, tmo);
	return REAL(ppoll)(fds, n, ts, sig);
}

static int poll_common(int kind, struct pollfd *fds, nfds_t n, int tmo,
		       const struct timespec *ts, const sigset_t *sig)
{
	int r, owed = 0;
	nfds_t pick = (nfds_t)-1;

	if (!bt_enter()) {
		r = poll_real(kind, fds, n, tmo, ts, sig);
		bt_leave_pass();
		return r;
	}
	bt_self.epoch++;
	if (bt_paused() && !__atomic_load_n(&bt_ready_count, __ATOMIC_ACQUIRE)) {
		bt_paused_call();
		r = poll_real(kind, fds, n, tmo, ts, sig);
		bt_leave();
		return r;
	}
	if (__atomic_load_n(&bt_ready_count, __ATOMIC_ACQUIRE))
		for (nfds_t i = 0; i < n; i++)
			if (fds[i].fd >= 0 && (fds[i].events & (POLLIN | POLLRDNORM)) &&
			    fd_owed(fds[i].fd))
				owed = 1;
	if (owed) {
		struct timespec zero = { 0, 0 };
		r = poll_real(kind, fds, n, 0, &zero, sig);
		if (r < 0 && errno != EINTR) {
			bt_leave();
			return r;
		}
		if (r < 0)
			r = 0;
		for (nfds_t i = 0; i < n; i++)
			if (fds[i].fd >= 0 &&
			    (fds[i].events & (POLLIN | POLLRDNORM)) &&
			    fd_owed(fds[i].fd)) {
				if (!fds[i].revents)
					r++;
				fds[i].revents |= fds[i].events & (POLLIN | POLLRDNORM);
			}
	} else {
		int sleeps = tmo != 0 || (kind == PK_PPOLL &&
					  (!ts || ts->tv_sec || ts->tv_nsec));
		if (sleeps)
			bt_emit_idle();
		/* an event loop's wait, or one that begins no work: a
		 * signal handler's calls are recorded (bt_wait_begin) */
		if (sleeps && (bt_noreq_current() || !poll_alone(fds, n)))
			bt_wait_begin();
		r = poll_real(kind, fds, n, tmo, ts, sig);
		bt_wait_end();
	}
	if (r < 0) {
		bt_leave();
		return r;
	}
	/* A poll of one fd is a blocking wait on it (a socket timeout:
	 * CPython, the JDK; urllib3's check that a pooled connection is
	 * alive), not an event loop: flagged BT_RF_ALONE, its timeout too */
	if (r == 0) {
		log_timeout(poll_alone(fds, n));
		bt_leave();
		return 0;
	}
	if (!bt_conf.isolation) {
		for (nfds_t i = 0; i < n; i++)
			if (fds[i].revents)
				log_ready(fds[i].fd, (uint32_t)fds[i].revents |
					  (poll_alone(fds, n) ? BT_RF_ALONE : 0), r);
		bt_leave();
		return r;
	}
	/* Which ready entry goes first (ready_class), then round-robin by fd
	 * number: the first ready fd after the last one this thread got.
	 * One entry is the one. */
	if (n == 1) {
		bt_self.ready_rr = (uint32_t)fds[0].fd;
		log_ready(fds[0].fd, (uint32_t)fds[0].revents | BT_RF_ALONE, r);
		bt_leave();
		return 1;
	}
	{
		int best = -1, first = -1, cls = 3;
		nfds_t besti = 0, firsti = 0;
		for (nfds_t i = 0; i < n; i++)
			if (fds[i].revents) {
				int k = ready_class(fds[i].fd, fds[i].revents);
				if (k < cls)
					cls = k;
			}
		for (nfds_t i = 0; i < n; i++) {
			if (!fds[i].revents ||
			    ready_class(fds[i].fd, fds[i].revents) != cls)
				continue;
			int f = fds[i].fd;
			if (first < 0 || f < first) {
				first = f;
				firsti = i;
			}
			if (f > (int)bt_self.ready_rr && (best < 0 || f < best)) {
				best = f;
				besti = i;
			}
		}
		pick = best >= 0 ? besti : firsti;
	}
	for (nfds_t i = 0; i < n; i++)
		if (i != pick && fds[i].fd != fds[pick].fd)
			fds[i].revents = 0;
	bt_self.ready_rr = (uint32_t)fds[pick].fd;
	{
		int cnt = 0;
		for (nfds_t i = 0; i < n; i++)
			if (fds[i].revents)
				cnt++;
		log_ready(fds[pick].fd, (uint32_t)fds[pick].revents |
			  (poll_alone(fds, n) ? BT_RF_ALONE : 0), r);
		r = cnt;
	}
	bt_leave();
	return r;
}

/*
 * FD's table word (FD >= 0), what bt_fd_get returns: read where the
 * thread's last look at FD found it (the second-level arrays are never
 * freed), else looked up, and kept unless FD's array is not there yet.
 */
static __attribute__((noinline)) uintptr_t poll_word_slow(int fd)
{
	const uintptr_t *p = fd_word_place(fd);

	if (p != &fd_word_none) {
		bt_self.pc_key = (unsigned)fd + 1;
		bt_self.pc_word = p;
	}
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline uintptr_t poll_word(int fd)
{
	if (likely((unsigned)fd + 1 == bt_self.pc_key))
		return __atomic_load_n(bt_self.pc_word, __ATOMIC_ACQUIRE);
	return poll_word_slow(fd);
}

/*
 * poll of one descriptor that is no traced channel (or of none), by a
 * thread that works for no request already (bt_noreq_current): whatever
 * it returns, the READY would not be written, and with one entry there is
 * nothing to choose.  So only the bookkeeping poll_common would do is
 * done: a server loop polling its idle eventfd or listening socket costs
 * about the call itself.
 */
static inline int poll_one_noreq(const struct pollfd *fds, nfds_t n)
{
	int fd;

	if (n != 1 || !ready_fast_ok())
		return 0;
	fd = fds[0].fd;
	return ready_noreq(fd, fd >= 0 ? poll_word(fd) : BT_FD_NONE);
}

/* poll_one_noreq's call that may sleep (TMO not 0): the thread's
 * records are spooled without bp-logd, and a signal handler's calls
 * during the wait are recorded (it works for no request). */
static __attribute__((noinline)) int poll_one_sleep(struct pollfd *fds,
						    int tmo)
{
	int r;

	bt_emit_idle();
	bt_wait_begin();
	r = REAL(poll)(fds, 1, tmo);
	bt_wait_end();
	if (r > 0)
		bt_self.ready_rr = (uint32_t)fds[0].fd;
	bt_leave();
	return r;
}

int bt_poll(struct pollfd *fds, nfds_t n, int tmo)
{
	if (poll_one_noreq(fds, n)) {
		int r;
		bt_self.depth = 1;       /* bt_enter's count: it was 0 */
		bt_self.epoch++;
		if (tmo != 0)
			return poll_one_sleep(fds, tmo);
		/* a peek: no wait marks (bt_wait_end would store the 0
		 * that wait_depth is at depth 0) */
		r = REAL(poll)(fds, 1, 0);
		if (r > 0)
			bt_self.ready_rr = (uint32_t)fds[0].fd;
		return bt_leave_top(r);
	}
	return poll_common(PK_POLL, fds, n, tmo, NULL, NULL);
}

int bt_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts,
	     const sigset_t *sig)
{
	return poll_common(PK_PPOLL, fds, n, 0, ts, sig);
}

/* ---- select ------------------------------------------------------------- */

/* Does a select wait on one fd alone (in any of its sets), or on none (a
 * sleep)?  Like a poll of one fd: its READY is flagged BT_RF_ALONE. */
static int select_alone(int nfds, const fd_set *rd, const fd_set *wr,
			const fd_set *ex)
{
	int n = 0;

	for (int f = 0; f < nfds; f++)
		if ((rd && FD_ISSET(f, rd)) || (wr && FD_ISSET(f, wr)) ||
		    (ex && FD_ISSET(f, ex)))
			if (++n > 1)
				return 0;
	return 1;
}

static int select_common(int pselect_, int nfds, fd_set *rd, fd_set *wr,
			 fd_set *ex, struct timeval *tv,
			 const struct timespec *ts, const sigset_t *sig)
{
	fd_set orig_rd;
	int r, owed = 0, pick = -1, alone;
	uint32_t af;

#define SEL_REAL(TV, TS) (pselect_ ? REAL(pselect)(nfds, rd, wr, ex, TS, sig) \
				   : REAL(select)(nfds, rd, wr, ex, TV))
	if (!bt_enter()) {
		r = SEL_REAL(tv, ts);
		bt_leave_pass();
		return r;
	}
	bt_self.epoch++;
	if (nfds < 0 || nfds > FD_SETSIZE ||
	    (bt_paused() && !__atomic_load_n(&bt_ready_count, __ATOMIC_ACQUIRE))) {
		if (bt_paused())
			bt_paused_call();
		r = SEL_REAL(tv, ts);
		bt_leave();
		return r;
	}
	if (rd)
		orig_rd = *rd;
	alone = select_alone(nfds, rd, wr, ex);
	af = alone ? BT_RF_ALONE : 0;
	if (rd && __atomic_load_n(&bt_ready_count, __ATOMIC_ACQUIRE))
		for (int f = 0; f < nfds; f++)
			if (FD_ISSET(f, rd) && fd_owed(f))
				owed = 1;
	if (owed) {
		struct timeval ztv = { 0, 0 };
		struct timespec zts = { 0, 0 };
		r = SEL_REAL(&ztv, &zts);
		if (r < 0 && errno != EINTR) {
			bt_leave();
			return r;
		}
		if (r < 0) {
			FD_ZERO(rd);
			if (wr) FD_ZERO(wr);
			if (ex) FD_ZERO(ex);
		}
		for (int f = 0; f < nfds; f++)
			if (FD_ISSET(f, &orig_rd) && fd_owed(f))
				FD_SET(f, rd);
	} else {
		bt_emit_idle();
		if (!alone || bt_noreq_current())
			bt_wait_begin();     /* as poll_common */
		r = SEL_REAL(tv, ts);
		bt_wait_end();
	}
#undef SEL_REAL
	if (r < 0) {
		bt_leave();
		return r;
	}
	{
		int first = -1, best = -1, total = 0, cls = 3;
		for (int f = 0; f < nfds; f++) {
			int on = (rd && FD_ISSET(f, rd)) || (wr && FD_ISSET(f, wr)) ||
				 (ex && FD_ISSET(f, ex));
			if (on) {
				int k = ready_class(f, ex && FD_ISSET(f, ex) ? POLLPRI : POLLIN);
				if (k < cls)
					cls = k;
			}
		}
		for (int f = 0; f < nfds; f++) {
			int on = (rd && FD_ISSET(f, rd)) || (wr && FD_ISSET(f, wr)) ||
				 (ex && FD_ISSET(f, ex));
			if (!on)
				continue;
			total++;
			if (ready_class(f, ex && FD_ISSET(f, ex) ? POLLPRI : POLLIN) != cls)
				continue;
			if (first < 0)
				first = f;
			if (best < 0 && f > (int)bt_self.ready_rr)
				best = f;
		}
		if (!total) {
			log_timeout(alone);
			bt_leave();
			return 0;
		}
		pick = best >= 0 ? best : first;
		if (!bt_conf.isolation) {
			for (int f = 0; f < nfds; f++) {
				uint32_t bits = 0;
				if (rd && FD_ISSET(f, rd)) bits |= POLLIN;
				if (wr && FD_ISSET(f, wr)) bits |= POLLOUT;
				if (ex && FD_ISSET(f, ex)) bits |= POLLPRI;
				if (bits)
					log_ready(f, bits | af, total);
			}
			r = 0;
			for (int f = 0; f < nfds; f++)
				r += (rd && FD_ISSET(f, rd)) + (wr && FD_ISSET(f, wr)) +
				     (ex && FD_ISSET(f, ex));
			bt_leave();
			return r;
		}
		uint32_t bits = 0;
		r = 0;
		for (int f = 0; f < nfds; f++) {
			if (f == pick) {
				if (rd && FD_ISSET(f, rd)) { bits |= POLLIN; r++; }
				if (wr && FD_ISSET(f, wr)) { bits |= POLLOUT; r++; }
				if (ex && FD_ISSET(f, ex)) { bits |= POLLPRI; r++; }
				continue;
			}
			if (rd) FD_CLR(f, rd);
			if (wr) FD_CLR(f, wr);
			if (ex) FD_CLR(f, ex);
		}
		bt_self.ready_rr = (uint32_t)pick;
		log_ready(pick, bits | af, total);
	}
	bt_leave();
	return r;
}

int bt_select(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
	return select_common(0, n, rd, wr, ex, tv, NULL, NULL);
}

int bt_pselect(int n, fd_set *rd, fd_set *wr, fd_set *ex,
	       const struct timespec *ts, const sigset_t *sig)
{
	return select_common(1, n, rd, wr, ex, NULL, ts, sig);
}
