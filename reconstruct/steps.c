/*
 * steps.c - the logs shown in steps, as if they grew while pass 1 and the
 * merge read them (rc_options.steps; BP_RECONSTRUCT_STEPS): pass 1 reading
 * on (scan.c, rc_scan_more), the merge's pause at a watermark, its dry
 * runs and its resumption (merge.c) checked on any log against the same
 * log reconstructed at once.
 *
 * Step k of N shows each stream the leading blocks whose records are all
 * at or before V = t0 + (t1 - t0) k / N (each image's monotonic time plus
 * its own realtime difference, from its first TIME record; t0 and t1 the
 * first and last record of the logs), and says that every record up to W
 * is shown: just before the earliest record of a block not shown, in the
 * merge's times (its domain's difference; for an image pass 1 has not
 * seen, the smallest its host may get).  TIME records, which only re-base
 * a stream's clock, do not count.  At step N every block is shown and
 * the logs are final.  Pass 1 reads the first step's blocks before the
 * merge begins, and each step's new blocks as the merge resumes.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "input.h"
#include "recon.h"
#include "merge.h"
#include "scan.h"
#include "steps.h"

/* How far an image's domain's difference may be from its own (clock.c,
 * DOMAIN_GAP_NS): W for an image pass 1 has not seen allows for it. */
#define STEPS_GAP_NS (1 * RC_NS)

struct rc_steps {
	uint32_t *nblk;          /* each stream's blocks */
	uint64_t *first, *last;  /* each block's earliest and latest record,
				    monotonic (UINT64_MAX, 0: none) */
	int64_t  *delta;         /* each image's realtime difference */
	uint8_t  *has_delta;
	int64_t   t0, t1;
	int       n, k;
	int       began;         /* the merge asked once */
	int       unsafe;        /* W is V (rc_options.steps_unsafe) */
};

/* Every block's record times and every image's realtime difference, by
 * reading every stream once (before pass 1: no clock domain yet). */
static int block_times(struct rc_ctx *c, struct rc_steps *s)
{
	struct rc_run *run = calloc(1, sizeof *run);

	s->nblk = malloc(((size_t)c->nstreams + 1) * sizeof *s->nblk);
	s->first = malloc(((size_t)c->nblocks + 1) * sizeof *s->first);
	s->last = malloc(((size_t)c->nblocks + 1) * sizeof *s->last);
	s->delta = calloc((size_t)c->nimages + 1, sizeof *s->delta);
	s->has_delta = calloc((size_t)c->nimages + 1, 1);
	if (!run || !s->nblk || !s->first || !s->last || !s->delta ||
	    !s->has_delta) {
		free(run);
		return -ENOMEM;
	}
	for (uint32_t b = 0; b < c->nblocks; b++) {
		s->first[b] = UINT64_MAX;
		s->last[b] = 0;
	}
	for (uint32_t i = 0; i < c->nstreams; i++) {
		struct rc_stream *st = &c->streams[i];
		struct rc_rec r;
		struct bt_event ev;

		s->nblk[i] = st->nblk;
		run->st = st;
		rc_input_cur_reset(c, run, 0);
		while (rc_input_cur_next(c, run, &r)) {
			uint32_t b = st->blk_first + run->cur.bi;
			if (r.type == BT_EV_TIME) {
				uint64_t prev = r.prev_ts;
				if (!s->has_delta[st->image] &&
				    bt_ev_decode(r.p, r.len, &ev, &prev) > 0 &&
				    ev.realtime) {
					s->has_delta[st->image] = 1;
					s->delta[st->image] =
						(int64_t)(ev.realtime - ev.ts);
				}
				continue;     /* re-bases the cursor, not merged */
			}
			if (r.ts < s->first[b])
				s->first[b] = r.ts;
			if (r.ts > s->last[b])
				s->last[b] = r.ts;
		}
	}
	rc_input_run_free(run);
	free(run);
	/* the logs' first and last records, by each image's own clock */
	s->t0 = INT64_MAX;
	s->t1 = INT64_MIN;
	for (uint32_t i = 0; i < c->nstreams; i++) {
		const struct rc_stream *st = &c->streams[i];
		int64_t d = s->delta[st->image];
		for (uint32_t b = st->blk_first; b < st->blk_first + st->nblk; b++) {
			if (s->first[b] == UINT64_MAX)
				continue;
			if ((int64_t)s->first[b] + d < s->t0)
				s->t0 = (int64_t)s->first[b] + d;
			if ((int64_t)s->last[b] + d > s->t1)
				s->t1 = (int64_t)s->last[b] + d;
		}
	}
	return c->err ? -EIO : 0;
}

/* Show each stream the blocks of step K; the watermark into *W. */
static void show(struct rc_ctx *c, struct rc_steps *s, int64_t *w)
{
	int64_t v = s->t0 + (int64_t)((double)(s->t1 - s->t0) * s->k / s->n);
	int64_t wm = v;

	for (uint32_t i = 0; i < c->nstreams; i++) {
		struct rc_stream *st = &c->streams[i];
		const struct rc_image *im = &c->images[st->image];
		int64_t d = s->delta[st->image];
		uint32_t n = 0;
		/* the leading blocks whose records are at V or before (a
		 * block without records goes with the one before it) */
		while (n < s->nblk[i] &&
		       (s->first[st->blk_first + n] == UINT64_MAX ||
			(int64_t)s->last[st->blk_first + n] + d <= v))
			n++;
		if (n < st->nblk)
			n = st->nblk;        /* never fewer than shown */
		st->nblk = n;
		/* the merge's time of the first record not shown */
		int64_t md = INT64_MAX;
		if (im->has_delta) {
			md = c->doms[im->domain].delta;
		} else {
			md = d - STEPS_GAP_NS;
			for (uint32_t k = 0; k < c->ndoms; k++)
				if (c->doms[k].host == im->host &&
				    c->doms[k].delta < md)
					md = c->doms[k].delta;
		}
		for (uint32_t b = n; b < s->nblk[i]; b++)
			if (s->first[st->blk_first + b] != UINT64_MAX) {
				int64_t t = (int64_t)s->first[st->blk_first + b] + md;
				if (t - 1 < wm)
					wm = t - 1;
				break;
			}
	}
	*w = s->unsafe ? v : wm;
}

/* Pass 1 reads on (rc_scan_more); a refusal is the run's error, WHERE
 * said in it.  0 or an error (rc_fail). */
static int scan_on(struct rc_ctx *c, int final, const char *where)
{
	char why[300];
	int r = rc_scan_more(c, final, why, sizeof why);

	if (r == RC_MORE_REBUILD)
		return rc_fail(c, RC_EXIT_INPUT,
			       "pass 1, reading on%s: %s: reconstruct the logs again",
			       where, why);
	return r;
}

/* The cursors follow their streams' block counts. */
static void refresh(struct rc_ctx *c)
{
	for (uint32_t i = 0; i < c->nstreams; i++)
		if (c->streams[i].run)
			c->streams[i].run->cur.nblk = c->streams[i].nblk;
	rc_merge_rebase(c, (uintptr_t)c->streams);
}

static int steps_fn(void *arg, struct rc_ctx *c, int64_t *w)
{
	struct rc_steps *s = arg;
	char why[300];
	int r, last;

	if (!s->began) {
		/* the first step, which pass 1 has read */
		s->began = 1;
		if (s->k >= s->n)
			return 0;
		show(c, s, w);
		return 1;
	}
	last = ++s->k >= s->n || s->t0 > s->t1;

	if (last)
		for (uint32_t i = 0; i < c->nstreams; i++)
			c->streams[i].nblk = s->nblk[i];
	else
		show(c, s, w);
	/* pass 1 reads what is shown now */
	snprintf(why, sizeof why, " at step %d of %d", s->k, s->n);
	if ((r = scan_on(c, last, why)) != 0)
		return r;
	refresh(c);
	if (last)
		return 0;
	/* W in the merge's times, now that pass 1 knows the new images */
	show(c, s, w);
	return 1;
}

int rc_steps_init(struct rc_ctx *c, int n, int unsafe)
{
	struct rc_steps *s = calloc(1, sizeof *s);
	int64_t w;
	int r;

	if (!s)
		return -ENOMEM;
	s->n = n;
	s->unsafe = unsafe;
	c->grow.fn = steps_fn;
	c->grow.arg = s;
	if ((r = block_times(c, s)) != 0)
		return r;
	/* nothing is shown before the first step; pass 1 reads the first */
	for (uint32_t i = 0; i < c->nstreams; i++)
		c->streams[i].nblk = 0;
	if (s->t0 <= s->t1 && n > 1) {
		s->k = 1;
		show(c, s, &w);
	} else {
		s->k = n;
		for (uint32_t i = 0; i < c->nstreams; i++)
			c->streams[i].nblk = s->nblk[i];
	}
	return 0;
}

void rc_steps_free(struct rc_ctx *c)
{
	struct rc_steps *s = c->grow.fn == steps_fn ? c->grow.arg : NULL;

	if (!s)
		return;
	free(s->nblk);
	free(s->first);
	free(s->last);
	free(s->delta);
	free(s->has_delta);
	free(s);
	c->grow.fn = NULL;
	c->grow.arg = NULL;
}

/* ---- logs that grow on disk (rc_options.grow_fn) ----------------------- */

static int disk_fn(void *arg, struct rc_ctx *c, int64_t *w)
{
	char why[300];
	int more, r;

	(void)arg;
	more = c->opt->grow_fn(c->opt->grow_arg, w);
	if (more < 0)
		return rc_fail(c, RC_EXIT_INPUT, "the logs could not grow");
	r = rc_input_more(c, why, sizeof why);
	if (r == RC_MORE_REBUILD)
		return rc_fail(c, RC_EXIT_INPUT,
			       "the logs changed otherwise than by growing: %s: reconstruct the logs again",
			       why);
	if (r)
		return r;
	if ((r = scan_on(c, !more, "")) != 0)
		return r;
	return more;
}

void rc_grow_disk_init(struct rc_ctx *c)
{
	c->grow.fn = disk_fn;
	c->grow.arg = NULL;
}
