/*
 * tp-close-range - close_range and closefrom close every descriptor of
 * the program in the range (pipes, sockets, files, an epoll set) and
 * nothing the program can see survives; CLOSE_RANGE_CLOEXEC marks them;
 * afterwards the program's new descriptors work and the shim still traces
 * (its own descriptors were spared: events after the close appear).
 *
 * tp-events: chan .*path=.*after-close-range
 * tp-events: chan .*path=.*after-closefrom
 * tp-events: msg .*
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tp.h"

#define NFD 16

static int open_some(int *fds)
{
	int n = 0, p[2], s[2];

	if (pipe2(p, 0) == 0) { fds[n++] = p[0]; fds[n++] = p[1]; }
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0) { fds[n++] = s[0]; fds[n++] = s[1]; }
	if (tp_tcp_pair(s, NULL) == 0) { fds[n++] = s[0]; fds[n++] = s[1]; }
	fds[n++] = open("/dev/null", O_RDONLY);
	fds[n++] = epoll_create1(0);
	/* some traffic, so the channels are live */
	(void)!write(p[1], "x\n", 2);
	return n;
}

static int count_open(const int *fds, int n)
{
	int c = 0;
	for (int i = 0; i < n; i++)
		c += fcntl(fds[i], F_GETFD) >= 0;
	return c;
}

/* A fresh unix socket at a path named NAME: traffic through it. */
static int io_after(const char *name)
{
	char dir[] = "/tmp/tp-cr.XXXXXX", buf[16];
	struct sockaddr_un sa;
	int l, c, a, ok = 0, p[2];

	if (!mkdtemp(dir))
		return 0;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s/%s", dir, name);
	l = socket(AF_UNIX, SOCK_STREAM, 0);
	if (l >= 0 && bind(l, (struct sockaddr *)&sa, sizeof sa) == 0 &&
	    listen(l, 1) == 0 && (c = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0) {
		if (connect(c, (struct sockaddr *)&sa, sizeof sa) == 0 &&
		    (a = accept(l, NULL, NULL)) >= 0) {
			ok = write(c, "ping\n", 5) == 5 &&
			     tp_read_full(a, buf, 5, NULL) == 5 &&
			     !memcmp(buf, "ping\n", 5);
			close(a);
		}
		close(c);
	}
	if (l >= 0)
		close(l);
	unlink(sa.sun_path);
	rmdir(dir);
	if (ok && pipe(p) == 0) {
		ok = write(p[1], "pipe\n", 5) == 5 && tp_read_full(p[0], buf, 5, NULL) == 5;
		close(p[0]);
		close(p[1]);
	}
	return ok;
}

int main(void)
{
	int fds[NFD], n, lowest;

	tp_init("close-range", 30);
	n = open_some(fds);
	lowest = fds[0];
	for (int i = 0; i < n; i++)
		if (fds[i] < lowest)
			lowest = fds[i];
	tp_say("opened %d descriptors, %d open", n, count_open(fds, n));

	/* CLOEXEC only marks */
	{
		int r = close_range((unsigned)lowest, ~0u, CLOSE_RANGE_CLOEXEC), marked = 0;
		for (int i = 0; i < n; i++)
			marked += (fcntl(fds[i], F_GETFD) & FD_CLOEXEC) != 0;
		tp_say("close_range(CLOEXEC): %s, %d of %d marked close-on-exec, %d open",
		       tp_res(r, errno), marked, n, count_open(fds, n));
	}
	{
		int r = close_range((unsigned)lowest, ~0u, 0);
		tp_say("close_range(first, ~0): %s, %d still open",
		       tp_res(r, errno), count_open(fds, n));
	}
	tp_check(count_open(fds, n) == 0, "close_range closed every descriptor");
	tp_check(io_after("after-close-range"), "I/O after close_range works");

	n = open_some(fds);
	closefrom(lowest);
	tp_say("closefrom: %d still open", count_open(fds, n));
	tp_check(count_open(fds, n) == 0, "closefrom closed every descriptor");
	tp_check(io_after("after-closefrom"), "I/O after closefrom works");

	/* a range in the middle: only those */
	n = open_some(fds);
	{
		int r = close_range((unsigned)fds[2], (unsigned)fds[3], 0);
		tp_say("close_range of 2 in the middle: %s, %d of %d open", tp_res(r, errno),
		       count_open(fds, n), n);
	}
	{
		int r = close_range(10, 5, 0);
		tp_say("close_range(10, 5): %s", tp_res(r, errno));
	}
	return tp_done();
}
