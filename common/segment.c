/*
 * segment.c - log segment headers, the block writer and the block reader.
 *
 * LOG SEGMENT FORMAT
 *
 * A host's events are kept in segment files LOGDIR/HOST/<start>-<n>.btl:
 * <start> is the creation time (UTC, YYYYMMDDTHHMMSSZ), <n> a sequence
 * number (six digits or more) that grows through the directory, also
 * across restarts of bp-logd.  A segment is a file header followed by
 * zero or more blocks, back to back.  All fixed-width integers are
 * little-endian.  Checksums are CRC-32C (Castagnoli; crc32c.c).
 *
 * The file header is 128 bytes:
 *
 *     0: Magic "BTLOG\r\n\032" (8 bytes; the CR LF and ^Z catch text-mode
 *        transfers and truncation to 7 bits).
 *     8: Format version (currently 2; 1 has no attribute dictionary
 *        references, and is read too; a newer one is refused).
 *    12: Header size (128).
 *    16: Creation time, the host's monotonic clock, ns.
 *    24: Creation time, CLOCK_REALTIME, ns since the epoch.
 *    32: Host name, 64 bytes, NUL padded.
 *    96: Boot id: the first 16 hex digits of the kernel's boot_id as one
 *        64-bit number (monotonic times of different boots never compare).
 *   104: Writer: 1 = bp-logd, 2 = a tracer's spool.
 *   108: Writer's pid.
 *   112: Segment sequence number <n> (8 bytes).
 *   120: Reserved (0).
 *   124: CRC-32C of bytes 0..123.
 *
 * Each block is a 48-byte block header followed by its payload:
 *
 *     0: Magic 0x314b4c42 ("BLK1" on disk).
 *     4: Payload length in bytes (at most BT_SEG_MAX_PAYLOAD, 4 MiB).
 *     8: ring_id of the stream (random per traced process image; 0 for
 *        bp-logd's own stream, flag BT_BF_LOGD).
 *    16: pid of the process that wrote the stream.
 *    20: Slot (2 bytes): chunk * BT_RING_MAX_SLOTS + slot index.
 *    22: Generation of the slot (2 bytes, informational).
 *    24: Stream offset of the payload's first byte (8 bytes): the slot's
 *        head counter, which never restarts, not even when another thread
 *        takes the slot over.
 *    32: Flags (BT_BF_*: 1 bp-logd's stream, 2 spool, 4 bytes lost before).
 *    36: CRC-32C of the payload.
 *    40: Reserved (0).
 *    44: CRC-32C of header bytes 0..43.
 *
 * The payload is whole records (btrace/event.h): u8 type, varint body
 * length, body.  Blocks of one stream, (host, ring_id, pid, slot), follow
 * each other: next offset == offset + length.
 *
 * READING AND DAMAGE
 *
 * A file with a bad header is not read.  A block is valid when its header
 * checksum matches, its length is within the limit, the whole payload is
 * present and the payload checksum matches.  At an invalid block the
 * reader reports the file and byte offset once, then scans forward byte
 * by byte for the next valid block: a torn tail (bp-logd or the machine
 * died mid-write) ends the file with one warning, a corrupt block costs
 * only itself, garbage between blocks is skipped.  A block whose stream
 * offset lies before the bytes already read for its stream repeats them
 * (bp-logd died between writing and acknowledging): stream readers drop
 * the repeated prefix.  docs/log-format.md has the same layout with a
 * byte-level example.
 *
 * The writer here is write(2)-only through a caller-given function, so the
 * shim's spool can use its unwrapped write.  bp-logd writes blocks itself
 * (pwritev at the known good size, truncating back on failure).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "btrace/segment.h"

uint64_t bt_boot_id_parse(const char *p)
{
	uint64_t v = 0;
	int n = 0;

	for (; p && *p && n < 16; p++) {
		int d;
		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			continue;
		v = v << 4 | (uint64_t)d;
		n++;
	}
	return v;
}

void bt_seg_header_encode(uint8_t *b, const struct bt_seg_header *h)
{
	memset(b, 0, BT_SEG_HDR_SIZE);
	memcpy(b, BT_SEG_MAGIC, 8);
	bt_le32(b + 8, BT_SEG_VERSION);
	bt_le32(b + 12, BT_SEG_HDR_SIZE);
	bt_le64(b + 16, h->created_mono);
	bt_le64(b + 24, h->created_real);
	memcpy(b + 32, h->host, strnlen(h->host, 63));
	bt_le64(b + 96, h->boot_id);
	bt_le32(b + 104, h->writer);
	bt_le32(b + 108, h->writer_pid);
	bt_le64(b + 112, h->seq);
	bt_le32(b + 124, bt_crc32c(0, b, 124));
}

int bt_seg_header_decode(const uint8_t *b, struct bt_seg_header *h)
{
	if (memcmp(b, BT_SEG_MAGIC, 8) != 0)
		return -1;
	if (bt_rd32(b + 124) != bt_crc32c(0, b, 124))
		return -1;
	memset(h, 0, sizeof *h);
	h->version = bt_rd32(b + 8);
	if (h->version < BT_SEG_VERSION_MIN || h->version > BT_SEG_VERSION ||
	    bt_rd32(b + 12) != BT_SEG_HDR_SIZE)
		return -1;
	h->created_mono = bt_rd64(b + 16);
	h->created_real = bt_rd64(b + 24);
	memcpy(h->host, b + 32, 63);
	h->host[63] = 0;
	h->boot_id = bt_rd64(b + 96);
	h->writer = bt_rd32(b + 104);
	h->writer_pid = bt_rd32(b + 108);
	h->seq = bt_rd64(b + 112);
	return 0;
}

void bt_blk_header_encode(uint8_t *b, const struct bt_blk_header *h,
			  const void *payload)
{
	memset(b, 0, BT_BLK_HDR_SIZE);
	bt_le32(b, BT_BLK_MAGIC);
	bt_le32(b + 4, h->len);
	bt_le64(b + 8, h->ring_id);
	bt_le32(b + 16, h->pid);
	bt_le16(b + 20, h->slot);
	bt_le16(b + 22, h->gen);
	bt_le64(b + 24, h->stream_off);
	bt_le32(b + 32, h->flags);
	bt_le32(b + 36, bt_crc32c(0, payload, h->len));
	bt_le32(b + 44, bt_crc32c(0, b, 44));
}

int bt_blk_header_decode(const uint8_t *b, struct bt_blk_header *h,
			 uint32_t *pcrc)
{
	if (bt_rd32(b) != BT_BLK_MAGIC)
		return -1;
	if (bt_rd32(b + 44) != bt_crc32c(0, b, 44))
		return -1;
	h->len = bt_rd32(b + 4);
	if (h->len > BT_SEG_MAX_PAYLOAD)
		return -1;
	h->ring_id = bt_rd64(b + 8);
	h->pid = bt_rd32(b + 16);
	h->slot = bt_rd16(b + 20);
	h->gen = bt_rd16(b + 22);
	h->stream_off = bt_rd64(b + 24);
	h->flags = bt_rd32(b + 32);
	*pcrc = bt_rd32(b + 36);
	return 0;
}

static int write_all(int fd, bt_write_fn wr, const uint8_t *p, size_t n)
{
	while (n) {
		long w = wr(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int bt_seg_write_block(int fd, bt_write_fn wr, const struct bt_blk_header *h,
		       const void *payload)
{
	uint8_t hdr[BT_BLK_HDR_SIZE];
	int r;

	bt_blk_header_encode(hdr, h, payload);
	r = write_all(fd, wr, hdr, sizeof hdr);
	if (r == 0)
		r = write_all(fd, wr, payload, h->len);
	return r;
}

/* ---- reader ----------------------------------------------------------- */

struct bt_seg_reader {
	char           *path;
	const uint8_t  *map;
	int             fd;      /* for bt_seg_pread, or -1 (see keep_fd) */
	size_t          size;
	size_t          pos;
	bt_seg_warn_fn  warn;
	void           *ctx;
	struct bt_seg_header hdr;
};

/*
 * A reader keeps its file open for bt_seg_pread unless descriptors are
 * scarce: FD must leave 256 of the process's limit free (a reconstruction
 * opens every segment of the logs at once, and SQLite and the temporary
 * files need some).  Without it bt_seg_pread copies from the mapping.
 */
static int keep_fd(int fd)
{
	static long lim;
	if (!lim) {
		struct rlimit rl;
		lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		      rl.rlim_cur != RLIM_INFINITY ? (long)rl.rlim_cur : 1024;
	}
	return fd < lim - 256;
}

struct bt_seg_reader *bt_seg_open(const char *path, bt_seg_warn_fn warn,
				  void *ctx, const char **why)
{
	struct bt_seg_reader *r;
	struct stat st;
	int fd, e;

	*why = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*why = strerror(errno);
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		close(fd);
		*why = strerror(e);
		errno = e;
		return NULL;
	}
	if ((size_t)st.st_size < BT_SEG_HDR_SIZE) {
		close(fd);
		*why = bt_seg_why_short;
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof *r);
	if (!r || !(r->path = strdup(path))) {
		free(r);
		close(fd);
		*why = "out of memory";
		errno = ENOMEM;
		return NULL;
	}
	r->size = (size_t)st.st_size;
	r->map = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, fd, 0);
	e = errno;
	if (r->map != MAP_FAILED && keep_fd(fd)) {
		r->fd = fd;
	} else {
		r->fd = -1;
		close(fd);
	}
	if (r->map == MAP_FAILED) {
		free(r->path);
		free(r);
		*why = strerror(e);
		errno = e;
		return NULL;
	}
	madvise((void *)r->map, r->size, MADV_SEQUENTIAL);
	if (bt_seg_header_decode(r->map, &r->hdr) < 0) {
		if (memcmp(r->map, BT_SEG_MAGIC, 8) == 0 &&
		    bt_rd32(r->map + 124) == bt_crc32c(0, r->map, 124) &&
		    bt_rd32(r->map + 8) > BT_SEG_VERSION)
			*why = "segment format version newer than this reader's "
			       "(a newer BorderPatrol wrote it)";
		else
			*why = "bad segment header (wrong magic, version or checksum)";
		munmap((void *)r->map, r->size);
		if (r->fd >= 0)
			close(r->fd);
		free(r->path);
		free(r);
		errno = EINVAL;
		return NULL;
	}
	r->pos = BT_SEG_HDR_SIZE;
	r->warn = warn;
	r->ctx = ctx;
	return r;
}

const char bt_seg_why_short[] =
	"file too short for a segment header (a segment being created, one truncated at its creation, or not a BorderPatrol log)";

uint64_t bt_seg_size(const struct bt_seg_reader *r)
{
	return r->size;
}

const struct bt_seg_header *bt_seg_file_header(const struct bt_seg_reader *r)
{
	return &r->hdr;
}

/* Is there a valid block at OFF?  Fills H and the payload pointer. */
static int block_at(const struct bt_seg_reader *r, size_t off,
		    struct bt_blk_header *h, const char **why)
{
	uint32_t pcrc;

	if (r->size - off < BT_BLK_HDR_SIZE) {
		*why = "truncated block header (torn tail)";
		return 0;
	}
	if (bt_blk_header_decode(r->map + off, h, &pcrc) < 0) {
		*why = "bad block header";
		return 0;
	}
	if (r->size - off - BT_BLK_HDR_SIZE < h->len) {
		*why = "truncated block payload (torn tail)";
		return 0;
	}
	if (bt_crc32c(0, r->map + off + BT_BLK_HDR_SIZE, h->len) != pcrc) {
		*why = "block payload checksum mismatch";
		return 0;
	}
	return 1;
}

int bt_seg_next(struct bt_seg_reader *r, struct bt_blk_header *h,
		const uint8_t **payload, uint64_t *file_off)
{
	const char *why = NULL;
	size_t bad = (size_t)-1;

	while (r->pos < r->size) {
		if (block_at(r, r->pos, h, &why)) {
			*payload = r->map + r->pos + BT_BLK_HDR_SIZE;
			if (file_off)
				*file_off = r->pos;
			r->pos += BT_BLK_HDR_SIZE + h->len;
			return 1;
		}
		if (bad == (size_t)-1) {
			bad = r->pos;
			if (r->warn)
				r->warn(r->ctx, r->path, bad, why);
		}
		/* Scan for the next block magic. */
		const uint8_t *m = NULL;
		size_t from = r->pos + 1;
		while (from + 4 <= r->size) {
			m = memchr(r->map + from, 'B', r->size - from - 3);
			if (!m)
				break;
			if (bt_rd32(m) == BT_BLK_MAGIC)
				break;
			from = (size_t)(m - r->map) + 1;
			m = NULL;
		}
		if (!m) {
			r->pos = r->size;
			break;
		}
		r->pos = (size_t)(m - r->map);
	}
	return 0;
}

void bt_seg_release(struct bt_seg_reader *r)
{
	/* a private, read-only mapping never written: nothing is lost */
	if (r && r->size)
		madvise((void *)r->map, r->size, MADV_DONTNEED);
}

ssize_t bt_seg_pread(const struct bt_seg_reader *r, void *buf, size_t len,
		     uint64_t off)
{
	size_t got = 0;

	if (off > r->size)
		return 0;
	if (r->fd < 0) {
		if (len > r->size - off)
			len = (size_t)(r->size - off);
		memcpy(buf, r->map + off, len);
		return (ssize_t)len;
	}
	while (got < len) {
		ssize_t n = pread(r->fd, (char *)buf + got, len - got,
				  (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

void bt_seg_close(struct bt_seg_reader *r)
{
	if (!r)
		return;
	munmap((void *)r->map, r->size);
	if (r->fd >= 0)
		close(r->fd);
	free(r->path);
	free(r);
}
