/*
 * msg.h - the rules of messages and data (msg.c), called by model.c.
 */
#ifndef RC_MSG_H
#define RC_MSG_H

#include "apply.h"

/* Apply a MSG, MSG_BEGIN or DATA record (A->ev): its end and offset, the
 * spans and exchanges it opens or closes, its message row. */
void rc_msg_record(struct ap *a);

/* The queue a receive of the bytes at O on E reads from, or NULL if the
 * sender is untraced (or was given up on). */
struct rc_dirq *rc_msg_recv_q(struct ap *a, struct rc_end *e, uint64_t o);

/* How many offset units record EV covers on E (bytes, or messages). */
uint64_t rc_msg_units(const struct rc_end *e, const struct bt_event *ev);

#endif /* RC_MSG_H */
