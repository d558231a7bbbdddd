/*
 * mutex.c - the slow paths of the light mutex (core.h): contended lock
 * and wake-up, and the start and end of solo mode.
 */
#include "config.h"

#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
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

/* ---- solo mode (core.h) ----------------------------------------------- */

int bt_solo_state;
int bt_solo_held;
BT_TLS int bt_solo_owner;

static long membarrier_cmd(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0);
}

/*
 * After BT_SOLO_ENDING is stored: make the owner's CPU see it, and see
 * the owner's count of plain locks as it is.  membarrier(2) runs a full
 * barrier on every CPU that runs a thread of the process, which is what
 * the owner's path leaves out.  Registered by the owner when solo began
 * (a forked child's owner registers again); should that not hold (a
 * seccomp filter added since), the count is read again after a
 * millisecond, by which time the owner's stores have left its CPU's
 * store buffer.  Returns 0 when the barrier ran.
 */
static int solo_barrier(void)
{
	if (membarrier_cmd(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
		return 0;
	if (membarrier_cmd(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
	    membarrier_cmd(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
		return 0;
	return -1;
}

static void solo_wait_unheld(int fenced)
{
	struct timespec ms = { 0, 1000000 };

	for (;;) {
		while (__atomic_load_n(&bt_solo_held, __ATOMIC_ACQUIRE))
			sched_yield();
		if (fenced)
			return;
		nanosleep(&ms, NULL);
		if (!__atomic_load_n(&bt_solo_held, __ATOMIC_ACQUIRE))
			return;
	}
}

/*
 * The first lock of a thread that does not own the process (the
 * caller checked that solo mode is not over).  The first such lock of
 * the process makes its thread the owner; any later thread ends solo
 * mode, each for itself: it stores BT_SOLO_ENDING, sends the barrier,
 * waits until the owner holds no plain lock, and stores BT_SOLO_DONE, so
 * the threads that come after need none of it.  errno is kept.
 */
void bt_solo_first(void)
{
	int e = errno, s = BT_SOLO_UNSET;

	if (__atomic_compare_exchange_n(&bt_solo_state, &s, BT_SOLO_WAIT, 0,
					__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
		/* (set first: a signal handler's lock on this thread
		 * meanwhile takes the atomic path, not the wait below) */
		bt_solo_owner = 1;
		s = membarrier_cmd(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0
			? BT_SOLO_YES : BT_SOLO_DONE;
		__atomic_store_n(&bt_solo_state, s, __ATOMIC_SEQ_CST);
		errno = e;
		return;
	}
	while (s == BT_SOLO_WAIT) {
		sched_yield();
		s = __atomic_load_n(&bt_solo_state, __ATOMIC_SEQ_CST);
	}
	if (s == BT_SOLO_YES || s == BT_SOLO_ENDING) {
		__atomic_store_n(&bt_solo_state, BT_SOLO_ENDING,
				 __ATOMIC_SEQ_CST);
		solo_wait_unheld(solo_barrier() == 0);
		__atomic_store_n(&bt_solo_state, BT_SOLO_DONE,
				 __ATOMIC_SEQ_CST);
	}
	errno = e;
}

/* The child of a fork has one thread: solo mode starts again, owned by
 * the first thread to lock (the child's locks are initialised afresh). */
void bt_solo_atfork_child(void)
{
	bt_solo_held = 0;
	bt_solo_owner = 0;
	__atomic_store_n(&bt_solo_state, BT_SOLO_UNSET, __ATOMIC_SEQ_CST);
}
