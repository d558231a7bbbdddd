/*
 * check_gnutls.c - unit tests of libbtrace's GnuTLS wrappers (gnutls.c,
 * tls.c), linked directly as check_tls is: the traced end of a socketpair
 * is a GnuTLS server session driven through the wrappers' implementations
 * (bt_gnutls_*), the other end a client session driven by libgnutls
 * itself.  Only this test links libgnutls; libbtrace never does.
 *
 * Covered: a channel bound by gnutls_transport_set_int2 is framed on its
 * plaintext (MSG records at plaintext offsets, no ciphertext counted); a
 * record holding three messages is handed over one message per
 * gnutls_record_recv, each followed by GNUTLS_E_AGAIN once (errno
 * untouched) and a readable descriptor in poll; gnutls_record_check_pending
 * counts the plaintext the shim holds; gnutls_record_recv_seq framed the
 * same way, each message with its record's sequence number (the same for
 * the messages held back from one record); gnutls_record_send's plaintext
 * framed, a retry with NULL, 0 after GNUTLS_E_AGAIN counted unseen;
 * gnutls_transport_set_ptr with the descriptor cast; hostile
 * orders: gnutls_deinit before gnutls_bye and a new session on the reused
 * descriptor, a session re-bound to another descriptor after its
 * handshake; push/pull functions of the program's own: the socket is
 * learned from the handshake's transport I/O, framed, never the fake
 * GNUTLS_E_AGAIN; push/pull functions that touch no socket: passes
 * through; libgnutls's own functions (gnutls_init's defaults) are no
 * transport of the program's.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "check_tlsrec.h"

static char spool[] = "/tmp/check_gnutls.XXXXXX";

__attribute__((constructor(150))) static void test_env(void)
{
	tls_test_env(spool, "/nonexistent/check_gnutls.sock");
}

/* ---- a GnuTLS pair over a socketpair ------------------------------------ */

static gnutls_certificate_credentials_t scred, ccred;

/* A self-signed P-256 certificate for the server, made once. */
static void make_creds(void)
{
	gnutls_x509_privkey_t key;
	gnutls_x509_crt_t crt;
	time_t now = time(NULL);

	if (scred)
		return;
	ck_assert_int_eq(gnutls_global_init(), 0);
	ck_assert_int_eq(gnutls_x509_privkey_init(&key), 0);
	ck_assert_int_eq(gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
		GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0), 0);
	ck_assert_int_eq(gnutls_x509_crt_init(&crt), 0);
	gnutls_x509_crt_set_version(crt, 3);
	ck_assert_int_eq(gnutls_x509_crt_set_key(crt, key), 0);
	ck_assert_int_eq(gnutls_x509_crt_set_serial(crt, "\x01", 1), 0);
	gnutls_x509_crt_set_activation_time(crt, now - 60);
	gnutls_x509_crt_set_expiration_time(crt, now + 3600);
	ck_assert_int_eq(gnutls_x509_crt_set_dn(crt, "CN=check.test", NULL), 0);
	ck_assert_int_eq(gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256,
					       0), 0);
	ck_assert_int_eq(gnutls_certificate_allocate_credentials(&scred), 0);
	ck_assert_int_eq(gnutls_certificate_set_x509_key(scred, &crt, 1, key), 0);
	ck_assert_int_eq(gnutls_certificate_allocate_credentials(&ccred), 0);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
}

struct pair {
	int sv[2];       /* sv[0] traced (line processor), sv[1] the client's */
	gnutls_session_t srv, cli;
};

static gnutls_session_t new_session(unsigned flags)
{
	gnutls_session_t s;

	ck_assert_int_eq(gnutls_init(&s, flags | GNUTLS_NONBLOCK), 0);
	ck_assert_int_eq(gnutls_set_default_priority(s), 0);
	ck_assert_int_eq(gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE,
		flags & GNUTLS_SERVER ? scred : ccred), 0);
	return s;
}

/* sv[0] gets the line processor (one message per '\n'); the server
 * session is not given its transport yet. */
static void pair_open_bare(struct pair *p)
{
	struct bt_chan *ch;

	make_creds();
	ck_assert_int_eq(bt_socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0,
				       p->sv), 0);
	ch = bt_chan_of(p->sv[0]);
	ck_assert_ptr_nonnull(ch);
	bt_mutex_lock(&ch->mu);
	bt_chan_attach(ch, p->sv[0], &bt_proto_line, BT_PH_RULE, "test");
	bt_mutex_unlock(&ch->mu);
	p->srv = new_session(GNUTLS_SERVER);
	p->cli = new_session(GNUTLS_CLIENT);
	gnutls_transport_set_int(p->cli, p->sv[1]);
}

static void pair_open(struct pair *p)
{
	pair_open_bare(p);
	bt_gnutls_transport_set_int2(p->srv, p->sv[0], p->sv[0]);
}

/* Both handshakes, interleaved (the server's through the shim). */
static void pair_handshake(struct pair *p)
{
	int sdone = 0, cdone = 0;

	for (int i = 0; i < 1000 && !(sdone && cdone); i++) {
		if (!cdone) {
			int r = gnutls_handshake(p->cli);
			cdone = r == 0;
			ck_assert(r == 0 || r == GNUTLS_E_AGAIN);
		}
		if (!sdone) {
			int r = bt_gnutls_handshake(p->srv);
			sdone = r == 0;
			ck_assert(r == 0 || r == GNUTLS_E_AGAIN);
		}
		if (!(sdone && cdone))
			usleep(100);
	}
	ck_assert(sdone && cdone);
}

static void pair_close(struct pair *p)
{
	if (p->srv)
		bt_gnutls_deinit(p->srv);
	if (p->cli)
		gnutls_deinit(p->cli);
	bt_close(p->sv[0]);
	close(p->sv[1]);
	p->srv = p->cli = NULL;
}

/* The client reads N bytes (it may first see GNUTLS_E_AGAIN and the
 * server's session tickets). */
static void cli_read(struct pair *p, char *buf, int n)
{
	int got = 0;

	for (int i = 0; i < 1000 && got < n; i++) {
		ssize_t r = gnutls_record_recv(p->cli, buf + got,
					       (size_t)(n - got));
		if (r > 0)
			got += (int)r;
		else
			usleep(1000);
	}
	ck_assert_int_eq(got, n);
}

/* Check the MSG records of FD in DIR: offsets OFF, lengths LEN (N). */
static void msgs_at(int fd, int dir, const uint64_t *off, const uint64_t *len,
		    int n)
{
	int k = 0;

	ck_assert_int_eq(ev_count(BT_EV_MSG, fd, dir), n);
	for (int i = 0; i < L.n; i++)
		if (L.e[i].type == BT_EV_MSG && L.e[i].fd == fd &&
		    L.e[i].dir == dir) {
			ck_assert_uint_eq(L.e[i].off, off[k]);
			ck_assert_uint_eq(L.e[i].len, len[k]);
			k++;
		}
}

/* ---- tests ----------------------------------------------------------------- */

static const uint64_t off3[3] = { 0, 3, 7 }, len3[3] = { 3, 4, 2 };

/* Three messages in one record: one per gnutls_record_recv, each followed
 * by GNUTLS_E_AGAIN once, the descriptor readable meanwhile; MSG records
 * at plaintext offsets 0, 3, 7; no ciphertext counted. */
START_TEST(plaintext_one_message_per_read)
{
	struct pair p;
	char buf[64];

	pair_open(&p);
	pair_handshake(&p);
	ev_reset();
	ck_assert_int_eq(gnutls_record_send(p.cli, "aa\nbbb\nc\n", 9), 9);
	for (int m = 0; m < 3; m++) {
		ssize_t n;
		ck_assert(readable(p.sv[0], 1000));
		n = bt_gnutls_record_recv(p.srv, buf, sizeof buf);
		ck_assert_int_eq(n, (ssize_t)len3[m]);
		errno = 4242;
		n = bt_gnutls_record_recv(p.srv, buf, sizeof buf);
		ck_assert_int_eq(n, GNUTLS_E_AGAIN);
		ck_assert_int_eq(errno, 4242);
	}
	ck_assert(!readable(p.sv[0], 50));
	ev_read();
	msgs_at(p.sv[0], BT_DIR_IN, off3, len3, 3);
	ck_assert_int_eq(ev_count(BT_EV_DATA, p.sv[0], -1), 0);
	pair_close(&p);
}
END_TEST

/* gnutls_record_recv_seq reads as gnutls_record_recv does (one message
 * per call, GNUTLS_E_AGAIN once, MSG records at plaintext offsets), and
 * hands over the number of the record the bytes came from, the same for
 * the messages the shim held back from it; the next record's is one more.
 */
START_TEST(recv_seq_framed_with_numbers)
{
	struct pair p;
	unsigned char q[8], q0[8], want[8];
	char buf[64];

	pair_open(&p);
	pair_handshake(&p);
	ev_reset();
	ck_assert_int_eq(gnutls_record_send(p.cli, "aa\nbbb\nc\n", 9), 9);
	for (int m = 0; m < 3; m++) {
		ssize_t n;
		ck_assert(readable(p.sv[0], 1000));
		memset(q, 0xee, sizeof q);
		n = bt_gnutls_record_recv_seq(p.srv, buf, sizeof buf, q);
		ck_assert_int_eq(n, (ssize_t)len3[m]);
		if (m == 0)
			memcpy(q0, q, sizeof q);
		else
			ck_assert_mem_eq(q, q0, sizeof q);
		errno = 4242;
		n = bt_gnutls_record_recv_seq(p.srv, buf, sizeof buf, q);
		ck_assert_int_eq(n, GNUTLS_E_AGAIN);
		ck_assert_int_eq(errno, 4242);
	}
	ev_read();
	msgs_at(p.sv[0], BT_DIR_IN, off3, len3, 3);
	/* a second record: its number follows the first's */
	ck_assert_int_eq(gnutls_record_send(p.cli, "dd\n", 3), 3);
	ck_assert(readable(p.sv[0], 1000));
	ck_assert_int_eq(bt_gnutls_record_recv_seq(p.srv, buf, sizeof buf, q), 3);
	memcpy(want, q0, sizeof want);
	for (int i = 7; i >= 0 && ++want[i] == 0; i--)
		;
	ck_assert_mem_eq(q, want, sizeof q);
	/* written at all (the buffer was filled with 0xee), and the first
	 * application record of its epoch: a small number */
	ck_assert_uint_eq(q0[0], 0);
	pair_close(&p);
}
END_TEST

/* gnutls_record_check_pending counts the plaintext the shim holds. */
START_TEST(check_pending_counts_held)
{
	struct pair p;
	char buf[64];

	pair_open(&p);
	pair_handshake(&p);
	ck_assert_int_eq(gnutls_record_send(p.cli, "xy\nzzz\n", 7), 7);
	ck_assert(readable(p.sv[0], 1000));
	ck_assert_int_eq(bt_gnutls_record_recv(p.srv, buf, sizeof buf), 3);
	ck_assert_mem_eq(buf, "xy\n", 3);
	ck_assert_uint_ge(bt_gnutls_record_check_pending(p.srv), 4);
	ck_assert_int_eq(bt_gnutls_record_recv(p.srv, buf, sizeof buf),
			 GNUTLS_E_AGAIN);
	ck_assert_int_eq(bt_gnutls_record_recv(p.srv, buf, sizeof buf), 4);
	ck_assert_mem_eq(buf, "zzz\n", 4);
	ck_assert_uint_eq(bt_gnutls_record_check_pending(p.srv), 0);
	pair_close(&p);
}
END_TEST

/* gnutls_record_send and _send2's plaintext is framed at plaintext
 * offsets; the client gets the bytes unchanged. */
START_TEST(plaintext_write_framed)
{
	struct pair p;
	char buf[64];
	static const uint64_t off[3] = { 0, 4, 8 }, len[3] = { 4, 4, 6 };

	pair_open(&p);
	pair_handshake(&p);
	ev_reset();
	ck_assert_int_eq(bt_gnutls_record_send(p.srv, "one\ntwo\n", 8), 8);
	ck_assert_int_eq(bt_gnutls_record_send2(p.srv, "three\n", 6, 0, 0), 6);
	cli_read(&p, buf, 14);
	ck_assert_mem_eq(buf, "one\ntwo\nthree\n", 14);
	ev_read();
	msgs_at(p.sv[0], BT_DIR_OUT, off, len, 3);
	ck_assert_int_eq(ev_count(BT_EV_DATA, p.sv[0], -1), 0);
	pair_close(&p);
}
END_TEST

/* gnutls_record_send after GNUTLS_E_AGAIN, called again with NULL, 0:
 * GnuTLS answers the first call's length; the bytes are counted, not
 * seen (LOST_SYNC), and nothing reads the NULL buffer. */
START_TEST(send_retry_null)
{
	struct pair p;
	static char big[16000], sink[16384];
	ssize_t r = 0;
	int i;

	memset(big, 'x', sizeof big);
	for (size_t k = 99; k < sizeof big; k += 100)
		big[k] = '\n';          /* lines: the processor keeps up */
	pair_open(&p);
	pair_handshake(&p);
	ev_reset();
	for (i = 0; i < 1000; i++) {
		r = bt_gnutls_record_send(p.srv, big, sizeof big);
		if (r == GNUTLS_E_AGAIN)
			break;
		ck_assert_int_eq(r, (ssize_t)sizeof big);
	}
	ck_assert_int_eq(r, GNUTLS_E_AGAIN);
	for (i = 0; i < 10000 && r == GNUTLS_E_AGAIN; i++) {
		gnutls_record_recv(p.cli, sink, sizeof sink);
		r = bt_gnutls_record_send(p.srv, NULL, 0);
	}
	ck_assert_int_eq(r, (ssize_t)sizeof big);
	ev_read();
	ck_assert_int_eq(ev_count(BT_EV_LOST_SYNC, p.sv[0], BT_DIR_OUT), 1);
	ck_assert_int_ge(ev_count(BT_EV_MSG, p.sv[0], BT_DIR_OUT), 160);
	pair_close(&p);
}
END_TEST

/* gnutls_transport_set_ptr with the descriptor cast, as older programs
 * give it. */
START_TEST(set_ptr_descriptor_cast)
{
	struct pair p;
	char buf[64];

	pair_open_bare(&p);
	bt_gnutls_transport_set_ptr2(p.srv, (void *)(intptr_t)p.sv[0], NULL, 0);
	pair_handshake(&p);
	ev_reset();
	ck_assert_int_eq(gnutls_record_send(p.cli, "p\n", 2), 2);
	ck_assert(readable(p.sv[0], 1000));
	ck_assert_int_eq(bt_gnutls_record_recv(p.srv, buf, sizeof buf), 2);
	ev_read();
	ck_assert_int_eq(ev_count(BT_EV_MSG, p.sv[0], BT_DIR_IN), 1);
	pair_close(&p);
}
END_TEST

/* gnutls_deinit before gnutls_bye, the descriptor closed and its number
 * reused by a new pair, a new session (maybe at the same address): framed
 * from offset 0 again. */
START_TEST(deinit_before_bye_then_reuse)
{
	struct pair p, q;
	char buf[64];

	pair_open(&p);
	pair_handshake(&p);
	ck_assert_int_eq(gnutls_record_send(p.cli, "a\n", 2), 2);
	ck_assert(readable(p.sv[0], 1000));
	ck_assert_int_eq(bt_gnutls_record_recv(p.srv, buf, sizeof buf), 2);
	pair_close(&p);          /* bt_gnutls_deinit without a bye */
	pair_open(&q);
	pair_handshake(&q);
	ev_reset();
	ck_assert_int_eq(gnutls_record_send(q.cli, "b\n", 2), 2);
	ck_assert(readable(q.sv[0], 1000));
	ck_assert_int_eq(bt_gnutls_record_recv(q.srv, buf, sizeof buf), 2);
	ev_read();
	ck_assert_int_eq(ev_count(BT_EV_MSG, q.sv[0], BT_DIR_IN), 1);
	for (int i = 0; i < L.n; i++)
		if (L.e[i].type == BT_EV_MSG)
			ck_assert_uint_eq(L.e[i].off, 0);
	/* a bye after all this: the close_notify is ciphertext, uncounted */
	ck_assert_int_ge(bt_gnutls_bye(q.srv, GNUTLS_SHUT_WR), GNUTLS_E_AGAIN);
	pair_close(&q);
}
END_TEST

/* A session re-bound to another descriptor after its handshake reads that
 * one's channel. */
START_TEST(rebound_after_handshake)
{
	struct pair p;
	int d;
	char buf[64];

	pair_open(&p);
	pair_handshake(&p);
	d = bt_dup(p.sv[0]);
	ck_assert_int_ge(d, 0);
	bt_gnutls_transport_set_int2(p.srv, d, d);
	ev_reset();
	ck_assert_int_eq(gnutls_record_send(p.cli, "r\n", 2), 2);
	ck_assert(readable(d, 1000));
	ck_assert_int_eq(bt_gnutls_record_recv(p.srv, buf, sizeof buf), 2);
	ck_assert_int_eq(bt_gnutls_record_send(p.srv, "s\n", 2), 2);
	cli_read(&p, buf, 2);
	ev_read();
	ck_assert_int_eq(ev_count(BT_EV_MSG, d, BT_DIR_IN), 1);
	ck_assert_int_eq(ev_count(BT_EV_MSG, d, BT_DIR_OUT), 1);
	bt_close(d);
	pair_close(&p);
}
END_TEST

/* The program's own transport functions, moving the ciphertext through
 * the (traced) socket calls: the descriptor is learned from the handshake. */
static int custom_fd, log_fd = -1;

/* the program's push and pull: a line to its log (a pipe), then the
 * socket */
static ssize_t my_push(gnutls_transport_ptr_t t, const void *b, size_t n)
{
	(void)t;
	if (log_fd >= 0)
		ck_assert_int_eq(bt_write(log_fd, "push\n", 5), 5);
	return bt_send(custom_fd, b, n, 0);
}

static ssize_t my_pull(gnutls_transport_ptr_t t, void *b, size_t n)
{
	(void)t;
	if (log_fd >= 0)
		ck_assert_int_eq(bt_write(log_fd, "pull\n", 5), 5);
	return bt_recv(custom_fd, b, n, 0);
}

static int my_timeout(gnutls_transport_ptr_t t, unsigned ms)
{
	struct pollfd pf = { .fd = custom_fd, .events = POLLIN };
	(void)t;
	return poll(&pf, 1, (int)ms);
}

/* Learned from the handshake (the socket, not the log pipe written
 * first): framed, and never the fake GNUTLS_E_AGAIN (the three messages
 * come one per call, back to back). */
START_TEST(custom_transport_learned)
{
	struct pair p;
	char buf[64];
	static int ctx;
	int lp[2];

	ck_assert_int_eq(bt_pipe2(lp, O_NONBLOCK, 1), 0);
	log_fd = lp[1];
	pair_open_bare(&p);
	custom_fd = p.sv[0];
	/* a pointer that is no descriptor, then the functions */
	bt_gnutls_transport_set_ptr2(p.srv, &ctx, &ctx, 1);
	bt_gnutls_transport_set_function(p.srv, (void *)my_push, 0);
	bt_gnutls_transport_set_function(p.srv, (void *)my_pull, 1);
	gnutls_transport_set_pull_timeout_function(p.srv, my_timeout);
	pair_handshake(&p);
	ev_reset();
	ck_assert_int_eq(gnutls_record_send(p.cli, "aa\nbbb\nc\n", 9), 9);
	ck_assert(readable(p.sv[0], 1000));
	for (int m = 0; m < 3; m++)
		ck_assert_int_eq(bt_gnutls_record_recv(p.srv, buf, sizeof buf),
				 (ssize_t)len3[m]);
	ck_assert_int_eq(bt_gnutls_record_send(p.srv, "ok\n", 3), 3);
	cli_read(&p, buf, 3);
	ev_read();
	msgs_at(p.sv[0], BT_DIR_IN, off3, len3, 3);
	ck_assert_int_eq(ev_count(BT_EV_MSG, p.sv[0], BT_DIR_OUT), 1);
	ck_assert_int_eq(ev_count(BT_EV_DATA, p.sv[0], -1), 0);
	ck_assert_int_gt(read(lp[0], buf, sizeof buf), 0);   /* it logged */
	log_fd = -1;
	bt_close(lp[0]);
	bt_close(lp[1]);
	pair_close(&p);
}
END_TEST

/* Transport functions that touch no socket (the ciphertext moved by the
 * program itself, outside the shim's sight): nothing is bound, the calls
 * pass through, the socket's channel untouched. */
static ssize_t quiet_push(gnutls_transport_ptr_t t, const void *b, size_t n)
{
	(void)t;
	return send(custom_fd, b, n, 0);      /* libc's own: not traced */
}

static ssize_t quiet_pull(gnutls_transport_ptr_t t, void *b, size_t n)
{
	(void)t;
	return recv(custom_fd, b, n, 0);
}

START_TEST(custom_transport_unseen_passes)
{
	struct pair p;
	char buf[64];
	ssize_t n = 0;

	pair_open_bare(&p);
	custom_fd = p.sv[0];
	bt_gnutls_transport_set_function(p.srv, (void *)quiet_push, 0);
	bt_gnutls_transport_set_function(p.srv, (void *)quiet_pull, 1);
	gnutls_transport_set_pull_timeout_function(p.srv, my_timeout);
	/* a descriptor-looking pointer set after the functions: still not
	 * the session's descriptor as far as the shim knows */
	bt_gnutls_transport_set_int2(p.srv, p.sv[0], p.sv[0]);
	pair_handshake(&p);
	ev_reset();
	ck_assert_int_eq(gnutls_record_send(p.cli, "aa\nbbb\n", 7), 7);
	for (int i = 0; i < 1000 && n <= 0; i++) {
		n = bt_gnutls_record_recv(p.srv, buf, sizeof buf);
		if (n <= 0)
			usleep(1000);
	}
	ck_assert_int_eq(n, 7);          /* whole: not cut */
	ck_assert_uint_eq(bt_gnutls_record_check_pending(p.srv), 0);
	ev_read();
	ck_assert_int_eq(ev_count(BT_EV_MSG, p.sv[0], -1), 0);
	pair_close(&p);
}
END_TEST

/* gnutls_init installs GnuTLS's own transport functions through the
 * exported setters (through the shim when it is preloaded): a function of
 * libgnutls is no transport of the program's; the program's own is. */
START_TEST(own_functions_are_not_custom)
{
	gnutls_session_t s;

	make_creds();
	s = new_session(GNUTLS_SERVER);
	bt_gnutls_transport_set_function(s, (void *)gnutls_record_recv, 2);
	ck_assert_uint_eq(bt_tls_flags(s) & BT_TLS_CUSTOM, 0);
	bt_gnutls_transport_set_function(s, (void *)my_push, 0);
	ck_assert_uint_eq(bt_tls_flags(s) & BT_TLS_CUSTOM, BT_TLS_CUSTOM);
	/* ... and stays so when the pointers are set after */
	bt_gnutls_transport_set_int2(s, 0, 0);
	ck_assert_uint_eq(bt_tls_flags(s) & BT_TLS_CUSTOM, BT_TLS_CUSTOM);
	bt_gnutls_deinit(s);
	ck_assert_uint_eq(bt_tls_flags(s), 0);
}
END_TEST

static Suite *gnutls_suite(void)
{
	Suite *s = suite_create("gnutls");
	TCase *t = tcase_create("gnutls");

	tcase_add_test(t, plaintext_one_message_per_read);
	tcase_add_test(t, check_pending_counts_held);
	tcase_add_test(t, recv_seq_framed_with_numbers);
	tcase_add_test(t, plaintext_write_framed);
	tcase_add_test(t, send_retry_null);
	tcase_add_test(t, set_ptr_descriptor_cast);
	tcase_add_test(t, deinit_before_bye_then_reuse);
	tcase_add_test(t, rebound_after_handshake);
	tcase_add_test(t, custom_transport_learned);
	tcase_add_test(t, custom_transport_unseen_passes);
	tcase_add_test(t, own_functions_are_not_custom);
	tcase_set_timeout(t, 30);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return tls_run_suite(gnutls_suite());
}
