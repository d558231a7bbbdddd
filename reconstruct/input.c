/*
 * input.c - find the segment files, index their blocks, group blocks into
 * streams, and read a stream's records in order (see input.h).
 *
 * A stream is (host, ring_id, pid, slot): one slot of one process image's
 * ring (ring_id 0 with bp-logd's pid is bp-logd's own notes).  Its blocks
 * can come from several files, in any order, twice (bp-logd died between
 * writing and acknowledging), or from the spool directory; sorting them by
 * stream offset and cutting overlaps back restores the one byte stream the
 * writer produced.  Missing bytes (a gap in the offsets, or a block flagged
 * BT_BF_GAP) lose the time base: records are skipped up to the next TIME.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input.h"

/* ---- discovery --------------------------------------------------------- */

struct pathlist {
	char   **v;
	uint32_t n, cap;
};

static int pl_add(struct pathlist *pl, const char *dir, const char *name)
{
	if (pl->n == pl->cap) {
		uint32_t ncap = pl->cap ? pl->cap * 2 : 64;
		char **nv = realloc(pl->v, ncap * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		pl->v = nv;
		pl->cap = ncap;
	}
	size_t l = (dir ? strlen(dir) + 1 : 0) + strlen(name) + 1;
	char *p = malloc(l);
	if (!p)
		return -ENOMEM;
	if (dir)
		snprintf(p, l, "%s/%s", dir, name);
	else
		snprintf(p, l, "%s", name);
	pl->v[pl->n++] = p;
	return 0;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Add the segments of directory DIR; at DEPTH 0 also those of its
 * subdirectories (logs/ holds one directory per host).  Returns 0, or
 * -errno when DIR itself cannot be read.
 */
static int scan_dir(struct pathlist *pl, const char *dir, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct pathlist sub = { 0 };
	uint32_t first = pl->n;
	int r = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		char path[4096];

		if (de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(path, sizeof path, "%s/%s", dir,
				     de->d_name) >= sizeof path)
			continue;
		if (stat(path, &st) < 0)
			continue;
		if (S_ISREG(st.st_mode) && has_suffix(de->d_name, BT_SEG_SUFFIX))
			r = pl_add(pl, dir, de->d_name);
		else if (S_ISDIR(st.st_mode) && depth == 0)
			r = pl_add(&sub, dir, de->d_name);
		if (r < 0)
			break;
	}
	closedir(d);
	if (pl->n > first)
		qsort(pl->v + first, pl->n - first, sizeof *pl->v, cmp_str);
	if (sub.n)
		qsort(sub.v, sub.n, sizeof *sub.v, cmp_str);
	for (uint32_t i = 0; i < sub.n; i++) {
		if (r == 0) {
			int e = scan_dir(pl, sub.v[i], depth + 1);
			if (e == -ENOMEM)
				r = e;
		}
		free(sub.v[i]);
	}
	free(sub.v);
	return r;
}

/* ---- indexing ---------------------------------------------------------- */

struct warn_ctx {
	struct rc_ctx *c;
};

static void seg_warn(void *ctx, const char *path, uint64_t off,
		     const char *reason)
{
	struct rc_ctx *c = ctx;
	rc_warn(c, path, off, "%s; the blocks before and after it are used",
		reason);
}

static uint32_t host_of(struct rc_ctx *c, const struct bt_seg_header *h)
{
	for (uint32_t i = 0; i < c->nhosts; i++)
		if (c->hosts[i].boot_id == h->boot_id &&
		    strcmp(c->hosts[i].name, h->host) == 0)
			return i;
	struct rc_host *nh = realloc(c->hosts, (c->nhosts + 1) * sizeof *nh);
	if (!nh)
		return RC_NONE;
	c->hosts = nh;
	memset(&nh[c->nhosts], 0, sizeof *nh);
	snprintf(nh[c->nhosts].name, sizeof nh[c->nhosts].name, "%s",
		 h->host[0] ? h->host : "unknown");
	nh[c->nhosts].boot_id = h->boot_id;
	return c->nhosts++;
}

/*
 * A block is checked once and read once per pass: give its pages back
 * after each (they stay in the page cache), so resident memory follows
 * the blocks being read, not the size of the logs.
 */
static void block_done(const struct rc_block *b)
{
	static uintptr_t page;
	if (!page)
		page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)b->payload + page - 1) & ~(page - 1);
	uintptr_t hi = ((uintptr_t)b->payload + b->len) & ~(page - 1);
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/*
 * block_done cannot give back the pages a block shares with its
 * neighbours, and a page fault maps in the cached pages around it (blocks
 * of other streams, often ones already read): left alone, the mapped logs'
 * resident pages grow with their size.  So every RC_MAP_RELEASE bytes of
 * blocks read, every file's pages are given back at once; the blocks
 * being read fault theirs in again from the page cache.
 */
#define RC_MAP_RELEASE (16u << 20)

/* The block, image and stream tables (mapped temporary files, see
 * build_streams) are touched by every record: a page per image or stream
 * active meanwhile.  They are given back more often than the logs. */
#define RC_SPILL_RELEASE (4u << 20)

static void release_maps(struct rc_ctx *c, uint32_t len)
{
	c->spill_read += len;
	if (c->spill_read >= RC_SPILL_RELEASE) {
		c->spill_read = 0;
		rc_spill_release(&c->blk_spill);
		rc_spill_release(&c->img_spill);
		rc_spill_release(&c->str_spill);
	}
	c->map_read += len;
	if (c->map_read < RC_MAP_RELEASE)
		return;
	c->map_read = 0;
	for (uint32_t i = 0; i < c->nfiles; i++)
		bt_seg_release(c->files[i].rd);
}

void rc_input_release(struct rc_ctx *c)
{
	c->map_read = RC_MAP_RELEASE;
	c->spill_read = RC_SPILL_RELEASE;
	release_maps(c, 0);
#ifdef __GLIBC__
	/* What the merge freed goes back too, not only to the heap. */
	malloc_trim(0);
#endif
}

static int index_file(struct rc_ctx *c, const char *path, uint32_t *cap)
{
	const char *why;
	struct bt_seg_reader *rd = bt_seg_open(path, seg_warn, c, &why);
	struct bt_blk_header h;
	const uint8_t *payload;
	uint64_t foff;

	if (!rd) {
		rc_warn(c, path, 0, "not readable as a log segment: %s; file skipped",
			why ? why : strerror(errno));
		return 0;
	}
	if ((c->nfiles & (c->nfiles - 1)) == 0) {   /* 0, 1, 2, 4, ... */
		struct rc_file *nf = realloc(c->files,
				(c->nfiles ? c->nfiles * 2 : 1) * sizeof *nf);
		if (!nf) {
			bt_seg_close(rd);
			return -ENOMEM;
		}
		c->files = nf;
	}
	struct rc_file *f = &c->files[c->nfiles];
	struct stat st;
	f->path = strdup(path);
	f->rd = rd;
	f->host = host_of(c, bt_seg_file_header(rd));
	f->size = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
	if (!f->path || f->host == RC_NONE) {
		free(f->path);
		bt_seg_close(rd);
		return -ENOMEM;
	}
	uint32_t fi = c->nfiles++;
	uint64_t checked = 0;
	c->st.files++;

	while (bt_seg_next(rd, &h, &payload, &foff) == 1) {
		if (c->nblocks == *cap) {
			uint32_t ncap = *cap ? *cap * 2 : 1024;
			struct rc_block *nb = realloc(c->blocks, ncap * sizeof *nb);
			if (!nb)
				return -ENOMEM;
			c->blocks = nb;
			*cap = ncap;
		}
		struct rc_block *b = &c->blocks[c->nblocks];
		b->payload = payload;   /* valid until bt_seg_close */
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
		b->seq = c->nblocks;
		c->nblocks++;
		c->st.blocks++;
		c->st.payload_bytes += h.len;
		/* Checked: the pages can go until the passes read them (all
		 * of the file's, with those blocks share with neighbours). */
		checked += h.len;
		if (checked >= RC_MAP_RELEASE) {
			bt_seg_release(rd);
			checked = 0;
		}
	}
	bt_seg_release(rd);
	return 0;
}

static int cmp_block(const void *pa, const void *pb)
{
	const struct rc_block *a = pa, *b = pb;
#define CMP(x) do { if (a->x != b->x) return a->x < b->x ? -1 : 1; } while (0)
	CMP(host); CMP(ring_id); CMP(pid); CMP(slot); CMP(soff);
	/* Longer copy of the same bytes first: the shorter one is skipped. */
	if (a->len != b->len)
		return a->len > b->len ? -1 : 1;
	CMP(seq);
#undef CMP
	return 0;
}

static int same_image(const struct rc_block *a, const struct rc_block *b)
{
	return a->host == b->host && a->ring_id == b->ring_id &&
	       a->pid == b->pid;
}

/* Group the sorted blocks: a stream per (host, ring, pid, slot), an image
 * per (host, ring, pid). */
static int build_streams(struct rc_ctx *c)
{
	uint32_t nimg = 0, nstr = 0;

	qsort(c->blocks, c->nblocks, sizeof *c->blocks, cmp_block);
	for (uint32_t i = 0; i < c->nblocks; i++) {
		const struct rc_block *b = &c->blocks[i], *p = b - 1;
		if (i == 0 || !same_image(p, b)) {
			nimg++;
			nstr++;
		} else if (p->slot != b->slot) {
			nstr++;
		}
	}
	/* The tables grow with the logs: they live in mapped temporary
	 * files whose pages release_maps gives back with the logs'. */
	int r;
	if ((r = rc_spill_open(c, &c->blk_spill, "blocks")) != 0 ||
	    (r = rc_spill_map(c, &c->blk_spill,
			      ((size_t)c->nblocks + 1) * sizeof *c->blocks)) != 0 ||
	    (r = rc_spill_open(c, &c->img_spill, "images")) != 0 ||
	    (r = rc_spill_map(c, &c->img_spill,
			      ((size_t)nimg + 1) * sizeof *c->images)) != 0 ||
	    (r = rc_spill_open(c, &c->str_spill, "streams")) != 0 ||
	    (r = rc_spill_map(c, &c->str_spill,
			      ((size_t)nstr + 1) * sizeof *c->streams)) != 0)
		return r;
	memcpy(c->blk_spill.p, c->blocks, (size_t)c->nblocks * sizeof *c->blocks);
	free(c->blocks);
	c->blocks = c->blk_spill.p;
	rc_spill_release(&c->blk_spill);
	c->images = c->img_spill.p;
	c->streams = c->str_spill.p;
	for (uint32_t i = 0; i < c->nblocks; i++) {
		const struct rc_block *b = &c->blocks[i], *p = b - 1;
		int new_image = i == 0 || !same_image(p, b);
		if (new_image) {
			struct rc_image *im = &c->images[c->nimages++];
			im->host = b->host;
			im->ring_id = b->ring_id;
			im->pid = b->pid;
		}
		if (new_image || p->slot != b->slot) {
			struct rc_stream *s = &c->streams[c->nstreams++];
			s->image = c->nimages - 1;
			s->slot = b->slot;
			s->blk_first = i;
			c->images[s->image].nstreams++;
		}
		c->streams[c->nstreams - 1].nblk++;
	}
	return 0;
}

int rc_input_open(struct rc_ctx *c)
{
	struct pathlist pl = { 0 };
	uint32_t cap = 0;
	int r = 0;

	for (int i = 0; i < c->opt->ninputs && r == 0; i++) {
		const char *in = c->opt->inputs[i];
		struct stat st;

		if (stat(in, &st) < 0) {
			r = rc_fail(c, RC_EXIT_INPUT,
				    "cannot read '%s': %s (give the logs/ directory bp-logd writes, a logs/<host>/ directory, or a spool directory)",
				    in, strerror(errno));
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			uint32_t before = pl.n;
			int e = scan_dir(&pl, in, 0);
			if (e == -ENOMEM) {
				r = e;
			} else if (e < 0) {
				r = rc_fail(c, RC_EXIT_INPUT,
					    "cannot read directory '%s': %s (check its permissions)",
					    in, strerror(-e));
			} else if (pl.n == before) {
				rc_warn(c, in, 0,
					"no *%s segment in this directory or its subdirectories",
					BT_SEG_SUFFIX);
			}
		} else {
			r = pl_add(&pl, NULL, in);
		}
	}
	for (uint32_t i = 0; i < pl.n; i++) {
		if (r == 0)
			r = index_file(c, pl.v[i], &cap);
		free(pl.v[i]);
	}
	free(pl.v);
	if (r == -ENOMEM)
		return rc_fail(c, -ENOMEM, "out of memory while indexing the logs");
	if (r)
		return r;
	if (c->nblocks == 0)
		return rc_fail(c, RC_EXIT_INPUT,
			       "no readable log block in the input (%u segment file%s opened): give the logs/ directory bp-logd writes, a logs/<host>/ directory, or a spool directory",
			       c->nfiles, c->nfiles == 1 ? "" : "s");
	if ((r = build_streams(c)) != 0)
		return r < 0 ? rc_fail(c, r, "out of memory while indexing the logs") : r;
	return 0;
}

void rc_input_close(struct rc_ctx *c)
{
	for (uint32_t i = 0; i < c->nfiles; i++) {
		bt_seg_close(c->files[i].rd);
		free(c->files[i].path);
	}
	free(c->files);
	c->files = NULL;
	c->nfiles = 0;
	for (uint32_t i = 0; i < c->nstrs; i++)
		free(c->strs[i]);
	free(c->strs);
	c->strs = NULL;
	c->nstrs = 0;
	rc_map_free(&c->strmap);
	if (c->blocks != c->blk_spill.p)
		free(c->blocks);
	rc_spill_close(&c->blk_spill);
	rc_spill_close(&c->img_spill);
	rc_spill_close(&c->str_spill);
	free(c->hosts);
	c->images = NULL;
	c->blocks = NULL;
	c->streams = NULL;
	c->hosts = NULL;
}

const char *rc_intern(struct rc_ctx *c, const char *s, uint32_t n)
{
	uint64_t h = rc_hash64(n, s, n);
	const char *old = rc_map_getp(&c->strmap, h);

	if (old && strlen(old) == n && memcmp(old, s, n) == 0)
		return old;
	char *p = malloc((size_t)n + 1);
	char **nv = realloc(c->strs, (c->nstrs + 1) * sizeof *nv);
	if (!p || !nv) {
		free(p);
		if (nv)
			c->strs = nv;
		return NULL;
	}
	c->strs = nv;
	memcpy(p, s, n);
	p[n] = 0;
	c->strs[c->nstrs++] = p;
	if (!old)
		rc_map_put(&c->strmap, h, (uint64_t)(uintptr_t)p);
	return p;
}

/* ---- the cursor -------------------------------------------------------- */

void rc_cur_reset(struct rc_ctx *c, struct rc_run *r, int warn)
{
	struct rc_cursor *cu = &r->cur;

	memset(cu, 0, sizeof *cu);
	cu->blk = c->blocks + r->st->blk_first;
	cu->nblk = r->st->nblk;
	cu->warn = warn;
}

static void stream_name(const struct rc_ctx *c, const struct rc_stream *s,
			char *buf, size_t len)
{
	const struct rc_image *im = &c->images[s->image];
	snprintf(buf, len, "host %s pid %u ring %016llx slot %u",
		 c->hosts[im->host].name, im->pid,
		 (unsigned long long)im->ring_id, s->slot);
}

static void lose(struct rc_ctx *c, struct rc_run *run, const char *file,
		 uint64_t off, uint64_t bytes, const char *what)
{
	struct rc_cursor *cu = &run->cur;
	const struct rc_stream *s = run->st;
	char name[160];

	cu->have_time = 0;
	if (!cu->warn)
		return;
	c->st.gaps++;
	c->st.lost_bytes += bytes;
	stream_name(c, s, name, sizeof name);
	rc_warn(c, file, off,
		"%s: %s; its records up to the next time record are skipped",
		name, what);
}

int rc_cur_next(struct rc_ctx *c, struct rc_run *s, struct rc_rec *r)
{
	struct rc_cursor *cu = &s->cur;

	for (;;) {
		if (cu->bi >= cu->nblk)
			return 0;
		const struct rc_block *b = &cu->blk[cu->bi];
		const char *path = rc_file_path(c, b->file);

		if (!cu->in_block) {
			char what[128];
			uint32_t start = 0;

			if (cu->bi == 0 && cu->expect == 0 && b->soff > 0) {
				snprintf(what, sizeof what,
					 "the stream's first %llu bytes are missing",
					 (unsigned long long)b->soff);
				lose(c, s, path, b->foff, b->soff, what);
			} else if (b->soff + b->len <= cu->expect) {
				if (cu->warn)
					c->st.dup_blocks++;
				rc_progress(c, b->len);
				cu->bi++;
				continue;
			} else if (b->soff < cu->expect) {
				start = (uint32_t)(cu->expect - b->soff);
			} else if (b->soff > cu->expect) {
				snprintf(what, sizeof what,
					 "%llu bytes missing before this block (stream offset %llu)",
					 (unsigned long long)(b->soff - cu->expect),
					 (unsigned long long)cu->expect);
				lose(c, s, path, b->foff, b->soff - cu->expect,
				     what);
			} else if ((b->flags & BT_BF_GAP) && cu->bi > 0) {
				lose(c, s, path, b->foff, 0,
				     "the writer flagged lost bytes before this block");
			}
			cu->pos = start;
			cu->in_block = 1;
			rc_progress(c, start);
		}
		if (cu->pos >= b->len) {
			cu->expect = b->soff + b->len;
			block_done(b);
			release_maps(c, b->len);
			cu->bi++;
			cu->in_block = 0;
			continue;
		}

		const uint8_t *p = b->payload + cu->pos;
		size_t avail = b->len - cu->pos;
		uint64_t body = 0;
		size_t hl = avail >= 2 ? bt_get_varint(p + 1,
				avail - 1 < 3 ? avail - 1 : 3, &body) : 0;
		uint64_t roff = b->foff + BT_BLK_HDR_SIZE + cu->pos;

		if (!hl || body > BT_EV_MAX_BODY || 1 + hl + body > avail) {
			char what[96];
			snprintf(what, sizeof what,
				 "damaged record framing in a block (%zu bytes left unread)",
				 avail);
			lose(c, s, path, roff, avail, what);
			rc_progress(c, avail);
			cu->expect = b->soff + b->len;
			cu->bi++;
			cu->in_block = 0;
			continue;
		}
		uint32_t total = (uint32_t)(1 + hl + body);
		const uint8_t *bp = p + 1 + hl;
		uint8_t type = p[0];

		cu->pos += total;
		rc_progress(c, total);
		if (type == BT_EV_PAD)
			continue;

		uint64_t v = 0;
		size_t vl = body ? bt_get_varint(bp, (size_t)body, &v) : 0;
		if (type == BT_EV_TIME) {
			if (!vl) {
				if (cu->warn)
					c->st.malformed++;
				continue;
			}
			r->prev_ts = v;
			r->ts = v;
			cu->prev_ts = v;
			cu->have_time = 1;
		} else {
			if (!cu->have_time) {
				if (cu->warn)
					c->st.lost_records++;
				continue;
			}
			r->prev_ts = cu->prev_ts;
			r->ts = cu->prev_ts + (vl ? v : 0);
			cu->prev_ts = r->ts;
		}
		r->type = type;
		r->p = p;
		r->len = total;
		r->file = b->file;
		r->file_off = roff;
		return 1;
	}
}
