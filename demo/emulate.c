/* What the stage's items are and what its worker does with them. */
#include "stage_internal.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

/* Longer sleeps are cut in slices so a cancelled item (force stop) or a
 * stopping producer notices within this. */
#define SLICE_NS 10000000ull

void demo_sleep_while(uint64_t ns, bool (*go_on)(const void *ctx), const void *ctx)
{
	while (ns > 0 && go_on(ctx)) {
		uint64_t step = ns < SLICE_NS ? ns : SLICE_NS;
		struct timespec ts = {.tv_sec = (time_t)(step / 1000000000u),
				      .tv_nsec = (long)(step % 1000000000u)};
		nanosleep(&ts, NULL);
		ns -= step;
	}
}

static bool not_cancelled(const void *task)
{
	return !blq_task_cancelled(task);
}

int demo_emulate_work(void *ctx, void *payload, blq_task *task)
{
	(void)payload; /* a sequence number: nothing to free */
	const demo_stage *s = ctx;
	uint64_t d = s->spec.worker_delay_ns;
	if (s->spec.allow_deadline)
		d = d - d / 2 + blq_rand_below(d); /* [d/2, 3d/2): some miss the deadline */
	demo_sleep_while(d, not_cancelled, task);
	if (s->spec.fail_rate > 0 &&
	    (double)blq_rand_below(1000000) < s->spec.fail_rate * 1000000.0)
		return 1; /* the original's "artificial fail" */
	return 0;
}

/* In memory a restored item carries its restore count in the payload's top
 * byte (the restorer's max_restores counts it); the dump keeps the
 * sequence number only, and the count in the record's own field. */
#define SEQ_MASK ((UINT64_C(1) << 56) - 1)
_Static_assert(sizeof(uintptr_t) >= 8, "payloads carry 64-bit sequence numbers");

static long item_encode(void *ctx, const void *payload, void *dst, size_t cap)
{
	(void)ctx;
	if (cap < 12)
		return 12;
	uint64_t v = (uint64_t)(uintptr_t)payload & SEQ_MASK;
	unsigned char *p = dst;
	p[0] = 4; /* the original's header */
	p[1] = p[2] = p[3] = 0;
	for (int i = 0; i < 8; i++)
		p[4 + i] = (unsigned char)(v >> (8 * i));
	return 12;
}

static int item_decode(void *ctx, const blq_dump_record *rec, void **payload)
{
	(void)ctx;
	if (rec->len != 12)
		return BLQ_EINVAL;
	const unsigned char *p = rec->data;
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[4 + i] << (8 * i);
	uint64_t r = rec->restores < 255 ? rec->restores : 255;
	*payload = (void *)(uintptr_t)((v & SEQ_MASK) | r << 56);
	return 0;
}

static uint32_t item_restores(void *ctx, const void *payload)
{
	(void)ctx;
	return (uint32_t)((uint64_t)(uintptr_t)payload >> 56);
}

blq_dump_encoder demo_item_encoder(void)
{
	return (blq_dump_encoder){.encode = item_encode, .restores = item_restores};
}

blq_dump_decoder demo_item_decoder(void)
{
	return (blq_dump_decoder){.decode = item_decode};
}
