/*
 * check_recon_unit.c - the reconstructor's building blocks: the hash map
 * every table uses (checked against a plain array under heavy collisions
 * and deletions).
 */
#include "config.h"

#include <stdlib.h>

#include "check_recon.h"
#include "map.h"

START_TEST(map_matches_model)
{
	enum { RANGE = 4096, OPS = 200000 };
	static uint64_t model[RANGE];
	static uint8_t present[RANGE];
	struct rc_map m;
	uint64_t x = 88172645463325252ull;

	rc_map_init(&m);
	for (int i = 0; i < OPS; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		/* Keys that share low bits collide into long clusters. */
		uint32_t k = (uint32_t)(x % RANGE);
		uint64_t key = (uint64_t)k << 20;
		switch ((x >> 32) % 3) {
		case 0:
			ck_assert_int_eq(rc_map_put(&m, key, x), 0);
			model[k] = x;
			present[k] = 1;
			break;
		case 1:
			ck_assert_int_eq(rc_map_del(&m, key), present[k]);
			present[k] = 0;
			break;
		default: {
			uint64_t v = 0;
			ck_assert_int_eq(rc_map_get(&m, key, &v), present[k]);
			if (present[k])
				ck_assert_uint_eq(v, model[k]);
		}
		}
	}
	size_t n = 0;
	for (int k = 0; k < RANGE; k++) {
		uint64_t v;
		n += present[k];
		ck_assert_int_eq(rc_map_get(&m, (uint64_t)k << 20, &v), present[k]);
	}
	ck_assert_uint_eq(m.n, n);
	rc_map_free(&m);
}
END_TEST

START_TEST(map_counts)
{
	struct rc_map m;
	rc_map_init(&m);
	ck_assert_uint_eq(rc_map_add(&m, 7, 2), 2);
	ck_assert_uint_eq(rc_map_add(&m, 7, -1), 1);
	ck_assert_int_eq(rc_map_get(&m, 7, NULL), 1);
	ck_assert_uint_eq(rc_map_add(&m, 7, -1), 0);
	/* A count that reaches zero leaves the map. */
	ck_assert_int_eq(rc_map_get(&m, 7, NULL), 0);
	ck_assert_uint_eq(m.n, 0);
	ck_assert_ptr_null(rc_map_getp(&m, 7));
	rc_map_free(&m);
}
END_TEST

Suite *recon_unit_suite(void)
{
	Suite *s = suite_create("recon_unit");
	TCase *tc = tcase_create("map");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, map_matches_model);
	tcase_add_test(tc, map_counts);
	suite_add_tcase(s, tc);
	return s;
}
