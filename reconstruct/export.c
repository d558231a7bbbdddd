/*
 * export.c - opening a paths database for reading, output files written
 * atomically, and the escaping the exporters share (see export.h).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export.h"

static int has_table(sqlite3 *h, const char *name)
{
	sqlite3_stmt *s = NULL;
	int found = 0;
	if (sqlite3_prepare_v2(h, "SELECT 1 FROM sqlite_master WHERE name = ?",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
	int r = sqlite3_step(s);
	if (r == SQLITE_ROW)
		found = 1;
	else if (r != SQLITE_DONE)
		found = -1;
	sqlite3_finalize(s);
	return found;
}

int export_open(struct export_db *x, const char *path)
{
	memset(x, 0, sizeof *x);
	x->path = path;
	if (access(path, R_OK) < 0) {
		snprintf(x->err, sizeof x->err,
			 "cannot read %s: %s (give the database bp-reconstruct wrote: bp-reconstruct LOGDIR -o %s)",
			 path, strerror(errno), path);
		return -1;
	}
	if (sqlite3_open_v2(path, &x->h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		snprintf(x->err, sizeof x->err, "cannot open %s: %s", path,
			 x->h ? sqlite3_errmsg(x->h) : "out of memory");
		export_close(x);
		return -1;
	}
	sqlite3_busy_timeout(x->h, 5000);
	int req = has_table(x->h, "requests");
	if (req < 0) {
		snprintf(x->err, sizeof x->err,
			 "%s is not an SQLite database (%s): give the paths database bp-reconstruct wrote",
			 path, sqlite3_errmsg(x->h));
		export_close(x);
		return -1;
	}
	if (!req || has_table(x->h, "spans") != 1) {
		snprintf(x->err, sizeof x->err,
			 "%s is not a BorderPatrol paths database (no requests or spans table): make one with bp-reconstruct LOGDIR -o PATHS.db",
			 path);
		export_close(x);
		return -1;
	}
	if (has_table(x->h, "patterns") != 1 || has_table(x->h, "errors") != 1 ||
	    has_table(x->h, "uncertain_requests") != 1) {
		snprintf(x->err, sizeof x->err,
			 "%s was written by an older bp-reconstruct (no patterns table, errors or uncertain_requests view): run bp-reconstruct on its logs again",
			 path);
		export_close(x);
		return -1;
	}
	return 0;
}

void export_close(struct export_db *x)
{
	if (x->h)
		sqlite3_close(x->h);
	x->h = NULL;
}

sqlite3_stmt *export_prep(struct export_db *x, const char *sql)
{
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(x->h, sql, -1, &s, NULL) != SQLITE_OK) {
		export_sql_fail(x, "query");
		return NULL;
	}
	return s;
}

int export_sql_fail(struct export_db *x, const char *what)
{
	snprintf(x->err, sizeof x->err, "reading %s: %s: %s", x->path, what,
		 sqlite3_errmsg(x->h));
	return -1;
}

const char *export_col(sqlite3_stmt *s, int i)
{
	const unsigned char *v = sqlite3_column_text(s, i);
	return v ? (const char *)v : "";
}

/* ---- files ---------------------------------------------------------------- */

int export_file_open(struct export_db *x, struct export_file *o,
		     const char *path)
{
	size_t l = strlen(path) + 32;
	memset(o, 0, sizeof *o);
	o->path = strdup(path);
	o->tmp = malloc(l);
	if (!o->path || !o->tmp) {
		snprintf(x->err, sizeof x->err, "out of memory");
		export_file_abort(o);
		return -1;
	}
	snprintf(o->tmp, l, "%s.tmp-%ld", path, (long)getpid());
	o->f = fopen(o->tmp, "w");
	if (!o->f) {
		snprintf(x->err, sizeof x->err,
			 "cannot create %s: %s (check that its directory exists and is writable)",
			 o->tmp, strerror(errno));
		free(o->tmp);
		o->tmp = NULL;
		export_file_abort(o);
		return -1;
	}
	return 0;
}

int export_file_commit(struct export_db *x, struct export_file *o)
{
	int bad = ferror(o->f);
	int e = bad ? EIO : 0;
	if (fclose(o->f) != 0 && !e)
		e = errno;
	o->f = NULL;
	if (e) {
		snprintf(x->err, sizeof x->err,
			 "cannot write %s: %s (check free space and permissions)",
			 o->path, strerror(e));
		export_file_abort(o);
		return -1;
	}
	if (rename(o->tmp, o->path) < 0) {
		snprintf(x->err, sizeof x->err,
			 "cannot rename %s to %s: %s (check the directory)",
			 o->tmp, o->path, strerror(errno));
		export_file_abort(o);
		return -1;
	}
	free(o->tmp);
	o->tmp = NULL;
	export_file_abort(o);
	return 0;
}

void export_file_abort(struct export_file *o)
{
	if (o->f)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof *o);
}

/* ---- text --------------------------------------------------------------------- */

size_t export_utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		return (s[1] & 0xC0) == 0x80 ? 2 : 0;
	if (c >= 0xE0 && c <= 0xEF) {
		if ((s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80)
			return 0;
		if (c == 0xE0 && s[1] < 0xA0)
			return 0;        /* overlong */
		if (c == 0xED && s[1] >= 0xA0)
			return 0;        /* surrogates */
		return 3;
	}
	if (c >= 0xF0 && c <= 0xF4) {
		if ((s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 ||
		    (s[3] & 0xC0) != 0x80)
			return 0;
		if ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90))
			return 0;
		return 4;
	}
	return 0;
}

void export_json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	if (!s) {
		fputs("null", f);
		return;
	}
	putc('"', f);
	while (*p) {
		unsigned c = *p;
		size_t n = export_utf8_len(p);
		if (c == '"' || c == '\\') {
			putc('\\', f);
			putc((int)c, f);
		} else if (c == '\n') {
			fputs("\\n", f);
		} else if (c == '\t') {
			fputs("\\t", f);
		} else if (c == '\r') {
			fputs("\\r", f);
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
		} else if (c == '<') {
			fputs("\\u003c", f);     /* safe inside <script> */
		} else if (!n) {
			fputs("\\ufffd", f);
			n = 1;
		} else {
			fwrite(p, 1, n, f);
		}
		p += n ? n : 1;
	}
	putc('"', f);
}

char *export_utf8_clean(char *s)
{
	unsigned char *p = (unsigned char *)s;
	while (p && *p) {
		size_t n = export_utf8_len(p);
		if (!n) {
			*p++ = '?';
		} else {
			if (n == 1 && (*p < 0x20 || *p == 0x7f))
				*p = ' ';
			p += n;
		}
	}
	return s;
}

const char *export_basename(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : path ? path : "";
}

const char *export_dur(char *buf, size_t len, double ns)
{
	if (ns < 0)
		snprintf(buf, len, "-");
	else if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.4g us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.4g ms", ns / 1e6);
	else
		snprintf(buf, len, "%.4g s", ns / 1e9);
	return buf;
}
