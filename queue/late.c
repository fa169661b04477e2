/*
 * Late attempts: an attempt the watchdog gives up at its time limit ends
 * at the limit, not when its callback returns (seed 000 signals the
 * caller at the timeout). Whoever waits on the item learns it then:
 * blq_enqueue_wait and _result, the completion hooks, the handle's state
 * and outcome, the counters; and a retry starts then, on a copy.
 *
 * The payload rule. The late callback may still read the payload, so the
 * queue neither frees it nor hands it to anyone else until the callback
 * returns:
 * - an item whose way needs only its identity (it ends timed out,
 *   cancelled, or lost) ends at the limit; item_free runs on the original
 *   when the callback returns (on the worker, worker.c);
 * - an item whose way takes the payload (a retry, or the DLQ through
 *   fail_to_dlq or a dropping close of a leaky queue) goes on at the
 *   limit only on a copy the application makes (blq_config.item_dup,
 *   called here while the callback may still run, so it must only read
 *   the payload); the original is freed when the callback returns.
 *   Without item_dup, or when it returns NULL, the item waits for the
 *   callback as before this file existed (the worker ends it).
 * - a callback that claimed the payload (blq_task_claim) before the
 *   watchdog raised its token keeps the attempt: its return decides.
 *
 * How. The watchdog's give-up already has a handshake with the worker
 * (handback.c): its CAS on the worker's busy word, then the hand copied,
 * then BLQ__HAND_GONE stored with release, which the worker waits for
 * after its callback. blq__late_take runs inside that window: it raises
 * the token (so a later claim fails), reads the running item (the one
 * the worker published in w->h.running before its limit, ordered by the
 * CAS like the hand; not w->h.it[next - 1]: when an earlier give-up of
 * the same item could not end it and its retry, finding no room, ran
 * again in place, that give-up's settle had moved next to the hand's
 * end, and the second give-up ended the hand's last item, which then ran
 * twice, while the stuck one never ended: late_timeout_test,
 * a_second_give_up_ends_the_item_it_gave_up), copies it, unpublishes it
 * from its handle (blq_cancel then leaves the task alone) and sets
 * w->late. The worker, after its settle, sees w->late and only frees the
 * payload. The outcome itself runs after the window (blq__late_end), so
 * the worker never waits for hooks or a DLQ: it goes through
 * blq__attempt_failed with no worker, as a worker's failed attempt would,
 * with item_free held back for a lent original (outcome.c). Until it is
 * placed the item counts in q->staged, as the hand does, so a draining
 * close waits for it.
 *
 * Where it runs: on the watchdog's thread, so the hooks of an item that
 * times out at its limit run there (queue.h, blq_done), and a DLQ that
 * blocks (a full non-leaky queue) holds the watchdog until it has room,
 * as it holds any thread that leaks into it.
 */
#include "internal.h"

/* Whether the item's way after a timed-out attempt takes its payload (a
 * retry, the DLQ) rather than only its identity; the same decisions as
 * blq__attempt_failed and blq__retry, in their order. */
static bool takes_payload(const blq *q, const blq__item *it, bool cancelled)
{
	if (cancelled)
		return false;
	if (it->attempt > q->cfg.max_retries)
		return q->cfg.fail_to_dlq;
	if (atomic_load_explicit(&q->forced, memory_order_acquire) != 0)
		return q->leaky; /* abandoned: the DLQ, or lost */
	return true;
}

bool blq__late_take(blq *q, blq__worker *w, blq__late *late, unsigned room)
{
	int tok = BLQ__TOKEN_DOWN;

	/* Raised now, so a claim after this fails; one made before keeps the
	 * attempt for the callback. Ordered before the worker's next use of
	 * the token by our release of the hand (handback.c). */
	if (!atomic_compare_exchange_strong_explicit(&w->task.token, &tok, BLQ__TOKEN_RAISED,
						     memory_order_relaxed, memory_order_relaxed) &&
	    tok == BLQ__TOKEN_CLAIMED)
		return false;
	const blq__hand *h = &w->h;
	const blq__item *it = h->running; /* the running one (worker.c) */
	bool copy = takes_payload(q, it, it->done != NULL && blq__handle_cancelled(it->done));

	/* A retry that finds no room waits in the backlog: only with a place
	 * there beside the whole hand. */
	if (copy && (q->cfg.item_dup == NULL || room <= h->n - h->next))
		return false;
	late->it = *it;
	late->copied = copy;
	if (copy) {
		late->it.payload = q->cfg.item_dup(it->payload);
		if (late->it.payload == NULL) {
			blq__log(q, BLQ_LOG_WARN,
				 "queue %s: item_dup returned NULL; a timed-out item waits for "
				 "its callback to return", q->name);
			return false;
		}
	}
	late->cancelled = false;
	if (it->done != NULL) {
		blq__wait_note(it->done, BLQ_ETIMEDOUT, it->attempt);
		late->cancelled = blq__handle_end(it->done, &w->task);
	}
	/* Counted before the worker is told, as the hand (handback.c). */
	atomic_fetch_add_explicit(&q->staged, 1, memory_order_seq_cst);
	w->late = true;
	return true;
}

void blq__late_end(blq *q, blq__late *late, blq__backlog *b)
{
	blq__lend_payload(!late->copied, late->it.payload);
	bool placed =
		blq__attempt_failed(q, NULL, &late->it, BLQ_ETIMEDOUT, true, late->cancelled);
	blq__lend_payload(false, NULL);
	if (placed) {
		blq__handoff(&q->port, &q->staged, -(uint64_t)1, &q->items_ec);
		return;
	}
	/* No room anywhere for the retry: placed with the hand, still
	 * counted (blq__late_take kept it a place). */
	b->it[b->n++] = late->it;
}
