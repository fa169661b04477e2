/*
 * Choosing and building a queue's engine (shared/engine.h): the rings for
 * a plain queue, QoS when the config has qos set. The one place of the
 * core that names QoS: everything else calls the engine through its table.
 *
 * The port an engine gets holds the queue's own flags, counts and event
 * counts by address (they live in struct blq, in the groups internal.h
 * describes), plus the config values it needs, copied: the engine never
 * reads struct blq or the caller's config after its init.
 */
#include "internal.h"

const blq__engine *blq__engine_for(const blq_config *cfg)
{
	return cfg->qos != NULL ? &blq__qos_engine : &blq__rings_engine;
}

int blq__engine_setup(blq *q, unsigned *streams)
{
	blq__shape shape = {0};
	int rc;

	q->engine = blq__engine_for(&q->cfg);
	q->port = (blq__port){
		.q = q,
		.name = q->name,
		.metrics = q->cfg.metrics,
		.leaky = q->leaky,
		.balanced = &q->balanced,
		.leak_direction = q->cfg.leak_direction,
		.front_leak_attempts = q->cfg.front_leak_attempts,
		.staged = &q->staged,
		.blocked = &q->producers_blocked,
		.blocked_max = q->cfg.producers_blocked_max,
		.turned_away = &q->producers_turned_away,
		.closed = &q->closed,
		.forced = &q->forced,
		.items = &q->items_ec,
		.space = &q->space_ec,
		.spin = &q->spin,
		.idle = &q->idle_ec,
	};
	rc = q->engine->init(&q->cfg, &q->port, &q->engine_state, &shape);
	/* The caller's qos config may go away: the engine has its copy. */
	q->cfg.qos = NULL;
	if (rc != 0)
		return rc;
	q->capacity = shape.capacity;
	q->ring_cap = shape.ring_cap;
	q->direct_due = shape.direct_due;
	*streams = shape.streams;
	return 0;
}

void *blq__core_engine_state(const blq *q, const blq__engine *e)
{
	return q != NULL && q->engine == e ? q->engine_state : NULL;
}
