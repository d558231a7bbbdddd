/*
 * mysql.c - the MySQL / MariaDB client/server protocol (protocol 10, 4.1
 * handshake), both ends.
 *
 * Framing: every packet is a 3-byte little-endian payload length, a
 * sequence id and the payload.  A payload of 16 MiB - 1 (0xffffff) or
 * more is split into packets of exactly 0xffffff bytes and a last shorter
 * one (maybe empty); they are joined here into one logical packet (each
 * part's sequence id must follow the previous one).  Only the first
 * MY_HEAD bytes of a logical packet are kept, plus the SQL text of
 * COM_QUERY and COM_STMT_PREPARE up to MY_SQL_KEEP bytes.
 *
 * Phases: the server greets (protocol version 10), the client answers
 * with its handshake response (or a 32-byte SSL request: TLS follows, so
 * after that message every feed() is BT_PP_LOST until libbtrace binds the
 * channel to the TLS session and starts the processor over on the
 * plaintext, docs/libbtrace.md "TLS (OpenSSL)": a fresh state whose first
 * packet is the client's, sequence id 2, with CLIENT_SSL, takes it for
 * the handshake response that follows an SSL request; the server's
 * capabilities, sent in the clear, are not known then: the client's are
 * used), then authentication packets go back and forth
 * (auth switch 0xfe, more data 0x01, the client's auth data) until the
 * server's OK (command phase) or ERR.  The auth data is never kept; the
 * user name and the database of the handshake response are.  A client
 * that negotiates compression (CLIENT_COMPRESS) is not followed past the
 * OK.  Capabilities are the client's and the server's in common; only
 * CLIENT_DEPRECATE_EOF changes the framing of replies here.
 *
 * Messages (what feed() reports):
 *   client   handshake response, auth data, COM_QUIT: CONTROL.  Every
 *            command that has a reply (COM_QUERY, COM_STMT_PREPARE,
 *            COM_STMT_EXECUTE, COM_PING, COM_INIT_DB, ...): a REQUEST.
 *            COM_STMT_CLOSE and COM_STMT_SEND_LONG_DATA (no reply) and
 *            the file a client sends after a LOCAL INFILE request (ended
 *            by its empty packet): ONEWAY.  COM_CHANGE_USER is a REQUEST;
 *            the auth data that follows it is CONTROL.
 *   server   the greeting, each auth request and the final OK/ERR of the
 *            handshake: CONTROL.  Each command's whole answer: a REPLY:
 *            one OK/ERR/EOF packet; or the result sets of a query (column
 *            count, column definitions, EOF unless CLIENT_DEPRECATE_EOF,
 *            rows, then EOF or OK-with-0xfe), as many as
 *            SERVER_MORE_RESULTS_EXISTS chains, an ERR ending it; the
 *            LOCAL INFILE request (0xfb) and the OK/ERR after the file are
 *            one reply; COM_STMT_PREPARE's OK with its parameter and
 *            column definitions.  MariaDB's progress reports (an ERR
 *            packet with code 0xffff, CLIENT_PROGRESS) are part of the
 *            reply they come in.  An ERR while no command is outstanding
 *            (a server closing an idle connection): ONEWAY.
 * Commands may be pipelined (MariaDB Connector/C sends PREPARE and
 * EXECUTE in one write): up to MY_FIFO outstanding, answered in order;
 * more is BT_PP_LOST.  Replication (COM_BINLOG_DUMP, COM_REGISTER_SLAVE)
 * and unknown commands are BT_PP_LOST; so is a datagram transport.
 *
 * Attributes: requests carry a method ("query", "prepare", "execute",
 * "ping", ...) and the SQL text (COM_QUERY; COM_STMT_PREPARE; for
 * COM_STMT_EXECUTE the text of the statement prepared under that id, from
 * a table of the last MY_NSTMT prepared statements, MY_STMT_KEEP bytes
 * each: when a new one does not fit, the least recently used is
 * forgotten; an execute of a forgotten statement carries no SQL, only
 * info="stmt_id=N").  COM_INIT_DB carries the database.  Replies: status
 * = the error code of an ERR packet, error = its SQLSTATE.  The greeting:
 * info = the server version.  SQL literals are redacted (on request) by
 * libbtrace like PostgreSQL's (redact.c), on the copy that goes into the
 * log.
 */
#include "config.h"

#include <string.h>

#include "btrace/proto.h"

#define MY_HEAD         128        /* first bytes of a packet kept */
#define MY_SQL_KEEP     1024
#define MY_STMT_KEEP    320
#define MY_NSTMT        6
#define MY_FIFO         16
#define MY_NAME_KEEP    64
#define MY_INFO_KEEP    64
#define MY_SPLIT        0xffffffu  /* a packet this long continues */

/* capability flags */
#define CAP_CONNECT_WITH_DB   0x00000008u
#define CAP_COMPRESS          0x00000020u
#define CAP_PROTOCOL_41       0x00000200u
#define CAP_SSL               0x00000800u
#define CAP_SECURE_CONN       0x00008000u
#define CAP_PLUGIN_AUTH       0x00080000u
#define CAP_AUTH_LENENC       0x00200000u
#define CAP_DEPRECATE_EOF     0x01000000u
#define CAP_QUERY_ATTRS       0x08000000u

/* server status flags */
#define ST_MORE_RESULTS       0x0008u
#define ST_CURSOR_EXISTS      0x0040u

/* commands */
enum {
	COM_QUIT = 0x01, COM_INIT_DB = 0x02, COM_QUERY = 0x03,
	COM_FIELD_LIST = 0x04, COM_CREATE_DB = 0x05, COM_DROP_DB = 0x06,
	COM_REFRESH = 0x07, COM_SHUTDOWN = 0x08, COM_STATISTICS = 0x09,
	COM_PROCESS_INFO = 0x0a, COM_PROCESS_KILL = 0x0c, COM_DEBUG = 0x0d,
	COM_PING = 0x0e, COM_CHANGE_USER = 0x11, COM_STMT_PREPARE = 0x16,
	COM_STMT_EXECUTE = 0x17, COM_STMT_SEND_LONG_DATA = 0x18,
	COM_STMT_CLOSE = 0x19, COM_STMT_RESET = 0x1a, COM_SET_OPTION = 0x1b,
	COM_STMT_FETCH = 0x1c, COM_RESET_CONNECTION = 0x1f,
	COM_STMT_BULK_EXECUTE = 0xfa,
};

/* what a command's reply looks like */
enum {
	R_NONE = 0,     /* no reply */
	R_ONE,          /* one packet: OK, ERR, EOF or a string */
	R_RESULT,       /* OK, ERR, LOCAL INFILE or result sets */
	R_PREPARE,      /* COM_STMT_PREPARE's OK and definitions */
	R_TERM,         /* packets up to an EOF/OK-0xfe or ERR */
	R_AUTH,         /* COM_CHANGE_USER: an authentication exchange */
};

/* phases */
enum { PH_GREET = 0, PH_AUTH, PH_CMD, PH_DEAD, PH_TUNNEL };

/* statement slot states */
enum { SL_FREE = 0, SL_PENDING, SL_VALID };

struct my_str {
	uint16_t len;
	uint8_t  trunc;
};

struct my_stmt {
	uint32_t id;
	uint32_t age;
	uint8_t  state;             /* SL_* */
	struct my_str s;
	char     text[MY_STMT_KEEP];
};

struct my_dir {
	uint8_t  hdr[4];
	uint8_t  hn;                /* header bytes collected */
	uint8_t  split;             /* this packet is 0xffffff: more follow */
	uint8_t  inpkt;             /* between the parts of a split packet */
	uint8_t  seq;               /* sequence id of the current part */
	uint8_t  seq0;              /* and of the first part */
	uint32_t left;              /* payload bytes of this part to come */
	uint32_t first;             /* payload length of the first part */
	uint32_t pos;               /* logical payload bytes so far (capped) */
	uint16_t hl;                /* bytes in head */
	uint8_t  head[MY_HEAD];
};

struct my_state {
	int8_t   cl_dir;            /* direction of the client, -1 unknown */
	uint8_t  phase;             /* PH_* */
	uint8_t  hs_done;           /* handshake response seen */
	uint8_t  infile;            /* the client is sending a LOCAL INFILE */
	uint8_t  rs;                /* reply state: 0 start, 1 metadata, 2 rows */
	uint8_t  nq;                /* outstanding commands */
	uint8_t  qh;                /* index of the oldest */
	uint8_t  lastprep;          /* slot of the last prepare (+1), 0 none */
	uint32_t remain;            /* R_PREPARE: definition packets to come */
	uint32_t scaps;             /* the server's capabilities */
	uint32_t caps;              /* in common */
	uint32_t age;
	uint8_t  fifo[MY_FIFO];     /* reply kinds, oldest at qh */
	char     meth[20];
	char     info[MY_INFO_KEEP];
	char     errb[5];
	uint8_t  ninfo;
	struct my_str sql, user, db;
	char     sqlb[MY_SQL_KEEP];
	char     userb[MY_NAME_KEEP];
	char     dbb[MY_NAME_KEEP];
	struct my_stmt stmt[MY_NSTMT];
	struct my_dir d[2];
};

static void my_init(void *st, int role, int transport)
{
	struct my_state *s = st;
	s->phase = transport == BT_TR_DGRAM ? PH_TUNNEL : PH_GREET;
	s->cl_dir = role == BT_ROLE_CLIENT ? BT_DIR_OUT :
		    role == BT_ROLE_SERVER ? BT_DIR_IN : -1;
}

static void my_fini(void *st) { (void)st; }

static uint32_t le16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void put(char *buf, size_t cap, struct my_str *s, const uint8_t *p,
		size_t n)
{
	size_t k = cap - s->len < n ? cap - s->len : n;
	memcpy(buf + s->len, p, k);
	s->len = (uint16_t)(s->len + k);
	if (k < n)
		s->trunc = 1;
}

static void attr_str(struct bt_msg *m, uint8_t key, const char *b,
		     const struct my_str *v)
{
	if (!v->len)
		return;
	bt_msg_attr(m, key, b, v->len);
	if (v->trunc)
		m->flags |= BT_MF_TRUNC;
}

/* The method attribute (copied: attributes live in the state). */
static void method(struct my_state *s, struct bt_msg *m, const char *name)
{
	size_t n = strlen(name);
	if (n > sizeof s->meth)
		n = sizeof s->meth;
	memcpy(s->meth, name, n);
	bt_msg_attr(m, BT_AK_METHOD, s->meth, n);
}

/* A length-encoded integer at H[*OFF] (HL bytes kept): its value, *OFF
 * moved past it; -1 if it does not fit in the bytes kept or is invalid. */
static int64_t lenenc(const uint8_t *h, uint32_t hl, uint32_t *off)
{
	uint32_t o = *off, w;
	uint64_t v = 0;
	if (o >= hl)
		return -1;
	if (h[o] < 0xfb) {
		*off = o + 1;
		return h[o];
	}
	w = h[o] == 0xfc ? 2 : h[o] == 0xfd ? 3 : h[o] == 0xfe ? 8 : 0;
	if (!w || o + 1 + w > hl)
		return -1;
	for (uint32_t i = 0; i < w; i++)
		v |= (uint64_t)h[o + 1 + i] << (8 * i);
	*off = o + 1 + w;
	return (int64_t)(v & INT64_MAX);
}

/* ---- the client's SQL text ------------------------------------------- */

/* Payload bytes P[0..N) of a client packet at logical offset d->pos. */
static void client_bytes(struct my_state *s, struct my_dir *d,
			 const uint8_t *p, size_t n)
{
	uint32_t skip = 1;              /* the command byte */
	if (s->phase != PH_CMD || s->infile || d->hl == 0)
		return;
	uint8_t cmd = d->head[0];
	if (cmd == COM_QUERY && (s->caps & CAP_QUERY_ATTRS)) {
		/* query attributes: only "none" (count 0, one set) is
		   followed by the text at once */
		if (d->hl >= 2 && d->head[1] != 0)
			return;
		skip = 3;
	} else if (cmd != COM_QUERY && cmd != COM_STMT_PREPARE)
		return;
	if (d->pos + n <= skip)
		return;
	if (d->pos < skip) {
		p += skip - d->pos;
		n -= skip - d->pos;
	}
	put(s->sqlb, MY_SQL_KEEP, &s->sql, p, n);
}

/* ---- prepared statements --------------------------------------------- */

static struct my_stmt *stmt_by_id(struct my_state *s, uint32_t id)
{
	if (id == 0xffffffffu)          /* MariaDB: the last one prepared */
		return s->lastprep ? &s->stmt[s->lastprep - 1] : NULL;
	for (int i = 0; i < MY_NSTMT; i++)
		if (s->stmt[i].state == SL_VALID && s->stmt[i].id == id)
			return &s->stmt[i];
	return NULL;
}

/* A COM_STMT_PREPARE was sent: keep its text in a slot (a free one, else
 * the least recently used known one, else the oldest pending one). */
static void stmt_prepare(struct my_state *s)
{
	int slot = -1;
	for (int pass = 0; pass < 3 && slot < 0; pass++) {
		for (int i = 0; i < MY_NSTMT; i++) {
			struct my_stmt *t = &s->stmt[i];
			int ok = pass == 0 ? t->state == SL_FREE :
				 pass == 1 ? t->state == SL_VALID :
				 t->state == SL_PENDING;
			if (ok && (slot < 0 || pass == 0 ||
				   t->age < s->stmt[slot].age))
				slot = i;
			if (ok && pass == 0)
				break;
		}
	}
	struct my_stmt *t = &s->stmt[slot];
	t->state = SL_PENDING;
	t->id = 0;
	t->age = ++s->age;
	t->s.len = t->s.trunc = 0;
	put(t->text, MY_STMT_KEEP, &t->s, (const uint8_t *)s->sqlb,
	    s->sql.len);
	t->s.trunc |= s->sql.trunc;
	s->lastprep = (uint8_t)(slot + 1);
}

/* The oldest pending prepare got its answer: ID, or failed (ok 0). */
static void stmt_answer(struct my_state *s, int ok, uint32_t id)
{
	int slot = -1;
	for (int i = 0; i < MY_NSTMT; i++)
		if (s->stmt[i].state == SL_PENDING &&
		    (slot < 0 || s->stmt[i].age < s->stmt[slot].age))
			slot = i;
	if (slot < 0)
		return;                 /* forgotten while pending */
	if (ok) {
		/* a server reuses ids only after a close: drop a stale one */
		struct my_stmt *o = stmt_by_id(s, id);
		if (o && id != 0xffffffffu)
			o->state = SL_FREE;
		s->stmt[slot].state = SL_VALID;
		s->stmt[slot].id = id;
	} else {
		s->stmt[slot].state = SL_FREE;
		if (s->lastprep == slot + 1)
			s->lastprep = 0;
	}
}

static void stmt_forget_all(struct my_state *s)
{
	for (int i = 0; i < MY_NSTMT; i++)
		if (s->stmt[i].state == SL_VALID)
			s->stmt[i].state = SL_FREE;
}

/* ---- the client's packets -------------------------------------------- */

static int push(struct my_state *s, uint8_t kind)
{
	if (s->nq >= MY_FIFO)
		return -1;
	s->fifo[(s->qh + s->nq) % MY_FIFO] = kind;
	s->nq++;
	return 0;
}

static void pop(struct my_state *s)
{
	if (!s->nq)
		return;
	s->qh = (uint8_t)((s->qh + 1) % MY_FIFO);
	s->nq--;
	s->rs = 0;
	s->remain = 0;
}

/* A NUL-terminated string at H[*OFF]: its length, *OFF past the NUL; -1
 * if the NUL is not among the bytes kept. */
static int cstr(const uint8_t *h, uint32_t hl, uint32_t *off)
{
	const uint8_t *z;
	if (*off >= hl)
		return -1;
	z = memchr(h + *off, 0, hl - *off);
	if (!z)
		return -1;
	int n = (int)(z - (h + *off));
	*off += (uint32_t)n + 1;
	return n;
}

/* The handshake response (or SSL request). */
static int handshake_response(struct my_state *s, struct my_dir *d,
			      struct bt_msg *m)
{
	const uint8_t *h = d->head;
	uint32_t off = 32;
	int n;

	if (d->pos < 32)
		return -1;
	uint32_t caps = le32(h);
	if (!(caps & CAP_PROTOCOL_41))
		return -1;
	s->caps = s->scaps ? caps & s->scaps : caps;
	s->hs_done = 1;
	m->kind = BT_MK_CONTROL;
	if (d->pos == 32 && (caps & CAP_SSL)) {
		memcpy(s->info, "ssl", 3);
		bt_msg_attr(m, BT_AK_INFO, s->info, 3);
		s->phase = PH_TUNNEL;   /* TLS follows */
		return 1;
	}
	n = cstr(h, d->hl, &off);
	if (n < 0)
		return 1;               /* a user name beyond the bytes kept */
	s->user.len = s->user.trunc = 0;
	put(s->userb, MY_NAME_KEEP, &s->user, h + 32, (size_t)n);
	attr_str(m, BT_AK_USER, s->userb, &s->user);
	if (!(caps & CAP_CONNECT_WITH_DB))
		return 1;
	/* skip the auth data (never kept) to reach the database */
	int64_t al;
	if (caps & CAP_AUTH_LENENC) {
		al = lenenc(h, d->hl, &off);
	} else if (caps & CAP_SECURE_CONN) {
		al = off < d->hl ? h[off++] : -1;
	} else {
		al = cstr(h, d->hl, &off);
		if (al >= 0)
			al = 0;
	}
	if (al < 0 || (uint64_t)al > d->hl - off)
		return 1;
	off += (uint32_t)al;
	uint32_t dbo = off;
	n = cstr(h, d->hl, &off);
	if (n < 0)
		return 1;
	s->db.len = s->db.trunc = 0;
	put(s->dbb, MY_NAME_KEEP, &s->db, h + dbo, (size_t)n);
	attr_str(m, BT_AK_DATABASE, s->dbb, &s->db);
	return 1;
}

/* A command packet.  1 a message, -1 lost. */
static int command(struct my_state *s, struct my_dir *d, struct bt_msg *m)
{
	const uint8_t *h = d->head;
	uint8_t cmd = h[0], r = R_ONE;
	const char *name;

	switch (cmd) {
	case COM_QUERY:        name = "query"; r = R_RESULT; break;
	case COM_STMT_PREPARE: name = "prepare"; r = R_PREPARE; break;
	case COM_STMT_EXECUTE:
	case COM_STMT_BULK_EXECUTE:
		name = "execute"; r = R_RESULT; break;
	case COM_STMT_CLOSE:   name = "close"; r = R_NONE; break;
	case COM_STMT_SEND_LONG_DATA: name = "long_data"; r = R_NONE; break;
	case COM_STMT_RESET:   name = "reset_stmt"; break;
	case COM_STMT_FETCH:   name = "fetch"; r = R_TERM; break;
	case COM_PING:         name = "ping"; break;
	case COM_QUIT:         name = "quit"; r = R_NONE; break;
	case COM_INIT_DB:      name = "init_db"; break;
	case COM_RESET_CONNECTION: name = "reset_connection"; break;
	case COM_SET_OPTION:   name = "set_option"; break;
	case COM_STATISTICS:   name = "statistics"; break;
	case COM_FIELD_LIST:   name = "field_list"; r = R_TERM; break;
	case COM_PROCESS_INFO: name = "process_info"; r = R_RESULT; break;
	case COM_PROCESS_KILL: name = "kill"; break;
	case COM_REFRESH:      name = "refresh"; break;
	case COM_SHUTDOWN:     name = "shutdown"; break;
	case COM_DEBUG:        name = "debug"; break;
	case COM_CREATE_DB:    name = "create_db"; break;
	case COM_DROP_DB:      name = "drop_db"; break;
	case COM_CHANGE_USER:  name = "change_user"; r = R_AUTH; break;
	default:
		return -1;      /* replication, obsolete or not a command */
	}
	method(s, m, name);
	if (r != R_NONE && push(s, r) < 0)
		return -1;
	m->kind = r != R_NONE ? BT_MK_REQUEST :
		  cmd == COM_QUIT ? BT_MK_CONTROL : BT_MK_ONEWAY;
	switch (cmd) {
	case COM_QUERY:
		attr_str(m, BT_AK_SQL, s->sqlb, &s->sql);
		break;
	case COM_STMT_PREPARE:
		stmt_prepare(s);
		attr_str(m, BT_AK_SQL, s->sqlb, &s->sql);
		break;
	case COM_STMT_EXECUTE:
	case COM_STMT_BULK_EXECUTE:
	case COM_STMT_CLOSE:
	case COM_STMT_RESET:
	case COM_STMT_FETCH:
	case COM_STMT_SEND_LONG_DATA: {
		if (d->pos < 5)
			return -1;
		uint32_t id = le32(h + 1);
		struct my_stmt *t = stmt_by_id(s, id);
		if (cmd == COM_STMT_CLOSE) {
			if (t && t->state == SL_VALID)
				t->state = SL_FREE;
			break;
		}
		if (cmd != COM_STMT_EXECUTE && cmd != COM_STMT_BULK_EXECUTE)
			break;
		if (t) {
			t->age = ++s->age;
			memcpy(s->sqlb, t->text, t->s.len);
			s->sql = t->s;
			attr_str(m, BT_AK_SQL, s->sqlb, &s->sql);
		} else {
			int k = 0;
			char num[10];
			memcpy(s->info, "stmt_id=", 8);
			do num[k++] = (char)('0' + id % 10); while ((id /= 10));
			for (int i = 0; i < k; i++)
				s->info[8 + i] = num[k - 1 - i];
			bt_msg_attr(m, BT_AK_INFO, s->info, (size_t)(8 + k));
		}
		break;
	}
	case COM_INIT_DB:
		s->db.len = s->db.trunc = 0;
		if (d->hl > 1)
			put(s->dbb, MY_NAME_KEEP, &s->db, h + 1, d->hl - 1u);
		if (d->pos > d->hl)
			s->db.trunc = 1;
		attr_str(m, BT_AK_DATABASE, s->dbb, &s->db);
		break;
	case COM_RESET_CONNECTION:
	case COM_CHANGE_USER:
		stmt_forget_all(s);     /* the server drops the statements */
		break;
	}
	return 1;
}

/* Is the packet in D the handshake response that follows an SSL request
 * (sequence id 2, CLIENT_PROTOCOL_41 and CLIENT_SSL, longer than the
 * request)?  The first plaintext packet of a restarted state. */
static int after_ssl_request(const struct my_dir *d)
{
	return d->seq0 == 2 && d->pos > 32 && d->hl >= 32 &&
	       (le32(d->head) & (CAP_PROTOCOL_41 | CAP_SSL)) ==
	       (CAP_PROTOCOL_41 | CAP_SSL);
}

static int client_end(struct my_state *s, struct my_dir *d, struct bt_msg *m)
{
	switch (s->phase) {
	case PH_GREET:
		if (!after_ssl_request(d))
			return -1;
		s->phase = PH_AUTH;     /* on TLS plaintext, no greeting seen */
		return handshake_response(s, d, m);
	case PH_AUTH:
		if (!s->hs_done)
			return handshake_response(s, d, m);
		m->kind = BT_MK_CONTROL;        /* auth data */
		return 1;
	case PH_CMD:
		break;
	default:
		return -1;
	}
	if (s->infile) {
		if (d->pos)
			return 0;
		s->infile = 0;          /* the empty packet ends the file */
		m->kind = BT_MK_ONEWAY;
		return 1;
	}
	if (d->seq0 != 0) {
		/* auth data inside COM_CHANGE_USER */
		if (s->nq && s->fifo[s->qh] == R_AUTH) {
			m->kind = BT_MK_CONTROL;
			return 1;
		}
		return -1;
	}
	if (d->pos == 0)
		return -1;
	return command(s, d, m);
}

/* ---- the server's packets -------------------------------------------- */

/* The status flags of an OK packet (0x00 or 0xfe header); -1 if not kept. */
static int ok_status(const struct my_dir *d)
{
	uint32_t off = 1;
	if (lenenc(d->head, d->hl, &off) < 0 || lenenc(d->head, d->hl, &off) < 0)
		return -1;
	if (off + 2 > d->hl)
		return -1;
	return (int)le16(d->head + off);
}

/* An ERR packet: status and SQLSTATE into M. */
static void err_packet(struct my_state *s, const struct my_dir *d,
		       struct bt_msg *m)
{
	if (d->hl < 3)
		return;
	m->status = le16(d->head + 1);
	if (d->hl >= 9 && d->head[3] == '#') {
		memcpy(s->errb, d->head + 4, 5);
		bt_msg_attr(m, BT_AK_ERROR, s->errb, 5);
	}
}

/* The greeting: protocol 10, version, thread id, scramble, capabilities. */
static int greeting(struct my_state *s, struct my_dir *d, struct bt_msg *m)
{
	const uint8_t *h = d->head;
	uint32_t off = 1;
	int n = cstr(h, d->hl, &off);
	if (n < 0)
		return -1;
	uint32_t vo = 1;
	off += 4 + 8 + 1;               /* thread id, scramble, filler */
	if (off + 2 > d->hl)
		return -1;
	s->scaps = le16(h + off);
	off += 2 + 1 + 2;               /* charset, status */
	if (off + 2 <= d->hl)
		s->scaps |= le16(h + off) << 16;
	s->ninfo = (uint8_t)(n < MY_INFO_KEEP ? n : MY_INFO_KEEP);
	memcpy(s->info, h + vo, s->ninfo);
	m->kind = BT_MK_CONTROL;
	bt_msg_attr(m, BT_AK_INFO, s->info, s->ninfo);
	s->phase = PH_AUTH;
	return 1;
}

/* Is the packet in D an EOF or an OK with the 0xfe header (not a row
 * whose first column is 2^24 bytes or more)? */
static int is_term(const struct my_dir *d)
{
	return d->hl && d->head[0] == 0xfe && d->first < MY_SPLIT;
}

/* R_RESULT: 1 the reply ends here, 0 not yet, -1 lost. */
static int result_packet(struct my_state *s, struct my_dir *d,
			 struct bt_msg *m)
{
	const uint8_t *h = d->head;
	int st;

	if (d->hl && h[0] == 0xff) {
		err_packet(s, d, m);
		return 1;
	}
	switch (s->rs) {
	case 0:
		if (!d->hl)
			return -1;
		if (h[0] == 0x00) {
			st = ok_status(d);
			if (st < 0)
				return -1;
			return (st & ST_MORE_RESULTS) ? 0 : 1;
		}
		if (h[0] == 0xfb) {
			s->infile = 1;  /* the client sends the file now */
			return 0;
		}
		if (h[0] == 0xfe)
			return -1;
		s->rs = 1;              /* column count: a result set */
		return 0;
	case 1:
		if (!is_term(d))
			return 0;
		if (!(s->caps & CAP_DEPRECATE_EOF)) {
			/* the EOF after the column definitions */
			s->rs = 2;
			if (d->hl >= 5 && (le16(h + 3) & ST_CURSOR_EXISTS))
				return 1;       /* rows come by COM_STMT_FETCH */
			return 0;
		}
		break;
	case 2:
		if (!is_term(d))
			return 0;
		break;
	}
	/* the end of a result set */
	if (s->caps & CAP_DEPRECATE_EOF)
		st = ok_status(d);
	else
		st = d->hl >= 5 ? (int)le16(h + 3) : 0;
	if (st < 0)
		return -1;
	s->rs = 0;
	return (st & ST_MORE_RESULTS) ? 0 : 1;
}

/* R_PREPARE: 1 the reply ends here, 0 not yet, -1 lost. */
static int prepare_packet(struct my_state *s, struct my_dir *d,
			  struct bt_msg *m)
{
	const uint8_t *h = d->head;
	if (s->rs == 0) {
		if (d->hl && h[0] == 0xff) {
			err_packet(s, d, m);
			stmt_answer(s, 0, 0);
			return 1;
		}
		if (d->hl < 9 || h[0] != 0x00)
			return -1;
		uint32_t cols = le16(h + 5), params = le16(h + 7);
		int eof = !(s->caps & CAP_DEPRECATE_EOF);
		stmt_answer(s, 1, le32(h + 1));
		s->remain = params + cols + (params && eof) + (cols && eof);
		s->rs = 1;
		return s->remain == 0;
	}
	if (d->hl && h[0] == 0xff)
		return -1;
	return --s->remain == 0;
}

/* R_AUTH (COM_CHANGE_USER): 1 the reply ends, 2 a control message, 0 not
 * yet, -1 lost. */
static int auth_packet(struct my_state *s, struct my_dir *d, struct bt_msg *m)
{
	if (!d->hl)
		return -1;
	if (d->head[0] == 0x00)
		return 1;
	if (d->head[0] == 0xff) {
		err_packet(s, d, m);
		return 1;
	}
	return 2;                       /* auth switch, more data */
}

static int server_end(struct my_state *s, struct my_dir *d, struct bt_msg *m)
{
	const uint8_t *h = d->head;
	int r;

	switch (s->phase) {
	case PH_GREET:
		if (d->seq0 != 0 || !d->hl)
			return -1;
		if (h[0] == 0x0a)
			return greeting(s, d, m);
		if (h[0] == 0xff) {
			err_packet(s, d, m);
			m->kind = BT_MK_CONTROL;
			s->phase = PH_DEAD;
			return 1;
		}
		return -1;
	case PH_AUTH:
		if (!s->hs_done || !d->hl)
			return -1;
		m->kind = BT_MK_CONTROL;
		if (h[0] == 0x00)
			s->phase = (s->caps & CAP_COMPRESS) ? PH_TUNNEL : PH_CMD;
		else if (h[0] == 0xff) {
			err_packet(s, d, m);
			s->phase = PH_DEAD;
		}
		return 1;
	case PH_CMD:
		break;
	default:
		return -1;
	}
	if (!s->nq) {
		/* an ERR while idle: the server is closing the connection */
		if (d->hl && h[0] == 0xff && !s->infile) {
			err_packet(s, d, m);
			m->kind = BT_MK_ONEWAY;
			return 1;
		}
		return -1;
	}
	if (s->infile)
		return -1;              /* the server spoke in the file */
	if (d->hl >= 3 && h[0] == 0xff && le16(h + 1) == 0xffff)
		return 0;               /* MariaDB progress report */
	switch (s->fifo[s->qh]) {
	case R_ONE:
		if (d->hl && h[0] == 0xff)
			err_packet(s, d, m);
		r = 1;
		break;
	case R_RESULT:
		r = result_packet(s, d, m);
		break;
	case R_PREPARE:
		r = prepare_packet(s, d, m);
		break;
	case R_TERM:
		if (d->hl && h[0] == 0xff)
			err_packet(s, d, m);
		r = (d->hl && h[0] == 0xff) || is_term(d);
		break;
	case R_AUTH:
		r = auth_packet(s, d, m);
		if (r == 2) {
			m->kind = BT_MK_CONTROL;
			return 1;
		}
		break;
	default:
		return -1;
	}
	if (r <= 0) {
		m->status = 0;
		m->nattr = 0;
		return r;
	}
	pop(s);
	m->kind = BT_MK_REPLY;
	return 1;
}

/* ---- feed ------------------------------------------------------------- */

/* A logical packet ended in direction DIR.  1 message, 0 none, -1 lost. */
static int packet_end(struct my_state *s, int dir, struct my_dir *d,
		      struct bt_msg *m)
{
	int r;
	if (s->cl_dir < 0) {
		/* no role: only a greeting tells who is who, or on TLS
		 * plaintext the handshake response after an SSL request */
		if (s->phase == PH_GREET && after_ssl_request(d))
			s->cl_dir = (int8_t)dir;
		else if (d->seq0 != 0 || !d->hl || d->head[0] != 0x0a)
			return -1;
		else
			s->cl_dir = (int8_t)!dir;
	}
	if (dir == s->cl_dir)
		r = client_end(s, d, m);
	else
		r = server_end(s, d, m);
	return r;
}

static long my_feed(void *st, int dir, const uint8_t *p, size_t n,
		    struct bt_msg *m)
{
	struct my_state *s = st;
	struct my_dir *d;
	size_t i = 0;
	int r;

	dir &= 1;
	d = &s->d[dir];
	if (s->phase == PH_TUNNEL)
		return BT_PP_LOST;
	while (i < n) {
		if (d->hn < 4) {
			size_t k = (size_t)(4 - d->hn);
			if (k > n - i)
				k = n - i;
			memcpy(d->hdr + d->hn, p + i, k);
			d->hn = (uint8_t)(d->hn + k);
			i += k;
			if (d->hn < 4)
				break;
			uint32_t len = (uint32_t)d->hdr[0] |
				       (uint32_t)d->hdr[1] << 8 |
				       (uint32_t)d->hdr[2] << 16;
			if (d->inpkt) {
				if (d->hdr[3] != (uint8_t)(d->seq + 1))
					return BT_PP_LOST;
			} else {
				d->pos = 0;
				d->hl = 0;
				d->first = len;
				d->seq0 = d->hdr[3];
				if (dir == s->cl_dir)
					s->sql.len = s->sql.trunc = 0;
			}
			d->seq = d->hdr[3];
			d->left = len;
			d->split = len == MY_SPLIT;
		} else {
			size_t k = d->left < n - i ? d->left : n - i;
			if (d->hl < MY_HEAD) {
				size_t room = (size_t)MY_HEAD - d->hl;
				size_t c = room < k ? room : k;
				memcpy(d->head + d->hl, p + i, c);
				d->hl = (uint16_t)(d->hl + c);
			}
			if (dir == s->cl_dir)
				client_bytes(s, d, p + i, k);
			d->pos = d->pos + k > UINT32_MAX ? UINT32_MAX :
				 (uint32_t)(d->pos + k);
			d->left -= (uint32_t)k;
			i += k;
		}
		if (d->left)
			continue;
		d->hn = 0;
		if (d->split) {
			d->inpkt = 1;   /* the logical packet goes on */
			continue;
		}
		d->inpkt = 0;
		r = packet_end(s, dir, d, m);
		if (r < 0)
			return BT_PP_LOST;
		if (r > 0)
			return (long)i;
	}
	return (long)n;
}

/*
 * Sniff: the server's greeting, protocol version 10: a 3-byte length of
 * 30..1023 and sequence id 0, the byte 0x0a, then a printable version
 * string starting with a digit and ending with a NUL within 64 bytes.
 * Nothing else sniffed starts with a length whose third byte is 0 and
 * a zero fourth byte followed by 0x0a and a digit (PostgreSQL's packets
 * have a zero first byte or 'R' and a 32-bit length; FastCGI starts with
 * version 1 and a record type; HTTP is text), so the greeting steals no
 * other channel; registry.c tries it before DNS, which has no magic.
 */
static int my_sniff(int dir, int role, const uint8_t *p, size_t n)
{
	(void)dir; (void)role;
	if (n >= 2 && p[1] > 3)
		return BT_SNIFF_NO;
	if (n >= 3 && p[2] != 0)
		return BT_SNIFF_NO;
	if (n >= 4 && p[3] != 0)
		return BT_SNIFF_NO;
	if (n >= 5 && p[4] != 0x0a)
		return BT_SNIFF_NO;
	if (n >= 2) {
		uint32_t len = (uint32_t)p[0] | (uint32_t)p[1] << 8;
		if (len < 30)
			return BT_SNIFF_NO;
	}
	if (n >= 6 && (p[5] < '0' || p[5] > '9'))
		return BT_SNIFF_NO;
	for (size_t i = 6; i < n && i < 5 + 64; i++) {
		if (p[i] == 0)
			return i - 5 + 4 + 8 <= (size_t)(p[0] | p[1] << 8) ?
			       BT_SNIFF_YES : BT_SNIFF_NO;
		if (p[i] < 0x20 || p[i] > 0x7e)
			return BT_SNIFF_NO;
	}
	return n >= 5 + 64 ? BT_SNIFF_NO : BT_SNIFF_MAYBE;
}

const struct bt_proto_ops bt_proto_mysql = {
	.name = "mysql",
	.id = BT_PROTO_MYSQL,
	.state_size = sizeof(struct my_state),
	.sniff = my_sniff,
	.init = my_init,
	.fini = my_fini,
	.feed = my_feed,
	.eof = NULL,
};
