/*
 * logd.h - bp-logd's internal interfaces: logging, the segment store, its
 * own note stream, mapped chunks, peers and the server loop.
 *
 * bp-logd is single-threaded: every function here runs on the event loop's
 * thread and takes no locks.  Functions return >= 0 or -errno unless said.
 */
#ifndef LOGD_LOGD_H
#define LOGD_LOGD_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/queue.h>

#include "btrace/event.h"
#include "btrace/ring.h"
#include "btrace/segment.h"

#define LOGD_MAX_ALLOW 32

/* Command-line settings (main.c fills them, the server reads them). */
struct logd_opts {
	const char *sock_path;
	const char *log_dir;       /* parent of the per-host directory */
	const char *host;          /* per-host directory name */
	const char *pidfile;
	unsigned    interval_ms;   /* drain timer */
	uint64_t    seg_size;      /* rotate when a segment reaches this */
	int         verbose;
	int         daemonize;
	uid_t       allow_uid[LOGD_MAX_ALLOW];
	unsigned    n_allow_uid;
	gid_t       allow_gid[LOGD_MAX_ALLOW];
	unsigned    n_allow_gid;
};

/* ---- log.c: one-line messages on stderr ---------------------------------- */

/* Set the verbosity (0 = warnings only, 1 = info, 2 = debug). */
void log_set_verbose(int level);
/* Print "bp-logd: MESSAGE" on stderr, always / if -v / if -vv. */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* log_warn, then exit(1). */
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Monotonic and realtime clocks in ns. */
uint64_t logd_now_mono(void);
uint64_t logd_now_real(void);

/* ---- store.c: the current segment file of DIR/HOST ----------------------- */

struct store;

/*
 * Create DIR/HOST (mode 0700) if needed and open a new segment in it,
 * numbered after the highest one already there.  On failure returns
 * -errno and sets *CAUSE to a one-line explanation (static or owned by
 * the store module until the next call).
 */
int store_open(struct store **sp, const char *dir, const char *host,
	       uint64_t max_size, const char **cause);
/*
 * Append one block (header built from H, payload PAYLOAD of H->len bytes)
 * at the end of the current segment, rotating first if it would pass the
 * size limit.  The block is written with pwritev at the file's known good
 * size; on failure the file is truncated back to that size and -errno is
 * returned: nothing of the block counts as written.
 */
int store_append(struct store *s, const struct bt_blk_header *h,
		 const void *payload);
/* fsync the current segment and start the next one.  On failure the
 * current segment stays open. */
int store_rotate(struct store *s);
/* fsync the current segment (and the directory). */
int store_sync(struct store *s);
/* fsync and close; frees S. */
void store_close(struct store *s);
/* Path of the current segment; the directory; bytes written since start. */
const char *store_path(const struct store *s);
const char *store_dir(const struct store *s);
uint64_t store_bytes(const struct store *s);
uint64_t store_seg_size(const struct store *s);

/* ---- notes.c: bp-logd's own record stream (ring_id 0, BT_BF_LOGD) -------- */

#define NOTES_BUF 65536u

struct notes {
	uint8_t  buf[NOTES_BUF];
	size_t   len;
	uint64_t off;       /* stream offset of buf[0] */
	uint64_t prev_ts;
	uint64_t lost;      /* notes that did not fit since the last flush */
	uint32_t pid;
};

/* Start the stream (a TIME record). */
void notes_init(struct notes *n);
/* Append a TIME record (monotonic + realtime). */
void notes_time(struct notes *n);
/* Append a BT_EV_LOGD record: WHAT is an enum bt_logd_note. */
void notes_add(struct notes *n, unsigned what, uint32_t pid, int64_t result,
	       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Write the buffered records as one block.  Returns 0 or -errno (kept). */
int notes_flush(struct notes *n, struct store *s);

/* ---- chunk.c: a tracer's shared memory, mapped ---------------------------- */

struct chunk {
	uint32_t idx, nslots, slot_size;
	size_t   map_size;
	uint8_t *base;
	dev_t    dev;
	ino_t    ino;
	uint64_t tail[BT_RING_MAX_SLOTS];   /* ours; shared copy is a mirror */
	int      adopted;        /* found in /proc, its tracer not connected
				    (adopt.c): the tracer may drain a slot
				    itself (its spool), so a copy counts only
				    if the shared tail did not move */
};

/* Install the SIGBUS guard used around every access to shared memory. */
void chunk_guard_install(void);
/*
 * Validate the memfd FD announced by M for the peer (RING_ID, PID) and map
 * it.  Returns 0 and *OUT (owned by the caller, free with chunk_unmap), or
 * -errno with a reason in WHY.  FD is not closed.
 */
int chunk_map(int fd, const struct bt_lm_chunk *m, uint64_t ring_id,
	      uint32_t pid, struct chunk **out, char *why, size_t whylen);
void chunk_unmap(struct chunk *c);
/*
 * Copy slot I's published bytes [tail, head) into BUF (BT_RING_MAX_SLOT
 * bytes) and check they are whole records.  Returns the byte count (0 when
 * empty) with *HEAD and *GEN set; -EFAULT if the memory vanished (the peer
 * shrank its memfd), -EPROTO with WHY for a malformed slot; for an adopted
 * chunk, -EAGAIN when the tracer moved the tail meanwhile (its spool).
 */
long chunk_read_slot(struct chunk *c, unsigned i, uint8_t *buf,
		     uint64_t *head, uint32_t *gen, char *why, size_t whylen);
/* Acknowledge: tail = HEAD (release), kicked = 0, drained++ and wake the
 * writer.  Returns 0 or -EFAULT. */
int chunk_ack(struct chunk *c, unsigned i, uint64_t head);
/* Write KEY (server.key) into the header's logd_key.  0 or -EFAULT. */
int chunk_set_key(struct chunk *c, uint64_t key);
/* Set and clear BT_CF_* flags in the header.  0 or -EFAULT. */
int chunk_set_flags(struct chunk *c, uint32_t set, uint32_t clear);
/* Sum of the slots' lost counters; pending (undrained) bytes. */
int chunk_stats(struct chunk *c, uint64_t *lost, uint64_t *pending);
/* The socket census count of chunk 0's header (btrace/ring.h): 0 and
 * *SOCKS, -ENOENT when the tracer keeps none (an older shim), -EFAULT. */
int chunk_census(struct chunk *c, uint32_t *socks);
/* Append " slotN=LOST" to the NUL-terminated BUF (size LEN) for every
 * slot with a non-zero lost counter (N as in log blocks).  0 or -EFAULT. */
int chunk_lost_list(struct chunk *c, char *buf, size_t len);
/*
 * Check that [0, LEN) of BUF is whole records and that offset SPLIT (the
 * end of the ring's lap, or LEN) is a record boundary.  Returns -1 when
 * fine, else the offset of the first bad record.
 */
long chunk_check_records(const uint8_t *buf, size_t len, size_t split);

/* ---- server.c / peer.c ------------------------------------------------------ */

struct server;
struct adopt_scan;

enum peer_state {
	PEER_NEW,      /* accepted, waiting for HELLO or CTL */
	PEER_LIVE,     /* a tracer: chunks mapped, drained */
	PEER_CLOSING,  /* socket gone (EOF, BYE): drain what is left, free */
	PEER_CTL,      /* a control client: replied, closing */
};

struct peer {
	TAILQ_ENTRY(peer) entry;
	struct server *srv;
	unsigned id;              /* connection number, for messages */
	int      fd;
	struct event *ev;
	enum peer_state state;
	pid_t    cred_pid;
	uid_t    cred_uid;
	gid_t    cred_gid;
	uint64_t ring_id;
	uint32_t pid;
	char     exe[256];
	struct chunk *chunk[BT_RING_MAX_CHUNKS];
	unsigned nchunks;
	uint64_t bytes;           /* drained from this peer */
	uint64_t blocks;
	struct census *census;    /* census.c: its sockets, if it is looked at */
	int      welcome_due;     /* HELLO read, WELCOME not sent yet (peer.c) */
	int      adopted;         /* no socket: its chunks were found in /proc
				     (adopt.c); closing from the start */
};

TAILQ_HEAD(peer_list, peer);

struct server {
	const struct logd_opts *o;
	struct event_base *base;
	struct event *ev_listen;    /* the listening socket (server.c) */
	struct event *ev_drain, *ev_more, *ev_tick, *ev_accept;
	struct event *ev_welcome;   /* peer.c: WELCOMEs still owed */
	unsigned welcomes_owed;     /* peers with welcome_due set */
	struct event *ev_sig[3];
	struct peer_list peers;
	unsigned npeers;
	unsigned next_id;
	struct store *store;
	struct notes notes;
	uint8_t *buf;             /* BT_RING_MAX_SLOT bytes: one slot's copy */
	int      disk_err;        /* errno of the failing write, 0 when fine */
	uint64_t disk_err_since;  /* monotonic ns */
	uint32_t flags;           /* BT_CF_* given to every chunk */
	int      stopping;
	int      ctl_stop;        /* stop asked by a control command */
	int      exit_code;
	uint64_t peers_seen, peers_dropped, peers_refused;
	uint64_t peers_lazy;       /* of peers_seen: from the lazy listener */
	int      lazy_fd;          /* the lazy listener (docs/logd.md "Forked
				     children"), or -1 */
	const char *logdir;       /* absolute DIR/HOST, for WELCOME */
	uint64_t blocks_written;  /* tracer blocks, for the test hook */
	uint64_t crash_after;     /* $BTRACE_LOGD_CRASH_AFTER (tests only) */
	uint64_t key;             /* chunks' logd_key: its socket's path */
	struct adopt_scan *adopt; /* adopt.c, while it looks */
};

/* server.c */
/* Run bp-logd on the listening socket LFD (and LAZY, the lazy listener,
 * or -1) until stopped; returns the exit status.  Takes ownership of LFD,
 * LAZY and STORE. */
int server_run(const struct logd_opts *o, int lfd, int lazy,
	       struct store *store);
/* Accept what waits on the lazy listener (drain timer, pause, stop). */
void server_accept_lazy(struct server *srv);
/* Drain every slot of P now, ignoring the budget.  Returns 0, or -errno
 * of a disk error (the rest stays in the ring), or 1 when P was freed. */
int server_drain_peer(struct server *srv, struct peer *p);
/* Drain one slot of P; returns bytes, or -errno (disk), or -EPROTO/-EFAULT
 * after which P has been dropped and freed. */
long server_drain_slot(struct server *srv, struct peer *p, struct chunk *c,
		       unsigned i);
/* Note a disk error / recovery (once). */
void server_disk_error(struct server *srv, int err);
/* Control commands: fill TEXT with the reply; returns 0 or -errno. */
int server_control(struct server *srv, unsigned cmd, char *text, size_t len);

/* adopt.c: the rings a bp-logd killed on this socket left (docs/logd.md,
 * "Crashes") */
/* The key of the socket at PATH (its real path hashed; never 0). */
uint64_t adopt_key(const char *path);
/* Start looking through /proc (a few processes per turn of SRV's loop)
 * for tracers whose chunks carry SRV's key and that are not connected:
 * each becomes a closing peer that the drain passes empty (or hand to
 * the tracer when it reconnects). */
void adopt_start(struct server *srv);
/* Stop looking (done, or bp-logd stops). */
void adopt_stop(struct server *srv);

/* census.c: naming tracers that do their network I/O past libc
 * (docs/logd.md, "Programs that cannot be traced") */
/* P said HELLO: remember the sockets it holds now (inherited, its own),
 * unless its chunk 0, already mapped, says it can never be named. */
void census_hello(struct peer *p);
/* P's tracer listed the N sockets it held at HELLO itself (BT_LM_CENSUS):
 * census_hello takes them instead of looking.  0 or -ENOMEM. */
int census_given(struct peer *p, const uint64_t *ino, unsigned n);
/* Forget P's census state. */
void census_free(struct peer *p);
/* Once a second: look at the live tracers whose shim saw no socket call,
 * and name those that hold new sockets in two consecutive looks. */
void census_tick(struct server *srv);

/* peer.c */
/* Accept a new connection FD (already non-blocking). */
void peer_accept(struct server *srv, int fd);
/* Drop P: one line naming its pid and REASON, a note, then free it. */
void peer_drop(struct peer *p, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Let an adopted P go (adopt.c): its tracer drains a slot itself (WHY);
 * one line with -v and a PEER_GONE note, not a drop: nothing is lost. */
void peer_leave_to_tracer(struct peer *p, const char *why);
/* Free P once nothing is left to drain (PEER_CLOSING).  Returns 1 if freed. */
int peer_reap(struct peer *p);
/* Read and handle every packet already queued on P's socket (shutdown). */
void peer_read_pending(struct peer *p);
/* The timer of HELLOs whose chunk 0 did not follow: answer them now. */
void peer_welcome_late(struct server *srv);
/* Free P and everything it holds, unconditionally. */
void peer_free(struct peer *p);
/* Set P's state (every transition goes through here). */
void peer_set_state(struct peer *p, enum peer_state st);
const char *peer_state_name(enum peer_state st);

#endif /* LOGD_LOGD_H */
