/*
 * The daemon's two HTTP servers (libmicrohttpd, one thread per connection,
 * so a slow stop blocks only its own client):
 *   the API   /api/v1/{init,producer-up,producer-down,stop,force-stop,
 *             status,list,ping}, replies {"status","error","message"};
 *             /api/v1/stats?key=K, the dashboard's numbers (stage.h);
 *             /api/v1/history?key=K[&after=SEQ], its recent past (history.h);
 *             /api/v1/dlq[/records|/redrive|/purge|/download]?key=K, the
 *             key's dump, quarantine and dead store (dlq_api.h);
 *             and the dashboard page itself at / (dashboard.h);
 *   metrics   /metrics, the Prometheus exposition of every queue.
 * Both limit connections (total and per client address), header memory,
 * body size (413) and request time, so a slow or hostile client cannot
 * hold the daemon.
 */
#ifndef BLQ_DEMO_HTTP_H
#define BLQ_DEMO_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "registry.h"

#define DEMO_BODY_MAX (1u << 20)       /* init bodies: 1 MiB */
#define DEMO_CONNECTIONS_MAX 64u
#define DEMO_CONNECTIONS_PER_IP 32u
#define DEMO_IDLE_TIMEOUT_S 10u        /* a connection silent this long is closed */
#define DEMO_REQUEST_TIME_S 30u        /* default: a request (line, headers, body) not in by then is cut */
#define DEMO_HEADER_MEMORY (32u << 10) /* per connection: request line and headers */

typedef struct demo_http demo_http;

/**
 * demo_http_start() - serve the API (@metrics false) or /metrics (@metrics
 * true) on the listening socket @fd (net.h), which it takes over.
 * @request_s: seconds a client has to send a whole request (deadline.h).
 * Return: the server, or NULL with a message in @err.
 */
demo_http *demo_http_start(demo_registry *reg, blq_prom *prom, int fd, bool ipv6, bool metrics,
			   unsigned request_s, const blq_logger *logger, char *err, size_t errlen);

/** demo_http_stop() - stop accepting, finish open requests, free. */
void demo_http_stop(demo_http *h);

#endif
