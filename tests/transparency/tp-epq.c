/*
 * tp-epq - epoll batches handed over one event per call (the shim's
 * readiness queue, docs/libbtrace.md "The readiness queue").
 *
 * BATCH (level-triggered, EPOLLET, EPOLLONESHOT): 24 pipes ready at once,
 * read with maxevents 16 as a real event loop does; handling one event
 * deletes, modifies, or closes and reuses (same descriptor number) a pipe
 * whose event is in the same batch.  An event of a descriptor the program
 * deleted or closed before the call began must never come; nothing may
 * be lost; what each pipe delivered is compared with the untraced run.
 * THREADS: four threads on one set, EPOLLONESHOT, a feeder writing 6400
 * bytes over 32 socket pairs while the workers delete and re-add each
 * other's descriptors: every byte read, no descriptor handled by two
 * threads at once, no event of a deleted registration from a later call.
 * EXCLUSIVE: three threads with a set each and one listening socket
 * added with EPOLLEXCLUSIVE: every connection accepted.
 * RANDOM (level-triggered, EPOLLET, EPOLLONESHOT): random writes and,
 * while a batch is handled, random DEL, MOD, close and reuse, and writes:
 * the events handled, in order, equal the untraced run's.
 * FORK: a child of a process that took an edge-triggered batch must not
 * see the parent's events (the kernel gave them to the parent).
 * PEEK: a thread alone peeks (timeout 0) at edge-triggered pipes while a
 * second thread comes and waits on the same set: every byte read.
 *
 * tp-isolated: ^~ BATCH LT: ([0-9]+) calls for \1 events
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tp.h"

#define NP 24

static uint64_t mkdata(uint32_t gen, uint32_t i)
{
	return ((uint64_t)gen << 32) | i;
}

static void reg(int ep, int op, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events };

	ev.data.u64 = data;
	if (epoll_ctl(ep, op, fd, &ev) < 0)
		tp_check(0, "epoll_ctl %d fd %d: %s", op, fd, tp_errname(errno));
}

/* Read all FD has (non-blocking) onto BUF. */
static void drain(int fd, char *buf, size_t *len, size_t cap)
{
	for (;;) {
		ssize_t n = read(fd, buf + *len, cap - *len);
		if (n > 0) {
			*len += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return;
	}
}

static void batch(const char *name, uint32_t mode)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), p[NP][2], alive[NP], acted[NP];
	uint32_t gen[NP];
	long retired[NP];     /* the call number before which it left */
	char got[NP][16];
	size_t len[NP];
	int calls = 0, events = 0, stale = 0, later = 0, want, reused = 0;

	for (int i = 0; i < NP; i++) {
		char m[8];
		if (pipe2(p[i], O_NONBLOCK | O_CLOEXEC) < 0) {
			tp_skip("BATCH %s: no pipes", name);
			return;
		}
		gen[i] = 1;
		alive[i] = 1;
		acted[i] = 0;
		retired[i] = -1;
		len[i] = 0;
		reg(ep, EPOLL_CTL_ADD, p[i][0], EPOLLIN | mode, mkdata(1, (uint32_t)i));
		snprintf(m, sizeof m, "m%d", i);
		tp_write_all(p[i][1], m, strlen(m));
	}
	for (;;) {
		struct epoll_event out[16];
		int n, done = 1;
		long call;

		for (int i = 0; i < NP; i++)
			if (alive[i] && len[i] == 0)
				done = 0;
		if (done || calls > 200)
			break;
		call = ++calls;
		n = epoll_wait(ep, out, 16, 1000);
		if (n <= 0) {
			tp_check(0, "BATCH %s: lost: epoll_wait %s with input unread",
				 name, tp_res(n, errno));
			break;
		}
		for (int k = 0; k < n; k++) {
			uint32_t i = (uint32_t)out[k].data.u64;
			uint32_t g = (uint32_t)(out[k].data.u64 >> 32);
			events++;
			if (i >= NP || g != gen[i] || !alive[i]) {
				/* a registration that left: only an event of
				 * this same batch may still name it */
				if (i < NP && retired[i] >= 0 && call >= retired[i] &&
				    (g < gen[i] || !alive[i]))
					later++;
				stale++;
				continue;
			}
			drain(p[i][0], got[i], &len[i], sizeof got[i]);
			if (mode & EPOLLONESHOT)
				reg(ep, EPOLL_CTL_MOD, p[i][0], EPOLLIN | mode,
				    mkdata(gen[i], i));
			if (acted[i]++ || i + 3 >= NP)
				continue;
			switch (i % 6) {
			case 0:         /* delete the next one */
				reg(ep, EPOLL_CTL_DEL, p[i + 1][0], 0, 0);
				alive[i + 1] = 0;
				retired[i + 1] = call + 1;
				break;
			case 1:         /* modify the one after next */
				gen[i + 2]++;
				retired[i + 2] = call + 1;
				reg(ep, EPOLL_CTL_MOD, p[i + 2][0], EPOLLIN | mode,
				    mkdata(gen[i + 2], i + 2));
				break;
			case 2: {       /* close one, reuse its number */
				int old = p[i + 3][0], np[2];
				close(old);
				close(p[i + 3][1]);
				retired[i + 3] = call + 1;
				if (pipe2(np, O_NONBLOCK | O_CLOEXEC) < 0)
					break;
				reused += np[0] == old;
				p[i + 3][0] = np[0];
				p[i + 3][1] = np[1];
				gen[i + 3]++;
				reg(ep, EPOLL_CTL_ADD, np[0], EPOLLIN | mode,
				    mkdata(gen[i + 3], i + 3));
				tp_write_all(np[1], "r", 1);
				break;
			}
			}
		}
	}
	for (int i = 0; i < NP; i++)
		tp_say("BATCH %s: pipe %d delivered %s%s", name, i,
		       tp_quote(got[i], len[i]), alive[i] ? "" : " (deleted)");
	tp_check(later == 0, "BATCH %s: no event of a deleted or closed registration from a later call (%d)",
		 name, later);
	tp_vary("BATCH %s: %d calls for %d events", name, calls, events);
	tp_vary("BATCH %s: %d stale events, %d numbers reused", name, stale, reused);
	{
		struct epoll_event out[16];
		int n = epoll_wait(ep, out, 16, 100);
		want = 0;
		tp_check(n == want, "BATCH %s: nothing more to report (%s)", name,
			 tp_res(n, errno));
	}
	for (int i = 0; i < NP; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
	close(ep);
}

/* ---- a random differential ------------------------------------------------ */

/*
 * RANDOM: 32 pipes, 40 rounds of random writes, each round's events read
 * 16 at a time until none is ready; handling one event, by a fixed
 * pseudo-random sequence, deletes, modifies, closes and reuses, or
 * writes to another pipe.  Events of a registration that changed are
 * skipped (as stale) without drawing.  Untraced the kernel's batches are
 * handled whole; traced they come one per call from the queue, with the
 * changed registrations' events dropped: the events handled, in order,
 * must be the same (every line is compared).
 */
#define NR 32

static uint32_t rnd_state;

static uint32_t rnd(uint32_t n)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return (rnd_state >> 16) % n;
}

static void random_diff(const char *name, uint32_t mode)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), p[NR][2], alive[NR];
	uint32_t gen[NR];
	int handled = 0, calls = 0;

	rnd_state = 12345;
	for (int i = 0; i < NR; i++) {
		if (pipe2(p[i], O_NONBLOCK | O_CLOEXEC) < 0) {
			tp_skip("RANDOM %s: no pipes", name);
			return;
		}
		gen[i] = 1;
		alive[i] = 1;
		reg(ep, EPOLL_CTL_ADD, p[i][0], EPOLLIN | mode, mkdata(1, (uint32_t)i));
	}
	for (int round = 0; round < 40; round++) {
		for (int i = 0; i < NR; i++) {
			if (!alive[i]) {        /* deleted last round: back */
				alive[i] = 1;
				gen[i]++;
				reg(ep, EPOLL_CTL_ADD, p[i][0], EPOLLIN | mode,
				    mkdata(gen[i], (uint32_t)i));
			}
			if (rnd(3) == 0)
				tp_write_all(p[i][1], "w", 1);
		}
		for (int guard = 0; guard < 1000; guard++) {
			struct epoll_event out[16];
			int n = epoll_wait(ep, out, 16, 0);
			calls++;
			if (n <= 0)
				break;
			for (int k = 0; k < n; k++) {
				uint32_t i = (uint32_t)out[k].data.u64;
				uint32_t g = (uint32_t)(out[k].data.u64 >> 32);
				char buf[64];
				size_t len = 0;
				uint32_t j;

				if (i >= NR || g != gen[i] || !alive[i])
					continue;       /* stale */
				drain(p[i][0], buf, &len, sizeof buf);
				handled++;
				if (mode & EPOLLONESHOT)
					reg(ep, EPOLL_CTL_MOD, p[i][0], EPOLLIN | mode,
					    mkdata(gen[i], i));
				j = rnd(NR);
				switch (rnd(8)) {
				case 0:
					if (alive[j]) {
						reg(ep, EPOLL_CTL_DEL, p[j][0], 0, 0);
						alive[j] = 0;
					}
					tp_say("RANDOM %s %d: pipe %u %zu bytes, del %u",
					       name, round, i, len, j);
					break;
				case 1:
					if (alive[j]) {
						gen[j]++;
						reg(ep, EPOLL_CTL_MOD, p[j][0], EPOLLIN | mode,
						    mkdata(gen[j], j));
					}
					tp_say("RANDOM %s %d: pipe %u %zu bytes, mod %u",
					       name, round, i, len, j);
					break;
				case 2:
					if (alive[j] && j != i) {
						int np[2];
						close(p[j][0]);
						close(p[j][1]);
						if (pipe2(np, O_NONBLOCK | O_CLOEXEC) < 0)
							break;
						p[j][0] = np[0];
						p[j][1] = np[1];
						gen[j]++;
						reg(ep, EPOLL_CTL_ADD, np[0], EPOLLIN | mode,
						    mkdata(gen[j], j));
					}
					tp_say("RANDOM %s %d: pipe %u %zu bytes, reopen %u",
					       name, round, i, len, j);
					break;
				case 3:
					tp_write_all(p[j][1], "x", 1);
					tp_say("RANDOM %s %d: pipe %u %zu bytes, write %u",
					       name, round, i, len, j);
					break;
				default:
					tp_say("RANDOM %s %d: pipe %u %zu bytes",
					       name, round, i, len);
				}
			}
		}
	}
	tp_say("RANDOM %s: %d events handled", name, handled);
	tp_vary("RANDOM %s: %d calls", name, calls);
	for (int i = 0; i < NR; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
	close(ep);
}

/* ---- several threads on one set ----------------------------------------- */

#define NC 32
#define ROUNDS 200
#define NW 4

static int th_ep, th_fd[NC][2], th_busy[NC];
static uint32_t th_gen[NC];
static long th_retired_seq[NC];     /* th_seq when its last DEL returned */
static long th_seq;
static long th_read, th_later, th_twice, th_stale, th_calls, th_events;
static int th_stop;
static pthread_mutex_t th_mu[NC];

static void *th_worker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&th_stop, __ATOMIC_ACQUIRE)) {
		struct epoll_event out[8];
		long s0 = __atomic_load_n(&th_seq, __ATOMIC_SEQ_CST);
		int n = epoll_wait(th_ep, out, 8, 50);
		__atomic_add_fetch(&th_calls, 1, __ATOMIC_RELAXED);
		for (int k = 0; k < n; k++) {
			uint32_t i = (uint32_t)out[k].data.u64;
			uint32_t g = (uint32_t)(out[k].data.u64 >> 32);
			char buf[256];
			ssize_t r;

			__atomic_add_fetch(&th_events, 1, __ATOMIC_RELAXED);
			pthread_mutex_lock(&th_mu[i]);
			if (g != th_gen[i]) {
				if (th_retired_seq[i] >= 0 && th_retired_seq[i] <= s0)
					__atomic_add_fetch(&th_later, 1, __ATOMIC_RELAXED);
				__atomic_add_fetch(&th_stale, 1, __ATOMIC_RELAXED);
				pthread_mutex_unlock(&th_mu[i]);
				continue;
			}
			if (th_busy[i])
				__atomic_add_fetch(&th_twice, 1, __ATOMIC_RELAXED);
			th_busy[i] = 1;
			pthread_mutex_unlock(&th_mu[i]);
			while ((r = read(th_fd[i][1], buf, sizeof buf)) > 0)
				__atomic_add_fetch(&th_read, r, __ATOMIC_RELAXED);
			pthread_mutex_lock(&th_mu[i]);
			th_busy[i] = 0;
			if (g == th_gen[i])
				reg(th_ep, EPOLL_CTL_MOD, th_fd[i][1],
				    EPOLLIN | EPOLLONESHOT, mkdata(g, i));
			pthread_mutex_unlock(&th_mu[i]);
			/* churn: delete and re-add another one (not while a
			 * thread handles it: EPOLLONESHOT's promise is per
			 * registration) */
			uint32_t j = (i + 7) % NC;
			if (pthread_mutex_trylock(&th_mu[j]) == 0) {
				if (!th_busy[j]) {
					reg(th_ep, EPOLL_CTL_DEL, th_fd[j][1], 0, 0);
					th_retired_seq[j] = __atomic_add_fetch(
						&th_seq, 1, __ATOMIC_SEQ_CST);
					th_gen[j]++;
					reg(th_ep, EPOLL_CTL_ADD, th_fd[j][1],
					    EPOLLIN | EPOLLONESHOT,
					    mkdata(th_gen[j], j));
				}
				pthread_mutex_unlock(&th_mu[j]);
			}
		}
	}
	return NULL;
}

static void threads(void)
{
	pthread_t t[NW];
	struct timespec t0, now;
	long want = (long)NC * ROUNDS;

	th_ep = epoll_create1(EPOLL_CLOEXEC);
	for (int i = 0; i < NC; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, th_fd[i]) < 0) {
			tp_skip("THREADS: no socket pairs");
			return;
		}
		tp_nonblock(th_fd[i][1], 1);
		pthread_mutex_init(&th_mu[i], NULL);
		th_gen[i] = 1;
		th_retired_seq[i] = -1;
		reg(th_ep, EPOLL_CTL_ADD, th_fd[i][1], EPOLLIN | EPOLLONESHOT,
		    mkdata(1, (uint32_t)i));
	}
	for (int w = 0; w < NW; w++)
		pthread_create(&t[w], NULL, th_worker, NULL);
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < NC; i++)
			tp_write_all(th_fd[i][0], "x", 1);
		if (r % 20 == 0)
			tp_msleep(1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (__atomic_load_n(&th_read, __ATOMIC_ACQUIRE) >= want ||
		    now.tv_sec - t0.tv_sec > 15)
			break;
		tp_msleep(10);
	}
	__atomic_store_n(&th_stop, 1, __ATOMIC_RELEASE);
	for (int w = 0; w < NW; w++)
		pthread_join(t[w], NULL);
	tp_say("THREADS: %ld bytes read of %ld", th_read, want);
	tp_check(th_read == want, "THREADS: every byte read");
	tp_check(th_twice == 0, "THREADS: no descriptor handled by two threads at once (%ld)",
		 th_twice);
	tp_check(th_later == 0, "THREADS: no event of a deleted registration from a later call (%ld)",
		 th_later);
	tp_vary("THREADS: %ld calls, %ld events, %ld stale", th_calls,
		th_events, th_stale);
	for (int i = 0; i < NC; i++) {
		close(th_fd[i][0]);
		close(th_fd[i][1]);
	}
	close(th_ep);
}

/* ---- EPOLLEXCLUSIVE ------------------------------------------------------ */

#define NX 3
#define NCONN 60

static int ex_lfd, ex_pipe[NX][2];
static long ex_acc, ex_ticks;
static int ex_stop;

static void *ex_worker(void *arg)
{
	int w = (int)(intptr_t)arg, ep = epoll_create1(EPOLL_CLOEXEC);

	reg(ep, EPOLL_CTL_ADD, ex_lfd, EPOLLIN | EPOLLEXCLUSIVE, 1000);
	reg(ep, EPOLL_CTL_ADD, ex_pipe[w][0], EPOLLIN, 2000);
	while (!__atomic_load_n(&ex_stop, __ATOMIC_ACQUIRE)) {
		struct epoll_event out[8];
		int n = epoll_wait(ep, out, 8, 50);
		for (int k = 0; k < n; k++) {
			if (out[k].data.u64 == 1000) {
				int c;
				while ((c = accept4(ex_lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
					__atomic_add_fetch(&ex_acc, 1, __ATOMIC_RELAXED);
					close(c);
				}
			} else {
				char b[64];
				while (read(ex_pipe[w][0], b, sizeof b) > 0)
					__atomic_add_fetch(&ex_ticks, 1, __ATOMIC_RELAXED);
			}
		}
	}
	close(ep);
	return NULL;
}

static void exclusive(void)
{
	pthread_t t[NX];
	int port, c[NCONN];

	ex_lfd = tp_tcp_listen(&port);
	if (ex_lfd < 0) {
		tp_skip("EXCLUSIVE: no loopback listener");
		return;
	}
	tp_nonblock(ex_lfd, 1);
	for (int w = 0; w < NX; w++)
		if (pipe2(ex_pipe[w], O_NONBLOCK | O_CLOEXEC) < 0)
			return;
	for (int w = 0; w < NX; w++)
		pthread_create(&t[w], NULL, ex_worker, (void *)(intptr_t)w);
	for (int i = 0; i < NCONN; i++) {
		c[i] = tp_tcp_connect(port);
		tp_write_all(ex_pipe[i % NX][1], "t", 1);
	}
	for (int k = 0; k < 1500 &&
	     __atomic_load_n(&ex_acc, __ATOMIC_ACQUIRE) < NCONN; k++)
		tp_msleep(10);
	__atomic_store_n(&ex_stop, 1, __ATOMIC_RELEASE);
	for (int w = 0; w < NX; w++)
		pthread_join(t[w], NULL);
	tp_say("EXCLUSIVE: %ld of %d connections accepted", ex_acc, NCONN);
	tp_check(ex_acc == NCONN, "EXCLUSIVE: every connection accepted");
	tp_vary("EXCLUSIVE: %ld pipe reads", ex_ticks);
	for (int i = 0; i < NCONN; i++)
		if (c[i] >= 0)
			close(c[i]);
	for (int w = 0; w < NX; w++) {
		close(ex_pipe[w][0]);
		close(ex_pipe[w][1]);
	}
	close(ex_lfd);
}

/* ---- fork ---------------------------------------------------------------- */

static void forked(void)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), p[4][2], seen = 0, st = 0;
	struct epoll_event out[8];
	pid_t pid;

	for (int i = 0; i < 4; i++) {
		if (pipe2(p[i], O_NONBLOCK | O_CLOEXEC) < 0)
			return;
		reg(ep, EPOLL_CTL_ADD, p[i][0], EPOLLIN | EPOLLET, (uint64_t)i);
		tp_write_all(p[i][1], "f", 1);
	}
	int n = epoll_wait(ep, out, 8, 1000);
	tp_check(n >= 1, "FORK: the parent's first call reports");
	tp_vary("FORK: the parent's first call: %s", tp_res(n, errno));
	seen = n > 0 ? n : 0;
	pid = fork();
	if (pid == 0) {
		int c = epoll_wait(ep, out, 8, 200);
		_exit(c == 0 ? 0 : 10 + (c < 0 ? 9 : c));
	}
	waitpid(pid, &st, 0);
	tp_check(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		 "FORK: the child sees none of the parent's edges (status %d)",
		 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	while (seen < 4) {
		n = epoll_wait(ep, out, 8, 500);
		if (n <= 0)
			break;
		seen += n;
	}
	tp_say("FORK: the parent saw %d edges of 4", seen);
	for (int i = 0; i < 4; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
	close(ep);
}

/* ---- a peek's batch while a second thread comes ------------------------ */

/*
 * A thread that alone uses the shim takes a peek's batch (timeout 0) with
 * plain stores (solo mode, docs/libbtrace.md "Safety"); a second thread's
 * first call must end that before it takes a batch of its own, or both
 * fill the queue at once.  Each round, in a fresh child (solo mode starts
 * again after fork): NPK pipes, edge-triggered, written in waves by the
 * first thread, which peeks with maxevents 64 (more pipes than the
 * queue holds: two takers would overfill it) and drains what it is
 * given; a second thread, started at a point that moves from round to
 * round, waits with a timeout on the same set and drains too.  Every
 * byte must be read within the time (an edge lost hangs the round) and
 * none twice.
 */
#define NPK 96
#define PK_WAVES 60
#define PK_ROUNDS 40
static int pk_ep, pk_p[NPK][2], pk_stop;
static long pk_read;
static pthread_mutex_t pk_mu = PTHREAD_MUTEX_INITIALIZER;

static void pk_drain(int fd)
{
	char b[256];
	ssize_t n;

	while ((n = read(fd, b, sizeof b)) > 0) {
		pthread_mutex_lock(&pk_mu);
		pk_read += n;
		pthread_mutex_unlock(&pk_mu);
	}
}

static void *pk_second(void *arg)
{
	struct epoll_event ev[64];

	(void)arg;
	while (!__atomic_load_n(&pk_stop, __ATOMIC_ACQUIRE)) {
		int n = epoll_wait(pk_ep, ev, 64, 20);
		for (int i = 0; i < n; i++)
			pk_drain(pk_p[ev[i].data.u32][0]);
	}
	return NULL;
}

static int pk_round(unsigned start_at)
{
	struct epoll_event ev[64];
	struct timespec t0, t;
	pthread_t th;
	int started = 0;
	long want = 0, got;

	pk_ep = epoll_create1(EPOLL_CLOEXEC);
	for (uint32_t i = 0; i < NPK; i++) {
		if (pipe2(pk_p[i], O_NONBLOCK | O_CLOEXEC) < 0)
			return 10;
		struct epoll_event e = { .events = EPOLLIN | EPOLLET,
					 .data.u32 = i };
		if (epoll_ctl(pk_ep, EPOLL_CTL_ADD, pk_p[i][0], &e) < 0)
			return 11;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned w = 0; w < PK_WAVES; w++) {
		for (int i = 0; i < NPK; i++)
			if (tp_write_all(pk_p[i][1], "0123456789", 1 + (w + i) % 10) == 0)
				want += 1 + (w + i) % 10;
		for (int k = 0; k < 4; k++) {
			if (!started && w * 4 + k == start_at) {
				if (pthread_create(&th, NULL, pk_second, NULL))
					return 12;
				started = 1;
			}
			int n = epoll_wait(pk_ep, ev, 64, 0);
			for (int i = 0; i < n; i++)
				pk_drain(pk_p[ev[i].data.u32][0]);
		}
	}
	for (;;) {
		pthread_mutex_lock(&pk_mu);
		got = pk_read;
		pthread_mutex_unlock(&pk_mu);
		if (got >= want)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			break;
		int n = epoll_wait(pk_ep, ev, 64, 0);
		for (int i = 0; i < n; i++)
			pk_drain(pk_p[ev[i].data.u32][0]);
	}
	__atomic_store_n(&pk_stop, 1, __ATOMIC_RELEASE);
	if (started)
		pthread_join(th, NULL);
	return got == want ? 0 : 13;
}

static void peeked(void)
{
	int bad = 0, first = 0;

	for (unsigned r = 0; r < PK_ROUNDS; r++) {
		pid_t c = fork();
		int st = 0;
		if (c == 0)
			_exit(pk_round(r * 37 % (PK_WAVES * 4)));
		if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			if (!bad++)
				first = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		}
	}
	tp_check(bad == 0, "PEEK: %d rounds, every byte read (%d failed, "
		 "the first with status %d)", PK_ROUNDS, bad, first);
}

int main(void)
{
	tp_init("epq", 60);
	batch("LT", 0);
	batch("ET", EPOLLET);
	batch("ONESHOT", EPOLLONESHOT);
	random_diff("LT", 0);
	random_diff("ET", EPOLLET);
	random_diff("ONESHOT", EPOLLONESHOT);
	threads();
	exclusive();
	forked();
	peeked();
	return tp_done();
}
