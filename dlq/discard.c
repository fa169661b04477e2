/*
 * The discard DLQ: an enqueuer that accepts every item, frees it with the
 * caller's function (or not at all) and counts it, for queues that must
 * leak rather than block but keep nothing of what leaked. The count is a
 * relaxed atomic: leaking threads never wait on each other, and
 * blq_discard_count is a snapshot. A NULL discard accepts and drops.
 */
#include <blq/dlq.h>

#include <stddef.h>

void blq_discard_init(blq_discard *d, void (*item_free)(void *payload))
{
	if (d == NULL)
		return;
	d->item_free = item_free;
	__atomic_store_n(&d->count, 0, __ATOMIC_RELAXED);
}

static int discard(void *self, void *payload)
{
	blq_discard *d = self;

	if (d == NULL) /* blq_discard_enqueuer(NULL): accept and drop */
		return 0;
	if (d->item_free != NULL)
		d->item_free(payload);
	__atomic_fetch_add(&d->count, 1, __ATOMIC_RELAXED);
	return 0;
}

blq_enqueuer blq_discard_enqueuer(blq_discard *d)
{
	blq_enqueuer e = {.enqueue = discard, .self = d};

	return e;
}

uint64_t blq_discard_count(const blq_discard *d)
{
	return d != NULL ? __atomic_load_n(&d->count, __ATOMIC_RELAXED) : 0;
}
