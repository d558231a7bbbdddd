/*
 * fuzz_logread.c - libFuzzer target for bp-reconstruct's input: the
 * segment reader, the record decoder, the causal merge and the database,
 * on log files an attacker or a broken disk could produce.
 *
 * The input is one or more segment files separated by the 4 bytes
 * "\377SEG"; file K goes to host directory hK/ of a scratch directory and
 * the whole reconstruction runs on it.  It must return "written" or "no
 * readable input", never crash, hang or leak (ASan/UBSan/LSan check the
 * rest).  Seeds: fuzz/logread-seeds.sh (a generated three-host log).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reconstruct/recon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void cleanup(void)
{
	char p[160];

	for (int j = 0; j < 4; j++) {
		snprintf(p, sizeof p, "%s/h%d/%06d.btl", dir, j, j);
		unlink(p);
		snprintf(p, sizeof p, "%s/h%d", dir, j);
		rmdir(p);
	}
	snprintf(p, sizeof p, "%s/out.db", dir);
	unlink(p);
	rmdir(dir);
}

static void put(int k, const uint8_t *p, size_t n)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof path, "%s/h%d", dir, k);
	mkdir(path, 0700);
	snprintf(path, sizeof path, "%s/h%d/%06d.btl", dir, k, k);
	f = fopen(path, "wb");
	if (!f)
		abort();
	if (n && fwrite(p, 1, n, f) != n)
		abort();
	fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t sep[4] = { 0xff, 'S', 'E', 'G' };
	const char *in[1];
	char out[96], cmd[160];
	struct rc_options o;
	struct rc_summary sum;
	FILE *null;
	int k = 0, r;

	if (!dir[0]) {
		snprintf(dir, sizeof dir, "/dev/shm/fuzz-logread.%d", (int)getpid());
		mkdir(dir, 0700);
		atexit(cleanup);
	}
	for (int j = 0; j < 4; j++) {       /* the previous input's files */
		snprintf(cmd, sizeof cmd, "%s/h%d/%06d.btl", dir, j, j);
		unlink(cmd);
	}
	for (size_t start = 0, i = 0; k < 4; i++) {
		if (i + 4 > size || memcmp(data + i, sep, 4) == 0) {
			size_t end = i + 4 > size ? size : i;
			put(k++, data + start, end - start);
			if (i + 4 > size)
				break;
			start = i + 4;
			i += 3;
		}
	}
	snprintf(out, sizeof out, "%s/out.db", dir);
	in[0] = dir;
	null = fopen("/dev/null", "w");
	memset(&o, 0, sizeof o);
	o.inputs = in;
	o.ninputs = 1;
	o.output = out;
	o.quiet = 1;
	o.progress = 0;
	o.err = null;
	r = rc_run(&o, &sum);
	fclose(null);
	if (r != RC_EXIT_OK && r != RC_EXIT_INPUT) {
		fprintf(stderr, "fuzz-logread: bp-reconstruct returned %d\n", r);
		abort();
	}
	return 0;
}
