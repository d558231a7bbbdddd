/*
 * views.h - the views of the paths database: the common questions asked
 * in SQL (docs/schema.md, "Views").
 */
#ifndef RC_VIEWS_H
#define RC_VIEWS_H

#include <stddef.h>

#include <sqlite3.h>

/*
 * Create the table script_extensions and every view in database H, whose
 * tables (and the patterns of rc_patterns_build) are written.  Returns 0,
 * or -1 with SQLite's message in ERR (ERRLEN bytes).
 */
int rc_views_create(sqlite3 *h, char *err, size_t errlen);

/* The SQL rc_views_create runs (for the documentation test). */
extern const char rc_views_sql[];

#endif /* RC_VIEWS_H */
