/*
 * ex-threads - front server, one thread per connection, blocking I/O.
 *
 * The main thread accepts; every connection gets a thread that reads a
 * request, makes its backend calls over that thread's own persistent
 * backend connections, answers, and reads the next request, until the
 * client closes.  The simplest multi-threaded architecture of the paper's
 * section 4: each thread works on one request at a time.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ex_front.h"

#define EX_THREADS_MAX 1024

static struct ex_front_opts opts;
static atomic_long n_conns, n_live, n_max_live, n_requests, n_failed,
		   n_backend_conns;

static void *conn_thread(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct ex_block_private priv;
	struct ex_block_backends b;

	ex_block_private_init(&priv, &opts.backend, &b);
	ex_set_timeouts(fd, opts.idle_ms);
	if (ex_block_serve(fd, &b, &n_requests) < 0)
		atomic_fetch_add(&n_failed, 1);
	atomic_fetch_add(&n_backend_conns, (long)priv.opened);
	ex_block_private_fini(&priv);
	close(fd);
	atomic_fetch_sub(&n_live, 1);
	return NULL;
}

static void start_thread(int fd)
{
	pthread_attr_t attr;
	pthread_t th;
	long live, max;
	int err;

	live = atomic_fetch_add(&n_live, 1) + 1;
	if (live > EX_THREADS_MAX) {
		ex_log("more than %d connections: refusing one", EX_THREADS_MAX);
		atomic_fetch_sub(&n_live, 1);
		close(fd);
		return;
	}
	max = atomic_load(&n_max_live);
	while (live > max && !atomic_compare_exchange_weak(&n_max_live, &max,
							   live))
		;
	atomic_fetch_add(&n_conns, 1);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	ex_block_signals(1);
	err = pthread_create(&th, &attr, conn_thread, (void *)(intptr_t)fd);
	ex_block_signals(0);
	pthread_attr_destroy(&attr);
	if (err) {
		ex_log("cannot start a connection thread: %s", strerror(err));
		atomic_fetch_sub(&n_live, 1);
		close(fd);
	}
}

int main(int argc, char **argv)
{
	int lfd, err;

	ex_init(argv[0]);
	ex_front_parse(argc, argv, &opts, "ex-threads",
		       "A front server with one thread per connection and "
		       "blocking I/O; each thread\nkeeps its own persistent "
		       "connections to the two backends.", 0, 0, 0);
	if ((err = ex_signals()) < 0)
		ex_fatal("cannot install signal handlers: %s", strerror(-err));
	lfd = ex_listen_tcp(opts.host, opts.port, 512, 0);
	if (lfd < 0)
		ex_fatal("cannot listen on %s:%d: %s", opts.host, opts.port,
			 strerror(-lfd));
	/* accept() gives up every 500 ms (EAGAIN), so a SIGTERM that lands
	 * just before it blocks is seen soon */
	ex_set_timeouts(lfd, 500);
	if (opts.pidfile && (err = ex_pidfile(opts.pidfile)) < 0)
		ex_fatal("cannot write pidfile %s: %s", opts.pidfile,
			 strerror(-err));

	while (!ex_stop) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED ||
			    errno == EAGAIN)
				continue;
			ex_log("accept: %s", strerror(errno));
			if (errno == EMFILE || errno == ENFILE)
				usleep(100000);     /* let connections close */
			continue;
		}
		start_thread(fd);
	}
	close(lfd);
	ex_front_stats("conns=%ld max_threads=%ld requests=%ld failed_conns=%ld "
		       "backend_conns=%ld", atomic_load(&n_conns),
		       atomic_load(&n_max_live), atomic_load(&n_requests),
		       atomic_load(&n_failed), atomic_load(&n_backend_conns));
	if (opts.pidfile)
		unlink(opts.pidfile);
	return 0;
}
