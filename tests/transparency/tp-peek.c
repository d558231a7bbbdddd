/*
 * tp-peek - MSG_PEEK consumes nothing: peeking twice shows the same bytes,
 * the next read returns them, a peek on an empty non-blocking socket
 * fails with EAGAIN, a peek makes no fd less readable, and after a peek
 * the bytes are still in the socket for another program: a peek followed
 * by exec of a program that reads the socket on its stdin (inetd and
 * protocol multiplexers do this) must hand that program every byte.
 *
 * Isolation may shorten a read at a message boundary and hold the rest; a
 * peek then shows the held bytes (up to the next boundary), which are what
 * follows in the stream.
 *
 * tp-isolated: ^~ tcp: first read got 6 of 12
 * tp-isolated: ^~ tcp: peek after the first read: r=6$
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp.h"

static const char MSG[] = "hello\nworld\n";   /* 12 bytes, two lines */

static void basic(const char *what, int s[2])
{
	char a[64], b[64], c[64];
	ssize_t na, nb, nc;
	struct pollfd pf = { .fd = s[1], .events = POLLIN };

	tp_nonblock(s[1], 1);
	errno = 0;
	na = recv(s[1], a, sizeof a, MSG_PEEK);
	tp_say("%s: peek on an empty socket: %s", what, tp_res(na, errno));
	tp_write_all(s[0], MSG, 12);
	tp_msleep(50);
	na = recv(s[1], a, sizeof a, MSG_PEEK);
	nb = recv(s[1], b, sizeof b, MSG_PEEK | MSG_DONTWAIT);
	tp_vary("peek 1 saw %zd of 12", na);
	tp_check(na > 0 && na <= 12 && !memcmp(a, MSG, (size_t)na),
		 "%s: a peek shows a prefix of the stream", what);
	tp_check(nb == na && !memcmp(a, b, (size_t)na),
		 "%s: a second peek shows the same bytes", what);
	tp_check(poll(&pf, 1, 0) == 1 && (pf.revents & POLLIN),
		 "%s: still readable after the peeks", what);
	{
		size_t got = 0;
		int reads = 0;
		char d[64];
		ssize_t nd;

		nc = recv(s[1], c, sizeof c, 0);
		got = nc > 0 ? (size_t)nc : 0;
		reads = nc > 0;
		tp_vary("%s: first read got %zu of 12", what, got);
		tp_check(nc > 0 && !memcmp(c, a, (size_t)(nc < na ? nc : na)),
			 "%s: the read returns the peeked bytes first", what);
		/* a peek at what is left (the shim may hold it); right after
		 * a message end on a non-blocking fd it may meet the
		 * EAGAIN-once, which a readiness call clears */
		errno = 0;
		nd = recv(s[1], d, sizeof d, MSG_PEEK);
		tp_vary("%s: peek right after the first read: %s", what,
			tp_res(nd, errno));
		tp_check((nd < 0 && errno == EAGAIN) ||
			 (nd > 0 && got + (size_t)nd <= 12 &&
			  !memcmp(d, MSG + got, (size_t)nd)),
			 "%s: a peek right after a read: what follows, or EAGAIN", what);
		poll(&pf, 1, 0);
		errno = 0;
		nd = recv(s[1], d, sizeof d, MSG_PEEK);
		tp_vary("%s: peek after the first read: %s", what, tp_res(nd, errno));
		tp_check(got == 12 ? (nd < 0 && errno == EAGAIN)
				   : (nd > 0 && got + (size_t)nd <= 12 &&
				      !memcmp(d, MSG + got, (size_t)nd)),
			 "%s: a peek after a read shows what follows it", what);
		while (got < 12) {
			nc = recv(s[1], c + got, sizeof c - got, 0);
			if (nc < 0 && errno == EAGAIN) {
				poll(&pf, 1, 1000);
				continue;
			}
			if (nc <= 0)
				break;
			got += (size_t)nc;
			reads++;
		}
		tp_say("%s: reads delivered %s", what, tp_quote(c, got));
		tp_vary("%s: %d reads", what, reads);
	}
	errno = 0;
	nc = recv(s[1], c, sizeof c, MSG_PEEK);
	tp_say("%s: peek after everything was read: %s", what, tp_res(nc, errno));
	tp_nonblock(s[1], 0);
}

/* Peek, then exec a program that reads the socket as its stdin. */
static void peek_then_exec(const char *what, int s[2])
{
	char a[64], out[128];
	ssize_t na;
	int o[2];
	pid_t pid;
	size_t got;
	int st = 0;

	tp_write_all(s[0], MSG, 12);
	close(s[0]);
	tp_msleep(50);
	na = recv(s[1], a, sizeof a, MSG_PEEK);
	tp_check(na > 0 && !memcmp(a, MSG, (size_t)na),
		 "%s: peeked before exec", what);
	if (pipe2(o, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		dup2(s[1], 0);
		dup2(o[1], 1);
		execl(tp_self(), "tp-peek", "cat", (char *)NULL);
		_exit(127);
	}
	close(o[1]);
	close(s[1]);
	got = tp_read_eof(o[0], out, sizeof out, NULL);
	close(o[0]);
	waitpid(pid, &st, 0);
	tp_say("%s: the exec'd reader got %s (exit %d)", what, tp_quote(out, got),
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	tp_check(got == 12 && !memcmp(out, MSG, 12),
		 "%s: a peek leaves every byte in the socket for the next program", what);
}

/* The exec'd helper: copy stdin to stdout until EOF (bounded). */
static int cat_main(void)
{
	char buf[256];
	size_t n = tp_read_eof(0, buf, sizeof buf, NULL);
	tp_write_all(1, buf, n);
	return 0;
}

int main(int argc, char **argv)
{
	int s[2];

	if (argc > 1 && !strcmp(argv[1], "cat"))
		return cat_main();
	tp_init("peek", 30);
	if (tp_tcp_pair(s, NULL) == 0) {
		basic("tcp", s);
		close(s[0]);
		close(s[1]);
	}
	if (tp_unix_pair(s) == 0) {
		basic("unix", s);
		close(s[0]);
		close(s[1]);
	}
	if (tp_tcp_pair(s, NULL) == 0)
		peek_then_exec("tcp", s);
	if (tp_unix_pair(s) == 0)
		peek_then_exec("unix", s);
	return tp_done();
}
