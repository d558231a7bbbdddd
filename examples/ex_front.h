/*
 * ex_front.h - the command line every front server takes.
 */
#ifndef EX_FRONT_H
#define EX_FRONT_H

#include "ex_block.h"

/* Which optional settings a front takes. */
#define EX_FRONT_WORKERS 1u     /* --workers N */
#define EX_FRONT_POOL    2u     /* --pool N */

struct ex_front_opts {
	const char *host;           /* --host: address to listen on */
	int port;                   /* --port */
	struct ex_target backend;   /* --backend-host/-port/-unix, --timeout-ms */
	const char *pidfile;        /* --pidfile, or NULL */
	int idle_ms;                /* --idle-ms: close silent clients */
	int workers;                /* --workers (EX_FRONT_WORKERS) */
	int pool;                   /* --pool (EX_FRONT_POOL) */
};

/* Parse ARGV into O.  NAME and WHAT describe the program for --help; FLAGS
 * (EX_FRONT_*) say which optional settings it takes, DEF_WORKERS and
 * DEF_POOL their defaults.  Prints help and exits 0 for --help; exits 2
 * with a one-line error for a bad command line. */
void ex_front_parse(int argc, char **argv, struct ex_front_opts *o,
		    const char *name, const char *what, unsigned flags,
		    int def_workers, int def_pool);

/* Print the one-line statistics record the tests read at exit:
 * "NAME[PID]: stats key=value ..." on stderr.  FMT gives the pairs. */
void ex_front_stats(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* EX_FRONT_H */
