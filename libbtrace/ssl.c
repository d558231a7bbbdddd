/*
 * ssl.c - OpenSSL's plaintext calls (docs/libbtrace.md, "TLS").
 *
 * A channel whose descriptor an OpenSSL session (SSL *) reads and writes
 * is framed on its plaintext: SSL_read and SSL_write bytes go to the
 * channel's processor and define its offsets, reads are cut at message
 * boundaries (in.c, the library's call standing for the kernel's), and
 * the ciphertext the library moves underneath, inside an SSL_* call or in
 * a handshake outside one, passes through unframed and uncounted (in.c,
 * out.c).  The session's descriptor is found when it is bound
 * (SSL_set_fd, SSL_set_bio ...) or first used, with SSL_get_rfd and
 * SSL_get_wfd: they follow the BIO chain to the first descriptor BIO, so
 * a library's own socket BIO (libpq, the PostgreSQL server) is found too.
 * A session with no descriptor (memory BIOs: Python's asyncio, a program
 * that moves the ciphertext itself) passes through; its socket carries
 * TLS records, which the sniffer names unreadable (TLS inside the
 * program, counted by bp-run's line).
 *
 * libssl is never linked: sessions are opaque pointers, the real
 * functions are bound when first called (real.h; a library loaded
 * RTLD_LOCAL, as PHP loads libpq, is found by its soname), so a program
 * without libssl never runs any of this.  The constants used are
 * OpenSSL 3's, stable since 1.0: SSL_ERROR_WANT_READ 2.
 *
 * Read-until-WANT_READ loops: where a plain read would get EAGAIN once
 * (in.c), SSL_read returns -1 (SSL_read_ex 0), errno and the error queue
 * untouched, and SSL_get_error answers SSL_ERROR_WANT_READ for that
 * session in that thread until the thread's next SSL_* call.
 *
 * Sessions are remembered in a fixed direct-mapped table keyed by the
 * SSL pointer (no allocation): its descriptors, refreshed whenever a
 * binding call, SSL_clear or SSL_free touches the session, and looked up
 * again on a miss.  A session without a descriptor is not remembered (its
 * BIO may be given one later): it is looked up at each call.  The
 * handshake calls (SSL_connect, SSL_accept, SSL_do_handshake) bind the
 * descriptors before the first ciphertext moves.
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

/*
 * Bind *SLOT to libssl's NAME: the next definition after the shim, else
 * libssl.so.3 if some library loaded it with RTLD_LOCAL (RTLD_NEXT only
 * searches the global scope).  NULL if neither has it.
 */
static __attribute__((noinline)) void *ssl_bind(void **slot, const char *name)
{
	void *p = bt_real_bind_one(slot, name), *h;

	if (p)
		return p;
	h = REAL(dlopen)(LIBSSL_SONAME, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return NULL;
	p = dlsym(h, name);       /* the handle is kept: libssl stays */
	if (p)
		__atomic_store_n(slot, p, __ATOMIC_RELAXED);
	return p;
}

#define SREAL(name) \
	({ __typeof__(bt_real.name) f_ = \
		   __atomic_load_n(&bt_real.name, __ATOMIC_RELAXED); \
	   if (__builtin_expect(!f_, 0)) \
		   f_ = (__typeof__(f_))ssl_bind((void **)&bt_real.name, \
						 #name); \
	   f_; })

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
	void *p = __atomic_load_n(&fns[i], __ATOMIC_RELAXED), *h;

	if (p)
		return p;
	p = dlsym(RTLD_NEXT, fn_names[i]);
	if (!p) {
		h = REAL(dlopen)(i >= F_MARK ? LIBCRYPTO_SONAME : LIBSSL_SONAME,
				 RTLD_LAZY | RTLD_NOLOAD);
		p = h ? dlsym(h, fn_names[i]) : NULL;
	}
	if (p)
		__atomic_store_n(&fns[i], p, __ATOMIC_RELAXED);
	return p;
}

/*
 * SSL's descriptor for reading (WR 0) or writing, -1 none.  Never touches
 * the thread's OpenSSL error queue (the program reads it after its own
 * calls): no BIO yet (SSL_set_bio sets one, then the other) is asked no
 * further, and what SSL_get_rfd might push is popped.
 */
static int ssl_fd(const void *ssl, int wr)
{
	void *(*bio)(const void *) = (void *(*)(const void *))fn(wr ? F_WBIO : F_RBIO);
	int (*get)(const void *) = (int (*)(const void *))fn(wr ? F_WFD : F_RFD);
	int (*mark)(void) = (int (*)(void))fn(F_MARK);
	int (*pop)(void) = (int (*)(void))fn(F_POP);
	int fd;

	if (!bio || !get || !bio(ssl))
		return -1;
	if (mark && pop)
		mark();       /* 0 and no mark when the queue is empty: then */
	fd = get(ssl);
	if (mark && pop)
		pop();        /* ... pops all, back to empty */
	return fd;
}

/* ---- the session table ------------------------------------------------- */

/*
 * Open addressing keyed by the SSL pointer: a session lives in one of the
 * NPROBE slots after its hash; SSL_free leaves a tombstone.  A session
 * found by SSL_get_rfd is only a cache (a miss asks again); a session
 * whose descriptor was learned (below) is not, so a full neighbourhood
 * evicts a cached one first.
 */
#define NSESS  16384
#define NPROBE 16
#define GONE   ((const void *)1)

struct sess {
	const void *ssl;
	uint64_t    fds;                /* rfd | wfd << 32 */
	uint32_t    learnt;             /* learned, not asked of the BIO */
};
static struct sess sessions[NSESS];

static unsigned sess_hash(const void *ssl)
{
	uintptr_t h = (uintptr_t)ssl;

	h ^= h >> 17;
	h *= 0x9e3779b97f4a7c15ull;
	return (unsigned)(h >> 40) % NSESS;
}

static struct sess *sess_find(const void *ssl)
{
	unsigned h = sess_hash(ssl);

	for (unsigned i = 0; i < NPROBE; i++) {
		struct sess *s = &sessions[(h + i) % NSESS];
		const void *k = __atomic_load_n(&s->ssl, __ATOMIC_ACQUIRE);
		if (k == ssl)
			return s;
		if (!k)
			return NULL;
	}
	return NULL;
}

static void sess_forget(const void *ssl)
{
	struct sess *s = sess_find(ssl);

	if (s)
		__atomic_store_n(&s->ssl, GONE, __ATOMIC_RELEASE);
}

/* Remember SSL's descriptors (RFD, WFD; LEARNT: see bt_ssl_learn). */
static void sess_put(const void *ssl, int rfd, int wfd, int learnt)
{
	unsigned h = sess_hash(ssl);
	struct sess *s = sess_find(ssl), *victim = NULL;

	for (unsigned i = 0; !s && i < NPROBE; i++) {
		struct sess *t = &sessions[(h + i) % NSESS];
		const void *k = __atomic_load_n(&t->ssl, __ATOMIC_ACQUIRE);
		if (!k || k == GONE)
			s = t;
		else if (!victim && !__atomic_load_n(&t->learnt,
						      __ATOMIC_RELAXED))
			victim = t;
	}
	if (!s)
		s = victim ? victim : &sessions[h];
	__atomic_store_n(&s->ssl, GONE, __ATOMIC_RELEASE);
	__atomic_store_n(&s->fds, (uint64_t)(uint32_t)rfd |
			 (uint64_t)(uint32_t)wfd << 32, __ATOMIC_RELEASE);
	__atomic_store_n(&s->learnt, (uint32_t)learnt, __ATOMIC_RELEASE);
	__atomic_store_n(&s->ssl, ssl, __ATOMIC_RELEASE);
}

/* Was SSL's descriptor learned from its handshake (bt_ssl_learn)? */
static int sess_learnt(const void *ssl)
{
	struct sess *s = sess_find(ssl);

	return s && __atomic_load_n(&s->learnt, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&s->ssl, __ATOMIC_ACQUIRE) == ssl;
}

/* The session's descriptor for reading (WR 0) or writing, -1 none. */
static int sess_fd(const void *ssl, int wr)
{
	struct sess *s = sess_find(ssl);
	uint64_t f;
	int rfd, wfd, e;

	if (s) {
		f = __atomic_load_n(&s->fds, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&s->ssl, __ATOMIC_ACQUIRE) == ssl)
			return (int)(int32_t)(uint32_t)(wr ? f >> 32 : f);
	}
	e = errno;
	rfd = ssl_fd(ssl, 0);
	wfd = ssl_fd(ssl, 1);
	errno = e;
	if (rfd < 0 && wfd < 0)
		return -1;      /* not remembered: a BIO may get its fd later */
	sess_put(ssl, rfd, wfd, 0);
	return wr ? wfd : rfd;
}

/*
 * The channel that SSL's descriptor for reading (WR 0) or writing is,
 * bound to the session and read on its plaintext; NULL when there is
 * none (no descriptor, no channel, dark, paused).  *FD its descriptor.
 * Inside bt_enter.
 */
static struct bt_chan *sess_chan(const void *ssl, int wr, int *fdp)
{
	struct bt_chan *ch;
	uintptr_t w;
	int fd = sess_fd(ssl, wr), e, ok;

	*fdp = fd;
	/* no descriptor: its socket, if any, carries TLS records, which the
	 * sniffer names */
	if (fd < 0 || bt_paused())
		return NULL;
	w = bt_fd_get(fd);
	e = errno;
	ch = BT_FD_IS_CHAN(w) ? (struct bt_chan *)w : bt_chan_of(fd);
	errno = e;
	if (!ch || ch->dark)
		return NULL;
	if (likely(ch->tls && ch->tls_ssl == ssl))
		return ch;
	bt_mutex_lock(&ch->mu);
	if (bt_fd_get(fd) != (uintptr_t)ch) {
		bt_mutex_unlock(&ch->mu);
		return NULL;
	}
	ok = bt_chan_tls_start(ch, fd, ssl);
	bt_mutex_unlock(&ch->mu);
	errno = e;
	return ok ? ch : NULL;
}

/* Bind the session's descriptors now (a binding call, before any
 * handshake moves ciphertext through them). */
static void sess_bind(const void *ssl)
{
	int fd;

	sess_forget(ssl);
	if (sess_fd(ssl, 0) >= 0)
		sess_chan(ssl, 0, &fd);
	if (sess_fd(ssl, 1) >= 0)
		sess_chan(ssl, 1, &fd);
}

/* The session whose handshake runs in this thread with no descriptor
 * known yet (bt_ssl_learn); the depth of wrapped SSL_* calls whose
 * ciphertext moves outside the shim's nesting (handshakes, shutdown). */
BT_TLS const void *bt_ssl_cur;
BT_TLS int bt_ssl_inside;

/* ---- reads --------------------------------------------------------------- */

/* The session whose last read this thread was told to retry (the
 * EAGAIN-once): SSL_get_error answers SSL_ERROR_WANT_READ for it. */
static BT_TLS const void *faked;

/*
 * The library's own read: SSL_read, SSL_read_ex (EX), SSL_peek(_ex)
 * (PEEK).  Returns the bytes (> 0), 0 at SSL_read's 0, -1 otherwise;
 * *RET what the call returned.  Called by in.c.
 */
ssize_t bt_ssl_real_read(void *ssl, void *buf, size_t len, int peek, int ex,
			 int *ret)
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

/* Has the library plaintext or records of SSL buffered? (in.c) */
int bt_ssl_buffered(void *ssl)
{
	int (*f)(const void *) = SREAL(SSL_has_pending);

	return f ? f(ssl) > 0 : SREAL(SSL_pending)(ssl) > 0;
}

/* One read wrapper for the four: the library's return value (EX: 1/0
 * and *GOT). */
static int tls_read(void *ssl, void *buf, size_t len, int peek, int ex,
		    size_t *got)
{
	struct bt_chan *ch;
	int fd, ret = -1, fake = 0;
	ssize_t n;

	faked = NULL;
	if (!bt_enter()) {
		n = bt_ssl_real_read(ssl, buf, len, peek, ex, &ret);
		bt_leave_pass();
		goto done;
	}
	ch = sess_chan(ssl, 0, &fd);
	if (!ch) {
		n = bt_ssl_real_read(ssl, buf, len, peek, ex, &ret);
	} else {
		/* a socket learned from the handshake: a BIO of the program's
		 * own, whose callers' handling of WANT_READ is not known
		 * (apache's mod_ssl closes connections on it): no fake */
		fake = sess_learnt(ssl);
		n = bt_in_tls(ch, fd, ssl, ex, buf, len, peek, &ret, &fake);
	}
	bt_leave();
	if (fake) {
		faked = ssl;
		return ex ? 0 : -1;
	}
done:
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
static size_t held(const void *ssl)
{
	struct bt_chan *ch;
	uintptr_t w;
	int fd = sess_fd(ssl, 0);

	if (fd < 0)
		return 0;
	w = bt_fd_get(fd);
	if (!BT_FD_IS_CHAN(w))
		return 0;
	ch = (struct bt_chan *)w;
	if (!ch->tls || ch->tls_ssl != ssl)
		return 0;
	return __atomic_load_n(&ch->wr, __ATOMIC_RELAXED) -
	       __atomic_load_n(&ch->rd, __ATOMIC_RELAXED);
}

int bt_ssl_pending(const void *ssl)
{
	int n = SREAL(SSL_pending)(ssl), e = errno;
	size_t h = held(ssl);

	errno = e;
	return h > (size_t)(INT_MAX - (n > 0 ? n : 0)) ? INT_MAX : n + (int)h;
}

int bt_ssl_has_pending(const void *ssl)
{
	int n = SREAL(SSL_has_pending)(ssl), e = errno;

	if (!n)
		n = held(ssl) > 0;
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

/* One write wrapper for both: the library's return value. */
static int tls_write(void *ssl, const void *buf, size_t len, int ex,
		     size_t *done)
{
	size_t w = 0;
	ssize_t n;
	int fd, r;

	faked = NULL;
	if (!bt_enter()) {
		r = ex ? SREAL(SSL_write_ex)(ssl, buf, len, done)
		       : SREAL(SSL_write)(ssl, buf, (int)len);
		bt_leave_pass();
		return r;
	}
	if (!sess_chan(ssl, 1, &fd)) {
		r = ex ? SREAL(SSL_write_ex)(ssl, buf, len, done)
		       : SREAL(SSL_write)(ssl, buf, (int)len);
		bt_leave();
		return r;
	}
	bt_out_tls_begin(fd);
	if (ex) {
		r = SREAL(SSL_write_ex)(ssl, buf, len, &w);
		if (done)
			*done = w;
		n = r > 0 ? (ssize_t)w : 0;
	} else {
		r = SREAL(SSL_write)(ssl, buf, (int)len);
		n = r;
	}
	bt_out_tls_done(fd, buf, n);
	bt_leave();
	return r;
}

int bt_ssl_write(void *ssl, const void *buf, int num)
{
	return tls_write(ssl, buf, num > 0 ? (size_t)num : 0, 0, NULL);
}

int bt_ssl_write_ex(void *ssl, const void *buf, size_t num, size_t *done)
{
	return tls_write(ssl, buf, num, 1, done);
}

ssize_t bt_ssl_sendfile(void *ssl, int fd, off_t off, size_t size, int flags)
{
	ssize_t n;
	int sfd;

	faked = NULL;
	if (!bt_enter()) {
		n = SREAL(SSL_sendfile)(ssl, fd, off, size, flags);
		bt_leave_pass();
		return n;
	}
	if (!sess_chan(ssl, 1, &sfd)) {
		n = SREAL(SSL_sendfile)(ssl, fd, off, size, flags);
		bt_leave();
		return n;
	}
	bt_out_tls_begin(sfd);
	n = SREAL(SSL_sendfile)(ssl, fd, off, size, flags);
	bt_out_tls_unseen(sfd, n);
	bt_leave();
	return n;
}

static int real_handshake(void *ssl, int which)
{
	return which == 1 ? SREAL(SSL_connect)(ssl) :
	       which == 2 ? SREAL(SSL_accept)(ssl) : SREAL(SSL_do_handshake)(ssl);
}

/* ---- binding and the session's life ----------------------------------------- */

/* After a binding call: the session's descriptors are looked up again and
 * their channels read on the plaintext from now on. */
static BT_TLS int binding;    /* inside a binding call of this thread */

static void bound(void *ssl)
{
	int e = errno;

	if (bt_enter()) {
		sess_bind(ssl);
		bt_leave();
	} else {
		sess_forget(ssl);
		bt_leave_pass();
	}
	errno = e;
}

/* The binding calls: libssl's SSL_set_fd calls SSL_set_bio, which calls
 * SSL_set0_rbio and SSL_set0_wbio, through the shim when libssl binds its
 * own exported names: only the outermost looks the session up, once its
 * BIOs are both set. */
int bt_ssl_set_fd(void *ssl, int fd, int which)
{
	int r;

	binding++;
	r = which == 0 ? SREAL(SSL_set_fd)(ssl, fd) :
	    which == 1 ? SREAL(SSL_set_rfd)(ssl, fd) :
			 SREAL(SSL_set_wfd)(ssl, fd);
	if (--binding == 0)
		bound(ssl);
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
		bound(ssl);
}

/*
 * The handshake calls: the session's descriptors are bound before the
 * first ciphertext moves (a program may give its BIO the descriptor after
 * SSL_set_bio, as libpq and the PostgreSQL server do).
 */
int bt_ssl_handshake(void *ssl, int which)
{
	int e = errno, fd, r;

	faked = NULL;
	if (!bt_enter()) {
		bt_leave_pass();
		return real_handshake(ssl, which);
	}
	if (bt_paused() || sess_fd(ssl, 0) >= 0 || sess_fd(ssl, 1) >= 0) {
		sess_chan(ssl, 0, &fd);
		sess_chan(ssl, 1, &fd);
		bt_leave();
		errno = e;
		bt_ssl_inside++;
		r = real_handshake(ssl, which);
		bt_ssl_inside--;
		return r;
	}
	/* No descriptor BIO (curl's own BIO): the handshake runs inside the
	 * shim, so the transport's I/O it makes is nested, and the first
	 * socket it moves ciphertext on is the session's (bt_ssl_learn). */
	errno = e;
	bt_ssl_cur = ssl;
	r = real_handshake(ssl, which);
	bt_ssl_cur = NULL;
	bt_leave();
	return r;
}

/*
 * A nested read or write on FD (in.c, out.c) while a handshake of a
 * session with no descriptor BIO runs in this thread: FD carries that
 * session's ciphertext.  Remembered (not evicted by the sessions asked of
 * their BIO) and its channel read on the plaintext from now on.  A stream
 * channel only, and not one another session already reads.
 */
void bt_ssl_learn(int fd)
{
	const void *ssl = bt_ssl_cur;
	uintptr_t w = bt_fd_get(fd);
	struct bt_chan *ch;
	int e = errno;

	bt_ssl_cur = NULL;
	if (!ssl || !BT_FD_IS_CHAN(w))
		return;
	ch = (struct bt_chan *)w;
	if (ch->transport != BT_TR_STREAM || ch->dark ||
	    (ch->tls && ch->tls_ssl != ssl))
		return;
	sess_put(ssl, fd, fd, 1);
	bt_mutex_lock(&ch->mu);
	if (bt_fd_get(fd) == (uintptr_t)ch)
		bt_chan_tls_start(ch, fd, ssl);
	bt_mutex_unlock(&ch->mu);
	errno = e;
}

int bt_ssl_shutdown(void *ssl)
{
	int r;

	faked = NULL;
	bt_ssl_inside++;
	r = SREAL(SSL_shutdown)(ssl);
	bt_ssl_inside--;
	return r;
}

int bt_ssl_clear(void *ssl)
{
	int e = errno;

	sess_forget(ssl);
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
	sess_forget(ssl);
	errno = e;
	SREAL(SSL_free)(ssl);
}
