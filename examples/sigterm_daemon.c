/*
 * sigterm_daemon: a small daemon that shuts down cleanly on SIGTERM.
 *
 * Producers feed a queue until SIGTERM (or SIGINT) arrives. Then the
 * daemon stops the producers, drains the queue within a time limit, prints
 * the final accounting and exits 0.
 *
 * Signals: SIGTERM and SIGINT are blocked before any thread starts, so
 * every thread (the queue's workers, the producers) inherits the mask and
 * no thread is interrupted; the main thread alone takes them, with
 * sigwait(). No signal handler, so no async-signal-safety rules to keep:
 * after sigwait returns, main is ordinary code.
 *
 * The order at shutdown: first the sources (no producer enqueues any
 * more), then the queue. blq_close_timeout lets the workers run every
 * item already accepted; only if that takes longer than the limit does it
 * turn into a force close (the rest is then counted lost, as there is no
 * DLQ here). blq_close_soft_timeout would instead hand what is still
 * queued to the DLQ at once, keeping only the running items.
 *
 * What to look at: the "final:" line, where in equals processed.
 *
 * Usage: sigterm_daemon [drain-limit-ms]   (default 5000); stop it with
 * kill -TERM <pid> or Ctrl-C. examples/sigterm_daemon_test.sh runs it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <blq/blq.h>

#include "example_util.h"

#define PRODUCERS 2

static atomic_bool stopping;

static int work(void *ctx, void *payload, blq_task *task)
{
	(void)ctx, (void)task;
	ex_sleep_us(200); /* some I/O, say */
	free(payload);
	return 0;
}

static void *produce(void *arg)
{
	blq *q = arg;

	for (unsigned long i = 0; !atomic_load(&stopping); i++) {
		unsigned long *p = malloc(sizeof(*p));
		if (p == NULL)
			break;
		*p = i;
		/* No DLQ: on a full queue this waits for room (back-pressure),
		 * so the producers run as fast as the workers allow. */
		int rc = blq_enqueue(q, p);
		if (rc != 0) {
			free(p); /* refused: still ours */
			fprintf(stderr, "sigterm_daemon: enqueue: %s\n", blq_strerror(rc));
			break;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long limit_ms = argc > 1 ? atol(argv[1]) : 5000;
	sigset_t sigs;
	blq_error err;

	if (limit_ms < 1) {
		fprintf(stderr, "sigterm_daemon: drain-limit-ms: want a positive number\n");
		return 2;
	}
	/* Before any thread starts: the threads inherit this mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	blq_config cfg = {.name = "jobs", .capacity = 1000, .workers = 4, .worker = work,
			  .item_free = free};
	blq *q = blq_new(&cfg, &err);
	if (q == NULL) {
		fprintf(stderr, "sigterm_daemon: %s\n", err.msg);
		return 1;
	}
	pthread_t producers[PRODUCERS];
	int started = 0;
	for (; started < PRODUCERS; started++) {
		int e = pthread_create(&producers[started], NULL, produce, q);
		if (e != 0) {
			fprintf(stderr, "sigterm_daemon: pthread_create: %s\n", strerror(e));
			break;
		}
	}
	/* The line the test waits for; flushed, as stdout may be a file. */
	printf("running: pid %ld, %d producers; send SIGTERM to stop\n", (long)getpid(), started);
	fflush(stdout);

	int sig = 0;
	if (started == PRODUCERS)
		sigwait(&sigs, &sig);
	printf("%s: stopping the producers, then draining the queue (limit %ld ms)\n",
	       sig ? strsignal(sig) : "no producers", limit_ms);
	atomic_store(&stopping, true);
	for (int i = 0; i < started; i++)
		pthread_join(producers[i], NULL);
	struct blq_stats s;
	blq_stats(q, &s);
	printf("producers stopped; %zu items still queued\n", s.size);
	int rc = blq_close_timeout(q, (uint64_t)limit_ms * 1000000u);
	if (rc != 0)
		printf("the drain took longer than the limit: %s\n", blq_strerror(rc));

	blq_stats(q, &s);
	printf("final: in %llu processed %llu failed %llu leaked %llu expired %llu lost %llu"
	       " cancelled %llu\n",
	       (unsigned long long)s.in, (unsigned long long)s.processed,
	       (unsigned long long)s.failed, (unsigned long long)s.leaked,
	       (unsigned long long)s.expired, (unsigned long long)s.lost,
	       (unsigned long long)s.cancelled);
	bool clean = ex_balanced(q) && rc == 0 && s.processed == s.in && started == PRODUCERS;
	blq_free(q);
	/* 0: a clean shutdown, every accepted item processed. */
	return clean ? 0 : 1;
}
