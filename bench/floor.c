/*
 * floor.c - the floor shim: every symbol libbtrace.so exports
 * (libbtrace/wrapped.def), forwarding straight to the next definition
 * (libc), with nothing else.  Benchmark 5 (BENCHMARKS.md) measures what
 * libbtrace adds per wrapped call against it: both pay the same dynamic
 * linking, the same indirect jump into libc, the same call path, so the
 * difference is the shim's own work.
 *
 * Each exported symbol is one x86-64 instruction, `jmp *ptr(%rip)`, so
 * every argument register (and %al of variadic calls such as fcntl, open,
 * execl) reaches libc untouched.  The pointers start at a lazy stub that
 * saves the argument registers, binds every pointer with
 * dlsym(RTLD_NEXT), and jumps on; the library constructor binds them
 * before main, so the stub only runs for calls made by other libraries'
 * constructors.  A symbol this libc lacks gets a function that fails with
 * ENOSYS, as libbtrace's wrappers do.
 *
 * Built as bench/.libs/libbtfloor.so with libbtrace's version script, so
 * it exports exactly the same names.  x86-64 only: on other machines the
 * library exports nothing and bench/run reports the floor as unavailable.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>

#if defined(__x86_64__)

#define FLOOR_HIDDEN __attribute__((visibility("hidden")))

/* The pointers (defined in the assembly below). */
#define BT_W(ret, name, params) extern void *floor_p_##name FLOOR_HIDDEN;
#include "../libbtrace/wrapped.def"
#undef BT_W

FLOOR_HIDDEN void floor_bind(void);
FLOOR_HIDDEN long floor_enosys(void);

/* What a symbol missing from this libc does when called. */
long floor_enosys(void)
{
	errno = ENOSYS;
	return -1;
}

/* Bind every pointer to the next definition of its symbol (idempotent;
 * concurrent callers store the same values). */
void floor_bind(void)
{
	void *p;
#define BT_W(ret, name, params) \
	p = dlsym(RTLD_NEXT, #name); \
	__atomic_store_n(&floor_p_##name, p ? p : (void *)floor_enosys, \
			 __ATOMIC_RELEASE);
#include "../libbtrace/wrapped.def"
#undef BT_W
}

__attribute__((constructor)) static void floor_init(void)
{
	floor_bind();
}

/*
 * Per symbol: the exported trampoline, its lazy stub and its pointer.  The
 * stub is entered with the stack at 8 mod 16 (just called); seven pushes
 * make it 0 mod 16 for the call to floor_bind.
 */
#define FLOOR_TRAMPOLINE(name) __asm__( \
	".text\n" \
	".globl " #name "\n" \
	".type " #name ", @function\n" \
	".p2align 4\n" \
	#name ":\n" \
	"	jmp *floor_p_" #name "(%rip)\n" \
	".size " #name ", .-" #name "\n" \
	".p2align 4\n" \
	"floor_lazy_" #name ":\n" \
	"	push %rdi\n	push %rsi\n	push %rdx\n	push %rcx\n" \
	"	push %r8\n	push %r9\n	push %rax\n" \
	"	call floor_bind\n" \
	"	pop %rax\n	pop %r9\n	pop %r8\n	pop %rcx\n" \
	"	pop %rdx\n	pop %rsi\n	pop %rdi\n" \
	"	jmp *floor_p_" #name "(%rip)\n" \
	".data\n" \
	".p2align 3\n" \
	".globl floor_p_" #name "\n" \
	".hidden floor_p_" #name "\n" \
	"floor_p_" #name ":\n" \
	"	.quad floor_lazy_" #name "\n" \
	".text\n");

#define BT_W(ret, name, params) FLOOR_TRAMPOLINE(name)
#include "../libbtrace/wrapped.def"
#undef BT_W

#endif /* __x86_64__ */
