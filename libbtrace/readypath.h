/*
 * readypath.h - what the readiness files share; private to them: ready.c
 * (the list of channels holding input, READY records), epoll.c (epoll
 * sets and calls), poll.c (poll, ppoll, select, pselect).  The helpers on
 * every readiness call are static inline here, as they were when the
 * three were one file.
 */
#ifndef BT_READYPATH_H
#define BT_READYPATH_H

#include <poll.h>
#include <sys/epoll.h>

#include "bt.h"

/* ---- ready.c ---- */
/* Channels holding input or owed a report (bt_ready_count of them). */
BT_HIDDEN extern struct bt_chan **bt_ready_list;
BT_HIDDEN extern unsigned bt_ready_len;
BT_HIDDEN extern pthread_mutex_t bt_ready_mu;
/* The READY record of FD (table word W): POLLBITS, NREADY. */
BT_HIDDEN void bt_ready_log_rec(int fd, uintptr_t w, uint32_t pollbits,
				int nready);

/* ---- epoll.c ---- */
struct epmap_ent { uint64_t data; int fd; };

/* The readiness queue of a set (epoll.c, "The readiness queue"). */
#define BT_EPQ_CAP  64              /* events taken from the kernel at once */
struct bt_epq_ent { uint64_t data; uint32_t events; int fd; };

struct bt_epset {
	bt_mutex_t mu;
	int      epfd;
	int      wake_fd;
	uint64_t cookie;
	int      last_synth;
	int      sleepers;          /* threads blocked in the real call */
	struct epmap_ent *map;      /* open addressing, fd -1 = empty */
	/* the same pairs keyed by fd (cap entries, NULL: none; a pair may be
	 * stale: map is the truth), so that a close finds its fd's data
	 * values without scanning map */
	struct epmap_ent *fdx;
	uint32_t cap, n;
	uint32_t fdx_n;             /* fdx slots not empty (pairs, tombstones) */
	uint64_t gen;               /* changes with every change of the map:
				       unique among all sets (ep_gen) */
	/* the readiness queue, under mu (qlen also read alone as a hint) */
	unsigned qhead, qlen;
	int      taking;            /* a thread is taking a batch (one at a time) */
	uintptr_t waiter;           /* the one thread that waited on the set
				       (its &bt_self), EP_MANY after a second:
				       batches only for a set of one thread */
	int      busy;              /* counted in bt_epq_busy (qlen > 0) */
	uint64_t pseq;              /* purges while a batch was taken */
	struct bt_epset *next, **pprev;   /* every set (ep_sets) */
	struct bt_epq_ent q[BT_EPQ_CAP];
} __attribute__((aligned(64)));

/* Wake the threads asleep in epoll_wait on EPFD (input became held). */
BT_HIDDEN void bt_epoll_wake(int epfd);
/* EPFD was closed: free its set. */
BT_HIDDEN void bt_epoll_set_free(struct bt_epset *es);
/* FD was closed: forget its entries in ES's data -> fd map (ES locked). */
BT_HIDDEN void bt_epoll_map_del_fd(struct bt_epset *es, int fd);

static inline struct bt_epset *epset_of(int epfd)
{
	uintptr_t w = bt_fd_get(epfd);
	return BT_FD_IS_EPSET(w) ? (struct bt_epset *)(w & ~(uintptr_t)1) : NULL;
}

/*
 * Where bt_fd_get(FD) reads FD's word: its place in the table (the
 * second-level arrays are never freed), or a constant word holding what
 * bt_fd_get returns without one (PLAIN beyond the table; NONE for a
 * negative descriptor or one whose array is not there yet).
 */
static const uintptr_t fd_word_plain = BT_FD_PLAIN, fd_word_none = BT_FD_NONE;

static inline const uintptr_t *fd_word_place(int fd)
{
	uintptr_t *l2;

	if (fd < 0)
		return &fd_word_none;
	if ((unsigned)fd >= BT_FDTAB_LIMIT)
		return &fd_word_plain;
	l2 = __atomic_load_n(&bt_fdtab[(unsigned)fd >> BT_FDTAB_L2_BITS],
			     __ATOMIC_ACQUIRE);
	return l2 ? &l2[(unsigned)fd & (BT_FDTAB_L2 - 1)] : &fd_word_none;
}

static inline int chan_has_input(const struct bt_chan *ch)
{
	return ch->rd < ch->wr || ch->owed;
}

/* Is FD's channel holding input for the application? */
static inline int fd_owed(int fd)
{
	uintptr_t w = bt_fd_get(fd);
	if (!BT_FD_IS_CHAN(w))
		return 0;
	struct bt_chan *ch = (struct bt_chan *)w;
	return ch->in_ready_list && chan_has_input(ch);
}

/*
 * Does a READY of FD (table word W) begin work for no request in
 * bp-reconstruct?  A timeout or an unknown fd (fd < 0); a descriptor it
 * knows no channel end for: one seen and no channel (an eventfd, a timer,
 * a file, an epoll set), a socket never announced (a listening socket);
 * a dark one (logged as READY -1).  A descriptor never seen is not known
 * to be one.
 */
static inline int ready_noreq(int fd, uintptr_t w)
{
	if (fd < 0)
		return 1;
	if (BT_FD_IS_CHAN(w)) {
		const struct bt_chan *ch = (const struct bt_chan *)w;
		return !ch->announced || ch->dark;
	}
	return w != BT_FD_NONE && w != BT_FD_OWN;
}

/*
 * The test the readiness wrappers' fast paths begin with: an
 * application's call (depth 0), with event isolation, by a thread that
 * works for no request already (bt_noreq_current), no input held by the
 * shim for anyone (bt_ready_count).  Tracing is on: a thread has a slot
 * (bt_noreq_current) only if bt_conf.enabled was set at start-up, and it
 * is never cleared after.
 */
static inline int ready_fast_ok(void)
{
	return bt_noreq_current() && bt_self.depth == 0 && bt_conf.isolation &&
	       !__atomic_load_n(&bt_ready_count, __ATOMIC_ACQUIRE);
}

/*
 * Log the fd handed over.  When the thread works for no request already
 * (its last record began that, nothing recorded since) and this one would
 * begin the same, nothing is written: a second empty fragment for no
 * request says nothing (docs/events.md "READY"), and skipping it costs
 * no clock read.
 */
static inline void log_ready(int fd, uint32_t pollbits, int nready)
{
	uintptr_t w = fd >= 0 ? bt_fd_get(fd) : BT_FD_NONE;

	if (bt_noreq_current() && ready_noreq(fd, w))
		return;
	bt_ready_log_rec(fd, w, pollbits, nready);
}

/*
 * Log a timeout (READY -1).  One of a wait on one fd alone (ALONE: a poll
 * of one fd, a select of one) is flagged BT_RF_ALONE: it is part of the
 * fragment that made it (a pooled connection's liveness check, a socket
 * timeout), so it begins no work for no request (docs/events.md "READY").
 */
static inline void log_timeout(int alone)
{
	uint64_t v[3] = { bt_zigzag(-1), BT_RF_ALONE, 0 };

	if (!alone) {
		log_ready(-1, 0, 0);
		return;
	}
	if (bt_noreq_current())
		return;           /* nothing since the work for no request began */
	bt_emit_ints(BT_EV_READY, 0, 3, v);
}

/*
 * Around the real call of a wrapper that holds no lock and has no state
 * the application's other calls could disturb (epoll_ctl), by a thread
 * that works for no request already: a signal handler's calls then work
 * for no request too, and are recorded in that fragment (no READY needed).
 * Ended by bt_wait_end.  (php-fpm's master: SIGCHLD while it removes a
 * dead child's pipes from its epoll set.)
 */
static inline void bt_safe_begin(void)
{
	if (bt_self.depth == 1 && bt_noreq_current()) {
		bt_self.wait_depth = 1;
		bt_self.sig_marked = 1;
	}
}

static inline uint32_t epoll_to_poll(uint32_t e)
{
	uint32_t p = 0;
	if (e & (EPOLLIN | EPOLLRDNORM | EPOLLPRI)) p |= POLLIN;
	if (e & (EPOLLOUT | EPOLLWRNORM)) p |= POLLOUT;
	if (e & EPOLLERR) p |= POLLERR;
	if (e & (EPOLLHUP | EPOLLRDHUP)) p |= POLLHUP;
	return p;
}

/* log_ready of an epoll event (the bits converted only when written) */
static inline void log_ready_ep(int fd, uintptr_t w, uint32_t events)
{
	if (bt_noreq_current() && ready_noreq(fd, w))
		return;
	bt_ready_log_rec(fd, w, epoll_to_poll(events), 1);
}

/*
 * The order in which poll and select hand over ready entries, one per
 * call.  Events of a socket or pipe come first, then those of other fds (a
 * loop's own eventfd or timerfd), then hang-ups and errors.  So what was
 * sent before a close is read before the close is seen (a worker's result
 * pipe before its exit: CPython's ProcessPoolExecutor takes a worker whose
 * exit it sees first for dead), and a loop draining its events without
 * blocking dispatches every one before it meets its own bt_epoll_wake-up fd (GLib's
 * while (g_main_context_iteration (ctx, FALSE)) idiom).
 */
static inline int ready_class(int fd, short revents)
{
	if (revents & (POLLHUP | POLLERR | POLLNVAL))
		return 2;
	return BT_FD_IS_CHAN(bt_fd_get(fd)) ? 0 : 1;
}

#endif /* BT_READYPATH_H */
