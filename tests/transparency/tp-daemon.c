/*
 * tp-daemon - a daemon-style start: close every descriptor from 3 up to
 * the limit (as many daemons do with a loop of close()), then do I/O.
 * The shim's own descriptors must be invisible to the loop (close fails
 * with EBADF on them, as on any unused number: the count of descriptors
 * the loop really closed is the same traced or not) and must survive it,
 * so the events of the I/O that follows are still recorded.
 *
 * tp-events: chan .*path=.*after-daemon
 * tp-events: msg fd=[0-9]+ dir=in
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tp.h"

int main(void)
{
	long max = sysconf(_SC_OPEN_MAX);
	int closed = 0, p[2], s[2], ok;
	char buf[16];

	tp_init("daemon", 30);
	if (max > 1 << 20)
		max = 1 << 20;
	for (int fd = 3; fd < max; fd++)
		if (close(fd) == 0)
			closed++;
	tp_say("closed %d descriptors from 3 to %s", closed, max > 1024 ? "the limit" : "1024");
	/* and the narrower loop of older daemons, again: nothing left */
	closed = 0;
	for (int fd = 3; fd <= 1024; fd++)
		if (close(fd) == 0)
			closed++;
	tp_say("closing 3..1024 again closed %d", closed);

	ok = pipe(p) == 0 && write(p[1], "pipe\n", 5) == 5 &&
	     tp_read_full(p[0], buf, 5, NULL) == 5;
	tp_check(ok, "pipe I/O after the close loop");
	tp_say("the pipe got descriptors %d and %d", p[0], p[1]);
	ok = tp_tcp_pair(s, NULL) == 0 && write(s[0], "tcp\n", 4) == 4 &&
	     tp_read_full(s[1], buf, 4, NULL) == 4;
	tp_check(ok, "TCP I/O after the close loop");
	{
		char dir[] = "/tmp/tp-dm.XXXXXX";
		struct sockaddr_un sa;
		int l, c = -1, a = -1;
		ok = 0;
		if (mkdtemp(dir)) {
			memset(&sa, 0, sizeof sa);
			sa.sun_family = AF_UNIX;
			snprintf(sa.sun_path, sizeof sa.sun_path, "%s/after-daemon", dir);
			l = socket(AF_UNIX, SOCK_STREAM, 0);
			if (l >= 0 && bind(l, (struct sockaddr *)&sa, sizeof sa) == 0 &&
			    listen(l, 1) == 0 && (c = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0 &&
			    connect(c, (struct sockaddr *)&sa, sizeof sa) == 0 &&
			    (a = accept(l, NULL, NULL)) >= 0)
				ok = write(c, "unix\n", 5) == 5 && tp_read_full(a, buf, 5, NULL) == 5;
			if (a >= 0) close(a);
			if (c >= 0) close(c);
			if (l >= 0) close(l);
			unlink(sa.sun_path);
			rmdir(dir);
		}
		tp_check(ok, "unix socket I/O after the close loop");
	}
	return tp_done();
}
