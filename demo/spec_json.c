/*
 * Checked reads of JSON members for the demo's init body: the helpers
 * spec.c builds its parser from (spec_json.h says the contract). Numbers
 * accept integral reals such as 1e5 where an integer is expected, as the
 * original's Go decoder does; strings must fit their buffer and contain
 * no NUL byte, so a name cannot be cut short silently.
 */
#include "spec_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void sj_fail(parse_ctx *p, const char *path, const char *fmt, ...)
{
	if (p->failed)
		return; /* the first problem is the one reported */
	p->failed = true;
	int n = snprintf(p->err, p->errlen, "%s: ", path);
	if (n < 0 || (size_t)n >= p->errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

const char *sj_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	default: return "null";
	}
}

void sj_join(char *dst, size_t len, const char *prefix, const char *name)
{
	if (prefix[0] != '\0')
		snprintf(dst, len, "%s.%s", prefix, name);
	else
		snprintf(dst, len, "%s", name);
}

/* Refuses members not in @allowed (a NULL-terminated list). */
void sj_check_keys(parse_ctx *p, json_t *obj, const char *path, const char *const *allowed)
{
	const char *k;
	json_t *v;
	json_object_foreach(obj, k, v) {
		bool known = false;
		for (const char *const *a = allowed; *a != NULL && !known; a++)
			known = strcmp(*a, k) == 0;
		if (!known) {
			char at[128];
			sj_join(at, sizeof at, path, k);
			sj_fail(p, at, "unknown field");
			return;
		}
	}
}

/* The member, or NULL when absent or null. */
json_t *sj_member(json_t *obj, const char *name)
{
	json_t *v = json_object_get(obj, name);
	return v != NULL && !json_is_null(v) ? v : NULL;
}

/* An unsigned integer in [0, max]; integral reals such as 1e5 count. */
uint64_t sj_get_uint(parse_ctx *p, json_t *obj, const char *prefix, const char *name,
			 uint64_t max)
{
	json_t *v = sj_member(obj, name);
	if (v == NULL || p->failed)
		return 0;
	char at[128];
	sj_join(at, sizeof at, prefix, name);
	double d;
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (i < 0) {
			sj_fail(p, at, "must not be negative (got %lld)", (long long)i);
			return 0;
		}
		if ((uint64_t)i > max) {
			sj_fail(p, at, "at most %llu (got %lld)", (unsigned long long)max, (long long)i);
			return 0;
		}
		return (uint64_t)i;
	}
	if (!json_is_real(v)) {
		sj_fail(p, at, "expected a non-negative integer, got %s", sj_type_name(v));
		return 0;
	}
	d = json_real_value(v);
	if (d < 0 || d != floor(d)) {
		sj_fail(p, at, "expected a non-negative integer, got %g", d);
		return 0;
	}
	if (d > (double)max) {
		sj_fail(p, at, "at most %llu (got %g)", (unsigned long long)max, d);
		return 0;
	}
	return (uint64_t)d;
}

double sj_get_real(parse_ctx *p, json_t *obj, const char *prefix, const char *name,
		       double lo, double hi)
{
	json_t *v = sj_member(obj, name);
	if (v == NULL || p->failed)
		return 0;
	char at[128];
	sj_join(at, sizeof at, prefix, name);
	if (!json_is_number(v)) {
		sj_fail(p, at, "expected a number, got %s", sj_type_name(v));
		return 0;
	}
	double d = json_number_value(v);
	if (!(d >= lo && d <= hi)) {
		sj_fail(p, at, "must be in [%g, %g] (got %g)", lo, hi, d);
		return 0;
	}
	return d;
}

bool sj_get_bool(parse_ctx *p, json_t *obj, const char *name)
{
	json_t *v = sj_member(obj, name);
	if (v == NULL || p->failed)
		return false;
	if (!json_is_boolean(v)) {
		sj_fail(p, name, "expected true or false, got %s", sj_type_name(v));
		return false;
	}
	return json_is_true(v);
}

/* A string into dst (at most cap-1 bytes); "" when absent. */
void sj_get_string(parse_ctx *p, json_t *obj, const char *prefix, const char *name,
		       char *dst, size_t cap)
{
	dst[0] = '\0';
	json_t *v = sj_member(obj, name);
	if (v == NULL || p->failed)
		return;
	char at[128];
	sj_join(at, sizeof at, prefix, name);
	if (!json_is_string(v)) {
		sj_fail(p, at, "expected a string, got %s", sj_type_name(v));
		return;
	}
	size_t n = json_string_length(v);
	const char *s = json_string_value(v);
	if (n >= cap) {
		sj_fail(p, at, "longer than %zu bytes", cap - 1);
		return;
	}
	if (strlen(s) != n) {
		sj_fail(p, at, "contains a NUL byte");
		return;
	}
	memcpy(dst, s, n + 1);
}

/* An object member, or NULL (absent, null, or not an object: failed). */
json_t *sj_get_object(parse_ctx *p, json_t *obj, const char *prefix, const char *name)
{
	json_t *v = sj_member(obj, name);
	if (v == NULL || p->failed)
		return NULL;
	if (!json_is_object(v)) {
		char at[128];
		sj_join(at, sizeof at, prefix, name);
		sj_fail(p, at, "expected an object, got %s", sj_type_name(v));
		return NULL;
	}
	return v;
}

json_t *sj_get_array(parse_ctx *p, json_t *obj, const char *name, size_t max)
{
	json_t *v = sj_member(obj, name);
	if (v == NULL || p->failed)
		return NULL;
	if (!json_is_array(v)) {
		sj_fail(p, name, "expected an array, got %s", sj_type_name(v));
		return NULL;
	}
	if (json_array_size(v) > max) {
		sj_fail(p, name, "at most %zu entries (got %zu)", max, json_array_size(v));
		return NULL;
	}
	return v;
}
