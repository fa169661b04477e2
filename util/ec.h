/*
 * Event count: how a lock-free ring's threads sleep and wake without a lock.
 *
 * A waiter announces itself (waiters++), snapshots `seq`, re-checks its
 * condition (ring empty, ring full, ...) and only then sleeps on the futex
 * with the snapshot. A notifier first publishes its change, then runs a
 * full fence and reads `waiters`; only when someone waits does it bump
 * `seq` and call futex_wake. So a busy queue, where nobody waits, makes no
 * system call, and no wake-up is missed:
 *   - if the notifier's read of `waiters` comes before the waiter's
 *     increment, the waiter's re-check (after the increment) sees the change;
 *   - otherwise the notifier bumps `seq`, and futex_wait with the old
 *     snapshot returns at once if the bump came before it.
 * The fence is needed because publishing is a store and reading `waiters`
 * is a load: without a StoreLoad barrier they pass each other on x86 and a
 * sleeping thread is never woken.
 *
 * One wake per sleep episode, not per item: `pending` says a wake-up was
 * issued that no waiter has acknowledged yet. While it is set, notifiers
 * skip the system call: the woken thread is on its way and re-checks the
 * condition after clearing `pending` (with a full barrier, so it sees every
 * change whose notifier saw `pending` set). Without this, every push made
 * while a woken worker waits for a CPU is another futex_wake; with 4
 * threads on 2 cores that was a system call per item.
 * blq__ec_notify's wake-ones defer to `pending`, its wake-alls never do (a
 * pending wake-one must not absorb a close). A woken worker that takes an
 * item while more wait, or that stops taking items, passes a wake-up on,
 * so a burst does not rest on the one worker that was woken. The workers'
 * half-drain wake of one producer (worker.c) does defer: the producer it
 * woke acknowledges it and pushes, and the take of what it pushes looks
 * again (and a producer woken into a full queue sleeps again, to be woken
 * at the next drain). So every sleeper there either pushes or passes the
 * wake-up on: a QoS egress thread, which may have nothing to move, passes
 * it on (qos/egress.c, wait_room; models/ec.pml -DMOVER).
 * Every waiter clears `pending` when it announces itself (before its
 * re-check) and again when it stops waiting (woken, timed out, or
 * cancelled after a successful re-check). So `pending` cannot stay set
 * with nobody to clear it, and a waiter that goes to sleep has, after its
 * last clear, either seen every change whose notifier skipped the wake, or
 * its notifier saw `pending` clear and wakes it. A notifier that claims
 * `pending` always bumps `seq` and calls futex_wake, so a sleeper whose
 * snapshot predates the bump returns at once.
 */
#ifndef BLQ_UTIL_EC_H
#define BLQ_UTIL_EC_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct blq__ec {
	_Atomic uint32_t seq;
	_Atomic uint32_t waiters;
	_Atomic uint32_t pending;
} blq__ec;

/* Announce a waiter and return the snapshot to pass to blq__ec_wait. The
 * caller must re-check its condition after this and before waiting, and
 * must end with blq__ec_wait or blq__ec_cancel. */
/* Acknowledge any pending wake-up. The exchange is a full barrier: the
 * caller's next look at its condition comes after it. Slow path only. */
static inline void blq__ec_ack(blq__ec *ec)
{
	atomic_exchange_explicit(&ec->pending, 0, memory_order_seq_cst);
}

static inline uint32_t blq__ec_prepare(blq__ec *ec)
{
	/* seq_cst: the increment comes before the snapshot, the snapshot
	 * before the acknowledgement, and all before the caller's re-check.
	 * Snapshot first: a wake-up claimed before our acknowledgement either
	 * bumped `seq` before the snapshot (then its change is visible to the
	 * re-check) or after it (then futex_wait returns at once); one claimed
	 * after it bumps `seq` after the snapshot too. Taking the snapshot
	 * after the acknowledgement would let a claim land in between and
	 * leave `pending` set over a sleeper. */
	atomic_fetch_add_explicit(&ec->waiters, 1, memory_order_seq_cst);
	uint32_t snap = atomic_load_explicit(&ec->seq, memory_order_seq_cst);
	blq__ec_ack(ec);
	return snap;
}

static inline void blq__ec_cancel(blq__ec *ec)
{
	atomic_fetch_sub_explicit(&ec->waiters, 1, memory_order_relaxed);
	blq__ec_ack(ec);
}

/* Sleep until notified after the snapshot, or until the absolute
 * CLOCK_MONOTONIC deadline abs_ns (0 = none). Spurious returns are allowed:
 * callers loop. Ends the wait announced by blq__ec_prepare. */
void blq__ec_wait(blq__ec *ec, uint32_t snapshot, uint64_t abs_ns);

/* Wake at most n sleepers (n = 0 wakes all) after the caller published its
 * change. Cheap when nobody waits: one fence and one load. */
void blq__ec_wake_slow(blq__ec *ec, int n);

/*
 * The StoreLoad barrier between publishing a change and reading `waiters`.
 * ThreadSanitizer does not model atomic_thread_fence, so under TSan the
 * barrier is a seq_cst read-modify-write of `waiters` itself, which orders
 * the same way in C11 terms (the waiter's increment is an RMW on the same
 * location) and which TSan understands. Normal builds keep a fence: an RMW
 * would pull the shared line into every producer's cache per item. On
 * x86-64 the fence is a locked add to the stack, which orders exactly like
 * mfence for ordinary memory and costs less on current cores.
 */
#if defined(__SANITIZE_THREAD__)
#define BLQ__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BLQ__TSAN 1
#endif
#endif

static inline void blq__full_fence(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	__asm__ volatile("lock; addl $0, (%%rsp)" ::: "memory", "cc");
#else
	atomic_thread_fence(memory_order_seq_cst);
#endif
}

static inline uint32_t blq__ec_publish_then_waiters(blq__ec *ec)
{
#ifdef BLQ__TSAN
	return atomic_fetch_add_explicit(&ec->waiters, 0, memory_order_seq_cst);
#else
	blq__full_fence();
	return atomic_load_explicit(&ec->waiters, memory_order_relaxed);
#endif
}

/* The waiters count, read right after the caller published its change
 * with a seq_cst read-modify-write (a ring's CAS, a count's add): on x86
 * that locked instruction is the StoreLoad barrier, so no fence; elsewhere
 * a seq_cst RMW need not be one, so a fence; under TSan the RMW form of
 * blq__ec_publish_then_waiters. */
static inline uint32_t blq__ec_waiters_after_rmw(blq__ec *ec)
{
#ifdef BLQ__TSAN
	return atomic_fetch_add_explicit(&ec->waiters, 0, memory_order_seq_cst);
#else
#if !defined(__x86_64__) && !defined(__i386__)
	atomic_thread_fence(memory_order_seq_cst);
#endif
	return atomic_load_explicit(&ec->waiters, memory_order_relaxed);
#endif
}

/* Whether a wake-up is pending (a relaxed look, as blq__ec_claim's
 * first): a caller with a costly condition to evaluate before its claim
 * looks here first, since the claim would fail anyway. */
static inline int blq__ec_pending(blq__ec *ec)
{
	return atomic_load_explicit(&ec->pending, memory_order_relaxed) != 0;
}

/* Claims the right to issue the wake-up: false when one is pending. */
static inline int blq__ec_claim(blq__ec *ec)
{
	return !blq__ec_pending(ec) &&
	       atomic_exchange_explicit(&ec->pending, 1, memory_order_seq_cst) == 0;
}

/* Wakes n waiters (0 = all) if any wait. A wake-all never defers to a
 * pending wake-up: a pending wake-one would otherwise absorb it, and a
 * close or a state change must reach every sleeper. */
static inline void blq__ec_notify(blq__ec *ec, int n)
{
	/* StoreLoad: the caller's publication must be visible before we look
	 * at the waiters count (see the top of this file). */
	if (blq__ec_publish_then_waiters(ec) != 0 && (n == 0 || blq__ec_claim(ec)))
		blq__ec_wake_slow(ec, n);
}

#endif
