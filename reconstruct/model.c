/*
 * model.c - the path rules applied to records in causal order (model.h):
 * the dispatch of each record, fragments, channels opened and closed,
 * readiness, name lookups, files; the rules of messages are in msg.c,
 * of lineage in lineage.c, the parked detector in park.c (all sharing
 * the record being applied, apply.h).
 *
 * The state is the designation of each thread (struct rc_thr, in its
 * stream), its current fragment, the lineage snapshots parents leave for
 * their children, and what chan.c (fd tables, ends, connections, send
 * queues) and span.c (open exchanges and requests) keep.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "btrace/proto.h"
#include "chan.h"
#include "clock.h"
#include "db.h"
#include "input.h"
#include "apply.h"
#include "merge.h"
#include "lineage.h"
#include "model.h"
#include "msg.h"
#include "park.h"
#include "scan.h"
#include "tokens.h"

struct rc_lookup {
	struct rc_lookup *next;
	uint64_t cookie;
	struct rc_span *span;
};

static const char *const trigger_names[] = {
	[RC_TR_START] = "start", [RC_TR_READY] = "ready",
	[RC_TR_TIMEOUT] = "timeout", [RC_TR_MSG] = "message",
	[RC_TR_DATA] = "data", [RC_TR_ACCEPT] = "accept",
	[RC_TR_SIGNAL] = "signal", [RC_TR_GAP] = "gap",
};

/* List the thread in its process's threads (once the image has one). */
static void thread_list(struct rc_thr *th, struct rc_imrun *run)
{
	if (th->pproc || !run->attached || !run->proc)
		return;
	th->pproc = run->proc;
	th->pnext = run->proc->threads;
	run->proc->threads = th;
}

static void thread_unlist(struct rc_thr *th)
{
	if (!th->pproc)
		return;
	for (struct rc_thr **pp = &th->pproc->threads; *pp; pp = &(*pp)->pnext)
		if (*pp == th) {
			*pp = th->pnext;
			break;
		}
	th->pproc = NULL;
	th->pnext = NULL;
}

/* ---- fragments ------------------------------------------------------------ */

void rc_frag_close(struct ap *a)
{
	struct rc_frag *f = &a->th->frag;
	struct rc_ctx *c = a->c;

	if (a->th->frag_span) {
		a->th->frag_span->end = f->open ? f->last : a->t;
		rc_span_finish(c, a->th->frag_span);
		a->th->frag_span = NULL;
	}
	if (!f->open)
		return;
	rc_park_check(a);
	struct rc_row_fragment r = {
		.id = ++a->m->next_frag, .req = a->th->d.req,
		.span = a->th->d.span, .process_id = a->im->run->process_id,
		.channel_id = f->channel_id, .dom = a->im->domain,
		.pid = a->im->pid, .tid = a->th->tid ? a->th->tid : a->im->pid,
		.start = f->start, .end = f->last,
		.fd = f->fd >= 0 ? f->fd : RC_DB_NULL,
		.trigger = trigger_names[f->trigger], .events = f->events,
	};
	if (!rc_rows_begin(c, r.req)) {
		rc_db_fragment(c, &r);
		rc_rows_end(c);
	}
	c->st.fragments++;
	if (!r.req)
		c->st.unattr_fragments++;
	f->open = 0;
}

void rc_frag_open(struct ap *a, uint8_t trigger, int32_t fd,
		  uint64_t channel)
{
	struct rc_frag *f = &a->th->frag;

	rc_frag_close(a);
	if (trigger == RC_TR_MSG || trigger == RC_TR_DATA)
		a->th->park_why = (a->im->pflags & BT_PF_ISOLATION) ?
				  RC_PARK_READAHEAD : RC_PARK_BATCHED;
	memset(f, 0, sizeof *f);
	f->open = 1;
	f->trigger = trigger;
	f->fd = fd;
	f->channel_id = channel;
	f->start = f->last = a->t;
}

/*
 * An input record on FD: a new fragment unless it continues the input
 * event of the current one (the read after READY on that fd or after it
 * was accepted, the MSG of the MSG_BEGIN this fragment began with, more
 * DATA of the same read).
 */
void rc_frag_input(struct ap *a, struct rc_end *e, uint8_t trigger,
		   uint64_t off, int begun)
{
	struct rc_frag *f = &a->th->frag;
	uint8_t type = a->ev->type;
	int32_t fd = a->ev->fd;
	int cont = 0;

	a->th->inherited = 0;       /* designated by input from now on */

	if (f->open && f->fd == fd) {
		/* the first read after READY on the fd, or after accepting
		 * it, is the input that fragment was waiting for */
		if ((f->trigger == RC_TR_READY || f->trigger == RC_TR_ACCEPT) &&
		    !f->had_input)
			cont = 1;
		else if (type == BT_EV_MSG && begun &&
			 f->last_type == BT_EV_MSG_BEGIN && f->last_off == off)
			cont = 1;
		else if (type == BT_EV_DATA && f->last_type == BT_EV_DATA)
			cont = 1;
	}
	if (!cont)
		rc_frag_open(a, trigger, fd, e->channel_id);
	f->had_input = 1;
	f->last_type = type;
	f->last_off = off;
}


/* The thread's fragment state and the one kept aside in TH->sig change
 * places (SIGNAL begin and end). */
static void sig_swap(struct rc_thr *th)
{
#define SWAP(f) do { __typeof__(th->f) t_ = th->f; th->f = th->sig.f; \
		     th->sig.f = t_; } while (0)
	SWAP(frag);
	SWAP(d);
	SWAP(frag_span);
	SWAP(lookups);
	SWAP(park_cand);
	SWAP(park_why);
	SWAP(park_defer);
	SWAP(inherited);
#undef SWAP
}

/*
 * SIGNAL begin: a signal handler ran while the thread was inside a read's
 * system call, in the middle of a fragment; its calls follow, until
 * SIGNAL end.  They are a fragment of their own, for no request (a signal
 * comes from outside the thread's work), and the interrupted fragment is
 * kept aside as it was - not ended: its server span, its parked state
 * and its wait for the read's input go on after the handler.
 */
static void sig_begin(struct ap *a)
{
	struct rc_thr *th = a->th;

	if (th->in_sig)
		return;            /* (a handler inside a handler is never
				      recorded: no second begin) */
	sig_swap(th);
	th->in_sig = 1;
	th->park_why = th->sig.park_why;
	th->park_defer = th->sig.park_defer;
	th->frag_span = NULL;
	th->lookups = NULL;
	th->park_cand = 0;
	th->inherited = 0;
	memset(&th->d, 0, sizeof th->d);
	memset(&th->frag, 0, sizeof th->frag);
	th->frag.open = 1;
	th->frag.trigger = RC_TR_SIGNAL;
	th->frag.noreq = 1;
	th->frag.fd = -1;
	th->frag.start = th->frag.last = a->t;
}

/* SIGNAL end (or whatever ends the handler first: a loss, the thread's
 * end): the handler's fragment ends, the interrupted one is back. */
void rc_sig_end(struct ap *a)
{
	struct rc_thr *th = a->th;

	if (!th->in_sig)
		return;
	rc_frag_close(a);
	rc_lookups_close(a);
	sig_swap(th);
	th->in_sig = 0;
}

void rc_lookups_close(struct ap *a)
{
	struct rc_lookup *l;
	while ((l = a->th->lookups)) {
		a->th->lookups = l->next;
		rc_span_finish(a->c, l->span);
		free(l);
	}
}

static int same_identity(const struct rc_end *e, const struct bt_event *ev)
{
	if (e->kind != ev->chan_kind)
		return 0;
	switch (ev->chan_kind) {
	case BT_CK_PIPE:
	case BT_CK_UNIX_STREAM:
	case BT_CK_UNIX_DGRAM:
		return ev->ino && e->ino == ev->ino;
	case BT_CK_TCP:
	case BT_CK_UDP: {
		struct bt_addr l = rc_addr_norm(&ev->local);
		struct bt_addr r = rc_addr_norm(&ev->remote);
		return l.family && rc_addr_eq(&e->local, &l) &&
		       rc_addr_eq(&e->remote, &r);
	}
	default:
		return 0;
	}
}

static void on_chan(struct ap *a)
{
	struct rc_ctx *c = a->c;
	struct rc_run *s = a->s;
	const struct bt_event *ev = a->ev;
	struct rc_proc *p = rc_lineage_proc_of(a);

	if (s->entry_next >= s->st->nentry || !p)
		return;
	uint32_t ei;
	struct rc_entry en;
	if (rc_scan_entry(c, s, s->entry_next++, &en, &ei) < 0)
		return;
	struct rc_conn *cn = rc_chan_conn_get(c, en.conn, &en.info);
	if (!cn)
		return;
	cn->pending[en.side < 2 ? en.side : 2]--;

	/* An end this process already holds, announced again after exec. */
	if (!rc_role_fresh(ev->role)) {
		struct rc_end *old = NULL;
		struct rc_fdent *fe = rc_chan_fd_get(p, ev->fd, a->rt);
		if (fe && same_identity(fe->end, ev))
			old = fe->end;
		for (uint32_t fd = 0; !old && fd < p->nfds; fd++)
			if (p->fds[fd].end && same_identity(p->fds[fd].end, ev))
				old = p->fds[fd].end;
		if (old) {
			rc_chan_fd_set(c, p, ev->fd, old, old->hwm, a->rt);
			rc_chan_conn_maybe_free(c, cn);
			return;
		}
	}

	struct rc_end *e = calloc(1, sizeof *e);
	if (!e)
		return;
	if (ev->role == BT_CR_ACCEPT) {
		/* A new connection is an input from outside: the work that
		 * follows a blocking accept is no request's until a message
		 * arrives (after READY on the listening fd it already is). */
		struct rc_frag *f = &a->th->frag;
		if (f->open && f->trigger == RC_TR_READY && f->fd == ev->fd2 &&
		    !f->had_input)
			f->had_input = 1;
		else
			rc_frag_open(a, RC_TR_ACCEPT, ev->fd, (uint64_t)ei + 1);
		memset(&a->th->d, 0, sizeof a->th->d);
	}
	e->conn = cn;
	e->channel_id = (uint64_t)ei + 1;
	e->entry = ei;
	e->peer_entry = en.peer;
	e->side = en.side;
	e->entry_unknown = en.side > 1;
	e->kind = ev->chan_kind;
	e->role = ev->role;
	e->oneway = ev->chan_kind == BT_CK_PIPE;
	e->dgram = ev->chan_kind == BT_CK_UDP || ev->chan_kind == BT_CK_UNIX_DGRAM;
	e->dom = a->im->domain;
	e->pid = a->im->pid;
	e->process_id = a->im->run->process_id;
	e->fd = ev->fd;
	e->local = rc_addr_norm(&ev->local);
	e->remote = rc_addr_norm(&ev->remote);
	e->path = ev->str_len ? rc_strndup(ev->str, ev->str_len) : NULL;
	e->ino = ev->ino;
	e->peer_ino = ev->peer_ino;
	e->last = a->th->d;
	e->open_req = a->th->d.req;
	e->open_span = a->th->d.span;
	e->open_t = a->t;
	if (e->side < 2) {
		cn->live[e->side]++;
		/* a new end sends from offset 0: its sends never seed the
		 * queue mid-stream (see rc_chan_q_push) */
		if (rc_role_fresh(ev->role))
			cn->dir[e->side].seeded = 1;
	} else {
		cn->unknown_live++;
	}
	c->st.channels++;
	if (rc_chan_fd_set(c, p, ev->fd, e, NULL, a->rt) < 0) {
		e->refs = 1;              /* no fd took it: close it now */
		rc_chan_end_unref(c, e, a->t);
	}
}

/*
 * A READY that begins work for no request (a timeout, a descriptor of no
 * channel) while the thread's fragment works for no request and holds
 * nothing but the READY that began it: that fragment goes on.  A second
 * empty fragment for no request would say nothing, and libbtrace does not
 * write such a READY (docs/events.md "READY"): logs with and without it
 * give the same database.  It counts neither as an event of the fragment
 * nor for its end.
 */
static int ready_continues(struct ap *a, const struct rc_fdent *fe)
{
	const struct rc_frag *f = &a->th->frag;

	return (a->ev->fd < 0 || !fe) && f->open && f->noreq && f->events == 1;
}

/*
 * A wait on one fd alone (BT_RF_ALONE: a poll or select of one fd) that
 * timed out (READY -1) or reports only writability is part of the
 * fragment that made it: a blocking wait with a timeout before a write
 * (CPython polls for POLLOUT before every send on a socket with a
 * timeout), a pooled connection's liveness check (urllib3 polls it for
 * input with a zero timeout before reusing it).  No input is taken: the
 * thread goes on with what it was doing, in the same fragment, for the
 * same request.  docs/reconstruct.md, "Readiness".
 */
static int ready_alone_within(const struct ap *a)
{
	const struct bt_event *ev = a->ev;

	if (!(ev->flags & BT_RF_ALONE))
		return 0;
	return ev->fd < 0 || (!(ev->flags & 1) && (ev->flags & 4));
}

void rc_frag_unknown(struct ap *a, uint8_t trigger, int32_t fd,
		     const char *why)
{
	rc_frag_open(a, trigger, fd, 0);
	a->th->frag.noreq = 1;
	a->th->frag.lost = why;
	a->th->inherited = 0;
	memset(&a->th->d, 0, sizeof a->th->d);
}

int rc_frag_uncertain(struct ap *a, const char *reason)
{
	struct rc_span *sp;

	if (!a->th->frag.open || !a->th->d.req)
		return 0;
	sp = rc_span_srv(a->c, a->th->d.span);
	if (!sp || sp->certainty == RC_CT_UNCERTAIN)
		return 0;
	sp->certainty = RC_CT_UNCERTAIN;
	sp->reason = reason;
	return 1;
}

/*
 * The tracer could not record some events of this thread (DROP, written
 * before its next record: the loss is in the thread's current fragment).
 * The request that fragment works for may miss a span or have one too
 * many: its server span here, if still open, is uncertain ('lost-events').
 * A pause's calls (BT_DR_PAUSED) are not: their channels go dark.
 */
static void drop_uncertain(struct ap *a)
{
	struct rc_frag *f = &a->th->frag;

	if (a->ev->flags == BT_DR_PAUSED)
		return;
	if (rc_frag_uncertain(a, "lost-events"))
		a->c->st.lost_in_span++;
	/* Working for no request, the loss may have held the input of one
	 * (a READY, a read) whose work follows: a request that work sends
	 * is not known to be a root (rule 5, msg.c).  Not a signal
	 * handler's lost call (BT_DR_REENTRANT), which takes no input of
	 * the thread's. */
	else if (a->ev->flags != BT_DR_REENTRANT && f->open && !a->th->d.req &&
		 !f->lost)
		f->lost = "lost-events";
}

/*
 * Records of this thread are in no log (a gap in its stream: a block lost
 * or torn, damage, a segment removed; input.c, lose).  As with DROP, the
 * request its fragment worked for may miss work: its server span here,
 * if still open, is uncertain ('lost-events').  And the gap may have held
 * the input of another request, whose work then follows: the thread goes
 * on in a fragment of no request (trigger 'gap') until its next input,
 * so that work is never given to the request it worked for before.
 */
static void gap_work(struct ap *a)
{
	rc_sig_end(a);
	if (rc_frag_uncertain(a, "lost-events"))
		a->c->st.lost_in_span++;
	rc_frag_unknown(a, RC_TR_GAP, -1, "lost-events");
	a->c->st.gap_fragments++;
}

static void on_ready(struct ap *a)
{
	const struct bt_event *ev = a->ev;
	struct rc_proc *p = a->im->run->attached ? a->im->run->proc : NULL;
	struct rc_fdent *fe = ev->fd >= 0 ?
		rc_chan_fd_get(p, ev->fd, a->rt) : NULL;

	if (ready_continues(a, fe)) {
		a->merged = 1;
		return;
	}
	if (ready_alone_within(a)) {
		if (!a->th->frag.open)
			rc_frag_open(a, ev->fd < 0 ? RC_TR_TIMEOUT :
				     RC_TR_READY, ev->fd,
				     fe ? fe->end->channel_id : 0);
		return;
	}
	if (ev->fd < 0) {
		/* a timeout, or a signal handler's calls made during the wait
		 * (BT_RF_SIGNAL): work for no request */
		rc_frag_open(a, (ev->flags & BT_RF_SIGNAL) ? RC_TR_SIGNAL :
			     RC_TR_TIMEOUT, -1, 0);
		a->th->frag.noreq = 1;
		memset(&a->th->d, 0, sizeof a->th->d);
		return;
	}
	rc_frag_open(a, RC_TR_READY, ev->fd, fe ? fe->end->channel_id : 0);
	if (!fe) {
		/* A listening socket, a timer, an eventfd: an input from
		 * outside every channel works for no request. */
		a->th->frag.noreq = 1;
		memset(&a->th->d, 0, sizeof a->th->d);
		return;
	}
	struct rc_end *e = fe->end;
	if (!(ev->flags & 1) && (ev->flags & 4) && e->has_want_out) {
		/* Writable, and a fragment asked for it (WANT): the output
		 * waiting in the program is that fragment's request's. */
		a->th->d = e->want_out;
		return;
	}
	if ((ev->flags & 1) && e->side < 2) {
		/* The next incoming message, if its send is known already:
		 * its request, under the span that made the call it answers
		 * (as at its MSG_BEGIN): the sender's span is in another
		 * process, and work done here before the reply is read (an
		 * event loop's queued callbacks) must not hang under it. */
		struct rc_dirq *q = rc_msg_recv_q(a, e, e->hwm[RC_DIN]);
		struct rc_sent *x =
			q ? rc_chan_q_find(q, e->hwm[RC_DIN]) : NULL;
		if (x && x->resolved) {
			a->th->d.req = x->req;
			a->th->d.span = e->cli ? e->cli->parent : x->span;
			a->th->d.client_root = x->client_root;
			return;
		}
	}
	a->th->d = e->last;
}

/*
 * WANT: the fragment asked to be told when fd is writable (epoll_ctl with
 * EPOLLOUT).  Event libraries queue a fragment's output in user space and
 * send it from the writable event later; the writable fragment then works
 * for the request that asked, not for the one that last used the channel
 * (a pooled backend connection's previous request).
 */
static void on_want(struct ap *a)
{
	const struct bt_event *ev = a->ev;
	struct rc_proc *p = a->im->run->attached ? a->im->run->proc : NULL;
	struct rc_fdent *fe = ev->fd >= 0 ?
		rc_chan_fd_get(p, ev->fd, a->rt) : NULL;

	if (!fe)
		return;
	if ((ev->flags & 4) && a->th->d.req) {
		fe->end->want_out = a->th->d;
		fe->end->has_want_out = 1;
	} else if (!(ev->flags & 4)) {
		rc_park_output_out(a, fe->end);
	}
}

static void on_name_begin(struct ap *a)
{
	const struct bt_event *ev = a->ev;
	static const char *const fn[] = { "lookup", "getaddrinfo",
		"gethostbyname", "gethostbyname2", "getnameinfo" };
	unsigned f = ev->flags & 0xff;
	const struct rc_desig *d = &a->th->d;
	struct rc_span *sp = rc_ap_span_new(a, RC_SK_CLIENT, BT_PROTO_DNS,
					    d->req, d->span, NULL);
	struct rc_lookup *l = calloc(1, sizeof *l);

	if (!sp || !l) {
		free(l);
		if (sp)
			rc_span_finish(a->c, sp);
		return;
	}
	sp->name = strdup(fn[f < 5 ? f : 0]);
	sp->target = ev->str_len ? rc_strndup(ev->str, ev->str_len) : NULL;
	sp->peer = strdup("resolver");
	if (ev->str2_len)
		rc_db_attr(a->c, sp->id, 0, "service", ev->str2, ev->str2_len);
	if (sp->target)
		rc_db_attr(a->c, sp->id, 0, "dns_name", ev->str, ev->str_len);
	l->cookie = ev->cookie;
	l->span = sp;
	l->next = a->th->lookups;
	a->th->lookups = l;
}

static void on_name_end(struct ap *a)
{
	const struct bt_event *ev = a->ev;
	for (struct rc_lookup **pp = &a->th->lookups; *pp; pp = &(*pp)->next) {
		struct rc_lookup *l = *pp;
		if (l->cookie != ev->cookie)
			continue;
		*pp = l->next;
		l->span->end = a->t;
		l->span->status = ev->result;
		if (ev->str_len)
			rc_db_attr(a->c, l->span->id, 0, "addr", ev->str,
				   ev->str_len);
		rc_span_finish(a->c, l->span);
		free(l);
		return;
	}
}

static void on_open(struct ap *a)
{
	const struct bt_event *ev = a->ev;
	struct rc_ctx *c = a->c;
	struct rc_proc *p = rc_lineage_proc_of(a);
	struct rc_row_file r = {
		.id = ++a->m->next_file,
		.req = a->th->d.req,
		.span = a->th->d.span, .process_id = a->im->run->process_id,
		.dom = a->im->domain, .pid = a->im->pid,
		.tid = a->th->tid ? a->th->tid : a->im->pid, .ts = a->t,
		.flags = ev->flags, .result = ev->result, .path = ev->str,
		.path_len = ev->str_len,
	};
	if (!rc_rows_begin(c, r.req)) {
		rc_db_file(c, &r);
		rc_rows_end(c);
	}
	c->st.files_opened++;
	/* without isolation, an open may be any batched request's */
	if (rc_span_nparked(c) && !(a->im->pflags & BT_PF_ISOLATION))
		rc_span_file_sent(c, a->im->host, a->im->pid, r.req);
	if (!r.req)
		c->st.unattr_files++;
	if (p && ev->result >= 0)
		rc_chan_fd_unbind(c, p, (int32_t)ev->result, a->rt);
}

static void on_dup(struct ap *a)
{
	const struct bt_event *ev = a->ev;
	struct rc_proc *p = rc_lineage_proc_of(a);
	if (!p || ev->fd == ev->fd2)
		return;
	struct rc_fdent *fe = rc_chan_fd_get(p, ev->fd, a->rt);
	/* dup2 closes what fd2 was */
	rc_chan_fd_drop(a->c, p, ev->fd2, a->rt);
	if (fe) {
		uint64_t base[2] = { fe->base[0], fe->base[1] };
		rc_chan_fd_set(a->c, p, ev->fd2, fe->end, base, a->rt);
	}
}

/*
 * Is another thread of P held back (parked on a wait) at a record older
 * than T?  Its records that follow, logged before T, may be on an fd
 * closed at T: they will find no binding (docs/reconstruct.md, "Closed
 * while a read waits").
 */
static int proc_lagging(const struct ap *a, const struct rc_proc *p,
			int64_t t)
{
	for (const struct rc_thr *o = p->threads; o; o = o->pnext) {
		if (o == a->th)
			continue;
		const struct rc_run *r = (const struct rc_run *)
			(const void *)((const char *)o -
				       offsetof(struct rc_run, thr));
		if (r->state == RC_SS_PARKED && r->head_t < t)
			return 1;
	}
	return 0;
}

static void on_close(struct ap *a)
{
	struct rc_proc *p = rc_lineage_proc_of(a);
	if (!p)
		return;
	struct rc_fdent *fe = rc_chan_fd_get(p, a->ev->fd, a->rt);
	if (fe && (fe->end->cli || fe->end->srv) && proc_lagging(a, p, a->rt))
		fe->end->closed_lagging = 1;
	rc_chan_fd_drop(a->c, p, a->ev->fd, a->rt);
}

static void on_logd(struct ap *a)
{
	const struct bt_event *ev = a->ev;
	if (ev->flags == BT_LN_RAW_IO) {
		rc_notes_rawio(a->c, a->c->hosts[a->im->host].name, ev->pid,
			       ev->result, ev->str, ev->str_len);
		return;
	}
	/* a tracer gone, its ring drained: its image's streams have
	 * ended (merge.c) - not one whose ring was left to its tracer */
	if (ev->flags == BT_LN_PEER_GONE || ev->flags == BT_LN_PEER_UP) {
		char ring[17] = "";
		const char *p = ev->str ? memmem(ev->str, ev->str_len, "ring=", 5) : NULL;
		int adopted = ev->str &&
			      memmem(ev->str, ev->str_len, "adopted", 7) != NULL;
		if (!p || (size_t)(ev->str + ev->str_len - p) < 5 + 16)
			return;
		memcpy(ring, p + 5, 16);
		if (ev->flags == BT_LN_PEER_UP)
			/* a ring a starting bp-logd adopted: the PEER_GONE
			 * after its drain (older bp-logd did not mark it)
			 * is not its process's end */
			rc_merge_image_up(a->c, a->im->host,
					  strtoull(ring, NULL, 16), ev->pid,
					  adopted);
		else if (!adopted)
			rc_merge_image_gone(a->c, a->im->host,
					    strtoull(ring, NULL, 16), ev->pid);
		return;
	}
	/* bp-logd notes that say something was lost: a peer dropped (5),
	 * the disk refusing writes (7), notes lost (12); see bp-logd's
	 * enum bt_logd_note */
	if (ev->flags != 5 && ev->flags != 7 && ev->flags != 12)
		return;
	rc_warn(a->c, rc_file_path(a->c, a->s->rec.file), a->s->rec.file_off,
		"bp-logd on %s reports: %.*s (result %" PRId64 ")",
		a->c->hosts[a->im->host].name, (int)ev->str_len,
		ev->str ? ev->str : "", ev->result);
}

void rc_model_apply(struct rc_ctx *c, struct rc_run *s)
{
	struct rc_image *im = &c->images[s->st->image];
	struct ap a = {
		.c = c, .m = c->model, .s = s, .th = &s->thr, .im = im,
		.ev = &s->ev,
	};
	const struct bt_event *ev = &s->ev;

	if (!rc_lineage_imrun(c, im))
		return;
	a.t = a.rt = rc_epoch(c, im->domain, ev->ts);
	if (a.t < s->thr.floor)
		a.t = s->thr.floor;
	if (s->thr.gap) {
		s->thr.gap = 0;
		gap_work(&a);
	}

	switch (ev->type) {
	case BT_EV_THREAD_START:  rc_lineage_thread_start(&a); break;
	case BT_EV_PROC_START:    rc_lineage_proc_start(&a); break;
	case BT_EV_THREAD_EXIT:
		rc_sig_end(&a);
		rc_frag_close(&a);
		rc_lookups_close(&a);
		rc_park_resolve(&a, 1);
		break;
	case BT_EV_FORK:          rc_lineage_fork_like(&a, RC_LIN_FORK); break;
	case BT_EV_SPAWN:         rc_lineage_fork_like(&a, RC_LIN_SPAWN); break;
	case BT_EV_EXEC:          rc_lineage_exec(&a); break;
	case BT_EV_THREAD_CREATE:
		if (ev->result >= 0)
			rc_lineage_parent_record(&a,
				rc_scan_thread_key(s->st->image, ev->cookie),
				NULL, NULL);
		break;
	case BT_EV_OPEN:          on_open(&a); break;
	case BT_EV_CLOSE:         on_close(&a); break;
	case BT_EV_DUP:           on_dup(&a); break;
	case BT_EV_CHAN:          on_chan(&a); break;
	case BT_EV_PROTO: {
		struct rc_fdent *fe =
			rc_chan_fd_get(rc_lineage_proc_of(&a), ev->fd, a.rt);
		if (fe) {
			fe->end->proto = ev->proto;
			fe->end->how = (uint8_t)ev->flags;
		}
		break;
	}
	case BT_EV_LOST_SYNC: {
		struct rc_fdent *fe =
			rc_chan_fd_get(rc_lineage_proc_of(&a), ev->fd, a.rt);
		if (fe)
			fe->end->lost_sync = 1;
		break;
	}
	case BT_EV_MSG:
	case BT_EV_MSG_BEGIN:
	case BT_EV_DATA:
		rc_lineage_proc_of(&a);
		rc_msg_record(&a);
		break;
	case BT_EV_READY:         on_ready(&a); break;
	case BT_EV_WANT:          on_want(&a); break;
	case BT_EV_ISOLATE:       c->st.isolations++; break;
	case BT_EV_NAME_BEGIN:    on_name_begin(&a); break;
	case BT_EV_NAME_END:      on_name_end(&a); break;
	case BT_EV_DROP:
		c->st.dropped += ev->len;
		/* in a handler's calls: the loss may be its SIGNAL end, and
		 * what follows the interrupted fragment's (which the loss
		 * then makes uncertain) */
		rc_sig_end(&a);
		drop_uncertain(&a);
		rc_warn(c, rc_file_path(c, s->rec.file), s->rec.file_off,
			"host %s pid %u: the tracer could not record %" PRIu64 " events (reason %u); byte offsets stay exact",
			c->hosts[im->host].name, im->pid, ev->len, ev->flags);
		break;
	case BT_EV_LOGD:          on_logd(&a); break;
	case BT_EV_SIGNAL:
		if (ev->flags == BT_SG_BEGIN)
			sig_begin(&a);
		else if (ev->flags == BT_SG_END)
			rc_sig_end(&a);
		break;
	default:
		break;
	}
	s->released = RC_REL_NONE;
	thread_list(&s->thr, im->run);
	rc_park_resolve(&a, 0);
	if (a.merged)
		return;           /* as if it were not there (ready_continues) */
	s->thr.floor = a.t;
	if (s->thr.frag.open) {
		s->thr.frag.events++;
		s->thr.frag.last = a.t;
	}
	if (!im->run->first_ts)
		im->run->first_ts = a.t;
	im->run->last_ts = a.t;
}

int rc_model_holds(struct rc_ctx *c, struct rc_run *s, int64_t w)
{
	const struct bt_event *ev = &s->ev;
	const struct rc_image *im = &c->images[s->st->image];
	int64_t hold = c->opt->hold_ns > 0 ? c->opt->hold_ns : RC_HOLD_NS;
	uint64_t key = 0;

	if (w - s->head_t >= hold)
		return 0;
	switch (ev->type) {
	case BT_EV_CHAN: {
		struct rc_entry en;
		uint32_t idx;
		if (s->entry_next >= s->st->nentry ||
		    rc_scan_entry(c, s, s->entry_next, &en, &idx) < 0)
			return 0;
		return en.side < 2 && en.info.n[!en.side] == 0;
	}
	case BT_EV_FORK:
		if (ev->result > 0)
			key = rc_scan_proc_key(im->host, (uint32_t)ev->result,
					       RC_LIN_FORK);
		break;
	case BT_EV_SPAWN:
		if (ev->result > 0)
			key = rc_scan_proc_key(im->host, (uint32_t)ev->result,
					       RC_LIN_SPAWN);
		break;
	case BT_EV_EXEC:
		if (ev->flags == 0)
			key = rc_scan_proc_key(im->host, im->pid, RC_LIN_EXEC);
		break;
	case BT_EV_THREAD_CREATE:
		if (ev->result >= 0)
			key = rc_scan_thread_key(s->st->image, ev->cookie);
		break;
	default:
		break;
	}
	return key && rc_lin_left(c, key, 1) == 0;
}

int rc_model_ready(struct rc_ctx *c, struct rc_run *s, uint64_t *key)
{
	const struct bt_event *ev = &s->ev;
	struct rc_image *im = &c->images[s->st->image];

	if (!rc_lineage_imrun(c, im))
		return 1;
	switch (ev->type) {
	case BT_EV_PROC_START:
		if (!im->lineage_key || im->run->attached ||
		    rc_lineage_ready(c, im->lineage_key))
			return 1;
		*key = im->lineage_key;
		return 0;
	case BT_EV_THREAD_START: {
		/* The first thread of a child image waits with its
		 * PROC_START, which follows it. */
		uint64_t k = ev->cookie ?
			rc_scan_thread_key(s->st->image, ev->cookie) :
			im->run->attached ? 0 : im->lineage_key;
		if (!k)
			return 1;
		if (rc_lineage_ready(c, k))
			return 1;
		*key = k;
		return 0;
	}
	case BT_EV_MSG:
	case BT_EV_MSG_BEGIN:
	case BT_EV_DATA:
		break;
	default:
		return 1;
	}
	if (!im->run->attached)
		return 1;
	struct rc_fdent *fe = rc_chan_fd_get(im->run->proc, ev->fd,
					rc_epoch(c, im->domain, ev->ts));
	if (!fe)
		return 1;
	struct rc_end *e = fe->end;
	/*
	 * One end's records of one direction apply in byte order: threads
	 * that share a connection (a keep-alive connection served by one
	 * thread, then by another) log them in that order, but one of them
	 * may be parked on something else while the other goes on, and the
	 * requests and replies on the connection must pair in byte order.
	 * (Only ends whose bytes are all counted from their creation; a
	 * thread that goes on after a gap in its own records waits for no
	 * one.)
	 */
	int dir = ev->dir == BT_DIR_OUT ? RC_DOUT : RC_DIN;
	uint32_t tid = s->thr.tid ? s->thr.tid : im->pid;
	if (rc_role_fresh(e->role) && fe->base[dir] + ev->off > e->hwm[dir] &&
	    e->hwm_tid[dir] != tid) {
		*key = RC_KEY_ORDER(e->channel_id, dir);
		return 0;
	}
	if (ev->dir != BT_DIR_IN)
		return 1;
	rc_chan_end_side(e, RC_DIN);
	struct rc_conn *cn = e->conn;
	if (!cn || e->side > 1)
		return 1;
	int sside = !e->side;
	struct rc_dirq *q = &cn->dir[sside];
	if (q->untraced || !rc_chan_end_traced(c, e, sside))
		return 1;
	uint64_t o = fe->base[RC_DIN] + ev->off;
	uint64_t need = ev->type == BT_EV_MSG ? o + rc_msg_units(e, ev) : o + 1;
	if (ev->type == BT_EV_MSG && rc_msg_units(e, ev) == 0)
		need = o;
	if (q->hwm >= need)
		return 1;
	if (rc_chan_conn_gone(c, cn, sside)) {
		s->released = RC_REL_GONE;
		return 1;
	}
	q->parked = 1;
	*key = RC_KEY_RECV(cn->id, sside);
	return 0;
}

void rc_model_stream_end(struct rc_ctx *c, struct rc_run *s)
{
	struct rc_image *im = &c->images[s->st->image];
	struct ap a = {
		.c = c, .m = c->model, .s = s, .th = &s->thr, .im = im,
		.ev = &s->ev, .t = s->thr.floor, .rt = s->thr.floor,
	};

	if (!rc_lineage_imrun(c, im))
		return;
	rc_sig_end(&a);
	rc_frag_close(&a);
	rc_lookups_close(&a);
	rc_park_resolve(&a, 1);
	thread_unlist(&s->thr);
	if (--im->run->live_streams == 0)
		rc_lineage_image_done(c, im);
}

void rc_model_wait_text(struct rc_ctx *c, const struct rc_run *s,
			char *buf, size_t len)
{
	const struct rc_image *im = &c->images[s->st->image];
	const struct bt_event *ev = &s->ev;
	const char *host = c->hosts[im->host].name;

	switch (ev->type) {
	case BT_EV_PROC_START:
		snprintf(buf, len,
			 "host %s pid %u: process start waited for its parent's %s record, which never came; started without the parent's state",
			 host, im->pid, (im->pflags & BT_PF_EXECED) ? "exec" : "fork");
		break;
	case BT_EV_THREAD_START:
		snprintf(buf, len,
			 "host %s pid %u tid %u: thread start waited for its creation record, which never came; started for no request",
			 host, im->pid, ev->tid);
		break;
	default:
		snprintf(buf, len,
			 "host %s pid %u tid %u: receive on fd %d at offset %" PRIu64 " waited for a send that was never logged (lost records or a cycle); its peer is treated as untraced from here",
			 host, im->pid, s->thr.tid, ev->fd, (uint64_t)ev->off);
	}
}

int rc_model_init(struct rc_ctx *c)
{
	c->model = calloc(1, sizeof *c->model);
	if (!c->model)
		return -ENOMEM;
	return 0;
}

void rc_model_finish(struct rc_ctx *c)
{
	rc_lineage_drop(c);
	/* Every stream ended, so every image did; this only matters when
	 * a stream's end was never reached (an error stopped the merge).
	 * The image table is a mapped file: its pages are given back as
	 * the loop goes (all of it resident at once was 10 MB at 50
	 * million bp-genbig events, the peak of the run). */
	for (uint32_t i = 0; i < c->nimages; i++) {
		if (c->images[i].run)
			rc_lineage_image_done(c, &c->images[i]);
		if ((i & 32767) == 32767)
			rc_input_tables_release(c);
	}
}

void rc_model_free(struct rc_ctx *c)
{
	struct rc_model *m = c->model;
	if (!m)
		return;
	for (uint32_t i = 0; i < c->nimages; i++) {
		free(c->images[i].run);
		c->images[i].run = NULL;
		if ((i & 32767) == 32767)
			rc_input_tables_release(c);
	}
	rc_map_free(&m->snaps);
	free(m);
	c->model = NULL;
}
