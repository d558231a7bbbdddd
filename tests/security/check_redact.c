/*
 * check_redact.c - libbtrace's redaction rules (libbtrace/redact.c,
 * docs/security.md), table-driven: SQL text and URL targets with and
 * without the options, command lines, values cut short by a processor's limit, the
 * output never longer than the input, BTRACE_REDACT parsing, and a whole
 * message through bt_redact_attrs (only the attributes that change move).
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "bt.h"

/* Runs before the shim's constructor (priority 200): these tests need
 * the rules only, not a tracer. */
__attribute__((constructor(150))) static void test_env(void)
{
	setenv("BTRACE_DISABLE", "1", 1);
}

#define LIT BT_RD_SQL_LITERALS
#define QS  BT_RD_QUERY_STRINGS
#define MY  BT_RD_MYSQL

struct rcase {
	unsigned flags;
	const char *in, *want;
};

static const struct rcase sql_cases[] = {
	/* always: the literal after PASSWORD */
	{ 0, "ALTER ROLE bob PASSWORD 'hunter2'", "ALTER ROLE bob PASSWORD ?" },
	{ 0, "alter user bob with encrypted password 'SCRAM-SHA-256$4096:abc'",
	  "alter user bob with encrypted password ?" },
	{ 0, "CREATE ROLE x LOGIN PASSWORD E'it\\'s'", "CREATE ROLE x LOGIN PASSWORD ?" },
	{ 0, "CREATE ROLE x PASSWORD $p$dollar'quoted$p$ VALID UNTIL 'infinity'",
	  "CREATE ROLE x PASSWORD ? VALID UNTIL 'infinity'" },
	{ 0, "SELECT id FROM users WHERE password = 'plain' AND name = 'bob'",
	  "SELECT id FROM users WHERE password = ? AND name = 'bob'" },
	{ 0, "CREATE USER MAPPING FOR bob SERVER s OPTIONS (user 'bob', password 'pw')",
	  "CREATE USER MAPPING FOR bob SERVER s OPTIONS (user 'bob', password ?)" },
	{ 0, "ALTER ROLE bob PASSWORD 'cut short by the proces",
	  "ALTER ROLE bob PASSWORD ?" },
	{ 0, "ALTER ROLE bob PASSWORD NULL", "ALTER ROLE bob PASSWORD NULL" },
	/* not the word PASSWORD */
	{ 0, "SET password_encryption = 'scram-sha-256'",
	  "SET password_encryption = 'scram-sha-256'" },
	{ 0, "SELECT 'password' , 'x'", "SELECT 'password' , 'x'" },
	{ 0, "SELECT \"password\" FROM t WHERE a = 'b'",
	  "SELECT \"password\" FROM t WHERE a = 'b'" },
	{ 0, "SELECT * FROM t WHERE id = 42", "SELECT * FROM t WHERE id = 42" },
	/* MySQL's dialect (a mysql message) */
	{ MY, "CREATE USER 'u'@'h' IDENTIFIED BY 'hunter2'",
	  "CREATE USER 'u'@'h' IDENTIFIED BY ?" },
	{ MY, "ALTER USER u IDENTIFIED WITH mysql_native_password AS '*AB12', "
	  "v IDENTIFIED VIA ed25519 USING PASSWORD('pw2')",
	  "ALTER USER u IDENTIFIED WITH mysql_native_password AS ?, "
	  "v IDENTIFIED VIA ed25519 USING PASSWORD(?)" },
	{ MY, "SET PASSWORD FOR u = PASSWORD(\"pw3\")",
	  "SET PASSWORD FOR u = PASSWORD(?)" },
	{ MY, "SELECT * FROM t WHERE name = 'by' AND `password` = 'x'",
	  "SELECT * FROM t WHERE name = 'by' AND `password` = ?" },
	{ MY | LIT, "SELECT 'it\\'s secret', \"dq \\\" s\", `a'b`, x FROM t",
	  "SELECT ?, ?, `a'b`, x FROM t" },
	{ MY | LIT, "INSERT INTO t VALUES ('a\\\\', 'b') -- it's",
	  "INSERT INTO t VALUES (?, ?) -- it's" },
	{ LIT, "SELECT 'it\\'s' FROM \"t\"", "SELECT ?s?" },
	/* sql-literals */
	{ LIT, "SELECT * FROM t WHERE id = 42 AND name = 'alice'",
	  "SELECT * FROM t WHERE id = ? AND name = ?" },
	{ LIT, "SELECT 'it''s', E'a\\'b', 1.5e-3, .5, 0x1F, 1_000 FROM t1",
	  "SELECT ?, ?, ?, ?, ?, ? FROM t1" },
	{ LIT, "SELECT B'1010', X'1F', N'n', U&'d\\0061t', u&'x' FROM t",
	  "SELECT ?, ?, ?, ?, ? FROM t" },
	{ LIT, "SELECT $$a 'b' c$$, $tag$x$$y$tag$, $1, $2 FROM t",
	  "SELECT ?, ?, $1, $2 FROM t" },
	{ LIT, "SELECT \"Col 1\", t2.c3 FROM \"T\"\"x\" WHERE c IN (1, 2, 3)",
	  "SELECT \"Col 1\", t2.c3 FROM \"T\"\"x\" WHERE c IN (?, ?, ?)" },
	{ LIT, "SELECT a -- id 7 'x'\nFROM t /* 'y' 8 */ WHERE b = -9",
	  "SELECT a -- id 7 'x'\nFROM t /* 'y' 8 */ WHERE b = -?" },
	{ LIT, "SELECT e'x', be'y' FROM t", "SELECT ?, be? FROM t" },
	{ LIT, "INSERT INTO t VALUES ('unterminated", "INSERT INTO t VALUES (?" },
	{ LIT, "SELECT a$1, x1y FROM t", "SELECT a$1, x1y FROM t" },
	{ LIT, "SELECT 'héllo', ünï FROM t", "SELECT ?, ünï FROM t" },
	{ LIT, "", "" },
};

static const struct rcase url_cases[] = {
	{ 0, "/search?q=secret&token=abc", "/search?q=secret&token=abc" },
	{ 0, "/", "/" },
	{ 0, "http://user:secret@example.com/a?b", "http://?@example.com/a?b" },
	{ 0, "https://tok@h:8080", "https://?@h:8080" },
	{ 0, "http://example.com/a@b", "http://example.com/a@b" },
	{ 0, "http://@example.com/", "http://@example.com/" },
	{ 0, "*", "*" },
	{ 0, "example.com:443", "example.com:443" },
	{ QS, "/search?q=secret&token=abc", "/search?" },
	{ QS, "/a/b#frag", "/a/b" },
	{ QS, "/a/b", "/a/b" },
	{ QS, "/?", "/?" },
	{ QS, "http://u:p@h/x?y=1", "http://?@h/x?" },
	{ QS, "/index.php?id=7", "/index.php?" },
};

START_TEST(sql_rules)
{
	const struct rcase *c = &sql_cases[_i];
	char out[2048];
	int cut = -1;
	size_t n = bt_redact_sql(c->in, strlen(c->in), out, sizeof out,
				 c->flags, &cut);

	ck_assert_int_eq(cut, 0);
	ck_assert_uint_le(n, strlen(c->in));
	out[n] = 0;
	ck_assert_msg(!strcmp(out, c->want), "flags %u: \"%s\"\n  gave \"%s\"\n  want \"%s\"",
		      c->flags, c->in, out, c->want);
}
END_TEST

START_TEST(url_rules)
{
	const struct rcase *c = &url_cases[_i];
	char out[2048];
	int cut = -1;
	size_t n = bt_redact_url(c->in, strlen(c->in), out, sizeof out,
				 c->flags, &cut);

	ck_assert_int_eq(cut, 0);
	ck_assert_uint_le(n, strlen(c->in));
	out[n] = 0;
	ck_assert_msg(!strcmp(out, c->want), "flags %u: \"%s\"\n  gave \"%s\"\n  want \"%s\"",
		      c->flags, c->in, out, c->want);
}
END_TEST

/* A value cut by the processor at every length: never a prefix of the
 * secret, never longer than its input, never a byte past it. */
START_TEST(sql_every_prefix)
{
	static const char *const secret[] = {
		"ALTER ROLE bob PASSWORD 'SECRETSECRET' VALID UNTIL 'x'",
		"SELECT 1 FROM t WHERE password='SECRETSECRET'",
		"ALTER ROLE bob PASSWORD E'SECRET\\'SECRET'",
		"ALTER ROLE bob PASSWORD $q$SECRETSECRET$q$",
	};
	for (unsigned s = 0; s < sizeof secret / sizeof secret[0]; s++) {
		size_t len = strlen(secret[s]);
		for (size_t k = 0; k <= len; k++) {
			char *in = malloc(k ? k : 1), out[256];
			memcpy(in, secret[s], k);
			size_t n = bt_redact_sql(in, k, out, sizeof out, 0, NULL);
			ck_assert_uint_le(n, k);
			out[n] = 0;
			ck_assert_msg(!strstr(out, "SEC"), "\"%.*s\" gave \"%s\"",
				      (int)k, secret[s], out);
			free(in);
		}
	}
}
END_TEST

/*
 * bt_redact_sql_may_change is the MSG path's test (bt_redact_needed):
 * whenever it says 0, bt_redact_sql without the option gives the text
 * back unchanged.  Every case of the table, every prefix and suffix of
 * them, and texts made of the letters of the two words, the quote and
 * the space in every combination up to 4 bytes, plus the words at each
 * position of a query.
 */
static void may_change_agrees(const char *in, size_t n)
{
	char out[2048];
	int cut = 0;
	size_t k;

	if (bt_redact_sql_may_change(in, n))
		return;
	k = bt_redact_sql(in, n, out, sizeof out, 0, &cut);
	ck_assert_msg(k == n && !cut && !memcmp(out, in, n),
		      "\"%.*s\" said unchanged, and it changed", (int)n, in);
	k = bt_redact_sql(in, n, out, sizeof out, MY, &cut);
	ck_assert_msg(k == n && !cut && !memcmp(out, in, n),
		      "\"%.*s\" (mysql) said unchanged, and it changed",
		      (int)n, in);
}

START_TEST(sql_may_change)
{
	static const char alpha[] = "pASwordIiEnTf' (`$=";
	char buf[8];
	size_t na = sizeof alpha - 1;

	for (size_t c = 0; c < sizeof sql_cases / sizeof sql_cases[0]; c++) {
		const char *in = sql_cases[c].in;
		size_t n = strlen(in);
		for (size_t k = 0; k <= n; k++) {
			may_change_agrees(in, k);
			may_change_agrees(in + k, n - k);
		}
	}
	for (size_t len = 1; len <= 4; len++) {
		size_t total = 1;
		for (size_t i = 0; i < len; i++)
			total *= na;
		for (size_t x = 0; x < total; x++) {
			size_t y = x;
			for (size_t i = 0; i < len; i++, y /= na)
				buf[i] = alpha[y % na];
			may_change_agrees(buf, len);
		}
	}
	/* the words, in any case, make it look; plain text does not */
	ck_assert_int_eq(bt_redact_sql_may_change("SELECT 1", 8), 0);
	ck_assert_int_eq(bt_redact_sql_may_change("x PassWord 'y'", 14), 1);
	ck_assert_int_eq(bt_redact_sql_may_change("a IDENTIFIED BY 'y'", 19), 1);
	ck_assert_int_eq(bt_redact_sql_may_change("SELECT '\xc3\xa9'", 11), 1);
	char big[1100];
	memset(big, 'a', sizeof big);
	ck_assert_int_eq(bt_redact_sql_may_change(big, 1024), 0);
	ck_assert_int_eq(bt_redact_sql_may_change(big, 1025), 1);
}
END_TEST

/* Out of room: the output stops (and says so), it is never overrun. */
START_TEST(small_output)
{
	const char *q = "SELECT 'a', 'b' FROM t WHERE x = 1";
	char out[8];
	int cut = 0;
	size_t n;

	memset(out, 'Z', sizeof out);
	n = bt_redact_sql(q, strlen(q), out, 5, LIT, &cut);
	ck_assert_int_eq(cut, 1);
	ck_assert_uint_eq(n, 5);
	ck_assert_int_eq(out[5], 'Z');
	n = bt_redact_url("/abc?d", 6, out, 3, QS, &cut);
	ck_assert_int_eq(cut, 1);
	ck_assert_uint_eq(n, 3);
}
END_TEST

START_TEST(parse_spec)
{
	unsigned f = 99;
	char bad[16] = "";

	ck_assert_int_eq(bt_redact_parse("", &f, bad, sizeof bad), 0);
	ck_assert_uint_eq(f, 0);
	ck_assert_int_eq(bt_redact_parse("none", &f, bad, sizeof bad), 0);
	ck_assert_uint_eq(f, 0);
	ck_assert_int_eq(bt_redact_parse("sql-literals", &f, bad, sizeof bad), 0);
	ck_assert_uint_eq(f, LIT);
	ck_assert_int_eq(bt_redact_parse("query-strings, sql-literals", &f, bad,
					 sizeof bad), 0);
	ck_assert_uint_eq(f, LIT | QS);
	ck_assert_int_eq(bt_redact_parse("cmdline", &f, bad, sizeof bad), 0);
	ck_assert_uint_eq(f, BT_RD_CMDLINE);
	ck_assert_int_eq(bt_redact_parse("ALL", &f, bad, sizeof bad), 0);
	ck_assert_uint_eq(f, BT_RD_ALL);
	f = 0;
	ck_assert_int_eq(bt_redact_parse("sql-literal", &f, bad, sizeof bad),
			 -EINVAL);
	ck_assert_uint_eq(f, BT_RD_ALL);           /* a typo hides more */
	ck_assert_str_eq(bad, "sql-literal");
}
END_TEST

/* A whole message: only the SQL and target attributes move into the
 * buffer, the others keep pointing where they did; TRUNC when the buffer
 * is short. */
START_TEST(message_attrs)
{
	struct bt_event ev;
	char buf[512];
	const char *sql = "SELECT * FROM t WHERE a = 'x'";
	const char *user = "bob";

	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_MSG;
	ev.nattr = 3;
	ev.attr[0] = (struct bt_attr){ BT_AK_METHOD, 5, "query" };
	ev.attr[1] = (struct bt_attr){ BT_AK_SQL, (uint16_t)strlen(sql), sql };
	ev.attr[2] = (struct bt_attr){ BT_AK_USER, 3, user };
	/* no PASSWORD in it: nothing to look at without the option */
	ck_assert_int_eq(bt_redact_needed(ev.attr, ev.nattr, 0), 0);
	ck_assert_int_eq(bt_redact_needed(ev.attr, ev.nattr, LIT), 1);
	ck_assert_int_eq(bt_redact_attrs(&ev, buf, sizeof buf, 0), 0);
	ck_assert_ptr_eq(ev.attr[1].val, sql);        /* unchanged: not moved */
	ck_assert_int_eq(bt_redact_attrs(&ev, buf, sizeof buf, LIT), 1);
	ck_assert_ptr_eq(ev.attr[1].val, buf);
	ck_assert_int_eq(ev.attr[1].len, strlen("SELECT * FROM t WHERE a = ?"));
	ck_assert_int_eq(memcmp(ev.attr[1].val, "SELECT * FROM t WHERE a = ?",
				ev.attr[1].len), 0);
	ck_assert_ptr_eq(ev.attr[2].val, user);
	ck_assert_uint_eq(ev.flags & BT_MF_TRUNC, 0);

	/* bound parameters' hashes: kept, dropped with the literals */
	static const char params[] = "0:3a6b7d409c6d463b";
	memset(&ev, 0, sizeof ev);
	ev.nattr = 2;
	ev.attr[0] = (struct bt_attr){ BT_AK_SQL, 9, "SELECT $1" };
	ev.attr[1] = (struct bt_attr){ BT_AK_PARAMS, (uint16_t)strlen(params),
				       params };
	ck_assert_int_eq(bt_redact_attrs(&ev, buf, sizeof buf, 0), 0);
	ck_assert_int_eq(ev.attr[1].len, strlen(params));
	ck_assert_int_eq(bt_redact_attrs(&ev, buf, sizeof buf, LIT), 1);
	ck_assert_int_eq(ev.attr[1].len, 0);

	/* the hashes without the SQL (a Bind of a statement the processor
	 * did not see prepared, a gRPC request): the message must still go
	 * through the rewrite with the option, and only with it */
	memset(&ev, 0, sizeof ev);
	ev.nattr = 2;
	ev.attr[0] = (struct bt_attr){ BT_AK_METHOD, 7, "execute" };
	ev.attr[1] = (struct bt_attr){ BT_AK_PARAMS, (uint16_t)strlen(params),
				       params };
	ck_assert_int_eq(bt_redact_needed(ev.attr, ev.nattr, 0), 0);
	ck_assert_int_eq(bt_redact_needed(ev.attr, ev.nattr, LIT), 1);
	ck_assert_int_eq(bt_redact_attrs(&ev, buf, sizeof buf, LIT), 1);
	ck_assert_int_eq(ev.attr[1].len, 0);

	memset(&ev, 0, sizeof ev);
	ev.nattr = 2;
	ev.attr[0] = (struct bt_attr){ BT_AK_METHOD, 3, "GET" };
	ev.attr[1] = (struct bt_attr){ BT_AK_TARGET, 6, "/a?b=c" };
	ck_assert_int_eq(bt_redact_needed(ev.attr, ev.nattr, 0), 0);  /* nothing to do */
	ck_assert_int_eq(bt_redact_needed(ev.attr, ev.nattr, QS), 1);
	ck_assert_int_eq(bt_redact_attrs(&ev, buf, 2, QS), 1);
	ck_assert_int_eq(ev.attr[1].len, 2);
	ck_assert_uint_eq(ev.flags & BT_MF_TRUNC, BT_MF_TRUNC);
}
END_TEST

/* Command lines: NUL-separated arguments in, NUL-separated out. */
struct ccase {
	unsigned flags;
	const char *in[8];
	const char *want[8];
};

static const struct ccase cmd_cases[] = {
	{ 0, { "psql", "-c", "ALTER ROLE bob PASSWORD 'pw1'", "-U", "postgres" },
	  { "psql", "-c", "ALTER ROLE bob PASSWORD ?", "-U", "postgres" } },
	{ 0, { "curl", "-H", "Authorization: Bearer tok", "-H", "cookie:a=b", "http://u:p@h/x?y" },
	  { "curl", "-H", "Authorization: ?", "-H", "cookie: ?", "http://?@h/x?y" } },
	{ 0, { "app", "--password=pw2", "--db-pass", "pw3", "--api-token", "t", "--port", "80" },
	  { "app", "--password=?", "--db-pass", "?", "--api-token", "?", "--port", "80" } },
	{ 0, { "psql", "postgresql://bob:pw4@db/x", "--dsn=mysql://r:pw5@h" },
	  { "psql", "postgresql://?@db/x", "--dsn=mysql://?@h" } },
	{ 0, { "/usr/bin/password-tool", "x" }, { "/usr/bin/password-tool", "x" } },
	{ BT_RD_CMDLINE, { "mysql", "-psecret", "db" }, { "mysql" } },
	{ BT_RD_QUERY_STRINGS, { "curl", "http://h/x?tok=1", "a?b" },
	  { "curl", "http://h/x?", "a?b" } },
	{ BT_RD_SQL_LITERALS, { "psql", "-c", "SELECT 'x', 1" },
	  { "psql", "-c", "SELECT 'x', 1" } },
	{ 0, { "nginx" }, { "nginx" } },
};

static size_t join(const char *const *v, char *buf)
{
	size_t n = 0;
	for (int i = 0; i < 8 && v[i]; i++) {
		if (i)
			buf[n++] = 0;
		memcpy(buf + n, v[i], strlen(v[i]));
		n += strlen(v[i]);
	}
	return n;
}

START_TEST(cmdline_rules)
{
	const struct ccase *c = &cmd_cases[_i];
	char in[512], want[512];
	size_t n = join(c->in, in), wn = join(c->want, want);
	size_t got = bt_redact_cmdline(in, n, c->flags);

	for (size_t i = 0; i < got; i++)
		if (!in[i])
			in[i] = ' ';
	for (size_t i = 0; i < wn; i++)
		if (!want[i])
			want[i] = ' ';
	ck_assert_msg(got == wn && !memcmp(in, want, wn), "case %d: gave \"%.*s\"\n  want \"%.*s\"",
		      _i, (int)got, in, (int)wn, want);
}
END_TEST

/* A full 511-byte command line of long arguments: no overrun. */
START_TEST(cmdline_long)
{
	char in[512];
	size_t n = 511;

	memset(in, 'a', sizeof in);
	for (size_t i = 50; i < n; i += 50)
		in[i] = 0;
	memcpy(in + 51, "--password=", 11);
	size_t got = bt_redact_cmdline(in, n, 0);
	ck_assert_uint_le(got, n);
	ck_assert_int_eq(in[51 + 11], '?');
}
END_TEST

static Suite *redact_suite(void)
{
	Suite *s = suite_create("redact");
	TCase *t = tcase_create("rules");

	tcase_add_loop_test(t, sql_rules, 0, sizeof sql_cases / sizeof sql_cases[0]);
	tcase_add_loop_test(t, url_rules, 0, sizeof url_cases / sizeof url_cases[0]);
	tcase_add_loop_test(t, cmdline_rules, 0, sizeof cmd_cases / sizeof cmd_cases[0]);
	tcase_add_test(t, cmdline_long);
	tcase_add_test(t, sql_every_prefix);
	tcase_add_test(t, sql_may_change);
	tcase_add_test(t, small_output);
	tcase_add_test(t, parse_spec);
	tcase_add_test(t, message_attrs);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(redact_suite());
	int failed;

	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
