/*
 * Fuzz target for locations (blq_inspect_loc_parse, blq_inspect_loc_format
 * in dlq/inspect.c): strings that users type into blq-dlq and send to
 * blq-demo's HTTP API, so any bytes may arrive. The input, NUL-terminated,
 * is parsed. A refusal must say why (a message, BLQ_EINVAL). A location
 * that parses must be one the header allows (a known area; a file name
 * without '/'; an id only for a stream entry), must print within
 * BLQ_INSPECT_LOC_MAX, into a buffer of exactly its length plus the NUL
 * (and be refused by one byte less), and must parse back to the same
 * location: a tool prints locations for a later call to take back.
 *
 * Built with clang -fsanitize=fuzzer,address as a libFuzzer binary
 * (scripts/test.sh runs it for a few seconds; seeds in corpus/inspect_loc,
 * dictionary inspect_loc.dict), and as a normal test with fuzz_main.c
 * replaying the seeds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blq/dlqinspect.h>

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_loc(const blq_inspect_loc *a, const blq_inspect_loc *b)
{
	return a->area == b->area && strcmp(a->file, b->file) == 0 && strcmp(a->id, b->id) == 0 &&
	       a->record == b->record && a->index == b->index && a->offset == b->offset;
}

/* What the header allows a parsed location to be. */
static void check_shape(const blq_inspect_loc *l)
{
	CHECK((unsigned)l->area <= BLQ_INSPECT_DEAD);
	CHECK(memchr(l->file, '\0', sizeof(l->file)) != NULL);
	CHECK(memchr(l->id, '\0', sizeof(l->id)) != NULL);
	CHECK(strchr(l->file, '/') == NULL);
	CHECK(l->id[0] == '\0' || (l->file[0] == '\0' && !l->record)); /* an entry */
	CHECK(!l->record || l->file[0] != '\0');                        /* a file record */
	CHECK(l->record || (l->index == 0 && l->offset == 0));
}

/* Prints l into a buffer of exactly cap bytes (on the heap, so that ASan
 * sees a byte written past it); returns format's result. */
static int format_into(const blq_inspect_loc *l, size_t cap, char **out)
{
	*out = malloc(cap);
	CHECK(*out != NULL);
	return blq_inspect_loc_format(l, *out, cap);
}

/* Formats l, checks the buffer rules, and returns the string (malloc'd). */
static char *format_checked(const blq_inspect_loc *l)
{
	char *s;
	int n = format_into(l, BLQ_INSPECT_LOC_MAX, &s);
	CHECK(n > 0 && n < BLQ_INSPECT_LOC_MAX && strlen(s) == (size_t)n);
	free(s);
	char *exact;
	CHECK(format_into(l, (size_t)n + 1, &exact) == n && strlen(exact) == (size_t)n);
	char *shy;
	CHECK(format_into(l, (size_t)n, &shy) == BLQ_EINVAL && shy[0] == '\0');
	free(shy);
	return exact;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	CHECK(s != NULL);
	memcpy(s, data, size);
	s[size] = '\0';
	blq_inspect_loc l, back;
	blq_error err = {0};
	int rc = blq_inspect_loc_parse(s, &l, &err);
	CHECK(blq_inspect_loc_parse(s, &back, NULL) == rc); /* err is optional */
	if (rc != 0) {
		CHECK(rc == BLQ_EINVAL && err.code == BLQ_EINVAL);
		CHECK(err.msg[0] != '\0' && memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
		free(s);
		return 0;
	}
	check_shape(&l);
	char *printed = format_checked(&l);
	memset(&back, 0xa5, sizeof(back));
	CHECK(blq_inspect_loc_parse(printed, &back, &err) == 0);
	CHECK(same_loc(&l, &back));
	/* Printing is canonical: the printed form prints as itself. */
	char *again = format_checked(&back);
	CHECK(strcmp(printed, again) == 0);
	free(again);
	free(printed);
	free(s);
	return 0;
}
