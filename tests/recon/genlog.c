/*
 * genlog.c - write a scripted three-tier workload as BorderPatrol logs, for
 * the bp-reconstruct command-line tests and throughput measurements.
 *
 *   genlog [-n REQUESTS] [-w WORKERS] [-3] [-f] [-c] [-L PID[:K]] [-N] DIR
 *
 * Untraced clients call a front server (thread per connection, WORKERS
 * threads, each with a persistent connection to the app tier), which calls
 * an app server (one thread per front connection, each with a persistent
 * PostgreSQL connection), which queries a database (one thread per
 * connection) that opens a file per query.  Request k starts at k * 100 us.
 * With -3 the tiers run on three hosts whose monotonic clocks differ by
 * seconds and whose wall clocks are off by up to 1.5 s; otherwise all on
 * host "one".  Each request is 13 records.  With -f the front server forks
 * a child per request that answers it (a process image and a stream per
 * request, as with CGI).  With -c the app connects to the database anew
 * for each request (as nginx connects to php-fpm), on connections the
 * database accepts and both close after the answer.  With -L PID[:K]
 * the records of process PID (100 front, 200 app, 300 database) from
 * request K on (0: all) are written after all the others of its host,
 * from a segment of their own whose number is printed ("late N"): a live
 * test copies those later, as records bp-logd drained late.  With -N the
 * wall clocks read now (when genlog runs) at the scenario's start, not
 * 2026-01-01: a live test's logs.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "btrace/proto.h"
#include "gen.h"

#define MAXW 64
#define FD_IN(w)   (10 + (int)(w))     /* accepted connection */
#define FD_POOL(w) (80 + (int)(w))     /* connection to the next tier */
#define FD_FILE(w) (150 + (int)(w))
#define FD_DBC(w)  (214 + (int)(w))     /* -c: a connection per request */

int main(int argc, char **argv)
{
	long nreq = 1000, workers = 4;
	int three_hosts = 0, forks = 0, per_req = 0, ch, late_seg = -1;
	long late_pid = 0, late_k = 0;
	int now = 0;
	char *end;

	while ((ch = getopt(argc, argv, "n:w:3fcL:Nh")) != -1) {
		switch (ch) {
		case 'n': nreq = strtol(optarg, NULL, 10); break;
		case 'w': workers = strtol(optarg, NULL, 10); break;
		case '3': three_hosts = 1; break;
		case 'f': forks = 1; break;
		case 'c': per_req = 1; break;
		case 'N': now = 1; break;
		case 'L':
			late_pid = strtol(optarg, &end, 10);
			if (*end == ':')
				late_k = strtol(end + 1, &end, 10);
			if (*end || late_pid <= 0 || late_k < 0) {
				fprintf(stderr, "genlog: -L PID[:K], not %s\n", optarg);
				return 1;
			}
			break;
		default:
			fprintf(stderr, "usage: genlog [-n REQUESTS] [-w WORKERS] [-3] [-f] [-c] [-L PID[:K]] [-N] DIR\n");
			return 1;
		}
	}
	if (optind != argc - 1 || nreq < 1 || workers < 1 || workers > MAXW ||
	    (per_req && workers > 40)) {
		fprintf(stderr, "usage: genlog [-n REQUESTS] [-w WORKERS 1..%d, 1..40 with -c] [-3] [-f] [-c] [-L PID[:K]] [-N] DIR\n", MAXW);
		return 1;
	}

	struct gen *g = gen_new();
	/* -N: the scenario starts now */
	struct timespec ts;
	int64_t rs = 0;
	if (now && clock_gettime(CLOCK_REALTIME, &ts) == 0)
		rs = (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec - gen_epoch(0);
	struct gen_host *hf = gen_host(g, three_hosts ? "front" : "one", 0, rs);
	struct gen_host *ha = three_hosts ? gen_host(g, "app", 5000000000ll, rs + 250000000ll) : hf;
	struct gen_host *hd = three_hosts ? gen_host(g, "db", -3000000000ll, rs - 1500000000ll) : hf;
	struct gen_proc *pf = gen_proc(hf, 100, "/usr/sbin/frontd");
	struct gen_proc *pa = gen_proc(ha, 200, "/usr/bin/appd");
	struct gen_proc *pd = gen_proc(hd, 300, "/usr/lib/postgresql/15/bin/postgres");
	struct gen_thr *f[MAXW], *a[MAXW], *d[MAXW];

	for (long w = 0; w < workers; w++) {
		char fl[32], al[32], ad[32];
		f[w] = gen_thread(pf, 0, 100 + (uint32_t)w, 0, 0);
		a[w] = gen_thread(pa, 0, 200 + (uint32_t)w, 0, 0);
		d[w] = gen_thread(pd, 0, 300 + (uint32_t)w, 0, 0);
		if (w == 0) {
			gen_proc_start(f[0], 0, 1, 0, 0);
			gen_proc_start(a[0], 0, 1, 0, 0);
			gen_proc_start(d[0], 0, 1, 0, 0);
		}
		snprintf(fl, sizeof fl, "10.1.0.1:%ld", 41000 + w);
		snprintf(al, sizeof al, "10.1.0.2:%ld", 42000 + w);
		/* Threads of one process share its fds: each its own. */
		gen_tcp(f[w], 1, FD_POOL(w), BT_CR_CONNECT, fl, "10.1.0.2:8000");
		gen_tcp(a[w], 2, FD_IN(w), BT_CR_ACCEPT, "10.1.0.2:8000", fl);
		if (!per_req) {
			gen_tcp(a[w], 3, FD_POOL(w), BT_CR_CONNECT, al, "10.1.0.3:5432");
			snprintf(ad, sizeof ad, "%s", al);
			gen_tcp(d[w], 4, FD_IN(w), BT_CR_ACCEPT, "10.1.0.3:5432", ad);
		}
	}
	for (long k = 0; k < nreq; k++) {
		long w = k % workers;
		int64_t S = 100 + 100 * k;
		char target[48], client[32], sql[64], dbc[32];
		/* the app's end towards the database, the database's end */
		int apool = per_req ? FD_DBC(w) : FD_POOL(w);
		int din = per_req ? FD_DBC(w) : FD_IN(w);
		if (late_pid && k == late_k && late_k > 0)
			for (long x = 0; x < workers; x++)
				gen_cut(late_pid == 100 ? f[x] : late_pid == 200 ? a[x] : d[x]);
		snprintf(target, sizeof target, "/item/%ld?v=%ld", k % 97, k);
		snprintf(client, sizeof client, "10.0.%ld.%ld:%ld", (k >> 8) & 255,
			 k & 255, 20000 + k % 40000);
		snprintf(sql, sizeof sql, "SELECT * FROM items WHERE id = %ld", k % 97);

		gen_tcp(f[w], S, FD_IN(w), BT_CR_ACCEPT, "10.1.0.1:80", client);
		gen_msg(f[w], S + 5, FD_IN(w), BT_DIR_IN, BT_MK_REQUEST, BT_PROTO_HTTP,
			90, 0, 0, 0, GEN_A(BT_AK_METHOD, "GET"),
			GEN_A(BT_AK_TARGET, target), 0);
		gen_msg(f[w], S + 10, FD_POOL(w), BT_DIR_OUT, BT_MK_REQUEST, BT_PROTO_HTTP,
			120, 0, 0, 0, GEN_A(BT_AK_METHOD, "GET"),
			GEN_A(BT_AK_TARGET, target), 0);
		gen_msg(a[w], S + 40, FD_IN(w), BT_DIR_IN, BT_MK_REQUEST, BT_PROTO_HTTP,
			120, 0, 0, 0, GEN_A(BT_AK_METHOD, "GET"),
			GEN_A(BT_AK_TARGET, target), 0);
		if (per_req) {
			snprintf(dbc, sizeof dbc, "10.1.0.2:%ld", 43000 + k % 20000);
			gen_tcp(a[w], S + 45, apool, BT_CR_CONNECT, dbc, "10.1.0.3:5432");
			gen_tcp(d[w], S + 47, din, BT_CR_ACCEPT, "10.1.0.3:5432", dbc);
		}
		gen_msg(a[w], S + 50, apool, BT_DIR_OUT, BT_MK_REQUEST, BT_PROTO_PGSQL,
			60, 0, 0, 0, GEN_A(BT_AK_SQL, sql), 0);
		gen_msg(d[w], S + 80, din, BT_DIR_IN, BT_MK_REQUEST, BT_PROTO_PGSQL,
			60, 0, 0, 0, GEN_A(BT_AK_SQL, sql), 0);
		gen_open(d[w], S + 85, FD_FILE(w), "base/16384/2619");
		gen_msg(d[w], S + 100, din, BT_DIR_OUT, BT_MK_REPLY, BT_PROTO_PGSQL,
			400, 0, 0, 0, GEN_A(BT_AK_TAG, "SELECT 1"), 0);
		gen_msg(a[w], S + 130, apool, BT_DIR_IN, BT_MK_REPLY, BT_PROTO_PGSQL,
			400, 0, 0, 0, 0);
		if (per_req) {
			gen_close(a[w], S + 132, apool);
			gen_close(d[w], S + 133, din);
		}
		gen_msg(a[w], S + 140, FD_IN(w), BT_DIR_OUT, BT_MK_REPLY, BT_PROTO_HTTP,
			900, 0, 200, 0, 0);
		gen_msg(f[w], S + 170, FD_POOL(w), BT_DIR_IN, BT_MK_REPLY, BT_PROTO_HTTP,
			900, 0, 200, 0, 0);
		if (forks) {
			/* A child writes the reply on the inherited socket. */
			uint32_t child = 100000 + (uint32_t)k;
			struct gen_proc *cp = gen_fork(f[w], S + 172, child, NULL);
			struct gen_thr *ct = gen_thread(cp, S + 173, child, 0, 0);
			gen_proc_start(ct, S + 173, 100, 100 + (uint32_t)w,
				       BT_PF_FORKED);
			gen_open(ct, S + 175, FD_FILE(w), "/srv/www/page.tpl");
			gen_msg(ct, S + 180, FD_IN(w), BT_DIR_OUT, BT_MK_REPLY,
				BT_PROTO_HTTP, 950, 0, 200, 0, 0);
			gen_close(ct, S + 181, FD_IN(w));
			gen_thread_exit(ct, S + 182);
		} else {
			gen_msg(f[w], S + 180, FD_IN(w), BT_DIR_OUT, BT_MK_REPLY,
				BT_PROTO_HTTP, 950, 0, 200, 0, 0);
		}
		gen_close(f[w], S + 185, FD_IN(w));
	}
	struct gen_write_opts o = { .block_bytes = 65536, .blocks_per_seg = 64,
				    .late_pid = (uint32_t)late_pid,
				    .late_from = late_k ? 100 + 100 * late_k : 0,
				    .late_seg = &late_seg };
	int files = gen_write(g, argv[optind], &o);
	gen_free(g);
	if (files < 0) {
		perror("genlog: writing the logs");
		return 1;
	}
	if (late_pid)
		printf("late %d\n", late_seg);
	return 0;
}
