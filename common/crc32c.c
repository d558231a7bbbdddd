/*
 * crc32c.c - CRC-32C (Castagnoli), the checksum of log segments.
 *
 * Slicing-by-8 in software.  The tables are built on first use (building
 * them costs some 23,000 instructions, which a traced process that never
 * spools should not pay at start-up); the function takes no lock and
 * allocates nothing: the shim's spool writer may call it from wrappers.
 */
#include "config.h"

#include <stdint.h>
#include <stddef.h>

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

uint32_t bt_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

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
