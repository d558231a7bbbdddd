/*
 * emit.h - records into the per-thread rings shared with bp-logd, the logd
 * link, spooling, pausing (emit.c) and the shim's own descriptors (own.c).
 */
#ifndef BT_EMIT_H
#define BT_EMIT_H

#include "proc.h"

/* ---- events (emit.c) ------------------------------------------------- */

/* Record EV in this thread's ring (EV->ts filled if 0).  Never blocks
 * longer than bounded waits; a record that cannot be written is counted
 * and reported by a later BT_EV_DROP. */
BT_HIDDEN void bt_emit(struct bt_event *ev);
/* Record a record of integer fields only (READY, MSG_BEGIN, DATA, ...):
 * V holds its N fields in schema order as written (signed ones zigzagged,
 * see bt_ev_encode_ints); TS 0 means now.  Same bytes as bt_emit. */
BT_HIDDEN void bt_emit_ints(unsigned type, uint64_t ts, unsigned n,
			    const uint64_t *v);
/* bt_emit_ints of three fields A, B, C (READY, MSG_BEGIN): the encoder's
 * loop unrolled, the fields in registers. */
BT_HIDDEN void bt_emit_ints3(unsigned type, uint64_t ts, uint64_t a,
			     uint64_t b, uint64_t c);
/* Record a MSG from its fields (M->ts 0 means now); VLEN is the sum of
 * the lengths of its M->nattr attributes (its bound: BT_EV_MSG_BOUND).
 * Same bytes as bt_emit of the same MSG. */
BT_HIDDEN void bt_emit_msg(struct bt_msg_rec *m, size_t vlen);
/* Record an OPEN of FD (its result too) now: LEN bytes of PATH, LEN <=
 * BT_EV_MAX_STR.  Same bytes as bt_emit of the same OPEN. */
BT_HIDDEN void bt_emit_open(int fd, uint32_t flags, const char *path,
			    uint32_t len);
/* The same message as a struct bt_event (for the general encoder). */
BT_HIDDEN void bt_emit_rec_event(const struct bt_msg_rec *m,
				 struct bt_event *ev);
/* Claim this thread's ring slot now and write TIME, THREAD_START (and
 * PROC_START for a process's first thread). */
BT_HIDDEN void bt_emit_claim(void);
/*
 * Pausing (docs/security.md "Pausing"): bp-logd sets BT_CF_PAUSED in the
 * header of chunk 0, which bt_pause_word points at (at a zero word before
 * the first chunk and in a forked child until it has its own).  While it
 * is set the wrappers pass calls through and count them (bt_paused_call);
 * a channel that moves bytes, or loses a record, while paused becomes
 * dark: untraced until it is closed (bt_chan_go_dark).
 */
BT_HIDDEN extern const volatile uint32_t *bt_pause_word;
static inline int bt_paused(void)
{
	return unlikely(*bt_pause_word & BT_CF_PAUSED);
}
/* A call passed through untraced because of a pause.  The thread's first
 * record after the resume reports the count (DROP, reason paused) and says
 * that the thread's work belongs to no request (READY -1). */
static inline void bt_paused_call(void)
{
	bt_self.paused_calls++;
}
/*
 * The socket census (docs/logd.md, "Programs that cannot be traced"): a
 * socket, socketpair, accept(4) or connect call went through a wrapper, or
 * a wrapped call met a socket for the first time.  Counted in this process
 * and published in chunk 0's header, where bp-logd reads it: a process
 * whose count stays 0 while it holds sockets does its network I/O past
 * libc.  Called where a descriptor is made or classified, never per read
 * or write.  errno preserved.
 */
BT_HIDDEN void bt_census_sock(void);
/* Record EV even while paused (only CLOSE: the log's descriptors stay
 * true across a pause). */
BT_HIDDEN void bt_emit_always(struct bt_event *ev);
/* The fragment that follows works for no request (READY -1), unless that
 * is what this thread last wrote: a read from a channel that is not traced
 * (dark) starts work the log cannot attribute. */
BT_HIDDEN void bt_emit_unknown_input(void);
/*
 * Is this thread's last record a READY that began work for no request
 * (a timeout, a descriptor bp-reconstruct knows no channel end for, dark
 * input: docs/events.md "READY"), with nothing recorded or lost since?
 * Then another such READY would only begin another empty fragment for no
 * request, and it is not written (nor the clock read for it).
 */
static inline int bt_noreq_current(void)
{
	return bt_self.have_slot && bt_self.noreq_mark == bt_self.slot.head &&
	       !bt_self.dropped && !bt_self.paused_calls && !bt_paused();
}
/* The record just written, if any (the slot head moved from HEAD0), was
 * such a READY. */
static inline void bt_noreq_mark(uint64_t head0)
{
	if (bt_self.have_slot && bt_self.slot.head != head0)
		bt_self.noreq_mark = bt_self.slot.head;
}
/* Connect to bp-logd and register the ring (start-up; retried later). */
BT_HIDDEN void bt_emit_start(void);
/* About to block: without bp-logd, spool this thread's ring (unless
 * bt_idle_spool is 0: the unit tests read records from the ring). */
BT_HIDDEN void bt_emit_idle(void);
BT_HIDDEN extern int bt_idle_spool;
/* Drain every slot to bp-logd or the spool before exec/exit. */
BT_HIDDEN void bt_emit_flush(int final);
/* Thread ends: THREAD_EXIT and release the slot. */
BT_HIDDEN void bt_emit_thread_exit(void);
/* fork: prepare / parent / child hooks (locks, fresh ring in the child) */
BT_HIDDEN void bt_emit_atfork_prepare(void);
BT_HIDDEN void bt_emit_atfork_parent(void);
BT_HIDDEN void bt_emit_atfork_child(void);
/* Is FD one of the shim's own descriptors? */
BT_HIDDEN int bt_own_is_fd(int fd);
/* Move the shim's descriptor away from FD (the app wants that number). */
BT_HIDDEN void bt_own_fd_evict(int fd);
/* Duplicate FD to a high, close-on-exec number the app will not pick. */
BT_HIDDEN int bt_own_fd_hide(int fd);

/* Register (ADD 1) or unregister (0) an fd variable kept by another
 * module (ready.c, chan.c) as one of the shim's own descriptors. */
BT_HIDDEN void bt_own_var(int *var, int add);
/* The smallest descriptor of the shim in [FROM, TO], or -1. */
BT_HIDDEN int bt_own_next(unsigned from, unsigned to);
/*
 * Decode the calling thread's undrained records, calling CB for each;
 * CONSUME marks them drained (as bp-logd would).  For the unit tests,
 * which link the shim's core without LD_PRELOAD and without logd.
 * Returns the number of records, or -1 if the thread has no slot.
 */
BT_HIDDEN int bt_emit_test_events(void (*cb)(const struct bt_event *ev,
					      void *ctx),
				 void *ctx, int consume);

#endif /* BT_EMIT_H */
