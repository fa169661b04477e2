/*
 * Per-connection deadlines for the HTTP servers. libmicrohttpd only closes
 * connections that stay silent (its idle timeout), so a client trickling
 * one header byte every few seconds could hold a connection, and with
 * enough of them every connection, for ever. Here each connection gets
 * DEMO_REQUEST_TIME_S to deliver a whole request (line, headers, body);
 * the deadline is paused while the handler runs (a draining stop may take
 * long) and starts again for the next request on a kept-alive connection.
 * A watchdog thread, asleep while no deadline is pending, shuts the
 * socket of a connection past its deadline; libmicrohttpd then closes it.
 */
#ifndef BLQ_DEMO_DEADLINE_H
#define BLQ_DEMO_DEADLINE_H

#include <stdint.h>

typedef struct demo_deadlines demo_deadlines;
typedef struct demo_conn demo_conn;

/** demo_deadlines_new() - room for @max connections, @limit_ns each.
 * Return: NULL when out of memory or no thread. */
demo_deadlines *demo_deadlines_new(unsigned max, uint64_t limit_ns);
/** demo_deadlines_free() - stop the watchdog; after the server stopped. */
void demo_deadlines_free(demo_deadlines *d);
/** demo_deadlines_open() - a new connection on @fd: its deadline starts.
 * Return: its record, or NULL when full (then it has no deadline). */
demo_conn *demo_deadlines_open(demo_deadlines *d, int fd);
/** demo_deadlines_close() - the connection is gone; NULL is a no-op. */
void demo_deadlines_close(demo_deadlines *d, demo_conn *c);
/** demo_deadlines_pause() - a request is complete: no deadline while it is handled. */
void demo_deadlines_pause(demo_deadlines *d, demo_conn *c);
/** demo_deadlines_restart() - the reply is sent: the next request's deadline starts. */
void demo_deadlines_restart(demo_deadlines *d, demo_conn *c);

#endif
