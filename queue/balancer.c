/*
 * The balancer: follows the load with the worker pool between the bounds in
 * force (the config's, or the current schedule range's).
 *
 * Design
 * - A heartbeat thread calibrates every heartbeat_interval (it sleeps on an
 *   event count with a deadline between beats: an idle queue costs one
 *   wake-up per beat and nothing else). It exists only on balanced queues.
 * - Scale up is also driven from the enqueue side, so a burst does not wait
 *   for a heartbeat: every 64th accepted item per producer cell, and every
 *   time the queue is found full, the producer looks at the fill rate and,
 *   at or above wakeup_factor, grows the pool (trylock: if another thread is
 *   calibrating, that one will do). The same sample runs a whole
 *   calibration on the producer's thread when force_calibration_limit
 *   producers are inside enqueue at once (the original's force calibration).
 * - Wake-up rule: at or above wakeup_factor the active count doubles (at
 *   least +1), asleep workers first, then new threads, up to the max. The
 *   original wakes one worker per heartbeat, so a burst on a 1 s heartbeat
 *   needs workers_max seconds to reach full strength; doubling reaches 8
 *   from 1 in three steps, which the enqueue-side samples take within a few
 *   hundred items.
 * - Sleep rule (heartbeats only): at or below sleep_factor, estimate how
 *   many workers the load keeps busy from the time the running workers
 *   spent blocked on an empty queue since the last beat (each counts
 *   1 - its idle time / beat length; idle_clock.h keeps that time),
 *   keep ceil(busy * 1.25) (never below the min), and
 *   put the rest to sleep, at most half of the active (or sleep_threshold)
 *   per beat. A steady load thus settles where the kept workers are about
 *   80% busy and stays there: the fill rate alone cannot tell "too many
 *   workers" from "just enough", and a rule based on it alone flaps.
 * - An asleep worker not woken within sleep_interval is stopped (its
 *   thread ends; the slot becomes idle). Rate 1 marks the queue throttled
 *   until it falls again.
 * - Schedule: each beat looks up the range in force; on a switch it logs
 *   it, stops workers above the new max and starts workers up to the new
 *   min.
 * - workers_min 0: the pool may go to zero threads; an enqueue that finds
 *   no active worker starts one at once.
 * - Live resize (blq_resize): replaces the base bounds (the config's, in
 *   force when no schedule range is) under pool_mu and follows at once,
 *   as a beat would: a range in force still overrides them. Raising the
 *   ceiling sets up more slots (queue.c reserved room for the limit, so
 *   nothing moves under a walker); a queue resized gets the heartbeat
 *   thread if it had none (a fixed pool), which balances a range and
 *   finishes a grow whose slots threads still stopping held. Lowering the max stops the workers above it,
 *   each after its item and its hand: no item is abandoned.
 */
#include <math.h>
#include <pthread.h>
#include <time.h>

#include "internal.h"
#include "schedule_internal.h"

/* How much spare capacity the sleep rule keeps over the measured need. */
#define BLQ__HEADROOM 1.25

static uint64_t tod_ms(const blq *q)
{
	uint64_t wall = q->cfg.clock.wall_ns(q->cfg.clock.ctx);
	time_t sec = (time_t)(wall / 1000000000u);
	struct tm tm;

	localtime_r(&sec, &tm);
	return ((uint64_t)tm.tm_hour * 3600 + (uint64_t)tm.tm_min * 60 + (uint64_t)tm.tm_sec) *
		       1000 +
	       (wall % 1000000000u) / 1000000u;
}

static blq__bounds bounds_now(const blq *q, uint64_t now)
{
	blq__bounds b = q->base; /* the config's, or the last blq_resize's */
	blq_schedule_params p;

	if (q->schedule == NULL)
		return b;
	uint64_t t = blq_schedule_is_relative(q->schedule)
			     ? (now > q->start_ns ? (now - q->start_ns) / 1000000u : 0)
			     : tod_ms(q);
	int i = blq_schedule_lookup(q->schedule, t, &p);
	if (i < 0)
		return b;
	b.min = p.workers_min;
	b.max = p.workers_max;
	if (p.wakeup_factor > 0)
		b.wakeup = p.wakeup_factor;
	if (p.sleep_factor > 0)
		b.sleep = p.sleep_factor;
	b.range = i;
	return b;
}

/* Counts by command: what the balancer has asked for, not yet what the
 * threads report (they follow within an item). Stopping slots count as
 * neither. */
static void tally(const blq *q, unsigned *active, unsigned *asleep)
{
	unsigned a = 0, s = 0;

	for (unsigned i = 0; i < blq__slots(q); i++) {
		const blq__worker *w = &q->workers[i];
		int st = atomic_load_explicit(&w->state, memory_order_acquire);
		int cmd = atomic_load_explicit(&w->cmd, memory_order_acquire);

		if (st == BLQ__W_IDLE || cmd == BLQ__CMD_STOP)
			continue;
		if (cmd == BLQ__CMD_RUN)
			a++;
		else
			s++;
	}
	*active = a;
	*asleep = s;
}

/* Brings the active count up to `want`: asleep workers first, then new
 * threads. Caller holds pool_mu. */
static void grow(blq *q, unsigned active, unsigned want)
{
	for (unsigned i = 0; i < blq__slots(q) && active < want; i++) {
		blq__worker *w = &q->workers[i];

		if (atomic_load_explicit(&w->cmd, memory_order_acquire) == BLQ__CMD_SLEEP &&
		    atomic_load_explicit(&w->state, memory_order_acquire) != BLQ__W_IDLE) {
			blq__pool_wake(q, w);
			active++;
		}
	}
	for (unsigned i = 0; i < blq__slots(q) && active < want; i++) {
		blq__worker *w = &q->workers[i];

		if (atomic_load_explicit(&w->state, memory_order_acquire) == BLQ__W_IDLE &&
		    blq__pool_start(q, w) == 0)
			active++;
	}
}

/* Active workers above `keep` go to sleep (or stop, when `stop`), highest
 * index first. Caller holds pool_mu. */
static void shrink(blq *q, unsigned active, unsigned keep, bool stop)
{
	for (unsigned i = blq__slots(q); i-- > 0 && active > keep;) {
		blq__worker *w = &q->workers[i];

		if (atomic_load_explicit(&w->state, memory_order_acquire) == BLQ__W_IDLE ||
		    atomic_load_explicit(&w->cmd, memory_order_acquire) != BLQ__CMD_RUN)
			continue;
		if (stop)
			blq__pool_stop(q, w);
		else
			blq__pool_sleep(q, w);
		active--;
	}
}

static double fill_rate(const blq *q)
{
	return (double)blq__ready(q) / (double)q->capacity;
}

static void scale_up(blq *q, const blq__bounds *b, double rate)
{
	unsigned active, asleep;

	tally(q, &active, &asleep);
	unsigned want = active;
	/* A backlog the rate limit holds is not for more workers: they would
	 * wait for the same tokens (rate.c). */
	if (rate >= b->wakeup && !(q->rate_t != 0 && blq__rate_holding(q, blq__now(q))))
		want = active + (active > 0 ? active : 1);
	else if (active == 0 && rate > 0)
		want = 1; /* items wait and nobody works: never leave them */
	/* The min is a floor under the doubling too (a raised min on a
	 * backed-up queue went only to twice the active count). */
	if (want < b->min)
		want = b->min;
	if (want > b->max)
		want = b->max;
	if (want > active)
		grow(q, active, want);
}

/* How many workers the load kept busy since the last beat: each running
 * thread counts for the part of the beat it did not spend waiting on the
 * empty queue. Running threads, not commanded ones: a worker told to
 * sleep that is still finishing (or took one more item on its way to
 * park) is busy, and leaving it out would count its load as nobody's.
 * Updates the per-worker snapshots. */
static double busy_since_last_beat(blq *q, uint64_t now, uint64_t elapsed)
{
	double busy = 0;

	for (unsigned i = 0; i < blq__slots(q); i++) {
		blq__worker *w = &q->workers[i];
		uint64_t total = blq__idle_clock_read(&w->idle_clock, now);
		uint64_t d = total > w->hb_wait ? total - w->hb_wait : 0;

		/* Never lowered: a total read slightly low (idle_clock.h)
		 * must not count the difference twice at the next beat. */
		if (total > w->hb_wait)
			w->hb_wait = total;
		if (atomic_load_explicit(&w->state, memory_order_relaxed) == BLQ__W_ACTIVE)
			busy += 1.0 - (double)(d < elapsed ? d : elapsed) / (double)elapsed;
	}
	return busy;
}

unsigned blq__workers_waiting(blq *q)
{
	unsigned n = 0;

	for (unsigned i = 0; i < blq__slots(q); i++) {
		blq__worker *w = &q->workers[i];

		n += atomic_load_explicit(&w->state, memory_order_relaxed) == BLQ__W_ACTIVE &&
		     (atomic_load_explicit(&w->idle_clock, memory_order_relaxed) & 1) != 0;
	}
	return n;
}

static void scale_down(blq *q, const blq__bounds *b, double rate, uint64_t now)
{
	uint64_t elapsed = now > q->hb_last ? now - q->hb_last : 0;
	unsigned active, asleep;

	tally(q, &active, &asleep);
	double busy = elapsed > 0 ? busy_since_last_beat(q, now, elapsed) : 0;
	if (elapsed == 0 || rate > b->sleep || active <= b->min)
		return;
	unsigned needed = (unsigned)ceil(busy * BLQ__HEADROOM - 1e-9);
	if (needed < b->min)
		needed = b->min;
	if (needed >= active)
		return;
	unsigned limit = q->cfg.sleep_threshold ? q->cfg.sleep_threshold : active / 2;
	if (limit == 0)
		limit = 1;
	unsigned n = active - needed < limit ? active - needed : limit;
	shrink(q, active, active - n, false);
}

/* Asleep workers past sleep_interval end their threads; so do asleep ones
 * above the max. */
static void reap_sleepers(blq *q, const blq__bounds *b, uint64_t now)
{
	unsigned active, asleep;

	tally(q, &active, &asleep);
	for (unsigned i = blq__slots(q); i-- > 0;) {
		blq__worker *w = &q->workers[i];

		if (atomic_load_explicit(&w->cmd, memory_order_acquire) != BLQ__CMD_SLEEP ||
		    atomic_load_explicit(&w->state, memory_order_acquire) != BLQ__W_ASLEEP)
			continue;
		uint64_t since = atomic_load_explicit(&w->asleep_since, memory_order_relaxed);
		if (active + asleep > b->max || now - since >= q->cfg.sleep_interval_ns) {
			blq__pool_stop(q, w);
			asleep--;
		}
	}
}

static void apply_bounds(blq *q, const blq__bounds *b)
{
	if (b->range != q->bounds.range || b->min != q->bounds.min || b->max != q->bounds.max) {
		if (b->range >= 0)
			blq__log(q, BLQ_LOG_INFO,
				 "queue %s: schedule range \"%s\" in force: workers %u..%u", q->name,
				 blq__schedule_range_text(q->schedule, b->range), b->min, b->max);
		else
			blq__log(q, BLQ_LOG_INFO, "queue %s: config bounds in force: workers %u..%u",
				 q->name, b->min, b->max);
	}
	q->bounds = *b;
	atomic_store_explicit(&q->wakeup_permille, (unsigned)(b->wakeup * 1000.0),
			      memory_order_relaxed);
	unsigned active, asleep;
	tally(q, &active, &asleep);
	if (active > b->max)
		shrink(q, active, b->max, true);
}

/* Logs what a calibration changed, at debug level. */
static void log_change(blq *q, const char *who, double rate, unsigned a0, unsigned s0)
{
	unsigned a1, s1;

	tally(q, &a1, &s1);
	if (a1 != a0 || s1 != s0)
		blq__log(q, BLQ_LOG_DEBUG,
			 "queue %s: %s at rate %.2f: active %u -> %u, asleep %u -> %u", q->name,
			 who, rate, a0, a1, s0, s1);
}

/* The bounds in force at `now` (a schedule range, else the base), put in
 * force: stops above the max, ends sleepers past their time, grows to
 * the min and with the fill rate. What a calibration and a resize share.
 * Caller holds pool_mu. */
static blq__bounds follow_bounds(blq *q, uint64_t now, double rate)
{
	blq__bounds b = bounds_now(q, now);

	apply_bounds(q, &b);
	reap_sleepers(q, &b, now);
	scale_up(q, &b, rate);
	return b;
}

static void calibrate_locked(blq *q)
{
	uint64_t now = blq__now(q);
	double rate = fill_rate(q);
	unsigned a0, s0;

	tally(q, &a0, &s0);
	atomic_store_explicit(&q->throttled, rate >= 1.0, memory_order_relaxed);
	blq__bounds b = follow_bounds(q, now, rate);
	scale_down(q, &b, rate, now);
	q->hb_last = now;
	log_change(q, "calibration", rate, a0, s0);
}

void blq__calibrate(blq *q)
{
	pthread_mutex_lock(&q->pool_mu);
	if (!q->pool_closed && !atomic_load_explicit(&q->closed, memory_order_acquire))
		calibrate_locked(q);
	pthread_mutex_unlock(&q->pool_mu);
}

void blq__calibrate_try(blq *q)
{
	if (pthread_mutex_trylock(&q->pool_mu) != 0)
		return; /* someone is calibrating right now */
	if (!q->pool_closed && !atomic_load_explicit(&q->closed, memory_order_acquire))
		calibrate_locked(q);
	pthread_mutex_unlock(&q->pool_mu);
}

void blq__scale_up_hint(blq *q)
{
	bool none = atomic_load_explicit(&q->n_active, memory_order_acquire) == 0;

	/* With no active worker, wait for the lock: the item must not sit
	 * until the next heartbeat. Otherwise another calibrating thread
	 * will do. */
	if (none)
		pthread_mutex_lock(&q->pool_mu);
	else if (pthread_mutex_trylock(&q->pool_mu) != 0)
		return;
	if (!q->pool_closed && !atomic_load_explicit(&q->forced, memory_order_acquire)) {
		double rate = fill_rate(q);
		unsigned a0, s0;

		tally(q, &a0, &s0);
		atomic_store_explicit(&q->throttled, rate >= 1.0, memory_order_relaxed);
		scale_up(q, &q->bounds, rate);
		log_change(q, "enqueue-side scale-up", rate, a0, s0);
	}
	pthread_mutex_unlock(&q->pool_mu);
}

void blq__balance_on_close(blq *q)
{
	pthread_mutex_lock(&q->pool_mu);
	unsigned active, asleep;
	tally(q, &active, &asleep);
	/* Asleep workers help drain; with none at all, start one if items
	 * wait (workers_min 0). */
	for (unsigned i = 0; i < blq__slots(q); i++) {
		blq__worker *w = &q->workers[i];

		if (atomic_load_explicit(&w->cmd, memory_order_acquire) == BLQ__CMD_SLEEP)
			blq__pool_wake(q, w);
	}
	if (active + asleep == 0 && blq_size(q) > 0)
		grow(q, 0, 1);
	pthread_mutex_unlock(&q->pool_mu);
}

static void *heartbeat_main(void *arg)
{
	blq *q = arg;

	pthread_setname_np(pthread_self(), "blq-hb");
	for (;;) {
		uint32_t snap = blq__ec_prepare(&q->hb_ec);

		if (atomic_load_explicit(&q->closed, memory_order_seq_cst)) {
			blq__ec_cancel(&q->hb_ec);
			break;
		}
		blq__ec_wait(&q->hb_ec, snap, blq__monotonic_ns() + q->cfg.heartbeat_interval_ns);
		if (atomic_load_explicit(&q->closed, memory_order_seq_cst))
			break;
		blq__calibrate(q);
	}
	return NULL;
}

/* Caller holds pool_mu. 0, or BLQ_ETHREAD said in err. */
static int heartbeat_start(blq *q, blq_error *err)
{
	int e = blq__thread_create(&q->hb_thread, heartbeat_main, q);

	if (e != 0)
		return blq__error_set(err, BLQ_ETHREAD,
				      "heartbeat_interval_ns: cannot start the heartbeat thread (error %d)",
				      e);
	q->hb_started = true;
	return 0;
}

int blq__balancer_start(blq *q, blq_error *err)
{
	pthread_mutex_lock(&q->pool_mu);
	q->base = (blq__bounds){q->cfg.workers_min, q->cfg.workers_max, q->cfg.wakeup_factor,
				q->cfg.sleep_factor, -1};
	q->hb_last = blq__now(q);
	q->bounds = bounds_now(q, q->hb_last);
	atomic_store_explicit(&q->wakeup_permille, (unsigned)(q->bounds.wakeup * 1000.0),
			      memory_order_relaxed);
	unsigned min = q->bounds.min;
	grow(q, 0, min);
	unsigned active, asleep;
	tally(q, &active, &asleep);
	pthread_mutex_unlock(&q->pool_mu);
	if (active < min)
		return blq__error_set(err, BLQ_ETHREAD, "workers: could start only %u of %u threads",
				      active, min);
	if (!q->balanced)
		return 0;
	pthread_mutex_lock(&q->pool_mu);
	int rc = heartbeat_start(q, err);
	pthread_mutex_unlock(&q->pool_mu);
	return rc;
}

void blq__balancer_stop(blq *q)
{
	/* Under pool_mu: blq_resize may start the thread, but only before
	 * the close raised `closed`, which our caller did. */
	pthread_mutex_lock(&q->pool_mu);
	bool started = q->hb_started;
	q->hb_started = false;
	pthread_mutex_unlock(&q->pool_mu);
	if (!started)
		return;
	blq__ec_notify(&q->hb_ec, 0);
	pthread_join(q->hb_thread, NULL);
}

/* The bounds a blq_resize asks for, as a config the checks of config.c
 * read (so the messages are blq_new's): unset factors are the base's. */
static blq_config resize_config(const blq *q, const blq_pool_bounds *nb)
{
	blq_config c = {0};

	c.workers = nb->workers;
	c.workers_min = nb->workers_min;
	c.workers_max = nb->workers_max;
	c.wakeup_factor = nb->wakeup_factor != 0 ? nb->wakeup_factor : q->base.wakeup;
	c.sleep_factor = nb->sleep_factor != 0 ? nb->sleep_factor : q->base.sleep;
	c.schedule = q->schedule;
	return c;
}

int blq_resize(blq *q, const blq_pool_bounds *nb, blq_error *err)
{
	blq__error_set(err, BLQ_OK, "%s", "");
	if (q == NULL)
		return blq__error_set(err, BLQ_EINVAL, "%s: is NULL", "queue");
	if (nb == NULL)
		return blq__error_set(err, BLQ_EINVAL, "%s: is NULL", "bounds");
	pthread_mutex_lock(&q->pool_mu);
	/* Checked under pool_mu, which the close's balancer_stop and
	 * join_all take after raising `closed`: a resize that passes here
	 * finishes before they look, and its threads drain with the rest. */
	if (q->pool_closed || atomic_load_explicit(&q->closed, memory_order_seq_cst)) {
		pthread_mutex_unlock(&q->pool_mu);
		return blq__error_set(err, BLQ_ECLOSED, "queue: %s is closing or closed", q->name);
	}
	blq_config c = resize_config(q, nb);
	int rc = blq__bounds_check(&c, err);
	if (rc != 0) {
		pthread_mutex_unlock(&q->pool_mu);
		return rc;
	}
	unsigned min = c.workers > 0 ? c.workers : c.workers_min;
	unsigned max = c.workers > 0 ? c.workers : c.workers_max;
	bool balanced = min < max || q->schedule != NULL;
	/* A resized queue runs the heartbeat from now on (a wake-up a beat):
	 * a fixed pool given a range needs it to balance, and any pool needs
	 * it to finish a grow whose slots are still held by threads stopping
	 * after their items (resizes in quick succession). */
	if (!q->hb_started) {
		if ((rc = heartbeat_start(q, err)) != 0) {
			pthread_mutex_unlock(&q->pool_mu);
			return rc;
		}
		q->hb_last = blq__now(q);
	}
	if (balanced)
		atomic_store_explicit(&q->balanced, true, memory_order_relaxed);
	q->base = (blq__bounds){min, max, c.wakeup_factor, c.sleep_factor, -1};
	blq__slots_grow(q, max);
	/* Follow now, not at the next beat: the bounds in force (a schedule
	 * range still overrides the base), stops above the max (each after
	 * its current item and its hand), starts up to the min. */
	double rate = fill_rate(q);
	unsigned a0, s0;
	tally(q, &a0, &s0);
	blq__bounds b = follow_bounds(q, blq__now(q), rate);
	log_change(q, "resize", rate, a0, s0);
	unsigned active, asleep;
	tally(q, &active, &asleep);
	bool idle = false;
	for (unsigned i = 0; i < blq__slots(q) && !idle; i++)
		idle = atomic_load_explicit(&q->workers[i].state, memory_order_acquire) == BLQ__W_IDLE;
	pthread_mutex_unlock(&q->pool_mu);
	/* Short of the min with an idle slot left: a thread did not start.
	 * (No idle slot: stopping threads hold them, the heartbeat finishes
	 * the grow; a close that began meanwhile ends new threads at once.) */
	if (active < b.min && idle && !atomic_load_explicit(&q->closed, memory_order_seq_cst))
		return blq__error_set(err, BLQ_ETHREAD,
				      "workers_min: could start only %u of %u threads (the "
				      "heartbeat tries again at each beat)",
				      active, b.min);
	return 0;
}
