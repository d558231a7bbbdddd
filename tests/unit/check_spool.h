/*
 * check_spool.h - the spool directory of the shim's unit tests
 * (check_shim, check_pause, check_tls, check_gnutls): made before the
 * shim starts, removed when the test program ends.
 *
 * The tests run without bp-logd, so every traced thread of the program
 * and of check's forked children writes its ring into the spool; without
 * this each run left a directory under /tmp.  It is removed by the
 * process that made it, after the shim's own destructor has flushed into
 * it (a destructor of the lowest priority runs last); the forked children
 * leave it alone.  CHECK_SPOOL_KEEP=1 keeps it (its path is printed).
 */
#ifndef CHECK_SPOOL_H
#define CHECK_SPOOL_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

static char *spool_dir;
static pid_t spool_owner;

/* mkdtemp(TEMPLATE), else abort: a test without its spool means nothing */
static void spool_make(char *template)
{
	if (!mkdtemp(template))
		abort();
	spool_dir = template;
	spool_owner = getpid();
}

static int spool_rm_one(const char *p, const struct stat *st, int flag,
			struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	return remove(p);
}

__attribute__((destructor(101))) static void spool_remove(void)
{
	if (!spool_dir || getpid() != spool_owner)
		return;
	if (getenv("CHECK_SPOOL_KEEP"))
		fprintf(stderr, "spool kept: %s\n", spool_dir);
	else
		nftw(spool_dir, spool_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif /* CHECK_SPOOL_H */
