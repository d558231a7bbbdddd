/*
 * tp-scm-rights - passing descriptors over a traced unix socket with
 * SCM_RIGHTS: the descriptor arrives (once, with the bytes it was sent
 * with or before the bytes that follow), works, and bytes around it are
 * not lost or reordered; a traced TCP socket passed to a child process
 * (which execs) keeps working there.
 *
 * tp-isolated: ^~ recvmsg calls: [4-9]
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp.h"

static int send_fd(int sock, const char *data, size_t n, int fd)
{
	struct iovec iov = { (void *)data, n };
	union { struct cmsghdr c; char b[CMSG_SPACE(sizeof(int))]; } u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (fd >= 0) {
		struct cmsghdr *cm;
		memset(&u, 0, sizeof u);
		mh.msg_control = u.b;
		mh.msg_controllen = sizeof u.b;
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof fd);
	}
	return sendmsg(sock, &mh, 0) == (ssize_t)n ? 0 : -1;
}

/* Receive until N bytes came; returns the descriptors received. */
static int recv_all(int sock, char *buf, size_t n, int *fds, int maxfds, int *calls)
{
	size_t got = 0;
	int nfd = 0;
	*calls = 0;
	while (got < n && *calls < 100) {
		struct iovec iov = { buf + got, n - got };
		union { struct cmsghdr c; char b[CMSG_SPACE(sizeof(int) * 4)]; } u;
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = u.b, .msg_controllen = sizeof u.b };
		ssize_t k = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		(*calls)++;
		if (k <= 0)
			break;
		got += (size_t)k;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
				int c = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
				for (int i = 0; i < c && nfd < maxfds; i++)
					memcpy(&fds[nfd++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			}
	}
	return nfd;
}

int main(int argc, char **argv)
{
	int s[2], p[2], q[2], fds[4], nfd, calls, t[2];
	char buf[64];

	if (argc > 2 && !strcmp(argv[1], "child")) {
		/* exec'd child: a TCP socket came as fd 3; answer through it */
		char b[8];
		if (tp_read_full(3, b, 4, NULL) != 4 || memcmp(b, "ask\n", 4))
			return 1;
		return tp_write_all(3, "ans\n", 4) ? 1 : 0;
	}
	tp_init("scm-rights", 30);
	if (tp_unix_pair(s) < 0 || pipe2(p, O_CLOEXEC) < 0 || pipe2(q, O_CLOEXEC) < 0)
		return 1;
	/* two messages with bytes before, between and after, two fds */
	send_fd(s[0], "one\ntwo\n", 8, -1);
	send_fd(s[0], "fd1\nx\n", 6, p[1]);
	send_fd(s[0], "fd2\n", 4, q[1]);
	send_fd(s[0], "end\n", 4, -1);
	nfd = recv_all(s[1], buf, 22, fds, 4, &calls);
	tp_say("received %s with %d descriptor(s)", tp_quote(buf, 22), nfd);
	tp_vary("recvmsg calls: %d", calls);
	if (nfd == 2) {
		char b[8];
		tp_check(write(fds[0], "P\n", 2) == 2 && tp_read_full(p[0], b, 2, NULL) == 2,
			 "the first received descriptor is the first pipe");
		tp_check(write(fds[1], "Q\n", 2) == 2 && tp_read_full(q[0], b, 2, NULL) == 2,
			 "the second received descriptor is the second pipe");
		tp_check((fcntl(fds[0], F_GETFD) & FD_CLOEXEC) != 0, "MSG_CMSG_CLOEXEC honoured");
		close(fds[0]);
		close(fds[1]);
	} else {
		tp_check(0, "two descriptors received");
	}

	/* a traced TCP socket handed to an exec'd child */
	if (tp_tcp_pair(t, NULL) == 0) {
		pid_t pid;
		int st = 0, got;
		send_fd(s[0], "tcp\n", 4, t[1]);
		got = recv_all(s[1], buf, 4, fds, 1, &calls);
		close(t[1]);
		pid = got == 1 ? fork() : -1;
		if (pid == 0) {
			dup2(fds[0], 3);
			execl(tp_self(), "tp-scm-rights", "child", "x", (char *)NULL);
			_exit(127);
		}
		if (got == 1)
			close(fds[0]);
		tp_write_all(t[0], "ask\n", 4);
		got = (int)tp_read_full(t[0], buf, 4, NULL);
		if (pid > 0)
			waitpid(pid, &st, 0);
		tp_check(got == 4 && !memcmp(buf, "ans\n", 4) && WIFEXITED(st) && WEXITSTATUS(st) == 0,
			 "a passed TCP socket works in an exec'd child");
	}
	return tp_done();
}
