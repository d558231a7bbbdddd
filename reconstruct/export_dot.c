/*
 * export_dot.c - request paths and path patterns as Graphviz graphs (see
 * export.h and docs/report.md, "DOT").
 *
 * request-ID.dot: one box per span, in a cluster per process
 * ("exe[pid]@host"), an edge from each span to the spans it caused
 * labelled with the delay between their starts, the external client and
 * untraced peers as dashed ellipses; failed spans are red.
 * pattern-ID.dot: the pattern's tree, each node with its mean duration and
 * mean self time, shaded by the share of the pattern's time it adds.
 * Render with  dot -Tsvg request-1.dot -o request-1.svg.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "export.h"

#define LABEL_CHARS 60

/* TEXT as part of a DOT quoted string: quotes and backslashes escaped,
 * control characters and invalid UTF-8 made harmless, cut after
 * LABEL_CHARS characters with "...". */
static void dot_text(FILE *f, const char *text)
{
	char *c = strdup(text ? text : "");
	if (!c)
		return;
	export_utf8_clean(c);
	size_t chars = 0;
	for (const unsigned char *p = (const unsigned char *)c; *p; p++) {
		if ((*p & 0xC0) != 0x80 && ++chars > LABEL_CHARS) {
			fputs("...", f);
			break;
		}
		if (*p == '"' || *p == '\\')
			putc('\\', f);
		putc(*p, f);
	}
	free(c);
}

static void dur(FILE *f, double ns)
{
	char b[32];
	fputs(export_dur(b, sizeof b, ns), f);
}

struct edge { int64_t from, to, delay; };

static int write_request(struct export_db *x, sqlite3_stmt *q,
			 sqlite3_stmt *req, const char *dir, int64_t id)
{
	char path[4096];
	struct export_file out;
	struct edge *edges = NULL;
	size_t nedges = 0, capedges = 0;
	int r = -1;

	sqlite3_reset(req);
	sqlite3_bind_int64(req, 1, id);
	if (sqlite3_step(req) != SQLITE_ROW)
		return export_sql_fail(x, "request");
	snprintf(path, sizeof path, "%s/request-%" PRId64 ".dot", dir, id);
	if (export_file_open(x, &out, path) < 0)
		return -1;
	FILE *f = out.f;
	fprintf(f, "digraph \"request %" PRId64 "\" {\n", id);
	fputs("  graph [fontname=\"Helvetica\", fontsize=11, labelloc=t, label=\"", f);
	fprintf(f, "request %" PRId64 ": ", id);
	dot_text(f, export_col(req, 0));
	fputs(" ", f);
	dot_text(f, export_col(req, 1));
	fputs("\\l", f);
	if (sqlite3_column_type(req, 2) != SQLITE_NULL)
		dur(f, sqlite3_column_double(req, 2));
	else
		fputs("never answered", f);
	if (sqlite3_column_type(req, 3) != SQLITE_NULL)
		fprintf(f, ", status %lld", (long long)sqlite3_column_int64(req, 3));
	fputs(", from ", f);
	dot_text(f, export_col(req, 4));
	fputs("\\l\"];\n", f);
	fputs("  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10, fillcolor=\"#dbe9f6\"];\n"
	      "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\"];\n", f);
	fprintf(f, "  client [shape=ellipse, style=dashed, label=\"client\\n");
	dot_text(f, export_col(req, 4));
	fputs("\"];\n", f);

	sqlite3_reset(q);
	sqlite3_bind_int64(q, 1, id);
	int64_t cur = INT64_MIN, root = sqlite3_column_int64(req, 5);
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t sid = sqlite3_column_int64(q, 0);
		int64_t proc = sqlite3_column_int64(q, 9);
		int server = !strcmp(export_col(q, 2), "server");
		if (proc != cur) {
			if (cur != INT64_MIN)
				fputs("  }\n", f);
			fprintf(f, "  subgraph \"cluster_%" PRId64 "\" {\n    label=\"", proc);
			dot_text(f, export_basename(export_col(q, 10)));
			fprintf(f, "[%lld]@", (long long)sqlite3_column_int64(q, 11));
			dot_text(f, export_col(q, 12));
			fputs("\"; style=rounded; color=\"#999999\"; fontsize=10;\n", f);
			cur = proc;
		}
		fprintf(f, "    s%" PRId64 " [label=\"%s %s\\n", sid,
			server ? "server" : "client", export_col(q, 3));
		dot_text(f, export_col(q, 5)[0] ? export_col(q, 5) : export_col(q, 4));
		fputs("\\n", f);
		if (sqlite3_column_type(q, 8) != SQLITE_NULL) {
			dur(f, (double)(sqlite3_column_int64(q, 8) -
					sqlite3_column_int64(q, 7)));
			if (sqlite3_column_type(q, 14) != SQLITE_NULL) {
				fputs(", self ", f);
				dur(f, sqlite3_column_double(q, 14));
			}
		} else {
			fputs("no reply", f);
		}
		if (sqlite3_column_type(q, 6) != SQLITE_NULL)
			fprintf(f, "\\nstatus %lld", (long long)sqlite3_column_int64(q, 6));
		fputs("\"", f);
		if (sqlite3_column_int(q, 15))
			fputs(", fillcolor=\"#f4cccc\", color=\"#cc0000\"", f);
		else if (!server)
			fputs(", fillcolor=\"#e8f0e0\"", f);
		fputs("];\n", f);
		/* a call nothing traced answered: its peer */
		if (!server && !sqlite3_column_int(q, 16)) {
			fprintf(f, "    p%" PRId64 " [shape=ellipse, style=dashed, fillcolor=white, label=\"", sid);
			dot_text(f, export_col(q, 13)[0] ? export_col(q, 13) : "untraced peer");
			fputs("\"];\n", f);
		}
		if (nedges == capedges) {
			size_t c = capedges ? capedges * 2 : 32;
			struct edge *e = realloc(edges, c * sizeof *e);
			if (!e) {
				snprintf(x->err, sizeof x->err, "out of memory");
				goto fail;
			}
			edges = e;
			capedges = c;
		}
		edges[nedges++] = (struct edge){
			sqlite3_column_type(q, 1) == SQLITE_NULL ? (sid == root ? -1 : 0) :
				sqlite3_column_int64(q, 1),
			sid, sqlite3_column_int64(q, 17) };
		x->n_spans++;
	}
	if (rc != SQLITE_DONE) {
		export_sql_fail(x, "spans");
		goto fail;
	}
	if (cur != INT64_MIN)
		fputs("  }\n", f);
	for (size_t i = 0; i < nedges; i++) {
		const struct edge *e = &edges[i];
		if (e->from == -1) {
			fprintf(f, "  client -> s%" PRId64 " [label=\"request\"];\n", e->to);
		} else if (e->from > 0) {
			fprintf(f, "  s%" PRId64 " -> s%" PRId64 " [label=\"+", e->from, e->to);
			dur(f, (double)e->delay);
			fputs("\"];\n", f);
		}
	}
	/* dashed edges to untraced peers */
	sqlite3_reset(q);
	sqlite3_bind_int64(q, 1, id);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW)
		if (strcmp(export_col(q, 2), "server") && !sqlite3_column_int(q, 16))
			fprintf(f, "  s%lld -> p%lld [style=dashed];\n",
				(long long)sqlite3_column_int64(q, 0),
				(long long)sqlite3_column_int64(q, 0));
	fputs("}\n", f);
	free(edges);
	if (export_file_commit(x, &out) < 0)
		return -1;
	x->n_files++;
	x->n_traces++;
	return 0;
fail:
	free(edges);
	export_file_abort(&out);
	return r;
}

/* A fill colour from white to orange by SHARE (0..1). */
static void shade(FILE *f, double share)
{
	if (share < 0)
		share = 0;
	if (share > 1)
		share = 1;
	int g = (int)(0xf4 - share * (0xf4 - 0xa0));
	int b = (int)(0xf4 - share * (0xf4 - 0x40));
	fprintf(f, "\"#ff%02x%02x\"", g, b);
}

static int write_pattern(struct export_db *x, sqlite3_stmt *pat,
			 sqlite3_stmt *nodes, const char *dir)
{
	char path[4096];
	struct export_file out;
	int64_t id = sqlite3_column_int64(pat, 0);
	double total = sqlite3_column_double(pat, 8);

	snprintf(path, sizeof path, "%s/pattern-%" PRId64 ".dot", dir, id);
	if (export_file_open(x, &out, path) < 0)
		return -1;
	FILE *f = out.f;
	fprintf(f, "digraph \"pattern %" PRId64 "\" {\n", id);
	fprintf(f, "  graph [fontname=\"Helvetica\", fontsize=11, labelloc=t, label=\"pattern %" PRId64 " (rank %lld): %lld requests, ",
		id, (long long)sqlite3_column_int64(pat, 1),
		(long long)sqlite3_column_int64(pat, 2));
	dot_text(f, export_col(pat, 4));
	fputs("\\l", f);
	if (sqlite3_column_type(pat, 5) != SQLITE_NULL) {
		fputs("p50 ", f);
		dur(f, sqlite3_column_double(pat, 5));
		fputs(", p90 ", f);
		dur(f, sqlite3_column_double(pat, 6));
		fputs(", p99 ", f);
		dur(f, sqlite3_column_double(pat, 7));
		fputs(", mean ", f);
		dur(f, total);
	} else {
		fputs("no request of this pattern was answered", f);
	}
	fputs("\\lnodes: mean duration, mean self time (shaded by its share)\\l\"];\n"
	      "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n"
	      "  edge [color=\"#555555\"];\n", f);
	sqlite3_reset(nodes);
	sqlite3_bind_int64(nodes, 1, id);
	int rc;
	while ((rc = sqlite3_step(nodes)) == SQLITE_ROW) {
		int64_t n = sqlite3_column_int64(nodes, 0);
		fprintf(f, "  n%" PRId64 " [label=\"%s %s ", n, export_col(nodes, 2),
			export_col(nodes, 3));
		dot_text(f, export_col(nodes, 4));
		fputs("\\n", f);
		dot_text(f, export_col(nodes, 5));
		fputs("\\n", f);
		if (sqlite3_column_type(nodes, 7) != SQLITE_NULL) {
			fputs("mean ", f);
			dur(f, sqlite3_column_double(nodes, 7));
			fputs(", self ", f);
			dur(f, sqlite3_column_double(nodes, 8));
		} else {
			fputs("never answered", f);
		}
		fputs("\", fillcolor=", f);
		shade(f, total > 0 ? sqlite3_column_double(nodes, 8) / total : 0);
		fputs("];\n", f);
		if (sqlite3_column_type(nodes, 1) != SQLITE_NULL)
			fprintf(f, "  n%lld -> n%" PRId64 ";\n",
				(long long)sqlite3_column_int64(nodes, 1), n);
	}
	if (rc != SQLITE_DONE) {
		export_file_abort(&out);
		return export_sql_fail(x, "pattern_nodes");
	}
	fputs("}\n", f);
	if (export_file_commit(x, &out) < 0)
		return -1;
	x->n_files++;
	return 0;
}

int export_dot(struct export_db *x, const char *dir, long max)
{
	sqlite3_stmt *ids = NULL, *req = NULL, *spans = NULL, *pat = NULL,
		     *nodes = NULL;
	int r = -1, rc;

	x->n_files = x->n_traces = x->n_spans = x->n_events = 0;
	if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
		snprintf(x->err, sizeof x->err,
			 "cannot create directory %s: %s (check that its parent exists and is writable)",
			 dir, strerror(errno));
		return -1;
	}
	struct stat st;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(x->err, sizeof x->err,
			 "%s is not a directory: give --dot a directory for the .dot files",
			 dir);
		return -1;
	}
	ids = export_prep(x,
		"SELECT request_id FROM requests\n"
		"ORDER BY request_id IN (SELECT request_id FROM errors) DESC,\n"
		"  duration_ns DESC NULLS LAST, request_id LIMIT ?");
	req = export_prep(x,
		"SELECT method, target, duration_ns, status, client, root_span_id\n"
		"FROM requests WHERE request_id = ?");
	spans = export_prep(x,
		"SELECT s.span_id, s.parent_span_id, s.kind, s.protocol, s.name,\n"
		"  s.target, s.status, s.start_ns, s.end_ns, s.process_id, s.exe,\n"
		"  s.pid, s.host, s.peer, sp.self_ns,\n"
		"  (s.protocol = 'http' AND s.status >= 500)\n"
		"   OR (s.protocol = 'dns' AND s.status != 0) OR s.end_ns IS NULL\n"
		"   OR EXISTS (SELECT 1 FROM attrs a WHERE a.span_id = s.span_id\n"
		"              AND a.key = 'error'),\n"
		"  EXISTS (SELECT 1 FROM spans c WHERE c.parent_span_id = s.span_id),\n"
		"  s.start_ns - COALESCE((SELECT p.start_ns FROM spans p\n"
		"                         WHERE p.span_id = s.parent_span_id), s.start_ns)\n"
		"FROM spans s LEFT JOIN span_patterns sp ON sp.span_id = s.span_id\n"
		"WHERE s.request_id = ?\n"
		"ORDER BY s.process_id, s.start_ns, s.span_id");
	pat = export_prep(x,
		"SELECT pattern_id, rank, n, complete, root, p50_ns, p90_ns,\n"
		"  p99_ns, avg_ns FROM patterns ORDER BY rank LIMIT ?");
	nodes = export_prep(x,
		"SELECT node, parent_node, kind, protocol, service, label, n,\n"
		"  mean_ns, mean_self_ns FROM pattern_nodes WHERE pattern_id = ?\n"
		"ORDER BY node");
	if (!ids || !req || !spans || !pat || !nodes)
		goto out;
	sqlite3_bind_int64(ids, 1, max > 0 ? max : -1);
	while ((rc = sqlite3_step(ids)) == SQLITE_ROW)
		if (write_request(x, spans, req, dir, sqlite3_column_int64(ids, 0)) < 0)
			goto out;
	if (rc != SQLITE_DONE) {
		export_sql_fail(x, "requests");
		goto out;
	}
	sqlite3_bind_int64(pat, 1, max > 0 ? max : -1);
	while ((rc = sqlite3_step(pat)) == SQLITE_ROW)
		if (write_pattern(x, pat, nodes, dir) < 0)
			goto out;
	if (rc != SQLITE_DONE) {
		export_sql_fail(x, "patterns");
		goto out;
	}
	r = 0;
out:
	sqlite3_finalize(ids);
	sqlite3_finalize(req);
	sqlite3_finalize(spans);
	sqlite3_finalize(pat);
	sqlite3_finalize(nodes);
	return r;
}
