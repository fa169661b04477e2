/* blq-demo's history ring (demo/history.c): samples numbered from 1, the
 * oldest dropped once full, "after" reads, and a writer racing readers
 * (run under TSan too). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"

/* Sample @seq of a ring with @nsubqs sub-queues: every field derived from
 * seq, so a copy torn between two samples is seen. */
static void make(demo_sample *x, unsigned nsubqs, uint64_t seq)
{
	memset(x, 0, demo_sample_size(nsubqs));
	x->t = (double)seq;
	x->in = seq * 10;
	x->timed_out = seq * 7;
	x->workers_stuck = (uint32_t)seq;
	for (unsigned i = 0; i < nsubqs; i++)
		x->subq_size[i] = seq * 100 + i;
}

static bool intact(const demo_sample *x, unsigned nsubqs, uint64_t seq)
{
	bool ok = x->t == (double)seq && x->in == seq * 10 && x->timed_out == seq * 7 &&
		  x->workers_stuck == (uint32_t)seq;
	for (unsigned i = 0; i < nsubqs; i++)
		ok = ok && x->subq_size[i] == seq * 100 + i;
	return ok;
}

/* Records samples 1..upto into @h. */
static void fill(demo_history *h, unsigned nsubqs, uint64_t from, uint64_t upto)
{
	_Alignas(demo_sample) unsigned char buf[sizeof(demo_sample) + 8 * sizeof(uint64_t)];
	for (uint64_t s = from; s <= upto; s++) {
		make((demo_sample *)buf, nsubqs, s);
		demo_history_record(h, (demo_sample *)buf);
	}
}

/* The samples after @after are exactly @first..@last, in order. */
static void expect_range(demo_history *h, unsigned nsubqs, uint64_t after, uint64_t first,
			 uint64_t last)
{
	size_t n = 99;
	uint64_t f = 0;
	void *got = demo_history_since(h, after, &n, &f);
	size_t want = last >= first ? (size_t)(last - first + 1) : 0;
	cr_expect_eq(n, want, "after %llu: %zu samples, want %zu", (unsigned long long)after, n,
		     want);
	if (want > 0) {
		cr_expect_eq(f, first, "after %llu: first seq %llu, want %llu",
			     (unsigned long long)after, (unsigned long long)f,
			     (unsigned long long)first);
		cr_assert_not_null(got);
		for (size_t i = 0; i < n && i < want; i++)
			cr_expect(intact(demo_history_at(got, nsubqs, i), nsubqs, first + i),
				  "after %llu: sample %zu is not seq %llu", (unsigned long long)after,
				  i, (unsigned long long)(first + i));
	} else {
		cr_expect_null(got);
	}
	free(got);
}

Test(history, empty_ring_has_nothing)
{
	demo_history *h = demo_history_new(4, 0);
	cr_assert_not_null(h);
	cr_expect_eq(demo_history_capacity(h), 4u);
	expect_range(h, 0, 0, 1, 0);
	expect_range(h, 0, 7, 1, 0);
	demo_history_free(h);
	demo_history_free(NULL);
	cr_expect_null(demo_history_new(0, 0), "a ring of no sample");
}

Test(history, numbered_from_one_and_after_skips_what_the_reader_has)
{
	demo_history *h = demo_history_new(4, 2);
	cr_assert_not_null(h);
	fill(h, 2, 1, 3);
	expect_range(h, 2, 0, 1, 3);
	expect_range(h, 2, 1, 2, 3);
	expect_range(h, 2, 3, 1, 0); /* up to date */
	expect_range(h, 2, 99, 1, 0); /* a number from another run */
	fill(h, 2, 4, 4);             /* exactly full */
	expect_range(h, 2, 0, 1, 4);
	demo_history_free(h);
}

/* The bound: once full, each sample drops the oldest; memory stays the
 * ring's, however many are recorded. */
Test(history, full_ring_keeps_the_newest_capacity_samples)
{
	demo_history *h = demo_history_new(4, 3);
	cr_assert_not_null(h);
	fill(h, 3, 1, 5);
	expect_range(h, 3, 0, 2, 5);
	expect_range(h, 3, 1, 2, 5);
	expect_range(h, 3, 3, 4, 5);
	fill(h, 3, 6, 1001); /* wraps many times */
	expect_range(h, 3, 0, 998, 1001);
	expect_range(h, 3, 999, 1000, 1001);
	expect_range(h, 3, 1001, 1, 0);
	demo_history_free(h);
}

typedef struct race {
	demo_history *h;
	atomic_bool done;
	atomic_uint bad;
} race;

static void *reader(void *arg)
{
	race *r = arg;
	uint64_t have = 0; /* the reader's last seq: it asks for what follows */
	while (!atomic_load(&r->done)) {
		size_t n;
		uint64_t first;
		void *got = demo_history_since(r->h, have, &n, &first);
		for (size_t i = 0; i < n; i++)
			if (!intact(demo_history_at(got, 1, i), 1, first + i) ||
			    (have > 0 && i == 0 && first <= have))
				atomic_fetch_add(&r->bad, 1);
		if (n > 0)
			have = first + n - 1;
		free(got);
	}
	return NULL;
}

/* One writer (the sampler) and readers (HTTP handlers) at once: every copy
 * is whole, numbers never go back. */
Test(history, readers_race_the_writer, .timeout = 60)
{
	race r = {.h = demo_history_new(8, 1)};
	cr_assert_not_null(r.h);
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, reader, &r), 0);
	fill(r.h, 1, 1, 20000);
	atomic_store(&r.done, true);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	cr_expect_eq(atomic_load(&r.bad), 0u, "%u torn or repeated samples", atomic_load(&r.bad));
	expect_range(r.h, 1, 0, 19993, 20000);
	demo_history_free(r.h);
}
