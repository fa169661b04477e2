/* A hiredis connection that reconnects with backoff. Not installed. */
#ifndef BLQ_DLQ_REDIS_CONN_H
#define BLQ_DLQ_REDIS_CONN_H

#include <stdint.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include <blq/dlqdump.h>

typedef struct blq__redis {
	redisContext *c; /* NULL while down */
	char host[256];
	int port;
	char addr[300]; /* "host:port", for messages */
	struct timeval connect_tv, command_tv;
	uint64_t min_ns, max_ns, backoff_ns, next_try_ns;
} blq__redis;

/* Validates host, port, key and the timeouts of cfg (messages name the
 * field, BLQ_EINVAL) and applies the defaults, without connecting: the
 * first blq__redis_ready connects (the writer's way). */
int blq__redis_setup(blq__redis *r, const blq_dump_redis_config *cfg, blq_error *err);

/* blq__redis_setup, then connects once: an unreachable server is
 * BLQ_EINVAL naming host:port (the readers' way). */
int blq__redis_open(blq__redis *r, const blq_dump_redis_config *cfg, blq_error *err);

/* Connected, or a new attempt when the backoff allows one. 0 or BLQ_EIO. */
int blq__redis_ready(blq__redis *r, blq_error *err);

/* Forgets a broken connection (after an I/O error) and arms the backoff. */
void blq__redis_drop(blq__redis *r, blq_error *err);

/* One command, binary-safe. Returns the reply (the caller frees it; it may
 * be an error reply), or NULL after an I/O error (connection dropped, err
 * says why). */
redisReply *blq__redis_call(blq__redis *r, int argc, const char **argv, const size_t *len,
			    blq_error *err);

void blq__redis_close(blq__redis *r);

#endif
