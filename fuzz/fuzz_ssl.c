/*
 * fuzz_ssl.c - libFuzzer target for libbtrace's OpenSSL bookkeeping
 * (libbtrace/ssl.c, the plaintext read path of in.c) against hostile call
 * orders, linked directly as tests/unit/check_tls is: the traced ends of
 * up to four socketpairs are OpenSSL server sessions driven through the
 * wrappers' implementations (bt_ssl_*), the other ends client sessions
 * driven by libssl itself.
 *
 * Input: a program of one-byte operations (op = byte % 12, pair = byte /
 * 12 % 4) with their argument bytes:
 *   open P K B    a socketpair, the traced end given processor K (line,
 *                 http, postgresql, mysql, redis, fastcgi, oneshot) and
 *                 bound by B % 3 (SSL_set_fd, SSL_set_rfd + SSL_set_wfd, a
 *                 socket BIO by SSL_set_bio), both handshakes; with B & 4
 *                 the cleartext that asks for TLS first (PostgreSQL's
 *                 SSLRequest and 'S', MySQL's greeting and SSL request;
 *                 nothing for the others), so the processor is started
 *                 over on the plaintext
 *   cwrite P N .. the client writes N plaintext bytes (one record)
 *   read P L M    the server reads up to L bytes by SSL_read, SSL_read_ex,
 *                 SSL_peek or SSL_peek_ex (M)
 *   swrite P N .. the server writes N bytes (SSL_write or _ex), the
 *                 client reads them back
 *   free P        SSL_free without SSL_shutdown (the descriptor stays)
 *   shutdown P    SSL_shutdown
 *   clear P       SSL_clear, then the same SSL object on a new
 *                 socketpair (the old descriptor closed, its number
 *                 likely reused), handshake again
 *   rebind P      SSL_set_fd to a dup of the descriptor, the old closed
 *   close P       the descriptor closed under a live session (the
 *                 session is freed later or never)
 *   unknown L     SSL_read, SSL_pending, SSL_get_error of a session that
 *                 never had a descriptor, then SSL_free
 *   poll P        readiness check
 *   pending P     SSL_pending / SSL_has_pending
 * so the plaintext reaches each processor in every split the input picks.
 *
 * Checks, beyond the sanitizers: the traced program only ever sees what
 * libssl would give it (the bytes read are exactly the bytes the client
 * wrote, in order; peeks are a prefix of what is left; the client gets
 * the server's writes unchanged); a fake WANT_READ leaves errno alone;
 * while plaintext is sent and not read, the descriptor is readable or
 * libssl itself holds it (SSL_has_pending).  A breach aborts.
 *
 * FUZZ_SSL_STATS=1 prints at exit how much was checked (bytes read,
 * peeked and written back, readiness checks, messages framed);
 * FUZZ_SSL_EVENTS=1 prints every record and every read's result (to see
 * what one input does).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "bt.h"
#include "impl.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

#define NPAIR 4
#define STREAM 65536          /* plaintext followed per direction */

static const struct bt_proto_ops *const procs[] = {
	&bt_proto_line, &bt_proto_http, &bt_proto_pgsql, &bt_proto_mysql,
	&bt_proto_redis, &bt_proto_fastcgi, &bt_proto_oneshot,
};

struct pair {
	int open;
	int sv[2];             /* sv[0] traced, sv[1] the client's */
	SSL *srv, *cli;
	int healthy;           /* plaintext followed and checked */
	uint8_t sent[STREAM];  /* client -> server plaintext not yet read */
	size_t nsent;
};

static struct pair P[NPAIR];
/* bytes checked: read by the server, peeked, read back by the client;
 * readiness checks made (printed at exit with FUZZ_SSL_STATS set) */
static unsigned long long st_read, st_peek, st_back, st_ready, st_msg;

static void stats(void)
{
	fprintf(stderr, "fuzz-ssl: checked %llu bytes read, %llu peeked, "
		"%llu written, %llu readiness checks, %llu messages framed\n",
		st_read, st_peek, st_back, st_ready, st_msg);
}
static SSL_CTX *sctx, *cctx;

#define CHECK(c, ...) do { if (!(c)) { \
	fprintf(stderr, "fuzz-ssl: %s:%d: %s: ", __FILE__, __LINE__, #c); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); abort(); } } while (0)


static void discard(const struct bt_event *ev, void *ctx)
{
	(void)ctx;
	st_msg += ev->type == BT_EV_MSG;
	if (getenv("FUZZ_SSL_EVENTS"))
		fprintf(stderr, "fuzz-ssl: event %u fd %d dir %u off %llu len "
			"%llu\n", ev->type, ev->fd, ev->dir,
			(unsigned long long)ev->off, (unsigned long long)ev->len);
}

static char spool[] = "/tmp/fuzz_ssl.XXXXXX";

/* The spool directory and what the shim may have left in it, at exit. */
static void spool_remove(void)
{
	DIR *d = opendir(spool);
	struct dirent *e;

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
	rmdir(spool);
}

/* Before the shim's constructor: no bp-logd, a spool of our own. */
__attribute__((constructor(150))) static void fuzz_env(void)
{
	if (!mkdtemp(spool))
		abort();
	atexit(spool_remove);
	setenv("BTRACE_LOGD", "/nonexistent/fuzz_ssl.sock", 1);
	setenv("BTRACE_SPOOL", spool, 1);
	unsetenv("BTRACE_RULES");
	unsetenv("BTRACE_CONF");
	unsetenv("BTRACE_DISABLE");
	unsetenv("BTRACE_ISOLATION");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	EVP_PKEY *key;
	X509 *crt;

	(void)argc;
	(void)argv;
	signal(SIGPIPE, SIG_IGN);
	if (getenv("FUZZ_SSL_STATS"))
		atexit(stats);      /* a peer closed: EPIPE, as servers do */
	key = EVP_EC_gen("P-256");
	crt = X509_new();
	if (!key || !crt)
		abort();
	ASN1_INTEGER_set(X509_get_serialNumber(crt), 1);
	X509_gmtime_adj(X509_getm_notBefore(crt), 0);
	X509_gmtime_adj(X509_getm_notAfter(crt), 86400);
	X509_set_pubkey(crt, key);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(crt), "CN",
				   MBSTRING_ASC,
				   (const unsigned char *)"fuzz.test", -1, -1, 0);
	X509_set_issuer_name(crt, X509_get_subject_name(crt));
	if (X509_sign(crt, key, EVP_sha256()) <= 0)
		abort();
	sctx = SSL_CTX_new(TLS_server_method());
	cctx = SSL_CTX_new(TLS_client_method());
	if (SSL_CTX_use_certificate(sctx, crt) != 1 ||
	    SSL_CTX_use_PrivateKey(sctx, key) != 1)
		abort();
	SSL_CTX_set_num_tickets(sctx, 0);
	SSL_CTX_set_verify(cctx, SSL_VERIFY_NONE, NULL);
	X509_free(crt);
	EVP_PKEY_free(key);
	return 0;
}

/* ---- pairs ---------------------------------------------------------------- */

static int handshake(struct pair *p)
{
	int sdone = 0, cdone = 0;

	for (int i = 0; i < 64 && !(sdone && cdone); i++) {
		if (!cdone)
			cdone = SSL_connect(p->cli) == 1;
		if (!sdone)
			sdone = bt_ssl_handshake(p->srv, 2) == 1;
	}
	ERR_clear_error();
	return sdone && cdone;
}

static int new_sockets(struct pair *p, int k)
{
	struct bt_chan *ch;

	if (bt_socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, p->sv) < 0)
		return -1;
	ch = bt_chan_of(p->sv[0]);
	if (ch) {
		bt_mutex_lock(&ch->mu);
		bt_chan_attach(ch, p->sv[0], procs[k % (sizeof procs /
							sizeof *procs)],
			       BT_PH_RULE, "fuzz");
		bt_mutex_unlock(&ch->mu);
	}
	p->cli = SSL_new(cctx);
	SSL_set_fd(p->cli, p->sv[1]);
	p->open = 1;
	p->nsent = 0;
	return 0;
}

static void bind_srv(struct pair *p, int how)
{
	BIO *b;

	switch (how % 3) {
	case 0:
		bt_ssl_set_fd(p->srv, p->sv[0], 0);
		break;
	case 1:
		bt_ssl_set_fd(p->srv, p->sv[0], 1);
		bt_ssl_set_fd(p->srv, p->sv[0], 2);
		break;
	default:
		b = BIO_new_socket(p->sv[0], BIO_NOCLOSE);
		bt_ssl_set_bio(p->srv, b, b, 0);
		break;
	}
}

static void pair_close(struct pair *p, int free_srv);

/* Exactly N bytes of FD, a non-blocking socket, with read (R_SHIM: the
 * shim's) or the kernel's; 0 when they came. */
static int read_n(int fd, void *buf, size_t n, int r_shim)
{
	size_t got = 0;

	for (int i = 0; i < 64 && got < n; i++) {
		ssize_t r = r_shim ? bt_read(fd, (char *)buf + got, n - got)
				   : read(fd, (char *)buf + got, n - got);
		if (r > 0)
			got += (size_t)r;
		else if (r == 0 || errno != EAGAIN)
			break;
	}
	return got == n ? 0 : -1;
}

/* The cleartext before TLS for processor K: the traced end is the
 * server.  Returns 0, or -1 when it did not go through. */
static int cleartext_first(struct pair *p, int k)
{
	static const uint8_t ssl_request[8] = { 0, 0, 0, 8, 4, 0xd2, 0x16, 0x2f };
	static const uint8_t greeting[] =
		"\x49\x00\x00\x00\x0a" "8.0.1\x00" "\x01\x00\x00\x00"
		"abcdefgh\x00" "\x08\x8a\x21\x02\x00\x08\x00\x15"
		"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" "ijklmnopqrst\x00"
		"mysql_native_password\x00";
	static const uint8_t my_ssl[36] = { 0x20, 0, 0, 1, 0x08, 0x8a, 0x08, 0,
					    0, 0, 0, 1, 0x21 };
	uint8_t buf[128];
	const struct bt_proto_ops *o = procs[k % (sizeof procs / sizeof *procs)];

	if (o == &bt_proto_pgsql) {
		if (write(p->sv[1], ssl_request, 8) != 8 ||
		    read_n(p->sv[0], buf, 8, 1) < 0 ||
		    bt_write(p->sv[0], "S", 1) != 1 ||
		    read_n(p->sv[1], buf, 1, 0) < 0)
			return -1;
	} else if (o == &bt_proto_mysql) {
		if (bt_write(p->sv[0], greeting, sizeof greeting - 1) !=
		    (ssize_t)(sizeof greeting - 1) ||
		    read_n(p->sv[1], buf, sizeof greeting - 1, 0) < 0 ||
		    write(p->sv[1], my_ssl, sizeof my_ssl) != sizeof my_ssl ||
		    read_n(p->sv[0], buf, 4, 1) < 0 ||
		    read_n(p->sv[0], buf, 32, 1) < 0)
			return -1;
	}
	return 0;
}

static void pair_open(struct pair *p, int k, int how)
{
	if (p->open || new_sockets(p, k) < 0)
		return;
	if ((how & 4) && cleartext_first(p, k) < 0) {
		pair_close(p, 1);
		return;
	}
	p->srv = SSL_new(sctx);
	bind_srv(p, how);
	p->healthy = handshake(p);
}

/* Close what is left of P: the client, both descriptors, the server
 * session unless FREE is 0 (then it leaks, as a program may leave it). */
static void pair_close(struct pair *p, int free_srv)
{
	if (!p->open)
		return;
	if (p->srv && free_srv)
		bt_ssl_free(p->srv);
	p->srv = NULL;
	SSL_free(p->cli);
	p->cli = NULL;
	if (p->sv[0] >= 0)
		bt_close(p->sv[0]);
	close(p->sv[1]);
	p->open = 0;
	p->healthy = 0;
}

static int readable(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	return bt_poll(&pf, 1, 0) == 1 && (pf.revents & POLLIN);
}

/* ---- operations ------------------------------------------------------------- */

static void cwrite(struct pair *p, const uint8_t *d, size_t n)
{
	if (!p->open || !n || p->nsent + n > STREAM)
		return;
	if (SSL_write(p->cli, d, (int)n) == (int)n) {
		memcpy(p->sent + p->nsent, d, n);
		p->nsent += n;
	} else {
		p->healthy = 0;
	}
	ERR_clear_error();
}

static void sread(struct pair *p, size_t len, int mode)
{
	static uint8_t buf[STREAM];
	size_t got = 0;
	int r, e;

	if (!p->open || !p->srv || p->sv[0] < 0)
		return;      /* a session whose descriptor is closed is not used:
			      * its number may be another pair's now */
	if (!len)
		len = 1;
	errno = 4242;
	switch (mode & 3) {
	case 0:
		r = bt_ssl_read(p->srv, buf, (int)len);
		got = r > 0 ? (size_t)r : 0;
		break;
	case 1:
		r = bt_ssl_read_ex(p->srv, buf, len, &got);
		if (r <= 0)
			got = 0;
		break;
	case 2:
		r = bt_ssl_peek(p->srv, buf, (int)len);
		got = r > 0 ? (size_t)r : 0;
		break;
	default:
		r = bt_ssl_peek_ex(p->srv, buf, len, &got);
		if (r <= 0)
			got = 0;
		break;
	}
	e = errno;
	if (r <= 0) {
		int err = bt_ssl_get_error(p->srv, r);
		if (getenv("FUZZ_SSL_EVENTS"))
			fprintf(stderr, "fuzz-ssl: read mode %d: %d, error %d, "
				"errno %d\n", mode & 3, r, err, e);
		if (err == SSL_ERROR_WANT_READ && p->healthy)
			CHECK(e == 4242 || e == EAGAIN, "errno %d after a "
			      "WANT_READ", e);
		if (err != SSL_ERROR_WANT_READ)
			p->healthy = 0;
		ERR_clear_error();
		return;
	}
	if (getenv("FUZZ_SSL_EVENTS"))
		fprintf(stderr, "fuzz-ssl: read mode %d: %zu bytes\n", mode & 3,
			got);
	if (!p->healthy)
		return;
	CHECK(got <= len && got <= p->nsent, "got %zu of %zu, %zu sent", got,
	      len, p->nsent);
	CHECK(!memcmp(buf, p->sent, got), "the plaintext read differs from "
	      "what was sent (%zu bytes, mode %d)", got, mode & 3);
	if ((mode & 3) >= 2)
		st_peek += got;
	if ((mode & 3) < 2) {
		st_read += got;
		memmove(p->sent, p->sent + got, p->nsent - got);
		p->nsent -= got;
	}
}

static void swrite(struct pair *p, const uint8_t *d, size_t n, int ex)
{
	static uint8_t buf[STREAM];
	size_t got = 0, w = 0;
	int r;

	if (!p->open || !p->srv || p->sv[0] < 0 || !n)
		return;
	r = ex ? bt_ssl_write_ex(p->srv, d, n, &w)
	       : bt_ssl_write(p->srv, d, (int)n);
	if (ex ? r != 1 || w != n : r != (int)n) {
		p->healthy = 0;
		ERR_clear_error();
		return;
	}
	for (int i = 0; i < 64 && got < n; i++) {
		r = SSL_read(p->cli, buf + got, (int)(n - got));
		if (r > 0)
			got += (size_t)r;
		else if (SSL_get_error(p->cli, r) != SSL_ERROR_WANT_READ)
			break;
	}
	ERR_clear_error();
	if (p->healthy) {
		CHECK(got == n, "the client got %zu of %zu bytes", got, n);
		CHECK(!memcmp(buf, d, n), "the client got other bytes");
		st_back += n;
	}
}

static void rebind(struct pair *p)
{
	int fd;

	if (!p->open || !p->srv || p->sv[0] < 0)
		return;
	fd = bt_dup(p->sv[0]);
	if (fd < 0)
		return;
	bt_ssl_set_fd(p->srv, fd, 0);
	bt_close(p->sv[0]);
	p->sv[0] = fd;
}

static void clear_reuse(struct pair *p, int k, int how)
{
	SSL *s = p->srv;

	if (!p->open || !s || p->sv[0] < 0)
		return;
	bt_ssl_clear(s);
	p->srv = NULL;
	pair_close(p, 0);
	if (new_sockets(p, k) < 0) {
		bt_ssl_free(s);
		return;
	}
	p->srv = s;
	bind_srv(p, how);
	p->healthy = handshake(p);
}

static void unknown(size_t len)
{
	static uint8_t buf[256];
	SSL *s = SSL_new(sctx);
	int r;

	if (!s)
		return;
	r = bt_ssl_read(s, buf, (int)(len % sizeof buf) + 1);
	CHECK(r <= 0, "a session without a descriptor read %d bytes", r);
	(void)bt_ssl_get_error(s, r);
	(void)bt_ssl_pending(s);
	(void)bt_ssl_has_pending(s);
	r = bt_ssl_write(s, "x", 1);
	CHECK(r <= 0, "a session without a descriptor wrote %d bytes", r);
	bt_ssl_free(s);
	ERR_clear_error();
}

static void check_ready(struct pair *p)
{
	if (!p->open || !p->srv || !p->healthy || !p->nsent || p->sv[0] < 0)
		return;
	st_ready++;
	CHECK(readable(p->sv[0]) || SSL_has_pending(p->srv),
	      "%zu bytes sent, not read, and the descriptor is not readable",
	      p->nsent);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	size_t pos = 0;
	int steps = 0;

	while (pos < n && steps++ < 64) {
		uint8_t op = d[pos] % 12;
		struct pair *p = &P[d[pos] / 12 % NPAIR];
		uint8_t a = pos + 1 < n ? d[pos + 1] : 0;
		uint8_t b = pos + 2 < n ? d[pos + 2] : 0;
		size_t len;

		pos++;
		switch (op) {
		case 0:
			pair_open(p, a, b);
			pos += 2;
			break;
		case 1:
		case 3:
			len = a;
			pos++;
			if (len > n - (pos < n ? pos : n))
				len = n - (pos < n ? pos : n);
			if (op == 1)
				cwrite(p, d + pos, len);
			else
				swrite(p, d + pos, len, b & 1);
			pos += len;
			break;
		case 2:
			sread(p, (size_t)a * 17 % 4096, b);
			pos += 2;
			break;
		case 4:
			if (p->open && p->srv) {
				bt_ssl_free(p->srv);
				p->srv = NULL;
				p->healthy = 0;
			}
			break;
		case 5:
			if (p->open && p->srv && p->sv[0] >= 0) {
				bt_ssl_shutdown(p->srv);
				p->healthy = 0;
				ERR_clear_error();
			}
			break;
		case 6:
			clear_reuse(p, a, b);
			pos += 2;
			break;
		case 7:
			rebind(p);
			break;
		case 8:
			if (p->open && p->sv[0] >= 0) {
				bt_close(p->sv[0]);
				p->sv[0] = -1;
				p->healthy = 0;
			}
			break;
		case 9:
			unknown(a);
			pos++;
			break;
		case 10:
			check_ready(p);
			break;
		default:
			if (p->open && p->srv && p->sv[0] >= 0) {
				(void)bt_ssl_pending(p->srv);
				(void)bt_ssl_has_pending(p->srv);
			}
			break;
		}
	}
	for (int i = 0; i < NPAIR; i++)
		pair_close(&P[i], 1);
	bt_emit_test_events(discard, NULL, 1);
	ERR_clear_error();
	return 0;
}
