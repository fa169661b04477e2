/*
 * Fuzz target for the JSON lines codec (blq_inspect_jsonl_get, _put,
 * _free in dlq/inspect_jsonl.c): blq-dlq import reads files that
 * operators bring, hand-edited or made by scripts, so any bytes may
 * arrive. The input is one line, in a heap buffer of exactly its length
 * (ASan sees a read past it), read with an error and again with a '\n'
 * after it and no error (the line's end is allowed; the error optional).
 *
 * The promises checked (include/blq/dlqinspect.h):
 * - A refusal is BLQ_EINVAL (or BLQ_ENOMEM) with the code in err and a
 *   message, "column N: ..." with N within the line (1-based, at most one
 *   past its end), naming a field, when it names one, by its full name
 *   ("why.rc"); the record holds nothing to free.
 * - A line read has a payload buffer (a 1-byte one when empty), a loc and
 *   a why.queue NUL-terminated in their arrays, a known reason.
 * - The verdict and the values are a JSON reader's: a second, independent
 *   reader below (a tokenizer after RFC 8259, then the schema: "v" 1 and
 *   "payload" required, known fields once each, integers in their types'
 *   ranges, strings within their arrays, \u0000 and lone surrogates
 *   refused, base64 RFC 4648 padded) must agree with the library on every
 *   input, and on the values of every line both read. One choice of the
 *   library is taken as is: the payload string is read raw but for "\/"
 *   (base64 has '/', and some encoders escape it), so any other JSON
 *   escape in it is refused.
 * - The record read, made into a blq_inspect_record as blq-dlq export
 *   prints it and import reads it, prints (blq_inspect_jsonl_put) into a
 *   buffer of exactly the length it asks for plus the NUL, and cut into
 *   one byte less and into a size picked by the input (a prefix of the
 *   line, NUL-terminated, the same length returned); the line is one line
 *   of UTF-8 ending in '\n', "why" null exactly when the why says nothing.
 * - That line reads back (with and without its '\n') to the same values:
 *   strings as they were, but for bytes that are not well-formed UTF-8,
 *   each printed as '?' (util/json_escape.c, the UTF-8 rule of the shared
 *   escaper), and an all-zero why as null; and it prints as itself
 *   (export, import, export gives the same lines).
 * - blq_inspect_jsonl_free frees all (LeakSanitizer) and zeroes the
 *   record.
 * Anything else aborts, so libFuzzer reports it and keeps the input.
 *
 * Built with clang -fsanitize=fuzzer,address as a libFuzzer binary
 * (scripts/test.sh runs it for a few seconds; seeds in
 * corpus/inspect_jsonl, lines blq_inspect_jsonl_put printed and broken
 * ones, dictionary inspect_jsonl.dict), and as a normal test with
 * fuzz_main.c replaying the seeds.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blq/dlq.h>
#include <blq/dlqinspect.h>

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- the reference reader ---------------------------------------------- */

/* What a line says, as the reference reads it. */
struct ref {
	char loc[BLQ_INSPECT_LOC_MAX];
	uint64_t version, time_ns;
	uint32_t restores, deliveries;
	bool has_why;
	blq_dlq_why why;
	unsigned char *payload;
	size_t plen;
	bool has_v, has_payload;
};

enum tok { T_ERR, T_END, T_PUNCT, T_STR, T_NUM, T_WORD };

/* The tokenizer's state and its last token. */
struct lex {
	const unsigned char *s;
	size_t len, pos;
	char punct;          /* T_PUNCT: one of {}[]:, */
	unsigned char *str;  /* T_STR: the decoded bytes (room: len + 1) */
	size_t slen;
	bool str_ok;         /* T_STR: no \u0000, no lone surrogate */
	bool str_escaped;    /* T_STR: had a backslash escape other than \/ */
	size_t at, tlen;     /* T_NUM, T_WORD: where in s, how long */
	bool num_int;        /* T_NUM: no fraction, no exponent */
};

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int hex_digit(unsigned char c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Four hex digits at s[at]; false when there are not. */
static bool hex4_at(const struct lex *x, size_t at, uint32_t *u)
{
	if (x->len - at < 4)
		return false;
	*u = 0;
	for (size_t i = 0; i < 4; i++) {
		int d = hex_digit(x->s[at + i]);
		if (d < 0)
			return false;
		*u = *u * 16 + (uint32_t)d;
	}
	return true;
}

static void str_put(struct lex *x, unsigned char c)
{
	x->str[x->slen++] = c;
}

/* A code point (not a surrogate, not 0) as UTF-8. */
static void str_put_cp(struct lex *x, uint32_t u)
{
	if (u < 0x80) {
		str_put(x, (unsigned char)u);
	} else if (u < 0x800) {
		str_put(x, (unsigned char)(0xC0 + (u >> 6)));
		str_put(x, (unsigned char)(0x80 + (u & 0x3F)));
	} else if (u < 0x10000) {
		str_put(x, (unsigned char)(0xE0 + (u >> 12)));
		str_put(x, (unsigned char)(0x80 + ((u >> 6) & 0x3F)));
		str_put(x, (unsigned char)(0x80 + (u & 0x3F)));
	} else {
		str_put(x, (unsigned char)(0xF0 + (u >> 18)));
		str_put(x, (unsigned char)(0x80 + ((u >> 12) & 0x3F)));
		str_put(x, (unsigned char)(0x80 + ((u >> 6) & 0x3F)));
		str_put(x, (unsigned char)(0x80 + (u & 0x3F)));
	}
}

/* A string, the opening quote at pos. RFC 8259: any byte but '"', '\'
 * and the control bytes; escapes \" \\ \/ \b \f \n \r \t \uXXXX. A \u
 * surrogate must be a high one followed at once by a \u low one. */
static enum tok lex_str(struct lex *x)
{
	x->pos++;
	x->slen = 0;
	x->str_ok = true;
	x->str_escaped = false;
	for (;;) {
		if (x->pos >= x->len)
			return T_ERR;
		unsigned char c = x->s[x->pos++];
		if (c == '"')
			break;
		if (c < 0x20)
			return T_ERR;
		if (c != '\\') {
			str_put(x, c);
			continue;
		}
		if (x->pos >= x->len)
			return T_ERR;
		c = x->s[x->pos++];
		x->str_escaped |= c != '/';
		uint32_t u, lo;
		switch (c) {
		case '"':
		case '\\':
		case '/':
			str_put(x, c);
			break;
		case 'b':
			str_put(x, 8);
			break;
		case 'f':
			str_put(x, 12);
			break;
		case 'n':
			str_put(x, 10);
			break;
		case 'r':
			str_put(x, 13);
			break;
		case 't':
			str_put(x, 9);
			break;
		case 'u':
			if (!hex4_at(x, x->pos, &u))
				return T_ERR;
			x->pos += 4;
			if (u >= 0xD800 && u < 0xDC00 && x->len - x->pos >= 6 &&
			    x->s[x->pos] == '\\' && x->s[x->pos + 1] == 'u' &&
			    hex4_at(x, x->pos + 2, &lo) && lo >= 0xDC00 && lo < 0xE000) {
				x->pos += 6;
				u = 0x10000 + (u - 0xD800) * 0x400 + (lo - 0xDC00);
			} else if ((u >= 0xD800 && u < 0xE000) || u == 0) {
				x->str_ok = false; /* JSON, but no C string holds it */
				break;
			}
			str_put_cp(x, u);
			break;
		default:
			return T_ERR;
		}
	}
	x->str[x->slen] = '\0';
	return T_STR;
}

/* A number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static enum tok lex_num(struct lex *x)
{
	const unsigned char *s = x->s;
	size_t i = x->pos;
	x->at = i;
	x->num_int = true;
	if (s[i] == '-')
		i++;
	if (i >= x->len || !is_digit(s[i]))
		return T_ERR;
	if (s[i] == '0')
		i++;
	else
		while (i < x->len && is_digit(s[i]))
			i++;
	if (i < x->len && s[i] == '.') {
		x->num_int = false;
		if (++i >= x->len || !is_digit(s[i]))
			return T_ERR;
		while (i < x->len && is_digit(s[i]))
			i++;
	}
	if (i < x->len && (s[i] == 'e' || s[i] == 'E')) {
		x->num_int = false;
		i++;
		if (i < x->len && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= x->len || !is_digit(s[i]))
			return T_ERR;
		while (i < x->len && is_digit(s[i]))
			i++;
	}
	x->tlen = i - x->at;
	x->pos = i;
	return T_NUM;
}

static enum tok lex_next(struct lex *x)
{
	while (x->pos < x->len && (x->s[x->pos] == ' ' || x->s[x->pos] == '\t' ||
				   x->s[x->pos] == '\n' || x->s[x->pos] == '\r'))
		x->pos++;
	if (x->pos >= x->len)
		return T_END;
	unsigned char c = x->s[x->pos];
	switch (c) {
	case '{':
	case '}':
	case '[':
	case ']':
	case ':':
	case ',':
		x->punct = (char)c;
		x->pos++;
		return T_PUNCT;
	case '"':
		return lex_str(x);
	default:
		break;
	}
	if (c == '-' || is_digit(c))
		return lex_num(x);
	if (c >= 'a' && c <= 'z') {
		x->at = x->pos;
		while (x->pos < x->len && x->s[x->pos] >= 'a' && x->s[x->pos] <= 'z')
			x->pos++;
		x->tlen = x->pos - x->at;
		return T_WORD;
	}
	return T_ERR;
}

static bool is_punct(struct lex *x, enum tok t, char c)
{
	return t == T_PUNCT && x->punct == c;
}

/* The number token as an integer in [-neg_max, max]; false when it is
 * not an integer or out of that range. A '-' is only for signed fields. */
static bool num_value(const struct lex *x, uint64_t neg_max, uint64_t max, bool *neg,
		      uint64_t *mag)
{
	if (!x->num_int)
		return false;
	size_t i = x->at, end = x->at + x->tlen;
	*neg = x->s[i] == '-';
	if (*neg)
		i++;
	*mag = 0;
	for (; i < end; i++) {
		uint64_t d = (uint64_t)(x->s[i] - '0');
		if (*mag > UINT64_MAX / 10 || *mag * 10 > UINT64_MAX - d)
			return false;
		*mag = *mag * 10 + d;
	}
	return *neg ? neg_max > 0 && *mag <= neg_max : *mag <= max;
}

static bool read_unsigned(struct lex *x, uint64_t max, uint64_t *v)
{
	bool neg;
	return lex_next(x) == T_NUM && num_value(x, 0, max, &neg, v);
}

static bool str_is(const struct lex *x, const char *name)
{
	return x->slen == strlen(name) && memcmp(x->str, name, x->slen) == 0;
}

/* Base64, RFC 4648 with padding: groups of 4 of the alphabet, '=' only
 * as the last one or two of the last group. */
static int sextet(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (is_digit(c))
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

static bool ref_base64(const unsigned char *s, size_t n, struct ref *r)
{
	if (n % 4 != 0)
		return false;
	r->payload = malloc(n / 4 * 3 + 1);
	CHECK(r->payload != NULL);
	r->plen = 0;
	for (size_t i = 0; i < n; i += 4) {
		uint32_t acc = 0;
		unsigned pad = 0;
		for (size_t j = 0; j < 4; j++) {
			int v = 0;
			if (s[i + j] == '=')
				pad++;
			else if (pad > 0 || (v = sextet(s[i + j])) < 0)
				return false;
			acc = acc << 6 | (uint32_t)v;
		}
		if (pad > 0 && (pad > 2 || i + 4 != n))
			return false;
		r->payload[r->plen++] = (unsigned char)(acc >> 16);
		if (pad < 2)
			r->payload[r->plen++] = (unsigned char)(acc >> 8);
		if (pad < 1)
			r->payload[r->plen++] = (unsigned char)acc;
	}
	return true;
}

/* One member of "why", its key in the token; false: the line is bad. */
static bool ref_why_member(struct lex *x, unsigned *seen, blq_dlq_why *w)
{
	static const char *const keys[] = {"reason", "attempts", "rc", "queue", "time_ns"};
	unsigned k = 0;
	while (k < 5 && !str_is(x, keys[k]))
		k++;
	if (k == 5 || (*seen & 1u << k) != 0)
		return false;
	*seen |= 1u << k;
	if (!is_punct(x, lex_next(x), ':'))
		return false;
	uint64_t v;
	bool neg;
	switch (k) {
	case 0:
		return lex_next(x) == T_STR && x->str_ok &&
		       blq_dlq_reason_parse((const char *)x->str, &w->reason) == 0;
	case 1:
		if (!read_unsigned(x, UINT32_MAX, &v))
			return false;
		w->attempts = (uint32_t)v;
		return true;
	case 2:
		if (lex_next(x) != T_NUM || !num_value(x, (uint64_t)1 << 31, INT32_MAX, &neg, &v))
			return false;
		w->rc = neg ? (int32_t)(0 - (int64_t)v) : (int32_t)v;
		return true;
	case 3:
		if (lex_next(x) != T_STR || !x->str_ok || x->slen > BLQ_DLQ_QUEUE_MAX)
			return false;
		memcpy(w->queue, x->str, x->slen + 1);
		return true;
	default:
		return read_unsigned(x, UINT64_MAX, &w->time_ns);
	}
}

/* One member of the record, its key in the token. */
static bool ref_member(struct lex *x, unsigned *seen, struct ref *r)
{
	static const char *const keys[] = {"v",       "loc", "version", "restores",
					   "deliveries", "time_ns", "why", "payload"};
	unsigned k = 0;
	while (k < 8 && !str_is(x, keys[k]))
		k++;
	if (k == 8 || (*seen & 1u << k) != 0)
		return false;
	*seen |= 1u << k;
	if (!is_punct(x, lex_next(x), ':'))
		return false;
	uint64_t v;
	enum tok t;
	switch (k) {
	case 0:
		r->has_v = true;
		return read_unsigned(x, UINT64_MAX, &v) && v == 1;
	case 1:
		if (lex_next(x) != T_STR || !x->str_ok || x->slen >= sizeof(r->loc))
			return false;
		memcpy(r->loc, x->str, x->slen + 1);
		return true;
	case 2:
		return read_unsigned(x, UINT64_MAX, &r->version);
	case 3:
	case 4:
		if (!read_unsigned(x, UINT32_MAX, &v))
			return false;
		*(k == 3 ? &r->restores : &r->deliveries) = (uint32_t)v;
		return true;
	case 5:
		return read_unsigned(x, UINT64_MAX, &r->time_ns);
	case 6: {
		t = lex_next(x);
		if (t == T_WORD)
			return x->tlen == 4 && memcmp(x->s + x->at, "null", 4) == 0;
		if (!is_punct(x, t, '{'))
			return false;
		r->has_why = true;
		unsigned wseen = 0;
		t = lex_next(x);
		if (is_punct(x, t, '}'))
			return true;
		for (;;) {
			if (t != T_STR || !x->str_ok || !ref_why_member(x, &wseen, &r->why))
				return false;
			t = lex_next(x);
			if (is_punct(x, t, '}'))
				return true;
			if (!is_punct(x, t, ','))
				return false;
			t = lex_next(x);
		}
	}
	default:
		r->has_payload = true;
		/* Read raw by the library but for \/: other escapes refused. */
		return lex_next(x) == T_STR && !x->str_escaped &&
		       ref_base64(x->str, x->slen, r);
	}
}

/* Reads the line into r; false: the line is bad. r->payload is the
 * caller's to free either way. */
static bool ref_read(const unsigned char *s, size_t len, struct ref *r)
{
	memset(r, 0, sizeof(*r));
	struct lex x = {.s = s, .len = len};
	x.str = malloc(len + 1);
	CHECK(x.str != NULL);
	bool ok = false;
	unsigned seen = 0;
	enum tok t;
	if (!is_punct(&x, lex_next(&x), '{'))
		goto out;
	t = lex_next(&x);
	if (!is_punct(&x, t, '}')) {
		for (;;) {
			if (t != T_STR || !x.str_ok || !ref_member(&x, &seen, r))
				goto out;
			t = lex_next(&x);
			if (is_punct(&x, t, '}'))
				break;
			if (!is_punct(&x, t, ','))
				goto out;
			t = lex_next(&x);
		}
	}
	ok = lex_next(&x) == T_END && r->has_v && r->has_payload;
out:
	free(x.str);
	return ok;
}

/* ---- UTF-8 (the shared escaper's rule) ---------------------------------- */

/* The length of the well-formed UTF-8 sequence at s[0..n) (Unicode, table
 * 3-7), 0 when s[0] does not start one. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xBF;
	size_t k;
	if (c >= 0xC2 && c <= 0xDF)
		k = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		k = 3;
	else if (c >= 0xF0 && c <= 0xF4)
		k = 4;
	else
		return 0;
	if (c == 0xE0)
		lo = 0xA0;
	else if (c == 0xED)
		hi = 0x9F;
	else if (c == 0xF0)
		lo = 0x90;
	else if (c == 0xF4)
		hi = 0x8F;
	if (n < k || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < k; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return k;
}

static bool is_utf8(const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	for (size_t i = 0; i < n;) {
		size_t k = s[i] < 0x80 ? 1 : utf8_seq(s + i, n - i);
		if (k == 0)
			return false;
		i += k;
	}
	return true;
}

/* s as a printed line gives it back: each byte outside a well-formed
 * sequence is '?'. In place. */
static void as_printed(char *p)
{
	unsigned char *s = (unsigned char *)p;
	size_t n = strlen(p);
	for (size_t i = 0; i < n;) {
		size_t k = s[i] < 0x80 ? 1 : utf8_seq(s + i, n - i);
		if (k == 0) {
			s[i] = '?';
			k = 1;
		}
		i += k;
	}
}

/* ---- the checks ---------------------------------------------------------- */

static volatile unsigned char sink;

static bool why_says_nothing(const blq_dlq_why *w)
{
	return w->reason == BLQ_DLQ_UNKNOWN && w->attempts == 0 && w->rc == 0 &&
	       w->time_ns == 0 && w->queue[0] == '\0';
}

static bool same_why(const blq_dlq_why *a, const blq_dlq_why *b)
{
	return a->reason == b->reason && a->attempts == b->attempts && a->rc == b->rc &&
	       a->time_ns == b->time_ns && strcmp(a->queue, b->queue) == 0;
}

/* What the header says of a record read. */
static void check_shape(const blq_inspect_jsonl *j)
{
	CHECK(j->item.data != NULL);
	CHECK(j->item.len <= BLQ_DUMP_RECORD_MAX);
	const unsigned char *d = j->item.data;
	for (size_t i = 0; i < j->item.len; i++)
		sink += d[i]; /* ASan checks each byte is in the buffer */
	if (j->item.len == 0)
		sink += d[0]; /* "a 1-byte buffer" */
	CHECK(memchr(j->loc, '\0', sizeof(j->loc)) != NULL);
	const blq_dlq_why *w = j->item.why;
	if (w != NULL) {
		CHECK((unsigned)w->reason <= BLQ_DLQ_CLOSED);
		enum blq_dlq_reason back;
		CHECK(blq_dlq_reason_parse(blq_dlq_reason_name(w->reason), &back) == 0 &&
		      back == w->reason);
		CHECK(memchr(w->queue, '\0', sizeof(w->queue)) != NULL);
	}
}

/* The library's record against the reference's. */
static void check_same(const blq_inspect_jsonl *j, const struct ref *r)
{
	CHECK(strcmp(j->loc, r->loc) == 0);
	CHECK(j->version == r->version);
	CHECK(j->time_ns == r->time_ns);
	CHECK(j->deliveries == r->deliveries);
	CHECK(j->item.restores == r->restores);
	CHECK((j->item.why != NULL) == r->has_why);
	CHECK(!r->has_why || same_why(j->item.why, &r->why));
	CHECK(j->item.len == r->plen);
	CHECK(r->plen == 0 || memcmp(j->item.data, r->payload, r->plen) == 0);
}

static const char *const field_names[] = {
	"v",          "loc",          "version", "restores",  "deliveries",
	"time_ns",    "why",          "payload", "why.reason", "why.attempts",
	"why.rc",     "why.queue",    "why.time_ns",
};

/* A refusal: the code, and a message "column N: ..." within the line,
 * naming a field (when it starts with one) by its full name. */
static void check_refusal(int rc, const blq_error *err, const blq_inspect_jsonl *j, size_t len)
{
	CHECK(rc == BLQ_EINVAL || rc == BLQ_ENOMEM);
	CHECK(err->code == rc);
	CHECK(memchr(err->msg, '\0', sizeof(err->msg)) != NULL && err->msg[0] != '\0');
	CHECK(j->item.data == NULL && j->item.why == NULL); /* nothing to free */
	if (rc != BLQ_EINVAL)
		return;
	const char *m = err->msg;
	CHECK(strncmp(m, "column ", 7) == 0);
	m += 7;
	CHECK(*m >= '1' && *m <= '9');
	size_t col = 0;
	while (*m >= '0' && *m <= '9' && col <= len + 1)
		col = col * 10 + (size_t)(*m++ - '0');
	CHECK(col >= 1 && col <= len + 1);
	CHECK(strncmp(m, ": ", 2) == 0);
	m += 2;
	if (*m != '"')
		return;
	const char *end = strchr(m + 1, '"');
	CHECK(end != NULL);
	bool known = false;
	for (size_t i = 0; i < sizeof(field_names) / sizeof(field_names[0]); i++)
		known |= strlen(field_names[i]) == (size_t)(end - m - 1) &&
			 memcmp(field_names[i], m + 1, (size_t)(end - m - 1)) == 0;
	CHECK(known);
}

/* Reads s[0..len) (heap, exactly len bytes) with an error. */
static int get_checked(const char *s, size_t len, blq_inspect_jsonl *j)
{
	blq_error err = {0};
	memset(j, 0xa5, sizeof(*j)); /* what get does not set shows */
	int rc = blq_inspect_jsonl_get(s, len, j, &err);
	if (rc != 0) {
		check_refusal(rc, &err, j, len);
		blq_inspect_jsonl_free(j); /* nothing to free: must be harmless */
		return rc;
	}
	CHECK(err.code == 0);
	check_shape(j);
	return 0;
}

/* Prints rec into a heap buffer of exactly cap bytes; returns put's result. */
static size_t put_into(const blq_inspect_record *rec, size_t cap, char **out)
{
	*out = malloc(cap > 0 ? cap : 1);
	CHECK(*out != NULL);
	return blq_inspect_jsonl_put(rec, cap > 0 ? *out : NULL, cap);
}

/* Prints rec, checks the buffer rules and the line, returns it (malloc'd,
 * *n its length). pick: a size to cut to, from the input. */
static char *put_checked(const blq_inspect_record *rec, size_t pick, size_t *n)
{
	*n = blq_inspect_jsonl_put(rec, NULL, 0);
	CHECK(*n > 0);
	char *line;
	CHECK(put_into(rec, *n + 1, &line) == *n);
	CHECK(strlen(line) == *n && line[*n - 1] == '\n');
	CHECK(memchr(line, '\n', *n) == line + *n - 1); /* one line */
	CHECK(strncmp(line, "{\"v\":1,\"loc\":\"", 14) == 0);
	CHECK(is_utf8(line, *n));
	bool nothing = why_says_nothing(&rec->why);
	CHECK(nothing == (strstr(line, ",\"why\":null,\"payload\":\"") != NULL));
	/* Cut: one byte short, and a size the input picks (1..n). */
	size_t caps[2] = {*n, 1 + pick % *n};
	for (int i = 0; i < 2; i++) {
		char *cut;
		CHECK(put_into(rec, caps[i], &cut) == *n);
		CHECK(cut[caps[i] - 1] == '\0' && strlen(cut) == caps[i] - 1);
		CHECK(memcmp(cut, line, caps[i] - 1) == 0);
		free(cut);
	}
	return line;
}

/* The record as blq-dlq export would print what import read. */
static blq_inspect_record as_record(const blq_inspect_jsonl *j)
{
	blq_inspect_record rec = {.loc = j->loc, .part = "", .state = BLQ_INSPECT_OK,
				  .damage = "", .data = j->item.data, .len = j->item.len,
				  .restores = j->item.restores, .deliveries = j->deliveries,
				  .version = j->version, .time_ns = j->time_ns, .consumer = ""};
	if (j->item.why != NULL)
		rec.why = *j->item.why;
	return rec;
}

/* back, read from the line printed from j: the same values, strings as
 * printed, an all-zero why as null. */
static void check_back(const blq_inspect_jsonl *j, const blq_inspect_jsonl *back)
{
	char loc[sizeof(j->loc)];
	memcpy(loc, j->loc, sizeof(loc));
	as_printed(loc);
	CHECK(strcmp(back->loc, loc) == 0);
	CHECK(back->version == j->version && back->time_ns == j->time_ns);
	CHECK(back->deliveries == j->deliveries && back->item.restores == j->item.restores);
	CHECK(back->item.len == j->item.len);
	CHECK(j->item.len == 0 || memcmp(back->item.data, j->item.data, j->item.len) == 0);
	if (j->item.why == NULL || why_says_nothing(j->item.why)) {
		CHECK(back->item.why == NULL);
	} else {
		blq_dlq_why w = *j->item.why;
		as_printed(w.queue);
		CHECK(back->item.why != NULL && same_why(back->item.why, &w));
	}
}

static void round_trip(const blq_inspect_jsonl *j, size_t pick)
{
	blq_inspect_record rec = as_record(j);
	size_t n;
	char *line = put_checked(&rec, pick, &n);
	char *exact = malloc(n);
	CHECK(exact != NULL);
	memcpy(exact, line, n);
	blq_inspect_jsonl back, bare;
	CHECK(get_checked(exact, n, &back) == 0);
	check_back(j, &back);
	/* Without its '\n' (as a last line may come): the same. */
	CHECK(get_checked(exact, n - 1, &bare) == 0);
	check_back(&back, &bare);
	blq_inspect_jsonl_free(&bare);
	/* Canonical: the line read back prints as itself. */
	blq_inspect_record again = as_record(&back);
	size_t n2;
	char *line2 = put_checked(&again, pick / 3, &n2);
	CHECK(n2 == n && memcmp(line2, line, n) == 0);
	free(line2);
	blq_inspect_jsonl_free(&back);
	static const blq_inspect_jsonl zero;
	CHECK(memcmp(&back, &zero, sizeof(back)) == 0); /* free zeroes it */
	free(exact);
	free(line);
}

/* The NULL arguments, once. */
static void check_nulls(void)
{
	blq_inspect_jsonl j;
	blq_error err = {0};
	CHECK(blq_inspect_jsonl_get(NULL, 0, &j, &err) == BLQ_EINVAL && err.msg[0] != '\0');
	CHECK(j.item.data == NULL && j.item.why == NULL);
	CHECK(blq_inspect_jsonl_get("{}", 2, NULL, NULL) == BLQ_EINVAL);
	CHECK(blq_inspect_jsonl_put(NULL, NULL, 0) == 0);
	blq_inspect_jsonl_free(NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool nulls_checked;
	if (!nulls_checked) {
		check_nulls();
		nulls_checked = true;
	}
	/* Exactly size bytes (ASan: nothing read past them). */
	char *line = malloc(size > 0 ? size : 1);
	CHECK(line != NULL);
	memcpy(line, data, size);
	size_t pick = 0;
	for (size_t i = 0; i < size; i++)
		pick = pick * 31 + data[i];

	blq_inspect_jsonl j;
	int rc = get_checked(line, size, &j);
	struct ref r;
	bool ok = ref_read(data, size, &r);
	if (rc != BLQ_ENOMEM)
		CHECK((rc == 0) == ok);

	/* As import passes it: with its '\n', no error wanted. */
	char *nl = malloc(size + 1);
	CHECK(nl != NULL);
	memcpy(nl, data, size);
	nl[size] = '\n';
	blq_inspect_jsonl j2;
	memset(&j2, 0xa5, sizeof(j2));
	int rc2 = blq_inspect_jsonl_get(nl, size + 1, &j2, NULL);
	if (rc != BLQ_ENOMEM && rc2 != BLQ_ENOMEM)
		CHECK(rc2 == rc);
	if (rc2 != 0)
		CHECK(j2.item.data == NULL && j2.item.why == NULL);

	if (rc == 0) {
		check_same(&j, &r);
		if (rc2 == 0)
			check_same(&j2, &r);
		round_trip(&j, pick);
		blq_inspect_jsonl_free(&j);
	}
	blq_inspect_jsonl_free(&j2);
	free(r.payload);
	free(nl);
	free(line);
	return 0;
}
