/*
 * clock.c - clock domains: which images share a clock (pass 1), and the
 * offsets between domains, from paired messages (pass 2); see clock.h.
 *
 * Memory: one 16-byte cell per ordered pair of domains that exchanged a
 * message, whatever the length of the log.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "input.h"

struct cell {
	int64_t  max;            /* max(s - r) over messages from -> to */
	uint64_t n;
	uint32_t from, to;
};

struct rc_clock {
	struct rc_map idx;       /* (from << 32 | to) -> cell index */
	struct cell  *cells;
	uint32_t      ncells, cap;
};

int rc_clock_init(struct rc_ctx *c)
{
	c->clock = calloc(1, sizeof *c->clock);
	return c->clock ? 0 : -ENOMEM;
}

void rc_clock_free(struct rc_ctx *c)
{
	if (!c->clock)
		return;
	rc_map_free(&c->clock->idx);
	free(c->clock->cells);
	free(c->clock);
	c->clock = NULL;
}

static struct cell *cell_get(const struct rc_clock *k, uint32_t a, uint32_t b)
{
	uint64_t i;
	return rc_map_get(&k->idx, rc_key2(a, b), &i) ? &k->cells[i] : NULL;
}

void rc_clock_sample(struct rc_ctx *c, uint32_t from, uint32_t to,
		     int64_t s, int64_t r)
{
	struct rc_clock *k = c->clock;
	struct cell *x = cell_get(k, from, to);

	if (!x) {
		if (k->ncells == k->cap) {
			uint32_t ncap = k->cap ? k->cap * 2 : 16;
			struct cell *nc = realloc(k->cells, ncap * sizeof *nc);
			if (!nc)
				return;
			k->cells = nc;
			k->cap = ncap;
		}
		if (rc_map_put(&k->idx, rc_key2(from, to), k->ncells) < 0)
			return;
		x = &k->cells[k->ncells++];
		x->max = s - r;
		x->n = 0;
		x->from = from;
		x->to = to;
	}
	if (s - r > x->max)
		x->max = s - r;
	x->n++;
}

/* Bounds on corr[b] - corr[a] from the samples (and the host rule). */
struct edge {
	int     has_lo, has_hi, same_host;
	int64_t lo, hi;
	uint64_t n;
};

static struct edge edge_of(const struct rc_ctx *c, uint32_t a, uint32_t b)
{
	struct edge e = { 0 };
	const struct cell *ab = cell_get(c->clock, a, b);
	const struct cell *ba = cell_get(c->clock, b, a);

	if (c->doms[a].host == c->doms[b].host) {
		/* One host: CLOCK_REALTIME is shared, provisional times agree. */
		e.same_host = e.has_lo = e.has_hi = 1;
		return e;
	}
	if (ab) {
		e.has_lo = 1;
		e.lo = ab->max;
		e.n += ab->n;
	}
	if (ba) {
		e.has_hi = 1;
		e.hi = -ba->max;
		e.n += ba->n;
	}
	return e;
}

/* Width of an edge's interval, for choosing the tightest first. */
static uint64_t width(const struct edge *e)
{
	if (e->same_host)
		return 0;
	if (!e->has_lo && !e->has_hi)
		return UINT64_MAX;
	if (!e->has_lo || !e->has_hi)
		return UINT64_MAX - 1;
	return e->hi >= e->lo ? (uint64_t)(e->hi - e->lo) + 1 : 1;
}

void rc_clock_solve(struct rc_ctx *c)
{
	uint32_t n = c->ndoms, ref = c->ref_dom;
	int64_t *tree = calloc(n + 1, sizeof *tree);
	uint8_t *in = calloc(n + 1, 1);
	struct edge *be = calloc(n + 1, sizeof *be);     /* best edge into b */
	uint32_t *bfrom = calloc(n + 1, sizeof *bfrom);

	for (uint32_t d = 0; d < n; d++) {
		struct rc_domain *D = &c->doms[d];
		D->corr = 0;
		D->linked = 0;
		D->has_lo = D->has_hi = 0;
		D->lo = D->hi = 0;
		D->samples = 0;
		D->method = "realtime";
	}
	c->doms[ref].linked = 1;
	c->doms[ref].has_lo = c->doms[ref].has_hi = 1;
	c->doms[ref].method = "reference";
	if (!tree || !in || !be || !bfrom)
		goto out;

	/* Prim: grow the tree from the reference over the tightest edges. */
	for (uint32_t b = 0; b < n; b++)
		bfrom[b] = RC_NONE;
	for (uint32_t x = ref; x != RC_NONE;) {
		in[x] = 1;
		for (uint32_t b = 0; b < n; b++) {
			if (in[b])
				continue;
			struct edge e = edge_of(c, x, b);
			uint64_t w = width(&e);
			if (w == UINT64_MAX)
				continue;
			if (bfrom[b] == RC_NONE || w < width(&be[b]) ||
			    (w == width(&be[b]) && e.n > be[b].n)) {
				be[b] = e;
				bfrom[b] = x;
			}
		}
		x = RC_NONE;
		for (uint32_t b = 0; b < n; b++)
			if (!in[b] && bfrom[b] != RC_NONE &&
			    (x == RC_NONE || width(&be[b]) < width(&be[x])))
				x = b;
		if (x == RC_NONE)
			break;
		const struct edge *best = &be[x];
		struct rc_domain *A = &c->doms[bfrom[x]], *B = &c->doms[x];
		int64_t est;
		if (best->same_host)
			est = 0;
		else if (best->has_lo && best->has_hi)
			est = best->lo + (best->hi - best->lo) / 2;
		else if (best->has_lo)
			est = best->lo > 0 ? best->lo : 0;
		else
			est = best->hi < 0 ? best->hi : 0;
		if (best->has_lo && best->has_hi && best->lo > best->hi)
			rc_warn(c, NULL, 0,
				"clock: messages between %s and %s contradict each other by %" PRId64 " ns (clock drift during the log?); using the middle",
				A->label, B->label, best->lo - best->hi);
		B->corr = A->corr + est;
		B->linked = 1;
		B->samples = best->n;
		B->method = best->same_host ? "host" : "messages";
		B->has_lo = A->has_lo && best->has_lo;
		B->has_hi = A->has_hi && best->has_hi;
		B->lo = A->lo + best->lo;
		B->hi = A->hi + best->hi;
	}

	/*
	 * Relax: every observed message constraint corr[b] >= corr[a] + m
	 * must hold, and domains of one host stay equal.  Values only rise;
	 * no convergence within n rounds means contradictory constraints.
	 */
	for (uint32_t d = 0; d < n; d++)
		tree[d] = c->doms[d].corr;
	int changed = 1;
	for (uint32_t round = 0; round <= n && changed; round++) {
		changed = 0;
		for (uint32_t i = 0; i < c->clock->ncells; i++) {
			const struct cell *x = &c->clock->cells[i];
			struct rc_domain *A = &c->doms[x->from];
			struct rc_domain *B = &c->doms[x->to];
			if (!A->linked || !B->linked || A->host == B->host)
				continue;
			if (B->corr < A->corr + x->max) {
				B->corr = A->corr + x->max;
				changed = 1;
			}
		}
		for (uint32_t a = 0; a < n; a++) {
			for (uint32_t b = a + 1; b < n; b++) {
				struct rc_domain *A = &c->doms[a], *B = &c->doms[b];
				if (A->host != B->host || !A->linked ||
				    !B->linked || A->corr == B->corr)
					continue;
				if (A->corr < B->corr)
					A->corr = B->corr;
				else
					B->corr = A->corr;
				changed = 1;
			}
		}
	}
	if (changed) {
		rc_warn(c, NULL, 0,
			"clock: the message constraints between hosts admit no consistent offsets; some receives may appear before their sends");
		for (uint32_t d = 0; d < n; d++)
			c->doms[d].corr = tree[d];
	} else {
		int64_t shift = c->doms[ref].corr;
		for (uint32_t d = 0; d < n; d++)
			if (c->doms[d].linked)
				c->doms[d].corr -= shift;
	}
out:
	/* Monotonic offsets to the reference: ref_mono = mono + off. */
	for (uint32_t d = 0; d < n; d++) {
		struct rc_domain *D = &c->doms[d];
		int64_t base = D->delta - c->doms[ref].delta;
		D->off = D->corr + base;
		D->lo += base;
		D->hi += base;
	}
	free(tree);
	free(in);
	free(be);
	free(bfrom);
}

static void fmt_s(char *buf, size_t len, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	snprintf(buf, len, "%c%" PRIu64 ".%09" PRIu64 " s", ns < 0 ? '-' : '+',
		 a / 1000000000u, a % 1000000000u);
}

void rc_clock_report(const struct rc_ctx *c, FILE *f)
{
	if (c->ndoms < 2)
		return;
	fprintf(f, "bp-reconstruct: clock: %s is the reference\n",
		c->doms[c->ref_dom].label);
	for (uint32_t d = 0; d < c->ndoms; d++) {
		const struct rc_domain *D = &c->doms[d];
		char o[40], lo[40], hi[40];

		if (D->reference)
			continue;
		fmt_s(o, sizeof o, D->off);
		if (strcmp(D->method, "messages") == 0) {
			if (D->has_lo)
				fmt_s(lo, sizeof lo, D->lo);
			else
				snprintf(lo, sizeof lo, "?");
			if (D->has_hi)
				fmt_s(hi, sizeof hi, D->hi);
			else
				snprintf(hi, sizeof hi, "?");
			fprintf(f, "bp-reconstruct: clock: %s monotonic offset %s (bounds %s .. %s) from %" PRIu64 " messages\n",
				D->label, o, lo, hi, D->samples);
		} else if (strcmp(D->method, "host") == 0) {
			fprintf(f, "bp-reconstruct: clock: %s monotonic offset %s (same host: wall clock)\n",
				D->label, o);
		} else {
			fprintf(f, "bp-reconstruct: clock: %s monotonic offset %s from its wall clock only (no message links it to the reference)\n",
				D->label, o);
		}
	}
}

/* ---- clock domains (pass 1) ----------------------------------------------- */

/* Images of one host whose clocks differ by more than this are in
 * different clock domains (time namespaces). */
#define DOMAIN_GAP_NS  (1 * RC_NS)

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int64_t host_fallback_delta(const struct rc_ctx *c, uint32_t host)
{
	for (uint32_t f = 0; f < c->nfiles; f++) {
		if (c->files[f].host != host)
			continue;
		const struct bt_seg_header *h = bt_seg_file_header(c->files[f].rd);
		return (int64_t)(h->created_real - h->created_mono);
	}
	return 0;
}

static int add_domain(struct rc_ctx *c, uint32_t host, int64_t delta,
		      unsigned nth)
{
	struct rc_domain *nd = realloc(c->doms, (c->ndoms + 1) * sizeof *nd);
	if (!nd)
		return -ENOMEM;
	c->doms = nd;
	struct rc_domain *d = &nd[c->ndoms];
	memset(d, 0, sizeof *d);
	d->host = host;
	d->delta = delta;
	if (nth == 0)
		snprintf(d->label, sizeof d->label, "%s", c->hosts[host].name);
	else
		snprintf(d->label, sizeof d->label, "%s#%u",
			 c->hosts[host].name, nth + 1);
	return (int)c->ndoms++;
}

/* A domain's delta is the median of its first images' (by their first
 * records): later images do not move it, so a merge that read on as the
 * logs grew keeps the times it began with (scan.c, rc_scan_more). */
#define DOMAIN_MEDIAN_N 15

struct imd {
	int64_t  delta;
	uint64_t first;          /* the image's first record (monotonic) */
	uint64_t ring;           /* then by ring and pid: a fixed order */
	uint32_t pid;
};

static int by_delta(const void *a, const void *b)
{
	const struct imd *x = a, *y = b;
	return x->delta < y->delta ? -1 : x->delta > y->delta;
}

static int by_first(const void *a, const void *b)
{
	const struct imd *x = a, *y = b;
	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	if (x->ring != y->ring)
		return x->ring < y->ring ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/*
 * Cluster the images of each host by realtime - monotonic: a gap of more
 * than DOMAIN_GAP_NS between neighbours starts a new domain.  A domain's
 * delta is the median of its first DOMAIN_MEDIAN_N images'.
 */
int rc_clock_domains(struct rc_ctx *c)
{
	struct imd *d = malloc((c->nimages + 1) * sizeof *d);
	uint64_t *first = malloc((c->nimages + 1) * sizeof *first);
	int64_t med[DOMAIN_MEDIAN_N];

	if (!d || !first) {
		free(d);
		free(first);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < c->nimages; i++)
		first[i] = UINT64_MAX;
	for (uint32_t i = 0; i < c->nstreams; i++) {
		const struct rc_stream *st = &c->streams[i];
		if (st->has_first && st->first_ts < first[st->image])
			first[st->image] = st->first_ts;
		if ((i & 32767) == 32767)
			rc_input_tables_release(c);
	}
	for (uint32_t h = 0; h < c->nhosts; h++) {
		uint32_t n = 0, first_dom = c->ndoms;
		for (uint32_t i = 0; i < c->nimages; i++) {
			const struct rc_image *im = &c->images[i];
			if (im->host == h && im->has_delta)
				d[n++] = (struct imd){ im->delta, first[i],
						       im->ring_id, im->pid };
			if ((i & 32767) == 32767)
				rc_input_tables_release(c);
		}
		qsort(d, n, sizeof *d, by_delta);
		if (n == 0) {
			if (add_domain(c, h, host_fallback_delta(c, h), 0) < 0)
				goto oom;
		}
		for (uint32_t a = 0, nth = 0; a < n; nth++) {
			uint32_t b = a + 1;
			while (b < n && d[b].delta - d[b - 1].delta <= DOMAIN_GAP_NS)
				b++;
			/* the cluster's first images, by their first records */
			qsort(d + a, b - a, sizeof *d, by_first);
			uint32_t m = b - a < DOMAIN_MEDIAN_N ? b - a : DOMAIN_MEDIAN_N;
			for (uint32_t k = 0; k < m; k++)
				med[k] = d[a + k].delta;
			qsort(med, m, sizeof *med, cmp_i64);
			if (add_domain(c, h, med[m / 2], nth) < 0)
				goto oom;
			a = b;
		}
		/* Assign images: the domain whose delta is nearest. */
		for (uint32_t i = 0; i < c->nimages; i++) {
			struct rc_image *im = &c->images[i];
			if ((i & 32767) == 32767)
				rc_input_tables_release(c);
			if (im->host != h)
				continue;
			uint32_t best = first_dom;
			if (im->has_delta) {
				for (uint32_t k = first_dom; k < c->ndoms; k++)
					if (llabs(c->doms[k].delta - im->delta) <
					    llabs(c->doms[best].delta - im->delta))
						best = k;
			}
			im->domain = best;
			c->doms[best].events += im->events;
		}
	}
	free(d);
	free(first);

	c->ref_dom = 0;
	for (uint32_t k = 0; k < c->ndoms; k++) {
		const char *want = c->opt->reference;
		if (want) {
			if (strcmp(c->hosts[c->doms[k].host].name, want) == 0) {
				c->ref_dom = k;
				break;
			}
		} else if (c->doms[k].events > c->doms[c->ref_dom].events) {
			c->ref_dom = k;
		}
	}
	if (c->opt->reference && !(c->p1 && c->p1->more) &&
	    strcmp(c->hosts[c->doms[c->ref_dom].host].name,
		   c->opt->reference) != 0)
		rc_warn(c, NULL, 0,
			"reference host '%s' is not in the logs; using '%s' (hosts: see the hosts table)",
			c->opt->reference, c->doms[c->ref_dom].label);
	c->doms[c->ref_dom].reference = 1;
	return 0;
oom:
	free(d);
	free(first);
	return -ENOMEM;
}
