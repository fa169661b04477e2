/*
 * JSON lines for dump records (blq/dlqinspect.h, blq_inspect_jsonl_*):
 * the one codec behind blq-dlq export/import and the dashboard's
 * download, so a file one writes the other reads.
 *
 * Design
 * - Writing is fixed: the fields in one order, no spaces, so two exports
 *   of the same records compare byte for byte (the round-trip test of
 *   export, import, export relies on it). The line is built snprintf-
 *   style, counting past the end of the caller's buffer, so a caller
 *   sizes its buffer with a first call; no allocation.
 * - Reading is a small recursive-descent parser over exactly this
 *   schema, not a general JSON library: the library takes no JSON
 *   dependency (jansson is the demo's), and knowing the schema lets every
 *   error name the field ("why.rc") and the column where the line broke,
 *   which is what an operator fixing a hand-edited file needs. Fields may
 *   come in any order (a script may build lines its own way), but each
 *   once, and unknown ones are refused rather than dropped silently.
 * - Numbers are integers only, range-checked into the field's type.
 *   Strings decode every JSON escape, \u surrogate pairs included, to
 *   UTF-8.
 */
#include <blq/dlq.h>
#include <blq/dlqinspect.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errorf.h"
#include "json_escape.h"

/* ---- writing ---- */

/* An output cursor: n counts every byte, those past cap are dropped. */
struct out {
	char *buf;
	size_t cap;
	size_t n;
};

static void put_bytes(struct out *o, const char *s, size_t k)
{
	for (size_t i = 0; i < k; i++, o->n++)
		if (o->n + 1 < o->cap)
			o->buf[o->n] = s[i];
}

static void put_fmt(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put_fmt(struct out *o, const char *fmt, ...)
{
	char tmp[256]; /* the longest format here with its numbers fits */
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	put_bytes(o, tmp, (size_t)k);
}

/* A JSON string, escaped in one call straight into the room left (the
 * escaper counts past its end as the cursor does): whole, so a UTF-8
 * sequence is seen whole, not as bytes that are each not UTF-8. */
static void put_str(struct out *o, const char *s)
{
	put_bytes(o, "\"", 1);
	size_t room = o->n < o->cap ? o->cap - o->n : 0;
	o->n += blq__json_escape(room > 0 ? o->buf + o->n : NULL, room, s);
	put_bytes(o, "\"", 1);
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void put_base64(struct out *o, const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		size_t k = len - i < 3 ? len - i : 3;
		if (k > 1)
			v |= (uint32_t)p[i + 1] << 8;
		if (k > 2)
			v |= p[i + 2];
		char q[4] = {b64[v >> 18], b64[(v >> 12) & 63], k > 1 ? b64[(v >> 6) & 63] : '=',
			     k > 2 ? b64[v & 63] : '='};
		put_bytes(o, q, 4);
	}
}

static bool why_says_nothing(const blq_dlq_why *w)
{
	return w->reason == BLQ_DLQ_UNKNOWN && w->attempts == 0 && w->rc == 0 &&
	       w->time_ns == 0 && w->queue[0] == '\0';
}

size_t blq_inspect_jsonl_put(const blq_inspect_record *rec, char *buf, size_t cap)
{
	if (rec == NULL)
		return 0;
	struct out o = {buf, buf == NULL ? 0 : cap, 0};
	put_fmt(&o, "{\"v\":1,\"loc\":");
	put_str(&o, rec->loc != NULL ? rec->loc : "");
	put_fmt(&o, ",\"version\":%llu,\"restores\":%u,\"deliveries\":%u,\"time_ns\":%llu,\"why\":",
		(unsigned long long)rec->version, (unsigned)rec->restores,
		(unsigned)rec->deliveries, (unsigned long long)rec->time_ns);
	const blq_dlq_why *w = &rec->why;
	if (why_says_nothing(w)) {
		put_fmt(&o, "null");
	} else {
		put_fmt(&o, "{\"reason\":");
		put_str(&o, blq_dlq_reason_name(w->reason));
		put_fmt(&o, ",\"attempts\":%u,\"rc\":%d,\"queue\":", (unsigned)w->attempts, (int)w->rc);
		char q[sizeof(w->queue)];
		memcpy(q, w->queue, sizeof(q));
		q[sizeof(q) - 1] = '\0';
		put_str(&o, q);
		put_fmt(&o, ",\"time_ns\":%llu}", (unsigned long long)w->time_ns);
	}
	put_fmt(&o, ",\"payload\":\"");
	put_base64(&o, rec->data, rec->data != NULL ? rec->len : 0);
	put_fmt(&o, "\"}\n");
	if (o.cap > 0)
		o.buf[o.n < o.cap ? o.n : o.cap - 1] = '\0';
	return o.n;
}

/* ---- reading ---- */

/* The parser's state: the line, where it is, and the field it is in (for
 * messages). */
struct in {
	const char *s;
	size_t len;
	size_t pos;
	const char *field;
	blq_error *err;
};

static int fail(struct in *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct in *p, const char *fmt, ...)
{
	char what[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (p->field != NULL)
		return blq__error_set(p->err, BLQ_EINVAL, "column %zu: \"%s\": %s", p->pos + 1,
				      p->field, what);
	return blq__error_set(p->err, BLQ_EINVAL, "column %zu: %s", p->pos + 1, what);
}

static void skip_ws(struct in *p)
{
	while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
				   p->s[p->pos] == '\r' || p->s[p->pos] == '\n'))
		p->pos++;
}

static int peek(struct in *p)
{
	skip_ws(p);
	return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static int expect(struct in *p, char c)
{
	if (peek(p) != (unsigned char)c)
		return p->pos < p->len ? fail(p, "expected '%c'", c)
				       : fail(p, "expected '%c', the line ended", c);
	p->pos++;
	return 0;
}

/* Takes w when the bytes at the current position are w. Inside a string,
 * where no whitespace may come between: */
static bool take_here(struct in *p, const char *w)
{
	size_t k = strlen(w);
	if (p->len - p->pos >= k && memcmp(p->s + p->pos, w, k) == 0) {
		p->pos += k;
		return true;
	}
	return false;
}

/* Between tokens: after any whitespace. */
static bool take_word(struct in *p, const char *w)
{
	return peek(p) >= 0 && take_here(p, w);
}

static int hex4(struct in *p, uint32_t *out)
{
	if (p->len - p->pos < 4)
		return fail(p, "a \\u escape needs 4 hex digits");
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p->s[p->pos + (size_t)i];
		int d = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;
		if (d < 0)
			return fail(p, "a \\u escape needs 4 hex digits");
		v = v << 4 | (uint32_t)d;
	}
	p->pos += 4;
	*out = v;
	return 0;
}

/* A JSON string into a NUL-terminated buffer of cap bytes (a longer one
 * is an error: every string of this schema has a bound). */
static int get_str(struct in *p, char *dst, size_t cap)
{
	if (peek(p) != '"')
		return fail(p, "expected a string");
	p->pos++;
	size_t n = 0;
	for (;;) {
		if (p->pos >= p->len)
			return fail(p, "the string is not closed");
		unsigned char c = (unsigned char)p->s[p->pos];
		char enc[4];
		size_t k = 1;
		if (c == '"') {
			p->pos++;
			break;
		}
		if (c < 0x20)
			return fail(p, "a control byte in a string must be escaped");
		enc[0] = (char)c;
		p->pos++;
		if (c == '\\') {
			if (p->pos >= p->len)
				return fail(p, "the string is not closed");
			char e = p->s[p->pos++];
			const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
			const char *at = e != '\0' ? strchr(from, e) : NULL;
			if (at != NULL) {
				enc[0] = to[at - from];
			} else if (e == 'u') {
				uint32_t u;
				if (hex4(p, &u) != 0)
					return BLQ_EINVAL;
				if (u >= 0xD800 && u <= 0xDBFF) {
					uint32_t lo;
					/* At once: "\ud83d \ude00" is a lone high
					 * surrogate, then a space (a skip here once
					 * dropped the space and joined the two). */
					if (!take_here(p, "\\u") || hex4(p, &lo) != 0 || lo < 0xDC00 ||
					    lo > 0xDFFF)
						return fail(p, "a high surrogate without its low one");
					u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
				} else if (u >= 0xDC00 && u <= 0xDFFF) {
					return fail(p, "a low surrogate alone");
				}
				if (u == 0)
					return fail(p, "\\u0000 cannot be in a C string");
				if (u < 0x80) {
					enc[0] = (char)u;
				} else if (u < 0x800) {
					enc[0] = (char)(0xC0 | u >> 6);
					enc[1] = (char)(0x80 | (u & 63));
					k = 2;
				} else if (u < 0x10000) {
					enc[0] = (char)(0xE0 | u >> 12);
					enc[1] = (char)(0x80 | ((u >> 6) & 63));
					enc[2] = (char)(0x80 | (u & 63));
					k = 3;
				} else {
					enc[0] = (char)(0xF0 | u >> 18);
					enc[1] = (char)(0x80 | ((u >> 12) & 63));
					enc[2] = (char)(0x80 | ((u >> 6) & 63));
					enc[3] = (char)(0x80 | (u & 63));
					k = 4;
				}
			} else {
				p->pos--;
				return e > 0x20 && e < 0x7f ? fail(p, "unknown escape '\\%c'", e)
							    : fail(p, "unknown escape (byte 0x%02x)",
								   (unsigned char)e);
			}
		}
		if (n + k >= cap)
			return fail(p, "longer than %zu bytes", cap - 1);
		memcpy(dst + n, enc, k);
		n += k;
	}
	dst[n] = '\0';
	return 0;
}

/* An integer in [min, max] (min < 0 allows a sign). */
static int get_int(struct in *p, int64_t min, uint64_t max, uint64_t *mag, bool *neg)
{
	int c = peek(p);
	*neg = false;
	if (c == '-' && min < 0) {
		*neg = true;
		p->pos++;
		c = p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
	}
	if (c < '0' || c > '9')
		return fail(p, min < 0 ? "expected an integer" : "expected an integer >= 0");
	size_t start = p->pos;
	uint64_t v = 0;
	while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
		unsigned d = (unsigned)(p->s[p->pos] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return fail(p, "out of range");
		v = v * 10 + d;
		p->pos++;
	}
	if (p->pos - start > 1 && p->s[start] == '0')
		return fail(p, "a leading zero");
	if (p->pos < p->len && (p->s[p->pos] == '.' || p->s[p->pos] == 'e' || p->s[p->pos] == 'E'))
		return fail(p, "expected an integer");
	if ((*neg && v > (uint64_t)(-(min + 1)) + 1) || (!*neg && v > max)) {
		p->pos = start;
		return fail(p, "out of range");
	}
	*mag = v;
	return 0;
}

static int get_u64(struct in *p, uint64_t max, uint64_t *out)
{
	bool neg;
	return get_int(p, 0, max, out, &neg);
}

static int get_i32(struct in *p, int32_t *out)
{
	uint64_t m;
	bool neg;
	if (get_int(p, INT32_MIN, INT32_MAX, &m, &neg) != 0)
		return BLQ_EINVAL;
	*out = neg ? (int32_t)(-(int64_t)m) : (int32_t)m;
	return 0;
}

static int b64_val(char c)
{
	const char *at = c != '\0' ? strchr(b64, c) : NULL;
	return at != NULL ? (int)(at - b64) : -1;
}

/* The next character of the payload's string at *i (before end): "\/"
 * is '/', as JSON allows and some encoders write (PHP's json_encode does
 * by default; base64 has '/'); any other escape is no base64. */
static char b64_next(const struct in *p, size_t *i, size_t end)
{
	char c = p->s[(*i)++];
	if (c == '\\' && *i < end && p->s[*i] == '/') {
		(*i)++;
		return '/';
	}
	return c;
}

/* The payload: base64 with padding into a malloc'd buffer. */
static int get_payload(struct in *p, blq_inspect_item *it)
{
	if (peek(p) != '"')
		return fail(p, "expected a string");
	size_t start = ++p->pos, end = start;
	while (end < p->len && p->s[end] != '"')
		end++;
	if (end >= p->len)
		return fail(p, "the string is not closed");
	unsigned char *d = malloc((end - start) / 4 * 3 + 1);
	if (d == NULL)
		return blq__error_set(p->err, BLQ_ENOMEM, "payload: out of memory");
	size_t len = 0, i = start;
	while (i < end) {
		char q[4];
		size_t at[4];
		for (int j = 0; j < 4; j++) {
			if (i == end) {
				p->pos = end;
				free(d);
				return fail(p, "base64 comes in groups of 4 characters");
			}
			at[j] = i;
			q[j] = b64_next(p, &i, end);
		}
		bool last = i == end;
		int v[4], pad = 0;
		for (int j = 0; j < 4; j++) {
			v[j] = b64_val(q[j]);
			if (q[j] == '=' && last && j >= 2 && (j == 3 || q[3] == '=')) {
				v[j] = 0;
				pad++;
			} else if (v[j] < 0) {
				p->pos = at[j];
				free(d);
				/* A NUL or control byte would cut or garble the
				 * message: named by its value. */
				return q[j] > 0x20 && q[j] < 0x7f
					       ? fail(p, "not base64 ('%c')", q[j])
					       : fail(p, "not base64 (byte 0x%02x)", (unsigned char)q[j]);
			}
		}
		uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
			     (uint32_t)v[3];
		d[len++] = (unsigned char)(x >> 16);
		if (pad < 2)
			d[len++] = (unsigned char)(x >> 8);
		if (pad < 1)
			d[len++] = (unsigned char)x;
	}
	if (len > BLQ_DUMP_RECORD_MAX) {
		free(d);
		p->pos = start;
		return fail(p, "more than BLQ_DUMP_RECORD_MAX bytes");
	}
	p->pos = end + 1;
	it->data = d;
	it->len = len;
	return 0;
}

/* Reads `{"key":value,...}`, calling field() for each key with p->field
 * set to its full name; seen[] guards against repeats. */
typedef int (*field_fn)(struct in *p, const char *key, void *ctx);

static int get_object(struct in *p, const char *const *keys, size_t nkeys, const char *prefix,
		      field_fn field, void *ctx)
{
	bool seen[8] = {false};
	const char *outer = p->field;
	if (expect(p, '{') != 0)
		return BLQ_EINVAL;
	if (peek(p) == '}') {
		p->pos++;
		return 0;
	}
	for (;;) {
		char key[32], full[48];
		size_t at = (skip_ws(p), p->pos);
		p->field = outer;
		if (get_str(p, key, sizeof(key)) != 0)
			return BLQ_EINVAL;
		size_t k = 0;
		while (k < nkeys && strcmp(keys[k], key) != 0)
			k++;
		snprintf(full, sizeof(full), "%s%s", prefix, key);
		p->field = NULL;
		if (k == nkeys) {
			p->pos = at;
			return fail(p, "unknown field \"%s\"", full);
		}
		if (seen[k]) {
			p->pos = at;
			return fail(p, "field \"%s\" twice", full);
		}
		seen[k] = true;
		p->field = full; /* "why.rc", not "rc" */
		if (expect(p, ':') != 0)
			return BLQ_EINVAL;
		p->field = NULL;
		/* field() names the field itself: it knows the full name. */
		int rc = field(p, full, ctx);
		if (rc != 0)
			return rc;
		p->field = outer;
		int c = peek(p);
		if (c == '}') {
			p->pos++;
			return 0;
		}
		if (c != ',')
			return fail(p, c < 0 ? "the object is not closed" : "expected ',' or '}'");
		p->pos++;
	}
}

/* Where the why is assembled. */
struct why_ctx {
	blq_dlq_why why;
};

static int why_field(struct in *p, const char *key, void *ctx)
{
	blq_dlq_why *w = &((struct why_ctx *)ctx)->why;
	uint64_t v;
	p->field = key;
	if (strcmp(key, "why.reason") == 0) {
		char name[32];
		size_t at = (skip_ws(p), p->pos);
		if (get_str(p, name, sizeof(name)) != 0)
			return BLQ_EINVAL;
		if (blq_dlq_reason_parse(name, &w->reason) != 0) {
			p->pos = at;
			return fail(p, "unknown reason \"%s\"", name);
		}
		return 0;
	}
	if (strcmp(key, "why.attempts") == 0) {
		if (get_u64(p, UINT32_MAX, &v) != 0)
			return BLQ_EINVAL;
		w->attempts = (uint32_t)v;
		return 0;
	}
	if (strcmp(key, "why.rc") == 0)
		return get_i32(p, &w->rc);
	if (strcmp(key, "why.queue") == 0)
		return get_str(p, w->queue, sizeof(w->queue));
	return get_u64(p, UINT64_MAX, &w->time_ns); /* why.time_ns */
}

/* The record as it is assembled. */
struct rec_ctx {
	blq_inspect_jsonl *out;
	bool has_v, has_payload;
};

static int rec_field(struct in *p, const char *key, void *ctx)
{
	struct rec_ctx *r = ctx;
	blq_inspect_jsonl *o = r->out;
	uint64_t v;
	p->field = key;
	if (strcmp(key, "v") == 0) {
		size_t at = (skip_ws(p), p->pos);
		if (get_u64(p, UINT64_MAX, &v) != 0)
			return BLQ_EINVAL;
		if (v != 1) {
			p->pos = at;
			return fail(p, "version %llu of this format is not known (1 is)",
				    (unsigned long long)v);
		}
		r->has_v = true;
		return 0;
	}
	if (strcmp(key, "loc") == 0)
		return get_str(p, o->loc, sizeof(o->loc));
	if (strcmp(key, "version") == 0)
		return get_u64(p, UINT64_MAX, &o->version);
	if (strcmp(key, "restores") == 0 || strcmp(key, "deliveries") == 0) {
		if (get_u64(p, UINT32_MAX, &v) != 0)
			return BLQ_EINVAL;
		*(key[0] == 'r' ? &o->item.restores : &o->deliveries) = (uint32_t)v;
		return 0;
	}
	if (strcmp(key, "time_ns") == 0)
		return get_u64(p, UINT64_MAX, &o->time_ns);
	if (strcmp(key, "payload") == 0) {
		r->has_payload = true;
		return get_payload(p, &o->item);
	}
	/* "why": null or an object */
	if (take_word(p, "null"))
		return 0;
	static const char *const why_keys[] = {"reason", "attempts", "rc", "queue", "time_ns"};
	struct why_ctx w = {{0}};
	if (peek(p) != '{')
		return fail(p, "expected an object or null");
	int rc = get_object(p, why_keys, 5, "why.", why_field, &w);
	if (rc != 0)
		return rc;
	blq_dlq_why *copy = malloc(sizeof(*copy));
	if (copy == NULL)
		return blq__error_set(p->err, BLQ_ENOMEM, "why: out of memory");
	*copy = w.why;
	o->item.why = copy;
	return 0;
}

int blq_inspect_jsonl_get(const char *line, size_t len, blq_inspect_jsonl *out, blq_error *err)
{
	if (out != NULL)
		memset(out, 0, sizeof(*out));
	if (line == NULL || out == NULL)
		return blq__error_set(err, BLQ_EINVAL, "JSON line: NULL");
	static const char *const keys[] = {"v",	  "loc", "version", "restores",
					   "deliveries", "time_ns", "why", "payload"};
	/* A line's end is not part of it: an error "at the end" points just
	 * past its last character. */
	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	struct in p = {line, len, 0, NULL, err};
	struct rec_ctx r = {out, false, false};
	int rc = get_object(&p, keys, 8, "", rec_field, &r);
	if (rc == 0) {
		p.field = NULL;
		if (peek(&p) >= 0)
			rc = fail(&p, "something after the object");
		else if (!r.has_v)
			rc = fail(&p, "\"v\" is missing");
		else if (!r.has_payload)
			rc = fail(&p, "\"payload\" is missing");
	}
	if (rc != 0)
		blq_inspect_jsonl_free(out);
	return rc;
}

void blq_inspect_jsonl_free(blq_inspect_jsonl *j)
{
	if (j == NULL)
		return;
	free((void *)j->item.data);
	free((void *)j->item.why);
	memset(j, 0, sizeof(*j));
}
