/*
 * The futex side of the event count (ec.h has the protocol): the two
 * system calls a sleeper and a waker make, and only on the slow path. A
 * sleeper waits on `seq` with its snapshot and an absolute
 * CLOCK_MONOTONIC deadline (FUTEX_WAIT_BITSET), so a spurious or early
 * return never stretches its limit; every return ends the announced wait
 * (waiters--, and the acknowledgement of a pending wake-up). A waker bumps
 * `seq` first, so a sleeper whose snapshot predates the bump does not
 * sleep at all, then wakes n or all. Private futexes: never shared
 * across processes.
 */
#include "ec.h"
#include "monotonic.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void blq__ec_wait(blq__ec *ec, uint32_t snapshot, uint64_t abs_ns)
{
	struct timespec ts, *tsp = NULL;

	if (abs_ns != 0) {
		ts = blq__timespec_of(abs_ns);
		tsp = &ts;
	}
	/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time, so a
	 * spurious wake-up does not stretch the deadline. EAGAIN (seq moved),
	 * EINTR and ETIMEDOUT all just return: the caller re-checks. */
	syscall(SYS_futex, &ec->seq, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, snapshot, tsp, NULL,
		FUTEX_BITSET_MATCH_ANY);
	atomic_fetch_sub_explicit(&ec->waiters, 1, memory_order_relaxed);
	blq__ec_ack(ec);
}

void blq__ec_wake_slow(blq__ec *ec, int n)
{
	atomic_fetch_add_explicit(&ec->seq, 1, memory_order_seq_cst);
	syscall(SYS_futex, &ec->seq, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, n > 0 ? n : INT_MAX, NULL,
		NULL, 0);
}
