/*
 * check_recon_unit.c - the reconstructor's building blocks: the hash map
 * every table uses (checked against a plain array under heavy collisions
 * and deletions), and the whole core on random but well-formed records:
 * whatever a buggy or hostile tracer writes, the run ends with a database
 * whose rows refer to each other consistently (and, in the debug build,
 * without a memory error).
 */
#include "config.h"

#include <stdlib.h>

#include "check_recon.h"
#include "map.h"

#include <string.h>

#include "btrace/proto.h"

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

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* One random record of any type, with fields from small ranges so that
 * fds, channels, offsets and lineage keys meet each other. */
static void random_record(struct gen_thr *t, int64_t at, uint64_t *x)
{
	static const char *const addrs[] = {
		"10.0.0.1:80", "10.0.0.2:5000", "10.0.0.3:5432", "127.0.0.1:7000",
	};
	static const char *const vals[] = { "GET", "/a?b", "SELECT 1", "x", "" };
	struct bt_event ev;

	memset(&ev, 0, sizeof ev);
	ev.type = (uint8_t)(1 + rnd(x) % (BT_EV_TYPE_MAX - 1));
	if (ev.type == BT_EV_TIME)
		ev.type = BT_EV_MSG;
	ev.fd = (int32_t)(rnd(x) % 12) - 1;
	ev.fd2 = (int32_t)(rnd(x) % 12);
	ev.result = (int64_t)(rnd(x) % 8) - 2;
	ev.pid = 100 + (uint32_t)(rnd(x) % 4);
	ev.ppid = 100 + (uint32_t)(rnd(x) % 4);
	ev.tid = ev.pid + (uint32_t)(rnd(x) % 3);
	ev.cookie = rnd(x) % 4;
	ev.flags = (uint32_t)(rnd(x) % 16);
	ev.proto = (uint8_t)(rnd(x) % 8);
	ev.dir = (uint8_t)(rnd(x) % 2);
	ev.kind = (uint8_t)(rnd(x) % 6);
	ev.chan_kind = (uint8_t)(rnd(x) % 7);
	ev.role = (uint8_t)(rnd(x) % 8);
	ev.off = rnd(x) % 300;
	ev.len = rnd(x) % 100;
	ev.status = (uint32_t)(rnd(x) % 3) * 200;
	ev.witness = rnd(x) % 3;
	ev.ino = rnd(x) % 5;
	ev.peer_ino = rnd(x) % 5;
	if (ev.type == BT_EV_CHAN && (ev.chan_kind == BT_CK_TCP ||
				      ev.chan_kind == BT_CK_UDP)) {
		const char *l = addrs[rnd(x) % 4], *r = addrs[rnd(x) % 4];
		unsigned b[4], port;
		sscanf(l, "%u.%u.%u.%u:%u", &b[0], &b[1], &b[2], &b[3], &port);
		ev.local.family = BT_AF_INET;
		for (int i = 0; i < 4; i++)
			ev.local.addr[i] = (uint8_t)b[i];
		ev.local.port = (uint16_t)port;
		sscanf(r, "%u.%u.%u.%u:%u", &b[0], &b[1], &b[2], &b[3], &port);
		ev.remote.family = BT_AF_INET;
		for (int i = 0; i < 4; i++)
			ev.remote.addr[i] = (uint8_t)b[i];
		ev.remote.port = (uint16_t)port;
	}
	ev.str = vals[rnd(x) % 5];
	ev.str_len = (uint32_t)strlen(ev.str);
	ev.nattr = (uint8_t)(rnd(x) % 4);
	for (unsigned i = 0; i < ev.nattr; i++) {
		ev.attr[i].key = (uint8_t)(1 + rnd(x) % (BT_AK_MAX - 1));
		ev.attr[i].val = vals[rnd(x) % 5];
		ev.attr[i].len = (uint16_t)strlen(ev.attr[i].val);
	}
	gen_ev(t, at, &ev);
}

START_TEST(random_records_consistent)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(_i + 1);
	struct rt t;
	struct gen *g = gen_new();
	struct gen_host *h[3];
	struct gen_thr *th[8];

	h[0] = gen_host(g, "a", 0, 0);
	h[1] = gen_host(g, "b", 2000000000ll, 0);
	h[2] = gen_host_ns(h[0], 50000000000ll);
	for (int i = 0; i < 8; i++) {
		struct gen_proc *p = gen_proc(h[i % 3], 100 + (uint32_t)(i % 4),
					      "/bin/x");
		th[i] = gen_thread(p, 0, 100 + (uint32_t)i, 0, i > 3 ? (uint64_t)(i % 4) : 0);
		if (i < 4)
			gen_proc_start(th[i], 0, 100, 100, (uint32_t)(rnd(&x) % 4));
	}
	int64_t now[8] = { 0 };
	for (int k = 0; k < 800; k++) {
		int i = (int)(rnd(&x) % 8);
		now[i] += (int64_t)(rnd(&x) % 5);
		random_record(th[i], now[i], &x);
	}
	rt_init(&t);
	struct gen_write_opts o = { .block_bytes = 200 + (unsigned)(rnd(&x) % 400) };
	rt_write(&t, g, &o);
	ck_assert_int_eq(rt_run(&t), RC_EXIT_OK);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM spans WHERE request_id IS NOT NULL AND request_id NOT IN (SELECT request_id FROM requests)"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM requests WHERE root_span_id NOT IN (SELECT span_id FROM spans)"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM messages WHERE span_id IS NOT NULL AND span_id NOT IN (SELECT span_id FROM spans)"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT COUNT(*) FROM spans WHERE end_ns < start_ns"), 0);
	ck_assert_int_eq(rt_qi(&t, "SELECT value FROM stats WHERE key = 'events'"),
			 (int64_t)t.sum.events);
	rt_done(&t);
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
	tc = tcase_create("random");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, random_records_consistent, 0, 40);
	suite_add_tcase(s, tc);
	return s;
}
