/*
 * Checked reads of a jansson JSON value for the demo's init body
 * (spec.c): each names the field it refuses by its path
 * ("qos.queues[2].capacity: must not be negative (got -1)"), and only the
 * first problem is reported (later calls do nothing once p->failed is
 * set), so a parser can read every field in a row and look once at the
 * end. Absent and null members read as 0, false, "" or NULL. No state but
 * the caller's parse_ctx: thread-safe for separate contexts.
 */
#ifndef BLQ_DEMO_SPEC_JSON_H
#define BLQ_DEMO_SPEC_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the parse is, for messages: "qos.queues[2].capacity". */
typedef struct parse_ctx {
	char *err;
	size_t errlen;
	bool failed;
} parse_ctx;

/* Records the first problem: "<path>: <message>" into p->err. */
void sj_fail(parse_ctx *p, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The JSON type of v, as a message says it ("object", "number", ...). */
const char *sj_type_name(const json_t *v);
/* dst = prefix.name, or name with an empty prefix (a field's path). */
void sj_join(char *dst, size_t len, const char *prefix, const char *name);
/* Refuses members not in @allowed (a NULL-terminated list). */
void sj_check_keys(parse_ctx *p, json_t *obj, const char *path, const char *const *allowed);
/* The member, or NULL when absent or null. */
json_t *sj_member(json_t *obj, const char *name);
/* An unsigned integer in [0, max]; integral reals such as 1e5 count. */
uint64_t sj_get_uint(parse_ctx *p, json_t *obj, const char *prefix, const char *name,
		     uint64_t max);
/* A number in [lo, hi]. */
double sj_get_real(parse_ctx *p, json_t *obj, const char *prefix, const char *name, double lo,
		   double hi);
/* true or false. */
bool sj_get_bool(parse_ctx *p, json_t *obj, const char *name);
/* A string into dst (at most cap-1 bytes); "" when absent. */
void sj_get_string(parse_ctx *p, json_t *obj, const char *prefix, const char *name, char *dst,
		   size_t cap);
/* An object member, or NULL (absent, null, or not an object: failed). */
json_t *sj_get_object(parse_ctx *p, json_t *obj, const char *prefix, const char *name);
/* An array member of at most max entries, or NULL (absent, null, or not
 * an array or too long: failed). */
json_t *sj_get_array(parse_ctx *p, json_t *obj, const char *name, size_t max);

#endif
