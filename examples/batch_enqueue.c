/*
 * batch_enqueue: handing items over in batches (blq_enqueue_batch,
 * blq_try_enqueue_batch).
 *
 * A batch call is like write(2): it returns how many payloads the queue
 * took, always the first ones. The queue owns payloads[0..r); the caller
 * still owns payloads[r..n) and must offer them again or free them. Only
 * when it took none does it return an error, which says why.
 *
 *   1. a partial take: 100 payloads offered to a paused queue with room
 *      for 64; the rest offered again once the workers run
 *   2. producers that hand over batches of 32 in a loop, the usual idiom
 *   3. a leaky queue (one with a DLQ) takes every payload of a batch and
 *      leaks what does not fit
 *
 * What to look at: the return values of each call, and the accounting of
 * both queues at the end.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <blq/blq.h>

#include "example_util.h"

#define BATCH 32
#define BATCHES 50

static int work(void *ctx, void *payload, blq_task *task)
{
	(void)ctx, (void)task;
	ex_sleep_us(10);
	free(payload);
	return 0;
}

/* n new payloads into items[]; false when out of memory (none left made). */
static bool make(void **items, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		items[i] = malloc(sizeof(int));
		if (items[i] == NULL) {
			while (i > 0)
				free(items[--i]);
			return false;
		}
	}
	return true;
}

/* How often the producers' calls took part of a batch, or none of it. */
static atomic_uint partial, full;

/* The idiom for a producer that must not block: offer the rest again
 * (here after a short pause; a real producer may do other work first).
 * blq_enqueue_batch would instead wait for room, and take fewer than n
 * only when the queue closes meanwhile. On an error other than BLQ_EFULL
 * (the queue closed) the payloads not taken are still ours to free. */
static void hand_over(blq *q, void **items, size_t n)
{
	while (n > 0) {
		ssize_t r = blq_try_enqueue_batch(q, items, n);
		if (r == BLQ_EFULL) {
			atomic_fetch_add(&full, 1);
			ex_sleep_us(500);
			continue;
		}
		if (r < 0) {
			fprintf(stderr, "batch_enqueue: %s\n", blq_strerror((int)r));
			while (n > 0)
				free(items[--n]);
			return;
		}
		if ((size_t)r < n)
			atomic_fetch_add(&partial, 1);
		items += r;
		n -= (size_t)r;
	}
}

static void *producer(void *arg)
{
	void *items[BATCH];

	for (int b = 0; b < BATCHES; b++)
		if (make(items, BATCH))
			hand_over(arg, items, BATCH);
	return NULL;
}

int main(void)
{
	blq_error err;
	void *items[100];

	/* No DLQ: a full queue makes blq_enqueue_batch wait for room and
	 * blq_try_enqueue_batch stop at the first payload without room. */
	blq_config sc = {.name = "strict", .capacity = 64, .workers = 2, .worker = work,
			 .item_free = free};
	blq *q = blq_new(&sc, &err);
	if (q == NULL || !make(items, 100)) {
		fprintf(stderr, "batch_enqueue: %s\n", q ? "out of memory" : err.msg);
		return 1;
	}

	printf("1. a partial take\n");
	/* Paused, the workers start nothing, so the queue fills: 64 fit (one
	 * more per worker that was already taking an item as the pause began:
	 * it holds that one until the resume, see blq_pause). */
	blq_pause(q);
	ssize_t r = blq_try_enqueue_batch(q, items, 100);
	if (r < 0) {
		fprintf(stderr, "batch_enqueue: %s\n", blq_strerror((int)r));
		return 1;
	}
	size_t left = 100 - (size_t)r;
	printf("   try_enqueue_batch(100 payloads) -> %zd: the queue owns items[0..%zd),"
	       " we still own the other %zu\n", r, r, left);
	ex_check(r >= 64 && r < 100, "it took as many as fit, the first ones");
	ssize_t again = blq_try_enqueue_batch(q, items + r, left);
	printf("   try_enqueue_batch(the %zu left) -> %s: it took none, so it says why\n", left,
	       blq_errname((int)again));
	ex_check(again == BLQ_EFULL, "a full queue: BLQ_EFULL");
	blq_resume(q);
	again = blq_enqueue_batch(q, items + r, left); /* waits for room as the workers run */
	printf("   after resume, enqueue_batch(the %zu left) -> %zd\n", left, again);
	ex_check(again == (ssize_t)left, "the blocking call took them all");

	printf("2. %d producers, %d batches of %d each\n", 2, BATCHES, BATCH);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, producer, q) != 0)
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("   %u calls took part of a batch, %u found no room; the rest was offered again\n",
	       atomic_load(&partial), atomic_load(&full));
	blq_close(q);

	printf("3. a leaky queue takes the whole batch\n");
	blq_discard overflow;
	blq_discard_init(&overflow, free);
	blq_config lc = {.name = "leaky", .capacity = 64, .workers = 2, .worker = work,
			 .item_free = free, .dlq = blq_discard_enqueuer(&overflow)};
	blq *lq = blq_new(&lc, &err);
	if (lq == NULL || !make(items, 100)) {
		fprintf(stderr, "batch_enqueue: %s\n", lq ? "out of memory" : err.msg);
		return 1;
	}
	blq_pause(lq);
	r = blq_try_enqueue_batch(lq, items, 100);
	printf("   try_enqueue_batch(100 payloads) -> %zd; %llu leaked to the DLQ\n", r,
	       (unsigned long long)blq_discard_count(&overflow));
	ex_check(r == 100 && blq_discard_count(&overflow) > 0,
		 "it took all 100 and leaked those without room");
	blq_close(lq); /* a close ends the pause: those that fit run */

	struct blq_stats s, l;
	blq_stats(q, &s);
	blq_stats(lq, &l);
	printf("checks:\n");
	ex_balanced(q);
	ex_balanced(lq);
	ex_check(s.processed == 100 + 2 * BATCHES * BATCH, "strict: all %d payloads processed",
		 100 + 2 * BATCHES * BATCH);
	ex_check(l.processed + l.leaked_rear == 100 && l.leaked_rear == blq_discard_count(&overflow),
		 "leaky: each of the 100 processed or leaked to the DLQ");
	blq_free(q);
	blq_free(lq);
	return ex_failures == 0 ? 0 : 1;
}
