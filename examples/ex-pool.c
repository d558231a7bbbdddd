/*
 * ex-pool - front server with a listener thread and a fixed pool of
 * worker threads.
 *
 * The main thread accepts connections and puts their fds on a queue; a
 * fixed number of worker threads take fds off the queue and serve each
 * connection to completion.  Backend connections are shared by all
 * workers through a mutex-protected pool: a worker takes a connection for
 * one call and gives it back, so one backend connection carries calls of
 * many requests over time; when all --pool connections of a kind are in
 * use, a worker waits (bounded) for one to come back.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ex_front.h"

#define EX_POOL_QUEUE 1024

static struct ex_front_opts opts;

/* The connection queue between the listener and the workers. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t nonempty;
	int fds[EX_POOL_QUEUE];
	unsigned head, count, max_count;
} q = { .lock = PTHREAD_MUTEX_INITIALIZER,
	.nonempty = PTHREAD_COND_INITIALIZER };

/* The shared backend pool, one per kind. */
struct bpool {
	pthread_mutex_t lock;
	pthread_cond_t freed;
	struct ex_bconn **idle;     /* --pool slots */
	int n_idle;
	int total;                  /* connected, idle or in use */
	long waits;                 /* times a worker had to wait */
	long opened;
};
static struct bpool pools[EX_KINDS] = {
	{ .lock = PTHREAD_MUTEX_INITIALIZER, .freed = PTHREAD_COND_INITIALIZER },
	{ .lock = PTHREAD_MUTEX_INITIALIZER, .freed = PTHREAD_COND_INITIALIZER },
};

/* Per worker counters, written by that worker only. */
struct worker {
	pthread_t th;
	int index;
	atomic_long conns, requests, failed;
};
static struct worker *workers;

/* Queue FD for the workers; 0, or -EAGAIN when the queue is full. */
static int queue_put(int fd)
{
	int r = 0;

	pthread_mutex_lock(&q.lock);
	if (q.count == EX_POOL_QUEUE) {
		r = -EAGAIN;
	} else {
		q.fds[(q.head + q.count) % EX_POOL_QUEUE] = fd;
		q.count++;
		if (q.count > q.max_count)
			q.max_count = q.count;
		pthread_cond_signal(&q.nonempty);
	}
	pthread_mutex_unlock(&q.lock);
	return r;
}

/* Take the next fd, waiting as long as it takes. */
static int queue_get(void)
{
	int fd;

	pthread_mutex_lock(&q.lock);
	while (q.count == 0)
		pthread_cond_wait(&q.nonempty, &q.lock);
	fd = q.fds[q.head];
	q.head = (q.head + 1) % EX_POOL_QUEUE;
	q.count--;
	pthread_mutex_unlock(&q.lock);
	return fd;
}

static struct ex_bconn *pool_get(void *ctx, int kind)
{
	struct bpool *p = &pools[kind];
	struct ex_bconn *bc = NULL;
	struct timespec deadline;
	int waited = 0;

	(void)ctx;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += opts.backend.timeout_ms / 1000;
	deadline.tv_nsec += (long)(opts.backend.timeout_ms % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&p->lock);
	while (p->n_idle == 0 && p->total >= opts.pool) {
		if (!waited++)
			p->waits++;
		if (pthread_cond_timedwait(&p->freed, &p->lock, &deadline) ==
		    ETIMEDOUT) {
			pthread_mutex_unlock(&p->lock);
			ex_log("no free %s backend connection within %d ms",
			       kind == EX_KIND_TCP ? "tcp" : "unix",
			       opts.backend.timeout_ms);
			return NULL;
		}
	}
	if (p->n_idle) {
		bc = p->idle[--p->n_idle];
		pthread_mutex_unlock(&p->lock);
		return bc;
	}
	p->total++;                 /* reserve the slot, connect unlocked */
	pthread_mutex_unlock(&p->lock);

	bc = malloc(sizeof *bc);
	if (bc && ex_block_connect(bc, &opts.backend, kind) == 0) {
		pthread_mutex_lock(&p->lock);
		p->opened++;
		pthread_mutex_unlock(&p->lock);
		return bc;
	}
	if (!bc)
		ex_log("out of memory for a backend connection");
	free(bc);
	pthread_mutex_lock(&p->lock);
	p->total--;
	pthread_cond_signal(&p->freed);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void pool_put(void *ctx, struct ex_bconn *bc, int broken)
{
	struct bpool *p = &pools[bc->kind];

	(void)ctx;
	if (broken) {
		ex_block_close(bc);
		free(bc);
		bc = NULL;
	}
	pthread_mutex_lock(&p->lock);
	if (bc)
		p->idle[p->n_idle++] = bc;
	else
		p->total--;
	pthread_cond_signal(&p->freed);
	pthread_mutex_unlock(&p->lock);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct ex_block_backends b = { pool_get, pool_put, NULL };

	for (;;) {
		int fd = queue_get();

		w->conns++;
		ex_set_timeouts(fd, opts.idle_ms);
		if (ex_block_serve(fd, &b, &w->requests) < 0)
			w->failed++;
		close(fd);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long conns = 0, requests = 0, failed = 0;
	int lfd, err, used = 0;

	ex_init(argv[0]);
	ex_front_parse(argc, argv, &opts, "ex-pool",
		       "A front server with a listener thread that hands "
		       "accepted connections to a\nfixed pool of worker threads "
		       "through a queue; the workers share a\nmutex-protected "
		       "pool of persistent backend connections.",
		       EX_FRONT_WORKERS | EX_FRONT_POOL, 4, 2);
	if ((err = ex_signals()) < 0)
		ex_fatal("cannot install signal handlers: %s", strerror(-err));
	for (int k = 0; k < EX_KINDS; k++) {
		pools[k].idle = calloc((size_t)opts.pool, sizeof *pools[k].idle);
		if (!pools[k].idle)
			ex_fatal("out of memory");
	}
	workers = calloc((size_t)opts.workers, sizeof *workers);
	if (!workers)
		ex_fatal("out of memory");
	lfd = ex_listen_tcp(opts.host, opts.port, 512, 0);
	if (lfd < 0)
		ex_fatal("cannot listen on %s:%d: %s", opts.host, opts.port,
			 strerror(-lfd));
	ex_set_timeouts(lfd, 500);  /* see ex_stop within 500 ms */
	ex_block_signals(1);        /* SIGTERM goes to this thread only */
	for (int i = 0; i < opts.workers; i++) {
		workers[i].index = i;
		err = pthread_create(&workers[i].th, NULL, worker_main,
				     &workers[i]);
		if (err)
			ex_fatal("cannot start worker %d: %s", i, strerror(err));
	}
	ex_block_signals(0);
	if (opts.pidfile && (err = ex_pidfile(opts.pidfile)) < 0)
		ex_fatal("cannot write pidfile %s: %s", opts.pidfile,
			 strerror(-err));

	while (!ex_stop) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED ||
			    errno == EAGAIN)
				continue;
			ex_log("accept: %s", strerror(errno));
			if (errno == EMFILE || errno == ENFILE)
				usleep(100000);
			continue;
		}
		if (queue_put(fd) < 0) {
			ex_log("%d connections already queued: refusing one",
			       EX_POOL_QUEUE);
			close(fd);
		}
	}
	close(lfd);
	/* The workers may be inside a connection: their counters are read
	 * without waiting for them (atomics: a snapshot). */
	for (int i = 0; i < opts.workers; i++) {
		conns += workers[i].conns;
		requests += workers[i].requests;
		failed += workers[i].failed;
		used += workers[i].conns > 0;
	}
	pthread_mutex_lock(&q.lock);
	unsigned max_q = q.max_count;
	pthread_mutex_unlock(&q.lock);
	long opened = 0, waits = 0;
	for (int k = 0; k < EX_KINDS; k++) {
		pthread_mutex_lock(&pools[k].lock);
		opened += pools[k].opened;
		waits += pools[k].waits;
		pthread_mutex_unlock(&pools[k].lock);
	}
	ex_front_stats("workers=%d workers_used=%d conns=%ld requests=%ld "
		       "failed_conns=%ld max_queued=%u pool=%d "
		       "backend_conns=%ld pool_waits=%ld",
		       opts.workers, used, conns, requests, failed, max_q,
		       opts.pool, opened, waits);
	if (opts.pidfile)
		unlink(opts.pidfile);
	return 0;
}
