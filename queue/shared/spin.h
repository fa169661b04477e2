/*
 * How a thread waits a little before it sleeps on an event count (ec.h),
 * and when it sleeps at once: the spins of the waits in blq (a worker on
 * empty rings, a batch's producer and the timer thread on full ones, QoS's
 * movers and ingress; a single producer on full rings sleeps at once,
 * queue/engine_rings.c says why). Shared by the core and the engines; the
 * code is queue/spin.c. Not installed.
 *
 * Why spin at all: a futex sleep and its wake-up cost the waker a system
 * call and the sleeper its wake-up latency (several microseconds here, more
 * on a VM whose idle vCPU the host must wake). When the peer a thread waits
 * for (a producer, for a worker on empty rings) is running on another CPU,
 * what it waits for comes within that time, and a spinner takes it with no
 * system call on either side: W3's p50 is a spinner's.
 *
 * Why not always: spinning pays only while the peer runs elsewhere. When
 * the peer waits for the spinner's own CPU, every spin delays the thing it
 * waits for; and 0.4's answer to that, sched_yield, handed the CPU to
 * whoever was runnable, a stranger as often as the peer: on a busy host
 * (W1-NOISY) 85% of yields took 1 to 8 ms, a whole slice of somebody
 * else's. So the waits here never yield, and:
 * - Places: at most half the CPUs this process may run on spin at once
 *   (a process-wide count, because chained queues share the CPUs; none on
 *   one CPU, where the peer can never be running). A thread that finds no
 *   place sleeps at once. The other half are left to the threads being
 *   waited for, so spinners do not outnumber the CPUs their peers need.
 * - Time, not rounds: a spin lasts at most BLQ__SPIN_NS (about one sleep
 *   and wake-up), pausing between looks. The pause instruction costs 10 to
 *   140 cycles depending on the CPU, so rounds meant anything from one to
 *   twenty microseconds.
 * - A look every BLQ__LOOK_NS, not every pause: a worker's look reads every
 *   lane's tail, the lines its producers write, and looking at every pause
 *   would take those lines from them.
 * - Preempted: between two pauses the spinner reads the clock (a TSC read,
 *   queue/clock.c); a gap above BLQ__STOLEN_NS means it was descheduled
 *   while someone else ran on its CPU (a busy host, or threads outnumbering
 *   the CPUs). The spin ends at once and sleeps, so a wait loses one slice
 *   at most, and the queue's moving average of stolen spins moves (1/8
 *   weight per spin, shared by its threads, so all learn from each). Above
 *   a quarter the host counts as busy: waits sleep at once, except one
 *   probe spin per BLQ__PROBE_NS for the whole queue, which finds out when
 *   the host is quiet again (a probe that is not preempted halves the
 *   average: two in a row end the busy spell). A quiet host's odd
 *   preemption (the hypervisor's, or a peer's turn) does not trip it.
 * Races on the average or the probe time lose an update at worst: they are
 * hints. The place count is exact: taken by a CAS, given back once.
 */
#ifndef BLQ_QUEUE_SPIN_H
#define BLQ_QUEUE_SPIN_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cacheline.h"

/* A spin's length: about what a futex sleep and wake-up cost here. */
#define BLQ__SPIN_NS 20000u
/* Between two looks of a spin. */
#define BLQ__LOOK_NS 250u
/* A gap longer than this between two of a spinner's clock reads was a
 * preemption: EEVDF's base slice is 0.75 ms x (1 + log2 CPUs), and no
 * pause takes more than a microsecond. */
#define BLQ__STOLEN_NS 500000u
/* The moving average of stolen spins is kept in 1/1024ths; above this,
 * the host counts as busy. */
#define BLQ__STOLEN_ONE 1024u
#define BLQ__STOLEN_BUSY (BLQ__STOLEN_ONE / 4)
/* While busy, a queue's waits probe (spin once) this often at most. */
#define BLQ__PROBE_NS 100000000u

typedef struct blq__spin {
	/* On a line of its own: written on the slow path only, read by
	 * every wait. */
	alignas(BLQ__CACHELINE) _Atomic uint32_t stolen; /* of BLQ__STOLEN_ONE */
	_Atomic uint64_t probe_at; /* busy: the next probe's earliest time */
} blq__spin;

/* One wait's spin, on the waiting thread's stack. */
typedef struct blq__spinner {
	uint64_t until;   /* the spin ends here */
	uint64_t look_at; /* the next look */
	uint64_t last;    /* the last clock read, to see a preemption */
} blq__spinner;

/* Starts a wait's spin. True: the caller looks for what it waits for
 * between calls of blq__spin_pause, and calls blq__spin_stop if it finds
 * it. False: spinning cannot pay now (no place, or a busy host and no
 * probe due): sleep at once. Thread-safe. */
bool blq__spin_start(blq__spin *s, blq__spinner *sp);

/* Pauses until the next look. False: the spin is over (its time is up or
 * it was preempted) and its place is given back: sleep. */
bool blq__spin_pause(blq__spin *s, blq__spinner *sp);

/* Ends a spin that found what it waited for, giving its place back. */
void blq__spin_stop(blq__spin *s, blq__spinner *sp);

/* True while the host looks busy: waits then sleep at once. */
bool blq__spin_busy(const blq__spin *s);

/* Moves the average by one spin, preempted or not. */
void blq__spin_note(blq__spin *s, bool stolen);

/* How many threads of this process may spin at once (half the CPUs it may
 * run on, rounded down), and how many do now. For tests and status. */
unsigned blq__spin_places(void);
unsigned blq__spinning(void);

#endif
