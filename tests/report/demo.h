/*
 * demo.h - a scripted web shop for the report and export tests: nginx
 * hands PHP pages over FastCGI to php-fpm, which queries PostgreSQL,
 * looks names up and calls an untraced search service; nginx serves
 * static files itself, except the banners, which a misconfiguration
 * sends through PHP and the database (the paper's dearinter.net case).
 *
 * Built on the reconstructor's log generator (tests/recon/gen.h).  Each
 * "chain" is one nginx worker with its own php-fpm worker and PostgreSQL
 * backend; a chain serves one request at a time, chains run in parallel.
 * Times are in microseconds of the scenario (gen.h).
 */
#ifndef TESTS_REPORT_DEMO_H
#define TESTS_REPORT_DEMO_H

#include <stdint.h>

#include "../recon/gen.h"

struct demo_chain;

/* A chain: nginx worker 1000+IDX and php-fpm worker 2000+IDX on WEB,
 * PostgreSQL backend 3000+IDX on DB (may be WEB), connected at AT. */
struct demo_chain *demo_chain(struct gen_host *web, struct gen_host *db,
			      int idx, int64_t at);
void demo_chain_free(struct demo_chain *c);

struct demo_query {
	const char *sql;
	int64_t     us;          /* time in the database */
	const char *error;       /* SQLSTATE of a failed query, or NULL */
};

struct demo_page {
	const char *method, *target, *client;
	int         status;            /* HTTP status nginx answers */
	const char *static_file;       /* served by nginx itself, or NULL */
	const char *dns_name;          /* php looks it up first, or NULL */
	int64_t     dns_us;
	int         dns_result;        /* getaddrinfo's result (0: found) */
	const char *upstream_target;   /* php calls the search service */
	int64_t     upstream_us;
	const struct demo_query *q;    /* php's queries, in order */
	int         nq;
	int64_t     php_us;            /* php's own work after the queries */
	int         no_reply;          /* php never answers (trace ends) */
};

/*
 * Script request P on chain C from time T0 (the earliest start; the chain
 * may still be busy).  Returns the time nginx sent the reply.  Request
 * timeline for a PHP page with queries q[0..n): nginx receives it at
 * start+5, sends FastCGI at +10, php receives at +15; php's work starts
 * at +20; a name lookup takes dns_us (+5); the upstream call connects at
 * u, sends at u+2, gets its reply at u+2+upstream_us (+10 after); each
 * query is sent at u, received at u+5, answered at u+5+us, read at
 * u+10+us (+15 after); php then works php_us and answers at u; nginx
 * reads the answer at u+5 and replies at u+10.  A static file: nginx
 * receives at +5, opens the file at +8 and replies at +20.
 */
int64_t demo_request(struct demo_chain *c, int64_t t0,
		     const struct demo_page *p);

/* The whole shop: NREQ requests of a fixed mix over 2 chains on one host
 * "web", or with TWO_HOSTS the database on host "db" (another clock).
 * Returns the end of the scenario. */
int64_t demo_shop(struct gen *g, int nreq, int two_hosts);

#endif /* TESTS_REPORT_DEMO_H */
