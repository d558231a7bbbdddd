# tests/security/: what is recorded, what is redacted, pausing
# (docs/security.md).
#   check_redact   the redaction rules of libbtrace/redact.c (Check)
#   redaction.sh   curl, nginx, psql and PostgreSQL traced: secret headers
#                  and passwords never reach the log; BTRACE_REDACT's
#                  options fold SQL literals and cut query strings
# The scripts need root (PostgreSQL runs as postgres) and exit 77
# (skipped) without it.  BP_KEEP=1 keeps a script's temp directory.

SECURITY_TESTS = \
	tests/security/redaction.sh
TESTS += $(SECURITY_TESTS)
EXTRA_DIST += $(SECURITY_TESTS) tests/security/lib.sh

if HAVE_CHECK
check_PROGRAMS += tests/security/check_redact
TESTS += tests/security/check_redact
tests_security_check_redact_SOURCES = tests/security/check_redact.c
tests_security_check_redact_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) -I$(srcdir)/libbtrace
tests_security_check_redact_LDADD = libbtcore.la $(CHECK_LIBS)
endif
