#include "thread.h"

#include <signal.h>

int blq__thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t set, old;
	int e;

	sigfillset(&set);
	sigdelset(&set, SIGSEGV);
	sigdelset(&set, SIGBUS);
	sigdelset(&set, SIGFPE);
	sigdelset(&set, SIGILL);
	sigdelset(&set, SIGABRT);
	sigdelset(&set, SIGTRAP);
	pthread_sigmask(SIG_SETMASK, &set, &old);
	e = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return e;
}
