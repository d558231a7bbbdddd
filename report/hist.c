/*
 * hist.c - bp-report's latency histograms: one per request shape, on a
 * logarithmic time axis, drawn as inline SVG (docs/report.md).
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "page.h"

#define HIST_MAX    12           /* histograms drawn */
#define HIST_BINS   24

/* One histogram: log-spaced bins between the shortest and the longest
 * duration, the percentiles as lines. */
static int histogram(struct page *p, sqlite3_stmt *d, const char *protocol,
		     const char *service, const char *shape, int64_t n,
		     double p50, double p90, double p99)
{
	FILE *f = p->f;
	int64_t cnt[HIST_BINS] = { 0 };
	double lo = 0, hi = 0;
	int first = 1;

	sqlite3_reset(d);
	sqlite3_bind_text(d, 1, protocol, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(d, 2, service, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(d, 3, shape, -1, SQLITE_TRANSIENT);
	/* ordered: the first row is the shortest */
	double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
	int64_t k = 0;
	if (!v) {
		snprintf(p->x->err, sizeof p->x->err, "out of memory");
		return -1;
	}
	while (sqlite3_step(d) == SQLITE_ROW && k < n) {
		v[k] = sqlite3_column_double(d, 0);
		if (v[k] < 1)
			v[k] = 1;
		if (first || v[k] < lo)
			lo = v[k];
		if (first || v[k] > hi)
			hi = v[k];
		first = 0;
		k++;
	}
	double l0 = log10(lo), l1 = log10(hi);
	if (l1 - l0 < 1e-9)
		l1 = l0 + 1e-3;
	for (int64_t i = 0; i < k; i++) {
		int b = (int)((log10(v[i]) - l0) / (l1 - l0) * HIST_BINS);
		if (b >= HIST_BINS)
			b = HIST_BINS - 1;
		if (b < 0)
			b = 0;
		cnt[b]++;
	}
	free(v);
	int64_t top = 1;
	for (int b = 0; b < HIST_BINS; b++)
		if (cnt[b] > top)
			top = cnt[b];
	const int W = 360, H = 120, L = 30, B = 20;
	double bw = (double)(W - L - 6) / HIST_BINS;
	fputs("<div class=\"hist\"><div class=\"t\">", f);
	html_text_max(f, service, 30);
	fputs(" ", f);
	html_text_max(f, shape, 90);
	fprintf(f, "</div><svg class=\"histogram\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"latency histogram\">", W, H, W, H);
	for (int b = 0; b < HIST_BINS; b++) {
		if (!cnt[b])
			continue;
		double h = (double)(H - B - 8) * (double)cnt[b] / (double)top;
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#4e79a7\"><title>%lld requests: ",
			L + b * bw, H - B - h, bw - 1, h, (long long)cnt[b]);
		html_dur(f, pow(10, l0 + (l1 - l0) * b / HIST_BINS));
		fputs(" - ", f);
		html_dur(f, pow(10, l0 + (l1 - l0) * (b + 1) / HIST_BINS));
		fputs("</title></rect>", f);
	}
	const struct { double v; const char *name, *col; } mk[] = {
		{ p50, "p50", "#2e7d32" }, { p90, "p90", "#f28e2b" }, { p99, "p99", "#b00020" } };
	for (int i = 0; i < 3; i++) {
		double x = L + (log10(mk[i].v < 1 ? 1 : mk[i].v) - l0) / (l1 - l0) * (W - L - 6);
		if (x < L)
			x = L;
		if (x > W - 6)
			x = W - 6;
		fprintf(f, "<line x1=\"%.1f\" y1=\"6\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"1.5\"><title>%s ",
			x, x, H - B, mk[i].col, mk[i].name);
		html_dur(f, mk[i].v);
		fprintf(f, "</title></line><text x=\"%.1f\" y=\"%d\" fill=\"%s\">%s</text>",
			x + 2, 14 + 10 * i, mk[i].col, mk[i].name);
	}
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\"/>", L, H - B, W - 6, H - B);
	fprintf(f, "<text x=\"%d\" y=\"%d\">", L, H - 6);
	html_dur(f, lo);
	fprintf(f, "</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">", W - 6, H - 6);
	html_dur(f, hi);
	fprintf(f, "</text><text x=\"2\" y=\"%d\">%lld</text><text x=\"2\" y=\"%d\">0</text></svg>",
		14, (long long)top, H - B);
	fprintf(f, "<div class=\"muted\">%lld requests &middot; p50 ", (long long)n);
	html_dur(f, p50);
	fputs(" &middot; p90 ", f);
	html_dur(f, p90);
	fputs(" &middot; p99 ", f);
	html_dur(f, p99);
	fputs("</div></div>\n", f);
	p->sum->histograms++;
	return 0;
}

int report_histograms(struct page *p)
{
	FILE *f = p->f;
	sqlite3_stmt *s = export_prep(p->x,
		"SELECT protocol, service, shape, n, p50_ns, p90_ns, p99_ns\n"
		"FROM latency_per_shape ORDER BY n DESC, shape LIMIT ?");
	sqlite3_stmt *d = export_prep(p->x,
		"SELECT r.duration_ns FROM requests r JOIN patterns p\n"
		"  ON p.pattern_id = r.pattern_id\n"
		"WHERE r.duration_ns IS NOT NULL AND r.protocol IS ? AND p.service IS ?\n"
		"  AND p.root IS ? ORDER BY r.duration_ns");
	int r = 0;
	if (!s || !d) {
		sqlite3_finalize(s);
		sqlite3_finalize(d);
		return -1;
	}
	sqlite3_bind_int64(s, 1, HIST_MAX);
	fprintf(f, "<section id=\"latency\"><h2>Latency per target</h2><p class=\"muted\">Requests grouped by their normalised target (ids and query values folded), the %d most frequent; logarithmic bins; exact percentiles (nearest rank).</p><div class=\"hists\">\n",
		HIST_MAX);
	while (sqlite3_step(s) == SQLITE_ROW && !r) {
		char *proto = strdup(export_col(s, 0)), *svc = strdup(export_col(s, 1)),
		     *shape = strdup(export_col(s, 2));
		if (!proto || !svc || !shape) {
			snprintf(p->x->err, sizeof p->x->err, "out of memory");
			r = -1;
		} else {
			r = histogram(p, d, proto, svc, shape, sqlite3_column_int64(s, 3),
				      sqlite3_column_double(s, 4),
				      sqlite3_column_double(s, 5),
				      sqlite3_column_double(s, 6));
		}
		free(proto);
		free(svc);
		free(shape);
	}
	sqlite3_finalize(s);
	sqlite3_finalize(d);
	fputs("</div></section>\n", f);
	return r;
}
