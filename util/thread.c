/*
 * Every thread the library starts (workers, the heartbeat, the timer, QoS
 * egress, dump flushers, async_chain helpers) is created here, with the
 * asynchronous signals blocked, so SIGTERM and SIGINT reach the
 * application's own threads, where its drain runs (seed 004). The
 * synchronous fault signals stay deliverable: a crash in a worker
 * callback still reports as a crash.
 */
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
