/*
 * follow.h - bp-reconstruct --follow: the paths written while the logs
 * grow (docs/reconstruct.md, "Live: --follow").
 *
 * Each pass reconstructs the logs read so far into a pass database next
 * to the output (the offline reconstruction, unchanged), then writes into
 * the output every request that is final: complete (its root answered),
 * every span ended, and its end older than the grace period.  A request
 * is known across passes by a key of its root span (host, process,
 * thread, and the monotonic time of its first event, which no clock
 * estimate moves), so it is written once; if a later pass finds it with
 * other spans (a late span, a revised attribution), its rows are replaced
 * in place under the same request_id.  The output is in WAL mode and
 * never renamed: readers may open it at any time.  Its own ids are kept in
 * tables follow_requests and follow_ids, so a restart goes on where the
 * last run stopped.
 */
#ifndef RC_FOLLOW_H
#define RC_FOLLOW_H

#include "recon.h"

struct otlp_push_opts;
struct ch_opts;

struct rc_follow_opts {
	const struct rc_options *rc; /* inputs, output, reference, ... */
	double interval;             /* seconds between passes */
	double grace;                /* seconds a final request waits */
	/* seconds a pass expects records that may be late: a peer no log
	 * has is "peer-not-logged" (rc_options.pending_ns), and a request
	 * so uncertain or "unlogged-send" waits for the sinks */
	double hold;
	/* seconds of requests (by their start, before the newest) a pass
	 * looks at, besides those not yet written (docs/reconstruct.md) */
	double window;
	/* the least seconds between two full passes, and the least multiple
	 * of the last one's duration (0: none) */
	double full, full_share;
	/* push each request to an OTLP receiver once a later pass found it
	 * unchanged (NULL: no push) */
	const struct otlp_push_opts *push;
	/* the same into ClickHouse (NULL: not), the tables of the whole
	 * run at the last pass */
	const struct ch_opts *ch;
};

/*
 * rc_follow - follow O->rc->inputs into O->rc->output until SIGINT or
 * SIGTERM, then make a last pass that writes every request (also the
 * incomplete ones, as the offline run does) and return an enum rc_exit
 * (RC_EXIT_PUSH when requests were left unpushed or in part).
 */
int rc_follow(const struct rc_follow_opts *o);

#endif /* RC_FOLLOW_H */
