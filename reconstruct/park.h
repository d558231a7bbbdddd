/*
 * park.h - the parked detector (park.c): which requests are parked in a
 * process, so that a request message it sends meanwhile is marked
 * ambiguous between them and the sender's request.  docs/reconstruct.md,
 * "Certainty".  Every function takes the record being applied (apply.h).
 */
#ifndef RC_PARK_H
#define RC_PARK_H

#include "apply.h"

/* The first request message on connection E (offset O) goes to request
 * REQ, not to the one whose fragment opened E: that one is parked now. */
void rc_park_connect_taken(struct ap *a, const struct rc_end *e,
			   uint64_t o, uint64_t req);

/* E's output is out: the request W that counted that writable event as
 * where its work goes on is parked if nothing else continues it. */
void rc_park_want_lost(struct ap *a, const struct rc_desig *w);

/* E's output is out (a WANT without out): the request that asked for it
 * may be parked now (rc_park_want_lost), and a request whose answer was
 * thought to wait in it (park_defer) is parked if still parkable. */
void rc_park_output_out(struct ap *a, struct rc_end *e);

/* A request message is about to be sent from this process: requests of
 * other threads that have gone back to wait (their next record, read
 * ahead, takes input) are parked from now. */
void rc_park_waiting(struct ap *a);
/* While the logs grow: would applying R's head ask a dry thread of its
 * process for its next record (merge.c waits for it first)? */
int rc_park_needs_ahead(struct rc_ctx *c, const struct rc_run *r);
/* Would EV, a thread's next record, take input in its fragment F (the
 * parked detector's look ahead: a thread gone back to wait)? */
int rc_park_takes_input(const struct rc_frag *f, const struct bt_event *ev);

/* Without event isolation, request SP read on E in one batch with the
 * thread's earlier request on the same connection: both are parked
 * 'ambiguous:batched'. */
void rc_park_batch(struct ap *a, const struct rc_end *e,
		   struct rc_span *sp);

/* The thread's fragment ends: remember its request's server span if it
 * may be left parked. */
void rc_park_check(struct ap *a);

/* After a record: park the candidate the thread left if it now works for
 * another request (or ALWAYS: the thread ended); a thread that works for
 * a parked request un-parks it. */
void rc_park_resolve(struct ap *a, int always);

#endif /* RC_PARK_H */
