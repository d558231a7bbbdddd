/*
 * db_rows.c - the rows of the paths database: spooled during the merge,
 * inserted at its end with corrected times (see db.h and "the spool"
 * below).  The schema, the statements and the end of a run are db.c's.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "db_impl.h"
#include "map.h"
#include "patterns.h"
#include "span.h"
#include "spill.h"

#define SPOOL_BUF (1u << 20)   /* spool buffer (see "the spool") */

/* ---- binding a row ----------------------------------------------------------- */

static void bind_request(sqlite3_stmt *s, int o, const struct rc_row_request *r)
{
	b_id(s, o + 1, r->id);
	b_i(s, o + 2, r->start);
	b_i(s, o + 3, r->end);
	b_i(s, o + 4, r->end == RC_DB_NULL ? RC_DB_NULL : r->end - r->start);
	b_t(s, o + 5, r->protocol);
	b_t(s, o + 6, r->method);
	b_t(s, o + 7, r->target);
	b_i(s, o + 8, r->status);
	b_t(s, o + 9, r->client);
	b_id(s, o + 10, r->root_span);
	b_i(s, o + 11, r->dom + 1);
	b_i(s, o + 12, r->end != RC_DB_NULL);
	b_t(s, o + 13, certainty_name[r->certainty < 3 ? r->certainty : 2]);
	b_t(s, o + 14, r->reason);
	b_id(s, o + 15, (uint64_t)r->pattern);
}

static void bind_span(sqlite3_stmt *s, int o, const struct rc_row_span *r)
{
	b_id(s, o + 1, r->id);
	b_id(s, o + 2, r->req);
	b_id(s, o + 3, r->parent);
	b_t(s, o + 4, r->kind);
	b_t(s, o + 5, r->protocol);
	b_t(s, o + 6, r->name);
	b_t(s, o + 7, r->target);
	b_i(s, o + 8, r->status);
	b_t(s, o + 9, r->host);
	b_i(s, o + 10, r->pid);
	b_i(s, o + 11, r->tid);
	b_t(s, o + 12, r->exe);
	b_t(s, o + 13, r->peer);
	b_i(s, o + 14, r->start);
	b_i(s, o + 15, r->end);
	b_i(s, o + 16, r->dom + 1);
	b_id(s, o + 17, r->process_id);
	b_id(s, o + 18, r->channel_id);
	b_t(s, o + 19, certainty_name[r->certainty < 3 ? r->certainty : 2]);
	b_t(s, o + 20, r->reason);
}

static void bind_message(sqlite3_stmt *s, int o, const struct rc_row_message *r)
{
	b_id(s, o + 1, r->id);
	b_id(s, o + 2, r->req);
	b_id(s, o + 3, r->span);
	b_id(s, o + 4, r->channel_id);
	b_i(s, o + 5, r->dom + 1);
	b_id(s, o + 6, r->process_id);
	b_i(s, o + 7, r->pid);
	b_i(s, o + 8, r->tid);
	b_i(s, o + 9, r->begin);
	b_i(s, o + 10, r->ts);
	b_t(s, o + 11, r->dir);
	b_t(s, o + 12, r->kind);
	b_t(s, o + 13, r->protocol);
	b_i(s, o + 14, r->flags);
	b_i(s, o + 15, (int64_t)r->off);
	b_i(s, o + 16, (int64_t)r->len);
	b_i(s, o + 17, r->status);
	b_i(s, o + 18, r->witness);
	b_id(s, o + 19, r->peer_message);
}

/* An attrs row (spooled like the others, so attrs keep their order). */
struct rc_row_attr {
	uint64_t span, message;
	const char *key, *val;
	uint32_t len, pad;
};

/* A span_patterns row of the patterns' stream, queued by the replay
 * (rc_pat_row's columns; see "the replay in two threads"). */
struct rc_row_spanpat {
	int64_t     span, req, pattern, node, self, has_self;
	const char *label;
	uint32_t    label_len, pad;
};

static void bind_attr(sqlite3_stmt *s, int o, const struct rc_row_attr *r)
{
	b_id(s, o + 1, r->span);
	b_id(s, o + 2, r->message);
	b_t(s, o + 3, r->key);
	b_tn(s, o + 4, r->val, r->len);
}

/* (the stream's pbatch binds these values the same way: patterns.c) */
static void bind_spanpat(sqlite3_stmt *s, int o, const struct rc_row_spanpat *r)
{
	sqlite3_bind_int64(s, o + 1, r->span);
	sqlite3_bind_int64(s, o + 2, r->req);
	sqlite3_bind_int64(s, o + 3, r->pattern);
	sqlite3_bind_int64(s, o + 4, r->node);
	sqlite3_bind_text(s, o + 5, r->label, (int)r->label_len, SQLITE_STATIC);
	if (r->has_self)
		sqlite3_bind_int64(s, o + 6, r->self);
	else
		sqlite3_bind_null(s, o + 6);
}

static void bind_fragment(sqlite3_stmt *s, int o, const struct rc_row_fragment *r)
{
	b_id(s, o + 1, r->id);
	b_id(s, o + 2, r->req);
	b_id(s, o + 3, r->span);
	b_i(s, o + 4, r->dom + 1);
	b_id(s, o + 5, r->process_id);
	b_i(s, o + 6, r->pid);
	b_i(s, o + 7, r->tid);
	b_i(s, o + 8, r->start);
	b_i(s, o + 9, r->end);
	b_t(s, o + 10, r->trigger);
	b_i(s, o + 11, r->fd);
	b_id(s, o + 12, r->channel_id);
	b_i(s, o + 13, (int64_t)r->events);
}

static void bind_file(sqlite3_stmt *s, int o, const struct rc_row_file *r)
{
	b_id(s, o + 1, r->id);
	b_id(s, o + 2, r->req);
	b_id(s, o + 3, r->span);
	b_i(s, o + 4, r->dom + 1);
	b_id(s, o + 5, r->process_id);
	b_i(s, o + 6, r->pid);
	b_i(s, o + 7, r->tid);
	b_i(s, o + 8, r->ts);
	b_tn(s, o + 9, r->path, r->path_len);
	b_i(s, o + 10, r->flags);
	b_i(s, o + 11, r->result);
}

static void bind_process(sqlite3_stmt *s, int o, const struct rc_row_process *r)
{
	char ring[24];
	snprintf(ring, sizeof ring, "%016" PRIx64, r->ring_id);
	b_id(s, o + 1, r->id);
	b_t(s, o + 2, r->host);
	b_i(s, o + 3, r->dom + 1);
	b_i(s, o + 4, r->pid);
	b_i(s, o + 5, r->ppid ? (int64_t)r->ppid : RC_DB_NULL);
	b_t(s, o + 6, r->exe);
	b_t(s, o + 7, r->cmdline);
	sqlite3_bind_text(s, o + 8, ring, -1, SQLITE_TRANSIENT);
	b_i(s, o + 9, r->start);
	b_i(s, o + 10, r->end);
	b_id(s, o + 11, r->parent);
	b_t(s, o + 12, r->how);
	b_id(s, o + 13, r->req);
	b_i(s, o + 14, (int64_t)r->events);
}

static void bind_channel(sqlite3_stmt *s, int o, const struct rc_row_channel *r)
{
	b_id(s, o + 1, r->id);
	b_i(s, o + 2, (int64_t)r->conn);
	b_i(s, o + 3, r->dom + 1);
	b_id(s, o + 4, r->process_id);
	b_i(s, o + 5, r->pid);
	b_i(s, o + 6, r->fd);
	b_t(s, o + 7, r->kind);
	b_t(s, o + 8, r->role);
	b_t(s, o + 9, r->protocol);
	b_t(s, o + 10, r->local);
	b_t(s, o + 11, r->remote);
	b_t(s, o + 12, r->path);
	b_i(s, o + 13, r->ino ? (int64_t)r->ino : RC_DB_NULL);
	b_i(s, o + 14, r->peer_ino ? (int64_t)r->peer_ino : RC_DB_NULL);
	b_id(s, o + 15, r->peer);
	b_i(s, o + 16, r->traced_peer);
	b_id(s, o + 17, r->req);
	b_i(s, o + 18, r->open);
	b_i(s, o + 19, r->close);
	b_i(s, o + 20, (int64_t)r->bytes_in);
	b_i(s, o + 21, (int64_t)r->bytes_out);
	b_i(s, o + 22, (int64_t)r->msgs_in);
	b_i(s, o + 23, (int64_t)r->msgs_out);
	b_i(s, o + 24, r->lost_sync);
	b_i(s, o + 25, r->readable < 0 ? RC_DB_NULL : r->readable);
	b_t(s, o + 26, r->unreadable_reason);
}

/* ---- the spool ---------------------------------------------------------------
 *
 * Rows are not inserted during the merge: the clock corrections are known
 * only at its end, and shifting every row in place then (one UPDATE per
 * table) rewrote the whole database.  They are appended instead to an
 * unlinked temporary file next to the output, in the order they come, and
 * inserted with corrected times by rc_db_finish in that same order (attrs,
 * which have no times, come along so that they go in batches too).
 * Memory stays one buffer.  The file is a spill file (spill.h):
 * OUTPUT.tmp-PID-rows, unlinked at once.
 *
 * A spooled row is written compactly (see "the compact form" below): the
 * row structs are mostly small numbers and numbers close to the previous
 * row's (ids, times), and the same few strings.  Written whole they made
 * a file as large as the database (270 bytes a row at 5 million
 * bp-genbig events), all of it copied into the page cache and back.
 */

enum spool_kind { K_REQUEST = 1, K_SPAN, K_MESSAGE, K_FRAGMENT, K_FILE,
		  K_PROCESS, K_CHANNEL, K_ATTR,
		  /* only through the queue (below) */
		  K_SPANPAT, K_WARNING, K_CANDIDATE,
		  /* only spooled (rc_options.row_keys): rc_db_row_key */
		  K_ROWKEY, K_LAST = K_ROWKEY };

/* A warnings row and a span_candidates row, queued (see "the queue"). */
struct rc_row_warning {
	const char *file, *text;
	uint64_t    off;
};

struct rc_row_candidate {
	uint64_t    span, req;
	int64_t     chosen;
	const char *reason;
};

/* A key before (or after: RC_KEY_END) a group of rows (rc_db_row_key). */
struct rc_row_key {
	uint64_t req;
	int64_t  t;
	uint32_t dom, form;
};

/* A string field of a row struct: its pointer, and its length field or
 * -1 when NUL-terminated. */
struct sfield { size_t ptr; long len; };

#define SF(T, f) { offsetof(T, f), -1 }
#define SFL(T, f, l) { offsetof(T, f), (long)offsetof(T, l) }

static const struct sfield sf_request[] = {
	SF(struct rc_row_request, protocol), SF(struct rc_row_request, method),
	SF(struct rc_row_request, target), SF(struct rc_row_request, client) };
static const struct sfield sf_span[] = {
	SF(struct rc_row_span, kind), SF(struct rc_row_span, protocol),
	SF(struct rc_row_span, name), SF(struct rc_row_span, target),
	SF(struct rc_row_span, host), SF(struct rc_row_span, exe),
	SF(struct rc_row_span, peer) };
static const struct sfield sf_message[] = {
	SF(struct rc_row_message, dir), SF(struct rc_row_message, kind),
	SF(struct rc_row_message, protocol) };
static const struct sfield sf_fragment[] = {
	SF(struct rc_row_fragment, trigger) };
static const struct sfield sf_file[] = {
	SFL(struct rc_row_file, path, path_len) };
static const struct sfield sf_process[] = {
	SF(struct rc_row_process, host), SF(struct rc_row_process, exe),
	SF(struct rc_row_process, cmdline), SF(struct rc_row_process, how) };
static const struct sfield sf_attr[] = {
	SF(struct rc_row_attr, key), SFL(struct rc_row_attr, val, len) };
static const struct sfield sf_channel[] = {
	SF(struct rc_row_channel, kind), SF(struct rc_row_channel, role),
	SF(struct rc_row_channel, protocol), SF(struct rc_row_channel, local),
	SF(struct rc_row_channel, remote), SF(struct rc_row_channel, path),
	SF(struct rc_row_channel, unreadable_reason) };

static const struct sfield sf_spanpat[] = {
	SFL(struct rc_row_spanpat, label, label_len) };
static const struct sfield sf_warning[] = {
	SF(struct rc_row_warning, file), SF(struct rc_row_warning, text) };
static const struct sfield sf_candidate[] = {
	SF(struct rc_row_candidate, reason) };

#define NF(a) (sizeof a / sizeof a[0])

static const struct {
	const struct sfield *f;
	size_t nf, size;
} spool_desc[] = {
	[K_REQUEST] = { sf_request, NF(sf_request), sizeof(struct rc_row_request) },
	[K_SPAN] = { sf_span, NF(sf_span), sizeof(struct rc_row_span) },
	[K_MESSAGE] = { sf_message, NF(sf_message), sizeof(struct rc_row_message) },
	[K_FRAGMENT] = { sf_fragment, NF(sf_fragment), sizeof(struct rc_row_fragment) },
	[K_FILE] = { sf_file, NF(sf_file), sizeof(struct rc_row_file) },
	[K_PROCESS] = { sf_process, NF(sf_process), sizeof(struct rc_row_process) },
	[K_CHANNEL] = { sf_channel, NF(sf_channel), sizeof(struct rc_row_channel) },
	[K_ATTR] = { sf_attr, NF(sf_attr), sizeof(struct rc_row_attr) },
	[K_SPANPAT] = { sf_spanpat, NF(sf_spanpat), sizeof(struct rc_row_spanpat) },
	[K_WARNING] = { sf_warning, NF(sf_warning), sizeof(struct rc_row_warning) },
	[K_CANDIDATE] = { sf_candidate, NF(sf_candidate), sizeof(struct rc_row_candidate) },
	[K_ROWKEY] = { NULL, 0, sizeof(struct rc_row_key) },
};

union spool_row {
	struct rc_row_request  request;
	struct rc_row_span     span;
	struct rc_row_message  message;
	struct rc_row_fragment fragment;
	struct rc_row_file     file;
	struct rc_row_process  process;
	struct rc_row_channel  channel;
	struct rc_row_attr     attr;
	struct rc_row_spanpat  spanpat;
	struct rc_row_warning  warning;
	struct rc_row_candidate candidate;
	struct rc_row_key      key;
};

#define SPOOL_NULL UINT32_MAX

struct batch;

/* The spool: its file, the buffer, and the batches of the replay. */
/* The compact form's memory of the previous row of each kind: its words,
 * and its strings (the writer's copies; the reader's point into the
 * buffer, or into own[] once the buffer is refilled). */
#define SPOOL_WORDS 32
#define SPOOL_STRS  8

struct spool_last {
	uint64_t w[SPOOL_WORDS];
	const char *s[SPOOL_STRS];
	uint32_t len[SPOOL_STRS];
	uint8_t  set[SPOOL_STRS];
	char    *own[SPOOL_STRS];
	uint32_t cap[SPOOL_STRS];
};

struct rc_db_rows {
	struct rc_spill f;
	/* a process forked from the one that spooled (rc_db_rows_fork):
	 * the spool's first pre_bytes are that process's file, which it
	 * goes on writing after them; the rest are f's */
	struct rc_spill pre;
	uint64_t      pre_bytes;
	char         *buf;
	size_t        len, cap;
	uint64_t      bytes;         /* written (pre's and f's) */
	struct spool_last *last;     /* per kind: writing, then reading */
	struct batch *batch;         /* replay: rows waiting, per kind */
	struct dbq   *q;             /* the queue, while its thread runs */
	/* a window pass: the requests named ("requests no row names"),
	 * the channel rows that name one if the bound keeps them, the
	 * key the rows spooled since came after, the requests left out */
	struct rc_bits named;
	struct chkey { uint64_t req; int64_t t; uint32_t dom; } *chk;
	size_t        nchk, capchk;
	struct rc_row_key key;
	int           names_lost;    /* a name not kept (no memory) */
	uint64_t      gone_n, gone_t;
	int64_t       gone_first, gone_last;
};

static void batch_free(struct rc_db_rows *w);
static void last_free(struct rc_db_rows *w);

int rc_db_rows_open(struct rc_ctx *c)
{
	struct rc_db *d = c->db;
	struct rc_db_rows *w = calloc(1, sizeof *w);

	if (!w)
		return rc_fail(c, RC_EXIT_OUTPUT, "out of memory");
	d->rows = w;
	if (rc_spill_open(c, &w->f, "rows") != 0) {
		d->failed = 1;
		return RC_EXIT_OUTPUT;
	}
	w->buf = malloc(SPOOL_BUF);
	w->last = calloc(K_LAST + 1, sizeof *w->last);
	if (!w->buf || !w->last)
		return rc_fail(c, RC_EXIT_OUTPUT, "out of memory");
	w->cap = SPOOL_BUF;
	return 0;
}

void rc_db_rows_free(struct rc_db *d)
{
	struct rc_db_rows *w = d->rows;
	if (!w)
		return;
	rc_db_queue_abort(d);
	rc_spill_close(&w->f);
	rc_spill_close(&w->pre);
	batch_free(w);
	last_free(w);
	free(w->named.w);
	free(w->chk);
	free(w->buf);
	free(w);
	d->rows = NULL;
}

static void spool_error(struct rc_ctx *c, const char *what, int e)
{
	struct rc_db *d = c->db;
	if (d->failed)
		return;
	d->failed = 1;
	rc_fail(c, RC_EXIT_OUTPUT, "cannot %s the temporary rows next to %s (%s): check free space and permissions of its directory",
		what, c->opt->output, strerror(e));
}

int rc_db_rows_fork(struct rc_ctx *c)
{
	struct rc_db_rows *w = c->db->rows;
	if (!w || w->pre.open)
		return rc_fail(c, RC_EXIT_OUTPUT, "the row spool forked twice");
	w->pre = w->f;
	w->pre_bytes = w->bytes;
	memset(&w->f, 0, sizeof w->f);
	if (rc_spill_open(c, &w->f, "rows") != 0) {
		c->db->failed = 1;
		return RC_EXIT_OUTPUT;
	}
	return 0;
}

/* Read N bytes of the spool at OFF (its own file's, or the first
 * pre_bytes from the process it was forked from); 0 or -1. */
static int spool_read(struct rc_ctx *c, struct rc_db_rows *w, char *buf,
		      size_t n, uint64_t off)
{
	if (off < w->pre_bytes) {
		size_t k = n;
		if (off + k > w->pre_bytes)
			k = (size_t)(w->pre_bytes - off);
		if (rc_spill_read(c, &w->pre, buf, k, off) != 0)
			return -1;
		buf += k;
		n -= k;
		off += k;
	}
	if (n && rc_spill_read(c, &w->f, buf, n, off - w->pre_bytes) != 0)
		return -1;
	return 0;
}

static int spool_flush(struct rc_ctx *c)
{
	struct rc_db_rows *w = c->db->rows;
	if (rc_spill_write(c, &w->f, w->buf, w->len,
			   w->bytes - w->pre_bytes) != 0) {
		c->db->failed = 1;
		return -1;
	}
	w->bytes += w->len;
	w->len = 0;
	return 0;
}

static int spool_reserve(struct rc_ctx *c, size_t n)
{
	struct rc_db_rows *w = c->db->rows;
	if (w->len + n <= w->cap)
		return 0;
	if (w->len && spool_flush(c) < 0)
		return -1;
	if (n > w->cap) {
		char *b = realloc(w->buf, n);
		if (!b) {
			spool_error(c, "buffer", ENOMEM);
			return -1;
		}
		w->buf = b;
		w->cap = n;
	}
	return 0;
}

static const char *sf_str(const void *row, const struct sfield *f,
			  uint32_t *len)
{
	const char *s;
	memcpy(&s, (const char *)row + f->ptr, sizeof s);
	if (!s)
		return NULL;
	if (f->len >= 0)
		memcpy(len, (const char *)row + f->len, sizeof *len);
	else
		*len = (uint32_t)strlen(s);
	return s;
}

/* The bytes of ROW (kind K) spooled; its strings' lengths into LEN. */
static size_t spool_size(enum spool_kind k, const void *row, uint32_t *len)
{
	const struct sfield *f = spool_desc[k].f;
	size_t need = 8 + spool_desc[k].size;
	for (size_t i = 0; i < spool_desc[k].nf; i++) {
		if (sf_str(row, &f[i], &len[i]))
			need += 4 + (size_t)len[i] + 1;
		else
			need += 4;
	}
	return need;
}

/* Write ROW (kind K, NEED bytes, LEN from spool_size) at P. */
static void spool_encode(char *p, enum spool_kind k, const void *row,
			 size_t need, uint32_t *len)
{
	const struct sfield *f = spool_desc[k].f;
	size_t nf = spool_desc[k].nf, size = spool_desc[k].size;
	uint32_t n32 = (uint32_t)need, k32 = k;
	memcpy(p, &n32, 4);
	memcpy(p + 4, &k32, 4);
	memcpy(p + 8, row, size);
	p += 8 + size;
	for (size_t i = 0; i < nf; i++) {
		const char *s = sf_str(row, &f[i], &len[i]);
		uint32_t l = s ? len[i] : SPOOL_NULL;
		memcpy(p, &l, 4);
		p += 4;
		if (s) {
			memcpy(p, s, len[i]);
			p[len[i]] = 0;
			p += len[i] + 1;
		}
	}
}

/* ---- the compact form -----------------------------------------------------------
 *
 * A spooled record: a 4-byte header (the record's length, header included,
 * in the low 28 bits, its kind in the high 4), then each 8-byte word of
 * the row struct but its string pointers, as the zigzag varint of its
 * difference from the same word of the kind's previous row (ids and times
 * are close to the last ones, most of the rest is the same: a byte or
 * two each), then each string as a varint tag: 0 NULL, 1 the previous
 * row's string of that field again, else its length + 2, followed by its
 * bytes and a NUL.  Every word is restored exactly, padding included.
 */
#define SPOOL_LEN_MASK 0x0fffffffu

_Static_assert(sizeof(union spool_row) <= SPOOL_WORDS * 8 &&
	       sizeof(union spool_row) % 8 == 0, "a row struct is whole words");
_Static_assert(K_LAST < 16, "a kind fits in 4 bits");

/* The words of kind K's struct that are string pointers. */
static uint32_t str_words(enum spool_kind k)
{
	uint32_t m = 0;
	for (size_t i = 0; i < spool_desc[k].nf; i++)
		m |= 1u << (spool_desc[k].f[i].ptr / 8);
	return m;
}

/* Remember S (LEN bytes) as kind L's string I: the writer's copy. */
static void last_keep(struct spool_last *l, size_t i, const char *s,
		      uint32_t len)
{
	if (len + 1 > l->cap[i]) {
		char *n = realloc(l->own[i], (size_t)len + 1);
		if (!n) {
			l->set[i] = 0;       /* not remembered: written again */
			return;
		}
		l->own[i] = n;
		l->cap[i] = len + 1;
	}
	memcpy(l->own[i], s, len);
	l->own[i][len] = 0;
	l->s[i] = l->own[i];
	l->len[i] = len;
	l->set[i] = 1;
}

static void last_free(struct rc_db_rows *w)
{
	if (!w->last)
		return;
	for (uint32_t k = 0; k <= K_LAST; k++)
		for (size_t i = 0; i < SPOOL_STRS; i++)
			free(w->last[k].own[i]);
	free(w->last);
	w->last = NULL;
}

static void note_names(struct rc_ctx *c, struct rc_db_rows *w,
		       enum spool_kind k, const void *row);

static void spool_put(struct rc_ctx *c, enum spool_kind k, const void *row)
{
	struct rc_db *d = c->db;

	if (!d || d->failed)
		return;
	struct rc_db_rows *w = d->rows;
	if (c->opt->rows_from_ns || c->opt->row_keys)
		note_names(c, w, k, row);
	const struct sfield *f = spool_desc[k].f;
	size_t nf = spool_desc[k].nf, nw = spool_desc[k].size / 8;
	const char *str[SPOOL_STRS];
	uint32_t len[SPOOL_STRS], skip = str_words(k);
	size_t need = 4 + nw * 10;

	for (size_t i = 0; i < nf; i++) {
		str[i] = sf_str(row, &f[i], &len[i]);
		need += 5 + (str[i] ? (size_t)len[i] + 1 : 0);
	}
	if (need > SPOOL_LEN_MASK) {
		spool_error(c, "buffer", E2BIG);
		return;
	}
	if (spool_reserve(c, need) < 0)
		return;

	struct spool_last *l = &w->last[k];
	uint8_t *p0 = (uint8_t *)w->buf + w->len, *p = p0 + 4;
	for (size_t i = 0; i < nw; i++) {
		uint64_t v;
		if (skip >> i & 1)
			continue;
		memcpy(&v, (const char *)row + 8 * i, 8);
		p += bt_put_varint(p, bt_zigzag((int64_t)(v - l->w[i])));
		l->w[i] = v;
	}
	for (size_t i = 0; i < nf; i++) {
		if (!str[i]) {
			*p++ = 0;
			continue;
		}
		if (l->set[i] && l->len[i] == len[i] &&
		    memcmp(l->s[i], str[i], len[i]) == 0) {
			*p++ = 1;
			continue;
		}
		p += bt_put_varint(p, (uint64_t)len[i] + 2);
		memcpy(p, str[i], len[i]);
		p[len[i]] = 0;
		p += len[i] + 1;
		last_keep(l, i, str[i], len[i]);
	}
	uint32_t h = (uint32_t)(p - p0) | (uint32_t)k << 28;
	memcpy(p0, &h, 4);
	w->len += (size_t)(p - p0);
}

/* The row of the compact record at P (LEN bytes, kind K) into U, its
 * strings pointing into P or at the kind's previous ones; 0, or -1 when
 * it does not read back (never, but for a damaged file). */
static int spool_decode(struct rc_db_rows *w, uint32_t k, const uint8_t *p,
			size_t len, union spool_row *u)
{
	const uint8_t *end = p + len;
	const struct sfield *f = spool_desc[k].f;
	size_t nf = spool_desc[k].nf, nw = spool_desc[k].size / 8;
	uint32_t skip = str_words(k);
	struct spool_last *l = &w->last[k];

	p += 4;
	for (size_t i = 0; i < nw; i++) {
		uint64_t z;
		size_t n;
		if (skip >> i & 1)
			continue;
		if (!(n = bt_get_varint(p, (size_t)(end - p), &z)))
			return -1;
		p += n;
		l->w[i] += (uint64_t)bt_unzigzag(z);
		memcpy((char *)u + 8 * i, &l->w[i], 8);
	}
	for (size_t i = 0; i < nf; i++) {
		uint64_t t;
		size_t n;
		const char *s = NULL;
		if (!(n = bt_get_varint(p, (size_t)(end - p), &t)))
			return -1;
		p += n;
		if (t == 1) {
			if (!l->set[i])
				return -1;
			s = l->s[i];
		} else if (t >= 2) {
			if (t - 2 >= (uint64_t)(end - p))
				return -1;
			s = (const char *)p;
			l->s[i] = s;
			l->len[i] = (uint32_t)(t - 2);
			l->set[i] = 1;
			p += t - 2 + 1;
		}
		memcpy((char *)u + f[i].ptr, &s, sizeof s);
	}
	return p == end ? 0 : -1;
}

/* Before the replay's buffer is refilled: the previous strings that
 * point into it are copied out (the rows waiting were flushed). */
static int last_own(struct rc_db_rows *w)
{
	for (uint32_t k = 0; k <= K_LAST; k++) {
		struct spool_last *l = &w->last[k];
		for (size_t i = 0; i < SPOOL_STRS; i++) {
			if (!l->set[i] || l->s[i] == l->own[i])
				continue;
			const char *s = l->s[i];
			uint32_t n = l->len[i];
			l->set[i] = 0;
			last_keep(l, i, s, n);
			if (!l->set[i])
				return -1;
		}
	}
	return 0;
}


/*
 * Replayed rows go in BATCH rows per INSERT statement: one statement keeps
 * its table's cursor open from row to row (rows mostly come in rowid
 * order, each lands next to the last), where a statement per row seeks
 * from the root and sets up and tears down its program each time.
 * Strings point into the spool buffer: batches are flushed before it is
 * refilled.
 */
#define BATCH 64

struct batch {
	union spool_row row[BATCH];
	unsigned n;
	sqlite3_stmt *full;      /* BATCH rows */
};

static const struct {
	enum stmt_id id;
	const char *table;
} kind_stmt[] = {
	[K_REQUEST] = { S_REQUEST, "requests" },
	[K_SPAN] = { S_SPAN, "spans" },
	[K_MESSAGE] = { S_MESSAGE, "messages" },
	[K_FRAGMENT] = { S_FRAGMENT, "fragments" },
	[K_FILE] = { S_FILE, "files" },
	[K_PROCESS] = { S_PROCESS, "processes" },
	[K_CHANNEL] = { S_CHANNEL, "channels" },
	[K_ATTR] = { S_ATTR, "attrs" },
	[K_SPANPAT] = { S_SPAN_PATTERN, "span_patterns" },
};

#define NKIND (sizeof kind_stmt / sizeof kind_stmt[0])

/* "INSERT INTO t VALUES(?,...),(?,...)..." for N rows; *NCOLS its columns. */
static sqlite3_stmt *prep_rows(struct rc_ctx *c, enum stmt_id id, unsigned n,
			       int *ncols)
{
	const char *one = rc_db_stmt_sql[id];
	const char *v = strstr(one, "VALUES");
	const char *tuple = strchr(v, '(');
	size_t tl = strlen(tuple), hl = (size_t)(tuple - one);
	char *sql = malloc(hl + n * (tl + 1) + 1);
	sqlite3_stmt *st = NULL;
	int k = 0;

	for (const char *q = tuple; *q; q++)
		k += *q == '?';
	*ncols = k;
	if (!sql) {
		rc_fail(c, RC_EXIT_OUTPUT, "out of memory");
		c->db->failed = 1;
		return NULL;
	}
	memcpy(sql, one, hl);
	char *p = sql + hl;
	for (unsigned i = 0; i < n; i++) {
		if (i)
			*p++ = ',';
		memcpy(p, tuple, tl);
		p += tl;
	}
	*p = 0;
	if (sqlite3_prepare_v3(c->db->h, sql, -1, SQLITE_PREPARE_PERSISTENT,
			       &st, NULL) != SQLITE_OK) {
		rc_db_error(c, "prepare");
		st = NULL;
	}
	free(sql);
	return st;
}

static void bind_row(sqlite3_stmt *s, int o, uint32_t k,
		     const union spool_row *u)
{
	switch (k) {
	case K_REQUEST: bind_request(s, o, &u->request); break;
	case K_SPAN: bind_span(s, o, &u->span); break;
	case K_MESSAGE: bind_message(s, o, &u->message); break;
	case K_FRAGMENT: bind_fragment(s, o, &u->fragment); break;
	case K_FILE: bind_file(s, o, &u->file); break;
	case K_PROCESS: bind_process(s, o, &u->process); break;
	case K_CHANNEL: bind_channel(s, o, &u->channel); break;
	case K_ATTR: bind_attr(s, o, &u->attr); break;
	case K_SPANPAT: bind_spanpat(s, o, &u->spanpat); break;
	}
}

/* The request rows of batch B go in (rc_db.req_n, req_first, req_last). */
static void req_seen(struct rc_db *d, const struct batch *b, uint32_t k)
{
	if (k != K_REQUEST)
		return;
	for (unsigned i = 0; i < b->n; i++) {
		int64_t t = b->row[i].request.start;
		if (t == RC_DB_NULL)
			continue;
		if (!d->req_n || t < d->req_first)
			d->req_first = t;
		if (!d->req_n || t > d->req_last)
			d->req_last = t;
		d->req_n++;
	}
}

static void batch_flush(struct rc_ctx *c, uint32_t k)
{
	struct rc_db *d = c->db;
	struct batch *b = &d->rows->batch[k];
	int ncols;

	if (!b->n || d->failed) {
		b->n = 0;
		return;
	}
	req_seen(d, b, k);
	if (b->n == BATCH) {
		if (!b->full)
			b->full = prep_rows(c, kind_stmt[k].id, BATCH, &ncols);
		if (b->full) {
			int nc = sqlite3_bind_parameter_count(b->full) / BATCH;
			for (unsigned i = 0; i < BATCH; i++)
				bind_row(b->full, (int)i * nc, k, &b->row[i]);
			step(c, b->full, kind_stmt[k].table);
		}
	} else {
		/* a part batch (the buffer is refilled): a row at a time */
		sqlite3_stmt *s = d->st[kind_stmt[k].id];
		for (unsigned i = 0; i < b->n && !d->failed; i++) {
			bind_row(s, 0, k, &b->row[i]);
			step(c, s, kind_stmt[k].table);
		}
	}
	b->n = 0;
}

static void batch_flush_all(struct rc_ctx *c)
{
	for (uint32_t k = 1; k < NKIND; k++)
		batch_flush(c, k);
}

static void batch_add(struct rc_ctx *c, uint32_t k, const union spool_row *u)
{
	struct batch *b = &c->db->rows->batch[k];
	b->row[b->n++] = *u;
	if (b->n == BATCH)
		batch_flush(c, k);
}

static void batch_free(struct rc_db_rows *w)
{
	if (!w->batch)
		return;
	for (uint32_t k = 1; k < NKIND; k++)
		sqlite3_finalize(w->batch[k].full);
	free(w->batch);
	w->batch = NULL;
}

/* The times of a row kind, shifted by its domain's correction when it
 * is inserted: NT int64_t fields T (RC_DB_NULL stays), domain DOM. */
static const struct {
	int    nt;
	size_t dom, t[2];
} time_desc[] = {
#define TD(T, a, b) { 2, offsetof(T, dom), { offsetof(T, a), offsetof(T, b) } }
	[K_REQUEST] = TD(struct rc_row_request, start, end),
	[K_SPAN] = TD(struct rc_row_span, start, end),
	[K_MESSAGE] = TD(struct rc_row_message, begin, ts),
	[K_FRAGMENT] = TD(struct rc_row_fragment, start, end),
	[K_FILE] = { 1, offsetof(struct rc_row_file, dom),
		     { offsetof(struct rc_row_file, ts), 0 } },
	[K_PROCESS] = TD(struct rc_row_process, start, end),
	[K_CHANNEL] = TD(struct rc_row_channel, open, close),
	[K_ATTR] = { 0, 0, { 0, 0 } },
	[K_SPANPAT] = { 0, 0, { 0, 0 } },
	[K_WARNING] = { 0, 0, { 0, 0 } },
	[K_CANDIDATE] = { 0, 0, { 0, 0 } },
	[K_ROWKEY] = { 0, 0, { 0, 0 } },
#undef TD
};

static void shift_times(const struct rc_ctx *c, uint32_t k, void *row)
{
	uint32_t dom;
	memcpy(&dom, (char *)row + time_desc[k].dom, sizeof dom);
	for (int i = 0; i < time_desc[k].nt; i++) {
		int64_t t;
		char *f = (char *)row + time_desc[k].t[i];
		memcpy(&t, f, sizeof t);
		if (t != RC_DB_NULL)
			t += c->doms[dom].corr;
		memcpy(f, &t, sizeof t);
	}
}

/* The row of the queued record at P (its strings point into P) into U;
 * its kind. */
static uint32_t spool_row_of(const char *p, union spool_row *u)
{
	uint32_t k;

	memcpy(&k, p + 4, 4);
	const struct sfield *f = spool_desc[k].f;
	memcpy(u, p + 8, spool_desc[k].size);
	p += 8 + spool_desc[k].size;
	for (size_t i = 0; i < spool_desc[k].nf; i++) {
		uint32_t l;
		const char *s = NULL;
		memcpy(&l, p, 4);
		p += 4;
		if (l != SPOOL_NULL) {
			s = p;
			p += l + 1;
		}
		memcpy((char *)u + f[i].ptr, &s, sizeof s);
	}
	return k;
}

/* The clock domain of row U (kind K) is one of the run's. */
static int dom_ok(const struct rc_ctx *c, uint32_t k, const void *u)
{
	uint32_t dom;
	if (!time_desc[k].nt)
		return 1;
	memcpy(&dom, (const char *)u + time_desc[k].dom, sizeof dom);
	return dom < c->ndoms;
}

/* A span or request row about to go in, with its final times: to the
 * patterns' stream (patterns.h), which gives a request its pattern. */
static void pat_row(struct rc_pat_stream *ps, uint32_t k, union spool_row *u)
{
	if (!ps)
		return;
	if (k == K_SPAN) {
		const struct rc_row_span *r = &u->span;
		struct rc_pat_span s = {
			.id = r->id, .req = r->req, .parent = r->parent,
			.kind = r->kind, .protocol = r->protocol,
			.name = r->name, .target = r->target, .exe = r->exe,
			.start = r->start, .end = r->end,
			.has_start = r->start != RC_DB_NULL,
			.has_end = r->end != RC_DB_NULL,
		};
		rc_pat_stream_span(ps, &s);
	} else if (k == K_REQUEST) {
		u->request.pattern = rc_pat_stream_request(ps, u->request.id,
							   u->request.root_span);
	}
}

static int q_start(struct rc_ctx *c, int spanpat);
static int q_put(struct rc_ctx *c, enum spool_kind k, const void *row);

/* The patterns' stream's span_patterns rows, during a replay in two
 * threads: to the queue (rc_pat_stream_emit). */
static void q_spanpat(void *arg, const struct rc_pat_row *r)
{
	struct rc_row_spanpat row = {
		.span = r->span, .req = r->req, .pattern = r->pattern,
		.node = r->node, .self = r->self, .has_self = r->has_self,
		.label = r->label, .label_len = r->label_len,
	};
	q_put(arg, K_SPANPAT, &row);
}

/* A warnings or span_candidates row spooled (rc_options.db_later),
 * inserted by the thread that reads the spool back. */
static void note_insert(struct rc_ctx *c, uint32_t k, const union spool_row *u)
{
	struct rc_db *d = c->db;
	if (k == K_WARNING) {
		const struct rc_row_warning *r = &u->warning;
		sqlite3_stmt *s = d->st[S_WARNING];
		b_t(s, 1, r->file);
		b_i(s, 2, r->file ? (int64_t)r->off : RC_DB_NULL);
		b_t(s, 3, r->text);
		step(c, s, "warnings");
	} else {
		const struct rc_row_candidate *r = &u->candidate;
		sqlite3_stmt *s = d->st[S_CANDIDATE];
		b_id(s, 1, r->span);
		b_id(s, 2, r->req);
		b_i(s, 3, r->chosen);
		b_t(s, 4, r->reason);
		step(c, s, "span_candidates");
	}
}

void rc_db_spool_warning(struct rc_ctx *c, const char *file, uint64_t off,
			 const char *text)
{
	struct rc_row_warning r = { file, text, off };
	spool_put(c, K_WARNING, &r);
}

void rc_db_spool_candidate(struct rc_ctx *c, uint64_t span, uint64_t req,
			   int chosen, const char *reason)
{
	struct rc_row_candidate r = { span, req, chosen, reason };
	spool_put(c, K_CANDIDATE, &r);
}

void rc_db_row_key(struct rc_ctx *c, enum rc_key_form form, uint64_t req,
		   uint32_t dom, int64_t t)
{
	struct rc_row_key r = { req, t, dom, form };
	spool_put(c, K_ROWKEY, &r);
}

/*
 * The replay's keys (rc_options.row_keys): the groups of rows a merge
 * with rows_from_ns as the replay has it now would have left out are
 * left out, judged as that merge judges them (span.c): by the root's
 * start, a request's root once ended by its request's row (spooled
 * before its later rows: the root's start and clock domain, as they
 * were, before any correction), a channel by when it closed.  Each
 * group left out is counted as the merge counts it, and each request's
 * row is judged as the root's end is (skip_done_mark), so the stats
 * (follow_rows_skipped, follow_rows_skip_max_ns) are that merge's.  A
 * request's judgement is kept (two bits per request id: its row came,
 * it is before the bound) for the keys that name it: judging its start
 * again gives the same answer.
 */
struct rowkeys {
	int on;                /* rows_from_ns and the keys */
	int drop;              /* the rows until the next key left out */
	struct rc_bits seen;      /* request ids whose row came */
	struct rc_bits before;    /* ... and was judged before the bound */
};

static void rowkeys_init(const struct rc_ctx *c, struct rowkeys *rk)
{
	memset(rk, 0, sizeof *rk);
	rk->on = c->opt->row_keys && c->opt->rows_from_ns;
}

static void rowkeys_free(struct rowkeys *rk)
{
	rc_bits_free(&rk->seen);
	rc_bits_free(&rk->before);
}

/* Row U of kind K (a key or a request's row) read back; 0, or -1 out of
 * memory. */
static int key_row(struct rc_ctx *c, struct rowkeys *rk, uint32_t k,
		   const union spool_row *u)
{
	if (k == K_REQUEST) {
		const struct rc_row_request *r = &u->request;
		if (rc_bits_set(&rk->seen, r->id) < 0 ||
		    (rc_rows_judge(c, r->dom, r->start) &&
		     rc_bits_set(&rk->before, r->id) < 0))
			return -1;
		return 0;
	}
	const struct rc_row_key *key = &u->key;
	rk->drop = 0;
	if (!rk->on)
		return 0;
	switch (key->form) {
	case RC_KEY_AT:
	case RC_KEY_CHANNEL:
		rk->drop = rc_rows_judge(c, key->dom, key->t);
		break;
	case RC_KEY_REQUEST:
		/* a request without a row: its root was unrooted or
		 * discarded, and nothing leaves its rows out */
		rk->drop = rc_bits_get(&rk->seen, key->req) &&
			   rc_bits_get(&rk->before, key->req);
		break;
	default:
		break;
	}
	if (rk->drop) {
		c->st.rows_skipped++;
		if (key->form == RC_KEY_CHANNEL)
			c->st.chan_rows_skipped++;
	}
	return 0;
}

/* ---- reading the spool back ------------------------------------------------------ */

struct spool_rd {
	size_t   have, pos;      /* bytes in the buffer, the next row's */
	uint64_t left, off;      /* the spool's bytes still to read, from */
};

/* From the first row, with the state the writer started from. */
static void spool_rd_start(struct rc_db_rows *w, struct spool_rd *rd)
{
	rd->have = rd->pos = 0;
	rd->left = w->bytes;
	rd->off = 0;
	for (uint32_t k = 0; k <= K_LAST; k++) {
		memset(w->last[k].w, 0, sizeof w->last[k].w);
		memset(w->last[k].set, 0, sizeof w->last[k].set);
	}
}

/* The next row into *KP and *U (its strings point into the buffer until
 * the next call): 1, 0 after the last row, -1 on an error (said).
 * FLUSH: the replay's rows waiting point into the buffer, and so go in
 * before it is refilled. */
static int spool_rd_next(struct rc_ctx *c, struct spool_rd *rd, int flush,
			 uint32_t *kp, union spool_row *u)
{
	struct rc_db *d = c->db;
	struct rc_db_rows *w = d->rows;

	for (;;) {
		uint32_t need = 0, h = 0;
		if (!rd->left && rd->pos >= rd->have)
			return 0;
		if (rd->have - rd->pos >= 4) {
			memcpy(&h, w->buf + rd->pos, 4);
			need = h & SPOOL_LEN_MASK;
		}
		if (rd->have - rd->pos < 4 || rd->have - rd->pos < need) {
			/* the rows waiting point into the buffer, and so may
			 * the previous rows' strings */
			if (flush)
				batch_flush_all(c);
			if (last_own(w) < 0) {
				spool_error(c, "buffer", ENOMEM);
				return -1;
			}
			/* move the partial record to the front and read on */
			memmove(w->buf, w->buf + rd->pos, rd->have - rd->pos);
			rd->have -= rd->pos;
			rd->pos = 0;
			if (need > w->cap) {
				char *b = realloc(w->buf, need);
				if (!b) {
					spool_error(c, "buffer", ENOMEM);
					return -1;
				}
				w->buf = b;
				w->cap = need;
			}
			size_t want = w->cap - rd->have;
			if (want > rd->left)
				want = (size_t)rd->left;
			if (!want) {
				spool_error(c, "read", EIO);
				return -1;
			}
			if (spool_read(c, w, w->buf + rd->have, want, rd->off) != 0) {
				d->failed = 1;
				return -1;
			}
			rd->have += want;
			rd->left -= want;
			rd->off += want;
			continue;
		}
		uint32_t k = h >> 28;
		if (need < 4 || k == 0 || k == K_SPANPAT || k > K_LAST ||
		    spool_decode(w, k, (const uint8_t *)w->buf + rd->pos, need,
				 u) < 0 || !dom_ok(c, k, u) ||
		    (k == K_ROWKEY && u->key.dom >= c->ndoms)) {
			spool_error(c, "read back", EIO);
			return -1;
		}
		rd->pos += need;
		*kp = k;
		return 1;
	}
}

/* ---- requests no row names ----------------------------------------------------------
 *
 * A window pass of --follow (rc_options.rows_from_ns) keeps of a request
 * that began before its bound only the request's row, its root span and
 * its spans that are not exact (span.c, rc_span_finish): follow.c looks
 * at such a request only when a row of the pass names it (follow.c,
 * window: a process's, a channel's or a span candidate's request; and
 * the requests of the messages, fragments and files written), and no
 * other row needs it.  Written for every request of the history, those
 * rows were most of a window pass's inserts on a long run (BENCHMARKS.md,
 * phase 48).  So the replay leaves out the row and the root span of each
 * such request that nothing names, when the root is exact and has no
 * parent and no other span of it was written (an uncertainty could
 * otherwise come to it or from it: db.c, inherit_sql and marks_sql;
 * certainty_finish counts it as exact).  Its start still counts in the
 * stats' requests_first_ns and requests_last_ns (follow.c's window
 * starts from them).
 *
 * The names are noted as the rows are spooled (note_names), before the
 * replay, which needs them all before the first row it inserts: the
 * rows of a request that a later bound may leave out (spooled after a
 * key, rc_rows_begin) are left out exactly when the request is, and so
 * never name one that is left out, but a channel's row (its key is when
 * it closed) is noted with its key and judged when the replay starts.
 * The pass at once notes the same names (it spools every row: row_put;
 * span candidates through the queue, rc_db_rows_named), so it and the
 * kept merge's child leave out the same requests (check_recon:
 * keeper_same_as_at_once, window_rows_left_out).  Without the memory
 * for a name, nothing is left out.
 */
static void name(struct rc_db_rows *w, uint64_t req)
{
	if (req && rc_bits_set(&w->named, req) < 0)
		w->names_lost = 1;
}

void rc_db_rows_named(struct rc_ctx *c, uint64_t req)
{
	struct rc_db_rows *w = c->db ? c->db->rows : NULL;
	if (w && (c->opt->rows_from_ns || c->opt->row_keys))
		name(w, req);
}

/* Row ROW of kind K spooled: the request it names, if any (above). */
static void note_names(struct rc_ctx *c, struct rc_db_rows *w,
		       enum spool_kind k, const void *row)
{
	const union spool_row *u = row;
	int scoped = c->rows_scope;

	switch (k) {
	case K_ROWKEY:
		w->key = u->key;
		return;
	case K_REQUEST:
		if (u->request.certainty != RC_CT_EXACT)
			name(w, u->request.id);
		return;
	case K_SPAN:
		if (!scoped && (!u->span.root || u->span.parent ||
				u->span.certainty != RC_CT_EXACT))
			name(w, u->span.req);
		return;
	case K_CHANNEL:
		if (!u->channel.req)
			return;
		if (scoped && w->key.form == RC_KEY_CHANNEL) {
			if (w->nchk == w->capchk) {
				size_t n = w->capchk ? 2 * w->capchk : 64;
				struct chkey *x = realloc(w->chk, n * sizeof *x);
				if (!x) {
					w->names_lost = 1;
					return;
				}
				w->chk = x;
				w->capchk = n;
			}
			w->chk[w->nchk++] = (struct chkey){ u->channel.req,
				w->key.t, w->key.dom };
			return;
		}
		name(w, u->channel.req);
		return;
	case K_MESSAGE:
		if (!scoped)
			name(w, u->message.req);
		return;
	case K_FRAGMENT:
		if (!scoped)
			name(w, u->fragment.req);
		return;
	case K_FILE:
		if (!scoped)
			name(w, u->file.req);
		return;
	case K_PROCESS:
		name(w, u->process.req);
		return;
	case K_CANDIDATE:
		name(w, u->candidate.req);
		return;
	default:
		return;
	}
}

/* When the replay starts: the channels' rows that this bound keeps name
 * their requests.  0 when requests may be left out. */
static int names_ready(struct rc_ctx *c, struct rc_db_rows *w)
{
	if (!c->opt->rows_from_ns || w->names_lost)
		return -1;
	for (size_t i = 0; i < w->nchk; i++)
		if (!rc_rows_before(c, w->chk[i].dom, w->chk[i].t))
			name(w, w->chk[i].req);
	return w->names_lost ? -1 : 0;
}

/* Request row R (its times corrected) left out: its start still counts
 * (rc_db.req_first, req_last, req_n, merged in at the end). */
static void gone_seen(struct rc_db_rows *w, const struct rc_row_request *r)
{
	w->gone_n++;
	if (r->start == RC_DB_NULL)
		return;
	if (!w->gone_t || r->start < w->gone_first)
		w->gone_first = r->start;
	if (!w->gone_t || r->start > w->gone_last)
		w->gone_last = r->start;
	w->gone_t++;
}

/*
 * Insert every spooled row, in order, and give the spool back.
 *
 * The replay in two threads: this thread reads the spool back (the
 * compact form decoded, the times corrected, span and request rows
 * handed to the patterns' stream, which gives each request its pattern
 * id) and queues each row as it is; the queue's thread (below) inserts
 * them, and the stream's span_patterns rows the same way.  The rows of
 * each table go in in the same order as when one thread does it all
 * (rc_options.replay_serial, or when no thread can be started), so the
 * database is the same; SQLite's work, most of a replay, then overlaps
 * the rest of it (BENCHMARKS.md, phase 35).
 */
int rc_db_rows_replay(struct rc_ctx *c)
{
	struct rc_db *d = c->db;
	struct rc_db_rows *w = d->rows;
	struct spool_rd rd;
	struct rowkeys rk;
	union spool_row u;
	uint32_t k;
	int r = 0;

	rowkeys_init(c, &rk);
	rc_db_queue_stop(c);
	if (d->failed || (w->len && spool_flush(c) < 0)) {
		rowkeys_free(&rk);
		return -1;
	}
	int leave = names_ready(c, w) == 0;   /* unnamed requests may go */
	int two = 0;
	rc_pat_stream_emit(d->pat, NULL, NULL);
	if (w->bytes && !c->opt->replay_serial) {
		int qr = q_start(c, d->pat != NULL);
		if (qr == RC_EXIT_OUTPUT) {
			rowkeys_free(&rk);
			return -1;
		}
		if (qr == 0) {
			two = 1;
			rc_pat_stream_emit(d->pat, q_spanpat, c);
		}
	}
	w->batch = calloc(NKIND, sizeof *w->batch);
	if (!w->batch) {
		spool_error(c, "buffer", ENOMEM);
		goto fail;
	}
	spool_rd_start(w, &rd);
	while (!d->failed && (r = spool_rd_next(c, &rd, 1, &k, &u)) > 0) {
		if (k == K_ROWKEY || (k == K_REQUEST && rk.on)) {
			if (key_row(c, &rk, k, &u) < 0) {
				spool_error(c, "memory", ENOMEM);
				goto fail;
			}
			if (k == K_ROWKEY)
				continue;
		}
		if (rk.drop)
			continue;
		if (k > K_SPANPAT) {
			/* spooled before the database was open
			 * (rc_options.db_later) */
			if (two)
				q_put(c, k, &u);
			else
				note_insert(c, k, &u);
			continue;
		}
		/* a request before the bound that nothing names: its root
		 * span, then its row ("requests no row names"; judged as
		 * the merge judges, before the times are corrected) */
		if (leave && k == K_SPAN && u.span.root &&
		    !rc_bits_get(&w->named, u.span.req) &&
		    rc_rows_before(c, u.span.dom, u.span.start))
			continue;
		if (leave && k == K_REQUEST &&
		    !rc_bits_get(&w->named, u.request.id) &&
		    rc_rows_before(c, u.request.dom, u.request.start)) {
			shift_times(c, k, &u);
			gone_seen(w, &u.request);
			continue;
		}
		shift_times(c, k, &u);
		pat_row(d->pat, k, &u);
		if (two)
			q_put(c, k, &u);
		else
			batch_add(c, k, &u);
	}
	if (r < 0)
		goto fail;
	batch_flush_all(c);
	if (two) {
		rc_db_queue_stop(c);
		rc_pat_stream_emit(d->pat, NULL, NULL);
	}
	c->st.spool_bytes = w->bytes;
	c->st.replay_threads = w->bytes ? 1 + two : 0;
	c->st.req_unnamed = w->gone_n;
	if (w->gone_t) {
		if (!d->req_n || w->gone_first < d->req_first)
			d->req_first = w->gone_first;
		if (!d->req_n || w->gone_last > d->req_last)
			d->req_last = w->gone_last;
		d->req_n += w->gone_t;
	}
	rc_db_rows_free(d);
	rowkeys_free(&rk);
	return d->failed ? -1 : 0;
fail:
	if (two) {
		rc_db_queue_abort(d);
		rc_pat_stream_emit(d->pat, NULL, NULL);
	}
	rowkeys_free(&rk);
	return -1;
}

/* ---- the queue -----------------------------------------------------------------
 *
 * Rows without times (attrs, warnings, span_candidates) need no clock
 * correction, and the order of each table's rows is all that matters to
 * it (its rowids).  So they do not wait for the end of the merge: they go
 * through a queue to a thread of their own that inserts them while the
 * merge runs on the other core (attrs are 30% of the rows).  Nothing
 * else uses the connection until rc_db_rows_replay stops the thread
 * (the main thread hands the connection over and takes it back at
 * those two points only).  The queue is two buffers of QBUF bytes: the
 * merge fills one in the spool's format while the thread inserts the
 * other; rows go 64 per INSERT as in the replay, a part batch at the
 * end of each buffer (its rows point into it) a row at a time.  With a
 * single clock domain every row goes this way (row_put, below): the
 * patterns' stream then runs in the merge's thread, its span_patterns
 * rows queued too (q_spanpat), so that the queue's thread, the slower
 * of the two, does only the inserts.  The thread's first error is
 * reported when it stops.  The replay uses the same queue (above).
 */
#define QBUF (1u << 20)

struct dbq {
	pthread_t       th;
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	char           *buf[2];
	size_t          len[2], cap[2];
	int             full[2];     /* handed to the thread */
	int             cur;         /* the buffer the merge fills */
	int             stop;
	int             early;       /* rows with times were queued */
	/* the thread's own */
	struct rc_db   *d;           /* its req_n, req_first, req_last */
	sqlite3_stmt   *one[NKIND], *warn, *cand;
	struct batch   *batch;       /* per kind, full statements in it */
	int             failed;      /* read after the join */
	char            what[32], msg[256];
};

static void q_error(struct dbq *q, sqlite3_stmt *s, const char *what)
{
	if (q->failed)
		return;
	q->failed = 1;
	snprintf(q->what, sizeof q->what, "%s", what);
	snprintf(q->msg, sizeof q->msg, "%s",
		 sqlite3_errmsg(sqlite3_db_handle(s)));
}

static void q_step(struct dbq *q, sqlite3_stmt *s, const char *what)
{
	if (!q->failed && sqlite3_step(s) != SQLITE_DONE)
		q_error(q, s, what);
	sqlite3_reset(s);
}

static void q_flush(struct dbq *q, uint32_t k)
{
	struct batch *b = &q->batch[k];
	req_seen(q->d, b, k);
	if (b->n == BATCH) {
		int nc = sqlite3_bind_parameter_count(b->full) / BATCH;
		for (unsigned i = 0; i < BATCH; i++)
			bind_row(b->full, (int)i * nc, k, &b->row[i]);
		q_step(q, b->full, kind_stmt[k].table);
	} else {
		for (unsigned i = 0; i < b->n; i++) {
			bind_row(q->one[k], 0, k, &b->row[i]);
			q_step(q, q->one[k], kind_stmt[k].table);
		}
	}
	b->n = 0;
}

/* Insert the records of buffer B (the thread's). */
static void q_apply(struct dbq *q, const char *p, size_t len)
{
	const char *end = p + len;
	while (p < end && !q->failed) {
		uint32_t need, k;
		union spool_row u;
		memcpy(&need, p, 4);
		/* the times need no correction (see q_put) */
		k = spool_row_of(p, &u);
		p += need;
		if (k < NKIND) {
			struct batch *b = &q->batch[k];
			b->row[b->n++] = u;
			if (b->n == BATCH)
				q_flush(q, k);
		} else if (k == K_WARNING) {
			const struct rc_row_warning *r = &u.warning;
			b_t(q->warn, 1, r->file);
			b_i(q->warn, 2, r->file ? (int64_t)r->off : RC_DB_NULL);
			b_t(q->warn, 3, r->text);
			q_step(q, q->warn, "warnings");
		} else if (k == K_CANDIDATE) {
			const struct rc_row_candidate *r = &u.candidate;
			b_id(q->cand, 1, r->span);
			b_id(q->cand, 2, r->req);
			b_i(q->cand, 3, r->chosen);
			b_t(q->cand, 4, r->reason);
			q_step(q, q->cand, "span_candidates");
		}
	}
	/* the rows waiting point into the buffer */
	for (uint32_t k = 1; k < NKIND; k++)
		q_flush(q, k);
}

static void *q_main(void *arg)
{
	struct dbq *q = arg;
	int i = 0;
	for (;;) {
		pthread_mutex_lock(&q->mu);
		while (!q->full[i] && !q->stop)
			pthread_cond_wait(&q->cv, &q->mu);
		if (!q->full[i]) {           /* stopped, all done */
			pthread_mutex_unlock(&q->mu);
			return NULL;
		}
		pthread_mutex_unlock(&q->mu);
		q_apply(q, q->buf[i], q->len[i]);
		pthread_mutex_lock(&q->mu);
		q->full[i] = 0;
		q->len[i] = 0;
		pthread_cond_broadcast(&q->cv);
		pthread_mutex_unlock(&q->mu);
		i ^= 1;
	}
}

/* Hand the buffer being filled to the thread and wait for the other. */
static void q_swap(struct dbq *q)
{
	pthread_mutex_lock(&q->mu);
	q->full[q->cur] = 1;
	pthread_cond_broadcast(&q->cv);
	q->cur ^= 1;
	while (q->full[q->cur])
		pthread_cond_wait(&q->cv, &q->mu);
	pthread_mutex_unlock(&q->mu);
}

static void q_free(struct dbq *q)
{
	if (q->batch)
		for (uint32_t k = 1; k < NKIND; k++)
			sqlite3_finalize(q->batch[k].full);
	free(q->batch);
	free(q->buf[0]);
	free(q->buf[1]);
	free(q);
}

/* Start the queue's thread, taking span_patterns rows when SPANPAT; 0,
 * -1 when there is no thread (the caller inserts the rows itself),
 * RC_EXIT_OUTPUT when a statement cannot be prepared (recorded). */
static int q_start(struct rc_ctx *c, int spanpat)
{
	struct rc_db *d = c->db;
	struct dbq *q = calloc(1, sizeof *q);
	int ncols;

	if (!q)
		return -1;
	if (spanpat && !d->st[S_SPAN_PATTERN] &&
	    sqlite3_prepare_v3(d->h, rc_db_stmt_sql[S_SPAN_PATTERN], -1,
			       SQLITE_PREPARE_PERSISTENT,
			       &d->st[S_SPAN_PATTERN], NULL) != SQLITE_OK) {
		free(q);
		rc_db_error(c, "prepare");
		return RC_EXIT_OUTPUT;
	}
	q->d = d;
	q->warn = d->st[S_WARNING];
	q->cand = d->st[S_CANDIDATE];
	q->buf[0] = malloc(QBUF);
	q->buf[1] = malloc(QBUF);
	q->cap[0] = q->cap[1] = QBUF;
	q->batch = calloc(NKIND, sizeof *q->batch);
	if (!q->buf[0] || !q->buf[1] || !q->batch) {
		q_free(q);
		return -1;
	}
	for (uint32_t k = 1; k < NKIND; k++) {
		if (k == K_SPANPAT && !spanpat)
			continue;
		q->one[k] = d->st[kind_stmt[k].id];
		if (!(q->batch[k].full = prep_rows(c, kind_stmt[k].id, BATCH,
						   &ncols))) {
			q_free(q);
			return RC_EXIT_OUTPUT;
		}
	}
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	if (pthread_create(&q->th, NULL, q_main, q) != 0) {
		/* no thread: these rows are spooled and inserted at once */
		pthread_mutex_destroy(&q->mu);
		pthread_cond_destroy(&q->cv);
		q_free(q);
		return -1;
	}
	d->rows->q = q;
	return 0;
}

int rc_db_queue_start(struct rc_ctx *c)
{
	int r = q_start(c, c->db->pat != NULL);
	if (r == 0)
		rc_pat_stream_emit(c->db->pat, q_spanpat, c);
	return r;
}

void rc_db_queue_abort(struct rc_db *d)
{
	struct dbq *q = d->rows ? d->rows->q : NULL;
	if (!q)
		return;
	/* after a failure: the thread inserts what it was given (the
	 * database is dropped), its error unreported */
	pthread_mutex_lock(&q->mu);
	q->stop = 1;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	pthread_join(q->th, NULL);
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->cv);
	d->rows->q = NULL;
	q_free(q);
}

void rc_db_queue_stop(struct rc_ctx *c)
{
	struct rc_db *d = c->db;
	struct dbq *q = d && d->rows ? d->rows->q : NULL;
	if (!q)
		return;
	pthread_mutex_lock(&q->mu);
	if (q->len[q->cur])
		q->full[q->cur] = 1;
	q->stop = 1;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	pthread_join(q->th, NULL);
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->cv);
	d->rows->q = NULL;
	for (uint32_t k = 0; q->early && k < c->ndoms; k++)
		if (c->doms[k].corr != 0 && !q->failed) {
			/* never: one clock domain is its own reference */
			q->failed = 1;
			snprintf(q->what, sizeof q->what, "clock");
			snprintf(q->msg, sizeof q->msg,
				 "rows inserted before the clock correction of %s (%" PRId64 " ns) was known",
				 c->doms[k].label, c->doms[k].corr);
		}
	if (q->failed && !d->failed) {
		d->failed = 1;
		rc_fail(c, RC_EXIT_OUTPUT, "cannot write %s (%s: %s): check free space and permissions of its directory",
			c->opt->output, q->what, q->msg);
	}
	q_free(q);
}

/* Queue ROW of kind K; 0, or -1 when there is no queue. */
static int q_put(struct rc_ctx *c, enum spool_kind k, const void *row)
{
	struct rc_db *d = c->db;
	struct dbq *q = d && d->rows ? d->rows->q : NULL;
	uint32_t len[8];

	if (!q)
		return -1;
	if (d->failed)
		return 0;
	size_t need = spool_size(k, row, len);
	if (q->len[q->cur] + need > q->cap[q->cur]) {
		if (q->len[q->cur])
			q_swap(q);
		if (need > q->cap[q->cur]) {
			char *b = realloc(q->buf[q->cur], need);
			if (!b) {
				spool_error(c, "buffer", ENOMEM);
				return 0;
			}
			q->buf[q->cur] = b;
			q->cap[q->cur] = need;
		}
	}
	spool_encode(q->buf[q->cur] + q->len[q->cur], k, row, need, len);
	q->len[q->cur] += need;
	return 0;
}

int rc_db_queue_warning(struct rc_ctx *c, const char *file, uint64_t off,
			const char *text)
{
	struct rc_row_warning r = { file, text, off };
	return q_put(c, K_WARNING, &r);
}

int rc_db_queue_candidate(struct rc_ctx *c, uint64_t span, uint64_t req,
			  int chosen, const char *reason)
{
	struct rc_row_candidate r = { span, req, chosen, reason };
	return q_put(c, K_CANDIDATE, &r);
}

/*
 * A row with times: spooled until the clock corrections are known, but
 * with one clock domain there is none to know (the only domain is the
 * reference, its correction 0: rc_clock_solve), so it goes through the
 * queue at once and the whole replay runs during the merge.  The
 * domains are all known before the merge (pass 1); rc_db_queue_stop
 * checks that the corrections are indeed 0.
 */
static void row_put(struct rc_ctx *c, enum spool_kind k, const void *row)
{
	struct rc_db *d = c->db;
	/* (a window pass spools them all: "requests no row names") */
	if (c->ndoms == 1 && !c->opt->spool_all && !c->opt->rows_from_ns &&
	    d && d->rows && d->rows->q) {
		if (d->pat && (k == K_SPAN || k == K_REQUEST)) {
			/* the patterns here, the inserts in the thread */
			union spool_row u;
			memcpy(&u, row, spool_desc[k].size);
			pat_row(d->pat, k, &u);
			q_put(c, k, &u);
		} else {
			q_put(c, k, row);
		}
		d->rows->q->early = 1;
		return;
	}
	spool_put(c, k, row);
}

void rc_db_request(struct rc_ctx *c, const struct rc_row_request *r)
{
	row_put(c, K_REQUEST, r);
}

void rc_db_span(struct rc_ctx *c, const struct rc_row_span *r)
{
	row_put(c, K_SPAN, r);
}

/* With --detail=spans the messages and fragments rows are not written
 * (their ids are still given out, so the other rows are the same). */
void rc_db_message(struct rc_ctx *c, const struct rc_row_message *r)
{
	if (c->opt->detail != RC_DETAIL_SPANS)
		row_put(c, K_MESSAGE, r);
}

void rc_db_fragment(struct rc_ctx *c, const struct rc_row_fragment *r)
{
	if (c->opt->detail != RC_DETAIL_SPANS)
		row_put(c, K_FRAGMENT, r);
}

void rc_db_file(struct rc_ctx *c, const struct rc_row_file *r)
{
	row_put(c, K_FILE, r);
}

void rc_db_process(struct rc_ctx *c, const struct rc_row_process *r)
{
	row_put(c, K_PROCESS, r);
}

void rc_db_channel(struct rc_ctx *c, const struct rc_row_channel *r)
{
	row_put(c, K_CHANNEL, r);
}

void rc_db_attr(struct rc_ctx *c, uint64_t span, uint64_t message,
		const char *key, const char *val, uint32_t len)
{
	struct rc_row_attr r = { span, message, key, val, len, 0 };
	if (q_put(c, K_ATTR, &r) < 0)
		spool_put(c, K_ATTR, &r);
}

