/*
 * A SPIN model of blq's lanes (queue/lanes.h): a ring per producer behind
 * one exact capacity, the admission counter `held`, the workers' stealing,
 * the producers' sleep on a full queue and its wake-up, and the close.
 * The event count is ec.pml's, statement by statement (that model checks
 * it on its own); this one checks what lanes put around it.
 * scripts/model_check.sh runs it; docs/model-check.md has the results.
 *
 * The code modelled: main at 05f4f3e: the spill count, and the lane
 * credit (a lane's owner reserves BLQ__LANE_CREDIT places of held at a
 * time, kept in the low bits of its cell's `entered`; a producer that
 * finds held full takes what it needs of the other lanes' credit); and
 * the transit count, the fix of docs/model-check.md's "Credit" as it is
 * being written on main after d5329d0 (queue/lanes.c blq__lanes_admit):
 * held's word counts the refills in transit above the places (bits
 * 48..63, BLQ__HELD_TRANSIT_ONE), a refill with extras counts itself in
 * with its CAS and out after keep_credit, and a producer that finds the
 * count full and no credit to take waits while one is in transit (the
 * code yields and passes again, for at most BLQ__TRANSIT_WAIT_NS, 10 ms:
 * that bound is not modelled, the wait here is unbounded). A thread
 * without a lane steals credit too (LANELESS).
 *
 * Design
 * - Rings: NP lanes of one slot each (queue/rings.c push_reserved: the
 *   owner's push is blq__ring_reserve_sp, the tail a plain store) and one
 *   shared ring of CAP slots (streams = 1; its tail moved by a CAS), so a
 *   lane is smaller than capacity whenever CAP > 1 and a producer's second
 *   item spills. A slot is FREE, FILLING (position claimed, publication
 *   not yet in memory) or FULL, and carries its item (producer, number).
 *   A take is one locked step: the copy out and the CAS on head that
 *   frees the slot (util/ring.h blq__ring_take). The lane's tail is seen
 *   by its owner only (workers find items by the slots' sequence
 *   numbers), so it is not modelled apart from the slot it fills.
 * - x86-TSO as in ec.pml: a slot's publication (the release store of its
 *   sequence number) sits in its producer's store buffer until that
 *   thread's next locked instruction, or drains by itself at any moment
 *   (explored lazily, when another thread reads the slot).
 * - held and the credit (lanes.c blq__lanes_admit, enqueue.c enter):
 *   every producer owns a lane, and every item is a single undelayed
 *   enqueue, so each goes through the fused add: one locked add on its
 *   cell's `entered` that, with credit there, counts it in and takes a
 *   place (it then pushes at once, blq__push_placed); at credit 0 it
 *   borrows (not yet counted in) and a second add undoes that and counts
 *   it in, both before `closed` is read. A place taken from the credit
 *   of a closed queue goes back (blq__lanes_unspend). No credit: the
 *   admission, a load of held (seq_cst) and below CAP a CAS to held +
 *   min(CAP - held, CR) and, with extras, one refill in transit, one
 *   place for the item, the rest in transit until keep_credit adds
 *   them to the lane's credit (a locked add), then the transit count
 *   down (a locked sub); held's count full: the other lane's credit, a
 *   load and a CAS taking one (take_others_credit; its own lane's
 *   credit is 0 there and left out); none: a load of held, and while a
 *   refill is in transit the admission again, else full. CR stands for BLQ__LANE_CREDIT (32): CR 2 with CAP 2 is a
 *   refill that can take the whole queue (a queue of 32 or less), with
 *   CAP 3 a credit smaller than the capacity; CR 3 with CAP 3 a credit
 *   more than half the capacity (a queue of less than 64); with CAP 1
 *   (or CR 1) a refill takes one place and keeps no credit (the fused
 *   add still borrows and undoes). Then the push. The
 *   reservation guarantees room:
 *   the lane, else the shared ring (push_reserved's abort() is an
 *   assertion here). Spilling (lanes.h, "Order"): once the lane was full
 *   the producer keeps to the shared ring until that ring's head has
 *   passed its last spilled item (spill_over). A lane found full begins
 *   a spill episode: spills++ (seq_cst) before the push into the shared
 *   ring.
 * - Workers (worker.c next_item): load spills, look at the home lane
 *   (index modulo NP), the other lanes, then the shared ring, one take
 *   attempt a step (blq__pop_rings); the shared ring's take is
 *   blq__ring_take_if: the copy and the load of spills (nothing when it
 *   moved since), then the CAS on head; nothing found and spills moved:
 *   look again. Right after a take release_held (pop_counted: a seq_cst
 *   fetch_sub, the StoreLoad barrier), and once next_item has returned
 *   after_take (space.waiters, blq__ring_items <= CAP/2, claim, wake
 *   all; blq__ring_items is blq__lanes_items, held less the lanes'
 *   credit: a load of held, then one step for the credit). Sleep:
 *   prepare(items), look again (cancel on success), closed and no
 *   producer in flight: one more look, cancel, exit when empty; else
 *   wait. The pass-on when woken and held less the credit > 1
 *   (blq__taken_items). At exit notify(items, 1).
 * - Producers (enqueue.c, engine_rings.c place): the fused add (and its
 *   undo), load of closed (refuse: leave and stop), with a place from the
 *   credit the push, else the admission; when full: prepare(space),
 *   admission again (cancel on success), closed: cancel, refuse; wait;
 *   closed: refuse; again. -DTRY: try-enqueue, a full queue refuses the
 *   item (BLQ_EFULL) after two looks (rings_admit's blq__push_any, then
 *   place()'s) and the producer goes on to its next. After a push
 *   blq__handoff: left++ (locked, the
 *   barrier), items.waiters, claim, wake one; closed: blq__wake_all.
 * - The closer (close.c begin_close, then the finish): closed = 1
 *   (seq_cst store), blq__wake_all (items and space, wake-alls), then
 *   waits for every producer to leave and every worker to exit. By default
 *   it closes once the producers have returned (the application joins
 *   them, then closes), so every item must get in and be taken: a close
 *   cannot hide a producer's lost wake-up. -DCLOSE_ANY: it closes at any
 *   moment, producers get refused, and the close protocol (entered, then
 *   closed; the workers' sum of left, then entered) is what is checked.
 * - blq__inflight: all `left` then all `entered`, two loads here.
 *
 * Checked (pan -DSAFETY): no invalid end state (a thread asleep for good
 * while there is an item to take or room to push: a lost wake-up; or a
 * worker that never exits, or a closer that never finishes); assertions:
 * held's count in [0, CAP] (a decrement below 0 borrows from the transit
 * bits: the count reads above CAP) and the refills in transit at most the
 * lanes, the rings never holding more than CAP items (exact capacity);
 * items in the rings + the lanes' credit <= held's count at every step
 * (what blq__lanes_items = count - credit relies on: it never counts an
 * item out, nor a place twice); places on their way to a credit only
 * while held counts a refill in transit; whenever no place is between its
 * reservation and its push, between a take and its release, or in transit
 * to a credit, held's count equals the items in the rings plus the
 * credit; the reservation always finds
 * a slot; every item taken at most once; at the end every accepted item
 * taken once, held's count equal to the credit left in the lanes and
 * nothing in transit, no waiter left; with -DTRY, a refusal only when every other lane's credit was 0
 * at some moment of the attempt (no idle credit makes a queue refuse);
 * a worker takes each
 * producer's items in the order they were enqueued (lanes.h, "Order";
 * -DNO_ORDER_CHECK leaves that out).
 *
 * Broken variants (spin -DNAME), each must give an error trail:
 *   RELEASE_EARLY       release_held before the take's CAS on head (a
 *                       worker that finds a full slot releases, then
 *                       takes; gives the unit back when it loses the
 *                       race): the rings hold CAP + 1 items
 *   NO_SPACE_WAKE       after_take's wake of space_ec left out: a
 *                       producer sleeps for good on a drained queue
 *   NO_RELEASE_BARRIER  release_held not a barrier before after_take's
 *                       load of space.waiters (the load passes the sub,
 *                       as a non-x86 RMW without a fence may): same
 *   CLOSED_FIRST        (with CLOSE_ANY) a producer reads closed before
 *                       it counts itself in: the workers exit and its
 *                       item stays in a ring
 *   NO_SPILL_GUARD      no spill count (the code at 4f64a50): a worker
 *                       whose look passed a lane before the producer's
 *                       older item got there takes the newer, spilled
 *                       one first
 *   NO_THIEF            (with TRY) no take_others_credit: a producer
 *                       refused while the other lane's credit sat idle
 *   UNDO_LATE           (with CLOSE_ANY) the borrow undone after `closed`
 *                       is read: a producer not yet counted in reads it
 *                       open, the worker exits, its item stays in a ring
 *   WAKE_HELD           after_take and the pass-on count held, not held
 *                       less the credit (CAP 3, CR 3, NO_TRANSIT_WAIT): a
 *                       producer that found the credit in transit sleeps
 *                       for good (the transit wait hides it in the sizes
 *                       tried, but the code's gives up after 10 ms)
 *   NO_TRANSIT_WAIT     (with TRY ROOM_CHECK ROOM_STRICT) no wait for a
 *                       refill in transit (the code before the transit
 *                       count): refused while a refill's extras were on
 *                       their way to its credit
 *   TRANSIT_EARLY       the refill counts itself out of transit before
 *                       keep_credit: places in transit while held says
 *                       none are (QUIET)
 *
 * -DROOM_CHECK (with TRY) asserts more: a refusal only when held's count
 * less the credit was at capacity at some moment of the call (places in
 * transit to a credit counted as taken). -DROOM_STRICT: at capacity with
 * no refill in transit (places in transit count as free). The code's
 * protocol, GEN (the default), passes it in every size tried; the look
 * at transit alone (NO_GEN, the first cut of the fix) passes with 1 item
 * per producer, where NO_TRANSIT_WAIT fails, and fails with 2
 * (docs/model-check.md, "Credit": a refill that begins and ends between
 * the thief's look at the count and its look at transit). The
 * candidates tried on the way, by hand:
 *   RECHECK_COUNT       refused only when the second load of held shows
 *                       the count full too: still fails, with 3 items
 *   FIRST_TRANSIT       refused only when the second load shows the
 *                       count full and both loads nothing in transit:
 *                       fails with 5 items for producer 0 (a refill that
 *                       begins after the first load and lands before the
 *                       second; GEN's count of refills begun sees it)
 *   GEN (the code's)    held's word also counts the refills begun (gen,
 *                       above transit): refused only when the second
 *                       load finds the word as the failed reservation
 *                       saw it, with nothing in transit (no refill began
 *                       between, so no credit appeared after the look
 *                       at it): passes in every size tried
 *   NO_GEN              the look at transit alone: fails with 2 items
 *
 * Sizes: NP producers (1..2), NW workers (1..2), K items per producer
 * (1..5, K + K1 at most 8: a bit per item; K1 for producer 1, at most
 * K), CAP capacity (1..4), CR credit
 * (1..4, default 2).
 */

/* The code's protocol (lanes.c blq__lanes_admit): the refills begun in
 * held's word, a refusal only when the word did not move between the
 * two looks with nothing in transit. NO_GEN: the look at transit alone
 * (a broken variant now); RECHECK_COUNT, FIRST_TRANSIT: the candidates
 * that fell short. */
#if !defined(NO_GEN) && !defined(RECHECK_COUNT) && !defined(FIRST_TRANSIT)
#define GEN
#endif

#ifndef NP
#define NP 2
#endif
#ifndef NW
#define NW 2
#endif
#ifndef K
#define K 2
#endif
#ifndef CAP
#define CAP 2
#endif
/* BLQ__LANE_CREDIT: the places a lane's owner reserves at once (32 in
 * the code). CR 1 reserves one place per item, as before the credit. */
#ifndef CR
#define CR 2
#endif
/* K1: producer 1's items, K unless given (at most K). */
#ifndef K1
#define K1 K
#endif
#if NP < 1 || NP > 2 || NW < 1 || NW > 2 || K < 1 || K > 5 || K1 < 1 || K1 > K || K + K1 > 8 || CAP < 1 || CAP > 4 || CR < 1 || CR > 4
#error "NP 1..2, NW 1..2, K 1..5, K1 1..K, K + K1 <= 8, CAP 1..4, CR 1..4"
#endif

#if NP > 1
#define N (K + K1)		/* items in all */
#else
#define N K
#endif
#define NPROC (NP + NW)		/* producers 0..NP-1, workers NP..NPROC-1 */
#define NS (NP + CAP)		/* slots: lane p is slot p, the shared ring NP.. */

#define ITEMS 0
#define SPACE 1

#define FREE 0
#define FILLING 1
#define FULL 2

/* Event counts, as in ec.pml: per thread IDLE, SNAP, MOVED, ASLEEP. */
#define IDLE 0
#define SNAP 1
#define MOVED 2
#define ASLEEP 3
byte waiters[2];
bit pending[2];
byte st[NPROC];

byte slot[NS];
byte item[NS];			/* 1 + producer * K + number; 0: none */
byte sb[NS];			/* 1 + the thread whose publication is buffered */
byte bs[NP];			/* 1 + the slot a producer's buffer holds */
byte shead;			/* the shared ring's head, tail (positions) */
byte stail;

byte spills;			/* spill episodes begun (lanes.spills) */
/* The admission counter, one word as in the code: the count of places
 * reserved (BLQ__HELD_MASK, the low 48 bits there; CNT here) and above
 * it the refills in transit (BLQ__HELD_TRANSIT_ONE, 1 << 48; TONE here,
 * TRN the number). Every step that changes it is one locked instruction
 * on the whole word; a count taken below 0 borrows from the transit bits,
 * as it would in the code (the assertions catch it). */
byte held;
#define TONE 16
#define CNT(h) ((h) % TONE)
#define TRN(h) ((h) / TONE)
/* Each lane's credit: the low bits of its owner's cell's `entered`
 * (internal.h). The borrow (low bits 0xFFFF while the owner's add is
 * undone) is not a variable: it happens only at credit 0, nobody but the
 * owner adds, so the thieves find 0 as they would find it borrowed; what
 * matters of it, that the owner is not yet counted in `entered`, is the
 * producer's place between its two adds. */
byte cred[NP];
byte occ;			/* items in the rings (claimed slots included) */
byte win;			/* places of one item: between reserve and push, take and release */
byte tr;			/* places reserved as credit, not yet added to it (keep_credit) */
/* LANELESS: producer 1 owns no lane (a thread beyond the lanes); the
 * workers look at lane 0 only (`made` is 1). NL: the lanes. */
#ifdef LANELESS
#if NP != 2
#error "LANELESS needs NP 2"
#endif
#define LL (me == 1)
#define NL 1
#else
#define LL 0
#define NL NP
#endif
byte entered;
byte left;
bit closed;
#ifdef GEN
/* GEN: refills begun, in held's word above the transit count (one word:
 * changed only with held, in the same step). */
byte gen;
#endif

/* Bookkeeping, not protocol. */
byte once;			/* bit per item taken */
byte consumed;
byte accepted;
byte pdone;			/* producers returned */
byte wdone;			/* workers exited */

#define DRAIN(s) slot[s] = FULL; bs[sb[s] - 1] = 0; sb[s] = 0

inline flush()
{
	if
	:: me < NP && bs[me] != 0 ->
		slot[bs[me] - 1] = FULL; sb[bs[me] - 1] = 0; bs[me] = 0
	:: else
	fi
}

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

#if NP > 1
#define CREDS (cred[0] + cred[1])
#else
#define CREDS cred[0]
#endif

/* held's count never above capacity, and it covers the items in the
 * rings and the lanes' credit (occ + credit <= count: what
 * blq__lanes_items = count - credit relies on to count every item); no
 * more refills in transit than lane owners, and places in transit to a
 * credit only while held says a refill is in transit (what a producer
 * that finds the count full relies on to wait for them); count == items +
 * credit whenever no place is between reserve and push, take and release,
 * or in transit to a lane's credit. */
#define QUIET assert(CNT(held) <= CAP && TRN(held) <= NP && occ <= CAP && \
		occ + CREDS <= CNT(held) && (tr == 0 || TRN(held) > 0)); \
	if :: win == 0 && tr == 0 -> assert(CNT(held) == occ + CREDS) :: else fi

/* ---- the event count (ec.pml) ---- */

inline ec_ack(e)
{
	LOCKED(pending[e] = 0)
}

inline ec_prepare(e)
{
	LOCKED(waiters[e]++);
	st[me] = SNAP;
	ec_ack(e)
}

inline ec_cancel(e)
{
	LOCKED(waiters[e]--; st[me] = IDLE);
	ec_ack(e)
}

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
	ec_ack(e)
}

#define BUMP(i) if :: st[i] == SNAP -> st[i] = MOVED :: else fi
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
		:: else ->
			BUMP(0);
#if NP > 1
			BUMP(1);
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
		:: e == ITEMS && n != 0 ->
			if
			WAKE_ONE(NP)
#if NW > 1
			WAKE_ONE(NP + 1)
#endif
			:: else
			fi
		:: e == SPACE && n == 0 ->
			WAKE(0);
#if NP > 1
			WAKE(1);
#endif
		:: e == SPACE && n != 0 ->
			if
			WAKE_ONE(0)
#if NP > 1
			WAKE_ONE(1)
#endif
			:: else
			fi
		fi
	}
}

inline ec_claim(e, ok)
{
	atomic {
		if
		:: pending[e] == 0 -> flush(); pending[e] = 1; ok = 1
		:: else -> ok = 0
		fi
	}
}

inline ec_notify(e, n)
{
	atomic { flush(); ok = (waiters[e] != 0) };
	if
	:: ok ->
		if
		:: n == 0
		:: else -> ec_claim(e, ok)
		fi;
		if
		:: ok -> ec_wake_slow(e, n)
		:: else
		fi;
		ok = 0
	:: else
	fi
}

/* blq__wake_all: the items and space event counts (the others are not
 * modelled). */
inline wake_all()
{
	ec_notify(ITEMS, 0);
	ec_notify(SPACE, 0)
}

/* ---- producers ---- */

/* Ghosts for -DTRY (producers that try-enqueue: a full queue refuses
 * with BLQ_EFULL instead of waiting). cz, bit 2p + i: lane i's credit
 * was 0 at some moment since producer p's admission began; a refusal
 * needs every other lane's bit (no lane kept idle credit all through the
 * attempt). -DROOM_CHECK adds fs, bit p: held's count less the credit
 * was at capacity at some moment since p's admission began (the queue
 * was full while it tried); a refusal needs it too. -DROOM_STRICT: at
 * capacity with no refill in transit (places on their way to a credit
 * count as free). FULLNOW is evaluated at every step that can make it
 * true: a reservation (the count up), a place taken from a credit (the
 * credit down), the end of a transit. */
#ifdef TRY
byte efulls;
byte cz;
#define ZB(p, i) (1 << (2 * (p) + (i)))
#define ZERO(i) if :: cred[i] == 0 -> cz = cz | ZB(0, i) | ZB(1, i) :: else fi
#ifdef ROOM_CHECK
byte fs;
#ifdef ROOM_STRICT
/* Places in transit to a credit count as free. */
#define FULLNOW if :: CNT(held) - CREDS >= CAP && TRN(held) == 0 -> fs = 3 :: else fi
#else
#define FULLNOW if :: CNT(held) - CREDS >= CAP -> fs = 3 :: else fi
#endif
#else
#define FULLNOW skip
#endif
#define SPENT(i) ZERO(i); FULLNOW
#else
#define SPENT(i) skip
#define FULLNOW skip
#endif

/* enqueue.c enter() for a lane's owner, one undelayed item: the one
 * locked add of BLQ__ENTER_ONE - 1 on its cell's `entered`. With credit
 * it counts the producer in and takes a place (placed: win, a place of
 * this item); at credit 0 it borrows: the low bits go to 0xFFFF and the
 * count above them stays as it was, so the producer is not yet counted
 * in. undo() is the second add (+1): the low bits back to 0, the count
 * in. */
inline enter()
{
	atomic {
		flush();
		if
		:: cred[me] > 0 -> cred[me]--; win++; entered++; placed = 1; SPENT(me); QUIET
		:: else
		fi
	}
}

inline undo()
{
	if
	:: !placed -> LOCKED(entered++)
	:: else
	fi
}

/* blq__lanes_admit(q, l, 1) after enter() found no credit (so its own
 * take_credit finds 0: only the owner adds to its credit, and it has not
 * since; left out, in the first pass and in take_others_credit's look at
 * our own lane on every pass). The loop, one pass a try:
 * - lanes_reserve asks for BLQ__LANE_CREDIT (a lane's owner; a thread
 *   without a lane, LANELESS, asks for the one place it wants): a load of
 *   held (seq_cst, the re-check of a producer about to sleep) and, the
 *   count below CAP, a CAS adding k = min(CAP - count, CR) to the count
 *   and, when k is more than the place wanted (extras for the credit),
 *   TONE, one refill in transit; one step (the CAS loop is the CAS that
 *   succeeds). One place for this item (win), the rest in transit (tr).
 * - The count full: take_others_credit, the other lane's credit (ours is
 *   0): a load, and above 0 a CAS taking one. NO_THIEF: left out.
 * - Nothing: in_transit, a load of held (seq_cst): a refill in transit,
 *   another pass (the code yields first, and gives up after
 *   BLQ__TRANSIT_WAIT_NS, about 10 ms: not modelled, the wait here has no
 *   bound); none, the queue is full (ok 0). NO_TRANSIT_WAIT: full at
 *   once, as the code was before the transit count.
 * A place got, the extras of a refill go to the lane's credit
 * (keep_credit: its load of the credit finds 0, as above, and keeps all:
 * one locked add), then the refill counts itself out of transit (a
 * locked sub of TONE, seq_cst). TRANSIT_EARLY: the sub before the add. */
inline admit()
{
	do
	:: atomic {
			if
			:: CNT(held) < CAP ->
				flush();
				if
				:: LL -> got = 1
				:: !LL && CAP - CNT(held) < CR -> got = CAP - CNT(held)
				:: else -> got = CR
				fi;
				held = held + got + (got > 1 -> TONE : 0);
#ifdef GEN
				gen = gen + (got > 1 -> 1 : 0);
#endif
				win++;
				tr = tr + got - 1;
				ok = 1;
				FULLNOW;
				QUIET
			:: else ->
				ok = 0;
#if defined(GEN)
				wt = held;
				wg = gen
#elif defined(FIRST_TRANSIT)
				wt = held
#endif
			fi
		};
		if
		:: ok -> break
		:: else
		fi;
#if NP > 1 && !defined(NO_THIEF)
		atomic {
			if
			:: cred[1 - me] > 0 ->
				flush();
				cred[1 - me]--;
				win++;
				ok = 1;
				SPENT(1 - me);
				QUIET
			:: else
			fi
		};
		if
		:: ok -> break
		:: else
		fi;
#endif
#if defined(NO_TRANSIT_WAIT)
		break
#elif defined(GEN)
		if
		:: held == wt && gen == wg && TRN(held) == 0 -> break
		:: else
		fi
#elif defined(FIRST_TRANSIT)
		if
		:: TRN(wt) == 0 && TRN(held) == 0 && CNT(held) >= CAP -> break
		:: else
		fi
#elif defined(RECHECK_COUNT)
		if
		:: TRN(held) == 0 && CNT(held) >= CAP -> break
		:: else
		fi
#else
		if
		:: TRN(held) == 0 -> break
		:: else
		fi
#endif
	od;
#if defined(GEN)
	wt = 0;
	wg = 0;
#elif defined(FIRST_TRANSIT)
	wt = 0;
#endif
	if
	:: got > 1 ->
#ifdef TRANSIT_EARLY
		LOCKED(held = held - TONE; FULLNOW; QUIET);
		LOCKED(cred[me] = cred[me] + got - 1; tr = tr - got + 1; QUIET)
#else
		LOCKED(cred[me] = cred[me] + got - 1; tr = tr - got + 1; QUIET);
		LOCKED(held = held - TONE; FULLNOW; QUIET)
#endif
	:: else
	fi;
	got = 0
}

/* push_reserved of one item: the lane (reserve_sp: room by its head, a
 * plain store of the tail, the slot's publication buffered) unless it is
 * full or spilled items of ours may still wait in the shared ring. A lane
 * found full begins a spill: spills++ (seq_cst, locked), then, as when
 * still spilling, the shared ring (a CAS on its tail, which drains our
 * buffer; its room by its head), spilling from then on. */
inline push_reserved()
{
	atomic {
		assert(bs[me] == 0);
		if
		:: LL -> ok = 0
		:: !LL && (!spilling || shead >= spill_end) && slot[me] == FREE ->
			spilling = 0;
			slot[me] = FILLING;
			item[me] = 1 + me * K + k;
			sb[me] = me + 1;
			bs[me] = me + 1;
			occ++;
			win--;
			QUIET;
			ok = 1
		:: !LL && (!spilling || shead >= spill_end) && slot[me] != FREE ->
#ifndef NO_SPILL_GUARD
			flush();
			spills++;
#endif
			ok = 0
		:: else -> ok = 0
		fi
	}
	if
	:: !ok ->
		atomic {
			/* Cannot fail: held reserved the room (the abort). */
			assert(stail - shead < CAP);
			flush();
			s = NP + stail % CAP;
			assert(slot[s] == FREE);
			slot[s] = FILLING;
			item[s] = 1 + me * K + k;
			sb[s] = me + 1;
			bs[me] = s + 1;
			stail++;
			if
			:: !LL ->
				spilling = 1;
				spill_end = stail
			:: else
			fi;
			s = 0;
			occ++;
			win--;
			QUIET
		}
	:: else
	fi;
	ok = 0
}

proctype Producer(byte me)
{
	bit ok;
	bit placed;
	bit spilling;
	byte spill_end;
	byte k;
	byte s;
	byte got;
#if defined(GEN)
	byte wt;		/* held and gen as the failed reservation saw them */
	byte wg;
#elif defined(FIRST_TRANSIT)
	byte wt;		/* held as the failed reservation saw it */
#endif

next:
	if
	:: k == K && me == 0 -> goto done
	:: k == K1 && me == 1 -> goto done
	:: else
	fi;
#if defined(CLOSED_FIRST)
	if
	:: closed -> enter(); undo(); goto refuse
	:: else
	fi;
	enter();
	undo();
#elif defined(UNDO_LATE)
	/* The borrow undone after `closed` is read. */
	enter();
	if
	:: closed -> undo(); goto refuse
	:: else
	fi;
	undo();
#else
#ifdef LANELESS
	if
	:: LL ->
		/* enter() without a lane: one add of BLQ__ENTER_ONE, counted
		 * in, no credit. */
		LOCKED(entered++)
	:: else ->
		enter();
		undo()
	fi;
#else
	enter();
	undo();
#endif
	if
	:: closed -> goto refuse
	:: else
	fi;
#endif
	if
	:: placed -> placed = 0; goto push
	:: else
	fi;
#ifdef TRY
	/* The ghosts: the attempt begins. */
	atomic {
		cz = cz & ~(ZB(me, 0) | ZB(me, 1));
		ZERO(0);
#if NP > 1
		ZERO(1);
#endif
#ifdef ROOM_CHECK
		fs = fs & ~(1 << me);
		FULLNOW;
#endif
	}
#endif
place:
	admit();
	if
	:: ok -> goto push
	:: else
	fi;
#ifdef TRY
	/* rings_admit's blq__push_any failed; place()'s first one, then
	 * BLQ_EFULL. */
	admit();
	if
	:: ok -> goto push
	:: else -> goto efull
	fi;
#endif
	ec_prepare(SPACE);
	admit();
	if
	:: ok -> ec_cancel(SPACE); goto push
	:: else
	fi;
	if
	:: closed -> ec_cancel(SPACE); goto refuse
	:: else
	fi;
	ec_wait(SPACE);
	if
	:: closed -> goto refuse
	:: else
	fi;
	goto place;
push:
	push_reserved();
progress_push:
	accepted++;
	k++;
	/* blq__handoff: the locked add on `left` is the barrier. */
	atomic { flush(); left++; ok = (waiters[ITEMS] != 0) };
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
	:: closed -> wake_all()
	:: else
	fi;
	goto next;
#ifdef TRY
efull:
	/* BLQ_EFULL: held was full and no other lane's credit was there
	 * to take; leave() with nothing placed, then the next item. */
	atomic {
		assert((cz & ZB(me, 1 - me)) != 0 || NP == 1);
#ifdef ROOM_CHECK
		assert((fs & (1 << me)) != 0);
#endif
		cz = cz & ~(ZB(me, 0) | ZB(me, 1));
#ifdef ROOM_CHECK
		fs = fs & ~(1 << me);
#endif
		efulls++
	}
	k++;
	LOCKED(left++);
	if
	:: closed -> wake_all()
	:: else
	fi;
	goto next;
#endif
refuse:
	/* leave with nothing placed: a place taken from the credit goes
	 * back (blq__lanes_unspend), the handoff's add, and the close's
	 * wake-all; the rest of the items are refused too. */
	if
	:: placed -> LOCKED(cred[me]++; win--; QUIET); placed = 0
	:: else
	fi;
	LOCKED(left++);
	if
	:: closed -> wake_all()
	:: else
	fi;
done:
	pdone++
}

/* ---- workers ---- */

/* One take attempt at slot s (a lane's, or the shared ring's head): the
 * copy out and the CAS on head in one step. */
inline take1(s0, ok)
{
	atomic {
		s = s0;
		observe(s);
		if
		:: slot[s] == FULL ->
			flush();
			slot[s] = FREE;
			got = item[s];
			item[s] = 0;
			if
			:: s >= NP -> shead++
			:: else
			fi;
			occ--;
#ifndef RELEASE_EARLY
			win++;
#endif
			consumed++;
			QUIET;
			assert((once & (1 << (got - 1))) == 0);
			once = once | (1 << (got - 1));
			ok = 1
		:: else -> ok = 0
		fi;
		s = 0
	}
}

#ifdef RELEASE_EARLY
/* The broken order: release_held as soon as a full slot is seen, before
 * the CAS; a lost CAS gives the unit back. */
inline take_at(s0, ok)
{
	atomic {
		s = s0;
		observe(s);
		if
		:: slot[s] == FULL -> flush(); held--; win++; ok = 1; QUIET
		:: else -> ok = 0
		fi;
		s = 0
	}
	if
	:: ok ->
		take1(s0, ok);
		atomic {
			win--;
			if
			:: !ok -> held++
			:: else
			fi;
			QUIET
		}
	:: else
	fi
}
#else
#define take_at(s0, ok) take1(s0, ok)
#endif

/* pop_counted's release_held (a seq_cst fetch_sub: the StoreLoad barrier
 * before after_take reads space's waiters). NO_RELEASE_BARRIER: that load
 * passes the sub (it is taken first, into sw). RELEASE_EARLY released
 * already. */
inline release()
{
#ifdef NO_RELEASE_BARRIER
	atomic { sw = (waiters[SPACE] != 0) };
#endif
#ifndef RELEASE_EARLY
	atomic { flush(); held--; win--; QUIET }
#else
	skip
#endif
}

/* The shared ring's head, taken only when no spill began since the look
 * at the lanes (blq__ring_take_if with the lanes' spill count): the copy
 * and the guard's load in one step, the CAS on head in the next (it
 * fails when another worker moved the head meanwhile). NO_SPILL_GUARD
 * (the code before the guard): no guard, one step. */
inline take_shared(ok)
{
#ifdef NO_SPILL_GUARD
	take_at(NP + shead % CAP, ok)
#else
	atomic {
		s = NP + shead % CAP;
		observe(s);
		if
		:: slot[s] == FULL && spills == seen -> hpos = shead + 1
		:: else -> hpos = 0
		fi;
		s = 0
	}
	if
	:: hpos != 0 && shead == hpos - 1 -> take_at(NP + shead % CAP, ok)
	:: else -> ok = 0
	fi;
	hpos = 0
#endif
}

/* blq__pop_rings: the spill count, the home lane, the other lane, the
 * shared ring; nothing, and a spill began meanwhile: look again. Each
 * take released at once (pop_counted). */
inline take(ok)
{
	do
	:: seen = spills;
		take_at((me - NP) % NL, ok);
#if NL > 1
		if
		:: !ok -> take_at((me - NP + 1) % NL, ok)
		:: else
		fi;
#endif
		if
		:: !ok -> take_shared(ok)
		:: else
		fi;
		if
		:: ok || spills == seen -> break
		:: else
		fi
	od;
	seen = 0;
	if
	:: ok -> release()
	:: else
	fi
}

/* after_take: space's waiters (after the release, its barrier), a
 * wake-up pending (blq__ec_pending: then no claim can succeed, and the
 * count is not read), held at half, claim, wake all. */
inline after_take()
{
#ifndef NO_RELEASE_BARRIER
	atomic { sw = (waiters[SPACE] != 0) };
#endif
#ifndef NO_SPACE_WAKE
	if
	:: sw -> atomic { sw = (pending[SPACE] == 0) }
	:: else
	fi;
	if
	:: sw ->
		/* blq__ring_items: blq__lanes_items, held (a load), less
		 * the lanes' credit (a load of each cell's `entered`; one
		 * step here for both), 0 when below. WAKE_HELD: held alone. */
		t = CNT(held);
#ifndef WAKE_HELD
		atomic {
			if
			:: t > CREDS -> t = t - CREDS
			:: else -> t = 0
			fi
		};
#endif
		if
		:: t <= CAP / 2 ->
			ec_claim(SPACE, ok);
			if
			:: ok -> ec_wake_slow(SPACE, SPACE_WAKE_N)
			:: else
			fi
		:: else
		fi
	:: else
	fi;
#endif
	sw = 0;
	t = 0;
	ok = 0
}

proctype Worker(byte me)
{
	bit ok;
	bit slept;
	bit sw;			/* space's waiters, as after_take read them */
	byte seen;		/* the spill count at the look at the lanes */
	byte hpos;		/* 1 + the shared head a guarded take copied at */
	byte got;
	byte s;
	byte t;
#ifndef NO_ORDER_CHECK
	byte last[NP];		/* 1 + the number of each producer's last item */
#endif

look:
	if
	:: slept ->
		/* blq__taken_items > 1: held less the credit, as above. */
		t = CNT(held);
#ifndef WAKE_HELD
		atomic {
			if
			:: t > CREDS -> t = t - CREDS
			:: else -> t = 0
			fi
		};
#endif
		if
		:: t > 1 -> ec_notify(ITEMS, 1); slept = 0
		:: else
		fi;
		t = 0
	:: else
	fi;
	take(ok);
	if
	:: ok -> goto taken
	:: else
	fi;
	ec_prepare(ITEMS);
	take(ok);
	if
	:: ok -> ec_cancel(ITEMS); goto taken
	:: else
	fi;
	if
	:: closed ->
		/* blq__inflight: every left, then every entered. */
		t = left;
		t = entered - t;
		if
		:: t == 0 ->
			take(ok);
			ec_cancel(ITEMS);
			if
			:: ok -> goto taken
			:: else -> goto out
			fi
		:: else
		fi;
		t = 0
	:: else
	fi;
	ec_wait(ITEMS);
	slept = 1;
	goto look;
taken:
progress_take:
	t = 0;
	ok = 0;
	slept = 0;
#ifndef NO_ORDER_CHECK
	atomic {
		t = (got - 1) / K;
		assert((got - 1) % K + 1 > last[t]);
		last[t] = (got - 1) % K + 1;
		t = 0
	}
#endif
	got = 0;
	after_take();
	goto look;
out:
	ec_notify(ITEMS, 1);
	wdone++
}

/* blq_close: closed, the wake-all; then the finish waits for the
 * producers to leave and the workers to exit. */
proctype Closer()
{
	byte me = NPROC;
	bit ok;

#ifndef CLOSE_ANY
	pdone == NP;
#endif
	LOCKED(closed = 1);
	wake_all();
	entered == left && wdone == NW
}

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
		run Closer()
	}
	_nr_pr == 1;
#if !defined(CLOSE_ANY) && !defined(TRY)
	assert(accepted == N);
#endif
#if defined(TRY) && !defined(CLOSE_ANY)
	assert(accepted + efulls == N);
#endif
	assert(consumed == accepted);
	/* What is left in held is the lanes' idle credit. */
	assert(CNT(held) == CREDS && TRN(held) == 0 && occ == 0 && win == 0 && tr == 0);
	assert(waiters[ITEMS] == 0 && waiters[SPACE] == 0)
}
