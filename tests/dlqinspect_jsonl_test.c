/*
 * The JSON lines codec (blq_inspect_jsonl_put/get): every field through a
 * round trip (binary payloads of every length class, a null why, escapes
 * and non-ASCII in strings, the extremes of each integer), the exact line
 * the format promises, and each kind of malformed line refused with the
 * field and column named.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blq/dlq.h>
#include <blq/dlqinspect.h>

TestSuite(dlqinspect_jsonl, .timeout = 30);

/* put into an exactly sized buffer (checking the snprintf-style sizing). */
static char *put(const blq_inspect_record *r)
{
	size_t n = blq_inspect_jsonl_put(r, NULL, 0);
	cr_assert(n > 0);
	char *buf = malloc(n + 1);
	cr_assert_eq(blq_inspect_jsonl_put(r, buf, n + 1), n);
	cr_assert_eq(strlen(buf), n);
	cr_assert_eq(buf[n - 1], '\n');
	return buf;
}

Test(dlqinspect_jsonl, the_documented_line)
{
	static const unsigned char data[] = "hi!";
	blq_inspect_record r = {.loc = "dead/F#3@118", .data = data, .len = 3, .restores = 1,
				.time_ns = 1764000000000000000ull,
				.why = {.reason = BLQ_DLQ_FAILED, .attempts = 3, .rc = -42,
					.time_ns = 1764000000000000000ull, .queue = "orders"}};
	char *s = put(&r);
	cr_expect_str_eq(s, "{\"v\":1,\"loc\":\"dead/F#3@118\",\"version\":0,\"restores\":1,"
			    "\"deliveries\":0,\"time_ns\":1764000000000000000,\"why\":{\"reason\":"
			    "\"failed\",\"attempts\":3,\"rc\":-42,\"queue\":\"orders\",\"time_ns\":"
			    "1764000000000000000},\"payload\":\"aGkh\"}\n");
	/* A short buffer is cut, NUL-terminated, and the length still said. */
	char small[10];
	cr_expect_eq(blq_inspect_jsonl_put(&r, small, sizeof(small)), strlen(s));
	cr_expect_str_eq(small, "{\"v\":1,\"l");
	free(s);
}

static void round_trip(const blq_inspect_record *r)
{
	char *s = put(r);
	blq_inspect_jsonl j;
	blq_error err = {0};
	cr_assert_eq(blq_inspect_jsonl_get(s, strlen(s), &j, &err), 0, "%s: %s", s, err.msg);
	cr_expect_str_eq(j.loc, r->loc);
	cr_expect_eq(j.version, r->version);
	cr_expect_eq(j.deliveries, r->deliveries);
	cr_expect_eq(j.time_ns, r->time_ns);
	cr_expect_eq(j.item.restores, r->restores);
	cr_assert_eq(j.item.len, r->len);
	cr_assert_not_null(j.item.data);
	cr_expect_eq(memcmp(j.item.data, r->data, r->len), 0, "payload of %zu bytes", r->len);
	bool nothing = r->why.reason == 0 && r->why.attempts == 0 && r->why.rc == 0 &&
		       r->why.time_ns == 0 && r->why.queue[0] == '\0';
	if (nothing) {
		cr_expect_null(j.item.why);
		cr_expect(strstr(s, "\"why\":null") != NULL);
	} else {
		cr_assert_not_null(j.item.why);
		cr_expect_eq(j.item.why->reason, r->why.reason);
		cr_expect_eq(j.item.why->attempts, r->why.attempts);
		cr_expect_eq(j.item.why->rc, r->why.rc);
		cr_expect_eq(j.item.why->time_ns, r->why.time_ns);
		cr_expect_str_eq(j.item.why->queue, r->why.queue);
	}
	/* Printing what was read gives the same line. */
	blq_inspect_record back = {.loc = j.loc, .data = j.item.data, .len = j.item.len,
				   .restores = j.item.restores, .deliveries = j.deliveries,
				   .version = j.version, .time_ns = j.time_ns};
	if (j.item.why != NULL)
		back.why = *j.item.why;
	char *again = put(&back);
	cr_expect_str_eq(again, s);
	free(again);
	blq_inspect_jsonl_free(&j);
	cr_expect_null(j.item.data);
	free(s);
}

Test(dlqinspect_jsonl, every_field_round_trips)
{
	unsigned char all[256 + 3];
	for (size_t i = 0; i < sizeof(all); i++)
		all[i] = (unsigned char)(i * 7 + 3);
	/* 0..5 bytes: every padding case; then every byte value. */
	for (size_t len = 0; len <= 5; len++) {
		blq_inspect_record r = {.loc = "dump/a.bin#0@16", .data = all, .len = len};
		round_trip(&r);
	}
	for (int reason = 0; reason <= BLQ_DLQ_CLOSED; reason++) {
		blq_inspect_record r = {.loc = "dead:1700000000000-7", .data = all,
					.len = sizeof(all), .restores = UINT32_MAX,
					.deliveries = 12, .version = UINT64_MAX,
					.time_ns = UINT64_MAX,
					.why = {.reason = (enum blq_dlq_reason)reason,
						.attempts = UINT32_MAX, .rc = INT32_MIN,
						.time_ns = 1, .queue = "q\"\\\n\t\x01 é ✓ 𝄞"}};
		round_trip(&r);
		r.why.rc = INT32_MAX;
		r.why.queue[0] = '\0';
		round_trip(&r);
	}
	/* A why with only a time says something: it is kept, reason unknown. */
	blq_inspect_record t = {.loc = "", .data = all, .len = 1, .why = {.time_ns = 5}};
	round_trip(&t);
}

Test(dlqinspect_jsonl, any_order_whitespace_and_escapes_are_read)
{
	const char *s = " { \"payload\" : \"AAE=\" , \"why\" : { \"queue\" : \"\\u00e9\\ud834\\udd1e\\/\","
			" \"reason\" : \"overflow-rear\" } , \"v\" : 1 }\r\n";
	blq_inspect_jsonl j;
	blq_error err = {0};
	cr_assert_eq(blq_inspect_jsonl_get(s, strlen(s), &j, &err), 0, "%s", err.msg);
	cr_expect_eq(j.item.len, 2);
	cr_expect_eq(((const unsigned char *)j.item.data)[1], 1);
	cr_assert_not_null(j.item.why);
	cr_expect_eq(j.item.why->reason, BLQ_DLQ_OVERFLOW_REAR);
	cr_expect_str_eq(j.item.why->queue, "é𝄞/");
	cr_expect_eq(j.item.restores, 0);
	cr_expect_str_eq(j.loc, "");
	blq_inspect_jsonl_free(&j);
	blq_inspect_jsonl_free(NULL);
	/* "\/" in the payload is '/', as in any JSON string: some encoders
	 * escape every '/' (PHP's json_encode), and base64 has them. */
	s = "{\"v\":1,\"payload\":\"\\/\\/\\/\\/\"}";
	cr_assert_eq(blq_inspect_jsonl_get(s, strlen(s), &j, &err), 0, "%s", err.msg);
	cr_assert_eq(j.item.len, 3);
	cr_expect(memcmp(j.item.data, "\xff\xff\xff", 3) == 0);
	blq_inspect_jsonl_free(&j);
}

/* Each bad line: refused, nothing left to free, the message naming the
 * field (when there is one) and the column. */
Test(dlqinspect_jsonl, malformed_lines_are_refused_with_field_and_column)
{
	static const struct {
		const char *line;
		const char *msg;
	} bad[] = {
		{"", "column 1: expected '{', the line ended"},
		{"[1]", "column 1: expected '{'"},
		{"{\"v\":1}", "\"payload\" is missing"},
		{"{\"payload\":\"\"}", "\"v\" is missing"},
		{"{\"v\":2,\"payload\":\"\"}", "column 6: \"v\": version 2 of this format"},
		{"{\"v\":1,\"payload\":\"\",\"x\":1}", "column 21: unknown field \"x\""},
		{"{\"v\":1,\"v\":1,\"payload\":\"\"}", "column 8: field \"v\" twice"},
		{"{\"v\":1,\"payload\":\"QQ=\"}", "\"payload\": base64 comes in groups of 4"},
		{"{\"v\":1,\"payload\":\"QQ*=\"}", "column 21: \"payload\": not base64 ('*')"},
		{"{\"v\":1,\"payload\":\"Q===\"}", "\"payload\": not base64 ('=')"},
		{"{\"v\":1,\"payload\":\"QQ==\"} x", "column 26: something after the object"},
		{"{\"v\":1,\"payload\":\"QQ==\"", "the object is not closed"},
		{"{\"v\":1,\"payload\":\"QQ==", "\"payload\": the string is not closed"},
		{"{\"v\":1,\"restores\":-1,\"payload\":\"\"}", "column 19: \"restores\": expected an integer >= 0"},
		{"{\"v\":1,\"restores\":4294967296,\"payload\":\"\"}", "column 19: \"restores\": out of range"},
		{"{\"v\":1,\"time_ns\":1.5,\"payload\":\"\"}", "\"time_ns\": expected an integer"},
		{"{\"v\":1,\"time_ns\":99999999999999999999,\"payload\":\"\"}", "\"time_ns\": out of range"},
		{"{\"v\":1,\"version\":01,\"payload\":\"\"}", "\"version\": a leading zero"},
		{"{\"v\":1,\"loc\":5,\"payload\":\"\"}", "column 14: \"loc\": expected a string"},
		{"{\"v\":1,\"why\":5,\"payload\":\"\"}", "column 14: \"why\": expected an object or null"},
		{"{\"v\":1,\"why\":{\"reason\":\"bored\"},\"payload\":\"\"}", "column 24: \"why.reason\": unknown reason \"bored\""},
		{"{\"v\":1,\"why\":{\"rc\":2147483648},\"payload\":\"\"}", "\"why.rc\": out of range"},
		{"{\"v\":1,\"why\":{\"rc\":-2147483649},\"payload\":\"\"}", "\"why.rc\": out of range"},
		{"{\"v\":1,\"why\":{\"rc\":\"1\"},\"payload\":\"\"}", "column 20: \"why.rc\": expected an integer"},
		{"{\"v\":1,\"why\":{\"queue\":\"\\q\"},\"payload\":\"\"}", "\"why.queue\": unknown escape '\\q'"},
		{"{\"v\":1,\"why\":{\"queue\":\"\\ud800\"},\"payload\":\"\"}", "\"why.queue\": a high surrogate without its low one"},
		{"{\"v\":1,\"why\":{\"queue\":\"\\u0000\"},\"payload\":\"\"}", "\"why.queue\": \\u0000 cannot be"},
		{"{\"v\":1,\"why\":{\"queue\":\"a\tb\"},\"payload\":\"\"}", "\"why.queue\": a control byte"},
		{"{\"v\":1,\"why\":{\"when\":1},\"payload\":\"\"}", "column 15: unknown field \"why.when\""},
		{"{\"v\":1 \"payload\":\"\"}", "column 8: expected ',' or '}'"},
		{"{\"v\" 1,\"payload\":\"\"}", "column 6: \"v\": expected ':'"},
		/* Found by tests/fuzz/inspect_jsonl_fuzz.c: a why's field is
		 * named in full here too; nothing may come between a
		 * surrogate pair's escapes; a byte that would cut or garble a
		 * message is named by its value. */
		{"{\"v\":1,\"why\":{\"rc\" 5},\"payload\":\"\"}", "column 20: \"why.rc\": expected ':'"},
		{"{\"v\":1,\"loc\":\"\\ud83d \\ude00\",\"payload\":\"\"}",
		 "\"loc\": a high surrogate without its low one"},
		{"{\"v\":1,\"loc\":\"\\ud83d\n\\ude00\",\"payload\":\"\"}",
		 "\"loc\": a high surrogate without its low one"},
		{"{\"v\":1,\"payload\":\"QQ\x01=\"}", "column 21: \"payload\": not base64 (byte 0x01)"},
		{"{\"v\":1,\"payload\":\"\\QQ=\"}", "column 19: \"payload\": not base64 ('\\')"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		blq_inspect_jsonl j;
		blq_error err = {0};
		int rc = blq_inspect_jsonl_get(bad[i].line, strlen(bad[i].line), &j, &err);
		cr_expect_eq(rc, BLQ_EINVAL, "%s: rc %d", bad[i].line, rc);
		cr_expect(strstr(err.msg, bad[i].msg) != NULL, "%s: got \"%s\", want \"%s\"",
			  bad[i].line, err.msg, bad[i].msg);
		cr_expect_null(j.item.data);
		cr_expect_null(j.item.why);
	}
	/* A queue name longer than a why holds. */
	char line[512];
	snprintf(line, sizeof(line), "{\"v\":1,\"why\":{\"queue\":\"%0*d\"},\"payload\":\"\"}",
		 BLQ_DLQ_QUEUE_MAX + 1, 0);
	blq_inspect_jsonl j;
	blq_error err = {0};
	cr_expect_eq(blq_inspect_jsonl_get(line, strlen(line), &j, &err), BLQ_EINVAL);
	cr_expect(strstr(err.msg, "\"why.queue\": longer than 255 bytes") != NULL, "%s", err.msg);
	cr_expect_eq(blq_inspect_jsonl_get(NULL, 0, NULL, &err), BLQ_EINVAL);
	cr_expect_eq(blq_inspect_jsonl_put(NULL, NULL, 0), 0);
}

Test(dlqinspect_jsonl, reason_names_parse_back)
{
	for (int r = 0; r <= BLQ_DLQ_CLOSED; r++) {
		enum blq_dlq_reason got;
		cr_expect_eq(blq_dlq_reason_parse(blq_dlq_reason_name((enum blq_dlq_reason)r), &got), 0);
		cr_expect_eq((int)got, r);
	}
	enum blq_dlq_reason got;
	cr_expect_eq(blq_dlq_reason_parse("Overflow_Front", &got), 0);
	cr_expect_eq(got, BLQ_DLQ_OVERFLOW_FRONT);
	cr_expect_eq(blq_dlq_reason_parse("overflow", &got), BLQ_EINVAL);
	cr_expect_eq(blq_dlq_reason_parse("failedx", &got), BLQ_EINVAL);
	cr_expect_eq(blq_dlq_reason_parse(NULL, &got), BLQ_EINVAL);
}
