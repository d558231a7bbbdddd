/*
 * otlp_push.c - OTLP/HTTP export: a small HTTP/1.1 client (TCP, or TLS
 * with OpenSSL), gzip, retries, a bounded queue and a sender thread (see
 * otlp_push.h).
 *
 * OTLP/HTTP (opentelemetry-proto, docs/specification.md): POST the
 * ExportTraceServiceRequest to /v1/traces as application/x-protobuf or
 * application/json; 2xx is success; 429, 502, 503 and 504 are retryable,
 * with Retry-After when the server sends it; any other status is not.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
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

#include "otlp_push.h"

#define HEAD_MAX   16384             /* response status line and headers */
#define KEEP_MAX   512               /* response body kept for a message */

struct batch {
	unsigned char *body;
	size_t         len, nspans;
};

struct otlp_push {
	struct otlp_push_opts o;
	char          *host, *port, *path, *hosthdr, *head;
	size_t         headlen;
	double         t0, deadline;
	/* the queue */
	pthread_mutex_t mu;
	pthread_cond_t  nonempty, room;
	struct batch    q[OTLP_PUSH_QUEUE];
	size_t          qhead, qn;
	int             closing, ended;
	pthread_t       thread;
	/* the sender's */
	int             fd;                    /* kept-alive connection, or -1 */
	int             tls;                   /* https:// */
	SSL_CTX        *ctx;
	SSL            *ssl;                   /* on FD when TLS */
	unsigned        seed;
	struct otlp_push_stats st;
	pthread_mutex_t err_mu;                /* both threads may fail */
	char            err[700];
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void set_err(struct otlp_push *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_err(struct otlp_push *p, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&p->err_mu);
	if (!p->err[0]) {                        /* the first one tells */
		va_start(ap, fmt);
		vsnprintf(p->err, sizeof p->err, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&p->err_mu);
}

/* ---- options ----------------------------------------------------------------- */

/* Split URL; the pieces are malloc'd.  0 or -1 with ERR. */
static int parse_url(const char *url, char **host, char **port, char **path,
		     int *tls, char *err, size_t len)
{
	const char *h, *e, *pe;
	*host = *port = *path = NULL;
	*tls = !strncasecmp(url, "https://", 8);
	if (!*tls && strncasecmp(url, "http://", 7)) {
		snprintf(err, len, "%s: not an http:// or https:// URL (e.g. http://localhost:4318)", url);
		return -1;
	}
	h = url + (*tls ? 8 : 7);
	pe = h + strcspn(h, "/?#");
	if (memchr(h, '@', (size_t)(pe - h))) {
		snprintf(err, len, "%s: user:password in the URL is not supported: use --otlp-header 'Authorization: ...'", url);
		return -1;
	}
	if (*h == '[') {
		e = memchr(h, ']', (size_t)(pe - h));
		if (!e) {
			snprintf(err, len, "%s: unclosed [ in the host", url);
			return -1;
		}
		*host = strndup(h + 1, (size_t)(e - h - 1));
		e++;
	} else {
		e = h;
		while (e < pe && *e != ':')
			e++;
		*host = strndup(h, (size_t)(e - h));
	}
	if (!*host)
		goto oom;
	if (!**host) {
		snprintf(err, len, "%s: no host", url);
		goto bad;
	}
	if (e < pe && *e == ':') {
		char *end;
		long n = strtol(e + 1, &end, 10);
		if (end != pe || end == e + 1 || n <= 0 || n > 65535) {
			snprintf(err, len, "%s: the port is not a number from 1 to 65535", url);
			goto bad;
		}
		*port = strndup(e + 1, (size_t)(pe - e - 1));
	} else if (e != pe) {
		snprintf(err, len, "%s: cannot read the host", url);
		goto bad;
	} else {
		*port = strdup(*tls ? "443" : "80");
	}
	if (*pe == '#') {
		snprintf(err, len, "%s: a #fragment has no place in an endpoint", url);
		goto bad;
	}
	if (!*pe || !strcmp(pe, "/"))
		*path = strdup("/v1/traces");
	else if (*pe == '?') {
		*path = malloc(strlen(pe) + 12);
		if (*path)
			sprintf(*path, "/v1/traces%s", pe);
	} else
		*path = strdup(pe);
	if (!*port || !*path)
		goto oom;
	for (const char *c = *path; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f || *c == '#') {
			snprintf(err, len, "%s: the path has spaces or control characters", url);
			goto bad;
		}
	return 0;
oom:
	snprintf(err, len, "out of memory");
bad:
	free(*host);
	free(*port);
	free(*path);
	*host = *port = *path = NULL;
	return -1;
}

int otlp_push_check_url(const char *url, char *err, size_t len)
{
	char *h, *p, *q;
	int tls;
	if (parse_url(url, &h, &p, &q, &tls, err, len) < 0)
		return -1;
	free(h);
	free(p);
	free(q);
	return 0;
}

int otlp_push_check_header(const char *h, char *err, size_t len)
{
	static const char *const own[] = {
		"host", "content-length", "content-type", "content-encoding",
		"transfer-encoding", "connection", NULL,
	};
	const char *c = strchr(h, ':');
	size_t n = c ? (size_t)(c - h) : 0;
	if (!c || !n) {
		snprintf(err, len, "--otlp-header wants 'Name: value', not '%s'", h);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)h[i]) && !strchr("!#$%&'*+-.^_`|~", h[i])) {
			snprintf(err, len, "--otlp-header: '%.*s' is not a header name", (int)n, h);
			return -1;
		}
	for (c++; *c; c++)
		if (*c == '\r' || *c == '\n') {
			snprintf(err, len, "--otlp-header: the value of %.*s has a line break", (int)n, h);
			return -1;
		}
	for (int i = 0; own[i]; i++)
		if (strlen(own[i]) == n && !strncasecmp(h, own[i], n)) {
			snprintf(err, len, "--otlp-header: bp-reconstruct sets %.*s itself", (int)n, h);
			return -1;
		}
	return 0;
}

/* The request line and headers, up to the Content-Length value. */
static int make_head(struct otlp_push *p)
{
	size_t cap = 512 + strlen(p->path) + strlen(p->hosthdr);
	for (size_t i = 0; i < p->o.nheaders; i++)
		cap += strlen(p->o.headers[i]) + 4;
	p->head = malloc(cap);
	if (!p->head)
		return -1;
	size_t n = (size_t)snprintf(p->head, cap,
		"POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: bp-reconstruct/%s\r\n"
		"Content-Type: %s\r\n%s",
		p->path, p->hosthdr, PACKAGE_VERSION,
		p->o.json ? "application/json" : "application/x-protobuf",
		p->o.gzip ? "Content-Encoding: gzip\r\n" : "");
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

static void conn_close(struct otlp_push *p)
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
	double l = until - now();
	return l <= 0 ? 0 : l > 1e6 ? 1000000000 : (int)(l * 1000) + 1;
}

/* Wait until FD is ready for what SSL_get_error said it wants; 0 or
 * -errno. */
static int tls_wait(struct otlp_push *p, int err, double until)
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
static int tls_open(struct otlp_push *p, double until, char *why, size_t len)
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
			snprintf(why, len, "the certificate of %s port %s is not trusted: %s (give its CA with --otlp-ca FILE)",
				 p->host, p->port, X509_verify_cert_error_string(v));
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
static int conn_open(struct otlp_push *p, double until, char *why, size_t len)
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

static int send_all(struct otlp_push *p, const void *b, size_t n, double until)
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
	struct otlp_push *p;
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
		if (*kept < KEEP_MAX) {
			size_t k = KEEP_MAX - *kept < c ? KEEP_MAX - *kept : c;
			memcpy(keep + *kept, r->buf + r->off, k);
			*kept += k;
		}
		r->off += c;
		if (n != SIZE_MAX)
			n -= c;
	}
	return 0;
}

struct resp {
	int    status;
	int    close;                    /* the server closes the connection */
	double retry_after;              /* seconds, or -1 */
	int    proto_body;               /* the body is protobuf */
	char   reason[64];
	char   body[KEEP_MAX + 1];
	size_t nbody;
};

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
static int read_resp(struct rd *r, struct resp *o)
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

/* The next field of the protobuf message B[0..N) from *I: its number,
 * wire type, value (varint) or bytes (length-delimited).  0 at the end
 * or on anything it cannot read. */
static int pb_next(const unsigned char *b, size_t n, size_t *i,
		   unsigned *field, unsigned *wt, uint64_t *v,
		   const unsigned char **data)
{
	uint64_t tag = 0;
	int sh;
	if (*i >= n)
		return 0;
	for (sh = 0; *i < n && sh < 64; sh += 7) {
		tag |= (uint64_t)(b[*i] & 0x7f) << sh;
		if (!(b[(*i)++] & 0x80))
			break;
	}
	*field = (unsigned)(tag >> 3);
	*wt = (unsigned)(tag & 7);
	*v = 0;
	*data = NULL;
	switch (*wt) {
	case 0:
	case 2:
		for (sh = 0; *i < n && sh < 64; sh += 7) {
			*v |= (uint64_t)(b[*i] & 0x7f) << sh;
			if (!(b[(*i)++] & 0x80))
				break;
		}
		if (*wt == 2) {
			if (*v > n - *i)
				return 0;
			*data = b + *i;
			*i += (size_t)*v;
		}
		return 1;
	case 1:
		if (n - *i < 8)
			return 0;
		*i += 8;
		return 1;
	case 5:
		if (n - *i < 4)
			return 0;
		*i += 4;
		return 1;
	default:
		return 0;
	}
}

/* S[0..N) printable on one line into OUT (at most 200 characters). */
static void printable(const unsigned char *b, size_t n, char *out, size_t len)
{
	size_t k = 0;
	for (size_t i = 0; b && i < n && k + 1 < len && k < 200; i++)
		out[k++] = b[i] >= 0x20 && b[i] < 0x7f ? (char)b[i] : ' ';
	while (k && out[k - 1] == ' ')
		k--;
	out[k] = 0;
}

/* What the body of a refusal says: google.rpc.Status.message (field 2)
 * of a protobuf body, or the text. */
static void body_text(const struct resp *o, char *out, size_t len)
{
	const unsigned char *b = (const unsigned char *)o->body, *d, *m = NULL;
	size_t n = o->nbody, i = 0, mlen = 0;
	unsigned f, wt;
	uint64_t v;
	if (o->proto_body) {
		while (pb_next(b, n, &i, &f, &wt, &v, &d))
			if (f == 2 && wt == 2) {
				m = d;
				mlen = (size_t)v;
			}
		b = m;
		n = mlen;
	}
	printable(b, n, out, len);
}

/* The spans a 2xx answer says it rejected (OTLP partial success:
 * ExportTraceServiceResponse.partial_success = 1 { int64 rejected_spans
 * = 1; string error_message = 2; }, or partialSuccess.rejectedSpans and
 * errorMessage in JSON), with the message in MSG; 0 when none. */
static int64_t rejected(const struct resp *o, char *msg, size_t len)
{
	const unsigned char *b = (const unsigned char *)o->body, *d, *d2;
	size_t n = o->nbody, i = 0;
	unsigned f, wt, f2, wt2;
	uint64_t v, v2;
	int64_t r = 0;
	msg[0] = 0;
	if (o->proto_body) {
		while (pb_next(b, n, &i, &f, &wt, &v, &d)) {
			if (f != 1 || wt != 2)
				continue;
			size_t j = 0;
			while (pb_next(d, (size_t)v, &j, &f2, &wt2, &v2, &d2)) {
				if (f2 == 1 && wt2 == 0)
					r = (int64_t)v2;
				else if (f2 == 2 && wt2 == 2)
					printable(d2, (size_t)v2, msg, len);
			}
		}
		return r;
	}
	const char *p = strstr(o->body, "\"rejectedSpans\"");
	if (p) {
		p += strlen("\"rejectedSpans\"");
		p += strspn(p, " \t\r\n:\"");
		r = strtoll(p, NULL, 10);
	}
	p = strstr(o->body, "\"errorMessage\"");
	if (p) {
		p += strlen("\"errorMessage\"");
		p += strspn(p, " \t\r\n:");
		if (*p == '"') {
			const char *e = strchr(p + 1, '"');
			if (e)
				printable((const unsigned char *)p + 1, (size_t)(e - p - 1),
					  msg, len);
		}
	}
	return r;
}

/* One POST: 0 with the response in O, or -errno (WHY set). */
static int post(struct otlp_push *p, const unsigned char *body, size_t len,
		struct resp *o, char *why, size_t wlen)
{
	char head[8192 + 64];
	int e;
	for (int fresh = 0; fresh < 2; fresh++) {
		double until = now() + OTLP_PUSH_IO_MAX;
		if (until > p->deadline)
			until = p->deadline;
		int reused = p->fd >= 0;
		if (!reused && (e = conn_open(p, until, why, wlen)) < 0)
			return e;
		int n = snprintf(head, sizeof head, "%.*s%zu\r\n\r\n",
				 (int)p->headlen, p->head, len);
		const char *h = head;
		char *big = NULL;
		if (n < 0 || (size_t)n >= sizeof head) {
			big = malloc(p->headlen + 32);
			if (!big)
				return -ENOMEM;
			n = sprintf(big, "%.*s%zu\r\n\r\n", (int)p->headlen, p->head, len);
			h = big;
		}
		struct rd *r = malloc(sizeof *r);
		if (!r) {
			free(big);
			return -ENOMEM;
		}
		r->p = p;
		r->fd = p->fd;
		r->until = until;
		r->off = r->len = r->got = 0;
		e = send_all(p, h, (size_t)n, until);
		free(big);
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

/* ---- delivery -------------------------------------------------------------------- */

static unsigned char *gzip_body(const unsigned char *in, size_t len, size_t *out)
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

/* Deliver one batch.  0: delivered or refused for good (counted); -1:
 * the push ends (out of retries or of time; P->err set). */
static int deliver(struct otlp_push *p, const struct batch *b)
{
	size_t len = b->len;
	unsigned char *z = NULL;
	const unsigned char *body = b->body;
	char why[256];
	struct resp o;

	if (p->o.gzip) {
		z = gzip_body(b->body, b->len, &len);
		if (!z) {
			set_err(p, "gzip: out of memory");
			return -1;
		}
		body = z;
	}
	for (int attempt = 0;; attempt++) {
		if (now() >= p->deadline) {
			set_err(p, "the time bound (%.0f s) ran out", p->o.timeout);
			free(z);
			return -1;
		}
		int e = post(p, body, len, &o, why, sizeof why);
		if (e == -EKEYREJECTED) {
			set_err(p, "%.200s: %s", p->o.url, why);
			free(z);
			return -1;
		}
		if (!e && o.status >= 200 && o.status < 300) {
			char pm[160];
			int64_t rej = rejected(&o, pm, sizeof pm);
			if (rej > 0) {
				if ((uint64_t)rej > b->nspans)
					rej = (int64_t)b->nspans;
				set_err(p, "%.200s accepted %zu of %zu spans, rejected %lld (partial success%s%s)",
					p->o.url, b->nspans - (size_t)rej, b->nspans,
					(long long)rej, pm[0] ? ": " : "", pm);
				p->st.rejected += (uint64_t)rej;
			} else {
				rej = 0;
			}
			p->st.spans += b->nspans - (size_t)rej;
			p->st.batches++;
			p->st.bytes += len;
			p->st.raw_bytes += b->len;
			free(z);
			return 0;
		}
		double wait = -1;
		if (!e) {
			char txt[160];
			body_text(&o, txt, sizeof txt);
			snprintf(why, sizeof why, "HTTP %d %.60s%s%s", o.status, o.reason,
				 txt[0] ? ": " : "", txt);
			if (!retryable(o.status)) {
				set_err(p, "%.200s refused %zu spans: %s", p->o.url, b->nspans, why);
				p->st.refused++;
				free(z);
				return 0;
			}
			wait = o.retry_after;
		}
		if (attempt >= p->o.retries) {
			set_err(p, "%.200s after %d retries: %s", p->o.url, attempt, why);
			free(z);
			return -1;
		}
		if (wait < 0) {
			/* 0.5 s, 1 s, 2 s ... at most 30 s, less up to 20% */
			wait = 0.5 * (double)(1u << (attempt < 6 ? attempt : 6));
			if (wait > 30)
				wait = 30;
			wait *= 1.0 - 0.2 * (rand_r(&p->seed) / (RAND_MAX + 1.0));
		}
		if (now() + wait >= p->deadline) {
			set_err(p, "%.200s: the time bound (%.0f s) ran out while retrying (%s; next try in %.1f s)",
				p->o.url, p->o.timeout, why, wait);
			free(z);
			return -1;
		}
		nap(wait);
		p->st.retries++;
	}
}

static void *sender(void *arg)
{
	struct otlp_push *p = arg;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (!p->qn && !p->closing && !p->ended)
			pthread_cond_wait(&p->nonempty, &p->mu);
		if (p->ended || !p->qn) {
			pthread_mutex_unlock(&p->mu);
			break;
		}
		struct batch b = p->q[p->qhead];
		p->qhead = (p->qhead + 1) % OTLP_PUSH_QUEUE;
		p->qn--;
		pthread_cond_signal(&p->room);
		pthread_mutex_unlock(&p->mu);
		int r = deliver(p, &b);
		free(b.body);
		if (r < 0) {
			pthread_mutex_lock(&p->mu);
			p->ended = 1;
			pthread_cond_broadcast(&p->room);
			pthread_mutex_unlock(&p->mu);
			break;
		}
	}
	conn_close(p);
	return NULL;
}

/* The client's TLS settings: TLS 1.2 or later, the server verified
 * against the system's CAs or OPTS->ca. */
static int tls_ctx(struct otlp_push *p, char *err, size_t len)
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
			snprintf(err, len, "--otlp-ca %s: %s (give a file of PEM certificates)",
				 p->o.ca, tls_why("cannot be read"));
			return -1;
		}
	} else if (SSL_CTX_set_default_verify_paths(p->ctx) != 1) {
		snprintf(err, len, "TLS: the system's CA certificates: %s",
			 tls_why("cannot be loaded"));
		return -1;
	}
	return 0;
}

static void push_free(struct otlp_push *p)
{
	if (p->ctx)
		SSL_CTX_free(p->ctx);
	pthread_mutex_destroy(&p->err_mu);
	free(p->host);
	free(p->port);
	free(p->path);
	free(p->hosthdr);
	free(p->head);
	free(p);
}

struct otlp_push *otlp_push_start(const struct otlp_push_opts *o, char *err,
				  size_t len)
{
	struct otlp_push *p = calloc(1, sizeof *p);
	if (!p) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	p->o = *o;
	p->fd = -1;
	pthread_mutex_init(&p->err_mu, NULL);
	p->t0 = now();
	p->deadline = p->t0 + o->timeout;
	p->seed = (unsigned)getpid() ^ (unsigned)time(NULL);
	if (parse_url(o->url, &p->host, &p->port, &p->path, &p->tls, err, len) < 0) {
		push_free(p);
		return NULL;
	}
	if (p->tls && tls_ctx(p, err, len) < 0) {
		push_free(p);
		return NULL;
	}
	int v6 = strchr(p->host, ':') != NULL;
	size_t hl = strlen(p->host) + strlen(p->port) + 4;
	p->hosthdr = malloc(hl);
	if (p->hosthdr) {
		snprintf(p->hosthdr, hl, v6 ? "[%s]" : "%s", p->host);
		if (strcmp(p->port, "80")) {
			size_t n = strlen(p->hosthdr);
			snprintf(p->hosthdr + n, hl - n, ":%s", p->port);
		}
	}
	if (!p->hosthdr || make_head(p) < 0) {
		snprintf(err, len, "out of memory");
		push_free(p);
		return NULL;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->nonempty, NULL);
	pthread_cond_init(&p->room, NULL);
	int e = pthread_create(&p->thread, NULL, sender, p);
	if (e) {
		snprintf(err, len, "cannot start the sender thread: %s", strerror(e));
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->nonempty);
		pthread_cond_destroy(&p->room);
		push_free(p);
		return NULL;
	}
	return p;
}

int otlp_push_send(struct otlp_push *p, unsigned char *body, size_t len,
		   size_t nspans)
{
	pthread_mutex_lock(&p->mu);
	while (p->qn == OTLP_PUSH_QUEUE && !p->ended) {
		double l = p->deadline - now();
		if (l <= 0)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		double t = (double)ts.tv_sec + ts.tv_nsec / 1e9 + (l < 1 ? l : 1);
		ts.tv_sec = (time_t)t;
		ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
		pthread_cond_timedwait(&p->room, &p->mu, &ts);
	}
	if (p->ended || p->qn == OTLP_PUSH_QUEUE) {
		if (!p->ended)
			set_err(p, "the time bound (%.0f s) ran out with %d requests queued",
				p->o.timeout, OTLP_PUSH_QUEUE);
		p->ended = 1;
		pthread_mutex_unlock(&p->mu);
		free(body);
		return -1;
	}
	struct batch *b = &p->q[(p->qhead + p->qn) % OTLP_PUSH_QUEUE];
	b->body = body;
	b->len = len;
	b->nspans = nspans;
	p->qn++;
	pthread_cond_signal(&p->nonempty);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

int otlp_push_end(struct otlp_push *p, struct otlp_push_stats *st, char *err,
		  size_t len)
{
	pthread_mutex_lock(&p->mu);
	p->closing = 1;
	pthread_cond_broadcast(&p->nonempty);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	while (p->qn) {
		free(p->q[p->qhead].body);
		p->qhead = (p->qhead + 1) % OTLP_PUSH_QUEUE;
		p->qn--;
	}
	p->st.secs = now() - p->t0;
	*st = p->st;
	int r = p->err[0] ? -1 : 0;
	if (r)
		snprintf(err, len, "%s", p->err);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->nonempty);
	pthread_cond_destroy(&p->room);
	push_free(p);
	return r;
}
