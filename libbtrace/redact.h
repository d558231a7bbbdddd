/*
 * redact.h - secrets taken out of message attributes before logging
 * (redact.c, docs/security.md).
 */
#ifndef BT_REDACT_H
#define BT_REDACT_H

#include "core.h"

/* ---- redaction (redact.c, docs/security.md) ---------------------------- */

#define BT_RD_SQL_LITERALS  0x1u    /* SQL string and numeric literals -> ? */
#define BT_RD_QUERY_STRINGS 0x2u    /* URL targets cut after '?' */
#define BT_RD_CMDLINE       0x4u    /* command lines: the program only */
#define BT_RD_ALL           0x7u
/* not an option: bt_redact_sql reads SQL in MySQL's dialect (a MySQL
 * message's sql attribute): backslash escapes in '...' and "...", which
 * are both strings, `identifiers`, IDENTIFIED ... BY/AS '...' and
 * PASSWORD('...') like PASSWORD '...' */
#define BT_RD_MYSQL         0x100u

/* Parse a BTRACE_REDACT list into *FLAGS.  -EINVAL for an unknown word
 * (copied to BAD): *FLAGS is then BT_RD_ALL, so a typo hides more, never
 * less. */
BT_HIDDEN int bt_redact_parse(const char *spec, unsigned *flags, char *bad,
			      size_t badlen);
/* Rewrite SQL text / a URL target of N bytes into OUT (at most CAP bytes;
 * never longer than N).  Returns the length; *CUT set if CAP was short. */
BT_HIDDEN size_t bt_redact_sql(const char *in, size_t n, char *out,
			       size_t cap, unsigned flags, int *cut);
BT_HIDDEN size_t bt_redact_url(const char *in, size_t n, char *out,
			       size_t cap, unsigned flags, int *cut);
/* Could bt_redact_sql without BT_RD_SQL_LITERALS change these N bytes
 * of SQL?  0 only when it would give them back unchanged: no byte of
 * 0x80 or above, no PASSWORD or IDENTIFIED in any case, and short enough
 * for bt_redact_emit's buffer; cheap enough for every SQL message. */
BT_HIDDEN int bt_redact_sql_may_change(const char *in, size_t n);
/* Rewrite a command line (N bytes of NUL-separated arguments, at most
 * 512) in place; returns its new length. */
BT_HIDDEN size_t bt_redact_cmdline(char *s, size_t n, unsigned flags);
/* Does EV carry an attribute the rules may rewrite (cheap test)? */
BT_HIDDEN int bt_redact_needed(const struct bt_attr *attr, unsigned nattr,
			       unsigned flags);
/* bt_redact_needed's test of one attribute A (inlined into the MSG path,
 * which looks at each attribute once for this and for the record's
 * bound: libbtrace/msg.c). */
static inline int bt_redact_attr_needed(const struct bt_attr *a,
					unsigned flags)
{
	/* most attributes are none of the four: one test */
	if (a->key >= 32 || !((1u << a->key) &
			      (1u << BT_AK_SQL | 1u << BT_AK_PARAMS |
			       1u << BT_AK_TARGET | 1u << BT_AK_FCGI_URI)))
		return 0;
	switch (a->key) {
	case BT_AK_SQL:
		return (flags & BT_RD_SQL_LITERALS) ||
		       bt_redact_sql_may_change(a->val, a->len);
	case BT_AK_PARAMS:
		return (flags & BT_RD_SQL_LITERALS) && a->len;
	case BT_AK_TARGET:
	case BT_AK_FCGI_URI:
		return (flags & BT_RD_QUERY_STRINGS) ||
		       (a->len && a->val[0] != '/');
	}
	return 0;
}
/* Point EV's rewritten attributes into BUF; 1 if any changed. */
BT_HIDDEN int bt_redact_attrs(struct bt_event *ev, char *buf, size_t cap,
			      unsigned flags);
/* bt_redact_attrs with bt_conf.redact, then bt_emit. */
BT_HIDDEN void bt_redact_emit(struct bt_event *ev);

#endif /* BT_REDACT_H */
