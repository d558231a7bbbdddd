/*
 * http2.c - HTTP/2 (RFC 9113) with HPACK (RFC 7541), both ends; gRPC over
 * it.
 *
 * Reached as h2c with prior knowledge (the client's first bytes are the
 * preface "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", which sniffing knows) and as
 * h2 over TLS (the TLS framing hands the plaintext to the sniffer, which
 * sees the same preface after ALPN chose h2), and after an HTTP/1.1
 * "Upgrade: h2c" answered by 101 (http.c hands the channel over: this
 * processor starts afresh, the client's preface first, and stream 1's
 * answer, whose request went as HTTP/1.1, gets its entry with its response
 * headers).
 *
 * Framing: after the client's preface both directions are frames, a 9-byte
 * header (24-bit length, type, flags, 31-bit stream id) and a payload.  No
 * limit is put on the length beyond its 24 bits: framing never depends on
 * SETTINGS_MAX_FRAME_SIZE.  Every frame is a message of its own (a header
 * block with its CONTINUATION frames is one), so that one read hands over
 * frames of one stream and every message's bytes belong to one stream
 * (docs/protocols.md, "Multiplexed connections").  Each stream is one
 * exchange, every message of it carries the stream id as witness:
 *   client   the stream's first header block is the REQUEST (the server
 *            starts work on it: nginx opens its upstream call there); its
 *            DATA frames and trailers are ONEWAY messages of the exchange
 *            (END_STREAM ends the request body).  A RST_STREAM from the
 *            client on an open stream is ONEWAY with an error attribute
 *            "RST_STREAM <code>".
 *   server   the response's frames are ONEWAY messages of the exchange up
 *            to the frame carrying END_STREAM, the REPLY (trailers
 *            included; interim 1xx blocks are ONEWAY).  A RST_STREAM from
 *            the server on a stream whose reply has not ended is the REPLY,
 *            with the error attribute.  A stream the server opened
 *            (PUSH_PROMISE, even ids) is CONTROL throughout: no request
 *            asked for it.
 * SETTINGS, PING, GOAWAY, WINDOW_UPDATE, PRIORITY, PUSH_PROMISE, a
 * RST_STREAM that ends nothing and frames of unknown types are
 * connection-level: each is a CONTROL message, no exchange's.
 *
 * HPACK: each direction's header blocks are decoded with that direction's
 * dynamic table.  The table is followed by size only (every entry's size
 * for eviction, up to H2_DYN entries); the values of the few headers the
 * attributes need (:method, :path, :authority, :status, grpc-status,
 * content-type) are kept for entries that carry them, in H2_POOL slots of
 * H2_VAL bytes.  An indexed reference to an entry whose value was not kept
 * (no slot free, value too long) gives an attribute marked truncated
 * (BT_MF_TRUNC) or none, never a guess.  A header block HPACK cannot decode
 * (an index out of range, bad Huffman padding, more entries than H2_DYN
 * holds) stops the decoding of that direction's headers: messages are still
 * framed, their attributes are then absent and flagged BT_MF_TRUNC.
 * SETTINGS_HEADER_TABLE_SIZE is noted (a size update above it breaks the
 * decoding as above); eviction follows the encoder's size updates.
 *
 * Attributes: a request carries method, target (:path; gRPC:
 * "/package.Service/Method") and host (:authority), from the stream's first
 * header block; a reply has status = :status and, for gRPC (content-type
 * application/grpc...), the grpc-status of the trailers (or of a
 * trailers-only reply) as a tag attribute "grpc-status N", and for N != 0
 * an error attribute with the same text.  Targets are redacted by
 * libbtrace as HTTP's.  State: the streams with an open exchange are
 * followed in H2_STREAMS entries (a new one takes the lowest stream id's
 * when all are in use).
 *
 * Garbage (a client that does not start with the preface, a frame on
 * stream 0 that needs a stream, a CONTINUATION that continues nothing, a
 * frame other than CONTINUATION inside a header block, padding longer than
 * the payload) is BT_PP_LOST.  On a datagram transport feed() is
 * BT_PP_LOST at once.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "btrace/proto.h"

#define H2_PREFACE     "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define H2_PREFACE_LEN 24u
#define H2_DYN         128     /* dynamic table entries followed, per dir */
#define H2_POOL        4       /* kept values of dynamic entries, per dir */
#define H2_VAL         128     /* bytes of a kept value */
#define H2_NAME        16      /* bytes of a header name looked at */
#define H2_STREAMS     128     /* streams with an open exchange */
#define H2_METHOD      16
#define H2_AUTH        48
#define H2_SCANS       4       /* gRPC request bodies scanned at once */
#define H2_NVAL        8       /* values kept of one request body */

enum {
	F_DATA = 0, F_HEADERS, F_PRIORITY, F_RST, F_SETTINGS, F_PUSH,
	F_PING, F_GOAWAY, F_WINDOW, F_CONT,
};
#define FL_END_STREAM  0x01u
#define FL_END_HEADERS 0x04u
#define FL_PADDED      0x08u
#define FL_PRIORITY    0x20u

/* headers the attributes need */
enum { HN_NONE = 0, HN_METHOD, HN_PATH, HN_AUTH, HN_STATUS, HN_GRPC,
       HN_CTYPE, HN_MAX };

/* frame payload phases */
enum { PH_HDR = 0, PH_PADLEN, PH_SKIP, PH_BODY, PH_PAD };

/* HPACK representation parser states */
enum { HP_OP = 0, HP_INT, HP_SLEN, HP_SLEN_INT, HP_STR };

/* RFC 7541 Appendix B, canonical: the number of codes of each length
 * 1..30, and the symbols ordered by (code length, symbol). */
static const uint16_t huff_count[30] = {
	0, 0, 0, 0, 10, 26, 32, 6, 0, 5,
	3, 2, 6, 2, 3, 0, 0, 0, 3, 8,
	13, 26, 29, 12, 4, 15, 19, 29, 0, 4,
};
static const uint16_t huff_sym[257] = {
	48, 49, 50, 97, 99, 101, 105, 111, 115, 116, 32, 37,
	45, 46, 47, 51, 52, 53, 54, 55, 56, 57, 61, 65,
	95, 98, 100, 102, 103, 104, 108, 109, 110, 112, 114, 117,
	58, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76,
	77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 89,
	106, 107, 113, 118, 119, 120, 121, 122, 38, 42, 44, 59,
	88, 90, 33, 34, 40, 41, 63, 39, 43, 124, 35, 62,
	0, 36, 64, 91, 93, 126, 94, 125, 60, 96, 123, 92,
	195, 208, 128, 130, 131, 162, 184, 194, 224, 226, 153, 161,
	167, 172, 176, 177, 179, 209, 216, 217, 227, 229, 230, 129,
	132, 133, 134, 136, 146, 154, 156, 160, 163, 164, 169, 170,
	173, 178, 181, 185, 186, 187, 189, 190, 196, 198, 228, 232,
	233, 1, 135, 137, 138, 139, 140, 141, 143, 147, 149, 150,
	151, 152, 155, 157, 158, 165, 166, 168, 174, 175, 180, 182,
	183, 188, 191, 197, 231, 239, 9, 142, 144, 145, 148, 159,
	171, 206, 215, 225, 236, 237, 199, 207, 234, 235, 192, 193,
	200, 201, 202, 205, 210, 213, 218, 219, 238, 240, 242, 243,
	255, 203, 204, 211, 212, 214, 221, 222, 223, 241, 244, 245,
	246, 247, 248, 250, 251, 252, 253, 254, 2, 3, 4, 5,
	6, 7, 8, 11, 12, 14, 15, 16, 17, 18, 19, 20,
	21, 23, 24, 25, 26, 27, 28, 29, 30, 31, 127, 220,
	249, 10, 13, 22, 256,
};

/* The canonical code's first code and first index into huff_sym of
 * each length (derived from huff_count). */
static const uint32_t huff_first[31] = {
	0, 0, 0, 0, 0, 0, 0x14, 0x5c, 0xf8, 0x1fc, 0x3f8, 0x7fa, 0xffa,
	0x1ff8, 0x3ffc, 0x7ffc, 0xfffe, 0x1fffc, 0x3fff8, 0x7fff0, 0xfffe6,
	0x1fffdc, 0x3fffd2, 0x7fffd8, 0xffffea, 0x1ffffec, 0x3ffffe0,
	0x7ffffde, 0xfffffe2, 0x1ffffffe, 0x3ffffffc,
};
static const uint16_t huff_off[31] = {
	0, 0, 0, 0, 0, 0, 10, 36, 68, 74, 74, 79, 82, 84, 90, 92, 95, 95, 95,
	95, 98, 106, 119, 145, 174, 186, 190, 205, 224, 253, 253,
};

/* RFC 7541 Appendix A: the static table, the headers we need (HN_*) and
 * for those the value it holds ("" none). */
struct h2_static { uint8_t hn; const char *val; };
static const struct h2_static static_tab[62] = {
	[1] = { HN_AUTH, "" },
	[2] = { HN_METHOD, "GET" }, [3] = { HN_METHOD, "POST" },
	[4] = { HN_PATH, "/" }, [5] = { HN_PATH, "/index.html" },
	[8] = { HN_STATUS, "200" }, [9] = { HN_STATUS, "204" },
	[10] = { HN_STATUS, "206" }, [11] = { HN_STATUS, "304" },
	[12] = { HN_STATUS, "400" }, [13] = { HN_STATUS, "404" },
	[14] = { HN_STATUS, "500" },
	[31] = { HN_CTYPE, "" },
};
/* the entries with a value, by index: they are "name: value" pairs; an
 * indexed reference to any other entry is a header with an empty value */
static const uint8_t static_has_value[62] = {
	[2] = 1, [3] = 1, [4] = 1, [5] = 1, [6] = 1, [7] = 1, [8] = 1,
	[9] = 1, [10] = 1, [11] = 1, [12] = 1, [13] = 1, [14] = 1, [16] = 1,
};

struct h2_ent {
	uint16_t size;             /* name + value + 32 */
	uint16_t nlen;             /* the name's length */
	uint8_t  hn;               /* HN_* */
	int8_t   slot;             /* pool slot of its value, -1 none */
};

/* the value of a header being decoded, or of a block's needed header */
struct h2_val {
	uint16_t len;
	uint8_t  set;
	uint8_t  trunc;
	char     b[H2_VAL];
};

struct h2_dir {
	/* framing */
	uint8_t  hdr[9];
	uint8_t  hn;               /* header bytes collected */
	uint8_t  ph;               /* PH_* */
	uint8_t  type, flags;
	uint8_t  padlen;
	uint8_t  pre;              /* preface bytes still to match (client) */
	uint8_t  started;          /* the first frame or preface byte seen */
	uint32_t sid;
	uint32_t left;             /* bytes of the current phase left */
	uint32_t body;             /* payload bytes after pad length/skip */
	uint8_t  small[8];         /* RST_STREAM code, SETTINGS entry */
	uint8_t  sn;
	/* header block */
	uint8_t  in_block;         /* a block continues (CONTINUATION) */
	uint8_t  blk_es;           /* its HEADERS frame had END_STREAM */
	uint8_t  blk_push;         /* a PUSH_PROMISE's block */
	uint8_t  blk_trunc;
	uint32_t blk_sid;
	struct h2_val need[HN_MAX - 1]; /* the block's needed headers */
	/* HPACK */
	uint8_t  broken;           /* decoding given up: attributes unknown */
	uint8_t  hp;               /* HP_* */
	uint8_t  op;               /* representation: 0x80 0x40 0x20 0x10 0 */
	uint8_t  sflag;            /* string: 0 name, 1 value */
	uint8_t  huff;
	uint8_t  cur_hn;           /* header being decoded */
	uint8_t  ishift;
	uint32_t ival;
	uint32_t slen;             /* string bytes left */
	uint32_t nlen, vlen;       /* decoded lengths */
	uint64_t hacc;             /* Huffman: bits not decoded yet (low */
	uint8_t  hbits;            /* hbits of hacc) */
	uint8_t  name_idx_hn;
	uint8_t  nseen;
	char     name[H2_NAME];
	struct h2_val cur;         /* value being decoded */
	/* dynamic table */
	uint32_t tmax;             /* size from the encoder's updates */
	uint32_t tlimit;           /* SETTINGS_HEADER_TABLE_SIZE of the peer */
	uint32_t tsize;
	uint16_t first, count;     /* ring of entries, newest at first+count-1 */
	struct h2_ent ent[H2_DYN];
	uint8_t  pool_used[H2_POOL];
	struct h2_val pool[H2_POOL];
};

struct h2_stream {
	uint32_t sid;              /* 0 free */
	uint16_t status;
	uint8_t  gstatus;          /* grpc-status (gset) */
	uint8_t  req_open : 1;     /* the client's request has not ended */
	uint8_t  rep_open : 1;     /* the server's reply has not ended */
	uint8_t  grpc : 1;         /* content-type application/grpc */
	uint8_t  gset : 1;
	uint8_t  trunc : 1;
	uint8_t  hdrs : 1;         /* the request's headers came */
	uint8_t  gscan : 1;        /* a gRPC request: its body is scanned */
	uint8_t  gbody : 1;        /* its body has begun */
};

/*
 * The values of a gRPC request's message (docs/protocols.md, "http2"):
 * the first message of the request body (5-byte prefix: compressed flag,
 * length), its top-level protobuf fields walked without a schema.  A
 * varint is a value as its decimal text, a length-delimited field as its
 * bytes when they are all printable; each is hashed (bt_value_hash, as
 * PostgreSQL's bound parameters).  The values are complete only when
 * every field was one of those (no fixed-size field, no binary or nested
 * message, at most H2_NVAL values, not compressed) and the request held
 * that one message: then, and only then, its last frame carries them
 * (BT_AK_PARAMS: "0:HASH 1:HASH ...", or "-" for none), so that
 * bp-reconstruct may compare them.  Redaction (sql-literals) empties the
 * attribute: then they are unknown again.
 */
enum { SC_PREFIX = 0, SC_KEY, SC_VARINT, SC_LEN, SC_STR, SC_SKIP, SC_DONE };

struct h2_scan {
	uint32_t sid;              /* 0 free */
	uint8_t  ph;               /* SC_* */
	uint8_t  pn;               /* prefix bytes seen */
	uint8_t  shift;            /* varint bits read */
	uint8_t  printable;
	uint8_t  nval;
	uint8_t  over;             /* a value not kept: incomplete */
	uint8_t  wt;
	uint32_t mleft;            /* message bytes left */
	uint32_t slen;             /* string or skipped bytes left */
	uint32_t shashed;          /* string bytes hashed */
	uint64_t acc;              /* varint being read */
	uint64_t hash;
	uint64_t val[H2_NVAL];
};

struct h2_state {
	int8_t   cdir;             /* the client's direction, -1 unknown */
	uint8_t  dgram;
	uint8_t  streams_full;     /* a stream found no entry */
	char     num[24];
	char     tag[24];
	char     err[32];
	struct h2_dir d[2];
	struct h2_stream st[H2_STREAMS];
	struct h2_scan sc[H2_SCANS];
	char     params[H2_NVAL * 19 + 1];
};

/* ---- HPACK: dynamic table ---------------------------------------------- */

static struct h2_ent *dyn_get(struct h2_dir *d, uint32_t i)   /* i from 0 */
{
	if (i >= d->count)
		return NULL;
	return &d->ent[(d->first + d->count - 1 - i) % H2_DYN];
}

static void dyn_evict_one(struct h2_dir *d)
{
	struct h2_ent *e = &d->ent[d->first];
	if (e->slot >= 0)
		d->pool_used[e->slot] = 0;
	d->tsize -= e->size;
	d->first = (uint16_t)((d->first + 1) % H2_DYN);
	d->count--;
}

static void dyn_fit(struct h2_dir *d, uint32_t room)
{
	while (d->count && d->tsize + room > d->tmax)
		dyn_evict_one(d);
}

/* Insert the header just decoded (name/value lengths nlen/vlen). */
static void dyn_add(struct h2_dir *d, uint8_t hn, const struct h2_val *v)
{
	uint64_t size = (uint64_t)d->nlen + d->vlen + 32;
	if (size > d->tmax) {          /* empties the table (RFC 7541 4.4) */
		while (d->count)
			dyn_evict_one(d);
		return;
	}
	dyn_fit(d, (uint32_t)size);
	if (d->count == H2_DYN || size > UINT16_MAX) {
		d->broken = 1;          /* more than we follow */
		return;
	}
	struct h2_ent *e = &d->ent[(d->first + d->count) % H2_DYN];
	e->size = (uint16_t)size;
	e->nlen = (uint16_t)d->nlen;
	e->hn = hn;
	e->slot = -1;
	if (hn && v && v->set && !v->trunc) {
		for (int i = 0; i < H2_POOL; i++)
			if (!d->pool_used[i]) {
				d->pool_used[i] = 1;
				d->pool[i] = *v;
				e->slot = (int8_t)i;
				break;
			}
	}
	d->count++;
	d->tsize += (uint32_t)size;
}

static void dyn_resize(struct h2_dir *d, uint32_t max)
{
	if (d->tlimit && max > d->tlimit) {
		d->broken = 1;
		return;
	}
	d->tmax = max;
	dyn_fit(d, 0);
}

/* ---- HPACK: headers found ---------------------------------------------- */

/* The header HN with value V (NULL: known to exist, value not kept). */
static void header_found(struct h2_dir *d, uint8_t hn, const struct h2_val *v)
{
	if (!hn)
		return;
	struct h2_val *t = &d->need[hn - 1];
	if (t->set && hn != HN_GRPC)
		return;                 /* the first one counts */
	if (!v) {
		t->set = 1;
		t->trunc = 1;
		t->len = 0;
		return;
	}
	*t = *v;
	t->set = 1;
}

static void static_value(struct h2_val *v, const char *s)
{
	size_t n = strlen(s);
	memset(v, 0, offsetof(struct h2_val, b));
	memcpy(v->b, s, n);
	v->len = (uint16_t)n;
	v->set = 1;
}

/* An indexed header field (RFC 7541 6.1). */
static void hp_indexed(struct h2_dir *d, uint32_t idx)
{
	struct h2_val v;

	if (idx == 0) {
		d->broken = 1;
		return;
	}
	if (idx < 62) {
		if (static_tab[idx].hn) {
			static_value(&v, static_has_value[idx] ?
				     static_tab[idx].val : "");
			header_found(d, static_tab[idx].hn, &v);
		}
		return;
	}
	struct h2_ent *e = dyn_get(d, idx - 62);
	if (!e) {
		d->broken = 1;
		return;
	}
	if (e->hn)
		header_found(d, e->hn, e->slot >= 0 ? &d->pool[e->slot] : NULL);
}

/* The name of index IDX, for a literal (0: a literal name follows). */
static int hp_name_index(struct h2_dir *d, uint32_t idx)
{
	if (idx < 62) {
		d->name_idx_hn = static_tab[idx].hn;
		/* the decoded name length, for the entry size */
		static const uint8_t nlen[62] = {
			0, 10, 7, 7, 5, 5, 7, 7, 7, 7, 7, 7, 7, 7, 7, 14, 15,
			15, 13, 6, 27, 3, 5, 13, 13, 19, 16, 16, 14, 16, 13,
			12, 6, 4, 4, 6, 7, 4, 4, 8, 17, 13, 8, 19, 13, 4, 8,
			12, 18, 19, 5, 7, 7, 11, 6, 10, 25, 17, 10, 4, 3, 16,
		};
		d->nlen = nlen[idx];
		return 0;
	}
	struct h2_ent *e = dyn_get(d, idx - 62);
	if (!e)
		return -1;
	d->name_idx_hn = e->hn;
	d->nlen = e->nlen;
	return 0;
}

static uint8_t name_hn(const struct h2_dir *d)
{
	static const char *const names[HN_MAX] = {
		"", ":method", ":path", ":authority", ":status",
		"grpc-status", "content-type",
	};
	for (int i = 1; i < HN_MAX; i++)
		if (d->nlen == strlen(names[i]) &&
		    memcmp(d->name, names[i], d->nlen) == 0)
			return (uint8_t)i;
	return HN_NONE;
}

/* A decoded byte of the current string. */
static void hp_out(struct h2_dir *d, uint8_t c)
{
	if (d->sflag == 0) {
		if (d->nseen < H2_NAME)
			d->name[d->nseen] = (char)c;
		d->nseen++;
		d->nlen++;
		return;
	}
	d->vlen++;
	if (!d->cur_hn)
		return;
	if (d->cur.len < H2_VAL)
		d->cur.b[d->cur.len++] = (char)c;
	else
		d->cur.trunc = 1;
}

static void huff_reset(struct h2_dir *d)
{
	d->hacc = 0;
	d->hbits = 0;
}

/* One Huffman-coded byte: every symbol its bits complete.  -1 on EOS or
 * on 30 bits that start no code. */
static int huff_byte(struct h2_dir *d, uint8_t b)
{
	d->hacc = d->hacc << 8 | b;
	d->hbits = (uint8_t)(d->hbits + 8);
	for (;;) {
		unsigned len;
		uint32_t code = 0;
		for (len = 5; len <= d->hbits && len <= 30; len++) {
			code = (uint32_t)(d->hacc >> (d->hbits - len)) &
			       ((1u << len) - 1);
			if (code - huff_first[len] < huff_count[len - 1])
				break;
		}
		if (len > 30)
			return -1;
		if (len > d->hbits)
			return 0;               /* the symbol goes on */
		uint16_t sym = huff_sym[huff_off[len] + code - huff_first[len]];
		if (sym == 256)
			return -1;
		hp_out(d, (uint8_t)sym);
		d->hbits = (uint8_t)(d->hbits - len);
		d->hacc &= (UINT64_C(1) << d->hbits) - 1;
	}
}

/* The end of a Huffman string: at most 7 bits of EOS's prefix (ones). */
static int huff_end(struct h2_dir *d)
{
	return d->hbits <= 7 && d->hacc == (UINT64_C(1) << d->hbits) - 1 ?
	       0 : -1;
}

/* A whole representation decoded: the header is known. */
static void hp_field_done(struct h2_dir *d)
{
	uint8_t hn = d->cur_hn;
	if (d->cur.set || hn)
		d->cur.set = 1;
	header_found(d, hn, &d->cur);
	if (d->op == 0x40)
		dyn_add(d, hn, &d->cur);
}

static void hp_start_string(struct h2_dir *d, int value)
{
	d->sflag = (uint8_t)value;
	d->hp = HP_SLEN;
	if (value) {
		d->vlen = 0;
		memset(&d->cur, 0, offsetof(struct h2_val, b));
	} else {
		d->nlen = 0;
		d->nseen = 0;
	}
}

/* The string length is known. */
static int hp_string_len(struct h2_dir *d, uint32_t len)
{
	d->slen = len;
	huff_reset(d);
	d->hp = HP_STR;
	return 0;
}

/* The string ended. -1 on bad Huffman padding. */
static int hp_string_end(struct h2_dir *d)
{
	if (d->huff && huff_end(d) < 0)
		return -1;
	if (d->sflag == 0) {
		d->cur_hn = d->nseen == d->nlen ? name_hn(d) : HN_NONE;
		hp_start_string(d, 1);
		return 0;
	}
	hp_field_done(d);
	d->hp = HP_OP;
	return 0;
}

/* The integer of the representation OP is complete. -1 broken. */
static int hp_int_done(struct h2_dir *d, uint32_t v)
{
	switch (d->op) {
	case 0x80:
		hp_indexed(d, v);
		d->hp = HP_OP;
		return d->broken ? -1 : 0;
	case 0x20:
		dyn_resize(d, v);
		d->hp = HP_OP;
		return d->broken ? -1 : 0;
	default:                          /* literal: 0x40, 0x10, 0x00 */
		if (v == 0) {
			hp_start_string(d, 0);
			return 0;
		}
		if (hp_name_index(d, v) < 0)
			return -1;
		d->cur_hn = d->name_idx_hn;
		hp_start_string(d, 1);
		return 0;
	}
}

/* Continue an HPACK integer with byte B: 1 done (*V), 0 more, -1 too big. */
static int hp_int_more(struct h2_dir *d, uint8_t b, uint32_t *v)
{
	if (d->ishift > 28)
		return -1;
	uint64_t x = d->ival + ((uint64_t)(b & 0x7fu) << d->ishift);
	if (x > UINT32_MAX / 2)
		return -1;
	d->ival = (uint32_t)x;
	d->ishift = (uint8_t)(d->ishift + 7);
	if (b & 0x80u)
		return 0;
	*v = d->ival;
	return 1;
}

/* A prefix integer starting in byte B with N prefix bits. */
static int hp_int_first(struct h2_dir *d, uint8_t b, unsigned n, uint32_t *v)
{
	uint32_t max = (1u << n) - 1;
	if ((b & max) < max) {
		*v = b & max;
		return 1;
	}
	d->ival = max;
	d->ishift = 0;
	return 0;
}

/* Decode header block bytes P[0..N).  Errors make the direction broken. */
static void hp_feed(struct h2_dir *d, const uint8_t *p, size_t n)
{
	size_t i = 0;
	uint32_t v;
	int r;

	while (i < n && !d->broken) {
		uint8_t b = p[i];
		switch (d->hp) {
		case HP_OP:
			i++;
			if (b & 0x80) { d->op = 0x80; r = hp_int_first(d, b, 7, &v); }
			else if (b & 0x40) { d->op = 0x40; r = hp_int_first(d, b, 6, &v); }
			else if (b & 0x20) { d->op = 0x20; r = hp_int_first(d, b, 5, &v); }
			else { d->op = b & 0x10; r = hp_int_first(d, b, 4, &v); }
			d->cur_hn = HN_NONE;
			if (r == 0)
				d->hp = HP_INT;
			else if (hp_int_done(d, v) < 0)
				d->broken = 1;
			break;
		case HP_INT:
			i++;
			r = hp_int_more(d, b, &v);
			if (r < 0 || (r > 0 && hp_int_done(d, v) < 0))
				d->broken = 1;
			break;
		case HP_SLEN:
			i++;
			d->huff = (b & 0x80) != 0;
			r = hp_int_first(d, b, 7, &v);
			if (r == 0)
				d->hp = HP_SLEN_INT;
			else
				hp_string_len(d, v);
			break;
		case HP_SLEN_INT:
			i++;
			r = hp_int_more(d, b, &v);
			if (r < 0)
				d->broken = 1;
			else if (r > 0)
				hp_string_len(d, v);
			break;
		case HP_STR: {
			size_t k = n - i < d->slen ? n - i : d->slen;
			if (d->sflag && !d->cur_hn && d->op != 0x40) {
				/* a value neither kept nor indexed: its
				 * decoded length matters to no one */
				d->huff = 0;
				i += k;
				d->slen -= (uint32_t)k;
				break;
			}
			for (size_t j = 0; j < k && !d->broken; j++) {
				if (d->huff) {
					if (huff_byte(d, p[i + j]) < 0)
						d->broken = 1;
				} else {
					hp_out(d, p[i + j]);
				}
			}
			i += k;
			d->slen -= (uint32_t)k;
			break;
		}
		}
		if (d->hp == HP_STR && d->slen == 0 && !d->broken &&
		    hp_string_end(d) < 0)
			d->broken = 1;
	}
}

/* ---- gRPC request values ------------------------------------------------ */

static struct h2_stream *stream_find(struct h2_state *s, uint32_t sid);

static void scan_value(struct h2_scan *c, uint64_t h)
{
	if (c->nval < H2_NVAL)
		c->val[c->nval++] = h;
	else
		c->over = 1;
}

/* A varint field's value, as its decimal text (shorter than 3 digits it
 * can never decide: not kept, nothing hidden). */
static void scan_varint(struct h2_scan *c, uint64_t v)
{
	char b[24];
	int n = snprintf(b, sizeof b, "%llu", (unsigned long long)v);
	if (n >= 3)
		scan_value(c, bt_value_hash(b, (size_t)n));
}

/* One byte of a varint into C->acc; 1 when it ends (0: more to come,
 * -1: longer than 10 bytes). */
static int scan_vbyte(struct h2_scan *c, uint8_t b)
{
	if (c->shift >= 64)
		return -1;
	c->acc |= (uint64_t)(b & 0x7f) << c->shift;
	c->shift = (uint8_t)(c->shift + 7);
	return (b & 0x80) ? 0 : 1;
}

/* The next field's key (or the message's end). */
static void scan_next(struct h2_scan *c)
{
	c->acc = 0;
	c->shift = 0;
	c->ph = c->mleft ? SC_KEY : SC_DONE;
}

static void scan_feed(struct h2_scan *c, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t b = p[i];
		int r;

		if (c->ph == SC_DONE) {
			c->over = 1;           /* a second message */
			return;
		}
		if (c->ph == SC_PREFIX) {
			if (c->pn == 0 && b != 0) {
				c->over = 1;   /* compressed */
				c->ph = SC_DONE;
				return;
			}
			if (c->pn > 0)
				c->mleft = c->mleft << 8 | b;
			if (++c->pn == 5)
				scan_next(c);
			continue;
		}
		if (!c->mleft) {
			c->over = 1;
			c->ph = SC_DONE;
			return;
		}
		c->mleft--;
		switch (c->ph) {
		case SC_KEY:
			r = scan_vbyte(c, b);
			if (r < 0)
				goto bad;
			if (!r)
				break;
			c->wt = (uint8_t)(c->acc & 7);
			c->acc = 0;
			c->shift = 0;
			if (c->wt == 0)
				c->ph = SC_VARINT;
			else if (c->wt == 2)
				c->ph = SC_LEN;
			else if (c->wt == 1 || c->wt == 5) {
				c->over = 1;   /* fixed64/fixed32: not kept */
				c->slen = c->wt == 1 ? 8 : 4;
				c->ph = SC_SKIP;
			} else
				goto bad;
			break;
		case SC_VARINT:
			r = scan_vbyte(c, b);
			if (r < 0)
				goto bad;
			if (r) {
				scan_varint(c, c->acc);
				scan_next(c);
			}
			break;
		case SC_LEN:
			r = scan_vbyte(c, b);
			if (r < 0 || (r && c->acc > c->mleft))
				goto bad;
			if (!r)
				break;
			c->slen = (uint32_t)c->acc;
			c->hash = BT_VALUE_HASH_BASIS;
			c->shashed = 0;
			c->printable = 1;
			if (c->slen)
				c->ph = SC_STR;
			else
				scan_next(c);
			break;
		case SC_STR:
			if (c->shashed < BT_VALUE_HASH_MAX) {
				c->hash = bt_value_hash_more(c->hash, &b, 1);
				c->shashed++;
			}
			if (b < 0x20 || b > 0x7e)
				c->printable = 0;
			if (--c->slen)
				break;
			if (!c->printable)
				c->over = 1;   /* bytes or a nested message */
			else if (c->shashed >= 3)
				scan_value(c, c->hash);
			scan_next(c);
			break;
		default:                       /* SC_SKIP */
			if (!--c->slen)
				scan_next(c);
			break;
		}
		continue;
bad:
		c->over = 1;
		c->ph = SC_DONE;
		return;
	}
}

/* The scanner of stream SID; a new one when NEW (NULL: none free). */
static struct h2_scan *scan_of(struct h2_state *s, uint32_t sid, int new)
{
	struct h2_scan *f = NULL;
	for (int i = 0; i < H2_SCANS; i++) {
		if (s->sc[i].sid == sid)
			return &s->sc[i];
		if (!s->sc[i].sid && !f)
			f = &s->sc[i];
	}
	if (!new || !f)
		return NULL;
	memset(f, 0, sizeof *f);
	f->sid = sid;
	return f;
}

/* Body bytes P[0..K) of the client's stream SID. */
static void scan_body(struct h2_state *s, uint32_t sid, const uint8_t *p,
		      size_t k)
{
	struct h2_stream *t = stream_find(s, sid);
	if (!t || !t->gscan)
		return;
	struct h2_scan *c = scan_of(s, sid, !t->gbody);
	t->gbody = 1;
	if (!c) {
		t->gscan = 0;              /* no room, or lost: no values */
		return;
	}
	scan_feed(c, p, k);
}

/* The client's stream SID ended (END_STREAM): its values on M when they
 * are complete; the scanner freed. */
static void scan_end(struct h2_state *s, uint32_t sid, struct bt_msg *m)
{
	struct h2_stream *t = stream_find(s, sid);
	struct h2_scan *c = scan_of(s, sid, 0);
	size_t n = 0;

	if (c && t && t->gscan && c->ph == SC_DONE && !c->over) {
		for (unsigned i = 0; i < c->nval; i++)
			n += (size_t)snprintf(s->params + n, sizeof s->params - n,
					      "%u:%016llx ", i,
					      (unsigned long long)c->val[i]);
		if (!n)                /* complete, and no value in it */
			n = (size_t)snprintf(s->params, sizeof s->params, "- ");
		bt_msg_attr(m, BT_AK_PARAMS, s->params, n - 1);
	}
	if (c)
		c->sid = 0;
	if (t)
		t->gscan = 0;
}

/* ---- streams ----------------------------------------------------------- */

static struct h2_stream *stream_find(struct h2_state *s, uint32_t sid)
{
	for (int i = 0; i < H2_STREAMS; i++)
		if (s->st[i].sid == sid)
			return &s->st[i];
	return NULL;
}

/* The entry of a new stream: a free one, else the oldest (lowest id:
 * a stream whose end we missed must not hold an entry for ever). */
static struct h2_stream *stream_new(struct h2_state *s, uint32_t sid)
{
	struct h2_stream *t = stream_find(s, sid);
	if (t)
		return t;
	t = stream_find(s, 0);
	if (!t) {
		s->streams_full = 1;
		t = &s->st[0];
		for (int i = 1; i < H2_STREAMS; i++)
			if (s->st[i].sid < t->sid)
				t = &s->st[i];
	}
	memset(t, 0, sizeof *t);
	t->sid = sid;
	return t;
}

static void stream_drop(struct h2_stream *t)
{
	if (t && !t->req_open && !t->rep_open)
		t->sid = 0;
}

static void msg_attr_val(struct bt_msg *m, uint8_t key,
			 const struct h2_val *v, size_t cap)
{
	if (!v->set)
		return;
	if (v->trunc || v->len > cap)
		m->flags |= BT_MF_TRUNC;
	if (v->len)
		bt_msg_attr(m, key, v->b, v->len < cap ? v->len : cap);
}

/* M: a message of the exchange on stream SID. */
static void msg_of(struct bt_msg *m, uint8_t kind, uint32_t sid)
{
	m->kind = kind;
	m->flags |= BT_MF_WITNESS;
	m->witness = sid;
}

/* The client's header block of SID ended; ES: its request's last frame. */
static void req_headers(struct h2_state *s, struct h2_dir *d, uint32_t sid,
			int es, struct bt_msg *m)
{
	struct h2_stream *t = stream_find(s, sid);

	if (t && t->hdrs) {             /* trailers: part of the body */
		msg_of(m, BT_MK_ONEWAY, sid);
		if (es)
			t->req_open = 0;
		return;
	}
	t = stream_new(s, sid);
	t->hdrs = 1;
	t->req_open = !es;
	t->rep_open = 1;
	/* the request: its first header block; attributes straight from
	 * the block's values (valid until the next feed) */
	msg_of(m, BT_MK_REQUEST, sid);
	msg_attr_val(m, BT_AK_METHOD, &d->need[HN_METHOD - 1], H2_METHOD);
	msg_attr_val(m, BT_AK_TARGET, &d->need[HN_PATH - 1], H2_VAL);
	msg_attr_val(m, BT_AK_HOST, &d->need[HN_AUTH - 1], H2_AUTH);
	if (d->broken || d->blk_trunc)
		m->flags |= BT_MF_TRUNC;
	const struct h2_val *ct = &d->need[HN_CTYPE - 1];
	if (!es && ct->set && ct->len >= 16 &&
	    memcmp(ct->b, "application/grpc", 16) == 0)
		t->gscan = 1;
}

/* The server's header block of SID ended. */
static void rep_headers(struct h2_state *s, struct h2_dir *d, uint32_t sid)
{
	struct h2_stream *t = stream_find(s, sid);
	if (!t && (sid & 1)) {
		/* a stream whose request we did not see: stream 1 after an
		 * HTTP/1.1 Upgrade: h2c (the request went as HTTP/1.1) */
		t = stream_new(s, sid);
		t->hdrs = 1;
		t->rep_open = 1;
	}
	if (!t)
		return;
	if (d->broken || d->blk_trunc)
		t->trunc = 1;
	const struct h2_val *st = &d->need[HN_STATUS - 1];
	if (st->set && st->len == 3 && !t->status) {
		unsigned v = 0;
		for (int i = 0; i < 3; i++)
			v = v * 10 + (unsigned)(st->b[i] - '0');
		if (v >= 200 && v <= 999)
			t->status = (uint16_t)v;   /* 1xx: interim */
	}
	const struct h2_val *ct = &d->need[HN_CTYPE - 1];
	if (ct->set && ct->len >= 16 &&
	    memcmp(ct->b, "application/grpc", 16) == 0)
		t->grpc = 1;
	const struct h2_val *g = &d->need[HN_GRPC - 1];
	if (g->set) {
		unsigned v = 0;
		int ok = g->len > 0 && g->len <= 3;
		for (unsigned i = 0; ok && i < g->len; i++) {
			if (g->b[i] < '0' || g->b[i] > '9')
				ok = 0;
			else
				v = v * 10 + (unsigned)(g->b[i] - '0');
		}
		if (ok && v < 256) {
			t->gset = 1;
			t->gstatus = (uint8_t)v;
		} else {
			t->trunc = 1;
		}
	}
}

/* The server's reply on SID ends (END_STREAM; RST with code ERR >= 0). */
static void rep_end(struct h2_state *s, uint32_t sid, struct bt_msg *m,
		    long err)
{
	struct h2_stream *t = stream_find(s, sid);

	msg_of(m, (sid & 1) ? BT_MK_REPLY : BT_MK_CONTROL, sid);
	if (t) {
		m->status = t->status;
		if (t->gset) {
			int k = snprintf(s->tag, sizeof s->tag, "grpc-status %u",
					 t->gstatus);
			bt_msg_attr(m, BT_AK_TAG, s->tag, (size_t)k);
			if (t->gstatus && err < 0)
				bt_msg_attr(m, BT_AK_ERROR, s->tag, (size_t)k);
		}
		if (t->trunc)
			m->flags |= BT_MF_TRUNC;
		t->rep_open = 0;
		t->req_open = 0;
		stream_drop(t);
	}
	if (err >= 0) {
		int k = snprintf(s->err, sizeof s->err, "RST_STREAM %ld", err);
		bt_msg_attr(m, BT_AK_ERROR, s->err, (size_t)k);
	}
}

/* ---- frames ------------------------------------------------------------ */

static int is_client_dir(const struct h2_state *s, int dir)
{
	return s->cdir == dir;
}

static void block_begin(struct h2_dir *d, uint32_t sid, int es, int push)
{
	d->in_block = 1;
	d->blk_sid = sid;
	d->blk_es = (uint8_t)es;
	d->blk_push = (uint8_t)push;
	d->blk_trunc = d->broken;
	for (int i = 0; i < HN_MAX - 1; i++)
		memset(&d->need[i], 0, offsetof(struct h2_val, b));
	d->hp = HP_OP;
}

/* The header block ended (END_HEADERS).  Sets M if a message ends. */
static void block_end(struct h2_state *s, struct h2_dir *d, int dir,
		      struct bt_msg *m)
{
	uint32_t sid = d->blk_sid;

	d->in_block = 0;
	if (d->hp != HP_OP)
		d->broken = 1;       /* a representation cut by the block end */
	if (d->blk_push)
		return;
	if (is_client_dir(s, dir)) {
		req_headers(s, d, sid, d->blk_es, m);
	} else {
		rep_headers(s, d, sid);
		if (d->blk_es)
			rep_end(s, sid, m, -1);
		else
			msg_of(m, (sid & 1) ? BT_MK_ONEWAY : BT_MK_CONTROL, sid);
	}
}

/* The frame header is complete: check it and set the payload phase. */
static int frame_begin(struct h2_state *s, struct h2_dir *d)
{
	d->left = (uint32_t)d->hdr[0] << 16 | (uint32_t)d->hdr[1] << 8 |
		  d->hdr[2];
	d->type = d->hdr[3];
	d->flags = d->hdr[4];
	d->sid = ((uint32_t)d->hdr[5] << 24 | (uint32_t)d->hdr[6] << 16 |
		  (uint32_t)d->hdr[7] << 8 | d->hdr[8]) & 0x7fffffffu;
	d->padlen = 0;
	d->sn = 0;
	d->body = 0;
	(void)s;
	if (d->in_block && (d->type != F_CONT || d->sid != d->blk_sid))
		return -1;
	if (!d->in_block && d->type == F_CONT)
		return -1;
	switch (d->type) {
	case F_DATA:
	case F_HEADERS:
	case F_PRIORITY:
	case F_RST:
	case F_PUSH:
	case F_CONT:
		if (d->sid == 0)
			return -1;
		break;
	case F_SETTINGS:
	case F_PING:
	case F_GOAWAY:
		if (d->sid != 0)
			return -1;
		break;
	}
	if (d->type == F_HEADERS)
		block_begin(d, d->sid, d->flags & FL_END_STREAM, 0);
	else if (d->type == F_PUSH)
		block_begin(d, d->sid, 0, 1);
	int padded = (d->type == F_DATA || d->type == F_HEADERS ||
		      d->type == F_PUSH) && (d->flags & FL_PADDED);
	d->ph = padded ? PH_PADLEN : PH_SKIP;
	d->body = d->left;
	if (padded) {
		if (d->left < 1)
			return -1;
		d->body = d->left - 1;
	}
	d->left = 0;
	return 0;
}

/* bytes to skip before the header block fragment */
static uint32_t frame_skip(const struct h2_dir *d)
{
	if (d->type == F_HEADERS && (d->flags & FL_PRIORITY))
		return 5;
	if (d->type == F_PUSH)
		return 4;
	return 0;
}

/* Payload bytes of the body phase. */
static void frame_body(struct h2_state *s, struct h2_dir *d, int dir,
		       const uint8_t *p, size_t k)
{
	switch (d->type) {
	case F_HEADERS:
	case F_PUSH:
	case F_CONT:
		hp_feed(d, p, k);
		break;
	case F_DATA:
		if (is_client_dir(s, dir))
			scan_body(s, d->sid, p, k);
		break;
	case F_RST:
		for (size_t i = 0; i < k && d->sn < 4; i++)
			d->small[d->sn++] = p[i];
		break;
	case F_SETTINGS:
		if (d->flags & 1u)
			break;
		for (size_t i = 0; i < k; i++) {
			d->small[d->sn++] = p[i];
			if (d->sn < 6)
				continue;
			d->sn = 0;
			if (d->small[0] == 0 && d->small[1] == 1) {
				/* the peer's decoder: limits our dir's
				 * encoder, that is the other direction's
				 * table as we follow it */
				uint32_t v = (uint32_t)d->small[2] << 24 |
					     (uint32_t)d->small[3] << 16 |
					     (uint32_t)d->small[4] << 8 |
					     d->small[5];
				s->d[!dir].tlimit = v ? v : 1;
			}
		}
		break;
	default:
		break;
	}
}

/* The frame ended: every frame ends a message. */
static void frame_end(struct h2_state *s, struct h2_dir *d, int dir,
		      struct bt_msg *m)
{
	int client = is_client_dir(s, dir);
	uint32_t sid = d->sid;
	struct h2_stream *t;

	switch (d->type) {
	case F_HEADERS:
	case F_CONT:
		if (d->blk_push) {              /* a PUSH_PROMISE's block */
			if (d->flags & FL_END_HEADERS)
				block_end(s, d, dir, m);
			m->kind = BT_MK_CONTROL;
		} else if (d->flags & FL_END_HEADERS) {
			block_end(s, d, dir, m);
		} else {        /* the block goes on: a frame of its stream */
			msg_of(m, client || (sid & 1) ? BT_MK_ONEWAY :
			       BT_MK_CONTROL, sid);
		}
		break;
	case F_DATA:
		if (!client && (d->flags & FL_END_STREAM)) {
			rep_end(s, sid, m, -1);
			break;
		}
		if (client && (d->flags & FL_END_STREAM) &&
		    (t = stream_find(s, sid)) != NULL)
			t->req_open = 0;
		msg_of(m, client || (sid & 1) ? BT_MK_ONEWAY : BT_MK_CONTROL,
		       sid);
		if (client && (d->flags & FL_END_STREAM))
			scan_end(s, sid, m);
		break;
	case F_RST: {
		long code = d->sn == 4 ? (long)((uint32_t)d->small[0] << 24 |
			(uint32_t)d->small[1] << 16 |
			(uint32_t)d->small[2] << 8 | d->small[3]) : 0;
		t = stream_find(s, sid);
		if (client) {
			if (t && (t->req_open || t->rep_open)) {
				/* the client gives its exchange up */
				msg_of(m, BT_MK_ONEWAY, sid);
				t->req_open = 0;
				int k = snprintf(s->err, sizeof s->err,
						 "RST_STREAM %ld", code);
				bt_msg_attr(m, BT_AK_ERROR, s->err, (size_t)k);
			}
		} else if (t ? t->rep_open : s->streams_full) {
			rep_end(s, sid, m, code);
		}
		if (!m->kind)
			m->kind = BT_MK_CONTROL;
		break;
	}
	default:
		/* connection-level: SETTINGS, PING, GOAWAY, WINDOW_UPDATE,
		 * PRIORITY, PUSH_PROMISE (its block continues in
		 * CONTINUATION frames, above), unknown types */
		if (d->type == F_PUSH && (d->flags & FL_END_HEADERS))
			block_end(s, d, dir, m);
		m->kind = BT_MK_CONTROL;
		break;
	}
}

/* Take up to d->left bytes of P[*I..N); 1 when the phase is done. */
static int take(struct h2_dir *d, size_t *i, size_t n, size_t *k)
{
	*k = d->left < n - *i ? d->left : n - *i;
	d->left -= (uint32_t)*k;
	*i += *k;
	return d->left == 0;
}

static long h2_feed(void *st, int dir, const uint8_t *p, size_t n,
		    struct bt_msg *m)
{
	struct h2_state *s = st;
	struct h2_dir *d;
	size_t i = 0, k;

	dir &= 1;
	d = &s->d[dir];
	if (s->dgram)
		return BT_PP_LOST;
	if (!d->started) {
		d->started = 1;
		if (s->cdir < 0)
			s->cdir = (int8_t)(p[0] == 'P' ? dir : !dir);
		d->pre = is_client_dir(s, dir) ? H2_PREFACE_LEN : 0;
	}
	if (d->pre) {
		size_t off = H2_PREFACE_LEN - d->pre;
		k = d->pre < n ? d->pre : n;
		if (memcmp(p, &H2_PREFACE[off], k) != 0)
			return BT_PP_LOST;
		d->pre = (uint8_t)(d->pre - k);
		i = k;
	}
	for (;;) {
		switch (d->ph) {
		case PH_HDR:
			if (i == n)
				return (long)n;
			k = 9u - d->hn < n - i ? 9u - d->hn : n - i;
			memcpy(d->hdr + d->hn, p + i, k);
			d->hn = (uint8_t)(d->hn + k);
			i += k;
			if (d->hn < 9)
				return (long)n;
			if (frame_begin(s, d) < 0)
				return BT_PP_LOST;
			if (d->ph == PH_SKIP) {
				d->left = frame_skip(d);
				if (d->left > d->body)
					return BT_PP_LOST;
				d->body -= d->left;
			}
			break;
		case PH_PADLEN:
			if (i == n)
				return (long)n;
			d->padlen = p[i++];
			if (d->padlen > d->body)
				return BT_PP_LOST;
			d->body -= d->padlen;
			d->ph = PH_SKIP;
			d->left = frame_skip(d);
			if (d->left > d->body)
				return BT_PP_LOST;
			d->body -= d->left;
			break;
		case PH_SKIP:
			if (!take(d, &i, n, &k))
				return (long)n;
			d->ph = PH_BODY;
			d->left = d->body;
			break;
		case PH_BODY: {
			size_t at = i;
			int done = take(d, &i, n, &k);
			if (k)
				frame_body(s, d, dir, p + at, k);
			if (!done)
				return (long)n;
			d->ph = PH_PAD;
			d->left = d->padlen;
			break;
		}
		default:                /* PH_PAD */
			if (!take(d, &i, n, &k))
				return (long)n;
			d->hn = 0;
			d->ph = PH_HDR;
			frame_end(s, d, dir, m);
			if (m->kind)
				return (long)i;
			break;
		}
	}
}

static void h2_init(void *st, int role, int transport)
{
	struct h2_state *s = st;
	s->dgram = transport == BT_TR_DGRAM;
	s->cdir = role == BT_ROLE_CLIENT ? BT_DIR_OUT :
		  role == BT_ROLE_SERVER ? BT_DIR_IN : -1;
	for (int i = 0; i < 2; i++) {
		s->d[i].tmax = 4096;
		s->d[i].tlimit = 0;
	}
}

static void h2_fini(void *st) { (void)st; }

/* Sniff: the client's preface (a shorter prefix of it is MAYBE). */
static int h2_sniff(int dir, int role, const uint8_t *p, size_t n)
{
	(void)dir; (void)role;
	size_t k = n < H2_PREFACE_LEN ? n : H2_PREFACE_LEN;
	if (memcmp(p, H2_PREFACE, k) != 0)
		return BT_SNIFF_NO;
	return n < H2_PREFACE_LEN ? BT_SNIFF_MAYBE : BT_SNIFF_YES;
}

const struct bt_proto_ops bt_proto_http2 = {
	.name = "http2",
	.id = BT_PROTO_HTTP2,
	.state_size = sizeof(struct h2_state),
	.sniff = h2_sniff,
	.init = h2_init,
	.fini = h2_fini,
	.feed = h2_feed,
	.eof = NULL,
};
