/*
 * ex-client - load generator and verifier for the example fronts.
 *
 * Opens --conns connections to a front and sends --requests requests in
 * all, spread evenly over them, keeping up to --pipeline requests in
 * flight on each (several requests are written before their replies are
 * read).  Every reply must be "RESP <id> <n> <checksum>" for the oldest
 * unanswered request of its connection, with the checksum a front gets
 * only from the right backend replies; anything else is a failure and the
 * exit status says so.  --truth FILE receives "<id> <ncalls>" for every
 * request sent: the ground truth the tracing tests compare paths with.
 *
 * One thread writes requests and another reads replies.  The writer never
 * reads anything, so under black-box tracing each request it sends starts
 * a new request (it is sent by a fragment that works for no request);
 * a single thread that sent its next request right after reading a reply
 * would, by the tracing rules, send it on behalf of the request it just
 * read.  See docs/examples.md.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ex_util.h"

#define EX_CLIENT_MAX_CONNS 1024
#define EX_CLIENT_MAX_DEPTH 64
#define EX_CLIENT_SHOW_ERRS 5

struct sent {
	char id[EX_ID_MAX];
	unsigned n;
};

struct conn {
	int fd;
	unsigned index;
	long quota;                 /* requests this connection sends */
	long sent, answered;        /* under lock */
	int failed;                 /* under lock */
	int done;                   /* reader only: all answered or failed */
	unsigned fifo_head;         /* under lock: ring of unanswered */
	struct sent fifo[EX_CLIENT_MAX_DEPTH];
	struct ex_lbuf in;          /* reader only */
};

static struct {
	const char *host, *truth;
	int port, conns, depth, max_calls, timeout_ms;
	long requests;
	uint64_t seed;
} cfg;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t space = PTHREAD_COND_INITIALIZER;
static struct conn *conns;
static struct sent *truth;          /* writer only, in send order */
static long n_truth;
static long n_ok, n_wrong, n_failed_conns;  /* under lock */
static int n_errs_shown;                     /* under lock */
static uint64_t deadline_ms;
static uint64_t rng;

static void usage(void)
{
	printf(
"Usage: ex-client --port PORT --conns C --requests N --pipeline D\n"
"                 --max-calls K --truth FILE [OPTION]...\n\n"
"Load generator and verifier for the example front servers.  It opens C\n"
"connections to 127.0.0.1:PORT and sends N requests \"REQ <id> <n>\" in\n"
"all, spread evenly over them, with n drawn from 0..K, keeping up to D\n"
"requests in flight on each connection (written before their replies are\n"
"read).  Ids are unique: c<conn>s<seq>x<random hex>.  Every reply must be\n"
"\"RESP <id> <n> <checksum>\" for the oldest unanswered request of its\n"
"connection, with the checksum of the backend replies \"OK <id> <k>\"\n"
"(see examples/ex_util.h).\n\n"
"Options:\n"
"  --port PORT        the front's port (required)\n"
"  --host ADDR        the front's IPv4 address (default 127.0.0.1)\n"
"  --conns C          concurrent connections, 1..%d (default 1)\n"
"  --requests N       requests in all (default 100)\n"
"  --pipeline D       requests in flight per connection, 1..%d (default 1)\n"
"  --max-calls K      most backend calls per request, 0..%d (default 4)\n"
"  --truth FILE       write \"<id> <ncalls>\" per request sent, in order\n"
"  --seed S           seed of the ids and call counts (default: time)\n"
"  --timeout-ms MS    give up after MS in all (default 60000)\n"
"  --help             this text\n\n"
"It prints one summary line on stdout:\n"
"  requests=N sent=S ok=O wrong=W failed_conns=F elapsed_ms=T\n"
"(wrong counts wrong replies and requests left unanswered on a failed\n"
"connection) and the first few failures on stderr.  Exit status: 0 when every\n"
"request got its right reply in time, 1 otherwise, 2 for a bad command\n"
"line.\n", EX_CLIENT_MAX_CONNS, EX_CLIENT_MAX_DEPTH, EX_NCALLS_MAX);
}

static uint32_t rnd(void)
{
	/* xorshift64*: enough for ids and call counts */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * UINT64_C(2685821657736338717)) >> 32);
}

/* Report one failure of connection C (under lock); only the first few
 * are shown. */
static void fail_locked(struct conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void fail_locked(struct conn *c, const char *fmt, ...)
{
	char msg[300];
	va_list ap;

	if (n_errs_shown++ >= EX_CLIENT_SHOW_ERRS) {
		if (n_errs_shown == EX_CLIENT_SHOW_ERRS + 1)
			ex_log("(more failures not shown)");
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	ex_log("conn %u: %s", c->index, msg);
}

/* Mark C failed (under lock): its unanswered requests count as wrong. */
static void conn_fail_locked(struct conn *c)
{
	if (c->failed)
		return;
	c->failed = 1;
	n_failed_conns++;
	n_wrong += c->sent - c->answered;
	shutdown(c->fd, SHUT_RDWR);
	pthread_cond_broadcast(&space);
}

/* The writer: send requests while connections have room. */
static int writer(void)
{
	char buf[EX_CLIENT_MAX_DEPTH * (EX_LINE_MAX + 2)];
	long total_sent = 0;
	unsigned next = 0;

	pthread_mutex_lock(&lock);
	while (total_sent < cfg.requests) {
		int progress = 0;

		for (int step = 0; step < cfg.conns; step++) {
			struct conn *c = &conns[(next + (unsigned)step) %
						(unsigned)cfg.conns];
			size_t len = 0;
			int r;

			if (c->failed)
				continue;
			while (c->sent < c->quota &&
			       c->sent - c->answered < cfg.depth) {
				unsigned slot = (c->fifo_head + (unsigned)
						 (c->sent - c->answered)) %
						EX_CLIENT_MAX_DEPTH;
				struct sent *s = &c->fifo[slot];

				snprintf(s->id, sizeof s->id, "c%us%ldx%08" PRIx32,
					 c->index, c->sent, rnd());
				s->n = (unsigned)(rnd() %
						  (uint32_t)(cfg.max_calls + 1));
				truth[n_truth++] = *s;
				len += (size_t)snprintf(buf + len,
							sizeof buf - len,
							"REQ %s %u\n", s->id,
							s->n);
				c->sent++;
				total_sent++;
			}
			if (!len)
				continue;
			progress = 1;
			/* one write for the whole batch: pipelining */
			pthread_mutex_unlock(&lock);
			r = ex_write_all(c->fd, buf, len);
			pthread_mutex_lock(&lock);
			if (r < 0 && !c->failed) {
				fail_locked(c, "sending requests: %s",
					    strerror(-r));
				conn_fail_locked(c);
			}
		}
		next++;
		if (progress)
			continue;
		/* every connection is full, done or failed */
		int live = 0;
		for (int i = 0; i < cfg.conns; i++)
			live += !conns[i].failed && conns[i].sent < conns[i].quota;
		if (!live)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&space, &lock, &ts);
		if (ex_now_ms() >= deadline_ms) {
			ex_log("timed out after %d ms with %ld of %ld requests "
			       "sent", cfg.timeout_ms, total_sent, cfg.requests);
			pthread_mutex_unlock(&lock);
			return -ETIMEDOUT;
		}
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

/* The reader got LINE on C: is it the reply to the oldest request? */
static void check_reply(struct conn *c, const char *line)
{
	char want[EX_LINE_MAX + 2];
	struct sent *s;

	pthread_mutex_lock(&lock);
	if (c->failed) {
		pthread_mutex_unlock(&lock);
		return;
	}
	if (c->answered == c->sent) {
		fail_locked(c, "reply '%.80s' to no request", line);
		conn_fail_locked(c);
		pthread_mutex_unlock(&lock);
		return;
	}
	s = &c->fifo[c->fifo_head];
	ex_fmt_resp(want, sizeof want, s->id, s->n,
		    ex_cs_expected(s->id, s->n));
	want[strlen(want) - 1] = '\0';
	if (strcmp(line, want) == 0) {
		n_ok++;
	} else {
		n_wrong++;
		fail_locked(c, "wrong reply '%.80s', expected '%s'", line,
			    want);
	}
	c->answered++;
	c->fifo_head = (c->fifo_head + 1) % EX_CLIENT_MAX_DEPTH;
	pthread_cond_signal(&space);
	pthread_mutex_unlock(&lock);
}

/* Is C finished (all answered, or failed)?  Closes our sending side when
 * all is answered, so the front sees the end. */
static int conn_finished(struct conn *c)
{
	int fin;

	pthread_mutex_lock(&lock);
	fin = c->failed || c->answered == c->quota;
	pthread_mutex_unlock(&lock);
	if (fin && !c->done) {
		c->done = 1;
		shutdown(c->fd, SHUT_WR);
	}
	return fin;
}

static void *reader(void *arg)
{
	struct pollfd *pfd = calloc((size_t)cfg.conns, sizeof *pfd);
	struct conn **map = calloc((size_t)cfg.conns, sizeof *map);

	(void)arg;
	if (!pfd || !map)
		ex_fatal("out of memory");
	for (;;) {
		int n = 0;
		uint64_t now = ex_now_ms();

		for (int i = 0; i < cfg.conns; i++) {
			if (conns[i].done || conn_finished(&conns[i]))
				continue;
			pfd[n].fd = conns[i].fd;
			pfd[n].events = POLLIN;
			map[n++] = &conns[i];
		}
		if (!n)
			break;
		if (now >= deadline_ms) {
			pthread_mutex_lock(&lock);
			for (int i = 0; i < n; i++) {
				fail_locked(map[i], "timed out after %d ms "
					    "with %ld of %ld answered",
					    cfg.timeout_ms, map[i]->answered,
					    map[i]->quota);
				conn_fail_locked(map[i]);
			}
			pthread_mutex_unlock(&lock);
			break;
		}
		int r = poll(pfd, (nfds_t)n, (int)(deadline_ms - now));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			ex_fatal("poll: %s", strerror(errno));
		}
		for (int i = 0; i < n && r > 0; i++) {
			struct conn *c = map[i];
			char *line;
			ssize_t got;

			if (!pfd[i].revents)
				continue;
			got = ex_lbuf_read(&c->in, c->fd);
			if (got == -EAGAIN || got == -EINTR)
				continue;
			while (got > 0 && ex_lbuf_line(&c->in, &line, NULL) > 0)
				check_reply(c, line);
			if (got > 0 && ex_lbuf_pending(&c->in) <= EX_LINE_MAX)
				continue;
			pthread_mutex_lock(&lock);
			if (!c->failed && c->answered < c->quota) {
				fail_locked(c, "%s after %ld of %ld answers",
					    got == 0 ? "the front closed the "
					    "connection" : got > 0 ? "reply line "
					    "too long" : strerror((int)-got),
					    c->answered, c->quota);
				conn_fail_locked(c);
			}
			pthread_mutex_unlock(&lock);
		}
	}
	free(pfd);
	free(map);
	return NULL;
}

static int write_truth(void)
{
	FILE *f = fopen(cfg.truth, "w");

	if (!f) {
		ex_log("cannot write %s: %s", cfg.truth, strerror(errno));
		return -1;
	}
	for (long i = 0; i < n_truth; i++)
		fprintf(f, "%s %u\n", truth[i].id, truth[i].n);
	if (fclose(f) != 0) {
		ex_log("cannot write %s: %s", cfg.truth, strerror(errno));
		return -1;
	}
	return 0;
}

static int connect_all(void)
{
	for (int i = 0; i < cfg.conns; i++) {
		struct conn *c = &conns[i];
		int fd;

		/* a front just started may not listen yet: retry a while */
		for (;;) {
			fd = ex_connect_tcp(cfg.host, cfg.port, 0, 5000);
			if (fd >= 0 || fd != -ECONNREFUSED ||
			    ex_now_ms() >= deadline_ms)
				break;
			poll(NULL, 0, 50);
		}
		if (fd < 0) {
			ex_log("cannot connect to %s:%d: %s", cfg.host, cfg.port,
			       strerror(-fd));
			return -1;
		}
		ex_set_timeouts(fd, cfg.timeout_ms);
		c->fd = fd;
		c->index = (unsigned)i;
		c->quota = cfg.requests / cfg.conns +
			   (i < cfg.requests % cfg.conns);
		ex_lbuf_reset(&c->in);
	}
	return 0;
}

int main(int argc, char **argv)
{
	enum { O_PORT = 256, O_HOST, O_CONNS, O_REQS, O_PIPE, O_MAXC, O_TRUTH,
	       O_SEED, O_TIMEOUT, O_HELP };
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, O_PORT },
		{ "host", required_argument, NULL, O_HOST },
		{ "conns", required_argument, NULL, O_CONNS },
		{ "requests", required_argument, NULL, O_REQS },
		{ "pipeline", required_argument, NULL, O_PIPE },
		{ "max-calls", required_argument, NULL, O_MAXC },
		{ "truth", required_argument, NULL, O_TRUTH },
		{ "seed", required_argument, NULL, O_SEED },
		{ "timeout-ms", required_argument, NULL, O_TIMEOUT },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	pthread_t rth;
	uint64_t start;
	int c, err, bad;

	ex_init(argv[0]);
	cfg.host = "127.0.0.1";
	cfg.conns = 1;
	cfg.requests = 100;
	cfg.depth = 1;
	cfg.max_calls = 4;
	cfg.timeout_ms = 60000;
	cfg.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case O_PORT:
			cfg.port = (int)ex_opt_num("--port", optarg, 1, 65535);
			break;
		case O_HOST:
			cfg.host = optarg;
			break;
		case O_CONNS:
			cfg.conns = (int)ex_opt_num("--conns", optarg, 1,
						    EX_CLIENT_MAX_CONNS);
			break;
		case O_REQS:
			cfg.requests = ex_opt_num("--requests", optarg, 0,
						  10000000);
			break;
		case O_PIPE:
			cfg.depth = (int)ex_opt_num("--pipeline", optarg, 1,
						    EX_CLIENT_MAX_DEPTH);
			break;
		case O_MAXC:
			cfg.max_calls = (int)ex_opt_num("--max-calls", optarg,
							0, EX_NCALLS_MAX);
			break;
		case O_TRUTH:
			cfg.truth = optarg;
			break;
		case O_SEED:
			cfg.seed = (uint64_t)ex_opt_num("--seed", optarg, 0,
							 0x7fffffffffffffffL);
			break;
		case O_TIMEOUT:
			cfg.timeout_ms = (int)ex_opt_num("--timeout-ms", optarg,
							 1, 3600000);
			break;
		case O_HELP:
			usage();
			return 0;
		default:
			ex_log("bad command line (try --help)");
			return 2;
		}
	}
	if (optind < argc || !cfg.port) {
		ex_log("--port is required (try --help)");
		return 2;
	}
	rng = cfg.seed * UINT64_C(0x9e3779b97f4a7c15) + 1;
	conns = calloc((size_t)cfg.conns, sizeof *conns);
	truth = calloc((size_t)cfg.requests + 1, sizeof *truth);
	if (!conns || !truth)
		ex_fatal("out of memory");
	start = ex_now_ms();
	deadline_ms = start + (uint64_t)cfg.timeout_ms;
	if (connect_all() < 0)
		return 1;

	ex_block_signals(1);        /* the reader leaves signals to us */
	err = pthread_create(&rth, NULL, reader, NULL);
	ex_block_signals(0);
	if (err)
		ex_fatal("cannot start the reader thread: %s", strerror(err));
	err = writer();
	if (err < 0) {
		pthread_mutex_lock(&lock);
		for (int i = 0; i < cfg.conns; i++)
			if (conns[i].answered < conns[i].quota)
				conn_fail_locked(&conns[i]);
		pthread_mutex_unlock(&lock);
	}
	pthread_join(rth, NULL);
	for (int i = 0; i < cfg.conns; i++)
		close(conns[i].fd);

	bad = n_wrong || n_failed_conns || n_ok != cfg.requests;
	if (cfg.truth && write_truth() < 0)
		bad = 1;
	printf("requests=%ld sent=%ld ok=%ld wrong=%ld failed_conns=%ld "
	       "elapsed_ms=%llu\n", cfg.requests, n_truth, n_ok, n_wrong,
	       n_failed_conns, (unsigned long long)(ex_now_ms() - start));
	return bad ? 1 : 0;
}
