#!/bin/bash
# untraced.sh - every example architecture, untraced, at client concurrency
# 1, 8 and 64 with pipelining depth 4: the client's verification passes,
# the servers survive and stop cleanly, and each front behaves as its
# architecture says (threads, processes, requests in progress at once,
# pooled backend connections, requests waiting for one).  Then each front
# meets a backend that corrupts some replies: the front must detect the
# mixups and the client must fail, which shows the verification can fail.
. "$(dirname "$0")/lib.sh"
bp_init untraced

# bp_arch_running ARCH: checks on the live front.
bp_arch_running() {
	local arch=$1 pid=${BP_PID[front]} n kid
	case $arch in
	epoll | libevent)
		n=$(bp_threads "$pid")
		[ "$n" = 1 ] || bp_fail "ex-$arch runs $n threads, not 1"
		;;
	pool)
		n=$(bp_threads "$pid")
		[ "$n" = 5 ] || bp_fail "ex-pool runs $n threads, not 1 + 4 workers"
		;;
	prefork)
		n=$(bp_children "$pid" ex-prefork)
		[ "$n" = 4 ] || bp_fail "ex-prefork has $n worker processes, not 4"
		[ "$(bp_threads "$pid")" = 1 ] ||
			bp_fail "the ex-prefork parent is not single-threaded"
		;;
	threads)
		;;  # its threads come and go with connections: see the stats
	esac
}

# bp_arch_stats ARCH: checks on the stats the stopped front printed.
bp_arch_stats() {
	local arch=$1 want=$((3 * BP_REQUESTS)) v
	v=$(bp_stat front requests)
	[ "$v" = "$want" ] || bp_fail "ex-$arch answered $v requests, not $want"
	case $arch in
	threads)
		v=$(bp_stat front max_threads)
		[ "$v" -ge 8 ] || bp_fail "ex-threads had at most $v connection" \
			"threads at once with 64 client connections"
		;;
	prefork)
		v=$(bp_stat_lines front 'stats worker ')
		[ "$v" = 4 ] || bp_fail "$v ex-prefork workers reported, not 4"
		v=$(bp_stat_lines front 'stats worker conns=[1-9]')
		[ "$v" -ge 2 ] || bp_fail "only $v ex-prefork worker(s) served"
		v=$(bp_stat front backend_conns)
		[ "$v" -le 8 ] || bp_fail "ex-prefork workers opened $v backend" \
			"connections: not persistent (at most 2 each expected)"
		;;
	pool)
		v=$(bp_stat front workers_used)
		[ "$v" -ge 2 ] || bp_fail "only $v ex-pool worker(s) served"
		v=$(bp_stat front backend_conns)
		[ "$v" -le 4 ] || bp_fail "ex-pool opened $v backend connections" \
			"with a pool of 2 per backend"
		v=$(bp_stat front pool_waits)
		[ "$v" -gt 0 ] || bp_fail "no ex-pool worker ever waited for a" \
			"pooled backend connection"
		;;
	epoll | libevent)
		v=$(bp_stat front max_inflight)
		[ "$v" -ge 8 ] || bp_fail "ex-$arch had at most $v requests in" \
			"progress at once with 64 client connections"
		v=$(bp_stat front batched_reads)
		[ "$v" -gt 0 ] || bp_fail "ex-$arch never read two pipelined" \
			"requests in one read pass: the pattern event isolation" \
			"must split was not exercised"
		v=$(bp_stat front backend_conns)
		[ "$v" -le 4 ] || bp_fail "ex-$arch opened $v backend connections" \
			"with a pool of 2 per backend"
		v=$(bp_stat front pool_waits)
		[ "$v" -gt 0 ] || bp_fail "no ex-$arch request ever waited for a" \
			"pooled backend connection"
		;;
	esac
}

# bp_check_truth DIR: the truth file lists every request once.
bp_check_truth() {
	local f=$1/truth n u
	n=$(wc -l <"$f")
	u=$(awk 'NF == 2 && $2 ~ /^[0-4]$/ { print $1 }' "$f" | sort -u | wc -l)
	[ "$n" = "$BP_REQUESTS" ] && [ "$u" = "$n" ] ||
		bp_fail "$f: $n lines, $u well-formed unique ids," \
			"want $BP_REQUESTS of each"
}

for arch in threads prefork pool epoll libevent; do
	dir=$T/$arch
	mkdir -p "$dir"
	POOL=2
	BACKEND_OPTS=()
	bp_free_port BACKEND_PORT
	bp_free_port FRONT_PORT
	bp_start_servers "$dir" "$arch"
	for c in 1 8 64; do
		bp_client "$dir" "$c" 4 ||
			bp_fail "$arch c=$c: the client failed: $(cat "$dir/client.out")"
		bp_check_truth "$dir"
		bp_alive front
		bp_alive backend
		bp_arch_running "$arch"
		bp_note "$arch c=$c d=4: $(cat "$dir/client.out")"
	done
	bp_stop front
	bp_stop backend
	bp_arch_stats "$arch"
	bp_note "$arch: $(grep -h ': stats ' "$T/front.log" | sed 's/.*: stats //' |
		tr '\n' ' ')"
	mv "$T/front.log" "$dir/front.log"
	mv "$T/backend.log" "$dir/backend.log"

	# A backend that answers every 7th call for another id.
	BACKEND_OPTS=(--corrupt-every 7)
	bp_free_port BACKEND_PORT
	bp_free_port FRONT_PORT
	bp_start_servers "$dir" "$arch"
	if bp_client "$dir" 8 4; then
		bp_fail "$arch: the client passed although the backend" \
			"corrupted replies: $(cat "$dir/client.out")"
	fi
	grep -q 'mixup' "$T/front.log" ||
		bp_fail "ex-$arch did not report the backend's mixups"
	bp_alive front
	bp_stop front
	bp_stop backend
	bp_note "$arch with a corrupting backend: client failed as it must:" \
		"$(cat "$dir/client.out")"
	mv "$T/front.log" "$dir/front-corrupt.log"
	mv "$T/backend.log" "$dir/backend-corrupt.log"
done
echo "PASS: untraced"
