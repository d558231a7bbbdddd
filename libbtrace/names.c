/*
 * names.c - name resolution done inside libc, traced at the API level.
 *
 * glibc's resolver talks to the DNS server through its own internal
 * send/recv, which no wrapper sees; so getaddrinfo, getnameinfo and the
 * gethostbyname family are recorded as NAME_BEGIN / NAME_END around the
 * call: a DNS client span of the thread's current request.  flags: 1
 * getaddrinfo, 2 gethostbyname(_r), 3 gethostbyname2(_r), 4 getnameinfo,
 * plus the address family << 8.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>

#include "bt.h"
#include "impl.h"

static uint64_t next_cookie(void)
{
	static uint64_t counter;
	return ((uint64_t)(uint32_t)bt_proc_gettid() << 32) |
	       (__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) & 0xffffffffu);
}

static void name_begin(uint64_t cookie, uint32_t flags, const char *name,
		       const char *service)
{
	struct bt_event ev;

	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_NAME_BEGIN;
	ev.cookie = cookie;
	ev.flags = flags;
	ev.str = name;
	ev.str_len = name ? (uint32_t)strlen(name) : 0;
	ev.str2 = service;
	ev.str2_len = service ? (uint32_t)strlen(service) : 0;
	bt_emit(&ev);
}

static void name_end(uint64_t cookie, long result, const char *addr)
{
	struct bt_event ev;

	memset(&ev, 0, sizeof ev);
	ev.type = BT_EV_NAME_END;
	ev.cookie = cookie;
	ev.result = result;
	ev.str = addr;
	ev.str_len = addr ? (uint32_t)strlen(addr) : 0;
	bt_emit(&ev);
}

static const char *fmt_sa(const struct sockaddr *sa, char *buf, size_t len)
{
	buf[0] = 0;
	if (!sa)
		return buf;
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
			  buf, (socklen_t)len);
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr,
			  buf, (socklen_t)len);
	return buf;
}

static const char *fmt_he(const struct hostent *he, char *buf, size_t len)
{
	buf[0] = 0;
	if (he && he->h_addr_list && he->h_addr_list[0])
		inet_ntop(he->h_addrtype, he->h_addr_list[0], buf, (socklen_t)len);
	return buf;
}

int bt_getaddrinfo(const char *node, const char *service,
		   const struct addrinfo *hints, struct addrinfo **res)
{
	uint64_t c;
	char a[INET6_ADDRSTRLEN];
	int r, e;

	if (!bt_enter() || bt_paused()) {
		r = REAL(getaddrinfo)(node, service, hints, res);
		bt_leave_pass();
		return r;
	}
	c = next_cookie();
	name_begin(c, 1u | (uint32_t)(hints ? hints->ai_family : 0) << 8, node,
		   service);
	r = REAL(getaddrinfo)(node, service, hints, res);
	e = errno;
	name_end(c, r, r == 0 && res && *res ? fmt_sa((*res)->ai_addr, a, sizeof a)
					     : NULL);
	bt_leave();
	errno = e;
	return r;
}

int bt_getnameinfo(const struct sockaddr *sa, socklen_t salen, char *host,
		   socklen_t hl, char *serv, socklen_t sl, int flags)
{
	uint64_t c;
	char a[INET6_ADDRSTRLEN];
	int r, e;

	/* numeric conversions do no lookup: not a DNS call */
	if ((flags & NI_NUMERICHOST) || !host || !bt_enter() || bt_paused()) {
		r = REAL(getnameinfo)(sa, salen, host, hl, serv, sl, flags);
		if (!((flags & NI_NUMERICHOST) || !host))
			bt_leave_pass();
		return r;
	}
	c = next_cookie();
	name_begin(c, 4u | (uint32_t)(sa ? sa->sa_family : 0) << 8,
		   fmt_sa(sa, a, sizeof a), NULL);
	r = REAL(getnameinfo)(sa, salen, host, hl, serv, sl, flags);
	e = errno;
	name_end(c, r, r == 0 ? host : NULL);
	bt_leave();
	errno = e;
	return r;
}

/* WITH_AF: the program called gethostbyname2 (AF counts), else
 * gethostbyname. */
struct hostent *bt_gethostbyname2(const char *name, int af, int with_af)
{
	struct hostent *he;
	char a[INET6_ADDRSTRLEN];
	uint64_t c;
	int e;

	if (!bt_enter() || bt_paused()) {
		he = with_af ? REAL(gethostbyname2)(name, af)
			     : REAL(gethostbyname)(name);
		bt_leave_pass();
		return he;
	}
	c = next_cookie();
	name_begin(c, (with_af ? 3u : 2u) |
		      (uint32_t)(with_af ? af : AF_INET) << 8, name, NULL);
	he = with_af ? REAL(gethostbyname2)(name, af)
		     : REAL(gethostbyname)(name);
	e = errno;
	name_end(c, he ? 0 : h_errno, fmt_he(he, a, sizeof a));
	bt_leave();
	errno = e;
	return he;
}

/* WITH_AF: gethostbyname2_r, else gethostbyname_r. */
int bt_gethostbyname2_r(const char *name, int af, struct hostent *ret,
			char *buf, size_t len, struct hostent **res, int *herr,
			int with_af)
{
	char a[INET6_ADDRSTRLEN];
	uint64_t c;
	int r, e;

	if (!bt_enter() || bt_paused()) {
		r = with_af ? REAL(gethostbyname2_r)(name, af, ret, buf, len,
						     res, herr)
			: REAL(gethostbyname_r)(name, ret, buf, len, res, herr);
		bt_leave_pass();
		return r;
	}
	c = next_cookie();
	name_begin(c, (with_af ? 3u : 2u) |
		      (uint32_t)(with_af ? af : AF_INET) << 8, name, NULL);
	r = with_af ? REAL(gethostbyname2_r)(name, af, ret, buf, len, res,
					     herr)
		: REAL(gethostbyname_r)(name, ret, buf, len, res, herr);
	e = errno;
	name_end(c, r ? r : (res && *res ? 0 : (herr ? *herr : -1)),
		 fmt_he(res ? *res : NULL, a, sizeof a));
	bt_leave();
	errno = e;
	return r;
}
