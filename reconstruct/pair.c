/*
 * pair.c - pairing the channel ends of pass 1 into connections (see
 * pair.h).
 *
 * Memory: one 48-byte item (struct rc_pair_end) per CHAN record is needed
 * to pair the ends.  They are sorted in runs of RUN_ENTS in memory; when
 * there are more, the runs go to a temporary file (spill.h) and are
 * merged from there, RUN_ENTS items of buffer in all.  The results, 28
 * bytes per CHAN record (struct rc_entry, with its connection's counts),
 * are written in index order, UPD_MAX at a time, into a mapped temporary
 * file whose resident pages are given back as they are used: memory
 * stays bounded by the run size, not by the number of ends.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pair.h"
#include "scan.h"
#include "spill.h"

/* Ends of one tuple nearer than this in time may be one connection. */
#define PAIR_WINDOW_NS (120 * RC_NS)
/* Channel ends sorted at once in memory (6 MiB); more go to a file in
 * sorted runs of this size (smaller in a test build, to merge many). */
#ifndef RC_PAIR_RUN_ENTS
#define RC_PAIR_RUN_ENTS (1u << 17)
#endif
#define RUN_DEFAULT    ((uint32_t)RC_PAIR_RUN_ENTS)
#define RUN_ENTS       (pr->run)
/* The smallest read buffer of one run while the runs are merged. */
#define RUN_BUF_MIN    256u
/* Pairing results written to the entries table at once, sorted (2 MiB;
 * fewer in a test build). */
#ifndef RC_PAIR_UPD_MAX
#define RC_PAIR_UPD_MAX (1u << 16)
#endif
#define UPD_MAX        ((uint32_t)RC_PAIR_UPD_MAX)

enum { CLS_NONE = 0, CLS_IP, CLS_UNIX, CLS_PIPE };

struct rc_pair_end {
	uint64_t key;
	int64_t  t;              /* provisional epoch time */
	uint64_t mono;
	uint32_t lkey;           /* the listening address (listen_key): a
				  * hash; a collision can only make a live
				  * pass's path uncertain (expect_peer) */
	uint32_t idx;            /* entry index */
	uint32_t host, image;
	uint8_t  cls, side, fresh, role;
};

/* ---- channel identity -------------------------------------------------- */

static int addr_cmp(const struct bt_addr *a, const struct bt_addr *b)
{
	size_t n = a->family == BT_AF_INET6 ? 16 : 4;
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	int r = memcmp(a->addr, b->addr, n);
	if (r)
		return r;
	if (a->port != b->port)
		return a->port < b->port ? -1 : 1;
	return 0;
}

static int is_loopback(const struct bt_addr *a)
{
	static const uint8_t v6lo[16] = { [15] = 1 };
	if (a->family == BT_AF_INET)
		return a->addr[0] == 127;
	return a->family == BT_AF_INET6 && memcmp(a->addr, v6lo, 16) == 0;
}

/*
 * The listening address of a stream connection's end EV of HOST, as both
 * ends name it: the local address of an accepted end, the remote one of a
 * connecting end (TCP: the address, with the host if loopback; unix: the
 * path, with the host).  0 for other ends.
 */
static uint32_t listen_key(const struct bt_event *ev, uint32_t host)
{
	if (ev->role != BT_CR_CONNECT && ev->role != BT_CR_ACCEPT)
		return 0;
	if (ev->chan_kind == BT_CK_TCP) {
		struct bt_addr a = rc_addr_norm(ev->role == BT_CR_ACCEPT ?
						&ev->local : &ev->remote);
		if (a.family != BT_AF_INET && a.family != BT_AF_INET6)
			return 0;
		uint8_t k[19];
		k[0] = a.family;
		k[1] = (uint8_t)(a.port >> 8);
		k[2] = (uint8_t)a.port;
		memcpy(k + 3, a.addr, 16);
		uint64_t h = rc_hash64(BT_CK_TCP, k, sizeof k);
		return (uint32_t)(is_loopback(&a) ? rc_hash64(h, &host, sizeof host) : h) | 1;
	}
	if (ev->chan_kind == BT_CK_UNIX_STREAM && ev->str && ev->str_len) {
		uint64_t h = rc_hash64(BT_CK_UNIX_STREAM, &host, sizeof host);
		return (uint32_t)rc_hash64(h, ev->str, ev->str_len) | 1;
	}
	return 0;
}

/* Classify CHAN record EV of HOST: fills key, cls, side, fresh. */
static void identify(const struct bt_event *ev, uint32_t host,
		     struct rc_pair_end *e)
{
	e->cls = CLS_NONE;
	e->side = 2;
	e->fresh = (uint8_t)rc_role_fresh(ev->role);
	switch (ev->chan_kind) {
	case BT_CK_TCP:
	case BT_CK_UDP: {
		struct bt_addr nl = rc_addr_norm(&ev->local);
		struct bt_addr nr = rc_addr_norm(&ev->remote);
		const struct bt_addr *l = &nl, *r = &nr;
		if (ev->result < 0 && ev->result != -EINPROGRESS)
			return;
		if ((l->family != BT_AF_INET && l->family != BT_AF_INET6) ||
		    r->family != l->family)
			return;
		int c = addr_cmp(l, r);
		const struct bt_addr *lo = c <= 0 ? l : r, *hi = c <= 0 ? r : l;
		uint8_t key[2 * 19];
		key[0] = lo->family;
		key[1] = (uint8_t)(lo->port >> 8);
		key[2] = (uint8_t)lo->port;
		memcpy(key + 3, lo->addr, 16);
		key[19] = hi->family;
		key[20] = (uint8_t)(hi->port >> 8);
		key[21] = (uint8_t)hi->port;
		memcpy(key + 22, hi->addr, 16);
		uint64_t k = rc_hash64(ev->chan_kind, key, sizeof key);
		/* Loopback tuples never leave their host. */
		if (is_loopback(l) || is_loopback(r))
			k = rc_hash64(k, &host, sizeof host);
		e->key = k;
		e->cls = CLS_IP;
		e->side = c <= 0 ? 0 : 1;
		return;
	}
	case BT_CK_UNIX_STREAM:
	case BT_CK_UNIX_DGRAM: {
		/*
		 * A connection is named by its connecting socket's inode.  The
		 * connecting end cannot know its peer's (the kernel gives the
		 * server socket an inode only at accept), but the accepting
		 * end learns the connector's.  Socketpairs and inherited ends
		 * know both: the smaller names them.
		 */
		uint64_t name;
		uint8_t side;
		if (ev->role == BT_CR_CONNECT) {
			name = ev->ino;
			side = 0;
		} else if (ev->role == BT_CR_ACCEPT) {
			name = ev->peer_ino;
			side = 1;
		} else {
			if (!ev->peer_ino)
				return;
			name = ev->ino < ev->peer_ino ? ev->ino : ev->peer_ino;
			side = ev->ino < ev->peer_ino ? 0 : 1;
		}
		if (!name)
			return;
		uint64_t v[2] = { host, name };
		e->key = rc_hash64(ev->chan_kind, v, sizeof v);
		e->cls = CLS_UNIX;
		e->side = side;
		return;
	}
	case BT_CK_PIPE: {
		if (!ev->ino)
			return;
		uint64_t v[2] = { host, ev->ino };
		e->key = rc_hash64(BT_CK_PIPE, v, sizeof v);
		e->cls = CLS_PIPE;
		e->side = ev->role == BT_CR_PIPE_WRITE ? 0 :
			  ev->role == BT_CR_PIPE_READ ? 1 : 2;
		return;
	}
	default:
		return;
	}
}

/* ---- the skim ----------------------------------------------------------- */

/* Write the full run in SC->v to the spill file, unsorted: the ends'
 * times are known only once the clock domains are. */
static int flush_run(struct rc_ctx *c, struct rc_pair *pr)
{
	int r;
	if (!pr->f.open && (r = rc_spill_open(c, &pr->f, "ends")) != 0)
		return r;
	r = rc_spill_write(c, &pr->f, pr->v, (size_t)pr->n * sizeof *pr->v,
			   (uint64_t)pr->nruns * RUN_ENTS * sizeof *pr->v);
	if (r)
		return r;
	pr->nruns++;
	pr->n = 0;
	return 0;
}

/* Add one CHAN record (see pair.h). */
static uint64_t ip_key(const struct bt_addr *a)
{
	return rc_hash64(a->family, a->addr, a->family == BT_AF_INET ? 4 : 16) | 1;
}

/* The local IP address of a channel end of HOST: which hosts have it
 * (rc_pair_host_of).  Most ends of a host share one: only a change from
 * the host's last one is looked up. */
static void host_ip_note(struct rc_ctx *c, uint32_t host,
			 const struct bt_addr *a)
{
	if ((a->family != BT_AF_INET && a->family != BT_AF_INET6) ||
	    is_loopback(a))
		return;
	if (!c->host_ip_last) {
		if (!(c->host_ip_last = calloc(c->nhosts ? c->nhosts : 1,
					       sizeof *c->host_ip_last)))
			return;    /* (then no host is known by address) */
		c->host_ip_n = c->nhosts ? c->nhosts : 1;
	}
	uint64_t k = ip_key(a), v;
	if (host >= c->host_ip_n || c->host_ip_last[host] == k)
		return;
	c->host_ip_last[host] = k;
	int asked = c->p1 && rc_map_get(&c->p1->ip_asked, k, NULL);
	if (!rc_map_get(&c->host_ip, k, &v)) {
		rc_map_put(&c->host_ip, k, (uint64_t)host + 1);
		if (asked)
			rc_scan_changed(c, "an address the merge looked up is host %s's now",
					c->hosts[host].name);
	} else if (v != (uint64_t)host + 1 && v != RC_HOST_MANY) {
		rc_map_put(&c->host_ip, k, RC_HOST_MANY);
		if (asked)
			rc_scan_changed(c, "an address the merge looked up is host %s's too",
					c->hosts[host].name);
	}
}

uint32_t rc_pair_host_of(const struct rc_ctx *c, uint32_t host,
			 const struct bt_addr *a)
{
	uint64_t v;

	if (a->family == BT_AF_UNIX || is_loopback(a))
		return host + 1;
	if (a->family != BT_AF_INET && a->family != BT_AF_INET6)
		return 0;
	if (c->p1 && c->merge)
		rc_map_put(&c->p1->ip_asked, ip_key(a), 1);
	if (!rc_map_get(&c->host_ip, ip_key(a), &v))
		return 0;
	return (uint32_t)v;
}

void rc_pair_hosts_free(struct rc_ctx *c)
{
	rc_map_free(&c->host_ip);
	free(c->host_ip_last);
	c->host_ip_last = NULL;
	c->host_ip_n = 0;
	free(c->host_gap);
	c->host_gap = NULL;
}

/* The ends a run holds: rc_options.pair_run, else RUN_DEFAULT. */
static void run_size(const struct rc_ctx *c, struct rc_pair *pr)
{
	if (!pr->run)
		pr->run = c->opt->pair_run ? c->opt->pair_run : RUN_DEFAULT;
}

int rc_pair_add(struct rc_ctx *c, struct rc_pair *pr, uint32_t image,
		const struct bt_event *ev)
{
	if (pr->total == UINT32_MAX - 1)
		return rc_fail(c, RC_EXIT_INPUT, "more than %u channel ends",
			       UINT32_MAX - 2);
	run_size(c, pr);
	if (pr->n == pr->cap && pr->cap < RUN_ENTS) {
		uint32_t ncap = pr->cap ? pr->cap * 2 : 1024;
		if (ncap > RUN_ENTS)
			ncap = RUN_ENTS;
		struct rc_pair_end *nv = realloc(pr->v, ncap * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		pr->v = nv;
		pr->cap = ncap;
	}
	if (pr->n == RUN_ENTS) {
		int r = flush_run(c, pr);
		if (r)
			return r;
	}
	struct rc_pair_end *e = &pr->v[pr->n];
	memset(e, 0, sizeof *e);
	e->idx = pr->total;
	e->host = c->images[image].host;
	e->image = image;
	host_ip_note(c, e->host, &ev->local);
	e->mono = ev->ts;
	identify(ev, e->host, e);
	e->role = ev->role;
	/* the listening addresses only a live pass asks about */
	e->lkey = !c->opt->pending_ns ||
		  (ev->result < 0 && ev->result != -EINPROGRESS) ? 0 :
		  listen_key(ev, e->host);
	if (e->lkey)
		rc_map_add(&pr->listen[e->role == BT_CR_ACCEPT ? 0 : 1], e->lkey, 1);
	pr->n++;
	pr->total++;
	return 0;
}

/* ---- pairing ------------------------------------------------------------ */

static int cmp_p1(const void *pa, const void *pb)
{
	const struct rc_pair_end *a = pa, *b = pb;
	if (a->cls != b->cls)
		return a->cls < b->cls ? -1 : 1;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

struct inst {
	uint32_t conn;
	int64_t  t;
	uint32_t first[2];       /* first end of each side (position in the
				  * group), or RC_NONE */
	uint32_t host[2];
};

static uint32_t new_conn(struct rc_ctx *c)
{
	return c->nconns++;
}

/* Results go to RES, by position in the group G. */
static void join(const struct rc_pair_end *g, struct rc_entry *res, struct inst *in,
		 const struct rc_pair_end *e, uint8_t side)
{
	uint32_t k = (uint32_t)(e - g);
	res[k].conn = in->conn;
	res[k].side = side;
	if (side < 2 && in->first[side] == RC_NONE) {
		in->first[side] = k;
		in->host[side] = e->host;
	}
}

/* Pair one group of IP or unix ends sharing a key (sorted by time);
 * the results go to RES, by position in G. */
static int pair_group(struct rc_ctx *c, struct rc_pair_end *g, struct rc_entry *res,
		      uint32_t n)
{
	struct inst *in = malloc((n + 1) * sizeof *in);
	uint32_t *side[2];
	uint32_t ns[2] = { 0, 0 }, ni = 0;

	side[0] = malloc((n + 1) * sizeof(uint32_t));
	side[1] = malloc((n + 1) * sizeof(uint32_t));
	if (!in || !side[0] || !side[1]) {
		free(in);
		free(side[0]);
		free(side[1]);
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < n; k++)
		if (g[k].fresh && g[k].side < 2)
			side[g[k].side][ns[g[k].side]++] = k;

	/*
	 * Fresh ends: the connections of one tuple follow each other in
	 * time, so when both sides have as many ends, they pair in order
	 * whatever the clocks say.  Otherwise (some ends untraced) each end
	 * meets the nearest other within the window.
	 */
	int in_order = ns[0] == ns[1];
	uint32_t i = 0, j = 0;
	while (i < ns[0] || j < ns[1]) {
		struct inst *x = &in[ni++];
		x->conn = new_conn(c);
		x->first[0] = x->first[1] = RC_NONE;
		x->host[0] = x->host[1] = RC_NONE;
		const struct rc_pair_end *a = i < ns[0] ? &g[side[0][i]] : NULL;
		const struct rc_pair_end *b = j < ns[1] ? &g[side[1][j]] : NULL;
		int near = a && b && (in_order ||
				      llabs(a->t - b->t) <= PAIR_WINDOW_NS);
		if (near && !in_order) {
			/* The earlier of the two can meet only the later one;
			 * the later one may be nearer to the next end of the
			 * earlier one's side: then the earlier one is alone
			 * (a readiness probe's connection, untraced, and the
			 * same tuple reused seconds later). */
			const struct rc_pair_end *nx;
			if (a->t <= b->t) {
				nx = i + 1 < ns[0] ? &g[side[0][i + 1]] : NULL;
				if (nx && llabs(nx->t - b->t) < b->t - a->t)
					near = 0;
			} else {
				nx = j + 1 < ns[1] ? &g[side[1][j + 1]] : NULL;
				if (nx && llabs(nx->t - a->t) < a->t - b->t)
					near = 0;
			}
		}
		if (near) {
			x->t = a->t < b->t ? a->t : b->t;
			join(g, res, x, a, 0);
			join(g, res, x, b, 1);
			i++;
			j++;
		} else if (a && (!b || a->t < b->t)) {
			x->t = a->t;
			join(g, res, x, a, 0);
			i++;
		} else {
			x->t = b->t;
			join(g, res, x, b, 1);
			j++;
		}
	}
	/*
	 * Ends announced again (inherited across exec, or first seen late):
	 * the same end as an earlier one of that side on that host, else the
	 * missing side of a connection made before, else a connection alone.
	 */
	for (uint32_t k = 0; k < n; k++) {
		const struct rc_pair_end *e = &g[k];
		struct inst *best = NULL;
		if (e->fresh && e->side < 2)
			continue;
		for (uint32_t q = 0; q < ni; q++) {
			struct inst *x = &in[q];
			if (x->t > e->t)
				continue;
			if (x->host[e->side] == e->host &&
			    (!best || x->t >= best->t))
				best = x;
		}
		if (!best)
			for (uint32_t q = 0; q < ni; q++) {
				struct inst *x = &in[q];
				if (x->first[e->side] == RC_NONE &&
				    x->t <= e->t + PAIR_WINDOW_NS &&
				    (!best || x->t >= best->t))
					best = x;
			}
		if (!best) {
			best = &in[ni++];
			best->conn = new_conn(c);
			best->t = e->t;
			best->first[0] = best->first[1] = RC_NONE;
			best->host[0] = best->host[1] = RC_NONE;
		}
		join(g, res, best, e, e->side);
	}
	for (uint32_t q = 0; q < ni; q++)
		for (int s = 0; s < 2; s++)
			if (in[q].first[s] != RC_NONE && in[q].first[!s] != RC_NONE)
				res[in[q].first[s]].peer = g[in[q].first[!s]].idx;
	free(in);
	free(side[0]);
	free(side[1]);
	return 0;
}

/* One pipe inode: a new pipe starts where a side is created again. */
static void pair_pipe(struct rc_ctx *c, struct rc_pair_end *g, struct rc_entry *res,
		      uint32_t n)
{
	uint32_t conn = RC_NONE, first[2] = { RC_NONE, RC_NONE };
	int fresh_seen[2] = { 0, 0 };

	for (uint32_t k = 0; k < n; k++) {
		const struct rc_pair_end *e = &g[k];
		if (conn == RC_NONE || (e->fresh && e->side < 2 &&
					fresh_seen[e->side])) {
			conn = new_conn(c);
			fresh_seen[0] = fresh_seen[1] = 0;
			first[0] = first[1] = RC_NONE;
		}
		if (e->fresh && e->side < 2)
			fresh_seen[e->side] = 1;
		res[k].conn = conn;
		res[k].side = e->side;
		if (e->side < 2 && first[e->side] == RC_NONE) {
			first[e->side] = k;
			if (first[!e->side] != RC_NONE) {
				res[k].peer = g[first[!e->side]].idx;
				res[first[!e->side]].peer = e->idx;
			}
		}
	}
}

/* What pairing found for one end, waiting to be written into the mapped
 * entries table in index order. */
struct upd {
	uint32_t        idx;
	struct rc_entry e;
};

/* The group of ends being collected (one cls and key), its results,
 * and the results waiting to be written. */
struct group {
	const struct rc_pair  *pr;
	struct rc_pair_end    *v;
	struct rc_entry *res;
	uint32_t         n, cap;
	uint32_t        *cnt;    /* 4 per connection of the group: its
				  * ends per side, and whether the side
				  * missing is expected (expect_peer) */
	uint32_t         cntcap;
	struct upd      *u;
	uint32_t         nu;
};

static int cmp_upd(const void *pa, const void *pb)
{
	const struct upd *a = pa, *b = pb;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Write the results in index order (a page of the table at a time, not
 * a page per end), giving the pages back as they fill. */
static void flush_upd(struct rc_ctx *c, struct group *g)
{
	qsort(g->u, g->nu, sizeof *g->u, cmp_upd);
	for (uint32_t k = 0; k < g->nu; k++) {
		c->entries[g->u[k].idx] = g->u[k].e;
		rc_spill_touch(&c->ent_spill);
	}
	g->nu = 0;
	rc_spill_release(&c->ent_spill);
}

/*
 * Is the other side of E's connection, which no log has, probably a
 * traced program whose records are not in the logs yet?  Only a live
 * pass asks (rc_options.pending_ns: its logs may lack them for a while).
 * Yes for a connecting end when traced programs accepted on the address
 * it connected to (the server is traced); for an accepted end when
 * traced programs made at least half of the connections accepted on its
 * address (php-fpm's socket, which only nginx's traced workers connect
 * to; not nginx's port, which a traced health check also connects to
 * among many untraced clients).  And for a connecting end when nothing
 * says so yet: it began less than rc_options.pending_new_ns after the
 * first connection to its address (at the start of a run, php-fpm's
 * first records may come after nginx's first requests to it; an
 * address no traced program accepted on is taken as untraced once it
 * was used that long).  Not for an accepted end: every request of an
 * untraced client at a new front would wait.  A hint that only ever
 * makes a path uncertain, never moves it.
 */
static int expect_peer(const struct rc_ctx *c, const struct rc_pair *pr,
		       const struct rc_pair_end *e)
{
	uint64_t acc = 0, con = 0, first;
	int a = e->role == BT_CR_ACCEPT;

	if (!e->lkey || !c->opt->pending_ns)
		return 0;
	rc_map_get(&pr->listen[0], e->lkey, &acc);
	rc_map_get(&pr->listen[1], e->lkey, &con);
	if (a ? con * 2 >= acc : acc > 0)
		return 1;
	return !a && rc_map_get(&pr->first, e->lkey, &first) &&
	       e->t - (int64_t)first < c->opt->pending_new_ns;
}

/* The first time of a connection to each listening address (V, N ends
 * with their times set): expect_peer. */
static int first_seen(struct rc_pair *pr, const struct rc_pair_end *v,
		      uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		uint64_t t;
		struct rc_map *m = &pr->first;
		if (!v[k].lkey || v[k].role != BT_CR_CONNECT)
			continue;
		if ((!rc_map_get(m, v[k].lkey, &t) || v[k].t < (int64_t)t) &&
		    rc_map_put(m, v[k].lkey, (uint64_t)v[k].t) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Pair one group of ends sharing cls and key (all of them, in cmp_p1
 * order), and count each connection's ends per side. */
static int pair_one(struct rc_ctx *c, struct group *grp)
{
	struct rc_pair_end *g = grp->v;
	struct rc_entry *res = grp->res;
	uint32_t n = grp->n, base = c->nconns;

	for (uint32_t k = 0; k < n; k++) {
		memset(&res[k], 0, sizeof res[k]);
		res[k].conn = RC_NONE;
		res[k].peer = RC_NONE;
		res[k].side = g[k].side;
	}
	switch (g[0].cls) {
	case CLS_NONE:           /* a group of one */
		res[0].conn = new_conn(c);
		res[0].side = 0;
		break;
	case CLS_PIPE:
		pair_pipe(c, g, res, n);
		break;
	default:
		if (pair_group(c, g, res, n) < 0)
			return -ENOMEM;
	}
	/* The group's connections are numbered base.. c->nconns - 1. */
	uint32_t nc = c->nconns - base;
	if (nc > grp->cntcap) {
		uint32_t *nv = realloc(grp->cnt, (size_t)nc * 4 * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		grp->cnt = nv;
		grp->cntcap = nc;
	}
	memset(grp->cnt, 0, (size_t)nc * 4 * sizeof *grp->cnt);
	for (uint32_t k = 0; k < n; k++)
		grp->cnt[(res[k].conn - base) * 4 +
			 (res[k].side < 2 ? res[k].side : 2)]++;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t *cn = &grp->cnt[(res[k].conn - base) * 4];
		if (res[k].side < 2 && !cn[!res[k].side] && !cn[2] &&
		    expect_peer(c, grp->pr, &g[k]))
			cn[3] = 1;
	}
	for (uint32_t k = 0; k < n; k++) {
		struct rc_conninfo *ci = &res[k].info;
		memcpy(ci->n, &grp->cnt[(res[k].conn - base) * 4], sizeof ci->n);
		ci->expect = (uint8_t)grp->cnt[(res[k].conn - base) * 4 + 3];
		ci->pipe = g[k].cls == CLS_PIPE;
		if (grp->nu == UPD_MAX)
			flush_upd(c, grp);
		grp->u[grp->nu].idx = g[k].idx;
		grp->u[grp->nu++].e = res[k];
	}
	return 0;
}

/* One sorted run being merged: a window of it in memory. */
struct run_rd {
	struct rc_pair_end *buf;
	uint32_t cap, n, pos;    /* buffer size, filled, next */
	uint64_t off, end;       /* file offsets: next to read, end of run */
};

static int run_fill(struct rc_ctx *c, struct rc_pair *pr, struct run_rd *r)
{
	uint64_t left = (r->end - r->off) / sizeof *r->buf;
	r->n = left < r->cap ? (uint32_t)left : r->cap;
	r->pos = 0;
	if (r->n == 0)
		return 0;
	int e = rc_spill_read(c, &pr->f, r->buf, (size_t)r->n * sizeof *r->buf,
			      r->off);
	r->off += (uint64_t)r->n * sizeof *r->buf;
	return e;
}

static const struct rc_pair_end *run_head(const struct run_rd *r)
{
	return r->pos < r->n ? &r->buf[r->pos] : NULL;
}

/* A min-heap of run indexes by head entry. */
static int heap_less(struct run_rd *rd, uint32_t a, uint32_t b)
{
	return cmp_p1(run_head(&rd[a]), run_head(&rd[b])) < 0;
}

static void heap_down(struct run_rd *rd, uint32_t *h, uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;
		if (l < n && heap_less(rd, h[l], h[m]))
			m = l;
		if (l + 1 < n && heap_less(rd, h[l + 1], h[m]))
			m = l + 1;
		if (m == i)
			return;
		uint32_t t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* Append E to the group G, pairing the group first when E starts
 * another; E NULL: the end. */
static int group_add(struct rc_ctx *c, struct group *g, const struct rc_pair_end *e)
{
	if (!g->u && !(g->u = malloc(UPD_MAX * sizeof *g->u)))
		return -ENOMEM;
	if (g->n && (e == NULL || e->cls != g->v[0].cls ||
		     e->cls == CLS_NONE || e->key != g->v[0].key)) {
		if (pair_one(c, g) < 0)
			return -ENOMEM;
		g->n = 0;
	}
	if (!e) {
		flush_upd(c, g);
		return 0;
	}
	if (g->n == g->cap) {
		uint32_t ncap = g->cap ? g->cap * 2 : 64;
		struct rc_pair_end *nv = realloc(g->v, ncap * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		g->v = nv;
		struct rc_entry *nr = realloc(g->res, ncap * sizeof *nr);
		if (!nr)
			return -ENOMEM;
		g->res = nr;
		g->cap = ncap;
	}
	g->v[g->n++] = *e;
	return 0;
}

static void set_times(struct rc_ctx *c, struct rc_pair_end *v, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		v[k].t = rc_epoch(c, c->images[v[k].image].domain, v[k].mono);
}

/* Are the clock domains' deltas and the images' domains those by which
 * the runs were sorted (rc_pair.sorted)?  The ends' times (set_times)
 * are then the same. */
static int clock_same(const struct rc_ctx *c, const struct rc_pair *pr)
{
	if (!pr->sorted || pr->nsdelta > c->ndoms || pr->nsimg > c->nimages)
		return 0;
	for (uint32_t d = 0; d < pr->nsdelta; d++)
		if (c->doms[d].delta != pr->sdelta[d])
			return 0;
	for (uint32_t i = 0; i < pr->nsimg; i++)
		if (c->images[i].domain != pr->simg[i])
			return 0;
	return 1;
}

/* Keep what clock_same compares with; 0, or -ENOMEM. */
static int clock_keep(const struct rc_ctx *c, struct rc_pair *pr)
{
	int64_t *d = realloc(pr->sdelta, (c->ndoms ? c->ndoms : 1) * sizeof *d);
	if (!d)
		return -ENOMEM;
	pr->sdelta = d;
	uint32_t *m = realloc(pr->simg, (c->nimages ? c->nimages : 1) * sizeof *m);
	if (!m)
		return -ENOMEM;
	pr->simg = m;
	for (uint32_t k = 0; k < c->ndoms; k++)
		d[k] = c->doms[k].delta;
	for (uint32_t i = 0; i < c->nimages; i++)
		m[i] = c->images[i].domain;
	pr->nsdelta = c->ndoms;
	pr->nsimg = c->nimages;
	return 0;
}

/*
 * Pair all ends: sort them by (class, key, time, index), each run in
 * memory, and merge the runs; every group of one key is paired as it
 * completes.  The connection numbers are given in that order, as one
 * sort of all ends would.
 */
int rc_pair_all(struct rc_ctx *c, struct rc_pair *pr)
{
	struct group g = { .pr = pr };
	struct run_rd *rd = NULL;
	uint32_t *heap = NULL;
	uint32_t nr = 0, keep_n = 0, keep_runs = 0;
	int r;

	c->nentries = pr->total;
	run_size(c, pr);
	/* (every end is in the sort: ends kept from a pairing before are
	 * timed again, but for the runs still sorted by the same times) */
	uint32_t skip = clock_same(c, pr) ? pr->sorted : 0;
	pr->sorted = 0;
	if (!skip) {
		rc_map_free(&pr->first);
		rc_map_init(&pr->first);
	}
	if ((r = rc_spill_open(c, &c->ent_spill, "entries")) != 0 ||
	    (r = rc_spill_map(c, &c->ent_spill,
			      ((size_t)pr->total + 1) * sizeof *c->entries)) != 0)
		return r;
	c->entries = c->ent_spill.p;

	if (pr->nruns == 0) {
		/* All in memory: one sort. */
		set_times(c, pr->v, pr->n);
		if ((r = first_seen(pr, pr->v, pr->n)) != 0)
			goto done;
		if (pr->n)
			qsort(pr->v, pr->n, sizeof *pr->v, cmp_p1);
		for (uint32_t k = 0; k < pr->n && r == 0; k++)
			r = group_add(c, &g, &pr->v[k]);
		goto done;
	}
	/* Sort every run in place in the file, then merge them (the ends
	 * in memory too, as the last run; when they are kept, they are read
	 * back at the end and stay the run being filled) */
	if (pr->n) {
		if (pr->retain) {
			keep_n = pr->n;
			keep_runs = pr->nruns;
		}
		if ((r = flush_run(c, pr)) != 0)
			goto done;
	}
	nr = pr->nruns;
	if (skip > nr)
		skip = 0;
	for (uint32_t i = skip; i < nr; i++) {
		uint64_t off = (uint64_t)i * RUN_ENTS * sizeof *pr->v;
		uint32_t n = i + 1 < nr ? RUN_ENTS :
			     pr->total - (nr - 1) * RUN_ENTS;
		size_t bytes = (size_t)n * sizeof *pr->v;
		if ((r = rc_spill_read(c, &pr->f, pr->v, bytes, off)) != 0)
			goto done;
		set_times(c, pr->v, n);
		if ((r = first_seen(pr, pr->v, n)) != 0)
			goto done;
		qsort(pr->v, n, sizeof *pr->v, cmp_p1);
		if ((r = rc_spill_write(c, &pr->f, pr->v, bytes, off)) != 0)
			goto done;
	}
	/* The run buffer is shared out among the readers. */
	uint32_t per = RUN_ENTS / nr;
	if (per < RUN_BUF_MIN) {
		struct rc_pair_end *nv = realloc(pr->v, (size_t)nr * RUN_BUF_MIN *
					   sizeof *nv);
		if (!nv) {
			r = -ENOMEM;
			goto done;
		}
		pr->v = nv;
		per = RUN_BUF_MIN;
	}
	rd = calloc(nr, sizeof *rd);
	heap = calloc(nr, sizeof *heap);
	if (!rd || !heap) {
		r = -ENOMEM;
		goto done;
	}
	uint32_t nh = 0;
	for (uint32_t i = 0; i < nr; i++) {
		rd[i].buf = pr->v + (size_t)i * per;
		rd[i].cap = per;
		rd[i].off = (uint64_t)i * RUN_ENTS * sizeof *pr->v;
		rd[i].end = i + 1 < nr ?
			    (uint64_t)(i + 1) * RUN_ENTS * sizeof *pr->v :
			    (uint64_t)pr->total * sizeof *pr->v;
		if ((r = run_fill(c, pr, &rd[i])) != 0)
			goto done;
		if (run_head(&rd[i]))
			heap[nh++] = i;
	}
	for (uint32_t i = nh / 2; i-- > 0;)
		heap_down(rd, heap, nh, i);
	while (nh && r == 0) {
		struct run_rd *x = &rd[heap[0]];
		if ((r = group_add(c, &g, run_head(x))) != 0)
			break;
		if (++x->pos == x->n && (r = run_fill(c, pr, x)) != 0)
			break;
		if (!run_head(x))
			heap[0] = heap[--nh];
		heap_down(rd, heap, nh, 0);
	}
done:
	if (r == 0)
		r = group_add(c, &g, NULL);
	/* the full runs now in the file are sorted (the ends kept in
	 * memory are read back sorted, but new ones join them) */
	if (r == 0 && clock_keep(c, pr) == 0)
		pr->sorted = keep_n ? keep_runs : nr;
	free(g.v);
	free(g.res);
	free(g.cnt);
	free(g.u);
	free(rd);
	free(heap);
	if (keep_n) {
		pr->nruns = keep_runs;
		pr->n = keep_n;
		if (r == 0)
			r = rc_spill_read(c, &pr->f, pr->v,
					  (size_t)keep_n * sizeof *pr->v,
					  (uint64_t)keep_runs * RUN_ENTS *
					  sizeof *pr->v);
	}
	/* The merge reads the entries with pread (rc_scan_entry): a mapping
	 * read at random faults in far more than the page it needs. */
	rc_spill_unmap(&c->ent_spill);
	c->entries = NULL;
	return r;
}

void rc_pair_free(struct rc_pair *pr)
{
	free(pr->v);
	pr->v = NULL;
	pr->n = pr->cap = 0;
	rc_map_free(&pr->listen[0]);
	rc_map_free(&pr->listen[1]);
	rc_map_free(&pr->first);
	rc_spill_close(&pr->f);
	free(pr->sdelta);
	free(pr->simg);
	pr->sdelta = NULL;
	pr->simg = NULL;
	pr->nsdelta = pr->nsimg = 0;
	pr->sorted = 0;
}
