/*
 * check_proto.c - unit tests of the protocol processors (protocols/).
 *
 * Every capture of tests/proto/captures, recorded from real programs, and
 * every synthetic case below is replayed whole, as captured, byte by byte,
 * at every split point into two chunks, in pseudo-random chunks and with
 * the guard page before the data; each replay must give exactly the golden
 * event log (tests/proto/golden/NAME.txt, or the expectations written next
 * to the synthetic bytes).  Then: garbage and mutated captures never break
 * the interface contract, the limits give BT_PP_LOST, sniffing picks the
 * right processor, and the registry and default rules are consistent.
 *
 * PROTO_TESTDIR (compiled in, or the environment variable of that name)
 * is the tests/proto directory.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_proto.h"

#ifndef PROTO_TESTDIR
#define PROTO_TESTDIR "tests/proto"
#endif

static const char *testdir(void)
{
	const char *e = getenv("PROTO_TESTDIR");
	return e && *e ? e : PROTO_TESTDIR;
}

/* Replay C in every chunking; each log must equal WANT. */
static void replay_all(const char *name, const struct bt_proto_ops *o,
		       const struct cap *c, const char *want)
{
	char err[512];
	const int modes[] = { RM_RECORDS, RM_WHOLE, RM_BYTES, RM_FRONT };
	for (unsigned i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		struct sbuf out = { 0 };
		int r = replay(o, c, modes[i], 0, &out, err, sizeof err);
		ck_assert_msg(r == 0, "%s (%s): %s", name,
			      replay_mode_name(modes[i]), err);
		ck_assert_msg(out.len == strlen(want) &&
			      memcmp(out.s, want, out.len) == 0,
			      "%s (%s): log differs:\n--- got\n%.*s--- want\n%s",
			      name, replay_mode_name(modes[i]), (int)out.len,
			      out.s ? out.s : "", want);
		sb_free(&out);
	}
	for (size_t seed = 1; seed <= 8; seed++) {
		struct sbuf out = { 0 };
		int r = replay(o, c, RM_RANDOM, seed, &out, err, sizeof err);
		ck_assert_msg(r == 0, "%s (random %zu): %s", name, seed, err);
		ck_assert_msg(out.len == strlen(want) &&
			      memcmp(out.s, want, out.len) == 0,
			      "%s (random chunks, seed %zu): log differs:\n"
			      "--- got\n%.*s--- want\n%s", name, seed,
			      (int)out.len, out.s ? out.s : "", want);
		sb_free(&out);
	}
	if (c->transport == BT_TR_DGRAM)
		return;
	struct sbuf out = { 0 };
	long k = replay_splits(o, c, want, &out, err, sizeof err);
	ck_assert_msg(k >= 0, "%s (split): %s", name, err);
	ck_assert_msg(k == 0, "%s (split at byte %ld): log differs:\n"
		      "--- got\n%.*s--- want\n%s", name, k, (int)out.len,
		      out.s ? out.s : "", want);
	sb_free(&out);
}

/* ---- captures from real programs ---------------------------------------- */

#define MAX_CAPS 256
static char *cap_names[MAX_CAPS];
static int ncaps;

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void scan_captures(void)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/captures", testdir());
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) && ncaps < MAX_CAPS) {
		size_t l = strlen(e->d_name);
		if (l > 4 && strcmp(e->d_name + l - 4, ".cap") == 0)
			cap_names[ncaps++] = strndup(e->d_name, l - 4);
	}
	closedir(d);
	qsort(cap_names, (size_t)ncaps, sizeof *cap_names, name_cmp);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	struct sbuf b = { 0 };
	char buf[4096];
	size_t n;
	sb_printf(&b, "%s", "");
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		sb_printf(&b, "%.*s", (int)n, buf);
	fclose(f);
	return b.s;
}

START_TEST(test_captures_found)
{
	ck_assert_msg(ncaps >= 30, "only %d captures in %s/captures (run from "
		      "the build tree or set PROTO_TESTDIR)", ncaps, testdir());
}
END_TEST

START_TEST(test_capture)
{
	char path[1024], err[512];
	struct cap c;
	const char *name = cap_names[_i];

	snprintf(path, sizeof path, "%s/captures/%s.cap", testdir(), name);
	ck_assert_msg(cap_load(path, &c, err, sizeof err) == 0, "%s", err);
	const struct bt_proto_ops *o = bt_proto_by_name(c.proto);
	ck_assert_msg(o != NULL, "%s: no processor '%s'", name, c.proto);
	snprintf(path, sizeof path, "%s/golden/%s.txt", testdir(), name);
	char *want = slurp(path);
	ck_assert_msg(want != NULL, "%s: no golden log %s", name, path);
	ck_assert_msg(strstr(want, " lost") == NULL && strlen(want) > 0,
		      "%s: a real capture must be followed to its end", name);
	replay_all(name, o, &c, want);
	free(want);
	cap_free(&c);
}
END_TEST

/*
 * Mutated captures: flip, drop or duplicate bytes; the processor may give
 * up but must keep its contract (checked inside replay) and never crash.
 */
START_TEST(test_capture_mutated)
{
	char path[1024], err[512];
	struct cap c;
	const char *name = cap_names[_i];
	uint64_t rnd = 0x9e3779b97f4a7c15u ^ (uint64_t)_i;

	snprintf(path, sizeof path, "%s/captures/%s.cap", testdir(), name);
	ck_assert_msg(cap_load(path, &c, err, sizeof err) == 0, "%s", err);
	const struct bt_proto_ops *o = bt_proto_by_name(c.proto);
	ck_assert(o != NULL);
	for (int round = 0; round < 40; round++) {
		struct cap m = c;
		m.rec = malloc(c.nrec * sizeof *m.rec);
		uint8_t **copies = calloc(c.nrec, sizeof *copies);
		ck_assert(m.rec && copies);
		for (size_t i = 0; i < c.nrec; i++) {
			m.rec[i] = c.rec[i];
			if (!c.rec[i].len)
				continue;
			copies[i] = malloc(c.rec[i].len);
			memcpy(copies[i], c.rec[i].data, c.rec[i].len);
			for (int k = 0; k < 1 + round / 8; k++) {
				rnd ^= rnd << 13; rnd ^= rnd >> 7; rnd ^= rnd << 17;
				copies[i][rnd % c.rec[i].len] ^=
					(uint8_t)(1u << (rnd >> 60 & 7));
			}
			m.rec[i].data = copies[i];
		}
		for (int mode = RM_RECORDS; mode <= RM_BYTES; mode++) {
			struct sbuf out = { 0 };
			int r = replay(o, &m, mode, 0, &out, err, sizeof err);
			ck_assert_msg(r == 0, "%s mutated (round %d, %s): %s",
				      name, round, replay_mode_name(mode), err);
			sb_free(&out);
		}
		for (size_t i = 0; i < c.nrec; i++)
			free(copies[i]);
		free(copies);
		free(m.rec);
	}
	cap_free(&c);
}
END_TEST

/* ---- synthetic cases -------------------------------------------------- */

struct seg {
	uint8_t     type;       /* CAP_* */
	const char *data;
	size_t      len;
	const char *want;       /* "KIND[ rest]" of the message ending here,
				   "lost", or NULL */
};

struct pcase {
	const char *name;
	const char *proto;
	int         role, transport;
	struct seg  seg[40];
};

#define IN(s, w)   { CAP_IN, s, sizeof(s) - 1, w }
#define OUT(s, w)  { CAP_OUT, s, sizeof(s) - 1, w }
#define EOFIN(w)   { CAP_EOF_IN, "", 0, w }
#define EOFOUT(w)  { CAP_EOF_OUT, "", 0, w }
#define CLIENT     BT_ROLE_CLIENT
#define SERVER     BT_ROLE_SERVER
#define UNKNOWN    BT_ROLE_UNKNOWN
#define STREAM     BT_TR_STREAM
#define DGRAM      BT_TR_DGRAM

/* HTTP/2: the client preface, a frame header (3-byte length, type, flags,
   4-byte stream id, all as escaped strings), an empty SETTINGS */
#define H2_PRI "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define H2F(len, type, flags, sid) "\x00\x00" len type flags "\x00\x00\x00" sid
#define H2_SETTINGS H2F("\x00", "\x04", "\x00", "\x00")
/* FastCGI records used below (version 1) */
#define FC_BEGIN(id, role) "\x01\x01\x00" id "\x00\x08\x00\x00\x00" role \
	"\x01\x00\x00\x00\x00\x00"
#define FC_EMPTY(type, id) "\x01" type "\x00" id "\x00\x00\x00\x00"
#define FC_END(id, st, ps) "\x01\x03\x00" id "\x00\x08\x00\x00" st ps \
	"\x00\x00\x00"
/* PostgreSQL messages */
#define PG_Z      "Z\x00\x00\x00\x05I"
#define PG_SYNC   "S\x00\x00\x00\x04"
#define PG_EXEC   "E\x00\x00\x00\x09\x00\x00\x00\x00\x00"
#define PG_RAUTH  "R\x00\x00\x00\x08\x00\x00\x00\x00"
/* Parse of statement NAME (unnamed: "") with query Q; N = 4 + |NAME| + 1 +
   |Q| + 1 + 2 */
#define PG_PARSE(n, name, q) "P\x00\x00\x00" n name "\x00" q "\x00\x00\x00"
/* Bind of the unnamed portal to statement NAME; N = 4 + 1 + |NAME|+1 + 6 */
#define PG_BIND(n, name) "B\x00\x00\x00" n "\x00" name "\x00\x00\x00\x00\x00" \
	"\x00\x00"
/* MySQL: a greeting (protocol 10, "8.0.1") whose upper capability byte
 * is HI ("\x01": CLIENT_DEPRECATE_EOF), a handshake response of user
 * alice, database shop, an OK, a column definition, an EOF, an execute
 * without parameters, a prepare (id N, no columns) and its answer */
#define MY_Z23 "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" \
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00"
#define MY_GREET(hi) "\x49\x00\x00\x00\x0a" "8.0.1\x00" "\x01\x00\x00\x00" \
	"abcdefgh\x00" "\x08\x82\x21\x02\x00\x08" hi "\x15" \
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" "ijklmnopqrst\x00" \
	"mysql_native_password\x00"
#define MY_HSR(hi) "\x56\x00\x00\x01" "\x08\x82\x08" hi "\x00\x00\x00\x01" \
	"\x21" MY_Z23 "alice\x00" "\x14" "01234567890123456789" "shop\x00" \
	"mysql_native_password\x00"
/* the same response after an SSL request: CLIENT_SSL, sequence id 2 */
#define MY_HSR_SSL "\x56\x00\x00\x02" "\x08\x8a\x08\x00\x00\x00\x00\x01" \
	"\x21" MY_Z23 "alice\x00" "\x14" "01234567890123456789" "shop\x00" \
	"mysql_native_password\x00"
#define MY_OK(seq) "\x07\x00\x00" seq "\x00\x00\x00\x02\x00\x00\x00"
#define MY_DEF(seq) "\x04\x00\x00" seq "\x03" "def"
#define MY_EOF(seq, st) "\x05\x00\x00" seq "\xfe\x00\x00" st "\x00"
#define MY_EXEC(id) "\x0a\x00\x00\x00\x17" id "\x00\x00\x00\x00\x01\x00" \
	"\x00\x00"
#define MY_PREP(n, id) \
	OUT("\x09\x00\x00\x00\x16" "SELECT " n, \
	    "request method=\"prepare\" sql=\"SELECT " n "\""), \
	IN("\x0c\x00\x00\x01\x00" id "\x00\x00\x00" \
	   "\x00\x00\x00\x00\x00\x00\x00", "reply")
#define A128 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static const struct pcase cases[] = {
/* ---------------------------------------------------------------- HTTP */
{ "http: chunked with extensions and trailers, LF-only lines, pipelined",
  "http", CLIENT, STREAM, {
	OUT("GET /c?x=1 HTTP/1.1\r\nHost: a.test\r\n\r\n",
	    "request method=\"GET\" target=\"/c?x=1\" host=\"a.test\" "
	    "body_len=\"0\""),
	OUT("GET /d HTTP/1.1\nHost: a.test\n\n",
	    "request method=\"GET\" target=\"/d\" host=\"a.test\" "
	    "body_len=\"0\""),
	IN("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
	   "5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n",
	   "reply status=200 body_len=\"15\""),
	IN("HTTP/1.1 404 Not Found\nContent-Length: 3\n\nabc",
	   "reply status=404 body_len=\"3\""),
} },
{ "http: field names in any case; near misses (a CR for the '-', one letter off)",
  "http", SERVER, STREAM, {
	IN("GET /x HTTP/1.1\r\nhOsT: h1\r\nHOST: h2\r\nX-REQUEST-ID: r1\r\n"
	   "TraceParent: 00-ab\r\nContent-Lengtx: 9\r\nContent\rLength: 9\r\n"
	   "CONTENT-LENGTH: 2\r\n\r\nok",
	   "request method=\"GET\" target=\"/x\" host=\"h1\" request_id=\"r1\" "
	   "traceparent=\"00-ab\" body_len=\"2\""),
	IN("POST /y HTTP/1.1\r\nhost\r: h3\r\nHost: h4\r\n"
	   "transfer-ENCODING: CHUNKED\r\n\r\n2\r\nab\r\n0\r\n\r\n",
	   "request method=\"POST\" target=\"/y\" host=\"h4\" body_len=\"2\""),
	OUT("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA",
	    "reply status=200 body_len=\"1\""),
	OUT("HTTP/1.1 200 OK\r\nTRANSFER-ENCODING: chunked\r\n\r\n0\r\n\r\n",
	    "reply status=200 body_len=\"0\""),
} },
{ "http: a control byte late in a long start line", "http", SERVER,
  STREAM, {
	IN("GET /abcdefghijklmnop\x01qrs HTTP/1.1\r\n\r\n", "lost"),
} },
{ "http: DEL late in a long start line", "http", SERVER, STREAM, {
	IN("GET /abcdefghijklmnopqrstuvw\x7f HTTP/1.1\r\n\r\n", "lost"),
} },
{ "http: names of a kept name's length but not its first letter; "
  "Content-Length with leading zeros, twice; CR in a reason phrase",
  "http", SERVER, STREAM, {
	IN("GET /a HTTP/1.1\r\nDate: x\r\nETag: y\r\nXost: z\r\n"
	   "Content-Type: t\r\nHost: h\r\nContent-Length: 0003\r\n"
	   "content-length: 3\r\n\r\nabc",
	   "request method=\"GET\" target=\"/a\" host=\"h\" "
	   "body_len=\"3\""),
	OUT("HTTP/1.1 200 O\rK\r\nContent-Length: 1\r\n\r\nA",
	    "reply status=200 body_len=\"1\""),
} },
{ "http: a control byte in a status line's last word", "http", CLIENT,
  STREAM, {
	IN("HTTP/1.1 200 O\x01\r\n\r\n", "lost"),
} },
{ "http: a control byte just before a request line's CR LF", "http",
  SERVER, STREAM, {
	IN("GET /abcdefghijklmnopqrstuv HTTP/1.1\x0b\r\n\r\n", "lost"),
} },
{ "http: two different Content-Lengths", "http", SERVER, STREAM, {
	IN("GET / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n",
	   "lost"),
} },
{ "http: a Content-Length of 18 digits", "http", SERVER, STREAM, {
	IN("GET / HTTP/1.1\r\nContent-Length: 123456789012345678\r\n\r\n",
	   "lost"),
} },
{ "http: a long start line of token bytes only", "http", SERVER, STREAM, {
	IN("GET /abcdefghijklmnopqrstuvwxyz0123456789 HTTP/1.1\r\n\r\n",
	   "request method=\"GET\" target=\"/abcdefghijklmnopqrstuvwxyz0123456789\" "
	   "body_len=\"0\""),
} },
{ "http: HEAD, 204 and 304 have no body; 1xx are interim", "http",
  SERVER, STREAM, {
	IN("HEAD /h HTTP/1.1\r\nHost: h\r\n\r\n",
	   "request method=\"HEAD\" target=\"/h\" host=\"h\" body_len=\"0\""),
	IN("DELETE /x HTTP/1.1\r\nHost: h\r\n\r\n",
	   "request method=\"DELETE\" target=\"/x\" host=\"h\" body_len=\"0\""),
	IN("GET /nm HTTP/1.1\r\nHost: h\r\n\r\n",
	   "request method=\"GET\" target=\"/nm\" host=\"h\" body_len=\"0\""),
	IN("POST /p HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n"
	   "Content-Length: 4\r\n\r\n", NULL),
	OUT("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
	    "reply status=200 body_len=\"0\""),
	OUT("HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n",
	    "reply status=204 body_len=\"0\""),
	OUT("HTTP/1.1 304 Not Modified\r\nContent-Length: 56\r\n\r\n",
	    "reply status=304 body_len=\"0\""),
	OUT("HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n",
	    "oneway status=103 body_len=\"0\""),
	OUT("HTTP/1.1 100 Continue\r\n\r\n", "oneway status=100 body_len=\"0\""),
	IN("body", "request method=\"POST\" target=\"/p\" host=\"h\" "
	   "body_len=\"4\""),
	OUT("HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
	    "reply status=201 body_len=\"2\""),
} },
{ "http: HTTP/1.0 body ended by close; traceparent, X-Request-ID", "http",
  CLIENT, STREAM, {
	OUT("GET /old HTTP/1.0\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e"
	    "4736-00f067aa0ba902b7-01\r\nX-Request-ID: abc-123\r\n\r\n",
	    "request method=\"GET\" target=\"/old\" traceparent=\"00-4bf92f3577"
	    "b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\" request_id=\"abc-123\""
	    " body_len=\"0\""),
	IN("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n", NULL),
	IN("part one, ", NULL),
	IN("part two", NULL),
	EOFIN("reply status=200 flags=eof body_len=\"18\""),
} },
{ "http: 101 Switching Protocols opens a tunnel", "http", CLIENT, STREAM, {
	OUT("GET /ws HTTP/1.1\r\nHost: w\r\nUpgrade: websocket\r\n"
	    "Connection: Upgrade\r\n\r\n",
	    "request method=\"GET\" target=\"/ws\" host=\"w\" body_len=\"0\""),
	IN("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	   "Connection: Upgrade\r\n\r\n", "reply status=101 body_len=\"0\""),
	IN("\x81\x05hello", "lost"),
} },
{ "http: CONNECT answered 2xx opens a tunnel", "http", SERVER, STREAM, {
	IN("CONNECT db.test:5432 HTTP/1.1\r\nHost: db.test:5432\r\n\r\n",
	   "request method=\"CONNECT\" target=\"db.test:5432\" "
	   "host=\"db.test:5432\" body_len=\"0\""),
	OUT("HTTP/1.1 200 Connection established\r\n\r\n",
	    "reply status=200 body_len=\"0\""),
	IN("\x00\x00\x00\x08\x04\xd2\x16\x2f", "lost"),
} },
{ "http: CONNECT refused, the connection goes on", "http", SERVER, STREAM, {
	IN("CONNECT db.test:5432 HTTP/1.1\r\n\r\n",
	   "request method=\"CONNECT\" target=\"db.test:5432\" body_len=\"0\""),
	OUT("HTTP/1.1 407 Proxy Authentication Required\r\n"
	    "Content-Length: 2\r\n\r\nno", "reply status=407 body_len=\"2\""),
	IN("GET / HTTP/1.1\r\n\r\n",
	   "request method=\"GET\" target=\"/\" body_len=\"0\""),
	OUT("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	    "reply status=200 body_len=\"0\""),
} },
{ "http: role from the bytes; empty lines, obs-fold, repeated length",
  "http", UNKNOWN, STREAM, {
	IN("\r\nPOST /f HTTP/1.1\r\nHost: f\r\nX-Long: a\r\n  folded\r\n"
	   "Content-Length: 3, 3\r\n\r\nxyz",
	   "request method=\"POST\" target=\"/f\" host=\"f\" body_len=\"3\""),
	OUT("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	    "reply status=200 body_len=\"0\""),
	IN("HTTP/1.1 200 OK\r\n\r\n", "lost"),
} },
{ "http: conflicting Content-Length", "http", SERVER, STREAM, {
	IN("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
	   "lost"),
} },
{ "http: a request body in a coding other than chunked", "http", SERVER,
  STREAM, {
	IN("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", "lost"),
} },
{ "http: bad chunk size", "http", CLIENT, STREAM, {
	OUT("GET / HTTP/1.1\r\n\r\n",
	    "request method=\"GET\" target=\"/\" body_len=\"0\""),
	IN("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	   "lost"),
} },
{ "http: TLS instead of HTTP is lost before any newline", "http", SERVER,
  STREAM, {
	IN("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", "lost"),
} },
{ "http: HTTP/2 preface", "http", SERVER, STREAM, {
	IN("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "lost"),
} },
/* ------------------------------------------------------------- FastCGI */
{ "fastcgi: two requests multiplexed, names and lengths split across "
  "records", "fastcgi", CLIENT, STREAM, {
	OUT(FC_BEGIN("\x01", "\x01") FC_BEGIN("\x02", "\x01")
	    "\x01\x04\x00\x01\x00\x1f\x01\x00"
	    "\x0b\x06SCRIPT_NAME/a.php\x0e\x04REQUEST_ME\x00"
	    "\x01\x04\x00\x02\x00\x16\x00\x00"
	    "\x0b\x80\x00\x00\x06REQUEST_URI/b?q=1"
	    "\x01\x04\x00\x01\x00\x11\x07\x00"
	    "THODPOST\x80\x00\x00\x03\x01" "FOOx\x00\x00\x00\x00\x00\x00\x00"
	    FC_EMPTY("\x04", "\x01") FC_EMPTY("\x04", "\x02")
	    FC_EMPTY("\x05", "\x02"),
	    "request witness=2 fcgi_uri=\"/b?q=1\" body_len=\"0\""),
	OUT("\x01\x05\x00\x01\x00\x03\x05\x00" "abc\x00\x00\x00\x00\x00"
	    FC_EMPTY("\x05", "\x01"),
	    "request witness=1 method=\"POST\" fcgi_script=\"/a.php\" "
	    "body_len=\"3\""),
	IN("\x01\x06\x00\x02\x00\x11\x07\x00" "Status: 200\r\n\r\nhi"
	   "\x00\x00\x00\x00\x00\x00\x00"
	   FC_END("\x02", "\x00\x00\x00\x00", "\x00"), "reply witness=2"),
	IN("\x01\x07\x00\x01\x00\x04\x00\x00" "warn"
	   "\x01\x06\x00\x01\x00\x01\x00\x00" "x"
	   FC_END("\x01", "\x00\x00\x00\x03", "\x02"),
	   "reply status=3 witness=1 error=\"OVERLOADED\""),
} },
{ "fastcgi: management records, authorizer, filter, abort", "fastcgi",
  UNKNOWN, STREAM, {
	OUT("\x01\x09\x00\x00\x00\x11\x07\x00" "\x0f\x00" "FCGI_MPXS_CONNS"
	    "\x00\x00\x00\x00\x00\x00\x00", "control"),
	IN("\x01\x0a\x00\x00\x00\x12\x06\x00" "\x0f\x01" "FCGI_MPXS_CONNS0"
	   "\x00\x00\x00\x00\x00\x00", "control"),
	OUT(FC_BEGIN("\x03", "\x02")
	    "\x01\x04\x00\x03\x00\x0f\x01\x00" "\x0b\x02SCRIPT_NAME/z\x00"
	    FC_EMPTY("\x04", "\x03"),
	    "request witness=3 fcgi_script=\"/z\" body_len=\"0\""),
	IN(FC_END("\x03", "\x00\x00\x00\x00", "\x00"), "reply witness=3"),
	OUT(FC_BEGIN("\x04", "\x03") FC_EMPTY("\x04", "\x04")
	    FC_EMPTY("\x05", "\x04") "\x01\x08\x00\x04\x00\x01\x00\x00" "d",
	    NULL),
	OUT(FC_EMPTY("\x08", "\x04"), "request witness=4 body_len=\"0\""),
	OUT(FC_BEGIN("\x05", "\x01") FC_EMPTY("\x02", "\x05"),
	    "oneway witness=5"),
	IN(FC_END("\x05", "\x00\x00\x00\x00", "\x00"), "reply witness=5"),
	IN("\x01\x0b\x00\x00\x00\x08\x00\x00" "\x63\x00\x00\x00\x00\x00\x00"
	   "\x00", "control"),
	OUT("\x02\x01\x00\x06\x00\x08\x00\x00", "lost"),
} },
{ "fastcgi: a name seen twice keeps its first value; 4-byte lengths of "
  "a kept name and of a value stepped over; an empty name; a name of a "
  "kept one's length that is none of them", "fastcgi", CLIENT, STREAM, {
	OUT(FC_BEGIN("\x01", "\x01")
	    "\x01\x04\x00\x01\x00\x6c\x04\x00"
	    "\x0e\x03REQUEST_METHODGET" "\x0e\x04REQUEST_METHODPOST"
	    "\x00\x02xy" "\x0e\x01REQUEST_METHOXz"
	    "\x80\x00\x00\x0b\x02SCRIPT_NAME/s"
	    "\x04\x80\x00\x00\x05HOSTh.com" "\x0b\x03REQUEST_URI/u?"
	    "\x00\x00\x00\x00"
	    FC_EMPTY("\x04", "\x01") FC_EMPTY("\x05", "\x01"),
	    "request witness=1 method=\"GET\" fcgi_script=\"/s\" "
	    "fcgi_uri=\"/u?\" body_len=\"0\""),
} },
{ "fastcgi: more requests in flight than slots", "fastcgi", CLIENT,
  STREAM, {
	OUT(FC_BEGIN("\x01", "\x01") FC_BEGIN("\x02", "\x01")
	    FC_BEGIN("\x03", "\x01") FC_BEGIN("\x04", "\x01"), NULL),
	OUT(FC_BEGIN("\x05", "\x01"), "lost"),
} },
{ "fastcgi: a record of a request never begun", "fastcgi", CLIENT,
  STREAM, {
	OUT("\x01\x04\x00\x09\x00\x00\x00\x00", "lost"),
} },
{ "fastcgi: a web server's record from the application", "fastcgi",
  CLIENT, STREAM, {
	IN(FC_BEGIN("\x01", "\x01"), "lost"),
} },
/* ---------------------------------------------------------- PostgreSQL */
{ "postgresql: GSSENC and SSL refused, MD5 authentication, notice inside "
  "a reply, async messages while idle, function call", "postgresql",
  CLIENT, STREAM, {
	OUT("\x00\x00\x00\x08\x04\xd2\x16\x30", "control"),
	IN("N", "control info=\"N\""),
	OUT("\x00\x00\x00\x08\x04\xd2\x16\x2f", "control"),
	IN("N", "control info=\"N\""),
	OUT("\x00\x00\x00\x35\x00\x03\x00\x00user\x00" "alice\x00"
	    "database\x00shop\x00" "application_name\x00t\x00\x00",
	    "control user=\"alice\" database=\"shop\""),
	IN("R\x00\x00\x00\x0c\x00\x00\x00\x05" "abcd", "control"),
	OUT("p\x00\x00\x00\x09pass\x00", "control"),
	IN(PG_RAUTH "S\x00\x00\x00\x19" "client_encoding\x00UTF8\x00"
	   "K\x00\x00\x00\x0c\x00\x00\x00\x01\x00\x00\x00\x02" PG_Z, "control"),
	OUT("Q\x00\x00\x00\x0eSELECT 1;\x00",
	    "request method=\"query\" sql=\"SELECT 1;\""),
	IN("N\x00\x00\x00\x0dSNOTICE\x00\x00" "C\x00\x00\x00\x0dSELECT 1\x00"
	   PG_Z, "reply tag=\"SELECT 1\""),
	IN("A\x00\x00\x00\x0e\x00\x00\x00\x07" "ch\x00hi\x00", "oneway"),
	IN("S\x00\x00\x00\x11TimeZone\x00UTC\x00", "oneway"),
	OUT("F\x00\x00\x00\x0e\x00\x00\x04\xd2\x00\x00\x00\x00\x00\x00",
	    "request method=\"call\""),
	IN("V\x00\x00\x00\x08\xff\xff\xff\xff" PG_Z, "reply"),
	OUT("X\x00\x00\x00\x04", "control"),
} },
{ "postgresql: named statements (the oldest forgotten), Describe and "
  "Flush, COPY inside an unsynced batch", "postgresql", SERVER, STREAM, {
	IN("\x00\x00\x00\x10\x00\x03\x00\x00user\x00u\x00\x00",
	   "control user=\"u\""),
	OUT(PG_RAUTH PG_Z, "control"),
	IN(PG_PARSE("\x12", "s1", "SELECT 1") PG_BIND("\x0e", "s1") PG_EXEC
	   PG_SYNC, "request method=\"execute\" sql=\"SELECT 1\""),
	OUT("1\x00\x00\x00\x04" "2\x00\x00\x00\x04"
	    "C\x00\x00\x00\x0dSELECT 1\x00" PG_Z, "reply tag=\"SELECT 1\""),
	IN(PG_PARSE("\x12", "s2", "SELECT 2") PG_SYNC,
	   "request method=\"prepare\" sql=\"SELECT 2\""),
	OUT("1\x00\x00\x00\x04" PG_Z, "reply"),
	IN(PG_PARSE("\x12", "s3", "SELECT 3") PG_SYNC,
	   "request method=\"prepare\" sql=\"SELECT 3\""),
	OUT("1\x00\x00\x00\x04" PG_Z, "reply"),
	IN(PG_PARSE("\x12", "s4", "SELECT 4") PG_SYNC,
	   "request method=\"prepare\" sql=\"SELECT 4\""),
	OUT("1\x00\x00\x00\x04" PG_Z, "reply"),
	IN(PG_PARSE("\x12", "s5", "SELECT 5") PG_SYNC,
	   "request method=\"prepare\" sql=\"SELECT 5\""),
	OUT("1\x00\x00\x00\x04" PG_Z, "reply"),
	IN(PG_BIND("\x0e", "s5") PG_EXEC PG_SYNC,
	   "request method=\"execute\" sql=\"SELECT 5\""),
	OUT("2\x00\x00\x00\x04" "C\x00\x00\x00\x0dSELECT 1\x00" PG_Z,
	    "reply tag=\"SELECT 1\""),
	IN(PG_BIND("\x0e", "s1") PG_EXEC PG_SYNC, "request method=\"execute\""),
	OUT("E\x00\x00\x00\x19SERROR\x00" "C26000\x00Mgone\x00\x00" PG_Z,
	    "reply error=\"26000\""),
	IN(PG_PARSE("\x11", "", "SELECT $1") "D\x00\x00\x00\x06S\x00"
	   "H\x00\x00\x00\x04", NULL),
	OUT("1\x00\x00\x00\x04" "t\x00\x00\x00\x0a\x00\x01\x00\x00\x00\x17",
	    NULL),
	IN(PG_BIND("\x0c", "") PG_EXEC PG_SYNC,
	   "request method=\"execute\" sql=\"SELECT $1\""),
	OUT("2\x00\x00\x00\x04" "C\x00\x00\x00\x0dSELECT 1\x00" PG_Z,
	    "reply tag=\"SELECT 1\""),
	IN(PG_PARSE("\x19", "", "COPY t FROM STDIN") PG_BIND("\x0c", "")
	   PG_EXEC "H\x00\x00\x00\x04", NULL),
	OUT("G\x00\x00\x00\x07\x00\x00\x00", NULL),
	IN("d\x00\x00\x00\x06" "ab" "c\x00\x00\x00\x04" PG_SYNC,
	   "request method=\"execute\" sql=\"COPY t FROM STDIN\""),
	OUT("C\x00\x00\x00\x0b" "COPY 1\x00" PG_Z, "reply tag=\"COPY 1\""),
} },
{ "postgresql: Bind parameters hashed (text, binary integer; short, NULL "
  "and later Binds' left out)", "postgresql", CLIENT, STREAM, {
	OUT(PG_PARSE("\x1a", "", "SELECT $1,$2,$3,$4")
	    "B\x00\x00\x00\x30" "\x00" "\x00" "\x00\x04"
	    "\x00\x00\x00\x01\x00\x00\x00\x01" "\x00\x04"
	    "\x00\x00\x00\x06" "aaa111" "\x00\x00\x00\x04" "\x00\x00\x04\xd2"
	    "\x00\x00\x00\x02" "ab" "\xff\xff\xff\xff" "\x00\x00"
	    PG_EXEC PG_SYNC,
	    "request method=\"execute\" sql=\"SELECT $1,$2,$3,$4\" "
	    "params=\"0:3a6b7d409c6d463b 1:1fabbdf10314a21d\""),
	IN("1\x00\x00\x00\x04" "2\x00\x00\x00\x04"
	   "C\x00\x00\x00\x0dSELECT 1\x00" PG_Z, "reply tag=\"SELECT 1\""),
	OUT("B\x00\x00\x00\x16" "\x00" "\x00" "\x00\x01" "\x00\x01"
	    "\x00\x01" "\x00\x00\x00\x04" "\xff\xfe\xee\x90" "\x00\x00"
	    "B\x00\x00\x00\x16" "\x00" "\x00" "\x00\x00" "\x00\x01"
	    "\x00\x00\x00\x06" "zzz999" "\x00\x00" PG_EXEC PG_EXEC PG_SYNC,
	    "request method=\"execute\" sql=\"SELECT $1,$2,$3,$4\" "
	    "params=\"0:5e3f4c8aef0a46ed\""),
	IN("2\x00\x00\x00\x04" "C\x00\x00\x00\x0dSELECT 1\x00"
	   "2\x00\x00\x00\x04" "C\x00\x00\x00\x0dSELECT 1\x00" PG_Z,
	   "reply tag=\"SELECT 1\""),
	OUT("Q\x00\x00\x00\x0dSELECT 1\x00",
	    "request method=\"query\" sql=\"SELECT 1\""),
} },
{ "postgresql: COPY out, COPY failed, simple queries pipelined",
  "postgresql", CLIENT, STREAM, {
	OUT("Q\x00\x00\x00\x15" "COPY t TO STDOUT\x00",
	    "request method=\"query\" sql=\"COPY t TO STDOUT\""),
	IN("H\x00\x00\x00\x07\x00\x00\x00" "d\x00\x00\x00\x06" "ab"
	   "c\x00\x00\x00\x04" "C\x00\x00\x00\x0b" "COPY 1\x00" PG_Z,
	   "reply tag=\"COPY 1\""),
	OUT("Q\x00\x00\x00\x16" "COPY t FROM STDIN\x00",
	    "request method=\"query\" sql=\"COPY t FROM STDIN\""),
	IN("G\x00\x00\x00\x07\x00\x00\x00", NULL),
	OUT("d\x00\x00\x00\x06" "ab" "f\x00\x00\x00\x09oops\x00", "oneway"),
	IN("E\x00\x00\x00\x13SERROR\x00" "C57014\x00\x00" PG_Z,
	   "reply error=\"57014\""),
	OUT("Q\x00\x00\x00\x0dSELECT 1\x00",
	    "request method=\"query\" sql=\"SELECT 1\""),
	OUT("Q\x00\x00\x00\x0dSELECT 2\x00",
	    "request method=\"query\" sql=\"SELECT 2\""),
	IN("C\x00\x00\x00\x0dSELECT 1\x00" PG_Z, "reply tag=\"SELECT 1\""),
	IN("C\x00\x00\x00\x0dSELECT 1\x00" PG_Z, "reply tag=\"SELECT 1\""),
} },
{ "postgresql: SSL accepted: encryption follows", "postgresql", CLIENT,
  STREAM, {
	OUT("\x00\x00\x00\x08\x04\xd2\x16\x2f", "control"),
	IN("S", "control info=\"S\""),
	OUT("\x16\x03\x01\x02\x00\x01\x00\x01\xfc", "lost"),
} },
{ "postgresql: replication (CopyBoth) is not followed", "postgresql",
  CLIENT, STREAM, {
	OUT("Q\x00\x00\x00\x16START_REPLICATION\x00",
	    "request method=\"query\" sql=\"START_REPLICATION\""),
	IN("W\x00\x00\x00\x07\x00\x00\x00", "lost"),
} },
{ "postgresql: length below 4", "postgresql", CLIENT, STREAM, {
	OUT("Q\x00\x00\x00\x02", "lost"),
} },
{ "postgresql: length above 1 GiB", "postgresql", CLIENT, STREAM, {
	OUT("Q\x40\x00\x00\x01", "lost"),
} },
{ "postgresql: query text without its NUL", "postgresql", CLIENT, STREAM, {
	OUT("Q\x00\x00\x00\x08" "abcd", "lost"),
} },
{ "postgresql: a backend message from the frontend", "postgresql", CLIENT,
  STREAM, {
	OUT(PG_Z, "lost"),
} },
{ "postgresql: a first byte no end sends", "postgresql", UNKNOWN, STREAM, {
	OUT("!bad", "lost"),
} },
{ "postgresql: role from the bytes, mid-stream", "postgresql", UNKNOWN,
  STREAM, {
	IN("Q\x00\x00\x00\x0dSELECT 9\x00",
	   "request method=\"query\" sql=\"SELECT 9\""),
	OUT("C\x00\x00\x00\x0dSELECT 1\x00" PG_Z, "reply tag=\"SELECT 1\""),
} },
/* --------------------------------------------------------------- MySQL */
{ "mysql: CLIENT_DEPRECATE_EOF, auth switch, two result sets, prepare and "
  "execute pipelined (id -1), a closed statement, an ERR while idle",
  "mysql", CLIENT, STREAM, {
	IN(MY_GREET("\x01"), "control info=\"8.0.1\""),
	OUT(MY_HSR("\x01"), "control user=\"alice\" database=\"shop\""),
	IN("\x17\x00\x00\x02\xfe" "mysql_native_password\x00", "control"),
	OUT("\x14\x00\x00\x03" "01234567890123456789", "control"),
	IN(MY_OK("\x04"), "control"),
	OUT("\x13\x00\x00\x00\x03" "SELECT 1; SELECT 2",
	    "request method=\"query\" sql=\"SELECT 1; SELECT 2\""),
	IN("\x01\x00\x00\x01\x01" MY_DEF("\x02") "\x02\x00\x00\x03\x01" "1"
	   "\x07\x00\x00\x04\xfe\x00\x00\x0a\x00\x00\x00"
	   "\x01\x00\x00\x05\x01" MY_DEF("\x06") "\x02\x00\x00\x07\x01" "2",
	   NULL),
	IN("\x07\x00\x00\x08\xfe\x00\x00\x02\x00\x00\x00", "reply"),
	OUT("\x0d\x00\x00\x00\x16" "SELECT ? + ?",
	    "request method=\"prepare\" sql=\"SELECT ? + ?\""),
	OUT("\x14\x00\x00\x00\x17\xff\xff\xff\xff\x00\x01\x00\x00\x00\x00\x01"
	    "\xfd\x00\xfd\x00\x01" "1" "\x01" "2",
	    "request method=\"execute\" sql=\"SELECT ? + ?\""),
	IN("\x0c\x00\x00\x01\x00\x05\x00\x00\x00\x01\x00\x02\x00\x00\x00\x00"
	   MY_DEF("\x02") MY_DEF("\x03") MY_DEF("\x04"), "reply"),
	IN("\x01\x00\x00\x01\x01" MY_DEF("\x02") "\x03\x00\x00\x03\x00\x00\x03"
	   "\x07\x00\x00\x04\xfe\x00\x00\x02\x00\x00\x00", "reply"),
	OUT(MY_EXEC("\x05"), "request method=\"execute\" sql=\"SELECT ? + ?\""),
	IN("\x0c\x00\x00\x01\xff\x10\x04#42000bad",
	   "reply status=1040 error=\"42000\""),
	OUT("\x05\x00\x00\x00\x19\x05\x00\x00\x00", "oneway method=\"close\""),
	OUT(MY_EXEC("\x05"), "request method=\"execute\" info=\"stmt_id=5\""),
	IN("\x0c\x00\x00\x01\xff\xdb\x04#HY000bad",
	   "reply status=1243 error=\"HY000\""),
	OUT("\x01\x00\x00\x00\x0e", "request method=\"ping\""),
	IN(MY_OK("\x01"), "reply"),
	IN("\x0c\x00\x00\x00\xff\x9f\x0f#HY000bye",
	   "oneway status=3999 error=\"HY000\""),
	OUT("\x01\x00\x00\x00\x01", "control method=\"quit\""),
} },
{ "mysql: EOF packets, INIT_DB, LOCAL INFILE with a progress report, a "
  "procedure's two results, an ERR among rows, prepare with EOFs, reset",
  "mysql", SERVER, STREAM, {
	OUT(MY_GREET("\x00"), "control info=\"8.0.1\""),
	IN(MY_HSR("\x00"), "control user=\"alice\" database=\"shop\""),
	OUT(MY_OK("\x02"), "control"),
	IN("\x05\x00\x00\x00\x02" "shop",
	   "request method=\"init_db\" database=\"shop\""),
	OUT(MY_OK("\x01"), "reply"),
	IN("\x28\x00\x00\x00\x03" "LOAD DATA LOCAL INFILE 'f' INTO TABLE t",
	   "request method=\"query\" "
	   "sql=\"LOAD DATA LOCAL INFILE 'f' INTO TABLE t\""),
	OUT("\x02\x00\x00\x01\xfb" "f", NULL),
	IN("\x04\x00\x00\x02" "a\tb\n", NULL),
	IN("\x00\x00\x00\x03", "oneway"),
	OUT("\x09\x00\x00\x04\xff\xff\xff\x01\x01\x00\x00\x00\x00"
	    "\x07\x00\x00\x05\x00\x01\x00\x02\x00\x00\x00", "reply"),
	IN("\x10\x00\x00\x00\x03" "SELECT a FROM t",
	   "request method=\"query\" sql=\"SELECT a FROM t\""),
	OUT("\x01\x00\x00\x01\x01" MY_DEF("\x02") MY_EOF("\x03", "\x02")
	    "\x02\x00\x00\x04\x01" "a" "\x01\x00\x00\x05\xfb"
	    MY_EOF("\x06", "\x22"), "reply"),
	IN("\x09\x00\x00\x00\x03" "CALL p()",
	   "request method=\"query\" sql=\"CALL p()\""),
	OUT("\x01\x00\x00\x01\x01" MY_DEF("\x02") MY_EOF("\x03", "\x02")
	    "\x02\x00\x00\x04\x01" "x" MY_EOF("\x05", "\x0a") MY_OK("\x06"),
	    "reply"),
	IN("\x10\x00\x00\x00\x03" "SELECT b FROM t",
	   "request method=\"query\" sql=\"SELECT b FROM t\""),
	OUT("\x01\x00\x00\x01\x01" MY_DEF("\x02") MY_EOF("\x03", "\x02")
	    "\x02\x00\x00\x04\x01" "b" "\x0c\x00\x00\x05\xff\x10\x04#HY000bad",
	    "reply status=1040 error=\"HY000\""),
	IN("\x09\x00\x00\x00\x16" "SELECT ?",
	   "request method=\"prepare\" sql=\"SELECT ?\""),
	OUT("\x0c\x00\x00\x01\x00\x01\x00\x00\x00\x01\x00\x01\x00\x00\x00\x00"
	    MY_DEF("\x02") MY_EOF("\x03", "\x02") MY_DEF("\x04")
	    MY_EOF("\x05", "\x02"), "reply"),
	IN("\x05\x00\x00\x00\x1a\x01\x00\x00\x00",
	   "request method=\"reset_stmt\""),
	OUT(MY_OK("\x01"), "reply"),
	IN(MY_EXEC("\x01"), "request method=\"execute\" sql=\"SELECT ?\""),
	OUT("\x01\x00\x00\x01\x01" MY_DEF("\x02") MY_EOF("\x03", "\x02")
	    "\x03\x00\x00\x04\x00\x00\x07" MY_EOF("\x05", "\x02"), "reply"),
	IN("\x01\x00\x00\x00\x1f", "request method=\"reset_connection\""),
	OUT(MY_OK("\x01"), "reply"),
	IN(MY_EXEC("\x01"), "request method=\"execute\" info=\"stmt_id=1\""),
	OUT("\x0c\x00\x00\x01\xff\xdb\x04#HY000bad",
	    "reply status=1243 error=\"HY000\""),
	IN("\x01\x00\x00\x00\x12", "lost"),
} },
{ "mysql: statement table: the least recently used forgotten", "mysql",
  CLIENT, STREAM, {
	IN(MY_GREET("\x01"), "control info=\"8.0.1\""),
	OUT(MY_HSR("\x01"), "control user=\"alice\" database=\"shop\""),
	IN(MY_OK("\x02"), "control"),
	MY_PREP("1", "\x01"), MY_PREP("2", "\x02"), MY_PREP("3", "\x03"),
	MY_PREP("4", "\x04"),
	OUT(MY_EXEC("\x01"), "request method=\"execute\" sql=\"SELECT 1\""),
	IN(MY_OK("\x01"), "reply"),
	MY_PREP("5", "\x05"), MY_PREP("6", "\x06"), MY_PREP("7", "\x07"),
	OUT(MY_EXEC("\x02"), "request method=\"execute\" info=\"stmt_id=2\""),
	IN(MY_OK("\x01"), "reply"),
	OUT(MY_EXEC("\x01"), "request method=\"execute\" sql=\"SELECT 1\""),
	IN(MY_OK("\x01"), "reply"),
	OUT(MY_EXEC("\x07"), "request method=\"execute\" sql=\"SELECT 7\""),
	IN(MY_OK("\x01"), "reply"),
} },
{ "mysql: SSL request: TLS follows", "mysql", CLIENT, STREAM, {
	IN(MY_GREET("\x00"), "control info=\"8.0.1\""),
	OUT("\x20\x00\x00\x01" "\x08\x8a\x08\x00" "\x00\x00\x00\x01" "\x21"
	    MY_Z23, "control info=\"ssl\""),
	OUT("\x16\x03\x01\x00\x05" "hello", "lost"),
} },
/* libbtrace starts the processor over on the TLS plaintext after the SSL
 * request: the first packet is the handshake response, sequence id 2 */
{ "mysql: restarted on TLS plaintext after an SSL request", "mysql",
  CLIENT, STREAM, {
	OUT(MY_HSR_SSL, "control user=\"alice\" database=\"shop\""),
	IN(MY_OK("\x03"), "control"),
	OUT("\x09\x00\x00\x00\x03" "SELECT 1", "request method=\"query\" "
	    "sql=\"SELECT 1\""),
	IN(MY_OK("\x01"), "reply"),
} },
{ "mysql: restarted on TLS plaintext, no role: the response tells", "mysql",
  UNKNOWN, STREAM, {
	IN(MY_HSR_SSL, "control user=\"alice\" database=\"shop\""),
	OUT(MY_OK("\x03"), "control"),
	IN("\x01\x00\x00\x00\x0e", "request method=\"ping\""),
	OUT(MY_OK("\x01"), "reply"),
} },
{ "mysql: a response with sequence id 2 but no CLIENT_SSL first", "mysql",
  CLIENT, STREAM, {
	OUT("\x56\x00\x00\x02" "\x08\x82\x08\x00\x00\x00\x00\x01"
	    "\x21" MY_Z23 "alice\x00" "\x14" "01234567890123456789" "shop\x00"
	    "mysql_native_password\x00", "lost"),
} },
{ "mysql: no role: the greeting tells", "mysql", UNKNOWN, STREAM, {
	OUT(MY_GREET("\x00"), "control info=\"8.0.1\""),
	IN(MY_HSR("\x00"), "control user=\"alice\" database=\"shop\""),
	OUT(MY_OK("\x02"), "control"),
	IN("\x01\x00\x00\x00\x0e", "request method=\"ping\""),
	OUT(MY_OK("\x01"), "reply"),
} },
{ "mysql: an ERR for a greeting (too many connections)", "mysql", SERVER,
  STREAM, {
	OUT("\x0b\x00\x00\x00\xff\x13\x04" "Too many", "control status=1043"),
	IN("\x01\x00\x00\x00\x03", "lost"),
} },
{ "mysql: the client speaks first", "mysql", CLIENT, STREAM, {
	OUT("\x01\x00\x00\x00\x0e", "lost"),
} },
{ "mysql: a 3.20 handshake response", "mysql", CLIENT, STREAM, {
	IN(MY_GREET("\x00"), "control info=\"8.0.1\""),
	OUT("\x20\x00\x00\x01" "\x08\x80\x08\x00" "\x00\x00\x00\x01" "\x21"
	    MY_Z23, "lost"),
} },
{ "mysql: a command with sequence id 1", "mysql", CLIENT, STREAM, {
	IN(MY_GREET("\x00"), "control info=\"8.0.1\""),
	OUT(MY_HSR("\x00"), "control user=\"alice\" database=\"shop\""),
	IN(MY_OK("\x02"), "control"),
	OUT("\x01\x00\x00\x01\x0e", "lost"),
} },
/* ----------------------------------------------------------------- DNS */
{ "dns: UDP queries, escapes, unknown type, root, NXDOMAIN", "dns", CLIENT,
  DGRAM, {
	OUT("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    "\x01" "a\x01" "b\x00\x00\x01\x00\x01",
	    "request witness=4660 flags=dgram dns_name=\"a.b\" "
	    "dns_type=\"A\""),
	IN("\x12\x34\x81\x83\x00\x01\x00\x00\x00\x00\x00\x00"
	   "\x01" "a\x01" "b\x00\x00\x01\x00\x01",
	   "reply status=3 witness=4660 flags=dgram dns_name=\"a.b\" "
	   "dns_type=\"A\" error=\"NXDOMAIN\""),
	OUT("\x00\x07\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    "\x03" "a b\x03x.y\x00\x03\xe7\x00\x01",
	    "request witness=7 flags=dgram dns_name=\"a\\x5c032b.x\\x5c.y\" "
	    "dns_type=\"TYPE999\""),
	OUT("\x00\x08\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x02\x00\x01",
	    "request witness=8 flags=dgram dns_name=\".\" dns_type=\"NS\""),
	OUT("\x00\x09\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\xc0\x0c"
	    "\x00\x01\x00\x01", "lost"),
} },
{ "dns: TCP, two queries in one write, answers in the other order", "dns",
  CLIENT, STREAM, {
	OUT("\x00\x13\x00\x01\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    "\x01" "a\x00\x00\x01\x00\x01"
	    "\x00\x13", NULL),
	OUT("", NULL),
	OUT("\x00\x02\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    "\x01" "b\x00\x00\x1c\x00\x01", NULL),
	IN("\x00\x1f\x00\x02\x81\x80\x00\x01\x00\x01\x00\x00\x00\x00"
	   "\x01" "b\x00\x00\x1c\x00\x01\xc0\x0c\x00\x1c\x00\x01\x00\x00\x00"
	   "\x3c\x00\x00", NULL),
	IN("", NULL),
	IN("\x00\x13\x00\x01\x81\x82\x00\x01\x00\x00\x00\x00\x00\x00"
	   "\x01" "a\x00\x00\x01\x00\x01", NULL),
	IN("\x00\x05" "abcde", "lost"),
} },
{ "dns: datagram shorter than a header", "dns", CLIENT, DGRAM, {
	OUT("\x00\x01", "lost"),
} },
/* --------------------------------------------------------------- redis */
{ "redis: RESP2 pipeline, MULTI/EXEC, errors, inline commands, AUTH and "
  "HELLO redacted, subcommands", "redis", CLIENT, STREAM, {
	OUT("*2\r\n$3\r\nGET\r\n$7\r\nuser:42\r\n",
	    "request method=\"GET\" target=\"GET user:42\""),
	OUT("*3\r\n$3\r\nset\r\n$1\r\nk\r\n$6\r\nsecret\r\n",
	    "request method=\"SET\" target=\"SET k\""),
	OUT("*1\r\n$5\r\nMULTI\r\n", "request method=\"MULTI\" target=\"MULTI\""),
	OUT("*2\r\n$4\r\nINCR\r\n$1\r\nc\r\n",
	    "request method=\"INCR\" target=\"INCR c\""),
	OUT("*2\r\n$4\r\nLPOP\r\n$1\r\nk\r\n",
	    "request method=\"LPOP\" target=\"LPOP k\""),
	OUT("*1\r\n$4\r\nEXEC\r\n", "request method=\"EXEC\" target=\"EXEC\""),
	IN("$-1\r\n", "reply"),
	IN("+OK\r\n", "reply"),
	IN("+OK\r\n", "reply"),
	IN("+QUEUED\r\n", "reply"),
	IN("+QUEUED\r\n", "reply"),
	IN("*2\r\n:1\r\n-WRONGTYPE Operation against a key\r\n", "reply"),
	OUT("*3\r\n$4\r\nAUTH\r\n$5\r\nalice\r\n$6\r\nhunter\r\n",
	    "request method=\"AUTH\" target=\"AUTH\""),
	IN("-WRONGPASS invalid username-password pair\r\n",
	   "reply status=1 error=\"WRONGPASS\""),
	OUT("*6\r\n$5\r\nHELLO\r\n$1\r\n2\r\n$4\r\nAUTH\r\n$5\r\nalice\r\n"
	    "$6\r\nhunter\r\n$0\r\n\r\n",
	    "request method=\"HELLO\" target=\"HELLO 2\""),
	IN("*2\r\n$6\r\nserver\r\n$5\r\nredis\r\n", "reply"),
	OUT("*4\r\n$6\r\nCONFIG\r\n$3\r\nset\r\n$11\r\nrequirepass\r\n"
	    "$6\r\nhunter\r\n", "request method=\"CONFIG\" target=\"CONFIG SET\""),
	OUT("*3\r\n$3\r\nACL\r\n$7\r\nSETUSER\r\n$7\r\n>hunter\r\n",
	    "request method=\"ACL\" target=\"ACL SETUSER\""),
	OUT("*2\r\n$4\r\nECHO\r\n$6\r\nsecret\r\n",
	    "request method=\"ECHO\" target=\"ECHO\""),
	IN("+OK\r\n", "reply"),
	IN("-ERR Error in ACL SETUSER modifier\r\n",
	   "reply status=1 error=\"ERR\""),
	IN("$6\r\nsecret\r\n", "reply"),
	OUT("PING\r\n", "request method=\"PING\" target=\"PING\""),
	OUT("\r\n  \r\nauth  hunter2\r\n",
	    "request method=\"AUTH\" target=\"AUTH\""),
	OUT("get \"a b\"\n", "request method=\"GET\" target=\"GET \\x22a\""),
	OUT("*0\r\n*-1\r\n*1\r\n$4\r\nQUIT\r\n",
	    "request method=\"QUIT\" target=\"QUIT\""),
	IN("+PONG\r\n", "reply"),
	IN("-ERR invalid password\r\n", "reply status=1 error=\"ERR\""),
	IN(":0\r\n", "reply"),
	IN("+OK\r\n", "reply"),
	EOFIN(NULL),
} },
{ "redis: RESP3: maps, sets, attributes, doubles, big numbers, verbatim, "
  "booleans, nulls, streamed strings and aggregates, pushes", "redis",
  CLIENT, STREAM, {
	OUT("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n",
	    "request method=\"HELLO\" target=\"HELLO 3\""),
	IN("%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n",
	   "reply"),
	OUT("*2\r\n$3\r\nGET\r\n$1\r\na\r\n", "request method=\"GET\" "
	    "target=\"GET a\""),
	OUT("*2\r\n$8\r\nSMEMBERS\r\n$1\r\ns\r\n", "request "
	    "method=\"SMEMBERS\" target=\"SMEMBERS s\""),
	OUT("*1\r\n$4\r\nTIME\r\n", "request method=\"TIME\" target=\"TIME\""),
	IN("_\r\n", "reply"),
	IN("~3\r\n,1.5\r\n,-inf\r\n(-3492890328409238509324850943850943825"
	   "024385\r\n", "reply"),
	IN("|1\r\n+ttl\r\n:3600\r\n*2\r\n=8\r\ntxt:abcd\r\n#f\r\n", "reply"),
	OUT("*2\r\n$9\r\nSUBSCRIBE\r\n$2\r\nch\r\n",
	    "request method=\"SUBSCRIBE\" target=\"SUBSCRIBE ch\""),
	OUT("*2\r\n$3\r\nGET\r\n$1\r\nb\r\n", "request method=\"GET\" "
	    "target=\"GET b\""),
	IN(">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", "reply"),
	IN(">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n", "oneway"),
	IN(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nb\r\n", "oneway"),
	IN("$?\r\n;2\r\nab\r\n;1\r\nc\r\n;0\r\n", "reply"),
	OUT("*3\r\n$4\r\nSCAN\r\n$1\r\n0\r\n$5\r\nCOUNT\r\n",
	    "request method=\"SCAN\" target=\"SCAN 0\""),
	OUT("*1\r\n$3\r\nFOO\r\n", "request method=\"FOO\" target=\"FOO\""),
	OUT("*2\r\n$11\r\nUNSUBSCRIBE\r\n$2\r\nch\r\n",
	    "request method=\"UNSUBSCRIBE\" target=\"UNSUBSCRIBE ch\""),
	IN("*?\r\n$1\r\n0\r\n%?\r\n+k\r\n#t\r\n.\r\n~0\r\n.\r\n", "reply"),
	IN("!21\r\nSYNTAX invalid syntax\r\n",
	   "reply status=1 error=\"SYNTAX\""),
	IN(">3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:0\r\n", "reply"),
	/* a list holding "message" is a reply in RESP3 */
	OUT("*4\r\n$6\r\nLRANGE\r\n$1\r\nl\r\n$1\r\n0\r\n$2\r\n-1\r\n",
	    "request method=\"LRANGE\" target=\"LRANGE l\""),
	IN("*3\r\n$7\r\nmessage\r\n$1\r\nx\r\n$1\r\ny\r\n", "reply"),
} },
{ "redis: RESP2 pub/sub (server end): two channels, messages, PING, a "
  "list holding \"message\" before subscribing", "redis", SERVER, STREAM, {
	IN("*4\r\n$6\r\nLRANGE\r\n$1\r\nl\r\n$1\r\n0\r\n$2\r\n-1\r\n",
	   "request method=\"LRANGE\" target=\"LRANGE l\""),
	OUT("*3\r\n$7\r\nmessage\r\n$1\r\nx\r\n$1\r\ny\r\n", "reply"),
	IN("*3\r\n$9\r\nSUBSCRIBE\r\n$1\r\na\r\n$1\r\nb\r\n",
	   "request method=\"SUBSCRIBE\" target=\"SUBSCRIBE a\""),
	OUT("*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n", "reply"),
	OUT("*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n", "oneway"),
	OUT("*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$5\r\nhello\r\n", "oneway"),
	OUT("*4\r\n$8\r\npmessage\r\n$2\r\na*\r\n$2\r\nab\r\n$1\r\nx\r\n",
	    "oneway"),
	IN("*1\r\n$4\r\nPING\r\n", "request method=\"PING\" target=\"PING\""),
	OUT("*3\r\n$7\r\nmessage\r\n$1\r\nb\r\n$2\r\nyo\r\n", "oneway"),
	OUT("*2\r\n$4\r\npong\r\n$0\r\n\r\n", "reply"),
	IN("*1\r\n$11\r\nUNSUBSCRIBE\r\n",
	   "request method=\"UNSUBSCRIBE\" target=\"UNSUBSCRIBE\""),
	OUT("*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n", "reply"),
	OUT("*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:0\r\n", "oneway"),
	IN("*4\r\n$6\r\nLRANGE\r\n$1\r\nl\r\n$1\r\n0\r\n$2\r\n-1\r\n",
	   "request method=\"LRANGE\" target=\"LRANGE l\""),
	OUT("*3\r\n$7\r\nmessage\r\n$1\r\nx\r\n$1\r\ny\r\n", "reply"),
} },
{ "redis: BLPOP answered later, MONITOR lines are oneway", "redis",
  CLIENT, STREAM, {
	OUT("*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n",
	    "request method=\"BLPOP\" target=\"BLPOP q\""),
	IN("*2\r\n$1\r\nq\r\n$1\r\nv\r\n", "reply"),
	OUT("*1\r\n$7\r\nMONITOR\r\n", "request method=\"MONITOR\" "
	    "target=\"MONITOR\""),
	IN("+OK\r\n", "reply"),
	IN("+1700000000.1 [0 127.0.0.1:5] \"GET\" \"k\"\r\n", "oneway"),
	IN("+1700000000.2 [0 127.0.0.1:5] \"SET\" \"k\" \"v\"\r\n", "oneway"),
} },
{ "redis: role from the bytes", "redis", UNKNOWN, STREAM, {
	IN("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "request method=\"GET\" "
	   "target=\"GET k\""),
	OUT("$1\r\nv\r\n", "reply"),
} },
{ "redis: CLIENT REPLY OFF: pairing cannot be followed", "redis", CLIENT,
  STREAM, {
	OUT("*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n",
	    "request method=\"CLIENT\" target=\"CLIENT REPLY\""),
	OUT("*1\r\n$4\r\nPING\r\n", "lost"),
} },
{ "redis: SENTINEL redacted; a replication stream is not followed",
  "redis", CLIENT, STREAM, {
	OUT("*5\r\n$8\r\nSENTINEL\r\n$3\r\nSET\r\n$1\r\nm\r\n"
	    "$9\r\nauth-pass\r\n$6\r\nhunter\r\n",
	    "request method=\"SENTINEL\" target=\"SENTINEL SET\""),
	IN("+OK\r\n", "reply"),
	OUT("*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n",
	    "request method=\"PSYNC\" target=\"PSYNC ?\""),
	IN("+FULLRESYNC 8de1787ba490483314a4d30f1c628bc5025eb761 0\r\n",
	   "reply"),
	IN("$5\r\nREDIS*1\r\n$4\r\nPING\r\n", "lost"),
} },
{ "redis: a type byte RESP does not have", "redis", CLIENT, STREAM, {
	OUT("*1\r\n$4\r\nPING\r\n", "request method=\"PING\" target=\"PING\""),
	IN("@3\r\n", "lost"),
} },
{ "redis: CR without LF", "redis", CLIENT, STREAM, {
	IN("+OK\rx", "lost"),
} },
{ "redis: a client array of integers", "redis", SERVER, STREAM, {
	IN("*1\r\n:1\r\n", "lost"),
} },
{ "redis: a bulk length that is no number", "redis", CLIENT, STREAM, {
	OUT("*1\r\n$4x\r\n", "lost"),
} },
{ "redis: a negative bulk length from a client", "redis", CLIENT, STREAM, {
	OUT("*1\r\n$-1\r\n", "lost"),
} },
{ "redis: a bulk string longer than its length", "redis", CLIENT, STREAM, {
	OUT("*1\r\n$2\r\nabc\r\n", "lost"),
} },
{ "redis: a control byte in an inline command", "redis", CLIENT, STREAM, {
	OUT("GET \x01\r\n", "lost"),
} },
{ "redis: nesting deeper than 40", "redis", CLIENT, STREAM, {
	OUT("*1\r\n$3\r\nGET\r\n", "request method=\"GET\" target=\"GET\""),
	IN("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n"
	   "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n"
	   "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n"
	   "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n"
	   "*1\r\n", "lost"),
} },
{ "redis: a boolean other than t or f", "redis", CLIENT, STREAM, {
	IN("#x\r\n", "lost"),
} },
{ "redis: \".\" outside a streamed aggregate", "redis", CLIENT, STREAM, {
	IN("*1\r\n.\r\n", "lost"),
} },
/* ---------------------------------------------------------------- line */
{ "line: CRLF, a long line cut, a last line ended by eof", "line", CLIENT,
  STREAM, {
	OUT("HELLO\r\n", "request line=\"HELLO\""),
	IN("+OK ready\n", "reply line=\"+OK ready\""),
	OUT(A128 "aa\n", "request flags=trunc line=\"" A128 "\""),
	IN("bye", NULL),
	EOFIN("reply flags=eof line=\"bye\""),
} },
{ "line: datagrams, role from the first one", "line", UNKNOWN, DGRAM, {
	IN("ping\n", "request flags=dgram line=\"ping\""),
	OUT("pong", "reply flags=dgram line=\"pong\""),
} },
/* ------------------------------------------------------------- oneshot */
{ "oneshot: the reply's first byte ends the request; no second one",
  "oneshot", CLIENT, STREAM, {
	OUT("request body", "request flags=eof body_len=\"12\""),
	IN("reply", NULL),
	IN(" text", NULL),
	EOFIN("reply flags=eof body_len=\"10\""),
	OUT("again", "lost"),
} },
/* --------------------------------------------------------------- http2 */
{ "http2: RFC 7541 C.4 (Huffman, dynamic table across requests), "
  "SETTINGS and WINDOW_UPDATE are control messages", "http2", CLIENT,
  STREAM, {
	OUT(H2_PRI H2_SETTINGS, "control"),
	IN(H2_SETTINGS, "control"),
	OUT(H2F("\x11", "\x01", "\x05", "\x01")
	    "\x82\x86\x84\x41\x8c\xf1\xe3\xc2\xe5\xf2\x3a\x6b\xa0\xab\x90"
	    "\xf4\xff", "request witness=1 method=\"GET\" target=\"/\" "
	    "host=\"www.example.com\""),
	OUT(H2F("\x0c", "\x01", "\x05", "\x03")
	    "\x82\x86\x84\xbe\x58\x86\xa8\xeb\x10\x64\x9c\xbf",
	    "request witness=3 method=\"GET\" target=\"/\" "
	    "host=\"www.example.com\""),
	OUT(H2F("\x04", "\x08", "\x00", "\x00") "\x00\x01\x00\x00", "control"),
	OUT(H2F("\x18", "\x01", "\x05", "\x05")
	    "\x82\x87\x85\xbf\x40\x88\x25\xa8\x49\xe9\x5b\xa9\x7d\x7f\x89"
	    "\x25\xa8\x49\xe9\x5b\xb8\xe8\xb4\xbf",
	    "request witness=5 method=\"GET\" target=\"/index.html\" "
	    "host=\"www.example.com\""),
	IN(H2F("\x05", "\x01", "\x04", "\x03") "\x48\x83\x64\x0e\xff",
	   "oneway witness=3"),
	IN(H2F("\x00", "\x00", "\x01", "\x03"), "reply status=307 witness=3"),
	IN(H2F("\x01", "\x01", "\x05", "\x01") "\xbe",
	   "reply status=307 witness=1"),
	IN(H2F("\x01", "\x01", "\x05", "\x05") "\x88",
	   "reply status=200 witness=5"),
	EOFIN(NULL),
} },
{ "http2: interleaved streams, each frame a message of its stream; gRPC "
  "trailers, RST_STREAM, padding, PRIORITY, CONTINUATION (server end)",
  "http2", SERVER, STREAM, {
	IN(H2_PRI H2_SETTINGS, "control"),
	IN(H2F("\x26", "\x01", "\x04", "\x01") "\x83\x86\x04\x0f/pkg.Svc/Method"
	   "\x0f\x10\x10" "application/grpc",
	   "request witness=1 method=\"POST\" target=\"/pkg.Svc/Method\""),
	IN(H2F("\x03", "\x01", "\x05", "\x03") "\x82\x86\x84",
	   "request witness=3 method=\"GET\" target=\"/\""),
	IN(H2F("\x05", "\x00", "\x01", "\x01") "\x00\x00\x00\x00\x00",
	   "oneway witness=1 params=\"-\""),
	OUT(H2_SETTINGS, "control"),
	OUT(H2F("\x01", "\x01", "\x05", "\x03") "\x88",
	    "reply status=200 witness=3"),
	OUT(H2F("\x14", "\x01", "\x04", "\x01") "\x88\x0f\x10\x10"
	    "application/grpc", "oneway witness=1"),
	OUT(H2F("\x05", "\x00", "\x00", "\x01") "\x00\x00\x00\x00\x00",
	    "oneway witness=1"),
	OUT(H2F("\x0f", "\x01", "\x05", "\x01") "\x00\x0bgrpc-status\x01" "5",
	    "reply status=200 witness=1 tag=\"grpc-status 5\" "
	    "error=\"grpc-status 5\""),
	IN(H2F("\x08", "\x06", "\x00", "\x00") "12345678", "control"),
	IN(H2F("\x0a", "\x01", "\x29", "\x07") "\x02\x00\x00\x00\x00\x10"
	   "\x82\x86\x00\x00", "oneway witness=7"),
	IN(H2F("\x01", "\x09", "\x04", "\x07") "\x84",
	   "request witness=7 method=\"GET\" target=\"/\""),
	IN(H2F("\x01", "\x01", "\x04", "\x09") "\x83",
	   "request witness=9 method=\"POST\""),
	IN(H2F("\x04", "\x03", "\x00", "\x09") "\x00\x00\x00\x08",
	   "oneway witness=9 error=\"RST_STREAM 8\""),
	OUT(H2F("\x04", "\x03", "\x00", "\x07") "\x00\x00\x00\x02",
	    "reply witness=7 error=\"RST_STREAM 2\""),
	OUT(H2F("\x04", "\x03", "\x00", "\x07") "\x00\x00\x00\x02", "control"),
	OUT(H2F("\x08", "\x07", "\x00", "\x00") "\x00\x00\x00\x07\x00\x00\x00"
	    "\x00", "control"),
	EOFIN(NULL),
} },
{ "http2: a gRPC request's values (a string and a varint), and none when "
  "a field is binary, the message compressed, or a second one follows",
  "http2", SERVER, STREAM, {
	IN(H2_PRI H2_SETTINGS, "control"),
	IN(H2F("\x26", "\x01", "\x04", "\x01") "\x83\x86\x04\x0f/pkg.Svc/Method"
	   "\x0f\x10\x10" "application/grpc",
	   "request witness=1 method=\"POST\" target=\"/pkg.Svc/Method\""),
	IN(H2F("\x08", "\x00", "\x00", "\x01") "\x00\x00\x00\x00\x0a\x0a\x05q",
	   "oneway witness=1"),
	IN(H2F("\x07", "\x00", "\x01", "\x01") "12x7\x10\x92\x21",
	   "oneway witness=1 params=\"0:5259061e96f15bb6 1:317ca9d88928e945\""),
	IN(H2F("\x26", "\x01", "\x04", "\x03") "\x83\x86\x04\x0f/pkg.Svc/Method"
	   "\x0f\x10\x10" "application/grpc",
	   "request witness=3 method=\"POST\" target=\"/pkg.Svc/Method\""),
	IN(H2F("\x09", "\x00", "\x01", "\x03") "\x00\x00\x00\x00\x04\x1a\x02\x08\x01",
	   "oneway witness=3"),
	IN(H2F("\x26", "\x01", "\x04", "\x05") "\x83\x86\x04\x0f/pkg.Svc/Method"
	   "\x0f\x10\x10" "application/grpc",
	   "request witness=5 method=\"POST\" target=\"/pkg.Svc/Method\""),
	IN(H2F("\x0c", "\x00", "\x01", "\x05") "\x01\x00\x00\x00\x07\x0a\x05q12x7",
	   "oneway witness=5"),
	IN(H2F("\x26", "\x01", "\x04", "\x07") "\x83\x86\x04\x0f/pkg.Svc/Method"
	   "\x0f\x10\x10" "application/grpc",
	   "request witness=7 method=\"POST\" target=\"/pkg.Svc/Method\""),
	IN(H2F("\x0e", "\x00", "\x01", "\x07") "\x00\x00\x00\x00\x02\x10\x01"
	   "\x00\x00\x00\x00\x02\x10\x02",
	   "oneway witness=7"),
} },
{ "http2: a query string and a size update; an index past the table "
  "flags the message", "http2", SERVER, STREAM, {
	IN(H2_PRI, NULL),
	IN(H2F("\x0d", "\x01", "\x05", "\x01") "\x20\x82\x86\x04\x08"
	   "/a?b=c&d",
	   "request witness=1 method=\"GET\" target=\"/a?b=c&d\""),
	IN(H2F("\x02", "\x01", "\x05", "\x03") "\x82\xbe",
	   "request witness=3 flags=trunc method=\"GET\""),
	OUT(H2F("\x01", "\x01", "\x05", "\x01") "\x8d",
	    "reply status=404 witness=1"),
} },
{ "http2: RFC 7541 C.6 (Huffman responses, a 256-byte table after a size update: evictions)", "http2", CLIENT, STREAM, {
	OUT(H2_PRI H2F("\x03", "\x01", "\x05", "\x01") "\x82\x86\x84",
	    "request witness=1 method=\"GET\" target=\"/\""),
	OUT(H2F("\x03", "\x01", "\x05", "\x03") "\x82\x86\x84",
	    "request witness=3 method=\"GET\" target=\"/\""),
	OUT(H2F("\x03", "\x01", "\x05", "\x05") "\x82\x86\x84",
	    "request witness=5 method=\"GET\" target=\"/\""),
	IN(H2F("\x39", "\x01", "\x05", "\x01")
	   "\x3f\xe1\x01\x48\x82\x64\x02\x58\x85\xae\xc3\x77\x1a\x4b"
	   "\x61\x96\xd0\x7a\xbe\x94\x10\x54\xd4\x44\xa8\x20\x05\x95"
	   "\x04\x0b\x81\x66\xe0\x82\xa6\x2d\x1b\xff\x6e\x91\x9d\x29"
	   "\xad\x17\x18\x63\xc7\x8f\x0b\x97\xc8\xe9\xae\x82\xae\x43"
	   "\xd3",
	   "reply status=302 witness=1"),
	IN(H2F("\x08", "\x01", "\x05", "\x03")
	   "\x48\x83\x64\x0e\xff\xc1\xc0\xbf",
	   "reply status=307 witness=3"),
	IN(H2F("\x4f", "\x01", "\x05", "\x05")
	   "\x88\xc1\x61\x96\xd0\x7a\xbe\x94\x10\x54\xd4\x44\xa8\x20"
	   "\x05\x95\x04\x0b\x81\x66\xe0\x84\xa6\x2d\x1b\xff\xc0\x5a"
	   "\x83\x9b\xd9\xab\x77\xad\x94\xe7\x82\x1d\xd7\xf2\xe6\xc7"
	   "\xb3\x35\xdf\xdf\xcd\x5b\x39\x60\xd5\xaf\x27\x08\x7f\x36"
	   "\x72\xc1\xab\x27\x0f\xb5\x29\x1f\x95\x87\x31\x60\x65\xc0"
	   "\x03\xed\x4e\xe5\xb1\x06\x3d\x50\x07",
	   "reply status=200 witness=5"),
} },
{ "http2: RFC 7541 C.5 (the same responses without Huffman coding)", "http2", CLIENT, STREAM, {
	OUT(H2_PRI H2F("\x03", "\x01", "\x05", "\x01") "\x82\x86\x84",
	    "request witness=1 method=\"GET\" target=\"/\""),
	OUT(H2F("\x03", "\x01", "\x05", "\x03") "\x82\x86\x84",
	    "request witness=3 method=\"GET\" target=\"/\""),
	OUT(H2F("\x03", "\x01", "\x05", "\x05") "\x82\x86\x84",
	    "request witness=5 method=\"GET\" target=\"/\""),
	IN(H2F("\x49", "\x01", "\x05", "\x01")
	   "\x3f\xe1\x01\x48\x03\x33\x30\x32\x58\x07\x70\x72\x69\x76"
	   "\x61\x74\x65\x61\x1d\x4d\x6f\x6e\x2c\x20\x32\x31\x20\x4f"
	   "\x63\x74\x20\x32\x30\x31\x33\x20\x32\x30\x3a\x31\x33\x3a"
	   "\x32\x31\x20\x47\x4d\x54\x6e\x17\x68\x74\x74\x70\x73\x3a"
	   "\x2f\x2f\x77\x77\x77\x2e\x65\x78\x61\x6d\x70\x6c\x65\x2e"
	   "\x63\x6f\x6d",
	   "reply status=302 witness=1"),
	IN(H2F("\x08", "\x01", "\x05", "\x03")
	   "\x48\x03\x33\x30\x37\xc1\xc0\xbf",
	   "reply status=307 witness=3"),
	IN(H2F("\x62", "\x01", "\x05", "\x05")
	   "\x88\xc1\x61\x1d\x4d\x6f\x6e\x2c\x20\x32\x31\x20\x4f\x63"
	   "\x74\x20\x32\x30\x31\x33\x20\x32\x30\x3a\x31\x33\x3a\x32"
	   "\x32\x20\x47\x4d\x54\xc0\x5a\x04\x67\x7a\x69\x70\x77\x38"
	   "\x66\x6f\x6f\x3d\x41\x53\x44\x4a\x4b\x48\x51\x4b\x42\x5a"
	   "\x58\x4f\x51\x57\x45\x4f\x50\x49\x55\x41\x58\x51\x57\x45"
	   "\x4f\x49\x55\x3b\x20\x6d\x61\x78\x2d\x61\x67\x65\x3d\x33"
	   "\x36\x30\x30\x3b\x20\x76\x65\x72\x73\x69\x6f\x6e\x3d\x31",
	   "reply status=200 witness=5"),
} },
{ "http2: a :path kept from the dynamic table, gone after a size update "
  "to 0", "http2", SERVER, STREAM, {
	IN(H2_PRI, NULL),
	IN(H2F("\x06", "\x01", "\x05", "\x01") "\x82\x44\x02/x\x86",
	   "request witness=1 method=\"GET\" target=\"/x\""),
	IN(H2F("\x03", "\x01", "\x05", "\x03") "\x82\xbe\x86",
	   "request witness=3 method=\"GET\" target=\"/x\""),
	IN(H2F("\x06", "\x01", "\x05", "\x05") "\x20\x3f\xe1\x1f\x82\xbe",
	   "request witness=5 flags=trunc method=\"GET\""),
} },
{ "http: Upgrade: h2c answered by 101 hands the channel to http2 "
  "(stream 1 answers the HTTP/1.1 request)", "http", CLIENT, STREAM, {
	OUT("GET /up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings"
	    "\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n",
	    "request method=\"GET\" target=\"/up\" host=\"x\" body_len=\"0\""),
	IN("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
	   "Upgrade: h2c\r\n\r\n", "oneway status=101 body_len=\"0\""),
	IN(H2_SETTINGS, "control"),
	OUT(H2_PRI H2_SETTINGS, "control"),
	IN(H2F("\x01", "\x01", "\x04", "\x01") "\x88", "oneway witness=1"),
	IN(H2F("\x02", "\x00", "\x01", "\x01") "ok", "reply status=200 witness=1"),
	OUT(H2F("\x03", "\x01", "\x05", "\x03") "\x82\x86\x84",
	    "request witness=3 method=\"GET\" target=\"/\""),
} },
{ "http: a 101 to another upgrade is a tunnel", "http", CLIENT, STREAM, {
	OUT("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n",
	    "request method=\"GET\" target=\"/ws\" host=\"x\" body_len=\"0\""),
	IN("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
	   "reply status=101 body_len=\"0\""),
	IN("\x81\x02hi", "lost"),
} },
{ "http2: no preface", "http2", SERVER, STREAM, {
	IN("PRI * HTTP/1.1\r\n", "lost"),
} },
{ "http2: CONTINUATION continuing nothing", "http2", SERVER, STREAM, {
	IN(H2_PRI H2F("\x01", "\x09", "\x04", "\x01") "\x82", "lost"),
} },
{ "http2: DATA on stream 0", "http2", CLIENT, STREAM, {
	OUT(H2_PRI, NULL),
	IN(H2F("\x00", "\x00", "\x01", "\x00"), "lost"),
} },
{ "http2: padding longer than the frame", "http2", CLIENT, STREAM, {
	OUT(H2_PRI, NULL),
	IN(H2F("\x02", "\x00", "\x09", "\x01") "\x05\x00", "lost"),
} },
{ "oneshot: datagrams", "oneshot", SERVER, DGRAM, {
	IN("q", "request flags=dgram body_len=\"1\""),
	OUT("r", "reply flags=dgram body_len=\"1\""),
	IN("q2", "lost"),
} },
};

/*
 * Build the capture of a synthetic case and the log it must give.  The
 * DNS TCP case's expectations depend on the witness, so it states none on
 * its segments; its log is checked in test_dns_tcp_order.
 */
static void build_case(const struct pcase *pc, struct cap *c, struct sbuf *w)
{
	static const char *const dn[2] = { "in", "out" };
	size_t off[2] = { 0, 0 }, start[2] = { 0, 0 }, n = 0;
	uint8_t *buf;
	size_t len = 0;
	int lost = 0;

	for (n = 0; n < 40 && (pc->seg[n].data || pc->seg[n].type); n++)
		len += 5 + pc->seg[n].len;
	buf = malloc(len + 200);
	ck_assert(buf);
	len = (size_t)sprintf((char *)buf, "BPCAP1\nproto %s\nrole %s\n"
			      "transport %s\n\n", pc->proto,
			      pc->role == CLIENT ? "client" :
			      pc->role == SERVER ? "server" : "unknown",
			      pc->transport == DGRAM ? "dgram" : "stream");
	for (size_t i = 0; i < n; i++) {
		const struct seg *s = &pc->seg[i];
		int d = s->type & 1;
		if (s->type < CAP_EOF_IN && !s->len)
			continue;           /* an empty marker segment */
		buf[len] = s->type;
		buf[len + 1] = (uint8_t)(s->len >> 24);
		buf[len + 2] = (uint8_t)(s->len >> 16);
		buf[len + 3] = (uint8_t)(s->len >> 8);
		buf[len + 4] = (uint8_t)s->len;
		memcpy(buf + len + 5, s->data, s->len);
		len += 5 + s->len;
		if (s->type < CAP_EOF_IN)
			off[d] += pc->transport == DGRAM ? 1 : s->len;
		if (!s->want || lost)
			continue;
		if (strcmp(s->want, "lost") == 0) {
			sb_printf(w, "%s lost\n", dn[d]);
			lost = 1;
			continue;
		}
		const char *sp = strchr(s->want, ' ');
		size_t kl = sp ? (size_t)(sp - s->want) : strlen(s->want);
		size_t o = pc->transport == DGRAM ? off[d] - 1 : start[d];
		size_t l = pc->transport == DGRAM ? s->len : off[d] - start[d];
		sb_printf(w, "%s %.*s off=%zu len=%zu%s\n", dn[d], (int)kl,
			  s->want, o, l, sp ? sp : "");
		start[d] = off[d];
	}
	char err[256];
	ck_assert_msg(cap_parse(buf, len, c, err, sizeof err) == 0, "%s: %s",
		      pc->name, err);
	if (!w->s)
		sb_printf(w, "%s", "");
}

START_TEST(test_case)
{
	const struct pcase *pc = &cases[_i];
	struct cap c;
	struct sbuf want = { 0 };
	const struct bt_proto_ops *o = bt_proto_by_name(pc->proto);
	ck_assert_msg(o != NULL, "no processor %s", pc->proto);
	build_case(pc, &c, &want);
	if (strstr(pc->name, "answers in the other order")) {
		sb_free(&want);
		sb_printf(&want, "out request off=0 len=21 witness=1 "
			  "dns_name=\"a\" dns_type=\"A\"\n"
			  "out request off=21 len=21 witness=2 "
			  "dns_name=\"b\" dns_type=\"AAAA\"\n"
			  "in reply off=0 len=33 witness=2 "
			  "dns_name=\"b\" dns_type=\"AAAA\"\n"
			  "in reply off=33 len=21 status=2 witness=1 "
			  "dns_name=\"a\" dns_type=\"A\" error=\"SERVFAIL\"\n"
			  "in lost\n");
	}
	replay_all(pc->name, o, &c, want.s);
	sb_free(&want);
	cap_free(&c);
}
END_TEST

/* ---- limits -------------------------------------------------------------- */

/* Feed P in one direction of a fresh state; return the log. */
static char *run1(const char *proto, int role, int dir, const char *p,
		  size_t n)
{
	const struct bt_proto_ops *o = bt_proto_by_name(proto);
	uint8_t t = (uint8_t)dir;
	uint32_t l = (uint32_t)n;
	const uint8_t *d = (const uint8_t *)p;
	struct sbuf out = { 0 };
	char err[256];
	ck_assert(o);
	ck_assert_msg(replay_chunks(o, role, BT_TR_STREAM, 1, &t, &l, &d, 0,
				    &out, err, sizeof err) == 0, "%s", err);
	sb_printf(&out, "%s", "");
	return out.s;
}

START_TEST(test_limits)
{
	size_t big = 70000;
	char *b = malloc(big + 4096);
	char *r;
	ck_assert(b);

	/* an HTTP header line of 40 KiB, a head of 70 KB */
	int k = sprintf(b, "GET / HTTP/1.1\r\nX: ");
	memset(b + k, 'x', 40000);
	r = run1("http", SERVER, BT_DIR_IN, b, (size_t)k + 40000);
	ck_assert_str_eq(r, "in lost\n");
	free(r);
	k = sprintf(b, "GET / HTTP/1.1\r\n");
	while ((size_t)k < big)
		k += sprintf(b + k, "X-Filler: %0990d\r\n", 0);
	r = run1("http", SERVER, BT_DIR_IN, b, (size_t)k);
	ck_assert_str_eq(r, "in lost\n");
	free(r);
	/* the same head just under the limit is fine */
	k = sprintf(b, "GET / HTTP/1.1\r\n");
	while (k < 60000)
		k += sprintf(b + k, "X-Filler: %0990d\r\n", 0);
	k += sprintf(b + k, "\r\n");
	r = run1("http", SERVER, BT_DIR_IN, b, (size_t)k);
	char want[128];
	snprintf(want, sizeof want, "in request off=0 len=%d method=\"GET\" "
		 "target=\"/\" body_len=\"0\"\n", k);
	ck_assert_str_eq(r, want);
	free(r);
	/* a 2000-byte target is kept cut to 768 bytes */
	k = sprintf(b, "GET /");
	memset(b + k, 't', 1999);
	k += 1999;
	k += sprintf(b + k, " HTTP/1.1\r\n\r\n");
	r = run1("http", SERVER, BT_DIR_IN, b, (size_t)k);
	ck_assert_msg(strstr(r, "flags=trunc") && strlen(r) < 900, "%s", r);
	free(r);
	/* a chunk-size line of 5000 bytes */
	k = sprintf(b, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1");
	memset(b + k, ' ', 5000);
	r = run1("http", CLIENT, BT_DIR_IN, b, (size_t)k + 5000);
	ck_assert_str_eq(r, "in lost\n");
	free(r);
	/* 17 pending HEAD requests */
	k = 0;
	for (int i = 0; i < 17; i++)
		k += sprintf(b + k, "HEAD / HTTP/1.1\r\n\r\n");
	r = run1("http", CLIENT, BT_DIR_OUT, b, (size_t)k);
	ck_assert_msg(strstr(r, "out lost\n") && !strstr(r, "off=304 "), "%s",
		      r);
	free(r);
	/* a line of 65537 bytes */
	memset(b, 'l', 65537);
	b[65536] = '\n';
	r = run1("line", CLIENT, BT_DIR_OUT, b, 65537);
	ck_assert_str_eq(r, "out lost\n");
	free(r);
	r = run1("line", CLIENT, BT_DIR_OUT, b + 1, 65536);
	ck_assert_msg(strncmp(r, "out request off=0 len=65536 flags=trunc",
			      39) == 0, "%s", r);
	free(r);
	/* a startup packet over 10000 bytes */
	memcpy(b, "\x00\x00\x27\x11\x00\x03\x00\x00", 8);
	r = run1("postgresql", CLIENT, BT_DIR_OUT, b, 8);
	ck_assert_str_eq(r, "out lost\n");
	free(r);
	/* a Redis inline command of 64 KiB + 1 (the server's limit), and
	   one just under it */
	memset(b, 'x', 65537);
	memcpy(b, "GET ", 4);
	b[65537] = '\n';
	r = run1("redis", CLIENT, BT_DIR_OUT, b, 65538);
	ck_assert_str_eq(r, "out lost\n");
	free(r);
	r = run1("redis", CLIENT, BT_DIR_OUT, b + 2, 65536);
	ck_assert_msg(strncmp(r, "out request off=0 len=65536 flags=trunc "
			      "method=\"T\"", 48) == 0, "%s", r);
	free(r);
	/* a Redis bulk string over 1 TiB, an array over 2^32 elements */
	r = run1("redis", CLIENT, BT_DIR_OUT, "*1\r\n$1099511627777\r\n", 22);
	ck_assert_str_eq(r, "out lost\n");
	free(r);
	r = run1("redis", CLIENT, BT_DIR_IN, "*4294967297\r\n", 14);
	ck_assert_str_eq(r, "in lost\n");
	free(r);
	free(b);
}
END_TEST


/*
 * MySQL packets of 16 MiB and more: a COM_QUERY of 0xffffff + 5 bytes in
 * two packets, and a reply whose rows are a row of 0xffffff + 100 bytes
 * starting with 0xfe (an 8-byte length, not an EOF) and a row of exactly
 * 0xffffff bytes (an empty packet after it).  Too big for every split
 * point: whole, as recorded, byte by byte and in random chunks.
 */
START_TEST(test_mysql_split)
{
	const size_t big = 0xffffff;
	size_t cap = 4 * big + 4096, len = 0, out0 = 0, in0 = 0;
	uint8_t *b = malloc(cap), *rec;
	char want[2048], err[512], xs[1024];
	struct cap c;
	ck_assert(b);
	memset(xs, 'x', sizeof xs);
	len = (size_t)sprintf((char *)b, "BPCAP1\nproto mysql\nrole client\n"
			      "transport stream\n\n");
	/* a record: type, length, then the bytes filled in by the caller */
#define MY_REC(t, n) (b[len] = (t), b[len + 1] = (uint8_t)((n) >> 24), \
	b[len + 2] = (uint8_t)((n) >> 16), b[len + 3] = (uint8_t)((n) >> 8), \
	b[len + 4] = (uint8_t)(n), rec = b + len + 5, len += 5 + (n), rec)
	static const char greet[] = MY_GREET("\x00"), hsr[] = MY_HSR("\x00"),
			  ok[] = MY_OK("\x02");
	memcpy(MY_REC(CAP_IN, sizeof greet - 1), greet, sizeof greet - 1);
	memcpy(MY_REC(CAP_OUT, sizeof hsr - 1), hsr, sizeof hsr - 1);
	memcpy(MY_REC(CAP_IN, sizeof ok - 1), ok, sizeof ok - 1);
	in0 = sizeof greet - 1 + sizeof ok - 1;
	out0 = sizeof hsr - 1;
	/* COM_QUERY "SELECT 'xxx...'" in two packets */
	rec = MY_REC(CAP_OUT, 4 + big + 4 + 5);
	memcpy(rec, "\xff\xff\xff\x00\x03SELECT '", 13);
	memset(rec + 13, 'x', 4 + big - 13);
	memcpy(rec + 4 + big, "\x05\x00\x00\x01" "xxxx'", 9);
	/* column count, definition, EOF */
	static const char head[] = "\x01\x00\x00\x01\x01" MY_DEF("\x02")
		MY_EOF("\x03", "\x02");
	size_t rl = sizeof head - 1 + 4 + big + 4 + 100 + 4 + big + 4 + 9;
	rec = MY_REC(CAP_IN, rl);
	memcpy(rec, head, sizeof head - 1);
	rec += sizeof head - 1;
	memcpy(rec, "\xff\xff\xff\x04\xfe", 5);       /* 8-byte length */
	memset(rec + 5, 'r', big - 1);
	memcpy(rec + 4 + big, "\x64\x00\x00\x05", 4);
	memset(rec + 8 + big, 'r', 100);
	rec += 8 + big + 100;
	memcpy(rec, "\xff\xff\xff\x06\xfd", 5);       /* 3-byte length */
	memset(rec + 5, 's', big - 1);
	memcpy(rec + 4 + big, "\x00\x00\x00\x07", 4);
	memcpy(rec + 8 + big, MY_EOF("\x08", "\x02"), 9);
	ck_assert(len <= cap);
	ck_assert_msg(cap_parse(b, len, &c, err, sizeof err) == 0, "%s", err);
	snprintf(want, sizeof want,
		 "in control off=0 len=77 info=\"8.0.1\"\n"
		 "out control off=0 len=90 user=\"alice\" database=\"shop\"\n"
		 "in control off=77 len=11\n"
		 "out request off=%zu len=%zu flags=trunc method=\"query\" "
		 "sql=\"SELECT '%.*s\"\n"
		 "in reply off=%zu len=%zu\n", out0, 4 + big + 9,
		 1024 - 8, xs,
		 in0, rl);
	const int modes[] = { RM_RECORDS, RM_WHOLE, RM_BYTES, RM_RANDOM };
	for (unsigned i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		struct sbuf out = { 0 };
		int r = replay(bt_proto_by_name("mysql"), &c, modes[i], 3,
			       &out, err, sizeof err);
		ck_assert_msg(r == 0, "%s: %s", replay_mode_name(modes[i]), err);
		ck_assert_msg(out.len == strlen(want) &&
			      memcmp(out.s, want, out.len) == 0,
			      "%s: log differs:\n--- got\n%.*s--- want\n%s",
			      replay_mode_name(modes[i]), (int)out.len,
			      out.s ? out.s : "", want);
		sb_free(&out);
	}
#undef MY_REC
	cap_free(&c);          /* and B, which it holds */
}
END_TEST

/* ---- garbage ----------------------------------------------------------- */

START_TEST(test_garbage)
{
	const struct bt_proto_ops *o = bt_protocols[_i];
	uint64_t rnd = 88172645463325252u;
	uint8_t buf[4096];
	char err[256];
	if (!o)
		return;
	for (int round = 0; round < 300; round++) {
		uint8_t type[16];
		uint32_t len[16];
		const uint8_t *data[16];
		size_t nchunk = 1 + round % 16, used = 0;
		for (size_t i = 0; i < sizeof buf; i++) {
			rnd ^= rnd << 13; rnd ^= rnd >> 7; rnd ^= rnd << 17;
			/* sometimes mostly printable, sometimes binary */
			buf[i] = round & 1 ? (uint8_t)rnd :
				 (uint8_t)(" \r\nGETHP/1.0:0123abcQ\x00\x01"
					   [rnd % 22]);
		}
		for (size_t i = 0; i < nchunk; i++) {
			rnd ^= rnd << 13; rnd ^= rnd >> 7; rnd ^= rnd << 17;
			type[i] = (uint8_t)(rnd % 7 == 0 ? 2 + (rnd >> 8) % 2 :
					    (rnd >> 8) % 2);
			len[i] = type[i] >= 2 ? 0 :
				 (uint32_t)(1 + (rnd >> 16) % 256);
			if (used + len[i] > sizeof buf)
				len[i] = 1;
			data[i] = buf + used;
			used += len[i];
		}
		for (int role = 0; role < 3; role++)
			for (int tr = 0; tr < 2; tr++) {
				struct sbuf out = { 0 };
				int r = replay_chunks(o, role, tr, nchunk, type,
						      len, data, round & 2, &out,
						      err, sizeof err);
				ck_assert_msg(r == 0, "%s round %d: %s",
					      o->name, round, err);
				sb_free(&out);
			}
	}
}
END_TEST

/* ---- sniffing ------------------------------------------------------------ */

START_TEST(test_sniff)
{
	static const struct { const char *p; size_t n; const char *want; }
	t[] = {
		{ "GET / HTTP/1.1\r\n", 16, "http" },
		{ "GE", 2, "maybe" },
		{ "HTTP/1.1 200 OK\r\n", 17, "http" },
		{ "PROPFIND /x HTTP/1.1\r\n", 22, "http" },
		{ "GETX / HTTP/1.1", 15, NULL },
		{ "\x00\x00\x00\x08\x04\xd2\x16\x2f", 8, "postgresql" },
		{ "\x00\x00\x00\x52\x00\x03\x00\x00user", 12, "postgresql" },
		{ "\x00\x00\x00", 3, "maybe" },
		{ "R\x00\x00\x00\x08\x00\x00\x00\x00", 9, "postgresql" },
		{ "\x01\x01\x00\x01\x00\x08\x00\x00\x00\x01", 10, "fastcgi" },
		{ "\x01\x09\x00\x00\x00\x11\x07\x00", 8, "fastcgi" },
		{ "\x01\x01\x00", 3, "maybe" },
		{ "\x12\x34\x01\x20\x00\x01\x00\x00\x00\x00\x00\x01"
		  "\x04test\x00\x00\x01\x00\x01", 22, "dns" },
		{ "\x00\x13\x00\x01\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
		  "\x01" "a\x00\x00\x01\x00\x01", 21, "dns" },
		{ "SSH-2.0-OpenSSH_9.2\r\n", 21, NULL },
		{ "\x16\x03\x01\x02\x00", 5, NULL },
		{ "+OK\r\n", 5, NULL },
		{ "*1\r\n$4\r\nPING\r\n", 14, "redis" },
		{ "*12\r\n$", 6, "redis" },
		{ "*3\r", 3, "maybe" },
		{ "*", 1, "maybe" },
		{ "*0\r\n$", 5, NULL },
		{ "*1\r\n:1\r\n", 8, NULL },
		{ "*123456789\r\n$", 14, NULL },
		{ "\x49\x00\x00\x00\x0a" "8.0.1\x00\x01\x00", 13, "mysql" },
		{ "\x49\x00\x00\x00\x0a" "10.1", 9, "maybe" },
		{ "\x49\x00\x00\x00\x0a" "x.0\x00", 9, NULL },
		{ "\x49\x00\x00\x01\x0a" "8.0\x00", 9, NULL },
	};
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		int maybe;
		const struct bt_proto_ops *o = bt_proto_sniff(
			BT_DIR_IN, BT_ROLE_SERVER, (const uint8_t *)t[i].p,
			t[i].n, &maybe);
		const char *got = o ? o->name : maybe ? "maybe" : NULL;
		ck_assert_msg((!got && !t[i].want) ||
			      (got && t[i].want && !strcmp(got, t[i].want)),
			      "sniff case %u: got %s, want %s", i,
			      got ? got : "none", t[i].want ? t[i].want : "none");
	}
	/* a TLS handshake record is no processor's, but recognised as TLS
	   (the shim's PROTO how 5: tls-in-program) */
	static const struct { const char *p; size_t n; int tls; } l[] = {
		{ "\x16\x03\x01\x02\x00\x01", 6, 1 },  /* ClientHello */
		{ "\x16\x03\x03\x00\x7a\x02", 6, 1 },  /* ServerHello */
		{ "\x16\x03\x00", 3, 1 },              /* SSL 3.0 */
		{ "\x16\x03\x05\x00", 4, 0 },
		{ "\x16\x03", 2, 0 },                   /* too short */
		{ "\x17\x03\x03\x00\x20", 5, 0 },      /* application data */
		{ "\x16\x02\x01", 3, 0 },
		{ "GET / HTTP/1.1\r\n", 16, 0 },
	};
	for (unsigned i = 0; i < sizeof l / sizeof l[0]; i++)
		ck_assert_msg(bt_proto_looks_tls((const uint8_t *)l[i].p,
						 l[i].n) == l[i].tls,
			      "tls case %u", i);
	/* every processor's own captures are recognised from their first
	   bytes (datagram protocols: the first datagram) */
	for (int i = 0; i < ncaps; i++) {
		char path[1024], err[512];
		struct cap c;
		snprintf(path, sizeof path, "%s/captures/%s.cap", testdir(),
			 cap_names[i]);
		ck_assert(cap_load(path, &c, err, sizeof err) == 0);
		const struct bt_proto_ops *o = bt_proto_by_name(c.proto);
		if (o->sniff) {
			/* the first bytes of the first direction, as far as
			   one read of libbtrace's could see them */
			uint8_t first[512];
			size_t r = 0, n = 0;
			while (r < c.nrec && c.rec[r].type >= CAP_EOF_IN)
				r++;
			int dir = c.rec[r].type;
			for (; r < c.nrec && c.rec[r].type == dir &&
			     n < sizeof first; r++) {
				size_t k = c.rec[r].len < sizeof first - n ?
					   c.rec[r].len : sizeof first - n;
				memcpy(first + n, c.rec[r].data, k);
				n += k;
				if (c.transport == BT_TR_DGRAM)
					break;
			}
			int maybe;
			const struct bt_proto_ops *s = bt_proto_sniff(
				dir, c.role, first, n, &maybe);
			ck_assert_msg(s == o, "%s: first bytes sniffed as %s",
				      cap_names[i], s ? s->name : "none");
		}
		cap_free(&c);
	}
}
END_TEST

/* ---- registry and default rules ----------------------------------------- */

START_TEST(test_registry)
{
	const char *names[] = { "line", "oneshot", "http", "fastcgi",
				"postgresql", "dns", "redis", "mysql" };
	for (unsigned i = 0; i < 8; i++) {
		const struct bt_proto_ops *o = bt_proto_by_name(names[i]);
		ck_assert_msg(o, "no processor %s", names[i]);
		ck_assert_uint_eq(o->id, i + 1);
		ck_assert_ptr_eq(bt_protocols[o->id], o);
		ck_assert_msg(o->state_size > 0 && o->state_size <= 8192,
			      "%s: state_size %u", o->name, o->state_size);
		ck_assert(o->init && o->fini && o->feed);
	}
	ck_assert_ptr_null(bt_protocols[BT_PROTO_NONE]);
	ck_assert_ptr_null(bt_proto_by_name("gopher"));
}
END_TEST

START_TEST(test_default_rules)
{
	char *text = strdup(bt_default_rules), *save = NULL;
	int rules = 0, http80 = 0, pg = 0, dns = 0, fcgi = 0, redis = 0, my = 0;
	ck_assert(text);
	for (char *l = strtok_r(text, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		char proto[32], kind[16], what[256];
		if (l[0] == '#')
			continue;
		ck_assert_msg(sscanf(l, "%31s %15s %255s", proto, kind, what) == 3,
			      "rule '%s': want PROTOCOL KIND VALUE", l);
		ck_assert_msg(bt_proto_by_name(proto), "rule '%s': no processor",
			      l);
		ck_assert_msg(!strcmp(kind, "port") || !strcmp(kind, "unix") ||
			      !strcmp(kind, "exe"), "rule '%s': kind", l);
		if (!strcmp(kind, "port")) {
			for (char *p = what; *p;) {
				char *e;
				long a = strtol(p, &e, 10), b = a;
				if (*e == '-')
					b = strtol(e + 1, &e, 10);
				ck_assert_msg(a > 0 && b >= a && b < 65536 &&
					      (*e == ',' || !*e), "rule '%s'", l);
				if (!strcmp(proto, "http") && a <= 80 && b >= 80)
					http80 = 1;
				if (!strcmp(proto, "http") && a <= 443 &&
				    b >= 443)
					ck_abort_msg("443 is TLS, not http");
				pg |= !strcmp(proto, "postgresql") && a == 5432;
				dns |= !strcmp(proto, "dns") && a == 53;
				fcgi |= !strcmp(proto, "fastcgi") && a == 9000;
				redis |= !strcmp(proto, "redis") && a == 6379;
				my |= !strcmp(proto, "mysql") && a == 3306;
				p = *e ? e + 1 : e;
			}
		}
		rules++;
	}
	ck_assert(rules >= 5 && http80 && pg && dns && fcgi && redis && my);
	free(text);
}
END_TEST

static Suite *proto_suite(void)
{
	Suite *s = suite_create("proto");
	TCase *tc = tcase_create("captures");
	scan_captures();
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_captures_found);
	tcase_add_loop_test(tc, test_capture, 0, ncaps);
	tcase_add_loop_test(tc, test_capture_mutated, 0, ncaps);
	suite_add_tcase(s, tc);
	tc = tcase_create("synthetic");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_case, 0,
			    (int)(sizeof cases / sizeof cases[0]));
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_mysql_split);
	tcase_add_loop_test(tc, test_garbage, 1, BT_PROTO_MAX);
	suite_add_tcase(s, tc);
	tc = tcase_create("selection");
	tcase_add_test(tc, test_sniff);
	tcase_add_test(tc, test_registry);
	tcase_add_test(tc, test_default_rules);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(proto_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	for (int i = 0; i < ncaps; i++)
		free(cap_names[i]);
	return failed ? 1 : 0;
}
