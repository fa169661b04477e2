/*
 * The queue's internals, shared by the files of queue/. Not installed;
 * other modules never include it (engines see the core through
 * shared/engine.h only).
 *
 * Locks: pool_mu (the balancer) before mu (the close state machine and
 * worker exits); the timer's mutex (timer.h) is never held with either.
 * None of them is taken on the enqueue or take path of an undelayed item.
 */
#ifndef BLQ_QUEUE_INTERNAL_H
#define BLQ_QUEUE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <blq/queue.h>
#include <blq/schedule.h>

#include "ec.h"
#include "engine.h"
#include "errorf.h"
#include "idle_clock.h"
#include "item_ring.h"
#include "lanes.h"
#include "monotonic.h"
#include "thread.h"
#include "timer.h"

#define BLQ__WORKERS_LIMIT 1024u
/* Worker slots a queue can ever have: the ceiling's limit, and as many
 * spares (watchdog.c). */
#define BLQ__SLOTS_LIMIT (2u * BLQ__WORKERS_LIMIT)
/* Every interval of the config and of a job: a year. Larger values are
 * mistakes (often a negative number cast to unsigned). */
#define BLQ__INTERVAL_LIMIT (365ull * 24 * 3600 * 1000000000ull)
#define BLQ__RETRIES_LIMIT 1000000u
/* Counter cells shared by producer threads (hashed by thread; a lane's
 * owner uses its lane's). */
#define BLQ__PRODUCER_CELLS 16u
/* blq__cell.entered: calls from this bit up, a lane's credit below, where
 * a value from BLQ__CREDIT_BORROWED up means its owner's add is borrowing
 * (credit 0: enqueue.c undoes it at once; thieves leave it alone). */
#define BLQ__ENTER_SHIFT 16
#define BLQ__ENTER_ONE (1ull << BLQ__ENTER_SHIFT)
#define BLQ__CREDIT_MASK (BLQ__ENTER_ONE - 1)
#define BLQ__CREDIT_BORROWED 0x8000u

/*
 * Per-thread counters, one cache line or more each, folded by blq_stats.
 * A worker's cell has a single writer (that worker), so it is updated with
 * a relaxed load and store instead of a locked RMW; producer cells are
 * shared by hashed threads and use fetch_add.
 */
typedef struct blq__cell {
	/* Producers: enqueue calls that started, that ended, and the items
	 * they gave back refused (BLQ_ECLOSED, BLQ_EFULL); `extra` (below)
	 * counts a batch's items beyond its first. in = entered + extra -
	 * refused; in flight = entered - left: producers, not items, so a
	 * batch weighs one in force_calibration_limit (see enqueue.c).
	 * `entered` is packed: the calls in its bits from BLQ__ENTER_SHIFT
	 * up, and below them the unused credit of the lane whose cell this
	 * is (lanes.h: lane i counts in producer cell i), so that one
	 * locked add counts its owner in and takes a place (enqueue.c). */
	alignas(BLQ__CACHELINE) _Atomic uint64_t entered;
	_Atomic uint64_t left;
	_Atomic uint64_t refused;
	_Atomic uint64_t processed;
	_Atomic uint64_t failed;
	_Atomic uint64_t leaked_rear;
	_Atomic uint64_t leaked_front;
	_Atomic uint64_t leaked_failed;
	_Atomic uint64_t leaked_deadline;
	_Atomic uint64_t leaked_closed;
	_Atomic uint64_t expired;
	_Atomic uint64_t lost;
	_Atomic uint64_t cancelled;
	_Atomic uint64_t retried;
	_Atomic uint64_t timed_out;
	/* Calls into the DLQ's enqueue that started and that returned
	 * (outcome.c): blq_stats.dlq_waiting is their difference. In the
	 * cell, not one counter of the queue: two locked adds per leak on a
	 * line every leaking producer shares made a leak 1.8x slower. */
	_Atomic uint64_t dlq_in;
	_Atomic uint64_t dlq_out;
	/* Workers only (rate.c): starts that had to wait for a token, and
	 * the time spent waiting, on the queue's clock. */
	_Atomic uint64_t rate_delayed;
	_Atomic uint64_t rate_wait_ns;
	_Atomic uint64_t extra; /* batches only: on a line of its own */
} blq__cell;

/* The handle a worker callback sees; one per worker, reused per item. */
struct blq_task {
	blq *queue;
	uint64_t enq_ns;
	uint64_t timeout_at; /* on the queue's clock; 0 = no timeout */
	/* The timeout token (enum blq__token): raised when the worker was
	 * told the limit passed (blq_task_cancelled/_timed_out) or the
	 * watchdog gave the attempt up; from then on the attempt has failed,
	 * whatever it returns, and the queue keeps the payload. Claimed when
	 * the worker took the payload first (blq_task_claim). Atomic: the
	 * watchdog and async_chain helpers change it too. */
	_Atomic int token;
	uint32_t attempt;
	unsigned worker;
	_Atomic int cancelled; /* raised by a force close */
	/* The handle (handle.c) of the item this attempt runs, or 0; with
	 * bit 0 set once blq_cancel raised the token through it. */
	_Atomic uintptr_t cancel_for;
};

enum blq__token {
	BLQ__TOKEN_DOWN = 0,
	BLQ__TOKEN_RAISED,  /* timed out: the attempt failed, the queue keeps the payload */
	BLQ__TOKEN_CLAIMED, /* the worker took the payload before any raise */
};

/* A worker slot's thread, as the worker itself reports it (and the
 * watchdog, which moves an ACTIVE thread to DETACHED). */
enum blq__wstate {
	BLQ__W_IDLE = 0, /* no thread */
	BLQ__W_ACTIVE,   /* taking items */
	BLQ__W_ASLEEP,   /* parked by the balancer, thread kept */
	BLQ__W_DETACHED, /* given up inside a callback: ends after its item */
};

/* In busy_until: the watchdog (or a close past its limit) gave the
 * running attempt up. Clock values stay below it. */
#define BLQ__BUSY_GIVEN_UP (1ull << 63)
#define BLQ__BUSY_NO_LIMIT (BLQ__BUSY_GIVEN_UP - 1)

/* The most items a worker takes ahead (worker.c, "Taking ahead"). */
#define BLQ__HAND 16u

/* A take's items: it[0] is the one taken, then up to BLQ__HAND ahead
 * (it[next..n) are those not started yet). In the worker's slot, not on
 * its stack, so that a watchdog that gives the worker up can take the
 * unstarted ones back (handback.c); the worker runs each in place (a
 * copy out per item was 14 of its ~90 instructions per item). Written by
 * the worker alone while it owns them (handback.c says when it does). */
typedef struct blq__hand {
	blq__item it[BLQ__HAND + 1];
	unsigned n, next;
	/* The worker's own copy of w->started (hand_places.c), and whether
	 * this hand's places are in the lanes' held (released at its end). */
	uint64_t started;
	/* The item whose attempt runs under a time limit: set by the worker
	 * before it publishes the limit (worker.c), read by the thread that
	 * gives the attempt up (late.c). Not it[next - 1]: a settle after an
	 * earlier give-up of the same item moves next to the hand's end. */
	blq__item *running;
	bool placed;
} blq__hand;

/* In blq__worker.freed: the worker is between its exchange and its
 * subtraction from held (hand_places.c). */
#define BLQ__FREED_RELEASING (1ull << 63)

/* In blq__worker.hand: a thread that gave the worker's running attempt up
 * took the hand over (handback.c); the low bits say how many items it
 * left to the worker. */
#define BLQ__HAND_GONE (1u << 31)

/* What the balancer asks of a worker; read by the worker between items. */
enum blq__wcmd {
	BLQ__CMD_RUN = 0,
	BLQ__CMD_SLEEP,
	BLQ__CMD_STOP, /* end the thread (asleep too long, or above max) */
};

typedef struct blq__worker {
	alignas(BLQ__CACHELINE) blq *q;
	unsigned index;
	blq__cell *cell;
	struct blq_task task;
	_Atomic int cmd;   /* enum blq__wcmd; written by the balancer */
	/* Inside the callback: 0 when not; else the attempt's time limit on
	 * the queue's clock (BLQ__BUSY_NO_LIMIT: none), with
	 * BLQ__BUSY_GIVEN_UP set once the watchdog or a close gave it up, so
	 * blq_stats tells busy and overrunning workers, and the watchdog
	 * finds its work, from one word the worker writes twice per attempt
	 * on its own line. */
	_Atomic uint64_t busy_until;
	_Atomic int state; /* enum blq__wstate */
	/* Time spent blocked on an empty queue while active, for the
	 * balancer's utilisation estimate, on the queue's clock, in one word
	 * so the balancer reads it whole (idle_clock.h): with bit 0 clear, the
	 * total so far; with bit 0 set, a wait is running and the total is
	 * the word (bit 0 cleared) plus the clock. */
	_Atomic uint64_t idle_clock;
	_Atomic uint64_t asleep_since;
	/* Items the worker took ahead and has not started yet (worker.c,
	 * "Taking ahead"), read by blq_size: written by the worker, and once
	 * per given-up attempt by the thread that gave it up, which stores
	 * BLQ__HAND_GONE | what it left (handback.c). */
	_Atomic unsigned hand;
	/* A hand's places in the lanes' held (hand_places.c): the items that
	 * left the hand (the worker's relaxed store per item), and how many
	 * of those were released (a producer's claim, or the worker at the
	 * hand's end; BLQ__FREED_RELEASING meanwhile). Both only grow. */
	_Atomic uint64_t started;
	_Atomic uint64_t freed;
	blq__ec park; /* an asleep worker sleeps here */
	/* Its retries' way into the timer (inbox.c); NULL until the first. */
	_Atomic(struct blq__inbox *) inbox;
	/* The worker's own: it slept for a token since its last start
	 * (rate.c counts the start as delayed). */
	bool rate_waited;
	/* Below: under q->pool_mu. */
	pthread_t thread;
	bool joinable;    /* a thread was created and not yet joined */
	bool detached;    /* under q->mu: its thread was given up and runs on */
	uint64_t hb_wait; /* the idle total seen at the last heartbeat */
	/* The clock when the worker's last item ended, while it goes
	 * straight on to the next one (0 once it had to look again or wait):
	 * that item's start, saving a clock read per item with metrics. */
	uint64_t last_end;
	/* The worker's hand (worker.c, handback.c), on lines of its own at
	 * the end: the fields above are read by other threads per item. */
	alignas(BLQ__CACHELINE) blq__hand h;
	/* Set by the thread that gave the running attempt up when it ended
	 * the item at the limit (late.c), before its BLQ__HAND_GONE store;
	 * read and cleared by the worker after blq__hand_settle. */
	bool late;
} blq__worker;

enum blq__state {
	BLQ__OPEN = 0,
	BLQ__CLOSING, /* no new items; workers drain (or stop, when forced) */
	BLQ__CLOSED,  /* threads joined, leftovers swept, counters final */
};

/* How a close treats the queue's items (close.c; the table in queue.h),
 * ordered by strength: the values of q->forced. */
enum blq__close_mode {
	BLQ__CLOSE_LIGHT, /* drain everything (or not closing at all) */
	BLQ__CLOSE_SOFT,  /* running items finish; the rest is abandoned */
	BLQ__CLOSE_HARD,  /* as Soft, and the running items are cancelled */
};

/* The bounds in force: the config's, or a schedule range's. */
typedef struct blq__bounds {
	unsigned min, max;
	double wakeup, sleep;
	int range; /* schedule range index, -1 = the config's */
} blq__bounds;

/*
 * The queue. Its fields are grouped by what guards them; a group that
 * threads write starts a cache line of its own (alignas), so that a
 * producer's enqueue, which reads the first groups, does not share a line
 * with what workers, the timer or QoS write per item.
 */
struct blq {
	/* -- Set by blq_new before any thread starts; read-only after. -- */
	blq_config cfg; /* copied; cfg.name points at name[]; cfg.qos is
			 * NULL (the engine keeps its own copy) */
	char name[BLQ__NAME_MAX + 1];
	bool leaky;
	bool stamp;    /* read the clock on enqueue */
	/* workers_min < workers_max, or a schedule: set by blq_new, and
	 * raised (never lowered) by blq_resize under pool_mu; atomic for
	 * that, a plain load on the paths that read it. */
	_Atomic bool balanced;
	bool own_clock; /* cfg.clock.now_ns is the caller's, not CLOCK_MONOTONIC */
	bool direct_due; /* the engine lets the timer use a due ring (shape) */
	blq_schedule *schedule; /* a copy, or NULL */
	uint64_t start_ns;      /* the queue's clock at creation (relative schedules) */
	/* The engine new items go through (engine.h), its state, and what
	 * it may see of the queue. */
	const blq__engine *engine;
	void *engine_state;
	blq__port port;
	size_t capacity;       /* the engine's shape: everything the queue holds */
	/* The rings engine's lanes and its admission count (lanes.h); no
	 * lanes (lane NULL) with QoS. */
	blq__lanes lanes;
	unsigned nrings;
	blq__ring *rings;
	size_t ring_cap;       /* the rings' share of capacity (QoS: its egress) */

	/* -- Set once, atomically (release), by the timer's first add. -- */
	/* The timer's due items (timer.c), taken before the rings': NULL until
	 * the timer starts, and always when the engine says !direct_due (due
	 * items are admitted like new ones). */
	_Atomic(blq__ring *) due;

	/* -- Event counts (ec.h): lock-free sleep and wake, each on its own
	 * line where two sides hit it per item. -- Workers sleep on items_ec
	 * while every ring is empty; producers (and QoS egress threads) sleep
	 * on space_ec while every ring is full; the closer sleeps on ctl_ec
	 * for producers to leave; blq_wait_idle on idle_ec; paused workers on
	 * pause_ec; the heartbeat thread on hb_ec. */
	alignas(BLQ__CACHELINE) blq__ec items_ec;
	alignas(BLQ__CACHELINE) blq__ec space_ec;
	alignas(BLQ__CACHELINE) blq__ec ctl_ec;
	blq__ec idle_ec;
	blq__ec pause_ec;
	blq__ec hb_ec;
	/* Whether waits spin before they sleep (spin.h): its own line. */
	blq__spin spin;

	/* -- Atomic flags read on every enqueue, written rarely (close,
	 * pause, the balancer). seq_cst where the close protocol pairs them
	 * with the producers' counts (enqueue.c); relaxed otherwise. -- */
	alignas(BLQ__CACHELINE) _Atomic int closed;
	/* The strongest dropping close so far (enum blq__close_mode): 0
	 * until a Soft or Hard close (close.c) raises it; from then on
	 * workers take no more items and what is queued or timer-held is
	 * abandoned. Readers that only ask "dropping?" test it for non-zero. */
	_Atomic int forced;
	_Atomic int paused;
	_Atomic unsigned n_active; /* workers in BLQ__W_ACTIVE */
	_Atomic int throttled;     /* the queue was full at the last look */
	_Atomic unsigned producers_blocked; /* waiting for room (engine.h) */
	_Atomic uint64_t producers_turned_away; /* over producers_blocked_max */
	_Atomic unsigned wakeup_permille; /* bounds.wakeup * 1000, for enqueue-side hints */

	/* -- Atomic, written by every mover: its own line. -- Items accepted
	 * but held outside the rings: waiting in the timer (delays, retry
	 * backoff), in an engine's hands (QoS sub-queues), or in the hands of
	 * the thread moving them into a ring. A mover counts an item here
	 * before it leaves the place it was counted before, and uncounts it
	 * (seq_cst) only after pushing it into a ring, through blq__handoff
	 * (engine.h), which also wakes a worker and, when closed, everyone.
	 * So a worker that sees closed, no producer in flight and staged == 0
	 * knows the rings hold all there will be. Counted in blq_size.
	 * Workers' retries count in their inboxes instead (inbox.c);
	 * blq__staged reads both. */
	alignas(BLQ__CACHELINE) _Atomic uint64_t staged;

	/* -- Set by blq_new, grown only by blq_resize (under pool_mu); read
	 * on every enqueue and take: a line of its own, away from `staged`.
	 * The cells' and workers' own fields follow their own rules
	 * (blq__cell, blq__worker). -- */
	/* The thread ceiling: the largest workers_max of the base bounds
	 * and the schedule (blq_stats' idle slots count against it). */
	alignas(BLQ__CACHELINE) _Atomic unsigned nworkers;
	/* Worker slots in use: twice the largest ceiling so far (the
	 * spares are where the watchdog starts the replacements of threads
	 * it gave up). Only grows: a slot is set up before the release
	 * store that publishes it, so a walker that reads it (blq__slots,
	 * acquire) finds every slot below ready. Every walk over the workers
	 * goes to blq__slots(q). */
	_Atomic unsigned nslots;
	/* Both arrays are reserved once, at creation, for BLQ__SLOTS_LIMIT
	 * slots (address space only: a page is backed once a slot on it is
	 * set up, queue.c) and never move or shrink, so no reader can hold a
	 * stale pointer after a resize. The cells: BLQ__PRODUCER_CELLS
	 * producer cells (lane i's is cell i), the closer's, then one per
	 * worker slot (BLQ__CELL_WORKERS + i). */
	blq__worker *workers;
	blq__cell *cells;
	/* The rate limit (rate.c), set by blq_new: the emission interval T
	 * (ns per start; 0: no limit, the one branch a take pays) and the
	 * burst tolerance T * (rate_burst - 1). */
	uint64_t rate_t, rate_tau;

	/* -- Under pool_mu: the balancer's state. Lock order: pool_mu
	 * before mu. The four counters are written under pool_mu and read
	 * without it (relaxed, by blq_stats). -- */
	pthread_mutex_t pool_mu;
	bool pool_closed;  /* no more thread starts */
	/* The base bounds: the config's, until blq_resize replaces them; in
	 * force whenever no schedule range is (balancer.c, bounds_now). */
	blq__bounds base;
	blq__bounds bounds; /* in force since the last look */
	uint64_t hb_last;  /* the queue's clock at the last heartbeat */
	pthread_t hb_thread;
	bool hb_started;
	_Atomic uint64_t woken, slept, started_threads, stopped_threads;

	/* -- The timer: its own mutex and atomics (timer.h). -- */
	blq__timer timer; /* delays and retry backoff (timer.c) */

	/* -- The watchdog (watchdog.c): started once, by the first attempt
	 * with a time limit (wd_started, a compare-and-swap); it sleeps on
	 * wd_ec until wd_next, its next look on the queue's clock
	 * (UINT64_MAX: none planned), which a worker with an earlier limit
	 * reads to know it must wake it. -- */
	alignas(BLQ__CACHELINE) _Atomic uint64_t wd_next;
	_Atomic int wd_started;
	_Atomic int wd_stop;
	bool wd_joinable; /* under pool_mu */
	blq__ec wd_ec;
	pthread_t wd_thread;

	/* -- The rate limit's state (rate.c), written per start when on: a
	 * line of its own. rate_tat: the GCRA's theoretical arrival time of
	 * the next start, on the queue's clock; rate_held_at: the last time
	 * a worker found items waiting and no token (the balancer's look, with
 * rate_waiting: a worker late to wake on a busy host still holds);
	 * rate_ec: where such workers sleep until the token's time. -- */
	alignas(BLQ__CACHELINE) _Atomic uint64_t rate_tat;
	_Atomic uint64_t rate_held_at;
	_Atomic unsigned rate_waiting; /* workers asleep in blq__rate_hold now */
	blq__ec rate_ec;

	/* -- Under mu: the close state machine and the worker exits. -- */
	pthread_mutex_t mu;
	pthread_cond_t cond;      /* signalled when alive or state change */
	unsigned alive;           /* worker threads not yet exited */
	/* Of them, given up inside a callback (watchdog.c): they end their
	 * item and exit; written under mu, read by blq_stats without it. */
	_Atomic unsigned detached;
	enum blq__state state;
	bool finishing;           /* someone is joining and sweeping */
};

/* The cells (struct blq, `cells`): the closer's, and the first worker's. */
#define BLQ__CELL_CLOSER BLQ__PRODUCER_CELLS
#define BLQ__CELL_WORKERS (BLQ__PRODUCER_CELLS + 1)

/* Worker slots in use; slots below it are set up (acquire: pairs with
 * the release store that publishes new ones, queue.c). */
static inline unsigned blq__slots(const blq *q)
{
	return atomic_load_explicit(&q->nslots, memory_order_acquire);
}

/* Cells in use: the producers', the closer's, the slots'. */
static inline unsigned blq__ncells(const blq *q)
{
	return BLQ__CELL_WORKERS + blq__slots(q);
}

/* Worker i's retry inbox (inbox.c), or NULL before its first retry. */
static inline struct blq__inbox *blq__inbox_at(const blq *q, unsigned i)
{
	return atomic_load_explicit(&q->workers[i].inbox, memory_order_acquire);
}

/* queue.c */
uint64_t blq__fold_in(const blq *q);
uint64_t blq__ring_items(const blq *q); /* in the rings (with QoS: the egress) */
uint64_t blq__taken_items(const blq *q); /* those and the due ring's: what workers take from */
/* Waiting and runnable: the rings plus QoS sub-queues, not the timer. What
 * the fill rate and the balancer count. */
uint64_t blq__ready(const blq *q);

/* config.c */
int blq__config_check(const blq_config *cfg, blq_error *err);
/* The pool's part of it (workers, workers_min/max, the factors, and the
 * schedule's factors against them), with the same messages: blq_resize. */
int blq__bounds_check(const blq_config *cfg, blq_error *err);

/* clock.c: CLOCK_MONOTONIC read cheaply (the queue's default clock; sleep
 * deadlines use blq__monotonic_ns, util/monotonic.h). */
uint64_t blq__fast_ns(void);
/* The absolute CLOCK_MONOTONIC time `ns` from now, for blq__ec_wait and
 * condition variables; 0 (no limit) for UINT64_MAX or on overflow. */
uint64_t blq__deadline_after(uint64_t ns);
static inline uint64_t blq__now(const blq *q)
{
	/* No indirect call for the default clock. */
	return q->own_clock ? q->cfg.clock.now_ns(q->cfg.clock.ctx) : blq__fast_ns();
}

/* log.c */
void blq__log(const blq *q, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));


/* enqueue.c */
blq__cell *blq__producer_cell(blq *q);
int64_t blq__inflight(const blq *q); /* producers inside enqueue */
/* blq_enqueue_job (or, with try_only, blq_try_enqueue_job) with `done` as
 * the item's hook in place of job->done (blq_enqueue_wait's, wait.c). */
int blq__enqueue_job_as(blq *q, const blq_job *job, const blq_done *done, bool try_only);
/* An attempt of an item with the hook `d` returned rc: kept for
 * blq_enqueue_wait_result when d is a waiter's (wait.c). */
void blq__wait_note(const blq_done *d, int rc, uint32_t attempt);

/* rings.c (and engine.h's blq__core_push, blq__core_room) */
bool blq__push_any(blq *q, const blq__item *it);
/* An item whose place in `held` its producer took already (enqueue.c,
 * from its lane's credit): into lane l, or its spill. Never fails. */
void blq__push_placed(blq *q, blq__lane *l, const blq__item *it);
/* A batch: *tmpl with each payload in turn, pushed in order into the
 * rings, a reservation per up to BLQ__RING_RESERVE_MAX slots. Returns how
 * many went in (the first ones); fewer than n when the rings are full. */
size_t blq__push_batch(blq *q, const blq__item *tmpl, void *const *payloads, size_t n);
bool blq__pop_any(blq *q, unsigned start, blq__item *out); /* the due ring, then the rings */
bool blq__pop_rings(blq *q, unsigned start, blq__item *out); /* the lanes and shared rings */
/* The oldest item of the caller's lane, else of the rings (a front
 * leak's victim). */
bool blq__pop_oldest_own(blq *q, blq__item *out);
/* Up to max items in one take from the first lane (from worker `home`'s)
 * or its home shared ring that holds at least 2 * max, when no due item
 * waits; else 0 (rings.c). With lanes their places stay in held: the
 * worker releases them (hand_places.c). */
unsigned blq__take_ahead(blq *q, unsigned home, blq__item *out, unsigned max);
/* Items workers took ahead and have not started (worker.c). */
uint64_t blq__hand_items(const blq *q);
/* queue.c: sets the thread ceiling (workers_max, or the schedule's
 * largest max when above it) and sets up slots up to twice it (never
 * fewer than before). Caller holds pool_mu (or is blq_new). */
void blq__slots_grow(blq *q, unsigned workers_max);

/* lanes.c (lanes.h): a rings-engine queue's lanes, made and registered
 * (BLQ_ENOMEM) and freed; the calling thread's lane (adopted on its first
 * call; NULL: none free, use the shared rings); the admission: up to n
 * places for the caller (whose lane is l, or NULL), from its lane's
 * credit or `held`, never above capacity (0: full); and the items in
 * the rings (held less the lanes' unused credit and the hands' places). */
int blq__lanes_init(blq *q);
void blq__lanes_destroy(blq *q);
blq__lane *blq__lane_own(blq *q);
/* A thread without a lane pushed into shared ring `ring` up to position
 * end - 1: a lane it adopts later waits for those (lanes.h, "Order"). */
void blq__lane_note_shared(blq *q, unsigned ring, uint64_t end);
uint64_t blq__lanes_admit(blq *q, blq__lane *l, uint64_t n);
uint64_t blq__lanes_items(const blq *q);
/* held less the lanes' credit: the rings' items and the hands' places
 * (the wake-up rule's count: no walk of the workers' slots per take). */
uint64_t blq__lanes_held(const blq *q);
/* blq__lanes_held(q) <= limit, reading the producers' cells only when
 * the lanes' credit could decide it. */
bool blq__lanes_held_within(const blq *q, uint64_t limit);
/* A place taken from l's credit by the enqueue's add and not used (the
 * queue closed): back into the credit. */
void blq__lanes_unspend(blq *q, blq__lane *l);
/* hand_places.c: a hand's places in held. The worker's release at its
 * hand's end (wakes producers waiting for room); a producer's claim of up
 * to `want` places of items the workers started (*sum: the workers'
 * started + freed, for the full check's second look; *releasing: a
 * worker is between its exchange and its subtraction); and the places
 * the hands hold (unstarted items and started places not yet released),
 * which blq__lanes_items leaves out. */
void blq__hand_places_release(blq *q, blq__worker *w);
uint64_t blq__hand_places_claim(blq *q, uint64_t want, uint64_t *sum, bool *releasing);
uint64_t blq__hand_places(const blq *q);
/* worker.c: wakes a producer waiting for room when the rings have
 * drained to half; after a seq_cst read-modify-write that freed room. */
void blq__space_wake(blq *q);
static inline bool blq__lanes_on(const blq *q)
{
	return q->lanes.lane != NULL;
}

/* Lane l's counter cell (its owner's producer cell, whose `entered`
 * carries the lane's credit). */
static inline blq__cell *blq__lane_cell(blq *q, const blq__lane *l)
{
	return &q->cells[(unsigned)(l - q->lanes.lane)];
}

/* engine.c: choosing the engine (the one place that names QoS) and
 * building it into a new queue. */
const blq__engine *blq__engine_for(const blq_config *cfg);
/* Fills q->port, has the engine build its state, and takes its shape
 * (capacity, ring_cap, nrings' count in *streams). BLQ_ENOMEM. */
int blq__engine_setup(blq *q, unsigned *streams);

/* outcome.c: the one place where items end (counts, frees, DLQ, metrics,
 * and the blq_enqueue_wait caller). */
void blq__processed(blq *q, blq__cell *own, const blq__item *it);
void blq__drop(blq *q, const blq__item *it, _Atomic uint64_t *counter, enum blq_outcome o);
void blq__lose(blq *q, blq__cell *c, const blq__item *it);
/* To the DLQ, saying why (the reason picks the leak counter and the
 * metric's direction); rc: the failed attempt's return value
 * (BLQ_DLQ_FAILED), else 0. A refusing DLQ makes it lost. */
void blq__to_dlq(blq *q, blq__cell *c, const blq__item *it, enum blq_dlq_reason why, int rc);
/* An item still queued at a Soft or Hard close: to the DLQ, or lost. */
void blq__abandon(blq *q, blq__cell *c, const blq__item *it);
/* Cancelled through its handle: freed, counted cancelled. (The DLQ and
 * lost paths above end a cancelled item so too.) */
void blq__cancelled(blq *q, blq__cell *c, const blq__item *it);
/* On this thread, while `on` (until called again with false): `payload`
 * (NULL too) is lent to a callback the watchdog gave up on (late.c), so
 * an item with it that ends here is not freed (item_free runs when the
 * callback returns). */
void blq__lend_payload(bool on, void *payload);

/* handle.c: cancelling one item. Each takes the item's hook (NULL:
 * none): only a handle's counts. */
bool blq__handle_cancelled(const blq_done *d); /* blq_cancel was called */
/* Where a handle's item is now (enum blq_handle_state), when d is a
 * handle's hook; else nothing. Set before the item becomes visible
 * there, so a later move (a worker's start) is never overwritten. */
void blq__handle_where(const blq_done *d, int where);
/* An attempt starts on task t: published for blq_cancel. True when the
 * item was cancelled already: do not run it. */
bool blq__handle_begin(const blq_done *d, struct blq_task *t);
/* The attempt returned: unpublished. True when the item was cancelled. */
bool blq__handle_end(const blq_done *d, struct blq_task *t);
/* blq_enqueue_job_handle, or with try_only blq_try_enqueue_job's rules
 * (a full queue: BLQ_EFULL); task groups stand on it (group.c). */
int blq__enqueue_job_handle(blq *q, const blq_job *job, bool try_only, blq_handle **out);

/* retry.c: a failed attempt with retries left, rc what a DLQ hears of it
 * (blq_dlq_why.rc). True when the item went somewhere (the timer, a ring,
 * the DLQ); false: no room anywhere, run it again now on this worker. w
 * NULL: no worker (the watchdog ending a late attempt, late.c). */
bool blq__retry(blq *q, blq__worker *w, blq__item *it, int rc);
/* An attempt failed with rc, timed out, or was cancelled: counts it, then
 * ends the item or retries it (blq__retry: the same return and w). Out
 * of line on purpose: keeping rc for a DLQ's why inside the worker's loop
 * cost every processed item 3 instructions (register choices in
 * blq__worker_main; callgrind, 1 worker, items that succeed). */
__attribute__((noinline)) bool blq__attempt_failed(blq *q, blq__worker *w, blq__item *it, int rc,
						   bool timed_out, bool cancelled);

/* timer.c */
int blq__timer_init(blq *q);
void blq__timer_destroy(blq *q);
/* Parks the item for `delay` from `now` (queue clock). BLQ__BLOCK waits
 * for room (BLQ_ECLOSED when the queue closes meanwhile); BLQ__TRY returns
 * BLQ_EFULL. BLQ_ETHREAD / BLQ_ENOMEM when the thread or the heap cannot
 * grow. On 0 the item counts in q->staged. */
int blq__timer_add(blq *q, const blq__item *it, uint64_t now, uint64_t delay,
		   enum blq__mode mode);
/* Takes a place in the timer's count unless timer_capacity is reached
 * (never above it, even for a moment). Any thread. */
bool blq__timer_reserve(blq__timer *t);
void blq__timer_kick(blq *q);  /* the timer and the watchdog look at the clock now (tests, close) */
/* The timer thread takes the cancelled items (handle.c) out of its set
 * and ends them (no-op when it never started). Any thread. */
void blq__timer_sweep_cancelled(blq *q);
/* A worker that retried with a delay, at `now` (its clock read for it):
 * when the timer's head is past due, moves the due items into the due
 * ring itself, if the timer's mutex is free (timer.c). Never waits. */
void blq__timer_assist(blq *q, uint64_t now);
void blq__timer_stop(blq *q);  /* stop and join the thread */
void blq__timer_sweep(blq *q, blq__cell *c); /* Soft/Hard close: abandon what is left */
size_t blq__timer_size(const blq *q); /* items it holds, inboxes included */

/* inbox.c: a worker's retries into the timer without its mutex. */
/* Parks a retry for `delay` (> 0) through w's inbox. False when the
 * locked path must decide: no timer thread yet, no inbox memory, the
 * inbox full, or the timer at timer_capacity. */
bool blq__inbox_add(blq *q, blq__worker *w, const blq__item *it, uint64_t now, uint64_t delay);
/* Items staged outside the rings: q->staged and the inboxes' share. An
 * over-count for a moment, never an under-count (inbox.c). */
uint64_t blq__staged(const blq *q);
/* n items that entered through `origin` (BLQ__TIMER_SHARED: through
 * blq__timer_add) left the timer: call after they are in a ring. */
void blq__inbox_settle(blq *q, uint32_t origin, uint64_t n);
void blq__inbox_free_all(blq *q);

/* worker.c */
bool blq__is_own_worker(const blq *q);
void *blq__worker_main(void *arg);

/* pool.c: thread starts, stops and state changes (callers hold pool_mu
 * unless noted). */
int blq__pool_start(blq *q, blq__worker *w);
void blq__pool_wake(blq *q, blq__worker *w);
void blq__pool_sleep(blq *q, blq__worker *w);
void blq__pool_stop(blq *q, blq__worker *w);
/* The command to stop and the wake-ups that make w read it, without
 * counting a stopped thread (the watchdog's detach; blq__pool_stop). */
void blq__pool_tell_stop(blq *q, blq__worker *w);
void blq__pool_join_all(blq *q); /* takes pool_mu itself */
void blq__pool_rescue(blq *q);   /* start one worker to drain; takes pool_mu */
void blq__pool_counts(const blq *q, unsigned *active, unsigned *asleep, unsigned *idle);

/* handback.c: a given-up worker's hand goes back to the queue. */
/* The items not yet placed by the thread that took them over. */
typedef struct blq__backlog {
	blq__item *it;
	unsigned n, cap;
} blq__backlog;
/* Caller's own CAS set BLQ__BUSY_GIVEN_UP on w's running attempt, which
 * has a limit: takes over w's unstarted items (as many as b has room for)
 * into b, counted in q->staged, and tells the worker (BLQ__HAND_GONE). */
void blq__hand_take(blq *q, blq__worker *w, blq__backlog *b);
/* Puts b's items back at the front of the work (the due ring, else the
 * rings), or abandons them when the queue is dropping or `drop` says so;
 * the ones with no room stay in b. True when b is empty. */
bool blq__backlog_flush(blq *q, blq__backlog *b, bool drop);
/* A worker whose limited attempt returned given up: waits for the
 * takeover to finish and keeps what it was left. */
void blq__hand_settle(blq__worker *w);

/* late.c: an attempt given up at its limit ends at its limit. */
/* The item of a late attempt, on its way. */
typedef struct blq__late {
	blq__item it;   /* its payload the application's copy when `copied` */
	bool copied;    /* blq_config.item_dup made the payload */
	bool cancelled; /* its handle was cancelled */
} blq__late;
/* The giver-up's half before it tells the worker (blq__hand_take), under
 * the same handshake: raises the task's token and, unless the callback
 * claimed the payload, decides whether the item can go on now; if so,
 * copies it into *late, counts it in q->staged and sets w->late, so the
 * worker, once its callback returns, only frees the original. `room`:
 * places left in the giver-up's backlog, where a retry that finds no
 * room waits (the whole hand must fit beside it). */
bool blq__late_take(blq *q, blq__worker *w, blq__late *late, unsigned room);
/* The rest, after blq__hand_take: the item's outcome or its retry, now,
 * on the giver-up's thread; a retry with no room waits in b. */
void blq__late_end(blq *q, blq__late *late, blq__backlog *b);

/* watchdog.c: attempts past their time limit. */
/* Publishes a running attempt's limit in *busy_until (a worker's) and
 * makes sure the watchdog looks at it in time (starting it the first
 * time). */
void blq__watchdog_arm(blq *q, _Atomic uint64_t *busy_until, uint64_t limit);
void blq__watchdog_kick(blq *q); /* look now (the caller's clock moved) */
void blq__watchdog_stop(blq *q); /* after pool_closed: no restart */
/* A close past its limit: gives up every running callback and detaches
 * its thread (no replacement). Takes pool_mu. */
void blq__give_up_running(blq *q);

/* rate.c: at most cfg.rate_limit starts a second, burst cfg.rate_burst. */
void blq__rate_init(blq *q);
/* A token for a start at `now`: true, with the new arrival time in *tat
 * (for blq__rate_refund); false when none is free yet. Any worker. */
bool blq__rate_token(blq *q, uint64_t now, uint64_t *tat);
/* The token taken as *tat found no item: back, unless another start took
 * one after it (then it is lost: the rate runs under the limit, never
 * over it). */
void blq__rate_refund(blq *q, uint64_t tat);
/* A limited worker whose take found no token: while items wait, sleeps
 * until the next token's time (or a close, a command, a kick wakes it)
 * and returns true (look again); false when no item waits (sleep on the
 * items instead). */
bool blq__rate_hold(blq *q, blq__worker *w);
/* The limiter held items back within the last heartbeat: the balancer
 * does not grow the pool for that backlog. */
bool blq__rate_holding(const blq *q, uint64_t now);

/* balancer.c */
int blq__balancer_start(blq *q, blq_error *err);
void blq__balancer_stop(blq *q);
void blq__calibrate(blq *q);           /* one heartbeat's work; takes pool_mu */
void blq__calibrate_try(blq *q);       /* the same, unless someone else is at it */
void blq__balance_on_close(blq *q);    /* asleep workers help drain */
/* Active workers whose idle clock runs (waiting on the empty queue): a
 * snapshot, for the tests that move a fake clock only once every worker
 * measures its wait. */
unsigned blq__workers_waiting(blq *q);

/* Counter bumps: single-writer cells (workers) avoid the locked RMW. */
static inline void blq__add_own(_Atomic uint64_t *c, uint64_t d)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + d,
			      memory_order_relaxed);
}

static inline void blq__count_own(_Atomic uint64_t *c)
{
	blq__add_own(c, 1);
}

static inline void blq__count_shared(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

#endif
