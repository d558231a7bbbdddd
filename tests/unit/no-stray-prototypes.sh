#!/bin/bash
# no-stray-prototypes.sh - a project function is declared in a header,
# once, never ad hoc in a .c file (issue 14): a prototype repeated in a .c
# file is not checked against its definition.  Fails listing every file-
# scope declaration, in a .c file of the project's sources or tests, of a
# function with a project prefix (bt_, bp_, rc_, btp_) that is not static.
# A definition (a '{' before the ';') is fine, and so is a static forward
# declaration of a file's own function.
#
# Usage: no-stray-prototypes.sh [SRCDIR]   (default: $top_srcdir, or ..)
set -u
SRC=${1:-${top_srcdir:-..}}
DIRS="libbtrace common protocols logd reconstruct report tests fuzz tools"

found=$(cd "$SRC" && for d in $DIRS; do [ -d "$d" ] && find "$d" -name '*.c'; done |
	sort | xargs -r awk '
	FNR == 1 { inside = 0; decl = "" }
	# a top-level declaration or definition starts in column 0 with a
	# type word; collect it up to its ";" or "{"
	!inside && /^[A-Za-z_]/ && !/^(static|typedef|struct [A-Za-z_0-9]+ *\{|enum|union|#)/ {
		inside = 1; decl = ""; line = FNR
	}
	inside {
		decl = decl " " $0
		if (index($0, "{") || $0 ~ /^[A-Za-z_].*[^,(]$/ && index($0, ";") == 0 && index(decl, "(") == 0) {
			inside = 0; next
		}
		if (index($0, ";")) {
			inside = 0
			if (decl ~ /(^|[^A-Za-z0-9_])(bt|bp|rc|btp)_[A-Za-z0-9_]*[ \t]*\(/ &&
			    decl !~ /=/)
				printf "%s:%d:%s\n", FILENAME, line, decl
		}
	}')
if [ -n "$found" ]; then
	echo "no-stray-prototypes: project function prototypes in .c files (declare them once, in a header):" >&2
	echo "$found" >&2
	exit 1
fi
echo "no-stray-prototypes: none"
