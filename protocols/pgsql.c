/*
 * pgsql.c - the PostgreSQL frontend/backend protocol 3.0, both ends.
 *
 * Framing: the frontend opens with untyped packets (Int32 length, Int32
 * code: StartupMessage, SSLRequest, GSSENCRequest, CancelRequest); the
 * backend answers SSLRequest/GSSENCRequest with one untyped byte ('N'
 * refused; 'S'/'G': encryption follows, so after that byte every feed()
 * is BT_PP_LOST; when libbtrace reads the TLS plaintext instead, it
 * starts this processor over on it, from the StartupMessage).  Everything else is typed: Byte1 type, Int32 length
 * (counting itself), body.  Lengths are checked (4..PG_MSG_MAX, startup
 * 8..PG_STARTUP_MAX), types must belong to their side, and bodies whose
 * last byte must be a NUL are verified.
 *
 * Messages (what feed() reports, in each direction):
 *   frontend  startup/SSL/GSS/cancel packet, PasswordMessage, Terminate:
 *             CONTROL.  Query 'Q', FunctionCall 'F': a REQUEST each.
 *             Parse/Bind/Describe/Execute/Close/Flush ... Sync: one
 *             REQUEST ending with the Sync.  CopyData ... CopyDone/CopyFail
 *             sent after the request: one ONEWAY message (for a COPY run
 *             by an extended-query request it ends with the Sync that
 *             libpq sends after CopyDone: the backend ignores Syncs in
 *             copy-in mode and answers only that one).
 *   backend   startup phase (until the first ReadyForQuery): CONTROL
 *             messages ending after each authentication request that needs
 *             an answer, after an ErrorResponse, and at ReadyForQuery.
 *             Then each request's answer, up to and including its
 *             ReadyForQuery: a REPLY (every Query, FunctionCall and Sync
 *             gets exactly one).  NoticeResponse, NotificationResponse,
 *             ParameterStatus or ErrorResponse arriving while no request
 *             is outstanding: a ONEWAY message each; inside an answer they
 *             are part of it.  CopyBothResponse (replication) is
 *             BT_PP_LOST.
 * On a datagram transport feed() is BT_PP_LOST at once.
 * Requests are answered in order; the outstanding ones are counted, and
 * the kind (simple or extended) of the first PG_FIFO is remembered.
 *
 * Attributes: requests carry the SQL text (Query; for extended query the
 * statement run by the first Execute, found through its Bind in a table of
 * the unnamed and PG_NSTMT-1 named prepared statements, else the first
 * Parse) and a method ("query", "execute", "prepare", "sync", "call");
 * an extended-query request whose first Bind has parameters carries their
 * hashes (BT_AK_PARAMS, "I:HASH" for each of the first PG_NPARAM that is
 * 3 bytes or longer: bt_value_hash of a text value, or of the decimal
 * text of a binary integer of 2, 4 or 8 bytes; never the values), which
 * bp-reconstruct compares with what requests received (tokens.c);
 * replies the last CommandComplete tag and the SQLSTATE of the first
 * ErrorResponse; the startup packet user and database.
 */
#include "config.h"

#include <string.h>

#include "btrace/proto.h"

#define PG_MSG_MAX      (1u << 30)
#define PG_STARTUP_MAX  10000u
#define PG_SQL_KEEP     1024
#define PG_STMT_KEEP    352
#define PG_NSTMT        5          /* [0] is the unnamed statement */
#define PG_FIFO         64
#define PG_TAG_KEEP     64
#define PG_ERR_KEEP     8
#define PG_NAME_KEEP    64

#define PG_NPARAM       8          /* Bind parameters hashed */
#define PG_PARAM_MIN    3          /* shorter values are not (tokens.c) */

#define CODE_CANCEL     80877102u
#define CODE_SSL        80877103u
#define CODE_GSS        80877104u

#define FNV_BASIS       UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME       UINT64_C(0x100000001b3)

/* batch flags */
#define B_OPEN  0x1u
#define B_PARSE 0x2u
#define B_EXEC  0x4u

struct pg_str {
	uint16_t len;
	uint8_t  trunc;
};

struct pg_stmt {
	uint64_t hash;
	uint32_t age;
	uint8_t  valid;
	struct pg_str s;
	char     text[PG_STMT_KEEP];
};

struct pg_dir {
	uint8_t  hdr[8];
	uint8_t  hn, hwant;         /* header bytes collected / needed */
	uint8_t  type;              /* 0: untyped packet */
	uint8_t  last;              /* last body byte */
	uint8_t  fi;                /* NUL-terminated field of the body */
	uint8_t  ecode;             /* ErrorResponse: this field is 'C' */
	uint8_t  want;              /* startup: 1 user, 2 database */
	uint8_t  msgs;              /* messages since the last boundary */
	uint32_t fl;                /* bytes of field fi so far */
	uint32_t left;              /* body bytes still to come */
	uint32_t code;              /* untyped code; 'R' request code */
	uint64_t hash;              /* FNV-1a of the name in field fi */
	char     key[12];
};

/* Reading a Bind past its two names (frontend only): the stages */
enum { BD_NFMT, BD_FMT, BD_NPAR, BD_PLEN, BD_PVAL, BD_DONE };

struct pg_bind {
	uint8_t  st;                /* BD_* */
	uint8_t  nb;                /* bytes of the integer being read */
	uint8_t  allbin;            /* one format code, binary, for all */
	uint8_t  taken;             /* the batch's first Bind was read */
	uint8_t  n;                 /* values kept */
	uint16_t nfmt, npar, i;     /* format codes, parameters, current */
	uint32_t acc;               /* the integer being read */
	uint32_t bin;               /* bit i: parameter i (< 32) binary */
	uint32_t len, left;         /* the current value: length, to come */
	uint64_t h;                 /* its hash so far */
	uint8_t  head[8];           /* its first bytes */
	uint8_t  idx[PG_NPARAM];
	uint64_t vh[PG_NPARAM];
	char     attr[PG_NPARAM * 20];
};

struct pg_state {
	int8_t   fe_dir;            /* direction of the frontend, -1 unknown */
	uint8_t  fe_typed;          /* startup packet done */
	uint8_t  startup;           /* backend still in its startup phase */
	uint8_t  ssl;               /* SSL/GSS answer byte expected */
	uint8_t  tunnel;            /* encrypted, replication or datagrams */
	uint8_t  batch;             /* B_* */
	uint8_t  sqlst;             /* SQL from 0 none 1 Parse 2 Bind 3 Exec */
	uint8_t  copy;              /* 1 copy data, 2 waiting for the Sync */
	uint8_t  pslot;             /* statement a Parse is filling */
	uint32_t pending;           /* requests without ReadyForQuery */
	uint64_t types;             /* bit i: i-th pending one is extended */
	uint32_t age;
	char     info[2];
	char     meth[8];               /* method attribute */
	struct pg_str sql, tag, err, user, db;
	char     sqlb[PG_SQL_KEEP];
	char     tagb[PG_TAG_KEEP];
	char     errb[PG_ERR_KEEP];
	char     userb[PG_NAME_KEEP];
	char     dbb[PG_NAME_KEEP];
	struct pg_stmt stmt[PG_NSTMT];
	struct pg_dir d[2];
	struct pg_bind bind;
};

static void pg_init(void *st, int role, int transport)
{
	struct pg_state *s = st;
	s->tunnel = transport == BT_TR_DGRAM;   /* streams only */
	s->fe_dir = role == BT_ROLE_CLIENT ? BT_DIR_OUT :
		    role == BT_ROLE_SERVER ? BT_DIR_IN : -1;
}

static void pg_fini(void *st) { (void)st; }

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void put(char *buf, size_t cap, struct pg_str *s, const uint8_t *p,
		size_t n)
{
	size_t k = cap - s->len < n ? cap - s->len : n;
	memcpy(buf + s->len, p, k);
	s->len = (uint16_t)(s->len + k);
	if (k < n)
		s->trunc = 1;
}

static void push(struct pg_state *s, int ext)
{
	if (s->pending < PG_FIFO)
		s->types |= (uint64_t)ext << s->pending;
	if (s->pending < UINT32_MAX)
		s->pending++;
}

static void pop(struct pg_state *s)
{
	if (!s->pending)
		return;
	s->pending--;
	s->types >>= 1;
	if (s->pending >= PG_FIFO)
		s->types |= UINT64_C(1) << 63;   /* unknown: assume extended */
}

static void set_sql(struct pg_state *s, const struct pg_stmt *t)
{
	memcpy(s->sqlb, t->text, t->s.len);
	s->sql = t->s;
}

static struct pg_stmt *stmt_find(struct pg_state *s, uint64_t h, int named)
{
	if (!named)
		return s->stmt[0].valid ? &s->stmt[0] : NULL;
	for (int i = 1; i < PG_NSTMT; i++)
		if (s->stmt[i].valid && s->stmt[i].hash == h)
			return &s->stmt[i];
	return NULL;
}

/* ---- Bind parameters --------------------------------------------------- */

/* The decimal text of a big-endian signed integer of N bytes at P. */
static size_t be_decimal(const uint8_t *p, unsigned n, char *out)
{
	uint64_t u = 0;
	char tmp[24];
	size_t k = 0, j = 0;

	for (unsigned i = 0; i < n; i++)
		u = u << 8 | p[i];
	if (n < 8 && (p[0] & 0x80))
		u |= ~UINT64_C(0) << (8 * n);   /* sign-extend */
	int neg = (int64_t)u < 0;
	if (neg)
		u = ~u + 1;
	do {
		tmp[k++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (neg)
		out[j++] = '-';
	while (k)
		out[j++] = tmp[--k];
	return j;
}

/* Parameter b->i's value is complete: keep its hash (the first Bind of
 * the batch only). */
static void bind_value_end(struct pg_bind *b)
{
	int bin = b->allbin || (b->i < 32 && (b->bin >> b->i & 1));

	if (b->taken || b->i >= PG_NPARAM || b->n >= PG_NPARAM)
		return;
	if (bin && (b->len == 2 || b->len == 4 || b->len == 8)) {
		char dec[24];
		size_t k = be_decimal(b->head, b->len, dec);
		if (k < PG_PARAM_MIN)
			return;
		b->h = bt_value_hash(dec, k);
	} else if (b->len < PG_PARAM_MIN) {
		return;
	}
	b->idx[b->n] = (uint8_t)b->i;
	b->vh[b->n] = b->h;
	b->n++;
}

/* The next parameter, or the end of the parameters. */
static void bind_next(struct pg_bind *b)
{
	b->i++;
	b->st = b->i < b->npar ? BD_PLEN : BD_DONE;
}

/* An Int16 or Int32 of a Bind is read. */
static void bind_int(struct pg_bind *b)
{
	uint32_t v = b->acc;

	b->nb = 0;
	b->acc = 0;
	switch (b->st) {
	case BD_NFMT:
		b->nfmt = (uint16_t)v;
		b->i = 0;
		b->st = v ? BD_FMT : BD_NPAR;
		break;
	case BD_FMT:
		if (v == 1 && b->nfmt == 1)
			b->allbin = 1;
		else if (v == 1 && b->i < 32)
			b->bin |= UINT32_C(1) << b->i;
		if (++b->i >= b->nfmt)
			b->st = BD_NPAR;
		break;
	case BD_NPAR:
		b->npar = (uint16_t)v;
		b->i = 0;
		b->st = v ? BD_PLEN : BD_DONE;
		break;
	case BD_PLEN:
		if (v == UINT32_MAX) {          /* NULL */
			bind_next(b);
			break;
		}
		b->len = b->left = v;
		b->h = BT_VALUE_HASH_BASIS;
		b->st = BD_PVAL;
		if (!v) {
			bind_value_end(b);
			bind_next(b);
		}
		break;
	}
}

/*
 * Bytes P[0..N) of a Bind after its portal and statement names: format
 * codes, parameter count, then each parameter's Int32 length and value
 * (hashed); the result format codes after them are not looked at.  A
 * Bind whose lengths overrun its body only hashes what it has (the
 * message's own length ends it).
 */
static void bind_bytes(struct pg_bind *b, const uint8_t *p, size_t n)
{
	while (n && b->st != BD_DONE) {
		if (b->st == BD_PVAL) {
			size_t k = b->left < n ? b->left : n;
			uint32_t at = b->len - b->left;
			for (size_t j = 0; j < k && at + j < 8; j++)
				b->head[at + j] = p[j];
			if (at < BT_VALUE_HASH_MAX)
				b->h = bt_value_hash_more(b->h, p,
					k < BT_VALUE_HASH_MAX - at ? k :
					BT_VALUE_HASH_MAX - at);
			b->left -= (uint32_t)k;
			p += k;
			n -= k;
			if (!b->left) {
				bind_value_end(b);
				bind_next(b);
			}
			continue;
		}
		b->acc = b->acc << 8 | *p++;
		n--;
		if (++b->nb == (b->st == BD_PLEN ? 4 : 2))
			bind_int(b);
	}
}

/* The batch's parameter hashes as an attribute (then forgotten). */
static void bind_attr(struct pg_bind *b, struct bt_msg *m)
{
	static const char hex[] = "0123456789abcdef";
	size_t k = 0;

	for (unsigned j = 0; j < b->n; j++) {
		if (j)
			b->attr[k++] = ' ';
		b->attr[k++] = (char)('0' + b->idx[j]);
		b->attr[k++] = ':';
		for (int sh = 60; sh >= 0; sh -= 4)
			b->attr[k++] = hex[b->vh[j] >> sh & 15];
	}
	if (k)
		bt_msg_attr(m, BT_AK_PARAMS, b->attr, k);
	b->n = 0;
	b->taken = 0;
}

/* Bytes P[0..N) of field d->fi (no NUL among them). */
static void field_data(struct pg_state *s, int fe, struct pg_dir *d,
		       const uint8_t *p, size_t n)
{
	int hashing = 0;
	if (fe) {
		switch (d->type) {
		case 0:
			if (!(d->fi & 1)) {
				for (size_t i = 0; i < n; i++)
					if (d->fl + i < sizeof d->key)
						d->key[d->fl + i] = (char)p[i];
			} else if (d->want == 1) {
				put(s->userb, PG_NAME_KEEP, &s->user, p, n);
			} else if (d->want == 2) {
				put(s->dbb, PG_NAME_KEEP, &s->db, p, n);
			}
			break;
		case 'Q':
			put(s->sqlb, PG_SQL_KEEP, &s->sql, p, n);
			break;
		case 'P':
			if (d->fi == 1) {
				struct pg_stmt *t = &s->stmt[s->pslot];
				put(t->text, PG_STMT_KEEP, &t->s, p, n);
			}
			hashing = d->fi == 0;
			break;
		case 'B':
			hashing = d->fi == 1;
			break;
		}
	} else if (d->type == 'C') {
		put(s->tagb, PG_TAG_KEEP, &s->tag, p, n);
	} else if (d->type == 'E') {
		if (d->fl == 0) {
			d->ecode = p[0] == 'C' && !s->err.len;
			p++;
			n--;
		}
		if (d->ecode)
			put(s->errb, PG_ERR_KEEP, &s->err, p, n);
	}
	for (size_t i = 0; hashing && i < n; i++)
		d->hash = (d->hash ^ p[i]) * FNV_PRIME;
}

/* Field d->fi ended with its NUL. */
static void field_end(struct pg_state *s, int fe, struct pg_dir *d)
{
	if (!fe) {
		d->ecode = 0;
		return;
	}
	if (d->type == 0 && !(d->fi & 1)) {
		d->want = d->fl == 4 && memcmp(d->key, "user", 4) == 0 ? 1 :
			  d->fl == 8 && memcmp(d->key, "database", 8) == 0 ? 2 :
			  0;
		if (d->want == 1)
			s->user.len = 0;
		else if (d->want == 2)
			s->db.len = 0;
	} else if (d->type == 'P' && d->fi == 0) {
		int slot = 0;
		if (d->fl) {
			struct pg_stmt *t = stmt_find(s, d->hash, 1);
			if (t) {
				slot = (int)(t - s->stmt);
			} else {
				slot = 1;
				for (int i = 2; i < PG_NSTMT; i++)
					if (s->stmt[i].age < s->stmt[slot].age)
						slot = i;
			}
		}
		struct pg_stmt *t = &s->stmt[slot];
		t->hash = d->hash;
		t->age = ++s->age;
		t->valid = 1;
		t->s.len = 0;
		t->s.trunc = 0;
		s->pslot = (uint8_t)slot;
	} else if (d->type == 'P' && d->fi == 1) {
		if (s->sqlst == 0) {
			set_sql(s, &s->stmt[s->pslot]);
			s->sqlst = 1;
		}
	} else if (d->type == 'B' && d->fi == 1) {
		struct pg_stmt *t = stmt_find(s, d->hash, d->fl != 0);
		if (t && s->sqlst < 3) {
			set_sql(s, t);
			s->sqlst = 2;
		}
	}
	d->hash = FNV_BASIS;
}

/* Body bytes P[0..N) of an interesting message. */
static void body(struct pg_state *s, int fe, struct pg_dir *d,
		 const uint8_t *p, size_t n)
{
	if (!fe && d->type == 'R') {
		for (size_t i = 0; i < n && d->fl < 4; i++, d->fl++)
			d->code = d->code << 8 | p[i];
		return;
	}
	/* Parse and Bind: only the first two fields are strings */
	while (n && !((d->type == 'P' || d->type == 'B') && fe && d->fi > 1)) {
		const uint8_t *z = memchr(p, 0, n);
		size_t k = z ? (size_t)(z - p) : n;
		if (k)
			field_data(s, fe, d, p, k);
		d->fl += (uint32_t)k;
		if (!z)
			return;
		field_end(s, fe, d);
		if (d->fi < 255)
			d->fi++;
		d->fl = 0;
		p += k + 1;
		n -= k + 1;
	}
	if (n && fe && d->type == 'B')
		bind_bytes(&s->bind, p, n);
}

static int interesting(int fe, unsigned type)
{
	return fe ? type == 0 || type == 'Q' || type == 'P' || type == 'B' :
		    type == 'C' || type == 'E' || type == 'R';
}

/* Which end sends a message starting with byte B?  -1 if unclear. */
static int guess_fe(unsigned b)
{
	if (b == 0 || (b && strchr("QPBXpFf", (int)b)))
		return 1;
	if (b && strchr("RKZT123nstGAVvWIN", (int)b))
		return 0;
	return -1;
}

/* The message types of each side: bit 0 the frontend's
 * (QPBEDCHSFdcfXp), bit 1 the backend's (RKSZTDCIEN123nstGHdcAVv); 0,
 * and every other byte, starts no message. */
static const uint8_t msg_types[256] = {
	['1'] = 2, ['2'] = 2, ['3'] = 2, ['A'] = 2, ['B'] = 1, ['C'] = 3,
	['D'] = 3, ['E'] = 3, ['F'] = 1, ['G'] = 2, ['H'] = 3, ['I'] = 2,
	['K'] = 2, ['N'] = 2, ['P'] = 1, ['Q'] = 1, ['R'] = 2, ['S'] = 3,
	['T'] = 2, ['V'] = 2, ['X'] = 1, ['Z'] = 2, ['c'] = 3, ['d'] = 3,
	['f'] = 1, ['n'] = 2, ['p'] = 1, ['s'] = 2, ['t'] = 2, ['v'] = 2
};

/* A header is complete.  0 ok, -1 lost. */
static int header(struct pg_state *s, int fe, struct pg_dir *d)
{
	uint32_t len;
	d->fi = 0;
	d->fl = 0;
	d->last = 1;                    /* an empty body has no final NUL */
	d->code = 0;
	d->want = 0;
	d->hash = FNV_BASIS;
	if (d->hwant == 8) {
		len = be32(d->hdr);
		d->code = be32(d->hdr + 4);
		d->type = 0;
		if (len < 8 || len > PG_STARTUP_MAX)
			return -1;
		if ((d->code == CODE_SSL || d->code == CODE_GSS) ? len != 8 :
		    d->code == CODE_CANCEL ? len != 16 :
		    (d->code >> 16) != 3 || len < 9)
			return -1;
		d->left = len - 8;
		return 0;
	}
	d->type = d->hdr[0];
	len = be32(d->hdr + 1);
	if (len < 4 || len > PG_MSG_MAX)
		return -1;
	d->left = len - 4;
	if (!(msg_types[d->type] & (fe ? 1 : 2)))
		return -1;
	if (!fe) {
		if (d->type == 'C')
			s->tag.len = s->tag.trunc = 0;
		return 0;
	}
	s->fe_typed = 1;
	if (d->type == 'Q')
		s->sql.len = s->sql.trunc = 0;
	if (d->type == 'B') {
		struct pg_bind *b = &s->bind;
		b->st = BD_NFMT;
		b->nb = 0;
		b->acc = 0;
		b->allbin = 0;
		b->bin = 0;
		b->i = 0;
	}
	if (s->copy == 1 && !strchr("dcfHS", d->type))
		return -1;
	if (s->copy == 2 && !strchr("HS", d->type))
		s->copy = 0;                /* no Sync came: give up the wait */
	return 0;
}

static void attr_str(struct bt_msg *m, uint8_t key, const char *b,
		     const struct pg_str *v)
{
	if (!v->len)
		return;
	bt_msg_attr(m, key, b, v->len);
	if (v->trunc)
		m->flags |= BT_MF_TRUNC;
}

/* The method attribute (copied: attributes live in the state). */
static void method(struct pg_state *s, struct bt_msg *m, const char *name)
{
	size_t n = strlen(name);
	memcpy(s->meth, name, n);
	bt_msg_attr(m, BT_AK_METHOD, s->meth, n);
}

static int frontend_end(struct pg_state *s, struct pg_dir *d, struct bt_msg *m)
{
	int head_ext = s->pending && (s->types & 1);
	switch (d->type) {
	case 0:
		m->kind = BT_MK_CONTROL;
		if (d->code == CODE_SSL || d->code == CODE_GSS) {
			s->ssl = 1;
			return 1;
		}
		if (d->code == CODE_CANCEL)
			return 1;
		if (d->last != 0)
			return -1;
		s->fe_typed = 1;
		s->startup = 1;
		attr_str(m, BT_AK_USER, s->userb, &s->user);
		attr_str(m, BT_AK_DATABASE, s->dbb, &s->db);
		return 1;
	case 'Q':
	case 'F':
		if (d->type == 'Q' && (d->last != 0 || d->fi == 0))
			return -1;
		push(s, 0);
		m->kind = BT_MK_REQUEST;
		if (d->type == 'F') {
			method(s, m, "call");
			return 1;
		}
		s->stmt[0].valid = 0;       /* a Query drops the unnamed one */
		method(s, m, "query");
		attr_str(m, BT_AK_SQL, s->sqlb, &s->sql);
		return 1;
	case 'S':
		if (s->copy == 1)
			return 0;           /* ignored in copy-in mode */
		if (s->copy == 2) {
			s->copy = 0;
			m->kind = BT_MK_ONEWAY;
			return 1;
		}
		push(s, 1);
		m->kind = BT_MK_REQUEST;
		method(s, m, s->batch & B_EXEC ? "execute" :
			  s->batch & B_PARSE ? "prepare" : "sync");
		if (s->sqlst)
			attr_str(m, BT_AK_SQL, s->sqlb, &s->sql);
		bind_attr(&s->bind, m);
		s->batch = 0;
		s->sqlst = 0;
		return 1;
	case 'd':
		if (!s->copy && !(s->batch & B_OPEN))
			s->copy = 1;
		return 0;
	case 'c':
	case 'f':
		if (s->batch & B_OPEN)
			return 0;           /* COPY inside an unsynced batch */
		if (s->copy == 2)
			return 0;
		if (head_ext) {
			s->copy = 2;
			return 0;
		}
		s->copy = 0;
		m->kind = BT_MK_ONEWAY;
		return 1;
	case 'X':
	case 'p':
		m->kind = BT_MK_CONTROL;
		return 1;
	case 'H':
		if (s->copy)
			return 0;
		/* fall through */
	default:                            /* P B D E C: part of a batch */
		s->batch |= B_OPEN;
		if (d->type == 'P')
			s->batch |= B_PARSE;
		if (d->type == 'B')
			s->bind.taken = 1;  /* later Binds add nothing */
		if (d->type == 'E') {
			s->batch |= B_EXEC;
			if (s->sqlst == 2)
				s->sqlst = 3;
		}
		return 0;
	}
}

static int backend_end(struct pg_state *s, struct pg_dir *d, struct bt_msg *m)
{
	int idle = !s->startup && !s->pending && !(s->batch & B_OPEN) &&
		   !d->msgs;
	switch (d->type) {
	case 'Z':
		if (s->startup) {
			s->startup = 0;
			m->kind = BT_MK_CONTROL;
		} else {
			pop(s);
			m->kind = BT_MK_REPLY;
		}
		break;
	case 'R':
		if (!s->startup || d->code == 0 || d->code == 12)
			return 0;           /* AuthenticationOk, SASLFinal */
		m->kind = BT_MK_CONTROL;
		break;
	case 'C':
		if (d->last != 0)
			return -1;
		return 0;
	case 'E':
		if (d->last != 0)
			return -1;
		if (!s->startup && !idle)
			return 0;
		m->kind = s->startup ? BT_MK_CONTROL : BT_MK_ONEWAY;
		break;
	case 'N':
	case 'A':
	case 'S':
		if (!idle)
			return 0;
		m->kind = BT_MK_ONEWAY;
		break;
	default:
		return 0;
	}
	attr_str(m, BT_AK_TAG, s->tagb, &s->tag);
	attr_str(m, BT_AK_ERROR, s->errb, &s->err);
	s->tag.len = s->tag.trunc = 0;
	s->err.len = s->err.trunc = 0;
	return 1;
}

/* The one-byte answer to SSLRequest/GSSENCRequest.  1 done, 0 not one. */
static int ssl_answer(struct pg_state *s, uint8_t b, struct bt_msg *m)
{
	if (b == 'E') {
		s->ssl = 0;                 /* an old server's ErrorResponse */
		return 0;
	}
	if (b != 'N' && b != 'S' && b != 'G')
		return -1;
	s->ssl = 0;
	s->tunnel = b != 'N';
	s->info[0] = (char)b;
	m->kind = BT_MK_CONTROL;
	bt_msg_attr(m, BT_AK_INFO, s->info, 1);
	return 1;
}

static long pg_feed(void *st, int dir, const uint8_t *p, size_t n,
		    struct bt_msg *m)
{
	struct pg_state *s = st;
	struct pg_dir *d = &s->d[dir & 1];
	size_t i = 0;
	int fe, r;

	dir &= 1;
	if (s->tunnel)
		return BT_PP_LOST;
	while (i < n) {
		if (d->hn == 0) {           /* a message starts */
			if (s->fe_dir < 0) {
				int g = guess_fe(p[i]);
				if (g < 0)
					return BT_PP_LOST;
				s->fe_dir = (int8_t)(g ? dir : !dir);
			}
			fe = dir == s->fe_dir;
			if (!fe && s->ssl) {
				r = ssl_answer(s, p[i], m);
				if (r < 0)
					return BT_PP_LOST;
				if (r > 0) {
					d->msgs = 0;
					return (long)i + 1;
				}
			}
			d->hwant = fe && !s->fe_typed && p[i] == 0 ? 8 : 5;
		}
		fe = dir == s->fe_dir;
		if (d->hn < d->hwant) {
			size_t k = (size_t)(d->hwant - d->hn);
			if (k > n - i)
				k = n - i;
			if (k == 5)             /* the common case, inline */
				memcpy(d->hdr + d->hn, p + i, 5);
			else
				memcpy(d->hdr + d->hn, p + i, k);
			d->hn = (uint8_t)(d->hn + k);
			i += k;
			if (d->hn < d->hwant)
				break;
			if (header(s, fe, d) < 0)
				return BT_PP_LOST;
		} else {
			size_t k = d->left < n - i ? d->left : n - i;
			if (interesting(fe, d->type))
				body(s, fe, d, p + i, k);
			d->last = p[i + k - 1];
			d->left -= (uint32_t)k;
			i += k;
		}
		if (d->left)
			continue;
		r = fe ? frontend_end(s, d, m) : backend_end(s, d, m);
		d->hn = 0;
		if (r < 0)
			return BT_PP_LOST;
		if (r > 0) {
			d->msgs = 0;
			return (long)i;
		}
		if (d->msgs < 255)
			d->msgs++;
	}
	return (long)n;
}

/*
 * Sniff: a frontend's StartupMessage, SSLRequest, GSSENCRequest or
 * CancelRequest, or a backend's authentication request.
 */
static int pg_sniff(int dir, int role, const uint8_t *p, size_t n)
{
	(void)dir; (void)role;
	if (p[0] == 'R') {
		if (n < 5)
			return BT_SNIFF_MAYBE;
		uint32_t len = be32(p + 1);
		if (len < 8 || len > 1024)
			return BT_SNIFF_NO;
		if (n < 9)
			return BT_SNIFF_MAYBE;
		uint32_t code = be32(p + 5);
		return code <= 12 && code != 1 && code != 4 && code != 6 ?
		       BT_SNIFF_YES : BT_SNIFF_NO;
	}
	if (p[0] != 0)
		return BT_SNIFF_NO;
	if (n < 8)
		return BT_SNIFF_MAYBE;
	uint32_t len = be32(p), code = be32(p + 4);
	if (code == CODE_SSL || code == CODE_GSS)
		return len == 8 ? BT_SNIFF_YES : BT_SNIFF_NO;
	if (code == CODE_CANCEL)
		return len == 16 ? BT_SNIFF_YES : BT_SNIFF_NO;
	return code == 0x30000 && len > 8 && len <= PG_STARTUP_MAX ?
	       BT_SNIFF_YES : BT_SNIFF_NO;
}

const struct bt_proto_ops bt_proto_pgsql = {
	.name = "postgresql",
	.id = BT_PROTO_PGSQL,
	.state_size = sizeof(struct pg_state),
	.sniff = pg_sniff,
	.init = pg_init,
	.fini = pg_fini,
	.feed = pg_feed,
	.eof = NULL,
};
