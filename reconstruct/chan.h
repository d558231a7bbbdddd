/*
 * chan.h - processes, their fd tables, channel ends and connections.
 * Every function of chan.c is named rc_chan_* (rc_chan_proc_*, rc_chan_fd_*,
 * rc_chan_conn_*, rc_chan_end_*, rc_chan_q_*).
 *
 *   end       a channel end (struct rc_end): what one or more fds refer
 *             to; created by a CHAN record, shared across fork, kept
 *             across exec; destroyed (and its row written) when no fd
 *             refers to it any more.
 *   conn      a connection (struct rc_conn): the ends pass 1 paired.  Per
 *             direction (index = the sending side) it queues the send
 *             records a traced receiver has not consumed yet; a receive
 *             is paired with the send covering its bytes, never by time.
 *   proc      a process (struct rc_proc): its fd table, which lives across
 *             exec; fork and spawn copy it.
 *
 * Offsets are absolute: a record's offset plus its fd's base, which is 0
 * except for ends an exec'd image announced again (its shim counts from
 * the first byte it saw).
 */
#ifndef RC_CHAN_H
#define RC_CHAN_H

#include "span.h"

#define RC_OPEN_END  UINT64_MAX    /* a send whose end is not known yet */
/* The merge key a receive from side SIDE of connection CONN waits on. */
#define RC_KEY_RECV(conn, side) \
	((uint64_t)8 << 56 | (uint64_t)(conn) << 1 | (uint64_t)(side))
/* Waiting for the earlier bytes of an end's direction (byte order). */
#define RC_KEY_ORDER(chan, dir) \
	((uint64_t)9 << 56 | (uint64_t)(chan) << 1 | (uint64_t)(dir))

enum { RC_DIN = BT_DIR_IN, RC_DOUT = BT_DIR_OUT };

struct rc_sent {
	uint64_t off, end;       /* [off, end); end RC_OPEN_END until its MSG */
	int64_t  t_begin, t_end;
	uint64_t req, span, msg;
	uint32_t dom;
	uint8_t  kind;           /* bt_msg_kind, or 0 for DATA */
	uint8_t  resolved;       /* req is final (not "maybe rule 5") */
	uint8_t  client_root;
};

struct rc_dirq {
	struct rc_sent *v;
	uint32_t head, n, cap;   /* ring buffer, cap a power of two */
	uint64_t hwm;            /* bytes below are covered by resolved sends,
				    contiguously */
	uint8_t  seeded;         /* a send was pushed: hwm starts there */
	uint8_t  parked;         /* a receiver waits on this direction */
	uint8_t  untraced;       /* a wait was given up: sender untraced */
};

struct rc_conn {
	uint32_t id;
	struct rc_conninfo info; /* pass 1's count of its ends */
	uint32_t pending[3];     /* CHAN records of each side not yet seen */
	uint32_t live[2];        /* live ends per side */
	uint32_t unknown_live;   /* live pipe ends whose side is not known */
	struct rc_dirq dir[2];   /* by sending side */
};

struct rc_end {
	struct rc_conn *conn;
	uint64_t channel_id;     /* entry + 1 */
	uint32_t entry, peer_entry;
	uint32_t refs;
	uint8_t  side, kind, role, proto, oneway, dgram, lost_sync;
	uint8_t  how;            /* PROTO's how (enum bt_proto_how); 0: none */
	uint8_t  entry_unknown;  /* pass 1 did not know its side */
	uint8_t  closed_lagging; /* closed while another thread of its
				    process had records of before the close
				    still to come (end_destroy) */
	uint32_t dom, pid;
	uint64_t process_id;
	int32_t  fd;
	struct bt_addr local, remote;
	char    *path;
	uint64_t ino, peer_ino;
	uint64_t hwm[2];         /* highest absolute offset, per direction */
	uint32_t hwm_tid[2];     /* the thread that applied it */
	uint64_t bytes[2], msgs[2];
	struct rc_desig last;    /* the request that last used the channel */
	struct rc_desig want_out;/* who asked to be told it is writable */
	uint8_t  has_want_out;
	uint64_t open_req;
	uint64_t open_span;       /* its server span (the parked detector) */
	int64_t  open_t;
	int64_t  drop_t;         /* the latest time a holder let go of it
				    (rc_chan_end_unref): it closes then */
	struct rc_span *srv, *cli;   /* open exchanges, oldest first */
	struct {                 /* message begun (MSG_BEGIN), per direction */
		int      valid;
		uint64_t off;
		int64_t  t;
		struct rc_desig d;
		struct rc_span *sp; /* in: its server span, opened early */
	} begun[2];
};

struct rc_fdent {
	struct rc_end *end;
	uint64_t base[2];
	int64_t  since;          /* the time of the record that bound it */
};

/* An fd's earlier binding, for records of other threads of the process
 * logged before it changed but merged after (a thread parked on a receive
 * while another closes the fd and opens a new channel under its number). */
struct rc_fdold {
	int32_t  fd;
	struct rc_fdent ent;
	int64_t  until;
};

struct rc_proc {
	uint32_t host, pid;
	uint32_t refs;           /* attached images + lineage snapshots */
	int64_t  drop_t;         /* the latest time a holder let go of it:
				    its descriptors close then */
	struct rc_fdent *fds;
	uint32_t nfds;
	struct rc_fdold *old;    /* oldest first, from index old_first */
	uint32_t old_first, nold, capold;
	struct rc_thr *threads;  /* its threads (the parked detector) */
};

int  rc_chan_init(struct rc_ctx *c);
/* Free whatever is left (after an error; normally nothing is). */
void rc_chan_free(struct rc_ctx *c);

/* ---- processes and fd tables ---- */

/* The process (HOST, PID) if one is known, else NULL. */
struct rc_proc *rc_chan_proc_get(struct rc_ctx *c, uint32_t host, uint32_t pid);
/* A new process with an empty fd table and no reference, reachable by
 * rc_chan_proc_get (replacing an older one of that pid). */
struct rc_proc *rc_chan_proc_new(struct rc_ctx *c, uint32_t host, uint32_t pid);
/* Make P the one rc_chan_proc_get finds for its pid again. */
void rc_chan_proc_show(struct rc_ctx *c, struct rc_proc *p);
/* A child of P (fork, spawn) with a copy of its fd table, holding one
 * reference for the caller. */
struct rc_proc *rc_chan_proc_copy(struct rc_ctx *c, struct rc_proc *p,
				  uint32_t pid, int64_t t);
/* Drop a reference; the last one closes every fd at time T. */
void rc_chan_proc_unref(struct rc_ctx *c, struct rc_proc *p, int64_t t);

/*
 * The fd table is kept by time: T is the time of the record (its own
 * timestamp, the same clock for every thread of a process), not the order
 * in which the merge applies records of different threads.
 * rc_chan_fd_set: FD refers to E with offset bases BASE (NULL: 0) from T
 * on; rc_chan_fd_unbind: FD refers to no channel from T on (a file was
 * opened under its number); rc_chan_fd_drop: the CLOSE record, FD's end is
 * closed at T; rc_chan_fd_get: what FD referred to at T (NULL: nothing).
 * A binding replaced before its CLOSE record was merged is kept (with its
 * end open) until that record comes, or for RC_FD_KEEP_NS of record time
 * if none comes (an implicit close).
 */
int  rc_chan_fd_set(struct rc_ctx *c, struct rc_proc *p, int32_t fd,
		    struct rc_end *e, const uint64_t base[2], int64_t t);
void rc_chan_fd_unbind(struct rc_ctx *c, struct rc_proc *p, int32_t fd,
		       int64_t t);
void rc_chan_fd_drop(struct rc_ctx *c, struct rc_proc *p, int32_t fd,
		     int64_t t);
struct rc_fdent *rc_chan_fd_get(struct rc_proc *p, int32_t fd, int64_t t);

/* ---- ends and connections ---- */

/* Connection ID (from pass 1), created on first use with pass 1's
 * counts INFO; NULL if unknown. */
struct rc_conn *rc_chan_conn_get(struct rc_ctx *c, uint32_t id,
				 const struct rc_conninfo *info);
/* Free CN once no end of it is live and none is still to come. */
void rc_chan_conn_maybe_free(struct rc_ctx *c, struct rc_conn *cn);
/* Side S will never send again: no live end, none still to come. */
int  rc_chan_conn_gone(const struct rc_ctx *c, const struct rc_conn *cn, int s);
/* Does side S of E's connection have an end in any log at all? */
int  rc_chan_end_traced(const struct rc_ctx *c, const struct rc_end *e, int s);
/* A pipe end whose side was not known learns it from direction DIR. */
void rc_chan_end_side(struct rc_end *e, int dir);
/* Drop a reference to E; the last one closes it at time T: its open
 * exchanges are written unanswered and its row is written. */
void rc_chan_end_unref(struct rc_ctx *c, struct rc_end *e, int64_t t);
/* The other end, for people: "addr:port", "unix:/path", "pipe:[ino]"
 * (a message's BT_AK_PEER attribute wins). */
void rc_chan_end_peer(const struct rc_end *e, const struct bt_event *ev,
		      char *buf, size_t len);

/* ---- send queues ---- */

struct rc_sent *rc_chan_q_at(const struct rc_dirq *q, uint32_t i);
/* A zeroed record at the tail (NULL when out of memory). */
/* A send record at offset OFF, kept in offset order (sends on one
 * connection can come from several threads, merged in any order). */
struct rc_sent *rc_chan_q_push(struct rc_ctx *c, struct rc_dirq *q,
			       uint64_t off);
/* The send record covering byte X (or a zero-length one at X). */
struct rc_sent *rc_chan_q_find(const struct rc_dirq *q, uint64_t x);
/* Forget the records the receiver has read past UPTO. */
void rc_chan_q_consume(struct rc_dirq *q, uint64_t upto);
/* Resolved sends of SIDE now cover bytes below UPTO: wake waiters. */
/* Extend the covered prefix through contiguous resolved sends; wakes a
 * receiver waiting on it. */
void rc_chan_q_advance(struct rc_ctx *c, struct rc_conn *cn, int side);
/* The queue a send on E goes to, or NULL if no traced receiver needs
 * it (the receiving side is untraced, or gone). */
struct rc_dirq *rc_chan_send_q(struct rc_ctx *c, struct rc_end *e);

#endif /* RC_CHAN_H */
