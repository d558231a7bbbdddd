/*
 * check_recon.h - helpers shared by the bp-reconstruct unit tests: run the
 * reconstructor's core on generated logs and read the database back.
 */
#ifndef CHECK_RECON_H
#define CHECK_RECON_H

#include <check.h>
#include <sqlite3.h>
#include <stdint.h>

#include "../recon/gen.h"
#include "recon.h"

/* A scratch directory for one test: logs/ and paths.db inside it. */
struct rt {
	char dir[256];
	char logs[300];
	char db[300];
	char err[300];            /* the run's stderr */
	const char *extra;        /* a second LOGDIR for rt_run, or NULL */
	const char *const *unary; /* gRPC methods named unary (NULL: none) */
	int nunary;
	int64_t pending_ns;       /* rc_options.pending_ns (0: none) */
	int64_t pending_new_ns;   /* rc_options.pending_new_ns */
	int spool_all;            /* rc_options.spool_all */
	int replay_serial;        /* rc_options.replay_serial */
	uint32_t pair_run;        /* rc_options.pair_run */
	int db_later;             /* rc_options.db_later */
	int64_t rows_from_ns;     /* rc_options.rows_from_ns (a window pass) */
	int steps;                /* rc_options.steps (the merge in steps) */
	int steps_unsafe;         /* rc_options.steps_unsafe */
	int64_t hold_ns;          /* rc_options.hold_ns */
	const char *live;         /* the input instead of LOGS, or NULL */
	int (*grow_fn)(void *, int64_t *);  /* rc_options.grow_fn */
	void *grow_arg;
	struct rc_summary sum;
	int rc;
	sqlite3 *h;
};

/* Make the scratch directory (removed by rt_done unless KEEP is set). */
void rt_init(struct rt *t);
/* Write G's logs (O may be NULL) and free G; returns the files written. */
int rt_write(struct rt *t, struct gen *g, const struct gen_write_opts *o);
/* Run rc_run on the logs (and T->extra); opens the database; returns
 * the exit code. */
int rt_run(struct rt *t);
void rt_done(struct rt *t);

/* First column of the first row of SQL, as text ("NULL" for NULL,
 * "<none>" for no row).  The result is valid until the next call. */
const char *rt_q(struct rt *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int64_t rt_qi(struct rt *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The stderr of the run, for messages. */
const char *rt_stderr(struct rt *t);

/*
 * Every request as one line, then its spans as an indented tree (children
 * in start order), then the spans of no request.  Requests in start order:
 *   R <protocol> <method> <target> st=<status> client=<client>[ [label]]
 *     <kind> <protocol> '<name>' <target> <host>/<pid>/<tid> st=<status>[ [label]]
 * where a label "[<certainty> <reason>]" follows what is not 'exact'.
 * The result is valid until the next call.
 */
const char *rt_paths(struct rt *t);

/* Spans that start before their parent or end after it. */
int64_t rt_badly_nested(struct rt *t);

Suite *recon_paths_suite(void);
Suite *recon_loss_suite(void);
Suite *recon_clock_suite(void);
Suite *recon_unit_suite(void);
Suite *recon_certainty_suite(void);
Suite *recon_unread_suite(void);
Suite *recon_more_suite(void);

#endif /* CHECK_RECON_H */
