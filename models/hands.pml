/*
 * A SPIN model of a hand's places (queue/hand_places.c, with
 * queue/lanes.c blq__lanes_admit and queue/worker.c take,
 * next_from_hand): the items a worker took ahead stay counted in the
 * lanes' `held` until they leave its hand; the places of those it has
 * started are released at the hand's end by the worker, or before that
 * claimed by a producer that found the count full. Does the capacity
 * stay exact (the rings and the hands together never above it), is every
 * place released exactly once, does a try-enqueue refuse only when the
 * queue was full, and does a producer asleep on a full queue always get
 * woken? lanes.pml checks held, the lanes' credit and the event count;
 * this model leaves the lanes, the credit and the event count's claim
 * out and keeps what the hands add. scripts/model_check.sh runs it;
 * docs/model-check.md ("Hands") has the results.
 *
 * Design
 * - One ring, a count of items (ring); the capacity CAP; held, the
 *   admission counter's count of places (no refill, no credit: every
 *   admission asks for one place, so no refill is ever in transit and
 *   held's word is its count).
 * - Producers (NP, K items each): the admission of one item
 *   (blq__lanes_admit with want 1): lanes_reserve as one step (a load
 *   that finds the count full is a moment it was full, and the CAS loop
 *   succeeds only below CAP: one step is exact), take_others_credit
 *   left out (no credit), then the claim: per worker a load of its
 *   `freed` word, a load of `started`, and while not RELEASING and
 *   started > freed a CAS of freed to freed + 1 (the place is ours,
 *   held unchanged); the sum of freed (without the bit) + started over
 *   the workers and whether a bit was seen. Nothing claimed: a load of
 *   held; the same word and no bit seen: the second scan (loads only,
 *   want 0), the same sum and no bit: full; anything else: look again at
 *   once (the code's wait while RELEASING is bounded at 10 ms, here
 *   unbounded, as in lanes.pml). A place got: the push (one step).
 *   Blocking (default): full: announce (waiters++), the admission
 *   again, still full: sleep until woken, then again. -DTRY: full
 *   refuses the item (BLQ_EFULL) after one admission (the code's
 *   try-enqueue makes two: one is the sharper check) and the producer
 *   goes on to its next item.
 * - Workers (NW): when the ring holds 2 or more, a take of a hand of 2
 *   (one CAS on the head: both items leave the ring, their places stay
 *   in held) or of one item; one item: the take, then its release (a
 *   seq_cst fetch_sub on held), then the space wake check (after_take).
 *   A hand: w->hand = 1, then started (it[0] left the hand), then
 *   after_take's wake check as for one item (next_taken); then
 *   next_from_hand: w->hand = 0, started (it[1]); back to the hand,
 *   empty: the release (hand_places.c): was = xchg(freed, started |
 *   RELEASING), held -= started - was (skipped when 0), store(freed,
 *   started), the space wake check. A worker exits once every producer
 *   returned and the ring is empty (the items event count and the
 *   workers' sleep are ec.pml's and lanes.pml's: here a worker waits
 *   for an item by a guard).
 * - The space wake check (blq__space_wake): a load of the waiters
 *   count, then blq__lanes_held: a load of held (the hands' places
 *   counted: the code leaves out the scan of the workers' slots that
 *   blq__lanes_items makes for blq_size; -DWAKE_HANDS puts it back:
 *   per worker loads of freed (without the bit), started and w->hand,
 *   as blq__hand_places does); at most CAP / 2: wake every sleeping
 *   producer (the event count's claim, which lets one waker through, is
 *   left out: ec.pml checks it; a wake more can only hide a lost one
 *   that the claim causes, not one of the hands').
 * - Memory: a step per load or read-modify-write, sequentially
 *   consistent except for the worker's two plain stores that matter,
 *   modelled as x86-TSO does them (Drain, below): its store of started
 *   (relaxed: a plain store) and its store of freed at the release's end
 *   (release: a plain store) sit in its store buffer, in order, until
 *   they reach memory by themselves or its next locked instruction (the
 *   xchg, a take's CAS, the single take's sub) drains them; its loads
 *   meanwhile (the space wake check's) may pass them. That is what makes
 *   the release's wake needed: after a hand's take, after_take's load of
 *   the waiters count may pass the store of started for it[0], and a
 *   producer that looked before that store reached memory sleeps on a
 *   place it could have claimed (NO_RELEASE_WAKE; with every store
 *   sequentially consistent the variant passes in every size tried).
 *   -DSC_STORES: both stores sequentially consistent too. The store of
 *   w->hand (read only by the wake check's count) is left sequentially
 *   consistent. The claim's loads are in program order
 *   (freed acquire, then started; x86 keeps loads in order).
 *
 * - -DHANDBACK: a thief (the watchdog) gives worker 0's attempt up
 *   inside the callback of an item of its hand (handback.c: the busy
 *   word's seq_cst store before the callback, the thief's CAS, the
 *   worker's exchange after it), once: it takes the hand's unstarted
 *   items into its backlog (q->staged), takes their places out of held
 *   (a seq_cst fetch_sub), runs the space wake check, stores
 *   BLQ__HAND_GONE (the worker waits for it: blq__hand_settle), then
 *   puts each item back through the admission like a producer's
 *   (blq__push_any), again while there is no room (the watchdog's next
 *   look). Workers do not exit while items are staged. The thief's
 *   items taken back count as taken until its sub (hb, in queued: a
 *   take's release one instruction away), then are outside the
 *   capacity until admitted again, as in the code.
 *
 * Ghosts: unst, the items in hands not yet started; resv, places
 * reserved or claimed and not yet pushed; win, a single take's item
 * between its take and its release; tr, a worker's places between its
 * xchg and its sub. queued = ring + unst + resv + win: the places
 * taken by items (a single take's window counts as taken, as lanes.pml
 * counts it: its release is one instruction away, as before the hands).
 *
 * Checked (pan -DSAFETY), assertions (a monitor, at every state): (a)
 * the ring and the hands never hold more than CAP (ring + unst +
 * resv + win + hb <= CAP); (b) held == queued + tr + the sum over the
 * workers of started - freed: every place counted once, released once;
 * freed never above started; (c) held in [0, CAP] (a byte: below 0 reads
 * above CAP); (d) with -DTRY a refusal only when the queue was full
 * (queued == CAP) at some moment of the attempt (fs, bit p, set in
 * every step that can make queued reach CAP while p is attempting: a
 * reservation, a claim; and at the attempt's start); (e) no invalid end
 * state (a producer asleep for good, a worker never done), and at the
 * end every accepted item ran once, held is 0, no waiter left.
 *
 * Broken variants (spin -DNAME), each must give an error trail:
 *   NO_CLAIM          (with TRY) the producers never claim a started
 *                     place: a refusal while a started item's place was
 *                     free (d)
 *   NO_SECOND_LOOK    (with TRY) full after held's second load, without
 *                     the second scan of the sums: a worker starts an
 *                     item after the first scan passed it (d)
 *   NO_RELEASING_BIT  (with TRY) the xchg does not set RELEASING: a
 *                     producer that looks between the worker's xchg and
 *                     its sub sees no room anywhere (d)
 *   NO_RELEASE_WAKE   no space wake check after a hand's release: a
 *                     blocking producer that looked while the take's
 *                     store of started sat in the worker's store buffer
 *                     (after_take's load of the waiters count passed it)
 *                     sleeps for good (invalid end state)
 *
 * Sizes: NP producers (1..2), NW workers (1..2), K items per producer
 * (1..4), CAP (2..3); -DHANDBACK adds the thief.
 */

#ifndef NP
#define NP 1
#endif
#ifndef NW
#define NW 1
#endif
#ifndef K
#define K 3
#endif
#ifndef CAP
#define CAP 2
#endif
#if NP < 1 || NP > 2 || NW < 1 || NW > 2 || K < 1 || K > 4 || CAP < 2 || CAP > 3
#error "NP 1..2, NW 1..2, K 1..4, CAP 2..3"
#endif

/* A worker's `freed` word: the count, RB (BLQ__FREED_RELEASING) above. */
#define RB 64
#define FV(x) ((x) % RB)
#define REL(x) ((x) >= RB)

byte held;
byte ring;
byte started[NW];
byte fw[NW];			/* freed, with the RELEASING bit */
byte whand[NW];			/* w->hand: unstarted items, as blq_size reads them */
byte ps[NW];			/* started's increments in the worker's store buffer */
bit pf[NW];			/* freed's store in the worker's store buffer */
#define DRAINED (ps[me] == 0 && !pf[me])
#ifdef SC_STORES
/* Both stores straight to memory (sequentially consistent). */
#define STARTED atomic { started[me]++; unst--; ran++ }
#define FREED_STORE fw[me] = started[me]
#else
#define STARTED atomic { ps[me]++; ran++ }
#define FREED_STORE pf[me] = 1	/* store(freed, started), buffered */
#endif

/* The space event count: waiters, and per producer IDLE, SNAP, MOVED,
 * ASLEEP (ec.pml's states). */
#define IDLE 0
#define SNAP 1
#define MOVED 2
#define ASLEEP 3
byte waiters;
byte st[NP];

/* Ghosts. */
byte unst;			/* items in hands, not started */
byte resv;			/* places reserved or claimed, not yet pushed */
byte win;			/* single takes between take and release */
byte tr;			/* places between a worker's xchg and its sub */
byte hb;			/* HANDBACK: places between the thief's take and its sub */
byte staged;			/* HANDBACK: items taken back, not yet pushed again */
byte accepted;
byte ran;
byte pdone;
byte wdone;
#define QUEUED (ring + unst + resv + win + hb)

#if NW == 1
#define OPEN (started[0] - FV(fw[0]))
#define FREED_OK (FV(fw[0]) <= started[0])
#else
#define OPEN (started[0] - FV(fw[0]) + started[1] - FV(fw[1]))
#define FREED_OK (FV(fw[0]) <= started[0] && FV(fw[1]) <= started[1])
#endif

#ifdef TRY
byte att;			/* bit p: producer p is in an attempt */
byte fs;			/* bit p: queued == CAP at some moment of p's attempt */
byte efulls;
#define FULLNOW if :: QUEUED == CAP -> fs = fs | att :: else fi
#else
#define FULLNOW skip
#endif

/* ---- producers ---- */

/* blq__hand_places_claim(q, want, &s, &rl): want is 1 (claim) or 0 (the
 * second look's scan). */
inline claim(want, s, rl)
{
	s = 0;
	rl = 0;
	i = 0;
	do
	:: i < NW ->
		f = fw[i];
		sv = started[i];
		do
		:: want && !ok && !REL(f) && sv > f ->
			atomic {
				if
				:: fw[i] == f -> fw[i] = f + 1; f = f + 1; ok = 1; resv++; FULLNOW
				:: else -> f = fw[i]
				fi
			}
		:: else -> break
		od;
		if
		:: REL(f) -> rl = 1
		:: else
		fi;
		s = s + FV(f) + sv;
		f = 0;
		sv = 0;
		i++
	:: else -> i = 0; break
	od
}

/* blq__lanes_admit(q, NULL, 1): ok, a place reserved or claimed; else
 * the queue was called full. */
inline admit()
{
	ok = 0;
	do
	:: true ->
		/* lanes_reserve */
		atomic {
			if
			:: held < CAP -> held++; resv++; ok = 1; FULLNOW
			:: else -> seen = held
			fi
		}
		if
		:: ok -> break
		:: else
		fi;
#ifdef NO_CLAIM
		claim(0, s1, rl1);
#else
		claim(1, s1, rl1);
#endif
		if
		:: ok -> break
		:: else
		fi;
		atomic { nw = held };
		if
		:: nw == seen && !rl1 ->
#ifdef NO_SECOND_LOOK
			break
#else
			claim(0, s2, rl2);
			if
			:: s2 == s1 && !rl2 -> break
			:: else
			fi
#endif
		:: else
		fi;
		/* moved, or a worker releasing: look again */
		seen = 0; nw = 0; s1 = 0; s2 = 0; rl1 = 0; rl2 = 0
	od;
	seen = 0; nw = 0; s1 = 0; s2 = 0; rl1 = 0; rl2 = 0
}

proctype Producer(byte me)
{
	byte k, seen, nw, s1, s2, f, sv, i;
	bit ok, rl1, rl2;

next:
	if
	:: k == K -> goto done
	:: else
	fi;
#ifdef TRY
	atomic { att = att | (1 << me); fs = fs & ~(1 << me); FULLNOW };
	admit();
	if
	:: ok -> goto push
	:: else -> goto efull
	fi;
#else
place:
	admit();
	if
	:: ok -> goto push
	:: else
	fi;
	/* prepare, the look again, the sleep (ec.h) */
	atomic { waiters++; st[me] = SNAP };
	admit();
	if
	:: ok -> atomic { waiters--; st[me] = IDLE }; goto push
	:: else
	fi;
	atomic {
		if
		:: st[me] == SNAP -> st[me] = ASLEEP
		:: else -> st[me] = IDLE
		fi
	};
	atomic { st[me] != ASLEEP -> waiters--; st[me] = IDLE };
	goto place;
#endif
push:
	atomic {
		ring++;
		resv--;
		accepted++;
#ifdef TRY
		att = att & ~(1 << me);
		fs = fs & ~(1 << me)
#endif
	};
	ok = 0;
	k++;
	goto next;
#ifdef TRY
efull:
	atomic {
		assert((fs & (1 << me)) != 0);
		att = att & ~(1 << me);
		fs = fs & ~(1 << me);
		efulls++
	};
	k++;
	goto next;
#endif
done:
	pdone++
}

/* ---- workers ---- */

#if NP == 1
#define WAKE_ALL atomic { \
		if :: st[0] == SNAP -> st[0] = MOVED :: st[0] == ASLEEP -> st[0] = IDLE :: else fi }
#elif defined(SPACE_WAKE_ALL)
#define WAKE_ALL atomic { \
		if :: st[0] == SNAP -> st[0] = MOVED :: st[0] == ASLEEP -> st[0] = IDLE :: else fi; \
		if :: st[1] == SNAP -> st[1] = MOVED :: st[1] == ASLEEP -> st[1] = IDLE :: else fi }
#else
/* One sleeper (worker.c, space_wake): whichever the kernel picks of those
 * asleep; the bump of the futex word still turns back every waiter that
 * has not yet slept. -DSPACE_WAKE_ALL wakes both (the code before). */
#define WAKE_ALL atomic { \
		if :: st[0] == SNAP -> st[0] = MOVED :: else fi; \
		if :: st[1] == SNAP -> st[1] = MOVED :: else fi; \
		if \
		:: st[0] == ASLEEP -> st[0] = IDLE \
		:: st[1] == ASLEEP -> st[1] = IDLE \
		:: else \
		fi }
#endif

/* blq__space_wake, after a seq_cst read-modify-write on held. */
inline space_wake()
{
	if
	:: waiters != 0 ->
		n = held;
		pl = 0;
#ifdef WAKE_HANDS
		j = 0;
		do
		:: j < NW ->
			f = FV(fw[j]);
			sv = started[j];
			pl = pl + whand[j] + (sv > f -> sv - f : 0);
			j++
		:: else -> j = 0; break
		od;
#endif
		if
		:: (n > pl -> n - pl : 0) <= CAP / 2 -> WAKE_ALL
		:: else
		fi;
		n = 0; pl = 0; f = 0; sv = 0
	:: else
	fi
}

#ifdef HANDBACK
byte hnd[NW];			/* items still in a hand (h->n - h->next): the thief's too */
#define hn hnd[me]
/* Worker 0's attempt with a time limit: in its callback (the busy word
 * published), given up by the thief (its CAS won), the thief's store of
 * BLQ__HAND_GONE. */
bit incb;
bit given;
bit gone;
#endif

/* run_item of a hand's item: with HANDBACK worker 0's attempt has a time
 * limit: the busy word's seq_cst store (locked on x86: it drains the
 * store buffer), the callback, the exchange that learns whether the
 * attempt was given up, and then blq__hand_settle (the thief left
 * nothing: its backlog has room for a hand). */
#ifdef HANDBACK
inline callback()
{
	if
	:: me == 0 ->
		atomic { DRAINED -> incb = 1 };
		atomic { gu = given; incb = 0; given = 0 };
		if
		:: gu -> atomic { gone -> gone = 0 }; whand[me] = 0; gu = 0
		:: else
		fi
	:: else
	fi
}
#endif

proctype Worker(byte me)
{
	bit placed;		/* h->placed */
#ifdef HANDBACK
	bit gu;
#else
	byte hn;		/* items still in the hand (h->n - h->next) */
#endif
	byte was, n, pl, f, sv, j;

	do
	:: hn > 0 ->
		/* next_from_hand: w->hand, then started (hand_left) */
		whand[me] = hn - 1;
		STARTED;
		hn--
#ifdef HANDBACK
		; callback()
#endif
	:: hn == 0 && placed ->
		/* the hand is over: blq__hand_places_release */
		placed = 0;
		atomic {
			DRAINED;
			was = fw[me];
#ifdef NO_RELEASING_BIT
			fw[me] = started[me];
#else
			fw[me] = started[me] + RB;
#endif
			tr = tr + started[me] - was
		};
		if
		:: started[me] > was ->
			atomic { held = held - (started[me] - was); tr = tr - (started[me] - was) }
		:: else
		fi;
		FREED_STORE;
		was = 0;
#ifndef NO_RELEASE_WAKE
		space_wake()
#endif
	:: hn == 0 && !placed ->
		if
		:: atomic { DRAINED && ring >= 2 -> ring = ring - 2; unst = unst + 2; hn = 2 };
			/* take: w->hand = k - 1, then it[0] leaves the hand */
			whand[me] = 1;
			STARTED;
			hn = 1;
			placed = 1;
			/* next_taken's after_take (the head's CAS the barrier) */
			space_wake()
#ifdef HANDBACK
			; callback()
#endif
		:: atomic { DRAINED && ring >= 1 -> ring--; win++; ran++ };
			/* pop_counted: the release, then after_take */
			atomic { held--; win-- };
			space_wake()
		:: atomic { DRAINED && ring == 0 && pdone == NP && staged == 0 -> wdone++ };
			break
		fi
	od
}

/* The worker's store buffer (x86-TSO): its plain stores of started
 * (ps, increments not yet visible) and of freed at the release's end
 * (pf) reach memory in order, at any moment, and before the worker's
 * next locked instruction (DRAINED, a guard of each). The two never
 * sit there together: a take's CAS comes between. An item's place is
 * free to claim (unst down) when its started store is visible. */
proctype Drain(byte w)
{
end:
	do
	:: atomic { ps[w] > 0 -> started[w]++; unst--; ps[w]-- }
	:: atomic { pf[w] -> fw[w] = started[w]; pf[w] = 0 }
	od
}

#ifdef HANDBACK
/* The thread that gives worker 0's attempt up (the watchdog), once
 * (blq__hand_take, then blq__backlog_flush): the unstarted items of its
 * hand into its backlog (q->staged), their places out of held, the space
 * wake check, BLQ__HAND_GONE; then each item through the admission like
 * a producer's (blq__push_any), and while there is no room, again (the
 * watchdog's next look, 1 ms later in the code). */
proctype Thief()
{
	byte m, seen, nw, s1, s2, f, sv, i, n, pl, j;
	bit ok, rl1, rl2;

end:
	atomic {
		incb && hnd[0] > 0 && !given ->
		given = 1;
		m = hnd[0];
		hnd[0] = 0;
		unst = unst - m;
		hb = hb + m;
		staged = staged + m
	};
	atomic { held = held - m; hb = hb - m };
	space_wake();
	atomic { whand[0] = 0; gone = 1 };
	do
	:: m > 0 ->
		admit();
		if
		:: ok -> atomic { ring++; resv--; staged-- }; ok = 0; m--
		:: else
		fi
	:: else -> break
	od
}
#endif

/* (a), (b), (c) at every state. */
active proctype monitor()
{
	atomic {
		assert(held <= CAP && QUEUED <= CAP && FREED_OK);
		assert(held == QUEUED + tr + OPEN)
	}
}

init
{
	atomic {
		run Producer(0);
#if NP > 1
		run Producer(1);
#endif
		run Worker(0);
		run Drain(0);
#ifdef HANDBACK
		run Thief();
#endif
#if NW > 1
		run Worker(1);
		run Drain(1);
#endif
	}
	/* (e): every accepted item ran once, every place released. */
	(pdone == NP && wdone == NW);
	assert(ran == accepted && held == 0 && ring == 0 && unst == 0 && resv == 0 &&
	       win == 0 && tr == 0 && hb == 0 && staged == 0 && waiters == 0);
#ifdef TRY
	assert(accepted + efulls == NP * K)
#else
	assert(accepted == NP * K)
#endif
}
