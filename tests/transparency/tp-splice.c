/*
 * tp-splice - sendfile and splice move bytes the application never sees:
 * sendfile from a file to a socket (with and without an offset pointer;
 * the file position and the offset move exactly as without the shim),
 * splice from a socket into a pipe and from a pipe into a socket.  A
 * splice that follows an ordinary read must move the bytes that come next
 * in the stream, even if the shim read some of them ahead (isolation).
 *
 * tp-isolated: ^~ read before splice got 4 of 64$
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tp.h"

static int tmpfile_with(const char *data, size_t n)
{
	char path[] = "/tmp/tp-splice.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	unlink(path);
	tp_write_all(fd, data, n);
	lseek(fd, 0, SEEK_SET);
	return fd;
}

static void do_sendfile(const char *what, int s[2])
{
	static const char body[] = "line one\nline two\nline three\n"; /* 29 */
	char got[64];
	int f = tmpfile_with(body, 29);
	off_t off = 5;
	ssize_t n;
	size_t k;

	/* with an offset pointer: the file position does not move */
	n = sendfile(s[0], f, &off, 10);
	tp_say("%s: sendfile(off=5, 10): %s, off now %lld, file position %lld",
	       what, tp_res(n, errno), (long long)off,
	       (long long)lseek(f, 0, SEEK_CUR));
	k = tp_read_full(s[1], got, 10, NULL);
	tp_say("%s: peer got %s", what, tp_quote(got, k));
	/* without: from the file position, which moves */
	lseek(f, 9, SEEK_SET);
	n = sendfile(s[0], f, NULL, 100);
	tp_say("%s: sendfile(NULL, 100) from position 9: %s, position now %lld",
	       what, tp_res(n, errno), (long long)lseek(f, 0, SEEK_CUR));
	k = tp_read_full(s[1], got, 20, NULL);
	tp_say("%s: peer got %s", what, tp_quote(got, k));
	tp_check(k == 20 && !memcmp(got, body + 9, 20), "%s: sendfile bytes arrive intact", what);
	close(f);
}

static void do_splice(const char *what, int s[2])
{
	int p[2];
	char got[128];
	ssize_t n;
	size_t k;

	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	/* socket -> pipe */
	tp_write_all(s[0], "spliced\n", 8);
	tp_msleep(30);
	n = splice(s[1], NULL, p[1], NULL, 64, 0);
	k = n > 0 ? tp_read_full(p[0], got, (size_t)n, NULL) : 0;
	tp_say("%s: splice socket->pipe: %s, pipe holds %s", what, tp_res(n, errno),
	       tp_quote(got, k));
	/* pipe -> socket */
	tp_write_all(p[1], "back\n", 5);
	n = splice(p[0], NULL, s[1], NULL, 64, 0);
	k = tp_read_full(s[0], got, 5, NULL);
	tp_say("%s: splice pipe->socket: %s, peer got %s", what, tp_res(n, errno),
	       tp_quote(got, k));

	close(p[0]);
	close(p[1]);
}

/* An ordinary read first (isolation may stop it at the first newline and
 * hold the rest), then a splice: it must move what follows the read. */
static void read_then_splice(const char *what, int s[2])
{
	static const char want[] = "abc\ndef\nghi\njkl\n";
	char got[64], sp[64];
	int p[2], polls = 0;
	ssize_t r, n;
	size_t have, k;

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return;
	tp_write_all(s[0], want, 12);
	tp_msleep(30);
	r = read(s[1], got, 64);
	tp_vary("read before splice got %zd of 64", r);
	tp_check(r > 0 && !memcmp(got, want, (size_t)r),
		 "%s: the read returns the start of the stream", what);
	have = r > 0 ? (size_t)r : 0;
	tp_write_all(s[0], want + 12, 4);
	tp_msleep(30);
	n = splice(s[1], NULL, p[1], NULL, 64, 0);
	tp_vary("splice after the read: %s", tp_res(n, errno));
	k = n > 0 ? tp_read_full(p[0], sp, (size_t)n, NULL) : 0;
	tp_vary("%s: the splice moved %s after %s", what, tp_quote(sp, k),
		tp_quote(got, have));
	tp_check(n > 0 && have + k <= 16 && !memcmp(sp, want + have, k),
		 "%s: the splice moved the bytes that follow the read", what);
	memcpy(got + have, sp, k);
	have += k;
	tp_nonblock(s[1], 1);
	while (have < 16 && polls < 20) {  /* whatever remains comes by read */
		struct pollfd pf = { .fd = s[1], .events = POLLIN };
		ssize_t m = read(s[1], got + have, 64 - have);
		if (m > 0) {
			have += (size_t)m;
			continue;
		}
		if (m < 0 && errno == EAGAIN) {
			poll(&pf, 1, 100);
			polls++;
			continue;
		}
		break;
	}
	tp_nonblock(s[1], 0);
	tp_check(have == 16 && !memcmp(got, want, 16),
		 "%s: read + splice + read delivered the stream once, in order: %s",
		 what, tp_quote(got, have));
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	int s[2];

	tp_init("splice", 30);
	if (tp_tcp_pair(s, NULL) == 0) {
		read_then_splice("tcp", s);
		close(s[0]);
		close(s[1]);
	}
	if (tp_unix_pair(s) == 0) {
		read_then_splice("unix", s);
		close(s[0]);
		close(s[1]);
	}
	if (tp_tcp_pair(s, NULL) == 0) {
		do_sendfile("tcp", s);
		do_splice("tcp", s);
	}
	if (tp_unix_pair(s) == 0) {
		do_sendfile("unix", s);
		do_splice("unix", s);
	}
	return tp_done();
}
