/*
 * fuzz_grpc_proto.c - libFuzzer target for bp-reconstruct's .proto reader
 * (reconstruct/grpc.c, --grpc-proto) and its method patterns
 * (--grpc-unary).  The input is a hostile .proto text, copied flush
 * against the end of a heap block so that ASan catches any read past it.
 * Asserts what the reader promises: a count that matches the list, no
 * more unary methods than rpc declarations, every name a gRPC path
 * ("/PACKAGE.SERVICE/METHOD" or "/SERVICE/METHOD") that --grpc-unary
 * would take and that matches itself, an error message on failure, and
 * the same answer twice for the same text (no state leaks between calls).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void drop(char **list, int n)
{
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

/* Each name of LIST[0..N) is a pattern --grpc-unary takes, and matches
 * itself unless it holds a wildcard character. */
static void check_names(char **list, int n)
{
	char err[256];

	for (int i = 0; i < n; i++) {
		const char *name = list[i];

		if (!name || name[0] != '/' || !strchr(name + 1, '/'))
			abort();
		if (rc_grpc_pattern_check(name, err, sizeof err) != 0)
			abort();
		if (!strpbrk(name, "*?[\\") &&
		    !rc_grpc_unary_match((const char *const *)&list[i], 1, name))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char **a = NULL, **b = NULL;
	int na = 0, nb = 0, alla = 0, allb = 0, ra, rb;
	char err[512], err2[512];
	char *s;

	s = malloc(size ? size : 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	err[0] = err2[0] = '\0';
	ra = rc_grpc_proto_parse("fuzz.proto", s, size, &a, &na, &alla,
				 err, sizeof err);
	rb = rc_grpc_proto_parse("fuzz.proto", s, size, &b, &nb, &allb,
				 err2, sizeof err2);
	if (ra != rb || na != nb || alla != allb)
		abort();
	if (ra >= 0) {
		if (ra != na || na > alla)
			abort();
		for (int i = 0; i < na; i++)
			if (strcmp(a[i], b[i]))
				abort();
		check_names(a, na);
	} else if (ra == -EINVAL && (!err[0] || strcmp(err, err2))) {
		abort();
	}
	drop(a, na);
	drop(b, nb);

	/* The same bytes as a --grpc-unary pattern, NUL-terminated. */
	s = realloc(s, size + 1);
	if (s) {
		s[size] = '\0';
		if (rc_grpc_pattern_check(s, err, sizeof err) == 0) {
			const char *pat = s;

			(void)rc_grpc_unary_match(&pat, 1, "/tb.Svc/Get");
		}
	}
	free(s);
	return 0;
}
