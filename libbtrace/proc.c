/*
 * proc.c - the life of a traced process: start-up, fork, exec, posix_spawn
 * and threads (rule 3 of the paper: a child starts in its parent's request).
 *
 * Start-up (library constructor): read the configuration, create the
 * ring, register with bp-logd and write PROC_START, so every traced
 * process is known even if it does no I/O.  The real libc functions are
 * bound on first use (real.h).
 *
 * fork: pthread_atfork handlers take the shim's global locks around the
 * fork and give the child fresh state (its own ring and logd link, its own
 * thread id); the parent logs FORK with the child's pid, the child
 * PROC_START with FORKED and the forking thread.  vfork runs as fork (as
 * under Valgrind): a vfork child shares its parent's memory, and the shim's
 * bookkeeping in the child (dup2, close before exec) would otherwise change
 * the parent's.
 *
 * exec and posix_spawn: unless BTRACE_FOLLOW=0, the new program's
 * environment keeps LD_PRELOAD and the BTRACE_* settings even when the
 * caller built a fresh environment (CGI), so the whole process tree stays
 * traced.  Before an exec replaces the image, every event is handed to
 * bp-logd or the spool.
 */
#include "config.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bt.h"
#include "impl.h"
#include "logpath.h"

extern char **environ;

struct bt_procinfo bt_proc;
BT_TLS struct bt_thread bt_self;
int bt_initialized;

/* creator info for a thread started by our pthread_create */
static BT_TLS uint64_t self_cookie;
static BT_TLS int self_creator;

static int fork_parent_tid;

/* BTRACE_* and LD_PRELOAD to carry across exec */
#define KEEP_MAX 16
static char *keep_env[KEEP_MAX];
/* "BTRACE_EXECED=<pid>": the image an exec starts knows it replaced a
 * traced image of its pid (PROC_START flag BT_PF_EXECED), and removes it. */
static char exec_mark[40] = "BTRACE_EXECED=0";
static unsigned nkeep;
static char preload_entry[PATH_MAX + 16];

int bt_proc_gettid(void)
{
	if (unlikely(!bt_self.tid))
		bt_self.tid = (int)syscall(SYS_gettid);
	return bt_self.tid;
}

/* First records of a thread's stream (called by emit.c on slot claim). */
void bt_proc_first_records(void)
{
	struct bt_event ev;
	struct timespec rt;

	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_THREAD_START;
	ev.tid = (uint32_t)bt_proc_gettid();
	ev.ptid = (uint32_t)self_creator;
	ev.cookie = self_cookie;
	ev.pid = (uint32_t)bt_proc.pid;
	/* (even while paused: a stream always says whose it is) */
	bt_emit_always(&ev);
	if (bt_proc.started)
		return;
	bt_proc.started = 1;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_PROC_START;
	ev.pid = (uint32_t)bt_proc.pid;
	ev.ppid = (uint32_t)bt_proc.ppid;
	ev.ptid = (uint32_t)bt_proc.fork_ptid;
	ev.flags = bt_proc.start_flags |
		   (bt_conf.isolation ? BT_PF_ISOLATION : 0);
	clock_gettime(CLOCK_REALTIME, &rt);
	ev.realtime = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
	ev.str = bt_proc.exe;
	ev.str_len = (uint32_t)strlen(bt_proc.exe);
	ev.str2 = bt_proc.cmdline;
	ev.str2_len = bt_proc.cmdline_len;
	bt_emit_always(&ev);
}

/* The arguments glibc passes to the constructor (argc < 0: bt_init was
 * called from elsewhere first, e.g. a wrapped call in an earlier
 * constructor). */
static int ctor_argc = -1;
static char **ctor_argv;

/*
 * The first bytes of /proc/self/cmdline into bt_proc.cmdline, N of them.
 * From the constructor's ARGV when there is one: the same bytes (the
 * kernel's copy of the arguments, each followed by a NUL, which argv
 * points into; main has not run, and only an earlier constructor that
 * moved them elsewhere and wrote a new title in their place, as
 * setproctitle does, would make the two differ) without the three
 * system calls and the look-up in /proc of reading the file.
 */
static ssize_t cmdline_bytes(void)
{
	size_t cap = sizeof bt_proc.cmdline - 1, n = 0;
	ssize_t r;
	int fd;

	if (ctor_argc >= 0 && ctor_argv) {
		for (int i = 0; i < ctor_argc && ctor_argv[i] && n < cap; i++) {
			size_t l = strlen(ctor_argv[i]) + 1;
			if (l > cap - n)
				l = cap - n;
			memcpy(bt_proc.cmdline + n, ctor_argv[i], l);
			n += l;
		}
		return (ssize_t)n;
	}
	fd = REAL(open)("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	r = REAL(read)(fd, bt_proc.cmdline, cap);
	REAL(close)(fd);
	return r;
}

static void read_cmdline(void)
{
	ssize_t n = cmdline_bytes();

	bt_proc.cmdline_len = 0;
	if (n <= 0)
		return;
	while (n > 0 && bt_proc.cmdline[n - 1] == 0)
		n--;
	n = (ssize_t)bt_redact_cmdline(bt_proc.cmdline, (size_t)n, bt_conf.redact);
	for (ssize_t i = 0; i < n; i++)
		if (!bt_proc.cmdline[i])
			bt_proc.cmdline[i] = ' ';
	bt_proc.cmdline_len = (uint32_t)n;
}

static void new_ring_id(void)
{
	if (getrandom(&bt_proc.ring_id, sizeof bt_proc.ring_id,
		      GRND_NONBLOCK) != sizeof bt_proc.ring_id)
		bt_proc.ring_id = bt_now() ^ ((uint64_t)getpid() << 32) ^
				  (uint64_t)(uintptr_t)&bt_proc;
	if (!bt_proc.ring_id)
		bt_proc.ring_id = 1;
}

static void remember_env(void)
{
	static const char *const names[] = {
		"BTRACE_RULES", "BTRACE_CONF", "BTRACE_ISOLATION",
		"BTRACE_BUFSIZE", "BTRACE_HOST", "BTRACE_FOLLOW",
		"BTRACE_DISABLE", "BTRACE_REDACT", "BTRACE_UNREAD",
		"BTRACE_CHILD_LAZY",
	};
	char buf[PATH_MAX + 32];

	nkeep = 0;
	/* resolved paths, so a child that changed user still finds them */
	snprintf(buf, sizeof buf, "BTRACE_LOGD=%s", bt_conf.logd_path);
	keep_env[nkeep++] = strdup(buf);
	snprintf(buf, sizeof buf, "BTRACE_SPOOL=%s", bt_conf.spool_dir);
	keep_env[nkeep++] = strdup(buf);
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
		const char *v = getenv(names[i]);
		if (!v || nkeep >= KEEP_MAX)
			continue;
		snprintf(buf, sizeof buf, "%s=%s", names[i], v);
		keep_env[nkeep++] = strdup(buf);
	}
	snprintf(preload_entry, sizeof preload_entry, "LD_PRELOAD=%s",
		 bt_conf.lib_path);
}

static void atfork_prepare(void)
{
	fork_parent_tid = bt_proc_gettid();
	bt_emit_atfork_prepare();
	bt_epq_atfork_prepare();
}

static void atfork_parent(void)
{
	bt_epq_atfork_parent();
	bt_emit_atfork_parent();
}


static void atfork_child(void)
{
	bt_solo_atfork_child();
	bt_emit_atfork_child();
	bt_chan_pool_atfork_child();
	bt_ready_atfork_child();
	bt_epq_atfork_child();
	bt_chan_atfork_child();
	bt_self.tid = 0;
	bt_self.epoch = 0;
	self_cookie = 0;
	self_creator = 0;
	bt_proc.ppid = bt_proc.pid;
	bt_proc.pid = getpid();
	bt_proc.fork_ptid = fork_parent_tid;
	bt_proc.start_flags = BT_PF_FORKED;
	bt_proc.started = 0;
	new_ring_id();
}

static int excluded_exe(const char *exe)
{
	const char *base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	/* our own daemon and tools are never traced */
	return !strcmp(base, "bp-logd") || !strcmp(base, "bp-reconstruct") ||
	       !strcmp(base, "bp-dump") || !strcmp(base, "bp-report") ||
	       !strncmp(base, "lt-bp-", 6);
}

void bt_init(void)
{
	static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
	Dl_info di;
	ssize_t n;
	int exec_lazy = 0;
	const char *h;

	pthread_mutex_lock(&init_mu);
	if (bt_initialized) {
		pthread_mutex_unlock(&init_mu);
		return;
	}
	bt_proc.pid = getpid();
	bt_proc.ppid = getppid();
	if ((h = getenv("BTRACE_EXECED"))) {
		if (atol(h) == (long)bt_proc.pid) {
			bt_proc.start_flags = BT_PF_EXECED;
			exec_lazy = strstr(h, ":L") != NULL;
		}
		unsetenv("BTRACE_EXECED");
	}
	n = readlink("/proc/self/exe", bt_proc.exe, sizeof bt_proc.exe - 1);
	bt_proc.exe[n > 0 ? n : 0] = 0;
	if ((h = getenv("BTRACE_HOST")) && *h)
		snprintf(bt_proc.host, sizeof bt_proc.host, "%s", h);
	else if (gethostname(bt_proc.host, sizeof bt_proc.host - 1) < 0)
		strcpy(bt_proc.host, "localhost");
	new_ring_id();
	if (dladdr((void *)bt_init, &di) && di.dli_fname)
		snprintf(bt_conf.lib_path, sizeof bt_conf.lib_path, "%s",
			 di.dli_fname);
	bt_conf_init();
	if (exec_lazy && bt_conf.child_lazy >= 2)
		bt_link_exec_lazy();
	read_cmdline();                 /* after the conf: BTRACE_REDACT */
	if (excluded_exe(bt_proc.exe))
		bt_conf.enabled = 0;
	remember_env();
	bt_initialized = 1;
	pthread_mutex_unlock(&init_mu);
	if (!bt_conf.enabled)
		return;
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	bt_emit_start();
	/* PROC_START now, even if the program never does I/O */
	bt_emit_claim();
}

/* glibc calls constructors with the program's arguments and
 * environment (read_cmdline uses the arguments). */
__attribute__((constructor(200))) static void bt_ctor(int argc, char **argv,
						    char **envp)
{
	(void)envp;
	ctor_argc = argc;
	ctor_argv = argv;
	bt_init();
	ctor_argc = -1;
	ctor_argv = NULL;
}

__attribute__((destructor)) static void bt_dtor(void)
{
	if (bt_conf.enabled)
		bt_emit_flush(1);
}

/* ---- fork ---------------------------------------------------------------- */

static pid_t fork_common(int is_vfork)
{
	uint64_t t0;
	pid_t r;
	int e;

	if (!bt_enter()) {
		r = REAL(fork)();
		bt_leave_pass();
		return r;
	}
	t0 = bt_now();            /* the child exists only after this */
	r = REAL(fork)();
	e = errno;
	if (r == 0) {
		/* child: atfork_child reset everything; connect to bp-logd
		 * at once (a thread that exits before the link is up would
		 * spool its events) and announce ourselves */
		bt_self.depth = 0;
		bt_self.wait_depth = 0;
		bt_self.in_sig = 0;
		bt_self.leave_hook = 0;
		bt_self.nstash = 0;       /* the parent's handler's */
		bt_emit_start();
		bt_emit_claim();
		errno = e;
		return 0;
	}
	{
		struct bt_event ev;
		memset(&ev, 0, sizeof ev);
		ev.type = BT_EV_FORK;
		ev.ts = t0;
		ev.result = r > 0 ? r : -e;
		ev.flags = is_vfork ? 1 : 0;
		bt_emit(&ev);
	}
	bt_leave();
	errno = e;
	return r;
}

pid_t bt_fork(int is_vfork)
{
	return fork_common(is_vfork);
}

/* ---- exec ----------------------------------------------------------------- */

static int has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static int name_eq(const char *a, const char *b)
{
	while (*a && *a != '=' && *a == *b) {
		a++;
		b++;
	}
	return *a == '=' && *b == '=';
}

/*
 * Build in OUT (capacity CAP entries, PRE a buffer for a new LD_PRELOAD
 * value) the environment a traced child needs: LD_PRELOAD, the BTRACE_*
 * settings and exec_mark.  Returns ENVP itself when following is off (or
 * it is too large).  No allocation: a vfork-like child may run this.
 */
static char *const *fix_env(char *const *envp, char **out, size_t cap,
			    char *pre, size_t prelen)
{
	size_t n = 0, k = 0;
	int have_pre = 0, pre_ok = 0;
	unsigned char have_keep[KEEP_MAX] = { 0 };
	static char *const empty_env[] = { NULL };

	if (!bt_conf.follow || !bt_conf.enabled || !bt_conf.lib_path[0])
		return envp;
	if (!envp)
		envp = empty_env;
	for (n = 0; envp[n]; n++) {
		if (has_prefix(envp[n], "LD_PRELOAD=")) {
			have_pre = 1;
			if (strstr(envp[n], bt_conf.lib_path))
				pre_ok = 1;
		}
		for (unsigned i = 0; i < nkeep; i++)
			if (keep_env[i] && name_eq(envp[n], keep_env[i]))
				have_keep[i] = 1;
	}
	if (n + nkeep + 3 > cap)
		return envp;
	for (size_t i = 0; i < n; i++) {
		if (has_prefix(envp[i], "BTRACE_EXECED="))
			continue;
		if (has_prefix(envp[i], "LD_PRELOAD=") && !pre_ok) {
			snprintf(pre, prelen, "LD_PRELOAD=%s %s", bt_conf.lib_path,
				 envp[i] + strlen("LD_PRELOAD="));
			out[k++] = pre;
			continue;
		}
		out[k++] = envp[i];
	}
	if (!have_pre)
		out[k++] = preload_entry;
	for (unsigned i = 0; i < nkeep; i++)
		if (keep_env[i] && !have_keep[i])
			out[k++] = keep_env[i];
	out[k++] = exec_mark;
	out[k] = NULL;
	return out;
}

/*
 * Room for fix_env's output: small buffers on the caller's stack when the
 * environment fits (the usual case: a 40 KB frame cost every exec a few
 * page faults on fresh stack pages), else one anonymous mapping (mmap, not
 * malloc: this runs in forked children of threaded programs too).
 */
#define ENV_SMALL 256
#define PRE_SMALL 512

struct env_room {
	char **env;
	size_t cap;
	char *pre;
	size_t prelen;
	void *map;
	size_t maplen;
};

static void env_room_get(struct env_room *r, char *const *envp,
			 char **small, char *spre)
{
	size_t n = 0, pl = 0;

	r->env = small;
	r->cap = ENV_SMALL;
	r->pre = spre;
	r->prelen = PRE_SMALL;
	r->map = NULL;
	if (!bt_conf.follow || !bt_conf.enabled || !bt_conf.lib_path[0])
		return;                 /* fix_env passes ENVP through */
	if (envp)
		for (; envp[n]; n++)
			if (has_prefix(envp[n], "LD_PRELOAD="))
				pl = strlen(envp[n]);
	n += nkeep + 3;
	pl += strlen(bt_conf.lib_path) + 2;
	if (n <= ENV_SMALL && pl <= PRE_SMALL)
		return;
	r->maplen = n * sizeof(char *) + pl;
	r->map = mmap(NULL, r->maplen, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->map == MAP_FAILED) {
		r->map = NULL;      /* fix_env passes an environment too large */
		return;
	}
	r->env = r->map;
	r->cap = n;
	r->pre = (char *)r->map + n * sizeof(char *);
	r->prelen = pl;
}

static void env_room_put(struct env_room *r)
{
	int e = errno;

	if (r->map)
		munmap(r->map, r->maplen);
	r->map = NULL;
	errno = e;
}

static void log_exec(const char *path, int failed, int err)
{
	struct bt_event ev;

	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_EXEC;
	ev.flags = failed ? 1 : 0;
	ev.result = failed ? -err : 0;
	ev.str = path;
	ev.str_len = path ? (uint32_t)strnlen(path, BT_EV_MAX_STR) : 0;
	bt_emit(&ev);
}

enum exec_kind { EK_VE, EK_VPE, EK_FVE };

static int exec_common(int kind, const char *path, int fd, char *const argv[],
		       char *const envp[])
{
	char *small[ENV_SMALL], spre[PRE_SMALL];
	struct env_room room;
	char *const *env;
	int r, e, traced = bt_enter();

	if (traced && !bt_paused()) {
		log_exec(path ? path : "(fd)", 0, 0);
		bt_emit_flush(0);
	}
	/* ":L": the new image may start without waiting for bp-logd
	 * (docs/logd.md, "Forked children") */
	snprintf(exec_mark, sizeof exec_mark, "BTRACE_EXECED=%ld%s",
		 (long)getpid(),
		 traced && !bt_paused() && bt_link_exec_lazy_ok() ? ":L" : "");
	env_room_get(&room, envp, small, spre);
	env = fix_env(envp, room.env, room.cap, room.pre, room.prelen);
	switch (kind) {
	case EK_VE:
		r = REAL(execve)(path, argv, env);
		break;
	case EK_VPE:
		r = REAL(execvpe)(path, argv, env);
		break;
	default:
		r = REAL(fexecve)(fd, argv, env);
		break;
	}
	e = errno;
	env_room_put(&room);
	if (traced && !bt_paused())
		log_exec(path ? path : "(fd)", 1, e);
	if (traced)
		bt_leave();
	else
		bt_leave_pass();
	errno = e;
	return r;
}

int bt_execve(const char *p, char *const a[], char *const e[])
{
	return exec_common(EK_VE, p, -1, a, e);
}

int bt_execvpe(const char *p, char *const a[], char *const e[])
{
	return exec_common(EK_VPE, p, -1, a, e);
}

int bt_fexecve(int fd, char *const a[], char *const e[])
{
	return exec_common(EK_FVE, NULL, fd, a, e);
}

char **bt_environ(void)
{
	return environ;
}

/* ---- posix_spawn ----------------------------------------------------------- */

int bt_posix_spawn(pid_t *pid, const char *path,
		   const posix_spawn_file_actions_t *fa,
		   const posix_spawnattr_t *at, char *const argv[],
		   char *const envp[], int usepath)
{
	char *small[ENV_SMALL], spre[PRE_SMALL];
	struct env_room room;
	char *const *env;
	pid_t child = 0;
	int r, traced = bt_enter();

	env_room_get(&room, envp, small, spre);
	env = fix_env(envp, room.env, room.cap, room.pre, room.prelen);
	uint64_t t0 = bt_now();   /* the child exists only after this */
	r = usepath ? REAL(posix_spawnp)(&child, path, fa, at, argv, env)
		    : REAL(posix_spawn)(&child, path, fa, at, argv, env);
	env_room_put(&room);
	if (pid && r == 0)
		*pid = child;
	if (traced && !bt_paused()) {
		struct bt_event ev;
		memset(&ev, 0, sizeof ev);
		ev.type = BT_EV_SPAWN;
		ev.ts = t0;
		ev.result = r == 0 ? child : -r;
		ev.str = path;
		ev.str_len = path ? (uint32_t)strnlen(path, BT_EV_MAX_STR) : 0;
		bt_emit(&ev);
	}
	if (traced)
		bt_leave();
	else
		bt_leave_pass();
	return r;
}

/* ---- threads ------------------------------------------------------------- */

struct tramp {
	void *(*fn)(void *);
	void *arg;
	uint64_t cookie;
	int creator;
};

static void *tramp_start(void *p)
{
	struct tramp t = *(struct tramp *)p;

	free(p);
	self_cookie = t.cookie;
	self_creator = t.creator;
	bt_self.tid = 0;
	/* THREAD_START now: the thread begins in its creator's request */
	bt_emit_claim();
	return t.fn(t.arg);
}

int bt_pthread_create(pthread_t *th, const pthread_attr_t *attr,
		      void *(*fn)(void *), void *arg)
{
	static uint32_t counter;
	struct tramp *t;
	struct bt_event ev;
	int r;

	if (!bt_conf.enabled || bt_paused() || !(t = malloc(sizeof *t)))
		return REAL(pthread_create)(th, attr, fn, arg);
	t->fn = fn;
	t->arg = arg;
	t->cookie = ((uint64_t)(uint32_t)bt_proc.pid << 32) |
		    __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
	t->creator = bt_proc_gettid();
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_THREAD_CREATE;
	ev.cookie = t->cookie;
	if (bt_enter())
		bt_emit(&ev);
	bt_leave_pass();
	r = REAL(pthread_create)(th, attr, tramp_start, t);
	if (r != 0) {
		free(t);
		ev.result = -r;
		ev.ts = 0;
		if (bt_enter())
			bt_emit(&ev);
		bt_leave_pass();
	}
	return r;
}
