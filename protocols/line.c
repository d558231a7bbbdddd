/*
 * line.c - line-oriented protocols: every message is one line ending in
 * "\n"; requests and replies alternate in order (paper, Figure 4).
 *
 * The connecting end sends requests and the accepting end replies; on a
 * channel whose roles are unknown (pipes, socketpairs) the direction of the
 * first line is taken as the request direction.  A line longer than
 * LINE_MAX_LEN bytes is not this protocol: BT_PP_LOST.  A last line cut
 * short by the end of its stream (no "\n") is still a message, flagged
 * BT_MF_EOF.  Over a datagram transport each datagram is one message,
 * newlines or not.  The first LINE_KEEP bytes of each line (without its
 * "\r\n") are its attribute.
 */
#include "config.h"

#include <string.h>

#include "btrace/proto.h"

#define LINE_MAX_LEN  65536u
#define LINE_KEEP     128u      /* bytes of each line kept as attribute */

struct line_dir {
	uint32_t len;               /* bytes of the current line so far */
	uint32_t kept;
	uint8_t  cr;                /* the last byte before "\n" was "\r" */
	char     head[LINE_KEEP];
};

struct line_state {
	uint8_t role;
	uint8_t dgram;
	int8_t  req_dir;            /* -1 until known */
	struct line_dir d[2];
};

static void line_init(void *st, int role, int transport)
{
	struct line_state *s = st;
	s->role = (uint8_t)role;
	s->dgram = transport == BT_TR_DGRAM;
	s->req_dir = role == BT_ROLE_CLIENT ? BT_DIR_OUT :
		     role == BT_ROLE_SERVER ? BT_DIR_IN : -1;
}

static void line_fini(void *st) { (void)st; }

/* The line in D is complete (or ended by eof): describe it in M. */
static inline void line_emit(struct line_state *s, struct line_dir *d, int dir,
		      struct bt_msg *m, size_t nl)
{
	if (s->req_dir < 0)
		s->req_dir = (int8_t)dir;
	m->kind = dir == s->req_dir ? BT_MK_REQUEST : BT_MK_REPLY;
	uint32_t body = d->len - (uint32_t)nl - (d->cr ? 1 : 0);
	uint32_t kept = d->kept < body ? d->kept : body;
	bt_msg_attr(m, BT_AK_LINE, d->head, kept);
	if (body > kept)
		m->flags |= BT_MF_TRUNC;
	d->len = 0;
	d->kept = 0;
	d->cr = 0;
}

/* memchr for '\n', without a call for the few bytes of a short read */
static inline const uint8_t *find_nl(const uint8_t *p, size_t n)
{
	if (n > 16)
		return memchr(p, '\n', n);
	for (size_t i = 0; i < n; i++)
		if (p[i] == '\n')
			return p + i;
	return NULL;
}

static long line_feed(void *st, int dir, const uint8_t *p, size_t n,
		      struct bt_msg *m)
{
	struct line_state *s = st;
	struct line_dir *d = &s->d[dir & 1];
	const uint8_t *nl = s->dgram ? NULL : find_nl(p, n);
	size_t take = nl ? (size_t)(nl - p) + 1 : n;
	size_t text = take - (nl ? 1 : 0);

	dir &= 1;
	if (d->len + take > LINE_MAX_LEN)
		return BT_PP_LOST;
	if (text && d->kept < LINE_KEEP) {
		size_t k = text < LINE_KEEP - d->kept ? text : LINE_KEEP - d->kept;
		memcpy(d->head + d->kept, p, k);
		d->kept += (uint32_t)k;
	}
	if (text)
		d->cr = p[text - 1] == '\r';
	d->len += (uint32_t)take;
	if (s->dgram) {
		if (text && p[text - 1] == '\n') {
			d->cr = text > 1 && p[text - 2] == '\r';
			line_emit(s, d, dir, m, 1);
		} else {
			d->cr = 0;
			line_emit(s, d, dir, m, 0);
		}
		m->flags |= BT_MF_DGRAM;
		return (long)n;
	}
	if (!nl)
		return (long)n;
	line_emit(s, d, dir, m, 1);
	return (long)take;
}

static void line_eof(void *st, int dir, struct bt_msg *m)
{
	struct line_state *s = st;
	struct line_dir *d = &s->d[dir & 1];
	if (s->dgram || d->len == 0)
		return;
	line_emit(s, d, dir & 1, m, 0);
	m->flags |= BT_MF_EOF;
}

const struct bt_proto_ops bt_proto_line = {
	.name = "line",
	.id = BT_PROTO_LINE,
	.state_size = sizeof(struct line_state),
	.sniff = NULL,
	.init = line_init,
	.fini = line_fini,
	.feed = line_feed,
	.eof = line_eof,
};
