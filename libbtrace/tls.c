/*
 * tls.c - what the TLS libraries' wrappers share (tls.h; docs/libbtrace.md,
 * "TLS").
 *
 * A channel whose descriptor a TLS session reads and writes is framed on
 * its plaintext: the library's plaintext reads and writes go to the
 * channel's processor and define its offsets, reads are cut at message
 * boundaries (in.c, the library's call standing for the kernel's), and
 * the ciphertext the library moves underneath, inside a wrapped call or
 * in a handshake outside one, passes through unframed and uncounted
 * (in.c, out.c).  The library (ssl.c, gnutls.c) says how to read, what it
 * buffers and which descriptor a session has (struct bt_tls_lib).
 *
 * Sessions are remembered in a fixed direct-mapped table keyed by the
 * session pointer (no allocation): its descriptors, refreshed whenever a
 * binding call or the session's end touches it, and asked of the library
 * again on a miss.  A session without a descriptor is not remembered
 * (it may be given one later) unless its kind is (BT_TLS_LEARNT,
 * BT_TLS_CUSTOM).  The handshake binds the descriptors before the first
 * ciphertext moves; with none known, the handshake runs inside the shim
 * and the first socket its transport I/O touches is learned.
 */
#include "config.h"

#include <dlfcn.h>

#include "bt.h"

/* ---- the real functions ------------------------------------------------ */

__attribute__((noinline)) void *bt_tls_bind(void **slot, const char *name,
					    const char *soname)
{
	void *p = bt_real_bind_one(slot, name), *h;

	if (p)
		return p;
	h = REAL(dlopen)(soname, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return NULL;
	p = dlsym(h, name);       /* the handle is kept: the library stays */
	if (p)
		__atomic_store_n(slot, p, __ATOMIC_RELAXED);
	return p;
}

void *bt_tls_sym(void **slot, const char *name, const char *soname)
{
	void *p = __atomic_load_n(slot, __ATOMIC_RELAXED), *h;

	if (p)
		return p;
	p = dlsym(RTLD_NEXT, name);
	if (!p) {
		h = REAL(dlopen)(soname, RTLD_LAZY | RTLD_NOLOAD);
		p = h ? dlsym(h, name) : NULL;
	}
	if (p)
		__atomic_store_n(slot, p, __ATOMIC_RELAXED);
	return p;
}

/* ---- the session table ------------------------------------------------- */

/*
 * Open addressing keyed by the session pointer: a session lives in one of
 * the NPROBE slots after its hash; forgetting leaves a tombstone.  A
 * session asked of its library is only a cache (a miss asks again); one
 * with flags is not, so a full neighbourhood evicts a cached one first.
 */
#define NSESS  16384
#define NPROBE 16
#define GONE   ((const void *)1)

struct sess {
	const void *s;
	uint64_t    fds;                /* rfd | wfd << 32 */
	uint32_t    flags;              /* BT_TLS_* */
};
static struct sess sessions[NSESS];

static unsigned sess_hash(const void *s)
{
	uintptr_t h = (uintptr_t)s;

	h ^= h >> 17;
	h *= 0x9e3779b97f4a7c15ull;
	return (unsigned)(h >> 40) % NSESS;
}

static struct sess *sess_find(const void *s)
{
	unsigned h = sess_hash(s);

	for (unsigned i = 0; i < NPROBE; i++) {
		struct sess *t = &sessions[(h + i) % NSESS];
		const void *k = __atomic_load_n(&t->s, __ATOMIC_ACQUIRE);
		if (k == s)
			return t;
		if (!k)
			return NULL;
	}
	return NULL;
}

void bt_tls_forget(const void *s)
{
	struct sess *t = sess_find(s);

	if (t)
		__atomic_store_n(&t->s, GONE, __ATOMIC_RELEASE);
}

void bt_tls_put(const void *s, int rfd, int wfd, unsigned flags)
{
	unsigned h = sess_hash(s);
	struct sess *t = sess_find(s), *victim = NULL;

	for (unsigned i = 0; !t && i < NPROBE; i++) {
		struct sess *u = &sessions[(h + i) % NSESS];
		const void *k = __atomic_load_n(&u->s, __ATOMIC_ACQUIRE);
		if (!k || k == GONE)
			t = u;
		else if (!victim && !__atomic_load_n(&u->flags,
						      __ATOMIC_RELAXED))
			victim = u;
	}
	if (!t)
		t = victim ? victim : &sessions[h];
	__atomic_store_n(&t->s, GONE, __ATOMIC_RELEASE);
	__atomic_store_n(&t->fds, (uint64_t)(uint32_t)rfd |
			 (uint64_t)(uint32_t)wfd << 32, __ATOMIC_RELEASE);
	__atomic_store_n(&t->flags, (uint32_t)flags, __ATOMIC_RELEASE);
	__atomic_store_n(&t->s, s, __ATOMIC_RELEASE);
}

unsigned bt_tls_flags(const void *s)
{
	struct sess *t = sess_find(s);
	unsigned f;

	if (!t)
		return 0;
	f = __atomic_load_n(&t->flags, __ATOMIC_RELAXED);
	return __atomic_load_n(&t->s, __ATOMIC_ACQUIRE) == s ? f : 0;
}

int bt_tls_fd(const struct bt_tls_lib *lib, const void *s, int wr)
{
	struct sess *t = sess_find(s);
	uint64_t f;
	int rfd, wfd;

	if (t) {
		f = __atomic_load_n(&t->fds, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&t->s, __ATOMIC_ACQUIRE) == s)
			return (int)(int32_t)(uint32_t)(wr ? f >> 32 : f);
	}
	rfd = lib->fd(s, 0);
	wfd = lib->fd(s, 1);
	if (rfd < 0 && wfd < 0)
		return -1;      /* not remembered: it may get one later */
	bt_tls_put(s, rfd, wfd, 0);
	return wr ? wfd : rfd;
}

/* ---- a channel bound to a session ---------------------------------------- */

struct bt_chan *bt_tls_chan(const struct bt_tls_lib *lib, const void *s,
			    int wr, int *fdp)
{
	struct bt_chan *ch;
	uintptr_t w;
	int fd = bt_tls_fd(lib, s, wr), e, ok;

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
	if (likely(ch->tls && ch->tls_ssl == s))
		return ch;
	bt_mutex_lock(&ch->mu);
	if (bt_fd_get(fd) != (uintptr_t)ch) {
		bt_mutex_unlock(&ch->mu);
		return NULL;
	}
	ok = bt_chan_tls_start(ch, fd, s);
	bt_mutex_unlock(&ch->mu);
	errno = e;
	return ok ? ch : NULL;
}

/* Bind S's descriptors now (a binding call, before any handshake moves
 * ciphertext through them). */
static void bind_now(const struct bt_tls_lib *lib, const void *s)
{
	int fd;

	if (bt_tls_fd(lib, s, 0) >= 0)
		bt_tls_chan(lib, s, 0, &fd);
	if (bt_tls_fd(lib, s, 1) >= 0)
		bt_tls_chan(lib, s, 1, &fd);
}

void bt_tls_bound(const struct bt_tls_lib *lib, const void *s)
{
	int e = errno;

	bt_tls_forget(s);
	if (bt_enter()) {
		bind_now(lib, s);
		bt_leave();
	} else {
		bt_leave_pass();
	}
	errno = e;
}

size_t bt_tls_held(const struct bt_tls_lib *lib, const void *s)
{
	struct bt_chan *ch;
	uintptr_t w;
	int e = errno, fd = bt_tls_fd(lib, s, 0);

	errno = e;
	if (fd < 0)
		return 0;
	w = bt_fd_get(fd);
	if (!BT_FD_IS_CHAN(w))
		return 0;
	ch = (struct bt_chan *)w;
	if (!ch->tls || ch->tls_ssl != s)
		return 0;
	return __atomic_load_n(&ch->wr, __ATOMIC_RELAXED) -
	       __atomic_load_n(&ch->rd, __ATOMIC_RELAXED);
}

/* ---- reads, writes, handshakes --------------------------------------------- */

BT_TLS const void *bt_tls_cur;
BT_TLS int bt_tls_inside;

ssize_t bt_tls_read(const struct bt_tls_lib *lib, void *s, void *buf,
		    size_t len, int peek, int ex, int *ret, int *fake)
{
	struct bt_chan *ch;
	ssize_t n;
	int fd;

	*ret = -1;
	*fake = 0;
	if (!bt_enter()) {
		n = lib->read(s, buf, len, peek, ex, ret);
		bt_leave_pass();
		return n;
	}
	ch = bt_tls_chan(lib, s, 0, &fd);
	if (!ch) {
		n = lib->read(s, buf, len, peek, ex, ret);
	} else {
		/* a socket learned from the handshake: a transport of the
		 * program's own, whose callers' handling of "try again" is
		 * not known (apache's mod_ssl closes connections on
		 * OpenSSL's WANT_READ): no fake */
		*fake = (bt_tls_flags(s) & BT_TLS_LEARNT) != 0;
		n = bt_in_tls(ch, fd, lib, s, ex, buf, len, peek, ret, fake);
	}
	bt_leave();
	return n;
}

void bt_tls_write(const struct bt_tls_lib *lib, void *s, const void *buf,
		  size_t len, bt_tls_call call, void *ctx, int unseen)
{
	ssize_t n;
	int fd;

	(void)len;
	if (!bt_enter()) {
		call(ctx);
		bt_leave_pass();
		return;
	}
	if (!bt_tls_chan(lib, s, 1, &fd)) {
		call(ctx);
		bt_leave();
		return;
	}
	bt_out_tls_begin(fd);
	n = call(ctx);
	if (unseen || (n > 0 && (!buf || (size_t)n > len)))
		/* a file's bytes, or a retry that names no buffer (GnuTLS's
		 * NULL, 0 after GNUTLS_E_AGAIN): counted, not seen */
		bt_out_tls_unseen(fd, n);
	else
		bt_out_tls_done(fd, buf, n);
	bt_leave();
}

void bt_tls_handshake(const struct bt_tls_lib *lib, void *s, bt_tls_call call,
		      void *ctx)
{
	int e = errno, fd;

	if (!bt_enter()) {
		bt_leave_pass();
		call(ctx);
		return;
	}
	if (bt_paused() || bt_tls_fd(lib, s, 0) >= 0 ||
	    bt_tls_fd(lib, s, 1) >= 0) {
		bt_tls_chan(lib, s, 0, &fd);
		bt_tls_chan(lib, s, 1, &fd);
		bt_leave();
		errno = e;
		bt_tls_inside++;
		call(ctx);
		bt_tls_inside--;
		return;
	}
	/* No descriptor (a BIO or push/pull functions of the program's
	 * own): the handshake runs inside the shim, so the transport's I/O it
	 * makes is nested, and the first socket it moves ciphertext on is
	 * the session's (bt_tls_learn). */
	errno = e;
	bt_tls_cur = s;
	call(ctx);
	bt_tls_cur = NULL;
	bt_leave();
}

/*
 * A nested read or write on FD (in.c, out.c) while a handshake of a
 * session with no descriptor runs in this thread: the first socket it
 * touches carries that session's ciphertext (files and pipes, a log the
 * program's transport functions or callbacks write, are passed over).
 * Remembered (not evicted by the sessions asked of their library) and its
 * channel read on the plaintext from now on.  A stream socket only, and
 * not one another session already reads.
 */
void bt_tls_learn(int fd)
{
	const void *s = bt_tls_cur;
	uintptr_t w = bt_fd_get(fd);
	struct bt_chan *ch;
	int e = errno;

	if (!s || !BT_FD_IS_CHAN(w) ||
	    ((struct bt_chan *)w)->kind == BT_CK_PIPE)
		return;
	bt_tls_cur = NULL;
	ch = (struct bt_chan *)w;
	if (ch->transport != BT_TR_STREAM || ch->dark ||
	    (ch->tls && ch->tls_ssl != s))
		return;
	bt_tls_put(s, fd, fd, bt_tls_flags(s) | BT_TLS_LEARNT);
	bt_mutex_lock(&ch->mu);
	if (bt_fd_get(fd) == (uintptr_t)ch)
		bt_chan_tls_start(ch, fd, s);
	bt_mutex_unlock(&ch->mu);
	errno = e;
}
