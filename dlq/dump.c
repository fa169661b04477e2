/*
 * The dump queue: a blq_enqueuer that encodes items into batches and hands
 * each batch to a writer on its own thread.
 *
 * Design
 * - Two buffers. `cur` is filled by producers under `mu` (encode, seal the
 *   record header with its CRC, append); `out` belongs to the flush thread.
 *   The flusher swaps them under `mu` and writes `out` without the lock, so
 *   producers never wait on a write or an fsync, only (briefly) on the
 *   encoding of another producer's item. Buffers keep their memory across
 *   swaps: a steady dump allocates nothing per item.
 * - When to swap: `cur` reached capacity (size), flush_interval_ns passed
 *   since its first item (interval), or close / blq_dump_flush asked
 *   (close). A producer signals `wake` only when `cur` turns non-empty (to
 *   arm the interval) or crosses capacity.
 * - Room: a producer finding `cur` full waits on `room` while the writer is
 *   healthy (the flusher is about to swap, or is writing the previous batch
 *   more slowly than items arrive: back-pressure, no loss). While writes
 *   fail (`failing`), a full `cur` refuses at once with BLQ_EFULL and the
 *   item is counted lost (refused): memory stays bounded at about two
 *   batches, and nothing is dropped silently.
 * - A failed batch stays in `out` and is retried after retry_interval_ns,
 *   doubling up to 32x. Each attempt offers the writer first, then the
 *   fallback, the part the writer could not take; a writer reports how many
 *   records from the start are durable, so a retry resumes after them.
 * - Close raises `closing` (producers get BLQ_ECLOSED), the flusher writes
 *   what is left and keeps retrying until close_timeout_ns, then drops the
 *   rest, counting it (dropped) and logging it, and exits.
 * - Format: records are format 1 (as older versions wrote them) until the
 *   first item that comes with a why (blq_dump_enqueue_why: a queue's
 *   leak), then format 2 for good: every record has its metadata, empty
 *   for items without a why. The batch being filled is rewritten once, at
 *   the switch; the one being written keeps its format (out_format), so a
 *   dump that never sees a why writes exactly what it always did.
 * - Failures are counted by reason (blq_dump_failure: write, no_room,
 *   encode, memory, dropped) in the stats, under `mu` with the counter
 *   they break down, and reported to the metrics' failure callback after
 *   it is released.
 * - Lock order: `mu` is the only lock. Callbacks (encoder under `mu`;
 *   metrics, logger, item_free, writers outside it).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "errorf.h"
#include "dump_format.h"
#include "dump_util.h"

#define CAPACITY_LIMIT ((size_t)1 << 30)
#define DEFAULT_FLUSH_INTERVAL 30000000000ull
#define DEFAULT_RETRY 100000000ull
#define DEFAULT_CLOSE_TIMEOUT 5000000000ull
#define RETRY_GROWTH 32u

struct blq_dump {
	blq_dump_config cfg;
	char name[BLQ__DUMP_NAME_MAX + 1];
	pthread_mutex_t mu;
	pthread_cond_t wake; /* the flusher: work, interval, close */
	pthread_cond_t room; /* producers: cur swapped out, or failing */
	pthread_cond_t done; /* flush and close waiters */
	pthread_t thread;

	/* All below under mu. out's bytes are read by the flusher without
	 * the lock: only the flusher changes out. */
	blq__buf cur, out;
	unsigned cur_format, out_format; /* 1 or 2; cur_format sticks at 2 */
	size_t cur_count;
	uint64_t cur_first_ns;
	size_t out_off;   /* bytes of out already persisted */
	size_t out_left;  /* records of out not persisted yet */
	int out_reason;
	uint64_t out_gen; /* flush requests this batch satisfies */
	uint64_t flush_req, flush_done, fail_gen;
	uint64_t retry_ns, close_deadline;
	bool closing, failing, stopped, joined;
	int close_rc;
	uint64_t refused_episode; /* refusals since writes started failing */
	struct blq_dump_stats st; /* buffered fields computed on read */
};

/* ---- producers ---------------------------------------------------- */

static void note_failure(blq_dump *d, enum blq_dump_failure reason, uint64_t n)
{
	const blq_dump_metrics *m = d->cfg.metrics;

	if (m != NULL && m->failure != NULL)
		m->failure(m->ctx, d->name, reason, n);
}

/* n items lost for `reason` (counted in st.failures by the caller). */
static void note_lost(blq_dump *d, enum blq_dump_failure reason, uint64_t n)
{
	const blq_dump_metrics *m = d->cfg.metrics;

	if (m != NULL && m->lost != NULL)
		m->lost(m->ctx, d->name, n);
	note_failure(d, reason, n);
}

/* Refuses the item: counted lost, for `reason`. Called with mu held;
 * returns unlocked. */
static int refuse(blq_dump *d, int rc, enum blq_dump_failure reason, const char *why)
{
	uint64_t n = ++d->st.refused;
	bool failing = d->failing;
	bool first_of_episode = failing && d->refused_episode++ == 0;

	d->st.failures[reason]++;
	pthread_mutex_unlock(&d->mu);
	note_lost(d, reason, 1);
	if (first_of_episode)
		blq__dlog(&d->cfg.logger, BLQ_LOG_WARN,
			  "dump %s: batch full (%zu bytes) while writes fail: refusing items, "
			  "counted lost",
			  d->name, d->cfg.capacity);
	else if (!failing && (n & (n - 1)) == 0) /* 1, 2, 4, 8...: no flood */
		blq__dlog(&d->cfg.logger, BLQ_LOG_WARN, "dump %s: item refused (%s), %llu so far",
			  d->name, why, (unsigned long long)n);
	return rc;
}

/* Encodes payload as a record at the end of cur, after `meta` bytes kept
 * for its metadata. mu held. Returns the data length or a negative code. */
static long encode(blq_dump *d, void *payload, size_t meta)
{
	const blq_dump_encoder *e = &d->cfg.encoder;

	if (blq__buf_reserve(&d->cur, BLQ__DUMP_REC_HEADER + meta + 256) != 0)
		return BLQ_ENOMEM;
	size_t at = d->cur.len + BLQ__DUMP_REC_HEADER + meta;
	long n = e->encode(e->ctx, payload, d->cur.p + at, d->cur.cap - at);
	if (n >= 0 && (size_t)n > d->cur.cap - at) {
		if ((size_t)n > BLQ_DUMP_RECORD_MAX)
			return BLQ_EINVAL;
		if (blq__buf_reserve(&d->cur, BLQ__DUMP_REC_HEADER + meta + (size_t)n) != 0)
			return BLQ_ENOMEM;
		long again = e->encode(e->ctx, payload, d->cur.p + at, d->cur.cap - at);
		n = again == n ? n : again < 0 ? again : BLQ_EINVAL;
	}
	if (n >= 0 && (size_t)n > BLQ_DUMP_RECORD_MAX)
		return BLQ_EINVAL;
	return n;
}

int blq_dump_enqueue_why(blq_dump *d, void *payload, const blq_dlq_why *why)
{
	if (d == NULL)
		return BLQ_EINVAL;
	if (why != NULL && ((unsigned)why->reason > BLQ_DLQ_CLOSED ||
			    memchr(why->queue, '\0', sizeof(why->queue)) == NULL))
		return BLQ_EINVAL;
	if (why != NULL && blq__dump_why_empty(why))
		why = NULL;
	pthread_mutex_lock(&d->mu);
	while (!d->closing && d->cur.len >= d->cfg.capacity) {
		if (d->failing)
			return refuse(d, BLQ_EFULL, BLQ_DUMP_FAIL_NO_ROOM, "no room");
		pthread_cond_wait(&d->room, &d->mu);
	}
	if (d->closing) {
		pthread_mutex_unlock(&d->mu);
		return BLQ_ECLOSED;
	}
	if (why != NULL && d->cur_format == 1) {
		if (blq__dump_upgrade(&d->cur, d->cur_count) != 0)
			return refuse(d, BLQ_ENOMEM, BLQ_DUMP_FAIL_MEMORY, "out of memory");
		d->cur_format = 2;
	}
	size_t meta = d->cur_format == 1 ? 0 : blq__dump_meta_size(why);
	long n = encode(d, payload, meta);
	if (n < 0)
		return n == BLQ_ENOMEM ? refuse(d, (int)n, BLQ_DUMP_FAIL_MEMORY, "out of memory")
				       : refuse(d, (int)n, BLQ_DUMP_FAIL_ENCODE, "encoder error");
	uint32_t restores =
		d->cfg.encoder.restores ? d->cfg.encoder.restores(d->cfg.encoder.ctx, payload) : 0;
	if (meta > 0)
		blq__dump_meta_put(d->cur.p + d->cur.len + BLQ__DUMP_REC_HEADER, why);
	blq__dump_rec_seal(d->cur.p + d->cur.len, (uint32_t)(meta + (size_t)n), restores);
	d->cur.len += BLQ__DUMP_REC_HEADER + meta + (size_t)n;
	if (d->cur_count++ == 0) {
		d->cur_first_ns = blq__monotonic_ns();
		pthread_cond_signal(&d->wake); /* arm the interval */
	} else if (d->cur.len >= d->cfg.capacity) {
		pthread_cond_signal(&d->wake);
	}
	d->st.in++;
	d->st.bytes_in += (uint64_t)n;
	pthread_mutex_unlock(&d->mu);

	const blq_dump_metrics *m = d->cfg.metrics;
	if (m != NULL && m->dump_in != NULL)
		m->dump_in(m->ctx, d->name, (size_t)n);
	if (d->cfg.item_free != NULL)
		d->cfg.item_free(payload);
	return 0;
}

int blq_dump_enqueue(blq_dump *d, void *payload)
{
	return blq_dump_enqueue_why(d, payload, NULL);
}

static int enqueue_cb(void *self, void *payload)
{
	return blq_dump_enqueue(self, payload);
}

static int enqueue_why_cb(void *self, void *payload, const blq_dlq_why *why)
{
	return blq_dump_enqueue_why(self, payload, why);
}

static int sync_cb(void *self)
{
	return blq_dump_flush(self);
}

blq_enqueuer blq_dump_enqueuer(blq_dump *d)
{
	return (blq_enqueuer){
		.enqueue = enqueue_cb, .self = d, .sync = sync_cb, .enqueue_why = enqueue_why_cb};
}

/* ---- the flush thread --------------------------------------------- */

/* Waits for a reason to write and moves cur to out. mu held. Returns false
 * when closing with nothing left. */
static bool take_batch(blq_dump *d)
{
	for (;;) {
		bool asked = d->flush_req > d->flush_done;

		if (d->cur_count > 0) {
			uint64_t due = blq__sat_add(d->cur_first_ns, d->cfg.flush_interval_ns);
			int reason = -1;

			if (d->cur.len >= d->cfg.capacity)
				reason = BLQ_DUMP_FLUSH_SIZE;
			else if (d->closing || asked)
				reason = BLQ_DUMP_FLUSH_CLOSE;
			else if (blq__monotonic_ns() >= due)
				reason = BLQ_DUMP_FLUSH_INTERVAL;
			if (reason >= 0) {
				blq__buf t = d->out;

				d->out = d->cur;
				d->cur = t;
				d->cur.len = 0;
				d->out_format = d->cur_format;
				d->out_off = 0;
				d->out_left = d->cur_count;
				d->cur_count = 0;
				d->out_reason = reason;
				d->out_gen = d->flush_req;
				pthread_cond_broadcast(&d->room);
				return true;
			}
			blq__cond_wait_until(&d->wake, &d->mu, due);
		} else {
			if (asked) {
				d->flush_done = d->flush_req;
				pthread_cond_broadcast(&d->done);
			}
			if (d->closing)
				return false;
			pthread_cond_wait(&d->wake, &d->mu);
		}
	}
}

typedef struct attempt {
	size_t done_main, done_fb, bytes;
	unsigned errors;
} attempt;

/* One attempt at out: the writer, then the fallback for the rest. Runs
 * without mu (only the flusher touches out). */
static void write_out(blq_dump *d, attempt *a)
{
	blq_dump_batch b = {.version = d->cfg.version,
			    .data = d->out.p + d->out_off,
			    .len = d->out.len - d->out_off,
			    .count = d->out_left,
			    .format = d->out_format};
	blq_dump_writer *ws[2] = {d->cfg.writer, d->cfg.fallback};
	size_t *dones[2] = {&a->done_main, &a->done_fb};

	memset(a, 0, sizeof(*a));
	for (int i = 0; i < 2 && b.count > 0 && ws[i] != NULL; i++) {
		blq_error err = {0, ""};
		size_t done = 0;
		int rc = ws[i]->write(ws[i], &b, &done, &err);

		if (rc == 0)
			done = b.count;
		if (done > b.count)
			done = b.count;
		size_t span = blq__dump_rec_span(b.data, done);
		*dones[i] = done;
		a->bytes += span;
		b.data += span;
		b.len -= span;
		b.count -= done;
		if (rc != 0) {
			a->errors++;
			note_failure(d, BLQ_DUMP_FAIL_WRITE, 1);
			blq__dlog(&d->cfg.logger, BLQ_LOG_WARN,
				  "dump %s: %s failed (%zu of %zu items written): %s", d->name,
				  i == 0 ? "writer" : "fallback writer", done, done + b.count,
				  err.msg[0] ? err.msg : blq_strerror(rc));
		}
	}
	const blq_dump_metrics *m = d->cfg.metrics;
	if (a->bytes > 0 && m != NULL && m->flush != NULL)
		m->flush(m->ctx, d->name, (enum blq_dump_flush_reason)d->out_reason, a->bytes);
}

/* Drops every buffered item at the end of a failed close. mu held. */
static void drop_all(blq_dump *d)
{
	uint64_t n = d->out_left + d->cur_count;

	d->st.dropped += n;
	d->st.failures[BLQ_DUMP_FAIL_DROPPED] += n;
	d->out_left = d->cur_count = 0;
	d->out.len = d->cur.len = d->out_off = 0;
	d->close_rc = BLQ_EIO;
	pthread_mutex_unlock(&d->mu);
	note_lost(d, BLQ_DUMP_FAIL_DROPPED, n);
	blq__dlog(&d->cfg.logger, BLQ_LOG_ERROR,
		  "dump %s: close: writes still failing after %llu ms: %llu items lost", d->name,
		  (unsigned long long)(d->cfg.close_timeout_ns / 1000000u), (unsigned long long)n);
	pthread_mutex_lock(&d->mu);
}

static void *flusher(void *arg)
{
	blq_dump *d = arg;

	pthread_mutex_lock(&d->mu);
	for (;;) {
		if (d->out_left == 0 && !take_batch(d))
			break;
		pthread_mutex_unlock(&d->mu);
		attempt a;
		write_out(d, &a);
		pthread_mutex_lock(&d->mu);

		d->st.written += a.done_main;
		d->st.written_fallback += a.done_fb;
		d->st.bytes_flushed += a.bytes;
		d->st.write_errors += a.errors;
		d->st.failures[BLQ_DUMP_FAIL_WRITE] += a.errors;
		d->out_off += a.bytes;
		d->out_left -= a.done_main + a.done_fb;
		if (d->out_left == 0) {
			d->st.flushes++;
			d->out.len = d->out_off = 0;
			d->retry_ns = d->cfg.retry_interval_ns;
			if (d->failing) {
				uint64_t refused = d->refused_episode;

				d->failing = false;
				d->refused_episode = 0;
				/* The logger may call back into the dump: not under mu. */
				pthread_mutex_unlock(&d->mu);
				blq__dlog(&d->cfg.logger, BLQ_LOG_INFO,
					  "dump %s: writes succeed again (%llu items refused meanwhile)",
					  d->name, (unsigned long long)refused);
				pthread_mutex_lock(&d->mu);
			}
			if (d->out_gen > d->flush_done)
				d->flush_done = d->out_gen;
			pthread_cond_broadcast(&d->done);
			continue;
		}
		/* Some records are still unwritten: retry later. */
		d->fail_gen++;
		pthread_cond_broadcast(&d->done);
		if (!d->failing) {
			d->failing = true;
			pthread_cond_broadcast(&d->room); /* waiting producers: refuse */
		}
		uint64_t now = blq__monotonic_ns(), until = blq__sat_add(now, d->retry_ns);
		if (d->closing) {
			if (now >= d->close_deadline) {
				drop_all(d);
				continue;
			}
			if (until > d->close_deadline)
				until = d->close_deadline;
		}
		blq__cond_wait_until(&d->wake, &d->mu, until);
		if (d->retry_ns < d->cfg.retry_interval_ns * RETRY_GROWTH)
			d->retry_ns *= 2;
	}
	d->stopped = true;
	pthread_cond_broadcast(&d->done);
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

/* ---- lifecycle ---------------------------------------------------- */

static int check(const blq_dump_config *c, blq_error *err)
{
	if (c->capacity == 0 || c->capacity > CAPACITY_LIMIT)
		return blq__error_set(err, BLQ_EINVAL, "capacity: must be 1..%zu bytes, got %zu",
				      CAPACITY_LIMIT, c->capacity);
	if (c->encoder.encode == NULL)
		return blq__error_set(err, BLQ_EINVAL,
				      "encoder: encode is NULL (try blq_dump_bytes_encoder())");
	int rc;
	if ((rc = blq__dump_check_interval(c->flush_interval_ns, "flush_interval_ns", false, err)) ||
	    (rc = blq__dump_check_interval(c->retry_interval_ns, "retry_interval_ns", false, err)) ||
	    (rc = blq__dump_check_interval(c->close_timeout_ns, "close_timeout_ns", true, err)))
		return rc;
	if (c->writer == NULL || c->writer->write == NULL)
		return blq__error_set(err, BLQ_EINVAL, "writer: required");
	if (c->fallback != NULL && c->fallback->write == NULL)
		return blq__error_set(err, BLQ_EINVAL, "fallback: write is NULL");
	if (c->fallback == c->writer)
		return blq__error_set(err, BLQ_EINVAL, "fallback: must differ from writer");
	return blq__dump_check_logger(&c->logger, "logger", err);
}

blq_dump *blq_dump_new(const blq_dump_config *cfg, blq_error *err)
{
	blq__error_set(err, BLQ_OK, "%s", "");
	if (cfg == NULL) {
		blq__error_set(err, BLQ_EINVAL, "config: NULL");
		return NULL;
	}
	if (check(cfg, err) != 0)
		return NULL;
	blq_dump *d = calloc(1, sizeof(*d));
	if (d == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "dump: out of memory");
		return NULL;
	}
	if (blq__dump_name(d->name, cfg->name, "dump", err) != 0) {
		free(d);
		return NULL;
	}
	d->cfg = *cfg;
	d->cfg.name = d->name;
	if (d->cfg.flush_interval_ns == 0)
		d->cfg.flush_interval_ns = DEFAULT_FLUSH_INTERVAL;
	if (d->cfg.retry_interval_ns == 0)
		d->cfg.retry_interval_ns = DEFAULT_RETRY;
	if (d->cfg.close_timeout_ns == 0)
		d->cfg.close_timeout_ns = DEFAULT_CLOSE_TIMEOUT;
	d->retry_ns = d->cfg.retry_interval_ns;
	d->cur_format = d->out_format = 1;
	pthread_mutex_init(&d->mu, NULL);
	blq__cond_init_monotonic(&d->wake);
	blq__cond_init_monotonic(&d->room);
	blq__cond_init_monotonic(&d->done);
	if (blq__dump_thread(&d->thread, flusher, d, "blq-dump", "dump", d->name, err) != 0) {
		pthread_cond_destroy(&d->wake);
		pthread_cond_destroy(&d->room);
		pthread_cond_destroy(&d->done);
		pthread_mutex_destroy(&d->mu);
		free(d);
		return NULL;
	}
	return d;
}

int blq_dump_flush(blq_dump *d)
{
	if (d == NULL)
		return BLQ_EINVAL;
	pthread_mutex_lock(&d->mu);
	if (d->closing) {
		pthread_mutex_unlock(&d->mu);
		return BLQ_ECLOSED;
	}
	uint64_t req = ++d->flush_req, fails = d->fail_gen;
	pthread_cond_signal(&d->wake);
	while (d->flush_done < req && d->fail_gen == fails && !d->stopped)
		pthread_cond_wait(&d->done, &d->mu);
	int rc = d->flush_done >= req ? 0 : BLQ_EIO;
	pthread_mutex_unlock(&d->mu);
	return rc;
}

int blq_dump_close(blq_dump *d)
{
	if (d == NULL)
		return BLQ_EINVAL;
	pthread_mutex_lock(&d->mu);
	if (!d->closing) {
		d->closing = true;
		d->close_deadline = blq__sat_add(blq__monotonic_ns(), d->cfg.close_timeout_ns);
		pthread_cond_broadcast(&d->wake);
		pthread_cond_broadcast(&d->room);
		size_t buffered = d->out_left + d->cur_count;
		/* The logger may call back into the dump: not under mu. */
		pthread_mutex_unlock(&d->mu);
		blq__dlog(&d->cfg.logger, BLQ_LOG_INFO, "dump %s: closing (%zu items buffered)",
			  d->name, buffered);
		pthread_mutex_lock(&d->mu);
	}
	while (!d->stopped)
		pthread_cond_wait(&d->done, &d->mu);
	bool join = !d->joined;
	d->joined = true;
	int rc = d->close_rc;
	pthread_mutex_unlock(&d->mu);
	if (join)
		pthread_join(d->thread, NULL);
	return rc;
}

void blq_dump_free(blq_dump *d)
{
	if (d == NULL)
		return;
	blq_dump_close(d);
	blq__buf_free(&d->cur);
	blq__buf_free(&d->out);
	pthread_cond_destroy(&d->wake);
	pthread_cond_destroy(&d->room);
	pthread_cond_destroy(&d->done);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

int blq_dump_stats(blq_dump *d, struct blq_dump_stats *out)
{
	if (d == NULL || out == NULL)
		return BLQ_EINVAL;
	pthread_mutex_lock(&d->mu);
	*out = d->st;
	out->buffered = d->out_left + d->cur_count;
	out->buffered_bytes = (d->out.len - d->out_off) + d->cur.len;
	pthread_mutex_unlock(&d->mu);
	return 0;
}
