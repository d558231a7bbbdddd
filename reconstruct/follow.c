/*
 * follow.c - bp-reconstruct --follow (see follow.h).
 *
 * The loop: wait for the logs to change (inotify on the log directories
 * and their host directories; a pass every interval when inotify cannot
 * watch them), reconstruct them into PATHS.db.pass with rc_run, attach
 * that database and write what is final into PATHS.db in one
 * transaction (write_pass).  A pass also runs without new log data when
 * requests wait for their grace period to end: it then only writes.
 *
 * Ids.  PATHS.db's ids are its own.  Hosts, processes and channels get
 * theirs once, from a key that names them in any pass (table follow_ids):
 * host name and clock domain; the process image's ring id, pid and first
 * event; the channel's process, fd, kind, role and open time.  Times in
 * keys are monotonic (the row's Unix time less its domain's realtime
 * difference and correction), which no clock estimate of a later pass
 * moves.  Requests are keyed by their root span the same way
 * (follow_requests) and keep their request_id for ever; messages,
 * fragments and files get new ids each time their request is written,
 * spans too unless what they show is unchanged (span_fp: fresh_sql).
 * Rows of no request are replaced on every pass, with ids UNATTR + the
 * pass's id.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>

#include <sqlite3.h>

#include "clickhouse.h"
#include "export.h"
#include "follow.h"
#include "keeper.h"
#include "map.h"
#include "otlp_push.h"
#include "spill.h"

/* The window of a pass: a request open longer than this many windows is
 * left for the next full pass; clock estimates of two passes may differ
 * by the margin. */
#define FOLLOW_OPEN_WINDOWS 30
#define FOLLOW_MARGIN_NS 1000000000LL

/* Ids of rows of no request: above every id a request's row gets
 * (EXPORT_UNATTR, export.h). */
#define UNATTR "1099511627776"

/* The reason a kept merge could not make a pass, at most */
#define KEEP_WHY 1024
/* A kept merge's passes read back the rows of every request since the
 * window it began with (writing those of their own window only): once
 * that is this many windows before a pass's window, a new one is made
 * (keeper.c, run_pass). */
#define FOLLOW_KEEP_WINDOWS 12

static volatile sig_atomic_t stop_sig;

/* The first SIGINT or SIGTERM asks for the last pass; a second one ends
 * the process at once (PATHS.db holds the passes committed). */
static void on_stop(int sig)
{
	if (stop_sig) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	stop_sig = sig;
}

struct fl {
	const struct rc_follow_opts *o;
	sqlite3 *h;                 /* PATHS.db */
	char    *pass;              /* PATHS.db.pass */
	int      ino;               /* inotify fd, -1: poll every interval */
	int      tty;
	uint64_t passes, written, revised, waiting, missing, withdrawn;
	uint64_t pending;           /* complete, waiting for the grace */
	int64_t  lag_max_ns;        /* of the requests the last pass wrote */
	int64_t  newest_ns;         /* the newest event of the last pass */
	/* the wall time when the last pass's peer-not-logged marks are all
	 * overdue: a pass then, even if the logs did not change (0: none) */
	int64_t  pending_until;
	int64_t  refreshed_ns;      /* when patterns were last written */
	int64_t  read_ns;           /* Unix time the last pass began reading */
	int64_t  horizon;           /* of this pass (INT64_MIN: a full pass) */
	int64_t  last_start;        /* the newest request of the pass */
	int64_t  pass_rows_from;    /* rc_options.rows_from_ns of the pass */
	int64_t  next_from;         /* the next pass's, INT64_MIN: none */
	/* the clock corrections of the last pass, by domain label (for
	 * rc_options.rows_dom) */
	char   **dom;
	int64_t *corr;
	size_t   ndom;
	int64_t  open_from;         /* the first start of a request not yet
				       written (INT64_MAX: none) */
	uint64_t deferred;          /* left for the next full pass */
	double   refresh_s;         /* what the last refresh pass cost */
	uint64_t events;
	/* the sinks: [0] the OTLP push, [1] ClickHouse */
	uint64_t sent[2], batches[2], retries[2], failed[2];
	uint64_t ch_deleted, ch_mutations;   /* ClickHouse rows asked deleted */
	uint64_t unpushed;          /* requests written, not in a sink yet */
	uint64_t held;              /* of those, waiting for late records */
	uint64_t nodb;              /* ... or for a full pass (NODB_SQL) */
	uint64_t chan_missing;      /* window passes that wrote nothing: a
				       channel row they left out was needed
				       (chan_rows_missing) */
	/* the segment files' largest sizes seen (by a hash of the path):
	 * one that shrank is being rewritten (seg_shrunk) */
	struct rc_map seg_size;
	uint64_t shrunk_waits;
	int64_t  shrunk_since;      /* monotonic ns: waiting since (0: not) */
	uint64_t sink_errors;       /* sinks that failed in the last pass */
	char     ch_run[80];        /* the ClickHouse run (one per PATHS.db) */
	struct rc_summary sum;      /* of the last reconstruction */
	/* the full pass in the background (bg_start): its process (0: none),
	 * its database (PATHS.db.full), when it began reading, how long it
	 * took, the passes it wrote and the requests it left to the window
	 * passes */
	pid_t    bg_pid;
	char    *bg_out;
	int64_t  bg_read_ns;
	int64_t  full_read_ns;      /* when the last full pass written read */
	int64_t  bg_horizon;        /* the window passes' then */
	double   bg_t0;
	uint64_t bg_passes, bg_left;
	/* its database, written, removed by a thread of its own (reap) */
	pthread_t reap_th;
	int      reaping;
	/* the merge kept between window passes (keeper.c): the process,
	 * whether to use it (BP_FOLLOW_KEEPER: 0 no, 1 yes, 2 yes and each
	 * of its passes checked against one at once), the passes it made,
	 * the times it was started anew after it could not make one, those
	 * checked */
	struct rc_keeper *keeper, *keep_next;
	int      keep_mode;
	uint64_t keep_passes, keep_rebuilds, keep_checked, keep_renewed;
	int64_t  keep_from;         /* the rows it leaves out itself (the
				       window it began with) */
	int64_t  keep_next_from;    /* ... and the new one's */
	double   keep_next_t0;      /* when the last new keeper began */
	double   keep_ready_s;      /* how long it took to be ready */
	char     err[1024];
};

static int64_t now_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int ffail(struct fl *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int ffail(struct fl *f, const char *fmt, ...)
{
	va_list ap;
	if (f->err[0])
		return -1;
	va_start(ap, fmt);
	vsnprintf(f->err, sizeof f->err, fmt, ap);
	va_end(ap);
	return -1;
}

/* Run SQL (a printf format for sqlite3_vmprintf: %lld, %q); 0 or -1. */
static int xsql(struct fl *f, const char *fmt, ...)
{
	va_list ap;
	char *e = NULL;
	va_start(ap, fmt);
	char *sql = sqlite3_vmprintf(fmt, ap);
	va_end(ap);
	if (!sql)
		return ffail(f, "out of memory");
	const char *tm = getenv("BP_FOLLOW_TIMING");
	int rc;
	if (tm && *tm) {
		/* statement by statement, each timed */
		const char *p = sql;
		rc = SQLITE_OK;
		while (rc == SQLITE_OK && *p) {
			sqlite3_stmt *st = NULL;
			const char *next;
			int64_t t0 = now_ns(CLOCK_MONOTONIC);
			rc = sqlite3_prepare_v2(f->h, p, -1, &st, &next);
			if (rc == SQLITE_OK && st) {
				while ((rc = sqlite3_step(st)) == SQLITE_ROW)
					;
				rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
				sqlite3_finalize(st);
			}
			if (rc != SQLITE_OK)
				e = sqlite3_mprintf("%s", sqlite3_errmsg(f->h));
			if (st)
				fprintf(stderr, "%8.1f ms %.70s\n", (now_ns(CLOCK_MONOTONIC) - t0) / 1e6,
					p + strspn(p, " \n"));
			p = next;
		}
	} else {
		rc = sqlite3_exec(f->h, sql, NULL, NULL, &e);
	}
	if (rc != SQLITE_OK) {
		char head[81];
		snprintf(head, sizeof head, "%s", sql + strspn(sql, " \n"));
		ffail(f, "%s: %s (in: %s...)", f->o->rc->output,
		      e ? e : sqlite3_errstr(rc), head);
	}
	sqlite3_free(e);
	sqlite3_free(sql);
	return rc == SQLITE_OK ? 0 : -1;
}

/* The N integers of the row SQL answers (0 when NULL or no row); 0 or -1. */
static int row_i64(struct fl *f, const char *sql, int64_t *v, int n)
{
	sqlite3_stmt *s;
	const char *tm = getenv("BP_FOLLOW_TIMING");
	int64_t t0 = tm && *tm ? now_ns(CLOCK_MONOTONIC) : 0;
	for (int i = 0; i < n; i++)
		v[i] = 0;
	if (sqlite3_prepare_v2(f->h, sql, -1, &s, NULL) != SQLITE_OK)
		return ffail(f, "%s: %s", f->o->rc->output, sqlite3_errmsg(f->h));
	int rc = sqlite3_step(s);
	for (int i = 0; rc == SQLITE_ROW && i < n; i++)
		v[i] = sqlite3_column_int64(s, i);
	sqlite3_finalize(s);
	if (t0)
		fprintf(stderr, "%8.1f ms %.70s\n", (now_ns(CLOCK_MONOTONIC) - t0) / 1e6,
			sql + strspn(sql, " \n"));
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return ffail(f, "%s: %s", f->o->rc->output, sqlite3_errmsg(f->h));
	return 0;
}

/* The integer SQL answers (0 when NULL or no row); 0 or -1. */
static int one_i64(struct fl *f, const char *sql, int64_t *v)
{
	return row_i64(f, sql, v, 1);
}

/* --- the fingerprint: FNV-1a 64 of each row's values, rows summed (the
 * order of the rows does not matter) --- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t row_hash(int argc, sqlite3_value **argv)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (int i = 0; i < argc; i++) {
		unsigned char t = (unsigned char)sqlite3_value_type(argv[i]);
		h = fnv(h, &t, 1);
		if (t == SQLITE_INTEGER) {
			int64_t v = sqlite3_value_int64(argv[i]);
			h = fnv(h, &v, sizeof v);
		} else if (t == SQLITE_FLOAT) {
			double v = sqlite3_value_double(argv[i]);
			h = fnv(h, &v, sizeof v);
		} else if (t != SQLITE_NULL) {
			const void *p = sqlite3_value_blob(argv[i]);
			int n = sqlite3_value_bytes(argv[i]);
			h = fnv(h, &n, sizeof n);
			if (p)
				h = fnv(h, p, (size_t)n);
		}
	}
	return h;
}

static void fp_step(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
	uint64_t *acc = sqlite3_aggregate_context(cx, sizeof *acc);
	if (acc)
		*acc += row_hash(argc, argv);
}

static void fp_final(sqlite3_context *cx)
{
	uint64_t *acc = sqlite3_aggregate_context(cx, 0);
	sqlite3_result_int64(cx, acc ? (int64_t)*acc : 0);
}

static void h_func(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
	sqlite3_result_int64(cx, (int64_t)row_hash(argc, argv));
}

/* --- PATHS.db --- */

/* What PATHS.db has gained since its first version: made on a new one
 * with follow_tables, added to an older one (upgrade). */
#define FOLLOW_TABLES_SINCE \
	/* the ClickHouse rows of requests sent and then revised or \
	 * withdrawn, to delete there before anything more is sent \
	 * (docs/clickhouse.md, "Live") */ \
	"CREATE TABLE IF NOT EXISTS follow_ch_del(tbl TEXT NOT NULL,\n" \
	"  row_id INTEGER NOT NULL, PRIMARY KEY(tbl, row_id)) WITHOUT ROWID;\n" \
	"INSERT OR IGNORE INTO follow_state VALUES('ch_resent', 0);\n"

static const char follow_tables[] =
	"CREATE TABLE follow_requests(key TEXT PRIMARY KEY,\n"
	"  request_id INTEGER UNIQUE, fingerprint INTEGER,\n"
	"  emitted_ns INTEGER, revised INTEGER, written_ns INTEGER,\n"
	"  pushed INTEGER NOT NULL DEFAULT 0, push_pass INTEGER,\n"
	"  ch_pushed INTEGER NOT NULL DEFAULT 0, ch_pass INTEGER, span_fp INTEGER,\n"
	"  pat_fp INTEGER);\n"
	"CREATE INDEX follow_requests_push ON follow_requests(pushed, push_pass);\n"
	"CREATE INDEX follow_requests_ch ON follow_requests(ch_pushed, ch_pass);\n"
	"CREATE TABLE follow_ids(kind INTEGER, key TEXT, id INTEGER,\n"
	"  PRIMARY KEY(kind, key)) WITHOUT ROWID;\n"
	"CREATE TABLE follow_state(key TEXT PRIMARY KEY, value INTEGER);\n"
	"INSERT INTO follow_state VALUES('span', 0), ('message', 0),\n"
	"  ('fragment', 0), ('file', 0), ('withdrawn', 0),\n"
	"  ('otlp_seed', random()), ('push_pass', 0), ('push_withdrawn', 0),\n"
	"  ('ch_pass', 0), ('ch_withdrawn', 0), ('attr', 0), ('candidate', 0),\n"
	"  ('request', 0);\n"
	FOLLOW_TABLES_SINCE;

/* The fingerprints' functions, on connection H: an SQLite result code. */
static int functions(sqlite3 *h)
{
	int rc = sqlite3_create_function(h, "bp_fp", -1, SQLITE_UTF8 |
					 SQLITE_DETERMINISTIC, NULL, NULL,
					 fp_step, fp_final);
	if (rc == SQLITE_OK)
		rc = sqlite3_create_function(h, "bp_h", -1, SQLITE_UTF8 |
					     SQLITE_DETERMINISTIC, NULL, h_func,
					     NULL, NULL);
	return rc;
}

static int open_out(struct fl *f)
{
	const char *path = f->o->rc->output;
	int rc = sqlite3_open_v2(path, &f->h, SQLITE_OPEN_READWRITE |
				 SQLITE_OPEN_CREATE, NULL);
	if (rc != SQLITE_OK)
		return ffail(f, "%s: %s: name a file in a directory you can write",
			     path, f->h ? sqlite3_errmsg(f->h) : sqlite3_errstr(rc));
	sqlite3_busy_timeout(f->h, 10000);
	if (functions(f->h) != SQLITE_OK)
		return ffail(f, "%s: %s", path, sqlite3_errmsg(f->h));
	if (xsql(f, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;\n"
		 "CREATE TEMP TABLE pend(key TEXT PRIMARY KEY, start INTEGER);\n"
		 "CREATE TEMP TABLE deferred(key TEXT PRIMARY KEY);\n"
		 "CREATE TEMP TABLE wd(key TEXT PRIMARY KEY);") < 0)
		return -1;
	int64_t n_req, n_follow;
	if (one_i64(f, "SELECT count(*) FROM sqlite_master WHERE name = 'requests'", &n_req) < 0 ||
	    one_i64(f, "SELECT count(*) FROM sqlite_master WHERE name = 'follow_requests'", &n_follow) < 0)
		return -1;
	if (n_req && !n_follow)
		return ffail(f, "%s was written by an offline run, not by --follow: name another file (or remove this one)", path);
	return 0;
}

/* On the first pass into a new PATHS.db: the tables, indexes and views
 * of the pass's database, and the follow tables. */
static int make_schema(struct fl *f)
{
	int64_t n;
	if (one_i64(f, "SELECT count(*) FROM main.sqlite_master WHERE name = 'follow_requests'", &n) < 0)
		return -1;
	if (n) {      /* a PATHS.db of an earlier version: what it lacks */
		if (one_i64(f, "SELECT count(*) FROM pragma_table_info('follow_requests')"
			    " WHERE name = 'span_fp'", &n) < 0 ||
		    (!n && xsql(f, "ALTER TABLE follow_requests ADD COLUMN span_fp INTEGER") < 0) ||
		    one_i64(f, "SELECT count(*) FROM pragma_table_info('follow_requests')"
			    " WHERE name = 'pat_fp'", &n) < 0 ||
		    (!n && xsql(f, "ALTER TABLE follow_requests ADD COLUMN pat_fp INTEGER") < 0))
			return -1;
		return xsql(f, "%s", FOLLOW_TABLES_SINCE);
	}
	if (xsql(f, "BEGIN") < 0)
		return -1;
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(f->h,
			       "SELECT sql FROM e.sqlite_master WHERE sql IS NOT NULL"
			       " AND name NOT LIKE 'sqlite_%'"
			       " ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 ELSE 2 END, rowid",
			       -1, &s, NULL) != SQLITE_OK)
		return ffail(f, "%s: %s", f->pass, sqlite3_errmsg(f->h));
	/* Read all first: a statement may not run while its schema changes. */
	char **sql = NULL;
	size_t nsql = 0;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		char **g = realloc(sql, (nsql + 1) * sizeof *sql);
		if (!g || !(g[nsql] = strdup((const char *)sqlite3_column_text(s, 0)))) {
			free(g ? g : sql);
			sqlite3_finalize(s);
			return ffail(f, "out of memory");
		}
		sql = g;
		nsql++;
	}
	sqlite3_finalize(s);
	int r = rc == SQLITE_DONE ? 0 : ffail(f, "%s: %s", f->pass, sqlite3_errmsg(f->h));
	for (size_t i = 0; i < nsql; i++) {
		if (!r)
			r = xsql(f, "%s", sql[i]);
		free(sql[i]);
	}
	free(sql);
	if (r < 0 || xsql(f, "%s", follow_tables) < 0 ||
	    xsql(f, "INSERT INTO script_extensions SELECT * FROM e.script_extensions;"
		 "COMMIT") < 0) {
		sqlite3_exec(f->h, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	return 0;
}

/* The revisions of the requests written (follow_revised: the requests
 * revised alone) */
#define REVISED_SQL "SELECT sum(revised) FROM follow_requests WHERE revised > 0"

/* Give the rows of temp table T (columns e, l, key) their ids of kind
 * KIND: the key's id if it has one, else a new one. */
static int map_ids(struct fl *f, int kind, const char *t)
{
	int64_t base;
	char q[128];
	snprintf(q, sizeof q, "SELECT max(id) FROM follow_ids WHERE kind = %d", kind);
	if (one_i64(f, q, &base) < 0)
		return -1;
	/* each key looked up once, the new ones twice (where an INSERT
	 * ... WHERE NOT EXISTS and an UPDATE looked every key up twice:
	 * 0.3 s of a full pass's write at 1.3 million events) */
	return xsql(f,
		"UPDATE temp.%s SET l = (SELECT i.id FROM follow_ids i\n"
		"  WHERE i.kind = %d AND i.key = %s.key);\n"
		"INSERT INTO follow_ids(kind, key, id)\n"
		"  SELECT %d, key, %lld + row_number() OVER (ORDER BY e) FROM temp.%s\n"
		"  WHERE l IS NULL;\n"
		"UPDATE temp.%s SET l = (SELECT i.id FROM follow_ids i\n"
		"  WHERE i.kind = %d AND i.key = %s.key) WHERE l IS NULL;\n",
		t, kind, t, kind, (long long)base, t, t, kind, t);
}

/* The maps of the pass's hosts, processes, channels and requests to
 * PATHS.db's ids, and which requests this pass writes (temp.w). */
static const char maps_sql[] =
	"DROP TABLE IF EXISTS temp.hm; DROP TABLE IF EXISTS temp.pm;\n"
	"DROP TABLE IF EXISTS temp.cm; DROP TABLE IF EXISTS temp.ccm;\n"
	"DROP TABLE IF EXISTS temp.rs; DROP TABLE IF EXISTS temp.rm;\n"
	"DROP TABLE IF EXISTS temp.w; DROP TABLE IF EXISTS temp.sm;\n"
	"DROP TABLE IF EXISTS temp.mm; DROP TABLE IF EXISTS temp.win;\n"
	"DROP TABLE IF EXISTS temp.wc; DROP TABLE IF EXISTS temp.pr;\n"
	"CREATE TEMP TABLE win(e INTEGER PRIMARY KEY, core INTEGER);\n"
	"CREATE TEMP TABLE wc(e INTEGER PRIMARY KEY);\n"
	"CREATE TEMP TABLE hm(e INTEGER PRIMARY KEY, l INTEGER, key TEXT, sh INTEGER);\n"
	"INSERT INTO temp.hm(e, key, sh)\n"
	"  SELECT host_id, bk || '#' || row_number() OVER (PARTITION BY bk ORDER BY host_id), sh\n"
	"  FROM (SELECT host_id, COALESCE(name, '') || '/' || COALESCE(domain, '') AS bk,\n"
	"        COALESCE(realtime_delta_ns, 0) + COALESCE(correction_ns, 0) AS sh FROM e.hosts);\n"
	"CREATE TEMP TABLE pm(e INTEGER PRIMARY KEY, l INTEGER, key TEXT);\n"
	"CREATE TEMP TABLE cm(e INTEGER PRIMARY KEY, l INTEGER, key TEXT, conn INTEGER);\n"
	"CREATE TEMP TABLE ccm(e INTEGER PRIMARY KEY, l INTEGER);\n";

static const char proc_sql[] =
	"INSERT INTO temp.pm(e, key)\n"
	"  SELECT process_id, bk || '#' || row_number() OVER (PARTITION BY bk ORDER BY process_id)\n"
	"  FROM (SELECT p.process_id, COALESCE(h.key, '') || '/' || COALESCE(p.ring_id, '') || '/'\n"
	"        || COALESCE(p.pid, '') || '/' || COALESCE(p.start_ns - h.sh, '') AS bk\n"
	"        FROM e.processes p LEFT JOIN temp.hm h ON h.e = p.host_id);\n";

static const char chan_sql[] =
	"INSERT INTO temp.cm(e, key, conn)\n"
	"  SELECT channel_id, bk || '#' || row_number() OVER (PARTITION BY bk ORDER BY channel_id), conn_id\n"
	"  FROM (SELECT c.channel_id, c.conn_id, COALESCE(p.key, '') || '/' || COALESCE(c.fd, '')\n"
	"        || '/' || COALESCE(c.kind, '') || '/' || COALESCE(c.role, '') || '/'\n"
	"        || COALESCE(c.open_ns - h.sh, '') AS bk\n"
	"        FROM e.channels c LEFT JOIN temp.pm p ON p.e = c.process_id\n"
	"        LEFT JOIN temp.hm h ON h.e = c.host_id\n"
	"        WHERE c.channel_id IN (SELECT e FROM temp.wc));\n";

/* The window of a pass (temp.win: the requests it looks at, temp.wc: the
 * channels it writes).  All of them on a full pass; on a window pass
 * (%lld, %lld: the horizon, in the pass's time) the requests that began at
 * or after the horizon (win.core: only those may be written), the
 * channels open then, and, until nothing is added, whatever their rows
 * point to: the requests of the processes, of those channels and of the
 * spans' candidate requests (for their ids only: the pass may not have
 * all their rows, rc_options.rows_from_ns), the channels of the
 * requests' spans, messages and fragments, the peer of each channel and
 * the other ends of its connection.  So every row written finds its ids
 * in the maps. */
static const char win_full_sql[] =
	"INSERT INTO temp.win SELECT request_id, 1 FROM e.requests;\n"
	"INSERT INTO temp.wc SELECT channel_id FROM e.channels;\n";

static const char win_start_sql[] =
	"INSERT OR IGNORE INTO temp.win SELECT request_id, 1 FROM e.requests WHERE start_ns >= %lld;\n"
	"INSERT OR IGNORE INTO temp.win SELECT request_id, 0 FROM e.processes WHERE request_id IS NOT NULL;\n"
	"INSERT OR IGNORE INTO temp.wc SELECT channel_id FROM e.channels\n"
	"  WHERE close_ns IS NULL OR close_ns >= %lld;\n";

static const char win_grow_sql[] =
	"INSERT OR IGNORE INTO temp.win SELECT c.request_id, 0 FROM e.span_candidates c\n"
	"  WHERE c.request_id IS NOT NULL AND c.span_id IN\n"
	"  (SELECT s.span_id FROM temp.win JOIN e.spans s ON s.request_id = win.e);\n"
	"INSERT OR IGNORE INTO temp.win SELECT c.request_id, 0 FROM temp.wc\n"
	"  JOIN e.channels c ON c.channel_id = wc.e WHERE c.request_id IS NOT NULL;\n"
	"INSERT OR IGNORE INTO temp.wc SELECT s.channel_id FROM temp.win\n"
	"  CROSS JOIN e.spans s ON s.request_id = win.e WHERE s.channel_id IS NOT NULL;\n"
	"INSERT OR IGNORE INTO temp.wc SELECT m.channel_id FROM temp.win\n"
	"  CROSS JOIN e.messages m ON m.request_id = win.e WHERE m.channel_id IS NOT NULL;\n"
	"INSERT OR IGNORE INTO temp.wc SELECT g.channel_id FROM temp.win\n"
	"  CROSS JOIN e.fragments g ON g.request_id = win.e WHERE g.channel_id IS NOT NULL;\n"
	"INSERT OR IGNORE INTO temp.wc SELECT c.peer_channel_id FROM temp.wc\n"
	"  JOIN e.channels c ON c.channel_id = wc.e WHERE c.peer_channel_id IS NOT NULL;\n"
	"INSERT OR IGNORE INTO temp.wc SELECT channel_id FROM e.channels WHERE conn_id IN\n"
	"  (SELECT c.conn_id FROM temp.wc JOIN e.channels c ON c.channel_id = wc.e);\n";

/* Per request of the pass: its key, fingerprint and whether it is final
 * (%lld: the last pass; %lld %lld: the cut-off).  Of the pass database
 * alone (temp.hm, temp.win and e.*): a full pass in the background has its
 * child compute it (bg_prepare), so that the write does not. */
static const char req_fp_sql[] =
	"CREATE TEMP TABLE rs(e INTEGER PRIMARY KEY, fp INTEGER, mx INTEGER, nopen INTEGER);\n"
	"INSERT INTO temp.rs\n"
	"  SELECT s.request_id, bp_fp(s.kind, s.protocol, s.name, s.target, s.status,\n"
	"    s.host, s.pid, s.tid, s.exe, s.peer, s.start_ns - h.sh, s.end_ns - h.sh,\n"
	"    s.certainty, s.certainty_reason, p.name, p.pid, p.tid, p.start_ns - ph.sh),\n"
	"    max(s.end_ns), sum(s.end_ns IS NULL)\n"
	"  FROM e.spans s LEFT JOIN temp.hm h ON h.e = s.host_id\n"
	"  LEFT JOIN e.spans p ON p.span_id = s.parent_span_id\n"
	"  LEFT JOIN temp.hm ph ON ph.e = p.host_id\n"
	"  WHERE s.request_id IN (SELECT e FROM temp.win) GROUP BY s.request_id;\n"
	"CREATE TEMP TABLE rm(e INTEGER PRIMARY KEY, l INTEGER, key TEXT UNIQUE,\n"
	"  fp INTEGER, fin INTEGER, endn INTEGER, old INTEGER, sfp INTEGER, osfp INTEGER,\n"
	"  pfp INTEGER, opfp INTEGER);\n"
	/* fp: every row of the request; sfp: what its spans show (their
	 * rows, the request's, its files' count and the spans' attributes:
	 * the OTLP trace), unchanged when a revision only adds messages or
	 * fragments (a php-fpm child's work after its answer, ended when it
	 * reads again or exits) */
	"INSERT INTO temp.rm(e, key, fp, fin, endn, sfp)\n"
	"  SELECT e, bk || '#' || row_number() OVER (PARTITION BY bk ORDER BY e),\n"
	"    bp_h(x, pr, me, ta, st, cl, co, ce, cr, rs, re, nm, ng, ni), fin, endn,\n"
	"    bp_h(x, pr, me, ta, st, cl, co, ce, cr, rs, re, ni, na)\n"
	"  FROM (SELECT r.request_id AS e,\n"
	"    COALESCE(h.key || '/' || s.pid || '/' || s.tid || '/' || (s.start_ns - h.sh),\n"
	"      'r/' || COALESCE(rh.key, '') || '/' || COALESCE(r.start_ns - rh.sh, '')) AS bk,\n"
	"    x.fp AS x, r.protocol AS pr, r.method AS me, r.target AS ta, r.status AS st,\n"
	"    r.client AS cl, r.complete AS co, r.certainty AS ce, r.certainty_reason AS cr,\n"
	"    r.start_ns - rh.sh AS rs, r.end_ns - rh.sh AS re,\n"
	"    (SELECT count(*) FROM e.messages m WHERE m.request_id = r.request_id) AS nm,\n"
	"    (SELECT count(*) FROM e.fragments g WHERE g.request_id = r.request_id) AS ng,\n"
	"    (SELECT count(*) FROM e.files i WHERE i.request_id = r.request_id) AS ni,\n"
	"    (SELECT bp_fp(a.key, a.value) FROM e.attrs a WHERE a.span_id IN\n"
	"      (SELECT span_id FROM e.spans WHERE request_id = r.request_id)) AS na,\n"
	"    (%lld OR (r.complete = 1 AND COALESCE(x.nopen, 0) = 0 AND r.end_ns IS NOT NULL\n"
	"      AND r.end_ns <= %lld AND COALESCE(x.mx, 0) <= %lld)) AS fin,\n"
	"    r.end_ns AS endn\n"
	"    FROM e.requests r LEFT JOIN temp.rs x ON x.e = r.request_id\n"
	"    LEFT JOIN e.spans s ON s.span_id = r.root_span_id\n"
	"    LEFT JOIN temp.hm h ON h.e = s.host_id\n"
	"    LEFT JOIN temp.hm rh ON rh.e = r.host_id\n"
	"    WHERE r.request_id IN (SELECT e FROM temp.win));\n";

/* temp.rm as the child of a full pass in the background computed it: its
 * table itself (e.follow_rm, whose keys the child indexed: pfp_sql), which
 * the write updates where it stands (REQ_LOOK, renew_sql; bg_done drops
 * the view), where copying it took 84-105 ms of the write at 1.3 million
 * events and the drop of the copy 17-25 ms of the next window pass (167
 * and 77 ms at 5.2 million) */
static const char req_copy_sql[] =
	"CREATE TEMP VIEW rm AS SELECT e, l, key, fp, fin, endn, old, sfp, osfp, pfp, opfp\n"
	"  FROM e.follow_rm;\n";

/* The table under temp.rm in a full pass in the background, as an UPDATE
 * names it (req_copy_sql) */
#define RM_BG "e.follow_rm AS rm"

/* Each request of temp.rm looked up in follow_requests (a key not there
 * gives NULLs, as the columns are): req_look_sql, req_bg_w_sql */
#define REQ_LOOK(rm) \
	"UPDATE " rm " SET (l, old, osfp, opfp) = (SELECT f.request_id, f.fingerprint,\n" \
	"    f.span_fp, f.pat_fp\n" \
	"  FROM follow_requests f WHERE f.key = rm.key)"

/* ... whose ids and fingerprints in PATHS.db the child looked up at its
 * snapshot (bg_judge): only the keys a window pass wrote (%lld:
 * written_ns from the time the child began reading on) or withdrew since
 * (temp.wd), temp.fx, are looked up again, where req_look_sql's lookup
 * of every key took 0.16-0.24 s of a full pass's write at 1.3 million
 * events */
static const char req_bg_w_sql[] =
	"DROP TABLE IF EXISTS temp.fx;\n"
	"CREATE TEMP TABLE fx(key TEXT PRIMARY KEY);\n"
	"INSERT OR IGNORE INTO temp.fx SELECT key FROM follow_requests WHERE written_ns >= %lld;\n"
	"INSERT OR IGNORE INTO temp.fx SELECT key FROM temp.wd;\n"
	REQ_LOOK(RM_BG) " WHERE rm.e IN (SELECT m.e FROM temp.fx CROSS JOIN e.follow_rm m ON m.key = fx.key);\n"
	/* the requests the write may write, or whose span_patterns rows or
	 * pattern may have moved (temp.rx): those the child found so
	 * (e.follow_rx) and those looked up again; req_w_bg_sql, moved_sql
	 * and pat_id_bg_sql look at those alone, where each scanned every
	 * request (0.1-0.15 s together at 1.3 million events) */
	"DROP TABLE IF EXISTS temp.rx;\n"
	"CREATE TEMP TABLE rx(e INTEGER PRIMARY KEY);\n"
	"INSERT INTO temp.rx SELECT e FROM e.follow_rx;\n"
	"INSERT OR IGNORE INTO temp.rx SELECT m.e FROM temp.fx CROSS JOIN e.follow_rm m ON m.key = fx.key;\n";

/* ... and when the child could not look them up: all of them */
static const char req_bg_all_sql[] =
	"DROP TABLE IF EXISTS temp.rx;\n"
	"CREATE TEMP TABLE rx(e INTEGER PRIMARY KEY);\n"
	"INSERT INTO temp.rx SELECT e FROM temp.rm;\n";

/* req_w_sql of a full pass in the background (its window is the whole
 * pass: every request may be written) */
static const char req_w_bg_sql[] =
	"CREATE TEMP TABLE w(e INTEGER PRIMARY KEY, l INTEGER, new INTEGER);\n"
	"INSERT INTO temp.w SELECT rm.e, rm.l, rm.l IS NULL FROM temp.rx\n"
	"  CROSS JOIN temp.rm ON rm.e = rx.e\n"
	"  WHERE rm.fin AND (rm.l IS NULL OR rm.old IS NOT rm.fp);\n";

/* The ids of the connections, and per request of the pass its PATHS.db
 * id if it has one and the fingerprints written then; which requests
 * this pass writes (temp.w). */
static const char req_ccm_sql[] =
	"INSERT INTO temp.ccm SELECT conn, min(l) FROM temp.cm WHERE conn IS NOT NULL GROUP BY conn;\n";

/* each of the pass's requests looked up once (where an UPDATE FROM
 * scanned the whole of follow_requests on every pass) */
static const char req_look_sql[] = REQ_LOOK("temp.rm") ";\n";
/* ... of a full pass in the background whose child did not look */
static const char req_look_bg_sql[] = REQ_LOOK(RM_BG) ";\n";

static const char req_w_sql[] =
	"CREATE TEMP TABLE w(e INTEGER PRIMARY KEY, l INTEGER, new INTEGER);\n"
	"INSERT INTO temp.w SELECT e, l, l IS NULL FROM temp.rm\n"
	"  WHERE fin AND (l IS NULL OR old IS NOT fp)\n"
	"  AND e IN (SELECT e FROM temp.win WHERE core);\n";

/* The requests withdrawn (renew_sql, below; %lld: the start from which
 * they count, %lld: the time the pass read the logs): those of PATHS.db
 * of no key of the pass (KEYS: a table of the pass's keys, indexed) */
#define GONE_WHERE(keys) \
	"  WHERE NOT EXISTS (SELECT 1 FROM " keys " k WHERE k.key = f.key)\n" \
	"  AND r.start_ns >= %lld AND f.written_ns < %lld;\n"
#define GONE_SQL(keys) \
	"INSERT INTO temp.gone SELECT f.request_id FROM requests r\n" \
	"  JOIN follow_requests f ON f.request_id = r.request_id\n" \
	GONE_WHERE(keys)
static const char gone_sql[] = GONE_SQL("temp.rm");
/* ... of a full pass in the background whose child did not look (the
 * keys in the child's table: req_copy_sql) */
static const char gone_all_bg_sql[] = GONE_SQL("e.follow_rm");

/* ... of a full pass in the background whose child found them (of the
 * same statement, at its snapshot of PATHS.db: e.follow_gone, bg_judge):
 * a request written before the child began reading (written_ns) was
 * there, so those found are all; looked at again here (a window pass may
 * have written them since). */
static const char gone_bg_sql[] =
	"INSERT INTO temp.gone SELECT f.request_id FROM e.follow_gone g\n"
	"  CROSS JOIN follow_requests f ON f.request_id = g.l\n"
	"  CROSS JOIN requests r ON r.request_id = g.l\n"
	GONE_WHERE("e.follow_rm");

/* New request ids (%lld: the largest so far; %s: temp.rm's table), and the
 * old rows of the requests written again removed (%s: gone_sql). */
static const char renew_sql[] =
	"UPDATE temp.w SET l = n.l FROM (SELECT e, %lld + row_number() OVER (ORDER BY e) AS l\n"
	"  FROM temp.w WHERE new) n WHERE n.e = w.e;\n"
	/* (%s: temp.rm or RM_BG; by rowid, where an UPDATE FROM scanned
	 * every request of the pass) */
	"UPDATE %s SET l = (SELECT w.l FROM temp.w WHERE w.e = rm.e)\n"
	"  WHERE rm.e IN (SELECT e FROM temp.w WHERE new);\n"
	/* withdrawn: written before, and no request of this pass has the
	 * key, though the pass reads the logs of its time (a request that
	 * began before the pass's first one is kept: its logs may have been
	 * removed) */
	"DROP TABLE IF EXISTS temp.gone; DROP TABLE IF EXISTS temp.del;\n"
	"CREATE TEMP TABLE gone(l INTEGER PRIMARY KEY);\n"
	"%s"
	/* (a full pass in the background writes no key withdrawn since it
	 * began reading: bg_write) */
	"INSERT OR IGNORE INTO temp.wd SELECT key FROM follow_requests\n"
	"  WHERE request_id IN (SELECT l FROM temp.gone);\n"
	"CREATE TEMP TABLE del(l INTEGER PRIMARY KEY);\n"
	"INSERT INTO temp.del SELECT l FROM temp.w WHERE NOT new UNION SELECT l FROM temp.gone;\n"
	/* a request written again whose spans show what they showed keeps
	 * their ids, the n-th span the n-th id (fresh_sql): the trace an
	 * OTLP receiver got stays the request's */
	"DROP TABLE IF EXISTS temp.keep;\n"
	"CREATE TEMP TABLE keep(rq INTEGER, o INTEGER, l INTEGER, PRIMARY KEY(rq, o));\n"
	"INSERT INTO temp.keep SELECT request_id,\n"
	"    row_number() OVER (PARTITION BY request_id ORDER BY span_id), span_id\n"
	"  FROM main.spans WHERE request_id IN\n"
	"    (SELECT w.l FROM temp.w JOIN temp.rm ON rm.e = w.e WHERE NOT w.new AND rm.sfp = rm.osfp);\n"
	/* what ClickHouse has of them (the rows export_clickhouse sent:
	 * req_where) goes there before their new rows do (sink_pass) */
	"DROP TABLE IF EXISTS temp.chd;\n"
	"CREATE TEMP TABLE chd(l INTEGER PRIMARY KEY);\n"
	"INSERT INTO temp.chd SELECT request_id FROM follow_requests\n"
	"  WHERE ch_pushed <> 0 AND request_id IN (SELECT l FROM temp.del);\n"
	"INSERT OR IGNORE INTO follow_ch_del SELECT 'attrs', rowid FROM attrs\n"
	"  WHERE span_id IN (SELECT span_id FROM spans WHERE request_id IN (SELECT l FROM temp.chd))\n"
	"  OR (span_id IS NULL AND message_id IN (SELECT message_id FROM messages\n"
	"      WHERE request_id IN (SELECT l FROM temp.chd)));\n"
	"INSERT OR IGNORE INTO follow_ch_del SELECT 'span_candidates', rowid FROM span_candidates\n"
	"  WHERE request_id IN (SELECT l FROM temp.chd);\n"
	"INSERT OR IGNORE INTO follow_ch_del SELECT 'span_patterns', rowid FROM span_patterns\n"
	"  WHERE request_id IN (SELECT l FROM temp.chd);\n"
	"INSERT OR IGNORE INTO follow_ch_del SELECT 'spans', rowid FROM spans\n"
	"  WHERE request_id IN (SELECT l FROM temp.chd);\n"
	"INSERT OR IGNORE INTO follow_ch_del SELECT 'messages', rowid FROM messages\n"
	"  WHERE request_id IN (SELECT l FROM temp.chd);\n"
	"INSERT OR IGNORE INTO follow_ch_del SELECT 'fragments', rowid FROM fragments\n"
	"  WHERE request_id IN (SELECT l FROM temp.chd);\n"
	"INSERT OR IGNORE INTO follow_ch_del SELECT 'files', rowid FROM files\n"
	"  WHERE request_id IN (SELECT l FROM temp.chd);\n"
	"INSERT OR IGNORE INTO follow_ch_del SELECT 'requests', rowid FROM requests\n"
	"  WHERE request_id IN (SELECT l FROM temp.chd);\n"
	"DELETE FROM attrs WHERE span_id IN (SELECT span_id FROM spans WHERE request_id IN\n"
	"  (SELECT l FROM temp.del));\n"
	"DELETE FROM attrs WHERE message_id IN (SELECT message_id FROM messages WHERE request_id IN\n"
	"  (SELECT l FROM temp.del));\n"
	"DELETE FROM span_candidates WHERE span_id IN (SELECT span_id FROM spans WHERE request_id IN\n"
	"  (SELECT l FROM temp.del));\n"
	"DELETE FROM spans WHERE request_id IN (SELECT l FROM temp.del);\n"
	"DELETE FROM messages WHERE request_id IN (SELECT l FROM temp.del);\n"
	"DELETE FROM fragments WHERE request_id IN (SELECT l FROM temp.del);\n"
	"DELETE FROM files WHERE request_id IN (SELECT l FROM temp.del);\n"
	"DELETE FROM requests WHERE request_id IN (SELECT l FROM temp.del);\n"
	"UPDATE follow_state SET value = value + (SELECT count(*) FROM follow_requests\n"
	"  WHERE request_id IN (SELECT l FROM temp.gone) AND pushed <> 0)\n"
	"  WHERE key = 'push_withdrawn';\n"
	"UPDATE follow_state SET value = value + (SELECT count(*) FROM follow_requests\n"
	"  WHERE request_id IN (SELECT l FROM temp.gone) AND ch_pushed <> 0)\n"
	"  WHERE key = 'ch_withdrawn';\n"
	"DELETE FROM span_patterns WHERE request_id IN (SELECT l FROM temp.gone);\n"
	"DELETE FROM follow_requests WHERE request_id IN (SELECT l FROM temp.gone);\n"
	"UPDATE follow_state SET value = value + (SELECT count(*) FROM temp.gone)\n"
	"  WHERE key = 'withdrawn';\n"
	"CREATE TEMP TABLE sm(e INTEGER PRIMARY KEY, l INTEGER);\n"
	"CREATE TEMP TABLE mm(e INTEGER PRIMARY KEY, l INTEGER);\n";

/* On a refresh pass: the span and message ids already written, of the
 * requests written before and unchanged (their rows went in in the
 * pass's order, so the n-th of a request is the n-th again).  Every
 * span's (span_patterns names them all: ordinal_spans, below); of the
 * messages only those a message written now, or one of no request, names
 * as its peer (nothing else looks a message id up): their requests'
 * (temp.pr), where mapping every message cost a full pass 1.9 s of its
 * 6.2 s at 1.3 million events. */
static const char ordinal_sql[] =
	"CREATE TEMP TABLE pr(e INTEGER PRIMARY KEY, l INTEGER);\n"
	"INSERT OR IGNORE INTO temp.pr SELECT rm.e, rm.l\n"
	"  FROM e.messages p JOIN temp.rm ON rm.e = p.request_id\n"
	"  WHERE rm.old = rm.fp AND p.message_id IN\n"
	"    (SELECT m.peer_message_id FROM temp.w CROSS JOIN e.messages m ON m.request_id = w.e\n"
	"     UNION SELECT peer_message_id FROM e.messages WHERE request_id IS NULL);\n"
	/* (CROSS JOIN: from temp.pr outwards, where SQLite scanned the
	 * index of every message of the pass and of PATHS.db, 65-80 ms of a
	 * full pass's write at 1.3 million events with temp.pr empty) */
	"INSERT INTO temp.mm SELECT a.e, b.l FROM\n"
	"  (SELECT m.message_id AS e, pr.l AS rq, row_number() OVER (PARTITION BY m.request_id ORDER BY m.message_id) AS o\n"
	"   FROM temp.pr CROSS JOIN e.messages m ON m.request_id = pr.e) a\n"
	"  JOIN (SELECT x.message_id AS l, x.request_id AS rq, row_number() OVER (PARTITION BY x.request_id ORDER BY x.message_id) AS o\n"
	"   FROM temp.pr CROSS JOIN main.messages x ON x.request_id = pr.l) b ON a.rq = b.rq AND a.o = b.o;\n";

/* A full pass in the background (after renew_sql): the requests whose
 * span_patterns rows are written (temp.mv: those written now, and those
 * unchanged whose rows' fingerprint, pfp, is not the one written), and
 * the unchanged requests whose span ids ordinal_spans maps (temp.ref):
 * those of temp.mv, and those holding a span that a row written now
 * names (a parent, the span of a message, fragment or file), of a
 * request written now or of none.  The others' ids nothing looks up. */
static const char moved_sql[] =
	"DROP TABLE IF EXISTS temp.mv; DROP TABLE IF EXISTS temp.ref;\n"
	"CREATE TEMP TABLE mv(l INTEGER PRIMARY KEY, e INTEGER, pfp INTEGER);\n"
	"INSERT INTO temp.mv SELECT rm.l, rm.e, rm.pfp FROM temp.rx CROSS JOIN temp.rm ON rm.e = rx.e\n"
	"  WHERE rm.l IS NOT NULL\n"
	"  AND (rm.e IN (SELECT e FROM temp.w) OR (rm.old = rm.fp AND rm.opfp IS NOT rm.pfp));\n"
	"CREATE TEMP TABLE ref(e INTEGER PRIMARY KEY);\n"
	"INSERT OR IGNORE INTO temp.ref SELECT e FROM temp.mv;\n"
	"INSERT OR IGNORE INTO temp.ref SELECT p.request_id FROM temp.w\n"
	"  CROSS JOIN e.spans s ON s.request_id = w.e JOIN e.spans p ON p.span_id = s.parent_span_id\n"
	"  WHERE p.request_id IS NOT NULL;\n"
	"INSERT OR IGNORE INTO temp.ref SELECT p.request_id FROM e.spans s\n"
	"  JOIN e.spans p ON p.span_id = s.parent_span_id\n"
	"  WHERE s.request_id IS NULL AND p.request_id IS NOT NULL;\n"
	"INSERT OR IGNORE INTO temp.ref SELECT x.request_id FROM temp.w\n"
	"  CROSS JOIN e.messages m ON m.request_id = w.e JOIN e.spans x ON x.span_id = m.span_id\n"
	"  WHERE x.request_id IS NOT NULL;\n"
	"INSERT OR IGNORE INTO temp.ref SELECT x.request_id FROM e.messages m\n"
	"  JOIN e.spans x ON x.span_id = m.span_id\n"
	"  WHERE m.request_id IS NULL AND x.request_id IS NOT NULL;\n"
	"INSERT OR IGNORE INTO temp.ref SELECT x.request_id FROM temp.w\n"
	"  CROSS JOIN e.fragments g ON g.request_id = w.e JOIN e.spans x ON x.span_id = g.span_id\n"
	"  WHERE x.request_id IS NOT NULL;\n"
	"INSERT OR IGNORE INTO temp.ref SELECT x.request_id FROM e.fragments g\n"
	"  JOIN e.spans x ON x.span_id = g.span_id\n"
	"  WHERE g.request_id IS NULL AND x.request_id IS NOT NULL;\n"
	"INSERT OR IGNORE INTO temp.ref SELECT x.request_id FROM temp.w\n"
	"  CROSS JOIN e.files i ON i.request_id = w.e JOIN e.spans x ON x.span_id = i.span_id\n"
	"  WHERE x.request_id IS NOT NULL;\n"
	"INSERT OR IGNORE INTO temp.ref SELECT x.request_id FROM e.files i\n"
	"  JOIN e.spans x ON x.span_id = i.span_id\n"
	"  WHERE i.request_id IS NULL AND x.request_id IS NOT NULL;\n";

/* Fresh span and message ids for the requests written now (%lld: the
 * last span id, %lld: the last message id). */
static const char fresh_sql[] =
	"INSERT INTO temp.sm SELECT a.e, k.l FROM\n"
	"  (SELECT s.span_id AS e, w.l AS rq,\n"
	"     row_number() OVER (PARTITION BY s.request_id ORDER BY s.span_id) AS o\n"
	"   FROM temp.w CROSS JOIN e.spans s ON s.request_id = w.e WHERE w.l IN (SELECT rq FROM temp.keep)) a\n"
	"  JOIN temp.keep k ON k.rq = a.rq AND k.o = a.o;\n"
	"INSERT INTO temp.sm SELECT s.span_id, %lld + row_number() OVER (ORDER BY s.span_id)\n"
	"  FROM temp.w CROSS JOIN e.spans s ON s.request_id = w.e\n"
	"  WHERE s.span_id NOT IN (SELECT e FROM temp.sm);\n"
	"INSERT INTO temp.mm SELECT m.message_id, %lld + row_number() OVER (ORDER BY m.message_id)\n"
	"  FROM temp.w CROSS JOIN e.messages m ON m.request_id = w.e;\n";

/* The rows of the requests written now (%lld %lld: the last fragment
 * and file ids).  From temp.w outwards (CROSS JOIN: SQLite's planner,
 * without statistics, scanned the pass's whole table instead, as long as
 * the history on a full pass, for the few requests it writes), rowids
 * given in the pass's order. */
static const char rows_sql[] =
	"INSERT INTO requests(request_id, start_ns, end_ns, duration_ns, protocol, method,\n"
	"  target, status, client, root_span_id, host_id, complete, certainty,\n"
	"  certainty_reason, pattern_id)\n"
	"  SELECT w.l, r.start_ns, r.end_ns, r.duration_ns, r.protocol, r.method, r.target,\n"
	"    r.status, r.client, sm.l, hm.l, r.complete, r.certainty, r.certainty_reason,\n"
	"    NULL\n"
	"  FROM temp.w CROSS JOIN e.requests r ON r.request_id = w.e\n"
	"  LEFT JOIN temp.sm ON sm.e = r.root_span_id LEFT JOIN temp.hm ON hm.e = r.host_id;\n"
	"INSERT INTO spans(span_id, request_id, parent_span_id, kind, protocol, name, target,\n"
	"  status, host, pid, tid, exe, peer, start_ns, end_ns, host_id, process_id,\n"
	"  channel_id, certainty, certainty_reason)\n"
	"  SELECT sm.l, w.l, ps.l, s.kind, s.protocol, s.name, s.target, s.status, s.host,\n"
	"    s.pid, s.tid, s.exe, s.peer, s.start_ns, s.end_ns, hm.l, pm.l, cm.l,\n"
	"    s.certainty, s.certainty_reason\n"
	"  FROM temp.w CROSS JOIN e.spans s ON s.request_id = w.e JOIN temp.sm ON sm.e = s.span_id\n"
	"  LEFT JOIN temp.sm ps ON ps.e = s.parent_span_id LEFT JOIN temp.hm ON hm.e = s.host_id\n"
	"  LEFT JOIN temp.pm ON pm.e = s.process_id LEFT JOIN temp.cm ON cm.e = s.channel_id;\n"
	/* the rowids of the tables without an id are counted too, never
	 * reused (the ClickHouse sink keys rows by rowid) */
	"INSERT INTO span_candidates(rowid, span_id, request_id, chosen, reason)\n"
	"  SELECT (SELECT value FROM follow_state WHERE key = 'candidate')\n"
	"    + row_number() OVER (ORDER BY c.rowid), sm.l, rm.l, c.chosen, c.reason\n"
	"  FROM temp.w CROSS JOIN e.spans s ON s.request_id = w.e\n"
	"  JOIN e.span_candidates c ON c.span_id = s.span_id JOIN temp.sm ON sm.e = s.span_id\n"
	"  LEFT JOIN temp.rm ON rm.e = c.request_id;\n"
	"UPDATE follow_state SET value = value + changes() WHERE key = 'candidate';\n"
	"INSERT INTO messages(message_id, request_id, span_id, channel_id, host_id,\n"
	"  process_id, pid, tid, begin_ns, ts_ns, dir, kind, protocol, flags, off, len,\n"
	"  status, witness, peer_message_id)\n"
	"  SELECT mm.l, w.l, sm.l, cm.l, hm.l, pm.l, m.pid, m.tid, m.begin_ns, m.ts_ns,\n"
	"    m.dir, m.kind, m.protocol, m.flags, m.off, m.len, m.status, m.witness, pmm.l\n"
	"  FROM temp.w CROSS JOIN e.messages m ON m.request_id = w.e JOIN temp.mm ON mm.e = m.message_id\n"
	"  LEFT JOIN temp.sm ON sm.e = m.span_id LEFT JOIN temp.cm ON cm.e = m.channel_id\n"
	"  LEFT JOIN temp.hm ON hm.e = m.host_id LEFT JOIN temp.pm ON pm.e = m.process_id\n"
	"  LEFT JOIN temp.mm pmm ON pmm.e = m.peer_message_id;\n"
	"INSERT INTO attrs(rowid, span_id, message_id, key, value)\n"
	"  SELECT (SELECT value FROM follow_state WHERE key = 'attr') + row_number() OVER (ORDER BY a.rowid),\n"
	"    sm.l, mm.l, a.key, a.value\n"
	"  FROM temp.w CROSS JOIN e.spans s ON s.request_id = w.e CROSS JOIN e.attrs a ON a.span_id = s.span_id\n"
	"  JOIN temp.sm ON sm.e = a.span_id LEFT JOIN temp.mm ON mm.e = a.message_id;\n"
	"UPDATE follow_state SET value = value + changes() WHERE key = 'attr';\n"
	"INSERT INTO attrs(rowid, span_id, message_id, key, value)\n"
	"  SELECT (SELECT value FROM follow_state WHERE key = 'attr') + row_number() OVER (ORDER BY a.rowid),\n"
	"    NULL, mm.l, a.key, a.value\n"
	"  FROM temp.w CROSS JOIN e.messages m ON m.request_id = w.e\n"
	"  CROSS JOIN e.attrs a ON a.message_id = m.message_id AND a.span_id IS NULL\n"
	"  JOIN temp.mm ON mm.e = a.message_id;\n"
	"UPDATE follow_state SET value = value + changes() WHERE key = 'attr';\n"
	"INSERT INTO fragments(fragment_id, request_id, span_id, host_id, process_id, pid,\n"
	"  tid, start_ns, end_ns, trigger, fd, channel_id, events)\n"
	"  SELECT %lld + row_number() OVER (ORDER BY g.fragment_id), w.l, sm.l, hm.l, pm.l,\n"
	"    g.pid, g.tid, g.start_ns, g.end_ns, g.trigger, g.fd, cm.l, g.events\n"
	"  FROM temp.w CROSS JOIN e.fragments g ON g.request_id = w.e\n"
	"  LEFT JOIN temp.sm ON sm.e = g.span_id LEFT JOIN temp.hm ON hm.e = g.host_id\n"
	"  LEFT JOIN temp.pm ON pm.e = g.process_id LEFT JOIN temp.cm ON cm.e = g.channel_id;\n"
	"INSERT INTO files(file_id, request_id, span_id, host_id, process_id, pid, tid,\n"
	"  ts_ns, path, flags, result)\n"
	"  SELECT %lld + row_number() OVER (ORDER BY i.file_id), w.l, sm.l, hm.l, pm.l,\n"
	"    i.pid, i.tid, i.ts_ns, i.path, i.flags, i.result\n"
	"  FROM temp.w CROSS JOIN e.files i ON i.request_id = w.e\n"
	"  LEFT JOIN temp.sm ON sm.e = i.span_id LEFT JOIN temp.hm ON hm.e = i.host_id\n"
	"  LEFT JOIN temp.pm ON pm.e = i.process_id;\n"
	/* %lld: now */
	"INSERT INTO follow_requests(key, request_id, fingerprint, emitted_ns, revised,\n"
	"  written_ns, span_fp)\n"
	"  SELECT rm.key, w.l, rm.fp, %lld, 0, %lld, rm.sfp FROM temp.w JOIN temp.rm ON rm.e = w.e\n"
	"  WHERE w.new;\n"
	/* pushed, then changed: the OTLP receiver keeps the old version
	 * (2); ClickHouse gets the new one, after the old one's rows are
	 * deleted there (renew_sql, follow_ch_del) */
	"UPDATE follow_state SET value = value + (SELECT count(*) FROM follow_requests\n"
	"  WHERE ch_pushed <> 0 AND request_id IN (SELECT l FROM temp.w WHERE NOT new))\n"
	"  WHERE key = 'ch_resent';\n"
	"UPDATE follow_requests SET fingerprint = x.fp, revised = revised + 1,\n"
	"  written_ns = %lld, span_fp = x.sfp, pat_fp = NULL,\n"
	"  pushed = CASE WHEN pushed = 1 AND x.sfp IS NOT x.osfp THEN 2 ELSE pushed END,\n"
	"  ch_pushed = 0\n"
	"  FROM (SELECT w.l, rm.fp, rm.sfp, rm.osfp FROM temp.w JOIN temp.rm ON rm.e = w.e\n"
	"        WHERE NOT w.new) x\n"
	"  WHERE follow_requests.request_id = x.l;\n";

/* The pass's channels, with PATHS.db's ids (global_sql, bg_chan_sql). */
#define CHAN_ROWS \
	"SELECT cm.l, ccm.l, hm.l, pm.l, c.pid, c.fd, c.kind, c.role,\n" \
	"  c.protocol, c.local, c.remote, c.path, c.ino, c.peer_ino, pc.l, c.traced_peer, rm.l,\n" \
	"  c.open_ns, c.close_ns, c.bytes_in, c.bytes_out, c.msgs_in, c.msgs_out, c.lost_sync,\n" \
	"  c.readable, c.unreadable_reason\n" \
	"  FROM e.channels c JOIN temp.cm ON cm.e = c.channel_id\n" \
	"  LEFT JOIN temp.ccm ON ccm.e = c.conn_id LEFT JOIN temp.hm ON hm.e = c.host_id\n" \
	"  LEFT JOIN temp.pm ON pm.e = c.process_id LEFT JOIN temp.cm pc ON pc.e = c.peer_channel_id\n" \
	"  LEFT JOIN temp.rm ON rm.e = c.request_id"

/* The tables of the whole run, replaced on every pass: the channels of
 * the window only (%s: the channels deleted first, all on a full pass). */
static const char global_sql[] =
	"DELETE FROM hosts;\n"
	"INSERT INTO hosts SELECT hm.l, h.name, h.domain, h.boot_id, h.reference, h.offset_ns,\n"
	"  h.lo_ns, h.hi_ns, h.samples, h.method, h.realtime_delta_ns, h.correction_ns, h.events\n"
	"  FROM e.hosts h JOIN temp.hm ON hm.e = h.host_id;\n"
	"DELETE FROM processes;\n"
	"INSERT INTO processes SELECT pm.l, p.host, hm.l, p.pid, p.ppid, p.exe, p.cmdline,\n"
	"  p.ring_id, p.start_ns, p.end_ns, pp.l, p.how, rm.l, p.events\n"
	"  FROM e.processes p JOIN temp.pm ON pm.e = p.process_id\n"
	"  LEFT JOIN temp.hm ON hm.e = p.host_id LEFT JOIN temp.pm pp ON pp.e = p.parent_process_id\n"
	"  LEFT JOIN temp.rm ON rm.e = p.request_id;\n"
	"DELETE FROM channels%s;\n"
	"INSERT INTO channels " CHAN_ROWS ";\n"
	"DELETE FROM untraced_programs;\n"
	"INSERT INTO untraced_programs SELECT pm.l, u.host, u.pid, u.exe, u.comm, u.sockets,\n"
	"  u.tcp_listen, u.tcp, u.udp, u.unix_listen, u.examples\n"
	"  FROM e.untraced_programs u LEFT JOIN temp.pm ON pm.e = u.process_id;\n"
	"DELETE FROM warnings;\n"
	"INSERT INTO warnings(warning_id, file, offset, text)\n"
	"  SELECT warning_id, file, offset, text FROM e.warnings;\n";

/* A full pass at once: every span's span_patterns row, most of them as
 * they were (a pattern's id is its first request's place in the logs, a
 * node's its place in the pattern): only the rows that changed are
 * deleted and inserted.  Writing them all again was the slowest
 * statement of a full pass's write. */
static const char pat_all_sql[] =
	"DROP TABLE IF EXISTS temp.spn;\n"
	"CREATE TEMP TABLE spn(span_id INTEGER PRIMARY KEY, request_id INTEGER,\n"
	"  pattern_id INTEGER, node INTEGER, label TEXT, self_ns INTEGER);\n"
	"INSERT INTO temp.spn SELECT sm.l, rm.l, sp.pattern_id, sp.node, sp.label, sp.self_ns\n"
	"  FROM e.span_patterns sp JOIN temp.sm ON sm.e = sp.span_id\n"
	"  LEFT JOIN temp.rm ON rm.e = sp.request_id;\n"
	"DELETE FROM span_patterns WHERE NOT EXISTS (SELECT 1 FROM temp.spn n\n"
	"  WHERE n.span_id = span_patterns.span_id AND n.request_id IS span_patterns.request_id\n"
	"  AND n.pattern_id IS span_patterns.pattern_id AND n.node IS span_patterns.node\n"
	"  AND n.label IS span_patterns.label AND n.self_ns IS span_patterns.self_ns);\n"
	"INSERT INTO span_patterns SELECT * FROM temp.spn n\n"
	"  WHERE NOT EXISTS (SELECT 1 FROM span_patterns o WHERE o.span_id = n.span_id);\n"
	"DROP TABLE temp.spn;\n";

/* ... and each request's rows are the pass's now, if written now or
 * unchanged (temp.sm maps their spans); the others' are none.  (The last
 * pass leaves every pat_fp NULL: nothing follows it but a new process's
 * first pass, which computes them.) */
static const char pat_fp_sql[] =
	"DROP TABLE IF EXISTS temp.pw;\n"
	"CREATE TEMP TABLE pw(l INTEGER PRIMARY KEY, pfp INTEGER);\n"
	"INSERT INTO temp.pw SELECT l, pfp FROM temp.rm WHERE l IS NOT NULL\n"
	"  AND (e IN (SELECT e FROM temp.w) OR old = fp);\n"
	"UPDATE follow_requests SET pat_fp = pw.pfp FROM temp.pw\n"
	"  WHERE follow_requests.request_id = pw.l AND follow_requests.pat_fp IS NOT pw.pfp;\n"
	"UPDATE follow_requests SET pat_fp = NULL WHERE pat_fp IS NOT NULL\n"
	"  AND request_id NOT IN (SELECT l FROM temp.pw);\n"
	"DROP TABLE temp.pw;\n";

/* A full pass in the background, whose child fingerprinted each request's
 * span_patterns rows (pfp, bg_prepare): only the rows of the requests
 * whose fingerprint is not the one written (temp.mv, moved_sql) are
 * written again, those of the others are as the pass has them.  At 1.3
 * million events of a log that no longer grew, a write in the background
 * took 3.5-4.3 s with the diff of pat_all_sql and ordinal_spans over
 * every request, 1.9-2.1 s so (BENCHMARKS.md, phase 44). */
static const char pat_moved_sql[] =
	"DELETE FROM span_patterns WHERE request_id IN (SELECT l FROM temp.mv);\n"
	"INSERT OR REPLACE INTO span_patterns SELECT sm.l, mv.l, sp.pattern_id, sp.node, sp.label,\n"
	"    sp.self_ns\n"
	"  FROM temp.mv CROSS JOIN e.span_patterns sp ON sp.request_id = mv.e\n"
	"  JOIN temp.sm ON sm.e = sp.span_id;\n"
	/* (by the index of request_id, where an UPDATE FROM scanned every
	 * request written: 10 ms at 400,000 requests) */
	"UPDATE follow_requests SET pat_fp = (SELECT mv.pfp FROM temp.mv\n"
	"    WHERE mv.l = follow_requests.request_id)\n"
	"  WHERE request_id IN (SELECT l FROM temp.mv);\n";

/* The child's temp.rm for the parent (req_copy_sql), with per request
 * the fingerprint of its span_patterns rows (pfp: pat_moved_sql), each
 * row with its span's place among the request's spans by id (the
 * parent maps the n-th to the n-th: ordinal_spans); 0 for none. */
#define PF_SQL \
	"DROP TABLE IF EXISTS temp.pf;\n" \
	"CREATE TEMP TABLE pf(e INTEGER PRIMARY KEY, pfp INTEGER);\n" \
	"INSERT INTO temp.pf SELECT o.request_id, bp_fp(o.n, sp.pattern_id, sp.node,\n" \
	"    sp.label, sp.self_ns)\n" \
	"  FROM (SELECT s.span_id, s.request_id, row_number() OVER\n" \
	"      (PARTITION BY s.request_id ORDER BY s.span_id) AS n\n" \
	"    FROM e.spans s WHERE s.request_id IN (SELECT e FROM temp.win)) o\n" \
	"  JOIN e.span_patterns sp ON sp.span_id = o.span_id GROUP BY o.request_id;\n"

static const char pfp_sql[] =
	PF_SQL
	"CREATE TABLE e.follow_rm(e INTEGER PRIMARY KEY, key TEXT, fp INTEGER, fin INTEGER,\n"
	"  endn INTEGER, sfp INTEGER, pfp INTEGER, l INTEGER, old INTEGER, osfp INTEGER,\n"
	"  opfp INTEGER);\n"
	"INSERT INTO e.follow_rm(e, key, fp, fin, endn, sfp, pfp)\n"
	"  SELECT rm.e, key, fp, fin, endn, sfp, COALESCE(pf.pfp, 0)\n"
	"  FROM temp.rm LEFT JOIN temp.pf ON pf.e = rm.e;\n"
	/* (the write looks its keys up here: req_copy_sql) */
	"CREATE UNIQUE INDEX e.follow_rm_key ON follow_rm(key);\n";

/* A full pass at once computes pfp itself (pat_all_sql). */
static const char pfp_fg_sql[] =
	PF_SQL
	"UPDATE temp.rm SET pfp = COALESCE((SELECT pfp FROM temp.pf WHERE pf.e = rm.e), 0);\n";

/* On a refresh pass: the patterns of the pass (every request written
 * takes its pattern from it: pat_id_sql, first), and the rows of no
 * request. */
#define PAT_ID_SQL(FROM) \
	"UPDATE requests SET pattern_id = x.pattern_id\n" \
	"  FROM (SELECT rm.l, r.pattern_id FROM " FROM " JOIN e.requests r ON r.request_id = rm.e\n" \
	"        WHERE rm.old = rm.fp OR rm.e IN (SELECT e FROM temp.w)) x\n" \
	"  WHERE requests.request_id = x.l AND requests.pattern_id IS NOT x.pattern_id;\n"
static const char pat_id_sql[] = PAT_ID_SQL("temp.rm");
/* ... of a full pass in the background: of the requests of temp.rx
 * (req_bg_w_sql) alone, gathered first (in the UPDATE FROM, SQLite ran
 * the CROSS JOIN for each request of PATHS.db: minutes once every
 * request had moved) */
static const char pat_id_bg_sql[] =
	"DROP TABLE IF EXISTS temp.px;\n"
	"CREATE TEMP TABLE px(l INTEGER PRIMARY KEY, pattern_id INTEGER);\n"
	"INSERT INTO temp.px SELECT rm.l, r.pattern_id FROM temp.rx CROSS JOIN temp.rm ON rm.e = rx.e\n"
	"  CROSS JOIN e.requests r ON r.request_id = rm.e\n"
	"  WHERE rm.l IS NOT NULL AND (rm.old = rm.fp OR rm.e IN (SELECT e FROM temp.w));\n"
	/* (by rowid, where an UPDATE FROM scanned every request) */
	"UPDATE requests SET pattern_id = (SELECT px.pattern_id FROM temp.px\n"
	"    WHERE px.l = requests.request_id)\n"
	"  WHERE request_id IN (SELECT l FROM temp.px WHERE px.pattern_id IS NOT\n"
	"    (SELECT r.pattern_id FROM requests r WHERE r.request_id = px.l));\n";

static const char refresh_sql[] =
	"DELETE FROM patterns;\n"
	"INSERT INTO patterns SELECT p.pattern_id, p.rank, p.n, p.complete, p.protocol,\n"
	"  p.service, p.root, p.nodes, p.depth, p.signature, p.avg_ns, p.min_ns, p.max_ns,\n"
	"  p.p50_ns, p.p90_ns, p.p99_ns, rm.l\n"
	"  FROM e.patterns p LEFT JOIN temp.rm ON rm.e = p.example_request_id;\n"
	"DELETE FROM pattern_nodes;\n"
	"INSERT INTO pattern_nodes(pattern_id, node, parent_node, depth, kind, protocol,\n"
	"  service, label, n, mean_ns, mean_self_ns)\n"
	"  SELECT pattern_id, node, parent_node, depth, kind, protocol, service, label, n,\n"
	"    mean_ns, mean_self_ns FROM e.pattern_nodes;\n"
	/* rows of no request */
	"DELETE FROM attrs WHERE rowid >= " UNATTR ";\n"
	"DELETE FROM spans WHERE request_id IS NULL;\n"
	"DELETE FROM messages WHERE request_id IS NULL;\n"
	"DELETE FROM fragments WHERE request_id IS NULL;\n"
	"DELETE FROM files WHERE request_id IS NULL;\n"
	"INSERT INTO spans(span_id, request_id, parent_span_id, kind, protocol, name, target,\n"
	"  status, host, pid, tid, exe, peer, start_ns, end_ns, host_id, process_id,\n"
	"  channel_id, certainty, certainty_reason)\n"
	"  SELECT " UNATTR " + s.span_id, NULL, COALESCE(ps.l, " UNATTR " + s.parent_span_id),\n"
	"    s.kind, s.protocol, s.name, s.target, s.status, s.host, s.pid, s.tid, s.exe,\n"
	"    s.peer, s.start_ns, s.end_ns, hm.l, pm.l, cm.l, s.certainty, s.certainty_reason\n"
	"  FROM e.spans s LEFT JOIN temp.sm ps ON ps.e = s.parent_span_id\n"
	"  LEFT JOIN temp.hm ON hm.e = s.host_id LEFT JOIN temp.pm ON pm.e = s.process_id\n"
	"  LEFT JOIN temp.cm ON cm.e = s.channel_id WHERE s.request_id IS NULL;\n"
	"INSERT INTO messages(message_id, request_id, span_id, channel_id, host_id,\n"
	"  process_id, pid, tid, begin_ns, ts_ns, dir, kind, protocol, flags, off, len,\n"
	"  status, witness, peer_message_id)\n"
	"  SELECT " UNATTR " + m.message_id, NULL, COALESCE(sm.l, " UNATTR " + m.span_id), cm.l,\n"
	"    hm.l, pm.l, m.pid, m.tid, m.begin_ns, m.ts_ns, m.dir, m.kind, m.protocol, m.flags,\n"
	"    m.off, m.len, m.status, m.witness, COALESCE(pmm.l, " UNATTR " + m.peer_message_id)\n"
	"  FROM e.messages m LEFT JOIN temp.sm ON sm.e = m.span_id\n"
	"  LEFT JOIN temp.cm ON cm.e = m.channel_id LEFT JOIN temp.hm ON hm.e = m.host_id\n"
	"  LEFT JOIN temp.pm ON pm.e = m.process_id LEFT JOIN temp.mm pmm ON pmm.e = m.peer_message_id\n"
	"  WHERE m.request_id IS NULL;\n"
	"INSERT INTO attrs(rowid, span_id, message_id, key, value)\n"
	"  SELECT " UNATTR " + a.rowid, " UNATTR " + a.span_id, " UNATTR " + a.message_id,\n"
	"    a.key, a.value\n"
	"  FROM e.attrs a WHERE a.span_id IN (SELECT span_id FROM e.spans WHERE request_id IS NULL)\n"
	"  OR (a.span_id IS NULL AND a.message_id IN\n"
	"      (SELECT message_id FROM e.messages WHERE request_id IS NULL));\n"
	"INSERT INTO fragments(fragment_id, request_id, span_id, host_id, process_id, pid,\n"
	"  tid, start_ns, end_ns, trigger, fd, channel_id, events)\n"
	"  SELECT " UNATTR " + g.fragment_id, NULL, COALESCE(sm.l, " UNATTR " + g.span_id),\n"
	"    hm.l, pm.l, g.pid, g.tid, g.start_ns, g.end_ns, g.trigger, g.fd, cm.l, g.events\n"
	"  FROM e.fragments g LEFT JOIN temp.sm ON sm.e = g.span_id\n"
	"  LEFT JOIN temp.hm ON hm.e = g.host_id LEFT JOIN temp.pm ON pm.e = g.process_id\n"
	"  LEFT JOIN temp.cm ON cm.e = g.channel_id WHERE g.request_id IS NULL;\n"
	"INSERT INTO files(file_id, request_id, span_id, host_id, process_id, pid, tid,\n"
	"  ts_ns, path, flags, result)\n"
	"  SELECT " UNATTR " + i.file_id, NULL, COALESCE(sm.l, " UNATTR " + i.span_id),\n"
	"    hm.l, pm.l, i.pid, i.tid, i.ts_ns, i.path, i.flags, i.result\n"
	"  FROM e.files i LEFT JOIN temp.sm ON sm.e = i.span_id\n"
	"  LEFT JOIN temp.hm ON hm.e = i.host_id LEFT JOIN temp.pm ON pm.e = i.process_id\n"
	"  WHERE i.request_id IS NULL;\n";

static int get_state(struct fl *f, const char *key, int64_t *v)
{
	char q[128];
	snprintf(q, sizeof q, "SELECT value FROM follow_state WHERE key = '%s'", key);
	return one_i64(f, q, v);
}

/* Advance counter KEY past the largest id of COL in TABLE. */
static int bump_state(struct fl *f, const char *key, const char *table,
		      const char *col)
{
	return xsql(f, "UPDATE follow_state SET value = max(value,\n"
		    "  (SELECT COALESCE(max(%s), 0) FROM %s WHERE %s < " UNATTR "))\n"
		    "WHERE key = '%s';", col, table, col, key);
}

/* The horizon of a window pass whose newest request began at LAST: the
 * window before it, or the start of the oldest request not yet written
 * (less a margin), whichever is earlier, but no more than
 * FOLLOW_OPEN_WINDOWS windows back. */
static int64_t next_horizon(const struct fl *f, int64_t last)
{
	int64_t h = last - (int64_t)(f->o->window * 1e9);
	int64_t floor = last - (int64_t)(f->o->window * FOLLOW_OPEN_WINDOWS * 1e9);
	if (f->open_from != INT64_MAX && f->open_from - FOLLOW_MARGIN_NS < h)
		h = f->open_from - FOLLOW_MARGIN_NS;
	return h < floor ? floor : h;
}

/* A window pass left out the rows of channels closed before its horizon
 * that no other channel names (chan.c, end_destroy): none of them may be
 * the channel of a span, message or fragment of a request the pass may
 * write (it began after they closed), nor the peer of a channel it
 * writes.  Should one be, the pass writes nothing and the next full pass
 * writes it (as when the window does not close, below).  0, 1 then, or
 * -1.  (CROSS JOIN: from the window outwards, where SQLite scanned every
 * span, message, fragment and channel of the pass: 50 ms of a window pass
 * at 1.3 million events.) */
static const char chan_missing_sql[] =
	"SELECT EXISTS (SELECT 1 FROM temp.win w CROSS JOIN e.spans s ON s.request_id = w.e\n"
	"    WHERE w.core AND s.channel_id IS NOT NULL\n"
	"    AND s.channel_id NOT IN (SELECT channel_id FROM e.channels))\n"
	"  OR EXISTS (SELECT 1 FROM temp.win w CROSS JOIN e.messages m ON m.request_id = w.e\n"
	"    WHERE w.core AND m.channel_id IS NOT NULL\n"
	"    AND m.channel_id NOT IN (SELECT channel_id FROM e.channels))\n"
	"  OR EXISTS (SELECT 1 FROM temp.win w CROSS JOIN e.fragments g ON g.request_id = w.e\n"
	"    WHERE w.core AND g.channel_id IS NOT NULL\n"
	"    AND g.channel_id NOT IN (SELECT channel_id FROM e.channels))\n"
	"  OR EXISTS (SELECT 1 FROM temp.wc CROSS JOIN e.channels c ON c.channel_id = wc.e\n"
	"    WHERE c.peer_channel_id IS NOT NULL\n"
	"    AND c.peer_channel_id NOT IN (SELECT channel_id FROM e.channels))";

static int chan_rows_missing(struct fl *f)
{
	int64_t v;
	if (!f->pass_rows_from)
		return 0;
	if (one_i64(f, chan_missing_sql, &v) < 0)
		return -1;
	if (v)
		f->chan_missing++;
	return v ? 1 : 0;
}

/* Fill temp.win and temp.wc (win_full_sql, win_start_sql; BG: a full
 * pass in the background, neither: its requests are the child's,
 * req_w_bg_sql, and its channels too, bg_channels): *GONE_FROM is where a request
 * written before and not found any more counts as withdrawn (PATHS.db's
 * requests.start_ns).  0, -1 on an error, 1 when the pass should write
 * nothing. */
static int window(struct fl *f, int full, int bg, int64_t *gone_from)
{
	int64_t v[3];
	/* (the pass's stats, written as its requests went in: a scan of
	 * them took 24 ms at 400,000 requests; n is 2, or 0 when there is
	 * no request) */
	if (row_i64(f, "SELECT COALESCE(max(CASE key WHEN 'requests_first_ns' THEN value END), 0),\n"
		    "  COALESCE(max(CASE key WHEN 'requests_last_ns' THEN value END), 0),\n"
		    "  count(*) FROM e.stats WHERE key IN ('requests_first_ns', 'requests_last_ns')",
		    v, 3) < 0)
		return -1;
	int64_t first = v[0], last = v[1], n = v[2];
	/* no request in the pass: none gone */
	*gone_from = n ? first : INT64_MAX;
	int64_t prev_last = f->last_start;
	f->horizon = INT64_MIN;
	f->last_start = n ? last : INT64_MIN;
	if (!full && n) {
		int64_t h = next_horizon(f, last), skip = INT64_MIN;
		/* the requests that began after the newest one the last pass
		 * saw were in no window yet: when the logs moved on by more
		 * than the window since then (a pass that took longer, as a
		 * full one at the start or the write of one from the
		 * background at a long history), they are in this one, not
		 * left to the next full pass (with several clock domains a
		 * margin: the corrections move from pass to pass) */
		if (prev_last != INT64_MIN) {
			int64_t m = prev_last - (f->sum.domains > 1 ? FOLLOW_MARGIN_NS : 1);
			if (m < h)
				h = m;
		}
		/* the pass left out rows of the requests before this */
		if (h < f->pass_rows_from)
			h = f->pass_rows_from;
		/* ... and of none that began later than this, in corrected
		 * time; with several clock domains the reconstruction chose
		 * by provisional times, and a request's root is its earliest
		 * span only once corrected, so a margin more */
		if (f->pass_rows_from &&
		    one_i64(f, "SELECT COALESCE((SELECT value FROM e.stats WHERE key = 'follow_rows_skip_max_ns'), -9223372036854775807 - 1)", &skip) < 0)
			return -1;
		if (skip != INT64_MIN) {
			int64_t m = skip + (f->sum.domains > 1 ? FOLLOW_MARGIN_NS : 1);
			if (h < m)
				h = m;
		}
		if (h > first) {
			f->horizon = h;
			if (h + FOLLOW_MARGIN_NS > *gone_from)
				*gone_from = h + FOLLOW_MARGIN_NS;
		}
	}
	if (f->horizon == INT64_MIN)
		return bg ? 0 : xsql(f, "%s", win_full_sql);
	if (xsql(f, win_start_sql, (long long)f->horizon,
		 (long long)f->horizon) < 0)
		return -1;
	/* until nothing is added (a chain of requests and channels longer
	 * than this: the whole pass instead) */
	for (int i = 0; i < 8; i++) {
		int64_t before, after;
		if (one_i64(f, "SELECT (SELECT count(*) FROM temp.win) + (SELECT count(*) FROM temp.wc)", &before) < 0 ||
		    xsql(f, "%s", win_grow_sql) < 0 ||
		    one_i64(f, "SELECT (SELECT count(*) FROM temp.win) + (SELECT count(*) FROM temp.wc)", &after) < 0)
			return -1;
		if (after == before)
			return chan_rows_missing(f);
	}
	/* the pass left rows out: it cannot look at everything; the next
	 * full pass writes what this one would have */
	if (f->pass_rows_from)
		return 1;
	f->horizon = INT64_MIN;
	*gone_from = first;
	return xsql(f, "DELETE FROM temp.win; DELETE FROM temp.wc;\n%s", win_full_sql);
}

static void drop_corrections(struct fl *f)
{
	for (size_t i = 0; i < f->ndom; i++)
		free(f->dom[i]);
	free(f->dom);
	free(f->corr);
	f->dom = NULL;
	f->corr = NULL;
	f->ndom = 0;
}

/* Keep the pass database's clock corrections by domain (the next window
 * pass judges by them which rows it may leave out); 0 or -1. */
static int keep_corrections(struct fl *f)
{
	sqlite3_stmt *s;
	drop_corrections(f);
	if (sqlite3_prepare_v2(f->h, "SELECT domain, correction_ns FROM e.hosts",
			       -1, &s, NULL) != SQLITE_OK)
		return ffail(f, "%s: %s", f->pass, sqlite3_errmsg(f->h));
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *d = (const char *)sqlite3_column_text(s, 0);
		char **nd = realloc(f->dom, (f->ndom + 1) * sizeof *nd);
		if (nd)
			f->dom = nd;
		int64_t *nc = nd ? realloc(f->corr, (f->ndom + 1) * sizeof *nc) : NULL;
		if (nc)
			f->corr = nc;
		char *dd = nc ? strdup(d ? d : "") : NULL;
		if (!dd) {
			sqlite3_finalize(s);
			drop_corrections(f);
			return ffail(f, "out of memory");
		}
		f->dom[f->ndom] = dd;
		f->corr[f->ndom++] = sqlite3_column_int64(s, 1);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		drop_corrections(f);
		return ffail(f, "%s: %s", f->pass, sqlite3_errmsg(f->h));
	}
	return 0;
}

/*
 * temp.sm for the spans of the requests written before and unchanged
 * (temp.rm: old = fp): the n-th span (by id) of such a request in the
 * pass is the n-th of its request in PATHS.db, up to the fewer of the
 * two.  PATHS.db's spans in request order come from the index
 * spans_request as they are, and each request's spans in the pass from
 * the same index there: no sort.  (The same in SQL, two row_number()
 * windows over every span joined on request and rank, cost a full pass
 * 1.1 s of its 4.9 s write at 1.3 million events.)  ONLY_REF: of those,
 * only the requests of temp.ref (moved_sql).  0 or -1.
 */
static int ordinal_spans(struct fl *f, int only_ref)
{
	sqlite3_stmt *rq = NULL, *ls = NULL, *ps = NULL, *ins = NULL;
	struct rc_map m;
	int64_t t0 = now_ns(CLOCK_MONOTONIC), cur = 0, n = 0;
	int rc, have = 0, r = -1;

	rc_map_init(&m);
	if (sqlite3_prepare_v2(f->h, only_ref ?
			       "SELECT l, e FROM temp.rm WHERE old = fp AND l IS NOT NULL\n"
			       "  AND e IN (SELECT e FROM temp.ref)" :
			       "SELECT l, e FROM temp.rm\n"
			       "WHERE old = fp AND l IS NOT NULL", -1, &rq, NULL) ||
	    sqlite3_prepare_v2(f->h, only_ref ?
			       "SELECT request_id, span_id FROM main.spans WHERE request_id IN\n"
			       "  (SELECT l FROM temp.rm WHERE old = fp AND l IS NOT NULL\n"
			       "   AND e IN (SELECT e FROM temp.ref))\n"
			       "ORDER BY request_id, span_id" :
			       "SELECT request_id, span_id FROM main.spans\n"
			       "WHERE request_id IS NOT NULL ORDER BY request_id, span_id",
			       -1, &ls, NULL) ||
	    sqlite3_prepare_v2(f->h, "SELECT span_id FROM e.spans\n"
			       "WHERE request_id = ? ORDER BY span_id", -1, &ps, NULL) ||
	    sqlite3_prepare_v2(f->h, "INSERT INTO temp.sm VALUES(?, ?)", -1,
			       &ins, NULL))
		goto fail;
	while ((rc = sqlite3_step(rq)) == SQLITE_ROW)
		if (rc_map_put(&m, (uint64_t)sqlite3_column_int64(rq, 0),
			       (uint64_t)sqlite3_column_int64(rq, 1)) < 0) {
			ffail(f, "out of memory");
			goto out;
		}
	if (rc != SQLITE_DONE)
		goto fail;
	while (m.n && (rc = sqlite3_step(ls)) == SQLITE_ROW) {
		int64_t l = sqlite3_column_int64(ls, 0);
		if (l != cur) {
			uint64_t e;
			cur = l;
			sqlite3_reset(ps);
			have = rc_map_get(&m, (uint64_t)l, &e);
			if (have)
				sqlite3_bind_int64(ps, 1, (int64_t)e);
		}
		if (!have)
			continue;
		if ((rc = sqlite3_step(ps)) != SQLITE_ROW) {
			have = 0;     /* the pass has fewer: the rest unmapped */
			if (rc != SQLITE_DONE)
				goto fail;
			continue;
		}
		sqlite3_bind_int64(ins, 1, sqlite3_column_int64(ps, 0));
		sqlite3_bind_int64(ins, 2, sqlite3_column_int64(ls, 1));
		if (sqlite3_step(ins) != SQLITE_DONE)
			goto fail;
		sqlite3_reset(ins);
		n++;
	}
	if (m.n && rc != SQLITE_DONE)
		goto fail;
	const char *tm = getenv("BP_FOLLOW_TIMING");
	if (tm && *tm)
		fprintf(stderr, "%8.1f ms ordinal_spans: %" PRId64 " spans of %zu requests\n",
			(now_ns(CLOCK_MONOTONIC) - t0) / 1e6, n, m.n);
	r = 0;
	goto out;
fail:
	ffail(f, "%s: mapping the span ids of unchanged requests: %s",
	      f->o->rc->output, sqlite3_errmsg(f->h));
out:
	sqlite3_finalize(rq);
	sqlite3_finalize(ls);
	sqlite3_finalize(ps);
	sqlite3_finalize(ins);
	rc_map_free(&m);
	return r;
}

/* A pass maps the span ids of the requests it writes (temp.sm: fresh_sql)
 * and, on a full pass, of those written before and unchanged
 * (ordinal_spans); a window pass may also lack the rows of a request before
 * its horizon (rc_options.rows_from_ns: the exact spans but the root
 * too).  So a request of temp.w one of whose spans has its parent in
 * another request that is neither written now nor (REFRESH) unchanged, or
 * not in the pass, is left for a later pass (at the latest the last one,
 * which writes every request and to which this does not apply): written
 * now, its span would lose its parent for good (its fingerprint names the
 * parent's content, not its id), and an uncertainty inherited from that
 * parent's side (db.c, inherit_sql) might be missed.  Until nothing is
 * taken out (a request taken out may hold a parent of another).  The
 * requests left (temp.xp) are counted (stats.follow_parent_deferred) and
 * do not hold the window back (temp.pend).  0 or -1. */
static int parent_rule(struct fl *f, int final, int refresh)
{
	if (xsql(f, "DROP TABLE IF EXISTS temp.xp;\n"
		 "CREATE TEMP TABLE xp(e INTEGER PRIMARY KEY);") < 0)
		return -1;
	if (final)
		return 0;
	for (;;) {
		int64_t n;
		/* (CROSS JOIN: from temp.w outwards, where SQLite's
		 * planner scanned every span of the pass: 45 ms of a full
		 * pass's write at 1.3 million events) */
		if (xsql(f, "INSERT OR IGNORE INTO temp.xp SELECT s.request_id FROM temp.w\n"
			 "  CROSS JOIN e.spans s ON s.request_id = w.e\n"
			 "  LEFT JOIN e.spans p ON p.span_id = s.parent_span_id\n"
			 "  WHERE s.parent_span_id IS NOT NULL AND (p.span_id IS NULL OR\n"
			 "    (p.request_id IS NOT s.request_id AND NOT EXISTS\n"
			 "      (SELECT 1 FROM temp.w x WHERE x.e = p.request_id)\n"
			 "     AND NOT (%d AND EXISTS (SELECT 1 FROM temp.rm u\n"
			 "      WHERE u.e = p.request_id AND u.old = u.fp))));\n"
			 "DELETE FROM temp.w WHERE e IN (SELECT e FROM temp.xp);", refresh) < 0 ||
		    one_i64(f, "SELECT changes()", &n) < 0)
			return -1;
		if (n == 0)
			return 0;
	}
}

/* A full pass in the background (bg_start) read the logs at bg_read_ns;
 * window passes went on meanwhile.  It writes no request a window pass
 * wrote (written_ns) or withdrew (temp.wd) since: their version is newer
 * than its own.  Counted in bg_left.  0 or -1. */
static int bg_rule(struct fl *f)
{
	int64_t n;
	if (xsql(f, "DELETE FROM temp.w WHERE l IN\n"
		 "  (SELECT request_id FROM follow_requests WHERE written_ns >= %lld)\n"
		 "  OR e IN (SELECT m.e FROM temp.wd CROSS JOIN e.follow_rm m ON m.key = wd.key);",
		 (long long)f->bg_read_ns) < 0 ||
	    one_i64(f, "SELECT changes()", &n) < 0)
		return -1;
	f->bg_left += (uint64_t)n;
	return 0;
}

/* The channels a background full pass writes: of those closed before the
 * horizon the window passes had when it began (%lld, less a margin), which
 * no window pass looks at any more, those whose row moved (temp.cx:
 * bg_channels); the others are the window passes'. */
static const char bg_chan_sql[] =
	"INSERT OR REPLACE INTO channels " CHAN_ROWS "\n"
	"  WHERE c.close_ns < %lld AND c.channel_id IN (SELECT e FROM temp.cx);\n";

/* A full pass in the background, once it knows the requests it writes
 * (temp.w): the channels it writes (temp.cx: those its child judged moved,
 * e.follow_cw, and those of a request written with a new id, with their
 * peers and the other ends of their connections, until nothing is added:
 * bg_cm_grow_sql), and temp.cm, the map of their keys (the child's, as
 * bg_prepare computed them: a window function and a string per channel
 * of the history) and of the channels the rows written name. */
static const char bg_cm_sql[] =
	"DROP TABLE IF EXISTS temp.cx;\n"
	"CREATE TEMP TABLE cx(e INTEGER PRIMARY KEY);\n"
	"INSERT INTO temp.cx SELECT e FROM e.follow_cw;\n"
	"INSERT OR IGNORE INTO temp.cx SELECT c.channel_id FROM temp.w\n"
	"  CROSS JOIN e.channels c ON c.request_id = w.e WHERE w.new;\n";

static const char bg_cm_grow_sql[] =
	"INSERT OR IGNORE INTO temp.cx SELECT c.peer_channel_id FROM temp.cx\n"
	"  CROSS JOIN e.channels c ON c.channel_id = cx.e WHERE c.peer_channel_id IS NOT NULL;\n"
	"INSERT OR IGNORE INTO temp.cx SELECT m.e FROM temp.cx\n"
	"  CROSS JOIN e.follow_cm c ON c.e = cx.e CROSS JOIN e.follow_cm m ON m.conn = c.conn;\n";

static const char bg_cm_map_sql[] =
	"INSERT INTO temp.cm(e, key, conn) SELECT c.e, c.key, c.conn FROM temp.cx\n"
	"  CROSS JOIN e.follow_cm c ON c.e = cx.e;\n"
	"INSERT OR IGNORE INTO temp.cm(e, key, conn) SELECT c.e, c.key, c.conn FROM\n"
	"  (SELECT s.channel_id AS ch FROM temp.w CROSS JOIN e.spans s ON s.request_id = w.e\n"
	"   UNION SELECT m.channel_id FROM temp.w CROSS JOIN e.messages m ON m.request_id = w.e\n"
	"   UNION SELECT g.channel_id FROM temp.w CROSS JOIN e.fragments g ON g.request_id = w.e\n"
	"   UNION SELECT channel_id FROM e.spans WHERE request_id IS NULL\n"
	"   UNION SELECT channel_id FROM e.messages WHERE request_id IS NULL\n"
	"   UNION SELECT channel_id FROM e.fragments WHERE request_id IS NULL) x\n"
	"  CROSS JOIN e.follow_cm c ON c.e = x.ch;\n";

/* bg_cm_sql and the rest: 0 or -1 */
static int bg_channels(struct fl *f)
{
	int64_t n;
	if (xsql(f, "%s", bg_cm_sql) < 0)
		return -1;
	do {
		int64_t before;
		if (one_i64(f, "SELECT count(*) FROM temp.cx", &before) < 0 ||
		    xsql(f, "%s", bg_cm_grow_sql) < 0 ||
		    one_i64(f, "SELECT count(*) FROM temp.cx", &n) < 0)
			return -1;
		n -= before;
	} while (n > 0);
	if (xsql(f, "%s", bg_cm_map_sql) < 0 || map_ids(f, 2, "cm") < 0 ||
	    xsql(f, "%s", req_ccm_sql) < 0)
		return -1;
	return 0;
}

/* In the child of a full pass in the background (bg_prepare): which of
 * the channels it would write (those closed before %lld, as bg_chan_sql)
 * PATHS.db (attached as p, read in one transaction: one snapshot) does
 * not already hold as they are, to e.follow_cw, with their ids looked up
 * there (temp.hm, pm, cm, rm: a key not there gives NULL; ids are never
 * taken back, and new ones come after every id of the snapshot, so a
 * connection's smallest id is the same later).  The others the write
 * leaves as they are: at 1.3 million events it wrote every closed channel
 * again, 0.3 s, and mapped every channel's key, 0.25 s more (BENCHMARKS.md,
 * phase 45).  A row is compared with all its columns (EXCEPT: NULLs are
 * equal); what differs in any way, or has no id there, is written. */
static const char bg_judge_sql[] =
	"UPDATE temp.hm SET l = (SELECT i.id FROM p.follow_ids i WHERE i.kind = 0 AND i.key = hm.key);\n"
	"UPDATE temp.pm SET l = (SELECT i.id FROM p.follow_ids i WHERE i.kind = 1 AND i.key = pm.key);\n"
	"UPDATE temp.cm SET l = (SELECT i.id FROM p.follow_ids i WHERE i.kind = 2 AND i.key = cm.key);\n"
	"UPDATE temp.rm SET l = (SELECT f.request_id FROM p.follow_requests f WHERE f.key = rm.key);\n"
	/* the requests' ids and fingerprints there, for the write
	 * (req_bg_w_sql), and those of no key of the pass (gone_bg_sql;
	 * %lld: the start from which they count, %lld: the time the child
	 * began reading the logs) */
	"UPDATE e.follow_rm SET (l, old, osfp, opfp) = (SELECT f.request_id, f.fingerprint,\n"
	"    f.span_fp, f.pat_fp FROM p.follow_requests f WHERE f.key = follow_rm.key);\n"
	"CREATE TABLE e.follow_rx(e INTEGER PRIMARY KEY);\n"
	"INSERT INTO e.follow_rx SELECT e FROM e.follow_rm\n"
	"  WHERE l IS NULL OR old IS NOT fp OR opfp IS NOT pfp;\n"
	"INSERT OR IGNORE INTO e.follow_rx SELECT m.e FROM e.follow_rm m\n"
	"  JOIN e.requests r ON r.request_id = m.e JOIN p.requests q ON q.request_id = m.l\n"
	"  WHERE q.pattern_id IS NOT r.pattern_id;\n"
	"CREATE TABLE e.follow_gone(l INTEGER PRIMARY KEY);\n"
	"INSERT INTO e.follow_gone SELECT f.request_id FROM p.requests r\n"
	"  JOIN p.follow_requests f ON f.request_id = r.request_id\n"
	GONE_WHERE("temp.rm")
	"DELETE FROM temp.ccm;\n"
	"INSERT INTO temp.ccm SELECT conn, min(l) FROM temp.cm WHERE conn IS NOT NULL GROUP BY conn;\n"
	"CREATE TEMP TABLE cr AS SELECT * FROM p.channels WHERE 0;\n"
	"INSERT INTO temp.cr " CHAN_ROWS "\n"
	"  WHERE c.close_ns < %lld AND cm.l IS NOT NULL;\n"
	"CREATE TEMP TABLE dif(l INTEGER PRIMARY KEY);\n"
	"INSERT INTO temp.dif SELECT channel_id FROM (SELECT * FROM temp.cr\n"
	"  EXCEPT SELECT x.* FROM temp.cr JOIN p.channels x ON x.channel_id = cr.channel_id);\n"
	"CREATE TABLE e.follow_cw(e INTEGER PRIMARY KEY);\n"
	"INSERT INTO e.follow_cw SELECT c.channel_id FROM e.channels c JOIN temp.cm ON cm.e = c.channel_id\n"
	"  WHERE c.close_ns < %lld AND (cm.l IS NULL OR cm.l IN (SELECT l FROM temp.dif));\n"
	"CREATE TABLE e.follow_looked(ok INTEGER);\n";

/* The end of a background full pass's write: the counts, the patterns'
 * stats, and the window passes' state (HORIZON, LAST_START) as it was.
 * 0 or -1. */
static int bg_done(struct fl *f, int64_t horizon, int64_t last_start)
{
	int64_t total, revised, withdrawn;
	f->horizon = horizon;
	f->last_start = last_start;
	if (one_i64(f, "SELECT count(*) FROM follow_requests", &total) < 0 ||
	    one_i64(f, REVISED_SQL, &revised) < 0 ||
	    get_state(f, "withdrawn", &withdrawn) < 0)
		goto rollback;
	f->passes++;
	f->bg_passes++;
	if (xsql(f, "INSERT OR REPLACE INTO stats SELECT key, value FROM e.stats\n"
		 "  WHERE key = 'patterns';\n"
		 "INSERT OR REPLACE INTO stats VALUES('follow_passes', %lld),\n"
		 "  ('follow_requests', %lld), ('follow_revised', %lld),\n"
		 "  ('follow_withdrawn', %lld), ('follow_full_background', %lld),\n"
		 "  ('follow_full_left', %lld);\n"
		 /* (the view of the child's requests: req_copy_sql) */
		 "DROP VIEW temp.rm;\n"
		 "COMMIT",
		 (long long)f->passes, (long long)total, (long long)revised,
		 (long long)withdrawn, (long long)f->bg_passes,
		 (long long)f->bg_left) < 0)
		goto rollback;
	f->written = (uint64_t)total;
	f->revised = (uint64_t)revised;
	f->withdrawn = (uint64_t)withdrawn;
	f->full_read_ns = f->bg_read_ns;
	xsql(f, "DETACH e");
	return 0;
rollback:
	sqlite3_exec(f->h, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_exec(f->h, "DETACH e", NULL, NULL, NULL);
	return -1;
}

/* Write what the pass database holds that is final into PATHS.db; FINAL:
 * everything (the last pass); REFRESH: the pass database has the
 * patterns, and the patterns and rows of no request are written again.
 * Other passes look at a window of the pass (window(), above). */
static int write_pass(struct fl *f, const char *pass, int final, int refresh,
		      int bg)
{
	int64_t now = now_ns(CLOCK_REALTIME);
	/* the logs were read when the last reconstruction began: what was
	 * not in them by then cannot be waited for from a later time */
	int64_t read_ns = bg ? f->bg_read_ns : f->read_ns;
	int64_t cut = read_ns - (int64_t)(f->o->grace * 1e9);
	int64_t base, sbase, mbase, gbase, ibase, v, gone_from, looked = 0;
	int full = final || refresh;
	char *gone = NULL;
	/* a background full pass leaves the window state as it was */
	int64_t horizon = f->horizon, last_start = f->last_start;

	if (xsql(f, "ATTACH %Q AS e", pass) < 0)
		return -1;
	/* a full pass in the background updates its child's requests where
	 * they stand (req_copy_sql), in a file removed after: no journal */
	if ((bg && xsql(f, "PRAGMA e.journal_mode = OFF; PRAGMA e.synchronous = OFF") < 0) ||
	    make_schema(f) < 0 ||
	    xsql(f, "CREATE INDEX IF NOT EXISTS follow_start ON requests(start_ns);\n"
		 /* what window passes wrote since a full pass in the
		  * background began (req_bg_w_sql, bg_rule) */
		 "CREATE INDEX IF NOT EXISTS follow_written ON follow_requests(written_ns);\n"
		 /* each pass's largest ids (map_ids) and count of requests
		  * revised (REVISED_SQL) without a scan of the history
		  * (5-6 ms each a pass at 100,000 requests) */
		 "CREATE INDEX IF NOT EXISTS follow_ids_max ON follow_ids(kind, id);\n"
		 "CREATE INDEX IF NOT EXISTS follow_revised ON follow_requests(revised)\n"
		 "  WHERE revised > 0;\n"
		 /* the OTLP push names each connection's database on every
		  * pass (export_otlp.c, load_dbs): without it, a scan of
		  * every attribute (0.15 s a pass at 1.4 million events) */
		 "CREATE INDEX IF NOT EXISTS follow_attrs_database ON attrs(message_id)\n"
		 "  WHERE key = 'database'") < 0 ||
	    xsql(f, "BEGIN IMMEDIATE") < 0)
		goto detach;
	int w = xsql(f, "%s", maps_sql) < 0 ? -1 : window(f, full, bg, &gone_from);
	if (w == 1) {
		/* nothing written: the next pass's window starts where
		 * this one's would have */
		f->horizon = horizon;
		f->last_start = last_start;
		sqlite3_exec(f->h, "ROLLBACK", NULL, NULL, NULL);
		sqlite3_exec(f->h, "DETACH e", NULL, NULL, NULL);
		return 0;
	}
	if (w < 0 || map_ids(f, 0, "hm") < 0 ||
	    xsql(f, "%s", proc_sql) < 0 || map_ids(f, 1, "pm") < 0 ||
	    (!bg && (xsql(f, "%s", chan_sql) < 0 || map_ids(f, 2, "cm") < 0 ||
		     xsql(f, "%s", req_ccm_sql) < 0)) ||
	    (bg ? xsql(f, "%s", req_copy_sql) :
	     xsql(f, req_fp_sql, (long long)final, (long long)cut, (long long)cut)) < 0 ||
	    (refresh && !bg && !final && xsql(f, "%s", pfp_fg_sql) < 0) ||
	    (bg && one_i64(f, "SELECT count(*) FROM e.sqlite_master WHERE name = 'follow_looked'",
			   &looked) < 0) ||
	    (looked ? xsql(f, req_bg_w_sql, (long long)f->bg_read_ns) :
	     xsql(f, "%s", bg ? req_look_bg_sql : req_look_sql)) < 0 ||
	    (bg && !looked && xsql(f, "%s", req_bg_all_sql) < 0) ||
	    xsql(f, "%s", bg ? req_w_bg_sql : req_w_sql) < 0 ||
	    (bg && bg_rule(f) < 0) || parent_rule(f, final, refresh) < 0 ||
	    get_state(f, "request", &base) < 0 ||
	    (!(gone = sqlite3_mprintf(looked ? gone_bg_sql : bg ? gone_all_bg_sql : gone_sql,
				      (long long)gone_from,
				      (long long)(bg ? f->bg_read_ns : INT64_MAX))) &&
	     ffail(f, "out of memory") < 0) ||
	    xsql(f, renew_sql, (long long)base, bg ? RM_BG : "temp.rm AS rm", gone) < 0 ||
	    (refresh && bg && xsql(f, "%s", moved_sql) < 0) ||
	    (refresh && (ordinal_spans(f, bg) < 0 ||
			 xsql(f, "%s", ordinal_sql) < 0)) ||
	    (bg && bg_channels(f) < 0) ||
	    get_state(f, "span", &sbase) < 0 || get_state(f, "message", &mbase) < 0 ||
	    get_state(f, "fragment", &gbase) < 0 || get_state(f, "file", &ibase) < 0 ||
	    xsql(f, fresh_sql, (long long)sbase, (long long)mbase) < 0 ||
	    xsql(f, rows_sql, (long long)gbase, (long long)ibase, (long long)now,
		 (long long)now, (long long)now) < 0 ||
	    (bg ? xsql(f, bg_chan_sql, (long long)(f->bg_horizon == INT64_MIN ?
						    INT64_MIN : f->bg_horizon - FOLLOW_MARGIN_NS)) :
	     xsql(f, global_sql, f->horizon == INT64_MIN ? "" :
		  " WHERE channel_id IN (SELECT l FROM temp.cm)")) < 0 ||
	    (refresh && (xsql(f, "%s", bg ? pat_moved_sql : pat_all_sql) < 0 ||
			 (!bg && xsql(f, "%s", final ?
				      "UPDATE follow_requests SET pat_fp = NULL WHERE pat_fp IS NOT NULL" :
				      pat_fp_sql) < 0) ||
			 xsql(f, "%s", bg ? pat_id_bg_sql : pat_id_sql) < 0 ||
			 xsql(f, "%s", refresh_sql) < 0)) ||
	    bump_state(f, "request", "requests", "request_id") < 0 ||
	    bump_state(f, "span", "spans", "span_id") < 0 ||
	    bump_state(f, "message", "messages", "message_id") < 0 ||
	    bump_state(f, "fragment", "fragments", "fragment_id") < 0 ||
	    bump_state(f, "file", "files", "file_id") < 0)
		goto rollback;
	sqlite3_free(gone);
	gone = NULL;
	if (bg)
		return bg_done(f, horizon, last_start);

	/* what this pass did, for the progress line and the stats table */
	int64_t nnew, lag, waiting, pending, missing = (int64_t)f->missing, total,
		revised, withdrawn, deferred, nwin, xparent;
	/* a request that stayed unwritten until it fell out of the window
	 * is left for the next full pass (counted) */
	if (f->horizon != INT64_MIN &&
	    xsql(f, "INSERT OR IGNORE INTO temp.deferred SELECT key FROM temp.pend\n"
		 "  WHERE start < %lld AND key NOT IN (SELECT key FROM temp.rm);",
		 (long long)f->horizon) < 0)
		goto rollback;
	if (xsql(f, "DELETE FROM temp.pend;\n"
		 "INSERT INTO temp.pend SELECT rm.key, r.start_ns FROM temp.rm\n"
		 "  JOIN e.requests r ON r.request_id = rm.e JOIN temp.win ON win.e = rm.e\n"
		 "  WHERE rm.l IS NULL AND win.core AND rm.e NOT IN (SELECT e FROM temp.xp);") < 0 ||
	    one_i64(f, "SELECT count(*) FROM temp.xp", &xparent) < 0 ||
	    one_i64(f, "SELECT count(*) FROM temp.deferred d WHERE NOT EXISTS\n"
		    "  (SELECT 1 FROM follow_requests f WHERE f.key = d.key)", &deferred) < 0 ||
	    one_i64(f, "SELECT COALESCE(min(start), 9223372036854775807) FROM temp.pend",
		    &f->open_from) < 0 ||
	    one_i64(f, "SELECT count(*) FROM temp.win", &nwin) < 0)
		goto rollback;
	if (one_i64(f, "SELECT count(*) FROM temp.w WHERE new", &nnew) < 0 ||
	    one_i64(f, "SELECT max(f.emitted_ns - rm.endn) FROM temp.w JOIN temp.rm ON rm.e = w.e"
		    " JOIN follow_requests f ON f.request_id = w.l WHERE w.new", &lag) < 0 ||
	    one_i64(f, "SELECT count(*) FROM temp.pend", &waiting) < 0 ||
	    one_i64(f, "SELECT count(*) FROM temp.pend p CROSS JOIN temp.rm ON rm.key = p.key"
		    " CROSS JOIN e.requests r ON r.request_id = rm.e WHERE r.complete = 1", &pending) < 0 ||
	    (f->horizon == INT64_MIN &&
	     one_i64(f, "SELECT count(*) FROM follow_requests f WHERE NOT EXISTS"
		     " (SELECT 1 FROM temp.rm WHERE rm.key = f.key)", &missing) < 0) ||
	    one_i64(f, "SELECT count(*) FROM follow_requests", &total) < 0 ||
	    one_i64(f, REVISED_SQL, &revised) < 0 ||
	    get_state(f, "withdrawn", &withdrawn) < 0 ||
	    one_i64(f, "SELECT max(end_ns) FROM e.fragments WHERE request_id IN"
		    " (SELECT e FROM temp.win)", &v) < 0 ||
	    keep_corrections(f) < 0)
		goto rollback;
	f->passes++;
	if (refresh)
		f->refreshed_ns = now_ns(CLOCK_MONOTONIC);
	/* (a pass without patterns keeps the count of the last refresh) */
	if (xsql(f, "DELETE FROM stats%s;\n"
		 "INSERT OR REPLACE INTO stats SELECT key, value FROM e.stats;\n"
		 "INSERT OR REPLACE INTO stats VALUES('follow_passes', %lld),\n"
		 "  ('follow_requests', %lld), ('follow_revised', %lld),\n"
		 "  ('follow_waiting', %lld), ('follow_missing', %lld),\n"
		 "  ('follow_withdrawn', %lld), ('follow_pid', %lld),\n"
		 "  ('follow_deferred', %lld), ('follow_window_requests', %lld),\n"
		 "  ('follow_parent_deferred', %lld), ('follow_full_background', %lld),\n"
		 "  ('follow_full_left', %lld), ('follow_channel_rows_missing', %lld),\n"
		 "  ('follow_kept_passes', %lld), ('follow_kept_rebuilt', %lld),\n"
		 "  ('follow_kept_renewed', %lld), ('follow_kept_checked', %lld);\n"
		 "COMMIT",
		 refresh ? "" : " WHERE key <> 'patterns'",
		 (long long)f->passes, (long long)total, (long long)revised,
		 (long long)waiting, (long long)missing, (long long)withdrawn,
		 (long long)getpid(), (long long)deferred, (long long)nwin,
		 (long long)xparent, (long long)f->bg_passes,
		 (long long)f->bg_left, (long long)f->chan_missing,
		 (long long)f->keep_passes, (long long)f->keep_rebuilds,
		 (long long)f->keep_renewed, (long long)f->keep_checked) < 0)
		goto rollback;
	/* the next window pass may leave out rows of the requests before
	 * its horizon: those that began before this one's, less a margin
	 * (it judges their starts by this pass's clock corrections, which
	 * its own may move: window() checks where they fell) */
	f->next_from = f->last_start == INT64_MIN ? INT64_MIN :
		next_horizon(f, f->last_start) - FOLLOW_MARGIN_NS;
	f->written = (uint64_t)total;
	f->revised = (uint64_t)revised;
	f->waiting = (uint64_t)waiting;
	f->pending = (uint64_t)pending;
	f->withdrawn = (uint64_t)withdrawn;
	if ((uint64_t)deferred > f->deferred)
		fprintf(stderr, "%sbp-reconstruct: warning: %" PRId64 " requests still open %.0f s after they began are left for the next full pass (--follow-window)\n",
			f->tty ? "\r\033[K" : "", deferred,
			f->o->window * FOLLOW_OPEN_WINDOWS);
	f->deferred = (uint64_t)deferred;
	if ((uint64_t)missing > f->missing)
		fprintf(stderr, "%sbp-reconstruct: warning: %" PRId64 " requests written before began before the logs' first request now (their logs were removed?); they stay in %s\n",
			f->tty ? "\r\033[K" : "", missing, f->o->rc->output);
	f->missing = (uint64_t)missing;
	f->lag_max_ns = nnew ? lag : -1;
	f->newest_ns = v;
	if (full)
		f->full_read_ns = read_ns;
	xsql(f, "DETACH e");
	return 0;
rollback:
	sqlite3_free(gone);
	sqlite3_exec(f->h, "ROLLBACK", NULL, NULL, NULL);
detach:
	sqlite3_exec(f->h, "DETACH e", NULL, NULL, NULL);
	return -1;
}

/* --- the sinks: OTLP push and ClickHouse --- */

/* A request of follow_requests held back from the sinks (%lld: the end
 * before which an unlogged-send request may go): sink_pass. */
#define HELD_SQL \
	"EXISTS (SELECT 1 FROM requests r\n" \
	"  WHERE r.request_id = follow_requests.request_id AND r.certainty = 'uncertain'\n" \
	"  AND (r.certainty_reason LIKE '%%peer-not-logged%%'\n" \
	"    OR (r.certainty_reason LIKE '%%unlogged-send%%'\n" \
	"      AND COALESCE(r.end_ns, r.start_ns) > %lld)))"

/* A request of follow_requests that the OTLP push holds back until a
 * full pass read the logs after it was written (%lld: that pass's
 * read_ns): one with a PostgreSQL span on a connection whose database
 * PATHS.db does not name yet.  The start-up message that names it is
 * often of no request (a connection a pool opened before), and only
 * the full passes write those rows; pushed sooner, the spans went
 * without db.namespace, which the offline export and PATHS.db give
 * them (and a push sent again after a SIGKILL then differed from the
 * first). */
#define NODB_SQL \
	"(written_ns > %lld AND EXISTS (SELECT 1 FROM spans s\n" \
	"  WHERE s.request_id = follow_requests.request_id\n" \
	"  AND s.protocol = 'postgresql' AND s.channel_id IS NOT NULL\n" \
	"  AND s.channel_id NOT IN (SELECT m.channel_id FROM attrs a\n" \
	"    JOIN messages m ON m.message_id = a.message_id\n" \
	"    WHERE a.key = 'database' AND m.channel_id IS NOT NULL)))"

/* Each sink's column in follow_requests (0 not sent, 1 sent, 2 sent then
 * revised, 3 sent in part), its pass column and state key. */
static const struct {
	const char *name, *col, *pass, *withdrawn;
} sinks[2] = {
	{ "OTLP push", "pushed", "push_pass", "push_withdrawn" },
	{ "ClickHouse", "ch_pushed", "ch_pass", "ch_withdrawn" },
};

/* Send the requests of sink K, pass PASS (SQL naming them: IDS) and,
 * for ClickHouse with FINAL, the tables of the whole run.  Returns 0, or
 * -1 with X->err; *PART: something arrived; *DELETED: ClickHouse took
 * the deletions of X->ch_del. */
static int sink_send(struct fl *f, int k, struct export_db *x, const char *ids,
		     int final, int *part, int *deleted)
{
	*part = 0;
	*deleted = 0;
	x->req_ids = ids;
	if (k == 0) {
		struct otlp_push_stats st;
		uint64_t total = 0;
		memset(&st, 0, sizeof st);
		int r = export_otlp_push(x, f->o->push, &st, &total);
		f->sent[0] += st.spans;
		f->batches[0] += st.batches;
		f->retries[0] += st.retries;
		*part = st.spans > 0;
		return r;
	}
	struct ch_opts o = *f->o->ch;
	struct ch_stats st;
	memset(&st, 0, sizeof st);
	o.run = f->ch_run;
	x->run_tables = final;
	int r = export_clickhouse(x, &o, &st);
	f->sent[1] += st.rows;
	f->batches[1] += st.inserts;
	f->retries[1] += st.retries;
	f->ch_deleted += st.deleted;
	f->ch_mutations += st.mutations;
	*deleted = st.deleted_ok;
	/* rows sent again replace themselves (ReplacingMergeTree by
	 * (run, row_id)): a failed INSERT is sent again whole */
	return r;
}

/*
 * Send to sink K the requests not sent yet that this pass found as an
 * earlier one wrote them (FINAL: all of them), then mark them.  A sink
 * that took nothing leaves them for the next pass; an OTLP receiver
 * that took a part has them marked 3 (the rest was refused or timed
 * out: not sent again, so nothing arrives twice).  0, or -1 with f->err
 * on a database error.
 */
static int sink_pass(struct fl *f, int k, int final)
{
	int64_t pass, n;
	char q[320], ids[200];
	if (k == 1 && !f->ch_run[0]) {
		/* --clickhouse-run, else one name for this PATHS.db */
		int64_t seed;
		if (f->o->ch->run)
			snprintf(f->ch_run, sizeof f->ch_run, "%s", f->o->ch->run);
		else if (get_state(f, "otlp_seed", &seed) < 0)
			return -1;
		else
			snprintf(f->ch_run, sizeof f->ch_run, "follow-%016" PRIx64, (uint64_t)seed);
	}
	/* a request uncertain because records of it may be on their way
	 * waits for them unless this is the last pass: no sink gets a
	 * version they would change (an OTLP receiver keeps what it got).
	 * peer-not-logged goes once the peer is overdue (a pass then,
	 * pending_until); unlogged-send (a wait given up) after
	 * --follow-hold seconds from the request's end */
	int64_t held = f->read_ns - (int64_t)(f->o->hold * 1e9);
	/* (ClickHouse gets the rows of no request from the last pass) */
	int64_t nodb = k == 0 ? f->full_read_ns : INT64_MAX;
	if (get_state(f, sinks[k].pass, &pass) < 0 ||
	    xsql(f, "UPDATE follow_requests SET %s = %lld\n"
		 "  WHERE %s = 0 AND (%d OR (written_ns < %lld AND NOT " HELD_SQL
		 "    AND NOT " NODB_SQL "));\n"
		 "UPDATE follow_state SET value = %lld WHERE key = '%s';",
		 sinks[k].pass, (long long)pass + 1, sinks[k].col, final,
		 (long long)f->read_ns, (long long)held, (long long)nodb,
		 (long long)pass + 1, sinks[k].pass) < 0)
		return -1;
	pass++;
	snprintf(ids, sizeof ids, "SELECT request_id FROM follow_requests WHERE %s = 0 AND %s = %lld",
		 sinks[k].col, sinks[k].pass, (long long)pass);
	snprintf(q, sizeof q, "SELECT count(*) FROM (%s)", ids);
	if (one_i64(f, q, &n) < 0)
		return -1;
	/* ClickHouse: the rows of requests revised or withdrawn since
	 * they were sent go first */
	int64_t ndel = 0;
	if (k == 1 && one_i64(f, "SELECT count(*) FROM follow_ch_del", &ndel) < 0)
		return -1;
	/* the last pass sends ClickHouse the tables of the whole run too */
	if (n || ndel || (final && k == 1)) {
		struct export_db x;
		int part = 0, r = export_open(&x, f->o->rc->output);
		int deleted = 0;
		if (r == 0) {
			x.ch_del = ndel ? "SELECT tbl, row_id FROM follow_ch_del ORDER BY tbl, row_id" : NULL;
			r = sink_send(f, k, &x, ids, final, &part, &deleted);
		}
		/* asked for (ClickHouse applies them in the background): not
		 * again, even if what followed failed */
		if (deleted && ndel && xsql(f, "DELETE FROM follow_ch_del") < 0) {
			if (x.h)
				export_close(&x);
			return -1;
		}
		int mark = r == 0 ? 1 : part && k == 0 ? 3 : 0;
		if (r < 0) {
			f->failed[k]++;
			f->sink_errors += final;
			if (!f->o->rc->quiet && (mark || final || f->failed[k] == 1 ||
						 f->failed[k] % 10 == 0))
				fprintf(stderr, "%sbp-reconstruct: warning: %s%s\n",
					f->tty ? "\r\033[K" : "", x.err,
					mark ? " (those requests are not sent again)" :
					final ? "" : "; the requests wait for the next pass");
		} else {
			f->failed[k] = 0;
		}
		if (x.h)
			export_close(&x);
		if (mark && xsql(f, "UPDATE follow_requests SET %s = %d\n"
				 "  WHERE %s = 0 AND %s = %lld", sinks[k].col, mark,
				 sinks[k].col, sinks[k].pass, (long long)pass) < 0)
			return -1;
	}
	snprintf(q, sizeof q, "SELECT count(*) FROM follow_requests WHERE %s = 0", sinks[k].col);
	if (one_i64(f, q, &n) < 0)
		return -1;
	f->unpushed += (uint64_t)n;
	/* of those, the ones held back (the progress line) */
	char hq[1024];
	snprintf(hq, sizeof hq, "SELECT count(*) FROM follow_requests WHERE %s = 0"
		 " AND (" HELD_SQL " OR " NODB_SQL ")", sinks[k].col, (long long)held,
		 (long long)nodb);
	if (!final && one_i64(f, hq, &n) < 0)
		return -1;
	if (!final && (uint64_t)n > f->held)
		f->held = (uint64_t)n;
	if (k == 0 && !final) {
		snprintf(hq, sizeof hq, "SELECT count(*) FROM follow_requests WHERE %s = 0"
			 " AND " NODB_SQL, sinks[k].col, (long long)nodb);
		if (one_i64(f, hq, &n) < 0)
			return -1;
		f->nodb = (uint64_t)n;
	}
	return 0;
}

static int sinks_pass(struct fl *f, int final)
{
	f->unpushed = 0;
	f->held = 0;
	f->nodb = 0;
	if (f->o->push && sink_pass(f, 0, final) < 0)
		return -1;
	if (f->o->ch && sink_pass(f, 1, final) < 0)
		return -1;
	return 0;
}

/* The summary line of sink K; 1 when a request was left out of it. */
static int sink_summary(struct fl *f, int k, const char *url)
{
	int64_t v[5];
	char q[160];
	for (int i = 0; i < 4; i++) {
		snprintf(q, sizeof q, "SELECT count(*) FROM follow_requests WHERE %s = %d",
			 sinks[k].col, i);
		if (one_i64(f, q, &v[i]) < 0)
			return -1;
	}
	if (get_state(f, sinks[k].withdrawn, &v[4]) < 0)
		return -1;
	if (!f->o->rc->quiet) {
		char what[200];
		if (k == 0)
			snprintf(what, sizeof what, "%" PRIu64 " spans sent in %" PRIu64 " batches, %" PRIu64 " retries -> %s",
				 f->sent[0], f->batches[0], f->retries[0], url);
		else
			snprintf(what, sizeof what, "%" PRIu64 " rows in %" PRIu64 " INSERTs, %" PRIu64 " retries -> %s run %s",
				 f->sent[1], f->batches[1], f->retries[1], url, f->ch_run);
		if (k == 1) {
			/* revised: sent again after their rows there were
			 * deleted; withdrawn: deleted (2: by an earlier
			 * version, which kept the first version) */
			int64_t resent;
			if (get_state(f, "ch_resent", &resent) < 0)
				return -1;
			fprintf(stderr, "bp-reconstruct: %s: %s; requests: %" PRId64 " sent, %" PRId64 " sent again when revised, %" PRId64 " withdrawn after they were sent (%" PRIu64 " rows deleted there in %" PRIu64 " mutations), %" PRId64 " not sent%s\n",
				sinks[k].name, what, v[1] + v[2], resent, v[4],
				f->ch_deleted, f->ch_mutations, v[0],
				v[2] ? "; some were revised after an earlier version sent them: ClickHouse has their first version" : "");
		} else {
			fprintf(stderr, "bp-reconstruct: %s: %s; requests: %" PRId64 " sent, %" PRId64 " sent then revised, %" PRId64 " in part, %" PRId64 " not sent, %" PRId64 " sent then withdrawn\n",
				sinks[k].name, what, v[1] + v[2], v[2], v[3], v[0], v[4]);
		}
	}
	return v[0] || v[3];
}

/* --- watching the logs --- */

/* Call ON for each entry of DIR but dot files (its path and stat), and
 * go into its directories, DEPTH levels down. */
static void walk(struct fl *f, const char *dir, int depth,
		 void (*on)(struct fl *, const char *, const struct stat *, void *),
		 void *ctx)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	if (!d)
		return;
	while ((de = readdir(d))) {
		char p[PATH_MAX];
		struct stat st;
		if (de->d_name[0] == '.' ||
		    (size_t)snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= sizeof p ||
		    stat(p, &st) < 0)
			continue;
		on(f, p, &st, ctx);
		if (S_ISDIR(st.st_mode) && depth > 0)
			walk(f, p, depth - 1, on, ctx);
	}
	closedir(d);
}

static int watch(struct fl *f, const char *dir)
{
	return inotify_add_watch(f->ino, dir, IN_MODIFY | IN_CREATE | IN_MOVED_TO |
				 IN_CLOSE_WRITE | IN_DELETE);
}

static void watch_sub(struct fl *f, const char *p, const struct stat *st,
		      void *ctx)
{
	(void)ctx;
	if (S_ISDIR(st->st_mode))
		watch(f, p);
}

/* Watch every input directory and the host directories in it (added
 * again before each pass: a host may appear later). */
static void watch_all(struct fl *f)
{
	if (f->ino < 0)
		return;
	for (int i = 0; i < f->o->rc->ninputs; i++) {
		struct stat st;
		const char *in = f->o->rc->inputs[i];
		if (stat(in, &st) < 0)
			continue;
		if (!S_ISDIR(st.st_mode))
			watch(f, ".");
		else if (watch(f, in) >= 0)
			walk(f, in, 1, watch_sub, NULL);
	}
}

/* Wait up to MS for the logs to change; 1 changed, 0 not, -1 a signal
 * to stop. */
static int wait_change(struct fl *f, int ms)
{
	if (stop_sig)
		return -1;
	if (f->ino < 0) {
		struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
		nanosleep(&ts, NULL);
		return stop_sig ? -1 : 1;
	}
	struct pollfd p = { .fd = f->ino, .events = POLLIN };
	int n = poll(&p, 1, ms);
	if (stop_sig)
		return -1;
	if (n <= 0)
		return 0;
	char buf[8192];
	while (read(f->ino, buf, sizeof buf) > 0)
		;
	return 1;
}

static void progress(struct fl *f, double pass_s)
{
	if (!f->tty)
		return;
	double age = f->newest_ns > 0 ? (now_ns(CLOCK_REALTIME) - f->newest_ns) / 1e9 : 0;
	char lag[48] = "";
	if (f->lag_max_ns >= 0)
		snprintf(lag, sizeof lag, ", written %.1f s after their end", f->lag_max_ns / 1e9);
	char held[48] = "";
	if (f->held)
		snprintf(held, sizeof held, ", %" PRIu64 " held from the sinks", f->held);
	fprintf(stderr, "\r\033[Kbp-reconstruct: follow: %" PRIu64 " events, %" PRIu64
		" requests written (%" PRIu64 " revised, %" PRIu64 " withdrawn), %" PRIu64 " waiting%s%s; newest event %.1f s ago, pass %.2f s",
		f->events, f->written, f->revised, f->withdrawn, f->waiting, held,
		lag, age, pass_s);
	fflush(stderr);
}

/* A segment file (*.btl) and its size into F's sizes; the first that
 * shrank since goes into CTX (a PATH_MAX + 64 buffer, if empty) and
 * keeps its largest size. */
static void seg_size(struct fl *f, const char *p, const struct stat *st,
		     void *ctx)
{
	char *shrunk = ctx;
	size_t n = strlen(p);
	uint64_t old, k;

	if (!S_ISREG(st->st_mode) || n < 5 || strcmp(p + n - 4, ".btl"))
		return;
	k = rc_hash64(0, p, n);
	if (rc_map_get(&f->seg_size, k, &old) && (uint64_t)st->st_size < old) {
		if (!shrunk[0])
			snprintf(shrunk, PATH_MAX + 64, "%s (%" PRIu64 " bytes, %" PRIu64 " before)",
				 p, (uint64_t)st->st_size, old);
		return;
	}
	rc_map_put(&f->seg_size, k, (uint64_t)st->st_size);
}

/*
 * Did a segment file of the inputs shrink since the last look?  bp-logd
 * only appends (but for a torn block it takes back after a failed write:
 * a full disk); a file written anew in place (cp over it, rsync
 * --inplace) is read half-written, and a pass would withdraw the
 * requests of what it lacks.  The passes then wait (a warning now and
 * then), --follow-hold seconds at most: then the files are taken as they
 * are (a torn block's bytes were never read; the sizes are learnt
 * again).  1 while they wait.
 */
static int seg_shrunk(struct fl *f)
{
	char shrunk[PATH_MAX + 64] = "";
	int64_t now = now_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < f->o->rc->ninputs; i++)
		walk(f, f->o->rc->inputs[i], 2, seg_size, shrunk);
	if (!shrunk[0]) {
		f->shrunk_since = 0;
		return 0;
	}
	if (!f->shrunk_since)
		f->shrunk_since = now;
	if (now - f->shrunk_since >= (int64_t)(f->o->hold * 1e9)) {
		rc_map_free(&f->seg_size);
		rc_map_init(&f->seg_size);
		f->shrunk_since = 0;
		if (!f->o->rc->quiet)
			fprintf(stderr, "%sbp-reconstruct: warning: the segment file %s is still smaller after %.0f s (--follow-hold): taken as it is\n",
				f->tty ? "\r\033[K" : "", shrunk, f->o->hold);
		return 0;
	}
	if (!f->o->rc->quiet && f->shrunk_waits++ % 20 == 0)
		fprintf(stderr, "%sbp-reconstruct: warning: the segment file %s shrank: it is being written anew, not appended to as bp-logd does (copy logs by writing a new name and renaming it, as rsync does); the passes wait until it is whole, --follow-hold seconds at most\n",
			f->tty ? "\r\033[K" : "", shrunk);
	return 1;
}

/* Remove the pass databases a killed --follow left (PASS.tmp-PID, db.c)
 * whose process is gone; one of a live process is its own. */
static void remove_stale(const char *pass)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(pass, '/');
	const char *base = slash ? slash + 1 : pass;
	size_t blen = strlen(base);
	if (slash)
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - pass), pass);
	else
		snprintf(dir, sizeof dir, ".");
	if (!dir[0])
		snprintf(dir, sizeof dir, "/");
	DIR *d = opendir(dir);
	struct dirent *de;
	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		if (strncmp(de->d_name, base, blen) ||
		    strncmp(de->d_name + blen, ".tmp-", 5))
			continue;
		long pid = strtol(de->d_name + blen + 5, &end, 10);
		if (*end || pid <= 0 || pid == (long)getpid() ||
		    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		char p[PATH_MAX];
		if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, de->d_name) < sizeof p)
			unlink(p);
	}
	closedir(d);
}

/* rc_options.pending_ns of a pass over the logs read at READ_NS. */
static int64_t pending_from(const struct fl *f, int64_t read_ns)
{
	int64_t v = read_ns - (int64_t)(f->o->hold * 1e9);
	return v > 0 ? v : 1;
}

/* The URI of PATH (file:PATH, percent-encoded; RO: ?mode=ro), or NULL
 * when out of memory.  bg_prepare's connection takes URIs, so that one
 * database is attached read-only: a path is attached as one too. */
static char *file_uri(const char *path, int ro)
{
	static const char hex[] = "0123456789ABCDEF";
	while (path[0] == '/' && path[1] == '/')   /* not an authority */
		path++;
	size_t n = strlen(path);
	char *u = malloc(5 + 3 * n + 9), *q = u;
	if (!u)
		return NULL;
	q += sprintf(q, "file:");
	for (const unsigned char *c = (const unsigned char *)path; *c; c++)
		if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || strchr("/._-~", *c)) {
			*q++ = (char)*c;
		} else {
			*q++ = '%';
			*q++ = hex[*c >> 4];
			*q++ = hex[*c & 15];
		}
	strcpy(q, ro ? "?mode=ro" : "");
	return u;
}

/* Tests (BP_FOLLOW_FULL_EARLY=GO, tests/recon/follow.sh): the child of a
 * full pass in the background judges against a copy of PATHS.db taken
 * when it began (SNAP, PATHS.db.full.snap), not PATHS.db at the end of
 * its reconstruction, and reads the logs only once the file GO exists
 * (the test adds a host meanwhile), so that the window passes write the
 * new host's requests after the child's snapshot and the write must look
 * those keys up again (req_bg_w_sql).  0, or -1 (then it judges against
 * PATHS.db). */
static int snap_copy(const char *paths, const char *snap)
{
	sqlite3 *src = NULL, *dst = NULL;
	sqlite3_backup *b;
	int r = -1;
	unlink(snap);
	if (sqlite3_open_v2(paths, &src, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_open_v2(snap, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
			    NULL) == SQLITE_OK &&
	    (b = sqlite3_backup_init(dst, "main", src, "main"))) {
		if (sqlite3_backup_step(b, -1) == SQLITE_DONE)
			r = 0;
		sqlite3_backup_finish(b);
	}
	sqlite3_close(src);
	sqlite3_close(dst);
	return r;
}

/* In the child of a full pass in the background: which closed channels
 * the write must write (e.follow_cw, bg_judge_sql), judged against
 * PATHS.db as it is now (or SNAP: snap_copy).  Should it not be readable,
 * all of them, as before the judgement (said on stderr).  0 or -1. */
static int bg_judge(struct fl *f, int64_t h, int64_t read_ns, const char *snap)
{
	char *uri = file_uri(snap ? snap : f->o->rc->output, 1);
	int64_t from;
	int r = -1;
	if (!uri)
		return ffail(f, "out of memory");
	if (one_i64(f, "SELECT COALESCE(min(start_ns), 9223372036854775807) FROM e.requests",
		    &from) == 0 &&
	    xsql(f, "ATTACH %Q AS p", uri) == 0) {
		if (xsql(f, "BEGIN") == 0 &&
		    xsql(f, bg_judge_sql, (long long)from, (long long)read_ns,
			 (long long)h, (long long)h) == 0 &&
		    xsql(f, "COMMIT") == 0)
			r = 0;
		else
			sqlite3_exec(f->h, "ROLLBACK", NULL, NULL, NULL);
		sqlite3_exec(f->h, "DETACH p", NULL, NULL, NULL);
	}
	free(uri);
	if (r == 0)
		return 0;
	fprintf(stderr, "bp-reconstruct: the full pass in the background looks every key up and writes every closed channel: %s\n",
		f->err);
	f->err[0] = 0;
	return xsql(f, "DROP TABLE IF EXISTS e.follow_cw;\n"
		    "CREATE TABLE e.follow_cw(e INTEGER PRIMARY KEY);\n"
		    "INSERT INTO e.follow_cw SELECT channel_id FROM e.channels WHERE close_ns < %lld;",
		    (long long)h);
}

/* In the child of a full pass in the background, once its database
 * OUT is written: what the write of a full pass computes of that
 * database alone (the requests' keys and fingerprints, req_fp_sql, with
 * READ_NS the time it read the logs) into its table follow_rm, and the
 * channels' keys into follow_cm, so that the write, which holds the window
 * passes back, reads them instead (req_copy_sql, bg_channels).  The same
 * statements as a write at once, over the same rows: the same keys and
 * fingerprints.  Then which closed channels the write must write
 * (bg_judge).  On a connection of its own (the parent's is not the
 * child's to use).  0 or -1. */
static int bg_prepare(struct fl *f, const char *out, int64_t read_ns,
		      const char *snap)
{
	int64_t cut = read_ns - (int64_t)(f->o->grace * 1e9);
	int64_t t0 = now_ns(CLOCK_MONOTONIC);
	int r = -1;
	/* the statements untimed: this process's lines would come among
	 * the parent's; one line for all */
	const char *tm = getenv("BP_FOLLOW_TIMING");
	int timing = tm && *tm;
	unsetenv("BP_FOLLOW_TIMING");
	f->err[0] = 0;
	f->h = NULL;
	if (sqlite3_open_v2(":memory:", &f->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI,
			    NULL) != SQLITE_OK ||
	    functions(f->h) != SQLITE_OK) {
		ffail(f, "%s: %s", out, f->h ? sqlite3_errmsg(f->h) : "out of memory");
		goto out;
	}
	char *uri = file_uri(out, 0);
	int at = uri ? xsql(f, "ATTACH %Q AS e", uri) : ffail(f, "out of memory");
	free(uri);
	if (at < 0)
		goto out;
	if (xsql(f, "%s", maps_sql) < 0 || xsql(f, "%s", win_full_sql) < 0 ||
	    xsql(f, req_fp_sql, 0LL, (long long)cut, (long long)cut) < 0 ||
	    xsql(f, "%s", pfp_sql) < 0 ||
	    xsql(f, "%s", proc_sql) < 0 || xsql(f, "%s", chan_sql) < 0 ||
	    xsql(f, "CREATE TABLE e.follow_cm(e INTEGER PRIMARY KEY, key TEXT, conn INTEGER);\n"
		 "INSERT INTO e.follow_cm SELECT e, key, conn FROM temp.cm;\n"
		 "CREATE INDEX e.follow_cm_conn ON follow_cm(conn);") < 0 ||
	    bg_judge(f, f->horizon == INT64_MIN ? INT64_MIN :
		     f->horizon - FOLLOW_MARGIN_NS, read_ns, snap) < 0)
		goto out;
	r = 0;
	if (timing)
		fprintf(stderr, "full in the background: keys and fingerprints %.3f s\n",
			(now_ns(CLOCK_MONOTONIC) - t0) / 1e9);
out:
	if (r < 0)
		fprintf(stderr, "bp-reconstruct: the full pass in the background: %s\n", f->err);
	sqlite3_close(f->h);
	f->h = NULL;
	return r;
}

/*
 * The database of a full pass in the background, written, removed off the
 * main loop: unlinking it frees its blocks, 75 ms for the 320 MB of 1.3
 * million events, which the window passes waited for.  A thread unlinks
 * it (no descriptor is held: a process forked meanwhile, the keeper, would
 * keep the blocks), joined before the next full pass forks (it writes a
 * file of that name) and at the end.
 */
static void *reap_run(void *arg)
{
	unlink(arg);
	return NULL;
}

static void reap_join(struct fl *f)
{
	if (!f->reaping)
		return;
	pthread_join(f->reap_th, NULL);
	f->reaping = 0;
}

static void reap(struct fl *f)
{
	reap_join(f);
	if (pthread_create(&f->reap_th, NULL, reap_run, f->bg_out) == 0)
		f->reaping = 1;
	else
		unlink(f->bg_out);
}

/* The copy of PATHS.db a test's child judges against (snap_copy):
 * PATHS.db.full.snap, into BUF. */
static char *snap_path(const struct fl *f, char *buf, size_t size)
{
	snprintf(buf, size, "%s.snap", f->bg_out);
	return buf;
}

/* Start a full pass in the background: a child process reconstructs the
 * logs as they are now into PATHS.db.full (rc_run, as a full pass would)
 * and exits with its status; bg_poll writes its result once it is done.
 * The child is killed with this process (PR_SET_PDEATHSIG) and touches
 * nothing of the parent's (not PATHS.db's connection, not the push).
 * 0, or -1 when it could not be started. */
static int bg_start(struct fl *f)
{
	struct rc_options o = *f->o->rc;
	o.output = f->bg_out;
	o.quiet = 1;
	o.progress = 0;
	o.err = stderr;
	o.no_patterns = 0;
	o.rows_from_ns = 0;
	o.rows_dom = NULL;
	o.rows_corr = NULL;
	o.nrows_dom = 0;
	/* withdrawn from now on: not the background pass's to write */
	if (xsql(f, "DELETE FROM temp.wd") < 0)
		return -1;
	int64_t read_ns = now_ns(CLOCK_REALTIME);
	o.pending_ns = pending_from(f, read_ns);
	o.pending_new_ns = (int64_t)(f->o->hold * 1e9);
	pid_t parent = getpid();
	/* (the last database unlinked before the child writes a new file
	 * of that name: reap) */
	reap_join(f);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct rc_summary sum;
		/* a Ctrl-C reaches the whole process group: the parent stops
		 * the child itself (bg_stop), or dies and takes it along */
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(RC_EXIT_OUTPUT);
		const char *ev = getenv("BP_FOLLOW_FULL_EARLY");
		char snap[PATH_MAX + 8];
		int early = ev && *ev &&
			    snap_copy(f->o->rc->output, snap_path(f, snap, sizeof snap)) == 0;
		for (int i = 0; early && i < 2000 && access(ev, F_OK) != 0; i++)
			nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
		int r = rc_run(&o, &sum);
		if (r == RC_EXIT_OK && bg_prepare(f, o.output, read_ns,
						  early ? snap : NULL) < 0)
			r = RC_EXIT_OUTPUT;
		if (early)
			unlink(snap);
		/* tests: a full pass whose result comes late, so that window
		 * passes write meanwhile (tests/recon/follow.sh) */
		const char *d = getenv("BP_FOLLOW_FULL_DELAY");
		if (d && *d) {
			double s = strtod(d, NULL);
			struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
			if (s > 0 && s < 60)
				nanosleep(&ts, NULL);
		}
		_exit(r);
	}
	f->bg_pid = pid;
	f->bg_read_ns = read_ns;
	f->bg_horizon = f->horizon;
	f->bg_t0 = now_ns(CLOCK_MONOTONIC) / 1e9;
	return 0;
}

/* The full pass in the background: if it is done, write its result (the
 * requests no window pass wrote since it began, the patterns, the rows of
 * no request).  1 when it wrote, 0 when there was nothing to write, -1 when
 * it failed, or the write did. */
static int bg_poll(struct fl *f)
{
	int st;
	if (!f->bg_pid)
		return 0;
	pid_t r = waitpid(f->bg_pid, &st, WNOHANG);
	if (r == 0)
		return 0;
	f->bg_pid = 0;
	if (r < 0)
		return ffail(f, "the full pass in the background: waitpid: %s", strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != RC_EXIT_OK) {
		unlink(f->bg_out);
		if (WIFEXITED(st))
			return ffail(f, "the full pass in the background failed (exit status %d, above)",
				     WEXITSTATUS(st));
		return ffail(f, "the full pass in the background was killed by signal %d",
			     WTERMSIG(st));
	}
	double t1 = now_ns(CLOCK_MONOTONIC) / 1e9;
	int w = write_pass(f, f->bg_out, 0, 1, 1);
	reap(f);
	if (w < 0)
		return -1;
	double t2 = now_ns(CLOCK_MONOTONIC) / 1e9;
	const char *tm = getenv("BP_FOLLOW_TIMING");
	if (tm && *tm)
		fprintf(stderr, "pass %" PRIu64 ": full in the background, reconstruct %.3f s, write %.3f s\n",
			f->passes, t1 - f->bg_t0, t2 - t1);
	f->refreshed_ns = now_ns(CLOCK_MONOTONIC);
	f->refresh_s = t2 - f->bg_t0;
	return 1;
}

/* Stop the full pass in the background, if one runs (its result is not
 * written: the last pass is full). */
static void bg_stop(struct fl *f)
{
	if (!f->bg_pid)
		return;
	kill(f->bg_pid, SIGKILL);
	while (waitpid(f->bg_pid, NULL, 0) < 0 && errno == EINTR)
		;
	f->bg_pid = 0;
	unlink(f->bg_out);
	/* (a test's: snap_copy) */
	char snap[PATH_MAX + 8];
	unlink(snap_path(f, snap, sizeof snap));
}

/* DIR, then PATH (so an absolute path stays whole under DIR). */
static char *under(const char *dir, const char *path)
{
	size_t n = strlen(dir) + strlen(path) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s%s%s", dir, path[0] == '/' ? "" : "/", path);
	return p;
}

/* mkdir -p of P's directory. */
static void make_parents(char *p)
{
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		mkdir(p, 0700);
		*s = '/';
	}
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *w)
{
	(void)st; (void)flag; (void)w;
	remove(p);
	return 0;
}

/* The bytes a kept pass read (MANIFEST: a length and a path a line),
 * copied under DIR with their paths, bp-logd writing on meanwhile:
 * the logs as the pass saw them.  0 or -1. */
static int snapshot(const char *manifest, const char *dir)
{
	FILE *m = fopen(manifest, "r");
	char line[PATH_MAX + 32];
	int r = 0;

	if (!m)
		return -1;
	while (r == 0 && fgets(line, sizeof line, m)) {
		char *end, *path;
		unsigned long long size = strtoull(line, &end, 10);
		if (*end != ' ')
			continue;
		path = end + 1;
		path[strcspn(path, "\n")] = 0;
		char *to = under(dir, path);
		int in = open(path, O_RDONLY | O_CLOEXEC);
		if (!to || in < 0) {
			free(to);
			if (in >= 0)
				close(in);
			r = -1;
			break;
		}
		make_parents(to);
		int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (out < 0 || rc_file_copy(in, out, size) != 0)
			r = -1;
		if (out >= 0)
			close(out);
		close(in);
		free(to);
	}
	fclose(m);
	return r;
}

/* A pass made by the keeper, checked (BP_FOLLOW_KEEPER=check) against
 * the same pass at once over the same bytes of the logs (a snapshot of
 * what the kept pass read, PASS.snap): 0 when the same, -1 (the run
 * fails, both databases and the snapshot kept: PASS.kept, PASS.check,
 * PASS.snap). */
static int keep_check(struct fl *f, const struct rc_options *o,
		      const struct rc_summary *ks)
{
	struct rc_options c = *o;
	struct rc_summary sum;
	char why[512];
	size_t n = strlen(o->output) + 8;
	char *p = malloc(n), *snap = malloc(n), *man = malloc(n);
	const char **in = calloc((size_t)o->ninputs + 1, sizeof *in);
	int r = -1, d = -1, differ = 1;

	if (!p || !snap || !man || !in) {
		ffail(f, "out of memory");
		goto out;
	}
	snprintf(p, n, "%s.check", o->output);
	snprintf(snap, n, "%s.snap", o->output);
	snprintf(man, n, "%s.files", o->output);
	nftw(snap, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	if (mkdir(snap, 0700) < 0 || snapshot(man, snap) < 0) {
		ffail(f, "the check of the kept merge's pass %" PRIu64 ": cannot copy the logs it read (%s) to %s",
		      f->passes, man, snap);
		goto out;
	}
	for (int i = 0; i < o->ninputs; i++) {
		struct stat st;
		if (!(in[i] = under(snap, o->inputs[i]))) {
			ffail(f, "out of memory");
			goto out;
		}
		/* a log directory without segments yet is one in the copy */
		if (stat(o->inputs[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			char *x = under(in[i], "x");
			if (x)
				make_parents(x);
			free(x);
		}
	}
	c.inputs = in;
	c.output = p;
	int e = rc_run(&c, &sum);
	if (e != RC_EXIT_OK) {
		ffail(f, "the check of the kept merge's pass %" PRIu64 ": the pass at once failed (exit %d)",
		      f->passes, e);
		goto out;
	}
	d = rc_keeper_compare(o->output, p, snap, why, sizeof why);
	differ = d || sum.events != ks->events ||
		sum.requests != ks->requests || sum.exact != ks->exact ||
		sum.uncertain != ks->uncertain || sum.pending != ks->pending ||
		sum.pending_max != ks->pending_max;
	if (differ) {
		char *k = malloc(n);
		if (k) {
			snprintf(k, n, "%s.kept", o->output);
			if (link(o->output, k) < 0 && !o->quiet)
				fprintf(stderr, "bp-reconstruct: %s: %s\n", k, strerror(errno));
			free(k);
		}
		ffail(f, "the check of the kept merge's pass %" PRIu64 ": not the pass at once: %s (events %" PRIu64 " / %" PRIu64 ", requests %" PRIu64 " / %" PRIu64 ", pending %" PRIu64 " / %" PRIu64 ")",
		      f->passes, d ? why : "the summaries differ",
		      ks->events, sum.events, ks->requests, sum.requests,
		      ks->pending, sum.pending);
		goto out;
	}
	f->keep_checked++;
	r = 0;
out:
	if (!differ) {
		unlink(p);
		nftw(snap, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	}
	if (man)
		unlink(man);
	for (int i = 0; in && i < o->ninputs; i++)
		free((char *)in[i]);
	free(in);
	free(p);
	free(snap);
	free(man);
	return r;
}

/* Reconstruct a pass with options O: a window pass (WINDOW) by the
 * keeper when it can, else (or when it could not) at once.  A keeper's
 * passes read back the rows of every request since the window it began
 * with and write those of their own window (rc_options.row_keys): once
 * that is FOLLOW_KEEP_WINDOWS windows before the pass's, a new keeper is
 * made beside it, which reconstructs the logs and merges them on its own
 * while the old one serves, and takes over when it is ready.  An enum
 * rc_exit, or -1 when the check failed. */
static int run_pass(struct fl *f, struct rc_options *o,
		    struct rc_summary *sum, int window)
{
	char why[KEEP_WHY];
	int64_t from = 0, w = o->pending_ns - FOLLOW_MARGIN_NS;

	if (!window || !f->keep_mode)
		return rc_run(o, sum);
	/* ... but no sooner than --follow-full-share times what the last
	 * one took to be ready after it began (each reconstructs the whole
	 * log beside the passes, as a full pass does) */
	double now = now_ns(CLOCK_MONOTONIC) / 1e9;
	if (f->keeper && !f->keep_next &&
	    o->rows_from_ns - f->keep_from >
	    (int64_t)(f->o->window * FOLLOW_KEEP_WINDOWS * 1e9) &&
	    now - f->keep_next_t0 >= f->keep_ready_s * f->o->full_share) {
		f->keep_next = rc_keeper_start(o, w);
		f->keep_next_t0 = now;
		f->keep_next_from = o->rows_from_ns;
	}
	if (f->keep_next) {
		int r = rc_keeper_ready(f->keep_next);
		if (r != 0 || !f->keeper) {
			if (r > 0)
				f->keep_ready_s = now - f->keep_next_t0;
			if (r > 0 || !f->keeper) {
				rc_keeper_stop(f->keeper);
				f->keeper = f->keep_next;
				f->keep_from = f->keep_next_from;
				f->keep_renewed++;
			} else {
				rc_keeper_stop(f->keep_next);
			}
			f->keep_next = NULL;
		}
	}
	if (!f->keeper) {
		if (!(f->keeper = rc_keeper_start(o, w)))
			return rc_run(o, sum);
		f->keep_from = o->rows_from_ns;
	}
	int r = rc_keeper_pass(f->keeper, o, w, f->keep_mode == 2, sum,
			       &from, why, sizeof why);
	if (r == RC_EXIT_OK) {
		f->keep_passes++;
		/* the pass left out the rows before this (its own window's
		 * first: rc_options.row_keys) */
		o->rows_from_ns = from;
		if (f->keep_mode == 2 && keep_check(f, o, sum) < 0)
			return -1;
		return r;
	}
	/* at once, and a keeper anew for the next pass */
	rc_keeper_stop(f->keeper);
	f->keeper = NULL;
	f->keep_rebuilds++;
	if (!f->o->rc->quiet && (f->keep_rebuilds <= 3 || f->keep_mode == 2))
		fprintf(stderr, "%sbp-reconstruct: follow: pass %" PRIu64 " reconstructed at once, the merge kept between passes made anew: %s\n",
			f->tty ? "\r\033[K" : "", f->passes, why);
	return rc_run(o, sum);
}

/* Whether a full pass is due in the background: none runs, and
 * --follow-full seconds and --follow-full-share times the last one's
 * time have passed since the last one. */
static int full_due(const struct fl *f)
{
	int64_t since = now_ns(CLOCK_MONOTONIC) - f->refreshed_ns;
	return !f->bg_pid && since >= (int64_t)(f->o->full * 1e9) &&
		since >= (int64_t)(f->refresh_s * f->o->full_share * 1e9);
}

/* One pass: reconstruct (when RECON) and write.  0, 1 when there is no
 * log yet, or -1. */
static int one_pass(struct fl *f, int recon, int final)
{
	double t0 = now_ns(CLOCK_MONOTONIC) / 1e9;
	/* the patterns and the rows of no request: on the first and the last
	 * pass, then every --follow-full seconds and at most a
	 * --follow-full-share-th of the time (each costs as much as the
	 * whole log) */
	int refresh = recon && (final || f->passes == 0);
	/* a segment written anew in place: not until it is whole again */
	if (recon && !final && seg_shrunk(f))
		return 1;
	/* the others in the background, one at a time (a child that could
	 * not be started: this pass is the full one) */
	if (recon && !refresh && full_due(f) && bg_start(f) < 0)
		refresh = 1;
	if (recon) {
		struct rc_options o = *f->o->rc;
		struct rc_summary sum;
		FILE *err = tmpfile();
		o.output = f->pass;
		o.quiet = 1;
		o.progress = 0;
		o.err = err;
		o.no_patterns = !refresh;
		o.rows_from_ns = refresh || final || f->next_from == INT64_MIN ?
			0 : f->next_from;
		o.rows_dom = (const char *const *)f->dom;
		o.rows_corr = f->corr;
		o.nrows_dom = f->ndom;
		int64_t read_ns = now_ns(CLOCK_REALTIME);
		/* before the last pass, records may be on their way */
		o.pending_ns = final ? 0 : pending_from(f, read_ns);
		o.pending_new_ns = (int64_t)(f->o->hold * 1e9);
		int r = run_pass(f, &o, &sum, !refresh && !final);
		if (r < 0) {
			if (err)
				fclose(err);
			return -1;
		}
		if (r == RC_EXIT_INPUT && !final) {
			if (err)
				fclose(err);
			return 1;
		}
		if (r != RC_EXIT_OK) {
			if (err) {
				char line[1024];
				rewind(err);
				while (fgets(line, sizeof line, err))
					fputs(line, stderr);
			}
			if (err)
				fclose(err);
			return ffail(f, "the pass over the logs failed (above)");
		}
		if (err)
			fclose(err);
		f->events = sum.events;
		f->sum = sum;
		f->pending_until = sum.pending ?
			sum.pending_max + (int64_t)(f->o->hold * 1e9) + 1 : 0;
		f->read_ns = read_ns;
		f->pass_rows_from = o.rows_from_ns;
	}
	if (access(f->pass, F_OK) != 0)
		return 1;
	double t1 = now_ns(CLOCK_MONOTONIC) / 1e9;
	if (write_pass(f, f->pass, final, refresh, 0) < 0)
		return -1;
	if (refresh) {
		/* A full pass's write works on the whole history (at a
		 * restart: 540 s of tb-follow took the RSS from 12 to
		 * 22.6 MiB for good); SQLite's unused pages go back
		 * (BENCHMARKS.md, phase 48). */
		sqlite3_db_release_memory(f->h);
	}
	double t2 = now_ns(CLOCK_MONOTONIC) / 1e9;
	if (sinks_pass(f, final) < 0)
		return -1;
#ifdef __GLIBC__
	/* What the pass, its write and its sinks freed goes back: else the
	 * heap keeps the highest mark any pass reached, and a larger pass
	 * now and then raises the RSS for good (tb-follow, an hour: +1 MiB
	 * in 20 minutes while the memory in use did not move; BENCHMARKS.md,
	 * phase 49). */
	double t3 = now_ns(CLOCK_MONOTONIC) / 1e9;
	malloc_trim(0);
	double t_trim = now_ns(CLOCK_MONOTONIC) / 1e9 - t3;
#else
	double t_trim = 0;
#endif
	const char *tm = getenv("BP_FOLLOW_TIMING");
	if (tm && *tm)
		fprintf(stderr, "pass %" PRIu64 ": %s, reconstruct %.3f s, write %.3f s (the sinks %.3f s, the heap trimmed %.4f s), horizon %s, rows left out %s (from %.1f s before the newest request)\n",
			f->passes, refresh ? "full" : "window", t1 - t0,
			now_ns(CLOCK_MONOTONIC) / 1e9 - t1,
			now_ns(CLOCK_MONOTONIC) / 1e9 - t2, t_trim,
			f->horizon == INT64_MIN ? "none" : "set",
			f->pass_rows_from ? "yes" : "no",
			f->pass_rows_from && f->last_start != INT64_MIN ?
			(double)(f->last_start - f->pass_rows_from) / 1e9 : 0.0);
	if (refresh)
		f->refresh_s = now_ns(CLOCK_MONOTONIC) / 1e9 - t0;
	progress(f, now_ns(CLOCK_MONOTONIC) / 1e9 - t0);
	return 0;
}

int rc_follow(const struct rc_follow_opts *o)
{
	struct fl f = { .o = o, .ino = -1, .lag_max_ns = -1,
			.open_from = INT64_MAX, .next_from = INT64_MIN };
	struct sigaction sa;
	int r = RC_EXIT_OUTPUT, waited = 0;

	/* first: a background job of a shell starts with SIGINT ignored */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
#ifdef __GLIBC__
	/* A fixed threshold for mmap: glibc raises its own each time a block
	 * it mmapped is freed, after which a pass's large passing blocks
	 * come from the heap, whose free pages between blocks still in use
	 * it cannot give back (BENCHMARKS.md, phase 51).  BP_FOLLOW_MMAP=0
	 * keeps glibc's (for the comparison). */
	const char *mm = getenv("BP_FOLLOW_MMAP");
	if (!mm || strcmp(mm, "0"))
		mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif

	const char *km = getenv("BP_FOLLOW_KEEPER");
	f.keep_mode = !km || !*km ? 1 : !strcmp(km, "check") ? 2 : atoi(km) ? 1 : 0;
	f.tty = !o->rc->quiet && isatty(2);
	if (o->rc->progress >= 0)
		f.tty = o->rc->progress;
	size_t n = strlen(o->rc->output) + 8;
	if (!(f.pass = malloc(n))) {
		fprintf(stderr, "bp-reconstruct: out of memory\n");
		return RC_EXIT_OUTPUT;
	}
	snprintf(f.pass, n, "%s.pass", o->rc->output);
	if (!(f.bg_out = malloc(n))) {
		fprintf(stderr, "bp-reconstruct: out of memory\n");
		free(f.pass);
		return RC_EXIT_OUTPUT;
	}
	snprintf(f.bg_out, n, "%s.full", o->rc->output);
	if (open_out(&f) < 0)
		goto out;
	remove_stale(f.pass);
	remove_stale(f.bg_out);



	f.ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (f.ino < 0 && !o->rc->quiet)
		fprintf(stderr, "bp-reconstruct: inotify: %s: a pass every %.1f s instead\n",
			strerror(errno), o->interval);
	int ms = (int)(o->interval * 1000);
	int changed = 1;
	while (!stop_sig) {
		watch_all(&f);
		/* after a full pass written in the background the next pass
		 * reads the logs again: the last window pass's database may
		 * be older than what the full pass wrote */
		int bgw = bg_poll(&f);
		if (bgw < 0)
			goto out;
		if (bgw)
			changed = 1;
		/* nothing new, nothing waiting for its grace or its push: no
		 * pass (an incomplete request waits for new log data) */
		if (f.pending_until && now_ns(CLOCK_REALTIME) >= f.pending_until)
			changed = 1;    /* those peers count as untraced now */
		/* requests the OTLP push holds for a full pass get one when
		 * it is due, though the logs did not change */
		if (f.nodb && full_due(&f))
			changed = 1;
		int p = changed || f.pending || f.unpushed ?
			one_pass(&f, changed, 0) : 0;
		if (p < 0)
			goto out;
		if (p == 1 && !waited && !o->rc->quiet) {
			fprintf(stderr, "bp-reconstruct: follow: waiting for the logs\n");
			waited = 1;
		}
		/* the interval first, then whatever changed in it */
		changed = 0;
		int64_t until = now_ns(CLOCK_MONOTONIC) + (int64_t)ms * 1000000;
		for (;;) {
			int64_t left = (until - now_ns(CLOCK_MONOTONIC)) / 1000000;
			int w = wait_change(&f, left > 0 ? (int)left : 0);
			if (w < 0)
				break;
			if (w > 0)
				changed = 1;
			if (left <= 0)
				break;
		}
		/* the logs did not change while it waited: as good as read
		 * now (the grace and the push count from here) */
		if (!changed && f.ino >= 0 && f.read_ns)
			f.read_ns = now_ns(CLOCK_REALTIME);
	}
	if (f.tty)
		fputc('\n', stderr);
	bg_stop(&f);
	rc_keeper_stop(f.keeper);
	rc_keeper_stop(f.keep_next);
	f.keeper = f.keep_next = NULL;
	/* the last pass: everything, as the offline run writes it */
	if (one_pass(&f, 1, 1) < 0)
		goto out;
	xsql(&f, "PRAGMA wal_checkpoint(TRUNCATE)");
	if (f.tty)
		fputc('\n', stderr);
	if (!o->rc->quiet)
		fprintf(stderr, "bp-reconstruct: follow: %" PRIu64 " events read (%" PRIu64 " lost), %" PRIu64 " requests in %s (%" PRIu64 " exact, %" PRIu64 " resolved, %" PRIu64 " uncertain; %" PRIu64 " revised after they were first written, %" PRIu64 " withdrawn), %" PRIu64 " warnings, %" PRIu64 " passes%s\n",
			f.sum.events, f.sum.lost, f.written, o->rc->output,
			f.sum.exact, f.sum.resolved, f.sum.uncertain, f.revised,
			f.withdrawn,
			f.sum.warnings, f.passes,
			f.sum.uncertain || f.sum.costly_warnings || f.sum.unreadable ?
			"; look at: the views uncertain_requests and the tables warnings and channels (readable = 0)" : "");
	r = RC_EXIT_OK;
	for (int k = 0; k < 2; k++) {
		const char *url = k ? (o->ch ? o->ch->url : NULL) :
				      (o->push ? o->push->url : NULL);
		if (!url)
			continue;
		int left = sink_summary(&f, k, url);
		if (left < 0) {
			r = RC_EXIT_OUTPUT;
			goto out;
		}
		if (left || f.sink_errors)
			r = RC_EXIT_PUSH;
	}
out:
	if (r != RC_EXIT_OK && f.err[0])
		fprintf(stderr, "\nbp-reconstruct: error: %s\n", f.err);
	if (f.h)
		sqlite3_close(f.h);
	if (f.ino >= 0)
		close(f.ino);
	bg_stop(&f);
	rc_keeper_stop(f.keeper);
	rc_keeper_stop(f.keep_next);
	unlink(f.pass);
	rc_map_free(&f.seg_size);
	free(f.pass);
	reap_join(&f);
	unlink(f.bg_out);
	free(f.bg_out);
	drop_corrections(&f);
	return r;
}
