/*
 * otlp_push.h - sending OTLP trace documents to a collector over OTLP/HTTP
 * (POST /v1/traces, HTTP/1.1 over TCP or TLS with OpenSSL; see
 * docs/report.md, "OTLP push").
 *
 * The caller hands over finished documents (ExportTraceServiceRequest in
 * protobuf or OTLP/JSON, from otlp_wire.h); a sender thread compresses
 * them (gzip), posts them on a kept-alive connection and retries with
 * exponential backoff on 429, 502, 503, 504 and on connection errors,
 * honouring Retry-After.  The documents wait in a bounded queue; the
 * whole push has a time bound.  A document the receiver refuses for good
 * (another status) is dropped and the push goes on; one still failing
 * after its retries, or the time bound, ends the push: what was not
 * delivered is counted as dropped.
 */
#ifndef RC_OTLP_PUSH_H
#define RC_OTLP_PUSH_H

#include <stddef.h>
#include <stdint.h>

#define OTLP_PUSH_BATCH    512     /* spans per request (--otlp-batch) */
#define OTLP_PUSH_TIMEOUT  60.0    /* seconds for the whole push */
#define OTLP_PUSH_RETRIES  5       /* retries of one request */
#define OTLP_PUSH_QUEUE    8       /* requests waiting to be sent */
#define OTLP_PUSH_IO_MAX   30.0    /* seconds one attempt may take */

struct otlp_push_opts {
	const char         *url;       /* http[s]://HOST[:PORT][/PATH] */
	const char         *ca;        /* https: CA file (NULL: the system's) */
	int                 json;      /* OTLP/JSON instead of protobuf */
	int                 gzip;      /* Content-Encoding: gzip */
	const char *const  *headers;   /* "Name: value" */
	size_t              nheaders;
	size_t              batch;     /* spans per request */
	double              timeout;   /* seconds for the whole push */
	int                 retries;   /* retries of one request */
};

struct otlp_push_stats {
	uint64_t spans;          /* delivered (2xx) */
	uint64_t batches;        /* requests delivered */
	uint64_t retries;        /* attempts after the first, all requests */
	uint64_t refused;        /* requests refused for good (dropped) */
	uint64_t rejected;       /* spans a 2xx answer said it rejected */
	uint64_t bytes;          /* request bodies sent, as on the wire */
	uint64_t raw_bytes;      /* the same before compression */
	double   secs;           /* from start to end */
};

struct otlp_push;

/*
 * Check URL: http:// or https://, a host, an optional port (default 80 or
 * 443), an optional path (default /v1/traces).
 * Returns 0, or -1 with a one-line reason in ERR.
 */
int otlp_push_check_url(const char *url, char *err, size_t len);
/* Check a "Name: value" header (a token name, no line breaks, not one the
 * client sets itself).  0 or -1 with ERR. */
int otlp_push_check_header(const char *h, char *err, size_t len);

/* Start the sender thread.  NULL with ERR on a bad option or no memory. */
struct otlp_push *otlp_push_start(const struct otlp_push_opts *o, char *err,
				  size_t len);
/*
 * Queue BODY (LEN bytes, NSPANS spans; malloc'd, now owned by the push),
 * waiting for room up to the time bound.  Returns 0, or -1 once the push
 * has ended (the receiver is gone or the time is up): stop producing.
 */
int otlp_push_send(struct otlp_push *p, unsigned char *body, size_t len,
		   size_t nspans);
/*
 * Wait for the queue to drain (within the time bound), stop the thread,
 * fill ST and free P.  Returns 0, or -1 with the first error in ERR
 * (something was refused, ran out of retries or of time).
 */
int otlp_push_end(struct otlp_push *p, struct otlp_push_stats *st, char *err,
		  size_t len);

#endif /* RC_OTLP_PUSH_H */
