/*
 * iov.h - the application's iovecs, once (iov.c): copying into and out of
 * them from an offset, a datagram gathered whole, and the one feed of
 * bytes moved on a stream to a channel's processor, shared by the read
 * (in.c) and the write (out.c) families.  Private to in.c, iso.c, out.c
 * and iov.c.
 */
#ifndef BT_IOV_H
#define BT_IOV_H

#include <sys/uio.h>

#include "bt.h"
#include "iopath.h"

/* Bytes the CNT iovecs IOV can hold. */
static inline size_t bt_iov_total(const struct iovec *iov, int cnt)
{
	size_t t = 0;
	for (int i = 0; i < cnt; i++)
		t += iov[i].iov_len;
	return t;
}

/* Copy N bytes of SRC into IOV, after its first SKIP bytes (as far as IOV
 * holds); returns bytes copied. */
BT_HIDDEN size_t bt_iov_put(const struct iovec *iov, int cnt, size_t skip,
			    const void *src, size_t n);
/* Copy N bytes of IOV, after its first SKIP bytes, into DST (as far as IOV
 * holds); returns bytes copied. */
BT_HIDDEN size_t bt_iov_get(void *dst, const struct iovec *iov, int cnt,
			    size_t skip, size_t n);
/* The part of IOV after its first SKIP bytes, as at most MAX iovecs into
 * OUT; *BYTES their total.  Returns the count. */
BT_HIDDEN int bt_iov_window(struct iovec *out, int max, const struct iovec *iov,
			    int cnt, size_t skip, size_t *bytes);
/* A datagram of N bytes in IOV, whole: IOV's first buffer if it holds it,
 * else at most CAP bytes gathered into SMALL.  *LEN the bytes returned. */
BT_HIDDEN const uint8_t *bt_iov_gather(const struct iovec *iov, int cnt,
				       size_t n, uint8_t *small, size_t cap,
				       size_t *len);
/*
 * Bytes FROM..N of IOV moved on CH (through FD) in direction DIR, on a
 * stream: fed to the processor in order, accounted (track) and logged at
 * message ends.  STOP: return at the first message end before N (nothing
 * more fed; the caller keeps or resumes from the offset returned).
 * Otherwise all of them, and a message left open gets its MSG_BEGIN.
 * Returns the offset in IOV fed up to.  Channel locked.
 */
static inline __attribute__((always_inline)) size_t
bt_iov_feed(struct bt_chan *ch, int fd, int dir, const struct iovec *iov,
	    int cnt, size_t from, size_t n, int stop)
{
	size_t done = 0;

	for (int i = 0; i < cnt && done < n; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t len = iov[i].iov_len < n - done ? iov[i].iov_len
						       : n - done;
		size_t pos = 0;

		if (unlikely(from > done)) {      /* resuming inside IOV */
			if (from >= done + len) {
				done += len;
				continue;
			}
			pos = from - done;
		}
		while (pos < len) {
			struct bt_msg m;
			long k;

			if (!ch->pp) {
				data(ch, fd, dir, (n - done) - pos);
				return n;
			}
			bt_msg_init(&m);
			k = ch->pp->feed(ch->pps, dir, p + pos, len - pos, &m);
			if (k <= 0 || (size_t)k > len - pos) {
				bt_msg_lost(ch, fd, dir);
				continue;
			}
			track(ch, fd, dir, (uint64_t)k, &m, NULL);
			pos += (size_t)k;
			if (m.kind && stop && done + pos < n)
				return done + pos;
		}
		done += len;
	}
	track_end(ch, fd, dir);
	return n;
}

#endif /* BT_IOV_H */
