/*
 * real.h - the real libc functions behind every wrapper, bound once.
 *
 * bt_real holds one pointer per symbol of wrapped.def.  They are bound by
 * bt_real_bind() (dlsym RTLD_NEXT) from the library constructor, or on the
 * first wrapped call if another library's constructor calls us earlier.
 * A symbol missing from this libc leaves its pointer NULL; its wrapper
 * then fails with ENOSYS.
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
extern int bt_real_bound;

/* Bind every symbol (idempotent, thread-safe). */
void bt_real_bind(void);

/* The real NAME, binding first if needed. */
#define REAL(name) \
	(__builtin_expect(bt_real_bound, 1) ? bt_real.name : \
	 (bt_real_bind(), bt_real.name))

#endif /* BT_REAL_H */
