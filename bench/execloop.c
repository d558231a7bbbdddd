/*
 * execloop.c - bp-execloop: the per-exec micro-benchmark of benchmark 3.
 * Forks and execs PROG N times, one at a time, as apache's mod_cgi does
 * (the child's stdout a pipe the parent reads to its end), and prints the
 * wall-clock and CPU time (of the whole process tree) per run:
 *
 *   bp-execloop [-s] N PROG [ARG...]
 *   -> "runs N wall_us_per_run X cpu_us_per_run Y"
 *
 * -s: hold a listening TCP socket on 127.0.0.1 (made through libc, as a
 * server does) while forking, as apache's worker does.
 *
 * Run it traced (LD_PRELOAD of the shim) to trace both images of each
 * request, as in apache: the forked child and the program it execs.
 */
#include "config.h"

#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double tv_us(struct timeval tv)
{
	return tv.tv_sec * 1e6 + tv.tv_usec;
}

/* One fork, exec and wait; the child's output read to its end. */
static int run_once(char **argv)
{
	int p[2], st;
	char buf[512];
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	while (read(p[0], buf, sizeof buf) > 0)
		;
	close(p[0]);
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	return 0;
}

/* A listening socket on an ephemeral loopback port, kept open. */
static int listen_loopback(void)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    listen(fd, 8) < 0)
		return -1;
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	return fd;
}

int main(int argc, char **argv)
{
	struct rusage self, kids;
	long n;
	double t0, t1;

	if (argc > 1 && !strcmp(argv[1], "-s")) {
		if (listen_loopback() < 0) {
			perror("bp-execloop: listen");
			return 1;
		}
		argv++;
		argc--;
	}
	if (argc < 3 || (n = atol(argv[1])) <= 0 || n > 1000000) {
		fprintf(stderr, "usage: bp-execloop [-s] N PROG [ARG...] (N <= 1000000)\n");
		return 2;
	}
	t0 = now_us();
	for (long i = 0; i < n; i++)
		if (run_once(argv + 2) < 0) {
			fprintf(stderr, "bp-execloop: run %ld failed\n", i);
			return 1;
		}
	t1 = now_us();
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	printf("runs %ld wall_us_per_run %.1f cpu_us_per_run %.1f\n", n,
	       (t1 - t0) / n,
	       (tv_us(self.ru_utime) + tv_us(self.ru_stime) +
		tv_us(kids.ru_utime) + tv_us(kids.ru_stime)) / n);
	return 0;
}
