/*
 * pgclient.c - drive a PostgreSQL server through libpq's extended query
 * protocol, for record.sh: parameters (unnamed statement), a named prepared
 * statement run twice, COPY through the extended protocol (libpq sends a
 * second Sync after CopyDone), pipeline mode with several Syncs in flight
 * and an error inside, a notification, a multi-statement query, and a
 * cancelled query (CancelRequest on a second connection).
 *
 * Usage: pgclient CONNINFO
 * Build: cc -o pgclient pgclient.c -I$(pg_config --includedir) -lpq
 * Exit status 0 when every step gave the expected result, else 1 with the
 * failing step on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

static PGconn *conn;

static void fail(const char *step, const char *why)
{
	fprintf(stderr, "pgclient: %s: %s\n", step, why);
	PQfinish(conn);
	exit(1);
}

/* Run a result-returning call and check its status. */
static void expect(const char *step, PGresult *r, ExecStatusType want)
{
	if (!r)
		fail(step, PQerrorMessage(conn));
	if (PQresultStatus(r) != want)
		fail(step, PQresultErrorMessage(r)[0] ? PQresultErrorMessage(r) :
			   PQresStatus(PQresultStatus(r)));
	PQclear(r);
}

/* In pipeline mode: the next result must have status WANT, then NULL. */
static void pipe_result(const char *step, ExecStatusType want)
{
	PGresult *r = PQgetResult(conn);
	if (!r || PQresultStatus(r) != want)
		fail(step, r ? PQresStatus(PQresultStatus(r)) : "no result");
	PQclear(r);
	if (want == PGRES_PIPELINE_SYNC)
		return;
	r = PQgetResult(conn);
	if (r)
		fail(step, "more than one result");
}

int main(int argc, char **argv)
{
	const char *v[2];

	if (argc != 2) {
		fprintf(stderr, "usage: pgclient CONNINFO\n");
		return 2;
	}
	conn = PQconnectdb(argv[1]);
	if (PQstatus(conn) != CONNECTION_OK)
		fail("connect", PQerrorMessage(conn));

	expect("create", PQexec(conn, "CREATE TEMP TABLE t (a int, b text)"),
	       PGRES_COMMAND_OK);

	v[0] = "41";
	expect("params", PQexecParams(conn, "SELECT $1::int + 1 AS answer", 1,
				      NULL, v, NULL, NULL, 0), PGRES_TUPLES_OK);

	expect("prepare", PQprepare(conn, "ins",
				    "INSERT INTO t VALUES ($1, $2)", 2, NULL),
	       PGRES_COMMAND_OK);
	v[0] = "1"; v[1] = "one";
	expect("exec ins 1", PQexecPrepared(conn, "ins", 2, v, NULL, NULL, 0),
	       PGRES_COMMAND_OK);
	v[0] = "2"; v[1] = "two";
	expect("exec ins 2", PQexecPrepared(conn, "ins", 2, v, NULL, NULL, 0),
	       PGRES_COMMAND_OK);

	/* COPY through the extended protocol */
	expect("copy start", PQexecParams(conn, "COPY t FROM STDIN", 0, NULL,
					  NULL, NULL, NULL, 0), PGRES_COPY_IN);
	if (PQputCopyData(conn, "3\tthree\n", 8) != 1 ||
	    PQputCopyData(conn, "4\tfour\n", 7) != 1 ||
	    PQputCopyEnd(conn, NULL) != 1)
		fail("copy data", PQerrorMessage(conn));
	expect("copy end", PQgetResult(conn), PGRES_COMMAND_OK);
	if (PQgetResult(conn))
		fail("copy end", "more results");

	/* pipeline: two syncs in flight, an error in the first batch */
	if (!PQenterPipelineMode(conn))
		fail("pipeline", PQerrorMessage(conn));
	v[0] = "5";
	if (!PQsendQueryParams(conn, "SELECT count(*) FROM t WHERE a < $1", 1,
			       NULL, v, NULL, NULL, 0) ||
	    !PQsendQueryParams(conn, "SELECT 1/0", 0, NULL, NULL, NULL, NULL,
			       0) ||
	    !PQpipelineSync(conn))
		fail("pipeline batch 1", PQerrorMessage(conn));
	v[0] = "6"; v[1] = "six";
	if (!PQsendQueryPrepared(conn, "ins", 2, v, NULL, NULL, 0) ||
	    !PQsendQueryParams(conn, "SELECT max(a) FROM t", 0, NULL, NULL,
			       NULL, NULL, 0) ||
	    !PQpipelineSync(conn))
		fail("pipeline batch 2", PQerrorMessage(conn));
	pipe_result("pipeline count", PGRES_TUPLES_OK);
	pipe_result("pipeline 1/0", PGRES_FATAL_ERROR);
	pipe_result("pipeline sync 1", PGRES_PIPELINE_SYNC);
	pipe_result("pipeline ins", PGRES_COMMAND_OK);
	pipe_result("pipeline max", PGRES_TUPLES_OK);
	pipe_result("pipeline sync 2", PGRES_PIPELINE_SYNC);
	if (!PQexitPipelineMode(conn))
		fail("pipeline exit", PQerrorMessage(conn));

	/* a notification delivered inside a reply */
	expect("listen", PQexec(conn, "LISTEN ch"), PGRES_COMMAND_OK);
	expect("notify", PQexec(conn, "SELECT pg_notify('ch', 'inside')"),
	       PGRES_TUPLES_OK);
	PGnotify *n = PQnotifies(conn);
	if (!n || strcmp(n->extra, "inside") != 0)
		fail("notify", "no notification");
	PQfreemem(n);

	/* several statements in one Query */
	expect("multi", PQexec(conn, "BEGIN; SELECT 1; COMMIT"),
	       PGRES_COMMAND_OK);

	/* cancel a running query: CancelRequest on a new connection */
	if (!PQsendQuery(conn, "SELECT pg_sleep(10)"))
		fail("sleep", PQerrorMessage(conn));
	usleep(300000);
	PGcancel *c = PQgetCancel(conn);
	char err[256];
	if (!c || !PQcancel(c, err, sizeof err))
		fail("cancel", err);
	PQfreeCancel(c);
	PGresult *r = PQgetResult(conn);
	if (!r || PQresultStatus(r) != PGRES_FATAL_ERROR ||
	    strcmp(PQresultErrorField(r, PG_DIAG_SQLSTATE), "57014") != 0)
		fail("cancel", "the query was not cancelled");
	PQclear(r);
	if (PQgetResult(conn))
		fail("cancel", "more results");

	PQfinish(conn);
	return 0;
}
