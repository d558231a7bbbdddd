/*
 * merge.c - pass 2: the causal merge of all streams (see merge.h).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "input.h"
#include "merge.h"
#include "model.h"

struct rc_merge {
	uint32_t     *heap;      /* stream indices, min head_t first */
	uint32_t      n;
	struct rc_map parked;    /* wait key -> first parked stream + 1 */
	uint32_t      nparked;
	uint32_t      warned_malformed;
};

static int before(const struct rc_ctx *c, uint32_t a, uint32_t b)
{
	const struct rc_stream *x = &c->streams[a], *y = &c->streams[b];
	if (x->head_t != y->head_t)
		return x->head_t < y->head_t;
	return a < b;
}

static void heap_set(struct rc_ctx *c, uint32_t i, uint32_t s)
{
	c->merge->heap[i] = s;
	c->streams[s].heap_pos = i;
}

static void sift_up(struct rc_ctx *c, uint32_t i)
{
	struct rc_merge *g = c->merge;
	uint32_t s = g->heap[i];
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!before(c, s, g->heap[p]))
			break;
		heap_set(c, i, g->heap[p]);
		i = p;
	}
	heap_set(c, i, s);
}

static void sift_down(struct rc_ctx *c, uint32_t i)
{
	struct rc_merge *g = c->merge;
	uint32_t s = g->heap[i];
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;
		uint32_t best = s;
		if (l < g->n && before(c, g->heap[l], best)) {
			m = l;
			best = g->heap[l];
		}
		if (l + 1 < g->n && before(c, g->heap[l + 1], best)) {
			m = l + 1;
			best = g->heap[l + 1];
		}
		if (m == i)
			break;
		heap_set(c, i, g->heap[m]);
		i = m;
	}
	heap_set(c, i, s);
}

static void heap_push(struct rc_ctx *c, uint32_t s)
{
	struct rc_merge *g = c->merge;
	c->streams[s].state = RC_SS_READY;
	heap_set(c, g->n++, s);
	sift_up(c, g->n - 1);
}

/* Remove the stream at heap position I. */
static void heap_remove(struct rc_ctx *c, uint32_t i)
{
	struct rc_merge *g = c->merge;
	uint32_t last = g->heap[--g->n];

	if (i == g->n)
		return;
	heap_set(c, i, last);
	sift_down(c, i);
	sift_up(c, c->streams[last].heap_pos);
}

/*
 * Decode the next record of S into its head.  TIME records only re-base
 * the cursor's clock and are consumed here.  Returns 1, or 0 at the end.
 */
static int advance(struct rc_ctx *c, struct rc_stream *s)
{
	const struct rc_image *im = &c->images[s->image];

	while (rc_cur_next(c, s, &s->rec)) {
		uint64_t prev = s->rec.prev_ts;
		c->st.events++;
		if (s->rec.type == BT_EV_TIME)
			continue;
		if (bt_ev_decode(s->rec.p, s->rec.len, &s->ev, &prev) <= 0) {
			c->st.malformed++;
			if (c->merge->warned_malformed++ < 10)
				rc_warn(c, rc_file_path(c, s->rec.file),
					s->rec.file_off,
					"malformed %s record skipped",
					bt_ev_type_name(s->rec.type));
			continue;
		}
		if (s->ev.type >= BT_EV_TYPE_MAX)
			continue;         /* a newer record type: skipped */
		s->head_t = rc_epoch(c, im->domain, s->ev.ts);
		return 1;
	}
	return 0;
}

static void park(struct rc_ctx *c, uint32_t si, uint64_t key)
{
	struct rc_merge *g = c->merge;
	struct rc_stream *s = &c->streams[si];
	uint64_t first = 0;

	rc_map_get(&g->parked, key, &first);
	s->park_next = first ? &c->streams[first - 1] : NULL;
	s->wait_key = key;
	s->state = RC_SS_PARKED;
	rc_map_put(&g->parked, key, (uint64_t)si + 1);
	g->nparked++;
}

void rc_merge_wake(struct rc_ctx *c, uint64_t key)
{
	struct rc_merge *g = c->merge;
	uint64_t first;

	if (!g || !rc_map_get(&g->parked, key, &first))
		return;
	rc_map_del(&g->parked, key);
	for (struct rc_stream *s = &c->streams[first - 1]; s;) {
		struct rc_stream *nx = s->park_next;
		s->park_next = NULL;
		g->nparked--;
		heap_push(c, (uint32_t)(s - c->streams));
		s = nx;
	}
}

/* Everything left waits: let the oldest go, with a warning. */
static void release_oldest(struct rc_ctx *c)
{
	struct rc_merge *g = c->merge;
	struct rc_stream *best = NULL;
	char text[512];

	for (uint32_t i = 0; i < c->nstreams; i++) {
		struct rc_stream *s = &c->streams[i];
		if (s->state == RC_SS_PARKED &&
		    (!best || s->head_t < best->head_t))
			best = s;
	}
	if (!best)
		return;
	/* Unlink it from its key's list. */
	uint64_t first = 0;
	rc_map_get(&g->parked, best->wait_key, &first);
	struct rc_stream **pp;
	struct rc_stream *head = &c->streams[first - 1];
	if (head == best) {
		if (best->park_next)
			rc_map_put(&g->parked, best->wait_key,
				   (uint64_t)(best->park_next - c->streams) + 1);
		else
			rc_map_del(&g->parked, best->wait_key);
	} else {
		for (pp = &head->park_next; *pp != best; pp = &(*pp)->park_next)
			;
		*pp = best->park_next;
	}
	best->park_next = NULL;
	g->nparked--;
	rc_model_wait_text(c, best, text, sizeof text);
	rc_warn(c, rc_file_path(c, best->rec.file), best->rec.file_off, "%s",
		text);
	c->st.released++;
	best->released = RC_REL_BLOCKED;
	heap_push(c, (uint32_t)(best - c->streams));
}

int rc_merge_run(struct rc_ctx *c)
{
	struct rc_merge *g = calloc(1, sizeof *g);
	if (!g)
		return rc_fail(c, -ENOMEM, "out of memory");
	c->merge = g;
	g->heap = malloc((c->nstreams + 1) * sizeof *g->heap);
	if (!g->heap)
		return rc_fail(c, -ENOMEM, "out of memory");
	c->phase = "merging";

	for (uint32_t i = 0; i < c->nstreams; i++) {
		struct rc_stream *s = &c->streams[i];
		rc_cur_reset(c, s, 0);
		s->entry_next = 0;
		if (advance(c, s)) {
			heap_push(c, i);
		} else {
			s->state = RC_SS_DONE;
			rc_model_stream_end(c, s);
		}
	}
	for (;;) {
		if (c->err)
			return -EIO;
		if (g->n == 0) {
			if (g->nparked == 0)
				break;
			release_oldest(c);
			continue;
		}
		uint32_t si = g->heap[0];
		struct rc_stream *s = &c->streams[si];
		uint64_t key = 0;

		if (!s->released && !rc_model_ready(c, s, &key)) {
			heap_remove(c, s->heap_pos);
			park(c, si, key);
			continue;
		}
		rc_model_apply(c, s);
		/* Applying may have woken streams: S need not be on top. */
		if (advance(c, s)) {
			sift_down(c, s->heap_pos);
			sift_up(c, s->heap_pos);
		} else {
			heap_remove(c, s->heap_pos);
			s->state = RC_SS_DONE;
			rc_model_stream_end(c, s);
		}
	}
	return 0;
}

void rc_merge_free(struct rc_ctx *c)
{
	if (!c->merge)
		return;
	free(c->merge->heap);
	rc_map_free(&c->merge->parked);
	free(c->merge);
	c->merge = NULL;
}
