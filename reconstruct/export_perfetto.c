/*
 * export_perfetto.c - the paths as Chrome trace-event JSON for
 * ui.perfetto.dev and chrome://tracing (see export.h and docs/report.md,
 * "Perfetto").
 *
 * One process per traced process image (pid = processes.process_id, its
 * name "exe[pid]@host"), one thread per thread.  Spans are complete events
 * ("X"); complete events of one thread must nest, so spans of a thread
 * that overlap without nesting (an event loop serving several requests at
 * once) go to further lanes of that thread, synthetic threads numbered
 * tid + lane * 2^22 and named "tid N (lane L)".  The fragments of work of
 * a thread are complete events on one more lane, "tid N work".  Every
 * message between two traced processes is a flow ("s" at the sender's
 * span, "f" bound to the receiver's span).  Times are microseconds from
 * the first event (otherData.origin_unix_ns), with nanosecond decimals.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"

#define LANE_SHIFT 22
#define WORK_LANE  255

struct lane {                    /* the open spans of one lane, nested */
	int64_t *end;
	size_t   n, cap;
};

struct spanloc {                 /* where a span was drawn */
	int64_t id, start, end, tid;
	int64_t proc;
};

struct pf {
	struct export_db *x;
	FILE    *f;
	int64_t  origin;
	int      first;
	struct lane *lanes;
	size_t   nlanes, caplanes;
	struct spanloc *loc;         /* sorted by id at the end */
	size_t   nloc, caploc;
};

static void ev_sep(struct pf *p)
{
	fputs(p->first ? "\n" : ",\n", p->f);
	p->first = 0;
}

/* Microseconds since the origin, exact to the nanosecond. */
static void ts(struct pf *p, const char *key, int64_t ns)
{
	int64_t d = ns - p->origin;
	const char *sign = d < 0 ? "-" : "";
	if (d < 0)
		d = -d;
	fprintf(p->f, ",\"%s\":%s%" PRId64 ".%03d", key, sign, d / 1000,
		(int)(d % 1000));
}

static int oom(struct pf *p)
{
	snprintf(p->x->err, sizeof p->x->err, "out of memory");
	return -1;
}

static int lane_push(struct pf *p, struct lane *l, int64_t end)
{
	if (l->n == l->cap) {
		size_t c = l->cap ? l->cap * 2 : 8;
		int64_t *e = realloc(l->end, c * sizeof *e);
		if (!e)
			return oom(p);
		l->end = e;
		l->cap = c;
	}
	l->end[l->n++] = end;
	return 0;
}

static void lanes_reset(struct pf *p)
{
	for (size_t i = 0; i < p->nlanes; i++)
		p->lanes[i].n = 0;
}

/* The first lane where a span [S, E] nests or follows; -1 on error. */
static long lane_for(struct pf *p, int64_t s, int64_t e)
{
	for (size_t i = 0;; i++) {
		if (i == p->nlanes) {
			if (i >= WORK_LANE - 1)
				return (long)i - 1;   /* draw over the last one */
			if (p->nlanes == p->caplanes) {
				size_t c = p->caplanes ? p->caplanes * 2 : 4;
				struct lane *l = realloc(p->lanes, c * sizeof *l);
				if (!l)
					return oom(p);
				p->lanes = l;
				p->caplanes = c;
			}
			memset(&p->lanes[p->nlanes++], 0, sizeof *p->lanes);
		}
		struct lane *l = &p->lanes[i];
		while (l->n && l->end[l->n - 1] <= s)
			l->n--;
		if (!l->n || l->end[l->n - 1] >= e) {
			if (lane_push(p, l, e) < 0)
				return -1;
			return (long)i;
		}
	}
}

static int meta(struct pf *p)
{
	sqlite3_stmt *s = export_prep(p->x,
		"SELECT process_id, exe, pid, host FROM processes ORDER BY process_id");
	if (!s)
		return -1;
	while (sqlite3_step(s) == SQLITE_ROW) {
		char name[512];
		snprintf(name, sizeof name, "%s[%lld]@%s",
			 export_basename(export_col(s, 1)),
			 (long long)sqlite3_column_int64(s, 2), export_col(s, 3));
		ev_sep(p);
		fprintf(p->f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%lld,\"tid\":0,\"args\":{\"name\":",
			(long long)sqlite3_column_int64(s, 0));
		export_json_str(p->f, name);
		fputs("}}", p->f);
		ev_sep(p);
		fprintf(p->f, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%lld,\"tid\":0,\"args\":{\"sort_index\":%lld}}",
			(long long)sqlite3_column_int64(s, 0),
			(long long)sqlite3_column_int64(s, 0));
	}
	sqlite3_finalize(s);
	return 0;
}

static void thread_name(struct pf *p, int64_t proc, int64_t tid, long lane)
{
	char name[96];
	if (lane == WORK_LANE)
		snprintf(name, sizeof name, "tid %lld work", (long long)tid);
	else if (lane)
		snprintf(name, sizeof name, "tid %lld (lane %ld)", (long long)tid,
			 lane + 1);
	else
		snprintf(name, sizeof name, "tid %lld", (long long)tid);
	ev_sep(p);
	fprintf(p->f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%lld,\"tid\":%lld,\"args\":{\"name\":\"%s\"}}",
		(long long)proc, (long long)(tid + ((int64_t)lane << LANE_SHIFT)),
		name);
	ev_sep(p);
	fprintf(p->f, "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%lld,\"tid\":%lld,\"args\":{\"sort_index\":%lld}}",
		(long long)proc, (long long)(tid + ((int64_t)lane << LANE_SHIFT)),
		(long long)(tid * 512 + lane));
}

static int spans(struct pf *p)
{
	sqlite3_stmt *s = export_prep(p->x,
		"SELECT span_id, process_id, tid, start_ns,\n"
		"  COALESCE(end_ns, start_ns), kind, protocol, name, target,\n"
		"  status, request_id, end_ns IS NULL, peer, certainty,\n"
		"  certainty_reason\n"
		"FROM spans WHERE process_id IS NOT NULL\n"
		"ORDER BY process_id, tid, start_ns, COALESCE(end_ns, start_ns) DESC,\n"
		"  span_id");
	int64_t cur_proc = -1, cur_tid = -1;
	size_t named = 0;            /* lanes of this thread named so far */

	if (!s)
		return -1;
	while (sqlite3_step(s) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(s, 0);
		int64_t proc = sqlite3_column_int64(s, 1);
		int64_t tid = sqlite3_column_int64(s, 2);
		int64_t st = sqlite3_column_int64(s, 3);
		int64_t en = sqlite3_column_int64(s, 4);
		if (en < st)
			en = st;
		if (proc != cur_proc || tid != cur_tid) {
			lanes_reset(p);
			cur_proc = proc;
			cur_tid = tid;
			named = 0;
		}
		long lane = lane_for(p, st, en);
		if (lane < 0) {
			sqlite3_finalize(s);
			return -1;
		}
		while (named <= (size_t)lane)
			thread_name(p, proc, tid, (long)named++);
		int64_t vtid = tid + ((int64_t)lane << LANE_SHIFT);
		ev_sep(p);
		fputs("{\"ph\":\"X\",\"name\":", p->f);
		export_json_str(p->f, export_col(s, 7)[0] ? export_col(s, 7) :
				export_col(s, 6));
		fprintf(p->f, ",\"cat\":\"%s,%s\",\"pid\":%lld,\"tid\":%lld",
			!strcmp(export_col(s, 5), "server") ? "server" : "client",
			export_col(s, 6)[0] ? export_col(s, 6) : "none",
			(long long)proc, (long long)vtid);
		ts(p, "ts", st);
		fprintf(p->f, ",\"dur\":%" PRId64 ".%03d", (en - st) / 1000,
			(int)((en - st) % 1000));
		fprintf(p->f, ",\"args\":{\"span_id\":%lld", (long long)id);
		if (sqlite3_column_type(s, 10) != SQLITE_NULL)
			fprintf(p->f, ",\"request_id\":%lld",
				(long long)sqlite3_column_int64(s, 10));
		fputs(",\"target\":", p->f);
		export_json_str(p->f, (const char *)sqlite3_column_text(s, 8));
		if (sqlite3_column_type(s, 9) != SQLITE_NULL)
			fprintf(p->f, ",\"status\":%lld",
				(long long)sqlite3_column_int64(s, 9));
		fputs(",\"peer\":", p->f);
		export_json_str(p->f, export_col(s, 12));
		if (sqlite3_column_int(s, 11))
			fputs(",\"unanswered\":true", p->f);
		fputs(",\"bp.certainty\":", p->f);
		export_json_str(p->f, export_col(s, 13));
		if (sqlite3_column_type(s, 14) != SQLITE_NULL) {
			fputs(",\"bp.certainty_reason\":", p->f);
			export_json_str(p->f, export_col(s, 14));
		}
		fputs("}}", p->f);
		p->x->n_spans++;
		if (p->nloc == p->caploc) {
			size_t c = p->caploc ? p->caploc * 2 : 1024;
			struct spanloc *l = realloc(p->loc, c * sizeof *l);
			if (!l) {
				sqlite3_finalize(s);
				return oom(p);
			}
			p->loc = l;
			p->caploc = c;
		}
		p->loc[p->nloc++] = (struct spanloc){ id, st, en, vtid, proc };
	}
	sqlite3_finalize(s);
	return 0;
}

static int fragments(struct pf *p)
{
	sqlite3_stmt *s = export_prep(p->x,
		"SELECT f.process_id, f.tid, f.start_ns, f.end_ns, f.trigger,\n"
		"  f.request_id, r.target, f.events, f.fd\n"
		"FROM fragments f LEFT JOIN requests r ON r.request_id = f.request_id\n"
		"WHERE f.process_id IS NOT NULL\n"
		"ORDER BY f.process_id, f.tid, f.start_ns");
	int64_t cur_proc = -1, cur_tid = -1;
	if (!s)
		return -1;
	while (sqlite3_step(s) == SQLITE_ROW) {
		int64_t proc = sqlite3_column_int64(s, 0);
		int64_t tid = sqlite3_column_int64(s, 1);
		int64_t st = sqlite3_column_int64(s, 2);
		int64_t en = sqlite3_column_int64(s, 3);
		if (en < st)
			en = st;
		if (proc != cur_proc || tid != cur_tid) {
			thread_name(p, proc, tid, WORK_LANE);
			cur_proc = proc;
			cur_tid = tid;
		}
		ev_sep(p);
		fputs("{\"ph\":\"X\",\"name\":", p->f);
		if (sqlite3_column_type(s, 5) != SQLITE_NULL) {
			char name[64];
			snprintf(name, sizeof name, "request %lld",
				 (long long)sqlite3_column_int64(s, 5));
			export_json_str(p->f, name);
		} else {
			export_json_str(p->f, "no request");
		}
		fprintf(p->f, ",\"cat\":\"work\",\"pid\":%lld,\"tid\":%lld",
			(long long)proc,
			(long long)(tid + ((int64_t)WORK_LANE << LANE_SHIFT)));
		ts(p, "ts", st);
		fprintf(p->f, ",\"dur\":%" PRId64 ".%03d", (en - st) / 1000,
			(int)((en - st) % 1000));
		fprintf(p->f, ",\"args\":{\"trigger\":\"%s\",\"events\":%lld,\"fd\":%lld,\"request\":",
			export_col(s, 4), (long long)sqlite3_column_int64(s, 7),
			(long long)sqlite3_column_int64(s, 8));
		export_json_str(p->f, (const char *)sqlite3_column_text(s, 6));
		fputs("}}", p->f);
		p->x->n_events++;
	}
	sqlite3_finalize(s);
	return 0;
}

static int cmp_loc(const void *a, const void *b)
{
	const struct spanloc *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

static const struct spanloc *find_loc(const struct pf *p, int64_t id)
{
	struct spanloc key = { .id = id };
	return bsearch(&key, p->loc, p->nloc, sizeof *p->loc, cmp_loc);
}

/* A time inside the span [start, end) when it has a length. */
static int64_t inside(const struct spanloc *l, int64_t t)
{
	if (t > l->end - 1)
		t = l->end - 1;
	if (t < l->start)
		t = l->start;
	return t;
}

static int flows(struct pf *p)
{
	sqlite3_stmt *s = export_prep(p->x,
		"SELECT r.message_id, r.span_id, o.span_id,\n"
		"  COALESCE(o.begin_ns, o.ts_ns), r.ts_ns, r.kind, r.protocol\n"
		"FROM messages r JOIN messages o ON o.message_id = r.peer_message_id\n"
		"WHERE r.dir = 'in' AND r.span_id IS NOT NULL AND o.span_id IS NOT NULL\n"
		"ORDER BY r.message_id");
	if (!s)
		return -1;
	qsort(p->loc, p->nloc, sizeof *p->loc, cmp_loc);
	while (sqlite3_step(s) == SQLITE_ROW) {
		const struct spanloc *to = find_loc(p, sqlite3_column_int64(s, 1));
		const struct spanloc *from = find_loc(p, sqlite3_column_int64(s, 2));
		if (!to || !from)
			continue;
		int64_t id = sqlite3_column_int64(s, 0);
		char name[64];
		snprintf(name, sizeof name, "%s %s", export_col(s, 6),
			 export_col(s, 5));
		ev_sep(p);
		fprintf(p->f, "{\"ph\":\"s\",\"id\":%lld,\"cat\":\"message\",\"name\":\"%s\",\"pid\":%lld,\"tid\":%lld",
			(long long)id, name, (long long)from->proc,
			(long long)from->tid);
		ts(p, "ts", inside(from, sqlite3_column_int64(s, 3)));
		fputs("}", p->f);
		ev_sep(p);
		fprintf(p->f, "{\"ph\":\"f\",\"bp\":\"e\",\"id\":%lld,\"cat\":\"message\",\"name\":\"%s\",\"pid\":%lld,\"tid\":%lld",
			(long long)id, name, (long long)to->proc,
			(long long)to->tid);
		ts(p, "ts", inside(to, sqlite3_column_int64(s, 4)));
		fputs("}", p->f);
		p->x->n_events++;
	}
	sqlite3_finalize(s);
	return 0;
}

int export_perfetto(struct export_db *x, const char *file)
{
	struct pf p;
	struct export_file out;
	int r = -1;

	memset(&p, 0, sizeof p);
	p.x = x;
	p.first = 1;
	x->n_files = x->n_traces = x->n_spans = x->n_events = 0;
	sqlite3_stmt *o = export_prep(x,
		"SELECT MIN(t) FROM (SELECT MIN(start_ns) AS t FROM spans\n"
		"  UNION ALL SELECT MIN(start_ns) FROM fragments)");
	if (!o)
		return -1;
	if (sqlite3_step(o) == SQLITE_ROW)
		p.origin = sqlite3_column_int64(o, 0);
	sqlite3_finalize(o);
	if (export_file_open(x, &out, file) < 0)
		return -1;
	p.f = out.f;
	fprintf(p.f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"bp-reconstruct %s\",\"database\":",
		PACKAGE_VERSION);
	export_json_str(p.f, x->path);
	fprintf(p.f, ",\"origin_unix_ns\":\"%" PRId64 "\"},\"traceEvents\":[", p.origin);
	if (meta(&p) < 0 || spans(&p) < 0 || fragments(&p) < 0 || flows(&p) < 0) {
		export_file_abort(&out);
		goto out;
	}
	fputs("\n]}\n", p.f);
	if (export_file_commit(x, &out) < 0)
		goto out;
	x->n_files = 1;
	x->n_traces = 1;
	r = 0;
out:
	for (size_t i = 0; i < p.nlanes; i++)
		free(p.lanes[i].end);
	free(p.lanes);
	free(p.loc);
	return r;
}
