/*
 * check_segment.c - unit tests of the log segment format (common/segment.c),
 * the record codec (common/event.c), the readers' duplicate removal
 * (common/segread.c) and bp-logd's record-boundary check (logd/chunk.c).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "btrace/event.h"
#include "btrace/segment.h"
#include "btrace/segread.h"
#include "logd.h"
#include "readlog.h"

/* ---- helpers -------------------------------------------------------------- */

static char tmpdir[64];

static void setup(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/check_segment.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static long plain_write(int fd, const void *b, size_t n)
{
	return (long)write(fd, b, n);
}

struct warns {
	int n;
	char path[256];
	uint64_t off;
	char why[256];
};

static void on_warn(void *ctx, const char *path, uint64_t off, const char *why)
{
	struct warns *w = ctx;
	if (w->n++ == 0) {
		snprintf(w->path, sizeof w->path, "%s", path);
		w->off = off;
		snprintf(w->why, sizeof w->why, "%s", why);
	}
}

#define NBLK 6

struct testfile {
	char     path[128];
	uint64_t blk_off[NBLK + 1];     /* file offset of each block; [NBLK] = size */
	uint32_t blk_len[NBLK];
	uint8_t  payload[NBLK][3000];
};

/* Payload of block I: whole records (TIME + MSGs), I-dependent length. */
static uint32_t make_payload(uint8_t *p, size_t cap, int i)
{
	struct bt_event ev;
	uint64_t prev = 0;
	size_t n = 0;
	char text[200];

	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_TIME;
	ev.ts = 1000000 * (uint64_t)(i + 1);
	ev.realtime = 1700000000000000000ull;
	n += bt_ev_encode(p + n, cap - n, &ev, &prev);
	for (int k = 0; k < 5 + i * 7; k++) {
		memset(text, 'a' + k % 26, sizeof text);
		memset(&ev, 0, sizeof ev);
		ev.type = BT_EV_MSG;
		ev.ts = prev + 10;
		ev.fd = k;
		ev.off = (uint64_t)k * 100;
		ev.nattr = 1;
		ev.attr[0].key = BT_AK_TARGET;
		ev.attr[0].val = text;
		ev.attr[0].len = (uint16_t)(k * 3 % 150);
		size_t w = bt_ev_encode(p + n, cap - n, &ev, &prev);
		if (!w)
			break;
		n += w;
	}
	return (uint32_t)n;
}

static void write_file(struct testfile *f, const char *name)
{
	struct bt_seg_header sh;
	uint8_t hb[BT_SEG_HDR_SIZE];
	int fd;

	snprintf(f->path, sizeof f->path, "%s/%s", tmpdir, name);
	fd = open(f->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	memset(&sh, 0, sizeof sh);
	sh.version = BT_SEG_VERSION;
	sh.created_mono = 123;
	sh.created_real = 456;
	snprintf(sh.host, sizeof sh.host, "unit-host");
	sh.boot_id = 0x1122334455667788ull;
	sh.writer = BT_SEG_BY_LOGD;
	sh.writer_pid = 42;
	sh.seq = 7;
	bt_seg_header_encode(hb, &sh);
	ck_assert_int_eq(write(fd, hb, sizeof hb), (int)sizeof hb);
	uint64_t off = BT_SEG_HDR_SIZE;
	for (int i = 0; i < NBLK; i++) {
		struct bt_blk_header h;
		memset(&h, 0, sizeof h);
		h.len = make_payload(f->payload[i], sizeof f->payload[i], i);
		h.ring_id = 0xabcdef0012345678ull;
		h.pid = 1000;
		h.slot = (uint16_t)(i % 3);
		h.gen = 1;
		h.stream_off = (uint64_t)i * 5000;
		h.flags = i == 0 ? BT_BF_GAP : 0;
		f->blk_off[i] = off;
		f->blk_len[i] = h.len;
		ck_assert_int_eq(bt_seg_write_block(fd, plain_write, &h, f->payload[i]), 0);
		off += BT_BLK_HDR_SIZE + h.len;
	}
	f->blk_off[NBLK] = off;
	close(fd);
}

/* Read PATH; return the number of blocks and a bitmask of which (by
 * payload match) were returned. */
static int read_all(const char *path, const struct testfile *f,
		    unsigned *mask, struct warns *w)
{
	const char *why;
	struct bt_seg_reader *r = bt_seg_open(path, on_warn, w, &why);
	struct bt_blk_header h;
	const uint8_t *pl;
	uint64_t off;
	int n = 0;

	ck_assert_msg(r != NULL, "open %s: %s", path, why);
	*mask = 0;
	while (bt_seg_next(r, &h, &pl, &off) == 1) {
		int i;
		for (i = 0; i < NBLK; i++)
			if (off == f->blk_off[i])
				break;
		ck_assert_msg(i < NBLK, "block at unexpected offset %llu",
			      (unsigned long long)off);
		ck_assert_uint_eq(h.len, f->blk_len[i]);
		ck_assert_mem_eq(pl, f->payload[i], h.len);
		ck_assert_uint_eq(h.stream_off, (uint64_t)i * 5000);
		*mask |= 1u << i;
		n++;
	}
	bt_seg_close(r);
	return n;
}

static void copy_file(const char *from, const char *to, size_t upto,
		      long flip_at, const uint8_t *insert, size_t ins_len,
		      size_t ins_at)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	uint8_t buf[65536];
	size_t n;

	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(out);
	n = fread(buf, 1, sizeof buf, in);
	if (upto < n)
		n = upto;
	if (flip_at >= 0 && (size_t)flip_at < n)
		buf[flip_at] ^= 0x5a;
	if (insert) {
		fwrite(buf, 1, ins_at, out);
		fwrite(insert, 1, ins_len, out);
		fwrite(buf + ins_at, 1, n - ins_at, out);
	} else {
		fwrite(buf, 1, n, out);
	}
	fclose(in);
	fclose(out);
}

/* ---- segments ------------------------------------------------------------- */

/* CRC-32C: the check value of "123456789", and any length, alignment and
 * split against a bitwise reference (whichever implementation runs). */
static uint32_t crc_ref(uint32_t crc, const uint8_t *p, size_t n)
{
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? crc >> 1 ^ 0x82f63b78u : crc >> 1;
	}
	return ~crc;
}

START_TEST(crc32c_values)
{
	static uint8_t buf[300];
	uint32_t x = 12345;

	ck_assert_uint_eq(bt_crc32c(0, "123456789", 9), 0xe3069283u);
	ck_assert_uint_eq(bt_crc32c(0, "", 0), 0);
	for (size_t i = 0; i < sizeof buf; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 16);
	}
	for (size_t off = 0; off < 9; off++)
		for (size_t n = 0; n + off <= sizeof buf; n += 7) {
			uint32_t want = crc_ref(0, buf + off, n);
			ck_assert_uint_eq(bt_crc32c(0, buf + off, n), want);
			size_t h = n / 3;
			ck_assert_uint_eq(bt_crc32c(bt_crc32c(0, buf + off, h),
						    buf + off + h, n - h), want);
		}
}
END_TEST

START_TEST(seg_round_trip)
{
	static struct testfile f;
	struct warns w = { 0 };
	unsigned mask;
	const char *why;

	write_file(&f, "rt.btl");
	ck_assert_int_eq(read_all(f.path, &f, &mask, &w), NBLK);
	ck_assert_uint_eq(mask, (1u << NBLK) - 1);
	ck_assert_int_eq(w.n, 0);

	struct bt_seg_reader *r = bt_seg_open(f.path, NULL, NULL, &why);
	ck_assert_ptr_nonnull(r);
	const struct bt_seg_header *h = bt_seg_file_header(r);
	ck_assert_str_eq(h->host, "unit-host");
	ck_assert_uint_eq(h->boot_id, 0x1122334455667788ull);
	ck_assert_uint_eq(h->seq, 7);
	ck_assert_uint_eq(h->writer_pid, 42);
	ck_assert_uint_eq(h->created_real, 456);
	struct bt_blk_header bh;
	const uint8_t *pl;
	ck_assert_int_eq(bt_seg_next(r, &bh, &pl, NULL), 1);
	ck_assert_uint_eq(bh.ring_id, 0xabcdef0012345678ull);
	ck_assert_uint_eq(bh.pid, 1000);
	ck_assert_uint_eq(bh.gen, 1);
	ck_assert_uint_eq(bh.flags, BT_BF_GAP);
	bt_seg_close(r);
}
END_TEST

/* Truncated at every byte offset of the last block: all earlier blocks
 * come back, and exactly one warning names the file and the last block's
 * offset (none when the cut is exactly at the block's start). */
START_TEST(seg_truncated_everywhere)
{
	static struct testfile f;
	char cut[160];

	write_file(&f, "full.btl");
	snprintf(cut, sizeof cut, "%s/cut.btl", tmpdir);
	for (uint64_t end = f.blk_off[NBLK - 1]; end < f.blk_off[NBLK]; end++) {
		struct warns w = { 0 };
		unsigned mask;

		copy_file(f.path, cut, (size_t)end, -1, NULL, 0, 0);
		ck_assert_int_eq(read_all(cut, &f, &mask, &w), NBLK - 1);
		ck_assert_uint_eq(mask, (1u << (NBLK - 1)) - 1);
		if (end == f.blk_off[NBLK - 1]) {
			ck_assert_int_eq(w.n, 0);
		} else {
			ck_assert_msg(w.n == 1, "cut at %llu: %d warnings",
				      (unsigned long long)end, w.n);
			ck_assert_str_eq(w.path, cut);
			ck_assert_uint_eq(w.off, f.blk_off[NBLK - 1]);
			ck_assert_ptr_nonnull(strstr(w.why, "truncated"));
		}
	}
}
END_TEST

/* One corrupt byte anywhere inside block 2 (header or payload): block 2
 * is skipped with one warning at its offset, every other block is read. */
START_TEST(seg_corrupt_byte)
{
	static struct testfile f;
	char bad[160];

	write_file(&f, "full.btl");
	snprintf(bad, sizeof bad, "%s/bad.btl", tmpdir);
	for (uint64_t at = f.blk_off[2]; at < f.blk_off[3]; at++) {
		struct warns w = { 0 };
		unsigned mask;

		copy_file(f.path, bad, 1 << 20, (long)at, NULL, 0, 0);
		ck_assert_int_eq(read_all(bad, &f, &mask, &w), NBLK - 1);
		ck_assert_uint_eq(mask, ((1u << NBLK) - 1) & ~(1u << 2));
		ck_assert_int_eq(w.n, 1);
		ck_assert_uint_eq(w.off, f.blk_off[2]);
	}
}
END_TEST

/* Garbage between blocks 3 and 4 (with a fake block magic in it): every
 * block is read, one warning at the garbage's offset. */
START_TEST(seg_garbage_between)
{
	static struct testfile f;
	char bad[160];
	uint8_t junk[97];
	struct warns w = { 0 };
	unsigned mask;

	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (uint8_t)(i * 13 + 7);
	memcpy(junk + 20, "BLK1", 4);
	write_file(&f, "full.btl");
	snprintf(bad, sizeof bad, "%s/garbage.btl", tmpdir);
	copy_file(f.path, bad, 1 << 20, -1, junk, sizeof junk,
		  (size_t)f.blk_off[4]);
	/* blocks after the garbage moved by sizeof junk */
	for (int i = 4; i <= NBLK; i++)
		f.blk_off[i] += sizeof junk;
	ck_assert_int_eq(read_all(bad, &f, &mask, &w), NBLK);
	ck_assert_uint_eq(mask, (1u << NBLK) - 1);
	ck_assert_int_eq(w.n, 1);
	ck_assert_uint_eq(w.off, f.blk_off[4] - sizeof junk);
}
END_TEST

START_TEST(seg_bad_file_header)
{
	static struct testfile f;
	char bad[160];
	const char *why;
	/* magic, version, header-size field, a host byte (crc), crc itself */
	static const long flips[] = { 0, 7, 8, 12, 40, 124, 127 };

	write_file(&f, "full.btl");
	snprintf(bad, sizeof bad, "%s/hdr.btl", tmpdir);
	for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
		copy_file(f.path, bad, 1 << 20, flips[i], NULL, 0, 0);
		errno = 0;
		ck_assert_ptr_null(bt_seg_open(bad, NULL, NULL, &why));
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_ptr_nonnull(strstr(why, "header"));
	}
	for (size_t len = 0; len < BT_SEG_HDR_SIZE; len += 17) {
		copy_file(f.path, bad, len, -1, NULL, 0, 0);
		ck_assert_ptr_null(bt_seg_open(bad, NULL, NULL, &why));
		ck_assert_ptr_nonnull(why);
	}
	ck_assert_ptr_null(bt_seg_open("/nonexistent/x.btl", NULL, NULL, &why));
	ck_assert_int_eq(errno, ENOENT);
	/* a header alone is a valid, empty segment */
	copy_file(f.path, bad, BT_SEG_HDR_SIZE, -1, NULL, 0, 0);
	struct bt_seg_reader *r = bt_seg_open(bad, NULL, NULL, &why);
	struct bt_blk_header h;
	const uint8_t *pl;
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(bt_seg_next(r, &h, &pl, NULL), 0);
	bt_seg_close(r);
}
END_TEST

/* Format versions: 1 (no dictionary references) is read as before, one
 * newer than the reader's is refused with a message that says so. */
START_TEST(seg_versions)
{
	static struct testfile f;
	char path[160];
	uint8_t hb[BT_SEG_HDR_SIZE];
	const char *why = NULL;
	FILE *in;

	write_file(&f, "ver.btl");
	in = fopen(f.path, "rb");
	ck_assert_ptr_nonnull(in);
	ck_assert_uint_eq(fread(hb, 1, sizeof hb, in), sizeof hb);
	fclose(in);
	ck_assert_uint_eq(hb[8], BT_SEG_VERSION);
	snprintf(path, sizeof path, "%s/ver2.btl", tmpdir);
	for (uint32_t v = 0; v <= BT_SEG_VERSION + 1; v++) {
		uint32_t crc;
		FILE *out = fopen(path, "wb");
		ck_assert_ptr_nonnull(out);
		hb[8] = (uint8_t)v;
		crc = bt_crc32c(0, hb, 124);
		memcpy(hb + 124, &crc, 4);        /* little-endian host */
		ck_assert_uint_eq(fwrite(hb, 1, sizeof hb, out), sizeof hb);
		fclose(out);
		struct bt_seg_reader *r = bt_seg_open(path, NULL, NULL, &why);
		if (v >= BT_SEG_VERSION_MIN && v <= BT_SEG_VERSION) {
			ck_assert_msg(r != NULL, "version %u: %s", v, why);
			ck_assert_uint_eq(bt_seg_file_header(r)->version, v);
			bt_seg_close(r);
		} else {
			ck_assert_ptr_null(r);
			ck_assert_ptr_nonnull(strstr(why, v ? "newer" : "header"));
		}
	}
}
END_TEST

/* ---- record codec --------------------------------------------------------- */

/* LEN bytes placed flush against a PROT_NONE page: a read past the end
 * faults. */
struct guarded { uint8_t *base, *p; size_t maplen; };

static struct guarded guard(const uint8_t *src, size_t len)
{
	struct guarded g;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	g.maplen = ((len + pg - 1) / pg + 1) * pg;
	g.base = mmap(NULL, g.maplen, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(g.base, MAP_FAILED);
	ck_assert_int_eq(mprotect(g.base + g.maplen - pg, pg, PROT_NONE), 0);
	g.p = g.base + g.maplen - pg - len;
	memcpy(g.p, src, len);
	return g;
}

static void unguard(struct guarded *g)
{
	munmap(g->base, g->maplen);
}

static const char str_a[] = "/usr/sbin/apache2";
static const char str_b[] = "apache2 -X -f /etc/apache2.conf";

static void fill_event(struct bt_event *ev, unsigned type)
{
	memset(ev, 0, sizeof *ev);
	ev->type = (uint8_t)type;
	ev->ts = 5000000000ull + type * 1000;
	ev->fd = 17;
	ev->fd2 = -3;
	ev->result = -11;
	ev->pid = 4242;
	ev->ppid = 1;
	ev->tid = 4243;
	ev->ptid = 4242;
	ev->cookie = 0xdeadbeefcafeull;
	ev->flags = 0x21;
	ev->proto = 3;
	ev->dir = 1;
	ev->kind = 2;
	ev->chan_kind = BT_CK_TCP;
	ev->role = BT_CR_ACCEPT;
	ev->off = 123456789012ull;
	ev->len = 4096;
	ev->status = 200;
	ev->witness = 0x77;
	ev->ino = 998877;
	ev->peer_ino = 998878;
	ev->realtime = 1763700000123456789ull;
	ev->local.family = BT_AF_INET;
	ev->local.port = 80;
	memcpy(ev->local.addr, "\x7f\x00\x00\x01", 4);
	ev->remote.family = BT_AF_INET6;
	ev->remote.port = 54321;
	memcpy(ev->remote.addr, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
	ev->str = str_a;
	ev->str_len = sizeof str_a - 1;
	ev->str2 = str_b;
	ev->str2_len = sizeof str_b - 1;
	ev->nattr = 2;
	ev->attr[0].key = BT_AK_METHOD;
	ev->attr[0].val = "GET";
	ev->attr[0].len = 3;
	ev->attr[1].key = BT_AK_TARGET;
	ev->attr[1].val = "/index.php?x=1";
	ev->attr[1].len = 14;
}

/* Encode every record type, decode it flush against a guard page, check
 * the fields of its schema, and re-encode to the same bytes. */
/* The encoder takes a fast path when the record surely fits and a careful
 * one otherwise (a capacity just large enough, long strings): both must
 * write the same bytes, for every type and for long (2-byte length)
 * bodies. */
START_TEST(ev_fast_equals_careful)
{
	static char big[300];
	memset(big, 'x', sizeof big);
	for (unsigned type = 1; type < BT_EV_TYPE_MAX; type++) {
		for (int longstr = 0; longstr < 2; longstr++) {
			struct bt_event ev;
			uint8_t a[BT_EV_MAX_RECORD], b[BT_EV_MAX_RECORD];
			uint64_t p1 = 4000000000ull, p2 = 4000000000ull;

			fill_event(&ev, type);
			if (longstr) {
				ev.str = big;
				ev.str_len = sizeof big;
				ev.attr[1].val = big;
				ev.attr[1].len = 200;
			}
			size_t n = bt_ev_encode(a, sizeof a, &ev, &p1);
			ck_assert_msg(n > 2, "type %u does not encode", type);
			/* still below the fast path's bound; the careful one cuts
			 * an attribute that leaves fewer than 4 bytes free */
			size_t m = bt_ev_encode(b, n + 8, &ev, &p2);
			ck_assert_msg(m == n, "type %u: %zu vs %zu bytes", type, m, n);
			ck_assert_mem_eq(a, b, n);
			ck_assert_uint_eq(p1, p2);
		}
	}
}
END_TEST

/* ---- every record type through every encoder ----------------------------- */

/* An integer field, as bt_ev_encode_ints takes it (schema order). */
enum { IF_END, IF_FD, IF_FD2, IF_DIR, IF_OFF, IF_LEN, IF_FLAGS, IF_RESULT,
       IF_PROTO, IF_PID, IF_TID, IF_PTID, IF_COOKIE };

/* One row per record type.  A new type is its schema line (common/
 * event.c) and a row here; enc_all_types fails for a type without one.
 * INTS: an all-integer record (bt_ev_encode_ints, as bt_emit_ints writes
 * it), its fields in schema order. */
static const struct enc_row {
	unsigned type;
	int      ints;
	uint8_t  field[6];
} enc_rows[] = {
	{ BT_EV_TIME,          0, { 0 } },
	{ BT_EV_PROC_START,    0, { 0 } },
	{ BT_EV_THREAD_START,  1, { IF_TID, IF_PTID, IF_COOKIE, IF_PID } },
	{ BT_EV_THREAD_EXIT,   1, { 0 } },
	{ BT_EV_FORK,          1, { IF_RESULT, IF_FLAGS } },
	{ BT_EV_EXEC,          0, { 0 } },
	{ BT_EV_SPAWN,         0, { 0 } },
	{ BT_EV_THREAD_CREATE, 1, { IF_COOKIE, IF_RESULT } },
	{ BT_EV_OPEN,          0, { 0 } },
	{ BT_EV_CLOSE,         1, { IF_FD, IF_RESULT } },
	{ BT_EV_DUP,           1, { IF_FD, IF_FD2 } },
	{ BT_EV_CHAN,          0, { 0 } },
	{ BT_EV_PROTO,         0, { 0 } },
	{ BT_EV_MSG,           0, { 0 } },
	{ BT_EV_MSG_BEGIN,     1, { IF_FD, IF_DIR, IF_OFF } },
	{ BT_EV_DATA,          1, { IF_FD, IF_DIR, IF_OFF, IF_LEN } },
	{ BT_EV_READY,         1, { IF_FD, IF_FLAGS, IF_RESULT } },
	{ BT_EV_ISOLATE,       1, { IF_FD, IF_OFF, IF_LEN, IF_RESULT } },
	{ BT_EV_LOST_SYNC,     1, { IF_FD, IF_DIR, IF_PROTO, IF_OFF } },
	{ BT_EV_NAME_BEGIN,    0, { 0 } },
	{ BT_EV_NAME_END,      0, { 0 } },
	{ BT_EV_DROP,          1, { IF_LEN, IF_FLAGS } },
	{ BT_EV_SHUTDOWN,      1, { IF_FD, IF_FLAGS } },
	{ BT_EV_LOGD,          0, { 0 } },
	{ BT_EV_WANT,          1, { IF_FD, IF_FLAGS } },
	{ BT_EV_SIGNAL,        1, { IF_FLAGS } },
};

static uint64_t int_field(const struct bt_event *ev, unsigned f)
{
	switch (f) {
	case IF_FD:     return bt_zigzag(ev->fd);
	case IF_FD2:    return bt_zigzag(ev->fd2);
	case IF_DIR:    return ev->dir;
	case IF_OFF:    return ev->off;
	case IF_LEN:    return ev->len;
	case IF_FLAGS:  return ev->flags;
	case IF_RESULT: return bt_zigzag(ev->result);
	case IF_PROTO:  return ev->proto;
	case IF_PID:    return ev->pid;
	case IF_TID:    return ev->tid;
	case IF_PTID:   return ev->ptid;
	case IF_COOKIE: return ev->cookie;
	}
	ck_abort_msg("field %u", f);
	return 0;
}

/* Every record type, through the careful (schema-walking) encoder and
 * the fast one, without and with a dictionary (twice: values remembered,
 * then referred to), short and long (2-byte length) bodies: the same
 * bytes, time base and dictionary.  And the special encoders the shim
 * uses (bt_ev_encode_ints, _msg, _open) write the same bytes too. */
/* bt_addr_format's IPv4 form is written without printf: the same text
 * as "%u.%u.%u.%u:%u", cut as snprintf cuts it, for every buffer size. */
START_TEST(addr_format_ipv4)
{
	static const uint8_t ips[][4] = { { 0, 0, 0, 0 }, { 127, 0, 0, 1 },
		{ 255, 255, 255, 255 }, { 10, 9, 100, 99 }, { 1, 20, 200, 5 } };
	static const uint16_t ports[] = { 0, 9, 10, 80, 65535, 5432, 1000 };
	for (size_t i = 0; i < sizeof ips / sizeof ips[0]; i++)
		for (size_t j = 0; j < sizeof ports / sizeof ports[0]; j++) {
			struct bt_addr a = { .family = BT_AF_INET,
					     .port = ports[j] };
			memcpy(a.addr, ips[i], 4);
			char want[64];
			snprintf(want, sizeof want, "%u.%u.%u.%u:%u", ips[i][0],
				 ips[i][1], ips[i][2], ips[i][3], ports[j]);
			for (size_t len = 1; len <= 24; len++) {
				char got[32], cut[32];
				memset(got, 'x', sizeof got);
				size_t m = strlen(want) < len - 1 ?
					   strlen(want) : len - 1;
				memcpy(cut, want, m);
				cut[m] = 0;
				ck_assert_ptr_eq(bt_addr_format(&a, got, len), got);
				ck_assert_str_eq(got, cut);
				ck_assert_int_eq(got[len], 'x');
			}
		}
	char untouched = 'x';
	struct bt_addr a = { .family = BT_AF_INET, .port = 1 };
	bt_addr_format(&a, &untouched, 0);
	ck_assert_int_eq(untouched, 'x');
}
END_TEST

START_TEST(enc_all_types)
{
	static char big[300];
	unsigned rows[BT_EV_TYPE_MAX] = { 0 };
	struct bt_ev_dict *dc = malloc(sizeof *dc), *df = malloc(sizeof *df),
			  *ds = malloc(sizeof *ds);

	memset(big, 'y', sizeof big);
	for (size_t i = 0; i < sizeof enc_rows / sizeof enc_rows[0]; i++) {
		ck_assert_uint_lt(enc_rows[i].type, BT_EV_TYPE_MAX);
		rows[enc_rows[i].type]++;
	}
	for (unsigned type = 1; type < BT_EV_TYPE_MAX; type++)
		ck_assert_msg(rows[type] == 1, "type %u (%s): %u rows in "
			      "enc_rows, not 1", type, bt_ev_type_name(type),
			      rows[type]);

	for (size_t i = 0; i < sizeof enc_rows / sizeof enc_rows[0]; i++) {
		const struct enc_row *row = &enc_rows[i];
		for (int v = 0; v < 6; v++) {
			int longstr = v & 1, with = v >> 1;  /* 0 no dict, 1, 2 */
			struct bt_event ev;
			uint8_t a[BT_EV_MAX_RECORD], b[BT_EV_MAX_RECORD],
				c[BT_EV_MAX_RECORD];
			uint64_t pa = 4000000000ull, pb = pa, pc = pa;

			if (with <= 1) {
				bt_ev_dict_init(dc);
				bt_ev_dict_init(df);
				bt_ev_dict_init(ds);
			}
			fill_event(&ev, row->type);
			if (longstr) {
				ev.str = big;
				ev.str_len = sizeof big;
				ev.attr[1].val = big;
				ev.attr[1].len = 200;
			}
			size_t x = bt_ev_encode_careful(a, sizeof a, &ev, &pa,
							with ? dc : NULL);
			size_t y = bt_ev_encode_fast(b, &ev, &pb,
						     with ? df : NULL);
			ck_assert_msg(x > 2 && y > 2, "%s: careful %zu fast %zu",
				      bt_ev_type_name(row->type), x, y);
			ck_assert_msg(x == y && !memcmp(a, b, x),
				      "%s (variant %d): fast != careful",
				      bt_ev_type_name(row->type), v);
			ck_assert_uint_eq(pa, pb);
			ck_assert_mem_eq(dc, df, sizeof *dc);
			/* what the shim calls for this type */
			if (row->type == BT_EV_MSG) {
				struct bt_msg_rec mr = {
					.ts = ev.ts, .fd = ev.fd, .dir = ev.dir,
					.kind = ev.kind, .proto = ev.proto,
					.nattr = ev.nattr, .flags = ev.flags,
					.status = ev.status, .off = ev.off,
					.len = ev.len, .witness = ev.witness,
					.attr = ev.attr,
				};
				ck_assert_uint_eq(bt_ev_encode_msg(c, sizeof c, &mr,
						&pc, with ? ds : NULL), x);
			} else if (row->type == BT_EV_OPEN) {
				ck_assert_uint_eq(bt_ev_encode_open(c, ev.ts, &pc,
						ev.fd, ev.flags, ev.result,
						ev.str, ev.str_len,
						with ? ds : NULL), x);
			} else if (row->ints) {
				uint64_t iv[8];
				unsigned n = 0;
				for (; n < sizeof row->field && row->field[n]; n++)
					iv[n] = int_field(&ev, row->field[n]);
				ck_assert_uint_eq(bt_ev_encode_ints(c, row->type,
						ev.ts, &pc, n, iv), x);
				if (with)      /* no dictionary use */
					memcpy(ds, dc, sizeof *ds);
			} else {
				ck_assert_uint_eq(bt_ev_encode_dict(c, sizeof c,
						&ev, &pc, with ? ds : NULL), x);
			}
			ck_assert_msg(!memcmp(a, c, x), "%s (variant %d): the "
				      "shim's encoder != careful",
				      bt_ev_type_name(row->type), v);
			ck_assert_uint_eq(pa, pc);
			ck_assert_mem_eq(dc, ds, sizeof *dc);
		}
	}
	free(dc);
	free(df);
	free(ds);
}
END_TEST

/* bt_ev_encode_ints writes what bt_ev_encode writes. */
#define A96X "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
/* OPEN: bt_ev_encode_open writes what bt_ev_encode_dict writes, with
 * and without a dictionary, and leaves the same dictionary and time. */
START_TEST(ev_open_equals_encode)
{
	static const char *const paths[] = {
		"/srv/www/1k.html", "/srv/www/1k.html", "x", "", "ab",
		"/a/path/of/more/than/sixteen/bytes/index.html",
		"/a/path/of/more/than/sixteen/bytes/index.html",
		"/a/path/of/more/than/sixteen/bytes/other.html",
		A96X "y", "/srv/www/1k.html", "/etc/passwd", "/etc/passwd",
	};
	static const uint32_t flags[] = { 0, 0x80000, BT_OPEN_PATH_KEEP, 0x241 };
	static const uint64_t ts[] = { 5000, 5000, 4000, 100000000000ull, 7 };
	struct bt_ev_dict *d1 = malloc(sizeof *d1), *d2 = malloc(sizeof *d2);

	for (int with = 0; with < 2; with++) {
		uint64_t p1 = 1000, p2 = 1000;
		bt_ev_dict_init(d1);
		bt_ev_dict_init(d2);
		for (unsigned i = 0; i < 3 * sizeof paths / sizeof paths[0]; i++) {
			struct bt_event ev;
			uint8_t a[BT_EV_MAX_RECORD], b[BT_EV_MAX_RECORD];
			const char *pa = paths[i % (sizeof paths / sizeof paths[0])];

			memset(&ev, 0, sizeof ev);
			ev.type = BT_EV_OPEN;
			ev.ts = ts[i % 5];
			ev.fd = (int32_t)(i * 37 % 300);
			ev.result = ev.fd;
			ev.flags = flags[i % 4];
			ev.str = pa;
			ev.str_len = (uint32_t)strlen(pa);
			size_t x = bt_ev_encode_dict(a, sizeof a, &ev, &p1,
						     with ? d1 : NULL);
			size_t y = bt_ev_encode_open(b, ev.ts, &p2, ev.fd,
						     ev.flags, ev.result, pa,
						     ev.str_len,
						     with ? d2 : NULL);
			ck_assert_uint_gt(x, 2);
			ck_assert_uint_eq(x, y);
			ck_assert_mem_eq(a, b, x);
			ck_assert_uint_eq(p1, p2);
			ck_assert_mem_eq(d1, d2, sizeof *d1);
		}
	}
	free(d1);
	free(d2);
}
END_TEST

START_TEST(ev_ints_equals_encode)
{
	static const unsigned types[] = { BT_EV_READY, BT_EV_MSG_BEGIN,
					  BT_EV_DATA, BT_EV_CLOSE };
	for (unsigned k = 0; k < sizeof types / sizeof types[0]; k++) {
		struct bt_event ev;
		uint8_t a[BT_EV_MAX_RECORD], b[BT_EV_MAX_RECORD];
		uint64_t p1 = 4000000000ull, p2 = 4000000000ull, v[4];
		unsigned n = 0;

		fill_event(&ev, types[k]);
		switch (types[k]) {
		case BT_EV_READY:
			v[n++] = bt_zigzag(ev.fd); v[n++] = ev.flags;
			v[n++] = bt_zigzag(ev.result);
			break;
		case BT_EV_MSG_BEGIN:
			v[n++] = bt_zigzag(ev.fd); v[n++] = ev.dir; v[n++] = ev.off;
			break;
		case BT_EV_DATA:
			v[n++] = bt_zigzag(ev.fd); v[n++] = ev.dir; v[n++] = ev.off;
			v[n++] = ev.len;
			break;
		case BT_EV_CLOSE:
			v[n++] = bt_zigzag(ev.fd); v[n++] = bt_zigzag(ev.result);
			break;
		}
		size_t x = bt_ev_encode(a, sizeof a, &ev, &p1);
		size_t y = bt_ev_encode_ints(b, types[k], ev.ts, &p2, n, v);
		ck_assert_uint_eq(x, y);
		ck_assert_mem_eq(a, b, x);
		ck_assert_uint_eq(p1, p2);
	}
}
END_TEST

START_TEST(ev_round_trip_all_types)
{
	for (unsigned type = 1; type < BT_EV_TYPE_MAX; type++) {
		struct bt_event ev, out;
		uint8_t buf[1024], again[1024];
		uint64_t p1 = 4000000000ull, p2 = 4000000000ull, p3 = 4000000000ull;

		fill_event(&ev, type);
		size_t n = bt_ev_encode(buf, sizeof buf, &ev, &p1);
		ck_assert_msg(n > 2, "type %u does not encode", type);
		ck_assert_uint_eq(buf[0], type);
		struct guarded g = guard(buf, n);
		long k = bt_ev_decode(g.p, n, &out, &p2);
		ck_assert_msg(k == (long)n, "type %u: decode returned %ld of %zu",
			      type, k, n);
		ck_assert_uint_eq(out.type, type);
		ck_assert_uint_eq(out.ts, ev.ts);
		ck_assert_uint_eq(p2, p1);
		size_t m = bt_ev_encode(again, sizeof again, &out, &p3);
		ck_assert_uint_eq(m, n);
		ck_assert_mem_eq(again, buf, n);
		switch (type) {
		case BT_EV_TIME:
			ck_assert_uint_eq(out.realtime, ev.realtime);
			break;
		case BT_EV_PROC_START:
			ck_assert_uint_eq(out.pid, 4242);
			ck_assert_uint_eq(out.str2_len, sizeof str_b - 1);
			ck_assert_mem_eq(out.str2, str_b, out.str2_len);
			break;
		case BT_EV_CHAN:
			ck_assert_int_eq(out.fd2, -3);
			ck_assert_uint_eq(out.local.port, 80);
			ck_assert_mem_eq(out.remote.addr, ev.remote.addr, 16);
			ck_assert_uint_eq(out.peer_ino, 998878);
			break;
		case BT_EV_MSG:
			ck_assert_uint_eq(out.nattr, 2);
			ck_assert_uint_eq(out.attr[1].len, 14);
			ck_assert_mem_eq(out.attr[1].val, "/index.php?x=1", 14);
			ck_assert_uint_eq(out.off, 123456789012ull);
			ck_assert_uint_eq(out.witness, 0x77);
			break;
		case BT_EV_LOGD:
			ck_assert_int_eq(out.result, -11);
			ck_assert_mem_eq(out.str, str_a, out.str_len);
			break;
		default:
			break;
		}
		unguard(&g);
	}
}
END_TEST

/* Every proper prefix of every record is "incomplete" (0), never a read
 * past the input. */
START_TEST(ev_truncated_records)
{
	for (unsigned type = 1; type < BT_EV_TYPE_MAX; type++) {
		struct bt_event ev, out;
		uint8_t buf[1024];
		uint64_t p = 0;

		fill_event(&ev, type);
		size_t n = bt_ev_encode(buf, sizeof buf, &ev, &p);
		for (size_t len = 0; len < n; len++) {
			struct guarded g = guard(buf, len);
			uint64_t q = 0;
			ck_assert_int_eq(bt_ev_decode(g.p, len, &out, &q), 0);
			unguard(&g);
		}
	}
}
END_TEST

/* Corrupt bytes: any result is fine as long as the decoder stays inside
 * its input and reports a size no larger than it. */
START_TEST(ev_corrupt_records)
{
	uint64_t rnd = 88172645463325252ull;

	for (unsigned type = 1; type < BT_EV_TYPE_MAX; type++) {
		struct bt_event ev, out;
		uint8_t buf[1024];
		uint64_t p = 0;

		fill_event(&ev, type);
		size_t n = bt_ev_encode(buf, sizeof buf, &ev, &p);
		for (size_t at = 0; at < n; at++) {
			for (int v = 0; v < 4; v++) {
				uint8_t c[1024];
				memcpy(c, buf, n);
				rnd ^= rnd << 13; rnd ^= rnd >> 7; rnd ^= rnd << 17;
				c[at] = v == 0 ? 0xff : v == 1 ? 0x80 : (uint8_t)rnd;
				struct guarded g = guard(c, n);
				uint64_t q = 0;
				long k = bt_ev_decode(g.p, n, &out, &q);
				ck_assert(k >= -1 && k <= (long)n);
				unguard(&g);
			}
		}
	}
	/* random buffers */
	for (int i = 0; i < 20000; i++) {
		uint8_t c[64];
		struct bt_event out;
		size_t len = (size_t)(i % 64);
		for (size_t k = 0; k < len; k++) {
			rnd ^= rnd << 13; rnd ^= rnd >> 7; rnd ^= rnd << 17;
			c[k] = (uint8_t)rnd;
		}
		if (len)
			c[0] = (uint8_t)(i % (BT_EV_TYPE_MAX + 2));
		struct guarded g = guard(c, len);
		uint64_t q = 0;
		long k = bt_ev_decode(g.p, len, &out, &q);
		ck_assert(k >= -1 && k <= (long)len);
		unguard(&g);
	}
}
END_TEST

/* Fields that overrun the declared body are "malformed" (-1); a body
 * length over the maximum too; unknown types are skipped whole. */
START_TEST(ev_malformed_records)
{
	struct bt_event out;
	uint64_t q = 0;
	/* MSG, body 1: only dt, the fields are missing */
	static const uint8_t short_body[] = { BT_EV_MSG, 1, 5 };
	/* OPEN with a string length beyond the body */
	static const uint8_t long_str[] = { BT_EV_OPEN, 6, 0, 2, 0, 0, 50, 'a' };
	/* body length 3 bytes long (> BT_EV_MAX_BODY) */
	static const uint8_t big[] = { BT_EV_MSG, 0xff, 0xff, 0x7f, 0 };
	/* unknown type 200 with a 3-byte body */
	static const uint8_t unknown[] = { 200, 3, 1, 2, 3 };
	/* CHAN with address family 9 */
	static const uint8_t fam[] = { BT_EV_CHAN, 8, 0, 2, 2, 1, 1, 0, 0, 9 };

	struct guarded g = guard(short_body, sizeof short_body);
	ck_assert_int_eq(bt_ev_decode(g.p, sizeof short_body, &out, &q), -1);
	unguard(&g);
	g = guard(long_str, sizeof long_str);
	ck_assert_int_eq(bt_ev_decode(g.p, sizeof long_str, &out, &q), -1);
	unguard(&g);
	g = guard(big, sizeof big);
	ck_assert_int_eq(bt_ev_decode(g.p, sizeof big, &out, &q), -1);
	unguard(&g);
	g = guard(unknown, sizeof unknown);
	ck_assert_int_eq(bt_ev_decode(g.p, sizeof unknown, &out, &q), 5);
	ck_assert_uint_eq(out.type, 200);
	unguard(&g);
	g = guard(fam, sizeof fam);
	ck_assert_int_eq(bt_ev_decode(g.p, sizeof fam, &out, &q), -1);
	unguard(&g);
}
END_TEST

/* ---- the attribute dictionary --------------------------------------------- */

/* A MSG with the given attributes (key, value pairs), at time TS. */
static void dict_msg(struct bt_event *ev, uint64_t ts, unsigned n,
		     const uint8_t *keys, const char *const *vals)
{
	fill_event(ev, BT_EV_MSG);
	ev->ts = ts;
	ev->nattr = (uint8_t)n;
	for (unsigned i = 0; i < n; i++) {
		ev->attr[i].key = keys[i];
		ev->attr[i].val = vals[i];
		ev->attr[i].len = (uint16_t)strlen(vals[i]);
	}
}

static void dict_time(struct bt_event *ev, uint64_t ts)
{
	fill_event(ev, BT_EV_TIME);
	ev->ts = ts;
}

/* The key byte of attribute I of the MSG record at P (fill_event's
 * fields: no 2-byte body length, ten one- or multi-byte varints). */
static uint8_t dict_key_byte(const uint8_t *p, size_t n, unsigned i)
{
	struct bt_event ev;
	uint64_t prev = 0;
	const uint8_t *q;
	/* walk: type, len, dt, fd dir kind proto flags off len status witness */
	ck_assert_int_gt(bt_ev_decode(p, n, &ev, &prev), 0);
	q = p + 2;
	for (int f = 0; f < 10; f++) {
		while (*q & 0x80)
			q++;
		q++;
	}
	ck_assert_uint_eq(*q, ev.nattr);
	q++;
	for (unsigned k = 0; k < i; k++) {
		uint8_t key = *q++;
		uint64_t v = 0;
		q += bt_get_varint(q, 10, &v);          /* slot or length */
		if (key & BT_AK_KEEP) {
			q += bt_get_varint(q, 10, &v);
			q += v;
		} else if (!(key & BT_AK_REF)) {
			q += v;
		}
	}
	return *q;
}

/* The slot byte of attribute I (a reference or a value remembered). */
static uint8_t dict_slot_byte(const uint8_t *p, size_t n, unsigned i)
{
	uint8_t key = dict_key_byte(p, n, i);
	ck_assert(key & (BT_AK_KEEP | BT_AK_REF));
	/* dict_key_byte's walk again, one byte further */
	const uint8_t *q = p + 2;
	for (int f = 0; f < 10; f++) {
		while (*q & 0x80)
			q++;
		q++;
	}
	q++;
	for (unsigned k = 0; k < i; k++) {
		uint8_t kk = *q++;
		uint64_t v = 0;
		q += bt_get_varint(q, 10, &v);
		if (kk & BT_AK_KEEP) {
			q += bt_get_varint(q, 10, &v);
			q += v;
		} else if (!(kk & BT_AK_REF)) {
			q += v;
		}
	}
	return q[1];
}

/* Encode, then decode against a guard page with the reader's dictionary:
 * the values come back, repeats as references, a TIME empties both sides. */
START_TEST(dict_round_trip)
{
	static const uint8_t k3[] = { BT_AK_METHOD, BT_AK_HOST, BT_AK_TRACEPARENT };
	static const char *const v1[] = { "GET", "www.example.com",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" };
	static const char *const v2[] = { "GET", "www.example.com",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-02" };
	struct bt_ev_dict *wd = malloc(sizeof *wd), *rd = malloc(sizeof *rd);
	uint8_t buf[4096];
	size_t at[8], len[8], n = 0;
	uint64_t wp = 4000000000ull, rp = 4000000000ull;
	struct bt_event ev[8];
	int nrec = 0;

	ck_assert_ptr_nonnull(wd);
	ck_assert_ptr_nonnull(rd);
	bt_ev_dict_init(wd);
	bt_ev_dict_init(rd);
	dict_time(&ev[nrec++], 4000000000ull);
	dict_msg(&ev[nrec++], 4000001000ull, 3, k3, v1);
	dict_msg(&ev[nrec++], 4000002000ull, 3, k3, v2);
	fill_event(&ev[nrec], BT_EV_OPEN);
	ev[nrec].str = "/var/www/html/index.html";
	ev[nrec++].str_len = 24;
	fill_event(&ev[nrec], BT_EV_OPEN);
	ev[nrec].str = "/var/www/html/index.html";
	ev[nrec++].str_len = 24;
	dict_time(&ev[nrec++], 4000009000ull);
	dict_msg(&ev[nrec++], 4000010000ull, 3, k3, v1);
	for (int i = 0; i < nrec; i++) {
		at[i] = n;
		len[i] = bt_ev_encode_dict(buf + n, sizeof buf - n, &ev[i], &wp, wd);
		ck_assert_uint_gt(len[i], 2);
		n += len[i];
	}
	/* the first MSG remembers method and host, not the traceparent; the
	 * second refers to them */
	ck_assert_uint_eq(dict_key_byte(buf + at[1], len[1], 0), BT_AK_METHOD | BT_AK_KEEP);
	ck_assert_uint_eq(dict_key_byte(buf + at[1], len[1], 1), BT_AK_HOST | BT_AK_KEEP);
	ck_assert_uint_eq(dict_key_byte(buf + at[1], len[1], 2), BT_AK_TRACEPARENT);
	ck_assert_uint_eq(dict_key_byte(buf + at[2], len[2], 0), BT_AK_METHOD | BT_AK_REF);
	ck_assert_uint_eq(dict_key_byte(buf + at[2], len[2], 1), BT_AK_HOST | BT_AK_REF);
	ck_assert_uint_eq(dict_key_byte(buf + at[2], len[2], 2), BT_AK_TRACEPARENT);
	/* after the TIME: remembered again */
	ck_assert_uint_eq(dict_key_byte(buf + at[6], len[6], 0), BT_AK_METHOD | BT_AK_KEEP);
	ck_assert_uint_eq(len[6], len[1]);
	/* a repeat is shorter by the values less the slot numbers */
	ck_assert_uint_eq(len[1] - len[2], 3 + 15 + 2 * 1);
	/* the OPEN path: kept, then referred to */
	ck_assert_uint_lt(len[4] + 24, len[3] + 1);

	struct guarded g = guard(buf, n);
	size_t pos = 0;
	for (int i = 0; i < nrec; i++) {
		struct bt_event out;
		long k = bt_ev_decode_dict(g.p + pos, n - pos, &out, &rp, rd);
		ck_assert_int_eq(k, (long)len[i]);
		ck_assert_uint_eq(out.type, ev[i].type);
		ck_assert_uint_eq(out.ts, ev[i].ts);
		ck_assert_uint_eq(out.dict_miss, 0);
		if (out.type == BT_EV_MSG) {
			ck_assert_uint_eq(out.nattr, ev[i].nattr);
			for (unsigned a = 0; a < out.nattr; a++) {
				ck_assert_uint_eq(out.attr[a].key, ev[i].attr[a].key);
				ck_assert_uint_eq(out.attr[a].len, ev[i].attr[a].len);
				ck_assert_mem_eq(out.attr[a].val, ev[i].attr[a].val,
						 out.attr[a].len);
			}
			ck_assert_uint_eq(out.flags, ev[i].flags);
		}
		if (out.type == BT_EV_OPEN) {
			/* the dictionary's flag bits are the format's, not
			 * the record's */
			ck_assert_uint_eq(out.flags, 0x21);
			ck_assert_uint_eq(out.str_len, 24);
			ck_assert_mem_eq(out.str, "/var/www/html/index.html", 24);
		}
		/* a decoded record encodes again to the same bytes */
		pos += (size_t)k;
	}
	ck_assert_uint_eq(pos, n);
	unguard(&g);

	/* Reading from the second MSG on (as after lost bytes, no TIME
	 * yet): its references are unknown, never guessed */
	bt_ev_dict_init(rd);
	{
		struct bt_event out;
		char text[512];
		rp = 0;
		long k = bt_ev_decode_dict(buf + at[2], len[2], &out, &rp, rd);
		ck_assert_int_eq(k, (long)len[2]);
		ck_assert_uint_eq(out.nattr, 3);
		ck_assert_uint_eq(out.dict_miss, 2);
		ck_assert_ptr_null(out.attr[0].val);
		ck_assert_uint_eq(out.attr[0].len, 0);
		ck_assert_uint_eq(out.attr[0].key, BT_AK_METHOD);
		ck_assert_ptr_null(out.attr[1].val);
		ck_assert_uint_eq(out.attr[2].len, strlen(v2[2]));
		bt_ev_format(&out, text, sizeof text);
		ck_assert_msg(strstr(text, " method=? host=? traceparent=\"00-") != NULL,
			      "%s", text);
		/* without a dictionary: the same */
		k = bt_ev_decode(buf + at[2], len[2], &out, &rp);
		ck_assert_int_eq(k, (long)len[2]);
		ck_assert_uint_eq(out.dict_miss, 2);
		/* the second OPEN alone: its path is unknown */
		k = bt_ev_decode_dict(buf + at[4], len[4], &out, &rp, rd);
		ck_assert_int_eq(k, (long)len[4]);
		ck_assert_uint_eq(out.dict_miss, 1);
		ck_assert_ptr_null(out.str);
		ck_assert_uint_eq(out.flags, 0x21);
		bt_ev_format(&out, text, sizeof text);
		ck_assert_msg(strstr(text, " path=?") != NULL, "%s", text);
	}
	/* A TIME between what was remembered and the reference: unknown */
	bt_ev_dict_init(rd);
	{
		struct bt_event out;
		rp = 0;
		ck_assert_int_gt(bt_ev_decode_dict(buf + at[1], len[1], &out, &rp, rd), 0);
		ck_assert_int_gt(bt_ev_decode_dict(buf + at[5], len[5], &out, &rp, rd), 0);
		ck_assert_int_gt(bt_ev_decode_dict(buf + at[2], len[2], &out, &rp, rd), 0);
		ck_assert_uint_eq(out.dict_miss, 2);
	}
	free(wd);
	free(rd);
}
END_TEST

/* Values longer than BT_DICT_MAXVAL are never remembered; one of exactly
 * that length is. */
START_TEST(dict_long_values)
{
	static char v97[98], v96[97];
	static const uint8_t k1[] = { BT_AK_SQL };
	const char *const a97[] = { v97 }, *const a96[] = { v96 };
	struct bt_ev_dict wd, rd;
	uint8_t buf[1024];
	uint64_t wp = 0, rp = 0;
	struct bt_event ev, out;
	size_t n1, n2;

	memset(v97, 'q', 97);
	memset(v96, 'r', 96);
	bt_ev_dict_init(&wd);
	bt_ev_dict_init(&rd);
	dict_msg(&ev, 10, 1, k1, a97);
	n1 = bt_ev_encode_dict(buf, sizeof buf, &ev, &wp, &wd);
	ck_assert_uint_eq(dict_key_byte(buf, n1, 0), BT_AK_SQL);
	ck_assert_int_eq(bt_ev_decode_dict(buf, n1, &out, &rp, &rd), (long)n1);
	n2 = bt_ev_encode_dict(buf, sizeof buf, &ev, &wp, &wd);
	ck_assert_uint_eq(n2, n1);
	ck_assert_uint_eq(dict_key_byte(buf, n2, 0), BT_AK_SQL);
	ck_assert_int_eq(bt_ev_decode_dict(buf, n2, &out, &rp, &rd), (long)n2);
	ck_assert_uint_eq(out.attr[0].len, 97);
	ck_assert_mem_eq(out.attr[0].val, v97, 97);

	dict_msg(&ev, 20, 1, k1, a96);
	n1 = bt_ev_encode_dict(buf, sizeof buf, &ev, &wp, &wd);
	ck_assert_uint_eq(dict_key_byte(buf, n1, 0), BT_AK_SQL | BT_AK_KEEP);
	ck_assert_int_eq(bt_ev_decode_dict(buf, n1, &out, &rp, &rd), (long)n1);
	n2 = bt_ev_encode_dict(buf, sizeof buf, &ev, &wp, &wd);
	ck_assert_uint_eq(dict_key_byte(buf, n2, 0), BT_AK_SQL | BT_AK_REF);
	ck_assert_int_eq(bt_ev_decode_dict(buf, n2, &out, &rp, &rd), (long)n2);
	ck_assert_uint_eq(out.dict_miss, 0);
	ck_assert_uint_eq(out.attr[0].len, 96);
	ck_assert_mem_eq(out.attr[0].val, v96, 96);
}
END_TEST

/* Damage: a reference to an empty slot is unknown (counted), a slot
 * number out of range or both flag bits make the record malformed, and a
 * malformed record empties the reader's dictionary. */
START_TEST(dict_damage)
{
	struct bt_ev_dict rd;
	struct bt_event out;
	uint64_t q = 0;
	/* MSG: dt fd dir kind proto flags off len status witness, 1 attr */
	static const uint8_t ref_empty[] = { BT_EV_MSG, 13, 0, 2, 0, 1, 1, 0,
		0, 0, 0, 0, 1, BT_AK_METHOD | BT_AK_REF, 5 };
	static const uint8_t ref_range[] = { BT_EV_MSG, 13, 0, 2, 0, 1, 1, 0,
		0, 0, 0, 0, 1, BT_AK_METHOD | BT_AK_REF, BT_DICT_SLOTS };
	static const uint8_t both[] = { BT_EV_MSG, 13, 0, 2, 0, 1, 1, 0,
		0, 0, 0, 0, 1, BT_AK_METHOD | BT_AK_REF | BT_AK_KEEP, 5 };
	static const uint8_t keep[] = { BT_EV_MSG, 17, 0, 2, 0, 1, 1, 0,
		0, 0, 0, 0, 1, BT_AK_METHOD | BT_AK_KEEP, 5, 3, 'G', 'E', 'T' };
	/* OPEN with both path flags: flags 0x0c000000 as a varint */
	static const uint8_t open_both[] = { BT_EV_OPEN, 9, 0, 2,
		0x80, 0x80, 0x80, 0x60, 2, 5, 0 };

	bt_ev_dict_init(&rd);
	struct guarded g = guard(ref_empty, sizeof ref_empty);
	ck_assert_int_eq(bt_ev_decode_dict(g.p, sizeof ref_empty, &out, &q, &rd),
			 (long)sizeof ref_empty);
	ck_assert_uint_eq(out.nattr, 1);
	ck_assert_uint_eq(out.dict_miss, 1);
	ck_assert_ptr_null(out.attr[0].val);
	unguard(&g);
	g = guard(keep, sizeof keep);
	ck_assert_int_eq(bt_ev_decode_dict(g.p, sizeof keep, &out, &q, &rd),
			 (long)sizeof keep);
	unguard(&g);
	ck_assert_int_eq(bt_ev_decode_dict(ref_empty, sizeof ref_empty, &out,
					   &q, &rd), (long)sizeof ref_empty);
	ck_assert_uint_eq(out.dict_miss, 0);
	ck_assert_uint_eq(out.attr[0].len, 3);
	ck_assert_mem_eq(out.attr[0].val, "GET", 3);
	g = guard(ref_range, sizeof ref_range);
	ck_assert_int_eq(bt_ev_decode_dict(g.p, sizeof ref_range, &out, &q, &rd), -1);
	unguard(&g);
	/* the malformed record emptied the dictionary */
	ck_assert_int_eq(bt_ev_decode_dict(ref_empty, sizeof ref_empty, &out,
					   &q, &rd), (long)sizeof ref_empty);
	ck_assert_uint_eq(out.dict_miss, 1);
	g = guard(both, sizeof both);
	ck_assert_int_eq(bt_ev_decode_dict(g.p, sizeof both, &out, &q, &rd), -1);
	unguard(&g);
	g = guard(open_both, sizeof open_both);
	ck_assert_int_eq(bt_ev_decode_dict(g.p, sizeof open_both, &out, &q, &rd), -1);
	unguard(&g);
}
END_TEST

/* With a dictionary too, the fast encoders (bt_ev_encode_msg, the one of
 * bt_emit_msg; encode_fast) and the careful one write the same bytes and
 * leave the same dictionary; a record that does not fit changes nothing. */
START_TEST(dict_fast_equals_careful)
{
	static const uint8_t keys[] = { BT_AK_METHOD, BT_AK_TARGET, BT_AK_HOST,
					BT_AK_STATUS_TEXT };
	static const char *const v[3][4] = {
		{ "GET", "/index.html", "localhost", "OK" },
		{ "GET", "/other.html", "localhost", "OK" },
		{ "POST", "/index.html", "localhost", "Not Found" },
	};
	struct bt_ev_dict *d1 = malloc(sizeof *d1), *d2 = malloc(sizeof *d2),
			  *d3 = malloc(sizeof *d3);
	uint64_t p1 = 1000, p2 = 1000, p3 = 1000;

	bt_ev_dict_init(d1);
	bt_ev_dict_init(d2);
	bt_ev_dict_init(d3);
	for (int round = 0; round < 3; round++) {
		for (int r = 0; r < 3; r++) {
			struct bt_event ev;
			uint8_t a[1024], b[1024], c[1024];
			dict_msg(&ev, 2000 + 100 * (uint64_t)(round * 3 + r), 4, keys, v[r]);
			if (round == 2 && r == 1) {
				/* an OPEN in between */
				fill_event(&ev, BT_EV_OPEN);
				ev.ts = 2000 + 100 * (uint64_t)(round * 3 + r);
				ev.str = v[r][1];
				ev.str_len = (uint32_t)strlen(v[r][1]);
			}
			size_t n = bt_ev_encode_dict(a, sizeof a, &ev, &p1, d1);
			ck_assert_uint_gt(n, 2);
			/* too small: nothing written, nothing remembered */
			struct bt_ev_dict before = *d2;
			uint64_t pb = p2;
			ck_assert_uint_eq(bt_ev_encode_dict(b, 6, &ev, &p2, d2), 0);
			ck_assert_mem_eq(&before, d2, sizeof before);
			ck_assert_uint_eq(pb, p2);
			/* below the fast paths' bound: the careful encoder
			 * (which cuts a plain attribute leaving fewer than 4
			 * bytes free, as in ev_fast_equals_careful) */
			size_t m = bt_ev_encode_dict(b, n + 8, &ev, &p2, d2);
			ck_assert_uint_eq(m, n);
			ck_assert_mem_eq(a, b, n);
			if (ev.type == BT_EV_MSG) {
				struct bt_msg_rec mr = {
					.ts = ev.ts, .fd = ev.fd, .dir = ev.dir,
					.kind = ev.kind, .proto = ev.proto,
					.nattr = ev.nattr, .flags = ev.flags,
					.status = ev.status, .off = ev.off,
					.len = ev.len, .witness = ev.witness,
					.attr = ev.attr,
				};
				size_t k = bt_ev_encode_msg(c, sizeof c, &mr, &p3, d3);
				ck_assert_uint_eq(k, n);
				ck_assert_mem_eq(a, c, n);
			} else {
				ck_assert_uint_eq(bt_ev_encode_dict(c, sizeof c, &ev,
								    &p3, d3), n);
			}
			ck_assert_mem_eq(d1, d2, sizeof *d1);
			ck_assert_mem_eq(d1, d3, sizeof *d1);
		}
	}
	free(d1);
	free(d2);
	free(d3);
}
END_TEST

/* A record never remembers a value in a slot it used before: the value an
 * earlier reference of the record resolved to must stay.  A value has two
 * slots: the writer remembers it in the second when the record used the
 * first, and writes it plain when the record used both; a reader takes a
 * record that does otherwise as malformed. */
static void dict_one(struct bt_ev_dict *d, uint64_t *prev, uint8_t key,
		     const char *v, uint8_t *buf, size_t *n)
{
	struct bt_event ev;
	const uint8_t k[] = { key };
	const char *vv[] = { v };

	dict_msg(&ev, 10, 1, k, vv);
	*n = bt_ev_encode_dict(buf, 512, &ev, prev, d);
	ck_assert_uint_gt(*n, 2);
}

/* A value PREFIX followed by a number whose first slot (in an empty
 * dictionary) is SLOT, into BUF. */
static int dict_value_for(int slot, const char *prefix, char *buf, size_t cap)
{
	uint8_t rec[512];
	size_t m;

	for (int i = 0; i < 100000; i++) {
		struct bt_ev_dict fresh;
		uint64_t p = 0;
		snprintf(buf, cap, "%s%d", prefix, i);
		bt_ev_dict_init(&fresh);
		dict_one(&fresh, &p, BT_AK_TARGET, buf, rec, &m);
		if (dict_slot_byte(rec, m, 0) == slot)
			return 1;
	}
	return 0;
}

START_TEST(dict_slot_reused_in_record)
{
	static const uint8_t k2[] = { BT_AK_METHOD, BT_AK_TARGET },
			     k3[] = { BT_AK_METHOD, BT_AK_HOST, BT_AK_TARGET };
	struct bt_ev_dict wd, rd;
	uint8_t buf[512];
	char other[32], third[32];
	uint64_t wp = 0, rp = 0;
	struct bt_event ev, out;
	size_t n;
	int slot_a, slot_b;

	/* the slot of "GET", then another value with the same first slot */
	bt_ev_dict_init(&wd);
	dict_one(&wd, &wp, BT_AK_METHOD, "GET", buf, &n);
	ck_assert_uint_eq(dict_key_byte(buf, n, 0), BT_AK_METHOD | BT_AK_KEEP);
	slot_a = dict_slot_byte(buf, n, 0);
	ck_assert_msg(dict_value_for(slot_a, "/v", other, sizeof other),
		      "no value shares the slot of GET");

	/* "GET" remembered; then a record referring to it and holding the
	 * other value: that one goes to its second slot */
	bt_ev_dict_init(&wd);
	bt_ev_dict_init(&rd);
	wp = 0;
	dict_one(&wd, &wp, BT_AK_METHOD, "GET", buf, &n);
	ck_assert_int_eq(bt_ev_decode_dict(buf, n, &out, &rp, &rd), (long)n);
	const char *v2[] = { "GET", other };
	dict_msg(&ev, 20, 2, k2, v2);
	n = bt_ev_encode_dict(buf, sizeof buf, &ev, &wp, &wd);
	ck_assert_uint_eq(dict_key_byte(buf, n, 0), BT_AK_METHOD | BT_AK_REF);
	ck_assert_uint_eq(dict_key_byte(buf, n, 1), BT_AK_TARGET | BT_AK_KEEP);
	slot_b = dict_slot_byte(buf, n, 1);
	ck_assert_int_ne(slot_b, slot_a);
	ck_assert_int_eq(bt_ev_decode_dict(buf, n, &out, &rp, &rd), (long)n);
	ck_assert_uint_eq(out.attr[0].len, 3);
	ck_assert_mem_eq(out.attr[0].val, "GET", 3);
	ck_assert_mem_eq(out.attr[1].val, other, strlen(other));
	/* both stay: the next such record refers to both */
	n = bt_ev_encode_dict(buf, sizeof buf, &ev, &wp, &wd);
	ck_assert_uint_eq(dict_key_byte(buf, n, 0), BT_AK_METHOD | BT_AK_REF);
	ck_assert_uint_eq(dict_key_byte(buf, n, 1), BT_AK_TARGET | BT_AK_REF);
	ck_assert_int_eq(dict_slot_byte(buf, n, 1), slot_b);
	ck_assert_int_eq(bt_ev_decode_dict(buf, n, &out, &rp, &rd), (long)n);
	ck_assert_mem_eq(out.attr[1].val, other, strlen(other));

	/* a record that used both slots of the other value (GET in the
	 * first, a third value, whose first slot is the other's second, in
	 * that): the other value goes out plain */
	ck_assert_msg(dict_value_for(slot_b, "h", third, sizeof third),
		      "no value has the other's second slot first");
	bt_ev_dict_init(&wd);
	bt_ev_dict_init(&rd);
	wp = rp = 0;
	dict_one(&wd, &wp, BT_AK_METHOD, "GET", buf, &n);
	ck_assert_int_eq(bt_ev_decode_dict(buf, n, &out, &rp, &rd), (long)n);
	const char *v3[] = { "GET", third, other };
	dict_msg(&ev, 30, 3, k3, v3);
	n = bt_ev_encode_dict(buf, sizeof buf, &ev, &wp, &wd);
	ck_assert_uint_eq(dict_key_byte(buf, n, 0), BT_AK_METHOD | BT_AK_REF);
	ck_assert_uint_eq(dict_key_byte(buf, n, 1), BT_AK_HOST | BT_AK_KEEP);
	ck_assert_int_eq(dict_slot_byte(buf, n, 1), slot_b);
	ck_assert_uint_eq(dict_key_byte(buf, n, 2), BT_AK_TARGET);
	ck_assert_int_eq(bt_ev_decode_dict(buf, n, &out, &rp, &rd), (long)n);
	ck_assert_mem_eq(out.attr[1].val, third, strlen(third));
	ck_assert_mem_eq(out.attr[2].val, other, strlen(other));

	/* the same record written against the rule: malformed */
	uint8_t bad[64];
	size_t k = 0, body;
	bad[k++] = BT_EV_MSG;
	bad[k++] = 0;
	for (int f = 0; f < 10; f++)
		bad[k++] = 0;                   /* dt and nine fields */
	bad[k++] = 2;
	bad[k++] = BT_AK_METHOD | BT_AK_REF;
	bad[k++] = (uint8_t)slot_a;
	bad[k++] = BT_AK_TARGET | BT_AK_KEEP;
	bad[k++] = (uint8_t)slot_a;
	bad[k++] = (uint8_t)strlen(other);
	memcpy(bad + k, other, strlen(other));
	k += strlen(other);
	body = k - 2;
	bad[1] = (uint8_t)body;
	ck_assert_int_eq(bt_ev_decode_dict(bad, k, &out, &rp, &rd), -1);
}
END_TEST

/* Pseudo-random MSG records (small and large fields, values from a small
 * pool so that they repeat and share slots, up to eight attributes, keys
 * never remembered, resets): the MSG encoder, the fast and the careful
 * one write the same bytes and leave the same dictionary, and the reader
 * gets every field and value back, never an unknown one. */
static uint64_t rnd_state = 0x2545f4914f6cdd1dull;
static uint64_t rnd64(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static uint64_t rnd_field(void)
{
	switch (rnd64() % 5) {
	case 0:  return 0;
	case 1:  return rnd64() % 128;
	case 2:  return rnd64() % 20000;
	case 3:  return rnd64() % (1ull << 30);
	default: return rnd64() >> (rnd64() % 64);
	}
}

START_TEST(dict_random_msgs)
{
	static char pool[48][112];
	struct bt_ev_dict *d1 = malloc(sizeof *d1), *d2 = malloc(sizeof *d2),
			  *d3 = malloc(sizeof *d3), *rd = malloc(sizeof *rd);
	uint64_t p1 = 0, p2 = 0, p3 = 0, pr = 0, ts = 1;
	uint8_t a[2048], b[2048], c[BT_EV_MAX_RECORD];

	for (int i = 0; i < 48; i++)
		for (int j = 0; j < 112; j++)
			pool[i][j] = (char)(rnd64() % 4 ? (int)('a' + rnd64() % 3)
						       : (int)rnd64());
	bt_ev_dict_init(d1);
	bt_ev_dict_init(d2);
	bt_ev_dict_init(d3);
	bt_ev_dict_init(rd);
	for (int i = 0; i < 20000; i++) {
		struct bt_attr at[BT_EV_MAX_ATTR];
		struct bt_event ev, out;
		memset(&ev, 0, sizeof ev);
		ev.type = BT_EV_MSG;
		ts += rnd64() % 8 ? rnd64() % 100000
				  : rnd_field() % (1ull << 40);
		ev.ts = ts;
		ev.fd = (int32_t)(rnd64() % 70) * (rnd64() % 9 ? 1 : -1);
		ev.dir = (uint8_t)(rnd64() % 2);
		ev.kind = (uint8_t)(rnd64() % 8 ? rnd64() % 4 : rnd64());
		ev.proto = (uint8_t)(rnd64() % 8 ? rnd64() % 10 : rnd64());
		ev.flags = (uint32_t)(rnd64() % 4 ? rnd64() % 8 : rnd_field());
		ev.status = (uint32_t)(rnd64() % 3 ? rnd64() % 600
						   : rnd_field());
		ev.off = rnd_field();
		ev.len = rnd_field();
		ev.witness = rnd64() % 3 ? 0 : rnd_field();
		ev.nattr = (uint8_t)(rnd64() % (BT_EV_MAX_ATTR + 1));
		for (unsigned k = 0; k < ev.nattr; k++) {
			at[k].key = (uint8_t)(rnd64() % 8 ? 1 + rnd64() % 20
							  : rnd64() % 64);
			at[k].val = pool[rnd64() % (rnd64() % 2 ? 6 : 48)] +
				    rnd64() % 8;
			at[k].len = (uint16_t)(rnd64() % 4 ? rnd64() % 20
							   : rnd64() % 100);
			ev.attr[k] = at[k];
		}
		if (rnd64() % 400 == 0) {
			/* a TIME: every dictionary empties */
			struct bt_event te;
			dict_time(&te, ts);
			size_t t1 = bt_ev_encode_dict(a, sizeof a, &te, &p1,
						      d1);
			ck_assert_uint_eq(bt_ev_encode_dict(b, sizeof b, &te,
							    &p2, d2), t1);
			ck_assert_uint_eq(bt_ev_encode_dict(c, sizeof c, &te,
							    &p3, d3), t1);
			ck_assert_int_eq(bt_ev_decode_dict(a, t1, &out, &pr,
							   rd), (long)t1);
		}
		struct bt_msg_rec mr = {
			.ts = ev.ts, .fd = ev.fd, .dir = ev.dir,
			.kind = ev.kind, .proto = ev.proto,
			.nattr = ev.nattr, .flags = ev.flags,
			.status = ev.status, .off = ev.off, .len = ev.len,
			.witness = ev.witness, .attr = at,
		};
		size_t n1 = bt_ev_encode_msg(a, sizeof a, &mr, &p1, d1);
		size_t n2 = bt_ev_encode_careful(b, sizeof b, &ev, &p2, d2);
		size_t n3 = bt_ev_encode_fast(c, &ev, &p3, d3);
		ck_assert_uint_gt(n1, 2);
		ck_assert_uint_eq(n2, n1);
		ck_assert_uint_eq(n3, n1);
		ck_assert_mem_eq(a, b, n1);
		ck_assert_mem_eq(a, c, n1);
		ck_assert_mem_eq(d1, d2, sizeof *d1);
		ck_assert_mem_eq(d1, d3, sizeof *d1);
		ck_assert_int_eq(bt_ev_decode_dict(a, n1, &out, &pr, rd),
				 (long)n1);
		ck_assert_uint_eq(out.dict_miss, 0);
		ck_assert_uint_eq(out.ts, ev.ts);
		ck_assert_int_eq(out.fd, ev.fd);
		ck_assert_uint_eq(out.dir, ev.dir);
		ck_assert_uint_eq(out.kind, ev.kind);
		ck_assert_uint_eq(out.proto, ev.proto);
		ck_assert_uint_eq(out.flags, ev.flags);
		ck_assert_uint_eq(out.status, ev.status);
		ck_assert_uint_eq(out.off, ev.off);
		ck_assert_uint_eq(out.len, ev.len);
		ck_assert_uint_eq(out.witness, ev.witness);
		ck_assert_uint_eq(out.nattr, ev.nattr);
		for (unsigned k = 0; k < ev.nattr; k++) {
			ck_assert_uint_eq(out.attr[k].key, at[k].key);
			ck_assert_uint_eq(out.attr[k].len, at[k].len);
			ck_assert_mem_eq(out.attr[k].val, at[k].val, at[k].len);
		}
	}
	free(d1);
	free(d2);
	free(d3);
	free(rd);
}
END_TEST

/* bp-dump's reader (readlog): references resolve across blocks; one whose
 * value was remembered in bytes the reader never got (a lost block) is
 * reported and read as unknown, never guessed. */
struct rl_seen { int msgs, unknown, warns; char method[16]; };

static void rl_record(void *ctx, struct readlog_stream *s,
		      const struct bt_event *ev)
{
	struct rl_seen *r = ctx;
	(void)s;
	if (ev->type != BT_EV_MSG)
		return;
	r->msgs++;
	if (!ev->attr[0].val)
		r->unknown++;
	else
		snprintf(r->method, sizeof r->method, "%.*s",
			 (int)ev->attr[0].len, ev->attr[0].val);
}

static void rl_warn(void *ctx, const char *path, uint64_t off, const char *why)
{
	struct rl_seen *r = ctx;
	(void)path;
	(void)off;
	if (why && strstr(why, "dictionary does not hold"))
		r->warns++;
}

static long rl_wr(int fd, const void *buf, size_t len)
{
	return (long)write(fd, buf, len);
}

/* A segment at PATH with blocks B1 (unless SKIP1) and B2, B2 at stream
 * offset OFF2. */
static void rl_file(const char *path, const uint8_t *b1, size_t n1,
		    const uint8_t *b2, size_t n2, uint64_t off2, int skip1)
{
	struct bt_seg_header sh;
	uint8_t hb[BT_SEG_HDR_SIZE];
	struct bt_blk_header h = { .ring_id = 77, .pid = 42, .slot = 1 };
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	memset(&sh, 0, sizeof sh);
	snprintf(sh.host, sizeof sh.host, "h");
	sh.writer = BT_SEG_BY_LOGD;
	bt_seg_header_encode(hb, &sh);
	ck_assert_int_eq(write(fd, hb, sizeof hb), (ssize_t)sizeof hb);
	if (!skip1) {
		h.len = (uint32_t)n1;
		h.stream_off = 0;
		ck_assert_int_eq(bt_seg_write_block(fd, rl_wr, &h, b1), 0);
	}
	h.len = (uint32_t)n2;
	h.stream_off = off2;
	ck_assert_int_eq(bt_seg_write_block(fd, rl_wr, &h, b2), 0);
	close(fd);
}

START_TEST(readlog_dictionary_across_blocks)
{
	static const uint8_t k1[] = { BT_AK_METHOD };
	const char *v[] = { "OPTIONS" };
	struct bt_ev_dict wd;
	struct bt_event ev;
	uint8_t b1[256], b2[256];
	size_t n1 = 0, n2;
	uint64_t wp = 0;
	char path[160], *paths[1] = { path };
	struct bt_sr_list list = { paths, 1, 1 };

	bt_ev_dict_init(&wd);
	dict_time(&ev, 1000);
	n1 += bt_ev_encode_dict(b1 + n1, sizeof b1 - n1, &ev, &wp, &wd);
	dict_msg(&ev, 2000, 1, k1, v);
	n1 += bt_ev_encode_dict(b1 + n1, sizeof b1 - n1, &ev, &wp, &wd);
	dict_msg(&ev, 3000, 1, k1, v);
	n2 = bt_ev_encode_dict(b2, sizeof b2, &ev, &wp, &wd);
	ck_assert_uint_eq(dict_key_byte(b2, n2, 0), BT_AK_METHOD | BT_AK_REF);
	snprintf(path, sizeof path, "%s/rl.btl", tmpdir);

	static const struct readlog_ops ops = { NULL, NULL, rl_record, rl_warn };
	for (int variant = 0; variant < 3; variant++) {
		struct rl_seen seen = { 0 };
		struct readlog_stats st;
		/* 0: both blocks; 1: the first lost (the stream starts
		 * later); 2: a gap between them */
		rl_file(path, b1, n1, b2, n2, n1 + (variant == 2 ? 10 : 0),
			variant == 1);
		memset(&st, 0, sizeof st);
		readlog_run(&list, 1, &ops, &seen, &st);
		ck_assert_int_eq(seen.msgs, variant == 1 ? 1 : 2);
		if (variant == 0) {
			ck_assert_int_eq(seen.unknown, 0);
			ck_assert_int_eq(seen.warns, 0);
			ck_assert_str_eq(seen.method, "OPTIONS");
		} else {
			ck_assert_int_eq(seen.unknown, 1);
			ck_assert_int_eq(seen.warns, 1);
		}
	}
}
END_TEST

/* A segment at PATH (sequence number SEQ, created at monotonic time MONO)
 * with the blocks B[i] of N[i] bytes at stream offsets OFF[i]. */
static void rl_file_n(const char *path, uint64_t seq, uint64_t mono, int nb,
		      uint8_t (*b)[256], const size_t *n, const uint64_t *off)
{
	struct bt_seg_header sh;
	uint8_t hb[BT_SEG_HDR_SIZE];
	struct bt_blk_header h = { .ring_id = 77, .pid = 42, .slot = 1 };
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	memset(&sh, 0, sizeof sh);
	snprintf(sh.host, sizeof sh.host, "h");
	sh.writer = BT_SEG_BY_LOGD;
	sh.seq = seq;
	sh.created_mono = mono;
	bt_seg_header_encode(hb, &sh);
	ck_assert_int_eq(write(fd, hb, sizeof hb), (ssize_t)sizeof hb);
	for (int i = 0; i < nb; i++) {
		h.len = (uint32_t)n[i];
		h.stream_off = off[i];
		ck_assert_int_eq(bt_seg_write_block(fd, rl_wr, &h, b[i]), 0);
	}
	close(fd);
}

/* A stream's middle block in a file read after the one holding the blocks
 * before and after it (a tracer spooled while bp-logd could not write,
 * then bp-logd went on in its older segment): every record is read once,
 * nothing is taken for a duplicate or missing. */
START_TEST(readlog_block_in_a_later_file)
{
	static const uint8_t k1[] = { BT_AK_METHOD };
	const char *v[] = { "GET" };
	uint8_t b[3][256];
	size_t n[3];
	uint64_t off[3] = { 0 };
	char p1[160], p2[160], *paths[2] = { p1, p2 };
	struct bt_sr_list list = { paths, 2, 2 };
	struct rl_seen seen = { 0 };
	struct readlog_stats st;
	static const struct readlog_ops ops = { NULL, NULL, rl_record, rl_warn };

	for (int i = 0; i < 3; i++) {
		struct bt_ev_dict wd;
		struct bt_event ev;
		uint64_t wp = 0;
		bt_ev_dict_init(&wd);
		dict_time(&ev, 1000 * (uint64_t)(i + 1));
		n[i] = bt_ev_encode_dict(b[i], sizeof b[i], &ev, &wp, &wd);
		dict_msg(&ev, 1000 * (uint64_t)(i + 1) + 10, 1, k1, v);
		n[i] += bt_ev_encode_dict(b[i] + n[i], sizeof b[i] - n[i], &ev,
					  &wp, &wd);
		if (i)
			off[i] = off[i - 1] + n[i - 1];
	}
	snprintf(p1, sizeof p1, "%s/rl1.btl", tmpdir);
	snprintf(p2, sizeof p2, "%s/rl2.btl", tmpdir);
	uint8_t outer[2][256];
	size_t on[2] = { n[0], n[2] };
	uint64_t ooff[2] = { off[0], off[2] };
	memcpy(outer[0], b[0], n[0]);
	memcpy(outer[1], b[2], n[2]);
	rl_file_n(p1, 1, 100, 2, outer, on, ooff);
	rl_file_n(p2, 2, 200, 1, &b[1], &n[1], &off[1]);
	memset(&st, 0, sizeof st);
	ck_assert_int_eq(readlog_run(&list, 1, &ops, &seen, &st), 0);
	ck_assert_int_eq(seen.msgs, 3);
	ck_assert_int_eq(seen.unknown, 0);
	ck_assert_uint_eq(st.dup_bytes, 0);
	ck_assert_uint_eq(st.gap_bytes, 0);
	ck_assert_uint_eq(st.streams, 1);
	/* the same middle block twice: read once */
	memcpy(outer[1], b[1], n[1]);
	on[1] = n[1];
	ooff[1] = off[1];
	rl_file_n(p1, 1, 100, 2, outer, on, ooff);
	memset(&seen, 0, sizeof seen);
	memset(&st, 0, sizeof st);
	ck_assert_int_eq(readlog_run(&list, 1, &ops, &seen, &st), 0);
	ck_assert_int_eq(seen.msgs, 2);
	ck_assert_uint_eq(st.dup_blocks, 1);
	ck_assert_uint_eq(st.dup_bytes, n[1]);
}
END_TEST

/* ---- readers' duplicate removal ------------------------------------------ */

START_TEST(dedup_overlaps)
{
	/* index order: host, soff, len, slot, flags */
	static const struct { uint32_t host; uint64_t soff; uint32_t len;
			      uint16_t slot; uint32_t flags; } in[] = {
		{ 0, 1000, 100, 61, 0 },   /* seen from the middle */
		{ 0, 1100, 100, 61, 0 },   /* contiguous */
		{ 0, 1100, 150, 61, 0 },   /* written twice, then more:
					      the longer copy is kept */
		{ 0, 1100,  20, 61, 0 },   /* entirely old */
		{ 0, 1310,  90, 61, 0 },   /* before its predecessor */
		{ 0, 1300,  10, 61, 0 },   /* 50 bytes missing */
		{ 0, 1400,  10, 61, BT_BF_GAP },  /* the writer lost bytes */
		{ 1,    0,  10, 61, BT_BF_GAP },  /* other host: a stream */
		{ 0,    0,  10, 62, 0 },   /* other slot: a stream */
	};
	/* expected in sorted order: index, skip, gap, cut */
	static const struct { uint32_t seq, skip; uint64_t gap; uint32_t cut; } out[] = {
		{ 0,   0, 1000, BT_SR_FIRST | BT_SR_LOST },
		{ 2,   0,    0, 0 },
		{ 1, 100,    0, BT_SR_DUP },
		{ 3,  20,    0, BT_SR_DUP },
		{ 5,   0,   50, BT_SR_LOST },
		{ 4,   0,    0, 0 },
		{ 6,   0,    0, BT_SR_LOST },
		{ 8,   0,    0, BT_SR_FIRST },
		{ 7,   0,    0, BT_SR_FIRST },
	};
	struct bt_segset set = { 0 };
	size_t n = sizeof in / sizeof in[0];

	set.blocks = calloc(n, sizeof *set.blocks);
	ck_assert_ptr_nonnull(set.blocks);
	for (size_t i = 0; i < n; i++) {
		struct bt_sr_block *b = &set.blocks[i];
		b->host = in[i].host;
		b->ring_id = 9;
		b->pid = 10;
		b->slot = in[i].slot;
		b->soff = in[i].soff;
		b->len = in[i].len;
		b->flags = in[i].flags;
		b->seq = (uint32_t)i;
	}
	set.nblocks = (uint32_t)n;
	bt_segset_sort(&set);
	ck_assert_uint_eq(set.nstreams, 3);
	for (size_t i = 0; i < n; i++) {
		const struct bt_sr_block *b = &set.blocks[i];
		ck_assert_uint_eq(b->seq, out[i].seq);
		ck_assert_uint_eq(b->skip, out[i].skip);
		ck_assert_uint_eq(b->gap, out[i].gap);
		ck_assert_uint_eq(b->cut, out[i].cut);
		ck_assert_uint_eq(b->stream, i < 7 ? 0 : i == 7 ? 1 : 2);
	}
	bt_segset_free(&set);
}
END_TEST

/* ---- bp-logd's check that a slot's bytes are whole records --------------- */

START_TEST(logd_record_boundaries)
{
	uint8_t b[600];
	struct bt_event ev;
	uint64_t p = 0;
	size_t n = 0, r1;

	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_TIME;
	ev.ts = 1;
	n += bt_ev_encode(b, sizeof b, &ev, &p);
	r1 = n;
	fill_event(&ev, BT_EV_MSG);
	n += bt_ev_encode(b + n, sizeof b - n, &ev, &p);
	/* a 200-byte PAD (2-byte length) */
	b[n] = BT_EV_PAD;
	b[n + 1] = (uint8_t)((200 - 3) | 0x80);
	b[n + 2] = (uint8_t)((200 - 3) >> 7);
	memset(b + n + 3, 0, 197);
	n += 200;
	ck_assert_int_eq(chunk_check_records(b, n, n), -1);
	ck_assert_int_eq(chunk_check_records(b, n, r1), -1);   /* split at a boundary */
	ck_assert_int_eq(chunk_check_records(b, n, r1 + 1), (long)r1);  /* record straddles */
	ck_assert_int_eq(chunk_check_records(b, n - 1, n - 1), (long)(n - 200)); /* cut PAD */
	ck_assert_int_eq(chunk_check_records(b, r1 + 1, r1 + 1), (long)r1); /* 1 byte left */
	b[n] = BT_EV_MSG;
	b[n + 1] = 0xff;               /* body length > max */
	b[n + 2] = 0xff;
	b[n + 3] = 0x01;
	ck_assert_int_eq(chunk_check_records(b, n + 4, n + 4), (long)n);
	ck_assert_int_eq(chunk_check_records(b, 0, 0), -1);
}
END_TEST

/* Unmap OLD (if any), set slot 0's tail back to 0 and map the chunk in
 * FD again as adopt.c does (ring 0x1234, pid 77). */
static struct chunk *adopt_again(struct chunk *old, int fd,
				 const struct bt_lm_chunk *m,
				 struct bt_chunk_hdr *h)
{
	struct chunk *c;
	char why[256];

	chunk_unmap(old);
	h->slot[0].tail = 0;
	ck_assert_int_eq(chunk_map(fd, m, 0x1234, 77, &c, why, sizeof why), 0);
	c->adopted = 1;
	return c;
}

/* A chunk adopted from /proc (logd/adopt.c): its tracer is not connected
 * and may drain a slot itself (its spool).  A copy made while the shared
 * tail moved is refused (-EAGAIN), and the acknowledgement advances the
 * shared tail only from where the copy began: never backwards over what
 * the tracer took. */
START_TEST(logd_adopted_chunk_tail)
{
	const uint32_t slot_size = BT_RING_MIN_SLOT;
	const size_t map = BT_RING_PAGE + slot_size;
	int fd = (int)syscall(SYS_memfd_create, "btrace-ring", MFD_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)map), 0);
	uint8_t *base = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_SHARED,
			     fd, 0);
	ck_assert_ptr_ne(base, MAP_FAILED);
	struct bt_chunk_hdr *h = (struct bt_chunk_hdr *)(void *)base;
	h->magic = BT_RING_MAGIC;
	h->version = BT_RING_VERSION;
	h->ring_id = 0x1234;
	h->pid = 77;
	h->chunk = 0;
	h->nslots = 1;
	h->slot_size = slot_size;

	/* two records in slot 0: [0, r1) and [r1, n) */
	uint8_t *data = BT_SLOT_DATA(base, slot_size, 0);
	struct bt_event ev;
	uint64_t p = 0;
	size_t n, r1;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_TIME;
	ev.ts = 1;
	r1 = bt_ev_encode(data, slot_size, &ev, &p);
	fill_event(&ev, BT_EV_MSG);
	n = r1 + bt_ev_encode(data + r1, slot_size - r1, &ev, &p);
	h->slot[0].head = n;

	struct bt_lm_chunk m;
	memset(&m, 0, sizeof m);
	m.chunk = 0;
	m.nslots = 1;
	m.slot_size = slot_size;
	m.map_size = map;
	struct chunk *c;
	char why[256];
	uint8_t *buf = malloc(BT_RING_MAX_SLOT);
	uint64_t head;
	uint32_t gen;
	ck_assert_ptr_nonnull(buf);

	/* connected (not adopted): the shared tail is only a mirror */
	ck_assert_int_eq(chunk_map(fd, &m, 0x1234, 77, &c, why, sizeof why), 0);
	ck_assert_int_eq(chunk_set_key(c, 0xabcdef), 0);
	ck_assert_uint_eq(h->logd_key, 0xabcdef);
	h->slot[0].tail = r1;
	ck_assert_int_eq(chunk_read_slot(c, 0, buf, &head, &gen, why, sizeof why),
			 (long)n);
	ck_assert_int_eq(chunk_ack(c, 0, head), 0);
	ck_assert_uint_eq(h->slot[0].tail, n);
	chunk_unmap(c);

	/* adopted: the tracer spooled the first record after the map */
	c = adopt_again(NULL, fd, &m, h);
	h->slot[0].tail = r1;
	ck_assert_int_eq(chunk_read_slot(c, 0, buf, &head, &gen, why, sizeof why),
			 -EAGAIN);
	ck_assert_ptr_nonnull(strstr(why, "drained it itself"));
	ck_assert_uint_eq(h->slot[0].tail, r1);
	/* and went on writing: more than a slot past bp-logd's tail, which
	 * is no malformed slot but the same case */
	h->slot[0].head = r1 + slot_size;
	ck_assert_int_eq(chunk_read_slot(c, 0, buf, &head, &gen, why, sizeof why),
			 -EAGAIN);
	h->slot[0].head = n;

	/* adopted, the tail unmoved while copying: the copy holds; the
	 * tracer spools the first record before the acknowledgement, which
	 * then leaves the shared tail where the tracer put it */
	c = adopt_again(c, fd, &m, h);
	ck_assert_int_eq(chunk_read_slot(c, 0, buf, &head, &gen, why, sizeof why),
			 (long)n);
	ck_assert_int_eq(memcmp(buf, data, n), 0);
	h->slot[0].tail = r1;
	ck_assert_int_eq(chunk_ack(c, 0, head), 0);
	ck_assert_uint_eq(h->slot[0].tail, r1);

	/* and with nobody else draining, it advances as usual */
	c = adopt_again(c, fd, &m, h);
	ck_assert_int_eq(chunk_read_slot(c, 0, buf, &head, &gen, why, sizeof why),
			 (long)n);
	ck_assert_int_eq(chunk_ack(c, 0, head), 0);
	ck_assert_uint_eq(h->slot[0].tail, n);
	chunk_unmap(c);
	free(buf);
	munmap(base, map);
	close(fd);
}
END_TEST

static Suite *segment_suite(void)
{
	Suite *s = suite_create("segment");
	TCase *t = tcase_create("segments");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, crc32c_values);
	tcase_add_test(t, seg_round_trip);
	tcase_add_test(t, seg_truncated_everywhere);
	tcase_add_test(t, seg_corrupt_byte);
	tcase_add_test(t, seg_garbage_between);
	tcase_add_test(t, seg_bad_file_header);
	tcase_add_test(t, seg_versions);
	suite_add_tcase(s, t);

	t = tcase_create("records");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, ev_round_trip_all_types);
	tcase_add_test(t, addr_format_ipv4);
	tcase_add_test(t, ev_fast_equals_careful);
	tcase_add_test(t, ev_ints_equals_encode);
	tcase_add_test(t, ev_open_equals_encode);
	tcase_add_test(t, ev_truncated_records);
	tcase_add_test(t, ev_corrupt_records);
	tcase_add_test(t, ev_malformed_records);
	tcase_add_test(t, dict_round_trip);
	tcase_add_test(t, dict_long_values);
	tcase_add_test(t, dict_damage);
	tcase_add_test(t, dict_slot_reused_in_record);
	tcase_add_test(t, dict_random_msgs);
	tcase_add_test(t, readlog_dictionary_across_blocks);
	tcase_add_test(t, readlog_block_in_a_later_file);
	tcase_add_test(t, dict_fast_equals_careful);
	tcase_add_test(t, enc_all_types);
	suite_add_tcase(s, t);

	t = tcase_create("readers");
	tcase_add_test(t, dedup_overlaps);
	tcase_add_test(t, logd_record_boundaries);
	tcase_add_test(t, logd_adopted_chunk_tail);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(segment_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
