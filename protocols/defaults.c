/*
 * defaults.c - the built-in protocol selection rules, applied after the
 * user's (BTRACE_RULES / BTRACE_CONF).  Syntax: DESIGN section 9.
 */
#include "config.h"

extern const char bt_default_rules[];

const char bt_default_rules[] =
	"# built-in defaults\n";
