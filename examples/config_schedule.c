/*
 * config_schedule: configuring a queue with the plain blq_config struct,
 * and a time-of-day schedule that changes its worker range.
 *
 * The queue reads the time of day through its clock (blq_clock.wall_ns),
 * so this program hands it a fake wall clock and moves it through a whole
 * day in a fraction of a second: night, day (with a burst of work), evening, and a
 * late hour no range covers, where the config's own bounds apply.
 *
 * What to look at: the `bounds` column follows the schedule, the `active`
 * column stays inside it (it grows during the day's burst and shrinks
 * again when the evening lowers the ceiling), and the one configuration
 * mistake made on purpose comes back as a message that names the field.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <blq/blq.h>

#include "example_util.h"

/* The fake wall clock: nanoseconds since the epoch, moved by main. */
static _Atomic uint64_t fake_wall_ns;

static uint64_t wall_now(void *ctx)
{
	(void)ctx;
	return atomic_load(&fake_wall_ns);
}

/* hh:mm on some day, local time: the schedule reads local time too. */
static void set_time_of_day(int hh, int mm)
{
	struct tm tm = {.tm_year = 2026 - 1900, .tm_mon = 0, .tm_mday = 15, .tm_hour = hh,
			.tm_min = mm, .tm_isdst = -1};

	atomic_store(&fake_wall_ns, (uint64_t)mktime(&tm) * 1000000000u);
}

static int work(void *ctx, void *payload, blq_task *task)
{
	(void)ctx;
	ex_sleep_us(500);
	/* The queue has a per-attempt time limit (timeout_ns): past it the
	 * payload goes back to the queue, so claim it before freeing it. */
	if (!blq_task_claim(task))
		return 1;
	free(payload);
	return 0;
}

/* Waits (up to 2 s) until the balancer has switched to `range` and the
 * pool is inside the bounds, then prints one line. */
static void at(blq *q, const char *when, int range, unsigned min, unsigned max)
{
	struct blq_stats s;
	uint64_t end = ex_now_ns() + 2000000000u;

	do {
		ex_sleep_us(5000);
		blq_stats(q, &s);
	} while ((s.schedule_range != range || s.workers_active < min || s.workers_active > max) &&
		 ex_now_ns() < end);
	printf("%s  range %2d  bounds %u..%u  active %u\n", when, s.schedule_range, s.workers_min,
	       s.workers_max, s.workers_active);
	ex_check(s.schedule_range == range && s.workers_min == min && s.workers_max == max,
		 "%s: the schedule sets %u..%u", when, min, max);
	ex_check(s.workers_active >= min && s.workers_active <= max, "%s: %u active, within",
		 when, s.workers_active);
}

int main(void)
{
	blq_error err;
	blq_discard overflow;

	/* Ranges may not overlap; outside them the config applies. */
	blq_schedule *sched = blq_schedule_new();
	blq_schedule_params night = {.workers_min = 1, .workers_max = 2};
	blq_schedule_params day = {.workers_min = 4, .workers_max = 8, .wakeup_factor = 0.5};
	blq_schedule_params evening = {.workers_min = 2, .workers_max = 4};
	if (sched == NULL || blq_schedule_add(sched, "00:00-07:00", &night, &err) != 0 ||
	    blq_schedule_add(sched, "07:00-19:00", &day, &err) != 0 ||
	    blq_schedule_add(sched, "19:00-23:00", &evening, &err) != 0) {
		fprintf(stderr, "config_schedule: schedule: %s\n", sched ? err.msg : "no memory");
		return 1;
	}
	blq_discard_init(&overflow, free);
	set_time_of_day(3, 0);

	blq_config cfg = {
		.name = "orders",
		.capacity = 1000,           /* items it holds, exactly */
		.streams = 2,               /* two rings: less contention between producers */
		.worker = work,
		.item_free = free,          /* frees what the queue drops */
		.workers_min = 1,           /* the pool between 1 and 3 threads, */
		.workers_max = 3,           /* when no schedule range is in force */
		.schedule = sched,          /* copied: freed right after blq_new */
		.wakeup_factor = 0.75,      /* fill rate that adds workers */
		.sleep_factor = 0.25,       /* fill rate at which idle workers sleep */
		.heartbeat_interval_ns = 10000000, /* the balancer looks every 10 ms */
		.sleep_interval_ns = 50000000,     /* a sleeping thread ends after 50 ms */
		.dlq = blq_discard_enqueuer(&overflow), /* leaky: a full queue drops, */
							/* never blocks a producer */
		.max_retries = 2,                       /* a failed item runs twice more, */
		.retry_interval_ns = 1000000,           /* 1 ms, */
		.backoff = BLQ_BACKOFF_EXPONENTIAL,     /* then 2 ms */
		.timeout_ns = 1000000000,               /* one attempt may run 1 s */
		.deadline_interval_ns = 10000000000ull, /* not started within 10 s: expired */
		.clock = {.wall_ns = wall_now},         /* now_ns NULL: the real monotonic clock */
	};

	/* A mistake on purpose: blq_new refuses it and names the field. */
	blq_config bad = cfg;
	bad.sleep_factor = 0.9; /* above wakeup_factor */
	blq *q = blq_new(&bad, &err);
	printf("a bad config: %s (%s)\n", err.msg, blq_errname(err.code));
	ex_check(q == NULL && err.code == BLQ_EINVAL, "blq_new refused it");
	blq_free(q);

	q = blq_new(&cfg, &err);
	blq_schedule_free(sched);
	if (q == NULL) {
		fprintf(stderr, "config_schedule: %s\n", err.msg);
		return 1;
	}

	at(q, "03:00", 0, 1, 2);
	set_time_of_day(9, 0);
	at(q, "09:00", 1, 4, 8);
	/* A burst during the day: the queue fills past wakeup_factor and
	 * the balancer adds workers, up to the day's ceiling. */
	unsigned peak = 0;
	for (int i = 0; i < 900; i++) {
		int *p = malloc(sizeof(*p));
		if (p == NULL)
			break;
		*p = i;
		int rc = blq_enqueue(q, p);
		if (rc != 0) { /* refused: still ours */
			fprintf(stderr, "config_schedule: enqueue: %s\n", blq_strerror(rc));
			free(p);
		}
	}
	while (blq_wait_idle(q, 2000000) == BLQ_ETIMEDOUT) {
		struct blq_stats s;
		blq_stats(q, &s);
		peak = s.workers_active > peak ? s.workers_active : peak;
	}
	printf("09:00  burst of 900 items: up to %u workers\n", peak);
	ex_check(peak > 4 && peak <= 8, "the burst grew the pool above the day's minimum");
	set_time_of_day(20, 0);
	at(q, "20:00", 2, 2, 4);
	set_time_of_day(23, 30);
	at(q, "23:30", -1, 1, 3); /* no range: the config's bounds */

	blq_close(q);
	ex_balanced(q);
	blq_free(q);
	return ex_failures == 0 ? 0 : 1;
}
