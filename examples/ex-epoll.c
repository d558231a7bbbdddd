/*
 * ex-epoll - single-threaded, edge-triggered epoll front server.
 *
 * One thread, one epoll set, every socket non-blocking and registered once
 * with EPOLLET.  As edge-triggered code must, it reads a ready socket
 * until EAGAIN before it parses what it got, so one read pass can bring in
 * several pipelined requests (the pattern event isolation exists for).
 *
 * Requests on one client connection are handled one at a time, in order:
 * while a request is in progress the connection is not read; when its
 * answer is queued, the next request is taken from what was read, or read
 * anew.  Requests of different connections run concurrently.
 *
 * Backend calls are asynchronous over a pool of persistent non-blocking
 * connections per backend, shared by all requests: a call takes an idle
 * connection, or opens one while fewer than --pool exist, or else the
 * request waits in a FIFO until a connection is given back.  A connection
 * carries one call at a time and goes back to the pool with its reply.
 *
 * Bounded waits: a call (including its connect) must finish within
 * --timeout-ms, a request may wait for a connection as long, a client may
 * stay silent --idle-ms; a sweep every 250 ms enforces them.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ex_front.h"

#define EX_OUT_SIZE  8192       /* a client's unsent answers */
#define EX_OUT_HIGH  4096       /* stop taking requests above this */
#define EX_SWEEP_MS  250
#define EX_EVENTS    64

/* An intrusive doubly linked list. */
struct link {
	struct link *prev, *next;
};

static void list_init(struct link *h) { h->prev = h->next = h; }
static int list_empty(const struct link *h) { return h->next == h; }

static void list_add_tail(struct link *h, struct link *l)
{
	l->prev = h->prev;
	l->next = h;
	h->prev->next = l;
	h->prev = l;
}

static void list_del(struct link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = l;
}

#define list_entry(l, type, member) \
	((type *)(void *)((char *)(l) - offsetof(type, member)))

enum obj_type { OBJ_LISTEN, OBJ_CLIENT, OBJ_BACKEND };

/* What epoll_event.data.ptr points to: the first member of each.  A
 * closed object stays allocated (dead, on the zombie list) until the
 * current batch of events is handled, since a later event of the batch
 * may still point to it. */
struct obj {
	enum obj_type type;
	int fd;
	int dead;
	struct obj *next_zombie;
};

struct client {
	struct obj o;
	struct link all;            /* clients */
	struct link wait;           /* a pool's waiters, while waiting */
	struct ex_lbuf in;
	char out[EX_OUT_SIZE];
	size_t out_len, out_off;
	int busy;                   /* a request is in progress */
	int eof;                    /* the client sent its last byte */
	int closing;                /* close once the output is sent */
	int waiting;                /* on a pool's wait list */
	uint64_t since_ms;          /* last input, or start of the wait */
	struct ex_req req;          /* the request in progress */
	unsigned k;                 /* its next backend call */
	uint64_t cs;
};

enum bstate { B_CONNECTING, B_IDLE, B_BUSY };

struct backend {
	struct obj o;
	struct link all;            /* backends */
	struct link idle;           /* its pool's idle list, while idle */
	int kind;
	enum bstate state;
	struct client *owner;       /* NULL when idle or when the owner left */
	char id[EX_ID_MAX];         /* the call it carries */
	unsigned k;
	uint64_t deadline_ms;
	struct ex_lbuf in;
	char out[EX_LINE_MAX + 2];
	size_t out_len, out_off;
};

struct pool {
	struct link idle;           /* idle connections */
	struct link waiters;        /* clients waiting for one, FIFO */
	int total;                  /* open connections of this kind */
	long opened, waits;
};

static struct ex_front_opts opts;
static int epfd;
static struct obj *zombies;
static struct link clients, backends;
static struct pool pools[EX_KINDS];
static struct {
	long conns, requests, failed, inflight, max_inflight, max_waiting,
	     waiting;
	long batched;               /* read passes that brought 2+ requests */
} st;

static void client_advance(struct client *c);
static void call_start(struct client *c);

/* Close O's socket and free it once the current batch is handled. */
static void obj_bury(struct obj *o)
{
	close(o->fd);               /* also removes it from the epoll set */
	o->fd = -1;
	o->dead = 1;
	o->next_zombie = zombies;
	zombies = o;
}

static void obj_free_zombies(void)
{
	while (zombies) {
		struct obj *o = zombies;
		zombies = o->next_zombie;
		free(o);
	}
}

static int ep_add(struct obj *o, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = o };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, o->fd, &ev) < 0 ? -errno : 0;
}

/* ---- clients ---------------------------------------------------------- */

static void client_free(struct client *c)
{
	if (c->waiting) {
		list_del(&c->wait);
		c->waiting = 0;
		st.waiting--;
	}
	if (c->busy)
		st.inflight--;
	/* a backend still carrying our call finds owner == NULL */
	for (struct link *l = backends.next; l != &backends; l = l->next) {
		struct backend *b = list_entry(l, struct backend, all);
		if (b->owner == c)
			b->owner = NULL;
	}
	list_del(&c->all);
	obj_bury(&c->o);
}

/* Send what is queued; returns 0, or -errno when the client is gone. */
static int client_flush(struct client *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = write(c->o.fd, c->out + c->out_off,
				  c->out_len - c->out_off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;   /* EPOLLOUT will tell */
			return -errno;
		}
		c->out_off += (size_t)n;
	}
	c->out_off = c->out_len = 0;
	return 0;
}

/* Queue LINE (with its newline) and try to send it.  Returns 0 or -errno
 * (the client was freed). */
static int client_send(struct client *c, const char *line, size_t len)
{
	int r;

	if (c->out_off && c->out_len + len > sizeof c->out) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	if (c->out_len + len > sizeof c->out) {
		ex_log("client does not read its answers: closing");
		client_free(c);
		return -ENOBUFS;
	}
	memcpy(c->out + c->out_len, line, len);
	c->out_len += len;
	r = client_flush(c);
	if (r < 0) {
		if (r != -EPIPE && r != -ECONNRESET)
			ex_log("writing to client: %s", strerror(-r));
		client_free(c);
		return r;
	}
	if (c->closing && c->out_len == 0) {
		client_free(c);
		return -ECONNABORTED;
	}
	return 0;
}

/* The request in progress failed: answer ERR and close after sending. */
static void client_fail(struct client *c, const char *why)
{
	char out[EX_LINE_MAX + 2];
	int n = snprintf(out, sizeof out, "ERR %s %s\n", c->req.id, why);

	st.failed++;
	if (c->busy) {
		c->busy = 0;
		st.inflight--;
	}
	c->closing = 1;
	client_send(c, out, (size_t)n);
}

/* Whole lines held in LB (what one read pass brought in). */
static unsigned count_lines(const struct ex_lbuf *lb)
{
	const char *p = lb->buf + lb->off, *end = lb->buf + lb->len;
	unsigned n = 0;

	while (p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		n++;
		p++;
	}
	return n;
}

/* Read until EAGAIN, end of file, or a full buffer.  Returns the bytes
 * read (0: nothing new), or -errno. */
static ssize_t client_read(struct client *c)
{
	ssize_t total = 0;

	while (!c->eof) {
		ssize_t n = ex_lbuf_read(&c->in, c->o.fd);

		if (n > 0) {
			total += n;
			continue;
		}
		if (n == 0) {
			c->eof = 1;
			break;
		}
		if (n == -EINTR)
			continue;
		if (n == -EAGAIN || n == -ENOBUFS)
			break;
		return n;
	}
	if (total)
		c->since_ms = ex_now_ms();
	return total;
}

/* The request's calls are done: answer it.  Returns 0 or -errno (the
 * client was freed). */
static int client_answer(struct client *c)
{
	char out[EX_LINE_MAX + 2];
	int n = ex_fmt_resp(out, sizeof out, c->req.id, c->req.n, c->cs);

	if (c->busy) {
		c->busy = 0;
		st.inflight--;
	}
	st.requests++;
	return client_send(c, out, (size_t)n);
}

/* Start the request in LINE.  Returns 0 or -errno (the client was
 * freed). */
static int client_request(struct client *c, const char *line)
{
	if (ex_parse_req(line, &c->req)) {
		ex_log("bad request line '%.80s': closing", line);
		strcpy(c->req.id, "-");
		client_fail(c, "bad-request");
		return -EPROTO;
	}
	c->k = 0;
	c->cs = ex_cs_init();
	if (c->req.n == 0)
		return client_answer(c);
	c->busy = 1;
	if (++st.inflight > st.max_inflight)
		st.max_inflight = st.inflight;
	call_start(c);
	return 0;
}

/* Take requests from the input (reading more when none is whole) until
 * one is in progress, the input is drained, or the client is gone. */
static void client_advance(struct client *c)
{
	while (!c->busy && !c->closing) {
		char *line;
		int r;

		if (c->out_len - c->out_off > EX_OUT_HIGH)
			return;             /* EPOLLOUT resumes us */
		r = ex_lbuf_line(&c->in, &line, NULL);
		if (r < 0) {
			ex_log("request line longer than %d bytes: closing",
			       EX_LINE_MAX);
			client_free(c);
			return;
		}
		if (r > 0) {
			if (client_request(c, line) < 0)
				return;
			continue;
		}
		if (c->eof) {
			if (ex_lbuf_pending(&c->in))
				ex_log("client closed inside a line");
			c->closing = 1;
			if (c->out_len == c->out_off)
				client_free(c);
			return;
		}
		ssize_t n = client_read(c);
		if (n < 0) {
			if (n != -ECONNRESET)
				ex_log("reading from client: %s", strerror((int)-n));
			client_free(c);
			return;
		}
		if (n == 0 && !c->eof)
			return;             /* EAGAIN: wait for the next edge */
		if (n > 0 && count_lines(&c->in) > 1)
			st.batched++;

	}
}

static void client_event(struct client *c, uint32_t ev)
{
	if (ev & EPOLLOUT) {
		int r = client_flush(c);
		if (r < 0) {
			client_free(c);
			return;
		}
		if (c->closing && c->out_len == 0) {
			client_free(c);
			return;
		}
	}
	if (ev & EPOLLERR) {
		client_free(c);
		return;
	}
	/* Input (or a hangup) while a request is in progress is left in the
	 * socket: client_advance reads it once the answer is queued. */
	if (!c->busy)
		client_advance(c);
}

static void listener_event(int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct client *c;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN)
				ex_log("accept: %s", strerror(errno));
			return;
		}
		c = calloc(1, sizeof *c);
		if (!c) {
			ex_log("out of memory for a client: closing it");
			close(fd);
			continue;
		}
		c->o.type = OBJ_CLIENT;
		c->o.fd = fd;
		c->since_ms = ex_now_ms();
		list_init(&c->wait);
		list_add_tail(&clients, &c->all);
		if (ep_add(&c->o, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
			ex_log("epoll_ctl: %s", strerror(errno));
			client_free(c);
			continue;
		}
		st.conns++;
	}
}

/* ---- backends ---------------------------------------------------------- */

static const char *kind_name(int kind)
{
	return kind == EX_KIND_TCP ? "tcp" : "unix";
}

/* Close B; its owner's request fails with WHY. */
static void backend_fail(struct backend *b, const char *why)
{
	struct client *c = b->owner;

	if (b->state == B_IDLE)
		list_del(&b->idle);
	list_del(&b->all);
	pools[b->kind].total--;
	obj_bury(&b->o);
	if (c)
		client_fail(c, why);
}

static int backend_flush(struct backend *b)
{
	while (b->out_off < b->out_len) {
		ssize_t n = write(b->o.fd, b->out + b->out_off,
				  b->out_len - b->out_off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			return -errno;
		}
		b->out_off += (size_t)n;
	}
	b->out_off = b->out_len = 0;
	return 0;
}

/* Send client C's current call on B. */
static void call_send(struct backend *b, struct client *c)
{
	b->owner = c;
	b->state = b->state == B_CONNECTING ? B_CONNECTING : B_BUSY;
	snprintf(b->id, sizeof b->id, "%s", c->req.id);
	b->k = c->k;
	b->deadline_ms = ex_now_ms() + (uint64_t)opts.backend.timeout_ms;
	b->out_off = 0;
	b->out_len = (size_t)ex_fmt_call(b->out, sizeof b->out, b->id, b->k);
	if (b->state == B_BUSY) {
		int r = backend_flush(b);
		if (r < 0) {
			ex_log("%s backend: sending CALL %s %u: %s",
			       kind_name(b->kind), b->id, b->k, strerror(-r));
			backend_fail(b, "backend-failed");
		}
	}
}

/* Open a new connection of KIND (the connect completes later). */
static struct backend *backend_open(int kind)
{
	struct backend *b = calloc(1, sizeof *b);
	int fd;

	if (!b) {
		ex_log("out of memory for a backend connection");
		return NULL;
	}
	if (kind == EX_KIND_TCP)
		fd = ex_connect_tcp(opts.backend.host, opts.backend.port, 1, 0);
	else
		fd = ex_connect_unix(opts.backend.unix_path, 1, 0);
	if (fd < 0) {
		ex_log("cannot connect to the %s backend: %s", kind_name(kind),
		       strerror(-fd));
		free(b);
		return NULL;
	}
	b->o.type = OBJ_BACKEND;
	b->o.fd = fd;
	b->kind = kind;
	b->state = B_CONNECTING;
	list_init(&b->idle);
	list_add_tail(&backends, &b->all);
	if (ep_add(&b->o, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
		ex_log("epoll_ctl: %s", strerror(errno));
		list_del(&b->all);
		close(fd);
		free(b);
		return NULL;
	}
	pools[kind].total++;
	pools[kind].opened++;
	return b;
}

/* Give B back: to the first waiting request, else to the idle list. */
static void pool_release(struct backend *b)
{
	struct pool *p = &pools[b->kind];

	b->owner = NULL;
	b->state = B_IDLE;
	if (!list_empty(&p->waiters)) {
		struct client *c = list_entry(p->waiters.next, struct client,
					      wait);
		list_del(&c->wait);
		c->waiting = 0;
		st.waiting--;
		call_send(b, c);
		return;
	}
	list_add_tail(&p->idle, &b->idle);
}

/* Start client C's call number c->k. */
static void call_start(struct client *c)
{
	int kind = (int)(c->k % 2);
	struct pool *p = &pools[kind];
	struct backend *b;

	if (!list_empty(&p->idle)) {
		b = list_entry(p->idle.next, struct backend, idle);
		list_del(&b->idle);
		call_send(b, c);
		return;
	}
	if (p->total < opts.pool) {
		b = backend_open(kind);
		if (!b) {
			client_fail(c, "backend-unavailable");
			return;
		}
		call_send(b, c);
		return;
	}
	list_add_tail(&p->waiters, &c->wait);
	c->waiting = 1;
	c->since_ms = ex_now_ms();
	p->waits++;
	if (++st.waiting > st.max_waiting)
		st.max_waiting = st.waiting;
}

/* B's reply LINE arrived and is the right one. */
static void call_done(struct backend *b, const char *line, size_t len)
{
	struct client *c = b->owner;

	pool_release(b);
	if (!c)
		return;             /* its client left meanwhile */
	c->cs = ex_cs_add(c->cs, line, len);
	c->k++;
	if (c->k < c->req.n) {
		call_start(c);
		return;
	}
	if (client_answer(c) == 0)
		client_advance(c);
}

static void backend_event(struct backend *b, uint32_t ev)
{
	char *line;
	size_t len;
	int r;

	if (b->state == B_CONNECTING) {
		if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		r = ex_connect_done(b->o.fd);
		if (r < 0) {
			ex_log("cannot connect to the %s backend: %s",
			       kind_name(b->kind), strerror(-r));
			backend_fail(b, "backend-unavailable");
			return;
		}
		b->state = b->owner ? B_BUSY : B_IDLE;
		if (b->state == B_IDLE) {       /* its client left */
			pool_release(b);
			return;
		}
	}
	if ((ev & EPOLLOUT) && b->out_len) {
		r = backend_flush(b);
		if (r < 0) {
			ex_log("%s backend: sending CALL %s %u: %s",
			       kind_name(b->kind), b->id, b->k, strerror(-r));
			backend_fail(b, "backend-failed");
			return;
		}
	}
	if (!(ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		return;
	/* read until EAGAIN, then look at what came */
	for (;;) {
		ssize_t n = ex_lbuf_read(&b->in, b->o.fd);
		if (n > 0)
			continue;
		if (n == -EINTR)
			continue;
		if (n == -EAGAIN)
			break;
		if (n == 0 && ex_lbuf_pending(&b->in))
			break;              /* the reply, then the close */
		if (n == 0) {
			if (b->state == B_BUSY)
				ex_log("%s backend closed during CALL %s %u",
				       kind_name(b->kind), b->id, b->k);
		} else {
			ex_log("%s backend: reading: %s", kind_name(b->kind),
			       strerror((int)-n));
		}
		backend_fail(b, "backend-failed");
		return;
	}
	r = ex_lbuf_line(&b->in, &line, &len);
	if (r == 0)
		return;                     /* a partial line */
	if (r < 0 || b->state != B_BUSY || !ex_is_ok_for(line, b->id, b->k)) {
		if (r < 0)
			ex_log("%s backend: reply line too long",
			       kind_name(b->kind));
		else if (b->state != B_BUSY)
			ex_log("%s backend: unexpected line '%.80s'",
			       kind_name(b->kind), line);
		else
			ex_log("%s backend: mixup: CALL %s %u got reply "
			       "'%.80s'", kind_name(b->kind), b->id, b->k, line);
		backend_fail(b, r > 0 && b->state == B_BUSY ?
			     "backend-mixup" : "backend-failed");
		return;
	}
	if (ex_lbuf_pending(&b->in)) {
		ex_log("%s backend: sent more than one reply to CALL %s %u",
		       kind_name(b->kind), b->id, b->k);
		backend_fail(b, "backend-failed");
		return;
	}
	call_done(b, line, len);
}

/* ---- the loop ------------------------------------------------------------ */

/* Enforce the time bounds. */
static void sweep(uint64_t now)
{
	struct link *l, *next;

	for (l = backends.next; l != &backends; l = next) {
		struct backend *b = list_entry(l, struct backend, all);
		next = l->next;
		if (b->state != B_IDLE && now >= b->deadline_ms) {
			ex_log("%s backend: CALL %s %u timed out",
			       kind_name(b->kind), b->id, b->k);
			backend_fail(b, "backend-timeout");
			next = backends.next;   /* the list changed */
		}
	}
	for (l = clients.next; l != &clients; l = next) {
		struct client *c = list_entry(l, struct client, all);
		next = l->next;
		if (c->waiting &&
		    now >= c->since_ms + (uint64_t)opts.backend.timeout_ms) {
			ex_log("no free %s backend connection within %d ms",
			       kind_name((int)(c->k % 2)),
			       opts.backend.timeout_ms);
			list_del(&c->wait);
			c->waiting = 0;
			st.waiting--;
			client_fail(c, "backend-unavailable");
			next = clients.next;
		} else if (!c->busy && !c->closing &&
			   now >= c->since_ms + (uint64_t)opts.idle_ms) {
			ex_log("client idle too long: closing");
			client_free(c);
			next = clients.next;
		}
	}
}

int main(int argc, char **argv)
{
	struct epoll_event evs[EX_EVENTS];
	struct obj lobj = { .type = OBJ_LISTEN, .fd = -1 };
	uint64_t next_sweep;
	int err;

	ex_init(argv[0]);
	ex_front_parse(argc, argv, &opts, "ex-epoll",
		       "A single-threaded front server: one edge-triggered "
		       "epoll loop, non-blocking\nsockets read until EAGAIN, "
		       "asynchronous backend calls over a shared pool of\n"
		       "persistent connections (a request waits for a free "
		       "one).", EX_FRONT_POOL, 0, 4);
	if ((err = ex_signals()) < 0)
		ex_fatal("cannot install signal handlers: %s", strerror(-err));
	list_init(&clients);
	list_init(&backends);
	for (int k = 0; k < EX_KINDS; k++) {
		list_init(&pools[k].idle);
		list_init(&pools[k].waiters);
	}
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		ex_fatal("epoll_create1: %s", strerror(errno));
	lobj.fd = ex_listen_tcp(opts.host, opts.port, 512, 1);
	if (lobj.fd < 0)
		ex_fatal("cannot listen on %s:%d: %s", opts.host, opts.port,
			 strerror(-lobj.fd));
	if (ep_add(&lobj, EPOLLIN | EPOLLET) < 0)
		ex_fatal("epoll_ctl: %s", strerror(errno));
	if (opts.pidfile && (err = ex_pidfile(opts.pidfile)) < 0)
		ex_fatal("cannot write pidfile %s: %s", opts.pidfile,
			 strerror(-err));

	next_sweep = ex_now_ms() + EX_SWEEP_MS;
	while (!ex_stop) {
		int n = epoll_wait(epfd, evs, EX_EVENTS, EX_SWEEP_MS);
		uint64_t now;

		if (n < 0 && errno != EINTR)
			ex_fatal("epoll_wait: %s", strerror(errno));
		for (int i = 0; i < n; i++) {
			struct obj *o = evs[i].data.ptr;

			if (o->dead)
				continue;   /* closed by an earlier event */
			switch (o->type) {
			case OBJ_LISTEN:
				listener_event(o->fd);
				break;
			case OBJ_CLIENT:
				client_event((struct client *)o, evs[i].events);
				break;
			case OBJ_BACKEND:
				backend_event((struct backend *)o,
					      evs[i].events);
				break;
			}
		}
		now = ex_now_ms();
		if (now >= next_sweep) {
			sweep(now);
			next_sweep = now + EX_SWEEP_MS;
		}
		obj_free_zombies();
	}
	ex_front_stats("conns=%ld requests=%ld failed=%ld max_inflight=%ld "
		       "batched_reads=%ld pool=%d backend_conns=%ld "
		       "pool_waits=%ld max_waiting=%ld",
		       st.conns, st.requests, st.failed, st.max_inflight,
		       st.batched,
		       opts.pool, pools[0].opened + pools[1].opened,
		       pools[0].waits + pools[1].waits, st.max_waiting);
	if (opts.pidfile)
		unlink(opts.pidfile);
	return 0;
}
