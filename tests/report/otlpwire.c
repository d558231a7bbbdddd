/*
 * otlpwire.c - write one OTLP document with the edge cases of the encoder
 * (reconstruct/otlp_wire.c) twice, as protobuf into PB and as OTLP/JSON
 * into JSON, for push.sh to read back with protobufjs: bytes that are not
 * UTF-8 in names, keys and values, control characters, an empty string, a
 * 20,000-byte value (a three-byte length), negative and extreme
 * integers, false, two resources, events, a dropped-events count, an
 * error status, a span without a parent.
 *
 *   otlpwire PB JSON
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp_wire.h"

static void doc(struct ow *w, const char *big)
{
	static const uint8_t trace[16] = { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
		0xcd, 0xef, 0, 0, 0, 0, 0, 0, 0, 42 };
	ow_doc_begin(w);
	ow_res_begin(w);
	ow_attr_str(w, "service.name", "caf\xc3\xa9 \xff\xfe", 8);
	ow_attr_int(w, "process.pid", 4242);
	ow_res_spans(w, "borderpatrol", "0.1.0");
	ow_span_begin(w, trace, 0x8000000000000001ull, 0, "GET /a\xe2\x82", 2,
		      1700000000000000000ll, 1700000000123456789ll);
	ow_attr_str(w, "url.path", "/x?\"q\"\\\n\t\x01<", 11);
	ow_attr_str(w, "bad\xc0key", "v", 1);
	ow_attr_str(w, "big", big, strlen(big));
	ow_attr_str(w, "empty", "", 0);
	ow_attr_int(w, "neg", -5);
	ow_attr_int(w, "min", INT64_MIN);
	ow_attr_int(w, "max", INT64_MAX);
	ow_attr_bool(w, "no", 0);
	ow_attr_bool(w, "yes", 1);
	ow_span_attrs_end(w);
	ow_event_begin(w, 1700000000000000001ll, "file.open");
	ow_attr_str(w, "file.path", "/etc/\xed\xa0\x80", 8);
	ow_event_end(w);
	ow_event_begin(w, 1700000000000000002ll, "file.open");
	ow_event_end(w);
	ow_span_end(w, 3, "HTTP 500 \xf8");
	ow_span_begin(w, trace, 2, 0x8000000000000001ull, "q", 3, 5, 5);
	ow_span_attrs_end(w);
	ow_span_end(w, 0, NULL);
	ow_res_begin(w);
	ow_res_spans(w, "borderpatrol", "0.1.0");
	ow_span_begin(w, trace, 3, 2, "r", 3, 6, 7);
	ow_span_attrs_end(w);
	ow_span_end(w, 0, NULL);
	ow_doc_end(w);
}

int main(int argc, char **argv)
{
	static const enum ow_fmt fmts[2] = { OW_PROTO, OW_JSON };
	char *big = malloc(20001);
	if (argc != 3 || !big) {
		fprintf(stderr, "usage: otlpwire PB JSON\n");
		return 2;
	}
	for (int i = 0; i < 20000; i++)
		big[i] = (char)('a' + i % 26);
	big[20000] = 0;
	for (int i = 0; i < 2; i++) {
		struct ow w;
		size_t len;
		ow_init(&w, fmts[i]);
		doc(&w, big);
		if (w.nspans != 3 || ow_failed(&w)) {
			fprintf(stderr, "otlpwire: %zu spans, failed %d\n", w.nspans,
				ow_failed(&w));
			return 1;
		}
		unsigned char *p = ow_take(&w, &len);
		FILE *f = fopen(argv[1 + i], "w");
		if (!p || !f || fwrite(p, 1, len, f) != len || fclose(f)) {
			perror(argv[1 + i]);
			return 1;
		}
		free(p);
		ow_free(&w);
	}
	free(big);
	return 0;
}
