/*
 * trust.c - the sections of bp-report's page about what it cannot vouch for:
 * the uncertain requests and the channels that could not be read
 * (docs/report.md).
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "page.h"

static const char *unread_why(const char *reason)
{
	if (!reason)
		return "";
	if (!strcmp(reason, "tls-in-program"))
		return "encrypted inside the program (its own TLS library): not traced";
	if (!strcmp(reason, "unknown-protocol"))
		return "no processor recognised the first bytes: not traced";
	if (!strcmp(reason, "lost-sync"))
		return "its processor lost track: traced up to there";
	return reason;
}

/* The requests whose path may be wrong, and why (view uncertain_requests). */
int report_uncertain(struct page *p)
{
	FILE *f = p->f;
	int64_t n = page_q_int(p, "SELECT COUNT(*) FROM uncertain_requests", 0);
	sqlite3_stmt *s = export_prep(p->x,
		"SELECT request_id, target, certainty_reason FROM uncertain_requests\n"
		"ORDER BY request_id LIMIT ?");

	if (!s)
		return -1;
	p->sum->uncertain = (uint64_t)n;
	sqlite3_bind_int64(s, 1, p->o->rows);
	fprintf(f, "<section id=\"uncertain\"><h2>Uncertain requests</h2><p class=\"muted\">Requests whose path may be wrong: a call their process made while other requests were parked in it (waiting in the program, with no call of their own out) could be theirs or another's (ambiguous:parked), or the process read another request's input while this one's work was pending (readahead). Each is drawn as well as the rules allow, never silently: %" PRId64 " uncertain.</p>", n);
	if (!n) {
		sqlite3_finalize(s);
		fputs("<p class=\"ok\">None: every path is exact or resolved by a sound rule.</p></section>\n", f);
		return 0;
	}
	fputs("<table><thead><tr><th>request</th><th>target</th><th>why</th></tr></thead><tbody>", f);
	while (sqlite3_step(s) == SQLITE_ROW) {
		fputs("<tr><td class=\"n\">", f);
		page_req_link(p, sqlite3_column_int64(s, 0));
		fputs("</td>", f);
		page_td_text(f, "t", export_col(s, 1), 200);
		page_td_text(f, NULL, export_col(s, 2), 120);
		fputs("</tr>\n", f);
	}
	sqlite3_finalize(s);
	fputs("</tbody></table></section>\n", f);
	return 0;
}

/*
 * The channels that could not be read (channels.readable = 0), by program,
 * port (or socket path) and reason: the paths through them stop at the
 * program.  Pipes never framed (stdio) and rule "none" are left out.
 */
int report_unreadable(struct page *p)
{
	FILE *f = p->f;
	if (page_q_int(p, "SELECT COUNT(*) FROM pragma_table_info('channels') WHERE name = 'unreadable_reason'", 0) == 0) {
		fputs("<section id=\"unreadable\"><h2>Channels that could not be read</h2><p class=\"muted\">This database was written before channels had a readable column.</p></section>\n", f);
		return 0;
	}
	int64_t n = page_q_int(p, "SELECT COUNT(*) FROM channels WHERE readable = 0 AND unreadable_reason IN ('tls-in-program', 'unknown-protocol', 'lost-sync')", 0);
	sqlite3_stmt *s = export_prep(p->x,
		"SELECT replace(pr.exe, rtrim(pr.exe, replace(pr.exe, '/', '')), '') AS program,\n"
		"  CASE WHEN ch.kind NOT IN ('tcp', 'udp') THEN COALESCE(ch.path, ch.kind)\n"
		"    WHEN ch.role = 'accept' THEN replace(ch.local, rtrim(ch.local, '0123456789'), '')\n"
		"    ELSE replace(ch.remote, rtrim(ch.remote, '0123456789'), '') END AS port,\n"
		"  ch.unreadable_reason, COUNT(*), SUM(ch.bytes_in), SUM(ch.bytes_out)\n"
		"FROM channels ch LEFT JOIN processes pr ON pr.process_id = ch.process_id\n"
		"WHERE ch.readable = 0\n"
		"  AND ch.unreadable_reason IN ('tls-in-program', 'unknown-protocol', 'lost-sync')\n"
		"GROUP BY 1, 2, 3 ORDER BY 4 DESC, 1, 2 LIMIT ?");
	if (!s)
		return -1;
	p->sum->unreadable = (uint64_t)n;
	sqlite3_bind_int64(s, 1, p->o->rows);
	fprintf(f, "<section id=\"unreadable\"><h2>Channels that could not be read</h2><p class=\"muted\">Channels whose messages no processor could frame: the program encrypts inside itself (Java's JSSE, Go's crypto/tls, a statically linked OpenSSL), its protocol is unknown, or the processor lost track. Requests through them are not seen, so their paths stop at the program. %" PRId64 " channels (all in the channels table: readable = 0).</p>", n);
	if (!n) {
		sqlite3_finalize(s);
		fputs("<p class=\"ok\">None: every channel with a protocol was read.</p></section>\n", f);
		return 0;
	}
	fputs("<table><thead><tr><th>program</th><th>port</th><th>why</th><th>channels</th><th>bytes in</th><th>bytes out</th></tr></thead><tbody>", f);
	while (sqlite3_step(s) == SQLITE_ROW) {
		fputs("<tr>", f);
		page_td_text(f, NULL, export_col(s, 0), 60);
		page_td_text(f, "t", export_col(s, 1), 120);
		page_td_text(f, NULL, unread_why(export_col(s, 2)), 120);
		fprintf(f, "<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>",
			export_col(s, 3), export_col(s, 4), export_col(s, 5));
		fputs("</tr>\n", f);
	}
	sqlite3_finalize(s);
	fputs("</tbody></table></section>\n", f);
	return 0;
}

/*
 * The programs bp-logd named as doing their network I/O past libc (table
 * untraced_programs): by program, with their processes and an example of
 * the sockets the tracer never saw.  Nothing they did is in the paths.
 */
int report_untraced(struct page *p)
{
	FILE *f = p->f;
	static const char head[] =
		"<section id=\"untraced\"><h2>Programs that could not be traced</h2><p class=\"muted\">"
		"Processes that held sockets the tracer never saw created, accepted or used: they make their system calls themselves, "
		"past the C library (a Go binary, even one linked through cgo; io_uring), so nothing they do is in the paths and their peers look untraced. "
		"bp-logd names a process only when its tracer saw no socket call at all and the same socket, made after the process started, "
		"was there one second apart (docs/accuracy.md, \"Programs that cannot be traced\").";

	if (page_q_int(p, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'untraced_programs'", 0) == 0) {
		fprintf(f, "%s This database was written before bp-reconstruct kept them.</p></section>\n", head);
		return 0;
	}
	int64_t n = page_q_int(p, "SELECT COUNT(*) FROM untraced_programs", 0);
	sqlite3_stmt *s = export_prep(p->x,
		"SELECT replace(exe, rtrim(exe, replace(exe, '/', '')), '') AS program,\n"
		"  exe, COUNT(*), group_concat(pid, ', '), SUM(sockets),\n"
		"  SUM(tcp_listen), SUM(tcp), SUM(udp), SUM(unix_listen), MIN(examples)\n"
		"FROM untraced_programs GROUP BY exe ORDER BY 3 DESC, 1 LIMIT ?");
	if (!s)
		return -1;
	p->sum->untraced = (uint64_t)n;
	sqlite3_bind_int64(s, 1, p->o->rows);
	fprintf(f, "%s %" PRId64 " processes (table untraced_programs).</p>", head, n);
	if (!n) {
		sqlite3_finalize(s);
		fputs("<p class=\"ok\">None: every traced process that held sockets went through the C library for them.</p></section>\n", f);
		return 0;
	}
	fputs("<table><thead><tr><th>program</th><th>executable</th><th>processes</th><th>pids</th><th>sockets</th><th>tcp listening</th><th>tcp</th><th>udp</th><th>unix listening</th><th>e.g.</th></tr></thead><tbody>", f);
	while (sqlite3_step(s) == SQLITE_ROW) {
		fputs("<tr>", f);
		page_td_text(f, NULL, export_col(s, 0), 60);
		page_td_text(f, "t", export_col(s, 1), 120);
		fprintf(f, "<td class=\"n\">%s</td>", export_col(s, 2));
		page_td_text(f, "t", export_col(s, 3), 80);
		for (int i = 4; i <= 8; i++)
			fprintf(f, "<td class=\"n\">%s</td>", export_col(s, i));
		page_td_text(f, "t", export_col(s, 9), 160);
		fputs("</tr>\n", f);
	}
	sqlite3_finalize(s);
	fputs("</tbody></table></section>\n", f);
	return 0;
}
