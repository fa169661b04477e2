/* Connection deadlines: see deadline.h. */
#include "deadline.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define NO_DEADLINE UINT64_MAX

struct demo_conn {
	bool used, cut;
	int fd;
	/* Who is on the other end: checked before the shutdown, so a socket
	 * number reused by a newer connection is never cut by mistake. */
	struct sockaddr_storage peer;
	socklen_t peerlen;
	uint64_t deadline_ns;
};

struct demo_deadlines {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	pthread_t thread;
	bool stop;
	uint64_t limit_ns;
	unsigned max;
	demo_conn *conns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool same_peer(const demo_conn *c)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	return getpeername(c->fd, (struct sockaddr *)&ss, &len) == 0 && len == c->peerlen &&
	       memcmp(&ss, &c->peer, len) == 0;
}

static void *watchdog(void *arg)
{
	demo_deadlines *d = arg;
	pthread_mutex_lock(&d->mu);
	while (!d->stop) {
		uint64_t now = now_ns(), next = NO_DEADLINE;
		for (unsigned i = 0; i < d->max; i++) {
			demo_conn *c = &d->conns[i];
			if (!c->used || c->cut || c->deadline_ns == NO_DEADLINE)
				continue;
			if (c->deadline_ns <= now) {
				/* Under the lock: the connection cannot be closed (and
				 * its number reused) meanwhile, see demo_deadlines_close. */
				if (same_peer(c))
					shutdown(c->fd, SHUT_RDWR);
				c->cut = true;
			} else if (c->deadline_ns < next) {
				next = c->deadline_ns;
			}
		}
		if (next == NO_DEADLINE) {
			pthread_cond_wait(&d->cond, &d->mu);
		} else {
			struct timespec ts = {.tv_sec = (time_t)(next / 1000000000u),
					      .tv_nsec = (long)(next % 1000000000u)};
			pthread_cond_timedwait(&d->cond, &d->mu, &ts);
		}
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

demo_deadlines *demo_deadlines_new(unsigned max, uint64_t limit_ns)
{
	demo_deadlines *d = calloc(1, sizeof *d);
	if (d == NULL)
		return NULL;
	d->conns = calloc(max, sizeof *d->conns);
	d->max = max;
	d->limit_ns = limit_ns;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&d->mu, NULL);
	if (d->conns == NULL || pthread_create(&d->thread, NULL, watchdog, d) != 0) {
		pthread_mutex_destroy(&d->mu);
		pthread_cond_destroy(&d->cond);
		free(d->conns);
		free(d);
		return NULL;
	}
	return d;
}

void demo_deadlines_free(demo_deadlines *d)
{
	if (d == NULL)
		return;
	pthread_mutex_lock(&d->mu);
	d->stop = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->mu);
	pthread_join(d->thread, NULL);
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->cond);
	free(d->conns);
	free(d);
}

static void set_deadline(demo_deadlines *d, demo_conn *c, uint64_t at)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&d->mu);
	c->deadline_ns = at;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->mu);
}

demo_conn *demo_deadlines_open(demo_deadlines *d, int fd)
{
	demo_conn *c = NULL;
	pthread_mutex_lock(&d->mu);
	for (unsigned i = 0; i < d->max && c == NULL; i++)
		if (!d->conns[i].used)
			c = &d->conns[i];
	if (c != NULL) {
		*c = (demo_conn){.used = true, .fd = fd, .peerlen = sizeof c->peer};
		if (getpeername(fd, (struct sockaddr *)&c->peer, &c->peerlen) != 0)
			c->peerlen = 0;
		c->deadline_ns = now_ns() + d->limit_ns;
		pthread_cond_signal(&d->cond);
	}
	pthread_mutex_unlock(&d->mu);
	return c;
}

void demo_deadlines_close(demo_deadlines *d, demo_conn *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&d->mu);
	c->used = false;
	pthread_mutex_unlock(&d->mu);
}

void demo_deadlines_pause(demo_deadlines *d, demo_conn *c)
{
	set_deadline(d, c, NO_DEADLINE);
}

void demo_deadlines_restart(demo_deadlines *d, demo_conn *c)
{
	set_deadline(d, c, now_ns() + d->limit_ns);
}
