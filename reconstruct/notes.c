/*
 * notes.c - what a person should read after a run: warnings grouped by
 * kind (a count, one example, whether it is expected or costs paths), the
 * channels that could not be read, counted by program and port, and the
 * programs bp-logd named as doing their network I/O past libc.
 * Every warning stays in the warnings table; every channel in channels.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "rc.h"

#define MAX_KINDS  64
#define MAX_UNREAD 32

/* A warning's class: what it means for the paths. */
enum { W_CHECK, W_EXPECTED, W_COSTS, W_TIMES };

static const char *const class_text[] = {
	[W_CHECK]    = "look at it",
	[W_EXPECTED] = "expected, harmless",
	[W_COSTS]    = "COSTS PATHS",
	[W_TIMES]    = "times only, paths unaffected",
};

/* Known kinds, by a phrase of their text; the first match wins. */
static const struct {
	const char *phrase;
	int cls;
	const char *why;
} known[] = {
	{ "a pipe, written through stdio", W_EXPECTED,
	  "a pipe written through stdio, which the tracer does not see" },
	{ "a fragment working for a request used fd", W_COSTS,
	  "a channel whose opening is in no log (lost, or before the logs' first segment): its request is uncertain" },
	{ "which no channel record announced", W_EXPECTED,
	  "fds opened before the tracer started, or whose opening is in no log; a request that used one is marked (unknown-fd)" },
	{ "closed without logging the send", W_COSTS,
	  "a traced peer's send is missing; the receive counts as from an untraced peer" },
	{ "waited for a send that was never logged", W_COSTS,
	  "records lost or a cycle; the peer is treated as untraced" },
	{ "waited for its parent's", W_COSTS,
	  "a process started without its parent's state" },
	{ "record that made it is in no log", W_COSTS,
	  "a process started without its parent's state" },
	{ "waited for its creation record", W_COSTS,
	  "a thread started for no request" },
	{ "could not record", W_COSTS, "the tracer lost events" },
	{ "has not read", W_COSTS, "sends forgotten: their receives are unpaired" },
	{ "malformed", W_COSTS, "damaged log records" },
	{ "dictionary", W_COSTS, "a value lost with its dictionary" },
	{ "truncated", W_COSTS, "a damaged or torn log" },
	{ "skipped", W_COSTS, "log data not read" },
	{ "clock", W_TIMES, "clock offsets between hosts" },
	{ "reference host", W_TIMES, "clock reference" },
	{ "bp-logd on", W_CHECK, "the log daemon's own report" },
};

struct rc_wkind {
	const char *fmt;         /* static: the kind */
	char       *shape;       /* for "%s" formats: the text, digits out */
	char       *example;     /* the first one, as echoed */
	uint64_t    n;
	int         cls;
	const char *why;
};

struct rc_unread {
	char        label[80];   /* program:port */
	const char *reason;      /* static */
	uint64_t    n;
};

/* A program bp-logd named: it holds sockets its shim never saw (a
 * BT_LN_RAW_IO note, docs/logd.md "Programs that cannot be traced"). */
struct rc_rawio {
	char     host[64];
	uint32_t pid;
	int64_t  sockets;
	char     ring[20];
	char     exe[256];
	char     comm[32];
	unsigned tcp_listen, tcp, udp, unix_listen;
	char     examples[600];
};

#define MAX_RAWIO 256

struct rc_notes {
	struct rc_wkind kinds[MAX_KINDS];
	uint32_t nkinds;
	uint64_t other;          /* warnings past MAX_KINDS kinds */
	struct rc_unread unread[MAX_UNREAD];
	uint32_t nunread;
	uint64_t unread_more;    /* channels in groups past MAX_UNREAD */
	uint64_t unread_total;
	struct rc_rawio *raw;    /* MAX_RAWIO, allocated at the first */
	uint32_t nraw;
	uint64_t raw_more;       /* named past MAX_RAWIO */
};

static char *shape_of(const char *text)
{
	size_t n = strlen(text);
	char *s = malloc(n + 1), *o = s;
	if (!s)
		return NULL;
	for (; *text; text++)
		if (*text < '0' || *text > '9')
			*o++ = *text;
	*o = 0;
	return s;
}

static void classify(struct rc_wkind *k)
{
	const char *key = k->shape ? k->shape : k->fmt;
	k->cls = W_CHECK;
	k->why = "not classified";
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (strstr(key, known[i].phrase)) {
			k->cls = known[i].cls;
			k->why = known[i].why;
			return;
		}
}

static struct rc_notes *notes(struct rc_ctx *c)
{
	if (!c->notes)
		c->notes = calloc(1, sizeof *c->notes);
	return c->notes;
}

void rc_notes_warning(struct rc_ctx *c, const char *fmt, const char *file,
		      uint64_t off, const char *text)
{
	struct rc_notes *nt = notes(c);
	char *shape = NULL, ex[1200];
	uint32_t i;

	if (!nt)
		return;
	if (!strcmp(fmt, "%s") && !(shape = shape_of(text)))
		return;
	for (i = 0; i < nt->nkinds; i++) {
		struct rc_wkind *k = &nt->kinds[i];
		if (shape ? (k->shape && !strcmp(k->shape, shape))
			  : (!k->shape && (k->fmt == fmt || !strcmp(k->fmt, fmt)))) {
			k->n++;
			free(shape);
			return;
		}
	}
	if (nt->nkinds == MAX_KINDS) {
		nt->other++;
		free(shape);
		return;
	}
	struct rc_wkind *k = &nt->kinds[nt->nkinds];
	if (file)
		snprintf(ex, sizeof ex, "%s: offset %" PRIu64 ": %s", file, off, text);
	else
		snprintf(ex, sizeof ex, "%s", text);
	k->example = strdup(ex);
	if (!k->example) {
		free(shape);
		return;
	}
	nt->nkinds++;
	k->fmt = fmt;
	k->shape = shape;
	k->n = 1;
	classify(k);
}

uint64_t rc_notes_costly(const struct rc_ctx *c)
{
	uint64_t n = 0;
	if (!c->notes)
		return 0;
	for (uint32_t i = 0; i < c->notes->nkinds; i++)
		if (c->notes->kinds[i].cls != W_EXPECTED)
			n += c->notes->kinds[i].n;
	return n + c->notes->other;
}

void rc_notes_print_warnings(const struct rc_ctx *c, FILE *f)
{
	const struct rc_notes *nt = c->notes;
	if (!nt || !nt->nkinds)
		return;
	uint32_t nk = nt->nkinds + (nt->other ? 1 : 0);
	fprintf(f, "bp-reconstruct: %" PRIu64 " warning%s of %u kind%s (each one is in the warnings table):\n",
		c->st.warnings, c->st.warnings == 1 ? "" : "s", nk,
		nk == 1 ? "" : "s");
	/* The ones that cost paths first, then the rest. */
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t i = 0; i < nt->nkinds; i++) {
			const struct rc_wkind *k = &nt->kinds[i];
			if ((k->cls == W_EXPECTED || k->cls == W_TIMES) != pass)
				continue;
			fprintf(f, "bp-reconstruct: %6" PRIu64 " x %s (%s), e.g.: %s\n",
				k->n, class_text[k->cls], k->why, k->example);
		}
	if (nt->other)
		fprintf(f, "bp-reconstruct: %6" PRIu64 " x of further kinds (see the warnings table)\n",
			nt->other);
}

/* ---- channels that could not be read ---------------------------------------- */

static const char *reason_text(const char *r)
{
	if (!strcmp(r, "tls-in-program"))
		return "encrypted inside the program: not traced";
	if (!strcmp(r, "unknown-protocol"))
		return "in a protocol no processor knows: not traced";
	return "lost by their processor (lost-sync): traced up to there";
}

static const char *static_reason(const char *r)
{
	if (!strcmp(r, "tls-in-program"))
		return "tls-in-program";
	if (!strcmp(r, "unknown-protocol"))
		return "unknown-protocol";
	return "lost-sync";
}

/* The port of an address as bp formats it ("1.2.3.4:80", "[::1]:80"). */
static const char *port_of(const char *addr)
{
	const char *p = addr ? strrchr(addr, ':') : NULL;
	return p ? p + 1 : "?";
}

static void unread_add(struct rc_notes *nt, const char *label,
		       const char *reason)
{
	nt->unread_total++;
	for (uint32_t i = 0; i < nt->nunread; i++)
		if (nt->unread[i].reason == reason &&
		    !strcmp(nt->unread[i].label, label)) {
			nt->unread[i].n++;
			return;
		}
	if (nt->nunread == MAX_UNREAD) {
		nt->unread_more++;
		return;
	}
	struct rc_unread *u = &nt->unread[nt->nunread++];
	snprintf(u->label, sizeof u->label, "%s", label);
	u->reason = reason;
	u->n = 1;
}

int rc_notes_unread_collect(struct rc_ctx *c, sqlite3 *h)
{
	static const char q[] =
		"SELECT ch.unreadable_reason, p.exe, ch.role, ch.local, ch.remote,"
		" ch.kind, ch.path FROM channels ch"
		" LEFT JOIN processes p ON p.process_id = ch.process_id"
		" WHERE ch.readable = 0 AND ch.unreadable_reason IN"
		" ('tls-in-program', 'unknown-protocol', 'lost-sync')"
		" ORDER BY ch.channel_id";
	struct rc_notes *nt = notes(c);
	sqlite3_stmt *s;
	int r;

	if (!nt)
		return -1;
	if (sqlite3_prepare_v2(h, q, -1, &s, NULL) != SQLITE_OK)
		return -1;
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		const char *why = (const char *)sqlite3_column_text(s, 0);
		const char *exe = (const char *)sqlite3_column_text(s, 1);
		const char *role = (const char *)sqlite3_column_text(s, 2);
		const char *local = (const char *)sqlite3_column_text(s, 3);
		const char *remote = (const char *)sqlite3_column_text(s, 4);
		const char *kind = (const char *)sqlite3_column_text(s, 5);
		const char *path = (const char *)sqlite3_column_text(s, 6);
		const char *base = exe ? strrchr(exe, '/') : NULL;
		char label[80];

		base = base ? base + 1 : exe ? exe : "?";
		if (kind && (!strcmp(kind, "tcp") || !strcmp(kind, "udp")))
			snprintf(label, sizeof label, "%s:%s", base,
				 port_of(role && !strcmp(role, "accept") ? local
									 : remote));
		else
			snprintf(label, sizeof label, "%s:%s", base,
				 path && *path ? path : kind ? kind : "?");
		unread_add(nt, label, static_reason(why ? why : ""));
	}
	sqlite3_finalize(s);
	return r == SQLITE_DONE ? 0 : -1;
}

uint64_t rc_notes_unread(const struct rc_ctx *c)
{
	return c->notes ? c->notes->unread_total : 0;
}

void rc_notes_print_unread(const struct rc_ctx *c, FILE *f)
{
	const struct rc_notes *nt = c->notes;
	if (!nt)
		return;
	for (uint32_t i = 0; i < nt->nunread; i++)
		fprintf(f, "bp-reconstruct: %" PRIu64 " channel%s of %s %s\n",
			nt->unread[i].n, nt->unread[i].n == 1 ? "" : "s",
			nt->unread[i].label, reason_text(nt->unread[i].reason));
	if (nt->unread_more)
		fprintf(f, "bp-reconstruct: %" PRIu64 " more channels could not be read (channels.readable = 0)\n",
			nt->unread_more);
}

/* ---- programs that do their network I/O past libc -------------------------- */

/* Copy the value after KEY= in TEXT up to STOP (or the end) into OUT. */
static void field(const char *text, const char *key, const char *stop,
		  char *out, size_t len)
{
	const char *v = strstr(text, key), *e;
	size_t n;

	out[0] = 0;
	if (!v)
		return;
	v += strlen(key);
	e = stop ? strstr(v, stop) : NULL;
	n = e ? (size_t)(e - v) : strlen(v);
	if (n >= len)
		n = len - 1;
	memcpy(out, v, n);
	out[n] = 0;
}

void rc_notes_rawio(struct rc_ctx *c, const char *host, uint32_t pid,
		    int64_t sockets, const char *str, size_t len)
{
	struct rc_notes *nt = notes(c);
	struct rc_rawio r;
	char text[1200], num[16];
	const char *ex;

	if (!nt)
		return;
	if (len >= sizeof text)
		len = sizeof text - 1;
	memcpy(text, str ? str : "", str ? len : 0);
	text[str ? len : 0] = 0;
	memset(&r, 0, sizeof r);
	snprintf(r.host, sizeof r.host, "%s", host ? host : "");
	r.pid = pid;
	r.sockets = sockets;
	field(text, "ring=", " ", r.ring, sizeof r.ring);
	{       /* as processes.ring_id: 16 hex digits (a bp-logd that
		 * wrote it unpadded: a ring id from 0 to 0fff...) */
		size_t l = strlen(r.ring);
		if (l && l < 16 && sizeof r.ring > 16) {
			memmove(r.ring + 16 - l, r.ring, l + 1);
			memset(r.ring, '0', 16 - l);
		}
	}
	field(text, " exe=", " comm=", r.exe, sizeof r.exe);
	field(text, " comm=", " tcp_listen=", r.comm, sizeof r.comm);
	field(text, " tcp_listen=", " ", num, sizeof num);
	r.tcp_listen = (unsigned)strtoul(num, NULL, 10);
	field(text, " tcp=", " ", num, sizeof num);
	r.tcp = (unsigned)strtoul(num, NULL, 10);
	field(text, " udp=", " ", num, sizeof num);
	r.udp = (unsigned)strtoul(num, NULL, 10);
	field(text, " unix_listen=", ":", num, sizeof num);
	r.unix_listen = (unsigned)strtoul(num, NULL, 10);
	ex = strstr(text, ": ");
	snprintf(r.examples, sizeof r.examples, "%s", ex ? ex + 2 : "");
	for (uint32_t i = 0; i < nt->nraw; i++)
		if (nt->raw[i].pid == pid && !strcmp(nt->raw[i].host, r.host) &&
		    !strcmp(nt->raw[i].ring, r.ring))
			return;          /* named again (a log read twice) */
	if (!nt->raw && !(nt->raw = calloc(MAX_RAWIO, sizeof *nt->raw)))
		return;
	if (nt->nraw == MAX_RAWIO) {
		nt->raw_more++;
		return;
	}
	nt->raw[nt->nraw++] = r;
}

int rc_notes_rawio_write(struct rc_ctx *c, sqlite3 *h)
{
	static const char q[] =
		"INSERT INTO untraced_programs VALUES("
		" (SELECT process_id FROM processes WHERE host = ?1 AND pid = ?2"
		"  AND ring_id = ?3 ORDER BY process_id LIMIT 1),"
		" ?1, ?2, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
	const struct rc_notes *nt = c->notes;
	sqlite3_stmt *s;
	int r = SQLITE_DONE;

	if (!nt || !nt->nraw)
		return 0;
	if (sqlite3_prepare_v2(h, q, -1, &s, NULL) != SQLITE_OK)
		return -1;
	for (uint32_t i = 0; i < nt->nraw && r == SQLITE_DONE; i++) {
		const struct rc_rawio *w = &nt->raw[i];
		sqlite3_bind_text(s, 1, w->host, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 2, w->pid);
		sqlite3_bind_text(s, 3, w->ring, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 4, w->exe, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 5, w->comm, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 6, w->sockets);
		sqlite3_bind_int64(s, 7, w->tcp_listen);
		sqlite3_bind_int64(s, 8, w->tcp);
		sqlite3_bind_int64(s, 9, w->udp);
		sqlite3_bind_int64(s, 10, w->unix_listen);
		sqlite3_bind_text(s, 11, w->examples, -1, SQLITE_STATIC);
		r = sqlite3_step(s);
		sqlite3_reset(s);
	}
	sqlite3_finalize(s);
	return r == SQLITE_DONE ? 0 : -1;
}

uint64_t rc_notes_untraced(const struct rc_ctx *c)
{
	return c->notes ? c->notes->nraw + c->notes->raw_more : 0;
}

static const char *base_of(const char *exe)
{
	const char *b = strrchr(exe, '/');
	return b ? b + 1 : exe;
}

void rc_notes_print_untraced(const struct rc_ctx *c, FILE *f)
{
	const struct rc_notes *nt = c->notes;
	uint8_t done[MAX_RAWIO] = { 0 };

	if (!nt)
		return;
	/* one line per program (executable), with its processes */
	for (uint32_t i = 0; i < nt->nraw; i++) {
		const struct rc_rawio *w = &nt->raw[i];
		char pids[200];
		unsigned n = 0;
		int64_t socks = 0;
		size_t o = 0;

		if (done[i])
			continue;
		for (uint32_t j = i; j < nt->nraw; j++) {
			if (done[j] || strcmp(nt->raw[j].exe, w->exe))
				continue;
			done[j] = 1;
			n++;
			socks += nt->raw[j].sockets;
			if (o < sizeof pids - 16)
				o += (size_t)snprintf(pids + o, sizeof pids - o,
						      "%s%u", n > 1 ? ", " : "",
						      nt->raw[j].pid);
			else if (o < sizeof pids - 4)
				o += (size_t)snprintf(pids + o, sizeof pids - o,
						      ", ...");
		}
		fprintf(f, "bp-reconstruct: %s (%s, %s %s) does its network I/O past libc (raw system calls: Go, io_uring, ...): %" PRId64 " socket%s the tracer never saw, e.g. %s: not traced\n",
			base_of(w->exe), w->exe, n == 1 ? "pid" : "pids", pids,
			socks, socks == 1 ? "" : "s",
			w->examples[0] ? w->examples : "?");
	}
	if (nt->raw_more)
		fprintf(f, "bp-reconstruct: %" PRIu64 " more processes do their network I/O past libc (table untraced_programs)\n",
			nt->raw_more);
}

void rc_notes_free(struct rc_ctx *c)
{
	if (!c->notes)
		return;
	free(c->notes->raw);
	for (uint32_t i = 0; i < c->notes->nkinds; i++) {
		free(c->notes->kinds[i].shape);
		free(c->notes->kinds[i].example);
	}
	free(c->notes);
	c->notes = NULL;
}
