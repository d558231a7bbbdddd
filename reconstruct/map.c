/*
 * map.c - open-addressing u64 -> u64 hash map (see map.h).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "map.h"

uint64_t rc_hash64(uint64_t seed, const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull ^ rc_mix64(seed);

	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return rc_mix64(h);
}

void rc_map_init(struct rc_map *m)
{
	memset(m, 0, sizeof *m);
}

void rc_map_free(struct rc_map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	memset(m, 0, sizeof *m);
}

static size_t slot_of(const struct rc_map *m, uint64_t key)
{
	return (size_t)rc_mix64(key) & (m->cap - 1);
}

/* Rehash into NCAP slots (a power of two above the count). */
static int resize(struct rc_map *m, size_t ncap)
{
	struct rc_map t = {
		.keys = malloc(ncap * sizeof *t.keys),
		.vals = malloc(ncap * sizeof *t.vals),
		.used = calloc(ncap, 1),
		.cap = ncap,
	};

	if (!t.keys || !t.vals || !t.used) {
		free(t.keys);
		free(t.vals);
		free(t.used);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		size_t j = slot_of(&t, m->keys[i]);
		while (t.used[j])
			j = (j + 1) & (ncap - 1);
		t.used[j] = 1;
		t.keys[j] = m->keys[i];
		t.vals[j] = m->vals[i];
	}
	t.n = m->n;
	t.shrink = m->shrink;
	rc_map_free(m);
	*m = t;
	return 0;
}

static int grow(struct rc_map *m)
{
	return resize(m, m->cap ? m->cap * 2 : 16);
}

/* Index of KEY, or of the empty slot where it would go; -1 if no table. */
static long find(const struct rc_map *m, uint64_t key)
{
	if (!m->cap)
		return -1;
	size_t i = slot_of(m, key);
	while (m->used[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	return (long)i;
}

int rc_map_get(const struct rc_map *m, uint64_t key, uint64_t *val)
{
	long i = find(m, key);
	if (i < 0 || !m->used[i])
		return 0;
	if (val)
		*val = m->vals[i];
	return 1;
}

void *rc_map_getp(const struct rc_map *m, uint64_t key)
{
	uint64_t v;
	return rc_map_get(m, key, &v) ? (void *)(uintptr_t)v : NULL;
}

int rc_map_put(struct rc_map *m, uint64_t key, uint64_t val)
{
	long i = find(m, key);

	if (i >= 0 && m->used[i]) {
		m->vals[i] = val;
		return 0;
	}
	if ((m->n + 1) * 4 > m->cap * 3) {
		if (grow(m) < 0)
			return -ENOMEM;
		i = find(m, key);
	}
	m->used[i] = 1;
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return 0;
}

int rc_map_del(struct rc_map *m, uint64_t key)
{
	long f = find(m, key);
	size_t i, j, mask;

	if (f < 0 || !m->used[f])
		return 0;
	mask = m->cap - 1;
	i = (size_t)f;
	/* Backward-shift: pull later members of the cluster into the hole. */
	for (j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
		size_t home = slot_of(m, m->keys[j]);
		/* Move j to i unless its home lies cyclically in (i, j]. */
		if ((j > i && (home <= i || home > j)) ||
		    (j < i && (home <= i && home > j))) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->used[i] = 0;
	m->n--;
	/* A sixteenth full: a quarter of the size (then a quarter full). */
	if (m->shrink && m->cap > 1024 && m->n * 16 < m->cap)
		resize(m, m->cap / 4);   /* on failure it stays as it is */
	return 1;
}

uint64_t rc_map_add(struct rc_map *m, uint64_t key, int64_t delta)
{
	uint64_t v = 0;

	rc_map_get(m, key, &v);
	uint64_t nv = v + (uint64_t)delta;
	if (nv == 0) {
		rc_map_del(m, key);
		return 0;
	}
	if (rc_map_put(m, key, nv) < 0)
		return v;
	return nv;
}

int rc_bits_set(struct rc_bits *b, uint64_t i)
{
	if (i / 64 >= b->n) {
		size_t n = b->n ? b->n : 64;
		while (n <= i / 64)
			n *= 2;
		uint64_t *x = realloc(b->w, n * sizeof *x);
		if (!x)
			return -ENOMEM;
		memset(x + b->n, 0, (n - b->n) * sizeof *x);
		b->w = x;
		b->n = n;
	}
	b->w[i / 64] |= 1ull << (i % 64);
	return 0;
}

void rc_bits_free(struct rc_bits *b)
{
	free(b->w);
	b->w = NULL;
	b->n = 0;
}
