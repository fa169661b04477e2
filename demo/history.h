/*
 * A key's recent past, so that a dashboard opened mid-run draws the run so
 * far at once instead of an empty chart.
 *
 * Sampling: one thread per daemon (the registry's sampler, registry.c)
 * takes a sample of every live stage each DEMO_HISTORY_PERIOD_MS, the
 * first at the stage's start, the last while it stops; each stage on its
 * own phase, so its samples are a period apart from its start. A sample
 * reads what /api/v1/stats reads (blq_stats, the producers, the dump's and
 * restorer's counters, the QoS sizes): the queue's hot path does nothing
 * for it. With no stage live the sampler sleeps on a condition with no
 * timeout: an idle daemon does not wake up for it.
 *
 * The ring: DEMO_HISTORY_SAMPLES samples (5 minutes at 1 s), allocated
 * once with the stage and freed with it, so a stopped key's history is
 * gone and a key started again begins a new one. Recording overwrites the
 * oldest sample; nothing is allocated per sample. Size per live key:
 * DEMO_HISTORY_SAMPLES x demo_sample_size(sub-queues), 69,600 bytes
 * without QoS (232 bytes a sample) plus 2,400 per QoS sub-queue; at most
 * DEMO_STAGES_MAX (64) keys are live.
 *
 * Samples are numbered from 1 (their "seq") in the order taken; a reader
 * asks for those after a number it has. One mutex per ring, held to copy
 * one sample in or the asked samples out (the JSON is made outside it).
 */
#ifndef BLQ_DEMO_HISTORY_H
#define BLQ_DEMO_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#define DEMO_HISTORY_PERIOD_MS 1000u /* the dashboard's poll period */
#define DEMO_HISTORY_SAMPLES 300u    /* 5 minutes at 1 s: the dashboard's window */

/* What the dashboard charts, at one moment (the names of /api/v1/stats). */
typedef struct demo_sample {
	double t; /* CLOCK_MONOTONIC seconds, the clock of stats' "t" */
	uint64_t size, capacity;
	double rate, wakeup_factor, sleep_factor;
	uint32_t workers_active, workers_asleep, workers_idle, workers_min, workers_max;
	uint32_t workers_busy, workers_overrunning, workers_stuck;
	uint32_t producers_active, producers_blocked, dlq_waiting;
	uint64_t in, processed, failed, leaked, lost, retried, expired, timed_out;
	/* leaked by reason: they add up to leaked */
	uint64_t leaked_rear, leaked_front, leaked_failed, leaked_deadline, leaked_closed;
	uint64_t dump_written, dump_dropped, restored; /* 0 without a dump or restorer */
	uint64_t egress_size;                          /* with QoS */
	uint64_t subq_size[];                          /* with QoS: one per sub-queue */
} demo_sample;

/** demo_sample_size() - bytes of one sample with @nsubqs sub-queue sizes. */
static inline size_t demo_sample_size(unsigned nsubqs)
{
	return sizeof(demo_sample) + (size_t)nsubqs * sizeof(uint64_t);
}

typedef struct demo_history demo_history;

/**
 * demo_history_new() - an empty ring of @capacity (>= 1) samples with
 * @nsubqs sub-queue sizes each. Return: NULL when out of memory.
 */
demo_history *demo_history_new(unsigned capacity, unsigned nsubqs);

/** demo_history_free() - NULL is a no-op; no call may run on @h meanwhile. */
void demo_history_free(demo_history *h);

/**
 * demo_history_record() - append a copy of @s (demo_sample_size(nsubqs)
 * bytes), dropping the oldest sample when full. Any thread.
 */
void demo_history_record(demo_history *h, const demo_sample *s);

/**
 * demo_history_since() - copy the samples numbered after @after that the
 * ring still holds, oldest first. Any thread.
 * @n: receives how many; @first_seq: the number of the first (when @n > 0).
 * Return: malloc'd, demo_sample_size(nsubqs) bytes apart (demo_history_at),
 * or NULL: none (*n == 0) or out of memory (*n != 0).
 */
void *demo_history_since(demo_history *h, uint64_t after, size_t *n, uint64_t *first_seq);

/** demo_history_at() - the @i-th sample of what demo_history_since returned. */
static inline const demo_sample *demo_history_at(const void *samples, unsigned nsubqs, size_t i)
{
	return (const demo_sample *)((const char *)samples + i * demo_sample_size(nsubqs));
}

/** demo_history_capacity() / _nsubqs() - as made. */
unsigned demo_history_capacity(const demo_history *h);
unsigned demo_history_nsubqs(const demo_history *h);

#endif
