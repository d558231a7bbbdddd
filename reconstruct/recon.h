/*
 * recon.h - the reconstructor's core, as bp-reconstruct and the unit tests
 * call it: read the log directories, write the paths database.
 */
#ifndef RC_RECON_H
#define RC_RECON_H

#include <stdint.h>
#include <stdio.h>

/* Exit status of bp-reconstruct (documented in --help and docs/). */
enum rc_exit {
	RC_EXIT_OK     = 0,   /* database written (warnings may exist) */
	RC_EXIT_USAGE  = 1,   /* bad command line */
	RC_EXIT_INPUT  = 2,   /* no readable log segment in the input */
	RC_EXIT_OUTPUT = 3,   /* the database could not be written */
	RC_EXIT_PUSH   = 4,   /* written, but the OTLP push lost spans */
};

struct rc_options {
	const char *const *inputs;   /* LOGDIRs, segment files */
	int         ninputs;
	const char *output;          /* paths.db (replaced atomically) */
	const char *reference;       /* clock reference host name, or NULL */
	int         quiet;           /* no summary, no warnings on stderr */
	int         progress;        /* -1: when stderr is a tty, 0 off, 1 on */
	int         max_warn_lines;  /* warnings echoed one by one to stderr
					(0: none, -1: none); they are
					always summed up by kind at the end */
	FILE       *err;             /* diagnostics (NULL: stderr) */
	/* gRPC methods the user names unary (--grpc-unary, --grpc-proto):
	 * shell patterns of "/package.Service/Method" (grpc.h) */
	const char *const *grpc_unary;
	int         ngrpc_unary;
	int         detail;          /* enum rc_detail: which tables are
					written (docs/reconstruct.md,
					"Detail") */
	int         no_patterns;     /* leave the pattern tables empty
					(--follow's passes between two
					refreshes: follow.c) */
	/* --follow's window passes (follow.c): the messages, their attrs,
	 * the fragments and the files of a request whose root began before
	 * this Unix time (ns) are not written (0: all are); its request and
	 * span rows are.  The stats say where the latest such root lies once
	 * corrected (follow_rows_skip_max_ns) */
	int64_t     rows_from_ns;
	/* ... compared with the root's start corrected by its domain's
	 * correction in the last pass (hosts.domain, hosts.correction_ns);
	 * a domain not named here gets the largest in magnitude, added */
	const char *const *rows_dom;
	const int64_t *rows_corr;
	size_t      nrows_dom;
	/* --follow's passes before the last: the logs may still lack
	 * records of this Unix time (ns) and later.  A request or reply
	 * then received from a peer no log has, where traced programs
	 * accepted on (or connected to) that address before, is uncertain
	 * ("peer-not-logged"): the peer's records may be on their way
	 * (0: the logs are complete, such a peer is untraced) */
	int64_t     pending_ns;
	/* ... and where nothing says yet whether an address's peers are
	 * traced: an end that began less than this long (ns) after the
	 * first end of its kind at its address (pair.c, expect_peer) */
	int64_t     pending_new_ns;
	/* rows with times go through the spool even with one clock domain
	 * (db_rows.c; the tests compare the spool with the queue) */
	int         spool_all;
	/* the database is created by rc_db_finish, not before the merge:
	 * every row, warning and candidate spooled until then (the keeper
	 * of --follow forks the process that finishes a pass from a merge
	 * that never opened it; keeper.c) */
	int         db_later;
	/* each group of rows a window pass may leave out (rows_from_ns) is
	 * spooled between two keys saying by what it is judged (db_rows.c,
	 * K_ROWKEY), so that the replay leaves out those before the
	 * rows_from_ns it then has: a keeper's pass those of its own
	 * window, not only those of the keeper's (keeper.c) */
	int         row_keys;
	/* the spooled rows are inserted by the thread that reads them back,
	 * not by a second one (db_rows.c; the tests compare the two) */
	int         replay_serial;
	/* channel ends sorted at once when pass 1 pairs them (pair.c; 0:
	 * its default, 131,072; the tests make it small to pair many runs) */
	uint32_t    pair_run;
	/* more than 1: the merge sees the logs grow in this many steps
	 * (steps.c), as the incremental merge will; the result must be the
	 * merge's at once (a check of the merge's pause and resumption;
	 * BP_RECONSTRUCT_STEPS) */
	int         steps;
	/* ... with each step's watermark its V (steps.c), though records
	 * not shown yet may be older: the merge must stop with an error (a
	 * check of that refusal) */
	int         steps_unsafe;
	/* while the logs grow, the merge holds back a record whose meaning
	 * a later record may still change (a channel end without a peer, a
	 * fork without a child: model.c, rc_model_holds) until the
	 * watermark is this much past it; 0: RC_HOLD_NS, the default */
	int64_t     hold_ns;
	/* a test of the merge on logs that grow on disk: GROW_FN is called
	 * whenever the merge has read all there is; it may add to the
	 * files and returns 1 with *W (every record up to W, Unix ns as
	 * the merge maps them, is in the files), 0 once they are final, or
	 * -1; the inputs are indexed again (rc_input_more) and pass 1 reads
	 * on (rc_scan_more) after each call */
	int        (*grow_fn)(void *arg, int64_t *w);
	void        *grow_arg;
};
#define RC_HOLD_NS 1000000000LL

/* --detail: RC_DETAIL_FULL (the default) writes every table;
 * RC_DETAIL_SPANS leaves messages and fragments empty (their rows are
 * the per-event detail; everything else is written as with full). */
enum rc_detail { RC_DETAIL_FULL = 0, RC_DETAIL_SPANS = 1 };

/* What rc_run found, for the caller's summary and the tests. */
struct rc_summary {
	uint64_t events, lost, requests, spans, messages, fragments;
	uint64_t unattributed;       /* fragments + messages + files + spans */
	uint64_t warnings;
	uint32_t hosts, domains;
	/* requests by certainty (docs/schema.md) */
	uint64_t exact, resolved, uncertain;
	/* channels that could not be read (tls-in-program, unknown-protocol,
	 * lost-sync: channels.readable = 0) and warnings not expected */
	uint64_t unreadable, costly_warnings;
	/* processes bp-logd named as doing their network I/O past libc
	 * (table untraced_programs) */
	uint64_t untraced;
	/* rc_options.pending_ns: requests and replies marked
	 * peer-not-logged, and the latest time of such a mark (Unix ns) */
	uint64_t pending;
	int64_t  pending_max;
	/* bytes of rows spooled until the clock corrections were known */
	uint64_t spool_bytes;
	uint32_t replay_threads;     /* the spool's replay: 1 or 2 (0: none) */
};

/*
 * rc_run - reconstruct the paths in O->inputs into the SQLite file
 * O->output.  The database is written to a temporary file next to it and
 * renamed into place only when complete.  Diagnostics go to O->err.
 * Returns an enum rc_exit value; fills *SUM (may be NULL) when it returns
 * RC_EXIT_OK.
 */
int rc_run(const struct rc_options *o, struct rc_summary *sum);

#endif /* RC_RECON_H */
