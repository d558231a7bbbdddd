/*
 * ex-prefork - front server made of N pre-forked processes.
 *
 * The parent opens the listening socket and forks --workers children that
 * all block in accept() on it; whichever the kernel wakes serves that
 * connection to completion, then accepts the next.  Each child keeps its
 * own persistent backend connections across the client connections it
 * serves (Apache's prefork MPM, php-fpm).  The parent only supervises:
 * it restarts a child that dies and stops them all on SIGTERM.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ex_front.h"

#define EX_PREFORK_MAX_RESPAWN 100
#define EX_PREFORK_STOP_MS     5000

static struct ex_front_opts opts;

/* A child: accept and serve until told to stop. */
static int child_main(int lfd)
{
	struct ex_block_private priv;
	struct ex_block_backends b;
	long conns = 0, failed = 0;
	atomic_long requests = 0;

	ex_block_private_init(&priv, &opts.backend, &b);
	while (!ex_stop) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED ||
			    errno == EAGAIN)
				continue;
			ex_log("accept: %s", strerror(errno));
			if (errno == EMFILE || errno == ENFILE)
				usleep(100000);
			continue;
		}
		conns++;
		ex_set_timeouts(fd, opts.idle_ms);
		if (ex_block_serve(fd, &b, &requests) < 0)
			failed++;
		close(fd);
	}
	ex_front_stats("worker conns=%ld requests=%ld failed_conns=%ld "
		       "backend_conns=%llu", conns, atomic_load(&requests), failed,
		       (unsigned long long)priv.opened);
	ex_block_private_fini(&priv);
	return 0;
}

/* Fork one child; returns its pid or -errno. */
static pid_t spawn(int lfd)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* SIGTERM reaches each child from the parent, not from a
		 * terminal group signal: handlers stay as installed. */
		_exit(child_main(lfd));
	}
	return pid;
}

static int find_child(const pid_t *kids, int n, pid_t pid)
{
	for (int i = 0; i < n; i++)
		if (kids[i] == pid)
			return i;
	return -1;
}

static void stop_children(pid_t *kids, int n)
{
	uint64_t deadline = ex_now_ms() + EX_PREFORK_STOP_MS;
	int left = 0;

	for (int i = 0; i < n; i++)
		if (kids[i] > 0 && kill(kids[i], SIGTERM) == 0)
			left++;
	while (left > 0) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);

		if (pid > 0) {
			int i = find_child(kids, n, pid);
			if (i >= 0) {
				kids[i] = 0;
				left--;
			}
			continue;
		}
		if (pid < 0 && errno == ECHILD)
			break;
		if (ex_now_ms() >= deadline) {
			ex_log("%d worker(s) ignored SIGTERM: killing them", left);
			for (int i = 0; i < n; i++)
				if (kids[i] > 0)
					kill(kids[i], SIGKILL);
			while (waitpid(-1, &st, 0) > 0)
				;
			break;
		}
		usleep(10000);
	}
}

int main(int argc, char **argv)
{
	pid_t *kids;
	int lfd, err, respawned = 0;

	ex_init(argv[0]);
	ex_front_parse(argc, argv, &opts, "ex-prefork",
		       "A front server of N pre-forked worker processes that "
		       "accept on one shared\nlistening socket; each serves a "
		       "connection to completion and keeps its own\npersistent "
		       "connections to the two backends.",
		       EX_FRONT_WORKERS, 4, 0);
	if ((err = ex_signals()) < 0)
		ex_fatal("cannot install signal handlers: %s", strerror(-err));
	lfd = ex_listen_tcp(opts.host, opts.port, 512, 0);
	if (lfd < 0)
		ex_fatal("cannot listen on %s:%d: %s", opts.host, opts.port,
			 strerror(-lfd));
	/* accept() gives up every 500 ms (EAGAIN), so a stop request that
	 * lands just before a child blocks in it is seen soon */
	ex_set_timeouts(lfd, 500);
	kids = calloc((size_t)opts.workers, sizeof *kids);
	if (!kids)
		ex_fatal("out of memory");
	for (int i = 0; i < opts.workers; i++) {
		kids[i] = spawn(lfd);
		if (kids[i] < 0) {
			ex_log("cannot fork worker %d: %s", i, strerror(-kids[i]));
			kids[i] = 0;
			stop_children(kids, opts.workers);
			return 1;
		}
	}
	if (opts.pidfile && (err = ex_pidfile(opts.pidfile)) < 0) {
		ex_log("cannot write pidfile %s: %s", opts.pidfile,
		       strerror(-err));
		stop_children(kids, opts.workers);
		return 1;
	}

	while (!ex_stop) {
		int st, i;
		pid_t pid = waitpid(-1, &st, WNOHANG);

		if (pid == 0 || (pid < 0 && errno == EINTR)) {
			/* a signal between the check and a blocking wait
			 * would be missed: look again every 200 ms */
			poll(NULL, 0, 200);
			continue;
		}
		if (pid < 0)
			ex_fatal("waitpid: %s", strerror(errno));
		if ((i = find_child(kids, opts.workers, pid)) < 0 || ex_stop)
			continue;
		if (WIFSIGNALED(st))
			ex_log("worker %ld killed by signal %d", (long)pid,
			       WTERMSIG(st));
		else
			ex_log("worker %ld exited with status %d", (long)pid,
			       WEXITSTATUS(st));
		kids[i] = 0;
		if (respawned >= EX_PREFORK_MAX_RESPAWN) {
			ex_log("workers keep dying: giving up");
			break;
		}
		kids[i] = spawn(lfd);
		if (kids[i] < 0) {
			ex_log("cannot fork a worker: %s", strerror(-kids[i]));
			kids[i] = 0;
			break;
		}
		respawned++;
	}
	stop_children(kids, opts.workers);
	close(lfd);
	ex_front_stats("workers=%d respawned=%d", opts.workers, respawned);
	if (opts.pidfile)
		unlink(opts.pidfile);
	free(kids);
	return ex_stop ? 0 : 1;
}
