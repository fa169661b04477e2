/*
 * Whether this CPU has PREFETCHW (prefetch.h says why it is asked at
 * run time): once, when the library is loaded, before any queue exists.
 */
#include "prefetch.h"

#ifdef BLQ__PREFETCHW_ASKED
#include <cpuid.h>

bool blq__prefetchw_ok;

__attribute__((constructor)) static void blq__prefetchw_detect(void)
{
	unsigned a, b, c, d;

	blq__prefetchw_ok = __get_cpuid(0x80000001u, &a, &b, &c, &d) != 0 && (c & bit_PRFCHW) != 0;
}
#else
/* Nothing to ask: the compiler's write prefetch is the write prefetch. An
 * empty translation unit is not ISO C. */
typedef int blq__prefetch_nothing;
#endif
