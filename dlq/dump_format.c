/*
 * The dump format's code (dump_format.h has the byte layout): the names of
 * the parse outcomes a reader reports and quarantines by, and the growable
 * buffer a writer encodes a batch into. The buffer doubles from 4 KiB, so
 * a batch costs a few reallocations at most, and a failed growth leaves
 * it as it was and says BLQ_ENOMEM, so no record is half written into it.
 * Records are framed and checked with CRC32C (crc32c.c).
 */
#include "dump_format.h"

#include <stdlib.h>
#include <string.h>

#include "crc32c.h"

const char *blq__dump_parse_str(int outcome)
{
	switch (outcome) {
	case BLQ__DUMP_OK:
		return "ok";
	case BLQ__DUMP_END:
		return "end";
	case BLQ__DUMP_SHORT_HEADER:
		return "truncated header";
	case BLQ__DUMP_BAD_MAGIC:
		return "bad magic";
	case BLQ__DUMP_BAD_FORMAT:
		return "unknown format";
	case BLQ__DUMP_TRUNCATED:
		return "truncated record";
	case BLQ__DUMP_TOO_LONG:
		return "record length above the limit";
	case BLQ__DUMP_BAD_CRC:
		return "bad checksum";
	default:
		return "unknown damage";
	}
}

int blq__buf_reserve(blq__buf *b, size_t extra)
{
	if (b->cap - b->len >= extra)
		return 0;
	size_t want = b->len + extra, cap = b->cap ? b->cap : 4096;
	while (cap < want)
		cap = cap > SIZE_MAX / 2 ? want : cap * 2;
	unsigned char *p = realloc(b->p, cap);
	if (p == NULL)
		return BLQ_ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

void blq__buf_free(blq__buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

void blq__dump_header_put(unsigned char out[BLQ__DUMP_HEADER], uint64_t version)
{
	memcpy(out, BLQ__DUMP_MAGIC, 4);
	out[4] = (unsigned char)BLQ__DUMP_FORMAT;
	out[5] = 0;
	out[6] = out[7] = 0; /* flags */
	blq__put32(out + 8, (uint32_t)version);
	blq__put32(out + 12, (uint32_t)(version >> 32));
}

int blq__dump_header_check(const unsigned char *p, size_t n, uint64_t *version)
{
	if (n < BLQ__DUMP_HEADER)
		return n >= 4 && memcmp(p, BLQ__DUMP_MAGIC, 4) != 0 ? BLQ__DUMP_BAD_MAGIC
								     : BLQ__DUMP_SHORT_HEADER;
	if (memcmp(p, BLQ__DUMP_MAGIC, 4) != 0)
		return BLQ__DUMP_BAD_MAGIC;
	if (p[4] != BLQ__DUMP_FORMAT || p[5] != 0 || p[6] != 0 || p[7] != 0)
		return BLQ__DUMP_BAD_FORMAT;
	*version = (uint64_t)blq__get32(p + 8) | (uint64_t)blq__get32(p + 12) << 32;
	return BLQ__DUMP_OK;
}

void blq__dump_rec_seal(unsigned char *hdr, uint32_t len, uint32_t restores)
{
	blq__put32(hdr, len);
	blq__put32(hdr + 4, restores);
	uint32_t crc = blq__crc32c(0, hdr, 8);
	blq__put32(hdr + 8, blq__crc32c(crc, hdr + BLQ__DUMP_REC_HEADER, len));
}

int blq__dump_rec_append(blq__buf *b, const void *data, size_t len, uint32_t restores)
{
	if (len > BLQ_DUMP_RECORD_MAX)
		return BLQ_EINVAL;
	if (blq__buf_reserve(b, BLQ__DUMP_REC_HEADER + len) != 0)
		return BLQ_ENOMEM;
	unsigned char *hdr = b->p + b->len;
	if (len > 0)
		memcpy(hdr + BLQ__DUMP_REC_HEADER, data, len);
	blq__dump_rec_seal(hdr, (uint32_t)len, restores);
	b->len += BLQ__DUMP_REC_HEADER + len;
	return 0;
}

int blq__dump_rec_parse(const unsigned char *p, size_t n, size_t *off, blq_dump_record *rec)
{
	size_t at = *off;

	if (at >= n)
		return BLQ__DUMP_END;
	if (n - at < BLQ__DUMP_REC_HEADER)
		return BLQ__DUMP_TRUNCATED;
	uint32_t len = blq__get32(p + at);
	if (len > BLQ_DUMP_RECORD_MAX)
		return BLQ__DUMP_TOO_LONG;
	if (n - at - BLQ__DUMP_REC_HEADER < len)
		return BLQ__DUMP_TRUNCATED;
	uint32_t crc = blq__crc32c(0, p + at, 8);
	crc = blq__crc32c(crc, p + at + BLQ__DUMP_REC_HEADER, len);
	if (crc != blq__get32(p + at + 8))
		return BLQ__DUMP_BAD_CRC;
	rec->data = p + at + BLQ__DUMP_REC_HEADER;
	rec->len = len;
	rec->restores = blq__get32(p + at + 4);
	*off = at + BLQ__DUMP_REC_HEADER + len;
	return BLQ__DUMP_OK;
}

size_t blq__dump_rec_span(const unsigned char *p, size_t k)
{
	size_t off = 0;

	while (k-- > 0)
		off += BLQ__DUMP_REC_HEADER + blq__get32(p + off);
	return off;
}
