/*
 * tp-dup2 - dup2/dup3/dup/F_DUPFD onto and from traced descriptors.  dup2
 * onto a socket whose input the shim holds: the number now reads the new
 * file, never the old socket's bytes.  dup shares: bytes held for one
 * number are read through the other, in order.  Bad arguments fail as
 * without the shim and leave the target intact.
 *
 * tp-isolated: ^~ dup2: first read got 2 of 4
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tp.h"

int main(void)
{
	int s[2], p[2], t[2];
	char buf[64];
	ssize_t n;
	size_t k;

	tp_init("dup2", 30);
	if (tp_unix_pair(s) < 0 || pipe2(p, O_CLOEXEC) < 0 || tp_tcp_pair(t, NULL) < 0)
		return 1;

	/* dup2 onto a socket with input read ahead */
	tp_write_all(s[0], "a\nb\n", 4);
	tp_msleep(20);
	n = read(s[1], buf, sizeof buf);
	tp_vary("dup2: first read got %zd of 4", n);
	tp_write_all(p[1], "pipe\n", 5);
	{
		int r = dup2(p[0], s[1]);
		tp_say("dup2(pipe, socket): %s", tp_res(r == s[1] ? 0 : r, errno));
	}
	k = tp_read_full(s[1], buf, 5, NULL);
	tp_say("dup2: the number now reads %s", tp_quote(buf, k));
	tp_check(k == 5 && !memcmp(buf, "pipe\n", 5), "dup2: nothing of the old socket leaks");

	/* dup shares the held input */
	{
		int d;
		char got[8];
		size_t have = 0;
		tp_write_all(t[0], "c\nd\n", 4);
		tp_msleep(20);
		n = read(t[1], got, 8);
		have = n > 0 ? (size_t)n : 0;
		d = dup(t[1]);
		tp_nonblock(d, 1);
		while (have < 4) {
			struct pollfd pf = { .fd = d, .events = POLLIN };
			if (poll(&pf, 1, 500) != 1)
				break;
			n = read(d, got + have, 8 - have);
			if (n <= 0)
				break;
			have += (size_t)n;
		}
		tp_say("dup: read through both numbers: %s", tp_quote(got, have));
		tp_check(have == 4 && !memcmp(got, "c\nd\n", 4), "dup: held bytes come through the duplicate, in order");
		close(d);
		tp_nonblock(t[1], 0);
	}

	/* F_DUPFD at or above 100, dup3 with O_CLOEXEC */
	{
		int d = fcntl(t[1], F_DUPFD, 100), e = dup3(t[1], 150, O_CLOEXEC);
		tp_say("F_DUPFD(100): %s, dup3(150, O_CLOEXEC): %s, cloexec %d",
		       d >= 100 ? "ok" : tp_res(d, errno), e == 150 ? "ok" : tp_res(e, errno),
		       (fcntl(150, F_GETFD) & FD_CLOEXEC) != 0);
		tp_write_all(t[0], "e\n", 2);
		k = tp_read_full(150, buf, 2, NULL);
		tp_check(k == 2 && !memcmp(buf, "e\n", 2), "dup3: the duplicate reads the socket");
		close(d);
		close(150);
	}

	/* bad arguments */
	{
		int r1 = dup2(9999, t[1]), e1 = errno;
		int r2 = dup3(t[1], t[1], 0), e2 = errno;
		int r3 = dup2(t[1], t[1]);
		int r4 = dup2(t[1], -1), e4 = errno;
		tp_say("dup2(9999, fd): %s; dup3(fd, fd): %s; dup2(fd, fd): %s; dup2(fd, -1): %s",
		       tp_res(r1, e1), tp_res(r2, e2), r3 == t[1] ? "fd" : tp_res(r3, errno),
		       tp_res(r4, e4));
		tp_write_all(t[0], "f\n", 2);
		k = tp_read_full(t[1], buf, 2, NULL);
		tp_check(k == 2 && !memcmp(buf, "f\n", 2), "failed dups leave the target working");
	}

	/* dup2 onto a TCP end, then the last reference closes: the peer
	 * sees the end of file */
	{
		int q[2], r;
		if (pipe(q) == 0) {
			r = dup2(q[0], t[1]);
			n = read(t[0], buf, sizeof buf);
			tp_say("dup2 over the last TCP reference: %s; peer reads %s", tp_res(r == t[1] ? 0 : r, errno),
			       tp_res(n, errno));
			close(q[0]);
			close(q[1]);
		}
	}
	return tp_done();
}
