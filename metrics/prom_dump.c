/*
 * The dump families: the counters of a dlqdump dump and of the restorers
 * that read it (blq_prom_dump_writer), and their exposition
 * (dlqdump_*_total). Low-rate events (a batch, a restored record), so one
 * cell of relaxed atomic adds per dump, no per-thread spreading. The
 * registry (prom_registry.c) owns the list under its mutex and frees it;
 * blq_prom_render calls blq__prom_dump_families last.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errorf.h"
#include "flush_reason.h"
#include "prom_internal.h"

static void dump_add(void *ctx, int counter, uint64_t n)
{
	atomic_fetch_add_explicit(&((dump_series *)ctx)->c[counter], n, memory_order_relaxed);
}

static void on_dump_in(void *ctx, const char *name, size_t bytes)
{
	(void)name;
	dump_add(ctx, D_SIZE_IN, 1);
	dump_add(ctx, D_BYTES_IN, bytes);
}

static void on_dump_flush(void *ctx, const char *name, enum blq_dump_flush_reason reason,
			  size_t bytes)
{
	(void)name;
	dump_add(ctx,
		 reason == BLQ_DUMP_FLUSH_SIZE	    ? D_FLUSH_SIZE
		 : reason == BLQ_DUMP_FLUSH_INTERVAL ? D_FLUSH_INTERVAL
						     : D_FLUSH_CLOSE,
		 bytes);
}

static void on_dump_out(void *ctx, const char *name, size_t bytes)
{
	(void)name;
	dump_add(ctx, D_SIZE_OUT, 1);
	dump_add(ctx, D_BYTES_OUT, bytes);
}

static void on_dump_lost(void *ctx, const char *name, uint64_t n)
{
	(void)name;
	dump_add(ctx, D_LOST, n);
}

static void on_dump_quarantined(void *ctx, const char *name, uint64_t n)
{
	(void)name;
	dump_add(ctx, D_QUARANTINED, n);
}

static void on_dump_redelivered(void *ctx, const char *name, uint64_t n)
{
	(void)name;
	dump_add(ctx, D_REDELIVERED, n);
}

static void on_dump_failure(void *ctx, const char *name, enum blq_dump_failure reason,
			    uint64_t n)
{
	(void)name;
	if ((unsigned)reason < BLQ_DUMP_FAILURES)
		dump_add(ctx, D_FAILURES + (int)reason, n);
}

const blq_dump_metrics *blq_prom_dump_writer(blq_prom *r, const char *name, blq_error *err)
{
	if (r == NULL || name == NULL || name[0] == '\0' || strlen(name) > NAME_MAX_LEN) {
		blq__error_set(err, BLQ_EINVAL, "prometheus: name: must be 1..%d bytes",
			       NAME_MAX_LEN);
		return NULL;
	}
	dump_series *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "prometheus: out of memory");
		return NULL;
	}
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->m = (blq_dump_metrics){
		.ctx = s,
		.dump_in = on_dump_in,
		.flush = on_dump_flush,
		.restore_out = on_dump_out,
		.lost = on_dump_lost,
		.quarantined = on_dump_quarantined,
		.redelivered = on_dump_redelivered,
		.failure = on_dump_failure,
	};
	pthread_mutex_lock(&r->mu);
	dump_series **tail = &r->dumps;
	for (; *tail != NULL; tail = &(*tail)->next) {
		if (strcmp((*tail)->name, name) == 0) {
			pthread_mutex_unlock(&r->mu);
			free(s);
			blq__error_set(err, BLQ_EINVAL,
				       "prometheus: dump \"%s\": already has a writer", name);
			return NULL;
		}
	}
	*tail = s;
	pthread_mutex_unlock(&r->mu);
	return &s->m;
}

void blq__prom_dump_families(out *o, const blq_prom *r)
{
	static const struct {
		const char *name, *help;
		int counter;
	} f[] = {
		{"dlqdump_size_in_total", "Items encoded into the dump.", D_SIZE_IN},
		{"dlqdump_size_out_total", "Items restored from the dump into a queue.", D_SIZE_OUT},
		{"dlqdump_bytes_in_total", "Encoded bytes put into the dump.", D_BYTES_IN},
		{"dlqdump_bytes_out_total", "Encoded bytes restored from the dump.", D_BYTES_OUT},
		{"dlqdump_lost_total", "Items lost: refused or dropped while writes failed, or "
				       "undecodable without a dead store.", D_LOST},
		{"dlqdump_quarantined_total", "Damaged dumps or entries moved aside.",
		 D_QUARANTINED},
		{"dlqdump_redelivered_total", "Records restored again after a restorer died "
					      "before committing them: possible duplicates.",
		 D_REDELIVERED},
	};
	char lbl[NAME_MAX_LEN * 2 + 1];

	if (r->dumps == NULL)
		return;
	for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
		blq__prom_emit(o, "# HELP %s %s\n# TYPE %s counter\n", f[k].name, f[k].help, f[k].name);
		for (const dump_series *s = r->dumps; s != NULL; s = s->next) {
			blq__prom_escape(lbl, sizeof(lbl), s->name);
			blq__prom_emit(o, "%s{queue=\"%s\"} %llu\n", f[k].name, lbl,
			     (unsigned long long)atomic_load_explicit(&s->c[f[k].counter],
								      memory_order_relaxed));
		}
	}
	blq__prom_emit(o, "# HELP dlqdump_bytes_flush_total Batch bytes persisted, by the reason of the "
		"flush.\n# TYPE dlqdump_bytes_flush_total counter\n");
	for (const dump_series *s = r->dumps; s != NULL; s = s->next) {
		blq__prom_escape(lbl, sizeof(lbl), s->name);
		for (int k = 0; k < BLQ__FLUSH_REASONS; k++)
			blq__prom_emit(o, "dlqdump_bytes_flush_total{queue=\"%s\",reason=\"%s\"} %llu\n", lbl,
			     blq__flush_reason_name((enum blq_dump_flush_reason)k),
			     (unsigned long long)atomic_load_explicit(&s->c[D_FLUSH_SIZE + k],
								      memory_order_relaxed));
	}
	blq__prom_emit(o, "# HELP dlqdump_failures_total Failures of the dump and its restorers, by "
		"reason (blq_dump_failure).\n# TYPE dlqdump_failures_total counter\n");
	for (const dump_series *s = r->dumps; s != NULL; s = s->next) {
		blq__prom_escape(lbl, sizeof(lbl), s->name);
		for (int k = 0; k < BLQ_DUMP_FAILURES; k++)
			blq__prom_emit(o, "dlqdump_failures_total{queue=\"%s\",reason=\"%s\"} %llu\n",
				       lbl, blq_dump_failure_name((enum blq_dump_failure)k),
				       (unsigned long long)atomic_load_explicit(
					       &s->c[D_FAILURES + k], memory_order_relaxed));
	}
}
