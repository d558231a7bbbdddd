/*
 * tp-fork-threads - fork in a multi-threaded process.  Eight threads keep
 * echoing messages over socketpairs while the main thread forks twenty
 * times; each child does I/O of its own (a pipe, a thread with a TCP
 * pair) and exits; the parent's threads must carry on unharmed (no lost
 * or mixed message, no deadlock in the child on a lock another thread
 * held at fork).
 *
 * tp-events: thread_start .*
 * tp-events: proc_start .*flags=0x[0-9a-f]*[13579bdf] 
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp.h"

#define PAIRS 4
#define FORKS 20

static volatile int stop;

struct pair {
	int sv[2];
	long trips;
	int bad;
};

static void *echo(void *p)
{
	struct pair *pr = p;
	char buf[64];
	for (;;) {
		size_t n = tp_read_full(pr->sv[1], buf, 16, NULL);
		if (n != 16)
			break;
		if (tp_write_all(pr->sv[1], buf, 16) < 0)
			break;
	}
	return NULL;
}

static void *client(void *p)
{
	struct pair *pr = p;
	char msg[17], back[17];
	while (!stop) {
		snprintf(msg, sizeof msg, "trip %010ld\n", pr->trips);
		if (tp_write_all(pr->sv[0], msg, 16) < 0 ||
		    tp_read_full(pr->sv[0], back, 16, NULL) != 16 ||
		    memcmp(msg, back, 16)) {
			pr->bad++;
			break;
		}
		pr->trips++;
	}
	shutdown(pr->sv[0], SHUT_WR);
	return NULL;
}

static void *child_thread(void *p)
{
	int s[2];
	char buf[8];
	int *ok = p;
	*ok = tp_tcp_pair(s, NULL) == 0 && write(s[0], "tcp\n", 4) == 4 &&
	      tp_read_full(s[1], buf, 4, NULL) == 4 && !memcmp(buf, "tcp\n", 4);
	return NULL;
}

static int in_child(int k)
{
	int p[2], ok = 0;
	char buf[16];
	pthread_t t;

	if (pipe(p) < 0 || write(p[1], "child\n", 6) != 6 ||
	    tp_read_full(p[0], buf, 6, NULL) != 6 || memcmp(buf, "child\n", 6))
		return 1;
	if (pthread_create(&t, NULL, child_thread, &ok) != 0)
		return 2;
	pthread_join(t, NULL);
	if (!ok)
		return 3;
	if (k % 2)
		exit(0);          /* atexit and destructors run */
	_exit(0);
}

int main(void)
{
	struct pair pr[PAIRS];
	pthread_t th[PAIRS * 2];
	int children_ok = 0;

	tp_init("fork-threads", 60);
	for (int i = 0; i < PAIRS; i++) {
		memset(&pr[i], 0, sizeof pr[i]);
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pr[i].sv) < 0)
			return 1;
		pthread_create(&th[2 * i], NULL, echo, &pr[i]);
		pthread_create(&th[2 * i + 1], NULL, client, &pr[i]);
	}
	for (int k = 0; k < FORKS; k++) {
		int st = 0;
		pid_t pid;
		tp_msleep(10);
		pid = fork();
		if (pid == 0)
			_exit(in_child(k));
		if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		    WEXITSTATUS(st) == 0)
			children_ok++;
		else
			tp_say("child %d: status 0x%x", k, st);
	}
	stop = 1;
	for (int i = 0; i < PAIRS * 2; i++)
		pthread_join(th[i], NULL);
	tp_check(children_ok == FORKS, "%d of %d forked children did their I/O and exited 0",
		 children_ok, FORKS);
	for (int i = 0; i < PAIRS; i++) {
		tp_check(pr[i].bad == 0 && pr[i].trips > 0,
			 "thread pair %d: every echo came back intact", i);
		tp_vary("pair %d: %ld round trips", i, pr[i].trips);
	}
	return tp_done();
}
