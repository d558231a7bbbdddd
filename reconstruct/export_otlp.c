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

#define MAX_EVENTS 128           /* span events (files opened) per span */

struct otlp {
	struct export_db *x;
	FILE    *f;
	uint64_t seed;
	/* channel id -> database name (PostgreSQL start-up), sorted */
	struct chandb { int64_t ch; char *db; } *dbs;
	size_t   ndbs;
	sqlite3_stmt *attrs, *files;
	int      first_attr;
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

static void attr_sep(struct otlp *o)
{
	if (!o->first_attr)
		putc(',', o->f);
	o->first_attr = 0;
}

static void attr_str(struct otlp *o, const char *k, const char *v)
{
	if (!v || !*v)
		return;
	attr_sep(o);
	fprintf(o->f, "{\"key\":\"%s\",\"value\":{\"stringValue\":", k);
	export_json_str(o->f, v);
	fputs("}}", o->f);
}

static void attr_strn(struct otlp *o, const char *k, const char *v, size_t n)
{
	char *c = malloc(n + 1);
	if (!c)
		return;
	memcpy(c, v, n);
	c[n] = 0;
	attr_str(o, k, c);
	free(c);
}

static void attr_int(struct otlp *o, const char *k, int64_t v)
{
	attr_sep(o);
	fprintf(o->f, "{\"key\":\"%s\",\"value\":{\"intValue\":\"%" PRId64 "\"}}",
		k, v);
}

static void attr_bool(struct otlp *o, const char *k, int v)
{
	attr_sep(o);
	fprintf(o->f, "{\"key\":\"%s\",\"value\":{\"boolValue\":%s}}", k,
		v ? "true" : "false");
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

static void span_events(struct otlp *o, int64_t req, int64_t span)
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
		fputs(n ? "," : ",\"events\":[", o->f);
		fprintf(o->f, "{\"timeUnixNano\":\"%lld\",\"name\":\"file.open\",\"attributes\":[",
			(long long)sqlite3_column_int64(s, 0));
		o->first_attr = 1;
		attr_str(o, "file.path", export_col(s, 1));
		attr_int(o, "borderpatrol.result", sqlite3_column_int64(s, 2));
		fputs("]}", o->f);
		n++;
		o->x->n_events++;
	}
	if (n)
		putc(']', o->f);
	if (dropped)
		fprintf(o->f, ",\"droppedEventsCount\":%d", dropped);
}

static void resource(struct otlp *o, sqlite3_stmt *s)
{
	fputs("{\"resource\":{\"attributes\":[", o->f);
	o->first_attr = 1;
	attr_str(o, "service.name", export_basename(export_col(s, 10)));
	attr_str(o, "host.name", export_col(s, 7));
	attr_int(o, "process.pid", sqlite3_column_int64(s, 8));
	if (sqlite3_column_type(s, 17) != SQLITE_NULL)
		attr_int(o, "process.parent_pid", sqlite3_column_int64(s, 17));
	attr_str(o, "process.executable.path", export_col(s, 10));
	attr_str(o, "process.command_line", export_col(s, 16));
	attr_int(o, "borderpatrol.process_id", sqlite3_column_int64(s, 14));
	fprintf(o->f, "]},\"scopeSpans\":[{\"scope\":{\"name\":\"borderpatrol\",\"version\":\"%s\"},\"spans\":[",
		PACKAGE_VERSION);
}

static int write_request(struct otlp *o, sqlite3_stmt *s, int64_t req)
{
	int64_t cur_proc = INT64_MIN;
	int nres = 0, nspan = 0;

	sqlite3_reset(s);
	sqlite3_bind_int64(s, 1, req);
	fputs("{\"resourceSpans\":[", o->f);
	int r;
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t proc = sqlite3_column_int64(s, 14);
		if (proc != cur_proc) {
			if (nres)
				fputs("]}]},", o->f);
			resource(o, s);
			cur_proc = proc;
			nres++;
			nspan = 0;
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
		if (nspan++)
			putc(',', o->f);
		fprintf(o->f, "{\"traceId\":\"%016" PRIx64 "%016" PRIx64 "\",\"spanId\":\"%016" PRIx64 "\"",
			o->seed, (uint64_t)req, mix64(o->seed ^ (uint64_t)si.span_id) | 1);
		if (sqlite3_column_type(s, 1) != SQLITE_NULL)
			fprintf(o->f, ",\"parentSpanId\":\"%016" PRIx64 "\"",
				mix64(o->seed ^ (uint64_t)sqlite3_column_int64(s, 1)) | 1);
		fputs(",\"name\":", o->f);
		export_json_str(o->f, si.name[0] ? si.name : si.protocol);
		fprintf(o->f, ",\"kind\":%d,\"startTimeUnixNano\":\"%" PRId64 "\",\"endTimeUnixNano\":\"%" PRId64 "\",\"attributes\":[",
			!strcmp(si.kind, "server") ? 2 : 3, start, end);
		o->first_attr = 1;
		span_attrs(o, &si);
		putc(']', o->f);
		span_events(o, req, si.span_id);
		char why[160];
		const char *err = span_error(&si, why, sizeof why);
		if (err) {
			fputs(",\"status\":{\"code\":2,\"message\":", o->f);
			export_json_str(o->f, err);
			putc('}', o->f);
		}
		putc('}', o->f);
		free_info(&si);
		o->x->n_spans++;
	}
	if (r != SQLITE_DONE)
		return export_sql_fail(o->x, "spans");
	if (nres)
		fputs("]}]}", o->f);
	fputs("]}\n", o->f);
	o->x->n_traces++;
	return 0;
}

int export_otlp(struct export_db *x, const char *file)
{
	struct otlp o;
	struct export_file out;
	sqlite3_stmt *reqs = NULL, *spans = NULL;
	int r = -1;

	memset(&o, 0, sizeof o);
	o.x = x;
	x->n_files = x->n_traces = x->n_spans = x->n_events = 0;
	if (load_seed(&o) < 0 || load_dbs(&o) < 0)
		goto out;
	reqs = export_prep(x, "SELECT request_id FROM requests ORDER BY request_id");
	spans = export_prep(x,
		"SELECT s.span_id, s.parent_span_id, s.kind, s.protocol, s.name,\n"
		"  s.target, s.status, s.host, s.pid, s.tid, s.exe, s.peer,\n"
		"  s.start_ns, s.end_ns, s.process_id, s.channel_id, p.cmdline,\n"
		"  p.ppid, r.end_ns, s.certainty, s.certainty_reason\n"
		"FROM spans s JOIN requests r ON r.request_id = s.request_id\n"
		"  LEFT JOIN processes p ON p.process_id = s.process_id\n"
		"WHERE s.request_id = ?\n"
		"ORDER BY s.process_id, s.start_ns, s.span_id");
	o.attrs = export_prep(x, "SELECT key, value FROM attrs WHERE span_id = ? ORDER BY rowid");
	o.files = export_prep(x, "SELECT ts_ns, path, result FROM files WHERE request_id = ? AND span_id = ? ORDER BY ts_ns, file_id");
	if (!reqs || !spans || !o.attrs || !o.files)
		goto out;
	if (export_file_open(x, &out, file) < 0)
		goto out;
	o.f = out.f;
	int rc;
	while ((rc = sqlite3_step(reqs)) == SQLITE_ROW) {
		if (write_request(&o, spans, sqlite3_column_int64(reqs, 0)) < 0) {
			export_file_abort(&out);
			goto out;
		}
	}
	if (rc != SQLITE_DONE) {
		export_sql_fail(x, "requests");
		export_file_abort(&out);
		goto out;
	}
	if (export_file_commit(x, &out) < 0)
		goto out;
	x->n_files = 1;
	r = 0;
out:
	sqlite3_finalize(reqs);
	sqlite3_finalize(spans);
	sqlite3_finalize(o.attrs);
	sqlite3_finalize(o.files);
	for (size_t i = 0; i < o.ndbs; i++)
		free(o.dbs[i].db);
	free(o.dbs);
	return r;
}
