/*
 * span.h - spans and requests.
 *
 * A span is one message exchange a process took part in: RC_SK_SERVER when
 * it received a request, RC_SK_CLIENT when it sent one.  A request exists
 * as its root span: its row is written when the root is finished, so the
 * only per-request state is the open root (and the open spans under it).
 * Spans come from a free list; their strings are their own.
 */
#ifndef RC_SPAN_H
#define RC_SPAN_H

#include "rc.h"

enum rc_span_kind { RC_SK_SERVER = 1, RC_SK_CLIENT = 2 };

/* How sure the reconstructor is of a span's request (docs/schema.md). */
enum rc_certainty { RC_CT_EXACT = 0, RC_CT_RESOLVED = 1, RC_CT_UNCERTAIN = 2 };

/* Why a server span is parked (docs/reconstruct.md, "Certainty"). */
enum rc_park { RC_PARK_NONE = 0, RC_PARK_WAIT, RC_PARK_READAHEAD,
	       RC_PARK_BATCHED };

struct rc_span {
	struct rc_span *next;    /* in an end's open list, or the free list */
	uint64_t id, req, parent;
	int64_t  start, end;     /* end RC_DB_NULL while open */
	int64_t  status;
	uint64_t witness;
	uint64_t off;            /* the request's offset on its channel */
	uint64_t process_id, channel_id;
	uint32_t dom, host, pid, tid;
	uint8_t  kind, proto, is_root, client_root, has_witness;
	uint8_t  pending;        /* opened at its request's MSG_BEGIN: named
				    and written only at that request's MSG */
	uint8_t  certainty;      /* enum rc_certainty */
	uint8_t  parked;         /* server: enum rc_park */
	uint8_t  srv_listed;     /* server: open, found by rc_span_srv */
	uint8_t  answering;      /* server: its reply has begun */
	uint8_t  park_defer;     /* server: parked once its channel stops
				    waiting to be writable (park.c) */
	uint8_t  call;           /* client: counted in its parent's ncalls */
	uint8_t  tok_partial;    /* server: its request's target does not
				    show all it carried (tokens.c) */
	uint8_t  tok_body;       /* server: its target is whole but for a
				    body whose values may come later
				    (HTTP/2: a gRPC message, body_params) */
	uint8_t  unowned;        /* client: sent by a fragment whose request
				    was answered here, or for none, while
				    other requests were open (tokens.c) */
	uint8_t  inherited;      /* client: sent by a thread that read no
				    input since it was created: its request
				    is its creator's (rule 3), which a pool
				    thread's work need not be (span.c) */
	uint8_t  unary;          /* server: a call of a gRPC method the
				    user named unary (grpc.h) */
	uint8_t  body_seen;      /* server: a frame of its request's body
				    was read after its header block */
	uint32_t ncalls;         /* server: calls its process made for it
				    that await their reply */
	uint32_t caller;         /* server: the thread of its process that
				    made its calls (0: none yet) */
	uint8_t  many_callers;   /* server: calls made by more than one
				    thread (1) */
	const char *reason;      /* certainty_reason (a static string) */
	const char *exe;         /* owned by the image (lives to the end) */
	char    *name, *target, *method, *peer, *client;
	char    *body_params;    /* server: the values of its request's
				    body (BT_AK_PARAMS of an HTTP/2 frame
				    that ended it), complete */
};

int  rc_span_init(struct rc_ctx *c);
/* Free the free list (open spans belong to their owners). */
void rc_span_free(struct rc_ctx *c);

/*
 * A new open span of KIND and protocol PROTO in request REQ (0: none)
 * under PARENT (0: none), taken part in by thread TID of image IM at time
 * T over channel end CHANNEL_ID (0: none).  NULL when out of memory.
 */
struct rc_span *rc_span_new(struct rc_ctx *c, uint8_t kind, uint8_t proto,
			    uint64_t req, uint64_t parent,
			    const struct rc_image *im, uint32_t tid, int64_t t,
			    uint64_t channel_id);
/* Make SP the root of a new request (rule 4, or rule 5: CLIENT_ROOT). */
void rc_span_root(struct rc_ctx *c, struct rc_span *sp, int client_root);
/* Forget SP unwritten (unlinked from the list at HEAD if it is there, its
 * request too if it is a root): it was opened for a message that turned
 * out not to be a request. */
void rc_span_discard(struct rc_ctx *c, struct rc_span **head,
		     struct rc_span *sp);
/*
 * Is D's request still going on?  A request a traced client started ends
 * with its root span (rule 5): after that its designation starts anew.
 */
int  rc_span_live(struct rc_ctx *c, const struct rc_desig *d);
/* Name, target and method from SP's request message EV; a server span
 * of a gRPC method named unary (C's options) is marked so. */
void rc_span_label(struct rc_ctx *c, struct rc_span *sp,
		   const struct bt_event *ev);
/*
 * The unary rule (grpc.h, docs/reconstruct.md "Unary gRPC methods") is
 * applied to the candidates of the request message being sent when ON:
 * the caller opens it only while every record of the sending process
 * older than the message has been applied and no record was lost, and
 * closes it after rc_tok_resolve and rc_span_sent.
 */
void rc_span_unary_gate(struct rc_ctx *c, int on);
/* Write SP (and its request, if it is a root) and free it. */
void rc_span_finish(struct rc_ctx *c, struct rc_span *sp);

/* Append SP to the list at *HEAD (oldest first). */
/* Queue SP, whose request is at offset OFF of its channel, among the open
 * exchanges of HEAD in offset order: replies answer requests in the order
 * they went on the wire, whatever the order their senders' records were
 * merged in (several threads share a pooled connection). */
void rc_span_push(struct rc_span **head, struct rc_span *sp, uint64_t off);
/* Unlink and return the exchange reply EV answers: the one with its
 * witness, else the oldest (NULL if none, or if the witness matches none
 * of the exchanges that have one). */
struct rc_span *rc_span_match(struct rc_span **head, const struct bt_event *ev);

/* The open exchange in HEAD with witness W (left in the list), or NULL. */
struct rc_span *rc_span_witness(struct rc_span *head, uint64_t w);

/*
 * The parked detector (docs/reconstruct.md, "Certainty").  Open server
 * spans are found by id (rc_span_srv: NULL if SPAN is none, or ended).
 * rc_span_park: SP's fragment ended without answering it, without a call
 * of its own awaiting a reply, and no thread of its process works for it
 * (WHY: enum rc_park); rc_span_unpark: it is answered, ended, or a thread
 * works for it again.  rc_span_unpark_req: the same for the spans of
 * request REQ parked in process (HOST, PID).
 */
struct rc_span *rc_span_srv(struct rc_ctx *c, uint64_t span);
/* The last span id given (ids are never given twice). */
uint64_t rc_span_last_id(const struct rc_ctx *c);
/* rc_span_srv through a one-entry cache (*ID, *SP) its caller keeps (a
 * thread's: park.c looks at every thread of a process per request
 * message sent).  Ids are never given twice and a span's memory is kept
 * until the run ends, so a cached span whose id is still SPAN and which
 * is still listed is the one the map holds; a cached NULL stays right
 * (a span once gone never comes back). */
struct rc_span *rc_span_srv_fill(struct rc_ctx *c, uint64_t span,
				 uint64_t *id, struct rc_span **sp);
static inline struct rc_span *rc_span_srv_cached(struct rc_ctx *c,
		uint64_t span, uint64_t *id, struct rc_span **sp)
{
	if (span && *id == span) {
		struct rc_span *s = *sp;
		if (!s || (s->id == span && s->srv_listed))
			return s;
		if (s->id == span) {     /* gone since: never again */
			*sp = NULL;
			return NULL;
		}
	}
	return rc_span_srv_fill(c, span, id, sp);
}
void rc_span_park(struct rc_ctx *c, struct rc_span *sp, uint8_t why);
void rc_span_unpark(struct rc_ctx *c, struct rc_span *sp);
void rc_span_unpark_req(struct rc_ctx *c, uint32_t host, uint32_t pid,
			uint64_t req);
/*
 * The server spans parked now in process (HOST, PID) other than those of
 * request REQ, at most MAX of them into OUT; returns how many there are
 * (more than MAX when they did not all fit).
 */
uint32_t rc_span_parked_in(struct rc_ctx *c, uint32_t host, uint32_t pid,
			   uint64_t req, struct rc_span **out, uint32_t max);
/* The same for every open server span of a request in that process
 * (the map's order: the caller must not depend on it). */
uint32_t rc_span_open_in(struct rc_ctx *c, uint32_t host, uint32_t pid,
			 uint64_t req, struct rc_span **out, uint32_t max);
/*
 * Could open server span Q own a request message its process sends from
 * a fragment whose request is answered (or none)?  Its request was read
 * whole, is not being answered, no call it made awaits a reply, and it
 * is not a call of a unary method whose body has not come (while the
 * unary gate is open).
 */
int rc_span_may_own(const struct rc_ctx *c, const struct rc_span *q);
/* The open server spans of process (HOST, PID) other than those of REQ
 * that may own such a message (rc_span_may_own), as rc_span_open_in. */
uint32_t rc_span_owners_in(struct rc_ctx *c, uint32_t host, uint32_t pid,
			   uint64_t req, struct rc_span **out, uint32_t max);
/* The open root span of request REQ (NULL: none, or it has ended). */
struct rc_span *rc_span_root_of(struct rc_ctx *c, uint64_t req);
/* Are request REQ's per-event rows (and its exact spans but the root:
 * rc_span_finish) left out (rc_options.rows_from_ns)?  Judged by its
 * root's start, while the root is open and after it ended (a bit per
 * request); counts the rows it leaves out and keeps the latest such
 * root's start per clock domain (rc_domain.skip_max: the stats give it
 * corrected). */
int rc_span_rows_skip(struct rc_ctx *c, uint64_t req);
/* Is a row whose last moment is T (provisional time of clock domain
 * DOM) before rc_options.rows_from_ns, so left out?  Counted and kept as
 * rc_span_rows_skip does. */
int rc_rows_skip_at(struct rc_ctx *c, uint32_t dom, int64_t t);
/* The rows of request REQ to be written now, as rc_span_rows_skip: 1
 * when they are left out; 0 when they are to be written, and then, with
 * rc_options.row_keys, they are spooled after a key saying by what a
 * later rows_from_ns leaves them out, and rc_rows_end closes them (the
 * root's start while it is open, else the request, whose row then came
 * first; db_rows.c).  rc_rows_begin_at: the same for a channel's row
 * (rc_rows_skip_at). */
int rc_rows_begin(struct rc_ctx *c, uint64_t req);
int rc_rows_begin_at(struct rc_ctx *c, uint32_t dom, int64_t t);
void rc_rows_end(struct rc_ctx *c);
/* The replay's judgement of a group of rows, or of a request's row (its
 * root's start, as when the root ended): rc_rows_skip_at's, but not
 * counted. */
int rc_rows_judge(struct rc_ctx *c, uint32_t dom, int64_t t);
/* rc_rows_judge's answer without keeping anything (the replay's first
 * look at the spool, db_rows.c: "requests no row names"). */
int rc_rows_before(struct rc_ctx *c, uint32_t dom, int64_t t);
/* SP, the root of a request a traced client started (rule 5), turns out
 * to be work of another request: its own request is forgotten. */
void rc_span_unroot(struct rc_ctx *c, struct rc_span *sp);
/* Spans parked now, in all processes (0: the detector costs nothing). */
uint32_t rc_span_nparked(const struct rc_ctx *c);
/*
 * Client span SP (a request message just sent) was made by a process in
 * which other requests are parked: its request is ambiguous.  SP keeps
 * its request but is marked uncertain ('ambiguous:parked'), and every
 * parked candidate is recorded (span_candidates) and made uncertain with
 * the reason it was parked for.  When SP is unowned (its fragment's
 * request was answered here, or is none), every open request that may
 * own it (rc_span_may_own) is a candidate too ('ambiguous:answered' when
 * it is not parked).  Also counts SP among its parent server span's
 * calls awaiting a reply, and notes the thread that made it.
 */
void rc_span_sent(struct rc_ctx *c, struct rc_span *sp);
/*
 * A file was opened in process (HOST, PID), whose image runs without
 * event isolation, by a fragment working for REQ (0: none) while requests
 * are parked there (read in a batch with another: RC_PARK_BATCHED, or
 * any other reason): the open may be theirs.  Each is recorded as a
 * candidate (span_candidates, span_id NULL, the reason it was parked
 * for) and REQ as the chosen one ('ambiguous:batched').  Returns how
 * many candidates other than REQ.
 */
uint32_t rc_span_file_sent(struct rc_ctx *c, uint32_t host, uint32_t pid,
			   uint64_t req);

/* The status a message reports: HTTP status, DNS rcode (0 is NOERROR);
 * RC_DB_NULL when it has none. */
int64_t rc_msg_status(const struct bt_event *ev);
/* "http", "postgresql", ... for a protocol id. */
const char *rc_proto_name(unsigned proto);
/* The first attribute KEY of EV, or NULL. */
const struct bt_attr *rc_attr(const struct bt_event *ev, unsigned key);
/* A NUL-terminated copy of N bytes at S (NULL when out of memory). */
char *rc_strndup(const char *s, size_t n);

#endif /* RC_SPAN_H */
