/*
 * demolog.c - write the scripted web shop (demo.h) as BorderPatrol logs,
 * for the export and report tests and the picture in docs/report.png.
 *
 *   demolog [-n REQUESTS] [-2] DIR
 *
 * -n: requests (default 60); -2: the database on a second host whose
 * monotonic clock is 7 s ahead.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "demo.h"

int main(int argc, char **argv)
{
	long n = 60;
	int two_hosts = 0, ch;

	while ((ch = getopt(argc, argv, "n:2h")) != -1) {
		switch (ch) {
		case 'n': n = strtol(optarg, NULL, 10); break;
		case '2': two_hosts = 1; break;
		default:
			fprintf(stderr, "usage: demolog [-n REQUESTS] [-2] DIR\n");
			return 1;
		}
	}
	if (optind != argc - 1 || n < 1 || n > 1000000) {
		fprintf(stderr, "usage: demolog [-n REQUESTS 1..1000000] [-2] DIR\n");
		return 1;
	}
	struct gen *g = gen_new();
	demo_shop(g, (int)n, two_hosts);
	int files = gen_write(g, argv[optind], NULL);
	gen_free(g);
	if (files < 0) {
		perror("demolog: writing the logs");
		return 1;
	}
	return 0;
}
