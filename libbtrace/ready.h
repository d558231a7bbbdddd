/*
 * ready.h - poll/select/epoll bookkeeping (ready.c).
 */
#ifndef BT_READY_H
#define BT_READY_H

#include "fdtab.h"

/* ---- readiness (ready.c) --------------------------------------------- */

BT_HIDDEN extern int bt_ready_count;      /* channels with owed readiness */
BT_HIDDEN void bt_ready_add(struct bt_chan *ch);
BT_HIDDEN void bt_ready_del(struct bt_chan *ch);
/* FD was closed: forget its epoll registrations / epoll set. */
BT_HIDDEN void bt_ready_fd_closed(int fd, uintptr_t word);
BT_HIDDEN void bt_ready_atfork_child(void);
/* Epoll sets with events queued (epoll.c, "The readiness queue"). */
BT_HIDDEN extern int bt_epq_busy;
BT_HIDDEN void bt_epq_fds_gone_slow(int lo, int hi);
/* Descriptors LO..HI were closed or replaced (dup2): events of them
 * queued by any epoll set are dropped. */
static inline void bt_epq_fds_gone(int lo, int hi)
{
	if (__atomic_load_n(&bt_epq_busy, __ATOMIC_SEQ_CST))
		bt_epq_fds_gone_slow(lo, hi);
}
/* fork: the sets' locks held around it; the child's queues emptied. */
BT_HIDDEN void bt_epq_atfork_prepare(void);
BT_HIDDEN void bt_epq_atfork_parent(void);
BT_HIDDEN void bt_epq_atfork_child(void);

#endif /* BT_READY_H */
