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
 */
typedef struct { int v; } bt_mutex_t;
BT_HIDDEN void bt_mutex_lock_slow(bt_mutex_t *m, int c);
BT_HIDDEN void bt_mutex_wake(bt_mutex_t *m);

static inline void bt_mutex_init(bt_mutex_t *m)
{
	__atomic_store_n(&m->v, 0, __ATOMIC_RELEASE);
}
static inline void bt_mutex_lock(bt_mutex_t *m)
{
	int c = 0;
	if (__builtin_expect(__atomic_compare_exchange_n(&m->v, &c, 1, 0,
			     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED), 1))
		return;
	bt_mutex_lock_slow(m, c);
}
static inline void bt_mutex_unlock(bt_mutex_t *m)
{
	if (__builtin_expect(__atomic_exchange_n(&m->v, 0, __ATOMIC_RELEASE) == 2, 0))
		bt_mutex_wake(m);
}

#endif /* BT_CORE_H */
