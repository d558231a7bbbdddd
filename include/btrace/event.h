/*
 * btrace/event.h - the event records every part of BorderPatrol speaks.
 *
 * A traced thread writes a *stream* of records.  libbtrace encodes them into
 * its shared-memory ring (btrace/ring.h); bp-logd copies the ring's bytes
 * verbatim into blocks of a log segment (btrace/segment.h); bp-reconstruct
 * decodes them again.  This header fixes the record encoding and the meaning
 * of each field; docs/log-format.md is the user-facing description.
 *
 * Record encoding (all integers are unsigned LEB128 "varints" unless noted):
 *
 *     u8      type          enum bt_ev_type
 *     varint  body_len      bytes of body that follow (< BT_EV_MAX_BODY)
 *     body:
 *       varint  dt          ns since the previous record of this stream
 *                           (absent in BT_EV_PAD and BT_EV_TIME)
 *       fields              the type's fields, in the order of its schema
 *
 * Field kinds: unsigned varint; signed varint (zigzag); string (varint
 * length + bytes, no NUL); address (varint family, 4 or 16 address bytes,
 * varint port; unix addresses carry no bytes, the path is a string field);
 * attribute list (varint count, then per attribute u8 key + string, or a
 * reference to a value the stream remembered: see "The attribute
 * dictionary" below).
 *
 * Timestamps are nanoseconds of the host's monotonic clock.  A stream's
 * absolute time is carried by BT_EV_TIME records: one opens every stream
 * and one follows every wrap of the ring, so a reader that lost a block
 * re-synchronises at the next BT_EV_TIME.  Unknown record types are skipped
 * by their length (forward compatibility); unknown trailing fields likewise.
 *
 * The decoder never reads past its input and rejects records whose fields
 * overrun their declared length.
 */
#ifndef BTRACE_EVENT_H
#define BTRACE_EVENT_H

#include <stddef.h>
#include <stdint.h>

#define BT_EV_MAX_BODY   16383u  /* body_len fits a 2-byte varint */
#define BT_EV_MAX_ATTR   8       /* attributes per message */
#define BT_EV_MAX_STR    4096u   /* longest string field kept */

/* Record types.  Values are part of the on-disk format: never renumber. */
enum bt_ev_type {
	BT_EV_PAD          = 0,  /* filler to the end of the ring lap; skip */
	BT_EV_TIME         = 1,  /* ts (absolute), realtime: re-bases the stream */
	BT_EV_PROC_START   = 2,  /* a process image starts tracing */
	BT_EV_THREAD_START = 3,  /* a thread starts writing this stream */
	BT_EV_THREAD_EXIT  = 4,
	BT_EV_FORK         = 5,  /* parent side: result = child pid */
	BT_EV_EXEC         = 6,  /* before execve (flags 0) / after failure (1) */
	BT_EV_SPAWN        = 7,  /* posix_spawn: result = child pid */
	BT_EV_THREAD_CREATE= 8,  /* pthread_create: cookie pairs THREAD_START */
	BT_EV_OPEN         = 9,  /* a file opened: fd, flags, path */
	BT_EV_CLOSE        = 10,
	BT_EV_DUP          = 11, /* fd2 now refers to fd's channel */
	BT_EV_CHAN         = 12, /* a channel end: identity of fd */
	BT_EV_PROTO        = 13, /* processor chosen for fd (and why) */
	BT_EV_MSG          = 14, /* a whole message, at its boundary */
	BT_EV_MSG_BEGIN    = 15, /* first byte of a message handed over */
	BT_EV_DATA         = 16, /* bytes on a channel without processor */
	BT_EV_READY        = 17, /* readiness call handed fd to the app */
	BT_EV_ISOLATE      = 18, /* a read was shortened at a boundary */
	BT_EV_LOST_SYNC    = 19, /* processor gave up: channel passes through */
	BT_EV_NAME_BEGIN   = 20, /* getaddrinfo & co. start */
	BT_EV_NAME_END     = 21, /* ... and end */
	BT_EV_DROP         = 22, /* events that could not be recorded */
	BT_EV_SHUTDOWN     = 23, /* shutdown(fd, how) */
	BT_EV_LOGD         = 24, /* bp-logd's own notes (peer up/down, loss) */
	BT_EV_WANT         = 25, /* the fragment asked for events on fd */
	BT_EV_SIGNAL       = 26, /* a signal handler's calls begin / end
				    inside an interrupted call (flags) */
	BT_EV_TYPE_MAX
};

/* BT_EV_CHAN chan_kind */
enum bt_chan_kind {
	BT_CK_UNKNOWN = 0,
	BT_CK_TCP     = 1,
	BT_CK_UDP     = 2,
	BT_CK_UNIX_STREAM = 3,
	BT_CK_UNIX_DGRAM  = 4,   /* also SOCK_SEQPACKET */
	BT_CK_PIPE    = 5,
	BT_CK_OTHER_SOCKET = 6,
};

/* BT_EV_CHAN role: how this end came to be */
enum bt_chan_role {
	BT_CR_UNKNOWN    = 0,
	BT_CR_CONNECT    = 1,  /* connect(): the active (client) end */
	BT_CR_ACCEPT     = 2,  /* accept(): the passive (server) end */
	BT_CR_PIPE_READ  = 3,
	BT_CR_PIPE_WRITE = 4,
	BT_CR_SOCKETPAIR = 5,
	BT_CR_INHERITED  = 6,  /* found open at start (stdin of a CGI, ...) */
	BT_CR_DGRAM      = 7,  /* unconnected datagram socket, first use */
};

/* BT_EV_MSG / MSG_BEGIN / DATA direction, relative to the logging process */
enum bt_dir { BT_DIR_IN = 0, BT_DIR_OUT = 1 };

/* BT_EV_MSG kind */
enum bt_msg_kind {
	BT_MK_NONE    = 0,
	BT_MK_REQUEST = 1,  /* asks for a reply */
	BT_MK_REPLY   = 2,  /* answers the oldest open request (or by witness) */
	BT_MK_ONEWAY  = 3,  /* belongs to the channel's current request, no reply */
	BT_MK_CONTROL = 4,  /* connection housekeeping (startup, auth, ...) */
};

/* BT_EV_MSG flags */
#define BT_MF_WITNESS   0x01u  /* witness field is meaningful */
#define BT_MF_TRUNC     0x02u  /* an attribute value was truncated */
#define BT_MF_DGRAM     0x04u  /* offset counts datagrams, not bytes */
#define BT_MF_EOF       0x08u  /* message ended by end of stream */

/* BT_EV_READY flags: the poll bits handed over (1 in, 4 out, 8 err,
 * 16 hup, as poll reports them), plus: */
#define BT_RF_ALONE     0x10000u /* the readiness call waited on this fd
				    alone (poll of one fd): a blocking wait
				    with a timeout, not an event loop */
#define BT_RF_SIGNAL    0x20000u /* READY -1: a signal handler's calls
				    follow, made while the thread slept in
				    an event loop's wait: work for no
				    request (docs/events.md "READY") */

/* BT_EV_SIGNAL flags.  A signal handler's calls, recorded between BEGIN
 * and END as work for no request that interrupts the thread's fragment;
 * after END the interrupted fragment goes on (docs/events.md "SIGNAL").
 * Written around a handler that ran inside a read's system call, and
 * around the writes of a handler that re-entered the shim elsewhere,
 * kept until the wrapper it interrupted left. */
#define BT_SG_BEGIN     1u
#define BT_SG_END       2u

/* BT_EV_PROTO flags: how the processor was chosen */
enum bt_proto_how { BT_PH_RULE = 1, BT_PH_DEFAULT = 2, BT_PH_SNIFF = 3,
		    BT_PH_NONE = 4,  /* sniffing recognised nothing */
		    BT_PH_TLS = 5,   /* no processor: the first bytes are a
					TLS handshake record, encrypted
					inside the program */
		    BT_PH_UPGRADE = 6 /* the previous processor handed the
					 channel over (HTTP/1.1 Upgrade:
					 h2c answered by 101) */ };

/* BT_EV_PROC_START flags */
#define BT_PF_FORKED    0x01u  /* started by fork in a traced parent */
#define BT_PF_EXECED    0x02u  /* started by an exec of a traced image */
#define BT_PF_ISOLATION 0x04u  /* event isolation was on */

/* BT_EV_DROP flags (reason) */
enum bt_drop_reason { BT_DR_REENTRANT = 1, BT_DR_RING_FULL = 2,
		      BT_DR_TOO_BIG = 3, BT_DR_NO_SLOT = 4,
		      BT_DR_PAUSED = 5 /* calls passed through while paused */ };

/* BT_EV_LOGD flags: what bp-logd's note is about (docs/logd.md) */
enum bt_logd_note {
	BT_LN_START      = 1,  /* bp-logd started; pid = its pid, str = dir */
	BT_LN_STOP       = 2,  /* clean shutdown; result = bytes written */
	BT_LN_PEER_UP    = 3,  /* pid = peer, str = "ring=%016llx exe=..." */
	BT_LN_PEER_GONE  = 4,  /* result = bytes drained, str = lost counts */
	BT_LN_PEER_DROP  = 5,  /* result = -errno, str = why it was dropped */
	BT_LN_REFUSED    = 6,  /* pid = peer, result = its uid */
	BT_LN_DISK_ERROR = 7,  /* result = -errno; draining stops */
	BT_LN_DISK_OK    = 8,  /* writes succeed again; result = ms stalled */
	BT_LN_ROTATE     = 9,  /* str = the new segment's name */
	BT_LN_PAUSE      = 10,
	BT_LN_RESUME     = 11,
	BT_LN_NOTES_LOST = 12, /* result = notes that did not fit the buffer */
	BT_LN_RAW_IO     = 13, /* pid = a tracer that holds sockets its shim
				  never saw (network I/O past libc: not
				  traced); result = how many, str = "ring=%016llx
				  exe=... comm=... tcp_listen=N tcp=N udp=N
				  unix_listen=N: examples" */
};

/* Message attribute keys (u8 on disk; never renumber) */
enum bt_attr_key {
	BT_AK_METHOD      = 1,   /* HTTP method, PG message kind, FCGI method */
	BT_AK_TARGET      = 2,   /* HTTP path+query */
	BT_AK_HOST        = 3,   /* HTTP Host */
	BT_AK_SQL         = 4,   /* SQL text */
	BT_AK_DNS_NAME    = 5,
	BT_AK_DNS_TYPE    = 6,   /* "A", "AAAA", ... */
	BT_AK_FCGI_SCRIPT = 7,   /* SCRIPT_NAME */
	BT_AK_FCGI_URI    = 8,   /* REQUEST_URI */
	BT_AK_TRACEPARENT = 9,
	BT_AK_REQUEST_ID  = 10,  /* X-Request-ID */
	BT_AK_BODY_LEN    = 11,  /* decimal */
	BT_AK_ERROR       = 12,  /* SQLSTATE, DNS rcode name, ... */
	BT_AK_TAG         = 13,  /* PG command tag ("SELECT 3") */
	BT_AK_PEER        = 14,  /* datagram peer "addr:port" */
	BT_AK_INFO        = 15,  /* free text */
	BT_AK_LINE        = 16,  /* line protocol: the line (truncated) */
	BT_AK_USER        = 17,
	BT_AK_DATABASE    = 18,
	BT_AK_STATUS_TEXT = 19,
	BT_AK_PARAMS      = 20,  /* PostgreSQL Bind: "I:HASH ..." (parameter
				    index, bt_value_hash of its value in
				    16 hex digits): never the values */
	BT_AK_MAX
};

/* A socket address as logged: family 0 = none, 4, 6, or 1 = unix. */
struct bt_addr {
	uint8_t  family;
	uint16_t port;
	uint8_t  addr[16];
};
#define BT_AF_NONE 0
#define BT_AF_UNIX 1
#define BT_AF_INET 4
#define BT_AF_INET6 6

struct bt_attr {
	uint8_t     key;
	uint16_t    len;
	const char *val;          /* not NUL-terminated; NULL when unknown (a
				     reference the reader could not resolve) */
};

/*
 * The attribute dictionary.  Each stream remembers up to BT_DICT_SLOTS
 * attribute values (and OPEN paths) of at most BT_DICT_MAXVAL bytes; a
 * value the stream wrote before is then written as a slot number.  In an
 * attribute list the key byte carries two flag bits (keys are < 64):
 *
 *   key                  string      a literal, not remembered
 *   key|BT_AK_KEEP  slot string      a literal, remembered in slot
 *   key|BT_AK_REF   slot             the value remembered in slot
 *
 * (slot a varint < BT_DICT_SLOTS).  A record never remembers a value in
 * a slot it used before (referred to or remembered in): a value it refers
 * to stays what it was while the record is decoded; a reader takes such a
 * record as malformed.  An OPEN record's flags carry
 * BT_OPEN_PATH_KEEP (a varint slot precedes the path string) or
 * BT_OPEN_PATH_REF (a varint slot replaces it); the decoder clears both.
 * The writer chooses the slots; readers follow them.  Every TIME record
 * empties the stream's dictionary (encoder and decoder both do it), so a
 * reader that lost bytes is right again at the next TIME.  A reference
 * to an empty slot is damage: the value decodes as unknown (val NULL,
 * len 0) and EV->dict_miss counts it.
 *
 * The writer's and every reader's dictionary is a struct bt_ev_dict the
 * caller owns (one per stream), set up by bt_ev_dict_init.  A value a
 * reference resolves to lives in the dictionary: it stays valid until the
 * next record of the same stream is decoded with it.
 */
#define BT_DICT_SLOTS     64      /* at most 64: a record's slots are
					   one 64-bit mask */
#define BT_DICT_MAXVAL    96
#define BT_AK_KEEP        0x40u
#define BT_AK_REF         0x80u
#define BT_AK_KEY_MASK    0x3fu
#define BT_OPEN_PATH_KEEP 0x04000000u
#define BT_OPEN_PATH_REF  0x08000000u

struct bt_ev_dict {
	uint32_t gen;             /* a slot holds a value iff its gen is this */
	struct {
		uint64_t ka, kb;  /* the writer's comparison words */
		uint32_t gen;
		uint16_t len;
		char     val[BT_DICT_MAXVAL];
	} ent[BT_DICT_SLOTS];
};
/* An empty dictionary (D may be NULL: nothing to do). */
void bt_ev_dict_init(struct bt_ev_dict *d);
/* Forget every value (a TIME record, or bytes of the stream were lost). */
void bt_ev_dict_reset(struct bt_ev_dict *d);

/*
 * One decoded (or to-be-encoded) record.  Which fields a type uses is given
 * by its schema in common/event.c and summarised here:
 *
 *   TIME          ts(abs) realtime
 *   PROC_START    pid ppid ptid flags realtime str=exe str2=cmdline
 *   THREAD_START  tid ptid cookie pid
 *   THREAD_EXIT   -
 *   FORK          result(child pid | -errno) flags
 *   EXEC          result flags(0 before, 1 failed) str=path
 *   SPAWN         result(child pid | -errno) str=path
 *   THREAD_CREATE cookie result
 *   OPEN          fd flags result str=path
 *   CLOSE         fd result
 *   DUP           fd fd2
 *   CHAN          fd fd2 chan_kind role flags result local remote ino
 *                 peer_ino str=unix path
 *   PROTO         fd proto flags(how) str=reason
 *   MSG           fd dir kind proto flags off len status witness attrs
 *   MSG_BEGIN     fd dir off
 *   DATA          fd dir off len
 *   READY         fd flags(events) result(ready fds seen)
 *   ISOLATE       fd off len(requested) result(handed over)
 *   LOST_SYNC     fd dir proto off
 *   NAME_BEGIN    cookie flags str=name str2=service
 *   NAME_END      cookie result str=first address
 *   DROP          len(count) flags(reason)
 *   SHUTDOWN      fd flags(how)
 *   LOGD          pid flags result str=text
 *   WANT          fd flags(poll bits now asked for)
 *
 * Decoded strings and attribute values point into the record bytes.
 */
struct bt_event {
	uint8_t  type;
	uint64_t ts;            /* absolute monotonic ns (decoder fills) */
	int32_t  fd, fd2;
	int64_t  result;        /* return value, or -errno */
	uint32_t pid, ppid, tid, ptid;
	uint64_t cookie;
	uint32_t flags;
	uint8_t  proto, dir, kind, chan_kind, role;
	uint64_t off, len;
	uint32_t status;
	uint64_t witness;
	uint64_t ino, peer_ino;
	uint64_t realtime;      /* CLOCK_REALTIME ns */
	struct bt_addr local, remote;
	const char *str;  uint32_t str_len;
	const char *str2; uint32_t str2_len;
	uint8_t  nattr;
	uint8_t  dict_miss;     /* references to an empty slot (decoder) */
	uint8_t  dict_keep;     /* values to remember, decoded without a
				   dictionary (decoder): a reader that
				   allocates its dictionary on demand
				   decodes the record again with one */
	struct bt_attr attr[BT_EV_MAX_ATTR];
};

/* Varint helpers.  put: writes at most 10 bytes, returns bytes written. */
static inline size_t bt_put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) { p[n++] = (uint8_t)(v | 0x80); v >>= 7; }
	p[n++] = (uint8_t)v;
	return n;
}
/* get: returns bytes consumed, 0 if truncated or longer than 10 bytes. */
static inline size_t bt_get_varint(const uint8_t *p, size_t avail, uint64_t *v)
{
	uint64_t r = 0;
	for (size_t i = 0; i < avail && i < 10; i++) {
		r |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80)) { *v = r; return i + 1; }
	}
	return 0;
}
static inline uint64_t bt_zigzag(int64_t v)
{ return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t bt_unzigzag(uint64_t v)
{ return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/*
 * bt_ev_encode - encode EV as one record at DST (capacity CAP), using
 * *PREV_TS for the time delta and updating it.  EV->ts is absolute.
 * Strings longer than BT_EV_MAX_STR and attribute lists that do not fit
 * are truncated (BT_MF_TRUNC is set for messages).
 * Returns the record's size, or 0 if CAP is too small.  No allocation,
 * async-signal-safe.
 */
size_t bt_ev_encode(uint8_t *dst, size_t cap, const struct bt_event *ev,
		    uint64_t *prev_ts);
/* The same with the stream's dictionary DICT (NULL: no references, every
 * value a plain literal, as bt_ev_encode writes).  DICT is changed only
 * when a record is written (the return value is not 0). */
size_t bt_ev_encode_dict(uint8_t *dst, size_t cap, const struct bt_event *ev,
			 uint64_t *prev_ts, struct bt_ev_dict *dict);

/*
 * bt_ev_encode_ints - the encoder for records whose fields are all
 * integers (READY, MSG_BEGIN, DATA, CLOSE, SHUTDOWN, WANT, ...): the same
 * bytes bt_ev_encode writes, without a struct bt_event.  V holds the N
 * fields in schema order, already as written (signed ones zigzagged).
 * DST needs BT_EV_INTS_ROOM(N) bytes; N <= 8.
 */
#define BT_EV_INTS_ROOM(n) (2 + 10 * ((n) + 1))
static inline size_t bt_ev_encode_ints(uint8_t *dst, unsigned type,
				       uint64_t ts, uint64_t *prev_ts,
				       unsigned n, const uint64_t *v)
{
	uint8_t *p = dst + 2;

	p += bt_put_varint(p, ts >= *prev_ts ? ts - *prev_ts : 0);
	for (unsigned i = 0; i < n; i++)
		p += bt_put_varint(p, v[i]);
	if (ts > *prev_ts)
		*prev_ts = ts;
	dst[0] = (uint8_t)type;
	dst[1] = (uint8_t)(p - (dst + 2));    /* <= 90: one byte */
	return (size_t)(p - dst);
}

/*
 * bt_ev_encode_msg - a MSG record from its fields alone (no struct
 * bt_event): the bytes bt_ev_encode writes for the same MSG.  Returns the
 * record's size, or 0 when it may not fit CAP or an attribute is longer
 * than BT_EV_MAX_STR (bt_ev_encode then cuts it).  bt_ev_msg_bound, or
 * BT_EV_MSG_BOUND of its attribute count and the sum of their lengths, is
 * an upper bound of its body (the header adds at most 3 bytes).
 */
struct bt_msg_rec {
	uint64_t ts;
	int32_t  fd;
	uint8_t  dir, kind, proto, nattr;
	uint32_t flags, status;
	uint64_t off, len, witness;
	const struct bt_attr *attr;
};
size_t bt_ev_encode_msg(uint8_t *dst, size_t cap, const struct bt_msg_rec *m,
			uint64_t *prev_ts, struct bt_ev_dict *dict);
size_t bt_ev_msg_bound(const struct bt_msg_rec *m);
/* A MSG body of N attributes (N <= BT_EV_MAX_ATTR) whose lengths add up
 * to VLEN: the time delta and nine fields of at most 10 bytes, the count,
 * each attribute's key, slot and length (4) and its value.  Never less
 * than bt_ev_msg_bound; at most 2048 means no attribute is longer than
 * BT_EV_MAX_STR. */
#define BT_EV_MSG_BOUND(n, vlen) ((size_t)(10 * 10 + 1) + 4 * (size_t)(n) + \
				  (size_t)(vlen))
/* OPEN from its fields alone: the bytes bt_ev_encode_dict writes for the
 * same record (the path through dictionary DICT, or plain without one).
 * DST needs 46 + LEN bytes; LEN <= BT_EV_MAX_STR.  Returns the size. */
size_t bt_ev_encode_open(uint8_t *dst, uint64_t ts, uint64_t *prev_ts,
			 int32_t fd, uint32_t flags, int64_t result,
			 const char *path, uint32_t len,
			 struct bt_ev_dict *dict);
/* bt_ev_encode_msg for a caller that checked already that
 * bt_ev_msg_bound(M) <= BT_EV_MAX_BODY and that DST has room for
 * bound + 3 bytes: the same bytes, without computing the bound again. */
size_t bt_ev_encode_msg_fit(uint8_t *dst, const struct bt_msg_rec *m,
			    uint64_t *prev_ts, struct bt_ev_dict *dict);

/* The two encoders bt_ev_encode_dict chooses between, alone, so the tests
 * can hold the fast ones to the schema table: the careful encoder walks
 * the schema with bounds checks (0 if CAP is too small); the fast one
 * (for MSG the one of bt_ev_encode_msg) writes unchecked into DST, which
 * has BT_EV_MAX_RECORD bytes, and returns 0 when the record needs the
 * careful one (a string or attribute longer than BT_EV_MAX_STR). */
size_t bt_ev_encode_careful(uint8_t *dst, size_t cap, const struct bt_event *ev,
			    uint64_t *prev_ts, struct bt_ev_dict *dict);
size_t bt_ev_encode_fast(uint8_t *dst, const struct bt_event *ev,
			 uint64_t *prev_ts, struct bt_ev_dict *dict);
/* Largest record bt_ev_encode can produce (header + max body). */
#define BT_EV_MAX_RECORD (BT_EV_MAX_BODY + 3)

/*
 * bt_ev_decode - decode the record at SRC (LEN bytes available) into EV,
 * resolving its time from *PREV_TS (updated).  Pointers in EV refer to SRC.
 * Returns the record's size (> 0); 0 if the record is incomplete; -1 if it
 * is malformed (declared length overruns LEN is "incomplete", a field that
 * overruns the declared length is "malformed").  Records of unknown type
 * decode with only EV->type set and are returned whole.
 */
long bt_ev_decode(const uint8_t *src, size_t len, struct bt_event *ev,
		  uint64_t *prev_ts);
/*
 * The same with the stream's dictionary DICT, which resolves references
 * and learns remembered values (NULL: references decode as unknown).  A
 * TIME record empties it; so does a malformed record (-1), whose effect
 * on the writer's dictionary is not known.
 */
long bt_ev_decode_dict(const uint8_t *src, size_t len, struct bt_event *ev,
		       uint64_t *prev_ts, struct bt_ev_dict *dict);

/* Name of a record type, attribute key, channel kind, etc., for dumps. */
const char *bt_ev_type_name(unsigned type);
const char *bt_attr_key_name(unsigned key);
const char *bt_chan_kind_name(unsigned kind);
const char *bt_msg_kind_name(unsigned kind);

/* Format an address as "1.2.3.4:80", "[::1]:80" or "unix"; returns BUF. */
char *bt_addr_format(const struct bt_addr *a, char *buf, size_t len);

/* Append a one-line human-readable rendering of EV to BUF (for bp-dump). */
int bt_ev_format(const struct bt_event *ev, char *buf, size_t len);

#endif /* BTRACE_EVENT_H */
