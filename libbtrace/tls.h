/*
 * tls.h - what the TLS libraries' wrappers share (tls.c): the session
 * table, a channel bound to a session and read on its plaintext, the
 * descriptor learned from a handshake, the read, write and handshake
 * paths.  ssl.c (OpenSSL) and gnutls.c (GnuTLS) describe their library in
 * a struct bt_tls_lib and call these.
 */
#ifndef BT_TLS_H
#define BT_TLS_H

#include <sys/types.h>

#include "core.h"

/* One TLS library: sessions are opaque pointers, unique across libraries
 * (both are heap addresses). */
struct bt_tls_lib {
	/* The library's plaintext read of S: bytes (> 0), 0 at its end of
	 * stream, else -1; *RET what the call returned (PEEK, EX: OpenSSL's
	 * SSL_peek and SSL_read_ex, 0 for a library without them). */
	ssize_t (*read)(void *s, void *buf, size_t len, int peek, int ex,
			int *ret);
	/* Has the library plaintext or records of S buffered? */
	int (*buffered)(void *s);
	/* S's descriptor for reading (WR 0) or writing as the library tells
	 * it, -1 none or unknown; errno preserved. */
	int (*fd)(const void *s, int wr);
};

/*
 * Bind *SLOT to the real NAME: the next definition after the shim, else
 * the one in SONAME if some library loaded it RTLD_LOCAL (RTLD_NEXT only
 * searches the global scope).  NULL if neither has it.
 */
BT_HIDDEN void *bt_tls_bind(void **slot, const char *name, const char *soname);
/* The same for a function the shim does not wrap, kept in *SLOT. */
BT_HIDDEN void *bt_tls_sym(void **slot, const char *name, const char *soname);
/* The real NAME (a member of bt_real) of the library SONAME, bound on
 * first use. */
#define BT_TLS_REAL(soname, name) \
	({ __typeof__(bt_real.name) f_ = \
		   __atomic_load_n(&bt_real.name, __ATOMIC_RELAXED); \
	   if (__builtin_expect(!f_, 0)) \
		   f_ = (__typeof__(f_))bt_tls_bind((void **)&bt_real.name, \
						    #name, soname); \
	   f_; })

/* A remembered session's kind: its descriptor was learned from the
 * transport I/O of its handshake (no fake EAGAIN then); it moves its
 * ciphertext through the program's own functions (GnuTLS push/pull), so
 * the library's descriptor, if any, is not asked.  Both stay remembered. */
#define BT_TLS_LEARNT 1u
#define BT_TLS_CUSTOM 2u

/* Remember S's descriptors RFD and WFD (-1 none) with FLAGS. */
BT_HIDDEN void bt_tls_put(const void *s, int rfd, int wfd, unsigned flags);
/* Forget S (bound again, cleared, freed). */
BT_HIDDEN void bt_tls_forget(const void *s);
/* S's BT_TLS_* flags, 0 when not remembered. */
BT_HIDDEN unsigned bt_tls_flags(const void *s);
/* S's descriptor for reading (WR 0) or writing, -1 none; asked of LIB on
 * a miss. */
BT_HIDDEN int bt_tls_fd(const struct bt_tls_lib *lib, const void *s, int wr);
/*
 * The channel S's descriptor for reading (WR 0) or writing is, bound to
 * S and read on its plaintext; NULL when there is none (no descriptor, no
 * channel, dark, paused, not a stream).  *FD its descriptor.  Inside
 * bt_enter.
 */
BT_HIDDEN struct bt_chan *bt_tls_chan(const struct bt_tls_lib *lib,
				      const void *s, int wr, int *fd);
/* After a binding call on S: forgotten, its descriptors looked up again
 * and their channels bound now.  errno preserved. */
BT_HIDDEN void bt_tls_bound(const struct bt_tls_lib *lib, const void *s);
/* The plaintext the shim holds of S's channel (taken from the library,
 * not handed over yet). */
BT_HIDDEN size_t bt_tls_held(const struct bt_tls_lib *lib, const void *s);

/*
 * A plaintext read of S, framed and isolated when S's channel is bound:
 * bytes handed over (> 0), or 0 / -1 with *RET the library's return.
 * *FAKE: -1 is the EAGAIN-once (errno as on entry): the caller returns its
 * library's "try again".  Never faked for a descriptor learned from the
 * handshake (a program's own transport).
 */
BT_HIDDEN ssize_t bt_tls_read(const struct bt_tls_lib *lib, void *s, void *buf,
			      size_t len, int peek, int ex, int *ret,
			      int *fake);
/* A library call made for the shim's wrappers: returns plaintext bytes
 * moved (> 0) or <= 0; its own return value kept in CTX. */
typedef ssize_t (*bt_tls_call)(void *ctx);
/*
 * A plaintext write of S: CALL writes LEN bytes from BUF; the bytes it
 * says it wrote are framed on S's channel (UNSEEN: a file's bytes the
 * processor cannot see, SSL_sendfile, counted as lost sync).
 */
BT_HIDDEN void bt_tls_write(const struct bt_tls_lib *lib, void *s,
			    const void *buf, size_t len, bt_tls_call call,
			    void *ctx, int unseen);
/*
 * A handshake of S by CALL: S's descriptors are bound before the first
 * ciphertext moves; when none is known (a transport of the program's own)
 * the first socket the handshake moves ciphertext on is learned.
 */
BT_HIDDEN void bt_tls_handshake(const struct bt_tls_lib *lib, void *s,
				bt_tls_call call, void *ctx);

/* The session whose handshake runs in this thread with no descriptor
 * known yet: the socket a nested read or write moves bytes on is its
 * transport, bt_tls_learn(fd) binds it (in.c, out.c). */
BT_HIDDEN extern BT_TLS const void *bt_tls_cur;
BT_HIDDEN void bt_tls_learn(int fd);
/* This thread runs a TLS library call the shim wrapped: the ciphertext it
 * moves outside the shim's nesting is expected (else
 * bt_chan_tls_unseen). */
BT_HIDDEN extern BT_TLS int bt_tls_inside;

#endif /* BT_TLS_H */
