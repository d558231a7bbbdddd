# tests/lib/logd.sh - the tracing tools of the tests (bash): bp-logd started
# and stopped the one way, the tools found in the build tree, the prefix
# that runs a program traced.  Needs tests/lib/core.sh (sourced here).
#
#   bp_find_tool NAME        its path in the build tree, or nothing
#   bp_require_tracing       BP_LOGD BP_RECONSTRUCT BP_RUN BP_SHIM BP_DUMP;
#                            fails (never skips) when one is missing
#   bp_logd_start [-n NAME] [-s SOCKET] [-l LOGDIR] [-w PREFIXVAR] DIR
#                 [BP-LOGD OPTIONS...]
#                            bp-logd (bp_start NAME, default logd) writing
#                            LOGDIR (default DIR/logs) on SOCKET (default
#                            DIR/logd.sock), pidfile DIR/NAME.pid, its
#                            stderr appended to $BP_LOGDIR/NAME.log; run
#                            under the command prefix in the array named
#                            PREFIXVAR (a namespace); waits (10 s) for the
#                            pidfile and the socket.  Sets BP_LOGD_SOCK and
#                            BP_LOGD_PID.
#   bp_logd_stop [NAME]      bp_stop NAME (default logd): SIGTERM, exit 0
#   bp_trace_prefix SOCKET RULES ISOLATION   BP_PREFIX: run a program
#                            traced (bp-run, else LD_PRELOAD)
. "$(dirname "${BASH_SOURCE[0]}")/core.sh"

# bp_find_tool NAME: its path in the build tree, or nothing.
bp_find_tool() {
	local d
	for d in "$top_builddir" "$top_builddir/tools" "$top_builddir/logd" \
		 "$top_builddir/reconstruct"; do
		if [ -x "$d/$1" ] && [ -f "$d/$1" ]; then
			echo "$d/$1"
			return 0
		fi
	done
}

# bp_find_tools: BP_LOGD, BP_RECONSTRUCT, BP_RUN, BP_DUMP (empty when not
# built) and BP_SHIM (libbtrace.so).
bp_find_tools() {
	local d
	BP_LOGD=$(bp_find_tool bp-logd)
	BP_RECONSTRUCT=$(bp_find_tool bp-reconstruct)
	BP_RUN=$(bp_find_tool bp-run)
	BP_DUMP=$(bp_find_tool bp-dump)
	BP_SHIM=""
	for d in "$top_builddir/.libs" "$top_builddir/libbtrace/.libs"; do
		[ -f "$d/libbtrace.so" ] && { BP_SHIM=$d/libbtrace.so; break; }
	done
}

# bp_require_tracing: find bp-logd, bp-reconstruct and bp-run or the shim;
# fail loudly (never skip) when one is missing.
bp_require_tracing() {
	bp_find_tools
	[ -n "$BP_LOGD" ] || bp_fail "bp-logd is not built (looked in" \
		"$top_builddir and its tools/ logd/ reconstruct/): run make"
	[ -n "$BP_RECONSTRUCT" ] || bp_fail "bp-reconstruct is not built" \
		"(looked in $top_builddir and its tools/ logd/ reconstruct/):" \
		"run make"
	[ -n "$BP_RUN" ] || [ -n "$BP_SHIM" ] || bp_fail "neither bp-run nor" \
		"libbtrace.so is built (looked in $top_builddir): run make"
}

# bp_trace_prefix SOCKET RULES ISOLATION: set BP_PREFIX, the command prefix
# that runs a program traced (bp-run, or LD_PRELOAD when bp-run is not
# built).  ISOLATION 0 turns event isolation off.
bp_trace_prefix() {
	local sock=$1 rules=$2 iso=$3
	if [ -n "$BP_RUN" ]; then
		# --exec: the traced program keeps bp-run's pid (the tests
		# signal and wait for it), whether or not stderr is a terminal
		BP_PREFIX=("$BP_RUN" --exec -s "$sock")
		[ "$iso" = 0 ] && BP_PREFIX+=(--no-isolation)
		BP_PREFIX+=(-r "$rules" --)
	else
		BP_PREFIX=(env "LD_PRELOAD=$BP_SHIM" "BTRACE_LOGD=$sock"
			"BTRACE_RULES=$rules")
		[ "$iso" = 0 ] && BP_PREFIX+=(BTRACE_ISOLATION=0)
	fi
}

# bp_logd_start [-n NAME] [-s SOCKET] [-l LOGDIR] [-w PREFIXVAR] DIR
# [BP-LOGD OPTIONS...]: see above.  The one way the tests start bp-logd.
bp_logd_start() {
	local name=logd sock="" logs="" prevar="" dir i
	local -a pre=()
	while [ $# -gt 0 ]; do
		case $1 in
		-n) name=$2; shift 2 ;;
		-s) sock=$2; shift 2 ;;
		-l) logs=$2; shift 2 ;;
		-w) prevar=$2; shift 2 ;;
		*) break ;;
		esac
	done
	dir=$1
	shift
	[ -n "$sock" ] || sock=$dir/logd.sock
	[ -n "$logs" ] || logs=$dir/logs
	[ -n "$prevar" ] && { local -n bp_ls_pre=$prevar; pre=("${bp_ls_pre[@]}"); }
	[ -n "${BP_LOGD:-}" ] || bp_find_tools
	[ -n "$BP_LOGD" ] || bp_fail "bp-logd is not built: run make"
	# bp-logd makes LOGDIR itself (mode 700)
	mkdir -p "$(dirname "$logs")"
	BP_LOGD_SOCK=$sock
	BP_START_APPEND=1 bp_start "$name" "$dir/$name.pid" "${pre[@]}" \
		"$BP_LOGD" -f -d "$logs" -s "$sock" -p "$dir/$name.pid" "$@"
	BP_LOGD_PID=${BP_PID[$name]}
	for ((i = 0; i < 100; i++)); do
		[ -S "$sock" ] && return 0
		bp_alive "$name"
		sleep 0.1
	done
	bp_fail "bp-logd did not create $sock within 10 s"
}

# bp_logd_stop [NAME]: SIGTERM, wait up to 15 s, fail unless it exits 0.
bp_logd_stop() {
	bp_stop "${1:-logd}"
}
