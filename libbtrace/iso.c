/*
 * iso.c - the isolation buffer (paper section 5.2; docs/events.md, docs/
 * libbtrace.md "Event isolation"): input the shim read from the kernel
 * past a message boundary is kept here (bt_iso_keep), scanned by the
 * processor and handed over by later reads up to one boundary at a time
 * (bt_iso_serve).  The read calls are in in.c.  Channel locked throughout.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "bt.h"
#include "iov.h"

void bt_iso_log(struct bt_chan *ch, int fd, size_t asked, size_t gave)
{
	struct bt_event ev;

	if (unlikely(ch->dark))
		return;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_ISOLATE;
	ev.fd = fd;
	ev.off = ch->off[BT_DIR_IN];
	ev.len = asked;
	ev.result = (int64_t)gave;
	bt_emit(&ev);
}

/* Append N bytes at offset FROM of the iovec data to the channel buffer. */
static int stash(struct bt_chan *ch, const struct iovec *iov, int cnt,
		 size_t from, size_t n)
{
	if (ch->rd && ch->rd == ch->wr)
		ch->rd = ch->wr = 0;
	if (ch->wr + n > ch->cap) {
		if (ch->rd && !ch->pending) {  /* attribute pointers into buf */
			memmove(ch->buf, ch->buf + ch->rd, ch->wr - ch->rd);
			ch->wr -= ch->rd;
			ch->rd = 0;
		}
		if (ch->wr + n > ch->cap) {
			size_t ncap = ch->cap ? ch->cap : 4096;
			uint8_t *nb;
			while (ncap < ch->wr + n)
				ncap *= 2;
			if (ncap > UINT32_MAX || ch->pending)
				return -1;
			nb = realloc(ch->buf, ncap);
			if (!nb)
				return -1;
			ch->buf = nb;
			ch->cap = (uint32_t)ncap;
		}
	}
	ch->wr += (uint32_t)bt_iov_get(ch->buf + ch->wr, iov, cnt, from, n);
	return 0;
}

int bt_iso_keep(struct bt_chan *ch, int fd, const struct iovec *iov, int cnt,
		size_t from, size_t n)
{
	if (stash(ch, iov, cnt, from, n - from) < 0)
		return -1;
	bt_iso_log(ch, fd, bt_iov_total(iov, cnt), from);
	return 0;
}

/*
 * Feed the processor from the buffer until it reports a boundary or has
 * seen everything held.
 */
static void scan_buffer(struct bt_chan *ch, int fd)
{
	while (ch->pp && !ch->pending && ch->scanned < ch->wr - ch->rd) {
		struct bt_msg m;
		long r;
		bt_msg_init(&m);
		r = ch->pp->feed(ch->pps, BT_DIR_IN,
				 ch->buf + ch->rd + ch->scanned,
				 ch->wr - ch->rd - ch->scanned, &m);
		if (r <= 0 || (size_t)r > ch->wr - ch->rd - ch->scanned) {
			bt_msg_lost(ch, fd, BT_DIR_IN);
			return;
		}
		ch->scanned += (uint32_t)r;
		if (m.kind) {
			ch->pending = 1;
			ch->boundary = ch->scanned;
			ch->pmsg = m;
		}
	}
}

size_t bt_iso_serve(struct bt_chan *ch, int fd, const struct iovec *iov,
		    int cnt, int shorten, int peek)
{
	size_t want = bt_iov_total(iov, cnt), done = 0;

	if (peek) {
		/* Copy what the application may see without consuming. */
		scan_buffer(ch, fd);
		size_t avail = ch->wr - ch->rd;
		if (shorten && ch->pp && ch->pending)
			avail = ch->boundary;
		if (avail > want)
			avail = want;
		return bt_iov_put(iov, cnt, 0, ch->buf + ch->rd, avail);
	}
	while (done < want && ch->rd < ch->wr) {
		size_t avail, k;
		const struct bt_msg *end = NULL;

		scan_buffer(ch, fd);
		if (ch->pp && ch->pending)
			avail = ch->boundary;
		else if (ch->pp)
			avail = ch->scanned;
		else
			avail = ch->wr - ch->rd;
		if (!avail)
			break;
		k = avail < want - done ? avail : want - done;
		bt_iov_put(iov, cnt, done, ch->buf + ch->rd, k);
		if (ch->pp && ch->pending && k == ch->boundary)
			end = &ch->pmsg;
		if (ch->pp)
			track(ch, fd, BT_DIR_IN, k, end, NULL);
		else
			data(ch, fd, BT_DIR_IN, k);
		ch->rd += (uint32_t)k;
		if (ch->pp) {
			ch->scanned -= (uint32_t)k;
			if (ch->pending) {
				ch->boundary -= (uint32_t)k;
				if (end)
					ch->pending = 0;
			}
		} else {
			ch->scanned = 0;
		}
		done += k;
		if (end && shorten)
			break;
	}
	if (ch->rd == ch->wr)
		ch->rd = ch->wr = ch->scanned = 0;
	if (ch->pp)
		track_end(ch, fd, BT_DIR_IN);
	return done;
}
