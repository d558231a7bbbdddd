/*
 * pattern_norm.c - normalising a span's target or name into the label of
 * its pattern node: values folded, white space collapsed (see
 * pattern_norm.h).
 */
#include "config.h"

#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "pattern_norm.h"

struct nbuf {
	char  *p;
	size_t len, cap;         /* cap includes room for "...\0" */
	int    full;
	char   fold;             /* what a folded value becomes */
};

static void nput(struct nbuf *b, char c)
{
	if (b->full)
		return;
	if (b->len + 4 >= b->cap) {   /* keep room for "..." and NUL */
		/* never end inside a UTF-8 sequence: drop an incomplete last
		 * character */
		size_t k = b->len;
		while (k && ((unsigned char)b->p[k - 1] & 0xC0) == 0x80)
			k--;
		if (k && ((unsigned char)b->p[k - 1] & 0x80)) {
			unsigned char lead = (unsigned char)b->p[k - 1];
			size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 :
				      lead >= 0xC0 ? 2 : 1;
			if (k - 1 + want > b->len)
				b->len = k - 1;
		}
		memcpy(b->p + b->len, "...", 3);
		b->len += 3;
		b->full = 1;
		return;
	}
	b->p[b->len++] = c;
}

/* A folded value: F ('?', or '*' in a URL), unless it continues a list
 * "?, ?" (then nothing). */
static void nfold(struct nbuf *b)
{
	char f = b->fold;
	size_t j = b->len;
	while (j && b->p[j - 1] == ' ')
		j--;
	if (j && b->p[j - 1] == ',') {
		size_t k = j - 1;
		while (k && b->p[k - 1] == ' ')
			k--;
		if (k && b->p[k - 1] == f && !b->full) {
			b->len = k;
			return;
		}
	}
	nput(b, f);
}

static int is_word(unsigned char c)
{
	return isalnum(c);
}

/* Length of a run of hex digits and single dashes at P (a UUID-like id),
 * or 0 unless it has a dash, 16 or more hex digits and a decimal digit and
 * is not followed by a word character. */
static size_t hex_dash_run(const unsigned char *p, size_t n)
{
	size_t i = 0, hex = 0, digits = 0, dashes = 0;
	while (i < n) {
		if (isxdigit(p[i])) {
			hex++;
			digits += isdigit(p[i]) != 0;
			i++;
		} else if (p[i] == '-' && i > 0 && p[i - 1] != '-' && i + 1 < n &&
			   isxdigit(p[i + 1])) {
			dashes++;
			i++;
		} else {
			break;
		}
	}
	if (i < n && is_word(p[i]))
		return 0;
	return dashes && hex >= 16 && digits ? i : 0;
}

size_t rc_pattern_norm(const char *in, size_t n, int is_url, char *out,
		       size_t cap)
{
	const unsigned char *s = (const unsigned char *)in;
	struct nbuf b = { out, 0, cap, 0, is_url ? '*' : '?' };
	int query = 0;           /* URL: after the '?' */
	size_t i = 0;

	if (cap < 8) {
		if (cap)
			out[0] = 0;
		return 0;
	}
	while (i < n && !b.full) {
		unsigned char c = s[i];
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
		    c == '\f' || c == '\v' || c < 0x20 || c == 0x7f) {
			if (b.len && b.p[b.len - 1] != ' ')
				nput(&b, ' ');
			i++;
		} else if (c == '\'') {
			/* a string: '' and \' inside do not end it */
			i++;
			while (i < n) {
				if (s[i] == '\\' && i + 1 < n) {
					i += 2;
				} else if (s[i] == '\'') {
					if (i + 1 < n && s[i + 1] == '\'') {
						i += 2;
					} else {
						i++;
						break;
					}
				} else {
					i++;
				}
			}
			nfold(&b);
		} else if (is_url && c == '?' && !query) {
			query = 1;
			nput(&b, '?');
			i++;
		} else if (is_url && query && c == '=') {
			nput(&b, '=');
			i++;
			size_t j = i;
			while (j < n && s[j] != '&' && s[j] != ';' && s[j] != '#')
				j++;
			if (j > i)
				nput(&b, '*');
			i = j;
		} else if (is_word(c)) {
			size_t run = hex_dash_run(s + i, n - i);
			if (run) {
				nfold(&b);
				i += run;
				continue;
			}
			size_t j = i, digits = 0, hex = 1;
			if (c == '0' && i + 2 < n && (s[i + 1] == 'x' || s[i + 1] == 'X') &&
			    isxdigit(s[i + 2])) {
				j = i + 2;
				while (j < n && isxdigit(s[j]))
					j++;
				if (j >= n || !is_word(s[j])) {
					nfold(&b);
					i = j;
					continue;
				}
				j = i;
			}
			while (j < n && is_word(s[j])) {
				digits += isdigit(s[j]) != 0;
				hex &= isxdigit(s[j]) != 0;
				j++;
			}
			size_t len = j - i;
			int number = digits == len;
			if (number) {
				/* a fraction and an exponent belong to it */
				if (j + 1 < n && s[j] == '.' && isdigit(s[j + 1])) {
					j++;
					while (j < n && isdigit(s[j]))
						j++;
				}
				if (j + 1 < n && (s[j] == 'e' || s[j] == 'E')) {
					size_t k = j + 1;
					if (k < n && (s[k] == '+' || s[k] == '-'))
						k++;
					if (k < n && isdigit(s[k])) {
						while (k < n && isdigit(s[k]))
							k++;
						j = k;
					}
				}
				/* 12ab: letters right after digits make a word */
				if (j < n && is_word(s[j])) {
					while (j < n && is_word(s[j])) {
						digits += isdigit(s[j]) != 0;
						hex &= isxdigit(s[j]) != 0;
						j++;
					}
					len = j - i;
					number = 0;
				}
			}
			if (number || (hex && digits && len >= 6) ||
			    (digits >= 2 && len >= 5)) {
				nfold(&b);
			} else {
				for (size_t k = i; k < j; k++)
					nput(&b, (char)s[k]);
			}
			i = j;
		} else {
			nput(&b, (char)c);
			i++;
		}
	}
	while (b.len && b.p[b.len - 1] == ' ' && !b.full)
		b.len--;
	b.p[b.len] = 0;
	return b.len;
}
