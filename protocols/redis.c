/*
 * redis.c - the Redis serialization protocol (RESP2 and RESP3), both ends.
 *
 * Framing: every top-level RESP value is one message.  The client sends
 * arrays of bulk strings ("*N\r\n$L\r\n...") or inline commands (a text
 * line, words separated by blanks, ended by "\n"); the server answers with
 * any RESP2 or RESP3 value: simple string "+", error "-", integer ":",
 * bulk string "$" (null "$-1"), array "*" (null "*-1"), and after HELLO 3
 * null "_", double ",", boolean "#", big number "(", blob error "!",
 * verbatim string "=", map "%", set "~", push ">", attribute "|" (it
 * annotates the value that follows and is part of that value's message),
 * streamed strings ("$?" then ";L" chunks up to ";0") and streamed
 * aggregates ("*?", "%?", "~?" up to ".").  Nesting is followed up to
 * RD_DEPTH levels.  A blank inline line and "*0"/"*-1" from a client are
 * no command (the server ignores them): their bytes open the next message.
 *
 * Messages:
 *   client   each command: a REQUEST.  N commands in one write (a
 *            pipeline, MULTI ... EXEC) are N requests.
 *   server   each value answering a command: a REPLY, paired in order
 *            with the oldest command without one (the commands of a
 *            MULTI get "+QUEUED", EXEC the array of their results; a
 *            blocking command such as BLPOP gets its reply whenever it
 *            comes, the order is the same).  Values no command asked for
 *            are ONEWAY: RESP3 pushes (">": published messages, client
 *            tracking invalidations), in RESP2 the "message", "pmessage"
 *            and "smessage" arrays of a subscribed connection, the lines
 *            a MONITOR connection receives after its "+OK".  A
 *            (P|S)(UN)SUBSCRIBE command is answered by its first
 *            confirmation (RESP2 array or RESP3 push "subscribe",
 *            "unsubscribe", ...); the confirmations of its other channels
 *            are ONEWAY.  RESP3 is known from the first RESP3-only value
 *            and ends with a HELLO 2 answered by an array.
 * The pending commands are counted; the special ones (subscribe family,
 * MONITOR, HELLO, RESET) among the first RD_FIFO are remembered.
 * "CLIENT REPLY OFF|SKIP" makes the server skip replies, so pairing
 * cannot be followed: the feed() after that request is BT_PP_LOST.  A
 * replication stream (SYNC, PSYNC) is not followed either: its RDB
 * payload has no CRLF after it, or an "$EOF:" mark, both BT_PP_LOST.
 *
 * Attributes: a request carries the command name (method, upper case)
 * and a target: the command and its first argument ("GET user:42"); for
 * commands with subcommands (CLIENT, CONFIG, ACL, ...) the subcommand
 * instead ("CONFIG SET"); for AUTH, ECHO, PING, EVAL, EVAL_RO and HELLO
 * the command alone (HELLO with its protocol version, "HELLO 3").  No
 * other argument is ever kept, so values and passwords (AUTH, HELLO ...
 * AUTH, CONFIG SET requirepass, ACL SETUSER) never reach an attribute.
 * A reply that is an error ("-ERR ...", blob error "!") has status 1 and
 * an error attribute: the error's first word ("ERR", "WRONGTYPE",
 * "NOAUTH", "MOVED", "EXECABORT", ...).  Errors inside an array (EXEC)
 * are part of the value and give no status.
 *
 * Garbage is BT_PP_LOST: a type byte RESP does not have, a length or
 * count that is not a number or beyond the limits, CR not followed by LF,
 * a client value other than an array of bulk strings, a control byte in
 * an inline command, an inline command over 64 KiB (the server's own
 * limit), nesting beyond RD_DEPTH.  On a datagram transport feed() is
 * BT_PP_LOST at once.
 */
#include "config.h"

#include <string.h>

#include "btrace/proto.h"

#define RD_DEPTH        40
#define RD_FIFO         256
#define RD_BULK_MAX     (UINT64_C(1) << 40)
#define RD_AGG_MAX      (UINT64_C(1) << 32)
#define RD_INLINE_MAX   (64u * 1024)
#define RD_LINE_MAX     (UINT64_C(1) << 32)
#define RD_BIGNUM_MAX   4096u
#define RD_NUM_KEEP     24
#define RD_CMD_KEEP     32
#define RD_KEY_KEEP     128
#define RD_ARG_KEEP     16
#define RD_HEAD_KEEP    16
#define RD_ERR_KEEP     32
#define RD_TGT_KEEP     (RD_CMD_KEEP + 1 + RD_KEY_KEEP)
#define RD_STREAMED     UINT64_MAX

/* parser states (rd_dir.st) */
enum { S_TYPE, S_LINE, S_LF, S_BULK, S_BULK_CR, S_BULK_LF, S_INLINE };

/* what the pending commands are (fifo) */
enum { C_NORMAL, C_MONITOR, C_HELLO, C_RESET,
       C_SUB };                /* + 0..5: SUBSCRIBE, PSUBSCRIBE,
				  SSUBSCRIBE, UNSUBSCRIBE, PUNSUBSCRIBE,
				  SUNSUBSCRIBE */

/* captured strings (rd_dir.cap) */
enum { K_NONE, K_CMD, K_KEY, K_ARG, K_HEAD, K_ERR };

struct rd_lvl {
	uint64_t left;           /* values still to come, RD_STREAMED */
	uint8_t  attr;           /* an attribute: annotates what follows */
};

struct rd_dir {
	uint8_t  st;
	uint8_t  type;           /* type byte of the current line or bulk */
	uint8_t  depth;
	uint8_t  top;            /* type of the message's (non-attribute)
				    top-level value, 0 before it starts */
	uint8_t  chunked;        /* inside a streamed string: ';' next */
	uint8_t  bulk_chunk;     /* the bulk being read is a ';' chunk */
	uint8_t  cap;            /* K_*: where the current string goes */
	uint8_t  nl;             /* bytes in num[] */
	uint8_t  tok, intok;     /* inline: word index, inside a word */
	uint8_t  trunc;          /* a kept string was cut */
	uint8_t  cmdn, keyn, argn, headn, errn;
	uint32_t idx;            /* direct children of the top value done */
	uint64_t argc;           /* client: elements of the command */
	int64_t  cnt;            /* server: third element, an integer */
	uint64_t line;           /* bytes of the current line */
	uint64_t left;           /* bulk bytes still to come */
	char     num[RD_NUM_KEEP];
	char     cmd[RD_CMD_KEEP];
	char     key[RD_KEY_KEEP];
	char     arg[RD_ARG_KEEP];
	char     head[RD_HEAD_KEEP];
	char     err[RD_ERR_KEEP];
	struct rd_lvl lv[RD_DEPTH];
};

struct rd_state {
	int8_t   cl_dir;         /* direction of the client, -1 unknown */
	uint8_t  lost;           /* give up at the next feed() */
	uint8_t  resp3;          /* the server speaks RESP3 */
	uint8_t  subscribed;     /* RESP2 subscribed mode */
	uint8_t  monitor;        /* a MONITOR connection */
	uint16_t fh;             /* fifo head */
	uint32_t pending;        /* commands without their reply */
	uint8_t  fifo[RD_FIFO];  /* C_* of the first RD_FIFO pending */
	char     meth[RD_CMD_KEEP];
	char     tgt[RD_TGT_KEEP];
	char     errb[RD_ERR_KEEP];
	struct rd_dir d[2];
};

static void rd_init(void *st, int role, int transport)
{
	struct rd_state *s = st;
	s->lost = transport == BT_TR_DGRAM;
	s->cl_dir = role == BT_ROLE_CLIENT ? BT_DIR_OUT :
		    role == BT_ROLE_SERVER ? BT_DIR_IN : -1;
	s->d[0].cnt = s->d[1].cnt = -1;
}

static void rd_fini(void *st) { (void)st; }

/* ---- pending commands -------------------------------------------------- */

static void fifo_push(struct rd_state *s, uint8_t code)
{
	if (s->pending < RD_FIFO)
		s->fifo[(s->fh + s->pending) % RD_FIFO] = code;
	if (s->pending < UINT32_MAX)
		s->pending++;
}

static uint8_t fifo_head(const struct rd_state *s)
{
	return s->pending ? s->fifo[s->fh] : C_NORMAL;
}

static void fifo_pop(struct rd_state *s)
{
	if (!s->pending)
		return;
	s->fh = (uint16_t)((s->fh + 1) % RD_FIFO);
	s->pending--;
	/* the slot freed stands for a command beyond the remembered ones */
	if (s->pending >= RD_FIFO)
		s->fifo[(s->fh + RD_FIFO - 1) % RD_FIFO] = C_NORMAL;
}

/* ---- strings kept ------------------------------------------------------ */

static void keep(char *buf, uint8_t *len, size_t cap, uint8_t *trunc,
		 const uint8_t *p, size_t n, int fold)
{
	size_t k = cap - *len < n ? cap - *len : n;
	for (size_t i = 0; i < k; i++) {
		char c = (char)p[i];
		if (fold == 1 && c >= 'a' && c <= 'z')
			c = (char)(c - 32);
		else if (fold == 2 && c >= 'A' && c <= 'Z')
			c = (char)(c + 32);
		buf[*len + i] = c;
	}
	*len = (uint8_t)(*len + k);
	if (k < n && trunc)
		*trunc = 1;
}

/* Bytes P[0..N) of the string being captured. */
static void capture(struct rd_dir *d, const uint8_t *p, size_t n)
{
	switch (d->cap) {
	case K_CMD:
		keep(d->cmd, &d->cmdn, RD_CMD_KEEP, NULL, p, n, 1);
		break;
	case K_KEY:
		keep(d->key, &d->keyn, RD_KEY_KEEP, &d->trunc, p, n, 0);
		break;
	case K_ARG:
		keep(d->arg, &d->argn, RD_ARG_KEEP, NULL, p, n, 1);
		break;
	case K_HEAD:
		keep(d->head, &d->headn, RD_HEAD_KEEP, NULL, p, n, 2);
		break;
	case K_ERR: {
		/* the first word only (errn bit 7: it ended) */
		size_t k = 0;
		uint8_t len = d->errn & 0x7f;
		if (d->errn & 0x80)
			return;
		while (k < n && p[k] != ' ')
			k++;
		keep(d->err, &len, RD_ERR_KEEP, NULL, p, k, 0);
		d->errn = (uint8_t)(len | (k < n ? 0x80 : 0));
		break;
	}
	}
}

/* S[0..N) is the string literal LIT (its length folds at compile time). */
#define is(s, n, lit) ((n) == sizeof(lit) - 1 && \
		       memcmp((s), (lit), sizeof(lit) - 1) == 0)

/* Words with a meaning here, by length first (rd_dir.cmd is upper case,
 * rd_dir.head lower case). */
struct rd_word {
	uint8_t    n, what;
	const char *s;
};

/* rd_word.what: the command's target shows its subcommand (W_SUBCMD) or
 * no argument (W_ALONE); W_CODE + C_*: its code in the fifo; W_CONF + i:
 * the confirmation of the command of code C_SUB + i; W_MSG: a published
 * message */
enum { W_SUBCMD = 1, W_ALONE = 2, W_CODE = 16, W_CONF = 32, W_MSG = 64 };

#define W(s, what) { sizeof(s) - 1, what, s }
static const struct rd_word cmd_words[] = {
	W("ACL", W_SUBCMD), W("CLIENT", W_SUBCMD), W("CLUSTER", W_SUBCMD),
	W("COMMAND", W_SUBCMD), W("CONFIG", W_SUBCMD), W("DEBUG", W_SUBCMD),
	W("FUNCTION", W_SUBCMD), W("LATENCY", W_SUBCMD),
	W("MEMORY", W_SUBCMD), W("MODULE", W_SUBCMD), W("OBJECT", W_SUBCMD),
	W("PUBSUB", W_SUBCMD), W("SCRIPT", W_SUBCMD), W("SENTINEL", W_SUBCMD),
	W("SLOWLOG", W_SUBCMD), W("XGROUP", W_SUBCMD), W("XINFO", W_SUBCMD),
	W("AUTH", W_ALONE), W("ECHO", W_ALONE), W("PING", W_ALONE),
	W("EVAL", W_ALONE), W("EVAL_RO", W_ALONE),
	W("HELLO", W_CODE + C_HELLO), W("MONITOR", W_CODE + C_MONITOR),
	W("RESET", W_CODE + C_RESET),
	W("SUBSCRIBE", W_CODE + C_SUB), W("PSUBSCRIBE", W_CODE + C_SUB + 1),
	W("SSUBSCRIBE", W_CODE + C_SUB + 2),
	W("UNSUBSCRIBE", W_CODE + C_SUB + 3),
	W("PUNSUBSCRIBE", W_CODE + C_SUB + 4),
	W("SUNSUBSCRIBE", W_CODE + C_SUB + 5),
};

static const struct rd_word head_words[] = {
	W("subscribe", W_CONF), W("psubscribe", W_CONF + 1),
	W("ssubscribe", W_CONF + 2), W("unsubscribe", W_CONF + 3),
	W("punsubscribe", W_CONF + 4), W("sunsubscribe", W_CONF + 5),
	W("message", W_MSG), W("pmessage", W_MSG), W("smessage", W_MSG),
};
#undef W

/* What word S[0..N) is in table T of K entries, 0 when none. */
static unsigned lookup(const struct rd_word *t, size_t k, const char *s,
		       size_t n)
{
	for (size_t i = 0; i < k; i++)
		if (t[i].n == n && t[i].s[0] == s[0] &&
		    memcmp(t[i].s, s, n) == 0)
			return t[i].what;
	return 0;
}

/* A word fit to stand in a target: letters, digits, '-', '_', '|'. */
static int word(const char *s, size_t n)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' &&
		      s[i] <= '9') || s[i] == '-' || s[i] == '_' ||
		      s[i] == '|'))
			return 0;
	return 1;
}

/* ---- message ends ------------------------------------------------------ */

/* A command ended: its attributes; 1 a request, 0 no command. */
static int request_end(struct rd_state *s, struct rd_dir *d, struct bt_msg *m)
{
	size_t cn = d->cmdn, t = 0;
	uint64_t argc = d->top == '*' ? d->argc : d->tok;
	unsigned w;

	if (argc == 0)
		return 0;                   /* no command: the server ignores */
	m->kind = BT_MK_REQUEST;
	memcpy(s->meth, d->cmd, cn);
	memcpy(s->tgt, d->cmd, cn);
	t = cn;
	w = cn ? lookup(cmd_words, sizeof cmd_words / sizeof *cmd_words,
			d->cmd, cn) : 0;
	if (w == W_SUBCMD) {
		if (argc >= 2 && d->keyn <= 24) {
			/* the subcommand, upper case */
			char sub[24];
			for (size_t i = 0; i < d->keyn; i++) {
				char c = d->key[i];
				sub[i] = c >= 'a' && c <= 'z' ?
					 (char)(c - 32) : c;
			}
			if (word(sub, d->keyn) && !d->trunc) {
				s->tgt[t++] = ' ';
				memcpy(s->tgt + t, sub, d->keyn);
				t += d->keyn;
			}
			if (is(d->cmd, cn, "CLIENT") &&
			    is(sub, d->keyn, "REPLY") && argc == 3 &&
			    !is(d->arg, d->argn, "ON"))
				s->lost = 1;    /* replies skipped */
		}
	} else if (w == W_CODE + C_HELLO) {
		if (argc >= 2 && d->keyn == 1 && d->key[0] >= '0' &&
		    d->key[0] <= '9') {
			s->tgt[t++] = ' ';
			s->tgt[t++] = d->key[0];
		}
	} else if (w != W_ALONE && argc >= 2) {
		s->tgt[t++] = ' ';
		memcpy(s->tgt + t, d->key, d->keyn);
		t += d->keyn;
		if (d->trunc)
			m->flags |= BT_MF_TRUNC;
	}
	fifo_push(s, (uint8_t)(w >= W_CODE ? w - W_CODE : C_NORMAL));
	if (cn)
		bt_msg_attr(m, BT_AK_METHOD, s->meth, cn);
	if (t)
		bt_msg_attr(m, BT_AK_TARGET, s->tgt, t);
	return 1;
}

/* A server value ended: a reply or a oneway message. */
static void reply_end(struct rd_state *s, struct rd_dir *d, struct bt_msg *m)
{
	int agg = d->top == '*' || d->top == '>';
	int resp2arr = d->top == '*' && !s->resp3;
	size_t hn = agg ? d->headn : 0;
	uint8_t head = fifo_head(s);
	unsigned w = hn ? lookup(head_words, sizeof head_words /
				 sizeof *head_words, d->head, hn) : 0;
	int conf = w >= W_CONF && w < W_MSG ? (int)(w - W_CONF) : -1;

	/* the confirmation answers the pending command of its own name */
	int mine = conf >= 0 && s->pending && head == C_SUB + conf;
	if (conf >= 0 && (d->top == '>' ||
			  (resp2arr && (s->subscribed || mine)))) {
		if (conf >= 3) {                    /* (p|s)unsubscribe */
			if (d->cnt == 0)
				s->subscribed = 0;
		} else if (d->cnt > 0 && d->top == '*') {
			s->subscribed = 1;
		}
		if (mine) {
			fifo_pop(s);
			m->kind = BT_MK_REPLY;
		} else {
			m->kind = BT_MK_ONEWAY;
		}
		return;
	}
	if (d->top == '>' || s->monitor ||
	    (resp2arr && s->subscribed && w == W_MSG)) {
		m->kind = BT_MK_ONEWAY;
		return;
	}
	m->kind = BT_MK_REPLY;
	if (d->top == '-' || d->top == '!') {
		size_t en = d->errn & 0x7f;
		m->status = 1;
		memcpy(s->errb, d->err, en);
		if (en)
			bt_msg_attr(m, BT_AK_ERROR, s->errb, en);
	} else if (head == C_MONITOR && s->pending) {
		s->monitor = 1;
	} else if (head == C_HELLO && s->pending) {
		s->resp3 = d->top == '%';
	} else if (head == C_RESET && s->pending) {
		s->subscribed = 0;
		s->resp3 = 0;
	}
	fifo_pop(s);
}

/* A top-level value ended in direction DIR.  1 if MSG is a message. */
static int message_end(struct rd_state *s, int dir, struct rd_dir *d,
		       struct bt_msg *m)
{
	int r = 1;
	if (dir == s->cl_dir)
		r = request_end(s, d, m);
	else
		reply_end(s, d, m);
	d->top = 0;
	d->idx = 0;
	d->argc = 0;
	d->cnt = -1;
	d->tok = d->intok = 0;
	d->trunc = 0;
	d->cmdn = d->keyn = d->argn = d->headn = d->errn = 0;
	return r;
}

/*
 * A value ended at the current depth: count it in its parent, closing the
 * aggregates it completes.  1 when the top-level value ended.
 */
static int value_done(struct rd_dir *d)
{
	for (;;) {
		if (d->depth == 0)
			return 1;
		struct rd_lvl *l = &d->lv[d->depth - 1];
		if (d->depth == 1 && !l->attr)
			d->idx++;
		if (l->left == RD_STREAMED)
			return 0;
		if (--l->left)
			return 0;
		d->depth--;
		if (l->attr)
			return 0;           /* the annotated value follows */
	}
}

/* ---- lines ------------------------------------------------------------- */

/* Byte classes (cls[]) */
#define CL_REPLY   0x01u    /* a type byte a server sends */
#define CL_RESP3   0x02u    /* ... only in RESP3 */
#define CL_NUMERIC 0x04u    /* a type whose line is a length or number */
#define CL_DOUBLE  0x08u    /* a byte of a RESP3 double */

static const uint8_t cls[256] = {
	['+'] = CL_REPLY | CL_DOUBLE, ['-'] = CL_REPLY | CL_DOUBLE,
	[':'] = CL_REPLY | CL_NUMERIC, ['$'] = CL_REPLY | CL_NUMERIC,
	['*'] = CL_REPLY | CL_NUMERIC,
	['_'] = CL_REPLY | CL_RESP3, [','] = CL_REPLY | CL_RESP3,
	['#'] = CL_REPLY | CL_RESP3, ['('] = CL_REPLY | CL_RESP3,
	['='] = CL_REPLY | CL_RESP3 | CL_NUMERIC,
	['!'] = CL_REPLY | CL_RESP3 | CL_NUMERIC,
	['%'] = CL_REPLY | CL_RESP3 | CL_NUMERIC,
	['~'] = CL_REPLY | CL_RESP3 | CL_NUMERIC,
	['>'] = CL_REPLY | CL_RESP3 | CL_NUMERIC,
	['|'] = CL_REPLY | CL_RESP3 | CL_NUMERIC,
	[';'] = CL_NUMERIC,
	['0'] = CL_DOUBLE, ['1'] = CL_DOUBLE, ['2'] = CL_DOUBLE,
	['3'] = CL_DOUBLE, ['4'] = CL_DOUBLE, ['5'] = CL_DOUBLE,
	['6'] = CL_DOUBLE, ['7'] = CL_DOUBLE, ['8'] = CL_DOUBLE,
	['9'] = CL_DOUBLE, ['.'] = CL_DOUBLE, ['e'] = CL_DOUBLE,
	['E'] = CL_DOUBLE, ['i'] = CL_DOUBLE, ['n'] = CL_DOUBLE,
	['f'] = CL_DOUBLE, ['a'] = CL_DOUBLE, ['I'] = CL_DOUBLE,
	['N'] = CL_DOUBLE, ['F'] = CL_DOUBLE, ['A'] = CL_DOUBLE,
};

static int numeric(uint8_t t)
{
	return (cls[t] & CL_NUMERIC) != 0;
}

/* Is byte C allowed at position POS of a line of type T? */
static int line_byte(uint8_t t, uint64_t pos, uint8_t c)
{
	switch (t) {
	case '+':
	case '-':
		return c != '\n' && pos < RD_LINE_MAX;
	case '(':
		return pos < RD_BIGNUM_MAX && ((c >= '0' && c <= '9') ||
		       (pos == 0 && (c == '-' || c == '+')));
	case ',':
		return pos < 64 && (cls[c] & CL_DOUBLE);
	case '#':
		return pos == 0 && (c == 't' || c == 'f');
	case '_':
	case '.':
		return 0;
	default:
		return pos < 21 && ((c >= '0' && c <= '9') || c == '-' ||
				    c == '+' || c == '?');
	}
}

/* Parse d->num: -2 "?", -1 "-1", else the number; -3 bad.  *NEG for ':'. */
static int64_t parse_num(const struct rd_dir *d, uint64_t *v, int *neg)
{
	size_t i = 0;
	*neg = 0;
	*v = 0;
	if (d->nl == 1 && d->num[0] == '?')
		return -2;
	if (d->nl == 2 && d->num[0] == '-' && d->num[1] == '1')
		return -1;
	if (d->nl && (d->num[0] == '-' || d->num[0] == '+')) {
		*neg = d->num[0] == '-';
		i = 1;
	}
	if (i == d->nl || d->nl - i > 19)
		return -3;
	for (; i < d->nl; i++) {
		if (d->num[i] < '0' || d->num[i] > '9')
			return -3;
		*v = *v * 10 + (uint64_t)(d->num[i] - '0');
	}
	return 0;
}

/* Open an aggregate of N values (attr: an attribute).  -1 too deep. */
static int agg_open(struct rd_dir *d, uint64_t n, int attr)
{
	if (d->depth >= RD_DEPTH)
		return -1;
	d->lv[d->depth].left = n;
	d->lv[d->depth].attr = (uint8_t)attr;
	d->depth++;
	return 0;
}

/*
 * A line of type d->type ended (CRLF read).  Returns 1 if a top-level
 * value ended, 0 if not, -1 lost.
 */
static int line_end(struct rd_state *s, int cl, struct rd_dir *d)
{
	uint8_t t = d->type;
	uint64_t v;
	int neg;
	int64_t r;

	if (!numeric(t)) {
		if ((t == '#' && d->line != 1) || (t == '(' && (d->line == 0 ||
		    (d->line == 1 && d->nl == 1 && d->num[0] > '9'))) ||
		    (t == ',' && d->line == 0))
			return -1;
		if (t == '.') {
			/* the end of the innermost streamed aggregate */
			if (!d->depth || d->lv[d->depth - 1].left !=
			    RD_STREAMED || d->lv[d->depth - 1].attr)
				return -1;
			d->depth--;
		}
		return value_done(d);
	}
	r = parse_num(d, &v, &neg);
	if (r == -3 || (neg && t != ':'))
		return -1;
	if (t == ':') {
		if (r == -2)
			return -1;
		if (r == -1)
			neg = 1;
		if (d->depth == 1 && d->idx == 2 && !d->lv[0].attr)
			d->cnt = neg ? -1 : (int64_t)(v & INT64_MAX);
		return value_done(d);
	}
	if (t == ';') {
		if (r < 0 || !d->chunked)
			return -1;
		if (v == 0) {
			d->chunked = 0;
			return value_done(d);
		}
		if (v > RD_BULK_MAX)
			return -1;
		d->left = v;
		d->bulk_chunk = 1;
		d->st = S_BULK;
		return 0;
	}
	if (t == '$' || t == '=' || t == '!') {
		if (r == -1 && t == '$' && !cl)
			return value_done(d);        /* null bulk string */
		if (r == -2 && t == '$' && !cl) {
			d->chunked = 1;
			return 0;
		}
		if (r < 0 || v > RD_BULK_MAX || (t == '=' && v < 4))
			return -1;
		d->left = v;
		d->bulk_chunk = 0;
		d->st = S_BULK;
		if (d->depth == 0 && t == '!')
			d->cap = K_ERR;
		else if (d->depth == 1 && !d->lv[0].attr) {
			if (cl)
				d->cap = d->idx == 0 ? K_CMD : d->idx == 1 ?
					 K_KEY : d->idx == 2 ? K_ARG : K_NONE;
			else if (d->idx == 0 && t == '$')
				d->cap = K_HEAD;
		}
		if (d->left == 0) {
			d->st = S_BULK_CR;
			d->cap = K_NONE;
		}
		return 0;
	}
	/* aggregates * % ~ > | */
	if (r == -1 && t == '*')
		return cl && d->depth == 0 ? 1 : value_done(d);
	if (r == -2 && (t == '*' || t == '%' || t == '~') && !cl)
		return agg_open(d, RD_STREAMED, 0) < 0 ? -1 : 0;
	if (r < 0 || v > RD_AGG_MAX)
		return -1;
	if (cl) {
		d->argc = v;
		if (v == 0)
			return 1;               /* no command */
	}
	if (t == '%' || t == '|')
		v *= 2;
	if (v == 0)
		return t == '|' ? 0 : value_done(d);
	return agg_open(d, v, t == '|') < 0 ? -1 : 0;
}

/* ---- inline commands --------------------------------------------------- */

/* Bytes P[0..N) of an inline command line (no LF among them). */
static int inline_bytes(struct rd_dir *d, const uint8_t *p, size_t n)
{
	if (d->line + n > RD_INLINE_MAX)
		return -1;
	d->line += n;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = p[i];
		if (c < 0x20 && c != '\t' && c != '\r')
			return -1;
		if (c == ' ' || c == '\t' || c == '\r') {
			if (d->intok && d->tok < 255)
				d->tok++;
			d->intok = 0;
			continue;
		}
		d->intok = 1;
		d->cap = d->tok == 0 ? K_CMD : d->tok == 1 ? K_KEY :
			 d->tok == 2 ? K_ARG : K_NONE;
		capture(d, &c, 1);
	}
	d->cap = K_NONE;
	return 0;
}

/* ---- feed -------------------------------------------------------------- */

static int reply_type(uint8_t c)
{
	return (cls[c] & CL_REPLY) != 0;
}

/* A type byte C starts a value.  0 ok, -1 lost. */
static int type_byte(struct rd_state *s, int cl, struct rd_dir *d, uint8_t c)
{
	if (cl) {
		if (d->depth == 0 && c != '*')
			return 1;               /* an inline command */
		if (d->depth > 0 && c != '$')
			return -1;
	} else if (d->chunked ? c != ';' :
		   !(reply_type(c) || (c == '.' && d->depth &&
				       d->lv[d->depth - 1].left ==
				       RD_STREAMED))) {
		return -1;
	}
	if (!cl && (cls[c] & CL_RESP3))
		s->resp3 = 1;
	if (d->depth == 0 && c != '|')
		d->top = c;
	d->type = c;
	d->st = S_LINE;
	d->line = 0;
	d->nl = 0;
	d->cap = !cl && d->depth == 0 && c == '-' ? K_ERR : K_NONE;
	return 0;
}

static long rd_feed(void *st, int dir, const uint8_t *p, size_t n,
		    struct bt_msg *m)
{
	struct rd_state *s = st;
	struct rd_dir *d;
	size_t i = 0;
	int cl, r;

	dir &= 1;
	d = &s->d[dir];
	if (s->lost)
		return BT_PP_LOST;
	while (i < n) {
		uint8_t c = p[i];
		switch (d->st) {
		case S_TYPE:
			if (s->cl_dir < 0) {
				if (c == '*' || (c >= 'A' && c <= 'Z') ||
				    (c >= 'a' && c <= 'z'))
					s->cl_dir = (int8_t)dir;
				else if (reply_type(c))
					s->cl_dir = (int8_t)!dir;
				else
					return BT_PP_LOST;
			}
			cl = dir == s->cl_dir;
			r = type_byte(s, cl, d, c);
			if (r < 0)
				return BT_PP_LOST;
			if (r > 0) {
				d->st = S_INLINE;
				d->line = 0;
				d->top = 'i';
				continue;   /* the byte is the command's */
			}
			i++;
			continue;
		case S_LINE: {
			if (d->type == '+' || d->type == '-') {
				const uint8_t *e = memchr(p + i, '\r', n - i);
				size_t k = e ? (size_t)(e - (p + i)) : n - i;
				if (memchr(p + i, '\n', k) ||
				    d->line + k > RD_LINE_MAX)
					return BT_PP_LOST;
				capture(d, p + i, k);
				d->line += k;
				i += k;
				if (!e)
					continue;
			} else {
				for (; i < n && p[i] != '\r'; i++, d->line++) {
					if (!line_byte(d->type, d->line, p[i]))
						return BT_PP_LOST;
					if (d->nl < RD_NUM_KEEP)
						d->num[d->nl++] = (char)p[i];
				}
				if (i == n)
					continue;
			}
			d->st = S_LF;
			i++;
			continue;
		}
		case S_LF:
			if (c != '\n')
				return BT_PP_LOST;
			i++;
			d->st = S_TYPE;
			d->cap = K_NONE;
			r = line_end(s, dir == s->cl_dir, d);
			break;
		case S_BULK: {
			size_t k = d->left < n - i ? (size_t)d->left : n - i;
			if (d->cap)
				capture(d, p + i, k);
			d->left -= k;
			i += k;
			if (!d->left)
				d->st = S_BULK_CR;
			continue;
		}
		case S_BULK_CR:
			if (c != '\r')
				return BT_PP_LOST;
			d->st = S_BULK_LF;
			i++;
			continue;
		case S_BULK_LF:
			if (c != '\n')
				return BT_PP_LOST;
			i++;
			d->st = S_TYPE;
			d->cap = K_NONE;
			if (d->bulk_chunk) {
				d->bulk_chunk = 0;
				continue;
			}
			r = value_done(d);
			break;
		case S_INLINE: {
			const uint8_t *e = memchr(p + i, '\n', n - i);
			size_t k = e ? (size_t)(e - (p + i)) : n - i;
			if (inline_bytes(d, p + i, k) < 0)
				return BT_PP_LOST;
			i += k;
			if (!e)
				continue;
			i++;
			if (d->intok && d->tok < 255)
				d->tok++;
			d->st = S_TYPE;
			r = 1;
			break;
		}
		default:
			return BT_PP_LOST;
		}
		/* a line or bulk string ended: R as line_end() */
		if (r < 0)
			return BT_PP_LOST;
		if (r > 0 && message_end(s, dir, d, m))
			return (long)i;
	}
	return (long)n;
}

/*
 * Sniff: a client's first command, "*N\r\n$" (N: 1 to 7 digits), in the
 * client's direction (both when the role is unknown).
 */
static int rd_sniff(int dir, int role, const uint8_t *p, size_t n)
{
	size_t i = 1;
	if ((role == BT_ROLE_CLIENT && dir != BT_DIR_OUT) ||
	    (role == BT_ROLE_SERVER && dir != BT_DIR_IN) || p[0] != '*')
		return BT_SNIFF_NO;
	for (; i < n && i <= 8 && p[i] >= '0' && p[i] <= '9'; i++)
		if (i == 1 && p[i] == '0')
			return BT_SNIFF_NO;
	if (i == n)
		return BT_SNIFF_MAYBE;
	if (i == 1 || i > 8 || p[i] != '\r')
		return BT_SNIFF_NO;
	if (++i == n)
		return BT_SNIFF_MAYBE;
	if (p[i] != '\n')
		return BT_SNIFF_NO;
	if (++i == n)
		return BT_SNIFF_MAYBE;
	return p[i] == '$' ? BT_SNIFF_YES : BT_SNIFF_NO;
}

const struct bt_proto_ops bt_proto_redis = {
	.name = "redis",
	.id = BT_PROTO_REDIS,
	.state_size = sizeof(struct rd_state),
	.sniff = rd_sniff,
	.init = rd_init,
	.fini = rd_fini,
	.feed = rd_feed,
	.eof = NULL,
};
