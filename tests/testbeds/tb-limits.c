/*
 * tb-limits - front servers of the architectures black-box tracing cannot
 * follow (paper, section 4; docs/accuracy.md, "What cannot be traced"),
 * speaking the examples' line protocol (docs/examples.md) so that
 * ex-client, ex-backend and tests/integ/check-paths.py measure them.
 *
 *   tb-limits MODE [front options]
 *
 * MODE:
 *   queue    a reader thread reads the requests of every connection and
 *            hands each to a pool of worker threads through a queue in
 *            memory (mutex and condition variable); the worker makes the
 *            backend calls and answers.  The hand-over is invisible: the
 *            worker's calls follow the last input that worker read.
 *   preempt  one kernel thread runs a user-level thread (ucontext) per
 *            connection; a SIGALRM timer preempts a user thread while it
 *            computes before each backend call and the scheduler runs
 *            another, which may read its own request meanwhile.
 *   coop     the same user-level threads, switched only when a read would
 *            block (no timer): the paper's cooperative package, which is
 *            traceable like any event loop (the control of preempt).
 *   uring    a thread per connection that does all its socket I/O
 *            (client and backends) through io_uring: the shim sees the
 *            connections made but none of the bytes.
 *
 * Every mode computes --work-us before each backend call (a busy loop) and
 * answers correctly: the client's verification passes whatever the
 * tracer makes of it.  At exit (SIGTERM) it prints
 * "tb-limits[PID]: stats requests=N preemptions=N handoffs=N ...".
 */
#include "config.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "ex_front.h"

#define TL_MAX_CONNS  1024
#define TL_STACK      (128 * 1024)
#define TL_TICK_US    200           /* preemption timer period */

enum tl_mode { TL_QUEUE, TL_PREEMPT, TL_COOP, TL_URING };

static struct ex_front_opts opts;
static enum tl_mode mode;
static long work_us = 300;
static atomic_long n_requests, n_failed, n_handoffs, n_conns;
static volatile sig_atomic_t n_preempt;

/* Busy for US microseconds (CLOCK_MONOTONIC through the vDSO: no call the
 * shim sees).  PREEMPTIBLE, when not NULL, is set while spinning. */
static void spin(long us, volatile sig_atomic_t *preemptible)
{
	struct timespec t0, t;
	long ns;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (preemptible)
			*preemptible = 1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		ns = (t.tv_sec - t0.tv_sec) * 1000000000L +
		     (t.tv_nsec - t0.tv_nsec);
	} while (ns < us * 1000L);
	if (preemptible)
		*preemptible = 0;
}

/* Answer "ERR ID WHY" on FD (best effort). */
static void answer_err(int fd, const char *id, const char *why)
{
	char out[EX_LINE_MAX + 2];
	int n = snprintf(out, sizeof out, "ERR %s %s\n", id, why);

	if (n > 0)
		(void)ex_write_all(fd, out, (size_t)n);
}

/* The calls of REQ over the private backends B, each after WORK_US of
 * work, then the answer on FD.  Returns 0 or -errno (answered ERR). */
static int do_request(int fd, const struct ex_req *req,
		      const struct ex_block_backends *b,
		      volatile sig_atomic_t *preemptible)
{
	char out[EX_LINE_MAX + 2];
	uint64_t cs = ex_cs_init();
	int r, n;

	for (unsigned k = 0; k < req->n; k++) {
		struct ex_bconn *bc;

		spin(work_us, preemptible);
		bc = b->get(b->ctx, (int)(k % 2));
		if (!bc) {
			answer_err(fd, req->id, "backend-unavailable");
			return -EIO;
		}
		r = ex_block_call(bc, req->id, k, &cs);
		b->put(b->ctx, bc, r < 0);
		if (r < 0) {
			answer_err(fd, req->id, r == -EPROTO ? "backend-mixup"
							     : "backend-failed");
			return r;
		}
	}
	n = ex_fmt_resp(out, sizeof out, req->id, req->n, cs);
	atomic_fetch_add(&n_requests, 1);
	r = ex_write_all(fd, out, (size_t)n);
	if (r < 0)
		ex_log("answering %s: %s", req->id, strerror(-r));
	return r;
}

/* ---- queue: a reader thread, workers fed through memory ----------------- */

struct q_conn {
	int fd;
	atomic_int busy;            /* a worker has its request */
	struct ex_lbuf in;
};

struct q_job {
	struct q_conn *c;
	struct ex_req req;
	struct q_job *next;
};

static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cv = PTHREAD_COND_INITIALIZER;
static struct q_job *q_head, **q_tail = &q_head;

static void q_push(struct q_job *j)
{
	pthread_mutex_lock(&q_mu);
	j->next = NULL;
	*q_tail = j;
	q_tail = &j->next;
	pthread_cond_signal(&q_cv);
	pthread_mutex_unlock(&q_mu);
}

/* The next job, or NULL once ex_stop is set. */
static struct q_job *q_pop(void)
{
	struct q_job *j = NULL;

	pthread_mutex_lock(&q_mu);
	while (!q_head && !ex_stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&q_cv, &q_mu, &ts);
	}
	if (q_head) {
		j = q_head;
		q_head = j->next;
		if (!q_head)
			q_tail = &q_head;
	}
	pthread_mutex_unlock(&q_mu);
	return j;
}

static void *q_worker(void *arg)
{
	struct ex_block_private priv;
	struct ex_block_backends b;
	struct q_job *j;

	(void)arg;
	ex_block_private_init(&priv, &opts.backend, &b);
	while ((j = q_pop())) {
		atomic_fetch_add(&n_handoffs, 1);
		if (do_request(j->c->fd, &j->req, &b, NULL) < 0)
			atomic_fetch_add(&n_failed, 1);
		atomic_store(&j->c->busy, 0);
		free(j);
	}
	ex_block_private_fini(&priv);
	return NULL;
}

/* Take the whole lines C holds while no worker has its request: one job
 * per line, one at a time.  Returns 0, or -1 when C must be closed. */
static int q_take_lines(struct q_conn *c)
{
	char *line;
	int r;

	while (!atomic_load(&c->busy) && (r = ex_lbuf_line(&c->in, &line,
							    NULL)) != 0) {
		struct q_job *j;

		if (r < 0)
			return -1;
		j = calloc(1, sizeof *j);
		if (!j)
			ex_fatal("out of memory");
		if (ex_parse_req(line, &j->req)) {
			ex_log("bad request line '%.80s': closing", line);
			free(j);
			return -1;
		}
		j->c = c;
		atomic_store(&c->busy, 1);
		q_push(j);
	}
	return 0;
}

static void run_queue(int lfd)
{
	static struct q_conn *conns[TL_MAX_CONNS];
	static struct pollfd pf[TL_MAX_CONNS + 1];
	static int idx[TL_MAX_CONNS + 1];
	pthread_t *th;
	int nconns = 0;

	th = calloc((size_t)opts.workers, sizeof *th);
	if (!th)
		ex_fatal("out of memory");
	ex_block_signals(1);
	for (int i = 0; i < opts.workers; i++)
		if (pthread_create(&th[i], NULL, q_worker, NULL))
			ex_fatal("cannot start a worker thread");
	ex_block_signals(0);

	while (!ex_stop) {
		int n = 0, k;

		pf[n].fd = lfd;
		pf[n].events = POLLIN;
		idx[n++] = -1;
		for (int i = 0; i < nconns; i++) {
			if (atomic_load(&conns[i]->busy))
				continue;
			if (q_take_lines(conns[i]) < 0) {
				close(conns[i]->fd);
				free(conns[i]);
				conns[i--] = conns[--nconns];
				continue;
			}
			if (atomic_load(&conns[i]->busy))
				continue;
			pf[n].fd = conns[i]->fd;
			pf[n].events = POLLIN;
			idx[n++] = i;
		}
		/* a worker that answers sets busy = 0 in memory only: look
		 * again every millisecond */
		k = poll(pf, (nfds_t)n, 1);
		if (k <= 0)
			continue;
		for (int p = n - 1; p >= 0; p--) {
			struct q_conn *c;
			ssize_t r;

			if (!pf[p].revents)
				continue;
			if (idx[p] < 0) {
				int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
				if (fd < 0)
					continue;
				if (nconns == TL_MAX_CONNS) {
					close(fd);
					continue;
				}
				c = calloc(1, sizeof *c);
				if (!c)
					ex_fatal("out of memory");
				c->fd = fd;
				ex_lbuf_reset(&c->in);
				conns[nconns++] = c;
				atomic_fetch_add(&n_conns, 1);
				continue;
			}
			c = conns[idx[p]];
			r = ex_lbuf_read(&c->in, c->fd);
			if (r > 0 && q_take_lines(c) == 0)
				continue;
			if (r == -EINTR || r == -EAGAIN)
				continue;
			if (atomic_load(&c->busy))
				continue;       /* its worker still answers */
			close(c->fd);
			free(c);
			conns[idx[p]] = conns[--nconns];
			/* idx of the moved one is stale: poll again */
			break;
		}
	}
	pthread_cond_broadcast(&q_cv);
	for (int i = 0; i < opts.workers; i++)
		pthread_join(th[i], NULL);
	free(th);
}

/* ---- preempt and coop: user-level threads ------------------------------- */

struct uthread {
	ucontext_t ctx;
	int fd;                     /* its client connection */
	int state;                  /* U_RUN, U_WAIT (fd readable), U_DEAD */
	void *stack;
	struct ex_block_private priv;
	struct ex_block_backends b;
};

enum { U_RUN, U_WAIT, U_DEAD };

static ucontext_t sched_ctx;
static struct uthread *ucur;
static volatile sig_atomic_t upreemptible;

/* SIGALRM: preempt the running user thread if it is computing. */
static void on_tick(int sig)
{
	struct uthread *u = ucur;
	int e = errno;

	(void)sig;
	if (u && upreemptible) {
		upreemptible = 0;
		n_preempt = n_preempt + 1;
		ucur = NULL;
		swapcontext(&u->ctx, &sched_ctx);
	}
	errno = e;
}

static void uyield(void)
{
	struct uthread *u = ucur;

	ucur = NULL;
	swapcontext(&u->ctx, &sched_ctx);
}

static void uthread_main(void)
{
	struct uthread *u = ucur;
	struct ex_lbuf in;

	ex_lbuf_reset(&in);
	while (!ex_stop) {
		struct ex_req req;
		char *line;
		int r = ex_lbuf_line(&in, &line, NULL);

		if (r < 0)
			break;
		if (r == 0) {
			ssize_t k = ex_lbuf_read(&in, u->fd);
			if (k == -EAGAIN || k == -EINTR) {
				u->state = U_WAIT;
				uyield();
				continue;
			}
			if (k <= 0)
				break;
			continue;
		}
		if (ex_parse_req(line, &req)) {
			ex_log("bad request line '%.80s': closing", line);
			break;
		}
		if (do_request(u->fd, &req, &u->b,
			       mode == TL_PREEMPT ? &upreemptible : NULL) < 0) {
			atomic_fetch_add(&n_failed, 1);
			break;
		}
	}
	u->state = U_DEAD;
	ucur = NULL;
}

static struct uthread *uthread_new(int fd)
{
	struct uthread *u = calloc(1, sizeof *u);

	if (!u || !(u->stack = malloc(TL_STACK)))
		ex_fatal("out of memory");
	u->fd = fd;
	u->state = U_RUN;
	ex_block_private_init(&u->priv, &opts.backend, &u->b);
	getcontext(&u->ctx);
	u->ctx.uc_stack.ss_sp = u->stack;
	u->ctx.uc_stack.ss_size = TL_STACK;
	u->ctx.uc_link = &sched_ctx;
	makecontext(&u->ctx, uthread_main, 0);
	return u;
}

static void uthread_free(struct uthread *u)
{
	ex_block_private_fini(&u->priv);
	close(u->fd);
	free(u->stack);
	free(u);
}

static void run_uthreads(int lfd)
{
	static struct uthread *us[TL_MAX_CONNS];
	static struct pollfd pf[TL_MAX_CONNS + 1];
	int nu = 0;

	if (mode == TL_PREEMPT) {
		struct sigaction sa;
		struct itimerval it = {
			.it_interval = { 0, TL_TICK_US },
			.it_value = { 0, TL_TICK_US },
		};

		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_tick;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGALRM, &sa, NULL) < 0 ||
		    setitimer(ITIMER_REAL, &it, NULL) < 0)
			ex_fatal("cannot start the preemption timer: %s",
				 strerror(errno));
	}
	while (!ex_stop) {
		int ran = 0, n = 0;

		for (int i = 0; i < nu; i++) {
			struct uthread *u = us[i];

			if (u->state == U_RUN) {
				ucur = u;
				swapcontext(&sched_ctx, &u->ctx);
				ucur = NULL;
				ran = 1;
			}
			if (u->state == U_DEAD) {
				uthread_free(u);
				us[i--] = us[--nu];
			}
		}
		pf[n].fd = lfd;
		pf[n++].events = POLLIN;
		for (int i = 0; i < nu; i++) {
			pf[n].fd = us[i]->state == U_WAIT ? us[i]->fd : -1;
			pf[n++].events = POLLIN;
		}
		if (poll(pf, (nfds_t)n, ran ? 0 : 100) <= 0)
			continue;
		for (int i = 0; i < nu; i++)
			if (pf[i + 1].revents)
				us[i]->state = U_RUN;
		if (pf[0].revents) {
			int fd = accept4(lfd, NULL, NULL,
					 SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (fd >= 0 && nu < TL_MAX_CONNS) {
				us[nu++] = uthread_new(fd);
				atomic_fetch_add(&n_conns, 1);
			} else if (fd >= 0) {
				close(fd);
			}
		}
	}
	if (mode == TL_PREEMPT) {
		struct itimerval off;
		memset(&off, 0, sizeof off);
		setitimer(ITIMER_REAL, &off, NULL);
	}
	for (int i = 0; i < nu; i++)
		uthread_free(us[i]);
}

/* ---- uring: every socket byte through io_uring --------------------------- */

struct uring {
	int fd;
	unsigned *sq_tail, *sq_mask, *sq_array;
	unsigned *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

static int uring_init(struct uring *u)
{
	struct io_uring_params p;
	void *sq, *cq;
	size_t sqsz, cqsz;

	memset(&p, 0, sizeof p);
	u->fd = (int)syscall(SYS_io_uring_setup, 4, &p);
	if (u->fd < 0)
		return -errno;
	sqsz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	cqsz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	sq = mmap(NULL, sqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		  u->fd, IORING_OFF_SQ_RING);
	cq = mmap(NULL, cqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		  u->fd, IORING_OFF_CQ_RING);
	u->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		       u->fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || u->sqes == MAP_FAILED)
		return -errno;
	u->sq_tail = (unsigned *)((char *)sq + p.sq_off.tail);
	u->sq_mask = (unsigned *)((char *)sq + p.sq_off.ring_mask);
	u->sq_array = (unsigned *)((char *)sq + p.sq_off.array);
	u->cq_head = (unsigned *)((char *)cq + p.cq_off.head);
	u->cq_tail = (unsigned *)((char *)cq + p.cq_off.tail);
	u->cq_mask = (unsigned *)((char *)cq + p.cq_off.ring_mask);
	u->cqes = (struct io_uring_cqe *)((char *)cq + p.cq_off.cqes);
	return 0;
}

/* One IORING_OP_RECV or IORING_OP_SEND of LEN bytes on FD, waited for.
 * Returns its result (bytes, or -errno). */
static int uring_io(struct uring *u, int op, int fd, void *buf, size_t len)
{
	unsigned tail = *u->sq_tail, idx = tail & *u->sq_mask, head;
	struct io_uring_sqe *sqe = &u->sqes[idx];
	int res;

	memset(sqe, 0, sizeof *sqe);
	sqe->opcode = (uint8_t)op;
	sqe->fd = fd;
	sqe->addr = (uint64_t)(uintptr_t)buf;
	sqe->len = (uint32_t)len;
	u->sq_array[idx] = idx;
	__atomic_store_n(u->sq_tail, tail + 1, __ATOMIC_RELEASE);
	for (;;) {
		long r = syscall(SYS_io_uring_enter, u->fd, 1, 1,
				 IORING_ENTER_GETEVENTS, NULL, 0);
		if (r >= 0)
			break;
		if (errno != EINTR || ex_stop)
			return -errno;
	}
	for (;;) {
		head = *u->cq_head;
		if (head != __atomic_load_n(u->cq_tail, __ATOMIC_ACQUIRE))
			break;
		if (syscall(SYS_io_uring_enter, u->fd, 0, 1,
			    IORING_ENTER_GETEVENTS, NULL, 0) < 0 &&
		    errno != EINTR)
			return -errno;
	}
	res = u->cqes[head & *u->cq_mask].res;
	__atomic_store_n(u->cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

static int uring_send_all(struct uring *u, int fd, const char *buf,
			  size_t len)
{
	while (len) {
		int r = uring_io(u, IORING_OP_SEND, fd, (void *)buf, len);
		if (r == -EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? r : -EIO;
		buf += r;
		len -= (size_t)r;
	}
	return 0;
}

/* The next line of FD through LB, received with io_uring.  1 with *LINE,
 * 0 at end of file, -errno. */
static int uring_getline(struct uring *u, int fd, struct ex_lbuf *lb,
			 char **line)
{
	for (;;) {
		int r = ex_lbuf_line(lb, line, NULL);
		if (r)
			return r;
		if (lb->off) {
			memmove(lb->buf, lb->buf + lb->off, lb->len - lb->off);
			lb->len -= lb->off;
			lb->off = 0;
		}
		if (lb->len == sizeof lb->buf)
			return -ENOBUFS;
		r = uring_io(u, IORING_OP_RECV, fd, lb->buf + lb->len,
			     sizeof lb->buf - lb->len);
		if (r == -EINTR)
			continue;
		if (r <= 0)
			return r;
		lb->len += (size_t)r;
	}
}

static void *uring_conn(void *arg)
{
	int fd = (int)(intptr_t)arg, bfd[EX_KINDS] = { -1, -1 };
	struct ex_lbuf in, bin[EX_KINDS];
	struct uring u;
	int r;

	if ((r = uring_init(&u)) < 0) {
		ex_log("io_uring_setup: %s", strerror(-r));
		close(fd);
		return NULL;
	}
	ex_lbuf_reset(&in);
	for (int i = 0; i < EX_KINDS; i++)
		ex_lbuf_reset(&bin[i]);
	while (!ex_stop) {
		char out[EX_LINE_MAX + 2], *line;
		struct ex_req req;
		uint64_t cs = ex_cs_init();

		if (uring_getline(&u, fd, &in, &line) <= 0)
			break;
		if (ex_parse_req(line, &req))
			break;
		for (unsigned k = 0; k < req.n; k++) {
			int kind = (int)(k % 2), n;

			spin(work_us, NULL);
			if (bfd[kind] < 0) {
				bfd[kind] = kind == EX_KIND_TCP
					? ex_connect_tcp(opts.backend.host,
						opts.backend.port, 0,
						opts.backend.timeout_ms)
					: ex_connect_unix(opts.backend.unix_path,
						0, opts.backend.timeout_ms);
				if (bfd[kind] < 0)
					goto fail;
			}
			n = ex_fmt_call(out, sizeof out, req.id, k);
			if (uring_send_all(&u, bfd[kind], out, (size_t)n) < 0 ||
			    uring_getline(&u, bfd[kind], &bin[kind], &line) <= 0)
				goto fail;
			if (!ex_is_ok_for(line, req.id, k))
				goto fail;
			cs = ex_cs_add(cs, line, strlen(line));
		}
		r = ex_fmt_resp(out, sizeof out, req.id, req.n, cs);
		atomic_fetch_add(&n_requests, 1);
		if (uring_send_all(&u, fd, out, (size_t)r) < 0)
			break;
		continue;
fail:
		atomic_fetch_add(&n_failed, 1);
		answer_err(fd, req.id, "backend-failed");
		break;
	}
	for (int i = 0; i < EX_KINDS; i++)
		if (bfd[i] >= 0)
			close(bfd[i]);
	close(u.fd);
	close(fd);
	return NULL;
}

static void run_uring(int lfd)
{
	ex_set_timeouts(lfd, 500);
	while (!ex_stop) {
		pthread_attr_t attr;
		pthread_t th;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0)
			continue;
		atomic_fetch_add(&n_conns, 1);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		ex_block_signals(1);
		if (pthread_create(&th, &attr, uring_conn, (void *)(intptr_t)fd))
			close(fd);
		ex_block_signals(0);
		pthread_attr_destroy(&attr);
	}
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "queue", "preempt", "coop",
					     "uring" };
	int lfd, err, m = -1;

	ex_init(argv[0]);
	for (int i = 0; argc > 1 && i < 4; i++)
		if (!strcmp(argv[1], names[i]))
			m = i;
	if (m >= 0) {
		/* the front options follow MODE */
		argv[1] = argv[0];
		argc--;
		argv++;
	} else if (argc < 2 || strcmp(argv[1], "--help")) {
		fprintf(stderr, "tb-limits: the first argument is the MODE: "
			"queue, preempt, coop or uring (tb-limits --help)\n");
		return 2;
	}
	mode = m < 0 ? TL_QUEUE : (enum tl_mode)m;
	if (getenv("TB_WORK_US"))
		work_us = ex_opt_num("TB_WORK_US", getenv("TB_WORK_US"), 0,
				     1000000);
	ex_front_parse(argc, argv, &opts, "tb-limits MODE",
		       "Front servers of the architectures black-box tracing "
		       "cannot follow\n(MODE queue, preempt, uring) and a "
		       "control that it can (coop); see\nthe head of "
		       "tests/testbeds/tb-limits.c.  Before every backend "
		       "call\nthe front computes TB_WORK_US microseconds "
		       "(default 300).", EX_FRONT_WORKERS, 4, 0);
	if ((err = ex_signals()) < 0)
		ex_fatal("cannot install signal handlers: %s", strerror(-err));
	lfd = ex_listen_tcp(opts.host, opts.port, 512,
			    mode == TL_PREEMPT || mode == TL_COOP);
	if (lfd < 0)
		ex_fatal("cannot listen on %s:%d: %s", opts.host, opts.port,
			 strerror(-lfd));
	if (opts.pidfile && (err = ex_pidfile(opts.pidfile)) < 0)
		ex_fatal("cannot write pidfile %s: %s", opts.pidfile,
			 strerror(-err));
	switch (mode) {
	case TL_QUEUE:
		run_queue(lfd);
		break;
	case TL_PREEMPT:
	case TL_COOP:
		run_uthreads(lfd);
		break;
	case TL_URING:
		run_uring(lfd);
		break;
	}
	close(lfd);
	ex_front_stats("mode=%s conns=%ld requests=%ld failed=%ld "
		       "handoffs=%ld preemptions=%ld", names[mode],
		       atomic_load(&n_conns), atomic_load(&n_requests),
		       atomic_load(&n_failed), atomic_load(&n_handoffs),
		       (long)n_preempt);
	if (opts.pidfile)
		unlink(opts.pidfile);
	return 0;
}
