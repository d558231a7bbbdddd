/*
 * shim.c - the symbols libbtrace.so exports: one wrapper per entry of
 * wrapped.def, each a one-liner into the module that does the work.
 * Nothing else is exported (version script generated from wrapped.def).
 */
#include "config.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bt.h"
#include "impl.h"

#define EXPORT __attribute__((visibility("default")))

/* glibc's fortified entry points have no public prototypes */
EXPORT int __open_2(const char *, int);
EXPORT int __open64_2(const char *, int);
EXPORT int __openat_2(int, const char *, int);
EXPORT int __openat64_2(int, const char *, int);
EXPORT ssize_t __read_chk(int, void *, size_t, size_t);
EXPORT ssize_t __recv_chk(int, void *, size_t, size_t, int);
EXPORT ssize_t __recvfrom_chk(int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *);
EXPORT int __poll_chk(struct pollfd *, nfds_t, int, size_t);
EXPORT int __ppoll_chk(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t);

/* libssl's, its types opaque (no OpenSSL header: libssl is not linked) */
EXPORT int SSL_read(void *, void *, int);
EXPORT int SSL_read_ex(void *, void *, size_t, size_t *);
EXPORT int SSL_peek(void *, void *, int);
EXPORT int SSL_peek_ex(void *, void *, size_t, size_t *);
EXPORT int SSL_write(void *, const void *, int);
EXPORT int SSL_write_ex(void *, const void *, size_t, size_t *);
EXPORT ssize_t SSL_sendfile(void *, int, off_t, size_t, int);
EXPORT int SSL_set_fd(void *, int);
EXPORT int SSL_set_rfd(void *, int);
EXPORT int SSL_set_wfd(void *, int);
EXPORT void SSL_set_bio(void *, void *, void *);
EXPORT void SSL_set0_rbio(void *, void *);
EXPORT void SSL_set0_wbio(void *, void *);
EXPORT int SSL_connect(void *);
EXPORT int SSL_accept(void *);
EXPORT int SSL_do_handshake(void *);
EXPORT int SSL_shutdown(void *);
EXPORT int SSL_clear(void *);
EXPORT void SSL_free(void *);
EXPORT int SSL_pending(const void *);
EXPORT int SSL_has_pending(const void *);
EXPORT int SSL_get_error(const void *, int);
/* libgnutls's, its types opaque (no GnuTLS header: libgnutls is not linked) */
EXPORT ssize_t gnutls_record_recv(void *, void *, size_t);
EXPORT ssize_t gnutls_record_recv_seq(void *, void *, size_t, unsigned char *);
EXPORT size_t gnutls_record_check_pending(void *);
EXPORT ssize_t gnutls_record_send(void *, const void *, size_t);
EXPORT ssize_t gnutls_record_send2(void *, const void *, size_t, size_t, unsigned int);
EXPORT ssize_t gnutls_record_send_range(void *, const void *, size_t, const void *);
EXPORT void gnutls_transport_set_int2(void *, int, int);
EXPORT void gnutls_transport_set_ptr(void *, void *);
EXPORT void gnutls_transport_set_ptr2(void *, void *, void *);
EXPORT void gnutls_transport_set_push_function(void *, void *);
EXPORT void gnutls_transport_set_pull_function(void *, void *);
EXPORT void gnutls_transport_set_vec_push_function(void *, void *);
EXPORT int gnutls_handshake(void *);
EXPORT int gnutls_bye(void *, int);
EXPORT void gnutls_deinit(void *);

/* ---- fd lifecycle ------------------------------------------------------ */

EXPORT int socket(int d, int t, int p) { return bt_socket(d, t, p); }
EXPORT int socketpair(int d, int t, int p, int sv[2]) { return bt_socketpair(d, t, p, sv); }
EXPORT int accept(int fd, struct sockaddr *a, socklen_t *l) { return bt_accept4(fd, a, l, 0, 0); }
EXPORT int accept4(int fd, struct sockaddr *a, socklen_t *l, int f) { return bt_accept4(fd, a, l, f, 1); }
EXPORT int connect(int fd, const struct sockaddr *a, socklen_t l) { return bt_connect(fd, a, l); }
EXPORT int close(int fd) { return bt_close(fd); }
EXPORT int close_range(unsigned int lo, unsigned int hi, int fl) { return bt_close_range(lo, hi, fl); }
EXPORT void closefrom(int lo) { bt_closefrom(lo); }
EXPORT int fclose(FILE *f) { return bt_fclose(f); }
EXPORT int dup(int fd) { return bt_dup(fd); }
EXPORT int dup2(int a, int b) { return bt_dup3(a, b, 0, 0); }
EXPORT int dup3(int a, int b, int f) { return bt_dup3(a, b, f, 1); }
EXPORT int pipe(int fds[2]) { return bt_pipe2(fds, 0, 0); }
EXPORT int pipe2(int fds[2], int f) { return bt_pipe2(fds, f, 1); }
EXPORT int shutdown(int fd, int how) { return bt_shutdown(fd, how); }

EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;
	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return bt_fcntl(fd, cmd, arg, 0);
}

EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;
	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return bt_fcntl(fd, cmd, arg, 1);
}

static mode_t open_mode(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE
	       ? (mode_t)va_arg(ap, int) : 0;
}

#define OPENED(fd, path, flags) \
	do { int fd_ = (fd); bt_opened(fd_, path, flags); return fd_; } while (0)

EXPORT int open(const char *p, int f, ...)
{
	va_list ap;
	mode_t m;
	va_start(ap, f);
	m = open_mode(f, ap);
	va_end(ap);
	OPENED(REAL(open)(p, f, m), p, f);
}

EXPORT int open64(const char *p, int f, ...)
{
	va_list ap;
	mode_t m;
	va_start(ap, f);
	m = open_mode(f, ap);
	va_end(ap);
	OPENED(REAL(open64)(p, f, m), p, f);
}

EXPORT int openat(int d, const char *p, int f, ...)
{
	va_list ap;
	mode_t m;
	va_start(ap, f);
	m = open_mode(f, ap);
	va_end(ap);
	OPENED(REAL(openat)(d, p, f, m), p, f);
}

EXPORT int openat64(int d, const char *p, int f, ...)
{
	va_list ap;
	mode_t m;
	va_start(ap, f);
	m = open_mode(f, ap);
	va_end(ap);
	OPENED(REAL(openat64)(d, p, f, m), p, f);
}

EXPORT int __open_2(const char *p, int f) { OPENED(REAL(__open_2)(p, f), p, f); }
EXPORT int __open64_2(const char *p, int f) { OPENED(REAL(__open64_2)(p, f), p, f); }
EXPORT int __openat_2(int d, const char *p, int f) { OPENED(REAL(__openat_2)(d, p, f), p, f); }
EXPORT int __openat64_2(int d, const char *p, int f) { OPENED(REAL(__openat64_2)(d, p, f), p, f); }

/* ---- data --------------------------------------------------------------- */

/*
 * Descriptors the shim has nothing to do with (files, eventfds, epoll
 * sets: seen and no channel) go straight to libc: two loads and a jump,
 * the floor of benchmark 5.  Everything else, including a descriptor never
 * seen, takes the module's path.
 */
#define PASS(fd, name, ...) \
	do { if (likely(bt_fd_passes(fd))) return REAL(name)(__VA_ARGS__); } while (0)

EXPORT ssize_t read(int fd, void *b, size_t n)
{
	PASS(fd, read, fd, b, n);
	return bt_read(fd, b, n);
}
EXPORT ssize_t __read_chk(int fd, void *b, size_t n, size_t bl)
{
	if (n > bl)
		abort();      /* what the fortified libc does: buffer overflow */
	PASS(fd, read, fd, b, n);
	return bt_read(fd, b, n);
}
EXPORT ssize_t readv(int fd, const struct iovec *v, int c)
{
	PASS(fd, readv, fd, v, c);
	return bt_readv(fd, v, c);
}
EXPORT ssize_t recv(int fd, void *b, size_t n, int f)
{
	PASS(fd, recv, fd, b, n, f);
	return bt_recv(fd, b, n, f);
}
EXPORT ssize_t __recv_chk(int fd, void *b, size_t n, size_t bl, int f)
{
	if (n > bl)
		abort();
	PASS(fd, recv, fd, b, n, f);
	return bt_recv(fd, b, n, f);
}
EXPORT ssize_t recvfrom(int fd, void *b, size_t n, int f, struct sockaddr *a, socklen_t *l)
{
	PASS(fd, recvfrom, fd, b, n, f, a, l);
	return bt_recvfrom(fd, b, n, f, a, l);
}
EXPORT ssize_t __recvfrom_chk(int fd, void *b, size_t n, size_t bl, int f, struct sockaddr *a, socklen_t *l)
{
	if (n > bl)
		abort();
	PASS(fd, recvfrom, fd, b, n, f, a, l);
	return bt_recvfrom(fd, b, n, f, a, l);
}
EXPORT ssize_t recvmsg(int fd, struct msghdr *m, int f)
{
	PASS(fd, recvmsg, fd, m, f);
	return bt_recvmsg(fd, m, f);
}
EXPORT int recvmmsg(int fd, struct mmsghdr *v, unsigned int n, int f, struct timespec *t)
{ return bt_recvmmsg(fd, v, n, f, t); }
EXPORT ssize_t write(int fd, const void *b, size_t n)
{
	PASS(fd, write, fd, b, n);
	return bt_write(fd, b, n);
}
EXPORT ssize_t writev(int fd, const struct iovec *v, int c)
{
	PASS(fd, writev, fd, v, c);
	return bt_writev(fd, v, c);
}
EXPORT ssize_t send(int fd, const void *b, size_t n, int f)
{
	PASS(fd, send, fd, b, n, f);
	return bt_send(fd, b, n, f);
}
EXPORT ssize_t sendto(int fd, const void *b, size_t n, int f, const struct sockaddr *a, socklen_t l)
{
	PASS(fd, sendto, fd, b, n, f, a, l);
	return bt_sendto(fd, b, n, f, a, l);
}
EXPORT ssize_t sendmsg(int fd, const struct msghdr *m, int f)
{
	PASS(fd, sendmsg, fd, m, f);
	return bt_sendmsg(fd, m, f);
}
EXPORT int sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int f) { return bt_sendmmsg(fd, v, n, f); }
/*
 * syscall(2): libuv (dig, node, ...) sends and receives UDP datagrams with
 * syscall(SYS_sendmmsg, ...) and syscall(SYS_recvmmsg, ...), past the
 * libc wrappers; those two numbers are traced like the calls, every other
 * number goes straight through.  Six arguments are read as glibc's own
 * syscall() does: the ones not passed are never used.
 */
EXPORT long syscall(long nr, ...)
{
	va_list ap;
	long a[6];
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	switch (nr) {
	case SYS_sendmmsg:
		return bt_sendmmsg((int)a[0], (struct mmsghdr *)a[1],
				   (unsigned int)a[2], (int)a[3]);
	case SYS_recvmmsg:
		return bt_recvmmsg((int)a[0], (struct mmsghdr *)a[1],
				   (unsigned int)a[2], (int)a[3],
				   (struct timespec *)a[4]);
	default:
		return REAL(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	}
}

EXPORT ssize_t sendfile(int o, int i, off_t *off, size_t n) { return bt_sendfile(o, i, off, n); }
EXPORT ssize_t sendfile64(int o, int i, off64_t *off, size_t n) { return bt_sendfile64(o, i, off, n); }
EXPORT ssize_t splice(int i, off64_t *io, int o, off64_t *oo, size_t n, unsigned int f)
{ return bt_splice(i, io, o, oo, n, f); }

/* ---- readiness ------------------------------------------------------------ */

EXPORT int poll(struct pollfd *f, nfds_t n, int t) { return bt_poll(f, n, t); }
EXPORT int __poll_chk(struct pollfd *f, nfds_t n, int t, size_t fl)
{
	if (fl / sizeof *f < n)
		abort();
	return bt_poll(f, n, t);
}
EXPORT int ppoll(struct pollfd *f, nfds_t n, const struct timespec *t, const sigset_t *s)
{ return bt_ppoll(f, n, t, s); }
EXPORT int __ppoll_chk(struct pollfd *f, nfds_t n, const struct timespec *t, const sigset_t *s, size_t fl)
{
	if (fl / sizeof *f < n)
		abort();
	return bt_ppoll(f, n, t, s);
}
EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
{ return bt_select(n, r, w, e, t); }
EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t, const sigset_t *s)
{ return bt_pselect(n, r, w, e, t, s); }

EXPORT int epoll_create(int size)
{
	int fd = REAL(epoll_create)(size), e = errno;
	if (fd >= 0 && bt_enter())
		bt_epoll_created(fd);
	if (fd >= 0)
		bt_leave_pass();
	errno = e;
	return fd;
}

EXPORT int epoll_create1(int flags)
{
	int fd = REAL(epoll_create1)(flags), e = errno;
	if (fd >= 0 && bt_enter())
		bt_epoll_created(fd);
	if (fd >= 0)
		bt_leave_pass();
	errno = e;
	return fd;
}

EXPORT int epoll_ctl(int ep, int op, int fd, struct epoll_event *ev) { return bt_epoll_ctl(ep, op, fd, ev); }
EXPORT int epoll_wait(int ep, struct epoll_event *ev, int n, int t) { return bt_epoll_wait(ep, ev, n, t); }
EXPORT int epoll_pwait(int ep, struct epoll_event *ev, int n, int t, const sigset_t *s)
{ return bt_epoll_pwait(ep, ev, n, t, s); }
EXPORT int epoll_pwait2(int ep, struct epoll_event *ev, int n, const struct timespec *t, const sigset_t *s)
{ return bt_epoll_pwait2(ep, ev, n, t, s); }

/* ---- processes and threads ------------------------------------------------ */

/* _exit skips destructors: hand the ring over first (spool without logd) */
EXPORT void _exit(int st)
{
	if (bt_conf.enabled)
		bt_emit_flush(1);
	REAL(_exit)(st);
	__builtin_unreachable();
}
EXPORT void _Exit(int st)
{
	if (bt_conf.enabled)
		bt_emit_flush(1);
	REAL(_Exit)(st);
	__builtin_unreachable();
}
EXPORT pid_t fork(void) { return bt_fork(0); }
EXPORT pid_t vfork(void) { return bt_fork(1); }
EXPORT int execve(const char *p, char *const a[], char *const e[]) { return bt_execve(p, a, e); }
EXPORT int execv(const char *p, char *const a[]) { return bt_execve(p, a, bt_environ()); }
EXPORT int execvp(const char *p, char *const a[]) { return bt_execvpe(p, a, bt_environ()); }
EXPORT int execvpe(const char *p, char *const a[], char *const e[]) { return bt_execvpe(p, a, e); }
EXPORT int fexecve(int fd, char *const a[], char *const e[]) { return bt_fexecve(fd, a, e); }

/* execl and friends: gather the variadic list, then the v-form. */
static int execl_common(int kind, const char *path, const char *arg0, va_list ap)
{
	char *small[256], **argv = small;
	char *const *env = bt_environ();
	size_t n = 1;
	va_list cp;
	int r;

	va_copy(cp, ap);
	while (va_arg(cp, char *))
		n++;
	va_end(cp);
	if (n >= sizeof small / sizeof small[0]) {
		argv = malloc((n + 1) * sizeof *argv);
		if (!argv) {
			errno = E2BIG;
			return -1;
		}
	}
	argv[0] = (char *)arg0;
	for (size_t i = 1; i <= n; i++)
		argv[i] = va_arg(ap, char *);
	argv[n] = NULL;
	if (kind == 2)
		env = va_arg(ap, char *const *);
	r = kind == 1 ? bt_execvpe(path, argv, env) : bt_execve(path, argv, env);
	if (argv != small) {
		int e = errno;
		free(argv);
		errno = e;
	}
	return r;
}

EXPORT int execl(const char *p, const char *a, ...)
{
	va_list ap;
	int r;
	va_start(ap, a);
	r = execl_common(0, p, a, ap);
	va_end(ap);
	return r;
}

EXPORT int execlp(const char *p, const char *a, ...)
{
	va_list ap;
	int r;
	va_start(ap, a);
	r = execl_common(1, p, a, ap);
	va_end(ap);
	return r;
}

EXPORT int execle(const char *p, const char *a, ...)
{
	va_list ap;
	int r;
	va_start(ap, a);
	r = execl_common(2, p, a, ap);
	va_end(ap);
	return r;
}

EXPORT int posix_spawn(pid_t *pid, const char *p, const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *at, char *const a[], char *const e[])
{ return bt_posix_spawn(pid, p, fa, at, a, e, 0); }
EXPORT int posix_spawnp(pid_t *pid, const char *p, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *at, char *const a[], char *const e[])
{ return bt_posix_spawn(pid, p, fa, at, a, e, 1); }
EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *at, void *(*fn)(void *), void *arg)
{ return bt_pthread_create(t, at, fn, arg); }

/* ---- names ------------------------------------------------------------------ */

EXPORT int getaddrinfo(const char *n, const char *s, const struct addrinfo *h, struct addrinfo **r)
{ return bt_getaddrinfo(n, s, h, r); }
EXPORT int getnameinfo(const struct sockaddr *sa, socklen_t sl, char *h, socklen_t hl,
		       char *s, socklen_t svl, int f)
{ return bt_getnameinfo(sa, sl, h, hl, s, svl, f); }
EXPORT struct hostent *gethostbyname(const char *n) { return bt_gethostbyname2(n, AF_INET, 0); }
EXPORT struct hostent *gethostbyname2(const char *n, int af) { return bt_gethostbyname2(n, af, 1); }
EXPORT int gethostbyname_r(const char *n, struct hostent *r, char *b, size_t l, struct hostent **res, int *h)
{ return bt_gethostbyname2_r(n, AF_INET, r, b, l, res, h, 0); }
EXPORT int gethostbyname2_r(const char *n, int af, struct hostent *r, char *b, size_t l,
			    struct hostent **res, int *h)
{ return bt_gethostbyname2_r(n, af, r, b, l, res, h, 1); }

/* ---- dynamic loading ------------------------------------------------------- */

/*
 * RTLD_DEEPBIND makes a library and its dependencies bind to their own
 * dependencies (libc) before the global scope, that is past this shim: PHP
 * loads every extension that way, so libpq inside php-fpm would talk to
 * PostgreSQL untraced.  The flag is dropped and the library binds like any
 * other (global scope first).  A tail call, so that libc still sees the
 * application as the caller (its RPATH, its namespace).
 */
EXPORT void *dlopen(const char *file, int flags)
{ return REAL(dlopen)(file, flags & ~RTLD_DEEPBIND); }

/* ---- OpenSSL: plaintext framed (ssl.c) ---------------------------------- */

EXPORT int SSL_read(void *s, void *b, int n) { return bt_ssl_read(s, b, n); }
EXPORT int SSL_read_ex(void *s, void *b, size_t n, size_t *g) { return bt_ssl_read_ex(s, b, n, g); }
EXPORT int SSL_peek(void *s, void *b, int n) { return bt_ssl_peek(s, b, n); }
EXPORT int SSL_peek_ex(void *s, void *b, size_t n, size_t *g) { return bt_ssl_peek_ex(s, b, n, g); }
EXPORT int SSL_write(void *s, const void *b, int n) { return bt_ssl_write(s, b, n); }
EXPORT int SSL_write_ex(void *s, const void *b, size_t n, size_t *w) { return bt_ssl_write_ex(s, b, n, w); }
EXPORT ssize_t SSL_sendfile(void *s, int fd, off_t o, size_t n, int f) { return bt_ssl_sendfile(s, fd, o, n, f); }
EXPORT int SSL_set_fd(void *s, int fd) { return bt_ssl_set_fd(s, fd, 0); }
EXPORT int SSL_set_rfd(void *s, int fd) { return bt_ssl_set_fd(s, fd, 1); }
EXPORT int SSL_set_wfd(void *s, int fd) { return bt_ssl_set_fd(s, fd, 2); }
EXPORT void SSL_set_bio(void *s, void *r, void *w) { bt_ssl_set_bio(s, r, w, 0); }
EXPORT void SSL_set0_rbio(void *s, void *r) { bt_ssl_set_bio(s, r, NULL, 1); }
EXPORT void SSL_set0_wbio(void *s, void *w) { bt_ssl_set_bio(s, NULL, w, 2); }
EXPORT int SSL_connect(void *s) { return bt_ssl_handshake(s, 1); }
EXPORT int SSL_accept(void *s) { return bt_ssl_handshake(s, 2); }
EXPORT int SSL_do_handshake(void *s) { return bt_ssl_handshake(s, 0); }
EXPORT int SSL_shutdown(void *s) { return bt_ssl_shutdown(s); }
EXPORT int SSL_clear(void *s) { return bt_ssl_clear(s); }
EXPORT void SSL_free(void *s) { bt_ssl_free(s); }
EXPORT int SSL_pending(const void *s) { return bt_ssl_pending(s); }
EXPORT int SSL_has_pending(const void *s) { return bt_ssl_has_pending(s); }
EXPORT int SSL_get_error(const void *s, int r) { return bt_ssl_get_error(s, r); }

/* ---- GnuTLS: plaintext framed (gnutls.c) ---------------------------------- */

EXPORT ssize_t gnutls_record_recv(void *s, void *b, size_t n) { return bt_gnutls_record_recv(s, b, n); }
EXPORT ssize_t gnutls_record_recv_seq(void *s, void *b, size_t n, unsigned char *q) { return bt_gnutls_record_recv_seq(s, b, n, q); }
EXPORT size_t gnutls_record_check_pending(void *s) { return bt_gnutls_record_check_pending(s); }
EXPORT ssize_t gnutls_record_send(void *s, const void *b, size_t n) { return bt_gnutls_record_send(s, b, n); }
EXPORT ssize_t gnutls_record_send2(void *s, const void *b, size_t n, size_t p, unsigned int f) { return bt_gnutls_record_send2(s, b, n, p, f); }
EXPORT ssize_t gnutls_record_send_range(void *s, const void *b, size_t n, const void *r) { return bt_gnutls_record_send_range(s, b, n, r); }
EXPORT void gnutls_transport_set_int2(void *s, int r, int w) { bt_gnutls_transport_set_int2(s, r, w); }
EXPORT void gnutls_transport_set_ptr(void *s, void *p) { bt_gnutls_transport_set_ptr2(s, p, p, 0); }
EXPORT void gnutls_transport_set_ptr2(void *s, void *r, void *w) { bt_gnutls_transport_set_ptr2(s, r, w, 1); }
EXPORT void gnutls_transport_set_push_function(void *s, void *f) { bt_gnutls_transport_set_function(s, f, 0); }
EXPORT void gnutls_transport_set_pull_function(void *s, void *f) { bt_gnutls_transport_set_function(s, f, 1); }
EXPORT void gnutls_transport_set_vec_push_function(void *s, void *f) { bt_gnutls_transport_set_function(s, f, 2); }
EXPORT int gnutls_handshake(void *s) { return bt_gnutls_handshake(s); }
EXPORT int gnutls_bye(void *s, int h) { return bt_gnutls_bye(s, h); }
EXPORT void gnutls_deinit(void *s) { bt_gnutls_deinit(s); }
