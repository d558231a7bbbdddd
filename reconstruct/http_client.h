/*
 * http_client.h - the HTTP/1.1 client the network exports share (the
 * OTLP push, otlp_push.c; the ClickHouse sink, export_clickhouse.c):
 * POST over TCP or TLS (OpenSSL), one kept-alive connection, retries with
 * exponential backoff, a time bound, gzip.
 *
 * A client belongs to one thread at a time.  Every wait is bounded: one
 * attempt by OPTS->io_max, the whole life of the client by
 * OPTS->timeout.  429, 502, 503, 504 and connection errors are retried
 * (after the server's Retry-After when it sends one, else 0.5 s, 1 s,
 * 2 s ... at most 30 s, less up to 20%); any other answer is the
 * caller's to judge; a server certificate that is not trusted ends at
 * once.
 */
#ifndef RC_HTTP_CLIENT_H
#define RC_HTTP_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#define HTTP_KEEP_MAX 8192           /* response body kept (messages, small answers) */

struct http_resp {
	int    status;
	int    close;                    /* the server closes the connection */
	double retry_after;              /* seconds, or -1 */
	int    proto_body;               /* the body is protobuf */
	char   reason[64];
	char   body[HTTP_KEEP_MAX + 1];  /* its first bytes, NUL-terminated */
	size_t nbody;
};

struct http_opts {
	const char         *url;           /* http[s]://HOST[:PORT][/PATH][?Q] */
	const char         *shown;         /* the URL in messages (NULL: url) */
	const char         *default_path;  /* when the URL has none */
	const char         *example_port;  /* for the message on a bad URL */
	const char         *ca;            /* https: CA file (NULL: the system's) */
	const char         *ca_option;     /* its option, for messages */
	const char         *header_option; /* the header option, for messages */
	int                 userinfo;      /* USER:PASSWORD@ allowed (Basic) */
	const char         *content_type;
	int                 gzip;          /* Content-Encoding: gzip */
	const char *const  *headers;       /* "Name: value" */
	size_t              nheaders;
	double              timeout;       /* seconds for the client's life */
	double              io_max;        /* seconds for one attempt */
	int                 retries;       /* retries of one request */
	/* What the body of a refusal says, on one line (NULL: its printable
	 * text). */
	void (*describe)(const struct http_resp *o, char *out, size_t len);
};

struct http_client;

/* Monotonic seconds. */
double http_now(void);

/*
 * Check URL as OPTS says (scheme, host, port 1-65535, path; USER:PASSWORD@
 * only when OPTS->userinfo).  0, or -1 with a one-line reason in ERR.
 */
int http_check_url(const struct http_opts *o, char *err, size_t len);
/* Check a "Name: value" header given with option OPTION (a token name,
 * no line breaks, not one the client sets itself).  0 or -1 with ERR. */
int http_check_header(const char *h, const char *option, char *err,
		      size_t len);

/* A client for O (copied; the strings must outlive it); its time bound
 * starts now.  NULL with ERR on a bad option or no memory. */
struct http_client *http_open(const struct http_opts *o, char *err,
			      size_t len);
/* Close the connection and free C (NULL: nothing). */
void http_close(struct http_client *c);

/* The path and query the URL named (or OPTS->default_path). */
const char *http_path(const struct http_client *c);
/* Seconds left of C's time bound. */
double http_left(const struct http_client *c);

/*
 * POST BODY (LEN bytes, already compressed when OPTS->gzip) to PATH
 * (NULL: the URL's), retrying as the header says.  Returns 0 with the
 * answer in O (2xx, or a status that is not retried: the caller's to
 * judge), or -1 with ERR ("URL after N retries: why", the time bound, an
 * untrusted certificate).  *RETRIES grows by the attempts after the
 * first.
 */
int http_post(struct http_client *c, const char *path, const void *body,
	      size_t len, struct http_resp *o, uint64_t *retries, char *err,
	      size_t elen);

/* "HTTP 503 Service Unavailable: what the body says" into OUT. */
void http_resp_text(const struct http_client *c, const struct http_resp *o,
		    char *out, size_t len);

/* S[0..N) printable on one line into OUT (other bytes as spaces, at most
 * 200 characters, no trailing spaces). */
void http_printable(const void *s, size_t n, char *out, size_t len);

/* IN gzip'd (malloc'd, *OUT bytes), or NULL when out of memory. */
unsigned char *http_gzip(const void *in, size_t len, size_t *out);

#endif /* RC_HTTP_CLIENT_H */
