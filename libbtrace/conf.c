/*
 * conf.c - libbtrace configuration: BTRACE_* environment variables and the
 * protocol selection rules (DESIGN section 9, docs/protocols.md).
 *
 *   # protocol   what it matches
 *   http         port 80,8080-8090
 *   fastcgi      unix /run/php/(any).sock
 *   oneshot      exe ^/usr/lib/cgi-bin/
 *   none         port 22
 *
 * Rules come from BTRACE_RULES (';'-separated, wins), else the file named by
 * BTRACE_CONF; the built-in defaults (protocols/defaults.c) follow them.  A
 * port rule matches either end of a TCP/UDP channel, a unix rule the socket
 * path (fnmatch glob), an exe rule the executable (PCRE2 regex).  The first
 * matching port/unix rule chooses; exe rules apply to channels no address
 * rule chose (pipes, socketpairs, inherited descriptors first, then as the
 * fallback when sniffing finds nothing).  Protocol "none" means: do not
 * trace messages on this channel.  BTRACE_REDACT chooses what redact.c
 * takes out of the attributes.
 *
 * An exe pattern that is a plain string, optionally anchored with a
 * leading '^' (the default rule's "^/usr/lib/cgi-bin/", a benchmark's
 * "/cgi-bin/"), is matched with strncmp or strstr: the same answer PCRE2
 * gives for it.  Only a pattern with a regex metacharacter needs PCRE2,
 * and libpcre2-8 is loaded (dlopen) the first time one does: a traced
 * process whose rules have none never maps the library.
 */
#include "config.h"

#include <ctype.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dlfcn.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "bt.h"

struct bt_conf bt_conf = { .enabled = 0 };

extern const char bt_default_rules[];

static struct bt_rule *user_rules, *def_rules;
static unsigned n_user, n_def;

static int env_flag(const char *name, int dflt)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return dflt;
	if (!strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "off") ||
	    !strcasecmp(v, "false"))
		return 0;
	return 1;
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Parse "80,8080-8090" into R; 0 or -1. */
static int parse_ports(const char *p, struct bt_rule *r)
{
	r->nranges = 0;
	while (*p) {
		char *end;
		long lo = strtol(p, &end, 10), hi;
		if (end == p || lo < 0 || lo > 65535)
			return -1;
		hi = lo;
		p = end;
		if (*p == '-') {
			hi = strtol(p + 1, &end, 10);
			if (end == p + 1 || hi < lo || hi > 65535)
				return -1;
			p = end;
		}
		if (r->nranges >= 16)
			return -1;
		r->lo[r->nranges] = (uint16_t)lo;
		r->hi[r->nranges] = (uint16_t)hi;
		r->nranges++;
		p = skip_ws(p);
		if (*p == ',')
			p = skip_ws(p + 1);
		else if (*p)
			return -1;
	}
	return r->nranges ? 0 : -1;
}

/* ---- PCRE2, loaded on first use ------------------------------------------ */

#define PCRE2_SONAME "libpcre2-8.so.0"

static struct {
	int tried, ok;
	pcre2_code *(*compile)(PCRE2_SPTR, PCRE2_SIZE, uint32_t, int *,
			       PCRE2_SIZE *, pcre2_compile_context *);
	int (*match)(const pcre2_code *, PCRE2_SPTR, PCRE2_SIZE, PCRE2_SIZE,
		     uint32_t, pcre2_match_data *, pcre2_match_context *);
	pcre2_match_data *(*md_create)(const pcre2_code *, pcre2_general_context *);
	void (*md_free)(pcre2_match_data *);
} re_lib;

static pthread_mutex_t re_mu = PTHREAD_MUTEX_INITIALIZER;

/* Load libpcre2-8 once.  1 if its functions are there. */
static int re_load(void)
{
	void *h;

	pthread_mutex_lock(&re_mu);
	if (!re_lib.tried) {
		re_lib.tried = 1;
		h = REAL(dlopen)(PCRE2_SONAME, RTLD_NOW | RTLD_LOCAL);
		if (h) {
			re_lib.compile = (__typeof__(re_lib.compile))dlsym(h, "pcre2_compile_8");
			re_lib.match = (__typeof__(re_lib.match))dlsym(h, "pcre2_match_8");
			re_lib.md_create = (__typeof__(re_lib.md_create))
				dlsym(h, "pcre2_match_data_create_from_pattern_8");
			re_lib.md_free = (__typeof__(re_lib.md_free))
				dlsym(h, "pcre2_match_data_free_8");
			re_lib.ok = re_lib.compile && re_lib.match &&
				    re_lib.md_create && re_lib.md_free;
		}
		if (!re_lib.ok) {
			static const char msg[] =
				"libbtrace: cannot load " PCRE2_SONAME " for an exe rule's regex\n";
			(void)!REAL(write)(2, msg, sizeof msg - 1);
		}
	}
	pthread_mutex_unlock(&re_mu);
	return re_lib.ok;
}

/* Is PAT (past an optional leading '^') free of regex metacharacters? */
static int re_literal(const char *pat)
{
	if (*pat == '^')
		pat++;
	return !pat[strcspn(pat, "\\^$.[]|()?*+{}")];
}

/* Does exe rule R match the executable's path EXE? */
int bt_rule_exe_match(const struct bt_rule *r, const char *exe)
{
	pcre2_match_data *md;
	int rc;

	if (r->kind != BT_RK_EXE || !r->pattern)
		return 0;
	if (!r->re) {
		if (r->pattern[0] == '^')
			return !strncmp(exe, r->pattern + 1, strlen(r->pattern + 1));
		return strstr(exe, r->pattern) != NULL;
	}
	md = re_lib.md_create(r->re, NULL);
	if (!md)
		return 0;
	rc = re_lib.match(r->re, (PCRE2_SPTR)exe, strlen(exe), 0, 0, md, NULL);
	re_lib.md_free(md);
	return rc >= 0;
}

/* Parse one rule line (no comment, trimmed).  0 ok, 1 blank, -1 bad. */
static int parse_line(char *line, struct bt_rule *r)
{
	char *p = line, *proto, *kind, *arg;
	size_t n;

	memset(r, 0, sizeof *r);
	p = (char *)skip_ws(p);
	n = strlen(p);
	while (n && isspace((unsigned char)p[n - 1]))
		p[--n] = 0;
	if (!*p)
		return 1;
	proto = p;
	while (*p && !isspace((unsigned char)*p))
		p++;
	if (!*p)
		return -1;
	*p++ = 0;
	kind = (char *)skip_ws(p);
	p = kind;
	while (*p && !isspace((unsigned char)*p))
		p++;
	if (!*p)
		return -1;
	*p++ = 0;
	arg = (char *)skip_ws(p);
	if (!*arg)
		return -1;

	if (!strcmp(proto, "none")) {
		r->proto = BT_PROTO_NONE;
	} else {
		const struct bt_proto_ops *o = bt_proto_by_name(proto);
		if (!o)
			return -1;
		r->proto = o->id;
	}
	if (!strcmp(kind, "port")) {
		r->kind = BT_RK_PORT;
		return parse_ports(arg, r);
	}
	if (!strcmp(kind, "unix")) {
		r->kind = BT_RK_UNIX;
		r->glob = strpbrk(arg, "*?[\\") != NULL;
		r->pattern = strdup(arg);
		return r->pattern ? 0 : -1;
	}
	if (!strcmp(kind, "exe")) {
		int err;
		PCRE2_SIZE off;
		r->kind = BT_RK_EXE;
		r->pattern = strdup(arg);
		if (!r->pattern)
			return -1;
		if (re_literal(arg))
			return 0;
		if (!re_load())
			return -1;
		r->re = re_lib.compile((PCRE2_SPTR)arg, PCRE2_ZERO_TERMINATED, 0,
				       &err, &off, NULL);
		return r->re ? 0 : -1;
	}
	return -1;
}

int bt_rules_parse(const char *text, int semicolons, struct bt_rule **out,
		   unsigned *n, int *errline)
{
	char *copy = strdup(text), *save = NULL, *line;
	const char *sep = semicolons ? ";\n" : "\n";
	unsigned cap = 0, cnt = 0;
	struct bt_rule *rules = NULL;
	int lineno = 0;

	if (!copy)
		return -ENOMEM;
	for (line = strtok_r(copy, sep, &save); line;
	     line = strtok_r(NULL, sep, &save)) {
		char *hash = strchr(line, '#');
		struct bt_rule r;
		int rc;

		lineno++;
		if (hash)
			*hash = 0;
		rc = parse_line(line, &r);
		if (rc == 1)
			continue;
		if (rc < 0) {
			free(r.pattern);
			free(copy);
			free(rules);
			if (errline)
				*errline = lineno;
			return -EINVAL;
		}
		if (cnt == cap) {
			struct bt_rule *nr;
			cap = cap ? cap * 2 : 8;
			nr = realloc(rules, cap * sizeof *rules);
			if (!nr) {
				free(copy);
				free(rules);
				return -ENOMEM;
			}
			rules = nr;
		}
		rules[cnt++] = r;
	}
	free(copy);
	*out = rules;
	*n = cnt;
	return (int)cnt;
}

static int port_in(const struct bt_rule *r, uint16_t port)
{
	for (unsigned i = 0; i < r->nranges; i++)
		if (port >= r->lo[i] && port <= r->hi[i])
			return 1;
	return 0;
}

static int match_in(const struct bt_rule *rules, unsigned n, uint16_t lport,
		    uint16_t rport, int has_ports, const char *unix_path)
{
	for (unsigned i = 0; i < n; i++) {
		const struct bt_rule *r = &rules[i];
		if (r->kind == BT_RK_PORT && has_ports &&
		    (port_in(r, lport) || port_in(r, rport)))
			return r->proto;
		/* a pattern without a special character matches only
		 * itself (fnmatch converts both to wide characters in a
		 * multibyte locale: some 1,700 instructions a channel) */
		if (r->kind == BT_RK_UNIX && unix_path && *unix_path &&
		    (r->glob ? fnmatch(r->pattern, unix_path, 0) == 0 :
		     strcmp(r->pattern, unix_path) == 0))
			return r->proto;
	}
	return -1;
}

int bt_rules_match(uint16_t lport, uint16_t rport, int has_ports,
		   const char *unix_path, int *how)
{
	int p = match_in(user_rules, n_user, lport, rport, has_ports, unix_path);
	if (p >= 0) {
		*how = BT_PH_RULE;
		return p;
	}
	p = match_in(def_rules, n_def, lport, rport, has_ports, unix_path);
	if (p >= 0) {
		*how = BT_PH_DEFAULT;
		return p;
	}
	*how = 0;
	return -1;
}

/* The first exe rule (user, then default) matching our executable. */
static unsigned exe_rule_proto(void)
{
	struct bt_rule *sets[2] = { user_rules, def_rules };
	unsigned ns[2] = { n_user, n_def };

	for (int s = 0; s < 2; s++)
		for (unsigned i = 0; i < ns[s]; i++) {
			struct bt_rule *r = &sets[s][i];
			if (bt_rule_exe_match(r, bt_proc.exe))
				return r->proto ? r->proto : 0;
		}
	return 0;
}

static void conf_warn(const char *what, int line)
{
	char buf[256];
	int n = snprintf(buf, sizeof buf,
			 "libbtrace: %s: bad rule at line %d (expected '<protocol> port|unix|exe <pattern>'); rules ignored\n",
			 what, line);
	if (n > 0)
		(void)!REAL(write)(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static char *read_file(const char *path)
{
	int fd = REAL(open)(path, O_RDONLY | O_CLOEXEC);
	char *buf;
	ssize_t n;
	size_t len = 0, cap = 4096;

	if (fd < 0)
		return NULL;
	buf = malloc(cap + 1);
	while (buf && (n = REAL(read)(fd, buf + len, cap - len)) > 0) {
		len += (size_t)n;
		if (len == cap) {
			char *nb = cap < (1u << 20) ? realloc(buf, cap * 2 + 1) : NULL;
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	REAL(close)(fd);
	if (buf)
		buf[len] = 0;
	return buf;
}

void bt_unread_note(char why)
{
	static unsigned notes;
	int e = errno, fd;

	if (!bt_conf.unread_path[0] ||
	    __atomic_add_fetch(&notes, 1, __ATOMIC_RELAXED) > 4096)
		return;
	fd = REAL(open)(bt_conf.unread_path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd >= 0) {
		(void)!REAL(write)(fd, &why, 1);
		REAL(close)(fd);
	}
	errno = e;
}

void bt_conf_init(void)
{
	const char *v;
	int line = 0;
	uid_t uid = getuid();

	bt_conf.enabled = !env_flag("BTRACE_DISABLE", 0);
	bt_conf.isolation = env_flag("BTRACE_ISOLATION", 1);
	bt_conf.epq = env_flag("BTRACE_EPOLL_QUEUE", 1);
	/* 0 off (the default: docs/logd.md "Forked children"), 1 forked
	 * children, 2 also exec'd images */
	bt_conf.child_lazy = env_flag("BTRACE_CHILD_LAZY", 0);
	if (bt_conf.child_lazy && (v = getenv("BTRACE_CHILD_LAZY")) &&
	    !strcmp(v, "2"))
		bt_conf.child_lazy = 2;
	bt_conf.follow = env_flag("BTRACE_FOLLOW", 1);

	bt_conf.slot_size = 128u << 10;
	if ((v = getenv("BTRACE_BUFSIZE")) && *v) {
		unsigned long kb = strtoul(v, NULL, 10);
		uint32_t sz = 64u << 10;
		while (sz < (kb << 10) && sz < (16u << 20))
			sz <<= 1;
		bt_conf.slot_size = sz;
	}

	if ((v = getenv("BTRACE_LOGD")) && *v)
		snprintf(bt_conf.logd_path, sizeof bt_conf.logd_path, "%s", v);
	else
		snprintf(bt_conf.logd_path, sizeof bt_conf.logd_path,
			 "/tmp/btrace-%u/logd.sock", (unsigned)uid);
	if ((v = getenv("BTRACE_SPOOL")) && *v)
		snprintf(bt_conf.spool_dir, sizeof bt_conf.spool_dir, "%s", v);
	else
		snprintf(bt_conf.spool_dir, sizeof bt_conf.spool_dir,
			 "/tmp/btrace-%u/spool", (unsigned)uid);

	if ((v = getenv("BTRACE_UNREAD")) && *v)
		snprintf(bt_conf.unread_path, sizeof bt_conf.unread_path, "%s", v);
	if ((v = getenv("BTRACE_RULES")) && *v) {
		if (bt_rules_parse(v, 1, &user_rules, &n_user, &line) < 0) {
			conf_warn("BTRACE_RULES", line);
			n_user = 0;
		}
	} else if ((v = getenv("BTRACE_CONF")) && *v) {
		char *text = read_file(v);
		if (!text) {
			char buf[PATH_MAX + 96];
			int n = snprintf(buf, sizeof buf,
					 "libbtrace: BTRACE_CONF=%s: cannot read (%s); using defaults\n",
					 v, strerror(errno));
			if (n > 0)
				(void)!REAL(write)(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
		} else {
			if (bt_rules_parse(text, 0, &user_rules, &n_user, &line) < 0) {
				conf_warn(v, line);
				n_user = 0;
			}
			free(text);
		}
	}
	char bad[64];
	if ((v = getenv("BTRACE_REDACT")) &&
	    bt_redact_parse(v, &bt_conf.redact, bad, sizeof bad) < 0) {
		char buf[256];
		int n = snprintf(buf, sizeof buf,
				 "libbtrace: BTRACE_REDACT: unknown '%s' (expected sql-literals, query-strings, cmdline, all or none); redacting all\n",
				 bad);
		if (n > 0)
			(void)!REAL(write)(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
	}
	if (bt_rules_parse(bt_default_rules, 0, &def_rules, &n_def, &line) < 0)
		n_def = 0;
	bt_conf.exe_proto = exe_rule_proto();
}
