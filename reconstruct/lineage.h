/*
 * lineage.h - the rules of lineage and the images' processes (lineage.c),
 * called by model.c.
 */
#ifndef RC_LINEAGE_H
#define RC_LINEAGE_H

#include "apply.h"

/* A parent record for KEY: hand the thread's designation (and PROC, with
 * a reference) to the child if one comes; wakes the child's stream. */
void rc_lineage_parent_record(struct ap *a, uint64_t key,
			      struct rc_proc *proc, const char *how);

/* Can a child waiting on KEY go?  Yes if its parent record was applied,
 * or if no parent record is left to wait for. */
int rc_lineage_ready(struct rc_ctx *c, uint64_t key);

/* The process of the current image, attaching it on first use. */
struct rc_proc *rc_lineage_proc_of(struct ap *a);

/* The merge's state of IM, made when its first record is met (NULL, the
 * run failed, when out of memory). */
struct rc_imrun *rc_lineage_imrun(struct rc_ctx *c, struct rc_image *im);

/* IM's last stream ended: write its row, let its process go. */
void rc_lineage_image_done(struct rc_ctx *c, struct rc_image *im);

/* The records: THREAD_START (the thread's designation from its parent's
 * snapshot), PROC_START, FORK/SPAWN/THREAD_CREATE (KIND), EXEC. */
void rc_lineage_thread_start(struct ap *a);
void rc_lineage_proc_start(struct ap *a);
void rc_lineage_fork_like(struct ap *a, unsigned kind);
void rc_lineage_exec(struct ap *a);

/* Drop the snapshots parents left for children that never came. */
void rc_lineage_drop(struct rc_ctx *c);

#endif /* RC_LINEAGE_H */
