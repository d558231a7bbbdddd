/*
 * thread-burst N - start N threads at once (a barrier), each writing one
 * byte to a pipe the main thread drains; all are alive together.  Used by
 * faults.sh: every traced thread must get a ring slot and be logged.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_barrier_t bar;
static int p[2];

static void *worker(void *arg)
{
	char c = 'x';
	(void)arg;
	pthread_barrier_wait(&bar);
	if (write(p[1], &c, 1) != 1)
		return (void *)1;
	pthread_barrier_wait(&bar);    /* all alive until all have written */
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	pthread_t *t = calloc((size_t)n, sizeof *t);
	pthread_attr_t at;
	char buf[4096];
	long got = 0;

	if (!t || n < 1 || pipe(p) < 0 || pthread_barrier_init(&bar, NULL, (unsigned)n + 1))
		return 2;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 64 * 1024);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], &at, worker, NULL) != 0) {
			fprintf(stderr, "thread-burst: pthread_create %d failed\n", i);
			return 1;
		}
	pthread_barrier_wait(&bar);
	while (got < n) {
		ssize_t r = read(p[0], buf, sizeof buf);
		if (r <= 0)
			return 1;
		got += r;
	}
	pthread_barrier_wait(&bar);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("%d threads\n", n);
	return 0;
}
