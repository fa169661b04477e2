/* The stage's insides, shared by stage.c, producers.c and emulate.c. */
#ifndef BLQ_DEMO_STAGE_INTERNAL_H
#define BLQ_DEMO_STAGE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "history.h"
#include "stage.h"

enum producer_state {
	PRODUCER_IDLE = 0, /* no thread */
	PRODUCER_ACTIVE,   /* enqueueing */
	PRODUCER_RETIRING, /* told to stop; its thread not joined yet */
};

typedef struct producer {
	struct demo_stage *stage;
	pthread_t thread;
	_Atomic int state;
} producer;

struct demo_stage {
	char key[65];
	/* CLOCK_REALTIME ns at the start: tells this run of the key from an
	 * earlier one (also across daemon restarts) in the dashboard's stats. */
	uint64_t instance;
	demo_spec spec;
	blq *q;
	blq_prom *prom;

	/* The DLQ: a discard, or a dump with its writer (and a restorer). */
	blq_discard discard;
	blq_dump *dump;
	blq_dump_writer *writer;
	blq_dump_reader *reader;
	blq_restorer *restorer;

	/* Producers: slots 0..producers_max-1, guarded by pmu. */
	pthread_mutex_t pmu;
	producer *producers;
	unsigned active;
	bool producers_closed; /* stopping: no producer starts any more */
	_Atomic uint64_t seq; /* payloads are sequence numbers: no allocation */

	/* The producers schedule thread (only with producers_schedule). */
	blq_schedule *pschedule;
	pthread_t sched_thread;
	bool sched_running;
	pthread_mutex_t smu;
	pthread_cond_t scond;
	bool sched_stop;
	uint64_t started_ms; /* CLOCK_MONOTONIC, for relative ranges */
	blq_logger logger;

	demo_history *history; /* the dashboard's samples (history.h) */
};


/* The worker: sleeps worker_delay (varied by +-50% with allow_deadline, as
 * the original), polling the cancel flag, and fails at fail_rate. */
int demo_emulate_work(void *ctx, void *payload, blq_task *task);

/* The demo's item in a dump: the original's 12-byte Item (u32 header 4,
 * u64 payload), little-endian. */
blq_dump_encoder demo_item_encoder(void);
blq_dump_decoder demo_item_decoder(void);

/* producers.c */
int demo_producers_init(demo_stage *s, char *err, size_t errlen);
int demo_producers_set(demo_stage *s, unsigned target, char *err, size_t errlen);
/* Adds delta (may be negative) within [producers_min, producers_max];
 * all or nothing. */
int demo_producers_add(demo_stage *s, long delta, char *err, size_t errlen);
void demo_producers_stop_all(demo_stage *s);
void demo_producers_join(demo_stage *s);
void demo_producers_free(demo_stage *s);
int demo_schedule_start(demo_stage *s, char *err, size_t errlen);
void demo_schedule_stop(demo_stage *s);

/* Sleeps ns in slices of at most 10 ms, returning early once go_on(ctx)
 * is false (asked before each slice). */
void demo_sleep_while(uint64_t ns, bool (*go_on)(const void *ctx), const void *ctx);

#endif
