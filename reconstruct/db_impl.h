/*
 * db_impl.h - what the files of the paths database share (db.c: schema,
 * statements, the end of a run; db_rows.c: the rows and their spool).
 * Only they include it; the rest of bp-reconstruct uses db.h.
 */
#ifndef RC_DB_IMPL_H
#define RC_DB_IMPL_H

#include <sqlite3.h>

#include "db.h"

/* The prepared statements, one per table written (rc_db_stmt_sql). */
enum stmt_id {
	S_REQUEST, S_SPAN, S_MESSAGE, S_ATTR, S_FRAGMENT, S_FILE, S_PROCESS,
	S_CHANNEL, S_WARNING, S_CANDIDATE,
	S_SPAN_PATTERN,              /* prepared by the replay (db_rows.c) */
	S_MAX
};

struct rc_db_rows;

struct rc_db {
	sqlite3      *h;
	sqlite3_stmt *st[S_MAX];
	char         *tmp;           /* temporary path */
	int           failed;
	/* the spool: rows with times, until the clock corrections are known
	 * (db_rows.c) */
	struct rc_db_rows *rows;
	/* the patterns, made as span and request rows go in (patterns.h),
	 * or NULL: made from the rows at the end */
	struct rc_pat_stream *pat;
	/* the requests rows inserted: how many, their first and last
	 * start_ns (stats requests_first_ns and requests_last_ns: --follow
	 * reads them where it scanned the table, follow.c window).  Written
	 * by whichever thread inserts (one at a time: db_rows.c) */
	uint64_t      req_n;
	int64_t       req_first, req_last;
};

/* "INSERT INTO table VALUES(?,...)" for each statement (db.c). */
extern const char *const rc_db_stmt_sql[S_MAX];

/* requests.certainty and spans.certainty, by enum rc_certainty */
static const char *const certainty_name[3] = { "exact", "resolved",
					       "uncertain" };

/* Record the first SQLite error of C's database (WHAT, and SQLite's
 * message) with rc_fail; every writer is a no-op from then on. */
void rc_db_error(struct rc_ctx *c, const char *what);

/* Binding: integers equal to RC_DB_NULL, ids 0 and NULL strings are SQL
 * NULL; strings are bound without a copy (SQLITE_STATIC). */
static inline void b_i(sqlite3_stmt *s, int i, int64_t v)
{
	if (v == RC_DB_NULL)
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_int64(s, i, v);
}

/* An id: 0 means NULL. */
static inline void b_id(sqlite3_stmt *s, int i, uint64_t v)
{
	if (v == 0)
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_int64(s, i, (int64_t)v);
}

static inline void b_t(sqlite3_stmt *s, int i, const char *v)
{
	if (!v)
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
}

static inline void b_tn(sqlite3_stmt *s, int i, const char *v, uint32_t n)
{
	if (!v)
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_text(s, i, v, (int)n, SQLITE_STATIC);
}

/* Run bound statement S once (an error on TABLE recorded) and reset it. */
static inline void step(struct rc_ctx *c, sqlite3_stmt *s, const char *table)
{
	if (sqlite3_step(s) != SQLITE_DONE)
		rc_db_error(c, table);
	sqlite3_reset(s);
}

/* db_rows.c: create the spool (OUTPUT.tmp-PID-rows); 0, or RC_EXIT_OUTPUT
 * with the error recorded. */
int  rc_db_rows_open(struct rc_ctx *c);
/* Insert every spooled row in the order it came, times shifted by its
 * domain's correction, then free the spool; 0 or -1 (error recorded). */
int  rc_db_rows_replay(struct rc_ctx *c);
/* In a process forked from the one that spooled: go on spooling into a
 * file of its own (the other process goes on writing its own after
 * what was spooled before the fork); 0, or RC_EXIT_OUTPUT with the
 * error recorded. */
int  rc_db_rows_fork(struct rc_ctx *c);
/* Spool a warnings or span_candidates row (before the database is open,
 * rc_options.db_later): inserted in order by rc_db_rows_replay. */
void rc_db_spool_warning(struct rc_ctx *c, const char *file, uint64_t off,
			 const char *text);
void rc_db_spool_candidate(struct rc_ctx *c, uint64_t span, uint64_t req,
			   int chosen, const char *reason);
/* A span_candidates row of request REQ went in without the spool (the
 * queue, or at once): a window pass must not leave REQ out
 * (db_rows.c, "requests no row names"). */
void rc_db_rows_named(struct rc_ctx *c, uint64_t req);
/* Free the spool of D (after a failure; nothing when already freed). */
void rc_db_rows_free(struct rc_db *d);

/* The queue (db_rows.c): attrs, warnings and span_candidates inserted by
 * a thread of their own while the merge runs.  rc_db_queue_start (once
 * the statements are prepared) returns 0, -1 when no thread could be
 * started (they are then spooled or inserted at once), or RC_EXIT_OUTPUT
 * with the error recorded; from then on only that thread uses the
 * connection, until rc_db_queue_stop (every queued row inserted, the
 * thread's first error recorded in C) or rc_db_queue_abort (after a
 * failure).  The rc_db_queue_ writers return -1 when no queue runs. */
int  rc_db_queue_start(struct rc_ctx *c);
void rc_db_queue_stop(struct rc_ctx *c);
void rc_db_queue_abort(struct rc_db *d);
int  rc_db_queue_warning(struct rc_ctx *c, const char *file, uint64_t off,
			 const char *text);
int  rc_db_queue_candidate(struct rc_ctx *c, uint64_t span, uint64_t req,
			   int chosen, const char *reason);

#endif /* RC_DB_IMPL_H */
