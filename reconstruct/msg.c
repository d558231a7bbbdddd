/*
 * msg.c - the rules of messages and data (docs/reconstruct.md, "The
 * rules"): a send belongs to the request of the work that sends it, a
 * receive starts or continues the work of the request it belongs to;
 * spans, exchanges and message rows; the receive side's clock samples.
 * Called by model.c for each MSG, MSG_BEGIN and DATA record (msg.h).
 */
#include "config.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "btrace/proto.h"
#include "apply.h"
#include "chan.h"
#include "clock.h"
#include "db.h"
#include "lineage.h"
#include "merge.h"
#include "pair.h"
#include "msg.h"
#include "park.h"
#include "scan.h"
#include "span.h"
#include "tokens.h"

/* The queue a receive of the bytes at O on E reads from, or NULL if the
 * sender is untraced (or was given up on). */
struct rc_dirq *rc_msg_recv_q(struct ap *a, struct rc_end *e, uint64_t o)
{
	struct rc_conn *cn = e->conn;
	if (!cn || e->side > 1)
		return NULL;
	int s = !e->side;
	struct rc_dirq *q = &cn->dir[s];
	if (a->s->released) {
		/* Given up waiting.  If the sender's later sends are here, its
		 * records of these bytes were lost (a damaged log): this
		 * receive counts as from an untraced peer, the next ones pair
		 * again.  Otherwise the sender is untraced from here. */
		int later = 0;
		for (uint32_t i = 0; i < q->n && !later; i++)
			later = rc_chan_q_at(q, i)->off > o;
		if (later) {
			uint64_t upto = o + rc_msg_units(e, a->ev);
			if (a->ev->type != BT_EV_READY)
				a->c->st.unpaired_recv++;
			if (upto > q->hwm)
				q->hwm = upto;
			rc_chan_q_advance(a->c, cn, s);
		} else {
			q->untraced = 1;
		}
		return NULL;
	}
	if (q->untraced || !rc_chan_end_traced(a->c, e, s))
		return NULL;
	return q;
}

/*
 * Is what E receives from a traced program whose send the log does not
 * have: a wait for it given up now (records lost, a cycle, or the sender
 * closed without logging it) or before on this channel?  The sender
 * wrote it past the shim (io_uring, raw system calls, a pause) or its
 * records are gone: what caused it is unknown.
 */
static int peer_unlogged(const struct ap *a, const struct rc_end *e)
{
	const struct rc_conn *cn = e->conn;

	if (!cn || e->side > 1)
		return 0;
	return a->s->released || cn->dir[!e->side].untraced;
}

static const char unlogged_send[] = "unlogged-send";

/*
 * A live pass (rc_options.pending_ns): is what E receives from a peer no
 * log has, though traced programs accepted on (or mostly connected to)
 * its address, or E connected to an address first used a moment ago
 * (pair.c, expect_peer)?  Its records may still come: a php-fpm child's,
 * drained after nginx's; until they do, nobody knows what it did (it is
 * taken as untraced once they are overdue).
 */
static int peer_pending(const struct ap *a, const struct rc_end *e)
{
	const struct rc_conn *cn = e->conn;
	int64_t from = a->c->opt->pending_ns;

	if (!from || !cn || e->side > 1 || a->t < from)
		return 0;
	a->c->expect_asked = 1;
	return cn->info.expect && !rc_chan_end_traced(a->c, e, !e->side);
}

/* SP, received from such a peer, is uncertain (counted, and its time
 * kept: the pass after the hold takes the peer as untraced). */
static void peer_pending_mark(struct ap *a, struct rc_span *sp)
{
	static const char peer_not_logged[] = "peer-not-logged";
	sp->certainty = RC_CT_UNCERTAIN;
	sp->reason = peer_not_logged;
	a->c->st.peer_pending++;
	if (a->t > a->c->st.peer_pending_max)
		a->c->st.peer_pending_max = a->t;
}

/*
 * A record on a descriptor no channel record announced: one opened before
 * the tracer started, one whose opening is in no log (lost, or before the
 * logs' first segment), or one a close merged first took away
 * ("closed-unread").  What it sent or received is not known, so the
 * request the thread works for may miss a call or hold work that is not
 * its own: its server span here, if still open, is uncertain
 * ('unknown-fd').  An input begins work for a request nobody knows: the
 * thread goes on in a fragment of no request, so that what it does next
 * is not given to the request it worked for before.
 */
static void unknown_fd_work(struct ap *a, int dir)
{
	struct rc_ctx *c = a->c;

	if (!a->th->d.req)
		return;
	if (rc_frag_uncertain(a, "unknown-fd") && !c->st.unknown_fd_spans++)
		rc_warn(c, rc_file_path(c, a->s->rec.file), a->s->rec.file_off,
			"host %s pid %u: a fragment working for a request used fd %d, which no channel record announced; that request is uncertain (unknown-fd)",
			c->hosts[a->im->host].name, a->im->pid, a->ev->fd);
	if (dir == RC_DIN)
		rc_frag_unknown(a, a->ev->type == BT_EV_DATA ? RC_TR_DATA :
				RC_TR_MSG, a->ev->fd, "unknown-fd");
}

/*
 * Is the peer of E, which no log has, maybe a traced program whose records
 * of this connection are in the gap of its host's logs?  When a host's
 * logs have a gap or a DROP (pass 1: input.c, rc_input_host_gap), a
 * connection end whose other
 * end is in no log, to or from an address of that host (the local address
 * of any of its channels; loopback and unix: E's own host), may be one
 * whose `connect` or `accept` was lost, not an untraced program's: what
 * it brings is uncertain ('peer-gap'), not exact as from an untraced
 * peer.  Nothing is looked at while no host has a gap.
 */
static int peer_gap(const struct ap *a, const struct rc_end *e)
{
	const struct rc_ctx *c = a->c;
	const struct rc_conn *cn = e->conn;

	if (!c->host_gap || !cn || e->side > 1 ||
	    rc_chan_end_traced(c, e, !e->side))
		return 0;
	uint32_t h = rc_pair_host_of(c, a->im->host, &e->remote);
	if (e->kind == BT_CK_UNIX_STREAM || e->kind == BT_CK_UNIX_DGRAM ||
	    e->kind == BT_CK_PIPE)
		h = a->im->host + 1;
	if (h == RC_HOST_MANY) {
		for (uint32_t i = 0; i < c->nhosts; i++)
			if (c->host_gap[i])
				return 1;
		return 0;
	}
	return h && c->host_gap[h - 1];
}

static void peer_gap_mark(struct ap *a, struct rc_span *sp)
{
	static const char peer_gap_why[] = "peer-gap";
	sp->certainty = RC_CT_UNCERTAIN;
	sp->reason = peer_gap_why;
	a->c->st.peer_gap++;
}

/* The end of the record's fd and its absolute offset; counts unknowns. */
static struct rc_end *rec_end(struct ap *a, int dir, uint64_t *off)
{
	struct rc_proc *p = a->im->run->attached ? a->im->run->proc : NULL;
	struct rc_fdent *fe = rc_chan_fd_get(p, a->ev->fd, a->rt);
	if (!fe) {
		struct rc_ctx *c = a->c;
		if (!c->st.unknown_fd++)
			rc_warn(c, rc_file_path(c, a->s->rec.file),
				a->s->rec.file_off,
				"host %s pid %u: data on fd %d, which no channel record announced; such records are counted (stats unknown_fd_records), not attributed",
				c->hosts[a->im->host].name, a->im->pid,
				a->ev->fd);
		unknown_fd_work(a, dir);
		return NULL;
	}
	rc_chan_end_side(fe->end, dir);
	*off = fe->base[dir] + a->ev->off;
	return fe->end;
}

uint64_t rc_msg_units(const struct rc_end *e, const struct bt_event *ev)
{
	if (e->dgram || (ev->type == BT_EV_MSG && (ev->flags & BT_MF_DGRAM)))
		return 1;
	return ev->len;
}

static void message_row(struct ap *a, struct rc_end *e, int dir, uint64_t off,
			uint64_t req, uint64_t span, int64_t begin,
			uint64_t peer_msg, uint64_t id)
{
	const struct bt_event *ev = a->ev;
	struct rc_ctx *c = a->c;
	struct rc_row_message r = {
		.id = id, .req = req, .span = span,
		.channel_id = e->channel_id, .process_id = a->im->run->process_id,
		.peer_message = peer_msg, .dom = a->im->domain,
		.pid = a->im->pid, .tid = a->th->tid ? a->th->tid : a->im->pid,
		.begin = begin, .ts = a->t, .dir = dir == RC_DOUT ? "out" : "in",
		.kind = bt_msg_kind_name(ev->kind),
		.protocol = rc_proto_name(ev->proto), .flags = ev->flags,
		.off = off, .len = ev->len, .status = rc_msg_status(ev),
		.witness = (ev->flags & BT_MF_WITNESS) ? (int64_t)ev->witness : RC_DB_NULL,
	};
	if (!rc_rows_begin(c, req)) {
		rc_db_message(c, &r);
		for (unsigned i = 0; i < ev->nattr; i++)
			rc_db_attr(c, span, id, bt_attr_key_name(ev->attr[i].key),
				   ev->attr[i].val, ev->attr[i].len);
		rc_rows_end(c);
	}
	c->st.messages++;
	if (!req && ev->kind != BT_MK_CONTROL)
		c->st.unattr_messages++;
}

static void on_msg_begin_out(struct ap *a, struct rc_end *e, uint64_t o)
{
	struct rc_desig d = a->th->d;
	int resolved = 1;

	e->begun[RC_DOUT].valid = 1;
	e->begun[RC_DOUT].off = o;
	e->begun[RC_DOUT].t = a->t;
	e->begun[RC_DOUT].d = d;
	if (e->srv) {                 /* most likely the reply in the making */
		d.req = e->srv->req;
		d.span = e->srv->id;
		e->srv->answering = 1;
		rc_span_unpark(a->c, e->srv);
	} else if (!rc_span_live(a->c, &d)) {
		resolved = 0;         /* may start a request (rule 5) */
	}
	struct rc_dirq *q = rc_chan_send_q(a->c, e);
	if (!q)
		return;
	struct rc_sent *x = rc_chan_q_push(a->c, q, o);
	if (!x)
		return;
	x->end = RC_OPEN_END;
	x->t_begin = x->t_end = a->t;
	x->req = d.req;
	x->span = d.span;
	x->client_root = d.client_root;
	x->dom = a->im->domain;
	x->resolved = (uint8_t)resolved;
	if (resolved)
		rc_chan_q_advance(a->c, e->conn, e->side);
}

/* Set designation D to (REQ, SPAN, CROOT): the one place a message's or a
 * thread's designation is set field by field. */
static void desig_set(struct rc_desig *d, uint64_t req, uint64_t span,
		      uint8_t croot)
{
	d->req = req;
	d->span = span;
	d->client_root = croot;
}

/* The end-advance tail of a record of N units at O on E, direction DIR:
 * the high-water mark (and the thread that reached it; streams waiting
 * for it are woken), and the byte count. */
static void end_advance(struct ap *a, struct rc_end *e, int dir, uint64_t o,
			uint64_t n)
{
	if (o + n > e->hwm[dir]) {
		e->hwm[dir] = o + n;
		e->hwm_tid[dir] = a->th->tid ? a->th->tid : a->im->pid;
		rc_merge_wake(a->c, RC_KEY_ORDER(e->channel_id, dir));
	}
	e->bytes[dir] += a->ev->len;
}

/* The receive clock sample: LAST, the send record of the last unit
 * received (none, or still open: nothing), orders the receive after the
 * send in the same clock domain, or samples the two domains' offset. */
static void recv_clock(struct ap *a, const struct rc_sent *last)
{
	struct rc_ctx *c = a->c;

	if (!last || last->end == RC_OPEN_END)
		return;
	if (last->dom == a->im->domain) {
		if (last->t_end > a->t) {
			a->t = last->t_end;
			c->st.clamps++;
		}
	} else {
		rc_clock_sample(c, last->dom, a->im->domain, last->t_end, a->t);
	}
}

/* A request span's start T0, label, peer (also its client when
 * CLIENT_PEER) and witness, from request message EV on E. */
static void span_request_head(struct rc_ctx *c, struct rc_span *sp,
			      const struct rc_end *e,
			      const struct bt_event *ev, int64_t t0,
			      int client_peer)
{
	char peer[128];

	sp->start = t0;
	rc_span_label(c, sp, ev);
	rc_chan_end_peer(e, ev, peer, sizeof peer);
	sp->peer = strdup(peer);
	if (client_peer)
		sp->client = strdup(peer);
	if (ev->flags & BT_MF_WITNESS) {
		sp->has_witness = 1;
		sp->witness = ev->witness;
	}
}

/*
 * May the unary rule (grpc.h) judge the request message being applied?
 * Only when methods were named; in a program that sends no HTTP/2
 * request (pass 1): a relay of gRPC calls (nginx's grpc_pass, a proxy)
 * works for a call from its header block on, before its body, whatever
 * the method; only the server that runs the method's handler waits for
 * the message (a gRPC server whose handlers call gRPC services is judged
 * without the rule too); when nothing was lost from the log so far (a
 * lost body frame would leave its call looking unstarted), and every
 * other thread of the sending process has applied its records up to
 * this one's time: one held back in the merge (a read waiting for its
 * send) may hold the body frame a handler's call followed; one at the
 * same time may too.
 */
static int unary_settled(struct ap *a)
{
	const struct rc_ctx *c = a->c;
	const struct rc_proc *p;

	if (!c->opt->ngrpc_unary || a->im->h2_sends || c->st.lost_records ||
	    c->st.lost_bytes || c->st.dropped || !(p = rc_lineage_proc_of(a)))
		return 0;
	for (const struct rc_thr *o = p->threads; o; o = o->pnext) {
		if (o == a->th)
			continue;
		const struct rc_run *r = (const struct rc_run *)
			(const void *)((const char *)o -
				       offsetof(struct rc_run, thr));
		if ((r->state == RC_SS_PARKED || r->state == RC_SS_READY) &&
		    r->head_t <= a->s->head_t)
			return 0;
	}
	return 1;
}

/* A request message sent at O on E, begun at T0 by work designated D0
 * (BEGUN: it had a MSG_BEGIN): its client span (rule 5 when D0 is no live
 * request), the parked detector's marks, tokens.  NULL when out of
 * memory. */
static struct rc_span *msg_out_request(struct ap *a, struct rc_end *e,
				       uint64_t o, const struct rc_desig *d0,
				       int64_t t0, int begun)
{
	struct rc_ctx *c = a->c;
	const struct bt_event *ev = a->ev;
	struct rc_span *sp;

	if (!rc_span_live(a->c, d0)) {
		/* Rule 5: a request sent for no request starts one. */
		sp = rc_ap_span_new(a, RC_SK_CLIENT, ev->proto, 0, 0, e);
		if (!sp)
			return NULL;
		rc_span_root(a->c, sp, 1);
		char who[160];
		snprintf(who, sizeof who, "%s[%u]@%s",
			 a->im->exe ? a->im->exe : "?", a->im->pid,
			 c->hosts[a->im->host].name);
		sp->client = strdup(who);
		/* ... unless the work's input is not known (a gap in the
		 * thread's records, an fd no record announced): it may be
		 * another request's, whose input was lost */
		if (a->th->frag.open && a->th->frag.lost) {
			sp->certainty = RC_CT_UNCERTAIN;
			sp->reason = a->th->frag.lost;
			c->st.lost_roots++;
		}
		/* The fragment still works for no request: originating
		 * a request does not make it work for that request.  A
		 * client writing several requests in one fragment
		 * (pipelining, a writer thread) starts one request per
		 * message; work for r follows only r's reply. */
	} else {
		sp = rc_ap_span_new(a, RC_SK_CLIENT, ev->proto, d0->req,
				    d0->span, e);
		if (!sp)
			return NULL;
		sp->client_root = d0->client_root;
		sp->inherited = a->th->inherited;
	}
	span_request_head(c, sp, e, ev, t0, 0);
	rc_park_waiting(a);
	rc_park_connect_taken(a, e, o, sp->req);
	rc_span_unary_gate(c, unary_settled(a));
	rc_tok_resolve(c, sp, ev, begun);
	rc_span_sent(c, sp);
	rc_span_unary_gate(c, 0);
	desig_set(&e->last, sp->req, sp->parent, sp->client_root);
	return sp;
}

/* The send record of message MSG, O..O+N on E, designated MD: the one
 * its MSG_BEGIN opened (at T0), or a new one; the receiver's queue
 * advances. */
static void msg_out_queue(struct ap *a, struct rc_end *e, uint64_t o,
			  uint64_t n, int64_t t0, const struct rc_desig *md,
			  uint64_t msg)
{
	struct rc_ctx *c = a->c;
	struct rc_dirq *q = rc_chan_send_q(c, e);

	if (!q)
		return;
	struct rc_sent *x = NULL;
	for (uint32_t i = q->n; i-- > 0 && i + 8 >= q->n;) {
		struct rc_sent *y = rc_chan_q_at(q, i);
		if (y->off == o && y->end == RC_OPEN_END) {
			x = y;
			break;
		}
	}
	if (!x && (x = rc_chan_q_push(c, q, o)) != NULL)
		x->t_begin = t0;
	if (!x)
		return;
	x->end = o + n;
	x->t_end = a->t;
	x->req = md->req;
	x->span = md->span;
	x->msg = msg;
	x->kind = a->ev->kind;
	x->client_root = md->client_root;
	x->dom = a->im->domain;
	x->resolved = 1;
	rc_chan_q_advance(c, e->conn, e->side);
}

static void on_msg_out(struct ap *a, struct rc_end *e, uint64_t o)
{
	struct rc_ctx *c = a->c;
	const struct bt_event *ev = a->ev;
	uint64_t n = rc_msg_units(e, ev);
	int begun = e->begun[RC_DOUT].valid && e->begun[RC_DOUT].off == o;
	struct rc_desig d0 = begun ? e->begun[RC_DOUT].d : a->th->d;
	int64_t t0 = begun ? e->begun[RC_DOUT].t : a->t;
	uint64_t msg = ++a->m->next_msg;
	struct rc_desig md = { 0, 0, 0 };   /* the message's */
	struct rc_span *sp = NULL;

	if (begun)
		e->begun[RC_DOUT].valid = 0;
	switch (ev->kind) {
	case BT_MK_REQUEST:
		sp = msg_out_request(a, e, o, &d0, t0, begun);
		if (sp)
			desig_set(&md, sp->req, sp->id, sp->client_root);
		break;
	case BT_MK_REPLY:
		if (e->oneway)
			goto oneway;
		sp = rc_span_match(&e->srv, ev);
		if (sp) {
			desig_set(&md, sp->req, sp->id, sp->client_root);
			if (d0.req && d0.req != md.req)
				c->st.reply_mismatch++;
			sp->end = a->t;
			sp->status = rc_msg_status(ev);
			rc_span_unpark(c, sp);
			/* later work on this channel for REQ is in this
			 * process's span, not in the peer's */
			e->last = md;
		} else {
			c->st.unmatched_replies++;
			md = d0;
		}
		break;
	case BT_MK_CONTROL:
		break;
	default:
	oneway:
		md = d0;
		if (md.req)
			e->last = d0;
		break;
	}

	msg_out_queue(a, e, o, n, t0, &md, msg);
	message_row(a, e, RC_DOUT, o, md.req, md.span,
		    begun ? t0 : RC_DB_NULL, 0, msg);
	end_advance(a, e, RC_DOUT, o, n);
	e->msgs[RC_DOUT]++;

	if (sp && ev->kind == BT_MK_REQUEST) {
		if (e->oneway) {       /* nothing can answer on a pipe */
			sp->end = a->t;
			rc_span_finish(c, sp);
		} else {
			rc_span_push(&e->cli, sp, o);
		}
	} else if (sp && !sp->pending) {  /* a reply closed its server span */
		rc_span_finish(c, sp);
	}                                 /* (pending: at its request's MSG) */
}

/*
 * Does the message whose first byte E receives from sender X (queue Q;
 * both NULL: an untraced sender) open an exchange?  Its kind comes with its
 * MSG, which may follow work the message already caused (php-fpm answers
 * before it reads a request's empty FCGI_STDIN record): when the sender
 * logged the whole message, its kind decides; else an accepting end
 * receives requests (a control message, a start-up, is found out at its
 * MSG and its span dropped).
 */
static int begins_request(const struct rc_end *e, const struct rc_dirq *q,
			  const struct rc_sent *x)
{
	if (e->oneway)
		return 0;
	if (x && x->resolved && x->kind)
		return x->kind == BT_MK_REQUEST;
	if (q && !(x && x->resolved))
		return 0;
	return e->role == BT_CR_ACCEPT;
}

static void on_msg_begin_in(struct ap *a, struct rc_end *e, uint64_t o)
{
	struct rc_dirq *q = rc_msg_recv_q(a, e, o);
	struct rc_sent *x = q ? rc_chan_q_find(q, o) : NULL;
	struct rc_span *sp = NULL;

	rc_frag_input(a, e, RC_TR_MSG, o, 0);
	e->begun[RC_DIN].valid = 1;
	e->begun[RC_DIN].off = o;
	/* a frame read in pieces, its stream not known yet: a unary call's
	 * message may end before the frame does (padding), so every call on
	 * this end counts as having received body (the unary rule, span.h) */
	for (struct rc_span *b = e->srv; b; b = b->next)
		b->body_seen = 1;
	if (x && x->resolved) {
		if (x->dom == a->im->domain && x->t_begin > a->t) {
			a->t = x->t_begin;
			a->c->st.clamps++;
		} else if (x->dom != a->im->domain) {
			/* the first byte came after the send began: a bound on
			 * the clocks that a server span opened here needs */
			rc_clock_sample(a->c, x->dom, a->im->domain, x->t_begin,
					a->t);
		}
		a->th->d.req = x->req;
		a->th->d.span = e->cli ? e->cli->parent : 0;
		a->th->d.client_root = x->client_root;
	} else if (e->cli && !e->cli->has_witness) {
		/* A reply from an untraced peer answers the oldest request. */
		a->th->d.req = e->cli->req;
		a->th->d.span = e->cli->parent;
		a->th->d.client_root = e->cli->client_root;
	} else {
		/* Decided by the MSG: a new request, or a reply by witness. */
		memset(&a->th->d, 0, sizeof a->th->d);
	}
	/* A request's server span opens with its first byte, so that the
	 * work it causes before its last byte comes has its parent. */
	if (!e->begun[RC_DIN].sp && begins_request(e, q, x) &&
	    (sp = rc_ap_span_new(a, RC_SK_SERVER, e->proto, x ? x->req : 0,
				 x ? x->span : 0, e)) != NULL) {
		if (x)
			sp->client_root = x->client_root;
		else
			rc_span_root(a->c, sp, 0);
		sp->pending = 1;
		rc_span_push(&e->srv, sp, o);
		a->th->d.req = sp->req;
		a->th->d.span = sp->id;
		a->th->d.client_root = sp->client_root;
		e->begun[RC_DIN].sp = sp;
	}
	e->begun[RC_DIN].t = a->t;
	e->begun[RC_DIN].d = a->th->d;
}

/* The send record of the bytes received at O..O+N (queue Q; NULL: an
 * untraced sender), if it pairs (else counted unpaired); the receive
 * clock sample from it. */
static struct rc_sent *msg_in_sender(struct ap *a, struct rc_dirq *q,
				     uint64_t o, uint64_t n)
{
	struct rc_sent *x = NULL;

	if (q) {
		x = rc_chan_q_find(q, o);
		if (!x || !x->resolved) {
			a->c->st.unpaired_recv++;
			x = NULL;
		}
	}
	if (x)
		recv_clock(a, n ? rc_chan_q_find(q, o + n - 1) : x);
	return x;
}

/* A request message received on E from sender X (NULL: untraced), begun
 * at T0: its server span (EARLY, made at its MSG_BEGIN, or a new one:
 * rule 4 for an untraced sender), and the thread now works for it.  NULL
 * when out of memory. */
static struct rc_span *msg_in_request(struct ap *a, struct rc_end *e,
				      const struct rc_sent *x,
				      struct rc_span *early, int64_t t0)
{
	const struct bt_event *ev = a->ev;
	struct rc_span *sp;

	if (early) {
		sp = early;
		sp->pending = 0;
		sp->proto = ev->proto;
		/* a sender that wrote the request in several calls
		 * made its client span at its own MSG: now known */
		if (x && x->req && x->req == sp->req)
			sp->parent = x->span;
	} else if (x && x->req) {
		sp = rc_ap_span_new(a, RC_SK_SERVER, ev->proto, x->req, x->span, e);
		if (sp)
			sp->client_root = x->client_root;
	} else {
		/* Rule 4: a request from an untraced peer. */
		sp = rc_ap_span_new(a, RC_SK_SERVER, ev->proto, 0, 0, e);
		if (sp)
			rc_span_root(a->c, sp, 0);
	}
	if (!sp)
		return NULL;
	span_request_head(a->c, sp, e, ev, t0, sp->is_root);
	if (!x && sp->is_root && peer_unlogged(a, e)) {
		/* not rule 4: the peer is traced, its send is not in the
		 * log, so what it was doing when it sent is unknown (the
		 * request it served, if any, misses this part) */
		sp->certainty = RC_CT_UNCERTAIN;
		sp->reason = unlogged_send;
		a->c->st.unlogged++;
	} else if (!x && sp->is_root && peer_pending(a, e)) {
		peer_pending_mark(a, sp);
	} else if (!x && sp->is_root && peer_gap(a, e)) {
		peer_gap_mark(a, sp);
	}
	rc_park_batch(a, e, sp);
	desig_set(&a->th->d, sp->req, sp->id, sp->client_root);
	return sp;
}

/* Where the span SP a received message opened (a request) or closed (a
 * reply) goes now: the end's open exchanges, the fragment (a pipe), or
 * its row. */
static void msg_in_place(struct ap *a, struct rc_end *e, struct rc_span *sp,
			 const struct rc_span *early, uint64_t o)
{
	struct rc_ctx *c = a->c;

	if (sp && a->ev->kind == BT_MK_REQUEST) {
		if (early) {
			/* still in e->srv, or answered already */
			if (sp->end != RC_DB_NULL)
				rc_span_finish(c, sp);
		} else if (e->oneway) {
			/* Nothing answers on a pipe: the server span lasts
			 * for the fragment this message starts. */
			if (a->th->frag_span)
				rc_span_finish(c, a->th->frag_span);
			a->th->frag_span = sp;
		} else {
			rc_span_push(&e->srv, sp, o);
		}
	} else if (sp) {                  /* a reply closed its client span */
		rc_span_finish(c, sp);
	}
}

/* The last frame of SP's request brought the complete values of its body
 * (a gRPC message, protocols/http2.c): what it received is known whole,
 * and content may now decide by it (tokens.c). */
static void body_values(struct rc_span *sp, const struct bt_event *ev)
{
	const struct bt_attr *p = rc_attr(ev, BT_AK_PARAMS);

	/* empty: redacted (sql-literals), what it held is unknown */
	if (!p || !p->len || !sp->tok_body || sp->body_params)
		return;
	sp->body_params = strndup(p->val, p->len);
	if (sp->body_params)
		sp->tok_partial = 0;
}

static void on_msg_in(struct ap *a, struct rc_end *e, uint64_t o)
{
	struct rc_ctx *c = a->c;
	const struct bt_event *ev = a->ev;
	struct rc_desig *d = &a->th->d;
	uint64_t n = rc_msg_units(e, ev);
	int begun = e->begun[RC_DIN].valid && e->begun[RC_DIN].off == o;
	struct rc_dirq *q = rc_msg_recv_q(a, e, o);
	struct rc_span *sp = NULL;
	uint64_t req = 0, span = 0, msg = ++a->m->next_msg;

	rc_frag_input(a, e, RC_TR_MSG, o, begun);
	const struct rc_sent *x = msg_in_sender(a, q, o, n);
	uint64_t peer_msg = x ? x->msg : 0;
	int64_t t0 = begun ? e->begun[RC_DIN].t : a->t;
	struct rc_span *early = begun ? e->begun[RC_DIN].sp : NULL;
	if (begun) {
		e->begun[RC_DIN].valid = 0;
		e->begun[RC_DIN].sp = NULL;
	}
	if (early && ev->kind != BT_MK_REQUEST) {
		rc_span_discard(c, &e->srv, early);
		early = NULL;
	}

	switch (ev->kind) {
	case BT_MK_REQUEST:
		sp = msg_in_request(a, e, x, early, t0);
		if (sp) {
			req = sp->req;
			span = sp->id;
		}
		break;
	case BT_MK_REPLY:
		if (e->oneway)
			goto oneway;
		sp = rc_span_match(&e->cli, ev);
		if (sp) {
			req = sp->req;
			span = sp->id;
			if (x && x->req && x->req != req)
				c->st.reply_mismatch++;
			if (!x && peer_unlogged(a, e)) {
				/* answered by a traced program that did
				 * not log the answer: the work behind it
				 * is not in the log */
				sp->certainty = RC_CT_UNCERTAIN;
				sp->reason = unlogged_send;
				c->st.unlogged++;
			} else if (!x && peer_pending(a, e)) {
				peer_pending_mark(a, sp);
			} else if (!x && peer_gap(a, e)) {
				peer_gap_mark(a, sp);
			}
			sp->end = a->t;
			sp->status = rc_msg_status(ev);
			desig_set(d, sp->req, sp->parent, sp->client_root);
		} else {
			c->st.unmatched_replies++;
			if (x)
				desig_set(d, x->req, x->span, x->client_root);
			else
				*d = e->last;
			req = d->req;
			span = d->span;
		}
		break;
	case BT_MK_CONTROL:
		*d = e->last;
		break;
	default:
	oneway:
		if ((ev->flags & BT_MF_WITNESS) &&
		    (sp = rc_span_witness(e->srv, ev->witness)) != NULL) {
			/* a multiplexed exchange's frame (HTTP/2: a request
			 * body): its own exchange here, whoever sent it (the
			 * sender's designation is a span of the sender's) */
			desig_set(d, sp->req, sp->id, sp->client_root);
			sp->body_seen = 1;
			body_values(sp, ev);
			sp = NULL;
		} else if ((ev->flags & BT_MF_WITNESS) &&
			   (sp = rc_span_witness(e->cli, ev->witness)) != NULL) {
			/* (a reply's frame before its last) */
			desig_set(d, sp->req, sp->parent, sp->client_root);
			sp = NULL;
		} else if (x) {
			desig_set(d, x->req, x->span, x->client_root);
		} else if (e->cli)
			desig_set(d, e->cli->req, e->cli->parent,
				  e->cli->client_root);
		else
			*d = e->last;
		req = d->req;
		span = d->span;
		break;
	}
	if (req)
		e->last = *d;
	message_row(a, e, RC_DIN, o, req, span, begun ? t0 : RC_DB_NULL, peer_msg,
		    msg);
	end_advance(a, e, RC_DIN, o, n);
	e->msgs[RC_DIN]++;
	if (q)
		rc_chan_q_consume(q, o + n);
	msg_in_place(a, e, sp, early, o);
}

static void on_data_out(struct ap *a, struct rc_end *e, uint64_t o)
{
	struct rc_desig d = a->th->d;
	uint64_t n = rc_msg_units(e, a->ev);
	struct rc_dirq *q = rc_chan_send_q(a->c, e);

	if (q) {
		struct rc_sent *x = q->n ? rc_chan_q_at(q, q->n - 1) : NULL;
		if (!x || x->end != o || x->kind || x->req != d.req ||
		    x->span != d.span || !x->resolved) {
			x = rc_chan_q_push(a->c, q, o);
			if (x) {
				x->t_begin = a->t;
				x->req = d.req;
				x->span = d.span;
				x->client_root = d.client_root;
				x->dom = a->im->domain;
				x->resolved = 1;
			}
		}
		if (x) {
			x->end = o + n;
			x->t_end = a->t;
			rc_chan_q_advance(a->c, e->conn, e->side);
		}
	}
	if (!d.req)
		a->c->st.unattr_data_bytes += a->ev->len;
	else
		e->last = d;
	end_advance(a, e, RC_DOUT, o, n);
}

static void on_data_in(struct ap *a, struct rc_end *e, uint64_t o)
{
	struct rc_ctx *c = a->c;
	uint64_t n = rc_msg_units(e, a->ev);
	struct rc_dirq *q = rc_msg_recv_q(a, e, o);
	struct rc_sent *x = q ? rc_chan_q_find(q, o) : NULL;

	rc_frag_input(a, e, RC_TR_DATA, o, 0);
	if (x && x->resolved) {
		recv_clock(a, n ? rc_chan_q_find(q, o + n - 1) : x);
		desig_set(&a->th->d, x->req, x->span, x->client_root);
	} else {
		if (q)
			c->st.unpaired_recv++;
		a->th->d = e->last;
	}
	if (a->th->d.req)
		e->last = a->th->d;
	else
		c->st.unattr_data_bytes += a->ev->len;
	end_advance(a, e, RC_DIN, o, n);
	if (q)
		rc_chan_q_consume(q, o + n);
}

void rc_msg_record(struct ap *a)
{
	const struct bt_event *ev = a->ev;
	int dir = ev->dir == BT_DIR_OUT ? RC_DOUT : RC_DIN;
	uint64_t o = 0;
	struct rc_end *e = rec_end(a, dir, &o);

	if (!e)
		return;
	if (a->s->released == RC_REL_GONE) {
		struct rc_ctx *c = a->c;
		c->st.released++;
		if (e->kind == BT_CK_PIPE)  /* its own kind (notes.c) */
			rc_warn(c, rc_file_path(c, a->s->rec.file), a->s->rec.file_off,
				"host %s pid %u: the writer of fd %d (a pipe, written through stdio or by an untraced program) closed without logging the send of offset %" PRIu64 "; that receive counts as from an untraced peer",
				c->hosts[a->im->host].name, a->im->pid, ev->fd, o);
		else
			rc_warn(c, rc_file_path(c, a->s->rec.file), a->s->rec.file_off,
				"host %s pid %u: the peer of fd %d closed without logging the send of offset %" PRIu64 "; that receive counts as from an untraced peer",
				c->hosts[a->im->host].name, a->im->pid, ev->fd, o);
	}
	switch (ev->type) {
	case BT_EV_MSG:
		if (dir == RC_DOUT)
			on_msg_out(a, e, o);
		else
			on_msg_in(a, e, o);
		break;
	case BT_EV_MSG_BEGIN:
		if (dir == RC_DOUT)
			on_msg_begin_out(a, e, o);
		else
			on_msg_begin_in(a, e, o);
		break;
	case BT_EV_DATA:
		if (dir == RC_DOUT)
			on_data_out(a, e, o);
		else
			on_data_in(a, e, o);
		break;
	}
}
