/*
 * proc.h - process and thread state, wrapper entry and exit, start-up
 * (proc.c).
 */
#ifndef BT_PROC_H
#define BT_PROC_H

#include "conf.h"

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
	unsigned    pc_key;         /* 1 + the fd poll's fast path last
				       looked at (0: none), and where */
	const uintptr_t *pc_word;   /* bt_fd_get reads its word (poll.c) */
	const void *epc_set;        /* the last epoll data -> fd answer */
	uint64_t    epc_gen;        /* (ready.c epmap_lookup) */
	uint64_t    epc_data;
	int         epc_fd;
	const uintptr_t *epc_word;  /* where bt_fd_get(epc_fd) reads */
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
	/* Signal handlers (bt_sig_enter): */
	union {
		struct {
			int wait_depth; /* !0: the wrapper at this depth
					   sleeps in an event loop's
					   readiness wait, holding nothing:
					   a handler's calls are recorded */
			uint16_t sig_marked; /* its READY -1 (BT_RF_SIGNAL)
						or SIGNAL begin is written
						for this wait (or a
						handler's call was
						recorded) */
			uint16_t sig_nest;   /* the wait is a read's system
						call (bt_call_safe_begin):
						a handler's calls are
						bracketed by SIGNAL
						records, the interrupted
						fragment goes on after */
		};
		uint64_t wait_marks;    /* all three, set at once */
	};
	int         in_sig;         /* a handler's call is being recorded */
	int         leave_hook;     /* in_sig, or nstash: the wrapper that
				       takes depth back to 0 has work
				       (bt_leave_slow) */
	/* A handler's writes that re-entered the shim where nothing may
	 * be recorded, waiting for the wrapper they interrupted to leave
	 * (out.c, bt_out_nested): */
	uint8_t     nstash;
	uint8_t     stash_busy;     /* being written: no more now */
	struct {
		void    *ch;        /* struct bt_chan, of generation gen */
		uint32_t gen;
		int      fd;
		uint64_t n;         /* bytes written */
	} stash[4];
	const void *sig_ch;         /* the channel of sig_nest's read (a
				       handler's read or write of it passes
				       through: sig_saved.sig_ch) */
	struct {
		int             depth;
		uint64_t        wait_marks;
		const void     *sig_ch;  /* the interrupted read's channel
					    (sig_nest), else NULL */
		uint64_t        out_ts;
		struct bt_chan *out_ch;
		uint32_t        out_gen;
	} sig_saved;                /* the interrupted wrapper's state */
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
BT_HIDDEN int bt_proc_gettid(void);

static inline uint64_t bt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * A wrapper re-entered (depth was > 0): 1 when it is a signal handler's
 * call while the interrupted wrapper sleeps in an event loop's readiness
 * wait (bt_wait_begin), which is then recorded as a call of its own
 * (proc.c); else 0, the call passes through.
 */
BT_HIDDEN int bt_sig_enter(void);
/* The handler's recorded call is over: the interrupted wrapper's state back. */
BT_HIDDEN void bt_sig_leave(void);
/* A SIGNAL record (BT_SG_BEGIN or BT_SG_END), written even while paused. */
BT_HIDDEN void bt_emit_signal(uint32_t flags);

/*
 * Wrapper entry/exit.  BT_ENTER returns 0 when the shim must pass this call
 * straight through: tracing disabled, or re-entered (libc calling back into
 * a wrapper while the shim is working, or a signal handler that interrupted
 * the shim anywhere but in an event loop's wait).
 */
static inline int bt_enter(void)
{
	if (unlikely(!bt_conf.enabled))
		return 0;
	if (unlikely(bt_self.depth++ > 0))
		return bt_sig_enter();
	return 1;
}
/* Depth is back to 0 with leave_hook set: a recorded handler's call is
 * over (bt_sig_leave), or the handler's writes a wrapper kept waiting are
 * written now (bt_out_stash_flush, out.c). */
BT_HIDDEN void bt_leave_slow(void);
static inline void bt_leave(void)
{
	bt_self.depth--;
	bt_self.out_ts = 0;
	if (unlikely(bt_self.leave_hook) && bt_self.depth == 0)
		bt_leave_slow();
}

/* bt_leave_slow, then R (ready.c): bt_leave_top's tail. */
BT_HIDDEN int bt_leave_slow_ret(int r);

/* bt_leave of a wrapper's fast path that took depth from 0 to 1 itself
 * (without bt_enter): every call nested in it has given depth back.
 * Returns R, the wrapper's result (so that nothing has to outlive a
 * call of bt_sig_leave in the wrapper's frame). */
static inline int bt_leave_top(int r)
{
	bt_self.depth = 0;
	bt_self.out_ts = 0;
	if (unlikely(bt_self.leave_hook))
		return bt_leave_slow_ret(r);
	return r;
}

/*
 * bt_wait_begin in a wrapper known to be the application's own call
 * (depth 1): wait_depth 1 and sig_marked 0 in one store, so a signal
 * arriving in between never sees one without the other.
 */
union bt_wait_marks {
	struct { int d; uint16_t m, n; } f;
	uint64_t w;
};

static inline void bt_wait_begin_top(void)
{
	const union bt_wait_marks v = { .f = { 1, 0, 0 } };

	_Static_assert(__builtin_offsetof(struct bt_thread, sig_marked) ==
		       __builtin_offsetof(struct bt_thread, wait_depth) + sizeof(int) &&
		       __builtin_offsetof(struct bt_thread, sig_nest) ==
		       __builtin_offsetof(struct bt_thread, sig_marked) + 2,
		       "wait_depth, sig_marked and sig_nest make wait_marks");
	bt_self.wait_marks = v.w;
}

/*
 * Around the real call of a readiness wait that ends the thread's
 * fragment (an event loop's: epoll, a poll or select of several fds; or
 * any wait by a thread that works for no request already): the shim holds
 * no lock and is in no record there, so a signal handler's calls can be
 * recorded, as work for no request (docs/libbtrace.md "Safety").
 * errno is not touched.  A no-op in a wrapper called from another.
 */
static inline void bt_wait_begin(void)
{
	/* only a wrapper the application called: one called from inside a
	 * wrapped library function (a TLS library's pull timeout) may
	 * interrupt that function's bookkeeping */
	if (bt_self.depth == 1)
		bt_wait_begin_top();
}
static inline void bt_wait_end(void)
{
	bt_self.wait_depth = 0;
}

/*
 * Around the real system call of a read by the application's own call
 * (depth 1) that holds no lock and has handed nothing over yet (in.c): a
 * signal handler that runs there (php-fpm's master: SIGCHLD while it
 * reads a child's pipe) has its calls recorded, between a SIGNAL begin
 * written at its first call and a SIGNAL end written by
 * bt_call_safe_end before the read's own records.  The three marks are
 * set in one store, so a signal never finds part of them; at the end the
 * wait mark goes first, so a handler after it is not recorded, and what
 * one before it did is then read whole.  Only where a read's records
 * are written (stream_read), which is at depth 1: the application's own
 * call, or a recorded handler's (whose marks bt_sig_leave puts back).
 * Returns what bt_call_safe_end takes.  errno is not touched.
 */
static inline int bt_call_safe_begin(const void *ch)
{
	const union bt_wait_marks v = { .f = { 1, 0, 1 } };

	bt_self.sig_ch = ch;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	bt_self.wait_marks = v.w;
	return 1;
}
BT_HIDDEN void bt_call_safe_end_slow(void);
static inline void bt_call_safe_end(int set)
{
	if (!set)
		return;
	bt_self.wait_depth = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (unlikely(bt_self.sig_marked))
		bt_call_safe_end_slow();
	bt_self.wait_marks = 0;
}

/* bt_enter() returned 0: undo its count only if it made one. */
static inline void bt_leave_pass(void)
{
	if (likely(bt_conf.enabled))
		bt_self.depth--;
}

/* ---- processes (proc.c) ---------------------------------------------- */
BT_HIDDEN void bt_init(void);
BT_HIDDEN extern int bt_initialized;
/* First records of a thread's stream (called by emit.c on slot claim). */
BT_HIDDEN void bt_proc_first_records(void);

#endif /* BT_PROC_H */
