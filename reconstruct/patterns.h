/*
 * patterns.h - path patterns: the shape of every request's path, and the
 * mean delay each node of a shape adds (docs/schema.md, "Patterns").
 *
 * A request's spans form a tree (parent_span_id).  Each span becomes a
 * node labelled by its kind, protocol, service (the executable's base
 * name) and its normalised target (rc_pattern_norm, pattern_norm.h: numbers, hex ids,
 * quoted strings and query-string values folded), children in start
 * order.  The preorder list of nodes is the request's *signature*;
 * requests with the same signature share a pattern.  For every pattern
 * node the mean duration and mean self time (its duration minus the union
 * of its children's intervals) over the pattern's requests are kept.
 *
 * rc_patterns_build runs once, after every row is written and indexed
 * (db.c), on the open database, inside the writer's transaction.
 */
#ifndef RC_PATTERNS_H
#define RC_PATTERNS_H

#include <stddef.h>

#include <sqlite3.h>

/*
 * Build the patterns of database H: tables patterns, pattern_nodes and
 * span_patterns, column requests.pattern_id, and stats key "patterns".
 * Returns 0, or -1 with a message in ERR (ERRLEN bytes) on an SQLite
 * error or when memory runs out.  Memory grows with the number of
 * distinct patterns and the spans of the largest request.
 */
int rc_patterns_build(sqlite3 *h, char *err, size_t errlen);

/* The same tables and column, empty (every pattern_id NULL): for the
 * passes of --follow that write no pattern (follow.c). */
int rc_patterns_empty(sqlite3 *h, char *err, size_t errlen);

#endif /* RC_PATTERNS_H */
