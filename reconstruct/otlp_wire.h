/*
 * otlp_wire.h - OTLP trace documents in either of their two encodings,
 * written into memory: the protobuf JSON mapping (OTLP/JSON, the --otlp
 * file and --otlp-json) and the protobuf binary encoding (OTLP/HTTP's
 * application/x-protobuf), both hand-encoded from the messages of
 * opentelemetry-proto (trace/v1/trace.proto, common/v1/common.proto,
 * resource/v1/resource.proto, collector/trace/v1/trace_service.proto).
 *
 * A document is a TracesData / ExportTraceServiceRequest (the same
 * message on the wire: repeated ResourceSpans resource_spans = 1): a
 * sequence of resources, each followed by its spans.  The caller says
 * what it writes in order (export_otlp.c holds the mapping from the
 * database); the writer keeps the nesting.  Strings are written as valid
 * UTF-8 (a byte that is not becomes U+FFFD), as proto3 strings must be.
 * Out of memory is sticky: ow_failed() says so once the document is done.
 */
#ifndef RC_OTLP_WIRE_H
#define RC_OTLP_WIRE_H

#include <stddef.h>
#include <stdint.h>

enum ow_fmt { OW_JSON, OW_PROTO };

struct ow {
	enum ow_fmt    fmt;
	unsigned char *p;            /* the document so far */
	size_t         len, cap;
	int            oom;
	int            first;        /* JSON: no comma before the next item */
	unsigned       attr_field;   /* proto: KeyValue field of the open message */
	size_t         open[8];      /* proto: starts of the open messages */
	int            depth;
	int            in_doc, in_res, nres;
	unsigned       nevents;      /* events of the open span */
	size_t         nspans;       /* spans in the document */
};

/* SpanKind and Status.code values (trace.proto). */
enum { OW_KIND_SERVER = 2, OW_KIND_CLIENT = 3, OW_STATUS_ERROR = 2 };

void ow_init(struct ow *w, enum ow_fmt fmt);
void ow_free(struct ow *w);
/* Forget the document (keep the memory). */
void ow_reset(struct ow *w);
/* Hand the finished document's bytes to the caller (free() them); W is
 * empty afterwards.  NULL when memory ran out. */
unsigned char *ow_take(struct ow *w, size_t *len);
int  ow_failed(const struct ow *w);

void ow_doc_begin(struct ow *w);
/* Close the open resource and the document. */
void ow_doc_end(struct ow *w);
/* A new ResourceSpans (closing the open one); its attributes follow. */
void ow_res_begin(struct ow *w);
/* After the resource's attributes: the scope NAME VERSION, spans follow. */
void ow_res_spans(struct ow *w, const char *name, const char *version);
/* A span; its attributes follow.  TRACE is 16 bytes; PARENT 0: none. */
void ow_span_begin(struct ow *w, const uint8_t trace[16], uint64_t span,
		   uint64_t parent, const char *name, int kind,
		   int64_t start_ns, int64_t end_ns);
/* After the span's attributes. */
void ow_span_attrs_end(struct ow *w);
/* An event of the open span; its attributes follow, then ow_event_end. */
void ow_event_begin(struct ow *w, int64_t ts_ns, const char *name);
void ow_event_end(struct ow *w);
/* After the events: how many were left out (0: none) and the status
 * (MSG NULL: unset), then the span is closed. */
void ow_span_end(struct ow *w, unsigned dropped_events, const char *msg);

/* Attributes of whatever is open (resource, span, event). */
void ow_attr_str(struct ow *w, const char *k, const char *v, size_t n);
void ow_attr_int(struct ow *w, const char *k, int64_t v);
void ow_attr_bool(struct ow *w, const char *k, int v);

#endif /* RC_OTLP_WIRE_H */
