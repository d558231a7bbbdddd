/*
 * server.c - bp-logd's event loop: the listener, the drain timer, signals,
 * disk errors and control commands.
 *
 * Draining (btrace/ring.h): h = load_acquire(head); copy [tail, h) into a
 * private buffer; append it as one block to the segment; only when the
 * write succeeded: tail = h (release), kicked = 0, drained++ and a futex
 * wake.  Slots are drained on the timer (-i), on a KICK, and completely
 * when a peer's socket reaches EOF (its memory stays mapped until then:
 * whatever the process published before it died is written).
 *
 * Fairness: one timer pass drains at most DRAIN_BUDGET bytes; if more is
 * waiting it continues from a low-priority event, so packets of other
 * peers (KICKs, new connections) are served in between, and the peer that
 * was first moves to the end of the list.
 *
 * Disk errors: the first failing write is reported once (stderr and a
 * note), draining stops (tails stay where they are: the bytes wait in the
 * rings, the tracers wait or spool), and each timer tick retries one
 * write.  When it succeeds, draining resumes and the recovery is noted.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "logd.h"

#define DRAIN_BUDGET   (16u << 20)   /* bytes per drain pass */
#define ACCEPT_RETRY_S 1

long server_drain_slot(struct server *srv, struct peer *p, struct chunk *c,
		       unsigned i)
{
	struct bt_blk_header h;
	uint64_t head = 0;
	uint32_t gen = 0;
	char why[256];
	long n;
	int r;

	n = chunk_read_slot(c, i, srv->buf, &head, &gen, why, sizeof why);
	if (n == -EFAULT) {
		peer_drop(p, -EFAULT, "chunk %u: its memory shrank under bp-logd (memfd truncated)",
			  c->idx);
		return -EFAULT;
	}
	if (n == -EAGAIN) {
		/* an adopted ring whose tracer writes its spool: the bytes are
		 * in the spool, and what follows goes to bp-logd when it
		 * reconnects (not a drop: nothing is lost) */
		peer_leave_to_tracer(p, why);
		return -EPROTO;
	}
	if (n < 0) {
		peer_drop(p, (int)n, "%s", why);
		return -EPROTO;
	}
	if (n == 0)
		return 0;
	memset(&h, 0, sizeof h);
	h.len = (uint32_t)n;
	h.ring_id = p->ring_id;
	h.pid = p->pid;
	h.slot = (uint16_t)(c->idx * BT_RING_MAX_SLOTS + i);
	h.gen = (uint16_t)gen;
	h.stream_off = c->tail[i];
	r = store_append(srv->store, &h, srv->buf);
	if (r < 0) {
		server_disk_error(srv, -r);
		return r;
	}
	/* Test hook: die in the worst place, between the write and the
	 * acknowledgement (tests/logd/logd_restart.sh). */
	if (srv->crash_after && ++srv->blocks_written == srv->crash_after)
		raise(SIGKILL);
	if (chunk_ack(c, i, head) < 0) {
		peer_drop(p, -EFAULT, "chunk %u: its memory shrank under bp-logd (memfd truncated)",
			  c->idx);
		return -EFAULT;
	}
	p->bytes += (uint64_t)n;
	p->blocks++;
	return n;
}

/*
 * Drain P's slots, at most *BUDGET bytes (no limit when BUDGET is NULL).
 * Returns 0, 1 when P was freed, or -errno of a disk error.
 */
static int drain_peer(struct server *srv, struct peer *p, uint64_t *budget)
{
	for (unsigned k = 0; k < BT_RING_MAX_CHUNKS; k++) {
		struct chunk *c = p->chunk[k];
		if (!c)
			continue;
		for (unsigned i = 0; i < c->nslots; i++) {
			long n = server_drain_slot(srv, p, c, i);
			if (n == -EPROTO || n == -EFAULT)
				return 1;
			if (n < 0)
				return (int)n;
			if (budget) {
				if ((uint64_t)n >= *budget) {
					*budget = 0;
					return 0;
				}
				*budget -= (uint64_t)n;
			}
		}
	}
	return 0;
}

int server_drain_peer(struct server *srv, struct peer *p)
{
	return drain_peer(srv, p, NULL);
}

void server_disk_error(struct server *srv, int err)
{
	if (srv->disk_err)
		return;
	srv->disk_err = err;
	srv->disk_err_since = logd_now_mono();
	log_warn("cannot write %s: %s; keeping events in the tracers' rings and retrying every %u ms",
		 store_path(srv->store), strerror(err), srv->o->interval_ms);
	notes_add(&srv->notes, BT_LN_DISK_ERROR, srv->notes.pid, -err,
		  "%s: %s", store_path(srv->store), strerror(err));
}

/* A whole pass wrote everything it tried: the disk error is over. */
static void disk_recovered(struct server *srv)
{
	uint64_t ms = (logd_now_mono() - srv->disk_err_since) / 1000000u;

	log_warn("writing %s again after %llu ms", store_path(srv->store),
		 (unsigned long long)ms);
	srv->disk_err = 0;
	notes_add(&srv->notes, BT_LN_DISK_OK, srv->notes.pid, (int64_t)ms,
		  "disk writable again");
}

/*
 * One pass over every peer within the budget.  Returns 1 if work is left.
 * While the disk fails, every pass is a retry: the first failing write
 * ends it; a pass in which every write succeeded ends the error (a small
 * block that fits while big ones do not must not make it flap).
 */
static int drain_pass(struct server *srv)
{
	uint64_t budget = DRAIN_BUDGET;
	struct peer *p, *next;
	unsigned n = srv->npeers;
	int r;

	for (p = TAILQ_FIRST(&srv->peers); p && n; p = next, n--) {
		next = TAILQ_NEXT(p, entry);
		if (p->state != PEER_LIVE && p->state != PEER_CLOSING)
			continue;
		r = drain_peer(srv, p, &budget);
		if (r < 0)
			return 0;                /* disk error: retry next tick */
		if (r == 0 && p->state == PEER_CLOSING && peer_reap(p))
			continue;
		if (budget == 0) {
			if (r == 0) {    /* this one was served: to the end */
				TAILQ_REMOVE(&srv->peers, p, entry);
				TAILQ_INSERT_TAIL(&srv->peers, p, entry);
			}
			return 1;
		}
	}
	if (srv->disk_err)
		notes_time(&srv->notes);
	r = notes_flush(&srv->notes, srv->store);
	if (r < 0)
		server_disk_error(srv, -r);
	else if (srv->disk_err)
		disk_recovered(srv);
	return 0;
}

static void drain_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	(void)fd;
	(void)what;
	if (drain_pass(srv))
		event_active(srv->ev_more, EV_TIMEOUT, 0);
}

/* The drain timer: the lazy listener's queue first (its peers are
 * drained in the same pass when they are gone already). */
static void drain_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	server_accept_lazy(arg);
	drain_cb(fd, what, arg);
}

/* HELLOs whose chunk 0 has not come within WELCOME_WAIT_US (peer.c). */
static void welcome_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	peer_welcome_late(arg);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	(void)fd;
	(void)what;
	if (!srv->disk_err)
		notes_time(&srv->notes);
	census_tick(srv);
}

static void accept_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	(void)fd;
	(void)what;
	log_info("accepting connections again");
	event_add(srv->ev_listen, NULL);
}

/*
 * The listening socket is readable: accept one connection.  One per
 * wake-up, not until EAGAIN: the watch is level-triggered, so connections
 * still queued wake the loop again at once, and a lone one (a traced
 * process starting) costs no accept that finds the queue empty.
 */
static void accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct server *srv = arg;
	struct timeval tv = { ACCEPT_RETRY_S, 0 };
	int fd, e;

	(void)what;
	/* The forked children queued on the lazy listener first: often the
	 * one connecting now is the image one of them exec'd, and then the
	 * child's records are safe from here, not from the next tick (a
	 * bp-logd killed in between would lose them with its queue). */
	server_accept_lazy(srv);
	fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd >= 0) {
		peer_accept(srv, fd);
		return;
	}
	e = errno;
	if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
		/* Stop accepting until fds are free again (else the listener
		 * spins on a readable socket it cannot accept from). */
		log_warn("accept: %s: not accepting for %d s", strerror(e),
			 ACCEPT_RETRY_S);
		event_del(srv->ev_listen);
		evtimer_add(srv->ev_accept, &tv);
		return;
	}
	if (e != ECONNABORTED && e != EINTR && e != EAGAIN)
		log_warn("accept: %s", strerror(e));
}

/*
 * The lazy listener (docs/logd.md, "Forked children"): not watched; what
 * queued there is accepted here, on the drain timer, so that a forked
 * child that does not wait for its WELCOME costs no wake-up of its own.
 * Its HELLO and chunks are usually queued behind it, or, when it exec'd
 * or exited already, its end of file too: then it is drained at once.
 * Bounded per call (the rest waits for the next tick); out of descriptors,
 * the rest stays queued until descriptors are free.
 */
void server_accept_lazy(struct server *srv)
{
	for (unsigned n = 0; srv->lazy_fd >= 0 && n < 4096; n++) {
		int fd = accept4(srv->lazy_fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != EMFILE && errno != ENFILE)
				log_warn("accept (lazy): %s", strerror(errno));
			return;
		}
		srv->peers_lazy++;
		peer_accept(srv, fd);
	}
}

/* Stop: read what peers have queued, drain everything, flush, fsync. */
static void shutdown_now(struct server *srv, const char *why)
{
	struct peer *p, *next;
	int err = 0;

	if (srv->stopping)
		return;
	srv->stopping = 1;
	log_info("%s: draining and stopping", why);
	event_del(srv->ev_listen);
	server_accept_lazy(srv);
	for (p = TAILQ_FIRST(&srv->peers); p; p = next) {
		next = TAILQ_NEXT(p, entry);
		peer_read_pending(p);
	}
	for (p = TAILQ_FIRST(&srv->peers); p; p = next) {
		next = TAILQ_NEXT(p, entry);
		if (p->state != PEER_LIVE && p->state != PEER_CLOSING)
			continue;
		int r = server_drain_peer(srv, p);
		if (r < 0) {
			err = -r;
			break;
		}
		if (r == 0 && p->state == PEER_CLOSING)
			peer_reap(p);
	}
	notes_add(&srv->notes, BT_LN_STOP, srv->notes.pid,
		  (int64_t)store_bytes(srv->store), "%s", why);
	if (!err) {
		int r = notes_flush(&srv->notes, srv->store);
		if (r < 0)
			err = -r;
	}
	if (err) {
		uint64_t lost = 0, pending = 0;
		TAILQ_FOREACH(p, &srv->peers, entry) {
			for (unsigned k = 0; k < BT_RING_MAX_CHUNKS; k++)
				if (p->chunk[k])
					chunk_stats(p->chunk[k], &lost, &pending);
		}
		log_warn("stopping with %llu bytes still in tracers' rings: %s (they stay there for the next bp-logd)",
			 (unsigned long long)pending, strerror(err));
		srv->exit_code = 1;
	}
	event_base_loopexit(srv->base, NULL);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	int r;

	(void)what;
	if (sig == SIGHUP) {
		r = store_rotate(srv->store);
		if (r < 0)
			log_warn("SIGHUP: rotation failed: %s", strerror(-r));
		else
			notes_add(&srv->notes, BT_LN_ROTATE, srv->notes.pid, 0,
				  "%s", store_path(srv->store));
		return;
	}
	shutdown_now(srv, srv->ctl_stop ? "stop command" :
		     sig == SIGTERM ? "SIGTERM" : "SIGINT");
}

static void set_all_flags(struct server *srv, uint32_t set, uint32_t clear)
{
	struct peer *p, *next;

	srv->flags = (srv->flags | set) & ~clear;
	for (p = TAILQ_FIRST(&srv->peers); p; p = next) {
		next = TAILQ_NEXT(p, entry);
		for (unsigned k = 0; k < BT_RING_MAX_CHUNKS; k++) {
			if (p->chunk[k] &&
			    chunk_set_flags(p->chunk[k], set, clear) < 0) {
				peer_drop(p, -EFAULT, "chunk %u: its memory shrank under bp-logd (memfd truncated)",
					  k);
				break;
			}
		}
	}
}

#define APPEND(...) do { if (used < len) { int k_ = snprintf(text + used, len - used, __VA_ARGS__); if (k_ > 0) used += (size_t)k_; if (used > len) used = len; } } while (0)

static int status_text(struct server *srv, char *text, size_t len)
{
	struct peer *p;
	size_t used = 0;
	uint64_t tl = 0, tp = 0;

	unsigned ntr = 0;
	TAILQ_FOREACH(p, &srv->peers, entry)
		if (p->state == PEER_LIVE || p->state == PEER_CLOSING)
			ntr++;
	APPEND("bp-logd pid %u, %s, %u tracer(s) connected or draining\n",
	       srv->notes.pid,
	       (srv->flags & BT_CF_PAUSED) ? "paused" : "tracing", ntr);
	APPEND("segment %s (%llu bytes), %llu bytes written since start\n",
	       store_path(srv->store),
	       (unsigned long long)store_seg_size(srv->store),
	       (unsigned long long)store_bytes(srv->store));
	if (srv->disk_err)
		APPEND("disk error: %s (for %llu ms)\n", strerror(srv->disk_err),
		       (unsigned long long)((logd_now_mono() - srv->disk_err_since) / 1000000u));
	APPEND("peers: %llu connected since start, %llu dropped, %llu refused; %llu forked children without a wait\n",
	       (unsigned long long)srv->peers_seen,
	       (unsigned long long)srv->peers_dropped,
	       (unsigned long long)srv->peers_refused,
	       (unsigned long long)srv->peers_lazy);
	TAILQ_FOREACH(p, &srv->peers, entry) {
		uint64_t lost = 0, pending = 0;
		if (p->state != PEER_LIVE && p->state != PEER_CLOSING)
			continue;
		for (unsigned k = 0; k < BT_RING_MAX_CHUNKS; k++)
			if (p->chunk[k])
				chunk_stats(p->chunk[k], &lost, &pending);
		tl += lost;
		tp += pending;
		APPEND("  pid %u %s ring %llx %s: %u chunk(s), %llu bytes drained, %llu pending, %llu lost\n",
		       p->pid, p->exe, (unsigned long long)p->ring_id,
		       peer_state_name(p->state), p->nchunks,
		       (unsigned long long)p->bytes,
		       (unsigned long long)pending, (unsigned long long)lost);
	}
	APPEND("total: %llu bytes pending, %llu events lost by tracers\n",
	       (unsigned long long)tp, (unsigned long long)tl);
	return 0;
}

int server_control(struct server *srv, unsigned cmd, char *text, size_t len)
{
	size_t used = 0;
	int r;

	text[0] = 0;
	/* the forked children queued on the lazy listener first: a pause
	 * or resume reaches them now, and the status counts them */
	if (cmd == BT_CTL_PAUSE || cmd == BT_CTL_RESUME || cmd == BT_CTL_STATUS)
		server_accept_lazy(srv);
	switch (cmd) {
	case BT_CTL_PAUSE:
		set_all_flags(srv, BT_CF_PAUSED, 0);
		notes_add(&srv->notes, BT_LN_PAUSE, srv->notes.pid, 0, "paused");
		log_info("tracing paused");
		APPEND("paused (%u connection(s))\n", srv->npeers);
		return 0;
	case BT_CTL_RESUME:
		set_all_flags(srv, 0, BT_CF_PAUSED);
		notes_add(&srv->notes, BT_LN_RESUME, srv->notes.pid, 0, "resumed");
		log_info("tracing resumed");
		APPEND("resumed (%u connection(s))\n", srv->npeers);
		return 0;
	case BT_CTL_STATUS:
		return status_text(srv, text, len);
	case BT_CTL_ROTATE:
		notes_flush(&srv->notes, srv->store);
		r = store_rotate(srv->store);
		if (r < 0) {
			APPEND("rotation failed: %s\n", strerror(-r));
			return r;
		}
		notes_add(&srv->notes, BT_LN_ROTATE, srv->notes.pid, 0, "%s",
			  store_path(srv->store));
		APPEND("now writing %s\n", store_path(srv->store));
		return 0;
	case BT_CTL_STOP:
		APPEND("stopping: draining all peers\n");
		/* after the reply is sent: from the loop */
		srv->ctl_stop = 1;
		event_active(srv->ev_sig[0], EV_SIGNAL, 1);  /* ncalls 0 would run nothing */
		return 0;
	default:
		APPEND("unknown control command %u\n", cmd);
		return -EINVAL;
	}
}

int server_run(const struct logd_opts *o, int lfd, int lazy,
	       struct store *store)
{
	struct server *srv = calloc(1, sizeof *srv);
	static const int sigs[3] = { SIGTERM, SIGINT, SIGHUP };
	struct timeval iv = { o->interval_ms / 1000,
			      (o->interval_ms % 1000) * 1000 };
	struct timeval one = { 1, 0 };
	struct peer *p;
	int code;

	if (!srv)
		fatal("out of memory");
	srv->o = o;
	srv->store = store;
	srv->lazy_fd = lazy;
	srv->logdir = store_dir(store);
	const char *ca = getenv("BTRACE_LOGD_CRASH_AFTER");
	srv->crash_after = ca ? strtoull(ca, NULL, 10) : 0;
	TAILQ_INIT(&srv->peers);
	srv->buf = malloc(BT_RING_MAX_SLOT);
	srv->base = event_base_new();
	if (!srv->buf || !srv->base)
		fatal("cannot create the event loop (out of memory?)");
	event_base_priority_init(srv->base, 2);
	signal(SIGPIPE, SIG_IGN);
	chunk_guard_install();
	notes_init(&srv->notes);
	notes_add(&srv->notes, BT_LN_START, srv->notes.pid, 0, "%s",
		  store_dir(store));

	/* (LFD is non-blocking and close-on-exec: main.c made it so) */
	srv->ev_listen = event_new(srv->base, lfd, EV_READ | EV_PERSIST,
				   accept_cb, srv);
	if (!srv->ev_listen || event_add(srv->ev_listen, NULL) < 0)
		fatal("cannot listen on %s", o->sock_path);
	srv->ev_accept = evtimer_new(srv->base, accept_retry_cb, srv);
	srv->ev_drain = event_new(srv->base, -1, EV_PERSIST, drain_timer_cb, srv);
	srv->ev_more = event_new(srv->base, -1, 0, drain_cb, srv);
	srv->ev_tick = event_new(srv->base, -1, EV_PERSIST, tick_cb, srv);
	srv->ev_welcome = evtimer_new(srv->base, welcome_cb, srv);
	if (!srv->ev_accept || !srv->ev_drain || !srv->ev_more || !srv->ev_tick ||
	    !srv->ev_welcome)
		fatal("cannot create timers (out of memory?)");
	event_priority_set(srv->ev_more, 1);
	event_add(srv->ev_drain, &iv);
	event_add(srv->ev_tick, &one);
	for (int i = 0; i < 3; i++) {
		srv->ev_sig[i] = evsignal_new(srv->base, sigs[i], signal_cb, srv);
		if (!srv->ev_sig[i] || event_add(srv->ev_sig[i], NULL) < 0)
			fatal("cannot install the handler of signal %d", sigs[i]);
	}
	/* the rings a bp-logd killed on this socket left (adopt.c) */
	srv->key = adopt_key(o->sock_path);
	adopt_start(srv);
	/* Write the first block now: a disk that is full from the start is
	 * reported at once. */
	int r = notes_flush(&srv->notes, srv->store);
	if (r < 0)
		server_disk_error(srv, -r);

	event_base_dispatch(srv->base);

	code = srv->exit_code;
	adopt_stop(srv);
	while ((p = TAILQ_FIRST(&srv->peers)) != NULL)
		peer_free(p);
	event_free(srv->ev_listen);
	close(lfd);
	if (lazy >= 0)
		close(lazy);
	for (int i = 0; i < 3; i++)
		event_free(srv->ev_sig[i]);
	event_free(srv->ev_accept);
	event_free(srv->ev_drain);
	event_free(srv->ev_more);
	event_free(srv->ev_tick);
	event_free(srv->ev_welcome);
	event_base_free(srv->base);
	store_close(srv->store);
	free(srv->buf);
	free(srv);
	return code;
}
