/*
 * otlp_wire.c - OTLP trace documents as OTLP/JSON or protobuf (see
 * otlp_wire.h).
 *
 * Protobuf: a nested message is written in place and, when it closes, its
 * bytes move up to make room for its tag and length (at most 15 bytes);
 * messages nest five deep at most, so a byte moves at most five times.
 * Field numbers are the ones of opentelemetry-proto, named below.
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "otlp_wire.h"

/* field numbers (opentelemetry-proto) */
enum {
	F_REQ_RESOURCE_SPANS = 1,       /* ExportTraceServiceRequest, TracesData */
	F_RS_RESOURCE = 1, F_RS_SCOPE_SPANS = 2,
	F_RES_ATTRIBUTES = 1,
	F_SS_SCOPE = 1, F_SS_SPANS = 2,
	F_SCOPE_NAME = 1, F_SCOPE_VERSION = 2,
	F_SPAN_TRACE_ID = 1, F_SPAN_SPAN_ID = 2, F_SPAN_PARENT = 4,
	F_SPAN_NAME = 5, F_SPAN_KIND = 6, F_SPAN_START = 7, F_SPAN_END = 8,
	F_SPAN_ATTRIBUTES = 9, F_SPAN_EVENTS = 11, F_SPAN_DROPPED_EVENTS = 12,
	F_SPAN_STATUS = 15,
	F_EVENT_TIME = 1, F_EVENT_NAME = 2, F_EVENT_ATTRIBUTES = 3,
	F_STATUS_MESSAGE = 2, F_STATUS_CODE = 3,
	F_KV_KEY = 1, F_KV_VALUE = 2,
	F_ANY_STRING = 1, F_ANY_BOOL = 2, F_ANY_INT = 3,
};
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };

/* ---- the buffer ------------------------------------------------------------ */

static int grow(struct ow *w, size_t n)
{
	if (w->oom)
		return -1;
	if (w->len + n <= w->cap)
		return 0;
	size_t cap = w->cap ? w->cap : 4096;
	while (cap < w->len + n)
		cap *= 2;
	unsigned char *p = realloc(w->p, cap);
	if (!p) {
		w->oom = 1;
		return -1;
	}
	w->p = p;
	w->cap = cap;
	return 0;
}

static void put(struct ow *w, const void *s, size_t n)
{
	if (grow(w, n) < 0)
		return;
	memcpy(w->p + w->len, s, n);
	w->len += n;
}

static void puts_(struct ow *w, const char *s)
{
	put(w, s, strlen(s));
}

static void putf(struct ow *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void putf(struct ow *w, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n > 0)
		put(w, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

void ow_init(struct ow *w, enum ow_fmt fmt)
{
	memset(w, 0, sizeof *w);
	w->fmt = fmt;
}

void ow_free(struct ow *w)
{
	free(w->p);
	memset(w, 0, sizeof *w);
}

void ow_reset(struct ow *w)
{
	w->len = 0;
	w->oom = 0;
	w->depth = 0;
	w->in_doc = w->in_res = w->nres = 0;
	w->nspans = 0;
	w->nevents = 0;
}

unsigned char *ow_take(struct ow *w, size_t *len)
{
	unsigned char *p = w->oom ? NULL : w->p;
	*len = w->len;
	if (!p)
		free(w->p);
	w->p = NULL;
	w->cap = 0;
	ow_reset(w);
	return p;
}

int ow_failed(const struct ow *w)
{
	return w->oom;
}

/* ---- protobuf ------------------------------------------------------------------ */

static size_t varint_enc(unsigned char *b, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		b[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	b[n++] = (unsigned char)v;
	return n;
}

static void pb_varint(struct ow *w, uint64_t v)
{
	unsigned char b[10];
	put(w, b, varint_enc(b, v));
}

static void pb_tag(struct ow *w, unsigned field, unsigned wt)
{
	pb_varint(w, (uint64_t)field << 3 | wt);
}

static void pb_uint(struct ow *w, unsigned field, uint64_t v)
{
	pb_tag(w, field, WT_VARINT);
	pb_varint(w, v);
}

static void pb_fixed64(struct ow *w, unsigned field, uint64_t v)
{
	unsigned char b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	pb_tag(w, field, WT_I64);
	put(w, b, 8);
}

static void pb_bytes(struct ow *w, unsigned field, const void *s, size_t n)
{
	pb_tag(w, field, WT_LEN);
	pb_varint(w, n);
	put(w, s, n);
}

/* Valid UTF-8 of S[0..N) into W; a byte that is not becomes U+FFFD. */
static void utf8_put(struct ow *w, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0;
	while (i < n) {
		size_t l = export_utf8_len(p + i);
		if (l && i + l <= n) {
			i += l;
			continue;
		}
		put(w, p + run, i - run);
		put(w, "\xef\xbf\xbd", 3);
		i++;
		run = i;
	}
	put(w, p + run, n - run);
}

/* Is S[0..N) valid UTF-8 already? */
static int utf8_ok(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t l = export_utf8_len(p + i);
		if (!l || i + l > n)
			return 0;
		i += l;
	}
	return 1;
}

static void pb_string(struct ow *w, unsigned field, const char *s, size_t n)
{
	if (utf8_ok(s, n)) {
		pb_bytes(w, field, s, n);
		return;
	}
	/* the replacement characters make it longer: write, then frame */
	size_t start = w->len;
	utf8_put(w, s, n);
	if (w->oom)
		return;
	size_t body = w->len - start;
	unsigned char h[15];
	size_t hl = varint_enc(h, (uint64_t)field << 3 | WT_LEN);
	hl += varint_enc(h + hl, body);
	if (grow(w, hl) < 0)
		return;
	memmove(w->p + start + hl, w->p + start, body);
	memcpy(w->p + start, h, hl);
	w->len += hl;
}

/* Open a nested message: its bytes start here. */
static void pb_open(struct ow *w)
{
	if (w->depth < (int)(sizeof w->open / sizeof *w->open))
		w->open[w->depth] = w->len;
	else
		w->oom = 1;          /* cannot happen: OTLP nests five deep */
	w->depth++;
}

/* Close the innermost message as field FIELD of its parent. */
static void pb_close(struct ow *w, unsigned field)
{
	if (w->depth <= 0)
		return;
	w->depth--;
	if (w->oom)
		return;
	size_t start = w->open[w->depth], body = w->len - start;
	unsigned char h[15];
	size_t hl = varint_enc(h, (uint64_t)field << 3 | WT_LEN);
	hl += varint_enc(h + hl, body);
	if (grow(w, hl) < 0)
		return;
	memmove(w->p + start + hl, w->p + start, body);
	memcpy(w->p + start, h, hl);
	w->len += hl;
}

static void be64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (56 - 8 * i));
}

/* ---- JSON ------------------------------------------------------------------------ */

/* S[0..N) as a JSON string, escaped as export_json_str does. */
static void json_str(struct ow *w, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	put(w, "\"", 1);
	while (i < n) {
		unsigned c = p[i];
		size_t l = export_utf8_len(p + i);
		if (l && i + l > n)
			l = 0;
		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };
			put(w, e, 2);
		} else if (c == '\n') {
			puts_(w, "\\n");
		} else if (c == '\t') {
			puts_(w, "\\t");
		} else if (c == '\r') {
			puts_(w, "\\r");
		} else if (c < 0x20 || c == 0x7f) {
			putf(w, "\\u%04x", c);
		} else if (c == '<') {
			puts_(w, "\\u003c");
		} else if (!l) {
			puts_(w, "\\ufffd");
		} else {
			put(w, p + i, l);
		}
		i += l ? l : 1;
	}
	put(w, "\"", 1);
}

static void json_sep(struct ow *w)
{
	if (!w->first)
		put(w, ",", 1);
	w->first = 0;
}

/* ---- documents ------------------------------------------------------------------ */

void ow_doc_begin(struct ow *w)
{
	if (w->fmt == OW_JSON)
		puts_(w, "{\"resourceSpans\":[");
	w->in_doc = 1;
	w->in_res = 0;
	w->nres = 0;
}

static void res_end(struct ow *w)
{
	if (!w->in_res)
		return;
	if (w->fmt == OW_JSON) {
		puts_(w, "]}]}");
	} else {
		pb_close(w, F_RS_SCOPE_SPANS);
		pb_close(w, F_REQ_RESOURCE_SPANS);
	}
	w->in_res = 0;
}

void ow_doc_end(struct ow *w)
{
	res_end(w);
	if (w->fmt == OW_JSON)
		puts_(w, "]}");
	w->in_doc = 0;
}

void ow_res_begin(struct ow *w)
{
	res_end(w);
	if (w->fmt == OW_JSON) {
		if (w->nres)
			put(w, ",", 1);
		puts_(w, "{\"resource\":{\"attributes\":[");
		w->first = 1;
	} else {
		pb_open(w);                          /* ResourceSpans */
		pb_open(w);                          /* Resource */
		w->attr_field = F_RES_ATTRIBUTES;
	}
	w->in_res = 1;
	w->nres++;
}

void ow_res_spans(struct ow *w, const char *name, const char *version)
{
	if (w->fmt == OW_JSON) {
		puts_(w, "]},\"scopeSpans\":[{\"scope\":{\"name\":");
		json_str(w, name, strlen(name));
		puts_(w, ",\"version\":");
		json_str(w, version, strlen(version));
		puts_(w, "},\"spans\":[");
		w->first = 1;
	} else {
		pb_close(w, F_RS_RESOURCE);
		pb_open(w);                          /* ScopeSpans */
		pb_open(w);                          /* InstrumentationScope */
		pb_string(w, F_SCOPE_NAME, name, strlen(name));
		pb_string(w, F_SCOPE_VERSION, version, strlen(version));
		pb_close(w, F_SS_SCOPE);
	}
}

void ow_span_begin(struct ow *w, const uint8_t trace[16], uint64_t span,
		   uint64_t parent, const char *name, int kind,
		   int64_t start_ns, int64_t end_ns)
{
	w->nevents = 0;
	if (w->fmt == OW_JSON) {
		json_sep(w);
		puts_(w, "{\"traceId\":\"");
		for (int i = 0; i < 16; i++)
			putf(w, "%02x", trace[i]);
		putf(w, "\",\"spanId\":\"%016" PRIx64 "\"", span);
		if (parent)
			putf(w, ",\"parentSpanId\":\"%016" PRIx64 "\"", parent);
		puts_(w, ",\"name\":");
		json_str(w, name, strlen(name));
		putf(w, ",\"kind\":%d,\"startTimeUnixNano\":\"%" PRId64 "\",\"endTimeUnixNano\":\"%" PRId64 "\",\"attributes\":[",
		     kind, start_ns, end_ns);
		w->first = 1;
	} else {
		uint8_t b[8];
		pb_open(w);                          /* Span */
		pb_bytes(w, F_SPAN_TRACE_ID, trace, 16);
		be64(b, span);
		pb_bytes(w, F_SPAN_SPAN_ID, b, 8);
		if (parent) {
			be64(b, parent);
			pb_bytes(w, F_SPAN_PARENT, b, 8);
		}
		pb_string(w, F_SPAN_NAME, name, strlen(name));
		pb_uint(w, F_SPAN_KIND, (uint64_t)kind);
		pb_fixed64(w, F_SPAN_START, (uint64_t)start_ns);
		pb_fixed64(w, F_SPAN_END, (uint64_t)end_ns);
		w->attr_field = F_SPAN_ATTRIBUTES;
	}
	w->nspans++;
}

void ow_span_attrs_end(struct ow *w)
{
	if (w->fmt == OW_JSON)
		put(w, "]", 1);
}

void ow_event_begin(struct ow *w, int64_t ts_ns, const char *name)
{
	if (w->fmt == OW_JSON) {
		puts_(w, w->nevents ? "," : ",\"events\":[");
		putf(w, "{\"timeUnixNano\":\"%" PRId64 "\",\"name\":", ts_ns);
		json_str(w, name, strlen(name));
		puts_(w, ",\"attributes\":[");
		w->first = 1;
	} else {
		pb_open(w);                          /* Event */
		pb_fixed64(w, F_EVENT_TIME, (uint64_t)ts_ns);
		pb_string(w, F_EVENT_NAME, name, strlen(name));
		w->attr_field = F_EVENT_ATTRIBUTES;
	}
	w->nevents++;
}

void ow_event_end(struct ow *w)
{
	if (w->fmt == OW_JSON)
		puts_(w, "]}");
	else
		pb_close(w, F_SPAN_EVENTS);
}

void ow_span_end(struct ow *w, unsigned dropped_events, const char *msg)
{
	if (w->fmt == OW_JSON) {
		if (w->nevents)
			put(w, "]", 1);
		if (dropped_events)
			putf(w, ",\"droppedEventsCount\":%u", dropped_events);
		if (msg) {
			puts_(w, ",\"status\":{\"code\":2,\"message\":");
			json_str(w, msg, strlen(msg));
			put(w, "}", 1);
		}
		put(w, "}", 1);
		w->first = 0;
	} else {
		if (dropped_events)
			pb_uint(w, F_SPAN_DROPPED_EVENTS, dropped_events);
		if (msg) {
			pb_open(w);                  /* Status */
			pb_string(w, F_STATUS_MESSAGE, msg, strlen(msg));
			pb_uint(w, F_STATUS_CODE, OW_STATUS_ERROR);
			pb_close(w, F_SPAN_STATUS);
		}
		pb_close(w, F_SS_SPANS);
	}
}

/* ---- attributes ----------------------------------------------------------------- */

static void kv_begin(struct ow *w, const char *k)
{
	if (w->fmt == OW_JSON) {
		json_sep(w);
		puts_(w, "{\"key\":");
		json_str(w, k, strlen(k));
		puts_(w, ",\"value\":{");
	} else {
		pb_open(w);                          /* KeyValue */
		pb_string(w, F_KV_KEY, k, strlen(k));
		pb_open(w);                          /* AnyValue */
	}
}

static void kv_end(struct ow *w)
{
	if (w->fmt == OW_JSON) {
		puts_(w, "}}");
	} else {
		pb_close(w, F_KV_VALUE);
		pb_close(w, w->attr_field);
	}
}

void ow_attr_str(struct ow *w, const char *k, const char *v, size_t n)
{
	kv_begin(w, k);
	if (w->fmt == OW_JSON) {
		puts_(w, "\"stringValue\":");
		json_str(w, v, n);
	} else {
		pb_string(w, F_ANY_STRING, v, n);
	}
	kv_end(w);
}

void ow_attr_int(struct ow *w, const char *k, int64_t v)
{
	kv_begin(w, k);
	if (w->fmt == OW_JSON)
		putf(w, "\"intValue\":\"%" PRId64 "\"", v);
	else
		pb_uint(w, F_ANY_INT, (uint64_t)v);
	kv_end(w);
}

void ow_attr_bool(struct ow *w, const char *k, int v)
{
	kv_begin(w, k);
	if (w->fmt == OW_JSON)
		puts_(w, v ? "\"boolValue\":true" : "\"boolValue\":false");
	else
		pb_uint(w, F_ANY_BOOL, v ? 1 : 0);
	kv_end(w);
}
