/*
 * input.h - finding, indexing and reading the log segments.
 */
#ifndef RC_INPUT_H
#define RC_INPUT_H

#include "rc.h"

/*
 * rc_input_open - expand C->opt->inputs (segment files, host directories
 * of *.btl files, or directories of host directories), open every segment,
 * index its valid blocks (damage is reported through rc_warn) and group
 * them into images and streams sorted by (host, ring, pid, slot).
 * Returns 0, RC_EXIT_INPUT when nothing readable was found, or -ENOMEM;
 * rc_fail holds the message.  Segments stay mapped until rc_input_close.
 */
int rc_input_open(struct rc_ctx *c);

/*
 * rc_input_more - index the inputs again, for logs that grew since
 * rc_input_open (bp-logd writing on): the blocks appended to known
 * streams, and new streams, images, hosts and segment files, come after
 * what the context has, which keeps its numbers (streams, images,
 * hosts, files) and its blocks; stream ranks (the merge's tie-break)
 * are those a fresh index would give.  The runs' cursors and stream
 * pointers, and the merge's stubs, move onto the new tables, so a
 * cursor at the end of its stream reads on into the new blocks.
 *
 * Returns 0; RC_MORE_REBUILD when the logs changed otherwise than by
 * growing (a block that comes before or between blocks a stream had: a
 * spool sent after a bp-logd restart; a file gone, shorter, or of
 * another host), then nothing changed and WHY (LEN bytes) says what, and
 * only a new reconstruction reads the logs right; or a negative errno
 * after which the context is unusable (rc_fail).  Indexes everything
 * again: the cost of rc_input_open, not of what is new.
 */
#define RC_MORE_REBUILD 100

/* An image's key in a map of images by (HOST, RING_ID, PID): hashed, so
 * a hit is checked against the image itself. */
uint64_t rc_input_image_key(uint32_t host, uint64_t ring_id, uint32_t pid);
int rc_input_more(struct rc_ctx *c, char *why, size_t len);
/* Say the warnings of the last index, kept while the logs grew. */
void rc_input_say(struct rc_ctx *c);
void rc_input_close(struct rc_ctx *c);
/* After the merge: give back the resident pages of the logs and of the
 * block, image and stream tables, and the heap memory freed. */
void rc_input_release(struct rc_ctx *c);

/* Give back the resident pages of the block, image and stream tables
 * (mapped files): a loop over all of them calls it every 32,768 entries,
 * so that the tables are not resident whole at once. */
void rc_input_tables_release(struct rc_ctx *c);

/* A lasting copy of the N bytes at S, shared by equal strings (for the
 * few distinct values logged many times: executables).  NULL when out of
 * memory.  Freed with the context. */
const char *rc_input_intern(struct rc_ctx *c, const char *s, uint32_t n);

/* Prepare R's cursor at its stream's first record; WARN: report losses. */
void rc_input_cur_reset(struct rc_ctx *c, struct rc_run *r, int warn);
/* Pass 1: some of HOST's records are in no log (a gap in a stream, a
 * tracer's DROP): c->host_gap (msg.c, peer_gap). */
void rc_input_host_gap(struct rc_ctx *c, uint32_t host);

/*
 * rc_input_cur_next - the next record of RUN's stream into *R.  Blocks
 * already seen are skipped, overlapping ones cut back; after missing bytes
 * or a damaged record the records up to the next BT_EV_TIME are skipped
 * (counted in C->st.lost_records when the cursor warns).  Returns 1, or 0
 * at the end.
 */
int rc_input_cur_next(struct rc_ctx *c, struct rc_run *run, struct rc_rec *r);

/* Read RUN's current block into its buffer again and point RUN->rec into
 * it (a run given to a cursor and head record kept elsewhere: merge.c's
 * stubs).  0, or the rc_fail code. */
int rc_input_cur_reload(struct rc_ctx *c, struct rc_run *run);

/* Free RUN's block buffer; _idle: only if it is a large one (a run
 * going back to a free list). */
void rc_input_run_free(struct rc_run *run);
void rc_input_run_idle(struct rc_run *run);

/* Read the LEN bytes of a record at offset OFF of segment FILE into BUF
 * (a record kept by place: rc_image.start_off).  0, or -1. */
int rc_input_read_rec(struct rc_ctx *c, uint32_t file, uint64_t off,
		      uint32_t len, uint8_t *buf);

#endif /* RC_INPUT_H */
