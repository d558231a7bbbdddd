/*
 * tp.h - helpers shared by the transparency behaviour programs
 * (tests/transparency/tp-*.c).
 *
 * Each program exercises one behaviour and prints a transcript of what it
 * observed (return values, errno names, bytes, order) on stdout.  The
 * runner (behaviour.sh) runs it untraced and traced and compares the
 * transcripts byte for byte, except lines starting with "~ ", which record
 * what the documented event isolation may legally change (how many reads
 * a stream took, how many readiness calls found a set of ready fds).  The
 * programs check their own expectations too (tp_check): a program exits 1
 * when one fails, 0 otherwise, so a test fails even when traced and
 * untraced runs fail alike.
 *
 * Lines are written with one write(2) each, so a forked child's lines never
 * mix with its parent's.  Every program arms a watchdog (tp_init): a hang
 * becomes a "FAIL watchdog" line and exit status 3.
 */
#ifndef TP_H
#define TP_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Arm the watchdog (SECS seconds of wall time) and name the program. */
void tp_init(const char *name, int secs);
/* A transcript line (compared byte for byte). */
void tp_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A line isolation may change ("~ " prefix; not compared). */
void tp_vary(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Check COND: "ok - WHAT" or "FAIL - WHAT" (both compared). */
int tp_check(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A sub-case that cannot run here: "SKIP - WHY" (counted as skipped). */
void tp_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print the summary line; returns the exit status (0 all ok, 1 failed). */
int tp_done(void);

/* errno's symbolic name ("EINTR"), or "E<number>". */
const char *tp_errname(int e);
/* "r=N" or "r=-1 EINTR" for a call's result R with errno E. */
const char *tp_res(long r, int e);

/* A connected loopback TCP pair: fds[0] the client, fds[1] the accepted
 * end.  *PORT (if not NULL) gets the listener's port.  0 or -1. */
int tp_tcp_pair(int fds[2], int *port);
/* A listening loopback TCP socket; *PORT gets its port.  fd or -1. */
int tp_tcp_listen(int *port);
/* Connect to loopback PORT (blocking).  fd or -1. */
int tp_tcp_connect(int port);
/* A connected unix stream pair made through a listening socket at a path
 * in a temporary directory (so it is a "real" unix socket, not a
 * socketpair).  0 or -1. */
int tp_unix_pair(int fds[2]);

/* Set or clear O_NONBLOCK. */
void tp_nonblock(int fd, int on);
/* Write all N bytes (loop over short writes).  0 or -1. */
int tp_write_all(int fd, const void *buf, size_t n);
/* Read until N bytes or EOF or error (on a non-blocking fd, EAGAIN waits
 * in poll, bounded); *READS (if not NULL) gets the number of read calls
 * that returned data.  Returns bytes read. */
size_t tp_read_full(int fd, void *buf, size_t n, int *reads);
/* Read until EOF into BUF (capacity CAP); returns bytes, *READS calls. */
size_t tp_read_eof(int fd, void *buf, size_t cap, int *reads);
/* Sleep MS milliseconds. */
void tp_msleep(int ms);
/* Quote N bytes of P as a C-like string into a static buffer. */
const char *tp_quote(const void *p, size_t n);
/* Path of this executable (for re-executing itself as a helper). */
const char *tp_self(void);

#endif
