/*
 * oneshot.c - one request and one reply per channel (CGI pipes, simple
 * request/response sockets).  Everything in the first direction to carry
 * data is the request; it ends when that direction ends or when the other
 * direction begins (BT_PPF_TURN_ENDS).  Everything in the other direction
 * is the reply, ending with its stream.  On a pipe (one direction only) the
 * whole stream is one message, a request on the writing end's side.  Data
 * in a direction whose message has ended is BT_PP_LOST (not one-shot).
 * Over a datagram transport the first datagram of each direction is its
 * message.  Attribute: the message's size (body_len).
 */
#include "config.h"

#include <stdio.h>

#include "btrace/proto.h"

struct oneshot_state {
	int8_t   req_dir;           /* -1 until the first byte */
	uint8_t  dgram;
	uint8_t  open[2];           /* a message is open in this direction */
	uint8_t  done[2];           /* ... and has ended */
	uint64_t bytes[2];
	char     num[24];
};

static void oneshot_init(void *st, int role, int transport)
{
	struct oneshot_state *s = st;
	s->dgram = transport == BT_TR_DGRAM;
	s->req_dir = role == BT_ROLE_CLIENT ? BT_DIR_OUT :
		     role == BT_ROLE_SERVER ? BT_DIR_IN : -1;
}

static void oneshot_fini(void *st) { (void)st; }

static void oneshot_emit(struct oneshot_state *s, int dir, struct bt_msg *m)
{
	s->done[dir] = 1;
	s->open[dir] = 0;
	m->kind = dir == s->req_dir ? BT_MK_REQUEST : BT_MK_REPLY;
	size_t k;
	const char *q = bt_u64_dec(s->num, sizeof s->num, s->bytes[dir], &k);
	bt_msg_attr(m, BT_AK_BODY_LEN, q, k);
}

static long oneshot_feed(void *st, int dir, const uint8_t *p, size_t n,
			 struct bt_msg *m)
{
	struct oneshot_state *s = st;
	(void)p;
	dir &= 1;
	if (s->req_dir < 0)
		s->req_dir = (int8_t)dir;
	if (s->done[dir])
		return BT_PP_LOST;  /* a second message: not one-shot */
	s->open[dir] = 1;
	s->bytes[dir] += n;
	if (s->dgram) {
		oneshot_emit(s, dir, m);
		m->flags |= BT_MF_DGRAM;
	}
	return (long)n;
}

static void oneshot_eof(void *st, int dir, struct bt_msg *m)
{
	struct oneshot_state *s = st;
	dir &= 1;
	if (!s->open[dir] || s->done[dir])
		return;
	oneshot_emit(s, dir, m);
	m->flags |= BT_MF_EOF;
}

const struct bt_proto_ops bt_proto_oneshot = {
	.name = "oneshot",
	.id = BT_PROTO_ONESHOT,
	.flags = BT_PPF_TURN_ENDS,
	.state_size = sizeof(struct oneshot_state),
	.sniff = NULL,
	.init = oneshot_init,
	.fini = oneshot_fini,
	.feed = oneshot_feed,
	.eof = oneshot_eof,
};
