/*
 * store.c - the segment files of one host directory: DIR/HOST/<start>-<n>.btl
 *
 * <start> is the segment's creation time (UTC, YYYYMMDDTHHMMSSZ) and <n> a
 * sequence number, six digits or more, that increases through the whole
 * directory (a restarted bp-logd continues after the highest one present),
 * so sorting by <n> gives the order segments were written in.
 *
 * Every block is written at the file's known good size with pwritev; if a
 * write fails (ENOSPC, EIO, ...) the file is truncated back to that size,
 * so a failed block never counts and a retry writes it again whole.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "logd.h"

struct store {
	char     dir[PATH_MAX];
	char     path[PATH_MAX];
	char     host[64];
	int      dfd;
	int      fd;
	uint64_t off;        /* good size of the current segment */
	uint64_t seq;        /* number of the current segment */
	uint64_t max_size;
	uint64_t bytes;      /* written since start (headers included) */
	uint64_t boot_id;
};

static char cause_buf[PATH_MAX + 128];

static uint64_t read_boot_id(void)
{
	char b[64];
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	if (!f)
		return 0;
	if (!fgets(b, sizeof b, f))
		b[0] = 0;
	fclose(f);
	return bt_boot_id_parse(b);
}

/* mkdir DIR with MODE unless it exists as a directory. */
static int make_dir(const char *d, mode_t mode)
{
	struct stat st;

	if (mkdir(d, mode) == 0)
		return 0;
	if (errno != EEXIST)
		return -errno;
	if (stat(d, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* Highest <n> of "*-<n>.btl" in DFD. */
static uint64_t highest_seq(int dfd)
{
	uint64_t best = 0;
	int fd = dup(dfd);
	DIR *d;
	struct dirent *e;

	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		const char *dash;
		char *end;

		if (l < 5 || strcmp(e->d_name + l - 4, BT_SEG_SUFFIX) != 0)
			continue;
		dash = strrchr(e->d_name, '-');
		if (!dash)
			continue;
		unsigned long long n = strtoull(dash + 1, &end, 10);
		if (end == e->d_name + l - 4 && n > best)
			best = n;
	}
	closedir(d);
	return best;
}

static int write_at(int fd, const struct iovec *iov0, int cnt, uint64_t off)
{
	struct iovec iov[2];
	size_t total = 0;

	memcpy(iov, iov0, sizeof iov[0] * (size_t)cnt);
	for (int i = 0; i < cnt; i++)
		total += iov[i].iov_len;
	while (total) {
		ssize_t w = pwritev(fd, iov, cnt, (off_t)off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		total -= (size_t)w;
		off += (uint64_t)w;
		while (cnt && (size_t)w >= iov[0].iov_len) {
			w -= (ssize_t)iov[0].iov_len;
			iov[0] = iov[1];
			cnt--;
		}
		if (cnt) {
			iov[0].iov_base = (uint8_t *)iov[0].iov_base + w;
			iov[0].iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* Create segment number SEQ and write its header.  0 or -errno. */
static int new_segment(struct store *s, uint64_t seq)
{
	uint8_t hdr[BT_SEG_HDR_SIZE];
	struct bt_seg_header h;
	struct iovec iov;
	char name[64], path[PATH_MAX];
	time_t now = time(NULL);
	struct tm tm;
	int fd, r;

	gmtime_r(&now, &tm);
	snprintf(name, sizeof name, "%04d%02d%02dT%02d%02d%02dZ-%06llu%s",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (unsigned long long)seq, BT_SEG_SUFFIX);
	if ((size_t)snprintf(path, sizeof path, "%s/%s", s->dir, name) >=
	    sizeof path)
		return -ENAMETOOLONG;
	fd = openat(s->dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	memset(&h, 0, sizeof h);
	h.version = BT_SEG_VERSION;
	h.created_mono = logd_now_mono();
	h.created_real = logd_now_real();
	memcpy(h.host, s->host, sizeof h.host);
	h.boot_id = s->boot_id;
	h.writer = BT_SEG_BY_LOGD;
	h.writer_pid = (uint32_t)getpid();
	h.seq = seq;
	bt_seg_header_encode(hdr, &h);
	iov.iov_base = hdr;
	iov.iov_len = sizeof hdr;
	r = write_at(fd, &iov, 1, 0);
	if (r < 0) {
		close(fd);
		unlinkat(s->dfd, name, 0);
		return r;
	}
	if (s->fd >= 0)
		close(s->fd);
	s->fd = fd;
	s->off = BT_SEG_HDR_SIZE;
	s->seq = seq;
	s->bytes += BT_SEG_HDR_SIZE;
	memcpy(s->path, path, sizeof path);
	return 0;
}

int store_open(struct store **sp, const char *dir, const char *host,
	       uint64_t max_size, const char **cause)
{
	struct store *s;
	int r;

	*cause = NULL;
	s = calloc(1, sizeof *s);
	if (!s) {
		*cause = "out of memory";
		return -ENOMEM;
	}
	s->fd = -1;
	s->max_size = max_size;
	s->boot_id = read_boot_id();
	snprintf(s->host, sizeof s->host, "%s", host);
	if ((r = make_dir(dir, 0700)) < 0) {
		snprintf(cause_buf, sizeof cause_buf,
			 "cannot create log directory %s: %s", dir, strerror(-r));
		goto fail;
	}
	if ((size_t)snprintf(s->dir, sizeof s->dir, "%s/%s", dir, host) >=
	    sizeof s->dir) {
		r = -ENAMETOOLONG;
		snprintf(cause_buf, sizeof cause_buf, "log directory name too long");
		goto fail;
	}
	if ((r = make_dir(s->dir, 0700)) < 0) {
		snprintf(cause_buf, sizeof cause_buf,
			 "cannot create host directory %s: %s", s->dir,
			 strerror(-r));
		goto fail;
	}
	s->dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dfd < 0) {
		r = -errno;
		snprintf(cause_buf, sizeof cause_buf, "cannot open %s: %s",
			 s->dir, strerror(errno));
		goto fail;
	}
	r = new_segment(s, highest_seq(s->dfd) + 1);
	if (r < 0) {
		snprintf(cause_buf, sizeof cause_buf,
			 "cannot create a segment in %s: %s (check free space and permissions)",
			 s->dir, strerror(-r));
		close(s->dfd);
		goto fail;
	}
	*sp = s;
	return 0;
fail:
	*cause = cause_buf;
	free(s);
	return r;
}

int store_sync(struct store *s)
{
	int r = 0;

	if (fdatasync(s->fd) < 0)
		r = -errno;
	if (fsync(s->dfd) < 0 && r == 0)
		r = -errno;
	return r;
}

int store_rotate(struct store *s)
{
	int r;

	if (fdatasync(s->fd) < 0)
		return -errno;
	r = new_segment(s, s->seq + 1);
	if (r == 0)
		fsync(s->dfd);
	return r;
}

int store_append(struct store *s, const struct bt_blk_header *h,
		 const void *payload)
{
	uint8_t hdr[BT_BLK_HDR_SIZE];
	struct iovec iov[2];
	uint64_t blen = BT_BLK_HDR_SIZE + (uint64_t)h->len;
	int r;

	if (s->off > BT_SEG_HDR_SIZE && s->off + blen > s->max_size) {
		r = store_rotate(s);
		if (r < 0)
			log_debug("rotation of %s failed (%s); still writing it",
				  s->path, strerror(-r));
	}
	bt_blk_header_encode(hdr, h, payload);
	iov[0].iov_base = hdr;
	iov[0].iov_len = sizeof hdr;
	iov[1].iov_base = (void *)payload;
	iov[1].iov_len = h->len;
	r = write_at(s->fd, iov, 2, s->off);
	if (r < 0) {
		/* Nothing of a failed block may remain: a reader would see a
		 * torn block, and a retry must start at the same offset. */
		if (ftruncate(s->fd, (off_t)s->off) < 0)
			log_debug("truncating %s back to %llu: %s", s->path,
				  (unsigned long long)s->off, strerror(errno));
		return r;
	}
	s->off += blen;
	s->bytes += blen;
	return 0;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	if (s->fd >= 0) {
		if (fdatasync(s->fd) < 0)
			log_warn("fsync %s: %s", s->path, strerror(errno));
		close(s->fd);
	}
	fsync(s->dfd);
	close(s->dfd);
	free(s);
}

const char *store_path(const struct store *s) { return s->path; }
const char *store_dir(const struct store *s) { return s->dir; }
uint64_t store_bytes(const struct store *s) { return s->bytes; }
uint64_t store_seg_size(const struct store *s) { return s->off; }
