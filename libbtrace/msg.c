/*
 * msg.c - message accounting shared by the read and write families: MSG,
 * LOST_SYNC records and the end of a direction (paper section 3.2,
 * docs/events.md).  The per-call helpers (track, data, turn ...) are in
 * iopath.h.
 */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bt.h"
#include "impl.h"
#include "iopath.h"

/* ---- logging helpers -------------------------------------------------- */

/* A message with an attribute to redact: through the general encoder,
 * after redact.c rewrote the copy that goes into the log.  Rare (SQL, a
 * URL that is not a plain path), so the struct copy does not matter. */
static __attribute__((noinline)) void msg_redact_emit(const struct bt_msg_rec *r)
{
	struct bt_event ev;

	bt_emit_rec_event(r, &ev);
	bt_redact_emit(&ev);
}

/* R into the ring.  One look at each attribute: the sum of the lengths
 * (the record's bound) and whether one has secrets to take out
 * (redact.c; the wire is untouched). */
static inline void msg_emit(struct bt_msg_rec *r)
{
	size_t vlen = 0;
	int redact = 0;
	unsigned rdf = bt_conf.redact;

	for (unsigned i = 0; i < r->nattr; i++) {
		vlen += r->attr[i].len;
		redact |= bt_redact_attr_needed(&r->attr[i], rdf);
	}
	if (unlikely(redact))
		msg_redact_emit(r);
	else
		bt_emit_msg(r, vlen);
}

/* R with one more attribute, the peer's address (a datagram's): out of
 * line, so that the common message needs neither the copy of the list
 * nor its room on the stack. */
static __attribute__((noinline)) void msg_emit_peer(struct bt_msg_rec *r,
						    const struct bt_addr *peer)
{
	struct bt_attr at[BT_EV_MAX_ATTR];
	char pbuf[64];

	memcpy(at, r->attr, sizeof at[0] * r->nattr);
	bt_addr_format(peer, pbuf, sizeof pbuf);
	at[r->nattr].key = BT_AK_PEER;
	at[r->nattr].val = pbuf;
	at[r->nattr].len = (uint16_t)strlen(pbuf);
	r->nattr = (uint8_t)(r->nattr + 1);
	r->attr = at;
	msg_emit(r);
}

void bt_msg_log(struct bt_chan *ch, int fd, int dir, const struct bt_msg *m,
		uint64_t off, uint64_t len, const struct bt_addr *peer)
{
	struct bt_msg_rec r;

	if (unlikely(ch->dark))
		goto next;
	r.ts = dir == BT_DIR_OUT ? bt_self.out_ts : 0;
	r.fd = fd;
	r.dir = (uint8_t)dir;
	r.kind = m->kind;
	r.proto = ch->pp ? ch->pp->id : 0;
	r.flags = m->flags;
	if (ch->transport == BT_TR_DGRAM)
		r.flags |= BT_MF_DGRAM;
	r.off = off;
	r.len = len;
	r.status = m->status;
	r.witness = m->witness;
	r.nattr = m->nattr;
	r.attr = m->attr;
	if (peer && peer->family && m->nattr < BT_EV_MAX_ATTR)
		msg_emit_peer(&r, peer);
	else
		msg_emit(&r);
next:
	/* the processor hands the channel over after this message (here,
	 * not in the inlined track(): the hot path stays as it was) */
	if (unlikely(m->next_proto))
		bt_chan_switch(ch, fd, m->next_proto);
}

static void log_lost(struct bt_chan *ch, int fd, int dir)
{
	struct bt_event ev;

	if (unlikely(ch->dark))
		return;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_LOST_SYNC;
	ev.fd = fd;
	ev.dir = (uint8_t)dir;
	ev.proto = ch->pp ? ch->pp->id : 0;
	ev.off = ch->off[dir];
	bt_emit(&ev);
	bt_unread_note('l');
}

/* The processor gave up: the channel carries DATA from now on. */
void bt_msg_lost(struct bt_chan *ch, int fd, int dir)
{
	log_lost(ch, fd, dir);
	if (ch->pp && ch->pp->fini)
		ch->pp->fini(ch->pps);
	ch->pp = NULL;
	ch->lost = 1;
	ch->msg_open[0] = ch->msg_open[1] = 0;
	ch->pending = 0;
}

/* One-shot style processors: bytes in DIR end the other direction's
 * message. */
void bt_msg_turn_ends(struct bt_chan *ch, int fd, int dir)
{
	int other = !dir;

	if (!ch->pp->eof || !ch->msg_open[other])
		return;
	struct bt_msg m;
	bt_msg_init(&m);
	ch->pp->eof(ch->pps, other, &m);
	if (m.kind)
		track(ch, fd, other, 0, &m, NULL);
}

void bt_msg_eof(struct bt_chan *ch, int fd, int dir)
{
	struct bt_msg m;

	if (ch->eof[dir])
		return;
	ch->eof[dir] = 1;
	if (!ch->pp || !ch->pp->eof)
		return;
	bt_msg_init(&m);
	ch->pp->eof(ch->pps, dir, &m);
	if (m.kind && ch->msg_open[dir])
		track(ch, fd, dir, 0, &m, NULL);
	else if (m.kind)
		ch->msg_open[dir] = 0;
}

void bt_msg_ready_changed(struct bt_chan *ch)
{
	io_ready_changed(ch);
}
