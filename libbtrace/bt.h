/*
 * bt.h - libbtrace internals shared by its modules.
 *
 *   shim.c   exported wrappers: one-liners into the modules below
 *   real.c   the real libc functions (wrapped.def)
 *   conf.c   configuration from the environment, protocol selection rules
 *   emit.c   per-thread rings shared with bp-logd, the logd link, spooling
 *   fdtab.c  fd table and channel objects
 *   chan.c   channel identity (addresses, inodes) and processor choice
 *   io.c     read/write families, processors and event isolation
 *   ready.c  poll/select/epoll: buffered input and one fd per call
 *   proc.c   start-up, fork, exec, spawn, threads
 *   names.c  getaddrinfo and friends as DNS client spans
 *   redact.c secrets taken out of message attributes before logging
 *
 * Locking: the fd table is read without locks (entries are atomic words,
 * channel objects are type-stable and never freed); a channel's mutex
 * guards its processor state and isolation buffer and is never held across
 * a blocking call.  Global locks (chunk list, logd link, epoll sets) are
 * taken only on slow paths and re-initialised in a forked child.
 */
#ifndef BT_BT_H
#define BT_BT_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "btrace/event.h"
#include "btrace/proto.h"
#include "btrace/ring.h"
#include "real.h"

#define BT_HIDDEN __attribute__((visibility("hidden")))
#define BT_TLS    __attribute__((tls_model("initial-exec"))) __thread
#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* ---- a light mutex ---------------------------------------------------- */

/*
 * The lock of a channel and of an epoll set, taken twice per traced call:
 * one atomic instruction each way when uncontended (pthread_mutex_lock and
 * unlock cost some 55 instructions more per round trip), a futex wait when
 * contended.  0 free, 1 locked, 2 locked with waiters.  Process-private;
 * a forked child re-initialises it (bt_fdtab_atfork_child).
 */
typedef struct { int v; } bt_mutex_t;
BT_HIDDEN void bt_mutex_lock_slow(bt_mutex_t *m, int c);
BT_HIDDEN void bt_mutex_wake(bt_mutex_t *m);

static inline void bt_mutex_init(bt_mutex_t *m)
{
	__atomic_store_n(&m->v, 0, __ATOMIC_RELEASE);
}
static inline void bt_mutex_lock(bt_mutex_t *m)
{
	int c = 0;
	if (__builtin_expect(__atomic_compare_exchange_n(&m->v, &c, 1, 0,
			     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED), 1))
		return;
	bt_mutex_lock_slow(m, c);
}
static inline void bt_mutex_unlock(bt_mutex_t *m)
{
	if (__builtin_expect(__atomic_exchange_n(&m->v, 0, __ATOMIC_RELEASE) == 2, 0))
		bt_mutex_wake(m);
}

/* ---- configuration (conf.c) ------------------------------------------- */

enum bt_rule_kind { BT_RK_PORT = 1, BT_RK_UNIX = 2, BT_RK_EXE = 3 };

struct bt_rule {
	uint8_t  kind;              /* enum bt_rule_kind */
	uint8_t  proto;             /* enum bt_proto_id; 0 = "none" */
	uint16_t nranges;
	uint16_t lo[16], hi[16];    /* port ranges */
	char    *pattern;           /* unix glob or exe regex source */
	void    *re;                /* pcre2_code * for exe rules */
};

struct bt_conf {
	int      enabled;           /* 0: pure pass-through */
	int      isolation;         /* event isolation on */
	int      follow;            /* keep LD_PRELOAD/BTRACE_* across exec */
	uint32_t slot_size;         /* ring slot bytes (power of two) */
	char     logd_path[108];
	char     spool_dir[PATH_MAX];
	char     lib_path[PATH_MAX];/* this library, for LD_PRELOAD */
	struct bt_rule *rules;
	unsigned nrules;
	unsigned exe_proto;         /* processor for pipes/inherited fds by exe */
	unsigned redact;            /* BT_RD_* from BTRACE_REDACT */
};
BT_HIDDEN extern struct bt_conf bt_conf;

/* Read BTRACE_* from the environment; parse rules.  Idempotent. */
BT_HIDDEN void bt_conf_init(void);
/* Parse rules text (DESIGN section 9) into *OUT; returns count or -EINVAL
 * (ERRLINE gets the bad line number). */
BT_HIDDEN int bt_rules_parse(const char *text, int semicolons,
			     struct bt_rule **out, unsigned *n, int *errline);
/* Processor id for a channel by the rules (0 none), *HOW set. */
BT_HIDDEN int bt_rules_match(uint16_t lport, uint16_t rport, int has_ports,
			     const char *unix_path, int *how);

/* ---- redaction (redact.c, docs/security.md) ---------------------------- */

#define BT_RD_SQL_LITERALS  0x1u    /* SQL string and numeric literals -> ? */
#define BT_RD_QUERY_STRINGS 0x2u    /* URL targets cut after '?' */
#define BT_RD_CMDLINE       0x4u    /* command lines: the program only */
#define BT_RD_ALL           0x7u

/* Parse a BTRACE_REDACT list into *FLAGS.  -EINVAL for an unknown word
 * (copied to BAD): *FLAGS is then BT_RD_ALL, so a typo hides more, never
 * less. */
BT_HIDDEN int bt_redact_parse(const char *spec, unsigned *flags, char *bad,
			      size_t badlen);
/* Rewrite SQL text / a URL target of N bytes into OUT (at most CAP bytes;
 * never longer than N).  Returns the length; *CUT set if CAP was short. */
BT_HIDDEN size_t bt_redact_sql(const char *in, size_t n, char *out,
			       size_t cap, unsigned flags, int *cut);
BT_HIDDEN size_t bt_redact_url(const char *in, size_t n, char *out,
			       size_t cap, unsigned flags, int *cut);
/* Rewrite a command line (N bytes of NUL-separated arguments, at most
 * 512) in place; returns its new length. */
BT_HIDDEN size_t bt_redact_cmdline(char *s, size_t n, unsigned flags);
/* Does EV carry an attribute the rules may rewrite (cheap test)? */
BT_HIDDEN int bt_redact_needed(const struct bt_attr *attr, unsigned nattr,
			       unsigned flags);
/* Point EV's rewritten attributes into BUF; 1 if any changed. */
BT_HIDDEN int bt_redact_attrs(struct bt_event *ev, char *buf, size_t cap,
			      unsigned flags);
/* bt_redact_attrs with bt_conf.redact, then bt_emit. */
BT_HIDDEN void bt_redact_emit(struct bt_event *ev);

/* ---- process and thread state ----------------------------------------- */

struct bt_chunk;

/* Per-thread ring slot handle (emit.c) */
struct bt_slot {
	struct bt_chunk    *chunk;
	unsigned            idx;
	struct bt_slot_hdr *sh;
	uint8_t            *data;
	uint32_t            size;
	uint64_t            head;      /* private copy of sh->head */
	uint64_t            prev_ts;
	uint32_t            need_time; /* next record must be BT_EV_TIME */
	uint32_t            dict_failed; /* mapping the dictionary failed */
	struct bt_ev_dict  *dict;      /* the stream's attribute dictionary
					  (docs/log-format.md): mapped at
					  the thread's first value, kept
					  across slots, unmapped at its
					  exit; NULL: values go out plain */
};

struct bt_thread {
	int         tid;
	int         depth;          /* wrapper nesting: >1 means re-entered */
	int         noslot;         /* claiming a slot failed: do not retry */
	uint64_t    epoch;          /* readiness calls made by this thread */
	uint64_t    dropped;        /* events not recorded, not yet reported */
	uint32_t    drop_reason;    /* enum bt_drop_reason of the last one */
	struct bt_slot slot;
	int         have_slot;
	uint32_t    ready_rr;       /* rotation cursor for poll/select */
	const void *epc_set;        /* the last epoll data -> fd answer */
	uint64_t    epc_gen;        /* (ready.c epmap_lookup) */
	uint64_t    epc_data;
	int         epc_fd;
	uint64_t    paused_calls;   /* calls not traced while paused, not yet
				       reported (DROP, then READY -1) */
	uint64_t    noreq_mark;     /* slot head just after our last READY
				       that began work for no request (a
				       timeout, no channel, dark input) */
	uint64_t    pause_lost;     /* records bt_emit dropped because paused
				       (only grows: a call that sees it move
				       lost one, its channel goes dark) */
	uint64_t    out_ts;         /* when the write call being logged began
				       (0: none); its OUT records carry it */
	struct bt_chan *out_ch;     /* the channel that call writes to, and */
	uint32_t    out_gen;        /* its generation, taken before the call */
};
BT_HIDDEN extern BT_TLS struct bt_thread bt_self;

struct bt_procinfo {
	pid_t    pid;
	pid_t    ppid;
	uint64_t ring_id;
	int      started;           /* PROC_START written */
	uint32_t start_flags;       /* BT_PF_* for PROC_START */
	int      fork_ptid;         /* parent thread, when forked */
	char     exe[PATH_MAX];
	char     cmdline[512];
	uint32_t cmdline_len;
	char     host[64];
};
BT_HIDDEN extern struct bt_procinfo bt_proc;

/* Current thread id (cached per thread). */
BT_HIDDEN int bt_gettid(void);

static inline uint64_t bt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Wrapper entry/exit.  BT_ENTER returns 0 when the shim must pass this call
 * straight through: tracing disabled, or re-entered (a signal handler, or
 * libc calling back into a wrapper while the shim is working).
 */
static inline int bt_enter(void)
{
	if (unlikely(!bt_conf.enabled))
		return 0;
	if (unlikely(bt_self.depth++ > 0))
		return 0;
	return 1;
}
static inline void bt_leave(void)
{
	bt_self.depth--;
	bt_self.out_ts = 0;
}
/* bt_enter() returned 0: undo its count only if it made one. */
static inline void bt_leave_pass(void)
{
	if (likely(bt_conf.enabled))
		bt_self.depth--;
}

/* ---- events (emit.c) ------------------------------------------------- */

/* Record EV in this thread's ring (EV->ts filled if 0).  Never blocks
 * longer than bounded waits; a record that cannot be written is counted
 * and reported by a later BT_EV_DROP. */
BT_HIDDEN void bt_emit(struct bt_event *ev);
/* Record a record of integer fields only (READY, MSG_BEGIN, DATA, ...):
 * V holds its N fields in schema order as written (signed ones zigzagged,
 * see bt_ev_encode_ints); TS 0 means now.  Same bytes as bt_emit. */
BT_HIDDEN void bt_emit_ints(unsigned type, uint64_t ts, unsigned n,
			    const uint64_t *v);
/* Record a MSG from its fields (M->ts 0 means now).  Same bytes as
 * bt_emit of the same MSG. */
BT_HIDDEN void bt_emit_msg(struct bt_msg_rec *m);
/* Record an OPEN of FD (its result too) now: LEN bytes of PATH, LEN <=
 * BT_EV_MAX_STR.  Same bytes as bt_emit of the same OPEN. */
BT_HIDDEN void bt_emit_open(int fd, uint32_t flags, const char *path,
			    uint32_t len);
/* The same message as a struct bt_event (for the general encoder). */
BT_HIDDEN void bt_msg_rec_event(const struct bt_msg_rec *m, struct bt_event *ev);
/* Claim this thread's ring slot now and write TIME, THREAD_START (and
 * PROC_START for a process's first thread). */
BT_HIDDEN void bt_emit_claim(void);
/*
 * Pausing (docs/security.md "Pausing"): bp-logd sets BT_CF_PAUSED in the
 * header of chunk 0, which bt_pause_word points at (at a zero word before
 * the first chunk and in a forked child until it has its own).  While it
 * is set the wrappers pass calls through and count them (bt_paused_call);
 * a channel that moves bytes, or loses a record, while paused becomes
 * dark: untraced until it is closed (bt_chan_go_dark).
 */
BT_HIDDEN extern const volatile uint32_t *bt_pause_word;
static inline int bt_paused(void)
{
	return unlikely(*bt_pause_word & BT_CF_PAUSED);
}
/* A call passed through untraced because of a pause.  The thread's first
 * record after the resume reports the count (DROP, reason paused) and says
 * that the thread's work belongs to no request (READY -1). */
static inline void bt_paused_call(void)
{
	bt_self.paused_calls++;
}
/* Record EV even while paused (only CLOSE: the log's descriptors stay
 * true across a pause). */
BT_HIDDEN void bt_emit_always(struct bt_event *ev);
/* The fragment that follows works for no request (READY -1), unless that
 * is what this thread last wrote: a read from a channel that is not traced
 * (dark) starts work the log cannot attribute. */
BT_HIDDEN void bt_emit_unknown_input(void);
/*
 * Is this thread's last record a READY that began work for no request
 * (a timeout, a descriptor bp-reconstruct knows no channel end for, dark
 * input: docs/events.md "READY"), with nothing recorded or lost since?
 * Then another such READY would only begin another empty fragment for no
 * request, and it is not written (nor the clock read for it).
 */
static inline int bt_noreq_current(void)
{
	return bt_self.have_slot && bt_self.noreq_mark == bt_self.slot.head &&
	       !bt_self.dropped && !bt_self.paused_calls && !bt_paused();
}
/* The record just written, if any (the slot head moved from HEAD0), was
 * such a READY. */
static inline void bt_noreq_mark(uint64_t head0)
{
	if (bt_self.have_slot && bt_self.slot.head != head0)
		bt_self.noreq_mark = bt_self.slot.head;
}
/* Connect to bp-logd and register the ring (start-up; retried later). */
BT_HIDDEN void bt_emit_start(void);
/* About to block: without bp-logd, spool this thread's ring (unless
 * bt_idle_spool is 0: the unit tests read records from the ring). */
BT_HIDDEN void bt_emit_idle(void);
BT_HIDDEN extern int bt_idle_spool;
/* Drain every slot to bp-logd or the spool before exec/exit. */
BT_HIDDEN void bt_emit_flush(int final);
/* Thread ends: THREAD_EXIT and release the slot. */
BT_HIDDEN void bt_emit_thread_exit(void);
/* fork: prepare / parent / child hooks (locks, fresh ring in the child) */
BT_HIDDEN void bt_emit_atfork_prepare(void);
BT_HIDDEN void bt_emit_atfork_parent(void);
BT_HIDDEN void bt_emit_atfork_child(void);
/* Is FD one of the shim's own descriptors? */
BT_HIDDEN int bt_is_own_fd(int fd);
/* Move the shim's descriptor away from FD (the app wants that number). */
BT_HIDDEN void bt_own_fd_evict(int fd);
/* Duplicate FD to a high, close-on-exec number the app will not pick. */
BT_HIDDEN int bt_own_fd_hide(int fd);

/* ---- fd table and channels (fdtab.c, chan.c) -------------------------- */

#define BT_FD_NONE   ((uintptr_t)0)   /* never seen */
#define BT_FD_PLAIN  ((uintptr_t)1)   /* seen: nothing to trace (file, ...) */
#define BT_FD_OWN    ((uintptr_t)2)   /* the shim's own descriptor */
#define BT_FD_DARK   ((uintptr_t)3)   /* never announced, moved bytes while
					 tracing was paused: untraced until
					 closed */
/* Otherwise a pointer: a channel (64-byte aligned, low bit clear) or an
 * epoll set (struct bt_epset *, tagged with the low bit, see ready.c). */
#define BT_FD_IS_CHAN(v)  ((v) > 3 && !((v) & 1))
#define BT_FD_IS_EPSET(v) ((v) > 3 && ((v) & 1))

struct bt_epreg {                     /* one registration in an epoll set */
	int      epfd;
	uint32_t events;
	uint64_t data;
	uint8_t  armed;                   /* false after a ONESHOT report */
	uint8_t  told;                    /* held input reported here (ET):
					     not again until the app reads */
};

/* Registrations beyond a channel's first two (a socket in three or more
 * epoll sets: one set per thread, each watching the connection).  Chunks
 * are added, never freed: they stay with the channel object (type-stable,
 * reused) so a reader racing a change never touches freed memory. */
#define BT_EPREG_MORE 4
struct bt_epreg_more {
	struct bt_epreg r[BT_EPREG_MORE];
	struct bt_epreg_more *next;
};

struct bt_chan {
	bt_mutex_t mu;
	struct bt_chan *next_all;         /* every channel ever made */
	struct bt_chan *next_free;
	uint32_t gen;                     /* bumped on every reuse */
	struct bt_epreg_more *ep_more;    /* registrations beyond ep[]: kept
					     (emptied) across reuse */
	/* ---- everything from here on is zeroed for a new channel ---- */
	int      refs;                    /* fds referring to it */

	uint8_t  kind;                    /* enum bt_chan_kind */
	uint8_t  role;                    /* enum bt_chan_role */
	uint8_t  pp_role;                 /* enum bt_role */
	uint8_t  transport;               /* enum bt_transport */
	uint8_t  announced;               /* BT_EV_CHAN written */
	uint8_t  sniff;                   /* processor not chosen yet */
	uint8_t  lost;                    /* processor gave up */
	uint8_t  eof[2];
	uint8_t  ended;                   /* this call handed over a message end */
	uint8_t  dark;                    /* untraced until closed (pausing) */

	const struct bt_proto_ops *pp;
	void    *pps;                     /* processor state */

	uint64_t off[2];                  /* stream offsets, per direction */
	uint64_t unseen;                  /* bytes written by nested calls (a
					     signal handler inside the shim),
					     added atomically, folded into
					     off[OUT] by the next call */
	uint64_t msg_start[2];            /* offset of the open message */
	uint8_t  msg_open[2];             /* bytes of a message moved */
	uint8_t  msg_begun[2];            /* MSG_BEGIN written for it */

	/* isolation buffer: bytes read from the kernel, not yet handed over */
	uint8_t *buf;
	uint32_t cap, rd, wr;
	uint32_t scanned;                 /* from rd: bytes seen by the processor */
	uint8_t  pending;                 /* a message ends inside the buffer */
	uint32_t boundary;                /* ... this many bytes after rd */
	struct bt_msg pmsg;               /* that message */

	/* EAGAIN-once after a boundary on a non-blocking fd */
	uint8_t  nb;                      /* 0 unknown, 1 blocking, 2 O_NONBLOCK */
	uint8_t  kfull;                   /* last real read filled the request:
					     the kernel may hold more */
	uint8_t  eagain_armed;
	uint64_t eagain_epoch;
	pid_t    eagain_tid;
	uint8_t  owed;                    /* readiness owed (ET, spurious ok) */
	uint8_t  et_told;                 /* held input reported to an ET set
					     (that registration's told): not
					     again there until the app reads */
	uint8_t  in_ready_list;

	struct bt_epreg ep[2];            /* epoll registrations (then ep_more) */
};

/* Walking a channel's epoll registrations: ep[0], ep[1], then the chunks
 * of ep_more (BT_EPREG_EACH).  Free slots (epfd < 0) are included. */
struct bt_epiter {
	struct bt_epreg *r, *end;
	struct bt_epreg_more *next;
};

static inline struct bt_epreg *bt_epreg_first(const struct bt_chan *ch,
					      struct bt_epiter *it)
{
	it->r = (struct bt_epreg *)ch->ep;
	it->end = it->r + 2;
	it->next = __atomic_load_n(&ch->ep_more, __ATOMIC_ACQUIRE);
	return it->r;
}

static inline struct bt_epreg *bt_epreg_next(struct bt_epiter *it)
{
	if (++it->r < it->end)
		return it->r;
	if (likely(!it->next))
		return NULL;
	it->r = it->next->r;
	it->end = it->r + BT_EPREG_MORE;
	it->next = __atomic_load_n(&it->next->next, __ATOMIC_ACQUIRE);
	return it->r;
}

#define BT_EPREG_EACH(ch, r, it) \
	for (struct bt_epreg *r = bt_epreg_first((ch), &(it)); r; \
	     r = bt_epreg_next(&(it)))

/* The table (fdtab.c): BT_FDTAB_L1 pointers to arrays of BT_FDTAB_L2
 * words, allocated on first use.  Descriptors beyond pass through. */
#define BT_FDTAB_L2_BITS 10
#define BT_FDTAB_L2 (1u << BT_FDTAB_L2_BITS)
#define BT_FDTAB_L1 1024u
#define BT_FDTAB_LIMIT (BT_FDTAB_L1 * BT_FDTAB_L2)
BT_HIDDEN extern uintptr_t *bt_fdtab[BT_FDTAB_L1];

/* Look up FD's table word (no lock): two loads, inlined on the hot paths.
 * See BT_FD_*; else a bt_chan * (or a tagged epoll set). */
static inline uintptr_t bt_fd_get(int fd)
{
	uintptr_t *l2;

	if (unlikely((unsigned)fd >= BT_FDTAB_LIMIT))
		return BT_FD_PLAIN;
	l2 = __atomic_load_n(&bt_fdtab[(unsigned)fd >> BT_FDTAB_L2_BITS],
			     __ATOMIC_ACQUIRE);
	if (!l2)
		return BT_FD_NONE;
	return __atomic_load_n(&l2[(unsigned)fd & (BT_FDTAB_L2 - 1)],
			       __ATOMIC_ACQUIRE);
}

/* Has the shim nothing to do with data on FD?  It was seen and is no
 * channel: a file, an eventfd, an epoll set, one of the shim's own.  (A
 * descriptor never seen is classified by the slow path.) */
static inline int bt_fd_passes(int fd)
{
	uintptr_t w = bt_fd_get(fd);
	return w != BT_FD_NONE && !BT_FD_IS_CHAN(w);
}
/* Set FD's word; the old channel (if any) loses a reference. */
BT_HIDDEN void bt_fd_set(int fd, uintptr_t v);
/* FD refers to CH from now on (takes a reference). */
BT_HIDDEN void bt_fd_set_chan(int fd, struct bt_chan *ch);
/* Forget FD (close): returns the channel it referred to, if any, whose
 * reference the caller must drop with bt_chan_put. */
BT_HIDDEN struct bt_chan *bt_fd_take(int fd);
/* New channel object, zeroed, refs = 0, mutex ready. */
BT_HIDDEN struct bt_chan *bt_chan_new(void);
BT_HIDDEN void bt_chan_get(struct bt_chan *ch);
/* Drop a reference; on the last one the processor is finished and the
 * object recycled.  FD is the fd being closed, for the log. */
BT_HIDDEN void bt_chan_put(struct bt_chan *ch);
/* Re-initialise every channel mutex (forked child). */
BT_HIDDEN void bt_fdtab_atfork_child(void);

/*
 * The channel for FD, classifying an fd never seen before (inherited or
 * made by libc internally) on first use.  NULL: nothing to trace.
 */
BT_HIDDEN struct bt_chan *bt_chan_of(int fd);
/* FD's word; a descriptor never seen that is no socket or FIFO is marked
 * seen first (BT_FD_PLAIN, as bt_chan_of would), a socket or FIFO never
 * seen stays BT_FD_NONE (no channel is opened for it here). */
BT_HIDDEN uintptr_t bt_fd_seen(int fd);

/* Channel identity and processor choice (chan.c) */
BT_HIDDEN struct bt_chan *bt_chan_open(int fd, int role, int fd2,
				       const struct sockaddr *peer,
				       socklen_t peerlen, long result);
BT_HIDDEN void bt_chan_pipe(int rfd, int wfd);
BT_HIDDEN void bt_chan_socketpair(int fd0, int fd1, int type);
/* Attach processor P (how = enum bt_proto_how) and log it. */
BT_HIDDEN void bt_chan_attach(struct bt_chan *ch, int fd,
			      const struct bt_proto_ops *p, int how,
			      const char *why);
/* Choose by sniffing the first bytes (channel locked). */
BT_HIDDEN void bt_chan_sniff(struct bt_chan *ch, int fd, int dir,
			     const uint8_t *p, size_t n);

/* ---- I/O and isolation (io.c) ---------------------------------------- */

/* Direction ended (read returned 0, shutdown, close): tell the processor. */
BT_HIDDEN void bt_io_eof(struct bt_chan *ch, int fd, int dir);
/* Account and process N bytes written to FD (iov form). */
BT_HIDDEN void bt_io_out(struct bt_chan *ch, int fd, const struct iovec *iov,
			 int iovcnt, size_t n, int dgram);
/* A channel's buffered-input state changed: readiness bookkeeping. */
BT_HIDDEN void bt_io_ready_changed(struct bt_chan *ch);
/*
 * CH (referred to by FD) stops being traced until it is closed: bytes
 * moved or records were lost while tracing was paused, so its offsets and
 * framing no longer match its peer's.  Once: its end is closed in the log
 * (CLOSE FD, written even while paused); from then on nothing about it is
 * recorded.  Input it holds is still served first.
 */
BT_HIDDEN void bt_chan_go_dark(struct bt_chan *ch, int fd);
/* A call moved bytes on FD while paused: its channel goes dark, or a
 * descriptor never seen becomes BT_FD_DARK. */
BT_HIDDEN void bt_fd_paused_io(int fd);
/* Is FD's channel dark (or FD BT_FD_DARK)? */
static inline int bt_fd_dark(uintptr_t w)
{
	return w == BT_FD_DARK ||
	       (BT_FD_IS_CHAN(w) && ((struct bt_chan *)w)->dark);
}

/* ---- readiness (ready.c) --------------------------------------------- */

BT_HIDDEN extern int bt_ready_count;      /* channels with owed readiness */
BT_HIDDEN void bt_ready_add(struct bt_chan *ch);
BT_HIDDEN void bt_ready_del(struct bt_chan *ch);
/* FD was closed: forget its epoll registrations / epoll set. */
BT_HIDDEN void bt_ready_fd_closed(int fd, uintptr_t word);
BT_HIDDEN void bt_ready_atfork_child(void);

/* ---- processes (proc.c) ---------------------------------------------- */

BT_HIDDEN void bt_init(void);
BT_HIDDEN extern int bt_initialized;

#endif /* BT_BT_H */
