/*
 * export_otlp.c - the paths as OTLP/JSON traces (see export.h and
 * docs/report.md, "OTLP").
 *
 * The file is JSON Lines: one TracesData object per request, as the
 * OpenTelemetry collector's file exporter writes and its otlpjsonfile
 * receiver reads, so each line is also a complete OTLP/JSON document for
 * Jaeger or Tempo.  The protobuf JSON mapping of OTLP: lowerCamelCase
 * field names, trace and span ids as lowercase hex (16 and 8 bytes), enums
 * as integers, 64-bit integers as decimal strings.
 *
 * The same documents go to a collector over OTLP/HTTP (export_otlp_push):
 * protobuf or OTLP/JSON, a batch of spans per request instead of a
 * request per line.  The mapping from the database is written once, here;
 * otlp_wire.c encodes it either way, otlp_push.c sends it.
 *
 * Ids: the trace id is a 64-bit value derived from the database (its
 * hosts' boot ids and first request) followed by the request id; a span id
 * is a bijective mix of that value and the span id, so ids are stable for
 * one database and differ between databases.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "otlp_push.h"
#include "otlp_wire.h"

#define MAX_EVENTS 128           /* span events (files opened) per span */

struct otlp {
	struct export_db *x;
	struct ow w;                 /* the document being written */
	size_t   batch;              /* spans per document; 0: per request */
	FILE    *f;                  /* the file, or */
	struct otlp_push *push;      /* the collector */
	int      ended;              /* the push has ended: stop */
	uint64_t seed;
	/* channel id -> database name (PostgreSQL start-up), sorted */
	struct chandb { int64_t ch; char *db; } *dbs;
	size_t   ndbs;
	sqlite3_stmt *reqs, *spans, *attrs, *files;
};

static uint64_t mix64(uint64_t v)
{
	v ^= v >> 30; v *= 0xbf58476d1ce4e5b9ull;
	v ^= v >> 27; v *= 0x94d049bb133111ebull;
	v ^= v >> 31;
	return v;
}

static uint64_t fnv(uint64_t h, const char *s)
{
	for (; s && *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

static int load_seed(struct otlp *o)
{
	/* --follow keeps one seed for the whole run: its database grows
	 * while the requests are pushed a few at a time */
	sqlite3_stmt *f;
	if (sqlite3_prepare_v2(o->x->h, "SELECT value FROM follow_state WHERE key = 'otlp_seed'",
			       -1, &f, NULL) == SQLITE_OK) {
		int got = sqlite3_step(f) == SQLITE_ROW;
		if (got)
			o->seed = (uint64_t)sqlite3_column_int64(f, 0) | 1;
		sqlite3_finalize(f);
		if (got)
			return 0;
	}
	sqlite3_stmt *s = export_prep(o->x,
		"SELECT (SELECT group_concat(boot_id || name, ',') FROM hosts),\n"
		"       (SELECT MIN(start_ns) FROM requests)");
	if (!s)
		return -1;
	uint64_t h = 0xcbf29ce484222325ull;
	if (sqlite3_step(s) == SQLITE_ROW) {
		h = fnv(h, export_col(s, 0));
		h = fnv(h, export_col(s, 1));
	}
	sqlite3_finalize(s);
	o->seed = mix64(h) | 1;
	return 0;
}

static int cmp_chandb(const void *a, const void *b)
{
	const struct chandb *p = a, *q = b;
	return p->ch < q->ch ? -1 : p->ch > q->ch;
}

static int load_dbs(struct otlp *o)
{
	sqlite3_stmt *s = export_prep(o->x,
		"SELECT m.channel_id, MIN(a.value) FROM attrs a\n"
		"  JOIN messages m ON m.message_id = a.message_id\n"
		"WHERE a.key = 'database' AND m.channel_id IS NOT NULL\n"
		"GROUP BY m.channel_id");
	size_t cap = 0;
	if (!s)
		return -1;
	while (sqlite3_step(s) == SQLITE_ROW) {
		if (o->ndbs == cap) {
			cap = cap ? cap * 2 : 16;
			struct chandb *p = realloc(o->dbs, cap * sizeof *p);
			if (!p) {
				sqlite3_finalize(s);
				snprintf(o->x->err, sizeof o->x->err, "out of memory");
				return -1;
			}
			o->dbs = p;
		}
		o->dbs[o->ndbs].ch = sqlite3_column_int64(s, 0);
		o->dbs[o->ndbs].db = strdup(export_col(s, 1));
		if (!o->dbs[o->ndbs].db) {
			sqlite3_finalize(s);
			snprintf(o->x->err, sizeof o->x->err, "out of memory");
			return -1;
		}
		o->ndbs++;
	}
	sqlite3_finalize(s);
	if (o->ndbs)
		qsort(o->dbs, o->ndbs, sizeof *o->dbs, cmp_chandb);
	return 0;
}

/* The database of the channel a span used, or NULL.  Spans on the
 * server side have their own channel end; the start-up message was read
 * on the same end. */
static const char *db_of(const struct otlp *o, int64_t ch)
{
	struct chandb key = { ch, NULL };
	const struct chandb *r = o->ndbs ?
		bsearch(&key, o->dbs, o->ndbs, sizeof *o->dbs, cmp_chandb) : NULL;
	return r ? r->db : NULL;
}

/* ---- attributes ----------------------------------------------------------------- */

/* A string attribute; an empty or missing value is left out. */
static void attr_strn(struct otlp *o, const char *k, const char *v, size_t n)
{
	if (v && n)
		ow_attr_str(&o->w, k, v, n);
}

static void attr_str(struct otlp *o, const char *k, const char *v)
{
	if (v)
		attr_strn(o, k, v, strlen(v));
}

static void attr_int(struct otlp *o, const char *k, int64_t v)
{
	ow_attr_int(&o->w, k, v);
}

static void attr_bool(struct otlp *o, const char *k, int v)
{
	ow_attr_bool(&o->w, k, v);
}

/* "addr:port", "[v6]:port", "unix:/path", "pipe:[ino]" */
static void attr_peer(struct otlp *o, const char *peer, const char *addr_key,
		      const char *port_key)
{
	if (!peer || !*peer)
		return;
	if (!strncmp(peer, "unix:", 5)) {
		attr_str(o, "network.transport", "unix");
		attr_str(o, addr_key, peer + 5);
		return;
	}
	if (!strncmp(peer, "pipe:", 5)) {
		attr_str(o, "network.transport", "pipe");
		attr_str(o, "borderpatrol.peer", peer);
		return;
	}
	const char *colon = strrchr(peer, ':');
	if (!colon || colon == peer) {
		attr_str(o, addr_key, peer);
		return;
	}
	const char *a = peer;
	size_t n = (size_t)(colon - peer);
	if (a[0] == '[' && n >= 2 && a[n - 1] == ']') {
		a++;
		n -= 2;
	}
	attr_strn(o, addr_key, a, n);
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (!*end && port > 0 && port < 65536)
		attr_int(o, port_key, port);
}

struct span_info {
	const char *kind, *protocol, *name, *target, *peer, *host;
	int64_t     status, span_id, request_id, tid, channel;
	int         has_status, has_end;
	const char *certainty, *certainty_reason;  /* NULL: none */
	/* from attrs */
	char       *method, *http_host, *error, *dns_type, *fcgi_script, *tag;
};

static void free_info(struct span_info *si)
{
	free(si->method);
	free(si->http_host);
	free(si->error);
	free(si->dns_type);
	free(si->fcgi_script);
	free(si->tag);
}

static int load_attrs(struct otlp *o, struct span_info *si)
{
	sqlite3_stmt *s = o->attrs;
	sqlite3_reset(s);
	sqlite3_bind_int64(s, 1, si->span_id);
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *k = export_col(s, 0);
		char **dst = !strcmp(k, "method") ? &si->method :
			     !strcmp(k, "host") ? &si->http_host :
			     !strcmp(k, "error") ? &si->error :
			     !strcmp(k, "dns_type") ? &si->dns_type :
			     !strcmp(k, "fcgi_script") ? &si->fcgi_script :
			     !strcmp(k, "tag") ? &si->tag : NULL;
		if (dst && !*dst)
			*dst = strdup(export_col(s, 1));
	}
	return 0;
}

static void span_attrs(struct otlp *o, const struct span_info *si)
{
	int server = !strcmp(si->kind, "server");
	const char *t = si->target;
	const char *q = t ? strchr(t, '?') : NULL;

	attr_int(o, "borderpatrol.request_id", si->request_id);
	attr_int(o, "borderpatrol.span_id", si->span_id);
	attr_str(o, "bp.certainty", si->certainty);
	attr_str(o, "bp.certainty_reason", si->certainty_reason);
	attr_str(o, "borderpatrol.protocol", si->protocol);
	attr_int(o, "thread.id", si->tid);
	if (!strcmp(si->protocol, "http") || !strcmp(si->protocol, "fastcgi")) {
		attr_str(o, "http.request.method", si->method);
		if (t && *t) {
			if (q) {
				attr_strn(o, "url.path", t, (size_t)(q - t));
				attr_str(o, "url.query", q + 1);
			} else {
				attr_str(o, "url.path", t);
			}
		}
		if (!strcmp(si->protocol, "http") && si->has_status)
			attr_int(o, "http.response.status_code", si->status);
		if (!strcmp(si->protocol, "fastcgi"))
			attr_str(o, "borderpatrol.fastcgi.script_name", si->fcgi_script);
		if (si->http_host)
			attr_str(o, "server.address", si->http_host);
		if (!server && si->http_host && t && *t == '/') {
			size_t l = strlen(si->http_host) + strlen(t) + 8;
			char *u = malloc(l);
			if (u) {
				snprintf(u, l, "http://%s%s", si->http_host, t);
				attr_str(o, "url.full", u);
				free(u);
			}
		}
	} else if (!strcmp(si->protocol, "postgresql")) {
		attr_str(o, "db.system.name", "postgresql");
		attr_str(o, "db.query.text", t);
		if (si->name && strcmp(si->name, "QUERY"))
			attr_str(o, "db.operation.name", si->name);
		attr_str(o, "db.namespace", db_of(o, si->channel));
		attr_str(o, "db.response.status_code", si->error);
		attr_str(o, "borderpatrol.db.command_tag", si->tag);
	} else if (!strcmp(si->protocol, "dns")) {
		attr_str(o, "dns.question.name", t);
		attr_str(o, "borderpatrol.dns.type", si->dns_type);
		if (si->has_status)
			attr_int(o, "borderpatrol.dns.result", si->status);
	} else if (t && *t) {
		attr_str(o, "borderpatrol.target", t);
	}
	if (server)
		attr_peer(o, si->peer, "client.address", "client.port");
	else
		attr_peer(o, si->peer, si->http_host ? "network.peer.address" :
			  "server.address", si->http_host ? "network.peer.port" :
			  "server.port");
	if (si->error)
		attr_str(o, "error.type", si->error);
	if (!si->has_end)
		attr_bool(o, "borderpatrol.unanswered", 1);
}

/* Why the span failed, or NULL. */
static const char *span_error(const struct span_info *si, char *buf,
			      size_t len)
{
	int server = !strcmp(si->kind, "server");
	if (!strcmp(si->protocol, "http") && si->has_status &&
	    si->status >= (server ? 500 : 400)) {
		snprintf(buf, len, "HTTP %" PRId64, si->status);
		return buf;
	}
	if (si->error) {
		snprintf(buf, len, "%s error %s", si->protocol, si->error);
		return buf;
	}
	if (!strcmp(si->protocol, "dns") && si->has_status && si->status) {
		snprintf(buf, len, "name lookup failed (%" PRId64 ")", si->status);
		return buf;
	}
	if (!si->has_end)
		return "no reply";
	return NULL;
}

/* The files the span opened as events; returns how many were left out. */
static int span_events(struct otlp *o, int64_t req, int64_t span)
{
	sqlite3_stmt *s = o->files;
	int n = 0, dropped = 0;
	sqlite3_reset(s);
	sqlite3_bind_int64(s, 1, req);
	sqlite3_bind_int64(s, 2, span);
	while (sqlite3_step(s) == SQLITE_ROW) {
		if (n >= MAX_EVENTS) {
			dropped++;
			continue;
		}
		ow_event_begin(&o->w, sqlite3_column_int64(s, 0), "file.open");
		attr_str(o, "file.path", export_col(s, 1));
		attr_int(o, "borderpatrol.result", sqlite3_column_int64(s, 2));
		ow_event_end(&o->w);
		n++;
		o->x->n_events++;
	}
	return dropped;
}

static void resource(struct otlp *o, sqlite3_stmt *s)
{
	ow_res_begin(&o->w);
	attr_str(o, "service.name", export_basename(export_col(s, 10)));
	attr_str(o, "host.name", export_col(s, 7));
	attr_int(o, "process.pid", sqlite3_column_int64(s, 8));
	if (sqlite3_column_type(s, 17) != SQLITE_NULL)
		attr_int(o, "process.parent_pid", sqlite3_column_int64(s, 17));
	attr_str(o, "process.executable.path", export_col(s, 10));
	attr_str(o, "process.command_line", export_col(s, 16));
	attr_int(o, "borderpatrol.process_id", sqlite3_column_int64(s, 14));
	ow_res_spans(&o->w, "borderpatrol", PACKAGE_VERSION);
}

/* The document is complete: into the file (a line), or to the collector. */
static int doc_flush(struct otlp *o)
{
	size_t len;
	ow_doc_end(&o->w);
	if (ow_failed(&o->w)) {
		snprintf(o->x->err, sizeof o->x->err, "out of memory");
		return -1;
	}
	if (o->f) {
		fwrite(o->w.p, 1, o->w.len, o->f);
		putc('\n', o->f);
		ow_reset(&o->w);
		return 0;
	}
	size_t n = o->w.nspans;
	unsigned char *b = ow_take(&o->w, &len);
	if (!b) {
		snprintf(o->x->err, sizeof o->x->err, "out of memory");
		return -1;
	}
	if (otlp_push_send(o->push, b, len, n) < 0)
		o->ended = 1;
	return 0;
}

static int write_request(struct otlp *o, sqlite3_stmt *s, int64_t req)
{
	int64_t cur_proc = INT64_MIN;
	uint8_t trace[16];

	for (int i = 0; i < 8; i++) {
		trace[i] = (uint8_t)(o->seed >> (56 - 8 * i));
		trace[8 + i] = (uint8_t)((uint64_t)req >> (56 - 8 * i));
	}
	sqlite3_reset(s);
	sqlite3_bind_int64(s, 1, req);
	if (!o->batch)
		ow_doc_begin(&o->w);
	int r;
	while (!o->ended && (r = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t proc = sqlite3_column_int64(s, 14);
		if (!o->w.in_doc)
			ow_doc_begin(&o->w);
		if (proc != cur_proc || !o->w.in_res) {
			resource(o, s);
			cur_proc = proc;
		}
		struct span_info si = {
			.span_id = sqlite3_column_int64(s, 0),
			.kind = export_col(s, 2), .protocol = export_col(s, 3),
			.name = export_col(s, 4),
			.target = (const char *)sqlite3_column_text(s, 5),
			.has_status = sqlite3_column_type(s, 6) != SQLITE_NULL,
			.status = sqlite3_column_int64(s, 6),
			.host = export_col(s, 7), .tid = sqlite3_column_int64(s, 9),
			.peer = export_col(s, 11),
			.has_end = sqlite3_column_type(s, 13) != SQLITE_NULL,
			.channel = sqlite3_column_int64(s, 15),
			.request_id = req,
			.certainty = (const char *)sqlite3_column_text(s, 19),
			.certainty_reason = (const char *)sqlite3_column_text(s, 20),
		};
		int64_t start = sqlite3_column_int64(s, 12);
		int64_t end = si.has_end ? sqlite3_column_int64(s, 13) :
			      sqlite3_column_type(s, 18) != SQLITE_NULL ?
			      sqlite3_column_int64(s, 18) : start;
		if (end < start)
			end = start;
		load_attrs(o, &si);
		uint64_t parent = sqlite3_column_type(s, 1) != SQLITE_NULL ?
			mix64(o->seed ^ (uint64_t)sqlite3_column_int64(s, 1)) | 1 : 0;
		ow_span_begin(&o->w, trace, mix64(o->seed ^ (uint64_t)si.span_id) | 1,
			      parent, si.name[0] ? si.name : si.protocol,
			      !strcmp(si.kind, "server") ? OW_KIND_SERVER : OW_KIND_CLIENT,
			      start, end);
		span_attrs(o, &si);
		ow_span_attrs_end(&o->w);
		int dropped = span_events(o, req, si.span_id);
		char why[160];
		ow_span_end(&o->w, (unsigned)dropped, span_error(&si, why, sizeof why));
		free_info(&si);
		o->x->n_spans++;
		if (o->batch && o->w.nspans >= o->batch && doc_flush(o) < 0)
			return -1;
	}
	if (o->ended)
		return 0;
	if (r != SQLITE_DONE)
		return export_sql_fail(o->x, "spans");
	if (!o->batch && doc_flush(o) < 0)
		return -1;
	o->x->n_traces++;
	return 0;
}

/* Prepare what both the file and the push read. */
static int otlp_open(struct otlp *o, struct export_db *x, enum ow_fmt fmt)
{
	memset(o, 0, sizeof *o);
	o->x = x;
	ow_init(&o->w, fmt);
	x->n_files = x->n_traces = x->n_spans = x->n_events = 0;
	if (load_seed(o) < 0 || load_dbs(o) < 0)
		return -1;
	char *q = x->req_ids ?
		sqlite3_mprintf("SELECT r.request_id FROM requests r WHERE r.request_id IN (%s) ORDER BY r.request_id",
				x->req_ids) :
		sqlite3_mprintf("SELECT request_id FROM requests ORDER BY request_id");
	o->reqs = q ? export_prep(x, q) : NULL;
	sqlite3_free(q);
	o->spans = export_prep(x,
		"SELECT s.span_id, s.parent_span_id, s.kind, s.protocol, s.name,\n"
		"  s.target, s.status, s.host, s.pid, s.tid, s.exe, s.peer,\n"
		"  s.start_ns, s.end_ns, s.process_id, s.channel_id, p.cmdline,\n"
		"  p.ppid, r.end_ns, s.certainty, s.certainty_reason\n"
		"FROM spans s JOIN requests r ON r.request_id = s.request_id\n"
		"  LEFT JOIN processes p ON p.process_id = s.process_id\n"
		"WHERE s.request_id = ?\n"
		"ORDER BY s.process_id, s.start_ns, s.span_id");
	o->attrs = export_prep(x, "SELECT key, value FROM attrs WHERE span_id = ? ORDER BY rowid");
	o->files = export_prep(x, "SELECT ts_ns, path, result FROM files WHERE request_id = ? AND span_id = ? ORDER BY ts_ns, file_id");
	if (!o->reqs || !o->spans || !o->attrs || !o->files)
		return -1;
	return 0;
}

static void otlp_close(struct otlp *o)
{
	sqlite3_finalize(o->reqs);
	sqlite3_finalize(o->spans);
	sqlite3_finalize(o->attrs);
	sqlite3_finalize(o->files);
	for (size_t i = 0; i < o->ndbs; i++)
		free(o->dbs[i].db);
	free(o->dbs);
	ow_free(&o->w);
}

/* Every request, in order of request id. */
static int walk(struct otlp *o)
{
	int rc;
	while (!o->ended && (rc = sqlite3_step(o->reqs)) == SQLITE_ROW)
		if (write_request(o, o->spans, sqlite3_column_int64(o->reqs, 0)) < 0)
			return -1;
	if (!o->ended && rc != SQLITE_DONE)
		return export_sql_fail(o->x, "requests");
	return 0;
}

int export_otlp(struct export_db *x, const char *file)
{
	struct otlp o;
	struct export_file out;
	int r = -1;

	if (otlp_open(&o, x, OW_JSON) < 0)
		goto out;
	if (export_file_open(x, &out, file) < 0)
		goto out;
	o.f = out.f;
	if (walk(&o) < 0) {
		export_file_abort(&out);
		goto out;
	}
	if (export_file_commit(x, &out) < 0)
		goto out;
	x->n_files = 1;
	r = 0;
out:
	otlp_close(&o);
	return r;
}

int export_otlp_push(struct export_db *x, const struct otlp_push_opts *opts,
		     struct otlp_push_stats *st, uint64_t *total)
{
	struct otlp o;
	char err[768];
	int r = -1;

	memset(st, 0, sizeof *st);
	*total = 0;
	if (otlp_open(&o, x, opts->json ? OW_JSON : OW_PROTO) < 0)
		goto out;
	/* what should arrive: the spans of requests (as walk() reads them) */
	char *q = sqlite3_mprintf("SELECT COUNT(*) FROM spans s JOIN requests r ON r.request_id = s.request_id WHERE %s%s%s",
				  x->req_ids ? "r.request_id IN (" : "1",
				  x->req_ids ? x->req_ids : "", x->req_ids ? ")" : "");
	sqlite3_stmt *c = q ? export_prep(x, q) : NULL;
	sqlite3_free(q);
	if (!c)
		goto out;
	if (sqlite3_step(c) != SQLITE_ROW) {
		sqlite3_finalize(c);
		export_sql_fail(x, "spans");
		goto out;
	}
	*total = (uint64_t)sqlite3_column_int64(c, 0);
	sqlite3_finalize(c);
	o.batch = opts->batch ? opts->batch : OTLP_PUSH_BATCH;
	o.push = otlp_push_start(opts, err, sizeof err);
	if (!o.push) {
		snprintf(x->err, sizeof x->err, "OTLP push: %s", err);
		goto out;
	}
	int w = walk(&o);
	if (!w && !o.ended && o.w.in_doc && o.w.nspans)
		w = doc_flush(&o);
	int e = otlp_push_end(o.push, st, err, sizeof err);
	if (w < 0)
		goto out;
	if (e < 0 || st->spans != *total) {
		snprintf(x->err, sizeof x->err, "OTLP push: %s: %llu of %llu spans not delivered",
			 e < 0 ? err : "spans lost",
			 (unsigned long long)(*total - st->spans),
			 (unsigned long long)*total);
		goto out;
	}
	r = 0;
out:
	otlp_close(&o);
	return r;
}
