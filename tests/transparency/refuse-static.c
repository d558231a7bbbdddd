/*
 * refuse-static - a trivial program bprun-refuse.sh runs statically linked
 * (and, dynamically linked, copies setuid): bp-run must refuse to trace
 * those.  Not a behaviour program (behaviour.sh runs the tp-*.c ones).
 */
#include <unistd.h>

int main(void)
{
	static const char msg[] = "static program ran\n";
	return write(1, msg, sizeof msg - 1) == (ssize_t)(sizeof msg - 1) ? 0 : 1;
}
