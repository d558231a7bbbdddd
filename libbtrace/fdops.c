/*
 * fdops.c - the fd lifecycle: socket, accept, connect, pipe, socketpair,
 * open, dup, fcntl, close, close_range, closefrom, fclose, shutdown.
 *
 * These keep the fd table true: every fd number the application can use
 * maps to what it is now, so a number reused after a close is never taken
 * for its previous channel.  Descriptors of the shim itself are invisible:
 * close on one fails with EBADF, dup2 onto one moves the shim's away first.
 */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bt.h"
#include "impl.h"


static void log_close(int fd, long result)
{
	struct bt_event ev;

	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_CLOSE;
	ev.fd = fd;
	ev.result = result;
	bt_emit_always(&ev);
}

static void log_dup(int fd, int fd2)
{
	struct bt_event ev;

	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_DUP;
	ev.fd = fd;
	ev.fd2 = fd2;
	bt_emit(&ev);
}

/*
 * FD is going away (close, or replaced by dup2).  Forget it; if it was the
 * last reference to a channel, its open messages end here.  W: FD's word,
 * just read (forget reads it).
 */
static void forget_w(int fd, uintptr_t w, int log)
{
	struct bt_chan *ch;

	if (w == BT_FD_NONE)
		return;
	if (BT_FD_IS_EPSET(w)) {
		bt_fd_set(fd, BT_FD_NONE);
		bt_ready_fd_closed(fd, w);
		return;
	}
	ch = bt_fd_take(fd);
	if (!ch)
		return;
	bt_ready_fd_closed(fd, (uintptr_t)ch);
	/* Closed in the log even while paused (a dark channel was when it
	 * went dark): the log's descriptors stay true, so a number reused
	 * later is never taken for this channel. */
	if (log && ch->announced && !ch->dark)
		log_close(fd, 0);
	if (__atomic_load_n(&ch->refs, __ATOMIC_ACQUIRE) == 1 && !ch->dark &&
	    !bt_paused()) {
		bt_mutex_lock(&ch->mu);
		bt_msg_eof(ch, fd, BT_DIR_OUT);
		bt_msg_eof(ch, fd, BT_DIR_IN);
		bt_mutex_unlock(&ch->mu);
	}
	bt_chan_put(ch);
}

static void forget(int fd, int log)
{
	forget_w(fd, bt_fd_get(fd), log);
}

BT_HIDDEN int bt_socket(int domain, int type, int proto)
{
	int fd = REAL(socket)(domain, type, proto);
	int e = errno;

	if (fd >= 0)
		bt_census_sock();
	if (fd < 0 || !bt_enter()) {
		if (fd >= 0)
			bt_leave_pass();
		return fd;
	}
	bt_chan_socket(fd, domain, type);
	bt_leave();
	errno = e;
	return fd;
}

int bt_socketpair(int d, int t, int p, int sv[2])
{
	int r = REAL(socketpair)(d, t, p, sv);
	int e = errno;

	if (r < 0)
		return r;
	bt_census_sock();
	if (!bt_enter()) {
		bt_leave_pass();
		return r;
	}
	if (d == AF_UNIX && bt_paused()) {
		/* announced at first use, if they move nothing while paused */
		bt_paused_call();
		bt_fd_set(sv[0], BT_FD_NONE);
		bt_fd_set(sv[1], BT_FD_NONE);
	} else if (d == AF_UNIX) {
		uint64_t pc = bt_self.pause_lost;
		bt_chan_socketpair(sv[0], sv[1], t);
		if (unlikely(bt_self.pause_lost != pc))
			for (int i = 0; i < 2; i++)
				if (BT_FD_IS_CHAN(bt_fd_get(sv[i])))
					bt_chan_go_dark((struct bt_chan *)bt_fd_get(sv[i]),
							sv[i]);
	} else {
		bt_fd_set(sv[0], BT_FD_PLAIN);
		bt_fd_set(sv[1], BT_FD_PLAIN);
	}
	bt_leave();
	errno = e;
	return r;
}

/* WITH_FLAGS: the program called accept4 (FLAGS count), else accept. */
int bt_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags,
	       int with_flags)
{
	socklen_t given = len ? *len : 0;
	int n, e;

	if (!bt_enter()) {
		n = with_flags ? REAL(accept4)(fd, addr, len, flags)
			       : REAL(accept)(fd, addr, len);
		if (n >= 0)
			bt_census_sock();
		bt_leave_pass();
		return n;
	}
	bt_emit_idle();
	n = with_flags ? REAL(accept4)(fd, addr, len, flags)
		       : REAL(accept)(fd, addr, len);
	if (n >= 0) {
		e = errno;
		bt_census_sock();
		if (!bt_paused()) {
			socklen_t l = len ? (*len < given ? *len : given) : 0;
			uint64_t pc = bt_self.pause_lost;
			struct bt_chan *ch;
			bt_fd_set(n, BT_FD_NONE);
			ch = bt_chan_open(n, BT_CR_ACCEPT, fd,
					  addr && l ? addr : NULL, l, 0);
			if (unlikely(bt_self.pause_lost != pc) && ch)
				bt_chan_go_dark(ch, n);
		} else {
			/* classified at first use (role inherited), if it
			 * moves nothing while paused */
			bt_paused_call();
			bt_fd_set(n, BT_FD_NONE);
		}
		errno = e;
	}
	bt_leave();
	return n;
}

int bt_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	int r, e;

	if (bt_own_is_fd(fd)) {
		errno = EBADF;
		return -1;
	}
	bt_census_sock();
	if (!bt_enter()) {
		r = REAL(connect)(fd, addr, len);
		bt_leave_pass();
		return r;
	}
	r = REAL(connect)(fd, addr, len);
	e = errno;
	/*
	 * A stream socket connects once: a second connect() on it (APR, ab,
	 * after EINPROGRESS and writability: 0 or EISCONN) completes the
	 * first and is the same channel, already announced with its
	 * processor and byte offsets.  Announcing it again would start a
	 * second channel on the same connection.
	 */
	{
		uintptr_t v = bt_fd_get(fd);
		if (BT_FD_IS_CHAN(v)) {
			struct bt_chan *ch = (struct bt_chan *)v;
			if (ch->role == BT_CR_CONNECT &&
			    (ch->kind == BT_CK_TCP ||
			     ch->kind == BT_CK_UNIX_STREAM)) {
				bt_leave();
				errno = e;
				return r;
			}
		}
	}
	if (bt_paused()) {
		bt_paused_call();        /* announced at first use instead */
	} else if ((r == 0 || e == EINPROGRESS || e == EAGAIN) && addr &&
		   (addr->sa_family == AF_INET || addr->sa_family == AF_INET6 ||
		    addr->sa_family == AF_UNIX)) {
		uint64_t pc = bt_self.pause_lost;
		struct bt_chan *ch = bt_chan_open(fd, BT_CR_CONNECT, -1, addr,
						  len, r == 0 ? 0 : -(long)e);
		if (unlikely(bt_self.pause_lost != pc) && ch)
			bt_chan_go_dark(ch, fd);
	}
	bt_leave();
	errno = e;
	return r;
}

/* WITH_FLAGS: pipe2, else pipe. */
int bt_pipe2(int fds[2], int flags, int with_flags)
{
	int r = with_flags ? REAL(pipe2)(fds, flags) : REAL(pipe)(fds);
	int e = errno;

	if (r < 0)
		return r;
	if (!bt_enter()) {
		bt_leave_pass();
		return r;
	}
	if (!bt_paused()) {
		uint64_t pc = bt_self.pause_lost;
		bt_chan_pipe(fds[0], fds[1]);
		if (unlikely(bt_self.pause_lost != pc))
			for (int i = 0; i < 2; i++)
				if (BT_FD_IS_CHAN(bt_fd_get(fds[i])))
					bt_chan_go_dark((struct bt_chan *)bt_fd_get(fds[i]),
							fds[i]);
	} else {
		bt_paused_call();
		bt_fd_set(fds[0], BT_FD_NONE);
		bt_fd_set(fds[1], BT_FD_NONE);
	}
	bt_leave();
	errno = e;
	return r;
}

/* A file was opened: it is logged, never traced as a channel. */
void bt_opened(int fd, const char *path, int flags)
{
	int e = errno;

	if (!bt_enter()) {
		if (fd >= 0)
			bt_fd_set(fd, BT_FD_PLAIN);
		bt_leave_pass();
		return;
	}
	if (fd >= 0)
		bt_fd_set(fd, BT_FD_PLAIN);
	if (fd >= 0 && path && !bt_paused())
		bt_emit_open(fd, (uint32_t)flags, path,
			     (uint32_t)strnlen(path, BT_EV_MAX_STR));
	bt_leave();
	errno = e;
}

/* NEW now refers to what OLD refers to. */
static void dup_to(int old, int nfd)
{
	uintptr_t w = bt_fd_get(old);

	forget(nfd, 1);
	if (BT_FD_IS_CHAN(w)) {
		struct bt_chan *ch = (struct bt_chan *)w;
		bt_fd_set_chan(nfd, ch);
		if (ch->announced && !ch->dark) {
			uint64_t pc = bt_self.pause_lost;
			log_dup(old, nfd);
			/* the log would not know NFD: no tracing through it */
			if (bt_self.pause_lost != pc)
				bt_chan_go_dark(ch, old);
		}
	} else if (w == BT_FD_PLAIN || w == BT_FD_DARK) {
		bt_fd_set(nfd, w);
	} else {
		bt_fd_set(nfd, BT_FD_NONE);
	}
}

int bt_dup(int fd)
{
	int n, e;

	if (bt_own_is_fd(fd)) {
		errno = EBADF;
		return -1;
	}
	n = REAL(dup)(fd);
	if (n < 0)
		return n;
	e = errno;
	if (bt_enter())
		dup_to(fd, n);
	bt_leave_pass();
	errno = e;
	return n;
}

/* WITH_FLAGS: dup3, else dup2. */
int bt_dup3(int old, int nfd, int flags, int with_flags)
{
	int r, e;

	if (bt_own_is_fd(old)) {
		errno = EBADF;
		return -1;
	}
	if (bt_enter()) {
		if (bt_own_is_fd(nfd))
			bt_own_fd_evict(nfd);
		r = with_flags ? REAL(dup3)(old, nfd, flags)
			       : REAL(dup2)(old, nfd);
		e = errno;
		if (r >= 0 && old != nfd) {
			dup_to(old, nfd);
			bt_epq_fds_gone(nfd, nfd);
		}
		bt_leave();
		errno = e;
		return r;
	}
	r = with_flags ? REAL(dup3)(old, nfd, flags) : REAL(dup2)(old, nfd);
	e = errno;
	if (r >= 0 && old != nfd)
		bt_epq_fds_gone(nfd, nfd);
	bt_leave_pass();
	errno = e;
	return r;
}

static int is_dupfd(int cmd)
{
	return cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC;
}

int bt_fcntl(int fd, int cmd, void *arg, int is64)
{
	int r, e;
	int (*f)(int, int, ...) = is64 && REAL(fcntl64) ? REAL(fcntl64)
							: REAL(fcntl);

	if (bt_own_is_fd(fd)) {
		errno = EBADF;
		return -1;
	}
	r = f(fd, cmd, arg);
	if (r >= 0 && cmd == F_SETFL) {
		uintptr_t w = bt_fd_get(fd);
		if (BT_FD_IS_CHAN(w))
			((struct bt_chan *)w)->nb = 0;
	}
	if (r < 0 || !is_dupfd(cmd))
		return r;
	e = errno;
	if (bt_enter())
		dup_to(fd, r);
	bt_leave_pass();
	errno = e;
	return r;
}

int bt_close(int fd)
{
	/* one look at FD's word: the shim's own (bt_own_is_fd), and what
	 * forget() reads */
	uintptr_t w = fd >= 0 ? bt_fd_get(fd) : BT_FD_NONE;
	if (w == BT_FD_OWN) {
		errno = EBADF;
		return -1;
	}
	int r, e;

	if (bt_enter()) {
		forget_w(fd, w, 1);
		bt_leave();
	} else {
		bt_leave_pass();
	}
	r = REAL(close)(fd);
	e = errno;
	/* after the kernel dropped FD from its sets: an event a batch took
	 * before that is dropped now (epoll.c, "The readiness queue") */
	bt_epq_fds_gone(fd, fd);
	errno = e;
	return r;
}

static void range_cb(int fd, uintptr_t w, void *ctx)
{
	(void)w;
	(void)ctx;
	forget(fd, 1);
}

/*
 * close_range and closefrom must not close the shim's descriptors: the
 * range is cut into pieces around them.
 */

int bt_close_range(unsigned lo, unsigned hi, int flags)
{
	unsigned a = lo;
	int r = 0, e = 0;

	if (!REAL(close_range)) {
		errno = ENOSYS;
		return -1;
	}
	if ((flags & CLOSE_RANGE_CLOEXEC) || !bt_conf.enabled || lo > hi)
		return REAL(close_range)(lo, hi, flags);
	if (bt_enter()) {
		bt_fd_range(lo, hi, range_cb, NULL);
		bt_leave();
	} else {
		bt_leave_pass();
	}
	while (a <= hi) {
		int o = bt_own_next(a, hi);
		if (o < 0 || (unsigned)o > a) {
			unsigned b = o < 0 ? hi : (unsigned)o - 1;
			if (REAL(close_range)(a, b, flags) < 0 && !r) {
				r = -1;
				e = errno;
			}
		}
		if (o < 0 || (unsigned)o == hi)
			break;
		a = (unsigned)o + 1;
	}
	bt_epq_fds_gone((int)lo, hi > (unsigned)INT_MAX ? INT_MAX : (int)hi);
	if (r < 0)
		errno = e;
	return r;
}

void bt_closefrom(int lo)
{
	if (lo < 0)
		lo = 0;
	if (REAL(close_range) && bt_close_range((unsigned)lo, ~0u, 0) == 0)
		return;
	/* no close_range: close what the table knows, then libc's */
	if (!bt_conf.enabled) {
		REAL(closefrom)(lo);
		return;
	}
	for (int f = lo; f < 65536; f++)
		if (!bt_own_is_fd(f))
			REAL(close)(f);
}

int bt_fclose(FILE *f)
{
	int fd = f ? fileno(f) : -1;

	if (fd >= 0 && bt_enter()) {
		forget(fd, 1);
		bt_leave();
	} else if (fd >= 0) {
		bt_leave_pass();
	}
	{
		int r = REAL(fclose)(f), e = errno;
		if (fd >= 0)
			bt_epq_fds_gone(fd, fd);
		errno = e;
		return r;
	}
}

int bt_shutdown(int fd, int how)
{
	struct bt_chan *ch;
	int r = REAL(shutdown)(fd, how), e = errno;

	if (r < 0 || !bt_enter()) {
		if (r >= 0)
			bt_leave_pass();
		return r;
	}
	if (bt_paused()) {
		/* the processor misses this end of stream: no more tracing */
		bt_paused_call();
		bt_fd_paused_io(fd);
		bt_leave();
		errno = e;
		return r;
	}
	ch = bt_chan_of(fd);
	if (ch && ch->announced && !ch->dark) {
		struct bt_event ev;
		memset(&ev, 0, sizeof ev);
		ev.type = BT_EV_SHUTDOWN;
		ev.fd = fd;
		ev.flags = (uint32_t)how;
		bt_emit(&ev);
		if (how == SHUT_WR || how == SHUT_RDWR) {
			bt_mutex_lock(&ch->mu);
			bt_msg_eof(ch, fd, BT_DIR_OUT);
			bt_mutex_unlock(&ch->mu);
		}
	}
	bt_leave();
	errno = e;
	return r;
}
