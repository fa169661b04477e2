/**
 * \file
 * blq queue: a bounded, leaky worker queue.
 *
 * Producers hand payloads to the queue; a pool of worker threads runs the
 * configured worker callback on each. When the queue is full it blocks the
 * producer (back-pressure), or, when a DLQ is configured, leaks the overflow
 * into the DLQ instead of waiting for room: the producer then waits only as
 * long as the DLQ's enqueue does (a DLQ that is itself a full blocking
 * queue makes it wait; see blq_config.dlq and blq_stats.dlq_waiting).
 *
 * Ownership: a payload belongs to the queue from the moment an enqueue call
 * returns 0; on any error the caller still owns it. From then on it ends in
 * exactly one outcome (blq_stats):
 * - processed: the worker returned 0; the worker owns the payload.
 * - failed: the worker failed (or ran past its timeout) on the last
 *   allowed attempt and it was not sent to the DLQ; freed with item_free.
 *   Earlier failures are retries, not outcomes.
 * - leaked: handed to the DLQ (overflow, fail_to_dlq, deadline_to_dlq, a
 *   Soft or Hard close); the DLQ owns it.
 * - expired: its deadline passed before a worker took it; freed.
 * - lost: a Soft or Hard close without a DLQ, or the DLQ refused it; freed.
 * - cancelled: ended through its handle (blq_cancel); freed.
 *
 * After close: in == processed + failed + leaked + expired + lost +
 * cancelled ("freed" means passed to blq_config.item_free, when set).
 *
 * Thread-safety: unless a function says otherwise, every function here may
 * be called from any thread, concurrently, on the same queue, the queue's
 * own workers included, from blq_new's return until blq_free is called;
 * blq_free must be the last call on a queue. The exceptions are marked:
 * blq_free, the calls that would wait for the calling worker itself
 * (blq_wait_idle, blq_enqueue_wait, blq_enqueue_wait_result: BLQ_EDEADLK),
 * the closes from a worker (they do not wait), blq_dlq_sync, the blq_task_
 * functions (only during the worker call) and a handle's (until
 * blq_handle_release). A completion hook (blq_done) may call only a few of
 * them.
 */
#ifndef BLQ_QUEUE_H
#define BLQ_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* ssize_t */

#include <blq/clock.h>
#include <blq/enqueuer.h>
#include <blq/error.h>
#include <blq/export.h>
#include <blq/log.h>
#include <blq/metrics.h>
#include <blq/retry.h>
#include <blq/qos.h>
#include <blq/schedule.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The queue. Opaque: it owns threads. Made by blq_new, freed with
 * blq_free. */
typedef struct blq blq;

/** The per-item handle a worker receives (blq_task_ functions). Owned by
 * the queue; valid only during the worker call. */
typedef struct blq_task blq_task;

/**
 * The worker callback (blq_config.worker). Runs on the queue's worker
 * threads, several at once, so it must be thread-safe for its ctx.
 * \param ctx blq_config.worker_ctx.
 * \param payload the item's payload, as enqueued.
 * \param task this attempt's handle: its attempt number, cancellation,
 *        time limit (blq_task_cancelled, blq_task_claim, ...); valid only
 *        during the call.
 * \return 0 on success: the worker owns \p payload (with a time limit,
 *         unless the attempt was given up first: see timeout_ns); anything
 *         else on failure: the queue keeps \p payload (to retry it, free it
 *         with item_free or hand it to the DLQ), and the worker must not
 *         touch it after returning.
 */
typedef int (*blq_worker_fn)(void *ctx, void *payload, blq_task *task);

/** Where an item ended (blq_done, blq_enqueue_wait, blq_handle_outcome);
 * 0 means "none yet". */
enum blq_outcome {
	BLQ_OUTCOME_PROCESSED = 1, /**< the worker returned 0 */
	BLQ_OUTCOME_FAILED,        /**< the last attempt failed; freed (or to the DLQ:
				    * then LEAKED) */
	BLQ_OUTCOME_TIMED_OUT,     /**< FAILED, and the last attempt ran past its timeout */
	BLQ_OUTCOME_LEAKED,        /**< handed to the DLQ */
	BLQ_OUTCOME_EXPIRED,       /**< its deadline passed before a worker took it */
	BLQ_OUTCOME_LOST,          /**< dropped at a Soft or Hard close, or refused by the DLQ */
	BLQ_OUTCOME_CANCELLED,     /**< cancelled through its handle (blq_cancel); freed */
};

/**
 * An outcome's name.
 * \param o the outcome.
 * \return a static string: "processed", "failed", "timed out", "leaked",
 *         "expired", "lost", "cancelled"; "unknown" for any other value.
 *         Never NULL; not to be freed.
 */
BLQ_API const char *blq_outcome_name(enum blq_outcome o);

/**
 * A completion hook: fn(ctx, payload, outcome) runs exactly once per item,
 * when the item reaches its outcome (never for a retry, never for an item
 * whose enqueue returned an error).
 *
 * Which thread: the one that ended the item. A worker (processed, failed,
 * timed out, expired, leaked after a failure or past its deadline), the
 * watchdog (an attempt that timed out at its limit while its callback ran
 * on: timeout_ns), a
 * producer inside its enqueue call (leaked on overflow: that call has not
 * returned yet), the timer or a QoS egress thread (leaked), or the thread
 * closing the queue (leaked or lost at a Soft or Hard close). The counters in
 * blq_stats already include the outcome when fn runs.
 *
 * What fn may do: record the outcome, signal another thread, call
 * blq_try_enqueue(_job) on any queue, blq_stats. It must be short and must
 * not block: never blq_close, blq_free, blq_wait_idle or blq_enqueue_wait
 * on the item's queue, nor a blq_enqueue that can wait for room.
 *
 * payload is an identity, not a loan: by then the worker owns it
 * (processed), the DLQ does (leaked), or it was freed with item_free (or
 * will be, when a late callback returns: timeout_ns); do not dereference
 * it.
 *
 * Cost: an item without a hook pays one predictable branch at its outcome.
 */
typedef struct blq_done {
	/** The hook: gets ctx, the item's payload (an identity) and its
	 * outcome. */
	void (*fn)(void *ctx, void *payload, enum blq_outcome o);
	/** Passed to fn; borrowed (must stay valid until fn ran). */
	void *ctx;
} blq_done;

/**
 * Queue configuration. `blq_config cfg = {0}` plus a worker, a capacity
 * and workers (or workers_max) is a valid queue; zero always means "the
 * default". The queue copies the struct (and the name, the QoS config and
 * the schedule) at creation; later changes have no effect. Pointers it
 * keeps (metrics, the DLQ's self, the contexts) are borrowed: they must
 * outlive the queue.
 */
typedef struct blq_config {
	/** Name used in metrics, logs and status; copied. Default "queue",
	 * at most 63 bytes. */
	const char *name;
	/** Items the queue holds, exactly (not rounded): queued in its
	 * rings and taken ahead by workers, not yet started. Delays and
	 * retries waiting for their time count in timer_capacity instead;
	 * once due they wait in the timer's due ring (up to 1024, which
	 * workers take from first) outside this count, so that a full queue
	 * of new items neither leaks nor blocks a due retry; so do the
	 * unstarted items the watchdog takes back from a worker it gave up
	 * (up to 16 each), which go back to the front. Required, >= 1;
	 * with qos, 0 or the sum of the sub-queues and the egress. */
	size_t capacity;
	/** The shared rings: this many, like the original's pfifo. Default
	 * 1; 1..capacity. Each holds capacity/streams items (the first
	 * capacity % streams hold one more). Since 0.4.1 each producer thread
	 * has a lane of its own (a ring only it pushes to; up to 16 per
	 * queue, blq_enqueue says more), so the shared rings carry what the
	 * lanes do not: the items of producers beyond the 16th, a full lane's
	 * overflow, retries without a delay, a full due ring's items. The
	 * capacity stays one exact bound over lanes, shared rings and the
	 * items workers took ahead (since 0.6.1; before, up to 16 per
	 * worker more). With streams > 1 an overflowing item may start before
	 * older items of its producer. With qos: 0 (set qos->egress.streams
	 * instead). */
	unsigned streams;
	/** Priority sub-queues (qos.h); copied at creation. Optional. */
	const blq_qos_config *qos;

	/** Worker callback. Required. */
	blq_worker_fn worker;
	/** Passed to every worker call; borrowed. */
	void *worker_ctx;
	/** Frees a payload the queue drops (failed, expired, lost, cancelled). Optional:
	 * NULL means the queue drops payloads without freeing them. */
	void (*item_free)(void *payload);
	/** Copies a payload, for an attempt given up at its time limit
	 * (timeout_ns) whose item goes on while its callback still runs: a
	 * retry, or the DLQ (fail_to_dlq, a dropping close of a leaky
	 * queue). The item goes on at the limit with the copy, and the
	 * original is freed with item_free when the callback returns.
	 * Called on the watchdog's thread while that callback may still run:
	 * it must only read the payload, and the worker must not write a
	 * payload it does not own (or only in ways the copy tolerates).
	 * Returns the copy, or NULL (no memory): the item then waits for the
	 * callback, as without item_dup. Optional; requires item_free. */
	void *(*item_dup)(const void *payload);

	/** Fixed pool size. Setting it means workers_min = workers_max =
	 * workers; do not set those too. This, workers_min, workers_max,
	 * wakeup_factor and sleep_factor can be changed on a running queue
	 * with blq_resize. */
	unsigned workers;
	/** Balanced pool bounds: with workers_min < workers_max (or a
	 * schedule) the pool grows and shrinks with the load between them.
	 * workers_max: 1..1024; workers_min: 0..workers_max (0: the pool may
	 * go down to no thread at all when idle). */
	unsigned workers_min;
	/** See workers_min. */
	unsigned workers_max;
	/** Time ranges that override workers_min/max and the factors; copied
	 * at creation (the caller may free it after blq_new). Optional. */
	const blq_schedule *schedule;
	/** Fill rate at which an asleep worker wakes. Default 0.75; (0, 1]. */
	double wakeup_factor;
	/** Fill rate at which active workers go to sleep. Default 0.5;
	 * [0, wakeup_factor]. */
	double sleep_factor;
	/** At most this many workers go to sleep per heartbeat; 0 = half. */
	unsigned sleep_threshold;
	/** An asleep worker ends its thread after this. Default 5 s. */
	uint64_t sleep_interval_ns;
	/** Balancer period. Default 1 s. */
	uint64_t heartbeat_interval_ns;
	/** Producers inside enqueue at once that make an enqueuer run a
	 * calibration on its own thread right away (sampled every 64th item
	 * per producer cell). Default 1000. */
	unsigned force_calibration_limit;

	/** Retries: a failed item (the worker returned non-zero, or ran past
	 * its timeout) is tried again up to max_retries more times (0..10^6,
	 * default 0); then it fails (or goes to the DLQ with fail_to_dlq).
	 * Before retry n it waits in the timer for the backoff's delay (see
	 * blq/retry.h): no worker waits for it. Without retry_interval_ns
	 * (and no custom backoff) a retry goes straight back to the queue. */
	unsigned max_retries;
	/** Base delay of the backoff; 0..1 year. */
	uint64_t retry_interval_ns;
	/** Cap on the backoff's delay before jitter; 0 = none (1 year). */
	uint64_t retry_max_interval_ns;
	/** Default BLQ_BACKOFF_NONE: retry_interval_ns every time. */
	enum blq_backoff backoff;
	/** Required with BLQ_BACKOFF_CUSTOM, refused otherwise. */
	blq_backoff_fn backoff_fn;
	/** Passed to backoff_fn; borrowed. */
	void *backoff_ctx;
	/** Default BLQ_JITTER_NONE. */
	enum blq_jitter jitter;
	/** BLQ_JITTER_DECORRELATED's lower bound: defaults to
	 * retry_interval_ns; refused with any other jitter. */
	uint64_t jitter_min_ns;
	/** BLQ_JITTER_DECORRELATED's upper bound: required (>= the lower
	 * bound); refused with any other jitter. */
	uint64_t jitter_max_ns;
	/** Required with BLQ_JITTER_CUSTOM, refused otherwise. */
	blq_jitter_fn jitter_fn;
	/** Passed to jitter_fn; borrowed. */
	void *jitter_ctx;
	/** Items the timer holds at once (delayed items and retries waiting
	 * for their backoff). Default: capacity. Its memory grows on demand
	 * up to this. A delayed item finding it full leaks to the DLQ on a
	 * leaky queue (the new one, counted leaked_rear, whatever
	 * leak_direction says), from a blocking enqueue too; without a DLQ a
	 * delayed enqueue waits for room and a delayed try-enqueue gets
	 * BLQ_EFULL. A retry finding it full goes to the DLQ on a leaky
	 * queue, else skips its backoff and goes straight back to the
	 * queue. */
	size_t timer_capacity;

	/** Dead-letter queue. Setting dlq.enqueue makes the queue leaky: a
	 * full queue, or a full timer (see timer_capacity), never makes a
	 * producer wait for its room: the overflow leaks to the DLQ. The leak
	 * calls dlq.enqueue on the leaking thread (the producer, for
	 * overflow), so the producer waits as long as that call does: a DLQ
	 * that is a full non-leaky queue (blq_as_enqueuer) keeps it until it
	 * has room, a dump whose batch is full keeps it until its writer
	 * finished the previous batch; a leaky queue, blq_discard or a failing
	 * dump never wait. blq_stats.dlq_waiting counts the threads inside
	 * that call. Copied; dlq.self is borrowed (must outlive the queue,
	 * blq_free included). */
	blq_enqueuer dlq;
	/** Send failed items to the DLQ instead of freeing them. Needs dlq. */
	bool fail_to_dlq;
	/** Send items past their deadline to the DLQ. Needs dlq. */
	bool deadline_to_dlq;
	/** Which item leaks when full: the new one (rear, default) or the
	 * oldest (front). */
	enum blq_leak_dir leak_direction;
	/** Front leak: how many oldest items may be moved out to make room for
	 * one new item before the new one leaks instead. Default 5. */
	unsigned front_leak_attempts;
	/** At most this many producers wait for room at once (ants'
	 * MaxBlockingTasks): one more blocking enqueue that finds the queue
	 * full returns BLQ_EFULL at once, counted in
	 * blq_stats.producers_turned_away, instead of waiting. Counts what
	 * producers_blocked counts: blocking and timed enqueues waiting for
	 * room in the rings or a QoS sub-queue (not a delayed item waiting
	 * for the timer's room). 0 = no cap. Not with a dlq: a leaky queue
	 * never makes a producer wait. */
	unsigned producers_blocked_max;

	/** Rate limit: at most this many item starts a second (a start is a
	 * worker taking an item, a retry's attempt included), over the whole
	 * queue (QoS sub-queues share it). 0 = no limit (the default; it
	 * then costs one predictable branch per take); otherwise
	 * 0.001..1e9. Workers take a token before they take an item, so an
	 * item held back stays queued (it counts in blq_size, and a full
	 * queue blocks or leaks as usual); a worker with no token sleeps until
	 * the next one's time on the queue's clock (no spinning). The
	 * balancer does not grow the pool for a backlog the limit holds. A
	 * graceful close drains at the limit; a Soft or Hard close ends the
	 * held items like any queued item. blq_stats' rate_delayed and
	 * rate_limited_ns show the limit at work. */
	double rate_limit;
	/** Starts allowed at once above the rate (GCRA burst tolerance): up
	 * to this many may start together after a quiet spell. Default 1;
	 * 1..1000000; needs rate_limit. */
	unsigned rate_burst;

	/** Minimum time between enqueue and start: items wait in the timer,
	 * never in a worker, never in front of items that are due. 0..1 year;
	 * 0 = none. */
	uint64_t delay_interval_ns;
	/** An item a worker takes later than this after its enqueue is not
	 * processed: it expires (or goes to the DLQ with deadline_to_dlq).
	 * 0 = no deadline; otherwise greater than delay_interval_ns, 1 year
	 * at most. */
	uint64_t deadline_interval_ns;
	/** Default run-time limit of one attempt; 0 = none (such items pay
	 * nothing for the feature). At the limit the queue gives the attempt
	 * up: blq_task_cancelled reads true, and a watchdog thread (started
	 * by the first attempt with a limit) detaches the worker's thread and
	 * starts a replacement, so the pool keeps its size while the late
	 * callback runs on (at most as many such threads as the pool's
	 * ceiling, workers or workers_max; past that bound the worker is
	 * kept and the pool serves with one less until it returns). The
	 * attempt then counts as failed with reason timeout whatever the
	 * worker returns (retries and fail_to_dlq apply) and the queue keeps
	 * the payload: once the limit passed, a worker must not free, keep or
	 * hand on the payload unless blq_task_claim returned true, and must
	 * not touch it after blq_task_cancelled read true. A worker that
	 * returns 0 before the watchdog acted (or after claiming) processed
	 * the item. 1 year at most.
	 *
	 * The item goes on at the limit, not at the callback's return: an
	 * item that ends (no retry left and no fail_to_dlq, cancelled, or
	 * lost at a dropping close) reaches its outcome then, so the
	 * counters, blq_enqueue_wait, the hooks and the handle learn it at
	 * the limit, and item_free runs on the payload at the return. A retry
	 * or a DLQ hand-over needs the payload, which the late callback may
	 * still read: it happens at the limit on a copy (item_dup), or
	 * without item_dup at the return. The hooks of an item ended at its
	 * limit run on the watchdog's thread. */
	uint64_t timeout_ns;
	/** Record each item's enqueue time even when nothing needs it, so
	 * blq_task_enqueued_ns works (costs one clock read per enqueue). */
	bool stamp_enqueue_time;

	/** Time source; default CLOCK_MONOTONIC. */
	blq_clock clock;
	/** Metrics writer, optional; the struct it points to must outlive the
	 * queue. */
	const blq_metrics_writer *metrics;
	/** Logger; default off. */
	blq_logger logger;
	/** Called for every item at its outcome, after the job's own hook
	 * (blq_job.done), with the rules of blq_done. Optional; a ctx without
	 * fn is refused. */
	blq_done on_done;
} blq_config;

/** A job: a payload plus per-job settings for blq_enqueue_job. Each
 * interval overrides the config's when non-zero and is at most 1 year. The
 * struct itself is only read during the enqueue call. */
typedef struct blq_job {
	void *payload; /**< the payload; the queue owns it once enqueued */
	/** Overrides delay_interval_ns. */
	uint64_t delay_ns;
	/** Overrides deadline_interval_ns (counted from the enqueue). */
	uint64_t deadline_ns;
	/** Overrides timeout_ns. */
	uint64_t timeout_ns;
	/** Priority weight for QoS queues: what the evaluator gets (the
	 * weighted one maps it to a percent); ignored without QoS. */
	uint64_t weight;
	/** Completion hook, called once with the item's outcome (see
	 * blq_done). Borrowed: it must stay valid until fn runs; one hook may
	 * serve many jobs. NULL: none (the job pays nothing). A hook without
	 * fn is refused with BLQ_EINVAL. */
	const blq_done *done;
} blq_job;

/** Counters since creation, and gauges. Outcomes add up (see the top of
 * this file). A plain struct tag (no typedef) so the function blq_stats
 * keeps its name: `struct blq_stats st; blq_stats(q, &st);` */
struct blq_stats {
	/** Items enqueued: counted when the enqueue call begins (before a
	 * worker can take one, so no outcome ever runs ahead of it), less
	 * those the call gave back when it returned. So a producer still
	 * blocked in blq_enqueue on a full queue counts here until it gets
	 * in or gives up, and a batch's items count from the call's start;
	 * once no enqueue is in progress it is the items of the enqueues
	 * that returned 0. (The metrics writer's put event, Prometheus'
	 * queue_in_total, counts when the call ends with the item taken.) */
	uint64_t in;
	uint64_t processed; /**< outcome: the worker returned 0 */
	uint64_t failed;    /**< outcome: the last attempt failed (timed out included) */
	uint64_t leaked;    /**< outcome: to the DLQ; the sum of the leaked_* below */
	uint64_t leaked_rear;     /**< the new item, on overflow (or a full timer) */
	uint64_t leaked_front;    /**< the oldest item, to make room */
	uint64_t leaked_failed;   /**< fail_to_dlq */
	uint64_t leaked_deadline; /**< deadline_to_dlq */
	uint64_t leaked_closed;   /**< remaining at a Soft or Hard close */
	uint64_t expired;   /**< outcome: past its deadline before a worker took it */
	uint64_t lost;      /**< outcome: dropped (no DLQ at a close, or refused by it) */
	uint64_t cancelled; /**< blq_cancel: freed, never run (again) */
	uint64_t retried;   /**< a retry is not an outcome */
	uint64_t timed_out; /**< attempts that ran past their timeout (each then
			     * retried, failed or leaked) */
	uint64_t delayed;   /**< items (delays and retries) waiting in the timer */
	size_t size;             /**< gauge: items waiting, as blq_size */
	size_t capacity;         /**< the queue's capacity, as blq_capacity */
	unsigned workers_active; /**< gauge: worker threads taking items */
	unsigned workers_asleep; /**< gauge: worker threads put to sleep by the balancer */
	unsigned workers_idle;   /**< gauge: slots without a thread */
	uint64_t workers_woken;  /**< balancer, since creation: asleep -> active */
	uint64_t workers_slept;  /**< balancer, since creation: active -> asleep */
	uint64_t threads_started; /**< worker threads started since creation */
	uint64_t threads_stopped; /**< asleep past sleep_interval, or above max */
	/** Full at the balancer's last look, or producers waiting for room
	 * now (fixed pools too); clears once they got in (the drain). */
	bool throttled;
	bool paused; /**< between blq_pause and blq_resume (or a close) */
	/** The balancer's bounds at its last look (or the last blq_resize):
	 * the base bounds (the config's, or blq_resize's), or those of the
	 * schedule range in force. */
	unsigned workers_min;
	unsigned workers_max;    /**< see workers_min */
	double wakeup_factor;    /**< see workers_min */
	double sleep_factor;     /**< see workers_min */
	int schedule_range; /**< the range in force, by its index in the order added; -1: the config's */
	/** Gauges of the moment (seed 000): workers inside their callback;
	 * those of them past the attempt's time limit (timeout_ns) that have
	 * not returned yet; producers blocked in blq_enqueue(_job) waiting
	 * for room on a full queue (or a full QoS sub-queue). */
	unsigned workers_busy;
	unsigned workers_overrunning; /**< see workers_busy */
	unsigned producers_blocked;   /**< see workers_busy */
	/** Gauge: threads inside the DLQ's enqueue call now, leaking an item
	 * (producers on overflow, workers for fail_to_dlq or deadline_to_dlq,
	 * the timer, a closer). A DLQ that is a full non-leaky queue
	 * (blq_as_enqueuer) keeps them there until it has room: this is how
	 * many are waiting on it; a dump keeps them while its batch is full
	 * and its writer still writes the previous one. A DLQ that never
	 * blocks (a leaky queue, a discard) shows it at 0 but for the moment
	 * of the call. Not in producers_blocked, which counts waits for this
	 * queue's room. */
	unsigned dlq_waiting;
	/** Threads the queue gave up on inside a callback (at the attempt's
	 * time limit, or at a close's limit) that have not returned yet: a
	 * replacement serves in their place. Each holds its item, which
	 * reaches its outcome when the callback returns (until then it is in
	 * none of the counters above: the invariant holds once this is 0). */
	unsigned workers_stuck;
	/** Blocking enqueues refused with BLQ_EFULL because
	 * producers_blocked_max producers were waiting already (since
	 * creation). */
	uint64_t producers_turned_away;
	/** Rate limit (blq_config.rate_limit): starts that waited for a
	 * token, and the total time workers spent waiting for tokens, in
	 * nanoseconds on the queue's clock (since creation; 0 without a
	 * limit). */
	uint64_t rate_delayed;
	uint64_t rate_limited_ns; /**< see rate_delayed */
};

/**
 * Validate a configuration, copy it and start the workers.
 * \param cfg the configuration; only read during the call (blq_config
 *        says what the queue copies and what it borrows).
 * \param[out] err optional; receives the code and a message naming the
 *        offending field on failure (set to BLQ_OK and "" on success).
 * \return the queue with workers_min (or workers) threads started, or NULL
 *         with BLQ_EINVAL (bad field), BLQ_ENOMEM or BLQ_ETHREAD in \p err;
 *         never a half-built queue. The caller owns the queue: free it with
 *         blq_free (which closes it first if no close did).
 */
BLQ_API blq *blq_new(const blq_config *cfg, blq_error *err);

/**
 * Hand a payload to the queue. Blocks while the queue is full unless it is
 * leaky (has a DLQ), in which case the overflow goes to the DLQ and the
 * call returns once the DLQ took it: at once with a DLQ that never waits,
 * but a DLQ that waits (a full non-leaky queue, a dump's full batch)
 * holds this call meanwhile (blq_stats.dlq_waiting; blq_config.dlq).
 * With a delay_interval_ns the item waits in the
 * timer, and a full timer is the same: this call waits for room there
 * without a DLQ, and leaks the item (rear) with one
 * (blq_config.timer_capacity).
 * \param q the queue.
 * \param payload the payload; taken on 0, left to the caller on any error.
 * \retval 0 the queue owns \p payload (it may already have leaked to the
 *         DLQ; see blq_stats).
 * \retval BLQ_ECLOSED the queue is closing or closed (also when it closes
 *         while this call waits for room).
 * \retval BLQ_EINVAL \p q is NULL.
 * \retval BLQ_ETHREAD with a delay: the timer thread cannot start.
 * \retval BLQ_ENOMEM with a delay: the timer cannot grow.
 * \threadsafety Any number of threads at once; also from workers (on a
 * full queue without a DLQ a worker waits like any producer, for the other
 * workers to make room).
 *
 * Order: each producer thread's items start in the order it enqueued
 * them (with streams 1, the default; a worker never runs a producer's
 * item before an older one of the same producer); there is no order
 * between producers. Each thread's first enqueue into a queue gives it a
 * lane, a ring only it pushes to (no atomic read-modify-write on the
 * push), which it keeps until it exits; beyond 16 producer threads, the
 * others share the queue's rings. A front leak drops the oldest item of
 * the leaking thread's own lane, or, when its lane is empty, the first
 * found from the other lanes and the shared rings.
 */
BLQ_API int blq_enqueue(blq *q, void *payload);

/**
 * Like blq_enqueue, but never blocks.
 * \param q the queue.
 * \param payload the payload; taken on 0, left to the caller on any error.
 * \retval 0 the queue owns \p payload.
 * \retval BLQ_EFULL no room and no DLQ (with a delay: a full timer and no
 *         DLQ; with a DLQ a full timer leaks the item instead).
 * \retval BLQ_ECLOSED the queue is closing or closed.
 * \retval BLQ_EINVAL \p q is NULL.
 * \retval BLQ_ETHREAD with a delay: the timer thread cannot start.
 * \retval BLQ_ENOMEM with a delay: the timer cannot grow.
 */
BLQ_API int blq_try_enqueue(blq *q, void *payload);

/**
 * Like blq_enqueue, but waits for room at most \p timeout_ns (gammazero's
 * SubmitBlock with a context, pond's TrySubmit with a limit): a producer
 * that must not stall for good on a full queue, nor give up at once.
 * Only the wait for room is limited; an enqueue that finds room is
 * blq_enqueue's. A leaky queue never waits (it leaks, as blq_enqueue
 * does). A delayed item (delay_interval_ns) waits for room in the timer
 * under the same limit.
 * \param q the queue.
 * \param payload the payload; taken on 0, left to the caller on any error.
 * \param timeout_ns how long to wait for room, from the call;
 *        0: do not wait (BLQ_ETIMEDOUT at once when full); UINT64_MAX: no
 *        limit (blq_enqueue).
 * \retval 0 the queue owns \p payload.
 * \retval BLQ_ETIMEDOUT the queue stayed full for \p timeout_ns; the
 *         caller still owns \p payload (counted in no outcome).
 * \retval others as blq_enqueue (BLQ_ECLOSED, BLQ_EINVAL, ...).
 * \threadsafety As blq_enqueue. The limit is the call's own: an enqueue
 * into another queue made during the call (a leak into a DLQ that is a
 * queue) waits by its own rules.
 */
BLQ_API int blq_enqueue_timeout(blq *q, void *payload, uint64_t timeout_ns);

/**
 * Hand n payloads to the queue in one call, in order.
 *
 * For producers that receive items in bursts (a socket read, a file
 * block): the queue counts the call in and out once, reserves ring slots
 * for as many as fit with one atomic operation per ring, reads the clock
 * at most once and makes one wake-up check, instead of once per item.
 * Items take the queue's defaults (delay, deadline, timeout), like
 * blq_enqueue's, and enter in the array's order (with streams > 1 they may
 * spread over several rings, whose items run in no set order between
 * them, as with single enqueues). On a queue with QoS or with a
 * delay_interval_ns the items are admitted one by one inside the call
 * (the same results as n blq_enqueue calls, without the saving).
 * blq_stats' `in` counts the batch's items from the call's start; those
 * it gives back leave it when it returns. Like write(2), it reports how
 * far it got; call again with the rest to learn why a partial batch
 * stopped.
 * \param q the queue.
 * \param payloads n payloads; the array itself is only read during the
 *        call.
 * \param n the number of payloads.
 * \return how many payloads the queue took (the first ones): n, or fewer
 *         when the queue closed while the call waited for room; the queue
 *         owns payloads[0..r) and the caller still owns payloads[r..n). A
 *         leaky queue takes every payload, leaking the overflow to its DLQ
 *         as n blq_enqueue calls would (by its leak_direction; a delayed
 *         item meeting a full timer leaks at the rear, as blq_enqueue's
 *         does). 0 when n is 0. A negative error when it took none:
 *         BLQ_ECLOSED (closing or closed), BLQ_EINVAL (q NULL, payloads
 *         NULL with n > 0, n > SSIZE_MAX), and with a delay BLQ_ETHREAD
 *         (the timer thread cannot start) or BLQ_ENOMEM (the timer cannot
 *         grow).
 * \threadsafety Any number of threads at once, mixed with every other
 * enqueue call.
 */
BLQ_API ssize_t blq_enqueue_batch(blq *q, void *const *payloads, size_t n);

/**
 * blq_enqueue_batch that never blocks: on a full queue without a DLQ it
 * stops at the first payload without room.
 * \param q the queue.
 * \param payloads n payloads; the array itself is only read during the
 *        call.
 * \param n the number of payloads.
 * \return how many payloads the queue took (the first ones; the caller
 *         still owns the rest), or, when it took none, BLQ_EFULL,
 *         BLQ_ECLOSED, BLQ_EINVAL, BLQ_ETHREAD or BLQ_ENOMEM (as
 *         blq_enqueue_batch). 0 when n is 0.
 */
BLQ_API ssize_t blq_try_enqueue_batch(blq *q, void *const *payloads, size_t n);

/**
 * blq_enqueue_batch whose waits for room end after \p timeout_ns in all
 * (one limit for the call, not one per item).
 * \param q the queue.
 * \param payloads n payloads; the array itself is only read during the
 *        call.
 * \param n the number of payloads.
 * \param timeout_ns as for blq_enqueue_timeout.
 * \return how many payloads the queue took (the first ones: the caller
 *         still owns the rest), fewer than n when the limit passed; or,
 *         when it took none, BLQ_ETIMEDOUT, or the errors of
 *         blq_enqueue_batch. 0 when n is 0.
 * \threadsafety As blq_enqueue_batch.
 */
BLQ_API ssize_t blq_enqueue_batch_timeout(blq *q, void *const *payloads, size_t n,
					  uint64_t timeout_ns);

/**
 * blq_enqueue with per-job settings (delay, deadline, timeout, QoS weight,
 * completion hook). A delayed item waits in the queue's timer (started on
 * the first delayed item) and counts in blq_size meanwhile.
 * \param q the queue.
 * \param job the job; the struct is only read during the call. On 0 the
 *        queue owns job->payload, and job->done is borrowed until it ran.
 * \retval 0 the queue owns job->payload.
 * \retval BLQ_ECLOSED as blq_enqueue.
 * \retval BLQ_EINVAL \p q or \p job NULL, an interval above 1 year, a
 *         deadline not after the delay, or job->done without fn.
 * \retval BLQ_ETHREAD a delayed job: the timer thread cannot start.
 * \retval BLQ_ENOMEM a delayed job: the timer cannot grow.
 *
 * On any error the caller still owns job->payload and job->done is never
 * called.
 * \threadsafety As blq_enqueue.
 */
BLQ_API int blq_enqueue_job(blq *q, const blq_job *job);

/**
 * blq_enqueue_job that never blocks: a full queue (or a full timer, for a
 * delayed job) without a DLQ returns BLQ_EFULL instead of waiting.
 * \param q the queue.
 * \param job as for blq_enqueue_job.
 * \return as blq_enqueue_job, plus BLQ_EFULL. On any error the caller
 *         still owns job->payload and job->done is never called.
 */
BLQ_API int blq_try_enqueue_job(blq *q, const blq_job *job);

/**
 * blq_enqueue_job whose wait for room (in the rings, a QoS sub-queue, or
 * the timer for a delayed job) ends after \p timeout_ns.
 * \param q the queue.
 * \param job as for blq_enqueue_job.
 * \param timeout_ns as for blq_enqueue_timeout.
 * \return as blq_enqueue_job, plus BLQ_ETIMEDOUT (the caller still owns
 *         job->payload and job->done is never called).
 * \threadsafety As blq_enqueue_job.
 */
BLQ_API int blq_enqueue_job_timeout(blq *q, const blq_job *job, uint64_t timeout_ns);

/** What blq_enqueue_wait_result reports about an item's end. */
typedef struct blq_wait_result {
	enum blq_outcome outcome; /**< where the item ended */
	/** The worker's return code on the last attempt that ran (0 for a
	 * success; what the worker returned on a failure or a timed-out
	 * attempt; BLQ_ETIMEDOUT for an attempt that ended at its time limit
	 * while its callback still ran, see timeout_ns); 0 when no attempt
	 * ran (expired, leaked on overflow, dropped at a Soft or Hard close
	 * before it started). */
	int worker_rc;
	uint32_t attempts; /**< attempts that ran: 0 when none did */
} blq_wait_result;

/**
 * Enqueue a job and block until it reaches its outcome (seed 001's
 * SubmitWait), learning why it ended. job->done, when set, still runs once
 * at the outcome (before this call returns, unless the wait timed out): it
 * stands on the same hook, an internal blq_done that wakes the caller.
 * \param q the queue.
 * \param job as for blq_enqueue_job; the enqueue may block while the queue
 *        is full (it follows blq_enqueue's rules).
 * \param wait_ns how long to wait for the outcome after the enqueue;
 *        UINT64_MAX = no limit.
 * \param[out] res receives the outcome, the last attempt's return code and
 *        the number of attempts on 0; may be NULL.
 * \retval 0 *res set. Outcome PROCESSED: the worker owns the payload;
 *         FAILED, TIMED_OUT, EXPIRED, LOST: freed with item_free; LEAKED:
 *         the DLQ owns it.
 * \retval BLQ_ETIMEDOUT the wait limit passed first; the queue owns the
 *         payload and it still reaches an outcome later (counted in
 *         blq_stats); *res is untouched.
 * \retval BLQ_EDEADLK called from one of q's own workers (it could wait for
 *         itself); nothing was enqueued.
 * \retval BLQ_ENOMEM no memory for the wait record (the one allocation of
 *         this call); nothing was enqueued.
 * \retval others the enqueue's errors (BLQ_ECLOSED, BLQ_EINVAL, ...), as
 *         blq_enqueue_job: the caller still owns the payload.
 * \threadsafety Any number of threads at once, but not q's own workers
 * (BLQ_EDEADLK).
 */
BLQ_API int blq_enqueue_wait_result(blq *q, const blq_job *job, uint64_t wait_ns,
				    blq_wait_result *res);

/**
 * blq_enqueue_wait_result reporting the outcome only.
 * \param q the queue.
 * \param job as for blq_enqueue_job.
 * \param wait_ns as for blq_enqueue_wait_result.
 * \param[out] outcome receives the outcome on 0; may be NULL.
 * \return as blq_enqueue_wait_result.
 * \threadsafety As blq_enqueue_wait_result.
 */
BLQ_API int blq_enqueue_wait(blq *q, const blq_job *job, uint64_t wait_ns,
			     enum blq_outcome *outcome);

/**
 * A handle on one enqueued item, to cancel it (seed 000's Task.Stop).
 * Opaque; made by blq_enqueue_job_handle, given back with
 * blq_handle_release. blq_cancel ends the item with the outcome
 * BLQ_OUTCOME_CANCELLED, wherever it is:
 * - queued (a ring, a QoS sub-queue): it does not run: the worker that
 *   reaches it ends it (on a paused queue: at the resume);
 * - timer-held (a delay, a retry's backoff): ended at once by the timer
 *   thread;
 * - running: its token is raised (blq_task_cancelled); a non-zero return
 *   ends it cancelled (no retry, no DLQ); 0: processed;
 * - at a Soft or Hard close: cancelled, not leaked or lost.
 *
 * A cancelled item is freed with item_free and counted `cancelled`, never
 * sent to the DLQ: the DLQ keeps what the queue could not do, for a
 * restorer to run later, and a cancelled item is one its owner no longer
 * wants run. Its hooks (the job's, on_done) see BLQ_OUTCOME_CANCELLED.
 */
typedef struct blq_handle blq_handle;

/**
 * blq_enqueue_job, with a handle on the item. Cost: one allocation; plain
 * enqueues never allocate.
 * \param q the queue.
 * \param job as for blq_enqueue_job.
 * \param[out] out receives the handle on 0, NULL otherwise.
 * \retval 0 enqueued; *out set.
 * \retval BLQ_ENOMEM the handle cannot be made (nothing was enqueued).
 * \retval BLQ_EINVAL a NULL argument, or as blq_enqueue_job.
 * \retval others as blq_enqueue_job; the caller keeps the payload on any
 *         error.
 * \ownership The caller owns the handle and gives it back with
 * blq_handle_release, before or after the item ends (the item holds a
 * reference of its own until its outcome).
 * \threadsafety As blq_enqueue_job.
 */
BLQ_API int blq_enqueue_job_handle(blq *q, const blq_job *job, blq_handle **out);

/**
 * Cancel the handle's item (see blq_handle).
 * \param h the handle.
 * \retval 0 the item had not reached its outcome: it will not start
 *         again, and ends cancelled unless a running attempt returns 0
 *         (processed) or it ends otherwise in the meantime
 *         (blq_handle_outcome tells which); 0 again for a second cancel.
 * \retval BLQ_EFINISHED the item had already reached its outcome (nothing
 *         changes).
 * \retval BLQ_EINVAL \p h is NULL.
 * \threadsafety Any thread, any number of times, until blq_handle_release;
 * not concurrently with blq_free of the item's queue (after blq_free every
 * item has its outcome: BLQ_EFINISHED).
 */
BLQ_API int blq_cancel(blq_handle *h);

/** Where a handle's item is (blq_handle_state). */
enum blq_handle_state {
	/** Waiting for a worker: in a ring, a QoS sub-queue, or a worker's
	 * hand (taken ahead, not started). */
	BLQ_HANDLE_QUEUED = 1,
	/** In the timer: its delay, or its backoff before a retry. */
	BLQ_HANDLE_DELAYED,
	/** A worker runs an attempt of it now. */
	BLQ_HANDLE_RUNNING,
	/** It reached its outcome (blq_handle_outcome), its hooks returned. */
	BLQ_HANDLE_ENDED,
};

/**
 * Where the handle's item is now: queued, delayed (or waiting for a
 * retry), running, or ended. A snapshot: the item may move on as the call
 * returns. An attempt the watchdog gave up on moves on at its limit
 * (ENDED, or DELAYED or QUEUED for a retry on a copy); it stays RUNNING
 * until its callback returns only when the item's way needs the payload
 * and the config has no item_dup (timeout_ns).
 * \param h the handle.
 * \return the state; 0 for NULL.
 * \threadsafety Any thread, until blq_handle_release.
 */
BLQ_API enum blq_handle_state blq_handle_state(const blq_handle *h);

/**
 * The handle's item's outcome.
 * \param h the handle.
 * \return the outcome, or 0 while it has none (and for NULL).
 * \threadsafety Any thread, until blq_handle_release.
 */
BLQ_API enum blq_outcome blq_handle_outcome(const blq_handle *h);

/**
 * Give the caller's handle back (the record is freed once the item's own
 * reference went too, at its outcome).
 * \param h the handle; NULL is a no-op. It must not be used after.
 * \threadsafety Once per handle, after every other call on it returned.
 */
BLQ_API void blq_handle_release(blq_handle *h);

/**
 * Items waiting (not counting those being processed), those in the timer
 * (delays, retry backoff) and those a worker took ahead from a deep queue
 * and has not started (at most 16 per worker) included.
 * \param q the queue.
 * \return the count, a snapshot; 0 for NULL.
 */
BLQ_API size_t blq_size(const blq *q);

/**
 * The configured capacity (with QoS: the sum of the sub-queues' and the
 * egress's).
 * \param q the queue.
 * \return the capacity in items; 0 for NULL.
 */
BLQ_API size_t blq_capacity(const blq *q);

/**
 * Fill rate: items ready to run (in the queue, not in the timer) over
 * capacity; what the balancer acts on.
 * \param q the queue.
 * \return the rate in [0, 1]; 0 for NULL.
 */
BLQ_API double blq_rate(const blq *q);

/**
 * The queue's name.
 * \param q the queue.
 * \return the queue's copy of its name, valid until blq_free (not to be
 *         freed); "" for NULL.
 */
BLQ_API const char *blq_name(const blq *q);

/**
 * Read the counters and gauges. While the queue runs the counters are read
 * one by one, so the sum may be momentarily off by the items in flight;
 * after close they are exact (once workers_stuck is 0).
 * \param q the queue.
 * \param[out] out receives the counters.
 * \retval 0 \p out filled.
 * \retval BLQ_EINVAL \p q or \p out NULL.
 */
BLQ_API int blq_stats(const blq *q, struct blq_stats *out);

/**
 * The queue's state as one JSON object (name, status: "active",
 * "closing", "soft-closing", "force-closing" or "closed", capacity, size,
 * rate, workers, counters, and with QoS each sub-queue's and the egress's
 * size), like the original's String().
 * \param q the queue.
 * \param[out] buf the caller's buffer; NULL only with \p len 0 (to learn
 *        the length needed). Always NUL-terminated when \p len > 0.
 * \param len the size of \p buf in bytes.
 * \return the length the full text needs (excluding the NUL), as snprintf;
 *         a value >= len means it was cut. BLQ_EINVAL for NULL \p q, or
 *         \p buf NULL with \p len > 0.
 */
BLQ_API int blq_status_json(const blq *q, char *buf, size_t len);

/**
 * \name Closing
 * The four modes of seed 000. A close only gets stronger: a Soft close
 * during a Light one drops what is still queued; a Hard one cancels what
 * runs. Every mode refuses new items at once (enqueue returns BLQ_ECLOSED;
 * blocked producers wake with it) and ends a pause.
 *
 * \verbatim
 mode (call)                  queued items      timer-held (delays,  running items           returns
                                                retry backoff)
 Light   blq_close            run              wait, then run       finish                  0
 Light+t blq_close_timeout    run until t, then as Hard                                     0, or BLQ_ETIMEDOUT at t
 Soft    blq_close_soft       to the DLQ (leaked_closed) or,       finish, token not       0
                              without one, freed and counted lost  raised; a failure is
                                                                   not retried: abandoned
                                                                   like the queued items
 Soft+t  blq_close_soft_timeout  as Soft until t, then as Hard                              0, or BLQ_ETIMEDOUT at t
 Hard    blq_force_close      as Soft          as Soft              token raised            0
                                                                   (blq_task_cancelled);
                                                                   the return value decides
   \endverbatim
 *
 * Every mode returns once the workers have exited and the leftovers are
 * swept: counters are final then (in == processed + failed + leaked +
 * expired + lost + cancelled), but for the callbacks a time limit left
 * running. The limit holds (+t): at t the close turns Hard, gives the
 * running callbacks 5 ms to see their raised token and return, then
 * leaves those that did not running and returns BLQ_ETIMEDOUT (so are
 * those the watchdog gave up at their own time limit; a close without a
 * limit waits for every callback). Such callbacks show in blq_stats as
 * workers_stuck; each item reaches its outcome when its callback returns
 * (Hard rules: the return value decides; a failure is abandoned), and
 * only then counts. Wait for workers_stuck == 0 before reading final
 * counters. blq_free waits for them: nothing is freed under a running
 * callback.
 *
 * Thread-safety: all are idempotent and any thread may call them,
 * concurrently too: every caller returns when the queue is closed. From
 * one of the queue's own workers, any of them starts the close and returns
 * 0 without waiting (blq_free or a later close finishes). None frees the
 * queue: blq_free does.
 */
///@{

/**
 * Light close: stop accepting, let the workers drain every item (queued
 * and timer-held), join them. See the table above.
 * \param q the queue.
 * \retval 0 closed (or, from one of q's own workers, closing).
 * \retval BLQ_EINVAL \p q is NULL.
 */
BLQ_API int blq_close(blq *q);

/**
 * Light close that turns into blq_force_close when the drain takes longer
 * than \p timeout_ns; returns within a few milliseconds of \p timeout_ns
 * even when a callback ignores its token (it is left running:
 * workers_stuck, see above).
 * \param q the queue.
 * \param timeout_ns the drain's limit, from the call; UINT64_MAX: none.
 * \retval 0 drained in time.
 * \retval BLQ_ETIMEDOUT it had to force (the queue is closed either way).
 * \retval BLQ_EINVAL \p q is NULL.
 */
BLQ_API int blq_close_timeout(blq *q, uint64_t timeout_ns);

/**
 * Soft close: stop accepting, let the running items finish without raising
 * their cancellation, and hand every item still queued or held by the
 * timer to the DLQ (counted leaked_closed) or, without a DLQ, free it and
 * count it lost. A running item that fails is not retried: it ends like
 * the queued ones. See the table above.
 * \param q the queue.
 * \retval 0 closed (or, from one of q's own workers, closing).
 * \retval BLQ_EINVAL \p q is NULL.
 */
BLQ_API int blq_close_soft(blq *q);

/**
 * blq_close_soft that turns into blq_force_close when the running items
 * take longer than \p timeout_ns to finish; the limit holds as
 * blq_close_timeout's does.
 * \param q the queue.
 * \param timeout_ns the limit, from the call; UINT64_MAX: none.
 * \retval 0 they finished in time.
 * \retval BLQ_ETIMEDOUT it had to force (the queue is closed either way).
 * \retval BLQ_EINVAL \p q is NULL.
 */
BLQ_API int blq_close_soft_timeout(blq *q, uint64_t timeout_ns);

/**
 * Hard close: as blq_close_soft, and every running item's cancellation
 * flag is raised (see blq_task_cancelled).
 * \param q the queue.
 * \retval 0 closed (or, from one of q's own workers, closing).
 * \retval BLQ_EINVAL \p q is NULL.
 */
BLQ_API int blq_force_close(blq *q);

///@}

/**
 * Close gracefully if still open, join every thread, free the queue. It
 * blocks until every callback returned, those a close past its limit or
 * the watchdog left running too (workers_stuck): their items still reach
 * their outcome, so the DLQ and the metrics writer must outlive this call.
 * \param q the queue; NULL is a no-op (returns 0).
 * \retval 0 freed.
 * \retval BLQ_EDEADLK called from one of q's own workers; nothing was done
 *         (not even a close).
 * \threadsafety Not concurrently with anything on \p q: call it only once
 * every other call on \p q (from any thread) has returned (a producer
 * refused by the close may still be inside blq_enqueue when blq_close
 * returns), and only once; never from q's own workers.
 */
BLQ_API int blq_free(blq *q);

/** New pool bounds for a running queue (blq_resize): the fields of
 * blq_config of the same names, with the same rules. */
typedef struct blq_pool_bounds {
	/** Fixed pool size (workers_min = workers_max = workers), or 0 to
	 * use workers_min/workers_max; not both. */
	unsigned workers;
	/** 0..workers_max. */
	unsigned workers_min;
	/** 1..1024: may be above the value the queue was created with. */
	unsigned workers_max;
	/** (0, 1]; 0 keeps the current base value. */
	double wakeup_factor;
	/** [0, wakeup_factor]; 0 keeps the current base value. */
	double sleep_factor;
} blq_pool_bounds;

/**
 * Change the pool's bounds on a running queue: workers_min, workers_max and
 * the factors, as blq_config's (pond's Resize, ants' Tune).
 *
 * The new bounds replace the base bounds, the config's: those in force
 * when no schedule range matches. A schedule range in force still
 * overrides them until it ends (its unset factors come from the new base
 * factors). The pool follows during the call: workers above the max in
 * force stop, each after its current item and the items it took ahead (no
 * item is abandoned), and threads start up to the min (and more when the
 * queue is backed up, as a heartbeat would); blq_stats shows the new
 * bounds at once. workers_max may go above its value at creation, up to
 * 1024 (the queue reserved address space for that at creation; a page of
 * it is backed once a slot on it is used). A queue without a heartbeat
 * thread (a fixed pool) gets one at its first resize: a range (min < max)
 * makes it balanced, and at any size the heartbeat finishes a grow whose
 * slots were still held by threads stopping after their items.
 *
 * \param q the queue.
 * \param b the new bounds; only read during the call.
 * \param[out] err optional; the code and a message naming the field, as
 *        blq_new's ("workers_max: must be >= workers_min (4), got 2").
 * \retval 0 applied.
 * \retval BLQ_EINVAL \p q or \p b is NULL, or a bound is out of range
 *         (nothing changed).
 * \retval BLQ_ECLOSED the queue is closing or closed (nothing changed).
 * \retval BLQ_ETHREAD the heartbeat thread could not start (nothing
 *         changed), or a worker thread could not (the bounds are applied;
 *         the heartbeat tries again at each beat).
 * \threadsafety Any thread, one of q's own workers included; serialised
 *         with the balancer, the schedule and close.
 */
BLQ_API int blq_resize(blq *q, const blq_pool_bounds *b, blq_error *err);

/**
 * Workers stop taking items (those running finish); enqueues keep their
 * normal rules (so a paused queue fills, then blocks or leaks). No item
 * starts while paused: a worker that was in the act of taking an item as
 * the pause began holds it (it leaves blq_size, stays in flight) and runs
 * it after the resume; the items it took ahead with it wait in its hand,
 * counted in blq_size, and run after it. Idempotent. A close ends the pause (the drain needs
 * the workers).
 * \param q the queue.
 * \retval 0 paused.
 * \retval BLQ_EINVAL \p q is NULL.
 * \retval BLQ_ECLOSED the queue is closing or closed.
 */
BLQ_API int blq_pause(blq *q);

/**
 * Workers take items again. Idempotent.
 * \param q the queue.
 * \retval 0 resumed (also on a queue that was not paused, or is closed).
 * \retval BLQ_EINVAL \p q is NULL.
 */
BLQ_API int blq_resume(blq *q);

/**
 * Block until the queue is empty and no worker runs an item, without
 * closing it. Sleeps (no polling).
 * \param q the queue.
 * \param timeout_ns how long to wait, from the call; UINT64_MAX waits
 *        without limit.
 * \retval 0 idle.
 * \retval BLQ_ETIMEDOUT the limit passed first.
 * \retval BLQ_EDEADLK called from one of q's own workers (it would wait for
 *         itself).
 * \retval BLQ_EINVAL \p q is NULL.
 * \threadsafety Any thread but q's own workers; any number of waiters.
 */
BLQ_API int blq_wait_idle(blq *q, uint64_t timeout_ns);

/**
 * The queue as a blq_enqueuer, so it can be another queue's DLQ or a
 * transit worker's target. Its enqueue is blq_enqueue: the target's own
 * rules apply (a leaky target never blocks; a full non-leaky target makes
 * the caller wait, so a leaky source queue's producer waits in its leak:
 * blq_stats.dlq_waiting of the source counts it; a closed target refuses,
 * and the source counts the item lost). It has no sync (blq_dlq_sync of a queue leaking into it says
 * BLQ_ENOTSUP).
 * \param q the target queue, borrowed: it must outlive every queue that
 *        uses the enqueuer.
 * \return the enqueuer, a value holding \p q: nothing to free.
 */
BLQ_API blq_enqueuer blq_as_enqueuer(blq *q);

/**
 * Make every item this queue has handed to its DLQ so far durable, when
 * the DLQ can (its blq_enqueuer.sync; a dump's writes its buffered batch
 * and waits for it).
 * \param q the queue.
 * \retval 0 they are durable.
 * \retval BLQ_ENOTSUP the queue has no DLQ, or its DLQ has no sync (it
 *         keeps items in memory, as a queue does).
 * \retval BLQ_EINVAL \p q is NULL.
 * \retval others the DLQ's error (the items stay in the DLQ, a later call
 *         tries again).
 * \threadsafety Any thread; not from the queue's own workers (nothing stops
 * it, but it may block the worker on the DLQ's I/O).
 */
BLQ_API int blq_dlq_sync(blq *q);

/**
 * This attempt's number.
 * \param t the worker's task.
 * \return 1 for the first attempt, 2 for the first retry, ...; 0 for NULL.
 * \threadsafety Any thread, while the worker call that received \p t runs
 * (the same holds for every blq_task_ function).
 */
BLQ_API unsigned blq_task_attempt(const blq_task *t);

/**
 * The item's enqueue time.
 * \param t the worker's task.
 * \return the time on the queue's clock, or 0 when the queue does not
 *         stamp items (it does with stamp_enqueue_time, a metrics writer
 *         or a deadline_interval_ns); 0 for NULL.
 */
BLQ_API uint64_t blq_task_enqueued_ns(const blq_task *t);

/**
 * The index of the worker running the task, 0-based: below twice the
 * pool's ceiling (replacements for workers given up at their time limit
 * take spare slots).
 * \param t the worker's task.
 * \return the index; 0 for NULL.
 */
BLQ_API unsigned blq_task_worker(const blq_task *t);

/**
 * Whether the item should stop early: it ran past its timeout (the
 * queue's clock is read only when the item has one), a force close
 * cancelled it, or blq_cancel did. Long workers should poll it and return.
 * Short items (no timeout) pay one load.
 * \param t the worker's task.
 * \return true once the item should stop; false for NULL.
 * \ownership Once it returned true because of the timeout, the attempt has
 * failed and the payload stays with the queue even if the worker returns 0
 * (see timeout_ns); after a force-close cancel the return value decides.
 */
BLQ_API bool blq_task_cancelled(const blq_task *t);

/**
 * Whether the item ran past its timeout; the same ownership rule as
 * blq_task_cancelled.
 * \param t the worker's task.
 * \return true once the item ran past its timeout; false without a
 *         timeout, after a successful blq_task_claim, and for NULL.
 */
BLQ_API bool blq_task_timed_out(const blq_task *t);

/**
 * Keep the attempt before consuming the payload (free, keep, forward) when
 * it has a time limit: past the limit the watchdog gives the attempt up
 * and the queue takes the payload back (timeout_ns); this call decides
 * which side has it. Idempotent.
 * \param t the worker's task.
 * \return true when the attempt is the worker's: from then on the return
 *         value decides, as without a limit (0: processed, the worker owns
 *         the payload, even past the limit; non-zero: failed, the queue
 *         keeps it); false once the attempt was given up or the worker was
 *         told it timed out: the payload is the queue's, the worker must
 *         not touch it and should return. Always true for an attempt
 *         without a limit (and for a NULL task: a worker called outside a
 *         queue).
 */
BLQ_API bool blq_task_claim(blq_task *t);

/**
 * The attempt's time limit.
 * \param t the worker's task.
 * \return the limit on the queue's clock, or 0 when it has none (and for
 *         NULL).
 */
BLQ_API uint64_t blq_task_timeout_at_ns(const blq_task *t);

/**
 * The queue running the task.
 * \param t the worker's task.
 * \return the queue, borrowed (not to be freed from the worker); NULL for
 *         NULL.
 */
BLQ_API blq *blq_task_queue(const blq_task *t);

#ifdef __cplusplus
}
#endif

#endif
