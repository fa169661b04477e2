/*
 * The timer's waiting items (timed_set.h), ordered by (due, order), so
 * equal due times leave in insertion order.
 *
 * Two parts, and the earliest entry is the earlier of their heads:
 * - the lane, a FIFO ring: an entry due no earlier than the lane's last
 *   joins it in O(1). That is most of them: one delay interval, one
 *   backoff step, so arrivals come in due order;
 * - a binary min-heap for the others (a shorter delay behind a longer
 *   one), O(log n) moves of a 96-byte entry.
 * Memory grows by doubling from 64 entries per part, up to the caller's
 * limit (its timer_capacity); a failed growth leaves the set as it was.
 * No lock: the timer holds its mutex around every call.
 */
#include "timed_set.h"

#include <stdlib.h>
#include <string.h>

#include <blq/error.h>

static bool earlier(const blq__timed *a, const blq__timed *b)
{
	return a->due < b->due || (a->due == b->due && a->order < b->order);
}

static void sift_up(blq__timed *h, size_t i)
{
	blq__timed x = h[i];

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!earlier(&x, &h[p]))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = x;
}

static void sift_down(blq__timed *h, size_t n, size_t i)
{
	blq__timed x = h[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && earlier(&h[c + 1], &h[c]))
			c++;
		if (!earlier(&h[c], &x))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

static blq__timed *lane_at(const blq__timed_set *t, size_t i)
{
	return &t->lane[(t->lhead + i) % t->lcap];
}

const blq__timed *blq__timed_set_earliest(const blq__timed_set *t)
{
	const blq__timed *l = t->ln > 0 ? lane_at(t, 0) : NULL;
	const blq__timed *h = t->hn > 0 ? &t->heap[0] : NULL;

	if (l == NULL || (h != NULL && earlier(h, l)))
		return h;
	return l;
}

void blq__timed_set_pop(blq__timed_set *t, blq__timed *out)
{
	if (t->ln > 0 && blq__timed_set_earliest(t) == lane_at(t, 0)) {
		if (out != NULL)
			*out = *lane_at(t, 0);
		t->lhead = (t->lhead + 1) % t->lcap;
		t->ln--;
	} else {
		if (out != NULL)
			*out = t->heap[0];
		t->hn--;
		if (t->hn > 0) {
			t->heap[0] = t->heap[t->hn];
			sift_down(t->heap, t->hn, 0);
		}
	}
	t->n--;
}

void blq__timed_set_init(blq__timed_set *s)
{
	memset(s, 0, sizeof(*s));
}

void blq__timed_set_free(blq__timed_set *s)
{
	free(s->heap);
	free(s->lane);
	memset(s, 0, sizeof(*s));
}

static size_t grown(size_t cap, size_t limit)
{
	cap = cap == 0 ? 64 : cap * 2;
	return cap < limit ? cap : limit;
}

/* Room for one more heap entry: 0, or BLQ_ENOMEM. */
static int reserve_heap(blq__timed_set *t, size_t limit)
{
	if (t->hn < t->hcap)
		return 0;
	size_t cap = grown(t->hcap, limit);
	blq__timed *h = realloc(t->heap, cap * sizeof(*h));
	if (h == NULL)
		return BLQ_ENOMEM;
	t->heap = h;
	t->hcap = cap;
	return 0;
}

/* Room for one more lane entry (the ring unwrapped into the new
 * memory): 0, or BLQ_ENOMEM. */
static int reserve_lane(blq__timed_set *t, size_t limit)
{
	if (t->ln < t->lcap)
		return 0;
	size_t cap = grown(t->lcap, limit);
	blq__timed *l = malloc(cap * sizeof(*l));
	if (l == NULL)
		return BLQ_ENOMEM;
	for (size_t i = 0; i < t->ln; i++)
		l[i] = *lane_at(t, i);
	free(t->lane);
	t->lane = l;
	t->lcap = cap;
	t->lhead = 0;
	return 0;
}

int blq__timed_set_insert(blq__timed_set *t, const blq__timed *e, size_t limit)
{
	int rc;

	if (t->ln == 0 || !earlier(e, lane_at(t, t->ln - 1))) {
		if ((rc = reserve_lane(t, limit)) != 0)
			return rc;
		*lane_at(t, t->ln) = *e;
		t->ln++;
	} else {
		if ((rc = reserve_heap(t, limit)) != 0)
			return rc;
		t->heap[t->hn] = *e;
		sift_up(t->heap, t->hn);
		t->hn++;
	}
	t->n++;
	return 0;
}

size_t blq__timed_set_take_if(blq__timed_set *t, bool (*pred)(const blq__timed *e, void *ctx),
			      void *ctx, blq__timed *out, size_t max)
{
	size_t k = 0, kept = 0;

	/* The lane: compacted in place, in order, from its head, so what
	 * stays keeps its FIFO order (and due order). */
	for (size_t i = 0; i < t->ln; i++) {
		blq__timed *e = lane_at(t, i);

		if (k < max && pred(e, ctx))
			out[k++] = *e;
		else
			*lane_at(t, kept++) = *e;
	}
	t->ln = kept;
	/* The heap: compacted, then rebuilt bottom-up (O(n)). */
	kept = 0;
	for (size_t i = 0; i < t->hn; i++) {
		if (k < max && pred(&t->heap[i], ctx))
			out[k++] = t->heap[i];
		else
			t->heap[kept++] = t->heap[i];
	}
	t->hn = kept;
	for (size_t i = t->hn / 2; i-- > 0;)
		sift_down(t->heap, t->hn, i);
	t->n -= k;
	return k;
}
