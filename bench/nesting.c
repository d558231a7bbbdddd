/*
 * nesting.c - bp-nesting: the "nesting algorithm" of Aguilera et al.,
 * "Performance debugging for distributed systems of black boxes" (SOSP
 * 2003, section 5.1; Project 5), run on the messages of a real traced run
 * with BorderPatrol's attribution stripped (benchmark 9).
 *
 *   bp-nesting [-x X] [-v] LOGDIR
 *
 * Input.  The segments of a traced run of the example servers
 * (examples/: ex-client -> a front -> ex-backend, the line protocol).
 * From them it keeps only what a network tracer would see: for every
 * message, when it was on the wire (the earlier of the send and receive
 * records, which are written when those calls return), the sending and
 * receiving node (a node is a
 * program: ex-client, the front, ex-backend), whether it is a call or a
 * return (the processor's request/reply), and a call id that pairs a
 * return with its call.  The call id is the connection and the call's
 * position on it (a packet tracer can tell TCP connections apart and
 * replies come in order), which is more than the paper assumed.  Nothing
 * of BorderPatrol's own inference (fragments, designations, requests) is
 * used.
 *
 * The algorithm (figure 4 of the paper):
 *   1. FindCallPairs: walk the messages in time order; a call opens
 *      (caller, callee, id); its return closes it into a call pair, whose
 *      candidate parents are the calls into the caller still open that
 *      started before it.
 *   2. ScoreNestings: for every (child, candidate parent), add
 *      1/|candidates| to the histogram of (A, B, C) at the delay between
 *      the parent's call and the child's call (bins of log base 1.05).
 *   3. FindNestedPairs: each child takes the candidate with the highest
 *      histogram value, scaled by the overlapping-child penalty
 *      (1 + c)^-X, c = children already given to that parent that overlap
 *      the child in time (the paper's best setting: X = 2, no same-child
 *      or generic-child penalty); ties go to the earliest parent.
 *   4. Call pairs with no candidate parent are roots: here, the client's
 *      requests.  A root's inferred path is the tree of call pairs under
 *      it.
 *
 * Scoring.  The client's request line is "REQ <id> <n>" and the front's
 * calls for it are "CALL <id> <k>", k = 0..n-1 (docs/examples.md).  The
 * message text is read only now, to grade: a request's inferred path is
 * exactly right when its tree holds exactly its own n calls.  Prints
 *
 *   requests=R right=K precision=P call_pairs=C roots=T unmatched=U
 *
 * (-v: also each wrong request).  Exit 0, or 1 if the log cannot be
 * read or holds no request.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btrace/event.h"
#include "btrace/segment.h"
#include "btrace/segread.h"

/* ---- small helpers --------------------------------------------------- */

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		fprintf(stderr, "bp-nesting: out of memory\n");
		exit(1);
	}
	return p;
}

#define GROW(v, n, cap) do { if ((n) == (cap)) { \
	(cap) = (cap) ? (cap) * 2 : 64; \
	(v) = xrealloc((v), (cap) * sizeof *(v)); } } while (0)

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 29);
}

/* ---- reading the log --------------------------------------------------- */

struct rec {                      /* a record we keep, in time order */
	uint64_t ts;
	uint64_t ring_id;
	uint32_t seq;                 /* global order of decoding (tie-break) */
	uint8_t  type, dir, kind, role, chan_kind;
	uint32_t flags;
	int32_t  fd, fd2;
	uint32_t pid, ppid;
	uint64_t off, len;
	uint64_t ino, peer_ino;
	struct bt_addr local, remote;
	char    *text;                /* LINE attribute or exe (owned) */
};

static struct bt_segset logs;       /* the segments, cut into streams */
static struct rec *recs;
static size_t nrecs, caprecs;

static void warn_cb(void *ctx, const char *path, uint64_t off, const char *why)
{
	(void)ctx;
	fprintf(stderr, "bp-nesting: %s: offset %llu: %s\n", path,
		(unsigned long long)off, why);
}

/* Index the segments PATH stands for (btrace/segread.h) and cut them
 * into streams. */
static void read_logs(const char *path)
{
	struct bt_sr_list l = { 0 };
	int n = bt_sr_collect(&l, path, warn_cb, NULL);

	if (n < 0) {
		fprintf(stderr, "bp-nesting: %s: %s\n", path, strerror(-n));
		exit(1);
	}
	logs.warn = warn_cb;
	for (uint32_t i = 0; i < l.n; i++) {
		const char *why = NULL;
		int r = bt_segset_add(&logs, l.v[i], &why);
		if (r < 0) {
			fprintf(stderr, "bp-nesting: %s: %s\n", l.v[i],
				why ? why : strerror(-r));
			exit(1);
		}
	}
	bt_sr_list_free(&l);
	bt_segset_sort(&logs);
}

static char *dupn(const char *s, size_t n)
{
	char *d = xrealloc(NULL, n + 1);
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

/* Decode every stream in order (what the reader's cut keeps of its
 * blocks), keeping the records the tracer view needs. */
static void decode_all(void)
{
	static struct bt_ev_dict dict;        /* the stream's, while read */
	uint32_t seq = 0;
	uint64_t prev = 0;
	for (uint32_t i = 0; i < logs.nblocks; i++) {
		const struct bt_sr_block *b = &logs.blocks[i];
		size_t pos = b->skip;
		if (b->cut & BT_SR_FIRST) {
			bt_ev_dict_init(&dict);
			prev = 0;
		}
		if (b->ring_id == 0 || (b->flags & BT_BF_LOGD) ||
		    (b->cut & BT_SR_DUP))
			continue;
		if (b->cut & BT_SR_LOST)              /* bytes lost */
			bt_ev_dict_reset(&dict);
		while (pos < b->len) {
			struct bt_event ev;
			long k = bt_ev_decode_dict(b->payload + pos, b->len - pos,
						   &ev, &prev, &dict);
			if (k <= 0)
				break;
			pos += (size_t)k;
			if (ev.type != BT_EV_MSG && ev.type != BT_EV_CHAN &&
			    ev.type != BT_EV_CLOSE && ev.type != BT_EV_DUP &&
			    ev.type != BT_EV_PROC_START)
				continue;
			GROW(recs, nrecs, caprecs);
			struct rec *r = &recs[nrecs++];
			memset(r, 0, sizeof *r);
			r->ts = ev.ts;
			r->ring_id = b->ring_id;
			r->seq = seq++;
			r->type = ev.type;
			r->dir = ev.dir;
			r->kind = ev.kind;
			r->role = ev.role;
			r->chan_kind = ev.chan_kind;
			r->flags = ev.flags;
			r->fd = ev.fd;
			r->fd2 = ev.fd2;
			r->pid = ev.pid ? ev.pid : b->pid;
			r->ppid = ev.ppid;
			r->off = ev.off;
			r->len = ev.len;
			r->ino = ev.ino;
			r->peer_ino = ev.peer_ino;
			r->local = ev.local;
			r->remote = ev.remote;
			if (ev.type == BT_EV_PROC_START && ev.str) {
				const char *s = ev.str, *sl = NULL;
				for (uint32_t q = 0; q < ev.str_len; q++)
					if (s[q] == '/')
						sl = s + q;
				r->text = sl ? dupn(sl + 1, ev.str_len -
						    (size_t)(sl + 1 - s))
					     : dupn(s, ev.str_len);
			}
			for (unsigned a = 0; a < ev.nattr; a++)
				if (ev.attr[a].key == BT_AK_LINE &&
				    ev.attr[a].val)
					r->text = dupn(ev.attr[a].val,
						       ev.attr[a].len);
		}
	}
}

static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ---- processes, fds, connections ----------------------------------------- */

struct conn {                     /* what an fd refers to */
	uint64_t key;                 /* the connection, same at both ends */
	int      from_connector;      /* this end is the connecting one */
};

#define MAXFD 4096
struct proc {
	uint64_t ring_id;
	uint32_t pid;
	int      node;
	struct conn fds[MAXFD];
	uint8_t  has[MAXFD];
};

static struct proc **procs;
static size_t nprocs, capprocs;
static char **nodes;
static size_t nnodes, capnodes;

static int node_of(const char *name)
{
	for (size_t i = 0; i < nnodes; i++)
		if (!strcmp(nodes[i], name))
			return (int)i;
	GROW(nodes, nnodes, capnodes);
	nodes[nnodes] = dupn(name, strlen(name));
	return (int)nnodes++;
}

static struct proc *proc_of(uint64_t ring_id, uint32_t pid)
{
	for (size_t i = nprocs; i-- > 0;)
		if (procs[i]->ring_id == ring_id)
			return procs[i];
	GROW(procs, nprocs, capprocs);
	struct proc *p = calloc(1, sizeof *p);
	if (!p)
		exit(1);
	p->ring_id = ring_id;
	p->pid = pid;
	p->node = -1;
	procs[nprocs++] = p;
	return p;
}

/* The newest image of PID other than EXCEPT. */
static struct proc *proc_by_pid(uint32_t pid, const struct proc *except)
{
	for (size_t i = nprocs; i-- > 0;)
		if (procs[i]->pid == pid && procs[i] != except)
			return procs[i];
	return NULL;
}

static uint64_t addr_hash(uint64_t h, const struct bt_addr *a)
{
	h = mix(h, a->family);
	for (int i = 0; i < 16; i++)
		h = mix(h, a->addr[i]);
	return mix(h, a->port);
}

static int addr_cmp(const struct bt_addr *a, const struct bt_addr *b)
{
	int c = memcmp(a->addr, b->addr, 16);
	if (c)
		return c;
	return a->port < b->port ? -1 : a->port > b->port;
}

static void on_chan(struct proc *p, const struct rec *r)
{
	struct conn c = { 0, 0 };
	if (r->fd < 0 || r->fd >= MAXFD)
		return;
	if (r->chan_kind == BT_CK_TCP) {
		const struct bt_addr *cn, *sv;
		int conn_side;
		if (r->role == BT_CR_CONNECT)
			conn_side = 1;
		else if (r->role == BT_CR_ACCEPT)
			conn_side = 0;
		else
			conn_side = addr_cmp(&r->local, &r->remote) < 0;
		cn = conn_side ? &r->local : &r->remote;
		sv = conn_side ? &r->remote : &r->local;
		c.key = addr_hash(addr_hash(1, cn), sv);
		c.from_connector = conn_side;
	} else if (r->chan_kind == BT_CK_UNIX_STREAM) {
		if (r->role == BT_CR_CONNECT) {
			c.key = mix(2, r->ino);
			c.from_connector = 1;
		} else if (r->role == BT_CR_ACCEPT) {
			c.key = mix(2, r->peer_ino);
			c.from_connector = 0;
		} else {
			uint64_t lo = r->ino < r->peer_ino ? r->ino : r->peer_ino;
			c.key = mix(2, lo);
			c.from_connector = r->ino == lo;
		}
	} else {
		p->has[r->fd] = 0;
		return;
	}
	p->fds[r->fd] = c;
	p->has[r->fd] = 1;
}

/* ---- messages ------------------------------------------------------------ */

struct msg {
	uint64_t conn;
	int      flow;                /* 1: from the connector */
	uint64_t off;
	int      kind;                /* request / reply */
	uint64_t t_send, t_recv;
	int      have_send, have_recv;
	int      snode, rnode;
	char    *text;
	uint32_t seq;                 /* request/reply number on the flow */
};

static struct msg *msgs;
static size_t nmsgs, capmsgs;

/* hash (conn, flow, off) -> msg index */
static size_t *mtab;
static size_t mcap;

static size_t msg_slot(uint64_t conn, int flow, uint64_t off)
{
	uint64_t h = mix(mix(mix(3, conn), (uint64_t)flow), off);
	for (size_t i = h & (mcap - 1);; i = (i + 1) & (mcap - 1)) {
		size_t m = mtab[i];
		if (m == (size_t)-1)
			return i;
		if (msgs[m].conn == conn && msgs[m].flow == flow &&
		    msgs[m].off == off)
			return i;
	}
}

static void on_msg(struct proc *p, const struct rec *r)
{
	if (r->fd < 0 || r->fd >= MAXFD || !p->has[r->fd])
		return;
	if (r->kind != BT_MK_REQUEST && r->kind != BT_MK_REPLY)
		return;
	const struct conn *c = &p->fds[r->fd];
	int out = r->dir == BT_DIR_OUT;
	int flow = out ? c->from_connector : !c->from_connector;
	if ((nmsgs + 1) * 2 > mcap) {
		size_t ncap = mcap ? mcap * 2 : 1024;
		free(mtab);
		mtab = xrealloc(NULL, ncap * sizeof *mtab);
		memset(mtab, 0xff, ncap * sizeof *mtab);
		mcap = ncap;
		for (size_t k = 0; k < nmsgs; k++)
			mtab[msg_slot(msgs[k].conn, msgs[k].flow, msgs[k].off)] = k;
	}
	size_t s = msg_slot(c->key, flow, r->off);
	struct msg *m;
	if (mtab[s] == (size_t)-1) {
		GROW(msgs, nmsgs, capmsgs);
		mtab[s] = nmsgs;
		m = &msgs[nmsgs++];
		memset(m, 0, sizeof *m);
		m->conn = c->key;
		m->flow = flow;
		m->off = r->off;
		m->kind = r->kind;
		m->snode = m->rnode = -1;
	} else {
		m = &msgs[mtab[s]];
	}
	if (out) {
		m->t_send = r->ts;
		m->have_send = 1;
		m->snode = p->node;
	} else {
		m->t_recv = r->ts;
		m->have_recv = 1;
		m->rnode = p->node;
	}
	if (r->text && !m->text)
		m->text = r->text;
}

static void build_messages(void)
{
	for (size_t i = 0; i < nrecs; i++) {
		struct rec *r = &recs[i];
		struct proc *p = proc_of(r->ring_id, r->pid);
		switch (r->type) {
		case BT_EV_PROC_START:
			if (r->text)
				p->node = node_of(r->text);
			if (r->flags & BT_PF_FORKED) {
				struct proc *par = proc_by_pid(r->ppid, p);
				if (par) {
					memcpy(p->fds, par->fds, sizeof p->fds);
					memcpy(p->has, par->has, sizeof p->has);
				}
			}
			break;
		case BT_EV_CHAN:
			on_chan(p, r);
			break;
		case BT_EV_DUP:
			if (r->fd >= 0 && r->fd < MAXFD && r->fd2 >= 0 &&
			    r->fd2 < MAXFD) {
				p->fds[r->fd2] = p->fds[r->fd];
				p->has[r->fd2] = p->has[r->fd];
			}
			break;
		case BT_EV_CLOSE:
			if (r->fd >= 0 && r->fd < MAXFD)
				p->has[r->fd] = 0;
			break;
		case BT_EV_MSG:
			on_msg(p, r);
			break;
		}
	}
}

/* ---- the nesting algorithm ------------------------------------------------ */

struct entry {                    /* one trace entry */
	uint64_t t;
	int      call;                /* 1 CALL, 0 RETURN */
	int      src, dst;
	uint64_t id;                  /* call id */
	size_t   msg;
};

struct pair {                     /* a call pair */
	int      a, b;                /* caller, callee */
	uint64_t t_call, t_ret;
	uint64_t id;
	size_t   call_msg;
	size_t  *parents;             /* indices of candidate parent pairs */
	size_t   nparents;
	long     parent;              /* chosen, -1 none */
	size_t  *kids;
	size_t   nkids, capkids;
	int      closed;
};

static struct pair *pairs;
static size_t npairs, cappairs;

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->t != y->t) return x->t < y->t ? -1 : 1;
	return x->msg < y->msg ? -1 : x->msg > y->msg;
}

static int cmp_flow(const void *a, const void *b)
{
	const struct msg *x = *(const struct msg *const *)a;
	const struct msg *y = *(const struct msg *const *)b;
	if (x->conn != y->conn) return x->conn < y->conn ? -1 : 1;
	if (x->flow != y->flow) return x->flow < y->flow ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Scoreboard: (A, B, C, bin) -> weight, open addressing. */
struct sb { int a, b, c, bin; double w; int used; };
static struct sb *sbt;
static size_t sbcap, sbn;

static size_t sb_find(int a, int b, int c, int bin)
{
	uint64_t h = mix(mix(mix(mix(4, (uint64_t)a), (uint64_t)b),
			 (uint64_t)c), (uint64_t)bin);
	for (size_t i = h & (sbcap - 1);; i = (i + 1) & (sbcap - 1))
		if (!sbt[i].used || (sbt[i].a == a && sbt[i].b == b &&
				     sbt[i].c == c && sbt[i].bin == bin))
			return i;
}

static double *sb_at(int a, int b, int c, int bin)
{
	if ((sbn + 1) * 2 > sbcap) {
		struct sb *old = sbt;
		size_t oc = sbcap;
		sbcap = sbcap ? sbcap * 2 : 1024;
		sbt = calloc(sbcap, sizeof *sbt);
		if (!sbt)
			exit(1);
		for (size_t i = 0; i < oc; i++)
			if (old[i].used)
				sbt[sb_find(old[i].a, old[i].b, old[i].c,
					    old[i].bin)] = old[i];
		free(old);
	}
	size_t i = sb_find(a, b, c, bin);
	if (!sbt[i].used) {
		sbt[i] = (struct sb){ a, b, c, bin, 0.0, 1 };
		sbn++;
	}
	return &sbt[i].w;
}

/* Histogram bin of a delay: log base 1.05 of the delay in ns. */
static int bin_of(uint64_t delay_ns)
{
	if (delay_ns < 1)
		delay_ns = 1;
	return (int)floor(log((double)delay_ns) / log(1.05));
}

static size_t unmatched;
static int verbose;

static void nesting(double x)
{
	/* call ids: the position of a request on its flow; its reply has
	 * the same position on the other flow of the connection */
	struct msg **byflow = xrealloc(NULL, nmsgs * sizeof *byflow);
	for (size_t i = 0; i < nmsgs; i++)
		byflow[i] = &msgs[i];
	qsort(byflow, nmsgs, sizeof *byflow, cmp_flow);
	for (size_t i = 0; i < nmsgs;) {
		size_t j = i;
		uint32_t nreq = 0, nrep = 0;
		for (; j < nmsgs && byflow[j]->conn == byflow[i]->conn &&
		       byflow[j]->flow == byflow[i]->flow; j++)
			byflow[j]->seq = byflow[j]->kind == BT_MK_REQUEST ? nreq++
									  : nrep++;
		i = j;
	}
	free(byflow);

	struct entry *e = xrealloc(NULL, nmsgs * sizeof *e);
	size_t ne = 0;
	for (size_t i = 0; i < nmsgs; i++) {
		struct msg *m = &msgs[i];
		if (m->snode < 0 || m->rnode < 0) {
			unmatched++;
			if (verbose)
				fprintf(stderr, "one-sided message: %s (off %llu, %s)\n",
					m->text ? m->text : "?",
					(unsigned long long)m->off,
					m->snode < 0 ? "no send" : "no receive");
			continue;
		}
		int call = m->kind == BT_MK_REQUEST;
		/* the call's flow and position identify the pair */
		int call_flow = call ? m->flow : !m->flow;
		/* the time on the wire: between the send and the receive, which
		 * are logged when the calls return; the earlier bounds it */
		uint64_t t = m->have_send ? m->t_send : m->t_recv;
		if (m->have_send && m->have_recv && m->t_recv < t)
			t = m->t_recv;
		e[ne++] = (struct entry){
			.t = t,
			.call = call, .src = m->snode, .dst = m->rnode,
			.id = mix(mix(m->conn, (uint64_t)call_flow), m->seq),
			.msg = i };
	}
	qsort(e, ne, sizeof *e, cmp_entry);

	/* 1. FindCallPairs.  Open calls: a list (few are open at once). */
	size_t *open = NULL, nopen = 0, capopen = 0;
	for (size_t i = 0; i < ne; i++) {
		if (e[i].call) {
			GROW(pairs, npairs, cappairs);
			struct pair *p = &pairs[npairs];
			memset(p, 0, sizeof *p);
			p->a = e[i].src;
			p->b = e[i].dst;
			p->t_call = e[i].t;
			p->id = e[i].id;
			p->call_msg = e[i].msg;
			p->parent = -1;
			GROW(open, nopen, capopen);
			open[nopen++] = npairs++;
			continue;
		}
		/* a return B -> A closes the open call A -> B with its id */
		size_t k;
		for (k = 0; k < nopen; k++) {
			struct pair *p = &pairs[open[k]];
			if (p->a == e[i].dst && p->b == e[i].src && p->id == e[i].id)
				break;
		}
		if (k == nopen) {
			unmatched++;
			if (verbose)
				fprintf(stderr, "return without its call: %s\n",
					msgs[e[i].msg].text ? msgs[e[i].msg].text : "?");
			continue;
		}
		size_t ci = open[k];
		open[k] = open[--nopen];
		struct pair *c = &pairs[ci];
		c->t_ret = e[i].t;
		c->closed = 1;
		/* candidate parents: open calls into the caller, begun before */
		for (size_t q = 0; q < nopen; q++) {
			struct pair *p = &pairs[open[q]];
			if (p->b == c->a && p->t_call < c->t_call) {
				c->parents = xrealloc(c->parents, (c->nparents + 1) *
						      sizeof *c->parents);
				c->parents[c->nparents++] = open[q];
			}
		}
	}
	unmatched += nopen;
	free(open);
	free(e);

	/* 2. ScoreNestings */
	for (size_t i = 0; i < npairs; i++) {
		struct pair *c = &pairs[i];
		if (!c->closed || !c->nparents)
			continue;
		for (size_t q = 0; q < c->nparents; q++) {
			struct pair *p = &pairs[c->parents[q]];
			*sb_at(p->a, p->b, c->b, bin_of(c->t_call - p->t_call)) +=
				1.0 / (double)c->nparents;
		}
	}

	/* 3. FindNestedPairs, children in the order they were called */
	for (size_t i = 0; i < npairs; i++) {
		struct pair *c = &pairs[i];
		double best = -1;
		long pick = -1;
		if (!c->closed || !c->nparents)
			continue;
		for (size_t q = 0; q < c->nparents; q++) {
			struct pair *p = &pairs[c->parents[q]];
			size_t overlap = 0;
			for (size_t k = 0; k < p->nkids; k++) {
				struct pair *s = &pairs[p->kids[k]];
				if (s->t_call < c->t_ret && c->t_call < s->t_ret)
					overlap++;
			}
			double score = *sb_at(p->a, p->b, c->b,
					      bin_of(c->t_call - p->t_call)) *
				       pow(1.0 + (double)overlap, -x);
			/* ties: the earliest parent */
			if (score > best || (score == best && pick >= 0 &&
					     p->t_call < pairs[pick].t_call)) {
				best = score;
				pick = (long)c->parents[q];
			}
		}
		c->parent = pick;
		struct pair *p = &pairs[pick];
		GROW(p->kids, p->nkids, p->capkids);
		p->kids[p->nkids++] = i;
	}
}

/* ---- grading ---------------------------------------------------------------- */

/* "REQ <id> <n>" or "CALL <id> <k>": the verb's first letter, the id,
 * the number.  0 if the text is neither. */
static int parse_line(const char *t, char *id, size_t idlen, long *num)
{
	char verb[8], idb[128];
	if (!t || sscanf(t, "%7s %127s %ld", verb, idb, num) != 3)
		return 0;
	if (strcmp(verb, "REQ") && strcmp(verb, "CALL"))
		return 0;
	snprintf(id, idlen, "%s", idb);
	return verb[0];
}

/* Collect the call pairs of the tree under P (not P itself). */
static void subtree(size_t pi, size_t **out, size_t *n, size_t *cap)
{
	struct pair *p = &pairs[pi];
	for (size_t k = 0; k < p->nkids; k++) {
		GROW(*out, *n, *cap);
		(*out)[(*n)++] = p->kids[k];
		subtree(p->kids[k], out, n, cap);
	}
}

int main(int argc, char **argv)
{
	double x = 2.0;
	int opt;

	while ((opt = getopt(argc, argv, "x:vh")) != -1) {
		switch (opt) {
		case 'x': x = atof(optarg); break;
		case 'v': verbose = 1; break;
		case 'h':
			printf("usage: bp-nesting [-x X] [-v] LOGDIR\n"
			       "The nesting algorithm of Aguilera et al. on the "
			       "messages of a traced run of the example servers,\n"
			       "graded against the request ids in the messages "
			       "(see bench/nesting.c).\n");
			return 0;
		default:
			fprintf(stderr, "usage: bp-nesting [-x X] [-v] LOGDIR\n");
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: bp-nesting [-x X] [-v] LOGDIR\n");
		return 2;
	}
	read_logs(argv[optind]);
	decode_all();
	qsort(recs, nrecs, sizeof *recs, cmp_rec);
	build_messages();
	nesting(x);

	size_t reqs = 0, right = 0, roots = 0;
	size_t *sub = NULL, nsub = 0, capsub = 0;
	for (size_t i = 0; i < npairs; i++) {
		struct pair *p = &pairs[i];
		char id[128], cid[128];
		long n, k;
		if (!p->closed || p->nparents)
			continue;
		roots++;
		if (parse_line(msgs[p->call_msg].text, id, sizeof id, &n) != 'R')
			continue;
		reqs++;
		nsub = 0;
		subtree(i, &sub, &nsub, &capsub);
		int ok = nsub == (size_t)n;
		uint64_t seen = 0;
		for (size_t s = 0; ok && s < nsub; s++) {
			const struct pair *c = &pairs[sub[s]];
			if (parse_line(msgs[c->call_msg].text, cid, sizeof cid, &k) !=
			    'C' || strcmp(cid, id) || k < 0 || k >= 64 ||
			    (seen >> k & 1))
				ok = 0;
			else
				seen |= 1ull << k;
		}
		right += ok;
		if (!ok && verbose) {
			fprintf(stderr, "wrong: REQ %s %ld got", id, n);
			for (size_t s = 0; s < nsub; s++)
				fprintf(stderr, " [%s]", msgs[pairs[sub[s]].call_msg].text
					? msgs[pairs[sub[s]].call_msg].text : "?");
			fprintf(stderr, "\n");
		}
	}
	free(sub);
	if (!reqs) {
		fprintf(stderr, "bp-nesting: no client request (\"REQ <id> <n>\" "
			"from a node that receives no calls) in %s: is it a "
			"traced run of the example servers?\n", argv[optind]);
		return 1;
	}
	printf("requests=%zu right=%zu precision=%.4f call_pairs=%zu roots=%zu "
	       "unmatched=%zu\n", reqs, right, (double)right / (double)reqs,
	       npairs, roots, unmatched);
	bt_segset_free(&logs);
	return 0;
}
