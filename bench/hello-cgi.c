/*
 * hello-cgi.c - bp-hello-cgi: the bare-bones CGI program of benchmark 3
 * (the paper's fork/exec micro-benchmark): print a tiny text/plain page
 * and exit.
 */
#include "config.h"

#include <stdio.h>

int main(void)
{
	fputs("Content-Type: text/plain\r\n\r\nhello\n", stdout);
	return 0;
}
