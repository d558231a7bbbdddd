/*
 * rawsys - a client that does its network I/O past libc, as a Go program
 * does: socket, connect, write and read are made with syscall(2) by
 * number, never through the C library's wrappers, so a preloaded tracer
 * sees none of it.  bp-logd must name it (tests/integ/rawsys.sh).
 *
 *   rawsys [--libc] PORT SECONDS
 *
 * With --libc the same calls go through the C library (socket, connect,
 * write, read, nanosleep): the control, which must not be named.
 * Connects to 127.0.0.1:PORT and, every 100 ms for SECONDS seconds,
 * writes a line and reads the server's answer (a line echoed back) on the
 * one connection.  Prints "rawsys: N round trips" and exits 0, or 1 with
 * a message on the first failure.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int use_libc;

/* The calls, by number or through libc. */
static long sys_socket(void)
{
	return use_libc ? socket(AF_INET, SOCK_STREAM, 0)
			: syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
}

static long sys_connect(long fd, const struct sockaddr_in *sa)
{
	return use_libc ? connect((int)fd, (const struct sockaddr *)sa, sizeof *sa)
			: syscall(SYS_connect, fd, sa, sizeof *sa);
}

static long sys_write(long fd, const void *b, size_t n)
{
	return use_libc ? write((int)fd, b, n) : syscall(SYS_write, fd, b, n);
}

static long sys_read(long fd, void *b, size_t n)
{
	return use_libc ? read((int)fd, b, n) : syscall(SYS_read, fd, b, n);
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa;
	double end;
	long fd, n = 0;

	if (argc == 4 && !strcmp(argv[1], "--libc")) {
		use_libc = 1;
		argv++;
		argc--;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: rawsys [--libc] PORT SECONDS\n");
		return 2;
	}
	end = now() + atof(argv[2]);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)atoi(argv[1]));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = sys_socket();
	if (fd < 0 || sys_connect(fd, &sa) < 0) {
		perror("rawsys: socket/connect");
		return 1;
	}
	while (now() < end) {
		char out[64], in[64];
		int len = snprintf(out, sizeof out, "ping %ld\n", n);
		long got = 0, r;

		if (sys_write(fd, out, (size_t)len) != len) {
			perror("rawsys: write");
			return 1;
		}
		while (got < len) {
			r = sys_read(fd, in + got, sizeof in - (size_t)got);
			if (r <= 0) {
				fprintf(stderr, "rawsys: read: %s\n",
					r < 0 ? "error" : "end of file");
				return 1;
			}
			got += r;
		}
		if (memcmp(in, out, (size_t)len)) {
			fprintf(stderr, "rawsys: answer %.*s is not %.*s\n",
				(int)got, in, len, out);
			return 1;
		}
		n++;
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		if (use_libc)
			nanosleep(&ts, NULL);
		else
			syscall(SYS_nanosleep, &ts, NULL);
	}
	if (use_libc)
		close((int)fd);
	else
		syscall(SYS_close, fd);
	printf("rawsys: %ld round trips\n", n);
	return 0;
}
