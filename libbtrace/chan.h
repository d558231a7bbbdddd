/*
 * chan.h - channel objects (type-stable, reference counted), their identity
 * (addresses, inodes), processor choice and going dark (chan.c).
 */
#ifndef BT_CHAN_H
#define BT_CHAN_H

#include "fdtab.h"

/* Channel identity and processor choice (chan.c) */
BT_HIDDEN struct bt_chan *bt_chan_open(int fd, int role, int fd2,
				       const struct sockaddr *peer,
				       socklen_t peerlen, long result);
BT_HIDDEN void bt_chan_pipe(int rfd, int wfd);
BT_HIDDEN void bt_chan_socketpair(int fd0, int fd1, int type);
/* Attach processor P (how = enum bt_proto_how) and log it. */
BT_HIDDEN void bt_chan_attach(struct bt_chan *ch, int fd,
			      const struct bt_proto_ops *p, int how,
			      const char *why);
/* The processor hands CH over to processor ID (bt_msg.next_proto): the
 * old one's state freed, ID's started afresh and logged (BT_PH_UPGRADE).
 * Channel locked. */
BT_HIDDEN void bt_chan_switch(struct bt_chan *ch, int fd, unsigned id);
/* Choose by sniffing the first bytes (channel locked). */
BT_HIDDEN void bt_chan_sniff(struct bt_chan *ch, int fd, int dir,
			     const uint8_t *p, size_t n);

/* socket(): remember FD's kind (DOMAIN, TYPE); identity comes at
 * connect/accept/first use. */
BT_HIDDEN void bt_chan_socket(int fd, int domain, int type);
/* First data on a channel never announced (socket() then sendto, ...):
 * its BT_EV_CHAN record. */
BT_HIDDEN void bt_chan_announce(struct bt_chan *ch, int fd);
/* Forked child: the netlink socket is shared with the parent, use our own. */
BT_HIDDEN void bt_chan_atfork_child(void);
/*
 * CH (referred to by FD) stops being traced until it is closed: bytes
 * moved or records were lost while tracing was paused, so its offsets and
 * framing no longer match its peer's.  Once: its end is closed in the log
 * (CLOSE FD, written even while paused); from then on nothing about it is
 * recorded.  Input it holds is still served first.
 */
BT_HIDDEN void bt_chan_go_dark(struct bt_chan *ch, int fd);
/*
 * A TLS session SSL now moves FD's bytes (ssl.c): CH is framed on its
 * plaintext from here on, its processor starting over; or it goes dark if
 * ciphertext was already framed.  Channel locked.  1: read on plaintext.
 */
BT_HIDDEN int bt_chan_tls_start(struct bt_chan *ch, int fd, const void *ssl);
/* Ciphertext moved on CH outside the SSL_* calls the shim sees: 1 when
 * CH is read as it comes again (nothing counted since binding), 0 when it
 * stays bound.  Takes the channel's lock. */
BT_HIDDEN int bt_chan_tls_unseen(struct bt_chan *ch, int fd);

/* ---- channel objects (chan.c) ---- */
/* New channel object, zeroed, refs = 0, mutex ready. */
BT_HIDDEN struct bt_chan *bt_chan_new(void);
BT_HIDDEN void bt_chan_get(struct bt_chan *ch);
/* Drop a reference; on the last one the processor is finished and the
 * object recycled. */
BT_HIDDEN void bt_chan_put(struct bt_chan *ch);
/* Re-initialise the pool lock and every channel mutex (forked child). */
BT_HIDDEN void bt_chan_pool_atfork_child(void);

/*
 * The channel for FD, classifying an fd never seen before (inherited or
 * made by libc internally) on first use.  NULL: nothing to trace.
 */
BT_HIDDEN struct bt_chan *bt_chan_of(int fd);

#endif /* BT_CHAN_H */
