/*
 * core.h - what every libbtrace module uses: system and event headers, the
 * visibility and TLS attributes, branch hints, the light mutex (fdtab.c).
 */
#ifndef BT_CORE_H
#define BT_CORE_H


#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "btrace/event.h"
#include "btrace/proto.h"
#include "btrace/ring.h"
#include "real.h"

#define BT_HIDDEN __attribute__((visibility("hidden")))
#define BT_TLS    __attribute__((tls_model("initial-exec"))) __thread
#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* ---- a light mutex ---------------------------------------------------- */

/*
 * The lock of a channel and of an epoll set, taken twice per traced call:
 * one atomic instruction each way when uncontended (pthread_mutex_lock and
 * unlock cost some 55 instructions more per round trip), a futex wait when
 * contended.  0 free, 1 locked, 2 locked with waiters.  Process-private;
 * a forked child re-initialises it (bt_chan_pool_atfork_child).
 *
 * One thread alone ("solo"): while the process has one thread that uses
 * the shim (most servers' processes: an nginx or php-fpm worker, a
 * PostgreSQL backend, a prefork child), nothing can contend for a lock,
 * and its two locked instructions (some 20-30 ns a traced call here) are
 * plain stores instead.  The first thread to take a lock owns the process
 * (bt_solo_owner); its locks then count in bt_solo_held, and hold only
 * while bt_solo_state is BT_SOLO_YES.  Any other thread's first lock ends
 * that for good (mutex.c, bt_solo_first): it says so, makes the owner's
 * CPU see it with membarrier(2) (an asymmetric fence: the owner's own
 * path has none), and waits until the owner holds no lock so taken; from
 * then on every lock is atomic.  A forked child starts again.
 */
typedef struct { int v; } bt_mutex_t;
BT_HIDDEN void bt_mutex_lock_slow(bt_mutex_t *m, int c);
BT_HIDDEN void bt_mutex_wake(bt_mutex_t *m);

enum { BT_SOLO_UNSET = 0,   /* no lock taken yet */
       BT_SOLO_WAIT,        /* its first taker is setting up */
       BT_SOLO_YES,         /* the owner's locks are plain stores */
       BT_SOLO_ENDING,      /* another thread came: it waits for the
			       owner's plain locks to go */
       BT_SOLO_DONE };      /* every lock atomic, for good */
BT_HIDDEN extern int bt_solo_state;
BT_HIDDEN extern int bt_solo_held;              /* the owner's plain locks */
BT_HIDDEN extern BT_TLS int bt_solo_owner;      /* this thread owns */
BT_HIDDEN void bt_solo_first(void);
BT_HIDDEN void bt_solo_atfork_child(void);

static inline void bt_mutex_init(bt_mutex_t *m)
{
	__atomic_store_n(&m->v, 0, __ATOMIC_RELEASE);
}
/* A thread's first touch of a word other threads may contend for: a
 * thread that is not the solo owner ends solo mode (or becomes the owner
 * when none is yet). */
static inline void bt_solo_touch(void)
{
	if (unlikely(!bt_solo_owner) &&
	    unlikely(__atomic_load_n(&bt_solo_state, __ATOMIC_ACQUIRE) !=
		     BT_SOLO_DONE))
		bt_solo_first();        /* may make this thread the owner */
}

/*
 * Before the calling thread takes anything other threads may contend for
 * (a lock, the readiness queue's taking flag, epoll.c): 1 when it is the
 * solo owner and may take it with plain stores, counted in bt_solo_held
 * until bt_solo_leave (hold it only briefly and never across a call that
 * may block: another thread's first lock waits for the count to be 0);
 * 0 when it must use atomic instructions.  A thread that is not the
 * owner ends solo mode here (bt_solo_touch: bt_solo_first), so a
 * thread's first touch of any such word must come through this, or
 * through bt_solo_touch before an atomic instruction on it.
 */
static inline int bt_solo_enter(void)
{
	bt_solo_touch();
	if (likely(bt_solo_owner)) {
		__atomic_store_n(&bt_solo_held, bt_solo_held + 1,
				 __ATOMIC_RELAXED);
		/* no fence: a thread ending solo sends one (membarrier) */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (likely(__atomic_load_n(&bt_solo_state, __ATOMIC_RELAXED) ==
			   BT_SOLO_YES))
			return 1;
		__atomic_store_n(&bt_solo_held, bt_solo_held - 1,
				 __ATOMIC_RELEASE);
		if (!bt_solo_held)
			bt_solo_owner = 0;      /* solo is over: atomic now */
	}
	return 0;
}

/* The end of what a bt_solo_enter that returned 1 took (its plain
 * stores made before this).  Nothing counted any more (a signal handler
 * forked meanwhile, and this is the child, whose count starts again at
 * 0): nothing to end, as bt_mutex_unlock. */
static inline void bt_solo_leave(void)
{
	if (likely(bt_solo_owner) && likely(bt_solo_held)) {
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		__atomic_store_n(&bt_solo_held, bt_solo_held - 1,
				 __ATOMIC_RELEASE);
	}
}

static inline void bt_mutex_lock(bt_mutex_t *m)
{
	int c = 0;
	if (likely(bt_solo_enter())) {
		__atomic_store_n(&m->v, 1, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		return;
	}
	if (__builtin_expect(__atomic_compare_exchange_n(&m->v, &c, 1, 0,
			     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED), 1))
		return;
	bt_mutex_lock_slow(m, c);
}
static inline void bt_mutex_unlock(bt_mutex_t *m)
{
	/* While the owner holds a plain lock no other thread takes any
	 * (bt_solo_first waits for bt_solo_held to be 0): each of its
	 * unlocks meanwhile is a plain store, whichever way it locked. */
	if (likely(bt_solo_owner) && likely(bt_solo_held)) {
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		__atomic_store_n(&m->v, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&bt_solo_held, bt_solo_held - 1,
				 __ATOMIC_RELEASE);
		return;
	}
	if (__builtin_expect(__atomic_exchange_n(&m->v, 0, __ATOMIC_RELEASE) == 2, 0))
		bt_mutex_wake(m);
}

#endif /* BT_CORE_H */
