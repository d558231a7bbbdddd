/*
 * fdtab.c - what every file descriptor of the process is, to the shim.
 *
 * A two-level array of atomic words indexed by fd number (1024 x 1024:
 * descriptors up to 2^20; above that everything passes through).  A word
 * is BT_FD_NONE (never seen), BT_FD_PLAIN (nothing to trace), BT_FD_OWN
 * (the shim's own), BT_FD_EPOLL, or a pointer to a channel.  Lookups take
 * no lock: the hot path of an untracked fd is two loads.
 *
 * The channel objects the words point at are chan.c's (type-stable,
 * recycled, never freed).  dup shares a channel (reference counted); fork
 * copies the table with the rest of memory.
 */
#include "config.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bt.h"

#define L2_BITS BT_FDTAB_L2_BITS
#define L2_SIZE BT_FDTAB_L2
#define L1_SIZE BT_FDTAB_L1
#define FD_LIMIT ((int)BT_FDTAB_LIMIT)

uintptr_t *bt_fdtab[BT_FDTAB_L1];


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
