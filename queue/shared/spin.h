/*
 * How a thread waits a little before it sleeps on an event count (ec.h),
 * and when it sleeps at once: the looks of the waits in blq (a worker on
 * empty rings, a batch's producer and the timer thread on full ones, QoS's
 * movers and ingress; a single producer on full rings sleeps at once,
 * queue/engine_rings.c says why). Shared by the core and the engines; the
 * code is queue/spin.c. Not installed.
 *
 * Why look at all: a futex sleep and its wake-up cost the waker a system
 * call and the sleeper its wake-up latency (several microseconds here, more
 * on a VM whose idle vCPU the host must wake), while what a thread waits
 * for (an item, room) is often a moment away.
 *
 * Two ways to wait a little, and when each pays:
 * - A spin (pause, look, for at most BLQ__SPIN_NS) pays while the peer
 *   runs on another CPU. So at most half the CPUs this process may run on
 *   spin at once (places: a process-wide count, because chained queues
 *   share the CPUs; none on one CPU, where the peer can never be
 *   running), and a spin that ran out its time without finding anything
 *   did not pay: the queue keeps a moving average of unpaid spins, and
 *   above half, waits stop spinning (one probe spin per BLQ__PROBE_NS
 *   finds out when spins pay again). A look every BLQ__LOOK_NS, not every
 *   pause: a worker's look reads every lane's tail, the lines its
 *   producers write. Time, not rounds: a pause costs 10 to 140 cycles
 *   depending on the CPU.
 * - A yield pays when the peer is runnable but waits for our own CPU
 *   (more threads than cores: W1 has 2 producers and 2 workers on 2
 *   cores): sched_yield hands it the CPU at once, with no futex wake-up to
 *   pay later. Measured on W1: spins there ran out their time 93 times in
 *   100 (the peer was behind the spinner on its CPU), and W1 ran at
 *   105-175 ns/item spinning or sleeping at once against 74-92 with
 *   yielding looks. So a wait with no place, or whose spins do not pay,
 *   takes up to BLQ__SPIN_ROUNDS yielding looks instead.
 * - Neither, on a busy host: when processes outside the queue want the
 *   CPU, a yield hands it to one of them for its whole slice (with two
 *   CPU-bound threads beside W1, 85% of yields took 1 to 8 ms, against
 *   98% under 0.5 ms on a quiet host; blq ran 15x slower), and a spinner,
 *   CPU-bound, loses the head start the scheduler gives a woken sleeper.
 *   So every yield and every spin is timed: a yield that took longer than
 *   BLQ__STOLEN_NS, or a spin that saw such a gap between two of its
 *   clock reads, was preempted (stolen): that wait stops and sleeps (a
 *   wait loses one slice at most), and the queue keeps a moving average
 *   of stolen looks (1/8 weight each, shared by its threads, so all learn
 *   from each). Above a quarter the host counts as busy: waits sleep at
 *   once, except one probe per BLQ__PROBE_NS for the whole queue, which
 *   finds out when the host is quiet again (a probe that comes back at
 *   once halves the average: two in a row end the busy spell). A quiet
 *   host's odd stolen look (the hypervisor's, or a peer's long turn:
 *   under 2 in 100 on W1) does not trip it.
 * The clock is read only on these slow paths. Races on the averages or
 * the probe times lose an update at worst: they are hints. The place
 * count is exact: taken by a CAS, given back once.
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
/* Yielding looks a wait takes when it does not spin, on a quiet host. */
#define BLQ__SPIN_ROUNDS 16u
/* A yield longer than this, or a gap this long between two of a spin's
 * clock reads, ran someone else's whole slice: EEVDF's base slice is
 * 0.75 ms x (1 + log2 CPUs), and a quiet W1 had under 2% of its yields
 * above 0.5 ms. */
#define BLQ__STOLEN_NS 500000u
/* The moving averages are kept in 1/1024ths; above BLQ__STOLEN_BUSY of
 * stolen looks the host counts as busy, above BLQ__UNPAID_MAX of unpaid
 * spins the waits yield instead. */
#define BLQ__STOLEN_ONE 1024u
#define BLQ__STOLEN_BUSY (BLQ__STOLEN_ONE / 4)
#define BLQ__UNPAID_MAX (BLQ__STOLEN_ONE / 2)
/* While busy (or while spins do not pay), a queue's waits probe this
 * often at most. */
#define BLQ__PROBE_NS 100000000u

typedef struct blq__spin {
	/* On a line of its own: written on the slow path only, read by
	 * every wait. */
	alignas(BLQ__CACHELINE) _Atomic uint32_t stolen; /* of BLQ__STOLEN_ONE */
	_Atomic uint32_t unpaid;        /* spins that found nothing, likewise */
	_Atomic uint64_t probe_at;      /* busy: the next probe's earliest time */
	_Atomic uint64_t spin_probe_at; /* unpaid: the next probe spin's */
} blq__spin;

/* One wait's looks, on the waiting thread's stack. */
typedef struct blq__spinner {
	uint64_t until;   /* a spin ends here */
	uint64_t look_at; /* a spin's next look */
	uint64_t last;    /* a spin's last clock read, to see a preemption */
	unsigned rounds;  /* yielding looks left; 0 for a spin */
	bool spin;        /* a spin (holding a place), else yielding looks */
} blq__spinner;

/* Starts a wait's looks: a spin when may_spin, a place is free and spins
 * pay, else yielding looks. True: the caller looks for what it waits for
 * after each blq__spin_pause that returns true, and calls blq__spin_stop
 * if it finds it. False: looking cannot pay now (a busy host, no probe
 * due): sleep at once. Thread-safe.
 * may_spin is false for the waits for room (a batch's producer, the
 * timer thread, QoS's movers on a full egress): the workers free room a
 * hand at a time, and measured on W1-BATCH and RETRY (7 alternating runs
 * each) spinning there was 1.14x and 1.09x slower than yielding. */
bool blq__spin_start(blq__spin *s, blq__spinner *sp, bool may_spin);

/* Pauses (a spin) or yields (yielding looks) until the next look. False:
 * the looks are over (time or rounds up, or preempted) and a spin's place
 * is given back: sleep. */
bool blq__spin_pause(blq__spin *s, blq__spinner *sp);

/* Ends looks that found what they waited for (a spin's place back). */
void blq__spin_stop(blq__spin *s, blq__spinner *sp);

/* One wait's looks, start to end: after each pause, ending(ctx) (true:
 * stop looking) and then look(ctx) (true: found what it waits for). True
 * when a look found it; false when the looks ran out, could not pay or
 * ended: sleep (or leave). The waits call this rather than the three
 * calls above, so no exit forgets a spin's place. */
bool blq__spin_look(blq__spin *s, bool may_spin, bool (*ending)(void *), bool (*look)(void *),
		    void *ctx);

/* True while the host looks busy: waits then sleep at once. */
bool blq__spin_busy(const blq__spin *s);

/* How many yielding looks a wait may take: BLQ__SPIN_ROUNDS on a quiet
 * host; on a busy one none, or one when it is time to probe. */
unsigned blq__spin_rounds(blq__spin *s);

/* Moves the stolen average by one look, stolen or not. */
void blq__spin_note(blq__spin *s, bool stolen);

/* One yielding look, timed. When it was stolen, *rounds becomes 0: the
 * caller's look after it is its last, then it sleeps. */
void blq__spin_yield(blq__spin *s, unsigned *rounds);

/* How many threads of this process may spin at once (half the CPUs it may
 * run on, rounded down), and how many do now. For tests and status. */
unsigned blq__spin_places(void);
unsigned blq__spinning(void);

#endif
