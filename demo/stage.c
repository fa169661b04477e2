/* A stage: the queue built from the init body, its DLQ, dump and restorer. */
#include "stage_internal.h"

#include "log.h"
#include "net.h"

#include "redrive.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* The dump's writer and reader, on disk or in a Redis stream. */
static int build_dump_io(demo_stage *s, const demo_env *env, const blq_dump_metrics *dw,
			 char *err, size_t errlen, int *status)
{
	blq_error e;
	demo_dump_where *w = &s->where;
	/* The dead store, when the restorer has a limit (as the library: a
	 * record restored max_restores times goes there). */
	w->has_dead = s->spec.has_restore && s->spec.restore.max_restores > 0;
	if (!s->spec.dump.redis) {
		/* '.' cannot occur in a key, so no key's glob matches another's files. */
		snprintf(w->mask, sizeof w->mask, "%s.%%Y-%%m-%%d--%%H-%%M-%%S--%%i.bin", s->key);
		snprintf(w->match, sizeof w->match, "%s.*.bin", s->key);
		w->dir = env->dump_dir;
		blq_dump_fs_config fc = {.directory = env->dump_dir, .file_mask = w->mask,
					 .match = w->match, .version = 1, .name = s->key,
					 .metrics = dw, .logger = s->logger,
					 .write_buffer = (size_t)s->spec.dump.buffer};
		s->writer = blq_dump_fs_writer_new(&fc, &e);
		if (s->writer != NULL && s->spec.has_restore)
			s->reader = blq_dump_fs_reader_new(&fc, &e);
		if (s->writer != NULL && w->has_dead) {
			snprintf(w->dead_dir, sizeof w->dead_dir, "%s/%s.dead", env->dump_dir, s->key);
			if (mkdir(w->dead_dir, 0755) != 0 && errno != EEXIST) {
				snprintf(err, errlen, "restore.max_restores: cannot make the dead store "
					 "%s: %s", w->dead_dir, strerror(errno));
				*status = 500;
				return -1;
			}
			fc.directory = w->dead_dir;
			s->dead = blq_dump_fs_writer_new(&fc, &e);
		}
	} else {
		char host[128];
		int port = env->redis_port;
		const char *h = env->redis_host;
		if (s->spec.dump.redis_addr[0] != '\0') {
			if (!demo_split_hostport(s->spec.dump.redis_addr, host, sizeof host, &port)) {
				snprintf(err, errlen, "dump.redis_addr: expected host:port, got \"%s\"",
					 s->spec.dump.redis_addr);
				*status = 400;
				return -1;
			}
			h = host;
		}
		if (h == NULL) {
			snprintf(err, errlen, "dump.redis_addr: no Redis address (set it, or start "
					      "blq-demo with --redis host:port)");
			*status = 400;
			return -1;
		}
		char consumer[96];
		char *key = w->key;
		if (s->spec.dump.redis_key[0] != '\0')
			snprintf(key, sizeof w->key, "%s", s->spec.dump.redis_key);
		else
			snprintf(key, sizeof w->key, "blq-demo:%s", s->key);
		w->redis = true;
		snprintf(w->host, sizeof w->host, "%s", h);
		w->port = port;
		/* A stable consumer name takes its own pending entries back at once
		 * after a restart. */
		snprintf(consumer, sizeof consumer, "blq-demo-%s", s->key);
		blq_dump_redis_config rc = {.host = h, .port = port, .key = key,
					    .consumer = consumer, .version = 1, .name = s->key,
					    .metrics = dw, .logger = s->logger};
		s->writer = blq_dump_redis_writer_new(&rc, &e);
		/* The library's writer connects at its first write, so a dump
		 * starts while Redis is down (its batches then go to a fallback
		 * writer, or wait). A demo key has no fallback, and its restorer
		 * and the DLQ API need the server, so init asks once (an
		 * inspector connects before it returns) and refuses with 503
		 * while Redis does not answer (docs/demo-daemon.md). */
		if (s->writer != NULL) {
			blq_inspect_config ic = {.version = 1, .key = key, .host = h, .port = port};
			blq_inspect *probe = blq_inspect_open(&ic, &e);
			if (probe == NULL) {
				blq_dump_writer_free(s->writer);
				s->writer = NULL;
			}
			blq_inspect_close(probe);
		}
		if (s->writer != NULL && s->spec.has_restore)
			s->reader = blq_dump_redis_reader_new(&rc, &e);
		if (s->reader != NULL && w->has_dead) {
			snprintf(w->dead_key, sizeof w->dead_key, "%s:dead", key);
			rc.key = w->dead_key;
			s->dead = blq_dump_redis_writer_new(&rc, &e);
		}
	}
	if (s->writer == NULL || (s->spec.has_restore && s->reader == NULL) ||
	    (w->has_dead && s->dead == NULL)) {
		snprintf(err, errlen, "dump: %s", e.msg);
		*status = e.code == BLQ_EINVAL && s->spec.dump.redis ? 503 : e.code == BLQ_EINVAL ? 400 : 500;
		return -1;
	}
	blq_dump_config dc = {.name = s->key, .version = 1, .capacity = s->spec.dump.capacity,
			      .flush_interval_ns = s->spec.dump.flush_ns,
			      .encoder = demo_item_encoder(), .writer = s->writer,
			      .metrics = dw, .logger = s->logger};
	s->dump = blq_dump_new(&dc, &e);
	if (s->dump == NULL) {
		snprintf(err, errlen, "dump: %s", e.msg);
		*status = e.code == BLQ_EINVAL ? 400 : 500;
		return -1;
	}
	return 0;
}

static int build_queue(demo_stage *s, const blq_metrics_writer *qw, char *err, size_t errlen,
		       int *status)
{
	const demo_spec *sp = &s->spec;
	blq_config c = {
		.name = s->key,
		.capacity = sp->has_qos ? 0 : sp->capacity,
		.streams = sp->streams,
		.worker = demo_emulate_work,
		.worker_ctx = s,
		.workers = sp->workers,
		.workers_min = sp->workers_min,
		.workers_max = sp->workers_max,
		.wakeup_factor = sp->wakeup_factor,
		.sleep_factor = sp->sleep_factor,
		.sleep_threshold = sp->sleep_threshold,
		.heartbeat_interval_ns = sp->heartbeat_ns,
		.max_retries = sp->max_retries,
		.retry_interval_ns = sp->retry_interval_ns,
		.backoff = sp->backoff,
		.leak_direction = sp->leak_direction,
		.front_leak_attempts = sp->front_leak_attempts,
		.delay_interval_ns = sp->delay_ns,
		.metrics = qw,
		.logger = s->logger,
	};
	/* The original makes the queue leaky for allow_leak and for
	 * allow_deadline (late items go to its DLQ). */
	if (sp->allow_leak || sp->allow_deadline) {
		blq_discard_init(&s->discard, NULL);
		c.dlq = s->dump != NULL ? blq_dump_enqueuer(s->dump) : blq_discard_enqueuer(&s->discard);
		c.deadline_to_dlq = sp->allow_deadline;
		c.fail_to_dlq = sp->fail_to_dlq;
	}
	blq_qos_subq subqs[BLQ_QOS_SUBQS_MAX];
	blq_qos_config qos;
	if (sp->has_qos) {
		for (unsigned i = 0; i < sp->qos.nqueues; i++) {
			const demo_subq *d = &sp->qos.queues[i];
			subqs[i] = (blq_qos_subq){.name = d->name[0] ? d->name : NULL,
						  .capacity = d->capacity, .weight = d->weight,
						  .ingress_weight = d->ingress_weight,
						  .egress_weight = d->egress_weight};
		}
		/* The original's demo draws priorities at random. */
		qos = (blq_qos_config){
			.algo = sp->qos.algo,
			.egress = {.capacity = sp->qos.egress.capacity,
				   .streams = sp->qos.egress.streams,
				   .workers = sp->qos.egress.workers,
				   .idle_threshold = sp->qos.egress.idle_threshold,
				   .idle_timeout_ns = sp->qos.egress.idle_timeout_ns},
			.evaluator = {.kind = BLQ_QOS_EVAL_RANDOM},
			.subqs = subqs,
			.nsubqs = sp->qos.nqueues};
		c.qos = &qos;
	}
	blq_schedule *sch = NULL;
	if (sp->n_workers_schedule > 0) {
		sch = demo_spec_schedule(sp->workers_schedule, sp->n_workers_schedule, false,
					 "workers_schedule", err, errlen);
		if (sch == NULL) {
			*status = 400;
			return -1;
		}
		c.schedule = sch;
	}
	blq_error e;
	s->q = blq_new(&c, &e);
	blq_schedule_free(sch); /* the queue keeps a copy */
	if (s->q == NULL) {
		snprintf(err, errlen, "%s", e.msg);
		*status = e.code == BLQ_EINVAL ? 400 : 500;
		return -1;
	}
	return 0;
}

static int build_restorer(demo_stage *s, const blq_dump_metrics *dw, char *err, size_t errlen)
{
	blq_restorer_config rc = {.name = s->key, .reader = s->reader,
				  .decoder = demo_item_decoder(), .target = s->q,
				  .check_interval_ns = s->spec.restore.check_ns,
				  .postpone_interval_ns = s->spec.restore.postpone_ns,
				  .allow_rate = s->spec.restore.allow_rate,
				  .max_restores = s->spec.restore.max_restores, .dead = s->dead,
				  .metrics = dw, .logger = s->logger};
	blq_error e;
	s->restorer = blq_restorer_new(&rc, &e);
	if (s->restorer == NULL) {
		snprintf(err, errlen, "restore: %s", e.msg);
		return -1;
	}
	return 0;
}

demo_stage *demo_stage_start(const char *key, const demo_spec *spec, const demo_env *env,
			     const blq_metrics_writer *qw, const blq_dump_metrics *dw,
			     char *err, size_t errlen, int *status)
{
	*status = 500;
	if (spec->allow_deadline && spec->delay_ns >= spec->worker_delay_ns) {
		snprintf(err, errlen, "allow_deadline: each item's deadline is worker_delay, which "
				      "must be longer than delay_ns");
		*status = 400;
		return NULL;
	}
	demo_stage *s = calloc(1, sizeof *s);
	if (s == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(s->key, sizeof s->key, "%s", key);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	s->instance = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	s->spec = *spec;
	s->prom = env->prom;
	s->logger = env->logger;
	pthread_mutex_init(&s->rmu, NULL);
	if ((spec->has_dump && build_dump_io(s, env, dw, err, errlen, status) != 0) ||
	    build_queue(s, qw, err, errlen, status) != 0)
		goto fail;
	*status = 500;
	if (spec->has_restore && build_restorer(s, dw, err, errlen) != 0)
		goto fail;
	s->history = demo_history_new(DEMO_HISTORY_SAMPLES, blq_qos_subqs(s->q));
	if (s->history == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (blq_prom_watch(s->prom, s->q) != 0) {
		snprintf(err, errlen, "metrics: cannot watch the queue (out of memory)");
		goto fail;
	}
	if (demo_producers_init(s, err, errlen) != 0 || demo_schedule_start(s, err, errlen) != 0)
		goto fail;
	demo_log(&s->logger, BLQ_LOG_INFO, "queue %s: started: capacity %zu, %u producers", s->key,
		 blq_capacity(s->q), spec->producers_min);
	return s;
fail:
	demo_stage_stop(s, true, 0);
	demo_stage_free(s);
	return NULL;
}

int demo_stage_producers_up(demo_stage *s, unsigned delta, char *err, size_t errlen)
{
	return demo_producers_add(s, delta ? (long)delta : 1, err, errlen);
}

int demo_stage_producers_down(demo_stage *s, unsigned delta, char *err, size_t errlen)
{
	return demo_producers_add(s, delta ? -(long)delta : -1, err, errlen);
}

void demo_stage_producers(demo_stage *s, unsigned *active, unsigned *max)
{
	pthread_mutex_lock(&s->pmu);
	*active = s->active;
	pthread_mutex_unlock(&s->pmu);
	*max = s->spec.producers_max;
}


uint64_t demo_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool demo_stage_stop(demo_stage *s, bool force, uint64_t deadline_ns)
{
	bool timed_out = false;

	/* A redrive feeds the dump: it ends first (cancelled, joined). */
	pthread_mutex_lock(&s->rmu);
	s->redrive_closed = true;
	pthread_mutex_unlock(&s->rmu);
	demo_redrive_stop(s->redrive);
	demo_schedule_stop(s);
	demo_producers_stop_all(s);
	/* Stop feeding first: the restorer's items would only meet a closed
	 * queue. The dump closes last, after the queue leaked into it. */
	if (s->restorer != NULL)
		blq_restorer_close(s->restorer);
	if (s->q != NULL) {
		if (force) {
			blq_force_close(s->q);
		} else if (deadline_ns != 0) {
			uint64_t now = demo_now_ns();
			timed_out = blq_close_timeout(s->q, deadline_ns > now ? deadline_ns - now : 0) ==
				    BLQ_ETIMEDOUT;
		}
		blq_close(s->q); /* wakes producers blocked on a full queue */
	}
	demo_producers_join(s);
	if (s->dump != NULL && blq_dump_close(s->dump) != 0)
		demo_log(&s->logger, BLQ_LOG_ERROR, "queue %s: dump: items dropped at close (see its "
			 "counters)", s->key);
	return timed_out;
}

void demo_stage_force(demo_stage *s)
{
	if (s->q != NULL)
		blq_force_close(s->q);
}


void demo_stage_free(demo_stage *s)
{
	if (s == NULL)
		return;
	demo_producers_free(s);
	blq_restorer_free(s->restorer); /* its target must outlive it */
	if (s->q != NULL) {
		blq_prom_unwatch(s->prom, s->q);
		blq_free(s->q);
	}
	blq_dump_free(s->dump);
	blq_dump_reader_free(s->reader);
	blq_dump_writer_free(s->writer);
	blq_dump_writer_free(s->dead);
	demo_redrive_free(s->redrive);
	pthread_mutex_destroy(&s->rmu);
	demo_history_free(s->history);
	free(s);
}
