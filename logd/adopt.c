/*
 * adopt.c - the rings a bp-logd killed on this socket left behind
 * (docs/logd.md, "Crashes").
 *
 * A tracer learns that its bp-logd is gone only when it next talks to it
 * (a KICK, or its next event): until then what it published before
 * bp-logd died waits in its ring.  An idle tracer (a php-fpm child
 * between requests) may wait minutes, and the live view
 * (bp-reconstruct --follow) waits with it.  So when bp-logd starts it
 * looks through /proc for memfds named "btrace-ring" whose header
 * carries its key (every bp-logd writes the key of its socket into the
 * chunks it maps), maps them again through /proc/PID/fd, and makes each
 * process a closing peer: the drain passes empty its rings and free it,
 * or the tracer reconnects first and its chunks are handed over
 * (peer.c, on_chunk).
 *
 * The tracer is not connected, so it may also drain a slot itself (its
 * spool, when it finds no bp-logd).  A copy counts only if the slot's
 * shared tail did not move while it was made, and the tail is advanced
 * by compare-and-swap (chunk.c); a slot the tracer drained is left to it
 * (nothing is lost: the bytes are in its spool).
 *
 * Only processes bp-logd would accept as peers are looked at (its uid,
 * -u, -g), and only chunks whose header names that process.  The look
 * goes a few processes per turn of the event loop, between looks at the
 * sockets: a tracer that reconnects first is served as ever, and its
 * ring is then not adopted.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "logd.h"

struct adopt_scan {
	DIR          *dir;           /* /proc, read a turn at a time */
	struct event *ev;
	uint64_t      t0;
	unsigned      procs, adopted;
};

#define RING_LINK "/memfd:btrace-ring"

uint64_t adopt_key(const char *path)
{
	char real[PATH_MAX];
	const char *s = realpath(path, real) ? real : path;
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h ? h : 1;
}

/* The ids of /proc/PID/status line TAG ("Uid:", "Gid:": real, effective,
 * ...; "Groups:": the supplementary ones) into IDS; their count. */
static unsigned status_ids(const char *status, const char *tag,
			   unsigned long *ids, unsigned max)
{
	const char *p = strstr(status, tag);
	unsigned n = 0;

	if (!p)
		return 0;
	p += strlen(tag);
	while (n < max) {
		char *end;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9')
			break;
		ids[n++] = strtoul(p, &end, 10);
		p = end;
	}
	return n;
}

/* Would bp-logd accept PID as a peer (peer.c, uid_allowed: its effective
 * ids as SO_PEERCRED gives them)? */
static int process_allowed(const struct server *srv, pid_t pid)
{
	const struct logd_opts *o = srv->o;
	char path[64], status[4096];
	unsigned long uid[4], gid[4], groups[256];
	unsigned nu, ng, ngr;
	ssize_t len;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	len = read(fd, status, sizeof status - 1);
	close(fd);
	if (len <= 0)
		return 0;
	status[len] = 0;
	nu = status_ids(status, "\nUid:", uid, 4);
	ng = status_ids(status, "\nGid:", gid, 4);
	ngr = status_ids(status, "\nGroups:", groups, 256);
	if (nu < 2 || ng < 2)
		return 0;
	if (uid[1] == (unsigned long)geteuid())
		return 1;
	for (unsigned i = 0; i < o->n_allow_uid; i++)
		if ((unsigned long)o->allow_uid[i] == uid[1])
			return 1;
	for (unsigned i = 0; i < o->n_allow_gid; i++) {
		if ((unsigned long)o->allow_gid[i] == gid[1])
			return 1;
		for (unsigned k = 0; k < ngr; k++)
			if ((unsigned long)o->allow_gid[i] == groups[k])
				return 1;
	}
	return 0;
}

static struct peer *orphan_new(struct server *srv, pid_t pid, uint64_t ring_id)
{
	struct peer *p = calloc(1, sizeof *p);
	char path[64];
	ssize_t n;
	int fd;

	if (!p)
		return NULL;
	p->srv = srv;
	p->id = ++srv->next_id;
	p->fd = -1;
	p->state = PEER_NEW;
	p->pid = (uint32_t)pid;
	p->cred_pid = pid;
	p->ring_id = ring_id;
	p->adopted = 1;
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, p->exe, sizeof p->exe - 1);
		close(fd);
		if (n > 0 && p->exe[n - 1] == '\n')
			n--;
		p->exe[n > 0 ? n : 0] = 0;
	}
	for (char *c = p->exe; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	TAILQ_INSERT_TAIL(&srv->peers, p, entry);
	srv->npeers++;
	peer_set_state(p, PEER_CLOSING);
	return p;
}

static int ring_served(struct server *srv, uint64_t ring_id)
{
	struct peer *q;

	TAILQ_FOREACH(q, &srv->peers, entry)
		if (q->ring_id == ring_id)
			return 1;
	return 0;
}

/* The memfd FD found at /proc/PID/fd: map it into *P (made on the first
 * chunk) if its header is a chunk of PID's carrying our key. */
static void adopt_chunk(struct server *srv, pid_t pid, int fd,
			struct peer **pp)
{
	struct bt_chunk_hdr h;
	struct bt_lm_chunk m;
	struct chunk *c;
	char why[256];

	if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h ||
	    h.magic != BT_RING_MAGIC || h.version != BT_RING_VERSION ||
	    h.pid != (uint32_t)pid || h.logd_key != srv->key ||
	    h.ring_id == 0 || h.chunk >= BT_RING_MAX_CHUNKS)
		return;
	/* one image, one ring; the same memfd twice (a dup) once */
	if (*pp && ((*pp)->ring_id != h.ring_id || (*pp)->chunk[h.chunk]))
		return;
	/* its tracer reconnected before the look reached it: it is served */
	if (!*pp && ring_served(srv, h.ring_id))
		return;
	memset(&m, 0, sizeof m);
	m.chunk = h.chunk;
	m.nslots = h.nslots;
	m.slot_size = h.slot_size;
	m.map_size = BT_RING_PAGE + (uint64_t)h.nslots * h.slot_size;
	if (chunk_map(fd, &m, h.ring_id, (uint32_t)pid, &c, why,
		      sizeof why) < 0) {
		log_debug("pid %d: not adopting a chunk: %s", (int)pid, why);
		return;
	}
	c->adopted = 1;
	if (!*pp && !(*pp = orphan_new(srv, pid, h.ring_id))) {
		chunk_unmap(c);
		return;
	}
	(*pp)->chunk[h.chunk] = c;
	(*pp)->nchunks++;
}

/* Adopt PID's chunks, if it has any of ours.  Returns 1 if it had. */
static int adopt_process(struct server *srv, pid_t pid)
{
	char path[64], link[sizeof RING_LINK + 16];
	struct peer *p = NULL;
	struct dirent *e;
	int allowed = -1;
	int dfd;
	DIR *d;

	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	if ((dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return 0;
	if (!(d = fdopendir(dfd))) {
		close(dfd);
		return 0;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		ssize_t n = readlinkat(dfd, e->d_name, link, sizeof link - 1);
		if (n < (ssize_t)strlen(RING_LINK))
			continue;
		link[n] = 0;
		if (strncmp(link, RING_LINK, strlen(RING_LINK)) != 0)
			continue;
		if (allowed < 0)
			allowed = process_allowed(srv, pid);
		if (!allowed)
			break;
		/* opening the link opens the memfd itself */
		int fd = openat(dfd, e->d_name, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		adopt_chunk(srv, pid, fd, &p);
		close(fd);
	}
	closedir(d);
	if (!p)
		return 0;
	log_info("adopting ring %llx of pid %u (%s), %u chunk%s: left by the bp-logd before on this socket",
		 (unsigned long long)p->ring_id, p->pid, p->exe, p->nchunks,
		 p->nchunks == 1 ? "" : "s");
	notes_add(&srv->notes, BT_LN_PEER_UP, p->pid, 0,
		  "ring=%016llx exe=%s adopted", (unsigned long long)p->ring_id,
		  p->exe);
	return 1;
}

/* Processes looked at per turn of the event loop: a host with many
 * descriptors takes a while (3.5 us a descriptor here: 140 ms for 40,000),
 * and tracers reconnecting meanwhile must not wait for their WELCOME. */
#define ADOPT_TURN 32

/* The next turn, after the loop has looked at the sockets (a timer that
 * is due at once: an event made active again from its own callback would
 * run before them). */
static void adopt_next(struct adopt_scan *a)
{
	static const struct timeval now = { 0, 0 };

	evtimer_add(a->ev, &now);
}

static void adopt_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	struct adopt_scan *a = srv->adopt;
	pid_t self = getpid();
	struct dirent *e;
	unsigned k = 0;

	(void)fd;
	(void)what;
	while (k < ADOPT_TURN && (e = readdir(a->dir)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid == (long)self)
			continue;
		a->adopted += (unsigned)adopt_process(srv, (pid_t)pid);
		a->procs++;
		k++;
	}
	if (k == ADOPT_TURN) {
		adopt_next(a);
		return;
	}
	log_info("looked for rings left on this socket: %u processes in %.1f ms",
		 a->procs, (double)(logd_now_mono() - a->t0) / 1e6);
	if (a->adopted)
		log_warn("adopted the rings of %u tracer%s that the bp-logd before on this socket left; draining them",
			 a->adopted, a->adopted == 1 ? "" : "s");
	adopt_stop(srv);
}

void adopt_start(struct server *srv)
{
	struct adopt_scan *a = calloc(1, sizeof *a);

	if (!a || !(a->dir = opendir("/proc")) ||
	    !(a->ev = evtimer_new(srv->base, adopt_cb, srv))) {
		log_warn("cannot look through /proc (%s): the rings a bp-logd before left on this socket wait for their tracers' next event",
			 a ? strerror(errno ? errno : ENOMEM) : "out of memory");
		if (a && a->dir)
			closedir(a->dir);
		free(a);
		return;
	}
	a->t0 = logd_now_mono();
	srv->adopt = a;
	adopt_next(a);
}

void adopt_stop(struct server *srv)
{
	struct adopt_scan *a = srv->adopt;

	if (!a)
		return;
	event_free(a->ev);
	closedir(a->dir);
	free(a);
	srv->adopt = NULL;
}
