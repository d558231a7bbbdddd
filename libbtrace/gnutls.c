/*
 * gnutls.c - GnuTLS's plaintext calls (docs/libbtrace.md, "TLS").
 *
 * The sessions (gnutls_session_t) and their channels are tls.c's, as
 * OpenSSL's are: gnutls_record_recv and gnutls_record_send bytes are the
 * channel's plaintext, the ciphertext GnuTLS moves underneath passes
 * through uncounted.
 *
 * A session's descriptor: with GnuTLS's own transport functions the
 * transport pointers (gnutls_transport_set_int2, _ptr, _ptr2) are the
 * descriptors cast, read back with gnutls_transport_get_ptr2 when the
 * session is first used.  A session given push or pull functions of the
 * program's own (gnutls_transport_set_push_function, _pull_function,
 * _vec_push_function; not GnuTLS's own defaults, which gnutls_init
 * installs through the same setters) is remembered as such: its pointers
 * are not descriptors, and its socket is learned from the transport I/O of its
 * handshake (tls.c), or, if it moves none, the session passes through
 * and its socket's TLS records are named unreadable by the sniffer.  The
 * binding calls only forget the session's descriptors: they are looked
 * up at the next handshake or record call, when the transport is final.
 *
 * libgnutls is never linked: sessions are opaque pointers, the real
 * functions are bound when first called, so a program without libgnutls
 * never runs any of this.  The constant used is GnuTLS 3's
 * GNUTLS_E_AGAIN (-28).
 *
 * Read-until-GNUTLS_E_AGAIN loops: where a plain read would get EAGAIN
 * once (in.c), gnutls_record_recv returns GNUTLS_E_AGAIN, errno untouched;
 * the descriptor stays readable (held plaintext, and what
 * gnutls_record_check_pending counts).  Never for a socket learned from
 * the handshake (a transport of the program's own), as with OpenSSL.
 *
 * gnutls_record_recv_seq is read as gnutls_record_recv is, the record's
 * sequence number kept for the plaintext held back from it.
 *
 * Not wrapped (their plaintext is not seen; the channel's ciphertext
 * moved outside a wrapped call is handled by bt_chan_tls_unseen):
 * gnutls_record_recv_packet (zero-copy: the plaintext stays in the
 * library's packet), the early data calls.
 */
#include "config.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "bt.h"
#include "impl.h"

#define GNUTLS_E_AGAIN (-28)        /* <gnutls/gnutls.h>, GnuTLS 3 */
#define LIBGNUTLS_SONAME "libgnutls.so.30"

#define GREAL(name) BT_TLS_REAL(LIBGNUTLS_SONAME, name)

/* Not wrapped, bound here: gnutls_transport_get_ptr2. */
static void *get_ptr2;

/*
 * The session's descriptor for reading (WR 0) or writing: its transport
 * pointer, when that is a descriptor (GnuTLS's own transport; sessions
 * with the program's own are remembered BT_TLS_CUSTOM and never asked).
 * -1 when unset (GnuTLS's initial pointer is -1) or not a descriptor.
 */
static int gt_fd(const void *s, int wr)
{
	void (*get)(const void *, void **, void **) =
		(void (*)(const void *, void **, void **))
		bt_tls_sym(&get_ptr2, "gnutls_transport_get_ptr2",
			   LIBGNUTLS_SONAME);
	void *r = (void *)(intptr_t)-1, *w = r;
	intptr_t p;
	int e = errno;

	if (!get)
		return -1;
	get(s, &r, &w);
	errno = e;
	p = (intptr_t)(wr ? w : r);
	return p >= 0 && p <= INT_MAX ? (int)p : -1;
}

/*
 * gnutls_record_recv_seq also hands over the sequence number of the record
 * the plaintext came from.  Inside its wrapper the library is read with it
 * (seq_want); the number of the record last read so, with its session, is
 * kept per thread: plaintext the shim held back from that record and hands
 * over later carries the same number.
 */
static BT_TLS int seq_want, seq_got;
static BT_TLS const void *seq_sess;
static BT_TLS unsigned char seq_last[8];

static ssize_t gt_real_read(void *s, void *buf, size_t len, int peek,
			    int ex, int *ret)
{
	ssize_t r;

	(void)peek;
	(void)ex;
	if (seq_want) {
		unsigned char q[8];
		r = GREAL(gnutls_record_recv_seq)(s, buf, len, q);
		if (r > 0) {
			memcpy(seq_last, q, sizeof q);
			seq_sess = s;
			seq_got = 1;
		}
	} else {
		r = GREAL(gnutls_record_recv)(s, buf, len);
		if (r > 0 && seq_sess == s)
			seq_sess = NULL;   /* a record of unknown number */
	}
	*ret = r > INT_MAX ? INT_MAX : (int)r;
	return r > 0 ? r : r == 0 ? 0 : -1;
}

static int gt_buffered(void *s)
{
	return GREAL(gnutls_record_check_pending)(s) > 0;
}

static const struct bt_tls_lib gnutls = {
	.read = gt_real_read, .buffered = gt_buffered, .fd = gt_fd,
};

/* ---- reads --------------------------------------------------------------- */

ssize_t bt_gnutls_record_recv(void *s, void *buf, size_t len)
{
	int ret, fake;
	ssize_t n = bt_tls_read(&gnutls, s, buf, len, 0, 0, &ret, &fake);

	if (fake)
		return GNUTLS_E_AGAIN;
	return n > 0 ? n : ret;
}

/*
 * gnutls_record_recv_seq: read as gnutls_record_recv is (framed, one
 * message per call, GNUTLS_E_AGAIN once), SEQ set to the number of the
 * record the bytes came from: the library's when it was read now, the
 * one remembered when the bytes are the rest of a record the shim held
 * back.  Bytes held back from a record read with gnutls_record_recv (a
 * program mixing the two calls on one session) or in another thread have
 * no number the shim knows: SEQ is then left as the program gave it.
 */
ssize_t bt_gnutls_record_recv_seq(void *s, void *buf, size_t len,
				  unsigned char *seq)
{
	int ret, fake;
	ssize_t n;

	seq_want = 1;
	seq_got = 0;
	n = bt_tls_read(&gnutls, s, buf, len, 0, 0, &ret, &fake);
	seq_want = 0;
	if (fake)
		return GNUTLS_E_AGAIN;
	if (n > 0 && seq && (seq_got || seq_sess == s))
		memcpy(seq, seq_last, sizeof seq_last);
	return n > 0 ? n : ret;
}

/* The library's buffered plaintext, plus what the shim holds of the
 * session's channel (bytes already taken from the library). */
size_t bt_gnutls_record_check_pending(void *s)
{
	size_t n = GREAL(gnutls_record_check_pending)(s);
	int e = errno;
	size_t h = bt_tls_held(&gnutls, s);

	errno = e;
	return n + h < n ? SIZE_MAX : n + h;
}

/* ---- writes ---------------------------------------------------------------- */

/* A write call of the library (bt_tls_call): its arguments, its return. */
struct wcall {
	void *s;
	const void *buf;
	size_t len, pad;
	unsigned flags;
	int which;            /* 0 send, 1 send2, 2 send_range */
	const void *range;
	ssize_t ret;
};

static ssize_t write_call(void *ctx)
{
	struct wcall *c = ctx;

	c->ret = c->which == 0 ?
		 GREAL(gnutls_record_send)(c->s, c->buf, c->len) :
		 c->which == 1 ?
		 GREAL(gnutls_record_send2)(c->s, c->buf, c->len, c->pad,
					    c->flags) :
		 GREAL(gnutls_record_send_range)(c->s, c->buf, c->len,
						 c->range);
	return c->ret;
}

/*
 * The plaintext the call says it sent is framed.  After GNUTLS_E_AGAIN a
 * program calls again with the same buffer or with NULL, 0: GnuTLS then
 * returns the first call's length, counted but not seen (bt_tls_write).
 */
static ssize_t send_as(struct wcall *c)
{
	bt_tls_write(&gnutls, c->s, c->buf, c->len, write_call, c, 0);
	return c->ret;
}

ssize_t bt_gnutls_record_send(void *s, const void *buf, size_t len)
{
	struct wcall c = { .s = s, .buf = buf, .len = len };

	return send_as(&c);
}

ssize_t bt_gnutls_record_send2(void *s, const void *buf, size_t len,
			       size_t pad, unsigned flags)
{
	struct wcall c = { .s = s, .buf = buf, .len = len, .pad = pad,
			   .flags = flags, .which = 1 };

	return send_as(&c);
}

ssize_t bt_gnutls_record_send_range(void *s, const void *buf, size_t len,
				    const void *range)
{
	struct wcall c = { .s = s, .buf = buf, .len = len, .range = range,
			   .which = 2 };

	return send_as(&c);
}

/* ---- binding and the session's life ----------------------------------------- */

/* A binding call or a transport function changed S's transport: its
 * descriptors are looked up again when next used; CUSTOM: it moves its
 * ciphertext through functions of the program's own from now on. */
static void rebound(const void *s, int custom)
{
	int e = errno;

	custom |= (bt_tls_flags(s) & BT_TLS_CUSTOM) != 0;
	bt_tls_forget(s);
	if (custom)
		bt_tls_put(s, -1, -1, BT_TLS_CUSTOM);
	errno = e;
}

void bt_gnutls_transport_set_int2(void *s, int r, int w)
{
	GREAL(gnutls_transport_set_int2)(s, r, w);
	rebound(s, 0);
}

void bt_gnutls_transport_set_ptr2(void *s, void *r, void *w, int two)
{
	if (two)
		GREAL(gnutls_transport_set_ptr2)(s, r, w);
	else
		GREAL(gnutls_transport_set_ptr)(s, r);
	rebound(s, 0);
}

/*
 * Is F one of libgnutls's own functions?  gnutls_init installs its
 * default transport (system_writev ...) through the exported setters, so
 * every session passes here once with GnuTLS's own functions: those are
 * no transport of the program's.
 */
static int gnutls_own(void *f)
{
	void *ref = (void *)GREAL(gnutls_deinit);
	Dl_info a, b;
	int e = errno, own;

	own = f && ref && dladdr(f, &a) && dladdr(ref, &b) &&
	      a.dli_fbase == b.dli_fbase;
	errno = e;
	return own;
}

/* WHICH: 0 push, 1 pull, 2 vec_push */
void bt_gnutls_transport_set_function(void *s, void *f, int which)
{
	if (which == 0)
		GREAL(gnutls_transport_set_push_function)(s, f);
	else if (which == 1)
		GREAL(gnutls_transport_set_pull_function)(s, f);
	else
		GREAL(gnutls_transport_set_vec_push_function)(s, f);
	rebound(s, f && !gnutls_own(f));
}

struct hcall {
	void *s;
	int how, ret;
};

static ssize_t handshake_call(void *ctx)
{
	struct hcall *c = ctx;

	return c->ret = GREAL(gnutls_handshake)(c->s);
}

/* The session's descriptors are bound before the first ciphertext
 * moves, or learned from the handshake's transport I/O (tls.c). */
int bt_gnutls_handshake(void *s)
{
	struct hcall c = { .s = s };

	bt_tls_handshake(&gnutls, s, handshake_call, &c);
	return c.ret;
}

int bt_gnutls_bye(void *s, int how)
{
	int r;

	bt_tls_inside++;
	r = GREAL(gnutls_bye)(s, how);
	bt_tls_inside--;
	return r;
}

/*
 * gnutls_deinit: the session is forgotten.  A channel it bound stays
 * bound until its descriptor is closed; a new session on the same
 * descriptor takes it over with its offsets and processor.
 */
void bt_gnutls_deinit(void *s)
{
	int e = errno;

	bt_tls_forget(s);
	errno = e;
	GREAL(gnutls_deinit)(s);
}
