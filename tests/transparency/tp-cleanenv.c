/*
 * tp-cleanenv - exec with an environment built from scratch (CGI servers
 * do this): the new program runs with exactly the variables given, plus,
 * when traced, only LD_PRELOAD and BTRACE_* (documented: the shim follows
 * the process tree), and its events are recorded.  The exec'd program
 * prints its environment without those, and does I/O on a pipe.
 *
 * tp-events: proc_start .*cmd=[^ ]*tp-cleanenv child
 * tp-events: exec .*tp-cleanenv
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp.h"

extern char **environ;

static int child_main(void)
{
	int p[2], extra = 0;
	char b[8];
	for (char **e = environ; *e; e++) {
		if (!strncmp(*e, "LD_PRELOAD=", 11) || !strncmp(*e, "BTRACE_", 7)) {
			extra++;
			continue;
		}
		tp_say("child env: %s", *e);
	}
	tp_vary("child env: %d tracing variable(s)", extra);
	if (pipe(p) < 0 || write(p[1], "io\n", 3) != 3 || tp_read_full(p[0], b, 3, NULL) != 3)
		return 1;
	tp_say("child: pipe I/O ok");
	return 0;
}

int main(int argc, char **argv)
{
	char *env[] = { "PATH=/usr/bin:/bin", "GATEWAY_INTERFACE=CGI/1.1", NULL };
	char *args[] = { "tp-cleanenv", "child", NULL };
	pid_t pid;
	int st = 0;

	if (argc > 1 && !strcmp(argv[1], "child"))
		return child_main();
	tp_init("cleanenv", 30);
	pid = fork();
	if (pid == 0) {
		execve(tp_self(), args, env);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	tp_check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the exec'd child ran with the given environment");
	pid = fork();
	if (pid == 0) {
		char *none[] = { NULL };
		execve(tp_self(), args, none);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	tp_check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "... and with an empty one");
	return tp_done();
}
