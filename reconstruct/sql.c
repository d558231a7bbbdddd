/*
 * sql.c - running SQL with the first error kept as a message (see sql.h).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "sql.h"

int rc_sql_fail(struct rc_sql *x, const char *fmt, ...)
{
	va_list ap;
	if (x->failed)
		return -1;
	x->failed = 1;
	va_start(ap, fmt);
	vsnprintf(x->err, x->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

int rc_sql_fail_db(struct rc_sql *x, const char *what)
{
	if (x->who)
		return rc_sql_fail(x, "%s: %s: %s", x->who, what,
				   sqlite3_errmsg(x->h));
	return rc_sql_fail(x, "%s: %s", what, sqlite3_errmsg(x->h));
}

int rc_sql_exec(struct rc_sql *x, const char *sql)
{
	char *msg = NULL;
	if (sqlite3_exec(x->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
		const char *m = msg ? msg : "error";
		if (x->who)
			rc_sql_fail(x, "%s: %s", x->who, m);
		else
			rc_sql_fail(x, "%s", m);
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

sqlite3_stmt *rc_sql_prep(struct rc_sql *x, const char *sql)
{
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(x->h, sql, -1, &s, NULL) != SQLITE_OK) {
		rc_sql_fail_db(x, "prepare");
		return NULL;
	}
	return s;
}
