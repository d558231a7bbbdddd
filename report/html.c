/*
 * html.c - escaping for the HTML report (see report.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "report.h"

void html_text_max(FILE *f, const char *s, size_t max)
{
	if (!s)
		return;
	char *c = strdup(s);
	if (!c)
		return;
	export_utf8_clean(c);
	size_t chars = 0;
	for (const unsigned char *p = (const unsigned char *)c; *p; p++) {
		if ((*p & 0xC0) != 0x80 && ++chars > max) {
			fputs("&hellip;", f);
			break;
		}
		switch (*p) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: putc(*p, f); break;
		}
	}
	free(c);
}

void html_text(FILE *f, const char *s)
{
	html_text_max(f, s, SIZE_MAX);
}

void html_dur(FILE *f, double ns)
{
	char b[32];
	fputs(export_dur(b, sizeof b, ns), f);
}
