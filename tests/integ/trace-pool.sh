#!/bin/bash
# trace-pool.sh - request paths through ex-pool (a listener thread, 4 worker threads fed through a queue, a shared mutex-protected backend pool),
# traced end to end (client, front, backend), compared with the client's
# ground truth: 100% right at concurrency 1, 8 and 64 with pipelining; the
# run without event isolation is reported, not asserted.  See lib.sh,
# bp_trace_arch.
. "$(dirname "$0")/lib.sh"
bp_trace_arch pool
echo "PASS: trace-pool"
