/*
 * tp-sig-eintr - a signal interrupts a blocking call, with and without
 * SA_RESTART: read on a pipe, recv on a TCP socket and accept are
 * restarted with SA_RESTART and fail with EINTR without it; poll,
 * epoll_wait and select fail with EINTR either way.  Also the self-pipe
 * trick: the handler writes to a pipe while the main thread sleeps in
 * poll (inside the shim), and the next poll sees it.
 *
 * A child process plays the outside world: after 150 ms it signals the
 * parent, after 350 ms it makes the awaited event happen.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp.h"

static volatile sig_atomic_t caught;
static int self_pipe = -1;

static void on_usr1(int sig)
{
	int e = errno;
	(void)sig;
	caught++;
	if (self_pipe >= 0)
		(void)!write(self_pipe, "!", 1);
	errno = e;
}

static void handler(int restart)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigaction(SIGUSR1, &sa, NULL);
}

enum kind { K_READ, K_RECV, K_ACCEPT, K_POLL, K_EPOLL, K_SELECT };
static const char *const kname[] = { "read", "recv", "accept", "poll",
				     "epoll_wait", "select" };

/* Child: signal the parent, then make the event happen. */
static pid_t world(pid_t parent, int wfd, int port)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	tp_msleep(150);
	kill(parent, SIGUSR1);
	tp_msleep(200);
	if (wfd >= 0)
		(void)!write(wfd, "later\n", 6);
	if (port > 0) {
		int c = tp_tcp_connect(port);
		if (c >= 0) {
			(void)!write(c, "later\n", 6);
			tp_msleep(100);
			close(c);
		}
	}
	_exit(0);
}

static void one(enum kind k, int restart)
{
	int p[2] = { -1, -1 }, s[2] = { -1, -1 }, lis = -1, port = 0, fd;
	char buf[64];
	long r;
	int e;
	pid_t child;

	handler(restart);
	caught = 0;
	if (k == K_RECV) {
		if (tp_tcp_pair(s, NULL) < 0)
			return;
		fd = s[1];
	} else if (k == K_ACCEPT) {
		lis = tp_tcp_listen(&port);
		fd = lis;
	} else {
		if (pipe2(p, O_CLOEXEC) < 0)
			return;
		fd = p[0];
	}
	child = world(getpid(), k == K_RECV ? s[0] : p[1], k == K_ACCEPT ? port : 0);
	switch (k) {
	case K_READ:
		r = read(fd, buf, sizeof buf);
		break;
	case K_RECV:
		r = recv(fd, buf, sizeof buf, 0);
		break;
	case K_ACCEPT:
		r = accept(fd, NULL, NULL);
		break;
	case K_POLL: {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		r = poll(&pf, 1, 5000);
		break;
	}
	case K_EPOLL: {
		int ep = epoll_create1(EPOLL_CLOEXEC);
		struct epoll_event ev = { .events = EPOLLIN }, out;
		epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
		r = epoll_wait(ep, &out, 1, 5000);
		e = errno;
		close(ep);
		errno = e;
		break;
	}
	default: {
		fd_set rs;
		struct timeval tv = { 5, 0 };
		FD_ZERO(&rs);
		FD_SET(fd, &rs);
		r = select(fd + 1, &rs, NULL, NULL, &tv);
		break;
	}
	}
	e = errno;
	if (k == K_ACCEPT && r >= 0) {
		int got = (int)read((int)r, buf, sizeof buf);
		close((int)r);
		r = got;
	}
	waitpid(child, NULL, 0);
	tp_say("%s SA_RESTART=%d: %s, handler ran %d time(s)%s%s", kname[k],
	       restart, tp_res(r, e), (int)caught,
	       (k == K_READ || k == K_RECV || k == K_ACCEPT) && r > 0 ? ", got " : "",
	       (k == K_READ || k == K_RECV || k == K_ACCEPT) && r > 0 ? tp_quote(buf, (size_t)r) : "");
	{
		int restarts = restart && (k == K_READ || k == K_RECV || k == K_ACCEPT);
		tp_check(restarts ? r == 6 : (r == -1 && e == EINTR),
			 "%s SA_RESTART=%d: %s", kname[k], restart,
			 restarts ? "restarted, completed" : "interrupted with EINTR");
	}
	if (p[0] >= 0) { close(p[0]); close(p[1]); }
	if (s[0] >= 0) { close(s[0]); close(s[1]); }
	if (lis >= 0) close(lis);
}

/* The handler writes to a pipe the main loop polls. */
static void self_pipe_trick(void)
{
	int sp[2], q[2], polls = 0, woke = 0;
	pid_t child;

	if (pipe2(sp, O_CLOEXEC | O_NONBLOCK) < 0 || pipe2(q, O_CLOEXEC) < 0)
		return;
	self_pipe = sp[1];
	handler(1);
	caught = 0;
	child = world(getpid(), -1, 0);
	while (!woke && polls < 20) {
		struct pollfd pf[2] = { { .fd = sp[0], .events = POLLIN },
					{ .fd = q[0], .events = POLLIN } };
		int r = poll(pf, 2, 3000);
		polls++;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (pf[0].revents & POLLIN) {
			char c;
			woke = read(sp[0], &c, 1) == 1 && c == '!';
		}
	}
	waitpid(child, NULL, 0);
	self_pipe = -1;
	tp_check(woke && caught == 1, "self-pipe: the handler's byte woke the poll loop (handler ran %d time(s))",
		 (int)caught);
	tp_vary("self-pipe: %d polls", polls);
	close(sp[0]); close(sp[1]); close(q[0]); close(q[1]);
}

int main(void)
{
	tp_init("sig-eintr", 60);
	for (int restart = 0; restart < 2; restart++)
		for (int k = K_READ; k <= K_SELECT; k++)
			one((enum kind)k, restart);
	self_pipe_trick();
	return tp_done();
}
