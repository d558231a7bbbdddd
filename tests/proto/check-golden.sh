#!/bin/sh
# check-golden.sh - (make check) the golden logs of tests/proto agree with
# check_golden.py's independent framing of each capture.
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3) || {
	echo "check-golden.sh: no python3: cannot check the golden logs"
	exit 77
}
exec "$py" "$here/check_golden.py" "$here/captures" "$here/golden"
