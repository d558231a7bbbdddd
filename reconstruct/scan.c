/*
 * scan.c - pass 1 (see scan.h): the skim of every stream.
 *
 * Only the record types pass 1 needs are decoded in full; the others are
 * skipped by their length after the cursor has read their time delta, so
 * this pass costs a fraction of the merge.  What the skim finds goes to
 * the images (clock samples, PROC_START), the lineage map, and the
 * channel ends to pair (pair.c); once every stream is read, the clock
 * domains are made (clock.c), the lineage chosen and the ends paired.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btrace/proto.h"
#include "clock.h"
#include "input.h"
#include "pair.h"
#include "scan.h"
#include "spill.h"
#include "tokens.h"

uint64_t rc_scan_proc_key(uint32_t host, uint32_t pid, unsigned kind)
{
	return (uint64_t)kind << 56 | (uint64_t)(host & 0xffffff) << 32 | pid;
}

uint64_t rc_scan_thread_key(uint32_t image, uint64_t cookie)
{
	uint64_t h = rc_hash64(image, &cookie, sizeof cookie);
	return (uint64_t)RC_LIN_THREAD << 56 | (h & 0x00ffffffffffffffull);
}

uint32_t rc_lin_left(const struct rc_ctx *c, uint64_t key, int child)
{
	uint64_t v = 0;

	rc_map_get(&c->lineage, key, &v);
	return (uint32_t)(child ? v >> 32 : v);
}

uint32_t rc_lin_add(struct rc_ctx *c, uint64_t key, int child, int32_t delta)
{
	uint64_t v = 0;

	rc_map_get(&c->lineage, key, &v);
	uint32_t n[2] = { (uint32_t)v, (uint32_t)(v >> 32) };
	uint32_t old = n[child];
	n[child] += (uint32_t)delta;
	uint64_t nv = (uint64_t)n[1] << 32 | n[0];
	if (nv == 0)
		rc_map_del(&c->lineage, key);
	else if (rc_map_put(&c->lineage, key, nv) < 0)
		return old;
	return n[child];
}

void rc_scan_changed(struct rc_ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->p1 || !c->p1->more || c->p1->why[0])
		return;
	va_start(ap, fmt);
	vsnprintf(c->p1->why, sizeof c->p1->why, fmt, ap);
	va_end(ap);
}

/* A parent record (FORK, EXEC, SPAWN, THREAD_CREATE) for KEY. */
static void lin_parent(struct rc_ctx *c, uint64_t key)
{
	rc_lin_add(c, key, 0, 1);
	if (!c->p1)
		return;
	rc_map_add(&c->p1->total, key, 1);
	if (c->p1->more && rc_map_get(&c->p1->no_parent, key, NULL))
		rc_scan_changed(c, "a process or thread the merge had started without its parent's record has one in the logs now");
}

/* A child (an image's PROC_START, a THREAD_START) for KEY. */
static void lin_child(struct rc_ctx *c, uint64_t key)
{
	rc_lin_add(c, key, 1, 1);
	if (c->p1 && c->p1->more && rc_map_get(&c->p1->no_child, key, NULL))
		rc_scan_changed(c, "a fork, exec or thread creation the merge had applied without a child has one in the logs now");
}

/* The parent records for KEY in the logs (not those left to the merge). */
static uint32_t lin_total(const struct rc_ctx *c, uint64_t key)
{
	uint64_t v = 0;

	if (!c->p1)
		return rc_lin_left(c, key, 0);
	rc_map_get(&c->p1->total, key, &v);
	return (uint32_t)v;
}

void rc_scan_no_child(struct rc_ctx *c, uint64_t key)
{
	if (c->p1 && c->merge)
		rc_map_put(&c->p1->no_child, key, 1);
}

void rc_scan_no_parent(struct rc_ctx *c, uint64_t key)
{
	if (c->p1 && c->merge && !lin_total(c, key))
		rc_map_put(&c->p1->no_parent, key, 1);
}

/* ---- the skim ----------------------------------------------------------- */

/* MSG and OPEN records of each stream decoded for rc_tok_learn. */
#define SCAN_LEARN 2048u

static int skim_stream(struct rc_ctx *c, struct rc_pair *pr,
		       struct rc_stream *s, struct rc_run *run,
		       struct bt_ev_dict *dict)
{
	struct rc_image *im = &c->images[s->image];
	struct rc_rec r;
	struct bt_event ev;
	uint32_t from = s->skimmed ? s->skim_blk : 0;
	uint32_t first_entry = pr->total;
	unsigned learn = s->skimmed ? s->learn_left : SCAN_LEARN;

	if (s->skimmed && from >= s->nblk)
		return 0;
	run->st = s;
	rc_input_cur_reset(c, run, 1);
	bt_ev_dict_init(dict);
	uint32_t si = (uint32_t)(s - c->streams);
	struct bt_ev_dict **kept = c->p1 && si < c->p1->ndicts ?
				   &c->p1->dicts[si] : NULL;
	int needs = learn > 0 || (c->opt->ngrpc_unary && !im->h2_sends);
	if (from && needs && kept && *kept) {
		/* the dictionary it had there, kept */
		memcpy(dict, *kept, sizeof *dict);
		run->cur.bi = from;
	} else if (from && needs) {
		/* read on with the dictionary it had there: its values
		 * are read again, nothing else is done twice */
		unsigned rl = SCAN_LEARN;
		run->cur.nblk = from;
		run->cur.warn = 0;
		while (rc_input_cur_next(c, run, &r)) {
			uint64_t prev = r.prev_ts;
			if (r.type == BT_EV_TIME) {
				bt_ev_dict_reset(dict);
				continue;
			}
			if (r.type != BT_EV_MSG && r.type != BT_EV_OPEN)
				continue;
			if (rl == 0 && !(r.type == BT_EV_MSG &&
					 c->opt->ngrpc_unary))
				continue;
			rl -= rl > 0;
			bt_ev_decode_dict(r.p, r.len, &ev, &prev, dict);
		}
		run->cur.nblk = s->nblk;
		run->cur.warn = 1;
	} else if (from) {
		run->cur.bi = from;
	}
	if (from) {
		run->cur.prev_ts = s->skim_prev_ts;
		run->cur.have_time = s->skim_time;
	}
	while (rc_input_cur_next(c, run, &r)) {
		uint64_t prev = r.prev_ts;
		int h2;

		if (!s->has_first && r.type != BT_EV_TIME) {
			s->has_first = 1;
			s->first_ts = r.ts;
		}
		im->events++;
		switch (r.type) {
		case BT_EV_MSG:
		case BT_EV_OPEN:
			/* the values of request messages (tokens.c), read
			 * through the stream's dictionary, which OPEN paths
			 * fill too; a value it does not hold is unknown and
			 * teaches nothing.  Only the stream's first
			 * SCAN_LEARN such records: what matters is the start
			 * of the run, before pass 2 has seen any shape vary
			 * (decoding them all cost pass 1 ~9% more time) */
			/* with unary gRPC methods named, every MSG until one
			 * shows the image sends HTTP/2 requests (msg.c,
			 * unary_settled) */
			h2 = r.type == BT_EV_MSG && c->opt->ngrpc_unary &&
			     !im->h2_sends;
			if (learn == 0 && !h2)
				continue;
			int lrn = learn > 0;
			learn -= (unsigned)lrn;
			if (bt_ev_decode_dict(r.p, r.len, &ev, &prev, dict) <= 0)
				continue;
			if (h2 && ev.proto == BT_PROTO_HTTP2 &&
			    ev.dir == BT_DIR_OUT && ev.kind == BT_MK_REQUEST) {
				im->h2_sends = 1;
				if (im->began)
					rc_scan_changed(c, "an image whose records the merge had applied sends HTTP/2 requests (--grpc-unary): host %s pid %u",
							c->hosts[im->host].name, im->pid);
			}
			if (lrn && r.type == BT_EV_MSG && !ev.dict_miss)
				rc_tok_learn(c, &ev);
			continue;
		case BT_EV_TIME:
			bt_ev_dict_reset(dict);
			break;
		case BT_EV_PROC_START:
		case BT_EV_THREAD_START:
		case BT_EV_FORK:
		case BT_EV_EXEC:
		case BT_EV_SPAWN:
		case BT_EV_THREAD_CREATE:
		case BT_EV_CHAN:
		case BT_EV_DROP:
			break;
		default:
			continue;
		}
		if (bt_ev_decode(r.p, r.len, &ev, &prev) <= 0) {
			/* a channel's announcement, a fork, a loss, that
			 * cannot be read: the host's peers may be traced ends
			 * no record names (msg.c, peer_gap), as after a gap.
			 * (The merge counts it and warns: merge.c, advance) */
			rc_input_host_gap(c, im->host);
			continue;
		}
		switch (r.type) {
		case BT_EV_TIME:
			if (!im->has_delta && ev.realtime) {
				im->has_delta = 1;
				im->delta = (int64_t)(ev.realtime - ev.ts);
			}
			break;
		case BT_EV_PROC_START:
			if (im->has_start)
				break;
			im->has_start = 1;
			im->ppid = ev.ppid;
			im->ptid = ev.ptid;
			im->pflags = ev.flags;
			im->exe = rc_input_intern(c, ev.str ? ev.str : "",
						  ev.str_len);
			/* read again for the cmdline (lineage.c) */
			im->start_file = r.file;
			im->start_off = r.file_off;
			im->start_len = r.len;
			im->start_prev = r.prev_ts;
			if (!im->exe)
				return -ENOMEM;
			break;
		case BT_EV_THREAD_START:
			if (ev.cookie)
				lin_child(c, rc_scan_thread_key(s->image,
							       ev.cookie));
			break;
		case BT_EV_FORK:
			if (ev.result > 0)
				lin_parent(c, rc_scan_proc_key(im->host,
						(uint32_t)ev.result, RC_LIN_FORK));
			break;
		case BT_EV_EXEC:
			if (ev.flags == 0)
				lin_parent(c, rc_scan_proc_key(im->host, im->pid,
							       RC_LIN_EXEC));
			break;
		case BT_EV_SPAWN:
			if (ev.result > 0)
				lin_parent(c, rc_scan_proc_key(im->host,
						(uint32_t)ev.result, RC_LIN_SPAWN));
			break;
		case BT_EV_THREAD_CREATE:
			if (ev.result >= 0)
				lin_parent(c, rc_scan_thread_key(s->image,
								ev.cookie));
			break;
		case BT_EV_CHAN: {
			int e = rc_pair_add(c, pr, s->image, &ev);
			if (e)
				return e;
			break;
		}
		case BT_EV_DROP:
			/* a full ring (or no slot) may have lost a connect's
			 * or an accept's announcement: the host's peers are
			 * in doubt (msg.c, peer_gap).  Not the calls of a
			 * signal handler that re-entered the shim (a connect
			 * there is not seen in practice, and such drops
			 * happen in busy servers: apache's prefork workers
			 * lose one now and then), nor a record too big (a
			 * CHAN is small), nor a pause's (its calls go dark) */
			if (ev.flags == BT_DR_RING_FULL ||
			    ev.flags == BT_DR_NO_SLOT)
				rc_input_host_gap(c, im->host);
			break;
		}
	}
	uint32_t n = pr->total - first_entry;
	if (!s->skimmed) {
		s->entry_first = first_entry;
		s->nentry0 = s->nentry = n;
	} else if (n && !s->nxent &&
		   s->entry_first + s->nentry0 == first_entry) {
		s->nentry0 += n;
		s->nentry += n;
	} else if (n) {
		struct rc_echunk *x = realloc(s->xent, (s->nxent + 1) *
					      sizeof *x);
		if (!x)
			return -ENOMEM;
		x[s->nxent].first = first_entry;
		x[s->nxent].n = n;
		s->xent = x;
		s->nxent++;
		s->nentry += n;
	}
	/* while the logs grow, a stream still learning keeps its
	 * dictionary (7.7 KB) for the next time; one done gives it back */
	if (kept && (learn > 0 || (c->opt->ngrpc_unary && !im->h2_sends))) {
		if (!*kept && !(*kept = malloc(sizeof **kept)))
			return -ENOMEM;
		memcpy(*kept, dict, sizeof *dict);
	} else if (kept && *kept) {
		free(*kept);
		*kept = NULL;
	}
	s->skimmed = 1;
	s->skim_blk = s->nblk;
	s->skim_prev_ts = run->cur.prev_ts;
	s->skim_time = (uint8_t)run->cur.have_time;
	s->learn_left = (uint16_t)learn;
	return 0;
}

/* ---- lineage ------------------------------------------------------------ */

/*
 * A forked or exec'd image whose parent record (FORK, EXEC) no log has,
 * though its parent is traced (an image of its parent's pid on its host
 * is in the logs; for an exec, another image of its own pid): the record
 * was lost (a gap, a DROP).  It starts without its parent's state, for no
 * request, and its work must not pass for a request of its own
 * (lineage.c, rc_lineage_proc_start; msg.c, rule 5): marked, and warned
 * about.  Images of untraced parents are the usual case and stay as
 * they are.  While the logs grow, an image is judged again at each pass
 * until the merge begins it, then must be judged the same.
 */
static int orphans(struct rc_ctx *c)
{
	struct rc_map pids;
	int any = 0;

	for (uint32_t i = 0; i < c->nimages && !any; i++) {
		const struct rc_image *im = &c->images[i];
		any = im->has_start && !im->lineage_key &&
		      (im->pflags & (BT_PF_FORKED | BT_PF_EXECED));
	}
	if (!any) {
		for (uint32_t i = 0; i < c->nimages; i++) {
			struct rc_image *im = &c->images[i];
			if (!im->has_start)
				continue;
			if (im->orphan && im->began)
				rc_scan_changed(c, "host %s pid %u: the record that made it is in the logs now",
						c->hosts[im->host].name, im->pid);
			else
				im->orphan = 0;
		}
		return 0;
	}
	rc_map_init(&pids);
	for (uint32_t i = 0; i < c->nimages; i++) {
		const struct rc_image *im = &c->images[i];
		/* the images of each (host, pid) */
		if (im->has_start &&
		    rc_map_add(&pids, rc_key2(im->host, im->pid), 1) == 0) {
			rc_map_free(&pids);
			return -ENOMEM;
		}
	}
	for (uint32_t i = 0; i < c->nimages; i++) {
		struct rc_image *im = &c->images[i];
		uint64_t n = 0;
		if (!im->has_start)
			continue;
		int exec = !(im->pflags & BT_PF_FORKED);
		uint32_t ppid = exec ? im->pid : im->ppid;
		rc_map_get(&pids, rc_key2(im->host, ppid), &n);
		int o = !im->lineage_key &&
			(im->pflags & (BT_PF_FORKED | BT_PF_EXECED)) && ppid &&
			n > (uint64_t)(ppid == im->pid);
		/* (an image is judged in the pass that first reads it,
		 * before the merge can begin it; again until it does) */
		if (o != im->orphan && im->began) {
			rc_scan_changed(c, "host %s pid %u: whether the record that made it is lost changed",
					c->hosts[im->host].name, im->pid);
			continue;
		}
		im->orphan = (uint8_t)o;
		/* said once, when the merge begins it (while the logs grow, the
		 * judgement may change until then) or the logs are final */
		if (!o || im->orphan_said ||
		    (c->p1 && !c->p1->final && !im->began))
			continue;
		im->orphan_said = 1;
		c->st.orphans++;
		rc_warn(c, rc_file_path(c, im->start_file), im->start_off,
			"host %s pid %u: its parent (pid %u) is traced, but the %s record that made it is in no log; it started without the parent's state",
			c->hosts[im->host].name, im->pid, ppid,
			exec ? "exec" : "fork");
	}
	rc_map_free(&pids);
	return 0;
}

/* The parent record image IM's PROC_START waits for, or 0. */
static uint64_t lineage_of(const struct rc_ctx *c, const struct rc_image *im)
{
	unsigned order[2] = { 0, 0 };

	if (im->pflags & BT_PF_FORKED) {
		order[0] = RC_LIN_FORK;
	} else if (im->pflags & BT_PF_EXECED) {
		order[0] = RC_LIN_EXEC;
		order[1] = RC_LIN_FORK;   /* vfork + exec */
	} else {
		order[0] = RC_LIN_SPAWN;
		order[1] = RC_LIN_FORK;
	}
	for (int k = 0; k < 2 && order[k]; k++) {
		uint64_t key = rc_scan_proc_key(im->host, im->pid, order[k]);
		if (lin_total(c, key))
			return key;
	}
	return 0;
}

/* Which parent record each image's PROC_START waits for: chosen once;
 * while the logs grow, the images chosen before must choose the same. */
static void choose_lineage(struct rc_ctx *c)
{
	for (uint32_t i = 0; i < c->nimages; i++) {
		struct rc_image *im = &c->images[i];

		if ((i & 32767) == 32767)
			rc_input_tables_release(c);
		if (!im->has_start)
			continue;
		uint64_t key = lineage_of(c, im);
		if (im->lin_done) {
			if (key == im->lineage_key)
				continue;
			/* the logs grew by a record that made it: chosen
			 * again, unless the merge began it, or applied a
			 * parent record of the key it had (which may have
			 * handed it its state) */
			uint64_t old = im->lineage_key;
			if (im->began || (old && lin_total(c, old) >
					  rc_lin_left(c, old, 0))) {
				rc_scan_changed(c, "host %s pid %u: the record that made it is another one now",
						c->hosts[im->host].name, im->pid);
				continue;
			}
			if (old)
				rc_lin_add(c, old, 1, -1);
			im->lineage_key = key;
			if (key)
				lin_child(c, key);
			continue;
		}
		im->lin_done = 1;
		im->lineage_key = key;
		if (key)
			lin_child(c, key);
	}
}

/* ---- the entries, for the merge, and the run --------------------------- */

/* The entries table's index of entry K of stream S, and in *RUN how many
 * of the stream's entries follow it there (RC_NONE, 0: none). */
static uint32_t entry_index(const struct rc_stream *s, uint32_t k,
			    uint32_t *run)
{
	if (k < s->nentry0) {
		*run = s->nentry0 - k;
		return s->entry_first + k;
	}
	k -= s->nentry0;
	for (uint32_t i = 0; i < s->nxent; i++) {
		if (k < s->xent[i].n) {
			*run = s->xent[i].n - k;
			return s->xent[i].first + k;
		}
		k -= s->xent[i].n;
	}
	*run = 0;
	return RC_NONE;
}

int rc_scan_entry(struct rc_ctx *c, struct rc_run *r, uint32_t k,
		  struct rc_entry *out, uint32_t *index)
{
	uint32_t left, ei = entry_index(r->st, k, &left);

	if (ei == RC_NONE)
		return -1;
	if (ei < r->ebuf_first || ei - r->ebuf_first >= r->ebuf_n) {
		uint32_t n = left < RC_EBUF ? left : RC_EBUF;
		r->ebuf_n = 0;
		if (rc_spill_read(c, &c->ent_spill, r->ebuf,
				  (size_t)n * sizeof *r->ebuf,
				  (uint64_t)ei * sizeof *r->ebuf) != 0)
			return -1;
		r->ebuf_first = ei;
		r->ebuf_n = n;
	}
	*out = r->ebuf[ei - r->ebuf_first];
	*index = ei;
	return 0;
}

/* Skim what every stream has that pass 1 has not read. */
static int skim_all(struct rc_ctx *c, struct rc_pair *pr)
{
	struct rc_run *run = calloc(1, sizeof *run);
	struct bt_ev_dict *dict = malloc(sizeof *dict);
	int r = run && dict ? 0 : -ENOMEM;

	c->phase = "scanning";
	if (r == 0 && c->p1 && c->p1->ndicts < c->nstreams) {
		struct bt_ev_dict **v = realloc(c->p1->dicts, c->nstreams *
						sizeof *v);
		if (!v) {
			r = -ENOMEM;
		} else {
			memset(v + c->p1->ndicts, 0, (c->nstreams -
			       c->p1->ndicts) * sizeof *v);
			c->p1->dicts = v;
			c->p1->ndicts = c->nstreams;
		}
	}
	for (uint32_t i = 0; i < c->nstreams && r == 0; i++) {
		/* a stream the merge ended reads nothing more */
		if (c->p1 && i < c->p1->ndicts && c->streams[i].ended) {
			free(c->p1->dicts[i]);
			c->p1->dicts[i] = NULL;
		}
		r = skim_stream(c, pr, &c->streams[i], run, dict);
	}
	if (run)
		rc_input_run_free(run);
	free(run);
	free(dict);
	return r;
}

int rc_scan_run(struct rc_ctx *c)
{
	struct rc_pair local = { 0 }, *pr = &local;
	int r = 0;

	if (c->grow.fn && !c->p1) {
		/* the logs will grow: pass 1 keeps what it needs to read on */
		if (!(c->p1 = calloc(1, sizeof *c->p1)) ||
		    !(c->p1->pair = calloc(1, sizeof *c->p1->pair)))
			r = -ENOMEM;
		else
			c->p1->pair->retain = 1;
	}
	if (c->p1 && c->p1->pair)
		pr = c->p1->pair;
	if (r == 0)
		r = skim_all(c, pr);
	if (r == 0)
		r = rc_clock_domains(c);
	if (r == 0) {
		choose_lineage(c);
		r = orphans(c);
	}
	if (r == 0) {
		r = rc_pair_all(c, pr);
	}
	if (pr == &local)
		rc_pair_free(pr);
	if (r < 0)
		return rc_fail(c, r, "out of memory in the first pass");
	return r;
}

/* ---- pass 1 reading on (rc_scan_more) ---------------------------------- */

/* How many of stream S's entries the merge read: all of an ended one's. */
static uint32_t consumed(const struct rc_stream *s)
{
	if (s->ended)
		return s->nentry;
	return s->run ? s->run->entry_next : 0;
}

/*
 * The entries of the pairing done again (C->ent_spill, C->nconns from 0)
 * against those of the last (OLD, OLD_NCONNS connections): every entry
 * the merge read (a bit in READ) must be the same, its connection one
 * connection of the last; those keep their numbers, the others are
 * numbered after the last's.  0, or a negative errno.
 */
static int entries_again(struct rc_ctx *c, struct rc_spill *old,
			 uint32_t old_total, uint32_t old_nconns,
			 const uint64_t *read)
{
	enum { CHUNK = 4096 };
	uint32_t nn = c->nconns, nfresh = 0;
	uint32_t *n2o = malloc(((size_t)nn + 1) * sizeof *n2o);
	uint32_t *o2n = malloc(((size_t)old_nconns + 1) * sizeof *o2n);
	struct rc_entry *a = malloc(CHUNK * sizeof *a);
	struct rc_entry *b = malloc(CHUNK * sizeof *b);
	int r = n2o && o2n && a && b ? 0 : -ENOMEM;

	for (uint32_t i = 0; r == 0 && i < nn; i++)
		n2o[i] = RC_NONE;
	for (uint32_t i = 0; r == 0 && i < old_nconns; i++)
		o2n[i] = RC_NONE;
	for (uint32_t e0 = 0; r == 0 && e0 < old_total; e0 += CHUNK) {
		uint32_t n = old_total - e0 < CHUNK ? old_total - e0 : CHUNK;
		int any = 0;
		for (uint32_t k = 0; k < n && !any; k++)
			any = (read[(e0 + k) >> 6] >> ((e0 + k) & 63)) & 1;
		if (!any)
			continue;
		if ((r = rc_spill_read(c, old, a, n * sizeof *a,
				       (uint64_t)e0 * sizeof *a)) != 0 ||
		    (r = rc_spill_read(c, &c->ent_spill, b, n * sizeof *b,
				       (uint64_t)e0 * sizeof *b)) != 0)
			break;
		for (uint32_t k = 0; k < n; k++) {
			const struct rc_entry *o = &a[k], *w = &b[k];
			if (!((read[(e0 + k) >> 6] >> ((e0 + k) & 63)) & 1))
				continue;
			if (o->side != w->side || o->peer != w->peer ||
			    memcmp(o->info.n, w->info.n, sizeof o->info.n) ||
			    o->info.pipe != w->info.pipe ||
			    (c->expect_asked &&
			     o->info.expect != w->info.expect) ||
			    (o->conn == RC_NONE) != (w->conn == RC_NONE)) {
				rc_scan_changed(c, "a channel end the merge had read is paired otherwise now (entry %u)",
						e0 + k);
				continue;
			}
			if (o->conn == RC_NONE)
				continue;
			if (n2o[w->conn] == RC_NONE && o2n[o->conn] == RC_NONE) {
				n2o[w->conn] = o->conn;
				o2n[o->conn] = w->conn;
			} else if (n2o[w->conn] != o->conn ||
				   o2n[o->conn] != w->conn) {
				rc_scan_changed(c, "the connections of channel ends the merge had read are others now (entry %u)",
						e0 + k);
			}
		}
	}
	/* the connections the merge knows keep their numbers, the others
	 * are numbered after the last pairing's */
	for (uint32_t i = 0; r == 0 && i < nn; i++)
		if (n2o[i] == RC_NONE)
			n2o[i] = old_nconns + nfresh++;
	for (uint32_t e0 = 0; r == 0 && e0 < c->nentries; e0 += CHUNK) {
		uint32_t n = c->nentries - e0 < CHUNK ? c->nentries - e0 : CHUNK;
		if ((r = rc_spill_read(c, &c->ent_spill, b, n * sizeof *b,
				       (uint64_t)e0 * sizeof *b)) != 0)
			break;
		for (uint32_t k = 0; k < n; k++)
			if (b[k].conn < nn)
				b[k].conn = n2o[b[k].conn];
		r = rc_spill_write(c, &c->ent_spill, b, n * sizeof *b,
				   (uint64_t)e0 * sizeof *b);
	}
	if (r == 0)
		c->nconns = old_nconns + nfresh;
	free(n2o);
	free(o2n);
	free(a);
	free(b);
	return r;
}

/* The clock domains made again must be those the merge used. */
static int domains_again(struct rc_ctx *c)
{
	struct rc_domain *od = c->doms;
	uint32_t ond = c->ndoms, oref = c->ref_dom;
	uint32_t *odom = malloc(((size_t)c->nimages + 1) * sizeof *odom);
	uint8_t *used = calloc((size_t)ond + 1, 1);
	int r;

	if (!odom || !used) {
		free(odom);
		free(used);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < c->nimages; i++) {
		odom[i] = c->images[i].domain;
		if (c->images[i].began && odom[i] < ond)
			used[odom[i]] = 1;
	}
	c->doms = NULL;
	c->ndoms = 0;
	if ((r = rc_clock_domains(c)) != 0) {
		free(c->doms);
		c->doms = od;
		c->ndoms = ond;
		c->ref_dom = oref;
		free(odom);
		free(used);
		return r;
	}
	if (c->ndoms != ond)
		rc_scan_changed(c, "the clock domains are others now (%u, were %u)",
				c->ndoms, ond);
	for (uint32_t k = 0; k < ond && k < c->ndoms; k++)
		if (used[k] && (c->doms[k].host != od[k].host ||
				c->doms[k].delta != od[k].delta))
			rc_scan_changed(c, "the clock of domain %s is another now (%lld ns, was %lld)",
					od[k].label, (long long)c->doms[k].delta,
					(long long)od[k].delta);
	for (uint32_t i = 0; i < c->nimages; i++)
		if (c->images[i].began && c->images[i].domain != odom[i])
			rc_scan_changed(c, "host %s pid %u is in another clock domain now",
					c->hosts[c->images[i].host].name,
					c->images[i].pid);
	/* what the merge began with stays (the clock's samples, the rows'
	 * domains) until the logs are read again from the start */
	for (uint32_t k = 0; k < ond && k < c->ndoms; k++) {
		uint64_t ev = c->doms[k].events;
		int64_t dl = c->doms[k].delta;
		c->doms[k] = od[k];
		c->doms[k].events = ev;
		if (!used[k])
			c->doms[k].delta = dl;
	}
	for (uint32_t k = 0; k < c->ndoms; k++)
		c->doms[k].reference = k == c->ref_dom;
	free(od);
	free(odom);
	free(used);
	return 0;
}

int rc_scan_more(struct rc_ctx *c, int final, char *why, size_t len)
{
	struct rc_p1 *p = c->p1;
	struct rc_spill old;
	uint32_t old_total, old_nconns;
	uint64_t *read = NULL;
	int r = 0;

	if (len)
		why[0] = 0;
	if (!p)
		return rc_fail(c, -EINVAL, "pass 1 cannot read on: it did not keep its state");
	p->more = c->merge != NULL;
	p->why[0] = 0;
	/* The logs are those the last call read on over, and the merge has
	 * not moved since (a kept pass's child: its keeper read on, then
	 * forked it, and says so): the ends, domains, lineage and entries
	 * would come out the same (0.13 s at 5.2 million events).  Only
	 * what the end of the logs changes is left: the orphans are said
	 * now. */
	int same = final == RC_SCAN_FINAL_SAME && p->fresh;
	final = final != 0;
	p->final = final;
	p->fresh = 0;
	if (same) {
		r = orphans(c);
		goto out;
	}
	old_total = p->pair->total;
	old_nconns = c->nconns;
	/* which entries the merge read, before the streams grow */
	read = calloc(((size_t)old_total + 64) / 64, sizeof *read);
	if (!read)
		r = -ENOMEM;
	for (uint32_t i = 0; r == 0 && i < c->nstreams; i++) {
		const struct rc_stream *s = &c->streams[i];
		uint32_t n = consumed(s);
		for (uint32_t k = 0; k < n; k++) {
			uint32_t left, e = entry_index(s, k, &left);
			if (e < old_total)
				read[e >> 6] |= 1ull << (e & 63);
		}
	}
	if (r == 0 && c->host_ip_n < c->nhosts && c->host_ip_last) {
		uint64_t *nl = realloc(c->host_ip_last, c->nhosts * sizeof *nl);
		if (!nl) {
			r = -ENOMEM;
		} else {
			memset(nl + c->host_ip_n, 0,
			       (c->nhosts - c->host_ip_n) * sizeof *nl);
			c->host_ip_last = nl;
			c->host_ip_n = c->nhosts;
		}
	}
	if (r == 0)
		r = skim_all(c, p->pair);
	if (r == 0)
		r = domains_again(c);
	if (r == 0) {
		choose_lineage(c);
		r = orphans(c);
	}
	if (r == 0) {
		old = c->ent_spill;
		memset(&c->ent_spill, 0, sizeof c->ent_spill);
		c->nconns = 0;
		r = rc_pair_all(c, p->pair);
		if (r == 0)
			r = entries_again(c, &old, old_total, old_nconns, read);
		rc_spill_close(&old);
	}
	/* the entries the runs read ahead may be others now */
	for (uint32_t i = 0; i < c->nstreams; i++)
		if (c->streams[i].run)
			c->streams[i].run->ebuf_n = 0;
out:
	free(read);
	p->more = 0;
	if (r < 0)
		return rc_fail(c, r, "out of memory in the first pass, reading on");
	if (r)
		return r;
	if (p->why[0]) {
		if (len)
			snprintf(why, len, "%s", p->why);
		return RC_MORE_REBUILD;
	}
	p->fresh = !final;
	return 0;
}

void rc_scan_drop_ends(struct rc_ctx *c)
{
	rc_spill_close(&c->ent_spill);
	c->entries = NULL;
	rc_map_free(&c->lineage);
}

void rc_scan_free(struct rc_ctx *c)
{
	if (c->p1) {
		if (c->p1->pair)
			rc_pair_free(c->p1->pair);
		free(c->p1->pair);
		rc_map_free(&c->p1->total);
		rc_map_free(&c->p1->no_child);
		rc_map_free(&c->p1->no_parent);
		rc_map_free(&c->p1->ip_asked);
		for (uint32_t i = 0; i < c->p1->ndicts; i++)
			free(c->p1->dicts[i]);
		free(c->p1->dicts);
		free(c->p1);
		c->p1 = NULL;
	}
	for (uint32_t i = 0; c->streams && i < c->nstreams; i++) {
		free(c->streams[i].xent);
		c->streams[i].xent = NULL;
	}
	rc_scan_drop_ends(c);
	rc_pair_hosts_free(c);
	free(c->doms);
	c->doms = NULL;
	rc_map_free(&c->lineage);
}
