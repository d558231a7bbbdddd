# examples/: the demo servers and client that speak the line protocol, one
# front per server architecture BorderPatrol must handle (docs/examples.md).
# Built by `make`, not installed; tests/integ/ drives them.
EX_UTIL = examples/ex_util.c examples/ex_util.h
EX_FRONT = $(EX_UTIL) examples/ex_front.c examples/ex_front.h \
	examples/ex_block.c examples/ex_block.h

noinst_PROGRAMS += \
	examples/ex-backend \
	examples/ex-client \
	examples/ex-threads \
	examples/ex-prefork \
	examples/ex-pool \
	examples/ex-epoll \
	examples/ex-libevent

examples_ex_backend_SOURCES = examples/ex-backend.c $(EX_UTIL)
examples_ex_backend_LDADD = -lpthread
examples_ex_client_SOURCES = examples/ex-client.c $(EX_UTIL)
examples_ex_client_LDADD = -lpthread
examples_ex_threads_SOURCES = examples/ex-threads.c $(EX_FRONT)
examples_ex_threads_LDADD = -lpthread
examples_ex_prefork_SOURCES = examples/ex-prefork.c $(EX_FRONT)
examples_ex_pool_SOURCES = examples/ex-pool.c $(EX_FRONT)
examples_ex_pool_LDADD = -lpthread
examples_ex_epoll_SOURCES = examples/ex-epoll.c $(EX_FRONT)
examples_ex_libevent_SOURCES = examples/ex-libevent.c $(EX_FRONT)
examples_ex_libevent_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS)
examples_ex_libevent_LDADD = $(LIBEVENT_LIBS)
