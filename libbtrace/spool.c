/*
 * spool.c - without bp-logd, a thread writes its slot to the spool
 * directory itself (docs/log-format.md).
 */
#include "config.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "btrace/segment.h"
#include "bt.h"
#include "logpath.h"

int bt_spool_fd = -1;
bt_mutex_t bt_spool_mu;   /* the light mutex (core.h): taken at every drain */

/* ---- spool ------------------------------------------------------------ */

static long spool_write_fn(int fd, const void *buf, size_t len)
{
	return REAL(write)(fd, buf, len);
}

/* The boot id bp-logd puts in its headers, so spool files join its
 * segments as one host (read with the real calls: nothing to trace). */
static uint64_t spool_boot_id(void)
{
	char b[64];
	ssize_t n;
	int fd = REAL(open)("/proc/sys/kernel/random/boot_id",
			    O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = REAL(read)(fd, b, sizeof b - 1);
	REAL(close)(fd);
	b[n > 0 ? n : 0] = 0;
	return bt_boot_id_parse(b);
}

/*
 * May we spool into DIR?  Each of its directories must belong to us or to
 * root and be writable by nobody else, unless it is root's and sticky
 * (/tmp): otherwise another user could remove our spool files or put
 * something in their place.
 */
static int spool_dir_safe(char *dir)
{
	uid_t me = geteuid();
	struct stat st;

	for (char *c = dir + 1;; c++) {
		char save = *c;
		if (save && save != '/')
			continue;
		*c = 0;
		int bad = stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
			  (st.st_uid != me && st.st_uid != 0) ||
			  ((st.st_mode & 022) &&
			   !(st.st_uid == 0 && (st.st_mode & S_ISVTX)));
		*c = save;
		if (bad)
			return 0;
		if (!save)
			return 1;
	}
}

/* Create BASE/HOST (mkdir -p, private) and open this process's file. */
static int spool_create(const char *base)
{
	char dir[PATH_MAX], path[PATH_MAX + 64], msg[PATH_MAX + 160];

	if (snprintf(dir, sizeof dir, "%s/%s", base, bt_proc.host) >=
	    (int)sizeof dir)
		return -1;
	for (char *p = dir + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(dir, 0700);
			*p = '/';
		}
	mkdir(dir, 0700);
	if (!spool_dir_safe(dir)) {
		snprintf(msg, sizeof msg,
			 "libbtrace: not spooling into %s: a directory of it belongs to another user or others may write it\n",
			 dir);
		bt_link_warn_once(2, msg);
		return -1;
	}
	snprintf(path, sizeof path, "%s/%d-%016llx.btl", dir, (int)bt_proc.pid,
		 (unsigned long long)bt_proc.ring_id);
	return REAL(open)(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
				O_NOFOLLOW, 0600);
}

/* The spool file made (or opened again) with its segment header: its
 * descriptor, or -1. */
static int spool_try_open(void)
{
	uint8_t hdr[BT_SEG_HDR_SIZE];
	struct bt_seg_header h;
	int fd;

	fd = spool_create(bt_conf.spool_dir);
	if (fd < 0) {
		/* A server that dropped privileges after start-up cannot write
		 * where its root parent chose: its own user's spool instead. */
		char alt[64];
		snprintf(alt, sizeof alt, "/tmp/btrace-%u/spool",
			 (unsigned)geteuid());
		if (strcmp(alt, bt_conf.spool_dir) != 0)
			fd = spool_create(alt);
	}
	if (fd < 0)
		return -1;
	if (lseek(fd, 0, SEEK_END) == 0) {
		struct timespec rt;
		memset(&h, 0, sizeof h);
		h.created_mono = bt_now();
		clock_gettime(CLOCK_REALTIME, &rt);
		h.created_real = (uint64_t)rt.tv_sec * 1000000000ull +
				 (uint64_t)rt.tv_nsec;
		snprintf(h.host, sizeof h.host, "%s", bt_proc.host);
		h.boot_id = spool_boot_id();
		h.writer = BT_SEG_BY_SPOOL;
		h.writer_pid = (uint32_t)bt_proc.pid;
		bt_seg_header_encode(hdr, &h);
		if (spool_write_fn(fd, hdr, sizeof hdr) != (long)sizeof hdr) {
			REAL(close)(fd);
			return -1;
		}
	}
	return fd;
}

/*
 * Open the spool file (bt_spool_mu held).  A failure is not tried again
 * for a second: a full ring calls here at every record, and a spool
 * directory that cannot be used (another user's, say) cost some 25
 * system calls each time (mkdir and stat of every directory of the
 * path), which made a traced program with no bp-logd many times slower;
 * what the ring cannot hold meanwhile is dropped and counted as before.
 */
static uint64_t spool_retry_at;

static int spool_open(void)
{
	uint64_t now;
	int fd;

	if (bt_spool_fd >= 0)
		return 0;
	now = bt_now();
	if (spool_retry_at && now < spool_retry_at)
		return -1;
	fd = spool_try_open();
	spool_retry_at = fd < 0 ? now + 1000000000ull : 0;
	if (fd < 0)
		return -1;
	bt_spool_fd = bt_own_fd_hide(fd);
	bt_own_register(&bt_spool_fd);
	return 0;
}

/*
 * One block, header H and its payload P: encoded as bt_seg_write_block
 * would write it, but in one writev (one system call, where two writes
 * took two).  A short write (a full disk) goes on from where it stopped,
 * with write(2) as bt_seg_write_block would.  0 or -errno.
 */
static int spool_write_block(int fd, const struct bt_blk_header *h,
			     const uint8_t *p)
{
	uint8_t hdr[BT_BLK_HDR_SIZE];
	struct iovec iov[2];
	size_t left = BT_BLK_HDR_SIZE + (size_t)h->len, done;
	ssize_t w;

	bt_blk_header_encode(hdr, h, p);
	iov[0].iov_base = hdr;
	iov[0].iov_len = sizeof hdr;
	iov[1].iov_base = (void *)p;
	iov[1].iov_len = h->len;
	do
		w = REAL(writev)(fd, iov, 2);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return -errno;
	if ((size_t)w == left)
		return 0;
	/* the rest: what is left of the header, then of the payload */
	done = (size_t)w;
	while (done < left) {
		const uint8_t *b = done < sizeof hdr ? hdr + done
						     : p + (done - sizeof hdr);
		size_t n = done < sizeof hdr ? sizeof hdr - done : left - done;
		w = spool_write_fn(fd, b, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		done += (size_t)w;
	}
	return 0;
}

/* Write slot S's undrained bytes to the spool and advance its tail. */
int bt_spool_drain(struct bt_chunk *c, unsigned i)
{
	struct bt_slot_hdr *sh = &c->hdr->slot[i];
	uint8_t *data = BT_SLOT_DATA(c->hdr, c->slot_size, i);
	uint64_t h, t;
	int rc = 0;

	bt_mutex_lock(&bt_spool_mu);
	if (spool_open() < 0) {
		bt_mutex_unlock(&bt_spool_mu);
		return -1;
	}
	h = __atomic_load_n(&sh->head, __ATOMIC_ACQUIRE);
	t = __atomic_load_n(&sh->tail, __ATOMIC_ACQUIRE);
	while (t < h && rc == 0) {
		uint64_t pos = t & (c->slot_size - 1);
		uint64_t n = h - t;
		struct bt_blk_header bh;

		if (n > c->slot_size - pos)
			n = c->slot_size - pos;
		memset(&bh, 0, sizeof bh);
		bh.len = (uint32_t)n;
		bh.ring_id = bt_proc.ring_id;
		bh.pid = (uint32_t)bt_proc.pid;
		bh.slot = (uint16_t)BT_STREAM_SLOT(c->index, i);
		bh.gen = (uint16_t)sh->gen;
		bh.stream_off = t;
		bh.flags = BT_BF_SPOOL;
		rc = spool_write_block(bt_spool_fd, &bh, data + pos);
		if (rc == 0)
			t += n;
	}
	if (t > __atomic_load_n(&sh->tail, __ATOMIC_ACQUIRE))
		__atomic_store_n(&sh->tail, t, __ATOMIC_RELEASE);
	bt_mutex_unlock(&bt_spool_mu);
	return rc == 0 ? 0 : -1;
}
