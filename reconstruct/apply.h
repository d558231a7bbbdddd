/*
 * apply.h - the record being applied, shared by the files of the model
 * (model.c, lineage.c, msg.c, park.c): not an interface of the library.
 */
#ifndef RC_APPLY_H
#define RC_APPLY_H

#include "rc.h"

#include "chan.h"
#include "map.h"
#include "span.h"

/* The model's own state (model.c). */
struct rc_model {
	struct rc_map snaps;     /* lineage key -> rc_snap list */
	uint64_t next_msg, next_frag, next_file, next_process;
};

/* One record being applied. */
struct ap {
	struct rc_ctx    *c;
	struct rc_model  *m;
	struct rc_run *s;
	struct rc_thr    *th;
	struct rc_image  *im;
	const struct bt_event *ev;
	int64_t t;
	int64_t rt;              /* the record's own time (fd table) */
	int merged;              /* a READY that continues the fragment */
};

/* A new span taken part in by the current thread over end E. */
static inline struct rc_span *rc_ap_span_new(struct ap *a, uint8_t kind, uint8_t proto,
				uint64_t req, uint64_t parent,
				const struct rc_end *e)
{
	return rc_span_new(a->c, kind, proto, req, parent, a->im, a->th->tid,
			   a->t, e ? e->channel_id : 0);
}

/* The fragments of work (model.c).  rc_frag_close: the thread's current
 * fragment ends (its row written, its request maybe left parked).
 * rc_frag_open: one starts, by TRIGGER on FD of CHANNEL.  rc_frag_input:
 * an input record on E at OFF (BEGUN: a MSG_BEGIN came first) continues
 * the current fragment or starts one. */
void rc_frag_close(struct ap *a);
void rc_frag_open(struct ap *a, uint8_t trigger, int32_t fd,
		  uint64_t channel);
void rc_frag_input(struct ap *a, struct rc_end *e, uint8_t trigger,
		   uint64_t off, int begun);
/* The work of the thread's current fragment is not all known (events
 * lost, a descriptor no channel record announced): the request it works
 * for, if its server span here is still open, is uncertain for REASON
 * (model.c).  1 if a span was marked. */
int  rc_frag_uncertain(struct ap *a, const char *reason);
/* The thread's input is not known (WHY: a gap in its records, a read on
 * an fd no record announced): a fragment of no request starts, by
 * TRIGGER on FD, and a request it starts is uncertain for WHY (msg.c,
 * rule 5) (model.c). */
void rc_frag_unknown(struct ap *a, uint8_t trigger, int32_t fd,
		     const char *why);
/* The thread's name lookups still open end (model.c). */
void rc_lookups_close(struct ap *a);
/* A signal handler's fragment ends, the one it interrupted is back
 * (SIGNAL end, or a loss or end first; no-op outside a handler). */
void rc_sig_end(struct ap *a);

#endif /* RC_APPLY_H */
