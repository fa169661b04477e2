/*
 * Lanes (lanes.h): making them, and which one is this thread's. The pushes
 * and takes are the rings' (rings.c).
 *
 * A thread finds its lane of a queue in a thread-local table of
 * BLQ__LANE_REFS entries, the queue's serial number the key, most
 * recently used first: the first entry is compared first (a thread
 * feeding one queue pays one compare). A miss adopts a lane (lanes.h,
 * "Ownership") into a new first entry, and the last entry's lane is
 * given back (a thread feeding more queues than that by turns may lose
 * its order when it comes back to one and adopts another lane).
 *
 * Giving back: when the thread exits (a pthread key's destructor walks the
 * table), and on eviction. The queue may be gone by then, so both look
 * the serial up in the list of live queues under reg_mu, the lock that
 * blq_free's unregistering takes too: a lane is never written after its
 * queue's memory is freed. Threads exit and queues come and go on slow
 * paths only; enqueues never take that lock.
 *
 * initial-exec TLS: the table is read on every enqueue, and in a shared
 * library the default model calls __tls_get_addr for it. The table is
 * small (BLQ__LANE_REFS * 40 bytes), well inside the static TLS surplus
 * glibc keeps for libraries loaded with dlopen.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#define BLQ__LANE_REFS 8u

typedef struct lane_ref {
	uint64_t serial; /* the queue's; 0: a free entry */
	blq *q;
	blq__lane *lane; /* NULL: none free when we looked */
	uint32_t retry;  /* NULL lane: calls left before we look again */
	/* NULL lane: where our last item went in the shared rings (its
	 * ring, its position + 1), so that a lane adopted later waits for
	 * it as for a spill (lanes.h, "Order"). */
	unsigned last_ring;
	uint64_t last_end;
} lane_ref;

static _Thread_local __attribute__((tls_model("initial-exec"))) lane_ref refs[BLQ__LANE_REFS];

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static blq *reg_head;        /* live queues with lanes, under reg_mu */
static uint64_t reg_serial;  /* the last serial given, under reg_mu */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static bool key_ok;

/* Under reg_mu: whether `q` with this serial is still alive. */
static bool live(const blq *q, uint64_t serial)
{
	for (const blq *p = reg_head; p != NULL; p = p->lanes.reg_next)
		if (p == q && p->lanes.serial == serial)
			return true;
	return false;
}

static void give_back(lane_ref *r)
{
	if (r->lane != NULL && live(r->q, r->serial))
		atomic_store_explicit(&r->lane->owned, 0, memory_order_release);
	memset(r, 0, sizeof(*r));
}

/* The thread's exit: its lanes go back to their queues. */
static void thread_exit(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&reg_mu);
	for (unsigned i = 0; i < BLQ__LANE_REFS; i++)
		if (refs[i].serial != 0)
			give_back(&refs[i]);
	pthread_mutex_unlock(&reg_mu);
}

static void make_key(void)
{
	key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
}

int blq__lanes_init(blq *q)
{
	blq__lanes *ls = &q->lanes;

	ls->lane = aligned_alloc(BLQ__CACHELINE, sizeof(blq__lane) * BLQ__LANES_MAX);
	if (ls->lane == NULL)
		return BLQ_ENOMEM;
	memset(ls->lane, 0, sizeof(blq__lane) * BLQ__LANES_MAX);
	ls->capacity = q->capacity;
	ls->slots = q->capacity < BLQ__LANE_SLOTS ? q->capacity : BLQ__LANE_SLOTS;
	/* Every lane's ring now, not at its first owner's first enqueue, so
	 * no item allocates; in one anonymous mapping, whose pages stay
	 * untouched (no memory) until a lane uses them
	 * (blq__ring_init_zeroed). */
	ls->map_bytes = (size_t)ls->slots * sizeof(blq__slot) * BLQ__LANES_MAX;
	void *m = mmap(NULL, ls->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (m == MAP_FAILED) {
		free(ls->lane);
		ls->lane = NULL;
		return BLQ_ENOMEM;
	}
	ls->map = m;
	for (unsigned i = 0; i < BLQ__LANES_MAX; i++)
		blq__ring_init_zeroed(&ls->lane[i].ring, ls->slots,
				      (blq__slot *)m + (size_t)i * ls->slots);
	pthread_once(&key_once, make_key);
	pthread_mutex_lock(&reg_mu);
	ls->serial = ++reg_serial;
	ls->reg_next = reg_head;
	reg_head = q;
	pthread_mutex_unlock(&reg_mu);
	return 0;
}

void blq__lanes_destroy(blq *q)
{
	blq__lanes *ls = &q->lanes;

	if (ls->lane == NULL)
		return;
	/* Unlisted first: no exiting thread writes a lane after this. */
	pthread_mutex_lock(&reg_mu);
	for (blq **p = &reg_head; *p != NULL; p = &(*p)->lanes.reg_next)
		if (*p == q) {
			*p = q->lanes.reg_next;
			break;
		}
	pthread_mutex_unlock(&reg_mu);
	munmap(ls->map, ls->map_bytes);
	free(ls->lane);
	ls->lane = NULL;
}

/* The first free lane; NULL when all are owned. Lanes are adopted in
 * index order, so those ever used are [0, made): the workers' scan. */
static blq__lane *adopt(blq *q)
{
	blq__lanes *ls = &q->lanes;

	for (unsigned i = 0; i < BLQ__LANES_MAX; i++) {
		blq__lane *l = &ls->lane[i];
		int free_ = 0;

		if (atomic_load_explicit(&l->owned, memory_order_relaxed) != 0 ||
		    !atomic_compare_exchange_strong_explicit(&l->owned, &free_, 1,
							     memory_order_acquire,
							     memory_order_relaxed))
			continue;
		unsigned made = atomic_load_explicit(&ls->made, memory_order_relaxed);

		while (made <= i &&
		       !atomic_compare_exchange_weak_explicit(&ls->made, &made, i + 1,
							      memory_order_release,
							      memory_order_relaxed))
			;
		return l;
	}
	return NULL;
}

/* Out of line: the first call of a thread into q, or after its table
 * forgot q, or a thread without a lane looking again. */
static __attribute__((noinline)) blq__lane *lane_slow(blq *q)
{
	const uint64_t serial = q->lanes.serial;
	lane_ref *r = NULL;

	for (unsigned i = 0; i < BLQ__LANE_REFS; i++)
		if (refs[i].serial == serial) {
			/* To the front: the fast look finds it next time, and
			 * the table's end holds the least recently used. */
			lane_ref hit = refs[i];

			memmove(&refs[1], &refs[0], i * sizeof(refs[0]));
			refs[0] = hit;
			r = &refs[0];
			break;
		}
	if (r != NULL && r->lane != NULL)
		return r->lane;
	if (r != NULL && r->retry > 0) {
		r->retry--;
		return NULL;
	}
	if (r == NULL) {
		/* A new entry, at the front: the last one's lane goes back
		 * (a free entry's give_back does nothing), the others move
		 * down one. */
		pthread_mutex_lock(&reg_mu);
		give_back(&refs[BLQ__LANE_REFS - 1]);
		pthread_mutex_unlock(&reg_mu);
		memmove(&refs[1], &refs[0], (BLQ__LANE_REFS - 1) * sizeof(refs[0]));
		r = &refs[0];
		memset(r, 0, sizeof(*r));
		if (key_ok)
			pthread_setspecific(exit_key, refs); /* non-NULL: the destructor runs */
	}
	r->serial = serial;
	r->q = q;
	r->lane = adopt(q);
	r->retry = r->lane == NULL ? BLQ__LANE_RETRY : 0;
	if (r->lane != NULL) {
		/* Our items in the shared rings, if any, go first. */
		r->lane->spilling = r->last_end != 0;
		r->lane->spill_ring = r->last_ring;
		r->lane->spill_end = r->last_end;
	}
	return r->lane;
}

void blq__lane_note_shared(blq *q, unsigned ring, uint64_t end)
{
	for (unsigned i = 0; i < BLQ__LANE_REFS; i++)
		if (refs[i].serial == q->lanes.serial) {
			refs[i].last_ring = ring;
			refs[i].last_end = end;
			return;
		}
}

blq__lane *blq__lane_own(blq *q)
{
	lane_ref *r = &refs[0];

	if (__builtin_expect(r->serial == q->lanes.serial, 1)) {
		if (__builtin_expect(r->lane != NULL, 1))
			return r->lane;
		/* No lane free when we looked: the shared rings until the
		 * next look, without the call (W1-MANY: 48 of its 64
		 * producers, twice an enqueue). */
		if (r->retry > 0) {
			r->retry--;
			return NULL;
		}
	}
	return lane_slow(q);
}

/* Up to n places of held's count (0: full, *seen the word that said
 * so). A refill (n above `want`, its extras bound for the lane's credit)
 * also counts itself in transit and begun in the same CAS (*transit), so
 * that a producer finding the count full knows those places will show up
 * as credit (lanes.h, "Capacity"). */
static uint64_t lanes_reserve(blq *q, uint64_t n, uint64_t want, bool *transit, uint64_t *seen)
{
	blq__lanes *ls = &q->lanes;
	/* seq_cst: this load is also the re-check of a producer about to
	 * sleep on a full queue, after it announced itself (ec.h); it must
	 * not pass that announcement (a plain load on x86). */
	uint64_t w = atomic_load_explicit(&ls->held, memory_order_seq_cst);

	for (;;) {
		uint64_t held = w & BLQ__HELD_MASK;

		if (held >= ls->capacity) {
			*seen = w;
			return 0;
		}
		uint64_t k = ls->capacity - held < n ? ls->capacity - held : n;
		uint64_t t = k > want ? BLQ__HELD_TRANSIT_ONE + BLQ__HELD_BEGUN_ONE : 0;

		/* Acquire: a worker releases after its take moved the ring's
		 * head (seq_cst), so the room this reservation counts on is
		 * visible to our push. (A carry out of the begun count's top
		 * bit drops: it only has to differ between two loads.) */
		if (atomic_compare_exchange_weak_explicit(&ls->held, &w, w + k + t,
							  memory_order_acquire, memory_order_relaxed)) {
			*transit = t != 0;
			return k;
		}
	}
}

/* Up to n of the credit in a lane cell's packed `entered` (internal.h),
 * with a CAS: its owner and thieves race for it; a borrowing owner's
 * word is left alone. Acquire: the credit's reservation, by whoever made
 * it, happens before our push (lanes_reserve says why that matters). */
static uint64_t take_credit(_Atomic uint64_t *word, uint64_t n)
{
	uint64_t w = atomic_load_explicit(word, memory_order_seq_cst); /* as held's, above */

	for (;;) {
		uint64_t c = w & BLQ__CREDIT_MASK;

		if (c == 0 || c >= BLQ__CREDIT_BORROWED)
			return 0;
		uint64_t k = c < n ? c : n;

		if (atomic_compare_exchange_weak_explicit(word, &w, w - k, memory_order_acquire,
							  memory_order_relaxed))
			return k;
	}
}

/* held is full: up to `want` of the lanes' credit (ours included), only
 * what we use. Taking more to keep would hold it in transit, out of every
 * count, while other producers find held full and leak (blq-demo's queue
 * leaked at 85% full when a thief kept whole hoards). */
static uint64_t take_others_credit(blq *q, uint64_t want)
{
	unsigned made = atomic_load_explicit(&q->lanes.made, memory_order_acquire);
	uint64_t got = 0;

	for (unsigned i = 0; i < made && got < want; i++)
		got += take_credit(&blq__lane_cell(q, &q->lanes.lane[i])->entered, want - got);
	return got;
}

/* Unused places of a reservation back into l's credit (only its owner
 * adds; thieves only take), at most BLQ__LANE_CREDIT there, the rest back
 * to held. Release: a thief's acquire sees our reservation's view. */
static void keep_credit(blq *q, blq__lane *l, uint64_t k)
{
	_Atomic uint64_t *word = &blq__lane_cell(q, l)->entered;
	uint64_t c = atomic_load_explicit(word, memory_order_relaxed) & BLQ__CREDIT_MASK;
	uint64_t room = c < BLQ__LANE_CREDIT ? BLQ__LANE_CREDIT - c : 0;
	uint64_t keep = k < room ? k : room;

	if (keep > 0)
		atomic_fetch_add_explicit(word, keep, memory_order_release);
	if (k > keep)
		atomic_fetch_sub_explicit(&q->lanes.held, k - keep, memory_order_seq_cst);
}

uint64_t blq__lanes_admit(blq *q, blq__lane *l, uint64_t n)
{
	uint64_t k = l != NULL ? take_credit(&blq__lane_cell(q, l)->entered, n) : 0;

	if (k == n)
		return k;
	uint64_t want = n - k, waited_from = 0;
	/* A lane's owner refills its credit; a thread without a lane
	 * reserves what it needs. */
	uint64_t ask = l != NULL && want < BLQ__LANE_CREDIT ? BLQ__LANE_CREDIT : want;

	for (;;) {
		bool transit = false, releasing = false;
		uint64_t seen, hands = 0;
		uint64_t got = lanes_reserve(q, ask, want, &transit, &seen);

		/* Places of items the workers started from their hands,
		 * not yet released (hand_places.c); then the lanes' credit.
		 * In this order: on W1 a claim found a place in 86% of the
		 * admissions that got this far and the lanes' credit in 1.4%,
		 * and every look at another lane's cell moves that line away
		 * from its owner, whose next count then misses (W1-MANY: a
		 * look reads all 16). Both looks fall between the two loads
		 * of held's word below, so their order does not change what
		 * "full" means. */
		if (got == 0)
			got = blq__hand_places_claim(q, want, &hands, &releasing);
		if (got == 0)
			got = take_others_credit(q, want);
		if (got > 0) {
			uint64_t use = got < want ? got : want;

			if (got > use)
				keep_credit(q, l, got - use);
			if (transit)
				atomic_fetch_sub_explicit(&q->lanes.held, BLQ__HELD_TRANSIT_ONE,
							  memory_order_seq_cst);
			return k + use;
		}
		/* The count was full and we found no credit to take. Full
		 * only if held's word did not move since the count said so
		 * and no refill is in transit: a refill that began or landed
		 * between our two looks (its extras now credit we looked for
		 * too early), a place released, all move the word (the begun
		 * count: even a release and a refill that leave count and
		 * transit as they were). Then look again at once. */
		uint64_t now_w = atomic_load_explicit(&q->lanes.held, memory_order_seq_cst);
		bool moved = now_w != seen;

		/* Nor may a worker have started an item of its hand since we
		 * looked (the sum of the workers' started and freed moved):
		 * room we looked for too early; a worker releasing its hand is
		 * in transit, as a refill. */
		if (!moved && (now_w & BLQ__HELD_TRANSIT_MASK) == 0 && !releasing) {
			uint64_t again = 0;
			bool still = false;

			if (blq__hand_places_claim(q, 0, &again, &still) == 0 && again == hands &&
			    !still)
				return k;
			moved = again != hands;
		}
		/* A refill between its CAS and its credit add holds places
		 * out of every count: they are room, two instructions of that
		 * producer's away. Wait for them (it runs again when we
		 * yield, if it shares our CPU), and look again; for at most
		 * BLQ__TRANSIT_WAIT_NS in all (a thread stopped by a debugger
		 * must not stop us, nor others winning every place freed
		 * keep us looking), then call the queue full. */
		uint64_t t = blq__fast_ns();

		if (waited_from == 0)
			waited_from = t;
		else if (t - waited_from > BLQ__TRANSIT_WAIT_NS)
			return k;
		if (moved)
			continue;
		sched_yield();
	}
}

void blq__lanes_unspend(blq *q, blq__lane *l)
{
	atomic_fetch_add_explicit(&blq__lane_cell(q, l)->entered, 1, memory_order_release);
}

/* The places held's word counts (its transit and begun bits left out). */
static uint64_t held_count(const blq *q)
{
	return atomic_load_explicit(&q->lanes.held, memory_order_relaxed) & BLQ__HELD_MASK;
}

/* held less the lanes' idle credit (a borrowing owner's word counts none). */
static uint64_t less_credit(const blq *q, uint64_t held, unsigned made)
{
	uint64_t idle = 0;

	for (unsigned i = 0; i < made; i++) {
		uint64_t c = atomic_load_explicit(&q->cells[i].entered,
						  memory_order_relaxed) &
			     BLQ__CREDIT_MASK;

		idle += c < BLQ__CREDIT_BORROWED ? c : 0;
	}
	return held > idle ? held - idle : 0;
}

uint64_t blq__lanes_held(const blq *q)
{
	uint64_t held = held_count(q);

	return less_credit(q, held, atomic_load_explicit(&q->lanes.made, memory_order_acquire));
}

bool blq__lanes_held_within(const blq *q, uint64_t limit)
{
	uint64_t held = held_count(q);

	if (held <= limit)
		return true; /* the credit only takes away */
	/* A lane's credit is at most BLQ__LANE_CREDIT (only its owner adds,
	 * keep_credit up to that, unspend what it just spent): beyond the
	 * band that much credit could explain, the answer needs no look at
	 * the producers' cells, whose lines their owners' every add writes
	 * (a worker's look on each take while producers wait cost W1 a
	 * miss per item on both sides). */
	unsigned made = atomic_load_explicit(&q->lanes.made, memory_order_acquire);

	if (held - limit > (uint64_t)made * BLQ__LANE_CREDIT)
		return false;
	return less_credit(q, held, made) <= limit;
}

uint64_t blq__lanes_items(const blq *q)
{
	uint64_t held = blq__lanes_held(q);
	uint64_t hands = blq__hand_places(q); /* counted in blq_size by the hands */

	return held > hands ? held - hands : 0;
}
