/*
 * tp-halfclose - shutdown(SHUT_WR) and reading to end of file: the client
 * sends two lines and shuts down its write side, the server reads to EOF
 * (several reads under isolation), answers, closes; the client reads the
 * answer to EOF.  Reads after EOF keep returning 0; a write after
 * SHUT_WR fails with EPIPE (MSG_NOSIGNAL).
 *
 * tp-isolated: ^~ tcp: server: 2 reads
 */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tp.h"

static void run(const char *what, int c, int s)
{
	char buf[128];
	size_t n;
	int reads;
	ssize_t r;

	tp_write_all(c, "req one\nreq two\n", 16);
	tp_say("%s: client shutdown(SHUT_WR): %s", what, tp_res(shutdown(c, SHUT_WR), errno));
	r = send(c, "x", 1, MSG_NOSIGNAL);
	tp_say("%s: client send after SHUT_WR: %s", what, tp_res(r, errno));
	n = tp_read_eof(s, buf, sizeof buf, &reads);
	tp_say("%s: server read to EOF: %s", what, tp_quote(buf, n));
	tp_check(n == 16 && !memcmp(buf, "req one\nreq two\n", 16),
		 "%s: the server got both requests, then EOF", what);
	tp_vary("%s: server: %d reads", what, reads);
	r = read(s, buf, sizeof buf);
	tp_say("%s: server read after EOF: %s", what, tp_res(r, errno));
	r = read(s, buf, sizeof buf);
	tp_say("%s: and again: %s", what, tp_res(r, errno));
	tp_write_all(s, "answer\n", 7);
	close(s);
	n = tp_read_eof(c, buf, sizeof buf, &reads);
	tp_say("%s: client read to EOF: %s", what, tp_quote(buf, n));
	tp_check(n == 7 && !memcmp(buf, "answer\n", 7), "%s: the client got the answer, then EOF", what);
	{
		struct pollfd pf = { .fd = c, .events = POLLIN };
		int k = poll(&pf, 1, 0);
		tp_say("%s: client poll after EOF: %s revents 0x%x", what, tp_res(k, errno),
		       pf.revents & (POLLIN | POLLHUP));
	}
	close(c);
}

int main(void)
{
	int s[2];

	tp_init("halfclose", 30);
	if (tp_tcp_pair(s, NULL) == 0)
		run("tcp", s[0], s[1]);
	if (tp_unix_pair(s) == 0)
		run("unix", s[0], s[1]);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0)
		run("socketpair", s[0], s[1]);
	return tp_done();
}
