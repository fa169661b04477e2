/*
 * A small stand-in for the part of Criterion's API the suites use, so the
 * same suites also run under ThreadSanitizer: Criterion 2.4.1 aborts under
 * TSan (Snaipe/Criterion#274), and the suites are where the concurrency
 * scenarios live. Used only in TSan builds (cmake/blq_helpers.cmake).
 *
 * Like Criterion, every test runs in its own process (fork; the runner
 * itself never starts a thread) with a time limit, suite and test .init
 * run first, and cr_assert* ends the test at the first failure while
 * cr_expect* records it and goes on. The runner prints one line per test
 * and "N passed, N failed".
 */
#ifndef BLQ_TSAN_SHIM_CRITERION_H
#define BLQ_TSAN_SHIM_CRITERION_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct shim_cfg {
	double timeout; /* seconds; 0 = the suite's, else 30 */
	void (*init)(void);
	void (*fini)(void);
};

typedef struct shim_test {
	const char *suite, *name;
	void (*fn)(void);
	const struct shim_cfg *cfg, *suite_cfg;
	struct shim_test *next;
} shim_test;

void shim_register(shim_test *t);
void shim_fail(bool fatal, const char *file, int line, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

#define TestSuite(suite, ...) const struct shim_cfg shim_suite_##suite = {__VA_ARGS__}

#define Test(suite, name, ...)                                                                     \
	static void shim_fn_##suite##_##name(void);                                                \
	extern const struct shim_cfg shim_suite_##suite __attribute__((weak));                     \
	static const struct shim_cfg shim_cfg_##suite##_##name = {__VA_ARGS__};                    \
	static shim_test shim_t_##suite##_##name = {#suite, #name, shim_fn_##suite##_##name,       \
						    &shim_cfg_##suite##_##name,                    \
						    &shim_suite_##suite, NULL};                    \
	__attribute__((constructor)) static void shim_reg_##suite##_##name(void)                   \
	{                                                                                          \
		shim_register(&shim_t_##suite##_##name);                                           \
	}                                                                                          \
	static void shim_fn_##suite##_##name(void)

/* `"" __VA_ARGS__`: the optional message is a format string literal plus
 * its arguments, or nothing. */
#define SHIM_CHECK(fatal, cond, what, ...)                                                         \
	do {                                                                                       \
		if (!(cond))                                                                       \
			shim_fail(fatal, __FILE__, __LINE__, what, "" __VA_ARGS__);                \
	} while (0)

#define cr_assert(c, ...) SHIM_CHECK(true, (c), #c, __VA_ARGS__)
#define cr_expect(c, ...) SHIM_CHECK(false, (c), #c, __VA_ARGS__)
#define cr_expect_not(c, ...) SHIM_CHECK(false, !(c), "!(" #c ")", __VA_ARGS__)
#define cr_assert_eq(a, b, ...) SHIM_CHECK(true, (a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_expect_eq(a, b, ...) SHIM_CHECK(false, (a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_expect_geq(a, b, ...) SHIM_CHECK(false, (a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_expect_leq(a, b, ...) SHIM_CHECK(false, (a) <= (b), #a " <= " #b, __VA_ARGS__)
/* A skipped test passes here, with its reason on stderr. */
#define cr_skip_test(...)                                                                          \
	do {                                                                                       \
		fprintf(stderr, "SKIP: " __VA_ARGS__);                                             \
		fputc('\n', stderr);                                                               \
		return;                                                                            \
	} while (0)
#define cr_assert_not_null(p, ...) SHIM_CHECK(true, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_expect_not_null(p, ...) SHIM_CHECK(false, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_expect_null(p, ...) SHIM_CHECK(false, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_expect_float_eq(a, b, eps, ...)                                                         \
	SHIM_CHECK(false, fabs((double)(a) - (double)(b)) <= (eps), #a " ~= " #b, __VA_ARGS__)
#define cr_expect_str_eq(a, b, ...)                                                                \
	do {                                                                                       \
		const char *shim_a_ = (a), *shim_b_ = (b);                                         \
		if (strcmp(shim_a_, shim_b_) != 0)                                                 \
			shim_fail(false, __FILE__, __LINE__, #a " == " #b,                         \
				  "\"%s\" != \"%s\"", shim_a_, shim_b_);                           \
	} while (0)

#endif
