/*
 * recon.c - rc_run: the two passes, the clock estimate and the database,
 * plus the diagnostics every module uses (warnings, errors, progress).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "chan.h"
#include "clock.h"
#include "db.h"
#include "input.h"
#include "keeper.h"
#include "merge.h"
#include "model.h"
#include "recon.h"
#include "scan.h"
#include "steps.h"
#include "tokens.h"

static FILE *errf(const struct rc_ctx *c)
{
	return c->opt->err ? c->opt->err : stderr;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void progress_clear(struct rc_ctx *c)
{
	if (c->progress_tty && c->progress_last > 0) {
		fprintf(errf(c), "\r%-78s\r", "");
		fflush(errf(c));
	}
}

void rc_warn(struct rc_ctx *c, const char *file, uint64_t off,
	     const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	int limit = c->opt->max_warn_lines < 0 ? 0 : c->opt->max_warn_lines;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	c->st.warnings++;
	if (c->db)
		rc_db_warning(c, file, off, text);
	rc_notes_warning(c, fmt, file, off, text);
	if (c->opt->quiet)
		return;
	if (c->st.warnings <= (uint64_t)limit) {
		progress_clear(c);
		if (file)
			fprintf(errf(c), "bp-reconstruct: warning: %s: offset %" PRIu64 ": %s\n",
				file, off, text);
		else
			fprintf(errf(c), "bp-reconstruct: warning: %s\n", text);
	} else if (limit && c->st.warnings == (uint64_t)limit + 1) {
		progress_clear(c);
		fprintf(errf(c), "bp-reconstruct: warning: more warnings follow; all are in the warnings table, summed up by kind below\n");
	}
}

int rc_fail(struct rc_ctx *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (c->err)
		return err;
	c->err = err ? err : -EIO;
	va_start(ap, fmt);
	vsnprintf(c->errbuf, sizeof c->errbuf, fmt, ap);
	va_end(ap);
	return err;
}

void rc_progress(struct rc_ctx *c, uint64_t bytes)
{
	c->progress_done += bytes;
	if (!c->progress_tty || c->progress_done < c->progress_next)
		return;
	c->progress_next = c->progress_done + (1u << 20);
	double t = now_s();
	if (t - c->progress_last < 0.1)
		return;
	c->progress_last = t;
	uint64_t total = c->progress_total ? c->progress_total : 1;
	unsigned pct = (unsigned)(c->progress_done * 100 / total);
	if (pct > 100)
		pct = 100;
	char bar[31];
	unsigned fill = pct * 30 / 100;
	memset(bar, '#', fill);
	memset(bar + fill, '.', 30 - fill);
	bar[30] = 0;
	fprintf(errf(c), "\rbp-reconstruct: %-9s [%s] %3u%% %8.1f MB",
		c->phase ? c->phase : "", bar, pct,
		(double)c->progress_done / 2 / 1e6);
	fflush(errf(c));
}

/*
 * What a person should look at, for the end of the summary line: the
 * uncertain requests, warnings that cost paths, channels not read; the
 * unattributed events are work outside any request (start-up, stdio,
 * housekeeping) and need a look only when something else is wrong.
 */
static void look_at(const struct rc_ctx *c, uint64_t costly, uint64_t unread,
		    char *buf, size_t len)
{
	size_t o = 0;
	int n = 0;

#define ADD(...) do { \
		if (o < len) \
			o += (size_t)snprintf(buf + o, len - o, __VA_ARGS__); \
		n++; \
	} while (0)
	if (c->st.req_uncertain)
		ADD("%s%" PRIu64 " uncertain requests (view uncertain_requests)",
		    n ? ", " : "look at: ", c->st.req_uncertain);
	if (costly)
		ADD("%s%" PRIu64 " warnings that cost paths (above)",
		    n ? ", " : "look at: ", costly);
	if (unread)
		ADD("%s%" PRIu64 " channels not read (above; channels.readable = 0)",
		    n ? ", " : "look at: ", unread);
	if (rc_notes_untraced(c))
		ADD("%s%" PRIu64 " process%s not traced (network I/O past libc, above; table untraced_programs)",
		    n ? ", " : "look at: ", rc_notes_untraced(c),
		    rc_notes_untraced(c) == 1 ? "" : "es");
	if (c->st.lost_records + c->st.dropped)
		ADD("%sthe lost events", n ? ", " : "look at: ");
#undef ADD
	if (!n)
		snprintf(buf, len, "nothing to look at%s",
			 c->st.warnings ? ": the warnings are expected" : "");
}

static int exit_of(int err)
{
	if (err == RC_EXIT_INPUT || err == RC_EXIT_USAGE)
		return err;
	return RC_EXIT_OUTPUT;
}

void rc_run_init(struct rc_ctx *c, const struct rc_options *o)
{
	memset(c, 0, sizeof *c);
	c->opt = o;
	c->progress_tty = o->progress < 0 ? (!o->quiet && isatty(2)) : o->progress;
	rc_map_init(&c->lineage);
	rc_map_init(&c->host_ip);
	/* It holds every parent record and child until the merge meets
	 * them: let it shrink as it does. */
	c->lineage.shrink = 1;
}

int rc_run_begin(struct rc_ctx *c)
{
	const struct rc_options *o = c->opt;
	int r;

	if ((r = rc_db_open(c)) != 0)
		return r;
	if ((r = rc_input_open(c)) != 0)
		return r;
	c->progress_total = c->st.payload_bytes * 2;
	if (o->grow_fn)
		rc_grow_disk_init(c);
	if ((!o->grow_fn && !c->grow.fn && o->steps > 1 &&
	     (r = rc_steps_init(c, o->steps, o->steps_unsafe)) != 0) ||
	    (r = rc_scan_run(c)) != 0 || (r = rc_clock_init(c)) != 0 ||
	    (r = rc_span_init(c)) != 0 || (r = rc_chan_init(c)) != 0 ||
	    (r = rc_model_init(c)) != 0) {
		if (!c->err)
			rc_fail(c, r, "out of memory");
		return r;
	}
	return 0;
}

int rc_run_end(struct rc_ctx *c, double t0, struct rc_summary *sum)
{
	const struct rc_options *o = c->opt;
	int r;

	rc_input_say(c);
	rc_model_finish(c);
	/* What pass 1 learnt of each channel end, the lineage map and the
	 * merge's runs (as many as streams were ever active at once) are no
	 * longer needed: give them back before SQLite inserts the rows and
	 * builds the indexes. */
	rc_merge_free(c);
	rc_scan_drop_ends(c);
	rc_input_release(c);
	rc_clock_solve(c);
	if (c->err)
		return c->err;
	if ((r = rc_db_finish(c)) != 0)
		return r;
	progress_clear(c);

	double dt = now_s() - t0;
	uint64_t unattr = c->st.unattr_fragments + c->st.unattr_messages +
			  c->st.unattr_files + c->st.unattr_spans;
	uint64_t costly = rc_notes_costly(c), unread = rc_notes_unread(c);
	if (!o->quiet) {
		char look[256];
		rc_clock_report(c, errf(c));
		rc_notes_print_warnings(c, errf(c));
		rc_notes_print_unread(c, errf(c));
		rc_notes_print_untraced(c, errf(c));
		look_at(c, costly, unread, look, sizeof look);
		if (o->steps > 1)
			fprintf(errf(c),
				"bp-reconstruct: the merge in %d steps: %" PRIu64 " resumptions, %" PRIu64 " dry runs read on, at most %" PRIu64 " dry at once, %" PRIu64 " pauses for a look ahead, %" PRIu64 " for a record a later one may change, %" PRIu64 " asked for a next record they did not have\n",
				o->steps, c->st.merge_pauses, c->st.merge_dry_resumed,
				c->st.merge_dry_max, c->st.merge_ahead_waits,
				c->st.merge_hold_waits,
				c->st.merge_dry_peeked);
		if (o->ngrpc_unary)
			fprintf(errf(c),
				"bp-reconstruct: gRPC methods named unary: %" PRIu64 " calls of them; %" PRIu64 " request messages judged without a call whose body had not come%s\n",
				c->st.grpc_unary_calls, c->st.grpc_unary_excluded,
				c->st.grpc_unary_calls ? "" :
				" (no call matched a name: check --grpc-unary and --grpc-proto)");
		fprintf(errf(c),
			"bp-reconstruct: %" PRIu64 " events read (%" PRIu64 " lost), %" PRIu64 " requests (%" PRIu64 " exact, %" PRIu64 " resolved, %" PRIu64 " uncertain), %" PRIu64 " spans, %" PRIu64 " unattributed, %" PRIu64 " warnings -> %s (%.2f s, %.0f events/s); %s\n",
			c->st.events, c->st.lost_records + c->st.dropped,
			c->st.requests, c->st.req_exact, c->st.req_resolved,
			c->st.req_uncertain, c->st.spans, unattr, c->st.warnings,
			o->output, dt, dt > 0 ? (double)c->st.events / dt : 0.0,
			look);
	}
	if (sum) {
		memset(sum, 0, sizeof *sum);
		sum->events = c->st.events;
		sum->lost = c->st.lost_records + c->st.dropped;
		sum->requests = c->st.requests;
		sum->spans = c->st.spans;
		sum->messages = c->st.messages;
		sum->fragments = c->st.fragments;
		sum->unattributed = unattr;
		sum->warnings = c->st.warnings;
		sum->hosts = c->nhosts;
		sum->domains = c->ndoms;
		sum->exact = c->st.req_exact;
		sum->resolved = c->st.req_resolved;
		sum->uncertain = c->st.req_uncertain;
		sum->unreadable = unread;
		sum->costly_warnings = costly;
		sum->untraced = rc_notes_untraced(c);
		sum->pending = c->st.peer_pending;
		sum->pending_max = c->st.peer_pending_max;
		sum->spool_bytes = c->st.spool_bytes;
		sum->replay_threads = c->st.replay_threads;
	}
	return RC_EXIT_OK;
}

int rc_run_fail(struct rc_ctx *c, int r)
{
	progress_clear(c);
	fprintf(errf(c), "bp-reconstruct: error: %s\n",
		c->errbuf[0] ? c->errbuf : strerror(r < 0 ? -r : EIO));
	r = exit_of(c->err ? c->err : r);
	rc_db_abort(c);
	return r;
}

void rc_run_free(struct rc_ctx *c)
{
	rc_merge_free(c);
	rc_steps_free(c);
	rc_model_free(c);
	rc_chan_free(c);
	rc_span_free(c);
	rc_tok_free(c);
	rc_clock_free(c);
	rc_scan_free(c);
	rc_input_close(c);
	rc_notes_free(c);
}

double rc_run_now(void)
{
	return now_s();
}

int rc_run(const struct rc_options *o, struct rc_summary *sum)
{
	struct rc_ctx c;
	double t0 = now_s();
	int r;

	rc_run_init(&c, o);
	if ((r = rc_run_begin(&c)) != 0 || (r = rc_merge_run(&c)) != 0 ||
	    (r = rc_run_end(&c, t0, sum)) != 0)
		r = rc_run_fail(&c, r);
	rc_run_free(&c);
	return r;
}
