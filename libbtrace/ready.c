/*
 * ready.c - readiness calls: the list of channels holding input and the
 * READY records; the calls are in epoll.c and poll.c (readypath.h).
 *
 * Two duties (paper section 3.2; docs/events.md "Fragments"):
 *
 * 1. Input the shim holds for an fd (in.c) must make that fd readable, in
 *    every readiness call, level- and edge-triggered, because the kernel no
 *    longer sees those bytes.  Channels holding input (or owed a report
 *    after an EAGAIN-once) are on a global list; readiness calls consult it
 *    only when it is not empty.  Each epoll set gets a private eventfd
 *    (hidden, registered with a random cookie) so a thread blocked in
 *    epoll_wait is woken when input becomes held for an fd of its set
 *    while it sleeps (a pipelined request left over by a worker thread, for
 *    instance); the bt_epoll_wake-up is consumed inside the wrapper.
 *
 * 2. One ready fd per call.  epoll_wait takes the kernel's batch once and
 *    hands it over one event per call from the set's readiness queue
 *    (epoll.c, "the readiness queue": events of an fd deleted, modified
 *    or closed meanwhile are dropped).  poll and select return one ready
 *    entry, chosen round-robin; the others are reported again by the
 *    next call, since poll and select are level-triggered.  The fd handed over is logged
 *    (BT_EV_READY): the fragment that follows starts from it.
 *
 * With BTRACE_ISOLATION=0 calls are passed through whole and every ready fd
 * is logged, which is what a tracer without isolation sees.
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

int bt_ready_count;

struct bt_chan **bt_ready_list;
unsigned bt_ready_len;
static unsigned rcap;
pthread_mutex_t bt_ready_mu = PTHREAD_MUTEX_INITIALIZER;

/* ---- the list of channels holding input --------------------------------- */

void bt_ready_add(struct bt_chan *ch)
{
	pthread_mutex_lock(&bt_ready_mu);
	if (!ch->in_ready_list) {
		if (bt_ready_len == rcap) {
			unsigned nc = rcap ? rcap * 2 : 16;
			struct bt_chan **nl = realloc(bt_ready_list, nc * sizeof *nl);
			if (!nl) {
				pthread_mutex_unlock(&bt_ready_mu);
				return;
			}
			bt_ready_list = nl;
			rcap = nc;
		}
		bt_ready_list[bt_ready_len++] = ch;
		ch->in_ready_list = 1;
		__atomic_store_n(&bt_ready_count, (int)bt_ready_len, __ATOMIC_SEQ_CST);
	}
	pthread_mutex_unlock(&bt_ready_mu);
	struct bt_epiter it;
	BT_EPREG_EACH(ch, r, it) {
		int epfd = __atomic_load_n(&r->epfd, __ATOMIC_ACQUIRE);
		if (epfd >= 0 && r->armed && (r->events & EPOLLIN))
			bt_epoll_wake(epfd);
	}
}

void bt_ready_del(struct bt_chan *ch)
{
	pthread_mutex_lock(&bt_ready_mu);
	if (ch->in_ready_list) {
		for (unsigned i = 0; i < bt_ready_len; i++)
			if (bt_ready_list[i] == ch) {
				bt_ready_list[i] = bt_ready_list[--bt_ready_len];
				break;
			}
		ch->in_ready_list = 0;
		__atomic_store_n(&bt_ready_count, (int)bt_ready_len, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&bt_ready_mu);
}

void bt_ready_fd_closed(int fd, uintptr_t word)
{
	if (BT_FD_IS_EPSET(word)) {
		bt_epoll_set_free((struct bt_epset *)(word & ~(uintptr_t)1));
		return;
	}
	if (BT_FD_IS_CHAN(word)) {
		struct bt_chan *ch = (struct bt_chan *)word;
		struct bt_epiter it;
		BT_EPREG_EACH(ch, r, it) {
			struct bt_epset *es;
			if (r->epfd < 0)
				continue;
			es = epset_of(r->epfd);
			if (es) {
				bt_mutex_lock(&es->mu);
				bt_epoll_map_del_fd(es, fd);
				bt_mutex_unlock(&es->mu);
			}
			if (ch->refs <= 1)
				__atomic_store_n(&r->epfd, -1, __ATOMIC_RELEASE);
		}
	}
}

void bt_ready_atfork_child(void)
{
	pthread_mutex_init(&bt_ready_mu, NULL);
}

void bt_ready_log_rec(int fd, uintptr_t w, uint32_t pollbits, int nready)
{
	/* input on a channel that is not traced (dark, docs/security.md):
	 * the fragment works for no request */
	if (fd >= 0 && unlikely(bt_fd_dark(w))) {
		bt_emit_unknown_input();
		return;
	}
	if (w == BT_FD_NONE && fd >= 0)
		w = bt_fd_seen(fd);
	if (ready_noreq(fd, w)) {
		uint64_t h0 = bt_self.slot.head;
		bt_emit_ints3(BT_EV_READY, 0, bt_zigzag(fd), pollbits,
			      bt_zigzag(nready));
		bt_noreq_mark(h0);
		return;
	}
	bt_emit_ints3(BT_EV_READY, 0, bt_zigzag(fd), pollbits,
		      bt_zigzag(nready));
}

/* ---- signal handlers at a wait ------------------------------------------ */

/* SIGNAL FLAGS: written even while paused (its handler's calls are
 * not), so a reader never misses an end it saw the beginning of. */
void bt_emit_signal(uint32_t flags)
{
	struct bt_event ev;

	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_SIGNAL;
	ev.flags = flags;
	bt_emit_always(&ev);
}

/*
 * A wrapper re-entered: depth was > 0 and is now one more.  When the
 * wrapper it interrupted sleeps in an event loop's readiness wait
 * (bt_wait_begin: no lock held, no record half written, the thread's
 * fragment over), this is a signal handler's call at a safe point: it is
 * recorded as a call of its own.  The interrupted wrapper's per-thread
 * state is kept aside until the call leaves (bt_sig_leave).  A handler's
 * first recorded call in a wait writes a READY -1 flagged BT_RF_SIGNAL
 * (unless the thread works for no request already): a signal arrives
 * from outside the thread's work, so its calls work for no request.
 * The same inside the real system call of a read that holds nothing
 * (bt_call_safe_begin), where the thread's fragment is not over: there
 * the handler's first call writes SIGNAL begin, and the read writes
 * SIGNAL end when its system call returns, before its own records.
 * Anywhere else (a handler that interrupted a write, the shim's own
 * bookkeeping; a handler interrupted by another) the call passes
 * through and its events are counted in the next DROP, as before.
 */
int bt_sig_enter(void)
{
	if (likely(!bt_self.wait_depth) || bt_self.in_sig ||
	    bt_self.depth != bt_self.wait_depth + 1)
		return 0;
	union bt_wait_marks m = { .w = bt_self.wait_marks };
	int first = !m.f.m;

	bt_self.sig_saved.depth = bt_self.depth - 1;
	bt_self.sig_saved.out_ts = bt_self.out_ts;
	bt_self.sig_saved.out_ch = bt_self.out_ch;
	bt_self.sig_saved.out_gen = bt_self.out_gen;
	bt_self.sig_saved.sig_ch = m.f.n ? bt_self.sig_ch : NULL;
	/* the marks as the handler leaves them (bt_sig_leave): its
	 * READY -1 or SIGNAL begin written */
	m.f.m = 1;
	bt_self.sig_saved.wait_marks = m.w;
	bt_self.in_sig = 1;
	bt_self.leave_hook = 1;
	bt_self.wait_marks = 0;
	bt_self.depth = 1;
	bt_self.out_ts = 0;
	bt_self.out_ch = NULL;
	if (first) {
		int e = errno;
		if (m.f.n)
			bt_emit_signal(BT_SG_BEGIN);
		else if (!bt_noreq_current())
			bt_ready_log_rec(-1, BT_FD_NONE, BT_RF_SIGNAL, 0);
		errno = e;
	}
	return 1;
}

/* A handler's calls were recorded inside the read's system call: their
 * end, before the read's own records (bt_call_safe_end). */
void bt_call_safe_end_slow(void)
{
	int e = errno;

	bt_self.wait_marks = 0;
	bt_emit_signal(BT_SG_END);
	errno = e;
}

void bt_sig_leave(void)
{
	bt_self.depth = bt_self.sig_saved.depth;
	bt_self.wait_marks = bt_self.sig_saved.wait_marks;
	bt_self.out_ts = bt_self.sig_saved.out_ts;
	bt_self.out_ch = bt_self.sig_saved.out_ch;
	bt_self.out_gen = bt_self.sig_saved.out_gen;
	bt_self.in_sig = 0;
	bt_self.leave_hook = bt_self.nstash != 0;
}

void bt_leave_slow(void)
{
	if (bt_self.in_sig)
		bt_sig_leave();
	else if (bt_self.nstash)
		bt_out_stash_flush();
	else
		bt_self.leave_hook = 0;
}

int bt_leave_slow_ret(int r)
{
	bt_leave_slow();
	return r;
}
