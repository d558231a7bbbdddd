/*
 * fuzz_proto.c - libFuzzer target for one protocol processor, named at
 * build time by FUZZ_PROTO (bt_proto_http, ...): fuzz/fuzz-<name>.
 *
 * Input: byte 0 = role (bits 0-1; 3 reads as unknown), datagram transport
 * (bit 2), chunking seed (bits 3-7); then records: one byte (bit 0 the
 * direction, bit 1 the end of that direction) and, unless an end, a
 * big-endian 16-bit length and that many bytes (cut to what is left).
 * fuzz/mkseeds.py turns the captures of tests/proto into such inputs.
 *
 * Checks, beyond the sanitizers: the interface contract on every call
 * (consumed 1..n, a message or all bytes taken, attributes inside the
 * state or the bytes just fed, one message per datagram, nothing written
 * outside the fixed-size state, which ends at a PROT_NONE page and starts
 * after a canary: see replay_chunks), and the same messages when the same
 * stream is cut into other chunks (each direction's runs joined and re-cut
 * at pseudo-random points, the guard page then before the data).  Any
 * breach aborts with both logs.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_proto.h"

#ifndef FUZZ_PROTO
#error "build with -DFUZZ_PROTO=bt_proto_<name>"
#endif

#define MAX_CHUNKS 4096

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static uint8_t type[MAX_CHUNKS], t2[2 * MAX_CHUNKS + 2];
	static uint32_t len[MAX_CHUNKS], l2[2 * MAX_CHUNKS + 2];
	static const uint8_t *data[MAX_CHUNKS], *d2[2 * MAX_CHUNKS + 2];
	const struct bt_proto_ops *o = &FUZZ_PROTO;
	size_t nc = 0, pos = 1;
	char err[256];

	if (n < 1)
		return 0;
	int role = d[0] & 3, tr = d[0] >> 2 & 1;
	uint32_t rnd = (uint32_t)(d[0] >> 3) * 2654435761u + (uint32_t)n;
	if (role == 3)
		role = BT_ROLE_UNKNOWN;
	while (pos < n && nc < MAX_CHUNKS) {
		uint8_t h = d[pos++];
		if (h & 2) {
			type[nc] = (uint8_t)(CAP_EOF_IN + (h & 1));
			len[nc] = 0;
			data[nc++] = d;
			continue;
		}
		if (n - pos < 2)
			break;
		size_t l = (size_t)d[pos] << 8 | d[pos + 1];
		pos += 2;
		if (l > n - pos)
			l = n - pos;
		if (l == 0)
			continue;
		type[nc] = h & 1;
		len[nc] = (uint32_t)l;
		data[nc++] = d + pos;
		pos += l;
	}

	struct sbuf a = { 0 }, b = { 0 };
	if (replay_chunks(o, role, tr, nc, type, len, data, 0, &a, err,
			  sizeof err) < 0) {
		fprintf(stderr, "fuzz-%s: contract: %s\n", o->name, err);
		abort();
	}
	/* the same bytes in other chunks: join each run, cut at random */
	size_t m = 0;
	for (size_t i = 0; i < nc; i++) {
		uint32_t done = 0;
		if (type[i] >= CAP_EOF_IN || tr == BT_TR_DGRAM) {
			t2[m] = type[i];
			l2[m] = len[i];
			d2[m++] = data[i];
			continue;
		}
		while (done < len[i] && m < 2 * MAX_CHUNKS) {
			rnd = rnd * 1103515245u + 12345u;
			uint32_t piece = 1 + (rnd >> 16) % (rnd & 0x100 ? 7u : 300u);
			if (piece > len[i] - done)
				piece = len[i] - done;
			t2[m] = type[i];
			l2[m] = piece;
			d2[m++] = data[i] + done;
			done += piece;
		}
		if (done < len[i]) {             /* out of room: the rest */
			t2[m] = type[i];
			l2[m] = len[i] - done;
			d2[m++] = data[i] + done;
		}
	}
	if (replay_chunks(o, role, tr, m, t2, l2, d2, 1, &b, err,
			  sizeof err) < 0) {
		fprintf(stderr, "fuzz-%s: contract (rechunked): %s\n", o->name,
			err);
		abort();
	}
	sb_printf(&a, "%s", "");
	sb_printf(&b, "%s", "");
	if (strcmp(a.s, b.s) != 0) {
		fprintf(stderr, "fuzz-%s: other chunks, other messages:\n"
			"--- as given\n%s--- rechunked\n%s", o->name, a.s, b.s);
		abort();
	}
	sb_free(&a);
	sb_free(&b);
	return 0;
}
