/*
 * impl.h - the implementation of every wrapper of wrapped.def, declared
 * once: shim.c's exported one-liners call these, the modules define them,
 * the unit tests call them directly (no LD_PRELOAD).  Their parameters
 * are libc's, plus a flag where one implementation serves several names
 * (accept/accept4, dup2/dup3, pipe/pipe2, fork/vfork, fcntl/fcntl64 ...).
 */
#ifndef BT_IMPL_H
#define BT_IMPL_H

#include <netdb.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "core.h"

/* the read family (in.c), the write family (out.c) */
BT_HIDDEN ssize_t bt_read(int, void *, size_t);
BT_HIDDEN ssize_t bt_readv(int, const struct iovec *, int);
BT_HIDDEN ssize_t bt_recv(int, void *, size_t, int);
BT_HIDDEN ssize_t bt_recvfrom(int, void *, size_t, int, struct sockaddr *, socklen_t *);
BT_HIDDEN ssize_t bt_recvmsg(int, struct msghdr *, int);
BT_HIDDEN int bt_recvmmsg(int, struct mmsghdr *, unsigned int, int, struct timespec *);
BT_HIDDEN ssize_t bt_write(int, const void *, size_t);
BT_HIDDEN ssize_t bt_writev(int, const struct iovec *, int);
BT_HIDDEN ssize_t bt_send(int, const void *, size_t, int);
BT_HIDDEN ssize_t bt_sendto(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
BT_HIDDEN ssize_t bt_sendmsg(int, const struct msghdr *, int);
BT_HIDDEN int bt_sendmmsg(int, struct mmsghdr *, unsigned int, int);
BT_HIDDEN ssize_t bt_sendfile(int, int, off_t *, size_t);
BT_HIDDEN ssize_t bt_sendfile64(int, int, off64_t *, size_t);
BT_HIDDEN ssize_t bt_splice(int, off64_t *, int, off64_t *, size_t, unsigned int);
/* fdops.c */
BT_HIDDEN int bt_socket(int, int, int);
BT_HIDDEN int bt_socketpair(int, int, int, int[2]);
BT_HIDDEN int bt_accept4(int, struct sockaddr *, socklen_t *, int, int);
BT_HIDDEN int bt_connect(int, const struct sockaddr *, socklen_t);
BT_HIDDEN int bt_close(int);
BT_HIDDEN int bt_close_range(unsigned, unsigned, int);
BT_HIDDEN void bt_closefrom(int);
BT_HIDDEN int bt_fclose(FILE *);
BT_HIDDEN int bt_dup(int);
BT_HIDDEN int bt_dup3(int, int, int, int);
BT_HIDDEN int bt_fcntl(int, int, void *, int);
BT_HIDDEN int bt_pipe2(int[2], int, int);
BT_HIDDEN void bt_opened(int, const char *, int);
BT_HIDDEN int bt_shutdown(int, int);
/* epoll.c (the epoll family), poll.c (poll, select) */
BT_HIDDEN void bt_epoll_created(int);
BT_HIDDEN int bt_epoll_ctl(int, int, int, struct epoll_event *);
BT_HIDDEN int bt_epoll_wait(int, struct epoll_event *, int, int);
BT_HIDDEN int bt_epoll_pwait(int, struct epoll_event *, int, int, const sigset_t *);
BT_HIDDEN int bt_epoll_pwait2(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);
BT_HIDDEN int bt_poll(struct pollfd *, nfds_t, int);
BT_HIDDEN int bt_ppoll(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
BT_HIDDEN int bt_select(int, fd_set *, fd_set *, fd_set *, struct timeval *);
BT_HIDDEN int bt_pselect(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
/* proc.c */
BT_HIDDEN pid_t bt_fork(int);
BT_HIDDEN int bt_execve(const char *, char *const[], char *const[]);
BT_HIDDEN int bt_execvpe(const char *, char *const[], char *const[]);
BT_HIDDEN int bt_fexecve(int, char *const[], char *const[]);
BT_HIDDEN char **bt_environ(void);
BT_HIDDEN int bt_posix_spawn(pid_t *, const char *, const posix_spawn_file_actions_t *,
			     const posix_spawnattr_t *, char *const[], char *const[], int);
BT_HIDDEN int bt_pthread_create(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
/* names.c */
BT_HIDDEN int bt_getaddrinfo(const char *, const char *, const struct addrinfo *, struct addrinfo **);
BT_HIDDEN int bt_getnameinfo(const struct sockaddr *, socklen_t, char *, socklen_t, char *, socklen_t, int);
BT_HIDDEN struct hostent *bt_gethostbyname2(const char *, int, int);
BT_HIDDEN int bt_gethostbyname2_r(const char *, int, struct hostent *, char *, size_t,
				  struct hostent **, int *, int);
/* ssl.c: OpenSSL's plaintext calls (sessions and BIOs opaque) */
BT_HIDDEN int bt_ssl_read(void *, void *, int);
BT_HIDDEN int bt_ssl_read_ex(void *, void *, size_t, size_t *);
BT_HIDDEN int bt_ssl_peek(void *, void *, int);
BT_HIDDEN int bt_ssl_peek_ex(void *, void *, size_t, size_t *);
BT_HIDDEN int bt_ssl_write(void *, const void *, int);
BT_HIDDEN int bt_ssl_write_ex(void *, const void *, size_t, size_t *);
BT_HIDDEN ssize_t bt_ssl_sendfile(void *, int, off_t, size_t, int);
BT_HIDDEN int bt_ssl_set_fd(void *, int, int);       /* 0 fd, 1 rfd, 2 wfd */
BT_HIDDEN void bt_ssl_set_bio(void *, void *, void *, int); /* 0 both, 1 r, 2 w */
BT_HIDDEN int bt_ssl_handshake(void *, int);  /* 0 do_handshake, 1 connect, 2 accept */
BT_HIDDEN int bt_ssl_shutdown(void *);
BT_HIDDEN int bt_ssl_clear(void *);
BT_HIDDEN void bt_ssl_free(void *);
BT_HIDDEN int bt_ssl_pending(const void *);
BT_HIDDEN int bt_ssl_has_pending(const void *);
BT_HIDDEN int bt_ssl_get_error(const void *, int);
/* gnutls.c: GnuTLS's plaintext calls (sessions opaque) */
BT_HIDDEN ssize_t bt_gnutls_record_recv(void *, void *, size_t);
BT_HIDDEN ssize_t bt_gnutls_record_recv_seq(void *, void *, size_t, unsigned char *);
BT_HIDDEN size_t bt_gnutls_record_check_pending(void *);
BT_HIDDEN ssize_t bt_gnutls_record_send(void *, const void *, size_t);
BT_HIDDEN ssize_t bt_gnutls_record_send2(void *, const void *, size_t, size_t, unsigned);
BT_HIDDEN ssize_t bt_gnutls_record_send_range(void *, const void *, size_t, const void *);
BT_HIDDEN void bt_gnutls_transport_set_int2(void *, int, int);
BT_HIDDEN void bt_gnutls_transport_set_ptr2(void *, void *, void *, int); /* 0 _ptr, 1 _ptr2 */
BT_HIDDEN void bt_gnutls_transport_set_function(void *, void *, int); /* 0 push, 1 pull, 2 vec_push */
BT_HIDDEN int bt_gnutls_handshake(void *);
BT_HIDDEN int bt_gnutls_bye(void *, int);
BT_HIDDEN void bt_gnutls_deinit(void *);

#endif /* BT_IMPL_H */
