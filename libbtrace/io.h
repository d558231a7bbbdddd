/*
 * io.h - the read and write families' interface to the other modules
 * (in.c, out.c, msg.c).  Each function is named for the file that defines
 * it: bt_msg_* in msg.c, bt_out_* in out.c.
 */
#ifndef BT_IO_H
#define BT_IO_H

#include "fdtab.h"

/* ---- I/O and isolation (in.c, out.c, msg.c) ---------------------------- */

/* Direction ended (read returned 0, shutdown, close): tell the processor. */
BT_HIDDEN void bt_msg_eof(struct bt_chan *ch, int fd, int dir);
/* Account and process N bytes written to FD (iov form). */
BT_HIDDEN void bt_out_iov(struct bt_chan *ch, int fd, const struct iovec *iov,
			  int iovcnt, size_t n, int dgram);
/* A channel's buffered-input state changed: readiness bookkeeping. */
BT_HIDDEN void bt_msg_ready_changed(struct bt_chan *ch);
/* Is FD's channel dark (or FD BT_FD_DARK)? */
static inline int bt_fd_dark(uintptr_t w)
{
	return w == BT_FD_DARK ||
	       (BT_FD_IS_CHAN(w) && ((struct bt_chan *)w)->dark);
}

/* A write made while the thread was inside the shim (a signal handler)
 * passed straight through: count its N bytes on FD so offsets stay exact. */
BT_HIDDEN void bt_out_nested(int fd, ssize_t n);
/* Write the records of the handler's writes bt_out_nested kept, now that
 * the wrapper they interrupted has left (bt_leave_slow). */
BT_HIDDEN void bt_out_stash_flush(void);

/* A TLS library's plaintext (tls.c): the read (in.c), see there. */
struct bt_tls_lib;
BT_HIDDEN ssize_t bt_in_tls(struct bt_chan *ch, int fd,
			    const struct bt_tls_lib *lib, void *ssl, int ex,
			    void *buf, size_t len, int peek, int *tls_ret,
			    int *faked);
/* ... and the write (out.c): begin before the library's call, done after
 * it with the N plaintext bytes it wrote; unseen for bytes the processor cannot see. */
BT_HIDDEN void bt_out_tls_begin(int fd);
BT_HIDDEN void bt_out_tls_done(int fd, const void *buf, ssize_t n);
BT_HIDDEN void bt_out_tls_unseen(int fd, ssize_t n);

#endif /* BT_IO_H */
