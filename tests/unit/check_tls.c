/*
 * check_tls.c - unit tests of libbtrace's OpenSSL wrappers (ssl.c),
 * linked directly as check_shim is: the traced end of a socketpair is an
 * OpenSSL server session driven through the wrappers' implementations
 * (bt_ssl_*), the other end a client session driven by libssl itself.
 * Only this test links libssl; libbtrace never does.
 *
 * Covered: a channel bound by SSL_set_fd is framed on its plaintext (MSG
 * records at plaintext offsets, no ciphertext counted); a record holding
 * three messages is handed over one message per SSL_read, each followed
 * by the fake WANT_READ (SSL_read -1, SSL_get_error WANT_READ, errno
 * untouched) and a readable descriptor in poll; SSL_read_ex and
 * SSL_peek; SSL_pending counts the plaintext the shim holds; SSL_write's
 * plaintext framed; hostile orders: SSL_free before SSL_shutdown and a
 * new session on the reused descriptor, a session re-bound to another
 * descriptor, SSL_clear; a session with memory BIOs passes through; the
 * thread's OpenSSL error queue is never touched.
 */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "check_tlsrec.h"

static char spool[] = "/tmp/check_tls.XXXXXX";

__attribute__((constructor(150))) static void test_env(void)
{
	tls_test_env(spool, "/nonexistent/check_tls.sock");
}

/* ---- an OpenSSL pair over a socketpair ---------------------------------- */

static SSL_CTX *sctx, *cctx;

static void make_ctx(void)
{
	EVP_PKEY *key;
	X509 *crt;

	if (sctx)
		return;
	key = EVP_EC_gen("P-256");
	ck_assert_ptr_nonnull(key);
	crt = X509_new();
	ASN1_INTEGER_set(X509_get_serialNumber(crt), 1);
	X509_gmtime_adj(X509_getm_notBefore(crt), 0);
	X509_gmtime_adj(X509_getm_notAfter(crt), 3600);
	X509_set_pubkey(crt, key);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(crt), "CN", MBSTRING_ASC,
				   (const unsigned char *)"check.test", -1, -1, 0);
	X509_set_issuer_name(crt, X509_get_subject_name(crt));
	ck_assert_int_gt(X509_sign(crt, key, EVP_sha256()), 0);
	sctx = SSL_CTX_new(TLS_server_method());
	cctx = SSL_CTX_new(TLS_client_method());
	ck_assert_int_eq(SSL_CTX_use_certificate(sctx, crt), 1);
	ck_assert_int_eq(SSL_CTX_use_PrivateKey(sctx, key), 1);
	/* no session tickets: the server's first reads see only records
	 * the test wrote */
	SSL_CTX_set_num_tickets(sctx, 0);
	SSL_CTX_set_verify(cctx, SSL_VERIFY_NONE, NULL);
	X509_free(crt);
	EVP_PKEY_free(key);
}

struct pair {
	int sv[2];       /* sv[0] traced (line processor), sv[1] the client's */
	SSL *srv, *cli;
};

/* sv[0] gets the line processor (one message per '\n'). */
static void pair_open(struct pair *p)
{
	struct bt_chan *ch;

	make_ctx();
	ck_assert_int_eq(bt_socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0,
				       p->sv), 0);
	ch = bt_chan_of(p->sv[0]);
	ck_assert_ptr_nonnull(ch);
	bt_mutex_lock(&ch->mu);
	bt_chan_attach(ch, p->sv[0], &bt_proto_line, BT_PH_RULE, "test");
	bt_mutex_unlock(&ch->mu);
	p->srv = SSL_new(sctx);
	p->cli = SSL_new(cctx);
	ck_assert_int_eq(bt_ssl_set_fd(p->srv, p->sv[0], 0), 1);
	ck_assert_int_eq(SSL_set_fd(p->cli, p->sv[1]), 1);
}

/* Both handshakes, interleaved (the server's through the shim). */
static void pair_handshake(struct pair *p)
{
	int sdone = 0, cdone = 0;

	for (int i = 0; i < 1000 && !(sdone && cdone); i++) {
		if (!cdone) {
			int r = SSL_connect(p->cli);
			cdone = r == 1;
			ck_assert(r == 1 || SSL_get_error(p->cli, r) == SSL_ERROR_WANT_READ);
		}
		if (!sdone) {
			int r = bt_ssl_handshake(p->srv, 2);
			sdone = r == 1;
			ck_assert(r == 1 || bt_ssl_get_error(p->srv, r) == SSL_ERROR_WANT_READ);
		}
	}
	ck_assert(sdone && cdone);
}

static void pair_close(struct pair *p)
{
	if (p->srv)
		bt_ssl_free(p->srv);
	if (p->cli)
		SSL_free(p->cli);
	bt_close(p->sv[0]);
	close(p->sv[1]);
	p->srv = p->cli = NULL;
}

/* ---- tests ----------------------------------------------------------------- */

/* Three messages in one record: one per SSL_read, each followed by the
 * fake WANT_READ, the descriptor readable meanwhile; MSG records at
 * plaintext offsets 0, 3, 7; no ciphertext counted. */
START_TEST(plaintext_one_message_per_read)
{
	struct pair p;
	char buf[64];
	static const int want[3] = { 3, 4, 2 };

	pair_open(&p);
	pair_handshake(&p);
	ev_reset();
	ck_assert_int_eq(SSL_write(p.cli, "aa\nbbb\nc\n", 9), 9);
	for (int m = 0; m < 3; m++) {
		int n;
		ck_assert(readable(p.sv[0], 1000));
		n = bt_ssl_read(p.srv, buf, sizeof buf);
		ck_assert_int_eq(n, want[m]);
		errno = 4242;
		n = bt_ssl_read(p.srv, buf, sizeof buf);
		ck_assert_int_eq(n, -1);
		ck_assert_int_eq(errno, 4242);
		ck_assert_int_eq(bt_ssl_get_error(p.srv, n), SSL_ERROR_WANT_READ);
	}
	ck_assert(!readable(p.sv[0], 50));
	ev_read();
	ck_assert_int_eq(ev_count(BT_EV_MSG, p.sv[0], BT_DIR_IN), 3);
	ck_assert_int_eq(ev_count(BT_EV_DATA, p.sv[0], -1), 0);
	for (int i = 0, k = 0; i < L.n; i++)
		if (L.e[i].type == BT_EV_MSG && L.e[i].fd == p.sv[0]) {
			static const uint64_t off[3] = { 0, 3, 7 };
			ck_assert_uint_eq(L.e[i].off, off[k]);
			ck_assert_uint_eq(L.e[i].len, (uint64_t)want[k]);
			k++;
		}
	pair_close(&p);
}
END_TEST

/* SSL_read_ex, SSL_peek and SSL_pending see the held plaintext. */
START_TEST(read_ex_peek_pending)
{
	struct pair p;
	char buf[64];
	size_t got = 0;

	pair_open(&p);
	pair_handshake(&p);
	ck_assert_int_eq(SSL_write(p.cli, "xy\nzzz\n", 7), 7);
	ck_assert(readable(p.sv[0], 1000));
	ck_assert_int_eq(bt_ssl_read_ex(p.srv, buf, sizeof buf, &got), 1);
	ck_assert_uint_eq(got, 3);
	ck_assert_mem_eq(buf, "xy\n", 3);
	/* the rest is held by the shim: pending, peekable */
	ck_assert_int_ge(bt_ssl_pending(p.srv), 4);
	ck_assert_int_eq(bt_ssl_has_pending(p.srv), 1);
	ck_assert_int_eq(bt_ssl_read_ex(p.srv, buf, sizeof buf, &got), 0);
	ck_assert_int_eq(bt_ssl_get_error(p.srv, 0), SSL_ERROR_WANT_READ);
	ck_assert_int_eq(bt_ssl_peek(p.srv, buf, 2), 2);
	ck_assert_mem_eq(buf, "zz", 2);
	ck_assert_int_eq(bt_ssl_read(p.srv, buf, sizeof buf), 4);
	ck_assert_mem_eq(buf, "zzz\n", 4);
	pair_close(&p);
}
END_TEST

/* SSL_write's plaintext is framed at plaintext offsets. */
START_TEST(plaintext_write_framed)
{
	struct pair p;
	char buf[64];
	int n = 0;

	pair_open(&p);
	pair_handshake(&p);
	ev_reset();
	ck_assert_int_eq(bt_ssl_write(p.srv, "one\ntwo\n", 8), 8);
	for (int i = 0; i < 100 && n < 8; i++) {
		int r = SSL_read(p.cli, buf + n, (int)sizeof buf - n);
		if (r > 0)
			n += r;
		else
			usleep(1000);
	}
	ck_assert_int_eq(n, 8);
	ck_assert_mem_eq(buf, "one\ntwo\n", 8);
	ev_read();
	ck_assert_int_eq(ev_count(BT_EV_MSG, p.sv[0], BT_DIR_OUT), 2);
	ck_assert_int_eq(ev_count(BT_EV_DATA, p.sv[0], -1), 0);
	pair_close(&p);
}
END_TEST

/* SSL_free before SSL_shutdown, the descriptor closed and its number
 * reused by a new pair, a new session (maybe at the same address): framed
 * from offset 0 again. */
START_TEST(free_before_shutdown_then_reuse)
{
	struct pair p, q;
	char buf[64];

	pair_open(&p);
	pair_handshake(&p);
	ck_assert_int_eq(SSL_write(p.cli, "a\n", 2), 2);
	ck_assert(readable(p.sv[0], 1000));
	ck_assert_int_eq(bt_ssl_read(p.srv, buf, sizeof buf), 2);
	pair_close(&p);          /* bt_ssl_free without a shutdown */
	pair_open(&q);
	pair_handshake(&q);
	ev_reset();
	ck_assert_int_eq(SSL_write(q.cli, "b\n", 2), 2);
	ck_assert(readable(q.sv[0], 1000));
	ck_assert_int_eq(bt_ssl_read(q.srv, buf, sizeof buf), 2);
	ev_read();
	ck_assert_int_eq(ev_count(BT_EV_MSG, q.sv[0], BT_DIR_IN), 1);
	for (int i = 0; i < L.n; i++)
		if (L.e[i].type == BT_EV_MSG)
			ck_assert_uint_eq(L.e[i].off, 0);
	pair_close(&q);
}
END_TEST

/* A session re-bound to another descriptor reads that one's channel;
 * SSL_clear forgets the session, which is looked up again. */
START_TEST(rebound_and_cleared)
{
	struct pair p;
	int sv2[2];
	char buf[64];

	pair_open(&p);
	pair_handshake(&p);
	/* dup the traced end: the session moves to the duplicate number */
	sv2[0] = bt_dup(p.sv[0]);
	ck_assert_int_ge(sv2[0], 0);
	ck_assert_int_eq(bt_ssl_set_fd(p.srv, sv2[0], 1), 1);
	ck_assert_int_eq(bt_ssl_set_fd(p.srv, sv2[0], 2), 1);
	ck_assert_int_eq(SSL_write(p.cli, "r\n", 2), 2);
	ck_assert(readable(sv2[0], 1000));
	ck_assert_int_eq(bt_ssl_read(p.srv, buf, sizeof buf), 2);
	ck_assert_int_eq(bt_ssl_clear(p.srv), 1);
	ck_assert_int_eq(bt_ssl_pending(p.srv), 0);
	bt_close(sv2[0]);
	pair_close(&p);
}
END_TEST

/* Memory BIOs: no descriptor, the calls pass through. */
START_TEST(memory_bio_passes_through)
{
	SSL *s;
	char buf[16];
	int r;

	make_ctx();
	s = SSL_new(sctx);
	bt_ssl_set_bio(s, BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()), 0);
	SSL_set_accept_state(s);
	errno = 0;
	r = bt_ssl_read(s, buf, sizeof buf);
	ck_assert_int_le(r, 0);
	ck_assert_int_eq(bt_ssl_get_error(s, r), SSL_ERROR_WANT_READ);
	ck_assert_int_eq(bt_ssl_pending(s), 0);
	bt_ssl_free(s);
}
END_TEST

/* The binding calls and lookups leave the thread's OpenSSL error queue
 * as it was: a session given one BIO, then the other (SSL_get_rfd of a
 * session with no read BIO pushes an error), and reads of a session whose
 * descriptor is unknown. */
START_TEST(error_queue_untouched)
{
	SSL *s;
	char buf[16];
	int r;

	make_ctx();
	s = SSL_new(sctx);
	ERR_clear_error();
	bt_ssl_set_bio(s, NULL, BIO_new(BIO_s_mem()), 2);
	ck_assert_uint_eq(ERR_peek_error(), 0);
	bt_ssl_set_bio(s, BIO_new(BIO_s_mem()), NULL, 1);
	ck_assert_uint_eq(ERR_peek_error(), 0);
	ck_assert_int_eq(bt_ssl_pending(s), 0);
	ck_assert_uint_eq(ERR_peek_error(), 0);
	SSL_set_accept_state(s);
	r = bt_ssl_read(s, buf, sizeof buf);
	ck_assert_int_eq(bt_ssl_get_error(s, r), SSL_ERROR_WANT_READ);
	ck_assert_uint_eq(ERR_peek_error(), 0);
	bt_ssl_free(s);
}
END_TEST

static Suite *tls_suite(void)
{
	Suite *s = suite_create("tls");
	TCase *t = tcase_create("openssl");

	tcase_add_test(t, plaintext_one_message_per_read);
	tcase_add_test(t, read_ex_peek_pending);
	tcase_add_test(t, plaintext_write_framed);
	tcase_add_test(t, free_before_shutdown_then_reuse);
	tcase_add_test(t, rebound_and_cleared);
	tcase_add_test(t, memory_bio_passes_through);
	tcase_add_test(t, error_queue_untouched);
	tcase_set_timeout(t, 30);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return tls_run_suite(tls_suite());
}
