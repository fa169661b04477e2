/*
 * A SPIN model of a reserved push into the shared rings (queue/rings.c
 * push_reserved, push_shared, push_missed) when there are several of them
 * (streams > 1): does the push always find the room that `held` reserved
 * for it? lanes.pml checks held and the credit with one shared ring; this
 * model leaves the lanes and the credit out and keeps what only several
 * rings have: a look that is one ring after another, not a snapshot.
 * scripts/model_check.sh runs it; docs/model-check.md ("Shared rings")
 * has the results.
 *
 * Design
 * - NR shared rings of RC slots each: capacity CAP = NR * RC, the shared
 *   rings' slots in all (queue.c alloc_rings), as in the code.
 * - held: the admission counter, one place per item, reserved before the
 *   push (a CAS: here one step that waits while the count is full, as a
 *   blocking enqueue does) and released after a worker's take moved the
 *   ring's head (release_held, a second step).
 * - A ring's reservation (util/ring.h blq__ring_reserve) is one step here:
 *   room by tail - head, then the tail moves. In the code it is a load of
 *   the tail, a load of the head, and a CAS on the tail that fails if the
 *   tail moved; "full" is a head load that found tail - head = RC with
 *   the tail the same before and after. One step is a sharper look than
 *   the code's, so every miss found here is one the code can make too.
 *   The item is published with its reservation (a slot being filled only
 *   delays the takes, lanes.pml models it).
 * - Producers: p's look starts at ring p % NR (a thread's own ring,
 *   blq__thread_cell, or a lane's spill ring) and goes on to the next,
 *   each ring once (push_shared). Producer 0 has K items, the others K1.
 *   When the look found every ring full: push_missed, the sum of the
 *   heads (NR loads, one step each), a look again, and if that one missed
 *   too the sum again: the same sum is the abort (an assertion here),
 *   another sum looks again.
 * - Workers: take from any ring that holds an item (one step: the copy
 *   and the CAS on head), then release held; they stop when every item
 *   was taken.
 *
 * Checked (pan -DSAFETY): the assertion in push_missed never fires (the
 * same heads' sum after a look that missed means every ring was full at
 * once while held counted our place); the rings hold at most what held
 * counts (a monitor, at every state); no invalid end state (a producer
 * waiting for held for good, a worker never done).
 *
 * Broken variants (spin -DNAME), each must give an error trail:
 *   SCAN_ONCE      one look, then the abort (the code before 42d1f82,
 *                  whose one look aborted under TSan): a worker takes from
 *                  a ring the look passed, another producer reserves that
 *                  place and fills the ring the look goes to next
 *   RELEASE_EARLY  held released before the take's head moves (a count
 *                  wrong by one for a moment): the monitor fails, and the
 *                  push's abort must be able to fire (with NO_MONITOR,
 *                  which leaves the monitor out: the abort is not
 *                  vacuous, a wrong count reaches it)
 *
 * Sizes: NR rings (2..3), RC slots each (1..2), NP producers (2..3), NW
 * workers (1..2), K items for producer 0 (1..3), K1 for the others
 * (1..3).
 */

#ifndef NR
#define NR 2
#endif
#ifndef RC
#define RC 1
#endif
#ifndef NP
#define NP 2
#endif
#ifndef NW
#define NW 1
#endif
#ifndef K
#define K 2
#endif
#ifndef K1
#define K1 1
#endif
#if NR < 2 || NR > 3 || RC < 1 || RC > 2 || NP < 2 || NP > 3 || NW < 1 || NW > 2 || K < 1 || K > 3 || K1 < 1 || K1 > 3
#error "NR 2..3, RC 1..2, NP 2..3, NW 1..2, K 1..3, K1 1..3"
#endif

#define CAP (NR * RC)
#define N (K + (NP - 1) * K1)	/* items in all */

byte head[NR];
byte tail[NR];
byte held;
byte taken;			/* items the workers took */

#if NR == 2
#define OCC ((tail[0] - head[0]) + (tail[1] - head[1]))
#else
#define OCC ((tail[0] - head[0]) + (tail[1] - head[1]) + (tail[2] - head[2]))
#endif

/* blq__ring_reserve of one position in ring r, as one step. */
inline reserve(r, ok)
{
	atomic {
		if
		:: tail[r] - head[r] < RC -> tail[r]++; ok = true
		:: else -> ok = false
		fi
	}
}

/* push_shared: ring first, then the next ones, each once. */
inline look(first, ok)
{
	i = 0;
	ok = false;
	do
	:: i < NR && !ok -> reserve((first + i) % NR, ok); i++
	:: else -> break
	od
}

/* shared_heads: one load a ring. */
inline heads(s)
{
	s = 0;
	j = 0;
	do
	:: j < NR -> s = s + head[j]; j++
	:: else -> break
	od
}

proctype producer(byte p; byte k)
{
	byte n = 0, i, j, s0, s1;
	bool ok;

	do
	:: n < k ->
		/* lanes_reserve (blocking while the count is full). */
		atomic { held < CAP -> held++ }
		look(p % NR, ok);
#ifdef SCAN_ONCE
		assert(ok);	/* push_reserved's abort before 42d1f82 */
#else
		if
		:: !ok ->
			/* push_missed */
			heads(s0);
			do
			:: true ->
				look(p % NR, ok);
				if
				:: ok -> break
				:: else
				fi;
#ifdef LOOK_TWICE
				assert(ok);	/* a second look, then the abort */
#endif
				heads(s1);
				assert(s1 != s0);	/* the abort: every ring full at once */
				s0 = s1
			od
		:: else
		fi;
#endif
		n++
	:: else -> break
	od
}

/* One take from ring r when it holds an item, then the release. */
inline take(r)
{
#ifdef RELEASE_EARLY
	atomic { tail[r] != head[r] && held > 0 -> held-- }
	head[r]++;
	taken++
#else
	atomic { tail[r] != head[r] -> head[r]++; taken++ }
	held--
#endif
}

proctype worker()
{
	do
	:: taken == N -> break
	:: take(0)
	:: take(1)
#if NR > 2
	:: take(2)
#endif
	od
}

#ifndef NO_MONITOR
/* At every state: the rings hold no more than held counts. */
active proctype monitor()
{
	assert(OCC <= held && held <= CAP)
}
#endif

init
{
	atomic {
		run producer(0, K);
		run producer(1, K1);
#if NP > 2
		run producer(2, K1);
#endif
		run worker();
#if NW > 1
		run worker();
#endif
	}
}
