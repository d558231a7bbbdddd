/*
 * fdtab.c - what every file descriptor of the process is, to the shim.
 *
 * A two-level array of atomic words indexed by fd number (1024 x 1024:
 * descriptors up to 2^20; above that everything passes through).  A word
 * is BT_FD_NONE (never seen), BT_FD_PLAIN (nothing to trace), BT_FD_OWN
 * (the shim's own), BT_FD_EPOLL, or a pointer to a channel.  Lookups take
 * no lock: the hot path of an untracked fd is two loads.
 *
 * Channel objects are type-stable: they are recycled through a free list,
 * never returned to malloc, so a stale pointer read by a racing thread
 * still points at a channel (callers re-check the table word under the
 * channel's mutex).  dup shares a channel (reference counted); fork copies
 * the table with the rest of memory.
 */
#include "config.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bt.h"

#define L2_BITS BT_FDTAB_L2_BITS
#define L2_SIZE BT_FDTAB_L2
#define L1_SIZE BT_FDTAB_L1
#define FD_LIMIT ((int)BT_FDTAB_LIMIT)

uintptr_t *bt_fdtab[BT_FDTAB_L1];

/* bt_mutex_t, contended: mark it "waiters" and sleep until it is free. */
void bt_mutex_lock_slow(bt_mutex_t *m, int c)
{
	if (c != 2)
		c = __atomic_exchange_n(&m->v, 2, __ATOMIC_ACQUIRE);
	while (c != 0) {
		syscall(SYS_futex, &m->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
		c = __atomic_exchange_n(&m->v, 2, __ATOMIC_ACQUIRE);
	}
}

void bt_mutex_wake(bt_mutex_t *m)
{
	syscall(SYS_futex, &m->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static struct bt_chan *all_chans;           /* every channel object */
static struct bt_chan *free_chans;
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;

static uintptr_t *slot_of(int fd)
{
	uintptr_t **p, *l2, *fresh;

	if ((unsigned)fd >= (unsigned)FD_LIMIT)
		return NULL;
	p = &bt_fdtab[fd >> L2_BITS];
	l2 = __atomic_load_n(p, __ATOMIC_ACQUIRE);
	if (l2)
		return &l2[fd & (L2_SIZE - 1)];
	fresh = calloc(L2_SIZE, sizeof *fresh);
	if (!fresh)
		return NULL;
	if (!__atomic_compare_exchange_n(p, &l2, fresh, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		free(fresh);
		return &l2[fd & (L2_SIZE - 1)];
	}
	return &fresh[fd & (L2_SIZE - 1)];
}

/* Exchange FD's word; returns the previous one. */
static uintptr_t fd_xchg(int fd, uintptr_t v)
{
	uintptr_t *s = slot_of(fd);
	if (!s)
		return BT_FD_PLAIN;
	return __atomic_exchange_n(s, v, __ATOMIC_ACQ_REL);
}

void bt_fd_set(int fd, uintptr_t v)
{
	uintptr_t old = fd_xchg(fd, v);
	if (BT_FD_IS_CHAN(old) && old != v)
		bt_chan_put((struct bt_chan *)old);
}

void bt_fd_set_chan(int fd, struct bt_chan *ch)
{
	bt_chan_get(ch);
	bt_fd_set(fd, (uintptr_t)ch);
}

struct bt_chan *bt_fd_take(int fd)
{
	uintptr_t old;
	if ((unsigned)fd >= (unsigned)FD_LIMIT)
		return NULL;
	if (bt_fd_get(fd) == BT_FD_NONE)
		return NULL;
	old = fd_xchg(fd, BT_FD_NONE);
	return BT_FD_IS_CHAN(old) ? (struct bt_chan *)old : NULL;
}

struct bt_chan *bt_chan_new(void)
{
	struct bt_chan *ch;

	pthread_mutex_lock(&pool_mu);
	ch = free_chans;
	if (ch) {
		free_chans = ch->next_free;
	} else {
		ch = aligned_alloc(64, (sizeof *ch + 63) & ~(size_t)63);
		if (ch) {
			memset(ch, 0, sizeof *ch);
			bt_mutex_init(&ch->mu);
			ch->next_all = all_chans;
			all_chans = ch;
		}
	}
	pthread_mutex_unlock(&pool_mu);
	if (!ch)
		return NULL;
	bt_mutex_lock(&ch->mu);
	ch->gen++;
	memset(&ch->refs, 0, sizeof *ch - offsetof(struct bt_chan, refs));
	ch->ep[0].epfd = ch->ep[1].epfd = -1;
	for (struct bt_epreg_more *m = ch->ep_more; m; m = m->next)
		for (int i = 0; i < BT_EPREG_MORE; i++)
			m->r[i].epfd = -1;
	bt_mutex_unlock(&ch->mu);
	return ch;
}

void bt_chan_get(struct bt_chan *ch)
{
	__atomic_add_fetch(&ch->refs, 1, __ATOMIC_RELAXED);
}

void bt_chan_put(struct bt_chan *ch)
{
	if (__atomic_sub_fetch(&ch->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	bt_mutex_lock(&ch->mu);
	if (ch->pp && ch->pps && ch->pp->fini)
		ch->pp->fini(ch->pps);
	free(ch->pps);
	ch->pps = NULL;
	ch->pp = NULL;
	free(ch->buf);
	ch->buf = NULL;
	ch->cap = ch->rd = ch->wr = 0;
	bt_mutex_unlock(&ch->mu);
	if (ch->in_ready_list)
		bt_ready_del(ch);
	pthread_mutex_lock(&pool_mu);
	ch->next_free = free_chans;
	free_chans = ch;
	pthread_mutex_unlock(&pool_mu);
}

void bt_fdtab_atfork_child(void)
{
	pthread_mutex_init(&pool_mu, NULL);
	for (struct bt_chan *ch = all_chans; ch; ch = ch->next_all)
		bt_mutex_init(&ch->mu);
}

struct bt_chan *bt_chan_of(int fd)
{
	uintptr_t v = bt_fd_get(fd);
	struct stat st;
	int e;

	if (likely(BT_FD_IS_CHAN(v)))
		return (struct bt_chan *)v;
	if (v != BT_FD_NONE || fd < 0)
		return NULL;
	/* Never seen: inherited, or made by libc where we could not see. */
	e = errno;
	if (fstat(fd, &st) < 0) {
		errno = e;
		return NULL;
	}
	errno = e;
	if (S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode)) {
		struct bt_chan *ch = bt_chan_open(fd, BT_CR_INHERITED, -1, NULL,
						  0, 0);
		return ch;
	}
	fd_xchg(fd, BT_FD_PLAIN);
	return NULL;
}

uintptr_t bt_fd_seen(int fd)
{
	uintptr_t v = bt_fd_get(fd);
	struct stat st;
	int e;

	if (v != BT_FD_NONE || fd < 0)
		return v;
	e = errno;
	if (fstat(fd, &st) < 0 || S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode)) {
		errno = e;
		return BT_FD_NONE;
	}
	errno = e;
	fd_xchg(fd, BT_FD_PLAIN);
	return bt_fd_get(fd);
}

/* Call CB for every fd in [LO, HI] the table knows something about. */
void bt_fd_range(unsigned lo, unsigned hi,
		 void (*cb)(int fd, uintptr_t w, void *ctx), void *ctx)
{
	if (hi >= (unsigned)FD_LIMIT)
		hi = (unsigned)FD_LIMIT - 1;
	for (unsigned f = lo; f <= hi;) {
		uintptr_t *l2 = __atomic_load_n(&bt_fdtab[f >> L2_BITS],
						 __ATOMIC_ACQUIRE);
		if (!l2) {
			f = ((f >> L2_BITS) + 1) << L2_BITS;
			continue;
		}
		uintptr_t w = __atomic_load_n(&l2[f & (L2_SIZE - 1)],
					      __ATOMIC_ACQUIRE);
		if (w != BT_FD_NONE && w != BT_FD_OWN)
			cb((int)f, w, ctx);
		f++;
	}
}

/* A call moved bytes on FD while paused: its channel goes dark (chan.c),
 * or a descriptor never seen becomes BT_FD_DARK. */
void bt_fd_paused_io(int fd)
{
	uintptr_t w = bt_fd_get(fd);

	if (BT_FD_IS_CHAN(w))
		bt_chan_go_dark((struct bt_chan *)w, fd);
	else if (w == BT_FD_NONE)
		bt_fd_set(fd, BT_FD_DARK);
}
