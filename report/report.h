/*
 * report.h - bp-report: the paths database as one self-contained HTML
 * page (docs/report.md).
 *
 * report.c writes the page section by section with SQL over the views;
 * timeline.c draws one request as an SVG swimlane diagram; html.c has the
 * escaping both use.  Everything reads the database through struct
 * export_db (reconstruct/export.h) and writes to one FILE.
 */
#ifndef BP_REPORT_H
#define BP_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "export.h"

struct report_options {
	const char *db, *output, *title;
	long        timelines;       /* requests drawn (0: all) */
	long        rows;            /* rows per table */
	int64_t    *force;           /* requests always drawn */
	size_t      nforce;
	int         quiet;
};

/* What report_write drew, for the summary line and the tests. */
struct report_summary {
	uint64_t requests, timelines, patterns, histograms, errors;
	uint64_t uncertain;          /* requests labelled 'uncertain' */
	uint64_t unreadable;         /* channels that could not be read */
	uint64_t untraced;           /* processes doing network I/O past
					libc (table untraced_programs) */
};

/*
 * Write the report of database X to O->output (via a temporary file
 * renamed into place).  Returns 0, or -1 with X->err set.
 */
int report_write(struct export_db *x, const struct report_options *o,
		 struct report_summary *sum);

/*
 * Draw request REQ of X as an SVG swimlane diagram into F: a lane per
 * thread (process and thread), spans as bars stacked by nesting, the
 * fragments of work as a strip under them, messages as arrows between
 * lanes, the external client and untraced peers on a lane of their own.
 * Returns 0, or -1 with X->err set.
 */
int timeline_svg(struct export_db *x, FILE *f, int64_t req);

/* S as HTML text (escaped; invalid UTF-8 and control characters made
 * harmless); NULL writes nothing. */
void html_text(FILE *f, const char *s);
/* S as HTML text cut after MAX characters with an ellipsis. */
void html_text_max(FILE *f, const char *s, size_t max);
/* NS as a duration ("12.3 ms"); negative: "-". */
void html_dur(FILE *f, double ns);

#endif /* BP_REPORT_H */
