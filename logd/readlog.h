/*
 * readlog.h - every record of a set of log segments, file by file, as the
 * segment reader (btrace/segread.h) cuts them: the printing half that
 * bp-dump and the tests share.
 */
#ifndef LOGD_READLOG_H
#define LOGD_READLOG_H

#include <stddef.h>
#include <stdint.h>

#include "btrace/event.h"
#include "btrace/segment.h"
#include "btrace/segread.h"

/* One stream (host, ring_id, pid, slot) as read so far. */
struct readlog_stream {
	const char *host;            /* its segments' host name */
	uint64_t ring_id;
	uint32_t pid;
	uint16_t slot;
	int      started;            /* a block of it was read */
	uint64_t next_off;           /* stream offset after the blocks read */
	uint64_t prev_ts;            /* decoder time base */
	struct bt_ev_dict *dict;     /* decoder dictionary (NULL: none yet,
					or out of memory); freed at
					THREAD_EXIT and at the end */
	uint64_t records;
};

struct readlog_ops {
	/* A segment file was opened (may be NULL). */
	void (*file)(void *ctx, const char *path, const struct bt_seg_header *h);
	/* A valid block at file offset OFF; SKIP leading bytes were already
	 * seen; GAP stream bytes are missing before it (may be NULL). */
	void (*block)(void *ctx, const char *path, uint64_t off,
		      const struct bt_blk_header *h, size_t skip, uint64_t gap);
	/* One decoded record of stream S (may be NULL). */
	void (*record)(void *ctx, struct readlog_stream *s,
		       const struct bt_event *ev);
	/* Damage: file, byte offset, reason (may be NULL). */
	void (*warn)(void *ctx, const char *path, uint64_t off, const char *why);
};

struct readlog_stats {
	uint64_t files, blocks, records, dup_blocks, dup_bytes, gap_bytes;
	uint64_t damaged;            /* warnings issued */
	uint64_t streams;
	uint64_t type_count[BT_EV_TYPE_MAX + 1];   /* last: unknown types */
};

/*
 * Expand PATHS (segment files, or directories: their *.btl files and
 * those of their subdirectories, btrace/segread.h) into L, in reading
 * order.  A subdirectory that cannot be read is reported through WARN
 * (may be NULL) and skipped.  Returns the count, or -errno with *BAD set
 * to the path that failed.  Free with bt_sr_list_free.
 */
int readlog_collect(char *const *paths, int n, struct bt_sr_list *l,
		    const char **bad, bt_seg_warn_fn warn, void *ctx);

/*
 * Read the files of L: all are indexed and their streams cut first
 * (btrace/segread.h), then their blocks are passed on in file order with
 * what the cut says: DEDUP: drop bytes a stream already had, from the one
 * copy the cut keeps.  Damage found while indexing is reported in file
 * order, before the block after it.  Returns 0, or -1 if a file could not
 * be opened (reported through ops->warn with offset 0).
 */
int readlog_run(const struct bt_sr_list *l, int dedup,
		const struct readlog_ops *ops, void *ctx,
		struct readlog_stats *st);

#endif /* LOGD_READLOG_H */
