/*
 * Fuzz target for the check of a Redis stream entry (dlq/redis_entry.c):
 * the Redis reader and the inspector trust its verdict on entries that
 * other processes wrote, so any bytes may reach it. The input is raw RESP,
 * as a server would send it, parsed by hiredis's own reply reader; every
 * complete reply, and every array inside it (an entry's field list, an
 * XRANGE entry [id, fields], an XREADGROUP reply), is checked with no
 * version wanted and wanting 1 and 2.
 *
 * A verdict of "good" must keep the check's promises (redis_entry.h): v
 * and exactly one record field, the version a decimal number equal to
 * what was wanted, the record field one whole record of its format with
 * a checksum that holds, and the record's data inside the field's string.
 * A verdict of "bad" must give a sentence. Anything else aborts, so
 * libFuzzer reports it; ASan catches a read out of a reply's bounds.
 *
 * Built with clang -fsanitize=fuzzer,address as a libFuzzer binary
 * (scripts/test.sh runs it for a few seconds; seeds in corpus/redis_entry,
 * replies captured from a real redis-server, and redis_entry.dict), and as
 * a normal test with fuzz_main.c replaying the seeds. Needs hiredis, as
 * the code under test does (BLQ_WITH_REDIS).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "../../dlq/crc32c.h"
#include "../../dlq/dump_format.h"
#include "../../dlq/redis_entry.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* hiredis allocates an array's element vector for the count it announces
 * before any element arrives: "*999999999\r\n" is gigabytes allocated by
 * hiredis, not a defect of the check. No array can complete with more
 * elements than the input has bytes, so inputs announcing one are
 * skipped; a '*' inside a string only skips an input needlessly. */
static int announces_huge_array(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '*')
			continue;
		size_t j = i + 1, count = 0;
		if (j < n && p[j] == '-')
			j++;
		for (; j < n && p[j] >= '0' && p[j] <= '9'; j++) {
			count = count * 10 + (size_t)(p[j] - '0');
			if (count > n)
				return 1;
		}
	}
	return 0;
}

/* The version as the writer spells it ("%llu"): 1 to 20 digits, no sign,
 * no space, within 64 bits. 0 when s is not that. */
static int decimal_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > 20)
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return 0;
		v = v * 10 + d;
	}
	*out = v;
	return 1;
}

static int is_named(const redisReply *f, const char *name)
{
	return blq__redis_is_str(f) && f->len == strlen(name) && memcmp(f->str, name, f->len) == 0;
}

/* The index in fields of x, an element of it; fields->elements if none. */
static size_t index_of(const redisReply *fields, const redisReply *x)
{
	size_t i = 0;

	while (i < fields->elements && fields->element[i] != x)
		i++;
	return i;
}

/* True when x is one of fields' values (odd places: field, value, ...). */
static int is_value_of(const redisReply *fields, const redisReply *x)
{
	size_t i = index_of(fields, x);

	return i < fields->elements && i % 2 == 1;
}

/* Record fields (r, r2) with a string value: the check's "exactly one". */
static unsigned record_fields(const redisReply *fields)
{
	unsigned n = 0;

	for (size_t i = 0; i + 1 < fields->elements; i += 2)
		if ((is_named(fields->element[i], "r") || is_named(fields->element[i], "r2")) &&
		    blq__redis_is_str(fields->element[i + 1]))
			n++;
	return n;
}

/* A format-2 record's metadata against the bytes it came from (p: the
 * len bytes after the 12-byte record header). Returns its size. */
static size_t check_why(const unsigned char *p, size_t len, const blq_dlq_why *why)
{
	CHECK(len >= BLQ__DUMP_META && len - BLQ__DUMP_META >= p[1]);
	CHECK(memchr(why->queue, '\0', sizeof(why->queue)) != NULL);
	CHECK(strlen(why->queue) == p[1]);
	CHECK(memcmp(why->queue, p + BLQ__DUMP_META, p[1]) == 0);
	CHECK((unsigned)why->reason == p[0]);
	CHECK(why->attempts == blq__get32(p + 2));
	CHECK(why->rc == (int32_t)blq__get32(p + 6));
	CHECK(why->time_ns == ((uint64_t)blq__get32(p + 10) | (uint64_t)blq__get32(p + 14) << 32));
	return BLQ__DUMP_META + p[1];
}

/* Every byte of a record's data is read into it: volatile, so that the
 * reads stay, and ASan checks their bounds. */
static volatile unsigned char sink;

/* The record field r (named rf) holds exactly the record rec came from. */
static void check_record(const redisReply *r, const char *rf, const blq_dump_record *rec)
{
	const unsigned char *p = (const unsigned char *)r->str;

	CHECK(r->len >= BLQ__DUMP_REC_HEADER);
	uint32_t len = blq__get32(p);
	CHECK(len == r->len - BLQ__DUMP_REC_HEADER); /* one record, no trailing bytes */
	CHECK(blq__crc32c(blq__crc32c(0, p, 8), p + BLQ__DUMP_REC_HEADER, len) ==
	      blq__get32(p + 8));
	CHECK(rec->restores == blq__get32(p + 4));
	size_t meta = 0;
	if (strcmp(rf, "r2") == 0) {
		meta = check_why(p + BLQ__DUMP_REC_HEADER, len, &rec->why);
	} else {
		CHECK(strcmp(rf, "r") == 0);
		CHECK(rec->why.reason == BLQ_DLQ_UNKNOWN && rec->why.attempts == 0 &&
		      rec->why.rc == 0 && rec->why.time_ns == 0 && rec->why.queue[0] == '\0');
	}
	/* The data: inside the field's string, up to its end. */
	CHECK(rec->len <= BLQ_DUMP_RECORD_MAX);
	CHECK(rec->len == len - meta);
	CHECK((const unsigned char *)rec->data == p + BLQ__DUMP_REC_HEADER + meta);
	for (size_t i = 0; i < rec->len; i++)
		sink += ((const unsigned char *)rec->data)[i];
}

/* One call of the check on fields, and its promises. */
static void check_fields(const redisReply *fields, const uint64_t *want)
{
	const redisReply *v = NULL, *r = NULL;
	const char *rf = NULL;
	blq_dump_record rec;

	memset(&rec, 0xa5, sizeof(rec)); /* what the check does not set shows */
	const char *why = blq__redis_entry_check(fields, want, &v, &rf, &r, &rec);
	CHECK(rf != NULL && (strcmp(rf, "r") == 0 || strcmp(rf, "r2") == 0));
	/* What it found is the caller's: elements of fields, at a value's place. */
	CHECK(v == NULL || is_value_of(fields, v));
	CHECK(r == NULL || is_value_of(fields, r));
	if (why != NULL) {
		CHECK(why[0] != '\0');
		return;
	}
	CHECK(v != NULL && r != NULL && blq__redis_is_str(v) && blq__redis_is_str(r));
	CHECK(is_named(fields->element[index_of(fields, v) - 1], "v"));
	CHECK(is_named(fields->element[index_of(fields, r) - 1], rf));
	CHECK(record_fields(fields) == 1);
	uint64_t ver;
	CHECK(decimal_u64(v->str, v->len, &ver)); /* "v a number" */
	CHECK(rec.version == ver);
	CHECK(want == NULL || ver == *want);
	check_record(r, rf, &rec);
}

/* Checks reply and every array inside it: a field list may sit at any
 * depth (an entry, a list of entries, a stream's entries in XREADGROUP). */
static void check_tree(const redisReply *reply)
{
	static const uint64_t one = 1, two = 2;

	check_fields(reply, NULL);
	check_fields(reply, &one);
	check_fields(reply, &two);
	if (reply->type != REDIS_REPLY_ARRAY)
		return;
	for (size_t i = 0; i < reply->elements; i++)
		check_tree(reply->element[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (announces_huge_array(data, size))
		return 0;
	redisReader *rd = redisReaderCreate();
	if (rd == NULL)
		abort();
	if (redisReaderFeed(rd, (const char *)data, size) != REDIS_OK)
		abort();
	void *reply;
	while (redisReaderGetReply(rd, &reply) == REDIS_OK && reply != NULL) {
		check_tree(reply);
		freeReplyObject(reply);
	}
	redisReaderFree(rd);
	return 0;
}
