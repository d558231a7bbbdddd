/*
 * gen.h - scripted BorderPatrol logs for testing bp-reconstruct.
 *
 * A test describes hosts, process images and threads, then has the threads
 * emit records at given true times (microseconds since the scenario's
 * start).  Each host maps true time to its own monotonic and wall clocks
 * (shifted as the test asks), so clock offsets between hosts are known
 * exactly.  The generator tracks byte offsets per channel end the way the
 * shim does (shared across fork, restarting at 0 for an end an exec'd
 * image announces again) and writes real segment files with
 * bt_ev_encode and bt_seg_write_block: logs/<host>/<n>.btl, blocks of a
 * few hundred bytes, interleaved in time order like bp-logd drains them.
 *
 * Errors in a script (times going backwards in a thread, unknown fds)
 * abort the test program with a message: they are bugs in the test.
 */
#ifndef TESTS_RECON_GEN_H
#define TESTS_RECON_GEN_H

#include <stdint.h>

#include "btrace/event.h"

#define GEN_US 1000ll                 /* true times are given in us */

struct gen;
struct gen_host;
struct gen_proc;
struct gen_thr;

struct gen *gen_new(void);
void gen_free(struct gen *g);

/*
 * A host whose monotonic clock reads  1000 s + MONO_SHIFT + t  and whose
 * wall clock reads  2026-01-01 + REAL_SHIFT + t  at true time t (ns).
 */
struct gen_host *gen_host(struct gen *g, const char *name, int64_t mono_shift,
			  int64_t real_shift);
/* Same host, another time namespace: its monotonic clock is shifted by
 * MONO_SHIFT more, its wall clock is the host's. */
struct gen_host *gen_host_ns(struct gen_host *h, int64_t mono_shift);
/* The host's monotonic reading at true time AT_US. */
uint64_t gen_mono(const struct gen_host *h, int64_t at_us);

/* A process image (its own ring) of PID on H running EXE. */
struct gen_proc *gen_proc(struct gen_host *h, uint32_t pid, const char *exe);
/* P's ring id; set it (0 with bp-logd's pid: its notes' image). */
uint64_t gen_proc_ring(const struct gen_proc *p);
void gen_proc_set_ring(struct gen_proc *p, uint64_t ring);
/* A thread of P writing its own stream: TIME + THREAD_START at AT. */
struct gen_thr *gen_thread(struct gen_proc *p, int64_t at, uint32_t tid,
			   uint32_t ptid, uint64_t cookie);
/* A new image of PID running EXE whose first thread (tid PID) starts at
 * AT with TIME, THREAD_START and PROC_START (parent untraced). */
struct gen_thr *gen_proc_main(struct gen_host *h, uint32_t pid,
			      const char *exe, int64_t at);
/* The image T belongs to (to start more threads in it). */
struct gen_proc *gen_thr_proc(struct gen_thr *t);
/* PROC_START (first thread of an image). */
void gen_proc_start(struct gen_thr *t, int64_t at, uint32_t ppid,
		    uint32_t ptid, uint32_t flags);

/* Any record (EV->ts is set from AT). */
void gen_ev(struct gen_thr *t, int64_t at, const struct bt_event *ev);

/* Channels.  Addresses are "a.b.c.d:port" or "[v6]:port".  Roles:
 * enum bt_chan_role. */
void gen_tcp(struct gen_thr *t, int64_t at, int fd, int role,
	     const char *local, const char *remote);
/* accept() on listening fd LFD (not a channel) returned FD. */
void gen_accept(struct gen_thr *t, int64_t at, int fd, int lfd,
		const char *local, const char *remote);
void gen_udp(struct gen_thr *t, int64_t at, int fd, int role,
	     const char *local, const char *remote);
void gen_unix(struct gen_thr *t, int64_t at, int fd, int role, uint64_t ino,
	      uint64_t peer_ino, const char *path);
/* pipe(): CHAN pipe_read RFD and pipe_write WFD, inode INO. */
void gen_pipe(struct gen_thr *t, int64_t at, int rfd, int wfd, uint64_t ino);
/* An end found open (inherited): offsets restart at 0. */
void gen_inherit_pipe(struct gen_thr *t, int64_t at, int fd, uint64_t ino);
void gen_close(struct gen_thr *t, int64_t at, int fd);
void gen_dup(struct gen_thr *t, int64_t at, int fd, int fd2);
void gen_open(struct gen_thr *t, int64_t at, int fd, const char *path);

/* Message attributes for gen_msg: key/value pairs ending with 0. */
#define GEN_A(k, v) (k), (v)

/*
 * MSG of LEN bytes on FD in direction DIR at the end's current offset
 * (which then advances).  FLAGS: BT_MF_*; WITNESS used with BT_MF_WITNESS.
 * Attributes follow as (int key, const char *value) pairs ended by 0.
 */
void gen_msg(struct gen_thr *t, int64_t at, int fd, int dir, int kind,
	     int proto, uint64_t len, uint32_t flags, uint32_t status,
	     uint64_t witness, ...);
/* MSG_BEGIN at the current offset (the MSG that follows has the same). */
void gen_msg_begin(struct gen_thr *t, int64_t at, int fd, int dir);
void gen_data(struct gen_thr *t, int64_t at, int fd, int dir, uint64_t len);
void gen_ready(struct gen_thr *t, int64_t at, int fd, uint32_t events);

/* FORK (returns the child's image, same fds), EXEC (returns the new image
 * with no fds: it announces what it uses with gen_inherit_*), SPAWN. */
struct gen_proc *gen_fork(struct gen_thr *t, int64_t at, uint32_t child,
			  const char *exe);
struct gen_proc *gen_exec(struct gen_thr *t, int64_t at, const char *exe);
void gen_thread_create(struct gen_thr *t, int64_t at, uint64_t cookie);
void gen_name_begin(struct gen_thr *t, int64_t at, uint64_t cookie,
		    const char *name);
void gen_name_end(struct gen_thr *t, int64_t at, uint64_t cookie,
		  int result, const char *addr);
void gen_thread_exit(struct gen_thr *t, int64_t at);

/* A record of TYPE at AT whose body is the time's delta and then the
 * LEN bytes at FIELDS, as they are: a record no writer of this version
 * makes (a malformed one, a newer type).  Recoded blocks keep it. */
void gen_raw(struct gen_thr *t, int64_t at, int type, const uint8_t *fields,
	     size_t len);
/* LEN bytes moved on FD in DIR without a record (the tracer lost it). */
void gen_skip(struct gen_thr *t, int fd, int dir, uint64_t len);
/* End T's current block here (as a bp-logd drain would). */
void gen_cut(struct gen_thr *t);

struct gen_write_opts {
	unsigned block_bytes;       /* payload per block (default 256) */
	unsigned blocks_per_seg;    /* blocks per segment file (default 8) */
	int      no_time_per_block; /* only the stream's first TIME */
	/* Return 0 to leave block BLK of (host, pid, slot) out (a gap). */
	int    (*keep)(void *ctx, const char *host, uint32_t pid,
		       unsigned slot, unsigned blk);
	void    *keep_ctx;
	/* Write the values and paths each stream repeats as references to
	 * its attribute dictionary, as libbtrace does (also when the
	 * environment has BP_GEN_DICT=1): the same log, fewer bytes. */
	int      dict;
	/* Write the blocks of this pid (0: none) after every other block
	 * of its host, from a segment of their own: its records drained
	 * late (a live test copies those segments later).  LATE_SEG, if
	 * set, gets the number of the first such segment (-1: none). */
	uint32_t late_pid;
	int64_t  late_from;         /* only its blocks from this true time (us) */
	int     *late_seg;
};

/*
 * Write every host's segments under DIR/<host>/ (DIR is created).
 * Returns the number of segment files written, or -1.
 */
int gen_write(struct gen *g, const char *dir, const struct gen_write_opts *o);

/* Epoch ns of true time AT_US on the reference clock (wall clock of a
 * host with REAL_SHIFT 0). */
int64_t gen_epoch(int64_t at_us);

#endif /* TESTS_RECON_GEN_H */
