/*
 * conf.h - configuration from the environment and protocol selection rules
 * (conf.c).
 */
#ifndef BT_CONF_H
#define BT_CONF_H

#include "core.h"

/* ---- configuration (conf.c) ------------------------------------------- */

enum bt_rule_kind { BT_RK_PORT = 1, BT_RK_UNIX = 2, BT_RK_EXE = 3 };

struct bt_rule {
	uint8_t  kind;              /* enum bt_rule_kind */
	uint8_t  proto;             /* enum bt_proto_id; 0 = "none" */
	uint16_t nranges;
	uint16_t lo[16], hi[16];    /* port ranges */
	uint8_t  glob;              /* unix: the pattern has *, ?, [ or \\ */
	char    *pattern;           /* unix glob or exe regex source */
	void    *re;                /* pcre2_code * for exe rules */
};

struct bt_conf {
	int      enabled;           /* 0: pure pass-through */
	int      isolation;         /* event isolation on */
	int      epq;               /* epoll batches queued (BTRACE_EPOLL_QUEUE) */
	int      child_lazy;        /* a forked child (1), and an exec'd image
				       (2), does not wait for bp-logd
				       (BTRACE_CHILD_LAZY) */
	int      follow;            /* keep LD_PRELOAD/BTRACE_* across exec */
	uint32_t slot_size;         /* ring slot bytes (power of two) */
	char     logd_path[108];
	char     spool_dir[PATH_MAX];
	char     lib_path[PATH_MAX];/* this library, for LD_PRELOAD */
	struct bt_rule *rules;
	unsigned nrules;
	unsigned exe_proto;         /* processor for pipes/inherited fds by exe */
	unsigned redact;            /* BT_RD_* from BTRACE_REDACT */
	char     unread_path[PATH_MAX]; /* BTRACE_UNREAD (bp-run's note
					   file), "" when unset */
};
BT_HIDDEN extern struct bt_conf bt_conf;

/* Read BTRACE_* from the environment; parse rules.  Idempotent. */
BT_HIDDEN void bt_conf_init(void);
/*
 * A channel could not be read (WHY: 't' TLS inside the program, 'u' no
 * processor recognised it, 'l' its processor lost track): append that one
 * byte to BTRACE_UNREAD, the file bp-run reads when its program exits to
 * say so in one line.  Nothing without BTRACE_UNREAD; at most 4096 notes
 * a process; errno kept.
 */
BT_HIDDEN void bt_unread_note(char why);
/* Parse rules text (DESIGN section 9) into *OUT; returns count or -EINVAL
 * (ERRLINE gets the bad line number). */
BT_HIDDEN int bt_rules_parse(const char *text, int semicolons,
			     struct bt_rule **out, unsigned *n, int *errline);
/* Processor id for a channel by the rules (0 none), *HOW set. */
BT_HIDDEN int bt_rules_match(uint16_t lport, uint16_t rport, int has_ports,
			     const char *unix_path, int *how);
/* Does exe rule R match the program path EXE (regex; tests use it too)? */
BT_HIDDEN int bt_rule_exe_match(const struct bt_rule *r, const char *exe);

#endif /* BT_CONF_H */
