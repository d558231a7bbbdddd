/*
 * event.c - encoder and decoder of the record format in btrace/event.h.
 *
 * Each record type has a schema: the list of fields its body carries after
 * the time delta.  Encoder and decoder walk the same table, so the two can
 * never disagree.  Both are allocation-free and async-signal-safe (the
 * encoder runs inside libbtrace's wrappers).
 *
 * Besides the time, a stream carries one more state: its attribute
 * dictionary (btrace/event.h, docs/log-format.md), a struct bt_ev_dict the
 * caller owns per stream.  The encoders remember attribute values (and
 * OPEN paths) of 2 to BT_DICT_MAXVAL bytes in one of two slots chosen by
 * a hash and write a repeat as a slot reference; a TIME empties the
 * dictionary.
 * Three encoders write the same bytes for the same record and dictionary:
 * bt_ev_encode_msg (MSG from its fields; libbtrace's bt_emit_msg),
 * encode_fast (any type whose upper bound fits) and encode_careful
 * (bounds-checked; cuts attributes to the room, and writes a cut value
 * plain).  Each changes the dictionary only when it writes the record.
 * The decoder follows the slots the record names: a reference to an empty
 * slot decodes as an unknown value (counted in ev->dict_miss), never a
 * guess; a malformed record empties the dictionary.
 *
 * Why one file (over the ~800 lines of the house rule): the encoders and
 * the decoder must agree byte for byte, and they do because they walk one
 * static schema table with the same static field and dictionary helpers;
 * split into files, that table and those helpers become an interface the
 * wrappers' hot path calls through instead of inlining (measured in
 * BENCHMARKS.md phase 6: the MSG and OPEN fast paths are inlined here).
 */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "btrace/event.h"

#define unlikely_ev(x) __builtin_expect(!!(x), 0)
/* a little-endian host (x86-64, arm64): a word's first byte is its low */
#define likely_le() (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)

enum field {
	F_END = 0,
	F_FD, F_FD2, F_RESULT, F_PID, F_PPID, F_TID, F_PTID, F_COOKIE, F_FLAGS,
	F_PROTO, F_DIR, F_KIND, F_CHAN_KIND, F_ROLE, F_OFF, F_LEN, F_STATUS,
	F_WITNESS, F_INO, F_PEER_INO, F_REALTIME, F_LOCAL, F_REMOTE, F_STR,
	F_STR2, F_ATTRS, F_TS_ABS,
};

#define S(...) { __VA_ARGS__, F_END }
static const unsigned char schema[BT_EV_TYPE_MAX][14] = {
	[BT_EV_PAD]          = { F_END },
	[BT_EV_TIME]         = S(F_TS_ABS, F_REALTIME),
	[BT_EV_PROC_START]   = S(F_PID, F_PPID, F_PTID, F_FLAGS, F_REALTIME,
				 F_STR, F_STR2),
	[BT_EV_THREAD_START] = S(F_TID, F_PTID, F_COOKIE, F_PID),
	[BT_EV_THREAD_EXIT]  = { F_END },
	[BT_EV_FORK]         = S(F_RESULT, F_FLAGS),
	[BT_EV_EXEC]         = S(F_RESULT, F_FLAGS, F_STR),
	[BT_EV_SPAWN]        = S(F_RESULT, F_STR),
	[BT_EV_THREAD_CREATE]= S(F_COOKIE, F_RESULT),
	[BT_EV_OPEN]         = S(F_FD, F_FLAGS, F_RESULT, F_STR),
	[BT_EV_CLOSE]        = S(F_FD, F_RESULT),
	[BT_EV_DUP]          = S(F_FD, F_FD2),
	[BT_EV_CHAN]         = S(F_FD, F_FD2, F_CHAN_KIND, F_ROLE, F_FLAGS,
				 F_RESULT, F_LOCAL, F_REMOTE, F_INO, F_PEER_INO,
				 F_STR),
	[BT_EV_PROTO]        = S(F_FD, F_PROTO, F_FLAGS, F_STR),
	[BT_EV_MSG]          = S(F_FD, F_DIR, F_KIND, F_PROTO, F_FLAGS, F_OFF,
				 F_LEN, F_STATUS, F_WITNESS, F_ATTRS),
	[BT_EV_MSG_BEGIN]    = S(F_FD, F_DIR, F_OFF),
	[BT_EV_DATA]         = S(F_FD, F_DIR, F_OFF, F_LEN),
	[BT_EV_READY]        = S(F_FD, F_FLAGS, F_RESULT),
	[BT_EV_ISOLATE]      = S(F_FD, F_OFF, F_LEN, F_RESULT),
	[BT_EV_LOST_SYNC]    = S(F_FD, F_DIR, F_PROTO, F_OFF),
	[BT_EV_NAME_BEGIN]   = S(F_COOKIE, F_FLAGS, F_STR, F_STR2),
	[BT_EV_NAME_END]     = S(F_COOKIE, F_RESULT, F_STR),
	[BT_EV_DROP]         = S(F_LEN, F_FLAGS),
	[BT_EV_SHUTDOWN]     = S(F_FD, F_FLAGS),
	[BT_EV_LOGD]         = S(F_PID, F_FLAGS, F_RESULT, F_STR),
	[BT_EV_WANT]         = S(F_FD, F_FLAGS),
	[BT_EV_SIGNAL]       = S(F_FLAGS),
};
#undef S

/* ---- the attribute dictionary ------------------------------------------ */

void bt_ev_dict_init(struct bt_ev_dict *d)
{
	if (!d)
		return;
	memset(d, 0, sizeof *d);
	d->gen = 1;
}

void bt_ev_dict_reset(struct bt_ev_dict *d)
{
	if (!d)
		return;
	if (unlikely_ev(++d->gen == 0))
		bt_ev_dict_init(d);       /* wrapped: old gens would match */
}

/* Keys whose values are new in every request: never remembered (a slot
 * number would only make them longer and push useful values out). */
#define DICT_NEVER ((1ull << BT_AK_TRACEPARENT) | (1ull << BT_AK_REQUEST_ID))

/*
 * A value of 2 to BT_DICT_MAXVAL bytes as two words: its first and last 8
 * bytes (4 and 4, or the bytes themselves, when shorter).  Up to 16 bytes
 * the words and the length are the whole value, so the writer compares
 * those; a longer one needs its middle compared too.  They also choose the
 * writer's slot (values that differ only in the middle share one).
 */
static inline void dict_key(const char *v, uint32_t n, uint64_t *a,
			    uint64_t *b)
{
	if (n >= 8) {
		memcpy(a, v, 8);
		memcpy(b, v + n - 8, 8);
	} else if (n >= 4) {
		uint32_t x, y;
		memcpy(&x, v, 4);
		memcpy(&y, v + n - 4, 4);
		*a = x;
		*b = y;
	} else {                                 /* 2 or 3 bytes */
		*a = (uint8_t)v[0] | (uint64_t)(uint8_t)v[1] << 8 |
		     (uint64_t)(uint8_t)v[n - 1] << 16;
		*b = 0;
	}
}

/* The hash of a value's words and length: its first slot is bits 40-45,
 * its second (always another) the first with bits 46-51 (odd) flipped. */
static inline uint64_t dict_hash(uint64_t a, uint64_t b, uint32_t n)
{
	return (a ^ (b * 0x9e3779b97f4a7c15ull) ^ n) * 0xff51afd7ed558ccdull;
}

static inline unsigned dict_slot(uint64_t h)
{
	return (unsigned)(h >> 40) % BT_DICT_SLOTS;
}

static inline unsigned dict_slot2(uint64_t h)
{
	return dict_slot(h) ^ ((unsigned)(h >> 46 & (BT_DICT_SLOTS - 1)) | 1);
}

/* Does slot S of D hold value V (N bytes, words A and B)? */
static inline int dict_holds(const struct bt_ev_dict *d, unsigned s,
			     const char *v, uint32_t n, uint64_t a, uint64_t b)
{
	return d->ent[s].gen == d->gen && d->ent[s].len == n &&
	       d->ent[s].ka == a && d->ent[s].kb == b &&
	       (n <= 16 || memcmp(d->ent[s].val + 8, v + 8, n - 16) == 0);
}

/* dict_find past the first slot, which does not hold the value: its
 * second slot, or where to remember it (out of line: the first slot is
 * where a repeat is found, in the encoders' inlined part). */
static __attribute__((noinline)) int dict_find_rest(
		const struct bt_ev_dict *d, const char *v, uint32_t n, int *hit,
		uint64_t a, uint64_t b, uint64_t h, uint64_t used)
{
	unsigned s1 = dict_slot(h), s2 = dict_slot2(h);
	int free1, free2;

	if (dict_holds(d, s2, v, n, a, b)) {
		*hit = 1;
		return (int)s2;
	}
	*hit = 0;
	free1 = !(used >> s1 & 1);
	free2 = !(used >> s2 & 1);
	if (free1 && (!free2 || d->ent[s1].gen != d->gen ||
		      d->ent[s2].gen == d->gen))
		return (int)s1;
	return free2 ? (int)s2 : -1;
}

/*
 * Where value V (N bytes) goes in D: -1 if it is not remembered at all
 * (no dictionary, too short to gain, too long to keep, or both its slots
 * are in USED), else its slot; *HIT says the slot holds it already.  A
 * value has two slots (two values that share the first, as "GET" and
 * "/1k.html" do, both stay): it is looked for in both, and remembered in
 * the first unless that holds a value and the second is empty, or the
 * record used the first already (USED: the slots the record referred to
 * or remembered in so far; docs/log-format.md).  Changes nothing; *A, *B
 * are its words for dict_store.
 */
static inline int dict_find(const struct bt_ev_dict *d, const char *v,
			    uint32_t n, int *hit, uint64_t *a, uint64_t *b,
			    uint64_t used)
{
	unsigned s1;
	uint64_t h;

	if (!d || !v || n < 2 || n > BT_DICT_MAXVAL)
		return -1;
	dict_key(v, n, a, b);
	h = dict_hash(*a, *b, n);
	s1 = dict_slot(h);
	if (dict_holds(d, s1, v, n, *a, *b)) {
		*hit = 1;
		return (int)s1;
	}
	return dict_find_rest(d, v, n, hit, *a, *b, h, used);
}

static inline void dict_store(struct bt_ev_dict *d, unsigned s,
			      const char *v, uint32_t n, uint64_t a,
			      uint64_t b)
{
	d->ent[s].gen = d->gen;
	d->ent[s].len = (uint16_t)n;
	d->ent[s].ka = a;
	d->ent[s].kb = b;
	memcpy(d->ent[s].val, v, n);
}

/*
 * How attribute A goes out: -1 a plain literal, else its slot (*HIT: a
 * reference).  Remembers the value (the caller writes it).  *USED holds
 * the slots the record used so far: a value is never remembered in one of
 * them (a reader's earlier reference into it must keep its value while
 * the record is decoded; docs/log-format.md).
 */
static inline int dict_attr(struct bt_ev_dict *d, const struct bt_attr *a,
			    int *hit, uint64_t *used)
{
	uint64_t ka, kb, bit;
	int s;

	if (!d || a->key > BT_AK_KEY_MASK || (DICT_NEVER >> a->key & 1))
		return -1;
	s = dict_find(d, a->val, a->len, hit, &ka, &kb, *used);
	if (s < 0)
		return -1;
	bit = 1ull << s;
	if (!*hit)
		dict_store(d, (unsigned)s, a->val, a->len, ka, kb);
	*used |= bit;
	return s;
}

/* ---- encoder ---------------------------------------------------------- */

struct wbuf { uint8_t *p, *end; int ok; };

static inline void w_bytes(struct wbuf *w, const void *b, size_t n)
{
	if (!w->ok || (size_t)(w->end - w->p) < n) { w->ok = 0; return; }
	memcpy(w->p, b, n);
	w->p += n;
}

static inline void w_u(struct wbuf *w, uint64_t v)
{
	if (!w->ok || w->end - w->p < 10) {
		uint8_t tmp[10];
		w_bytes(w, tmp, bt_put_varint(tmp, v));
		return;
	}
	w->p += bt_put_varint(w->p, v);
}

static inline void w_str(struct wbuf *w, const char *s, uint32_t n)
{
	if (!s)
		n = 0;
	if (n > BT_EV_MAX_STR)
		n = BT_EV_MAX_STR;
	w_u(w, n);
	if (n)
		w_bytes(w, s, n);
}

static void w_addr(struct wbuf *w, const struct bt_addr *a)
{
	w_u(w, a->family);
	if (a->family == BT_AF_INET)
		w_bytes(w, a->addr, 4);
	else if (a->family == BT_AF_INET6)
		w_bytes(w, a->addr, 16);
	if (a->family == BT_AF_INET || a->family == BT_AF_INET6)
		w_u(w, a->port);
}

/*
 * Attributes go last in a MSG body; whatever does not fit the body limit is
 * cut (values shortened, then later attributes dropped) rather than failing
 * the whole record.  Returns the truncation flag.
 */
static inline __attribute__((always_inline)) uint8_t *p_attr(uint8_t *p,
		const struct bt_attr *a, struct bt_ev_dict *d, uint64_t *used);

static int w_attrs(struct wbuf *w, const struct bt_event *ev,
		   struct bt_ev_dict *d)
{
	uint8_t *count_at = w->p;
	unsigned n = ev->nattr > BT_EV_MAX_ATTR ? BT_EV_MAX_ATTR : ev->nattr;
	unsigned done = 0;
	int trunc = 0;
	uint64_t used = 0;

	w_u(w, n);               /* one byte: n <= 8 */
	for (unsigned i = 0; i < n && w->ok; i++) {
		const struct bt_attr *a = &ev->attr[i];
		size_t room = (size_t)(w->end - w->p);
		uint32_t len = a->len;
		if (len > BT_EV_MAX_STR) { len = BT_EV_MAX_STR; trunc = 1; }
		int hit = 0, s = -1;
		uint64_t ka, kb;
		if (d && a->key <= BT_AK_KEY_MASK && !(DICT_NEVER >> a->key & 1))
			s = dict_find(d, a->val, a->len, &hit, &ka, &kb,
				      used);
		if (s >= 0 && (hit ? 2 : 3 + (size_t)len) <= room) {
			/* through the dictionary, as the fast encoders */
			w->p = p_attr(w->p, a, d, &used);
			done++;
			continue;
		}
		if (room < 4) { trunc = 1; break; }
		if (len + 4 > room) { len = (uint32_t)(room - 4); trunc = 1; }
		if (len == a->len && s < 0) {
			/* whole: what the fast encoders write (at most
			 * len + 3 bytes, which the room holds) */
			w->p = p_attr(w->p, a, d, &used);
		} else {
			uint8_t key = a->key;
			w_bytes(w, &key, 1);
			w_str(w, a->val, len);
		}
		done++;
	}
	if (w->ok && done != n)
		*count_at = (uint8_t)done;
	return trunc;
}

/*
 * The careful encoder: bounds-checked writes, attributes cut to fit.  Used
 * when the record may not fit its room (the end of a ring lap, long
 * strings); otherwise encode_fast produces the same bytes.
 */
static size_t encode_careful(uint8_t *dst, size_t cap,
			     const struct bt_event *ev, uint64_t *prev_ts,
			     struct bt_ev_dict *d)
{
	/* Body goes at dst+3 (2-byte length slot); moved down if it is short. */
	size_t room = cap - 3;
	if (room > BT_EV_MAX_BODY)
		room = BT_EV_MAX_BODY;
	struct wbuf w = { dst + 3, dst + 3 + room, 1 };
	uint8_t *flags_at = NULL;
	uint32_t flags = ev->flags;
	int ps = -1, phit = 0;
	uint64_t pa = 0, pb = 0;

	if (ev->type == BT_EV_OPEN && d &&
	    !(flags & (BT_OPEN_PATH_KEEP | BT_OPEN_PATH_REF)) &&
	    (ps = dict_find(d, ev->str, ev->str_len, &phit, &pa, &pb, 0)) >= 0)
		flags |= phit ? BT_OPEN_PATH_REF : BT_OPEN_PATH_KEEP;

	if (ev->type != BT_EV_TIME) {
		uint64_t dt = ev->ts >= *prev_ts ? ev->ts - *prev_ts : 0;
		w_u(&w, dt);
	}
	for (const unsigned char *f = schema[ev->type]; *f != F_END; f++) {
		switch (*f) {
		case F_FD:        w_u(&w, bt_zigzag(ev->fd)); break;
		case F_FD2:       w_u(&w, bt_zigzag(ev->fd2)); break;
		case F_RESULT:    w_u(&w, bt_zigzag(ev->result)); break;
		case F_PID:       w_u(&w, ev->pid); break;
		case F_PPID:      w_u(&w, ev->ppid); break;
		case F_TID:       w_u(&w, ev->tid); break;
		case F_PTID:      w_u(&w, ev->ptid); break;
		case F_COOKIE:    w_u(&w, ev->cookie); break;
		case F_FLAGS:     flags_at = w.p; w_u(&w, flags); break;
		case F_PROTO:     w_u(&w, ev->proto); break;
		case F_DIR:       w_u(&w, ev->dir); break;
		case F_KIND:      w_u(&w, ev->kind); break;
		case F_CHAN_KIND: w_u(&w, ev->chan_kind); break;
		case F_ROLE:      w_u(&w, ev->role); break;
		case F_OFF:       w_u(&w, ev->off); break;
		case F_LEN:       w_u(&w, ev->len); break;
		case F_STATUS:    w_u(&w, ev->status); break;
		case F_WITNESS:   w_u(&w, ev->witness); break;
		case F_INO:       w_u(&w, ev->ino); break;
		case F_PEER_INO:  w_u(&w, ev->peer_ino); break;
		case F_REALTIME:  w_u(&w, ev->realtime); break;
		case F_TS_ABS:    w_u(&w, ev->ts); break;
		case F_LOCAL:     w_addr(&w, &ev->local); break;
		case F_REMOTE:    w_addr(&w, &ev->remote); break;
		case F_STR:
			if (ps >= 0)
				w_u(&w, (unsigned)ps);
			if (!phit)
				w_str(&w, ev->str, ev->str_len);
			break;
		case F_STR2:      w_str(&w, ev->str2, ev->str2_len); break;
		case F_ATTRS:
			if (w_attrs(&w, ev, d) && flags_at && w.ok &&
			    !(ev->flags & BT_MF_TRUNC) && ev->flags < 0x40)
				*flags_at = (uint8_t)(ev->flags | BT_MF_TRUNC);
			break;
		}
	}
	if (!w.ok)
		return 0;
	if (ps >= 0 && !phit)
		dict_store(d, (unsigned)ps, ev->str, ev->str_len, pa, pb);
	if (ev->type == BT_EV_TIME)
		bt_ev_dict_reset(d);

	size_t body = (size_t)(w.p - (dst + 3));
	/* The decoder sees prev + dt: time never runs backwards in a stream. */
	if (ev->type == BT_EV_TIME || ev->ts > *prev_ts)
		*prev_ts = ev->ts;
	dst[0] = ev->type;
	if (body < 0x80) {
		dst[1] = (uint8_t)body;
		memmove(dst + 2, dst + 3, body);
		return body + 2;
	}
	dst[1] = (uint8_t)(body | 0x80);
	dst[2] = (uint8_t)(body >> 7);
	return body + 3;
}

/* ---- the fast encoder --------------------------------------------------- */

/* Per type: an upper bound of its body without the variable bytes (10 per
 * varint, 20 per address, 3 per string length), and which variable fields
 * it carries.  Filled from the schema on first use (no constructor: the
 * shim may encode before constructors ran; async-signal-safe). */
enum { V_STR = 1, V_STR2 = 2, V_ATTRS = 4 };
static struct { uint16_t fixed; uint8_t var; } bound_tab[BT_EV_TYPE_MAX];
static int bound_ready;

static void bound_init(void)
{
	for (unsigned t = 0; t < BT_EV_TYPE_MAX; t++) {
		unsigned b = 10, v = 0;                 /* dt */
		for (const unsigned char *f = schema[t]; *f != F_END; f++) {
			switch (*f) {
			case F_LOCAL: case F_REMOTE: b += 20; break;
			case F_STR:   b += 3; v |= V_STR; break;
			case F_STR2:  b += 3; v |= V_STR2; break;
			case F_ATTRS: b += 1 + BT_EV_MAX_ATTR * 3; v |= V_ATTRS; break;
			default:      b += 10; break;
			}
		}
		/* several threads may get here at once: they store the same
		 * values, atomically */
		__atomic_store_n(&bound_tab[t].fixed, (uint16_t)b,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&bound_tab[t].var, (uint8_t)v, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&bound_ready, 1, __ATOMIC_RELEASE);
}

/* The body can be no longer than this; SIZE_MAX when it needs the careful
 * encoder (a string or attribute longer than BT_EV_MAX_STR is cut). */
static inline size_t body_bound(const struct bt_event *ev)
{
	size_t b = __atomic_load_n(&bound_tab[ev->type].fixed, __ATOMIC_RELAXED);
	unsigned v = __atomic_load_n(&bound_tab[ev->type].var, __ATOMIC_RELAXED);

	if (v & V_STR) {
		if (ev->str && ev->str_len > BT_EV_MAX_STR)
			return SIZE_MAX;
		b += ev->str ? ev->str_len : 0;
	}
	if (v & V_STR2) {
		if (ev->str2 && ev->str2_len > BT_EV_MAX_STR)
			return SIZE_MAX;
		b += ev->str2 ? ev->str2_len : 0;
	}
	if (v & V_ATTRS) {
		unsigned n = ev->nattr > BT_EV_MAX_ATTR ? BT_EV_MAX_ATTR : ev->nattr;
		for (unsigned i = 0; i < n; i++) {
			if (ev->attr[i].len > BT_EV_MAX_STR)
				return SIZE_MAX;
			b += ev->attr[i].val ? ev->attr[i].len : 0;
		}
	}
	return b;
}

/* Unchecked writers: the caller made sure the bound fits. */
static inline uint8_t *p_u(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint8_t *p_str(uint8_t *p, const char *s, uint32_t n)
{
	if (!s)
		n = 0;
	p = p_u(p, n);
	if (n) {
		memcpy(p, s, n);
		p += n;
	}
	return p;
}

/*
 * N bytes of S to P, as memcpy, without its call for a value of up to 16
 * bytes (most attribute values): two overlapping words, or the first,
 * middle and last byte.  The MSG encoder's values only (p_val): the other
 * encoders keep p_str, whose copies are longer and rarer.
 */
static inline __attribute__((always_inline)) void copy_val(uint8_t *p,
		const char *s, uint32_t n)
{
	if (n >= 8 && n <= 16) {
		uint64_t x, y;
		memcpy(&x, s, 8);
		memcpy(&y, s + n - 8, 8);
		memcpy(p, &x, 8);
		memcpy(p + n - 8, &y, 8);
	} else if (n >= 4 && n < 8) {
		uint32_t x, y;
		memcpy(&x, s, 4);
		memcpy(&y, s + n - 4, 4);
		memcpy(p, &x, 4);
		memcpy(p + n - 4, &y, 4);
	} else if (n && n < 4) {
		uint8_t a = (uint8_t)s[0], b = (uint8_t)s[n >> 1],
			c = (uint8_t)s[n - 1];
		p[0] = a;
		p[n >> 1] = b;
		p[n - 1] = c;
	} else if (n) {
		memcpy(p, s, n);
	}
}

/* p_str of an attribute value (copy_val) */
static inline __attribute__((always_inline)) uint8_t *p_val(uint8_t *p,
		const char *s, uint32_t n)
{
	if (!s)
		n = 0;
	p = p_u(p, n);
	copy_val(p, s, n);
	return p + n;
}

static inline uint8_t *p_addr(uint8_t *p, const struct bt_addr *a)
{
	*p++ = a->family;                        /* < 0x80 */
	if (a->family == BT_AF_INET) {
		memcpy(p, a->addr, 4);
		p = p_u(p + 4, a->port);
	} else if (a->family == BT_AF_INET6) {
		memcpy(p, a->addr, 16);
		p = p_u(p + 16, a->port);
	}
	return p;
}

/* Attribute A, through dictionary D (NULL: a plain literal).  At most
 * 4 + A->len bytes (key, varint length, value; or key, slot, length,
 * value of at most BT_DICT_MAXVAL bytes; or key, slot). */
static inline __attribute__((always_inline)) uint8_t *p_attr_dict_in(
		uint8_t *p, const struct bt_attr *a, struct bt_ev_dict *d,
		uint64_t *used)
{
	int hit = 0, s = dict_attr(d, a, &hit, used);

	if (s < 0) {
		*p++ = a->key;
		return p_str(p, a->val, a->len);
	}
	*p++ = (uint8_t)(a->key | (hit ? BT_AK_REF : BT_AK_KEEP));
	*p++ = (uint8_t)s;                       /* < 0x80 */
	if (hit)
		return p;
	return p_str(p, a->val, a->len);
}

static __attribute__((noinline)) uint8_t *p_attr_dict(uint8_t *p,
		const struct bt_attr *a, struct bt_ev_dict *d, uint64_t *used)
{
	return p_attr_dict_in(p, a, d, used);
}

static inline __attribute__((always_inline)) uint8_t *p_attr(uint8_t *p,
		const struct bt_attr *a, struct bt_ev_dict *d, uint64_t *used)
{
	/* the values never remembered go out here, without a call */
	if (!d || a->len < 2 || a->len > BT_DICT_MAXVAL) {
		*p++ = a->key;
		return p_str(p, a->val, a->len);
	}
	return p_attr_dict(p, a, d, used);
}

/* The body of a TYPE record was written at DST+2, up to P: its header
 * (the body moved up one byte when its length needs two).  The size. */
static inline size_t finish_body(uint8_t *dst, uint8_t *p, uint8_t type)
{
	size_t body = (size_t)(p - (dst + 2));
	dst[0] = type;
	if (body < 0x80) {
		dst[1] = (uint8_t)body;
		return body + 2;
	}
	memmove(dst + 3, dst + 2, body);
	dst[1] = (uint8_t)(body | 0x80);
	dst[2] = (uint8_t)(body >> 7);
	return body + 3;
}

/* The body was written at DST+2, up to P: the header, the time. */
static inline size_t finish_fast(uint8_t *dst, uint8_t *p,
				 const struct bt_event *ev, uint64_t *prev_ts)
{
	if (ev->type == BT_EV_TIME || ev->ts > *prev_ts)
		*prev_ts = ev->ts;
	return finish_body(dst, p, (uint8_t)ev->type);
}

/* An OPEN path through dictionary D (the fast encoders): its slot, or -1
 * when it goes out plain; *FLAGS gets the path's flag, *HIT whether it is
 * a reference.  A new value is remembered at once. */
static inline int open_path_dict(struct bt_ev_dict *d, const char *path,
				 uint32_t len, uint32_t *flags, int *hit)
{
	uint64_t pa, pb;
	int ps;

	*hit = 0;
	if (!d || (*flags & (BT_OPEN_PATH_KEEP | BT_OPEN_PATH_REF)) ||
	    (ps = dict_find(d, path, len, hit, &pa, &pb, 0)) < 0)
		return -1;
	*flags |= *hit ? BT_OPEN_PATH_REF : BT_OPEN_PATH_KEEP;
	if (!*hit)
		dict_store(d, (unsigned)ps, path, len, pa, pb);
	return ps;
}

/* The body written at DST+2 (a one-byte length in front), moved up one
 * byte in the rare case it needs two.  Same bytes as encode_careful. */
static size_t encode_fast(uint8_t *dst, const struct bt_event *ev,
			  uint64_t *prev_ts, struct bt_ev_dict *d)
{
	uint8_t *p = dst + 2;
	uint32_t flags = ev->flags;
	int phit = 0;
	int ps = ev->type == BT_EV_OPEN ?
		open_path_dict(d, ev->str, ev->str_len, &flags, &phit) : -1;

	if (ev->type != BT_EV_TIME)
		p = p_u(p, ev->ts >= *prev_ts ? ev->ts - *prev_ts : 0);
	for (const unsigned char *f = schema[ev->type]; *f != F_END; f++) {
		switch (*f) {
		case F_FD:        p = p_u(p, bt_zigzag(ev->fd)); break;
		case F_FD2:       p = p_u(p, bt_zigzag(ev->fd2)); break;
		case F_RESULT:    p = p_u(p, bt_zigzag(ev->result)); break;
		case F_PID:       p = p_u(p, ev->pid); break;
		case F_PPID:      p = p_u(p, ev->ppid); break;
		case F_TID:       p = p_u(p, ev->tid); break;
		case F_PTID:      p = p_u(p, ev->ptid); break;
		case F_COOKIE:    p = p_u(p, ev->cookie); break;
		case F_FLAGS:     p = p_u(p, flags); break;
		case F_PROTO:     p = p_u(p, ev->proto); break;
		case F_DIR:       p = p_u(p, ev->dir); break;
		case F_KIND:      p = p_u(p, ev->kind); break;
		case F_CHAN_KIND: p = p_u(p, ev->chan_kind); break;
		case F_ROLE:      p = p_u(p, ev->role); break;
		case F_OFF:       p = p_u(p, ev->off); break;
		case F_LEN:       p = p_u(p, ev->len); break;
		case F_STATUS:    p = p_u(p, ev->status); break;
		case F_WITNESS:   p = p_u(p, ev->witness); break;
		case F_INO:       p = p_u(p, ev->ino); break;
		case F_PEER_INO:  p = p_u(p, ev->peer_ino); break;
		case F_REALTIME:  p = p_u(p, ev->realtime); break;
		case F_TS_ABS:    p = p_u(p, ev->ts); break;
		case F_LOCAL:     p = p_addr(p, &ev->local); break;
		case F_REMOTE:    p = p_addr(p, &ev->remote); break;
		case F_STR:
			if (ps >= 0)
				*p++ = (uint8_t)ps;
			if (!phit)
				p = p_str(p, ev->str, ev->str_len);
			break;
		case F_STR2:      p = p_str(p, ev->str2, ev->str2_len); break;
		case F_ATTRS: {
			unsigned n = ev->nattr > BT_EV_MAX_ATTR ? BT_EV_MAX_ATTR
							       : ev->nattr;
			uint64_t used = 0;
			*p++ = (uint8_t)n;
			for (unsigned i = 0; i < n; i++)
				p = p_attr(p, &ev->attr[i], d, &used);
			break;
		}
		}
	}
	if (ev->type == BT_EV_TIME)
		bt_ev_dict_reset(d);

	return finish_fast(dst, p, ev, prev_ts);
}

/*
 * MSG, the most frequent record with attributes, without the schema walk:
 * the same bytes as encode_fast.  0 (nothing written) when an attribute is
 * longer than BT_EV_MAX_STR or the record may not fit CAP.
 */
size_t bt_ev_msg_bound(const struct bt_msg_rec *m)
{
	unsigned n = m->nattr > BT_EV_MAX_ATTR ? BT_EV_MAX_ATTR : m->nattr;
	size_t bound = BT_EV_MSG_BOUND(n, 0);   /* dt, 9 fields, attrs */

	for (unsigned i = 0; i < n; i++) {
		if (m->attr[i].len > BT_EV_MAX_STR)
			return SIZE_MAX;
		bound += m->attr[i].val ? m->attr[i].len : 0;
	}
	return bound;
}

size_t bt_ev_encode_msg(uint8_t *dst, size_t cap, const struct bt_msg_rec *m,
			uint64_t *prev_ts, struct bt_ev_dict *d)
{
	size_t bound = bt_ev_msg_bound(m);

	if (bound > BT_EV_MAX_BODY || bound + 3 > cap)
		return 0;
	return bt_ev_encode_msg_fit(dst, m, prev_ts, d);
}

/*
 * The MSG encoder's attributes through dictionary D: p_attr for each,
 * written for the common case, a value of 2 to 16 bytes that one of its
 * two slots holds already (a reference): the dictionary's generation
 * read once, both slots looked at inline, and what is rarer (a longer
 * value, a value to remember) out of line in msg_attr_slow, so that the
 * loop keeps its state in registers.  The same bytes and the same
 * dictionary as p_attr.
 */
/* dict_holds for a value of at most 16 bytes (its words are all of it),
 * GEN being D's generation */
static inline int dict_holds_short(const struct bt_ev_dict *d, unsigned s,
				   uint32_t gen, uint32_t n, uint64_t a,
				   uint64_t b)
{
	return d->ent[s].gen == gen && d->ent[s].len == n &&
	       d->ent[s].ka == a && d->ent[s].kb == b;
}

static __attribute__((noinline)) uint8_t *msg_attr_slow(uint8_t *p,
		const struct bt_attr *a, struct bt_ev_dict *d, uint64_t *used)
{
	return p_attr_dict_in(p, a, d, used);
}

static inline __attribute__((always_inline)) uint8_t *msg_attrs_dict(
		uint8_t *p, const struct bt_attr *at, unsigned n,
		struct bt_ev_dict *d)
{
	const uint32_t gen = d->gen;
	uint64_t used = 0;

	for (unsigned i = 0; i < n; i++) {
		const struct bt_attr *a = &at[i];
		const char *v = a->val;
		uint32_t len = a->len;
		unsigned key = a->key;

		if (len - 2 > BT_DICT_MAXVAL - 2 || !v ||
		    key > BT_AK_KEY_MASK || (DICT_NEVER >> key & 1)) {
			*p++ = (uint8_t)key;             /* a plain literal */
			p = p_val(p, v, len);
			continue;
		}
		uint64_t ka, kb, h;
		dict_key(v, len, &ka, &kb);
		h = dict_hash(ka, kb, len);
		unsigned sl = dict_slot(h);
		if (len <= 16 && dict_holds_short(d, sl, gen, len, ka, kb))
			goto ref;
		sl = dict_slot2(h);
		if (len <= 16 && dict_holds_short(d, sl, gen, len, ka, kb))
			goto ref;
		p = msg_attr_slow(p, a, d, &used);
		continue;
ref:
		p[0] = (uint8_t)(key | BT_AK_REF);          /* a reference */
		p[1] = (uint8_t)sl;
		p += 2;
		used |= 1ull << sl;
	}
	return p;
}

size_t bt_ev_encode_msg_fit(uint8_t *dst, const struct bt_msg_rec *m,
			    uint64_t *prev_ts, struct bt_ev_dict *d)
{
	unsigned n = m->nattr > BT_EV_MAX_ATTR ? BT_EV_MAX_ATTR : m->nattr;
	uint8_t *p = dst + 2;
	uint32_t dkp;

	p = p_u(p, m->ts >= *prev_ts ? m->ts - *prev_ts : 0);
	p = p_u(p, bt_zigzag(m->fd));
	/* dir, kind and proto, each < 0x80 (always, in practice): one
	 * varint byte each, stored at once (the fourth byte, nattr, is
	 * overwritten by the next field) */
	_Static_assert(offsetof(struct bt_msg_rec, kind) ==
		       offsetof(struct bt_msg_rec, dir) + 1 &&
		       offsetof(struct bt_msg_rec, proto) ==
		       offsetof(struct bt_msg_rec, dir) + 2,
		       "dir, kind, proto adjacent");
	memcpy(&dkp, &m->dir, 4);
	if (likely_le() && !(dkp & 0x808080u)) {
		memcpy(p, &dkp, 4);
		p += 3;
	} else {
		p = p_u(p, m->dir);
		p = p_u(p, m->kind);
		p = p_u(p, m->proto);
	}
	p = p_u(p, m->flags);
	p = p_u(p, m->off);
	p = p_u(p, m->len);
	p = p_u(p, m->status);
	p = p_u(p, m->witness);
	*p++ = (uint8_t)n;
	if (d) {
		p = msg_attrs_dict(p, m->attr, n, d);
	} else {
		for (unsigned i = 0; i < n; i++) {
			*p++ = m->attr[i].key;
			p = p_val(p, m->attr[i].val, m->attr[i].len);
		}
	}
	if (m->ts > *prev_ts)
		*prev_ts = m->ts;
	return finish_body(dst, p, BT_EV_MSG);
}

size_t bt_ev_encode_open(uint8_t *dst, uint64_t ts, uint64_t *prev_ts,
			 int32_t fd, uint32_t flags, int64_t result,
			 const char *path, uint32_t len, struct bt_ev_dict *d)
{
	uint8_t *p = dst + 2;
	int phit;
	int ps = open_path_dict(d, path, len, &flags, &phit);

	p = p_u(p, ts >= *prev_ts ? ts - *prev_ts : 0);
	p = p_u(p, bt_zigzag(fd));
	p = p_u(p, flags);
	p = p_u(p, bt_zigzag(result));
	if (ps >= 0)
		*p++ = (uint8_t)ps;
	if (!phit)
		p = p_str(p, path, len);
	if (ts > *prev_ts)
		*prev_ts = ts;
	return finish_body(dst, p, BT_EV_OPEN);
}

size_t bt_ev_encode(uint8_t *dst, size_t cap, const struct bt_event *ev,
		    uint64_t *prev_ts)
{
	return bt_ev_encode_dict(dst, cap, ev, prev_ts, NULL);
}

size_t bt_ev_encode_dict(uint8_t *dst, size_t cap, const struct bt_event *ev,
			 uint64_t *prev_ts, struct bt_ev_dict *d)
{
	size_t bound;

	if (ev->type >= BT_EV_TYPE_MAX || ev->type == BT_EV_PAD || cap < 4)
		return 0;
	if (ev->type == BT_EV_MSG) {
		struct bt_msg_rec m = {
			.ts = ev->ts, .fd = ev->fd, .dir = ev->dir,
			.kind = ev->kind, .proto = ev->proto,
			.nattr = ev->nattr, .flags = ev->flags,
			.status = ev->status, .off = ev->off, .len = ev->len,
			.witness = ev->witness, .attr = ev->attr,
		};
		size_t n = bt_ev_encode_msg(dst, cap, &m, prev_ts, d);
		if (n)
			return n;
		return encode_careful(dst, cap, ev, prev_ts, d);
	}
	if (unlikely_ev(!__atomic_load_n(&bound_ready, __ATOMIC_ACQUIRE)))
		bound_init();
	bound = body_bound(ev);
	if (bound <= BT_EV_MAX_BODY && bound + 3 <= cap)
		return encode_fast(dst, ev, prev_ts, d);
	return encode_careful(dst, cap, ev, prev_ts, d);
}

size_t bt_ev_encode_careful(uint8_t *dst, size_t cap, const struct bt_event *ev,
			    uint64_t *prev_ts, struct bt_ev_dict *d)
{
	if (ev->type >= BT_EV_TYPE_MAX || ev->type == BT_EV_PAD || cap < 4)
		return 0;
	return encode_careful(dst, cap, ev, prev_ts, d);
}

size_t bt_ev_encode_fast(uint8_t *dst, const struct bt_event *ev,
			 uint64_t *prev_ts, struct bt_ev_dict *d)
{
	if (ev->type >= BT_EV_TYPE_MAX || ev->type == BT_EV_PAD)
		return 0;
	if (ev->type == BT_EV_MSG) {
		struct bt_msg_rec m = {
			.ts = ev->ts, .fd = ev->fd, .dir = ev->dir,
			.kind = ev->kind, .proto = ev->proto,
			.nattr = ev->nattr, .flags = ev->flags,
			.status = ev->status, .off = ev->off, .len = ev->len,
			.witness = ev->witness, .attr = ev->attr,
		};
		return bt_ev_encode_msg(dst, BT_EV_MAX_RECORD, &m, prev_ts, d);
	}
	if (unlikely_ev(!__atomic_load_n(&bound_ready, __ATOMIC_ACQUIRE)))
		bound_init();
	if (body_bound(ev) > BT_EV_MAX_BODY)
		return 0;
	return encode_fast(dst, ev, prev_ts, d);
}

/* ---- decoder ---------------------------------------------------------- */

struct rbuf { const uint8_t *p, *end; int ok; };

static inline uint64_t r_u(struct rbuf *r)
{
	uint64_t v = 0;
	size_t n;
	if (!r->ok)
		return 0;
	n = bt_get_varint(r->p, (size_t)(r->end - r->p), &v);
	if (!n) { r->ok = 0; return 0; }
	r->p += n;
	return v;
}

static const char *r_str(struct rbuf *r, uint32_t *len)
{
	uint64_t n = r_u(r);
	const char *s;
	if (!r->ok || n > (uint64_t)(r->end - r->p)) {
		r->ok = 0;
		*len = 0;
		return NULL;
	}
	s = (const char *)r->p;
	r->p += n;
	*len = (uint32_t)n;
	return s;
}

static void r_addr(struct rbuf *r, struct bt_addr *a)
{
	uint64_t fam = r_u(r);
	size_t n = fam == BT_AF_INET ? 4 : fam == BT_AF_INET6 ? 16 : 0;
	memset(a, 0, sizeof *a);
	if (!r->ok)
		return;
	if (fam != BT_AF_NONE && fam != BT_AF_UNIX && !n) { r->ok = 0; return; }
	a->family = (uint8_t)fam;
	if (n) {
		if ((size_t)(r->end - r->p) < n) { r->ok = 0; return; }
		memcpy(a->addr, r->p, n);
		r->p += n;
		uint64_t port = r_u(r);
		if (port > 0xffff) { r->ok = 0; return; }
		a->port = (uint16_t)port;
	}
}

/*
 * A value that may go through the dictionary: HOW is 0 (a plain string),
 * BT_AK_KEEP (slot, string: remembered) or BT_AK_REF (slot: resolved).  A
 * reference to an empty slot, or without a dictionary, is unknown (NULL,
 * counted in ev->dict_miss); a slot number out of range is malformed.
 */
static const char *r_dstr(struct rbuf *r, unsigned how, struct bt_ev_dict *d,
			  struct bt_event *ev, uint32_t *len, uint64_t *used)
{
	uint64_t s = 0;
	const char *v;

	*len = 0;
	if (how) {
		s = r_u(r);
		if (!r->ok || s >= BT_DICT_SLOTS ||
		    (how == BT_AK_KEEP && (*used >> s & 1))) {
			/* out of range, or a slot this record used before
			 * remembered again (an earlier value would change) */
			r->ok = 0;
			return NULL;
		}
		*used |= 1ull << s;
	}
	if (how == BT_AK_REF) {
		if (!d || d->ent[s].gen != d->gen) {
			if (ev->dict_miss < 0xff)
				ev->dict_miss++;
			return NULL;
		}
		*len = d->ent[s].len;
		return d->ent[s].val;
	}
	v = r_str(r, len);
	if (how == BT_AK_KEEP && !d)
		ev->dict_keep = 1;
	if (how == BT_AK_KEEP && r->ok && d) {
		if (v && *len >= 2 && *len <= BT_DICT_MAXVAL) {
			uint64_t ka, kb;
			dict_key(v, *len, &ka, &kb);
			dict_store(d, (unsigned)s, v, *len, ka, kb);
		} else if (v && *len <= 1) {
			/* never written so, but not damage */
			dict_store(d, (unsigned)s, v, *len, 0, 0);
		} else
			d->ent[s].gen = d->gen - 1;   /* cannot keep it: empty */
	}
	return v;
}

static void r_attrs(struct rbuf *r, struct bt_event *ev, struct bt_ev_dict *d)
{
	uint64_t n = r_u(r), used = 0;
	if (!r->ok)
		return;
	if (n > BT_EV_MAX_ATTR) { r->ok = 0; return; }
	for (unsigned i = 0; i < n && r->ok; i++) {
		uint32_t len;
		unsigned k, how;
		if (r->p >= r->end) { r->ok = 0; return; }
		k = *r->p++;
		how = k & (BT_AK_KEEP | BT_AK_REF);
		if (how == (BT_AK_KEEP | BT_AK_REF)) { r->ok = 0; return; }
		ev->attr[i].key = (uint8_t)(k & BT_AK_KEY_MASK);
		ev->attr[i].val = r_dstr(r, how, d, ev, &len, &used);
		ev->attr[i].len = (uint16_t)(len > 0xffff ? 0xffff : len);
	}
	if (r->ok)
		ev->nattr = (uint8_t)n;
}

/* OPEN's path: its flags say whether it goes through the dictionary. */
static void r_open_path(struct rbuf *r, struct bt_event *ev,
			struct bt_ev_dict *d)
{
	uint32_t f = ev->flags & (BT_OPEN_PATH_KEEP | BT_OPEN_PATH_REF);
	uint64_t used = 0;
	unsigned how = f == BT_OPEN_PATH_KEEP ? BT_AK_KEEP :
		       f == BT_OPEN_PATH_REF ? BT_AK_REF : 0;

	if (f && !how) { r->ok = 0; return; }
	ev->flags &= ~(BT_OPEN_PATH_KEEP | BT_OPEN_PATH_REF);
	ev->str = r_dstr(r, how, d, ev, &ev->str_len, &used);
}

long bt_ev_decode(const uint8_t *src, size_t len, struct bt_event *ev,
		  uint64_t *prev_ts)
{
	return bt_ev_decode_dict(src, len, ev, prev_ts, NULL);
}

long bt_ev_decode_dict(const uint8_t *src, size_t len, struct bt_event *ev,
		       uint64_t *prev_ts, struct bt_ev_dict *d)
{
	uint64_t body;
	size_t hl;

	memset(ev, 0, sizeof *ev);
	if (len < 2)
		return 0;
	hl = bt_get_varint(src + 1, len - 1 < 3 ? len - 1 : 3, &body);
	if (!hl) {
		/* incomplete length, or a length longer than 2 bytes */
		return len - 1 >= 3 ? -1 : 0;
	}
	if (body > BT_EV_MAX_BODY)
		return -1;
	if (1 + hl + body > len)
		return 0;
	ev->type = src[0];
	size_t total = 1 + hl + (size_t)body;
	if (ev->type >= BT_EV_TYPE_MAX || ev->type == BT_EV_PAD)
		return (long)total;

	struct rbuf r = { src + 1 + hl, src + total, 1 };
	if (ev->type != BT_EV_TIME) {
		uint64_t dt = r_u(&r);
		ev->ts = *prev_ts + dt;
	}
	for (const unsigned char *f = schema[ev->type]; *f != F_END && r.ok; f++) {
		switch (*f) {
		case F_FD:        ev->fd = (int32_t)bt_unzigzag(r_u(&r)); break;
		case F_FD2:       ev->fd2 = (int32_t)bt_unzigzag(r_u(&r)); break;
		case F_RESULT:    ev->result = bt_unzigzag(r_u(&r)); break;
		case F_PID:       ev->pid = (uint32_t)r_u(&r); break;
		case F_PPID:      ev->ppid = (uint32_t)r_u(&r); break;
		case F_TID:       ev->tid = (uint32_t)r_u(&r); break;
		case F_PTID:      ev->ptid = (uint32_t)r_u(&r); break;
		case F_COOKIE:    ev->cookie = r_u(&r); break;
		case F_FLAGS:     ev->flags = (uint32_t)r_u(&r); break;
		case F_PROTO:     ev->proto = (uint8_t)r_u(&r); break;
		case F_DIR:       ev->dir = (uint8_t)r_u(&r); break;
		case F_KIND:      ev->kind = (uint8_t)r_u(&r); break;
		case F_CHAN_KIND: ev->chan_kind = (uint8_t)r_u(&r); break;
		case F_ROLE:      ev->role = (uint8_t)r_u(&r); break;
		case F_OFF:       ev->off = r_u(&r); break;
		case F_LEN:       ev->len = r_u(&r); break;
		case F_STATUS:    ev->status = (uint32_t)r_u(&r); break;
		case F_WITNESS:   ev->witness = r_u(&r); break;
		case F_INO:       ev->ino = r_u(&r); break;
		case F_PEER_INO:  ev->peer_ino = r_u(&r); break;
		case F_REALTIME:  ev->realtime = r_u(&r); break;
		case F_TS_ABS:    ev->ts = r_u(&r); break;
		case F_LOCAL:     r_addr(&r, &ev->local); break;
		case F_REMOTE:    r_addr(&r, &ev->remote); break;
		case F_STR:
			if (ev->type == BT_EV_OPEN)
				r_open_path(&r, ev, d);
			else
				ev->str = r_str(&r, &ev->str_len);
			break;
		case F_STR2:      ev->str2 = r_str(&r, &ev->str2_len); break;
		case F_ATTRS:     r_attrs(&r, ev, d); break;
		}
	}
	if (!r.ok) {
		/* what it did to the writer's dictionary is not known */
		bt_ev_dict_reset(d);
		return -1;
	}
	if (ev->type == BT_EV_TIME)
		bt_ev_dict_reset(d);
	/* Trailing bytes are fields of a newer version: ignored. */
	*prev_ts = ev->ts;
	return (long)total;
}

/* ---- names and formatting ---------------------------------------------- */

static const char *const type_names[BT_EV_TYPE_MAX] = {
	"pad", "time", "proc_start", "thread_start", "thread_exit", "fork",
	"exec", "spawn", "thread_create", "open", "close", "dup", "chan",
	"proto", "msg", "msg_begin", "data", "ready", "isolate", "lost_sync",
	"name_begin", "name_end", "drop", "shutdown", "logd", "want",
	"signal",
};

const char *bt_ev_type_name(unsigned type)
{
	return type < BT_EV_TYPE_MAX ? type_names[type] : "unknown";
}

static const char *const attr_names[BT_AK_MAX] = {
	"?", "method", "target", "host", "sql", "dns_name", "dns_type",
	"fcgi_script", "fcgi_uri", "traceparent", "request_id", "body_len",
	"error", "tag", "peer", "info", "line", "user", "database",
	"status_text", "params",
};

const char *bt_attr_key_name(unsigned key)
{
	return key < BT_AK_MAX ? attr_names[key] : "unknown";
}

const char *bt_chan_kind_name(unsigned kind)
{
	static const char *const n[] = { "unknown", "tcp", "udp", "unix",
		"unix_dgram", "pipe", "socket" };
	return kind < sizeof n / sizeof n[0] ? n[kind] : "unknown";
}

const char *bt_msg_kind_name(unsigned kind)
{
	static const char *const n[] = { "none", "request", "reply", "oneway",
		"control" };
	return kind < sizeof n / sizeof n[0] ? n[kind] : "unknown";
}

/* Decimal V at P; the number of digits. */
static size_t put_dec(char *p, unsigned v)
{
	char t[10];
	size_t n = 0;
	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		p[i] = t[n - 1 - i];
	return n;
}

char *bt_addr_format(const struct bt_addr *a, char *buf, size_t len)
{
	const uint8_t *b = a->addr;
	switch (a->family) {
	case BT_AF_INET: {
		/* "%u.%u.%u.%u:%u" without printf (bp-reconstruct formats
		 * one per channel end), cut to LEN as snprintf would */
		char t[24];
		size_t n = 0;
		for (int i = 0; i < 4; i++) {
			n += put_dec(t + n, b[i]);
			t[n++] = i < 3 ? '.' : ':';
		}
		n += put_dec(t + n, a->port);
		if (len) {
			if (n > len - 1)
				n = len - 1;
			memcpy(buf, t, n);
			buf[n] = 0;
		}
		break;
	}
	case BT_AF_INET6: {
		char *p = buf;
		size_t left = len;
		int n = snprintf(p, left, "[");
		for (int i = 0; i < 16 && n > 0 && (size_t)n < left; i += 2) {
			p += n; left -= (size_t)n;
			n = snprintf(p, left, "%s%x", i ? ":" : "",
				     (unsigned)(b[i] << 8 | b[i + 1]));
		}
		if (n > 0 && (size_t)n < left) {
			p += n; left -= (size_t)n;
			snprintf(p, left, "]:%u", a->port);
		}
		break;
	}
	case BT_AF_UNIX:
		snprintf(buf, len, "unix");
		break;
	default:
		snprintf(buf, len, "-");
	}
	return buf;
}

int bt_ev_format(const struct bt_event *ev, char *buf, size_t len)
{
	char l[64], r[64];
	int n = snprintf(buf, len, "%llu %s",
			 (unsigned long long)ev->ts, bt_ev_type_name(ev->type));
	size_t used = n > 0 ? (size_t)n : 0;
#define APP(...) do { if (used < len) { int k_ = snprintf(buf + used, len - used, __VA_ARGS__); if (k_ > 0) used += (size_t)k_; } } while (0)
	switch (ev->type) {
	case BT_EV_TIME:
		APP(" realtime=%llu", (unsigned long long)ev->realtime); break;
	case BT_EV_PROC_START:
		APP(" pid=%u ppid=%u ptid=%u flags=%#x exe=%.*s cmd=%.*s",
		    ev->pid, ev->ppid, ev->ptid, ev->flags, (int)ev->str_len,
		    ev->str ? ev->str : "", (int)ev->str2_len,
		    ev->str2 ? ev->str2 : "");
		break;
	case BT_EV_THREAD_START:
		APP(" tid=%u ptid=%u cookie=%llu pid=%u", ev->tid, ev->ptid,
		    (unsigned long long)ev->cookie, ev->pid);
		break;
	case BT_EV_FORK: case BT_EV_SPAWN: case BT_EV_EXEC:
		APP(" result=%lld flags=%#x %.*s", (long long)ev->result,
		    ev->flags, (int)ev->str_len, ev->str ? ev->str : "");
		break;
	case BT_EV_THREAD_CREATE:
		APP(" cookie=%llu result=%lld", (unsigned long long)ev->cookie,
		    (long long)ev->result);
		break;
	case BT_EV_OPEN:
		if (!ev->str && ev->dict_miss)
			APP(" fd=%d flags=%#x result=%lld path=?", ev->fd,
			    ev->flags, (long long)ev->result);
		else
			APP(" fd=%d flags=%#x result=%lld path=%.*s", ev->fd,
			    ev->flags, (long long)ev->result, (int)ev->str_len,
			    ev->str ? ev->str : "");
		break;
	case BT_EV_CLOSE:
		APP(" fd=%d result=%lld", ev->fd, (long long)ev->result); break;
	case BT_EV_DUP:
		APP(" fd=%d fd2=%d", ev->fd, ev->fd2); break;
	case BT_EV_CHAN:
		APP(" fd=%d fd2=%d kind=%s role=%u flags=%#x result=%lld local=%s remote=%s ino=%llu peer_ino=%llu path=%.*s",
		    ev->fd, ev->fd2, bt_chan_kind_name(ev->chan_kind), ev->role,
		    ev->flags, (long long)ev->result,
		    bt_addr_format(&ev->local, l, sizeof l),
		    bt_addr_format(&ev->remote, r, sizeof r),
		    (unsigned long long)ev->ino,
		    (unsigned long long)ev->peer_ino, (int)ev->str_len,
		    ev->str ? ev->str : "");
		break;
	case BT_EV_PROTO:
		APP(" fd=%d proto=%u how=%u %.*s", ev->fd, ev->proto, ev->flags,
		    (int)ev->str_len, ev->str ? ev->str : "");
		break;
	case BT_EV_MSG:
		APP(" fd=%d dir=%s kind=%s proto=%u flags=%#x off=%llu len=%llu status=%u witness=%llu",
		    ev->fd, ev->dir ? "out" : "in", bt_msg_kind_name(ev->kind),
		    ev->proto, ev->flags, (unsigned long long)ev->off,
		    (unsigned long long)ev->len, ev->status,
		    (unsigned long long)ev->witness);
		for (unsigned i = 0; i < ev->nattr; i++) {
			if (!ev->attr[i].val && ev->attr[i].len == 0 &&
			    ev->dict_miss)
				APP(" %s=?", bt_attr_key_name(ev->attr[i].key));
			else
				APP(" %s=\"%.*s\"",
				    bt_attr_key_name(ev->attr[i].key),
				    (int)ev->attr[i].len,
				    ev->attr[i].val ? ev->attr[i].val : "");
		}
		break;
	case BT_EV_MSG_BEGIN:
		APP(" fd=%d dir=%s off=%llu", ev->fd, ev->dir ? "out" : "in",
		    (unsigned long long)ev->off);
		break;
	case BT_EV_DATA:
		APP(" fd=%d dir=%s off=%llu len=%llu", ev->fd,
		    ev->dir ? "out" : "in", (unsigned long long)ev->off,
		    (unsigned long long)ev->len);
		break;
	case BT_EV_READY:
		APP(" fd=%d events=%#x ready=%lld", ev->fd, ev->flags,
		    (long long)ev->result);
		break;
	case BT_EV_ISOLATE:
		APP(" fd=%d off=%llu asked=%llu gave=%lld", ev->fd,
		    (unsigned long long)ev->off, (unsigned long long)ev->len,
		    (long long)ev->result);
		break;
	case BT_EV_LOST_SYNC:
		APP(" fd=%d dir=%s proto=%u off=%llu", ev->fd,
		    ev->dir ? "out" : "in", ev->proto,
		    (unsigned long long)ev->off);
		break;
	case BT_EV_NAME_BEGIN:
		APP(" cookie=%llu flags=%#x name=%.*s service=%.*s",
		    (unsigned long long)ev->cookie, ev->flags,
		    (int)ev->str_len, ev->str ? ev->str : "",
		    (int)ev->str2_len, ev->str2 ? ev->str2 : "");
		break;
	case BT_EV_NAME_END:
		APP(" cookie=%llu result=%lld addr=%.*s",
		    (unsigned long long)ev->cookie, (long long)ev->result,
		    (int)ev->str_len, ev->str ? ev->str : "");
		break;
	case BT_EV_DROP:
		APP(" count=%llu reason=%u", (unsigned long long)ev->len,
		    ev->flags);
		break;
	case BT_EV_SHUTDOWN:
		APP(" fd=%d how=%u", ev->fd, ev->flags); break;
	case BT_EV_WANT:
		APP(" fd=%d events=%#x", ev->fd, ev->flags); break;
	case BT_EV_SIGNAL:
		APP(" %s", ev->flags == BT_SG_BEGIN ? "begin" :
		    ev->flags == BT_SG_END ? "end" : "?"); break;
	case BT_EV_LOGD:
		APP(" pid=%u flags=%#x result=%lld %.*s", ev->pid, ev->flags,
		    (long long)ev->result, (int)ev->str_len,
		    ev->str ? ev->str : "");
		break;
	default:
		break;
	}
#undef APP
	return (int)used;
}
