/*
 * ring.c - the memfd chunks shared with bp-logd and their per-thread slots
 * (btrace/ring.h): creating chunks, claiming a slot.
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

struct bt_chunk bt_ring_chunks[BT_RING_MAX_CHUNKS];
const uint32_t bt_ring_no_pause;          /* before chunk 0 exists */
const volatile uint32_t *bt_pause_word = &bt_ring_no_pause;
unsigned bt_ring_nchunks;                 /* published with release */
pthread_mutex_t bt_ring_mu = PTHREAD_MUTEX_INITIALIZER;

/* ---- chunks and slots ------------------------------------------------ */

static uint32_t chunk_slots(unsigned index)
{
	uint32_t n = 8u << (index < 3 ? index : 3);
	return n > BT_RING_MAX_SLOTS ? BT_RING_MAX_SLOTS : n;
}

void bt_ring_chunk_msg(const struct bt_chunk *c, struct bt_lm_chunk *m)
{
	memset(m, 0, sizeof *m);
	m->h.type = BT_LM_CHUNK;
	m->h.len = sizeof *m;
	m->h.version = BT_RING_VERSION;
	m->chunk = c->index;
	m->nslots = c->nslots;
	m->slot_size = c->slot_size;
	m->map_size = c->map_size;
}

void bt_ring_chunk_register(struct bt_chunk *c)
{
	struct bt_lm_chunk m;

	bt_ring_chunk_msg(c, &m);
	c->sent = bt_link_send(&m, sizeof m, c->memfd) == 0;
}

/* The census count of this process image (a forked child inherits it
 * with the rest of memory and publishes it in its own chunk 0). */
static uint32_t census_socks;

void bt_census_sock(void)
{
	uint32_t n = __atomic_add_fetch(&census_socks, 1, __ATOMIC_SEQ_CST);
	struct bt_chunk_hdr *h;

	/* chunk 0 once it is published (its creation stores the count
	 * again after publishing it: an increment racing it is not lost);
	 * a plain store: bp-logd only asks whether it is still 0 */
	if (__atomic_load_n(&bt_ring_nchunks, __ATOMIC_SEQ_CST) &&
	    (h = __atomic_load_n(&bt_ring_chunks[0].hdr, __ATOMIC_ACQUIRE)))
		h->census_socks = n;
}

/* Create chunk number bt_ring_nchunks.  Called with bt_ring_mu held. */
struct bt_chunk *bt_ring_chunk_create(void)
{
	struct bt_chunk *c;
	unsigned index = bt_ring_nchunks;
	uint32_t nslots, size = bt_conf.slot_size;
	size_t map;
	void *base;
	int fd;

	if (index >= BT_RING_MAX_CHUNKS)
		return NULL;
	nslots = chunk_slots(index);
	map = BT_RING_PAGE + (size_t)nslots * size;
	fd = (int)syscall(SYS_memfd_create, "btrace-ring", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)map) < 0) {
		REAL(close)(fd);
		return NULL;
	}
	base = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		REAL(close)(fd);
		return NULL;
	}
	c = &bt_ring_chunks[index];
	memset(c, 0, sizeof *c);
	c->memfd = bt_own_fd_hide(fd);
	c->hdr = base;
	c->map_size = map;
	c->index = index;
	c->nslots = nslots;
	c->slot_size = size;
	c->hdr->magic = BT_RING_MAGIC;
	c->hdr->version = BT_RING_VERSION;
	c->hdr->ring_id = bt_proc.ring_id;
	c->hdr->pid = (uint32_t)bt_proc.pid;
	c->hdr->chunk = index;
	c->hdr->nslots = nslots;
	c->hdr->slot_size = size;
	if (index == 0) {
		c->hdr->census_socks = __atomic_load_n(&census_socks,
						       __ATOMIC_RELAXED);
		c->hdr->census_magic = BT_CENSUS_MAGIC;
	}
	/* paused as bp-logd said in its WELCOME (chunk 0), or as chunk 0 is */
	if (index == 0 ? (bt_link_logd_flags & BT_CF_PAUSED) :
	    (bt_ring_chunks[0].hdr && (bt_ring_chunks[0].hdr->flags & BT_CF_PAUSED)))
		c->hdr->flags = BT_CF_PAUSED;
	else
		c->hdr->flags = 0;
	bt_own_register(&c->memfd);
	if (index == 0)
		__atomic_store_n(&bt_pause_word, &c->hdr->flags, __ATOMIC_RELEASE);
	__atomic_store_n(&bt_ring_nchunks, index + 1, __ATOMIC_SEQ_CST);
	if (index == 0)
		c->hdr->census_socks = __atomic_load_n(&census_socks,
						       __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&bt_link_mu);
	/* a bt_link_connect since the store above registered it already */
	if (bt_link_state == LINK_UP && !c->sent)
		bt_ring_chunk_register(c);
	pthread_mutex_unlock(&bt_link_mu);
	return c;
}

static int slot_try_claim(struct bt_chunk *c, unsigned i)
{
	struct bt_slot_hdr *sh = &c->hdr->slot[i];
	uint32_t st = __atomic_load_n(&sh->state, __ATOMIC_ACQUIRE);

	if (st == BT_SLOT_EXITED &&
	    __atomic_load_n(&sh->tail, __ATOMIC_ACQUIRE) != sh->head)
		return 0;                 /* still holds undrained events */
	if (st != BT_SLOT_FREE && st != BT_SLOT_EXITED)
		return 0;
	return __atomic_compare_exchange_n(&sh->state, &st, BT_SLOT_ACTIVE, 0,
					   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

static void slot_bind(struct bt_chunk *c, unsigned i)
{
	struct bt_slot *s = &bt_self.slot;

	s->chunk = c;
	s->idx = i;
	s->sh = &c->hdr->slot[i];
	s->data = BT_SLOT_DATA(c->hdr, c->slot_size, i);
	s->size = c->slot_size;
	s->head = s->sh->head;
	s->prev_ts = 0;
	s->need_time = 1;
	s->sh->tid = (uint32_t)bt_proc_gettid();
	__atomic_add_fetch(&s->sh->gen, 1, __ATOMIC_RELEASE);
	bt_self.have_slot = 1;
	bt_self.noreq_mark = UINT64_MAX;   /* a mark in another slot says nothing */
	if (bt_emit_thread_key_ok)
		pthread_setspecific(bt_emit_thread_key, (void *)1);
}

/* Claim a free (or drained) slot of any chunk.  1 if bound. */
static int slot_scan(void)
{
	unsigned n = __atomic_load_n(&bt_ring_nchunks, __ATOMIC_ACQUIRE);

	for (unsigned k = 0; k < n; k++)
		for (unsigned i = 0; i < bt_ring_chunks[k].nslots; i++)
			if (slot_try_claim(&bt_ring_chunks[k], i)) {
				slot_bind(&bt_ring_chunks[k], i);
				return 1;
			}
	return 0;
}

/*
 * Claim a slot, adding chunks while there is none.  A chunk is published
 * before its creator claims in it, so another thread may take its slots
 * first: scan again rather than give up.  Fails only when no chunk can be
 * added (BT_RING_MAX_CHUNKS reached, memfd or mmap failed).
 */
int bt_ring_slot_claim(void)
{
	for (int round = 0; round < 2 * (int)BT_RING_MAX_CHUNKS; round++) {
		unsigned seen;

		if (slot_scan())
			return 0;
		seen = __atomic_load_n(&bt_ring_nchunks, __ATOMIC_ACQUIRE);
		pthread_mutex_lock(&bt_ring_mu);
		/* add a chunk unless another thread did since our scan */
		if (bt_ring_nchunks == seen && !bt_ring_chunk_create()) {
			pthread_mutex_unlock(&bt_ring_mu);
			return slot_scan() ? 0 : -1;
		}
		pthread_mutex_unlock(&bt_ring_mu);
	}
	return -1;
}
