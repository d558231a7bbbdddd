/*
 * steps.c - the logs shown to the merge in steps, as if they grew while
 * it ran (rc_options.steps; BP_RECONSTRUCT_STEPS): the merge's pause at
 * a watermark, its dry runs and its resumption (merge.c) checked on any
 * log against the same log merged at once.
 *
 * Step k of N shows each stream the leading blocks whose records are all
 * at or before V = t0 + (t1 - t0) k / N (provisional Unix times, the
 * first and last record of the logs), and says that every record up to
 * W is shown: just before the earliest record of a block not shown.
 * TIME records, which only re-base a stream's clock, do not count.  At
 * step N every block is shown and the logs are final.  Pass 1 has read
 * the whole logs: only the merge sees them grow.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "input.h"
#include "merge.h"
#include "steps.h"

struct rc_steps {
	uint32_t *nblk;          /* each stream's blocks */
	int64_t  *first, *last;  /* each block's earliest and latest record
				    (INT64_MAX, INT64_MIN: none) */
	int64_t   t0, t1;
	int       n, k;
	int       unsafe;        /* W is V (rc_options.steps_unsafe) */
};

/* Every block's record times, by reading every stream once. */
static int block_times(struct rc_ctx *c, struct rc_steps *s)
{
	struct rc_run *run = calloc(1, sizeof *run);

	s->nblk = malloc(((size_t)c->nstreams + 1) * sizeof *s->nblk);
	s->first = malloc(((size_t)c->nblocks + 1) * sizeof *s->first);
	s->last = malloc(((size_t)c->nblocks + 1) * sizeof *s->last);
	if (!run || !s->nblk || !s->first || !s->last) {
		free(run);
		return -ENOMEM;
	}
	for (uint32_t b = 0; b < c->nblocks; b++) {
		s->first[b] = INT64_MAX;
		s->last[b] = INT64_MIN;
	}
	s->t0 = INT64_MAX;
	s->t1 = INT64_MIN;
	for (uint32_t i = 0; i < c->nstreams; i++) {
		struct rc_stream *st = &c->streams[i];
		uint32_t dom = c->images[st->image].domain;
		struct rc_rec r;

		s->nblk[i] = st->nblk;
		run->st = st;
		rc_input_cur_reset(c, run, 0);
		while (rc_input_cur_next(c, run, &r)) {
			uint32_t b = st->blk_first + run->cur.bi;
			if (r.type == BT_EV_TIME)
				continue;     /* re-bases the cursor, not merged */
			int64_t t = rc_epoch(c, dom, r.ts);
			if (t < s->first[b])
				s->first[b] = t;
			if (t > s->last[b])
				s->last[b] = t;
			if (t < s->t0)
				s->t0 = t;
			if (t > s->t1)
				s->t1 = t;
		}
	}
	rc_input_run_free(run);
	free(run);
	/* nothing is shown before the first step */
	for (uint32_t i = 0; i < c->nstreams; i++)
		c->streams[i].nblk = 0;
	return c->err ? -EIO : 0;
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
	int r;

	if (!s->nblk && (r = block_times(c, s)) != 0)
		return r == -ENOMEM ? rc_fail(c, r, "out of memory") : r;
	if (++s->k >= s->n || s->t0 > s->t1) {
		for (uint32_t i = 0; i < c->nstreams; i++)
			c->streams[i].nblk = s->nblk[i];
		refresh(c);
		return 0;
	}
	int64_t v = s->t0 + (int64_t)((double)(s->t1 - s->t0) * s->k / s->n);
	int64_t wm = v;
	for (uint32_t i = 0; i < c->nstreams; i++) {
		struct rc_stream *st = &c->streams[i];
		uint32_t n = 0;
		/* the leading blocks whose records are at V or before (a
		 * block without records goes with the one before it) */
		while (n < s->nblk[i] && s->last[st->blk_first + n] <= v)
			n++;
		if (n < st->nblk)
			n = st->nblk;        /* never fewer than shown */
		st->nblk = n;
		for (uint32_t b = n; b < s->nblk[i]; b++)
			if (s->first[st->blk_first + b] != INT64_MAX) {
				if (s->first[st->blk_first + b] - 1 < wm)
					wm = s->first[st->blk_first + b] - 1;
				break;
			}
	}
	refresh(c);
	*w = s->unsafe ? v : wm;
	return 1;
}

int rc_steps_init(struct rc_ctx *c, int n, int unsafe)
{
	struct rc_steps *s = calloc(1, sizeof *s);

	if (!s)
		return -ENOMEM;
	s->n = n;
	s->unsafe = unsafe;
	c->grow.fn = steps_fn;
	c->grow.arg = s;
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
	free(s);
	c->grow.fn = NULL;
	c->grow.arg = NULL;
}
