/*
 * http_sniff.c - does a channel speak HTTP/1.x (http.h)?  The parser is
 * http.c.
 */
#include "config.h"

#include <string.h>

#include "btrace/proto.h"
#include "http.h"

/* See http.h. */
int bt_http_sniff(int dir, int role, const uint8_t *p, size_t n)
{
	static const char *const pre[] = {
		"GET ", "HEAD ", "POST ", "PUT ", "DELETE ", "OPTIONS ",
		"PATCH ", "CONNECT ", "TRACE ", "PROPFIND ", "PROPPATCH ",
		"MKCOL ", "COPY ", "MOVE ", "LOCK ", "UNLOCK ", "REPORT ",
		"HTTP/1.",
	};
	(void)dir; (void)role;
	int maybe = 0;
	for (unsigned i = 0; i < sizeof pre / sizeof pre[0]; i++) {
		size_t l = strlen(pre[i]);
		if (memcmp(p, pre[i], n < l ? n : l) != 0)
			continue;
		if (n < l) {
			maybe = 1;
			continue;
		}
		/* method SP then an origin, absolute, authority or * target */
		if (i + 1 < sizeof pre / sizeof pre[0] && n > l &&
		    p[l] <= ' ')
			continue;
		return BT_SNIFF_YES;
	}
	return maybe ? BT_SNIFF_MAYBE : BT_SNIFF_NO;
}
