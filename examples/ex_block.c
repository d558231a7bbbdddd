/*
 * ex_block.c - the blocking fronts' request loop (see ex_block.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ex_block.h"

static const char *ex_block_kind_name(int kind)
{
	return kind == EX_KIND_TCP ? "tcp" : "unix";
}

int ex_block_connect(struct ex_bconn *bc, const struct ex_target *t, int kind)
{
	int fd;

	bc->kind = kind;
	ex_lbuf_reset(&bc->in);
	if (kind == EX_KIND_TCP)
		fd = ex_connect_tcp(t->host, t->port, 0, t->timeout_ms);
	else
		fd = ex_connect_unix(t->unix_path, 0, t->timeout_ms);
	if (fd < 0) {
		if (kind == EX_KIND_TCP)
			ex_log("cannot connect to the tcp backend %s:%d: %s",
			       t->host, t->port, strerror(-fd));
		else
			ex_log("cannot connect to the unix backend %s: %s",
			       t->unix_path, strerror(-fd));
		bc->fd = -1;
		return fd;
	}
	ex_set_timeouts(fd, t->timeout_ms);
	bc->fd = fd;
	return 0;
}

void ex_block_close(struct ex_bconn *bc)
{
	if (bc->fd >= 0)
		close(bc->fd);
	bc->fd = -1;
	ex_lbuf_reset(&bc->in);
}

int ex_block_call(struct ex_bconn *bc, const char *id, unsigned k,
		  uint64_t *cs)
{
	char out[EX_LINE_MAX + 2];
	char *line;
	size_t len;
	int n = ex_fmt_call(out, sizeof out, id, k);
	int r = ex_write_all(bc->fd, out, (size_t)n);

	if (r < 0) {
		ex_log("%s backend: sending CALL %s %u: %s",
		       ex_block_kind_name(bc->kind), id, k, strerror(-r));
		return r;
	}
	r = ex_lbuf_getline(&bc->in, bc->fd, &line, &len);
	if (r <= 0) {
		if (r == 0)
			r = -ECONNRESET;
		ex_log("%s backend: reading the reply to CALL %s %u: %s",
		       ex_block_kind_name(bc->kind), id, k,
		       r == -EAGAIN ? "timed out" : strerror(-r));
		return r;
	}
	if (!ex_is_ok_for(line, id, k)) {
		ex_log("%s backend: mixup: CALL %s %u got reply '%.80s'",
		       ex_block_kind_name(bc->kind), id, k, line);
		return -EPROTO;
	}
	*cs = ex_cs_add(*cs, line, len);
	return 0;
}

/* Answer "ERR <id> <why>" (best effort: the connection is closed next). */
static void ex_block_err(int fd, const char *id, const char *why)
{
	char out[EX_LINE_MAX + 2];
	int n = snprintf(out, sizeof out, "ERR %s %s\n", id, why);

	if (ex_write_all(fd, out, (size_t)n) < 0) {
		/* the client is gone too */
	}
}

int ex_block_serve(int fd, const struct ex_block_backends *b,
		   atomic_long *answered)
{
	struct ex_lbuf in;

	ex_lbuf_reset(&in);
	while (!ex_stop) {
		struct ex_req req;
		char out[EX_LINE_MAX + 2];
		char *line;
		uint64_t cs = ex_cs_init();
		int r = ex_lbuf_getline(&in, fd, &line, NULL);
		int n;

		if (r == 0)
			return 0;                       /* client closed */
		if (r < 0) {
			if (r == -EAGAIN)
				ex_log("client idle too long: closing");
			else if (r != -EINTR && r != -ECONNRESET)
				ex_log("reading from client: %s", strerror(-r));
			return r == -EINTR ? 0 : r;
		}
		if (ex_parse_req(line, &req)) {
			ex_log("bad request line '%.80s': closing", line);
			ex_block_err(fd, "-", "bad-request");
			return -EPROTO;
		}
		for (unsigned k = 0; k < req.n; k++) {
			int kind = (int)(k % 2);
			struct ex_bconn *bc = b->get(b->ctx, kind);

			if (!bc) {
				ex_block_err(fd, req.id, "backend-unavailable");
				return -EIO;
			}
			r = ex_block_call(bc, req.id, k, &cs);
			b->put(b->ctx, bc, r < 0);
			if (r < 0) {
				ex_block_err(fd, req.id, r == -EPROTO ?
					     "backend-mixup" : "backend-failed");
				return r;
			}
		}
		n = ex_fmt_resp(out, sizeof out, req.id, req.n, cs);
		atomic_fetch_add(answered, 1);
		r = ex_write_all(fd, out, (size_t)n);
		if (r < 0) {
			ex_log("answering %s: %s", req.id, strerror(-r));
			return r;
		}
	}
	return 0;
}

static struct ex_bconn *ex_block_private_get(void *ctx, int kind)
{
	struct ex_block_private *p = ctx;
	struct ex_bconn *bc = &p->c[kind];

	if (bc->fd < 0) {
		if (ex_block_connect(bc, p->t, kind) < 0)
			return NULL;
		p->opened++;
	}
	return bc;
}

static void ex_block_private_put(void *ctx, struct ex_bconn *bc, int broken)
{
	(void)ctx;
	if (broken)
		ex_block_close(bc);
}

void ex_block_private_init(struct ex_block_private *p,
			   const struct ex_target *t,
			   struct ex_block_backends *b)
{
	memset(p, 0, sizeof *p);
	p->t = t;
	for (int i = 0; i < EX_KINDS; i++) {
		p->c[i].fd = -1;
		p->c[i].kind = i;
	}
	b->get = ex_block_private_get;
	b->put = ex_block_private_put;
	b->ctx = p;
}

void ex_block_private_fini(struct ex_block_private *p)
{
	for (int i = 0; i < EX_KINDS; i++)
		ex_block_close(&p->c[i]);
}
