/*
 * steps.h - the logs shown to the merge in steps (see steps.c).
 */
#ifndef RC_STEPS_H
#define RC_STEPS_H

#include "rc.h"

/* Make C's merge see its logs grow in N steps (C->grow); UNSAFE: the
 * watermark is each step's V, too late (a check of the merge's
 * refusal).  0 or -ENOMEM. */
int  rc_steps_init(struct rc_ctx *c, int n, int unsafe);
void rc_steps_free(struct rc_ctx *c);
/* Make C's merge read logs that grow on disk (rc_options.grow_fn). */
void rc_grow_disk_init(struct rc_ctx *c);

#endif /* RC_STEPS_H */
