/*
 * http_client.c - HTTP/1.1 POST over TCP or TLS (OpenSSL) with retries,
 * backoff, a time bound and gzip (see http_client.h).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <zlib.h>

#include "http_client.h"

#define HEAD_MAX   16384             /* response status line and headers */

struct http_client {
	struct http_opts o;
	char          *host, *port, *path, *hosthdr, *head;
	char          *auth;                  /* Basic credentials, or NULL */
	size_t         headlen;
	double         deadline;
	int            fd;                    /* kept-alive connection, or -1 */
	int            tls;                   /* https:// */
	SSL_CTX       *ctx;
	SSL           *ssl;                   /* on FD when TLS */
	unsigned       seed;
};

double http_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- options ----------------------------------------------------------------- */

/* Base64 of S[0..N) (RFC 4648, padded), malloc'd. */
static char *base64(const char *s, size_t n)
{
	static const char t[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *o = malloc((n + 2) / 3 * 4 + 1), *w = o;
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned char)s[i] << 16;
		if (i + 1 < n)
			v |= (unsigned char)s[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)s[i + 2];
		*w++ = t[v >> 18 & 63];
		*w++ = t[v >> 12 & 63];
		*w++ = i + 1 < n ? t[v >> 6 & 63] : '=';
		*w++ = i + 2 < n ? t[v & 63] : '=';
	}
	*w = 0;
	return o;
}

/* %XX escapes of S[0..N) decoded, malloc'd (user and password). */
static char *pct_decode(const char *s, size_t n)
{
	char *o = malloc(n + 1), *w = o;
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		if (s[i] == '%' && i + 2 < n && isxdigit((unsigned char)s[i + 1]) &&
		    isxdigit((unsigned char)s[i + 2]) &&
		    sscanf(s + i + 1, "%2x", &v) == 1) {
			*w++ = (char)v;
			i += 2;
		} else {
			*w++ = s[i];
		}
	}
	*w = 0;
	return o;
}

/* Split O->url into C's host, port, path, tls and auth (malloc'd).
 * 0 or -1 with ERR. */
static int parse_url(const struct http_opts *o, struct http_client *c,
		     char *err, size_t len)
{
	const char *url = o->url, *sh = o->shown ? o->shown : o->url, *h, *e, *pe, *at;
	const char *defpath = o->default_path ? o->default_path : "/";
	c->host = c->port = c->path = c->auth = NULL;
	c->tls = !strncasecmp(url, "https://", 8);
	if (!c->tls && strncasecmp(url, "http://", 7)) {
		snprintf(err, len, "%s: not an http:// or https:// URL (e.g. http://localhost:%s)",
			 sh, o->example_port ? o->example_port : "80");
		return -1;
	}
	h = url + (c->tls ? 8 : 7);
	pe = h + strcspn(h, "/?#");
	at = memrchr(h, '@', (size_t)(pe - h));
	if (at && !o->userinfo) {
		snprintf(err, len, "%s: user:password in the URL is not supported: use %s 'Authorization: ...'",
			 sh, o->header_option);
		return -1;
	}
	if (at) {
		const char *colon = memchr(h, ':', (size_t)(at - h));
		char *user = pct_decode(h, (size_t)((colon ? colon : at) - h));
		char *pw = colon ? pct_decode(colon + 1, (size_t)(at - colon - 1)) : strdup("");
		size_t ul = user ? strlen(user) : 0, pl = pw ? strlen(pw) : 0;
		char *up = user && pw ? malloc(ul + pl + 2) : NULL;
		if (up) {
			sprintf(up, "%s:%s", user, pw);
			c->auth = base64(up, ul + pl + 1);
			memset(up, 0, ul + pl + 1);
		}
		free(user);
		free(pw);
		free(up);
		if (!c->auth)
			goto oom;
		h = at + 1;
	}
	if (*h == '[') {
		e = memchr(h, ']', (size_t)(pe - h));
		if (!e) {
			snprintf(err, len, "%s: unclosed [ in the host", sh);
			goto bad;
		}
		c->host = strndup(h + 1, (size_t)(e - h - 1));
		e++;
	} else {
		e = h;
		while (e < pe && *e != ':')
			e++;
		c->host = strndup(h, (size_t)(e - h));
	}
	if (!c->host)
		goto oom;
	if (!*c->host) {
		snprintf(err, len, "%s: no host", sh);
		goto bad;
	}
	if (e < pe && *e == ':') {
		char *end;
		long n = strtol(e + 1, &end, 10);
		if (end != pe || end == e + 1 || n <= 0 || n > 65535) {
			snprintf(err, len, "%s: the port is not a number from 1 to 65535", sh);
			goto bad;
		}
		c->port = strndup(e + 1, (size_t)(pe - e - 1));
	} else if (e != pe) {
		snprintf(err, len, "%s: cannot read the host", sh);
		goto bad;
	} else {
		c->port = strdup(c->tls ? "443" : "80");
	}
	if (*pe == '#') {
		snprintf(err, len, "%s: a #fragment has no place in an endpoint", sh);
		goto bad;
	}
	if (!*pe || !strcmp(pe, "/"))
		c->path = strdup(defpath);
	else if (*pe == '?') {
		c->path = malloc(strlen(pe) + strlen(defpath) + 1);
		if (c->path)
			sprintf(c->path, "%s%s", defpath, pe);
	} else
		c->path = strdup(pe);
	if (!c->port || !c->path)
		goto oom;
	for (const char *p = c->path; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f || *p == '#') {
			snprintf(err, len, "%s: the path has spaces or control characters", sh);
			goto bad;
		}
	return 0;
oom:
	snprintf(err, len, "out of memory");
bad:
	free(c->host);
	free(c->port);
	free(c->path);
	free(c->auth);
	c->host = c->port = c->path = c->auth = NULL;
	return -1;
}

int http_check_url(const struct http_opts *o, char *err, size_t len)
{
	struct http_client c;
	if (parse_url(o, &c, err, len) < 0)
		return -1;
	free(c.host);
	free(c.port);
	free(c.path);
	free(c.auth);
	return 0;
}

int http_check_header(const char *h, const char *option, char *err,
		      size_t len)
{
	static const char *const own[] = {
		"host", "content-length", "content-type", "content-encoding",
		"transfer-encoding", "connection", NULL,
	};
	const char *c = strchr(h, ':');
	size_t n = c ? (size_t)(c - h) : 0;
	if (!c || !n) {
		snprintf(err, len, "%s wants 'Name: value', not '%s'", option, h);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)h[i]) && !strchr("!#$%&'*+-.^_`|~", h[i])) {
			snprintf(err, len, "%s: '%.*s' is not a header name", option, (int)n, h);
			return -1;
		}
	for (c++; *c; c++)
		if (*c == '\r' || *c == '\n') {
			snprintf(err, len, "%s: the value of %.*s has a line break", option, (int)n, h);
			return -1;
		}
	for (int i = 0; own[i]; i++)
		if (strlen(own[i]) == n && !strncasecmp(h, own[i], n)) {
			snprintf(err, len, "%s: bp-reconstruct sets %.*s itself", option, (int)n, h);
			return -1;
		}
	return 0;
}

/* The headers after the request line, up to the Content-Length value. */
static int make_head(struct http_client *p)
{
	size_t cap = 512 + strlen(p->hosthdr) + strlen(p->o.content_type) +
		     (p->auth ? strlen(p->auth) : 0);
	for (size_t i = 0; i < p->o.nheaders; i++)
		cap += strlen(p->o.headers[i]) + 4;
	p->head = malloc(cap);
	if (!p->head)
		return -1;
	size_t n = (size_t)snprintf(p->head, cap,
		"Host: %s\r\nUser-Agent: bp-reconstruct/%s\r\n"
		"Content-Type: %s\r\n%s%s%s",
		p->hosthdr, PACKAGE_VERSION, p->o.content_type,
		p->o.gzip ? "Content-Encoding: gzip\r\n" : "",
		p->auth ? "Authorization: Basic " : "", p->auth ? p->auth : "");
	if (p->auth)
		n += (size_t)snprintf(p->head + n, cap - n, "\r\n");
	for (size_t i = 0; i < p->o.nheaders; i++) {
		const char *h = p->o.headers[i], *c = strchr(h, ':');
		const char *v = c + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		n += (size_t)snprintf(p->head + n, cap - n, "%.*s: %s\r\n",
				      (int)(c - h), h, v);
	}
	n += (size_t)snprintf(p->head + n, cap - n, "Content-Length: ");
	p->headlen = n;
	return 0;
}

/* ---- the connection ------------------------------------------------------------ */

static void conn_close(struct http_client *p)
{
	if (p->ssl) {
		SSL_shutdown(p->ssl);            /* a close_notify, not waited for */
		SSL_free(p->ssl);
		p->ssl = NULL;
	}
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

/* Milliseconds to wait for I/O: until UNTIL, at least 1. */
static int ms_left(double until)
{
	double l = until - http_now();
	return l <= 0 ? 0 : l > 1e6 ? 1000000000 : (int)(l * 1000) + 1;
}

/* Wait until FD is ready for what SSL_get_error said it wants; 0 or
 * -errno. */
static int tls_wait(struct http_client *p, int err, double until)
{
	struct pollfd pf = { .fd = p->fd,
			     .events = err == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN };
	int pr = poll(&pf, 1, ms_left(until));
	if (pr == 0)
		return -ETIMEDOUT;
	if (pr < 0 && errno != EINTR)
		return -errno;
	return 0;
}

/* OpenSSL's last error as text, or WHAT. */
static const char *tls_why(const char *what)
{
	static __thread char b[256];
	unsigned long e = ERR_get_error();
	if (!e)
		return what;
	ERR_error_string_n(e, b, sizeof b);
	ERR_clear_error();
	return b;
}

/* The TLS handshake on P->fd: the server's certificate must chain to a
 * trusted CA and name the endpoint's host (or IP address).  0, -errno
 * (retryable), or -EKEYREJECTED when the certificate is not trusted
 * (retrying will not help).  WHY is set on failure. */
static int tls_open(struct http_client *p, double until, char *why, size_t len)
{
	struct in6_addr a6;
	struct in_addr a4;
	int ip = inet_pton(AF_INET, p->host, &a4) == 1 ||
		 inet_pton(AF_INET6, p->host, &a6) == 1;
	p->ssl = SSL_new(p->ctx);
	if (!p->ssl || !SSL_set_fd(p->ssl, p->fd)) {
		snprintf(why, len, "TLS: %.180s", tls_why("out of memory"));
		conn_close(p);
		return -ENOMEM;
	}
	if (ip) {
		X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(p->ssl), p->host);
	} else {
		SSL_set_tlsext_host_name(p->ssl, p->host);
		SSL_set1_host(p->ssl, p->host);
	}
	for (;;) {
		ERR_clear_error();
		int r = SSL_connect(p->ssl);
		if (r == 1)
			return 0;
		int e = SSL_get_error(p->ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			int w = tls_wait(p, e, until);
			if (w < 0) {
				snprintf(why, len, "TLS handshake with %s port %s: %s",
					 p->host, p->port, strerror(-w));
				conn_close(p);
				return w;
			}
			continue;
		}
		long v = SSL_get_verify_result(p->ssl);
		if (v != X509_V_OK) {
			snprintf(why, len, "the certificate of %s port %s is not trusted: %s (give its CA with %s FILE)",
				 p->host, p->port, X509_verify_cert_error_string(v), p->o.ca_option);
			conn_close(p);
			return -EKEYREJECTED;
		}
		snprintf(why, len, "TLS handshake with %.60s port %s failed: %.150s",
			 p->host, p->port,
			 tls_why(e == SSL_ERROR_SYSCALL ? "connection closed" : "protocol error"));
		conn_close(p);
		return -ECONNRESET;
	}
}

/* Connect to the endpoint (every address it resolves to, in order).
 * 0 or -errno, with WHY set. */
static int conn_open(struct http_client *p, double until, char *why, size_t len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_ADDRCONFIG }, *ai, *a;
	int r = getaddrinfo(p->host, p->port, &hints, &ai);
	if (r) {
		snprintf(why, len, "cannot resolve %s: %s", p->host, gai_strerror(r));
		return -EHOSTUNREACH;
	}
	int e = ECONNREFUSED;
	for (a = ai; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
				a->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
			e = errno;
			close(fd);
			continue;
		}
		struct pollfd pf = { .fd = fd, .events = POLLOUT };
		int pr = poll(&pf, 1, ms_left(until));
		socklen_t sl = sizeof e;
		if (pr == 0) {
			e = ETIMEDOUT;
			close(fd);
			continue;
		}
		if (pr < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) < 0 || e) {
			if (pr < 0 || !e)
				e = errno ? errno : EIO;
			close(fd);
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		p->fd = fd;
		freeaddrinfo(ai);
		return p->tls ? tls_open(p, until, why, len) : 0;
	}
	freeaddrinfo(ai);
	snprintf(why, len, "cannot connect to %s port %s: %s", p->host, p->port,
		 strerror(e));
	return -e;
}

static int send_all(struct http_client *p, const void *b, size_t n, double until)
{
	const char *s = b;
	int fd = p->fd;
	while (n && p->ssl) {
		ERR_clear_error();
		int w = SSL_write(p->ssl, s, n > INT32_MAX ? INT32_MAX : (int)n);
		if (w > 0) {
			s += w;
			n -= (size_t)w;
			continue;
		}
		int e = SSL_get_error(p->ssl, w);
		if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
			return -ECONNRESET;
		if ((e = tls_wait(p, e, until)) < 0)
			return e;
	}
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w > 0) {
			s += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN)
			return -errno;
		struct pollfd pf = { .fd = fd, .events = POLLOUT };
		int pr = poll(&pf, 1, ms_left(until));
		if (pr == 0)
			return -ETIMEDOUT;
		if (pr < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}

/* A buffered reader of the response. */
struct rd {
	struct http_client *p;
	int    fd;
	double until;
	char   buf[16384];
	size_t off, len;
	size_t got;                      /* bytes read in all */
};

/* More bytes: >0, 0 at EOF, or -errno. */
static int rd_fill(struct rd *r)
{
	if (r->off == r->len)
		r->off = r->len = 0;
	for (SSL *ssl = r->p->ssl; ssl;) {
		ERR_clear_error();
		int n = SSL_read(ssl, r->buf + r->len, (int)(sizeof r->buf - r->len));
		if (n > 0) {
			r->len += (size_t)n;
			r->got += (size_t)n;
			return 1;
		}
		int e = SSL_get_error(ssl, n);
		if (e == SSL_ERROR_ZERO_RETURN)
			return 0;
		if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
			return -ECONNRESET;
		if ((e = tls_wait(r->p, e, r->until)) < 0)
			return e;
	}
	for (;;) {
		ssize_t n = recv(r->fd, r->buf + r->len, sizeof r->buf - r->len, 0);
		if (n > 0) {
			r->len += (size_t)n;
			r->got += (size_t)n;
			return 1;
		}
		if (n == 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		struct pollfd pf = { .fd = r->fd, .events = POLLIN };
		int pr = poll(&pf, 1, ms_left(r->until));
		if (pr == 0)
			return -ETIMEDOUT;
		if (pr < 0 && errno != EINTR)
			return -errno;
	}
}

/* One line without its CRLF into LINE (at most MAX-1 bytes kept). */
static int rd_line(struct rd *r, char *line, size_t max)
{
	size_t n = 0, total = 0;
	for (;;) {
		while (r->off < r->len) {
			char c = r->buf[r->off++];
			if (c == '\n') {
				if (n && line[n - 1] == '\r')
					n--;
				line[n] = 0;
				return 0;
			}
			if (++total > HEAD_MAX)
				return -EPROTO;
			if (n + 1 < max)
				line[n++] = c;
		}
		int f = rd_fill(r);
		if (f <= 0)
			return f ? f : -ECONNRESET;
	}
}

/* Read N bytes of body (N SIZE_MAX: to EOF), keeping the first ones. */
static int rd_body(struct rd *r, size_t n, char *keep, size_t *kept)
{
	while (n) {
		if (r->off == r->len) {
			int f = rd_fill(r);
			if (f < 0)
				return f;
			if (f == 0)
				return n == SIZE_MAX ? 0 : -ECONNRESET;
		}
		size_t c = r->len - r->off;
		if (c > n)
			c = n;
		if (*kept < HTTP_KEEP_MAX) {
			size_t k = HTTP_KEEP_MAX - *kept < c ? HTTP_KEEP_MAX - *kept : c;
			memcpy(keep + *kept, r->buf + r->off, k);
			*kept += k;
		}
		r->off += c;
		if (n != SIZE_MAX)
			n -= c;
	}
	return 0;
}

/* Retry-After: delay-seconds or an HTTP-date; -1 when unreadable. */
static double retry_after(const char *v)
{
	char *end;
	while (*v == ' ')
		v++;
	long s = strtol(v, &end, 10);
	if (end != v && !*end && s >= 0)
		return (double)s;
	struct tm tm;
	memset(&tm, 0, sizeof tm);
	end = strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (!end)
		return -1;
	double d = difftime(timegm(&tm), time(NULL));
	return d < 0 ? 0 : d;
}

/* Read one response (skipping 1xx). */
static int read_resp(struct rd *r, struct http_resp *o)
{
	char line[1024];
	int e;
again:
	memset(o, 0, sizeof *o);
	o->retry_after = -1;
	if ((e = rd_line(r, line, sizeof line)) < 0)
		return e;
	int minor = 0, st = 0, off = 0;
	if (sscanf(line, "HTTP/1.%d %3d%n", &minor, &st, &off) < 2 ||
	    st < 100 || st > 999)
		return -EPROTO;
	o->status = st;
	snprintf(o->reason, sizeof o->reason, "%s", line + off + (line[off] == ' '));
	o->close = minor == 0;
	size_t clen = SIZE_MAX;
	int chunked = 0;
	for (;;) {
		if ((e = rd_line(r, line, sizeof line)) < 0)
			return e;
		if (!line[0])
			break;
		char *c = strchr(line, ':');
		if (!c)
			continue;
		*c++ = 0;
		while (*c == ' ' || *c == '\t')
			c++;
		if (!strcasecmp(line, "content-length"))
			clen = strtoull(c, NULL, 10);
		else if (!strcasecmp(line, "transfer-encoding"))
			chunked = strcasestr(c, "chunked") != NULL;
		else if (!strcasecmp(line, "connection"))
			o->close = strcasestr(c, "close") ? 1 :
				   strcasestr(c, "keep-alive") ? 0 : o->close;
		else if (!strcasecmp(line, "retry-after"))
			o->retry_after = retry_after(c);
			else if (!strcasecmp(line, "content-type"))
			o->proto_body = strcasestr(c, "protobuf") != NULL;
	}
	if (st < 200)
		goto again;
	if (st == 204 || st == 304)
		return 0;
	if (chunked) {
		for (;;) {
			if ((e = rd_line(r, line, sizeof line)) < 0)
				return e;
			size_t n = strtoull(line, NULL, 16);
			if (!n)
				break;
			if ((e = rd_body(r, n, o->body, &o->nbody)) < 0)
				return e;
			if ((e = rd_line(r, line, sizeof line)) < 0)
				return e;
		}
		do {                             /* trailers */
			if ((e = rd_line(r, line, sizeof line)) < 0)
				return e;
		} while (line[0]);
	} else {
		if (clen == SIZE_MAX)
			o->close = 1;
		if ((e = rd_body(r, clen, o->body, &o->nbody)) < 0)
			return e;
	}
	o->body[o->nbody] = 0;
	return 0;
}

void http_printable(const void *s, size_t n, char *out, size_t len)
{
	const unsigned char *b = s;
	size_t k = 0;
	for (size_t i = 0; b && i < n && k + 1 < len && k < 200; i++)
		out[k++] = b[i] >= 0x20 && b[i] < 0x7f ? (char)b[i] : ' ';
	while (k && out[k - 1] == ' ')
		k--;
	out[k] = 0;
}

/* One attempt (twice when a kept-alive connection turns out closed):
 * POST BODY to PATH, 0 with the answer in O, or -errno (WHY set). */
static int attempt(struct http_client *p, const char *path, const void *body,
		   size_t len, struct http_resp *o, char *why, size_t wlen)
{
	int e;
	for (int fresh = 0; fresh < 2; fresh++) {
		double until = http_now() + p->o.io_max;
		if (until > p->deadline)
			until = p->deadline;
		int reused = p->fd >= 0;
		if (!reused && (e = conn_open(p, until, why, wlen)) < 0)
			return e;
		size_t cap = strlen(path) + p->headlen + 64;
		char *h = malloc(cap);
		struct rd *r = malloc(sizeof *r);
		if (!h || !r) {
			free(h);
			free(r);
			return -ENOMEM;
		}
		int n = snprintf(h, cap, "POST %s HTTP/1.1\r\n%.*s%zu\r\n\r\n", path,
				 (int)p->headlen, p->head, len);
		r->p = p;
		r->fd = p->fd;
		r->until = until;
		r->off = r->len = r->got = 0;
		e = send_all(p, h, (size_t)n, until);
		free(h);
		if (!e)
			e = send_all(p, body, len, until);
		if (!e)
			e = read_resp(r, o);
		size_t got = r->got;
		free(r);
		if (!e) {
			if (o->close)
				conn_close(p);
			return 0;
		}
		conn_close(p);
		/* a kept-alive connection the server had closed: once more */
		if (reused && !got && e != -ETIMEDOUT)
			continue;
		snprintf(why, wlen, "%s port %s: %s", p->host, p->port,
			 e == -EPROTO ? "not an HTTP response" : strerror(-e));
		return e;
	}
	return -ECONNRESET;
}

/* ---- retries ----------------------------------------------------------------------- */

unsigned char *http_gzip(const void *in, size_t len, size_t *out)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return NULL;
	uLong cap = deflateBound(&z, (uLong)len);
	unsigned char *b = malloc(cap);
	if (!b) {
		deflateEnd(&z);
		return NULL;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = b;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(b);
		return NULL;
	}
	*out = z.total_out;
	deflateEnd(&z);
	return b;
}

static int retryable(int status)
{
	return status == 429 || status == 502 || status == 503 || status == 504;
}

static void nap(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The client's TLS settings: TLS 1.2 or later, the server verified
 * against the system's CAs or OPTS->ca. */
static int tls_ctx(struct http_client *p, char *err, size_t len)
{
	p->ctx = SSL_CTX_new(TLS_client_method());
	if (!p->ctx) {
		snprintf(err, len, "TLS: %s", tls_why("cannot create a context"));
		return -1;
	}
	SSL_CTX_set_min_proto_version(p->ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(p->ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_options(p->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	if (p->o.ca) {
		if (SSL_CTX_load_verify_locations(p->ctx, p->o.ca, NULL) != 1) {
			snprintf(err, len, "%s %s: %s (give a file of PEM certificates)",
				 p->o.ca_option, p->o.ca, tls_why("cannot be read"));
			return -1;
		}
	} else if (SSL_CTX_set_default_verify_paths(p->ctx) != 1) {
		snprintf(err, len, "TLS: the system's CA certificates: %s",
			 tls_why("cannot be loaded"));
		return -1;
	}
	return 0;
}


/* The body's printable text. */
static void printable_text(const struct http_resp *o, char *out, size_t len)
{
	http_printable(o->body, o->nbody, out, len);
}

void http_resp_text(const struct http_client *c, const struct http_resp *o,
		    char *out, size_t len)
{
	char txt[256];
	if (c->o.describe)
		c->o.describe(o, txt, sizeof txt);
	else
		printable_text(o, txt, sizeof txt);
	snprintf(out, len, "HTTP %d %.60s%s%s", o->status, o->reason,
		 txt[0] ? ": " : "", txt);
}

/* The URL as messages show it. */
static const char *shown(const struct http_client *p)
{
	return p->o.shown ? p->o.shown : p->o.url;
}

int http_post(struct http_client *p, const char *path, const void *body,
	      size_t len, struct http_resp *o, uint64_t *retries, char *err,
	      size_t elen)
{
	char why[400];
	if (!path)
		path = p->path;
	for (int n = 0;; n++) {
		if (http_now() >= p->deadline) {
			snprintf(err, elen, "the time bound (%.0f s) ran out", p->o.timeout);
			return -1;
		}
		int e = attempt(p, path, body, len, o, why, sizeof why);
		if (e == -EKEYREJECTED) {
			snprintf(err, elen, "%.200s: %s", shown(p), why);
			return -1;
		}
		double wait = -1;
		if (!e) {
			if (!retryable(o->status))
				return 0;
			http_resp_text(p, o, why, sizeof why);
			wait = o->retry_after;
		}
		if (n >= p->o.retries) {
			snprintf(err, elen, "%.200s after %d retries: %s", shown(p), n, why);
			return -1;
		}
		if (wait < 0) {
			/* 0.5 s, 1 s, 2 s ... at most 30 s, less up to 20% */
			wait = 0.5 * (double)(1u << (n < 6 ? n : 6));
			if (wait > 30)
				wait = 30;
			wait *= 1.0 - 0.2 * (rand_r(&p->seed) / (RAND_MAX + 1.0));
		}
		if (http_now() + wait >= p->deadline) {
			snprintf(err, elen, "%.200s: the time bound (%.0f s) ran out while retrying (%s; next try in %.1f s)",
				 shown(p), p->o.timeout, why, wait);
			return -1;
		}
		nap(wait);
		(*retries)++;
	}
}

const char *http_path(const struct http_client *c)
{
	return c->path;
}

double http_left(const struct http_client *c)
{
	return c->deadline - http_now();
}

void http_close(struct http_client *p)
{
	if (!p)
		return;
	conn_close(p);
	if (p->ctx)
		SSL_CTX_free(p->ctx);
	free(p->host);
	free(p->port);
	free(p->path);
	free(p->auth);
	free(p->hosthdr);
	free(p->head);
	free(p);
}

struct http_client *http_open(const struct http_opts *o, char *err, size_t len)
{
	struct http_client *p = calloc(1, sizeof *p);
	if (!p) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	p->o = *o;
	p->fd = -1;
	p->deadline = http_now() + o->timeout;
	p->seed = (unsigned)getpid() ^ (unsigned)time(NULL);
	if (parse_url(o, p, err, len) < 0) {
		http_close(p);
		return NULL;
	}
	if (p->tls && tls_ctx(p, err, len) < 0) {
		http_close(p);
		return NULL;
	}
	int v6 = strchr(p->host, ':') != NULL;
	size_t hl = strlen(p->host) + strlen(p->port) + 4;
	p->hosthdr = malloc(hl);
	if (p->hosthdr) {
		snprintf(p->hosthdr, hl, v6 ? "[%s]" : "%s", p->host);
		if (strcmp(p->port, p->tls ? "443" : "80")) {
			size_t n = strlen(p->hosthdr);
			snprintf(p->hosthdr + n, hl - n, ":%s", p->port);
		}
	}
	if (!p->hosthdr || make_head(p) < 0) {
		snprintf(err, len, "out of memory");
		http_close(p);
		return NULL;
	}
	return p;
}
