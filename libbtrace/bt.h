/*
 * bt.h - libbtrace internals shared by its modules.
 *
 *   shim.c   exported wrappers: one-liners into the modules below (impl.h)
 *   real.c   the real libc functions (wrapped.def)
 *   conf.c   configuration from the environment, protocol selection rules
 *   proc.c   start-up, fork, exec, spawn, threads; per-thread state
 *   fdops.c  calls that make and end descriptors
 *   mutex.c  the light mutex's slow paths (core.h)
 *   fdtab.c  fd table
 *   chan.c   channel objects, identity (addresses, inodes), processor
 *            choice, going dark
 *   iov.c    iovec helpers; bt_iov_feed (iov.h): a stream's bytes to the
 *            processor, for reads and writes alike
 *   in.c     the read family, processors and event isolation
 *   iso.c    the isolation buffer: input kept past a boundary, served
 *   out.c    the write family, sendfile, splice
 *   msg.c    MSG / LOST_SYNC records, end of a direction (iopath.h)
 *   ready.c  channels holding input, READY records (readypath.h)
 *   epoll.c  epoll sets and calls: held input, one event per call
 *   poll.c   poll, ppoll, select, pselect: the same
 *   names.c  getaddrinfo and friends as DNS client spans
 *   tls.c    TLS sessions: channels read on their plaintext (tls.h);
 *            ssl.c OpenSSL's calls, gnutls.c GnuTLS's
 *   redact.c secrets taken out of message attributes before logging
 *   emit.c   records into the per-thread ring slots, pausing, drops
 *   ring.c   memfd chunks shared with bp-logd, slots (logpath.h)
 *   link.c   the bp-logd link
 *   spool.c  the spool, without bp-logd
 *   own.c    the shim's own descriptors, hidden from the application
 *
 * Each module's header (core.h conf.h redact.h proc.h emit.h fdtab.h
 * chan.h io.h ready.h tls.h) declares what it offers; this file includes them
 * all.  impl.h declares the wrappers' implementations, iopath.h, iov.h and
 * logpath.h what the I/O and the record files share among themselves.
 *
 * Locking: the fd table is read without locks (entries are atomic words,
 * channel objects are type-stable and never freed); a channel's mutex
 * guards its processor state and isolation buffer and is never held across
 * a blocking call.  Global locks (chunk list, logd link, epoll sets) are
 * taken only on slow paths and re-initialised in a forked child.
 */
#ifndef BT_BT_H
#define BT_BT_H

#include "core.h"
#include "conf.h"
#include "redact.h"
#include "proc.h"
#include "emit.h"
#include "fdtab.h"
#include "chan.h"
#include "io.h"
#include "ready.h"
#include "tls.h"

#endif /* BT_BT_H */
