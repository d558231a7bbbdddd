# tests/security/: what is recorded, what is redacted, pausing
# (docs/security.md).
#   check_redact   the redaction rules of libbtrace/redact.c (Check)
#   check_pause    pausing in the shim's core: the dark-channel rule, held
#                  input across a pause, what is written after the resume
#   redaction.sh   curl, nginx, psql and PostgreSQL traced: secret headers
#                  and passwords never reach the log; BTRACE_REDACT's
#                  options fold SQL literals and cut query strings
#   redaction-tls.sh  the same, every connection over OpenSSL TLS: the
#                  plaintext is redacted alike, the keys never recorded
#   pause.sh       pause and resume under load from the example servers:
#                  after the resume new connections are traced right,
#                  nothing is misattributed, what ran paused is absent
#   private.sh     socket, logs and spool private to their user; the shim
#                  hands its events to no other user's bp-logd
#   pause-cost.sh  (by hand) ns and instructions per read/write: bare,
#                  floor shim, traced, paused; uses pause-cost
# redaction.sh and private.sh need root (other users: postgres, nobody)
# and exit 77 (skipped) without it.  BP_KEEP=1 keeps a script's temp directory.

SECURITY_TESTS = \
	tests/security/redaction.sh \
	tests/security/redaction-tls.sh \
	tests/security/pause.sh \
	tests/security/private.sh
TESTS += $(SECURITY_TESTS)
EXTRA_DIST += $(SECURITY_TESTS) tests/security/lib.sh \
	tests/security/pause-cost.sh

check_PROGRAMS += tests/security/pause-cost
tests_security_pause_cost_SOURCES = tests/security/pause-cost.c

if HAVE_CHECK
check_PROGRAMS += tests/security/check_redact
TESTS += tests/security/check_redact
tests_security_check_redact_SOURCES = tests/security/check_redact.c
tests_security_check_redact_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) -I$(srcdir)/libbtrace
tests_security_check_redact_LDADD = libbtcore.la $(CHECK_LIBS)
check_PROGRAMS += tests/security/check_pause
TESTS += tests/security/check_pause
tests_security_check_pause_SOURCES = tests/security/check_pause.c tests/unit/check_spool.h
tests_security_check_pause_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) -I$(srcdir)/libbtrace
tests_security_check_pause_LDADD = libbtcore.la $(CHECK_LIBS)
endif
