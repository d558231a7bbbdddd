#!/bin/bash
# pause-cost.sh - what a wrapped read and write cost while tracing is
# paused, next to untraced, the bare interposition floor and tracing
# (docs/security.md, "Pausing: what it costs").  A measurement, not a
# test: run it by hand from the build directory.
#
#   tests/security/pause-cost.sh [REPEATS]        # ns per call
#   PAUSE_COST_CALLGRIND=1 tests/security/pause-cost.sh  # + instructions
#
# Modes, each on a traced-from-the-start socketpair carrying "\n" messages
# (BTRACE_RULES=line exe pause-cost: the line processor frames them):
#   bare     no shim
#   floor    a shim that forwards read and write to libc and does nothing
#            else (bench/.libs/libbtfloor.so when built, else one compiled
#            here)
#   traced   libbtrace.so with a bp-logd: every call moves one message
#   paused   libbtrace.so, the channel traced, then bp-logd -c pause: the
#            channel goes dark on its first paused byte; the loop is timed
#            after that
# Each mode runs REPEATS times (default 5) and the median of the runs'
# medians is printed, ns per call; the machine is shared, so the spread
# between runs is shown too.
. "$(dirname "$0")/../integ/lib.sh"

bp_init pause-cost
bp_require_tracing
REPEATS=${1:-5}
PC=$top_builddir/tests/security/pause-cost
[ -x "$PC" ] || bp_fail "$PC is not built: make tests/security/pause-cost"
[ -n "$BP_SHIM" ] || bp_fail "libbtrace.so is not built"

FLOOR=$top_builddir/bench/.libs/libbtfloor.so
if [ ! -f "$FLOOR" ]; then
	FLOOR=$T/floor.so
	cat >"$T/floor.c" <<-'EOF'
	#define _GNU_SOURCE
	#include <dlfcn.h>
	#include <unistd.h>
	static ssize_t (*r_read)(int, void *, size_t);
	static ssize_t (*r_write)(int, const void *, size_t);
	__attribute__((constructor)) static void bind(void)
	{
		r_read = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
		r_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	}
	ssize_t read(int fd, void *b, size_t n) { return r_read(fd, b, n); }
	ssize_t write(int fd, const void *b, size_t n) { return r_write(fd, b, n); }
	EOF
	${CC:-cc} -O2 -shared -fPIC -o "$FLOOR" "$T/floor.c" -ldl ||
		bp_fail "cannot build the floor shim"
	FLOOR_WHAT="read/write forwarders compiled here"
else
	FLOOR_WHAT="bench/.libs/libbtfloor.so"
fi

bp_logd_start "$T"
RULES="line exe pause-cost"
TRACE=(env "LD_PRELOAD=$BP_SHIM" "BTRACE_LOGD=$BP_LOGD_SOCK" "BTRACE_RULES=$RULES")

# one MODE [PREFIX...]: one run, "write W read R" (ns/call medians)
one() {
	local mode=$1
	shift
	if [ "$mode" = paused ]; then
		local fifo=$T/fifo out=$T/paused.out
		rm -f "$fifo" && mkfifo "$fifo"
		"$@" "$PC" -w <"$fifo" >"$out" &
		local pid=$!
		exec 9>"$fifo"
		for ((i = 0; i < 100; i++)); do
			grep -q ready "$out" 2>/dev/null && break
			sleep 0.05
		done
		"$BP_LOGD" -c pause -s "$BP_LOGD_SOCK" >/dev/null ||
			bp_fail "bp-logd -c pause failed"
		echo go >&9
		exec 9>&-
		wait "$pid" || bp_fail "pause-cost failed (paused)"
		"$BP_LOGD" -c resume -s "$BP_LOGD_SOCK" >/dev/null
		awk '/^write/ { w = $2 } /^read/ { r = $2 } END { print w, r }' "$out"
	else
		"$@" "$PC" | awk '/^write/ { w = $2 } /^read/ { r = $2 } END { print w, r }'
	fi
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] " (" v[1] ".." v[NR] ")" }'; }

printf '%-7s %-26s %-26s\n' mode "write ns/call (range)" "read ns/call (range)"
for mode in bare floor traced paused; do
	case $mode in
	bare) pre=() ;;
	floor) pre=(env "LD_PRELOAD=$FLOOR") ;;
	*) pre=("${TRACE[@]}") ;;
	esac
	: >"$T/$mode.runs"
	for ((k = 0; k < REPEATS; k++)); do
		one "$mode" "${pre[@]}" >>"$T/$mode.runs"
	done
	printf '%-7s %-26s %-26s\n' "$mode" \
		"$(cut -d' ' -f1 "$T/$mode.runs" | median)" \
		"$(cut -d' ' -f2 "$T/$mode.runs" | median)"
done
echo "(floor: $FLOOR_WHAT; $REPEATS runs of 401 rounds of 256 calls each)"

if [ "${PAUSE_COST_CALLGRIND:-0}" = 1 ]; then
	command -v valgrind >/dev/null || bp_fail "valgrind is missing"
	# instructions per write+read pair: the difference of two run lengths
	ir() {
		local r=$1
		shift
		"$@" valgrind --tool=callgrind --callgrind-out-file="$T/cg.%p" \
			"$PC" -n 256 -r "$r" >/dev/null 2>"$T/cg.err" ||
			bp_fail "valgrind failed: $(tail -n 3 "$T/cg.err")"
		sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$T/cg.err" | tail -n 1
	}
	printf '%-7s %s\n' mode "instructions per write+read (callgrind)"
	for mode in bare floor traced paused; do
		case $mode in
		bare) pre=() ;;
		floor) pre=(env "LD_PRELOAD=$FLOOR") ;;
		traced) pre=("${TRACE[@]}") ;;
		paused)
			"$BP_LOGD" -c pause -s "$BP_LOGD_SOCK" >/dev/null
			pre=("${TRACE[@]}") ;;
		esac
		a=$(ir 4 "${pre[@]}")
		b=$(ir 36 "${pre[@]}")
		printf '%-7s %s\n' "$mode" "$(( (b - a) / (32 * 256) ))"
	done
	"$BP_LOGD" -c resume -s "$BP_LOGD_SOCK" >/dev/null
	echo "(paused under callgrind: paused from the start, the socketpair made while paused)"
fi
bp_stop logd
