/*
 * verify_log.c - check what fake_tracer wrote against what the segments
 * hold, through the segment reader (with overlap removal by stream offset).
 *
 *   verify_log [-n TOTAL] [-P PROGRESS]... [-a] [-d] LOGDIR...
 *
 * Every thread's MSG records (fd = thread, off = sequence number) must
 * appear exactly once and in order 0, 1, 2, ... in their stream: a
 * duplicate, a gap or a reordering is an error.  -n: the exact number of
 * MSG records expected in all.  -P: a fake_tracer progress file; every
 * thread must have at least the records it had published (it may have
 * been SIGKILLed just after publishing more).  -a: do not remove
 * duplicates (to show that a test really produced some).  -d: damage
 * warnings are allowed (a SIGKILLed bp-logd may leave a torn tail);
 * without -d they are errors.  Prints one summary line; exits 0 when
 * every check holds, 1 otherwise.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "readlog.h"

struct tkey {
	uint64_t ring_id;
	int32_t  thread;
	uint32_t used;
	uint64_t next_seq;
};

#define TBUCKETS (1u << 16)

static struct tkey table[TBUCKETS];
static uint64_t msgs, dups, gaps, errors_shown, lost_notes;

static struct tkey *lookup(uint64_t ring, int32_t t)
{
	uint64_t h = (ring * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)(uint32_t)t * 0xc2b2ae3d27d4eb4full);
	for (unsigned i = 0; i < TBUCKETS; i++) {
		struct tkey *k = &table[(h + i) & (TBUCKETS - 1)];
		if (!k->used) {
			k->used = 1;
			k->ring_id = ring;
			k->thread = t;
			return k;
		}
		if (k->ring_id == ring && k->thread == t)
			return k;
	}
	fprintf(stderr, "verify_log: too many threads\n");
	exit(2);
}

static void on_record(void *ctx, struct readlog_stream *s,
		      const struct bt_event *ev)
{
	(void)ctx;
	if (s->ring_id == 0) {
		if (ev->type == BT_EV_LOGD && ev->flags == BT_LN_NOTES_LOST)
			lost_notes++;
		return;
	}
	if (ev->type != BT_EV_MSG)
		return;
	msgs++;
	struct tkey *k = lookup(s->ring_id, ev->fd);
	if (ev->off == k->next_seq) {
		k->next_seq++;
		return;
	}
	if (ev->off < k->next_seq)
		dups++;
	else
		gaps++;
	if (errors_shown++ < 10)
		fprintf(stderr, "verify_log: ring %" PRIx64 " thread %d: record %" PRIu64 " where %" PRIu64 " was expected\n",
			s->ring_id, ev->fd, ev->off, k->next_seq);
	if (ev->off >= k->next_seq)
		k->next_seq = ev->off + 1;
}

static void on_warn(void *ctx, const char *path, uint64_t off, const char *why)
{
	(void)ctx;
	fprintf(stderr, "verify_log: %s: offset %" PRIu64 ": %s\n", path, off, why);
}

struct progress {
	uint64_t magic, ring_id, nthreads, records_per_thread;
	uint64_t done[];
};

/* Returns the number of threads short of their published count. */
static unsigned check_progress(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	unsigned bad = 0;

	if (fd < 0 || fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(struct progress)) {
		fprintf(stderr, "verify_log: %s: cannot read progress file\n", path);
		exit(2);
	}
	struct progress *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED ||
	    (size_t)st.st_size < sizeof *p + p->nthreads * sizeof(uint64_t)) {
		fprintf(stderr, "verify_log: %s: bad progress file\n", path);
		exit(2);
	}
	uint64_t published = 0;
	for (uint64_t t = 0; t < p->nthreads; t++) {
		struct tkey *k = lookup(p->ring_id, (int32_t)t);
		published += p->done[t];
		if (k->next_seq < p->done[t]) {
			if (bad++ < 10)
				fprintf(stderr, "verify_log: ring %" PRIx64 " thread %" PRIu64 ": %" PRIu64 " records published, only %" PRIu64 " in the log\n",
					p->ring_id, t, p->done[t], k->next_seq);
		}
	}
	printf("verify_log: %s: ring %" PRIx64 " published %" PRIu64 " records in %" PRIu64 " threads\n",
	       path, p->ring_id, published, p->nthreads);
	munmap(p, (size_t)st.st_size);
	return bad;
}

int main(int argc, char **argv)
{
	static const struct readlog_ops ops = { NULL, NULL, on_record, on_warn };
	const char *progress[64];
	unsigned np = 0, short_threads = 0;
	long long expect = -1;
	int ch, nodedup = 0, damage_ok = 0, n;
	struct bt_sr_list list = { 0 };
	const char *bad;
	struct readlog_stats st;

	while ((ch = getopt(argc, argv, "n:P:ad")) != -1) {
		switch (ch) {
		case 'n': expect = atoll(optarg); break;
		case 'P':
			if (np < 64)
				progress[np++] = optarg;
			break;
		case 'a': nodedup = 1; break;
		case 'd': damage_ok = 1; break;
		default:
			fprintf(stderr, "usage: verify_log [-n TOTAL] [-P PROGRESS]... [-a] [-d] LOGDIR...\n");
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: verify_log [-n TOTAL] [-P PROGRESS]... [-a] [-d] LOGDIR...\n");
		return 2;
	}
	n = readlog_collect(argv + optind, argc - optind, &list, &bad,
			    on_warn, NULL);
	if (n <= 0) {
		fprintf(stderr, "verify_log: %s: %s\n", n < 0 ? bad : argv[optind],
			n < 0 ? strerror(-n) : "no segments");
		return 1;
	}
	memset(&st, 0, sizeof st);
	readlog_run(&list, !nodedup, &ops, NULL, &st);
	bt_sr_list_free(&list);
	for (unsigned i = 0; i < np; i++)
		short_threads += check_progress(progress[i]);
	printf("verify_log: %" PRIu64 " files, %" PRIu64 " blocks, %" PRIu64 " msg records, %" PRIu64 " duplicates, %" PRIu64 " gaps; %" PRIu64 " bytes written twice removed (%" PRIu64 " whole blocks); %" PRIu64 " damage warnings\n",
	       st.files, st.blocks, msgs, dups, gaps, st.dup_bytes, st.dup_blocks,
	       st.damaged);
	int ok = dups == 0 && gaps == 0 && short_threads == 0 &&
		 (damage_ok || st.damaged == 0) &&
		 (expect < 0 || (uint64_t)expect == msgs);
	if (expect >= 0 && (uint64_t)expect != msgs)
		printf("verify_log: expected %lld msg records, found %" PRIu64 "\n",
		       expect, msgs);
	printf("verify_log: %s\n", ok ? "OK" : "FAILED");
	return ok ? 0 : 1;
}
