/*
 * keeper.h - the merge kept between the window passes of --follow (see
 * keeper.c), and the parts of rc_run it is made of (recon.c).
 */
#ifndef RC_KEEPER_H
#define RC_KEEPER_H

#include <sys/types.h>

#include "recon.h"

struct rc_ctx;

/* rc_run in parts (recon.c): init C for options O; begin (the database
 * or its spool, the index, pass 1, the model); the merge is
 * rc_merge_run's; end (the rows written, the summary into *SUM, T0 the
 * run's start by rc_run_now); after a failure rc_run_fail (says it,
 * drops the database; the exit code); then always rc_run_free. */
void   rc_run_init(struct rc_ctx *c, const struct rc_options *o);
int    rc_run_begin(struct rc_ctx *c);
int    rc_run_end(struct rc_ctx *c, double t0, struct rc_summary *sum);
int    rc_run_fail(struct rc_ctx *c, int r);
void   rc_run_free(struct rc_ctx *c);
double rc_run_now(void);

struct rc_keeper;

/* What rc_keeper_pass returns besides an enum rc_exit: the keeper could
 * not make this pass (WHY says why); reconstruct it at once, and make a
 * new keeper for the next. */
#define RC_KEEP_FALLBACK (-1)

/*
 * rc_keeper_start - fork a keeper for the passes of options O (its
 * inputs, and the options every pass shares; its rows_from_ns is that of
 * every pass it makes, its pending_ns that of its merge until the first
 * pass).  It reconstructs the logs at once, merges them to W0 (Unix ns;
 * INT64_MIN: not before the first pass) and says it is ready
 * (rc_keeper_ready).  NULL when no process could be made.
 */
struct rc_keeper *rc_keeper_start(const struct rc_options *o, int64_t w0);
/* Is K ready for a pass (its merge to W0 done)?  1, 0 not yet, -1 when
 * it stopped.  Does not wait. */
int rc_keeper_ready(struct rc_keeper *k);
/*
 * rc_keeper_pass - the pass O (output, pending_ns, rows_from_ns and the
 * corrections rows_dom/rows_corr; the rest as the keeper's): the keeper
 * reads what the logs gained, a child of it writes O->output as rc_run
 * would, and the keeper merges on to W (Unix ns: every record up to W is
 * in the logs now).  The rows left out are those of the keeper's first
 * pass's rows_from_ns (a request's rows all or none, as at once), which
 * may be earlier than O's: *ROWS_FROM.  MANIFEST: the child writes
 * O->output.files, a line per segment file it read: its length then and
 * its path.  RC_EXIT_OK with *SUM, or
 * RC_KEEP_FALLBACK with WHY (also when O's rows_from_ns is earlier).
 */
int rc_keeper_pass(struct rc_keeper *k, const struct rc_options *o,
		   int64_t w, int manifest, struct rc_summary *sum,
		   int64_t *rows_from, char *why, size_t len);
/* Stop the keeper (and a pass's child) and free K (NULL: nothing). */
void rc_keeper_stop(struct rc_keeper *k);

/*
 * rc_keeper_compare - do the paths databases A and B hold the same rows,
 * by content (ids replaced by what they name: row ids follow the order
 * rows were written in, which a kept merge may change; the stats that
 * say what was reconstructed; warnings of B with the string STRIP, if
 * not NULL, taken out of their file and text)?  0 when they do, 1 with
 * WHY naming the first table that differs, -1 with WHY on an error.
 */
int rc_keeper_compare(const char *a, const char *b, const char *strip,
		      char *why, size_t len);

#endif /* RC_KEEPER_H */
