/*
 * The Prometheus writer: per-queue series, lock-free updates, text
 * exposition.
 *
 * Design
 * - One series block per queue, made by blq_prom_queue_writer; its writer's
 *   ctx points at the block, so an event costs no lookup.
 * - Counters and histograms live in BLQ__PROM_CELLS cache-line cells per
 *   series; a thread adds into the cell its address hashes to (relaxed
 *   atomic adds), so producers and workers rarely share a line. Rendering
 *   folds the cells; a render racing updates sees each counter at some
 *   recent value (counters never go back).
 * - The per-item worker events (pull, exec) go to a cell of the worker's
 *   own, made on its first event: a worker index has one thread at a time
 *   (the queue joins a slot's thread before it starts another), so those
 *   cells have a single writer and take plain adds (a relaxed load and
 *   store) instead of locked ones: five locked adds per item were most of
 *   the writer's cost in W1-PROM. One writer per queue: two queues sharing
 *   one would share worker indices.
 * - Histograms keep per-bucket counts (not cumulative; folded into
 *   cumulative `le` buckets at render) and a sum in nanoseconds.
 * - The registry's list of series and watched queues is under a mutex that
 *   only registration, watch and render take.
 * - QoS sub-queues: a series makes a block of per-thread cells for each
 *   sub-queue name on its first event (under the series' own mutex, once);
 *   later events find it by name without a lock (a few short string
 *   compares), and rendering reads the blocks published so far.
 */
#include <pthread.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blq/prometheus.h>
#include <blq/qos.h>

#include "errorf.h"

#define BLQ__PROM_CELLS 16u
#define BLQ__PROM_WORKERS 1024u /* the queue's worker limit */
#define NAME_MAX_LEN 63

enum { C_IN, C_OUT, C_RETRY, C_LEAK_REAR, C_LEAK_FRONT, C_DEADLINE, C_LOST, C_FAILED, NCOUNT };
enum { H_WAIT, H_EXEC, H_RETRY, H_DELAY, NHIST };

/* Upper bounds in ns: 100 us .. 5 s. */
static const uint64_t bucket_ns[] = {
	100000,    250000,    500000,    1000000,    2500000,    5000000,    10000000, 25000000,
	50000000, 100000000, 250000000, 500000000, 1000000000, 2500000000, 5000000000,
};
static const char *const bucket_le[] = {
	"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
	"0.05",   "0.1",     "0.25",   "0.5",   "1",      "2.5",   "5",
};
#define NBUCKETS (sizeof(bucket_ns) / sizeof(bucket_ns[0]))

typedef struct hist {
	_Atomic uint64_t bucket[NBUCKETS + 1]; /* the last: above 5 s */
	_Atomic uint64_t sum_ns;               /* the count is the buckets' sum */
} hist;

typedef struct cell {
	alignas(64) _Atomic uint64_t c[NCOUNT];
	hist h[NHIST];
} cell;

enum { S_IN, S_OUT, S_LEAK, NSUBQ };

/* One QoS sub-queue's counters within a series. */
typedef struct subq_series {
	struct {
		alignas(64) _Atomic uint64_t c[NSUBQ];
	} cells[BLQ__PROM_CELLS];
	char name[NAME_MAX_LEN + 1];
} subq_series;

typedef struct series {
	blq_metrics_writer w; /* w.ctx points here */
	char name[NAME_MAX_LEN + 1];
	blq *watched;
	struct series *next;
	cell cells[BLQ__PROM_CELLS];
	/* Worker-owned cells by worker index, made on first use (NULL until
	 * then; published with release). */
	_Atomic(cell *) wcells[BLQ__PROM_WORKERS];
	/* Sub-queue blocks: subq[0..nsubq) are published (release on nsubq
	 * after the block is written); subq_mu serialises making them. */
	pthread_mutex_t subq_mu;
	_Atomic unsigned nsubq;
	subq_series *subq[BLQ_QOS_SUBQS_MAX];
} series;

/* A dump's (and its restorer's) counters: low-rate events, one cell. */
enum { D_SIZE_IN, D_SIZE_OUT, D_BYTES_IN, D_BYTES_OUT, D_FLUSH_SIZE, D_FLUSH_INTERVAL,
       D_FLUSH_CLOSE, D_LOST, D_QUARANTINED, D_REDELIVERED, NDUMP };

typedef struct dump_series {
	blq_dump_metrics m; /* m.ctx points here */
	char name[NAME_MAX_LEN + 1];
	struct dump_series *next;
	_Atomic uint64_t c[NDUMP];
} dump_series;

struct blq_prom {
	pthread_mutex_t mu;
	series *head;
	dump_series *dumps;
};

static _Thread_local char tls_anchor;

static unsigned my_cell_index(void)
{
	uint64_t h = (uint64_t)(uintptr_t)&tls_anchor * UINT64_C(0x9E3779B97F4A7C15);

	return (unsigned)(h >> 60) % BLQ__PROM_CELLS;
}

static cell *my_cell(series *s)
{
	return &s->cells[my_cell_index()];
}

static void add(void *ctx, int counter)
{
	atomic_fetch_add_explicit(&my_cell(ctx)->c[counter], 1, memory_order_relaxed);
}

/* The bucket an observation falls in: the first bound >= ns; NBUCKETS is
 * the one above the last bound. */
static size_t bucket_of(uint64_t ns)
{
	size_t b = 0;

	while (b < NBUCKETS && ns > bucket_ns[b])
		b++;
	return b;
}

static void observe(void *ctx, int which, uint64_t ns)
{
	hist *h = &my_cell(ctx)->h[which];

	atomic_fetch_add_explicit(&h->bucket[bucket_of(ns)], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
}

/* A single-writer counter: no locked instruction. */
static inline void own_add(_Atomic uint64_t *x, uint64_t v)
{
	atomic_store_explicit(x, atomic_load_explicit(x, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

static void own_observe(cell *c, int which, uint64_t ns)
{
	hist *h = &c->h[which];

	own_add(&h->bucket[bucket_of(ns)], 1);
	own_add(&h->sum_ns, ns);
}

/* Worker w's own cell, made on its first event; NULL (use the shared
 * cells) for an index out of range or when memory runs out. */
static cell *worker_cell(series *s, unsigned w)
{
	if (w >= BLQ__PROM_WORKERS)
		return NULL;
	cell *c = atomic_load_explicit(&s->wcells[w], memory_order_acquire);
	if (c != NULL)
		return c;
	c = aligned_alloc(64, sizeof(cell));
	if (c == NULL)
		return NULL;
	memset(c, 0, sizeof(*c));
	cell *none = NULL;
	/* Release: the zeroed cell before its pointer. Only worker w makes
	 * its cell, so the exchange cannot lose; it is a CAS for safety. */
	if (!atomic_compare_exchange_strong_explicit(&s->wcells[w], &none, c, memory_order_release,
						     memory_order_acquire)) {
		free(c);
		c = none;
	}
	return c;
}

static void on_put(void *ctx, const char *q)
{
	(void)q;
	add(ctx, C_IN);
}

static void on_pull(void *ctx, const char *q, unsigned worker, uint64_t wait_ns)
{
	cell *c = worker_cell(ctx, worker);

	(void)q;
	if (c == NULL) {
		add(ctx, C_OUT);
		observe(ctx, H_WAIT, wait_ns);
		return;
	}
	own_add(&c->c[C_OUT], 1);
	own_observe(c, H_WAIT, wait_ns);
}

static void on_retry(void *ctx, const char *q, uint64_t delay_ns)
{
	(void)q;
	add(ctx, C_RETRY);
	observe(ctx, H_RETRY, delay_ns);
}

static void on_delayed(void *ctx, const char *q, uint64_t waited_ns)
{
	(void)q;
	observe(ctx, H_DELAY, waited_ns);
}

static void on_leak(void *ctx, const char *q, enum blq_leak_dir dir)
{
	(void)q;
	add(ctx, dir == BLQ_LEAK_FRONT ? C_LEAK_FRONT : C_LEAK_REAR);
}

static void on_deadline(void *ctx, const char *q)
{
	(void)q;
	add(ctx, C_DEADLINE);
}

static void on_lost(void *ctx, const char *q)
{
	(void)q;
	add(ctx, C_LOST);
}

static void on_exec(void *ctx, const char *q, unsigned worker, uint64_t ns, int failed)
{
	cell *c = worker_cell(ctx, worker);

	(void)q;
	if (c == NULL) {
		if (failed)
			add(ctx, C_FAILED);
		observe(ctx, H_EXEC, ns);
		return;
	}
	if (failed)
		own_add(&c->c[C_FAILED], 1);
	own_observe(c, H_EXEC, ns);
}

/* The block of sub-queue `name`, made on its first event. NULL when a
 * series already has BLQ_QOS_SUBQS_MAX names or memory ran out: the event
 * is dropped (never blocks, never fails the queue). */
static subq_series *subq_of(series *s, const char *name)
{
	/* Acquire: pairs with the release below, so a counted block is fully
	 * written. */
	unsigned n = atomic_load_explicit(&s->nsubq, memory_order_acquire);
	subq_series *b = NULL;

	for (unsigned i = 0; i < n; i++)
		if (strcmp(s->subq[i]->name, name) == 0)
			return s->subq[i];
	pthread_mutex_lock(&s->subq_mu);
	/* Relaxed: only holders of subq_mu change it. */
	n = atomic_load_explicit(&s->nsubq, memory_order_relaxed);
	for (unsigned i = 0; i < n && b == NULL; i++)
		if (strcmp(s->subq[i]->name, name) == 0)
			b = s->subq[i];
	if (b == NULL && n < BLQ_QOS_SUBQS_MAX &&
	    (b = aligned_alloc(64, (sizeof(*b) + 63) / 64 * 64)) != NULL) {
		memset(b, 0, sizeof(*b));
		snprintf(b->name, sizeof(b->name), "%s", name);
		s->subq[n] = b;
		atomic_store_explicit(&s->nsubq, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&s->subq_mu);
	return b;
}

static void subq_add(void *ctx, const char *name, int counter)
{
	subq_series *b = subq_of(ctx, name);

	if (b != NULL)
		atomic_fetch_add_explicit(&b->cells[my_cell_index()].c[counter], 1,
					  memory_order_relaxed);
}

static void on_subq_put(void *ctx, const char *q, const char *subq)
{
	(void)q;
	subq_add(ctx, subq, S_IN);
}

static void on_subq_pull(void *ctx, const char *q, const char *subq)
{
	(void)q;
	subq_add(ctx, subq, S_OUT);
}

static void on_subq_leak(void *ctx, const char *q, const char *subq)
{
	(void)q;
	subq_add(ctx, subq, S_LEAK);
}

blq_prom *blq_prom_new(blq_error *err)
{
	blq_prom *r = calloc(1, sizeof(*r));

	if (r == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "prometheus: out of memory");
		return NULL;
	}
	pthread_mutex_init(&r->mu, NULL);
	return r;
}

void blq_prom_free(blq_prom *r)
{
	if (r == NULL)
		return;
	for (series *s = r->head, *n; s != NULL; s = n) {
		n = s->next;
		for (unsigned i = 0; i < atomic_load_explicit(&s->nsubq, memory_order_relaxed); i++)
			free(s->subq[i]);
		for (unsigned i = 0; i < BLQ__PROM_WORKERS; i++)
			free(atomic_load_explicit(&s->wcells[i], memory_order_relaxed));
		pthread_mutex_destroy(&s->subq_mu);
		free(s);
	}
	for (dump_series *s = r->dumps, *n; s != NULL; s = n) {
		n = s->next;
		free(s);
	}
	pthread_mutex_destroy(&r->mu);
	free(r);
}

static series *find(blq_prom *r, const char *name)
{
	for (series *s = r->head; s != NULL; s = s->next)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

const blq_metrics_writer *blq_prom_queue_writer(blq_prom *r, const char *queue, blq_error *err)
{
	if (r == NULL || queue == NULL || queue[0] == '\0' || strlen(queue) > NAME_MAX_LEN) {
		blq__error_set(err, BLQ_EINVAL, "prometheus: queue: must be 1..%d bytes",
			       NAME_MAX_LEN);
		return NULL;
	}
	series *s = aligned_alloc(64, (sizeof(series) + 63) / 64 * 64);
	if (s == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "prometheus: out of memory");
		return NULL;
	}
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", queue);
	s->w = (blq_metrics_writer){
		.ctx = s,
		.queue_put = on_put,
		.queue_pull = on_pull,
		.queue_retry = on_retry,
		.queue_delayed = on_delayed,
		.queue_leak = on_leak,
		.queue_deadline = on_deadline,
		.queue_lost = on_lost,
		.queue_exec = on_exec,
		.subq_put = on_subq_put,
		.subq_pull = on_subq_pull,
		.subq_leak = on_subq_leak,
	};
	pthread_mutex_init(&s->subq_mu, NULL);
	pthread_mutex_lock(&r->mu);
	if (find(r, queue) != NULL) {
		pthread_mutex_unlock(&r->mu);
		pthread_mutex_destroy(&s->subq_mu);
		free(s);
		blq__error_set(err, BLQ_EINVAL, "prometheus: queue \"%s\": already has a writer",
			       queue);
		return NULL;
	}
	/* Append: families list queues in registration order. */
	series **tail = &r->head;
	while (*tail != NULL)
		tail = &(*tail)->next;
	*tail = s;
	pthread_mutex_unlock(&r->mu);
	return &s->w;
}

static int set_watch(blq_prom *r, blq *q, blq *to)
{
	if (r == NULL || q == NULL)
		return BLQ_EINVAL;
	pthread_mutex_lock(&r->mu);
	series *s = find(r, blq_name(q));
	if (s != NULL)
		s->watched = to;
	pthread_mutex_unlock(&r->mu);
	return s != NULL ? 0 : BLQ_EINVAL;
}

int blq_prom_watch(blq_prom *r, blq *q)
{
	return set_watch(r, q, q);
}

int blq_prom_unwatch(blq_prom *r, blq *q)
{
	return set_watch(r, q, NULL);
}

/* ---- dlqdump series ------------------------------------------------ */

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

/* ---- rendering ---------------------------------------------------- */

typedef struct out {
	char *buf;
	size_t len, n; /* n: bytes the whole text needs so far */
} out;

static void emit(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void emit(out *o, const char *fmt, ...)
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
static void escape(char *dst, size_t cap, const char *src)
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

	emit(o, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (const series *s = r->head; s != NULL; s = s->next) {
		escape(lbl, sizeof(lbl), s->name);
		emit(o, "%s{queue=\"%s\"} %llu\n", name, lbl, (unsigned long long)fold(s, counter));
	}
}

static void leak_family(out *o, const blq_prom *r)
{
	char lbl[NAME_MAX_LEN * 2 + 1];

	emit(o, "# HELP queue_leak_total Items handed to the DLQ, by the side they left from.\n"
		"# TYPE queue_leak_total counter\n");
	for (const series *s = r->head; s != NULL; s = s->next) {
		escape(lbl, sizeof(lbl), s->name);
		emit(o, "queue_leak_total{queue=\"%s\",dir=\"rear\"} %llu\n", lbl,
		     (unsigned long long)fold(s, C_LEAK_REAR));
		emit(o, "queue_leak_total{queue=\"%s\",dir=\"front\"} %llu\n", lbl,
		     (unsigned long long)fold(s, C_LEAK_FRONT));
	}
}

static void subq_family(out *o, const blq_prom *r, const char *name, const char *help,
			int counter)
{
	char lbl[NAME_MAX_LEN * 2 + 1], sub[NAME_MAX_LEN * 2 + 1];

	emit(o, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (const series *s = r->head; s != NULL; s = s->next) {
		/* Acquire: the blocks counted are fully written (subq_of). */
		unsigned n = atomic_load_explicit(&s->nsubq, memory_order_acquire);

		escape(lbl, sizeof(lbl), s->name);
		for (unsigned i = 0; i < n; i++) {
			const subq_series *b = s->subq[i];
			uint64_t v = 0;

			for (unsigned k = 0; k < BLQ__PROM_CELLS; k++)
				v += atomic_load_explicit(&b->cells[k].c[counter], memory_order_relaxed);
			escape(sub, sizeof(sub), b->name);
			emit(o, "%s{queue=\"%s\",subq=\"%s\"} %llu\n", name, lbl, sub,
			     (unsigned long long)v);
		}
	}
}

/* queue_subq_size of the watched QoS queues: each sub-queue, then the
 * egress (subq="egress"). */
static void subq_size_family(out *o, const blq_prom *r)
{
	char lbl[NAME_MAX_LEN * 2 + 1], sub[NAME_MAX_LEN * 2 + 1];

	emit(o, "# HELP queue_subq_size Items waiting in a QoS sub-queue or the egress.\n"
		"# TYPE queue_subq_size gauge\n");
	for (const series *s = r->head; s != NULL; s = s->next) {
		unsigned n = s->watched != NULL ? blq_qos_subqs(s->watched) : 0;

		escape(lbl, sizeof(lbl), s->name);
		for (unsigned i = 0; n > 0 && i <= n; i++) {
			blq_qos_subq_stats st;

			if (blq_qos_subq_info(s->watched, i < n ? i : BLQ_QOS_EGRESS, &st) != 0)
				continue;
			escape(sub, sizeof(sub), st.name);
			emit(o, "queue_subq_size{queue=\"%s\",subq=\"%s\"} %zu\n", lbl, sub, st.size);
		}
	}
}

static void hist_family(out *o, const blq_prom *r, const char *name, const char *help, int which)
{
	char lbl[NAME_MAX_LEN * 2 + 1];

	emit(o, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
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
		escape(lbl, sizeof(lbl), s->name);
		for (size_t k = 0; k < NBUCKETS; k++) {
			cum += b[k];
			emit(o, "%s_bucket{queue=\"%s\",le=\"%s\"} %llu\n", name, lbl, bucket_le[k],
			     (unsigned long long)cum);
		}
		cum += b[NBUCKETS];
		emit(o, "%s_bucket{queue=\"%s\",le=\"+Inf\"} %llu\n", name, lbl,
		     (unsigned long long)cum);
		emit(o, "%s_sum{queue=\"%s\"} %.9f\n", name, lbl, (double)sum / 1e9);
		emit(o, "%s_count{queue=\"%s\"} %llu\n", name, lbl, (unsigned long long)cum);
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
	};
	char lbl[NAME_MAX_LEN * 2 + 1];

	for (size_t k = 0; k < sizeof(g) / sizeof(g[0]); k++) {
		emit(o, "# HELP %s %s\n# TYPE %s gauge\n", g[k].name, g[k].help, g[k].name);
		for (const series *s = r->head; s != NULL; s = s->next) {
			struct blq_stats st;

			if (s->watched == NULL || blq_stats(s->watched, &st) != 0)
				continue;
			uint64_t v = k == 0   ? st.size
				     : k == 1 ? st.capacity
				     : k == 2 ? st.workers_active
				     : k == 3 ? st.workers_asleep
						: st.workers_idle;
			escape(lbl, sizeof(lbl), s->name);
			emit(o, "%s{queue=\"%s\"} %llu\n", g[k].name, lbl, (unsigned long long)v);
		}
	}
}

static void dump_families(out *o, const blq_prom *r)
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
	static const char *const reasons[] = {"size", "interval", "close"};
	char lbl[NAME_MAX_LEN * 2 + 1];

	if (r->dumps == NULL)
		return;
	for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
		emit(o, "# HELP %s %s\n# TYPE %s counter\n", f[k].name, f[k].help, f[k].name);
		for (const dump_series *s = r->dumps; s != NULL; s = s->next) {
			escape(lbl, sizeof(lbl), s->name);
			emit(o, "%s{queue=\"%s\"} %llu\n", f[k].name, lbl,
			     (unsigned long long)atomic_load_explicit(&s->c[f[k].counter],
								      memory_order_relaxed));
		}
	}
	emit(o, "# HELP dlqdump_bytes_flush_total Batch bytes persisted, by the reason of the "
		"flush.\n# TYPE dlqdump_bytes_flush_total counter\n");
	for (const dump_series *s = r->dumps; s != NULL; s = s->next) {
		escape(lbl, sizeof(lbl), s->name);
		for (int k = 0; k < 3; k++)
			emit(o, "dlqdump_bytes_flush_total{queue=\"%s\",reason=\"%s\"} %llu\n", lbl,
			     reasons[k],
			     (unsigned long long)atomic_load_explicit(&s->c[D_FLUSH_SIZE + k],
								      memory_order_relaxed));
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
	counter_family(&o, r, "queue_deadline_total", "Items taken after their deadline.",
		       C_DEADLINE);
	counter_family(&o, r, "queue_lost_total", "Items dropped: no DLQ at force close, or the DLQ refused.",
		       C_LOST);
	counter_family(&o, r, "queue_failed_total", "Worker calls that failed.", C_FAILED);
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
	dump_families(&o, r);
	pthread_mutex_unlock(&r->mu);
	if (len > 0 && o.n >= len)
		buf[len - 1] = '\0';
	return o.n > (size_t)INT32_MAX ? BLQ_ENOMEM : (int)o.n;
}
