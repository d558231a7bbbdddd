/*
 * tp-vfork - vfork followed by exec or _exit, and posix_spawn.  The shim
 * runs vfork as fork (documented); what a correct vfork program observes
 * must not change: the child's exec happens, its exit status and output
 * reach the parent, a failing exec in the child is seen as its status.
 *
 * tp-events: ^[0-9]+:[0-9]+ [0-9]+ fork result=[0-9]+ flags=0x1
 * tp-events: proc_start .*cmd=[^ ]*tp-vfork child hello
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp.h"

extern char **environ;

static int child_main(int argc, char **argv)
{
	char line[256];
	int n = snprintf(line, sizeof line, "child:");
	for (int i = 2; i < argc; i++)
		n += snprintf(line + n, sizeof line - (size_t)n, " %s", argv[i]);
	line[n++] = '\n';
	(void)!write(1, line, (size_t)n);
	return 3;
}

static void report(const char *what, pid_t pid, int o)
{
	char out[256];
	size_t got = tp_read_eof(o, out, sizeof out, NULL);
	int st = 0;
	pid_t w = waitpid(pid, &st, 0);

	close(o);
	tp_say("%s: child said %s, waitpid %s, status %s %d", what,
	       tp_quote(out, got), w == pid ? "ok" : "failed",
	       WIFEXITED(st) ? "exit" : "signal",
	       WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

int main(int argc, char **argv)
{
	int o[2];
	pid_t pid;

	if (argc > 1 && !strcmp(argv[1], "child"))
		return child_main(argc, argv);
	tp_init("vfork", 30);

	/* vfork + execv */
	if (pipe2(o, O_CLOEXEC) < 0)
		return 1;
	pid = vfork();
	if (pid == 0) {
		dup2(o[1], 1);
		execl(tp_self(), "tp-vfork", "child", "hello", (char *)NULL);
		_exit(127);
	}
	close(o[1]);
	tp_check(pid > 0, "vfork returned a child");
	report("vfork+exec", pid, o[0]);

	/* vfork + _exit */
	if (pipe2(o, O_CLOEXEC) < 0)
		return 1;
	pid = vfork();
	if (pid == 0) {
		(void)!write(o[1], "before _exit\n", 13);
		_exit(5);
	}
	close(o[1]);
	report("vfork+_exit", pid, o[0]);

	/* vfork + exec of something that does not exist */
	if (pipe2(o, O_CLOEXEC) < 0)
		return 1;
	pid = vfork();
	if (pid == 0) {
		execl("/nonexistent/program", "x", (char *)NULL);
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(o[1]);
	report("vfork+failed exec", pid, o[0]);

	/* posix_spawn with a file action */
	if (pipe2(o, O_CLOEXEC) == 0) {
		posix_spawn_file_actions_t fa;
		char *args[] = { "tp-vfork", "child", "spawned", NULL };
		int r;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, o[1], 1);
		r = posix_spawn(&pid, tp_self(), &fa, NULL, args, environ);
		posix_spawn_file_actions_destroy(&fa);
		close(o[1]);
		tp_check(r == 0, "posix_spawn: %s", tp_res(r ? -1 : 0, r));
		if (r == 0)
			report("posix_spawn", pid, o[0]);
	}
	return tp_done();
}
