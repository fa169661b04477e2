/**
 * \file
 * Task groups: jobs enqueued together, waited for together (alitto/pond's
 * group.Wait), counted by outcome, cancelled together.
 *
 * A group belongs to one queue. blq_group_enqueue hands a job to the queue
 * as blq_enqueue_job does and keeps it in the group until its outcome;
 * blq_group_wait sleeps until every job the group accepted has ended;
 * blq_group_counts says how many ended in each outcome
 * (enum blq_outcome) and how many are still pending; blq_group_cancel
 * cancels every job still pending (blq_cancel on each), and refuses later
 * enqueues.
 *
 * Built on the completion hooks (blq_done) and handles (blq_handle): a job
 * in a group carries the group's hook, which runs the job's own hook
 * (blq_job.done) exactly once, then counts the outcome. Items outside
 * groups pay nothing for groups. A job in a group costs two small
 * allocations (its record in the group and its handle), freed at its
 * outcome.
 *
 * Accounting: every job whose enqueue returned 0 ends in exactly one
 * outcome count; at any moment accepted == processed + failed + timed_out
 * + leaked + expired + lost + cancelled + pending (blq_group_counts reads
 * them under one lock). An enqueue that returned an error is counted in
 * `refused` only: never pending, never an outcome, no hook runs, and the
 * caller still owns the payload.
 *
 * Thread-safety: unless a function says otherwise, every function here may
 * be called from any thread, concurrently, on the same group (several
 * producers may enqueue into one group while others wait, read the counts
 * or cancel), from blq_group_new's return until blq_group_free. Completion
 * hooks (the jobs' own, blq_config.on_done) may call blq_group_try_enqueue,
 * blq_group_counts and blq_group_cancel, but not blq_group_enqueue (it may
 * wait for room), blq_group_wait or blq_group_free.
 */
#ifndef BLQ_GROUP_H
#define BLQ_GROUP_H

#include <stdint.h>
#include <sys/types.h> /* ssize_t */

#include <blq/error.h>
#include <blq/export.h>
#include <blq/queue.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A task group. Opaque; made by blq_group_new, freed with
 * blq_group_free. */
typedef struct blq_group blq_group;

/** What blq_group_counts reports: one count per outcome, plus the jobs
 * still without one. Unlike blq_stats, `failed` does not include
 * `timed_out`: each is its own outcome (enum blq_outcome). A plain struct
 * tag (no typedef), as struct blq_stats, so the function keeps its name:
 * `struct blq_group_counts c; blq_group_counts(g, &c);` */
struct blq_group_counts {
	/** Jobs the group accepted: enqueues that returned 0 (counted from
	 * their outcome when the outcome came first: a job leaked on
	 * overflow ends inside its enqueue call). */
	uint64_t accepted;
	/** Enqueue calls into the group that returned an error (the queue
	 * full or closed, the group cancelled, no memory, a bad job). Not in
	 * accepted, never pending. */
	uint64_t refused;
	/** Accepted jobs without an outcome yet. */
	uint64_t pending;
	/** Enqueue calls into the group in progress (a blocking one waiting
	 * for room, say); blq_group_wait waits for them too. */
	uint64_t enqueuing;
	uint64_t processed; /**< BLQ_OUTCOME_PROCESSED */
	uint64_t failed;    /**< BLQ_OUTCOME_FAILED */
	uint64_t timed_out; /**< BLQ_OUTCOME_TIMED_OUT */
	uint64_t leaked;    /**< BLQ_OUTCOME_LEAKED */
	uint64_t expired;   /**< BLQ_OUTCOME_EXPIRED */
	uint64_t lost;      /**< BLQ_OUTCOME_LOST */
	uint64_t cancelled; /**< BLQ_OUTCOME_CANCELLED */
};

/**
 * Make an empty group on a queue.
 * \param q the queue its jobs go to; borrowed: it must outlive the group
 *        (free the group first, or at least make blq_free(q) come after
 *        every call on the group but blq_group_free).
 * \param[out] err optional; receives the code and a message on failure
 *        (BLQ_OK and "" on success).
 * \return the group, or NULL with BLQ_EINVAL (\p q NULL) or BLQ_ENOMEM in
 *         \p err. The caller owns it: free it with blq_group_free once no
 *         job is pending (after blq_group_wait returned 0, or after
 *         blq_group_cancel and then blq_group_wait).
 */
BLQ_API blq_group *blq_group_new(blq *q, blq_error *err);

/**
 * blq_enqueue_job into the group: the job runs on the group's queue with
 * its own settings, and its own hook (job->done), when set, still runs
 * exactly once at its outcome, before the group counts it.
 * \param g the group.
 * \param job as for blq_enqueue_job; the struct is only read during the
 *        call, job->done is borrowed until it ran.
 * \retval 0 the queue owns job->payload; the job is pending in the group
 *         until its outcome (it may have reached it already: a leak on
 *         overflow ends it inside this call).
 * \retval BLQ_ECANCELED the group was cancelled (blq_group_cancel);
 *         nothing was enqueued.
 * \retval BLQ_ECLOSED the queue is closing or closed (also when it closes
 *         while this call waits for room).
 * \retval BLQ_ENOMEM no memory for the job's record or handle, or (a
 *         delayed job) the timer cannot grow; nothing was enqueued.
 * \retval BLQ_EINVAL \p g or \p job NULL, or as blq_enqueue_job (an
 *         interval above 1 year, a deadline not after the delay,
 *         job->done without fn).
 * \retval BLQ_ETHREAD a delayed job: the timer thread cannot start.
 *
 * On any error the caller still owns job->payload, job->done is never
 * called, and the call counts in `refused` (but for a NULL \p g).
 * \threadsafety Any number of threads at once; like blq_enqueue_job it
 * waits while the queue is full (unless leaky), so not from a completion
 * hook.
 */
BLQ_API int blq_group_enqueue(blq_group *g, const blq_job *job);

/**
 * blq_group_enqueue that never blocks: a full queue (or a full timer, for
 * a delayed job) without a DLQ returns BLQ_EFULL (counted in `refused`).
 * \param g the group.
 * \param job as for blq_group_enqueue.
 * \return as blq_group_enqueue, plus BLQ_EFULL. On any error the caller
 *         still owns job->payload and job->done is never called.
 * \threadsafety Any thread, completion hooks included.
 */
BLQ_API int blq_group_try_enqueue(blq_group *g, const blq_job *job);

/**
 * Sleep until every job the group accepted has reached its outcome and no
 * enqueue into it is in progress. Each job's own hook has returned by
 * then. Jobs enqueued after this returned are new: wait again for them.
 * \param g the group.
 * \param timeout_ns how long to wait, from the call, on CLOCK_MONOTONIC
 *        (not the queue's clock); 0 only looks; UINT64_MAX waits without
 *        limit.
 * \retval 0 no job is pending (also for an empty group).
 * \retval BLQ_ETIMEDOUT the limit passed first; the jobs go on (wait again,
 *         or blq_group_cancel).
 * \retval BLQ_EDEADLK called from one of the queue's own workers (it could
 *         wait for itself); nothing was waited for.
 * \retval BLQ_EINVAL \p g is NULL.
 * \threadsafety Any thread but the queue's own workers and completion
 * hooks; any number of waiters at once.
 */
BLQ_API int blq_group_wait(blq_group *g, uint64_t timeout_ns);

/**
 * Read the group's counts, all under one lock, so they add up:
 * accepted == processed + failed + timed_out + leaked + expired + lost +
 * cancelled + pending.
 * \param g the group.
 * \param[out] out receives the counts.
 * \retval 0 \p out filled.
 * \retval BLQ_EINVAL \p g or \p out NULL.
 */
BLQ_API int blq_group_counts(const blq_group *g, struct blq_group_counts *out);

/**
 * Cancel the group: blq_cancel on every job still pending (and on those
 * whose enqueue is in progress, as it returns), and refuse every later
 * blq_group_enqueue with BLQ_ECANCELED. Where each job ends is blq_cancel's
 * rule (queue.h, blq_handle): a queued one never runs (a worker that
 * reaches it ends it: on a paused queue, at the resume), a timer-held one
 * (a delay, a retry's backoff) ends at once, a running one sees its token
 * (blq_task_cancelled) and its return value decides (0: processed). So
 * follow with blq_group_wait; the counts then say how each ended.
 * Idempotent: a second call asks the jobs still pending again (blq_cancel
 * is idempotent too) and counts them again.
 * \param g the group.
 * \return how many jobs it asked to stop (those without an outcome when it
 *         looked; some may still end otherwise, see above), or BLQ_EINVAL
 *         for a NULL \p g.
 * \threadsafety Any thread, completion hooks and workers included; it does
 * not wait.
 */
BLQ_API ssize_t blq_group_cancel(blq_group *g);

/**
 * Free the group, once none of its jobs is pending.
 * \param g the group; NULL is a no-op (returns 0).
 * \retval 0 freed.
 * \retval BLQ_EBUSY a job is still pending or an enqueue into the group is
 *         in progress: nothing was freed (wait first, blq_group_wait; or
 *         cancel, then wait).
 * \threadsafety Not concurrently with any other call on \p g: call it once
 * every other call on \p g returned, and only once it returned 0 is the
 * group gone (the jobs' hooks no longer touch it then: a job's last access
 * to its group happens before blq_group_wait or this call can see it
 * ended).
 */
BLQ_API int blq_group_free(blq_group *g);

#ifdef __cplusplus
}
#endif

#endif
