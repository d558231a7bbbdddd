/*
 * check_pause.c - pausing and resuming tracing in libbtrace's core
 * (docs/security.md, "Pausing"), linked directly as tests/unit/check_shim
 * is: the wrappers' implementations are called, BT_CF_PAUSED is set and
 * cleared in the process's chunk header as bp-logd does, and the records
 * are read back from the thread's ring.
 *
 * The rule under test: a channel that moves bytes while paused goes dark
 * (its CLOSE is written at once, nothing more about it afterwards); one
 * that moved nothing carries on at the exact offsets; one made during the
 * pause is announced at its first use if it moved nothing; closes are
 * written while paused; held input is served and reported readable while
 * paused and dark; after the resume a thread's first record is DROP
 * (reason paused, the calls it made) and READY -1, and input from a dark
 * channel (read, or handed over by poll) is READY -1, never the fd.
 */
#include "config.h"

#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bt.h"
#include "impl.h"
#include "../unit/check_spool.h"


static char spool[] = "/tmp/check_pause.XXXXXX";

/* Before the shim's constructor: no logd, a spool of our own. */
__attribute__((constructor(150))) static void test_env(void)
{
	spool_make(spool);
	setenv("BTRACE_LOGD", "/nonexistent/check_pause.sock", 1);
	setenv("BTRACE_SPOOL", spool, 1);
	unsetenv("BTRACE_RULES");
	unsetenv("BTRACE_CONF");
	unsetenv("BTRACE_DISABLE");
	unsetenv("BTRACE_ISOLATION");
}

#define MAXEV 512
static struct rec {
	uint8_t type, dir;
	int fd;
	uint64_t off, len;
	uint32_t flags;
	int64_t result;
	uint8_t role;
} ev[MAXEV];
static int nev;

static void collect(const struct bt_event *e, void *ctx)
{
	(void)ctx;
	if (nev >= MAXEV)
		return;
	ev[nev++] = (struct rec){ e->type, e->dir, e->fd, e->off, e->len,
				  e->flags, e->result, e->role };
}

static void ev_reset(void)
{
	bt_emit_claim();
	bt_emit_test_events(NULL, NULL, 1);
	nev = 0;
}

static void ev_read(void)
{
	nev = 0;
	ck_assert_int_ge(bt_emit_test_events(collect, NULL, 1), 0);
}

/* records of TYPE on FD (fd -2: any) */
static int count(uint8_t type, int fd)
{
	int c = 0;
	for (int i = 0; i < nev; i++)
		c += ev[i].type == type && (fd == -2 || ev[i].fd == fd);
	return c;
}

static struct rec *nth(uint8_t type, int fd, int k)
{
	for (int i = 0; i < nev; i++)
		if (ev[i].type == type && (fd == -2 || ev[i].fd == fd) && k-- == 0)
			return &ev[i];
	return NULL;
}

/* Any record about FD (other than CLOSE)? */
static int mentions(int fd)
{
	for (int i = 0; i < nev; i++)
		if (ev[i].fd == fd && ev[i].type != BT_EV_CLOSE)
			return 1;
	return 0;
}

/* bp-logd's control command, as it reaches the process */
static void set_paused(int on)
{
	volatile uint32_t *w = (volatile uint32_t *)bt_pause_word;

	ck_assert_msg(bt_self.have_slot, "no chunk yet");
	if (on)
		*w |= BT_CF_PAUSED;
	else
		*w &= ~BT_CF_PAUSED;
	ck_assert_int_eq(bt_paused(), !!on);
}

static void line_pair(int sv[2])
{
	struct bt_chan *ch;

	ck_assert_int_eq(bt_socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ch = bt_chan_of(sv[0]);
	ck_assert_ptr_nonnull(ch);
	bt_mutex_lock(&ch->mu);
	bt_chan_attach(ch, sv[0], &bt_proto_line, BT_PH_RULE, "test");
	bt_mutex_unlock(&ch->mu);
}

START_TEST(dark_rule)
{
	int ab[2], cd[2], ef[2], gh[2];
	char buf[64];
	struct rec *r;

	line_pair(ab);
	ck_assert_int_eq(bt_socketpair(AF_UNIX, SOCK_STREAM, 0, cd), 0);
	ev_reset();
	ck_assert_int_eq(write(ab[1], "x\n", 2), 2);
	ck_assert_int_eq(bt_read(ab[0], buf, sizeof buf), 2);
	ck_assert_int_eq(bt_write(cd[0], "12345", 5), 5);
	ck_assert_int_eq(read(cd[1], buf, sizeof buf), 5);
	ev_read();
	ck_assert_int_eq(count(BT_EV_MSG, ab[0]), 1);
	ck_assert_int_eq(count(BT_EV_DATA, cd[0]), 1);

	set_paused(1);
	ck_assert_int_eq(bt_write(ab[0], "y\n", 2), 2);     /* ab[0] goes dark */
	ck_assert_int_eq(read(ab[1], buf, sizeof buf), 2);
	ck_assert_int_eq(bt_socketpair(AF_UNIX, SOCK_STREAM, 0, ef), 0);
	ck_assert_int_eq(bt_socketpair(AF_UNIX, SOCK_STREAM, 0, gh), 0);
	ck_assert_int_eq(bt_write(gh[0], "zz", 2), 2);      /* gh[0] too */
	ev_read();
	ck_assert_int_eq(nev, 1);                 /* only the CLOSE, at once */
	ck_assert_int_eq(ev[0].type, BT_EV_CLOSE);
	ck_assert_int_eq(ev[0].fd, ab[0]);
	ck_assert_uint_eq(bt_fd_get(gh[0]), BT_FD_DARK);
	set_paused(0);

	/* the dark one: nothing; its input starts unattributable work */
	ck_assert_int_eq(bt_write(ab[0], "w\n", 2), 2);
	ck_assert_int_eq(write(ab[1], "v\n", 2), 2);
	ck_assert_int_eq(bt_read(ab[0], buf, sizeof buf), 2);
	/* untouched during the pause: exact offsets */
	ck_assert_int_eq(bt_write(cd[0], "678", 3), 3);
	/* made during the pause, moved nothing: announced now */
	ck_assert_int_eq(bt_write(ef[0], "hi", 2), 2);
	/* made during the pause, moved bytes: dark, never announced */
	ck_assert_int_eq(bt_write(gh[0], "zz", 2), 2);
	ev_read();
	r = nth(BT_EV_DROP, -2, 0);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->flags, BT_DR_PAUSED);
	ck_assert_uint_eq(r->len, 4);    /* write, socketpair x2, write */
	ck_assert_int_eq(ev[0].type, BT_EV_DROP);       /* the very first */
	ck_assert_int_eq(ev[1].type, BT_EV_READY);
	ck_assert_int_eq(ev[1].fd, -1);
	ck_assert(!mentions(ab[0]));
	ck_assert(!mentions(gh[0]));
	r = nth(BT_EV_DATA, cd[0], 0);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->off, 5);
	ck_assert_uint_eq(r->len, 3);
	r = nth(BT_EV_CHAN, ef[0], 0);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->role, BT_CR_INHERITED);
	r = nth(BT_EV_DATA, ef[0], 0);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->off, 0);
	/* one READY -1 for the resume; the dark read right after it adds
	 * none (the thread's last record said so already) */
	ck_assert_int_eq(count(BT_EV_READY, -1), 1);

	/* closing dark ones writes nothing more */
	ev_reset();
	ck_assert_int_eq(bt_close(ab[0]), 0);
	ck_assert_int_eq(bt_close(gh[0]), 0);
	ck_assert_uint_eq(bt_fd_get(gh[0]), BT_FD_NONE);
	ev_read();
	ck_assert_int_eq(nev, 0);
	for (int i = 0; i < 2; i++) {
		bt_close(cd[i]);
		bt_close(ef[i]);
	}
	bt_close(ab[1]);
	bt_close(gh[1]);
}
END_TEST

/* Input the shim held for isolation is served, and reported by poll,
 * while paused and once dark: the application sees every byte once, in
 * order. */
START_TEST(held_input_across_pause)
{
	int ab[2];
	char buf[64], got[64];
	size_t have = 0;
	ssize_t n;
	struct pollfd pf;

	line_pair(ab);
	ev_reset();
	ck_assert_int_eq(write(ab[1], "a\nb\nc\n", 6), 6);
	n = bt_read(ab[0], buf, sizeof buf);
	ck_assert_int_eq(n, 2);                  /* "a\n": the rest is held */
	memcpy(got, buf, 2);
	have = 2;
	set_paused(1);
	pf = (struct pollfd){ .fd = ab[0], .events = POLLIN };
	ck_assert_int_eq(bt_poll(&pf, 1, 0), 1);  /* held input is readable */
	ck_assert(pf.revents & POLLIN);
	n = bt_read(ab[0], buf, sizeof buf);
	ck_assert_int_gt(n, 0);
	memcpy(got + have, buf, (size_t)n);
	have += (size_t)n;
	ev_read();
	ck_assert_int_eq(count(BT_EV_CLOSE, ab[0]), 1);   /* now dark */
	set_paused(0);
	while (have < 6) {                 /* whatever is still held */
		pf = (struct pollfd){ .fd = ab[0], .events = POLLIN };
		ck_assert_int_eq(bt_poll(&pf, 1, 0), 1);
		n = bt_read(ab[0], buf, sizeof buf);
		ck_assert_int_gt(n, 0);
		memcpy(got + have, buf, (size_t)n);
		have += (size_t)n;
	}
	ck_assert_int_eq(write(ab[1], "d\n", 2), 2);
	n = bt_read(ab[0], buf, sizeof buf);
	ck_assert_int_eq(n, 2);
	memcpy(got + have, buf, 2);
	have += 2;
	ck_assert_mem_eq(got, "a\nb\nc\nd\n", 8);
	pf = (struct pollfd){ .fd = ab[0], .events = POLLIN };
	ck_assert_int_eq(bt_poll(&pf, 1, 0), 0);  /* nothing left anywhere */
	ev_read();
	ck_assert(!mentions(ab[0]));
	bt_close(ab[0]);
	bt_close(ab[1]);
}
END_TEST

/* A traced channel closed during the pause is closed in the log (its
 * number may come back as something else); dup while paused: dark. */
START_TEST(close_and_dup_while_paused)
{
	int ab[2], cd[2], d;

	line_pair(ab);
	ck_assert_int_eq(bt_socketpair(AF_UNIX, SOCK_STREAM, 0, cd), 0);
	ev_reset();
	set_paused(1);
	ck_assert_int_eq(bt_close(ab[0]), 0);
	d = bt_dup3(cd[0], 200, 0, 0);
	ck_assert_int_eq(d, 200);
	ev_read();
	ck_assert_int_eq(count(BT_EV_CLOSE, ab[0]), 1);
	ck_assert_int_eq(count(BT_EV_CLOSE, cd[0]), 1);    /* went dark */
	ck_assert_int_eq(count(BT_EV_DUP, -2), 0);
	set_paused(0);
	ck_assert_int_eq(bt_write(200, "x", 1), 1);
	ck_assert_int_eq(bt_write(cd[0], "x", 1), 1);
	ev_read();
	ck_assert(!mentions(200));
	ck_assert(!mentions(cd[0]));
	bt_close(200);
	bt_close(cd[0]);
	bt_close(cd[1]);
	bt_close(ab[1]);
}
END_TEST

/* After the resume a readiness call that hands over a dark descriptor
 * writes READY -1: the work that follows belongs to no request. */
START_TEST(poll_hands_over_dark_fd)
{
	int ab[2], cd[2];
	char buf[8];
	struct pollfd pf[2];

	ck_assert_int_eq(bt_socketpair(AF_UNIX, SOCK_STREAM, 0, ab), 0);
	ck_assert_int_eq(bt_socketpair(AF_UNIX, SOCK_STREAM, 0, cd), 0);
	ev_reset();
	ck_assert_int_eq(bt_write(ab[0], "1", 1), 1);     /* announced */
	set_paused(1);
	ck_assert_int_eq(bt_write(ab[0], "2", 1), 1);     /* dark */
	set_paused(0);
	ck_assert_int_eq(bt_write(cd[0], "3", 1), 1);     /* DROP, READY -1 */
	ck_assert_int_eq(write(ab[1], "4", 1), 1);
	ev_reset();
	pf[0] = (struct pollfd){ .fd = ab[0], .events = POLLIN };
	pf[1] = (struct pollfd){ .fd = cd[1], .events = 0 };
	ck_assert_int_eq(bt_poll(pf, 2, 0), 1);
	ck_assert(pf[0].revents & POLLIN);
	ck_assert_int_eq(bt_read(ab[0], buf, sizeof buf), 1);
	ev_read();
	ck_assert_int_eq(count(BT_EV_READY, ab[0]), 0);
	ck_assert_int_eq(count(BT_EV_READY, -1), 1);      /* poll's; the read
							     adds none */
	for (int i = 0; i < 2; i++) {
		bt_close(ab[i]);
		bt_close(cd[i]);
	}
}
END_TEST

/* The first call after the resume writes the thread's DROP and READY -1
 * along with its own records: that is no record lost, its channel stays
 * traced. */
START_TEST(first_call_after_resume)
{
	int ab[2], cd[2];

	ck_assert_int_eq(bt_socketpair(AF_UNIX, SOCK_STREAM, 0, cd), 0);
	ev_reset();
	set_paused(1);
	ck_assert_int_eq(bt_write(cd[0], "1", 1), 1);      /* one paused call */
	set_paused(0);
	ck_assert_int_eq(bt_socketpair(AF_UNIX, SOCK_STREAM, 0, ab), 0);
	ck_assert_int_eq(bt_write(ab[0], "2", 1), 1);
	ev_read();
	ck_assert_int_eq(ev[1].type, BT_EV_DROP);          /* after cd's CLOSE */
	ck_assert_int_eq(count(BT_EV_CHAN, ab[0]), 1);
	ck_assert_int_eq(count(BT_EV_CLOSE, ab[0]), 0);
	ck_assert_int_eq(count(BT_EV_DATA, ab[0]), 1);
	for (int i = 0; i < 2; i++) {
		bt_close(ab[i]);
		bt_close(cd[i]);
	}
}
END_TEST

static Suite *pause_suite(void)
{
	Suite *s = suite_create("pause");
	TCase *t = tcase_create("pause");

	tcase_add_test(t, dark_rule);
	tcase_add_test(t, held_input_across_pause);
	tcase_add_test(t, close_and_dup_while_paused);
	tcase_add_test(t, poll_hands_over_dark_fd);
	tcase_add_test(t, first_call_after_resume);
	tcase_set_timeout(t, 20);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pause_suite());
	int failed;

	bt_idle_spool = 0;      /* records stay in the ring for ev_read() */
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
