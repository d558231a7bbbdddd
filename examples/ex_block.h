/*
 * ex_block.h - the request loop of the blocking fronts (ex-threads,
 * ex-prefork, ex-pool): read one REQ line, make its backend calls one
 * after the other over persistent connections, check each reply carries
 * the request's own id and call number, answer, read the next line.
 *
 * Where the backend connections come from is the front's business (its
 * own per thread, per process, or a shared pool): it passes get/put.
 */
#ifndef EX_BLOCK_H
#define EX_BLOCK_H

#include <stdatomic.h>
#include <stdint.h>

#include "ex_util.h"

/* The two backends: calls with even k go to TCP, odd k to the unix one. */
enum { EX_KIND_TCP = 0, EX_KIND_UNIX = 1, EX_KINDS = 2 };

struct ex_target {
	const char *host;           /* numeric IPv4 address of the TCP backend */
	int port;                   /* its port */
	const char *unix_path;      /* the unix backend's socket */
	int timeout_ms;             /* bound on connecting and on each call */
};

/* One persistent connection to a backend, with blocking I/O. */
struct ex_bconn {
	int fd;                     /* -1 while not connected */
	int kind;
	struct ex_lbuf in;
};

/* Connect BC to the backend of KIND, with send/receive timeouts of
 * T->timeout_ms.  Returns 0 or -errno (logged). */
int ex_block_connect(struct ex_bconn *bc, const struct ex_target *t, int kind);

/* Close BC's connection (if any); BC can be connected again. */
void ex_block_close(struct ex_bconn *bc);

/* Send "CALL ID K" on BC and read the reply, which must be "OK ID K";
 * fold it into *CS.  Returns 0, -EPROTO for a reply that is not ours
 * (logged: a mixup), or -errno of the I/O (logged).  After an error BC's
 * stream position is unknown: the caller must close it. */
int ex_block_call(struct ex_bconn *bc, const char *id, unsigned k,
		  uint64_t *cs);

/* Where a front gets a connected ex_bconn of KIND for one call and gives
 * it back.  get returns NULL when none can be had (it logged why); put's
 * BROKEN != 0 means the call failed and the connection must be closed. */
struct ex_block_backends {
	struct ex_bconn *(*get)(void *ctx, int kind);
	void (*put)(void *ctx, struct ex_bconn *bc, int broken);
	void *ctx;
};

/* Serve the client connection FD until it closes, fails, or ex_stop is
 * set: one request at a time, in order.  Does not close FD.  *ANSWERED is
 * incremented for every request answered, before the answer is written
 * (so a client that has its answers sees them counted).  Returns 0 when
 * the client closed or ex_stop was set, or -errno when the connection
 * ended on an error (already logged; the client got "ERR <id> <why>" when
 * a request could not be done). */
int ex_block_serve(int fd, const struct ex_block_backends *b,
		   atomic_long *answered);

/* Backends private to one thread or process: one lazily opened persistent
 * connection per kind, reused by every request that thread serves. */
struct ex_block_private {
	const struct ex_target *t;
	struct ex_bconn c[EX_KINDS];
	uint64_t opened;            /* connections opened so far */
};

/* Set up P (nothing is connected yet) and fill B to use it. */
void ex_block_private_init(struct ex_block_private *p,
			   const struct ex_target *t,
			   struct ex_block_backends *b);

/* Close P's connections. */
void ex_block_private_fini(struct ex_block_private *p);

#endif /* EX_BLOCK_H */
