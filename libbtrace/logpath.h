/*
 * logpath.h - what the files that get events out of the process share;
 * private to them: emit.c (writing records, thread and process life),
 * ring.c (memfd chunks and their slots), link.c (the bp-logd link),
 * spool.c (writing slots to the spool without bp-logd), own.c (the shim's
 * own descriptors).
 */
#ifndef BT_LOGPATH_H
#define BT_LOGPATH_H

#include "bt.h"

struct bt_chunk {
	int                  memfd;
	struct bt_chunk_hdr *hdr;
	size_t               map_size;
	uint32_t             index, nslots, slot_size;
	int                  sent;       /* registered with the current logd */
};

/* ---- ring.c ---- */
BT_HIDDEN extern struct bt_chunk bt_ring_chunks[BT_RING_MAX_CHUNKS];
BT_HIDDEN extern const uint32_t bt_ring_no_pause; /* before chunk 0 exists */
BT_HIDDEN extern unsigned bt_ring_nchunks;        /* published with release */
BT_HIDDEN extern pthread_mutex_t bt_ring_mu;      /* adding chunks */
/* Chunk C's description for bp-logd. */
BT_HIDDEN void bt_ring_chunk_msg(const struct bt_chunk *c, struct bt_lm_chunk *m);
/* Send chunk C (its memfd) to bp-logd; C->sent says if it went. */
BT_HIDDEN void bt_ring_chunk_register(struct bt_chunk *c);
/* Create chunk number bt_ring_nchunks.  Called with bt_ring_mu held. */
BT_HIDDEN struct bt_chunk *bt_ring_chunk_create(void);
/* Claim a slot for this thread, adding chunks while there is none.
 * 0 or -1. */
BT_HIDDEN int bt_ring_slot_claim(void);

/* ---- link.c ---- */
enum { LINK_DOWN = 0, LINK_UP = 1 };
BT_HIDDEN extern int bt_link_fd;                /* the socket to bp-logd */
BT_HIDDEN extern int bt_link_state;             /* LINK_* */
BT_HIDDEN extern uint64_t bt_link_retry_at;     /* monotonic ns of the next try */
BT_HIDDEN extern uint32_t bt_link_logd_flags;   /* BT_CF_* of the last WELCOME */
BT_HIDDEN extern uint32_t bt_link_logd_features; /* BT_LW_* of the last WELCOME */
BT_HIDDEN extern pthread_mutex_t bt_link_mu;
/* Send MSG (LEN bytes, FD_TO_PASS if >= 0) to bp-logd: 0 or -errno. */
BT_HIDDEN int bt_link_send(const void *msg, size_t len, int fd_to_pass);
/* Close the link; every chunk must be sent again to the next bp-logd. */
BT_HIDDEN void bt_link_drop(void);
/* One line on the traced program's stderr, once per process and KIND. */
BT_HIDDEN void bt_link_warn_once(unsigned kind, const char *text);
/* After fork, in the child (bt_emit_atfork_child): the parent's
 * connection closed; whether the child's first goes to the lazy listener. */
BT_HIDDEN void bt_link_atfork_child(uint32_t parent_flags, uint32_t census);
/* May an image this one execs start without waiting for bp-logd? */
BT_HIDDEN int bt_link_exec_lazy_ok(void);
/* This image was exec'd so: its first connection is a lazy one. */
BT_HIDDEN void bt_link_exec_lazy(void);
/* Connect and register every chunk.  Called with bt_link_mu held. */
BT_HIDDEN int bt_link_connect(void);
/* Is bp-logd still there (marks the link down if not)?  Called with
 * bt_link_mu held. */
BT_HIDDEN int bt_link_alive(void);
/* Try to (re)connect if it is time to.  Returns 1 if the link is up. */
BT_HIDDEN int bt_link_ensure(void);
/* Ask bp-logd to drain slot S now. */
BT_HIDDEN void bt_link_kick(struct bt_slot *s);
/* Send the CHUNK of every chunk made while the link was up but its
 * message could not go (the socket full, too many descriptors in
 * flight).  Returns how many are still not sent.  Called with
 * bt_link_mu held, the link up. */
BT_HIDDEN unsigned bt_link_register_unsent(void);

/* ---- spool.c ---- */
BT_HIDDEN extern int bt_spool_fd;
BT_HIDDEN extern bt_mutex_t bt_spool_mu;
/* Write slot I of chunk C's undrained bytes to the spool and advance its
 * tail. */
BT_HIDDEN int bt_spool_drain(struct bt_chunk *c, unsigned i);

/* ---- own.c ---- */
BT_HIDDEN extern pthread_mutex_t bt_own_mu;
/* Count *VAR (a descriptor variable) among the shim's own / forget it. */
BT_HIDDEN void bt_own_register(int *var);
BT_HIDDEN void bt_own_unregister(int *var);

/* ---- emit.c ---- */
BT_HIDDEN extern pthread_key_t bt_emit_thread_key; /* its destructor ends a
						      thread's stream */
BT_HIDDEN extern int bt_emit_thread_key_ok;

#endif /* BT_LOGPATH_H */
