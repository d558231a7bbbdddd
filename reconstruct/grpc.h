/*
 * grpc.h - the gRPC methods the user names as unary (--grpc-unary,
 * --grpc-proto): docs/reconstruct.md, "Unary gRPC methods".
 *
 * A call of a unary method hands its handler one request message: the
 * handler cannot start before that message was received whole.  Until the
 * server has read a frame of the call's body, the call cannot own what
 * its process sends, so it is no candidate owner of a handler's call.
 * The declaration is the user's word: a method named unary that streams
 * can have its calls' work given to another call.
 */
#ifndef RC_GRPC_H
#define RC_GRPC_H

#include <stddef.h>

/*
 * Read the .proto file PATH: its package and every service's rpc
 * declarations.  Appends "/PACKAGE.SERVICE/METHOD" (malloc'ed) to *LIST
 * (*N entries, grown with realloc) for each method neither of whose sides
 * is "stream"; *NALL gets the number of rpc declarations read.  Returns
 * the number of unary methods appended, or -errno (-EINVAL: not a .proto
 * this reader understands, with the file, line and why in ERR).
 */
int rc_grpc_proto_read(const char *path, char ***list, int *n, int *nall,
		       char *err, size_t errn);

/* The same for the text S (N bytes) named NAME in messages. */
int rc_grpc_proto_parse(const char *name, const char *s, size_t n,
			char ***list, int *n_list, int *nall,
			char *err, size_t errn);

/* Is PATTERN a method pattern --grpc-unary takes ("/..." : a gRPC path,
 * shell wildcards allowed)?  0, or -EINVAL with why in ERR. */
int rc_grpc_pattern_check(const char *pattern, char *err, size_t errn);

/* Does gRPC path TARGET match one of the N patterns in PATS (fnmatch)? */
int rc_grpc_unary_match(const char *const *pats, int n, const char *target);

#endif /* RC_GRPC_H */
