# fuzz/: libFuzzer target for bp-reconstruct's input (the processors'
# targets are in protocols/local.mk).  ./configure --enable-fuzzing CC=clang.
if ENABLE_FUZZING
noinst_PROGRAMS += fuzz/fuzz-logread
fuzz_fuzz_logread_SOURCES = fuzz/fuzz_logread.c \
	common/event.c common/crc32c.c common/segment.c common/segread.c \
	$(libbtrecon_la_SOURCES)
fuzz_fuzz_logread_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)
fuzz_fuzz_logread_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS) $(SQLITE3_CFLAGS)
fuzz_fuzz_logread_LDFLAGS = $(FUZZ_FLAGS)
fuzz_fuzz_logread_LDADD = libbtproto.la $(SQLITE3_LIBS)
endif
EXTRA_DIST += fuzz/logread-seeds.sh

# bp-reconstruct's content tokens (reconstruct/tokens.c) from hostile
# targets: URLs, FastCGI, SQL text, lines.
if ENABLE_FUZZING
noinst_PROGRAMS += fuzz/fuzz-tokens
fuzz_fuzz_tokens_SOURCES = fuzz/fuzz_tokens.c \
	common/event.c common/crc32c.c common/segment.c common/segread.c \
	$(libbtrecon_la_SOURCES)
fuzz_fuzz_tokens_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir) -I$(top_srcdir)/reconstruct
fuzz_fuzz_tokens_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS) $(SQLITE3_CFLAGS)
fuzz_fuzz_tokens_LDFLAGS = $(FUZZ_FLAGS)
fuzz_fuzz_tokens_LDADD = libbtproto.la $(SQLITE3_LIBS)
endif
EXTRA_DIST += fuzz/tokens-seeds

# bp-logd's socket protocol: its packet, chunk and drain code (logd/*.c but
# main.c and log.c, which the target replaces) over real socketpairs.
if ENABLE_FUZZING
noinst_PROGRAMS += fuzz/fuzz-logd-peer
fuzz_fuzz_logd_peer_SOURCES = fuzz/fuzz_logd_peer.c \
	logd/logd.h logd/server.c logd/peer.c logd/chunk.c logd/store.c \
	logd/notes.c logd/census.c logd/adopt.c common/event.c common/crc32c.c \
	common/segment.c
fuzz_fuzz_logd_peer_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/logd
fuzz_fuzz_logd_peer_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS) $(LIBEVENT_CFLAGS)
fuzz_fuzz_logd_peer_LDFLAGS = $(FUZZ_FLAGS)
fuzz_fuzz_logd_peer_LDADD = $(LIBEVENT_LIBS)
endif
EXTRA_DIST += fuzz/logd-peer-seeds.py

# libbtrace's OpenSSL bookkeeping (libbtrace/ssl.c), its plaintext read
# path and the processors reading plaintext, against hostile call orders:
# real libssl sessions over socketpairs (fuzz/fuzz_ssl.c).  The shim's
# core and the processors are built into the target, instrumented.
if ENABLE_FUZZING
noinst_PROGRAMS += fuzz/fuzz-ssl
fuzz_fuzz_ssl_SOURCES = fuzz/fuzz_ssl.c $(libbtcore_la_SOURCES) \
	$(BTPROTO_SOURCES)
fuzz_fuzz_ssl_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/libbtrace
fuzz_fuzz_ssl_CFLAGS = $(libbtcore_la_CFLAGS) $(FUZZ_FLAGS) $(OPENSSL_CFLAGS)
fuzz_fuzz_ssl_LDFLAGS = $(FUZZ_FLAGS)
fuzz_fuzz_ssl_LDADD = libbtcommon.la $(PCRE2_LIBS) $(OPENSSL_LIBS) -ldl \
	-lpthread
endif
EXTRA_DIST += fuzz/ssl-seeds.py

# bp-reconstruct's .proto reader and method patterns (reconstruct/grpc.c:
# --grpc-proto, --grpc-unary) from hostile text.
if ENABLE_FUZZING
noinst_PROGRAMS += fuzz/fuzz-grpc-proto
fuzz_fuzz_grpc_proto_SOURCES = fuzz/fuzz_grpc_proto.c reconstruct/grpc.c
fuzz_fuzz_grpc_proto_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir) -I$(top_srcdir)/reconstruct
fuzz_fuzz_grpc_proto_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
fuzz_fuzz_grpc_proto_LDFLAGS = $(FUZZ_FLAGS)
endif
EXTRA_DIST += fuzz/grpc-proto-seeds
