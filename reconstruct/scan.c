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

	run->st = s;
	rc_input_cur_reset(c, run, 1);
	s->entry_first = pr->total;
	bt_ev_dict_init(dict);
	unsigned learn = SCAN_LEARN;
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
			    ev.dir == BT_DIR_OUT && ev.kind == BT_MK_REQUEST)
				im->h2_sends = 1;
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
				rc_lin_add(c, rc_scan_thread_key(s->image,
							ev.cookie), 1, 1);
			break;
		case BT_EV_FORK:
			if (ev.result > 0)
				rc_lin_add(c, rc_scan_proc_key(im->host,
						(uint32_t)ev.result, RC_LIN_FORK), 0, 1);
			break;
		case BT_EV_EXEC:
			if (ev.flags == 0)
				rc_lin_add(c, rc_scan_proc_key(im->host, im->pid,
							RC_LIN_EXEC), 0, 1);
			break;
		case BT_EV_SPAWN:
			if (ev.result > 0)
				rc_lin_add(c, rc_scan_proc_key(im->host,
						(uint32_t)ev.result, RC_LIN_SPAWN), 0, 1);
			break;
		case BT_EV_THREAD_CREATE:
			if (ev.result >= 0)
				rc_lin_add(c, rc_scan_thread_key(s->image,
							ev.cookie), 0, 1);
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
	s->nentry = pr->total - s->entry_first;
	return 0;
}

/* ---- lineage ------------------------------------------------------------ */

/*
 * A forked or exec'd image whose parent record (FORK, EXEC) no log has,
 * though its parent is traced (an image of its parent's pid on its host
 * is in the logs; for an exec, another image of its own pid): the record was
 * lost (a gap, a DROP).  It starts without its parent's state, for no
 * request, and its work must not pass for a request of its own
 * (lineage.c, rc_lineage_proc_start; msg.c, rule 5): marked, and warned
 * about.  Images of untraced parents are the usual case and stay as
 * they are.  Nothing is built when no image lacks its record.
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
	if (!any)
		return 0;
	rc_map_init(&pids);
	for (uint32_t i = 0; i < c->nimages; i++) {
		const struct rc_image *im = &c->images[i];
		uint64_t first;
		if (!im->has_start)
			continue;
		/* the first image of each (host, pid), and its index */
		if (!rc_map_get(&pids, rc_key2(im->host, im->pid), &first) &&
		    rc_map_put(&pids, rc_key2(im->host, im->pid), i) < 0) {
			rc_map_free(&pids);
			return -ENOMEM;
		}
	}
	for (uint32_t i = 0; i < c->nimages; i++) {
		struct rc_image *im = &c->images[i];
		uint64_t pi;
		if (!im->has_start || im->lineage_key ||
		    !(im->pflags & (BT_PF_FORKED | BT_PF_EXECED)))
			continue;
		int exec = !(im->pflags & BT_PF_FORKED);
		uint32_t ppid = exec ? im->pid : im->ppid;
		if (!ppid || !rc_map_get(&pids, rc_key2(im->host, ppid), &pi) ||
		    (uint32_t)pi == i)
			continue;
		im->orphan = 1;
		c->st.orphans++;
		rc_warn(c, rc_file_path(c, im->start_file), im->start_off,
			"host %s pid %u: its parent (pid %u) is traced, but the %s record that made it is in no log; it started without the parent's state",
			c->hosts[im->host].name, im->pid, ppid,
			exec ? "exec" : "fork");
	}
	rc_map_free(&pids);
	return 0;
}

/* Which parent record each image's PROC_START waits for. */
static void choose_lineage(struct rc_ctx *c)
{
	for (uint32_t i = 0; i < c->nimages; i++) {
		struct rc_image *im = &c->images[i];
		unsigned order[2] = { 0, 0 };

		if ((i & 32767) == 32767)
			rc_input_tables_release(c);
		if (!im->has_start)
			continue;
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
			if (rc_lin_left(c, key, 0)) {
				im->lineage_key = key;
				rc_lin_add(c, key, 1, 1);
				break;
			}
		}
	}
}

/* ---- the entries, for the merge, and the run --------------------------- */

int rc_scan_entry(struct rc_ctx *c, struct rc_run *r, uint32_t ei,
		  struct rc_entry *out)
{
	if (ei < r->ebuf_first || ei - r->ebuf_first >= r->ebuf_n) {
		uint32_t end = r->st->entry_first + r->st->nentry;
		uint32_t n = end - ei < RC_EBUF ? end - ei : RC_EBUF;
		r->ebuf_n = 0;
		if (ei >= end || rc_spill_read(c, &c->ent_spill, r->ebuf,
				(size_t)n * sizeof *r->ebuf,
				(uint64_t)ei * sizeof *r->ebuf) != 0)
			return -1;
		r->ebuf_first = ei;
		r->ebuf_n = n;
	}
	*out = r->ebuf[ei - r->ebuf_first];
	return 0;
}

int rc_scan_run(struct rc_ctx *c)
{
	struct rc_pair pr = { 0 };
	struct rc_run *run = calloc(1, sizeof *run);
	struct bt_ev_dict *dict = malloc(sizeof *dict);
	int r = run && dict ? 0 : -ENOMEM;

	c->phase = "scanning";
	for (uint32_t i = 0; i < c->nstreams && r == 0; i++)
		r = skim_stream(c, &pr, &c->streams[i], run, dict);
	if (run)
		rc_input_run_free(run);
	free(run);
	free(dict);
	if (r == 0)
		r = rc_clock_domains(c);
	if (r == 0) {
		choose_lineage(c);
		r = orphans(c);
	}
	if (r == 0) {
		r = rc_pair_all(c, &pr);
	}
	rc_pair_free(&pr);
	if (r < 0)
		return rc_fail(c, r, "out of memory in the first pass");
	return r;
}

void rc_scan_drop_ends(struct rc_ctx *c)
{
	rc_spill_close(&c->ent_spill);
	c->entries = NULL;
	rc_map_free(&c->lineage);
}

void rc_scan_free(struct rc_ctx *c)
{
	rc_scan_drop_ends(c);
	rc_pair_hosts_free(c);
	free(c->doms);
	c->doms = NULL;
	rc_map_free(&c->lineage);
}
