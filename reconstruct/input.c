/*
 * input.c - the logs through the segment reader (btrace/segread.h: which
 * files, their blocks, streams, the cut of repeated bytes), the stream and
 * image tables, and a stream's records in order (see input.h).
 *
 * A stream is (host, ring_id, pid, slot): one slot of one process image's
 * ring (ring_id 0 with bp-logd's pid is bp-logd's own notes).  The reader
 * sorts its blocks by stream offset and marks what of each is new; the
 * cursor reads only that.  Missing bytes (a gap in the offsets, or a block
 * flagged BT_BF_GAP) lose the time base: records are skipped up to the
 * next TIME.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input.h"
#include "scan.h"
#include "merge.h"

/* ---- indexing ---------------------------------------------------------- */

/*
 * The indexing reads every block of the mapped logs once (its checksum)
 * and gives the pages back every RC_MAP_RELEASE bytes (segread.h); the
 * passes then read the blocks into their runs' own buffers (win_load),
 * never through the mapping: a page fault there mapped in the cached
 * pages around it too (the kernel's fault-around, 64 KiB), some 550
 * streams being read at once kept up to 48 MB of the logs resident at 50
 * million bp-genbig events, and that grew with the logs (BENCHMARKS.md,
 * phases 27 and 29).
 */
#define RC_MAP_RELEASE (4u << 20)

/* The block, image and stream tables (mapped temporary files, see
 * build_streams) are touched by every record: a page per image or stream
 * active meanwhile.  They are given back every RC_SPILL_RELEASE bytes of
 * blocks read. */
#define RC_SPILL_RELEASE (4u << 20)

static void release_maps(struct rc_ctx *c, uint32_t len)
{
	c->spill_read += len;
	if (c->spill_read < RC_SPILL_RELEASE)
		return;
	c->spill_read = 0;
	rc_input_tables_release(c);
}

void rc_input_tables_release(struct rc_ctx *c)
{
	rc_spill_release(&c->blk_spill);
	rc_spill_release(&c->img_spill);
	rc_spill_release(&c->str_spill);
}

static void release_logs(struct rc_ctx *c)
{
	for (uint32_t i = 0; i < c->nfiles; i++)
		bt_seg_release(c->files[i].rd);
}

void rc_input_release(struct rc_ctx *c)
{
	c->spill_read = RC_SPILL_RELEASE;
	release_maps(c, 0);
	release_logs(c);
#ifdef __GLIBC__
	/* What the merge freed goes back too, not only to the heap. */
	malloc_trim(0);
#endif
}

/* Group the sorted blocks: a stream per (host, ring, pid, slot), an image
 * per (host, ring, pid). */
static int build_streams(struct rc_ctx *c, struct bt_segset *set)
{
	uint32_t nimg = 0;

	bt_segset_sort(set);
	for (uint32_t i = 0; i < set->nblocks; i++)
		if (i == 0 || !bt_sr_same_image(&set->blocks[i - 1],
						&set->blocks[i]))
			nimg++;
	/* The tables grow with the logs: they live in mapped temporary
	 * files whose pages release_maps gives back with the logs'. */
	int r;
	if ((r = rc_spill_open(c, &c->blk_spill, "blocks")) != 0 ||
	    (r = rc_spill_map(c, &c->blk_spill,
			      ((size_t)set->nblocks + 1) * sizeof *c->blocks)) != 0 ||
	    (r = rc_spill_open(c, &c->img_spill, "images")) != 0 ||
	    (r = rc_spill_map(c, &c->img_spill,
			      ((size_t)nimg + 1) * sizeof *c->images)) != 0 ||
	    (r = rc_spill_open(c, &c->str_spill, "streams")) != 0 ||
	    (r = rc_spill_map(c, &c->str_spill,
			      ((size_t)set->nstreams + 1) * sizeof *c->streams)) != 0)
		return r;
	c->blocks = c->blk_spill.p;
	c->nblocks = set->nblocks;
	memcpy(c->blocks, set->blocks, (size_t)c->nblocks * sizeof *c->blocks);
	free(set->blocks);
	set->blocks = NULL;
	rc_spill_release(&c->blk_spill);
	c->images = c->img_spill.p;
	c->streams = c->str_spill.p;
	for (uint32_t i = 0; i < c->nblocks; i++) {
		const struct bt_sr_block *b = &c->blocks[i], *p = b - 1;
		int new_image = i == 0 || !bt_sr_same_image(p, b);
		if (new_image) {
			struct rc_image *im = &c->images[c->nimages++];
			im->host = b->host;
			im->ring_id = b->ring_id;
			im->pid = b->pid;
		}
		if (b->cut & BT_SR_FIRST) {
			struct rc_stream *s = &c->streams[c->nstreams++];
			s->image = c->nimages - 1;
			s->slot = b->slot;
			s->blk_first = i;
			s->rank = c->nstreams - 1;
			c->images[s->image].nstreams++;
		}
		c->streams[c->nstreams - 1].nblk++;
	}
	return 0;
}

/*
 * A warning of the index.  While the logs grow (a merge kept between the
 * passes of --follow, or logs growing on disk) the index is made again
 * and again, and what it warns of may pass (a block bp-logd was still
 * writing): the warnings of the last index are kept (c->iwarn) and said
 * when the run ends (rc_input_say), once.  Else said at once.
 */
static void index_warn(struct rc_ctx *c, const char *path, uint64_t off,
		       const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void index_warn(struct rc_ctx *c, const char *path, uint64_t off,
		       const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	if (!c->grow.fn && !c->opt->grow_fn) {
		rc_warn(c, path, off, "%s", text);
		return;
	}
	struct rc_iwarn *n = realloc(c->iwarn, (c->niwarn + 1) * sizeof *n);
	if (!n)
		return;
	c->iwarn = n;
	n += c->niwarn;
	n->path = path ? strdup(path) : NULL;
	n->text = strdup(text);
	n->off = off;
	n->skipped = -1;
	if (n->text && (n->path || !path))
		c->niwarn++;
	else {
		free(n->path);
		free(n->text);
	}
}

static void iwarn_free(struct rc_iwarn *w, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		free(w[i].path);
		free(w[i].text);
	}
	free(w);
}

void rc_input_say(struct rc_ctx *c)
{
	struct rc_iwarn *w = c->iwarn;
	uint32_t n = c->niwarn;

	c->iwarn = NULL;
	c->niwarn = 0;
	for (uint32_t i = 0; i < n; i++)
		rc_warn(c, w[i].path, w[i].off, "%s", w[i].text);
	iwarn_free(w, n);
}

static void seg_warn(void *ctx, const char *path, uint64_t off,
		     const char *reason)
{
	index_warn(ctx, path, off, "%s; the blocks before and after it are used",
		   reason);
}

static void dir_warn(void *ctx, const char *path, uint64_t off,
		     const char *reason)
{
	index_warn(ctx, path, off, "cannot read this directory: %s; skipped",
		   reason);
}

/* The segment files the inputs stand for, in reading order. */
static int collect(struct rc_ctx *c, struct bt_sr_list *l)
{
	for (int i = 0; i < c->opt->ninputs; i++) {
		const char *in = c->opt->inputs[i];
		struct stat st;
		int e;

		if (stat(in, &st) < 0)
			return rc_fail(c, RC_EXIT_INPUT,
				       "cannot read '%s': %s (give the logs/ directory bp-logd writes, a logs/<host>/ directory, or a spool directory)",
				       in, strerror(errno));
		e = bt_sr_collect(l, in, dir_warn, c);
		if (e == -ENOMEM)
			return e;
		if (e < 0)
			return rc_fail(c, RC_EXIT_INPUT,
				       "cannot read directory '%s': %s (check its permissions)",
				       in, strerror(-e));
		if (e == 0 && S_ISDIR(st.st_mode))
			index_warn(c, in, 0,
				   "no *%s segment in this directory or its subdirectories",
				   BT_SEG_SUFFIX);
	}
	return 0;
}

/* PATH is not read (WHY).  While the logs grow, the warning says how
 * much of it a copy needs for the same (a file shorter than a header
 * now, bp-logd or a spooling tracer creating it, has grown by when a
 * check copies it: none of it; of another, all). */
static void skipped(struct rc_ctx *c, const char *path, const char *why)
{
	uint32_t n = c->niwarn;
	struct stat st;

	index_warn(c, path, 0, "not readable as a log segment: %s; file skipped",
		   why);
	if (c->niwarn > n && stat(path, &st) == 0)
		c->iwarn[n].skipped = why == bt_seg_why_short ? 0 : st.st_size;
}

/* Index every segment the inputs stand for into SET (zeroed).  0,
 * -ENOMEM, or the rc_fail code of collect(). */
static int index_all(struct rc_ctx *c, struct bt_segset *set)
{
	struct bt_sr_list l = { 0 };
	int r;

	set->warn = seg_warn;
	set->warn_ctx = c;
	set->release_every = RC_MAP_RELEASE;
	r = collect(c, &l);
	for (uint32_t i = 0; i < l.n && r == 0; i++) {
		const char *why = NULL;
		int e = bt_segset_add(set, l.v[i], &why);
		if (e == -ENOMEM)
			r = e;
		else if (e < 0)
			skipped(c, l.v[i], why ? why : strerror(-e));
	}
	bt_sr_list_free(&l);
	return r;
}

int rc_input_open(struct rc_ctx *c)
{
	struct bt_segset set = { 0 };
	int r = index_all(c, &set);

	/* the files and hosts are the context's from here on */
	c->files = set.files;
	c->nfiles = set.nfiles;
	c->hosts = set.hosts;
	c->nhosts = set.nhosts;
	set.files = NULL;
	set.hosts = NULL;
	c->st.files += set.nfiles;
	c->st.blocks += set.nblocks;
	c->st.payload_bytes += set.payload_bytes;
	if (r == 0 && set.nblocks == 0)
		r = rc_fail(c, RC_EXIT_INPUT,
			    "no readable log block in the input (%u segment file%s opened): give the logs/ directory bp-logd writes, a logs/<host>/ directory, or a spool directory",
			    c->nfiles, c->nfiles == 1 ? "" : "s");
	if (r == 0)
		r = build_streams(c, &set);
	bt_segset_free(&set);
	release_logs(c);       /* the indexing's last pages */
	if (r < 0)       /* the spill files report their own errors */
		return rc_fail(c, r, "out of memory while indexing the logs");
	return r;
}

/* ---- more of the same logs ----------------------------------------------- */

uint64_t rc_input_image_key(uint32_t host, uint64_t ring_id, uint32_t pid)
{
	uint64_t v[2] = { ring_id, (uint64_t)host << 32 | pid };
	return rc_hash64(0x6d6f7265u, v, sizeof v);
}

/* Does block A of a fresh index (its file renumbered to FILE) say what
 * block B of the table says? */
static int same_block(const struct bt_sr_block *a, uint32_t file,
		      const struct bt_sr_block *b)
{
	return file == b->file && a->foff == b->foff && a->soff == b->soff &&
	       a->len == b->len && a->skip == b->skip && a->gap == b->gap &&
	       a->cut == b->cut && a->flags == b->flags && a->gen == b->gen;
}

/* What rc_input_more learnt of the fresh index before it changes the
 * context: for each fresh host, file and stream, its number in the
 * context (old or appended). */
struct more {
	struct bt_segset set;
	uint32_t *host_of, *file_of, *stream_of;
	uint32_t *fresh_first;        /* per context stream: its first fresh
					 block */
	uint8_t  *old;                /* per fresh block: one the context has */
	uint32_t nhosts, nfiles, nimages, nstreams;
	struct rc_map images, streams, paths;
	const char *why;
	char whybuf[512];
};

static void more_free(struct more *m)
{
	bt_segset_free(&m->set);
	free(m->host_of);
	free(m->file_of);
	free(m->stream_of);
	free(m->fresh_first);
	free(m->old);
	rc_map_free(&m->images);
	rc_map_free(&m->streams);
	rc_map_free(&m->paths);
}

/* A reason to rebuild: M->why. */
static int more_rebuild(struct more *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int more_rebuild(struct more *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->whybuf, sizeof m->whybuf, fmt, ap);
	va_end(ap);
	m->why = m->whybuf;
	return RC_MORE_REBUILD;
}

/* Number the fresh hosts and files as the context does; a file of the
 * context that the fresh index lacks, or that shrank, is a rebuild. */
static int more_files(struct rc_ctx *c, struct more *m)
{
	struct bt_segset *set = &m->set;

	m->host_of = malloc(((size_t)set->nhosts + 1) * sizeof *m->host_of);
	m->file_of = malloc(((size_t)set->nfiles + 1) * sizeof *m->file_of);
	if (!m->host_of || !m->file_of)
		return -ENOMEM;
	m->nhosts = c->nhosts;
	for (uint32_t h = 0; h < set->nhosts; h++) {
		uint32_t k = 0;
		while (k < c->nhosts &&
		       (c->hosts[k].boot_id != set->hosts[h].boot_id ||
			strcmp(c->hosts[k].name, set->hosts[h].name) != 0))
			k++;
		m->host_of[h] = k < c->nhosts ? k : m->nhosts++;
	}
	for (uint32_t f = 0; f < c->nfiles; f++) {
		const char *p = c->files[f].path;
		if (rc_map_put(&m->paths, rc_hash64(1, p, strlen(p)), f) < 0)
			return -ENOMEM;
	}
	m->nfiles = c->nfiles;
	uint32_t known = 0;
	uint8_t *taken = calloc((size_t)c->nfiles + 1, 1);
	if (!taken)
		return -ENOMEM;
	for (uint32_t f = 0; f < set->nfiles; f++) {
		const struct bt_sr_file *nf = &set->files[f];
		uint64_t old;
		if (rc_map_get(&m->paths, rc_hash64(1, nf->path, strlen(nf->path)),
			       &old) &&
		    strcmp(c->files[old].path, nf->path) == 0) {
			/* a file given twice (two inputs that name it) */
			if (taken[old]++) {
				free(taken);
				return more_rebuild(m, "%s is among the inputs twice",
						    nf->path);
			}
			if (m->host_of[nf->host] != c->files[old].host) {
				free(taken);
				return more_rebuild(m, "%s: its header names another host than before",
						    nf->path);
			}
			if (nf->size < c->files[old].size) {
				free(taken);
				return more_rebuild(m, "%s is shorter than it was (%llu bytes, %llu before)",
						    nf->path,
						    (unsigned long long)nf->size,
						    (unsigned long long)c->files[old].size);
			}
			m->file_of[f] = (uint32_t)old;
			known++;
		} else {
			m->file_of[f] = m->nfiles++;
		}
	}
	free(taken);
	if (known < c->nfiles) {
		for (uint32_t f = 0; f < c->nfiles; f++) {
			uint32_t g = 0;
			while (g < set->nfiles &&
			       strcmp(set->files[g].path, c->files[f].path) != 0)
				g++;
			if (g == set->nfiles)
				return more_rebuild(m, "%s is no longer among the logs",
						    c->files[f].path);
		}
	}
	return 0;
}

/*
 * Match the fresh streams with the context's: a known stream's fresh
 * blocks must begin with exactly the blocks it has (more may follow);
 * streams and images not known get the next numbers.
 */
static int more_streams(struct rc_ctx *c, struct more *m)
{
	struct bt_segset *set = &m->set;

	m->stream_of = malloc(((size_t)set->nstreams + 1) * sizeof *m->stream_of);
	m->fresh_first = malloc(((size_t)c->nstreams + set->nstreams + 1) *
				sizeof *m->fresh_first);
	m->old = calloc((size_t)set->nblocks + 1, 1);
	if (!m->stream_of || !m->fresh_first || !m->old)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->nimages; i++) {
		const struct rc_image *im = &c->images[i];
		if (rc_map_put(&m->images, rc_input_image_key(im->host,
					im->ring_id, im->pid), i) < 0)
			return -ENOMEM;
		if ((i & 32767) == 32767)
			rc_input_tables_release(c);
	}
	for (uint32_t i = 0; i < c->nstreams; i++) {
		if (rc_map_put(&m->streams, rc_key2(c->streams[i].image,
						    c->streams[i].slot), i) < 0)
			return -ENOMEM;
		m->fresh_first[i] = UINT32_MAX;
		if ((i & 32767) == 32767)
			rc_input_tables_release(c);
	}
	m->nimages = c->nimages;
	m->nstreams = c->nstreams;
	uint32_t last_image = UINT32_MAX;
	for (uint32_t b0 = 0, b1; b0 < set->nblocks; b0 = b1) {
		const struct bt_sr_block *fb = &set->blocks[b0];
		uint32_t host = m->host_of[fb->host], image;
		uint64_t v;

		for (b1 = b0 + 1; b1 < set->nblocks &&
		     set->blocks[b1].stream == fb->stream; b1++)
			;
		if (b0 > 0 && bt_sr_same_image(&set->blocks[b0 - 1], fb)) {
			image = last_image;
		} else if (rc_map_get(&m->images, rc_input_image_key(host,
					fb->ring_id, fb->pid), &v)) {
			const struct rc_image *im = &c->images[v];
			if (im->host != host || im->ring_id != fb->ring_id ||
			    im->pid != fb->pid)
				return more_rebuild(m, "two images share a key of the index");
			image = (uint32_t)v;
		} else {
			image = m->nimages++;
		}
		last_image = image;
		uint32_t si;
		if (image < c->nimages &&
		    rc_map_get(&m->streams, rc_key2(image, fb->slot), &v)) {
			const struct rc_stream *s = &c->streams[v];
			si = (uint32_t)v;
			/* its blocks in order, with only repeats (copies of
			 * bytes it has: a spool of what bp-logd wrote too)
			 * between them; those read nothing, and go after */
			uint32_t k = 0;
			for (uint32_t b = b0; b < b1 && k < s->nblk; b++) {
				const struct bt_sr_block *a = &set->blocks[b];
				if (same_block(a, m->file_of[a->file],
					       &c->blocks[s->blk_first + k])) {
					m->old[b] = 1;
					k++;
				} else if (!(a->cut & BT_SR_DUP)) {
					return more_rebuild(m, "%s: offset %llu: a block that comes before what a stream had read, or cuts it otherwise (a spool sent after a restart?)",
							    set->files[a->file].path,
							    (unsigned long long)a->foff);
				}
			}
			if (k < s->nblk)
				return more_rebuild(m, "a stream of %s has fewer blocks than before",
						    set->files[fb->file].path);
		} else {
			si = m->nstreams++;
		}
		m->stream_of[fb->stream] = si;
		m->fresh_first[si] = b0;
	}
	for (uint32_t i = 0; i < c->nstreams; i++)
		if (m->fresh_first[i] == UINT32_MAX)
			return more_rebuild(m, "the blocks of a stream (host %s pid %u) are in no log any more",
					    c->hosts[c->images[c->streams[i].image].host].name,
					    c->images[c->streams[i].image].pid);
	return 0;
}

/* Grow spill S, mapped, to LEN bytes (its content kept); 0 or the
 * rc_fail code. */
static int spill_grow(struct rc_ctx *c, struct rc_spill *s, size_t len)
{
	rc_spill_unmap(s);
	return rc_spill_map(c, s, len);
}

/* Make the context's tables those of M (nothing can fail but memory and
 * the temporary files: the caller treats that as fatal). */
static int more_commit(struct rc_ctx *c, struct more *m)
{
	struct bt_segset *set = &m->set;
	struct rc_spill nb = { 0 };
	uintptr_t old_streams = (uintptr_t)c->streams;
	uint32_t old_nstreams = c->nstreams;
	int r;

	/* the hosts and files, in the context's numbers */
	struct bt_sr_host *nh = realloc(c->hosts, ((size_t)m->nhosts + 1) *
					sizeof *nh);
	if (!nh)
		return -ENOMEM;
	c->hosts = nh;
	for (uint32_t h = 0; h < set->nhosts; h++)
		if (m->host_of[h] >= c->nhosts)
			nh[m->host_of[h]] = set->hosts[h];
	if (c->host_gap && m->nhosts > c->nhosts) {
		uint8_t *g = realloc(c->host_gap, m->nhosts);
		if (!g)
			return -ENOMEM;
		memset(g + c->nhosts, 0, m->nhosts - c->nhosts);
		c->host_gap = g;
	}
	c->nhosts = m->nhosts;
	struct bt_sr_file *nf = calloc((size_t)m->nfiles + 1, sizeof *nf);
	if (!nf)
		return -ENOMEM;
	for (uint32_t f = 0; f < set->nfiles; f++) {
		nf[m->file_of[f]] = set->files[f];
		nf[m->file_of[f]].host = m->host_of[set->files[f].host];
	}
	for (uint32_t f = 0; f < c->nfiles; f++) {
		bt_seg_close(c->files[f].rd);
		free(c->files[f].path);
	}
	free(c->files);
	c->files = nf;
	c->nfiles = m->nfiles;
	free(set->files);        /* the readers and paths are the context's */
	set->files = NULL;
	set->nfiles = 0;

	/* the blocks, each stream's together, in the context's numbers */
	if ((r = rc_spill_open(c, &nb, "blocks")) != 0 ||
	    (r = rc_spill_map(c, &nb, ((size_t)set->nblocks + 1) *
			      sizeof *c->blocks)) != 0 ||
	    (r = spill_grow(c, &c->img_spill, ((size_t)m->nimages + 1) *
			    sizeof *c->images)) != 0 ||
	    (r = spill_grow(c, &c->str_spill, ((size_t)m->nstreams + 1) *
			    sizeof *c->streams)) != 0) {
		rc_spill_close(&nb);
		return r;
	}
	struct bt_sr_block *blocks = nb.p;
	c->images = c->img_spill.p;
	c->streams = c->str_spill.p;
	uint32_t nblk = 0;
	for (uint32_t si = 0; si < m->nstreams; si++) {
		struct rc_stream *s = &c->streams[si];
		uint32_t b0 = m->fresh_first[si], fs = set->blocks[b0].stream;
		const struct bt_sr_block *fb = &set->blocks[b0];

		if (si >= old_nstreams) {
			uint64_t v;
			uint32_t host = m->host_of[fb->host], image;
			if (rc_map_get(&m->images, rc_input_image_key(host,
					fb->ring_id, fb->pid), &v) &&
			    c->images[v].host == host &&
			    c->images[v].ring_id == fb->ring_id &&
			    c->images[v].pid == fb->pid) {
				image = (uint32_t)v;
			} else {
				image = c->nimages++;
				struct rc_image *im = &c->images[image];
				memset(im, 0, sizeof *im);
				im->host = host;
				im->ring_id = fb->ring_id;
				im->pid = fb->pid;
				if (rc_map_put(&m->images, rc_input_image_key(host,
						fb->ring_id, fb->pid), image) < 0) {
					rc_spill_close(&nb);
					return -ENOMEM;
				}
			}
			memset(s, 0, sizeof *s);
			s->image = image;
			s->slot = fb->slot;
			c->images[image].nstreams++;
			/* a thread of an image the merge is reading: the
			 * image lasts until this stream ends too */
			if (c->images[image].run)
				c->images[image].run->live_streams++;
			c->nstreams++;
		}
		/* the blocks it had (the same, in the fresh index's
		 * mapping), then the others in the fresh order */
		s->blk_first = nblk;
		s->rank = fs;
		for (int pass = 0; pass < 2; pass++) {
			for (uint32_t b = b0; b < set->nblocks &&
			     set->blocks[b].stream == fs; b++) {
				if (m->old[b] != (pass == 0))
					continue;
				blocks[nblk] = set->blocks[b];
				blocks[nblk].file = m->file_of[set->blocks[b].file];
				blocks[nblk].host = m->host_of[set->blocks[b].host];
				blocks[nblk].stream = si;
				nblk++;
			}
		}
		s->nblk = nblk - s->blk_first;
		if ((si & 32767) == 32767)
			rc_input_tables_release(c);
	}
	rc_spill_close(&c->blk_spill);
	c->blk_spill = nb;
	c->blocks = blocks;
	c->nblocks = nblk;

	/* what reads the streams: the runs (on their streams) and the
	 * merge's stubs */
	for (uint32_t si = 0; si < old_nstreams; si++) {
		struct rc_stream *s = &c->streams[si];
		if (!s->run)
			continue;
		s->run->st = s;
		s->run->cur.blk = c->blocks + s->blk_first;
		s->run->cur.nblk = s->nblk;
	}
	rc_merge_rebase(c, old_streams);

	c->st.files = c->nfiles;
	c->st.blocks = set->nblocks;
	c->st.payload_bytes = set->payload_bytes;
	return 0;
}

int rc_input_more(struct rc_ctx *c, char *why, size_t len)
{
	struct more m;
	int r;

	memset(&m, 0, sizeof m);
	/* pass 1 reads on over what this index finds (rc_scan_more) */
	if (c->p1)
		c->p1->fresh = 0;
	rc_map_init(&m.images);
	rc_map_init(&m.streams);
	rc_map_init(&m.paths);
	if (len)
		why[0] = 0;
	/* the warnings of this index, if it is taken */
	struct rc_iwarn *old_w = c->iwarn;
	uint32_t old_n = c->niwarn;
	c->iwarn = NULL;
	c->niwarn = 0;
	r = index_all(c, &m.set);
	if (r == 0) {
		bt_segset_sort(&m.set);
		r = more_files(c, &m);
	}
	if (r == 0)
		r = more_streams(c, &m);
	if (r == 0)
		r = more_commit(c, &m);
	if (r == RC_MORE_REBUILD && len)
		snprintf(why, len, "%s", m.why);
	if (r == 0) {
		iwarn_free(old_w, old_n);
	} else {
		iwarn_free(c->iwarn, c->niwarn);
		c->iwarn = old_w;
		c->niwarn = old_n;
	}
	more_free(&m);
	release_logs(c);
	rc_input_tables_release(c);
	if (r < 0)
		return rc_fail(c, r, "out of memory while indexing the logs again");
	return r;
}

void rc_input_close(struct rc_ctx *c)
{
	struct bt_segset set = { .files = c->files, .nfiles = c->nfiles,
				 .hosts = c->hosts, .nhosts = c->nhosts };

	bt_segset_free(&set);     /* closes the files, frees files and hosts */
	iwarn_free(c->iwarn, c->niwarn);
	c->iwarn = NULL;
	c->niwarn = 0;
	c->files = NULL;
	c->nfiles = 0;
	for (uint32_t i = 0; i < c->nstrs; i++)
		free(c->strs[i]);
	free(c->strs);
	c->strs = NULL;
	c->nstrs = 0;
	rc_map_free(&c->strmap);
	rc_spill_close(&c->blk_spill);
	rc_spill_close(&c->img_spill);
	rc_spill_close(&c->str_spill);
	c->images = NULL;
	c->blocks = NULL;
	c->streams = NULL;
	c->hosts = NULL;
}

const char *rc_input_intern(struct rc_ctx *c, const char *s, uint32_t n)
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

void rc_input_cur_reset(struct rc_ctx *c, struct rc_run *r, int warn)
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

void rc_input_host_gap(struct rc_ctx *c, uint32_t host)
{
	if (!c->host_gap)
		c->host_gap = calloc(c->nhosts ? c->nhosts : 1, 1);
	if (c->host_gap && host < c->nhosts) {
		if (!c->host_gap[host])
			rc_scan_changed(c, "records of host %s are lost (a gap): its peers are in doubt now",
					c->hosts[host].name);
		c->host_gap[host] = 1;
	}
}

static void lose(struct rc_ctx *c, struct rc_run *run, const char *file,
		 uint64_t off, uint64_t bytes, const char *what)
{
	struct rc_cursor *cu = &run->cur;
	const struct rc_stream *s = run->st;
	char name[160];

	cu->have_time = 0;
	/* (the merge's thread: model.c, gap_work; pass 1 warns, and marks
	 * the host: msg.c, peer_gap) */
	run->thr.gap = 1;
	if (!cu->warn)
		return;
	rc_input_host_gap(c, c->images[s->image].host);
	c->st.gaps++;
	c->st.lost_bytes += bytes;
	stream_name(c, s, name, sizeof name);
	rc_warn(c, file, off,
		"%s: %s; its records up to the next time record are skipped",
		name, what);
}

/*
 * A run reads its block through a window of RC_WIN bytes (more for a
 * longer record) into a buffer of its own: most of the log is in 64 KiB
 * blocks, and a run per active stream holding a whole block each (some
 * 370 at once in bp-genbig's logs) kept 24 MB.  The window's place is
 * the cursor's (WIN_OFF, WIN_LEN: payload bytes in the buffer).
 */
#define RC_WIN 8192u

/* Make RUN's buffer hold at least N bytes; 0 or -ENOMEM. */
static int buf_fit(struct rc_run *run, size_t n)
{
	if (n <= run->blk_cap)
		return 0;
	size_t cap = (n + 4095) & ~(size_t)4095;
	uint8_t *nb = realloc(run->blk_buf, cap);
	if (!nb)
		return -ENOMEM;
	run->blk_buf = nb;
	run->blk_cap = (uint32_t)cap;
	return 0;
}

/*
 * Read block B's payload from POS (at least WANT bytes, up to RC_WIN,
 * never past its end) into RUN's buffer.  0; -1 with WHY set when the
 * file cannot be read there any more; -ENOMEM.
 */
static int win_load(struct rc_ctx *c, struct rc_run *run,
		    const struct bt_sr_block *b, uint32_t pos, uint32_t want,
		    const char **why)
{
	struct rc_cursor *cu = &run->cur;
	uint32_t n = b->len - pos;

	if (n > RC_WIN && n > want)
		n = want > RC_WIN ? want : RC_WIN;
	if (buf_fit(run, n) < 0) {
		*why = "out of memory";
		return -ENOMEM;
	}
	ssize_t got = bt_seg_pread(c->files[b->file].rd, run->blk_buf, n,
				   b->foff + BT_BLK_HDR_SIZE + pos);
	if (got < 0) {
		*why = "cannot be read again";
		return -1;
	}
	if ((uint32_t)got < n) {
		*why = "lies past the end of its file (shorter than when it was indexed)";
		return -1;
	}
	cu->win_off = pos;
	cu->win_len = n;
	return 0;
}

/*
 * Enter block B: read its header again with the start of its payload
 * (one read: live logs have blocks of a few hundred bytes) and check
 * that it is still the block the indexing saw; the payload read becomes
 * RUN's window.  0; -1 with WHY set; -ENOMEM.
 */
static int block_open(struct rc_ctx *c, struct rc_run *run,
		      const struct bt_sr_block *b, const char **why)
{
	struct rc_cursor *cu = &run->cur;
	uint32_t n = b->len < RC_WIN ? b->len : RC_WIN;
	struct bt_blk_header h;
	uint32_t pcrc;

	if (buf_fit(run, BT_BLK_HDR_SIZE + (size_t)n) < 0) {
		*why = "out of memory";
		return -ENOMEM;
	}
	ssize_t got = bt_seg_pread(c->files[b->file].rd, run->blk_buf,
				   BT_BLK_HDR_SIZE + (size_t)n, b->foff);
	if (got < 0) {
		*why = "cannot be read again";
		return -1;
	}
	if ((size_t)got < BT_BLK_HDR_SIZE + (size_t)n) {
		*why = "lies past the end of its file (shorter than when it was indexed)";
		return -1;
	}
	if (bt_blk_header_decode(run->blk_buf, &h, &pcrc) < 0 ||
	    h.len != b->len || h.ring_id != b->ring_id || h.pid != b->pid ||
	    h.slot != b->slot) {
		*why = "is not the block it was when indexed (the file was rewritten in place?)";
		return -1;
	}
	memmove(run->blk_buf, run->blk_buf + BT_BLK_HDR_SIZE, n);
	cu->win_off = 0;
	cu->win_len = n;
	return 0;
}

/* The bytes of the current block at POS..POS+N in RUN's window, read
 * into it if need be (N within the block); NULL on failure (WHY). */
static const uint8_t *win_at(struct rc_ctx *c, struct rc_run *run,
			     const struct bt_sr_block *b, uint32_t pos,
			     uint32_t n, int *err, const char **why)
{
	struct rc_cursor *cu = &run->cur;

	if (pos < cu->win_off || pos + n > cu->win_off + cu->win_len) {
		*err = win_load(c, run, b, pos, n, why);
		if (*err < 0)
			return NULL;
	}
	return run->blk_buf + (pos - cu->win_off);
}

int rc_input_cur_reload(struct rc_ctx *c, struct rc_run *run)
{
	struct rc_cursor *cu = &run->cur;
	const struct bt_sr_block *b = &cu->blk[cu->bi];
	uint32_t pos = (uint32_t)(run->rec.file_off - b->foff - BT_BLK_HDR_SIZE);
	const char *why = NULL;

	if (win_load(c, run, b, pos, run->rec.len, &why) < 0)
		return rc_fail(c, -EIO, "%s: the block at offset %llu %s",
			       rc_file_path(c, b->file),
			       (unsigned long long)b->foff, why);
	run->rec.p = run->blk_buf;
	return 0;
}

void rc_input_run_idle(struct rc_run *run)
{
	/* the header and a window (block_open), as buf_fit rounds it */
	if (run->blk_cap > ((BT_BLK_HDR_SIZE + RC_WIN + 4095) & ~4095u))
		rc_input_run_free(run);
}

void rc_input_run_free(struct rc_run *run)
{
	free(run->blk_buf);
	run->blk_buf = NULL;
	run->blk_cap = 0;
}

int rc_input_read_rec(struct rc_ctx *c, uint32_t file, uint64_t off,
		      uint32_t len, uint8_t *buf)
{
	if (file >= c->nfiles)
		return -1;
	ssize_t n = bt_seg_pread(c->files[file].rd, buf, len, off);
	return n == (ssize_t)len ? 0 : -1;
}

int rc_input_cur_next(struct rc_ctx *c, struct rc_run *s, struct rc_rec *r)
{
	struct rc_cursor *cu = &s->cur;

	for (;;) {
		if (cu->bi >= cu->nblk)
			return 0;
		const struct bt_sr_block *b = &cu->blk[cu->bi];
		const char *path = rc_file_path(c, b->file);

		if (!cu->in_block) {
			char what[160];

			if (b->cut & BT_SR_DUP) {
				if (cu->warn)
					c->st.dup_blocks++;
				rc_progress(c, b->len);
				cu->bi++;
				continue;
			}
			if (b->gap && (b->cut & BT_SR_FIRST)) {
				snprintf(what, sizeof what,
					 "the stream's first %llu bytes are missing",
					 (unsigned long long)b->gap);
				lose(c, s, path, b->foff, b->gap, what);
			} else if (b->gap) {
				snprintf(what, sizeof what,
					 "%llu bytes missing before this block (stream offset %llu)",
					 (unsigned long long)b->gap,
					 (unsigned long long)(b->soff - b->gap));
				lose(c, s, path, b->foff, b->gap, what);
			} else if (b->cut & BT_SR_LOST) {
				lose(c, s, path, b->foff, 0,
				     "the writer flagged lost bytes before this block");
			}
			const char *why = NULL;
			int e = block_open(c, s, b, &why);
			if (e == -ENOMEM) {
				rc_fail(c, e, "out of memory reading the logs");
				return 0;
			}
			if (e < 0) {
				snprintf(what, sizeof what,
					 "this block is skipped: it %s", why);
				lose(c, s, path, b->foff, b->len, what);
				rc_progress(c, b->len);
				cu->bi++;
				continue;
			}
			cu->pos = b->skip;
			cu->in_block = 1;
			rc_progress(c, b->skip);
		}
		if (cu->pos >= b->len) {
			release_maps(c, b->len);
			cu->bi++;
			cu->in_block = 0;
			continue;
		}

		size_t avail = b->len - cu->pos;
		const char *why = NULL;
		int err = 0;
		const uint8_t *p = win_at(c, s, b, cu->pos,
					  avail < 4 ? (uint32_t)avail : 4,
					  &err, &why);
		uint64_t body = 0;
		size_t hl = p && avail >= 2 ? bt_get_varint(p + 1,
				avail - 1 < 3 ? avail - 1 : 3, &body) : 0;
		uint64_t roff = b->foff + BT_BLK_HDR_SIZE + cu->pos;

		if (p && hl && body <= BT_EV_MAX_BODY && 1 + hl + body <= avail)
			p = win_at(c, s, b, cu->pos, (uint32_t)(1 + hl + body),
				   &err, &why);
		if (err == -ENOMEM) {
			rc_fail(c, err, "out of memory reading the logs");
			return 0;
		}
		if (!p || !hl || body > BT_EV_MAX_BODY || 1 + hl + body > avail) {
			char what[160];
			if (p)
				snprintf(what, sizeof what,
					 "damaged record framing in a block (%zu bytes left unread)",
					 avail);
			else
				snprintf(what, sizeof what,
					 "the rest of this block is skipped: it %s",
					 why);
			lose(c, s, path, roff, avail, what);
			rc_progress(c, avail);
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
