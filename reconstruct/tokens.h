/*
 * tokens.h - resolving an ambiguous request message by what it carries
 * (docs/reconstruct.md, "Certainty", "Content").
 *
 * A request message sent while other requests are parked in its process
 * may be any of theirs (span.c, rc_span_sent).  Its distinctive values
 * (SQL literals, URL path segments and query values, as 64-bit hashes)
 * are compared with what each candidate request received in that process
 * (its server span's target): when exactly one candidate's inbound
 * message shares a value with it that no other candidate's carries, and
 * no other value points elsewhere, the message is that request's
 * ('resolved', 'handoff:content').
 */
#ifndef RC_TOKENS_H
#define RC_TOKENS_H

#include "rc.h"

struct rc_span;

/* Forget what the positions of message shapes were seen to carry. */
void rc_tok_free(struct rc_ctx *c);

/*
 * Is what inbound request message EV carried fully in its span's target?
 * 0 when a body, a cut target or a cut query string hides values the
 * target does not show (the span cannot be told apart by content).
 */
int rc_tok_inbound_whole(const struct bt_event *ev);

/* Pass 1: note which positions of outbound request message EV's shape
 * carry which values, so that pass 2 knows them from its first message. */
void rc_tok_learn(struct rc_ctx *c, const struct bt_event *ev);

/* Server span SP is finished (written): remembered for a while if it
 * ended with its reply. */
void rc_tok_server_done(struct rc_ctx *c, const struct rc_span *sp);

/*
 * Client span SP was just opened for request message EV (BEGUN: it took
 * several calls and its first bytes were already applied).  Learns which
 * positions of EV's shape carry varying values and, when requests are
 * parked in SP's process or SP is unowned (sent for a request answered
 * there, or for none, while others are open: SP->unowned is set, for
 * rc_span_sent), tries to resolve SP by content: on success SP
 * is moved to the one candidate (its request, its parent span) and
 * labelled 'resolved', 'handoff:content', and 1 is returned; else 0 and
 * SP is left as it was (rc_span_sent marks it).
 */
int rc_tok_resolve(struct rc_ctx *c, struct rc_span *sp,
		   const struct bt_event *ev, int begun);

/*
 * The values of target S (N bytes) of a protocol PROTO message (hashes
 * into OUT, at most MAX); -1 when the target hides values or PROTO has
 * none.  For the fuzz target and tests.
 */
int rc_tok_values(unsigned proto, const char *s, size_t n, uint64_t *out,
		  unsigned max);

/* The hashes of a bound-parameters attribute S (N bytes) into OUT, at
 * most MAX; how many.  For the fuzz target. */
int rc_tok_param_values(const char *s, size_t n, uint64_t *out, unsigned max);

#endif /* RC_TOKENS_H */
