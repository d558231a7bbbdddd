/*
 * real.c - bind the real libc functions listed in wrapped.def, each on
 * its first use (real.h).
 */
#include "config.h"

#include <dlfcn.h>

#include "real.h"

struct bt_real bt_real;

#define NREAL (sizeof(struct bt_real) / sizeof(void *))

/* symbols looked up and not found: not looked up again */
static unsigned char missing[NREAL];

/*
 * dlsym of a symbol that exists allocates nothing (glibc allocates only
 * for an error message), and the loader's lock is recursive: a wrapper
 * first called from a signal handler can bind here.
 */
void *bt_real_bind_one(void **slot, const char *name)
{
	size_t i = (size_t)(slot - (void **)&bt_real);
	void *p = __atomic_load_n(slot, __ATOMIC_RELAXED);

	if (p || (i < NREAL && __atomic_load_n(&missing[i], __ATOMIC_RELAXED)))
		return p;
	p = dlsym(RTLD_NEXT, name);
	if (p)
		__atomic_store_n(slot, p, __ATOMIC_RELAXED);
	else if (i < NREAL)
		__atomic_store_n(&missing[i], 1, __ATOMIC_RELAXED);
	return p;
}
