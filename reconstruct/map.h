/*
 * map.h - an open-addressing hash map from 64-bit keys to 64-bit values
 * (integers or pointers), used for every lookup table of bp-reconstruct.
 *
 * Linear probing with backward-shift deletion (no tombstones), so the table
 * never degrades however many insertions and removals a long log causes.
 * Keys are arbitrary 64-bit values; callers that need composite keys pack
 * them exactly where they fit (rc_key2) or hash them (rc_hash64).
 * Not thread-safe; bp-reconstruct is single-threaded.
 */
#ifndef RC_MAP_H
#define RC_MAP_H

#include <stddef.h>
#include <stdint.h>

struct rc_map {
	uint64_t *keys;
	uint64_t *vals;
	uint8_t  *used;
	size_t    cap;      /* power of two, or 0 */
	size_t    n;
	int       shrink;   /* give storage back as entries go (set it
			     * only for maps nobody iterates: the order of
			     * the slots changes) */
};

/* Mix a 64-bit value (splitmix64 finaliser). */
static inline uint64_t rc_mix64(uint64_t x)
{
	x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27; x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* Hash LEN bytes at P into 64 bits, chained from SEED (FNV-1a + mix). */
uint64_t rc_hash64(uint64_t seed, const void *p, size_t len);

/* Pack two 32-bit values into one exact key. */
static inline uint64_t rc_key2(uint32_t hi, uint32_t lo)
{
	return (uint64_t)hi << 32 | lo;
}

/* An empty map (no allocation until the first insert). */
void rc_map_init(struct rc_map *m);
/* Free the map's storage (not what the values point to). */
void rc_map_free(struct rc_map *m);

/* Value stored under KEY into *VAL; returns 1 if found, 0 if not. */
int rc_map_get(const struct rc_map *m, uint64_t key, uint64_t *val);
/* Pointer convenience: the value under KEY as a pointer, NULL if absent. */
void *rc_map_getp(const struct rc_map *m, uint64_t key);
/* Insert or replace; returns 0 or -ENOMEM. */
int rc_map_put(struct rc_map *m, uint64_t key, uint64_t val);
/* Remove KEY; returns 1 if it was there. */
int rc_map_del(struct rc_map *m, uint64_t key);
/*
 * Add DELTA to the integer stored under KEY (absent counts as 0) and return
 * the new value; the entry is removed when it reaches 0.  On allocation
 * failure returns the old value unchanged (callers treat counts as hints).
 */
uint64_t rc_map_add(struct rc_map *m, uint64_t key, int64_t delta);

/* A set of small integers (request ids: they are given out one after
 * the other), a bit each; empty when zeroed. */
struct rc_bits {
	uint64_t *w;
	size_t    n;        /* words */
};

static inline int rc_bits_get(const struct rc_bits *b, uint64_t i)
{
	return i / 64 < b->n && (b->w[i / 64] >> (i % 64) & 1);
}

/* Add I; 0, or -ENOMEM (the set unchanged). */
int rc_bits_set(struct rc_bits *b, uint64_t i);
void rc_bits_free(struct rc_bits *b);

#endif /* RC_MAP_H */
