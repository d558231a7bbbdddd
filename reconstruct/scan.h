/*
 * scan.h - pass 1: skim every stream once, before the causal merge.
 *
 * It learns what the merge must know in advance:
 *  - each process image's realtime - monotonic difference, from which the
 *    clock domains (hosts, time namespaces) and their provisional mapping
 *    to Unix time are derived;
 *  - which parent records (FORK, EXEC, SPAWN, THREAD_CREATE) exist, so a
 *    child waits for its parent's record only when there is one to wait
 *    for, and a parent copies its state only for a child that will come;
 *  - every channel end (CHAN record) and which ends form one connection:
 *    TCP/UDP by swapped address tuples (nearest in time when a tuple is
 *    reused), unix sockets by swapped inodes, pipes by inode (pair.h).  A
 *    receive whose peer side has no end in any log comes from an untraced
 *    peer and never waits.
 */
#ifndef RC_SCAN_H
#define RC_SCAN_H

#include "rc.h"

/*
 * rc_scan_run - pass 1 over all streams of C.  Fills the images' pass-1
 * fields and C->lineage; then C->doms and C->ref_dom
 * (rc_clock_domains, clock.c) and the entries (rc_pair_all, pair.c).
 * Returns 0 or a negative errno (rc_fail set).
 */
int rc_scan_run(struct rc_ctx *c);
void rc_scan_free(struct rc_ctx *c);
/* Entry K of R's stream into *OUT and its index in the entries table into
 * *INDEX, read from the temporary file a few at a time; 0, or -1 with the
 * error recorded (rc_fail). */
int rc_scan_entry(struct rc_ctx *c, struct rc_run *r, uint32_t k,
		  struct rc_entry *out, uint32_t *index);
/*
 * rc_scan_more - pass 1 reads on, into what the streams gained since it
 * last read them (rc_input_more, or steps.c showing more blocks; only
 * with rc_options.steps for now, which makes rc_scan_run keep C->p1), and
 * makes its decisions again over everything: the clock domains, each
 * image's parent record, the pairing of channel ends.  Whatever the
 * merge already relied on must come out the same (the entries it read,
 * the domains of its images, the parent records it waited for or went
 * on without, the values learnt, the hosts with lost records and their
 * addresses): else a merge at once over these logs might have decided
 * otherwise, and it returns RC_MORE_REBUILD with WHY (LEN bytes) saying
 * what changed; only a merge from the start reads the logs right then.
 * FINAL: the logs will not grow any more (what pass 1 says of an image
 * the merge has not begun, it says now); RC_SCAN_FINAL_SAME: that, and
 * the caller knows the logs and the merge are as the last call (a
 * non-final one that succeeded, nothing indexed since) left them: only
 * what the end of the logs changes is done.
 * 0, RC_MORE_REBUILD, or a negative errno (rc_fail).
 */
#define RC_SCAN_FINAL_SAME 2
int rc_scan_more(struct rc_ctx *c, int final, char *why, size_t len);
/* Note that something the merge relied on changed (rc_scan_more). */
void rc_scan_changed(struct rc_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The merge applied a parent record for KEY with no child to hand its
 * state to (lineage.c), or started a child of KEY without waiting, no
 * parent record being in the logs: while the logs grow, a child or a
 * parent record for KEY coming later changes what it did. */
void rc_scan_no_child(struct rc_ctx *c, uint64_t key);
void rc_scan_no_parent(struct rc_ctx *c, uint64_t key);
/* Give back the entries' temporary file and the lineage map once the
 * merge is over. */
void rc_scan_drop_ends(struct rc_ctx *c);

/* The lineage map (one map for both counts: a slot is 17 bytes, and the
 * map holds a key per fork from pass 1 on).  rc_lin_left: how many parent
 * records (CHILD 0) or child images (CHILD 1) are left for KEY;
 * rc_lin_add: add DELTA to that count and return it (the old one if out
 * of memory). */
uint32_t rc_lin_left(const struct rc_ctx *c, uint64_t key, int child);
uint32_t rc_lin_add(struct rc_ctx *c, uint64_t key, int child, int32_t delta);

/* The lineage key of the record that creates process PID on HOST by KIND
 * (RC_LIN_FORK, _EXEC, _SPAWN). */
uint64_t rc_scan_proc_key(uint32_t host, uint32_t pid, unsigned kind);
/* The lineage key of thread creation COOKIE in image IMAGE. */
uint64_t rc_scan_thread_key(uint32_t image, uint64_t cookie);

#endif /* RC_SCAN_H */
