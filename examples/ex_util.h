/*
 * ex_util.h - what the example programs share: the line protocol they
 * speak, a line buffer, sockets with bounded waits, signals, pidfiles and
 * logging.
 *
 * The protocol (newline-terminated lines, in order per connection):
 *   client -> front    REQ <id> <ncalls>
 *   front  -> client   RESP <id> <ncalls> <checksum>   (or ERR <id> <why>)
 *   front  -> backend  CALL <id> <k>        k = 0..ncalls-1; even k to the
 *                                           TCP backend, odd k to the unix one
 *   backend -> front   OK <id> <k>
 * The checksum is FNV-1a 64 over the backend's reply lines "OK <id> <k>\n"
 * for k = 0..ncalls-1, printed as 16 hex digits: the client can compute it
 * from the id alone, so a front that mixed up two requests' backend
 * replies is caught.
 *
 * Every function that returns int returns >= 0 on success or -errno.
 * Nothing here is thread-unsafe except ex_init (call it first, once).
 */
#ifndef EX_UTIL_H
#define EX_UTIL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define EX_LINE_MAX   200       /* longest protocol line we accept */
#define EX_ID_MAX     64        /* longest request id (with its NUL) */
#define EX_NCALLS_MAX 64        /* most backend calls one request may ask */
#define EX_LBUF_SIZE  4096      /* bytes one line buffer holds */

/* Set by the SIGTERM/SIGINT handler installed by ex_signals(). */
extern volatile sig_atomic_t ex_stop;

/* Remember the program name for messages and ignore SIGPIPE (a peer that
 * goes away is reported by write's EPIPE instead).  Call first, once. */
void ex_init(const char *argv0);

/* Install a SIGTERM/SIGINT handler that sets ex_stop.  Without SA_RESTART,
 * so a blocking accept/read/poll in the thread that gets the signal returns
 * EINTR.  Returns 0 or -errno. */
int ex_signals(void);

/* Block SIGTERM and SIGINT in the calling thread (BLOCK != 0) or unblock
 * them.  Threads created while they are blocked inherit that, so the
 * signal is delivered to the one thread that left them unblocked. */
void ex_block_signals(int block);

/* One-line message "PROG[PID]: ..." on stderr, written with one write(2)
 * so lines from several threads or processes do not interleave. */
void ex_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ex_log, then exit(1). */
void ex_fatal(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/* Parse a decimal integer in [MIN, MAX] given to option OPT, or exit(2)
 * with a one-line error naming the option. */
long ex_opt_num(const char *opt, const char *arg, long min, long max);

/* Write our pid to PATH (through a temporary file and rename, so a reader
 * never sees a partial file).  Returns 0 or -errno. */
int ex_pidfile(const char *path);

/* Listening sockets, close-on-exec; NONBLOCK != 0 makes them non-blocking.
 * ex_listen_unix removes a stale socket file at PATH first.  Return the fd
 * or -errno. */
int ex_listen_tcp(const char *host, int port, int backlog, int nonblock);
int ex_listen_unix(const char *path, int backlog, int nonblock);

/* Connect to HOST:PORT (TCP_NODELAY set) or to the unix socket PATH.  With
 * NONBLOCK the connect may still be in progress when this returns (check
 * with ex_connect_done); without, it waits at most TIMEOUT_MS.  Return the
 * fd or -errno. */
int ex_connect_tcp(const char *host, int port, int nonblock, int timeout_ms);
int ex_connect_unix(const char *path, int nonblock, int timeout_ms);

/* For a non-blocking connect: 0 when it succeeded, -errno when it failed
 * (SO_ERROR). */
int ex_connect_done(int fd);

/* O_NONBLOCK on FD.  Returns 0 or -errno. */
int ex_set_nonblock(int fd);

/* SO_RCVTIMEO and SO_SNDTIMEO of MS milliseconds on FD, so blocking reads
 * and writes end with EAGAIN instead of hanging.  Returns 0 or -errno. */
int ex_set_timeouts(int fd, int ms);

/* Write all LEN bytes of BUF to the blocking FD, retrying on EINTR and
 * short writes.  Returns 0 or -errno (-EAGAIN: the send timeout passed). */
int ex_write_all(int fd, const void *buf, size_t len);

/* Milliseconds of CLOCK_MONOTONIC. */
uint64_t ex_now_ms(void);

/* A buffer that collects bytes from a socket and hands out whole lines. */
struct ex_lbuf {
	size_t off;                 /* first unconsumed byte */
	size_t len;                 /* bytes held, from 0 */
	char buf[EX_LBUF_SIZE];
};

/* Empty LB. */
void ex_lbuf_reset(struct ex_lbuf *lb);

/* One read(2) from FD into the free space of LB (moving held bytes to the
 * front first).  Returns the byte count, 0 at end of file, -ENOBUFS when
 * LB is full, or -errno of read (-EAGAIN, -EINTR, ...). */
ssize_t ex_lbuf_read(struct ex_lbuf *lb, int fd);

/* The next whole line in LB: *LINE points to it inside LB, NUL-terminated,
 * without "\n" or "\r\n"; *LEN (if LEN is not NULL) gets its length; valid
 * until the next ex_lbuf_read.  Returns 1 when a line was taken, 0 if no
 * whole line is held yet, -EMSGSIZE if more than EX_LINE_MAX bytes are
 * held without a newline. */
int ex_lbuf_line(struct ex_lbuf *lb, char **line, size_t *len);

/* Bytes held that are not yet handed out. */
static inline size_t ex_lbuf_pending(const struct ex_lbuf *lb)
{
	return lb->len - lb->off;
}

/* Read one line from the blocking FD through LB: like ex_lbuf_line but
 * reads as needed (retrying EINTR unless ex_stop is set).  Returns 1 with
 * the line, 0 at end of file before any byte of a new line, -ECONNRESET at
 * end of file inside a line, -EMSGSIZE, or -errno of read (-EAGAIN when
 * the receive timeout passed). */
int ex_lbuf_getline(struct ex_lbuf *lb, int fd, char **line, size_t *len);

/* Protocol lines. */
struct ex_req {
	char id[EX_ID_MAX];
	unsigned n;                 /* backend calls asked for */
};

/* Parse "REQ <id> <n>" into R.  Returns 0 or -EPROTO. */
int ex_parse_req(const char *line, struct ex_req *r);

/* Parse "CALL <id> <k>" or "OK <id> <k>" (VERB says which) into ID (of
 * EX_ID_MAX bytes) and K.  Returns 0 or -EPROTO. */
int ex_parse_idk(const char *line, const char *verb, char *id, unsigned *k);

/* Is LINE exactly "OK <ID> <K>"?  1 yes, 0 no. */
int ex_is_ok_for(const char *line, const char *id, unsigned k);

/* Checksum over reply lines: ex_cs_init, then ex_cs_add for each reply
 * line (without its newline) in order. */
uint64_t ex_cs_init(void);
uint64_t ex_cs_add(uint64_t cs, const char *line, size_t len);

/* The checksum a correct front returns for request ID with N calls. */
uint64_t ex_cs_expected(const char *id, unsigned n);

/* Format protocol lines (with the trailing newline) into BUF of SIZE
 * bytes.  Return the length (always < SIZE for ids of EX_ID_MAX). */
int ex_fmt_call(char *buf, size_t size, const char *id, unsigned k);
int ex_fmt_resp(char *buf, size_t size, const char *id, unsigned n,
		uint64_t cs);

#endif /* EX_UTIL_H */
