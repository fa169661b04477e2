/*
 * The rings engine (engine.h): new items go straight into the queue's
 * rings, where the workers take them. The engine of every queue without
 * QoS.
 *
 * Full rings: a balanced queue first asks for more workers; a leaky queue
 * then leaks (front: the oldest items move to the DLQ to make room, up to
 * front_leak_attempts times; rear, or when that keeps failing: the new
 * item goes); otherwise try-enqueue says BLQ_EFULL, and a blocking enqueue
 * spins a little when that can pay (spin.h) and then sleeps on space_ec
 * until a worker has drained the rings to half or the queue closes (the
 * timer thread: until a force). No lock and no allocation on any of these paths.
 * Due items from the timer go into its due ring first (timer.c), and only
 * when that is full into the rings like a producer's.
 */
#include "internal.h"

/* The condition a waiting pusher gives up on: a close for producers, only
 * a force for the timer thread (a graceful close drains the timer). */
static bool give_up(const blq *q, enum blq__mode mode)
{
	return atomic_load_explicit(mode == BLQ__TIMER ? &q->forced : &q->closed,
				    memory_order_seq_cst) != 0;
}

static bool spin_push(blq *q, const blq__item *it, enum blq__mode mode)
{
	blq__spinner sp;

	if (!blq__spin_start(&q->spin, &sp))
		return false;
	while (blq__spin_pause(&q->spin, &sp)) {
		bool in = blq__push_any(q, it);

		if (in || give_up(q, mode)) {
			blq__spin_stop(&q->spin, &sp);
			return in;
		}
	}
	return false;
}

/* The ring is full and the queue is leaky: make room at the front (moving
 * the oldest items to the DLQ) or leak the new item at the rear. True when
 * the new item went into the ring after all. */
static bool leak(blq *q, blq__cell *c, const blq__item *it)
{
	if (q->cfg.leak_direction == BLQ_LEAK_FRONT) {
		blq__item old;

		/* Our own lane's oldest, else the rings' (not the timer's
		 * due ring: that room is not where ours goes). */
		for (unsigned a = 0; a < q->cfg.front_leak_attempts; a++) {
			if (blq__pop_oldest_own(q, &old))
				blq__to_dlq(q, c, &old, BLQ_DLQ_OVERFLOW_FRONT, 0);
			if (blq__push_any(q, it))
				return true;
		}
	}
	blq__to_dlq(q, c, it, BLQ_DLQ_OVERFLOW_REAR, 0);
	return false;
}


/* A blocking producer counts in producers_blocked from when it finds the
 * queue full until it gets in or gives up. */
static int unblock(blq *q, bool counted, int rc)
{
	if (counted)
		atomic_fetch_sub_explicit(&q->producers_blocked, 1, memory_order_relaxed);
	return rc;
}

/* blq__place, and whether the wait for room may spin first (spin.h; 0.4
 * took yielding looks there, which these measurements are of). A single
 * blocking producer does not: it sleeps at once. Measured on W1 (2 producers, 2 workers, 2 CPUs), 10 runs each,
 * alternated: with the looks 78-210 ns/item in two regimes, the slower
 * one in half the runs; without them 76-113. A worker frees room at half
 * a ring, so the sleep and its wake-up weigh once per half a ring's
 * items. A batch's producer and the timer thread keep their looks: with
 * a batch's producer sleeping at once too W1-BATCH was 1.29x slower, and
 * with the timer thread too RETRY was 1.17x (1.09x as it is). */
static int place(blq *q, blq__cell *c, blq__item *it, enum blq__mode mode, bool looks,
		 bool *pushed)
{
	bool counted = false;

	*pushed = false;
	for (;;) {
		if (blq__push_any(q, it)) {
			*pushed = true;
			return unblock(q, counted, 0);
		}
		if (q->balanced)
			blq__scale_up_hint(q); /* full: more hands, now */
		if (q->leaky) {
			*pushed = leak(q, c, it);
			return 0;
		}
		if (mode == BLQ__TRY)
			return BLQ_EFULL;
		if (mode == BLQ__BLOCK && !counted) {
			atomic_fetch_add_explicit(&q->producers_blocked, 1, memory_order_relaxed);
			counted = true;
		}
		/* The timer thread wakes the workers once per batch, after it
		 * (timer.c, deliver_batch): the items of this batch it has
		 * pushed so far have woken nobody. Wake a worker before waiting
		 * for room, or the rings stay full of them while the workers
		 * sleep as if they were empty (a woken worker passes it on). */
		if (mode == BLQ__TIMER)
			blq__ec_notify(&q->items_ec, 1);
		/* Slow path: with `looks`, a spin while it can pay (the
		 * workers are draining on other CPUs); then sleep until a
		 * worker frees room or we must give up, re-checking both
		 * after announcing ourselves. */
		if (looks && spin_push(q, it, mode)) {
			*pushed = true;
			return unblock(q, counted, 0);
		}
		uint32_t snap = blq__ec_prepare(&q->space_ec);
		if (blq__push_any(q, it)) {
			blq__ec_cancel(&q->space_ec);
			*pushed = true;
			return unblock(q, counted, 0);
		}
		if (give_up(q, mode)) {
			blq__ec_cancel(&q->space_ec);
			return unblock(q, counted, BLQ_ECLOSED);
		}
		blq__ec_wait(&q->space_ec, snap, 0);
		if (give_up(q, mode))
			return unblock(q, counted, BLQ_ECLOSED);
	}
}

int blq__place(blq *q, blq__cell *c, blq__item *it, enum blq__mode mode, bool *pushed)
{
	return place(q, c, it, mode, true, pushed);
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

/* Where a push did not go through at once: a due item's ring, then
 * blq__place's leaking or waiting. Out of line, so the fast path below
 * stays a push and a store. */
static __attribute__((noinline)) int admit_slow(blq *q, blq__cell *c, blq__item *it,
						enum blq__mode mode, blq__ec **woken)
{
	bool pushed = false;
	int rc;

	if (mode == BLQ__TIMER) {
		/* A due item: the timer's own ring first (ours while the
		 * thread delivers; NULL without memory). */
		blq__ring *due = atomic_load_explicit(&q->due, memory_order_relaxed);

		if (due != NULL && blq__ring_push(due, it)) {
			*woken = &q->items_ec;
			return 0;
		}
	}
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
