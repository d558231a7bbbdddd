/*
 * sql.h - running SQL on the paths database with the first error kept as
 * a message (for the writers that run SQL text: db.c, patterns.c,
 * views.c).
 */
#ifndef RC_SQL_H
#define RC_SQL_H

#include <stddef.h>

#include <sqlite3.h>

/* A database and where its first error goes. */
struct rc_sql {
	sqlite3    *h;
	const char *who;         /* the messages' prefix ("patterns"), or NULL */
	char       *err;         /* the first error's message (ERRLEN bytes) */
	size_t      errlen;
	int         failed;      /* an error was recorded */
};

/* Record the message FMT (the first one wins); returns -1. */
int rc_sql_fail(struct rc_sql *x, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Record "WHO: WHAT: " and SQLite's message; returns -1. */
int rc_sql_fail_db(struct rc_sql *x, const char *what);
/* Run the statements SQL; 0, or -1 with "WHO: " and SQLite's message. */
int rc_sql_exec(struct rc_sql *x, const char *sql);
/* Prepare SQL; NULL with "WHO: prepare: " and SQLite's message. */
sqlite3_stmt *rc_sql_prep(struct rc_sql *x, const char *sql);

#endif /* RC_SQL_H */
