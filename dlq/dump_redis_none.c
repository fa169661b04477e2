/*
 * The Redis constructors of a build without BLQ_WITH_REDIS (no hiredis):
 * they exist, so a program links either way, and they refuse with
 * BLQ_ENOTSUP and a message that says how the library was built, instead
 * of a missing symbol at link time.
 */
#include <blq/dlqdump.h>

#include "errorf.h"

blq_dump_writer *blq_dump_redis_writer_new(const blq_dump_redis_config *cfg, blq_error *err)
{
	(void)cfg;
	blq__error_set(err, BLQ_ENOTSUP, "redis: blq was built without BLQ_WITH_REDIS");
	return NULL;
}

blq_dump_reader *blq_dump_redis_reader_new(const blq_dump_redis_config *cfg, blq_error *err)
{
	(void)cfg;
	blq__error_set(err, BLQ_ENOTSUP, "redis: blq was built without BLQ_WITH_REDIS");
	return NULL;
}
