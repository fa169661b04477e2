/*
 * The timer's waiting items, ordered by (due, order): a FIFO lane for the
 * items that arrive in due order and a binary min-heap for the others.
 * See timed_set.c for the design. Not thread-safe: the timer calls it
 * under its mutex (timer.c). Not installed.
 */
#ifndef BLQ_QUEUE_TIMED_SET_H
#define BLQ_QUEUE_TIMED_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "item.h"

/* Where a timed item came in: a worker's inbox (its index), or here. */
#define BLQ__TIMER_SHARED UINT32_MAX

typedef struct blq__timed {
	uint64_t due;   /* on the queue's clock */
	uint64_t order; /* insertion order: equal due times stay FIFO */
	uint64_t since; /* when it entered the timer (metrics) */
	uint32_t origin; /* BLQ__TIMER_SHARED, or the worker whose inbox */
	blq__item item;
} blq__timed;

typedef struct blq__timed_set {
	/* Min-heap by (due, order), for items that arrive out of due order. */
	blq__timed *heap;
	size_t hn, hcap;
	/* The lane: a FIFO ring, lane[(lhead + i) % lcap], for items that
	 * arrive in due order (no earlier than the lane's last), which is most
	 * of them: one delay interval, one backoff step. O(1) instead of a
	 * heap's log n moves of a 96-byte entry. */
	blq__timed *lane;
	size_t lhead, ln, lcap;
	size_t n; /* held in both */
} blq__timed_set;

/* An empty set (all zero is one too). Owns no memory until an insert. */
void blq__timed_set_init(blq__timed_set *s);
/* Frees the memory; the entries left are dropped (their items are the
 * caller's to have taken first). */
void blq__timed_set_free(blq__timed_set *s);
/* Copies *e in. Memory grows by doubling, from 64 entries up to `limit`
 * per part (the caller bounds the count: at most limit entries in all).
 * 0, or BLQ_ENOMEM (the set is unchanged). */
int blq__timed_set_insert(blq__timed_set *s, const blq__timed *e, size_t limit);
/* The earliest entry by (due, order), or NULL when empty. Valid until the
 * next insert or pop. */
const blq__timed *blq__timed_set_earliest(const blq__timed_set *s);
/* Takes the earliest entry (there must be one) into *out, or drops it
 * when out is NULL. */
void blq__timed_set_pop(blq__timed_set *s, blq__timed *out);

/* Takes out up to `max` entries for which pred(entry, ctx) is true, into
 * out[] (in no particular order); the others keep their order. O(n): for
 * rare sweeps (cancelled items), not per item. Returns how many. */
size_t blq__timed_set_take_if(blq__timed_set *s, bool (*pred)(const blq__timed *e, void *ctx),
			      void *ctx, blq__timed *out, size_t max);

static inline size_t blq__timed_set_count(const blq__timed_set *s)
{
	return s->n;
}

#endif
