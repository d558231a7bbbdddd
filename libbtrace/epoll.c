/*
 * epoll.c - epoll sets (their data -> fd map, the hidden wake-up eventfd,
 * the readiness queue) and the epoll calls: held input reported, one
 * event per call (ready.c has the whole story).
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

/* ---- epoll sets ------------------------------------------------------ */

static uint64_t ep_gen;

/* Every set (for a close, which does not know the sets of its fd), and
 * how many of them are busy: events queued or a batch being taken. */
static pthread_mutex_t ep_sets_mu = PTHREAD_MUTEX_INITIALIZER;
static struct bt_epset *ep_sets;
int bt_epq_busy;

/* The map of ES is about to change (ES locked). */
static void epmap_changed(struct bt_epset *es)
{
	__atomic_store_n(&es->gen, __atomic_add_fetch(&ep_gen, 1, __ATOMIC_RELAXED),
			 __ATOMIC_RELEASE);
}

static uint32_t hash64(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdull;
	v ^= v >> 33;
	return (uint32_t)v;
}

/* data -> fd; -2 when the data value is shared by several fds. */
static int epmap_get(struct bt_epset *es, uint64_t data)
{
	if (!es->cap)
		return -1;
	for (uint32_t i = hash64(data) & (es->cap - 1), k = 0; k < es->cap;
	     i = (i + 1) & (es->cap - 1), k++) {
		if (es->map[i].fd == -1)
			return -1;
		if (es->map[i].data == data && es->map[i].fd != -3)
			return es->map[i].fd;
	}
	return -1;
}

static int epmap_put(struct bt_epset *es, uint64_t data, int fd);
static void epq_purge_locked(struct bt_epset *es, int lo, int hi);

static void fdx_insert(struct bt_epset *es, int fd, uint64_t data)
{
	for (uint32_t i = hash64((uint64_t)(uint32_t)fd) & (es->cap - 1);;
	     i = (i + 1) & (es->cap - 1))
		if (es->fdx[i].fd < 0) {
			if (es->fdx[i].fd == -1)
				es->fdx_n++;
			es->fdx[i].fd = fd;
			es->fdx[i].data = data;
			return;
		}
}

/* ES's fd index made again from the map's live entries (ES locked). */
static void fdx_rebuild(struct bt_epset *es)
{
	for (uint32_t i = 0; i < es->cap; i++)
		es->fdx[i].fd = -1;
	es->fdx_n = 0;
	for (uint32_t i = 0; i < es->cap; i++)
		if (es->map[i].fd >= 0)
			fdx_insert(es, es->map[i].fd, es->map[i].data);
}

/* The pair (FD, DATA) into ES's fd index (ES locked).  Kept at most half
 * full, as the map: stale pairs (an entry made ambiguous or forgotten)
 * leave with a rebuild, which then finds at most the map's entries. */
static void fdx_put(struct bt_epset *es, int fd, uint64_t data)
{
	if (!es->fdx)
		return;
	if ((es->fdx_n + 1) * 2 > es->cap)
		fdx_rebuild(es);
	fdx_insert(es, fd, data);
}

/*
 * Rehash into a table sized for the live entries (a quarter full at most),
 * dropping tombstones: a server that registers a new connection for every
 * request and deletes it at its close keeps a small table, instead of one
 * doubled at each rehash.  The fd index is made again from the live
 * entries (dropping its stale pairs); without memory for it, a close
 * scans the map (bt_epoll_map_del_fd).
 */
static void epmap_grow(struct bt_epset *es)
{
	struct epmap_ent *old = es->map;
	uint32_t oldcap = es->cap, ncap = 64, live = 0;
	struct epmap_ent *nm;

	for (uint32_t i = 0; i < oldcap; i++)
		if (old[i].fd >= 0 || old[i].fd == -2)
			live++;
	while ((live + 1) * 4 > ncap)
		ncap *= 2;
	nm = malloc(ncap * sizeof *nm);

	if (!nm)
		return;
	free(es->fdx);
	es->fdx = malloc(ncap * sizeof *es->fdx);
	es->fdx_n = 0;
	for (uint32_t i = 0; i < ncap; i++) {
		nm[i].fd = -1;
		if (es->fdx)
			es->fdx[i].fd = -1;
	}
	es->map = nm;
	es->cap = ncap;
	es->n = 0;
	for (uint32_t i = 0; i < oldcap; i++)
		if (old[i].fd >= 0 || old[i].fd == -2)
			epmap_put(es, old[i].data, old[i].fd);
	free(old);
}

/* Map DATA to FD: 1 if DATA was not in the map, else 0.  The whole run
 * of slots is looked at before a tombstone is taken for DATA, so that a
 * value already there is found (and made ambiguous when another fd
 * registers it), never entered twice. */
static int epmap_put(struct bt_epset *es, uint64_t data, int fd)
{
	uint32_t i, free_at = UINT32_MAX;

	epmap_changed(es);
	if ((es->n + 1) * 2 > es->cap)
		epmap_grow(es);
	if (!es->cap)
		return 0;
	for (i = hash64(data) & (es->cap - 1);; i = (i + 1) & (es->cap - 1)) {
		if (es->map[i].fd == -1)
			break;
		if (es->map[i].fd == -3) {
			if (free_at == UINT32_MAX)
				free_at = i;
			continue;
		}
		if (es->map[i].data == data) {
			if (es->map[i].fd != fd)
				es->map[i].fd = -2;   /* ambiguous */
			return 0;
		}
	}
	if (free_at != UINT32_MAX)
		i = free_at;
	else
		es->n++;
	if (fd >= 0)
		fdx_put(es, fd, data);  /* (a rebuild there sees the map without it) */
	es->map[i].data = data;
	es->map[i].fd = fd;
	return 1;
}

/* Forget DATA (put by a registration the kernel refused). */
static void epmap_forget(struct bt_epset *es, uint64_t data)
{
	epmap_changed(es);
	for (uint32_t i = 0; i < es->cap; i++)
		if (es->map[i].data == data && es->map[i].fd != -1)
			es->map[i].fd = -3;
}

void bt_epoll_map_del_fd(struct bt_epset *es, int fd)
{
	/* a batch being taken drops what it got of FD (epq_raced) */
	if (__atomic_load_n(&es->taking, __ATOMIC_SEQ_CST))
		__atomic_add_fetch(&es->pseq, 1, __ATOMIC_SEQ_CST);
	epmap_changed(es);
	if (!es->fdx) {
		for (uint32_t i = 0; i < es->cap; i++)
			if (es->map[i].fd == fd)
				es->map[i].fd = -3;       /* tombstone */
		return;
	}
	/* FD's pairs in the index, each data value's entry in the map */
	for (uint32_t i = hash64((uint64_t)(uint32_t)fd) & (es->cap - 1);
	     es->fdx[i].fd != -1; i = (i + 1) & (es->cap - 1)) {
		if (es->fdx[i].fd != fd)
			continue;
		uint64_t data = es->fdx[i].data;
		es->fdx[i].fd = -3;
		for (uint32_t j = hash64(data) & (es->cap - 1);
		     es->map[j].fd != -1; j = (j + 1) & (es->cap - 1))
			if (es->map[j].data == data && es->map[j].fd == fd)
				es->map[j].fd = -3;
	}
}

/*
 * data -> fd as epmap_get, for the event an epoll_wait returns.  The
 * thread keeps its last answer, with the set's generation it was true
 * in: a server waiting on the same descriptor again and again (its
 * listening socket, its eventfd) takes no lock.  With the answer it
 * keeps where the descriptor's word is (fd_word_place), for the peek.
 */
static __attribute__((noinline)) int
epmap_lookup_locked(struct bt_epset *es, uint64_t data)
{
	uint64_t g;
	int fd;

	bt_mutex_lock(&es->mu);
	fd = epmap_get(es, data);
	g = es->gen;
	bt_mutex_unlock(&es->mu);
	bt_self.epc_set = es;
	bt_self.epc_gen = g;
	bt_self.epc_data = data;
	bt_self.epc_fd = fd;
	bt_self.epc_word = fd_word_place(fd);
	return fd;
}

static inline int epmap_lookup(struct bt_epset *es, uint64_t data)
{
	uint64_t g = __atomic_load_n(&es->gen, __ATOMIC_ACQUIRE);

	if (bt_self.epc_set == es && bt_self.epc_gen == g &&
	    bt_self.epc_data == data)
		return bt_self.epc_fd;
	return epmap_lookup_locked(es, data);
}

void bt_epoll_created(int epfd)
{
	struct bt_epset *es;
	struct epoll_event ev;
	int wfd;

	if (epfd < 0)
		return;
	es = aligned_alloc(64, sizeof *es);
	if (!es)
		return;
	memset(es, 0, sizeof *es);
	bt_mutex_init(&es->mu);
	epmap_changed(es);
	es->epfd = epfd;
	es->wake_fd = -1;
	if (getrandom(&es->cookie, sizeof es->cookie, GRND_NONBLOCK) !=
	    sizeof es->cookie)
		es->cookie = bt_now() ^ 0x9e3779b97f4a7c15ull ^ (uint64_t)epfd;
	wfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (wfd >= 0) {
		es->wake_fd = bt_own_fd_hide(wfd);
		memset(&ev, 0, sizeof ev);
		ev.events = EPOLLIN;
		ev.data.u64 = es->cookie;
		if (REAL(epoll_ctl)(epfd, EPOLL_CTL_ADD, es->wake_fd, &ev) < 0) {
			bt_fd_set(es->wake_fd, BT_FD_NONE);
			REAL(close)(es->wake_fd);
			es->wake_fd = -1;
		} else {
			bt_own_var(&es->wake_fd, 1);
		}
	}
	pthread_mutex_lock(&ep_sets_mu);
	es->next = ep_sets;
	if (ep_sets)
		ep_sets->pprev = &es->next;
	es->pprev = &ep_sets;
	ep_sets = es;
	pthread_mutex_unlock(&ep_sets_mu);
	bt_fd_set(epfd, (uintptr_t)es | 1);
}

void bt_epoll_set_free(struct bt_epset *es)
{
	if (es->wake_fd >= 0) {
		bt_own_var(&es->wake_fd, 0);
		bt_fd_set(es->wake_fd, BT_FD_NONE);
		REAL(close)(es->wake_fd);
	}
	pthread_mutex_lock(&ep_sets_mu);
	*es->pprev = es->next;
	if (es->next)
		es->next->pprev = es->pprev;
	if (es->busy)
		__atomic_sub_fetch(&bt_epq_busy, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&ep_sets_mu);
	free(es->map);
	free(es->fdx);
	/* Type-stable like channels would be safer; epoll sets are few and
	 * closed rarely: a racing epoll_wait on a closing epfd is an
	 * application bug. */
	free(es);
}

/* Wake threads sleeping in epoll_wait on EPFD (only if there are any:
 * a sleeper announces itself before its last look at the held input, so
 * either it sees the new input or we see it). */
void bt_epoll_wake(int epfd)
{
	struct bt_epset *es = epset_of(epfd);
	uint64_t one = 1;

	if (es && es->wake_fd >= 0 &&
	    __atomic_load_n(&es->sleepers, __ATOMIC_SEQ_CST) > 0)
		(void)!REAL(write)(es->wake_fd, &one, sizeof one);
}

/* ---- epoll ------------------------------------------------------------ */

/* CH's registration in epoll set EPFD, or NULL. */
static struct bt_epreg *epreg_find(const struct bt_chan *ch, int epfd)
{
	struct bt_epiter it;

	BT_EPREG_EACH(ch, r, it)
		if (r->epfd == epfd)
			return r;
	return NULL;
}

/* Take slot R for set EPFD if it is free: never used, deleted, or left by
 * a set since closed.  Disarmed until its caller fills it in. */
static int epreg_take(struct bt_epreg *r, int epfd)
{
	int cur = __atomic_load_n(&r->epfd, __ATOMIC_ACQUIRE);

	if (cur >= 0 && epset_of(cur))
		return 0;
	r->armed = 0;
	return __atomic_compare_exchange_n(&r->epfd, &cur, epfd, 0,
					   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/*
 * A new registration of CH in set EPFD: a free slot, else a new chunk
 * appended to ep_more (a socket in a third set: three threads watching
 * one connection, haproxy's takeovers between threads).  Slots are taken
 * by compare-and-swap: two threads adding the socket to their own sets
 * at once never take the same one.  NULL when out of memory.
 */
static struct bt_epreg *epreg_claim(struct bt_chan *ch, int epfd)
{
	struct bt_epreg_more *m, *cur, **pp = &ch->ep_more;
	struct bt_epiter it;

	BT_EPREG_EACH(ch, r, it)
		if (epreg_take(r, epfd))
			return r;
	m = malloc(sizeof *m);
	if (!m)
		return NULL;
	memset(m, 0, sizeof *m);
	for (int i = 0; i < BT_EPREG_MORE; i++)
		m->r[i].epfd = -1;
	m->r[0].epfd = epfd;
	for (;;) {
		cur = NULL;
		if (__atomic_compare_exchange_n(pp, &cur, m, 0, __ATOMIC_RELEASE,
						__ATOMIC_ACQUIRE))
			return &m->r[0];
		pp = &cur->next;
	}
}

/* Log WANT fd with FLAGS (poll bits now asked for) for channel CH, unless
 * it is not announced or dark; lost to a pause, it makes CH dark. */
static void log_want(struct bt_chan *ch, int fd, uint32_t flags)
{
	struct bt_event w;
	uint64_t pc = bt_self.pause_lost;

	if (!ch->announced || ch->dark)
		return;
	memset(&w, 0, sizeof w);
	w.type = BT_EV_WANT;
	w.fd = fd;
	w.flags = flags;
	bt_emit(&w);
	/* lost to a pause: whose output waits is unknown */
	if (bt_self.pause_lost != pc)
		bt_chan_go_dark(ch, fd);
}

int bt_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct bt_epset *es;
	struct bt_chan *ch;
	int r, e;

	if (!bt_enter()) {
		r = REAL(epoll_ctl)(epfd, op, fd, ev);
		bt_leave_pass();
		return r;
	}
	if (bt_own_is_fd(fd)) {          /* the application cannot see ours */
		bt_leave();
		errno = op == EPOLL_CTL_ADD ? EBADF : ENOENT;
		return -1;
	}
	/*
	 * The data of an ADD or MOD is mapped before the kernel has the
	 * registration: a batch that takes its first event finds its fd
	 * (an event whose data is not mapped, taken while the set changed,
	 * is dropped as one of a deleted registration: ep_fetch).
	 */
	es = epset_of(epfd);
	int fresh = 0;
	if (es && op != EPOLL_CTL_DEL && ev) {
		bt_mutex_lock(&es->mu);
		fresh = epmap_put(es, ev->data.u64, fd);
		bt_mutex_unlock(&es->mu);
	}
	bt_safe_begin();
	r = REAL(epoll_ctl)(epfd, op, fd, ev);
	bt_wait_end();
	if (r < 0 || !es) {
		if (es && fresh) {
			e = errno;
			bt_mutex_lock(&es->mu);
			epmap_forget(es, ev->data.u64);
			bt_mutex_unlock(&es->mu);
			errno = e;
		}
		bt_leave();
		return r;
	}
	e = errno;
	bt_mutex_lock(&es->mu);
	if (op == EPOLL_CTL_DEL)
		bt_epoll_map_del_fd(es, fd);
	/* DEL, MOD: queued events of FD are void (the readiness queue) */
	if (op != EPOLL_CTL_ADD)
		epq_purge_locked(es, fd, fd);
	bt_mutex_unlock(&es->mu);

	/* (while paused, no descriptor is classified: see in.c) */
	ch = !bt_paused() ? bt_chan_of(fd) :
	     BT_FD_IS_CHAN(bt_fd_get(fd)) ? (struct bt_chan *)bt_fd_get(fd) : NULL;
	if (ch) {
		struct bt_epreg *reg = epreg_find(ch, epfd);
		int had_out = reg && (reg->events & EPOLLOUT);
		if (op == EPOLL_CTL_DEL) {
			/* removed while asking for out (libevent deletes a
			 * bufferevent's fd once its output is out and reading
			 * is off): out is given up */
			if (had_out)
				log_want(ch, fd, 0);
			if (reg) {
				reg->events = 0;
				__atomic_store_n(&reg->epfd, -1, __ATOMIC_RELEASE);
			}
		} else if (ev) {
			/* Asking to be told when the fd is writable, in this
			 * fragment, says whose output waits in the program
			 * (event libraries queue writes in user space and send
			 * them from the writable event): logged as WANT. */
			if ((ev->events & EPOLLOUT) || had_out)
				log_want(ch, fd, epoll_to_poll(ev->events));
			if (!reg && !(reg = epreg_claim(ch, epfd))) {
				/* out of memory: the first one's place */
				reg = &ch->ep[0];
				reg->epfd = epfd;
			}
			reg->events = ev->events;
			reg->data = ev->data.u64;
			reg->told = 0;    /* ADD, MOD: a new report is due */
			__atomic_store_n(&reg->armed, 1, __ATOMIC_RELEASE);
			/* registered while holding input: make it visible */
			if ((ev->events & EPOLLIN) && ch->in_ready_list &&
			    chan_has_input(ch))
				bt_epoll_wake(epfd);
		}
	}
	errno = e;
	bt_leave();
	return r;
}

/*
 * Does registration R need the shim to report CH?  Bytes the shim holds
 * the kernel cannot report.  A report owed after an EAGAIN-once (the
 * bytes are in the kernel) only an edge-triggered registration needs,
 * whose edge was spent: a level-triggered one, and an EPOLLONESHOT one
 * (re-armed by EPOLL_CTL_MOD, which looks at the fd again), the kernel
 * reports by itself, and a second report would hand the fd to a second
 * thread of the set while the kernel's goes to a first (mariadbd's
 * thread pool: two workers reading one connection).
 */
static inline int synth_needed(const struct bt_chan *ch,
			       const struct bt_epreg *r)
{
	if (ch->rd < ch->wr)
		return 1;
	return (r->events & (EPOLLET | EPOLLONESHOT)) == EPOLLET;
}

/*
 * A channel of set ES holding input, armed for EPOLLIN: fill OUT and
 * return 1 (handing it over, EPOLLONESHOT respected).
 */
static int epoll_synth_held(struct bt_epset *es, struct epoll_event *out,
			    int *fdp)
{
	struct bt_chan *pick = NULL;
	struct bt_epreg *reg = NULL;

	pthread_mutex_lock(&bt_ready_mu);
	for (unsigned i = 0; i < bt_ready_len && !pick; i++) {
		struct bt_chan *ch = bt_ready_list[i];
		struct bt_epiter it;
		if (!chan_has_input(ch))
			continue;
		BT_EPREG_EACH(ch, r, it)
			if (r->epfd == es->epfd && r->armed &&
			    (r->events & EPOLLIN) &&
			    !((r->events & EPOLLET) && r->told) &&
			    synth_needed(ch, r)) {
				pick = ch;
				reg = r;
				/* rotate: the next search starts after it */
				bt_ready_list[i] = bt_ready_list[bt_ready_len - 1];
				bt_ready_list[bt_ready_len - 1] = ch;
				break;
			}
	}
	pthread_mutex_unlock(&bt_ready_mu);
	if (!pick)
		return 0;
	/* edge-triggered: one report per edge and set, as the kernel does
	 * (each set it is in gets the edge: a socket taken over by another
	 * thread's set is still in the old one, whose thread drops the
	 * event); the next read of the fd makes a new edge */
	if (reg->events & EPOLLET) {
		reg->told = 1;
		pick->et_told = 1;
	}
	out->events = EPOLLIN | (reg->events & EPOLLRDNORM);
	out->data.u64 = reg->data;
	*fdp = epmap_lookup(es, reg->data);
	if (*fdp < 0)
		*fdp = -2;
	if (reg->events & EPOLLONESHOT) {
		struct epoll_event off = { .events = EPOLLONESHOT,
					   .data.u64 = reg->data };
		reg->armed = 0;
		if (*fdp >= 0)
			REAL(epoll_ctl)(es->epfd, EPOLL_CTL_MOD, *fdp, &off);
	}
	return 1;
}

static inline int epoll_synth(struct bt_epset *es, struct epoll_event *out,
			      int *fdp)
{
	return __atomic_load_n(&bt_ready_count, __ATOMIC_ACQUIRE) &&
	       epoll_synth_held(es, out, fdp);
}

/* The kernel handed over EV (not our bt_epoll_wake-up) for FD (its data
 * looked up in the map): bookkeeping and READY. */
static inline __attribute__((always_inline)) void
ep_took_fd(struct bt_epset *es, int epfd, const struct epoll_event *ev, int fd)
{
	es->last_synth = 0;
	if (fd < 0) {
		log_ready_ep(-2, BT_FD_NONE, ev->events);
		return;
	}
	uintptr_t w = bt_fd_get(fd);
	struct bt_chan *ch = BT_FD_IS_CHAN(w) ? (struct bt_chan *)w :
			     w == BT_FD_NONE ? bt_chan_of(fd) : NULL;
	if (ch) {
		struct bt_epiter it;
		w = (uintptr_t)ch;
		BT_EPREG_EACH(ch, r, it)
			if (r->epfd == epfd && (r->events & EPOLLONESHOT))
				r->armed = 0;
	} else if (w == BT_FD_NONE) {
		w = bt_fd_get(fd);        /* classified by bt_chan_of */
	}
	log_ready_ep(fd, w, ev->events);
}

static inline __attribute__((always_inline)) void
ep_took(struct bt_epset *es, int epfd, const struct epoll_event *ev)
{
	ep_took_fd(es, epfd, ev, epmap_lookup(es, ev->data.u64));
}

enum ep_kind { EPK_WAIT, EPK_PWAIT, EPK_PWAIT2 };

static inline __attribute__((always_inline)) int
ep_real_call(int kind, int epfd, struct epoll_event *ev, int max,
	     int timeout_ms, const struct timespec *ts, const sigset_t *sig)
{
	switch (kind) {
	case EPK_WAIT:
		return REAL(epoll_wait)(epfd, ev, max, timeout_ms);
	case EPK_PWAIT:
		return REAL(epoll_pwait)(epfd, ev, max, timeout_ms, sig);
	default:
		if (!REAL(epoll_pwait2)) {
			errno = ENOSYS;
			return -1;
		}
		return REAL(epoll_pwait2)(epfd, ev, max, ts, sig);
	}
}

/* The real wait: an event loop's, so a signal handler's calls during it
 * are recorded (bt_wait_begin). */
static inline __attribute__((always_inline)) int
ep_real(int kind, int epfd, struct epoll_event *ev, int max, int timeout_ms,
	const struct timespec *ts, const sigset_t *sig)
{
	int r;

	bt_wait_begin();
	r = ep_real_call(kind, epfd, ev, max, timeout_ms, ts, sig);
	bt_wait_end();
	return r;
}

/* ---- the readiness queue ------------------------------------------------ */

/*
 * Isolation hands the program one ready fd per call; asking the kernel
 * for one event per call costs a system call per event.  So a call that
 * may return several (maxevents > 1) takes up to BT_EPQ_CAP from the
 * kernel at once, hands the first over and queues the rest in the set;
 * the next calls on the set hand them over one each, without a system
 * call, before the kernel is asked again.  Why this is what the program
 * would have seen (docs/libbtrace.md, "The readiness queue"):
 *
 * - A queued event is one the kernel reported in a batch the program
 *   asked for.  Without the shim the program would have had the whole
 *   batch in its array and handled it in order, an event made stale by
 *   handling an earlier one included: handing the batch over one event
 *   per call is that same order.
 * - What the program does between two calls that the kernel would have
 *   answered differently is honoured: EPOLL_CTL_DEL and EPOLL_CTL_MOD of
 *   an fd drop its queued events (after MOD the kernel looks at the fd
 *   again and reports it if still ready), and so do close() and a dup2
 *   over it (the kernel forgets the fd with its last descriptor).
 *   Events are queued with the fd their data maps to when taken, so the
 *   map changing later never makes one name another fd.
 * - EPOLLONESHOT: the kernel disarmed the registration when it reported
 *   it; the shim's copy is disarmed at once too (no held input of it is
 *   reported while its kernel event waits in the queue).  EPOLLET: the
 *   kernel reported the edge once; it is handed over once.  Level-
 *   triggered: the kernel will report it again while it stays ready; a
 *   queued one is handed over once, as in the batch.
 * - Several threads on one set share its queue (under the set's lock).
 *   One of them at a time takes batches (the others ask the kernel for
 *   one event, as without the queue, so none waits for the taker); a
 *   thread that queued events while others sleep in epoll_wait on the
 *   set wakes them (the set's eventfd), and each thread that takes one
 *   and leaves more wakes the next, so no queued event waits for the
 *   taker either.  A batch is never larger than the room left: nothing
 *   is ever dropped for want of room.  A DEL, MOD or close of a
 *   channel made while a batch is being taken is counted (pseq): the taker
 *   drops the events it took of registrations gone meanwhile
 *   (epq_raced).
 * - A queue that holds events makes a call return at once, whatever its
 *   timeout, as the kernel does with events ready; with a signal mask
 *   (epoll_pwait) too: the kernel returns ready events without looking
 *   at signals.  Input held by the shim still alternates with the
 *   kernel's events, queued ones being the kernel's.
 * - fork: the child starts with empty queues (the parent's batch is the
 *   parent's).  Closing the epfd frees the queue.
 */

/* ES's busy state may have changed (ES locked): keep bt_epq_busy right. */
static void epq_busy_update(struct bt_epset *es)
{
	int b = es->qlen > 0;

	if (b == es->busy)
		return;
	es->busy = b;
	if (b)
		__atomic_add_fetch(&bt_epq_busy, 1, __ATOMIC_SEQ_CST);
	else
		__atomic_sub_fetch(&bt_epq_busy, 1, __ATOMIC_SEQ_CST);
}

/* Descriptors LO..HI left set ES or changed there (ES locked): their
 * queued events are dropped, a thread taking a batch is told. */
static void epq_purge_locked(struct bt_epset *es, int lo, int hi)
{
	unsigned k = 0;

	if (!es->busy && !__atomic_load_n(&es->taking, __ATOMIC_SEQ_CST))
		return;
	for (unsigned i = 0; i < es->qlen; i++) {
		struct bt_epq_ent *e = &es->q[(es->qhead + i) % BT_EPQ_CAP];
		if (e->fd >= lo && e->fd <= hi)
			continue;
		es->q[(es->qhead + k) % BT_EPQ_CAP] = *e;
		k++;
	}
	__atomic_store_n(&es->qlen, k, __ATOMIC_RELEASE);
	if (__atomic_load_n(&es->taking, __ATOMIC_SEQ_CST))
		__atomic_add_fetch(&es->pseq, 1, __ATOMIC_SEQ_CST);
	epq_busy_update(es);
}

void bt_epq_fds_gone_slow(int lo, int hi)
{
	if (lo > hi)
		return;
	pthread_mutex_lock(&ep_sets_mu);
	for (struct bt_epset *es = ep_sets; es; es = es->next) {
		bt_mutex_lock(&es->mu);
		epq_purge_locked(es, lo, hi);
		bt_mutex_unlock(&es->mu);
	}
	pthread_mutex_unlock(&ep_sets_mu);
}

void bt_epq_atfork_prepare(void)
{
	pthread_mutex_lock(&ep_sets_mu);
}

void bt_epq_atfork_parent(void)
{
	pthread_mutex_unlock(&ep_sets_mu);
}

void bt_epq_atfork_child(void)
{
	pthread_mutex_init(&ep_sets_mu, NULL);
	bt_epq_busy = 0;
	for (struct bt_epset *es = ep_sets; es; es = es->next) {
		bt_mutex_init(&es->mu);
		es->qhead = es->qlen = 0;
		es->taking = es->busy = 0;
		es->sleepers = 0;
	}
}

/*
 * Was an event of FD, taken by a batch that began at purge count SEQ0,
 * made void meanwhile (ES locked)?  When the set changed while the batch
 * was taken, an event whose data is no longer mapped (FD -1) is one of a
 * registration deleted (or of a channel closed) after the kernel
 * reported it: dropped.  One whose data is mapped may be of the
 * registration that replaced it (an ADD or MOD after a DEL, maps its
 * data before the kernel has it): kept, since dropping a new
 * registration's edge would lose it; it may then be a stale one of the
 * old registration, as an event in the batch of a thread whose call ran
 * alongside the change is, in any epoll program.
 */
static inline int epq_raced(const struct bt_epset *es, uint64_t seq0,
			    int fd)
{
	return es->pseq != seq0 && fd == -1;
}

/* Wake the threads asleep on ES, if any. */
static void ep_wake_set(struct bt_epset *es)
{
	uint64_t one = 1;

	if (es->wake_fd >= 0 &&
	    __atomic_load_n(&es->sleepers, __ATOMIC_SEQ_CST) > 0)
		(void)!REAL(write)(es->wake_fd, &one, sizeof one);
}

/* The oldest queued event of ES into EV, its fd in *FDP: 1, or 0 when the
 * queue is empty.  Threads asleep on the set are woken while more wait. */
static inline int epq_pop(struct bt_epset *es, struct epoll_event *ev, int *fdp)
{
	struct bt_epq_ent e;
	unsigned more;

	if (likely(!__atomic_load_n(&es->qlen, __ATOMIC_ACQUIRE)))
		return 0;
	bt_mutex_lock(&es->mu);
	if (!es->qlen) {
		bt_mutex_unlock(&es->mu);
		return 0;
	}
	e = es->q[es->qhead];
	es->qhead = (es->qhead + 1) % BT_EPQ_CAP;
	more = es->qlen - 1;
	__atomic_store_n(&es->qlen, more, __ATOMIC_RELEASE);
	epq_busy_update(es);
	bt_mutex_unlock(&es->mu);
	ev->events = e.events;
	ev->data.u64 = e.data;
	*fdp = e.fd;
	if (more) {
		int er = errno;
		ep_wake_set(es);
		errno = er;
	}
	return 1;
}

/* The kernel reported FD's registration in set EPFD: an EPOLLONESHOT one
 * is disarmed (it is until EPOLL_CTL_MOD). */
static void ep_disarm(int epfd, int fd)
{
	uintptr_t w;

	if (fd < 0)
		return;
	w = bt_fd_get(fd);
	if (BT_FD_IS_CHAN(w)) {
		struct bt_chan *ch = (struct bt_chan *)w;
		struct bt_epiter it;
		BT_EPREG_EACH(ch, r, it)
			if (r->epfd == epfd && (r->events & EPOLLONESHOT))
				r->armed = 0;
	}
}

/* A wake-up of ours among EV's N events: consumed and dropped from EV;
 * returns how many are left. */
static int ep_strip_wake(struct bt_epset *es, struct epoll_event *ev, int n,
			 int *woke)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		if (ev[i].data.u64 == es->cookie) {
			uint64_t v;
			(void)!REAL(read)(es->wake_fd, &v, sizeof v);
			*woke = 1;
			continue;
		}
		ev[k++] = ev[i];
	}
	return k;
}

/*
 * Take ES's taking flag for a batch, or say another thread has it: an
 * atomic exchange, unless this thread is the process's solo owner
 * (core.h), which stores it plainly with the hold counted (*SOLO set;
 * bt_solo_leave once it is cleared).  PLAIN_OK: the hold ends before
 * anything that may block (a peek: a zero timeout); else the exchange,
 * after the solo prologue, so that a thread's first touch of the flag
 * ends another's solo mode (whose plain store it would otherwise race).
 */
static inline int epq_take(struct bt_epset *es, int plain_ok, int *solo)
{
	*solo = 0;
	if (plain_ok) {
		if (likely(bt_solo_enter())) {
			if (unlikely(es->taking)) {
				bt_solo_leave();
				return 0;
			}
			__atomic_store_n(&es->taking, 1, __ATOMIC_RELAXED);
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			*solo = 1;
			return 1;
		}
	} else {
		bt_solo_touch();
	}
	return !__atomic_exchange_n(&es->taking, 1, __ATOMIC_SEQ_CST);
}

/* Clear ES's taking flag that epq_take took (SOLO as it said). */
static inline void epq_untake(struct bt_epset *es, int solo)
{
	__atomic_store_n(&es->taking, 0, __ATOMIC_RELEASE);
	if (solo)
		bt_solo_leave();
}

/* Queue EV[FIRST..N) of a batch begun at purge count SEQ0 (ES's taker). */
static void epq_push(struct bt_epset *es, int epfd, struct epoll_event *ev,
		     int first, int n, uint64_t seq0)
{
	int fds[BT_EPQ_CAP];

	bt_mutex_lock(&es->mu);
	for (int i = first; i < n; i++) {
		int fd = epmap_get(es, ev[i].data.u64);
		fds[i] = fd;
		if (epq_raced(es, seq0, fd))
			continue;
		struct bt_epq_ent *q =
			&es->q[(es->qhead + es->qlen) % BT_EPQ_CAP];
		q->data = ev[i].data.u64;
		q->events = ev[i].events;
		q->fd = fd;
		__atomic_store_n(&es->qlen, es->qlen + 1, __ATOMIC_RELEASE);
	}
	epq_busy_update(es);
	bt_mutex_unlock(&es->mu);
	for (int i = first; i < n; i++)
		ep_disarm(epfd, fds[i]);
	ep_wake_set(es);
}

/* The end of ep_fetch's batch of R events (begun at purge count SEQ0):
 * all but the first queued. */
static __attribute__((noinline)) int
ep_fetch_rest(struct bt_epset *es, int epfd, struct epoll_event *ev, int r,
	      uint64_t seq0, int *woke, int solo)
{
	int e = errno, n, first;

	n = r > 0 ? ep_strip_wake(es, ev, r, woke) : 0;
	/* woken: everything is queued (held input may come first) */
	first = *woke || n == 0 ? 0 : 1;
	if (n > first)
		epq_push(es, epfd, ev, first, n, seq0);
	epq_untake(es, solo);
	errno = e;
	return r < 0 ? r : first;
}

/*
 * The real call of a round.  With MAX > 1 (and the queue on) it takes a
 * batch of up to MAX, BT_EPQ_CAP and the room left in the queue: the
 * first event goes to the caller in EV[0] (1 is returned), the others
 * are queued.  One thread of a set takes batches at a time (the others
 * ask for one event, as without the queue): only the taker adds to the
 * queue, so the room it sees can only grow until it adds.  0: nothing
 * for the caller: a timeout, or our wake-up (*WOKE set; the events that
 * came with it queued).  < 0: the call failed (errno).
 */
/* es->waiter once a second thread has waited on the set. */
#define EP_MANY ((uintptr_t)1)

/*
 * Has only the calling thread ever waited on ES?  A set several threads
 * wait on (a thread pool: MariaDB's pool-of-threads, where any worker
 * may become the listener) takes no batches: with the queue its program
 * could stall for good, two requests in flight never answered and
 * mariadbd not stopping (tb-mariadb, about 2 runs in 5 at c=64), which
 * the queue turned off never did.  Until the cause is found, such a set
 * asks the kernel for one event per call, as before the queue existed.
 */
static inline int ep_one_thread(struct bt_epset *es)
{
	uintptr_t me = (uintptr_t)&bt_self;
	uintptr_t w = __atomic_load_n(&es->waiter, __ATOMIC_RELAXED);

	if (likely(w == me))
		return 1;
	if (w == 0 && __atomic_compare_exchange_n(&es->waiter, &w, me, 0,
						  __ATOMIC_SEQ_CST,
						  __ATOMIC_SEQ_CST))
		return 1;
	if (w != EP_MANY)
		__atomic_store_n(&es->waiter, EP_MANY, __ATOMIC_SEQ_CST);
	return 0;
}

static inline __attribute__((always_inline)) int
ep_fetch(int kind, struct bt_epset *es, int epfd, struct epoll_event *ev,
	 int max, int tmo, const struct timespec *ts, const sigset_t *sig,
	 int *woke)
{
	int want = max < BT_EPQ_CAP ? max : BT_EPQ_CAP, r, solo;
	uint64_t seq0 = 0;

	*woke = 0;
	if (want > 1 && bt_conf.epq && ep_one_thread(es) &&
	    epq_take(es, 0, &solo)) {
		int room = BT_EPQ_CAP -
			   (int)__atomic_load_n(&es->qlen, __ATOMIC_ACQUIRE);
		if (want > room + 1)
			want = room + 1;
		seq0 = __atomic_load_n(&es->pseq, __ATOMIC_SEQ_CST);
	} else {
		want = 1;
	}
	r = ep_real(kind, epfd, ev, want, tmo, ts, sig);
	if (want == 1) {
		if (r == 1 && ev[0].data.u64 == es->cookie) {
			uint64_t v;
			(void)!REAL(read)(es->wake_fd, &v, sizeof v);
			*woke = 1;
			return 0;
		}
		return r;
	}
	if (likely(r == 1 && ev[0].data.u64 != es->cookie)) {
		/* one event, for the caller: nothing to queue */
		epq_untake(es, 0);
		return 1;
	}
	return ep_fetch_rest(es, epfd, ev, r, seq0, woke, 0);
}

/* Drop our bt_epoll_wake-up events from a batch (isolation off). */
static int strip_cookie(struct bt_epset *es, struct epoll_event *ev, int n)
{
	int woke = 0;

	return ep_strip_wake(es, ev, n, &woke);
}

static int epoll_common(int kind, struct bt_epset *es, int epfd,
			struct epoll_event *events, int maxevents,
			int timeout_ms, const struct timespec *ts,
			const sigset_t *sig);

/* A peek's wake-up of ours, meant for a sleeper that saw the input
 * first: consumed, then the whole round (which peeks again). */
static __attribute__((noinline)) int
epoll_peek_woke(int kind, struct bt_epset *es, int epfd,
		struct epoll_event *events, int max, const sigset_t *sig)
{
	es->last_synth = 0;
	bt_leave();
	return epoll_common(kind, es, epfd, events, max, 0, NULL, sig);
}

/* The end of a peek whose result may need a record (R 1: EV's event of
 * FD, -1 unknown; 0: nothing): ep_took_fd's or the timeout's work. */
static __attribute__((noinline)) void
epoll_peek_log(struct bt_epset *es, int epfd, const struct epoll_event *ev,
	       int r, int fd)
{
	if (r == 1) {
		ep_took_fd(es, epfd, ev, fd);
		/* the descriptor's array may be new (classified) */
		if (bt_self.epc_set == es && bt_self.epc_fd == fd)
			bt_self.epc_word = fd_word_place(fd);
	} else {
		log_ready(-1, 0, 0);
	}
}

/*
 * Is the thread still working for no request after a wait its
 * epoll_peek_ok found it doing so?  Its records move only in a signal
 * handler's call recorded during the wait, which marks it (bt_sig_enter
 * sets sig_marked; bt_wait_begin_top cleared it); a pause may have
 * begun.  Then bt_noreq_current() is what it was.
 */
static inline int peek_still_noreq(void)
{
	return !bt_self.sig_marked && !bt_paused();
}

/* What a peek does with the kernel's answer R to a call for WANT events
 * (WANT > 1: a batch begun at purge count SEQ0, ES's taking flag held)
 * when it is not one event for the caller: ep_fetch's end, then what
 * epoll_wait_kind's end would be. */
static __attribute__((noinline)) int
epoll_peek_rest(int kind, struct bt_epset *es, int epfd,
		struct epoll_event *ev, int max, const sigset_t *sig, int r,
		int want, uint64_t seq0, int solo)
{
	int woke = 0;

	if (want == 1) {
		if (r == 1 && ev[0].data.u64 == es->cookie) {
			uint64_t v;
			(void)!REAL(read)(es->wake_fd, &v, sizeof v);
			woke = 1;
			r = 0;
		}
	} else {
		r = ep_fetch_rest(es, epfd, ev, r, seq0, &woke, solo);
	}
	if (woke)
		return epoll_peek_woke(kind, es, epfd, ev, max, sig);
	if (r == 1)
		ep_took(es, epfd, &ev[0]);
	else if (r == 0)
		log_ready(-1, 0, 0);
	bt_leave();
	return r;
}

static inline int epoll_peek_ok(struct bt_epset *es, int maxevents,
				int timeout_ms)
{
	return timeout_ms == 0 && es && maxevents >= 1 && ready_fast_ok() &&
	       !es->last_synth &&
	       !__atomic_load_n(&es->qlen, __ATOMIC_RELAXED);
}

/* The wrappers' calls of epoll_common, each a tail call of few
 * arguments (so the wrapper itself needs no frame). */
static __attribute__((noinline)) int
epoll_common_wait(struct bt_epset *es, int epfd, struct epoll_event *ev,
		  int max, int tmo)
{
	return epoll_common(EPK_WAIT, es, epfd, ev, max, tmo, NULL, NULL);
}

static __attribute__((noinline)) int
epoll_common_pwait(struct bt_epset *es, int epfd, struct epoll_event *ev,
		   int max, int tmo, const sigset_t *sig)
{
	return epoll_common(EPK_PWAIT, es, epfd, ev, max, tmo, NULL, sig);
}

/*
 * An epoll_wait or epoll_pwait peek (KIND, a constant) that
 * epoll_peek_ok let through: a zero timeout, by a thread that works for
 * no request already (bt_noreq_current), nothing queued and no input held
 * by the shim for anyone (nothing to hand over first).  What
 * epoll_common would do without its rounds: one event of a descriptor
 * that is no traced channel (seen: an eventfd, a timer, a file, an epoll
 * set), the thread still working for no request, is handed over with no
 * record and costs only this; anything else goes to epoll_peek_rest or
 * epoll_peek_log, which do what ep_fetch and epoll_common would.
 */
static inline __attribute__((always_inline)) int
epoll_peek(int kind, struct bt_epset *es, int epfd,
	   struct epoll_event *events, int max, const sigset_t *sig)
{
	uint64_t seq0 = 0;
	uintptr_t w;
	int r, fd, want = 1, solo = 0;

	bt_self.depth = 1;        /* bt_enter's count: it was 0 */
	bt_self.epoch++;
	/* ep_fetch: a batch when this thread may take one */
	if (max > 1 && bt_conf.epq && epq_take(es, 1, &solo)) {
		int room = BT_EPQ_CAP -
			   (int)__atomic_load_n(&es->qlen, __ATOMIC_ACQUIRE);
		want = max < BT_EPQ_CAP ? max : BT_EPQ_CAP;
		if (want > room + 1)
			want = room + 1;
		seq0 = __atomic_load_n(&es->pseq, __ATOMIC_SEQ_CST);
	}
	bt_wait_begin_top();
	r = ep_real_call(kind, epfd, events, want, 0, NULL, sig);
	bt_wait_end();
	if (unlikely(r != 1 || events[0].data.u64 == es->cookie))
		return epoll_peek_rest(kind, es, epfd, events, max, sig, r,
				       want, seq0, solo);
	/* one event, for the caller: nothing to queue */
	if (want > 1)
		epq_untake(es, solo);
	fd = epmap_lookup(es, events[0].data.u64);
	es->last_synth = 0;
	/* ready_noreq of a descriptor seen and no channel: no READY (its
	 * word read where bt_fd_get would, the place kept with the answer;
	 * a negative descriptor's is NONE) */
	w = __atomic_load_n(bt_self.epc_word, __ATOMIC_ACQUIRE);
	if (BT_FD_IS_CHAN(w) || w == BT_FD_NONE || w == BT_FD_OWN ||
	    unlikely(!peek_still_noreq()))
		epoll_peek_log(es, epfd, &events[0], 1, fd);
	return bt_leave_top(1);
}

/* The peeks' frames, out of line: the wrappers themselves need none,
 * whichever way they go. */
static __attribute__((noinline)) int
epoll_peek_wait(struct bt_epset *es, int epfd, struct epoll_event *ev,
		int max)
{
	return epoll_peek(EPK_WAIT, es, epfd, ev, max, NULL);
}

static __attribute__((noinline)) int
epoll_peek_pwait(struct bt_epset *es, int epfd, struct epoll_event *ev,
		 int max, const sigset_t *sig)
{
	return epoll_peek(EPK_PWAIT, es, epfd, ev, max, sig);
}

/* ES: epset_of(EPFD), looked up by the caller */
static int epoll_common(int kind, struct bt_epset *es, int epfd,
			struct epoll_event *events, int maxevents,
			int timeout_ms, const struct timespec *ts,
			const sigset_t *sig)
{
	uint64_t deadline = 0, now0 = 0;
	int infinite, zero, r, fd, woke;

	if (!bt_enter()) {
		r = ep_real(kind, epfd, events, maxevents, timeout_ms, ts, sig);
		bt_leave_pass();
		return r;
	}
	bt_self.epoch++;
	/* Paused: straight through, unless input is held (it is still
	 * reported: the application must not wait for bytes the shim has). */
	if (!es || maxevents < 1 ||
	    (bt_paused() && !__atomic_load_n(&bt_ready_count, __ATOMIC_ACQUIRE))) {
		if (bt_paused())
			bt_paused_call();
		/* events queued before the pause are still the program's */
		if (es && maxevents >= 1 && epq_pop(es, events, &fd)) {
			bt_leave();
			return 1;
		}
		r = ep_real(kind, epfd, events, maxevents, timeout_ms, ts, sig);
		if (es && r > 0)
			r = strip_cookie(es, events, r);
		bt_leave();
		return r;
	}
	if (kind == EPK_PWAIT2)
		infinite = ts == NULL;
	else
		infinite = timeout_ms < 0;
	/* a zero timeout: every round peeks, no deadline (no clock read) */
	zero = !infinite && (kind == EPK_PWAIT2
			     ? ts->tv_sec == 0 && ts->tv_nsec == 0
			     : timeout_ms == 0);
	if (!infinite && !zero) {
		uint64_t ns = kind == EPK_PWAIT2
			? (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec
			: (uint64_t)timeout_ms * 1000000ull;
		now0 = bt_now();
		deadline = now0 + ns;
	}

	if (!bt_conf.isolation) {
		for (;;) {
			r = ep_real(kind, epfd, events, maxevents, timeout_ms, ts, sig);
			if (r <= 0)
				break;
			r = strip_cookie(es, events, r);
			if (r > 0)
				break;
		}
		if (r == 0)
			log_ready(-1, 0, 0);
		for (int i = 0; i < r; i++) {
			fd = epmap_lookup(es, events[i].data.u64);
			log_ready(fd, epoll_to_poll(events[i].events), r);
		}
		bt_leave();
		return r;
	}

	for (;;) {
		int tmo = 0;
		struct timespec tts = { 0, 0 };

		/* Input held by the shim comes first, alternating with the
		 * kernel's events so neither starves. */
		if (!es->last_synth && epoll_synth(es, events, &fd)) {
			es->last_synth = 1;
			log_ready(fd, POLLIN, 1);
			bt_leave();
			return 1;
		}
		/* then the kernel's: those of the last batch first */
		if (epq_pop(es, events, &fd)) {
			ep_took_fd(es, epfd, &events[0], fd);
			r = 1;
			break;
		}
		if (zero) {
			tmo = 0;        /* tts is zero */
		} else if (!infinite) {
			/* the first round starts when the deadline was set */
			uint64_t now = now0 ? now0 : bt_now();
			now0 = 0;
			uint64_t left = deadline > now ? deadline - now : 0;
			tmo = (int)((left + 999999) / 1000000);
			if (kind == EPK_PWAIT2) {   /* (the others take tmo) */
				tts.tv_sec = (time_t)(left / 1000000000ull);
				tts.tv_nsec = (long)(left % 1000000000ull);
			}
		} else {
			tmo = -1;
		}
		if (es->last_synth) {
			/* only peek at the kernel if input is held */
			tmo = 0;
			tts.tv_sec = 0;
			tts.tv_nsec = 0;
		}
		if (tmo != 0) {
			bt_emit_idle();
			__atomic_add_fetch(&es->sleepers, 1, __ATOMIC_SEQ_CST);
			if (epoll_synth(es, events, &fd)) {
				__atomic_sub_fetch(&es->sleepers, 1, __ATOMIC_SEQ_CST);
				es->last_synth = 1;
				log_ready(fd, POLLIN, 1);
				r = 1;
				break;
			}
			/* events queued by another thread meanwhile: it
			 * wakes sleepers only, and this one is not asleep yet */
			if (epq_pop(es, events, &fd)) {
				__atomic_sub_fetch(&es->sleepers, 1, __ATOMIC_SEQ_CST);
				ep_took_fd(es, epfd, &events[0], fd);
				r = 1;
				break;
			}
		}
		r = ep_fetch(kind, es, epfd, events, maxevents, tmo,
			     kind == EPK_PWAIT2 ? (infinite && !es->last_synth ? NULL : &tts) : NULL,
			     sig, &woke);
		if (tmo != 0)
			__atomic_sub_fetch(&es->sleepers, 1, __ATOMIC_SEQ_CST);
		if (r < 0)
			break;
		if (woke) {
			es->last_synth = 0;
			continue;
		}
		if (r == 1) {
			ep_took(es, epfd, &events[0]);
			break;
		}
		/* nothing from the kernel */
		if (es->last_synth) {
			es->last_synth = 0;
			if (epoll_synth(es, events, &fd)) {
				es->last_synth = 1;
				log_ready(fd, POLLIN, 1);
				r = 1;
				break;
			}
			continue;     /* held input went away: wait for real */
		}
		log_ready(-1, 0, 0);
		break;
	}
	bt_leave();
	return r;
}

int bt_epoll_wait(int epfd, struct epoll_event *ev, int max, int tmo)
{
	struct bt_epset *es = epset_of(epfd);

	if (epoll_peek_ok(es, max, tmo))
		return epoll_peek_wait(es, epfd, ev, max);
	return epoll_common_wait(es, epfd, ev, max, tmo);
}

int bt_epoll_pwait(int epfd, struct epoll_event *ev, int max, int tmo,
		   const sigset_t *sig)
{
	struct bt_epset *es = epset_of(epfd);

	if (epoll_peek_ok(es, max, tmo))
		return epoll_peek_pwait(es, epfd, ev, max, sig);
	return epoll_common_pwait(es, epfd, ev, max, tmo, sig);
}

int bt_epoll_pwait2(int epfd, struct epoll_event *ev, int max,
		    const struct timespec *ts, const sigset_t *sig)
{
	return epoll_common(EPK_PWAIT2, epset_of(epfd), epfd, ev, max, 0, ts, sig);
}
