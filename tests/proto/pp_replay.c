/*
 * pp_replay.c - pp-replay: run a protocol processor over capture files and
 * print the messages it finds (the golden event logs of tests/proto/golden
 * are its output, checked by hand against the capture).
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_proto.h"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: pp-replay [OPTION]... CAPTURE...\n"
"Run the protocol processor named in each capture file over its traffic and\n"
"print one line per message found:\n"
"  DIR KIND off=N len=N [status=N] [witness=N] [flags=F,...] [key=\"value\"]...\n"
"DIR is in or out as seen by the traced process, KIND request, reply, oneway\n"
"or control, off and len the message's byte range in its direction (for\n"
"datagrams: the datagram's index and size).  \"DIR lost\" marks where the\n"
"processor gave up.  Attribute values escape '\"', '\\\\' and bytes\n"
"outside printable ASCII as \\xHH.\n"
"\n"
"Options:\n"
"  -m, --mode MODE   how the bytes are chunked: records (as captured, the\n"
"                    default), whole (each run of one direction at once),\n"
"                    bytes (one byte per call), front (as captured, guard\n"
"                    page before the data), random (runs cut at random\n"
"                    points; -s is the seed)\n"
"  -s, --split N     with -m split: cut the run holding byte N there;\n"
"                    with -m random: the seed\n"
"  -p, --proto NAME  use processor NAME instead of the capture's\n"
"  -d, --dump        print the capture's records (direction, size, text\n"
"                    with \\xHH escapes) instead of replaying it\n"
"  -h, --help        this text\n"
"\n"
"Exit status: 0 if every capture replayed within the processor contract,\n"
"1 if a capture is unreadable or the processor broke its contract (the\n"
"reason is printed to stderr), 2 on bad usage.\n"
"Capture format: tests/proto/README.md.\n");
}

static void dump(const struct cap *c)
{
	static const char *const t[] = { "in", "out", "eof-in", "eof-out" };
	printf("proto %s role %d transport %d source %s\n", c->proto, c->role,
	       c->transport, c->source);
	for (size_t i = 0; i < c->nrec; i++) {
		const struct cap_rec *r = &c->rec[i];
		printf("[%zu] %s %u\n", i, t[r->type], r->len);
		for (uint32_t j = 0; j < r->len; j++) {
			unsigned ch = r->data[j];
			if (ch == '\n')
				printf("\\n\n");
			else if (ch >= 0x20 && ch < 0x7f && ch != '\\')
				putchar((int)ch);
			else
				printf("\\x%02x", ch);
		}
		if (r->len)
			putchar('\n');
	}
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "split", required_argument, NULL, 's' },
		{ "proto", required_argument, NULL, 'p' },
		{ "dump", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int mode = RM_RECORDS, do_dump = 0, c, rc = 0;
	size_t split = 0;
	const char *proto = NULL;

	while ((c = getopt_long(argc, argv, "m:s:p:dh", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			for (mode = 0; mode <= RM_RANDOM; mode++)
				if (strcmp(optarg, replay_mode_name(mode)) == 0)
					break;
			if (mode > RM_RANDOM) {
				fprintf(stderr, "pp-replay: unknown mode '%s' "
					"(records, whole, bytes, split, front, "
					"random)\n", optarg);
				return 2;
			}
			break;
		case 's':
			split = strtoull(optarg, NULL, 0);
			break;
		case 'p':
			proto = optarg;
			break;
		case 'd':
			do_dump = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind == argc) {
		usage(stderr);
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		struct cap cp;
		char err[512];
		if (cap_load(argv[i], &cp, err, sizeof err) < 0) {
			fprintf(stderr, "pp-replay: %s\n", err);
			rc = 1;
			continue;
		}
		if (do_dump) {
			dump(&cp);
			cap_free(&cp);
			continue;
		}
		const char *name = proto ? proto : cp.proto;
		const struct bt_proto_ops *o = bt_proto_by_name(name);
		if (!o) {
			fprintf(stderr, "pp-replay: %s: no processor named "
				"'%s' (see docs/protocols.md)\n", argv[i], name);
			cap_free(&cp);
			rc = 1;
			continue;
		}
		struct sbuf out = { 0 };
		int r = replay(o, &cp, mode, split, &out, err, sizeof err);
		if (out.len)
			fwrite(out.s, 1, out.len, stdout);
		if (r < 0) {
			fprintf(stderr, "pp-replay: %s: %s\n", argv[i], err);
			rc = 1;
		}
		sb_free(&out);
		cap_free(&cp);
	}
	return rc;
}
