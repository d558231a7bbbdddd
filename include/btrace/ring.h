/*
 * btrace/ring.h - the memory a traced process shares with bp-logd, and the
 * messages they exchange over bp-logd's unix socket.
 *
 * A traced process owns one or more *chunks*: memfds of BT_RING_PAGE bytes
 * of header followed by NSLOTS data areas of SLOT_SIZE bytes (a power of
 * two).  Each thread that emits events claims one slot and is its only
 * writer; bp-logd is each slot's only reader.  The memfd is passed to
 * bp-logd (SCM_RIGHTS), so events written to it survive the death of the
 * process: bp-logd drains whatever was published.
 *
 *   writer (thread)                       reader (bp-logd)
 *   ---------------                       ----------------
 *   h = head (own copy)                   t = tail
 *   wait until h + len - tail <= size     h = load_acquire(head)
 *   write record at h % size              copy [t, h) to the segment
 *   store_release(head, h + len)          store_release(tail, h)
 *                                         futex_wake(&drained)
 *
 * head and tail count bytes since the slot's stream began (never wrap);
 * a record never straddles the end of the data area: the writer fills the
 * rest of the lap with a BT_EV_PAD record and starts at offset 0, where it
 * writes a BT_EV_TIME record first.  A PAD record is at least 2 bytes (type
 * and length), so the writer never leaves exactly one byte free at the end
 * of a lap: a record that would do so is placed after a PAD instead.  Every
 * range [tail, head) is therefore whole records; bp-logd checks this and
 * drops a peer whose slot is not.  When a slot is more than half full the
 * writer sends BT_LM_KICK (one system call per half ring); when it is full
 * it kicks and waits on the futex word `drained` (a bounded wait, then the
 * process writes the slot to the spool directory itself).
 *
 * Slots are reused by later threads once drained (tail == head); the new
 * thread's first records are BT_EV_TIME and BT_EV_THREAD_START, so a
 * reader always knows which thread wrote what.  A slot's stream id is
 * (ring_id, slot, gen); gen increments on every reuse.  head and tail are
 * not reset on reuse, so (ring_id, slot) is one continuous byte stream.
 * In log blocks (btrace/segment.h) the slot number of slot I of chunk C is
 * C * BT_RING_MAX_SLOTS + I.
 *
 * bp-logd accepts chunks with 1 <= nslots <= BT_RING_MAX_SLOTS and a
 * slot_size that is a power of two between BT_RING_MIN_SLOT and
 * BT_RING_MAX_SLOT.  It keeps its own copy of each tail (read once when
 * the chunk is registered, so a tracer that reconnects after a bp-logd
 * restart continues where the last acknowledged drain stopped) and only
 * ever writes tail, kicked, drained and flags.
 */
#ifndef BTRACE_RING_H
#define BTRACE_RING_H

#include <stdint.h>

#define BT_RING_MAGIC      0x47525442u   /* "BTRG" little-endian */
/* 2: the records use the attribute dictionary (btrace/event.h); a bp-logd
 * that writes version 1 segments must not take them, so it refuses the
 * ring and the tracer spools its own (version 2) segments. */
#define BT_RING_VERSION    2u
#define BT_RING_PAGE       4096u         /* chunk header size */
#define BT_RING_MAX_SLOTS  60u           /* slots per chunk (header fits) */
#define BT_RING_MAX_CHUNKS 64u
#define BT_RING_MIN_SLOT   4096u         /* smallest slot_size bp-logd takes */
#define BT_RING_MAX_SLOT   (4u << 20)    /* largest (= BT_SEG_MAX_PAYLOAD) */

/* Slot states */
enum bt_slot_state {
	BT_SLOT_FREE   = 0,    /* never used or drained and released */
	BT_SLOT_ACTIVE = 1,    /* a live thread writes it */
	BT_SLOT_EXITED = 2,    /* writer gone; reusable once drained */
};

/* Chunk flags (written by bp-logd, read by the tracer) */
#define BT_CF_PAUSED   0x1u  /* tracing paused: pass through, emit nothing */
#define BT_CF_LOGD     0x2u  /* set with the flags when bp-logd maps the chunk
				(on CHUNK); the tracer clears it before it
				sends CHUNK and applies its WELCOME's flags
				only while it is clear */

/* One slot's control block: 64 bytes, one cache line. */
struct bt_slot_hdr {
	volatile uint64_t head;      /* writer: bytes published */
	volatile uint64_t tail;      /* reader: bytes drained */
	volatile uint32_t state;     /* enum bt_slot_state */
	volatile uint32_t drained;   /* futex word: reader bumps after drain */
	volatile uint32_t kicked;    /* writer set 1 when it kicked; reader 0 */
	volatile uint32_t tid;       /* current writer thread (informational) */
	volatile uint32_t gen;       /* incremented on every reuse */
	volatile uint32_t lost;      /* events the writer could not record */
	uint8_t pad[24];
};

/* The chunk header page.  All fields little-endian, naturally aligned. */
struct bt_chunk_hdr {
	uint32_t magic;              /* BT_RING_MAGIC */
	uint32_t version;            /* BT_RING_VERSION */
	uint64_t ring_id;            /* random per process image */
	uint32_t pid;
	uint32_t chunk;              /* index of this chunk in the process */
	uint32_t nslots;
	uint32_t slot_size;          /* power of two */
	volatile uint32_t flags;     /* BT_CF_* (reader writes) */
	uint32_t pad0;
	/* The bp-logd that maps the chunk writes its key here (a hash of
	 * its socket's path; the tracer never reads it): a bp-logd started
	 * again on that socket finds the rings its predecessor left, and
	 * drains them before their tracers reconnect (logd/adopt.c). */
	volatile uint64_t logd_key;
	uint8_t  pad1[24];
	struct bt_slot_hdr slot[BT_RING_MAX_SLOTS];
	/* ---- the socket census (chunk 0 only; zero in older tracers) ----
	 * bp-logd names a program that holds sockets the shim never saw
	 * (raw system calls past libc: a Go binary) by comparing
	 * /proc/PID/fd with what the shim publishes here (docs/logd.md,
	 * "Programs that cannot be traced").  The tracer writes these
	 * fields; bp-logd only reads them. */
	uint32_t census_magic;       /* BT_CENSUS_MAGIC once the fields count */
	volatile uint32_t census_socks; /* socket, socketpair, accept(4) and
					   connect calls through the shim's
					   wrappers, and sockets it met first
					   in a wrapped call, in this process
					   image (a forked child starts from
					   its parent's count) */
};

#define BT_CENSUS_MAGIC 0x534e4543u  /* "CENS" little-endian */
_Static_assert(sizeof(struct bt_chunk_hdr) <= BT_RING_PAGE,
	       "the chunk header fits its page");

/*
 * The slot number of a stream in log blocks (btrace/segment.h): slot I of
 * chunk C.  bp-logd and the spool writer both use it, so the blocks of one
 * stream join whichever wrote them.
 */
#define BT_STREAM_SLOT(c, i) ((unsigned)(c) * BT_RING_MAX_SLOTS + (unsigned)(i))

/* Data area of slot I in a chunk mapped at BASE */
#define BT_SLOT_DATA(base, slot_size, i) \
	((uint8_t *)(base) + BT_RING_PAGE + (size_t)(i) * (slot_size))

/* ---- socket messages (SOCK_SEQPACKET, one message per packet) ---------- */

/* Message types, tracer -> bp-logd */
enum bt_logd_msg {
	BT_LM_HELLO  = 1,  /* struct bt_lm_hello: first packet of a peer */
	BT_LM_CHUNK  = 2,  /* struct bt_lm_chunk + SCM_RIGHTS memfd */
	BT_LM_KICK   = 3,  /* struct bt_lm_kick: please drain this slot now */
	BT_LM_BYE    = 4,  /* clean exit: drain everything, then close */
	BT_LM_CENSUS = 5,  /* struct bt_lm_census: between HELLO and chunk
			      0's CHUNK (BT_LW_CENSUS) */
	/* bp-logd -> tracer */
	BT_LM_WELCOME = 16, /* struct bt_lm_welcome: reply to HELLO */
	/* control client -> bp-logd (bp-logd -c ...) */
	BT_LM_CTL    = 32, /* struct bt_lm_ctl */
	BT_LM_CTL_REPLY = 33, /* one or more, then bp-logd closes the socket */
};

struct bt_lm_hdr {
	uint16_t type;     /* enum bt_logd_msg */
	uint16_t len;      /* bytes of the whole packet */
	uint32_t version;  /* BT_RING_VERSION */
};

struct bt_lm_hello {
	struct bt_lm_hdr h;
	uint64_t ring_id;
	uint32_t pid;
	uint32_t ppid;
	char     exe[256];  /* NUL-terminated, informational */
};

struct bt_lm_chunk {
	struct bt_lm_hdr h;
	uint32_t chunk;
	uint32_t nslots;
	uint32_t slot_size;
	uint32_t pad;
	uint64_t map_size;  /* BT_RING_PAGE + nslots * slot_size */
};

struct bt_lm_kick {
	struct bt_lm_hdr h;
	uint32_t chunk;
	uint32_t slot;
};

struct bt_lm_welcome {
	struct bt_lm_hdr h;
	uint32_t flags;     /* BT_CF_PAUSED at the time of the hello */
	uint32_t features;  /* BT_LW_*; zero from an older bp-logd */
	char     logdir[256];
};

/*
 * WELCOME features.  BT_LW_LAZY: bp-logd also listens on its socket's
 * path with BT_LAZY_SUFFIX appended, and accepts what connects there only
 * on its drain timer (every -i ms), without waking for it: a forked child
 * whose parent's shim has counted a socket call connects there and does
 * not wait for a WELCOME (docs/logd.md, "Forked children").
 */
#define BT_LW_LAZY     0x1u
#define BT_LAZY_SUFFIX ".lazy"

/*
 * BT_LW_CENSUS: bp-logd takes a tracer's own list of the sockets it held
 * at HELLO (BT_LM_CENSUS) for the census's look at HELLO.  An image
 * exec'd by a traced one whose bp-logd has both features lists its
 * sockets itself, connects to the lazy listener and does not wait for a
 * WELCOME either (docs/logd.md, "Forked children").  N inodes of sockets
 * (fstat st_ino, the number in /proc/PID/fd's "socket:[N]"), at most
 * BT_LM_CENSUS_MAX: a tracer with more waits as before.
 */
#define BT_LW_CENSUS   0x2u
#define BT_LM_CENSUS_MAX 240u

struct bt_lm_census {
	struct bt_lm_hdr h;  /* h.len = offsetof(ino) + 8 * n */
	uint32_t n;
	uint32_t pad;
	uint64_t ino[BT_LM_CENSUS_MAX];
};

enum bt_ctl_cmd { BT_CTL_PAUSE = 1, BT_CTL_RESUME = 2, BT_CTL_STATUS = 3,
		  BT_CTL_ROTATE = 4, BT_CTL_STOP = 5 };

struct bt_lm_ctl {
	struct bt_lm_hdr h;
	uint32_t cmd;       /* enum bt_ctl_cmd */
	uint32_t pad;
};

struct bt_lm_ctl_reply {
	struct bt_lm_hdr h;
	int32_t  status;    /* 0 or -errno */
	uint32_t pad;
	char     text[1024];
};

#endif /* BTRACE_RING_H */
