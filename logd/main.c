/*
 * main.c - bp-logd's command line: options, the listening socket,
 * daemonizing, and the control client (bp-logd -c COMMAND).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
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

#include "logd.h"

static const char usage_text[] =
"Usage: bp-logd [OPTION]...\n"
"       bp-logd -c pause|resume|status|rotate|stop [-s PATH]\n"
"\n"
"The per-host logging daemon of BorderPatrol.  Programs traced with\n"
"LD_PRELOAD=libbtrace.so connect to its unix socket and hand it the shared\n"
"memory rings their threads write events into; bp-logd drains the rings\n"
"into append-only log segments DIR/HOST/<start>-<n>.btl that bp-reconstruct\n"
"and bp-dump read.  Whatever a traced process published before it crashed\n"
"is still written: bp-logd holds the memory.\n"
"\n"
"Options:\n"
"  -s, --socket PATH     listen on the unix socket PATH (SOCK_SEQPACKET).\n"
"                        Default: $BTRACE_LOGD, else /tmp/btrace-UID/logd.sock\n"
"                        (the directory is created with mode 0700).\n"
"  -d, --dir DIR         write segments under DIR/HOST/.  Default:\n"
"                        $BTRACE_LOGDIR, else ./logs.  Directories are\n"
"                        created 0700, segment files 0600.\n"
"  -H, --host NAME       the HOST directory and the host name recorded in\n"
"                        segment headers (default: gethostname()).\n"
"  -i, --interval MS     drain every ring every MS milliseconds (default 50;\n"
"                        rings are also drained at once when a tracer kicks).\n"
"  -S, --size SIZE       start a new segment when the current one reaches\n"
"                        SIZE bytes; suffixes k, M, G (default 64M).\n"
"  -u, --allow-user USER let processes of USER (name or uid) connect too;\n"
"                        may be repeated.  Without -u/-g only processes of\n"
"                        bp-logd's own uid are served.\n"
"  -g, --allow-group GROUP  let processes in GROUP (primary or\n"
"                        supplementary; name or gid) connect; may be repeated.\n"
"                        With -u or -g the socket is created mode 0666 and its\n"
"                        default directory 0711: access is checked per\n"
"                        connection with SO_PEERCRED.\n"
"  -f, --foreground      stay in the foreground (the default).\n"
"  -D, --daemon          detach into the background once the socket and the\n"
"                        first segment are ready; stderr stays where it was.\n"
"  -p, --pidfile FILE    write bp-logd's pid to FILE (removed on exit).\n"
"  -v, --verbose         say more on stderr (peers connecting and leaving);\n"
"                        twice for debugging output.\n"
"  -c, --control CMD     send CMD to the running bp-logd at -s PATH and print\n"
"                        its reply:\n"
"                          pause   tracers stop emitting events (BT_CF_PAUSED)\n"
"                          resume  tracers emit events again\n"
"                          status  peers, bytes written, current segment, loss\n"
"                          rotate  fsync and start a new segment\n"
"                          stop    drain every ring, fsync and exit\n"
"  -h, --help            show this help and exit.\n"
"  -V, --version         show the version and exit.\n"
"\n"
"Signals:\n"
"  SIGTERM, SIGINT       drain every ring, fsync, exit 0.\n"
"  SIGHUP                fsync and start a new segment.\n"
"\n"
"Environment:\n"
"  BTRACE_LOGD           default socket path (also read by libbtrace.so).\n"
"  BTRACE_LOGDIR         default log directory.\n"
"\n"
"Files:\n"
"  /tmp/btrace-UID/logd.sock   default socket.\n"
"  DIR/HOST/<start>-<n>.btl    log segments: <start> is the creation time\n"
"                              (UTC, YYYYMMDDTHHMMSSZ), <n> a sequence number\n"
"                              continued across restarts.  Format:\n"
"                              docs/log-format.md; print with bp-dump.\n"
"\n"
"Disk full or failing: bp-logd says so once on stderr, leaves the events\n"
"in the rings (tracers wait, or write their spool), retries every interval\n"
"and resumes by itself; nothing it acknowledged is lost.\n"
"\n"
"Restarted after a crash or a kill: bp-logd looks through /proc for the\n"
"rings the bp-logd before left on the same socket and drains them at once\n"
"(an idle tracer would hand them over only at its next event); tracers\n"
"reconnect by themselves.  Only processes it would serve are looked at.\n"
"\n"
"Exit status:\n"
"  0  stopped cleanly (signal or stop command); control command succeeded.\n"
"  1  error: bad option, socket or log directory unusable, another bp-logd\n"
"     on the socket, events left undrained at exit; control command failed.\n"
"  2  control command: no bp-logd answers on the socket.\n"
"\n"
"Examples:\n"
"  bp-logd -d /var/tmp/logs -v &               # start, in the foreground\n"
"  LD_PRELOAD=libbtrace.so curl -s http://127.0.0.1/ >/dev/null\n"
"  bp-logd -c status                          # what is connected\n"
"  bp-logd -D -p /tmp/logd.pid -s /tmp/l.sock -d logs -H web1\n"
"  bp-logd -c stop -s /tmp/l.sock\n"
"  bp-dump logs/web1                          # read what was written\n";

static void usage(FILE *f)
{
	fputs(usage_text, f);
}

static void bad_usage(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

static void bad_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "bp-logd: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'bp-logd --help' for more information.\n");
	exit(1);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		bad_usage("bad size '%s' (a number with an optional k, M or G)", s);
	switch (*end) {
	case 0: break;
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: bad_usage("bad size '%s' (a number with an optional k, M or G)", s);
	}
	if (*end && strcmp(end, "iB") && strcmp(end, "B"))
		bad_usage("bad size '%s' (a number with an optional k, M or G)", s);
	if (v < 4096)
		bad_usage("segment size '%s' is too small (at least 4k)", s);
	return v;
}

static char *default_socket(void)
{
	static char path[PATH_MAX];
	const char *e = getenv("BTRACE_LOGD");

	if (e && *e)
		return (char *)e;
	snprintf(path, sizeof path, "/tmp/btrace-%u/logd.sock",
		 (unsigned)getuid());
	return path;
}

/* Create the default socket directory, or check the one that is there. */
static void make_socket_dir(const char *sock, mode_t mode)
{
	char dir[PATH_MAX];
	struct stat st;
	char *slash;

	snprintf(dir, sizeof dir, "%s", sock);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return;
	*slash = 0;
	if (mkdir(dir, mode) == 0) {
		chmod(dir, mode);
		return;
	}
	if (errno != EEXIST)
		fatal("cannot create %s: %s", dir, strerror(errno));
	if (lstat(dir, &st) < 0)
		fatal("%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		fatal("%s exists and is not a directory: remove it or use -s PATH",
		      dir);
	if (st.st_uid != geteuid())
		fatal("%s belongs to uid %u, not to us (uid %u): refusing to put the socket there; remove it or use -s PATH",
		      dir, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & 022)
		fatal("%s is writable by others (mode %o): chmod 700 it or use -s PATH",
		      dir, (unsigned)(st.st_mode & 07777));
}

static int sock_addr(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sa->sun_path)
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

static int open_listener(const char *path, int open_to_all)
{
	struct sockaddr_un sa;
	struct stat st;
	mode_t old;
	int fd;

	if (sock_addr(path, &sa) < 0)
		fatal("socket path too long (max %zu bytes): %s",
		      sizeof sa.sun_path - 1, path);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			fatal("%s exists and is not a socket: remove it or use -s PATH",
			      path);
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (fd < 0)
			fatal("socket: %s", strerror(errno));
		if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
			fatal("another bp-logd is listening on %s (stop it with: bp-logd -c stop -s %s)",
			      path, path);
		close(fd);
		if (unlink(path) < 0)
			fatal("cannot remove the stale socket %s: %s", path,
			      strerror(errno));
		log_info("removed stale socket %s", path);
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		fatal("socket: %s", strerror(errno));
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		fatal("cannot bind %s: %s", path, strerror(errno));
	umask(old);
	if (open_to_all && chmod(path, 0666) < 0)
		fatal("chmod %s: %s", path, strerror(errno));
	if (listen(fd, 128) < 0)
		fatal("listen %s: %s", path, strerror(errno));
	return fd;
}

/*
 * The lazy listener next to PATH (PATH BT_LAZY_SUFFIX, docs/logd.md
 * "Forked children"): made like PATH's, after it (so a bp-logd already on
 * PATH was found); -1 with a warning when it cannot be (forked children
 * then connect to PATH and wait, as before).  The path it made is in
 * LAZY_PATH.
 */
static int open_lazy(const char *path, int open_to_all, char *lazy_path,
		     size_t len)
{
	struct sockaddr_un sa;
	struct stat st;
	mode_t old;
	int fd;

	lazy_path[0] = 0;
	if ((size_t)snprintf(lazy_path, len, "%s%s", path, BT_LAZY_SUFFIX) >= len ||
	    sock_addr(lazy_path, &sa) < 0) {
		log_warn("%s%s: path too long for a socket: forked children connect to %s and wait",
			 path, BT_LAZY_SUFFIX, path);
		lazy_path[0] = 0;
		return -1;
	}
	if (lstat(lazy_path, &st) == 0 &&
	    (!S_ISSOCK(st.st_mode) || unlink(lazy_path) < 0)) {
		log_warn("%s exists and cannot be replaced: forked children connect to %s and wait",
			 lazy_path, path);
		lazy_path[0] = 0;
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		goto fail;
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		umask(old);
		goto fail;
	}
	umask(old);
	/* (the whole queue: it is read every -i ms only) */
	if ((open_to_all && chmod(lazy_path, 0666) < 0) ||
	    listen(fd, SOMAXCONN) < 0) {
		unlink(lazy_path);
		goto fail;
	}
	return fd;
fail:
	log_warn("cannot listen on %s: %s: forked children connect to %s and wait",
		 lazy_path, strerror(errno), path);
	if (fd >= 0)
		close(fd);
	lazy_path[0] = 0;
	return -1;
}

/* bp-logd -c CMD: returns the exit status. */
static int control(const char *path, const char *cmd)
{
	static const char *const names[] = { NULL, "pause", "resume", "status",
					     "rotate", "stop" };
	struct bt_lm_ctl m;
	struct bt_lm_ctl_reply rep;
	struct sockaddr_un sa;
	int fd, code = 0, got = 0;
	unsigned c = 0;

	for (unsigned i = 1; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(cmd, names[i]) == 0)
			c = i;
	if (!c)
		bad_usage("unknown control command '%s' (pause, resume, status, rotate or stop)",
			  cmd);
	if (sock_addr(path, &sa) < 0)
		fatal("socket path too long: %s", path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		fatal("socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		fprintf(stderr, "bp-logd: no bp-logd answers on %s: %s\n", path,
			strerror(errno));
		return 2;
	}
	memset(&m, 0, sizeof m);
	m.h.type = BT_LM_CTL;
	m.h.len = sizeof m;
	m.h.version = BT_RING_VERSION;
	m.cmd = c;
	if (send(fd, &m, sizeof m, MSG_NOSIGNAL) != (ssize_t)sizeof m) {
		fprintf(stderr, "bp-logd: sending to %s: %s\n", path,
			strerror(errno));
		return 2;
	}
	for (;;) {
		struct pollfd pf = { fd, POLLIN, 0 };
		int pr = poll(&pf, 1, 10000);
		if (pr == 0) {
			fprintf(stderr, "bp-logd: no reply from %s within 10 s\n",
				path);
			return 1;
		}
		ssize_t n = recv(fd, &rep, sizeof rep, 0);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECONNRESET)
				break;
			fprintf(stderr, "bp-logd: reading the reply: %s\n",
				strerror(errno));
			return 1;
		}
		if ((size_t)n != sizeof rep || rep.h.type != BT_LM_CTL_REPLY) {
			fprintf(stderr, "bp-logd: malformed reply from %s\n", path);
			return 1;
		}
		rep.text[sizeof rep.text - 1] = 0;
		fputs(rep.text, stdout);
		if (rep.status < 0)
			code = 1;
		got = 1;
	}
	close(fd);
	if (!got) {
		fprintf(stderr, "bp-logd: %s closed without a reply (refused: not the daemon's uid?)\n",
			path);
		return 1;
	}
	return code;
}

static char *pidfile_written;

static void remove_pidfile(void)
{
	if (pidfile_written)
		unlink(pidfile_written);
}

static void write_pidfile(const char *path)
{
	char b[32];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int n = snprintf(b, sizeof b, "%d\n", (int)getpid());

	if (fd < 0 || write(fd, b, (size_t)n) != n)
		fatal("cannot write pid file %s: %s", path, strerror(errno));
	close(fd);
	pidfile_written = realpath(path, NULL);
	atexit(remove_pidfile);
}

/*
 * Detach.  The parent waits until the child reports that it is ready (or
 * failed) so that bp-logd -D exits 0 only once the daemon serves.
 * Returns the write end of the readiness pipe in the child.
 */
static int daemonize(void)
{
	int pfd[2];
	pid_t pid;
	char c;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		fatal("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		fatal("fork: %s", strerror(errno));
	if (pid > 0) {
		close(pfd[1]);
		if (read(pfd[0], &c, 1) == 1)
			_exit(0);
		_exit(1);
	}
	close(pfd[0]);
	if (setsid() < 0)
		fatal("setsid: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		fatal("fork: %s", strerror(errno));
	if (pid > 0)
		_exit(0);
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
		if (nul > 2)
			close(nul);
	}
	return pfd[1];
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "dir", required_argument, NULL, 'd' },
		{ "host", required_argument, NULL, 'H' },
		{ "interval", required_argument, NULL, 'i' },
		{ "size", required_argument, NULL, 'S' },
		{ "allow-user", required_argument, NULL, 'u' },
		{ "allow-group", required_argument, NULL, 'g' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "daemon", no_argument, NULL, 'D' },
		{ "pidfile", required_argument, NULL, 'p' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "control", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct logd_opts o;
	const char *ctl = NULL, *cause;
	static char host[256], dir[PATH_MAX];
	struct store *store;
	int ch, lfd, lazy, ready = -1, code;
	char lazy_path[PATH_MAX + 16];

	memset(&o, 0, sizeof o);
	o.interval_ms = 50;
	o.seg_size = 64u << 20;
	while ((ch = getopt_long(argc, argv, "s:d:H:i:S:u:g:fDp:vc:hV",
				 longopts, NULL)) != -1) {
		switch (ch) {
		case 's': o.sock_path = optarg; break;
		case 'd': o.log_dir = optarg; break;
		case 'H': o.host = optarg; break;
		case 'i': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || end == optarg || v == 0 || v > 60000)
				bad_usage("bad interval '%s' (1..60000 ms)", optarg);
			o.interval_ms = (unsigned)v;
			break;
		}
		case 'S': o.seg_size = parse_size(optarg); break;
		case 'u': {
			struct passwd *pw = getpwnam(optarg);
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (o.n_allow_uid >= LOGD_MAX_ALLOW)
				bad_usage("too many -u options (max 32, at '%s')", optarg);
			if (pw)
				o.allow_uid[o.n_allow_uid++] = pw->pw_uid;
			else if (!*end && end != optarg)
				o.allow_uid[o.n_allow_uid++] = (uid_t)v;
			else
				bad_usage("unknown user '%s'", optarg);
			break;
		}
		case 'g': {
			struct group *gr = getgrnam(optarg);
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (o.n_allow_gid >= LOGD_MAX_ALLOW)
				bad_usage("too many -g options (max 32, at '%s')", optarg);
			if (gr)
				o.allow_gid[o.n_allow_gid++] = gr->gr_gid;
			else if (!*end && end != optarg)
				o.allow_gid[o.n_allow_gid++] = (gid_t)v;
			else
				bad_usage("unknown group '%s'", optarg);
			break;
		}
		case 'f': o.daemonize = 0; break;
		case 'D': o.daemonize = 1; break;
		case 'p': o.pidfile = optarg; break;
		case 'v': o.verbose++; break;
		case 'c': ctl = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V':
			printf("bp-logd (BorderPatrol) %s\n", PACKAGE_VERSION);
			return 0;
		default:
			fprintf(stderr, "Try 'bp-logd --help' for more information.\n");
			return 1;
		}
	}
	if (optind < argc)
		bad_usage("unexpected argument '%s'", argv[optind]);
	log_set_verbose(o.verbose);
	if (!o.sock_path) {
		o.sock_path = default_socket();
		if (!ctl && !getenv("BTRACE_LOGD"))
			make_socket_dir(o.sock_path,
					o.n_allow_uid || o.n_allow_gid ? 0711 : 0700);
	}
	if (ctl)
		return control(o.sock_path, ctl);

	if (!o.log_dir) {
		const char *e = getenv("BTRACE_LOGDIR");
		o.log_dir = e && *e ? e : "./logs";
	}
	if (!o.host) {
		if (gethostname(host, sizeof host) < 0 || !host[0])
			snprintf(host, sizeof host, "localhost");
		host[sizeof host - 1] = 0;
		o.host = host;
	}
	if (!o.host[0] || strchr(o.host, '/') || strcmp(o.host, ".") == 0 ||
	    strcmp(o.host, "..") == 0 || strlen(o.host) > 63)
		bad_usage("bad host name '%s' (1-63 characters, no '/')", o.host);
	umask(077);
	if (mkdir(o.log_dir, 0700) < 0 && errno != EEXIST)
		fatal("cannot create log directory %s: %s", o.log_dir,
		      strerror(errno));
	if (!realpath(o.log_dir, dir))
		fatal("log directory %s: %s", o.log_dir, strerror(errno));
	o.log_dir = dir;

	lfd = open_listener(o.sock_path, o.n_allow_uid || o.n_allow_gid);
	lazy = open_lazy(o.sock_path, o.n_allow_uid || o.n_allow_gid, lazy_path,
			 sizeof lazy_path);
	if (o.daemonize)
		ready = daemonize();
	code = store_open(&store, o.log_dir, o.host, o.seg_size, &cause);
	if (code < 0) {
		unlink(o.sock_path);
		if (lazy_path[0])
			unlink(lazy_path);
		fatal("%s", cause);
	}
	if (o.pidfile)
		write_pidfile(o.pidfile);
	log_info("listening on %s, writing %s", o.sock_path, store_path(store));
	if (ready >= 0) {
		if (write(ready, "r", 1) < 0)
			log_warn("cannot tell the parent we are ready: %s",
				 strerror(errno));
		close(ready);
	}
	code = server_run(&o, lfd, lazy, store);
	unlink(o.sock_path);
	if (lazy_path[0])
		unlink(lazy_path);
	log_info("stopped");
	return code;
}
