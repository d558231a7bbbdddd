/*
 * dump.c - bp-dump: print BorderPatrol log segments as text, one record a
 * line, for debugging and for scripts.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "readlog.h"

static const char usage_text[] =
"Usage: bp-dump [OPTION]... PATH...\n"
"\n"
"Print BorderPatrol log segments (*.btl, written by bp-logd or by a\n"
"tracer's spool) as text, one record per line.  PATH is a segment file, or\n"
"a directory: its *.btl files and those of its subdirectories, one level\n"
"down (logs/, logs/HOST/, a spool directory).  The files of a directory are\n"
"printed in the order of their sequence number, then name; the PATHs in\n"
"the order given.  bp-reconstruct reads the same files.\n"
"\n"
"Each record line is\n"
"  PID:SLOT TIMESTAMP TYPE FIELD=VALUE...\n"
"where PID:SLOT names the stream (a thread's ring slot; PID:0 of a\n"
"bp-logd's own stream is marked with 'logd'), TIMESTAMP is the host's\n"
"monotonic clock in ns and the fields are those of docs/events.md.\n"
"\n"
"Bytes a stream already had (a block written twice because bp-logd was\n"
"killed between writing and acknowledging it) are printed once: every\n"
"stream's blocks are sorted by stream offset first and the repeats cut\n"
"as bp-reconstruct cuts them, in whichever file they are.\n"
"\n"
"Damage (a torn tail, a corrupt block, garbage between blocks, a record\n"
"that does not decode) is reported on stderr as\n"
"  bp-dump: FILE: offset N: REASON\n"
"and reading carries on with the next valid block.\n"
"\n"
"Options:\n"
"  -b, --blocks     also print a line per block: file offset, length,\n"
"                   stream identity, stream offset, flags, and how many of\n"
"                   its bytes were duplicates or missing before it.\n"
"  -H, --headers    print each file's header (host, boot id, creation\n"
"                   time, writer, sequence number).\n"
"  -a, --all        do not drop duplicate bytes.\n"
"  -q, --quiet      print no records (with --stats: only the summary).\n"
"  -s, --stats      print a summary at the end: files, blocks, records by\n"
"                   type, streams, duplicate and missing bytes, damage.\n"
"  -h, --help       show this help and exit.\n"
"  -V, --version    show the version and exit.\n"
"\n"
"Exit status:\n"
"  0  everything read was intact.\n"
"  1  damage was found (and reported); everything else was printed.\n"
"  2  bad usage, or a path could not be read.\n"
"\n"
"Examples:\n"
"  bp-dump logs/                     # every host, every segment\n"
"  bp-dump -b logs/web1/20261121T054705Z-000001.btl\n"
"  bp-dump -q -s logs/web1           # just count\n"
"  bp-dump logs | grep ' msg '       # all whole messages\n";

struct dump {
	int blocks, headers, quiet;
	char line[65536];
};

static void on_file(void *ctx, const char *path, const struct bt_seg_header *h)
{
	struct dump *d = ctx;

	if (!d->headers)
		return;
	printf("# file %s host=%s boot_id=%016" PRIx64 " created_mono=%" PRIu64
	       " created_real=%" PRIu64 " writer=%s pid=%u seq=%" PRIu64 "\n",
	       path, h->host, h->boot_id, h->created_mono, h->created_real,
	       h->writer == BT_SEG_BY_LOGD ? "logd" :
	       h->writer == BT_SEG_BY_SPOOL ? "spool" : "?", h->writer_pid,
	       h->seq);
}

static void on_block(void *ctx, const char *path, uint64_t off,
		     const struct bt_blk_header *h, size_t skip, uint64_t gap)
{
	struct dump *d = ctx;

	(void)path;
	if (!d->blocks)
		return;
	printf("# block @%" PRIu64 " len=%u ring=%016" PRIx64 " pid=%u slot=%u gen=%u stream_off=%" PRIu64 " flags=%#x%s%s",
	       off, h->len, h->ring_id, h->pid, h->slot, h->gen, h->stream_off,
	       h->flags, h->flags & BT_BF_LOGD ? " logd" : "",
	       h->flags & BT_BF_SPOOL ? " spool" : "");
	if (skip)
		printf(" duplicate=%zu", skip);
	if (gap || (h->flags & BT_BF_GAP))
		printf(" missing_before=%" PRIu64, gap);
	putchar('\n');
}

static void on_record(void *ctx, struct readlog_stream *s,
		      const struct bt_event *ev)
{
	struct dump *d = ctx;

	if (d->quiet)
		return;
	bt_ev_format(ev, d->line, sizeof d->line);
	printf("%u:%u%s %s\n", s->pid, s->slot, s->ring_id ? "" : " logd",
	       d->line);
}

static void on_warn(void *ctx, const char *path, uint64_t off, const char *why)
{
	(void)ctx;
	fflush(stdout);
	fprintf(stderr, "bp-dump: %s: offset %" PRIu64 ": %s\n", path, off, why);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "blocks", no_argument, NULL, 'b' },
		{ "headers", no_argument, NULL, 'H' },
		{ "all", no_argument, NULL, 'a' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "stats", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct dump d;
	static const struct readlog_ops ops = { on_file, on_block, on_record,
						on_warn };
	struct readlog_stats st;
	int ch, all = 0, stats = 0, n, r;
	struct bt_sr_list list = { 0 };
	const char *bad;

	while ((ch = getopt_long(argc, argv, "bHaqshV", longopts, NULL)) != -1) {
		switch (ch) {
		case 'b': d.blocks = 1; break;
		case 'H': d.headers = 1; break;
		case 'a': all = 1; break;
		case 'q': d.quiet = 1; break;
		case 's': stats = 1; break;
		case 'h': fputs(usage_text, stdout); return 0;
		case 'V': printf("bp-dump (BorderPatrol) %s\n", PACKAGE_VERSION); return 0;
		default:
			fprintf(stderr, "Try 'bp-dump --help' for more information.\n");
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "bp-dump: no PATH given (a segment file or a log directory)\n"
			"Try 'bp-dump --help' for more information.\n");
		return 2;
	}
	n = readlog_collect(argv + optind, argc - optind, &list, &bad,
			    on_warn, NULL);
	if (n < 0) {
		fprintf(stderr, "bp-dump: %s: %s\n", bad, strerror(-n));
		return 2;
	}
	if (n == 0) {
		fprintf(stderr, "bp-dump: no *.btl segment found in the given paths\n");
		return 2;
	}
	memset(&st, 0, sizeof st);
	r = readlog_run(&list, !all, &ops, &d, &st);
	bt_sr_list_free(&list);
	fflush(stdout);
	if (stats) {
		printf("files %" PRIu64 " blocks %" PRIu64 " records %" PRIu64
		       " duplicate_blocks %" PRIu64 " duplicate_bytes %" PRIu64
		       " missing_bytes %" PRIu64 " damage %" PRIu64 " streams %" PRIu64 "\n",
		       st.files, st.blocks, st.records, st.dup_blocks,
		       st.dup_bytes, st.gap_bytes, st.damaged, st.streams);
		for (unsigned t = 0; t <= BT_EV_TYPE_MAX; t++)
			if (st.type_count[t])
				printf("  %-14s %" PRIu64 "\n",
				       t < BT_EV_TYPE_MAX ? bt_ev_type_name(t) : "unknown",
				       st.type_count[t]);
	}
	if (r < 0)
		return 2;
	return st.damaged ? 1 : 0;
}
