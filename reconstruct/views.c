/*
 * views.c - the views of the paths database (see views.h; every view is
 * documented in docs/schema.md, "Views", with what it answers).
 *
 * Conventions the views share:
 *  - percentiles are exact, by nearest rank: the p-th percentile of n
 *    values is the value of rank ceil(p * n / 100) in ascending order
 *    (ROW_NUMBER over the sorted values, the first rank with
 *    rank * 100 >= p * n);
 *  - a span's self time is its duration minus the union of its children's
 *    intervals, each clipped to the span (children that run in parallel
 *    are not counted twice); NULL while the span has no end; defined once,
 *    RC_SELF_COVER_CTE in views.h;
 *  - the service of a span is the base name of its executable.
 */
#include "config.h"

#include "sql.h"
#include "views.h"

/* The base name of column X (a path). */
#define BASENAME(x) "replace(" x ", rtrim(" x ", replace(" x ", '/', '')), '')"

/* Exact nearest-rank percentiles over columns ns, rn, cnt of a CTE. */
#define PCTS \
	"MIN(CASE WHEN rn * 100 >= cnt * 50 THEN ns END) AS p50_ns,\n" \
	"  MIN(CASE WHEN rn * 100 >= cnt * 90 THEN ns END) AS p90_ns,\n" \
	"  MIN(CASE WHEN rn * 100 >= cnt * 99 THEN ns END) AS p99_ns"

/* The condition "span S carries an error" (see the errors view). */
#define SPAN_ERROR(s) \
	"((" s ".protocol IN ('http', 'http2') AND " s ".status >= 500)\n" \
	"   OR (" s ".protocol = 'dns' AND " s ".status != 0)\n" \
	"   OR " s ".end_ns IS NULL\n" \
	"   OR EXISTS (SELECT 1 FROM attrs a WHERE a.span_id = " s ".span_id\n" \
	"              AND a.key = 'error'))"

const char rc_views_sql[] =
	/* Extensions of programs a web server runs (static_requests): a
	 * table, so a user can add their own and the view follows. */
	"CREATE TABLE script_extensions(ext TEXT PRIMARY KEY);\n"
	"INSERT INTO script_extensions VALUES ('php'), ('php3'), ('php4'),\n"
	"  ('php5'), ('php7'), ('php8'), ('phtml'), ('phar'), ('cgi'),\n"
	"  ('fcgi'), ('pl'), ('pm'), ('py'), ('wsgi'), ('rb'), ('jsp'),\n"
	"  ('jspx'), ('do'), ('action'), ('asp'), ('aspx'), ('ashx'),\n"
	"  ('asmx'), ('axd'), ('cfm'), ('cfc'), ('lua'), ('sh'), ('shtml'),\n"
	"  ('exe'), ('dll');\n"

	/* Latency of the spans per (kind, protocol, target). */
	"CREATE VIEW latency_per_target AS\n"
	"WITH d AS (\n"
	"  SELECT kind, protocol, target, end_ns - start_ns AS ns,\n"
	"    ROW_NUMBER() OVER (PARTITION BY kind, protocol, target\n"
	"                       ORDER BY end_ns - start_ns) AS rn,\n"
	"    COUNT(*) OVER (PARTITION BY kind, protocol, target) AS cnt\n"
	"  FROM spans WHERE end_ns IS NOT NULL)\n"
	"SELECT kind, protocol, target, cnt AS n, AVG(ns) AS avg_ns,\n"
	"  MIN(ns) AS min_ns, MAX(ns) AS max_ns, SUM(ns) AS total_ns,\n"
	"  " PCTS "\n"
	"FROM d GROUP BY kind, protocol, target;\n"

	/* Latency of the requests per (protocol, method, target). */
	"CREATE VIEW request_latency AS\n"
	"WITH d AS (\n"
	"  SELECT protocol, method, target, duration_ns AS ns,\n"
	"    ROW_NUMBER() OVER (PARTITION BY protocol, method, target\n"
	"                       ORDER BY duration_ns) AS rn,\n"
	"    COUNT(*) OVER (PARTITION BY protocol, method, target) AS cnt\n"
	"  FROM requests WHERE duration_ns IS NOT NULL)\n"
	"SELECT protocol, method, target, cnt AS n, AVG(ns) AS avg_ns,\n"
	"  MIN(ns) AS min_ns, MAX(ns) AS max_ns,\n"
	"  " PCTS "\n"
	"FROM d GROUP BY protocol, method, target;\n"

	/* Latency of the requests per normalised target (the root of their
	 * pattern: ids and query values folded). */
	"CREATE VIEW latency_per_shape AS\n"
	"WITH d AS (\n"
	"  SELECT r.protocol, p.service, p.root AS shape, r.duration_ns AS ns,\n"
	"    ROW_NUMBER() OVER (PARTITION BY r.protocol, p.service, p.root\n"
	"                       ORDER BY r.duration_ns) AS rn,\n"
	"    COUNT(*) OVER (PARTITION BY r.protocol, p.service, p.root) AS cnt\n"
	"  FROM requests r JOIN patterns p ON p.pattern_id = r.pattern_id\n"
	"  WHERE r.duration_ns IS NOT NULL)\n"
	"SELECT protocol, service, shape, cnt AS n, AVG(ns) AS avg_ns,\n"
	"  MIN(ns) AS min_ns, MAX(ns) AS max_ns,\n"
	"  " PCTS "\n"
	"FROM d GROUP BY protocol, service, shape;\n"

	/* Self time of every span (RC_SELF_COVER_CTE, views.h: the one
	 * definition, which span_patterns.self_ns uses too). */
	"CREATE VIEW span_self_time AS\n"
	RC_SELF_COVER_CTE
	"SELECT s.span_id, s.request_id, s.parent_span_id, s.kind, s.protocol,\n"
	"  s.name, s.target, s.host, s.pid, s.tid, s.exe, s.process_id,\n"
	"  " BASENAME("s.exe") " AS service,\n"
	"  s.start_ns, s.end_ns, s.end_ns - s.start_ns AS duration_ns,\n"
	"  CASE WHEN s.end_ns IS NULL THEN NULL ELSE COALESCE(cov.covered, 0) END\n"
	"    AS children_ns,\n"
	"  " RC_SELF_NS " AS self_ns\n"
	"FROM spans s LEFT JOIN cov ON cov.sid = s.span_id;\n"

	/* Self time per request and process. */
	"CREATE VIEW self_time_per_process AS\n"
	"SELECT request_id, process_id, host, pid, exe, service,\n"
	"  COUNT(*) AS spans, SUM(self_ns) AS self_ns,\n"
	"  TOTAL(CASE WHEN kind = 'server' THEN self_ns END) AS server_self_ns,\n"
	"  TOTAL(CASE WHEN kind = 'client' THEN self_ns END) AS client_self_ns\n"
	"FROM span_self_time WHERE request_id IS NOT NULL\n"
	"GROUP BY request_id, process_id\n"
	"ORDER BY request_id, self_ns DESC;\n"

	/* Self time per tier (service), over all requests. */
	"CREATE VIEW self_time_per_tier AS\n"
	"SELECT service, COUNT(DISTINCT request_id) AS requests,\n"
	"  COUNT(*) AS spans, SUM(self_ns) AS self_ns,\n"
	"  TOTAL(CASE WHEN kind = 'server' THEN self_ns END) AS server_self_ns,\n"
	"  TOTAL(CASE WHEN kind = 'client' THEN self_ns END) AS client_self_ns,\n"
	"  SUM(self_ns) * 1.0 / COUNT(DISTINCT request_id)\n"
	"    AS avg_self_per_request_ns\n"
	"FROM span_self_time\n"
	"WHERE request_id IS NOT NULL AND self_ns IS NOT NULL\n"
	"GROUP BY service ORDER BY self_ns DESC;\n"

	/* Database queries each request made. */
	"CREATE VIEW queries_per_request AS\n"
	"SELECT r.request_id, r.target, COUNT(s.span_id) AS queries,\n"
	"  COALESCE(SUM(s.end_ns - s.start_ns), 0) AS query_ns,\n"
	"  COUNT(DISTINCT s.target) AS distinct_queries,\n"
	"  COUNT(s.target) - COUNT(DISTINCT s.target) AS repeats\n"
	"FROM requests r LEFT JOIN spans s\n"
	"  ON s.request_id = r.request_id AND s.kind = 'client'\n"
	"  AND s.protocol = 'postgresql'\n"
	"GROUP BY r.request_id;\n"

	/* The same SQL text sent more than once within one request. */
	"CREATE VIEW repeated_queries AS\n"
	"SELECT s.request_id, s.target, COUNT(*) AS n,\n"
	"  SUM(s.end_ns - s.start_ns) AS total_ns, r.target AS request_target\n"
	"FROM spans s JOIN requests r ON r.request_id = s.request_id\n"
	"WHERE s.kind = 'client' AND s.protocol = 'postgresql'\n"
	"  AND s.target IS NOT NULL\n"
	"GROUP BY s.request_id, s.target HAVING COUNT(*) > 1;\n"

	/* The same query shape (literals folded) sent more than once within
	 * one request: the N+1 pattern. */
	"CREATE VIEW repeated_query_shapes AS\n"
	"SELECT sp.request_id, sp.label AS shape, COUNT(*) AS n,\n"
	"  COUNT(DISTINCT s.target) AS texts,\n"
	"  SUM(s.end_ns - s.start_ns) AS total_ns, r.target AS request_target\n"
	"FROM span_patterns sp JOIN spans s ON s.span_id = sp.span_id\n"
	"  JOIN requests r ON r.request_id = sp.request_id\n"
	"WHERE s.kind = 'client' AND s.protocol = 'postgresql'\n"
	"GROUP BY sp.request_id, sp.label HAVING COUNT(*) > 1;\n"

	/* Requests for static content: HTTP (or FastCGI) requests whose path
	 * (the target up to '?') ends in a file extension - letters and
	 * digits after the last '.' of the last segment, at least one letter,
	 * at most 10 - that is not in script_extensions. */
	"CREATE VIEW static_requests AS\n"
	"WITH p AS (\n"
	"  SELECT request_id, protocol, target, status, duration_ns, root_span_id,\n"
	"    CASE WHEN instr(target, '?') > 0\n"
	"         THEN substr(target, 1, instr(target, '?') - 1)\n"
	"         ELSE target END AS path\n"
	"  FROM requests\n"
	"  WHERE protocol IN ('http', 'http2', 'fastcgi') AND target IS NOT NULL),\n"
	"g AS (SELECT *, " BASENAME("path") " AS seg FROM p),\n"
	"e AS (\n"
	"  SELECT *, CASE WHEN instr(seg, '.') > 0\n"
	"    THEN lower(replace(seg, rtrim(seg, replace(seg, '.', '')), ''))\n"
	"    END AS ext FROM g)\n"
	"SELECT e.request_id, e.protocol, e.target, e.path, e.ext AS extension,\n"
	"  e.status, e.duration_ns,\n"
	"  (SELECT COUNT(*) FROM spans s WHERE s.request_id = e.request_id\n"
	"     AND s.kind = 'client' AND s.protocol != 'dns') AS backend_calls,\n"
	"  (SELECT COUNT(*) FROM spans s WHERE s.request_id = e.request_id\n"
	"     AND s.kind = 'client' AND s.protocol = 'postgresql') AS queries,\n"
	"  (SELECT TOTAL(s.end_ns - s.start_ns) FROM spans s\n"
	"     JOIN spans root ON root.span_id = e.root_span_id\n"
	"     WHERE s.request_id = e.request_id AND s.kind = 'client'\n"
	"     AND s.protocol != 'dns' AND s.process_id = root.process_id)\n"
	"     AS backend_ns\n"
	"FROM e\n"
	"WHERE e.ext != '' AND length(e.ext) <= 10 AND e.ext GLOB '*[a-z]*'\n"
	"  AND e.ext NOT GLOB '*[^a-z0-9]*'\n"
	"  AND e.ext NOT IN (SELECT ext FROM script_extensions);\n"

	/* Static requests that caused work in another tier. */
	"CREATE VIEW static_backend_work AS\n"
	"SELECT * FROM static_requests WHERE backend_calls > 0\n"
	"ORDER BY backend_calls DESC, request_id;\n"

	/* Requests by duration, longest first. */
	"CREATE VIEW slowest_requests AS\n"
	"SELECT * FROM requests WHERE duration_ns IS NOT NULL\n"
	"ORDER BY duration_ns DESC;\n"

	/* Spans that failed, each with the path from its request's root. */
	"CREATE VIEW errors AS\n"
	"WITH RECURSIVE\n"
	"ea AS (\n"
	"  SELECT span_id, MIN(value) AS value FROM attrs\n"
	"  WHERE key = 'error' AND span_id IS NOT NULL GROUP BY span_id),\n"
	"e AS (\n"
	"  SELECT s.*, CASE\n"
	"    WHEN s.protocol IN ('http', 'http2') AND s.status >= 500\n"
	"      THEN s.protocol || ' ' || s.status\n"
	"    WHEN ea.value IS NOT NULL THEN s.protocol || ' ' || ea.value\n"
	"    WHEN s.protocol = 'dns' AND s.status != 0 THEN 'dns ' || s.status\n"
	"    WHEN s.end_ns IS NULL THEN 'no reply' END AS error\n"
	"  FROM spans s LEFT JOIN ea ON ea.span_id = s.span_id),\n"
	"ee AS (SELECT * FROM e WHERE error IS NOT NULL),\n"
	"up(err, parent, path) AS (\n"
	"  SELECT span_id, parent_span_id,\n"
	"    COALESCE(" BASENAME("exe") ", '?') || ' ' || COALESCE(name, protocol)\n"
	"  FROM ee\n"
	"  UNION ALL\n"
	"  SELECT up.err, p.parent_span_id,\n"
	"    COALESCE(" BASENAME("p.exe") ", '?') || ' ' ||\n"
	"    COALESCE(p.name, p.protocol) || ' > ' || up.path\n"
	"  FROM up JOIN spans p ON p.span_id = up.parent)\n"
	"SELECT ee.request_id, r.target AS request_target, ee.span_id, ee.kind,\n"
	"  ee.protocol, ee.host, ee.pid, ee.exe, ee.name, ee.target, ee.status,\n"
	"  ee.error,\n"
	"  NOT EXISTS (SELECT 1 FROM spans c WHERE c.parent_span_id = ee.span_id\n"
	"    AND " SPAN_ERROR("c") ") AS origin,\n"
	"  up.path, ee.start_ns, ee.end_ns\n"
	"FROM ee JOIN up ON up.err = ee.span_id\n"
	"  AND NOT EXISTS (SELECT 1 FROM spans p WHERE p.span_id = up.parent)\n"
	"  LEFT JOIN requests r ON r.request_id = ee.request_id\n"
	"ORDER BY ee.request_id, ee.start_ns, ee.span_id;\n"

	/* Every span of every request, in path order. */
	"CREATE VIEW request_paths AS\n"
	"SELECT r.request_id, r.target AS request_target, s.span_id,\n"
	"  s.parent_span_id, s.kind, s.protocol, s.name, s.target,\n"
	"  s.host, s.pid, s.tid, s.exe, s.start_ns, s.end_ns,\n"
	"  s.end_ns - s.start_ns AS duration_ns\n"
	"FROM requests r JOIN spans s ON s.request_id = r.request_id\n"
	"ORDER BY r.request_id, s.start_ns, s.span_id;\n"

	/* Requests whose path may be wrong (docs/reconstruct.md,
	 * "Certainty"): which ones can I not trust, and why. */
	"CREATE VIEW uncertain_requests AS\n"
	"SELECT request_id, target, certainty, certainty_reason FROM requests\n"
	"WHERE certainty = 'uncertain' ORDER BY request_id;\n"

	/* Work no rule could attribute, per kind. */
	"CREATE VIEW unattributed AS\n"
	"SELECT 'fragments' AS what, COUNT(*) AS n FROM fragments\n"
	"  WHERE request_id IS NULL\n"
	"UNION ALL SELECT 'messages', COUNT(*) FROM messages\n"
	"  WHERE request_id IS NULL AND kind != 'control'\n"
	"UNION ALL SELECT 'files', COUNT(*) FROM files\n"
	"  WHERE request_id IS NULL\n"
	"UNION ALL SELECT 'spans', COUNT(*) FROM spans\n"
	"  WHERE request_id IS NULL;\n";

int rc_views_create(sqlite3 *h, char *err, size_t errlen)
{
	struct rc_sql x = { h, "views", err, errlen, 0 };
	return rc_sql_exec(&x, rc_views_sql);
}
