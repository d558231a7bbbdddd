/*
 * park.c - the parked detector and the certainty rules it applies while
 * the model runs (park.h; docs/reconstruct.md, "Certainty").
 */
#include "config.h"

#include <stddef.h>

#include "apply.h"
#include "chan.h"
#include "db.h"
#include "park.h"
#include "span.h"

/*
 * A request is parked in a process when a fragment working for it ends
 * (the thread goes back to wait, or reads another request's input)
 * without answering it, without a call of its own awaiting a reply, and
 * no other thread of the process works for it.  While requests are parked
 * in a process, a request message it sends may be theirs: the span is
 * marked (rc_span_sent).  docs/reconstruct.md, "Certainty".
 */

/* Could SP, the open server span of REQ, be parked in image IM's
 * process? */
static inline int parkable_in(const struct rc_image *im,
			      const struct rc_span *sp, uint64_t req)
{
	return sp && sp->req == req && sp->host == im->host &&
	       sp->pid == im->pid && sp->end == RC_DB_NULL &&
	       !sp->pending && !sp->answering && !sp->ncalls && !sp->parked;
}

/* ... in the process of the record being applied? */
static inline int parkable(const struct ap *a, const struct rc_span *sp,
			   uint64_t req)
{
	return parkable_in(a->im, sp, req);
}

/* Does the work of SP's request go on at an event the log shows, other
 * than a reply: a write it asked to be told of (WANT out), a connection
 * it opened that has carried nothing yet (a connect in progress)?  1 if
 * so; 2 if only its own channel waits to be writable (a fragment asked
 * for it: an event library's output buffer, where its answer may wait
 * behind an earlier one's): decided when that output is out. */
static int has_continuation(const struct rc_proc *p, const struct rc_span *sp)
{
	uint64_t req = sp->req;
	int own = 0;

	for (uint32_t fd = 0; fd < p->nfds; fd++) {
		const struct rc_end *e = p->fds[fd].end;
		if (!e)
			continue;
		if (e->has_want_out && e->want_out.req == req)
			return 1;
		if (e->has_want_out && e->channel_id == sp->channel_id)
			own = 2;
		if (e->role == BT_CR_CONNECT && e->open_req == req &&
		    !e->bytes[RC_DOUT])
			return 1;
	}
	return own;
}

/*
 * The first request message on connection E (offset O) goes to request
 * REQ, not to the request whose fragment opened E.  That request was not
 * parked because its work goes on at the connect (has_continuation); the
 * connection carried another request's message instead, so its work goes
 * on where the log does not show (haproxy sends a queued request's call
 * from whichever request's event takes the connection): it is parked now,
 * a candidate of this message and of those sent while it stays parked.
 */
void rc_park_connect_taken(struct ap *a, const struct rc_end *e,
			       uint64_t o, uint64_t req)
{
	if (e->role != BT_CR_CONNECT || o != 0 || !e->open_req ||
	    e->open_req == req)
		return;
	struct rc_span *sp = rc_span_srv(a->c, e->open_span);
	if (parkable(a, sp, e->open_req))
		rc_span_park(a->c, sp, RC_PARK_WAIT);
}

/*
 * E's output is out (WANT without out): the request W whose fragment last
 * asked for it counted that writable event as where its work goes on.
 * An event library asks again for a channel whose output still holds an
 * earlier request's answer (libevent, reading the next pipelined request,
 * keeps writing on): the event only writes that answer.  If no thread
 * works for W now and nothing else continues it, W is parked now, as its
 * fragment's end would have parked it without that WANT.
 */
void rc_park_want_lost(struct ap *a, const struct rc_desig *w)
{
	struct rc_proc *p = a->im->run->attached ? a->im->run->proc : NULL;
	struct rc_span *sp = rc_span_srv(a->c, w->span);

	if (!p || !w->req || !parkable(a, sp, w->req))
		return;
	for (const struct rc_thr *o = p->threads; o; o = o->pnext)
		if (o->frag.open && o->d.req == w->req)
			return;   /* its fragment's end decides */
	int cont = has_continuation(p, sp);
	if (cont == 0)
		rc_span_park(a->c, sp, RC_PARK_WAIT);
	else if (cont == 2)
		sp->park_defer = 1;
}

/*
 * Does O's next record, EV (the head the merge has read ahead), end O's
 * fragment by taking input: a READY other than a one-fd wait that stays
 * in the fragment, or an incoming message or DATA that does not continue
 * the fragment's input (frag_input)?  Then O is waiting for that input
 * now.
 */
int rc_park_takes_input(const struct rc_frag *f, const struct bt_event *ev)
{
	if (ev->type == BT_EV_READY)
		return !(ev->flags & BT_RF_ALONE) ||
		       (ev->fd >= 0 && (ev->flags & 1));
	if ((ev->type != BT_EV_MSG && ev->type != BT_EV_MSG_BEGIN &&
	     ev->type != BT_EV_DATA) || ev->dir != BT_DIR_IN)
		return 0;
	if (f->fd != ev->fd)
		return 1;
	if ((f->trigger == RC_TR_READY || f->trigger == RC_TR_ACCEPT) &&
	    !f->had_input)
		return 0;
	return !(ev->type == BT_EV_MSG && f->last_type == BT_EV_MSG_BEGIN) &&
	       !(ev->type == BT_EV_DATA && f->last_type == BT_EV_DATA);
}


/* Does a thread of P other than O work for REQ (an open fragment)? */
static int other_works(const struct rc_proc *p, const struct rc_thr *o,
		       uint64_t req)
{
	const struct rc_thr *x = p->threads;
	while (x && (x == o || !x->frag.open || x->d.req != req))
		x = x->pnext;
	return x != NULL;
}

/*
 * While the logs grow: would applying R's head, a request message sent,
 * have rc_park_waiting ask a dry thread of its process (one at the end
 * of what its stream has) for its next record?  The merge waits for that
 * record first (merge.c).  It may say yes where the look would not be
 * needed after all (the message's own effects are not applied yet): the
 * merge then only waits.
 */
int rc_park_needs_ahead(struct rc_ctx *c, const struct rc_run *r)
{
	const struct bt_event *ev = &r->ev;
	const struct rc_image *im = &c->images[r->st->image];

	if (ev->type != BT_EV_MSG || ev->dir != BT_DIR_OUT ||
	    ev->kind != BT_MK_REQUEST || !im->run || !im->run->attached ||
	    !im->run->proc)
		return 0;
	struct rc_proc *p = im->run->proc;
	for (const struct rc_thr *o = p->threads; o; o = o->pnext) {
		const struct rc_run *or = (const struct rc_run *)
			((const char *)o - offsetof(struct rc_run, thr));
		uint64_t req = o->d.req;
		if (o == &r->thr || or->state != RC_SS_DRY || !o->frag.open ||
		    !req)
			continue;
		const struct rc_span *sp = rc_span_srv(c, o->d.span);
		if (parkable_in(im, sp, req) && !has_continuation(p, sp) &&
		    !other_works(p, o, req))
			return 1;
	}
	return 0;
}

/*
 * A request message is about to be sent from this process: another
 * thread whose next record takes input (read ahead by the merge, later
 * than this send) has gone back to wait already, though the record that
 * ends its fragment comes later.  Its request, if its fragment's end would
 * park it (rc_park_check) and that input is not on a channel the request
 * used last (its own connection, its CGI's pipe), is parked from now: a hidden queue's reader waits while a worker sends
 * the calls of the request it read.  When that thread's next fragment
 * works for it, rc_park_resolve un-parks it.
 */
void rc_park_waiting(struct ap *a)
{
	struct rc_proc *p = a->im->run->attached ? a->im->run->proc : NULL;

	if (!p)
		return;
	for (struct rc_thr *o = p->threads; o; o = o->pnext) {
		struct rc_run *or = (struct rc_run *)
			((char *)o - offsetof(struct rc_run, thr));
		uint64_t req = o->d.req;
		if (o == a->th || !o->frag.open || !req)
			continue;
		/* first what is cheapest to rule out: a server span that is
		 * not open (the thread answered its request and waits) */
		struct rc_span *sp = rc_span_srv_cached(a->c, o->d.span,
							&o->srv_id, &o->srv_sp);
		if (!parkable(a, sp, req) || or->state == RC_SS_DONE)
			continue;
		if (or->state == RC_SS_DRY) {
			/* the logs grow and its next record is not in them
			 * yet: what follows would ask it.  If nothing else
			 * rules the thread out, the merge checks that record
			 * when it comes (merge.c, resume) */
			if (!or->peeked && !has_continuation(p, sp) &&
			    !other_works(p, o, req)) {
				or->peeked = 1;
				or->peek_frag = o->frag;
				a->c->st.merge_dry_peeked++;
			}
			continue;
		}
		if (!rc_park_takes_input(&o->frag, &or->ev) || has_continuation(p, sp))
			continue;
		const struct rc_fdent *fe = or->ev.fd >= 0 ?
			rc_chan_fd_get(p, or->ev.fd, or->head_t) : NULL;
		if (fe && (fe->end->channel_id == sp->channel_id ||
			   fe->end->last.req == req))
			continue;         /* more of its own connection, or a
					     channel it used: its CGI's pipe */
		if (other_works(p, o, req))
			continue;         /* another thread works for it */
		rc_span_park(a->c, sp, or->ev.type == BT_EV_READY ?
			     RC_PARK_WAIT : RC_PARK_READAHEAD);
	}
}

/*
 * Thread TH, whose fragment working for SP's request ended, has read
 * another request's input without waiting (RC_PARK_READAHEAD): is SP's
 * work visibly over, its answer only waiting in an output buffer?  So
 * when the input is the next request on SP's own connection (a
 * pipelined one, whose answer must follow SP's) and SP made calls, all
 * from TH and all answered: TH did SP's work itself, call by call, and
 * came back to SP's connection for the next request only after the last
 * reply (apache's check for a pipelined request before it flushes).  A
 * server that reads the next request before it makes the previous one's
 * calls (a read-ahead proxy) made none yet: SP is parked.
 * docs/reconstruct.md, "Certainty".
 */
static int park_work_done(const struct rc_thr *th, const struct rc_span *sp)
{
	uint32_t tid = th->tid ? th->tid : sp->pid;

	return (th->park_why == RC_PARK_READAHEAD ||
		th->park_why == RC_PARK_BATCHED) &&
	       th->frag.channel_id == sp->channel_id &&
	       sp->caller == tid && !sp->many_callers && !sp->ncalls;
}

/*
 * Without event isolation one read hands over several pipelined requests:
 * request SP is read on E while the thread's request is an earlier one on
 * the same connection that has made no call, not answered.  The thread
 * works for both from memory: both are parked 'ambiguous:batched' until
 * answered or ended (working for them does not un-park them), so every
 * call and file of the process meanwhile lists them as candidates.
 * docs/reconstruct.md, "Without event isolation".
 */
void rc_park_batch(struct ap *a, const struct rc_end *e,
		       struct rc_span *sp)
{
	if (a->im->pflags & BT_PF_ISOLATION)
		return;
	struct rc_span *prev = rc_span_srv(a->c, a->th->d.span);
	if (!prev || prev == sp || prev->req != a->th->d.req ||
	    prev->channel_id != e->channel_id || prev->host != a->im->host ||
	    prev->pid != a->im->pid || prev->end != RC_DB_NULL ||
	    prev->pending || prev->answering || prev->caller)
		return;
	if (prev->parked != RC_PARK_BATCHED) {
		rc_span_unpark(a->c, prev);
		rc_span_park(a->c, prev, RC_PARK_BATCHED);
	}
	rc_span_park(a->c, sp, RC_PARK_BATCHED);
}

/* The thread's fragment ends: remember its request's server span if it
 * may be left parked (decided once the next designation is known). */
void rc_park_check(struct ap *a)
{
	struct rc_thr *th = a->th;
	const struct rc_desig *d = &th->d;

	th->park_cand = 0;
	if (!d->req || !a->im->run->attached || !a->im->run->proc)
		return;
	struct rc_span *sp = rc_span_srv(a->c, d->span);
	if (!parkable(a, sp, d->req))
		return;
	struct rc_proc *p = a->im->run->proc;
	for (const struct rc_thr *o = p->threads; o; o = o->pnext)
		if (o != th && o->frag.open && o->d.req == d->req)
			return;
	int cont = has_continuation(p, sp);
	if (cont == 1)
		return;
	th->park_cand = sp->id;
	th->park_why = RC_PARK_WAIT;
	th->park_defer = cont == 2;
}

/* After a record: park the candidate the thread left if it now works for
 * another request (or for none: ALWAYS, the thread ended); a thread that
 * works for a parked request un-parks it. */
void rc_park_resolve(struct ap *a, int always)
{
	struct rc_thr *th = a->th;
	struct rc_ctx *c = a->c;

	if (th->park_cand) {
		struct rc_span *sp = rc_span_srv(c, th->park_cand);
		if (sp && (always || th->d.req != sp->req) &&
		    parkable(a, sp, sp->req)) {
			if (th->park_defer)
				sp->park_defer = 1;
			else if (always || !park_work_done(th, sp))
				rc_span_park(c, sp, th->park_why);
		}
		th->park_cand = 0;
	}
	if (!always && th->d.req && rc_span_nparked(c))
		rc_span_unpark_req(c, a->im->host, a->im->pid, th->d.req);
}

/* E's output is out (a WANT without out): see park.h. */
void rc_park_output_out(struct ap *a, struct rc_end *e)
{
	int had = e->has_want_out;
	e->has_want_out = 0;
	if (had)
		rc_park_want_lost(a, &e->want_out);
	/* its output is out: a request whose answer was thought to
	 * wait in it, still unanswered, waits for something else */
	for (struct rc_span *sp = e->srv; sp; sp = sp->next)
		if (sp->park_defer) {
			sp->park_defer = 0;
			if (parkable(a, sp, sp->req))
				rc_span_park(a->c, sp, RC_PARK_WAIT);
		}
}
