/*
 * registry.c - the table of protocol processors and selection by sniffing.
 */
#include "config.h"

#include <string.h>

#include "btrace/proto.h"

const struct bt_proto_ops *const bt_protocols[BT_PROTO_MAX] = {
	[BT_PROTO_LINE]    = &bt_proto_line,
	[BT_PROTO_ONESHOT] = &bt_proto_oneshot,
	[BT_PROTO_HTTP]    = &bt_proto_http,
	[BT_PROTO_FASTCGI] = &bt_proto_fastcgi,
	[BT_PROTO_PGSQL]   = &bt_proto_pgsql,
	[BT_PROTO_DNS]     = &bt_proto_dns,
	[BT_PROTO_REDIS]   = &bt_proto_redis,
	[BT_PROTO_MYSQL]   = &bt_proto_mysql,
	[BT_PROTO_HTTP2]   = &bt_proto_http2,
};

/*
 * Sniffing order: the most recognisable signatures first.  HTTP's request
 * and status lines are text; PostgreSQL's startup packets begin with a
 * zero byte and FastCGI's records with the byte 1, so neither can be
 * mistaken for text or for each other; Redis commands begin "*N\r\n$",
 * a byte none of those three starts with; DNS has no magic at all (any
 * two bytes are an id) and comes last.  MySQL's greeting (mysql.c: a length
 * below 1024, sequence id 0, protocol 10, a version starting with a digit)
 * goes before DNS: a DNS message with those five bytes is very unlikely
 * (a length and id of 1-3 / 0 and flags 0x0a), the other way round
 * a greeting could be taken for DNS.  HTTP/2's client preface ("PRI *
 * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24 bytes) is no HTTP/1 method (http.c
 * says NO to "PRI") and goes before DNS too.  line and oneshot have no signature and
 * are never chosen by sniffing.
 */
static const struct bt_proto_ops *const sniff_order[] = {
	&bt_proto_http,
	&bt_proto_pgsql,
	&bt_proto_fastcgi,
	&bt_proto_redis,
	&bt_proto_mysql,
	&bt_proto_http2,
	&bt_proto_dns,
};

const struct bt_proto_ops *bt_proto_by_name(const char *name)
{
	for (unsigned i = 0; i < BT_PROTO_MAX; i++)
		if (bt_protocols[i] && strcmp(bt_protocols[i]->name, name) == 0)
			return bt_protocols[i];
	return NULL;
}

/*
 * A YES wins only if no processor earlier in the order still says MAYBE:
 * then the caller waits for more bytes (*MAYBE) rather than let a weaker
 * signature take a channel a stronger one may claim.
 */
const struct bt_proto_ops *bt_proto_sniff(int dir, int role, const uint8_t *p,
					  size_t n, int *maybe)
{
	*maybe = 0;
	if (n == 0)
		return NULL;
	for (unsigned i = 0; i < sizeof sniff_order / sizeof sniff_order[0];
	     i++) {
		const struct bt_proto_ops *o = sniff_order[i];
		int r = o->sniff(dir, role, p, n);
		if (r == BT_SNIFF_YES && !*maybe)
			return o;
		if (r == BT_SNIFF_MAYBE)
			*maybe = 1;
	}
	return NULL;
}

/*
 * A TLS record header: content type handshake (0x16), major version 3,
 * minor 0 (SSL 3.0) to 4 (the TLS 1.3 drafts; TLS 1.3 itself says 1).
 * Every TLS connection starts with one (the ClientHello).
 */
int bt_proto_looks_tls(const uint8_t *p, size_t n)
{
	return n >= 3 && p[0] == 0x16 && p[1] == 0x03 && p[2] <= 0x04;
}
