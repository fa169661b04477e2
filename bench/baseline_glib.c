/* GLib GThreadPool, used as its documentation intends: a pool of
 * max_threads = workers exclusive threads, g_thread_pool_push per payload
 * (unbounded), g_thread_pool_free(pool, FALSE, TRUE) to wait for the end. */
#include <glib.h>

#include "baseline_producers.h"

static void run_task(gpointer data, gpointer user)
{
	const bench_shape *s = user;

	s->task(data);
}

static void push(void *sys, void *payload)
{
	g_thread_pool_push(sys, payload, NULL);
}

int64_t bench_run_glib(const bench_shape *s)
{
	GError *err = NULL;
	GThreadPool *pool = g_thread_pool_new(run_task, (gpointer)s, (gint)s->workers, TRUE, &err);
	bench_producers p;

	if (pool == NULL) {
		g_clear_error(&err);
		return -1;
	}
	if (bench_producers_start(&p, s, push, pool) != 0) {
		g_thread_pool_free(pool, TRUE, TRUE);
		return -1;
	}
	bench_producers_go(&p);
	bench_producers_join(&p);
	g_thread_pool_free(pool, FALSE, TRUE); /* waits for every task */
	return (int64_t)(bench_now_ns() - p.start_ns);
}
