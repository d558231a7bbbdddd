/*
 * ex_util.c - the example programs' shared code (see ex_util.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "ex_util.h"

volatile sig_atomic_t ex_stop;

static const char *ex_prog = "example";

void ex_init(const char *argv0)
{
	const char *slash = strrchr(argv0, '/');

	ex_prog = slash ? slash + 1 : argv0;
	signal(SIGPIPE, SIG_IGN);
}

static void ex_on_signal(int sig)
{
	(void)sig;
	ex_stop = 1;
}

int ex_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = ex_on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;            /* no SA_RESTART: blocking calls see EINTR */
	if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, &sa, NULL) < 0)
		return -errno;
	return 0;
}

void ex_block_signals(int block)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

static void ex_vlog(const char *fmt, va_list ap)
{
	char buf[512];
	int saved = errno;
	int n = snprintf(buf, sizeof buf, "%s[%ld]: ", ex_prog, (long)getpid());

	if (n < 0)
		return;
	n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
	if (n > (int)sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	if (write(STDERR_FILENO, buf, (size_t)n) < 0) {
		/* nowhere left to report it */
	}
	errno = saved;
}

void ex_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ex_vlog(fmt, ap);
	va_end(ap);
}

void ex_fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ex_vlog(fmt, ap);
	va_end(ap);
	exit(1);
}

long ex_opt_num(const char *opt, const char *arg, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max) {
		ex_log("option %s: '%s' is not a number in %ld..%ld", opt, arg,
		       min, max);
		exit(2);
	}
	return v;
}

int ex_pidfile(const char *path)
{
	char tmp[4096];
	char buf[32];
	int fd, n, err;

	if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >=
	    (int)sizeof tmp)
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
	err = ex_write_all(fd, buf, (size_t)n);
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

static int ex_inet_addr(const char *host, int port, struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof *sin);
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
		return -EINVAL;     /* numeric IPv4 only: no resolver here */
	return 0;
}

static int ex_unix_addr(const char *path, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof *sun);
	sun->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun->sun_path)
		return -ENAMETOOLONG;
	strcpy(sun->sun_path, path);
	return 0;
}

static int ex_listen_on(int family, const struct sockaddr *sa, socklen_t len,
			int backlog, int nonblock)
{
	int type = SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0);
	int fd = socket(family, type, 0);
	int one = 1, err;

	if (fd < 0)
		return -errno;
	if (family == AF_INET)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, sa, len) < 0 || listen(fd, backlog) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int ex_listen_tcp(const char *host, int port, int backlog, int nonblock)
{
	struct sockaddr_in sin;
	int err = ex_inet_addr(host, port, &sin);

	if (err)
		return err;
	return ex_listen_on(AF_INET, (struct sockaddr *)&sin, sizeof sin,
			    backlog, nonblock);
}

int ex_listen_unix(const char *path, int backlog, int nonblock)
{
	struct sockaddr_un sun;
	struct stat st;
	int err = ex_unix_addr(path, &sun);

	if (err)
		return err;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;     /* never remove anything else */
		unlink(path);
	}
	return ex_listen_on(AF_UNIX, (struct sockaddr *)&sun, sizeof sun,
			    backlog, nonblock);
}

int ex_connect_done(int fd)
{
	int soerr = 0;
	socklen_t len = sizeof soerr;

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		return -errno;
	return -soerr;
}

static int ex_connect_to(int family, const struct sockaddr *sa, socklen_t len,
			 int nonblock, int timeout_ms)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int err = 0;

	if (fd < 0)
		return -errno;
	if (family == AF_INET) {
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	}
	if (connect(fd, sa, len) < 0) {
		if (errno != EINPROGRESS && errno != EAGAIN) {
			err = -errno;
			goto fail;
		}
		if (nonblock)
			return fd;
		/* blocking caller: wait for the connect, bounded */
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		uint64_t deadline = ex_now_ms() + (uint64_t)timeout_ms;
		for (;;) {
			uint64_t now = ex_now_ms();
			int r;
			if (now >= deadline) {
				err = -ETIMEDOUT;
				goto fail;
			}
			r = poll(&pfd, 1, (int)(deadline - now));
			if (r > 0)
				break;
			if (r < 0 && errno != EINTR) {
				err = -errno;
				goto fail;
			}
		}
		err = ex_connect_done(fd);
		if (err)
			goto fail;
	}
	if (!nonblock) {
		int fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
			err = -errno;
			goto fail;
		}
	}
	return fd;
fail:
	close(fd);
	return err;
}

int ex_connect_tcp(const char *host, int port, int nonblock, int timeout_ms)
{
	struct sockaddr_in sin;
	int err = ex_inet_addr(host, port, &sin);

	if (err)
		return err;
	return ex_connect_to(AF_INET, (struct sockaddr *)&sin, sizeof sin,
			     nonblock, timeout_ms);
}

int ex_connect_unix(const char *path, int nonblock, int timeout_ms)
{
	struct sockaddr_un sun;
	int err = ex_unix_addr(path, &sun);

	if (err)
		return err;
	return ex_connect_to(AF_UNIX, (struct sockaddr *)&sun, sizeof sun,
			     nonblock, timeout_ms);
}

int ex_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

int ex_set_timeouts(int fd, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0)
		return -errno;
	return 0;
}

int ex_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR && !ex_stop)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

uint64_t ex_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void ex_lbuf_reset(struct ex_lbuf *lb)
{
	lb->off = 0;
	lb->len = 0;
}

ssize_t ex_lbuf_read(struct ex_lbuf *lb, int fd)
{
	ssize_t n;

	if (lb->off) {
		memmove(lb->buf, lb->buf + lb->off, lb->len - lb->off);
		lb->len -= lb->off;
		lb->off = 0;
	}
	if (lb->len == sizeof lb->buf)
		return -ENOBUFS;
	n = read(fd, lb->buf + lb->len, sizeof lb->buf - lb->len);
	if (n < 0)
		return -errno;
	lb->len += (size_t)n;
	return n;
}

int ex_lbuf_line(struct ex_lbuf *lb, char **line, size_t *len)
{
	char *start = lb->buf + lb->off;
	size_t avail = lb->len - lb->off;
	char *nl = memchr(start, '\n', avail);
	size_t n;

	if (!nl)
		return avail > EX_LINE_MAX ? -EMSGSIZE : 0;
	n = (size_t)(nl - start);
	if (n > EX_LINE_MAX)
		return -EMSGSIZE;
	lb->off += n + 1;
	*nl = '\0';
	if (n && start[n - 1] == '\r')
		start[--n] = '\0';
	*line = start;
	if (len)
		*len = n;
	return 1;
}

int ex_lbuf_getline(struct ex_lbuf *lb, int fd, char **line, size_t *len)
{
	for (;;) {
		int r = ex_lbuf_line(lb, line, len);
		ssize_t n;

		if (r)
			return r;
		n = ex_lbuf_read(lb, fd);
		if (n == 0)
			return ex_lbuf_pending(lb) ? -ECONNRESET : 0;
		if (n == -EINTR && !ex_stop)
			continue;
		if (n < 0)
			return (int)n;
	}
}

/* A token of printable non-space bytes; returns its end or NULL. */
static const char *ex_token(const char *p, char *out, size_t size)
{
	size_t n = 0;

	while (*p > ' ' && *p < 0x7f) {
		if (n + 1 >= size)
			return NULL;
		out[n++] = *p++;
	}
	if (!n)
		return NULL;
	out[n] = '\0';
	return p;
}

/* A decimal number without sign or leading junk; returns its end or NULL. */
static const char *ex_number(const char *p, unsigned max, unsigned *v)
{
	unsigned long x = 0;
	const char *s = p;

	while (*p >= '0' && *p <= '9') {
		x = x * 10 + (unsigned)(*p - '0');
		if (x > max)
			return NULL;
		p++;
	}
	if (p == s)
		return NULL;
	*v = (unsigned)x;
	return p;
}

static int ex_parse_verb_id_num(const char *line, const char *verb, char *id,
				unsigned max, unsigned *num)
{
	size_t vl = strlen(verb);
	const char *p;

	if (strncmp(line, verb, vl) || line[vl] != ' ')
		return -EPROTO;
	p = ex_token(line + vl + 1, id, EX_ID_MAX);
	if (!p || *p != ' ')
		return -EPROTO;
	p = ex_number(p + 1, max, num);
	if (!p || *p)
		return -EPROTO;
	return 0;
}

int ex_parse_req(const char *line, struct ex_req *r)
{
	return ex_parse_verb_id_num(line, "REQ", r->id, EX_NCALLS_MAX, &r->n);
}

int ex_parse_idk(const char *line, const char *verb, char *id, unsigned *k)
{
	return ex_parse_verb_id_num(line, verb, id, EX_NCALLS_MAX, k);
}

int ex_is_ok_for(const char *line, const char *id, unsigned k)
{
	char got[EX_ID_MAX];
	unsigned gk;

	if (ex_parse_idk(line, "OK", got, &gk))
		return 0;
	return gk == k && strcmp(got, id) == 0;
}

uint64_t ex_cs_init(void)
{
	return UINT64_C(0xcbf29ce484222325);
}

uint64_t ex_cs_add(uint64_t cs, const char *line, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		cs ^= (unsigned char)line[i];
		cs *= UINT64_C(0x100000001b3);
	}
	cs ^= '\n';
	cs *= UINT64_C(0x100000001b3);
	return cs;
}

uint64_t ex_cs_expected(const char *id, unsigned n)
{
	uint64_t cs = ex_cs_init();
	char line[EX_LINE_MAX];

	for (unsigned k = 0; k < n; k++) {
		int len = snprintf(line, sizeof line, "OK %s %u", id, k);
		cs = ex_cs_add(cs, line, (size_t)len);
	}
	return cs;
}

int ex_fmt_call(char *buf, size_t size, const char *id, unsigned k)
{
	return snprintf(buf, size, "CALL %s %u\n", id, k);
}

int ex_fmt_resp(char *buf, size_t size, const char *id, unsigned n,
		uint64_t cs)
{
	return snprintf(buf, size, "RESP %s %u %016" PRIx64 "\n", id, n, cs);
}
