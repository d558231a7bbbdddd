/*
 * merge.h - pass 2: walk every stream in causal order.
 *
 * The streams' head records are kept in a min-heap by provisional
 * Unix-epoch time.  The earliest head is applied unless the model says it
 * must wait (a receive before its send, a child before its parent's fork,
 * a thread before its creation); a waiting stream is parked on the key it
 * waits for and returns to the heap when the model wakes that key.  When
 * every remaining stream is parked (lost records, a cycle), the one with
 * the oldest head is released with a warning.
 *
 * Records are decoded lazily, one per stream at a time: memory is one
 * decoded record per stream, whatever the size of the log.
 */
#ifndef RC_MERGE_H
#define RC_MERGE_H

#include "rc.h"

/* Run pass 2 over every stream of C; 0 or -ENOMEM (rc_fail set). */
int  rc_merge_run(struct rc_ctx *c);
void rc_merge_free(struct rc_ctx *c);

/* The stream table moved (rc_input_more): OLD_STREAMS is its former
 * address.  Point the stubs at their streams and blocks again. */
void rc_merge_rebase(struct rc_ctx *c, uintptr_t old_streams);

/* bp-logd says the tracer of image (HOST, RING_ID, PID) is gone, its
 * ring drained (PEER_GONE): its streams end at their last record. */
void rc_merge_image_gone(struct rc_ctx *c, uint32_t host, uint64_t ring_id,
			 uint32_t pid);
/* bp-logd's PEER_UP for it: ADOPTED, a ring a starting bp-logd adopted
 * (its PEER_GONE then does not end the image). */
void rc_merge_image_up(struct rc_ctx *c, uint32_t host, uint64_t ring_id,
		       uint32_t pid, int adopted);

/* Return the streams parked on KEY to the heap (they check again). */
void rc_merge_wake(struct rc_ctx *c, uint64_t key);

#endif /* RC_MERGE_H */
