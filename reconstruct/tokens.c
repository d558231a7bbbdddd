/*
 * tokens.c - resolving an ambiguous request message by what it carries
 * (tokens.h; docs/reconstruct.md, "Certainty").
 *
 * A *value* is a distinctive piece of a message: a string or numeric
 * literal of SQL text, a segment of a URL path or the value of a query
 * parameter, a word of a line.  Values are compared by 64-bit hashes of
 * their bytes (URL values percent-decoded, SQL strings unquoted), so the
 * same id matches in a URL and in a query.  A value's *position* is where
 * it sits in its message's shape (the SQL text with its literals folded,
 * the URL's number of segments, first segment and query keys): a position
 * seen with two different values carries data; one always seen with the
 * same value is a constant of the program ('LIMIT 10', a flag '1') and
 * never decides.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "btrace/proto.h"
#include "db.h"
#include "span.h"
#include "scan.h"
#include "tokens.h"

#define TOK_MIN     3          /* shorter values never decide */
#define TOK_MAXQ    16         /* values of the ambiguous message used */
#define TOK_MAXV    32         /* values of one inbound message (more: it
				  cannot be told apart) */
#define TOK_MAXC    512        /* requests compared (more: uncertain) */
#define TOK_POS_MAX 65536      /* positions remembered */
#define TOK_VALMAX  256        /* bytes of a value hashed */
#define TOK_VARIED  1ull       /* a position seen with two values */
#define TOK_DONE    4096       /* answered server spans remembered */

static const char handoff_content[] = "handoff:content";
static const char ambiguous_content[] = "ambiguous:content";

struct cand;

struct rc_tokens {
	struct rc_map pos;      /* position -> first value's hash | 2, or
				   TOK_VARIED */
	/* while the logs grow (scan.c, rc_scan_more): the positions the
	 * merge asked about; pass 1 learning a second value for one of
	 * them changes what the merge was told */
	struct rc_map asked;
	/* server spans that ended with their reply, by span id modulo
	 * TOK_DONE: the id, the request, the process */
	uint64_t done_id[TOK_DONE], done_req[TOK_DONE], done_proc[TOK_DONE];
	struct cand *cands;     /* TOK_MAXC + 1, allocated at first use */
	struct rc_span *open[TOK_MAXC];
};

/* One value of a message. */
struct tok {
	uint64_t pos;           /* its position in the shape */
	uint64_t val;           /* hash of its bytes */
	uint32_t len;
};

/* A list of values being collected. */
struct toks {
	struct tok *v;
	unsigned n, max;
	unsigned over;          /* values that did not fit */
	uint64_t shape;         /* SQL: the shape of the text (params) */
};

void rc_tok_free(struct rc_ctx *c)
{
	if (!c->tokens)
		return;
	rc_map_free(&c->tokens->pos);
	rc_map_free(&c->tokens->asked);
	free(c->tokens->cands);
	free(c->tokens);
	c->tokens = NULL;
}

void rc_tok_server_done(struct rc_ctx *c, const struct rc_span *sp)
{
	unsigned i = (unsigned)(sp->id & (TOK_DONE - 1));

	if (sp->kind != RC_SK_SERVER || sp->end == RC_DB_NULL)
		return;
	/* from the first: an unowned message (tok_unowned) needs it */
	if (!c->tokens && !(c->tokens = calloc(1, sizeof *c->tokens)))
		return;
	struct rc_tokens *tk = c->tokens;
	tk->done_id[i] = sp->id;
	tk->done_req[i] = sp->req;
	tk->done_proc[i] = rc_key2(sp->host, sp->pid);
}

/* Did server span ID of request REQ in process (HOST, PID) end with its
 * reply?  0 also when it is no longer remembered. */
static int answered(const struct rc_ctx *c, uint64_t id, uint64_t req,
		    uint32_t host, uint32_t pid)
{
	const struct rc_tokens *tk = c->tokens;
	unsigned i = (unsigned)(id & (TOK_DONE - 1));

	return id && tk->done_id[i] == id && tk->done_req[i] == req &&
	       tk->done_proc[i] == rc_key2(host, pid);
}

/* The hash the shim gives bound parameters too (btrace/proto.h). */
static uint64_t val_hash(const char *p, size_t n)
{
	return bt_value_hash(p, n > TOK_VALMAX ? TOK_VALMAX : n);
}

static void toks_add_hash(struct toks *t, uint64_t pos, uint64_t val,
			  size_t n)
{
	if (t->n == t->max) {
		t->over++;
		return;
	}
	t->v[t->n].pos = pos;
	t->v[t->n].val = val;
	t->v[t->n].len = (uint32_t)n;
	t->n++;
}

static void toks_add(struct toks *t, uint64_t pos, const char *p, size_t n)
{
	toks_add_hash(t, pos, val_hash(p, n), n);
}

/* ---- SQL -------------------------------------------------------------- */

static int ident_char(int ch)
{
	return isalnum(ch) || ch == '_' || ch == '$';
}

/*
 * The literals of SQL text S (N bytes) into T, in order, their positions
 * from the shape (the text with literals as '?', identifiers and keywords
 * in lower case, white space and comments dropped).  BS: a backslash
 * escapes the next character in every string (MySQL; PostgreSQL only in
 * E'...').  Returns 1 if the text hides a value (a '?': a literal the
 * tracer redacted), else 0.
 */
static int sql_values(const char *s, size_t n, struct toks *t, int bs)
{
	uint64_t shape = 0x73716cull;
	char buf[TOK_VALMAX];
	int hidden = 0;
	size_t i = 0;
	unsigned first = t->n;

	while (i < n) {
		unsigned char ch = (unsigned char)s[i];
		if (isspace(ch)) {
			i++;
			continue;
		}
		if (ch == '-' && i + 1 < n && s[i + 1] == '-') {
			while (i < n && s[i] != '\n')
				i++;
			continue;
		}
		if (ch == '/' && i + 1 < n && s[i + 1] == '*') {
			i += 2;
			while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'))
				i++;
			i += 2;
			continue;
		}
		if (ch == '\'') {
			/* E'...' takes backslash escapes */
			int esc = bs || (i > 0 &&
				  (s[i - 1] == 'E' || s[i - 1] == 'e') &&
				  (i < 2 || !ident_char((unsigned char)s[i - 2])));
			size_t k = 0;
			i++;
			while (i < n) {
				if (esc && s[i] == '\\' && i + 1 < n) {
					if (k < sizeof buf)
						buf[k++] = s[i + 1];
					i += 2;
					continue;
				}
				if (s[i] == '\'') {
					if (i + 1 < n && s[i + 1] == '\'') {
						if (k < sizeof buf)
							buf[k++] = '\'';
						i += 2;
						continue;
					}
					break;
				}
				if (k < sizeof buf)
					buf[k++] = s[i];
				i++;
			}
			i++;
			shape = rc_hash64(shape, "'?'", 3);
			if (k == 1 && buf[0] == '?')
				hidden = 1;   /* a redacted literal */
			toks_add(t, 0, buf, k);
			continue;
		}
		if (ch == '$' && i + 1 < n && !isdigit((unsigned char)s[i + 1])) {
			/* $tag$ ... $tag$ */
			size_t j = i + 1;
			while (j < n && (isalnum((unsigned char)s[j]) || s[j] == '_'))
				j++;
			if (j < n && s[j] == '$') {
				size_t tl = j + 1 - i, b = j + 1, e = b;
				while (e + tl <= n && memcmp(s + e, s + i, tl))
					e++;
				if (e + tl > n)
					e = n;
				shape = rc_hash64(shape, "'?'", 3);
				toks_add(t, 0, s + b, e - b);
				i = e + tl;
				continue;
			}
		}
		if (ch == '"') {
			size_t j = i + 1;
			while (j < n && s[j] != '"')
				j++;
			shape = rc_hash64(shape, s + i, j - i);
			i = j + 1;
			continue;
		}
		if ((isdigit(ch) || (ch == '.' && i + 1 < n &&
				     isdigit((unsigned char)s[i + 1]))) &&
		    (i == 0 || !ident_char((unsigned char)s[i - 1]))) {
			size_t j = i;
			while (j < n && (isalnum((unsigned char)s[j]) ||
					 s[j] == '.' ||
					 ((s[j] == '+' || s[j] == '-') &&
					  (s[j - 1] == 'e' || s[j - 1] == 'E'))))
				j++;
			shape = rc_hash64(shape, "?", 1);
			toks_add(t, 0, s + i, j - i);
			i = j;
			continue;
		}
		if (ident_char(ch)) {
			size_t j = i, k = 0;
			while (j < n && ident_char((unsigned char)s[j])) {
				if (k < sizeof buf)
					buf[k++] = (char)tolower((unsigned char)s[j]);
				j++;
			}
			shape = rc_hash64(shape, buf, k);
			shape = rc_hash64(shape, " ", 1);
			i = j;
			continue;
		}
		if (ch == '?')
			hidden = 1;
		shape = rc_hash64(shape, s + i, 1);
		i++;
	}
	for (unsigned k = first; k < t->n; k++)
		t->v[k].pos = rc_mix64(shape ^ rc_mix64(k - first + 1));
	t->shape = shape;
	return hidden;
}

static int hexdigit(int ch)
{
	return ch >= '0' && ch <= '9' ? ch - '0' :
	       ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/*
 * The bound parameters of a PostgreSQL request (BT_AK_PARAMS: "I:HASH"
 * words, the hashes of values 3 bytes or longer, protocols/pgsql.c) into
 * T, a parameter's position its index in the shape of the SQL text that
 * sql_values just read.  A word that is not one is skipped.
 */
static void param_values(const char *s, size_t n, struct toks *t)
{
	size_t i = 0;

	while (i + 18 <= n) {
		int idx = s[i] - '0';
		uint64_t h = 0;
		int ok = idx >= 0 && idx <= 9 && s[i + 1] == ':';
		for (size_t j = 0; ok && j < 16; j++) {
			int d = hexdigit((unsigned char)s[i + 2 + j]);
			ok = d >= 0;
			h = h << 4 | (uint64_t)(d & 15);
		}
		if (ok)
			toks_add_hash(t, rc_mix64(t->shape ^
				      rc_mix64(0x706172616d00ull + (unsigned)idx)),
				      h, TOK_MIN);
		i += 19;           /* the word and its space */
	}
}

/* ---- URLs ------------------------------------------------------------- */

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = tolower(ch);
	return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* Percent-decode S (N bytes) into BUF ('+' is a space in a query). */
static size_t url_decode(const char *s, size_t n, char *buf, int query)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k < TOK_VALMAX; i++) {
		int hi, lo;
		if (s[i] == '%' && i + 2 < n && (hi = hexval(s[i + 1])) >= 0 &&
		    (lo = hexval(s[i + 2])) >= 0) {
			buf[k++] = (char)(hi << 4 | lo);
			i += 2;
		} else if (query && s[i] == '+') {
			buf[k++] = ' ';
		} else {
			buf[k++] = s[i];
		}
	}
	return k;
}

/*
 * The values of URL target S (N bytes) into T: its path segments and its
 * query values.  The shape is the number of segments, the first segment
 * and the query keys; a segment's position is its index, a query value's
 * its key.  Returns 1 if the target hides values (its query string cut
 * by the tracer: it ends with '?').
 */
static int url_values(const char *s, size_t n, struct toks *t)
{
	char buf[TOK_VALMAX];
	size_t i = 0, q, nseg = 0, k;
	uint64_t shape = 0x75726cull;

	if (n && s[n - 1] == '?')
		return 1;
	/* an absolute URL (a proxy's request line): from its path */
	if (n > 7 && (!memcmp(s, "http://", 7) || !memcmp(s, "https://", 8))) {
		i = s[4] == 's' ? 8 : 7;
		while (i < n && s[i] != '/' && s[i] != '?')
			i++;
	}
	q = i;
	while (q < n && s[q] != '?' && s[q] != '#')
		q++;
	/* the shape first: segments, the first one, the query keys */
	for (size_t j = i; j < q;) {
		while (j < q && s[j] == '/')
			j++;
		size_t e = j;
		while (e < q && s[e] != '/')
			e++;
		if (e > j) {
			if (!nseg)
				shape = rc_hash64(shape, s + j, e - j);
			nseg++;
		}
		j = e;
	}
	shape = rc_hash64(shape, &nseg, sizeof nseg);
	size_t end = q;
	while (end < n && s[end] != '#')
		end++;
	for (size_t j = q + 1; j < end;) {
		size_t e = j;
		while (e < end && s[e] != '&' && s[e] != ';')
			e++;
		size_t eq = j;
		while (eq < e && s[eq] != '=')
			eq++;
		shape = rc_hash64(shape, s + j, eq - j);
		shape = rc_hash64(shape, "&", 1);
		j = e + 1;
	}
	/* the values */
	nseg = 0;
	for (size_t j = i; j < q;) {
		while (j < q && s[j] == '/')
			j++;
		size_t e = j;
		while (e < q && s[e] != '/')
			e++;
		if (e > j) {
			k = url_decode(s + j, e - j, buf, 0);
			toks_add(t, rc_mix64(shape ^ rc_mix64(2 * nseg + 1)),
				 buf, k);
			nseg++;
		}
		j = e;
	}
	for (size_t j = q + 1; j < end;) {
		size_t e = j;
		while (e < end && s[e] != '&' && s[e] != ';')
			e++;
		size_t eq = j;
		while (eq < e && s[eq] != '=')
			eq++;
		if (eq < e) {
			uint64_t key = rc_hash64(shape, s + j, eq - j);
			k = url_decode(s + eq + 1, e - eq - 1, buf, 1);
			toks_add(t, rc_mix64(key ^ 0x71ull), buf, k);
		}
		j = e + 1;
	}
	return 0;
}

/* ---- lines ------------------------------------------------------------ */

/* The words of a line, after the first (its command), by index. */
static void line_values(const char *s, size_t n, struct toks *t)
{
	size_t i = 0, w = 0;
	uint64_t shape = 0x6c696eull;

	while (i < n) {
		while (i < n && isspace((unsigned char)s[i]))
			i++;
		size_t e = i;
		while (e < n && !isspace((unsigned char)s[e]))
			e++;
		if (e > i) {
			if (!w)
				shape = rc_hash64(shape, s + i, e - i);
			else
				toks_add(t, rc_mix64(shape ^ rc_mix64(w)),
					 s + i, e - i);
			w++;
		}
		i = e;
	}
}

/*
 * The values of a message of protocol PROTO whose target (or SQL text,
 * or line) is S.  Returns 1 if some are hidden (or the protocol's are not
 * known), else 0.
 */
static int target_values(unsigned proto, const char *s, size_t n,
			 struct toks *t)
{
	if (!s)
		return 1;
	switch (proto) {
	case BT_PROTO_HTTP:
	case BT_PROTO_HTTP2:
	case BT_PROTO_FASTCGI:
		return url_values(s, n, t);
	case BT_PROTO_PGSQL:
		return sql_values(s, n, t, 0);
	case BT_PROTO_MYSQL:
		return sql_values(s, n, t, 1);
	case BT_PROTO_LINE:
	case BT_PROTO_REDIS:          /* "GET user:42": the key */
		line_values(s, n, t);
		return 0;
	default:
		return 1;
	}
}

int rc_tok_inbound_whole(const struct bt_event *ev)
{
	const struct bt_attr *b;

	if (ev->flags & BT_MF_TRUNC)
		return 0;
	/* a body (FastCGI: its STDIN) may carry what the target does not */
	b = rc_attr(ev, BT_AK_BODY_LEN);
	if (b && !(b->len == 1 && b->val[0] == '0'))
		return 0;
	switch (ev->proto) {
	case BT_PROTO_HTTP:
	case BT_PROTO_FASTCGI:
	case BT_PROTO_PGSQL:
	case BT_PROTO_MYSQL:
	case BT_PROTO_LINE:
	case BT_PROTO_REDIS:
		return 1;
	default:
		return 0;
	}
}

/* ---- positions -------------------------------------------------------- */

/*
 * Note value V at its position; is that position known to carry data (seen
 * with another value before)?  Positions beyond TOK_POS_MAX are not
 * remembered, so their values never decide.
 */
static int pos_note(struct rc_ctx *c, const struct tok *v, size_t room,
		    int ask)
{
	struct rc_tokens *tk = c->tokens;
	uint64_t h = v->val | 2, old;
	int merge = room == TOK_POS_MAX;

	if (ask && c->p1 && c->merge)
		rc_map_put(&tk->asked, v->pos, 1);
	if (!rc_map_get(&tk->pos, v->pos, &old)) {
		if (tk->pos.n < room)
			rc_map_put(&tk->pos, v->pos, h);
		return 0;
	}
	if (old == TOK_VARIED)
		return 1;
	if (old == h)
		return 0;
	rc_map_put(&tk->pos, v->pos, TOK_VARIED);
	if (!merge && rc_map_get(&tk->asked, v->pos, NULL))
		rc_scan_changed(c, "a value the merge compared requests by varies in the messages read now");
	return 1;
}

/* ASK: the answer may decide something (while the logs grow, pass 1
 * must not learn otherwise later: rc_scan_more). */
static int pos_varied(struct rc_ctx *c, const struct tok *v, int ask)
{
	return pos_note(c, v, TOK_POS_MAX, ask);
}

/* The text of message EV that its values come from. */
static const struct bt_attr *msg_text(const struct bt_event *ev)
{
	switch (ev->proto) {
	case BT_PROTO_HTTP:
	case BT_PROTO_HTTP2:
		return rc_attr(ev, BT_AK_TARGET);
	case BT_PROTO_FASTCGI: {
		const struct bt_attr *a = rc_attr(ev, BT_AK_FCGI_URI);
		return a ? a : rc_attr(ev, BT_AK_FCGI_SCRIPT);
	}
	case BT_PROTO_PGSQL:
	case BT_PROTO_MYSQL:
		return rc_attr(ev, BT_AK_SQL);
	case BT_PROTO_LINE:
		return rc_attr(ev, BT_AK_LINE);
	case BT_PROTO_REDIS:
		return rc_attr(ev, BT_AK_TARGET);
	default:
		return NULL;
	}
}

/*
 * The values of outbound request message EV whose text is A into T: its
 * target's (target_values) and, for PostgreSQL, its bound parameters'.
 * 1 when some are hidden.
 */
static int msg_values(const struct bt_event *ev, const struct bt_attr *a,
		      struct toks *t)
{
	const struct bt_attr *p;

	if (target_values(ev->proto, a->val, a->len, t))
		return 1;
	if (ev->proto == BT_PROTO_PGSQL && (p = rc_attr(ev, BT_AK_PARAMS)))
		param_values(p->val, p->len, t);
	return 0;
}

/*
 * Pass 1 (scan.c) shows every outbound request message before any is
 * resolved: what each position carries over the whole run is known when
 * the first message of a shape must be decided (an event loop's first
 * burst of requests: at concurrency N, the first N were all uncertain
 * when positions were learnt only as pass 2 went).  A constant stays a
 * constant however much of the run is seen.  Half of the positions'
 * room is left for pass 2.
 */
void rc_tok_learn(struct rc_ctx *c, const struct bt_event *ev)
{
	struct tok v[TOK_MAXQ];
	struct toks t = { v, 0, TOK_MAXQ, 0, 0 };
	const struct bt_attr *a;

	if (ev->kind != BT_MK_REQUEST || ev->dir != BT_DIR_OUT ||
	    (ev->flags & BT_MF_TRUNC) || !(a = msg_text(ev)))
		return;
	if (!c->tokens && !(c->tokens = calloc(1, sizeof *c->tokens)))
		return;
	if (c->tokens->pos.n >= TOK_POS_MAX / 2) {
		/* learnt no more here: once the logs grew, at another
		 * point than a pass at once over them */
		rc_scan_changed(c, "too many positions of values to learn more from the requests' messages");
		return;
	}
	if (msg_values(ev, a, &t))
		return;
	for (unsigned i = 0; i < t.n; i++)
		pos_note(c, &v[i], TOK_POS_MAX / 2, 0);
}

/* ---- the decision ----------------------------------------------------- */

/* A candidate owner and the values of what it received here. */
struct cand {
	const struct rc_span *sp;   /* its server span here (NULL: none) */
	uint64_t req;
	struct tok v[TOK_MAXV];
	struct toks t;
	int hidden;
};

static void cand_fill(struct cand *k, const struct rc_span *sp, uint64_t req)
{
	k->sp = sp;
	k->req = req;
	k->t.v = k->v;
	k->t.n = k->t.over = 0;
	k->t.max = TOK_MAXV;
	k->hidden = 0;
	if (!sp)
		return;            /* no request: it received nothing */
	if (sp->tok_partial)
		k->hidden = 1;
	else
		k->hidden = target_values(sp->proto, sp->target,
					  sp->target ? strlen(sp->target) : 0,
					  &k->t) || k->t.over;
	if (!k->hidden && sp->body_params) {
		param_values(sp->body_params, strlen(sp->body_params), &k->t);
		k->hidden = k->t.over;
	}
}

static int cand_has(const struct cand *k, uint64_t val)
{
	for (unsigned i = 0; i < k->t.n; i++)
		if (k->t.v[i].val == val && k->t.v[i].len >= TOK_MIN)
			return 1;
	return 0;
}

/* Does K's inbound carry one of the usable values of Q? */
static int cand_shares(const struct cand *k, const struct tok *q,
		       const uint8_t *usable, unsigned nq)
{
	for (unsigned i = 0; i < nq; i++)
		if (usable[i] && cand_has(k, q[i].val))
			return 1;
	return 0;
}

/*
 * The one candidate whose inbound values share a value with Q that no
 * other candidate's carry, if every such value points to it; -1 if none
 * does, or values point to several.
 */
static int decide(const struct cand *k, unsigned nk, const struct tok *q,
		  const uint8_t *usable, unsigned nq)
{
	int owner = -1;

	for (unsigned i = 0; i < nq; i++) {
		if (!usable[i])
			continue;
		int who = -1, n = 0;
		for (unsigned j = 0; j < nk; j++) {
			if (!cand_has(&k[j], q[i].val))
				continue;
			if (who >= 0 && k[who].req == k[j].req)
				continue;  /* one request, two spans */
			who = (int)j;
			n++;
		}
		if (n != 1)
			continue;          /* nobody's, or common: no say */
		if (owner >= 0 && k[owner].req != k[who].req)
			return -1;
		owner = who;
	}
	return owner;
}

/*
 * Undecided: every open request whose received values share one of the
 * message's that is not parked (the detector would not list it) may own
 * it too: it is listed among the candidates ('ambiguous:content').
 * UNOWNED: those that may own it are listed by rc_span_sent already.
 */
static void mark_matches(struct rc_ctx *c, const struct rc_span *sp,
			 const struct cand *k, unsigned nk, const struct tok *q,
			 const uint8_t *usable, unsigned nq, int unowned)
{
	for (unsigned j = 1; j < nk; j++)
		if (!k[j].sp->parked && !k[j].hidden &&
		    !(unowned && rc_span_may_own(c, k[j].sp)) &&
		    cand_shares(&k[j], q, usable, nq))
			rc_db_candidate(c, sp->id, k[j].req, 0,
					ambiguous_content);
}

/* Move SP to the request of its server span PAR, under PAR (NULL: keep).
 * Also when PAR's request is SP's already: the rules may have hung SP
 * under a span that is not its request's here. */
static void span_move(struct rc_ctx *c, struct rc_span *sp,
		      const struct rc_span *par)
{
	if (!par)
		return;
	if (par->req == sp->req) {
		sp->parent = par->id;
		return;
	}
	if (sp->is_root)
		rc_span_unroot(c, sp);
	sp->req = par->req;
	sp->parent = par->id;
	sp->client_root = par->client_root;
}

/*
 * What the request the rules gave SP (its fragment's) received in SP's
 * process: *PAR its open server span there, or NULL when it received
 * nothing that can still send: SP starts a request of its own (rule 5),
 * or that request was answered (its server span here ended with its
 * reply, or its root span ended): it has no work left that sends requests
 * (the premise of the parked detector).  -1 when it cannot be known (its
 * server span here is not found).
 */
static int fragment_inbound(struct rc_ctx *c, const struct rc_span *sp,
			    const struct rc_span **par)
{
	const struct rc_span *p;

	*par = NULL;
	if (sp->is_root && sp->client_root)
		return 0;
	p = rc_span_srv(c, sp->parent);
	if (p && p->host == sp->host && p->pid == sp->pid && p->req == sp->req) {
		*par = p;
		return 0;
	}
	if (answered(c, sp->parent, sp->req, sp->host, sp->pid))
		return 0;
	p = rc_span_root_of(c, sp->req);
	if (!p)
		return 0;          /* over */
	if (p->kind != RC_SK_SERVER || p->host != sp->host ||
	    p->pid != sp->pid || p->req != sp->req)
		return -1;
	*par = p;
	return 0;
}

/*
 * Is SP unowned: its fragment's request received nothing that can still
 * send (answered here, over, or none: rule 5), while other requests are
 * open in its process that may own it (rc_span_may_own)?  Then SP is
 * ambiguous between them (and, for none, a request of its own), as if
 * they were parked: the JDK's HttpClient sends a handler's call from a
 * selector thread whose designation is the request whose reply it read
 * last, while the handler waits on a condition variable.
 */
static int tok_unowned(struct rc_ctx *c, const struct rc_span *sp)
{
	const struct rc_span *par;

	if (fragment_inbound(c, sp, &par) < 0 || par)
		return 0;
	return rc_span_owners_in(c, sp->host, sp->pid, sp->req, NULL, 0) > 0;
}

int rc_tok_resolve(struct rc_ctx *c, struct rc_span *sp,
		   const struct bt_event *ev, int begun)
{
	struct tok qv[TOK_MAXQ];
	struct toks q = { qv, 0, TOK_MAXQ, 0, 0 };
	uint8_t usable[TOK_MAXQ];
	unsigned nusable = 0;

	if (!c->tokens && !(c->tokens = calloc(1, sizeof *c->tokens)))
		return 0;
	int amb = sp->unowned = (uint8_t)tok_unowned(c, sp);
	/* a thread's first work since its creation: its creator's request
	 * may not be the one it works for (span.c, sent_inherited) */
	int inh = sp->inherited &&
		  rc_span_owners_in(c, sp->host, sp->pid, sp->req, NULL, 0) > 0;
	const struct bt_attr *a = msg_text(ev);
	if (!a || msg_values(ev, a, &q))
		return 0;          /* nothing to learn, nothing to decide */
	/* (the answers decide only past the checks below) */
	int ask = !begun && !(ev->flags & BT_MF_TRUNC) &&
		  (c->st.parks || amb || inh);
	for (unsigned i = 0; i < q.n; i++) {
		usable[i] = (uint8_t)(pos_varied(c, &qv[i], ask) &&
				      qv[i].len >= TOK_MIN);
		nusable += usable[i];
	}
	if (!nusable || begun || (ev->flags & BT_MF_TRUNC))
		return 0;

	/*
	 * A message sent while requests are parked in its process is
	 * ambiguous.  It is compared with what every request open in the
	 * process received, not only the parked ones: a value unique among
	 * them all is a stronger sign, and a request whose hand-off the
	 * detector has not seen yet (its fragment still open in another
	 * thread) is not told apart from the owner by its absence.  Once
	 * requests have been parked in the run, a message sent while none is
	 * is looked at too when what it carries is not in what its
	 * fragment's request received: content that points elsewhere is a
	 * hand-off the detector missed.
	 */
	struct rc_tokens *tk = c->tokens;
	if (!c->st.parks && !amb && !inh)
		return 0;
	uint32_t np = rc_span_parked_in(c, sp->host, sp->pid, sp->req, NULL, 0);
	if (!tk->cands && !(tk->cands = malloc((TOK_MAXC + 1) *
					       sizeof *tk->cands)))
		return 0;
	struct cand *k = tk->cands;
	const struct rc_span *par = NULL;
	int unknown = fragment_inbound(c, sp, &par) < 0;
	cand_fill(&k[0], par, sp->req);
	if (unknown)
		k[0].hidden = 1;  /* it may carry anything: never decides */
	if (!np && !inh && ((k[0].hidden && !unknown) ||
			    cand_shares(&k[0], qv, usable, q.n)))
		return 0;         /* nothing says the rules are wrong */
	uint32_t no = rc_span_open_in(c, sp->host, sp->pid, sp->req, tk->open,
				      TOK_MAXC);
	if (no > TOK_MAXC)
		return 0;
	int hidden = k[0].hidden, other = 0;
	for (uint32_t i = 0; i < no; i++) {
		cand_fill(&k[i + 1], tk->open[i], tk->open[i]->req);
		hidden |= k[i + 1].hidden;
		other |= !k[i + 1].hidden &&
			 cand_shares(&k[i + 1], qv, usable, q.n);
	}
	if (!np && !amb && !inh && !other)
		return 0;
	int owner = hidden ? -1 : decide(k, no + 1, qv, usable, q.n);
	if (owner < 0) {
		if (!np && !amb && !inh) {
			/* not parked, but not its fragment's either */
			sp->certainty = RC_CT_UNCERTAIN;
			sp->reason = ambiguous_content;
			rc_db_candidate(c, sp->id, sp->req, 1, sp->reason);
			c->st.ambiguous_spans++;
		}
		mark_matches(c, sp, k, no + 1, qv, usable, q.n, amb || inh);
		return 0;
	}
	span_move(c, sp, k[owner].sp);
	sp->certainty = RC_CT_RESOLVED;
	sp->reason = handoff_content;
	c->st.ambiguous_spans++;
	c->st.content_resolved++;
	return 1;
}

/*
 * The values of a bound-parameters attribute S (N bytes, BT_AK_PARAMS) as
 * resolving reads them: their hashes into OUT, at most MAX.  For the fuzz
 * target.
 */
int rc_tok_param_values(const char *s, size_t n, uint64_t *out, unsigned max)
{
	struct tok v[64];
	struct toks t = { v, 0, max < 64 ? max : 64, 0, 0 };

	param_values(s, n, &t);
	for (unsigned i = 0; i < t.n; i++)
		out[i] = v[i].val;
	return (int)t.n;
}

/*
 * The values of target S (N bytes) of a protocol PROTO message as
 * resolving sees them: their hashes into OUT, at most MAX (the rest are
 * dropped, as in resolving).  Returns how many, or -1 when the target
 * hides values (a redacted literal, a cut query string) or PROTO has no
 * values.  For the fuzz target (fuzz/fuzz_tokens.c) and tests.
 */
int rc_tok_values(unsigned proto, const char *s, size_t n, uint64_t *out,
		  unsigned max)
{
	struct tok v[64];
	struct toks t = { v, 0, max < 64 ? max : 64, 0, 0 };

	if (target_values(proto, s, n, &t))
		return -1;
	for (unsigned i = 0; i < t.n; i++)
		out[i] = v[i].val;
	return (int)t.n;
}
