/*
 * tp-epoll - epoll: level-triggered with several fds ready,
 * edge-triggered read-until-EAGAIN loops, an edge-triggered peer that
 * sends and closes (the end of file must still be seen), EPOLLONESHOT
 * (disarmed until EPOLL_CTL_MOD re-arms it).
 *
 * Isolation may hand over one ready fd per call and report an fd again
 * while the shim holds input for it; the loops below are written as real
 * event loops are, so what they collect must not change.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tp.h"

/* Read FD until EAGAIN or EOF, appending to BUF.  Returns 1 on EOF. */
static int drain(int fd, char *buf, size_t *len, size_t cap, int *eagains)
{
	for (;;) {
		ssize_t n = read(fd, buf + *len, cap - *len);
		if (n > 0) {
			*len += (size_t)n;
			continue;
		}
		if (n == 0)
			return 1;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN && eagains)
			(*eagains)++;
		return 0;
	}
}

static void level_triggered(void)
{
	int p[3][2], ep = epoll_create1(EPOLL_CLOEXEC), calls = 0, events = 0;
	char got[3][16];
	size_t len[3] = { 0, 0, 0 };
	struct epoll_event ev;

	for (int i = 0; i < 3; i++) {
		char m[8];
		if (pipe2(p[i], O_NONBLOCK | O_CLOEXEC) < 0)
			return;
		ev.events = EPOLLIN;
		ev.data.u32 = (uint32_t)i;
		epoll_ctl(ep, EPOLL_CTL_ADD, p[i][0], &ev);
		snprintf(m, sizeof m, "p%d\n", i);
		tp_write_all(p[i][1], m, 3);
	}
	while (len[0] < 3 || len[1] < 3 || len[2] < 3) {
		struct epoll_event out[8];
		int n = epoll_wait(ep, out, 8, 1000);
		calls++;
		if (n <= 0) {
			tp_check(0, "LT: epoll_wait reported %s before all input was read",
				 tp_res(n, errno));
			break;
		}
		for (int k = 0; k < n; k++) {
			int i = (int)out[k].data.u32;
			events++;
			if (!(out[k].events & EPOLLIN))
				continue;
			drain(p[i][0], got[i], &len[i], sizeof got[i], NULL);
		}
	}
	for (int i = 0; i < 3; i++)
		tp_say("LT: pipe %d delivered %s", i, tp_quote(got[i], len[i]));
	tp_vary("LT: %d calls, %d events", calls, events);
	{
		struct epoll_event out[8];
		int n = epoll_wait(ep, out, 8, 100);
		tp_check(n == 0, "LT: nothing more to report (%s)", tp_res(n, errno));
	}
	for (int i = 0; i < 3; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
	close(ep);
}

static void edge_triggered(void)
{
	int p[2], ep = epoll_create1(EPOLL_CLOEXEC), calls = 0, eagains = 0;
	char got[64];
	size_t len = 0;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };

	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		return;
	epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
	tp_write_all(p[1], "a\nb\nc\n", 6);
	while (len < 6) {
		struct epoll_event out[4];
		int n = epoll_wait(ep, out, 4, 1000);
		calls++;
		if (n <= 0) {
			tp_check(0, "ET: no edge reported with %zu of 6 bytes read (%s)",
				 len, tp_res(n, errno));
			break;
		}
		drain(p[0], got, &len, sizeof got, &eagains);
	}
	tp_say("ET: delivered %s", tp_quote(got, len));
	tp_vary("ET: %d calls, %d EAGAIN", calls, eagains);
	{
		struct epoll_event out[4];
		int n = epoll_wait(ep, out, 4, 100);
		tp_check(n == 0, "ET: no edge without new input (%s)", tp_res(n, errno));
	}
	tp_write_all(p[1], "d\n", 2);
	{
		struct epoll_event out[4];
		int n = epoll_wait(ep, out, 4, 1000);
		tp_check(n == 1, "ET: new input makes a new edge (%s)", tp_res(n, errno));
		len = 0;
		drain(p[0], got, &len, sizeof got, NULL);
		tp_say("ET: then delivered %s", tp_quote(got, len));
	}
	close(p[0]);
	close(p[1]);
	close(ep);
}

/* The peer sends one message and closes before the loop looks: the end of
 * file comes with the same edge as the data. */
static void edge_eof(const char *what, int rfd, int wfd)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), eof = 0, calls = 0;
	char got[64];
	size_t len = 0;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET };

	tp_nonblock(rfd, 1);
	tp_write_all(wfd, "x\n", 2);
	close(wfd);
	epoll_ctl(ep, EPOLL_CTL_ADD, rfd, &ev);
	while (!eof) {
		struct epoll_event out[4];
		int n = epoll_wait(ep, out, 4, 2000);
		calls++;
		if (n <= 0) {
			tp_check(0, "ET+EOF %s: end of file never seen: epoll_wait %s after %zu bytes",
				 what, tp_res(n, errno), len);
			break;
		}
		eof = drain(rfd, got, &len, sizeof got, NULL);
	}
	tp_say("ET+EOF %s: delivered %s, eof=%d", what, tp_quote(got, len), eof);
	tp_vary("ET+EOF %s: %d calls", what, calls);
	close(rfd);
	close(ep);
}

static void oneshot(void)
{
	int p[2][2], ep = epoll_create1(EPOLL_CLOEXEC), calls = 0;
	char got[2][32];
	size_t len[2] = { 0, 0 };

	for (int i = 0; i < 2; i++) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT };
		if (pipe2(p[i], O_NONBLOCK | O_CLOEXEC) < 0)
			return;
		ev.data.u32 = (uint32_t)i;
		epoll_ctl(ep, EPOLL_CTL_ADD, p[i][0], &ev);
		tp_write_all(p[i][1], i ? "q1\nq2\n" : "o1\no2\n", 6);
	}
	/* a worker loop: handle, then re-arm */
	while (len[0] < 6 || len[1] < 6) {
		struct epoll_event out[4];
		int n = epoll_wait(ep, out, 4, 1000);
		calls++;
		if (n <= 0) {
			tp_check(0, "ONESHOT: %s with input unread", tp_res(n, errno));
			break;
		}
		for (int k = 0; k < n; k++) {
			int i = (int)out[k].data.u32;
			struct epoll_event re = { .events = EPOLLIN | EPOLLONESHOT };
			drain(p[i][0], got[i], &len[i], sizeof got[i], NULL);
			re.data.u32 = (uint32_t)i;
			epoll_ctl(ep, EPOLL_CTL_MOD, p[i][0], &re);
		}
	}
	tp_say("ONESHOT: delivered %s and %s", tp_quote(got[0], len[0]),
	       tp_quote(got[1], len[1]));
	tp_vary("ONESHOT: %d calls", calls);

	/* reported once, not handled, not re-armed: silent */
	tp_write_all(p[0][1], "z\n", 2);
	{
		struct epoll_event out[4];
		int n = epoll_wait(ep, out, 4, 1000);
		tp_check(n == 1 && out[0].data.u32 == 0,
			 "ONESHOT: new input reported (%s)", tp_res(n, errno));
		n = epoll_wait(ep, out, 4, 200);
		tp_check(n == 0, "ONESHOT: disarmed after one report (%s)",
			 tp_res(n, errno));
	}
	{
		struct epoll_event re = { .events = EPOLLIN | EPOLLONESHOT };
		struct epoll_event out[4];
		int n;
		re.data.u32 = 0;
		epoll_ctl(ep, EPOLL_CTL_MOD, p[0][0], &re);
		n = epoll_wait(ep, out, 4, 1000);
		tp_check(n == 1 && out[0].data.u32 == 0,
			 "ONESHOT: re-armed, reported again (%s)", tp_res(n, errno));
		len[0] = 0;
		drain(p[0][0], got[0], &len[0], sizeof got[0], NULL);
		tp_say("ONESHOT: then delivered %s", tp_quote(got[0], len[0]));
	}
	for (int i = 0; i < 2; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
	close(ep);
}

/*
 * One socket in three epoll sets (level-triggered), as when each of three
 * threads watches a connection.  Each set in turn: two messages sent, then
 * a loop that waits in that set alone and reads until both are read.  With
 * the line processor the first read takes one message and the shim holds
 * the other: every set must still report the socket readable.
 * tp-isolated: ^~ SETS: set [0-2]: 2 reads
 */
static void three_sets(void)
{
	int s[2], ep[3];

	if (tp_tcp_pair(s, NULL) < 0) {
		tp_skip("SETS: no loopback TCP pair");
		return;
	}
	tp_nonblock(s[1], 1);
	for (int i = 0; i < 3; i++) {
		struct epoll_event ev = { .events = EPOLLIN };
		ep[i] = epoll_create1(EPOLL_CLOEXEC);
		ev.data.u32 = (uint32_t)(10 + i);
		tp_check(epoll_ctl(ep[i], EPOLL_CTL_ADD, s[1], &ev) == 0,
			 "SETS: registered in set %d", i);
	}
	for (int i = 0; i < 3; i++) {
		char got[64];
		size_t len = 0;
		int reads = 0, calls = 0;

		tp_write_all(s[0], "m1\nm2\n", 6);
		while (len < 6) {
			struct epoll_event out[4];
			ssize_t n;
			int r = epoll_wait(ep[i], out, 4, 2000);
			calls++;
			if (r != 1 || out[0].data.u32 != (uint32_t)(10 + i)) {
				tp_check(0, "SETS: set %d: %s with %zu of 6 bytes read",
					 i, tp_res(r, errno), len);
				break;
			}
			n = read(s[1], got + len, sizeof got - len);
			if (n > 0) {
				len += (size_t)n;
				reads++;
			}
		}
		tp_say("SETS: set %d delivered %s", i, tp_quote(got, len));
		tp_vary("SETS: set %d: %d reads, %d calls", i, reads, calls);
	}
	for (int i = 0; i < 3; i++) {
		struct epoll_event out[4];
		int r = epoll_wait(ep[i], out, 4, 0);
		tp_check(r == 0, "SETS: set %d quiet once all is read (%s)", i,
			 tp_res(r, errno));
		close(ep[i]);
	}
	close(s[0]);
	close(s[1]);
}

/*
 * A connection taken over by another thread's set (haproxy's idle server
 * connections under http-reuse always): the socket is edge-triggered in
 * the old set A and the new set B.  The new owner reads once from A's
 * event; the old thread then sees its next event for the socket, drops it
 * without reading and deletes the socket from A; the new owner waits in B
 * for the rest.  With the line processor the shim holds the second
 * message: reported in A, it must still be reported in B (the kernel
 * gives each set its own edge).
 * tp-isolated: ^~ TAKEOVER: A reported held input 1
 */
static void takeover(void)
{
	int s[2], a = epoll_create1(EPOLL_CLOEXEC), b = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET };
	struct epoll_event out[4];
	char got[64];
	size_t len = 0;
	ssize_t n;
	int r, stale;

	if (tp_tcp_pair(s, NULL) < 0) {
		tp_skip("TAKEOVER: no loopback TCP pair");
		return;
	}
	tp_nonblock(s[1], 1);
	ev.data.u32 = 1;
	epoll_ctl(a, EPOLL_CTL_ADD, s[1], &ev);
	ev.data.u32 = 2;
	epoll_ctl(b, EPOLL_CTL_ADD, s[1], &ev);
	tp_write_all(s[0], "m1\nm2\n", 6);
	r = epoll_wait(a, out, 4, 2000);
	tp_check(r == 1, "TAKEOVER: the first edge in A (%s)", tp_res(r, errno));
	n = read(s[1], got, sizeof got);
	if (n > 0)
		len = (size_t)n;
	stale = epoll_wait(a, out, 4, 0);
	tp_vary("TAKEOVER: A reported held input %d", stale);
	epoll_ctl(a, EPOLL_CTL_DEL, s[1], NULL);
	while (len < 6) {
		r = epoll_wait(b, out, 4, 2000);
		if (r < 1) {
			tp_check(0, "TAKEOVER: B: %s with %zu of 6 bytes read",
				 tp_res(r, errno), len);
			break;
		}
		n = read(s[1], got + len, sizeof got - len);
		if (n > 0)
			len += (size_t)n;
	}
	tp_say("TAKEOVER: delivered %s", tp_quote(got, len));
	close(s[0]);
	close(s[1]);
	close(a);
	close(b);
}

int main(void)
{
	int p[2], s[2];

	tp_init("epoll", 30);
	level_triggered();
	edge_triggered();
	if (pipe2(p, O_CLOEXEC) == 0)
		edge_eof("pipe", p[0], p[1]);
	if (tp_tcp_pair(s, NULL) == 0) {
		edge_eof("tcp", s[1], s[0]);
	}
	if (tp_unix_pair(s) == 0)
		edge_eof("unix", s[1], s[0]);
	oneshot();
	three_sets();
	takeover();
	return tp_done();
}
