/*
 * model.h - the path rules (paper section 5.5, docs/reconstruct.md) applied
 * to records in causal order.
 *
 * The model keeps, per process, the fd -> channel-end table; per channel
 * end, the open exchanges (server spans awaiting our reply, client spans
 * awaiting theirs); per connection direction, the send records a traced
 * receiver has not consumed yet; per thread (stream), the designation and
 * the current fragment.  Requests exist only as their root span while it
 * is open.  Everything is freed as soon as the last fd, stream or open
 * exchange that needs it is gone, so memory follows the work in flight.
 */
#ifndef RC_MODEL_H
#define RC_MODEL_H

#include "rc.h"

int  rc_model_init(struct rc_ctx *c);
void rc_model_free(struct rc_ctx *c);

/*
 * rc_model_ready - may the head record of active stream S (S->ev) be
 * applied now?
 * Returns 1, or 0 with *KEY set to what it waits for: the parent's FORK,
 * EXEC, SPAWN or THREAD_CREATE record, or the send records of the peer
 * (woken through rc_merge_wake).  A receive whose sender can no longer
 * send returns 1 with S->released = RC_REL_GONE.
 */
int  rc_model_ready(struct rc_ctx *c, struct rc_run *s, uint64_t *key);
/*
 * rc_model_holds - while the logs grow (the watermark W), must the head
 * record of S wait?  Yes for a record that pass 1 gave a meaning which a
 * record not in the logs yet may change, less than rc_options.hold_ns
 * before W: a channel end whose other side no log has (its peer's
 * announcement may come: pair.c pairs with what comes later), a fork,
 * spawn, exec or thread creation without a child (the child's first
 * record follows it).  The merge pauses before it rather than decide
 * without what a merge at once would have known (scan.c, rc_scan_more
 * refuses if it comes even later).
 */
int  rc_model_holds(struct rc_ctx *c, struct rc_run *s, int64_t w);

/* Apply the head record of S.  S->released says it was let go from a
 * wait; its peer is then treated as untraced. */
void rc_model_apply(struct rc_ctx *c, struct rc_run *s);

/* Stream S has no more records. */
void rc_model_stream_end(struct rc_ctx *c, struct rc_run *s);

/* Every stream ended: close what is still open and write its rows. */
void rc_model_finish(struct rc_ctx *c);

/* One-line description of what S's head record waits for. */
void rc_model_wait_text(struct rc_ctx *c, const struct rc_run *s,
			char *buf, size_t len);

#endif /* RC_MODEL_H */
