/*
 * tp-waitall - MSG_WAITALL returns everything asked for, however the
 * sender splits it: recv, and recvmsg into many small iovecs (more than
 * 64), also when part of the data was already read ahead by an earlier
 * recv (isolation holds bytes after a message boundary).  A WAITALL read
 * ended by the peer's close returns what came.
 *
 * tp-isolated: ^~ tcp: first recv got 50 of 100
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp.h"

#define TOTAL 1000
#define STREAM 1500

static void pattern(char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (i % 50 == 49) ? '\n' : (char)('a' + (i * 7) % 26);
}

/* Child: send BUF in pieces of 37 bytes with small pauses. */
static pid_t trickle(int fd, const char *buf, size_t n, int close_after)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	for (size_t off = 0; off < n; off += 37) {
		size_t k = n - off < 37 ? n - off : 37;
		tp_write_all(fd, buf + off, k);
		if (off % 185 == 0)
			tp_msleep(5);
	}
	if (close_after)
		shutdown(fd, SHUT_WR);
	_exit(0);
}

static void run(const char *what, int s[2])
{
	char want[STREAM + 64], got[STREAM + 64];
	ssize_t n;
	size_t first;
	pid_t pid;

	pattern(want, sizeof want);
	/* 1: plain recv(MSG_WAITALL) of everything */
	pid = trickle(s[0], want, TOTAL, 0);
	n = recv(s[1], got, TOTAL, MSG_WAITALL);
	waitpid(pid, NULL, 0);
	tp_check(n == TOTAL && !memcmp(got, want, TOTAL),
		 "%s: recv(MSG_WAITALL) returned all %d bytes (%s)", what, TOTAL,
		 tp_res(n, errno));

	/* 2: an ordinary recv first (may stop at the first newline and keep
	 * the rest), then recvmsg(MSG_WAITALL) into 100 iovecs of 10 bytes
	 * while the sender trickles the rest of a 1500-byte stream */
	tp_write_all(s[0], want, 200);
	tp_msleep(30);
	n = recv(s[1], got, 100, 0);
	first = n > 0 ? (size_t)n : 0;
	tp_vary("%s: first recv got %zu of 100", what, first);
	tp_check(n > 0 && !memcmp(got, want, first), "%s: first recv: a prefix", what);
	pid = trickle(s[0], want + 200, STREAM - 200, 0);
	{
		struct iovec iov[100];
		struct msghdr mh;
		for (int i = 0; i < 100; i++) {
			iov[i].iov_base = got + first + (size_t)i * 10;
			iov[i].iov_len = 10;
		}
		memset(&mh, 0, sizeof mh);
		mh.msg_iov = iov;
		mh.msg_iovlen = 100;
		n = recvmsg(s[1], &mh, MSG_WAITALL);
	}
	waitpid(pid, NULL, 0);
	tp_check(n == 1000, "%s: recvmsg(MSG_WAITALL, 100 iovecs) returned 1000 bytes (%s)",
		 what, tp_res(n, errno));
	if (n > 0) {
		size_t total = first + (size_t)n;
		tp_check(!memcmp(got, want, total),
			 "%s: ... in order after the first recv", what);
		/* what is left of the stream */
		size_t left = STREAM - total;
		size_t k = tp_read_full(s[1], got + total, left, NULL);
		tp_check(k == left && !memcmp(got, want, STREAM),
			 "%s: the rest of the stream follows in order", what);
	}

	/* 3: WAITALL cut short by the peer's shutdown */
	pid = trickle(s[0], want, 300, 1);
	n = recv(s[1], got, TOTAL, MSG_WAITALL);
	waitpid(pid, NULL, 0);
	tp_say("%s: recv(MSG_WAITALL) of %d, peer shut down after 300: %s",
	       what, TOTAL, tp_res(n, errno));
	tp_check(n == 300 && !memcmp(got, want, 300),
		 "%s: WAITALL ended by EOF returns what came", what);
}

int main(void)
{
	int s[2];

	tp_init("waitall", 30);
	if (tp_tcp_pair(s, NULL) == 0)
		run("tcp", s);
	if (tp_unix_pair(s) == 0)
		run("unix", s);
	return tp_done();
}
