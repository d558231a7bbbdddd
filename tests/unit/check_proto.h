/*
 * check_proto.h - capture files and the replay of protocol processors, for
 * tests/unit/check_proto.c, tests/proto/pp-replay and the fuzz targets.
 *
 * A capture (tests/proto/README.md) is the traffic of one channel as one
 * traced process saw it: a text header naming the processor, this end's
 * role and the transport, then records "u8 type, u32 length (big-endian),
 * bytes" where type 0/1 is data in/out and 2/3 the end of input/output.
 *
 * A replay feeds a capture to a processor the way libbtrace would, chunked
 * in one of several ways, each chunk placed flush against a PROT_NONE page,
 * the state too, checking the processor interface contract on every call,
 * and writes the messages found as an event log: one line per message,
 *   DIR KIND off=N len=N [status=N] [witness=N] [flags=F,..] [key="value"]..
 * or "DIR lost" where the processor gave up (not where: the offset of the
feed() call that gives up depends on the chunking).  Identical input must
 * give an identical log in every chunking.
 */
#ifndef CHECK_PROTO_H
#define CHECK_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "btrace/proto.h"

enum { CAP_IN = 0, CAP_OUT = 1, CAP_EOF_IN = 2, CAP_EOF_OUT = 3 };

struct cap_rec {
	uint8_t        type;
	uint32_t       len;
	const uint8_t *data;
};

struct cap {
	char             proto[32];
	char             source[512];
	int              role;          /* enum bt_role */
	int              transport;     /* enum bt_transport */
	size_t           nrec;
	struct cap_rec  *rec;
	size_t           bytes;         /* data bytes, both directions */
	uint8_t         *buf;           /* owned */
};

/* A growable string (the event log). */
struct sbuf {
	char  *s;
	size_t len, cap;
};

void sb_printf(struct sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sb_free(struct sbuf *b);

/*
 * cap_parse - parse the capture in BUF[0..N) into C, taking ownership of
 * BUF (malloc'd).  Returns 0, or -1 with a one-line reason in ERR.
 */
int cap_parse(uint8_t *buf, size_t n, struct cap *c, char *err, size_t elen);

/* cap_load - read and parse capture file PATH.  0 or -1 (ERR). */
int cap_load(const char *path, struct cap *c, char *err, size_t elen);

void cap_free(struct cap *c);

/* Replay chunkings */
enum replay_mode {
	RM_RECORDS,     /* each record as captured */
	RM_WHOLE,       /* consecutive records of a direction joined */
	RM_BYTES,       /* one byte per feed() */
	RM_SPLIT,       /* joined, and the run holding byte SPLIT cut there */
	RM_FRONT,       /* as RM_RECORDS, guard page before the data */
	RM_RANDOM,      /* joined runs cut at pseudo-random points (SPLIT
			   is the seed) */
};

/*
 * replay - run processor O over capture C chunked per MODE (SPLIT: see
 * above) and append the event log to OUT.  Returns 0, or -1 with the
 * contract violation in ERR (the log so far stays in OUT).
 */
int replay(const struct bt_proto_ops *o, const struct cap *c, int mode,
	   size_t split, struct sbuf *out, char *err, size_t elen);

/*
 * replay_chunks - the core: feed NCHUNK chunks (TYPE[i] as in struct
 * cap_rec, LEN[i] bytes at DATA[i]) to O, logging to OUT; FRONT puts the
 * guard page before each chunk instead of after it.  Used by replay() and
 * the fuzz targets.  Returns 0 or -1 (ERR).
 */
int replay_chunks(const struct bt_proto_ops *o, int role, int transport,
		  size_t nchunk, const uint8_t *type, const uint32_t *len,
		  const uint8_t *const *data, int front, struct sbuf *out,
		  char *err, size_t elen);

/*
 * replay_splits - replay C with the runs of each direction joined (as
 * RM_WHOLE) and one run cut into two chunks, at every inner point of every
 * run, comparing each log with WANT.  Returns 0 if all are equal, the
 * first byte position (> 0) where a cut gives another log (that log in
 * GOT), or -1 on a contract violation (ERR).
 */
long replay_splits(const struct bt_proto_ops *o, const struct cap *c,
		   const char *want, struct sbuf *got, char *err, size_t elen);

/* Name of a mode, for messages. */
const char *replay_mode_name(int mode);

#endif /* CHECK_PROTO_H */
