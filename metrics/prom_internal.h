/*
 * The Prometheus writer's internals, shared by its three files. Not
 * installed.
 *   prom_registry.c  the registry: queue series and their per-thread and
 *                    per-worker cells, the writer callbacks, watch;
 *   prom_dump.c      the dump families: dlqdump's and the restorer's
 *                    counters, their writer and their exposition;
 *   prom_render.c    the text exposition of the queue families.
 * Every series and block here is written by the writer callbacks with
 * relaxed atomics and read by the renderer under the registry's mutex
 * (see prom_registry.c for the design).
 */
#ifndef BLQ_METRICS_PROM_INTERNAL_H
#define BLQ_METRICS_PROM_INTERNAL_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <blq/prometheus.h>
#include <blq/qos.h>

#define BLQ__PROM_CELLS 16u
#define BLQ__PROM_WORKERS 1024u /* the queue's worker limit */
#define NAME_MAX_LEN 63

enum { C_IN, C_OUT, C_RETRY, C_LEAK_REAR, C_LEAK_FRONT, C_DEADLINE, C_LOST, C_FAILED, C_CANCELLED, NCOUNT };
enum { H_WAIT, H_EXEC, H_RETRY, H_DELAY, NHIST };

/* Histogram buckets: upper bounds 100 us .. 5 s (prom_registry.c has
 * them in ns, prom_render.c as `le` labels). */
#define NBUCKETS 15

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
       D_FLUSH_CLOSE, D_LOST, D_QUARANTINED, D_REDELIVERED,
       /* dlqdump_failures_total, one per blq_dump_failure */
       D_FAILURES, NDUMP = D_FAILURES + BLQ_DUMP_FAILURES };

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

/* The text being rendered: written like snprintf, so the caller learns
 * the length the whole text needs. */
typedef struct out {
	char *buf;
	size_t len, n; /* n: bytes the whole text needs so far */
} out;

/* Appends printf-style text to o (what fits; o->n counts it all). */
void blq__prom_emit(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Label value escaping of the text format: backslash, quote, newline;
 * cut to cap. */
void blq__prom_escape(char *dst, size_t cap, const char *src);
/* The dump families (prom_dump.c); nothing without dump writers. Caller
 * holds r->mu. */
void blq__prom_dump_families(out *o, const blq_prom *r);

#endif
