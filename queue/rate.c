/*
 * The rate limit: at most cfg.rate_limit item starts a second, with a
 * burst of cfg.rate_burst, per queue.
 *
 * Design
 * - GCRA (the generic cell rate algorithm): one atomic word, rate_tat, the
 *   theoretical arrival time of the next start on the queue's clock. A
 *   start at `now` may go when max(tat, now) - now <= tau (tau = T * (burst
 *   - 1), T = 1 s / rate) and moves tat to max(tat, now) + T, in one
 *   compare-and-swap. No timer thread refills a bucket, and an idle queue
 *   costs nothing.
 * - A worker takes the token before it takes the item (worker.c, take):
 *   an item held back stays in the rings, where it counts in blq_size, a
 *   full queue leaks or blocks as usual, and a Soft or Hard close abandons
 *   it like any queued item; no item waits in a worker's hands for a
 *   token. A token that then finds no item (another worker was quicker)
 *   goes back (blq__rate_refund) unless another start came after it. A
 *   limited worker takes one item at a time (no hand): each start needs
 *   its own token.
 * - A worker that finds items but no token sleeps on rate_ec until the
 *   token's time: no spinning. With the default clock (CLOCK_MONOTONIC)
 *   that is the time itself; with a caller's clock (tests) it cannot know
 *   how that clock moves, so it looks at least every
 *   BLQ__RATE_OWN_CLOCK_POLL_NS, and blq__timer_kick wakes it as it wakes
 *   the timer. A close, and the balancer's commands, wake it at once.
 * - The balancer does not grow the pool for a backlog the limit holds:
 *   while a worker sleeps for a token (rate_waiting), or one last found
 *   items and no token within a heartbeat (rate_held_at), scale_up leaves
 *   the pool alone (balancer.c). More workers would only wait for the
 *   same tokens.
 * - Off (rate_limit 0), a take pays one predictable branch on rate_t.
 * - Metrics: each worker counts, in its own cell, the starts that had to
 *   wait and the time it waited (blq_stats rate_delayed and
 *   rate_limited_ns, the status JSON, Prometheus).
 */
#include <math.h>

#include "internal.h"

/* How often a worker waiting for a token looks at a caller's clock. */
#define BLQ__RATE_OWN_CLOCK_POLL_NS 20000000ull

void blq__rate_init(blq *q)
{
	if (q->cfg.rate_limit == 0)
		return;
	/* config.c bounds the rate to [1e-3, 1e9]: T in [1, 1e12] ns, and tau
	 * below 1e12 * 1e6, far from overflowing. */
	double t = round(1e9 / q->cfg.rate_limit);
	q->rate_t = t >= 1 ? (uint64_t)t : 1;
	q->rate_tau = q->rate_t * (q->cfg.rate_burst - 1); /* the burst: 1 by default */
}

bool blq__rate_token(blq *q, uint64_t now, uint64_t *tat)
{
	uint64_t cur = atomic_load_explicit(&q->rate_tat, memory_order_relaxed);

	for (;;) {
		uint64_t base = cur > now ? cur : now;

		if (base - now > q->rate_tau)
			return false;
		/* Relaxed: the word orders nothing but itself. */
		if (atomic_compare_exchange_weak_explicit(&q->rate_tat, &cur, base + q->rate_t,
							  memory_order_relaxed,
							  memory_order_relaxed)) {
			*tat = base + q->rate_t;
			return true;
		}
	}
}

void blq__rate_refund(blq *q, uint64_t tat)
{
	uint64_t cur = tat;

	atomic_compare_exchange_strong_explicit(&q->rate_tat, &cur, tat - q->rate_t,
						memory_order_relaxed, memory_order_relaxed);
}

/* When the next token is free, at `now`: `now` itself when one is. */
static uint64_t token_at(const blq *q, uint64_t now)
{
	uint64_t tat = atomic_load_explicit(&q->rate_tat, memory_order_relaxed);

	return tat > now + q->rate_tau ? tat - q->rate_tau : now;
}

bool blq__rate_hold(blq *q, blq__worker *w)
{
	if (blq__taken_items(q) == 0)
		return false;
	uint32_t snap = blq__ec_prepare(&q->rate_ec);
	uint64_t now = blq__now(q);
	uint64_t at = token_at(q, now);
	/* A token is free (the take lost its item to another worker), or
	 * something the worker must see first: look again now. */
	if (at <= now || atomic_load_explicit(&q->forced, memory_order_acquire) ||
	    atomic_load_explicit(&w->cmd, memory_order_acquire) != BLQ__CMD_RUN ||
	    atomic_load_explicit(&q->paused, memory_order_seq_cst)) {
		blq__ec_cancel(&q->rate_ec);
		return true;
	}
	atomic_store_explicit(&q->rate_held_at, now, memory_order_relaxed);
	w->rate_waited = true;
	uint64_t wait = at - now;
	if (q->own_clock && wait > BLQ__RATE_OWN_CLOCK_POLL_NS)
		wait = BLQ__RATE_OWN_CLOCK_POLL_NS;
	atomic_fetch_add_explicit(&q->rate_waiting, 1, memory_order_relaxed);
	blq__ec_wait(&q->rate_ec, snap, blq__deadline_after(wait));
	atomic_fetch_sub_explicit(&q->rate_waiting, 1, memory_order_relaxed);
	uint64_t end = blq__now(q);
	blq__add_own(&w->cell->rate_wait_ns, end > now ? end - now : 0);
	return true;
}

bool blq__rate_holding(const blq *q, uint64_t now)
{
	if (q->rate_t == 0)
		return false;
	if (atomic_load_explicit(&q->rate_waiting, memory_order_relaxed) != 0)
		return true;
	uint64_t at = atomic_load_explicit(&q->rate_held_at, memory_order_relaxed);

	/* `at` may be a hair after our `now` (another thread's reading). */
	return at != 0 && (at >= now || now - at <= q->cfg.heartbeat_interval_ns);
}
