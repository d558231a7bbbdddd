/*
 * bp-run - run a command traced by BorderPatrol.
 *
 *   bp-run [options] -- COMMAND [ARGS...]
 *
 * Finds libbtrace.so, makes sure a bp-logd answers on the socket (starting
 * one, detached, if none does), checks the command can be traced at all
 * (a statically linked or setuid program ignores LD_PRELOAD: bp-run says so
 * instead of producing an empty trace), sets LD_PRELOAD and the BTRACE_*
 * variables, and runs the command.
 *
 * When a person watches (stderr is a terminal, or --wait), bp-run runs it
 * as its child, passes on the signals sent to bp-run, and when it exits
 * says in one line how many of its channels could not be read (the shim
 * appends a byte per such channel to the file named by BTRACE_UNREAD:
 * conf.c bt_unread_note) and in one line how many of its processes did
 * their network I/O past libc (bp-logd appends an 'r' per process it
 * named: logd/census.c), then exits as the command did.  Otherwise (a
 * script, a service: --exec) bp-run execs the command and keeps its pid.
 */
#include "config.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *prog = "bp-run";
static int quiet;

static void usage(FILE *f)
{
	fprintf(f,
"Usage: bp-run [OPTIONS] -- COMMAND [ARGS...]\n"
"\n"
"Run COMMAND with BorderPatrol's tracing library (libbtrace.so) preloaded.\n"
"Every process and thread COMMAND starts is traced too (fork, exec,\n"
"posix_spawn keep the library and settings, unless --no-follow).  Events go\n"
"to the per-host daemon bp-logd; if none answers on the socket, bp-run\n"
"starts one, detached, writing to the log directory.  Afterwards:\n"
"  bp-reconstruct LOGDIR -o paths.db\n"
"\n"
"Options:\n"
"  -s, --socket PATH   bp-logd socket (default: $BTRACE_LOGD, else\n"
"                      /tmp/btrace-$UID/logd.sock)\n"
"  -d, --logdir DIR    log directory of a bp-logd started by bp-run\n"
"                      (default: $BTRACE_LOGDIR, else ./logs)\n"
"  -H, --host NAME     host name for a bp-logd started here and for spool\n"
"                      files (default: the system's host name)\n"
"      --no-logd       never start bp-logd (without one, events go to the\n"
"                      spool directory)\n"
"  -r, --rules RULES   protocol selection rules, ';'-separated, e.g.\n"
"                      'http port 8080; postgresql port 5433' (BTRACE_RULES)\n"
"  -c, --conf FILE     rules file, one rule per line (BTRACE_CONF)\n"
"      --no-isolation  observe without event isolation (for comparison:\n"
"                      paths through event-driven servers become wrong)\n"
"      --spool DIR     spool directory used when no bp-logd answers\n"
"                      (default: /tmp/btrace-$UID/spool)\n"
"      --no-follow     do not keep tracing across exec/posix_spawn of a\n"
"                      program that clears its environment\n"
"      --lib PATH      libbtrace.so to preload (default: next to bp-run,\n"
"                      then the installed one)\n"
"      --wait          run COMMAND as a child and, when it exits, say in\n"
"                      one line how many of its channels could not be read\n"
"                      (encrypted inside the program, unknown protocol),\n"
"                      and how many processes did their network I/O past\n"
"                      the C library (raw system calls: Go):\n"
"                      the default when stderr is a terminal\n"
"      --exec          become COMMAND (keep bp-run's pid; no line at exit):\n"
"                      the default otherwise\n"
"  -q, --quiet         no notes on stderr\n"
"  -h, --help          this help\n"
"  -V, --version       version\n"
"\n"
"Environment: BTRACE_LOGD, BTRACE_LOGDIR, BTRACE_RULES, BTRACE_CONF,\n"
"BTRACE_ISOLATION, BTRACE_SPOOL, BTRACE_BUFSIZE (ring size per thread, KiB),\n"
"BTRACE_HOST, BTRACE_LIB.\n"
"\n"
"Exit status: COMMAND's own (killed by a signal: bp-run kills itself with\n"
"it); 126 when COMMAND\n"
"cannot be traced or run, 127 when it is not found, 2 on usage errors.\n"
"\n"
"Examples:\n"
"  bp-run -- nginx -p /srv/www -c nginx.conf\n"
"  bp-run -r 'line port 7000-7999' -- ./my-server --port 7001\n");
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;
	if (quiet)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(code);
}

static void setenv_or_die(const char *k, const char *v);

/* ---- --wait: the command as a child, one line at its exit ---------------- */

static volatile sig_atomic_t child_pid;

/* Pass on a signal sent to bp-run (kill); one from the terminal (^C)
 * reached the child already, as its whole process group gets it. */
static void forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (child_pid > 0 && si->si_code <= 0)
		kill(child_pid, sig);
}

/* Counts of the notes the shim wrote: t, u, l (bt_unread_note), and
 * bp-logd's r, one per process it named as doing its network I/O past
 * libc (logd/census.c). */
static void read_notes(const char *path, unsigned long n[4])
{
	char buf[4096];
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	n[0] = n[1] = n[2] = n[3] = 0;
	if (fd < 0)
		return;
	while ((r = read(fd, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < r; i++)
			n[buf[i] == 't' ? 0 : buf[i] == 'u' ? 1 :
			  buf[i] == 'r' ? 3 : 2]++;
	close(fd);
}

/*
 * The one line: what could not be read, or nothing.  Said even with
 * --quiet: it is the result of the run, not a note.
 */
static void say_unread(const char *cmd, const char *path)
{
	unsigned long n[4];
	const char *base = strrchr(cmd, '/');
	char parts[256];
	int o = 0;

	read_notes(path, n);
	if (n[3])
		fprintf(stderr, "%s: %lu process%s of %s did %s network I/O past the C library (raw system calls: Go, io_uring, ...): not traced (bp-reconstruct names %s)\n",
			prog, n[3], n[3] == 1 ? "" : "es", base ? base + 1 : cmd,
			n[3] == 1 ? "its" : "their", n[3] == 1 ? "it" : "them");
	if (!n[0] && !n[1] && !n[2])
		return;
	parts[0] = 0;
	if (n[0])
		o += snprintf(parts + o, sizeof parts - (size_t)o,
			      "%lu encrypted inside the program (tls-in-program)", n[0]);
	if (n[1])
		o += snprintf(parts + o, sizeof parts - (size_t)o,
			      "%s%lu in a protocol no processor knows", o ? ", " : "", n[1]);
	if (n[2])
		snprintf(parts + o, sizeof parts - (size_t)o,
			 "%s%lu lost by their processor", o ? ", " : "", n[2]);
	fprintf(stderr, "%s: %lu channels of %s could not be read: %s; requests through them are not traced (bp-reconstruct names them by port)\n",
		prog, n[0] + n[1] + n[2], base ? base + 1 : cmd, parts);
}

/* Run ARGV as a child, wait, say the line, exit as it did. */
static void __attribute__((noreturn)) run_and_wait(char **argv)
{
	char path[PATH_MAX];
	const char *tmp = getenv("TMPDIR");
	struct sigaction sa;
	int fd, st = 0, err[2];
	pid_t pid;

	snprintf(path, sizeof path, "%s/bp-run-unread.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		die(126, "cannot make a note file in %s: %s (set TMPDIR, or use --exec)",
		    tmp && *tmp ? tmp : "/tmp", strerror(errno));
	close(fd);
	setenv_or_die("BTRACE_UNREAD", path);
	/* The child tells an exec failure through a close-on-exec pipe. */
	if (pipe2(err, O_CLOEXEC) < 0)
		die(126, "pipe: %s", strerror(errno));
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	pid = fork();
	if (pid < 0)
		die(126, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(err[0]);
		execvp(argv[0], argv);
		int e = errno;
		(void)!write(err[1], &e, sizeof e);
		_exit(127);
	}
	child_pid = pid;
	close(err[1]);
	{
		static const int sigs[] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP,
					    SIGUSR1, SIGUSR2, SIGCONT, SIGWINCH };
		for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
			sigaction(sigs[i], &sa, NULL);
	}
	int e = 0;
	ssize_t r;
	while ((r = read(err[0], &e, sizeof e)) < 0 && errno == EINTR)
		;
	close(err[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			unlink(path);
			die(126, "waitpid: %s", strerror(errno));
		}
	if (r == (ssize_t)sizeof e) {
		unlink(path);
		die(e == ENOENT ? 127 : 126, "%s: %s", argv[0], strerror(e));
	}
	say_unread(argv[0], path);
	unlink(path);
	if (WIFSIGNALED(st)) {
		int sig = WTERMSIG(st);
		signal(sig, SIG_DFL);
		sigset_t one;
		sigemptyset(&one);
		sigaddset(&one, sig);
		sigprocmask(SIG_UNBLOCK, &one, NULL);
		raise(sig);
	}
	exit(WIFEXITED(st) ? WEXITSTATUS(st) : 126);
}

static int exists(const char *p)
{
	return access(p, F_OK) == 0;
}

/* Directory of this executable, for finding the library and bp-logd. */
static void self_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;
	buf[n > 0 ? n : 0] = 0;
	slash = strrchr(buf, '/');
	if (slash)
		*slash = 0;
	else
		strcpy(buf, ".");
}

static int find_lib(char *out, size_t len, const char *given)
{
	char dir[PATH_MAX];
	const char *env = getenv("BTRACE_LIB");
	const char *cands[] = { "/.libs/libbtrace.so", "/../lib/libbtrace.so",
				"/../.libs/libbtrace.so" };

	if (given || (env && *env)) {
		const char *p = given ? given : env;
		if (!realpath(p, out))
			die(126, "%s: %s (the tracing library given by %s)", p,
			    strerror(errno), given ? "--lib" : "BTRACE_LIB");
		return 0;
	}
	self_dir(dir, sizeof dir);
	for (unsigned i = 0; i < sizeof cands / sizeof cands[0]; i++) {
		char p[PATH_MAX * 2];
		snprintf(p, sizeof p, "%s%s", dir, cands[i]);
		if (exists(p) && realpath(p, out))
			return 0;
	}
	if (exists(LIBDIR "/libbtrace.so") && realpath(LIBDIR "/libbtrace.so", out))
		return 0;
	(void)len;
	return -1;
}

static int logd_answers(const char *path)
{
	struct sockaddr_un sa;
	int fd, ok;

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sa.sun_path)
		return 0;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	ok = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
	close(fd);
	return ok;
}

static void find_logd(char *out, size_t len)
{
	char dir[PATH_MAX];
	self_dir(dir, sizeof dir);
	snprintf(out, len, "%s/bp-logd", dir);
	if (access(out, X_OK) == 0)
		return;
	snprintf(out, len, "%s/../bin/bp-logd", dir);
	if (access(out, X_OK) == 0)
		return;
	snprintf(out, len, "%s", BINDIR "/bp-logd");
	if (access(out, X_OK) == 0)
		return;
	snprintf(out, len, "bp-logd");
}

/* Start a detached bp-logd and wait (bounded) until it answers. */
static void start_logd(const char *sock, const char *logdir, const char *host)
{
	char logd[PATH_MAX + 32];
	pid_t pid;

	find_logd(logd, sizeof logd);
	pid = fork();
	if (pid < 0)
		die(126, "cannot start bp-logd: fork: %s", strerror(errno));
	if (pid == 0) {
		/* grandchild, in its own session: it outlives bp-run */
		if (fork() != 0)
			_exit(0);
		setsid();
		unsetenv("LD_PRELOAD");
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			if (nul > 2)
				close(nul);
		}
		if (host)
			execlp(logd, "bp-logd", "-f", "-d", logdir, "-s", sock,
			       "-H", host, (char *)NULL);
		else
			execlp(logd, "bp-logd", "-f", "-d", logdir, "-s", sock,
			       (char *)NULL);
		fprintf(stderr, "bp-run: cannot run %s: %s\n", logd, strerror(errno));
		_exit(127);
	}
	waitpid(pid, NULL, 0);
	for (int i = 0; i < 100; i++) {
		struct timespec ts = { 0, 50 * 1000000L };
		if (logd_answers(sock)) {
			note("started bp-logd (socket %s, logs in %s); stop it with: bp-logd -c stop -s %s",
			     sock, logdir, sock);
			return;
		}
		nanosleep(&ts, NULL);
	}
	note("bp-logd did not answer on %s within 5 s; events go to the spool directory", sock);
}

/* Resolve COMMAND like execvp would. */
static int resolve(const char *cmd, char *out, size_t len)
{
	const char *path = getenv("PATH");
	if (strchr(cmd, '/')) {
		snprintf(out, len, "%s", cmd);
		return access(out, X_OK);
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *end = strchr(path, ':');
		size_t n = end ? (size_t)(end - path) : strlen(path);
		snprintf(out, len, "%.*s/%s", (int)n, n ? path : ".", cmd);
		if (access(out, X_OK) == 0)
			return 0;
		path += n + (end ? 1 : 0);
	}
	return -1;
}

/*
 * Can the dynamic loader preload into FILE?  Returns NULL if so, else why
 * not.  Scripts are judged by their interpreter.
 */
static const char *untraceable(const char *file, int depth)
{
	static char why[PATH_MAX + 128];
	unsigned char buf[4096];
	struct stat st;
	ssize_t n;
	int fd;

	if (stat(file, &st) < 0)
		return NULL;
	if ((st.st_mode & (S_ISUID | S_ISGID)) &&
	    (st.st_uid != geteuid() || (st.st_mode & S_ISGID))) {
		snprintf(why, sizeof why,
			 "%s is setuid/setgid: the dynamic loader ignores LD_PRELOAD for it, so it cannot be traced (run it without the setuid bit, or as its owner)",
			 file);
		return why;
	}
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof buf);
	close(fd);
	if (n >= 2 && buf[0] == '#' && buf[1] == '!' && depth < 3) {
		char interp[PATH_MAX];
		ssize_t i = 2, k = 0;
		while (i < n && (buf[i] == ' ' || buf[i] == '\t'))
			i++;
		while (i < n && buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\n' &&
		       k < (ssize_t)sizeof interp - 1)
			interp[k++] = (char)buf[i++];
		interp[k] = 0;
		return k ? untraceable(interp, depth + 1) : NULL;
	}
	if (n < (ssize_t)sizeof(Elf64_Ehdr) || memcmp(buf, ELFMAG, SELFMAG) != 0)
		return NULL;
	if (buf[EI_CLASS] == ELFCLASS64) {
		Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
		int dyn = 0;
		if (eh->e_phoff + (size_t)eh->e_phnum * sizeof(Elf64_Phdr) > (size_t)n)
			return NULL;   /* headers beyond what we read: do not guess */
		for (int i = 0; i < eh->e_phnum; i++) {
			Elf64_Phdr *ph = (Elf64_Phdr *)(buf + eh->e_phoff) + i;
			if (ph->p_type == PT_INTERP || ph->p_type == PT_DYNAMIC)
				dyn = 1;
		}
		if (!dyn) {
			snprintf(why, sizeof why,
				 "%s is statically linked: no dynamic loader runs, so LD_PRELOAD cannot load the tracing library and nothing would be traced",
				 file);
			return why;
		}
	}
	return NULL;
}

static void setenv_or_die(const char *k, const char *v)
{
	if (setenv(k, v, 1) < 0)
		die(126, "setenv %s: %s", k, strerror(errno));
}

int main(int argc, char **argv)
{
	enum { OPT_NOLOGD = 256, OPT_NOISO, OPT_SPOOL, OPT_NOFOLLOW, OPT_LIB,
	       OPT_WAIT, OPT_EXEC };
	static const struct option opts[] = {
		{ "socket", required_argument, 0, 's' },
		{ "logdir", required_argument, 0, 'd' },
		{ "host", required_argument, 0, 'H' },
		{ "no-logd", no_argument, 0, OPT_NOLOGD },
		{ "rules", required_argument, 0, 'r' },
		{ "conf", required_argument, 0, 'c' },
		{ "no-isolation", no_argument, 0, OPT_NOISO },
		{ "spool", required_argument, 0, OPT_SPOOL },
		{ "no-follow", no_argument, 0, OPT_NOFOLLOW },
		{ "lib", required_argument, 0, OPT_LIB },
		{ "wait", no_argument, 0, OPT_WAIT },
		{ "exec", no_argument, 0, OPT_EXEC },
		{ "quiet", no_argument, 0, 'q' },
		{ "help", no_argument, 0, 'h' },
		{ "version", no_argument, 0, 'V' },
		{ 0, 0, 0, 0 },
	};
	const char *sock = getenv("BTRACE_LOGD"), *logdir = getenv("BTRACE_LOGDIR");
	const char *host = NULL, *lib = NULL, *why;
	char defsock[128], lpath[PATH_MAX], cmd[PATH_MAX], pre[PATH_MAX * 3];
	int nologd = 0, c, wait_mode = -1;

	while ((c = getopt_long(argc, argv, "+s:d:H:r:c:qhV", opts, NULL)) != -1) {
		switch (c) {
		case 's': sock = optarg; break;
		case 'd': logdir = optarg; break;
		case 'H': host = optarg; break;
		case 'r': setenv_or_die("BTRACE_RULES", optarg); break;
		case 'c':
			if (access(optarg, R_OK) < 0)
				die(2, "%s: %s (the rules file given by --conf)", optarg,
				    strerror(errno));
			if (!realpath(optarg, lpath))
				die(2, "%s: %s", optarg, strerror(errno));
			setenv_or_die("BTRACE_CONF", lpath);
			break;
		case 'q': quiet = 1; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("bp-run (BorderPatrol) %s\n", PACKAGE_VERSION); return 0;
		case OPT_NOLOGD: nologd = 1; break;
		case OPT_NOISO: setenv_or_die("BTRACE_ISOLATION", "0"); break;
		case OPT_SPOOL: setenv_or_die("BTRACE_SPOOL", optarg); break;
		case OPT_NOFOLLOW: setenv_or_die("BTRACE_FOLLOW", "0"); break;
		case OPT_LIB: lib = optarg; break;
		case OPT_WAIT: wait_mode = 1; break;
		case OPT_EXEC: wait_mode = 0; break;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "%s: no command given\n", prog);
		usage(stderr);
		return 2;
	}
	if (find_lib(lpath, sizeof lpath, lib) < 0)
		die(126, "cannot find libbtrace.so (looked next to bp-run and in %s); give it with --lib or BTRACE_LIB",
		    LIBDIR);
	if (!sock || !*sock) {
		snprintf(defsock, sizeof defsock, "/tmp/btrace-%u/logd.sock",
			 (unsigned)getuid());
		sock = defsock;
	}
	if (!logdir || !*logdir)
		logdir = "logs";
	if (resolve(argv[optind], cmd, sizeof cmd) < 0)
		die(127, "%s: command not found", argv[optind]);
	if ((why = untraceable(cmd, 0)))
		die(126, "%s", why);

	setenv_or_die("BTRACE_LOGD", sock);
	if (host)
		setenv_or_die("BTRACE_HOST", host);
	if (!logd_answers(sock)) {
		if (nologd)
			note("no bp-logd on %s: events go to the spool directory", sock);
		else
			start_logd(sock, logdir, host);
	}
	{
		const char *old = getenv("LD_PRELOAD");
		if (old && *old && !strstr(old, lpath))
			snprintf(pre, sizeof pre, "%s %s", lpath, old);
		else if (old && strstr(old, lpath))
			snprintf(pre, sizeof pre, "%s", old);
		else
			snprintf(pre, sizeof pre, "%s", lpath);
		setenv_or_die("LD_PRELOAD", pre);
	}
	if (wait_mode < 0)
		wait_mode = isatty(2);
	if (wait_mode)
		run_and_wait(argv + optind);
	execvp(argv[optind], argv + optind);
	die(errno == ENOENT ? 127 : 126, "%s: %s", argv[optind], strerror(errno));
}
