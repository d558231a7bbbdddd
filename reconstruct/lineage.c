/*
 * lineage.c - the rules of lineage (docs/reconstruct.md, "The rules"): a
 * parent's FORK, SPAWN, EXEC or THREAD_CREATE record leaves a snapshot of
 * its designation, the child's first record takes it; images attached to
 * processes, and their end.  Called by model.c (lineage.h).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "chan.h"
#include "db.h"
#include "input.h"
#include "lineage.h"
#include "merge.h"
#include "scan.h"
#include "span.h"

/* What a parent record hands to the child that waits for it. */
struct rc_snap {
	struct rc_snap *next;
	struct rc_desig d;
	struct rc_proc *proc;    /* holds a reference; NULL for threads */
	uint64_t parent_process_id;
	uint32_t parent_image;
	const char *how;
	int64_t  t;
	uint32_t dom;
};

static void snap_push(struct rc_model *m, uint64_t key, struct rc_snap *sn)
{
	struct rc_snap *head = rc_map_getp(&m->snaps, key);
	sn->next = NULL;
	if (!head) {
		rc_map_put(&m->snaps, key, (uint64_t)(uintptr_t)sn);
		return;
	}
	while (head->next)
		head = head->next;
	head->next = sn;
}

static struct rc_snap *snap_take(struct rc_model *m, uint64_t key)
{
	struct rc_snap *sn = rc_map_getp(&m->snaps, key);
	if (!sn)
		return NULL;
	if (sn->next)
		rc_map_put(&m->snaps, key, (uint64_t)(uintptr_t)sn->next);
	else
		rc_map_del(&m->snaps, key);
	return sn;
}

/* A parent record for KEY: hand D (and PROC) to the child if one comes. */
void rc_lineage_parent_record(struct ap *a, uint64_t key,
			      struct rc_proc *proc, const char *how)
{
	struct rc_ctx *c = a->c;

	rc_lin_add(c, key, 0, -1);
	if (rc_lin_left(c, key, 1) > 0) {
		struct rc_snap *sn = calloc(1, sizeof *sn);
		if (sn) {
			rc_lin_add(c, key, 1, -1);
			sn->d = a->th->d;
			sn->proc = proc;
			if (proc)
				proc->refs++;
			sn->parent_process_id = a->im->run->process_id;
			sn->parent_image = a->s->st->image;
			sn->how = how;
			sn->t = a->t;
			sn->dom = a->im->domain;
			snap_push(a->m, key, sn);
		}
	} else {
		rc_scan_no_child(c, key);
	}
	rc_merge_wake(c, key);
}

/* Can a child waiting on KEY go?  Yes if its parent record was applied,
 * or if no parent record is left to wait for. */
int rc_lineage_ready(struct rc_ctx *c, uint64_t key)
{
	if (rc_map_get(&c->model->snaps, key, NULL))
		return 1;
	if (rc_lin_left(c, key, 0))
		return 0;
	rc_scan_no_parent(c, key);
	return 1;
}

static void image_attach(struct ap *a, struct rc_proc *p,
			 const struct rc_snap *sn)
{
	struct rc_image *im = a->im;

	im->run->proc = p;
	p->refs++;
	im->run->attached = 1;
	im->run->process_id = ++a->m->next_process;
	if (sn) {
		im->run->parent_process_id = sn->parent_process_id;
		im->run->how = sn->how;
		im->run->start_req = sn->d.req;
	}
}

/* The process of the current image, attaching it on first use. */
struct rc_proc *rc_lineage_proc_of(struct ap *a)
{
	struct rc_image *im = a->im;
	if (im->run->attached)
		return im->run->proc;
	struct rc_proc *p = rc_chan_proc_get(a->c, im->host, im->pid);
	if (!p && !(p = rc_chan_proc_new(a->c, im->host, im->pid)))
		return NULL;
	image_attach(a, p, NULL);
	return p;
}

static void image_end(struct rc_ctx *c, struct rc_image *im)
{
	char cmdline[1025] = "";
	struct bt_event ev;
	uint64_t prev = im->start_prev;
	uint8_t rec[1 + 3 + BT_EV_MAX_BODY];

	if (!im->run || !im->run->attached)
		return;
	/* The command line is read again from the PROC_START record (its
	 * block was checked when pass 1 read it). */
	if (im->has_start && im->start_len <= sizeof rec &&
	    rc_input_read_rec(c, im->start_file, im->start_off,
			      im->start_len, rec) == 0 &&
	    rec[0] == BT_EV_PROC_START &&
	    bt_ev_decode(rec, im->start_len, &ev, &prev) > 0)
		snprintf(cmdline, sizeof cmdline, "%.*s",
			 (int)(ev.str2_len > 1024 ? 1024 : ev.str2_len),
			 ev.str2 ? ev.str2 : "");
	struct rc_row_process r = {
		.id = im->run->process_id, .parent = im->run->parent_process_id,
		.req = im->run->start_req, .dom = im->domain, .pid = im->pid,
		.ppid = im->ppid, .host = c->hosts[im->host].name,
		.exe = im->exe, .cmdline = im->has_start ? cmdline : NULL,
		.how = im->run->how,
		.ring_id = im->ring_id, .start = im->run->first_ts,
		.end = im->run->last_ts, .events = im->events,
	};
	rc_db_process(c, &r);
	im->run->attached = 0;
	rc_chan_proc_unref(c, im->run->proc, im->run->last_ts);
	im->run->proc = NULL;
}

/* The merge's state of IM, made when its first record is met. */
struct rc_imrun *rc_lineage_imrun(struct rc_ctx *c, struct rc_image *im)
{
	if (im->run)
		return im->run;
	im->run = calloc(1, sizeof *im->run);
	if (!im->run) {
		rc_fail(c, -ENOMEM, "out of memory in the merge");
		return NULL;
	}
	im->run->live_streams = im->nstreams;
	return im->run;
}

/* IM's last stream ended: write its row, let its process go. */
void rc_lineage_image_done(struct rc_ctx *c, struct rc_image *im)
{
	image_end(c, im);
	free(im->run);
	im->run = NULL;
}


void rc_lineage_thread_start(struct ap *a)
{
	struct rc_thr *th = a->th;
	const struct bt_event *ev = a->ev;

	if (th->started) {
		rc_sig_end(a);
		rc_frag_close(a);
		rc_lookups_close(a);
	}
	th->started = 1;
	th->tid = ev->tid;
	memset(&th->d, 0, sizeof th->d);
	th->inherited = 0;
	int lost = 0;
	if (ev->cookie) {
		struct rc_snap *sn = snap_take(a->m,
				rc_scan_thread_key(a->s->st->image, ev->cookie));
		if (sn) {
			th->d = sn->d;
			th->inherited = sn->d.req != 0;
			if (sn->dom == a->im->domain && sn->t > a->t)
				a->t = sn->t;
			free(sn);
		} else {
			lost = 1;   /* its creation record never came */
		}
	} else if (!a->im->run->attached && a->im->lineage_key) {
		/* A child image's first thread: not before the parent's
		 * record (PROC_START takes the snapshot). */
		const struct rc_snap *sn = rc_map_getp(&a->m->snaps,
						       a->im->lineage_key);
		if (sn && sn->dom == a->im->domain && sn->t > a->t)
			a->t = sn->t;
	}
	rc_frag_open(a, RC_TR_START, -1, 0);
	/* started without its creator's request: a request its work
	 * starts (rule 5) may be that one's (msg.c) */
	if (lost)
		th->frag.lost = "lost-events";
}

void rc_lineage_proc_start(struct ap *a)
{
	struct rc_image *im = a->im;
	struct rc_snap *sn = NULL;

	int waits = !im->run->attached && im->lineage_key;

	if (waits)
		sn = snap_take(a->m, im->lineage_key);
	/* its parent's FORK or EXEC record never came (lost), or is in no
	 * log at all (scan.c, orphans) */
	int orphan = (waits && !sn) || im->orphan;
	if (sn) {
		struct rc_proc *p = sn->proc;
		/* The child process object is reachable by its pid again. */
		rc_chan_proc_show(a->c, p);
		image_attach(a, p, sn);
		a->th->d = sn->d;
		if (sn->dom == im->domain && sn->t > a->t)
			a->t = sn->t;
		rc_chan_proc_unref(a->c, p, a->t);
		free(sn);
	} else {
		rc_lineage_proc_of(a);
	}
	if (!a->th->frag.open || a->th->frag.trigger != RC_TR_START)
		rc_frag_open(a, RC_TR_START, -1, 0);
	/* An orphan starts without its parent's state, so for no
	 * request, and a request its work starts (rule 5) may be the
	 * parent's (msg.c). */
	if (orphan)
		a->th->frag.lost = "lost-events";
}

void rc_lineage_fork_like(struct ap *a, unsigned kind)
{
	const struct bt_event *ev = a->ev;
	struct rc_proc *p = rc_lineage_proc_of(a);

	if (!p || ev->result <= 0)
		return;
	uint32_t child = (uint32_t)ev->result;
	uint64_t key = rc_scan_proc_key(a->im->host, child, kind);
	struct rc_proc *np = NULL;

	if (rc_lin_left(a->c, key, 1) > 0)
		np = rc_chan_proc_copy(a->c, p, child, a->t);
	rc_lineage_parent_record(a, key, np,
				 kind == RC_LIN_SPAWN ? "spawn" :
				 (ev->flags & 1) ? "vfork" : "fork");
	if (np)   /* the snapshot holds it now */
		rc_chan_proc_unref(a->c, np, a->t);
}

void rc_lineage_exec(struct ap *a)
{
	const struct bt_event *ev = a->ev;
	struct rc_proc *p = rc_lineage_proc_of(a);
	uint64_t key = rc_scan_proc_key(a->im->host, a->im->pid, RC_LIN_EXEC);

	if (!p)
		return;
	if (ev->flags == 0) {
		rc_lineage_parent_record(a, key, p, "exec");
		return;
	}
	/* The exec failed: take back the snapshot this image made. */
	struct rc_snap *prev = NULL;
	for (struct rc_snap *sn = rc_map_getp(&a->m->snaps, key); sn;
	     prev = sn, sn = sn->next) {
		if (sn->parent_image != a->s->st->image)
			continue;
		if (prev)
			prev->next = sn->next;
		else if (sn->next)
			rc_map_put(&a->m->snaps, key, (uint64_t)(uintptr_t)sn->next);
		else
			rc_map_del(&a->m->snaps, key);
		rc_lin_add(a->c, key, 1, 1);
		rc_chan_proc_unref(a->c, sn->proc, a->t);
		free(sn);
		break;
	}
}

/* Drop the snapshots parents left for children that never came. */
void rc_lineage_drop(struct rc_ctx *c)
{
	struct rc_model *m = c->model;

	for (size_t i = 0; i < m->snaps.cap; i++) {
		if (!m->snaps.used[i])
			continue;
		struct rc_snap *sn = (struct rc_snap *)(uintptr_t)m->snaps.vals[i];
		while (sn) {
			struct rc_snap *nx = sn->next;
			if (sn->proc)
				rc_chan_proc_unref(c, sn->proc, sn->t);
			free(sn);
			sn = nx;
		}
	}
	rc_map_free(&m->snaps);
}
