/*
 * chunk-late DIR BUSY LATE - a traced program whose last ring chunk is
 * made while bp-logd's socket is full (tests/integ/chunk-late.sh).
 *
 * 1. BUSY threads start and each logs one record (with the main thread's
 *    slot they fill the ring's first chunks, registered with bp-logd
 *    while it runs: 175 busy threads fill chunks 0..4 of 8, 16, 32, 60
 *    and 60 slots); then
 *    "ready" is printed and the program waits for DIR/go.
 * 2. (The test stops bp-logd.)  Each busy thread writes 6,400 single
 *    bytes into a pipe of its own (9 bytes a record): 88% of its 64 KiB
 *    slot, two KICKs each, which bp-logd does not read: the socket fills.
 * 3. LATE threads start: the ring needs a new chunk, whose CHUNK message
 *    finds the socket full.  Each writes 3 records of 7 bytes and exits
 *    (none of them fills a slot: no kick names the new chunk).  "late"
 *    is printed and the program waits for DIR/go2.
 * 4. (The test lets bp-logd go on and waits until it is idle.)  The busy
 *    threads end, the program exits: the shim's last flush finds its
 *    link up.
 * Every one of the LATE * 3 writes of 7 bytes must be in the log.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir;
static pthread_barrier_t started, go, written, done;

static void wait_file(const char *name)
{
	char path[4096];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	for (int i = 0; i < 6000 && access(path, F_OK) != 0; i++)
		usleep(10000);
	if (access(path, F_OK) != 0) {
		fprintf(stderr, "chunk-late: %s did not appear in 60 s\n", path);
		exit(1);
	}
}

static void *busy(void *arg)
{
	int p[2];
	char c = 'b';

	(void)arg;
	if (pipe(p) < 0 || write(p[1], &c, 1) != 1)
		exit(2);
	pthread_barrier_wait(&started);
	pthread_barrier_wait(&go);
	for (int i = 0; i < 6400; i++)
		if (write(p[1], &c, 1) != 1)
			exit(2);
	pthread_barrier_wait(&written);
	pthread_barrier_wait(&done);
	return NULL;
}

static void *late(void *arg)
{
	int p[2];

	(void)arg;
	if (pipe(p) < 0)
		exit(2);
	for (int i = 0; i < 3; i++)
		if (write(p[1], "latewri", 7) != 7)
			exit(2);
	close(p[0]);
	close(p[1]);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_attr_t at;
	pthread_t *b, *l;
	int nb, nl;

	if (argc != 4 || (nb = atoi(argv[2])) < 1 || (nl = atoi(argv[3])) < 1) {
		fprintf(stderr, "usage: chunk-late DIR BUSY LATE\n");
		return 2;
	}
	dir = argv[1];
	b = calloc((size_t)nb, sizeof *b);
	l = calloc((size_t)nl, sizeof *l);
	if (!b || !l ||
	    pthread_barrier_init(&started, NULL, (unsigned)nb + 1) ||
	    pthread_barrier_init(&go, NULL, (unsigned)nb + 1) ||
	    pthread_barrier_init(&written, NULL, (unsigned)nb + 1) ||
	    pthread_barrier_init(&done, NULL, (unsigned)nb + 1))
		return 2;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 64 * 1024);
	for (int i = 0; i < nb; i++)
		if (pthread_create(&b[i], &at, busy, NULL))
			return 2;
	pthread_barrier_wait(&started);
	printf("ready\n");
	fflush(stdout);
	wait_file("go");
	pthread_barrier_wait(&go);
	pthread_barrier_wait(&written);
	for (int i = 0; i < nl; i++)
		if (pthread_create(&l[i], &at, late, NULL))
			return 2;
	for (int i = 0; i < nl; i++)
		pthread_join(l[i], NULL);
	printf("late\n");
	fflush(stdout);
	wait_file("go2");
	pthread_barrier_wait(&done);
	for (int i = 0; i < nb; i++)
		pthread_join(b[i], NULL);
	printf("done\n");
	return 0;
}
