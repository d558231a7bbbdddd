/*
 * sigwait - a signal handler writes to a self-pipe (a socketpair) while
 * the program sleeps in an event loop's wait: epoll_pwait, a ppoll of two
 * fds, a pselect of two fds, in turns.  SIGUSR1 is blocked except during
 * those waits (their signal mask), so the handler always runs inside one.
 * The loop reads what the handler wrote and counts it.  A child process
 * sends SIGUSR1 every 4 ms, N times (default 150); the loop runs until
 * the child is done and every byte the handler wrote is read, or 10 s.
 * Prints "sigwait: S signals, B bytes read, K in epoll, ..." and exits 0
 * when every byte the handler wrote was read and at least half the
 * signals were seen (close ones may merge).
 *
 * The handler's write happens inside the shim's wait wrapper (the shim is
 * re-entered); sigwait.sh checks that it is recorded, not dropped.
 *
 * "sigwait N read": the handler runs inside a blocking read instead (a
 * pipe the child writes a byte to 2 ms after each signal; SIGUSR1 never
 * blocked; the first half of the run without SA_RESTART, the read fails
 * EINTR, the second half with it, the kernel restarts the read).  After
 * each byte from the pipe the loop drains the socketpair.  Prints
 * "sigread: S signals, B bytes read, P bytes from the pipe".
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int sp[2] = { -1, -1 };
static volatile sig_atomic_t caught;

static void on_usr1(int sig)
{
	int e = errno;
	(void)sig;
	caught++;
	(void)!write(sp[1], "!", 1);
	errno = e;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int read_mode(int n)
{
	int pipefd[2], got = 0, fromkid = 0, restart = 0;
	struct sigaction sa;
	pid_t parent = getpid(), kid;
	double t0 = now();

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0 || pipe(pipefd) < 0) {
		perror("sigwait: setup");
		return 2;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	kid = fork();
	if (kid < 0) {
		perror("sigwait: fork");
		return 2;
	}
	if (kid == 0) {
		struct timespec d = { 0, 2000000 };
		close(pipefd[0]);
		for (int i = 0; i < n; i++) {
			nanosleep(&d, NULL);
			kill(parent, SIGUSR1);
			nanosleep(&d, NULL);
			(void)!write(pipefd[1], "x", 1);
		}
		_exit(0);
	}
	close(pipefd[1]);
	for (;;) {
		char buf[64];
		if (!restart && caught >= n / 2) {
			sa.sa_flags = SA_RESTART;
			sigaction(SIGUSR1, &sa, NULL);
			restart = 1;
		}
		ssize_t r = read(pipefd[0], buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r > 0)
			fromkid += (int)r;
		/* what the handler wrote so far */
		ssize_t k;
		while ((k = recv(sp[0], buf, sizeof buf, MSG_DONTWAIT)) > 0)
			got += (int)k;
		if (r <= 0 || now() - t0 > 20)
			break;
	}
	waitpid(kid, NULL, 0);
	{
		char buf[64];
		ssize_t k;
		while ((k = recv(sp[0], buf, sizeof buf, MSG_DONTWAIT)) > 0)
			got += (int)k;
	}
	printf("sigread: %d signals, %d bytes read, %d bytes from the pipe\n",
	       (int)caught, got, fromkid);
	return got == caught && fromkid == n && caught >= n / 2 ? 0 : 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 150;
	int other[2], ep, got = 0, turns[3] = { 0, 0, 0 }, k = 0;
	struct sigaction sa;
	sigset_t block, during;
	struct epoll_event ev;
	pid_t parent = getpid(), kid;
	double t0 = now();

	if (argc > 2 && strcmp(argv[2], "read") == 0)
		return n < 1 || n > 10000 ? 2 : read_mode(n);
	if (n < 1 || n > 10000 ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0 || pipe(other) < 0 ||
	    (ep = epoll_create1(0)) < 0) {
		perror("sigwait: setup");
		return 2;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;          /* no SA_RESTART: waits fail EINTR */
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &during);
	sigdelset(&during, SIGUSR1);
	ev.events = EPOLLIN;
	ev.data.fd = sp[0];
	epoll_ctl(ep, EPOLL_CTL_ADD, sp[0], &ev);
	ev.data.fd = other[0];
	epoll_ctl(ep, EPOLL_CTL_ADD, other[0], &ev);

	kid = fork();
	if (kid < 0) {
		perror("sigwait: fork");
		return 2;
	}
	if (kid == 0) {
		struct timespec d = { 0, 4000000 };
		for (int i = 0; i < n; i++) {
			nanosleep(&d, NULL);
			kill(parent, SIGUSR1);
		}
		_exit(0);
	}
	int done = 0;
	/* until the child has sent them all and every handler write is read
	 * (signals sent close together may arrive as one) */
	while (!(done && got == caught) && now() - t0 < 10) {
		if (!done && waitpid(kid, NULL, WNOHANG) == kid)
			done = 1;
		int which = k++ % 3, ready = 0;
		char buf[64];
		if (which == 0) {
			ready = epoll_pwait(ep, &ev, 1, 200, &during) > 0 &&
				ev.data.fd == sp[0];
		} else if (which == 1) {
			struct pollfd p[2] = { { sp[0], POLLIN, 0 },
					       { other[0], POLLIN, 0 } };
			struct timespec to = { 0, 200000000 };
			ready = ppoll(p, 2, &to, &during) > 0 &&
				(p[0].revents & POLLIN);
		} else {
			fd_set rd;
			struct timespec to = { 0, 200000000 };
			FD_ZERO(&rd);
			FD_SET(sp[0], &rd);
			FD_SET(other[0], &rd);
			ready = pselect((sp[0] > other[0] ? sp[0] : other[0]) + 1,
					&rd, NULL, NULL, &to, &during) > 0 &&
				FD_ISSET(sp[0], &rd);
		}
		if (!ready)
			continue;
		ssize_t r = read(sp[0], buf, sizeof buf);
		if (r > 0) {
			got += (int)r;
			turns[which] += (int)r;
		}
	}
	if (!done)
		waitpid(kid, NULL, 0);
	printf("sigwait: %d signals, %d bytes read, %d in epoll, %d in poll, %d in select\n",
	       (int)caught, got, turns[0], turns[1], turns[2]);
	return got == caught && caught >= n / 2 ? 0 : 1;
}
