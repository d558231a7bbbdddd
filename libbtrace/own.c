/*
 * own.c - the shim's own descriptors (logd socket, memfds, spool file,
 * netlink socket, epoll wake-up eventfds): at high numbers, close-on-exec,
 * hidden from the application: closing one fails with EBADF, dup2 onto
 * one moves ours away first.
 */
#include "config.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "btrace/segment.h"
#include "bt.h"
#include "logpath.h"

/* ---- the shim's own descriptors ------------------------------------- */

#define OWN_MAX 256
static int *own_vars[OWN_MAX];           /* variables holding our fds */
pthread_mutex_t bt_own_mu = PTHREAD_MUTEX_INITIALIZER;
static int own_base = -1;

/*
 * The lowest number for the shim's own descriptors: 1024 (past select's
 * FD_SETSIZE and the numbers programs use on purpose), or three quarters of
 * a lower limit.  Not the top of a large RLIMIT_NOFILE: the kernel sizes a
 * process's descriptor table to its highest open number, and fork copies
 * that table: one at 19,744 (the floor when it was the limit less 256,
 * under a limit of 20,000) made every fork of a traced process copy and
 * free 32,768 entries, 57 us more per fork here.
 */
static int own_floor(void)
{
	if (own_base < 0) {
		struct rlimit rl;
		long lim = 1024;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
			lim = (long)rl.rlim_cur;
		own_base = lim > 1024 ? (int)(lim - 256 > 1024 ? 1024 : lim - 256)
				      : (int)(lim * 3 / 4);
		if (own_base < 64)
			own_base = 64;
	}
	return own_base;
}

/*
 * Duplicate FD to a close-on-exec number the application will not be
 * handed: the lowest free one at or above own_floor(), else the highest
 * free one below it.  Never simply the lowest free descriptor, which
 * open(), socket(), accept() and dup() must give the application (the
 * top of the range may be full when a program dup2s onto high numbers).
 * F_DUPFD from the probed number keeps this atomic against other threads.
 * Returns the new fd or -1; errno preserved.
 */
static int own_dup_away(int fd)
{
	int e = errno, nfd = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, own_floor());

	for (int f = own_floor() - 1; nfd < 0 && f > 2; f--)
		if (REAL(fcntl)(f, F_GETFD) < 0 && errno == EBADF)
			nfd = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, f);
	errno = e;
	return nfd;
}

int bt_own_fd_hide(int fd)
{
	int nfd;

	if (fd < 0)
		return fd;
	nfd = own_dup_away(fd);
	if (nfd < 0) {
		REAL(fcntl)(fd, F_SETFD, FD_CLOEXEC);
		bt_fd_set(fd, BT_FD_OWN);
		return fd;
	}
	REAL(close)(fd);
	bt_fd_set(nfd, BT_FD_OWN);
	return nfd;
}

void bt_own_register(int *var)
{
	pthread_mutex_lock(&bt_own_mu);
	for (int i = 0; i < OWN_MAX; i++)
		if (!own_vars[i]) {
			own_vars[i] = var;
			break;
		}
	pthread_mutex_unlock(&bt_own_mu);
}

void bt_own_unregister(int *var)
{
	pthread_mutex_lock(&bt_own_mu);
	for (int i = 0; i < OWN_MAX; i++)
		if (own_vars[i] == var)
			own_vars[i] = NULL;
	pthread_mutex_unlock(&bt_own_mu);
}

/* Register/unregister an fd variable kept elsewhere (ready.c, chan.c). */
void bt_own_var(int *var, int add)
{
	if (add)
		bt_own_register(var);
	else
		bt_own_unregister(var);
}

/* The smallest descriptor of the shim in [FROM, TO], or -1. */
int bt_own_next(unsigned from, unsigned to)
{
	int best = -1;

	pthread_mutex_lock(&bt_own_mu);
	for (int i = 0; i < OWN_MAX; i++) {
		int fd = own_vars[i] ? *own_vars[i] : -1;
		if (fd >= 0 && (unsigned)fd >= from && (unsigned)fd <= to &&
		    (best < 0 || fd < best))
			best = fd;
	}
	pthread_mutex_unlock(&bt_own_mu);
	return best;
}

int bt_own_is_fd(int fd)
{
	return fd >= 0 && bt_fd_get(fd) == BT_FD_OWN;
}

void bt_own_fd_evict(int fd)
{
	pthread_mutex_lock(&bt_own_mu);
	for (int i = 0; i < OWN_MAX; i++) {
		if (own_vars[i] && *own_vars[i] == fd) {
			int nfd = own_dup_away(fd);
			if (nfd >= 0) {
				bt_fd_set(nfd, BT_FD_OWN);
				*own_vars[i] = nfd;
			} else {
				*own_vars[i] = -1;
			}
		}
	}
	pthread_mutex_unlock(&bt_own_mu);
	bt_fd_set(fd, BT_FD_NONE);
	/* The caller's dup2/dup3 replaces the descriptor atomically. */
}
