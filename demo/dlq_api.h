/*
 * The DLQ endpoints of the API (/api/v1/dlq...), for a key with a dump:
 *   GET  dlq?key=K            its areas (dump, quarantine, dead): records,
 *                             bytes, damage, oldest and newest age, a
 *                             stream's pending entries per consumer, and
 *                             the running (or last) redrive's progress;
 *   GET  dlq/records?key=K&area=A&page=N&per_page=M&order=newest|oldest
 *        [&reason=R,...]      a page of records with why they were
 *                             dead-lettered and a preview of each;
 *   POST dlq/redrive?key=K    {"area","all"|"locs","rate"}: a redrive at a
 *                             rate, on a thread (redrive.h);
 *   POST dlq/purge?key=K      {"area":"dead","all"|"locs","dry_run"};
 *   GET  dlq/download?key=K&area=A   the area as JSON lines.
 * All of it through blq/dlqinspect.h, an inspector opened per request (the
 * redrive has its own). This file knows no HTTP library: http.c routes,
 * checks origins (redrive and purge change queues) and sends the reply.
 */
#ifndef BLQ_DEMO_DLQ_API_H
#define BLQ_DEMO_DLQ_API_H

#include <stdbool.h>
#include <stddef.h>

#include "registry.h"

#define DEMO_DLQ_PER_PAGE_MAX 500u

/* A query argument by name, NULL when absent; *cut when it held a NUL. */
typedef const char *(*demo_arg_fn)(void *ctx, const char *name, bool *cut);

/* What to send back. */
typedef struct demo_dlq_reply {
	unsigned status;
	char *body;       /* 2xx: malloc'd, sent as is with type; else NULL */
	const char *type; /* its content type */
	char filename[96]; /* non-empty: sent as an attachment of that name */
	char error[512];  /* non-2xx: the message */
} demo_dlq_reply;

/**
 * demo_dlq_path() - whether @what (the path after /api/v1/) is a DLQ
 * endpoint; *changes is set for those that change the dump (redrive, purge).
 */
bool demo_dlq_path(const char *what, bool *changes);

/**
 * demo_dlq_handle() - answer a DLQ request for the (valid) @key.
 * @body, @len: the request body (POST).
 */
void demo_dlq_handle(demo_registry *reg, const char *what, const char *method, const char *key,
		     demo_arg_fn arg, void *arg_ctx, const char *body, size_t len,
		     demo_dlq_reply *out);

#endif
