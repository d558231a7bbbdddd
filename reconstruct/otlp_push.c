/*
 * otlp_push.c - OTLP/HTTP export: a bounded queue and a sender thread
 * posting with the shared HTTP client (http_client.c: TCP or TLS, gzip,
 * retries; see otlp_push.h).
 *
 * OTLP/HTTP (opentelemetry-proto, docs/specification.md): POST the
 * ExportTraceServiceRequest to /v1/traces as application/x-protobuf or
 * application/json; 2xx is success; 429, 502, 503 and 504 are retryable,
 * with Retry-After when the server sends it; any other status is not.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http_client.h"
#include "otlp_push.h"

struct batch {
	unsigned char *body;
	size_t         len, nspans;
};

struct otlp_push {
	struct otlp_push_opts o;
	struct http_client *h;
	double         t0, deadline;
	/* the queue */
	pthread_mutex_t mu;
	pthread_cond_t  nonempty, room;
	struct batch    q[OTLP_PUSH_QUEUE];
	size_t          qhead, qn;
	int             closing, ended;
	pthread_t       thread;
	struct otlp_push_stats st;
	pthread_mutex_t err_mu;                /* both threads may fail */
	char            err[700];
};


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

static void describe(const struct http_resp *o, char *out, size_t len);

/* The HTTP client's settings for O. */
static struct http_opts http_opts(const struct otlp_push_opts *o)
{
	struct http_opts h = {
		.url = o->url, .default_path = "/v1/traces", .example_port = "4318",
		.ca = o->ca, .ca_option = "--otlp-ca",
		.header_option = "--otlp-header",
		.content_type = o->json ? "application/json" : "application/x-protobuf",
		.gzip = o->gzip, .headers = o->headers, .nheaders = o->nheaders,
		.timeout = o->timeout, .io_max = OTLP_PUSH_IO_MAX,
		.retries = o->retries, .describe = describe,
	};
	return h;
}

int otlp_push_check_url(const char *url, char *err, size_t len)
{
	struct otlp_push_opts o = { .url = url };
	struct http_opts h = http_opts(&o);
	return http_check_url(&h, err, len);
}

int otlp_push_check_header(const char *h, char *err, size_t len)
{
	return http_check_header(h, "--otlp-header", err, len);
}

/* ---- answers ------------------------------------------------------------------- */


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

/* What the body of a refusal says: google.rpc.Status.message (field 2)
 * of a protobuf body, or the text. */
static void describe(const struct http_resp *o, char *out, size_t len)
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
	http_printable(b, n, out, len);
}

/* The spans a 2xx answer says it rejected (OTLP partial success:
 * ExportTraceServiceResponse.partial_success = 1 { int64 rejected_spans
 * = 1; string error_message = 2; }, or partialSuccess.rejectedSpans and
 * errorMessage in JSON), with the message in MSG; 0 when none. */
static int64_t rejected(const struct http_resp *o, char *msg, size_t len)
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
					http_printable(d2, (size_t)v2, msg, len);
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
				http_printable((const unsigned char *)p + 1, (size_t)(e - p - 1),
					  msg, len);
		}
	}
	return r;
}


/* ---- delivery -------------------------------------------------------------------- */

/* Deliver one batch.  0: delivered or refused for good (counted); -1:
 * the push ends (out of retries or of time; P->err set). */
static int deliver(struct otlp_push *p, const struct batch *b)
{
	size_t len = b->len;
	unsigned char *z = NULL;
	const unsigned char *body = b->body;
	char why[700];
	struct http_resp o;

	if (p->o.gzip) {
		z = http_gzip(b->body, b->len, &len);
		if (!z) {
			set_err(p, "gzip: out of memory");
			return -1;
		}
		body = z;
	}
	int e = http_post(p->h, NULL, body, len, &o, &p->st.retries, why, sizeof why);
	free(z);
	if (e < 0) {
		set_err(p, "%s", why);
		return -1;
	}
	if (o.status < 200 || o.status >= 300) {
		http_resp_text(p->h, &o, why, sizeof why);
		set_err(p, "%.200s refused %zu spans: %s", p->o.url, b->nspans, why);
		p->st.refused++;
		return 0;
	}
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
	return 0;
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
	return NULL;
}

static void push_free(struct otlp_push *p)
{
	http_close(p->h);
	pthread_mutex_destroy(&p->err_mu);
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
	pthread_mutex_init(&p->err_mu, NULL);
	p->t0 = http_now();
	p->deadline = p->t0 + o->timeout;
	struct http_opts h = http_opts(o);
	p->h = http_open(&h, err, len);
	if (!p->h) {
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
		double l = p->deadline - http_now();
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
	p->st.secs = http_now() - p->t0;
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