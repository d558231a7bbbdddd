/*
 * ex-backend - the examples' backend: answers "CALL <id> <k>" with
 * "OK <id> <k>" on a TCP port and on a unix socket at once.
 *
 * A main thread polls the two listening sockets and starts one thread per
 * accepted connection; each connection is persistent and carries any
 * number of calls, answered in order.  --delay-us makes every call take a
 * while, so that a front has several requests in progress at once.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ex_util.h"

#define EX_BACKEND_MAX_CONNS 2048

static struct {
	int delay_us;
	int idle_ms;
	long corrupt_every;
} cfg;

static atomic_long n_conns, n_live, n_calls, n_corrupt;

static void usage(void)
{
	printf(
"Usage: ex-backend --port PORT --unix PATH [OPTION]...\n\n"
"The examples' backend.  It listens on a TCP port and on a unix socket at\n"
"once, serves every connection in a thread of its own, and answers each\n"
"line \"CALL <id> <k>\" with \"OK <id> <k>\", in order.  Connections are\n"
"persistent: a front may send any number of calls on one.\n\n"
"Options:\n"
"  --port PORT        TCP port to listen on (required)\n"
"  --host ADDR        IPv4 address to listen on (default 127.0.0.1)\n"
"  --unix PATH        unix socket to listen on (required; a stale socket\n"
"                     file there is replaced)\n"
"  --delay-us US      spend US microseconds on every call (default 0)\n"
"  --idle-ms MS       close a connection silent for MS (default 60000)\n"
"  --corrupt-every N  answer every Nth call with another request's id, to\n"
"                     test that fronts detect mixups (default 0: never)\n"
"  --pidfile FILE     write the pid to FILE once listening\n"
"  --help             this text\n\n"
"SIGTERM or SIGINT stops it; at exit it prints\n"
"\"ex-backend[PID]: stats conns=N calls=N corrupted=N\" on stderr.\n"
"A line that is not a CALL is answered \"ERR bad-call\" and the connection\n"
"closed.  Exit status: 0 after a clean stop, 1 on a fatal error, 2 for a\n"
"bad command line.\n");
}

static void delay(void)
{
	struct timespec ts = {
		.tv_sec = cfg.delay_us / 1000000,
		.tv_nsec = (long)(cfg.delay_us % 1000000) * 1000,
	};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct ex_lbuf *in = malloc(sizeof *in);

	if (!in) {
		ex_log("out of memory for a connection");
		goto out;
	}
	ex_lbuf_reset(in);
	ex_set_timeouts(fd, cfg.idle_ms);
	for (;;) {
		char id[EX_ID_MAX], out[EX_LINE_MAX + 2];
		unsigned k;
		char *line;
		int r = ex_lbuf_getline(in, fd, &line, NULL);
		int n;

		if (r == 0)
			break;
		if (r < 0) {
			if (r == -EAGAIN)
				ex_log("connection idle too long: closing");
			else if (r != -ECONNRESET)
				ex_log("reading a call: %s", strerror(-r));
			break;
		}
		if (ex_parse_idk(line, "CALL", id, &k)) {
			ex_log("bad call line '%.80s': closing", line);
			n = snprintf(out, sizeof out, "ERR bad-call\n");
			ex_write_all(fd, out, (size_t)n);
			break;
		}
		if (cfg.delay_us)
			delay();
		long c = atomic_fetch_add(&n_calls, 1) + 1;
		if (cfg.corrupt_every && c % cfg.corrupt_every == 0) {
			atomic_fetch_add(&n_corrupt, 1);
			n = snprintf(out, sizeof out, "OK %sX %u\n", id, k);
		} else {
			n = snprintf(out, sizeof out, "OK %s %u\n", id, k);
		}
		r = ex_write_all(fd, out, (size_t)n);
		if (r < 0) {
			ex_log("answering CALL %s %u: %s", id, k, strerror(-r));
			break;
		}
	}
out:
	free(in);
	close(fd);
	atomic_fetch_sub(&n_live, 1);
	return NULL;
}

static void accept_one(int lfd)
{
	pthread_attr_t attr;
	pthread_t th;
	int fd, err;

	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			ex_log("accept: %s", strerror(errno));
		if (errno == EMFILE || errno == ENFILE)
			poll(NULL, 0, 100);     /* let connections close */
		return;
	}
	if (atomic_load(&n_live) >= EX_BACKEND_MAX_CONNS) {
		ex_log("more than %d connections: refusing one",
		       EX_BACKEND_MAX_CONNS);
		close(fd);
		return;
	}
	atomic_fetch_add(&n_conns, 1);
	atomic_fetch_add(&n_live, 1);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	ex_block_signals(1);
	err = pthread_create(&th, &attr, serve, (void *)(intptr_t)fd);
	ex_block_signals(0);
	pthread_attr_destroy(&attr);
	if (err) {
		ex_log("cannot start a connection thread: %s", strerror(err));
		atomic_fetch_sub(&n_live, 1);
		close(fd);
	}
}

int main(int argc, char **argv)
{
	enum { O_PORT = 256, O_HOST, O_UNIX, O_DELAY, O_IDLE, O_CORRUPT,
	       O_PIDFILE, O_HELP };
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, O_PORT },
		{ "host", required_argument, NULL, O_HOST },
		{ "unix", required_argument, NULL, O_UNIX },
		{ "delay-us", required_argument, NULL, O_DELAY },
		{ "idle-ms", required_argument, NULL, O_IDLE },
		{ "corrupt-every", required_argument, NULL, O_CORRUPT },
		{ "pidfile", required_argument, NULL, O_PIDFILE },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	const char *host = "127.0.0.1", *unix_path = NULL, *pidfile = NULL;
	int port = 0, c, err;
	struct pollfd pfd[2];

	ex_init(argv[0]);
	cfg.idle_ms = 60000;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case O_PORT:
			port = (int)ex_opt_num("--port", optarg, 1, 65535);
			break;
		case O_HOST:
			host = optarg;
			break;
		case O_UNIX:
			unix_path = optarg;
			break;
		case O_DELAY:
			cfg.delay_us = (int)ex_opt_num("--delay-us", optarg, 0,
						       10000000);
			break;
		case O_IDLE:
			cfg.idle_ms = (int)ex_opt_num("--idle-ms", optarg, 1,
						      3600000);
			break;
		case O_CORRUPT:
			cfg.corrupt_every = ex_opt_num("--corrupt-every",
						       optarg, 0, 1000000000);
			break;
		case O_PIDFILE:
			pidfile = optarg;
			break;
		case O_HELP:
			usage();
			return 0;
		default:
			ex_log("bad command line (try --help)");
			return 2;
		}
	}
	if (optind < argc || !port || !unix_path) {
		ex_log("--port and --unix are required (try --help)");
		return 2;
	}
	if ((err = ex_signals()) < 0)
		ex_fatal("cannot install signal handlers: %s", strerror(-err));

	pfd[0].fd = ex_listen_tcp(host, port, 512, 1);
	if (pfd[0].fd < 0)
		ex_fatal("cannot listen on %s:%d: %s", host, port,
			 strerror(-pfd[0].fd));
	pfd[1].fd = ex_listen_unix(unix_path, 512, 1);
	if (pfd[1].fd < 0)
		ex_fatal("cannot listen on %s: %s", unix_path,
			 strerror(-pfd[1].fd));
	pfd[0].events = pfd[1].events = POLLIN;
	if (pidfile && (err = ex_pidfile(pidfile)) < 0)
		ex_fatal("cannot write pidfile %s: %s", pidfile, strerror(-err));

	while (!ex_stop) {
		int n = poll(pfd, 2, 500);   /* bounded: see ex_stop soon */

		if (n < 0) {
			if (errno != EINTR)
				ex_fatal("poll: %s", strerror(errno));
			continue;
		}
		for (int i = 0; i < 2; i++)
			if (pfd[i].revents & POLLIN)
				accept_one(pfd[i].fd);
	}
	close(pfd[0].fd);
	close(pfd[1].fd);
	unlink(unix_path);
	ex_log("stats conns=%ld calls=%ld corrupted=%ld",
	       atomic_load(&n_conns), atomic_load(&n_calls),
	       atomic_load(&n_corrupt));
	if (pidfile)
		unlink(pidfile);
	return 0;
}
