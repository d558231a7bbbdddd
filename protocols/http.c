/*
 * http.c - HTTP/1.0 and HTTP/1.1 (RFC 9112), both directions.
 *
 * A message is a request or a response, head and body.  Each direction has
 * its own parser; the direction of requests is given by the role or, when
 * unknown, by the first start line ("HTTP/" opens a status line).  Body
 * framing follows RFC 9112 section 6.3:
 *   response to HEAD, 1xx, 204, 304          no body
 *   2xx to CONNECT, 101                      head only, then a tunnel
 *   Transfer-Encoding ending in chunked      chunked (+ trailer section)
 *   Transfer-Encoding otherwise              request: lost; response: close
 *   Content-Length                           that many bytes
 *   none                                     request: no body;
 *                                            response: until eof()
 * The reply side must know which request it answers, so the request side
 * queues the sequence numbers of pending HEAD and CONNECT requests (the only
 * methods that change a response's framing); every other pending request is
 * just counted.  1xx responses other than 101 are interim: ONEWAY messages
 * that answer nothing.  After a tunnel opens every feed() is BT_PP_LOST, so
 * the channel passes through; except a 101 to a request with "Upgrade: h2c"
 * (RFC 7540 3.2): that 101 is ONEWAY (the answer comes as HTTP/2's stream
 * 1) and names http2 as the channel's next processor (bt_msg.next_proto).
 *
 * HTTP runs over streams only: on a datagram transport feed() is
 * BT_PP_LOST at once.
 *
 * Limits: a head (start line + fields) of HTTP_HEAD_MAX bytes, a line of
 * HTTP_LINE_MAX, a chunk-size line of HTTP_CHUNK_LINE_MAX, HTTP_SPECIAL_MAX
 * pending HEAD/CONNECT requests: beyond any of them, BT_PP_LOST.
 *
 * A head that arrives whole in one feed() (the common case) is read in
 * one pass by head_whole; one split across calls, and anything that pass
 * is not sure of, line by line, with the same result.
 *
 * The sniffer, which decides whether a channel speaks HTTP, is
 * http_sniff.c.  The parser stays whole in this file although it is
 * about 1,300 lines: feed() runs for every byte the traced program sends
 * or receives, and its head scanners, field parser and body framing
 * are static functions the compiler inlines into it; in other files
 * (without link-time optimisation) each would be a call per line or per
 * chunk byte, on the hot path measured by bench/nginx-ir.sh.
 */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "btrace/proto.h"
#include "http.h"

#define HTTP_LINE_MAX        (32u * 1024)
#define HTTP_HEAD_MAX        (64u * 1024)
#define HTTP_CHUNK_LINE_MAX  4096u
#define HTTP_SPECIAL_MAX     16u
#define HTTP_ARENA           1700u   /* kept values + the current line */
#define HTTP_KEEP_TARGET     768u
#define HTTP_KEEP_VALUE      160u    /* host, traceparent, x-request-id */
#define HTTP_NATTR           6
_Static_assert(HTTP_NATTR + 1 <= BT_EV_MAX_ATTR, "emit: room for body_len");
_Static_assert(BT_AK_HOST < 16 && BT_AK_TRACEPARENT < 16 &&
	       BT_AK_REQUEST_ID < 16 && BT_AK_METHOD < 16 &&
	       BT_AK_TARGET < 16, "http_dir.keys");

enum { ST_HEAD, ST_LEN, ST_CLOSE, ST_CSIZE, ST_CDATA, ST_CCRLF, ST_TRAILER };
enum { M_OTHER, M_HEAD, M_CONNECT };

/* http_dir.f */
#define F_START    0x001u   /* start line seen */
#define F_REPLY    0x002u   /* this message is a response */
#define F_CL       0x004u   /* Content-Length seen */
#define F_TE       0x008u   /* Transfer-Encoding seen */
#define F_CHUNKED  0x010u   /* ... and its last coding is chunked */
#define F_TRUNC    0x020u   /* a kept value was cut */
#define F_CUT      0x040u   /* the current line did not fit the arena */
#define F_CR       0x080u   /* chunk: CR seen before LF */
#define F_HEX      0x100u   /* chunk: a hex digit seen */
#define F_EXT      0x200u   /* chunk: in extensions */
#define F_TOK      0x400u   /* start line: its first token has ended */
#define F_H2C      0x800u   /* request: Upgrade: h2c */
#define F_INPLACE  0x1000u  /* head_whole: kept values stay in the input */

struct http_dir {
	uint8_t  st;
	uint8_t  method;         /* M_*: of this request / of the answered one */
	uint8_t  nat;
	uint16_t f;
	uint16_t keys;           /* bit K: attribute K kept (keys < 16) */
	uint16_t used;           /* arena bytes of kept values */
	uint16_t cur;            /* arena bytes of the current line */
	uint32_t line;           /* bytes of the current line */
	uint32_t head;           /* bytes of the head so far */
	uint32_t status;
	uint64_t cl, remain, body;
	char     tail[12];       /* the last bytes of a long start line */
	struct { uint8_t key; uint16_t off, len; } at[HTTP_NATTR];
	const char *src;         /* F_INPLACE: at[].off counts from here */
	char     blen[24];
	char     arena[HTTP_ARENA];
};

struct http_state {
	int8_t   req_dir;        /* -1 until known */
	uint8_t  tunnel;         /* or a datagram transport: not followed */
	uint8_t  h2c;            /* a request asked to upgrade to h2c */
	uint8_t  sp_head, sp_n;  /* queue of pending HEAD/CONNECT */
	uint8_t  sp_kind[HTTP_SPECIAL_MAX];
	uint32_t sp_seq[HTTP_SPECIAL_MAX];
	uint32_t req_seq;        /* request heads seen */
	uint32_t rep_seq;        /* final response heads seen */
	struct http_dir d[2];
};

static void http_init(void *st, int role, int transport)
{
	struct http_state *s = st;
	s->req_dir = role == BT_ROLE_CLIENT ? BT_DIR_OUT :
		     role == BT_ROLE_SERVER ? BT_DIR_IN : -1;
	s->tunnel = transport == BT_TR_DGRAM;
}

static void http_fini(void *st) { (void)st; }

/* Unaligned loads, in the machine's byte order. */
static inline uint64_t ld8(const char *p) { uint64_t x; memcpy(&x, p, 8); return x; }
static inline uint32_t ld4(const char *p) { uint32_t x; memcpy(&x, p, 4); return x; }

/*
 * Case-insensitive: is [p, p+n) equal to S, a literal of lower-case letters
 * and '-' only?  The lengths are compared first (known at compile time),
 * so a header line costs one compare per name of its length.  The bytes
 * are compared a word at a time: a letter of S has bit 0x40 set, so
 * (w & 0x40..) >> 1 is 0x20 where S has a letter and 0 where it has '-';
 * OR-ing that into the input's word maps exactly A-Z onto a-z at the
 * letters' positions and nothing else, so the word is equal to S's iff
 * each byte is S's letter in either case, or S's '-'.  Words overlap at
 * the end (N >= 4 for every name used).
 */
#define tok_is(p, n, s) ((n) == sizeof(s) - 1 && tok_eq(p, s, sizeof(s) - 1))
static inline int tok_eq(const char *p, const char *s, size_t n)
{
	const uint64_t b8 = 0x4040404040404040ull;
	const uint32_t b4 = 0x40404040u;
	size_t i;

	if (n < 8)
		return (ld4(p) | (ld4(s) & b4) >> 1) == ld4(s) &&
		       (ld4(p + n - 4) | (ld4(s + n - 4) & b4) >> 1) ==
		       ld4(s + n - 4);
	for (i = 0; i + 8 < n; i += 8)
		if ((ld8(p + i) | (ld8(s + i) & b8) >> 1) != ld8(s + i))
			return 0;
	return (ld8(p + n - 8) | (ld8(s + n - 8) & b8) >> 1) == ld8(s + n - 8);
}

static int is_sp(char c) { return c == ' ' || c == '\t'; }

static inline void trim(const char **v, size_t *n)
{
	while (*n && is_sp(**v)) { (*v)++; (*n)--; }
	while (*n && is_sp((*v)[*n - 1])) (*n)--;
}

/* Keep [v, v+n) (inside the current line) as attribute KEY, at most MAX:
 * copied into the arena, or with F_INPLACE (head_whole) only its offset
 * from d->src noted. */
static inline void keep(struct http_dir *d, uint8_t key, const char *v,
			size_t n, size_t max)
{
	if (d->keys & 1u << key)
		return;                     /* first occurrence wins */
	if (d->nat >= HTTP_NATTR)
		return;
	d->keys = (uint16_t)(d->keys | 1u << key);
	if (n > max || (d->f & F_CUT)) {   /* cut here, or the line was */
		n = n < max ? n : max;
		d->f |= F_TRUNC;
	}
	d->at[d->nat].key = key;
	if (d->f & F_INPLACE) {
		d->at[d->nat].off = (uint16_t)(v - d->src);
	} else {
		memmove(d->arena + d->used, v, n);
		d->at[d->nat].off = d->used;
	}
	d->at[d->nat].len = (uint16_t)n;
	d->nat++;
	d->used = (uint16_t)(d->used + n);
}

/* Content-Length: 1#DIGIT, all list members equal.  -1 if invalid. */
static inline __attribute__((always_inline)) int
parse_cl(struct http_dir *d, const char *v, size_t n)
{
	size_t start = 0;

	if (n && n <= 17 && !(d->f & F_CL)) {
		/* one number, the usual value: as the loop below takes it */
		uint64_t x = 0;
		size_t j = 0;
		unsigned dg;
		for (; j < n && (dg = (unsigned char)v[j] - '0') <= 9; j++)
			x = x * 10 + dg;
		if (j == n) {
			d->cl = x;
			d->f |= F_CL;
			return 0;
		}
	}
	for (size_t i = 0; i <= n; i++) {
		if (i < n && v[i] != ',')
			continue;
		const char *t = v + start;
		size_t tl = i - start;
		uint64_t x = 0;
		trim(&t, &tl);
		if (!tl || tl > 17)
			return -1;
		for (size_t j = 0; j < tl; j++) {
			if (t[j] < '0' || t[j] > '9')
				return -1;
			x = x * 10 + (uint64_t)(t[j] - '0');
		}
		if ((d->f & F_CL) && x != d->cl)
			return -1;
		d->cl = x;
		d->f |= F_CL;
		start = i + 1;
	}
	return 0;
}

/* Transfer-Encoding: remember whether the last coding is "chunked". */
static void parse_te(struct http_dir *d, const char *v, size_t n)
{
	size_t start = 0;
	d->f |= F_TE;
	d->f &= (uint16_t)~F_CHUNKED;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || v[i] == ',') {
			const char *t = v + start;
			size_t tl = i - start;
			trim(&t, &tl);
			if (tl) {
				if (tok_is(t, tl, "chunked"))
					d->f |= F_CHUNKED;
				else
					d->f &= (uint16_t)~F_CHUNKED;
			}
			start = i + 1;
		}
	}
}

/*
 * The start line L[0..N): request line or status line.  CUT: only its
 * first N bytes were kept (a long target); its end is in d->tail.
 * 0 ok, -1 lost.
 */
static int start_line(struct http_state *s, struct http_dir *d, int dir,
		      const char *l, size_t n, int cut)
{
	if (n >= 5 && memcmp(l, "HTTP/", 5) == 0) {
		if (s->req_dir == dir || cut)
			return -1;
		if (n < 12 || memcmp(l + 5, "1.", 2) != 0 || l[8] != ' ')
			return -1;
		for (int i = 9; i < 12; i++)
			if (l[i] < '0' || l[i] > '9')
				return -1;
		if (n > 12 && l[12] != ' ')
			return -1;
		d->status = (uint32_t)((l[9] - '0') * 100 + (l[10] - '0') * 10 +
				       (l[11] - '0'));
		if (d->status < 100)
			return -1;
		s->req_dir = (int8_t)!dir;
		d->f |= F_REPLY;
		return 0;
	}
	if (s->req_dir == !dir)
		return -1;
	/* method SP request-target SP HTTP/1.x */
	size_t m = 0, t, te;
	if (n >= 4 && ld4(l) == ld4("GET "))
		m = 3;                      /* as the loop would find it */
	else
		while (m < n && m < 32 && l[m] > ' ' && l[m] < 127 &&
		       l[m] != '/')
			m++;
	if (m == 0 || m >= n || l[m] != ' ')
		return -1;
	t = m + 1;
	if (!cut) {
		/* the target ends at the first SP after it, which must be
		 * the one of " HTTP/1.x" at the end: none before that */
		if (n < t + 10 || memcmp(l + n - 9, " HTTP/1.", 8) != 0 ||
		    l[n - 1] < '0' || l[n - 1] > '9' ||
		    memchr(l + t, ' ', n - 9 - t))
			return -1;
		te = n - 9;
	} else {
		te = t;
		while (te < n && l[te] != ' ')
			te++;
		/* tail: ... " HTTP/1.x" CR? LF */
		const char *e = d->tail + sizeof d->tail - 1;
		if (e[-1] == '\r')
			e--;
		if (memcmp(e - 9, " HTTP/1.", 8) != 0 || e[-1] < '0' ||
		    e[-1] > '9' || te != n)
			return -1;
		d->f |= F_TRUNC;
	}
	s->req_dir = (int8_t)dir;
	d->method = m == 4 && memcmp(l, "HEAD", 4) == 0 ? M_HEAD :
		    m == 7 && memcmp(l, "CONNECT", 7) == 0 ? M_CONNECT : M_OTHER;
	keep(d, BT_AK_METHOD, l, m, 32);
	keep(d, BT_AK_TARGET, l + t, te - t, HTTP_KEEP_TARGET);
	return 0;
}

/* The names field_named looks at, by first letter (either case, as
 * tok_eq compares it), as a set of lengths: host 4, upgrade 7,
 * traceparent 11, x-request-id 12, content-length 14, transfer-encoding
 * 17.  A line whose name has another first letter or length is ignored
 * without a call.  Bit 31: SP or HT, an obs-fold line. */
#define NAME_OBS (1u << 31)
static const uint32_t name_first[256] = {
	['h'] = 1u << 4, ['H'] = 1u << 4, ['u'] = 1u << 7, ['U'] = 1u << 7,
	['t'] = 1u << 11 | 1u << 17, ['T'] = 1u << 11 | 1u << 17,
	['x'] = 1u << 12, ['X'] = 1u << 12, ['c'] = 1u << 14, ['C'] = 1u << 14,
	[' '] = NAME_OBS, ['\t'] = NAME_OBS,
};
#define NAME_USED(fc, nl) ((nl) < 31 && ((fc) >> (nl) & 1))

/* A header field line L[0..N) whose first ':' is at C.  0 ok, -1 lost. */
static int field_named(struct http_dir *d, const char *l, size_t n,
		       const char *c)
{
	size_t nl = (size_t)(c - l);
	const char *v = c + 1;
	size_t vl = n - nl - 1;
	/* the value is trimmed only for the names that use it */
	if (tok_is(l, nl, "content-length")) {
		if (d->f & F_CUT)
			return -1;
		trim(&v, &vl);
		return parse_cl(d, v, vl);
	}
	if (tok_is(l, nl, "transfer-encoding")) {
		if (d->f & F_CUT)
			return -1;
		trim(&v, &vl);
		parse_te(d, v, vl);
		return 0;
	}
	if (d->f & F_REPLY)
		return 0;
	if (tok_is(l, nl, "upgrade")) {
		/* "h2c" among the protocols asked for (RFC 7540 section
		 * 3.2): a 101 hands the channel to HTTP/2 */
		for (size_t i = 0; i + 3 <= vl; i++)
			if ((v[i] | 0x20) == 'h' && v[i + 1] == '2' &&
			    (v[i + 2] | 0x20) == 'c' &&
			    (i + 3 == vl || v[i + 3] == ',' ||
			     is_sp(v[i + 3]) || v[i + 3] == '\r') &&
			    (i == 0 || v[i - 1] == ',' || is_sp(v[i - 1])))
				d->f |= F_H2C;
		return 0;
	}
	uint8_t key = tok_is(l, nl, "host") ? BT_AK_HOST :
		      tok_is(l, nl, "traceparent") ? BT_AK_TRACEPARENT :
		      tok_is(l, nl, "x-request-id") ? BT_AK_REQUEST_ID : 0;
	if (key) {
		trim(&v, &vl);
		keep(d, key, v, vl, HTTP_KEEP_VALUE);
	}
	return 0;
}

/* A header field line.  0 ok, -1 lost. */
static int field_line(struct http_dir *d, const char *l, size_t n)
{
	if (is_sp(l[0]))
		return 0;                   /* obs-fold: ignored */
	const char *c = memchr(l, ':', n);
	if (!c)
		return -1;
	return NAME_USED(name_first[(uint8_t)l[0]], (size_t)(c - l)) ?
	       field_named(d, l, n, c) : 0;
}

/*
 * The head is complete: choose the body framing.  Returns 1 if the message
 * ends here, 0 if a body follows, -1 lost.
 */
static inline __attribute__((always_inline)) int
head_done(struct http_state *s, struct http_dir *d)
{
	if (!(d->f & F_REPLY)) {
		if (d->f & F_H2C)
			s->h2c = 1;
		if (d->method != M_OTHER) {
			if (s->sp_n >= HTTP_SPECIAL_MAX)
				return -1;
			unsigned i = (s->sp_head + s->sp_n) % HTTP_SPECIAL_MAX;
			s->sp_kind[i] = d->method;
			s->sp_seq[i] = s->req_seq;
			s->sp_n++;
		}
		s->req_seq++;
		if (d->f & F_TE) {
			if (!(d->f & F_CHUNKED))
				return -1;
			d->st = ST_CSIZE;
			return 0;
		}
		if ((d->f & F_CL) && d->cl) {
			d->remain = d->cl;
			d->st = ST_LEN;
			return 0;
		}
		return 1;
	}
	if (d->status < 200)
		return 1;                   /* interim, or 101 */
	d->method = M_OTHER;
	if (s->rep_seq < s->req_seq) {
		if (s->sp_n && s->sp_seq[s->sp_head] == s->rep_seq) {
			d->method = s->sp_kind[s->sp_head];
			s->sp_head = (uint8_t)((s->sp_head + 1) % HTTP_SPECIAL_MAX);
			s->sp_n--;
		}
		s->rep_seq++;
	}
	if (d->method == M_HEAD || d->status == 204 || d->status == 304 ||
	    (d->method == M_CONNECT && d->status < 300))
		return 1;
	if (d->f & F_TE) {
		d->st = (d->f & F_CHUNKED) ? ST_CSIZE : ST_CLOSE;
		return 0;
	}
	if (d->f & F_CL) {
		if (!d->cl)
			return 1;
		d->remain = d->cl;
		d->st = ST_LEN;
		return 0;
	}
	d->st = ST_CLOSE;
	return 0;
}

/* Fill M with the message just ended in D and reset D for the next one.
 * The kept values are at BASE + their offsets: the arena, or the input
 * (head_whole). */
static void emit(struct http_state *s, struct http_dir *d, struct bt_msg *m,
		 const char *base)
{
	if (d->f & F_REPLY) {
		m->kind = d->status < 200 && d->status != 101 ? BT_MK_ONEWAY :
			  BT_MK_REPLY;
		m->status = d->status;
		if (d->status == 101 && s->h2c) {
			/* h2c: the answer comes as HTTP/2's stream 1, an
			 * interim message until then; HTTP/2 from here on */
			m->kind = BT_MK_ONEWAY;
			m->next_proto = BT_PROTO_HTTP2;
		} else if (d->status == 101 ||
		    (d->method == M_CONNECT && d->status >= 200 &&
		     d->status < 300))
			s->tunnel = 1;
	} else {
		m->kind = BT_MK_REQUEST;
	}
	if (m->nattr == 0) {
		/* bt_msg_attr's tests hold already: at most HTTP_NATTR + 1
		 * attributes, none NULL, none longer than the arena */
		struct bt_attr *a = m->attr;
		for (unsigned i = 0; i < d->nat; i++, a++) {
			a->key = d->at[i].key;
			a->val = base + d->at[i].off;
			a->len = d->at[i].len;
		}
		m->nattr = d->nat;
	} else {
		for (unsigned i = 0; i < d->nat; i++)
			bt_msg_attr(m, d->at[i].key, base + d->at[i].off,
				    d->at[i].len);
	}
	{
		size_t k;
		const char *q = bt_u64_dec(d->blen, sizeof d->blen,
					   (uint64_t)d->body, &k);
		bt_msg_attr(m, BT_AK_BODY_LEN, q, k);
	}
	if (d->f & F_TRUNC)
		m->flags |= BT_MF_TRUNC;
	/* st ST_HEAD, method M_OTHER, and every count 0: all that
	 * precedes tail */
	_Static_assert(ST_HEAD == 0 && M_OTHER == 0, "emit: a fresh head is 0");
	memset(d, 0, offsetof(struct http_dir, tail));
}

/*
 * The classes of a start line's bytes: C_CTL a control character, refused
 * anywhere (all but HT, LF, CR); C_TOK allowed in the first token (RFC 9110
 * tchar: ALPHA, DIGIT and !#$%&'*+-.^_`|~, and '/', CR, LF).
 */
#define C_CTL 1u
#define C_TOK 2u
static const uint8_t start_cls[256] = {
	[0 ... 0x08] = C_CTL, [0x0b ... 0x0c] = C_CTL, [0x0e ... 0x1f] = C_CTL,
	[0x7f] = C_CTL,
	['a' ... 'z'] = C_TOK, ['A' ... 'Z'] = C_TOK, ['0' ... '9'] = C_TOK,
	['!'] = C_TOK, ['#'] = C_TOK, ['$'] = C_TOK, ['%'] = C_TOK,
	['&'] = C_TOK, ['\''] = C_TOK, ['*'] = C_TOK, ['+'] = C_TOK,
	['-'] = C_TOK, ['.'] = C_TOK, ['^'] = C_TOK, ['_'] = C_TOK,
	['`'] = C_TOK, ['|'] = C_TOK, ['~'] = C_TOK,
	['/'] = C_TOK, ['\r'] = C_TOK, ['\n'] = C_TOK,
};

/* Has word W a byte below 0x20 or equal to 0x7f?  (Exact for 0x7f and
 * for bytes below 0x20 with no byte >= 0x80 below them: may say yes
 * wrongly otherwise, never no wrongly; the caller then looks byte by
 * byte.) */
static inline uint64_t ctl_word(uint64_t w)
{
	const uint64_t ones = 0x0101010101010101ull, high = ones * 0x80;
	uint64_t x = w ^ ones * 0x7f;

	return ((w - ones * 0x20) & ~w & high) | ((x - ones) & ~x & high);
}

/*
 * Can bytes L[from..n) continue a start line?  The first token (method or
 * "HTTP/1.x") is at most 32 token characters; no control characters but
 * CR, LF and HT.  Rejects a binary stream at once, before any LF.
 */
static int start_ok(struct http_dir *d, const char *l, size_t from, size_t n)
{
	size_t i = from;

	if (!(d->f & F_TOK)) {
		/* the common first tokens, as the loop below would take them */
		if (i == 0 && n >= 9) {
			if (ld4(l) == ld4("GET ")) {
				d->f |= F_TOK;
				i = 4;
				goto rest;
			}
			if (ld8(l) == ld8("HTTP/1.1") && l[8] == ' ') {
				d->f |= F_TOK;
				i = 9;
				goto rest;
			}
		}
		for (; i < n; i++) {
			unsigned c = (unsigned char)l[i];
			unsigned k = start_cls[c];
			if (k == C_TOK && i < 32)
				continue;       /* the usual case */
			if (k & C_CTL)
				return 0;
			if (c == ' ' && i > 0) {
				d->f |= F_TOK;
				i++;
				break;
			}
			return 0;               /* i >= 32, or not a token byte */
		}
	}
rest:
	/* the rest up to a final [CR] LF (not control characters here):
	 * eight bytes at a time while none of them is below 0x20 or 0x7f
	 * (a word with one is looked at byte by byte), the bytes left by
	 * the word that ends there (overlapping bytes checked already) */
	if (n >= 2 && l[n - 1] == '\n')
		n -= l[n - 2] == '\r' ? 2 : 1;
	for (; i + 8 <= n; i += 8) {
		if (!ctl_word(ld8(l + i)))
			continue;
		for (size_t j = i; j < i + 8; j++)
			if (start_cls[(unsigned char)l[j]] & C_CTL)
				return 0;
	}
	if (i < n && n >= from + 8 && !ctl_word(ld8(l + n - 8)))
		return 1;
	for (; i < n; i++)
		if (start_cls[(unsigned char)l[i]] & C_CTL)
			return 0;
	return 1;
}

/*
 * Are the bytes L[I..N) (I <= N) sure to hold no control character
 * (start_cls C_CTL) and, if NOSP, no SP?  A word at a time; 0 may also
 * mean "not sure" (ctl_word's bytes >= 0x80, HT or CR): the caller then
 * takes the general path, which looks byte by byte.
 */
static inline int start_plain(const char *l, size_t i, size_t n, int nosp)
{
	const uint64_t ones = 0x0101010101010101ull, high = ones * 0x80;
	uint64_t bad = 0, w, x;

	if (i == n)
		return 1;
	if (n - i < 8 && n >= 8 &&
	    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) {
		/* the word that ends at N, its bytes before I masked off
		 * (a borrow from them can only say yes wrongly) */
		w = ld8(l + n - 8);
		x = w ^ ones * ' ';
		bad = ctl_word(w) | (nosp ? (x - ones) & ~x & high : 0);
		return !(bad & ~0ull << 8 * (8 - (n - i)));
	}
	if (n - i < 8) {
		for (; i < n; i++)
			if ((start_cls[(unsigned char)l[i]] & C_CTL) ||
			    (nosp && l[i] == ' '))
				return 0;
		return 1;
	}
	for (;; i += 8) {
		if (i + 8 > n)
			i = n - 8;          /* the last word overlaps */
		w = ld8(l + i);
		x = w ^ ones * ' ';
		bad |= ctl_word(w) | (nosp ? (x - ones) & ~x & high : 0);
		if (i + 8 == n)
			return !bad;
	}
}

/*
 * head_whole's start line L[0..N) (without its CR LF) when it is one of
 * the common ones, "GET " target " HTTP/1.x" or "HTTP/1.1 " status:
 * what start_ok and start_line would do with it, done (1).  0 when it is
 * not sure, with nothing done: the caller then calls them.
 */
static inline int start_common(struct http_state *s, struct http_dir *d,
			       int dir, const char *l, size_t n)
{
	if (n >= 14 && ld4(l) == ld4("GET ")) {
		/* start_ok: "GET " then no control character up to the end;
		 * start_line: no SP in the target, " HTTP/1.x" at the end */
		size_t tl = n - 13;
		if (s->req_dir == !dir || ld8(l + n - 9) != ld8(" HTTP/1.") ||
		    l[n - 1] < '0' || l[n - 1] > '9' ||
		    !start_plain(l, 4, n - 9, 1))
			return 0;
		d->f |= F_TOK | F_START;
		s->req_dir = (int8_t)dir;
		d->method = M_OTHER;
		keep(d, BT_AK_METHOD, l, 3, 32);
		keep(d, BT_AK_TARGET, l + 4, tl, HTTP_KEEP_TARGET);
		return 1;
	}
	if (n >= 12 && ld8(l) == ld8("HTTP/1.1") && l[8] == ' ') {
		unsigned a = (unsigned char)l[9] - '0',
			 b = (unsigned char)l[10] - '0',
			 c = (unsigned char)l[11] - '0';
		if (s->req_dir == dir || a > 9 || b > 9 || c > 9 || a == 0 ||
		    (n > 12 && l[12] != ' ') || !start_plain(l, 9, n, 0))
			return 0;
		d->f |= F_TOK | F_START | F_REPLY;
		d->status = a * 100 + b * 10 + c;
		s->req_dir = (int8_t)!dir;
		return 1;
	}
	return 0;
}

/* TAKE bytes of the current line at P were taken: counted, and while it
 * is the start line, its last bytes kept (d->tail). */
static inline void count_taken(struct http_dir *d, const void *p, size_t take)
{
	if (!(d->f & F_START)) {
		size_t tl = sizeof d->tail;
		if (take >= tl) {
			memcpy(d->tail, (const uint8_t *)p + take - tl, tl);
		} else {
			memmove(d->tail, d->tail + take, tl - take);
			memcpy(d->tail + tl - take, p, take);
		}
	}
	d->line += (uint32_t)take;
	d->head += (uint32_t)take;
}

/*
 * Take the bytes of a line up to and including LF (or all of them) from
 * P[0..N) into the arena (as far as it fits).  Returns the bytes taken, or
 * 0 if they cannot be part of a start line; *DONE is set when the line
 * ended.
 */
static size_t take_line(struct http_dir *d, const uint8_t *p, size_t n,
			int *done)
{
	const uint8_t *nl = memchr(p, '\n', n);
	size_t take = nl ? (size_t)(nl - p) + 1 : n;
	size_t room = HTTP_ARENA - d->used - d->cur;
	size_t k = take < room ? take : room;
	char *l = d->arena + d->used;
	memcpy(l + d->cur, p, k);
	if (d->st == ST_HEAD && !(d->f & F_START) &&
	    !start_ok(d, l, d->cur, d->cur + k))
		return 0;
	d->cur = (uint16_t)(d->cur + k);
	if (k < take)
		d->f |= F_CUT;
	count_taken(d, p, take);
	*done = nl != NULL;
	return take;
}

/*
 * take_line for a line that ends inside P[0..N) and would fit the arena
 * whole, with no part of it taken before (D->cur 0): the same bookkeeping
 * without copying it.  Returns its length (D->cur set to it), or 0 when
 * take_line must do it (no LF, too long, or not a start line: take_line
 * then refuses it the same way).
 */
static size_t line_in_place(struct http_dir *d, const uint8_t *p, size_t n)
{
	const uint8_t *nl = memchr(p, '\n', n);
	size_t take;

	if (!nl)
		return 0;
	take = (size_t)(nl - p) + 1;
	if (take > HTTP_ARENA - d->used)
		return 0;
	if (d->st == ST_HEAD && !(d->f & F_START)) {
		uint16_t f0 = d->f;
		if (!start_ok(d, (const char *)p, 0, take)) {
			d->f = f0;          /* take_line looks again */
			return 0;
		}
	}
	d->cur = (uint16_t)take;
	count_taken(d, p, take);
	return take;
}

/* A whole head or trailer line, D->cur bytes at L (in the arena, or in
 * place in the input: see http_feed).  1 end, 0 more, -1 lost.  The line
 * is only read. */
static int head_line(struct http_state *s, struct http_dir *d, int dir,
		     const char *l)
{
	size_t n = d->cur;
	if (!(d->f & F_CUT))
		n--;                        /* the LF */
	if (n && l[n - 1] == '\r' && !(d->f & F_CUT))
		n--;
	int r = 0;
	if (d->st == ST_TRAILER) {
		r = d->line <= 2 && n == 0 ? 1 : 0;
	} else if (!(d->f & F_START)) {
		if (d->line <= 2 && n == 0) {
			d->head = 0;        /* empty lines before a message */
		} else {
			d->f |= F_START;
			r = start_line(s, d, dir, l, n, (d->f & F_CUT) != 0);
		}
	} else if (d->line <= 2 && n == 0) {
		r = head_done(s, d);
	} else {
		r = field_line(d, l, n);
	}
	d->f &= (uint16_t)~F_CUT;
	d->cur = 0;
	d->line = 0;
	return r;
}

/* The chunk-size line, byte by byte.  1 line done, 0 more, -1 lost. */
static int chunk_byte(struct http_dir *d, uint8_t c)
{
	if (++d->line > HTTP_CHUNK_LINE_MAX)
		return -1;
	if (c == '\n') {
		if (!(d->f & F_HEX))
			return -1;
		d->f &= (uint16_t)~(F_HEX | F_EXT | F_CR);
		d->line = 0;
		return 1;
	}
	if (d->f & F_CR)
		return -1;                  /* CR not followed by LF */
	if (c == '\r') {
		d->f |= F_CR;
		return 0;
	}
	if (d->f & F_EXT)
		return 0;
	int v = c >= '0' && c <= '9' ? c - '0' :
		c >= 'a' && c <= 'f' ? c - 'a' + 10 :
		c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
	if (v >= 0) {
		if (d->remain >> 56)
			return -1;
		d->remain = d->remain << 4 | (uint64_t)v;
		d->f |= F_HEX;
		return 0;
	}
	if ((c == ';' || is_sp((char)c)) && (d->f & F_HEX)) {
		d->f |= F_EXT;
		return 0;
	}
	return -1;
}

/*
 * The field lines of a head that lie whole in P[*I..N), none of them begun
 * before (D->cur and D->line 0, the start line seen): each is parsed where
 * it is, as line_in_place and head_line would, without their bookkeeping
 * per line (D->cur and D->line stay 0).  Stops at a line that does not
 * end in the input or would not fit the arena (left to the general path,
 * *I at its start), and at the head's end.  1 message ended, 0 go on, -1
 * lost.
 */
static int fields_in_place(struct http_state *s, struct http_dir *d,
			   const uint8_t *p, size_t n, size_t *ip)
{
	size_t i = *ip, room = HTTP_ARENA - d->used;
	uint32_t head = d->head;
	int r = 0;

	/* field_line inlined: a line whose name no kept field has costs
	 * two memchr and a few tests, with the head's count in a register */
	while (i < n) {
		const char *l = (const char *)(p + i);
		const char *e = memchr(l, '\n', n - i);
		if (!e)
			break;
		size_t take = (size_t)(e - l) + 1;
		if (take > room)
			break;
		head += (uint32_t)take;
		if (head > HTTP_HEAD_MAX) {
			r = -1;                 /* (a line here is < HTTP_LINE_MAX) */
			break;
		}
		size_t len = take - 1;
		if (len && l[len - 1] == '\r')
			len--;
		i += take;
		if (len == 0 && take <= 2) {
			d->head = head;
			r = head_done(s, d);    /* the body's state, or the end */
			break;
		}
		uint32_t fc = name_first[(uint8_t)l[0]];
		if (fc & NAME_OBS)
			continue;               /* obs-fold: ignored */
		const char *c = memchr(l, ':', len);
		if (!c) {
			r = -1;
			break;
		}
		if (NAME_USED(fc, (size_t)(c - l))) {
			if ((r = field_named(d, l, len, c)) != 0)
				break;
			room = HTTP_ARENA - d->used;
		}
	}
	d->head = head;
	*ip = i;
	return r;
}

/*
 * Bit J of *LF (*COL) set: byte B+J of P[0..N) is LF (':'), for the 64
 * bytes from B that lie below N (B < N, N >= 64).  SSE2 (the x86-64
 * baseline): four 16-byte loads; a block that would cross N is loaded
 * from N - 64 instead and its bits shifted down, so no byte outside
 * P[0..N) is read.  Elsewhere a byte loop.
 */
static inline __attribute__((always_inline)) void
head_masks(const uint8_t *p, size_t n, size_t b, uint64_t *lf, uint64_t *col)
{
	size_t o = b + 64 <= n ? b : n - 64;
	unsigned sh = (unsigned)(b - o);
#if defined(__SSE2__)
	const __m128i vl = _mm_set1_epi8('\n'), vc = _mm_set1_epi8(':');
	const __m128i *q = (const __m128i *)(const void *)(p + o);
	__m128i x0 = _mm_loadu_si128(q), x1 = _mm_loadu_si128(q + 1);
	__m128i x2 = _mm_loadu_si128(q + 2), x3 = _mm_loadu_si128(q + 3);
	uint64_t l0 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x0, vl));
	uint64_t l1 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x1, vl));
	uint64_t l2 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x2, vl));
	uint64_t l3 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x3, vl));
	uint64_t c0 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x0, vc));
	uint64_t c1 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x1, vc));
	uint64_t c2 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x2, vc));
	uint64_t c3 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x3, vc));
	*lf = (l0 | l1 << 16 | l2 << 32 | l3 << 48) >> sh;
	*col = (c0 | c1 << 16 | c2 << 32 | c3 << 48) >> sh;
#else
	uint64_t ml = 0, mc = 0;
	for (unsigned j = 0; j < 64; j++) {
		ml |= (uint64_t)(p[o + j] == '\n') << j;
		mc |= (uint64_t)(p[o + j] == ':') << j;
	}
	*lf = ml >> sh;
	*col = mc >> sh;
#endif
}

/*
 * head_whole's scan.  Per block of 64 bytes at B: LF, the LF bits; and
 * BAD, the LFs that end a line with no ':' before them.  A line's first
 * LF-or-':' is found for all lines of the block at once: with M the bits
 * of both and A the bits of the lines' starts, M - A borrows from each
 * start up to the first bit of M at or after it and clears that bit, so
 * M & ~(M - A) is those first bits (every line but the block's last has
 * its LF in the block, which stops its borrow; the last one's borrow
 * goes out of the word when it has neither yet: CIN, a start at bit 0
 * of the next block).
 */
struct hscan {
	const uint8_t *p;
	size_t n, b;
	uint64_t lf, bad, cin;
};

static inline __attribute__((always_inline)) void hs_block(struct hscan *h)
{
	uint64_t col, m, r, a;
	head_masks(h->p, h->n, h->b, &h->lf, &col);
	a = h->lf << 1 | h->cin;
	m = h->lf | col;
	h->cin = (uint64_t)__builtin_usubll_overflow(m, a,
		(unsigned long long *)&r) | h->lf >> 63;
	h->bad = m & ~r & h->lf;
}

/* The next LF of the scan (*E); *BAD: no ':' before it in its line.
 * 0 when P[0..N) has no more LF. */
static inline __attribute__((always_inline)) int hs_next(struct hscan *h,
							 size_t *e, int *bad)
{
	while (!h->lf) {
		h->b += 64;
		if (h->b >= h->n)
			return 0;
		hs_block(h);
	}
	unsigned j = (unsigned)__builtin_ctzll(h->lf);
	h->lf &= h->lf - 1;
	*e = h->b + j;
	*bad = (int)(h->bad >> j & 1);
	return 1;
}

/*
 * A whole head at the start of P[0..N), D fresh (no byte of this message
 * taken, D->f 0): found and parsed in one pass, as the line by line path
 * below would parse it, its kept values left in the input (F_INPLACE).
 * The lines' ends come from bit masks of 64 bytes at a time (hs_block),
 * each a tzcnt; a field line with a ':' whose name cannot be a kept one
 * (its first byte, name_first) costs a few tests; one whose name can is
 * given to field_named if a ':' is where a kept name of its first letter
 * would end (then it is the line's first ':', as a kept name has none).
 * Only heads of at most HTTP_ARENA bytes that end in P are taken, so no
 * line is cut and no limit is reached (a kept value is a part of an
 * earlier line, so the arena's room for a line never runs out).
 * Anything else -- a head not whole in P, an empty line before it, a
 * line the general path refuses (it then refuses it again) -- returns 0
 * with D and S as they were, for the general path to take from the
 * start.  Else the head's length, with *R head_done's result: 1 the
 * message ended (emitted into M, its values pointing into P), 0 a body
 * follows (values copied into the arena, as keep() would have).
 */
static size_t head_whole(struct http_state *s, struct http_dir *d, int dir,
			 const uint8_t *p, size_t n, struct bt_msg *m, int *rp)
{
	struct hscan h;
	uint8_t small[64];
	size_t ls, e;
	int bad;
	int8_t req_dir = s->req_dir;

	if (n < 16 || p[0] == '\r' || p[0] == '\n')
		return 0;
	h.p = p;
	h.n = n < HTTP_ARENA ? n : HTTP_ARENA;
	if (h.n < 64) {
		/* a short input: scanned in a copy padded with NULs */
		memcpy(small, p, h.n);
		memset(small + h.n, 0, sizeof small - h.n);
		h.p = small;
		h.n = sizeof small;
	}
	h.b = 0;
	h.cin = 1;
	hs_block(&h);
	d->f = F_INPLACE;
	d->src = (const char *)p;
	/* the start line */
	if (!hs_next(&h, &e, &bad))
		goto refuse;
	{
		const char *l = (const char *)p;
		size_t len = e - (p[e - 1] == '\r');
		if (!start_common(s, d, dir, l, len)) {
			if (!start_ok(d, l, 0, e + 1))
				goto refuse;
			d->f |= F_START;
			if (start_line(s, d, dir, l, len, 0) < 0)
				goto refuse;
		}
	}
	ls = e + 1;
	/* the field lines */
	while (hs_next(&h, &e, &bad)) {
		const char *l = (const char *)(p + ls);
		size_t at = ls;
		ls = e + 1;
		if (bad) {
			if (e == at || (e == at + 1 && l[0] == '\r'))
				goto end;       /* the empty line */
			if (is_sp(l[0]))
				continue;       /* obs-fold: ignored */
			goto refuse;            /* no ':' */
		}
		uint32_t fc = name_first[(uint8_t)l[0]];
		if (!fc)
			continue;
		if (fc & NAME_OBS)
			continue;               /* obs-fold: ignored */
		do {
			unsigned k = (unsigned)__builtin_ctz(fc);
			if (k < e - at && l[k] == ':') {
				size_t len = e - at - (p[e - 1] == '\r');
				const char *v = l + k + 1;
				size_t vl = len - k - 1;
				/* field_named's two common names at once */
				if (k == 4 && tok_eq(l, "host", 4)) {
					if (!(d->f & F_REPLY)) {
						trim(&v, &vl);
						keep(d, BT_AK_HOST, v, vl,
						     HTTP_KEEP_VALUE);
					}
				} else if (k == 14 &&
					   tok_eq(l, "content-length", 14)) {
					trim(&v, &vl);
					if (parse_cl(d, v, vl) < 0)
						goto refuse;
				} else if (field_named(d, l, len, l + k) < 0) {
					goto refuse;
				}
				break;
			}
			fc &= fc - 1;
		} while (fc);
	}
refuse:
	s->req_dir = req_dir;
	d->f = 0;
	d->nat = 0;
	d->keys = 0;
	d->used = 0;
	d->cl = 0;
	d->status = 0;
	d->method = M_OTHER;
	return 0;
end:
	/* head_done's refusals, which change S before they refuse */
	if (!(d->f & F_REPLY) && (d->f & F_TE) && !(d->f & F_CHUNKED))
		goto refuse;
	if (!(d->f & F_REPLY) && d->method != M_OTHER &&
	    s->sp_n >= HTTP_SPECIAL_MAX)
		goto refuse;
	d->head = (uint32_t)ls;
	d->f &= (uint16_t)~F_INPLACE;
	*rp = head_done(s, d);
	if (*rp > 0) {
		emit(s, d, m, (const char *)p);
		return ls;
	}
	/* a body follows: the values into the arena, as keep() puts them */
	uint16_t used = 0;
	for (unsigned i = 0; i < d->nat; i++) {
		memcpy(d->arena + used, p + d->at[i].off, d->at[i].len);
		d->at[i].off = used;
		used = (uint16_t)(used + d->at[i].len);
	}
	d->used = used;
	return ls;
}

static long http_feed(void *st, int dir, const uint8_t *p, size_t n,
		      struct bt_msg *m)
{
	struct http_state *s = st;
	struct http_dir *d = &s->d[dir & 1];
	size_t i = 0, k;
	int done, r;

	dir &= 1;
	if (s->tunnel)
		return BT_PP_LOST;
	if (d->st == ST_HEAD && d->f == 0 && d->cur == 0 && d->line == 0 &&
	    (i = head_whole(s, d, dir, p, n, m, &r)) != 0 && r > 0)
		return (long)i;
	while (i < n) {
		switch (d->st) {
		case ST_HEAD:
		case ST_TRAILER:
			if (d->st == ST_HEAD && (d->f & F_START) &&
			    d->cur == 0 && d->line == 0) {
				size_t i0 = i;
				r = fields_in_place(s, d, p, n, &i);
				if (r < 0)
					return BT_PP_LOST;
				if (r > 0) {
					emit(s, d, m, d->arena);
					return (long)i;
				}
				if (i != i0)
					break;
			}
			if (d->cur == 0 && (k = line_in_place(d, p + i, n - i))) {
				/* a whole line in the input: parsed where it is */
				if (d->line > HTTP_LINE_MAX || d->head > HTTP_HEAD_MAX)
					return BT_PP_LOST;
				r = head_line(s, d, dir, (const char *)(p + i));
				i += k;
			} else {
				k = take_line(d, p + i, n - i, &done);
				if (!k || d->line > HTTP_LINE_MAX ||
				    d->head > HTTP_HEAD_MAX)
					return BT_PP_LOST;
				i += k;
				if (!done)
					break;
				r = head_line(s, d, dir, d->arena + d->used);
			}
			if (r < 0)
				return BT_PP_LOST;
			if (r > 0) {
				emit(s, d, m, d->arena);
				return (long)i;
			}
			break;
		case ST_LEN:
			k = n - i < d->remain ? n - i : (size_t)d->remain;
			i += k;
			d->remain -= k;
			d->body += k;
			if (!d->remain) {
				emit(s, d, m, d->arena);
				return (long)i;
			}
			break;
		case ST_CLOSE:
			d->body += n - i;
			i = n;
			break;
		case ST_CSIZE:
			r = chunk_byte(d, p[i++]);
			if (r < 0)
				return BT_PP_LOST;
			if (r > 0) {
				d->head = 0;
				d->st = d->remain ? ST_CDATA : ST_TRAILER;
			}
			break;
		case ST_CDATA:
			k = n - i < d->remain ? n - i : (size_t)d->remain;
			i += k;
			d->remain -= k;
			d->body += k;
			if (!d->remain)
				d->st = ST_CCRLF;
			break;
		case ST_CCRLF: {
			uint8_t c = p[i++];
			if (c == '\r' && !(d->f & F_CR)) {
				d->f |= F_CR;
			} else if (c == '\n') {
				d->f &= (uint16_t)~F_CR;
				d->st = ST_CSIZE;
			} else {
				return BT_PP_LOST;
			}
			break;
		}
		}
	}
	return (long)n;
}

/* feed()'s ST_LEN, ST_CDATA and ST_CLOSE steps, which never look at the
 * bytes; anything else needs them (0). */
static long http_skip(void *st, int dir, size_t n, struct bt_msg *m)
{
	struct http_state *s = st;
	struct http_dir *d = &s->d[dir & 1];
	size_t k;

	if (s->tunnel)
		return 0;
	switch (d->st) {
	case ST_LEN:
		k = n < d->remain ? n : (size_t)d->remain;
		d->remain -= k;
		d->body += k;
		if (!d->remain)
			emit(s, d, m, d->arena);
		return (long)k;
	case ST_CDATA:
		k = n < d->remain ? n : (size_t)d->remain;
		d->remain -= k;
		d->body += k;
		if (!d->remain)
			d->st = ST_CCRLF;
		return (long)k;
	case ST_CLOSE:
		d->body += n;
		return (long)n;
	default:
		return 0;
	}
}

static void http_eof(void *st, int dir, struct bt_msg *m)
{
	struct http_state *s = st;
	struct http_dir *d = &s->d[dir & 1];
	if (d->st != ST_CLOSE || s->tunnel)
		return;
	emit(s, d, m, d->arena);
	m->flags |= BT_MF_EOF;
}

const struct bt_proto_ops bt_proto_http = {
	.name = "http",
	.id = BT_PROTO_HTTP,
	.state_size = sizeof(struct http_state),
	.sniff = bt_http_sniff,
	.init = http_init,
	.fini = http_fini,
	.feed = http_feed,
	.eof = http_eof,
	.skip = http_skip,
};
