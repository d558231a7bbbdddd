/*
 * epchurn.c - bp-epchurn: the cost of a connection's end and start when
 * a process holds many (BENCHMARKS.md, phase 36).
 *
 *   bp-epchurn CONNECTIONS ROUNDS
 *
 * Registers CONNECTIONS unix socket pairs in one epoll set (as a server
 * holding that many keep-alive connections), then ROUNDS times closes
 * one pair and registers a new one in its place (the churn of connections
 * ending and starting), and prints the wall time of the rounds, in
 * microseconds per round.  Run it bare and under LD_PRELOAD=libbtrace.so
 * (with a bp-logd) with a small and a large CONNECTIONS: what the shim
 * adds per round should not grow with CONNECTIONS.  Both counts are
 * bounded (1 to 30,000 connections, 1 to 10,000,000 rounds).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long n = argc == 3 ? strtol(argv[1], NULL, 10) : 0;
	long rounds = argc == 3 ? strtol(argv[2], NULL, 10) : 0;
	struct rlimit rl;
	struct epoll_event ev = { .events = EPOLLIN };
	int (*sv)[2], ep;
	double t0;

	if (n < 1 || n > 30000 || rounds < 1 || rounds > 10000000) {
		fprintf(stderr, "usage: bp-epchurn CONNECTIONS(1-30000) ROUNDS(1-10000000)\n");
		return 2;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur < (rlim_t)(2 * n + 64)) {
		struct rlimit want = { (rlim_t)(2 * n + 64), (rlim_t)(2 * n + 64) };
		if (rl.rlim_max >= want.rlim_max)
			want.rlim_max = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &want) < 0) {  /* not root */
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	sv = calloc((size_t)n, sizeof *sv);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!sv || ep < 0) {
		perror("bp-epchurn");
		return 1;
	}
	for (long i = 0; i < n; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]) < 0) {
			perror("bp-epchurn: socketpair (raise the descriptor limit)");
			return 1;
		}
		ev.data.u64 = (uint64_t)i;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, sv[i][0], &ev) < 0) {
			perror("bp-epchurn: epoll_ctl");
			return 1;
		}
	}
	t0 = now_s();
	for (long r = 0; r < rounds; r++) {
		long i = r % n;
		close(sv[i][0]);
		close(sv[i][1]);
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]) < 0) {
			perror("bp-epchurn: socketpair");
			return 1;
		}
		ev.data.u64 = (uint64_t)n * (uint64_t)(r + 1) + (uint64_t)i;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, sv[i][0], &ev) < 0) {
			perror("bp-epchurn: epoll_ctl");
			return 1;
		}
	}
	printf("%ld connections: %.2f us per round (%ld rounds)\n", n,
	       (now_s() - t0) * 1e6 / (double)rounds, rounds);
	return 0;
}
