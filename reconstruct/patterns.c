/*
 * patterns.c - path patterns of the paths database (see patterns.h and
 * docs/schema.md, "Patterns").
 *
 * One pass over the spans in request order: each request's spans are
 * made a tree, the tree's preorder labels are its signature, and the
 * signature is looked up in a hash table of patterns that accumulates,
 * per node, the sum of durations and of self times.  Rows of
 * span_patterns are written as the pass goes; patterns and pattern_nodes
 * at the end, then the latency percentiles of each pattern are computed
 * exactly in SQL from requests.duration_ns.  The labels are normalised
 * by pattern_norm.c.
 *
 * Self times (views.h's one definition: children of any request count)
 * are computed in the same pass from the request's own spans; the few
 * spans with a child elsewhere (in another request, or in none) are
 * computed again afterwards, alone (self_fixups).  Where a sum
 * overflows, or a span belongs to a request with no row, the whole pass
 * is made again the way it was first written: every span's self time
 * into a temporary table first (self_fill), then the pass reading it.
 *
 * The same work is done request by request as the writer inserts the
 * rows ("as the rows go in", below), when the rows allow it; the pass
 * is then not made.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "map.h"
#include "pattern_norm.h"
#include "patterns.h"
#include "sql.h"
#include "views.h"

/* ---- patterns --------------------------------------------------------------- */

#define LABEL_MAX 256

struct pnode {                   /* one node of a pattern */
	int32_t parent, depth;
	char   *line;                /* its signature line (owned) */
	char   *kind, *protocol, *service, *label;   /* point into line */
	int64_t sum_ns, sum_self_ns;
	int64_t n_timed;
};

struct pattern {
	char        *sig;
	size_t       siglen;
	uint64_t     hash;
	int64_t      next;           /* next pattern with the same hash, -1 */
	int64_t      n;
	int64_t      first_request;
	int32_t      nnodes, depth;
	struct pnode *node;
};

struct pspan {                   /* one span of the current request */
	int64_t id, parent_id, start, end;
	int     has_start, has_end, has_self;
	int32_t parent, first_child, last_child, next_sibling;
	int32_t raw_parent;          /* parent_id's index here, or -1 */
	int32_t node, depth;
	int64_t self;                /* span_self_time's (views.h) */
	char   *line;                /* "kind\tprotocol\tservice\tlabel" */
};

/*
 * Rows written by the patterns (span_patterns, and the temporary
 * span_self and request_pattern) go in PBATCH per INSERT statement, as
 * the other tables' rows do (db_rows.c): a statement per row cost about
 * 3,800 instructions for a two-column row, most of it opening the
 * table's cursor and ending the statement.  A part batch at the end
 * goes in a row at a time.  Texts are copied (their spans are freed
 * before the batch may be written).
 */
#define PBATCH 64
#define PCOLS  6

struct pval {
	int64_t  i;
	uint32_t off, len;       /* text: in txt */
	uint8_t  type;           /* SQLITE_INTEGER, SQLITE_TEXT, SQLITE_NULL */
};

struct pbatch {
	const char   *table;
	sqlite3_stmt *one, *full;
	int           ncol;
	unsigned      n;
	struct pval   v[PBATCH][PCOLS];
	char          txt[PBATCH * LABEL_MAX];
	size_t        ntxt;
};

/* One child's interval, clipped to its parent's (RC_SELF_COVER_CTE's c). */
struct ival { int64_t s, e; };

static int covered_ns(struct ival *iv, size_t n, int64_t *out);

struct builder {
	struct rc_sql  x;
	struct pattern *pat;
	size_t          npat, cappat;
	struct rc_map   by_hash;     /* hash -> first pattern index + 1 */
	struct pspan   *sp;
	size_t          nsp, capsp;
	int32_t        *order, *stack;
	size_t          caporder;
	char           *sig;
	size_t          siglen, capsig;
	struct rc_map   idx;         /* span id -> index in sp + 1 */
	struct pbatch  ins_span, ins_req, ins_self;
	/* self times in the pass (see the top of the file) */
	int             inline_self, over;
	int             stream;      /* fed by rc_pat_stream (no ins_req) */
	/* the stream's span_patterns rows go to EMIT instead of ins_span
	 * (rc_pat_stream_emit) */
	void          (*emit)(void *arg, const struct rc_pat_row *r);
	void           *emit_arg;
	int             renumbered;  /* its ids given again (renumber) */
	int64_t         last_pid;    /* finish_request's pattern, 0 none */
	int64_t         seen;        /* spans read by the pass */
	struct rc_map   fix;         /* spans with a child elsewhere */
	struct ival    *civ;         /* the request's children's intervals */
	int32_t        *coff;        /* each span's first in civ, then end */
	size_t          capc;
};

/* Prepare B for TABLE (NCOL columns); 0 or -1 (failed recorded). */
static int pbatch_init(struct builder *bl, struct pbatch *b, const char *table,
		       int ncol)
{
	char sql[PBATCH * (2 * PCOLS + 4) + 64];
	size_t n = (size_t)snprintf(sql, sizeof sql, "INSERT INTO %s VALUES", table);
	b->table = table;
	b->ncol = ncol;
	for (unsigned r = 0; r < PBATCH; r++) {
		sql[n++] = r ? ',' : ' ';
		sql[n++] = '(';
		for (int k = 0; k < ncol; k++) {
			if (k)
				sql[n++] = ',';
			sql[n++] = '?';
		}
		sql[n++] = ')';
		sql[n] = 0;
		if (r == 0 && !(b->one = rc_sql_prep(&bl->x, sql)))
			return -1;
	}
	return (b->full = rc_sql_prep(&bl->x, sql)) ? 0 : -1;
}

static void pbatch_bind(struct pbatch *b, sqlite3_stmt *st, int o,
			const struct pval *v)
{
	for (int k = 0; k < b->ncol; k++) {
		if (v[k].type == SQLITE_INTEGER)
			sqlite3_bind_int64(st, o + k + 1, v[k].i);
		else if (v[k].type == SQLITE_TEXT)
			sqlite3_bind_text(st, o + k + 1, b->txt + v[k].off,
					  (int)v[k].len, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, o + k + 1);
	}
}

/* Insert B's waiting rows; 0 or -1 (failed recorded). */
static int pbatch_flush(struct builder *bl, struct pbatch *b)
{
	int r = 0;
	if (b->n == PBATCH) {
		for (unsigned i = 0; i < PBATCH; i++)
			pbatch_bind(b, b->full, (int)i * b->ncol, b->v[i]);
		if (sqlite3_step(b->full) != SQLITE_DONE)
			r = rc_sql_fail_db(&bl->x, b->table);
		sqlite3_reset(b->full);
	} else {
		for (unsigned i = 0; i < b->n && !r; i++) {
			pbatch_bind(b, b->one, 0, b->v[i]);
			if (sqlite3_step(b->one) != SQLITE_DONE)
				r = rc_sql_fail_db(&bl->x, b->table);
			sqlite3_reset(b->one);
		}
	}
	b->n = 0;
	b->ntxt = 0;
	return r;
}

/* The values of B's next row (filled by the caller, then pbatch_add). */
static struct pval *pbatch_row(struct pbatch *b)
{
	return b->v[b->n];
}

static void pv_int(struct pval *v, int64_t i)
{
	v->type = SQLITE_INTEGER;
	v->i = i;
}

static void pv_null(struct pval *v)
{
	v->type = SQLITE_NULL;
}

/* The length of label T as a row holds it (never cut: labels are cut
 * to LABEL_MAX when made). */
static size_t label_len(const char *t)
{
	size_t l = strlen(t);
	return l > LABEL_MAX - 1 ? LABEL_MAX - 1 : l;
}

static void pv_text(struct pbatch *b, struct pval *v, const char *t)
{
	size_t l = label_len(t);
	memcpy(b->txt + b->ntxt, t, l);
	v->type = SQLITE_TEXT;
	v->off = (uint32_t)b->ntxt;
	v->len = (uint32_t)l;
	b->ntxt += l;
}

/* The row from pbatch_row is complete; 0 or -1 (failed recorded). */
static int pbatch_add(struct builder *bl, struct pbatch *b)
{
	return ++b->n == PBATCH ? pbatch_flush(bl, b) : 0;
}

static void pbatch_free(struct pbatch *b)
{
	sqlite3_finalize(b->one);
	sqlite3_finalize(b->full);
	b->one = b->full = NULL;
}

static const char *basename_of(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p ? p : "";
}

/* PREFIX (N bytes), a space and S into OUT (CAP bytes), cut to fit. */
static void joined_label(char *out, size_t cap, const char *prefix, size_t n,
			 const char *s)
{
	size_t sl = strlen(s);
	if (n > cap / 4)
		n = cap / 4;
	memcpy(out, prefix, n);
	out[n] = ' ';
	if (sl > cap - n - 2)
		sl = cap - n - 2;
	memcpy(out + n + 1, s, sl);
	out[n + 1 + sl] = 0;
}

/* The node line of a span: kind, protocol, service, normalised label. */
static char *span_line(const char *kind, const char *proto, const char *exe,
		       const char *name, const char *target)
{
	char label[LABEL_MAX];
	char norm[LABEL_MAX];
	int url = proto && (!strcmp(proto, "http") || !strcmp(proto, "fastcgi"));
	const char *svc = basename_of(exe);

	label[0] = 0;
	if (target && *target) {
		rc_pattern_norm(target, strlen(target), url, norm, sizeof norm);
		size_t m = name ? strcspn(name, " ") : 0;
		if (url && m && name[m] == ' ' && m < 24)
			/* the method: the first word of the name */
			joined_label(label, sizeof label, name, m, norm);
		else if (proto && !strcmp(proto, "dns") && name)
			joined_label(label, sizeof label, name, strlen(name), norm);
		else
			memcpy(label, norm, strlen(norm) + 1);
	} else if (name) {
		rc_pattern_norm(name, strlen(name), url, label, sizeof label);
	}
	/* Tabs and newlines separate fields and lines: none in the values
	 * (the normaliser turned them into spaces). */
	const char *f[4] = { kind ? kind : "", proto ? proto : "", svc, label };
	size_t fl[4], l = 0;
	for (int i = 0; i < 4; i++)
		l += (fl[i] = strlen(f[i])) + 1;
	char *line = malloc(l), *p = line;
	if (!line)
		return NULL;
	for (int i = 0; i < 4; i++) {
		memcpy(p, f[i], fl[i]);
		p += fl[i];
		*p++ = i < 3 ? '\t' : 0;
	}
	return line;
}

static void sig_put(struct builder *b, const char *s, size_t n)
{
	if (b->siglen + n + 1 > b->capsig) {
		size_t c = b->capsig ? b->capsig : 1024;
		while (b->siglen + n + 1 > c)
			c *= 2;
		char *p = realloc(b->sig, c);
		if (!p) {
			rc_sql_fail(&b->x, "patterns: out of memory");
			return;
		}
		b->sig = p;
		b->capsig = c;
	}
	memcpy(b->sig + b->siglen, s, n);
	b->siglen += n;
	b->sig[b->siglen] = 0;
}

static void clear_request(struct builder *b)
{
	for (size_t i = 0; i < b->nsp; i++)
		free(b->sp[i].line);
	b->nsp = 0;
	rc_map_free(&b->idx);
	rc_map_init(&b->idx);
}

static struct pattern *pattern_find(struct builder *b, uint64_t hash)
{
	uint64_t v;
	if (!rc_map_get(&b->by_hash, hash, &v))
		return NULL;
	for (int64_t k = (int64_t)v - 1; k >= 0; k = b->pat[k].next) {
		struct pattern *p = &b->pat[k];
		if (p->siglen == b->siglen && !memcmp(p->sig, b->sig, b->siglen))
			return p;
	}
	return NULL;
}

/* Split a node line copy into its fields. */
static void node_fields(struct pnode *nd)
{
	char *f[4] = { nd->line, NULL, NULL, NULL };
	char *p = nd->line;
	for (int k = 1; k < 4 && p; k++) {
		p = strchr(p, '\t');
		if (p) {
			*p++ = 0;
			f[k] = p;
		}
	}
	nd->kind = f[0];
	nd->protocol = f[1] ? f[1] : "";
	nd->service = f[2] ? f[2] : "";
	nd->label = f[3] ? f[3] : "";
}

static struct pattern *pattern_new(struct builder *b, uint64_t hash,
				   int32_t nnodes, int64_t req)
{
	if (b->npat == b->cappat) {
		size_t c = b->cappat ? b->cappat * 2 : 64;
		struct pattern *p = realloc(b->pat, c * sizeof *p);
		if (!p)
			return NULL;
		b->pat = p;
		b->cappat = c;
	}
	struct pattern *p = &b->pat[b->npat];
	memset(p, 0, sizeof *p);
	p->sig = malloc(b->siglen + 1);
	p->node = calloc((size_t)nnodes, sizeof *p->node);
	if (!p->sig || !p->node) {
		free(p->sig);
		free(p->node);
		return NULL;
	}
	b->npat++;               /* freed by builder_free from here on */
	memcpy(p->sig, b->sig, b->siglen + 1);
	p->siglen = b->siglen;
	p->hash = hash;
	p->nnodes = nnodes;
	p->first_request = req;
	uint64_t v;
	p->next = rc_map_get(&b->by_hash, hash, &v) ? (int64_t)v - 1 : -1;
	if (rc_map_put(&b->by_hash, hash, b->npat) < 0)
		return NULL;
	for (int32_t k = 0; k < nnodes; k++) {
		const struct pspan *s = &b->sp[b->order[k]];
		struct pnode *nd = &p->node[k];
		nd->line = strdup(s->line);
		if (!nd->line)
			return NULL;
		nd->depth = s->depth;
		nd->parent = s->parent >= 0 ? b->sp[s->parent].node : -1;
		if (s->depth > p->depth)
			p->depth = s->depth;
		node_fields(nd);
	}
	return p;
}

static int grow_order(struct builder *b)
{
	if (b->caporder >= b->nsp)
		return 0;
	size_t c = b->caporder ? b->caporder : 64;
	while (c < b->nsp)
		c *= 2;
	int32_t *o = realloc(b->order, c * sizeof *o);
	if (!o)
		return -1;
	b->order = o;
	int32_t *s = realloc(b->stack, c * sizeof *s);
	if (!s)
		return -1;
	b->stack = s;
	b->caporder = c;
	return 0;
}

/* Start order, as SQL's ORDER BY start_ns, span_id (NULL first). */
static int cmp_pspan(const void *a, const void *b)
{
	const struct pspan *x = a, *y = b;
	if (x->has_start != y->has_start)
		return x->has_start < y->has_start ? -1 : 1;
	if (x->has_start && x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Child C's interval clipped to parent P's (both with a start and an
 * end: RC_SELF_COVER_CTE's c); 1 when it is not empty. */
static int child_ival(const struct pspan *p, int c_hs, int64_t c_s, int c_he,
		      int64_t c_e, struct ival *v)
{
	v->s = c_hs ? c_s : p->start;
	v->e = c_he ? c_e : p->end;
	if (v->s < p->start)
		v->s = p->start;
	if (v->e > p->end)
		v->e = p->end;
	return v->e > v->s;
}

/* Child C's interval clipped to P's (child_ival) appended to *IV (N of
 * CAP, grown as needed) when it is not empty; 0, or -1 out of memory. */
static int ival_add(struct ival **iv, size_t *n, size_t *cap,
		    const struct pspan *p, int c_hs, int64_t c_s, int c_he,
		    int64_t c_e)
{
	struct ival v;
	if (!child_ival(p, c_hs, c_s, c_he, c_e, &v))
		return 0;
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct ival *t = realloc(*iv, c * sizeof *t);
		if (!t)
			return -1;
		*iv = t;
		*cap = c;
	}
	(*iv)[(*n)++] = v;
	return 0;
}

/* Span P's self time from its children's intervals IV (N); 0, or 1 when
 * a difference overflows. */
static int self_of(struct pspan *p, struct ival *iv, size_t n)
{
	int64_t cov = 0, self;
	p->has_self = 0;
	if (!p->has_start || !p->has_end)
		return 0;
	if (covered_ns(iv, n, &cov) < 0 ||
	    __builtin_sub_overflow(p->end, p->start, &self) ||
	    __builtin_sub_overflow(self, cov, &self))
		return 1;
	p->self = self;
	p->has_self = 1;
	return 0;
}

/* At most this many spans with a child elsewhere are made again one by
 * one (about 40 MB of map); beyond, the pass is made the first way, whose
 * memory does not grow with them. */
#define FIX_MAX (1u << 20)

/*
 * The self time of every span of the current request (b->idx filled),
 * from its children in the request (parent_span_id as it is: a span that
 * is its own parent is its own child, as in the CTE).  A span whose
 * parent is not in the request goes into b->fix: that parent's time is
 * made again by self_fixups.  0, 1 on an overflow or too many of those
 * (FIX_MAX), -1 out of memory.
 */
static int self_inline(struct builder *b)
{
	size_t n = b->nsp;
	if (b->capc < n + 1) {
		size_t c = b->capc ? b->capc : 64;
		while (c < n + 1)
			c *= 2;
		struct ival *iv = realloc(b->civ, c * sizeof *iv);
		if (!iv)
			return -1;
		b->civ = iv;
		int32_t *o = realloc(b->coff, (c + 1) * sizeof *o);
		if (!o)
			return -1;
		b->coff = o;
		b->capc = c;
	}
	int32_t *off = b->coff;
	memset(off, 0, (n + 1) * sizeof *off);
	for (size_t j = 0; j < n; j++) {
		struct pspan *s = &b->sp[j];
		uint64_t v;
		s->raw_parent = -1;
		if (!s->parent_id)
			continue;
		if (!rc_map_get(&b->idx, (uint64_t)s->parent_id, &v)) {
			if (b->fix.n >= FIX_MAX)
				return 1;
			if (rc_map_put(&b->fix, (uint64_t)s->parent_id, 1) < 0)
				return -1;
			continue;
		}
		const struct pspan *p = &b->sp[v - 1];
		struct ival iv;
		if (!p->has_start || !p->has_end ||
		    !child_ival(p, s->has_start, s->start, s->has_end, s->end, &iv))
			continue;
		s->raw_parent = (int32_t)(v - 1);
		off[v]++;             /* counted at v - 1 + 1: starts below */
	}
	for (size_t k = 0; k < n; k++)
		off[k + 1] += off[k];
	/* off[k] is where span k's children begin; fill them, moving
	 * off[k] on to where they end */
	for (size_t j = 0; j < n; j++) {
		const struct pspan *s = &b->sp[j];
		if (s->raw_parent < 0)
			continue;
		const struct pspan *p = &b->sp[s->raw_parent];
		child_ival(p, s->has_start, s->start, s->has_end, s->end,
			   &b->civ[off[s->raw_parent]++]);
	}
	for (size_t k = 0, from = 0; k < n; k++) {
		if (self_of(&b->sp[k], b->civ + from, (size_t)off[k] - from))
			return 1;
		from = (size_t)off[k];
	}
	return 0;
}

/* The current request is complete: its spans in start order, its tree,
 * its signature, its pattern, its rows. */
static int finish_request(struct builder *b, int64_t req, int64_t root_span)
{
	if (!b->nsp)
		return 0;
	if (grow_order(b) < 0)
		return rc_sql_fail(&b->x, "patterns: out of memory");
	qsort(b->sp, b->nsp, sizeof *b->sp, cmp_pspan);
	for (size_t i = 0; i < b->nsp; i++)
		if (rc_map_put(&b->idx, (uint64_t)b->sp[i].id, i + 1) < 0)
			return rc_sql_fail(&b->x, "patterns: out of memory");
	b->seen += (int64_t)b->nsp;
	if (b->inline_self) {
		int r = self_inline(b);
		if (r < 0)
			return rc_sql_fail(&b->x, "patterns: out of memory");
		if (r > 0) {
			b->over = 1;
			return 0;
		}
	}
	/* children lists, in start order */
	for (size_t i = 0; i < b->nsp; i++) {
		struct pspan *s = &b->sp[i];
		uint64_t v;
		s->first_child = s->last_child = s->next_sibling = -1;
		s->parent = -1;
		if (s->parent_id && s->id != root_span &&
		    rc_map_get(&b->idx, (uint64_t)s->parent_id, &v) &&
		    (size_t)(v - 1) != i)
			s->parent = (int32_t)(v - 1);
	}
	/* A parent is always created before its child (smaller id), so
	 * following parents never loops; a row saying otherwise is ignored. */
	for (size_t i = 0; i < b->nsp; i++) {
		struct pspan *s = &b->sp[i];
		if (s->parent < 0)
			continue;
		if (s->parent_id >= s->id) {
			s->parent = -1;
			continue;
		}
		struct pspan *p = &b->sp[s->parent];
		if (p->last_child >= 0)
			b->sp[p->last_child].next_sibling = (int32_t)i;
		else
			p->first_child = (int32_t)i;
		p->last_child = (int32_t)i;
	}
	/* preorder from the roots: the request's root span first */
	size_t no = 0, ns = 0;
	int32_t root = -1;
	uint64_t v;
	if (rc_map_get(&b->idx, (uint64_t)root_span, &v))
		root = (int32_t)(v - 1);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < b->nsp; i++) {
			int32_t r = (int32_t)i;
			if (pass == 0 ? r != root : (r == root || b->sp[r].parent >= 0))
				continue;
			b->stack[ns++] = r;
			b->sp[r].depth = 0;
			while (ns) {
				int32_t k = b->stack[--ns];
				struct pspan *s = &b->sp[k];
				s->node = (int32_t)no;
				b->order[no++] = k;
				/* push children in reverse so the first pops first */
				size_t base = ns;
				for (int32_t ch = s->first_child; ch >= 0;
				     ch = b->sp[ch].next_sibling) {
					b->sp[ch].depth = s->depth + 1;
					b->stack[ns++] = ch;
				}
				for (size_t a = base, z = ns; a + 1 < z; a++, z--) {
					int32_t t = b->stack[a];
					b->stack[a] = b->stack[z - 1];
					b->stack[z - 1] = t;
				}
			}
			if (pass == 0)
				break;
		}
	}
	/* signature */
	b->siglen = 0;
	for (size_t k = 0; k < no; k++) {
		const struct pspan *s = &b->sp[b->order[k]];
		char d[16], *e = d + sizeof d;
		unsigned dv = (unsigned)s->depth;   /* >= 0 */
		*--e = '\t';
		do {
			*--e = (char)('0' + dv % 10);
			dv /= 10;
		} while (dv);
		sig_put(b, e, (size_t)(d + sizeof d - e));
		sig_put(b, s->line, strlen(s->line));
		sig_put(b, "\n", 1);
	}
	if (b->x.failed)
		return -1;
	uint64_t hash = rc_hash64(0x9e3779b97f4a7c15ull, b->sig, b->siglen);
	struct pattern *p = pattern_find(b, hash);
	if (!p && !(p = pattern_new(b, hash, (int32_t)no, req)))
		return rc_sql_fail(&b->x, "patterns: out of memory");
	int64_t pid = (int64_t)(p - b->pat) + 1;
	p->n++;
	/* the first seen in request order (the stream sees requests in the
	 * order they are written) */
	if (req < p->first_request)
		p->first_request = req;
	b->last_pid = pid;
	for (size_t k = 0; k < no; k++) {
		struct pspan *s = &b->sp[b->order[k]];
		if (s->has_end) {
			p->node[k].sum_ns += s->end - s->start;
			p->node[k].sum_self_ns += s->has_self ? s->self : 0;
			p->node[k].n_timed++;
		}
		const char *label = strrchr(s->line, '\t');
		if (b->emit) {
			struct rc_pat_row row = {
				.span = s->id, .req = req, .pattern = pid,
				.node = (int64_t)k, .self = s->self,
				.has_self = s->has_self,
				.label = label ? label + 1 : "",
			};
			row.label_len = (uint32_t)label_len(row.label);
			b->emit(b->emit_arg, &row);
			continue;
		}
		struct pbatch *pb = &b->ins_span;
		struct pval *pv = pbatch_row(pb);
		pv_int(&pv[0], s->id);
		pv_int(&pv[1], req);
		pv_int(&pv[2], pid);
		pv_int(&pv[3], (int64_t)k);
		pv_text(pb, &pv[4], label ? label + 1 : "");
		if (s->has_self)
			pv_int(&pv[5], s->self);
		else
			pv_null(&pv[5]);
		if (pbatch_add(b, pb) < 0)
			return -1;
	}
	if (b->stream)
		return 0;        /* requests.pattern_id: in the request's row */
	struct pval *rv = pbatch_row(&b->ins_req);
	pv_int(&rv[0], req);
	pv_int(&rv[1], pid);
	return pbatch_add(b, &b->ins_req);
}

/* The next slot of *SP (N used of *CAP, grown as needed), zeroed; NULL
 * when memory runs out.  The caller counts it. */
static struct pspan *pspan_slot(struct pspan **sp, size_t n, size_t *cap)
{
	if (n == *cap) {
		size_t c = *cap ? *cap * 2 : 8;
		struct pspan *p = realloc(*sp, c * sizeof *p);
		if (!p)
			return NULL;
		*sp = p;
		*cap = c;
	}
	memset(&(*sp)[n], 0, sizeof **sp);
	return &(*sp)[n];
}

static int add_span(struct builder *b, sqlite3_stmt *s)
{
	struct pspan *p = pspan_slot(&b->sp, b->nsp, &b->capsp);
	if (!p)
		return rc_sql_fail(&b->x, "patterns: out of memory");
	p->id = sqlite3_column_int64(s, 0);
	p->parent_id = sqlite3_column_int64(s, 2);
	p->has_start = sqlite3_column_type(s, 8) != SQLITE_NULL;
	p->start = sqlite3_column_int64(s, 8);
	p->has_end = sqlite3_column_type(s, 9) != SQLITE_NULL;
	p->end = sqlite3_column_int64(s, 9);
	if (!b->inline_self) {
		p->has_self = sqlite3_column_type(s, 11) != SQLITE_NULL;
		p->self = sqlite3_column_int64(s, 11);
	}
	p->line = span_line((const char *)sqlite3_column_text(s, 3),
			    (const char *)sqlite3_column_text(s, 4),
			    (const char *)sqlite3_column_text(s, 7),
			    (const char *)sqlite3_column_text(s, 5),
			    (const char *)sqlite3_column_text(s, 6));
	if (!p->line)
		return rc_sql_fail(&b->x, "patterns: out of memory");
	b->nsp++;
	return 0;
}

/* Every span's self time, by the one definition the view span_self_time
 * uses (RC_SELF_COVER_CTE, views.h): children of any request count.
 * self_fill computes the same in C; this statement is what it falls back
 * to when a sum would overflow (SQLite's arithmetic decides then). */
static const char self_sql[] =
	RC_SELF_COVER_CTE
	"INSERT INTO temp.span_self\n"
	"SELECT s.span_id, " RC_SELF_NS " FROM spans s\n"
	"LEFT JOIN cov ON cov.sid = s.span_id;\n";

static int cmp_ival(const void *a, const void *b)
{
	const struct ival *x = a, *y = b;
	return x->s < y->s ? -1 : x->s > y->s;
}

/* The time N intervals IV cover (their union: RC_SELF_COVER_CTE's
 * islands, merged when one starts at or before the end of those before
 * it); 0, or -1 when a sum overflows. */
static int covered_ns(struct ival *iv, size_t n, int64_t *out)
{
	int64_t cov = 0, is = 0, ie = 0, d;
	if (n)
		qsort(iv, n, sizeof *iv, cmp_ival);
	for (size_t i = 0; i < n; i++) {
		if (i && iv[i].s <= ie) {
			if (iv[i].e > ie)
				ie = iv[i].e;
			continue;
		}
		if (i && (__builtin_sub_overflow(ie, is, &d) ||
			  __builtin_add_overflow(cov, d, &cov)))
			return -1;
		is = iv[i].s;
		ie = iv[i].e;
	}
	if (n && (__builtin_sub_overflow(ie, is, &d) ||
		  __builtin_add_overflow(cov, d, &cov)))
		return -1;
	*out = cov;
	return 0;
}

/* Write the self time of span ID (START, END; HS, HE: not NULL) with
 * its N children's intervals IV into temp.span_self; 1 when a sum
 * overflows, -1 on an error. */
static int self_put(struct builder *b, int64_t id,
		    int hs, int64_t start, int he, int64_t end,
		    struct ival *iv, size_t n)
{
	int64_t cov = 0, self;
	struct pval *v = pbatch_row(&b->ins_self);
	if (covered_ns(iv, n, &cov) < 0)
		return 1;
	pv_int(&v[0], id);
	if (hs && he) {
		if (__builtin_sub_overflow(end, start, &self) ||
		    __builtin_sub_overflow(self, cov, &self))
			return 1;
		pv_int(&v[1], self);
	} else {
		pv_null(&v[1]);
	}
	return pbatch_add(b, &b->ins_self);
}

/*
 * temp.span_self: every span's self time as RC_SELF_COVER_CTE and
 * RC_SELF_NS define it, in one pass over the spans with their children
 * (through the index spans_parent): a child's interval is its own
 * clipped to its parent's (a missing start or end is the parent's), and
 * only non-empty ones count.  The window functions of the CTE cost about
 * fifteen times as much.  A span's children's intervals are held while
 * it is read (16 bytes each).  On an overflow the CTE itself is run.
 */
static int self_fill(struct builder *b)
{
	sqlite3_stmt *q = rc_sql_prep(&b->x,
		"SELECT p.span_id, p.start_ns, p.end_ns, ch.span_id,\n"
		"  ch.start_ns, ch.end_ns\n"
		"FROM spans p LEFT JOIN spans ch ON ch.parent_span_id = p.span_id\n"
		"ORDER BY p.span_id");
	struct ival *iv = NULL;
	size_t n = 0, cap = 0;
	int64_t cur = 0, start = 0, end = 0;
	int have = 0, hs = 0, he = 0, r = -1, rc, over = 0;

	if (!q || pbatch_init(b, &b->ins_self, "temp.span_self", 2) < 0)
		goto out;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(q, 0);
		if (!have || id != cur) {
			if (have && (over = self_put(b, cur, hs, start, he,
						     end, iv, n)) != 0)
				break;
			have = 1;
			cur = id;
			n = 0;
			hs = sqlite3_column_type(q, 1) != SQLITE_NULL;
			start = sqlite3_column_int64(q, 1);
			he = sqlite3_column_type(q, 2) != SQLITE_NULL;
			end = sqlite3_column_int64(q, 2);
		}
		/* no child (LEFT JOIN), or no interval: the CTE's c needs
		 * the parent's start and end */
		if (sqlite3_column_type(q, 3) == SQLITE_NULL || !hs || !he)
			continue;
		struct pspan p = { .start = start, .end = end };
		if (ival_add(&iv, &n, &cap, &p,
			     sqlite3_column_type(q, 4) != SQLITE_NULL,
			     sqlite3_column_int64(q, 4),
			     sqlite3_column_type(q, 5) != SQLITE_NULL,
			     sqlite3_column_int64(q, 5)) < 0) {
			rc_sql_fail(&b->x, "patterns: out of memory");
			goto out;
		}
	}
	if (over < 0)
		goto out;
	if (!over && rc != SQLITE_DONE) {
		rc_sql_fail_db(&b->x, "reading spans");
		goto out;
	}
	if (!over && have &&
	    (over = self_put(b, cur, hs, start, he, end, iv, n)) < 0)
		goto out;
	if (!over && pbatch_flush(b, &b->ins_self) < 0)
		goto out;
	r = 0;
	if (over) {
		b->ins_self.n = 0;
		b->ins_self.ntxt = 0;
		sqlite3_reset(q);
		r = rc_sql_exec(&b->x, "DELETE FROM temp.span_self;\n") < 0 ||
		    rc_sql_exec(&b->x, self_sql) < 0 ? -1 : 0;
	}
out:
	sqlite3_finalize(q);
	free(iv);
	return r;
}

static const char tables_sql[] =
	"CREATE TABLE patterns(\n"
	"  pattern_id INTEGER PRIMARY KEY, rank INTEGER, n INTEGER,\n"
	"  complete INTEGER, protocol TEXT, service TEXT, root TEXT,\n"
	"  nodes INTEGER, depth INTEGER, signature TEXT, avg_ns REAL,\n"
	"  min_ns INTEGER, max_ns INTEGER, p50_ns INTEGER, p90_ns INTEGER,\n"
	"  p99_ns INTEGER, example_request_id INTEGER);\n"
	"CREATE TABLE pattern_nodes(\n"
	"  pattern_id INTEGER, node INTEGER, parent_node INTEGER,\n"
	"  depth INTEGER, kind TEXT, protocol TEXT, service TEXT, label TEXT,\n"
	"  n INTEGER, mean_ns REAL, mean_self_ns REAL,\n"
	"  PRIMARY KEY(pattern_id, node));\n"
	"CREATE TABLE span_patterns(\n"
	"  span_id INTEGER PRIMARY KEY, request_id INTEGER,\n"
	"  pattern_id INTEGER, node INTEGER, label TEXT, self_ns INTEGER);\n";

/* The pass's own (pass, self_fill). */
static const char temp_sql[] =
	"CREATE TEMP TABLE request_pattern(request_id INTEGER PRIMARY KEY,\n"
	"  pattern_id INTEGER);\n"
	"CREATE TEMP TABLE span_self(span_id INTEGER PRIMARY KEY,\n"
	"  self_ns INTEGER);\n";

/* requests.pattern_id from the pass (the column: tables_make) */
static const char request_sql[] =
	"UPDATE requests SET pattern_id = t.pattern_id FROM temp.request_pattern t\n"
	"  WHERE t.request_id = requests.request_id;\n"
	"DROP TABLE temp.request_pattern;\n";

static const char finish_sql[] =
	"CREATE INDEX span_patterns_request ON span_patterns(request_id);\n"
	"CREATE INDEX span_patterns_pattern ON span_patterns(pattern_id, node);\n"
	"CREATE INDEX requests_pattern ON requests(pattern_id);\n"
	/* the complete requests' count and mean (the percentiles: below) */
	"UPDATE patterns SET complete = q.cnt, avg_ns = q.avg_ns,\n"
	"  min_ns = q.min_ns, max_ns = q.max_ns\n"
	"FROM (SELECT pattern_id, COUNT(*) AS cnt, AVG(duration_ns) AS avg_ns,\n"
	"        MIN(duration_ns) AS min_ns, MAX(duration_ns) AS max_ns\n"
	"      FROM requests\n"
	"      WHERE duration_ns IS NOT NULL AND pattern_id IS NOT NULL\n"
	"      GROUP BY pattern_id) AS q\n"
	"WHERE q.pattern_id = patterns.pattern_id;\n";

static const char rank_sql[] =
	"UPDATE patterns SET rank = r.rk FROM (SELECT pattern_id,\n"
	"  ROW_NUMBER() OVER (ORDER BY n DESC, pattern_id) AS rk FROM patterns) r\n"
	"  WHERE r.pattern_id = patterns.pattern_id;\n"
	"INSERT OR REPLACE INTO stats VALUES('patterns',\n"
	"  (SELECT COUNT(*) FROM patterns));\n";

/*
 * Exact percentiles (nearest rank: the p-th of n values is the smallest
 * whose rank r has r * 100 >= n * p) and the example request (the median
 * by rank) of each pattern's complete requests.  The requests come
 * sorted by pattern and duration, and each pattern's are counted, so no
 * pattern's durations are held: SQLite's sorter works in bounded memory
 * (a window function over the partitions kept each whole partition).
 */
static int write_percentiles(struct builder *b)
{
	sqlite3_stmt *qc = rc_sql_prep(&b->x,
		"SELECT pattern_id, complete FROM patterns");
	sqlite3_stmt *qd = rc_sql_prep(&b->x,
		"SELECT pattern_id, duration_ns, request_id FROM requests\n"
		"WHERE duration_ns IS NOT NULL AND pattern_id IS NOT NULL\n"
		"ORDER BY pattern_id, duration_ns, request_id");
	sqlite3_stmt *up = rc_sql_prep(&b->x,
		"UPDATE patterns SET p50_ns = ?, p90_ns = ?, p99_ns = ?,\n"
		"  example_request_id = ? WHERE pattern_id = ?");
	int64_t *cnt = calloc(b->npat + 1, sizeof *cnt);
	int r = 0, rc;

	if (!qc || !qd || !up || !cnt) {
		r = cnt ? -1 : rc_sql_fail(&b->x, "patterns: out of memory");
		goto out;
	}
	while ((rc = sqlite3_step(qc)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(qc, 0);
		if (id >= 1 && (uint64_t)id <= b->npat)
			cnt[id] = sqlite3_column_int64(qc, 1);
	}
	if (rc != SQLITE_DONE) {
		r = rc_sql_fail_db(&b->x, "patterns");
		goto out;
	}
	int64_t cur = 0, n = 0, rn = 0, ex = 0, pv[3] = { 0, 0, 0 };
	int have[3] = { 0, 0, 0 }, more;
	static const int pct[3] = { 50, 90, 99 };
	do {
		rc = sqlite3_step(qd);
		more = rc == SQLITE_ROW;
		int64_t id = more ? sqlite3_column_int64(qd, 0) : 0;
		if (cur && (!more || id != cur)) {
			for (int k = 0; k < 3; k++)
				if (have[k])
					sqlite3_bind_int64(up, k + 1, pv[k]);
				else
					sqlite3_bind_null(up, k + 1);
			if (ex)
				sqlite3_bind_int64(up, 4, ex);
			else
				sqlite3_bind_null(up, 4);
			sqlite3_bind_int64(up, 5, cur);
			if (sqlite3_step(up) != SQLITE_DONE) {
				r = rc_sql_fail_db(&b->x, "patterns");
				goto out;
			}
			sqlite3_reset(up);
			cur = 0;
		}
		if (!more)
			break;
		if (!cur) {
			cur = id;
			n = id >= 1 && (uint64_t)id <= b->npat ? cnt[id] : 0;
			rn = ex = 0;
			have[0] = have[1] = have[2] = 0;
		}
		int64_t ns = sqlite3_column_int64(qd, 1);
		rn++;
		for (int k = 0; k < 3; k++)
			if (!have[k] && rn * 100 >= n * pct[k]) {
				pv[k] = ns;
				have[k] = 1;
			}
		if (rn == (n * 50 + 99) / 100)
			ex = sqlite3_column_int64(qd, 2);
	} while (more);
	if (rc != SQLITE_DONE)
		r = rc_sql_fail_db(&b->x, "reading requests");
out:
	sqlite3_finalize(qc);
	sqlite3_finalize(qd);
	sqlite3_finalize(up);
	free(cnt);
	return r;
}

static int write_patterns(struct builder *b)
{
	sqlite3_stmt *ip = rc_sql_prep(&b->x,
		"INSERT INTO patterns(pattern_id, n, complete, protocol, service,\n"
		"  root, nodes, depth, signature, example_request_id)\n"
		"  VALUES(?,?,0,?,?,?,?,?,?,?)");
	sqlite3_stmt *in = rc_sql_prep(&b->x,
		"INSERT INTO pattern_nodes VALUES(?,?,?,?,?,?,?,?,?,?,?)");
	int r = 0;

	if (!ip || !in) {
		r = -1;
		goto out;
	}
	for (size_t k = 0; k < b->npat && !r; k++) {
		const struct pattern *p = &b->pat[k];
		const struct pnode *root = &p->node[0];
		sqlite3_bind_int64(ip, 1, (int64_t)k + 1);
		sqlite3_bind_int64(ip, 2, p->n);
		sqlite3_bind_text(ip, 3, root->protocol, -1, SQLITE_STATIC);
		sqlite3_bind_text(ip, 4, root->service, -1, SQLITE_STATIC);
		sqlite3_bind_text(ip, 5, root->label, -1, SQLITE_STATIC);
		sqlite3_bind_int64(ip, 6, p->nnodes);
		sqlite3_bind_int64(ip, 7, p->depth);
		sqlite3_bind_text(ip, 8, p->sig, (int)p->siglen, SQLITE_STATIC);
		sqlite3_bind_int64(ip, 9, p->first_request);
		if (sqlite3_step(ip) != SQLITE_DONE)
			r = rc_sql_fail_db(&b->x, "patterns");
		sqlite3_reset(ip);
		for (int32_t n = 0; n < p->nnodes && !r; n++) {
			const struct pnode *nd = &p->node[n];
			sqlite3_bind_int64(in, 1, (int64_t)k + 1);
			sqlite3_bind_int64(in, 2, n);
			if (nd->parent >= 0)
				sqlite3_bind_int64(in, 3, nd->parent);
			else
				sqlite3_bind_null(in, 3);
			sqlite3_bind_int64(in, 4, nd->depth);
			sqlite3_bind_text(in, 5, nd->kind, -1, SQLITE_STATIC);
			sqlite3_bind_text(in, 6, nd->protocol, -1, SQLITE_STATIC);
			sqlite3_bind_text(in, 7, nd->service, -1, SQLITE_STATIC);
			sqlite3_bind_text(in, 8, nd->label, -1, SQLITE_STATIC);
			sqlite3_bind_int64(in, 9, nd->n_timed);
			if (nd->n_timed) {
				sqlite3_bind_double(in, 10, (double)nd->sum_ns / (double)nd->n_timed);
				sqlite3_bind_double(in, 11, (double)nd->sum_self_ns / (double)nd->n_timed);
			} else {
				sqlite3_bind_null(in, 10);
				sqlite3_bind_null(in, 11);
			}
			if (sqlite3_step(in) != SQLITE_DONE)
				r = rc_sql_fail_db(&b->x, "pattern_nodes");
			sqlite3_reset(in);
		}
	}
out:
	sqlite3_finalize(ip);
	sqlite3_finalize(in);
	return r;
}

static void builder_free(struct builder *b)
{
	clear_request(b);
	for (size_t k = 0; k < b->npat; k++) {
		for (int32_t n = 0; n < b->pat[k].nnodes; n++)
			free(b->pat[k].node[n].line);
		free(b->pat[k].node);
		free(b->pat[k].sig);
	}
	free(b->pat);
	free(b->sp);
	free(b->order);
	free(b->stack);
	free(b->sig);
	rc_map_free(&b->by_hash);
	rc_map_free(&b->idx);
	rc_map_free(&b->fix);
	free(b->civ);
	free(b->coff);
	pbatch_free(&b->ins_span);
	pbatch_free(&b->ins_req);
	pbatch_free(&b->ins_self);
}

/* 1 when statement SQL prepares (a table or column exists), else 0. */
static int prepares(sqlite3 *h, const char *sql)
{
	sqlite3_stmt *q = NULL;
	int ok = sqlite3_prepare_v2(h, sql, -1, &q, NULL) == SQLITE_OK;
	sqlite3_finalize(q);
	return ok;
}

/* The tables, unless the stream made them (rc_pat_stream_open), and
 * requests.pattern_id, unless the writer's schema has it (db.c) or the
 * table came without it (join.c). */
static int tables_make(struct rc_sql *x)
{
	if (!prepares(x->h, "SELECT 1 FROM span_patterns") &&
	    rc_sql_exec(x, tables_sql) < 0)
		return -1;
	if (!prepares(x->h, "SELECT pattern_id FROM requests") &&
	    rc_sql_exec(x, "ALTER TABLE requests ADD COLUMN pattern_id INTEGER;\n") < 0)
		return -1;
	return 0;
}

int rc_patterns_empty(sqlite3 *h, char *err, size_t errlen)
{
	struct rc_sql x = { .h = h, .who = "patterns", .err = err,
			    .errlen = errlen };
	/* no index: follow.c reads no pattern of such a pass (at 20,000
	 * requests the one on requests(pattern_id), all NULL, was 3% of a
	 * window pass's instructions) */
	return tables_make(&x) < 0 ? -1 : 0;
}

/* The single integer SQL gives, or -1 (failed recorded). */
static int64_t count_of(struct builder *b, const char *sql)
{
	sqlite3_stmt *q = rc_sql_prep(&b->x, sql);
	int64_t n = -1;
	if (q && sqlite3_step(q) == SQLITE_ROW)
		n = sqlite3_column_int64(q, 0);
	else if (q)
		rc_sql_fail_db(&b->x, "counting spans");
	sqlite3_finalize(q);
	return n;
}

/*
 * The spans with a child the pass did not see in their request (b->fix,
 * and the parents of spans of no request): their self time from all
 * their children, span_patterns and the pattern node's sum corrected.
 * 0, 1 when the pass must be made the other way (an overflow, or spans
 * the pass did not read: their request has no row), -1 on an error.
 */
static int self_fixups(struct builder *b)
{
	sqlite3_stmt *q = NULL, *sel = NULL, *ch = NULL, *up = NULL;
	struct ival *iv = NULL;
	size_t cap = 0;
	int r = -1, rc;

	int64_t all = count_of(b, "SELECT COUNT(*) FROM spans");
	int64_t none = count_of(b, "SELECT COUNT(*) FROM spans WHERE request_id IS NULL");
	if (all < 0 || none < 0)
		return -1;
	if (b->seen + none != all)
		return 1;
	if (none) {
		q = rc_sql_prep(&b->x, "SELECT parent_span_id FROM spans\n"
				"WHERE request_id IS NULL AND parent_span_id IS NOT NULL");
		if (!q)
			goto out;
		while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
			if (b->fix.n >= FIX_MAX) {
				r = 1;
				goto out;
			}
			if (rc_map_put(&b->fix, (uint64_t)sqlite3_column_int64(q, 0), 1) < 0) {
				rc_sql_fail(&b->x, "patterns: out of memory");
				goto out;
			}
		}
		if (rc != SQLITE_DONE) {
			rc_sql_fail_db(&b->x, "reading spans");
			goto out;
		}
	}
	if (!b->fix.n) {
		r = 0;
		goto out;
	}
	sel = rc_sql_prep(&b->x,
		"SELECT sp.self_ns, sp.pattern_id, sp.node, s.start_ns, s.end_ns\n"
		"FROM span_patterns sp JOIN spans s ON s.span_id = sp.span_id\n"
		"WHERE sp.span_id = ?");
	ch = rc_sql_prep(&b->x,
		"SELECT start_ns, end_ns FROM spans WHERE parent_span_id = ?");
	up = rc_sql_prep(&b->x,
		"UPDATE span_patterns SET self_ns = ? WHERE span_id = ?");
	if (!sel || !ch || !up)
		goto out;
	r = 0;
	for (size_t i = 0; i < b->fix.cap && !r; i++) {
		if (!b->fix.used[i])
			continue;
		int64_t id = (int64_t)b->fix.keys[i];
		struct pspan p;
		memset(&p, 0, sizeof p);
		sqlite3_bind_int64(sel, 1, id);
		rc = sqlite3_step(sel);
		if (rc != SQLITE_ROW) {
			/* no row: a span of no request */
			sqlite3_reset(sel);
			if (rc != SQLITE_DONE)
				r = rc_sql_fail_db(&b->x, "span_patterns");
			continue;
		}
		int had = sqlite3_column_type(sel, 0) != SQLITE_NULL;
		int64_t old = sqlite3_column_int64(sel, 0);
		int64_t pid = sqlite3_column_int64(sel, 1);
		int64_t node = sqlite3_column_int64(sel, 2);
		p.has_start = sqlite3_column_type(sel, 3) != SQLITE_NULL;
		p.start = sqlite3_column_int64(sel, 3);
		p.has_end = sqlite3_column_type(sel, 4) != SQLITE_NULL;
		p.end = sqlite3_column_int64(sel, 4);
		sqlite3_reset(sel);
		if (!p.has_start || !p.has_end)
			continue;        /* no self time, as before */
		size_t n = 0;
		sqlite3_bind_int64(ch, 1, id);
		while ((rc = sqlite3_step(ch)) == SQLITE_ROW) {
			if (ival_add(&iv, &n, &cap, &p,
				     sqlite3_column_type(ch, 0) != SQLITE_NULL,
				     sqlite3_column_int64(ch, 0),
				     sqlite3_column_type(ch, 1) != SQLITE_NULL,
				     sqlite3_column_int64(ch, 1)) < 0) {
				sqlite3_reset(ch);
				r = rc_sql_fail(&b->x, "patterns: out of memory");
				goto out;
			}
		}
		sqlite3_reset(ch);
		if (rc != SQLITE_DONE) {
			r = rc_sql_fail_db(&b->x, "reading spans");
			break;
		}
		if (self_of(&p, iv, n)) {
			r = 1;
			break;
		}
		if (had && old == p.self)
			continue;
		sqlite3_bind_int64(up, 1, p.self);
		sqlite3_bind_int64(up, 2, id);
		if (sqlite3_step(up) != SQLITE_DONE)
			r = rc_sql_fail_db(&b->x, "span_patterns");
		sqlite3_reset(up);
		/* the node's sum took the first value (has_end: it counted) */
		if (pid >= 1 && (uint64_t)pid <= b->npat &&
		    node >= 0 && node < b->pat[pid - 1].nnodes)
			b->pat[pid - 1].node[node].sum_self_ns +=
				p.self - (had ? old : 0);
	}
out:
	sqlite3_finalize(q);
	sqlite3_finalize(sel);
	sqlite3_finalize(ch);
	sqlite3_finalize(up);
	free(iv);
	return r;
}

/*
 * The pass over every request's spans (see the top of the file): with
 * B->inline_self the self times are computed in it, else read from
 * temp.span_self (self_fill).  0, 1 when an overflow or spans of a
 * request with no row make the other way needed, -1 on an error.
 */
static int pass(struct builder *b)
{
	sqlite3_stmt *q = NULL;
	int r = -1, rc;

	if (!b->inline_self && self_fill(b) < 0)
		return -1;
	if (pbatch_init(b, &b->ins_span, "span_patterns", 6) < 0 ||
	    pbatch_init(b, &b->ins_req, "temp.request_pattern", 2) < 0)
		goto out;
	q = rc_sql_prep(&b->x, b->inline_self ?
		 "SELECT s.span_id, s.request_id, s.parent_span_id, s.kind,\n"
		 "  s.protocol, s.name, s.target, s.exe, s.start_ns, s.end_ns,\n"
		 "  r.root_span_id\n"
		 "FROM requests r CROSS JOIN spans s ON s.request_id = r.request_id\n"
		 "ORDER BY r.request_id" :
		 "SELECT s.span_id, s.request_id, s.parent_span_id, s.kind,\n"
		 "  s.protocol, s.name, s.target, s.exe, s.start_ns, s.end_ns,\n"
		 "  r.root_span_id, ss.self_ns\n"
		 "FROM requests r CROSS JOIN spans s ON s.request_id = r.request_id\n"
		 "LEFT JOIN temp.span_self ss ON ss.span_id = s.span_id\n"
		 "ORDER BY r.request_id");
	if (!q)
		goto out;
	int64_t cur = 0, root = 0;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t req = sqlite3_column_int64(q, 1);
		if (req != cur) {
			if (finish_request(b, cur, root) < 0)
				goto out;
			clear_request(b);
			if (b->over) {
				r = 1;
				goto out;
			}
			cur = req;
			root = sqlite3_column_int64(q, 10);
		}
		if (add_span(b, q) < 0)
			goto out;
	}
	if (rc != SQLITE_DONE) {
		rc_sql_fail_db(&b->x, "reading spans");
		goto out;
	}
	if (finish_request(b, cur, root) < 0)
		goto out;
	if (b->over) {
		r = 1;
		goto out;
	}
	if (pbatch_flush(b, &b->ins_span) < 0 ||
	    pbatch_flush(b, &b->ins_req) < 0)
		goto out;
	r = b->inline_self ? self_fixups(b) : 0;
out:
	sqlite3_finalize(q);
	return r;
}

static void builder_init(struct builder *b, sqlite3 *h, char *err,
			 size_t errlen)
{
	memset(b, 0, sizeof *b);
	b->x.h = h;
	b->x.who = "patterns";
	b->x.err = err;
	b->x.errlen = errlen;
	rc_map_init(&b->by_hash);
	rc_map_init(&b->idx);
	rc_map_init(&b->fix);
}

/* The patterns' rows, their indexes and statistics (B's pass is over,
 * requests.pattern_id set). */
static int patterns_end(struct builder *b)
{
	/* stats: how they were made (docs/schema.md) */
	char st[96];
	snprintf(st, sizeof st,
		 "INSERT OR REPLACE INTO stats VALUES('patterns_stream', %d);\n",
		 b->stream ? 1 + b->renumbered : 0);
	return write_patterns(b) < 0 || rc_sql_exec(&b->x, finish_sql) < 0 ||
	       write_percentiles(b) < 0 || rc_sql_exec(&b->x, rank_sql) < 0 ||
	       rc_sql_exec(&b->x, st) < 0 ? -1 : 0;
}

int rc_patterns_build(sqlite3 *h, char *err, size_t errlen)
{
	struct builder b;
	int r = -1, p;

	builder_init(&b, h, err, errlen);
	if (tables_make(&b.x) < 0 || rc_sql_exec(&b.x, temp_sql) < 0)
		goto out;
	b.inline_self = 1;
	if ((p = pass(&b)) < 0)
		goto out;
	if (p > 0) {
		/* made again the first way: nothing of this pass kept */
		builder_free(&b);
		builder_init(&b, h, err, errlen);
		if (rc_sql_exec(&b.x, "DELETE FROM span_patterns;\n"
				"DELETE FROM temp.request_pattern;\n") < 0 ||
		    pass(&b) != 0)
			goto out;
	}
	if (rc_sql_exec(&b.x, "DROP TABLE temp.span_self;\n") < 0 ||
	    rc_sql_exec(&b.x, request_sql) < 0 || patterns_end(&b) < 0)
		goto out;
	r = 0;
out:
	builder_free(&b);
	return r;
}

/* ---- as the rows go in ---------------------------------------------------------
 *
 * The writer (db_rows.c) hands each span row and each request row to the
 * stream as it inserts them, with their final times.  A request's spans
 * are held until its row comes (its root span's row comes just before
 * it: span.c), then the request is made a pattern as in the pass, its
 * span_patterns rows go in at once, and its pattern id into its own row:
 * no read of the spans back through their request index, no UPDATE of
 * every request at the end.
 *
 * Requests come in the order their roots end, not in request order, so
 * the patterns' ids are given again at the end in the order of each
 * pattern's first request, which is the pass's order (renumber).
 * Everything that would make the result differ from the pass's sends
 * the stream back to the pass, which then makes it whole: a span whose
 * row comes after its request's (its count is missing at the end:
 * self_fixups), a span of a request with no row (held to the end), an
 * overflow, more than HOLD_MAX spans held at once.
 */
#define HOLD_MAX (1u << 20)

struct pacc {                    /* the spans held for one request */
	struct pspan *sp;
	size_t        n, cap;
};

struct rc_pat_stream {
	struct builder b;
	struct rc_map  acc;          /* request id -> struct pacc * */
	size_t         held;         /* spans in acc */
	int            off;          /* given up: the pass makes it all */
	char           err[256];
};

static void acc_drop(struct rc_pat_stream *ps)
{
	for (size_t i = 0; i < ps->acc.cap; i++) {
		if (!ps->acc.used[i])
			continue;
		struct pacc *a = (struct pacc *)(uintptr_t)ps->acc.vals[i];
		for (size_t k = 0; k < a->n; k++)
			free(a->sp[k].line);
		free(a->sp);
		free(a);
	}
	rc_map_free(&ps->acc);
	rc_map_init(&ps->acc);
	ps->held = 0;
}

/* The pass will make the patterns: what is held is of no use. */
static void stream_off(struct rc_pat_stream *ps)
{
	ps->off = 1;
	acc_drop(ps);
}

struct rc_pat_stream *rc_pat_stream_open(sqlite3 *h, char *err,
					 size_t errlen)
{
	struct rc_pat_stream *ps = calloc(1, sizeof *ps);
	if (!ps) {
		snprintf(err, errlen, "patterns: out of memory");
		return NULL;
	}
	builder_init(&ps->b, h, err, errlen);
	rc_map_init(&ps->acc);
	ps->b.inline_self = 1;
	ps->b.stream = 1;
	if (rc_sql_exec(&ps->b.x, tables_sql) < 0 ||
	    pbatch_init(&ps->b, &ps->b.ins_span, "span_patterns", 6) < 0) {
		builder_free(&ps->b);
		free(ps);
		return NULL;
	}
	/* from here on errors go to the stream's own buffer, reported by
	 * rc_patterns_finish */
	ps->b.x.err = ps->err;
	ps->b.x.errlen = sizeof ps->err;
	return ps;
}

void rc_pat_stream_emit(struct rc_pat_stream *ps,
			void (*fn)(void *arg, const struct rc_pat_row *r),
			void *arg)
{
	if (!ps)
		return;
	ps->b.emit = fn;
	ps->b.emit_arg = arg;
}

void rc_pat_stream_free(struct rc_pat_stream *ps)
{
	if (!ps)
		return;
	acc_drop(ps);
	builder_free(&ps->b);
	free(ps);
}

void rc_pat_stream_span(struct rc_pat_stream *ps, const struct rc_pat_span *s)
{
	uint64_t v;
	struct pacc *a;

	if (!ps || ps->off || !s->req)
		return;
	if (rc_map_get(&ps->acc, s->req, &v)) {
		a = (struct pacc *)(uintptr_t)v;
	} else {
		if (!(a = calloc(1, sizeof *a)))
			goto oom;
		if (rc_map_put(&ps->acc, s->req, (uint64_t)(uintptr_t)a) < 0) {
			free(a);
			goto oom;
		}
	}
	/* as add_span reads the row: a NULL time is 0 and not had */
	struct pspan *p = pspan_slot(&a->sp, a->n, &a->cap);
	if (!p)
		goto oom;
	p->id = (int64_t)s->id;
	p->parent_id = (int64_t)s->parent;
	p->has_start = s->has_start;
	p->start = s->has_start ? s->start : 0;
	p->has_end = s->has_end;
	p->end = s->has_end ? s->end : 0;
	if (!(p->line = span_line(s->kind, s->protocol, s->exe, s->name,
				  s->target)))
		goto oom;
	a->n++;
	if (++ps->held > HOLD_MAX)
		stream_off(ps);
	return;
oom:
	/* the pass, with its own memory, may still make it */
	stream_off(ps);
}

int64_t rc_pat_stream_request(struct rc_pat_stream *ps, uint64_t req,
			      uint64_t root_span)
{
	uint64_t v;

	if (!ps || ps->off || !rc_map_get(&ps->acc, req, &v))
		return 0;        /* no span: no pattern, as in the pass */
	struct builder *b = &ps->b;
	struct pacc *a = (struct pacc *)(uintptr_t)v;
	rc_map_del(&ps->acc, req);
	ps->held -= a->n;
	free(b->sp);
	b->sp = a->sp;
	b->nsp = a->n;
	b->capsp = a->cap;
	free(a);
	b->last_pid = 0;
	int r = finish_request(b, (int64_t)req, (int64_t)root_span);
	clear_request(b);
	if (r < 0 || b->x.failed)
		return 0;        /* reported by rc_patterns_finish */
	if (b->over) {
		stream_off(ps);
		return 0;
	}
	return b->last_pid;
}

struct pfirst { int64_t req; size_t k; };

static int cmp_pfirst(const void *a, const void *b)
{
	const struct pfirst *x = a, *y = b;
	return x->req < y->req ? -1 : x->req > y->req;
}

/* The patterns' ids in the order of their first requests (the pass's
 * order; no two patterns have the same first request): the rows written
 * with the stream's ids, then B->pat, made so. */
static int renumber(struct builder *b)
{
	size_t n = b->npat, k;
	struct pfirst *f = malloc((n ? n : 1) * sizeof *f);
	int r = -1;

	if (!f)
		return rc_sql_fail(&b->x, "patterns: out of memory");
	for (k = 0; k < n; k++)
		f[k] = (struct pfirst){ b->pat[k].first_request, k };
	/* f[k].k: the pattern that gets id k + 1 */
	qsort(f, n, sizeof *f, cmp_pfirst);
	for (k = 0; k < n && f[k].k == k; k++)
		;
	if (k == n) {
		r = 0;
		goto out;
	}
	sqlite3_stmt *ins = NULL;
	if (rc_sql_exec(&b->x, "CREATE TEMP TABLE pattern_map(old INTEGER PRIMARY KEY, new INTEGER);\n") < 0 ||
	    !(ins = rc_sql_prep(&b->x, "INSERT INTO temp.pattern_map VALUES(?,?)")))
		goto out;
	for (k = 0; k < n; k++) {
		if (f[k].k == k)
			continue;
		sqlite3_bind_int64(ins, 1, (int64_t)f[k].k + 1);
		sqlite3_bind_int64(ins, 2, (int64_t)k + 1);
		if (sqlite3_step(ins) != SQLITE_DONE) {
			rc_sql_fail_db(&b->x, "patterns");
			break;
		}
		sqlite3_reset(ins);
	}
	sqlite3_finalize(ins);
	if (b->x.failed || rc_sql_exec(&b->x,
		"UPDATE span_patterns SET pattern_id = m.new FROM temp.pattern_map m\n"
		"  WHERE m.old = span_patterns.pattern_id;\n"
		"UPDATE requests SET pattern_id = m.new FROM temp.pattern_map m\n"
		"  WHERE m.old = requests.pattern_id;\n"
		"DROP TABLE temp.pattern_map;\n") < 0)
		goto out;
	struct pattern *np = malloc((n ? n : 1) * sizeof *np);
	if (!np) {
		rc_sql_fail(&b->x, "patterns: out of memory");
		goto out;
	}
	for (k = 0; k < n; k++)
		np[k] = b->pat[f[k].k];
	free(b->pat);
	b->pat = np;
	b->cappat = n;
	b->renumbered = 1;
	r = 0;
out:
	free(f);
	return r;
}

int rc_patterns_finish(sqlite3 *h, struct rc_pat_stream *ps, char *err,
		       size_t errlen)
{
	int r = -1, p = 1;

	if (!ps)
		return rc_patterns_build(h, err, errlen);
	struct builder *b = &ps->b;
	if (b->x.failed) {
		/* an SQLite error or no memory while the rows went in */
		snprintf(err, errlen, "%s", ps->err);
		goto out;
	}
	b->x.err = err;
	b->x.errlen = errlen;
	if (!ps->off && !ps->acc.n) {
		if (pbatch_flush(b, &b->ins_span) < 0 ||
		    (p = self_fixups(b)) < 0 || (!p && renumber(b) < 0))
			goto out;
	}
	if (p) {
		/* the pass makes them whole, from the rows */
		rc_pat_stream_free(ps);
		ps = NULL;
		struct rc_sql x = { .h = h, .who = "patterns", .err = err,
				    .errlen = errlen };
		if (rc_sql_exec(&x, "DELETE FROM span_patterns;\n"
				"UPDATE requests SET pattern_id = NULL WHERE pattern_id IS NOT NULL;\n") < 0)
			return -1;
		return rc_patterns_build(h, err, errlen);
	}
	r = patterns_end(b);
out:
	rc_pat_stream_free(ps);
	return r;
}
