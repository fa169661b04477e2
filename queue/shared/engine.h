/*
 * The engine interface: what holds a queue's new items until they reach
 * the rings its workers take from, and the narrow way back into the core
 * that an engine may use. Not installed.
 *
 * Two engines implement it:
 * - the rings (queue/engine_rings.c): an item goes straight into one of
 *   the queue's rings (its `streams`), leaking or waiting when they are
 *   full;
 * - QoS (qos/): an item goes into a priority sub-queue, and the engine's
 *   own threads move it into the rings, which are then its egress.
 * Workers always take from the rings (and the timer's due ring), whichever
 * the engine: so an engine is the way in, and taking is not one of its
 * operations; only the leftovers of a force close are (take_left).
 * blq_new chooses the engine (blq__engine_for, queue/engine.c: the one
 * place of the core that names QoS) and asks it for the queue's shape.
 *
 * The way back: an engine sees the queue only through the blq__port it is
 * given at init and the functions declared at the end of this file, and
 * applies the core's full-queue policy through admission.h beside it.
 * These two are the only headers of the core an engine includes; the
 * build enforces it (each module compiles with its own include directories, and
 * a relative include that climbs out of a module fails the configure
 * step: CMakeLists.txt, docs/modules.md).
 */
#ifndef BLQ_QUEUE_ENGINE_H
#define BLQ_QUEUE_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <blq/error.h>
#include <blq/metrics.h>
#include <blq/queue.h>

#include "ec.h"
#include "item_ring.h"
#include "spin.h"

/* Limits the core and the engines share. */
#define BLQ__NAME_MAX 63
#define BLQ__CAPACITY_LIMIT (1ull << 30)

/* A producer's counter cell: opaque to engines, which pass it back to
 * blq__core_leak and blq__place (the leak is counted on it). */
typedef struct blq__cell blq__cell;

/* How an admission waits for room: a producer's blocking enqueue (gives up
 * on close), try-enqueue (never waits), or the timer thread delivering a
 * due item (waits through a graceful close, gives up only on a force). */
enum blq__mode { BLQ__BLOCK, BLQ__TRY, BLQ__TIMER };

/*
 * What an engine may see and touch of its queue, filled by the core before
 * the engine's init and constant afterwards.
 */
typedef struct blq__port {
	blq *q; /* only to pass to the blq__core_* functions below */
	const char *name;
	const blq_metrics_writer *metrics; /* or NULL */
	bool leaky;    /* a DLQ is set: full means leak, not wait */
	/* blq__scale_up_hint may grow the pool: the queue's flag, which
	 * blq_resize may raise while the engine runs. */
	const _Atomic bool *balanced;
	enum blq_leak_dir leak_direction;
	unsigned front_leak_attempts;
	/* Items accepted but held outside the rings. An engine that holds
	 * items counts each here before it becomes visible where it waits,
	 * while its producer is still in flight (relaxed is enough then: the
	 * producer's leaving publishes it), and uncounts it (seq_cst, through
	 * blq__handoff) only after pushing it into a ring. So a worker that
	 * sees the queue closed, no producer in flight and staged == 0 knows
	 * the rings hold all there will be. */
	_Atomic uint64_t *staged;
	/* Producers waiting for room on a full queue (blq_stats'
	 * producers_blocked): an engine counts a BLQ__BLOCK admission here
	 * from when it finds no room until it gets in or gives up. */
	_Atomic unsigned *blocked;
	/* At most this many in `blocked` (0: no cap); one more is refused
	 * (BLQ_EFULL) and counted in `turned_away`. */
	unsigned blocked_max;
	_Atomic uint64_t *turned_away;
	const _Atomic int *closed; /* raised (seq_cst) by every close */
	const _Atomic int *forced; /* non-zero once a Soft or Hard close drops the
				    * queue (raised after `closed`) */
	blq__ec *items; /* workers sleep here while the rings are empty */
	blq__ec *space; /* threads that wait for ring room; workers notify it
			 * when the rings have drained to half */
	blq__ec *idle;  /* blq_wait_idle's callers */
	blq__spin *spin; /* the queue's spin policy (spin.h) */
} blq__port;

/* What an engine tells the queue at creation. */
typedef struct blq__shape {
	size_t capacity;  /* everything the queue holds: blq_capacity, the fill
			   * rate's denominator, the timer's default bound */
	size_t ring_cap;  /* the rings' share of it */
	unsigned streams; /* how many rings */
	/* The timer may hand due items to the workers through a ring of its
	 * own (timer.c); false: due items are admitted like new ones (QoS:
	 * into their sub-queue, where the priority applies). */
	bool direct_due;
} blq__shape;

/*
 * An engine: a table of functions, each given the state its init made.
 * Every function is called by the core only; thread-safety as noted.
 */
typedef struct blq__engine {
	const char *name;
	/* The config's part that is the engine's (capacity and streams
	 * included). The error names the field. Any thread. */
	int (*check)(const blq_config *cfg, blq_error *err);
	/* Builds the state from a checked config; fills *shape. On failure
	 * (BLQ_ENOMEM) *state may be set: the core then calls free. */
	int (*init)(const blq_config *cfg, const blq__port *port, void **state,
		    blq__shape *shape);
	/* Starts the engine's threads, after the workers. NULL: none. */
	int (*start)(void *state, blq_error *err);
	/* Tags a new item at its enqueue (QoS: its priority percent), delayed
	 * or not. NULL: nothing to tag. Producer threads, concurrently. */
	void (*classify)(void *state, blq__item *it, uint64_t weight);
	/* Takes an item in: places it (*woken: the event count to wake, the
	 * rings' or the engine's own), leaks it to the DLQ (*woken NULL), or
	 * refuses it with BLQ_EFULL (BLQ__TRY) or BLQ_ECLOSED, the caller
	 * still holding it. Producers concurrently, and the timer thread with
	 * BLQ__TIMER (then it must not wait on a graceful close). */
	int (*admit)(void *state, blq__cell *c, blq__item *it, enum blq__mode mode,
		     blq__ec **woken);
	/* Takes in a batch (blq_enqueue_batch): *tmpl with each of
	 * payloads[0..n) in turn, in order, as admit would one by one, with
	 * one reservation where they fit at once. Returns how many it took
	 * (placed or leaked); *rc is 0, or why it stopped (BLQ_EFULL,
	 * BLQ_ECLOSED) with the rest still the caller's; *woken as admit's
	 * (set when any item was placed). Never BLQ__TIMER. NULL: the core
	 * admits the items one by one (classify included). */
	size_t (*admit_batch)(void *state, blq__cell *c, const blq__item *tmpl,
			      void *const *payloads, size_t n, enum blq__mode mode,
			      blq__ec **woken, int *rc);
	/* Wakes every thread sleeping on the engine's own event counts (a
	 * close, a state change). Any thread. NULL: nothing to wake. */
	void (*wake_all)(void *state);
	/* Ends and joins the engine's threads; called once, by the closer,
	 * after the producers left. NULL: none. */
	void (*stop)(void *state);
	/* After stop: one item the engine still holds (a force close left
	 * it), uncounted from staged; false when none is left. Closer only. */
	bool (*take_left)(void *state, blq__item *out);
	/* Appends the engine's part of blq_status_json (",\"name\":{...}", or
	 * ""), returning the length it needs like snprintf. NULL: nothing. */
	int (*status_json)(const void *state, char *buf, size_t len);
	/* Frees the state (also a half-built one). NULL state: nothing. */
	void (*free)(void *state);
} blq__engine;

extern const blq__engine blq__rings_engine; /* queue/engine_rings.c */
extern const blq__engine blq__qos_engine;   /* qos/qos.c */

/* --- The way back into the core. --- */

/* The state of q's engine if it is `e`, else NULL (for the engine's own
 * public accessors, e.g. blq_qos_subq_info). Any thread. */
void *blq__core_engine_state(const blq *q, const blq__engine *e);

/* Pushes the item into one of the rings, trying each once from *cursor
 * on (advanced past the ring used). False when all are full. Lock-free. */
bool blq__core_push(blq *q, const blq__item *it, unsigned *cursor);

/* Free slots in the rings, a snapshot (workers free more). */
uint64_t blq__core_room(const blq *q);

/* The rings' items (a snapshot) and capacity. */
void blq__core_rings_usage(const blq *q, size_t *size, size_t *capacity);

/* Hands the item to the DLQ as a leak in direction `dir`, counted on c. */
void blq__core_leak(blq *q, blq__cell *c, const blq__item *it, enum blq_leak_dir dir);

/* Puts the item into a ring the way the rings engine does (leaking on a
 * leaky queue, waiting for room as `mode` says): 0 with *pushed true (in
 * a ring) or false (leaked); BLQ_EFULL or BLQ_ECLOSED: not placed. An
 * engine uses it with BLQ__TIMER for a due item it cannot hold. */
int blq__place(blq *q, blq__cell *c, blq__item *it, enum blq__mode mode, bool *pushed);

/* When a blocking producer's wait for room in q must end (a timed
 * enqueue's limit, absolute CLOCK_MONOTONIC ns), or 0: none. The calling
 * thread's, for its current call (enqueue.c). Cheap; slow path only. */
uint64_t blq__core_wait_until(const blq *q);

/* The ring is full or the engine's share is: grow the pool now if the
 * queue is balanced. Cheap; may do nothing. Any thread. */
void blq__scale_up_hint(blq *q);

/* Wakes every sleeper of the queue (its event counts and the engine's). */
void blq__wake_all(blq *q);

/*
 * The hand-over, the one sequence every mover ends with, after it pushed
 * items where the next stage takes them (a producer, the timer thread, a
 * worker serving the timer, a QoS egress thread): uncount them from the
 * count that kept them visible (`*count += delta`: a producer's `left`
 * +1, or staged -n, as two's complement), then wake one sleeper of `ec` if
 * any (NULL: nobody to wake), and every sleeper once the queue is
 * closing, so that draining workers and the closer look again.
 * The seq_cst read-modify-write comes after the pushes and is the
 * StoreLoad barrier the event count needs before its waiters are read
 * (ec.h, blq__ec_waiters_after_rmw): a worker that reads the count after
 * it finds the items, and a sleeper that announced itself before is
 * woken.
 */
static inline void blq__handoff(const blq__port *p, _Atomic uint64_t *count, uint64_t delta,
				blq__ec *ec)
{
	atomic_fetch_add_explicit(count, delta, memory_order_seq_cst);
	if (ec != NULL && blq__ec_waiters_after_rmw(ec) != 0 && blq__ec_claim(ec))
		blq__ec_wake_slow(ec, 1);
	if (atomic_load_explicit(p->closed, memory_order_seq_cst))
		blq__wake_all(p->q);
}

#endif
