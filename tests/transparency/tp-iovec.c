/*
 * tp-iovec - readv and writev with many iovecs: writev of IOV_MAX (1024)
 * pieces of varied length, read back with readv into 1000 iovecs of
 * other lengths (zero-length ones among them), on a pipe, a TCP and a
 * unix socket; the bytes arrive whole and in order however the reads are
 * cut.  readv with more than IOV_MAX iovecs fails with EINVAL.
 *
 * tp-isolated: ^~ tcp: [0-9]{2,} readv calls
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp.h"

#define NW 1024
#define NR 1000

static char src[NW * 8], dst[NW * 8 + 64];

static void run(const char *what, int rfd, int wfd)
{
	static struct iovec wv[NW], rv[NR];
	size_t total = 0, off = 0, got = 0;
	int calls = 0;
	pid_t pid;

	for (int i = 0; i < NW; i++) {
		size_t len = (size_t)(i % 7) + 1;
		wv[i].iov_base = src + total;
		wv[i].iov_len = len;
		total += len;
	}
	for (size_t i = 0; i < total; i++)
		src[i] = (i % 40 == 39) ? '\n' : (char)('A' + (i * 11) % 26);
	pid = fork();
	if (pid == 0) {
		ssize_t n = writev(wfd, wv, NW);
		_exit(n == (ssize_t)total ? 0 : 1);
	}
	memset(dst, 0, sizeof dst);
	while (got < total && calls < 5000) {
		int cnt = 0;
		off = got;
		for (int i = 0; i < NR && off < total + 16; i++) {
			size_t len = (size_t)(i % 5);     /* 0..4: zero-length ones too */
			rv[cnt].iov_base = dst + off;
			rv[cnt].iov_len = len;
			off += len;
			cnt++;
		}
		ssize_t n = readv(rfd, rv, cnt);
		calls++;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	{
		int st = 0;
		waitpid(pid, &st, 0);
		tp_check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: writev of %d iovecs wrote all %zu bytes",
			 what, NW, total);
	}
	tp_check(got == total && !memcmp(src, dst, total), "%s: readv into %d iovecs got all %zu bytes in order",
		 what, NR, total);
	tp_vary("%s: %d readv calls", what, calls);
}

int main(void)
{
	int p[2], s[2];
	static struct iovec big[IOV_MAX + 1];
	char b[4];

	tp_init("iovec", 30);
	if (pipe(p) == 0)
		run("pipe", p[0], p[1]);
	if (tp_tcp_pair(s, NULL) == 0)
		run("tcp", s[1], s[0]);
	if (tp_unix_pair(s) == 0) {
		run("unix", s[1], s[0]);
		for (int i = 0; i <= IOV_MAX; i++) {
			big[i].iov_base = b;
			big[i].iov_len = 1;
		}
		ssize_t n = readv(s[1], big, IOV_MAX + 1);
		tp_say("readv with %d iovecs: %s", IOV_MAX + 1, tp_res(n, errno));
	}
	return tp_done();
}
