/*
 * btrace/segread.h - reading a set of log segments as streams: the one
 * reader bp-dump, bp-reconstruct and the bench tools share
 * (docs/log-format.md, "Reading a set of segments").
 *
 * 1. Which files, in which order (bt_sr_collect).  Each path given is a
 *    segment file (read whatever its name), or a directory: its own *.btl
 *    files, then those of each of its subdirectories, one level down and
 *    no further (logs/ holds logs/<host>/; a spool directory holds
 *    <spool>/<host>/).  The *.btl files of one directory are ordered by
 *    the segment sequence number in their header, then by name (a file
 *    whose header does not read sorts as number 0); subdirectories by
 *    name; the paths in the order given.
 *
 * 2. Index (bt_segset_add): every file is opened and mapped, every block
 *    checked once (bt_seg_next); damage goes to the warn callback.  A
 *    block's host is the (host name, boot id) of its file's header.
 *
 * 3. Streams (bt_segset_sort): blocks are sorted by stream (host, ring_id,
 *    pid, slot), then stream offset, the longer of two blocks at the same
 *    offset first, then index order; and each block gets its cut: the
 *    leading bytes an earlier block of its stream already had (all of
 *    them: a duplicate), and the bytes missing before it.  Readers use
 *    only the kept part (payload + skip .. len).
 */
#ifndef BTRACE_SEGREAD_H
#define BTRACE_SEGREAD_H

#include <stddef.h>
#include <stdint.h>

#include "btrace/segment.h"

/* One segment file of the set. */
struct bt_sr_file {
	char                 *path;
	struct bt_seg_reader *rd;     /* open (mapped) until bt_segset_free */
	uint32_t              host;   /* index into the set's hosts */
	uint64_t              size;   /* bytes read: its length when opened */
};

/* A host: name and boot id of a segment header (monotonic times of two
 * boots do not compare, so they are two hosts here). */
struct bt_sr_host {
	char     name[64];            /* "unknown" when the header has none */
	uint64_t boot_id;
};

/* Cut marks (struct bt_sr_block.cut) */
#define BT_SR_FIRST 0x1u   /* the first block of its stream */
#define BT_SR_DUP   0x2u   /* every byte is a repeat: read nothing of it */
#define BT_SR_LOST  0x4u   /* bytes before the kept part are missing: gap
			      bytes, or the writer flagged a loss (BT_BF_GAP) */

/* One valid block. */
struct bt_sr_block {
	const uint8_t *payload;       /* into the mapped file */
	uint64_t soff;                /* stream offset of payload[0] */
	uint64_t foff;                /* file offset of the block header */
	uint64_t ring_id;
	uint64_t gap;                 /* stream bytes missing before it; for
					 the first block, its offset */
	uint32_t len, file, host, pid, flags;
	uint16_t slot, gen;
	uint32_t seq;                 /* index order: file order, then place
					 in the file */
	uint32_t skip;                /* leading bytes the stream had already
					 (== len with BT_SR_DUP) */
	uint32_t stream;              /* stream number, in sorted order */
	uint32_t cut;                 /* BT_SR_* */
};

/* A set of segments.  Zero it (or use BT_SEGSET_INIT) before use. */
struct bt_segset {
	struct bt_sr_file  *files;  uint32_t nfiles;
	struct bt_sr_host  *hosts;  uint32_t nhosts;
	struct bt_sr_block *blocks; uint32_t nblocks;
	uint32_t nstreams;            /* after bt_segset_sort */
	uint32_t cap;                 /* of blocks */
	uint64_t payload_bytes;       /* sum of the blocks' lengths */
	/* Damage inside files (bt_seg_open's warn); may be NULL. */
	bt_seg_warn_fn warn;
	void          *warn_ctx;
	/* Give back a file's resident pages every this many bytes of
	 * blocks checked while indexing (0: never). */
	uint64_t release_every;
};

/* A list of segment paths (malloc'd strings), in reading order. */
struct bt_sr_list {
	char   **v;
	uint32_t n, cap;
};

/*
 * bt_sr_collect - append to L the segment files PATH stands for (a file,
 * or a directory as in 1. above).  A subdirectory that cannot be read is
 * reported through WARN (may be NULL) with offset 0 and skipped.  Returns
 * the number of files added (0: a directory without segments), or -errno
 * when PATH itself cannot be read (-ENOMEM: out of memory).
 */
int bt_sr_collect(struct bt_sr_list *l, const char *path,
		  bt_seg_warn_fn warn, void *ctx);
/* Free L's paths and array (L itself is the caller's). */
void bt_sr_list_free(struct bt_sr_list *l);

/*
 * bt_segset_add - open PATH and index its valid blocks into S.  Returns
 * 0; -ENOMEM; or another -errno when the file is not readable as a
 * segment (then *WHY says why and nothing was added).
 */
int bt_segset_add(struct bt_segset *s, const char *path, const char **why);

/*
 * bt_segset_sort - sort S's blocks into streams and cut them (3. above):
 * sets every block's skip, gap, stream and cut, and S->nstreams.
 */
void bt_segset_sort(struct bt_segset *s);

/* Blocks A and B (sorted) belong to the same stream / process image
 * (host, ring_id, pid). */
static inline int bt_sr_same_image(const struct bt_sr_block *a,
				   const struct bt_sr_block *b)
{
	return a->host == b->host && a->ring_id == b->ring_id &&
	       a->pid == b->pid;
}

/* Close S's files and free what it holds (not S itself).  A caller that
 * took over an array sets its pointer in S to NULL first. */
void bt_segset_free(struct bt_segset *s);

#endif /* BTRACE_SEGREAD_H */
