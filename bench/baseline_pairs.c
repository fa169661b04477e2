/*
 * The least handoff (baseline.h, bench_run_pairs): what moving an item
 * from a producer thread to a consumer thread costs on this host when the
 * design pays for nothing else. Each producer has a ring of its own
 * (capacity / producers slots, no CAS: one writer, one reader) and ring r
 * is read by consumer r % workers alone; producers sleep when their ring
 * is full and consumers when all their rings are empty, on a futex, at
 * once. No accounting, no stealing (a slow consumer stalls its
 * producers: a pool could not promise that), no close.
 *
 * It is what the "a throwaway program beside it with its own
 * floor" asks for, kept so that every --compare run shows it: blq's gap to
 * the floor splits into what any bounded handoff pays on this host (pairs
 * over the floor) and what blq adds (blq over pairs).
 *
 * The waits are the textbook Dekker pair: the sleeper raises its flag,
 * fences, looks again, and sleeps on a sequence word; the other side makes
 * the condition true, fences, and wakes only when it sees the flag. A
 * producer is woken once its ring is half free, so it pushes at least half
 * a ring per run; a consumer as soon as one item is there.
 *
 * Those waits were picked by measurement on this host (docs/benchmarks.md,
 * "The least handoff"); the knobs stay for measuring them again on an
 * experiment build (-DSPIN_LOOKS=N pause-and-look rounds before a sleep,
 * -DPAIRS_YIELD sched_yield loops instead of sleeping, -DWAKE_LEFT=K a
 * full ring's producer woken when it holds size / K). Sleeping at once
 * won: with four threads on two CPUs a spinning thread holds the CPU its
 * peer needs (4,096 rounds made W1 4x slower).
 */
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "baseline_producers.h"

#define LINE 64
#ifndef SPIN_LOOKS /* pause-and-look rounds before a sleep */
#define SPIN_LOOKS 0
#endif
#ifndef WAKE_LEFT /* a producer is woken when its ring holds at most size / WAKE_LEFT */
#define WAKE_LEFT 2
#endif

typedef struct waiter {
	_Alignas(LINE) _Atomic unsigned seq; /* the futex word */
	_Atomic int sleeping;
} waiter;

typedef struct pair_ring {
	_Alignas(LINE) _Atomic size_t tail; /* written by the producer */
	size_t head_seen;                   /* producer's last read of head */
	_Alignas(LINE) _Atomic size_t head; /* written by the consumer */
	waiter producer;                    /* the ring's producer, when full */
	void **slots;
	size_t mask;
	struct pairs *sys;
	unsigned consumer; /* who reads it: index % workers */
} pair_ring;

typedef struct pairs {
	const bench_shape *shape;
	pair_ring *rings;
	waiter *consumers; /* one per worker */
	_Atomic unsigned next_ring;
} pairs;

static void futex_wait(_Atomic unsigned *w, unsigned v)
{
	syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

static void wake(waiter *w)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&w->sleeping, memory_order_relaxed)) {
		atomic_store_explicit(&w->sleeping, 0, memory_order_relaxed);
		atomic_fetch_add_explicit(&w->seq, 1, memory_order_release);
		syscall(SYS_futex, &w->seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
}

static inline void cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Spins, then sleeps, until ready(ctx). */
static void wait_until(waiter *w, int (*ready)(void *), void *ctx)
{
	for (int i = 0; i < SPIN_LOOKS; i++) {
		if (ready(ctx))
			return;
		cpu_pause();
	}
#ifdef PAIRS_YIELD
	while (!ready(ctx))
		sched_yield();
	return;
#endif
	for (;;) {
		unsigned s = atomic_load_explicit(&w->seq, memory_order_acquire);

		atomic_store_explicit(&w->sleeping, 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_seq_cst);
		if (ready(ctx)) {
			atomic_store_explicit(&w->sleeping, 0, memory_order_relaxed);
			return;
		}
		futex_wait(&w->seq, s);
	}
}

static _Thread_local pair_ring *my_ring;

static pair_ring *ring_of_thread(pairs *p)
{
	if (my_ring == NULL)
		my_ring = &p->rings[atomic_fetch_add(&p->next_ring, 1)];
	return my_ring;
}

/* Reads head; true when at least `need` slots are free. */
static int room_for(pair_ring *r, size_t need)
{
	size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);

	r->head_seen = atomic_load_explicit(&r->head, memory_order_acquire);
	return r->mask + 1 - (t - r->head_seen) >= need;
}

/* A full ring's producer waits for half of it, the consumer's wake-up. */
static int half_free(void *arg)
{
	pair_ring *r = arg;

	return room_for(r, r->mask + 1 - (r->mask + 1) / WAKE_LEFT);
}

/* Places what fits of payloads[0..n), publishes it, wakes the consumer
 * when it sleeps; waits for room while some remain. */
static void push_batch(void *sys, void *const *payloads, size_t n)
{
	pair_ring *r = ring_of_thread(sys);
	waiter *c = &r->sys->consumers[r->consumer];
	size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);

	while (n > 0) {
		if (t - r->head_seen > r->mask && !room_for(r, 1))
			wait_until(&r->producer, half_free, r);
		size_t room = r->mask + 1 - (t - r->head_seen);
		size_t m = n < room ? n : room;

		for (size_t i = 0; i < m; i++)
			r->slots[(t + i) & r->mask] = payloads[i];
		t += m;
		payloads += m;
		n -= m;
		atomic_store_explicit(&r->tail, t, memory_order_release);
		wake(c);
	}
}

static void push(void *sys, void *payload)
{
	push_batch(sys, &payload, 1);
}

typedef struct consumer_arg {
	pairs *p;
	unsigned index;
} consumer_arg;

static int any_item(void *arg)
{
	consumer_arg *a = arg;
	pairs *p = a->p;

	for (unsigned r = a->index; r < p->shape->producers; r += p->shape->workers)
		if (atomic_load_explicit(&p->rings[r].tail, memory_order_acquire) !=
		    atomic_load_explicit(&p->rings[r].head, memory_order_relaxed))
			return 1;
	return 0;
}

static void *consumer(void *arg)
{
	consumer_arg *a = arg;
	pairs *p = a->p;
	const bench_shape *s = p->shape;
	size_t mine = 0, done = 0;

	for (unsigned r = a->index; r < s->producers; r += s->workers)
		mine += s->items / s->producers;
	while (done < mine) {
		for (unsigned i = a->index; i < s->producers; i += s->workers) {
			pair_ring *r = &p->rings[i];
			size_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
			size_t t = atomic_load_explicit(&r->tail, memory_order_acquire);

			for (; h != t; h++, done++) {
				void *payload = r->slots[h & r->mask];

				atomic_store_explicit(&r->head, h + 1, memory_order_release);
				if (t - h - 1 == (r->mask + 1) / WAKE_LEFT) /* its producer's turn */
					wake(&r->producer);
				s->task(payload);
			}
			wake(&r->producer); /* empty: whatever its producer waits for is here */
		}
		if (done < mine)
			wait_until(&p->consumers[a->index], any_item, a);
	}
	return NULL;
}

int64_t bench_run_pairs(const bench_shape *s)
{
	size_t per_ring = s->capacity / s->producers, size = 2;

	while (size * 2 <= per_ring) /* a power of two, at most its share */
		size *= 2;
	pairs p = {.shape = s};
	p.rings = aligned_alloc(LINE, s->producers * sizeof(*p.rings));
	p.consumers = aligned_alloc(LINE, s->workers * sizeof(*p.consumers));
	pthread_t *ws = calloc(s->workers, sizeof(*ws));
	consumer_arg *args = calloc(s->workers, sizeof(*args));
	void **slots = calloc((size_t)s->producers * size, sizeof(void *));
	int64_t elapsed = -1;
	bench_producers prod;

	if (p.rings == NULL || p.consumers == NULL || ws == NULL || args == NULL || slots == NULL)
		goto out;
	for (unsigned i = 0; i < s->producers; i++) {
		pair_ring *r = &p.rings[i];

		atomic_init(&r->tail, 0);
		atomic_init(&r->head, 0);
		r->head_seen = 0;
		atomic_init(&r->producer.seq, 0);
		atomic_init(&r->producer.sleeping, 0);
		r->slots = slots + (size_t)i * size;
		r->mask = size - 1;
		r->sys = &p;
		r->consumer = i % s->workers;
	}
	for (unsigned i = 0; i < s->workers; i++) {
		atomic_init(&p.consumers[i].seq, 0);
		atomic_init(&p.consumers[i].sleeping, 0);
	}
	atomic_init(&p.next_ring, 0);
	for (unsigned i = 0; i < s->workers; i++) {
		args[i] = (consumer_arg){&p, i};
		if (pthread_create(&ws[i], NULL, consumer, &args[i]) != 0)
			abort();
	}
	if (bench_producers_start(&prod, s, push, &p) != 0)
		abort();
	prod.push_batch = push_batch;
	bench_producers_go(&prod);
	bench_producers_join(&prod);
	for (unsigned i = 0; i < s->workers; i++)
		pthread_join(ws[i], NULL);
	elapsed = (int64_t)(bench_now_ns() - prod.start_ns);
out:
	free(slots);
	free(args);
	free(ws);
	free(p.consumers);
	free(p.rings);
	return elapsed;
}
