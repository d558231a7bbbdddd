/*
 * demo.c - the scripted web shop (see demo.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btrace/proto.h"
#include "demo.h"

#define IN   BT_DIR_IN
#define OUT  BT_DIR_OUT
#define POLLIN 1

enum {
	FD_LISTEN = 6, FD_CLIENT = 10, FD_FILE = 12, FD_FCGI = 20,   /* nginx */
	FD_FCGI_IN = 4, FD_PG = 7, FD_SEARCH = 9,                   /* php */
	FD_PG_IN = 5,                                               /* postgres */
};

struct demo_chain {
	struct gen_thr *nginx, *php, *pg;
	int64_t free_at;         /* when the chain can take a request */
	int     idx;
	unsigned conns;          /* client connections so far */
};

struct demo_chain *demo_chain(struct gen_host *web, struct gen_host *db,
			      int idx, int64_t at)
{
	struct demo_chain *c = calloc(1, sizeof *c);
	char php_addr[32], sock[64];
	uint64_t ino = 50000 + 10 * (uint64_t)idx;

	if (!c)
		abort();
	c->idx = idx;
	c->nginx = gen_proc_main(web, 1000 + (uint32_t)idx, "/usr/sbin/nginx", at);
	c->php = gen_proc_main(web, 2000 + (uint32_t)idx, "/usr/sbin/php-fpm8.2", at);
	c->pg = gen_proc_main(db, 3000 + (uint32_t)idx,
			      "/usr/lib/postgresql/15/bin/postgres", at);
	snprintf(sock, sizeof sock, "/run/php/php8.2-fpm.sock");
	gen_unix(c->nginx, at + 1, FD_FCGI, BT_CR_CONNECT, ino, ino + 1, sock);
	gen_unix(c->php, at + 2, FD_FCGI_IN, BT_CR_ACCEPT, ino + 1, ino, sock);
	snprintf(php_addr, sizeof php_addr, "10.0.1.1:%d", 51000 + idx);
	gen_tcp(c->php, at + 3, FD_PG, BT_CR_CONNECT, php_addr, "10.0.1.2:5432");
	gen_tcp(c->pg, at + 4, FD_PG_IN, BT_CR_ACCEPT, "10.0.1.2:5432", php_addr);
	/* start-up and authentication: control messages, no request */
	gen_msg(c->php, at + 5, FD_PG, OUT, BT_MK_CONTROL, BT_PROTO_PGSQL, 80,
		0, 0, 0, GEN_A(BT_AK_USER, "shop"),
		GEN_A(BT_AK_DATABASE, "shop"), 0);
	gen_msg(c->pg, at + 8, FD_PG_IN, IN, BT_MK_CONTROL, BT_PROTO_PGSQL, 80,
		0, 0, 0, GEN_A(BT_AK_USER, "shop"),
		GEN_A(BT_AK_DATABASE, "shop"), 0);
	gen_msg(c->pg, at + 12, FD_PG_IN, OUT, BT_MK_CONTROL, BT_PROTO_PGSQL,
		300, 0, 0, 0, 0);
	gen_msg(c->php, at + 15, FD_PG, IN, BT_MK_CONTROL, BT_PROTO_PGSQL, 300,
		0, 0, 0, 0);
	c->free_at = at + 20;
	return c;
}

void demo_chain_free(struct demo_chain *c)
{
	free(c);
}

static int64_t static_file(struct demo_chain *c, int64_t t,
			   const struct demo_page *p)
{
	gen_open(c->nginx, t + 8, FD_FILE, p->static_file);
	gen_close(c->nginx, t + 9, FD_FILE);
	gen_msg(c->nginx, t + 20, FD_CLIENT, OUT, BT_MK_REPLY, BT_PROTO_HTTP,
		2000, 0, (uint32_t)p->status, 0, 0);
	gen_close(c->nginx, t + 22, FD_CLIENT);
	return t + 20;
}

int64_t demo_request(struct demo_chain *c, int64_t t0,
		     const struct demo_page *p)
{
	int64_t t = t0 > c->free_at ? t0 : c->free_at;
	char local[32];

	snprintf(local, sizeof local, "10.0.1.1:80");
	gen_ready(c->nginx, t, FD_LISTEN, POLLIN);
	gen_accept(c->nginx, t + 1, FD_CLIENT, FD_LISTEN, local, p->client);
	gen_ready(c->nginx, t + 3, FD_CLIENT, POLLIN);
	gen_msg(c->nginx, t + 5, FD_CLIENT, IN, BT_MK_REQUEST, BT_PROTO_HTTP,
		120, 0, 0, 0, GEN_A(BT_AK_METHOD, p->method),
		GEN_A(BT_AK_TARGET, p->target), GEN_A(BT_AK_HOST, "shop.test"),
		0);
	c->conns++;
	if (p->static_file) {
		int64_t end = static_file(c, t, p);
		c->free_at = end + 5;
		return end;
	}
	gen_msg(c->nginx, t + 10, FD_FCGI, OUT, BT_MK_REQUEST, BT_PROTO_FASTCGI,
		600, BT_MF_WITNESS, 0, 1, GEN_A(BT_AK_METHOD, p->method),
		GEN_A(BT_AK_FCGI_SCRIPT, "/index.php"),
		GEN_A(BT_AK_FCGI_URI, p->target), 0);
	gen_msg(c->php, t + 15, FD_FCGI_IN, IN, BT_MK_REQUEST, BT_PROTO_FASTCGI,
		600, BT_MF_WITNESS, 0, 1, GEN_A(BT_AK_METHOD, p->method),
		GEN_A(BT_AK_FCGI_SCRIPT, "/index.php"),
		GEN_A(BT_AK_FCGI_URI, p->target), 0);
	int64_t u = t + 20;
	if (p->dns_name) {
		uint64_t cookie = 7000 + c->conns;
		gen_name_begin(c->php, u, cookie, p->dns_name);
		gen_name_end(c->php, u + p->dns_us, cookie, p->dns_result,
			     p->dns_result ? NULL : "10.0.2.9");
		u += p->dns_us + 5;
	}
	if (p->upstream_target) {
		char addr[32];
		snprintf(addr, sizeof addr, "10.0.1.1:%u", 40000 + c->conns);
		gen_tcp(c->php, u, FD_SEARCH, BT_CR_CONNECT, addr, "10.0.2.9:9200");
		gen_msg(c->php, u + 2, FD_SEARCH, OUT, BT_MK_REQUEST,
			BT_PROTO_HTTP, 200, 0, 0, 0, GEN_A(BT_AK_METHOD, "GET"),
			GEN_A(BT_AK_TARGET, p->upstream_target),
			GEN_A(BT_AK_HOST, "search.internal"), 0);
		gen_msg(c->php, u + 2 + p->upstream_us, FD_SEARCH, IN,
			BT_MK_REPLY, BT_PROTO_HTTP, 4000, 0, 200, 0, 0);
		gen_close(c->php, u + 3 + p->upstream_us, FD_SEARCH);
		u += p->upstream_us + 10;
	}
	for (int i = 0; i < p->nq; i++) {
		const struct demo_query *q = &p->q[i];
		gen_msg(c->php, u, FD_PG, OUT, BT_MK_REQUEST, BT_PROTO_PGSQL, 60,
			0, 0, 0, GEN_A(BT_AK_METHOD, "query"),
			GEN_A(BT_AK_SQL, q->sql), 0);
		gen_msg(c->pg, u + 5, FD_PG_IN, IN, BT_MK_REQUEST, BT_PROTO_PGSQL,
			60, 0, 0, 0, GEN_A(BT_AK_METHOD, "query"),
			GEN_A(BT_AK_SQL, q->sql), 0);
		gen_open(c->pg, u + 6, 30, "base/16384/2619");
		gen_close(c->pg, u + 7, 30);
		if (q->error)
			gen_msg(c->pg, u + 5 + q->us, FD_PG_IN, OUT, BT_MK_REPLY,
				BT_PROTO_PGSQL, 120, 0, 0, 0,
				GEN_A(BT_AK_ERROR, q->error), 0);
		else
			gen_msg(c->pg, u + 5 + q->us, FD_PG_IN, OUT, BT_MK_REPLY,
				BT_PROTO_PGSQL, 400, 0, 0, 0,
				GEN_A(BT_AK_TAG, "SELECT 1"), 0);
		gen_msg(c->php, u + 10 + q->us, FD_PG, IN, BT_MK_REPLY,
			BT_PROTO_PGSQL, q->error ? 120 : 400, 0, 0, 0,
			q->error ? BT_AK_ERROR : 0, q->error, 0);
		u += q->us + 15;
	}
	u += p->php_us;
	if (p->no_reply) {
		c->free_at = INT64_MAX / 2;
		return u;
	}
	gen_msg(c->php, u, FD_FCGI_IN, OUT, BT_MK_REPLY, BT_PROTO_FASTCGI, 3000,
		BT_MF_WITNESS, 0, 1, 0);
	gen_ready(c->nginx, u + 3, FD_FCGI, POLLIN);
	gen_msg(c->nginx, u + 5, FD_FCGI, IN, BT_MK_REPLY, BT_PROTO_FASTCGI, 3000,
		BT_MF_WITNESS, 0, 1, 0);
	gen_msg(c->nginx, u + 10, FD_CLIENT, OUT, BT_MK_REPLY, BT_PROTO_HTTP,
		3000, 0, (uint32_t)p->status, 0, 0);
	gen_close(c->nginx, u + 12, FD_CLIENT);
	c->free_at = u + 15;
	return u + 10;
}

int64_t demo_shop(struct gen *g, int nreq, int two_hosts)
{
	struct gen_host *web = gen_host(g, "web", 0, 0);
	struct gen_host *db = two_hosts ?
		gen_host(g, "db", 7000000000ll, 0) : web;
	struct demo_chain *ch[2] = { demo_chain(web, db, 0, 0),
				     demo_chain(web, db, 1, 0) };
	static const char *const statics[] = {
		"/static/logo.png", "/static/app.css", "/static/app.js" };
	static const char *const terms[] = { "lamp", "red chair", "desk" };
	int64_t end = 0;

	for (int k = 0; k < nreq; k++) {
		struct demo_chain *c = ch[k % 2];
		char target[128], client[32], sql[4][128], up[128];
		struct demo_query q[6];
		struct demo_page p = { .method = "GET", .target = target,
				       .client = client, .status = 200,
				       .q = q, .php_us = 60 };
		int kind = k % 20;

		snprintf(client, sizeof client, "203.0.113.%d:%d", 10 + k % 200,
			 30000 + k);
		memset(q, 0, sizeof q);
		if (kind <= 8 || kind == 19) {
			int id = 100 + (k * 37) % 50;
			snprintf(target, sizeof target, "/products/%d?ref=home%d", id, k % 5);
			snprintf(sql[0], sizeof sql[0],
				 "SELECT * FROM products WHERE id = %d", id);
			snprintf(sql[1], sizeof sql[1],
				 "SELECT name FROM categories WHERE id = %d", id % 7);
			q[0] = (struct demo_query){ sql[0], kind == 19 ? 5000 + k : 150 + (k * 37) % 200, NULL };
			q[1] = (struct demo_query){ sql[1], 80, NULL };
			p.nq = 2;
		} else if (kind <= 11) {
			snprintf(target, sizeof target, "%s", statics[kind - 9]);
			p.static_file = target;
		} else if (kind <= 13) {
			snprintf(target, sizeof target, "/img/banner-%d.jpg", k % 4);
			snprintf(sql[0], sizeof sql[0],
				 "SELECT data FROM images WHERE name = 'banner-%d.jpg'", k % 4);
			q[0] = (struct demo_query){ sql[0], 400, NULL };
			p.nq = 1;
		} else if (kind <= 15) {
			int user = 500 + k % 9;
			snprintf(target, sizeof target, "/cart?user=%d", user);
			snprintf(sql[0], sizeof sql[0],
				 "SELECT * FROM carts WHERE user_id = %d", user);
			q[0] = (struct demo_query){ sql[0], 90, NULL };
			q[1] = (struct demo_query){ sql[0], 90, NULL };
			for (int i = 0; i < 3; i++) {
				snprintf(sql[1 + i], sizeof sql[1 + i],
					 "SELECT price FROM products WHERE id = %d",
					 100 + (k + i * 13) % 50);
				q[2 + i] = (struct demo_query){ sql[1 + i], 70, NULL };
			}
			p.nq = 5;
		} else if (kind == 16) {
			p.method = "POST";
			snprintf(target, sizeof target, "/checkout");
			q[0] = (struct demo_query){
				"INSERT INTO orders (user_id, total) VALUES (501, 99.5)",
				120, "23505" };
			p.nq = 1;
			p.status = 500;
		} else {
			const char *term = terms[k % 3];
			snprintf(target, sizeof target, "/search?q=%s", term);
			snprintf(up, sizeof up, "/products/_search?q=%s", term);
			p.dns_name = "search.internal";
			p.dns_us = 40;
			p.upstream_target = up;
			p.upstream_us = 2000 + 300 * (k % 3);
			snprintf(sql[0], sizeof sql[0],
				 "SELECT * FROM products WHERE id IN (%d, %d, %d)",
				 100 + k % 50, 101 + k % 50, 102 + k % 50);
			q[0] = (struct demo_query){ sql[0], 200, NULL };
			p.nq = 1;
		}
		int64_t e = demo_request(c, (int64_t)k * 400 + 100, &p);
		if (e > end)
			end = e;
	}
	demo_chain_free(ch[0]);
	demo_chain_free(ch[1]);
	return end;
}
