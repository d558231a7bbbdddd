/*
 * iopath.h - what the read family (in.c), the isolation buffer (iso.c),
 * the write family (out.c), the iovec feed (iov.c) and message accounting
 * (msg.c) share; private to those files.  The
 * small helpers on every traced call are static inline here, as they were
 * when the three were one file, so the hot path compiles as before.
 */
#ifndef BT_IOPATH_H
#define BT_IOPATH_H

#include <sys/uio.h>

#include "bt.h"

/* MSG ended (or began) on CH: its MSG record, OFF/LEN its stream bytes,
 * PEER (if any) one more attribute; redacted if need be; then, if MSG
 * names a next processor (next_proto), CH is handed to it (msg.c). */
BT_HIDDEN void bt_msg_log(struct bt_chan *ch, int fd, int dir,
			  const struct bt_msg *m, uint64_t off,
			  uint64_t len, const struct bt_addr *peer);
/* The processor gave up: LOST_SYNC, the channel carries DATA from now on
 * (msg.c). */
BT_HIDDEN void bt_msg_lost(struct bt_chan *ch, int fd, int dir);
/* One-shot style processors: bytes in DIR end the other direction's
 * message (msg.c). */
BT_HIDDEN void bt_msg_turn_ends(struct bt_chan *ch, int fd, int dir);

/* ---- the isolation buffer (iso.c); channel locked ---------------------- */

/* A read was cut at a boundary: asked for ASKED, got GAVE (ISOLATE). */
BT_HIDDEN void bt_iso_log(struct bt_chan *ch, int fd, size_t asked,
			  size_t gave);
/* A read handed over bytes up to offset FROM of IOV, a message end, of the
 * N fresh ones there: keep the rest in CH's buffer and log the cut.  0, or
 * -1 if they cannot be kept (the caller hands them over). */
BT_HIDDEN int bt_iso_keep(struct bt_chan *ch, int fd, const struct iovec *iov,
			  int cnt, size_t from, size_t n);
/* Hand over bytes the shim holds into IOV.  SHORTEN: stop at the first
 * boundary.  PEEK: copy without consuming.  Returns bytes copied. */
BT_HIDDEN size_t bt_iso_serve(struct bt_chan *ch, int fd,
			      const struct iovec *iov, int cnt, int shorten,
			      int peek);

/* MSG_BEGIN (fd dir off) or DATA (fd dir off len). */
static inline void log_simple(struct bt_chan *ch, int type, int fd, int dir,
		       uint64_t off, uint64_t len)
{
	uint64_t v[4] = { bt_zigzag(fd), (uint64_t)(uint8_t)dir, off, len };
	uint64_t ts = dir == BT_DIR_OUT ? bt_self.out_ts : 0;

	if (unlikely(ch->dark))
		return;
	if (type == BT_EV_DATA)
		bt_emit_ints((unsigned)type, ts, 4, v);
	else
		bt_emit_ints3((unsigned)type, ts, v[0], v[1], v[2]);
}

/*
 * N bytes of DIR moved (handed to the application, or written).  MSG, if
 * it has a kind, ends exactly after them.  Logs MSG at message ends (and
 * bt_msg_log hands the channel to the message's next processor if it
 * names one).
 */
static __attribute__((unused)) void track(struct bt_chan *ch, int fd,
		int dir, uint64_t n, const struct bt_msg *m,
		const struct bt_addr *peer)
{
	if (!ch->msg_open[dir]) {
		ch->msg_open[dir] = 1;
		ch->msg_start[dir] = ch->off[dir];
		ch->msg_begun[dir] = 0;
	}
	ch->off[dir] += n;
	if (m && m->kind) {
		if (dir == BT_DIR_IN)
			ch->ended = 1;
		bt_msg_log(ch, fd, dir, m, ch->msg_start[dir],
			ch->off[dir] - ch->msg_start[dir], peer);
		ch->msg_open[dir] = 0;
	}
}

/* End of a call: a message whose first bytes moved but that did not end
 * gets its MSG_BEGIN (the designation switches there). */
static inline void track_end(struct bt_chan *ch, int fd, int dir)
{
	if (ch->msg_open[dir] && !ch->msg_begun[dir] &&
	    ch->off[dir] > ch->msg_start[dir]) {
		log_simple(ch, BT_EV_MSG_BEGIN, fd, dir, ch->msg_start[dir], 0);
		ch->msg_begun[dir] = 1;
	}
}

static inline void data(struct bt_chan *ch, int fd, int dir, uint64_t n)
{
	if (!n)
		return;
	log_simple(ch, BT_EV_DATA, fd, dir, ch->off[dir], n);
	ch->off[dir] += n;
}

static inline void turn(struct bt_chan *ch, int fd, int dir)
{
	if (ch->pp && unlikely(ch->pp->flags & BT_PPF_TURN_ENDS))
		bt_msg_turn_ends(ch, fd, dir);
}

static inline void io_ready_changed(struct bt_chan *ch)
{
	int want = ch->rd < ch->wr || ch->owed;
	if (want && !ch->in_ready_list)
		bt_ready_add(ch);
	else if (!want && ch->in_ready_list)
		bt_ready_del(ch);
}

/* Lock CH if it is still the channel of generation GEN (not recycled). */
static inline int lock_gen(struct bt_chan *ch, uint32_t gen)
{
	bt_mutex_lock(&ch->mu);
	if (ch->gen != gen) {
		bt_mutex_unlock(&ch->mu);
		return -1;
	}
	return 0;
}

/* Lock CH and check FD still refers to it.  0 ok. */
static inline int lock_chan(struct bt_chan *ch, int fd)
{
	bt_mutex_lock(&ch->mu);
	if (bt_fd_get(fd) != (uintptr_t)ch) {
		bt_mutex_unlock(&ch->mu);
		return -1;
	}
	return 0;
}

#endif /* BT_IOPATH_H */
