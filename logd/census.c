/*
 * census.c - naming the programs that do their network I/O past libc.
 *
 * A program that makes its system calls itself (a Go binary, even one
 * linked dynamically through cgo; anything driving io_uring from the
 * start) never calls the shim's wrappers: it is traced to nothing.  The
 * shim cannot say so, since it never gets control again, so bp-logd does:
 * once a second it looks at /proc/PID/fd of each tracer whose shim has
 * counted no socket call at all (btrace/ring.h, census_socks), and names
 * the program when the same socket, made after the shim started and of a
 * kind that carries requests, is there in two consecutive looks
 * (docs/logd.md, "Programs that cannot be traced").
 *
 * What is never counted against a program:
 *  - sockets it held when it said HELLO (the constructor still waits for
 *    the WELCOME then, before main): inherited at exec (a listening socket
 *    passed by a master or by systemd, a CGI's socket on stdin), the
 *    parent's in a forked child, the shim's own connection to bp-logd;
 *  - unix sockets other than listening stream ones (NSS daemons, syslog,
 *    the journal, D-Bus: libraries connect to them inside libc);
 *  - UDP and TCP sockets whose remote port is 53 (glibc's resolver);
 *  - anything once the shim has counted a socket call: the program then
 *    goes through libc for some of its sockets and is traced there.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "logd.h"

#define CENSUS_BASE_MAX 256u    /* sockets held at HELLO we remember */
#define CENSUS_HELLO_FD 256u    /* descriptors we look at at HELLO (the
				   tracer waits: a forked child of a busy
				   server must not wait long) */
#define CENSUS_FD_MAX   16384u  /* descriptors we look at per process */
#define CENSUS_CAND_MAX 64u     /* new sockets we classify per look */
#define CENSUS_LINES    200000u /* lines read of each /proc/PID/net file */
#define CENSUS_PER_TICK 64u     /* processes looked at per second */

struct census {
	int       off;              /* never name this one (said why in -vv) */
	int       named;
	int       given;            /* BASE came with the HELLO (census_given) */
	unsigned  nbase;
	uint64_t *base;             /* sorted socket inodes at HELLO */
	unsigned  nprev;
	uint64_t  prev[CENSUS_CAND_MAX]; /* qualifying inodes, last look */
};

/* One socket found: its inode and, once classified, what it is. */
struct sock {
	uint64_t ino;
	int      kind;              /* 0 not classified / does not count */
	char     what[160];         /* "tcp 127.0.0.1:8080 listening" */
};

enum { K_NONE, K_TCP_LISTEN, K_TCP, K_UDP, K_UNIX_LISTEN };

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* One entry of getdents64 (the kernel's struct linux_dirent64). */
struct dent64 {
	uint64_t d_ino;
	int64_t  d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char     d_name[];
};

#define DENTS_BUF   4096u                /* ~150 descriptors a call */
#define DENT_MAX    (sizeof(struct dent64) + 256u)  /* the largest entry */

/*
 * The socket inodes of /proc/PID/fd: up to MAX into OUT (may be NULL to
 * count).  Returns how many, or -errno (the process is gone or not ours
 * to look at), -E2BIG when it holds more than FDMAX descriptors.
 *
 * The directory is read with getdents64 into a buffer on the stack
 * (opendir would add an fstat and a 32 KiB allocation a look), and a
 * call that left room for the largest entry was the last one: the
 * kernel stops filling the buffer only at the end of the listing or when
 * the next entry does not fit, so the call that would return 0 is not
 * made (two system calls fewer than readdir, per look).
 */
static long socket_inodes(pid_t pid, uint64_t *out, unsigned max,
			  unsigned fdmax)
{
	char path[64], link[64];
	char buf[DENTS_BUF] __attribute__((aligned(8)));
	unsigned fds = 0;
	long n = 0, got;
	int dfd;

	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	do {
		got = syscall(SYS_getdents64, dfd, buf, sizeof buf);
		if (got < 0) {
			n = -errno;
			break;
		}
		for (long off = 0; off < got;) {
			struct dent64 *d = (struct dent64 *)(void *)(buf + off);
			ssize_t l;
			uint64_t ino;

			off += d->d_reclen;
			if (d->d_name[0] == '.')
				continue;
			if (++fds > fdmax) {
				close(dfd);
				return -E2BIG;
			}
			l = readlinkat(dfd, d->d_name, link, sizeof link - 1);
			if (l <= 0)
				continue;
			link[l] = 0;
			if (strncmp(link, "socket:[", 8) ||
			    sscanf(link + 8, "%" SCNu64, &ino) != 1)
				continue;
			if (out && (unsigned long)n < max)
				out[n] = ino;
			n++;
		}
	} while (got > 0 && (size_t)got + DENT_MAX > sizeof buf);
	close(dfd);
	return n;
}

static struct census *census_of(struct peer *p)
{
	if (!p->census)
		p->census = calloc(1, sizeof *p->census);
	return p->census;
}

/*
 * Can P ever be named?  Not once its shim has counted a socket call
 * (census_socks, monotonic) or when it is an older shim without a count:
 * census_look sets such a peer off at its first look.  A forked child of
 * a server inherits its parent's count, so the sockets it holds need not
 * be listed (readlink of each of /proc/PID/fd, the larger part of what a
 * HELLO costs bp-logd).  Unknown while chunk 0 is not mapped: 1.
 */
static int census_may_name(struct peer *p)
{
	uint32_t socks;

	if (!p->chunk[0])
		return 1;
	return chunk_census(p->chunk[0], &socks) == 0 && !socks;
}

int census_given(struct peer *p, const uint64_t *ino, unsigned n)
{
	struct census *c = census_of(p);

	if (!c)
		return -ENOMEM;
	free(c->base);
	c->base = malloc((size_t)(n ? n : 1) * sizeof *ino);
	c->nbase = 0;
	c->given = 0;
	if (!c->base)
		return -ENOMEM;
	memcpy(c->base, ino, (size_t)n * sizeof *ino);
	qsort(c->base, n, sizeof *ino, cmp_u64);
	c->nbase = n;
	c->given = 1;
	return 0;
}

void census_hello(struct peer *p)
{
	struct census *c = census_of(p);
	uint64_t *ino;
	long n;

	if (!c)
		return;
	c->nprev = 0;
	if (c->given) {
		/* the tracer listed what it held before it connected, and
		 * its program ran on (BT_LM_CENSUS): that is the look at
		 * HELLO, whenever we read it */
		c->given = 0;
		c->off = p->cred_pid <= 0 || !census_may_name(p);
		log_debug("census: pid %u: %u sockets held at HELLO, as its shim listed them%s",
			  p->pid, c->nbase,
			  c->off ? "; not looked at: its shim counts socket calls already" : "");
		return;
	}
	free(c->base);
	c->base = NULL;
	c->nbase = 0;
	if (p->cred_pid <= 0) {
		c->off = 1;
		return;
	}
	if (!census_may_name(p)) {
		log_debug("census: pid %u not looked at: its shim counts socket calls already",
			  p->pid);
		c->off = 1;
		return;
	}
	ino = malloc(CENSUS_BASE_MAX * sizeof *ino);
	n = ino ? socket_inodes(p->cred_pid, ino, CENSUS_BASE_MAX,
				CENSUS_HELLO_FD) : -ENOMEM;
	if (n < 0 || n > (long)CENSUS_BASE_MAX) {
		/* what it held cannot be known: never name it */
		log_debug("census: pid %u not looked at: %s", p->pid,
			  n < 0 ? strerror((int)-n) : "too many sockets");
		free(ino);
		c->off = 1;
		return;
	}
	qsort(ino, (size_t)n, sizeof *ino, cmp_u64);
	/* keep only what it holds (most hold a few sockets, if any) */
	c->base = realloc(ino, (size_t)(n ? n : 1) * sizeof *ino);
	if (!c->base)
		c->base = ino;
	c->nbase = (unsigned)n;
	c->off = 0;
}

void census_free(struct peer *p)
{
	if (p->census)
		free(p->census->base);
	free(p->census);
	p->census = NULL;
}

static int in_sorted(const uint64_t *a, unsigned n, uint64_t v)
{
	return n && bsearch(&v, a, n, sizeof *a, cmp_u64) != NULL;
}

/* "0100007F:1F90" (IPv4) or 32 hex digits (IPv6) as an address:port. */
static void fmt_addr(const char *hex, char *out, size_t len, unsigned *port)
{
	const char *colon = strchr(hex, ':');
	size_t hl = colon ? (size_t)(colon - hex) : 0;
	unsigned w[4] = { 0 };

	*port = colon ? (unsigned)strtoul(colon + 1, NULL, 16) : 0;
	if (hl == 8 && sscanf(hex, "%8x", &w[0]) == 1) {
		snprintf(out, len, "%u.%u.%u.%u:%u", w[0] & 0xff,
			 (w[0] >> 8) & 0xff, (w[0] >> 16) & 0xff, w[0] >> 24,
			 *port);
	} else if (hl == 32 && sscanf(hex, "%8x%8x%8x%8x", &w[0], &w[1],
				      &w[2], &w[3]) == 4) {
		/* four host-order words of network-order bytes; ::ffff:a.b.c.d
		 * and ::1 are the ones met on loopback */
		if (!w[0] && !w[1] && w[2] == 0xffff0000u)
			snprintf(out, len, "%u.%u.%u.%u:%u", w[3] & 0xff,
				 (w[3] >> 8) & 0xff, (w[3] >> 16) & 0xff,
				 w[3] >> 24, *port);
		else if (!w[0] && !w[1] && !w[2] && w[3] == 0x01000000u)
			snprintf(out, len, "[::1]:%u", *port);
		else if (!w[0] && !w[1] && !w[2] && !w[3])
			snprintf(out, len, "[::]:%u", *port);
		else
			snprintf(out, len, "[%08x%08x%08x%08x]:%u", w[0], w[1],
				 w[2], w[3], *port);
	} else {
		snprintf(out, len, "?:%u", *port);
	}
}

static struct sock *find_sock(struct sock *s, unsigned n, uint64_t ino)
{
	for (unsigned i = 0; i < n; i++)
		if (s[i].ino == ino && !s[i].kind)
			return &s[i];
	return NULL;
}

/* Classify the sockets of S found in /proc/PID/net/NAME (tcp, tcp6, udp,
 * udp6).  Bounded by CENSUS_LINES. */
static void scan_inet(pid_t pid, const char *name, int udp, struct sock *s,
		      unsigned n)
{
	char path[64], line[512];
	unsigned lines = 0;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/net/%s", (int)pid, name);
	if (!(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof line, f) && ++lines < CENSUS_LINES) {
		char loc[64], rem[64], la[48], ra[48];
		unsigned st, lport, rport;
		uint64_t ino;
		struct sock *k;

		if (sscanf(line, " %*u: %63s %63s %x %*s %*s %*s %*u %*u %" SCNu64,
			   loc, rem, &st, &ino) != 4)
			continue;
		if (!(k = find_sock(s, n, ino)))
			continue;
		fmt_addr(loc, la, sizeof la, &lport);
		fmt_addr(rem, ra, sizeof ra, &rport);
		if (rport == 53)
			continue;                /* the resolver's */
		if (udp) {
			if (!lport)
				continue;
			k->kind = K_UDP;
			if (rport)
				snprintf(k->what, sizeof k->what, "udp %s->%s", la, ra);
			else
				snprintf(k->what, sizeof k->what, "udp %s", la);
		} else if (st == 0x0a) {
			k->kind = K_TCP_LISTEN;
			snprintf(k->what, sizeof k->what, "tcp %s listening", la);
		} else if (st == 0x01 || st == 0x02 || st == 0x03 ||
			   st == 0x08 || st == 0x07) {
			/* established, connecting, closing: a connection */
			k->kind = K_TCP;
			snprintf(k->what, sizeof k->what, "tcp %s->%s", la, ra);
		}
	}
	fclose(f);
}

/* Classify listening unix stream/seqpacket sockets of S. */
static void scan_unix(pid_t pid, struct sock *s, unsigned n)
{
	char path[64], line[512];
	unsigned lines = 0;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/net/unix", (int)pid);
	if (!(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof line, f) && ++lines < CENSUS_LINES) {
		unsigned flags, type, st;
		uint64_t ino;
		char name[256] = "";
		struct sock *k;

		if (sscanf(line, "%*s %*x %*x %x %x %x %" SCNu64 " %255s",
			   &flags, &type, &st, &ino, name) < 4)
			continue;
		if (!(k = find_sock(s, n, ino)))
			continue;
		/* __SO_ACCEPTCON: listening; type 1 stream, 5 seqpacket */
		if ((flags & 0x10000u) && (type == 1 || type == 5)) {
			k->kind = K_UNIX_LISTEN;
			snprintf(k->what, sizeof k->what, "unix %s listening",
				 name[0] ? name : "(unnamed)");
		}
	}
	fclose(f);
}

static void read_comm(pid_t pid, char *out, size_t len)
{
	char path[64];
	ssize_t r;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	out[0] = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	r = read(fd, out, len - 1);
	close(fd);
	out[r > 0 ? r : 0] = 0;
	for (char *c = out; *c; c++)
		if (*c == '\n' || (unsigned char)*c < 0x20 || *c == 0x7f)
			*c = *c == '\n' ? 0 : '?';
}

/*
 * bp-run's note file (BTRACE_UNREAD in the environment the process was
 * started with): one 'r' per program named, so that bp-run's line at exit
 * can say it.  Only a regular file of the peer's uid named like the ones
 * bp-run makes, never through a symbolic link.
 */
static void note_for_bp_run(struct peer *p)
{
	char path[64], env[16384];
	ssize_t r;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/environ", (int)p->cred_pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	r = read(fd, env, sizeof env - 1);
	close(fd);
	if (r <= 0)
		return;
	env[r] = 0;
	for (char *e = env; e < env + r; e += strlen(e) + 1) {
		const char *v, *base;
		struct stat st;

		if (strncmp(e, "BTRACE_UNREAD=", 14))
			continue;
		v = e + 14;
		base = strrchr(v, '/');
		if (v[0] != '/' || !base || strncmp(base + 1, "bp-run-unread.", 14))
			return;
		fd = open(v, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK |
			  O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			return;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_uid == p->cred_uid)
			(void)!write(fd, "r", 1);
		close(fd);
		return;
	}
}

/* Name P: a note in bp-logd's stream, a line with -v, bp-run's note. */
static void name_it(struct server *srv, struct peer *p, struct sock *s,
		    unsigned n)
{
	char comm[64], list[600];
	unsigned k[5] = { 0 }, shown = 0;
	size_t o = 0;

	read_comm(p->cred_pid, comm, sizeof comm);
	list[0] = 0;
	for (unsigned i = 0; i < n; i++) {
		if (!s[i].kind)
			continue;
		k[s[i].kind]++;
		if (shown < 4 && o < sizeof list) {
			o += (size_t)snprintf(list + o, sizeof list - o, "%s%s",
					      shown ? ", " : "", s[i].what);
			shown++;
		}
	}
	unsigned total = k[K_TCP_LISTEN] + k[K_TCP] + k[K_UDP] + k[K_UNIX_LISTEN];
	log_info("pid %u (%s, %s) holds %u socket%s the tracer never saw (network I/O past libc: not traced): %s",
		 p->pid, p->exe, comm, total, total == 1 ? "" : "s", list);
	notes_add(&srv->notes, BT_LN_RAW_IO, p->pid, (int64_t)total,
		  "ring=%016llx exe=%s comm=%s tcp_listen=%u tcp=%u udp=%u unix_listen=%u: %s",
		  (unsigned long long)p->ring_id, p->exe, comm, k[K_TCP_LISTEN],
		  k[K_TCP], k[K_UDP], k[K_UNIX_LISTEN], list);
	note_for_bp_run(p);
}

/* One look at P.  Returns 1 when it cost a /proc scan. */
static int look(struct server *srv, struct peer *p)
{
	struct census *c = p->census;
	uint64_t ino[CENSUS_CAND_MAX * 2];
	struct sock s[CENSUS_CAND_MAX];
	unsigned n = 0, nq = 0, again = 0;
	uint32_t socks;
	long got;

	if (!c || c->off || c->named || !p->chunk[0])
		return 0;
	if (chunk_census(p->chunk[0], &socks) < 0 || socks) {
		/* an older shim, or one that saw a socket call: never named
		 * (the count never goes back to 0 in this process image) */
		c->off = 1;
		free(c->base);
		c->base = NULL;
		c->nbase = 0;
		return 0;
	}
	got = socket_inodes(p->cred_pid, ino, CENSUS_CAND_MAX * 2,
			    CENSUS_FD_MAX);
	if (got < 0) {
		c->nprev = 0;
		return 1;
	}
	if (got > (long)(CENSUS_CAND_MAX * 2))
		got = CENSUS_CAND_MAX * 2;
	for (long i = 0; i < got && n < CENSUS_CAND_MAX; i++)
		if (!in_sorted(c->base, c->nbase, ino[i])) {
			s[n].ino = ino[i];
			s[n].kind = K_NONE;
			s[n].what[0] = 0;
			n++;
		}
	if (!n) {
		c->nprev = 0;
		return 1;
	}
	scan_inet(p->cred_pid, "tcp", 0, s, n);
	scan_inet(p->cred_pid, "tcp6", 0, s, n);
	scan_inet(p->cred_pid, "udp", 1, s, n);
	scan_inet(p->cred_pid, "udp6", 1, s, n);
	scan_unix(p->cred_pid, s, n);
	for (unsigned i = 0; i < n; i++) {
		if (!s[i].kind)
			continue;
		for (unsigned j = 0; j < c->nprev; j++)
			if (c->prev[j] == s[i].ino) {
				again++;
				break;
			}
	}
	/* the count again, after the look: a socket call between the two
	 * reads of /proc means the program was going through libc */
	if (again && chunk_census(p->chunk[0], &socks) == 0 && !socks) {
		c->named = 1;
		name_it(srv, p, s, n);
		return 1;
	}
	for (unsigned i = 0; i < n; i++)
		if (s[i].kind)
			c->prev[nq++] = s[i].ino;
	c->nprev = nq;
	return 1;
}

/* Still to be looked at: live, its census on, not named yet. */
static int wanted(const struct peer *p)
{
	return p->state == PEER_LIVE && p->census && !p->census->off &&
	       !p->census->named;
}

void census_tick(struct server *srv)
{
	static unsigned start;   /* where the last tick stopped, round robin */
	unsigned n = 0, k = 0, looked = 0;
	struct peer *p;

	TAILQ_FOREACH(p, &srv->peers, entry)
		n += (unsigned)wanted(p);
	if (!n)
		return;
	if (start >= n)
		start = 0;
	/* from the START-th wanted peer to the end, then from the first:
	 * CENSUS_PER_TICK /proc looks a second, every peer in its turn */
	for (int pass = 0; pass < 2 && looked < CENSUS_PER_TICK; pass++) {
		k = 0;
		TAILQ_FOREACH(p, &srv->peers, entry) {
			if (!wanted(p))
				continue;
			if (pass == 0 ? k++ < start : k++ >= start)
				continue;
			looked += (unsigned)look(srv, p);
			if (looked >= CENSUS_PER_TICK) {
				start = k;
				return;
			}
		}
	}
	start = 0;
}
