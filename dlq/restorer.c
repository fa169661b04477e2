/*
 * The restorer: feeds dumped items back into a queue, at least once, and
 * commits each record only once its item reached an outcome there; or
 * into any blq_enqueuer (a sink), committing once the sink took the item
 * and, if it can, made it durable.
 *
 * Design
 * - One thread ("blq-restore") claims dumps from the reader (several may
 *   be open at once), decodes their records and offers each item to the
 *   target with blq_try_enqueue_job and a completion hook, while
 *   blq_rate(target) <= allow_rate. A too-full target (rate above
 *   allow_rate, or BLQ_EFULL) makes it hold the item and offer it again
 *   after postpone_interval_ns: an item is never dropped for lack of room.
 * - A slot per record in flight (max_in_flight of them, allocated once):
 *   the slot carries the item's hook. The hook runs on whichever thread
 *   ends the item (a worker, mostly); it stores the outcome, pushes the
 *   slot onto a lock-free stack (Treiber push; the restorer takes the
 *   whole stack at once, so there is no ABA) and wakes the restorer only
 *   when it sleeps, and, while the window is full of items in the target,
 *   only once a quarter of them ended, so a full window costs one wake-up
 *   per batch of outcomes rather than one per item. The hook takes no
 *   lock on the way of a busy restorer.
 * - A sink (blq_restorer_config.sink, when target is NULL) reports no
 *   outcome: what it accepted is where "at least once" ends. Its items
 *   skip the hook and the hub: an accepted item's slot is done at once
 *   (sink without sync) or joins the leaks, which wait for a sync (the
 *   sink's, in place of the target DLQ's). BLQ_EFULL holds the item as a
 *   full target does; any other refusal returns that record only (it
 *   comes again with its dump at a later check) and reading goes on: a
 *   sink may refuse some items and take the rest.
 * - Outcomes: processed, failed, timed out and expired make the record
 *   done; leaked makes it done once the target's DLQ made it durable
 *   (blq_dlq_sync; a DLQ without sync counts at the hand-over); lost (the
 *   target dropped it at a force close) and a refusal make it "returned":
 *   not done, restored again later. A record past max_restores (restores
 *   plus deliveries) or undecodable goes to the dead store and is done
 *   once that write succeeded; it keeps its restore count and why it was
 *   dead-lettered (the dead batch turns format 2 at its first such
 *   record). A restored item that leaks again is dead-lettered anew, with
 *   the target's reason.
 * - Done marks reach the reader with done(); sync() makes them durable
 *   (a file's checkpoint, acks of stream entries). A dump whose records
 *   were all handed out and all done is committed (file removed, entries
 *   deleted); one with a returned record is released (what is done stays
 *   done; the rest comes again).
 * - The window: slots in use plus done marks not yet synced stay within
 *   max_in_flight. So the restorer's memory is bounded, and a crash
 *   restores again at most max_in_flight records that an outcome already
 *   reached: the duplicates' bound. Marks and leaks are synced when the
 *   window is full, and every SYNC_INTERVAL otherwise. A dump whose commit
 *   (or the sync before its release) fails stays open and is tried again
 *   at each sync. Its marks are synced all the same: when that works (a
 *   commit that failed for a reason of its own, such as an archive moved
 *   to another file system) they leave the window, so one stuck file does
 *   not stop the rest, and a crash does not restore its records again;
 *   when it fails too they stay in the window: a process cut off from its
 *   store takes no more work whose outcome it could not record.
 * - Failures are counted by reason (blq_dump_failure) in the stats and
 *   through the metrics' failure callback, where they happen.
 * - Lifetime: the slots and the stack live in a `hub` with a reference per
 *   item in the target plus the restorer's own, so an outcome that comes
 *   after blq_restorer_free still finds valid memory; it is just not
 *   committed (the record comes again).
 * - What the reader sets aside (a damaged file after its intact records,
 *   a bad Redis entry) it reports through the host the restorer lends it
 *   (blq_dump_reader.host): counted as read and quarantined, so
 *   records = done + dead + lost + returned + quarantined + in_flight
 *   holds for those too, and logged through the restorer's logger when
 *   the reader has none of its own.
 * - Lock: hub->mu guards closing/kicked and the waits; counters are
 *   atomics written by the restorer thread only.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "errorf.h"
#include "dump_format.h"
#include "dump_util.h"

#define DEFAULT_CHECK 1000000000ull
#define DEFAULT_ALLOW_RATE 0.95
#define DEFAULT_IN_FLIGHT 1024u
#define IN_FLIGHT_LIMIT 1000000u
#define DEFAULT_CLOSE_TIMEOUT 5000000000ull
/* Done marks, leaks and dead records wait at most this long for a sync. */
#define SYNC_INTERVAL 100000000ull
/* How often the reader is asked to refresh its claims on open dumps (it
 * decides whether one is due: Redis, every claim_idle_ns / 4, which may
 * be as short as 250 us). Only while a dump is open: an idle restorer
 * sleeps until its next poll. */
#define REFRESH_INTERVAL 20000000ull

typedef struct odump odump;
typedef struct slot slot;
typedef struct hub hub;

/* An open dump. */
struct odump {
	void *h;           /* the reader's handle */
	uint64_t handed;   /* its records in slots (not settled yet) */
	uint64_t unsynced; /* its done marks not synced yet */
	bool ended;        /* no more records will be read from it */
	bool keep;         /* a record was returned: release, never commit */
	bool stuck;        /* its commit, or the sync before its release,
			    * failed: it stays (its marks still count in the
			    * window) and is tried again at each sync */
	odump *next;
};

enum slot_state {
	S_FREE = 0,
	S_TARGET, /* the item is in the target: its hook will run */
	S_LEAKED, /* leaked from the target: waits for the DLQ's sync */
	S_DEAD,   /* in the dead-store batch: waits for its write */
};

struct slot {
	blq_done hook; /* {on_outcome, this slot} */
	hub *hub;
	odump *d;
	uint64_t index;
	size_t bytes;
	int state;           /* restorer thread only */
	_Atomic int outcome; /* written by the hook */
	slot *next;          /* the done stack, or the restorer's lists */
};

struct hub {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool closing, kicked;   /* under mu; closing also read atomically */
	_Atomic(slot *) done;   /* slots whose item ended */
	_Atomic size_t pushed;  /* slots on `done` */
	_Atomic size_t wake_at; /* pushed count that wakes a sleeping restorer */
	_Atomic int sleeping;   /* the restorer waits on cond */
	_Atomic size_t refs;    /* the restorer's + one per item in the target */
	size_t nslots;
	slot slots[];
};

struct blq_restorer {
	blq_restorer_config cfg;
	char name[BLQ__DUMP_NAME_MAX + 1];
	blq_dump_reader_host host; /* lent to the reader (cfg.reader->host) */
	hub *hub;
	pthread_t thread;
	bool stopped, joined; /* under hub->mu: run() ended; a closer joins */
	struct blq_restorer_stats st; /* atomic adds by the restorer thread */

	/* The restorer thread's own state. */
	slot *free_slots;
	size_t in_use;     /* slots not free */
	size_t in_target;  /* of those, items in the target: each will push */
	uint64_t unsynced; /* done marks not synced, all dumps */
	odump *dumps;      /* open dumps */
	odump *cur;        /* the one records are read from, or NULL */
	slot *held;        /* a decoded item the target had no room for */
	void *held_payload;
	blq_dlq_why held_why; /* its record's why: for sink.enqueue_why */
	slot *leaks;       /* S_LEAKED slots */
	slot *deads;       /* S_DEAD slots, in dead_buf */
	blq__buf dead_buf;
	size_t dead_count;
	uint64_t dead_version;
	unsigned dead_format; /* dead_buf's: 1 until a record with a why */
	bool dlq_volatile;   /* the target's DLQ (or the sink) has no sync */
	bool target_refused; /* logged once per refusal episode */
	uint64_t next_poll;  /* when next() may be asked again */
	uint64_t poll_backoff;
	uint64_t next_sync, next_refresh;
	bool sync_ok; /* the last sync_all made everything durable */
	bool final;   /* shutting down: release what cannot be committed */
};

#define COUNT(r, field, n) __atomic_fetch_add(&(r)->st.field, (n), __ATOMIC_RELAXED)

/* n more failures of one reason: the stats and the metrics. */
static void failed(blq_restorer *r, enum blq_dump_failure reason, uint64_t n)
{
	const blq_dump_metrics *m = r->cfg.metrics;

	COUNT(r, failures[reason], n);
	if (m != NULL && m->failure != NULL)
		m->failure(m->ctx, r->name, reason, n);
}

/* ---- the hook and the hub ----------------------------------------- */

static void hub_unref(hub *h)
{
	/* acq_rel: every push happens before the free. */
	if (atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) != 1)
		return;
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

static void on_outcome(void *ctx, void *payload, enum blq_outcome o)
{
	slot *s = ctx;
	hub *h = s->hub;

	(void)payload;
	atomic_store_explicit(&s->outcome, (int)o, memory_order_relaxed);
	slot *top = atomic_load_explicit(&h->done, memory_order_relaxed);
	do
		s->next = top;
	while (!atomic_compare_exchange_weak_explicit(&h->done, &top, s, memory_order_seq_cst,
						      memory_order_relaxed));
	/* seq_cst count, then the flag; the restorer stores the flag, then
	 * reads the count (both seq_cst): one of us sees the other. */
	size_t n = atomic_fetch_add_explicit(&h->pushed, 1, memory_order_seq_cst) + 1;
	if (atomic_load_explicit(&h->sleeping, memory_order_seq_cst) &&
	    n >= atomic_load_explicit(&h->wake_at, memory_order_relaxed)) {
		pthread_mutex_lock(&h->mu);
		pthread_cond_broadcast(&h->cond);
		pthread_mutex_unlock(&h->mu);
	}
	hub_unref(h);
}

static bool closing(blq_restorer *r)
{
	return __atomic_load_n(&r->hub->closing, __ATOMIC_ACQUIRE);
}

/* Sleeps until `want` outcomes wait (1 or more; the caller makes sure that
 * many will come), a kick, close, or deadline (monotonic ns). */
static void wait_until(blq_restorer *r, uint64_t deadline, size_t want)
{
	hub *h = r->hub;

	pthread_mutex_lock(&h->mu);
	atomic_store_explicit(&h->wake_at, want, memory_order_relaxed);
	atomic_store_explicit(&h->sleeping, 1, memory_order_seq_cst);
	if (!h->closing && !h->kicked &&
	    atomic_load_explicit(&h->pushed, memory_order_seq_cst) < want)
		blq__cond_wait_until(&h->cond, &h->mu, deadline);
	atomic_store_explicit(&h->sleeping, 0, memory_order_relaxed);
	pthread_mutex_unlock(&h->mu);
}

static bool take_kick(blq_restorer *r)
{
	pthread_mutex_lock(&r->hub->mu);
	bool k = r->hub->kicked;
	r->hub->kicked = false;
	pthread_mutex_unlock(&r->hub->mu);
	return k;
}

/* ---- slots and dumps ---------------------------------------------- */

/* The reader set a damaged file or a bad entry aside (from within one of
 * its calls, on this thread): read, and ended as quarantined. */
static void on_quarantined(void *ctx, uint64_t count, uint64_t skipped_bytes)
{
	blq_restorer *r = ctx;

	COUNT(r, records, count);
	COUNT(r, quarantined, count);
	COUNT(r, skipped_bytes, skipped_bytes);
	failed(r, BLQ_DUMP_FAIL_QUARANTINE, count);
}

static const char *why(const blq_error *e, int rc)
{
	return e->msg[0] ? e->msg : blq_strerror(rc);
}

/* A failed reader call (reason READ or COMMIT): read_errors. */
static void read_error(blq_restorer *r, enum blq_dump_failure reason, const char *what,
		       const blq_error *e, int rc)
{
	COUNT(r, read_errors, 1);
	failed(r, reason, 1);
	blq__dlog(&r->cfg.logger, BLQ_LOG_WARN, "restorer %s: %s: %s", r->name, what, why(e, rc));
}

static void slot_free(blq_restorer *r, slot *s)
{
	s->state = S_FREE;
	s->d = NULL;
	s->next = r->free_slots;
	r->free_slots = s;
	r->in_use--;
	__atomic_store_n(&r->st.in_flight, r->in_use, __ATOMIC_RELAXED);
}

static void unlink_dump(blq_restorer *r, odump *d)
{
	for (odump **p = &r->dumps; *p != NULL; p = &(*p)->next)
		if (*p == d) {
			*p = d->next;
			break;
		}
	if (r->cur == d)
		r->cur = NULL;
	r->unsynced -= d->unsynced;
	free(d);
}

/* Commits or releases d once nothing of it is in flight any more. Until
 * its done marks are durable (the commit, or a sync before a release) it
 * stays open, its marks counted in the window: a process cut off from its
 * store must not take more work whose outcome it cannot record. */
static void maybe_finish(blq_restorer *r, odump *d)
{
	blq_dump_reader *rd = r->cfg.reader;
	blq_error err = {0, ""};
	int rc;

	if (!d->ended || d->handed > 0)
		return;
	if (d->keep) {
		if (d->unsynced > 0 && !r->final && (rc = rd->sync(rd, d->h, &err)) != 0) {
			if (!d->stuck)
				read_error(r, BLQ_DUMP_FAIL_COMMIT,
					   "making done records durable before giving a dump back",
					   &err, rc);
			d->stuck = true;
			return;
		}
		rd->release(rd, d->h);
		COUNT(r, released, 1);
	} else if ((rc = rd->commit(rd, d->h, &err)) != 0) {
		if (!r->final) {
			/* Its marks made durable all the same, so they leave the
			 * window (the rest goes on) and a crash does not bring its
			 * records back; if that fails too, they stay. Before the
			 * count: whoever sees it may rely on them. */
			blq_error serr = {0, ""};
			if (d->unsynced > 0 && rd->sync(rd, d->h, &serr) == 0) {
				r->unsynced -= d->unsynced;
				d->unsynced = 0;
			}
			if (!d->stuck)
				read_error(r, BLQ_DUMP_FAIL_COMMIT,
					   "removing a restored dump (tried again at each sync)",
					   &err, rc);
			d->stuck = true;
			return;
		}
		read_error(r, BLQ_DUMP_FAIL_COMMIT,
			   "removing a restored dump at close (its records not made durable "
			   "will come again)",
			   &err, rc);
		rd->release(rd, d->h);
		COUNT(r, released, 1);
	} else {
		COUNT(r, dumps, 1);
	}
	unlink_dump(r, d);
}

/* The record of s is done: tell the reader, free the slot. */
static void settle_done(blq_restorer *r, slot *s)
{
	blq_dump_reader *rd = r->cfg.reader;
	odump *d = s->d;
	blq_error err = {0, ""};
	int rc = rd->done(rd, d->h, s->index, &err);

	if (rc != 0) {
		read_error(r, BLQ_DUMP_FAIL_COMMIT, "marking a record done (it will come again)", &err,
			   rc);
		d->keep = true;
	} else {
		d->unsynced++;
		r->unsynced++;
	}
	d->handed--;
	slot_free(r, s);
	maybe_finish(r, d);
}

/* The record of s is not done: it comes again. */
static void settle_returned(blq_restorer *r, slot *s)
{
	odump *d = s->d;

	COUNT(r, returned, 1);
	d->keep = true;
	d->handed--;
	slot_free(r, s);
	maybe_finish(r, d);
}

/* ---- outcomes ----------------------------------------------------- */

static void on_settled_item(blq_restorer *r, slot *s, enum blq_outcome o)
{
	switch (o) {
	case BLQ_OUTCOME_PROCESSED:
		COUNT(r, processed, 1);
		break;
	case BLQ_OUTCOME_FAILED:
	case BLQ_OUTCOME_TIMED_OUT:
		COUNT(r, failed, 1);
		break;
	case BLQ_OUTCOME_EXPIRED:
		COUNT(r, expired, 1);
		break;
	case BLQ_OUTCOME_LEAKED:
		COUNT(r, leaked, 1);
		if (r->dlq_volatile)
			break;
		s->state = S_LEAKED;
		s->next = r->leaks;
		r->leaks = s;
		return;
	case BLQ_OUTCOME_LOST:
	default:
		settle_returned(r, s);
		return;
	}
	COUNT(r, done, 1);
	settle_done(r, s);
}

/* Takes the outcomes the hooks pushed. True when there were any. */
static bool take_outcomes(blq_restorer *r)
{
	slot *s = atomic_exchange_explicit(&r->hub->done, NULL, memory_order_acquire);
	size_t n = 0;

	if (s == NULL)
		return false;
	while (s != NULL) {
		slot *next = s->next;

		/* The hook dropped the item's hub reference itself. */
		r->in_target--;
		on_settled_item(r, s, (enum blq_outcome)atomic_load_explicit(
					       &s->outcome, memory_order_relaxed));
		s = next;
		n++;
	}
	/* Each push counts after it lands: a count never runs ahead of the
	 * stack, so this never goes below zero. */
	atomic_fetch_sub_explicit(&r->hub->pushed, n, memory_order_relaxed);
	return true;
}

/* ---- syncing ------------------------------------------------------ */

static int to_dead(blq_restorer *r, slot *s, const blq_dump_record *rec)
{
	bool why = !blq__dump_why_empty(&rec->why);

	if (why && r->dead_format == 1) {
		if (blq__dump_upgrade(&r->dead_buf, r->dead_count) != 0)
			return BLQ_ENOMEM;
		r->dead_format = 2;
	}
	int rc = blq__dump_rec_append(&r->dead_buf, r->dead_format, rec->data, rec->len,
				      rec->restores, why ? &rec->why : NULL);
	if (rc != 0)
		return rc;
	r->dead_count++;
	r->dead_version = rec->version;
	s->state = S_DEAD;
	s->next = r->deads;
	r->deads = s;
	return 0;
}

static bool flush_dead(blq_restorer *r)
{
	blq_dump_batch b = {r->dead_version, r->dead_buf.p, r->dead_buf.len, r->dead_count,
			    r->dead_format};
	blq_error err = {0, ""};
	size_t done = 0;

	if (r->dead_count == 0)
		return true;
	int rc = r->cfg.dead->write(r->cfg.dead, &b, &done, &err);
	if (rc != 0) {
		COUNT(r, read_errors, 1);
		failed(r, BLQ_DUMP_FAIL_DEAD_STORE, 1);
		blq__dlog(&r->cfg.logger, BLQ_LOG_ERROR,
			  "restorer %s: dead store failed: %s; its records stay in flight", r->name,
			  why(&err, rc));
		return false;
	}
	COUNT(r, dead, r->dead_count);
	slot *s = r->deads;
	r->deads = NULL;
	r->dead_count = 0;
	r->dead_buf.len = 0;
	r->dead_format = 1;
	while (s != NULL) {
		slot *next = s->next;
		settle_done(r, s);
		s = next;
	}
	return true;
}

/* The leaks: items leaked from the target, waiting for its DLQ's sync;
 * or items a sink accepted, waiting for the sink's. */
static bool sync_leaks(blq_restorer *r)
{
	if (r->leaks == NULL)
		return true;
	const char *whose = r->cfg.target != NULL ? "the target's DLQ" : "the sink";
	int rc = r->cfg.target != NULL ? blq_dlq_sync(r->cfg.target)
				       : r->cfg.sink.sync(r->cfg.sink.self);
	if (rc == BLQ_ENOTSUP) {
		r->dlq_volatile = true;
		blq__dlog(&r->cfg.logger, BLQ_LOG_INFO,
			  "restorer %s: %s keeps items in memory only; an item counts as done "
			  "once it took it",
			  r->name, whose);
	} else if (rc != 0) {
		COUNT(r, read_errors, 1);
		failed(r, BLQ_DUMP_FAIL_SYNC, 1);
		blq__dlog(&r->cfg.logger, BLQ_LOG_WARN,
			  "restorer %s: %s could not make items durable (%s); their records wait",
			  r->name, whose, blq_strerror(rc));
		return false;
	}
	slot *s = r->leaks;
	r->leaks = NULL;
	while (s != NULL) {
		slot *next = s->next;
		COUNT(r, done, 1);
		settle_done(r, s);
		s = next;
	}
	return true;
}

/* Makes leaks, dead records and done marks durable. */
static void sync_all(blq_restorer *r, uint64_t now)
{
	blq_dump_reader *rd = r->cfg.reader;

	bool ok = sync_leaks(r);
	ok = flush_dead(r) && ok;
	for (odump *d = r->dumps, *next; d != NULL; d = next) {
		next = d->next;
		if (d->stuck) {
			maybe_finish(r, d); /* may unlink d */
			continue;
		}
		if (d->unsynced == 0)
			continue;
		blq_error err = {0, ""};
		int rc = rd->sync(rd, d->h, &err);
		if (rc != 0) {
			read_error(r, BLQ_DUMP_FAIL_COMMIT, "making done records durable", &err, rc);
			ok = false;
			continue;
		}
		r->unsynced -= d->unsynced;
		d->unsynced = 0;
	}
	for (odump *d = r->dumps; d != NULL && ok; d = d->next)
		ok = !d->stuck;
	r->sync_ok = ok;
	r->next_sync = blq__sat_add(now, SYNC_INTERVAL);
}

static bool sync_pending(const blq_restorer *r)
{
	if (r->unsynced > 0 || r->leaks != NULL || r->deads != NULL)
		return true;
	for (const odump *d = r->dumps; d != NULL; d = d->next)
		if (d->stuck)
			return true;
	return false;
}

/* Slots in use plus marks not durable yet: what a crash would redo. */
static bool window_full(const blq_restorer *r)
{
	return r->in_use + r->unsynced >= r->cfg.max_in_flight || r->free_slots == NULL;
}

static void refresh_all(blq_restorer *r, uint64_t now)
{
	blq_dump_reader *rd = r->cfg.reader;

	r->next_refresh = blq__sat_add(now, REFRESH_INTERVAL);
	if (rd->refresh == NULL)
		return;
	for (odump *d = r->dumps; d != NULL; d = d->next) {
		blq_error err = {0, ""};
		int rc = rd->refresh(rd, d->h, &err);
		if (rc != 0)
			read_error(r, BLQ_DUMP_FAIL_READ, "refreshing the claim on records in flight",
				   &err, rc);
	}
}

/* ---- feeding the target ------------------------------------------- */

enum feed_stop { FEED_WINDOW, FEED_NO_DUMP, FEED_FULL, FEED_REFUSED, FEED_CLOSING };

static void lost_record(blq_restorer *r, int rc)
{
	uint64_t n = COUNT(r, lost, 1) + 1;
	const blq_dump_metrics *m = r->cfg.metrics;

	if (m != NULL && m->lost != NULL)
		m->lost(m->ctx, r->name, 1);
	if ((n & (n - 1)) == 0)
		blq__dlog(&r->cfg.logger, BLQ_LOG_WARN,
			  "restorer %s: decoder refused a record (%s) and there is no dead store: "
			  "lost (%llu so far)",
			  r->name, blq_strerror(rc), (unsigned long long)n);
}

/* The target or the sink took the held item of s. */
static void count_restored(blq_restorer *r, slot *s)
{
	const blq_dump_metrics *m = r->cfg.metrics;

	r->held = NULL;
	r->target_refused = false;
	COUNT(r, restored, 1);
	COUNT(r, bytes_out, s->bytes);
	if (m != NULL && m->restore_out != NULL)
		m->restore_out(m->ctx, r->name, s->bytes);
}

/* The target or the sink refused the held item, not for want of room:
 * logged once per episode (`then` says what happens next), counted, the
 * payload freed. Returns its slot, whose record is not done. */
static slot *refuse_held(blq_restorer *r, int rc, const char *who, const char *then)
{
	slot *s = r->held;

	if (!r->target_refused)
		blq__dlog(&r->cfg.logger, BLQ_LOG_WARN, "restorer %s: the %s refused an item (%s); %s",
			  r->name, who, blq_strerror(rc), then);
	r->target_refused = true;
	failed(r, BLQ_DUMP_FAIL_REFUSED, 1);
	if (r->cfg.item_free != NULL)
		r->cfg.item_free(r->held_payload);
	r->held = NULL;
	return s;
}

/* Offers the held item to the sink. FEED_WINDOW when it went in or was
 * refused (keep feeding: a refusal returns this record only). */
static enum feed_stop offer_sink(blq_restorer *r, uint64_t now)
{
	const blq_enqueuer *k = &r->cfg.sink;
	slot *s = r->held;
	int rc = k->enqueue_why != NULL && !blq__dump_why_empty(&r->held_why)
			 ? k->enqueue_why(k->self, r->held_payload, &r->held_why)
			 : k->enqueue(k->self, r->held_payload);

	if (rc == 0) {
		count_restored(r, s);
		if (k->sync == NULL || r->dlq_volatile) {
			COUNT(r, done, 1);
			settle_done(r, s);
		} else { /* done once the sink's sync says so (sync_leaks) */
			s->state = S_LEAKED;
			s->next = r->leaks;
			r->leaks = s;
		}
		return FEED_WINDOW;
	}
	if (rc == BLQ_EFULL) {
		COUNT(r, postponed, 1);
		return FEED_FULL;
	}
	settle_returned(r, refuse_held(r, rc, "sink",
				       "its record is kept and tried again at a later check"));
	/* Its dump goes back once read and settled: not claimed again before
	 * the next check, or a refusing sink would be offered it in a loop. */
	r->next_poll = blq__sat_add(now, r->cfg.check_interval_ns);
	return FEED_WINDOW;
}

/* Offers the held item. FEED_WINDOW when it went in (keep feeding). */
static enum feed_stop offer_held(blq_restorer *r, uint64_t now)
{
	slot *s = r->held;
	hub *h = r->hub;

	if (r->cfg.target == NULL)
		return offer_sink(r, now);
	if (blq_rate(r->cfg.target) > r->cfg.allow_rate) {
		COUNT(r, postponed, 1);
		return FEED_FULL;
	}
	blq_job job = {.payload = r->held_payload, .done = &s->hook};
	s->state = S_TARGET;
	/* The hook may run before the call returns: its reference first. */
	atomic_fetch_add_explicit(&h->refs, 1, memory_order_relaxed);
	int rc = blq_try_enqueue_job(r->cfg.target, &job);
	if (rc == 0) {
		r->in_target++;
		count_restored(r, s);
		return FEED_WINDOW;
	}
	atomic_fetch_sub_explicit(&h->refs, 1, memory_order_relaxed);
	s->state = S_FREE;
	if (rc == BLQ_EFULL) {
		COUNT(r, postponed, 1);
		return FEED_FULL;
	}
	refuse_held(r, rc, "target", "its records are kept and tried again every check_interval");
	/* Read no further: every open dump goes back once its items in
	 * flight settle, and is claimed again at the next check. */
	for (odump *d = r->dumps; d != NULL; d = d->next)
		if (!d->ended)
			d->ended = d->keep = true;
	r->cur = NULL;
	settle_returned(r, s);
	for (odump *d = r->dumps, *next; d != NULL; d = next) {
		next = d->next;
		maybe_finish(r, d);
	}
	r->next_poll = blq__sat_add(blq__monotonic_ns(), r->cfg.check_interval_ns);
	return FEED_REFUSED;
}

/* The next record of an open dump (claiming one if needed). 1 with *rec,
 * 0 when none is available now. */
static int next_record(blq_restorer *r, uint64_t now, blq_dump_record *rec)
{
	blq_dump_reader *rd = r->cfg.reader;

	for (;;) {
		if (r->cur == NULL) {
			if (now < r->next_poll)
				return 0;
			void *h = NULL;
			blq_error err = {0, ""};
			int rc = rd->next(rd, &h, &err);
			if (rc <= 0) {
				if (rc < 0) {
					read_error(r, BLQ_DUMP_FAIL_READ, "claiming a dump", &err, rc);
					/* Back off up to 16 checks while it fails. */
					r->poll_backoff = r->poll_backoff == 0
								  ? r->cfg.check_interval_ns
								  : r->poll_backoff * 2;
					if (r->poll_backoff > 16 * r->cfg.check_interval_ns)
						r->poll_backoff = 16 * r->cfg.check_interval_ns;
				} else {
					r->poll_backoff = r->cfg.check_interval_ns;
				}
				r->next_poll = blq__sat_add(now, r->poll_backoff);
				return 0;
			}
			r->poll_backoff = 0;
			odump *d = calloc(1, sizeof(*d));
			if (d == NULL) {
				rd->release(rd, h);
				failed(r, BLQ_DUMP_FAIL_MEMORY, 1);
				blq__dlog(&r->cfg.logger, BLQ_LOG_ERROR,
					  "restorer %s: out of memory for a dump", r->name);
				r->next_poll = blq__sat_add(now, r->cfg.check_interval_ns);
				return 0;
			}
			d->h = h;
			d->next = r->dumps;
			r->dumps = d;
			r->cur = d;
		}
		odump *d = r->cur;
		blq_error err = {0, ""};
		blq__dump_why_clear(&rec->why); /* for readers that do not set it */
		int rc = rd->record(rd, d->h, rec, &err);
		if (rc == 1)
			return 1;
		if (rc < 0) {
			read_error(r, BLQ_DUMP_FAIL_READ, "reading a dump", &err, rc);
			d->keep = true;
		}
		d->ended = true;
		r->cur = NULL;
		maybe_finish(r, d);
	}
}

/* Hands out records until the window is full or something stops it. */
static enum feed_stop feed(blq_restorer *r, uint64_t now)
{
	const blq_dump_metrics *m = r->cfg.metrics;

	for (;;) {
		if (closing(r))
			return FEED_CLOSING;
		if (r->held != NULL) {
			enum feed_stop why_stop = offer_held(r, now);
			if (why_stop != FEED_WINDOW)
				return why_stop;
		}
		if (window_full(r))
			return FEED_WINDOW;
		blq_dump_record rec;
		if (next_record(r, now, &rec) == 0)
			return FEED_NO_DUMP;
		COUNT(r, records, 1);
		if (rec.deliveries > 0) {
			COUNT(r, redelivered, 1);
			if (m != NULL && m->redelivered != NULL)
				m->redelivered(m->ctx, r->name, 1);
		}
		slot *s = r->free_slots;
		r->free_slots = s->next;
		r->in_use++;
		__atomic_store_n(&r->st.in_flight, r->in_use, __ATOMIC_RELAXED);
		s->d = r->cur;
		s->d->handed++;
		s->index = rec.index;
		s->bytes = rec.len;

		uint64_t times = (uint64_t)rec.restores + rec.deliveries;
		if (r->cfg.max_restores > 0 && times >= r->cfg.max_restores) {
			if (to_dead(r, s, &rec) != 0) {
				blq__dlog(&r->cfg.logger, BLQ_LOG_ERROR,
					  "restorer %s: out of memory for the dead store's batch",
					  r->name);
				failed(r, BLQ_DUMP_FAIL_MEMORY, 1);
				settle_returned(r, s);
			}
			continue;
		}
		blq_dump_record in = rec;
		in.restores = rec.restores < UINT32_MAX ? rec.restores + 1 : UINT32_MAX;
		void *payload = NULL;
		int rc = r->cfg.decoder.decode(r->cfg.decoder.ctx, &in, &payload);
		if (rc != 0) {
			failed(r, BLQ_DUMP_FAIL_DECODE, 1);
			if (r->cfg.dead == NULL) {
				lost_record(r, rc);
				settle_done(r, s);
			} else if (to_dead(r, s, &rec) != 0) {
				failed(r, BLQ_DUMP_FAIL_MEMORY, 1);
				settle_returned(r, s);
			}
			continue;
		}
		r->held = s;
		r->held_payload = payload;
		r->held_why = rec.why;
	}
}

/* ---- the thread --------------------------------------------------- */

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Close: stop reading, wait for the items in the target, settle what can
 * be settled, commit or release every open dump. */
static void shut_down(blq_restorer *r)
{
	uint64_t deadline = blq__sat_add(blq__monotonic_ns(), r->cfg.close_timeout_ns);

	if (r->held != NULL) {
		if (r->cfg.item_free != NULL)
			r->cfg.item_free(r->held_payload);
		slot *s = r->held;
		r->held = NULL;
		settle_returned(r, s);
	}
	for (odump *d = r->dumps; d != NULL; d = d->next)
		if (!d->ended) {
			d->ended = true;
			d->keep = true; /* records not read yet: never commit */
		}
	r->cur = NULL;
	for (;;) {
		take_outcomes(r);
		uint64_t now = blq__monotonic_ns();
		/* Everything left in slots is waiting for an outcome, a leak's
		 * sync or the dead store. */
		sync_all(r, now);
		if (r->in_use == 0 || now >= deadline)
			break;
		/* wait_until would not sleep (closing is set): the same wait,
		 * for any outcome. */
		hub *h = r->hub;
		pthread_mutex_lock(&h->mu);
		atomic_store_explicit(&h->wake_at, 1, memory_order_relaxed);
		atomic_store_explicit(&h->sleeping, 1, memory_order_seq_cst);
		if (atomic_load_explicit(&h->pushed, memory_order_seq_cst) == 0)
			blq__cond_wait_until(&h->cond, &h->mu, min_u64(deadline, now + 10000000u));
		atomic_store_explicit(&h->sleeping, 0, memory_order_relaxed);
		pthread_mutex_unlock(&h->mu);
	}
	/* Slots still busy: their records come again. Items still in the
	 * target keep their slot (the hub outlives us); the others are
	 * returned now. */
	for (size_t i = 0; i < r->hub->nslots; i++) {
		slot *s = &r->hub->slots[i];
		if (s->state != S_FREE) {
			COUNT(r, returned, 1);
			s->d->keep = true;
		}
	}
	r->leaks = r->deads = NULL;
	__atomic_store_n(&r->st.in_flight, 0, __ATOMIC_RELAXED);
	r->final = true;
	while (r->dumps != NULL) {
		odump *d = r->dumps;
		d->handed = 0;
		maybe_finish(r, d);
	}
}

static void *run(void *arg)
{
	blq_restorer *r = arg;

	r->sync_ok = true;
	r->next_sync = blq__sat_add(blq__monotonic_ns(), SYNC_INTERVAL);
	while (!closing(r)) {
		take_outcomes(r);
		uint64_t now = blq__monotonic_ns();
		if (take_kick(r))
			r->next_poll = 0;
		if (now >= r->next_refresh)
			refresh_all(r, now);
		/* A window full of marks, leaks or dead records is synced at
		 * once (unless the last sync failed: then at its interval). */
		if (sync_pending(r) && (now >= r->next_sync || (window_full(r) && r->sync_ok)))
			sync_all(r, now);
		enum feed_stop stop = feed(r, now);
		if (stop == FEED_CLOSING)
			break;
		/* Full of marks, or of slots a sync ends (a sink's items, leaks,
		 * dead records): the sync above makes room. */
		if (stop == FEED_WINDOW && sync_pending(r) && r->sync_ok &&
		    (r->in_use < r->cfg.max_in_flight || r->leaks != NULL || r->deads != NULL))
			continue;
		/* Wake for the earliest of: an outcome (always), the next poll,
		 * the postponed offer, a sync, a refresh. */
		uint64_t until = r->dumps != NULL ? r->next_refresh : UINT64_MAX;
		if (sync_pending(r))
			until = min_u64(until, r->next_sync);
		if (stop == FEED_NO_DUMP)
			until = min_u64(until, r->next_poll);
		else if (stop == FEED_FULL)
			until = min_u64(until, blq__sat_add(now, r->cfg.postpone_interval_ns));
		else if (stop == FEED_REFUSED)
			until = min_u64(until, blq__sat_add(now, r->cfg.check_interval_ns));
		/* A full window of items in the target: sleep until a quarter
		 * of them ended (they all will), not for each one. */
		size_t want = 1;
		if (stop == FEED_WINDOW && r->in_target >= r->cfg.max_in_flight / 2)
			want = r->in_target / 4;
		wait_until(r, until, want);
	}
	shut_down(r);
	/* Every closer waits for this (on cond), not only the one joining. */
	pthread_mutex_lock(&r->hub->mu);
	r->stopped = true;
	pthread_cond_broadcast(&r->hub->cond);
	pthread_mutex_unlock(&r->hub->mu);
	return NULL;
}

/* ---- the API ------------------------------------------------------ */

static int check(const blq_restorer_config *c, blq_error *err)
{
	const blq_dump_reader *rd = c->reader;

	if (rd == NULL || rd->next == NULL || rd->record == NULL || rd->done == NULL ||
	    rd->sync == NULL || rd->commit == NULL || rd->release == NULL)
		return blq__error_set(err, BLQ_EINVAL,
				      "reader: required, with next, record, done, sync, commit and "
				      "release");
	if (c->decoder.decode == NULL)
		return blq__error_set(err, BLQ_EINVAL,
				      "decoder: decode is NULL (try blq_dump_bytes_decoder())");
	const blq_enqueuer *k = &c->sink;
	bool sink = k->enqueue != NULL || k->self != NULL || k->sync != NULL ||
		    k->enqueue_why != NULL;
	if (c->target == NULL && !sink)
		return blq__error_set(err, BLQ_EINVAL,
				      "target, sink: one is required (target: a blq queue; sink: any "
				      "blq_enqueuer)");
	if (c->target != NULL && sink)
		return blq__error_set(err, BLQ_EINVAL,
				      "target, sink: give one, not both (sink is used when target "
				      "is NULL)");
	if (sink && k->enqueue == NULL)
		return blq__error_set(err, BLQ_EINVAL, "sink: enqueue is NULL");
	int rc;
	if ((rc = blq__dump_check_interval(c->check_interval_ns, "check_interval_ns", false, err)) ||
	    (rc = blq__dump_check_interval(c->postpone_interval_ns, "postpone_interval_ns", false,
					   err)) ||
	    (rc = blq__dump_check_interval(c->close_timeout_ns, "close_timeout_ns", false, err)))
		return rc;
	if (isnan(c->allow_rate) || c->allow_rate < 0.0 || c->allow_rate > 1.0)
		return blq__error_set(err, BLQ_EINVAL, "allow_rate: must be in (0, 1], got %g",
				      c->allow_rate);
	if (c->max_in_flight > IN_FLIGHT_LIMIT)
		return blq__error_set(err, BLQ_EINVAL,
				      "max_in_flight: must be 1..%u (0: the default %u), got %zu",
				      IN_FLIGHT_LIMIT, DEFAULT_IN_FLIGHT, c->max_in_flight);
	if (c->max_restores > 0 && (c->dead == NULL || c->dead->write == NULL))
		return blq__error_set(err, BLQ_EINVAL,
				      "dead: required with max_restores (where else would those "
				      "items go?)");
	if (c->dead != NULL && c->dead->write == NULL)
		return blq__error_set(err, BLQ_EINVAL, "dead: write is NULL");
	return blq__dump_check_logger(&c->logger, "logger", err);
}

static hub *hub_new(size_t n)
{
	hub *h = calloc(1, sizeof(*h) + n * sizeof(slot));

	if (h == NULL)
		return NULL;
	h->nslots = n;
	atomic_init(&h->refs, 1);
	pthread_mutex_init(&h->mu, NULL);
	blq__cond_init_monotonic(&h->cond);
	for (size_t i = 0; i < n; i++) {
		h->slots[i].hook.fn = on_outcome;
		h->slots[i].hook.ctx = &h->slots[i];
		h->slots[i].hub = h;
	}
	return h;
}

blq_restorer *blq_restorer_new(const blq_restorer_config *cfg, blq_error *err)
{
	blq__error_set(err, BLQ_OK, "%s", "");
	if (cfg == NULL) {
		blq__error_set(err, BLQ_EINVAL, "config: NULL");
		return NULL;
	}
	if (check(cfg, err) != 0)
		return NULL;
	blq_restorer *r = calloc(1, sizeof(*r));
	if (r == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "restorer: out of memory");
		return NULL;
	}
	if (blq__dump_name(r->name, cfg->name, "restorer", err) != 0) {
		free(r);
		return NULL;
	}
	r->cfg = *cfg;
	r->cfg.name = r->name;
	r->dead_format = 1;
	if (r->cfg.check_interval_ns == 0)
		r->cfg.check_interval_ns = DEFAULT_CHECK;
	if (r->cfg.postpone_interval_ns == 0)
		r->cfg.postpone_interval_ns = r->cfg.check_interval_ns;
	if (r->cfg.allow_rate == 0.0)
		r->cfg.allow_rate = DEFAULT_ALLOW_RATE;
	if (r->cfg.max_in_flight == 0)
		r->cfg.max_in_flight = DEFAULT_IN_FLIGHT;
	if (r->cfg.close_timeout_ns == 0)
		r->cfg.close_timeout_ns = DEFAULT_CLOSE_TIMEOUT;
	r->hub = hub_new(r->cfg.max_in_flight);
	if (r->hub == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "restorer: out of memory for %zu slots",
			       r->cfg.max_in_flight);
		free(r);
		return NULL;
	}
	for (size_t i = r->hub->nslots; i-- > 0;) {
		r->hub->slots[i].next = r->free_slots;
		r->free_slots = &r->hub->slots[i];
	}
	r->host = (blq_dump_reader_host){.name = r->name, .logger = r->cfg.logger,
					 .quarantined = on_quarantined, .ctx = r};
	/* Before the thread: only that thread calls the reader from now on. */
	r->cfg.reader->host = &r->host;
	if (blq__dump_thread(&r->thread, run, r, "blq-restore", "restorer", r->name, err) != 0) {
		r->cfg.reader->host = NULL;
		hub_unref(r->hub);
		free(r);
		return NULL;
	}
	return r;
}

int blq_restorer_kick(blq_restorer *r)
{
	if (r == NULL)
		return BLQ_EINVAL;
	pthread_mutex_lock(&r->hub->mu);
	r->hub->kicked = true;
	pthread_cond_broadcast(&r->hub->cond);
	pthread_mutex_unlock(&r->hub->mu);
	return 0;
}

int blq_restorer_close(blq_restorer *r)
{
	if (r == NULL)
		return BLQ_EINVAL;
	hub *h = r->hub;
	pthread_mutex_lock(&h->mu);
	__atomic_store_n(&h->closing, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&h->cond);
	while (!r->stopped) /* as blq_dump_close: every caller waits */
		pthread_cond_wait(&h->cond, &h->mu);
	bool join = !r->joined;
	r->joined = true;
	pthread_mutex_unlock(&h->mu);
	if (join)
		pthread_join(r->thread, NULL);
	return 0;
}

void blq_restorer_free(blq_restorer *r)
{
	if (r == NULL)
		return;
	blq_restorer_close(r);
	if (r->cfg.reader->host == &r->host)
		r->cfg.reader->host = NULL;
	blq__buf_free(&r->dead_buf);
	hub_unref(r->hub); /* the hooks of items still in the target hold theirs */
	free(r);
}

int blq_restorer_stats(blq_restorer *r, struct blq_restorer_stats *out)
{
	if (r == NULL || out == NULL)
		return BLQ_EINVAL;
	_Static_assert(sizeof(struct blq_restorer_stats) % sizeof(uint64_t) == 0,
		       "blq_restorer_stats: only uint64_t fields");
	uint64_t *dst = (uint64_t *)out;
	const uint64_t *src = (const uint64_t *)&r->st;
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	return 0;
}
