/*
 * chan.c - processes, fd tables, channel ends, connections and their send
 * queues (see chan.h).
 *
 * Memory: an end while an fd refers to it, a connection while an end of
 * it is live or still to come, a send record until its receiver read it.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "chan.h"
#include "db.h"
#include "merge.h"

#define MAX_FD    (1 << 22)
#define MAX_QUEUE (1u << 16)   /* send records kept per direction */

struct rc_chans {
	struct rc_map procs;     /* (host, pid) -> rc_proc */
	struct rc_map conns;     /* conn id -> rc_conn */
};

static const char *const role_names[] = {
	"unknown", "connect", "accept", "pipe_read", "pipe_write",
	"socketpair", "inherited", "dgram",
};

static void end_destroy(struct rc_ctx *c, struct rc_end *e, int64_t t);

struct rc_proc *rc_chan_proc_get(struct rc_ctx *c, uint32_t host, uint32_t pid)
{
	return rc_map_getp(&c->chans->procs, rc_key2(host, pid));
}

void rc_chan_proc_show(struct rc_ctx *c, struct rc_proc *p)
{
	rc_map_put(&c->chans->procs, rc_key2(p->host, p->pid),
		   (uint64_t)(uintptr_t)p);
}

struct rc_proc *rc_chan_proc_new(struct rc_ctx *c, uint32_t host, uint32_t pid)
{
	struct rc_proc *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->host = host;
	p->pid = pid;
	rc_chan_proc_show(c, p);
	return p;
}

/* How long (record time) an fd's earlier binding is kept, and at most how
 * many per process. */
#define RC_FD_KEEP_NS   1000000000LL
#define RC_FD_KEEP_MAX  4096u

/* Close the earlier bindings that ended before LIMIT (all: INT64_MAX)
 * and whose own CLOSE record never came (an fd closed implicitly: dup2
 * onto it, or a close the shim did not see). */
static void fd_old_prune(struct rc_ctx *c, struct rc_proc *p, int64_t limit)
{
	while (p->old_first < p->nold &&
	       (p->old[p->old_first].until < limit ||
		p->nold - p->old_first > RC_FD_KEEP_MAX)) {
		struct rc_fdold *o = &p->old[p->old_first++];
		if (o->ent.end)
			rc_chan_end_unref(c, o->ent.end, o->until);
	}
	if (p->old_first == p->nold)
		p->old_first = p->nold = 0;
}

/* Keep ENT as FD's binding from ENT->since up to UNTIL (it keeps its
 * reference until its CLOSE record or the prune). */
static void fd_old_add(struct rc_ctx *c, struct rc_proc *p, int32_t fd,
		       const struct rc_fdent *ent, int64_t until)
{
	fd_old_prune(c, p, until - RC_FD_KEEP_NS);
	if (p->nold == p->capold && p->old_first > 0) {
		memmove(p->old, p->old + p->old_first,
			(p->nold - p->old_first) * sizeof *p->old);
		p->nold -= p->old_first;
		p->old_first = 0;
	}
	if (p->nold == p->capold) {
		uint32_t n = p->capold ? p->capold * 2 : 16;
		struct rc_fdold *no = realloc(p->old, n * sizeof *no);
		if (!no) {
			rc_chan_end_unref(c, ent->end, until);
			return;
		}
		p->old = no;
		p->capold = n;
	}
	p->old[p->nold].fd = fd;
	p->old[p->nold].ent = *ent;
	p->old[p->nold].until = until;
	p->nold++;
}

/* FD's earlier binding in force at T, or NULL. */
static struct rc_fdold *fd_old_at(struct rc_proc *p, int32_t fd, int64_t t)
{
	for (uint32_t i = p->nold; i-- > p->old_first;) {
		struct rc_fdold *o = &p->old[i];
		if (o->fd == fd && o->ent.end && o->ent.since <= t &&
		    t < o->until)
			return o;
	}
	return NULL;
}

void rc_chan_fd_drop(struct rc_ctx *c, struct rc_proc *p, int32_t fd, int64_t t)
{
	if (fd < 0)
		return;
	struct rc_fdent *cur = (uint32_t)fd < p->nfds ? &p->fds[fd] : NULL;
	if (cur && cur->end && t >= cur->since) {
		struct rc_end *e = cur->end;
		cur->end = NULL;
		rc_chan_end_unref(c, e, t);
		return;
	}
	/* the fd was bound again by a record merged before this CLOSE */
	struct rc_fdold *o = fd_old_at(p, fd, t);
	if (o) {
		struct rc_end *e = o->ent.end;
		o->ent.end = NULL;
		rc_chan_end_unref(c, e, t);
	}
}

void rc_chan_fd_unbind(struct rc_ctx *c, struct rc_proc *p, int32_t fd,
		       int64_t t)
{
	if (fd < 0 || (uint32_t)fd >= p->nfds)
		return;
	struct rc_fdent *cur = &p->fds[fd];
	if (!cur->end || t < cur->since)
		return;
	fd_old_add(c, p, fd, cur, t);
	cur->end = NULL;
}

int rc_chan_fd_set(struct rc_ctx *c, struct rc_proc *p, int32_t fd,
		   struct rc_end *e, const uint64_t base[2], int64_t t)
{
	if (fd < 0 || fd >= MAX_FD)
		return -EINVAL;
	if ((uint32_t)fd >= p->nfds) {
		uint32_t n = p->nfds ? p->nfds : 16;
		while (n <= (uint32_t)fd)
			n *= 2;
		struct rc_fdent *nf = realloc(p->fds, n * sizeof *nf);
		if (!nf)
			return -ENOMEM;
		memset(nf + p->nfds, 0, (n - p->nfds) * sizeof *nf);
		p->fds = nf;
		p->nfds = n;
	}
	struct rc_fdent ent = {
		.end = e, .since = t,
		.base = { base ? base[0] : 0, base ? base[1] : 0 },
	};
	e->refs++;
	struct rc_fdent *cur = &p->fds[fd];
	if (cur->end && t < cur->since) {
		/* bound before the binding in force (logged earlier, merged
		 * later): it lasted until that one */
		fd_old_add(c, p, fd, &ent, cur->since);
		return 0;
	}
	rc_chan_fd_unbind(c, p, fd, t);
	*cur = ent;
	return 0;
}

struct rc_fdent *rc_chan_fd_get(struct rc_proc *p, int32_t fd, int64_t t)
{
	if (!p || fd < 0)
		return NULL;
	struct rc_fdent *cur = (uint32_t)fd < p->nfds && p->fds[fd].end ?
			       &p->fds[fd] : NULL;
	if (cur && t >= cur->since)
		return cur;
	struct rc_fdold *o = fd_old_at(p, fd, t);
	return o ? &o->ent : cur;
}

void rc_chan_proc_unref(struct rc_ctx *c, struct rc_proc *p, int64_t t)
{
	/* the images that share it (an exec's, a snapshot's) end in any
	 * order: its descriptors close at the latest of their ends */
	if (t > p->drop_t)
		p->drop_t = t;
	if (--p->refs > 0)
		return;
	t = p->drop_t;
	for (uint32_t fd = 0; fd < p->nfds; fd++)
		if (p->fds[fd].end) {
			rc_chan_end_unref(c, p->fds[fd].end, t);
			p->fds[fd].end = NULL;
		}
	fd_old_prune(c, p, INT64_MAX);
	free(p->old);
	free(p->fds);
	uint64_t key = rc_key2(p->host, p->pid);
	if (rc_map_getp(&c->chans->procs, key) == p)
		rc_map_del(&c->chans->procs, key);
	free(p);
}

/* A child process object with a copy of P's fd table, holding one
 * reference for the caller. */
struct rc_proc *rc_chan_proc_copy(struct rc_ctx *c, struct rc_proc *p,
				  uint32_t pid, int64_t t)
{
	struct rc_proc *np = rc_chan_proc_new(c, p->host, pid);
	if (!np)
		return NULL;
	np->refs = 1;            /* the caller's */
	for (uint32_t fd = 0; fd < p->nfds; fd++)
		if (p->fds[fd].end)
			rc_chan_fd_set(c, np, (int32_t)fd, p->fds[fd].end,
			       p->fds[fd].base, t);
	return np;
}

struct rc_conn *rc_chan_conn_get(struct rc_ctx *c, uint32_t id,
				 const struct rc_conninfo *info)
{
	struct rc_conn *cn = rc_map_getp(&c->chans->conns, id);
	if (cn)
		return cn;
	if (id >= c->nconns || !(cn = calloc(1, sizeof *cn)))
		return NULL;
	cn->id = id;
	cn->info = *info;
	memcpy(cn->pending, cn->info.n, sizeof cn->pending);
	rc_map_put(&c->chans->conns, id, (uint64_t)(uintptr_t)cn);
	return cn;
}

static void q_clear(struct rc_dirq *q)
{
	free(q->v);
	q->v = NULL;
	q->head = q->n = q->cap = 0;
}

/* Side S will never send again: nothing pending, no live end. */
int rc_chan_conn_gone(const struct rc_ctx *c, const struct rc_conn *cn, int s)
{
	if (cn->pending[s] || cn->live[s])
		return 0;
	if (cn->info.pipe && (cn->pending[2] || cn->unknown_live))
		return 0;
	return 1;
}

/* Does side S of E's connection have an end in the logs at all? */
int rc_chan_end_traced(const struct rc_ctx *c, const struct rc_end *e, int s)
{
	const struct rc_conninfo *ci = &e->conn->info;
	if (ci->n[s])
		return 1;
	return ci->pipe && ci->n[2] > (uint32_t)(e->entry_unknown ? 1 : 0);
}

void rc_chan_conn_maybe_free(struct rc_ctx *c, struct rc_conn *cn)
{
	if (cn->pending[0] || cn->pending[1] || cn->pending[2] ||
	    cn->live[0] || cn->live[1] || cn->unknown_live)
		return;
	q_clear(&cn->dir[0]);
	q_clear(&cn->dir[1]);
	rc_map_del(&c->chans->conns, cn->id);
	free(cn);
}

/* When side S is gone, its receivers stop waiting and its queue of sends
 * to it is no longer needed. */
static void conn_side_check(struct rc_ctx *c, struct rc_conn *cn, int s)
{
	if (!rc_chan_conn_gone(c, cn, s))
		return;
	q_clear(&cn->dir[!s]);
	if (cn->dir[s].parked) {
		cn->dir[s].parked = 0;
		rc_merge_wake(c, RC_KEY_RECV(cn->id, s));
	}
}

void rc_chan_end_peer(const struct rc_end *e, const struct bt_event *ev,
		      char *buf, size_t len)
{
	const struct bt_attr *pa = ev ? rc_attr(ev, BT_AK_PEER) : NULL;

	if (pa) {
		snprintf(buf, len, "%.*s", (int)pa->len, pa->val);
		return;
	}
	switch (e->kind) {
	case BT_CK_TCP:
	case BT_CK_UDP:
		if (e->remote.family)
			bt_addr_format(&e->remote, buf, len);
		else
			snprintf(buf, len, "%s", bt_chan_kind_name(e->kind));
		break;
	case BT_CK_UNIX_STREAM:
	case BT_CK_UNIX_DGRAM:
		if (e->path && e->path[0])
			snprintf(buf, len, "unix:%s", e->path);
		else
			snprintf(buf, len, "unix:[%" PRIu64 "]", e->peer_ino);
		break;
	case BT_CK_PIPE:
		snprintf(buf, len, "pipe:[%" PRIu64 "]", e->ino);
		break;
	default:
		snprintf(buf, len, "%s", bt_chan_kind_name(e->kind));
	}
}

/*
 * Why a channel end could not be read (docs/schema.md, channels): NULL
 * and *READABLE 1 when a processor framed it to the end; *READABLE -1
 * (NULL in the table) when nothing moved on it and nothing chose.
 */
static const char *unreadable_reason(const struct rc_end *e, int *readable)
{
	*readable = 0;
	if (e->lost_sync)
		return "lost-sync";
	if (e->proto) {
		*readable = 1;
		return NULL;
	}
	switch (e->how) {
	case BT_PH_TLS:  return "tls-in-program";
	case BT_PH_NONE: return "unknown-protocol";
	case BT_PH_RULE:
	case BT_PH_DEFAULT:
		return "rule-none";
	}
	if (!e->bytes[RC_DIN] && !e->bytes[RC_DOUT]) {
		*readable = -1;
		return NULL;
	}
	return "no-processor";     /* pipes without one: never sniffed */
}

/* Finish SP, open when its end goes; uncertain when a receive of the end
 * still waits (UNREAD, docs/reconstruct.md "Closed while a read waits"). */
static void end_span_finish(struct rc_ctx *c, struct rc_span *sp, int unread)
{
	if (unread && sp->certainty != RC_CT_UNCERTAIN) {
		sp->certainty = RC_CT_UNCERTAIN;
		sp->reason = "closed-unread";
		c->st.closed_unread++;
	}
	rc_span_finish(c, sp);
}

/* Is E the only end of its connection in the logs (or has none)? */
static int end_alone(const struct rc_end *e)
{
	if (!e->conn)
		return 1;
	const struct rc_conninfo *ci = &e->conn->info;
	return (uint64_t)ci->n[0] + ci->n[1] + ci->n[2] <= 1;
}

static void end_destroy(struct rc_ctx *c, struct rc_end *e, int64_t t)
{
	char local[64], remote[64];
	struct rc_span *sp;

	/*
	 * A receive of this end still waits for its send, or a thread of
	 * the process was held back at a record older than the close: a
	 * record of the end logged before its close (by another thread)
	 * comes after it, when no fd leads here any more.  What it read is
	 * lost to the exchanges still open on the end: they end unanswered
	 * here although an answer may have come, so they are uncertain.
	 */
	int unread = e->closed_lagging ||
		     (e->conn && e->side < 2 && e->conn->dir[!e->side].parked);

	/* A request answered before its last byte came, which never came. */
	sp = e->begun[RC_DIN].sp;
	if (sp && sp->end != RC_DB_NULL)
		end_span_finish(c, sp, unread);
	e->begun[RC_DIN].sp = NULL;
	/* Exchanges never answered: written open (end_ns NULL). */
	while ((sp = e->srv)) {
		e->srv = sp->next;
		end_span_finish(c, sp, unread);
	}
	while ((sp = e->cli)) {
		e->cli = sp->next;
		end_span_finish(c, sp, unread);
	}
	int readable;
	const char *why = unreadable_reason(e, &readable);
	struct rc_row_channel r = {
		.readable = readable, .unreadable_reason = why,
		.id = e->channel_id, .conn = e->conn ? e->conn->id : 0,
		.peer = e->peer_entry == RC_NONE ? 0 : (uint64_t)e->peer_entry + 1,
		.process_id = e->process_id, .req = e->open_req, .dom = e->dom,
		.pid = e->pid, .fd = e->fd, .kind = bt_chan_kind_name(e->kind),
		.role = e->role < sizeof role_names / sizeof role_names[0] ?
			role_names[e->role] : "unknown",
		.protocol = e->proto ? rc_proto_name(e->proto) : NULL,
		.local = e->local.family ? bt_addr_format(&e->local, local, sizeof local) : NULL,
		.remote = e->remote.family ? bt_addr_format(&e->remote, remote, sizeof remote) : NULL,
		.path = e->path, .ino = e->ino, .peer_ino = e->peer_ino,
		.traced_peer = e->conn && e->side < 2 ?
			       rc_chan_end_traced(c, e, !e->side) : 0,
		.lost_sync = e->lost_sync, .open = e->open_t, .close = t,
		.bytes_in = e->bytes[RC_DIN], .bytes_out = e->bytes[RC_DOUT],
		.msgs_in = e->msgs[RC_DIN], .msgs_out = e->msgs[RC_DOUT],
	};
	/* A window pass of --follow (rc_options.rows_from_ns) leaves out
	 * the row of a channel closed before its horizon that no other row
	 * can name: no other end of its connection is in the logs (so no
	 * peer_channel_id or conn_id leads to it), and the spans, messages
	 * and fragments on it are of requests that began before it closed,
	 * which that pass does not write (follow.c, window: it checks) */
	if (e->peer_entry != RC_NONE || !end_alone(e)) {
		rc_db_channel(c, &r);
	} else if (rc_rows_begin_at(c, e->dom, t)) {
		c->st.chan_rows_skipped++;
	} else {
		rc_db_channel(c, &r);
		rc_rows_end(c);
	}
	struct rc_conn *cn = e->conn;
	if (cn) {
		if (e->side < 2)
			cn->live[e->side]--;
		else
			cn->unknown_live--;
		conn_side_check(c, cn, 0);
		conn_side_check(c, cn, 1);
		rc_chan_conn_maybe_free(c, cn);
	}
	free(e->path);
	free(e);
}

/* The channel closes when the last of its holders lets go, at the
 * latest time one did: a process that ends keeps no channel open past
 * the close in another that was merged first. */
void rc_chan_end_unref(struct rc_ctx *c, struct rc_end *e, int64_t t)
{
	if (t > e->drop_t)
		e->drop_t = t;
	if (--e->refs == 0)
		end_destroy(c, e, e->drop_t);
}

/* A pipe end learns its side from the first data through it. */
void rc_chan_end_side(struct rc_end *e, int dir)
{
	if (e->side < 2 || !e->conn)
		return;
	e->side = dir == RC_DOUT ? 0 : 1;
	e->conn->unknown_live--;
	e->conn->live[e->side]++;
}

/* ---- send queues ---------------------------------------------------------- */

struct rc_sent *rc_chan_q_at(const struct rc_dirq *q, uint32_t i)
{
	return &q->v[(q->head + i) & (q->cap - 1)];
}

struct rc_sent *rc_chan_q_push(struct rc_ctx *c, struct rc_dirq *q,
			       uint64_t off)
{
	if (q->n == MAX_QUEUE) {
		/* A receiver that never reads: forget the oldest. */
		q->head = (q->head + 1) & (q->cap - 1);
		q->n--;
		if (!c->st.queue_overflow++)
			rc_warn(c, NULL, 0,
				"a traced receiver has not read %u messages sent to it; the oldest are forgotten (their receives count as unpaired)",
				MAX_QUEUE);
	}
	if (q->n == q->cap) {
		uint32_t ncap = q->cap ? q->cap * 2 : 8;
		struct rc_sent *nv = malloc(ncap * sizeof *nv);
		if (!nv)
			return NULL;
		for (uint32_t i = 0; i < q->n; i++)
			nv[i] = *rc_chan_q_at(q, i);
		free(q->v);
		q->v = nv;
		q->head = 0;
		q->cap = ncap;
	}
	/* Sends usually come in offset order: find the place from the tail. */
	uint32_t at = q->n;
	while (at > 0 && rc_chan_q_at(q, at - 1)->off > off)
		at--;
	for (uint32_t i = q->n; i > at; i--)
		*rc_chan_q_at(q, i) = *rc_chan_q_at(q, i - 1);
	q->n++;
	struct rc_sent *x = rc_chan_q_at(q, at);
	memset(x, 0, sizeof *x);
	x->off = off;
	if (!q->seeded) {
		/* An end first seen mid-stream (inherited) starts where its
		 * first send does. */
		q->seeded = 1;
		if (q->hwm < off && at == 0)
			q->hwm = off;
	}
	return x;
}

/* The send record covering byte X (a zero-length one starting at X). */
struct rc_sent *rc_chan_q_find(const struct rc_dirq *q, uint64_t x)
{
	for (uint32_t i = 0; i < q->n; i++) {
		struct rc_sent *s = rc_chan_q_at(q, i);
		if (s->off <= x && (x < s->end || (s->off == x && s->end == x)))
			return s;
		if (s->off > x)
			break;
	}
	return NULL;
}

/* Drop send records the receiver has read past. */
void rc_chan_q_consume(struct rc_dirq *q, uint64_t upto)
{
	while (q->n) {
		struct rc_sent *s = rc_chan_q_at(q, 0);
		if (s->end == RC_OPEN_END || s->end > upto ||
		    (s->end == s->off && s->off == upto))
			break;
		q->head = (q->head + 1) & (q->cap - 1);
		q->n--;
	}
}

void rc_chan_q_advance(struct rc_ctx *c, struct rc_conn *cn, int side)
{
	struct rc_dirq *q = &cn->dir[side];
	uint64_t h = q->hwm;

	for (uint32_t i = 0; i < q->n; i++) {
		const struct rc_sent *s = rc_chan_q_at(q, i);
		if (s->off > h || !s->resolved)
			break;                /* a gap, or not decided yet */
		uint64_t cov = s->end == RC_OPEN_END ? s->off + 1 : s->end;
		if (cov > h)
			h = cov;
	}
	if (h <= q->hwm)
		return;
	q->hwm = h;
	if (q->parked) {
		q->parked = 0;
		rc_merge_wake(c, RC_KEY_RECV(cn->id, side));
	}
}

struct rc_dirq *rc_chan_send_q(struct rc_ctx *c, struct rc_end *e)
{
	struct rc_conn *cn = e->conn;
	if (!cn || e->side > 1)
		return NULL;
	int r = !e->side;
	if (!rc_chan_end_traced(c, e, r) || rc_chan_conn_gone(c, cn, r))
		return NULL;
	return &cn->dir[e->side];
}


int rc_chan_init(struct rc_ctx *c)
{
	c->chans = calloc(1, sizeof *c->chans);
	return c->chans ? 0 : -ENOMEM;
}

void rc_chan_free(struct rc_ctx *c)
{
	struct rc_chans *k = c->chans;
	if (!k)
		return;
	for (size_t i = 0; i < k->conns.cap; i++) {
		if (!k->conns.used[i])
			continue;
		struct rc_conn *cn = (struct rc_conn *)(uintptr_t)k->conns.vals[i];
		q_clear(&cn->dir[0]);
		q_clear(&cn->dir[1]);
		free(cn);
	}
	rc_map_free(&k->conns);
	for (size_t i = 0; i < k->procs.cap; i++) {
		if (!k->procs.used[i])
			continue;
		struct rc_proc *p = (struct rc_proc *)(uintptr_t)k->procs.vals[i];
		free(p->fds);
		free(p);
	}
	rc_map_free(&k->procs);
	free(k);
	c->chans = NULL;
}
