/*
 * The rings engine (engine.h): new items go straight into the queue's
 * rings, where the workers take them. The engine of every queue without
 * QoS.
 *
 * Full rings: the one admission policy (admission.c: the balancer's hint,
 * front-then-rear leaks, BLQ_EFULL, waiting on space_ec until a worker has
 * drained the rings to half or the queue closes, the timer thread only
 * until a force), applied to the rings: push into any ring, a front leak's
 * victim from the producer's own lane, else the rings' oldest. This file
 * says which waits take the looks first (place, below) and keeps
 * the first push inline: an item that fits never reaches admission.c.
 * Due items from the timer go into its due ring first (timer.c), and only
 * when that is full into the rings like a producer's.
 */
#include "admission.h"
#include "internal.h"

/* The rings as admission.c sees them (ctx: the queue). */
static bool rings_push(void *ctx, const blq__item *it)
{
	return blq__push_any(ctx, it);
}

/* Our own lane's oldest, else the rings' (not the timer's due ring: that
 * room is not where ours goes). */
static bool rings_pop_oldest(void *ctx, blq__item *out)
{
	return blq__pop_oldest_own(ctx, out);
}

static void rings_leak(void *ctx, blq__cell *c, const blq__item *it, enum blq_leak_dir dir)
{
	blq__core_leak(ctx, c, it, dir);
}

static const blq__admit_ops rings_ops = {
	.push = rings_push,
	.pop_oldest = rings_pop_oldest,
	.leak = rings_leak,
};

/* The rings' admission when the push found no room (admission.c), and
 * whether its wait for room takes the looks first (spin.h). A
 * single blocking producer does not: it sleeps at once.
 * Measured on W1 (2 producers, 2 workers, 2 CPUs), 10 runs each,
 * alternated: with the looks 78-210 ns/item in two regimes, the slower
 * one in half the runs; without them 76-113. A worker frees room at half
 * a ring, so the sleep and its wake-up weigh once per half a ring's
 * items. A batch's producer and the timer thread keep their looks: with
 * a batch's producer sleeping at once too W1-BATCH was 1.29x slower, and
 * with the timer thread too RETRY was 1.17x (1.09x as it is). */
static int place(blq *q, blq__cell *c, const blq__item *it, enum blq__mode mode, bool looks,
		 bool *pushed)
{
	const blq__admission a = {
		.ops = &rings_ops,
		.ctx = q,
		.port = &q->port,
		.space = &q->space_ec,
		.takers = &q->items_ec,
	};

	return blq__admit_full(&a, c, it, mode, looks, pushed);
}

/* engine.h: the rings' push, then the policy with the looks (a batch's
 * producer, QoS's timer items). */
int blq__place(blq *q, blq__cell *c, blq__item *it, enum blq__mode mode, bool *pushed)
{
	*pushed = blq__push_any(q, it);
	return *pushed ? 0 : place(q, c, it, mode, true, pushed);
}

static int rings_check(const blq_config *cfg, blq_error *err)
{
	if (cfg->capacity == 0)
		return blq__error_set(err, BLQ_EINVAL, "capacity: must be > 0");
	return 0;
}

static int rings_init(const blq_config *cfg, const blq__port *port, void **state,
		      blq__shape *shape)
{
	*state = port->q;
	shape->capacity = cfg->capacity;
	shape->ring_cap = cfg->capacity;
	shape->streams = cfg->streams != 0 ? cfg->streams : 1;
	shape->direct_due = true;
	return 0;
}

/* Where a push did not go through at once: a due item's ring and the
 * rings, then admission.c's leaking or waiting. Out of line, so the fast
 * path below stays a push and a store. */
static __attribute__((noinline)) int admit_slow(blq *q, blq__cell *c, blq__item *it,
						enum blq__mode mode, blq__ec **woken)
{
	bool pushed = false;
	int rc = 0;

	if (mode == BLQ__TIMER) {
		/* A due item: the timer's own ring first (ours while the
		 * thread delivers; NULL without memory). */
		blq__ring *due = atomic_load_explicit(&q->due, memory_order_relaxed);

		if (due != NULL && blq__ring_push(due, it)) {
			*woken = &q->items_ec;
			return 0;
		}
	}
	/* rings_admit pushed a producer's item once already. */
	if (mode == BLQ__TIMER && blq__push_any(q, it))
		pushed = true;
	else
		rc = place(q, c, it, mode, mode == BLQ__TIMER, &pushed);
	*woken = pushed ? &q->items_ec : NULL;
	return rc;
}

static int rings_admit(void *state, blq__cell *c, blq__item *it, enum blq__mode mode,
		       blq__ec **woken)
{
	blq *q = state;

	if (mode != BLQ__TIMER && blq__push_any(q, it)) {
		*woken = &q->items_ec;
		return 0;
	}
	return admit_slow(q, c, it, mode, woken);
}

/* A batch: as many as fit, a reservation per 64 slots; when the rings
 * are full, the first of the rest goes blq__place's way (a leak, a wait
 * for room, or a refusal that ends the batch) and the others try the fast
 * way again. */
static size_t rings_admit_batch(void *state, blq__cell *c, const blq__item *tmpl,
				void *const *payloads, size_t n, enum blq__mode mode,
				blq__ec **woken, int *rc)
{
	blq *q = state;
	size_t took = 0;
	bool placed = false;

	*rc = 0;
	while (took < n) {
		size_t k = blq__push_batch(q, tmpl, payloads + took, n - took);

		if (k > 0) {
			placed = true;
			took += k;
			continue;
		}
		/* The items placed so far woke nobody yet (the caller wakes
		 * once, when it leaves): wake a worker before blq__place may
		 * wait for room, or we would wait on sleepers while our own
		 * items fill the rings. */
		if (placed)
			blq__ec_notify(&q->items_ec, 1);
		blq__item it = *tmpl;
		bool pushed;

		it.payload = payloads[took];
		*rc = blq__place(q, c, &it, mode, &pushed);
		if (*rc != 0)
			break;
		placed |= pushed;
		took++;
	}
	*woken = placed ? &q->items_ec : NULL;
	return took;
}

const blq__engine blq__rings_engine = {
	.name = "rings",
	.check = rings_check,
	.init = rings_init,
	.admit = rings_admit,
	.admit_batch = rings_admit_batch,
};
