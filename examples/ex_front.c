/*
 * ex_front.c - the fronts' command line (see ex_front.h).
 */
#include "config.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ex_front.h"

static void ex_front_help(const char *name, const char *what, unsigned flags,
			  int def_workers, int def_pool)
{
	printf("Usage: %s --port PORT --backend-port PORT --backend-unix PATH "
	       "[OPTION]...\n\n%s\n\n", name, what);
	printf(
"It speaks the examples' line protocol: a client sends \"REQ <id> <n>\",\n"
"the front makes n backend calls \"CALL <id> <k>\" (even k to the TCP\n"
"backend, odd k to the unix-socket backend), checks that every reply is\n"
"\"OK <id> <k>\" for its own id and k, and answers\n"
"\"RESP <id> <n> <checksum>\" (or \"ERR <id> <why>\" and closes).\n\n"
"Options:\n"
"  --port PORT           TCP port to listen on (required)\n"
"  --host ADDR           IPv4 address to listen on (default 127.0.0.1)\n"
"  --backend-port PORT   the TCP backend's port (required)\n"
"  --backend-host ADDR   the TCP backend's IPv4 address (default 127.0.0.1)\n"
"  --backend-unix PATH   the unix-socket backend (required)\n"
"  --timeout-ms MS       bound on a backend connect and on each backend\n"
"                        call (default 10000)\n"
"  --idle-ms MS          close a client that sends nothing for MS\n"
"                        (default 60000)\n");
	if (flags & EX_FRONT_WORKERS)
		printf("  --workers N           worker processes or threads "
		       "(default %d)\n", def_workers);
	if (flags & EX_FRONT_POOL)
		printf("  --pool N              most persistent connections to "
		       "each backend; a request\n"
		       "                        waits for a free one "
		       "(default %d)\n", def_pool);
	printf(
"  --pidfile FILE        write the pid to FILE once listening\n"
"  --help                this text\n\n"
"SIGTERM or SIGINT stops it; at exit it prints one line\n"
"\"%s[PID]: stats key=value...\" on stderr.  Errors go to stderr.\n"
"Exit status: 0 after a clean stop, 1 on a fatal error, 2 for a bad\n"
"command line.\n", name);
}

void ex_front_parse(int argc, char **argv, struct ex_front_opts *o,
		    const char *name, const char *what, unsigned flags,
		    int def_workers, int def_pool)
{
	enum { O_PORT = 256, O_HOST, O_BPORT, O_BHOST, O_BUNIX, O_TIMEOUT,
	       O_IDLE, O_WORKERS, O_POOL, O_PIDFILE, O_HELP };
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, O_PORT },
		{ "host", required_argument, NULL, O_HOST },
		{ "backend-port", required_argument, NULL, O_BPORT },
		{ "backend-host", required_argument, NULL, O_BHOST },
		{ "backend-unix", required_argument, NULL, O_BUNIX },
		{ "timeout-ms", required_argument, NULL, O_TIMEOUT },
		{ "idle-ms", required_argument, NULL, O_IDLE },
		{ "workers", required_argument, NULL, O_WORKERS },
		{ "pool", required_argument, NULL, O_POOL },
		{ "pidfile", required_argument, NULL, O_PIDFILE },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof *o);
	o->host = "127.0.0.1";
	o->backend.host = "127.0.0.1";
	o->backend.timeout_ms = 10000;
	o->idle_ms = 60000;
	o->workers = def_workers;
	o->pool = def_pool;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case O_PORT:
			o->port = (int)ex_opt_num("--port", optarg, 1, 65535);
			break;
		case O_HOST:
			o->host = optarg;
			break;
		case O_BPORT:
			o->backend.port = (int)ex_opt_num("--backend-port",
							  optarg, 1, 65535);
			break;
		case O_BHOST:
			o->backend.host = optarg;
			break;
		case O_BUNIX:
			o->backend.unix_path = optarg;
			break;
		case O_TIMEOUT:
			o->backend.timeout_ms = (int)ex_opt_num("--timeout-ms",
							optarg, 1, 3600000);
			break;
		case O_IDLE:
			o->idle_ms = (int)ex_opt_num("--idle-ms", optarg, 1,
						     3600000);
			break;
		case O_WORKERS:
			if (!(flags & EX_FRONT_WORKERS))
				goto bad;
			o->workers = (int)ex_opt_num("--workers", optarg, 1,
						     256);
			break;
		case O_POOL:
			if (!(flags & EX_FRONT_POOL))
				goto bad;
			o->pool = (int)ex_opt_num("--pool", optarg, 1, 1024);
			break;
		case O_PIDFILE:
			o->pidfile = optarg;
			break;
		case O_HELP:
			ex_front_help(name, what, flags, def_workers, def_pool);
			exit(0);
		default:
			goto bad;
		}
	}
	if (optind < argc) {
		ex_log("unexpected argument '%s' (try --help)", argv[optind]);
		exit(2);
	}
	if (!o->port || !o->backend.port || !o->backend.unix_path) {
		ex_log("--port, --backend-port and --backend-unix are required "
		       "(try --help)");
		exit(2);
	}
	return;
bad:
	ex_log("bad command line (try --help)");
	exit(2);
}

void ex_front_stats(const char *fmt, ...)
{
	char buf[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	ex_log("stats %s", buf);
}
