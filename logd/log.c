/*
 * log.c - bp-logd's messages for people: one line each on stderr.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "logd.h"

static int verbose;

void log_set_verbose(int level)
{
	verbose = level;
}

static void vlog(const char *fmt, va_list ap)
{
	char line[1024];
	int e = errno;

	vsnprintf(line, sizeof line, fmt, ap);
	fprintf(stderr, "bp-logd: %s\n", line);
	fflush(stderr);
	errno = e;
}

void log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	if (verbose < 1)
		return;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void log_debug(const char *fmt, ...)
{
	va_list ap;

	if (verbose < 2)
		return;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
	exit(1);
}

static uint64_t now(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t logd_now_mono(void)
{
	return now(CLOCK_MONOTONIC);
}

uint64_t logd_now_real(void)
{
	return now(CLOCK_REALTIME);
}
