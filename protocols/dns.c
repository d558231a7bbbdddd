/*
 * dns.c - DNS messages (RFC 1035) over UDP and TCP.
 *
 * Over UDP every datagram is one message; over TCP (and any stream) each
 * message has a 2-byte length prefix, and several may be in flight.  A
 * message with the QR bit clear is a REQUEST, with it set a REPLY; the
 * 16-bit id is the witness (libbtrace and the reconstructor add the
 * address tuple), so replies pair with their queries in any order, as
 * when glibc sends the A and AAAA queries together on one socket.
 * Attributes: the first question's name (labels decoded, compression
 * pointers followed backwards only and at most DNS_HOPS times, unprintable
 * bytes escaped as \DDD), its type ("A", "AAAA", ..., or "TYPEn"); replies
 * carry the rcode as status and, when not NOERROR, its name as error.
 * A message shorter than its 12-byte header, or whose question cannot be
 * decoded, is BT_PP_LOST.  Over TCP only the first DNS_KEEP bytes of a
 * message are kept (the question comes first).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "btrace/proto.h"

#define DNS_KEEP      320u
#define DNS_NAME_MAX  256u
#define DNS_HOPS      16

struct dns_dir {
	uint8_t  ln;                /* length prefix bytes collected */
	uint8_t  lb[2];
	uint16_t len;               /* message length */
	uint16_t got;               /* message bytes so far */
	uint8_t  buf[DNS_KEEP];
};

struct dns_state {
	uint8_t  dgram;
	char     name[DNS_NAME_MAX];
	char     type[16];
	char     err[16];
	struct dns_dir d[2];
};

static void dns_init(void *st, int role, int transport)
{
	struct dns_state *s = st;
	(void)role;
	s->dgram = transport == BT_TR_DGRAM;
}

static void dns_fini(void *st) { (void)st; }

static const char *type_name(unsigned t)
{
	switch (t) {
	case 1: return "A";
	case 2: return "NS";
	case 5: return "CNAME";
	case 6: return "SOA";
	case 12: return "PTR";
	case 13: return "HINFO";
	case 15: return "MX";
	case 16: return "TXT";
	case 28: return "AAAA";
	case 33: return "SRV";
	case 35: return "NAPTR";
	case 41: return "OPT";
	case 43: return "DS";
	case 46: return "RRSIG";
	case 48: return "DNSKEY";
	case 52: return "TLSA";
	case 64: return "SVCB";
	case 65: return "HTTPS";
	case 252: return "AXFR";
	case 255: return "ANY";
	case 257: return "CAA";
	default: return NULL;
	}
}

static const char *rcode_name(unsigned r)
{
	static const char *const n[] = {
		"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP",
		"REFUSED", "YXDOMAIN", "YXRRSET", "NXRRSET", "NOTAUTH",
		"NOTZONE",
	};
	return r < sizeof n / sizeof n[0] ? n[r] : NULL;
}

/*
 * Decode the name at OFF of message M (N bytes available) into OUT (CAP
 * bytes).  Returns the offset after the name in the message, or -1 if it is
 * malformed or runs past N.  *OLEN is the presentation length kept,
 * *TRUNC set if it was cut.
 */
static long dns_name(const uint8_t *m, size_t n, size_t off, char *out,
		     size_t cap, size_t *olen, int *trunc)
{
	size_t pos = off, o = 0;
	long end = -1;
	int hops = 0;

	*trunc = 0;
	for (;;) {
		if (pos >= n)
			return -1;
		unsigned l = m[pos];
		if (l == 0) {
			if (end < 0)
				end = (long)pos + 1;
			break;
		}
		if ((l & 0xc0) == 0xc0) {
			if (pos + 1 >= n)
				return -1;
			size_t to = (size_t)(l & 0x3f) << 8 | m[pos + 1];
			if (end < 0)
				end = (long)pos + 2;
			if (to >= pos || ++hops > DNS_HOPS)
				return -1;
			pos = to;
			continue;
		}
		if (l & 0xc0 || pos + 1 + l > n)
			return -1;
		for (size_t i = pos + 1; i <= pos + l; i++) {
			char e[5];
			unsigned c = m[i];
			int k = c == '.' || c == '\\' ?
				snprintf(e, sizeof e, "\\%c", c) :
				c < 0x21 || c > 0x7e ?
				snprintf(e, sizeof e, "\\%03u", c) :
				snprintf(e, sizeof e, "%c", c);
			if (o + (size_t)k + 1 > cap) {
				*trunc = 1;
			} else {
				memcpy(out + o, e, (size_t)k);
				o += (size_t)k;
			}
		}
		if (o + 1 < cap)
			out[o++] = '.';
		else
			*trunc = 1;
		pos += 1 + l;
	}
	if (o == 0)
		out[o++] = '.';                 /* the root */
	else if (o > 1 && out[o - 1] == '.')
		o--;
	*olen = o;
	return end;
}

/*
 * Describe message P[0..N) (N is all of it, or the kept prefix of a
 * TRUNC-long one).  1 on success, -1 lost.
 */
static int dns_msg(struct dns_state *s, const uint8_t *p, size_t n,
		   size_t full, struct bt_msg *m)
{
	if (n < 12)
		return -1;
	unsigned id = (unsigned)p[0] << 8 | p[1];
	unsigned flags = (unsigned)p[2] << 8 | p[3];
	unsigned qd = (unsigned)p[4] << 8 | p[5];
	unsigned rcode = flags & 0xf;

	m->kind = flags & 0x8000 ? BT_MK_REPLY : BT_MK_REQUEST;
	m->flags = BT_MF_WITNESS;
	m->witness = id;
	if (m->kind == BT_MK_REPLY)
		m->status = rcode;
	if (qd) {
		size_t nl;
		int trunc;
		long e = dns_name(p, n, 12, s->name, sizeof s->name, &nl,
				  &trunc);
		if (e < 0 && n == full)
			return -1;
		if (e >= 0) {
			bt_msg_attr(m, BT_AK_DNS_NAME, s->name, nl);
			if (trunc)
				m->flags |= BT_MF_TRUNC;
			if ((size_t)e + 2 <= n) {
				unsigned t = (unsigned)p[e] << 8 | p[e + 1];
				const char *tn = type_name(t);
				int k = tn ? snprintf(s->type, sizeof s->type,
						      "%s", tn) :
					snprintf(s->type, sizeof s->type,
						 "TYPE%u", t);
				bt_msg_attr(m, BT_AK_DNS_TYPE, s->type,
					    (size_t)k);
			} else if (n == full) {
				return -1;
			}
		}
	}
	if (m->kind == BT_MK_REPLY && rcode) {
		const char *rn = rcode_name(rcode);
		int k = rn ? snprintf(s->err, sizeof s->err, "%s", rn) :
			snprintf(s->err, sizeof s->err, "RCODE%u", rcode);
		bt_msg_attr(m, BT_AK_ERROR, s->err, (size_t)k);
	}
	return 1;
}

static long dns_feed(void *st, int dir, const uint8_t *p, size_t n,
		     struct bt_msg *m)
{
	struct dns_state *s = st;
	struct dns_dir *d = &s->d[dir & 1];
	size_t i = 0;

	if (s->dgram) {
		if (n > 65535 || dns_msg(s, p, n, n, m) < 0)
			return BT_PP_LOST;
		m->flags |= BT_MF_DGRAM;
		return (long)n;
	}
	while (i < n) {
		if (d->ln < 2) {
			d->lb[d->ln++] = p[i++];
			if (d->ln < 2)
				continue;
			d->len = (uint16_t)(d->lb[0] << 8 | d->lb[1]);
			d->got = 0;
			if (d->len < 12)
				return BT_PP_LOST;
			continue;
		}
		size_t k = (size_t)(d->len - d->got) < n - i ?
			   (size_t)(d->len - d->got) : n - i;
		if (d->got < DNS_KEEP) {
			size_t c = DNS_KEEP - d->got < k ? DNS_KEEP - d->got : k;
			memcpy(d->buf + d->got, p + i, c);
		}
		d->got = (uint16_t)(d->got + k);
		i += k;
		if (d->got < d->len)
			continue;
		d->ln = 0;
		if (dns_msg(s, d->buf, d->len < DNS_KEEP ? d->len : DNS_KEEP,
			    d->len, m) < 0)
			return BT_PP_LOST;
		return (long)i;
	}
	return (long)n;
}

/* Does P[0..N) hold exactly the start of one standard query? */
static int query_shape(const uint8_t *p, size_t n)
{
	char tmp[DNS_NAME_MAX];
	size_t nl;
	int trunc;
	if (n < 17)
		return 0;
	unsigned flags = (unsigned)p[2] << 8 | p[3];
	if ((flags & 0xf800) != 0 || p[4] != 0 || p[5] != 1 || p[6] || p[7] ||
	    p[8] || p[9] || p[10] || p[11] > 1)
		return 0;
	long e = dns_name(p, n, 12, tmp, sizeof tmp, &nl, &trunc);
	if (e < 0 || (size_t)e + 4 > n)
		return 0;
	return p[e + 2] == 0 && (p[e + 3] == 1 || p[e + 3] == 255);
}

/*
 * Sniff: a standard query (opcode 0, one question of class IN, no answer
 * records, at most one additional record), bare as in a datagram or behind
 * a length prefix that covers exactly the bytes seen.
 */
static int dns_sniff(int dir, int role, const uint8_t *p, size_t n)
{
	(void)dir; (void)role;
	if (query_shape(p, n))
		return BT_SNIFF_YES;
	if (n > 2 && ((size_t)p[0] << 8 | p[1]) == n - 2 &&
	    query_shape(p + 2, n - 2))
		return BT_SNIFF_YES;
	return BT_SNIFF_NO;
}

const struct bt_proto_ops bt_proto_dns = {
	.name = "dns",
	.id = BT_PROTO_DNS,
	.state_size = sizeof(struct dns_state),
	.sniff = dns_sniff,
	.init = dns_init,
	.fini = dns_fini,
	.feed = dns_feed,
	.eof = NULL,
};
