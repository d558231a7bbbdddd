/*
 * emit.c - getting events out of the traced process (btrace/ring.h):
 * writing records, thread and process life.  The chunks and slots are in
 * ring.c, the bp-logd link in link.c, the spool in spool.c, the shim's own
 * descriptors in own.c (logpath.h).
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
 * count (DROP, reason paused) and READY -1 (chan.c has the dark-channel
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
#include "logpath.h"

pthread_key_t bt_emit_thread_key;
int bt_emit_thread_key_ok;

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
		if (!bt_link_ensure()) {
			if (bt_spool_drain(s->chunk, s->idx) < 0)
				return -1;
			continue;
		}
		uint32_t d = __atomic_load_n(&s->sh->drained, __ATOMIC_ACQUIRE);
		s->sh->kicked = 1;
		bt_link_kick(s);
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

/* Slot S is past half full (FILL bytes): kick bp-logd if it is owed one
 * (out of line: the commit of a record tests one thing). */
static __attribute__((noinline)) void slot_kick(struct bt_slot *s,
						uint64_t fill)
{
	uint32_t k = s->sh->kicked;

	if (k == 0 || (fill > s->size / 4 * 3 && k == 1)) {
		if (bt_link_ensure()) {
			s->sh->kicked = k + 1;
			bt_link_kick(s);
		} else {
			bt_spool_drain(s->chunk, s->idx);
		}
	}
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
	if (unlikely(fill > s->size / 2))          /* past 3/4 is past 1/2 */
		slot_kick(s, fill);
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
	if (bt_self.noslot || bt_ring_slot_claim() < 0) {
		bt_self.noslot = 1;
		bt_self.dropped++;
		bt_self.drop_reason = BT_DR_NO_SLOT;
		if (__atomic_load_n(&bt_ring_nchunks, __ATOMIC_ACQUIRE))
			__atomic_add_fetch(&bt_ring_chunks[0].hdr->slot[0].lost, 1,
					   __ATOMIC_RELAXED);
		return -1;
	}
	bt_proc_first_records();
	return 0;
}

void bt_emit_claim(void)
{
	if (!bt_self.have_slot && !paused_flag())
		claim();
}

void bt_emit_rec_event(const struct bt_msg_rec *m, struct bt_event *ev)
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
 * channel goes dark, chan.c), its time, the thread's slot, and the records
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

void bt_emit_msg(struct bt_msg_rec *m, size_t vlen)
{
	struct bt_slot *s = &bt_self.slot;
	unsigned n = m->nattr > BT_EV_MAX_ATTR ? BT_EV_MAX_ATTR : m->nattr;
	size_t bound = BT_EV_MSG_BOUND(n, vlen);  /* >= bt_ev_msg_bound(m) */

	if (unlikely(bound > 2048)) {
		/* long (or too long: the careful encoder cuts it, and a ring
		 * slot smaller than the record gets it cut, not dropped):
		 * the general path */
		struct bt_event ev;
		bt_emit_rec_event(m, &ev);
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

static inline __attribute__((always_inline)) void emit_ints(unsigned type,
		uint64_t ts, unsigned n, const uint64_t *v)
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

void bt_emit_ints(unsigned type, uint64_t ts, unsigned n, const uint64_t *v)
{
	emit_ints(type, ts, n, v);
}

void bt_emit_ints3(unsigned type, uint64_t ts, uint64_t a, uint64_t b,
		   uint64_t c)
{
	const uint64_t v[3] = { a, b, c };

	emit_ints(type, ts, 3, v);
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
		/* not recorded: the caller's channel goes dark (chan.c) */
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
	if (likely(__atomic_load_n(&bt_link_state, __ATOMIC_RELAXED) == LINK_UP)) {
		/* Undrained events while bp-logd should drain every 50 ms:
		 * look whether it is still there, at most 5 times a second. */
		uint64_t now = bt_now();
		if (now - __atomic_load_n(&last_check, __ATOMIC_RELAXED) < 200000000ull)
			return;
		__atomic_store_n(&last_check, now, __ATOMIC_RELAXED);
		if (pthread_mutex_trylock(&bt_link_mu) != 0)
			return;
		int alive = bt_link_alive();
		pthread_mutex_unlock(&bt_link_mu);
		if (alive)
			return;
	}
	if (bt_link_ensure() || !bt_idle_spool)
		return;
	bt_spool_drain(s->chunk, s->idx);
}

/* ---- lifecycle -------------------------------------------------------- */

static void thread_key_dtor(void *v)
{
	(void)v;
	bt_emit_thread_exit();
}

void bt_emit_start(void)
{
	if (!bt_emit_thread_key_ok)
		bt_emit_thread_key_ok = pthread_key_create(&bt_emit_thread_key, thread_key_dtor) == 0;
	pthread_mutex_lock(&bt_ring_mu);
	if (!bt_ring_nchunks)
		bt_ring_chunk_create();
	pthread_mutex_unlock(&bt_ring_mu);
	pthread_mutex_lock(&bt_link_mu);
	if (bt_link_state != LINK_UP)
		bt_link_connect();
	pthread_mutex_unlock(&bt_link_mu);
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
	if (__atomic_load_n(&bt_link_state, __ATOMIC_ACQUIRE) != LINK_UP)
		bt_spool_drain(bt_self.slot.chunk, bt_self.slot.idx);
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
	unsigned n = __atomic_load_n(&bt_ring_nchunks, __ATOMIC_ACQUIRE);

	/* The link must really be there: bp-logd may have died (and been
	 * restarted) without our noticing.  Reconnect at once if needed. */
	int linked = 0;
	pthread_mutex_lock(&bt_link_mu);
	if (!bt_link_alive())
		bt_link_connect();
	if (bt_link_state == LINK_UP) {
		struct bt_lm_hdr bye = { BT_LM_BYE, sizeof bye, BT_RING_VERSION };
		/* a chunk whose CHUNK found the socket full goes now: else
		 * bp-logd never has it, and its records were lost with
		 * nothing counting them (tests/integ/chunk-late.sh) */
		unsigned unsent = bt_link_register_unsent();
		if (!final || bt_link_send(&bye, sizeof bye, -1) == 0) {
			pthread_mutex_unlock(&bt_link_mu);
			if (!unsent)
				return;
			linked = 1;      /* spool only what bp-logd lacks */
		} else {
			bt_link_drop();
		}
	}
	if (!linked)
		pthread_mutex_unlock(&bt_link_mu);
	for (unsigned k = 0; k < n; k++)
		for (unsigned i = 0; !(linked && bt_ring_chunks[k].sent) &&
				     i < bt_ring_chunks[k].nslots; i++)
			if (bt_ring_chunks[k].hdr->slot[i].head != bt_ring_chunks[k].hdr->slot[i].tail)
				bt_spool_drain(&bt_ring_chunks[k], i);
}

void bt_emit_atfork_prepare(void)
{
	pthread_mutex_lock(&bt_ring_mu);
	pthread_mutex_lock(&bt_link_mu);
	bt_mutex_lock(&bt_spool_mu);
	pthread_mutex_lock(&bt_own_mu);
}

void bt_emit_atfork_parent(void)
{
	pthread_mutex_unlock(&bt_own_mu);
	bt_mutex_unlock(&bt_spool_mu);
	pthread_mutex_unlock(&bt_link_mu);
	pthread_mutex_unlock(&bt_ring_mu);
}

/* The child owns nothing of the parent's rings: unmap, close, start over. */
void bt_emit_atfork_child(void)
{
	pthread_mutex_init(&bt_ring_mu, NULL);
	pthread_mutex_init(&bt_link_mu, NULL);
	bt_mutex_init(&bt_spool_mu);
	pthread_mutex_init(&bt_own_mu, NULL);
	bt_pause_word = &bt_ring_no_pause;       /* until the child has its chunk 0 */
	if (bt_ring_nchunks && bt_ring_chunks[0].hdr)
		bt_link_atfork_child(bt_ring_chunks[0].hdr->flags,
				     bt_ring_chunks[0].hdr->census_socks);
	else
		bt_link_atfork_child(0, 0);
	for (unsigned k = 0; k < bt_ring_nchunks; k++) {
		bt_own_unregister(&bt_ring_chunks[k].memfd);
		bt_fd_set(bt_ring_chunks[k].memfd, BT_FD_NONE);
		REAL(close)(bt_ring_chunks[k].memfd);
		munmap(bt_ring_chunks[k].hdr, bt_ring_chunks[k].map_size);
		memset(&bt_ring_chunks[k], 0, sizeof bt_ring_chunks[k]);
	}
	bt_ring_nchunks = 0;
	if (bt_spool_fd >= 0) {
		bt_own_unregister(&bt_spool_fd);
		bt_fd_set(bt_spool_fd, BT_FD_NONE);
		REAL(close)(bt_spool_fd);
		bt_spool_fd = -1;
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
 * bt_emit_test_events - decode the calling thread's undrained records,
 * calling CB for each; CONSUME marks them drained (as bp-logd would).  For
 * the unit tests, which link the shim's core without LD_PRELOAD and without
 * logd.
 * Returns the number of records, or -1 if the thread has no slot.
 */
int bt_emit_test_events(void (*cb)(const struct bt_event *ev, void *ctx),
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
