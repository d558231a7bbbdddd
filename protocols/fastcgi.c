/*
 * fastcgi.c - FastCGI 1.0, web-server side and application side.
 *
 * Every record is an 8-byte header (version 1, type, request id, content
 * length, padding length, reserved), its content and its padding.  The
 * web server sends requests: BEGIN_REQUEST, PARAMS records up to an empty
 * one, STDIN records up to an empty one (and, for the Filter role, DATA up
 * to an empty one); the request ends after the record that closes its last
 * stream (an Authorizer request has no STDIN: it ends with its PARAMS).
 * The application replies with STDOUT/STDERR records; the reply ends after
 * END_REQUEST.  Records of several requests may interleave: every request
 * and reply carries its request id as witness.  Management records (id 0:
 * GET_VALUES, GET_VALUES_RESULT, UNKNOWN_TYPE) are CONTROL messages;
 * ABORT_REQUEST is a ONEWAY message of its request.
 *
 * The request side keeps, per request id whose request is still being sent,
 * the name-value parser of its PARAMS stream (names and values may be split
 * across records and feed() calls) and the values of SCRIPT_NAME,
 * REQUEST_URI and REQUEST_METHOD, in a table of FCGI_SLOTS entries; a
 * request beyond that, a record of an unknown request, a version other
 * than 1, or a record type that does not belong to its direction is
 * BT_PP_LOST.  FastCGI runs over streams only: on a datagram transport
 * feed() is BT_PP_LOST at once.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "btrace/proto.h"

#define FCGI_SLOTS        4
#define FCGI_KEEP_NAME    16
#define FCGI_NVAL         3       /* kept values: method, script, uri */

enum {
	T_BEGIN = 1, T_ABORT, T_END, T_PARAMS, T_STDIN, T_STDOUT, T_STDERR,
	T_DATA, T_GET_VALUES, T_GET_VALUES_RESULT, T_UNKNOWN_TYPE,
};
enum { R_RESPONDER = 1, R_AUTHORIZER, R_FILTER };
enum { NV_NLEN, NV_VLEN, NV_NAME, NV_VALUE };

/* slot.open: streams still to be closed */
#define S_PARAMS 0x1u
#define S_STDIN  0x2u
#define S_DATA   0x4u

static const uint8_t val_key[FCGI_NVAL] = {
	BT_AK_METHOD, BT_AK_FCGI_SCRIPT, BT_AK_FCGI_URI,
};
static const uint16_t val_cap[FCGI_NVAL] = { 16, 192, 384 };
static const uint16_t val_off[FCGI_NVAL] = { 0, 16, 208 };
#define FCGI_VAL_ARENA 592

struct fcgi_slot {
	uint16_t id;
	uint8_t  used;
	uint8_t  open;
	uint8_t  nv;               /* NV_*: PARAMS name-value parser */
	uint8_t  lenb;             /* bytes of a 4-byte length collected */
	int8_t   which;            /* value being kept, -1 none */
	uint8_t  trunc;
	uint32_t nlen, vlen;       /* bytes of name / value still to come */
	uint32_t nseen;            /* bytes of the name seen */
	uint64_t body;             /* STDIN bytes */
	char     name[FCGI_KEEP_NAME];
	uint16_t vlen_kept[FCGI_NVAL];
	uint8_t  vset[FCGI_NVAL];
	char     val[FCGI_VAL_ARENA];
};

struct fcgi_dir {
	uint8_t  hdr[8];
	uint8_t  hn;               /* header bytes collected */
	uint8_t  bn;               /* content bytes of BEGIN/END kept */
	uint8_t  body[8];
	uint16_t clen;             /* content bytes left */
	uint8_t  plen;             /* padding bytes left */
	int8_t   slot;             /* request slot of this record, -1 none */
};

struct fcgi_state {
	int8_t   req_dir;          /* direction of the web server's records */
	uint8_t  dgram;            /* not a stream: not followed */
	char     num[24];
	char     err[20];
	struct fcgi_dir d[2];
	struct fcgi_slot slot[FCGI_SLOTS];
};

static void fcgi_init(void *st, int role, int transport)
{
	struct fcgi_state *s = st;
	s->dgram = transport == BT_TR_DGRAM;
	/* the web server connects to the application */
	s->req_dir = role == BT_ROLE_CLIENT ? BT_DIR_OUT :
		     role == BT_ROLE_SERVER ? BT_DIR_IN : -1;
}

static void fcgi_fini(void *st) { (void)st; }

static int is_req_type(unsigned t, unsigned id)
{
	return t == T_BEGIN || t == T_ABORT || t == T_PARAMS || t == T_STDIN ||
	       t == T_DATA || t == T_GET_VALUES ||
	       (t > T_UNKNOWN_TYPE && id == 0);
}

static int is_rep_type(unsigned t)
{
	return t == T_END || t == T_STDOUT || t == T_STDERR ||
	       t == T_GET_VALUES_RESULT || t == T_UNKNOWN_TYPE;
}

static int slot_find(struct fcgi_state *s, unsigned id)
{
	for (int i = 0; i < FCGI_SLOTS; i++)
		if (s->slot[i].used && s->slot[i].id == id)
			return i;
	return -1;
}

/* Which kept value does the name NAME[0..NL) name (-1: none)?  Most
 * names of a request are none of the three: their length tells at once.
 * A name seen before in the request keeps its first value. */
static int nv_which(const struct fcgi_slot *sl, const void *name, uint32_t nl)
{
	static const char names[FCGI_NVAL][FCGI_KEEP_NAME] = {
		"REQUEST_METHOD", "SCRIPT_NAME", "REQUEST_URI",
	};
	static const uint8_t lens[FCGI_NVAL] = { 14, 11, 11 };

	if (nl != 14 && nl != 11)
		return -1;
	for (int i = 0; i < FCGI_NVAL; i++)
		if (nl == lens[i] && !sl->vset[i] &&
		    memcmp(name, names[i], lens[i]) == 0)
			return i;
	return -1;
}

/* The name is complete: is it one whose value we keep? */
static void nv_name_done(struct fcgi_slot *sl)
{
	sl->which = (int8_t)nv_which(sl, sl->name, sl->nseen);
	if (sl->which >= 0)
		sl->vset[sl->which] = 1;
}

/* A length of a pair at P (N bytes there): one byte below 0x80, or four
 * with the first's top bit set.  Its bytes, 0 if N holds too few. */
static size_t nv_len(const uint8_t *p, size_t n, uint32_t *len)
{
	if (n == 0)
		return 0;
	if (!(p[0] & 0x80)) {
		*len = p[0];
		return 1;
	}
	if (n < 4)
		return 0;
	*len = ((uint32_t)p[0] & 0x7f) << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
	return 4;
}

/*
 * The pairs that lie whole in P[0..N) from a pair's start: both lengths
 * and the name read in place, a value not kept stepped over.  Stops at
 * the first pair that does not, or whose value is kept, leaving the
 * parser where nv_feed's byte-wise way would be after the same bytes
 * (at that pair's start, or, for a kept value or one cut by the end of
 * P, at the start of its value).  Returns the bytes consumed.
 */
static size_t nv_fast(struct fcgi_slot *sl, const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (n - i >= 2) {
		size_t j = i, k;
		uint32_t nl, vl;

		if ((k = nv_len(p + j, n - j, &nl)) == 0)
			break;
		j += k;
		if ((k = nv_len(p + j, n - j, &vl)) == 0)
			break;
		j += k;
		if (n - j < nl)
			break;
		int w = nv_which(sl, p + j, nl);
		j += nl;
		if (w < 0 && n - j >= vl) {
			i = j + vl;             /* a whole pair not kept */
			continue;
		}
		sl->which = (int8_t)w;         /* at the value's start */
		if (w >= 0)
			sl->vset[w] = 1;
		sl->nseen = nl;
		sl->nlen = 0;
		sl->vlen = vl;
		sl->nv = NV_VALUE;
		return j;
	}
	return i;
}

/* PARAMS content: name-value pairs, resumable at any byte. */
static void nv_feed(struct fcgi_slot *sl, const uint8_t *p, size_t n)
{
	size_t i = 0;

	for (;;) {
		if (sl->nv == NV_NAME && sl->nlen == 0) {
			nv_name_done(sl);
			sl->nv = NV_VALUE;
		}
		if (sl->nv == NV_VALUE && sl->vlen == 0)
			sl->nv = NV_NLEN;
		if (i >= n)
			return;
		if (sl->nv == NV_NLEN && sl->lenb == 0) {
			size_t k = nv_fast(sl, p + i, n - i);
			if (k) {
				i += k;
				continue;
			}
		}
		if (sl->nv == NV_NLEN || sl->nv == NV_VLEN) {
			uint32_t *len = sl->nv == NV_NLEN ? &sl->nlen : &sl->vlen;
			uint8_t b = p[i++];
			if (sl->lenb == 0 && !(b & 0x80)) {
				*len = b;
			} else {
				*len = sl->lenb ? *len << 8 | b : b & 0x7fu;
				if (++sl->lenb < 4)
					continue;
				sl->lenb = 0;
			}
			if (sl->nv == NV_NLEN) {
				sl->nv = NV_VLEN;
			} else {
				sl->nv = NV_NAME;
				sl->nseen = 0;
			}
			continue;
		}
		size_t k = n - i;
		if (sl->nv == NV_NAME) {
			if (k > sl->nlen)
				k = sl->nlen;
			if (sl->nseen < FCGI_KEEP_NAME) {
				size_t c = FCGI_KEEP_NAME - sl->nseen;
				memcpy(sl->name + sl->nseen, p + i,
				       k < c ? k : c);
			}
			sl->nseen += (uint32_t)k;
			sl->nlen -= (uint32_t)k;
		} else {
			if (k > sl->vlen)
				k = sl->vlen;
			if (sl->which >= 0) {
				int w = sl->which;
				size_t room = val_cap[w] - sl->vlen_kept[w];
				size_t c = k < room ? k : room;
				memcpy(sl->val + val_off[w] + sl->vlen_kept[w],
				       p + i, c);
				sl->vlen_kept[w] = (uint16_t)(sl->vlen_kept[w] + c);
				if (c < k)
					sl->trunc = 1;
			}
			sl->vlen -= (uint32_t)k;
		}
		i += k;
	}
}

/* The record header is complete: check it.  0 ok, -1 lost. */
static int rec_begin(struct fcgi_state *s, struct fcgi_dir *d, int dir)
{
	unsigned type = d->hdr[1], id = (unsigned)d->hdr[2] << 8 | d->hdr[3];
	if (d->hdr[0] != 1)
		return -1;
	if (s->req_dir < 0) {
		if (is_req_type(type, id))
			s->req_dir = (int8_t)dir;
		else if (is_rep_type(type))
			s->req_dir = (int8_t)!dir;
		else
			return -1;
	}
	if (dir == s->req_dir ? !is_req_type(type, id) : !is_rep_type(type))
		return -1;
	if ((type >= T_GET_VALUES) != (id == 0))
		return -1;          /* management records, and only they, id 0 */
	d->clen = (uint16_t)(d->hdr[4] << 8 | d->hdr[5]);
	d->plen = d->hdr[6];
	d->bn = 0;
	d->slot = -1;
	if ((type == T_BEGIN || type == T_END) && d->clen != 8)
		return -1;
	if (type == T_PARAMS || type == T_STDIN || type == T_DATA) {
		d->slot = (int8_t)slot_find(s, id);
		if (d->slot < 0)
			return -1;
	}
	return 0;
}

/* Start the request in a slot (BEGIN_REQUEST complete).  -1 if no room. */
static int req_begin(struct fcgi_state *s, unsigned id, unsigned role)
{
	int i = slot_find(s, id);         /* a restarted id replaces its slot */
	for (int j = 0; i < 0 && j < FCGI_SLOTS; j++)
		if (!s->slot[j].used)
			i = j;
	if (i < 0 || role < R_RESPONDER || role > R_FILTER)
		return -1;
	struct fcgi_slot *sl = &s->slot[i];
	memset(sl, 0, offsetof(struct fcgi_slot, val));
	sl->used = 1;
	sl->id = (uint16_t)id;
	sl->which = -1;
	sl->open = role == R_AUTHORIZER ? S_PARAMS :
		   role == R_FILTER ? S_PARAMS | S_STDIN | S_DATA :
		   S_PARAMS | S_STDIN;
	return 0;
}

/* A whole record has passed.  1 if a message ends, 0 if not, -1 lost. */
static int rec_end(struct fcgi_state *s, struct fcgi_dir *d, struct bt_msg *m)
{
	unsigned type = d->hdr[1], id = (unsigned)d->hdr[2] << 8 | d->hdr[3];
	unsigned clen = (unsigned)d->hdr[4] << 8 | d->hdr[5];
	struct fcgi_slot *sl = d->slot >= 0 ? &s->slot[d->slot] : NULL;

	m->witness = id;
	m->flags = BT_MF_WITNESS;
	switch (type) {
	case T_BEGIN:
		if (req_begin(s, id, (unsigned)d->body[0] << 8 | d->body[1]) < 0)
			return -1;
		return 0;
	case T_ABORT: {
		int i = slot_find(s, id);
		if (i >= 0)
			s->slot[i].used = 0;
		m->kind = BT_MK_ONEWAY;
		return 1;
	}
	case T_PARAMS:
	case T_STDIN:
	case T_DATA:
		if (clen)
			return 0;
		sl->open &= (uint8_t)~(type == T_PARAMS ? S_PARAMS :
				       type == T_STDIN ? S_STDIN : S_DATA);
		if (sl->open)
			return 0;
		m->kind = BT_MK_REQUEST;
		for (int i = 0; i < FCGI_NVAL; i++)
			if (sl->vset[i])
				bt_msg_attr(m, val_key[i], sl->val + val_off[i],
					    sl->vlen_kept[i]);
		{
			size_t k;
			const char *q = bt_u64_dec(s->num, sizeof s->num,
						   sl->body, &k);
			bt_msg_attr(m, BT_AK_BODY_LEN, q, k);
		}
		if (sl->trunc)
			m->flags |= BT_MF_TRUNC;
		sl->used = 0;
		return 1;
	case T_END: {
		static const char *const ps[] = {
			"", "CANT_MPX_CONN", "OVERLOADED", "UNKNOWN_ROLE",
		};
		m->kind = BT_MK_REPLY;
		m->status = (uint32_t)d->body[0] << 24 | (uint32_t)d->body[1] << 16 |
			    (uint32_t)d->body[2] << 8 | d->body[3];
		if (d->body[4]) {
			const char *e = d->body[4] < 4 ? ps[d->body[4]] : NULL;
			int k = e ? snprintf(s->err, sizeof s->err, "%s", e) :
				snprintf(s->err, sizeof s->err, "PROTOCOL_%u",
					 d->body[4]);
			bt_msg_attr(m, BT_AK_ERROR, s->err, (size_t)k);
		}
		return 1;
	}
	case T_STDOUT:
	case T_STDERR:
		return 0;
	default:                            /* management records */
		m->kind = BT_MK_CONTROL;
		m->flags = 0;
		m->witness = 0;
		return 1;
	}
}

static long fcgi_feed(void *st, int dir, const uint8_t *p, size_t n,
		      struct bt_msg *m)
{
	struct fcgi_state *s = st;
	struct fcgi_dir *d = &s->d[dir & 1];
	size_t i = 0;

	dir &= 1;
	if (s->dgram)
		return BT_PP_LOST;
	while (i < n) {
		if (d->hn < 8) {
			size_t k = 8u - d->hn < n - i ? 8u - d->hn : n - i;
			memcpy(d->hdr + d->hn, p + i, k);
			d->hn = (uint8_t)(d->hn + k);
			i += k;
			if (d->hn < 8)
				break;
			if (rec_begin(s, d, dir) < 0)
				return BT_PP_LOST;
		} else if (d->clen) {
			size_t k = d->clen < n - i ? d->clen : n - i;
			unsigned type = d->hdr[1];
			if (type == T_BEGIN || type == T_END) {
				memcpy(d->body + d->bn, p + i, k);
				d->bn = (uint8_t)(d->bn + k);
			} else if (type == T_PARAMS) {
				nv_feed(&s->slot[d->slot], p + i, k);
			} else if (type == T_STDIN) {
				s->slot[d->slot].body += k;
			}
			d->clen = (uint16_t)(d->clen - k);
			i += k;
		} else {
			size_t k = d->plen < n - i ? d->plen : n - i;
			d->plen = (uint8_t)(d->plen - k);
			i += k;
		}
		if (d->hn == 8 && !d->clen && !d->plen) {
			int r = rec_end(s, d, m);
			d->hn = 0;
			if (r < 0)
				return BT_PP_LOST;
			if (r > 0)
				return (long)i;
			m->flags = 0;
			m->witness = 0;
		}
	}
	return (long)n;
}

/*
 * Sniff: the web server's first record, BEGIN_REQUEST (content 8, role 1-3)
 * or GET_VALUES (id 0).  A shorter consistent prefix is MAYBE.
 */
static int fcgi_sniff(int dir, int role, const uint8_t *p, size_t n)
{
	(void)dir; (void)role;
	if (p[0] != 1 || (n > 1 && p[1] != T_BEGIN && p[1] != T_GET_VALUES))
		return BT_SNIFF_NO;
	if (n < 8)
		return BT_SNIFF_MAYBE;
	unsigned id = (unsigned)p[2] << 8 | p[3];
	unsigned clen = (unsigned)p[4] << 8 | p[5];
	if (p[1] == T_GET_VALUES)
		return id == 0 ? BT_SNIFF_YES : BT_SNIFF_NO;
	if (id == 0 || clen != 8)
		return BT_SNIFF_NO;
	if (n < 10)
		return BT_SNIFF_MAYBE;
	return p[8] == 0 && p[9] >= R_RESPONDER && p[9] <= R_FILTER ?
	       BT_SNIFF_YES : BT_SNIFF_NO;
}

const struct bt_proto_ops bt_proto_fastcgi = {
	.name = "fastcgi",
	.id = BT_PROTO_FASTCGI,
	.state_size = sizeof(struct fcgi_state),
	.sniff = fcgi_sniff,
	.init = fcgi_init,
	.fini = fcgi_fini,
	.feed = fcgi_feed,
	.eof = NULL,
};
