/*
 * notes.c - bp-logd's own record stream: ring_id 0, slot 0, the daemon's
 * pid, blocks flagged BT_BF_LOGD.  It carries a BT_EV_TIME at start and
 * every second, and BT_EV_LOGD notes about peers, loss and the disk.
 *
 * Records are buffered and written as one block per flush (every drain
 * tick).  While the disk refuses writes the buffer is kept; notes that do
 * not fit are counted and reported by a BT_LN_NOTES_LOST note later.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "logd.h"

static void put(struct notes *n, const struct bt_event *ev)
{
	size_t w = bt_ev_encode(n->buf + n->len, NOTES_BUF - n->len, ev,
				&n->prev_ts);
	if (w == 0)
		n->lost++;
	else
		n->len += w;
}

void notes_init(struct notes *n)
{
	n->len = 0;
	n->off = 0;
	n->prev_ts = 0;
	n->lost = 0;
	n->pid = (uint32_t)getpid();
	notes_time(n);
}

void notes_time(struct notes *n)
{
	struct bt_event ev;

	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_TIME;
	ev.ts = logd_now_mono();
	ev.realtime = logd_now_real();
	put(n, &ev);
}

void notes_add(struct notes *n, unsigned what, uint32_t pid, int64_t result,
	       const char *fmt, ...)
{
	struct bt_event ev;
	char text[512];
	va_list ap;
	int l;

	va_start(ap, fmt);
	l = vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	if (l < 0)
		l = 0;
	if ((size_t)l >= sizeof text)
		l = sizeof text - 1;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_LOGD;
	ev.ts = logd_now_mono();
	ev.pid = pid;
	ev.flags = what;
	ev.result = result;
	ev.str = text;
	ev.str_len = (uint32_t)l;
	put(n, &ev);
}

int notes_flush(struct notes *n, struct store *s)
{
	struct bt_blk_header h;
	int r;

	if (n->lost) {
		uint64_t lost = n->lost;
		n->lost = 0;
		notes_add(n, BT_LN_NOTES_LOST, n->pid, (int64_t)lost,
			  "%llu notes did not fit the buffer while the disk was failing",
			  (unsigned long long)lost);
		if (n->lost)            /* still no room: count it again */
			n->lost += lost;
	}
	if (n->len == 0)
		return 0;
	memset(&h, 0, sizeof h);
	h.len = (uint32_t)n->len;
	h.ring_id = 0;
	h.pid = n->pid;
	h.stream_off = n->off;
	h.flags = BT_BF_LOGD;
	r = store_append(s, &h, n->buf);
	if (r < 0)
		return r;
	n->off += n->len;
	n->len = 0;
	return 0;
}
