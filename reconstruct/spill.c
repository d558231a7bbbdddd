/*
 * spill.c - temporary files for what would otherwise be kept in memory
 * (see spill.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rc.h"
#include "spill.h"

int rc_spill_open(struct rc_ctx *c, struct rc_spill *s, const char *what)
{
	const char *out = c->opt->output;
	size_t l = strlen(out) + strlen(what) + 40;
	char *path = malloc(l);

	memset(s, 0, sizeof *s);
	s->fd = -1;
	if (!path)
		return rc_fail(c, RC_EXIT_OUTPUT, "out of memory");
	snprintf(path, l, "%s.tmp-%ld-%s", out, (long)getpid(), what);
	unlink(path);
	s->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (s->fd < 0) {
		int e = errno;
		rc_fail(c, RC_EXIT_OUTPUT,
			"cannot create %s (%s): check that its directory exists and is writable",
			path, strerror(e));
		free(path);
		return RC_EXIT_OUTPUT;
	}
	unlink(path);
	free(path);
	s->open = 1;
	return 0;
}

int rc_spill_map(struct rc_ctx *c, struct rc_spill *s, size_t len)
{
	if (len == 0)
		len = 1;
	if (ftruncate(s->fd, (off_t)len) < 0)
		return rc_fail(c, RC_EXIT_OUTPUT,
			       "cannot size a temporary file next to %s (%s)",
			       c->opt->output, strerror(errno));
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (p == MAP_FAILED)
		return rc_fail(c, RC_EXIT_OUTPUT,
			       "cannot map a temporary file next to %s (%s)",
			       c->opt->output, strerror(errno));
	s->p = p;
	s->len = len;
	s->touches = 0;
	return 0;
}

int rc_spill_write(struct rc_ctx *c, struct rc_spill *s, const void *buf,
		   size_t n, uint64_t off)
{
	const char *b = buf;
	while (n) {
		ssize_t w = pwrite(s->fd, b, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return rc_fail(c, RC_EXIT_OUTPUT,
				       "cannot write a temporary file next to %s (%s)",
				       c->opt->output,
				       strerror(w < 0 ? errno : ENOSPC));
		b += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

int rc_spill_read(struct rc_ctx *c, struct rc_spill *s, void *buf,
		  size_t n, uint64_t off)
{
	char *b = buf;
	while (n) {
		ssize_t r = pread(s->fd, b, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return rc_fail(c, RC_EXIT_OUTPUT,
				       "cannot read a temporary file next to %s (%s)",
				       c->opt->output,
				       r < 0 ? strerror(errno) : "short file");
		b += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

int rc_file_copy(int in, int out, uint64_t len)
{
	char buf[1 << 16];
	loff_t i = 0, o = 0;
	int kernel = 1;

	while ((uint64_t)i < len) {
		size_t want = (size_t)(len - (uint64_t)i);
		ssize_t k;
		if (kernel) {
			k = copy_file_range(in, &i, out, &o, want, 0);
			if (k < 0 && (errno == ENOSYS || errno == EXDEV ||
				      errno == EINVAL || errno == EOPNOTSUPP)) {
				kernel = 0;     /* by hand from here */
				continue;
			}
		} else {
			if (want > sizeof buf)
				want = sizeof buf;
			k = pread(in, buf, want, i);
			if (k > 0) {
				ssize_t w = pwrite(out, buf, (size_t)k, o);
				if (w != k)
					return w < 0 ? errno : EIO;
				i += k;
				o += k;
			}
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? errno : EIO;
	}
	return 0;
}

int rc_spill_fork(struct rc_ctx *c, struct rc_spill *s, const char *what)
{
	struct rc_spill n;
	struct stat st;
	int r;

	if (!s->open)
		return 0;
	if (fstat(s->fd, &st) < 0)
		return rc_fail(c, RC_EXIT_OUTPUT, "cannot copy a temporary file next to %s (%s)",
			       c->opt->output, strerror(errno));
	if ((r = rc_spill_open(c, &n, what)) != 0)
		return r;
	if (ftruncate(n.fd, st.st_size) < 0) {
		close(n.fd);
		return rc_fail(c, RC_EXIT_OUTPUT, "cannot size a temporary file next to %s (%s)",
			       c->opt->output, strerror(errno));
	}
	/* the file's pages, mapped ones too, are in the page cache */
	int e = rc_file_copy(s->fd, n.fd, (uint64_t)st.st_size);
	if (e) {
		close(n.fd);
		return rc_fail(c, RC_EXIT_OUTPUT, "cannot copy a temporary file next to %s (%s)",
			       c->opt->output, strerror(e));
	}
	/* the same addresses: pointers into the mapping stay right */
	if (s->p && mmap(s->p, s->len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, n.fd, 0) == MAP_FAILED) {
		e = errno;
		close(n.fd);
		return rc_fail(c, RC_EXIT_OUTPUT, "cannot map a temporary file next to %s (%s)",
			       c->opt->output, strerror(e));
	}
	close(s->fd);
	s->fd = n.fd;
	s->touches = 0;
	return 0;
}

void rc_spill_release(struct rc_spill *s)
{
	s->touches = 0;
	if (s->p)
		madvise(s->p, s->len, MADV_DONTNEED);
}

void rc_spill_unmap(struct rc_spill *s)
{
	if (s->p)
		munmap(s->p, s->len);
	s->p = NULL;
	s->len = 0;
	s->touches = 0;
}

void rc_spill_close(struct rc_spill *s)
{
	if (s->p)
		munmap(s->p, s->len);
	if (s->open)
		close(s->fd);
	memset(s, 0, sizeof *s);
	s->fd = -1;
}
