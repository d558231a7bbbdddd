/*
 * tp.c - helpers of the transparency behaviour programs (see tp.h).
 */
#include "tp.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static const char *tp_name = "tp";
static int n_ok, n_fail, n_skip;
static pid_t tp_pid;

static void emit_line(const char *prefix, const char *fmt, va_list ap)
{
	char buf[4096];
	int n = snprintf(buf, sizeof buf, "%s", prefix);

	n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
	if (n > (int)sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	(void)!write(1, buf, (size_t)n);
}

static void on_watchdog(int sig)
{
	static const char msg[] = "FAIL - watchdog: the program hung\n";
	(void)sig;
	(void)!write(1, msg, sizeof msg - 1);
	_exit(3);
}

void tp_init(const char *name, int secs)
{
	struct sigaction sa;

	tp_name = name;
	tp_pid = getpid();
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_watchdog;
	sigaction(SIGALRM, &sa, NULL);
	/* The watchdog owns SIGALRM: programs that need a signal of their
	 * own use SIGUSR1/SIGUSR2. */
	if (secs > 0)
		alarm((unsigned)secs);
	tp_say("# %s", name);
}

void tp_say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit_line("", fmt, ap);
	va_end(ap);
}

void tp_vary(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit_line("~ ", fmt, ap);
	va_end(ap);
}

int tp_check(int cond, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit_line(cond ? "ok - " : "FAIL - ", fmt, ap);
	va_end(ap);
	if (cond)
		n_ok++;
	else
		n_fail++;
	return cond;
}

void tp_skip(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit_line("SKIP - ", fmt, ap);
	va_end(ap);
	n_skip++;
}

int tp_done(void)
{
	tp_say("# %s: %d ok, %d failed, %d skipped", tp_name, n_ok, n_fail,
	       n_skip);
	return n_fail ? 1 : 0;
}

const char *tp_errname(int e)
{
	static char buf[4][16];
	static int k;
	const char *n = strerrorname_np(e);
	if (n)
		return n;
	k = (k + 1) & 3;
	snprintf(buf[k], sizeof buf[k], "E%d", e);
	return buf[k];
}

const char *tp_res(long r, int e)
{
	static char buf[4][48];
	static int k;
	k = (k + 1) & 3;
	if (r < 0)
		snprintf(buf[k], sizeof buf[k], "r=%ld %s", r, tp_errname(e));
	else
		snprintf(buf[k], sizeof buf[k], "r=%ld", r);
	return buf[k];
}

int tp_tcp_listen(int *port)
{
	struct sockaddr_in sa;
	socklen_t l = sizeof sa;
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &l) < 0) {
		close(fd);
		return -1;
	}
	if (port)
		*port = ntohs(sa.sin_port);
	return fd;
}

int tp_tcp_connect(int port)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)port);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int tp_tcp_pair(int fds[2], int *port)
{
	int p, l = tp_tcp_listen(&p);

	if (l < 0)
		return -1;
	fds[0] = tp_tcp_connect(p);
	fds[1] = fds[0] >= 0 ? accept4(l, NULL, NULL, SOCK_CLOEXEC) : -1;
	close(l);
	if (port)
		*port = p;
	if (fds[0] < 0 || fds[1] < 0)
		return -1;
	return 0;
}

int tp_unix_pair(int fds[2])
{
	char dir[] = "/tmp/tp-unix.XXXXXX";
	struct sockaddr_un sa;
	int l;

	if (!mkdtemp(dir))
		return -1;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s/s", dir);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fds[0] = fds[1] = -1;
	if (l >= 0 && bind(l, (struct sockaddr *)&sa, sizeof sa) == 0 &&
	    listen(l, 8) == 0) {
		fds[0] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fds[0] >= 0 &&
		    connect(fds[0], (struct sockaddr *)&sa, sizeof sa) == 0)
			fds[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	}
	if (l >= 0)
		close(l);
	unlink(sa.sun_path);
	rmdir(dir);
	return fds[0] >= 0 && fds[1] >= 0 ? 0 : -1;
}

void tp_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

int tp_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

size_t tp_read_full(int fd, void *buf, size_t n, int *reads)
{
	char *p = buf;
	size_t got = 0;
	int calls = 0;

	int waits = 0;

	while (got < n) {
		ssize_t k = read(fd, p + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN && waits++ < 50) {
			/* a non-blocking fd: wait as an event loop would */
			struct pollfd pf = { .fd = fd, .events = POLLIN };
			poll(&pf, 1, 1000);
			continue;
		}
		if (k <= 0)
			break;
		calls++;
		got += (size_t)k;
	}
	if (reads)
		*reads = calls;
	return got;
}

size_t tp_read_eof(int fd, void *buf, size_t cap, int *reads)
{
	return tp_read_full(fd, buf, cap, reads);
}

void tp_msleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

const char *tp_quote(const void *p, size_t n)
{
	static char buf[4][1024];
	static int k;
	const unsigned char *s = p;
	size_t o = 0;

	k = (k + 1) & 3;
	buf[k][o++] = '"';
	for (size_t i = 0; i < n && o < sizeof buf[k] - 8; i++) {
		if (s[i] == '\n') {
			buf[k][o++] = '\\';
			buf[k][o++] = 'n';
		} else if (s[i] == '"' || s[i] == '\\') {
			buf[k][o++] = '\\';
			buf[k][o++] = (char)s[i];
		} else if (s[i] < 32 || s[i] > 126) {
			o += (size_t)snprintf(buf[k] + o, 5, "\\x%02x", s[i]);
		} else {
			buf[k][o++] = (char)s[i];
		}
	}
	buf[k][o++] = '"';
	buf[k][o] = 0;
	return buf[k];
}

const char *tp_self(void)
{
	static char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
	path[n > 0 ? n : 0] = 0;
	return path;
}
