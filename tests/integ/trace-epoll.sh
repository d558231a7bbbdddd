#!/bin/bash
# trace-epoll.sh - request paths through ex-epoll (one thread, edge-triggered epoll, reads until EAGAIN, asynchronous calls over a shared backend pool),
# traced end to end (client, front, backend), compared with the client's
# ground truth: 100% right at concurrency 1, 8 and 64 with pipelining; the
# run without event isolation is reported, not asserted.  See lib.sh,
# bp_trace_arch.
. "$(dirname "$0")/lib.sh"
bp_trace_arch epoll
echo "PASS: trace-epoll"
