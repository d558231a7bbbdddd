/*
 * page.h - the state of one bp-report page, shared by the files that
 * write its sections (report.c, hist.c).
 */
#ifndef REPORT_PAGE_H
#define REPORT_PAGE_H

#include <stdint.h>
#include <stdio.h>

#include "report.h"

struct page {
	struct export_db *x;
	const struct report_options *o;
	struct report_summary *sum;
	FILE    *f;
	int64_t *drawn;              /* requests with a timeline, sorted */
	size_t   ndrawn;
	int64_t *failed;             /* requests in the errors view, sorted */
	size_t   nfailed;
};

/* qsort/bsearch order of int64_t values (page.c). */
int page_cmp_i64(const void *a, const void *b);
/* Has request ID a timeline on the page (page.c)? */
int page_drawn(const struct page *p, int64_t id);
/* A link to request ID's timeline (if drawn) or its id (page.c). */
void page_req_link(struct page *p, int64_t id);
/* A cell with column I of S as a duration (page.c). */
void page_td_dur(FILE *f, sqlite3_stmt *s, int i);
/* A cell with text S, class CLS (or none), cut at MAX bytes (page.c). */
void page_td_text(FILE *f, const char *cls, const char *s, size_t max);
/* The integer SQL answers, DFLT when none or on error (page.c). */
int64_t page_q_int(struct page *p, const char *sql, int64_t dflt);
/* A cell with a certainty LABEL and its reason WHY (page.c). */
void page_certainty_td(FILE *f, const char *label, const char *why);
/* The uncertain requests and the unreadable channels sections (trust.c):
 * 0, or -1 on a database error (reported). */
int report_uncertain(struct page *p);
int report_unreadable(struct page *p);
/* The programs that could not be traced section (trust.c): network I/O
 * past libc (table untraced_programs).  0, or -1 on a database error. */
int report_untraced(struct page *p);
/* The latency histograms section (hist.c): 0, or -1 on a database error
 * (reported). */
int report_histograms(struct page *p);

#endif /* REPORT_PAGE_H */
