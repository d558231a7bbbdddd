/*
 * btrace/proto.h - the protocol processor interface (paper section 3.3).
 *
 * A processor finds message boundaries in the byte stream of one channel
 * and names what each message is (request, reply, ...) with a few
 * attributes and, where the protocol has one, a witness that pairs a reply
 * with its request.  libbtrace runs it on every byte that crosses a traced
 * channel, in each direction, and uses the boundaries for event isolation.
 *
 * Contract (every processor, checked by tests/unit/check_proto_*.c and the
 * fuzz targets):
 *  - per-channel state is a fixed-size block (ops->state_size bytes, at
 *    most 8192: HTTP/2's HPACK tables and streams take 5.7 KiB; the others
 *    stay within 4096) that libbtrace allocates zeroed (calloc, once per
 *    channel) and passes to init; no allocation ever;
 *  - feed() sees each byte of a direction exactly once, in order, in chunks
 *    of any size (1 byte at a time must give the same result as all at
 *    once); it never reads outside [p, p+n);
 *  - the two directions are independent streams sharing one state;
 *  - on input it cannot follow it returns BT_PP_LOST once; libbtrace then
 *    stops calling it and the channel passes through (logged).
 */
#ifndef BTRACE_PROTO_H
#define BTRACE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "btrace/event.h"

/* Protocol ids (u8 in the log; never renumber). */
enum bt_proto_id {
	BT_PROTO_NONE    = 0,
	BT_PROTO_LINE    = 1,
	BT_PROTO_ONESHOT = 2,
	BT_PROTO_HTTP    = 3,
	BT_PROTO_FASTCGI = 4,
	BT_PROTO_PGSQL   = 5,
	BT_PROTO_DNS     = 6,
	BT_PROTO_REDIS   = 7,
	BT_PROTO_MYSQL   = 8,
	BT_PROTO_HTTP2   = 9,
	BT_PROTO_MAX
};

/* Which end of the channel this process is. */
enum bt_role {
	BT_ROLE_UNKNOWN = 0,
	BT_ROLE_CLIENT  = 1,   /* connected out: sends requests, reads replies */
	BT_ROLE_SERVER  = 2,   /* accepted: reads requests, sends replies */
};

/* Transport under the channel. */
enum bt_transport {
	BT_TR_STREAM = 0,      /* TCP, unix stream, pipe: a byte stream */
	BT_TR_DGRAM  = 1,      /* UDP, unix dgram: feed() gets whole datagrams */
};

/* feed() results */
#define BT_PP_LOST   (-1L)

/* Sniff results */
enum bt_sniff { BT_SNIFF_NO = 0, BT_SNIFF_YES = 1, BT_SNIFF_MAYBE = 2 };

/*
 * A message found by feed().  Attribute values point into the processor's
 * state (or into the bytes just fed) and stay valid until the next call of
 * feed() or fini() on that state.  BT_EV_MAX_ATTR attributes at most.
 */
struct bt_msg {
	uint8_t  kind;          /* enum bt_msg_kind; 0 = no message ended */
	uint8_t  flags;         /* BT_MF_WITNESS, BT_MF_TRUNC */
	uint8_t  nattr;
	uint8_t  next_proto;    /* 0, or enum bt_proto_id: after this message
				   both directions speak that protocol (an
				   HTTP/1.1 Upgrade: h2c answered by 101);
				   libbtrace starts its processor afresh on
				   the bytes that follow (not logged) */
	uint32_t status;        /* HTTP status, DNS rcode, 0 if none */
	uint64_t witness;       /* FastCGI request id, DNS id, ... */
	struct bt_attr attr[BT_EV_MAX_ATTR];
};

/* An empty message for feed() to fill: the header only (attributes
 * count from nattr; the array is not read beyond it). */
static inline void bt_msg_init(struct bt_msg *m)
{
	m->kind = 0;
	m->flags = 0;
	m->nattr = 0;
	m->next_proto = 0;
	m->status = 0;
	m->witness = 0;
}

/* Append an attribute (no-op when full).  Values longer than MAX are cut. */
static inline void bt_msg_attr(struct bt_msg *m, uint8_t key,
			       const char *val, size_t len)
{
	if (m->nattr >= BT_EV_MAX_ATTR || !val)
		return;
	if (len > 0xffff) { len = 0xffff; m->flags |= BT_MF_TRUNC; }
	m->attr[m->nattr].key = key;
	m->attr[m->nattr].val = val;
	m->attr[m->nattr].len = (uint16_t)len;
	m->nattr++;
}

/*
 * V in decimal, as "%llu" would write it, into BUF (at least 21 bytes):
 * written backwards from the end, NUL-terminated.  Returns where it
 * starts; *LEN its length.  Two digits a step from a table: a
 * processor's counts (a body's length) go into an attribute of every
 * message, where snprintf's format parsing cost some 650 instructions.
 */
static inline const char *bt_u64_dec(char *buf, size_t cap, uint64_t v,
				     size_t *len)
{
	static const char d2[201] =
		"0001020304050607080910111213141516171819"
		"2021222324252627282930313233343536373839"
		"4041424344454647484950515253545556575859"
		"6061626364656667686970717273747576777879"
		"8081828384858687888990919293949596979899";
	char *e = buf + cap - 1, *q = e;

	*e = 0;
	while (v >= 100) {
		unsigned r = (unsigned)(v % 100);
		v /= 100;
		q -= 2;
		q[0] = d2[2 * r];
		q[1] = d2[2 * r + 1];
	}
	if (v >= 10) {
		q -= 2;
		q[0] = d2[2 * v];
		q[1] = d2[2 * v + 1];
	} else {
		*--q = (char)('0' + v);
	}
	*len = (size_t)(e - q);
	return q;
}

/*
 * The hash of a value compared by content (docs/reconstruct.md,
 * "Resolving by content"): 64-bit FNV-1a of its first BT_VALUE_HASH_MAX
 * bytes.  The processors (bound parameters, BT_AK_PARAMS) and
 * bp-reconstruct (SQL literals, URL values) must agree on it.
 */
#define BT_VALUE_HASH_MAX   256u
#define BT_VALUE_HASH_BASIS UINT64_C(0xcbf29ce484222325)
#define BT_VALUE_HASH_PRIME UINT64_C(0x100000001b3)

static inline uint64_t bt_value_hash_more(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = (const uint8_t *)p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * BT_VALUE_HASH_PRIME;
	return h;
}

static inline uint64_t bt_value_hash(const void *p, size_t n)
{
	return bt_value_hash_more(BT_VALUE_HASH_BASIS, p,
				  n < BT_VALUE_HASH_MAX ? n : BT_VALUE_HASH_MAX);
}

/* ops->flags */
#define BT_PPF_TURN_ENDS 0x1u  /* the first byte in one direction ends the
				  open message of the other (one-shot) */

struct bt_proto_ops {
	const char *name;       /* "http": the name used in rules and logs */
	uint8_t     id;         /* enum bt_proto_id */
	uint8_t     flags;      /* BT_PPF_* */
	uint16_t    state_size; /* bytes of per-channel state (<= 8192) */

	/*
	 * sniff - could a channel whose first bytes in direction DIR are
	 * P[0..N) speak this protocol?  ROLE is this end's role.  Pure
	 * function; may be NULL (never chosen by sniffing).
	 */
	int  (*sniff)(int dir, int role, const uint8_t *p, size_t n);

	/* init - prepare zeroed STATE for a new channel. */
	void (*init)(void *state, int role, int transport);

	/* fini - release STATE (nothing is allocated, usually a no-op). */
	void (*fini)(void *state);

	/*
	 * feed - consume a prefix of the N > 0 bytes at P flowing in
	 * direction DIR (enum bt_dir).  Returns the number of bytes consumed,
	 * 1..N, or BT_PP_LOST.  If a message ends exactly after the consumed
	 * bytes, MSG->kind is set (non-zero) and MSG describes it; otherwise
	 * MSG->kind is left 0 and all N bytes must have been consumed.
	 * MSG is zeroed by the caller before every call.
	 * For BT_TR_DGRAM each call is exactly one datagram, which is one
	 * message (or BT_PP_LOST).
	 */
	long (*feed)(void *state, int dir, const uint8_t *p, size_t n,
		     struct bt_msg *msg);

	/*
	 * eof - direction DIR ended: a read returned 0, the write side was
	 * shut down or closed, or (BT_PPF_TURN_ENDS) the other direction
	 * began.  Sets MSG->kind if a message ends here (a body framed by
	 * connection close, a one-shot request).  May be NULL.
	 */
	void (*eof)(void *state, int dir, struct bt_msg *msg);

	/*
	 * skip - feed() without the bytes: consume a prefix of N > 0 bytes
	 * of DIR that the processor would count without looking at them (a
	 * body of known length), exactly as feed() would, and return how
	 * many; 0 when it must see the next byte (the caller then reads it
	 * and calls feed()).  Lets the shim account for bytes it never saw
	 * (sendfile) without reading them back.  May be NULL.
	 */
	long (*skip)(void *state, int dir, size_t n, struct bt_msg *msg);
};

/* The registry: every processor, by id (NULL where none). */
extern const struct bt_proto_ops *const bt_protocols[BT_PROTO_MAX];

/* Look a processor up by name ("http"); NULL if unknown. */
const struct bt_proto_ops *bt_proto_by_name(const char *name);

/*
 * bt_proto_sniff - choose a processor from the first bytes of a channel.
 * Returns the processor, NULL if none matches; *MAYBE is set when some
 * processor could still match with more bytes.
 */
const struct bt_proto_ops *bt_proto_sniff(int dir, int role, const uint8_t *p,
					  size_t n, int *maybe);

/*
 * bt_proto_looks_tls - 1 when the first bytes of a channel are a TLS
 * handshake record (0x16 0x03 0x00-0x04): the program encrypts inside
 * itself (a TLS library linked in), so no processor can read the channel.
 */
int bt_proto_looks_tls(const uint8_t *p, size_t n);

/*
 * The default selection rules (protocols/defaults.c), in the rule syntax
 * of BTRACE_CONF (docs/protocols.md): applied after the user's rules.
 */
extern const char bt_default_rules[];

/* The processors (protocols/<name>.c) */
extern const struct bt_proto_ops bt_proto_line;
extern const struct bt_proto_ops bt_proto_oneshot;
extern const struct bt_proto_ops bt_proto_http;
extern const struct bt_proto_ops bt_proto_fastcgi;
extern const struct bt_proto_ops bt_proto_pgsql;
extern const struct bt_proto_ops bt_proto_dns;
extern const struct bt_proto_ops bt_proto_redis;
extern const struct bt_proto_ops bt_proto_mysql;
extern const struct bt_proto_ops bt_proto_http2;

#endif /* BTRACE_PROTO_H */
