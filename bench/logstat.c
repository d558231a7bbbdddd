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

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "btrace/event.h"
#include "btrace/segment.h"

#define SEEN_BITS 16                  /* per-stream value hash set */

struct stream {
	uint64_t ring_id;
	uint32_t pid;
	uint16_t slot;
	uint64_t *seen;               /* hashes of values met, open address */
	uint64_t next_off;            /* stream offset of the next block */
	struct bt_ev_dict dict;       /* the decoder's dictionary */
	struct stream *next;
};

static struct stream *streams;
static uint64_t files, file_bytes, blocks, records, record_bytes;
static uint64_t attr_bytes, attr_repeat_bytes, dict_unknown;
static uint64_t tcount[BT_EV_TYPE_MAX + 1], tbytes[BT_EV_TYPE_MAX + 1];

static struct stream *stream_of(const struct bt_blk_header *h)
{
	struct stream *s;
	for (s = streams; s; s = s->next)
		if (s->ring_id == h->ring_id && s->pid == h->pid &&
		    s->slot == h->slot)
			return s;
	s = calloc(1, sizeof *s);
	if (!s || !(s->seen = calloc(1u << SEEN_BITS, sizeof *s->seen))) {
		fprintf(stderr, "bp-logstat: out of memory\n");
		exit(1);
	}
	s->ring_id = h->ring_id;
	s->pid = h->pid;
	s->slot = h->slot;
	s->next_off = h->stream_off;
	bt_ev_dict_init(&s->dict);
	s->next = streams;
	streams = s;
	return s;
}

static uint64_t fnv(const void *p, size_t n, unsigned key)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull ^ key;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h | 1;
}

/* Was this value met before in S?  Remembers it. */
static int seen_before(struct stream *s, uint64_t h)
{
	uint32_t mask = (1u << SEEN_BITS) - 1;
	for (uint32_t i = (uint32_t)h & mask, k = 0; k < 64;
	     i = (i + 1) & mask, k++) {
		if (s->seen[i] == h)
			return 1;
		if (!s->seen[i]) {
			s->seen[i] = h;
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

static void one_file(const char *path)
{
	const char *why = NULL;
	struct bt_seg_reader *r = bt_seg_open(path, warn, NULL, &why);
	struct bt_blk_header h;
	const uint8_t *p;
	uint64_t off;
	struct stat st;

	if (!r) {
		fprintf(stderr, "bp-logstat: %s: %s\n", path, why ? why : strerror(errno));
		return;
	}
	if (stat(path, &st) == 0)
		file_bytes += (uint64_t)st.st_size;
	files++;
	while (bt_seg_next(r, &h, &p, &off) == 1) {
		struct stream *s;
		size_t pos = 0;
		if (h.ring_id == 0 || (h.flags & BT_BF_LOGD))
			continue;
		blocks++;
		s = stream_of(&h);
		if (h.stream_off != s->next_off)     /* bytes lost or repeated */
			bt_ev_dict_reset(&s->dict);
		s->next_off = h.stream_off + h.len;
		while (pos < h.len) {
			struct bt_event ev;
			uint64_t prev = 0;
			long k = bt_ev_decode_dict(p + pos, h.len - pos, &ev,
						   &prev, &s->dict);
			if (k <= 0) {
				warn(NULL, path, off, "a record does not decode");
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
				uint64_t n = 2u + ev.attr[i].len;
				attr_bytes += n;
				if (seen_before(s, fnv(ev.attr[i].val, ev.attr[i].len,
						       ev.attr[i].key)))
					attr_repeat_bytes += ev.attr[i].len;
			}
		}
	}
	bt_seg_close(r);
}

static void walk(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		fprintf(stderr, "bp-logstat: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	if (S_ISDIR(st.st_mode)) {
		struct dirent **ents;
		int n = scandir(path, &ents, NULL, alphasort);
		for (int i = 0; i < n; i++) {
			const char *nm = ents[i]->d_name;
			if (nm[0] != '.') {
				char sub[4096];
				snprintf(sub, sizeof sub, "%s/%s", path, nm);
				struct stat s2;
				size_t l = strlen(nm);
				if (stat(sub, &s2) == 0 && (S_ISDIR(s2.st_mode) ||
				    (l > 4 && !strcmp(nm + l - 4, BT_SEG_SUFFIX))))
					walk(sub);
			}
			free(ents[i]);
		}
		free(ents);
	} else {
		one_file(path);
	}
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
	for (int i = optind; i < argc; i++)
		walk(argv[i]);
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
