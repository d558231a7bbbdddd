/*
 * btrace/segment.h - log segment files (logs/<host>/<start>-<n>.btl).
 *
 * bp-logd and the shim's spool writer produce them; bp-reconstruct reads
 * them.  The format (all fixed-width integers little-endian):
 *
 *   File header, 128 bytes:
 *     0   u8[8]  magic "BTLOG\r\n\032"
 *     8   u32    version (2; readers take 1 and 2)
 *     12  u32    header size (128)
 *     16  u64    created, monotonic ns of the host
 *     24  u64    created, CLOCK_REALTIME ns
 *     32  char[64] host name, NUL padded
 *     96  u64    boot id (the first 16 hex digits of
 *                 /proc/sys/kernel/random/boot_id read as one number)
 *     104 u32    writer: 1 = bp-logd, 2 = spool
 *     108 u32    writer pid
 *     112 u64    segment sequence number within the directory
 *     120 u32    reserved (0)
 *     124 u32    crc32c of bytes 0..123
 *
 *   Blocks, each:
 *     0   u32    magic 0x314b4c42 ("BLK1")
 *     4   u32    payload length (<= BT_SEG_MAX_PAYLOAD)
 *     8   u64    ring_id       \
 *     16  u32    pid            | stream identity
 *     20  u16    slot           |  (chunk * BT_RING_MAX_SLOTS + slot)
 *     22  u16    gen           /
 *     24  u64    stream offset of the payload's first byte (the slot's
 *                 head counter); lets a reader order, join and de-duplicate
 *     32  u32    flags (BT_BF_*)
 *     36  u32    crc32c of the payload
 *     40  u32    reserved (0)
 *     44  u32    crc32c of header bytes 0..43
 *     48  payload: whole records (btrace/event.h)
 *
 * A block is valid when both checksums match.  A reader that meets an
 * invalid or short block reports the file and offset, then scans forward
 * byte by byte for the next valid block header (torn tail, corruption).
 * Payloads always start and end at record boundaries.  Stream offsets of a
 * stream's blocks increase; an overlap (the same bytes written twice when
 * bp-logd died between writing and acknowledging) is dropped by the reader.
 */
#ifndef BTRACE_SEGMENT_H
#define BTRACE_SEGMENT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define BT_SEG_MAGIC        "BTLOG\r\n\032"
/* 2: records may refer to the stream's attribute dictionary (btrace/event.h);
 * a version 1 segment never does, so it is read as it always was. */
#define BT_SEG_VERSION      2u
#define BT_SEG_VERSION_MIN  1u
#define BT_SEG_HDR_SIZE     128u
#define BT_BLK_MAGIC        0x314b4c42u
#define BT_BLK_HDR_SIZE     48u
#define BT_SEG_MAX_PAYLOAD  (4u << 20)
#define BT_SEG_SUFFIX       ".btl"

/* Block flags */
#define BT_BF_LOGD     0x1u  /* bp-logd's own stream (ring_id 0) */
#define BT_BF_SPOOL    0x2u  /* written by a tracer into the spool */
#define BT_BF_GAP      0x4u  /* bytes before this block were lost */

enum bt_seg_writer_kind { BT_SEG_BY_LOGD = 1, BT_SEG_BY_SPOOL = 2 };

struct bt_seg_header {
	uint32_t version;
	uint64_t created_mono, created_real;
	char     host[64];
	uint64_t boot_id;
	uint32_t writer, writer_pid;
	uint64_t seq;
};

struct bt_blk_header {
	uint32_t len;
	uint64_t ring_id;
	uint32_t pid;
	uint16_t slot, gen;
	uint64_t stream_off;
	uint32_t flags;
};

/* The boot id of a segment header from the text of
 * /proc/sys/kernel/random/boot_id: its first 16 hex digits as one number
 * (0 if none).  Every writer (bp-logd, the shim's spool) uses it, so a
 * reader takes their files for the same host. */
uint64_t bt_boot_id_parse(const char *text);

/* crc32c (Castagnoli); used by writers and readers. */
uint32_t bt_crc32c(uint32_t crc, const void *buf, size_t len);

/* Fixed-width little-endian helpers */
static inline void bt_le16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* one store each (the loops below are not merged into one by the compiler) */
static inline void bt_le32(uint8_t *p, uint32_t v) { __builtin_memcpy(p, &v, 4); }
static inline void bt_le64(uint8_t *p, uint64_t v) { __builtin_memcpy(p, &v, 8); }
#else
static inline void bt_le32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static inline void bt_le64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
#endif
static inline uint16_t bt_rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t bt_rd32(const uint8_t *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = v << 8 | p[i]; return v; }
static inline uint64_t bt_rd64(const uint8_t *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = v << 8 | p[i]; return v; }

/* Encode a file header / block header into BUF (BT_SEG_HDR_SIZE or
 * BT_BLK_HDR_SIZE bytes); the block header's payload crc is computed from
 * PAYLOAD. */
void bt_seg_header_encode(uint8_t *buf, const struct bt_seg_header *h);
void bt_blk_header_encode(uint8_t *buf, const struct bt_blk_header *h,
			  const void *payload);

/* Decode and verify; return 0 or -1 (bad magic, version or checksum). */
int bt_seg_header_decode(const uint8_t *buf, struct bt_seg_header *h);
/* Block header only (payload crc returned in *PCRC for later check). */
int bt_blk_header_decode(const uint8_t *buf, struct bt_blk_header *h,
			 uint32_t *pcrc);

/*
 * Segment writer: appends blocks to a file, async-signal-safe enough for
 * the shim's spool (plain write(2) calls through a caller-given function so
 * the shim can use its real, unwrapped write).
 */
typedef long (*bt_write_fn)(int fd, const void *buf, size_t len);
/* Write header+payload as one block to FD; returns 0 or -errno. */
int bt_seg_write_block(int fd, bt_write_fn wr, const struct bt_blk_header *h,
		       const void *payload);

/*
 * Segment reader.  bt_seg_open maps or reads the file; bt_seg_next returns
 * the next valid block, skipping damage.  Damage is reported through the
 * warn callback with the file name, the byte offset and a reason, once per
 * damaged run.
 */
struct bt_seg_reader;
typedef void (*bt_seg_warn_fn)(void *ctx, const char *path, uint64_t off,
			       const char *reason);

/* Returns NULL and sets errno on failure; *WHY gets a one-line reason. */
struct bt_seg_reader *bt_seg_open(const char *path, bt_seg_warn_fn warn,
				  void *ctx, const char **why);
const struct bt_seg_header *bt_seg_file_header(const struct bt_seg_reader *r);
/* The bytes it maps: the file's length when it was opened (bt_seg_next
 * reads no further, however long the file is now). */
uint64_t bt_seg_size(const struct bt_seg_reader *r);
/* *WHY of bt_seg_open for a file shorter than a segment header (one
 * being created, or truncated at its creation). */
extern const char bt_seg_why_short[];
/* 1 = block returned, 0 = end.  PAYLOAD points into the mapped file and
 * stays valid until bt_seg_close (bp-reconstruct indexes all blocks first
 * and reads them again later, in causal order, with bt_seg_pread). */
int  bt_seg_next(struct bt_seg_reader *r, struct bt_blk_header *h,
		 const uint8_t **payload, uint64_t *file_off);
void bt_seg_close(struct bt_seg_reader *r);
/* Give back the resident pages of the whole mapped file (they stay in the
 * page cache; PAYLOAD pointers stay valid and fault in again when read). */
void bt_seg_release(struct bt_seg_reader *r);
/* Read LEN bytes at file offset OFF into BUF, past the mapping (pread(2)
 * of the file, which stays open unless descriptors are scarce; then a
 * copy from the mapping): what is read leaves no page of the file mapped.
 * Returns the bytes read (fewer at the end of the file, or if it shrank
 * since it was opened), or -errno. */
ssize_t bt_seg_pread(const struct bt_seg_reader *r, void *buf, size_t len,
		     uint64_t off);

#endif /* BTRACE_SEGMENT_H */
