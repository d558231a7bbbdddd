/*
 * span.c - spans and requests (see span.h).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "btrace/proto.h"
#include "db.h"
#include "grpc.h"
#include "span.h"
#include "tokens.h"

struct rc_spans {
	struct rc_map   roots;   /* open request id -> its root span */
	struct rc_map   srv;     /* open server span id -> the span */
	struct rc_span *pool;    /* free list */
	struct rc_span **parked; /* parked server spans, any order */
	uint32_t nparked, capparked;
	uint64_t next_req, next_span;
	/* a window pass (rc_options.rows_from_ns): the requests whose root
	 * has ended and whose rows are left out, a bit per request id */
	struct rc_bits skip_done;
	uint8_t  unary_gate;     /* rc_span_unary_gate */
	uint8_t  unary_hit;      /* the gate left a call out */
};

static const char ambiguous_answered[] = "ambiguous:answered";
static const char ambiguous_inherited[] = "ambiguous:inherited";

static const char *const park_reason[] = {
	[RC_PARK_WAIT] = "ambiguous:parked",
	[RC_PARK_READAHEAD] = "readahead",
	[RC_PARK_BATCHED] = "ambiguous:batched",
};

/* Names of the protocols whose processor is not in this build. */
static const char *const proto_names[BT_PROTO_MAX] = {
	[BT_PROTO_NONE] = "none", [BT_PROTO_LINE] = "line",
	[BT_PROTO_ONESHOT] = "oneshot", [BT_PROTO_HTTP] = "http",
	[BT_PROTO_FASTCGI] = "fastcgi", [BT_PROTO_PGSQL] = "postgresql",
	[BT_PROTO_DNS] = "dns", [BT_PROTO_REDIS] = "redis",
	[BT_PROTO_MYSQL] = "mysql", [BT_PROTO_HTTP2] = "http2",
};

const char *rc_proto_name(unsigned p)
{
	if (p >= BT_PROTO_MAX)
		return "unknown";
	/* The name the configuration rules use for it. */
	if (bt_protocols[p])
		return bt_protocols[p]->name;
	return proto_names[p];
}

int rc_span_init(struct rc_ctx *c)
{
	c->spans = calloc(1, sizeof *c->spans);
	return c->spans ? 0 : -ENOMEM;
}

void rc_span_free(struct rc_ctx *c)
{
	struct rc_spans *m = c->spans;
	if (!m)
		return;
	while (m->pool) {
		struct rc_span *sp = m->pool;
		m->pool = sp->next;
		free(sp);
	}
	rc_map_free(&m->roots);
	rc_map_free(&m->srv);
	free(m->parked);
	rc_bits_free(&m->skip_done);
	free(m);
	c->spans = NULL;
}

const struct bt_attr *rc_attr(const struct bt_event *ev, unsigned key)
{
	for (unsigned i = 0; i < ev->nattr; i++)
		if (ev->attr[i].key == key && ev->attr[i].val)
			return &ev->attr[i];
	return NULL;
}

char *rc_strndup(const char *s, size_t n)
{
	char *p = malloc(n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = 0;
	}
	return p;
}

static char *attr_dup(const struct bt_event *ev, unsigned key)
{
	const struct bt_attr *a = rc_attr(ev, key);
	return a ? rc_strndup(a->val, a->len) : NULL;
}

int rc_span_live(struct rc_ctx *c, const struct rc_desig *d)
{
	if (!d->req)
		return 0;
	if (d->client_root && !rc_map_get(&c->spans->roots, d->req, NULL))
		return 0;
	return 1;
}

struct rc_span *rc_span_new(struct rc_ctx *c, uint8_t kind, uint8_t proto,
			    uint64_t req, uint64_t parent,
			    const struct rc_image *im, uint32_t tid, int64_t t,
			    uint64_t channel_id)
{
	struct rc_spans *m = c->spans;
	struct rc_span *sp = m->pool;

	if (sp)
		m->pool = sp->next;
	else if (!(sp = malloc(sizeof *sp)))
		return NULL;
	memset(sp, 0, sizeof *sp);
	sp->id = ++m->next_span;
	sp->req = req;
	sp->parent = parent;
	sp->kind = kind;
	sp->proto = proto;
	sp->start = t;
	sp->end = RC_DB_NULL;
	sp->status = RC_DB_NULL;
	sp->dom = im->domain;
	sp->host = im->host;
	sp->pid = im->pid;
	sp->tid = tid ? tid : im->pid;
	sp->process_id = im->run ? im->run->process_id : 0;
	sp->channel_id = channel_id;
	sp->exe = im->exe;
	if (kind == RC_SK_SERVER &&
	    rc_map_put(&m->srv, sp->id, (uint64_t)(uintptr_t)sp) == 0)
		sp->srv_listed = 1;
	return sp;
}

struct rc_span *rc_span_srv(struct rc_ctx *c, uint64_t span)
{
	return span ? rc_map_getp(&c->spans->srv, span) : NULL;
}

uint64_t rc_span_last_id(const struct rc_ctx *c)
{
	return c->spans->next_span;
}

struct rc_span *rc_span_srv_fill(struct rc_ctx *c, uint64_t span,
				 uint64_t *id, struct rc_span **sp)
{
	/* an id not given yet is not cached: its span may come */
	*id = span <= rc_span_last_id(c) ? span : 0;
	return *sp = rc_span_srv(c, span);
}

uint32_t rc_span_nparked(const struct rc_ctx *c)
{
	return c->spans->nparked;
}

void rc_span_park(struct rc_ctx *c, struct rc_span *sp, uint8_t why)
{
	struct rc_spans *m = c->spans;

	if (sp->parked)
		return;
	if (m->nparked == m->capparked) {
		uint32_t cap = m->capparked ? 2 * m->capparked : 16;
		struct rc_span **v = realloc(m->parked, cap * sizeof *v);
		if (!v)
			return;
		m->parked = v;
		m->capparked = cap;
	}
	m->parked[m->nparked++] = sp;
	sp->parked = why;
	c->st.parks++;
}

void rc_span_unpark(struct rc_ctx *c, struct rc_span *sp)
{
	struct rc_spans *m = c->spans;

	if (!sp->parked)
		return;
	sp->parked = RC_PARK_NONE;
	for (uint32_t i = 0; i < m->nparked; i++)
		if (m->parked[i] == sp) {
			m->parked[i] = m->parked[--m->nparked];
			return;
		}
}

void rc_span_unary_gate(struct rc_ctx *c, int on)
{
	struct rc_spans *m = c->spans;

	if (!on && m->unary_hit)
		c->st.grpc_unary_excluded++;
	m->unary_hit = 0;
	m->unary_gate = (uint8_t)!!on;
}

/*
 * Q is a call of a method named unary whose body the server has not read
 * a frame of: its handler, which takes the whole request message, cannot
 * have started, so Q owns nothing its process sends (while the gate is
 * open).
 */
static int unstarted(const struct rc_ctx *c, const struct rc_span *q)
{
	if (!q->unary || q->body_seen || !c->spans->unary_gate)
		return 0;
	c->spans->unary_hit = 1;
	return 1;
}

/* The server spans of process HOST/PID, other than request REQ's, that
 * OK accepts: into OUT (at most MAX); returns how many there are. */
static uint32_t spans_in(struct rc_ctx *c, uint32_t host, uint32_t pid,
			 uint64_t req,
			 int (*ok)(const struct rc_ctx *, const struct rc_span *),
			 struct rc_span **out, uint32_t max)
{
	const struct rc_map *srv = &c->spans->srv;
	uint32_t n = 0;

	for (size_t i = 0; i < srv->cap; i++) {
		if (!srv->used[i])
			continue;
		struct rc_span *q = (struct rc_span *)(uintptr_t)srv->vals[i];
		if (q->host != host || q->pid != pid || q->req == req ||
		    !ok(c, q))
			continue;
		if (n < max)
			out[n] = q;
		n++;
	}
	return n;
}

static int span_open(const struct rc_ctx *c, const struct rc_span *q)
{
	return q->req && q->end == RC_DB_NULL && !unstarted(c, q);
}

uint32_t rc_span_open_in(struct rc_ctx *c, uint32_t host, uint32_t pid,
			 uint64_t req, struct rc_span **out, uint32_t max)
{
	return spans_in(c, host, pid, req, span_open, out, max);
}

int rc_span_may_own(const struct rc_ctx *c, const struct rc_span *q)
{
	return q->kind == RC_SK_SERVER && q->req && q->end == RC_DB_NULL &&
	       !q->pending && !q->answering && !q->ncalls && !unstarted(c, q);
}

uint32_t rc_span_owners_in(struct rc_ctx *c, uint32_t host, uint32_t pid,
			   uint64_t req, struct rc_span **out, uint32_t max)
{
	return spans_in(c, host, pid, req, rc_span_may_own, out, max);
}

uint32_t rc_span_parked_in(struct rc_ctx *c, uint32_t host, uint32_t pid,
			   uint64_t req, struct rc_span **out, uint32_t max)
{
	struct rc_spans *m = c->spans;
	uint32_t n = 0;

	for (uint32_t i = 0; i < m->nparked; i++) {
		struct rc_span *q = m->parked[i];
		if (q->host != host || q->pid != pid || q->req == req ||
		    unstarted(c, q))
			continue;
		if (n < max)
			out[n] = q;
		n++;
	}
	return n;
}

void rc_span_unpark_req(struct rc_ctx *c, uint32_t host, uint32_t pid,
			uint64_t req)
{
	struct rc_spans *m = c->spans;

	for (uint32_t i = m->nparked; i-- > 0;) {
		struct rc_span *q = m->parked[i];
		/* a batch stays parked while a thread works for it */
		if (q->req == req && q->host == host && q->pid == pid &&
		    q->parked != RC_PARK_BATCHED)
			rc_span_unpark(c, q);
	}
}

/*
 * Every other request open in SP's process that may own it (read whole,
 * not being answered, no call awaiting a reply, not parked: those are
 * listed as parked) is a candidate, for REASON.  The number listed.
 */
static uint32_t owners_listed(struct rc_ctx *c, const struct rc_span *sp,
			      const char *reason)
{
	const struct rc_map *srv = &c->spans->srv;
	uint32_t n = 0;

	for (size_t i = 0; i < srv->cap; i++) {
		if (!srv->used[i])
			continue;
		struct rc_span *q = (struct rc_span *)(uintptr_t)srv->vals[i];
		if (q->host != sp->host || q->pid != sp->pid ||
		    q->req == sp->req || q->parked || !rc_span_may_own(c, q))
			continue;
		rc_db_candidate(c, sp->id, q->req, 0, reason);
		n++;
	}
	return n;
}

/*
 * SP is unowned (tokens.c): its fragment's request was answered here, or
 * it works for none, so the requests open in its process that may own it
 * are its candidates ('ambiguous:answered'); returns how many.
 */
static uint32_t sent_unowned(struct rc_ctx *c, const struct rc_span *sp)
{
	return sp->unowned ? owners_listed(c, sp, ambiguous_answered) : 0;
}

/*
 * SP was sent by a thread that has read no input since it was created, so
 * its request is the creator's (rule 3): a pool thread started while its
 * creator worked for one request may run another's job first, handed over
 * in memory (docs/reconstruct.md, "Inherited designations").
 */
static uint32_t sent_inherited(struct rc_ctx *c, const struct rc_span *sp)
{
	return sp->inherited ? owners_listed(c, sp, ambiguous_inherited) : 0;
}

void rc_span_sent(struct rc_ctx *c, struct rc_span *sp)
{
	struct rc_spans *m = c->spans;
	struct rc_span *par = rc_span_srv(c, sp->parent);
	uint32_t n = 0, batched = 0;

	if (par && par->host == sp->host && par->pid == sp->pid) {
		par->ncalls++;
		sp->call = 1;
		if (par->caller && par->caller != sp->tid)
			par->many_callers = 1;
		par->caller = sp->tid;
	}
	if (sp->certainty == RC_CT_RESOLVED)
		return;           /* a sound rule placed it (tokens.c) */
	for (uint32_t i = 0; i < m->nparked; i++) {
		struct rc_span *q = m->parked[i];
		if (q->host != sp->host || q->pid != sp->pid ||
		    q->req == sp->req || unstarted(c, q))
			continue;
		rc_db_candidate(c, sp->id, q->req, 0, park_reason[q->parked]);
		batched |= q->parked == RC_PARK_BATCHED;
		n++;
	}
	uint32_t nparked = n, nunowned = sent_unowned(c, sp);
	n += nunowned;
	if (!nunowned)
		n += sent_inherited(c, sp);
	if (!n)
		return;
	sp->certainty = RC_CT_UNCERTAIN;
	sp->reason = batched ? park_reason[RC_PARK_BATCHED] :
		     nparked ? park_reason[RC_PARK_WAIT] :
		     nunowned ? ambiguous_answered : ambiguous_inherited;
	rc_db_candidate(c, sp->id, sp->req, 1, sp->reason);
	c->st.ambiguous_spans++;
}

uint32_t rc_span_file_sent(struct rc_ctx *c, uint32_t host, uint32_t pid,
			   uint64_t req)
{
	struct rc_spans *m = c->spans;
	uint32_t n = 0;

	for (uint32_t i = 0; i < m->nparked; i++) {
		struct rc_span *q = m->parked[i];
		if (q->host != host || q->pid != pid || q->req == req)
			continue;
		rc_db_candidate(c, 0, q->req, 0, park_reason[q->parked]);
		n++;
	}
	if (n && req)
		rc_db_candidate(c, 0, req, 1, park_reason[RC_PARK_BATCHED]);
	if (n)
		c->st.ambiguous_files++;
	return n;
}

/* SP ends or is dropped: it is no longer open, parked or a call. */
static void span_gone(struct rc_ctx *c, struct rc_span *sp)
{
	struct rc_spans *m = c->spans;

	if (sp->kind == RC_SK_SERVER) {
		rc_span_unpark(c, sp);
		rc_map_del(&m->srv, sp->id);
		sp->srv_listed = 0;
	} else if (sp->call) {
		struct rc_span *par = rc_span_srv(c, sp->parent);
		if (par && par->ncalls)
			par->ncalls--;
		sp->call = 0;
	}
}

struct rc_span *rc_span_root_of(struct rc_ctx *c, uint64_t req)
{
	return req ? rc_map_getp(&c->spans->roots, req) : NULL;
}

/* Domain D's correction in the pass before (rc_options.rows_dom), or the
 * largest of them in magnitude for a domain it did not have. */
static int64_t rows_corr(struct rc_ctx *c, struct rc_domain *d)
{
	const struct rc_options *o = c->opt;
	if (d->rows_corr_set)
		return d->rows_corr;
	int64_t big = 0;
	int found = 0;
	for (size_t i = 0; i < o->nrows_dom; i++) {
		int64_t v = o->rows_corr[i];
		if (!strcmp(o->rows_dom[i], d->label)) {
			d->rows_corr = v;
			found = 1;
		}
		if (v < 0)
			v = -v;
		if (v > big)
			big = v;
	}
	if (!found)
		d->rows_corr = big;
	d->rows_corr_set = 1;
	return d->rows_corr;
}

int rc_rows_before(struct rc_ctx *c, uint32_t dom, int64_t t)
{
	return c->opt->rows_from_ns && dom < c->ndoms &&
	       t + rows_corr(c, &c->doms[dom]) < c->opt->rows_from_ns;
}

/* Is T (provisional time of domain DOM) before the rows' bound?  If so
 * it is kept as the domain's latest left out. */
static int skip_judge(struct rc_ctx *c, uint32_t dom, int64_t t)
{
	/* The times are provisional (a domain's correction comes at the
	 * end): T is judged with the correction of the pass before, the
	 * latest T left out is kept per domain, and the stats say where it
	 * lies once corrected (db.c), so that --follow's window starts
	 * after it (follow.c, window) */
	if (!rc_rows_before(c, dom, t))
		return 0;
	struct rc_domain *d = &c->doms[dom];
	if (!d->has_skip || t > d->skip_max) {
		d->has_skip = 1;
		d->skip_max = t;
	}
	return 1;
}

int rc_rows_judge(struct rc_ctx *c, uint32_t dom, int64_t t)
{
	return skip_judge(c, dom, t);
}


int rc_rows_skip_at(struct rc_ctx *c, uint32_t dom, int64_t t)
{
	if (!skip_judge(c, dom, t))
		return 0;
	c->st.rows_skipped++;
	return 1;
}

int rc_span_rows_skip(struct rc_ctx *c, uint64_t req)
{
	if (!c->opt->rows_from_ns || !req)
		return 0;
	const struct rc_span *root = rc_span_root_of(c, req);
	if (root)
		return rc_rows_skip_at(c, root->dom, root->start);
	/* its root has ended: as it was judged then (skip_done_mark) */
	const struct rc_spans *m = c->spans;
	if (rc_bits_get(&m->skip_done, req)) {
		c->st.rows_skipped++;
		return 1;
	}
	return 0;
}

int rc_rows_begin(struct rc_ctx *c, uint64_t req)
{
	if (rc_span_rows_skip(c, req))
		return 1;
	if (c->opt->row_keys && req) {
		const struct rc_span *root = rc_span_root_of(c, req);
		if (root)
			rc_db_row_key(c, RC_KEY_AT, 0, root->dom, root->start);
		else
			rc_db_row_key(c, RC_KEY_REQUEST, req, 0, 0);
		c->rows_scope = 1;
	}
	return 0;
}

int rc_rows_begin_at(struct rc_ctx *c, uint32_t dom, int64_t t)
{
	if (rc_rows_skip_at(c, dom, t))
		return 1;
	if (c->opt->row_keys) {
		rc_db_row_key(c, RC_KEY_CHANNEL, 0, dom, t);
		c->rows_scope = 1;
	}
	return 0;
}

void rc_rows_end(struct rc_ctx *c)
{
	if (!c->rows_scope)
		return;
	c->rows_scope = 0;
	rc_db_row_key(c, RC_KEY_END, 0, 0, 0);
}

/* The root SP of a request ends: the rows of that request still to come
 * (a fragment, a message or a file after the answer, a span that ends
 * later) are left out as those before were, by its start.  The root's
 * start is kept as left out (skip_judge) even when no later row comes:
 * the window of follow.c may then start a little later, never earlier.
 * Without the memory for the bit, the later rows are written, as they
 * were before the bit (a window pass only writes more). */
static void skip_done_mark(struct rc_ctx *c, const struct rc_span *sp)
{
	struct rc_spans *m = c->spans;
	if (!c->opt->rows_from_ns || !sp->req || !skip_judge(c, sp->dom, sp->start))
		return;
	(void)rc_bits_set(&m->skip_done, sp->req);
}

void rc_span_unroot(struct rc_ctx *c, struct rc_span *sp)
{
	rc_map_del(&c->spans->roots, sp->req);
	sp->is_root = 0;
	sp->client_root = 0;
	free(sp->client);
	sp->client = NULL;
}

void rc_span_root(struct rc_ctx *c, struct rc_span *sp, int client_root)
{
	sp->req = ++c->spans->next_req;
	sp->is_root = 1;
	sp->client_root = (uint8_t)client_root;
	rc_map_put(&c->spans->roots, sp->req, (uint64_t)(uintptr_t)sp);
}

static void request_write(struct rc_ctx *c, const struct rc_span *sp)
{
	struct rc_row_request r = {
		.id = sp->req, .root_span = sp->id, .start = sp->start,
		.end = sp->end, .protocol = rc_proto_name(sp->proto),
		.method = sp->method, .target = sp->target,
		.client = sp->client, .status = sp->status, .dom = sp->dom,
		.certainty = sp->certainty, .reason = sp->reason,
	};
	rc_db_request(c, &r);
	c->st.requests++;
}

void rc_span_finish(struct rc_ctx *c, struct rc_span *sp)
{
	struct rc_spans *m = c->spans;

	/* A reply may be read (and logged) by another thread before the
	 * thread that sent the request has logged its write: the exchange
	 * cannot end before it began. */
	if (sp->end != RC_DB_NULL && sp->end < sp->start)
		sp->end = sp->start;
	struct rc_row_span r = {
		.id = sp->id, .req = sp->req, .parent = sp->parent,
		.kind = sp->kind == RC_SK_SERVER ? "server" : "client",
		.protocol = rc_proto_name(sp->proto), .name = sp->name,
		.target = sp->target, .status = sp->status,
		.host = c->hosts[sp->host].name, .exe = sp->exe,
		.peer = sp->peer, .pid = sp->pid, .tid = sp->tid,
		.dom = sp->dom, .process_id = sp->process_id,
		.channel_id = sp->channel_id, .start = sp->start,
		.end = sp->end, .certainty = sp->certainty,
		.root = sp->is_root, .reason = sp->reason,
	};
	span_gone(c, sp);
	rc_tok_server_done(c, sp);
	/* A window pass of --follow needs of a request before its horizon
	 * only the root (the request's key) and the spans that are not
	 * exact (the request's certainty, db.c); follow.c writes no request
	 * whose spans have their parent in one of those (parent_rule) */
	if (sp->is_root || sp->certainty != RC_CT_EXACT) {
		rc_db_span(c, &r);
	} else if (!rc_rows_begin(c, sp->req)) {
		rc_db_span(c, &r);
		rc_rows_end(c);
	}
	c->st.spans++;
	if (sp->certainty != RC_CT_EXACT)
		c->st.marked_spans++;
	if (!sp->req)
		c->st.unattr_spans++;
	if (sp->is_root) {
		request_write(c, sp);
		skip_done_mark(c, sp);
		rc_map_del(&m->roots, sp->req);
	}
	free(sp->name);
	free(sp->target);
	free(sp->method);
	free(sp->peer);
	free(sp->client);
	free(sp->body_params);
	sp->next = m->pool;
	m->pool = sp;
}

void rc_span_discard(struct rc_ctx *c, struct rc_span **head,
		     struct rc_span *sp)
{
	struct rc_spans *m = c->spans;

	for (struct rc_span **pp = head; *pp; pp = &(*pp)->next)
		if (*pp == sp) {
			*pp = sp->next;
			break;
		}
	span_gone(c, sp);
	if (sp->is_root)
		rc_map_del(&m->roots, sp->req);
	free(sp->name);
	free(sp->target);
	free(sp->method);
	free(sp->peer);
	free(sp->client);
	free(sp->body_params);
	sp->next = m->pool;
	m->pool = sp;
}

void rc_span_push(struct rc_span **head, struct rc_span *sp, uint64_t off)
{
	sp->off = off;
	while (*head && (*head)->off <= off)
		head = &(*head)->next;
	sp->next = *head;
	*head = sp;
}

struct rc_span *rc_span_match(struct rc_span **head, const struct bt_event *ev)
{
	struct rc_span **pp;

	if (ev->flags & BT_MF_WITNESS) {
		for (pp = head; *pp; pp = &(*pp)->next)
			if ((*pp)->has_witness && (*pp)->witness == ev->witness)
				break;
		if (!*pp && *head && !(*head)->has_witness)
			pp = head;
	} else {
		pp = head;
	}
	struct rc_span *sp = *pp;
	if (sp)
		*pp = sp->next;
	return sp;
}

struct rc_span *rc_span_witness(struct rc_span *head, uint64_t w)
{
	for (; head; head = head->next)
		if (head->has_witness && head->witness == w)
			return head;
	return NULL;
}

/* First word of S, upper-cased, at most 24 characters. */
static char *first_word(const char *s, size_t n)
{
	char buf[25];
	size_t i = 0, k = 0;

	while (i < n && isspace((unsigned char)s[i]))
		i++;
	/* SQL comments before the keyword */
	while (i + 1 < n && s[i] == '-' && s[i + 1] == '-') {
		while (i < n && s[i] != '\n')
			i++;
		while (i < n && isspace((unsigned char)s[i]))
			i++;
	}
	while (i < n && k < sizeof buf - 1 && !isspace((unsigned char)s[i]) &&
	       s[i] != '(' && s[i] != ';')
		buf[k++] = (char)toupper((unsigned char)s[i++]);
	buf[k] = 0;
	return k ? rc_strndup(buf, k) : NULL;
}

static char *joined(const char *a, const char *b, size_t bn)
{
	size_t an = a ? strlen(a) : 0;
	char *p = malloc(an + bn + 2);
	if (!p)
		return NULL;
	if (an) {
		memcpy(p, a, an);
		p[an++] = ' ';
	}
	memcpy(p + an, b, bn);
	p[an + bn] = 0;
	return p;
}

void rc_span_label(struct rc_ctx *c, struct rc_span *sp,
		   const struct bt_event *ev)
{
	const struct bt_attr *t;

	sp->method = attr_dup(ev, BT_AK_METHOD);
	if (sp->kind == RC_SK_SERVER) {
		sp->tok_partial = (uint8_t)!rc_tok_inbound_whole(ev);
		/* HTTP/2: whole once its body's values came (msg.c) */
		sp->tok_body = ev->proto == BT_PROTO_HTTP2 &&
			       !(ev->flags & BT_MF_TRUNC);
	}
	switch (ev->proto) {
	case BT_PROTO_HTTP:
	case BT_PROTO_HTTP2:
		sp->target = attr_dup(ev, BT_AK_TARGET);
		if (sp->target) {
			size_t n = strcspn(sp->target, "?");
			sp->name = joined(sp->method, sp->target, n);
		}
		/* a call of a method named unary (a whole, untruncated
		 * :path): its handler starts once its message came */
		sp->unary = sp->kind == RC_SK_SERVER && sp->tok_body &&
			    sp->target && rc_grpc_unary_match(
				c->opt->grpc_unary, c->opt->ngrpc_unary,
				sp->target);
		c->st.grpc_unary_calls += sp->unary;
		break;
	case BT_PROTO_FASTCGI: {
		const struct bt_attr *sc = rc_attr(ev, BT_AK_FCGI_SCRIPT);
		sp->target = attr_dup(ev, BT_AK_FCGI_URI);
		if (!sp->target)
			sp->target = attr_dup(ev, BT_AK_FCGI_SCRIPT);
		if (sc)
			sp->name = joined(sp->method, sc->val, sc->len);
		else if (sp->target)
			sp->name = joined(sp->method, sp->target,
					  strcspn(sp->target, "?"));
		break;
	}
	case BT_PROTO_PGSQL:
	case BT_PROTO_MYSQL:
		if ((t = rc_attr(ev, BT_AK_SQL))) {
			sp->target = rc_strndup(t->val, t->len);
			sp->name = first_word(t->val, t->len);
		}
		break;
	case BT_PROTO_DNS:
		sp->target = attr_dup(ev, BT_AK_DNS_NAME);
		if ((t = rc_attr(ev, BT_AK_DNS_TYPE)))
			sp->name = joined("QUERY", t->val, t->len);
		break;
	case BT_PROTO_LINE:
		if ((t = rc_attr(ev, BT_AK_LINE))) {
			sp->target = rc_strndup(t->val, t->len);
			size_t n = 0;
			while (n < t->len && n < 32 && t->val[n] != ' ' &&
			       t->val[n] != '\t')
				n++;
			if (n)
				sp->name = rc_strndup(t->val, n);
		}
		break;
	default:
		sp->target = attr_dup(ev, BT_AK_TARGET);
		break;
	}
	if (!sp->name && sp->method)
		sp->name = strdup(sp->method);
	if (!sp->name)
		sp->name = strdup(ev->proto == BT_PROTO_PGSQL ||
				  ev->proto == BT_PROTO_DNS ? "QUERY" :
				  rc_proto_name(ev->proto));
}

int64_t rc_msg_status(const struct bt_event *ev)
{
	if (ev->proto == BT_PROTO_DNS)        /* 0 is NOERROR */
		return ev->status;
	return ev->status ? (int64_t)ev->status : RC_DB_NULL;
}

