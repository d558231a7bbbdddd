/*
 * defaults.c - the protocol selection rules that apply when the user's
 * rules (BTRACE_RULES, BTRACE_CONF) name no processor for a channel.
 *
 * Syntax (DESIGN.md section 9, docs/protocols.md): one rule per line,
 * "PROTOCOL port N,M-K" (either end's TCP/UDP port), "PROTOCOL unix GLOB"
 * (the bound or connected path of a unix socket, fnmatch(3) without
 * FNM_PATHNAME, so "*" also matches "/"), or "PROTOCOL exe REGEX" (the
 * executable's path, PCRE2); "#" starts a comment.  The first matching
 * rule wins; a channel no rule matches is sniffed (bt_proto_sniff).
 *
 * Ports: 80 and 8000-8099 (8080, 8000 and 8008 are the usual alternative
 * and development ports) are HTTP.  443 and 8443 carry TLS: no processor
 * can read them, so no rule names them and sniffing finds nothing there.
 * 5432 and PostgreSQL's unix socket ".s.PGSQL.<port>" are PostgreSQL;
 * 53 (TCP and UDP) is DNS; 9000 (php-fpm's default TCP port) and the unix
 * sockets of php-fpm and mod_fcgid are FastCGI.  CGI programs under
 * /usr/lib/cgi-bin talk one-shot over their stdin and stdout.  6379 and
 * unix sockets named like "redis.sock" or "redis-server.sock" are Redis.
 * 3306 and the unix socket "mysqld.sock" (/run/mysqld/mysqld.sock,
 * Debian's) are MySQL/MariaDB.
 */
#include "config.h"

#include "btrace/proto.h"

const char bt_default_rules[] =
	"# protocol   what it matches\n"
	"http         port 80,8000-8099\n"
	"postgresql   port 5432\n"
	"postgresql   unix */.s.PGSQL.*\n"
	"dns          port 53\n"
	"fastcgi      port 9000\n"
	"fastcgi      unix *fpm*.sock\n"
	"fastcgi      unix *php*.sock\n"
	"fastcgi      unix */fcgid/sock/*\n"
	"oneshot      exe ^/usr/lib/cgi-bin/\n"
	"redis        port 6379\n"
	"redis        unix *redis*.sock\n"
	"mysql        port 3306\n"
	"mysql        unix */mysqld.sock\n";
