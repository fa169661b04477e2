/*
 * QoS: ingress by weight, PQ/RR/WRR egress order, per-sub-queue leaking
 * and blocking, metrics and status per sub-queue, and the close paths with
 * items spread over sub-queues and egress. A custom evaluator routes each
 * tu_item by its id (percent = id / 1000), so a test picks the sub-queue.
 * Where order matters, the one worker is parked on a gate holding an item
 * and the egress (capacity 1) holds another: every later item waits in its
 * sub-queue until the gate opens, and the egress order is then exactly
 * the algorithm's.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/resource.h>

#include "suite_util.h"

/* Percents that route to each of the three sub-queues of sq3() (weights
 * 250/600/150: 1-25, 26-85, 86-100). */
enum { HIGH = 1, MED = 50, LOW = 100 };
#define ID(route, n) ((uint64_t)(route) * 1000u + (n))

static unsigned by_id(void *ctx, void *payload, uint64_t weight)
{
	(void)ctx, (void)weight;
	return payload != NULL ? (unsigned)(((tu_item *)payload)->id / 1000u) : 1;
}

static unsigned route_of(uint64_t id)
{
	unsigned p = (unsigned)(id / 1000u);

	return p <= 25 ? 0 : p <= 85 ? 1 : 2;
}

/* Per-sub-queue metrics events, by name. */
typedef struct counts {
	_Atomic uint64_t put[3], pull[3], leak[3];
} counts;

static int subq_index(const char *name)
{
	return strcmp(name, "high") == 0 ? 0 : strcmp(name, "medium") == 0 ? 1 : 2;
}

static void on_put(void *ctx, const char *q, const char *s)
{
	(void)q;
	atomic_fetch_add(&((counts *)ctx)->put[subq_index(s)], 1);
}

static void on_pull(void *ctx, const char *q, const char *s)
{
	(void)q;
	atomic_fetch_add(&((counts *)ctx)->pull[subq_index(s)], 1);
}

static void on_leak(void *ctx, const char *q, const char *s)
{
	(void)q;
	atomic_fetch_add(&((counts *)ctx)->leak[subq_index(s)], 1);
}

/* The worker: parks on the gate while it is shut, records the order, owns
 * what it processes. With wait_cancel it holds its first item until a
 * force close cancels it. */
typedef struct wctx {
	tu_gate gate;
	pthread_mutex_t mu;
	uint64_t order[4096];
	size_t n;
	bool wait_cancel;
	_Atomic uint64_t nulls; /* NULL payloads processed */
} wctx;

static int worker(void *ctx, void *payload, blq_task *task)
{
	wctx *w = ctx;
	tu_item *it = payload;

	if (it == NULL) {
		atomic_fetch_add(&w->nulls, 1);
		return 0;
	}
	if (it->magic != TU_MAGIC_LIVE || atomic_fetch_add(&it->taken, 1) != 0)
		abort();
	if (w->wait_cancel && it->id == 0) {
		while (!blq_task_cancelled(task))
			tu_sleep_us(100);
	}
	tu_gate_pass(&w->gate);
	pthread_mutex_lock(&w->mu);
	if (w->n < 4096)
		w->order[w->n++] = it->id;
	pthread_mutex_unlock(&w->mu);
	tu_item_free(it);
	return 0;
}

static wctx *wctx_new(bool gate_open)
{
	wctx *w = calloc(1, sizeof(*w));

	tu_gate_init(&w->gate);
	if (gate_open)
		tu_gate_open(&w->gate);
	pthread_mutex_init(&w->mu, NULL);
	return w;
}

/* Once the queue that ran it is freed (blq_free joins every worker). */
static void wctx_free(wctx *w)
{
	tu_gate_destroy(&w->gate);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

static blq_enqueuer rec_dlq(tu_rec *r)
{
	blq_enqueuer e = {.enqueue = tu_rec_enqueue, .self = r};

	return e;
}

static blq_qos_subq subqs3[3];

/* Three sub-queues high/medium/low, weights 250/600/150, capacity `cap`
 * each; the egress holds `egress` items. */
static blq_qos_config sq3(enum blq_qos_algo algo, size_t cap, size_t egress)
{
	subqs3[0] = (blq_qos_subq){.name = "high", .capacity = cap, .weight = 250};
	subqs3[1] = (blq_qos_subq){.name = "medium", .capacity = cap, .weight = 600};
	subqs3[2] = (blq_qos_subq){.name = "low", .capacity = cap, .weight = 150};
	blq_qos_config qc = {
		.algo = algo,
		.egress = {.capacity = egress},
		.evaluator = {.kind = BLQ_QOS_EVAL_CUSTOM, .fn = by_id},
		.subqs = subqs3,
		.nsubqs = 3,
	};
	return qc;
}

static blq_config cfg_for(wctx *w, const blq_qos_config *qc)
{
	blq_config c = {0};

	c.name = "qos";
	c.qos = qc;
	c.workers = 1;
	c.worker = worker;
	c.worker_ctx = w;
	c.item_free = tu_item_free;
	return c;
}

static size_t subq_size(blq *q, unsigned i)
{
	blq_qos_subq_stats st;

	cr_assert_eq(blq_qos_subq_info(q, i, &st), 0);
	return st.size;
}

static size_t subqs_total(blq *q)
{
	return subq_size(q, 0) + subq_size(q, 1) + subq_size(q, 2);
}

/* The worker parked on item 0 and the egress (capacity 1) holding item 1:
 * from here on items stay in their sub-queues until the gate opens. */
static void park_worker_and_fill_egress(blq *q, wctx *w)
{
	cr_assert_eq(blq_enqueue(q, tu_item_new(ID(LOW, 0))), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w->gate.waiting) == 1, 2000));
	cr_assert_eq(blq_enqueue(q, tu_item_new(ID(LOW, 1))), 0);
	/* blq_size == 1 once the egress thread has given back its staged
	 * counts (egress.c: a flush before it sleeps). */
	cr_assert(TU_WAIT_FOR(subq_size(q, BLQ_QOS_EGRESS) == 1 && subqs_total(q) == 0 &&
				      blq_size(q) == 1,
			      2000));
}

/* Opens the gate, closes gracefully: every item must have run. */
static void drain(blq *q, wctx *w, size_t items)
{
	tu_gate_open(&w->gate);
	cr_assert_eq(blq_close(q), 0);
	cr_assert_eq(w->n, items);
}

/* The worker ran want[0..n) in that order, from position `from`. */
static void expect_order(const wctx *w, size_t from, const uint64_t *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(w->order[from + i], want[i], "position %zu: %lu, want %lu", from + i,
			     w->order[from + i], want[i]);
}

static void expect_balanced(blq *q)
{
	struct blq_stats s = stats(q);

	cr_expect(tu_balanced(&s),
		  "in %lu != processed %lu + failed %lu + leaked %lu + expired %lu + lost %lu",
		  s.in, s.processed, s.failed, s.leaked, s.expired, s.lost);
}

TestSuite(qos, .timeout = 60);

Test(qos, capacity_is_the_sum_and_the_config_is_copied)
{
	wctx *w = wctx_new(true);
	blq_qos_subq subqs[2] = {{.name = "a", .capacity = 10, .weight = 1},
				 {.capacity = 20, .ingress_weight = 1, .egress_weight = 3}};
	blq_qos_config qc = {.evaluator = {.kind = BLQ_QOS_EVAL_RANDOM}, .subqs = subqs, .nsubqs = 2};
	blq_config c = cfg_for(w, &qc);
	c.capacity = 10 + 20 + 64; /* the sum: accepted like 0 */
	blq *q = must_new(&c);

	subqs[0].name = "changed"; /* copied at creation */
	subqs[0].capacity = 999;
	cr_expect_eq(blq_capacity(q), 94);
	cr_expect_eq(blq_qos_subqs(q), 2);
	blq_qos_subq_stats st;
	cr_assert_eq(blq_qos_subq_info(q, 0, &st), 0);
	cr_expect_str_eq(st.name, "a");
	cr_expect_eq(st.capacity, 10);
	cr_expect_eq(st.ingress_weight, 1);
	cr_expect_eq(st.egress_weight, 1);
	cr_assert_eq(blq_qos_subq_info(q, 1, &st), 0);
	cr_expect_str_eq(st.name, "1"); /* no name: its index */
	cr_expect_eq(st.egress_weight, 3);
	cr_assert_eq(blq_qos_subq_info(q, BLQ_QOS_EGRESS, &st), 0);
	cr_expect_str_eq(st.name, "egress");
	cr_expect_eq(st.capacity, 64); /* the default */
	cr_expect_eq(blq_qos_subq_info(q, 2, &st), BLQ_EINVAL);
	cr_expect_eq(blq_qos_subqs(NULL), 0);
	blq_free(q);

	blq_config plain = cfg_for(w, NULL);
	plain.capacity = 4;
	q = must_new(&plain);
	cr_expect_eq(blq_qos_subqs(q), 0);
	cr_expect_eq(blq_qos_subq_info(q, BLQ_QOS_EGRESS, &st), BLQ_EINVAL);
	blq_free(q);
	wctx_free(w);
}

Test(qos, weighted_evaluator)
{
	blq_qos_evaluator e = {.kind = BLQ_QOS_EVAL_WEIGHTED, .max = 1500, .def = 50};
	static const struct {
		uint64_t weight;
		unsigned percent;
	} table[] = {
		{0, 50},    {1, 1},      {14, 1},    {15, 1},    {30, 2},     {750, 50},
		{1000, 66}, {1499, 99},  {1500, 100}, {9999, 100}, {UINT64_MAX, 100},
	};

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		cr_expect_eq(blq_qos_eval(&e, NULL, table[i].weight), table[i].percent,
			     "weight %lu: %u, want %u", table[i].weight,
			     blq_qos_eval(&e, NULL, table[i].weight), table[i].percent);
	blq_qos_evaluator d = {.kind = BLQ_QOS_EVAL_WEIGHTED}; /* max 100, def 0 -> 1 */
	cr_expect_eq(blq_qos_eval(&d, NULL, 0), 1);
	cr_expect_eq(blq_qos_eval(&d, NULL, 42), 42);
	cr_expect_eq(blq_qos_eval(&d, NULL, 100), 100);
	blq_qos_evaluator r = {.kind = BLQ_QOS_EVAL_RANDOM};
	for (int i = 0; i < 1000; i++) {
		unsigned p = blq_qos_eval(&r, NULL, 0);
		cr_assert(p >= 1 && p <= 100, "random percent %u", p);
	}
	cr_expect_eq(blq_qos_eval(NULL, NULL, 7), 1);
}

/* Through a real queue: a uniform evaluator over 100,000 items fills the
 * sub-queues in the ingress weights' proportions, within 2%. */
Test(qos, ingress_distribution_matches_weights)
{
	wctx *w = wctx_new(true);
	counts n = {0};
	blq_metrics_writer mw = {.ctx = &n, .subq_put = on_put, .subq_pull = on_pull, .subq_leak = on_leak};
	blq_qos_config qc = sq3(BLQ_QOS_WRR, 1000, 64);
	qc.evaluator = (blq_qos_evaluator){.kind = BLQ_QOS_EVAL_RANDOM};
	blq_config c = cfg_for(w, &qc);
	c.workers = 2;
	c.metrics = &mw;
	blq *q = must_new(&c);
	const uint64_t total = 100000;

	for (uint64_t i = 0; i < total; i++)
		cr_assert_eq(blq_enqueue(q, NULL), 0);
	cr_assert_eq(blq_close(q), 0);
	static const double want[3] = {0.25, 0.60, 0.15};
	for (int i = 0; i < 3; i++) {
		double got = (double)atomic_load(&n.put[i]) / (double)total;

		cr_expect(got > want[i] - 0.02 && got < want[i] + 0.02, "%s: %.4f of the items, want %.2f",
			  subqs3[i].name, got, want[i]);
		cr_expect_eq(atomic_load(&n.pull[i]), atomic_load(&n.put[i]), "%s", subqs3[i].name);
		cr_expect_eq(atomic_load(&n.leak[i]), 0);
	}
	cr_expect_eq(atomic_load(&w->nulls), total);
	expect_balanced(q);
	cr_expect_eq(stats(q).processed, total);
	blq_free(q);
	wctx_free(w);
}

/* The percents at each side of a boundary land where the cumulative
 * weights say: 25 high, 26 medium, 85 medium, 86 low. */
Test(qos, ingress_boundaries)
{
	wctx *w = wctx_new(false);
	blq_qos_config qc = sq3(BLQ_QOS_PQ, 8, 1);
	blq_config c = cfg_for(w, &qc);
	blq *q = must_new(&c);

	park_worker_and_fill_egress(q, w);
	static const unsigned pct[] = {1, 25, 26, 85, 86, 100, 0 /* counts as 1 */};
	for (size_t i = 0; i < sizeof(pct) / sizeof(pct[0]); i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(ID(pct[i], i))), 0);
	cr_expect_eq(subq_size(q, 0), 3);
	cr_expect_eq(subq_size(q, 1), 2);
	cr_expect_eq(subq_size(q, 2), 2);
	cr_expect_eq(blq_size(q), 8); /* 7 in sub-queues + 1 in the egress */
	drain(q, w, 9);
	expect_balanced(q);
	blq_free(q);
	wctx_free(w);
}

/* Interleaved priorities come out strictly by sub-queue, FIFO within. */
Test(qos, pq_strict_order)
{
	wctx *w = wctx_new(false);
	blq_qos_config qc = sq3(BLQ_QOS_PQ, 16, 1);
	blq_config c = cfg_for(w, &qc);
	blq *q = must_new(&c);
	static const unsigned routes[] = {LOW, HIGH, MED};

	park_worker_and_fill_egress(q, w);
	for (unsigned i = 0; i < 12; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(ID(routes[i % 3], 10 + i))), 0);
	drain(q, w, 14);
	static const uint64_t want[] = {
		ID(LOW, 0),   ID(LOW, 1),   ID(HIGH, 11), ID(HIGH, 14), ID(HIGH, 17),
		ID(HIGH, 20), ID(MED, 12),  ID(MED, 15),  ID(MED, 18),  ID(MED, 21),
		ID(LOW, 10),  ID(LOW, 13),  ID(LOW, 16),  ID(LOW, 19),
	};
	expect_order(w, 0, want, 14);
	expect_balanced(q);
	blq_free(q);
	wctx_free(w);
}

/* RR: one from each sub-queue in turn, skipping the empty ones. */
Test(qos, rr_rotation)
{
	wctx *w = wctx_new(false);
	blq_qos_config qc = sq3(BLQ_QOS_RR, 16, 1);
	blq_config c = cfg_for(w, &qc);
	blq *q = must_new(&c);

	park_worker_and_fill_egress(q, w);
	for (unsigned i = 0; i < 4; i++) /* high 4, medium 4, low 2 */
		cr_assert_eq(blq_enqueue(q, tu_item_new(ID(HIGH, 10 + i))), 0);
	for (unsigned i = 0; i < 4; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(ID(MED, 20 + i))), 0);
	for (unsigned i = 0; i < 2; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(ID(LOW, 30 + i))), 0);
	drain(q, w, 12);
	/* Items 0 and 1 left from low, so the turn is high's. */
	static const uint64_t want[] = {ID(HIGH, 10), ID(MED, 20), ID(LOW, 30), ID(HIGH, 11),
					ID(MED, 21),  ID(LOW, 31), ID(HIGH, 12), ID(MED, 22),
					ID(HIGH, 13), ID(MED, 23)};
	expect_order(w, 2, want, 10);
	expect_balanced(q);
	blq_free(q);
	wctx_free(w);
}

/* WRR: weights 250/600/150 take 2, 4 and 1 per round; over 700 items the
 * shares are within 5% of 2/7, 4/7 and 1/7, and every round of 7 exact. */
Test(qos, wrr_proportions)
{
	wctx *w = wctx_new(false);
	blq_qos_config qc = sq3(BLQ_QOS_WRR, 700, 1);
	blq_config c = cfg_for(w, &qc);
	blq *q = must_new(&c);
	static const unsigned routes[] = {HIGH, MED, LOW};

	park_worker_and_fill_egress(q, w);
	for (unsigned r = 0; r < 3; r++)
		for (unsigned i = 0; i < 700; i++)
			cr_assert_eq(blq_enqueue(q, tu_item_new(ID(routes[r], i))), 0);
	cr_expect_eq(blq_size(q), 2101);
	drain(q, w, 2102);
	unsigned seen[3] = {0}, round[3] = {0}, bad_rounds = 0;
	for (size_t i = 0; i < 700; i++) {
		unsigned r = route_of(w->order[2 + i]);

		seen[r]++;
		round[r]++;
		if (i % 7 == 6) {
			bad_rounds += round[0] != 2 || round[1] != 4 || round[2] != 1;
			memset(round, 0, sizeof(round));
		}
	}
	static const double want[3] = {2.0 / 7, 4.0 / 7, 1.0 / 7};
	for (int r = 0; r < 3; r++)
		cr_expect(seen[r] / 700.0 > want[r] - 0.05 && seen[r] / 700.0 < want[r] + 0.05,
			  "%s: %u of 700, want %.0f", subqs3[r].name, seen[r], want[r] * 700);
	cr_expect_eq(bad_rounds, 0, "%u rounds of 7 were not 2/4/1", bad_rounds);
	/* FIFO within each sub-queue. */
	uint64_t last[3] = {0};
	for (size_t i = 2; i < w->n; i++) {
		unsigned r = route_of(w->order[i]);
		uint64_t seq = w->order[i] % 1000 + 1;

		cr_expect(seq > last[r], "%s out of order at %zu", subqs3[r].name, i);
		last[r] = seq;
	}
	expect_balanced(q);
	blq_free(q);
	wctx_free(w);
}

/* A full sub-queue leaks at its rear into the DLQ; the others still take
 * items. Metrics: put = pull + leak per sub-queue. */
Test(qos, leak_rear_per_subq)
{
	wctx *w = wctx_new(false);
	tu_rec *r = tu_rec_new();
	counts n = {0};
	blq_metrics_writer mw = {.ctx = &n, .subq_put = on_put, .subq_pull = on_pull, .subq_leak = on_leak};
	blq_qos_config qc = sq3(BLQ_QOS_PQ, 2, 1);
	blq_config c = cfg_for(w, &qc);
	c.dlq = rec_dlq(r);
	c.metrics = &mw;
	blq *q = must_new(&c);

	park_worker_and_fill_egress(q, w);
	for (unsigned i = 0; i < 4; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(ID(HIGH, 10 + i))), 0);
	for (unsigned i = 0; i < 2; i++)
		cr_assert_eq(blq_try_enqueue(q, tu_item_new(ID(LOW, 20 + i))), 0);
	cr_assert_eq(r->n, 2);
	cr_expect_eq(r->ids[0], ID(HIGH, 12));
	cr_expect_eq(r->ids[1], ID(HIGH, 13));
	cr_expect_eq(subq_size(q, 0), 2);
	cr_expect_eq(subq_size(q, 2), 2);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.leaked_rear, 2);
	cr_expect_eq(atomic_load(&n.leak[0]), 2);
	cr_expect_eq(atomic_load(&n.leak[2]), 0);
	drain(q, w, 6);
	for (int i = 0; i < 3; i++)
		cr_expect_eq(atomic_load(&n.put[i]), atomic_load(&n.pull[i]) + atomic_load(&n.leak[i]),
			     "%s: put %lu pull %lu leak %lu", subqs3[i].name, atomic_load(&n.put[i]),
			     atomic_load(&n.pull[i]), atomic_load(&n.leak[i]));
	expect_balanced(q);
	cr_expect_eq(atomic_load(&tu_freed), 8);
	blq_free(q);
	wctx_free(w);
	tu_rec_free(r);
}

/* Internal: make the timer thread look at the clock now. */
void blq__timer_kick(blq *q);

static _Atomic uint64_t fake_ns = 1000000000ull;

static uint64_t fake_now(void *ctx)
{
	(void)ctx;
	return atomic_load(&fake_ns);
}

/* A delayed item keeps the priority it was given at its enqueue: when it
 * comes due it enters its own sub-queue (not the egress directly), like a
 * new item. */
Test(qos, a_delayed_item_enters_its_subq_when_due)
{
	wctx *w = wctx_new(true);
	counts n = {0};
	blq_metrics_writer mw = {.ctx = &n, .subq_put = on_put, .subq_pull = on_pull, .subq_leak = on_leak};
	blq_qos_config qc = sq3(BLQ_QOS_PQ, 8, 4);
	blq_config c = cfg_for(w, &qc);
	c.metrics = &mw;
	c.clock.now_ns = fake_now;
	blq *q = must_new(&c);

	blq_job j = {.payload = tu_item_new(ID(LOW, 1)), .delay_ns = 5000000000ull};
	cr_assert_eq(blq_enqueue_job(q, &j), 0);
	cr_expect_eq(stats(q).delayed, 1);
	cr_expect_eq(atomic_load(&n.put[2]), 0, "not in a sub-queue while it waits");
	atomic_fetch_add(&fake_ns, 5000000000ull);
	blq__timer_kick(q);
	cr_assert(TU_WAIT_FOR(stats(q).processed == 1, 2000));
	cr_expect_eq(atomic_load(&n.put[2]), 1, "it went through \"low\"");
	cr_expect_eq(atomic_load(&n.pull[2]), 1);
	cr_expect_eq(atomic_load(&n.put[0]) + atomic_load(&n.put[1]), 0);
	cr_assert_eq(blq_close(q), 0);
	expect_balanced(q);
	blq_free(q);
	wctx_free(w);
}

/* A balanced QoS pool at zero threads: a delayed item that comes due goes
 * into its sub-queue, and that starts a worker at once (not at the next
 * heartbeat, an hour away here). */
Test(qos, a_due_item_starts_a_worker_in_an_idle_balanced_pool)
{
	wctx *w = wctx_new(true);
	blq_qos_config qc = sq3(BLQ_QOS_PQ, 8, 4);
	blq_config c = cfg_for(w, &qc);
	c.workers = 0;
	c.workers_min = 0;
	c.workers_max = 2;
	c.heartbeat_interval_ns = 3600ull * 1000000000ull;
	c.clock.now_ns = fake_now;
	blq *q = must_new(&c);

	cr_assert(TU_WAIT_FOR(stats(q).workers_active == 0, 2000));
	blq_job j = {.payload = tu_item_new(ID(MED, 1)), .delay_ns = 1000000000ull};
	cr_assert_eq(blq_enqueue_job(q, &j), 0);
	atomic_fetch_add(&fake_ns, 1000000000ull);
	blq__timer_kick(q);
	cr_expect(TU_WAIT_FOR(stats(q).processed == 1, 2000), "ran without waiting for a heartbeat");
	cr_assert_eq(blq_close(q), 0);
	expect_balanced(q);
	blq_free(q);
	wctx_free(w);
}

/* Front leak: the sub-queue's oldest items make room for the new ones. */
Test(qos, leak_front_per_subq)
{
	wctx *w = wctx_new(false);
	tu_rec *r = tu_rec_new();
	blq_qos_config qc = sq3(BLQ_QOS_PQ, 2, 1);
	blq_config c = cfg_for(w, &qc);
	c.dlq = rec_dlq(r);
	c.leak_direction = BLQ_LEAK_FRONT;
	blq *q = must_new(&c);

	park_worker_and_fill_egress(q, w);
	cr_assert_eq(blq_enqueue(q, tu_item_new(ID(LOW, 30))), 0);
	for (unsigned i = 0; i < 4; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(ID(MED, 10 + i))), 0);
	cr_assert_eq(r->n, 2);
	cr_expect_eq(r->ids[0], ID(MED, 10));
	cr_expect_eq(r->ids[1], ID(MED, 11));
	cr_expect_eq(stats(q).leaked_front, 2);
	cr_expect_eq(subq_size(q, 2), 1); /* low untouched */
	drain(q, w, 5);
	static const uint64_t want[] = {ID(MED, 12), ID(MED, 13), ID(LOW, 30)};
	expect_order(w, 2, want, 3);
	expect_balanced(q);
	blq_free(q);
	wctx_free(w);
	tu_rec_free(r);
}

/* Without a DLQ a full sub-queue refuses try_enqueue and blocks enqueue
 * on that sub-queue only; draining it lets the producer in. */
/* Sub-queues and egress of capacity 1, the worker parked, and "high"
 * full (item ID(HIGH, 10)): the next high item finds no room. */
static blq *high_full(wctx *w)
{
	blq_qos_config qc = sq3(BLQ_QOS_PQ, 1, 1);
	blq_config c = cfg_for(w, &qc);
	blq *q = must_new(&c);

	park_worker_and_fill_egress(q, w);
	cr_assert_eq(blq_enqueue(q, tu_item_new(ID(HIGH, 10))), 0);
	return q;
}

Test(qos, full_subq_blocks_only_its_producers)
{
	wctx *w = wctx_new(false);
	blq *q = high_full(w);
	tu_item *extra = tu_item_new(ID(HIGH, 11));
	cr_expect_eq(blq_try_enqueue(q, extra), BLQ_EFULL);
	tu_item_free(extra);
	cr_expect_eq(blq_try_enqueue(q, tu_item_new(ID(MED, 20))), 0);
	producer_arg a = {.q = q, .id = ID(HIGH, 12)};
	pthread_t t;
	pthread_create(&t, NULL, blocking_producer, &a);
	tu_sleep_us(50000);
	cr_expect_eq(atomic_load(&a.done), 0, "enqueue returned while its sub-queue was full");
	cr_expect_eq(blq_enqueue(q, tu_item_new(ID(LOW, 30))), 0); /* others still accept */
	tu_gate_open(&w->gate);
	cr_assert(TU_WAIT_FOR(atomic_load(&a.done) == 1, 5000), "the producer never got in");
	pthread_join(t, NULL);
	cr_expect_eq(a.rc, 0);
	cr_assert_eq(blq_close(q), 0);
	cr_expect_eq(stats(q).processed, 6);
	expect_balanced(q);
	blq_free(q);
	wctx_free(w);
}

/* A producer blocked on a full sub-queue wakes with BLQ_ECLOSED at a
 * force close; items in sub-queues and egress are lost (no DLQ) and freed
 * exactly once. */
Test(qos, force_close_without_dlq_counts_subqs_lost)
{
	wctx *w = wctx_new(true);
	w->wait_cancel = true;
	blq_qos_config qc = sq3(BLQ_QOS_WRR, 2, 1);
	blq_config c = cfg_for(w, &qc);
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0); /* held until cancelled */
	cr_assert(TU_WAIT_FOR(blq_size(q) == 0, 2000));
	cr_assert_eq(blq_enqueue(q, tu_item_new(ID(LOW, 1))), 0);
	cr_assert(TU_WAIT_FOR(subq_size(q, BLQ_QOS_EGRESS) == 1, 2000));
	static const unsigned routes[] = {HIGH, MED, LOW};
	for (unsigned i = 0; i < 6; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(ID(routes[i % 3], 10 + i))), 0);
	producer_arg a = {.q = q, .id = ID(HIGH, 40)};
	pthread_t t;
	pthread_create(&t, NULL, blocking_producer, &a);
	tu_sleep_us(20000);
	cr_expect_eq(blq_size(q), 7);
	cr_assert_eq(blq_force_close(q), 0);
	pthread_join(t, NULL);
	cr_expect_eq(a.rc, BLQ_ECLOSED);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.in, 8);
	cr_expect_eq(s.processed, 1);
	cr_expect_eq(s.lost, 7);
	cr_expect_eq(s.size, 0);
	expect_balanced(q);
	cr_expect_eq(atomic_load(&tu_freed), 9); /* 8 + the refused one, each once */
	blq_free(q);
	wctx_free(w);
}

/* The full-queue policy both engines share (queue/admission.c), on a
 * sub-queue: a producer waiting for room counts in producers_blocked (and
 * the queue shows throttled), and a graceful close wakes it with
 * BLQ_ECLOSED, its item still its own, while what was queued drains. */
static void *graceful_closer(void *p)
{
	return (void *)(intptr_t)blq_close(p);
}

Test(qos, blocked_producer_counts_and_a_graceful_close_refuses_it)
{
	wctx *w = wctx_new(false);
	blq *q = high_full(w);
	cr_expect_eq(stats(q).producers_blocked, 0);
	producer_arg a = {.q = q, .id = ID(HIGH, 11)};
	pthread_t t, closer;
	void *closed_rc;
	pthread_create(&t, NULL, blocking_producer, &a);
	cr_assert(TU_WAIT_FOR(stats(q).producers_blocked == 1, 5000), "blocked %u",
		  stats(q).producers_blocked);
	cr_expect(stats(q).throttled);
	cr_expect_eq(atomic_load(&a.done), 0);
	pthread_create(&closer, NULL, graceful_closer, q);
	cr_assert(TU_WAIT_FOR(atomic_load(&a.done) == 1, 5000), "the close left it blocked");
	pthread_join(t, NULL);
	cr_expect_eq(a.rc, BLQ_ECLOSED);
	cr_expect_eq(stats(q).producers_blocked, 0);
	tu_gate_open(&w->gate);
	pthread_join(closer, &closed_rc);
	cr_expect_eq((intptr_t)closed_rc, 0);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.in, 3);
	cr_expect_eq(s.processed, 3);
	cr_expect_eq(s.producers_blocked, 0);
	expect_balanced(q);
	cr_expect_eq(atomic_load(&tu_freed), 4); /* 3 by the worker, the refused one by us */
	blq_free(q);
	wctx_free(w);
}

/* Soft close: the running item finishes (its token down), everything in
 * the sub-queues and the egress is lost (no DLQ), each item freed once. */
static blq *soft_q;
static _Atomic int soft_rc = -100;

static void *soft_closer(void *p)
{
	(void)p;
	atomic_store(&soft_rc, blq_close_soft(soft_q));
	return NULL;
}

Test(qos, soft_close_finishes_the_running_item_and_drops_the_subqs)
{
	wctx *w = wctx_new(false);
	blq_qos_config qc = sq3(BLQ_QOS_WRR, 2, 1);
	blq_config c = cfg_for(w, &qc);
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0); /* held in the gate */
	cr_assert(TU_WAIT_FOR(blq_size(q) == 0 && atomic_load(&w->gate.waiting) == 1, 2000));
	cr_assert_eq(blq_enqueue(q, tu_item_new(ID(LOW, 1))), 0);
	cr_assert(TU_WAIT_FOR(subq_size(q, BLQ_QOS_EGRESS) == 1, 2000));
	static const unsigned routes[] = {HIGH, MED, LOW};
	for (unsigned i = 0; i < 6; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(ID(routes[i % 3], 10 + i))), 0);
	cr_expect_eq(blq_size(q), 7);
	soft_q = q;
	pthread_t t;
	pthread_create(&t, NULL, soft_closer, NULL);
	tu_sleep_us(20000);
	cr_expect_eq(atomic_load(&soft_rc), -100, "returned before the running item finished");
	tu_gate_open(&w->gate);
	pthread_join(t, NULL);
	cr_expect_eq(atomic_load(&soft_rc), 0);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.in, 8);
	cr_expect_eq(s.processed, 1);
	cr_expect_eq(s.lost, 7);
	cr_expect_eq(s.size, 0);
	cr_expect_eq(w->n, 1, "an item from a sub-queue ran");
	expect_balanced(q);
	cr_expect_eq(atomic_load(&tu_freed), 8);
	blq_free(q);
	wctx_free(w);
}

/* Force close with a DLQ: everything waiting, spread over the sub-queues
 * and the egress, goes to the DLQ (leaked_closed). */
Test(qos, force_close_sweeps_subqs_to_the_dlq)
{
	wctx *w = wctx_new(true);
	w->wait_cancel = true;
	tu_rec *r = tu_rec_new();
	blq_qos_config qc = sq3(BLQ_QOS_RR, 8, 2);
	qc.egress.workers = 2;
	blq_config c = cfg_for(w, &qc);
	c.dlq = rec_dlq(r);
	blq *q = must_new(&c);

	cr_assert_eq(blq_enqueue(q, tu_item_new(0)), 0);
	cr_assert(TU_WAIT_FOR(blq_size(q) == 0, 2000));
	static const unsigned routes[] = {HIGH, MED, LOW};
	for (unsigned i = 0; i < 20; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(ID(routes[i % 3], 10 + i))), 0);
	cr_assert(TU_WAIT_FOR(subq_size(q, BLQ_QOS_EGRESS) == 2, 2000));
	/* The egress thread uncounts what it moved after its pushes: for a
	 * moment the two in the egress count twice (egress.c). */
	cr_expect(TU_WAIT_FOR(blq_size(q) == 20, 2000), "size %zu", blq_size(q));
	cr_assert_eq(blq_force_close(q), 0);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.in, 21);
	cr_expect_eq(s.processed, 1);
	cr_expect_eq(s.leaked_closed, 20);
	cr_expect_eq(r->n, 20);
	expect_balanced(q);
	cr_expect_eq(atomic_load(&tu_freed), 21);
	blq_free(q);
	wctx_free(w);
	tu_rec_free(r);
}

/* Graceful close drains the sub-queues through the egress; so does
 * blq_free, and close with a timeout that is long enough. */
Test(qos, graceful_close_drains_every_subq)
{
	wctx *w = wctx_new(false);
	blq_qos_config qc = sq3(BLQ_QOS_WRR, 64, 4);
	qc.egress.workers = 3;
	qc.egress.streams = 2;
	blq_config c = cfg_for(w, &qc);
	c.workers = 2;
	blq *q = must_new(&c);
	static const unsigned routes[] = {HIGH, MED, LOW};

	for (unsigned i = 0; i < 150; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(ID(routes[i % 3], i))), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w->gate.waiting) == 2, 2000));
	cr_expect(TU_WAIT_FOR(blq_size(q) == 148, 2000), "size %zu", blq_size(q));
	tu_gate_open(&w->gate);
	cr_assert_eq(blq_close_timeout(q, 10000000000u), 0);
	struct blq_stats s = stats(q);
	cr_expect_eq(s.processed, 150);
	cr_expect_eq(s.size, 0);
	cr_expect_eq(subqs_total(q), 0);
	expect_balanced(q);
	cr_expect_eq(blq_enqueue(q, NULL), BLQ_ECLOSED);
	blq_free(q);
	cr_expect_eq(atomic_load(&tu_freed), 150);
	wctx_free(w);
}

/* A balanced pool that scales down to no thread works through QoS too. */
Test(qos, balanced_pool_from_zero)
{
	wctx *w = wctx_new(true);
	blq_qos_config qc = sq3(BLQ_QOS_PQ, 32, 8);
	blq_config c = cfg_for(w, &qc);
	c.workers = 0;
	c.workers_min = 0;
	c.workers_max = 4;
	blq *q = must_new(&c);
	static const unsigned routes[] = {HIGH, MED, LOW};

	for (unsigned i = 0; i < 300; i++)
		cr_assert_eq(blq_enqueue(q, tu_item_new(ID(routes[i % 3], i % 1000))), 0);
	cr_assert_eq(blq_wait_idle(q, 5000000000u), 0);
	cr_expect_eq(stats(q).processed, 300);
	cr_assert_eq(blq_close(q), 0);
	expect_balanced(q);
	blq_free(q);
	wctx_free(w);
}

Test(qos, status_json_shows_each_subq)
{
	wctx *w = wctx_new(false);
	blq_qos_config qc = sq3(BLQ_QOS_WRR, 4, 1);
	blq_config c = cfg_for(w, &qc);
	blq *q = must_new(&c);
	char buf[1024];

	park_worker_and_fill_egress(q, w);
	cr_assert_eq(blq_enqueue(q, tu_item_new(ID(HIGH, 10))), 0);
	cr_assert_eq(blq_enqueue(q, tu_item_new(ID(HIGH, 11))), 0);
	cr_assert_eq(blq_enqueue(q, tu_item_new(ID(LOW, 12))), 0);
	int n = blq_status_json(q, buf, sizeof(buf));
	cr_assert(n > 0 && (size_t)n < sizeof(buf));
	cr_expect(strstr(buf, "\"capacity\":13,\"size\":4,") != NULL, "%s", buf);
	cr_expect(strstr(buf, ",\"qos\":{\"algo\":\"wrr\",\"egress\":{\"size\":1,\"capacity\":1},"
			      "\"subqs\":[{\"name\":\"high\",\"size\":2,\"capacity\":4},"
			      "{\"name\":\"medium\",\"size\":0,\"capacity\":4},"
			      "{\"name\":\"low\",\"size\":1,\"capacity\":4}]}}") != NULL,
		  "%s", buf);
	cr_expect_eq(buf[n - 1], '}');
	/* Cut short: still NUL-terminated, and the full length reported. */
	char small[40];
	cr_expect_eq(blq_status_json(q, small, sizeof(small)), n);
	cr_expect_eq(strlen(small), sizeof(small) - 1);
	cr_expect_eq(blq_status_json(q, NULL, 0), n);
	tu_gate_open(&w->gate);
	blq_free(q);
	wctx_free(w);
}

/* An idle QoS queue uses no CPU: nothing spins or polls on a timer. */
Test(qos, idle_uses_no_cpu)
{
	wctx *w = wctx_new(true);
	blq_qos_config qc = sq3(BLQ_QOS_WRR, 64, 8);
	qc.evaluator = (blq_qos_evaluator){.kind = BLQ_QOS_EVAL_RANDOM};
	qc.egress.workers = 2;
	blq_config c = cfg_for(w, &qc);
	c.workers = 2;
	blq *q = must_new(&c);
	struct rusage r0, r1;

	for (int i = 0; i < 2000; i++)
		cr_assert_eq(blq_enqueue(q, NULL), 0);
	cr_assert_eq(blq_wait_idle(q, 5000000000u), 0);
	tu_sleep_us(20000);
	getrusage(RUSAGE_SELF, &r0);
	tu_sleep_us(300000);
	getrusage(RUSAGE_SELF, &r1);
	double cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
		     (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6 +
		     (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
		     (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
	cr_expect(cpu < 0.015, "an idle QoS queue used %.3f s of CPU in 0.3 s", cpu);
	blq_free(q);
	wctx_free(w);
}
