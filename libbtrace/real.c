/*
 * real.c - bind the real libc functions listed in wrapped.def.
 */
#include "config.h"

#include <dlfcn.h>

#include "real.h"

struct bt_real bt_real;
int bt_real_bound;

static pthread_once_t bind_once = PTHREAD_ONCE_INIT;

static void bind_all(void)
{
#define BT_W(ret, name, params) \
	bt_real.name = (ret (*) params)dlsym(RTLD_NEXT, #name);
#include "wrapped.def"
#undef BT_W
	__atomic_store_n(&bt_real_bound, 1, __ATOMIC_RELEASE);
}

void bt_real_bind(void)
{
	pthread_once(&bind_once, bind_all);
}
