/*
 * tp-cleanenv - exec with an environment built from scratch (CGI servers
 * do this): the new program runs with exactly the variables given, plus,
 * when traced, only LD_PRELOAD and BTRACE_* (documented: the shim follows
 * the process tree), and its events are recorded.  The exec'd program
 * prints its environment without those, and does I/O on a pipe.  Also
 * with a large environment (600 variables and an LD_PRELOAD of 600 blanks:
 * more than the shim's buffers on the stack hold).
 *
 * tp-events: proc_start .*cmd=[^ ]*tp-cleanenv child
 * tp-events: proc_start .*cmd=[^ ]*tp-cleanenv child big
 * tp-events: exec .*tp-cleanenv
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp.h"

extern char **environ;

static int child_main(int big)
{
	int p[2], extra = 0, n = 0;
	char b[8];
	for (char **e = environ; *e; e++) {
		if (!strncmp(*e, "LD_PRELOAD=", 11) || !strncmp(*e, "BTRACE_", 7)) {
			extra++;
			continue;
		}
		if (!big)
			tp_say("child env: %s", *e);
		n++;
	}
	if (big)
		tp_say("child env: %d variables, V599=%s", n,
		       getenv("V599") ? getenv("V599") : "(none)");
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
		return child_main(argc > 2);
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
	pid = fork();
	if (pid == 0) {
		static char vars[600][16], pre[11 + 600 + 1];
		static char *big[600 + 2];
		char *bargs[] = { "tp-cleanenv", "child", "big", NULL };
		for (int i = 0; i < 600; i++) {
			snprintf(vars[i], sizeof vars[i], "V%d=%d", i, i);
			big[i] = vars[i];
		}
		memcpy(pre, "LD_PRELOAD=", 11);
		memset(pre + 11, ' ', 600);
		big[600] = pre;
		big[601] = NULL;
		execve(tp_self(), bargs, big);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	tp_check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "... and with 600 variables and a long LD_PRELOAD");
	return tp_done();
}
