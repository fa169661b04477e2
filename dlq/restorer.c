/*
 * The restorer: feeds dumped items back into a queue, at least once.
 *
 * Design
 * - One thread ("blq-restore") polls the reader every check_interval_ns
 *   (or at once after blq_restorer_kick) and restores every dump it can
 *   claim, one at a time, before sleeping again.
 * - For each record: a record already restored max_restores times goes to
 *   the dead store; otherwise it is decoded (restore count + 1) and offered
 *   with blq_try_enqueue while blq_rate(target) <= allow_rate. A too-full
 *   target (rate above allow_rate, or BLQ_EFULL) makes the restorer wait
 *   postpone_interval_ns and offer the same item again: an item is never
 *   dropped for lack of room. The target is used only through its public
 *   API (blq_rate, blq_try_enqueue).
 * - A dump is committed (file deleted or quarantined, entries acked) only
 *   after every record in it was accepted by the target or the dead store.
 *   Anything else (close, the target closing, a read or dead-store error)
 *   releases it unremoved: its items come back later, and those already
 *   accepted come back twice. That is the at-least-once contract; the
 *   original deleted a file as soon as its items sat in memory, so a crash
 *   lost them.
 * - A record the decoder refuses goes to the dead store, or without one is
 *   counted lost and logged: never silently.
 * - Lock: `mu` guards closing/kicked and the waits; counters are atomics
 *   written by the restorer thread only.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../util/errorf.h"
#include "dump_format.h"
#include "dump_util.h"

#define DEFAULT_CHECK 1000000000ull
#define DEFAULT_ALLOW_RATE 0.95

struct blq_restorer {
	blq_restorer_config cfg;
	char name[BLQ__DUMP_NAME_MAX + 1];
	pthread_mutex_t mu;
	pthread_cond_t cond;
	pthread_t thread;
	bool closing, kicked, joined; /* under mu; closing also read atomically */
	struct blq_restorer_stats st; /* atomic adds by the restorer thread */
	blq__buf dead;                /* this dump's records for the dead store */
	size_t dead_count;
	uint64_t dead_version;
};

#define COUNT(r, field, n) __atomic_fetch_add(&(r)->st.field, (n), __ATOMIC_RELAXED)

static bool closing(blq_restorer *r)
{
	return __atomic_load_n(&r->closing, __ATOMIC_ACQUIRE);
}

/* Waits ns unless closing; returns false when closing. */
static bool pause_for(blq_restorer *r, uint64_t ns)
{
	pthread_mutex_lock(&r->mu);
	if (!r->closing)
		blq__cond_wait_until(&r->cond, &r->mu, blq__sat_add(blq__monotonic_ns(), ns));
	bool go_on = !r->closing;
	pthread_mutex_unlock(&r->mu);
	return go_on;
}

/* Hands payload to the target; waits while it is too full. */
static int offer(blq_restorer *r, void *payload)
{
	for (;;) {
		if (closing(r))
			return BLQ_ECLOSED;
		if (blq_rate(r->cfg.target) > r->cfg.allow_rate) {
			COUNT(r, postponed, 1);
			pause_for(r, r->cfg.postpone_interval_ns);
			continue;
		}
		int rc = blq_try_enqueue(r->cfg.target, payload);
		if (rc == 0)
			return 0;
		if (rc != BLQ_EFULL) {
			blq__dlog(&r->cfg.logger, BLQ_LOG_WARN,
				  "restorer %s: the target refused an item (%s); the dump is kept",
				  r->name, blq_strerror(rc));
			return rc;
		}
		COUNT(r, postponed, 1);
		pause_for(r, r->cfg.postpone_interval_ns);
	}
}

static int to_dead(blq_restorer *r, const blq_dump_record *rec)
{
	int rc = blq__dump_rec_append(&r->dead, rec->data, rec->len, rec->restores);

	if (rc == 0) {
		r->dead_count++;
		r->dead_version = rec->version;
	}
	return rc;
}

static int flush_dead(blq_restorer *r)
{
	blq_dump_batch b = {r->dead_version, r->dead.p, r->dead.len, r->dead_count};
	blq_error err = {0, ""};
	size_t done = 0;

	if (r->dead_count == 0)
		return 0;
	int rc = r->cfg.dead->write(r->cfg.dead, &b, &done, &err);
	if (rc != 0) {
		blq__dlog(&r->cfg.logger, BLQ_LOG_ERROR,
			  "restorer %s: dead store failed: %s; the dump is kept", r->name,
			  err.msg[0] ? err.msg : blq_strerror(rc));
		return rc;
	}
	COUNT(r, dead, r->dead_count);
	return 0;
}

static void lost_record(blq_restorer *r, int why)
{
	uint64_t n = COUNT(r, lost, 1) + 1;
	const blq_dump_metrics *m = r->cfg.metrics;

	if (m != NULL && m->lost != NULL)
		m->lost(m->ctx, r->name, 1);
	if ((n & (n - 1)) == 0)
		blq__dlog(&r->cfg.logger, BLQ_LOG_WARN,
			  "restorer %s: decoder refused a record (%s) and there is no dead store: "
			  "lost (%llu so far)",
			  r->name, blq_strerror(why), (unsigned long long)n);
}

/* Restores every record of dump. 0 when all were accepted. */
static int restore_dump(blq_restorer *r, void *dump)
{
	blq_dump_reader *rd = r->cfg.reader;
	const blq_dump_metrics *m = r->cfg.metrics;

	r->dead.len = 0;
	r->dead_count = 0;
	for (;;) {
		blq_dump_record rec;
		blq_error err = {0, ""};
		int rc = rd->record(rd, dump, &rec, &err);

		if (rc < 0) {
			COUNT(r, read_errors, 1);
			blq__dlog(&r->cfg.logger, BLQ_LOG_WARN, "restorer %s: reading a dump: %s",
				  r->name, err.msg[0] ? err.msg : blq_strerror(rc));
			return rc;
		}
		if (rc == 0)
			break;
		COUNT(r, records, 1);
		if (r->cfg.max_restores > 0 && rec.restores >= r->cfg.max_restores) {
			if ((rc = to_dead(r, &rec)) != 0)
				return rc;
			continue;
		}
		void *payload = NULL;
		uint32_t times = rec.restores < UINT32_MAX ? rec.restores + 1 : UINT32_MAX;
		rc = r->cfg.decoder.decode(r->cfg.decoder.ctx, rec.data, rec.len, times, &payload);
		if (rc != 0) {
			if (r->cfg.dead == NULL)
				lost_record(r, rc);
			else if ((rc = to_dead(r, &rec)) != 0)
				return rc;
			continue;
		}
		if ((rc = offer(r, payload)) != 0) {
			if (r->cfg.item_free != NULL)
				r->cfg.item_free(payload);
			return rc;
		}
		COUNT(r, restored, 1);
		COUNT(r, bytes_out, rec.len);
		if (m != NULL && m->restore_out != NULL)
			m->restore_out(m->ctx, r->name, rec.len);
	}
	return flush_dead(r);
}

/* Restores dumps until none is waiting, or until something stops it. */
static void restore_all(blq_restorer *r)
{
	blq_dump_reader *rd = r->cfg.reader;

	while (!closing(r)) {
		void *dump = NULL;
		blq_error err = {0, ""};
		int rc = rd->next(rd, &dump, &err);

		if (rc < 0) {
			COUNT(r, read_errors, 1);
			blq__dlog(&r->cfg.logger, BLQ_LOG_WARN, "restorer %s: %s", r->name,
				  err.msg[0] ? err.msg : blq_strerror(rc));
			return;
		}
		if (rc == 0)
			return;
		if (restore_dump(r, dump) != 0) {
			rd->release(rd, dump);
			COUNT(r, released, 1);
			return;
		}
		if ((rc = rd->commit(rd, dump, &err)) != 0) {
			COUNT(r, read_errors, 1);
			blq__dlog(&r->cfg.logger, BLQ_LOG_WARN,
				  "restorer %s: cannot remove a restored dump (its items will come "
				  "again): %s",
				  r->name, err.msg[0] ? err.msg : blq_strerror(rc));
			return;
		}
		COUNT(r, dumps, 1);
	}
}

static void *run(void *arg)
{
	blq_restorer *r = arg;

	pthread_mutex_lock(&r->mu);
	while (!r->closing) {
		r->kicked = false;
		pthread_mutex_unlock(&r->mu);
		restore_all(r);
		pthread_mutex_lock(&r->mu);
		if (!r->closing && !r->kicked)
			blq__cond_wait_until(&r->cond, &r->mu,
					     blq__sat_add(blq__monotonic_ns(), r->cfg.check_interval_ns));
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

static int check(const blq_restorer_config *c, blq_error *err)
{
	const blq_dump_reader *rd = c->reader;

	if (rd == NULL || rd->next == NULL || rd->record == NULL || rd->commit == NULL ||
	    rd->release == NULL)
		return blq__error_set(err, BLQ_EINVAL,
				      "reader: required, with next, record, commit and release");
	if (c->decoder.decode == NULL)
		return blq__error_set(err, BLQ_EINVAL,
				      "decoder: decode is NULL (try blq_dump_bytes_decoder())");
	if (c->target == NULL)
		return blq__error_set(err, BLQ_EINVAL, "target: required");
	int rc;
	if ((rc = blq__dump_check_interval(c->check_interval_ns, "check_interval_ns", false, err)) ||
	    (rc = blq__dump_check_interval(c->postpone_interval_ns, "postpone_interval_ns", false,
					   err)))
		return rc;
	if (isnan(c->allow_rate) || c->allow_rate < 0.0 || c->allow_rate > 1.0)
		return blq__error_set(err, BLQ_EINVAL, "allow_rate: must be in (0, 1], got %g",
				      c->allow_rate);
	if (c->max_restores > 0 && (c->dead == NULL || c->dead->write == NULL))
		return blq__error_set(err, BLQ_EINVAL,
				      "dead: required with max_restores (where else would those "
				      "items go?)");
	if (c->dead != NULL && c->dead->write == NULL)
		return blq__error_set(err, BLQ_EINVAL, "dead: write is NULL");
	return blq__dump_check_logger(&c->logger, "logger", err);
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
	if (r->cfg.check_interval_ns == 0)
		r->cfg.check_interval_ns = DEFAULT_CHECK;
	if (r->cfg.postpone_interval_ns == 0)
		r->cfg.postpone_interval_ns = r->cfg.check_interval_ns;
	if (r->cfg.allow_rate == 0.0)
		r->cfg.allow_rate = DEFAULT_ALLOW_RATE;
	pthread_mutex_init(&r->mu, NULL);
	blq__cond_init_monotonic(&r->cond);
	if (blq__dump_thread(&r->thread, run, r, "blq-restore", "restorer", r->name, err) != 0) {
		pthread_cond_destroy(&r->cond);
		pthread_mutex_destroy(&r->mu);
		free(r);
		return NULL;
	}
	return r;
}

int blq_restorer_kick(blq_restorer *r)
{
	if (r == NULL)
		return BLQ_EINVAL;
	pthread_mutex_lock(&r->mu);
	r->kicked = true;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->mu);
	return 0;
}

int blq_restorer_close(blq_restorer *r)
{
	if (r == NULL)
		return BLQ_EINVAL;
	pthread_mutex_lock(&r->mu);
	__atomic_store_n(&r->closing, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&r->cond);
	bool join = !r->joined;
	r->joined = true;
	pthread_mutex_unlock(&r->mu);
	if (join)
		pthread_join(r->thread, NULL);
	return 0;
}

void blq_restorer_free(blq_restorer *r)
{
	if (r == NULL)
		return;
	blq_restorer_close(r);
	blq__buf_free(&r->dead);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->mu);
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
