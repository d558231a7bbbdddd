/*
 * dedup.h - per-stream state for readers of log segments: which stream
 * bytes were already seen (blocks written twice when bp-logd died between
 * writing and acknowledging are cut back to the new bytes), and the time
 * base for decoding.  Used by bp-dump and the tests' log verifier.
 */
#ifndef LOGD_DEDUP_H
#define LOGD_DEDUP_H

#include <stddef.h>
#include <stdint.h>

#include "btrace/segment.h"

/* One stream: (host, ring_id, pid, slot). */
struct dd_stream {
	struct dd_stream *next;      /* hash chain */
	char     host[64];
	uint64_t ring_id;
	uint32_t pid;
	uint16_t slot;
	uint64_t next_off;           /* stream offset of the next new byte */
	uint64_t prev_ts;            /* decoder time base */
	struct bt_ev_dict *dict;     /* decoder dictionary (NULL: none, or
					out of memory); readlog frees it at
					THREAD_EXIT, dedup_free at the end */
	uint64_t dup_bytes, gap_bytes, records;
};

struct dedup;

/* A new, empty table (NULL when out of memory).  Free with dedup_free. */
struct dedup *dedup_new(void);
void dedup_free(struct dedup *d);
/*
 * Account block H (host HOST).  Returns its stream (never NULL unless out
 * of memory); *SKIP = leading payload bytes already seen (== H->len: the
 * whole block is a duplicate); *GAP = stream bytes missing before it.
 */
struct dd_stream *dedup_block(struct dedup *d, const char *host,
			      const struct bt_blk_header *h, size_t *skip,
			      uint64_t *gap);
/* Call F for every stream. */
void dedup_foreach(struct dedup *d, void (*f)(struct dd_stream *, void *),
		   void *arg);

#endif /* LOGD_DEDUP_H */
