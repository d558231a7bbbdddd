/*
 * tp-nbconnect - non-blocking connect: EINPROGRESS, then poll for
 * writable, SO_ERROR 0, data both ways; to a port nobody listens on:
 * EINPROGRESS, then POLLOUT|POLLERR|POLLHUP and SO_ERROR ECONNREFUSED; a
 * second connect on a connected socket: EISCONN.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tp.h"

static const char *revs(short r)
{
	static char b[64];
	snprintf(b, sizeof b, "%s%s%s%s", r & POLLIN ? "IN " : "", r & POLLOUT ? "OUT " : "",
		 r & POLLERR ? "ERR " : "", r & POLLHUP ? "HUP " : "");
	return b;
}

static void one(int port, int listening)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), r, e, err = -1;
	socklen_t l = sizeof err;
	struct pollfd pf = { .fd = fd, .events = POLLOUT };

	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)port);
	r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
	e = errno;
	tp_say("%s: connect: %s", listening ? "listening" : "refused", tp_res(r, e));
	r = poll(&pf, 1, 2000);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l);
	tp_say("%s: poll: %s revents %s, SO_ERROR %s", listening ? "listening" : "refused",
	       tp_res(r, errno), revs(pf.revents), err ? tp_errname(err) : "0");
	if (listening) {
		r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
		tp_say("listening: connect again: %s", tp_res(r, errno));
	}
	if (listening && err == 0) {
		tp_nonblock(fd, 0);
		tp_check(write(fd, "hi\n", 3) == 3, "connected: write");
	}
	close(fd);
}

int main(void)
{
	int port, lis, dead, a;
	char buf[8];

	tp_init("nbconnect", 30);
	lis = tp_tcp_listen(&port);
	if (lis < 0)
		return 1;
	one(port, 1);
	a = accept(lis, NULL, NULL);
	tp_check(a >= 0 && tp_read_full(a, buf, 3, NULL) == 3 && !memcmp(buf, "hi\n", 3),
		 "the listener got the bytes");
	close(a);
	dead = tp_tcp_listen(&port);
	close(dead);           /* nobody listens on PORT now */
	one(port, 0);
	close(lis);
	return tp_done();
}
