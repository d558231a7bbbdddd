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

#include "core.h"
#include "conf.h"
#include "redact.h"
#include "proc.h"
#include "emit.h"
#include "fdtab.h"
#include "chan.h"
#include "io.h"
#include "ready.h"

#endif /* BT_BT_H */
