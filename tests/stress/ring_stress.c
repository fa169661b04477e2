/*
 * Stress test of util/ring.h alone, the bounded MPMC ring under the
 * queue: 3 producers (single pushes and reservations of 1 to 9 slots) and
 * 3 consumers (takes of 1 to 5 items and single pops) on rings of 1, 2,
 * 3, 5 and 8 slots, so laps wrap every few items and the CASes at both
 * ends fail often.
 *
 * What it catches, per round:
 *   - a lost or doubled item: every id is taken exactly once;
 *   - a torn item: a consumer reads a slot while a producer may refill it
 *     (its CAS then fails and it drops the copy, ring.h); an item that
 *     reached a consumer with words from two laps fails its checksum;
 *   - reordering: one consumer sees each producer's items in the order
 *     they were pushed (positions only grow at both ends);
 *   - the bound: the size never reads above the capacity, and the ring
 *     is empty at the end;
 *   - a stall: 5 s without an item taken (a lost item, or room that was
 *     not there) ends the round as failed instead of hanging.
 *
 * A plain program (it runs under TSan too): prints "N passed, N failed"
 * and exits non-zero on any failure.
 * Usage: ring_stress [rounds] [items-per-producer]
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* An item of 7 words, like the queue's (56 bytes): an id, a producer and
 * five words derived from the id, so a mix of two items does not add up. */
typedef struct test_item {
	uint64_t id; /* producer * per + sequence */
	uint64_t producer;
	uint64_t mix[5];
} test_item;

#define BLQ__RING_ITEM test_item
#include "ring.h"

#define PRODUCERS 3
#define CONSUMERS 3
#define TAKE_MAX 5
#define STALL_NS 5000000000ull

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t mix_of(uint64_t id, unsigned k)
{
	uint64_t x = (id + 1) * 0x9e3779b97f4a7c15u + k;

	return x ^ (x >> 29);
}

static test_item make(uint64_t producer, uint64_t id)
{
	test_item it = {.id = id, .producer = producer};

	for (unsigned k = 0; k < 5; k++)
		it.mix[k] = mix_of(id, k);
	return it;
}

static bool intact(const test_item *it, uint64_t per)
{
	if (it->producer >= PRODUCERS || it->id / per != it->producer)
		return false;
	for (unsigned k = 0; k < 5; k++)
		if (it->mix[k] != mix_of(it->id, k))
			return false;
	return true;
}

typedef struct round_ctx {
	blq__ring ring;
	uint64_t per;
	_Atomic uint64_t taken;       /* items taken so far, of PRODUCERS * per */
	_Atomic uint8_t *seen;        /* per id: times taken */
	_Atomic unsigned errors;
	_Atomic bool stalled;         /* set once: every thread stops */
	_Atomic unsigned producers;   /* producer numbering */
	_Atomic unsigned consumers;   /* consumer numbering (their seeds) */
} round_ctx;

static void fail(round_ctx *c, const char *what, uint64_t id)
{
	if (atomic_fetch_add(&c->errors, 1) < 5)
		fprintf(stderr, "ring_stress: cap %" PRIu64 ": %s (id %" PRIu64 ")\n", c->ring.cap,
			what, id);
}

static void *producer(void *arg)
{
	round_ctx *c = arg;
	unsigned p = atomic_fetch_add(&c->producers, 1);
	unsigned seed = p * 7919u + 1;
	uint64_t next = 0;

	while (next < c->per && !atomic_load(&c->stalled)) {
		uint64_t want = 1 + (uint64_t)(rand_r(&seed) % 9), first;

		if (want > c->per - next)
			want = c->per - next;
		if (want == 1 && rand_r(&seed) % 2 == 0) {
			test_item it = make(p, p * c->per + next);

			if (blq__ring_push(&c->ring, &it))
				next++;
			else
				sched_yield();
			continue;
		}
		uint64_t k = blq__ring_reserve(&c->ring, want, &first);

		if (k == 0) {
			sched_yield();
			continue;
		}
		blq__ring_cursor at = blq__ring_at(&c->ring, first);
		for (uint64_t j = 0; j < k; j++) {
			test_item it = make(p, p * c->per + next + j);

			blq__ring_fill(blq__ring_next(&at), first + j, &it);
		}
		next += k;
	}
	return NULL;
}

static void *consumer(void *arg)
{
	round_ctx *c = arg;
	unsigned seed = atomic_fetch_add(&c->consumers, 1) * 104729u + 3;
	uint64_t total = PRODUCERS * c->per, last[PRODUCERS];
	test_item out[TAKE_MAX];

	for (unsigned p = 0; p < PRODUCERS; p++)
		last[p] = UINT64_MAX;
	uint64_t seen_taken = 0, since = now_ns();
	while (atomic_load(&c->taken) < total && !atomic_load(&c->stalled)) {
		uint64_t n = 1 + (uint64_t)(rand_r(&seed) % TAKE_MAX), k;

		if (blq__ring_size(&c->ring) > c->ring.cap)
			fail(c, "size above the capacity", 0);
		k = n == 1 ? (blq__ring_pop(&c->ring, &out[0]) ? 1 : 0)
			   : blq__ring_take(&c->ring, out, n);
		if (k == 0) {
			uint64_t t = atomic_load(&c->taken);

			if (t != seen_taken) {
				seen_taken = t;
				since = now_ns();
			} else if (now_ns() - since > STALL_NS && !atomic_exchange(&c->stalled, true)) {
				fail(c, "stalled: no item taken for 5 s", t);
			}
			sched_yield();
			continue;
		}
		if (k > n)
			fail(c, "took more than asked", k);
		for (uint64_t j = 0; j < k; j++) {
			const test_item *it = &out[j];

			if (!intact(it, c->per)) {
				fail(c, "torn or foreign item", it->id);
				continue;
			}
			if (atomic_fetch_add(&c->seen[it->id], 1) != 0)
				fail(c, "item taken twice", it->id);
			uint64_t seq = it->id % c->per;

			if (last[it->producer] != UINT64_MAX && seq <= last[it->producer])
				fail(c, "a producer's items out of order", it->id);
			last[it->producer] = seq;
		}
		atomic_fetch_add(&c->taken, k);
	}
	return NULL;
}

static int round_run(uint64_t cap, uint64_t per)
{
	round_ctx c = {.per = per};
	pthread_t th[PRODUCERS + CONSUMERS];
	int rc = 0;

	if (blq__ring_init(&c.ring, cap) != 0)
		return -1;
	c.seen = calloc(PRODUCERS * per, sizeof(*c.seen));
	if (c.seen == NULL) {
		blq__ring_destroy(&c.ring);
		return -1;
	}
	for (unsigned i = 0; i < PRODUCERS + CONSUMERS; i++)
		if (pthread_create(&th[i], NULL, i < PRODUCERS ? producer : consumer, &c) != 0)
			abort(); /* a round without its threads means nothing */
	for (unsigned i = 0; i < PRODUCERS + CONSUMERS; i++)
		pthread_join(th[i], NULL);
	for (uint64_t id = 0; id < PRODUCERS * per; id++)
		if (atomic_load(&c.seen[id]) != 1)
			fail(&c, "item lost or doubled", id);
	test_item extra;
	if (blq__ring_size(&c.ring) != 0 || blq__ring_pop(&c.ring, &extra))
		fail(&c, "ring not empty at the end", 0);
	if (atomic_load(&c.errors) != 0)
		rc = -1;
	free(c.seen);
	blq__ring_destroy(&c.ring);
	return rc;
}

int main(int argc, char **argv)
{
	static const uint64_t caps[] = {1, 2, 3, 5, 8};
	unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 10;
	uint64_t per = argc > 2 ? (uint64_t)atoll(argv[2]) : 20000;
	unsigned passed = 0, failed = 0;

	for (unsigned i = 0; i < rounds; i++)
		round_run(caps[i % (sizeof(caps) / sizeof(caps[0]))], per) == 0 ? passed++ : failed++;
	printf("%u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
