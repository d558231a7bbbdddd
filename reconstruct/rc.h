/*
 * rc.h - state shared by the passes of bp-reconstruct.
 *
 * The reconstructor runs in two passes over the same input (recon.c):
 *
 *   input.c   finds the segment files, indexes every valid block and groups
 *             the blocks into streams (one per traced thread slot); its
 *             cursor yields a stream's records in order, handling
 *             duplicates, gaps and damage identically in both passes.
 *   scan.c    pass 1: a cheap skim of every stream that collects the clock
 *             samples of each process image, the lineage records (fork,
 *             exec, spawn, thread creation) and every channel end (CHAN);
 *   clock.c   then makes the clock domains of the images,
 *   pair.c    and pairs the ends into connections (an external sort).
 *   merge.c   pass 2: walks all streams in causal order (merge.c) and
 *   model.c   applies the path rules to each record (model.c; messages
 *   msg.c     in msg.c, lineage in lineage.c, the parked detector in
 *   lineage.c park.c) over the
 *   park.c
 *   chan.c    processes, channel ends and connections (chan.c) and the
 *   span.c    spans and requests (span.c), writing rows as spans,
 *   db_rows.c messages and requests complete: spooled (db_rows.c) until
 *   clock.c   each clock domain's offset to the reference is estimated
 *             from the paired messages seen in pass 2 (clock.c);
 *   db.c      then the rows go into SQLite with corrected times, and the
 *             hosts, indexes, certainty and stats (db.c), the patterns
 *   patterns.c (patterns.c, pattern_norm.c) and the views (views.c).
 *   views.c
 *
 * spill.c keeps what would grow with the logs in temporary files (blocks,
 * images, streams, channel ends, rows); sql.c runs SQL text for db.c,
 * patterns.c and views.c.
 *
 * Everything here is owned by one struct rc_ctx; nothing is global.
 */
#ifndef RC_RC_H
#define RC_RC_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "btrace/event.h"
#include "btrace/segment.h"
#include "btrace/segread.h"
#include "map.h"
#include "recon.h"
#include "spill.h"

#define RC_NS       1000000000ll
#define RC_NONE     UINT32_MAX

/* ---- input: files, hosts, clock domains, images, blocks, streams ------ */

/* The segment files, their hosts (name and boot id) and their blocks are
 * the segment reader's (btrace/segread.h): struct bt_sr_file, bt_sr_host
 * and bt_sr_block, each block carrying its cut (what of it is new). */

/*
 * A clock domain: the process images of one host whose monotonic clocks
 * agree (a time namespace makes another domain on the same host).  Times
 * of a domain are mapped to Unix-epoch ns by  mono + delta  during the
 * merge (delta = realtime - monotonic, the domain's median), and corrected
 * at the end by  corr  once the offsets between domains are estimated.
 */
struct rc_domain {
	uint32_t host;
	char     label[96];      /* host name, "name#2" for a second domain */
	int64_t  delta;          /* provisional: realtime - monotonic */
	uint64_t events;
	/* clock.c results (relative to the reference domain, in ns) */
	int      reference;
	int      linked;         /* offset derived from messages or same host */
	int64_t  off;            /* estimated mono offset to the reference */
	int64_t  lo, hi;         /* bounds on off (valid if has_lo / has_hi) */
	int      has_lo, has_hi;
	uint64_t samples;
	const char *method;      /* "reference", "messages", "host", "realtime" */
	int64_t  corr;           /* added to provisional epoch times at the end */
	/* --follow's window pass (rc_options.rows_from_ns): the latest
	 * provisional start of a request rooted here whose rows were left
	 * out (has_skip: there was one) */
	int      has_skip;
	int64_t  skip_max;
	int      rows_corr_set;  /* rows_corr looked up (rc_options.rows_dom) */
	int64_t  rows_corr;
};

struct rc_proc;

/* A record as the cursor yields it (not yet decoded): P points into the
 * run's BLK_BUF, valid until the cursor leaves the record's block. */
struct rc_rec {
	uint8_t        type;
	uint64_t       ts;       /* absolute monotonic ns */
	uint64_t       prev_ts;  /* time before this record (decoder base) */
	const uint8_t *p;
	uint32_t       len;
	uint32_t       file;
	uint64_t       file_off;
};

/* A process image: one run of the shim in one process (ring_id).  What
 * pass 1 learns is kept for the whole run (about 100 bytes); the merge's
 * state of an image exists only while its streams run (struct rc_imrun). */
struct rc_imrun;

struct rc_image {
	uint64_t ring_id;
	uint64_t lineage_key;    /* the parent record to wait for, or 0 */
	uint64_t events;
	int64_t  delta;          /* realtime - monotonic at its first TIME */
	const char *exe;         /* interned (rc_input_intern), or NULL */
	uint64_t start_off;      /* its PROC_START record (file offset and */
	uint64_t start_prev;     /*   file), read again for the command */
	uint32_t start_len;      /*   line at the end (input.h) */
	uint32_t start_file;
	uint32_t host, domain, pid, nstreams;
	uint32_t ppid, ptid, pflags;
	uint8_t  has_delta, has_start;
	uint8_t  h2_sends;       /* it sent an HTTP/2 request (pass 1, only
				    with unary gRPC methods named: a relay
				    such as nginx's grpc_pass, see msg.c) */
	uint8_t  gone;           /* bp-logd said it is gone (PEER_GONE): its
				    streams end at their last record
				    (merge.c) */
	uint8_t  adopted;        /* its ring was adopted by a bp-logd that
				    started (PEER_UP "adopted"): a PEER_GONE
				    then is the end of that drain, not of the
				    process, whose tracer reconnects on its
				    next event */
	uint8_t  began;          /* the merge activated a stream of it */
	uint8_t  lin_done;       /* pass 1 chose LINEAGE_KEY (scan.c) */
	uint8_t  orphan_said;    /* ORPHAN warned about (scan.c) */
	uint8_t  orphan;         /* forked or exec'd from a traced image
				    whose FORK or EXEC record is in no log
				    (pass 1, scan.c: orphans) */
	struct rc_imrun *run;    /* pass 2, while its streams run */
};

/* The merge's state of an image (lineage.c), from its first record to the
 * end of its last stream. */
struct rc_imrun {
	struct rc_proc *proc;
	uint64_t process_id;     /* processes.process_id, once attached */
	uint64_t parent_process_id;
	uint64_t start_req;
	const char *how;         /* "fork", "vfork", "exec", "spawn" or NULL */
	int64_t  first_ts, last_ts;
	uint32_t live_streams;
	int      attached;
};

struct rc_cursor {
	const struct bt_sr_block *blk;
	uint32_t nblk, bi;
	uint32_t pos;            /* within blk[bi]'s payload */
	uint32_t win_off, win_len;  /* the payload bytes in the run's
				       BLK_BUF (input.c) */
	uint64_t prev_ts;
	int      have_time;      /* a TIME was seen since the start or a loss */
	int      in_block;
	int      warn;           /* report losses (pass 1 only) */
};

/* ---- pass 1 results --------------------------------------------------- */

/* Per connection instance: how many CHAN records of each side refer to
 * it (side 2: inherited pipe ends whose side is not known yet). */
struct rc_conninfo {
	uint32_t n[3];
	uint8_t  pipe;
	uint8_t  expect;         /* the side no log has is expected (pair.c,
				  * expect_peer): its records may be late */
};

/* Per CHAN record (entry), what pass 1 found out about its connection.
 * Each end carries its connection's counts, so the merge reads the table
 * in each stream's order and never by connection. */
/* A run of a stream's entries, in the entries table (rc_stream.xent). */
struct rc_echunk {
	uint32_t first, n;
};

struct rc_entry {
	uint32_t conn;           /* connection instance, RC_NONE if none */
	uint32_t peer;           /* an entry of the other side, or RC_NONE */
	uint8_t  side;           /* 0, 1, or 2 = not known (inherited pipe) */
	struct rc_conninfo info; /* of conn */
};

/* ---- the path model's per-thread state (model.c) ---------------------- */

/* The request a thread works for, and the span new client spans hang on. */
struct rc_desig {
	uint64_t req;            /* 0: none */
	uint64_t span;           /* context span id, 0: none */
	uint8_t  client_root;    /* req was started here by rule 5 */
};

enum rc_trigger { RC_TR_START = 1, RC_TR_READY, RC_TR_TIMEOUT, RC_TR_MSG,
		  RC_TR_DATA, RC_TR_ACCEPT, RC_TR_SIGNAL, RC_TR_GAP };

struct rc_frag {
	int      open;
	uint8_t  trigger;
	uint8_t  had_input;      /* an input record followed the READY */
	uint8_t  last_type;      /* last input record type of the fragment */
	uint8_t  noreq;          /* begun by a READY for no request */
	int32_t  fd;
	/* its input is not known (begun after a gap in the thread's
	 * records, or by a read on an fd no record announced): the
	 * certainty reason of a request it starts (msg.c, rule 5), or NULL */
	const char *lost;
	uint64_t last_off;
	uint64_t channel_id;
	int64_t  start, last;
	uint64_t events;
};

struct rc_lookup;                /* open NAME_BEGIN (model.c) */
struct rc_span;

struct rc_proc;

struct rc_thr {
	uint32_t tid;
	int      started;
	struct rc_desig d;
	/* the parked detector (park.c) */
	struct rc_thr  *pnext;   /* in its process's list of threads */
	struct rc_proc *pproc;   /* that process, once listed */
	uint64_t park_cand;      /* server span its ended fragment left */
	uint8_t  park_why;       /* enum rc_park, should it be parked */
	uint8_t  park_defer;     /* only once its channel's output is out */
	struct rc_frag  frag;
	struct rc_lookup *lookups;
	struct rc_span  *frag_span;  /* server span that lasts one fragment */
	uint64_t srv_id;         /* rc_span_srv_cached's entry: d.span's */
	struct rc_span  *srv_sp; /* server span as last looked up (park.c) */
	int64_t  floor;          /* causal time floor (same-domain clamps) */
	uint8_t  inherited;      /* its designation is its creator's and no
				    input has come since (rule 3) */
	uint8_t  gap;            /* some of its records are in no log since
				    its last one applied (input.c, lose):
				    model.c, gap_work */
	uint8_t  in_sig;         /* between SIGNAL begin and end: a signal
				    handler's fragment interrupts ... */
	struct {                 /* ... this one, kept aside (model.c) */
		struct rc_frag    frag;
		struct rc_desig   d;
		struct rc_span   *frag_span;
		struct rc_lookup *lookups;
		uint64_t          park_cand;
		uint8_t           park_why, park_defer, inherited;
	} sig;
};

/* ---- streams --------------------------------------------------------- */

enum rc_sstate { RC_SS_NEW = 0, RC_SS_READY, RC_SS_PARKED, RC_SS_DONE,
		  RC_SS_DRY   /* at the end of what its stream has so far,
				 while the logs grow (merge.c): more may
				 come */ };

/* Why a stream's head record proceeds without what it waited for. */
enum rc_release { RC_REL_NONE = 0, RC_REL_BLOCKED, RC_REL_GONE };

struct rc_run;

/* A stream: one slot of one process image's ring.  Small and static; the
 * state of reading it lives in a struct rc_run while it is active. */
struct rc_stream {
	uint32_t image;
	uint32_t slot;
	uint32_t blk_first, nblk;
	uint32_t rank;           /* its place in the order a fresh index of
				    the logs gives the streams (host, ring,
				    pid, slot): the merge's tie-break.  The
				    stream's own number, but after
				    rc_input_more, which appends new streams
				    and keeps the old ones' numbers */
	uint32_t entry_first, nentry;  /* its CHAN records in pass 1 order:
				    NENTRY in all, the first NENTRY0 from
				    ENTRY_FIRST on, the others in XENT
				    (rc_scan_more appends what the logs
				    gained; rc_scan_entry_index) */
	uint32_t nentry0, nxent;
	struct rc_echunk *xent;
	/* pass 1's place in the stream (rc_scan_more reads on from it) */
	uint32_t skim_blk;       /* blocks skimmed */
	uint16_t learn_left;     /* MSG and OPEN records still to learn from */
	uint8_t  skim_time;      /* the cursor's have_time there */
	uint8_t  skimmed;        /* pass 1 read it (SKIM_* valid) */
	uint64_t skim_prev_ts;   /* the cursor's prev_ts there */
	uint64_t first_ts;       /* monotonic time of its first record */
	int      has_first;      /* it has a record at all */
	uint8_t  began;          /* the merge activated it */
	uint8_t  ended;          /* ... and ended it, with ENDED_NBLK blocks */
	uint32_t ended_nblk;
	struct rc_run *run;      /* pass 2: while active */
};

/* A stream being read: from the merge reaching its first record to its
 * end.  Only active streams hold a decoded record and a thread state. */
#define RC_EBUF 8                /* pass 1 entries read at once */

struct rc_run {
	struct rc_stream *st;
	struct rc_cursor cur;
	uint8_t *blk_buf;        /* a window of the cursor's block (input.c; kept
				    with the run when it goes back to the
				    free list) */
	uint32_t blk_cap;
	uint32_t entry_next;     /* next CHAN record's entry */
	uint32_t ebuf_first, ebuf_n;  /* entries in ebuf (rc_scan_entry) */
	struct rc_entry ebuf[RC_EBUF];
	/* merge */
	uint8_t  state;          /* enum rc_sstate */
	uint8_t  released;       /* enum rc_release, for the head record */
	uint8_t  fresh;          /* no record of it applied yet (merge.c:
				    parked so, it keeps only a stub) */
	uint8_t  peeked;         /* dry, the parked detector needed its next
				    record (park.c): merge.c checks it when
				    the record comes, with its thread's
				    fragment then (PEEK_FRAG) and now */
	uint32_t heap_pos;
	int64_t  head_t;         /* provisional epoch time of the head */
	struct rc_rec   rec;     /* head record */
	struct bt_event ev;      /* head record, decoded (resolved values
				    point into BLK_BUF or DICT) */
	struct bt_ev_dict *dict; /* the stream's attribute dictionary,
				    allocated at its first value to remember
				    (kept with the run when it goes back to
				    the free list); NULL before, or if out
				    of memory */
	uint64_t wait_key;
	struct rc_run *park_next;
	struct rc_frag peek_frag;
	/* model */
	struct rc_thr thr;
};

/* Lineage key kinds (for rc_scan_proc_key). */
enum rc_lineage { RC_LIN_FORK = 1, RC_LIN_EXEC, RC_LIN_SPAWN, RC_LIN_THREAD };

/* ---- statistics ------------------------------------------------------- */

struct rc_stats {
	uint64_t files, blocks, dup_blocks, payload_bytes;
	/* the merge while the logs grow (merge.c; not in the database):
	 * its pauses, the dry runs that read on at a resumption, the most
	 * dry at once */
	uint64_t merge_pauses, merge_dry_resumed, merge_dry_max;
	uint64_t merge_dry_peeked;   /* dry runs the parked detector asked
					for their next record (park.c) */
	uint64_t merge_hold_waits;   /* pauses before a record whose meaning
					a later one may change (model.c,
					rc_model_holds) */
	uint64_t merge_ahead_waits;  /* pauses before a record that would
					have asked so (rc_park_needs_ahead) */
	uint64_t events;             /* records decoded in pass 2 */
	uint64_t lost_records;       /* skipped after a gap or damage */
	uint64_t lost_bytes;         /* stream bytes missing (gaps) */
	uint64_t dropped;            /* DROP records: events the tracer lost */
	uint64_t malformed;
	uint64_t unknown_types;      /* records of a type newer than this
					reader (merge.c, advance) */
	uint64_t gaps;
	uint64_t requests, spans, messages, fragments, files_opened;
	uint64_t rows_skipped;        /* messages, fragments, files, exact
					 non-root spans and channels not
					 written (rc_options.rows_from_ns) */
	uint64_t chan_rows_skipped;   /* of them, channels (chan.c) */
	uint64_t req_unnamed;         /* requests before the bound whose row
					 and spans no row needed, left out
					 (db_rows.c) */
	uint64_t channels;
	uint64_t unattr_fragments, unattr_messages, unattr_files, unattr_spans;
	uint64_t unattr_data_bytes;
	uint64_t released;           /* records released from a wait */
	uint64_t unlogged;           /* requests and replies from a traced
					sender that did not log the send
					(uncertain) */
	uint64_t peer_pending;       /* requests and replies of a live pass
					from a peer no log has yet but
					expected traced (uncertain) */
	int64_t  peer_pending_max;   /* the latest such (provisional ns) */
	uint64_t spool_bytes;        /* rows spooled (db_rows.c) */
	uint32_t replay_threads;     /* that inserted them: 1 or 2 */
	uint64_t closed_unread;      /* spans open on an end closed while
					one of its receives waited
					(uncertain) */
	uint64_t lost_in_span;       /* server spans whose work lost
					events (DROP; uncertain) */
	uint64_t unpaired_recv;      /* receives with no send record */
	uint64_t unmatched_replies;
	uint64_t reply_mismatch;     /* sender's and matcher's request differ */
	uint64_t clamps;             /* receive times raised to the send time */
	uint64_t isolations;
	uint64_t unknown_fd;         /* records on fds with no known channel */
	uint64_t unknown_fd_spans;   /* server spans whose work used such an
					fd (uncertain) */
	uint64_t gap_fragments;      /* work after a gap in a thread's records,
					given to no request (model.c) */
	uint64_t orphans;            /* images whose traced parent's FORK or
					EXEC record is in no log */
	uint64_t peer_gap;           /* requests and replies from a peer no
					log has, at an address of a host whose
					logs have a gap (uncertain) */
	uint64_t lost_roots;         /* requests started by such work, or by
					work read from an unknown fd
					(uncertain) */
	uint64_t queue_overflow;
	uint64_t warnings;
	uint64_t parks;              /* server spans found parked */
	uint64_t ambiguous_spans;    /* requests sent while others were parked */
	uint64_t marked_spans;       /* spans written not 'exact' */
	uint64_t ambiguous_files;    /* files opened with candidates */
	uint64_t content_resolved;   /* ambiguous spans resolved by content
					(tokens.c) */
	uint64_t grpc_unary_calls;   /* server spans of methods named unary */
	uint64_t grpc_unary_excluded; /* request messages for which the unary
					 rule left out a call (span.c) */
	uint64_t req_exact, req_resolved, req_uncertain;  /* db.c, at the end */
};

/* ---- the context ------------------------------------------------------ */

struct rc_pair;

/*
 * Pass 1 while the logs grow (scan.c): what it keeps to read on, and
 * what the merge decided on knowledge pass 1 had then, so that pass 1
 * reading on can say when that knowledge changed (a merge at once would
 * have decided otherwise: rc_scan_more refuses).
 */
struct rc_p1 {
	struct rc_pair *pair;    /* every channel end so far (pair.h) */
	struct rc_map total;     /* lineage key -> parent records in the logs */
	struct rc_map no_child;  /* keys a parent record found no child for */
	struct rc_map no_parent; /* keys a child went on without a parent
				    record for (none in the logs) */
	struct rc_map ip_asked;  /* addresses the merge asked the host of
				    (pair.c, rc_pair_host_of) */
	/* per stream still learning values (scan.c, SCAN_LEARN), its
	 * dictionary where pass 1 stopped (NULL: read it again) */
	struct bt_ev_dict **dicts;
	uint32_t ndicts;
	int      more;           /* in rc_scan_more, the merge begun */
	int      final;          /* ... the logs final */
	int      fresh;          /* the last rc_scan_more read on over the
				    logs as they are indexed now (the
				    keeper's, before its pass's child) */
	char     why[256];       /* the first such change, or "" */
};

struct rc_db;
struct rc_model;
struct rc_merge;
struct rc_clock;
struct rc_spans;
struct rc_chans;
struct rc_tokens;
struct rc_notes;

/*
 * The logs as they grow, for the merge (merge.c): FN says how far they
 * reach now.  It returns 1 when more may come, with *W the time (Unix
 * ns, provisional) up to which every record is in the tables: the merge
 * applies nothing later; 0 when the logs are final; or an error
 * (rc_fail).  Between two calls the tables may have grown
 * (rc_input_more, or steps.c making more of each stream visible).
 */
struct rc_grow {
	int  (*fn)(void *arg, struct rc_ctx *c, int64_t *w);
	void  *arg;
};

struct rc_ctx {
	const struct rc_options *opt;
	struct rc_grow grow;     /* fn NULL: the logs are final */

	struct bt_sr_file *files;  uint32_t nfiles;
	struct bt_sr_host *hosts;  uint32_t nhosts;
	struct rc_domain *doms;    uint32_t ndoms;
	uint32_t          ref_dom;
	/* blocks (once sorted), images and streams are mappings of
	 * temporary files (input.c) */
	struct rc_image  *images;  uint32_t nimages;
	struct bt_sr_block *blocks; uint32_t nblocks;
	struct rc_stream *streams; uint32_t nstreams;
	struct rc_spill   blk_spill, img_spill, str_spill;

	/* pass 1: the entries are in a temporary file (pair.c), mapped
	 * while pass 1 writes them; the merge reads them with
	 * rc_scan_entry */
	struct rc_entry    *entries;  uint32_t nentries;
	struct rc_map       strmap;   /* hash -> interned string */
	char              **strs;     uint32_t nstrs;
	uint32_t            nconns;
	struct rc_spill     ent_spill;
	/* hosts some of whose records are in no log (a gap in a stream,
	 * found by pass 1: input.c, lose), NULL while none is; the hosts
	 * of the local IP addresses of the channels pass 1 saw (pair.c,
	 * rc_pair_host_of), and each host's last one */
	uint8_t            *host_gap;
	struct rc_map       host_ip;
	uint64_t           *host_ip_last;
	uint32_t            host_ip_n;    /* hosts in HOST_IP_LAST */
	struct rc_map lineage;        /* lineage key -> parent records left
				       | child images left << 32 (scan.h,
				       rc_lin_left); absent when both are 0 */
	struct rc_p1    *p1;         /* pass 1 while the logs grow (scan.c,
					rc_scan_more); NULL at once */
	/* the index's warnings while the logs grow, said at the end
	 * (input.c, rc_input_say); SKIPPED: a file it skipped, and the
	 * bytes of it a copy needs to be skipped alike (a check's
	 * snapshot, keeper.c write_manifest), or -1 */
	struct rc_iwarn {
		char *path, *text;
		uint64_t off;
		int64_t skipped;
	} *iwarn;
	uint32_t            niwarn;
	/* the merge judged a record at or after rc_options.pending_ns by
	 * whether its peer is expected (msg.c, peer_pending): only then can
	 * a change of that guess (pair.c, expect_peer) change what it did */
	int                 expect_asked;
	/* a group of rows is being spooled between keys
	 * (rc_options.row_keys; span.c, rc_rows_begin) */
	int                 rows_scope;

	struct rc_db    *db;
	struct rc_model *model;      /* model.c: designations, lineage */
	struct rc_spans *spans;      /* span.c: open requests, span pool */
	struct rc_chans *chans;      /* chan.c: processes, connections */
	struct rc_tokens *tokens;    /* tokens.c: positions of values */
	struct rc_merge *merge;
	struct rc_clock *clock;

	struct rc_stats st;
	struct rc_notes *notes;    /* warnings by kind, unread channels (notes.c) */
	uint64_t spill_read;     /* block bytes read since the pages of the
				  * tables in spill files were last given
				  * back (input.c) */

	/* progress */
	uint64_t progress_total, progress_done, progress_next;
	int      progress_tty;
	double   progress_last;
	const char *phase;

	char     errbuf[512];      /* first fatal error, for rc_run's caller */
	int      err;
};

/* Report a warning: one line on stderr (unless quiet; the first few), and
 * a row in the warnings table.  FILE may be NULL. */
void rc_warn(struct rc_ctx *c, const char *file, uint64_t off,
	     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/*
 * notes.c: what the summary tells a person.  rc_notes_warning counts a
 * warning under its kind (FMT, or the text's shape when FMT is "%s");
 * rc_notes_costly: warnings not classified expected; the print functions
 * write the grouped warnings and the unread channels by program:port.
 * rc_notes_unread_collect reads the channels table of H (before COMMIT);
 * 0 or -1.
 */
struct sqlite3;
void     rc_notes_warning(struct rc_ctx *c, const char *fmt, const char *file,
			  uint64_t off, const char *text);
uint64_t rc_notes_costly(const struct rc_ctx *c);
void     rc_notes_print_warnings(const struct rc_ctx *c, FILE *f);
int      rc_notes_unread_collect(struct rc_ctx *c, struct sqlite3 *h);
uint64_t rc_notes_unread(const struct rc_ctx *c);
void     rc_notes_print_unread(const struct rc_ctx *c, FILE *f);
/* rc_notes_rawio keeps a BT_LN_RAW_IO note of bp-logd (a program that
 * holds sockets its shim never saw); rc_notes_rawio_write fills the
 * untraced_programs table of H (before COMMIT); rc_notes_untraced counts
 * them; rc_notes_print_untraced says them, one line per program. */
void     rc_notes_rawio(struct rc_ctx *c, const char *host, uint32_t pid,
			int64_t sockets, const char *str, size_t len);
int      rc_notes_rawio_write(struct rc_ctx *c, struct sqlite3 *h);
uint64_t rc_notes_untraced(const struct rc_ctx *c);
void     rc_notes_print_untraced(const struct rc_ctx *c, FILE *f);
void     rc_notes_free(struct rc_ctx *c);
/* Record a fatal error (first one wins); returns ERR (a negative errno or
 * an RC_EXIT_* code, as the caller chooses). */
int rc_fail(struct rc_ctx *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Advance the progress bar by BYTES (draws on a terminal at most 10/s). */
void rc_progress(struct rc_ctx *c, uint64_t bytes);

/*
 * An IPv4-mapped IPv6 address (::ffff:a.b.c.d, what a dual-stack server
 * sees of an IPv4 client) as the IPv4 address the client itself logs.
 */
static inline struct bt_addr rc_addr_norm(const struct bt_addr *a)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct bt_addr n = *a;
	int i;

	if (a->family != BT_AF_INET6)
		return n;
	for (i = 0; i < 12 && a->addr[i] == mapped[i]; i++)
		;
	if (i < 12)
		return n;
	n.family = BT_AF_INET;
	for (i = 0; i < 16; i++)
		n.addr[i] = i < 4 ? a->addr[12 + i] : 0;
	return n;
}

/* Does a CHAN of ROLE create its end (rather than announce one that
 * existed before: inherited across exec, or first seen late)? */
static inline int rc_role_fresh(uint8_t role)
{
	return role == BT_CR_CONNECT || role == BT_CR_ACCEPT ||
	       role == BT_CR_PIPE_READ || role == BT_CR_PIPE_WRITE ||
	       role == BT_CR_SOCKETPAIR || role == BT_CR_DGRAM;
}

/* Do A and B name the same address (field by field, never padding)? */
static inline int rc_addr_eq(const struct bt_addr *a, const struct bt_addr *b)
{
	if (a->family != b->family || a->port != b->port)
		return 0;
	for (int i = 0; i < 16; i++)
		if (a->addr[i] != b->addr[i])
			return 0;
	return 1;
}

/* Provisional Unix-epoch time of monotonic TS in domain D. */
static inline int64_t rc_epoch(const struct rc_ctx *c, uint32_t d, uint64_t ts)
{
	return (int64_t)ts + c->doms[d].delta;
}

/* Path of file F, for messages. */
static inline const char *rc_file_path(const struct rc_ctx *c, uint32_t f)
{
	return f < c->nfiles ? c->files[f].path : NULL;
}

#endif /* RC_RC_H */
