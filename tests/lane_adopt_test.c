/*
 * A thread that found no free lane (queue/lanes.h, "Ownership") pushes
 * into the shared rings and looks for a lane again every BLQ__LANE_RETRY
 * calls; when one was given back meanwhile it adopts it, and its items
 * still start in the order it enqueued them (its items in the shared
 * ring count as a spill, rings.c). A private unit: the test asks the
 * lane lookup itself (blq__lane_own, queue/internal.h) whether the
 * thread has a lane, which no public call tells.
 *
 * 16 threads take the 16 lanes and stay; this thread enqueues without a
 * lane while the queue's worker runs its items, one of the 16 exits
 * (its lane goes back), and this thread must adopt that lane within
 * BLQ__LANE_RETRY further enqueues. The worker checks that this
 * thread's items ran in order, before, across and after the adoption.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "internal.h"
#include "suite_util.h"

#define OWNERS BLQ__LANES_MAX
#define MINE 99u /* this thread's producer number in the ids */

typedef struct order {
	pthread_mutex_t mu;
	uint64_t next[128]; /* per producer: the next seq expected at least */
	_Atomic unsigned disorder;
	_Atomic uint64_t ran;
} order;

/* Payload ids: producer * 1,000,000 + seq. */
static int in_order(void *ctx, void *payload, blq_task *task)
{
	order *o = ctx;
	tu_item *it = payload;
	unsigned p = (unsigned)(it->id / 1000000u);
	uint64_t seq = it->id % 1000000u;

	(void)task;
	if (it->magic != TU_MAGIC_LIVE || atomic_fetch_add(&it->taken, 1) != 0 || p >= 128)
		abort();
	pthread_mutex_lock(&o->mu);
	if (o->next[p] > seq)
		atomic_fetch_add(&o->disorder, 1);
	o->next[p] = seq + 1;
	pthread_mutex_unlock(&o->mu);
	atomic_fetch_add(&o->ran, 1);
	tu_item_free(it);
	return 0;
}

typedef struct owner {
	blq *q;
	unsigned producer;
	tu_gate leave; /* the thread exits (its lane goes back) once open */
	_Atomic int has_lane;
} owner;

static void *own_a_lane(void *p)
{
	owner *o = p;

	cr_expect_eq(blq_enqueue(o->q, tu_item_new((uint64_t)o->producer * 1000000u)), 0);
	atomic_store(&o->has_lane, blq__lane_own(o->q) != NULL);
	tu_gate_pass(&o->leave);
	return NULL;
}

Test(lane_adopt, a_thread_without_a_lane_adopts_one_given_back_and_keeps_its_order,
     .timeout = 60)
{
	order ord = {.mu = PTHREAD_MUTEX_INITIALIZER};
	blq_config c = {0};

	c.capacity = 8192;
	c.workers = 1;
	c.worker = in_order;
	c.worker_ctx = &ord;
	c.item_free = tu_item_free;
	blq *q = must_new(&c);
	static owner o[OWNERS];
	pthread_t t[OWNERS];

	for (unsigned i = 0; i < OWNERS; i++) {
		o[i] = (owner){.q = q, .producer = 1 + i};
		tu_gate_init(&o[i].leave);
		cr_assert_eq(pthread_create(&t[i], NULL, own_a_lane, &o[i]), 0);
		cr_assert(TU_WAIT_FOR(atomic_load(&o[i].leave.waiting) == 1, 5000));
		cr_assert(atomic_load(&o[i].has_lane), "owner %u got no lane", i);
	}

	/* Every lane is taken: ours are pushes into the shared rings. */
	uint64_t seq = 0;

	for (; seq < 100; seq++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(MINE * 1000000u + seq)), 0);
	cr_assert(blq__lane_own(q) == NULL, "a lane with all %u taken", OWNERS);

	/* One owner leaves: its lane goes back when its thread exits. */
	tu_gate_open(&o[0].leave);
	cr_assert_eq(pthread_join(t[0], NULL), 0);
	uint64_t from = seq;

	while (blq__lane_own(q) == NULL && seq - from <= BLQ__LANE_RETRY)
		cr_assert_eq(blq_enqueue(q, tu_item_new(MINE * 1000000u + seq++)), 0);
	cr_assert(blq__lane_own(q) != NULL, "no lane after %llu more enqueues",
		  (unsigned long long)(seq - from));
	/* And on from the lane. */
	for (uint64_t end = seq + 5000; seq < end; seq++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(MINE * 1000000u + seq)), 0);

	for (unsigned i = 1; i < OWNERS; i++) {
		tu_gate_open(&o[i].leave);
		cr_assert_eq(pthread_join(t[i], NULL), 0);
	}
	cr_assert_eq(blq_close(q), 0);
	struct blq_stats st = stats(q);

	cr_expect_eq(st.in, OWNERS + seq);
	cr_expect_eq(st.processed, OWNERS + seq);
	cr_expect_eq(atomic_load(&ord.ran), OWNERS + seq);
	cr_expect_eq(atomic_load(&ord.disorder), 0, "this thread's items ran out of order");
	cr_expect(tu_balanced(&st));
	blq_free(q);
	for (unsigned i = 0; i < OWNERS; i++)
		tu_gate_destroy(&o[i].leave);
}
