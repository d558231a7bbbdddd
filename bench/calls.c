/*
 * calls.c - bp-calls: nanoseconds per wrapped call (benchmark 5).
 *
 *   bp-calls [-n CALLS] [-r ROUNDS] [-l] CASE...
 *
 * Each CASE times ROUNDS batches of CALLS calls of one function on one
 * kind of descriptor and prints one line
 *
 *   CASE <median ns per call> <min ns per call> <calls per batch>
 *
 * Cases (chan: a channel the shim traces; plain: a descriptor it leaves
 * alone):
 *
 *   read-chan   read 1 byte of a pipe holding newlines (one message each)
 *   write-chan  write "\n" to a pipe
 *   recv-chan   recv 1 byte of a unix stream socketpair
 *   send-chan   send "\n" on a unix stream socketpair
 *   poll-chan   poll a socketpair end with input waiting (returns 1)
 *   epoll-chan  epoll_wait on a set holding that end (level-triggered)
 *   read-plain  read 1 byte of /dev/zero
 *   write-plain write 1 byte to /dev/null
 *   recv-plain  recv 1 byte of a netlink (NETLINK_USERSOCK) socket
 *               connected to itself, holding data
 *   send-plain  send 1 byte on that socket
 *   poll-plain  poll an eventfd whose counter is set (returns 1)
 *   epoll-plain epoll_wait on a set holding that eventfd
 *   ssl-read-chan   SSL_read 1 byte of an OpenSSL session (TLS 1.3, a
 *               P-256 certificate made at start) over a unix stream
 *               socketpair (blocking), its peer session (same process)
 *               having written the batch's newlines in one SSL_write
 *   ssl-write-chan  SSL_write "\n" on that session (one record each)
 *
 * Refilling and draining between batches uses syscall(2) directly, so the
 * shim never sees it and it is not timed (the ssl cases refill and drain
 * through the peer session: untimed, but traced).  Run it bare, under the floor
 * shim (bench/.libs/libbtfloor.so) and under libbtrace.so (with a bp-logd
 * and BTRACE_RULES='line exe bp-calls' so the pipes and socketpairs get
 * the line processor: every traced call moves one message).  -l lists
 * the cases.  Under valgrind --tool=callgrind the instruction count of
 * two runs with different -n gives instructions per call.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#define MAX_BATCH 32768               /* fits a pipe/socket buffer */

static uint8_t fill[MAX_BATCH];
static uint8_t sink[MAX_BATCH];

static void die(const char *what)
{
	fprintf(stderr, "bp-calls: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Untimed refill/drain, invisible to any shim. */
static void raw_write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	while (n) {
		long r = syscall(SYS_write, fd, p, n);
		if (r <= 0)
			die("refill");
		p += r;
		n -= (size_t)r;
	}
}

static void raw_drain(int fd, size_t n)
{
	while (n) {
		long r = syscall(SYS_read, fd, sink, n < sizeof sink ? n : sizeof sink);
		if (r <= 0)
			die("drain");
		n -= (size_t)r;
	}
}

struct fixture {
	int a, b;             /* a: the end the timed calls use */
	int ep;
	SSL *sa, *sb;         /* the ssl cases: a's session, b's */
};

enum kind { K_READ, K_WRITE, K_RECV, K_SEND, K_POLL, K_EPOLL,
	    K_SSL_READ, K_SSL_WRITE };
enum fdk { FK_PIPE, FK_PAIR, FK_FILE, FK_NETLINK, FK_EVENTFD, FK_TLS };

struct bcase {
	const char *name;
	enum kind kind;
	enum fdk fdk;
	int max;              /* most calls per batch (socket buffers count
				 every 1-byte skb at ~1 KiB: a batch must fit) */
};

static const struct bcase cases[] = {
	{ "read-chan",   K_READ,  FK_PIPE, 0 },
	{ "write-chan",  K_WRITE, FK_PIPE, 0 },
	{ "recv-chan",   K_RECV,  FK_PAIR, 0 },
	{ "send-chan",   K_SEND,  FK_PAIR, 128 },
	{ "poll-chan",   K_POLL,  FK_PAIR, 0 },
	{ "epoll-chan",  K_EPOLL, FK_PAIR, 0 },
	{ "read-plain",  K_READ,  FK_FILE, 0 },
	{ "write-plain", K_WRITE, FK_FILE, 0 },
	{ "recv-plain",  K_RECV,  FK_NETLINK, 128 },
	{ "send-plain",  K_SEND,  FK_NETLINK, 128 },
	{ "poll-plain",  K_POLL,  FK_EVENTFD, 0 },
	{ "epoll-plain", K_EPOLL, FK_EVENTFD, 0 },
	{ "ssl-read-chan",  K_SSL_READ,  FK_TLS, 0 },
	{ "ssl-write-chan", K_SSL_WRITE, FK_TLS, 128 },
};
#define NCASES (sizeof cases / sizeof cases[0])

/* A server (a) and a client (b) session over a non-blocking unix
 * socketpair, both handshakes done (TLS 1.3, no session tickets). */
static void tls_pair(struct fixture *f)
{
	static SSL_CTX *sctx, *cctx;
	int p[2], sd = 0, cd = 0;

	if (!sctx) {
		EVP_PKEY *key = EVP_EC_gen("P-256");
		X509 *crt = X509_new();
		if (!key || !crt)
			die("EVP_EC_gen");
		ASN1_INTEGER_set(X509_get_serialNumber(crt), 1);
		X509_gmtime_adj(X509_getm_notBefore(crt), 0);
		X509_gmtime_adj(X509_getm_notAfter(crt), 86400);
		X509_set_pubkey(crt, key);
		X509_set_issuer_name(crt, X509_get_subject_name(crt));
		if (X509_sign(crt, key, EVP_sha256()) <= 0)
			die("X509_sign");
		sctx = SSL_CTX_new(TLS_server_method());
		cctx = SSL_CTX_new(TLS_client_method());
		if (!sctx || !cctx || SSL_CTX_use_certificate(sctx, crt) != 1 ||
		    SSL_CTX_use_PrivateKey(sctx, key) != 1)
			die("SSL_CTX");
		SSL_CTX_set_num_tickets(sctx, 0);
		SSL_CTX_set_verify(cctx, SSL_VERIFY_NONE, NULL);
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, p) < 0)
		die("socketpair");
	f->a = p[0];
	f->b = p[1];
	f->sa = SSL_new(sctx);
	f->sb = SSL_new(cctx);
	if (!f->sa || !f->sb || SSL_set_fd(f->sa, f->a) != 1 ||
	    SSL_set_fd(f->sb, f->b) != 1)
		die("SSL_new");
	for (int i = 0; i < 100 && !(sd && cd); i++) {
		if (!cd)
			cd = SSL_connect(f->sb) == 1;
		if (!sd)
			sd = SSL_accept(f->sa) == 1;
	}
	if (!sd || !cd) {
		errno = EPROTO;
		die("TLS handshake");
	}
	ERR_clear_error();
	/* the timed end blocks, as a thread-per-connection server's: a read
	 * at a message end is not told WANT_READ (docs/libbtrace.md) */
	if (fcntl(f->a, F_SETFL, fcntl(f->a, F_GETFL) & ~O_NONBLOCK) < 0)
		die("fcntl");
}

/* Read N plaintext bytes from session S (a non-blocking socket: the
 * bytes are already there; a WANT_READ is retried, a bounded number of
 * times). */
static void ssl_drain(SSL *s, size_t n)
{
	for (int tries = 0; n && tries < 1000000; tries++) {
		int r = SSL_read(s, sink, n < sizeof sink ? (int)n : (int)sizeof sink);
		if (r > 0)
			n -= (size_t)r;
		else if (SSL_get_error(s, r) != SSL_ERROR_WANT_READ)
			break;
	}
	if (n) {
		errno = EIO;
		die("SSL drain");
	}
}

static void setup(const struct bcase *c, struct fixture *f)
{
	int p[2];

	memset(f, 0, sizeof *f);
	f->a = f->b = f->ep = -1;
	switch (c->fdk) {
	case FK_TLS:
		tls_pair(f);
		break;
	case FK_PIPE:
		if (pipe(p) < 0)
			die("pipe");
		/* the timed end: the read end for reads, else the write end */
		f->a = c->kind == K_READ ? p[0] : p[1];
		f->b = c->kind == K_READ ? p[1] : p[0];
		break;
	case FK_PAIR:
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, p) < 0)
			die("socketpair");
		f->a = p[0];
		f->b = p[1];
		break;
	case FK_FILE:
		f->a = open(c->kind == K_READ ? "/dev/zero" : "/dev/null",
			    c->kind == K_READ ? O_RDONLY : O_WRONLY);
		if (f->a < 0)
			die("open /dev/zero or /dev/null");
		break;
	case FK_NETLINK: {
		struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
		socklen_t l = sizeof sa;
		f->a = socket(AF_NETLINK, SOCK_DGRAM, NETLINK_USERSOCK);
		if (f->a < 0)
			die("socket(AF_NETLINK)");
		if (bind(f->a, (struct sockaddr *)&sa, sizeof sa) < 0 ||
		    getsockname(f->a, (struct sockaddr *)&sa, &l) < 0 ||
		    connect(f->a, (struct sockaddr *)&sa, sizeof sa) < 0)
			die("netlink bind/connect");
		break;
	}
	case FK_EVENTFD:
		f->a = eventfd(1, EFD_NONBLOCK);
		if (f->a < 0)
			die("eventfd");
		break;
	}
	if (c->kind == K_EPOLL) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = f->a };
		/* for socketpairs the readable end is b's peer: a */
		f->ep = epoll_create1(0);
		if (f->ep < 0 || epoll_ctl(f->ep, EPOLL_CTL_ADD, f->a, &ev) < 0)
			die("epoll");
	}
	/* readiness cases: make the timed fd readable once, for good */
	if ((c->kind == K_POLL || c->kind == K_EPOLL) && c->fdk == FK_PAIR)
		raw_write_all(f->b, "\n", 1);
}

/* Before a batch of N calls (untimed). */
static void before(const struct bcase *c, struct fixture *f, int n)
{
	if (c->kind == K_READ && c->fdk == FK_PIPE)
		raw_write_all(f->b, fill, (size_t)n);
	else if (c->kind == K_RECV && c->fdk == FK_PAIR)
		raw_write_all(f->b, fill, (size_t)n);
	else if (c->kind == K_RECV && c->fdk == FK_NETLINK) {
		for (int i = 0; i < n; i++)
			if (syscall(SYS_sendto, f->a, "x", 1, 0, NULL, 0) != 1)
				die("netlink refill");
	} else if (c->kind == K_SSL_READ && SSL_write(f->sb, fill, n) != n)
		die("SSL refill");
}

/* After a batch (untimed). */
static void after(const struct bcase *c, struct fixture *f, int n)
{
	if (c->kind == K_WRITE && c->fdk == FK_PIPE)
		raw_drain(f->b, (size_t)n);
	else if (c->kind == K_SEND && c->fdk == FK_PAIR)
		raw_drain(f->b, (size_t)n);
	else if (c->kind == K_SEND && c->fdk == FK_NETLINK) {
		for (int i = 0; i < n; i++)
			if (syscall(SYS_recvfrom, f->a, sink, sizeof sink, 0, NULL,
				    NULL) != 1)
				die("netlink drain");
	} else if (c->kind == K_SSL_WRITE)
		ssl_drain(f->sb, (size_t)n);
}

/* N timed calls; returns elapsed ns. */
static uint64_t batch(const struct bcase *c, struct fixture *f, int n)
{
	uint8_t b1;
	struct pollfd pfd = { .fd = f->a, .events = POLLIN };
	struct epoll_event evs[8];
	uint64_t t0, t1;
	int bad = 0;

	t0 = now_ns();
	switch (c->kind) {
	case K_READ:
		for (int i = 0; i < n; i++)
			bad |= read(f->a, &b1, 1) != 1;
		break;
	case K_WRITE:
		for (int i = 0; i < n; i++)
			bad |= write(f->a, "\n", 1) != 1;
		break;
	case K_RECV:
		for (int i = 0; i < n; i++)
			bad |= recv(f->a, &b1, 1, 0) != 1;
		break;
	case K_SEND:
		for (int i = 0; i < n; i++)
			bad |= send(f->a, "\n", 1, 0) != 1;
		break;
	case K_POLL:
		for (int i = 0; i < n; i++)
			bad |= poll(&pfd, 1, 0) != 1;
		break;
	case K_EPOLL:
		for (int i = 0; i < n; i++)
			bad |= epoll_wait(f->ep, evs, 8, 0) != 1;
		break;
	case K_SSL_READ:
		for (int i = 0; i < n; i++)
			bad |= SSL_read(f->sa, &b1, 1) != 1;
		break;
	case K_SSL_WRITE:
		for (int i = 0; i < n; i++)
			bad |= SSL_write(f->sa, "\n", 1) != 1;
		break;
	}
	t1 = now_ns();
	if (bad) {
		fprintf(stderr, "bp-calls: %s: a call did not return what it "
			"should (errno %d: %s)\n", c->name, errno,
			strerror(errno));
		exit(1);
	}
	return t1 - t0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: bp-calls [-n CALLS] [-r ROUNDS] [-l] CASE...\n"
"\n"
"Times ROUNDS batches (default 25) of CALLS calls (default 2000, at most\n"
"%d; 128 for sends and netlink) of one wrapped function per CASE and\n"
"prints\n"
"  CASE MEDIAN_NS_PER_CALL MIN_NS_PER_CALL CALLS\n"
"Cases: read write recv send poll epoll, each -chan (a traced pipe or\n"
"socketpair) or -plain (/dev/zero, /dev/null, netlink, eventfd);\n"
"ssl-read-chan and ssl-write-chan (an OpenSSL session over a socketpair).\n"
"-l lists them.  Benchmark 5 of BENCHMARKS.md runs it bare, under the\n"
"floor shim and under libbtrace.so.\n", MAX_BATCH);
}

int main(int argc, char **argv)
{
	int n = 2000, rounds = 25, opt;

	while ((opt = getopt(argc, argv, "n:r:lh")) != -1) {
		switch (opt) {
		case 'n': n = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'l':
			for (size_t i = 0; i < NCASES; i++)
				printf("%s\n", cases[i].name);
			return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (n < 1 || n > MAX_BATCH || rounds < 1 || rounds > 10000 ||
	    optind == argc) {
		usage(stderr);
		return 2;
	}
	memset(fill, '\n', sizeof fill);
	for (int a = optind; a < argc; a++) {
		const struct bcase *c = NULL;
		struct fixture f;
		uint64_t *t;

		for (size_t i = 0; i < NCASES; i++)
			if (strcmp(argv[a], cases[i].name) == 0)
				c = &cases[i];
		if (!c) {
			fprintf(stderr, "bp-calls: unknown case '%s' (-l lists "
				"them)\n", argv[a]);
			return 2;
		}
		int bn = c->max && n > c->max ? c->max : n;
		t = calloc((size_t)rounds, sizeof *t);
		if (!t)
			die("calloc");
		setup(c, &f);
		/* one untimed warm-up batch: first-use classification, slot
		 * claim, page faults */
		before(c, &f, bn);
		batch(c, &f, bn);
		after(c, &f, bn);
		for (int r = 0; r < rounds; r++) {
			before(c, &f, bn);
			t[r] = batch(c, &f, bn);
			after(c, &f, bn);
		}
		qsort(t, (size_t)rounds, sizeof *t, cmp_u64);
		printf("%s %.1f %.1f %d\n", c->name,
		       (double)t[rounds / 2] / bn, (double)t[0] / bn, bn);
		fflush(stdout);
		free(t);
		if (f.sa) {
			SSL_free(f.sa);
			SSL_free(f.sb);
		}
		if (f.ep >= 0)
			close(f.ep);
		close(f.a);
		if (f.b >= 0)
			close(f.b);
	}
	return 0;
}
