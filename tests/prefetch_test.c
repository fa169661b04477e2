/*
 * util/prefetch.h: the write prefetch the lanes warm their slots with.
 * On x86 the library asks the CPU for PREFETCHW once, at load; here its
 * answer is checked against the kernel's own reading of the CPU (the
 * "3dnowprefetch" flag of /proc/cpuinfo, the same CPUID bit), and the
 * prefetch is checked to be a hint: no fault on a page mapped without
 * access, nor on one unmapped since.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prefetch.h"

TestSuite(prefetch, .timeout = 30);

/* 1: /proc/cpuinfo's first "flags" line names `flag`; 0: it does not;
 * -1: no such line to read (not Linux, or no x86 flags). */
static int cpuinfo_has(const char *flag)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[8192];
	int found = -1;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		found = 0;
		for (char *tok = strtok(strchr(line, ':') + 1, " \n"); tok != NULL;
		     tok = strtok(NULL, " \n"))
			if (strcmp(tok, flag) == 0)
				found = 1;
		break;
	}
	fclose(f);
	return found;
}

Test(prefetch, the_library_asks_the_cpu_what_the_kernel_sees)
{
#ifdef BLQ__PREFETCHW_ASKED
	int has = cpuinfo_has("3dnowprefetch");

	if (has < 0)
		cr_skip_test("no flags line in /proc/cpuinfo");
	cr_expect_eq(blq__prefetchw_ok, has == 1,
		     "the library says PREFETCHW %s, /proc/cpuinfo says %s",
		     blq__prefetchw_ok ? "yes" : "no", has ? "yes" : "no");
#else
	cr_skip_test("not asked on this target: the compiler's write prefetch is PREFETCHW "
		     "or not x86");
#endif
}

Test(prefetch, is_a_hint_on_any_address)
{
	long page = sysconf(_SC_PAGESIZE);
	char *guard = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static char mapped[64];

	cr_assert(guard != MAP_FAILED);
	blq__prefetch_write(mapped);
	blq__prefetch_write(guard);
	cr_assert_eq(munmap(guard, (size_t)page), 0);
	blq__prefetch_write(guard); /* unmapped now */
	mapped[0] = 1;
	cr_expect_eq(mapped[0], 1);
}
