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

#endif /* BT_READY_H */
