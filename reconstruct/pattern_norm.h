/*
 * pattern_norm.h - the label of a pattern node: a span's target (a URL,
 * SQL text, a line) with its values folded (docs/schema.md, "Patterns").
 */
#ifndef RC_PATTERN_NORM_H
#define RC_PATTERN_NORM_H

#include <stddef.h>

/*
 * Normalise the N bytes at IN (a URL, SQL text, a line) into OUT (CAP
 * bytes, CAP >= 8), always NUL-terminated.  Values are folded into ? (in
 * a URL, IS_URL, into *): '...' strings ('' and \' inside them); numbers
 * (digits, with a fraction and an exponent; 0x and hex digits); ids: words
 * of letters and digits that are hexadecimal with a digit and 6 or more
 * characters long, or have 2 or more digits and 5 or more characters, and
 * runs of hex digits joined by dashes with 16 or more digits (UUIDs); in
 * a URL after its first '?', every value of key=value.  A list of folded
 * values separated by commas becomes one.  Runs of white space and
 * control characters become one space.  A result longer than CAP - 1
 * bytes is cut on a character boundary and ends in "...".  Returns the
 * length written.
 */
size_t rc_pattern_norm(const char *in, size_t n, int is_url, char *out,
		       size_t cap);

#endif /* RC_PATTERN_NORM_H */
