/*
 * tp-highfd - descriptors where the shim keeps its own (hidden) ones:
 * from 1024 up (from three quarters of a lower RLIMIT_NOFILE), and the top
 * of the limit.  The program dup2s a pipe onto each of the 100 numbers
 * from 1000 and, after raising its soft limit to the hard one, onto each
 * of the highest 300 numbers in turn and does I/O through it (the shim
 * must move its own descriptor out of the way each time), uses the
 * highest one with poll, select and
 * epoll, checks that the lowest free descriptor is still the one open()
 * returns, and that the shim still traces afterwards.  Numbers above
 * 65536 need a hard limit above it: where the limit cannot be raised
 * (no CAP_SYS_RESOURCE) that part is skipped, with the reason.
 *
 * tp-events: chan .*path=.*after-highfd
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tp.h"

static int io_through(int rfd, int wfd)
{
	char buf[8];
	return write(wfd, "hi!\n", 4) == 4 && tp_read_full(rfd, buf, 4, NULL) == 4 &&
	       !memcmp(buf, "hi!\n", 4);
}

static void use_high(int hi, int p[2])
{
	int ok_poll, ok_sel = 1, ok_ep;
	if (dup2(p[0], hi) != hi) {
		tp_check(0, "dup2 onto %d: %s", hi, tp_res(-1, errno));
		return;
	}
	(void)!write(p[1], "x\n", 2);
	{
		struct pollfd pf = { .fd = hi, .events = POLLIN };
		ok_poll = poll(&pf, 1, 1000) == 1 && (pf.revents & POLLIN);
	}
	if (hi < FD_SETSIZE) {
		fd_set rs;
		struct timeval tv = { 1, 0 };
		FD_ZERO(&rs);
		FD_SET(hi, &rs);
		ok_sel = select(hi + 1, &rs, NULL, NULL, &tv) == 1;
	}
	{
		int ep = epoll_create1(EPOLL_CLOEXEC);
		struct epoll_event ev = { .events = EPOLLIN }, out;
		ok_ep = ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, hi, &ev) == 0 &&
			epoll_wait(ep, &out, 1, 1000) == 1;
		close(ep);
	}
	{
		char b[4];
		ok_ep = ok_ep && tp_read_full(hi, b, 2, NULL) == 2;
	}
	tp_check(ok_poll && ok_sel && ok_ep, "the highest descriptor works with poll%s and epoll",
		 hi < FD_SETSIZE ? ", select" : "");
	close(hi);
}

static int io_after(void)
{
	char dir[] = "/tmp/tp-hi.XXXXXX", buf[8];
	struct sockaddr_un sa;
	int l, c = -1, a = -1, ok = 0;

	if (!mkdtemp(dir))
		return 0;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s/after-highfd", dir);
	l = socket(AF_UNIX, SOCK_STREAM, 0);
	if (l >= 0 && bind(l, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(l, 1) == 0 &&
	    (c = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0 &&
	    connect(c, (struct sockaddr *)&sa, sizeof sa) == 0 &&
	    (a = accept(l, NULL, NULL)) >= 0)
		ok = write(c, "ok\n", 3) == 3 && tp_read_full(a, buf, 3, NULL) == 3;
	if (a >= 0) close(a);
	if (c >= 0) close(c);
	if (l >= 0) close(l);
	unlink(sa.sun_path);
	rmdir(dir);
	return ok;
}

int main(void)
{
	struct rlimit rl;
	int p[2], lim, bad = 0, lowest = -1, got;

	tp_init("highfd", 60);
	if (pipe2(p, O_CLOEXEC) < 0)
		return 1;

	/* every one of the 100 numbers from 1000 (where a limit above 1280
	 * puts the shim's own), one at a time, and all at once */
	getrlimit(RLIMIT_NOFILE, &rl);
	lim = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 1u << 20 ? 1 << 20 : (int)rl.rlim_cur;
	if (lim >= 1100) {
		for (int fd = 1000; fd < 1100; fd++) {
			if (dup2(p[1], fd) != fd || !io_through(p[0], fd)) {
				if (bad++ < 3)
					tp_say("dup2 onto %d: %s", fd, tp_res(-1, errno));
			}
			close(fd);
		}
		for (int fd = 1000; fd < 1100; fd++)
			if (dup2(p[1], fd) != fd)
				bad++;
		tp_check(bad == 0 && io_through(p[0], 1099),
			 "dup2 onto each of the descriptors 1000-1099, one at a time and all at once");
		for (int fd = 1000; fd < 1100; fd++)
			close(fd);
	} else {
		tp_skip("descriptors 1000-1099: RLIMIT_NOFILE %d", lim);
	}
	bad = 0;

	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	getrlimit(RLIMIT_NOFILE, &rl);
	lim = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 1u << 20 ? 1 << 20 : (int)rl.rlim_cur;
	tp_vary("RLIMIT_NOFILE %d", lim);

	/* every one of the top 300 numbers, one at a time */
	for (int fd = lim - 300; fd < lim; fd++) {
		if (fd < 3)
			continue;
		if (dup2(p[1], fd) != fd || !io_through(p[0], fd)) {
			if (bad++ < 3)
				tp_say("dup2 onto %d: %s", fd, tp_res(-1, errno));
		}
		close(fd);
	}
	tp_check(bad == 0, "dup2 onto each of the top 300 descriptors, I/O through each");

	/* all of them at once: the shim's own must live elsewhere */
	for (int fd = lim - 300; fd < lim; fd++)
		if (fd > 2 && dup2(p[1], fd) != fd)
			bad++;
	tp_check(bad == 0, "the top 300 descriptors held at once");
	tp_check(io_through(p[0], lim - 1), "I/O through the highest while all are held");
	for (int fd = 3; fd < lim - 300 && lowest < 0; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF)
			lowest = fd;
	got = open("/dev/null", O_RDONLY | O_CLOEXEC);
	tp_check(got == lowest, "open() still returns the lowest free descriptor");
	close(got);
	tp_check(io_after(), "I/O and tracing after the top descriptors were taken");
	for (int fd = lim - 300; fd < lim; fd++)
		if (fd > 2)
			close(fd);

	use_high(lim - 1, p);
	if (lim - 1 >= 65536) {
		use_high(65536, p);
	} else {
		struct rlimit want = { 70000, 70000 };
		if (setrlimit(RLIMIT_NOFILE, &want) == 0) {
			use_high(65536, p);
			use_high(69999, p);
		} else {
			tp_skip("descriptors above 65536: RLIMIT_NOFILE cannot be raised past its hard limit here (%s); highest tested: %s",
				tp_errname(errno), lim - 1 >= 16384 ? "the hard limit - 1" : "below 16384");
		}
	}
	return tp_done();
}
