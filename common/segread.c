/*
 * segread.c - a set of log segments read as streams (see btrace/segread.h):
 * which files, their blocks indexed, the blocks grouped into streams and
 * cut where they repeat bytes.  The one implementation for bp-dump,
 * bp-reconstruct and the bench tools.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "btrace/segread.h"

/* ---- which files ------------------------------------------------------- */

static int pl_add(struct bt_sr_list *l, const char *dir, const char *name)
{
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 64;
		char **v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	size_t len = (dir ? strlen(dir) + 1 : 0) + strlen(name) + 1;
	char *p = malloc(len);
	if (!p)
		return -ENOMEM;
	snprintf(p, len, "%s%s%s", dir ? dir : "", dir ? "/" : "", name);
	l->v[l->n++] = p;
	return 0;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

/* The sequence number in PATH's segment header, 0 if it does not read. */
static uint64_t header_seq(const char *path)
{
	uint8_t b[BT_SEG_HDR_SIZE];
	struct bt_seg_header h;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t seq = 0;

	if (fd < 0)
		return 0;
	if (pread(fd, b, sizeof b, 0) == (ssize_t)sizeof b &&
	    bt_seg_header_decode(b, &h) == 0)
		seq = h.seq;
	close(fd);
	return seq;
}

struct keyed {
	char    *path;
	uint64_t seq;
};

static int by_seq(const void *pa, const void *pb)
{
	const struct keyed *a = pa, *b = pb;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return strcmp(a->path, b->path);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Order the paths V[0..N) by header sequence number, then name. */
static int order_segments(char **v, uint32_t n)
{
	struct keyed *k;

	if (n < 2)
		return 0;
	if (!(k = malloc(n * sizeof *k)))
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		k[i].path = v[i];
		k[i].seq = header_seq(v[i]);
	}
	qsort(k, n, sizeof *k, by_seq);
	for (uint32_t i = 0; i < n; i++)
		v[i] = k[i].path;
	free(k);
	return 0;
}

/* Add DIR's segments (sorted), then at DEPTH 0 its subdirectories'. */
static int scan_dir(struct bt_sr_list *l, const char *dir, int depth,
		    bt_seg_warn_fn warn, void *ctx)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct bt_sr_list sub = { 0 };
	uint32_t first = l->n;
	int r = 0;

	if (!d)
		return -errno;
	while (r == 0 && (de = readdir(d)) != NULL) {
		struct stat st;
		char path[4096];

		if (de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(path, sizeof path, "%s/%s", dir,
				     de->d_name) >= sizeof path ||
		    stat(path, &st) < 0)
			continue;
		if (S_ISREG(st.st_mode) && has_suffix(de->d_name, BT_SEG_SUFFIX))
			r = pl_add(l, dir, de->d_name);
		else if (S_ISDIR(st.st_mode) && depth == 0)
			r = pl_add(&sub, dir, de->d_name);
	}
	closedir(d);
	if (r == 0)
		r = order_segments(l->v + first, l->n - first);
	if (sub.n)
		qsort(sub.v, sub.n, sizeof *sub.v, by_name);
	for (uint32_t i = 0; i < sub.n; i++) {
		if (r == 0) {
			int e = scan_dir(l, sub.v[i], depth + 1, warn, ctx);
			if (e == -ENOMEM)
				r = e;
			else if (e < 0 && warn)
				warn(ctx, sub.v[i], 0, strerror(-e));
		}
		free(sub.v[i]);
	}
	free(sub.v);
	return r;
}

int bt_sr_collect(struct bt_sr_list *l, const char *path,
		  bt_seg_warn_fn warn, void *ctx)
{
	uint32_t before = l->n;
	struct stat st;
	int r;

	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		r = scan_dir(l, path, 0, warn, ctx);
	else
		r = pl_add(l, NULL, path);
	return r < 0 ? r : (int)(l->n - before);
}

void bt_sr_list_free(struct bt_sr_list *l)
{
	for (uint32_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

/* ---- index ------------------------------------------------------------- */

static uint32_t host_of(struct bt_segset *s, const struct bt_seg_header *h)
{
	for (uint32_t i = 0; i < s->nhosts; i++)
		if (s->hosts[i].boot_id == h->boot_id &&
		    strcmp(s->hosts[i].name, h->host) == 0)
			return i;
	struct bt_sr_host *nh = realloc(s->hosts, (s->nhosts + 1) * sizeof *nh);
	if (!nh)
		return UINT32_MAX;
	s->hosts = nh;
	memset(&nh[s->nhosts], 0, sizeof *nh);
	snprintf(nh[s->nhosts].name, sizeof nh[s->nhosts].name, "%s",
		 h->host[0] ? h->host : "unknown");
	nh[s->nhosts].boot_id = h->boot_id;
	return s->nhosts++;
}

static struct bt_sr_block *new_block(struct bt_segset *s)
{
	if (s->nblocks == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 1024;
		struct bt_sr_block *nb = realloc(s->blocks, cap * sizeof *nb);
		if (!nb)
			return NULL;
		s->blocks = nb;
		s->cap = cap;
	}
	struct bt_sr_block *b = &s->blocks[s->nblocks];
	memset(b, 0, sizeof *b);
	b->seq = s->nblocks++;
	return b;
}

/* Make room for one more file (the array grows at 0, 1, 2, 4, ...). */
static int grow_files(struct bt_segset *s)
{
	if (s->nfiles & (s->nfiles - 1))
		return 0;
	struct bt_sr_file *nf = realloc(s->files,
			(s->nfiles ? s->nfiles * 2 : 1) * sizeof *nf);
	if (!nf)
		return -ENOMEM;
	s->files = nf;
	return 0;
}

int bt_segset_add(struct bt_segset *s, const char *path, const char **why)
{
	struct bt_seg_reader *rd = bt_seg_open(path, s->warn, s->warn_ctx, why);
	struct bt_blk_header h;
	const uint8_t *payload;
	uint64_t foff, checked = 0;

	if (!rd)
		return errno == ENOMEM ? -ENOMEM : -(errno ? errno : EINVAL);
	if (grow_files(s) < 0) {
		bt_seg_close(rd);
		return -ENOMEM;
	}
	struct bt_sr_file *f = &s->files[s->nfiles];
	f->path = strdup(path);
	f->rd = rd;
	f->host = host_of(s, bt_seg_file_header(rd));
	/* what the index reads: a stat(2) now could see more, bytes that
	 * came after the reader's mapping and that nothing here read */
	f->size = bt_seg_size(rd);
	if (!f->path || f->host == UINT32_MAX) {
		free(f->path);
		bt_seg_close(rd);
		return -ENOMEM;
	}
	uint32_t fi = s->nfiles++;

	while (bt_seg_next(rd, &h, &payload, &foff) == 1) {
		struct bt_sr_block *b = new_block(s);
		if (!b)
			return -ENOMEM;
		b->payload = payload;
		b->soff = h.stream_off;
		b->foff = foff;
		b->ring_id = h.ring_id;
		b->len = h.len;
		b->file = fi;
		b->host = f->host;
		b->pid = h.pid;
		b->flags = h.flags;
		b->slot = h.slot;
		b->gen = h.gen;
		s->payload_bytes += h.len;
		/* Checked: the pages can go until a reader reads them. */
		checked += h.len;
		if (s->release_every && checked >= s->release_every) {
			bt_seg_release(rd);
			checked = 0;
		}
	}
	if (s->release_every)
		bt_seg_release(rd);
	return 0;
}

/* ---- streams ----------------------------------------------------------- */

static int cmp_block(const void *pa, const void *pb)
{
	const struct bt_sr_block *a = pa, *b = pb;
#define CMP(x) do { if (a->x != b->x) return a->x < b->x ? -1 : 1; } while (0)
	CMP(host); CMP(ring_id); CMP(pid); CMP(slot); CMP(soff);
	/* Longer copy of the same bytes first: the shorter one is cut. */
	if (a->len != b->len)
		return a->len > b->len ? -1 : 1;
	CMP(seq);
#undef CMP
	return 0;
}

/*
 * Cut block B of a stream whose earlier blocks end at EXPECT (the end of
 * the furthest one; 0 before the first).  Returns the new EXPECT.
 */
static uint64_t cut_block(struct bt_sr_block *b, int first, uint64_t expect)
{
	uint64_t end = b->soff + b->len;

	b->skip = 0;
	b->gap = 0;
	b->cut = first ? BT_SR_FIRST : 0;
	if (first && b->soff > 0) {
		b->gap = b->soff;            /* its first bytes are missing */
		b->cut |= BT_SR_LOST;
	} else if (end <= expect) {
		b->skip = b->len;            /* nothing new */
		b->cut |= BT_SR_DUP;
		return expect;
	} else if (b->soff < expect) {
		b->skip = (uint32_t)(expect - b->soff);
	} else if (b->soff > expect) {
		b->gap = b->soff - expect;
		b->cut |= BT_SR_LOST;
	} else if ((b->flags & BT_BF_GAP) && !first) {
		b->cut |= BT_SR_LOST;
	}
	return end;
}

void bt_segset_sort(struct bt_segset *s)
{
	uint64_t expect = 0;

	qsort(s->blocks, s->nblocks, sizeof *s->blocks, cmp_block);
	s->nstreams = 0;
	for (uint32_t i = 0; i < s->nblocks; i++) {
		struct bt_sr_block *b = &s->blocks[i], *p = b - 1;
		int first = i == 0 || !bt_sr_same_image(p, b) ||
			    p->slot != b->slot;
		if (first) {
			s->nstreams++;
			expect = 0;
		}
		b->stream = s->nstreams - 1;
		expect = cut_block(b, first, expect);
	}
}

void bt_segset_free(struct bt_segset *s)
{
	for (uint32_t i = 0; s->files && i < s->nfiles; i++) {
		bt_seg_close(s->files[i].rd);
		free(s->files[i].path);
	}
	free(s->files);
	free(s->hosts);
	free(s->blocks);
	s->files = NULL;
	s->hosts = NULL;
	s->blocks = NULL;
	s->nfiles = s->nhosts = s->nblocks = s->nstreams = s->cap = 0;
}
