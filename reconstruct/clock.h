/*
 * clock.h - clock domains (pass 1) and the offsets between them, from
 * paired messages (pass 2).
 *
 * During the merge every domain's monotonic time is mapped to Unix time by
 * its own realtime - monotonic difference (provisional).  Each message
 * whose sender and receiver are in different domains then bounds the
 * error of that mapping: with c_X the correction to add to domain X's
 * provisional times, a message sent at s (domain A) and received at r
 * (domain B) says  c_B - c_A >= s - r.  Messages in both directions bound
 * c_B - c_A from both sides, as NTP does with its minimum one-way delays;
 * the estimate is the middle of the interval.  Domains of one host share
 * CLOCK_REALTIME, so their provisional times already agree (c_B = c_A).
 *
 * rc_clock_solve builds a spanning tree from the reference domain over the
 * tightest intervals, then relaxes the tree's estimates until every
 * observed message constraint holds (Bellman-Ford on the difference
 * constraints), so no receive is ever placed before its send.
 */
#ifndef RC_CLOCK_H
#define RC_CLOCK_H

#include "rc.h"

/*
 * Pass 1: cluster the images of each host into clock domains by their
 * realtime - monotonic difference (a gap of more than a second starts a
 * new domain: a time namespace), each domain's delta the median of its
 * images'; give each image its domain (C->images[].domain), count the
 * domains' events and choose the reference (C->ref_dom: the host named by
 * --reference, else the domain with the most events).  0 or -ENOMEM.
 */
int  rc_clock_domains(struct rc_ctx *c);

/* Allocate the sample store for C->ndoms domains; 0 or -ENOMEM. */
int  rc_clock_init(struct rc_ctx *c);
void rc_clock_free(struct rc_ctx *c);

/* A message sent at provisional time S in domain FROM was received at R
 * in domain TO (FROM != TO). */
void rc_clock_sample(struct rc_ctx *c, uint32_t from, uint32_t to,
		     int64_t s, int64_t r);

/*
 * Estimate every domain's correction (C->doms[].corr, .off, .lo, .hi,
 * .samples, .method).  Warns when the constraints contradict each other.
 */
void rc_clock_solve(struct rc_ctx *c);

/* One line per domain on F ("clock: ..."), when there is more than one. */
void rc_clock_report(const struct rc_ctx *c, FILE *f);

#endif /* RC_CLOCK_H */
