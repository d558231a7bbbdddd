/*
 * views.h - the views of the paths database: the common questions asked
 * in SQL (docs/schema.md, "Views").
 */
#ifndef RC_VIEWS_H
#define RC_VIEWS_H

#include <stddef.h>

#include <sqlite3.h>

/*
 * The one definition of self time, used by the view span_self_time and by
 * span_patterns.self_ns (patterns.c).  A span's self time is its duration
 * minus the union of its children's intervals, each clipped to the span
 * (children run in parallel count once); NULL while the span has no end.
 * Its children are every span whose parent_span_id is it, whatever their
 * request: a child the certainty rules gave to another request still ran
 * while the parent waited for it.  A child with no end is taken to last
 * to the parent's end, one with no start to have begun with the parent.
 *
 * RC_SELF_COVER_CTE is a WITH clause whose last table cov(sid, covered)
 * holds, per span with children and an end, the time they cover; join it
 * to spans s (LEFT JOIN cov ON cov.sid = s.span_id) and select
 * RC_SELF_NS.  Children are merged into islands: sorted by start, a child
 * starts a new island when it starts after every earlier child ended.
 */
#define RC_SELF_COVER_CTE \
	"WITH c AS (\n" \
	"  SELECT p.span_id AS sid,\n" \
	"    MAX(COALESCE(ch.start_ns, p.start_ns), p.start_ns) AS s,\n" \
	"    MIN(COALESCE(ch.end_ns, p.end_ns), p.end_ns) AS e\n" \
	"  FROM spans p JOIN spans ch ON ch.parent_span_id = p.span_id\n" \
	"  WHERE p.end_ns IS NOT NULL),\n" \
	"w AS (\n" \
	"  SELECT sid, s, e, MAX(e) OVER (PARTITION BY sid ORDER BY s, e\n" \
	"    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS pe\n" \
	"  FROM c WHERE e > s),\n" \
	"g AS (\n" \
	"  SELECT sid, s, e,\n" \
	"    SUM(CASE WHEN pe IS NULL OR s > pe THEN 1 ELSE 0 END)\n" \
	"    OVER (PARTITION BY sid ORDER BY s, e ROWS UNBOUNDED PRECEDING)\n" \
	"    AS isl\n" \
	"  FROM w),\n" \
	"cov AS (\n" \
	"  SELECT sid, SUM(ie - is_) AS covered FROM (\n" \
	"    SELECT sid, isl, MIN(s) AS is_, MAX(e) AS ie FROM g\n" \
	"    GROUP BY sid, isl) GROUP BY sid)\n"
/* Span s's self time, given RC_SELF_COVER_CTE's cov joined to it. */
#define RC_SELF_NS "s.end_ns - s.start_ns - COALESCE(cov.covered, 0)"

/*
 * Create the table script_extensions and every view in database H, whose
 * tables (and the patterns of rc_patterns_build) are written.  Returns 0,
 * or -1 with SQLite's message in ERR (ERRLEN bytes).
 */
int rc_views_create(sqlite3 *h, char *err, size_t errlen);

/* The SQL rc_views_create runs (for the documentation test). */
extern const char rc_views_sql[];

#endif /* RC_VIEWS_H */
