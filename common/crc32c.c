/*
 * crc32c.c - CRC-32C (Castagnoli), the checksum of log segments.
 *
 * On x86-64 with SSE4.2 the processor's crc32 instruction computes it (the
 * same polynomial, reflected: eight bytes per instruction); elsewhere
 * slicing-by-8 in software.  Which one is decided at the first call
 * (cpuid).  The tables are built on first use (building them costs some
 * 23,000 instructions, which a traced process that never spools should not
 * pay at start-up); the function takes no lock and allocates nothing: the
 * shim's spool writer may call it from wrappers.
 */
#include "config.h"

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "btrace/segment.h"

#define P 0x82f63b78u
#define R1(c) (((c) & 1) ? ((c) >> 1) ^ P : (c) >> 1)
#define R8(c) R1(R1(R1(R1(R1(R1(R1(R1(c))))))))

static uint32_t tab[8][256];
static volatile int tab_ready;

static void build(void)
{
	for (uint32_t i = 0; i < 256; i++)
		tab[0][i] = R8(i);
	for (uint32_t i = 0; i < 256; i++)
		for (int k = 1; k < 8; k++)
			tab[k][i] = (tab[k - 1][i] >> 8) ^ tab[0][tab[k - 1][i] & 0xff];
	__atomic_store_n(&tab_ready, 1, __ATOMIC_RELEASE);
}

/* Building twice concurrently is harmless: the same data. */

#if defined(__x86_64__)
static volatile int hw_state;   /* 0 unknown, 1 crc32 instruction, 2 none */

static int have_hw(void)
{
	int s = __atomic_load_n(&hw_state, __ATOMIC_RELAXED);
	if (!s) {
		unsigned a, b, c, d;
		s = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2) ? 1 : 2;
		__atomic_store_n(&hw_state, s, __ATOMIC_RELAXED);
	}
	return s == 1;
}

/* The crc32 instruction: no inversion of its own, as the loops below.
 * Eight bytes a step from P as it is (x86-64 loads unaligned words at
 * no cost; the shim's blocks start anywhere in a ring), then the last
 * 4, 2 and 1: the instruction takes a word's bytes in memory order, so
 * the steps' sizes do not change the result. */
__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;

	for (; len >= 8; p += 8, len -= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
	}
	if (len & 4) {
		uint32_t w;
		memcpy(&w, p, 4);
		c = __builtin_ia32_crc32si((uint32_t)c, w);
		p += 4;
	}
	if (len & 2) {
		uint16_t w;
		memcpy(&w, p, 2);
		c = __builtin_ia32_crc32hi((uint32_t)c, w);
		p += 2;
	}
	if (len & 1)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p);
	return (uint32_t)c;
}
#endif

uint32_t bt_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

#if defined(__x86_64__)
	if (have_hw())
		return ~crc_hw(~crc, p, len);
#endif
	if (!__atomic_load_n(&tab_ready, __ATOMIC_ACQUIRE))
		build();
	crc = ~crc;
	while (len && ((uintptr_t)p & 7)) {
		crc = tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		len--;
	}
	while (len >= 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
				     (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 |
			      (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
		crc = tab[7][lo & 0xff] ^ tab[6][(lo >> 8) & 0xff] ^
		      tab[5][(lo >> 16) & 0xff] ^ tab[4][lo >> 24] ^
		      tab[3][hi & 0xff] ^ tab[2][(hi >> 8) & 0xff] ^
		      tab[1][(hi >> 16) & 0xff] ^ tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}
