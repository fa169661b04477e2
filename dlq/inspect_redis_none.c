/*
 * The inspector's stream back end in a build without BLQ_WITH_REDIS.
 * A stream dump or dead store is refused at open (BLQ_ENOTSUP), so the
 * other entry points are never reached with a stream area; they say the
 * same if they are.
 */
#include "errorf.h"
#include "inspect.h"

int blq__ir_open(blq_inspect *in, const blq_inspect_config *cfg, blq_error *err)
{
	(void)in, (void)cfg;
	return blq__error_set(err, BLQ_ENOTSUP, "key, dead_key: built without BLQ_WITH_REDIS");
}

void blq__ir_close(blq_inspect *in)
{
	(void)in;
}

int blq__ir_list(blq_inspect *in, const blq__iarea *a, blq_inspect_part_fn fn, void *ctx,
		 bool *stop, blq_error *err)
{
	(void)in, (void)a, (void)fn, (void)ctx, (void)stop;
	return blq__error_set(err, BLQ_ENOTSUP, "built without BLQ_WITH_REDIS");
}

int blq__ir_scan(blq_inspect *in, const blq__iarea *a, bool reverse, blq__iemit *e,
		 blq_error *err)
{
	(void)in, (void)a, (void)reverse, (void)e;
	return blq__error_set(err, BLQ_ENOTSUP, "built without BLQ_WITH_REDIS");
}

int blq__ir_delete(blq_inspect *in, const blq__iarea *a, const blq_inspect_loc *const *locs,
		   size_t n, blq__idel *d, blq_error *err)
{
	(void)in, (void)a, (void)locs, (void)n, (void)d;
	return blq__error_set(err, BLQ_ENOTSUP, "built without BLQ_WITH_REDIS");
}

int blq__ir_append(blq_inspect *in, const blq__buf *b, size_t count, unsigned format,
		   uint64_t version, blq_error *err)
{
	(void)in, (void)b, (void)count, (void)format, (void)version;
	return blq__error_set(err, BLQ_ENOTSUP, "built without BLQ_WITH_REDIS");
}

int blq__ir_version(blq_inspect *in, const blq__iarea *a, blq__iversion *out, blq_error *err)
{
	(void)in, (void)a, (void)out;
	return blq__error_set(err, BLQ_ENOTSUP, "built without BLQ_WITH_REDIS");
}
