/* The runner of the Criterion stand-in (criterion/criterion.h here). */
#include <criterion/criterion.h>

#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

static shim_test *tests, **tail = &tests;
static bool failed_here;

void shim_register(shim_test *t)
{
	/* Constructors run in file order: keep it. */
	*tail = t;
	tail = &t->next;
}

void shim_fail(bool fatal, const char *file, int line, const char *what, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: %s failed: %s", file, line, fatal ? "assertion" : "expectation",
		what);
	if (fmt[0] != '\0') {
		fprintf(stderr, ": ");
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	fprintf(stderr, "\n");
	failed_here = true;
	if (fatal)
		_exit(1);
}

static double timeout_of(const shim_test *t)
{
	if (t->cfg->timeout > 0)
		return t->cfg->timeout;
	if (t->suite_cfg != NULL && t->suite_cfg->timeout > 0)
		return t->suite_cfg->timeout;
	return 30;
}

static int run(shim_test *t)
{
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		alarm((unsigned)ceil(timeout_of(t)));
		if (t->suite_cfg != NULL && t->suite_cfg->init != NULL)
			t->suite_cfg->init();
		if (t->cfg->init != NULL)
			t->cfg->init();
		t->fn();
		if (t->cfg->fini != NULL)
			t->cfg->fini();
		if (t->suite_cfg != NULL && t->suite_cfg->fini != NULL)
			t->suite_cfg->fini();
		_exit(failed_here ? 1 : 0);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		;
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "%s::%s: %s\n", t->suite, t->name,
			WTERMSIG(status) == SIGALRM ? "timed out" : strsignal(WTERMSIG(status)));
		return -1;
	}
	return WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	unsigned passed = 0, failed = 0;

	(void)argc, (void)argv; /* Criterion options (--jobs) do not apply */
	for (shim_test *t = tests; t != NULL; t = t->next) {
		int rc = run(t);

		printf("[%s] %s::%s\n", rc == 0 ? "PASS" : "FAIL", t->suite, t->name);
		fflush(stdout);
		rc == 0 ? passed++ : failed++;
	}
	printf("%u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
