/*
 * readlog.c - read a set of segments record by record (see readlog.h).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "readlog.h"

struct list { char **v; int n, cap; };

static int push(struct list *l, const char *p)
{
	if (l->n == l->cap) {
		int cap = l->cap ? l->cap * 2 : 64;
		char **v = realloc(l->v, sizeof *v * (size_t)cap);
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	if (!(l->v[l->n] = strdup(p)))
		return -ENOMEM;
	l->n++;
	return 0;
}

static int walk(struct list *l, const char *path, int depth)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	int r = 0;

	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return push(l, path);
	if (depth > 8)
		return 0;
	if (!(d = opendir(path)))
		return -errno;
	while (r == 0 && (e = readdir(d)) != NULL) {
		char sub[PATH_MAX];
		size_t len = strlen(e->d_name);
		if (e->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(sub, sizeof sub, "%s/%s", path, e->d_name)
		    >= sizeof sub)
			continue;
		if (stat(sub, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			r = walk(l, sub, depth + 1);
		else if (len > 4 && strcmp(e->d_name + len - 4, BT_SEG_SUFFIX) == 0)
			r = push(l, sub);
	}
	closedir(d);
	return r;
}

/*
 * Files are read in the order they were created (their header's
 * monotonic time, then sequence number): a stream's bytes go to bp-logd's
 * segments, to the tracer's spool file while no bp-logd answers, then to
 * the segments of the next bp-logd, so this order keeps each stream's
 * blocks in stream order (the de-duplication below relies on it).
 */
struct keyed { char *path; uint64_t mono; uint64_t seq; };

static void file_key(struct keyed *k)
{
	uint8_t b[BT_SEG_HDR_SIZE];
	struct bt_seg_header h;
	FILE *f = fopen(k->path, "rb");

	k->mono = k->seq = 0;
	if (!f)
		return;
	if (fread(b, 1, sizeof b, f) == sizeof b && bt_seg_header_decode(b, &h) == 0) {
		k->mono = h.created_mono;
		k->seq = h.seq;
	}
	fclose(f);
}

static int by_creation(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	if (x->mono != y->mono)
		return x->mono < y->mono ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return strcmp(x->path, y->path);
}

int readlog_collect(char *const *paths, int n, char ***list,
		    const char **bad)
{
	struct list l = { NULL, 0, 0 };

	*bad = NULL;
	for (int i = 0; i < n; i++) {
		int r = walk(&l, paths[i], 0);
		if (r < 0) {
			*bad = paths[i];
			readlog_free_list(l.v, l.n);
			return r;
		}
	}
	if (l.n) {
		struct keyed *k = calloc((size_t)l.n, sizeof *k);
		if (!k) {
			readlog_free_list(l.v, l.n);
			return -ENOMEM;
		}
		for (int i = 0; i < l.n; i++) {
			k[i].path = l.v[i];
			file_key(&k[i]);
		}
		qsort(k, (size_t)l.n, sizeof *k, by_creation);
		for (int i = 0; i < l.n; i++)
			l.v[i] = k[i].path;
		free(k);
	}
	*list = l.v;
	return l.n;
}

void readlog_free_list(char **list, int n)
{
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

struct warn_ctx {
	const struct readlog_ops *ops;
	void *ctx;
	struct readlog_stats *st;
};

static void seg_warn(void *arg, const char *path, uint64_t off,
		     const char *why)
{
	struct warn_ctx *w = arg;

	w->st->damaged++;
	if (w->ops->warn)
		w->ops->warn(w->ctx, path, off, why);
}

static void count_stream(struct dd_stream *s, void *arg)
{
	(void)s;
	(*(uint64_t *)arg)++;
}

int readlog_run(char **list, int n, int dedup, const struct readlog_ops *ops,
		void *ctx, struct readlog_stats *st)
{
	struct dedup *dd = dedup_new();
	struct warn_ctx w = { ops, ctx, st };
	int ret = 0;

	if (!dd)
		return -1;
	for (int i = 0; i < n; i++) {
		const char *why;
		struct bt_seg_reader *r = bt_seg_open(list[i], seg_warn, &w, &why);
		struct bt_blk_header h;
		const uint8_t *pl;
		uint64_t off;

		if (!r) {
			seg_warn(&w, list[i], 0, why);
			ret = -1;
			continue;
		}
		st->files++;
		const struct bt_seg_header *fh = bt_seg_file_header(r);
		if (ops->file)
			ops->file(ctx, list[i], fh);
		while (bt_seg_next(r, &h, &pl, &off) == 1) {
			size_t skip = 0;
			uint64_t gap = 0;
			struct dd_stream *s = dedup_block(dd, fh->host, &h,
							  &skip, &gap);
			if (!s) {
				seg_warn(&w, list[i], off, "out of memory");
				ret = -1;
				break;
			}
			/* Bytes lost, or read again (without dedup): the
			 * dictionary is not the writer's until the next TIME
			 * or remembered value. */
			if (gap || (skip && !dedup))
				bt_ev_dict_reset(s->dict);
			if (!dedup) {
				skip = 0;
				gap = 0;
			}
			st->blocks++;
			st->dup_bytes += skip;
			st->gap_bytes += gap;
			if (skip == h.len && h.len)
				st->dup_blocks++;
			if (ops->block)
				ops->block(ctx, list[i], off, &h, skip, gap);
			size_t pos = skip;
			while (pos < h.len) {
				struct bt_event ev;
				/* the stream's dictionary lives from a
				 * record to its thread's THREAD_EXIT: the
				 * memory follows the live threads */
				if (!s->dict &&
				    (s->dict = malloc(sizeof *s->dict)))
					bt_ev_dict_init(s->dict);
				long k = bt_ev_decode_dict(pl + pos, h.len - pos,
							   &ev, &s->prev_ts,
							   s->dict);
				if (k <= 0) {
					char msg[128];
					snprintf(msg, sizeof msg,
						 "%s record in block at %llu (stream offset %llu): rest of the block skipped",
						 k == 0 ? "truncated" : "malformed",
						 (unsigned long long)off,
						 (unsigned long long)(h.stream_off + pos));
					seg_warn(&w, list[i],
						 off + BT_BLK_HDR_SIZE + pos, msg);
					break;
				}
				pos += (size_t)k;
				if (ev.type == BT_EV_THREAD_EXIT) {
					free(s->dict);   /* the next thread of the
							    slot starts with TIME */
					s->dict = NULL;
				}
				if (ev.type == BT_EV_PAD)
					continue;
				if (ev.dict_miss) {
					char msg[160];
					snprintf(msg, sizeof msg,
						 "%s record in block at %llu (stream offset %llu) refers to %u value%s the stream's dictionary does not hold: unknown",
						 bt_ev_type_name(ev.type),
						 (unsigned long long)off,
						 (unsigned long long)(h.stream_off + pos - (size_t)k),
						 ev.dict_miss,
						 ev.dict_miss == 1 ? "" : "s");
					seg_warn(&w, list[i], off + BT_BLK_HDR_SIZE +
						 pos - (size_t)k, msg);
				}
				s->records++;
				st->records++;
				st->type_count[ev.type < BT_EV_TYPE_MAX ?
					       ev.type : BT_EV_TYPE_MAX]++;
				if (ops->record)
					ops->record(ctx, s, &ev);
			}
		}
		bt_seg_close(r);
	}
	dedup_foreach(dd, count_stream, &st->streams);
	dedup_free(dd);
	return ret;
}
