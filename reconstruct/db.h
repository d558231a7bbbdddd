/*
 * db.h - the paths database (schema in docs/schema.md).
 *
 * Rows are written with prepared statements inside one transaction into a
 * temporary file next to the output, which rc_db_finish renames into place
 * once complete.  Times come as provisional Unix-epoch ns (each domain's
 * own wall clock); rows are spooled to an unlinked temporary file and
 * inserted by rc_db_finish, in the order they came, times shifted by the
 * domains' estimated corrections.  Rows without times (attrs, warnings,
 * span_candidates) are inserted while the merge runs, by a thread of
 * their own (db_rows.c, "the queue").
 *
 * Integer fields equal to RC_DB_NULL and NULL strings are written as SQL
 * NULL.  After the first SQLite error every writer is a no-op and
 * C->err is set (rc_fail), so callers need not check each row.
 */
#ifndef RC_DB_H
#define RC_DB_H

#include <stddef.h>

#include <sqlite3.h>

#include "rc.h"

/* stats.schema_version of what this version writes (docs/schema.md). */
#define RC_SCHEMA_VERSION 3

#define RC_DB_NULL INT64_MIN

/* The row structs name their padding (pad, pad2): the row spool
 * (db_rows.c) copies them as 8-byte words, and a member left out of an
 * initializer is zero where padding would be undefined. */
struct rc_row_request {
	uint64_t id, root_span;
	int64_t  start, end;         /* end RC_DB_NULL if never answered */
	const char *protocol, *method, *target, *client;
	int64_t  status;
	uint32_t dom;
	uint8_t  certainty;          /* of its root span (enum rc_certainty);
					the request's own is set at the end */
	uint8_t  pad[3];
	const char *reason;          /* a static string, or NULL */
	int64_t  pattern;            /* set as it is inserted (db_rows.c) */
};

struct rc_row_span {
	uint64_t id, req, parent;    /* 0 = NULL */
	const char *kind, *protocol, *name, *target, *host, *exe, *peer;
	int64_t  status;
	uint32_t pid, tid, dom, pad;
	uint64_t process_id, channel_id;
	int64_t  start, end;
	uint8_t  certainty;          /* enum rc_certainty */
	uint8_t  root;               /* its request's root (not a column) */
	uint8_t  pad2[6];
	const char *reason;          /* a static string, or NULL */
};

struct rc_row_message {
	uint64_t id, req, span, channel_id, process_id, peer_message;
	uint32_t dom, pid, tid, pad;
	int64_t  begin, ts;
	const char *dir, *kind, *protocol;
	uint32_t flags, pad2;
	uint64_t off, len;
	int64_t  status, witness;
};

struct rc_row_fragment {
	uint64_t id, req, span, process_id, channel_id;
	uint32_t dom, pid, tid, pad;
	int64_t  start, end, fd;
	const char *trigger;
	uint64_t events;
};

struct rc_row_file {
	uint64_t id, req, span, process_id;
	uint32_t dom, pid, tid, pad;
	int64_t  ts, flags, result;
	const char *path;
	uint32_t path_len, pad2;
};

struct rc_row_process {
	uint64_t id, parent, req;
	uint32_t dom, pid, ppid, pad;
	const char *host, *exe, *cmdline, *how;
	uint64_t ring_id;
	int64_t  start, end;
	uint64_t events;
};

struct rc_row_channel {
	uint64_t id, conn, peer, process_id, req;
	uint32_t dom, pid;
	int64_t  fd;
	const char *kind, *role, *protocol, *local, *remote, *path;
	uint64_t ino, peer_ino;
	int      traced_peer, lost_sync;
	int      readable;        /* 1, 0, or -1 (NULL: nothing moved) */
	int      pad;
	const char *unreadable_reason;
	int64_t  open, close;
	uint64_t bytes_in, bytes_out, msgs_in, msgs_out;
};

/* Create the temporary database for C->opt->output; RC_EXIT_OUTPUT on
 * failure (rc_fail set). */
int  rc_db_open(struct rc_ctx *c);
/* Shift times by the domains' corrections, write hosts and stats, build
 * indexes and views, commit and rename into place; RC_EXIT_OUTPUT on
 * failure. */
int  rc_db_finish(struct rc_ctx *c);
/* Drop the temporary database (after a failure). */
void rc_db_abort(struct rc_ctx *c);

void rc_db_request(struct rc_ctx *c, const struct rc_row_request *r);
void rc_db_span(struct rc_ctx *c, const struct rc_row_span *r);
void rc_db_message(struct rc_ctx *c, const struct rc_row_message *r);
void rc_db_attr(struct rc_ctx *c, uint64_t span, uint64_t message,
		const char *key, const char *val, uint32_t len);
void rc_db_fragment(struct rc_ctx *c, const struct rc_row_fragment *r);
void rc_db_file(struct rc_ctx *c, const struct rc_row_file *r);
void rc_db_process(struct rc_ctx *c, const struct rc_row_process *r);
void rc_db_channel(struct rc_ctx *c, const struct rc_row_channel *r);
void rc_db_warning(struct rc_ctx *c, const char *file, uint64_t off,
		   const char *text);
/* rc_options.row_keys: the rows spooled from here to the next
 * RC_KEY_END are left out by the replay when its rows_from_ns leaves
 * out a root that began at T (of clock domain DOM: RC_KEY_AT), request
 * REQ's root (RC_KEY_REQUEST: judged by its row, spooled before), or a
 * channel closed at T (RC_KEY_CHANNEL; also counted as such).  The
 * spool's record kind K_ROWKEY (db_rows.c). */
enum rc_key_form { RC_KEY_END, RC_KEY_AT, RC_KEY_REQUEST, RC_KEY_CHANNEL };
void rc_db_row_key(struct rc_ctx *c, enum rc_key_form form, uint64_t req,
		   uint32_t dom, int64_t t);
/* Request REQ may own span SPAN (ambiguous); CHOSEN: the one it was given
 * to.  REASON is a static string. */
void rc_db_candidate(struct rc_ctx *c, uint64_t span, uint64_t req,
		     int chosen, const char *reason);

/*
 * rc_db_certainty_apply - the certainty of database H's requests from its
 * spans' marks and span_candidates (docs/schema.md): spans below an
 * uncertain span inherit its mark; a request is uncertain if a span of it
 * is or it was a candidate owner, resolved if a span of it was resolved,
 * with every reason once.  Requests with no mark are left as they are.
 * Returns 0, or -1 with a message in ERR (ERRLEN bytes).  Used by the
 * writer and by bp-reconstruct --join.
 */
int rc_db_certainty_apply(sqlite3 *h, char *err, size_t errlen);

#endif /* RC_DB_H */
