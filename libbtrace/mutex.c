/*
 * mutex.c - the slow paths of the light mutex (core.h): contended lock
 * and wake-up.
 */
#include "config.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bt.h"

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
