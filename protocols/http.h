/*
 * http.h - what the files of the HTTP/1.x processor share: http.c (the
 * parser, bt_proto_http) and http_sniff.c.
 */
#ifndef BT_PROTOCOLS_HTTP_H
#define BT_PROTOCOLS_HTTP_H

#include <stddef.h>
#include <stdint.h>

/*
 * bt_http_sniff - sniff() of bt_proto_http: the first N bytes P of a
 * channel in direction DIR (ROLE of its end) begin a request line of a
 * known method, or a status line: BT_SNIFF_YES; any prefix of one is
 * BT_SNIFF_MAYBE; else BT_SNIFF_NO.
 */
int bt_http_sniff(int dir, int role, const uint8_t *p, size_t n);

#endif /* BT_PROTOCOLS_HTTP_H */
