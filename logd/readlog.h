/*
 * readlog.h - walk every record of a set of log segments, in order, with
 * duplicates removed (dedup.h) and damage reported: the reading half that
 * bp-dump and the tests share.
 */
#ifndef LOGD_READLOG_H
#define LOGD_READLOG_H

#include <stddef.h>
#include <stdint.h>

#include "btrace/event.h"
#include "btrace/segment.h"
#include "dedup.h"

struct readlog_ops {
	/* A segment file was opened (may be NULL). */
	void (*file)(void *ctx, const char *path, const struct bt_seg_header *h);
	/* A valid block at file offset OFF; SKIP leading bytes were already
	 * seen; GAP stream bytes are missing before it (may be NULL). */
	void (*block)(void *ctx, const char *path, uint64_t off,
		      const struct bt_blk_header *h, size_t skip, uint64_t gap);
	/* One decoded record of stream S (may be NULL). */
	void (*record)(void *ctx, struct dd_stream *s, const struct bt_event *ev);
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
 * Expand PATHS (files, or directories searched recursively for *.btl) into
 * a list sorted by segment sequence number (the number after the last '-'
 * in the name), then by path.  Returns the count, or -errno with *BAD set
 * to the path that failed.  Free with readlog_free_list.
 */
int readlog_collect(char *const *paths, int n, char ***list,
		    const char **bad);
void readlog_free_list(char **list, int n);

/*
 * Read the files of LIST in order.  DEDUP: drop bytes a stream already
 * had.  Returns 0, or -1 if a file could not be opened (reported through
 * ops->warn with offset 0).
 */
int readlog_run(char **list, int n, int dedup, const struct readlog_ops *ops,
		void *ctx, struct readlog_stats *st);

#endif /* LOGD_READLOG_H */
