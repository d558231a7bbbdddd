/*
 * report.c - the HTML page of bp-report (see report.h, docs/report.md).
 *
 * One file, no network: the style sheet, the script and every picture
 * (SVG) are inline.  Sections: summary; slowest requests; errors; path
 * patterns with the mean delay of each node; latency histograms per
 * request shape; time per tier; static requests that reached a backend;
 * repeated queries; timelines of the chosen requests; warnings.  Tables
 * are capped at O->rows rows, timelines at O->timelines requests (the
 * page says what it left out).
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report.h"
#include "page.h"


static const char style[] =
"body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:0;color:#222;background:#fafafa}"
"header{background:#233043;color:#fff;padding:14px 24px}header h1{margin:0;font-size:20px}"
"header .sub{color:#c8d3e0;font-size:13px}"
"nav{background:#fff;border-bottom:1px solid #ddd;padding:6px 24px;position:sticky;top:0;z-index:2}"
"nav a{margin-right:14px;color:#2a5db0;text-decoration:none}"
"main{padding:8px 24px 40px}section{margin:18px 0 26px}h2{font-size:17px;border-bottom:2px solid #233043;padding-bottom:3px}"
"h3{font-size:14px;margin:14px 0 6px}"
"table{border-collapse:collapse;background:#fff;font-size:13px}th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}"
"th{background:#eef1f5}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
"td.t{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;max-width:560px;word-break:break-all}"
".cards{display:flex;flex-wrap:wrap;gap:10px}.card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:8px 14px;min-width:110px}"
".card b{display:block;font-size:19px}.card span{color:#666;font-size:12px}"
".err{color:#b00020}.ok{color:#2e7d32}.muted{color:#777}"
".bar{display:inline-block;height:10px;background:#f28e2b;vertical-align:middle}"
".tree td.l{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;white-space:pre}"
".hists{display:flex;flex-wrap:wrap;gap:14px}.hist{background:#fff;border:1px solid #ddd;border-radius:6px;padding:6px}"
".hist svg text{font-size:10px;fill:#444}.hist .t{font-size:12px;font-family:ui-monospace,Menlo,monospace;max-width:360px;word-break:break-all}"
"details.tl{background:#fff;border:1px solid #ddd;border-radius:6px;margin:10px 0;padding:4px 10px}"
"details.tl summary{cursor:pointer;font-weight:600}"
"svg.timeline{display:block;margin:6px 0;font-size:11px}"
"svg.timeline .lane{fill:#fff}svg.timeline .lane.odd{fill:#f3f5f8}"
"svg.timeline .lname{font-weight:600;fill:#222}svg.timeline .lsub{fill:#666;font-size:10px}"
"svg.timeline .axis line{stroke:#e0e0e0}svg.timeline .axis text{fill:#777;font-size:10px;text-anchor:middle}"
"svg.timeline .span text{fill:#fff;font-size:10.5px;pointer-events:none}"
"svg.timeline .span.client text{fill:#222}svg.timeline .span.error rect{stroke:#d00;stroke-width:2}"
"svg.timeline .frag{fill:#333}svg.timeline .msg{stroke:#2a5db0;stroke-width:1.2}"
"svg.timeline .msg.rep{stroke:#2e7d32;stroke-dasharray:4 2}svg.timeline .note{fill:#b00020}"
"input#filter{margin:4px 0 8px;padding:3px 6px;width:280px}"
".legend span{display:inline-block;margin-right:12px;font-size:12px}.legend i{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:middle}";

static const char script[] =
"(function(){"
"var f=document.getElementById('filter');"
"if(f){f.addEventListener('input',function(){var v=f.value.toLowerCase();"
"var rows=document.querySelectorAll('#slowest tbody tr');"
"for(var i=0;i<rows.length;i++){rows[i].style.display="
"rows[i].textContent.toLowerCase().indexOf(v)>=0?'':'none';}});}"
"var links=document.querySelectorAll('a[href^=\"#r\"]');"
"for(var i=0;i<links.length;i++){links[i].addEventListener('click',function(){"
"var d=document.getElementById(this.getAttribute('href').slice(1));"
"if(d&&d.tagName==='DETAILS')d.open=true;});}"
"document.body.setAttribute('data-ready','1');"
"})();";

/* ---- helpers -------------------------------------------------------------------- */


/* The requests with errors, read once (the errors view is not cheap). */
static int load_failed(struct page *p)
{
	sqlite3_stmt *s = export_prep(p->x,
		"SELECT DISTINCT request_id FROM errors WHERE request_id IS NOT NULL\n"
		"ORDER BY request_id");
	size_t cap = 0;
	if (!s)
		return -1;
	while (sqlite3_step(s) == SQLITE_ROW) {
		if (p->nfailed == cap) {
			cap = cap ? cap * 2 : 64;
			int64_t *n = realloc(p->failed, cap * sizeof *n);
			if (!n) {
				sqlite3_finalize(s);
				snprintf(p->x->err, sizeof p->x->err, "out of memory");
				return -1;
			}
			p->failed = n;
		}
		p->failed[p->nfailed++] = sqlite3_column_int64(s, 0);
	}
	sqlite3_finalize(s);
	return 0;
}

static int failed(const struct page *p, int64_t id)
{
	return p->nfailed && bsearch(&id, p->failed, p->nfailed,
				      sizeof *p->failed, page_cmp_i64) != NULL;
}





static void wall(FILE *f, int64_t ns)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	char b[64];
	gmtime_r(&t, &tm);
	strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(f, "%s.%06d UTC", b, (int)((ns % 1000000000) / 1000));
}


/* ---- the requests with a timeline ------------------------------------------------ */

static int add_drawn(struct page *p, int64_t id, size_t cap)
{
	for (size_t i = 0; i < p->ndrawn; i++)
		if (p->drawn[i] == id)
			return 0;
	if (p->ndrawn >= cap)
		return 1;
	p->drawn[p->ndrawn++] = id;
	return 0;
}

static int add_from(struct page *p, const char *sql, long limit, size_t cap)
{
	sqlite3_stmt *s = export_prep(p->x, sql);
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, limit);
	while (sqlite3_step(s) == SQLITE_ROW)
		if (add_drawn(p, sqlite3_column_int64(s, 0), cap))
			break;
	sqlite3_finalize(s);
	return 0;
}

/*
 * Which requests get a timeline, in the order they are shown: those
 * asked for, then (when there are more requests than the cap) requests
 * with errors (a quarter of the cap), one example of each of the most
 * common patterns (a quarter), and the slowest for the rest; with no cap
 * or few requests, all in start order.
 */
static int choose(struct page *p, int64_t **order, size_t *norder)
{
	int64_t nreq = page_q_int(p, "SELECT COUNT(*) FROM requests", 0);
	long cap = p->o->timelines;
	size_t c;

	if (cap <= 0 || nreq <= cap) {
		c = (size_t)nreq + p->o->nforce;
		p->drawn = malloc((c ? c : 1) * sizeof *p->drawn);
		if (!p->drawn)
			goto oom;
		for (size_t i = 0; i < p->o->nforce; i++)
			p->drawn[p->ndrawn++] = p->o->force[i];
		sqlite3_stmt *s = export_prep(p->x,
			"SELECT request_id FROM requests ORDER BY start_ns, request_id");
		if (!s)
			return -1;
		while (sqlite3_step(s) == SQLITE_ROW && p->ndrawn < c) {
			int64_t id = sqlite3_column_int64(s, 0);
			int dup = 0;
			for (size_t i = 0; i < p->o->nforce && !dup; i++)
				dup = p->o->force[i] == id;
			if (!dup)
				p->drawn[p->ndrawn++] = id;
		}
		sqlite3_finalize(s);
	} else {
		c = (size_t)cap + p->o->nforce;
		p->drawn = malloc(c * sizeof *p->drawn);
		if (!p->drawn)
			goto oom;
		for (size_t i = 0; i < p->o->nforce; i++)
			add_drawn(p, p->o->force[i], c);
		long quarter = cap / 4 > 0 ? cap / 4 : 1;
		for (size_t i = 0; i < p->nfailed && (long)i < quarter; i++)
			if (add_drawn(p, p->failed[i], c))
				break;
		if (add_from(p, "SELECT example_request_id FROM patterns\n"
				"WHERE example_request_id IS NOT NULL ORDER BY rank LIMIT ?",
			     cap / 4 > 0 ? cap / 4 : 1, c) < 0 ||
		    add_from(p, "SELECT request_id FROM slowest_requests LIMIT ?",
			     cap, c) < 0)
			return -1;
	}
	*order = malloc((p->ndrawn ? p->ndrawn : 1) * sizeof **order);
	if (!*order)
		goto oom;
	memcpy(*order, p->drawn, p->ndrawn * sizeof **order);
	*norder = p->ndrawn;
	qsort(p->drawn, p->ndrawn, sizeof *p->drawn, page_cmp_i64);
	return 0;
oom:
	snprintf(p->x->err, sizeof p->x->err, "out of memory");
	return -1;
}

/* ---- sections --------------------------------------------------------------------- */

static int summary(struct page *p)
{
	FILE *f = p->f;
	static const struct { const char *key, *label; } cards[] = {
		{ "requests", "requests" },
		{ "requests_exact", "exact paths" },
		{ "requests_resolved", "resolved paths" },
		{ "requests_uncertain", "uncertain paths" },
		{ "spans", "spans" },
		{ "patterns", "path patterns" }, { "events", "events read" },
		{ "warnings", "warnings" },
	};
	sqlite3_stmt *s = export_prep(p->x, "SELECT value FROM stats WHERE key = ?");
	if (!s)
		return -1;
	fputs("<section id=\"summary\"><h2>Summary</h2><div class=\"cards\">", f);
	for (size_t i = 0; i < sizeof cards / sizeof cards[0]; i++) {
		sqlite3_reset(s);
		sqlite3_bind_text(s, 1, cards[i].key, -1, SQLITE_STATIC);
		int64_t v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
		fprintf(f, "<div class=\"card\" id=\"card-%s\"><b>%" PRId64 "</b><span>%s</span></div>",
			cards[i].key, v, cards[i].label);
	}
	sqlite3_finalize(s);
	int64_t unattr = page_q_int(p, "SELECT SUM(n) FROM unattributed", 0);
	int64_t nerr = (int64_t)p->nfailed;
	int64_t procs = page_q_int(p, "SELECT COUNT(*) FROM processes", 0);
	fprintf(f, "<div class=\"card\"><b>%" PRId64 "</b><span>processes</span></div>", procs);
	fprintf(f, "<div class=\"card\"><b class=\"%s\">%" PRId64 "</b><span>requests with errors</span></div>",
		nerr ? "err" : "ok", nerr);
	fprintf(f, "<div class=\"card\"><b>%" PRId64 "</b><span>unattributed (fragments, messages, files, spans)</span></div>",
		unattr);
	fputs("</div>", f);
	p->sum->errors = (uint64_t)nerr;

	s = export_prep(p->x, "SELECT MIN(start_ns), MAX(COALESCE(end_ns, start_ns)) FROM requests");
	if (!s)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) {
		fputs("<p>Requests from ", f);
		wall(f, sqlite3_column_int64(s, 0));
		fputs(" to ", f);
		wall(f, sqlite3_column_int64(s, 1));
		fputs(" (", f);
		html_dur(f, (double)(sqlite3_column_int64(s, 1) - sqlite3_column_int64(s, 0)));
		fputs(").</p>", f);
	}
	sqlite3_finalize(s);
	s = export_prep(p->x, "SELECT domain, method, offset_ns, reference, events FROM hosts ORDER BY host_id");
	if (!s)
		return -1;
	fputs("<table id=\"hosts\"><thead><tr><th>host (clock domain)</th><th>clock</th><th>offset to reference</th><th>events</th></tr></thead><tbody>", f);
	while (sqlite3_step(s) == SQLITE_ROW) {
		fputs("<tr>", f);
		page_td_text(f, NULL, export_col(s, 0), 80);
		page_td_text(f, NULL, sqlite3_column_int(s, 3) ? "reference" : export_col(s, 1), 40);
		fputs("<td class=\"n\">", f);
		html_dur(f, fabs(sqlite3_column_double(s, 2)));
		fprintf(f, "%s</td><td class=\"n\">%lld</td></tr>",
			sqlite3_column_double(s, 2) < 0 ? " behind" : "",
			(long long)sqlite3_column_int64(s, 4));
	}
	sqlite3_finalize(s);
	fputs("</tbody></table></section>\n", f);
	return 0;
}



static int slowest(struct page *p)
{
	FILE *f = p->f;
	sqlite3_stmt *s = export_prep(p->x,
		"SELECT r.request_id, r.protocol, r.method, r.target, r.status,\n"
		"  r.duration_ns, r.pattern_id, r.client, r.start_ns,\n"
		"  (SELECT COUNT(*) FROM spans s WHERE s.request_id = r.request_id),\n"
		"  (SELECT COUNT(DISTINCT process_id) FROM spans s WHERE s.request_id = r.request_id),\n"
		"  r.certainty, r.certainty_reason\n"
		"FROM slowest_requests r LIMIT ?");
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, p->o->rows);
	fprintf(f, "<section id=\"slowest\"><h2>Slowest requests</h2>"
		"<p class=\"muted\">The %ld longest requests (first byte received to last byte of the reply). Click an id for its timeline.</p>"
		"<input id=\"filter\" type=\"search\" placeholder=\"filter rows\" aria-label=\"filter the slowest requests\">"
		"<table><thead><tr><th>#</th><th>request</th><th>protocol</th><th>target</th><th>status</th><th>duration</th><th>spans</th><th>processes</th><th>pattern</th><th>certainty</th><th>client</th><th>started</th></tr></thead><tbody>",
		p->o->rows);
	int rank = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		fprintf(f, "<tr><td class=\"n\">%d</td><td class=\"n\">", ++rank);
		page_req_link(p, sqlite3_column_int64(s, 0));
		fputs("</td>", f);
		page_td_text(f, NULL, export_col(s, 1), 20);
		fputs("<td class=\"t\">", f);
		html_text_max(f, export_col(s, 2), 16);
		fputs(" ", f);
		html_text_max(f, export_col(s, 3), 200);
		fputs("</td>", f);
		int64_t st = sqlite3_column_int64(s, 4);
		if (sqlite3_column_type(s, 4) == SQLITE_NULL)
			fputs("<td></td>", f);
		else
			fprintf(f, "<td class=\"n%s\">%" PRId64 "</td>",
				!strcmp(export_col(s, 1), "http") && st >= 500 ? " err" : "", st);
		page_td_dur(f, s, 5);
		fprintf(f, "<td class=\"n\">%lld</td><td class=\"n\">%lld</td>",
			(long long)sqlite3_column_int64(s, 9),
			(long long)sqlite3_column_int64(s, 10));
		fprintf(f, "<td class=\"n\"><a href=\"#p%lld\">%lld</a></td>",
			(long long)sqlite3_column_int64(s, 6),
			(long long)sqlite3_column_int64(s, 6));
		page_certainty_td(f, export_col(s, 11), export_col(s, 12));
		page_td_text(f, "t", export_col(s, 7), 60);
		fputs("<td class=\"n\">", f);
		wall(f, sqlite3_column_int64(s, 8));
		fputs("</td></tr>\n", f);
	}
	sqlite3_finalize(s);
	fputs("</tbody></table></section>\n", f);
	return 0;
}

static int errors(struct page *p)
{
	FILE *f = p->f;
	int64_t total = page_q_int(p, "SELECT COUNT(*) FROM errors", 0);
	sqlite3_stmt *s = export_prep(p->x,
		"SELECT request_id, request_target, error, origin, exe, pid, host,\n"
		"  path, kind, protocol FROM errors LIMIT ?");
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, p->o->rows);
	fprintf(f, "<section id=\"errors\"><h2>Errors</h2><p class=\"muted\">Spans that failed: HTTP 5xx, SQL errors (SQLSTATE), failed name lookups, calls never answered. "
		"<b>origin</b> marks the span where the error starts (no span it called failed). %" PRId64 " in all%s.</p>",
		total, total > p->o->rows ? ", the first shown" : "");
	if (!total) {
		fputs("<p class=\"ok\">No errors.</p></section>\n", f);
		sqlite3_finalize(s);
		return 0;
	}
	fputs("<table><thead><tr><th>request</th><th>target</th><th>error</th><th>origin</th><th>where</th><th>path from the request's root</th></tr></thead><tbody>", f);
	while (sqlite3_step(s) == SQLITE_ROW) {
		fputs("<tr><td class=\"n\">", f);
		if (sqlite3_column_type(s, 0) != SQLITE_NULL)
			page_req_link(p, sqlite3_column_int64(s, 0));
		else
			fputs("<span class=\"muted\">none</span>", f);
		fputs("</td>", f);
		page_td_text(f, "t", export_col(s, 1), 120);
		page_td_text(f, "err", export_col(s, 2), 60);
		fprintf(f, "<td>%s</td>", sqlite3_column_int(s, 3) ? "&#9679;" : "");
		fprintf(f, "<td>%s %s ", export_col(s, 8), export_col(s, 9));
		html_text(f, export_basename(export_col(s, 4)));
		fprintf(f, "[%lld]@", (long long)sqlite3_column_int64(s, 5));
		html_text(f, export_col(s, 6));
		fputs("</td>", f);
		page_td_text(f, "t", export_col(s, 7), 400);
		fputs("</tr>\n", f);
	}
	sqlite3_finalize(s);
	fputs("</tbody></table></section>\n", f);
	return 0;
}

static int patterns(struct page *p)
{
	FILE *f = p->f;
	int64_t total = page_q_int(p, "SELECT COUNT(*) FROM patterns", 0);
	sqlite3_stmt *s = export_prep(p->x,
		"SELECT pattern_id, rank, n, complete, protocol, service, root, nodes,\n"
		"  avg_ns, p50_ns, p90_ns, p99_ns, example_request_id\n"
		"FROM patterns ORDER BY rank LIMIT ?");
	sqlite3_stmt *nd = export_prep(p->x,
		"SELECT node, depth, kind, protocol, service, label, n, mean_ns,\n"
		"  mean_self_ns FROM pattern_nodes WHERE pattern_id = ? ORDER BY node");
	if (!s || !nd) {
		sqlite3_finalize(s);
		sqlite3_finalize(nd);
		return -1;
	}
	sqlite3_bind_int64(s, 1, p->o->rows);
	fprintf(f, "<section id=\"patterns\"><h2>Path patterns</h2><p class=\"muted\">Requests whose paths have the same shape (processes, protocols, and targets with ids and literal values folded) share a pattern. "
		"For each node: its mean duration and the mean time it adds itself (its duration minus the calls it made), with a bar of its share of the pattern's mean latency. %" PRId64 " patterns%s.</p>\n",
		total, total > p->o->rows ? ", the most common shown" : "");
	while (sqlite3_step(s) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(s, 0);
		double mean = sqlite3_column_double(s, 8);
		fprintf(f, "<h3 id=\"p%" PRId64 "\">Pattern %" PRId64 " &middot; %lld requests &middot; ",
			id, id, (long long)sqlite3_column_int64(s, 2));
		html_text_max(f, export_col(s, 5), 40);
		fputs(" ", f);
		html_text_max(f, export_col(s, 6), 120);
		fputs("</h3><p>", f);
		if (sqlite3_column_type(s, 9) != SQLITE_NULL) {
			fputs("p50 ", f);
			html_dur(f, sqlite3_column_double(s, 9));
			fputs(" &middot; p90 ", f);
			html_dur(f, sqlite3_column_double(s, 10));
			fputs(" &middot; p99 ", f);
			html_dur(f, sqlite3_column_double(s, 11));
			fputs(" &middot; mean ", f);
			html_dur(f, mean);
		} else {
			fputs("no request of this pattern was answered", f);
		}
		if (sqlite3_column_type(s, 12) != SQLITE_NULL) {
			fputs(" &middot; example: request ", f);
			page_req_link(p, sqlite3_column_int64(s, 12));
		}
		fputs("</p><table class=\"tree\"><thead><tr><th>node</th><th>mean</th><th>self (mean)</th><th>share</th></tr></thead><tbody>", f);
		sqlite3_reset(nd);
		sqlite3_bind_int64(nd, 1, id);
		int nodes = 0;
		while (sqlite3_step(nd) == SQLITE_ROW && nodes++ < 200) {
			int depth = sqlite3_column_int(nd, 1);
			fputs("<tr><td class=\"l\">", f);
			for (int d = 0; d < depth && d < 30; d++)
				fputs("  ", f);
			fprintf(f, "%s %s ", export_col(nd, 2), export_col(nd, 3));
			html_text_max(f, export_col(nd, 4), 30);
			fputs(" ", f);
			html_text_max(f, export_col(nd, 5), 90);
			fputs("</td>", f);
			page_td_dur(f, nd, 7);
			page_td_dur(f, nd, 8);
			double share = mean > 0 ? sqlite3_column_double(nd, 8) / mean : 0;
			if (share < 0)
				share = 0;
			if (share > 1)
				share = 1;
			fprintf(f, "<td class=\"n\"><span class=\"bar\" style=\"width:%.0fpx\"></span> %.0f%%</td></tr>\n",
				share * 120, share * 100);
		}
		fputs("</tbody></table>\n", f);
		p->sum->patterns++;
	}
	sqlite3_finalize(s);
	sqlite3_finalize(nd);
	fputs("</section>\n", f);
	return 0;
}


static int tiers(struct page *p)
{
	FILE *f = p->f;
	sqlite3_stmt *s = export_prep(p->x,
		"SELECT service, requests, spans, self_ns, server_self_ns,\n"
		"  client_self_ns, avg_self_per_request_ns FROM self_time_per_tier LIMIT ?");
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, p->o->rows);
	fputs("<section id=\"tiers\"><h2>Time per tier</h2><p class=\"muted\">Self time of the spans of each program over all requests: server spans are its own work, client spans the time its calls took beyond what the called program accounts for (network, queues, untraced peers).</p>"
	      "<table><thead><tr><th>program</th><th>requests</th><th>spans</th><th>self time</th><th>in server spans</th><th>in client spans</th><th>per request</th></tr></thead><tbody>", f);
	while (sqlite3_step(s) == SQLITE_ROW) {
		fputs("<tr>", f);
		page_td_text(f, NULL, export_col(s, 0), 60);
		fprintf(f, "<td class=\"n\">%lld</td><td class=\"n\">%lld</td>",
			(long long)sqlite3_column_int64(s, 1),
			(long long)sqlite3_column_int64(s, 2));
		page_td_dur(f, s, 3);
		page_td_dur(f, s, 4);
		page_td_dur(f, s, 5);
		page_td_dur(f, s, 6);
		fputs("</tr>\n", f);
	}
	sqlite3_finalize(s);
	fputs("</tbody></table></section>\n", f);
	return 0;
}

static int statics(struct page *p)
{
	FILE *f = p->f;
	int64_t total = page_q_int(p, "SELECT COUNT(*) FROM static_backend_work", 0);
	int64_t all = page_q_int(p, "SELECT COUNT(*) FROM static_requests", 0);
	sqlite3_stmt *s = export_prep(p->x,
		"SELECT request_id, target, extension, status, duration_ns,\n"
		"  backend_calls, queries, backend_ns FROM static_backend_work LIMIT ?");
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, p->o->rows);
	fprintf(f, "<section id=\"static\"><h2>Static requests that reached a backend</h2><p class=\"muted\">Requests for files (a path ending in an extension that is not a script: see the table script_extensions) that made calls to another tier. %" PRId64 " of %" PRId64 " static requests.</p>",
		total, all);
	if (!total) {
		fputs("<p class=\"ok\">None: every static request was answered by the first tier.</p></section>\n", f);
		sqlite3_finalize(s);
		return 0;
	}
	fputs("<table><thead><tr><th>request</th><th>target</th><th>status</th><th>duration</th><th>backend calls</th><th>queries</th><th>time in calls</th></tr></thead><tbody>", f);
	while (sqlite3_step(s) == SQLITE_ROW) {
		fputs("<tr><td class=\"n\">", f);
		page_req_link(p, sqlite3_column_int64(s, 0));
		fputs("</td>", f);
		page_td_text(f, "t", export_col(s, 1), 200);
		fprintf(f, "<td class=\"n\">%s</td>", export_col(s, 3));
		page_td_dur(f, s, 4);
		fprintf(f, "<td class=\"n\">%lld</td><td class=\"n\">%lld</td>",
			(long long)sqlite3_column_int64(s, 5),
			(long long)sqlite3_column_int64(s, 6));
		page_td_dur(f, s, 7);
		fputs("</tr>\n", f);
	}
	sqlite3_finalize(s);
	fputs("</tbody></table></section>\n", f);
	return 0;
}

static int repeated(struct page *p)
{
	FILE *f = p->f;
	sqlite3_stmt *s = export_prep(p->x,
		"SELECT request_id, request_target, target, n, total_ns FROM repeated_queries\n"
		"ORDER BY n DESC, total_ns DESC LIMIT ?");
	sqlite3_stmt *sh = export_prep(p->x,
		"SELECT request_id, request_target, shape, n, texts, total_ns FROM repeated_query_shapes\n"
		"WHERE texts > 1 ORDER BY n DESC, total_ns DESC LIMIT ?");
	if (!s || !sh) {
		sqlite3_finalize(s);
		sqlite3_finalize(sh);
		return -1;
	}
	sqlite3_bind_int64(s, 1, p->o->rows);
	sqlite3_bind_int64(sh, 1, p->o->rows);
	fputs("<section id=\"repeated\"><h2>Repeated queries</h2><h3>The same SQL twice or more in one request</h3>", f);
	int any = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		if (!any++)
			fputs("<table><thead><tr><th>request</th><th>target</th><th>query</th><th>times</th><th>time</th></tr></thead><tbody>", f);
		fputs("<tr><td class=\"n\">", f);
		page_req_link(p, sqlite3_column_int64(s, 0));
		fputs("</td>", f);
		page_td_text(f, "t", export_col(s, 1), 100);
		page_td_text(f, "t", export_col(s, 2), 300);
		fprintf(f, "<td class=\"n\">%lld</td>", (long long)sqlite3_column_int64(s, 3));
		page_td_dur(f, s, 4);
		fputs("</tr>\n", f);
	}
	fputs(any ? "</tbody></table>" : "<p class=\"ok\">None.</p>", f);
	fputs("<h3>The same query with different values (N+1)</h3>", f);
	any = 0;
	while (sqlite3_step(sh) == SQLITE_ROW) {
		if (!any++)
			fputs("<table><thead><tr><th>request</th><th>target</th><th>query shape</th><th>times</th><th>texts</th><th>time</th></tr></thead><tbody>", f);
		fputs("<tr><td class=\"n\">", f);
		page_req_link(p, sqlite3_column_int64(sh, 0));
		fputs("</td>", f);
		page_td_text(f, "t", export_col(sh, 1), 100);
		page_td_text(f, "t", export_col(sh, 2), 300);
		fprintf(f, "<td class=\"n\">%lld</td><td class=\"n\">%lld</td>",
			(long long)sqlite3_column_int64(sh, 3),
			(long long)sqlite3_column_int64(sh, 4));
		page_td_dur(f, sh, 5);
		fputs("</tr>\n", f);
	}
	fputs(any ? "</tbody></table>" : "<p class=\"ok\">None.</p>", f);
	fputs("</section>\n", f);
	sqlite3_finalize(s);
	sqlite3_finalize(sh);
	return 0;
}

static int timelines(struct page *p, const int64_t *order, size_t n)
{
	FILE *f = p->f;
	int64_t total = page_q_int(p, "SELECT COUNT(*) FROM requests", 0);
	sqlite3_stmt *s = export_prep(p->x,
		"SELECT method, target, status, duration_ns, client, pattern_id,\n"
		"  certainty, certainty_reason\n"
		"FROM requests WHERE request_id = ?");
	if (!s)
		return -1;
	fprintf(f, "<section id=\"timelines\"><h2>Timelines</h2><p class=\"muted\">%zu of %" PRId64 " requests%s. A lane per thread; bars are spans (solid: it served a request, pale: it called another program, red outline: failed), the dark strip under them the work the thread did for the request, arrows the messages (blue: requests, green dashed: replies). Hover for details.</p>"
		"<div class=\"legend\"><span><i style=\"background:#4e79a7\"></i>http</span><span><i style=\"background:#f28e2b\"></i>fastcgi</span><span><i style=\"background:#59a14f\"></i>postgresql</span><span><i style=\"background:#b07aa1\"></i>dns</span><span><i style=\"background:#76b7b2\"></i>line</span><span><i style=\"background:#9c9c9c\"></i>other</span></div>\n",
		n, total, (int64_t)n < total ?
		" (the cap: requests with errors, an example of each common pattern, the slowest; see --timelines)" : "");
	for (size_t i = 0; i < n; i++) {
		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, order[i]);
		if (sqlite3_step(s) != SQLITE_ROW)
			continue;
		fprintf(f, "<details class=\"tl\" id=\"r%" PRId64 "\"%s><summary>request %" PRId64 ": ",
			order[i], i < 3 ? " open" : "", order[i]);
		html_text_max(f, export_col(s, 0), 16);
		fputs(" ", f);
		html_text_max(f, export_col(s, 1), 160);
		fputs(" &middot; ", f);
		if (sqlite3_column_type(s, 3) != SQLITE_NULL)
			html_dur(f, sqlite3_column_double(s, 3));
		else
			fputs("never answered", f);
		if (sqlite3_column_type(s, 2) != SQLITE_NULL)
			fprintf(f, " &middot; status %lld", (long long)sqlite3_column_int64(s, 2));
		if (failed(p, order[i]))
			fputs(" &middot; <span class=\"err\">error</span>", f);
		fprintf(f, " &middot; <span class=\"%s\">",
			strcmp(export_col(s, 6), "uncertain") ? "ok" : "err");
		html_text_max(f, export_col(s, 6), 16);
		if (sqlite3_column_type(s, 7) != SQLITE_NULL) {
			fputs(" (", f);
			html_text_max(f, export_col(s, 7), 120);
			fputs(")", f);
		}
		fputs("</span>", f);
		fprintf(f, " &middot; pattern <a href=\"#p%lld\">%lld</a></summary>\n",
			(long long)sqlite3_column_int64(s, 5),
			(long long)sqlite3_column_int64(s, 5));
		if (timeline_svg(p->x, f, order[i]) < 0) {
			sqlite3_finalize(s);
			return -1;
		}
		fputs("</details>\n", f);
		p->sum->timelines++;
	}
	sqlite3_finalize(s);
	fputs("</section>\n", f);
	return 0;
}



static int warnings(struct page *p)
{
	FILE *f = p->f;
	int64_t total = page_q_int(p, "SELECT COUNT(*) FROM warnings", 0);
	sqlite3_stmt *s = export_prep(p->x,
		"SELECT file, offset, text FROM warnings ORDER BY warning_id LIMIT ?");
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, p->o->rows);
	fprintf(f, "<section id=\"warnings\"><h2>Warnings</h2><p class=\"muted\">What bp-reconstruct reported about the logs: %" PRId64 " warnings.</p>", total);
	if (total) {
		fputs("<table><thead><tr><th>file</th><th>offset</th><th>warning</th></tr></thead><tbody>", f);
		while (sqlite3_step(s) == SQLITE_ROW) {
			fputs("<tr>", f);
			page_td_text(f, "t", export_col(s, 0), 120);
			fprintf(f, "<td class=\"n\">%s</td>", export_col(s, 1));
			page_td_text(f, NULL, export_col(s, 2), 400);
			fputs("</tr>\n", f);
		}
		fputs("</tbody></table>", f);
	}
	sqlite3_finalize(s);
	fputs("</section>\n", f);
	return 0;
}

int report_write(struct export_db *x, const struct report_options *o,
		 struct report_summary *sum)
{
	struct page p = { .x = x, .o = o, .sum = sum };
	struct export_file out;
	int64_t *order = NULL;
	size_t norder = 0;
	int r = -1;

	memset(sum, 0, sizeof *sum);
	for (size_t i = 0; i < o->nforce; i++) {
		sqlite3_stmt *s = export_prep(x, "SELECT 1 FROM requests WHERE request_id = ?");
		if (!s)
			return -1;
		sqlite3_bind_int64(s, 1, o->force[i]);
		int found = sqlite3_step(s) == SQLITE_ROW;
		sqlite3_finalize(s);
		if (!found) {
			snprintf(x->err, sizeof x->err,
				 "%s has no request %lld: give an id from its requests table (-r)",
				 x->path, (long long)o->force[i]);
			return -1;
		}
	}
	if (load_failed(&p) < 0 || choose(&p, &order, &norder) < 0)
		goto out;
	if (export_file_open(x, &out, o->output) < 0)
		goto out;
	p.f = out.f;
	sum->requests = (uint64_t)page_q_int(&p, "SELECT COUNT(*) FROM requests", 0);
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
	      "<meta name=\"generator\" content=\"bp-report " PACKAGE_VERSION "\"><title>", p.f);
	html_text(p.f, o->title ? o->title : "BorderPatrol report");
	fputs(": ", p.f);
	html_text(p.f, export_basename(o->db));
	fprintf(p.f, "</title><style>%s</style></head>\n<body>\n", style);
	/* arrow heads shared by every timeline */
	fputs("<svg width=\"0\" height=\"0\" style=\"position:absolute\" aria-hidden=\"true\"><defs>"
	      "<marker id=\"bp-arr-req\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0L10,5L0,10z\" fill=\"#2a5db0\"/></marker>"
	      "<marker id=\"bp-arr-rep\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0L10,5L0,10z\" fill=\"#2e7d32\"/></marker>"
	      "</defs></svg>\n", p.f);
	fputs("<header><h1>", p.f);
	html_text(p.f, o->title ? o->title : "BorderPatrol report");
	fputs("</h1><div class=\"sub\">", p.f);
	html_text(p.f, o->db);
	fputs(" &middot; made by bp-report " PACKAGE_VERSION "</div></header>\n"
	      "<nav><a href=\"#summary\">Summary</a><a href=\"#slowest\">Slowest</a><a href=\"#errors\">Errors</a><a href=\"#uncertain\">Uncertain</a>"
	      "<a href=\"#patterns\">Patterns</a><a href=\"#latency\">Latency</a><a href=\"#tiers\">Tiers</a>"
	      "<a href=\"#static\">Static</a><a href=\"#repeated\">Repeated queries</a><a href=\"#timelines\">Timelines</a>"
	      "<a href=\"#unreadable\">Unreadable</a><a href=\"#untraced\">Untraced</a><a href=\"#warnings\">Warnings</a></nav>\n<main>\n", p.f);
	if (summary(&p) < 0 || slowest(&p) < 0 || errors(&p) < 0 ||
	    report_uncertain(&p) < 0 ||
	    patterns(&p) < 0 || report_histograms(&p) < 0 || tiers(&p) < 0 ||
	    statics(&p) < 0 || repeated(&p) < 0 ||
	    timelines(&p, order, norder) < 0 || report_unreadable(&p) < 0 ||
	    report_untraced(&p) < 0 ||
	    warnings(&p) < 0) {
		export_file_abort(&out);
		goto out;
	}
	fprintf(p.f, "</main>\n<script>%s</script>\n</body></html>\n", script);
	if (export_file_commit(x, &out) < 0)
		goto out;
	r = 0;
out:
	free(order);
	free(p.drawn);
	free(p.failed);
	return r;
}
