/*
 * merge.c - pass 2: the causal merge of all streams (see merge.h).
 *
 * Streams become active in the order of their first record (provisional
 * time), when the merge reaches it; only active streams hold a struct
 * rc_run (a decoded record, a cursor, a thread's designation), which goes
 * back to a free list when the stream ends.  So the merge holds the
 * streams that overlap in time, not all the streams of the log.
 *
 * A stream parked on its first record (a child process whose parent's
 * FORK the merge has not reached: tens of thousands at once when the
 * parent waits on a host whose clock is ahead) keeps only a stub, its
 * cursor and head record (struct rc_stub), and takes a run again when it
 * is woken.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "input.h"
#include "merge.h"
#include "model.h"
#include "park.h"

/* A stream parked on its first record, without a run: what it takes to
 * decode that record again (the run had no value in its dictionary). */
struct rc_stub {
	struct rc_stub   *next;  /* parked on the same key */
	struct rc_stream *st;
	struct rc_cursor  cur;
	struct rc_rec     rec;
	int64_t           head_t;
	uint64_t          wait_key;
};

struct rc_merge {
	struct rc_run **heap;    /* active runs, min head_t first */
	uint32_t       n, cap;
	uint32_t      *order;    /* streams by first record time */
	uint32_t       norder;
	uint32_t       next;     /* next stream of ORDER to activate */
	struct rc_map  parked;   /* wait key -> first parked run */
	struct rc_map  stubs;    /* wait key -> first parked stub */
	uint32_t       nparked;  /* runs and stubs */
	struct rc_run *pool;     /* free runs */
	uint32_t       warned_malformed;
	uint32_t       warned_types;
	uint32_t       warned_unknown;
	/* The logs as they grow (rc_ctx.grow): until FINAL, nothing
	 * later than W is applied, and a stream at the end of what it has
	 * is DRY, not ended. */
	const struct rc_grow *grow;
	int            final;
	int64_t        w;
	int64_t        max_applied;  /* the latest head applied */
	struct rc_run **dry;
	uint32_t       ndry, dry_cap;
	/* ending the dry runs once the logs are final: a record they
	 * wake that is older than what was applied (the merge at once
	 * would have woken it at their last record) */
	int            ending_dry;
	uint32_t       woke_old, woke_old_stream;
	/* hosts whose logs have bp-logd's notes (an image of ring 0),
	 * for NOTES_IMAGES images: their streams end when bp-logd says
	 * their image is gone (PEER_GONE), or at the end */
	uint8_t       *notes;
	uint32_t       notes_images;
	struct rc_map  images;   /* rc_input_image_key -> image */
	uint32_t       images_n; /* images in it */
	int            gone;     /* an image went: end its dry runs */
};

/* ---- the heap of active runs ---------------------------------------------- */

static int before(const struct rc_run *x, const struct rc_run *y)
{
	if (x->head_t != y->head_t)
		return x->head_t < y->head_t;
	return x->st->rank < y->st->rank;
}

static void heap_set(struct rc_merge *g, uint32_t i, struct rc_run *r)
{
	g->heap[i] = r;
	r->heap_pos = i;
}

static void sift_up(struct rc_merge *g, uint32_t i)
{
	struct rc_run *r = g->heap[i];
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!before(r, g->heap[p]))
			break;
		heap_set(g, i, g->heap[p]);
		i = p;
	}
	heap_set(g, i, r);
}

static void sift_down(struct rc_merge *g, uint32_t i)
{
	struct rc_run *r = g->heap[i];
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;
		struct rc_run *best = r;
		if (l < g->n && before(g->heap[l], best)) {
			m = l;
			best = g->heap[l];
		}
		if (l + 1 < g->n && before(g->heap[l + 1], best)) {
			m = l + 1;
			best = g->heap[l + 1];
		}
		if (m == i)
			break;
		heap_set(g, i, g->heap[m]);
		i = m;
	}
	heap_set(g, i, r);
}

static int heap_push(struct rc_merge *g, struct rc_run *r)
{
	if (g->n == g->cap) {
		uint32_t ncap = g->cap ? g->cap * 2 : 64;
		struct rc_run **nh = realloc(g->heap, ncap * sizeof *nh);
		if (!nh)
			return -ENOMEM;
		g->heap = nh;
		g->cap = ncap;
	}
	r->state = RC_SS_READY;
	heap_set(g, g->n++, r);
	sift_up(g, g->n - 1);
	return 0;
}

/* Remove the run at heap position I. */
static void heap_remove(struct rc_merge *g, uint32_t i)
{
	struct rc_run *last = g->heap[--g->n];

	if (i == g->n)
		return;
	heap_set(g, i, last);
	sift_down(g, i);
	sift_up(g, last->heap_pos);
}

/* ---- runs ------------------------------------------------------------------- */

/*
 * Decode the next record of R into its head.  TIME records only re-base
 * the cursor's clock and are consumed here.  Returns 1, or 0 at the end.
 */
static int advance(struct rc_ctx *c, struct rc_run *r)
{
	const struct rc_image *im = &c->images[r->st->image];

	while (rc_input_cur_next(c, r, &r->rec)) {
		uint64_t prev = r->rec.prev_ts;
		c->st.events++;
		if (r->rec.type == BT_EV_TIME) {
			/* the cursor skips from lost bytes to a TIME: the
			 * dictionary is right again from here */
			bt_ev_dict_reset(r->dict);
			continue;
		}
		long k = bt_ev_decode_dict(r->rec.p, r->rec.len, &r->ev,
					   &prev, r->dict);
		if (k > 0 && r->ev.dict_keep && !r->dict &&
		    (r->dict = malloc(sizeof *r->dict))) {
			/* the stream's first value to remember: from here
			 * on it has a dictionary (streams that never
			 * remember one, and streams not yet begun, hold
			 * none: many thousands can be active at once) */
			bt_ev_dict_init(r->dict);
			prev = r->rec.prev_ts;
			k = bt_ev_decode_dict(r->rec.p, r->rec.len, &r->ev,
					      &prev, r->dict);
		}
		if (k <= 0) {
			/* what it said is not known: as after a gap, the
			 * thread's work from here may be another request's
			 * (model.c, gap_work) */
			r->thr.gap = 1;
			c->st.malformed++;
			if (c->merge->warned_malformed++ < 10)
				rc_warn(c, rc_file_path(c, r->rec.file),
					r->rec.file_off,
					"malformed %s record skipped",
					bt_ev_type_name(r->rec.type));
			continue;
		}
		if (r->ev.type >= BT_EV_TYPE_MAX) {
			/* a newer writer's type, skipped by its length: what
			 * it said of the thread's work is not known (a signal
			 * handler's bounds were such a record once) */
			r->thr.gap = 1;
			c->st.unknown_types++;
			if (c->merge->warned_types++ < 10)
				rc_warn(c, rc_file_path(c, r->rec.file),
					r->rec.file_off,
					"record of type %u, newer than this reader, skipped; the work of its thread around it is uncertain",
					(unsigned)r->ev.type);
			continue;
		}
		if (r->ev.dict_miss && c->merge->warned_unknown++ < 10)
			rc_warn(c, rc_file_path(c, r->rec.file),
				r->rec.file_off,
				"%s record refers to a value its stream's dictionary does not hold: the value is unknown",
				bt_ev_type_name(r->rec.type));
		r->head_t = rc_epoch(c, im->domain, r->ev.ts);
		return 1;
	}
	return 0;
}

static void run_end(struct rc_ctx *c, struct rc_run *r)
{
	struct rc_merge *g = c->merge;

	r->state = RC_SS_DONE;
	r->st->ended = 1;
	r->st->ended_nblk = r->st->nblk;
	rc_model_stream_end(c, r);
	r->st->run = NULL;
	rc_input_run_idle(r);
	r->park_next = g->pool;
	g->pool = r;
}

/* R has read all its stream has so far, and the logs grow: it waits
 * for more (rc_ctx.grow), holding its thread's state. */
static int go_dry(struct rc_merge *g, struct rc_run *r)
{
	if (g->ndry == g->dry_cap) {
		uint32_t ncap = g->dry_cap ? g->dry_cap * 2 : 64;
		struct rc_run **nd = realloc(g->dry, ncap * sizeof *nd);
		if (!nd)
			return -ENOMEM;
		g->dry = nd;
		g->dry_cap = ncap;
	}
	r->state = RC_SS_DRY;
	g->dry[g->ndry++] = r;
	return 0;
}

/* Does HOST's log have bp-logd's notes? */
static int host_notes(struct rc_ctx *c, struct rc_merge *g, uint32_t host)
{
	if (g->notes_images != c->nimages || !g->notes) {
		uint8_t *n = realloc(g->notes, c->nhosts + 1);
		if (!n)
			return 0;
		memset(n, 0, c->nhosts + 1);
		for (uint32_t i = 0; i < c->nimages; i++)
			if (c->images[i].ring_id == 0 &&
			    c->images[i].host < c->nhosts)
				n[c->images[i].host] = 1;
		g->notes = n;
		g->notes_images = c->nimages;
	}
	return host < c->nhosts && g->notes[host];
}

/*
 * R has read all its stream has.  It ends now when that is known to be
 * all: its image is gone (bp-logd's PEER_GONE, applied already: a run
 * that was parked when it came, a receive waiting on a send, reaches
 * its end only after it, and end_gone, which ends the dry runs of gone
 * images at the note, has passed it; the merge at once ended it here
 * too), or the logs are final and its host's logs have no notes of
 * bp-logd that could say so.  Else it runs dry: the logs may still
 * grow, or the image still live (then it ends at the note, or at the
 * end: the merge at once and the merge in steps the same way).  0 or
 * -ENOMEM.
 */
static int exhausted(struct rc_ctx *c, struct rc_merge *g, struct rc_run *r)
{
	const struct rc_image *im = &c->images[r->st->image];

	if (im->gone || (g->final && !host_notes(c, g, im->host))) {
		run_end(c, r);
		return 0;
	}
	return go_dry(g, r);
}

/* A zeroed run for stream S (from the free list, keeping its emptied
 * dictionary), or NULL when out of memory. */
static struct rc_run *run_get(struct rc_ctx *c, struct rc_stream *s)
{
	struct rc_merge *g = c->merge;
	struct rc_run *r = g->pool;
	struct bt_ev_dict *d = NULL;
	uint8_t *buf = NULL;
	uint32_t cap = 0;

	if (r) {
		g->pool = r->park_next;
		d = r->dict;
		buf = r->blk_buf;
		cap = r->blk_cap;
	} else if (!(r = malloc(sizeof *r))) {
		return NULL;
	}
	memset(r, 0, sizeof *r);
	r->dict = d;               /* NULL until the stream remembers a value */
	r->blk_buf = buf;
	r->blk_cap = cap;
	bt_ev_dict_init(d);
	r->st = s;
	r->fresh = 1;
	s->run = r;
	return r;
}

/* Make stream S active: its first record goes into the heap. */
static int activate(struct rc_ctx *c, struct rc_stream *s)
{
	struct rc_run *r = run_get(c, s);

	if (!r)
		return -ENOMEM;
	s->began = 1;
	c->images[s->image].began = 1;
	rc_input_cur_reset(c, r, 0);
	if (advance(c, r))
		return heap_push(c->merge, r);
	return exhausted(c, c->merge, r);
}

/* The provisional time of stream I's first record (for activation). */
static int64_t first_t(const struct rc_ctx *c, uint32_t i)
{
	const struct rc_stream *s = &c->streams[i];
	if (!s->has_first)
		return INT64_MIN;
	return rc_epoch(c, c->images[s->image].domain, s->first_ts);
}

/* A stream's place in the order of activation: its first record's time,
 * then its number. */
struct first_key {
	int64_t  t;
	uint32_t i, rank;
};

static int cmp_first(const void *pa, const void *pb)
{
	const struct first_key *a = pa, *b = pb;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* The streams in the order of their first records (G->order): those
 * not begun that have blocks (all of them, but while the logs grow).
 * The keys are read once, in the tables' order, into an array of their
 * own: a sort comparing through the stream and image tables (mapped
 * files) kept both resident (15 MB at 50 million bp-genbig events). */
static int order_streams(struct rc_ctx *c, struct rc_merge *g)
{
	struct first_key *k = malloc(((size_t)c->nstreams + 1) * sizeof *k);
	uint32_t *o = realloc(g->order, ((size_t)c->nstreams + 1) * sizeof *o);
	uint32_t n = 0;

	if (o)
		g->order = o;
	if (!k || !o) {
		free(k);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < c->nstreams; i++) {
		const struct rc_stream *s = &c->streams[i];
		if (!s->began && s->nblk) {
			k[n].t = first_t(c, i);
			k[n].i = i;
			k[n].rank = s->rank;
			n++;
		}
		if ((i & 32767) == 32767)
			rc_input_tables_release(c);
	}
	qsort(k, n, sizeof *k, cmp_first);
	for (uint32_t i = 0; i < n; i++)
		g->order[i] = k[i].i;
	g->norder = n;
	g->next = 0;
	free(k);
	return 0;
}

/* ---- waiting ------------------------------------------------------------------ */

/* Does D remember no value (or is there none)? */
static int dict_empty(const struct bt_ev_dict *d)
{
	if (!d)
		return 1;
	for (unsigned i = 0; i < BT_DICT_SLOTS; i++)
		if (d->ent[i].gen == d->gen)
			return 0;
	return 1;
}

/*
 * Park R, which has applied nothing yet, as a stub: its run goes back to
 * the free list.  Only when its dictionary remembers nothing, so that
 * decoding its head record again (stub_wake) gives the same record.
 * Returns 1, or 0 if R is to be parked as it is.
 */
static int park_stub(struct rc_ctx *c, struct rc_run *r, uint64_t key)
{
	struct rc_merge *g = c->merge;
	struct rc_stub *sb;

	if (!r->fresh || r->released || !dict_empty(r->dict) ||
	    !(sb = malloc(sizeof *sb)))
		return 0;
	sb->st = r->st;
	sb->cur = r->cur;
	sb->rec = r->rec;
	sb->head_t = r->head_t;
	sb->wait_key = key;
	sb->next = rc_map_getp(&g->stubs, key);
	if (rc_map_put(&g->stubs, key, (uint64_t)(uintptr_t)sb) < 0) {
		free(sb);
		return 0;
	}
	g->nparked++;
	r->st->run = NULL;
	rc_input_run_idle(r);
	r->park_next = g->pool;
	g->pool = r;
	return 1;
}

/*
 * A run again for stub SB, its head record decoded as advance() decoded
 * it (with an empty dictionary; the record put nothing in it, so the
 * values are the same); SB is freed.  NULL when out of memory (the run
 * failed).
 */
static struct rc_run *stub_wake(struct rc_ctx *c, struct rc_stub *sb)
{
	const struct rc_image *im = &c->images[sb->st->image];
	struct rc_run *r = run_get(c, sb->st);
	uint64_t prev;

	if (!r) {
		free(sb);
		rc_fail(c, -ENOMEM, "out of memory in the merge");
		return NULL;
	}
	r->cur = sb->cur;
	r->rec = sb->rec;
	if (rc_input_cur_reload(c, r) != 0) {
		free(sb);
		return NULL;
	}
	prev = r->rec.prev_ts;
	long k = bt_ev_decode_dict(r->rec.p, r->rec.len, &r->ev, &prev,
				   r->dict);
	if (k > 0 && r->ev.dict_keep && !r->dict &&
	    (r->dict = malloc(sizeof *r->dict))) {
		bt_ev_dict_init(r->dict);
		prev = r->rec.prev_ts;
		k = bt_ev_decode_dict(r->rec.p, r->rec.len, &r->ev, &prev,
				      r->dict);
	}
	r->head_t = rc_epoch(c, im->domain, r->ev.ts);
	if (k <= 0 || r->head_t != sb->head_t)
		rc_fail(c, -EIO, "a parked record decoded differently");
	free(sb);
	return r;
}

static void park(struct rc_ctx *c, struct rc_run *r, uint64_t key)
{
	struct rc_merge *g = c->merge;

	if (park_stub(c, r, key))
		return;
	r->park_next = rc_map_getp(&g->parked, key);
	r->wait_key = key;
	r->state = RC_SS_PARKED;
	rc_map_put(&g->parked, key, (uint64_t)(uintptr_t)r);
	g->nparked++;
}

/* While the dry runs end (resume): R, woken, waited since before what
 * was applied. */
static void woke_old(struct rc_merge *g, const struct rc_stream *st,
		     int64_t head_t, const struct rc_ctx *c)
{
	if (g->ending_dry && head_t <= g->max_applied && !g->woke_old++)
		g->woke_old_stream = (uint32_t)(st - c->streams);
}

void rc_merge_wake(struct rc_ctx *c, uint64_t key)
{
	struct rc_merge *g = c->merge;
	struct rc_run *r;
	struct rc_stub *sb;

	if (!g)
		return;
	if ((sb = rc_map_getp(&g->stubs, key))) {
		rc_map_del(&g->stubs, key);
		while (sb) {
			struct rc_stub *nx = sb->next;
			g->nparked--;
			woke_old(g, sb->st, sb->head_t, c);
			if ((r = stub_wake(c, sb)) && heap_push(g, r) < 0)
				rc_fail(c, -ENOMEM, "out of memory in the merge");
			sb = nx;
		}
	}
	if (!(r = rc_map_getp(&g->parked, key)))
		return;
	rc_map_del(&g->parked, key);
	while (r) {
		struct rc_run *nx = r->park_next;
		r->park_next = NULL;
		g->nparked--;
		woke_old(g, r->st, r->head_t, c);
		if (heap_push(g, r) < 0)
			rc_fail(c, -ENOMEM, "out of memory in the merge");
		r = nx;
	}
}

void rc_merge_rebase(struct rc_ctx *c, uintptr_t old_streams)
{
	struct rc_merge *g = c->merge;

	if (!g)
		return;
	for (size_t i = 0; i < g->stubs.cap; i++) {
		if (!g->stubs.used[i])
			continue;
		for (struct rc_stub *sb = (struct rc_stub *)(uintptr_t)g->stubs.vals[i];
		     sb; sb = sb->next) {
			size_t si = ((uintptr_t)sb->st - old_streams) /
				    sizeof *sb->st;
			sb->st = &c->streams[si];
			sb->cur.blk = c->blocks + sb->st->blk_first;
			sb->cur.nblk = sb->st->nblk;
		}
	}
}

/* The oldest stub, by the order of the heap (head_t, then stream). */
static struct rc_stub *oldest_stub(struct rc_merge *g)
{
	struct rc_stub *best = NULL;

	for (size_t i = 0; i < g->stubs.cap; i++) {
		if (!g->stubs.used[i])
			continue;
		for (struct rc_stub *sb = (struct rc_stub *)(uintptr_t)g->stubs.vals[i];
		     sb; sb = sb->next)
			if (!best || sb->head_t < best->head_t ||
			    (sb->head_t == best->head_t &&
			     sb->st->rank < best->st->rank))
				best = sb;
	}
	return best;
}

/* Take stub SB out of its key's list and give it a run again. */
static struct rc_run *stub_unpark(struct rc_ctx *c, struct rc_stub *sb)
{
	struct rc_merge *g = c->merge;
	struct rc_stub *head = rc_map_getp(&g->stubs, sb->wait_key);

	if (head == sb) {
		if (sb->next)
			rc_map_put(&g->stubs, sb->wait_key,
				   (uint64_t)(uintptr_t)sb->next);
		else
			rc_map_del(&g->stubs, sb->wait_key);
	} else {
		while (head->next != sb)
			head = head->next;
		head->next = sb->next;
	}
	g->nparked--;
	uint64_t key = sb->wait_key;
	struct rc_run *r = stub_wake(c, sb);
	if (r) {
		r->wait_key = key;
		r->state = RC_SS_PARKED;
	}
	return r;
}

/* Everything left waits: let the oldest go, with a warning. */
static void release_oldest(struct rc_ctx *c)
{
	struct rc_merge *g = c->merge;
	struct rc_run *best = NULL;
	char text[512];

	for (size_t i = 0; i < g->parked.cap; i++) {
		if (!g->parked.used[i])
			continue;
		for (struct rc_run *r = (struct rc_run *)(uintptr_t)g->parked.vals[i];
		     r; r = r->park_next)
			if (!best || before(r, best))
				best = r;
	}
	struct rc_stub *sb = oldest_stub(g);
	if (sb && (!best || sb->head_t < best->head_t ||
		   (sb->head_t == best->head_t &&
		    sb->st->rank < best->st->rank))) {
		if (!(best = stub_unpark(c, sb)))
			return;
	} else if (best) {
		/* Unlink it from its key's list. */
		struct rc_run *head = rc_map_getp(&g->parked, best->wait_key);
		if (head == best) {
			if (best->park_next)
				rc_map_put(&g->parked, best->wait_key,
					   (uint64_t)(uintptr_t)best->park_next);
			else
				rc_map_del(&g->parked, best->wait_key);
		} else {
			struct rc_run **pp = &head->park_next;
			while (*pp != best)
				pp = &(*pp)->park_next;
			*pp = best->park_next;
		}
		best->park_next = NULL;
		g->nparked--;
	}
	if (!best)
		return;
	rc_model_wait_text(c, best, text, sizeof text);
	rc_warn(c, rc_file_path(c, best->rec.file), best->rec.file_off, "%s",
		text);
	c->st.released++;
	best->released = RC_REL_BLOCKED;
	if (heap_push(g, best) < 0)
		rc_fail(c, -ENOMEM, "out of memory in the merge");
}

/* ---- the loop -------------------------------------------------------------------- */

/* Dry runs in the order the merge at once would have ended them: by
 * their last record (HEAD_T stays that of the last one applied), then
 * rank. */
static int by_last(const void *pa, const void *pb)
{
	const struct rc_run *a = *(struct rc_run *const *)pa;
	const struct rc_run *b = *(struct rc_run *const *)pb;
	if (a->head_t != b->head_t)
		return a->head_t < b->head_t ? -1 : 1;
	return a->st->rank < b->st->rank ? -1 : a->st->rank > b->st->rank;
}

/* The logs grew in a way the merge so far cannot take: WHAT happened
 * (in stream STREAM).  The merge stops; only a merge from the start reads
 * the logs right. */
static int late(struct rc_ctx *c, const char *what, uint32_t stream)
{
	const struct rc_stream *s = &c->streams[stream];
	const struct rc_image *im = &c->images[s->image];

	return rc_fail(c, RC_EXIT_INPUT,
		       "%s (host %s pid %u slot %u): reconstruct the logs again",
		       what, c->hosts[im->host].name, im->pid, s->slot);
}

/* Which dry runs end_dry ends. */
enum dry_which {
	DRY_ALL,      /* the end of the merge */
	DRY_KNOWN,    /* the logs final: those whose image is gone or whose
		         host has no notes of bp-logd (the merge at once
		         ended them at their last record) */
	DRY_GONE,     /* those whose image bp-logd said is gone */
};

/* End the dry runs WHICH says, in the order of their last records. */
static void end_dry(struct rc_ctx *c, struct rc_merge *g, enum dry_which which)
{
	uint32_t k = 0;

	qsort(g->dry, g->ndry, sizeof *g->dry, by_last);
	for (uint32_t i = 0; i < g->ndry; i++) {
		struct rc_run *r = g->dry[i];
		const struct rc_image *im = &c->images[r->st->image];
		int end = which == DRY_ALL || im->gone ||
			  (which == DRY_KNOWN && !host_notes(c, g, im->host));
		if (end)
			run_end(c, r);
		else
			g->dry[k++] = r;
	}
	g->ndry = k;
}

/* Images went (rc_merge_image_gone): their dry runs end now. */
static void end_gone(struct rc_ctx *c, struct rc_merge *g)
{
	g->gone = 0;
	for (uint32_t i = 0; i < g->ndry; i++)
		if (c->images[g->dry[i]->st->image].gone) {
			end_dry(c, g, DRY_GONE);
			return;
		}
}

/* The image (HOST, RING_ID, PID), or NULL. */
static struct rc_image *image_of(struct rc_ctx *c, uint32_t host,
				 uint64_t ring_id, uint32_t pid)
{
	struct rc_merge *g = c->merge;
	uint64_t idx;

	if (!g)
		return NULL;
	if (g->images_n != c->nimages) {
		rc_map_free(&g->images);
		rc_map_init(&g->images);
		for (uint32_t i = 0; i < c->nimages; i++) {
			const struct rc_image *im = &c->images[i];
			if (rc_map_put(&g->images, rc_input_image_key(im->host,
					im->ring_id, im->pid), i) < 0)
				return NULL;   /* out of memory: it ends at the end */
		}
		g->images_n = c->nimages;
	}
	if (!rc_map_get(&g->images, rc_input_image_key(host, ring_id, pid), &idx))
		return NULL;
	struct rc_image *im = &c->images[idx];
	if (im->host != host || im->ring_id != ring_id || im->pid != pid)
		return NULL;
	return im;
}

void rc_merge_image_gone(struct rc_ctx *c, uint32_t host, uint64_t ring_id,
			 uint32_t pid)
{
	struct rc_image *im = image_of(c, host, ring_id, pid);

	/* an adopted ring drained: its tracer may come back */
	if (!im || im->adopted)
		return;
	im->gone = 1;
	c->merge->gone = 1;
}

void rc_merge_image_up(struct rc_ctx *c, uint32_t host, uint64_t ring_id,
		       uint32_t pid, int adopted)
{
	struct rc_image *im = image_of(c, host, ring_id, pid);

	if (im)
		im->adopted = (uint8_t)adopted;
}

/*
 * The logs grew (or are final): ask how far, read on in the dry runs, and
 * take the streams that have blocks now.  0, or an error (rc_fail).
 */
static int resume(struct rc_ctx *c, struct rc_merge *g)
{
	int64_t w = INT64_MAX;
	int more = g->grow->fn(g->grow->arg, c, &w);
	uint32_t k = 0;

	if (more < 0)
		return more;
	c->st.merge_pauses++;
	if (g->ndry > c->st.merge_dry_max)
		c->st.merge_dry_max = g->ndry;
	g->final = !more;
	g->w = more ? w : INT64_MAX;
	for (uint32_t i = 0; i < g->ndry; i++) {
		struct rc_run *r = g->dry[i];
		if (!advance(c, r)) {
			g->dry[k++] = r;
			continue;
		}
		if (r->head_t <= g->max_applied)
			return late(c, "the logs grew by a record older than what the merge had applied",
				    (uint32_t)(r->st - c->streams));
		/* the parked detector looked at this thread while it had no
		 * next record: had the record been there, it might have
		 * parked the thread's request (park.c, rc_park_waiting) */
		if (r->peeked && (rc_park_takes_input(&r->peek_frag, &r->ev) ||
				  rc_park_takes_input(&r->thr.frag, &r->ev)))
			return late(c, "the parked detector asked for a thread's next record while the logs did not have it yet, and it takes input: the merge at once might have parked the thread's request",
				    (uint32_t)(r->st - c->streams));
		r->peeked = 0;
		c->st.merge_dry_resumed++;
		if (heap_push(g, r) < 0)
			return rc_fail(c, -ENOMEM, "out of memory in the merge");
	}
	g->ndry = k;
	if (g->final && g->ndry) {
		/* what no more records will follow ends now where the merge
		 * at once ended it at its last record, before the records
		 * applied since: no notes of bp-logd would have said more */
		g->ending_dry = 1;
		end_dry(c, g, DRY_KNOWN);
		g->ending_dry = 0;
		/* a record waiting on them (a receive on a channel whose
		 * sender stopped) is woken after records later than it: the
		 * merge at once woke it at their last record */
		if (g->woke_old)
			return late(c, "a stream that stopped while the logs grew kept a record of another waiting past later records (a receive whose sender had ended)",
				    g->woke_old_stream);
	}
	/* a stream ended (its image gone) has nothing more to read */
	for (uint32_t i = 0; i < c->nstreams; i++)
		if (c->streams[i].ended &&
		    c->streams[i].nblk != c->streams[i].ended_nblk)
			return late(c, "the logs grew by blocks of a stream that had ended",
				    i);
	if (order_streams(c, g) < 0)
		return rc_fail(c, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < g->norder; i++) {
		const struct rc_stream *s = &c->streams[g->order[i]];
		const struct rc_image *im = &c->images[s->image];
		/* its image's last stream ended, its process row written */
		if (im->began && !im->run)
			return late(c, "the logs grew by a thread of a process image whose other threads had all ended",
				    g->order[i]);
		if (s->has_first && first_t(c, g->order[i]) <= g->max_applied)
			return late(c, "the logs grew by a stream that begins before what the merge had applied",
				    g->order[i]);
	}
	return c->err ? -EIO : 0;
}

/* Merge until the end, or, while the logs grow, until the next record
 * is past the watermark or the heap is empty.  0 at the end, 1 at such
 * a pause, or an error. */
static int merge_until(struct rc_ctx *c, struct rc_merge *g)
{
	for (;;) {
		if (c->err)
			return -EIO;
		/* Streams whose first record the merge has reached start. */
		while (g->next < g->norder) {
			int64_t t = first_t(c, g->order[g->next]);
			if (g->n && t > g->heap[0]->head_t)
				break;
			/* while the logs grow: not past the watermark, and
			 * not before a dry run's next record is known */
			if (!g->final && (t > g->w || (g->n == 0 && g->ndry)))
				break;
			if (activate(c, &c->streams[g->order[g->next++]]) < 0)
				return rc_fail(c, -ENOMEM, "out of memory in the merge");
		}
		if (g->n == 0) {
			if (!g->final)
				return 1;
			if (g->ndry) {
				/* the end: what is still dry ends */
				end_dry(c, g, DRY_ALL);
				continue;
			}
			if (g->nparked == 0)
				break;
			release_oldest(c);
			continue;
		}
		struct rc_run *r = g->heap[0];
		uint64_t key = 0;

		if (!g->final && r->head_t > g->w)
			return 1;
		/* nor before the parked detector would look ahead at a
		 * record not in the logs yet (park.c) */
		if (!g->final && g->ndry && rc_park_needs_ahead(c, r)) {
			c->st.merge_ahead_waits++;
			return 1;
		}
		/* nor one whose meaning a record to come may change */
		if (!g->final && rc_model_holds(c, r, g->w)) {
			c->st.merge_hold_waits++;
			return 1;
		}
		if (!r->released && !rc_model_ready(c, r, &key)) {
			heap_remove(g, r->heap_pos);
			park(c, r, key);
			continue;
		}
		r->fresh = 0;
		if (r->head_t > g->max_applied)
			g->max_applied = r->head_t;
		rc_model_apply(c, r);
		/* Applying may have woken runs: R need not be on top. */
		if (advance(c, r)) {
			sift_down(g, r->heap_pos);
			sift_up(g, r->heap_pos);
		} else {
			heap_remove(g, r->heap_pos);
			if (exhausted(c, g, r) < 0)
				return rc_fail(c, -ENOMEM, "out of memory in the merge");
		}
		if (g->gone)
			end_gone(c, g);
	}
	return 0;
}

int rc_merge_run(struct rc_ctx *c)
{
	struct rc_merge *g = calloc(1, sizeof *g);
	int r;

	if (!g)
		return rc_fail(c, -ENOMEM, "out of memory");
	c->merge = g;
	g->grow = c->grow.fn ? &c->grow : NULL;
	g->final = !g->grow;
	g->w = INT64_MAX;
	g->max_applied = INT64_MIN;
	if (g->grow && (r = resume(c, g)) != 0)
		return r;
	if (!g->grow && order_streams(c, g) < 0)
		return rc_fail(c, -ENOMEM, "out of memory");
	/* The order read every stream and image, and pass 1 left its last
	 * logs' pages and its pairing's heap: give them back before the
	 * merge faults in its own (at 50 million events they made a peak of
	 * 115 MB as the merge began, 80 without). */
	rc_input_release(c);
	c->phase = "merging";

	while ((r = merge_until(c, g)) == 1)
		if ((r = resume(c, g)) != 0)
			return r;
	return r;
}

void rc_merge_free(struct rc_ctx *c)
{
	struct rc_merge *g = c->merge;
	if (!g)
		return;
	/* After an error some runs may still be active or parked.  (The
	 * stream table is a mapped file: its pages go back as the loop
	 * goes.) */
	for (uint32_t i = 0; i < c->nstreams; i++) {
		if ((i & 32767) == 32767)
			rc_input_tables_release(c);
		if (c->streams[i].run) {
			free(c->streams[i].run->dict);
			rc_input_run_free(c->streams[i].run);
		}
		free(c->streams[i].run);
		c->streams[i].run = NULL;
	}
	while (g->pool) {
		struct rc_run *r = g->pool;
		g->pool = r->park_next;
		free(r->dict);
		rc_input_run_free(r);
		free(r);
	}
	for (size_t i = 0; i < g->stubs.cap; i++) {
		if (!g->stubs.used[i])
			continue;
		struct rc_stub *sb = (struct rc_stub *)(uintptr_t)g->stubs.vals[i];
		while (sb) {
			struct rc_stub *nx = sb->next;
			free(sb);
			sb = nx;
		}
	}
	rc_map_free(&g->stubs);
	rc_map_free(&g->images);
	free(g->notes);
	free(g->heap);
	free(g->dry);
	free(g->order);
	rc_map_free(&g->parked);
	free(g);
	c->merge = NULL;
}
