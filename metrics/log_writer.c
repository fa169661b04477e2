/*
 * The log writers (blq_log_writer_init, blq_dump_log_writer_init): a
 * blq_metrics_writer that turns every queue, worker and sub-queue event
 * into one log line through the caller's logger, and a blq_dump_metrics
 * that does the same for dump, restorer and reader events, for debugging
 * a queue's (or a dump's) behaviour event by event (it costs a formatted
 * line per item: not for production rates; use the Prometheus writer
 * there). Both write through one function, so their lines have one shape
 * (`queue=` or `dump=NAME event=EVENT key=value ...`, BLQ_LOG_DEBUG).
 * And the ready stderr logger
 * (blq_stderr_logger): a level filter and one fprintf per line, so lines
 * of concurrent threads never interleave.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include <blq/dlqdump.h>
#include <blq/log.h>

#include "flush_reason.h"

static const char *level_name(int level)
{
	switch (level) {
	case BLQ_LOG_ERROR:
		return "ERROR";
	case BLQ_LOG_WARN:
		return "WARN";
	case BLQ_LOG_INFO:
		return "INFO";
	default:
		return "DEBUG";
	}
}

/* Room for the longest lines (a demo queue's final accounting with its
 * dump's and restorer's counters is ~900 bytes); a longer one is cut and
 * says so, never silently. */
#define LINE_MAX_BYTES 4096

static void stderr_log(void *ctx, int level, const char *fmt, va_list ap)
{
	char line[LINE_MAX_BYTES];
	int max = (int)(intptr_t)ctx;

	if (level > max)
		return;
	int n = snprintf(line, sizeof(line), "blq %s: ", level_name(level));
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	/* One write per line, so lines of concurrent threads stay whole. */
	fprintf(stderr, "%s%s\n", line, m >= 0 && (size_t)(n + m) >= sizeof(line) ? " [cut]" : "");
}

blq_logger blq_stderr_logger(int level)
{
	if (level == 0) /* as blq_logger.level's 0 */
		level = BLQ_LOG_INFO;
	return (blq_logger){.log = stderr_log, .ctx = (void *)(intptr_t)level, .level = level};
}

/* One BLQ_LOG_DEBUG line through a writer's logger (the queue's writer
 * and the dump's each pass their own). */
static void log_to(const blq_logger *lg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void log_to(const blq_logger *lg, const char *fmt, ...)
{
	va_list ap;

	if (lg->log == NULL)
		return;
	va_start(ap, fmt);
	lg->log(lg->ctx, BLQ_LOG_DEBUG, fmt, ap);
	va_end(ap);
}

#define logf_(lw, ...) log_to(&((const blq_log_writer *)(lw))->logger, __VA_ARGS__)

static void w_setup(void *c, const char *q, unsigned a, unsigned s, unsigned i)
{
	logf_(c, "queue=%s event=worker_setup active=%u asleep=%u idle=%u", q, a, s, i);
}

static void w_init(void *c, const char *q, unsigned w)
{
	logf_(c, "queue=%s event=worker_init worker=%u", q, w);
}

static void w_sleep(void *c, const char *q, unsigned w)
{
	logf_(c, "queue=%s event=worker_sleep worker=%u", q, w);
}

static void w_wakeup(void *c, const char *q, unsigned w)
{
	logf_(c, "queue=%s event=worker_wakeup worker=%u", q, w);
}

static void w_wait(void *c, const char *q, unsigned w, uint64_t ns)
{
	logf_(c, "queue=%s event=worker_wait worker=%u ns=%llu", q, w, (unsigned long long)ns);
}

static void w_stop(void *c, const char *q, unsigned w, int forced)
{
	logf_(c, "queue=%s event=worker_stop worker=%u forced=%d", q, w, forced);
}

static void q_put(void *c, const char *q)
{
	logf_(c, "queue=%s event=put", q);
}

static void q_pull(void *c, const char *q, unsigned worker, uint64_t wait_ns)
{
	logf_(c, "queue=%s event=pull worker=%u wait_ns=%llu", q, worker,
	      (unsigned long long)wait_ns);
}

static void q_retry(void *c, const char *q, uint64_t delay_ns)
{
	logf_(c, "queue=%s event=retry delay_ns=%llu", q, (unsigned long long)delay_ns);
}

static void q_delayed(void *c, const char *q, uint64_t waited_ns)
{
	logf_(c, "queue=%s event=delayed waited_ns=%llu", q, (unsigned long long)waited_ns);
}

static void q_leak(void *c, const char *q, enum blq_leak_dir dir)
{
	logf_(c, "queue=%s event=leak dir=%s", q, dir == BLQ_LEAK_FRONT ? "front" : "rear");
}

static void q_deadline(void *c, const char *q)
{
	logf_(c, "queue=%s event=deadline", q);
}

static void q_lost(void *c, const char *q)
{
	logf_(c, "queue=%s event=lost", q);
}

static void q_cancelled(void *c, const char *q)
{
	logf_(c, "queue=%s event=cancelled", q);
}

static void q_exec(void *c, const char *q, unsigned worker, uint64_t ns, int failed)
{
	logf_(c, "queue=%s event=exec worker=%u ns=%llu failed=%d", q, worker,
	      (unsigned long long)ns, failed);
}

static void s_put(void *c, const char *q, const char *s)
{
	logf_(c, "queue=%s event=subq_put subq=%s", q, s);
}

static void s_pull(void *c, const char *q, const char *s)
{
	logf_(c, "queue=%s event=subq_pull subq=%s", q, s);
}

static void s_leak(void *c, const char *q, const char *s)
{
	logf_(c, "queue=%s event=subq_leak subq=%s", q, s);
}

const blq_metrics_writer *blq_log_writer_init(blq_log_writer *lw, blq_logger logger)
{
	if (lw == NULL)
		return NULL;
	lw->logger = logger;
	lw->writer = (blq_metrics_writer){
		.ctx = lw,
		.worker_setup = w_setup,
		.worker_init = w_init,
		.worker_sleep = w_sleep,
		.worker_wakeup = w_wakeup,
		.worker_wait = w_wait,
		.worker_stop = w_stop,
		.queue_put = q_put,
		.queue_pull = q_pull,
		.queue_retry = q_retry,
		.queue_delayed = q_delayed,
		.queue_leak = q_leak,
		.queue_deadline = q_deadline,
		.queue_lost = q_lost,
		.queue_cancelled = q_cancelled,
		.queue_exec = q_exec,
		.subq_put = s_put,
		.subq_pull = s_pull,
		.subq_leak = s_leak,
	};
	return &lw->writer;
}

/* ---- dumps -------------------------------------------------------- */

#define dlogf(c, ...) log_to(&((const blq_dump_log_writer *)(c))->logger, __VA_ARGS__)

static void d_in(void *c, const char *name, size_t bytes)
{
	dlogf(c, "dump=%s event=in bytes=%zu", name, bytes);
}

static void d_flush(void *c, const char *name, enum blq_dump_flush_reason reason, size_t bytes)
{
	dlogf(c, "dump=%s event=flush reason=%s bytes=%zu", name, blq__flush_reason_name(reason),
	      bytes);
}

static void d_out(void *c, const char *name, size_t bytes)
{
	dlogf(c, "dump=%s event=restore_out bytes=%zu", name, bytes);
}

static void d_redelivered(void *c, const char *name, uint64_t n)
{
	dlogf(c, "dump=%s event=redelivered items=%llu", name, (unsigned long long)n);
}

static void d_lost(void *c, const char *name, uint64_t n)
{
	dlogf(c, "dump=%s event=lost items=%llu", name, (unsigned long long)n);
}

static void d_quarantined(void *c, const char *name, uint64_t n)
{
	dlogf(c, "dump=%s event=quarantined count=%llu", name, (unsigned long long)n);
}

static void d_failure(void *c, const char *name, enum blq_dump_failure reason, uint64_t n)
{
	dlogf(c, "dump=%s event=failure reason=%s n=%llu", name, blq_dump_failure_name(reason),
	      (unsigned long long)n);
}

const blq_dump_metrics *blq_dump_log_writer_init(blq_dump_log_writer *lw, blq_logger logger)
{
	if (lw == NULL)
		return NULL;
	lw->logger = logger;
	lw->metrics = (blq_dump_metrics){
		.ctx = lw,
		.dump_in = d_in,
		.flush = d_flush,
		.restore_out = d_out,
		.redelivered = d_redelivered,
		.lost = d_lost,
		.quarantined = d_quarantined,
		.failure = d_failure,
	};
	return &lw->metrics;
}
