/*
 * join.h - hosts reconstructed apart, then joined (docs/reconstruct.md,
 * "Hosts reconstructed apart").
 *
 * bp-reconstruct --host-local reconstructs one host's logs alone and adds
 * the table span_links: for every span that crossed to a host not in the
 * logs (a TCP channel whose peer end was not traced here), a key both
 * ends compute alone: the connection's addresses, client first, and the
 * byte offset of the request in the client-to-server direction.
 * bp-reconstruct --join then puts such databases together: a server span
 * that started a request of its own (its client was on another host) and
 * a client span of another database with the same key become parent and
 * child, their requests one, the clocks are related by the linked spans,
 * and certainty, patterns and views are made again over the whole.
 */
#ifndef RC_JOIN_H
#define RC_JOIN_H

#include <stddef.h>

/*
 * rc_links_write - make database DB (just written from one host's logs)
 * a host-local one: check it holds one host and add span_links.  Returns
 * 0, or an RC_EXIT_* code with a message in ERR (ERRLEN bytes).
 */
int rc_links_write(const char *db, char *err, size_t errlen);

struct rc_join_opts {
	const char *const *inputs;   /* host-local databases */
	int         ninputs;
	const char *output;          /* written to OUTPUT.tmp-PID, renamed */
	int         quiet;
};

/*
 * rc_join - join the host-local databases O->inputs into O->output (the
 * first input's host is the clock reference).  Prints a summary line on
 * stderr unless O->quiet.  Returns an RC_EXIT_* code; errors are printed.
 */
int rc_join(const struct rc_join_opts *o);

#endif /* RC_JOIN_H */
