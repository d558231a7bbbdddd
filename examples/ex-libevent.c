/*
 * ex-libevent - front server on a libevent 2.1 loop with bufferevents.
 *
 * One thread runs an event_base: an evconnlistener accepts, every client
 * and every backend connection is a socket bufferevent, and SIGTERM is an
 * event too.  Requests on one client connection are handled one at a
 * time: while one is in progress the client's bufferevent stops reading
 * (bufferevent_disable EV_READ); when it is answered, reading resumes and
 * a request already in the input buffer is taken at once.
 *
 * Backend calls are asynchronous over a pool of persistent connections per
 * backend (at most --pool each), shared by all requests; a call takes an
 * idle connection or opens one, else the request waits in a FIFO for one
 * to come back.  Bounded waits: bufferevent timeouts on calls (--timeout-ms)
 * and on silent clients (--idle-ms); a timer fails requests that waited
 * for a connection longer than --timeout-ms.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "ex_front.h"

#define EX_SWEEP_MS 250

struct client {
	struct bufferevent *bev;
	LIST_ENTRY(client) all;     /* clients, or zombies once freed */
	TAILQ_ENTRY(client) wait;
	int busy;                   /* a request is in progress */
	int closing;                /* free once the output is sent */
	int dead;                   /* freed: memory kept until reaped */
	int waiting;                /* on a pool's waiters */
	uint64_t wait_since_ms;
	struct ex_req req;
	unsigned k;                 /* next backend call */
	uint64_t cs;
};

struct backend {
	struct bufferevent *bev;
	LIST_ENTRY(backend) all;
	TAILQ_ENTRY(backend) idle;
	int kind;
	int connected;
	int is_idle;
	struct client *owner;       /* NULL when idle or its client left */
	char id[EX_ID_MAX];
	unsigned k;
};

struct pool {
	TAILQ_HEAD(, backend) idle;
	TAILQ_HEAD(, client) waiters;
	int total;
	long opened, waits;
};

static struct ex_front_opts opts;
static struct event_base *base;
static LIST_HEAD(, client) clients = LIST_HEAD_INITIALIZER(clients);
static LIST_HEAD(, backend) backends = LIST_HEAD_INITIALIZER(backends);
/* Freed clients: a caller up the stack may still look at c->closing, so
 * the memory goes only when the reaper event runs. */
static LIST_HEAD(, client) zombies = LIST_HEAD_INITIALIZER(zombies);
static struct event *reaper;
static struct pool pools[EX_KINDS];
static struct timeval call_tv, idle_tv;
static struct {
	long conns, requests, failed, inflight, max_inflight, waiting,
	     max_waiting;
	long batched;               /* reads that brought 2+ requests */
} st;

static void call_start(struct client *c);
static void client_advance(struct client *c);

static const char *kind_name(int kind)
{
	return kind == EX_KIND_TCP ? "tcp" : "unix";
}

static void tv_of_ms(struct timeval *tv, int ms)
{
	tv->tv_sec = ms / 1000;
	tv->tv_usec = (ms % 1000) * 1000;
}

/* ---- clients ------------------------------------------------------------ */

static void client_free(struct client *c)
{
	struct backend *b;

	if (c->waiting) {
		TAILQ_REMOVE(&pools[c->k % 2].waiters, c, wait);
		c->waiting = 0;
		st.waiting--;
	}
	if (c->busy)
		st.inflight--;
	LIST_FOREACH(b, &backends, all)
		if (b->owner == c)
			b->owner = NULL;    /* its reply will be dropped */
	LIST_REMOVE(c, all);
	bufferevent_free(c->bev);
	c->bev = NULL;
	c->dead = 1;
	c->closing = 1;
	LIST_INSERT_HEAD(&zombies, c, all);
	event_active(reaper, 0, 0);
}

static void reap_cb(evutil_socket_t fd, short what, void *arg)
{
	struct client *c;

	(void)fd; (void)what; (void)arg;
	while ((c = LIST_FIRST(&zombies)) != NULL) {
		LIST_REMOVE(c, all);
		free(c);
	}
}

/* Free C once its output is sent (at once if nothing is pending). */
static void client_close_after_flush(struct client *c)
{
	c->closing = 1;
	bufferevent_disable(c->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		client_free(c);
	/* else client_write_cb frees it */
}

static void client_write_cb(struct bufferevent *bev, void *arg)
{
	struct client *c = arg;

	(void)bev;
	if (c->closing)
		client_free(c);
}

static void client_fail(struct client *c, const char *why)
{
	st.failed++;
	if (c->busy) {
		c->busy = 0;
		st.inflight--;
	}
	evbuffer_add_printf(bufferevent_get_output(c->bev), "ERR %s %s\n",
			    c->req.id, why);
	client_close_after_flush(c);
}

static void client_answer(struct client *c)
{
	char out[EX_LINE_MAX + 2];
	int n = ex_fmt_resp(out, sizeof out, c->req.id, c->req.n, c->cs);

	if (c->busy) {
		c->busy = 0;
		st.inflight--;
	}
	st.requests++;
	bufferevent_write(c->bev, out, (size_t)n);
}

/* Take the requests already read, one at a time, until one is in
 * progress. */
static void client_advance(struct client *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);

	while (!c->busy && !c->closing) {
		size_t len;
		char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF);

		if (!line) {
			if (evbuffer_get_length(in) > EX_LINE_MAX) {
				ex_log("request line longer than %d bytes: "
				       "closing", EX_LINE_MAX);
				client_free(c);
			}
			return;
		}
		if (len && line[len - 1] == '\r')
			line[--len] = '\0';
		if (len > EX_LINE_MAX || ex_parse_req(line, &c->req)) {
			ex_log("bad request line '%.80s': closing", line);
			free(line);
			strcpy(c->req.id, "-");
			client_fail(c, "bad-request");
			return;
		}
		free(line);
		c->k = 0;
		c->cs = ex_cs_init();
		if (c->req.n == 0) {
			client_answer(c);
			continue;
		}
		c->busy = 1;
		if (++st.inflight > st.max_inflight)
			st.max_inflight = st.inflight;
		/* one request at a time: read no more until it is answered */
		bufferevent_disable(c->bev, EV_READ);
		call_start(c);
	}
}

/* The request in progress is answered: resume reading. */
static void client_done(struct client *c)
{
	client_answer(c);
	bufferevent_enable(c->bev, EV_READ);
	client_advance(c);
}

static void client_read_cb(struct bufferevent *bev, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr p = evbuffer_search(in, "\n", 1, NULL);

	/* a second newline: this read brought more than one request */
	if (p.pos >= 0 && evbuffer_ptr_set(in, &p, 1, EVBUFFER_PTR_ADD) == 0 &&
	    evbuffer_search(in, "\n", 1, &p).pos >= 0)
		st.batched++;
	client_advance(arg);
}

static void client_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct client *c = arg;

	(void)bev;
	if (what & BEV_EVENT_TIMEOUT) {
		ex_log("client idle too long: closing");
		client_free(c);
		return;
	}
	if (what & BEV_EVENT_ERROR) {
		int err = EVUTIL_SOCKET_ERROR();
		if (err != ECONNRESET && err != EPIPE)
			ex_log("client connection: %s", strerror(err));
		client_free(c);
		return;
	}
	if (what & BEV_EVENT_EOF) {
		/* everything it sent was read; requests already taken were
		 * answered, since reading stops while one is in progress */
		if (evbuffer_get_length(bufferevent_get_input(c->bev)))
			ex_log("client closed inside a line");
		client_close_after_flush(c);
	}
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd,
		      struct sockaddr *sa, int salen, void *arg)
{
	struct client *c = calloc(1, sizeof *c);

	(void)l; (void)sa; (void)salen; (void)arg;
	if (!c) {
		ex_log("out of memory for a client: closing it");
		close(fd);
		return;
	}
	c->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->bev) {
		ex_log("cannot make a bufferevent: closing a client");
		close(fd);
		free(c);
		return;
	}
	LIST_INSERT_HEAD(&clients, c, all);
	bufferevent_setcb(c->bev, client_read_cb, client_write_cb,
			  client_event_cb, c);
	bufferevent_set_timeouts(c->bev, &idle_tv, NULL);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	st.conns++;
}

static void accept_error_cb(struct evconnlistener *l, void *arg)
{
	int err = EVUTIL_SOCKET_ERROR();

	(void)l; (void)arg;
	ex_log("accept: %s", strerror(err));
}

/* ---- backends ------------------------------------------------------------ */

static void backend_fail(struct backend *b, const char *why)
{
	struct client *c = b->owner;

	if (b->is_idle)
		TAILQ_REMOVE(&pools[b->kind].idle, b, idle);
	LIST_REMOVE(b, all);
	pools[b->kind].total--;
	bufferevent_free(b->bev);
	free(b);
	if (c)
		client_fail(c, why);
}

static void call_send(struct backend *b, struct client *c)
{
	char out[EX_LINE_MAX + 2];
	int n;

	b->owner = c;
	b->is_idle = 0;
	snprintf(b->id, sizeof b->id, "%s", c->req.id);
	b->k = c->k;
	n = ex_fmt_call(out, sizeof out, b->id, b->k);
	bufferevent_set_timeouts(b->bev, &call_tv, &call_tv);
	/* before the connect completes, libevent holds it until then */
	bufferevent_write(b->bev, out, (size_t)n);
}

static void pool_release(struct backend *b)
{
	struct pool *p = &pools[b->kind];

	b->owner = NULL;
	bufferevent_set_timeouts(b->bev, NULL, NULL);
	if (!TAILQ_EMPTY(&p->waiters)) {
		struct client *c = TAILQ_FIRST(&p->waiters);
		TAILQ_REMOVE(&p->waiters, c, wait);
		c->waiting = 0;
		st.waiting--;
		call_send(b, c);
		return;
	}
	b->is_idle = 1;
	TAILQ_INSERT_TAIL(&p->idle, b, idle);
}

static void backend_read_cb(struct bufferevent *bev, void *arg)
{
	struct backend *b = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct client *c;
	size_t len;
	char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF);

	if (!line) {
		if (evbuffer_get_length(in) > EX_LINE_MAX) {
			ex_log("%s backend: reply line too long",
			       kind_name(b->kind));
			backend_fail(b, "backend-failed");
		}
		return;
	}
	if (len && line[len - 1] == '\r')
		line[--len] = '\0';
	if (b->is_idle || !ex_is_ok_for(line, b->id, b->k) ||
	    evbuffer_get_length(in)) {
		if (b->is_idle)
			ex_log("%s backend: unexpected line '%.80s'",
			       kind_name(b->kind), line);
		else if (evbuffer_get_length(in))
			ex_log("%s backend: sent more than one reply to "
			       "CALL %s %u", kind_name(b->kind), b->id, b->k);
		else
			ex_log("%s backend: mixup: CALL %s %u got reply "
			       "'%.80s'", kind_name(b->kind), b->id, b->k, line);
		int mixup = !b->is_idle && !evbuffer_get_length(in);
		free(line);
		backend_fail(b, mixup ? "backend-mixup" : "backend-failed");
		return;
	}
	c = b->owner;
	pool_release(b);
	if (c) {
		c->cs = ex_cs_add(c->cs, line, len);
		c->k++;
		if (c->k < c->req.n)
			call_start(c);
		else
			client_done(c);
	}
	free(line);
}

static void backend_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct backend *b = arg;

	if (what & BEV_EVENT_CONNECTED) {
		evutil_socket_t fd = bufferevent_getfd(bev);
		int one = 1;

		b->connected = 1;
		if (b->kind == EX_KIND_TCP)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
				   sizeof one);
		return;
	}
	if (what & BEV_EVENT_TIMEOUT) {
		ex_log("%s backend: CALL %s %u timed out", kind_name(b->kind),
		       b->id, b->k);
		backend_fail(b, "backend-timeout");
		return;
	}
	if (what & BEV_EVENT_ERROR) {
		int err = EVUTIL_SOCKET_ERROR();
		ex_log("%s backend: %s%s", kind_name(b->kind),
		       b->connected ? "" : "cannot connect: ", strerror(err));
		backend_fail(b, b->connected ? "backend-failed" :
			     "backend-unavailable");
		return;
	}
	if (what & BEV_EVENT_EOF) {
		if (!b->is_idle)
			ex_log("%s backend closed during CALL %s %u",
			       kind_name(b->kind), b->id, b->k);
		backend_fail(b, "backend-failed");
	}
}

static struct backend *backend_open(int kind)
{
	struct backend *b = calloc(1, sizeof *b);
	struct sockaddr_storage ss;
	socklen_t sslen;

	if (!b) {
		ex_log("out of memory for a backend connection");
		return NULL;
	}
	memset(&ss, 0, sizeof ss);
	if (kind == EX_KIND_TCP) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)opts.backend.port);
		if (inet_pton(AF_INET, opts.backend.host, &sin->sin_addr) != 1) {
			ex_log("--backend-host %s is not an IPv4 address",
			       opts.backend.host);
			free(b);
			return NULL;
		}
		sslen = sizeof *sin;
	} else {
		struct sockaddr_un *sun = (struct sockaddr_un *)&ss;
		sun->sun_family = AF_UNIX;
		if (strlen(opts.backend.unix_path) >= sizeof sun->sun_path) {
			ex_log("--backend-unix path too long");
			free(b);
			return NULL;
		}
		strcpy(sun->sun_path, opts.backend.unix_path);
		sslen = sizeof *sun;
	}
	b->kind = kind;
	b->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (!b->bev) {
		ex_log("cannot make a bufferevent for the %s backend",
		       kind_name(kind));
		free(b);
		return NULL;
	}
	bufferevent_setcb(b->bev, backend_read_cb, NULL, backend_event_cb, b);
	bufferevent_enable(b->bev, EV_READ | EV_WRITE);
	if (bufferevent_socket_connect(b->bev, (struct sockaddr *)&ss,
				       (int)sslen) < 0) {
		ex_log("cannot connect to the %s backend: %s", kind_name(kind),
		       strerror(EVUTIL_SOCKET_ERROR()));
		bufferevent_free(b->bev);
		free(b);
		return NULL;
	}
	LIST_INSERT_HEAD(&backends, b, all);
	pools[kind].total++;
	pools[kind].opened++;
	return b;
}

static void call_start(struct client *c)
{
	int kind = (int)(c->k % 2);
	struct pool *p = &pools[kind];
	struct backend *b;

	if (!TAILQ_EMPTY(&p->idle)) {
		b = TAILQ_FIRST(&p->idle);
		TAILQ_REMOVE(&p->idle, b, idle);
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
	TAILQ_INSERT_TAIL(&p->waiters, c, wait);
	c->waiting = 1;
	c->wait_since_ms = ex_now_ms();
	p->waits++;
	if (++st.waiting > st.max_waiting)
		st.max_waiting = st.waiting;
}

/* ---- timers and signals ---------------------------------------------------- */

static void sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	uint64_t now = ex_now_ms();

	(void)fd; (void)what; (void)arg;
	for (int k = 0; k < EX_KINDS; k++) {
		struct client *c;

		while ((c = TAILQ_FIRST(&pools[k].waiters)) != NULL &&
		       now >= c->wait_since_ms +
			      (uint64_t)opts.backend.timeout_ms) {
			ex_log("no free %s backend connection within %d ms",
			       kind_name(k), opts.backend.timeout_ms);
			TAILQ_REMOVE(&pools[k].waiters, c, wait);
			c->waiting = 0;
			st.waiting--;
			client_fail(c, "backend-unavailable");
		}
	}
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)sig; (void)what; (void)arg;
	ex_stop = 1;
	event_base_loopbreak(base);
}

int main(int argc, char **argv)
{
	struct evconnlistener *listener;
	struct event *sigterm, *sigint, *sweep;
	struct client *c;
	struct sockaddr_in sin;
	struct timeval sweep_tv;
	int err;

	ex_init(argv[0]);
	ex_front_parse(argc, argv, &opts, "ex-libevent",
		       "A front server on one libevent 2.1 event loop: an "
		       "evconnlistener, a\nbufferevent per connection, "
		       "asynchronous backend calls over a shared pool\nof "
		       "persistent connections (a request waits for a free "
		       "one).", EX_FRONT_POOL, 0, 4);
	tv_of_ms(&call_tv, opts.backend.timeout_ms);
	tv_of_ms(&idle_tv, opts.idle_ms);
	tv_of_ms(&sweep_tv, EX_SWEEP_MS);
	for (int k = 0; k < EX_KINDS; k++) {
		TAILQ_INIT(&pools[k].idle);
		TAILQ_INIT(&pools[k].waiters);
	}
	base = event_base_new();
	if (!base)
		ex_fatal("cannot create an event base");
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)opts.port);
	if (inet_pton(AF_INET, opts.host, &sin.sin_addr) != 1)
		ex_fatal("--host %s is not an IPv4 address", opts.host);
	listener = evconnlistener_new_bind(base, accept_cb, NULL,
					   LEV_OPT_CLOSE_ON_FREE |
					   LEV_OPT_REUSEABLE |
					   LEV_OPT_CLOSE_ON_EXEC, 512,
					   (struct sockaddr *)&sin, sizeof sin);
	if (!listener)
		ex_fatal("cannot listen on %s:%d: %s", opts.host, opts.port,
			 strerror(errno));
	evconnlistener_set_error_cb(listener, accept_error_cb);
	sigterm = evsignal_new(base, SIGTERM, signal_cb, NULL);
	sigint = evsignal_new(base, SIGINT, signal_cb, NULL);
	sweep = event_new(base, -1, EV_PERSIST, sweep_cb, NULL);
	reaper = event_new(base, -1, 0, reap_cb, NULL);
	if (!sigterm || !sigint || !sweep || !reaper || event_add(sigterm, NULL) < 0 ||
	    event_add(sigint, NULL) < 0 || event_add(sweep, &sweep_tv) < 0)
		ex_fatal("cannot set up the signal and timer events");
	if (opts.pidfile && (err = ex_pidfile(opts.pidfile)) < 0)
		ex_fatal("cannot write pidfile %s: %s", opts.pidfile,
			 strerror(-err));

	if (event_base_dispatch(base) < 0)
		ex_fatal("the event loop failed");

	ex_front_stats("conns=%ld requests=%ld failed=%ld max_inflight=%ld "
		       "batched_reads=%ld pool=%d backend_conns=%ld "
		       "pool_waits=%ld max_waiting=%ld",
		       st.conns, st.requests, st.failed, st.max_inflight,
		       st.batched,
		       opts.pool, pools[0].opened + pools[1].opened,
		       pools[0].waits + pools[1].waits, st.max_waiting);
	while ((c = LIST_FIRST(&clients)) != NULL)
		client_free(c);
	while (!LIST_EMPTY(&backends)) {
		struct backend *b = LIST_FIRST(&backends);
		b->owner = NULL;
		backend_fail(b, "stopping");
	}
	reap_cb(-1, 0, NULL);
	evconnlistener_free(listener);
	event_free(reaper);
	event_free(sigterm);
	event_free(sigint);
	event_free(sweep);
	event_base_free(base);
	if (opts.pidfile)
		unlink(opts.pidfile);
	return 0;
}
