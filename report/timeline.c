/*
 * timeline.c - one request as an SVG swimlane diagram (see report.h), in
 * the manner of the paper's Figure 1: time runs to the right, each
 * thread that worked for the request has a lane, spans are bars (server
 * spans solid, client spans pale, failed ones outlined in red) stacked by
 * nesting, the fragments of work the thread did for the request are a
 * dark strip under them, and messages are arrows from the sender's lane
 * to the receiver's.  The first lane is the outside world: the client
 * that sent the request and any untraced peer.
 *
 * The arrow heads are the markers "bp-arr-req" and "bp-arr-rep" the page
 * defines once (report.c).
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define WIDTH     1100
#define LABEL_W   210
#define PLOT_W    (WIDTH - LABEL_W - 20)
#define AXIS_H    26
#define ROW_H     18
#define FRAG_H    5
#define LANE_PAD  6
#define MAX_ROWS  12
#define MAX_SPANS 2000
#define MAX_LANES 200

struct tspan {
	int64_t id, start, end, proc, tid, status;
	int     has_end, has_status, error, lane, row, has_self;
	double  self;
	char   *kind, *proto, *name, *target, *peer;
};

struct tlane {
	int64_t proc, tid, first;
	int     rows, y, h;
	int64_t rowend[MAX_ROWS];
	char    label[160], sub[160];
};

struct tl {
	struct export_db *x;
	FILE   *f;
	int64_t t0, t1;
	int64_t origin;              /* the request's start: time 0 */
	struct tspan *sp;
	size_t nsp;
	struct tlane lane[MAX_LANES];
	int    nlanes;
	int    truncated;
};

static double xof(const struct tl *t, int64_t ns)
{
	return LABEL_W + (double)(ns - t->t0) * PLOT_W / (double)(t->t1 - t->t0);
}

static const char *colour(const char *proto)
{
	static const struct { const char *p, *c; } tab[] = {
		{ "http", "#4e79a7" }, { "fastcgi", "#f28e2b" },
		{ "postgresql", "#59a14f" }, { "dns", "#b07aa1" },
		{ "line", "#76b7b2" }, { "oneshot", "#edc948" },
	};
	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
		if (!strcmp(proto, tab[i].p))
			return tab[i].c;
	return "#9c9c9c";
}

/* The lane of (PROC, TID), made if new (first seen at T); the outside
 * lane (0) when PROC is 0 or the lanes run out. */
static int lane_of(struct tl *t, int64_t proc, int64_t tid, int64_t at)
{
	if (!proc)
		return 0;
	for (int i = 1; i < t->nlanes; i++)
		if (t->lane[i].proc == proc && t->lane[i].tid == tid) {
			if (at < t->lane[i].first)
				t->lane[i].first = at;
			return i;
		}
	if (t->nlanes == MAX_LANES) {
		t->truncated = 1;
		return 0;
	}
	struct tlane *l = &t->lane[t->nlanes];
	memset(l, 0, sizeof *l);
	l->proc = proc;
	l->tid = tid;
	l->first = at;
	return t->nlanes++;
}

static char *dup_col(sqlite3_stmt *s, int i)
{
	const unsigned char *v = sqlite3_column_text(s, i);
	return strdup(v ? (const char *)v : "");
}

static void free_spans(struct tl *t)
{
	for (size_t i = 0; i < t->nsp; i++) {
		free(t->sp[i].kind);
		free(t->sp[i].proto);
		free(t->sp[i].name);
		free(t->sp[i].target);
		free(t->sp[i].peer);
	}
	free(t->sp);
	t->sp = NULL;
	t->nsp = 0;
}

static int load_spans(struct tl *t, int64_t req)
{
	sqlite3_stmt *s = export_prep(t->x,
		"SELECT s.span_id, s.kind, s.protocol, s.name, s.target, s.status,\n"
		"  s.peer, s.start_ns, s.end_ns, s.process_id, s.tid, sp.self_ns,\n"
		"  (s.protocol = 'http' AND s.status >= 500)\n"
		"   OR (s.protocol = 'dns' AND s.status != 0) OR s.end_ns IS NULL\n"
		"   OR EXISTS (SELECT 1 FROM attrs a WHERE a.span_id = s.span_id\n"
		"              AND a.key = 'error')\n"
		"FROM spans s LEFT JOIN span_patterns sp ON sp.span_id = s.span_id\n"
		"WHERE s.request_id = ? ORDER BY s.start_ns, s.span_id LIMIT ?");
	size_t cap = 0;
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, req);
	sqlite3_bind_int64(s, 2, MAX_SPANS + 1);
	while (sqlite3_step(s) == SQLITE_ROW) {
		if (t->nsp == MAX_SPANS) {
			t->truncated = 1;
			break;
		}
		if (t->nsp == cap) {
			cap = cap ? cap * 2 : 32;
			struct tspan *p = realloc(t->sp, cap * sizeof *p);
			if (!p) {
				sqlite3_finalize(s);
				snprintf(t->x->err, sizeof t->x->err, "out of memory");
				return -1;
			}
			t->sp = p;
		}
		struct tspan *p = &t->sp[t->nsp++];
		memset(p, 0, sizeof *p);
		p->id = sqlite3_column_int64(s, 0);
		p->kind = dup_col(s, 1);
		p->proto = dup_col(s, 2);
		p->name = dup_col(s, 3);
		p->target = dup_col(s, 4);
		p->has_status = sqlite3_column_type(s, 5) != SQLITE_NULL;
		p->status = sqlite3_column_int64(s, 5);
		p->peer = dup_col(s, 6);
		p->start = sqlite3_column_int64(s, 7);
		p->has_end = sqlite3_column_type(s, 8) != SQLITE_NULL;
		p->end = p->has_end ? sqlite3_column_int64(s, 8) : p->start;
		p->proc = sqlite3_column_int64(s, 9);
		p->tid = sqlite3_column_int64(s, 10);
		p->has_self = sqlite3_column_type(s, 11) != SQLITE_NULL;
		p->self = sqlite3_column_double(s, 11);
		p->error = sqlite3_column_int(s, 12);
		if (!p->kind || !p->proto || !p->name || !p->target || !p->peer) {
			sqlite3_finalize(s);
			snprintf(t->x->err, sizeof t->x->err, "out of memory");
			return -1;
		}
		if (p->start < t->t0)
			t->t0 = p->start;
		if (p->end > t->t1)
			t->t1 = p->end;
	}
	sqlite3_finalize(s);
	return 0;
}

/* Open spans run to the end of the picture. */
static void extend_open(struct tl *t)
{
	for (size_t i = 0; i < t->nsp; i++)
		if (!t->sp[i].has_end)
			t->sp[i].end = t->t1;
}

static int layout(struct tl *t)
{
	for (int i = 0; i < t->nlanes; i++) {
		t->lane[i].rows = 0;
		memset(t->lane[i].rowend, 0, sizeof t->lane[i].rowend);
	}
	/* spans in start order, longer first: a parent comes before the
	 * spans nested in it and takes the row above them */
	for (size_t i = 0; i < t->nsp; i++) {
		struct tspan *p = &t->sp[i];
		p->lane = lane_of(t, p->proc, p->tid, p->start);
		struct tlane *l = &t->lane[p->lane];
		int r = 0;
		while (r < MAX_ROWS - 1 && r < l->rows && l->rowend[r] > p->start)
			r++;
		p->row = r;
		if (p->end > l->rowend[r])
			l->rowend[r] = p->end;
		if (r + 1 > l->rows)
			l->rows = r + 1;
	}
	/* lanes in the order they joined the request, outside first */
	for (int i = 2; i < t->nlanes; i++) {
		struct tlane k = t->lane[i];
		int j = i;
		while (j > 1 && t->lane[j - 1].first > k.first) {
			t->lane[j] = t->lane[j - 1];
			j--;
		}
		if (j != i) {
			t->lane[j] = k;
			/* renumber the spans' lanes */
			for (size_t s = 0; s < t->nsp; s++) {
				int ln = t->sp[s].lane;
				if (ln == i)
					t->sp[s].lane = j;
				else if (ln >= j && ln < i)
					t->sp[s].lane = ln + 1;
			}
		}
	}
	int y = AXIS_H;
	for (int i = 0; i < t->nlanes; i++) {
		struct tlane *l = &t->lane[i];
		if (l->rows < 1)
			l->rows = 1;
		l->y = y;
		l->h = l->rows * ROW_H + FRAG_H + 2 * LANE_PAD;
		y += l->h;
	}
	return y + 8;
}

static int lane_names(struct tl *t, const char *client)
{
	sqlite3_stmt *s = export_prep(t->x,
		"SELECT exe, pid, host FROM processes WHERE process_id = ?");
	if (!s)
		return -1;
	snprintf(t->lane[0].label, sizeof t->lane[0].label, "outside");
	snprintf(t->lane[0].sub, sizeof t->lane[0].sub, "client %s", client);
	for (int i = 1; i < t->nlanes; i++) {
		struct tlane *l = &t->lane[i];
		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, l->proc);
		if (sqlite3_step(s) == SQLITE_ROW) {
			snprintf(l->label, sizeof l->label, "%s[%lld]",
				 export_basename(export_col(s, 0)),
				 (long long)sqlite3_column_int64(s, 1));
			snprintf(l->sub, sizeof l->sub, "tid %lld @ %s",
				 (long long)l->tid, export_col(s, 2));
		} else {
			snprintf(l->label, sizeof l->label, "process %lld",
				 (long long)l->proc);
			snprintf(l->sub, sizeof l->sub, "tid %lld", (long long)l->tid);
		}
	}
	sqlite3_finalize(s);
	return 0;
}

/* A round step for about 8 ticks over SPAN ns. */
static int64_t tick_step(int64_t span)
{
	int64_t step = 1;
	while (step * 8 < span) {
		if (step * 2 * 8 >= span)
			return step * 2;
		if (step * 5 * 8 >= span)
			return step * 5;
		step *= 10;
	}
	return step;
}

static void axis(struct tl *t, int height)
{
	FILE *f = t->f;
	int64_t span = t->t1 - t->origin;
	int64_t step = tick_step(span);
	fprintf(f, "<g class=\"axis\">");
	for (int64_t v = 0; v <= span && v / step < 40; v += step) {
		double x = xof(t, t->origin + v);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>",
			x, AXIS_H - 4, x, height - 8);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\">", x, AXIS_H - 8);
		if (v)
			html_dur(f, (double)v);
		else
			fputs("0", f);
		fputs("</text>", f);
	}
	fputs("</g>\n", f);
}

static void lanes(struct tl *t)
{
	FILE *f = t->f;
	for (int i = 0; i < t->nlanes; i++) {
		const struct tlane *l = &t->lane[i];
		fprintf(f, "<rect class=\"lane%s\" x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\"/>",
			i % 2 ? " odd" : "", l->y, WIDTH, l->h);
		fprintf(f, "<text class=\"lname\" x=\"6\" y=\"%d\">", l->y + 15);
		html_text_max(f, l->label, 30);
		fprintf(f, "</text><text class=\"lsub\" x=\"6\" y=\"%d\">", l->y + 28);
		html_text_max(f, l->sub, 34);
		fputs("</text>\n", f);
	}
}

static int fragments(struct tl *t, int64_t req)
{
	sqlite3_stmt *s = export_prep(t->x,
		"SELECT process_id, tid, start_ns, end_ns, trigger FROM fragments\n"
		"WHERE request_id = ? ORDER BY start_ns LIMIT 20000");
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, req);
	while (sqlite3_step(s) == SQLITE_ROW) {
		int ln = lane_of(t, sqlite3_column_int64(s, 0),
				 sqlite3_column_int64(s, 1),
				 sqlite3_column_int64(s, 2));
		if (!ln)
			continue;
		const struct tlane *l = &t->lane[ln];
		int64_t a = sqlite3_column_int64(s, 2), b = sqlite3_column_int64(s, 3);
		if (a < t->t0)
			a = t->t0;
		if (b > t->t1)
			b = t->t1;
		double x = xof(t, a), w = xof(t, b) - x;
		if (w < 1)
			w = 1;
		fprintf(t->f, "<rect class=\"frag\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\"><title>work: %s, ",
			x, l->y + LANE_PAD + l->rows * ROW_H, w, FRAG_H,
			export_col(s, 4));
		html_dur(t->f, (double)(sqlite3_column_int64(s, 3) - sqlite3_column_int64(s, 2)));
		fputs("</title></rect>", t->f);
	}
	fputs("\n", t->f);
	sqlite3_finalize(s);
	return 0;
}

static void bars(struct tl *t)
{
	FILE *f = t->f;
	for (size_t i = 0; i < t->nsp; i++) {
		const struct tspan *p = &t->sp[i];
		const struct tlane *l = &t->lane[p->lane];
		double x = xof(t, p->start), w = xof(t, p->end) - x;
		int server = !strcmp(p->kind, "server");
		if (w < 2)
			w = 2;
		fprintf(f, "<g class=\"span%s%s\"><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" rx=\"2\" fill=\"%s\"%s>",
			server ? "" : " client", p->error ? " error" : "", x,
			l->y + LANE_PAD + p->row * ROW_H, w, ROW_H - 3,
			colour(p->proto), server ? "" : " fill-opacity=\"0.45\"");
		fprintf(f, "<title>%s %s ", p->kind, p->proto);
		html_text_max(f, p->name, 80);
		fputs("\n", f);
		html_text_max(f, p->target, 300);
		fputs("\n", f);
		if (p->has_end) {
			html_dur(f, (double)(p->end - p->start));
			if (p->has_self) {
				fputs(" (self ", f);
				html_dur(f, p->self);
				fputs(")", f);
			}
		} else {
			fputs("no reply", f);
		}
		if (p->has_status)
			fprintf(f, ", status %lld", (long long)p->status);
		if (p->peer[0]) {
			fputs(", peer ", f);
			html_text(f, p->peer);
		}
		fprintf(f, ", span %lld</title></rect>", (long long)p->id);
		size_t fit = (size_t)(w / 6.2);
		if (fit >= 4) {
			fprintf(f, "<text x=\"%.1f\" y=\"%d\">", x + 3,
				l->y + LANE_PAD + p->row * ROW_H + 12);
			html_text_max(f, p->name[0] ? p->name : p->proto, fit - 1);
			fputs("</text>", f);
		}
		fputs("</g>\n", f);
	}
}

struct tmsg {
	int64_t id, peer, ts;
	int     lane, out, reply;
};

static void arrow(struct tl *t, int la, int64_t ta, int lb, int64_t tb,
		  int reply, const char *title)
{
	const struct tlane *a = &t->lane[la], *b = &t->lane[lb];
	double xa = xof(t, ta), xb = xof(t, tb);
	int ya = a->y + (la ? LANE_PAD + ROW_H / 2 : a->h / 2);
	int yb = b->y + (lb ? LANE_PAD + ROW_H / 2 : b->h / 2);
	if (la == lb)
		return;
	if (xb - xa < 3 && xb - xa > -3)
		xb = xa + 3;         /* a slant shows the direction */
	fprintf(t->f, "<line class=\"msg%s\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" marker-end=\"url(#bp-arr-%s)\"><title>%s</title></line>\n",
		reply ? " rep" : "", xa, ya, xb, yb, reply ? "rep" : "req", title);
}

static int messages(struct tl *t, int64_t req)
{
	sqlite3_stmt *s = export_prep(t->x,
		"SELECT message_id, peer_message_id, ts_ns, process_id, tid, dir,\n"
		"  kind, protocol, len FROM messages\n"
		"WHERE request_id = ? AND kind != 'control' ORDER BY ts_ns LIMIT 20000");
	struct tmsg *m = NULL;
	size_t n = 0, cap = 0;
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, req);
	while (sqlite3_step(s) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			struct tmsg *p = realloc(m, cap * sizeof *p);
			if (!p) {
				free(m);
				sqlite3_finalize(s);
				snprintf(t->x->err, sizeof t->x->err, "out of memory");
				return -1;
			}
			m = p;
		}
		struct tmsg *p = &m[n++];
		p->id = sqlite3_column_int64(s, 0);
		p->peer = sqlite3_column_type(s, 1) == SQLITE_NULL ? 0 :
			  sqlite3_column_int64(s, 1);
		p->ts = sqlite3_column_int64(s, 2);
		p->lane = lane_of(t, sqlite3_column_int64(s, 3),
				  sqlite3_column_int64(s, 4), p->ts);
		p->out = !strcmp(export_col(s, 5), "out");
		p->reply = !strcmp(export_col(s, 6), "reply");
	}
	sqlite3_finalize(s);
	for (size_t i = 0; i < n; i++) {
		const struct tmsg *p = &m[i];
		char title[96];
		snprintf(title, sizeof title, "%s %s", p->reply ? "reply" : "request",
			 p->out ? "sent" : "received");
		if (!p->out) {
			const struct tmsg *from = NULL;
			for (size_t k = 0; p->peer && k < n; k++)
				if (m[k].id == p->peer)
					from = &m[k];
			if (from)
				arrow(t, from->lane, from->ts, p->lane, p->ts,
				      p->reply, p->reply ? "reply" : "request");
			else if (!p->peer)
				arrow(t, 0, p->ts, p->lane, p->ts, p->reply,
				      p->reply ? "reply from outside" : "request from outside");
		} else {
			int received = 0;
			for (size_t k = 0; k < n && !received; k++)
				received = m[k].peer == p->id;
			if (!received)
				arrow(t, p->lane, p->ts, 0, p->ts, p->reply,
				      p->reply ? "reply to outside" : "request to outside");
		}
	}
	free(m);
	return 0;
}

int timeline_svg(struct export_db *x, FILE *f, int64_t req)
{
	struct tl *t = calloc(1, sizeof *t);
	sqlite3_stmt *r = NULL;
	int rc = -1;
	char client[160] = "";

	if (!t) {
		snprintf(x->err, sizeof x->err, "out of memory");
		return -1;
	}
	t->x = x;
	t->f = f;
	t->nlanes = 1;
	r = export_prep(x, "SELECT start_ns, COALESCE(end_ns, start_ns), client\n"
			   "FROM requests WHERE request_id = ?");
	if (!r)
		goto out;
	sqlite3_bind_int64(r, 1, req);
	if (sqlite3_step(r) != SQLITE_ROW) {
		snprintf(x->err, sizeof x->err, "%s has no request %lld", x->path,
			 (long long)req);
		goto out;
	}
	t->t0 = t->origin = sqlite3_column_int64(r, 0);
	t->t1 = sqlite3_column_int64(r, 1);
	snprintf(client, sizeof client, "%s", export_col(r, 2));
	if (load_spans(t, req) < 0)
		goto out;
	if (t->t1 <= t->t0)
		t->t1 = t->t0 + 1000;
	/* a margin of 2% on each side */
	int64_t m = (t->t1 - t->t0) / 50 + 1;
	t->t0 -= m;
	t->t1 += m;
	extend_open(t);
	int height = layout(t);
	/* lanes of threads that only did work or only sent messages are
	 * added while drawing: measure them first with a dry run */
	if (lane_names(t, client) < 0)
		goto out;
	FILE *null = fopen("/dev/null", "w");
	if (!null) {
		snprintf(x->err, sizeof x->err, "cannot open /dev/null");
		goto out;
	}
	int before = t->nlanes;
	t->f = null;
	int dry = fragments(t, req) < 0 || messages(t, req) < 0;
	fclose(null);
	t->f = f;
	if (dry)
		goto out;
	if (t->nlanes != before) {
		height = layout(t);
		if (lane_names(t, client) < 0)
			goto out;
	}
	fprintf(f, "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"timeline of request %lld\">\n",
		WIDTH, height, WIDTH, height, (long long)req);
	lanes(t);
	axis(t, height);
	if (fragments(t, req) < 0)
		goto out;
	bars(t);
	if (messages(t, req) < 0)
		goto out;
	if (t->truncated)
		fprintf(f, "<text class=\"note\" x=\"%d\" y=\"%d\">truncated: first %d spans, %d lanes</text>",
			LABEL_W, height - 2, MAX_SPANS, MAX_LANES);
	fputs("</svg>\n", f);
	rc = 0;
out:
	sqlite3_finalize(r);
	free_spans(t);
	free(t);
	return rc;
}
