/*
 * check_proto_lib.c - capture files and processor replay (check_proto.h).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check_proto.h"

#define CAP_MAGIC "BPCAP1\n"

void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		size_t room = b->cap - b->len;
		va_start(ap, fmt);
		int n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			abort();
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t nc = b->cap ? b->cap * 2 : 4096;
		while (nc < b->len + (size_t)n + 1)
			nc *= 2;
		char *s = realloc(b->s, nc);
		if (!s)
			abort();
		b->s = s;
		b->cap = nc;
	}
}

void sb_free(struct sbuf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

/* ---- capture files ----------------------------------------------------- */

int cap_parse(uint8_t *buf, size_t n, struct cap *c, char *err, size_t elen)
{
	size_t pos = strlen(CAP_MAGIC), nrec = 0;
	memset(c, 0, sizeof *c);
	c->buf = buf;
	c->role = -1;
	c->transport = -1;
	if (n < pos || memcmp(buf, CAP_MAGIC, pos) != 0) {
		snprintf(err, elen, "not a capture (no %s header)", "BPCAP1");
		return -1;
	}
	for (;;) {                          /* header lines up to "\n" */
		uint8_t *nl = memchr(buf + pos, '\n', n - pos);
		if (!nl) {
			snprintf(err, elen, "offset %zu: header not ended by "
				 "an empty line", pos);
			return -1;
		}
		char line[600];
		size_t l = (size_t)(nl - (buf + pos));
		size_t start = pos;
		pos += l + 1;
		if (l == 0)
			break;
		if (l >= sizeof line) {
			snprintf(err, elen, "offset %zu: header line too "
				 "long", start);
			return -1;
		}
		memcpy(line, buf + start, l);
		line[l] = 0;
		char *v = strchr(line, ' ');
		if (!v) {
			snprintf(err, elen, "offset %zu: header line '%s' has "
				 "no value", start, line);
			return -1;
		}
		*v++ = 0;
		if (strcmp(line, "proto") == 0) {
			snprintf(c->proto, sizeof c->proto, "%s", v);
		} else if (strcmp(line, "role") == 0) {
			c->role = strcmp(v, "client") == 0 ? BT_ROLE_CLIENT :
				  strcmp(v, "server") == 0 ? BT_ROLE_SERVER :
				  strcmp(v, "unknown") == 0 ? BT_ROLE_UNKNOWN :
				  -2;
		} else if (strcmp(line, "transport") == 0) {
			c->transport = strcmp(v, "stream") == 0 ? BT_TR_STREAM :
				       strcmp(v, "dgram") == 0 ? BT_TR_DGRAM :
				       -2;
		} else if (strcmp(line, "source") == 0) {
			snprintf(c->source, sizeof c->source, "%s", v);
		}                   /* other keys: notes, ignored */
	}
	if (!c->proto[0] || c->role < 0 || c->transport < 0) {
		snprintf(err, elen, "header needs proto, role (client|server|"
			 "unknown) and transport (stream|dgram)");
		return -1;
	}
	size_t body = pos;
	for (int pass = 0; pass < 2; pass++) {
		pos = body;
		nrec = 0;
		while (pos < n) {
			if (n - pos < 5) {
				snprintf(err, elen, "offset %zu: truncated "
					 "record header", pos);
				return -1;
			}
			uint8_t t = buf[pos];
			uint32_t len = (uint32_t)buf[pos + 1] << 24 |
				       (uint32_t)buf[pos + 2] << 16 |
				       (uint32_t)buf[pos + 3] << 8 | buf[pos + 4];
			if (t > CAP_EOF_OUT || (t >= CAP_EOF_IN && len) ||
			    (t < CAP_EOF_IN && !len) || len > n - pos - 5) {
				snprintf(err, elen, "offset %zu: bad record "
					 "(type %u, length %u)", pos, t, len);
				return -1;
			}
			if (pass) {
				c->rec[nrec].type = t;
				c->rec[nrec].len = len;
				c->rec[nrec].data = buf + pos + 5;
				c->bytes += len;
			}
			nrec++;
			pos += 5 + len;
		}
		if (!pass) {
			c->rec = calloc(nrec ? nrec : 1, sizeof *c->rec);
			if (!c->rec) {
				snprintf(err, elen, "out of memory");
				return -1;
			}
		}
	}
	c->nrec = nrec;
	return 0;
}

int cap_load(const char *path, struct cap *c, char *err, size_t elen)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;
	memset(c, 0, sizeof *c);
	if (!f) {
		snprintf(err, elen, "%s: %s", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			uint8_t *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				snprintf(err, elen, "%s: out of memory", path);
				return -1;
			}
			buf = nb;
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		snprintf(err, elen, "%s: read error", path);
		return -1;
	}
	char e[400];
	if (cap_parse(buf, n, c, e, sizeof e) < 0) {
		cap_free(c);
		snprintf(err, elen, "%s: %s", path, e);
		return -1;
	}
	return 0;
}

void cap_free(struct cap *c)
{
	free(c->rec);
	free(c->buf);
	memset(c, 0, sizeof *c);
}

/* ---- guarded memory ---------------------------------------------------- */

struct guard {
	uint8_t *map;
	size_t   size;          /* usable bytes (whole pages) */
	int      front;
};

/* Usable area of at least N bytes with a PROT_NONE page after (or before). */
static uint8_t *guard_get(struct guard *g, size_t n, int front)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t want = (n + pg - 1) / pg * pg;
	if (want == 0)
		want = pg;
	if (g->map && (g->size < want || g->front != front)) {
		munmap(g->map, g->size + pg);
		g->map = NULL;
	}
	if (!g->map) {
		g->map = mmap(NULL, want + pg, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (g->map == MAP_FAILED)
			abort();
		if (mprotect(front ? g->map : g->map + want, pg, PROT_NONE))
			abort();
		g->size = want;
		g->front = front;
	}
	return front ? g->map + pg : g->map + g->size - n;
}

static struct guard g_data, g_state;

/* ---- replay ------------------------------------------------------------- */

static const char *const dir_name[2] = { "in", "out" };

static void log_msg(struct sbuf *out, int dir, const struct bt_msg *m,
		    uint64_t off, uint64_t len)
{
	sb_printf(out, "%s %s off=%llu len=%llu", dir_name[dir],
		  bt_msg_kind_name(m->kind), (unsigned long long)off,
		  (unsigned long long)len);
	if (m->status)
		sb_printf(out, " status=%u", m->status);
	if (m->flags & BT_MF_WITNESS)
		sb_printf(out, " witness=%llu",
			  (unsigned long long)m->witness);
	if (m->flags & ~BT_MF_WITNESS)
		sb_printf(out, " flags=%s%s%s",
			  m->flags & BT_MF_TRUNC ? "trunc," : "",
			  m->flags & BT_MF_EOF ? "eof," : "",
			  m->flags & BT_MF_DGRAM ? "dgram," : "");
	if (m->flags & ~BT_MF_WITNESS)
		out->s[--out->len] = 0;     /* the last comma */
	for (unsigned i = 0; i < m->nattr; i++) {
		const struct bt_attr *a = &m->attr[i];
		char esc[4 * 1024 + 1];
		size_t e = 0;
		sb_printf(out, " %s=\"", bt_attr_key_name(a->key));
		for (unsigned j = 0; j < a->len; j++) {
			unsigned char ch = (unsigned char)a->val[j];
			if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\') {
				esc[e++] = (char)ch;
			} else {
				snprintf(esc + e, 5, "\\x%02x", ch);
				e += 4;
			}
			if (e > sizeof esc - 5 || j + 1 == a->len) {
				esc[e] = 0;
				sb_printf(out, "%s", esc);
				e = 0;
			}
		}
		sb_printf(out, "\"");
	}
	sb_printf(out, "\n");
}

/* Is every attribute inside the state or the bytes just fed? */
static int attrs_ok(const struct bt_msg *m, const void *st, size_t stn,
		    const uint8_t *p, size_t n)
{
	const char *s0 = st, *p0 = (const char *)p;
	if (m->nattr > BT_EV_MAX_ATTR)
		return 0;
	for (unsigned i = 0; i < m->nattr; i++) {
		const char *v = m->attr[i].val;
		size_t l = m->attr[i].len;
		if (!v || !m->attr[i].key || m->attr[i].key >= BT_AK_MAX)
			return 0;
		if (!(v >= s0 && v + l <= s0 + stn) &&
		    !(p0 && v >= p0 && v + l <= p0 + n))
			return 0;
	}
	return 1;
}

/* The canary below state ST is intact.  0, or -1 (ERR). */
static int check_guard(const uint8_t *st, size_t below,
		       const struct bt_proto_ops *o, char *err, size_t elen)
{
	(void)st;
	for (size_t i = 0; i < below; i++)
		if (g_state.map[i] != 0xa5) {
			snprintf(err, elen, "%s: wrote %zu bytes before its "
				 "state", o->name, below - i);
			return -1;
		}
	return 0;
}

int replay_chunks(const struct bt_proto_ops *o, int role, int transport,
		  size_t nchunk, const uint8_t *type, const uint32_t *len,
		  const uint8_t *const *data, int front, struct sbuf *out,
		  char *err, size_t elen)
{
	uint64_t off[2] = { 0, 0 }, start[2] = { 0, 0 };
	int eofd[2] = { 0, 0 }, seen[2] = { 0, 0 };
	int dgram = transport == BT_TR_DGRAM;
	struct bt_msg m;

	if (o->state_size == 0 || o->state_size > 8192) {
		snprintf(err, elen, "%s: state_size %u outside 1..8192",
			 o->name, o->state_size);
		return -1;
	}
	/* the state ends at a guard page; the bytes before it are a canary */
	uint8_t *st = guard_get(&g_state, o->state_size, 0);
	size_t below = (size_t)(st - g_state.map);
	memset(g_state.map, 0xa5, below);
	memset(st, 0, o->state_size);
	o->init(st, role, transport);

	for (size_t c = 0; c < nchunk; c++) {
		int dir = type[c] & 1;
		if (type[c] >= CAP_EOF_IN) {
			if (eofd[dir])
				continue;
			eofd[dir] = 1;
			if (!o->eof)
				continue;
			memset(&m, 0, sizeof m);
			o->eof(st, dir, &m);
			if (!attrs_ok(&m, st, o->state_size, NULL, 0)) {
				snprintf(err, elen, "%s: eof(%s): attribute "
					 "outside the state", o->name,
					 dir_name[dir]);
				return -1;
			}
			if (m.kind) {
				log_msg(out, dir, &m, start[dir],
					dgram ? 1 : off[dir] - start[dir]);
				start[dir] = off[dir];
			}
			continue;
		}
		if (!seen[dir] && (o->flags & BT_PPF_TURN_ENDS) &&
		    seen[!dir] && !eofd[!dir] && o->eof) {
			memset(&m, 0, sizeof m);
			o->eof(st, !dir, &m);
			if (m.kind) {
				log_msg(out, !dir, &m, start[!dir],
					off[!dir] - start[!dir]);
				start[!dir] = off[!dir];
			}
		}
		seen[dir] = 1;
		size_t n = len[c];
		uint8_t *p = guard_get(&g_data, n, front);
		memcpy(p, data[c], n);
		while (n) {
			memset(&m, 0, sizeof m);
			long r = o->feed(st, dir, p, n, &m);
			if (r == BT_PP_LOST) {
				/* libbtrace stops calling the processor */
				sb_printf(out, "%s lost\n", dir_name[dir]);
				goto done;
			}
			if (r < 1 || (size_t)r > n) {
				snprintf(err, elen, "%s: feed(%s, %zu bytes) "
					 "returned %ld", o->name,
					 dir_name[dir], n, r);
				return -1;
			}
			if (!m.kind && (size_t)r != n) {
				snprintf(err, elen, "%s: feed(%s) consumed "
					 "%ld of %zu bytes without a message",
					 o->name, dir_name[dir], r, n);
				return -1;
			}
			if (m.kind > BT_MK_CONTROL ||
			    !attrs_ok(&m, st, o->state_size, p, n)) {
				snprintf(err, elen, "%s: feed(%s): bad message "
					 "(kind %u, %u attributes)", o->name,
					 dir_name[dir], m.kind, m.nattr);
				return -1;
			}
			if (dgram && (!m.kind || (size_t)r != n)) {
				snprintf(err, elen, "%s: datagram of %zu bytes "
					 "not one message", o->name, n);
				return -1;
			}
			if (dgram) {
				log_msg(out, dir, &m, off[dir], n);
				off[dir]++;
				start[dir] = off[dir];
				break;
			}
			off[dir] += (uint64_t)r;
			if (m.kind) {
				log_msg(out, dir, &m, start[dir],
					off[dir] - start[dir]);
				start[dir] = off[dir];
			}
			p += r;
			n -= (size_t)r;
			if (m.kind && m.next_proto) {
				/* handed over (HTTP/1.1 Upgrade: h2c): as
				 * libbtrace, the next processor afresh */
				if (m.next_proto >= BT_PROTO_MAX ||
				    !bt_protocols[m.next_proto]) {
					snprintf(err, elen, "%s: next processor %u "
						 "unknown", o->name, m.next_proto);
					return -1;
				}
				o->fini(st);
				o = bt_protocols[m.next_proto];
				if (check_guard(st, below, o, err, elen) < 0)
					return -1;
				st = guard_get(&g_state, o->state_size, 0);
				below = (size_t)(st - g_state.map);
				memset(g_state.map, 0xa5, below);
				memset(st, 0, o->state_size);
				o->init(st, role, transport);
			}
		}
	}
	/* the channel closes: both directions end */
	for (int dir = 0; dir < 2 && o->eof; dir++) {
		if (eofd[dir])
			continue;
		memset(&m, 0, sizeof m);
		o->eof(st, dir, &m);
		if (m.kind) {
			log_msg(out, dir, &m, start[dir],
				dgram ? 1 : off[dir] - start[dir]);
			start[dir] = off[dir];
		}
	}
done:
	o->fini(st);
	return check_guard(st, below, o, err, elen);
}

const char *replay_mode_name(int mode)
{
	static const char *const n[] = {
		"records", "whole", "bytes", "split", "front", "random",
	};
	return mode >= 0 && mode <= RM_RANDOM ? n[mode] : "?";
}

int replay(const struct bt_proto_ops *o, const struct cap *c, int mode,
	   size_t split, struct sbuf *out, char *err, size_t elen)
{
	size_t max = 2 * c->nrec + 4, n = 0, kn = 0;
	uint8_t *type = malloc(max), *kt = malloc(max);
	uint32_t *len = malloc(max * sizeof *len), *kl = malloc(max * sizeof *kl);
	const uint8_t **data = malloc(max * sizeof *data);
	const uint8_t **kd = malloc(max * sizeof *kd);
	uint8_t *joined = malloc(c->bytes + 1);
	size_t at = 0, gpos = 0;
	uint64_t rnd = split * 2654435761u + 1;
	int r;

	if (!type || !len || !data || !kt || !kl || !kd || !joined)
		abort();
	if (c->transport == BT_TR_DGRAM && mode != RM_FRONT)
		mode = RM_RECORDS;          /* datagrams are never cut */
	if (mode == RM_BYTES || mode == RM_RANDOM) {
		max += c->bytes;
		kt = realloc(kt, max);
		kl = realloc(kl, max * sizeof *kl);
		kd = realloc(kd, max * sizeof *kd);
		if (!kt || !kl || !kd)
			abort();
	}
	int join = mode == RM_WHOLE || mode == RM_SPLIT || mode == RM_RANDOM;
	for (size_t i = 0; i < c->nrec; i++) {
		const struct cap_rec *rc = &c->rec[i];
		if (rc->type >= CAP_EOF_IN || !join) {
			type[n] = rc->type;
			len[n] = rc->len;
			data[n++] = rc->data;
			continue;
		}
		/* one contiguous copy per run of a direction */
		memcpy(joined + at, rc->data, rc->len);
		if (n && type[n - 1] == rc->type &&
		    data[n - 1] + len[n - 1] == joined + at) {
			len[n - 1] += rc->len;
		} else {
			type[n] = rc->type;
			len[n] = rc->len;
			data[n++] = joined + at;
		}
		at += rc->len;
	}
	for (size_t i = 0; i < n; i++) {    /* cut the chunks */
		uint32_t l = len[i], done = 0;
		if (type[i] >= CAP_EOF_IN || mode == RM_RECORDS ||
		    mode == RM_FRONT || mode == RM_WHOLE) {
			kt[kn] = type[i];
			kl[kn] = l;
			kd[kn++] = data[i];
			continue;
		}
		while (done < l) {
			uint32_t piece = l - done;
			if (mode == RM_BYTES)
				piece = 1;
			if (mode == RM_SPLIT && split > gpos &&
			    split < gpos + piece)
				piece = (uint32_t)(split - gpos);
			if (mode == RM_RANDOM) {
				rnd = rnd * 6364136223846793005u +
				      1442695040888963407u;
				uint32_t cut = (uint32_t)(rnd >> 33) %
					       (rnd >> 62 ? 4096u : 16u) + 1;
				if (cut < piece)
					piece = cut;
			}
			if (kn == max) {
				max *= 2;
				kt = realloc(kt, max);
				kl = realloc(kl, max * sizeof *kl);
				kd = realloc(kd, max * sizeof *kd);
				if (!kt || !kl || !kd)
					abort();
			}
			kt[kn] = type[i];
			kl[kn] = piece;
			kd[kn++] = data[i] + done;
			done += piece;
			gpos += piece;
		}
	}
	r = replay_chunks(o, c->role, c->transport, kn, kt, kl, kd,
			  mode == RM_FRONT, out, err, elen);
	free(type); free(len); free(data);
	free(kt); free(kl); free(kd);
	free(joined);
	return r;
}

long replay_splits(const struct bt_proto_ops *o, const struct cap *c,
		   const char *want, struct sbuf *got, char *err, size_t elen)
{
	size_t max = c->nrec + 2, n = 0, at = 0;
	uint8_t *type = malloc(max + 1);
	uint32_t *len = malloc((max + 1) * sizeof *len);
	const uint8_t **data = malloc((max + 1) * sizeof *data);
	uint8_t *joined = malloc(c->bytes + 1);
	uint8_t *t2 = malloc(max + 1);
	uint32_t *l2 = malloc((max + 1) * sizeof *l2);
	const uint8_t **d2 = malloc((max + 1) * sizeof *d2);
	size_t wl = strlen(want);
	long r = 0;

	if (!type || !len || !data || !joined || !t2 || !l2 || !d2)
		abort();
	for (size_t i = 0; i < c->nrec; i++) {     /* the runs, once */
		const struct cap_rec *rc = &c->rec[i];
		if (rc->type < CAP_EOF_IN) {
			memcpy(joined + at, rc->data, rc->len);
			if (n && type[n - 1] == rc->type &&
			    data[n - 1] + len[n - 1] == joined + at) {
				len[n - 1] += rc->len;
				at += rc->len;
				continue;
			}
		}
		type[n] = rc->type;
		len[n] = rc->len;
		data[n++] = rc->type < CAP_EOF_IN ? joined + at : joined;
		at += rc->type < CAP_EOF_IN ? rc->len : 0;
	}
	for (size_t i = 0, gpos = 0; i < n && r == 0; i++) {
		if (type[i] >= CAP_EOF_IN)
			continue;
		/* cut run i at every inner point; the other runs whole */
		for (uint32_t cut = 1; cut < len[i]; cut++) {
			size_t m = 0;
			for (size_t j = 0; j < n; j++) {
				t2[m] = type[j];
				l2[m] = j == i ? cut : len[j];
				d2[m++] = data[j];
				if (j == i) {
					t2[m] = type[j];
					l2[m] = len[j] - cut;
					d2[m++] = data[j] + cut;
				}
			}
			got->len = 0;
			if (replay_chunks(o, c->role, c->transport, m, t2, l2,
					  d2, 0, got, err, elen) < 0) {
				r = -1;
				break;
			}
			if (got->len != wl || memcmp(got->s, want, wl) != 0) {
				r = (long)(gpos + cut);
				break;
			}
		}
		gpos += len[i];
	}
	free(type); free(len); free(data);
	free(t2); free(l2); free(d2);
	free(joined);
	return r;
}
