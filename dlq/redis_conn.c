/*
 * The Redis connection of a writer or reader (each owns one: a hiredis
 * context is not thread-safe).
 *
 * hiredis 0.14.1 (Debian 12) has no redisConnectWithOptions and no command
 * timeout option, and its redisReconnect forgets the timeout and keepalive;
 * so every connection, first or later, is a fresh redisConnectWithTimeout
 * followed by redisSetTimeout and redisEnableKeepAlive. After a failure the
 * next attempt waits reconnect_min_ns, doubling up to reconnect_max_ns, so
 * a dead server costs one quick refusal per call, not a connect timeout.
 *
 * A writer starts without a connection (blq__redis_setup): a dump must
 * start while Redis is down, as it survives an outage that starts later,
 * so its first write connects, and a failure there is a write error like
 * any later one (the dump offers the batch to its fallback and retries).
 * Whether the host name resolves is part of that: a name that does not
 * resolve yet (a container not started, DNS not updated) is an outage,
 * not a config error; the write error names the resolver's message.
 * Readers and the inspector connect before they return (blq__redis_open):
 * they have nothing to do without the server.
 */
#include "redis_conn.h"

#include <stdio.h>
#include <string.h>

#include "errorf.h"
#include "dump_util.h"

static struct timeval tv_of(uint64_t ns)
{
	return (struct timeval){.tv_sec = (time_t)(ns / 1000000000u),
				.tv_usec = (suseconds_t)(ns % 1000000000u / 1000u)};
}

static int connect_now(blq__redis *r, blq_error *err)
{
	redisContext *c = redisConnectWithTimeout(r->host, r->port, r->connect_tv);

	if (c == NULL || c->err != 0 || redisSetTimeout(c, r->command_tv) != REDIS_OK ||
	    redisEnableKeepAlive(c) != REDIS_OK) {
		blq__error_set(err, BLQ_EIO, "redis %s: cannot connect: %s", r->addr,
			       c != NULL ? c->errstr : "out of memory");
		if (c != NULL)
			redisFree(c);
		r->next_try_ns = blq__monotonic_ns() + r->backoff_ns;
		r->backoff_ns = r->backoff_ns * 2 < r->max_ns ? r->backoff_ns * 2 : r->max_ns;
		return BLQ_EIO;
	}
	r->c = c;
	r->backoff_ns = r->min_ns;
	return 0;
}

int blq__redis_setup(blq__redis *r, const blq_dump_redis_config *cfg, blq_error *err)
{
	const char *host = cfg->host ? cfg->host : "127.0.0.1";

	memset(r, 0, sizeof(*r));
	if (host[0] == '\0' || strlen(host) >= sizeof(r->host))
		return blq__error_set(err, BLQ_EINVAL, "host: must be 1..%zu bytes",
				      sizeof(r->host) - 1);
	if (cfg->port < 0 || cfg->port > 65535)
		return blq__error_set(err, BLQ_EINVAL, "port: must be 1..65535, got %d", cfg->port);
	if (cfg->key == NULL || cfg->key[0] == '\0' || strlen(cfg->key) > 200)
		return blq__error_set(err, BLQ_EINVAL, "key: required, 1..200 bytes");
	snprintf(r->host, sizeof(r->host), "%s", host);
	r->port = cfg->port ? cfg->port : 6379;
	snprintf(r->addr, sizeof(r->addr), "%s:%d", r->host, r->port);
	r->connect_tv = tv_of(cfg->connect_timeout_ns ? cfg->connect_timeout_ns : 1000000000u);
	r->command_tv = tv_of(cfg->command_timeout_ns ? cfg->command_timeout_ns : 5000000000u);
	r->min_ns = cfg->reconnect_min_ns ? cfg->reconnect_min_ns : 50000000u;
	r->max_ns = cfg->reconnect_max_ns ? cfg->reconnect_max_ns : 5000000000u;
	if (r->max_ns < r->min_ns)
		return blq__error_set(err, BLQ_EINVAL,
				      "reconnect_max_ns: must be >= reconnect_min_ns");
	r->backoff_ns = r->min_ns;
	r->next_try_ns = 0; /* the first blq__redis_ready connects */
	return 0;
}

int blq__redis_open(blq__redis *r, const blq_dump_redis_config *cfg, blq_error *err)
{
	int rc = blq__redis_setup(r, cfg, err);

	if (rc != 0)
		return rc;
	if (connect_now(r, err) != 0) {
		if (err != NULL)
			err->code = BLQ_EINVAL;
		return BLQ_EINVAL;
	}
	return 0;
}

int blq__redis_ready(blq__redis *r, blq_error *err)
{
	if (r->c != NULL)
		return 0;
	uint64_t now = blq__monotonic_ns();
	if (now < r->next_try_ns)
		return blq__error_set(err, BLQ_EIO, "redis %s: down, next attempt in %llu ms",
				      r->addr,
				      (unsigned long long)((r->next_try_ns - now) / 1000000u));
	return connect_now(r, err);
}

void blq__redis_drop(blq__redis *r, blq_error *err)
{
	if (r->c == NULL)
		return;
	blq__error_set(err, BLQ_EIO, "redis %s: %s", r->addr,
		       r->c->errstr[0] ? r->c->errstr : "connection lost");
	redisFree(r->c);
	r->c = NULL;
	r->next_try_ns = blq__monotonic_ns() + r->backoff_ns;
}

redisReply *blq__redis_call(blq__redis *r, int argc, const char **argv, const size_t *len,
			    blq_error *err)
{
	if (blq__redis_ready(r, err) != 0)
		return NULL;
	redisReply *rep = redisCommandArgv(r->c, argc, argv, len);
	if (rep == NULL)
		blq__redis_drop(r, err);
	return rep;
}

void blq__redis_close(blq__redis *r)
{
	if (r->c != NULL)
		redisFree(r->c);
	r->c = NULL;
}
