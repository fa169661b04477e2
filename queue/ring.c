#include "ring.h"

#include <stdlib.h>

#include <blq/error.h>

int blq__ring_init(blq__ring *r, uint64_t cap)
{
	r->cap = cap;
	r->pow2 = (cap & (cap - 1)) == 0;
	r->mask = cap - 1;
	r->slots = aligned_alloc(BLQ__CACHELINE,
				 ((cap * sizeof(blq__slot) + BLQ__CACHELINE - 1) / BLQ__CACHELINE) *
					 BLQ__CACHELINE);
	if (r->slots == NULL)
		return BLQ_ENOMEM;
	for (uint64_t i = 0; i < cap; i++)
		atomic_init(&r->slots[i].seq, 2 * i);
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	return 0;
}

void blq__ring_destroy(blq__ring *r)
{
	free(r->slots);
	r->slots = NULL;
}
