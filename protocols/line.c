/*
 * line.c - line-oriented protocols: every message is one line ending in
 * "\n"; requests and replies alternate in order (paper, Figure 4).
 *
 * The connecting end sends requests and the accepting end replies; on a
 * channel whose roles are unknown (pipes, socketpairs) the direction of the
 * first line is taken as the request direction.  A line longer than
 * LINE_MAX bytes is not this protocol: BT_PP_LOST.
 */
#include "config.h"

#include <string.h>

#include "btrace/proto.h"

#define LINE_MAX_LEN  65536u
#define LINE_KEEP     128u      /* bytes of each line kept as attribute */

struct line_dir {
	uint32_t len;               /* bytes of the current line so far */
	uint32_t kept;
	char     head[LINE_KEEP];
};

struct line_state {
	uint8_t role;
	int8_t  req_dir;            /* -1 until known */
	struct line_dir d[2];
};

static void line_init(void *st, int role, int transport)
{
	struct line_state *s = st;
	(void)transport;
	s->role = (uint8_t)role;
	s->req_dir = role == BT_ROLE_CLIENT ? BT_DIR_OUT :
		     role == BT_ROLE_SERVER ? BT_DIR_IN : -1;
}

static void line_fini(void *st) { (void)st; }

static long line_feed(void *st, int dir, const uint8_t *p, size_t n,
		      struct bt_msg *m)
{
	struct line_state *s = st;
	struct line_dir *d = &s->d[dir & 1];
	const uint8_t *nl = memchr(p, '\n', n);
	size_t take = nl ? (size_t)(nl - p) + 1 : n;

	if (d->len + take > LINE_MAX_LEN)
		return BT_PP_LOST;
	if (d->kept < LINE_KEEP) {
		size_t k = take - (nl ? 1 : 0);
		if (k > LINE_KEEP - d->kept)
			k = LINE_KEEP - d->kept;
		memcpy(d->head + d->kept, p, k);
		d->kept += (uint32_t)k;
	}
	d->len += (uint32_t)take;
	if (!nl)
		return (long)n;

	if (s->req_dir < 0)
		s->req_dir = (int8_t)dir;
	m->kind = dir == s->req_dir ? BT_MK_REQUEST : BT_MK_REPLY;
	uint32_t kept = d->kept;
	if (kept && d->head[kept - 1] == '\r')
		kept--;
	bt_msg_attr(m, BT_AK_LINE, d->head, kept);
	if (d->len - 1 > LINE_KEEP)
		m->flags |= BT_MF_TRUNC;
	d->len = 0;
	d->kept = 0;
	return (long)take;
}

const struct bt_proto_ops bt_proto_line = {
	.name = "line",
	.id = BT_PROTO_LINE,
	.state_size = sizeof(struct line_state),
	.sniff = NULL,
	.init = line_init,
	.fini = line_fini,
	.feed = line_feed,
	.eof = NULL,
};
