/*
 * grpc.c - the unary gRPC methods the user names (see grpc.h).
 *
 * The .proto reader is minimal: it reads tokens (identifiers with their
 * dots, numbers, strings, one-character punctuation; comments and
 * whitespace skipped), keeps the `package`, and in every top-level
 * `service NAME { ... }` reads each `rpc NAME ( [stream] TYPE ) returns
 * ( [stream] TYPE )` followed by `;` or a `{ ... }` block (options, any
 * depth).  Everything else (syntax, imports, options, messages, enums,
 * extensions) is skipped by balanced braces.  An rpc declaration of
 * another form is an error, never a guess.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc.h"

#define GRPC_PROTO_MAX (16u << 20)   /* bytes of a .proto read */
#define GRPC_NAME_MAX  512           /* bytes of a name kept */

enum { TK_END = 0, TK_ID, TK_STR, TK_PUNCT, TK_BAD };

struct lex {
	const char *s, *e, *name;
	unsigned line;
	int type;                 /* TK_* of the current token */
	const char *tok;          /* its text */
	size_t len;
	char *err;
	size_t errn;
};

static int lex_fail(struct lex *x, const char *why)
{
	snprintf(x->err, x->errn, "%s:%u: %s", x->name, x->line, why);
	return -EINVAL;
}

/* Skip whitespace and comments; -EINVAL at an unterminated comment. */
static int lex_space(struct lex *x)
{
	while (x->s < x->e) {
		char ch = *x->s;
		if (ch == '\n') {
			x->line++;
			x->s++;
		} else if (ch == ' ' || ch == '\t' || ch == '\r' ||
			   ch == '\f' || ch == '\v') {
			x->s++;
		} else if (ch == '/' && x->s + 1 < x->e && x->s[1] == '/') {
			while (x->s < x->e && *x->s != '\n')
				x->s++;
		} else if (ch == '/' && x->s + 1 < x->e && x->s[1] == '*') {
			x->s += 2;
			for (;;) {
				if (x->s + 1 >= x->e)
					return lex_fail(x, "unterminated comment");
				if (*x->s == '*' && x->s[1] == '/')
					break;
				if (*x->s == '\n')
					x->line++;
				x->s++;
			}
			x->s += 2;
		} else {
			break;
		}
	}
	return 0;
}

static int is_idch(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || ch == '_' || ch == '.';
}

/* The next token; -EINVAL on an unterminated string or comment. */
static int lex_next(struct lex *x)
{
	int r = lex_space(x);
	if (r < 0)
		return r;
	x->tok = x->s;
	x->len = 0;
	if (x->s >= x->e) {
		x->type = TK_END;
		return 0;
	}
	char ch = *x->s;
	if (is_idch(ch) || ch == '-' || ch == '+') {
		x->s++;
		while (x->s < x->e && is_idch(*x->s))
			x->s++;
		x->type = TK_ID;
	} else if (ch == '"' || ch == '\'') {
		x->s++;
		while (x->s < x->e && *x->s != ch) {
			if (*x->s == '\n')
				return lex_fail(x, "newline in a string");
			if (*x->s == '\\' && x->s + 1 < x->e)
				x->s++;
			x->s++;
		}
		if (x->s >= x->e)
			return lex_fail(x, "unterminated string");
		x->s++;
		x->type = TK_STR;
	} else {
		x->s++;
		x->type = TK_PUNCT;
	}
	x->len = (size_t)(x->s - x->tok);
	return 0;
}

static int tok_is(const struct lex *x, const char *w)
{
	size_t n = strlen(w);
	return x->len == n && memcmp(x->tok, w, n) == 0 &&
	       (x->type == TK_ID || x->type == TK_PUNCT);
}

/* Copy the current identifier into OUT (GRPC_NAME_MAX). */
static int tok_name(struct lex *x, char *out, const char *what)
{
	if (x->type != TK_ID || x->len >= GRPC_NAME_MAX)
		return lex_fail(x, what);
	memcpy(out, x->tok, x->len);
	out[x->len] = 0;
	return 0;
}

/* Past the block whose '{' is the current token, to its '}'. */
static int skip_block(struct lex *x)
{
	unsigned depth = 0;
	int r;

	do {
		if (tok_is(x, "{"))
			depth++;
		else if (tok_is(x, "}"))
			depth--;
		if (!depth)
			return 0;
		if ((r = lex_next(x)) < 0)
			return r;
	} while (x->type != TK_END);
	return lex_fail(x, "unbalanced braces");
}

/* Past a statement (to its ';', or past its block): the current token
 * is its first. */
static int skip_statement(struct lex *x)
{
	int r;

	while (x->type != TK_END) {
		if (tok_is(x, ";"))
			return 0;
		if (tok_is(x, "{"))
			return skip_block(x);
		if (tok_is(x, "}"))
			return lex_fail(x, "unexpected '}'");
		if ((r = lex_next(x)) < 0)
			return r;
	}
	return lex_fail(x, "unexpected end of file");
}

/* "( [stream] TYPE )" from the current '(' on: *STREAM set when the side
 * streams. */
static int rpc_side(struct lex *x, int *stream)
{
	char a[GRPC_NAME_MAX], b[GRPC_NAME_MAX];
	int r;

	if (!tok_is(x, "("))
		return lex_fail(x, "rpc: '(' expected");
	if ((r = lex_next(x)) < 0 || (r = tok_name(x, a, "rpc: a type expected")) < 0 ||
	    (r = lex_next(x)) < 0)
		return r;
	*stream = 0;
	if (x->type == TK_ID) {           /* "stream TYPE" */
		if (strcmp(a, "stream") != 0)
			return lex_fail(x, "rpc: ')' expected");
		if ((r = tok_name(x, b, "rpc: a type expected")) < 0 ||
		    (r = lex_next(x)) < 0)
			return r;
		*stream = 1;
	}
	if (!tok_is(x, ")"))
		return lex_fail(x, "rpc: ')' expected");
	return lex_next(x);
}

static int list_add(char ***list, int *n, const char *pkg, const char *svc,
		    const char *rpc)
{
	size_t len = strlen(pkg) + strlen(svc) + strlen(rpc) + 4;
	char *p = malloc(len);
	char **l = realloc(*list, (size_t)(*n + 1) * sizeof *l);

	if (!p || !l) {
		free(p);
		if (l)
			*list = l;
		return -ENOMEM;
	}
	snprintf(p, len, "/%s%s%s/%s", pkg, *pkg ? "." : "", svc, rpc);
	l[(*n)++] = p;
	*list = l;
	return 0;
}

/* The service body from its '{': its unary rpcs into LIST. */
static int service_body(struct lex *x, const char *pkg, const char *svc,
			char ***list, int *n, int *nall, int *nunary)
{
	char rpc[GRPC_NAME_MAX];
	int r, sin, sout;

	if ((r = lex_next(x)) < 0)
		return r;
	while (!tok_is(x, "}")) {
		if (x->type == TK_END)
			return lex_fail(x, "service: unexpected end of file");
		if (!tok_is(x, "rpc")) {          /* option ...; and others */
			if ((r = skip_statement(x)) < 0 || (r = lex_next(x)) < 0)
				return r;
			continue;
		}
		if ((r = lex_next(x)) < 0 ||
		    (r = tok_name(x, rpc, "rpc: a method name expected")) < 0 ||
		    (r = lex_next(x)) < 0 || (r = rpc_side(x, &sin)) < 0)
			return r;
		if (!tok_is(x, "returns"))
			return lex_fail(x, "rpc: 'returns' expected");
		if ((r = lex_next(x)) < 0 || (r = rpc_side(x, &sout)) < 0)
			return r;
		if (tok_is(x, "{")) {
			if ((r = skip_block(x)) < 0)
				return r;
		} else if (!tok_is(x, ";")) {
			return lex_fail(x, "rpc: ';' or '{' expected");
		}
		(*nall)++;
		if (!sin && !sout) {
			if ((r = list_add(list, n, pkg, svc, rpc)) < 0)
				return r;
			(*nunary)++;
		}
		if ((r = lex_next(x)) < 0)
			return r;
	}
	return 0;
}

int rc_grpc_proto_parse(const char *name, const char *s, size_t len,
			char ***list, int *n, int *nall, char *err, size_t errn)
{
	struct lex x = { s, s + len, name, 1, 0, NULL, 0, err, errn };
	char pkg[GRPC_NAME_MAX] = "", svc[GRPC_NAME_MAX];
	int r, nunary = 0, npkg = 0;

	*nall = 0;
	if ((r = lex_next(&x)) < 0)
		return r;
	while (x.type != TK_END) {
		if (tok_is(&x, "package")) {
			if (npkg++)
				return lex_fail(&x, "a second package");
			if ((r = lex_next(&x)) < 0 ||
			    (r = tok_name(&x, pkg, "package: a name expected")) < 0 ||
			    (r = lex_next(&x)) < 0)
				return r;
			if (!tok_is(&x, ";"))
				return lex_fail(&x, "package: ';' expected");
		} else if (tok_is(&x, "service")) {
			if ((r = lex_next(&x)) < 0 ||
			    (r = tok_name(&x, svc, "service: a name expected")) < 0 ||
			    (r = lex_next(&x)) < 0)
				return r;
			if (!tok_is(&x, "{"))
				return lex_fail(&x, "service: '{' expected");
			if ((r = service_body(&x, pkg, svc, list, n, nall,
					      &nunary)) < 0)
				return r;
		} else if ((r = skip_statement(&x)) < 0) {
			return r;
		}
		if ((r = lex_next(&x)) < 0)
			return r;
	}
	if (!*nall) {
		snprintf(err, errn, "%s: no rpc declaration in a service", name);
		return -EINVAL;
	}
	return nunary;
}

int rc_grpc_proto_read(const char *path, char ***list, int *n, int *nall,
		       char *err, size_t errn)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;
	int r;

	if (!f) {
		r = -errno;
		snprintf(err, errn, "%s: %s", path, strerror(-r));
		return r;
	}
	buf = malloc(GRPC_PROTO_MAX + 1);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	len = fread(buf, 1, GRPC_PROTO_MAX + 1, f);
	r = ferror(f) ? -EIO : 0;
	fclose(f);
	if (!r && len > GRPC_PROTO_MAX)
		r = -EFBIG;
	if (r < 0)
		snprintf(err, errn, "%s: %s", path, strerror(-r));
	else
		r = rc_grpc_proto_parse(path, buf, len, list, n, nall, err, errn);
	free(buf);
	return r;
}

int rc_grpc_pattern_check(const char *p, char *err, size_t errn)
{
	if (p[0] != '/' || !p[1]) {
		snprintf(err, errn, "--grpc-unary wants a gRPC method path "
			 "('/package.Service/Method', wildcards allowed: "
			 "'/package.Service/*'), not '%s'", p);
		return -EINVAL;
	}
	return 0;
}

int rc_grpc_unary_match(const char *const *pats, int n, const char *target)
{
	if (!target)
		return 0;
	for (int i = 0; i < n; i++)
		if (fnmatch(pats[i], target, 0) == 0)
			return 1;
	return 0;
}
