/*
 * A SPIN model of blq's wait/wake protocol: the event count (util/ec.h,
 * util/ec.c) as the queue uses it, around a ring that gets both empty
 * (workers sleep on items_ec) and full (producers sleep on space_ec).
 * scripts/model_check.sh runs it; docs/model-check.md has the results.
 *
 * Design
 * - The event count, statement by statement as in C: blq__ec_prepare
 *   (waiters++, snapshot of seq, acknowledgement: pending = 0),
 *   blq__ec_cancel (waiters--, acknowledgement), blq__ec_wait (futex_wait,
 *   waiters--, acknowledgement), blq__ec_claim (a relaxed load of pending,
 *   the exchange), blq__ec_wake_slow (seq++, then futex_wake),
 *   blq__ec_notify (the StoreLoad fence and the load of waiters; a
 *   wake-one claims, so defers to a pending wake-up, a wake-all does not).
 * - futex_wait: in one step, if seq still equals the snapshot the caller
 *   blocks until a futex_wake picks it, else it returns at once (EAGAIN).
 *   futex_wake(1) wakes any one blocked sleeper (SPIN tries each),
 *   futex_wake(INT_MAX) all of them. A bump of seq wakes nobody; it only
 *   makes a later futex_wait with an older snapshot return, so a wake-up
 *   issued before its sleeper blocks is caught by the snapshot, not lost.
 *   seq itself is kept as what that comparison needs (`st`, below).
 * - The ring (util/ring.h), CAP slots, each FREE, FILLING (claimed by a
 *   producer's CAS on tail, not yet published full) or FULL; a consumer
 *   copies the item out and then frees the slot with its CAS on head
 *   (producers find room by the head), so a pop is one locked step. `sz`
 *   is tail - head, what blq__ring_items and blq__taken_items read.
 *   Items carry no payload. The producers' copy of the head (head_seen)
 *   is left out: it can only make a push look again at the head itself.
 * - Weak memory (x86-TSO), where it matters: the protocol's one plain
 *   store is a ring's publication (the release store of the slot's
 *   sequence after the CAS). It sits in its thread's store buffer (`sb`)
 *   until the thread's next locked instruction (every RMW here: the CASes,
 *   waiters++/--, the exchanges on pending, seq++) or fence drains it, or
 *   until it drains by itself at any moment. The latter is explored
 *   lazily: whenever another thread reads that slot, both "drained by now"
 *   and "not yet" are tried (a drain is seen through such reads only).
 *   All other accesses are sequentially consistent: the other writes are
 *   locked RMWs, and TSO keeps loads in order with loads.
 * - Producers (enqueue.c, engine_rings.c): push; when full, blq__place's
 *   slow path: prepare(space), re-check push (cancel on success), wait,
 *   push again. After a push, blq__handoff: its locked add on `left` as
 *   the StoreLoad barrier, the load of items.waiters, claim,
 *   wake_slow(items, 1); and blq__wake_all once the queue is closed.
 * - Workers (worker.c, next_item and after_take): woken and more items
 *   remain than the one it takes (sz > 1): notify(items, 1), the pass-on; the balancer's command STOP:
 *   notify(items, 1), leave; pop; prepare(items); re-check pop (cancel on
 *   success); closed: cancel, leave; command not RUN: cancel, look again;
 *   wait. After a take, the half-drain wake of producers: load of
 *   space.waiters (the take's CAS on head was the barrier: no fence), sz
 *   <= CAP/2, claim(space), wake_slow(space, all). At
 *   exit, blq__worker_main's notify(items, 1).
 * - The balancer (unless -DNOSTOP; needs NW >= 2): once, at any moment,
 *   tells the first worker to stop: cmd = STOP, notify(items, all)
 *   (blq__pool_stop). The other workers never stop.
 * - Close: the worker that takes the last item closes the queue (closed =
 *   1, then blq__wake_all's notify(items, all)). It comes only after every
 *   item was taken, so it cannot hide a lost wake-up of an item.
 * - A QoS egress thread (-DMOVER): one more sleeper on SPACE that leaves
 *   without pushing once the ring has room, passing its wake-up on.
 * - Left out: spurious wake-ups and timeouts (they only make a sleeper
 *   look again), spin_pop/spin_push (extra looks before announcing), the
 *   timer, the rest of QoS, pause, park (SLEEP), force close, idle_ec,
 *   the item payloads, seq wrap-around.
 *
 * Checked (pan -DSAFETY): no invalid end state, i.e. never everybody
 * blocked while an item waits in the ring, a producer still holds an item,
 * or a worker was not woken for the close: that is a lost wake-up; and at
 * the end (assertions) every item taken, the ring empty, no waiter left.
 * The progress labels (a take, a push) are for pan -l only: it finds the
 * cycle of wake-ups passed between workers while a producer's claimed
 * slot is not yet published (docs/model-check.md), not a lost wake-up.
 *
 * Broken variants (spin -DNAME), each must give an error trail:
 *   NO_TAKE_BARRIER   the take's freeing of its slot not a barrier before
 *                     after_take's load of space.waiters (modelled as the
 *                     ring before 2026-11-26 was: the free a buffered
 *                     store, EMPTYING until it drains): a producer sleeps
 *                     on space for good
 *   NO_HANDOFF_FENCE  blq__handoff's locked add not a barrier: workers
 *                     sleep for good over a published item
 *   NO_ACK            no acknowledgement in blq__ec_prepare
 *   ACK_BEFORE_SNAP   prepare acknowledges before it takes the snapshot
 *   NO_MOVER_PASS     (with MOVER) the egress thread woken on SPACE does
 *                     not pass the wake-up on: the producer sleeps for
 *                     good on a ring with room
 * and two that the model shows to be harmless for lost wake-ups:
 *   NO_ACK_WAIT       no acknowledgement when a wait returns or is
 *                     cancelled
 *   ALL_DEFERS        notify(n = 0) defers to pending like a wake-one
 *   NO_FENCE          no fence in blq__ec_notify: in this model no
 *                     notifier publishes through a plain store first (the
 *                     pop is a CAS, the producers' barrier is
 *                     blq__handoff's add); the code's retry and timer
 *                     paths, left out here, do, and keep the fence
 *
 * Sizes: NP producers (1..2), NW workers (1..3), K items per producer,
 * CAP ring slots (1..2). The defaults are one of model_check.sh's runs.
 */

#ifndef NP
#define NP 1
#endif
#ifndef NW
#define NW 2
#endif
#ifndef K
#define K 2
#endif
#ifndef CAP
#define CAP 1
#endif
#if NP < 1 || NP > 2 || NW < 1 || NW > 3 || CAP < 1 || CAP > 2
#error "NP 1..2, NW 1..3, CAP 1..2"
#endif
#if NW < 2
#undef STOP
#define NOSTOP
#endif
#ifndef NOSTOP
#define STOP
#endif

#ifdef MOVER
#define NM 1
#else
#define NM 0
#endif
#define N (NP * K)		/* items in all */
#define MV (NP + NW)		/* the mover's id (-DMOVER) */
#define NPROC (NP + NW + NM)	/* producers 0..NP-1, workers NP..MV-1, the mover */

#define ITEMS 0			/* items_ec: workers sleep here */
#define SPACE 1			/* space_ec: producers sleep here */

#define FREE 0
#define FILLING 1
#define FULL 2
#define EMPTYING 3

/* The two event counts. `seq` is only ever compared with a thread's
 * snapshot, so it is kept as what that comparison needs, per thread (each
 * thread here waits on one ec only: workers on items, producers on space):
 *   IDLE     no snapshot held (outside prepare .. wait/cancel)
 *   SNAP     snapshot taken, seq still equal to it
 *   MOVED    seq bumped since the snapshot
 *   ASLEEP   blocked in futex_wait (until a futex_wake picks it)
 * This is seq == snapshot exactly (but for wrap-around), four values a
 * thread. */
#define IDLE 0
#define SNAP 1
#define MOVED 2
#define ASLEEP 3
byte waiters[2];
bit pending[2];
byte st[NPROC];

/* The ring. */
byte slot[CAP];
byte head;			/* head % CAP */
byte sz;			/* tail - head */
/* Store buffers: 1 + the thread whose publication of this slot is not yet
 * in memory (0: none). A thread has at most one: its next CAS drains it. */
byte sb[CAP];

byte consumed;			/* items taken (bookkeeping, not protocol) */
bit closed;
bit stopcmd;			/* the first worker's command is STOP */

/* The publication of slot s reaches memory: FILLING -> FULL, EMPTYING ->
 * FREE (EMPTYING: NO_TAKE_BARRIER only). */
#define DRAIN(s) slot[s] = (slot[s] + 1) % 4; sb[s] = 0

/* x86: a locked instruction (and mfence) drains the thread's own store
 * buffer first. */
inline flush()
{
	if
	:: sb[0] == me + 1 -> DRAIN(0)
#if CAP > 1
	:: sb[1] == me + 1 -> DRAIN(1)
#endif
	:: else
	fi
}

/* Another thread's buffered publication of slot s may have drained by
 * the time this thread reads the slot, or not: both are explored. Drains
 * are only ever observed through such reads (and the owner's own locked
 * instructions), so draining lazily here, rather than in a process of its
 * own at every moment, loses no behaviour. */
inline observe(s)
{
	if
	:: sb[s] != 0 && sb[s] != me + 1 ->
		if
		:: DRAIN(s)
		:: skip
		fi
	:: else
	fi
}

#define LOCKED(stmt) atomic { flush(); stmt }

/* The StoreLoad barrier before a notifier reads `waiters`: the fence of
 * blq__ec_publish_then_waiters (NO_FENCE removes it), and the locked add
 * of blq__handoff that stands for it there (NO_HANDOFF_FENCE removes it).
 * The barrier and the load of `waiters` make one step: the barrier drains
 * the thread's own buffered store, and a drain is seen only by a thread
 * that reads the slot, which may drain it earlier itself (observe), so no
 * behaviour is lost by draining right at the load. */
#ifndef NO_FENCE
#define FENCE flush()
#else
#define FENCE skip
#endif
#ifndef NO_HANDOFF_FENCE
#define HANDOFF_FENCE flush()
#else
#define HANDOFF_FENCE skip
#endif

/* blq__ring_push: the slot at tail free -> CAS tail; the publication
 * (seq = 2*pos + 1) goes into the store buffer. A failed push makes no
 * CAS, so it drains nothing. */
inline push(ok)
{
	atomic {
		observe((head + sz) % CAP);
		if
		:: slot[(head + sz) % CAP] == FREE ->
			flush();
			slot[(head + sz) % CAP] = FILLING;
			sb[(head + sz) % CAP] = me + 1;
			sz++;
			ok = 1
		:: else -> ok = 0
		fi
	}
}

/* blq__ring_take of one: the slot at head full -> (copy out) CAS head,
 * which frees the slot. NO_TAKE_BARRIER: the free goes into the store
 * buffer instead, as if the CAS were no barrier. `last`: this take was
 * the N-th. */
inline pop(ok)
{
	atomic {
		observe(head);
		if
		:: slot[head] == FULL ->
			flush();
#ifdef NO_TAKE_BARRIER
			slot[head] = EMPTYING;
			sb[head] = me + 1;
#else
			slot[head] = FREE;
#endif
			head = (head + 1) % CAP;
			sz--;
			consumed++;
			last = (consumed == N);
			ok = 1
		:: else -> ok = 0
		fi
	}
}

inline ec_ack(e)
{
	LOCKED(pending[e] = 0)
}

inline ec_prepare(e)
{
	LOCKED(waiters[e]++);
#ifdef ACK_BEFORE_SNAP
	ec_ack(e);
	st[me] = SNAP;
#else
	st[me] = SNAP;		/* snapshot of seq */
#ifndef NO_ACK
	ec_ack(e)
#endif
#endif
}

inline ec_cancel(e)
{
	LOCKED(waiters[e]--; st[me] = IDLE);
#ifndef NO_ACK_WAIT
	ec_ack(e)
#endif
}

/* futex_wait: compare and block in one step; returns when woken (the
 * waker sets IDLE) or at once when seq moved. */
inline futex_wait()
{
	atomic {
		if
		:: st[me] == SNAP -> st[me] = ASLEEP
		:: else -> st[me] = IDLE
		fi;
		st[me] != ASLEEP
	}
}

inline ec_wait(e)
{
	futex_wait();
	LOCKED(waiters[e]--);
#ifndef NO_ACK_WAIT
	ec_ack(e)
#endif
}

/* seq++ (locked): every snapshot of this ec is out of date. */
#define BUMP(i) if :: st[i] == SNAP -> st[i] = MOVED :: else fi
/* futex_wake(n): one sleeper of this ec (any), or all (n == 0). */
#define WAKE(i) if :: st[i] == ASLEEP -> st[i] = IDLE :: else fi
#define WAKE_ONE(i) :: st[i] == ASLEEP -> st[i] = IDLE
/* The workers' half-drain wake of producers: one sleeper (worker.c,
 * space_wake), or every one with -DSPACE_WAKE_ALL (the code before). */
#ifdef SPACE_WAKE_ALL
#define SPACE_WAKE_N 0
#else
#define SPACE_WAKE_N 1
#endif
inline ec_wake_slow(e, n)
{
	atomic {
		flush();
		if
		:: e == ITEMS ->
			BUMP(NP);
#if NW > 1
			BUMP(NP + 1);
#endif
#if NW > 2
			BUMP(NP + 2);
#endif
		:: else ->
			BUMP(0);
#if NP > 1
			BUMP(1);
#endif
#ifdef MOVER
			BUMP(MV);
#endif
		fi
	}
	atomic {
		if
		:: e == ITEMS && n == 0 ->
			WAKE(NP);
#if NW > 1
			WAKE(NP + 1);
#endif
#if NW > 2
			WAKE(NP + 2);
#endif
		:: e == ITEMS && n != 0 ->
			if
			WAKE_ONE(NP)
#if NW > 1
			WAKE_ONE(NP + 1)
#endif
#if NW > 2
			WAKE_ONE(NP + 2)
#endif
			:: else
			fi
		:: e == SPACE && n == 0 ->
			WAKE(0);
#if NP > 1
			WAKE(1);
#endif
#ifdef MOVER
			WAKE(MV);
#endif
		:: e == SPACE && n != 0 ->
			if
			WAKE_ONE(0)
#if NP > 1
			WAKE_ONE(1)
#endif
#ifdef MOVER
			WAKE_ONE(MV)
#endif
			:: else
			fi
		fi
	}
}

/* blq__ec_claim: a relaxed load of pending, and only when it reads 0 the
 * exchange. One step: when the load reads 1 nothing is written, and when
 * it reads 0 the exchange decides; either way the outcome is that of the
 * whole claim taken at the one moment that decided it. */
inline ec_claim(e, ok)
{
	atomic {
		if
		:: pending[e] == 0 -> flush(); pending[e] = 1; ok = 1
		:: else -> ok = 0
		fi
	}
}

/* blq__ec_notify: publish_then_waiters, then a wake-one claims (defers
 * to a pending wake-up), a wake-all does not. */
inline ec_notify(e, n)
{
	atomic { FENCE; ok = (waiters[e] != 0) };
	if
	:: ok ->
#ifndef ALL_DEFERS
		if
		:: n == 0
		:: else -> ec_claim(e, ok)
		fi;
#else
		ec_claim(e, ok);
#endif
		if
		:: ok -> ec_wake_slow(e, n)
		:: else
		fi;
		ok = 0
	:: else
	fi
}

proctype Producer(byte me)
{
	bit ok;
	byte k;

next:
	if
	:: k == K -> goto done
	:: else
	fi;
place:
	push(ok);
	if
	:: ok -> goto pushed
	:: else
	fi;
	ec_prepare(SPACE);
	push(ok);
	if
	:: ok -> ec_cancel(SPACE); goto pushed
	:: else
	fi;
	ec_wait(SPACE);
	goto place;
pushed:
progress_push:
	ok = 0;
	k++;
	/* blq__handoff: the locked add on `left` is the StoreLoad barrier. */
	atomic { HANDOFF_FENCE; ok = (waiters[ITEMS] != 0) };
	if
	:: ok ->
		ec_claim(ITEMS, ok);
		if
		:: ok -> ec_wake_slow(ITEMS, 1)
		:: else
		fi;
		ok = 0
	:: else
	fi;
	if
	:: closed -> ec_notify(ITEMS, 0)
	:: else
	fi;
	goto next;
done:
	skip
}

proctype Worker(byte me)
{
	bit ok;
	bit took;
	bit slept;
	bit last;

look:
	/* Woken while more items remain than the one we take: pass a
	 * wake-up on. */
	if
	:: slept && sz > 1 -> ec_notify(ITEMS, 1); slept = 0
	:: else
	fi;
#ifdef STOP
	/* The command: STOP passes the pending wake-up on, and leaves. */
	if
	:: me == NP && stopcmd -> ec_notify(ITEMS, 1); goto out
	:: else
	fi;
#endif
	pop(took);
	if
	:: took -> goto taken
	:: else
	fi;
	ec_prepare(ITEMS);
	pop(took);
	if
	:: took -> ec_cancel(ITEMS); goto taken
	:: else
	fi;
	if
	:: closed -> ec_cancel(ITEMS); goto out
	:: else
	fi;
#ifdef STOP
	if
	:: me == NP && stopcmd -> ec_cancel(ITEMS); goto look
	:: else
	fi;
#endif
	ec_wait(ITEMS);
	slept = 1;
	goto look;
taken:
progress_take:			/* for pan -l (non-progress cycles), see the doc */
	took = 0;
	slept = 0;		/* next_item returned */
	/* after_take: space.waiters (after the take's CAS: no fence), a
	 * wake-up pending (blq__ec_pending: then no claim can succeed, and
	 * the ring's size is not read), ring at half, claim, wake one. */
	atomic { ok = (waiters[SPACE] != 0) };
	if
	:: ok -> atomic { ok = (pending[SPACE] == 0) }
	:: else
	fi;
	if
	:: ok ->
		if
		:: sz <= CAP / 2 ->
			ec_claim(SPACE, ok);
			if
			:: ok -> ec_wake_slow(SPACE, SPACE_WAKE_N)
			:: else
			fi
		:: else
		fi;
		ok = 0
	:: else
	fi;
	/* The last item taken: close (closed, then blq__wake_all). */
	if
	:: last -> last = 0; LOCKED(closed = 1); ec_notify(ITEMS, 0)
	:: else
	fi;
	goto look;
out:
	/* blq__worker_main's exit: pass the pending wake-up on. */
	ec_notify(ITEMS, 1)
}

#ifdef MOVER
/* A QoS egress thread's wait for room in the egress (qos/egress.c,
 * wait_room), once: it sleeps on SPACE beside the producers (and the
 * timer) while the ring is full, and leaves once it has room without
 * pushing anything (it found nothing to move). Woken, it passes the
 * wake-up on (unless NO_MOVER_PASS): the workers' half-drain wakes one
 * sleeper and counts on it to push. */
proctype Mover(byte me)
{
	bit ok;
	bit slept;

	atomic { ok = (sz < CAP) };
	if
	:: ok -> goto roomy
	:: else
	fi;
again:
	ec_prepare(SPACE);
	atomic { ok = (sz < CAP) };
	if
	:: ok ->
		ec_cancel(SPACE);
#ifndef NO_MOVER_PASS
		if
		:: slept -> ec_notify(SPACE, 1)
		:: else
		fi;
#endif
		goto roomy
	:: else
	fi;
	ec_wait(SPACE);
	slept = 1;
	goto again;
roomy:
	skip
}
#endif

#ifdef STOP
/* blq__pool_stop for the first worker, once, at any moment. */
proctype Balancer()
{
	byte me = NPROC;	/* no buffered store of its own */
	bit ok;

	stopcmd = 1;
	ec_notify(ITEMS, 0)
}
#endif

init
{
	atomic {
		run Producer(0);
#if NP > 1
		run Producer(1);
#endif
		run Worker(NP);
#if NW > 1
		run Worker(NP + 1);
#endif
#if NW > 2
		run Worker(NP + 2);
#endif
#ifdef STOP
		run Balancer();
#endif
#ifdef MOVER
		run Mover(MV);
#endif
	}
	/* Everybody else has finished. */
	_nr_pr == 1;
	assert(consumed == N);
	assert(sz == 0 && waiters[ITEMS] == 0 && waiters[SPACE] == 0)
}
