/*
 * check_tlsrec.h - what the TLS wrappers' unit tests share (check_tls:
 * OpenSSL, check_gnutls: GnuTLS): the environment set before libbtrace
 * starts, the records the shim wrote (read back from the thread's ring),
 * a readiness probe through the shim's poll, and the suite runner.  Each
 * test program includes it once.
 */
#ifndef CHECK_TLSREC_H
#define CHECK_TLSREC_H

#include <check.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "bt.h"
#include "impl.h"
#include "check_spool.h"

/* Before libbtrace's own start-up (a constructor of priority 150 calls
 * this): a spool made from TEMPLATE (mkdtemp; removed at the end,
 * check_spool.h), no bp-logd, no rules. */
static void tls_test_env(char *template, const char *logd)
{
	spool_make(template);
	setenv("BTRACE_LOGD", logd, 1);
	setenv("BTRACE_SPOOL", template, 1);
	unsetenv("BTRACE_RULES");
	unsetenv("BTRACE_CONF");
	unsetenv("BTRACE_DISABLE");
	unsetenv("BTRACE_ISOLATION");
}

/* ---- records ------------------------------------------------------------- */

#define MAXEV 1024
static struct {
	int n;
	struct { uint8_t type, dir; int fd; uint64_t off, len; } e[MAXEV];
} L;

static void collect(const struct bt_event *ev, void *ctx)
{
	(void)ctx;
	if (L.n >= MAXEV)
		return;
	L.e[L.n].type = ev->type;
	L.e[L.n].dir = ev->dir;
	L.e[L.n].fd = ev->fd;
	L.e[L.n].off = ev->off;
	L.e[L.n].len = ev->len;
	L.n++;
}

/* Drop the records written so far. */
static void ev_reset(void)
{
	bt_emit_claim();
	bt_emit_test_events(NULL, NULL, 1);
	memset(&L, 0, sizeof L);
}

/* The records written since ev_reset, into L. */
static void ev_read(void)
{
	memset(&L, 0, sizeof L);
	ck_assert_int_ge(bt_emit_test_events(collect, &L, 1), 0);
}

/* Count TYPE records of FD in DIR (-1 any). */
static int ev_count(uint8_t type, int fd, int dir)
{
	int c = 0;
	for (int i = 0; i < L.n; i++)
		c += L.e[i].type == type && L.e[i].fd == fd &&
		     (dir < 0 || L.e[i].dir == dir);
	return c;
}

/* FD readable within MS through the shim's poll (held input counts). */
static int readable(int fd, int ms)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	return bt_poll(&pf, 1, ms) == 1 && (pf.revents & POLLIN);
}

/* Run suite S in the process (records stay in the ring): exit status. */
static int tls_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	bt_idle_spool = 0;      /* records stay in the ring for ev_read() */
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

#endif /* CHECK_TLSREC_H */
