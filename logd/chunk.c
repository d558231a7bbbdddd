/*
 * chunk.c - a tracer's chunk (btrace/ring.h) as bp-logd maps it.
 *
 * The memory belongs to another process that bp-logd does not trust, so:
 *  - everything is validated when the chunk arrives (sizes, header, that
 *    the fd is a memfd of exactly the announced size);
 *  - nslots and slot_size are kept from that moment and never re-read;
 *  - the tail is bp-logd's own copy (read once, on registration): the peer
 *    cannot make it drain bytes twice or skip bytes;
 *  - a slot's bytes are copied into private memory before they are
 *    checked and written, so the peer cannot change them after the check;
 *  - every access runs under a SIGBUS guard: a peer that shrinks its memfd
 *    turns our next access into -EFAULT (the peer is dropped) instead of a
 *    crash of the daemon.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "logd.h"

static sigjmp_buf shm_jmp;
static volatile sig_atomic_t shm_armed;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	if (shm_armed) {
		shm_armed = 0;
		siglongjmp(shm_jmp, 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

void chunk_guard_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigbus;
	/* NODEFER: we leave the handler by siglongjmp without restoring the
	 * mask (sigsetjmp(.., 0) saves no mask: no system call per drain). */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

/* Guarded region: the body must only return through SHM_END/fault path. */
#define SHM_BEGIN()                                                     \
	do {                                                            \
		if (sigsetjmp(shm_jmp, 0) != 0)                         \
			return -EFAULT;                                 \
		shm_armed = 1;                                          \
		__asm__ __volatile__("" ::: "memory");                  \
	} while (0)
#define SHM_END()                                                       \
	do {                                                            \
		__asm__ __volatile__("" ::: "memory");                  \
		shm_armed = 0;                                          \
	} while (0)

static struct bt_chunk_hdr *hdr_of(struct chunk *c)
{
	return (struct bt_chunk_hdr *)(void *)c->base;
}

static int check_header(struct chunk *c, uint64_t ring_id, uint32_t pid,
			char *why, size_t wl)
{
	struct bt_chunk_hdr *h = hdr_of(c);
	struct bt_chunk_hdr copy;

	SHM_BEGIN();
	memcpy(&copy, h, offsetof(struct bt_chunk_hdr, slot));
	for (unsigned i = 0; i < c->nslots; i++)
		c->tail[i] = h->slot[i].tail;
	SHM_END();
	if (copy.magic != BT_RING_MAGIC || copy.version != BT_RING_VERSION) {
		snprintf(why, wl, "chunk header has magic %#x version %u, expected %#x version %u",
			 copy.magic, copy.version, BT_RING_MAGIC, BT_RING_VERSION);
		return -EPROTO;
	}
	if (copy.ring_id != ring_id || copy.pid != pid) {
		snprintf(why, wl, "chunk header names ring %llx pid %u, but the peer said ring %llx pid %u",
			 (unsigned long long)copy.ring_id, copy.pid,
			 (unsigned long long)ring_id, pid);
		return -EPROTO;
	}
	if (copy.chunk != c->idx || copy.nslots != c->nslots ||
	    copy.slot_size != c->slot_size) {
		snprintf(why, wl, "chunk header (chunk %u, %u slots of %u) disagrees with the message (chunk %u, %u slots of %u)",
			 copy.chunk, copy.nslots, copy.slot_size, c->idx,
			 c->nslots, c->slot_size);
		return -EPROTO;
	}
	return 0;
}

int chunk_map(int fd, const struct bt_lm_chunk *m, uint64_t ring_id,
	      uint32_t pid, struct chunk **out, char *why, size_t wl)
{
	struct chunk *c;
	struct stat st;
	uint64_t want;
	void *p;
	int r;

	if (m->chunk >= BT_RING_MAX_CHUNKS) {
		snprintf(why, wl, "chunk index %u out of range (max %u)",
			 m->chunk, BT_RING_MAX_CHUNKS - 1);
		return -EPROTO;
	}
	if (m->nslots == 0 || m->nslots > BT_RING_MAX_SLOTS) {
		snprintf(why, wl, "chunk %u: %u slots (1..%u allowed)",
			 m->chunk, m->nslots, BT_RING_MAX_SLOTS);
		return -EPROTO;
	}
	if (m->slot_size < BT_RING_MIN_SLOT || m->slot_size > BT_RING_MAX_SLOT ||
	    (m->slot_size & (m->slot_size - 1))) {
		snprintf(why, wl, "chunk %u: slot size %u (must be a power of two in %u..%u)",
			 m->chunk, m->slot_size, BT_RING_MIN_SLOT,
			 BT_RING_MAX_SLOT);
		return -EPROTO;
	}
	want = BT_RING_PAGE + (uint64_t)m->nslots * m->slot_size;
	if (m->map_size != want) {
		snprintf(why, wl, "chunk %u: map size %llu, expected %llu",
			 m->chunk, (unsigned long long)m->map_size,
			 (unsigned long long)want);
		return -EPROTO;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(why, wl, "chunk %u: fstat: %s", m->chunk,
			 strerror(errno));
		return -errno;
	}
	if (!S_ISREG(st.st_mode) || fcntl(fd, F_GET_SEALS) < 0) {
		snprintf(why, wl, "chunk %u: the fd is not a memfd", m->chunk);
		return -EPROTO;
	}
	if ((uint64_t)st.st_size != want) {
		snprintf(why, wl, "chunk %u: memfd is %lld bytes, the message says %llu",
			 m->chunk, (long long)st.st_size,
			 (unsigned long long)want);
		return -EPROTO;
	}
	p = mmap(NULL, (size_t)want, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		r = -errno;
		snprintf(why, wl, "chunk %u: mmap: %s", m->chunk,
			 strerror(errno));
		return r;
	}
	c = calloc(1, sizeof *c);
	if (!c) {
		munmap(p, (size_t)want);
		snprintf(why, wl, "out of memory");
		return -ENOMEM;
	}
	c->idx = m->chunk;
	c->nslots = m->nslots;
	c->slot_size = m->slot_size;
	c->map_size = (size_t)want;
	c->base = p;
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	r = check_header(c, ring_id, pid, why, wl);
	if (r == -EFAULT)
		snprintf(why, wl, "chunk %u: memfd shrank while being read",
			 m->chunk);
	if (r < 0) {
		chunk_unmap(c);
		return r;
	}
	*out = c;
	return 0;
}

void chunk_unmap(struct chunk *c)
{
	if (!c)
		return;
	munmap(c->base, c->map_size);
	free(c);
}

long chunk_check_records(const uint8_t *buf, size_t len, size_t split)
{
	size_t pos = 0;

	while (pos < len) {
		uint64_t body;
		size_t avail = len - pos, lim = pos < split ? split : len;
		size_t hl;

		if (avail < 2)
			return (long)pos;
		hl = bt_get_varint(buf + pos + 1, avail - 1 < 3 ? avail - 1 : 3,
				   &body);
		if (!hl || body > BT_EV_MAX_BODY || 1 + hl + body > lim - pos)
			return (long)pos;
		pos += 1 + hl + (size_t)body;
	}
	return -1;
}

/* An adopted chunk's slot whose tracer moved the tail (its spool). */
static long drained_by_tracer(const struct chunk *c, unsigned i, char *why,
			      size_t wl)
{
	snprintf(why, wl, "chunk %u slot %u: its tracer drained it itself (its spool)",
		 c->idx, i);
	return -EAGAIN;
}

long chunk_read_slot(struct chunk *c, unsigned i, uint8_t *buf,
		     uint64_t *head, uint32_t *gen, char *why, size_t wl)
{
	struct bt_slot_hdr *sh = &hdr_of(c)->slot[i];
	const uint8_t *data = BT_SLOT_DATA(c->base, c->slot_size, i);
	uint64_t h, t = c->tail[i];
	size_t len, off, first;
	long bad;

	SHM_BEGIN();
	/* adopted: the tracer drained the slot itself (below) */
	if (c->adopted && __atomic_load_n(&sh->tail, __ATOMIC_ACQUIRE) != t) {
		SHM_END();
		return drained_by_tracer(c, i, why, wl);
	}
	h = __atomic_load_n(&sh->head, __ATOMIC_ACQUIRE);
	if (h == t) {
		SHM_END();
		return 0;
	}
	if (h < t || h - t > c->slot_size) {
		SHM_END();
		snprintf(why, wl, "chunk %u slot %u: head %llu, tail %llu: more than the slot's %u bytes",
			 c->idx, i, (unsigned long long)h,
			 (unsigned long long)t, c->slot_size);
		return -EPROTO;
	}
	len = (size_t)(h - t);
	off = (size_t)(t & (c->slot_size - 1));
	first = c->slot_size - off < len ? c->slot_size - off : len;
	memcpy(buf, data + off, first);
	if (first < len)
		memcpy(buf + first, data, len - first);
	*gen = sh->gen;
	/* An adopted chunk's tracer may be writing its spool from the slot
	 * (it does when it finds no bp-logd), and then writes over what it
	 * spooled: the copy holds only if the tail stayed where it was. */
	uint64_t now_t = c->adopted ?
		__atomic_load_n(&sh->tail, __ATOMIC_ACQUIRE) : t;
	SHM_END();
	if (now_t != t)
		return drained_by_tracer(c, i, why, wl);
	bad = chunk_check_records(buf, len, first);
	if (bad >= 0) {
		snprintf(why, wl, "chunk %u slot %u: malformed record at stream offset %llu",
			 c->idx, i, (unsigned long long)(t + (uint64_t)bad));
		return -EPROTO;
	}
	*head = h;
	return (long)len;
}

int chunk_ack(struct chunk *c, unsigned i, uint64_t head)
{
	struct bt_slot_hdr *sh = &hdr_of(c)->slot[i];
	uint64_t t = c->tail[i];

	c->tail[i] = head;
	SHM_BEGIN();
	/* adopted: only from where the copy began (the tracer's own spool
	 * may have gone further meanwhile: the bytes are then written twice,
	 * which readers drop by stream offset) */
	if (c->adopted)
		__atomic_compare_exchange_n(&sh->tail, &t, head, 0,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	else
		__atomic_store_n(&sh->tail, head, __ATOMIC_RELEASE);
	__atomic_store_n(&sh->kicked, 0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&sh->drained, 1, __ATOMIC_RELEASE);
	SHM_END();
	/* A shared futex: the waiter is another process (no FUTEX_PRIVATE). */
	syscall(SYS_futex, &sh->drained, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	return 0;
}

int chunk_set_key(struct chunk *c, uint64_t key)
{
	SHM_BEGIN();
	__atomic_store_n(&hdr_of(c)->logd_key, key, __ATOMIC_RELAXED);
	SHM_END();
	return 0;
}

int chunk_set_flags(struct chunk *c, uint32_t set, uint32_t clear)
{
	struct bt_chunk_hdr *h = hdr_of(c);

	SHM_BEGIN();
	uint32_t f = __atomic_load_n(&h->flags, __ATOMIC_RELAXED);
	__atomic_store_n(&h->flags, (f | set) & ~clear, __ATOMIC_RELEASE);
	SHM_END();
	return 0;
}

int chunk_stats(struct chunk *c, uint64_t *lost, uint64_t *pending)
{
	struct bt_chunk_hdr *h = hdr_of(c);
	uint64_t l = 0, p = 0;

	SHM_BEGIN();
	for (unsigned i = 0; i < c->nslots; i++) {
		uint64_t hd = __atomic_load_n(&h->slot[i].head, __ATOMIC_ACQUIRE);
		l += h->slot[i].lost;
		if (hd > c->tail[i])
			p += hd - c->tail[i];
	}
	SHM_END();
	*lost += l;
	*pending += p;
	return 0;
}

int chunk_census(struct chunk *c, uint32_t *socks)
{
	struct bt_chunk_hdr *h = hdr_of(c);
	uint32_t magic, n;

	SHM_BEGIN();
	magic = h->census_magic;
	n = h->census_socks;
	SHM_END();
	if (magic != BT_CENSUS_MAGIC)
		return -ENOENT;
	*socks = n;
	return 0;
}

int chunk_lost_list(struct chunk *c, char *buf, size_t len)
{
	struct bt_chunk_hdr *h = hdr_of(c);
	uint32_t lost[BT_RING_MAX_SLOTS];

	SHM_BEGIN();
	for (unsigned i = 0; i < c->nslots; i++)
		lost[i] = h->slot[i].lost;
	SHM_END();
	for (unsigned i = 0; i < c->nslots; i++) {
		size_t used = strlen(buf);
		if (lost[i] && used < len)
			snprintf(buf + used, len - used, " slot%u=%u",
				 c->idx * BT_RING_MAX_SLOTS + i, lost[i]);
	}
	return 0;
}
