/*
 * bp-run - run a command traced by BorderPatrol.
 *
 *   bp-run [options] -- COMMAND [ARGS...]
 *
 * Finds libbtrace.so, makes sure a bp-logd answers on the socket (starting
 * one, detached, if none does), checks the command can be traced at all
 * (a statically linked or setuid program ignores LD_PRELOAD: bp-run says so
 * instead of producing an empty trace), sets LD_PRELOAD and the BTRACE_*
 * variables, and execs the command: it keeps bp-run's pid.
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
"  -q, --quiet         no notes on stderr\n"
"  -h, --help          this help\n"
"  -V, --version       version\n"
"\n"
"Environment: BTRACE_LOGD, BTRACE_LOGDIR, BTRACE_RULES, BTRACE_CONF,\n"
"BTRACE_ISOLATION, BTRACE_SPOOL, BTRACE_BUFSIZE (ring size per thread, KiB),\n"
"BTRACE_HOST, BTRACE_LIB.\n"
"\n"
"Exit status: COMMAND's own, since bp-run becomes COMMAND; 126 when COMMAND\n"
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
	enum { OPT_NOLOGD = 256, OPT_NOISO, OPT_SPOOL, OPT_NOFOLLOW, OPT_LIB };
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
		{ "quiet", no_argument, 0, 'q' },
		{ "help", no_argument, 0, 'h' },
		{ "version", no_argument, 0, 'V' },
		{ 0, 0, 0, 0 },
	};
	const char *sock = getenv("BTRACE_LOGD"), *logdir = getenv("BTRACE_LOGDIR");
	const char *host = NULL, *lib = NULL, *why;
	char defsock[128], lpath[PATH_MAX], cmd[PATH_MAX], pre[PATH_MAX * 3];
	int nologd = 0, c;

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
	execvp(argv[optind], argv + optind);
	die(errno == ENOENT ? 127 : 126, "%s: %s", argv[optind], strerror(errno));
}
