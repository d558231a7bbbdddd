#!/bin/bash
# bench/smoke.sh - `bench/run --smoke` under make check: every benchmark
# once, briefly, so they keep working.  It asserts that each one runs and
# reports its figures, never how fast anything is.  Needs root (the
# servers switch users); skipped (77) otherwise.
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
export top_srcdir top_builddir
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: bench/smoke.sh needs root (the servers switch to www-data and postgres)"
	exit 77
fi
exec "$top_srcdir/bench/run" --smoke
