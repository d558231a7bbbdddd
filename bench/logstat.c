/*
 * logstat.c - bp-logstat: what the log of a traced run is made of
 * (benchmark 6, log volume).
 *
 *   bp-logstat [-r REQUESTS] PATH...
 *
 * Reads every segment under PATH (files or directories searched for
 * *.btl) and prints, as "key=value" lines:
 *
 *   files, file_bytes      segment files and their total size
 *   blocks                 blocks (48-byte header each)
 *   records, record_bytes  records and their encoded size
 *   bytes_per_event        record_bytes / records (the encoding)
 *   file_bytes_per_event   file_bytes / records (with headers)
 *   attr_bytes             bytes of MSG attributes written plain (key +
 *                          length + value; what they would be without the
 *                          stream's dictionary, docs/log-format.md)
 *   attr_repeat_bytes      of those, values equal to one met before in the
 *                          same stream (what a string dictionary could save)
 *   dict_unknown           references the stream's dictionary could not
 *                          resolve (damage; 0 in a whole log)
 *   per_request            file_bytes / REQUESTS, with -r
 *
 * then one line per record type: "type NAME COUNT BYTES AVG".
 * bp-logd's own stream (ring 0) is left out: it is not the tracer's.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btrace/event.h"
#include "btrace/segment.h"
#include "btrace/segread.h"

#define SEEN_BITS 16                  /* per-stream value hash set */

/* The stream being read: the hashes of the values it met. */
static uint64_t *seen_tab;
static struct bt_ev_dict dict;        /* its decoder's dictionary */
static uint64_t files, file_bytes, blocks, records, record_bytes;
static uint64_t attr_bytes, attr_repeat_bytes, dict_unknown;
static uint64_t tcount[BT_EV_TYPE_MAX + 1], tbytes[BT_EV_TYPE_MAX + 1];

static uint64_t fnv(const void *p, size_t n, unsigned key)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull ^ key;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h | 1;
}

/* Was this value met before in S?  Remembers it. */
static int seen_before(uint64_t h)
{
	uint32_t mask = (1u << SEEN_BITS) - 1;
	for (uint32_t i = (uint32_t)h & mask, k = 0; k < 64;
	     i = (i + 1) & mask, k++) {
		if (seen_tab[i] == h)
			return 1;
		if (!seen_tab[i]) {
			seen_tab[i] = h;
			return 0;
		}
	}
	return 0;                     /* table crowded: count as new */
}

static void warn(void *ctx, const char *path, uint64_t off, const char *why)
{
	(void)ctx;
	fprintf(stderr, "bp-logstat: %s: offset %llu: %s\n", path,
		(unsigned long long)off, why);
}

/* Sizes of what the reader's cut keeps of block B (from a stream that
 * is not bp-logd's). */
static void one_block(const struct bt_sr_block *b, const char *path)
{
	size_t pos = b->skip;

	if (b->cut & BT_SR_LOST)                /* bytes lost */
		bt_ev_dict_reset(&dict);
	while (pos < b->len) {
		struct bt_event ev;
		uint64_t prev = 0;
		long k = bt_ev_decode_dict(b->payload + pos, b->len - pos, &ev,
					   &prev, &dict);
		if (k <= 0) {
			warn(NULL, path, b->foff, "a record does not decode");
			break;
		}
		pos += (size_t)k;
		if (ev.type == BT_EV_PAD)
			continue;
		records++;
		record_bytes += (uint64_t)k;
		unsigned t = ev.type < BT_EV_TYPE_MAX ? ev.type : BT_EV_TYPE_MAX;
		tcount[t]++;
		tbytes[t] += (uint64_t)k;
		dict_unknown += ev.dict_miss;
		for (unsigned i = 0; i < ev.nattr; i++) {
			attr_bytes += 2u + ev.attr[i].len;
			if (seen_before(fnv(ev.attr[i].val, ev.attr[i].len,
					    ev.attr[i].key)))
				attr_repeat_bytes += ev.attr[i].len;
		}
	}
}

/* Every segment the paths stand for (btrace/segread.h), stream by stream. */
static void read_logs(char **paths, int n)
{
	struct bt_sr_list l = { 0 };
	struct bt_segset set = { .warn = warn };

	for (int i = 0; i < n; i++) {
		int r = bt_sr_collect(&l, paths[i], warn, NULL);
		if (r < 0) {
			fprintf(stderr, "bp-logstat: %s: %s\n", paths[i],
				strerror(-r));
			exit(2);
		}
	}
	for (uint32_t i = 0; i < l.n; i++) {
		const char *why = NULL;
		int r = bt_segset_add(&set, l.v[i], &why);
		if (r < 0) {
			fprintf(stderr, "bp-logstat: %s: %s\n", l.v[i],
				why ? why : strerror(-r));
			continue;
		}
		files++;
		file_bytes += set.files[set.nfiles - 1].size;
	}
	bt_sr_list_free(&l);
	bt_segset_sort(&set);
	if (!(seen_tab = calloc(1u << SEEN_BITS, sizeof *seen_tab))) {
		fprintf(stderr, "bp-logstat: out of memory\n");
		exit(1);
	}
	for (uint32_t i = 0; i < set.nblocks; i++) {
		const struct bt_sr_block *b = &set.blocks[i];
		if (b->cut & BT_SR_FIRST) {     /* a new stream */
			memset(seen_tab, 0, (1u << SEEN_BITS) * sizeof *seen_tab);
			bt_ev_dict_init(&dict);
		}
		if (b->ring_id == 0 || (b->flags & BT_BF_LOGD))
			continue;
		blocks++;
		if (!(b->cut & BT_SR_DUP))
			one_block(b, set.files[b->file].path);
	}
	free(seen_tab);
	bt_segset_free(&set);
}

int main(int argc, char **argv)
{
	double reqs = 0;
	int opt;

	while ((opt = getopt(argc, argv, "r:h")) != -1) {
		switch (opt) {
		case 'r': reqs = atof(optarg); break;
		case 'h':
			printf("usage: bp-logstat [-r REQUESTS] PATH...\n"
			       "Sizes of the records in BorderPatrol log segments "
			       "(bench/logstat.c says what each line means).\n");
			return 0;
		default:
			fprintf(stderr, "usage: bp-logstat [-r REQUESTS] PATH...\n");
			return 2;
		}
	}
	if (optind == argc) {
		fprintf(stderr, "usage: bp-logstat [-r REQUESTS] PATH...\n");
		return 2;
	}
	read_logs(argv + optind, argc - optind);
	printf("files=%llu\nfile_bytes=%llu\nblocks=%llu\nrecords=%llu\n"
	       "record_bytes=%llu\n", (unsigned long long)files,
	       (unsigned long long)file_bytes, (unsigned long long)blocks,
	       (unsigned long long)records, (unsigned long long)record_bytes);
	printf("bytes_per_event=%.2f\nfile_bytes_per_event=%.2f\n",
	       records ? (double)record_bytes / (double)records : 0.0,
	       records ? (double)file_bytes / (double)records : 0.0);
	printf("attr_bytes=%llu\nattr_repeat_bytes=%llu\ndict_unknown=%llu\n",
	       (unsigned long long)attr_bytes,
	       (unsigned long long)attr_repeat_bytes,
	       (unsigned long long)dict_unknown);
	if (reqs > 0)
		printf("per_request=%.1f\nevents_per_request=%.2f\n",
		       (double)file_bytes / reqs, (double)records / reqs);
	for (unsigned t = 0; t <= BT_EV_TYPE_MAX; t++)
		if (tcount[t])
			printf("type %s %llu %llu %.2f\n",
			       t < BT_EV_TYPE_MAX ? bt_ev_type_name(t) : "unknown",
			       (unsigned long long)tcount[t],
			       (unsigned long long)tbytes[t],
			       (double)tbytes[t] / (double)tcount[t]);
	return 0;
}
