#!/bin/sh
# tb.cgi - the CGI program of the testbeds (fcgiwrap behind nginx forks and
# execs it for every request).  GET /cgi-bin/tb.cgi?id=ID&n=N[&dns=1]:
# the same recipe as app.php and tbapp.py, done by further processes:
# psql runs the N statements (one process, one connection, one -c each),
# "getent ahosts" resolves r-ID.test (glibc's getaddrinfo).  Answers
# "id ID", one line per operation ("sql TEXT", "name NAME ADDR"), "end ID".
# The FastCGI parameters (the CGI's whole environment under fcgiwrap) name
# the database (TB_PG_HOST, TB_PG_PORT) and psql (TB_PSQL, default psql).
set -u
id= n=0 dns=
for kv in $(printf '%s' "${QUERY_STRING:-}" | tr '&' ' '); do
	case $kv in
	id=*) id=${kv#id=} ;;
	n=*) n=${kv#n=} ;;
	dns=*) dns=${kv#dns=} ;;
	esac
done
case $id in
'' | *[!a-z0-9]*) bad=1 ;;
*) bad= ;;
esac
case $n in
[0-5]) ;;
*) bad=1 ;;
esac
if [ -n "$bad" ]; then
	printf 'Status: 400 Bad Request\r\nContent-Type: text/plain\r\n\r\n'
	echo "bad request: id must be [a-z0-9]{1,40}, n 0..5"
	exit 0
fi
set -- \
	"SELECT v FROM tb_kv WHERE k = '$id'" \
	"INSERT INTO tb_hits (id, n) VALUES ('$id', 1)" \
	"SELECT v FROM tb_kv WHERE k = '$id'" \
	"UPDATE tb_hits SET n = n + 1 WHERE id = '$id'" \
	"SELECT n FROM tb_hits WHERE id = '$id'"
i=0 out="id $id"
for q in "$@"; do
	[ "$i" -lt "$n" ] || break
	i=$((i + 1))
	out="$out
sql $q"
done
if [ "$n" -gt 0 ]; then
	# psql: one -c per statement, in order, each its own query
	case $n in
	1) set -- -c "$1" ;;
	2) set -- -c "$1" -c "$2" ;;
	3) set -- -c "$1" -c "$2" -c "$3" ;;
	4) set -- -c "$1" -c "$2" -c "$3" -c "$4" ;;
	5) set -- -c "$1" -c "$2" -c "$3" -c "$4" -c "$5" ;;
	esac
	if ! err=$("${TB_PSQL:-psql}" -X -q -A -t -v ON_ERROR_STOP=1 -h "$TB_PG_HOST" \
		-p "$TB_PG_PORT" -U tb -d tb "$@" 2>&1 >/dev/null); then
		printf 'Status: 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\n'
		echo "psql failed: $err"
		exit 0
	fi
fi
if [ -n "$dns" ]; then
	addr=$(getent ahosts "r-$id.test" | awk 'NR == 1 { print $1 }')
	out="$out
name r-$id.test ${addr:-error}"
fi
printf 'Content-Type: text/plain\r\n\r\n%s\nend %s\n' "$out" "$id"
