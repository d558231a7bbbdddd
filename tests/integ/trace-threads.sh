#!/bin/bash
# trace-threads.sh - request paths through ex-threads (one thread per connection, blocking I/O),
# traced end to end (client, front, backend), compared with the client's
# ground truth: 100% right at concurrency 1, 8 and 64 with pipelining; the
# run without event isolation is reported, not asserted.  See lib.sh,
# bp_trace_arch.
. "$(dirname "$0")/lib.sh"
bp_trace_arch threads
echo "PASS: trace-threads"
