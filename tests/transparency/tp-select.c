/*
 * tp-select - select with FD_SETSIZE descriptors and poll over the same
 * set: pipes are made until their read ends reach FD_SETSIZE - 1, data is
 * written to a handful spread over the range (the lowest, the highest,
 * some between), and a loop of select (then of poll) with nfds =
 * FD_SETSIZE reads whatever is reported until every written pipe was
 * drained.  Isolation may report one ready descriptor per call; every
 * report must be a pipe with data, and every pipe with data must be
 * reported.
 *
 * tp-isolated: ^~ select: [2-9][0-9]* calls
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <unistd.h>

#include "tp.h"

static int rfd[FD_SETSIZE], wfd[FD_SETSIZE], np;
static int is_r[FD_SETSIZE], pending[FD_SETSIZE];

static int fill(void)
{
	int want[8], nw = 0, n = 0;
	want[nw++] = 0;
	want[nw++] = np - 1;
	for (int k = 1; k <= 5; k++)
		want[nw++] = np * k / 6;
	for (int i = 0; i < nw; i++) {
		int f = rfd[want[i]];
		if (!pending[f]) {
			char m[16];
			int l = snprintf(m, sizeof m, "fd%d\n", f);
			(void)!write(wfd[want[i]], m, (size_t)l);
			pending[f] = 1;
			n++;
		}
	}
	return n;
}

static void drain(int f, int *bad)
{
	char b[32];
	ssize_t n = read(f, b, sizeof b);
	if (n <= 0 || !pending[f])
		(*bad)++;
	/* a whole line came: done with this pipe (isolation keeps lines whole) */
	if (n > 0 && b[n - 1] == '\n')
		pending[f] = 0;
}

int main(void)
{
	int left, calls = 0, bad = 0, spurious = 0;

	tp_init("select", 60);
	while (np < FD_SETSIZE) {
		int p[2];
		if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
			break;
		if (p[0] >= FD_SETSIZE || p[1] >= FD_SETSIZE) {
			close(p[0]);
			close(p[1]);
			break;
		}
		rfd[np] = p[0];
		wfd[np] = p[1];
		is_r[p[0]] = 1;
		np++;
	}
	tp_say("%d pipes, highest read end %d", np, rfd[np - 1]);
	tp_check(np > 0 && rfd[np - 1] >= FD_SETSIZE - 4, "descriptors up to FD_SETSIZE - 1 in the set");

	left = fill();
	tp_say("select: %d pipes written", left);
	while (left > 0 && calls < 200) {
		fd_set rs;
		struct timeval tv = { 2, 0 };
		int r, seen = 0;
		FD_ZERO(&rs);
		for (int i = 0; i < np; i++)
			FD_SET(rfd[i], &rs);
		r = select(FD_SETSIZE, &rs, NULL, NULL, &tv);
		calls++;
		if (r <= 0)
			break;
		for (int f = 0; f < FD_SETSIZE; f++)
			if (FD_ISSET(f, &rs)) {
				seen++;
				if (!is_r[f] || !pending[f]) {
					spurious++;
					continue;
				}
				drain(f, &bad);
				if (!pending[f])
					left--;
			}
		if (seen != r)
			bad++;
	}
	tp_check(left == 0 && bad == 0 && spurious == 0,
		 "select: every written pipe reported and drained, nothing else (left %d)", left);
	tp_vary("select: %d calls", calls);

	left = fill();
	calls = 0;
	{
		static struct pollfd pf[FD_SETSIZE];
		while (left > 0 && calls < 200) {
			int r, seen = 0;
			for (int i = 0; i < np; i++) {
				pf[i].fd = rfd[i];
				pf[i].events = POLLIN;
				pf[i].revents = 0;
			}
			r = poll(pf, (nfds_t)np, 2000);
			calls++;
			if (r <= 0)
				break;
			for (int i = 0; i < np; i++)
				if (pf[i].revents) {
					seen++;
					if (!pending[pf[i].fd]) {
						spurious++;
						continue;
					}
					drain(pf[i].fd, &bad);
					if (!pending[pf[i].fd])
						left--;
				}
			if (seen != r)
				bad++;
		}
	}
	tp_check(left == 0 && bad == 0 && spurious == 0,
		 "poll: every written pipe reported and drained, nothing else (left %d)", left);
	tp_vary("poll: %d calls", calls);
	return tp_done();
}
