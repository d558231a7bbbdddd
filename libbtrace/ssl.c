/*
 * ssl.c - OpenSSL's plaintext calls (docs/libbtrace.md, "TLS").
 *
 * The sessions (SSL *) and their channels are tls.c's: SSL_read and
 * SSL_write bytes are the channel's plaintext.  A session's descriptor is
 * found when it is bound (SSL_set_fd, SSL_set_bio ...) or first used,
 * with SSL_get_rfd and SSL_get_wfd: they follow the BIO chain to the
 * first descriptor BIO, so a library's own socket BIO (libpq, the
 * PostgreSQL server) is found too.  A session with no descriptor BIO
 * (curl's own BIO) has it learned from its handshake (tls.c).  A session
 * with no descriptor at all (memory BIOs: Python's asyncio, a program
 * that moves the ciphertext itself) passes through; its socket carries
 * TLS records, which the sniffer names unreadable (TLS inside the
 * program, counted by bp-run's line).
 *
 * libssl is never linked: sessions are opaque pointers, the real
 * functions are bound when first called (a library loaded RTLD_LOCAL, as
 * PHP loads libpq, is found by its soname), so a program without libssl
 * never runs any of this.  The constants used are OpenSSL 3's, stable
 * since 1.0: SSL_ERROR_WANT_READ 2.
 *
 * Read-until-WANT_READ loops: where a plain read would get EAGAIN once
 * (in.c), SSL_read returns -1 (SSL_read_ex 0), errno and the error queue
 * untouched, and SSL_get_error answers SSL_ERROR_WANT_READ for that
 * session in that thread until the thread's next SSL_* call.
 */
#include "config.h"

#include <dlfcn.h>
#include <limits.h>
#include <sys/socket.h>

#include "bt.h"
#include "impl.h"

#define SSL_ERROR_WANT_READ 2      /* <openssl/ssl.h>, OpenSSL 1.0 .. 3 */
#define LIBSSL_SONAME "libssl.so.3"

/* ---- the real functions ------------------------------------------------ */

#define SREAL(name) BT_TLS_REAL(LIBSSL_SONAME, name)

/*
 * Not wrapped, bound here: SSL_get_rbio, SSL_get_wbio, SSL_get_rfd,
 * SSL_get_wfd (libssl), ERR_set_mark and ERR_pop_to_mark (libcrypto).
 * NULL when the library has none.
 */
#define LIBCRYPTO_SONAME "libcrypto.so.3"

enum { F_RBIO, F_WBIO, F_RFD, F_WFD, F_MARK, F_POP, NFN };
static void *fns[NFN];
static const char *const fn_names[NFN] = {
	"SSL_get_rbio", "SSL_get_wbio", "SSL_get_rfd", "SSL_get_wfd",
	"ERR_set_mark", "ERR_pop_to_mark"
};

static void *fn(int i)
{
	return bt_tls_sym(&fns[i], fn_names[i],
			  i >= F_MARK ? LIBCRYPTO_SONAME : LIBSSL_SONAME);
}

/*
 * SSL's descriptor for reading (WR 0) or writing, -1 none.  Never touches
 * the thread's OpenSSL error queue (the program reads it after its own
 * calls) nor errno: no BIO yet (SSL_set_bio sets one, then the other) is
 * asked no further, and what SSL_get_rfd might push is popped.
 */
static int ssl_fd(const void *ssl, int wr)
{
	void *(*bio)(const void *) = (void *(*)(const void *))fn(wr ? F_WBIO : F_RBIO);
	int (*get)(const void *) = (int (*)(const void *))fn(wr ? F_WFD : F_RFD);
	int (*mark)(void) = (int (*)(void))fn(F_MARK);
	int (*pop)(void) = (int (*)(void))fn(F_POP);
	int fd, e = errno;

	if (!bio || !get || !bio(ssl)) {
		errno = e;
		return -1;
	}
	if (mark && pop)
		mark();       /* 0 and no mark when the queue is empty: then */
	fd = get(ssl);
	if (mark && pop)
		pop();        /* ... pops all, back to empty */
	errno = e;
	return fd;
}

/* The library's own read: SSL_read, SSL_read_ex (EX), SSL_peek(_ex)
 * (PEEK) (struct bt_tls_lib). */
static ssize_t ssl_real_read(void *ssl, void *buf, size_t len, int peek,
			     int ex, int *ret)
{
	size_t got = 0;
	int r;

	if (ex) {
		r = peek ? SREAL(SSL_peek_ex)(ssl, buf, len, &got)
			 : SREAL(SSL_read_ex)(ssl, buf, len, &got);
		*ret = r;
		return r > 0 ? (ssize_t)got : -1;
	}
	if (len > INT_MAX)
		len = INT_MAX;
	r = peek ? SREAL(SSL_peek)(ssl, buf, (int)len)
		 : SREAL(SSL_read)(ssl, buf, (int)len);
	*ret = r;
	return r > 0 ? r : r == 0 ? 0 : -1;
}

/* Has the library plaintext or records of SSL buffered? */
static int ssl_buffered(void *ssl)
{
	int (*f)(const void *) = SREAL(SSL_has_pending);

	return f ? f(ssl) > 0 : SREAL(SSL_pending)(ssl) > 0;
}

static const struct bt_tls_lib openssl = {
	.read = ssl_real_read, .buffered = ssl_buffered, .fd = ssl_fd,
};

/* ---- reads --------------------------------------------------------------- */

/* The session whose last read this thread was told to retry (the
 * EAGAIN-once): SSL_get_error answers SSL_ERROR_WANT_READ for it. */
static BT_TLS const void *faked;

/* One read wrapper for the four: the library's return value (EX: 1/0
 * and *GOT). */
static int tls_read(void *ssl, void *buf, size_t len, int peek, int ex,
		    size_t *got)
{
	int ret, fake;
	ssize_t n;

	faked = NULL;
	n = bt_tls_read(&openssl, ssl, buf, len, peek, ex, &ret, &fake);
	if (fake) {
		faked = ssl;
		return ex ? 0 : -1;
	}
	if (ex) {
		if (got)
			*got = n > 0 ? (size_t)n : 0;
		return n > 0 ? 1 : ret;
	}
	return n > 0 ? (int)n : ret;
}

int bt_ssl_read(void *ssl, void *buf, int num)
{
	return tls_read(ssl, buf, num > 0 ? (size_t)num : 0, 0, 0, NULL);
}

int bt_ssl_read_ex(void *ssl, void *buf, size_t num, size_t *got)
{
	return tls_read(ssl, buf, num, 0, 1, got);
}

int bt_ssl_peek(void *ssl, void *buf, int num)
{
	return tls_read(ssl, buf, num > 0 ? (size_t)num : 0, 1, 0, NULL);
}

int bt_ssl_peek_ex(void *ssl, void *buf, size_t num, size_t *got)
{
	return tls_read(ssl, buf, num, 1, 1, got);
}

/* SSL_pending: the library's buffered plaintext, plus what the shim holds
 * of the session's channel (bytes already taken from the library). */
int bt_ssl_pending(const void *ssl)
{
	int n = SREAL(SSL_pending)(ssl), e = errno;
	size_t h = bt_tls_held(&openssl, ssl);

	errno = e;
	return h > (size_t)(INT_MAX - (n > 0 ? n : 0)) ? INT_MAX : n + (int)h;
}

int bt_ssl_has_pending(const void *ssl)
{
	int n = SREAL(SSL_has_pending)(ssl), e = errno;

	if (!n)
		n = bt_tls_held(&openssl, ssl) > 0;
	errno = e;
	return n;
}

int bt_ssl_get_error(const void *ssl, int ret)
{
	if (ret <= 0 && faked && faked == ssl) {
		faked = NULL;
		return SSL_ERROR_WANT_READ;
	}
	return SREAL(SSL_get_error)(ssl, ret);
}

/* ---- writes ---------------------------------------------------------------- */

/* A write call of the library (bt_tls_call): its arguments, its return. */
struct wcall {
	void *ssl;
	const void *buf;
	size_t len, *done;
	int num, ex, fd, flags;
	off_t off;
	ssize_t ret;
};

static ssize_t write_call(void *ctx)
{
	struct wcall *c = ctx;
	size_t w = 0;

	if (c->ex) {
		c->ret = SREAL(SSL_write_ex)(c->ssl, c->buf, c->len, &w);
		if (c->done)
			*c->done = w;
		return c->ret > 0 ? (ssize_t)w : 0;
	}
	c->ret = SREAL(SSL_write)(c->ssl, c->buf, c->num);
	return c->ret;
}

static ssize_t sendfile_call(void *ctx)
{
	struct wcall *c = ctx;

	return c->ret = SREAL(SSL_sendfile)(c->ssl, c->fd, c->off, c->len,
					    c->flags);
}

int bt_ssl_write(void *ssl, const void *buf, int num)
{
	struct wcall c = { .ssl = ssl, .buf = buf, .num = num,
			   .len = num > 0 ? (size_t)num : 0 };

	faked = NULL;
	bt_tls_write(&openssl, ssl, buf, c.len, write_call, &c, 0);
	return (int)c.ret;
}

int bt_ssl_write_ex(void *ssl, const void *buf, size_t num, size_t *done)
{
	struct wcall c = { .ssl = ssl, .buf = buf, .len = num, .done = done,
			   .ex = 1 };

	faked = NULL;
	bt_tls_write(&openssl, ssl, buf, num, write_call, &c, 0);
	return (int)c.ret;
}

ssize_t bt_ssl_sendfile(void *ssl, int fd, off_t off, size_t size, int flags)
{
	struct wcall c = { .ssl = ssl, .len = size, .fd = fd, .off = off,
			   .flags = flags };

	faked = NULL;
	bt_tls_write(&openssl, ssl, NULL, size, sendfile_call, &c, 1);
	return c.ret;
}

/* ---- binding and the session's life ----------------------------------------- */

/* The binding calls: libssl's SSL_set_fd calls SSL_set_bio, which calls
 * SSL_set0_rbio and SSL_set0_wbio, through the shim when libssl binds its
 * own exported names: only the outermost looks the session up, once its
 * BIOs are both set. */
static BT_TLS int binding;    /* inside a binding call of this thread */

int bt_ssl_set_fd(void *ssl, int fd, int which)
{
	int r;

	binding++;
	r = which == 0 ? SREAL(SSL_set_fd)(ssl, fd) :
	    which == 1 ? SREAL(SSL_set_rfd)(ssl, fd) :
			 SREAL(SSL_set_wfd)(ssl, fd);
	if (--binding == 0)
		bt_tls_bound(&openssl, ssl);
	return r;
}

void bt_ssl_set_bio(void *ssl, void *rbio, void *wbio, int which)
{
	binding++;
	if (which == 0)
		SREAL(SSL_set_bio)(ssl, rbio, wbio);
	else if (which == 1)
		SREAL(SSL_set0_rbio)(ssl, rbio);
	else
		SREAL(SSL_set0_wbio)(ssl, wbio);
	if (--binding == 0)
		bt_tls_bound(&openssl, ssl);
}

struct hcall {
	void *ssl;
	int which, ret;
};

static ssize_t handshake_call(void *ctx)
{
	struct hcall *c = ctx;

	c->ret = c->which == 1 ? SREAL(SSL_connect)(c->ssl) :
		 c->which == 2 ? SREAL(SSL_accept)(c->ssl) :
				 SREAL(SSL_do_handshake)(c->ssl);
	return c->ret;
}

/*
 * The handshake calls: the session's descriptors are bound before the
 * first ciphertext moves (a program may give its BIO the descriptor after
 * SSL_set_bio, as libpq and the PostgreSQL server do).
 */
int bt_ssl_handshake(void *ssl, int which)
{
	struct hcall c = { .ssl = ssl, .which = which };

	faked = NULL;
	bt_tls_handshake(&openssl, ssl, handshake_call, &c);
	return c.ret;
}

int bt_ssl_shutdown(void *ssl)
{
	int r;

	faked = NULL;
	bt_tls_inside++;
	r = SREAL(SSL_shutdown)(ssl);
	bt_tls_inside--;
	return r;
}

int bt_ssl_clear(void *ssl)
{
	int e = errno;

	bt_tls_forget(ssl);
	errno = e;
	return SREAL(SSL_clear)(ssl);
}

/*
 * SSL_free: the session is forgotten.  A channel it bound stays bound
 * until its descriptor is closed (what programs do next); a new session
 * on the same descriptor takes it over with its offsets and processor.
 */
void bt_ssl_free(void *ssl)
{
	int e = errno;

	if (faked == ssl)
		faked = NULL;
	bt_tls_forget(ssl);
	errno = e;
	SREAL(SSL_free)(ssl);
}
