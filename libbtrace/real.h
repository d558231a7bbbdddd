/*
 * real.h - the real libc functions behind every wrapper, bound on first use.
 *
 * bt_real holds one pointer per symbol of wrapped.def.  Each is bound
 * (dlsym RTLD_NEXT) the first time REAL(name) finds it NULL: a process
 * binds only the functions it calls (a CGI program about a dozen of the
 * 100, at some 870 instructions each).  Binding is idempotent and
 * thread-safe (every thread stores the same pointer), and a forked child
 * inherits what its parent bound.  A symbol missing from this libc leaves
 * its pointer NULL (looked up once); its wrapper then fails with ENOSYS.
 */
#ifndef BT_REAL_H
#define BT_REAL_H

#include <dlfcn.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define BT_W(ret, name, params) ret (*name) params;
struct bt_real {
#include "wrapped.def"
};
#undef BT_W

extern struct bt_real bt_real;

/* Bind *SLOT (a member of bt_real) to the real NAME; returns it (NULL if
 * this libc has none). */
void *bt_real_bind_one(void **slot, const char *name)
	__attribute__((visibility("hidden")));

/* The real NAME, binding it first if needed: one load and a branch. */
#define REAL(name) \
	({ __typeof__(bt_real.name) f_ = \
		   __atomic_load_n(&bt_real.name, __ATOMIC_RELAXED); \
	   if (__builtin_expect(!f_, 0)) \
		   f_ = (__typeof__(f_))bt_real_bind_one( \
			   (void **)&bt_real.name, #name); \
	   f_; })

#endif /* BT_REAL_H */
