/*
 * readlog.c - read a set of segments record by record (see readlog.h).
 *
 * The segment reader indexes every file and cuts every stream first
 * (btrace/segread.h), so bp-dump drops exactly the bytes bp-reconstruct
 * drops; then the blocks are printed in file order, each stream decoded
 * with its own time base and dictionary.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "readlog.h"

int readlog_collect(char *const *paths, int n, struct bt_sr_list *l,
		    const char **bad, bt_seg_warn_fn warn, void *ctx)
{
	*bad = NULL;
	for (int i = 0; i < n; i++) {
		int r = bt_sr_collect(l, paths[i], warn, ctx);
		if (r < 0) {
			*bad = paths[i];
			bt_sr_list_free(l);
			return r;
		}
	}
	return (int)l->n;
}

/* Damage found while indexing, reported when the printing reaches it. */
struct pending {
	uint32_t li;                 /* the file's place in the list */
	uint64_t off;
	char    *why;
};

struct run {
	const struct readlog_ops *ops;
	void *ctx;
	struct readlog_stats *st;
	struct bt_segset set;
	struct pending *pend;
	uint32_t npend, cap, next_pend, cur_li;
	struct readlog_stream *streams;
	int oom;
};

static void warn_now(struct run *r, const char *path, uint64_t off,
		     const char *why)
{
	r->st->damaged++;
	if (r->ops->warn)
		r->ops->warn(r->ctx, path, off, why);
}

static void defer_warn(void *arg, const char *path, uint64_t off,
		       const char *why)
{
	struct run *r = arg;

	(void)path;
	if (r->npend == r->cap) {
		uint32_t cap = r->cap ? r->cap * 2 : 16;
		struct pending *p = realloc(r->pend, cap * sizeof *p);
		if (!p) {
			r->oom = 1;
			return;
		}
		r->pend = p;
		r->cap = cap;
	}
	r->pend[r->npend].li = r->cur_li;
	r->pend[r->npend].off = off;
	if (!(r->pend[r->npend].why = strdup(why))) {
		r->oom = 1;
		return;
	}
	r->npend++;
}

/* Report the damage of list file LI found before file offset OFF. */
static void flush_pending(struct run *r, const char *path, uint32_t li,
			  uint64_t off)
{
	while (r->next_pend < r->npend && r->pend[r->next_pend].li == li &&
	       r->pend[r->next_pend].off < off) {
		warn_now(r, path, r->pend[r->next_pend].off,
			 r->pend[r->next_pend].why);
		r->next_pend++;
	}
}

static void warn_record(struct run *r, const char *path,
			const struct bt_sr_block *b, size_t pos, long k,
			const struct bt_event *ev)
{
	char msg[192];

	if (k <= 0)
		snprintf(msg, sizeof msg,
			 "%s record in block at %llu (stream offset %llu): rest of the block skipped",
			 k == 0 ? "truncated" : "malformed",
			 (unsigned long long)b->foff,
			 (unsigned long long)(b->soff + pos));
	else
		snprintf(msg, sizeof msg,
			 "%s record in block at %llu (stream offset %llu) refers to %u value%s the stream's dictionary does not hold: unknown",
			 bt_ev_type_name(ev->type),
			 (unsigned long long)b->foff,
			 (unsigned long long)(b->soff + pos),
			 ev->dict_miss, ev->dict_miss == 1 ? "" : "s");
	warn_now(r, path, b->foff + BT_BLK_HDR_SIZE + pos, msg);
}

/* Decode the payload of B from byte POS on into stream S. */
static void read_records(struct run *r, const char *path,
			 const struct bt_sr_block *b, size_t pos,
			 struct readlog_stream *s)
{
	while (pos < b->len) {
		struct bt_event ev;
		/* the stream's dictionary lives from a record to its
		 * thread's THREAD_EXIT: the memory follows the live threads */
		if (!s->dict && (s->dict = malloc(sizeof *s->dict)))
			bt_ev_dict_init(s->dict);
		long k = bt_ev_decode_dict(b->payload + pos, b->len - pos, &ev,
					   &s->prev_ts, s->dict);
		if (k <= 0) {
			warn_record(r, path, b, pos, k, NULL);
			break;
		}
		if (ev.type == BT_EV_THREAD_EXIT) {
			free(s->dict);   /* the next thread of the slot
					    starts with TIME */
			s->dict = NULL;
		}
		if (ev.type != BT_EV_PAD) {
			if (ev.dict_miss)
				warn_record(r, path, b, pos, k, &ev);
			s->records++;
			r->st->records++;
			r->st->type_count[ev.type < BT_EV_TYPE_MAX ?
					  ev.type : BT_EV_TYPE_MAX]++;
			if (r->ops->record)
				r->ops->record(r->ctx, s, &ev);
		}
		pos += (size_t)k;
	}
}

/* Pass block B on: what the cut keeps of it (DEDUP) or all of it. */
static void read_block(struct run *r, const char *path,
		       const struct bt_sr_block *b, int dedup)
{
	struct readlog_stream *s = &r->streams[b->stream];
	size_t skip = dedup ? b->skip : 0;
	uint64_t gap = dedup ? b->gap : 0;
	uint64_t start = b->soff + skip;

	if (!s->started) {
		s->host = r->set.hosts[b->host].name;
		s->ring_id = b->ring_id;
		s->pid = b->pid;
		s->slot = b->slot;
		s->started = 1;
		s->next_off = start;
	}
	/* Bytes lost, read again, or out of stream order (another file
	 * has the bytes between): the dictionary is not the writer's
	 * until the next TIME or remembered value. */
	if (skip < b->len &&
	    (start != s->next_off || (dedup && (b->cut & BT_SR_LOST))))
		bt_ev_dict_reset(s->dict);
	r->st->blocks++;
	r->st->dup_bytes += skip;
	r->st->gap_bytes += gap;
	if (skip == b->len && b->len)
		r->st->dup_blocks++;
	if (r->ops->block) {
		struct bt_blk_header h = {
			.len = b->len, .ring_id = b->ring_id, .pid = b->pid,
			.slot = b->slot, .gen = b->gen, .stream_off = b->soff,
			.flags = b->flags,
		};
		r->ops->block(r->ctx, path, b->foff, &h, skip, gap);
	}
	if (skip < b->len) {
		read_records(r, path, b, skip, s);
		if (b->soff + b->len > s->next_off)
			s->next_off = b->soff + b->len;
	}
}

/* Index the files of L into R's set; FILE_OF[i]: the set's file of list
 * entry i, or UINT32_MAX (then WHY[i] says why, malloc'd). */
static int index_all(struct run *r, const struct bt_sr_list *l,
		     uint32_t *file_of, char **why)
{
	for (uint32_t i = 0; i < l->n; i++) {
		const char *w = NULL;
		r->cur_li = i;
		file_of[i] = r->set.nfiles;
		int e = bt_segset_add(&r->set, l->v[i], &w);
		if (e == -ENOMEM)
			return e;
		if (e < 0) {
			file_of[i] = UINT32_MAX;
			if (!(why[i] = strdup(w ? w : strerror(-e))))
				return -ENOMEM;
		}
	}
	return r->oom ? -ENOMEM : 0;
}

int readlog_run(const struct bt_sr_list *l, int dedup,
		const struct readlog_ops *ops, void *ctx,
		struct readlog_stats *st)
{
	struct run r = { .ops = ops, .ctx = ctx, .st = st };
	uint32_t *file_of = calloc(l->n + 1, sizeof *file_of);
	char **why = calloc(l->n + 1, sizeof *why);
	uint32_t *order = NULL;
	int ret = 0;

	r.set.warn = defer_warn;
	r.set.warn_ctx = &r;
	r.set.release_every = 16u << 20;
	if (!file_of || !why || index_all(&r, l, file_of, why) < 0)
		goto oom;
	bt_segset_sort(&r.set);
	order = malloc(((size_t)r.set.nblocks + 1) * sizeof *order);
	r.streams = calloc((size_t)r.set.nstreams + 1, sizeof *r.streams);
	if (!order || !r.streams)
		goto oom;
	for (uint32_t i = 0; i < r.set.nblocks; i++)
		order[r.set.blocks[i].seq] = i;
	for (uint32_t li = 0, k = 0; li < l->n; li++) {
		uint32_t fi = file_of[li];
		if (fi == UINT32_MAX) {
			warn_now(&r, l->v[li], 0, why[li]);
			ret = -1;
			continue;
		}
		const struct bt_sr_file *f = &r.set.files[fi];
		st->files++;
		if (ops->file)
			ops->file(ctx, f->path, bt_seg_file_header(f->rd));
		for (; k < r.set.nblocks && r.set.blocks[order[k]].file == fi; k++) {
			const struct bt_sr_block *b = &r.set.blocks[order[k]];
			flush_pending(&r, f->path, li, b->foff);
			read_block(&r, f->path, b, dedup);
		}
		flush_pending(&r, f->path, li, UINT64_MAX);
		bt_seg_release(f->rd);
	}
	st->streams = r.set.nstreams;
	goto out;
oom:
	warn_now(&r, l->n ? l->v[0] : "", 0, "out of memory");
	ret = -1;
out:
	for (uint32_t i = 0; r.streams && i < r.set.nstreams; i++)
		free(r.streams[i].dict);
	for (uint32_t i = 0; i < r.npend; i++)
		free(r.pend[i].why);
	free(r.pend);
	free(r.streams);
	free(order);
	free(file_of);
	for (uint32_t i = 0; why && i < l->n; i++)
		free(why[i]);
	free(why);
	bt_segset_free(&r.set);
	return ret;
}
