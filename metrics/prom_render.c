/*
 * The Prometheus text exposition (blq_prom_render): every family, in a
 * fixed order, under the registry's mutex (registration and watch cannot
 * change the lists meanwhile; the writer callbacks never take it).
 *
 * Counters fold a series' cells, the shared ones and the worker-owned
 * ones, each read relaxed: a render racing updates sees each counter at
 * some recent value, and counters never go back. Histograms keep plain
 * per-bucket counts and are made cumulative here; the count is the sum of
 * the buckets, so +Inf equals _count even while updates run. Gauges come
 * from the watched queues (blq_stats, blq_qos_subq_info) at render time.
 * The text is written like snprintf: the return is the length the whole
 * text needs, so a caller can size its buffer and call again.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "prom_internal.h"

static const char *const bucket_le[] = {
	"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
	"0.05",   "0.1",     "0.25",   "0.5",   "1",      "2.5",   "5",
};
_Static_assert(sizeof(bucket_le) / sizeof(bucket_le[0]) == NBUCKETS, "one label per bucket");

void blq__prom_emit(out *o, const char *fmt, ...)
{
	va_list ap;
	size_t room = o->n < o->len ? o->len - o->n : 0;

	va_start(ap, fmt);
	int k = vsnprintf(room ? o->buf + o->n : NULL, room, fmt, ap);
	va_end(ap);
	if (k > 0)
		o->n += (size_t)k;
}

/* Label value escaping of the text format: backslash, quote, newline. */
void blq__prom_escape(char *dst, size_t cap, const char *src)
{
	size_t n = 0;

	for (; *src != '\0' && n + 3 < cap; src++) {
		if (*src == '\\' || *src == '"') {
			dst[n++] = '\\';
			dst[n++] = *src;
		} else if (*src == '\n') {
			dst[n++] = '\\';
			dst[n++] = 'n';
		} else {
			dst[n++] = *src;
		}
	}
	dst[n] = '\0';
}

/* The series' cells, shared then worker-owned, one by one: for (i = 0;
 * (c = nth_cell(s, i)) != BLQ__CELLS_END; i++), skipping NULL ones. */
#define BLQ__CELLS_END ((const cell *)-1)
static const cell *nth_cell(const series *s, unsigned i)
{
	if (i < BLQ__PROM_CELLS)
		return &s->cells[i];
	if (i - BLQ__PROM_CELLS < BLQ__PROM_WORKERS)
		return atomic_load_explicit(&s->wcells[i - BLQ__PROM_CELLS], memory_order_acquire);
	return BLQ__CELLS_END;
}

static uint64_t fold(const series *s, int counter)
{
	uint64_t v = 0;
	const cell *c;

	for (unsigned i = 0; (c = nth_cell(s, i)) != BLQ__CELLS_END; i++)
		if (c != NULL)
			v += atomic_load_explicit(&c->c[counter], memory_order_relaxed);
	return v;
}

static void counter_family(out *o, const blq_prom *r, const char *name, const char *help,
			   int counter)
{
	char lbl[NAME_MAX_LEN * 2 + 1];

	blq__prom_emit(o, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (const series *s = r->head; s != NULL; s = s->next) {
		blq__prom_escape(lbl, sizeof(lbl), s->name);
		blq__prom_emit(o, "%s{queue=\"%s\"} %llu\n", name, lbl, (unsigned long long)fold(s, counter));
	}
}

static void leak_family(out *o, const blq_prom *r)
{
	char lbl[NAME_MAX_LEN * 2 + 1];

	blq__prom_emit(o, "# HELP queue_leak_total Items handed to the DLQ, by the side they left from.\n"
		"# TYPE queue_leak_total counter\n");
	for (const series *s = r->head; s != NULL; s = s->next) {
		blq__prom_escape(lbl, sizeof(lbl), s->name);
		blq__prom_emit(o, "queue_leak_total{queue=\"%s\",dir=\"rear\"} %llu\n", lbl,
		     (unsigned long long)fold(s, C_LEAK_REAR));
		blq__prom_emit(o, "queue_leak_total{queue=\"%s\",dir=\"front\"} %llu\n", lbl,
		     (unsigned long long)fold(s, C_LEAK_FRONT));
	}
}

/* One series of a counter family read from blq_stats at render time
 * (nothing on the queue's path): the field at `off`, with a second label
 * `key="value"` when key is not NULL; `ns` fields render in seconds. */
typedef struct stats_series {
	const char *value;
	size_t off;
	bool ns;
} stats_series;

/* A counter family of the watched queues' blq_stats fields, n series a
 * queue. */
static void stats_family(out *o, const blq_prom *r, const char *name, const char *help,
			 const char *key, const stats_series *v, size_t n)
{
	char lbl[NAME_MAX_LEN * 2 + 1];

	blq__prom_emit(o, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (const series *s = r->head; s != NULL; s = s->next) {
		struct blq_stats st;

		if (s->watched == NULL || blq_stats(s->watched, &st) != 0)
			continue;
		blq__prom_escape(lbl, sizeof(lbl), s->name);
		for (size_t k = 0; k < n; k++) {
			uint64_t x = *(const uint64_t *)((const char *)&st + v[k].off);

			if (v[k].ns)
				blq__prom_emit(o, "%s{queue=\"%s\"} %.9f\n", name, lbl, (double)x / 1e9);
			else if (key != NULL)
				blq__prom_emit(o, "%s{queue=\"%s\",%s=\"%s\"} %llu\n", name, lbl, key,
					       v[k].value, (unsigned long long)x);
			else
				blq__prom_emit(o, "%s{queue=\"%s\"} %llu\n", name, lbl,
					       (unsigned long long)x);
		}
	}
}

/* The leaks by reason: each series equals its blq_stats field and the
 * five add up to leaked. queue_leak_total{dir} counts the same events by
 * side, where fail_to_dlq and deadline_to_dlq say "rear" and a close
 * "front" (docs/reference-metrics.md). Then the rate limit's delayed
 * starts and waiting time, and the producers refused at
 * producers_blocked_max. */
static void stats_families(out *o, const blq_prom *r)
{
	static const stats_series why[] = {
		{"overflow_rear", offsetof(struct blq_stats, leaked_rear), false},
		{"overflow_front", offsetof(struct blq_stats, leaked_front), false},
		{"failed", offsetof(struct blq_stats, leaked_failed), false},
		{"deadline", offsetof(struct blq_stats, leaked_deadline), false},
		{"closed", offsetof(struct blq_stats, leaked_closed), false},
	};
	static const stats_series turned_away[] = {
		{NULL, offsetof(struct blq_stats, producers_turned_away), false},
	};
	static const stats_series rate_delayed[] = {
		{NULL, offsetof(struct blq_stats, rate_delayed), false},
	};
	static const stats_series rate_waited[] = {
		{NULL, offsetof(struct blq_stats, rate_limited_ns), true},
	};

	stats_family(o, r, "queue_leak_reason_total",
		     "Items handed to the DLQ, by why (blq_stats leaked_*).", "reason", why,
		     sizeof(why) / sizeof(why[0]));
	stats_family(o, r, "queue_rate_limit_delayed_total",
		     "Item starts that waited for a rate_limit token.", NULL, rate_delayed, 1);
	stats_family(o, r, "queue_rate_limit_wait_seconds_total",
		     "Time workers spent waiting for rate_limit tokens.", NULL, rate_waited, 1);
	stats_family(o, r, "queue_producers_turned_away_total",
		     "Blocking enqueues refused because producers_blocked_max producers were "
		     "waiting already.",
		     NULL, turned_away, 1);
}

static void subq_family(out *o, const blq_prom *r, const char *name, const char *help,
			int counter)
{
	char lbl[NAME_MAX_LEN * 2 + 1], sub[NAME_MAX_LEN * 2 + 1];

	blq__prom_emit(o, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (const series *s = r->head; s != NULL; s = s->next) {
		/* Acquire: the blocks counted are fully written (subq_of). */
		unsigned n = atomic_load_explicit(&s->nsubq, memory_order_acquire);

		blq__prom_escape(lbl, sizeof(lbl), s->name);
		for (unsigned i = 0; i < n; i++) {
			const subq_series *b = s->subq[i];
			uint64_t v = 0;

			for (unsigned k = 0; k < BLQ__PROM_CELLS; k++)
				v += atomic_load_explicit(&b->cells[k].c[counter], memory_order_relaxed);
			blq__prom_escape(sub, sizeof(sub), b->name);
			blq__prom_emit(o, "%s{queue=\"%s\",subq=\"%s\"} %llu\n", name, lbl, sub,
			     (unsigned long long)v);
		}
	}
}

/* queue_subq_size of the watched QoS queues: each sub-queue, then the
 * egress (subq="egress"). */
static void subq_size_family(out *o, const blq_prom *r)
{
	char lbl[NAME_MAX_LEN * 2 + 1], sub[NAME_MAX_LEN * 2 + 1];

	blq__prom_emit(o, "# HELP queue_subq_size Items waiting in a QoS sub-queue or the egress.\n"
		"# TYPE queue_subq_size gauge\n");
	for (const series *s = r->head; s != NULL; s = s->next) {
		unsigned n = s->watched != NULL ? blq_qos_subqs(s->watched) : 0;

		blq__prom_escape(lbl, sizeof(lbl), s->name);
		for (unsigned i = 0; n > 0 && i <= n; i++) {
			blq_qos_subq_stats st;

			if (blq_qos_subq_info(s->watched, i < n ? i : BLQ_QOS_EGRESS, &st) != 0)
				continue;
			blq__prom_escape(sub, sizeof(sub), st.name);
			blq__prom_emit(o, "queue_subq_size{queue=\"%s\",subq=\"%s\"} %zu\n", lbl, sub, st.size);
		}
	}
}

static void hist_family(out *o, const blq_prom *r, const char *name, const char *help, int which)
{
	char lbl[NAME_MAX_LEN * 2 + 1];

	blq__prom_emit(o, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	for (const series *s = r->head; s != NULL; s = s->next) {
		uint64_t b[NBUCKETS + 1] = {0}, sum = 0;

		const cell *c;
		for (unsigned i = 0; (c = nth_cell(s, i)) != BLQ__CELLS_END; i++) {
			if (c == NULL)
				continue;
			const hist *h = &c->h[which];

			for (size_t k = 0; k <= NBUCKETS; k++)
				b[k] += atomic_load_explicit(&h->bucket[k], memory_order_relaxed);
			sum += atomic_load_explicit(&h->sum_ns, memory_order_relaxed);
		}
		/* The count is the sum of the buckets, so +Inf == _count even
		 * while updates run. */
		uint64_t cum = 0;
		blq__prom_escape(lbl, sizeof(lbl), s->name);
		for (size_t k = 0; k < NBUCKETS; k++) {
			cum += b[k];
			blq__prom_emit(o, "%s_bucket{queue=\"%s\",le=\"%s\"} %llu\n", name, lbl, bucket_le[k],
			     (unsigned long long)cum);
		}
		cum += b[NBUCKETS];
		blq__prom_emit(o, "%s_bucket{queue=\"%s\",le=\"+Inf\"} %llu\n", name, lbl,
		     (unsigned long long)cum);
		blq__prom_emit(o, "%s_sum{queue=\"%s\"} %.9f\n", name, lbl, (double)sum / 1e9);
		blq__prom_emit(o, "%s_count{queue=\"%s\"} %llu\n", name, lbl, (unsigned long long)cum);
	}
}

static void gauge_families(out *o, const blq_prom *r)
{
	static const struct {
		const char *name, *help;
	} g[] = {
		{"queue_size", "Items waiting in the queue."},
		{"queue_capacity", "The queue's capacity in items."},
		{"queue_workers_active", "Workers taking items."},
		{"queue_workers_sleep", "Workers asleep (thread kept)."},
		{"queue_workers_idle", "Worker slots without a thread."},
		{"queue_workers_busy", "Workers inside their callback."},
		{"queue_workers_overrunning", "Workers still inside a callback past its time limit."},
		{"queue_producers_blocked", "Producers waiting for room on a full queue."},
		{"queue_dlq_waiting",
		 "Threads inside the DLQ's enqueue now (a leak waiting on a full blocking DLQ)."},
		{"queue_workers_stuck",
		 "Threads given up inside a callback (past its time limit, or a close's) not yet returned."},
	};
	char lbl[NAME_MAX_LEN * 2 + 1];

	for (size_t k = 0; k < sizeof(g) / sizeof(g[0]); k++) {
		blq__prom_emit(o, "# HELP %s %s\n# TYPE %s gauge\n", g[k].name, g[k].help, g[k].name);
		for (const series *s = r->head; s != NULL; s = s->next) {
			struct blq_stats st;

			if (s->watched == NULL || blq_stats(s->watched, &st) != 0)
				continue;
			uint64_t v = k == 0   ? st.size
				     : k == 1 ? st.capacity
				     : k == 2 ? st.workers_active
				     : k == 3 ? st.workers_asleep
				     : k == 4 ? st.workers_idle
				     : k == 5 ? st.workers_busy
				     : k == 6 ? st.workers_overrunning
				     : k == 7 ? st.producers_blocked
				     : k == 8 ? st.dlq_waiting
						: st.workers_stuck;
			blq__prom_escape(lbl, sizeof(lbl), s->name);
			blq__prom_emit(o, "%s{queue=\"%s\"} %llu\n", g[k].name, lbl, (unsigned long long)v);
		}
	}
}

int blq_prom_render(blq_prom *r, char *buf, size_t len)
{
	out o = {buf, len, 0};

	if (r == NULL || (buf == NULL && len > 0))
		return BLQ_EINVAL;
	if (len > 0)
		buf[0] = '\0';
	pthread_mutex_lock(&r->mu);
	counter_family(&o, r, "queue_in_total", "Items accepted by the queue.", C_IN);
	counter_family(&o, r, "queue_out_total", "Items taken by a worker.", C_OUT);
	counter_family(&o, r, "queue_retry_total", "Retries of failed items.", C_RETRY);
	leak_family(&o, r);
	stats_families(&o, r);
	counter_family(&o, r, "queue_deadline_total", "Items taken after their deadline.",
		       C_DEADLINE);
	counter_family(&o, r, "queue_lost_total", "Items dropped: no DLQ at force close, or the DLQ refused.",
		       C_LOST);
	counter_family(&o, r, "queue_failed_total", "Worker calls that failed.", C_FAILED);
	counter_family(&o, r, "queue_cancelled_total", "Items cancelled through their handle.",
		       C_CANCELLED);
	hist_family(&o, r, "queue_wait_seconds", "Time from enqueue to a worker taking the item.",
		    H_WAIT);
	hist_family(&o, r, "queue_exec_seconds", "Time a worker spent on an item.", H_EXEC);
	hist_family(&o, r, "queue_retry_delay_seconds", "Backoff before a retry.", H_RETRY);
	hist_family(&o, r, "queue_delay_seconds",
		    "Time an item waited in the timer (a delay or a retry's backoff).", H_DELAY);
	gauge_families(&o, r);
	subq_family(&o, r, "queue_subq_in_total",
		    "Items that reached a QoS sub-queue (kept, or leaked at its rear).", S_IN);
	subq_family(&o, r, "queue_subq_out_total", "Items moved from a QoS sub-queue to the egress.",
		    S_OUT);
	subq_family(&o, r, "queue_subq_leak_total",
		    "Items that left a QoS sub-queue for the DLQ (leaks, force close) or were lost.",
		    S_LEAK);
	subq_size_family(&o, r);
	blq__prom_dump_families(&o, r);
	pthread_mutex_unlock(&r->mu);
	if (len > 0 && o.n >= len)
		buf[len - 1] = '\0';
	return o.n > (size_t)INT32_MAX ? BLQ_ENOMEM : (int)o.n;
}
