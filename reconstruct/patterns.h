/*
 * patterns.h - path patterns: the shape of every request's path, and the
 * mean delay each node of a shape adds (docs/schema.md, "Patterns").
 *
 * A request's spans form a tree (parent_span_id).  Each span becomes a
 * node labelled by its kind, protocol, service (the executable's base
 * name) and its normalised target (rc_pattern_norm: numbers, hex ids,
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
 * Normalise the N bytes at IN (a URL, SQL text, a line) into OUT (CAP
 * bytes, CAP >= 8), always NUL-terminated.  Values are folded into ? (in
 * a URL, IS_URL, into *): '...' strings ('' and \' inside them); numbers
 * (digits, with a fraction and an exponent; 0x and hex digits); ids: words
 * of letters and digits that are hexadecimal with a digit and 6 or more
 * characters long, or have 2 or more digits and 5 or more characters, and
 * runs of hex digits joined by dashes with 16 or more digits (UUIDs); in
 * a URL after its first '?', every value of key=value.  A list of folded
 * values separated by commas becomes one.  Runs of white space and
 * control characters become one space.  A result longer than CAP - 1
 * bytes is cut on a character boundary and ends in "...".  Returns the
 * length written.
 */
size_t rc_pattern_norm(const char *in, size_t n, int is_url, char *out,
		       size_t cap);

/*
 * Build the patterns of database H: tables patterns, pattern_nodes and
 * span_patterns, column requests.pattern_id, and stats key "patterns".
 * Returns 0, or -1 with a message in ERR (ERRLEN bytes) on an SQLite
 * error or when memory runs out.  Memory grows with the number of
 * distinct patterns and the spans of the largest request.
 */
int rc_patterns_build(sqlite3 *h, char *err, size_t errlen);

#endif /* RC_PATTERNS_H */
