/*
 * A dump entry of a Redis stream (dump_redis_writer.c writes them: XADD
 * KEY * v VERSION r|r2 RECORD), checked the one way both its readers need:
 * the restorer's reader, which quarantines a bad entry, and the inspector,
 * which reports it. The record field holds exactly one record in the file
 * layout (dump_format.h), so it is parsed by the same code as a file's.
 */
#include "redis_entry.h"

#include <stdbool.h>
#include <string.h>

#include "dump_format.h"

int blq__redis_is_str(const redisReply *r)
{
	return r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

/* The version as the writer spells it ("%llu"): 1 to 20 decimal digits
 * within 64 bits, and nothing else. strtoull, used here before, also took
 * leading spaces, a sign ("-18446744073709551615" read as 1), a number out
 * of range (read as the largest), and stopped at a NUL inside the field
 * ("\0" read as 0): entries no blq writer makes, taken as the wanted
 * version instead of quarantined (found by tests/fuzz/redis_entry_fuzz.c). */
static bool decimal_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > 20)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

const char *blq__redis_entry_check(const redisReply *fields, const uint64_t *want,
				   const redisReply **v, const char **rf, const redisReply **r,
				   blq_dump_record *rec)
{
	unsigned format = 0;

	*v = *r = NULL;
	*rf = "r";
	for (size_t i = 0; i + 1 < fields->elements; i += 2) {
		const redisReply *f = fields->element[i], *x = fields->element[i + 1];
		unsigned fmt = 0;

		if (!blq__redis_is_str(f) || !blq__redis_is_str(x))
			continue;
		if (f->len == 1 && f->str[0] == 'v')
			*v = x;
		else if (f->len == 1 && f->str[0] == 'r')
			fmt = 1;
		else if (f->len == 2 && f->str[0] == 'r' && f->str[1] == '2')
			fmt = 2;
		if (fmt == 0)
			continue;
		if (*r != NULL)
			return "more than one record field (r, r2)";
		*r = x;
		*rf = fmt == 1 ? "r" : "r2";
		format = fmt;
	}
	if (*v == NULL || *r == NULL)
		return "missing field v or r (format 1) / r2 (format 2)";
	uint64_t ver;
	if (!decimal_u64((*v)->str, (*v)->len, &ver))
		return "bad version field";
	if (want != NULL && ver != *want)
		return "version mismatch";
	size_t off = 0;
	int rc = blq__dump_rec_parse((const unsigned char *)(*r)->str, (*r)->len, format, &off, rec);
	if (rc != BLQ__DUMP_OK)
		return blq__dump_parse_str(rc);
	if (off != (*r)->len)
		return "trailing bytes after the record";
	rec->version = ver;
	return NULL;
}
