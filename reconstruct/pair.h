/*
 * pair.h - pass 1's pairing of channel ends into connections.
 *
 * Every CHAN record pass 1 reads is handed to rc_pair_add, which names
 * the end by what both sides of one connection log: TCP and UDP ends by
 * their address tuple (loopback tuples only within a host), unix sockets
 * by the inode of the connecting socket, pipes by inode.  Once the clock
 * domains are known, rc_pair_all sorts the ends by (class, key, time,
 * index) - in memory, or in sorted runs in a temporary file merged back
 * (an external sort) - and pairs each group of one key: fresh ends in
 * time order (the nearest within a window when some are untraced), ends
 * announced again (inherited across exec) joining the end they were.
 * The result is C->entries: per CHAN record its connection, a peer entry
 * and the connection's counts per side, and for a connection one side of
 * which no log has, whether that side is expected: traced programs
 * accepted on the address it connected to, or made at least half of the
 * connections to the address it accepted on, or it connected to a new
 * address (rc_options.pending_new_ns).
 */
#ifndef RC_PAIR_H
#define RC_PAIR_H

#include "rc.h"

struct rc_pair_end;

/* The ends collected so far (zeroed to start). */
struct rc_pair {
	struct rc_pair_end *v;   /* the run being filled */
	uint32_t      n, cap;    /* in v */
	uint32_t      total;     /* CHAN records so far: the next entry index */
	uint32_t      nruns;     /* full runs written to f */
	int           retain;    /* rc_pair_all keeps the ends, to pair
				    them again with more (scan.c) */
	struct rc_spill f;       /* the runs, once there is more than one */
	/* per listening address (pair.c, listen_key), the traced ends
	 * accepted on it [0] and connected to it [1]: the peers expected
	 * (rc_conninfo) */
	struct rc_map listen[2];
	/* and the earliest time of a traced connection to it */
	struct rc_map first;
	uint32_t      run;       /* ends a run holds (rc_options.pair_run) */
	/* the first `sorted` runs of f are sorted as rc_pair_all left them,
	 * by the times of the clock domains' deltas and the images' domains
	 * it saw (sdelta, simg): paired again with the same, they are not
	 * sorted again, nor their first times (first) looked at */
	uint32_t      sorted;
	int64_t      *sdelta;
	uint32_t     *simg;
	uint32_t      nsdelta, nsimg;
};

/* Add CHAN record EV of image IMAGE as entry PR->total.  0, -ENOMEM, or
 * an RC_EXIT_* code with the error recorded (rc_fail). */
int rc_pair_add(struct rc_ctx *c, struct rc_pair *pr, uint32_t image,
		const struct bt_event *ev);
/* Pair every end added (the images' clock domains must be known): fills
 * C->nentries, C->nconns and the entries' temporary file C->ent_spill
 * (unmapped at the end; read with rc_scan_entry).  0 or as above. */
int rc_pair_all(struct rc_ctx *c, struct rc_pair *pr);
/*
 * The host whose channels have local address A (an IP address; the port
 * is not looked at): 0 none pass 1 saw, RC_HOST_MANY more than one, else
 * the host's index + 1.  Loopback and unix addresses are the asking
 * end's own host (HOST).
 */
#define RC_HOST_MANY UINT32_MAX
uint32_t rc_pair_host_of(const struct rc_ctx *c, uint32_t host,
			 const struct bt_addr *a);
/* Free what pass 1 kept of the hosts for peer_gap (msg.c): their
 * addresses (c->host_ip) and which have a gap (c->host_gap). */
void rc_pair_hosts_free(struct rc_ctx *c);
/* Free what PR holds. */
void rc_pair_free(struct rc_pair *pr);

#endif /* RC_PAIR_H */
