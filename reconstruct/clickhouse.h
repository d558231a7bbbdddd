/*
 * clickhouse.h - the ClickHouse sink: every table of a finished paths
 * database into ClickHouse over its HTTP interface (docs/clickhouse.md).
 *
 * The rows are the database's own, read back with SQL like the other
 * exports, so ClickHouse holds what SQLite holds.  Each table becomes a
 * ReplacingMergeTree table of the same name and columns (INTEGER as
 * Int64, REAL as Float64, TEXT as String; Nullable unless NOT NULL)
 * with two more in front: run (the run's id) and row_id (the SQLite
 * rowid), the sorting and replacing key.  A row sent twice - a retried
 * insert, or the same logs reconstructed again - is the same key, so
 * queries with FINAL see it once.
 */
#ifndef RC_CLICKHOUSE_H
#define RC_CLICKHOUSE_H

#include <stddef.h>
#include <stdint.h>

#define CH_BATCH    100000    /* rows per INSERT (--clickhouse-batch) */
#define CH_TIMEOUT  300.0     /* seconds for the whole sink */
#define CH_RETRIES  5         /* retries of one request */
#define CH_IO_MAX   120.0     /* seconds one request may take */

struct ch_opts {
	const char         *url;      /* http[s]://[USER[:PASS]@]HOST[:PORT]/[?database=DB&...] */
	const char         *run;      /* the run's id (NULL: from the content) */
	const char         *ca;       /* https: CA file (NULL: the system's) */
	int                 gzip;     /* Content-Encoding: gzip */
	const char *const  *headers;  /* "Name: value" */
	size_t              nheaders;
	size_t              batch;    /* rows per INSERT */
	double              timeout;  /* seconds for the whole sink */
	int                 retries;  /* retries of one request */
};

struct ch_stats {
	uint64_t rows;            /* rows inserted (all tables) */
	uint64_t inserts;         /* INSERT requests answered 200 */
	uint64_t tables;          /* tables written */
	uint64_t retries;         /* attempts after the first, all requests */
	uint64_t bytes;           /* request bodies as on the wire */
	uint64_t raw_bytes;       /* the same before compression */
	uint64_t deleted;         /* row ids whose deletion was asked (ch_del) */
	uint64_t mutations;       /* ALTER TABLE ... DELETE statements of them */
	int      deleted_ok;      /* every deletion asked was accepted */
	double   secs;
	char     run[80];         /* the run id used */
	char     database[80];    /* the database written */
	char     shown[600];      /* the URL without its password */
};

/* Check URL (scheme, host, port, database name).  0 or -1 with ERR. */
int ch_check_url(const char *url, char *err, size_t len);
/* Check a --clickhouse-header.  0 or -1 with ERR. */
int ch_check_header(const char *h, char *err, size_t len);
/* Check a --clickhouse-run name (1-64 of [A-Za-z0-9_.:-]).  0 or -1. */
int ch_check_run(const char *run, char *err, size_t len);

#endif /* RC_CLICKHOUSE_H */
