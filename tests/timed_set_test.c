/*
 * The timer's ordered set (queue/timed_set.c) on its own: entries leave
 * by (due, order), whichever part (the FIFO lane or the heap) holds them;
 * growth keeps the order; a failed growth changes nothing; and a long
 * random mix of inserts and pops matches a sorted reference exactly.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <blq/error.h>

#include "timed_set.h"

TestSuite(timed_set, .timeout = 60);

static blq__timed entry(uint64_t due, uint64_t order)
{
	blq__timed e;

	memset(&e, 0, sizeof(e));
	e.due = due;
	e.order = order;
	e.item.payload = (void *)(uintptr_t)(order + 1);
	return e;
}

static void pop_expect(blq__timed_set *s, uint64_t due, uint64_t order)
{
	blq__timed e;
	const blq__timed *head = blq__timed_set_earliest(s);

	cr_assert_not_null(head, "empty while (%llu, %llu) was expected",
			   (unsigned long long)due, (unsigned long long)order);
	cr_expect_eq(head->due, due);
	cr_expect_eq(head->order, order);
	blq__timed_set_pop(s, &e);
	cr_expect_eq(e.due, due, "due %llu, expected %llu", (unsigned long long)e.due,
		     (unsigned long long)due);
	cr_expect_eq(e.order, order, "order %llu, expected %llu", (unsigned long long)e.order,
		     (unsigned long long)order);
	cr_expect_eq((uintptr_t)e.item.payload, (uintptr_t)(order + 1), "the item came along");
}

Test(timed_set, empty_has_no_earliest)
{
	blq__timed_set s;

	blq__timed_set_init(&s);
	cr_expect_null(blq__timed_set_earliest(&s));
	cr_expect_eq(blq__timed_set_count(&s), 0);
	blq__timed_set_free(&s);
}

Test(timed_set, in_order_arrivals_use_the_lane_and_leave_fifo)
{
	blq__timed_set s;
	blq__timed e;

	blq__timed_set_init(&s);
	for (uint64_t i = 0; i < 10; i++) {
		e = entry(100 + i / 2, i); /* pairs of equal due times */
		cr_assert_eq(blq__timed_set_insert(&s, &e, 1024), 0);
	}
	cr_expect_eq(s.ln, 10, "every in-order arrival joins the lane");
	cr_expect_eq(s.hn, 0);
	cr_expect_eq(blq__timed_set_count(&s), 10);
	for (uint64_t i = 0; i < 10; i++)
		pop_expect(&s, 100 + i / 2, i);
	cr_expect_null(blq__timed_set_earliest(&s));
	blq__timed_set_free(&s);
}

Test(timed_set, out_of_order_arrivals_use_the_heap_and_merge_with_the_lane)
{
	blq__timed_set s;
	blq__timed e;
	/* Lane: 10, 20, 30, 40; heap: 25, 5, 35, 15 (each earlier than the
	 * lane's last when it came). */
	static const uint64_t due[] = {10, 20, 30, 40, 25, 5, 35, 15};
	static const uint64_t want[][2] = {{5, 5},	{10, 0}, {15, 7}, {20, 1},
					   {25, 4},	{30, 2}, {35, 6}, {40, 3}};

	blq__timed_set_init(&s);
	for (uint64_t i = 0; i < 8; i++) {
		e = entry(due[i], i);
		cr_assert_eq(blq__timed_set_insert(&s, &e, 1024), 0);
	}
	cr_expect_eq(s.ln, 4);
	cr_expect_eq(s.hn, 4);
	for (int i = 0; i < 8; i++)
		pop_expect(&s, want[i][0], want[i][1]);
	blq__timed_set_free(&s);
}

Test(timed_set, equal_due_times_across_lane_and_heap_keep_insertion_order)
{
	blq__timed_set s;
	blq__timed e;

	blq__timed_set_init(&s);
	e = entry(50, 0); /* lane */
	blq__timed_set_insert(&s, &e, 64);
	e = entry(60, 1); /* lane */
	blq__timed_set_insert(&s, &e, 64);
	e = entry(50, 2); /* heap: earlier than 60 */
	blq__timed_set_insert(&s, &e, 64);
	e = entry(50, 3); /* heap */
	blq__timed_set_insert(&s, &e, 64);
	pop_expect(&s, 50, 0);
	pop_expect(&s, 50, 2);
	pop_expect(&s, 50, 3);
	pop_expect(&s, 60, 1);
	blq__timed_set_free(&s);
}

Test(timed_set, pop_with_null_drops_the_earliest)
{
	blq__timed_set s;
	blq__timed e;

	blq__timed_set_init(&s);
	for (uint64_t i = 0; i < 3; i++) {
		e = entry(30 - 10 * i, i); /* 30 lane, 20 heap, 10 heap */
		blq__timed_set_insert(&s, &e, 64);
	}
	blq__timed_set_pop(&s, NULL);
	cr_expect_eq(blq__timed_set_count(&s), 2);
	pop_expect(&s, 20, 1);
	pop_expect(&s, 30, 0);
	blq__timed_set_free(&s);
}

Test(timed_set, growth_past_the_first_block_keeps_order_with_a_wrapped_lane)
{
	blq__timed_set s;
	blq__timed e;
	uint64_t order = 0, next_out = 0;

	blq__timed_set_init(&s);
	/* 40 in, 30 out: the lane's head moves, so the 64-entry ring wraps
	 * before it must grow; then 300 more in order. */
	for (; order < 40; order++) {
		e = entry(order, order);
		cr_assert_eq(blq__timed_set_insert(&s, &e, 100000), 0);
	}
	for (; next_out < 30; next_out++)
		pop_expect(&s, next_out, next_out);
	for (; order < 340; order++) {
		e = entry(order, order);
		cr_assert_eq(blq__timed_set_insert(&s, &e, 100000), 0);
	}
	cr_expect_geq(s.lcap, 310, "the lane grew (capacity %zu)", s.lcap);
	for (; next_out < 340; next_out++)
		pop_expect(&s, next_out, next_out);
	cr_expect_eq(blq__timed_set_count(&s), 0);
	blq__timed_set_free(&s);
}

Test(timed_set, growth_stops_at_the_limit)
{
	blq__timed_set s;
	blq__timed e;

	blq__timed_set_init(&s);
	for (uint64_t i = 0; i < 100; i++) {
		e = entry(i, i);
		cr_assert_eq(blq__timed_set_insert(&s, &e, 100), 0);
	}
	cr_expect_eq(s.lcap, 100, "doubling from 64 is capped at the limit");
	blq__timed_set_free(&s);
}

/* A sorted reference: entries kept in an array, the minimum by (due,
 * order) found by a scan. */
typedef struct ref {
	blq__timed *e;
	size_t n;
} ref;

static size_t ref_min(const ref *r)
{
	size_t m = 0;

	for (size_t i = 1; i < r->n; i++)
		if (r->e[i].due < r->e[m].due ||
		    (r->e[i].due == r->e[m].due && r->e[i].order < r->e[m].order))
			m = i;
	return m;
}

Test(timed_set, random_mix_matches_a_sorted_reference)
{
	enum { OPS = 100000, MAXN = 4096 };
	blq__timed_set s;
	ref r = {calloc(MAXN, sizeof(blq__timed)), 0};
	uint64_t x = 0x9E3779B97F4A7C15ull, order = 0, clock = 0, mismatches = 0;
	bool heap_used = false;

	cr_assert_not_null(r.e);
	blq__timed_set_init(&s);
	for (int op = 0; op < OPS; op++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		bool insert = r.n == 0 || (r.n < MAXN && (x & 7) < 5);
		if (insert) {
			/* Mostly in due order (one step), sometimes earlier,
			 * sometimes equal: both parts and the ties. */
			uint64_t kind = (x >> 16) % 8;
			uint64_t due = kind < 5   ? clock + 100
				       : kind < 7 ? clock + (x >> 24) % 100
						  : clock + 50;
			if (kind < 5)
				clock++;
			blq__timed e = entry(due, order++);
			cr_assert_eq(blq__timed_set_insert(&s, &e, MAXN), 0);
			r.e[r.n++] = e;
			heap_used |= s.hn > 0;
		} else {
			size_t m = ref_min(&r);
			blq__timed got;

			blq__timed_set_pop(&s, &got);
			if (got.due != r.e[m].due || got.order != r.e[m].order)
				mismatches++;
			r.e[m] = r.e[--r.n];
		}
		cr_assert_eq(blq__timed_set_count(&s), r.n);
	}
	while (r.n > 0) {
		size_t m = ref_min(&r);
		blq__timed got;

		blq__timed_set_pop(&s, &got);
		if (got.due != r.e[m].due || got.order != r.e[m].order)
			mismatches++;
		r.e[m] = r.e[--r.n];
	}
	cr_expect_eq(mismatches, 0, "%llu pops out of order", (unsigned long long)mismatches);
	cr_expect(heap_used, "the mix reached the heap, not only the lane");
	blq__timed_set_free(&s);
	free(r.e);
}

static bool order_odd(const blq__timed *e, void *ctx)
{
	(void)ctx;
	return e->order % 2 == 1;
}

/* take_if removes exactly the matching entries, from the lane and the heap
 * (a wrapped lane too), at most `max` per call, and what stays still
 * leaves by (due, order). */
Test(timed_set, take_if_removes_the_matching_entries_and_keeps_the_order)
{
	blq__timed_set s;
	uint64_t order = 0;

	blq__timed_set_init(&s);
	/* Wrap the lane: fill 40, pop 30, add 40 more (lane), then 30 out of
	 * order (heap). */
	for (int i = 0; i < 40; i++) {
		blq__timed e = entry(1000 + (uint64_t)i, order++);
		cr_assert_eq(blq__timed_set_insert(&s, &e, 4096), 0);
	}
	for (int i = 0; i < 30; i++)
		blq__timed_set_pop(&s, NULL);
	for (int i = 0; i < 40; i++) {
		blq__timed e = entry(2000 + (uint64_t)i, order++);
		cr_assert_eq(blq__timed_set_insert(&s, &e, 4096), 0);
	}
	for (int i = 0; i < 30; i++) {
		blq__timed e = entry(500 + (uint64_t)(i * 37 % 30) * 50, order++);
		cr_assert_eq(blq__timed_set_insert(&s, &e, 4096), 0);
	}
	cr_assert(s.hn > 0 && s.ln > 0);
	size_t before = blq__timed_set_count(&s);
	blq__timed out[80];
	size_t a = blq__timed_set_take_if(&s, order_odd, NULL, out, 10);
	cr_expect_eq(a, 10, "at most max per call");
	size_t b = blq__timed_set_take_if(&s, order_odd, NULL, out + a, 80 - a);
	cr_expect_eq(a + b, 40, "every odd one: 5 + 20 + 15");
	for (size_t i = 0; i < a + b; i++)
		cr_expect_eq(out[i].order % 2, 1);
	cr_expect_eq(blq__timed_set_count(&s), before - 40);
	cr_expect_eq(blq__timed_set_take_if(&s, order_odd, NULL, out, 80), 0);
	uint64_t last_due = 0, last_order = 0;
	size_t n = 0;
	while (blq__timed_set_count(&s) > 0) {
		blq__timed e;
		blq__timed_set_pop(&s, &e);
		cr_expect_eq(e.order % 2, 0);
		cr_expect(n == 0 || e.due > last_due || (e.due == last_due && e.order > last_order),
			  "out of order after take_if: (%llu, %llu)", (unsigned long long)e.due,
			  (unsigned long long)e.order);
		last_due = e.due;
		last_order = e.order;
		n++;
	}
	cr_expect_eq(n, before - 40);
	blq__timed_set_free(&s);
}
