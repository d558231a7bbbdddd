/*
 * echo.c - bp-echo: a 1-byte echo server and its load client
 * (benchmark 2).
 *
 *   bp-echo serve --port PORT [--pidfile FILE]
 *   bp-echo load  --port PORT [--conns N] [--seconds S]
 *
 * serve: one thread, level-triggered epoll, non-blocking sockets; on a
 * readable connection it reads once (up to 4096 bytes) and writes back
 * what it read.  SIGTERM stops it (status 0).
 *
 * load: N connections (default 50), each in a busy loop: write one byte
 * ("\n", so the line processor sees one request per byte), wait for the
 * byte to come back, write again.  One thread drives them all with epoll.
 * After S seconds (default 5) it prints
 *
 *   requests=R seconds=T rps=X p50_us=A p99_us=B
 *
 * and exits 0; a connection error or a wrong byte exits 1.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 1024
#define LAT_BUCKETS 262144            /* 1 us buckets; last = overflow */

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void die(const char *what)
{
	fprintf(stderr, "bp-echo: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int serve(int port, const char *pidfile)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct epoll_event ev, evs[64];
	struct sigaction act;
	int one = 1, lfd, ep;
	char buf[4096];

	memset(&act, 0, sizeof act);
	act.sa_handler = on_term;
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	signal(SIGPIPE, SIG_IGN);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (lfd < 0)
		die("socket");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("bind");
	if (listen(lfd, 512) < 0)
		die("listen");
	ep = epoll_create1(0);
	if (ep < 0)
		die("epoll_create1");
	ev.events = EPOLLIN;
	ev.data.fd = lfd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0)
		die("epoll_ctl");
	if (pidfile) {
		FILE *f = fopen(pidfile, "w");
		if (!f)
			die(pidfile);
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
	while (!stop) {
		int n = epoll_wait(ep, evs, 64, 500);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait");
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == lfd) {
				int c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
				if (c < 0)
					continue;
				setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one,
					   sizeof one);
				ev.events = EPOLLIN;
				ev.data.fd = c;
				if (epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev) < 0)
					close(c);
				continue;
			}
			ssize_t r = read(fd, buf, sizeof buf);
			if (r > 0) {
				if (write(fd, buf, (size_t)r) != r) {
					epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
					close(fd);
				}
			} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
				close(fd);
			}
		}
	}
	close(ep);
	close(lfd);
	return 0;
}

static int load(int port, int conns, double seconds)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static uint64_t sent_at[MAX_CONNS];
	static uint64_t lat[LAT_BUCKETS];
	struct epoll_event ev, evs[MAX_CONNS];
	uint64_t t0, end, done = 0, t;
	int one = 1, ep;

	signal(SIGPIPE, SIG_IGN);
	ep = epoll_create1(0);
	if (ep < 0)
		die("epoll_create1");
	for (int i = 0; i < conns; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket");
		if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
			die("connect");
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		ev.events = EPOLLIN;
		ev.data.u64 = (uint64_t)fd << 32 | (uint32_t)i;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
			die("epoll_ctl");
		sent_at[i] = now_ns();
		if (write(fd, "\n", 1) != 1)
			die("write");
	}
	t0 = now_ns();
	end = t0 + (uint64_t)(seconds * 1e9);
	while ((t = now_ns()) < end) {
		int n = epoll_wait(ep, evs, MAX_CONNS, 1000);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait");
		}
		if (n == 0) {
			fprintf(stderr, "bp-echo: no reply for 1 s\n");
			return 1;
		}
		t = now_ns();
		for (int i = 0; i < n; i++) {
			int fd = (int)(evs[i].data.u64 >> 32);
			uint32_t k = (uint32_t)evs[i].data.u64;
			char c;
			ssize_t r = read(fd, &c, 1);
			if (r != 1 || c != '\n') {
				fprintf(stderr, "bp-echo: connection %u: %s\n", k,
					r == 0 ? "closed by the server" :
					r < 0 ? strerror(errno) : "wrong byte");
				return 1;
			}
			uint64_t us = (t - sent_at[k]) / 1000;
			lat[us < LAT_BUCKETS ? us : LAT_BUCKETS - 1]++;
			done++;
			sent_at[k] = t;
			if (write(fd, "\n", 1) != 1)
				die("write");
		}
	}
	t = now_ns();
	{
		uint64_t acc = 0, p50 = 0, p99 = 0;
		int have50 = 0;
		for (int i = 0; i < LAT_BUCKETS; i++) {
			acc += lat[i];
			if (!have50 && acc * 2 >= done) {
				p50 = (uint64_t)i;
				have50 = 1;
			}
			if (acc * 100 >= done * 99) {
				p99 = (uint64_t)i;
				break;
			}
		}
		double secs = (double)(t - t0) / 1e9;
		printf("requests=%llu seconds=%.3f rps=%.0f p50_us=%llu p99_us=%llu\n",
		       (unsigned long long)done, secs, (double)done / secs,
		       (unsigned long long)p50, (unsigned long long)p99);
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: bp-echo serve --port PORT [--pidfile FILE]\n"
"       bp-echo load  --port PORT [--conns N] [--seconds S]\n"
"\n"
"serve: a 1-byte echo server (one thread, level-triggered epoll).\n"
"load:  N connections (default 50) each writing one byte and waiting for\n"
"       it, in a busy loop, for S seconds (default 5); prints\n"
"       requests=R seconds=T rps=X p50_us=A p99_us=B\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "pidfile", required_argument, NULL, 'P' },
		{ "conns", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *pidfile = NULL;
	int port = 0, conns = 50, opt;
	double seconds = 5;

	if (argc < 2 || (strcmp(argv[1], "serve") && strcmp(argv[1], "load"))) {
		usage(argc > 1 && !strcmp(argv[1], "--help") ? stdout : stderr);
		return argc > 1 && !strcmp(argv[1], "--help") ? 0 : 2;
	}
	optind = 2;
	while ((opt = getopt_long(argc, argv, "p:P:c:s:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p': port = atoi(optarg); break;
		case 'P': pidfile = optarg; break;
		case 'c': conns = atoi(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (port < 1 || port > 65535 || conns < 1 || conns > MAX_CONNS ||
	    seconds <= 0) {
		usage(stderr);
		return 2;
	}
	return strcmp(argv[1], "serve") == 0 ? serve(port, pidfile)
					     : load(port, conns, seconds);
}
