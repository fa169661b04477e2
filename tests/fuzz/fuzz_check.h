/*
 * The fuzz targets' assertion: a broken promise prints where and what,
 * then aborts, so libFuzzer reports the input and keeps it, and the seed
 * replay (fuzz_main.c) fails its ctest test.
 */
#ifndef BLQ_TESTS_FUZZ_CHECK_H
#define BLQ_TESTS_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__,    \
				#cond);                                              \
			abort();                                                     \
		}                                                                    \
	} while (0)

#endif
