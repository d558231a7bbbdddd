#!/bin/bash
# redaction-tls.sh - redaction.sh with every connection encrypted by
# OpenSSL (curl and nginx over HTTPS, nginx a TLS client of its upstream,
# psql with sslmode=require, PostgreSQL with ssl = on): the plaintext
# libbtrace reads at SSL_read/SSL_write is redacted as cleartext is, the
# channels are read, and the private keys never reach the log.
SEC_TLS=1 SEC_NAME=redaction-tls
export SEC_TLS SEC_NAME
exec bash "$(dirname "$0")/redaction.sh" "$@"
