/*
 * iov.c - the application's iovecs, once: skip-and-copy both ways, a
 * datagram gathered whole.  bt_iov_feed, which hands the bytes a stream
 * call moved to the channel's processor for both directions, is inline in
 * iov.h: the read and the write paths compile it in, as before.
 */
#include "config.h"

#include <string.h>
#include <sys/uio.h>

#include "bt.h"
#include "iov.h"

size_t bt_iov_put(const struct iovec *iov, int cnt, size_t skip,
		  const void *src, size_t n)
{
	const uint8_t *s = src;
	size_t done = 0;

	for (int i = 0; i < cnt && done < n; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		size_t k = iov[i].iov_len - skip;
		if (k > n - done)
			k = n - done;
		memcpy((uint8_t *)iov[i].iov_base + skip, s + done, k);
		done += k;
		skip = 0;
	}
	return done;
}

size_t bt_iov_get(void *dst, const struct iovec *iov, int cnt, size_t skip,
		  size_t n)
{
	uint8_t *d = dst;
	size_t done = 0;

	for (int i = 0; i < cnt && done < n; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		size_t k = iov[i].iov_len - skip;
		if (k > n - done)
			k = n - done;
		memcpy(d + done, (const uint8_t *)iov[i].iov_base + skip, k);
		done += k;
		skip = 0;
	}
	return done;
}

int bt_iov_window(struct iovec *out, int max, const struct iovec *iov,
		  int cnt, size_t skip, size_t *bytes)
{
	int k = 0;

	*bytes = 0;
	for (int i = 0; i < cnt && k < max; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		out[k].iov_base = (uint8_t *)iov[i].iov_base + skip;
		out[k].iov_len = iov[i].iov_len - skip;
		*bytes += out[k].iov_len;
		skip = 0;
		k++;
	}
	return k;
}

const uint8_t *bt_iov_gather(const struct iovec *iov, int cnt, size_t n,
			     uint8_t *small, size_t cap, size_t *len)
{
	if (cnt == 1 || iov[0].iov_len >= n) {
		*len = n;
		return iov[0].iov_base;
	}
	*len = n < cap ? n : cap;
	bt_iov_get(small, iov, cnt, 0, *len);
	return small;
}
