/*
 * tb-client - HTTP/1.1 load client and ground truth of the real-server
 * testbeds (tests/testbeds/, docs/accuracy.md).
 *
 * Opens --conns keep-alive connections to a web server and sends
 * --requests GET requests in all, keeping up to --pipeline of them in
 * flight on each connection (several requests are written with one write
 * before any answer is read).  Every request carries a unique id in its
 * URL; its kind is drawn from --mix:
 *
 *   php     /app.php?id=ID&n=K          php-fpm application
 *   py      /py/app?id=ID&n=K           Python (gunicorn) application
 *   pyr     /pyr/app?id=ID&n=K          the same, reached through nginx's
 *                                       own resolver (r-ID.test)
 *   cgi     /cgi-bin/tb.cgi?id=ID&n=K   CGI program (fork and exec)
 *   static  /static/fJ.txt?id=ID        a static file: no backend work
 *
 * with K (SQL statements the application runs) drawn from 1..--max-sql
 * (0 with --max-sql 0) and "&dns=1" added to the dynamic kinds with
 * --dns.  The applications answer "id ID", one line per operation in the
 * order they ran ("sql TEXT" or "mysql TEXT" per statement run, "mysqlprep
 * TEXT" per MySQL statement prepared, "name NAME ADDR", and with --calls N
 * exactly N "call PATH": a call to a backend whose PATH names the id;
 * "redis COMMAND KEY": a Redis command whose key names the id, or
 * "redis MULTI", "redis EXEC"),
 * then "end ID"; app.php first reports what PHP
 * and libpq do by themselves ("pgconnect HOST", "sql RESET ALL;"), and
 * with --calls an application may report "lookup HOST" (it resolved HOST
 * to open a connection to its backend, in the request).  The
 * client checks that every answer is 200, belongs to the oldest
 * unanswered request of its connection, names the request's id in every
 * operation of its own, ran exactly K statements and (with --dns)
 * resolved r-ID.test to --dns-addr; a static answer must be the file's
 * bytes (--static-dir).  Anything else fails the run (exit 1), as does a
 * connection closed with requests in flight.
 *
 * --truth FILE gets one line per request, tab-separated:
 *   ID  KIND  URL  OPERATION...
 * (the operations as the application reported them), the ground truth
 * check-testbed.py compares the reconstructed paths with.
 *
 * One thread, non-blocking sockets, poll.  The client is not traced: its
 * requests reach the servers from outside, as real clients' do.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "ex_util.h"

#define TB_MAX_CONNS   1024
#define TB_MAX_DEPTH   64
#define TB_MAX_STATIC  16
#define TB_URL_MAX     160
#define TB_ID_MAX      32
#define TB_BODY_MAX    8192         /* largest answer body accepted */
#define TB_IN_MAX      (4 * TB_BODY_MAX)
#define TB_SHOW_ERRS   5

enum tb_kind { K_PHP, K_PY, K_PYR, K_CGI, K_STATIC, K_NKINDS };

static const char *const kind_name[K_NKINDS] = {
	"php", "py", "pyr", "cgi", "static"
};

/* One request: what was sent and, once answered, what the app did. */
struct tb_req {
	char id[TB_ID_MAX];
	char url[TB_URL_MAX];
	enum tb_kind kind;
	unsigned nsql;              /* statements asked for (dynamic kinds) */
	unsigned file;              /* static: file index */
	char *ops;                  /* answered: "\top\top..." (malloc) */
	uint64_t sent_ms;           /* queued for sending (ex_now_ms) */
};

struct tb_conn {
	int fd;
	int connecting;             /* non-blocking connect in progress */
	SSL *ssl;                   /* --tls: the connection's session */
	unsigned index;
	long fifo[TB_MAX_DEPTH];    /* request numbers in flight, oldest first */
	unsigned head, count;
	char out[TB_MAX_DEPTH * (TB_URL_MAX + 64)];
	size_t out_off, out_len;
	char in[TB_IN_MAX];
	size_t in_len;
	long answered;
};

static struct {
	const char *host, *truth, *static_dir, *dns_addr, *host_header;
	int port, conns, depth, max_sql, timeout_ms, idle_ms, dns, calls, tls;
	long requests;
	unsigned weight[K_NKINDS], weight_sum, nstatic;
	uint64_t seed;
	char run[8];                /* per-run hex tag in every id */
	char *static_body[TB_MAX_STATIC];
	size_t static_len[TB_MAX_STATIC];
} opt = {
	.host = "127.0.0.1", .dns_addr = "127.0.0.9", .host_header = "tb",
	.conns = 1, .depth = 1, .max_sql = 5, .timeout_ms = 300000,
	.idle_ms = 60000, .requests = 100,
};

static struct tb_req *reqs;
static long next_req, done_reqs, ok_reqs, failures;
static unsigned long connects, max_inflight, inflight;
/* the slowest answer (queued to answered) and the longest time nothing
 * was answered while requests were in flight: a server that stalls
 * shows in them even when every answer is right */
static uint64_t max_latency_ms, max_gap_ms;

static void usage(FILE *f)
{
	fprintf(f,
"Usage: tb-client --port PORT --requests N [OPTIONS]\n"
"\n"
"HTTP/1.1 load client of the BorderPatrol testbeds: unique request ids,\n"
"keep-alive connections with pipelining, every answer verified, ground\n"
"truth written to --truth (see docs/accuracy.md).\n"
"\n"
"Options:\n"
"  --host ADDR          server address (default 127.0.0.1)\n"
"  --port PORT          server port\n"
"  --conns C            concurrent connections (default 1)\n"
"  --requests N         requests in all (default 100)\n"
"  --pipeline D         requests in flight per connection (default 1)\n"
"  --mix K:W[,K:W...]   kinds and weights; kinds php py pyr cgi static\n"
"                       (default php:1)\n"
"  --max-sql K          statements per dynamic request, drawn from 1..K\n"
"                       (default 5, at most 5; 0: none)\n"
"  --calls N            every dynamic answer reports exactly N calls to a\n"
"                       backend (\"call PATH\", PATH naming the id)\n"
"                       (default 0: a call line fails the answer)\n"
"  --dns                dynamic requests also resolve r-ID.test\n"
"  --dns-addr ADDR      the address r-ID.test must resolve to\n"
"                       (default 127.0.0.9)\n"
"  --static-dir DIR     where the static files f0.txt.. are (their bytes\n"
"                       are compared with the answers); needed for static\n"
"  --host-header NAME   Host header (default tb)\n"
"  --seed S             random seed (default: from the clock)\n"
"  --run TAG            the tag in every request id, 1-6 characters of\n"
"                       [0-9a-f] (default: 6 random hex digits); a caller\n"
"                       that runs many rounds into one truth gives each\n"
"                       its own, since random tags meet by chance\n"
"  --truth FILE         write the ground truth there\n"
"  --timeout-ms MS      bound on the whole run (default 300000)\n"
"  --idle-ms MS         fail when nothing arrives for MS (default 60000)\n"
"  --tls                HTTPS: each connection speaks HTTP/1.1 over TLS\n"
"  -h, --help           this help\n"
"\n"
"Exit status: 0 every answer verified, 1 a failure (the first few are\n"
"printed), 2 usage error.  The last stdout line sums up the run:\n"
"  tb-client: requests N ok N failed N conns N connects N max_inflight N\n"
"  elapsed_ms N rps N php N py N pyr N cgi N static N max_latency_ms N\n"
"  max_gap_ms N\n"
"(max_latency_ms: the slowest answer, from when its request was queued;\n"
"max_gap_ms: the longest time with requests in flight and none answered)\n");
}

/* xorshift64*: reproducible with --seed. */
static uint64_t rnd(void)
{
	opt.seed ^= opt.seed >> 12;
	opt.seed ^= opt.seed << 25;
	opt.seed ^= opt.seed >> 27;
	return opt.seed * 2685821657736338717ULL;
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	char buf[400];
	va_list ap;

	failures++;
	if (failures > TB_SHOW_ERRS)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	ex_log("%s", buf);
}

static void parse_mix(const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *tok;

	if (!copy)
		ex_fatal("out of memory");
	memset(opt.weight, 0, sizeof opt.weight);
	opt.weight_sum = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');
		unsigned k;
		long w = 1;

		if (colon) {
			*colon = '\0';
			w = ex_opt_num("--mix weight", colon + 1, 0, 1000);
		}
		for (k = 0; k < K_NKINDS; k++)
			if (strcmp(tok, kind_name[k]) == 0)
				break;
		if (k == K_NKINDS)
			ex_fatal("--mix: unknown kind '%s' (php py pyr cgi static)",
				 tok);
		opt.weight[k] += (unsigned)w;
		opt.weight_sum += (unsigned)w;
	}
	free(copy);
	if (!opt.weight_sum)
		ex_fatal("--mix %s: all weights are 0", arg);
}

static void load_static(void)
{
	unsigned i;

	for (i = 0; i < TB_MAX_STATIC; i++) {
		char path[4096];
		FILE *f;
		long n;

		snprintf(path, sizeof path, "%s/f%u.txt", opt.static_dir, i);
		f = fopen(path, "rb");
		if (!f)
			break;
		if (fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 ||
		    n > TB_BODY_MAX || fseek(f, 0, SEEK_SET) < 0)
			ex_fatal("%s: cannot size it, or larger than %d bytes",
				 path, TB_BODY_MAX);
		opt.static_body[i] = malloc((size_t)n + 1);
		if (!opt.static_body[i] ||
		    fread(opt.static_body[i], 1, (size_t)n, f) != (size_t)n)
			ex_fatal("%s: cannot read it", path);
		opt.static_len[i] = (size_t)n;
		fclose(f);
	}
	opt.nstatic = i;
	if (!opt.nstatic)
		ex_fatal("--static-dir %s: no f0.txt in it", opt.static_dir);
}

/* Draw request number I: its kind, id and URL. */
static void make_request(long i)
{
	struct tb_req *r = &reqs[i];
	uint64_t x = rnd() % opt.weight_sum;
	unsigned k;
	const char *dns = opt.dns ? "&dns=1" : "";

	for (k = 0; k < K_NKINDS - 1; k++) {
		if (x < opt.weight[k])
			break;
		x -= opt.weight[k];
	}
	r->kind = (enum tb_kind)k;
	snprintf(r->id, sizeof r->id, "q%ldx%s", i, opt.run);
	r->nsql = opt.max_sql ? 1 + (unsigned)(rnd() % (uint64_t)opt.max_sql)
			      : 0;
	switch (r->kind) {
	case K_PHP:
		snprintf(r->url, sizeof r->url, "/app.php?id=%s&n=%u%s",
			 r->id, r->nsql, dns);
		break;
	case K_PY:
		snprintf(r->url, sizeof r->url, "/py/app?id=%s&n=%u%s",
			 r->id, r->nsql, dns);
		break;
	case K_PYR:
		snprintf(r->url, sizeof r->url, "/pyr/app?id=%s&n=%u%s",
			 r->id, r->nsql, dns);
		break;
	case K_CGI:
		snprintf(r->url, sizeof r->url, "/cgi-bin/tb.cgi?id=%s&n=%u%s",
			 r->id, r->nsql, dns);
		break;
	default:
		r->nsql = 0;
		r->file = (unsigned)(rnd() % opt.nstatic);
		snprintf(r->url, sizeof r->url, "/static/f%u.txt?id=%s",
			 r->file, r->id);
		break;
	}
}

/* ---- answers ------------------------------------------------------------ */

/* Check the body of a dynamic answer to R and keep its operations. */
static int check_app_body(struct tb_req *r, const char *body, size_t len)
{
	char want[TB_ID_MAX + 8], name[TB_ID_MAX + 16];
	const char *p = body, *end = body + len;
	unsigned nsql = 0, nname = 0, ncall = 0;
	size_t opslen = 0;
	int first = 1, ended = 0;
	/* an application of Redis commands (tb-redis) reports the lookups
	 * of the connections it opened, as --calls applications do */
	int redis_app = memmem(body, len, "\nredis ", 7) != NULL;

	r->ops = malloc(len + 2);
	if (!r->ops)
		ex_fatal("out of memory");
	r->ops[0] = '\0';
	snprintf(want, sizeof want, "'%s'", r->id);
	snprintf(name, sizeof name, "r-%s.test", r->id);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[1024];

		if (n >= sizeof line) {
			fail("%s: answer line longer than %zu bytes", r->id,
			     sizeof line);
			return -1;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + (nl ? 1 : 0);
		if (ended) {
			fail("%s: bytes after 'end %s'", r->id, r->id);
			return -1;
		}
		if (first) {
			if (strncmp(line, "id ", 3) || strcmp(line + 3, r->id)) {
				fail("%s: answer starts '%.60s', not 'id %s'",
				     r->id, line, r->id);
				return -1;
			}
			first = 0;
			continue;
		}
		if (strncmp(line, "end ", 4) == 0) {
			if (strcmp(line + 4, r->id)) {
				fail("%s: answer ends '%.60s'", r->id, line);
				return -1;
			}
			ended = 1;
			continue;
		}
		if (strcmp(line, "sql RESET ALL;") == 0 ||
		    strncmp(line, "pgconnect ", 10) == 0) {
			/* what PHP and libpq do by themselves (app.php) */
			if (r->kind != K_PHP || nsql || nname) {
				fail("%s: '%.60s' after the request's own "
				     "operations", r->id, line);
				return -1;
			}
		} else if (strncmp(line, "sql ", 4) == 0 ||
			   strncmp(line, "mysql ", 6) == 0 ||
			   strncmp(line, "mysqlprep ", 10) == 0) {
			/* a statement run (PostgreSQL, MySQL), or a MySQL
			 * statement prepared (not counted: its execute is) */
			if (!strstr(line, want) || strchr(line, '\t')) {
				fail("%s: statement without its id: %.80s",
				     r->id, line);
				return -1;
			}
			if (strncmp(line, "mysqlprep ", 10))
				nsql++;
		} else if (strncmp(line, "call ", 5) == 0 && opt.calls) {
			/* a call of the application to its backend (--calls) */
			if (!strstr(line + 5, r->id) || strchr(line, '\t') ||
			    strchr(line + 5, ' ')) {
				fail("%s: call without its id: %.80s", r->id,
				     line);
				return -1;
			}
			ncall++;
		} else if (strncmp(line, "lookup ", 7) == 0 &&
			   (opt.calls || redis_app)) {
			/* the application opened a backend (--calls) or
			 * Redis connection in this request and resolved its
			 * host */
			if (!line[7] || strchr(line + 7, ' ') ||
			    strchr(line, '\t')) {
				fail("%s: bad lookup line: %.80s", r->id, line);
				return -1;
			}
		} else if (strncmp(line, "redis ", 6) == 0) {
			/* a Redis command of the application (tb-redis):
			 * its key names the id; MULTI and EXEC have none */
			if (strchr(line, '\t') || (!strstr(line + 6, r->id) &&
			    strcmp(line + 6, "MULTI") &&
			    strcmp(line + 6, "EXEC"))) {
				fail("%s: Redis command without its id: %.80s",
				     r->id, line);
				return -1;
			}
		} else if (strncmp(line, "name ", 5) == 0) {
			char got[256], addr[64];

			if (sscanf(line + 5, "%255s %63s", got, addr) != 2 ||
			    strcmp(got, name) || strcmp(addr, opt.dns_addr)) {
				fail("%s: lookup '%.80s', want '%s %s'", r->id,
				     line + 5, name, opt.dns_addr);
				return -1;
			}
			nname++;
		} else {
			fail("%s: unknown answer line '%.80s'", r->id, line);
			return -1;
		}
		r->ops[opslen++] = '\t';
		memcpy(r->ops + opslen, line, n);
		opslen += n;
		r->ops[opslen] = '\0';
	}
	if (!ended) {
		fail("%s: answer without 'end %s'", r->id, r->id);
		return -1;
	}
	if (nsql != r->nsql || nname != (opt.dns ? 1u : 0u) ||
	    ncall != (r->kind == K_STATIC ? 0u : (unsigned)opt.calls)) {
		fail("%s: the application ran %u statements, %u lookups and "
		     "%u calls, want %u, %u and %u", r->id, nsql, nname,
		     ncall, r->nsql, opt.dns ? 1u : 0u,
		     r->kind == K_STATIC ? 0u : (unsigned)opt.calls);
		return -1;
	}
	return 0;
}

static int check_answer(struct tb_req *r, int status, const char *body,
			size_t len)
{
	if (status != 200) {
		fail("%s %s: status %d: %.*s", r->id, r->url, status,
		     (int)(len > 120 ? 120 : len), body);
		return -1;
	}
	if (r->kind == K_STATIC) {
		if (len != opt.static_len[r->file] ||
		    memcmp(body, opt.static_body[r->file], len)) {
			fail("%s: %s: body differs from the file (%zu bytes)",
			     r->id, r->url, len);
			return -1;
		}
		r->ops = strdup("");
		if (!r->ops)
			ex_fatal("out of memory");
		return 0;
	}
	return check_app_body(r, body, len);
}

/* Case-insensitive header lookup in HDR (ends at "\r\n\r\n"): copies the
 * value of NAME into VAL.  Returns 1 when found. */
static int header(const char *hdr, size_t hlen, const char *name, char *val,
		  size_t vsize)
{
	size_t nlen = strlen(name);
	const char *p = memchr(hdr, '\n', hlen), *end = hdr + hlen;

	while (p && ++p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t n;

		if (!eol)
			break;
		if ((size_t)(eol - p) > nlen && strncasecmp(p, name, nlen) == 0 &&
		    p[nlen] == ':') {
			const char *v = p + nlen + 1;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			n = (size_t)(eol - v);
			if (n && v[n - 1] == '\r')
				n--;
			if (n >= vsize)
				n = vsize - 1;
			memcpy(val, v, n);
			val[n] = '\0';
			return 1;
		}
		p = eol;
	}
	return 0;
}

/*
 * Parse one whole answer at the start of IN (LEN bytes).  Returns the bytes
 * it takes (status, body copied to BODY, *BLEN, *CLOSE set), 0 when more is
 * needed, -1 when the bytes are not HTTP.
 */
static long parse_answer(const char *in, size_t len, int *status, char *body,
			 size_t *blen, int *close_after)
{
	const char *eoh = NULL;
	char val[64];
	size_t hlen, pos;
	int major, minor;

	for (size_t i = 3; i < len; i++)
		if (in[i] == '\n' && in[i - 1] == '\r' && in[i - 2] == '\n' &&
		    in[i - 3] == '\r') {
			eoh = in + i + 1;
			break;
		}
	if (!eoh)
		return len > TB_BODY_MAX ? -1 : 0;
	hlen = (size_t)(eoh - in);
	if (sscanf(in, "HTTP/%d.%d %d", &major, &minor, status) != 3)
		return -1;
	*close_after = (major == 1 && minor == 0);
	if (header(in, hlen, "Connection", val, sizeof val))
		*close_after = strcasecmp(val, "close") == 0;
	*blen = 0;
	pos = hlen;
	if (header(in, hlen, "Transfer-Encoding", val, sizeof val) &&
	    strcasecmp(val, "chunked") == 0) {
		for (;;) {
			const char *eol = memchr(in + pos, '\n', len - pos);
			unsigned long n;
			char *endp;

			if (!eol)
				return 0;
			n = strtoul(in + pos, &endp, 16);
			if (endp == in + pos)
				return -1;
			pos = (size_t)(eol - in) + 1;
			if (n == 0) {
				/* trailers, then an empty line */
				for (;;) {
					eol = memchr(in + pos, '\n', len - pos);
					if (!eol)
						return 0;
					if (eol - (in + pos) <= 1)
						return (long)((size_t)(eol - in) + 1);
					pos = (size_t)(eol - in) + 1;
				}
			}
			if (*blen + n > TB_BODY_MAX)
				return -1;
			if (len - pos < n + 2)
				return 0;
			memcpy(body + *blen, in + pos, n);
			*blen += n;
			pos += n + 2;
		}
	}
	if (header(in, hlen, "Content-Length", val, sizeof val)) {
		unsigned long n = strtoul(val, NULL, 10);
		if (n > TB_BODY_MAX)
			return -1;
		if (len - hlen < n)
			return 0;
		memcpy(body, in + hlen, n);
		*blen = n;
		return (long)(hlen + n);
	}
	return -1;                  /* no length: keep-alive is impossible */
}

/* ---- connections -------------------------------------------------------- */

static int conn_open(struct tb_conn *c)
{
	int fd = ex_connect_tcp(opt.host, opt.port, 1, 0);

	if (fd < 0) {
		fail("connect %s:%d: %s", opt.host, opt.port, strerror(-fd));
		return -1;
	}
	c->fd = fd;
	c->connecting = 1;
	c->head = c->count = 0;
	c->out_off = c->out_len = 0;
	c->in_len = 0;
	connects++;
	return 0;
}

static void conn_close(struct tb_conn *c)
{
	if (c->ssl) {
		SSL_free(c->ssl);
		c->ssl = NULL;
	}
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* ---- --tls: HTTP/1.1 over TLS (OpenSSL; the certificate is not
 * checked: the testbeds make a self-signed one) ---------------------------- */

static SSL_CTX *tls_ctx;

static void tls_init(void)
{
	static const unsigned char alpn[] = "\x08http/1.1";

	tls_ctx = SSL_CTX_new(TLS_client_method());
	if (!tls_ctx)
		ex_fatal("SSL_CTX_new failed");
	SSL_CTX_set_verify(tls_ctx, SSL_VERIFY_NONE, NULL);
	SSL_CTX_set_alpn_protos(tls_ctx, alpn, sizeof alpn - 1);
}

/* The handshake of a connection just made, waiting at most 10 s. */
static int conn_tls(struct tb_conn *c)
{
	uint64_t end = ex_now_ms() + 10000;

	c->ssl = SSL_new(tls_ctx);
	if (!c->ssl || !SSL_set_fd(c->ssl, c->fd)) {
		fail("connection %u: SSL_new/SSL_set_fd failed", c->index);
		return -1;
	}
	SSL_set_mode(c->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE |
		     SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	for (;;) {
		struct pollfd p = { .fd = c->fd };
		int r = SSL_connect(c->ssl), e;

		if (r == 1)
			return 0;
		e = SSL_get_error(c->ssl, r);
		if (e == SSL_ERROR_WANT_READ)
			p.events = POLLIN;
		else if (e == SSL_ERROR_WANT_WRITE)
			p.events = POLLOUT;
		else
			break;
		if (ex_now_ms() > end)
			break;
		poll(&p, 1, 1000);
	}
	fail("connection %u: TLS handshake failed: %s", c->index,
	     ERR_reason_error_string(ERR_get_error()));
	return -1;
}

/* send/recv through the session: -1 with errno EAGAIN when it must wait,
 * 0 at the peer's close. */
static ssize_t tls_io(struct tb_conn *c, void *buf, size_t n, int wr)
{
	int r, e;

	ERR_clear_error();
	r = wr ? SSL_write(c->ssl, buf, (int)n) : SSL_read(c->ssl, buf, (int)n);
	if (r > 0)
		return r;
	e = SSL_get_error(c->ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		errno = EAGAIN;
		return -1;
	}
	if (!wr && (e == SSL_ERROR_ZERO_RETURN ||
		    (e == SSL_ERROR_SYSCALL && !ERR_peek_error() && !errno)))
		return 0;
	if (!errno)
		errno = EPROTO;
	return -1;
}

/* Queue as many new requests as the pipeline has room for. */
static void conn_fill(struct tb_conn *c)
{
	while (c->count < (unsigned)opt.depth && next_req < opt.requests) {
		struct tb_req *r = &reqs[next_req];
		int n = snprintf(c->out + c->out_len,
				 sizeof c->out - c->out_len,
				 "GET %s HTTP/1.1\r\nHost: %s\r\n"
				 "User-Agent: tb-client\r\n\r\n",
				 r->url, opt.host_header);

		if (n < 0 || (size_t)n >= sizeof c->out - c->out_len)
			break;
		c->out_len += (size_t)n;
		r->sent_ms = ex_now_ms();
		c->fifo[(c->head + c->count) % TB_MAX_DEPTH] = next_req++;
		c->count++;
		if (++inflight > max_inflight)
			max_inflight = inflight;
	}
}

/* Write what is queued.  Returns 0, or -1 when the connection failed. */
static int conn_write(struct tb_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = c->ssl ? tls_io(c, c->out + c->out_off,
					    c->out_len - c->out_off, 1) :
			    send(c->fd, c->out + c->out_off,
				 c->out_len - c->out_off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			fail("connection %u: send: %s", c->index,
			     strerror(errno));
			return -1;
		}
		c->out_off += (size_t)n;
	}
	c->out_off = c->out_len = 0;
	return 0;
}

/* Read and check answers.  Returns 0, 1 when the server closed the
 * connection cleanly with nothing in flight, -1 on failure. */
static int conn_read(struct tb_conn *c)
{
	static char body[TB_BODY_MAX + 1];

	for (;;) {
		ssize_t n = c->ssl ? tls_io(c, c->in + c->in_len,
					    sizeof c->in - c->in_len, 0) :
			    recv(c->fd, c->in + c->in_len,
				 sizeof c->in - c->in_len, 0);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			fail("connection %u: recv: %s (%u requests in flight)",
			     c->index, strerror(errno), c->count);
			return -1;
		}
		if (n == 0) {
			if (c->count || c->in_len) {
				fail("connection %u: closed by the server with "
				     "%u requests in flight (first %s)",
				     c->index, c->count,
				     reqs[c->fifo[c->head]].id);
				return -1;
			}
			return 1;
		}
		c->in_len += (size_t)n;
		for (;;) {
			int status = 0, close_after = 0;
			size_t blen = 0;
			long used = parse_answer(c->in, c->in_len, &status,
						 body, &blen, &close_after);
			struct tb_req *r;

			if (used == 0)
				break;
			if (used < 0 || !c->count) {
				fail("connection %u: %s: '%.60s'", c->index,
				     c->count ? "not an HTTP answer with a length"
					      : "an answer nobody asked for",
				     c->in);
				return -1;
			}
			r = &reqs[c->fifo[c->head]];
			{
				uint64_t lat = ex_now_ms() - r->sent_ms;
				if (lat > max_latency_ms)
					max_latency_ms = lat;
			}
			c->head = (c->head + 1) % TB_MAX_DEPTH;
			c->count--;
			inflight--;
			done_reqs++;
			c->answered++;
			if (check_answer(r, status, body, blen) == 0)
				ok_reqs++;
			memmove(c->in, c->in + used, c->in_len - (size_t)used);
			c->in_len -= (size_t)used;
			if (close_after) {
				if (c->count) {
					fail("connection %u: 'Connection: close' "
					     "with %u requests in flight",
					     c->index, c->count);
					return -1;
				}
				return 1;
			}
		}
		if (c->in_len == sizeof c->in) {
			fail("connection %u: answer larger than %zu bytes",
			     c->index, sizeof c->in);
			return -1;
		}
	}
}

static int write_truth(void)
{
	FILE *f = fopen(opt.truth, "w");
	long i;

	if (!f) {
		ex_log("cannot write the truth file %s: %s", opt.truth,
		       strerror(errno));
		return -1;
	}
	for (i = 0; i < opt.requests; i++) {
		const struct tb_req *r = &reqs[i];
		if (!r->ops)
			continue;
		fprintf(f, "%s\t%s\t%s%s\n", r->id, kind_name[r->kind], r->url,
			r->ops);
	}
	if (fclose(f)) {
		ex_log("cannot write the truth file %s: %s", opt.truth,
		       strerror(errno));
		return -1;
	}
	return 0;
}

static int run(void)
{
	static struct tb_conn conns[TB_MAX_CONNS];
	static struct pollfd pfd[TB_MAX_CONNS];
	uint64_t start = ex_now_ms(), last = start;
	int c;

	for (c = 0; c < opt.conns; c++) {
		conns[c].index = (unsigned)c;
		conns[c].fd = -1;
		if (conn_open(&conns[c]) < 0)
			return -1;
	}
	while (done_reqs < opt.requests) {
		uint64_t now = ex_now_ms();
		int n;

		if (failures)
			return -1;
		if (now - start > (uint64_t)opt.timeout_ms) {
			fail("run not finished after %d ms: %ld of %ld answered",
			     opt.timeout_ms, done_reqs, opt.requests);
			return -1;
		}
		if (now - last > (uint64_t)opt.idle_ms) {
			fail("nothing answered for %d ms: %ld of %ld answered, "
			     "%lu in flight", opt.idle_ms, done_reqs,
			     opt.requests, inflight);
			return -1;
		}
		for (c = 0; c < opt.conns; c++) {
			struct tb_conn *k = &conns[c];
			if (k->fd < 0 && next_req < opt.requests) {
				if (conn_open(k) < 0)
					return -1;
			}
			pfd[c].fd = k->fd;
			pfd[c].events = 0;
			if (k->fd < 0)
				continue;
			if (!k->connecting)
				conn_fill(k);
			pfd[c].events = POLLIN;
			if (k->connecting || k->out_len)
				pfd[c].events |= POLLOUT;
		}
		n = poll(pfd, (nfds_t)opt.conns, 1000);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail("poll: %s", strerror(errno));
			return -1;
		}
		for (c = 0; c < opt.conns && n > 0; c++) {
			struct tb_conn *k = &conns[c];
			int r;

			if (k->fd < 0 || !pfd[c].revents)
				continue;
			if (k->connecting) {
				r = ex_connect_done(k->fd);
				if (r < 0) {
					fail("connect %s:%d: %s", opt.host,
					     opt.port, strerror(-r));
					return -1;
				}
				k->connecting = 0;
				if (opt.tls && conn_tls(k) < 0)
					return -1;
				conn_fill(k);
			}
			if ((pfd[c].revents & POLLOUT) && conn_write(k) < 0)
				return -1;
			if (pfd[c].revents & (POLLIN | POLLHUP | POLLERR)) {
				long before = done_reqs;
				r = conn_read(k);
				if (done_reqs != before) {
					uint64_t t = ex_now_ms();
					if (t - last > max_gap_ms)
						max_gap_ms = t - last;
					last = t;
				}
				if (r < 0)
					return -1;
				if (r == 1)
					conn_close(k);
			}
			if (k->fd >= 0 && k->out_len && conn_write(k) < 0)
				return -1;
		}
	}
	for (c = 0; c < opt.conns; c++)
		conn_close(&conns[c]);
	return failures ? -1 : 0;
}

int main(int argc, char **argv)
{
	enum { O_HOST = 256, O_PORT, O_CONNS, O_REQS, O_PIPE, O_MIX, O_MAXSQL,
	       O_DNS, O_DNSADDR, O_STATIC, O_HOSTHDR, O_SEED, O_RUN, O_TRUTH,
	       O_TIMEOUT, O_IDLE, O_CALLS, O_TLS };
	static const struct option lo[] = {
		{ "host", 1, 0, O_HOST }, { "port", 1, 0, O_PORT },
		{ "conns", 1, 0, O_CONNS }, { "requests", 1, 0, O_REQS },
		{ "pipeline", 1, 0, O_PIPE }, { "mix", 1, 0, O_MIX },
		{ "max-sql", 1, 0, O_MAXSQL }, { "dns", 0, 0, O_DNS },
		{ "dns-addr", 1, 0, O_DNSADDR },
		{ "static-dir", 1, 0, O_STATIC },
		{ "host-header", 1, 0, O_HOSTHDR }, { "seed", 1, 0, O_SEED },
		{ "run", 1, 0, O_RUN },
		{ "truth", 1, 0, O_TRUTH }, { "timeout-ms", 1, 0, O_TIMEOUT },
		{ "idle-ms", 1, 0, O_IDLE }, { "calls", 1, 0, O_CALLS },
		{ "tls", 0, 0, O_TLS }, { "help", 0, 0, 'h' },
		{ 0, 0, 0, 0 }
	};
	uint64_t start;
	int o, seeded = 0;
	long i;

	ex_init(argv[0]);
	parse_mix("php:1");
	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (o) {
		case O_HOST: opt.host = optarg; break;
		case O_PORT: opt.port = (int)ex_opt_num("--port", optarg, 1, 65535); break;
		case O_CONNS: opt.conns = (int)ex_opt_num("--conns", optarg, 1, TB_MAX_CONNS); break;
		case O_REQS: opt.requests = ex_opt_num("--requests", optarg, 1, 10000000); break;
		case O_PIPE: opt.depth = (int)ex_opt_num("--pipeline", optarg, 1, TB_MAX_DEPTH); break;
		case O_MIX: parse_mix(optarg); break;
		case O_MAXSQL: opt.max_sql = (int)ex_opt_num("--max-sql", optarg, 0, 5); break;
		case O_CALLS: opt.calls = (int)ex_opt_num("--calls", optarg, 0, 8); break;
		case O_DNS: opt.dns = 1; break;
		case O_TLS: opt.tls = 1; break;
		case O_DNSADDR: opt.dns_addr = optarg; break;
		case O_STATIC: opt.static_dir = optarg; break;
		case O_HOSTHDR: opt.host_header = optarg; break;
		case O_SEED: opt.seed = (uint64_t)ex_opt_num("--seed", optarg, 1, 0x7fffffffffffffffL); seeded = 1; break;
		case O_RUN:
			if (!*optarg || strlen(optarg) > 6 ||
			    strspn(optarg, "0123456789abcdef") != strlen(optarg)) {
				fprintf(stderr, "tb-client: --run takes 1-6 characters of [0-9a-f], not '%s'\n", optarg);
				return 2;
			}
			snprintf(opt.run, sizeof opt.run, "%s", optarg);
			break;
		case O_TRUTH: opt.truth = optarg; break;
		case O_TIMEOUT: opt.timeout_ms = (int)ex_opt_num("--timeout-ms", optarg, 1, 3600000); break;
		case O_IDLE: opt.idle_ms = (int)ex_opt_num("--idle-ms", optarg, 1, 3600000); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || !opt.port) {
		usage(stderr);
		return 2;
	}
	if (!seeded) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		opt.seed = ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)ts.tv_nsec ^
			   ((uint64_t)getpid() << 40);
	}
	if (!opt.seed)
		opt.seed = 1;
	if (!opt.run[0])
		snprintf(opt.run, sizeof opt.run, "%06x", (unsigned)(rnd() & 0xffffff));
	if (opt.weight[K_STATIC]) {
		if (!opt.static_dir)
			ex_fatal("--mix with static needs --static-dir");
		load_static();
	}
	if (opt.tls)
		tls_init();
	reqs = calloc((size_t)opt.requests, sizeof *reqs);
	if (!reqs)
		ex_fatal("out of memory for %ld requests", opt.requests);
	for (i = 0; i < opt.requests; i++)
		make_request(i);

	start = ex_now_ms();
	int rc = run();
	uint64_t ms = ex_now_ms() - start;
	long per[K_NKINDS] = { 0 };
	for (i = 0; i < opt.requests; i++)
		per[reqs[i].kind]++;
	if (opt.truth && write_truth() < 0)
		rc = -1;
	if (failures > TB_SHOW_ERRS)
		ex_log("... and %ld more failures", failures - TB_SHOW_ERRS);
	printf("tb-client: requests %ld ok %ld failed %ld conns %d connects %lu "
	       "max_inflight %lu elapsed_ms %" PRIu64 " rps %.0f php %ld py %ld "
	       "pyr %ld cgi %ld static %ld max_latency_ms %" PRIu64
	       " max_gap_ms %" PRIu64 "\n",
	       opt.requests, ok_reqs, opt.requests - ok_reqs, opt.conns, connects,
	       max_inflight, ms, ms ? 1000.0 * (double)done_reqs / (double)ms : 0.0,
	       per[K_PHP], per[K_PY], per[K_PYR], per[K_CGI], per[K_STATIC],
	       max_latency_ms, max_gap_ms);
	return rc < 0 ? 1 : 0;
}
