/*
 * peer.c - one connection to bp-logd: a tracer (HELLO, CHUNK..., KICK...,
 * BYE) or a control client (CTL).  The protocol is in btrace/ring.h.
 *
 * A peer's life: PEER_NEW -> PEER_LIVE -> PEER_CLOSING -> freed, or
 * PEER_NEW -> PEER_CTL -> freed.  Every transition goes through
 * peer_set_state().  A peer that sends anything malformed is dropped with
 * one line on stderr naming its pid and the reason; the daemon carries on.
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "logd.h"

#define PEER_MAX_PACKETS 64    /* per read callback: fairness */
#define WELCOME_WAIT_US 1000   /* for chunk 0's CHUNK before the WELCOME */
#define PEER_PKT_MAX     2048  /* larger than any message */

const char *peer_state_name(enum peer_state st)
{
	switch (st) {
	case PEER_NEW: return "new";
	case PEER_LIVE: return "live";
	case PEER_CLOSING: return "closing";
	case PEER_CTL: return "control";
	}
	return "?";
}

void peer_set_state(struct peer *p, enum peer_state st)
{
	static const unsigned char ok[4][4] = {
		/* to:         NEW LIVE CLOSING CTL */
		[PEER_NEW]     = { 0, 1, 1, 1 },
		[PEER_LIVE]    = { 0, 0, 1, 0 },
		[PEER_CLOSING] = { 0, 0, 0, 0 },
		[PEER_CTL]     = { 0, 0, 0, 0 },
	};
	assert(ok[p->state][st]);
	log_debug("peer #%u pid %u: %s -> %s", p->id, p->pid,
		  peer_state_name(p->state), peer_state_name(st));
	p->state = st;
}

static void peer_read_cb(evutil_socket_t fd, short what, void *arg);
static int peer_read_some(struct peer *p, unsigned max, int stop);

void peer_accept(struct server *srv, int fd)
{
	struct peer *p = calloc(1, sizeof *p);
	struct ucred cr;
	socklen_t cl = sizeof cr;

	if (!p) {
		log_warn("out of memory: refusing a connection");
		close(fd);
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0) {
		log_warn("SO_PEERCRED: %s: refusing a connection",
			 strerror(errno));
		free(p);
		close(fd);
		return;
	}
	p->srv = srv;
	p->id = ++srv->next_id;
	p->fd = fd;
	p->state = PEER_NEW;
	p->cred_pid = cr.pid;
	p->cred_uid = cr.uid;
	p->cred_gid = cr.gid;
	p->pid = (uint32_t)cr.pid;
	p->ev = event_new(srv->base, fd, EV_READ | EV_PERSIST, peer_read_cb, p);
	if (!p->ev || event_add(p->ev, NULL) < 0) {
		log_warn("cannot watch a new connection: refusing it");
		if (p->ev)
			event_free(p->ev);
		free(p);
		close(fd);
		return;
	}
	TAILQ_INSERT_TAIL(&srv->peers, p, entry);
	srv->npeers++;
	log_debug("peer #%u: connection from pid %d uid %u", p->id,
		  (int)cr.pid, (unsigned)cr.uid);
	/* A tracer sends HELLO and its CHUNKs right after connecting: they
	 * are usually queued by now, and reading them in this pass saves
	 * the daemon a wake-up per traced process (EAGAIN if not). */
	peer_read_some(p, PEER_MAX_PACKETS, 1);
}

static void close_socket(struct peer *p)
{
	if (p->ev) {
		event_free(p->ev);
		p->ev = NULL;
	}
	if (p->fd >= 0) {
		close(p->fd);
		p->fd = -1;
	}
}

/* P's WELCOME is no longer owed (sent, or P is going): the timer that
 * waits for late chunks is stopped when no other peer is owed one, so
 * that it does not wake the loop for nothing. */
static void welcome_settled(struct peer *p)
{
	struct server *srv = p->srv;

	if (!p->welcome_due)
		return;
	p->welcome_due = 0;
	if (srv->welcomes_owed && --srv->welcomes_owed == 0 &&
	    srv->ev_welcome && evtimer_pending(srv->ev_welcome, NULL))
		evtimer_del(srv->ev_welcome);
}

void peer_free(struct peer *p)
{
	struct server *srv = p->srv;

	welcome_settled(p);
	close_socket(p);
	census_free(p);
	for (unsigned i = 0; i < BT_RING_MAX_CHUNKS; i++)
		chunk_unmap(p->chunk[i]);
	TAILQ_REMOVE(&srv->peers, p, entry);
	srv->npeers--;
	free(p);
}

/* Lost counters and undrained bytes of all P's chunks. */
static int peer_stats(struct peer *p, uint64_t *lost, uint64_t *pending)
{
	*lost = *pending = 0;
	for (unsigned i = 0; i < BT_RING_MAX_CHUNKS; i++)
		if (p->chunk[i] && chunk_stats(p->chunk[i], lost, pending) < 0)
			return -EFAULT;
	return 0;
}

void peer_drop(struct peer *p, int err, const char *fmt, ...)
{
	struct server *srv = p->srv;
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	log_warn("dropping peer pid %u (%s): %s", p->pid,
		 p->exe[0] ? p->exe : "before HELLO", why);
	notes_add(&srv->notes, BT_LN_PEER_DROP, p->pid, err < 0 ? err : -err,
		  "ring=%016llx bytes=%llu: %s", (unsigned long long)p->ring_id,
		  (unsigned long long)p->bytes, why);
	srv->peers_dropped++;
	peer_free(p);
}

void peer_leave_to_tracer(struct peer *p, const char *why)
{
	log_info("adopted ring of pid %u (%s): %s: left to its tracer, nothing is lost",
		 p->pid, p->exe, why);
	notes_add(&p->srv->notes, BT_LN_PEER_GONE, p->pid, (int64_t)p->bytes,
		  "ring=%016llx blocks=%llu adopted, left to its tracer: %s",
		  (unsigned long long)p->ring_id,
		  (unsigned long long)p->blocks, why);
	peer_free(p);
}

int peer_reap(struct peer *p)
{
	struct server *srv = p->srv;
	uint64_t lost, pending;

	if (p->state != PEER_CLOSING)
		return 0;
	if (peer_stats(p, &lost, &pending) == 0 && pending)
		return 0;
	if (p->ring_id) {
		if (p->adopted)
			log_info("adopted ring of pid %u (%s) drained: %llu bytes; its tracer hands over the rest when it reconnects",
				 p->pid, p->exe, (unsigned long long)p->bytes);
		else
			log_info("peer pid %u (%s) gone: %llu bytes drained, %llu events lost by the tracer",
				 p->pid, p->exe, (unsigned long long)p->bytes,
				 (unsigned long long)lost);
		char per_slot[256] = "";
		for (unsigned i = 0; i < BT_RING_MAX_CHUNKS; i++)
			if (p->chunk[i])
				chunk_lost_list(p->chunk[i], per_slot,
						sizeof per_slot);
		/* an adopted ring drained is not its process's end: its
		 * tracer reconnects on its next event (bp-reconstruct
		 * reads "adopted") */
		notes_add(&srv->notes, BT_LN_PEER_GONE, p->pid,
			  (int64_t)p->bytes, "ring=%016llx blocks=%llu lost=%llu%s%s",
			  (unsigned long long)p->ring_id,
			  (unsigned long long)p->blocks,
			  (unsigned long long)lost, per_slot,
			  p->adopted ? " adopted, drained" : "");
	}
	peer_free(p);
	return 1;
}

/* The socket reached EOF or BYE: drain everything that is left. */
static void peer_eof(struct peer *p)
{
	close_socket(p);
	if (p->state == PEER_CTL || p->state == PEER_NEW) {
		peer_free(p);
		return;
	}
	peer_set_state(p, PEER_CLOSING);
	if (server_drain_peer(p->srv, p) == 1)
		return;                          /* dropped while draining */
	peer_reap(p);
}

static int send_pkt(struct peer *p, const void *m, size_t len)
{
	ssize_t w = send(p->fd, m, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w < 0)
		return -errno;
	return (size_t)w == len ? 0 : -EMSGSIZE;
}

/* bp-logd's effective uid: it never changes it, so one system call. */
static uid_t logd_euid(void)
{
	static uid_t euid;
	static int known;

	if (!known) {
		euid = geteuid();
		known = 1;
	}
	return euid;
}

static int uid_allowed(const struct server *srv, const struct peer *p)
{
	const struct logd_opts *o = srv->o;
	gid_t groups[256];
	socklen_t gl = sizeof groups;
	int ng = 0;

	if (p->cred_uid == logd_euid())
		return 1;
	for (unsigned i = 0; i < o->n_allow_uid; i++)
		if (o->allow_uid[i] == p->cred_uid)
			return 1;
	if (!o->n_allow_gid)
		return 0;
	if (getsockopt(p->fd, SOL_SOCKET, SO_PEERGROUPS, groups, &gl) == 0)
		ng = (int)(gl / sizeof groups[0]);
	for (unsigned i = 0; i < o->n_allow_gid; i++) {
		if (o->allow_gid[i] == p->cred_gid)
			return 1;
		for (int k = 0; k < ng; k++)
			if (groups[k] == o->allow_gid[i])
				return 1;
	}
	return 0;
}

/* Has P's tracer closed its end (EOF not yet read)? */
static int hung_up(struct peer *p)
{
	struct pollfd pf = { p->fd, POLLRDHUP, 0 };

	return poll(&pf, 1, 0) == 1 &&
	       (pf.revents & (POLLHUP | POLLRDHUP | POLLERR));
}

static struct peer *find_ring(struct server *srv, uint64_t ring_id,
			      const struct peer *not)
{
	struct peer *q;

	TAILQ_FOREACH(q, &srv->peers, entry)
		if (q != not && q->ring_id == ring_id)
			return q;
	return NULL;
}

/* Returns 1 when P was freed. */
static int on_hello(struct peer *p, const uint8_t *pkt, size_t len)
{
	struct server *srv = p->srv;
	struct bt_lm_hello m;
	struct peer *q;

	if (len != sizeof m) {
		peer_drop(p, -EPROTO, "HELLO of %zu bytes, expected %zu", len,
			  sizeof m);
		return 1;
	}
	memcpy(&m, pkt, sizeof m);
	m.exe[sizeof m.exe - 1] = 0;
	p->pid = m.pid;
	snprintf(p->exe, sizeof p->exe, "%s", m.exe);
	/* The name comes from the peer and goes into our one-line messages
	 * and notes: no line breaks or terminal controls from it. */
	for (char *c = p->exe; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	if (!uid_allowed(srv, p)) {
		log_warn("refusing pid %u (%s): uid %u is not this daemon's uid %u and not allowed by -u/-g",
			 m.pid, p->exe, (unsigned)p->cred_uid,
			 (unsigned)logd_euid());
		notes_add(&srv->notes, BT_LN_REFUSED, m.pid,
			  (int64_t)p->cred_uid, "exe=%s", p->exe);
		srv->peers_refused++;
		peer_free(p);
		return 1;
	}
	if (m.ring_id == 0) {
		peer_drop(p, -EPROTO, "HELLO with ring_id 0 (reserved for bp-logd)");
		return 1;
	}
	q = find_ring(srv, m.ring_id, p);
	if (q && q->state == PEER_LIVE && hung_up(q)) {
		/* The tracer closed its old connection and reconnected before
		 * we saw the EOF: the old one only drains from now on (its
		 * queued packets are moot: the chunks come again). */
		close_socket(q);
		peer_set_state(q, PEER_CLOSING);
	}
	if (q && q->state != PEER_CLOSING) {
		peer_drop(p, -EEXIST, "ring %llx is already connected (peer pid %u)",
			  (unsigned long long)m.ring_id, q->pid);
		return 1;
	}
	p->ring_id = m.ring_id;
	/* the WELCOME once chunk 0's CHUNK, sent right behind the HELLO,
	 * is read and mapped (welcome_when_ready) */
	p->welcome_due = 1;
	srv->welcomes_owed++;
	peer_set_state(p, PEER_LIVE);
	srv->peers_seen++;
	log_info("peer pid %u (%s) connected, ring %llx", p->pid, p->exe,
		 (unsigned long long)p->ring_id);
	notes_add(&srv->notes, BT_LN_PEER_UP, p->pid, 0, "ring=%016llx exe=%s",
		  (unsigned long long)p->ring_id, p->exe);
	return 0;
}

/*
 * The sockets the tracer held at HELLO, listed by itself (BT_LM_CENSUS,
 * an exec'd image that does not wait for its WELCOME): the census takes
 * them at the WELCOME instead of looking.  Only between HELLO and the
 * WELCOME.  Returns 1 when P was dropped.
 */
static int on_census(struct peer *p, const uint8_t *pkt, size_t len)
{
	struct bt_lm_census m;
	size_t head = offsetof(struct bt_lm_census, ino);

	if (len < head || len > sizeof m) {
		peer_drop(p, -EPROTO, "CENSUS of %zu bytes", len);
		return 1;
	}
	memcpy(&m, pkt, len);
	if (m.n > BT_LM_CENSUS_MAX || len != head + (size_t)m.n * sizeof m.ino[0]) {
		peer_drop(p, -EPROTO, "CENSUS of %zu bytes for %u sockets", len,
			  m.n);
		return 1;
	}
	if (!p->welcome_due) {
		/* too late for the look at HELLO: that was made already */
		log_debug("peer pid %u: a CENSUS after its WELCOME, ignored",
			  p->pid);
		return 0;
	}
	if (census_given(p, m.ino, m.n) < 0)
		log_warn("peer pid %u: no memory for its census", p->pid);
	return 0;
}

/* Returns 1 when P was freed. */
static int on_chunk(struct peer *p, const uint8_t *pkt, size_t len, int fd)
{
	struct server *srv = p->srv;
	struct bt_lm_chunk m;
	struct chunk *c;
	struct peer *q;
	char why[256];
	int r;

	if (len != sizeof m) {
		peer_drop(p, -EPROTO, "CHUNK of %zu bytes, expected %zu", len,
			  sizeof m);
		return 1;
	}
	if (fd < 0) {
		peer_drop(p, -EPROTO, "CHUNK without a memfd");
		return 1;
	}
	memcpy(&m, pkt, sizeof m);
	if (m.chunk < BT_RING_MAX_CHUNKS && p->chunk[m.chunk]) {
		peer_drop(p, -EPROTO, "chunk %u sent twice", m.chunk);
		return 1;
	}
	r = chunk_map(fd, &m, p->ring_id, p->pid, &c, why, sizeof why);
	if (r < 0) {
		peer_drop(p, r, "%s", why);
		return 1;
	}
	/* The same ring from an earlier connection (bp-logd was not
	 * restarted, the tracer reconnected): hand its chunk over. */
	q = find_ring(srv, p->ring_id, p);
	if (q && q->chunk[m.chunk]) {
		struct chunk *old = q->chunk[m.chunk];
		if (old->dev != c->dev || old->ino != c->ino) {
			chunk_unmap(c);
			peer_drop(p, -EEXIST, "chunk %u of ring %llx is still being drained from another memfd",
				  m.chunk, (unsigned long long)p->ring_id);
			return 1;
		}
		/* An adopted chunk's tracer may have spooled past our tail
		 * (adopt.c): then the shared tail, which c read, is further */
		if (!old->adopted)
			memcpy(c->tail, old->tail, sizeof c->tail);
		q->chunk[m.chunk] = NULL;
		q->nchunks--;
		chunk_unmap(old);
		log_info("peer pid %u: chunk %u handed over from its earlier connection",
			 p->pid, m.chunk);
		/* q is reaped by the next drain pass: freeing another peer
		 * here could pull it from under a caller's list walk. */
	}
	p->chunk[m.chunk] = c;
	p->nchunks++;
	chunk_set_key(c, srv->key);
	/* BT_CF_LOGD: these flags are bp-logd's, newer than the WELCOME the
	 * tracer may still be waiting for (it sent this CHUNK before it) */
	chunk_set_flags(c, srv->flags | BT_CF_LOGD, BT_CF_PAUSED & ~srv->flags);
	log_debug("peer pid %u: chunk %u, %u slots of %u bytes", p->pid,
		  m.chunk, m.nslots, m.slot_size);
	return 0;
}

static int on_kick(struct peer *p, const uint8_t *pkt, size_t len)
{
	struct bt_lm_kick m;
	struct chunk *c;
	long r;

	if (len != sizeof m) {
		peer_drop(p, -EPROTO, "KICK of %zu bytes, expected %zu", len,
			  sizeof m);
		return 1;
	}
	memcpy(&m, pkt, sizeof m);
	if (m.chunk >= BT_RING_MAX_CHUNKS || !(c = p->chunk[m.chunk]) ||
	    m.slot >= c->nslots) {
		peer_drop(p, -EPROTO, "KICK for chunk %u slot %u, which it never registered",
			  m.chunk, m.slot);
		return 1;
	}
	if (p->srv->disk_err)
		return 0;                /* the retry timer drains it */
	r = server_drain_slot(p->srv, p, c, m.slot);
	return r == -EPROTO || r == -EFAULT;
}

static void on_ctl(struct peer *p, const uint8_t *pkt, size_t len)
{
	struct server *srv = p->srv;
	struct bt_lm_ctl m;
	struct bt_lm_ctl_reply rep;
	char text[16384];
	size_t tl, off = 0;
	int st;

	if (p->cred_uid != logd_euid() && p->cred_uid != 0) {
		log_warn("refusing control command from pid %d: uid %u is not this daemon's uid",
			 (int)p->cred_pid, (unsigned)p->cred_uid);
		peer_free(p);
		return;
	}
	if (len != sizeof m) {
		peer_drop(p, -EPROTO, "CTL of %zu bytes, expected %zu", len,
			  sizeof m);
		return;
	}
	memcpy(&m, pkt, sizeof m);
	peer_set_state(p, PEER_CTL);
	st = server_control(srv, m.cmd, text, sizeof text);
	tl = strlen(text);
	/* One or more replies of at most sizeof rep.text - 1 bytes of text,
	 * then close: the client prints them until EOF. */
	do {
		size_t n = tl - off;
		if (n > sizeof rep.text - 1)
			n = sizeof rep.text - 1;
		memset(&rep, 0, sizeof rep);
		rep.h.type = BT_LM_CTL_REPLY;
		rep.h.len = sizeof rep;
		rep.h.version = BT_RING_VERSION;
		rep.status = st;
		memcpy(rep.text, text + off, n);
		if (send_pkt(p, &rep, sizeof rep) < 0)
			break;
		off += n;
	} while (off < tl);
	peer_free(p);
}

/*
 * Receive one packet.  Returns its length (> 0), 0 at EOF, -EAGAIN when
 * nothing is queued, or another -errno with *WHY set.  *FD gets the memfd
 * passed with it (or -1); extra fds are closed.
 */
static long peer_recv(struct peer *p, uint8_t *buf, int *fd, const char **why)
{
	union {
		struct cmsghdr c;
		char b[CMSG_SPACE(sizeof(int) * 8)];
	} cbuf;
	struct iovec iov = { buf, PEER_PKT_MAX };
	struct msghdr mh;
	struct cmsghdr *cm;
	int nfd = 0;
	ssize_t n;

	*fd = -1;
	memset(&mh, 0, sizeof mh);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf.b;
	mh.msg_controllen = sizeof cbuf.b;
	/*
	 * ECONNRESET: the tracer closed with a packet of ours unread (a
	 * forked child from the lazy listener does not read its WELCOME).
	 * The kernel reports that once, before the packets still queued
	 * (its CHUNKs of threads started since, its BYE): read on, they
	 * and then the end of file follow.  Taken for the end of file, a
	 * chunk registered there was never mapped and its records never
	 * drained, with nothing counted lost.
	 */
	for (int reset = 0;; reset++) {
		n = recvmsg(p->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n >= 0 || errno != ECONNRESET || reset == 4)
			break;
		mh.msg_controllen = sizeof cbuf.b;
		mh.msg_flags = 0;
	}
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return -EAGAIN;
		if (errno == ECONNRESET)
			return 0;
		*why = strerror(errno);
		return -errno;
	}
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int f;
			memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof f);
			if (nfd++ == 0)
				*fd = f;
			else
				close(f);
		}
	}
	if (mh.msg_flags & MSG_CTRUNC) {
		*why = "file descriptors were truncated (too many sent, or bp-logd is out of fds)";
		goto bad;
	}
	if (nfd > 1) {
		*why = "more than one file descriptor in a packet";
		goto bad;
	}
	if (mh.msg_flags & MSG_TRUNC) {
		*why = "packet larger than any message";
		goto bad;
	}
	/* (SOCK_SEQPACKET: an empty packet reads like end of file; one that
	 * carries a descriptor must not be taken for it, or the descriptor
	 * would stay open in bp-logd) */
	if (n == 0 && nfd == 0)
		return 0;
	if (n == 0) {
		*why = "an empty packet carrying a file descriptor";
		goto bad;
	}
	return (long)n;
bad:
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	return -EPROTO;
}

/* Handle one packet.  Returns 1 when P is gone or closing. */
static int peer_dispatch(struct peer *p, const uint8_t *pkt, size_t len,
			 int fd)
{
	struct bt_lm_hdr h;
	int gone = 0;

	if (len < sizeof h) {
		peer_drop(p, -EPROTO, "packet of %zu bytes is shorter than a header", len);
		gone = 1;
		goto out;
	}
	memcpy(&h, pkt, sizeof h);
	if (h.len != len || h.version != BT_RING_VERSION) {
		peer_drop(p, -EPROTO, "bad packet header (type %u, len %u of %zu received, version %u; expected version %u)",
			  h.type, h.len, len, h.version, BT_RING_VERSION);
		gone = 1;
		goto out;
	}
	if (fd >= 0 && h.type != BT_LM_CHUNK) {
		peer_drop(p, -EPROTO, "a file descriptor came with message type %u",
			  h.type);
		gone = 1;
		goto out;
	}
	if (p->state == PEER_NEW) {
		if (h.type == BT_LM_HELLO)
			gone = on_hello(p, pkt, len);
		else if (h.type == BT_LM_CTL) {
			on_ctl(p, pkt, len);
			gone = 1;
		} else {
			peer_drop(p, -EPROTO, "first message has type %u, expected HELLO or CTL",
				  h.type);
			gone = 1;
		}
		goto out;
	}
	switch (h.type) {
	case BT_LM_CHUNK:
		gone = on_chunk(p, pkt, len, fd);
		break;
	case BT_LM_KICK:
		gone = on_kick(p, pkt, len);
		break;
	case BT_LM_BYE:
		peer_eof(p);
		gone = 1;
		break;
	case BT_LM_CENSUS:
		gone = on_census(p, pkt, len);
		break;
	default:
		peer_drop(p, -EPROTO, "unexpected message type %u", h.type);
		gone = 1;
	}
out:
	if (fd >= 0)
		close(fd);
	return gone;
}

/*
 * The WELCOME of a HELLO read earlier, sent once chunk 0 is mapped (and
 * its flags set, BT_CF_LOGD) or given up for (welcome_when_ready): the
 * census then knows whether the tracer can ever be named.  The tracer
 * waits for the WELCOME before its program runs, so the sockets the
 * census lists now are still the ones it held at HELLO.  Returns 1 when
 * P was dropped.
 */
static int peer_welcome(struct peer *p)
{
	struct server *srv = p->srv;
	struct bt_lm_welcome w;
	int r;

	welcome_settled(p);
	census_hello(p);
	memset(&w, 0, sizeof w);
	w.h.type = BT_LM_WELCOME;
	w.h.len = sizeof w;
	w.h.version = BT_RING_VERSION;
	w.flags = srv->flags;
	snprintf(w.logdir, sizeof w.logdir, "%s", srv->logdir);
	w.features = BT_LW_CENSUS | (p->srv->lazy_fd >= 0 ? BT_LW_LAZY : 0);
	r = send_pkt(p, &w, sizeof w);
	if (r == -EPIPE || r == -ECONNRESET) {
		/* The tracer is gone already (a forked child from the lazy
		 * listener does not wait for its WELCOME, and may have
		 * exec'd): what it queued is read as usual, then its end of
		 * file drains its rings. */
		log_debug("peer pid %u: gone before its WELCOME", p->pid);
		return 0;
	}
	if (r < 0) {
		peer_drop(p, r, "cannot send WELCOME: %s", strerror(-r));
		return 1;
	}
	return 0;
}

/*
 * P's queue is read up to a HELLO not answered yet.  Answer now if chunk
 * 0 is mapped; else its CHUNK is usually on its way (the tracer sends it
 * in the same sendmmsg, and we read between the two messages): its
 * arrival wakes us again, and a tracer that sends it only after the
 * WELCOME (an older one) is answered by peer_welcome_late within
 * WELCOME_WAIT_US.  Returns 1 when P was dropped.
 */
static int welcome_when_ready(struct peer *p)
{
	struct timeval tv = { 0, WELCOME_WAIT_US };

	if (p->chunk[0])
		return peer_welcome(p);
	if (!evtimer_pending(p->srv->ev_welcome, NULL))
		evtimer_add(p->srv->ev_welcome, &tv);
	return 0;
}

/*
 * Read and handle up to MAX packets.  With STOP, return as soon as the
 * WELCOME went (after chunk 0's CHUNK, usually the last packet queued):
 * the tracer waits for it, and the loop's level-triggered watch brings us
 * back for anything queued behind, which saves the read that finds the
 * queue empty for each traced process.  Returns 1 when P is gone or
 * closing.
 */
static int peer_read_some(struct peer *p, unsigned max, int stop)
{
	uint8_t buf[PEER_PKT_MAX] __attribute__((aligned(8)));

	for (unsigned n = 0; n < max && p->state != PEER_CLOSING; n++) {
		const char *why = NULL;
		int fd;
		long r = peer_recv(p, buf, &fd, &why);

		if (r == -EAGAIN)
			return p->welcome_due && welcome_when_ready(p);
		if (r == 0) {
			peer_eof(p);
			return 1;
		}
		if (r < 0) {
			peer_drop(p, (int)r, "%s", why);
			return 1;
		}
		if (peer_dispatch(p, buf, (size_t)r, fd))
			return 1;
		if (p->welcome_due && p->chunk[0]) {
			if (peer_welcome(p))
				return 1;
			if (stop)
				return 0;
		}
	}
	/* MAX packets read and more may be queued, or closing */
	if (p->state != PEER_CLOSING && p->welcome_due)
		return welcome_when_ready(p);
	return 0;
}

void peer_welcome_late(struct server *srv)
{
	struct peer *p, *next;

	for (p = TAILQ_FIRST(&srv->peers); p; p = next) {
		next = TAILQ_NEXT(p, entry);
		if (p->welcome_due && p->state == PEER_LIVE)
			peer_welcome(p);
	}
}

static void peer_read_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	peer_read_some(arg, PEER_MAX_PACKETS, 1);
}

void peer_read_pending(struct peer *p)
{
	/* Bounded: a peer cannot queue more than its socket buffer holds. */
	if (p->fd >= 0 && p->state != PEER_CLOSING)
		peer_read_some(p, 100000, 0);
}
