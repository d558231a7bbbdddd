/*
 * slowio.c - a slow disk for bp-logd (tests/logd/slow_disk.sh): preloaded
 * into bp-logd, it sleeps before every pwritev (how bp-logd writes its
 * blocks) and every fsync/fdatasync, SLOWIO_MS and SLOWIO_SYNC_MS
 * milliseconds, then does the real call.  Nothing else changes.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off);
int fsync(int fd);
int fdatasync(int fd);

static void delay(const char *var)
{
	const char *v = getenv(var);
	long ms = v ? atol(v) : 0;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	int e = errno;

	while (ms > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	errno = e;
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	static ssize_t (*real)(int, const struct iovec *, int, off_t);

	if (!real)
		real = (ssize_t (*)(int, const struct iovec *, int, off_t))
			dlsym(RTLD_NEXT, "pwritev");
	delay("SLOWIO_MS");
	return real(fd, iov, cnt, off);
}

int fsync(int fd)
{
	static int (*real)(int);

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	delay("SLOWIO_SYNC_MS");
	return real(fd);
}

int fdatasync(int fd)
{
	static int (*real)(int);

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	delay("SLOWIO_SYNC_MS");
	return real(fd);
}
