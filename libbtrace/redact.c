/*
 * redact.c - secrets taken out of message attributes before they are
 * encoded (docs/security.md).  The bytes on the wire are never touched:
 * only the copy of an attribute that goes into the log is rewritten.
 *
 * What the processors keep is already narrow (docs/protocols.md): no HTTP
 * header values other than Host, traceparent and X-Request-ID (so no
 * Authorization, Cookie, Set-Cookie or Proxy-Authorization), no bodies, no
 * PostgreSQL password or SASL message.  On top of that, always:
 *
 *   - SQL text: a string literal that follows the word PASSWORD, directly
 *     or after '=' (ALTER ROLE ... PASSWORD '...', CREATE USER MAPPING
 *     ... OPTIONS (password '...'), WHERE password = '...') becomes '?';
 *     MySQL's (a mysql message): also after PASSWORD( and after BY or AS
 *     following IDENTIFIED (CREATE USER u IDENTIFIED [WITH p] BY '...');
 *     its strings are '...' and "..." with backslash escapes;
 *   - URL targets (HTTP target, FastCGI REQUEST_URI): the user
 *     information of an absolute URL (http://user:secret@host/) becomes
 *     '?'.
 *
 *   - command lines (PROC_START): an argument that is a header with a
 *     secret ("Authorization: ...", "Cookie: ...") keeps only its name;
 *     the value of an option whose name contains pass, secret, token or
 *     key (--password=..., --api-token ...) becomes '?'; the two rules
 *     above apply to every argument.
 *
 * And by option (BTRACE_REDACT, a comma-separated list):
 *
 *   sql-literals    every SQL string literal ('...', E'...', B'...',
 *                   X'...', N'...', U&'...', $tag$...$tag$) and numeric
 *                   literal becomes '?' (quoted identifiers, $1
 *                   parameters and comments stay), and the hashes of
 *                   bound parameters (BT_AK_PARAMS) are dropped (empty);
 *   query-strings   a URL target, and a URL in a command-line argument,
 *                   is cut after its '?' (a fragment after '#' is
 *                   dropped);
 *   cmdline         command lines keep the program, not its arguments;
 *   all             all three;  none (or empty): only the rules above.
 *
 * A rewritten value is never longer than the original, and a literal cut
 * short by the processor's length limit is folded whole: no prefix of a
 * secret is left behind.  Everything here is a pure function of its input
 * except bt_redact_emit, which encodes through bt_emit; no allocation, no
 * lock, async-signal-safe.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <strings.h>

#include "bt.h"

/* An attribute rewritten in place must fit here; processors keep at most
 * 1024 bytes of SQL and 768 of a target (docs/protocols.md). */
#define REDACT_BUF 3072

struct out {
	char  *p;
	size_t n, cap;
	int    cut;             /* ran out of room */
};

static void put(struct out *o, char c)
{
	if (o->n < o->cap)
		o->p[o->n++] = c;
	else
		o->cut = 1;
}

static void put_n(struct out *o, const char *s, size_t k)
{
	for (size_t i = 0; i < k && !o->cut; i++)
		put(o, s[i]);
}

/* Identifier characters of SQL (PostgreSQL: letters, digits, _, $, and
 * every non-ASCII byte). */
static int ident_char(unsigned char c)
{
	return isalnum(c) || c == '_' || c == '$' || c >= 0x80;
}

static int ident_start(unsigned char c)
{
	return isalpha(c) || c == '_' || c >= 0x80;
}

/* End (exclusive) of the quoted run starting at IN[I] == Q; N if it never
 * closes.  Doubled quotes stay inside; BACKSLASH: \x escapes too. */
static size_t quoted_end(const char *in, size_t n, size_t i, char q,
			 int backslash)
{
	for (size_t k = i + 1; k < n; k++) {
		if (backslash && in[k] == '\\') {
			k++;
			continue;
		}
		if (in[k] == q) {
			if (k + 1 < n && in[k + 1] == q) {
				k++;
				continue;
			}
			return k + 1;
		}
	}
	return n;
}

/* A dollar quote $tag$ at IN[I]: its end (exclusive), N if it never
 * closes, 0 if IN[I] starts no dollar quote ($1 is a parameter). */
static size_t dollar_end(const char *in, size_t n, size_t i)
{
	size_t k = i + 1, tl;

	if (k < n && !ident_start((unsigned char)in[k]) && in[k] != '$')
		return 0;
	while (k < n && in[k] != '$') {
		if (!ident_char((unsigned char)in[k]) || in[k] == '$')
			return 0;
		k++;
	}
	if (k >= n)
		return 0;
	tl = k + 1 - i;                         /* "$tag$" */
	for (size_t j = k + 1; j + tl <= n; j++)
		if (in[j] == '$' && !memcmp(in + j, in + i, tl))
			return j + tl;
	return n;
}

/* A numeric literal at IN[I]: its end (exclusive). */
static size_t number_end(const char *in, size_t n, size_t i)
{
	size_t k = i;

	while (k < n) {
		unsigned char c = (unsigned char)in[k];
		if (isalnum(c) || c == '_' || c == '.') {
			k++;
		} else if ((c == '+' || c == '-') && k > i &&
			   (in[k - 1] == 'e' || in[k - 1] == 'E') &&
			   !(k - i >= 2 && (in[i + 1] == 'x' || in[i + 1] == 'X'))) {
			k++;
		} else {
			break;
		}
	}
	return k;
}

/* bytes that may start a change: P, I (either case), 0x80 and above */
static const uint8_t may_start[256] = {
	['P'] = 1, ['p'] = 1, ['I'] = 1, ['i'] = 1,
	[0x80 ... 0xff] = 1,
};

/*
 * Without sql-literals, bt_redact_sql changes a text only after the word
 * PASSWORD (MySQL: also after IDENTIFIED), which it compares with
 * strncasecmp: in the locale's case, so a byte of 0x80 or above may fold
 * to a letter of them (ISO-8859-9's dotted capital I).  Text of plain
 * ASCII with neither word in any ASCII case comes back as it went in,
 * unless it does not fit the buffer (bt_redact_emit: REDACT_BUF; the
 * processors keep at most 1024 bytes of SQL).
 */
int bt_redact_sql_may_change(const char *in, size_t n)
{
	const unsigned char *u = (const unsigned char *)in;

	if (n > 1024)
		return 1;
	for (size_t i = 0; i < n; i++) {
		if (!may_start[u[i]])
			continue;
		if (u[i] >= 0x80)
			return 1;
		if ((u[i] | 0x20) == 'p' ? n - i >= 8 &&
		    !strncasecmp(in + i, "password", 8) :
		    n - i >= 10 && !strncasecmp(in + i, "identified", 10))
			return 1;
	}
	return 0;
}

size_t bt_redact_sql(const char *in, size_t n, char *outbuf, size_t cap,
		     unsigned flags, int *cut)
{
	struct out o = { outbuf, 0, cap, 0 };
	int lit = (flags & BT_RD_SQL_LITERALS) != 0;
	int my = (flags & BT_RD_MYSQL) != 0;
	int pw = 0;          /* the word PASSWORD (and maybe '=') just passed */
	int idf = 0;         /* MySQL: IDENTIFIED passed, no literal yet */
	size_t i = 0;

	while (i < n && !o.cut) {
		unsigned char c = (unsigned char)in[i];
		size_t e;

		if (c == '-' && i + 1 < n && in[i + 1] == '-') {
			const char *nl = memchr(in + i, '\n', n - i);
			e = nl ? (size_t)(nl - in) + 1 : n;
			put_n(&o, in + i, e - i);
			i = e;
		} else if (c == '/' && i + 1 < n && in[i + 1] == '*') {
			int depth = 0;
			for (e = i; e < n; e++) {
				if (e + 1 < n && in[e] == '/' && in[e + 1] == '*') {
					depth++;
					e++;
				} else if (e + 1 < n && in[e] == '*' && in[e + 1] == '/') {
					e++;
					if (--depth == 0) {
						e++;
						break;
					}
				}
			}
			if (e > n)
				e = n;
			put_n(&o, in + i, e - i);
			i = e;
		} else if (my && c == '`') {           /* an identifier */
			e = quoted_end(in, n, i, '`', 0);
			put_n(&o, in + i, e - i);
			pw = e - i == 10 && !strncasecmp(in + i + 1, "password", 8);
			i = e;
		} else if (c == '"' && !my) {
			e = quoted_end(in, n, i, '"', 0);
			put_n(&o, in + i, e - i);
			i = e;
			pw = 0;
		} else if (c == '\'' || c == '"') {
			e = quoted_end(in, n, i, (char)c, my);
			if (lit || pw)
				put(&o, '?');
			else
				put_n(&o, in + i, e - i);
			i = e;
			pw = 0;
			idf = 0;
		} else if (c == '$' && (i == 0 || !ident_char((unsigned char)in[i - 1])) &&
			   (e = dollar_end(in, n, i)) != 0) {
			if (lit || pw)
				put(&o, '?');
			else
				put_n(&o, in + i, e - i);
			i = e;
			pw = 0;
		} else if ((isdigit(c) || (c == '.' && i + 1 < n &&
					   isdigit((unsigned char)in[i + 1]))) &&
			   (i == 0 || !ident_char((unsigned char)in[i - 1]))) {
			e = number_end(in, n, i);
			if (lit)
				put(&o, '?');
			else
				put_n(&o, in + i, e - i);
			i = e;
			pw = 0;
		} else if (ident_start(c)) {
			size_t q;
			for (e = i; e < n && ident_char((unsigned char)in[e]); e++)
				;
			/* a prefixed literal: E'..' (backslash escapes),
			 * B'..', X'..', N'..', U&'..' */
			q = e - i == 1 && strchr("EeBbXxNn", c) ? e :
			    e - i == 1 && (c == 'U' || c == 'u') && e + 1 < n &&
			    in[e] == '&' ? e + 1 : 0;
			if (q && q < n && in[q] == '\'') {
				e = quoted_end(in, n, q, '\'', my || c == 'E' ||
					       c == 'e');
				if (lit || pw)
					put(&o, '?');
				else
					put_n(&o, in + i, e - i);
				i = e;
				pw = 0;
				continue;
			}
			put_n(&o, in + i, e - i);
			pw = e - i == 8 && !strncasecmp(in + i, "password", 8);
			if (my && e - i == 10 &&
			    !strncasecmp(in + i, "identified", 10))
				idf = 1;
			else if (my && idf && e - i == 2 &&
				 (!strncasecmp(in + i, "by", 2) ||
				  !strncasecmp(in + i, "as", 2)))
				pw = 1;         /* IDENTIFIED [WITH p] BY|AS '...' */
			i = e;
		} else {
			put(&o, (char)c);
			if (!(c == '=' || isspace(c) || (my && c == '(')))
				pw = 0;
			if (c == ';' || c == ',')
				idf = 0;
			i++;
		}
	}
	if (cut)
		*cut = o.cut;
	return o.n;
}

size_t bt_redact_url(const char *in, size_t n, char *outbuf, size_t cap,
		     unsigned flags, int *cut)
{
	struct out o = { outbuf, 0, cap, 0 };
	size_t i = 0, auth, a, end;

	/* scheme "://" authority: user information before the last '@' */
	while (i < n && (isalnum((unsigned char)in[i]) || in[i] == '+' ||
			 in[i] == '-' || in[i] == '.'))
		i++;
	if (i > 0 && i + 3 <= n && !memcmp(in + i, "://", 3)) {
		auth = i + 3;
		for (end = auth; end < n && in[end] != '/' && in[end] != '?' &&
				 in[end] != '#'; end++)
			;
		for (a = end; a > auth && in[a - 1] != '@'; a--)
			;
		if (a > auth + 1) {              /* non-empty user information */
			put_n(&o, in, auth);
			put(&o, '?');
			i = a - 1;               /* from the '@' */
		} else {
			i = 0;
		}
	} else {
		i = 0;
	}
	for (; i < n && !o.cut; i++) {
		if ((flags & BT_RD_QUERY_STRINGS) && (in[i] == '?' || in[i] == '#')) {
			if (in[i] == '?')
				put(&o, '?');
			break;
		}
		put(&o, in[i]);
	}
	if (cut)
		*cut = o.cut;
	return o.n;
}

/* Does the option name N[0..K) name a secret ("--password", "--db-pass",
 * "--api-token", "--client-secret", "--key")? */
static int secret_name(const char *n, size_t k)
{
	static const char *const words[] = { "pass", "secret", "token", "key" };

	for (unsigned w = 0; w < sizeof words / sizeof words[0]; w++) {
		size_t wl = strlen(words[w]);
		for (size_t i = 0; i + wl <= k; i++)
			if (!strncasecmp(n + i, words[w], wl))
				return 1;
	}
	return 0;
}

/* One argument of a command line into O.  *NEXT_SECRET: the previous
 * argument was an option naming a secret, so this one is its value. */
static void redact_arg(const char *a, size_t k, struct out *o, int *next_secret,
		       unsigned flags)
{
	static const char *const hdrs[] = { "authorization:", "cookie:",
		"set-cookie:", "proxy-authorization:" };
	char tmp[512];
	size_t i, n, dash;
	int cut;

	if (*next_secret) {
		*next_secret = 0;
		put(o, '?');
		return;
	}
	for (unsigned h = 0; h < sizeof hdrs / sizeof hdrs[0]; h++) {
		size_t hl = strlen(hdrs[h]);
		if (k >= hl && !strncasecmp(a, hdrs[h], hl)) {
			put_n(o, a, hl);
			put_n(o, " ?", 2);
			return;
		}
	}
	for (dash = 0; dash < k && dash < 2 && a[dash] == '-'; dash++)
		;
	if (dash && k > dash) {
		const char *eq = memchr(a, '=', k);
		size_t nl = eq ? (size_t)(eq - a) : k;
		if (secret_name(a + dash, nl - dash)) {
			if (!eq) {
				*next_secret = 1;
				put_n(o, a, k);
			} else {
				put_n(o, a, nl + 1);
				put(o, '?');
			}
			return;
		}
	}
	/* user information of a URL anywhere in it, then PASSWORD '...' */
	n = 0;
	for (i = 0; i + 3 <= k; i++)
		if (!memcmp(a + i, "://", 3))
			break;
	if (i + 3 <= k) {
		size_t s = i;
		while (s > 0 && (isalnum((unsigned char)a[s - 1]) || a[s - 1] == '+' ||
				 a[s - 1] == '-' || a[s - 1] == '.'))
			s--;
		if (s < sizeof tmp) {
			memcpy(tmp, a, s);
			n = s + bt_redact_url(a + s, k - s, tmp + s, sizeof tmp - s,
					      flags & BT_RD_QUERY_STRINGS, &cut);
		}
	}
	if (!n) {
		n = k < sizeof tmp ? k : sizeof tmp;
		memcpy(tmp, a, n);
	}
	o->n += bt_redact_sql(tmp, n, o->p + o->n, o->cap - o->n, 0, &cut);
	if (cut)
		o->cut = 1;
}

size_t bt_redact_cmdline(char *s, size_t n, unsigned flags)
{
	char buf[512];
	struct out o = { buf, 0, sizeof buf, 0 };
	int next_secret = 0;
	size_t i = 0;

	if (n > sizeof buf)
		n = sizeof buf;
	while (i < n && !o.cut) {
		size_t e = i;
		while (e < n && s[e])
			e++;
		if (i) {
			if (flags & BT_RD_CMDLINE)
				break;
			put(&o, 0);
		}
		if (i)
			redact_arg(s + i, e - i, &o, &next_secret, flags);
		else
			put_n(&o, s, e);         /* the program itself */
		i = e + 1;
	}
	memcpy(s, buf, o.n);
	return o.n;
}

int bt_redact_parse(const char *spec, unsigned *flags, char *bad,
		    size_t badlen)
{
	unsigned f = 0;
	const char *p = spec ? spec : "";

	while (*p) {
		size_t k;
		while (*p == ',' || *p == ' ' || *p == '\t')
			p++;
		for (k = 0; p[k] && p[k] != ',' && p[k] != ' ' && p[k] != '\t'; k++)
			;
		if (!k)
			break;
#define WORD(w) (k == sizeof(w) - 1 && !strncasecmp(p, w, k))
		if (WORD("sql-literals"))
			f |= BT_RD_SQL_LITERALS;
		else if (WORD("query-strings"))
			f |= BT_RD_QUERY_STRINGS;
		else if (WORD("cmdline"))
			f |= BT_RD_CMDLINE;
		else if (WORD("all"))
			f |= BT_RD_ALL;
		else if (!WORD("none")) {
			if (bad)
				snprintf(bad, badlen, "%.*s", (int)k, p);
			*flags = BT_RD_ALL;
			return -EINVAL;
		}
#undef WORD
		p += k;
	}
	*flags = f;
	return 0;
}

int bt_redact_needed(const struct bt_attr *attr, unsigned nattr, unsigned flags)
{
	for (unsigned i = 0; i < nattr; i++)
		if (bt_redact_attr_needed(&attr[i], flags))
			return 1;
	return 0;
}

int bt_redact_attrs(struct bt_event *ev, char *buf, size_t cap,
		    unsigned flags)
{
	size_t used = 0;
	int changed = 0;

	for (unsigned i = 0; i < ev->nattr; i++) {
		struct bt_attr *a = &ev->attr[i];
		size_t k;
		int cut = 0;

		if (a->key == BT_AK_PARAMS) {
			/* hashes of bound values: with the literals hidden,
			 * so are they (a short value's hash can be guessed) */
			if ((flags & BT_RD_SQL_LITERALS) && a->len) {
				a->len = 0;
				changed = 1;
			}
			continue;
		}
		if (a->key == BT_AK_SQL)
			k = bt_redact_sql(a->val, a->len, buf + used, cap - used,
					  flags | (ev->proto == BT_PROTO_MYSQL ?
						   BT_RD_MYSQL : 0), &cut);
		else if (a->key == BT_AK_TARGET || a->key == BT_AK_FCGI_URI)
			k = bt_redact_url(a->val, a->len, buf + used, cap - used,
					  flags, &cut);
		else
			continue;
		if (cut)
			ev->flags |= BT_MF_TRUNC;
		if (k == a->len && !cut && !memcmp(buf + used, a->val, k))
			continue;                /* nothing to hide here */
		a->val = buf + used;
		a->len = (uint16_t)k;
		used += k;
		changed = 1;
	}
	return changed;
}

/* Kept out of line: the buffer costs stack only when a message has an
 * attribute to look at. */
__attribute__((noinline)) void bt_redact_emit(struct bt_event *ev)
{
	char buf[REDACT_BUF];

	bt_redact_attrs(ev, buf, sizeof buf, bt_conf.redact);
	bt_emit(ev);
}
