#!/bin/bash
# trace-prefork.sh - request paths through ex-prefork (4 pre-forked processes accepting on one socket, persistent backend connections per process),
# traced end to end (client, front, backend), compared with the client's
# ground truth: 100% right at concurrency 1, 8 and 64 with pipelining; the
# run without event isolation is reported, not asserted.  See lib.sh,
# bp_trace_arch.
. "$(dirname "$0")/lib.sh"
bp_trace_arch prefork
echo "PASS: trace-prefork"
