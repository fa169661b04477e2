/*
 * The ASan build's guard for its own leak checking (ASan build only,
 * registered through blq_test like every suite, so with the same
 * sanitizer options): the one test below leaks a block on purpose, and
 * ctest passes only when LeakSanitizer reports it. asan_leak_guard
 * (WILL_FAIL) wants the run to fail; asan_leak_guard_report wants the
 * report to name this block (its size, this file's function), so the
 * run did not fail for some other reason. Should a suppression or an
 * option ever hide the leaks of a Criterion test again (a
 * "leak:libcriterion" did: every allocation of a test has Criterion's
 * test main on its stack, and a suppression matches any frame), both
 * fail.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* Where the block passes through, so the compiler cannot drop the
 * allocation; cleared before the test returns, so nothing points at it. */
static void *volatile sink;

__attribute__((noinline)) static void guard_leaks_a_block(void)
{
	sink = malloc(4243);
	if (sink != NULL)
		memset(sink, 0x5a, 4243);
	sink = NULL;
}

Test(asan_leak_guard, leaks_a_block_that_lsan_must_report)
{
	guard_leaks_a_block();
	cr_expect_null(sink);
}
