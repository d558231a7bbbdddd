/*
 * pause-cost.c - what a wrapped read and write cost: the tight loop of
 * docs/security.md ("Pausing: what it costs").
 *
 *   pause-cost [-n CALLS] [-r ROUNDS] [-w]
 *
 * On a unix stream socketpair, ROUNDS times: CALLS writes of one byte
 * ("\n", one message of the line processor each) on one end, timed, then
 * CALLS reads of one byte on the other, timed.  Prints
 *
 *   write <median ns per call> <min ns per call>
 *   read  <median ns per call> <min ns per call>
 *
 * -w: after the socketpair has carried one message each way, print
 * "ready" and wait for a line on stdin before the loop (the channel is
 * traced first, then the caller pauses tracing).
 *
 * Run it bare, under a floor shim (every wrapped symbol forwarding to
 * libc), under libbtrace.so with a bp-logd, and under libbtrace.so with
 * the bp-logd paused (tests/security/pause-cost.sh does all four).  Under
 * valgrind --tool=callgrind, two runs with different -r give
 * instructions per call.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* what the socket buffer holds: each one-byte write is a buffer of its
 * own, accounted at its full size (about 1 KiB), so a few hundred fit */
#define MAX_CALLS 256

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void die(const char *what)
{
	fprintf(stderr, "pause-cost: %s: %s\n", what, strerror(errno));
	exit(1);
}

int main(int argc, char **argv)
{
	long calls = 256, rounds = 401;
	double *w, *r;
	int sv[2], c, wait = 0;
	char b, line[16];

	while ((c = getopt(argc, argv, "n:r:wh")) != -1) {
		switch (c) {
		case 'n': calls = strtol(optarg, NULL, 10); break;
		case 'r': rounds = strtol(optarg, NULL, 10); break;
		case 'w': wait = 1; break;
		default:
			fprintf(stderr, "usage: pause-cost [-n CALLS (1..%d)] [-r ROUNDS (1..10000)] [-w]\n",
				MAX_CALLS);
			return c == 'h' ? 0 : 2;
		}
	}
	if (calls < 1 || calls > MAX_CALLS || rounds < 1 || rounds > 10000) {
		fprintf(stderr, "pause-cost: -n 1..%d, -r 1..10000\n", MAX_CALLS);
		return 2;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		die("socketpair");
	{
		int sz = 1 << 20;
		setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
		setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
	}
	w = calloc((size_t)rounds, sizeof *w);
	r = calloc((size_t)rounds, sizeof *r);
	if (!w || !r)
		die("calloc");
	if (write(sv[1], "\n", 1) != 1 || read(sv[0], &b, 1) != 1)
		die("first message");
	if (wait) {
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof line, stdin))
			die("stdin");
	}
	for (long k = 0; k < rounds; k++) {
		uint64_t t0 = now_ns();
		for (long i = 0; i < calls; i++)
			if (write(sv[1], "\n", 1) != 1)
				die("write");
		uint64_t t1 = now_ns();
		for (long i = 0; i < calls; i++)
			if (read(sv[0], &b, 1) != 1)
				die("read");
		uint64_t t2 = now_ns();
		w[k] = (double)(t1 - t0) / (double)calls;
		r[k] = (double)(t2 - t1) / (double)calls;
	}
	qsort(w, (size_t)rounds, sizeof *w, cmp);
	qsort(r, (size_t)rounds, sizeof *r, cmp);
	printf("write %.1f %.1f\n", w[rounds / 2], w[0]);
	printf("read %.1f %.1f\n", r[rounds / 2], r[0]);
	return 0;
}
