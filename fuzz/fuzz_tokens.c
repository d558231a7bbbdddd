/*
 * fuzz_tokens.c - libFuzzer target for the content tokens of
 * bp-reconstruct (reconstruct/tokens.c): the values of a hostile target
 * (URL, FastCGI, SQL text of PostgreSQL and MySQL, a line, a Redis
 * command, a bound-parameters attribute).  The first byte picks the kind,
 * the rest is the target, copied flush against the end of a heap block
 * so that ASan catches any read past it.  Asserts that no more values
 * come back than asked for, and that the same input gives the same
 * values (no state leaks between calls).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "btrace/proto.h"
#include "tokens.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned protos[] = {
		BT_PROTO_HTTP, BT_PROTO_FASTCGI, BT_PROTO_PGSQL, BT_PROTO_LINE,
		BT_PROTO_MYSQL, BT_PROTO_REDIS, BT_PROTO_NONE /* params */,
		BT_PROTO_HTTP,
	};
	uint64_t a[16], b[16];
	unsigned proto, max;
	char *s;
	int na, nb;

	if (size < 1)
		return 0;
	proto = protos[data[0] & 7];
	max = (data[0] >> 3) & 15;
	s = malloc(size - 1 ? size - 1 : 1);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	if (proto == BT_PROTO_NONE) {
		na = rc_tok_param_values(s, size - 1, a, max);
		nb = rc_tok_param_values(s, size - 1, b, max);
	} else {
		na = rc_tok_values(proto, s, size - 1, a, max);
		nb = rc_tok_values(proto, s, size - 1, b, max);
	}
	if (na > (int)max || na != nb || (na > 0 && memcmp(a, b, (size_t)na * sizeof a[0])))
		abort();
	free(s);
	return 0;
}
