# tests/lib/clickhouse.sh - Debian's clickhouse-server (18.16) started by
# hand in $T/ch with its own configuration (docs/clickhouse.md, "Running
# ClickHouse by hand"), never as a service; for tests/report/clickhouse.sh
# and tests/testbeds/tb-follow.sh (sourced after core.sh).
#
#   bp_ch_start      start it; CH is its HTTP URL, CH_PID its process
#                    (killed by the EXIT trap as every tracked process)
#   bp_ch_mutations_wait LABEL DATABASE
#                    until it has applied every mutation of DATABASE (30 s)

CHSERVER=$(command -v clickhouse-server || echo /usr/sbin/clickhouse-server)

# bp_ch_start: ClickHouse in $T/ch on two free loopback ports; CH is the
# HTTP URL.  Users: default (no password), ro (read-only), bpw (password
# s3cret).
bp_ch_start() {
	[ -x "$CHSERVER" ] ||
		bp_fail "no clickhouse-server (apt-get install clickhouse-server clickhouse-client)"
	command -v curl >/dev/null || bp_fail "no curl (apt-get install curl)"
	local d=$T/ch
	mkdir -p "$d/data" "$d/tmp" "$d/user_files" "$d/format_schemas" "$d/log" ||
		bp_fail "mkdir $d"
	bp_free_port CH_HTTP
	bp_free_port CH_TCP
	cat >"$d/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <logger>
    <level>warning</level>
    <log>$d/log/server.log</log>
    <errorlog>$d/log/server.err.log</errorlog>
  </logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>$CH_HTTP</http_port>
  <tcp_port>$CH_TCP</tcp_port>
  <path>$d/data/</path>
  <tmp_path>$d/tmp/</tmp_path>
  <user_files_path>$d/user_files/</user_files_path>
  <format_schema_path>$d/format_schemas/</format_schema_path>
  <users_config>$d/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
  <max_concurrent_queries>20</max_concurrent_queries>
</yandex>
EOF
	cat >"$d/users.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <profiles>
    <default><max_memory_usage>2000000000</max_memory_usage></default>
    <readonly><readonly>1</readonly></readonly>
  </profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></default>
    <ro><password></password><networks><ip>127.0.0.1</ip></networks>
      <profile>readonly</profile><quota>default</quota></ro>
    <bpw><password>s3cret</password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></bpw>
  </users>
  <quotas><default></default></quotas>
</yandex>
EOF
	"$CHSERVER" --config-file="$d/config.xml" >"$d/log/stdout" 2>&1 &
	CH_PID=$!
	bp_track "$CH_PID"
	local i=0
	until curl -fsS -m 2 "http://127.0.0.1:$CH_HTTP/ping" >/dev/null 2>&1; do
		i=$((i + 1))
		bp_running "$CH_PID" ||
			bp_fail "clickhouse-server exited: $(tail -n 5 "$d/log/stdout" "$d/log/server.err.log" 2>/dev/null)"
		[ "$i" -gt 300 ] && bp_fail "clickhouse-server did not answer /ping in 30 s"
		sleep 0.1
	done
	CH=http://127.0.0.1:$CH_HTTP/
	bp_note "ClickHouse $(curl -sS -m 5 "$CH" --data-binary 'SELECT version()') on port $CH_HTTP, ready in $((i / 10)).$((i % 10)) s"
}


bp_ch_mutations_wait() {
	local i=0
	until [ "$(curl -sS -m 30 "$CH" --data-binary "SELECT count() FROM system.mutations WHERE database = '$2' AND is_done = 0")" = 0 ]; do
		i=$((i + 1))
		[ $i -le 300 ] || bp_fail "$1: ClickHouse's mutations not done in 30 s: $(curl -sS -m 30 "$CH" --data-binary "SELECT table, command, parts_to_do FROM system.mutations WHERE database = '$2' AND is_done = 0")"
		sleep 0.1
	done
}
