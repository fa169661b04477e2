/* A dump entry of a Redis stream, checked: shared by the Redis reader and
 * the inspector. Not installed. */
#ifndef BLQ_DLQ_REDIS_ENTRY_H
#define BLQ_DLQ_REDIS_ENTRY_H

#include <stdint.h>

#include <hiredis/hiredis.h>

#include <blq/dlqdump.h>

/* True for a string or status reply. */
int blq__redis_is_str(const redisReply *r);

/* Checks an entry's field list: v and exactly one of r (format 1) or r2
 * (format 2), v a decimal number as the writer spells it (1 to 20 digits,
 * no sign or space, within 64 bits; equal to *want when want is not NULL), the
 * record field exactly one well-formed record. NULL when good (rec filled,
 * its version set); otherwise a static sentence saying why not. *v, *r
 * and *rf (the record field's name) are set as far as found. */
const char *blq__redis_entry_check(const redisReply *fields, const uint64_t *want,
				   const redisReply **v, const char **rf, const redisReply **r,
				   blq_dump_record *rec);

#endif
