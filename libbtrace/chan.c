/*
 * chan.c - channel identity and processor choice.
 *
 * A channel end is announced once (BT_EV_CHAN) with an identity the other
 * end computes too: TCP/UDP addresses; for unix sockets the inode of this
 * end and of its peer (the peer's comes from the kernel's sock_diag
 * interface, asked on the accepting side, where the connecting socket is
 * complete; a connecting end may log peer 0); for pipes the pipe inode.
 * Then the processor is chosen: rules (port, unix path) and defaults at
 * creation, exe rules for pipes and inherited descriptors, else sniffing of
 * the first bytes (in.c and out.c call bt_chan_sniff).
 */
#include "config.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "bt.h"


static int nl_fd = -1;
static pthread_mutex_t nl_mu = PTHREAD_MUTEX_INITIALIZER;

/* Peer inode of the unix socket with inode INO, or 0. */
static uint64_t unix_peer_ino(uint64_t ino)
{
	struct {
		struct nlmsghdr nlh;
		struct unix_diag_req req;
	} q;
	union { struct nlmsghdr h; char buf[8192]; } r;
	uint64_t peer = 0;
	ssize_t n;

	pthread_mutex_lock(&nl_mu);
	if (nl_fd < 0) {
		int fd = REAL(socket)(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC,
				      NETLINK_SOCK_DIAG);
		if (fd < 0)
			goto out;
		nl_fd = bt_own_fd_hide(fd);
		bt_own_var(&nl_fd, 1);
	}
	memset(&q, 0, sizeof q);
	q.nlh.nlmsg_len = sizeof q;
	q.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q.nlh.nlmsg_flags = NLM_F_REQUEST;
	q.req.sdiag_family = AF_UNIX;
	q.req.udiag_states = ~0u;
	q.req.udiag_ino = (uint32_t)ino;
	q.req.udiag_show = UDIAG_SHOW_PEER;
	q.req.udiag_cookie[0] = q.req.udiag_cookie[1] = ~0u;
	if (REAL(send)(nl_fd, &q, sizeof q, MSG_NOSIGNAL) < 0)
		goto out;
	n = REAL(recv)(nl_fd, &r, sizeof r, 0);
	if (n < (ssize_t)(sizeof(struct nlmsghdr) + sizeof(struct unix_diag_msg)))
		goto out;
	if (r.h.nlmsg_type != SOCK_DIAG_BY_FAMILY || r.h.nlmsg_len > (size_t)n)
		goto out;
	{
		struct unix_diag_msg *m = NLMSG_DATA(&r.h);
		struct rtattr *a = (struct rtattr *)(m + 1);
		int len = (int)r.h.nlmsg_len - (int)NLMSG_LENGTH(sizeof *m);
		for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
			if (a->rta_type == UNIX_DIAG_PEER &&
			    RTA_PAYLOAD(a) >= sizeof(uint32_t)) {
				uint32_t v;
				memcpy(&v, RTA_DATA(a), sizeof v);
				peer = v;
			}
	}
out:
	pthread_mutex_unlock(&nl_mu);
	return peer;
}

static void addr_from(struct bt_addr *out, const struct sockaddr *sa,
		      socklen_t len)
{
	memset(out, 0, sizeof *out);
	if (!sa || len < (socklen_t)sizeof(sa_family_t))
		return;
	if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *s = (const void *)sa;
		out->family = BT_AF_INET;
		out->port = ntohs(s->sin_port);
		memcpy(out->addr, &s->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6 &&
		   len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *s = (const void *)sa;
		out->family = BT_AF_INET6;
		out->port = ntohs(s->sin6_port);
		memcpy(out->addr, &s->sin6_addr, 16);
	} else if (sa->sa_family == AF_UNIX) {
		out->family = BT_AF_UNIX;
	}
}

/* The path of a unix address, NUL-terminated into BUF ("@name" for the
 * abstract namespace). */
static const char *unix_path(const struct sockaddr *sa, socklen_t len,
			     char *buf, size_t blen)
{
	const struct sockaddr_un *su = (const void *)sa;
	size_t n;

	buf[0] = 0;
	if (!sa || sa->sa_family != AF_UNIX ||
	    len <= (socklen_t)offsetof(struct sockaddr_un, sun_path))
		return buf;
	n = (size_t)len - offsetof(struct sockaddr_un, sun_path);
	if (n > sizeof su->sun_path)
		n = sizeof su->sun_path;
	if (n >= blen)
		n = blen - 1;
	if (su->sun_path[0] == 0 && n > 1) {
		buf[0] = '@';
		memcpy(buf + 1, su->sun_path + 1, n - 1);
		buf[n] = 0;
		for (size_t i = 1; i < n; i++)   /* abstract names may hold NULs */
			if (!buf[i])
				buf[i] = '@';
	} else {
		memcpy(buf, su->sun_path, n);
		buf[n] = 0;
	}
	return buf;
}

void bt_chan_attach(struct bt_chan *ch, int fd, const struct bt_proto_ops *p,
		    int how, const char *why)
{
	struct bt_event ev;

	ch->sniff = 0;
	if (p && p->state_size) {
		ch->pps = calloc(1, p->state_size);
		if (!ch->pps)
			p = NULL;
	}
	ch->pp = p;
	if (p)
		p->init(ch->pps, ch->pp_role, ch->transport);
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_PROTO;
	ev.fd = fd;
	ev.proto = p ? p->id : BT_PROTO_NONE;
	ev.flags = (uint32_t)how;
	ev.str = why;
	ev.str_len = why ? (uint32_t)strlen(why) : 0;
	bt_emit(&ev);
	if (!p && (how == BT_PH_TLS || how == BT_PH_NONE))
		bt_unread_note(how == BT_PH_TLS ? 't' : 'u');
}

void bt_chan_switch(struct bt_chan *ch, int fd, unsigned id)
{
	const struct bt_proto_ops *p = id < BT_PROTO_MAX ? bt_protocols[id] :
				       NULL;

	if (!p || !ch->pp)
		return;
	if (ch->pp->fini)
		ch->pp->fini(ch->pps);
	free(ch->pps);
	ch->pps = NULL;
	ch->pp = NULL;
	bt_chan_attach(ch, fd, p, BT_PH_UPGRADE, "upgrade");
}

/* The reasons of a rule's choice, "port L/R" and "unix PATH" (cut to
 * the buffer), written as snprintf would, without its format parsing
 * (some 600 instructions on every channel a rule chose). */
static void why_ports(char *why, uint16_t l, uint16_t r)
{
	char lb[21], rb[21];
	size_t ln, rn;
	const char *ls = bt_u64_dec(lb, sizeof lb, l, &ln);
	const char *rs = bt_u64_dec(rb, sizeof rb, r, &rn);

	memcpy(why, "port ", 5);
	memcpy(why + 5, ls, ln);
	why[5 + ln] = '/';
	memcpy(why + 6 + ln, rs, rn + 1);       /* with its NUL */
}

static void why_unix(char *why, size_t cap, const char *path)
{
	size_t n = path ? strlen(path) : 0;

	if (n > cap - 6)
		n = cap - 6;
	memcpy(why, "unix ", 5);
	memcpy(why + 5, path ? path : "", n);
	why[5 + n] = 0;
}

/* Choose by rules at creation.  Channel not yet visible to others. */
static void choose(struct bt_chan *ch, int fd, const struct bt_event *ce,
		   const char *path)
{
	int how = 0, id;
	int ports = ce->local.family == BT_AF_INET || ce->local.family == BT_AF_INET6;
	char why[160];

	id = bt_rules_match(ce->local.port, ce->remote.port, ports, path, &how);
	if (id > 0 && bt_protocols[id]) {
		if (ports)
			why_ports(why, ce->local.port, ce->remote.port);
		else
			why_unix(why, sizeof why, path);
		bt_chan_attach(ch, fd, bt_protocols[id], how, why);
		return;
	}
	if (id == 0) {                  /* an explicit "none" rule */
		bt_chan_attach(ch, fd, NULL, BT_PH_RULE, "rule none");
		return;
	}
	if ((ch->kind == BT_CK_PIPE || ch->role == BT_CR_INHERITED ||
	     ch->role == BT_CR_SOCKETPAIR) && bt_conf.exe_proto &&
	    bt_protocols[bt_conf.exe_proto]) {
		bt_chan_attach(ch, fd, bt_protocols[bt_conf.exe_proto],
			       BT_PH_RULE, "exe");
		return;
	}
	ch->sniff = ch->kind != BT_CK_PIPE;
	if (!ch->sniff && ch->kind == BT_CK_PIPE)
		ch->pp = NULL;
}

void bt_chan_sniff(struct bt_chan *ch, int fd, int dir, const uint8_t *p,
		   size_t n)
{
	int maybe = 0;
	const struct bt_proto_ops *o = bt_proto_sniff(dir, ch->pp_role, p, n,
						      &maybe);

	if (o) {
		bt_chan_attach(ch, fd, o, BT_PH_SNIFF,
			       ch->tls ? "sniffed on the TLS plaintext" : "sniffed");
	} else if (bt_conf.exe_proto && bt_protocols[bt_conf.exe_proto]) {
		bt_chan_attach(ch, fd, bt_protocols[bt_conf.exe_proto],
			       BT_PH_RULE, "exe");
	} else if (bt_proto_looks_tls(p, n)) {
		ch->tls_seen = 1;
		bt_chan_attach(ch, fd, NULL, BT_PH_TLS,
			       "a TLS record: encrypted inside the program");
	} else {
		bt_chan_attach(ch, fd, NULL, BT_PH_NONE,
			       maybe ? "sniffing needs more bytes than the first read had"
				     : "no processor recognised the first bytes");
	}
}

static int sock_type(int fd)
{
	int t = 0;
	socklen_t l = sizeof t;
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &t, &l) < 0)
		return -1;
	return t;
}

static uint8_t kind_of(int family, int type)
{
	if (family == AF_INET || family == AF_INET6)
		return type == SOCK_DGRAM ? BT_CK_UDP :
		       type == SOCK_STREAM ? BT_CK_TCP : BT_CK_OTHER_SOCKET;
	if (family == AF_UNIX)
		return type == SOCK_STREAM ? BT_CK_UNIX_STREAM : BT_CK_UNIX_DGRAM;
	return BT_CK_OTHER_SOCKET;
}

/* socket(): remember the kind; identity comes at connect/accept/first use. */
void bt_chan_socket(int fd, int domain, int type)
{
	struct bt_chan *ch;
	int t = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (domain != AF_INET && domain != AF_INET6 && domain != AF_UNIX) {
		bt_fd_set(fd, BT_FD_PLAIN);
		return;
	}
	ch = bt_chan_new();
	if (!ch) {
		bt_fd_set(fd, BT_FD_PLAIN);
		return;
	}
	ch->kind = kind_of(domain, t);
	ch->transport = (t == SOCK_DGRAM) ? BT_TR_DGRAM : BT_TR_STREAM;
	if (domain == AF_UNIX && t == SOCK_SEQPACKET)
		ch->transport = BT_TR_DGRAM;
	bt_fd_set_chan(fd, ch);
}

struct bt_chan *bt_chan_open(int fd, int role, int fd2,
			     const struct sockaddr *peer, socklen_t peerlen,
			     long result)
{
	uintptr_t w = bt_fd_get(fd);
	struct bt_chan *ch = BT_FD_IS_CHAN(w) ? (struct bt_chan *)w : NULL;
	struct sockaddr_storage ls, rs;
	socklen_t ll = sizeof ls, rl = sizeof rs;
	struct bt_event ev;
	struct stat st;
	char path[110] = "";
	int fresh = 0, e = errno;

	if (fstat(fd, &st) < 0)
		goto plain;
	if (!ch) {
		ch = bt_chan_new();
		if (!ch)
			goto plain;
		fresh = 1;
	}
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_CHAN;
	ev.fd = fd;
	ev.fd2 = fd2;
	ev.role = (uint8_t)role;
	ev.result = result;
	ev.ino = st.st_ino;

	if (S_ISFIFO(st.st_mode)) {
		int fl = REAL(fcntl)(fd, F_GETFL);
		ch->kind = BT_CK_PIPE;
		ch->transport = BT_TR_STREAM;
		if (role == BT_CR_INHERITED && fl >= 0)
			ev.flags = (fl & O_ACCMODE) == O_WRONLY ? BT_CR_PIPE_WRITE
								 : BT_CR_PIPE_READ;
	} else if (S_ISSOCK(st.st_mode)) {
		memset(&ls, 0, sizeof ls);
		if (getsockname(fd, (struct sockaddr *)&ls, &ll) < 0)
			ll = 0;
		if (fresh || !ch->kind) {
			int t = sock_type(fd);
			ch->kind = kind_of(ll ? ls.ss_family : AF_UNSPEC, t);
			ch->transport = (t == SOCK_DGRAM || t == SOCK_SEQPACKET)
					? BT_TR_DGRAM : BT_TR_STREAM;
		}
		addr_from(&ev.local, (struct sockaddr *)&ls, ll);
		if (peer && peerlen) {
			addr_from(&ev.remote, peer, peerlen);
			if (peer->sa_family == AF_UNIX)
				unix_path(peer, peerlen, path, sizeof path);
		} else if (role != BT_CR_DGRAM) {
			memset(&rs, 0, sizeof rs);
			if (getpeername(fd, (struct sockaddr *)&rs, &rl) == 0)
				addr_from(&ev.remote, (struct sockaddr *)&rs, rl);
		}
		if (ll && ls.ss_family == AF_UNIX) {
			if (!path[0])
				unix_path((struct sockaddr *)&ls, ll, path, sizeof path);
			if (role == BT_CR_ACCEPT || role == BT_CR_INHERITED)
				ev.peer_ino = unix_peer_ino(st.st_ino);
		}
	} else {
		goto plain_free;
	}
	ch->role = (uint8_t)role;
	ch->pp_role = role == BT_CR_CONNECT ? BT_ROLE_CLIENT :
		      role == BT_CR_ACCEPT ? BT_ROLE_SERVER : BT_ROLE_UNKNOWN;
	ch->announced = 1;
	ev.chan_kind = ch->kind;
	ev.str = path;
	ev.str_len = (uint32_t)strlen(path);
	if (fresh)
		bt_fd_set_chan(fd, ch);
	bt_emit(&ev);
	if (!ch->pp && !ch->lost)
		choose(ch, fd, &ev, path[0] ? path : NULL);
	errno = e;
	return ch;

plain_free:
	if (fresh) {
		ch->refs = 1;
		bt_chan_put(ch);
	}
plain:
	bt_fd_set(fd, BT_FD_PLAIN);
	errno = e;
	return NULL;
}

void bt_chan_pipe(int rfd, int wfd)
{
	struct bt_chan *r = bt_chan_new(), *w = bt_chan_new();
	struct bt_event ev;
	struct stat st;

	if (!r || !w || fstat(rfd, &st) < 0) {
		if (r) { r->refs = 1; bt_chan_put(r); }
		if (w) { w->refs = 1; bt_chan_put(w); }
		bt_fd_set(rfd, BT_FD_PLAIN);
		bt_fd_set(wfd, BT_FD_PLAIN);
		return;
	}
	for (int i = 0; i < 2; i++) {
		struct bt_chan *ch = i ? w : r;
		ch->kind = BT_CK_PIPE;
		ch->transport = BT_TR_STREAM;
		ch->role = i ? BT_CR_PIPE_WRITE : BT_CR_PIPE_READ;
		ch->pp_role = BT_ROLE_UNKNOWN;
		ch->announced = 1;
		bt_fd_set_chan(i ? wfd : rfd, ch);
		memset(&ev, 0, sizeof ev);
		ev.type = BT_EV_CHAN;
		ev.fd = i ? wfd : rfd;
		ev.fd2 = i ? rfd : wfd;
		ev.chan_kind = BT_CK_PIPE;
		ev.role = ch->role;
		ev.ino = st.st_ino;
		bt_emit(&ev);
		if (bt_conf.exe_proto && bt_protocols[bt_conf.exe_proto])
			bt_chan_attach(ch, ev.fd, bt_protocols[bt_conf.exe_proto],
				       BT_PH_RULE, "exe");
	}
}

void bt_chan_socketpair(int fd0, int fd1, int type)
{
	struct stat s0, s1;
	int t = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	int fds[2] = { fd0, fd1 };

	if (fstat(fd0, &s0) < 0 || fstat(fd1, &s1) < 0) {
		bt_fd_set(fd0, BT_FD_PLAIN);
		bt_fd_set(fd1, BT_FD_PLAIN);
		return;
	}
	for (int i = 0; i < 2; i++) {
		struct bt_chan *ch = bt_chan_new();
		struct bt_event ev;
		if (!ch) {
			bt_fd_set(fds[i], BT_FD_PLAIN);
			continue;
		}
		ch->kind = t == SOCK_STREAM ? BT_CK_UNIX_STREAM : BT_CK_UNIX_DGRAM;
		ch->transport = t == SOCK_STREAM ? BT_TR_STREAM : BT_TR_DGRAM;
		ch->role = BT_CR_SOCKETPAIR;
		ch->pp_role = BT_ROLE_UNKNOWN;
		ch->announced = 1;
		bt_fd_set_chan(fds[i], ch);
		memset(&ev, 0, sizeof ev);
		ev.type = BT_EV_CHAN;
		ev.fd = fds[i];
		ev.fd2 = fds[!i];
		ev.chan_kind = ch->kind;
		ev.role = BT_CR_SOCKETPAIR;
		ev.ino = i ? s1.st_ino : s0.st_ino;
		ev.peer_ino = i ? s0.st_ino : s1.st_ino;
		ev.local.family = ev.remote.family = BT_AF_UNIX;
		bt_emit(&ev);
		if (bt_conf.exe_proto && bt_protocols[bt_conf.exe_proto])
			bt_chan_attach(ch, fds[i], bt_protocols[bt_conf.exe_proto],
				       BT_PH_RULE, "exe");
		else
			ch->sniff = 1;
	}
}

/* First data on a channel never announced (socket() then sendto, ...). */
void bt_chan_announce(struct bt_chan *ch, int fd)
{
	bt_chan_open(fd, ch->transport == BT_TR_DGRAM ? BT_CR_DGRAM
						       : BT_CR_INHERITED,
		     -1, NULL, 0, 0);
}

/* The netlink socket is shared with the parent after fork: use our own. */
void bt_chan_atfork_child(void)
{
	pthread_mutex_init(&nl_mu, NULL);
	if (nl_fd >= 0) {
		bt_own_var(&nl_fd, 0);
		bt_fd_set(nl_fd, BT_FD_NONE);
		REAL(close)(nl_fd);
		nl_fd = -1;
	}
}

/* ---- pausing (docs/security.md) --------------------------------------
 *
 * While tracing is paused the wrappers pass calls through.  Byte offsets
 * pair a send with its receive, and a processor must see every byte: a
 * channel whose bytes moved unseen can never be paired or framed again.
 * So the rule is: a channel on which bytes moved while paused (or one of
 * whose records was lost to the pause) is dark until it is closed; its
 * end is closed in the log when it goes dark.  A channel that moved
 * nothing while paused carries on exactly where it was.  Held input is
 * always served first, paused or dark, so the application sees no change.
 */

/* CH stops being traced until it is closed (chan.h). */
/*
 * A TLS session (tls.c) now reads and writes FD's channel: from here on
 * its offsets count plaintext and its processor reads plaintext, starting
 * over as on a new connection (PostgreSQL's StartupMessage follows the
 * 'S' answer to SSLRequest as it would open an unencrypted connection;
 * HTTPS is sniffed on its first plaintext bytes).  Held input (which
 * would be ciphertext the library must read) or ciphertext already framed
 * (a TLS record sniffed, a processor that lost sync on it) means the two
 * ends may no longer count the same bytes: the channel goes dark instead.
 * Channel locked; returns 1 if it is now read on the plaintext.
 */
int bt_chan_tls_start(struct bt_chan *ch, int fd, const void *ssl)
{
	const struct bt_proto_ops *p = ch->pp;

	if (ch->tls || ch->transport != BT_TR_STREAM) {
		ch->tls_ssl = ssl;
		return ch->tls;
	}
	ch->tls = 1;
	ch->tls_ssl = ssl;
	ch->tls_off[0] = ch->off[0];
	ch->tls_off[1] = ch->off[1];
	if (ch->tls_seen || ch->lost || ch->rd != ch->wr ||
	    ch->msg_open[0] || ch->msg_open[1]) {
		bt_chan_go_dark(ch, fd);
		return 0;
	}
	if (p && ch->pps) {
		if (p->fini)
			p->fini(ch->pps);
		memset(ch->pps, 0, p->state_size);
		p->init(ch->pps, ch->pp_role, ch->transport);
	}
	return 1;
}

/*
 * Ciphertext moves on a channel bound to a TLS session outside every
 * TLS library call the shim sees.  Before any plaintext was counted since the
 * binding, the library is driven from inside another library (an SSL
 * BIO, BIO_f_ssl, calls SSL_read_ex within libssl), so its plaintext
 * will not be seen: the channel is read as it comes again (the ciphertext
 * is sniffed: TLS inside the program, as before interposition).  After
 * plaintext was counted, it is the library's own ciphertext moved later
 * (a program whose BIO queues it and writes it after the call returns):
 * it passes.  Returns 1 when the caller frames the bytes as usual.
 */
int bt_chan_tls_unseen(struct bt_chan *ch, int fd)
{
	int again = 0;

	bt_mutex_lock(&ch->mu);
	if (bt_fd_get(fd) == (uintptr_t)ch && ch->tls && !ch->dark &&
	    ch->off[0] == ch->tls_off[0] && ch->off[1] == ch->tls_off[1]) {
		ch->tls = 0;
		ch->tls_ssl = NULL;
		again = 1;
	}
	bt_mutex_unlock(&ch->mu);
	return again;
}

void bt_chan_go_dark(struct bt_chan *ch, int fd)
{
	struct bt_event ev;

	if (ch->dark || __atomic_exchange_n(&ch->dark, 1, __ATOMIC_RELAXED) ||
	    !ch->announced)
		return;
	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_CLOSE;
	ev.fd = fd;
	bt_emit_always(&ev);
}

/* ---- channel objects ---------------------------------------------------
 *
 * Type-stable: recycled through a free list, never returned to malloc, so
 * a stale pointer read by a racing thread still points at a channel
 * (callers re-check the table word under the channel's mutex).
 */

static struct bt_chan *all_chans;           /* every channel object */
static struct bt_chan *free_chans;
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;

struct bt_chan *bt_chan_new(void)
{
	struct bt_chan *ch;

	pthread_mutex_lock(&pool_mu);
	ch = free_chans;
	if (ch) {
		free_chans = ch->next_free;
	} else {
		ch = aligned_alloc(64, (sizeof *ch + 63) & ~(size_t)63);
		if (ch) {
			memset(ch, 0, sizeof *ch);
			bt_mutex_init(&ch->mu);
			ch->next_all = all_chans;
			all_chans = ch;
		}
	}
	pthread_mutex_unlock(&pool_mu);
	if (!ch)
		return NULL;
	bt_mutex_lock(&ch->mu);
	ch->gen++;
	memset(&ch->refs, 0, sizeof *ch - offsetof(struct bt_chan, refs));
	ch->ep[0].epfd = ch->ep[1].epfd = -1;
	for (struct bt_epreg_more *m = ch->ep_more; m; m = m->next)
		for (int i = 0; i < BT_EPREG_MORE; i++)
			m->r[i].epfd = -1;
	bt_mutex_unlock(&ch->mu);
	return ch;
}

void bt_chan_get(struct bt_chan *ch)
{
	__atomic_add_fetch(&ch->refs, 1, __ATOMIC_RELAXED);
}

void bt_chan_put(struct bt_chan *ch)
{
	if (__atomic_sub_fetch(&ch->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	bt_mutex_lock(&ch->mu);
	if (ch->pp && ch->pps && ch->pp->fini)
		ch->pp->fini(ch->pps);
	free(ch->pps);
	ch->pps = NULL;
	ch->pp = NULL;
	free(ch->buf);
	ch->buf = NULL;
	ch->cap = ch->rd = ch->wr = 0;
	bt_mutex_unlock(&ch->mu);
	if (ch->in_ready_list)
		bt_ready_del(ch);
	pthread_mutex_lock(&pool_mu);
	ch->next_free = free_chans;
	free_chans = ch;
	pthread_mutex_unlock(&pool_mu);
}

/* Forked child: the channel pool's lock and every channel's mutex afresh. */
void bt_chan_pool_atfork_child(void)
{
	pthread_mutex_init(&pool_mu, NULL);
	for (struct bt_chan *ch = all_chans; ch; ch = ch->next_all)
		bt_mutex_init(&ch->mu);
}

struct bt_chan *bt_chan_of(int fd)
{
	uintptr_t v = bt_fd_get(fd);
	struct stat st;
	int e;

	if (likely(BT_FD_IS_CHAN(v)))
		return (struct bt_chan *)v;
	if (v != BT_FD_NONE || fd < 0)
		return NULL;
	/* Never seen: inherited, or made by libc where we could not see. */
	e = errno;
	if (fstat(fd, &st) < 0) {
		errno = e;
		return NULL;
	}
	errno = e;
	if (S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode)) {
		struct bt_chan *ch;
		if (S_ISSOCK(st.st_mode))
			bt_census_sock();
		ch = bt_chan_open(fd, BT_CR_INHERITED, -1, NULL, 0, 0);
		return ch;
	}
	bt_fd_set(fd, BT_FD_PLAIN);   /* was BT_FD_NONE: no channel to drop */
	return NULL;
}
