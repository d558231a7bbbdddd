/*
 * fdtab.h - the fd table and channel objects (fdtab.c).
 */
#ifndef BT_FDTAB_H
#define BT_FDTAB_H

#include "core.h"

/* ---- fd table and channels (fdtab.c, chan.c) -------------------------- */

#define BT_FD_NONE   ((uintptr_t)0)   /* never seen */
#define BT_FD_PLAIN  ((uintptr_t)1)   /* seen: nothing to trace (file, ...) */
#define BT_FD_OWN    ((uintptr_t)2)   /* the shim's own descriptor */
#define BT_FD_DARK   ((uintptr_t)3)   /* never announced, moved bytes while
					 tracing was paused: untraced until
					 closed */
/* Otherwise a pointer: a channel (64-byte aligned, low bit clear) or an
 * epoll set (struct bt_epset *, tagged with the low bit, see ready.c). */
#define BT_FD_IS_CHAN(v)  ((v) > 3 && !((v) & 1))
#define BT_FD_IS_EPSET(v) ((v) > 3 && ((v) & 1))

struct bt_epreg {                     /* one registration in an epoll set */
	int      epfd;
	uint32_t events;
	uint64_t data;
	uint8_t  armed;                   /* false after a ONESHOT report */
	uint8_t  told;                    /* held input reported here (ET):
					     not again until the app reads */
};

/* Registrations beyond a channel's first two (a socket in three or more
 * epoll sets: one set per thread, each watching the connection).  Chunks
 * are added, never freed: they stay with the channel object (type-stable,
 * reused) so a reader racing a change never touches freed memory. */
#define BT_EPREG_MORE 4
struct bt_epreg_more {
	struct bt_epreg r[BT_EPREG_MORE];
	struct bt_epreg_more *next;
};

struct bt_chan {
	bt_mutex_t mu;
	struct bt_chan *next_all;         /* every channel ever made */
	struct bt_chan *next_free;
	uint32_t gen;                     /* bumped on every reuse */
	struct bt_epreg_more *ep_more;    /* registrations beyond ep[]: kept
					     (emptied) across reuse */
	/* ---- everything from here on is zeroed for a new channel ---- */
	int      refs;                    /* fds referring to it */

	uint8_t  kind;                    /* enum bt_chan_kind */
	uint8_t  role;                    /* enum bt_chan_role */
	uint8_t  pp_role;                 /* enum bt_role */
	uint8_t  transport;               /* enum bt_transport */
	uint8_t  announced;               /* BT_EV_CHAN written */
	uint8_t  sniff;                   /* processor not chosen yet */
	uint8_t  lost;                    /* processor gave up */
	uint8_t  eof[2];
	uint8_t  ended;                   /* this call handed over a message end */
	uint8_t  dark;                    /* untraced until closed (pausing) */
	uint8_t  tls;                     /* bound to a TLS library's session
					     (tls.c): framed on its plaintext,
					     the ciphertext passes through */
	uint8_t  tls_seen;                /* a TLS record was sniffed on it */
	const void *tls_ssl;              /* the session that bound it */
	uint64_t tls_off[2];              /* off[] when it was bound */

	const struct bt_proto_ops *pp;
	void    *pps;                     /* processor state */

	uint64_t off[2];                  /* stream offsets, per direction */
	uint64_t unseen;                  /* bytes written by nested calls (a
					     signal handler inside the shim),
					     added atomically, folded into
					     off[OUT] by the next call */
	uint64_t msg_start[2];            /* offset of the open message */
	uint8_t  msg_open[2];             /* bytes of a message moved */
	uint8_t  msg_begun[2];            /* MSG_BEGIN written for it */

	/* isolation buffer: bytes read from the kernel, not yet handed over */
	uint8_t *buf;
	uint32_t cap, rd, wr;
	uint32_t scanned;                 /* from rd: bytes seen by the processor */
	uint8_t  pending;                 /* a message ends inside the buffer */
	uint32_t boundary;                /* ... this many bytes after rd */
	struct bt_msg pmsg;               /* that message */

	/* EAGAIN-once after a boundary on a non-blocking fd */
	uint8_t  nb;                      /* 0 unknown, 1 blocking, 2 O_NONBLOCK */
	uint8_t  kfull;                   /* last real read filled the request:
					     the kernel may hold more */
	uint8_t  eagain_armed;
	uint64_t eagain_epoch;
	pid_t    eagain_tid;
	uint8_t  owed;                    /* readiness owed (ET, spurious ok) */
	uint8_t  et_told;                 /* held input reported to an ET set
					     (that registration's told): not
					     again there until the app reads */
	uint8_t  in_ready_list;

	struct bt_epreg ep[2];            /* epoll registrations (then ep_more) */
};

/* Is CH dark or bound to a TLS session?  One 16-bit load of the two
 * adjacent flags, on every traced read and write. */
_Static_assert(__builtin_offsetof(struct bt_chan, tls) ==
	       __builtin_offsetof(struct bt_chan, dark) + 1,
	       "dark and tls adjacent");
static inline int bt_chan_dark_or_tls(const struct bt_chan *ch)
{
	uint16_t v;

	__builtin_memcpy(&v, &ch->dark, sizeof v);
	return v != 0;
}

/* Walking a channel's epoll registrations: ep[0], ep[1], then the chunks
 * of ep_more (BT_EPREG_EACH).  Free slots (epfd < 0) are included. */
struct bt_epiter {
	struct bt_epreg *r, *end;
	struct bt_epreg_more *next;
};

static inline struct bt_epreg *bt_epreg_first(const struct bt_chan *ch,
					      struct bt_epiter *it)
{
	it->r = (struct bt_epreg *)ch->ep;
	it->end = it->r + 2;
	it->next = __atomic_load_n(&ch->ep_more, __ATOMIC_ACQUIRE);
	return it->r;
}

static inline struct bt_epreg *bt_epreg_next(struct bt_epiter *it)
{
	if (++it->r < it->end)
		return it->r;
	if (likely(!it->next))
		return NULL;
	it->r = it->next->r;
	it->end = it->r + BT_EPREG_MORE;
	it->next = __atomic_load_n(&it->next->next, __ATOMIC_ACQUIRE);
	return it->r;
}

#define BT_EPREG_EACH(ch, r, it) \
	for (struct bt_epreg *r = bt_epreg_first((ch), &(it)); r; \
	     r = bt_epreg_next(&(it)))

/* The table (fdtab.c): BT_FDTAB_L1 pointers to arrays of BT_FDTAB_L2
 * words, allocated on first use.  Descriptors beyond pass through. */
#define BT_FDTAB_L2_BITS 10
#define BT_FDTAB_L2 (1u << BT_FDTAB_L2_BITS)
#define BT_FDTAB_L1 1024u
#define BT_FDTAB_LIMIT (BT_FDTAB_L1 * BT_FDTAB_L2)
BT_HIDDEN extern uintptr_t *bt_fdtab[BT_FDTAB_L1];

/* Look up FD's table word (no lock): two loads, inlined on the hot paths.
 * See BT_FD_*; else a bt_chan * (or a tagged epoll set). */
static inline uintptr_t bt_fd_get(int fd)
{
	uintptr_t *l2;

	if (unlikely((unsigned)fd >= BT_FDTAB_LIMIT))
		return BT_FD_PLAIN;
	l2 = __atomic_load_n(&bt_fdtab[(unsigned)fd >> BT_FDTAB_L2_BITS],
			     __ATOMIC_ACQUIRE);
	if (!l2)
		return BT_FD_NONE;
	return __atomic_load_n(&l2[(unsigned)fd & (BT_FDTAB_L2 - 1)],
			       __ATOMIC_ACQUIRE);
}

/* Has the shim nothing to do with data on FD?  It was seen and is no
 * channel: a file, an eventfd, an epoll set, one of the shim's own.  (A
 * descriptor never seen is classified by the slow path.) */
static inline int bt_fd_passes(int fd)
{
	uintptr_t w = bt_fd_get(fd);
	return w != BT_FD_NONE && !BT_FD_IS_CHAN(w);
}
/* Set FD's word; the old channel (if any) loses a reference. */
BT_HIDDEN void bt_fd_set(int fd, uintptr_t v);
/* FD refers to CH from now on (takes a reference). */
BT_HIDDEN void bt_fd_set_chan(int fd, struct bt_chan *ch);
/* Forget FD (close): returns the channel it referred to, if any, whose
 * reference the caller must drop with bt_chan_put. */
BT_HIDDEN struct bt_chan *bt_fd_take(int fd);
/* FD's word; a descriptor never seen that is no socket or FIFO is marked
 * seen first (BT_FD_PLAIN, as bt_chan_of would), a socket or FIFO never
 * seen stays BT_FD_NONE (no channel is opened for it here). */
BT_HIDDEN uintptr_t bt_fd_seen(int fd);

/* Call CB for every fd in [LO, HI] the table knows something about. */
BT_HIDDEN void bt_fd_range(unsigned lo, unsigned hi,
			   void (*cb)(int fd, uintptr_t w, void *ctx), void *ctx);
/* A call moved bytes on FD while paused: its channel goes dark, or a
 * descriptor never seen becomes BT_FD_DARK. */
BT_HIDDEN void bt_fd_paused_io(int fd);

#endif /* BT_FDTAB_H */
