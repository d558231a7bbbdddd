/*
 * page.c - helpers the sections of bp-report's page share: a request's link,
 * table cells, one integer from SQL, a certainty label.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "page.h"

/* qsort/bsearch order of int64_t values. */
int page_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* Has request ID a timeline on the page? */
int page_drawn(const struct page *p, int64_t id)
{
	return p->ndrawn && bsearch(&id, p->drawn, p->ndrawn, sizeof *p->drawn,
				     page_cmp_i64) != NULL;
}

/* A request id, linked to its timeline when it has one. */
void page_req_link(struct page *p, int64_t id)
{
	if (page_drawn(p, id))
		fprintf(p->f, "<a href=\"#r%" PRId64 "\">%" PRId64 "</a>", id, id);
	else
		fprintf(p->f, "%" PRId64, id);
}

void page_td_dur(FILE *f, sqlite3_stmt *s, int i)
{
	fputs("<td class=\"n\">", f);
	if (sqlite3_column_type(s, i) == SQLITE_NULL)
		fputs("<span class=\"muted\">-</span>", f);
	else
		html_dur(f, sqlite3_column_double(s, i));
	fputs("</td>", f);
}

void page_td_text(FILE *f, const char *cls, const char *s, size_t max)
{
	fprintf(f, "<td%s%s%s>", cls ? " class=\"" : "", cls ? cls : "",
		cls ? "\"" : "");
	html_text_max(f, s, max);
	fputs("</td>", f);
}

int64_t page_q_int(struct page *p, const char *sql, int64_t dflt)
{
	sqlite3_stmt *s = export_prep(p->x, sql);
	int64_t v = dflt;
	if (!s)
		return dflt;
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* A request's certainty label (docs/schema.md), its reasons on hover. */
void page_certainty_td(FILE *f, const char *label, const char *why)
{
	fprintf(f, "<td class=\"%s\" title=\"", strcmp(label, "uncertain") ? "ok" : "err");
	html_text_max(f, why, 200);
	fputs("\">", f);
	html_text_max(f, label, 16);
	fputs("</td>", f);
}
