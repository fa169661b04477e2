/*
 * batch_enqueue: handing items over in batches (blq_enqueue_batch,
 * blq_try_enqueue_batch).
 *
 * A batch call is like write(2): it returns how many payloads the queue
 * took, always the first ones. The queue owns payloads[0..r); the caller
 * still owns payloads[r..n) and must offer them again or free them. Only
 * when it took none does it return an error, which says why.
 *
 *   1. a partial take: 100 payloads offered to a queue with room for 64
 *      (its one worker held busy by a "plug"), then the rest again
 *   2. two producers handing over batches of 32, offering the rest again
 *   3. a leaky queue (one with a DLQ) takes every payload of a batch and
 *      leaks what does not fit
 *
 * What to look at: the return value of each call, and the accounting of
 * both queues at the end.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <blq/blq.h>

#include "example_util.h"

#define BATCH 32
#define BATCHES 50

/* The plug: a payload that keeps a queue's one worker busy until main
 * posts `unplugged`, so nothing leaves the queue and its room is exact. */
static int plug_item;
static sem_t plugged, unplugged;

static int work(void *ctx, void *payload, blq_task *task)
{
	(void)ctx, (void)task;
	if (payload == &plug_item) {
		sem_post(&plugged);
		sem_wait(&unplugged);
		return 0; /* the plug is static: nothing to free */
	}
	ex_sleep_us(10);
	free(payload);
	return 0;
}

static void plug(blq *q)
{
	if (blq_enqueue(q, &plug_item) == 0)
		sem_wait(&plugged); /* the worker is running it now */
}

static void make(void **items, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((items[i] = malloc(sizeof(int))) == NULL) {
			fprintf(stderr, "batch_enqueue: out of memory\n");
			exit(1);
		}
}

static atomic_uint partial, full; /* producers' calls that took some, none */

/* A producer that must not block offers the rest again (here after a
 * short pause; it might do other work first). blq_enqueue_batch would
 * wait for room instead, and take fewer than n only if the queue closed
 * meanwhile. On any other error the payloads not taken are still ours. */
static void *producer(void *arg)
{
	void *batch[BATCH];

	for (int b = 0; b < BATCHES; b++) {
		void **items = batch;
		size_t n = BATCH;

		make(items, n);
		while (n > 0) {
			ssize_t r = blq_try_enqueue_batch(arg, items, n);
			if (r == BLQ_EFULL) {
				atomic_fetch_add(&full, 1);
				ex_sleep_us(500);
				continue;
			}
			if (r < 0) {
				fprintf(stderr, "batch_enqueue: %s\n", blq_strerror((int)r));
				while (n > 0)
					free(items[--n]);
				break;
			}
			if ((size_t)r < n)
				atomic_fetch_add(&partial, 1);
			items += r;
			n -= (size_t)r;
		}
	}
	return NULL;
}

int main(void)
{
	blq_error err;
	blq_discard overflow;
	void *items[100];

	sem_init(&plugged, 0, 0);
	sem_init(&unplugged, 0, 0);
	blq_discard_init(&overflow, free);
	/* "strict" has no DLQ: when full, blq_enqueue_batch waits for room and
	 * blq_try_enqueue_batch stops at the first payload without room. */
	blq_config sc = {.name = "strict", .capacity = 64, .workers = 1, .worker = work,
			 .item_free = free};
	blq_config lc = sc;
	lc.name = "leaky";
	lc.dlq = blq_discard_enqueuer(&overflow);
	blq *q = blq_new(&sc, &err);
	blq *lq = q ? blq_new(&lc, &err) : NULL;
	if (lq == NULL) {
		fprintf(stderr, "batch_enqueue: %s\n", err.msg);
		return 1;
	}

	printf("1. a partial take\n");
	make(items, 100);
	plug(q);
	ssize_t r = blq_try_enqueue_batch(q, items, 100);
	size_t left = r < 0 ? 100 : 100 - (size_t)r;
	printf("   try_enqueue_batch(100) -> %zd: items[0..%zu) are the queue's, the %zu others ours\n",
	       r, 100 - left, left);
	ex_check(r == 64, "it took as many as fit, the first ones");
	ssize_t again = blq_try_enqueue_batch(q, items + 100 - left, left);
	printf("   try_enqueue_batch(the %zu left) -> %s: it took none, so it says why\n", left,
	       blq_errname((int)again));
	ex_check(again == BLQ_EFULL, "a full queue: BLQ_EFULL");
	sem_post(&unplugged);
	again = blq_enqueue_batch(q, items + 100 - left, left); /* waits for room */
	printf("   unplugged, enqueue_batch(the %zu left) -> %zd\n", left, again);
	ex_check(again == (ssize_t)left, "the blocking call took them all");

	printf("2. two producers, %d batches of %d each\n", BATCHES, BATCH);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, producer, q) != 0)
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("   %u calls took part of a batch, %u none; the rest was offered again\n",
	       atomic_load(&partial), atomic_load(&full));

	printf("3. a leaky queue takes the whole batch\n");
	make(items, 100);
	plug(lq);
	r = blq_try_enqueue_batch(lq, items, 100);
	printf("   try_enqueue_batch(100) -> %zd; %llu leaked to the DLQ\n", r,
	       (unsigned long long)blq_discard_count(&overflow));
	ex_check(r == 100 && blq_discard_count(&overflow) == 36,
		 "it took all 100 and leaked the 36 without room");
	sem_post(&unplugged);

	blq_close(q);
	blq_close(lq);
	struct blq_stats s, l;
	blq_stats(q, &s);
	blq_stats(lq, &l);
	printf("checks:\n");
	ex_balanced(q);
	ex_balanced(lq);
	ex_check(s.processed == 1 + 100 + 2 * BATCHES * BATCH, "strict: the plug and %d processed",
		 100 + 2 * BATCHES * BATCH);
	ex_check(l.processed == 1 + 64 && l.leaked == 36, "leaky: the plug and 64 processed");
	blq_free(q);
	blq_free(lq);
	return ex_failures == 0 ? 0 : 1;
}
