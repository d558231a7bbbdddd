/*
 * keeper.c - the merge kept between the window passes of --follow.
 *
 * A window pass used to reconstruct the whole log: its cost and its
 * memory grew with the history.  The keeper is a process that
 * reconstructs the logs once and then holds the merge paused at a
 * watermark W (every record up to W in the logs; nothing later applied).
 * For each pass it reads what the logs gained (rc_input_more, and pass 1
 * reading on: rc_scan_more, which refuses when a decision the merge
 * relied on came out otherwise), forks a child that finishes the merge
 * over everything the logs have now and writes the pass's database, as
 * rc_run at once would, waits for it, and merges on to the pass's W.
 *
 * The keeper never opens a database (rc_options.db_later): every row it
 * makes is spooled, and the child, which inherits the spool, writes on
 * into a file of its own (rc_db_rows_fork) and creates the database at
 * its end.  A thread would not survive the fork; the keeper has none.
 *
 * The protocol, a SOCK_SEQPACKET pair: --follow sends PASS; the child
 * answers SUMMARY (its exit code, summary and error); the keeper answers
 * DONE once the child is gone (its wait status), or REBUILD (why) when it
 * cannot go on (the logs changed otherwise than by growing, a decision
 * changed, a record came older than the merge had applied, a window
 * that begins before rows it left out).  --follow then reconstructs the
 * pass at once, as it did before, and starts a new keeper for the next.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "db_impl.h"
#include "input.h"
#include "keeper.h"
#include "merge.h"
#include "pair.h"
#include "spill.h"
#include "rc.h"
#include "scan.h"

enum { KM_PASS = 1, KM_SUMMARY, KM_DONE, KM_REBUILD, KM_READY };

#define KM_DOMS  256
#define KM_LABEL 96
#define KM_TEXT  1024

/* Every message is one of these. */
struct km {
	int32_t  kind;
	int32_t  rc;                 /* SUMMARY: the child's exit code */
	int32_t  status;             /* DONE: its wait status, -1: no child */
	int32_t  manifest;           /* PASS: write OUT.files */
	uint32_t ndom;
	int64_t  w, pending_ns, rows_from_ns;
	struct rc_summary sum;
	int64_t  corr[KM_DOMS];
	char     label[KM_DOMS][KM_LABEL];
	char     out[PATH_MAX];
	char     text[KM_TEXT];
};

struct rc_keeper {
	pid_t pid;
	int   sock;
	int   gone;
	int   ready;                 /* it said READY */
};

/* ---- in the keeper ---------------------------------------------------------- */

struct keep {
	int   sock;
	int   began;                 /* it merged (a pass, or to W0) */
	int64_t w0;                  /* the merge before the first pass */
	int   child;                 /* this process is a pass's child */
	int   ready_pending;         /* READY once merged to W0 */
	int   read_on;               /* the logs are read anew each pass */
	struct rc_options o;         /* the keeper's (C->opt) */
	struct rc_options po;        /* the pass's, in its child */
	const char *doms[KM_DOMS];
	struct km m;                 /* the pass asked for */
	/* BP_FOLLOW_TIMING: seconds indexing and in pass 1 reading on; in
	 * the child, when it began, copied its files, and read on finally */
	double t_index, t_scan, t_fork, t_own, t_final;
};

static void km_send(int sock, struct km *m)
{
	while (send(sock, m, sizeof *m, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

/* The text an error left in F (the run's err file) into T. */
static void file_text(FILE *f, char *t, size_t len)
{
	size_t n = 0;
	t[0] = 0;
	if (!f)
		return;
	fflush(f);
	rewind(f);
	n = fread(t, 1, len - 1, f);
	t[n] = 0;
	while (n && (t[n - 1] == '\n'))
		t[--n] = 0;
}

/* In a pass's child: the temporary files the keeper goes on with are
 * not to be written here (the blocks, images and streams, pass 1's
 * channel ends and their runs are copied; the row spool goes on in a
 * file of its own).  0 or an error (rc_fail). */
static int own_files(struct rc_ctx *c)
{
	int r;
	if ((r = rc_spill_fork(c, &c->blk_spill, "blocks")) != 0 ||
	    (r = rc_spill_fork(c, &c->img_spill, "images")) != 0 ||
	    (r = rc_spill_fork(c, &c->str_spill, "streams")) != 0 ||
	    (r = rc_spill_fork(c, &c->ent_spill, "entries")) != 0 ||
	    (c->p1 && c->p1->pair &&
	     (r = rc_spill_fork(c, &c->p1->pair->f, "ends")) != 0))
		return r;
	return rc_db_rows_fork(c);
}

static int keep_fn(void *arg, struct rc_ctx *c, int64_t *w)
{
	struct keep *k = arg;
	char why[300];
	int r;

	ssize_t n;
	if (!k->began) {
		/* first the merge up to W0 on its own, then READY: a keeper
		 * made while another serves takes over ready */
		struct km d;
		k->began = 1;
		memset(&d, 0, sizeof d);
		d.kind = KM_READY;
		if (k->w0 == INT64_MIN) {
			km_send(k->sock, &d);
		} else {
			k->ready_pending = 1;
			k->read_on = 1;
			*w = k->w0;
			return 1;
		}
	}
	if (k->ready_pending) {
		struct km d;
		memset(&d, 0, sizeof d);
		d.kind = KM_READY;
		k->ready_pending = 0;
		km_send(k->sock, &d);
	}
	while ((n = recv(k->sock, &k->m, sizeof k->m, 0)) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof k->m || k->m.kind != KM_PASS)
		_exit(0);            /* --follow is gone, or stops */
	k->m.out[sizeof k->m.out - 1] = 0;
	if (k->m.ndom > KM_DOMS)
		k->m.ndom = 0;
	/* The rows it leaves out (rc_options.rows_from_ns) are those of
	 * the window when it began, for its whole life: a request's rows
	 * are all written or all left out, as at once.  A later pass's
	 * window may begin later (the pass writes more than it needs), not
	 * earlier: the rows it left out are not there to write. */
	if (k->m.rows_from_ns < k->o.rows_from_ns ||
	    (k->o.rows_from_ns && !k->m.rows_from_ns))
		return rc_fail(c, RC_EXIT_INPUT,
			       "the window begins before the rows the kept merge left out");
	double t0 = rc_run_now(), t1 = t0, t2 = t0;
	if (k->read_on) {
		/* the logs as they are now (but for the first pass, which
		 * read them as they were) */
		r = rc_input_more(c, why, sizeof why);
		t1 = rc_run_now();
		if (r == RC_MORE_REBUILD)
			return rc_fail(c, RC_EXIT_INPUT,
				       "the logs changed otherwise than by growing: %s", why);
		if (r)
			return r;
		r = rc_scan_more(c, 0, why, sizeof why);
		if (r == RC_MORE_REBUILD)
			return rc_fail(c, RC_EXIT_INPUT, "pass 1, reading on: %s", why);
		if (r)
			return r;
		t2 = rc_run_now();
	}
	k->t_index = t1 - t0;
	k->t_scan = t2 - t1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		/* the pass's child: the logs are final for it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		k->child = 1;
		k->po = k->o;
		k->po.output = k->m.out;
		k->po.pending_ns = k->m.pending_ns;
		/* the rows of the pass's window: what the merge writes from
		 * here on is judged by it, and the replay leaves out what
		 * the keeper spooled before it (rc_options.row_keys) */
		k->po.rows_from_ns = k->m.rows_from_ns;
		k->po.err = tmpfile();
		for (uint32_t i = 0; i < k->m.ndom; i++) {
			k->m.label[i][KM_LABEL - 1] = 0;
			k->doms[i] = k->m.label[i];
		}
		k->po.rows_dom = k->doms;
		k->po.rows_corr = k->m.corr;
		k->po.nrows_dom = k->m.ndom;
		c->opt = &k->po;
		k->t_fork = rc_run_now();
		if ((r = own_files(c)) != 0)
			return r;
		k->t_own = rc_run_now();
		/* (after its keeper read on, the logs and the merge are as
		 * that left them) */
		r = rc_scan_more(c, k->read_on ? RC_SCAN_FINAL_SAME : 1, why,
				 sizeof why);
		k->t_final = rc_run_now();
		if (r == RC_MORE_REBUILD)
			return rc_fail(c, RC_EXIT_INPUT, "pass 1 at the end of the logs: %s", why);
		return r ? r : 0;
	}
	struct km d;
	memset(&d, 0, sizeof d);
	d.kind = KM_DONE;
	d.status = -1;
	if (pid > 0) {
		int st;
		while (waitpid(pid, &st, 0) < 0) {
			if (errno != EINTR) {
				st = -1;
				break;
			}
		}
		d.status = st;
	}
	km_send(k->sock, &d);
	k->read_on = 1;
	/* its own merge: nothing it applies (before W) is pending in a
	 * later pass (whose pending_ns is later still) */
	k->o.pending_ns = k->m.pending_ns;
	*w = k->m.w;
	return 1;
}

/* OUT.files: each segment file the pass read and its length then, and
 * each it skipped with the bytes that make a copy skipped alike (for
 * BP_FOLLOW_KEEPER=check: the same bytes reconstructed at once); 0 or
 * -1. */
static int write_manifest(const struct rc_ctx *c, const char *out)
{
	char p[PATH_MAX];
	if ((size_t)snprintf(p, sizeof p, "%s.files", out) >= sizeof p)
		return -1;
	FILE *f = fopen(p, "w");
	if (!f)
		return -1;
	for (uint32_t i = 0; i < c->nfiles; i++)
		fprintf(f, "%llu %s\n", (unsigned long long)c->files[i].size,
			c->files[i].path);
	for (uint32_t i = 0; i < c->niwarn; i++)
		if (c->iwarn[i].skipped >= 0 && c->iwarn[i].path)
			fprintf(f, "%lld %s\n", (long long)c->iwarn[i].skipped,
				c->iwarn[i].path);
	return fclose(f) == 0 ? 0 : -1;
}

/* The keeper's process: never returns. */
static void keeper_main(const struct rc_options *base, int64_t w0, int sock)
{
	static struct keep k;
	struct rc_ctx c;
	double t0 = rc_run_now();
	int r;

	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	k.sock = sock;
	k.w0 = w0;
	k.o = *base;
	k.o.db_later = 1;
	k.o.row_keys = 1;
	k.o.quiet = 1;
	k.o.progress = 0;
	k.o.no_patterns = 1;
	k.o.grow_fn = NULL;
	k.o.steps = 0;
	k.o.err = tmpfile();
	rc_run_init(&c, &k.o);
	c.grow.fn = keep_fn;
	c.grow.arg = &k;
	r = rc_run_begin(&c);
	if (!r)
		r = rc_merge_run(&c);
	if (k.child) {
		/* the pass's child: the merge ended with the logs */
		struct km m;
		memset(&m, 0, sizeof m);
		m.kind = KM_SUMMARY;
		double t_merged = rc_run_now();
		/* (before rc_run_end, which says the index's warnings and
		 * forgets them: the files it skipped among them) */
		if (!r && k.m.manifest && write_manifest(&c, k.po.output) < 0)
			r = rc_fail(&c, RC_EXIT_OUTPUT, "cannot write %s.files", k.po.output);
		if (!r)
			r = rc_run_end(&c, t0, &m.sum);
		const char *tm = getenv("BP_FOLLOW_TIMING");
		if (tm && *tm)
			fprintf(stderr, "kept pass: index %.3f s, pass 1 %.3f s, own files %.3f s, pass 1 final %.3f s, merge %.3f s, rows %.3f s (%llu events)\n",
				k.t_index, k.t_scan, k.t_own - k.t_fork,
				k.t_final - k.t_own, t_merged - k.t_final,
				rc_run_now() - t_merged,
				(unsigned long long)m.sum.events);
		if (r)
			r = rc_run_fail(&c, r);
		m.rc = r;
		m.rows_from_ns = k.po.rows_from_ns;
		file_text(k.po.err, m.text, sizeof m.text);
		km_send(sock, &m);
		_exit(0);
	}
	/* the keeper: the merge cannot go on (it never ends here) */
	struct km m;
	memset(&m, 0, sizeof m);
	m.kind = KM_REBUILD;
	if (!r)
		r = rc_fail(&c, RC_EXIT_INPUT, "the kept merge ended");
	rc_run_fail(&c, r);
	file_text(k.o.err, m.text, sizeof m.text);
	km_send(sock, &m);
	_exit(0);
}

/* ---- in --follow ------------------------------------------------------------ */

struct rc_keeper *rc_keeper_start(const struct rc_options *o, int64_t w0)
{
	struct rc_keeper *k = calloc(1, sizeof *k);
	int sv[2];

	if (!k)
		return NULL;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		free(k);
		return NULL;
	}
	pid_t parent = getpid();
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		free(k);
		return NULL;
	}
	if (pid == 0) {
		close(sv[0]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(0);
		keeper_main(o, w0, sv[1]);
	}
	close(sv[1]);
	k->pid = pid;
	k->sock = sv[0];
	return k;
}

static int fallback(char *why, size_t len, const char *text)
{
	snprintf(why, len, "%s", text);
	return RC_KEEP_FALLBACK;
}

int rc_keeper_pass(struct rc_keeper *k, const struct rc_options *o,
		   int64_t w, int manifest, struct rc_summary *sum,
		   int64_t *rows_from, char *why, size_t len)
{
	static struct km m;
	int have_sum = 0, rc = RC_EXIT_OUTPUT;
	char text[KM_TEXT] = "";

	if (k->gone)
		return fallback(why, len, "the kept merge is gone");
	memset(&m, 0, sizeof m);
	m.kind = KM_PASS;
	m.w = w;
	m.pending_ns = o->pending_ns;
	m.rows_from_ns = o->rows_from_ns;
	if (o->nrows_dom > KM_DOMS ||
	    strlen(o->output) >= sizeof m.out)
		return fallback(why, len, "more clock domains or a longer path than the kept merge takes");
	for (size_t i = 0; i < o->nrows_dom; i++) {
		if (strlen(o->rows_dom[i]) >= KM_LABEL)
			return fallback(why, len, "a clock domain's name longer than the kept merge takes");
		snprintf(m.label[i], KM_LABEL, "%s", o->rows_dom[i]);
		m.corr[i] = o->rows_corr[i];
	}
	m.ndom = (uint32_t)o->nrows_dom;
	m.manifest = manifest;
	snprintf(m.out, sizeof m.out, "%s", o->output);
	/* a keeper that stopped already may have said why: read that */
	int sent = send(k->sock, &m, sizeof m, MSG_NOSIGNAL) == (ssize_t)sizeof m;
	for (;;) {
		ssize_t n;
		while ((n = recv(k->sock, &m, sizeof m, 0)) < 0 && errno == EINTR)
			;
		if (n != (ssize_t)sizeof m) {
			k->gone = 1;
			return fallback(why, len, !sent ? "the kept merge is gone" :
					"the kept merge ended without a word");
		}
		m.text[sizeof m.text - 1] = 0;
		if (m.kind == KM_SUMMARY) {
			have_sum = 1;
			rc = m.rc;
			*sum = m.sum;
			*rows_from = m.rows_from_ns;
			snprintf(text, sizeof text, "%s", m.text);
		} else if (m.kind == KM_REBUILD) {
			k->gone = 1;
			return fallback(why, len, m.text[0] ? m.text :
					"the kept merge stopped");
		} else if (m.kind == KM_DONE) {
			break;
		} else if (m.kind == KM_READY) {
			k->ready = 1;
		}
	}
	if (!have_sum) {
		if (m.status == -1)
			return fallback(why, len, "the kept merge could not fork a pass");
		snprintf(why, len, "the pass's child of the kept merge %s %d",
			 WIFSIGNALED(m.status) ? "was killed by signal" : "ended with status",
			 WIFSIGNALED(m.status) ? WTERMSIG(m.status) : WEXITSTATUS(m.status));
		return RC_KEEP_FALLBACK;
	}
	if (rc != RC_EXIT_OK)
		return fallback(why, len, text[0] ? text : "the pass failed");
	return RC_EXIT_OK;
}

int rc_keeper_ready(struct rc_keeper *k)
{
	static struct km m;
	ssize_t n;

	if (k->gone)
		return -1;
	if (k->ready)
		return 1;
	while ((n = recv(k->sock, &m, sizeof m, MSG_DONTWAIT)) < 0 && errno == EINTR)
		;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (n == (ssize_t)sizeof m && m.kind == KM_READY) {
		k->ready = 1;
		return 1;
	}
	k->gone = 1;
	return -1;
}

void rc_keeper_stop(struct rc_keeper *k)
{
	if (!k)
		return;
	/* it ends when the socket closes (its pass's child with it) */
	close(k->sock);
	kill(k->pid, SIGKILL);
	while (waitpid(k->pid, NULL, 0) < 0 && errno == EINTR)
		;
	free(k);
}

/* ---- the check -------------------------------------------------------------- */

/* The stats a pass at once and a kept one must agree on. */
#define STATS_SAME \
	"'events', 'requests', 'spans', 'messages', 'fragments', 'files'," \
	" 'warnings', 'lost_records', 'follow_rows_from_ns'," \
	" 'follow_rows_skip_max_ns', 'peer_pending', 'peer_pending_max_ns'," \
	" 'requests_first_ns', 'requests_last_ns'"

/*
 * A database by content: every table's rows with their ids replaced by
 * what they name (a request by its start and its root's thread, a span
 * by its start, thread and name, a channel by its process, descriptor
 * and open time, a process by its pid and start).  Ids follow the order
 * rows were written in, which a merge kept between passes may change (a
 * thread whose records ran out at a pause ends when the pass ends, not
 * at its last record; pass 1 numbers what the logs gained after what it
 * had); --follow keys its rows by what they name too.  "@." stands for
 * the schema.
 */
#define RQ(x) "COALESCE((SELECT r.start_ns || '/' || rs.pid || '/' || rs.tid FROM @.requests r " \
	"JOIN @.spans rs ON rs.span_id = r.root_span_id WHERE r.request_id = " x "), '-')"
#define SP(x) "COALESCE((SELECT z.start_ns || '/' || z.pid || '/' || z.tid || '/' || " \
	"COALESCE(z.name, '') FROM @.spans z WHERE z.span_id = " x "), '-')"
#define CH(x) "COALESCE((SELECT y.pid || '/' || y.fd || '/' || y.open_ns FROM @.channels y " \
	"WHERE y.channel_id = " x "), '-')"
#define PR(x) "COALESCE((SELECT x.pid || '/' || x.start_ns FROM @.processes x " \
	"WHERE x.process_id = " x "), '-')"
static const struct {
	const char *table, *sql;
} canon[] = {
	{ "requests", "SELECT " RQ("q.request_id") ", end_ns, protocol, method, target, status,"
	  " client, complete, certainty, certainty_reason, " SP("q.root_span_id")
	  " FROM @.requests q" },
	{ "spans", "SELECT " SP("s.span_id") ", " RQ("s.request_id") ", " SP("s.parent_span_id")
	  ", kind, protocol, target, status, host, exe, peer, end_ns, " CH("s.channel_id")
	  ", " PR("s.process_id") ", certainty, certainty_reason FROM @.spans s" },
	{ "fragments", "SELECT " RQ("f.request_id") ", " SP("f.span_id") ", pid, tid, start_ns,"
	  " end_ns, trigger, fd, " CH("f.channel_id") ", events FROM @.fragments f" },
	{ "messages", "SELECT " RQ("m.request_id") ", " SP("m.span_id") ", " CH("m.channel_id")
	  ", pid, tid, begin_ns, ts_ns, dir, kind, protocol, flags, off, len, status,"
	  " witness, (SELECT p.pid || '/' || p.tid || '/' || p.ts_ns || '/' || p.off FROM @.messages p"
	  " WHERE p.message_id = m.peer_message_id) FROM @.messages m" },
	{ "attrs", "SELECT " SP("a.span_id") ", (SELECT p.pid || '/' || p.tid || '/' || p.ts_ns || '/' || p.off"
	  " FROM @.messages p WHERE p.message_id = a.message_id), a.key, a.value FROM @.attrs a" },
	{ "files", "SELECT " RQ("i.request_id") ", " SP("i.span_id") ", pid, tid, ts_ns, path,"
	  " flags, result FROM @.files i" },
	{ "processes", "SELECT host, pid, ppid, exe, cmdline, ring_id, start_ns, end_ns, "
	  PR("p.parent_process_id") ", how, " RQ("p.request_id") ", events FROM @.processes p" },
	{ "channels", "SELECT pid, fd, kind, role, protocol, local, remote, path, ino, peer_ino, "
	  CH("c.peer_channel_id") ", (SELECT min(x.pid || '/' || x.fd || '/' || x.open_ns) FROM @.channels x"
	  " WHERE x.conn_id = c.conn_id), traced_peer, " RQ("c.request_id") ", open_ns, close_ns,"
	  " bytes_in, bytes_out, msgs_in, msgs_out, lost_sync, readable, unreadable_reason"
	  " FROM @.channels c" },
	{ "span_candidates", "SELECT " SP("k.span_id") ", " RQ("k.request_id") ", chosen, reason"
	  " FROM @.span_candidates k" },
	{ "untraced_programs", "SELECT " PR("u.process_id") ", host, pid, exe, comm, sockets,"
	  " tcp_listen, tcp, udp, unix_listen, examples FROM @.untraced_programs u" },
	{ "warnings", "SELECT replace(file, @S, ''), offset, replace(text, @S, '') FROM @.warnings" },
	{ "stats", "SELECT key, value FROM @.stats WHERE key IN (" STATS_SAME ")" },
};
#undef RQ
#undef SP
#undef CH
#undef PR

/* SQL with "@." as schema S's and "@S" as the string STRIP: a new
 * string (sqlite3_free) or NULL. */
static char *in_schema(const char *sql, const char *s, const char *strip)
{
	char *out = sqlite3_mprintf("%s", "");
	const char *p = sql, *at;
	while (out && (at = strstr(p, "@"))) {
		char *n = at[1] == 'S' ?
			sqlite3_mprintf("%s%.*s%Q", out, (int)(at - p), p, strip) :
			sqlite3_mprintf("%s%.*s%s.", out, (int)(at - p), p, s);
		sqlite3_free(out);
		out = n;
		p = at + 2;
	}
	if (out) {
		char *n = sqlite3_mprintf("%s%s", out, p);
		sqlite3_free(out);
		out = n;
	}
	return out;
}

int rc_keeper_compare(const char *a, const char *b, const char *strip,
		      char *why, size_t len)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *s = NULL;
	int r = -1;

	if (sqlite3_open_v2(a, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		snprintf(why, len, "%s: %s", a, h ? sqlite3_errmsg(h) : "out of memory");
		goto out;
	}
	char *q = sqlite3_mprintf("ATTACH %Q AS b", b);
	int rc = q ? sqlite3_exec(h, q, NULL, NULL, NULL) : SQLITE_NOMEM;
	sqlite3_free(q);
	if (rc != SQLITE_OK) {
		snprintf(why, len, "%s: %s", b, sqlite3_errmsg(h));
		goto out;
	}
	/* every table is one of those above, or compared whole */
	if (sqlite3_prepare_v2(h, "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
			       -1, &s, NULL) != SQLITE_OK) {
		snprintf(why, len, "%s", sqlite3_errmsg(h));
		goto out;
	}
	r = 0;
	while (r == 0 && sqlite3_step(s) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(s, 0);
		char *whole = sqlite3_mprintf("SELECT * FROM @.\"%w\"", t);
		const char *sql = whole;
		for (size_t i = 0; i < sizeof canon / sizeof canon[0]; i++)
			if (!strcmp(canon[i].table, t))
				sql = canon[i].sql;
		char *m = sql ? in_schema(sql, "main", "") : NULL;
		char *o = sql ? in_schema(sql, "b", strip ? strip : "") : NULL;
		char *cq = m && o ? sqlite3_mprintf(
			"SELECT (SELECT count(*) FROM (%s)) - (SELECT count(*) FROM (%s)),"
			" (SELECT count(*) FROM (%s EXCEPT %s)),"
			" (SELECT count(*) FROM (%s EXCEPT %s))",
			m, o, m, o, o, m) : NULL;
		sqlite3_stmt *c = NULL;
		if (!cq || sqlite3_prepare_v2(h, cq, -1, &c, NULL) != SQLITE_OK ||
		    sqlite3_step(c) != SQLITE_ROW) {
			snprintf(why, len, "table %s: %s", t, sqlite3_errmsg(h));
			r = -1;
		} else if (sqlite3_column_int64(c, 0) || sqlite3_column_int64(c, 1) ||
			   sqlite3_column_int64(c, 2)) {
			snprintf(why, len, "table %s: %lld more rows in the first, %lld rows only in the first, %lld only in the second",
				 t, (long long)sqlite3_column_int64(c, 0),
				 (long long)sqlite3_column_int64(c, 1),
				 (long long)sqlite3_column_int64(c, 2));
			r = 1;
		}
		sqlite3_finalize(c);
		sqlite3_free(cq);
		sqlite3_free(m);
		sqlite3_free(o);
		sqlite3_free(whole);
	}
out:
	sqlite3_finalize(s);
	sqlite3_close(h);
	return r;
}
