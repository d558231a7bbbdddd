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
 * (db.c), on the open database, inside the writer's transaction; or the
 * writer makes them as the rows go in (rc_pat_stream, below) and
 * rc_patterns_finish ends them there.
 */
#ifndef RC_PATTERNS_H
#define RC_PATTERNS_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

/*
 * Build the patterns of database H: tables patterns, pattern_nodes and
 * span_patterns, column requests.pattern_id, and stats key "patterns".
 * Returns 0, or -1 with a message in ERR (ERRLEN bytes) on an SQLite
 * error or when memory runs out.  Memory grows with the number of
 * distinct patterns and the spans of the largest request.
 */
int rc_patterns_build(sqlite3 *h, char *err, size_t errlen);

/* The same tables and column, empty (every pattern_id NULL), without
 * their indexes: for the passes of --follow that write no pattern
 * (follow.c, which reads none of them). */
int rc_patterns_empty(sqlite3 *h, char *err, size_t errlen);

/*
 * The patterns made as the rows go in (db_rows.c; patterns.c, "as the
 * rows go in"): the same tables as rc_patterns_build's, with less work
 * at the end.  rc_pat_stream_open creates the tables (NULL, with a
 * message in ERR, when it cannot: then rc_patterns_build makes them);
 * the writer hands it every span row, then every request row, with
 * their final times, from one thread at a time; rc_patterns_finish,
 * in rc_patterns_build's place, ends it (or makes the patterns the pass's
 * way where the rows did not allow it) and frees it.
 */
struct rc_pat_stream;

struct rc_pat_span {             /* a spans row: ids 0 are NULL */
	uint64_t    id, req, parent;
	const char *kind, *protocol, *name, *target, *exe;
	int64_t     start, end;
	int         has_start, has_end;
};

struct rc_pat_stream *rc_pat_stream_open(sqlite3 *h, char *err,
					 size_t errlen);
void rc_pat_stream_span(struct rc_pat_stream *ps, const struct rc_pat_span *s);
/* Request REQ's row (root span ROOT_SPAN) is being written: the pattern
 * id for its pattern_id column (0: NULL, for now or for good). */
int64_t rc_pat_stream_request(struct rc_pat_stream *ps, uint64_t req,
			      uint64_t root_span);
/* A span_patterns row of the stream (span_id, request_id, pattern_id,
 * node, label, self_ns: NULL unless HAS_SELF). */
struct rc_pat_row {
	int64_t     span, req, pattern, node, self;
	int         has_self;
	uint32_t    label_len;
	const char *label;
};
/* From now on the stream hands its span_patterns rows to FN (with ARG)
 * instead of inserting them itself: a writer whose inserts run in
 * another thread than the stream (db_rows.c, the replay); FN NULL: it
 * inserts them again. */
void rc_pat_stream_emit(struct rc_pat_stream *ps,
			void (*fn)(void *arg, const struct rc_pat_row *r),
			void *arg);
int rc_patterns_finish(sqlite3 *h, struct rc_pat_stream *ps, char *err,
		       size_t errlen);
/* Without rc_patterns_finish (an error before the end). */
void rc_pat_stream_free(struct rc_pat_stream *ps);

#endif /* RC_PATTERNS_H */
