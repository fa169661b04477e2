/*
 * The dump format's code (dump_format.h has the byte layout): the names of
 * the parse outcomes a reader reports and quarantines by, and the growable
 * buffer a writer encodes a batch into. The buffer doubles from 4 KiB, so
 * a batch costs a few reallocations at most, and a failed growth leaves
 * it as it was and says BLQ_ENOMEM, so no record is half written into it.
 * Records are framed and checked with CRC32C (crc32c.c); a format-2
 * record's metadata (why the item was dead-lettered) sits inside the
 * framed bytes, so the framing and the CRC rule are format 1's.
 */
#include "dump_format.h"

#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "errorf.h"

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
	case BLQ__DUMP_BAD_META:
		return "bad metadata block";
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

unsigned blq__dump_batch_format(const blq_dump_batch *b, blq_error *err)
{
	if (b->format <= 1)
		return 1;
	if (b->format <= BLQ__DUMP_FORMAT)
		return b->format;
	blq__error_set(err, BLQ_EINVAL, "batch: format %u: this writer writes 1..%u", b->format,
		       BLQ__DUMP_FORMAT);
	return 0;
}

void blq__dump_header_put(unsigned char out[BLQ__DUMP_HEADER], unsigned format, uint64_t version)
{
	memcpy(out, BLQ__DUMP_MAGIC, 4);
	out[4] = (unsigned char)format;
	out[5] = 0;
	out[6] = out[7] = 0; /* flags */
	blq__put32(out + 8, (uint32_t)version);
	blq__put32(out + 12, (uint32_t)(version >> 32));
}

int blq__dump_header_check(const unsigned char *p, size_t n, unsigned *format, uint64_t *version)
{
	if (n < BLQ__DUMP_HEADER)
		return n >= 4 && memcmp(p, BLQ__DUMP_MAGIC, 4) != 0 ? BLQ__DUMP_BAD_MAGIC
								     : BLQ__DUMP_SHORT_HEADER;
	if (memcmp(p, BLQ__DUMP_MAGIC, 4) != 0)
		return BLQ__DUMP_BAD_MAGIC;
	if (p[4] < 1 || p[4] > BLQ__DUMP_FORMAT || p[5] != 0 || p[6] != 0 || p[7] != 0)
		return BLQ__DUMP_BAD_FORMAT;
	*format = p[4];
	*version = (uint64_t)blq__get32(p + 8) | (uint64_t)blq__get32(p + 12) << 32;
	return BLQ__DUMP_OK;
}

void blq__dump_why_clear(blq_dlq_why *why)
{
	why->reason = BLQ_DLQ_UNKNOWN;
	why->attempts = 0;
	why->rc = 0;
	why->time_ns = 0;
	why->queue[0] = '\0';
}

bool blq__dump_why_empty(const blq_dlq_why *why)
{
	return why->reason == BLQ_DLQ_UNKNOWN && why->attempts == 0 && why->rc == 0 &&
	       why->time_ns == 0 && why->queue[0] == '\0';
}

size_t blq__dump_meta_size(const blq_dlq_why *why)
{
	return BLQ__DUMP_META + (why != NULL ? strnlen(why->queue, BLQ_DLQ_QUEUE_MAX) : 0);
}

void blq__dump_meta_put(unsigned char *p, const blq_dlq_why *why)
{
	if (why == NULL) {
		memset(p, 0, BLQ__DUMP_META);
		return;
	}
	size_t qlen = strnlen(why->queue, BLQ_DLQ_QUEUE_MAX);

	p[0] = (unsigned char)why->reason;
	p[1] = (unsigned char)qlen;
	blq__put32(p + 2, why->attempts);
	blq__put32(p + 6, (uint32_t)why->rc);
	blq__put32(p + 10, (uint32_t)why->time_ns);
	blq__put32(p + 14, (uint32_t)(why->time_ns >> 32));
	memcpy(p + BLQ__DUMP_META, why->queue, qlen);
}

/* Reads the metadata at the start of a format-2 record's n bytes: its size,
 * or 0 when it does not fit them or names the queue with a NUL inside. */
static size_t meta_get(const unsigned char *p, size_t n, blq_dlq_why *why)
{
	if (n < BLQ__DUMP_META || n - BLQ__DUMP_META < p[1] ||
	    memchr(p + BLQ__DUMP_META, '\0', p[1]) != NULL)
		return 0;
	why->reason = (enum blq_dlq_reason)p[0];
	why->attempts = blq__get32(p + 2);
	why->rc = (int32_t)blq__get32(p + 6);
	why->time_ns = (uint64_t)blq__get32(p + 10) | (uint64_t)blq__get32(p + 14) << 32;
	memcpy(why->queue, p + BLQ__DUMP_META, p[1]);
	why->queue[p[1]] = '\0';
	return BLQ__DUMP_META + p[1];
}

void blq__dump_rec_seal(unsigned char *hdr, uint32_t len, uint32_t restores)
{
	blq__put32(hdr, len);
	blq__put32(hdr + 4, restores);
	uint32_t crc = blq__crc32c(0, hdr, 8);
	blq__put32(hdr + 8, blq__crc32c(crc, hdr + BLQ__DUMP_REC_HEADER, len));
}

int blq__dump_rec_append(blq__buf *b, unsigned format, const void *data, size_t len,
			 uint32_t restores, const blq_dlq_why *why)
{
	size_t meta = format == 1 ? 0 : blq__dump_meta_size(why);

	if (len > BLQ_DUMP_RECORD_MAX)
		return BLQ_EINVAL;
	if (blq__buf_reserve(b, BLQ__DUMP_REC_HEADER + meta + len) != 0)
		return BLQ_ENOMEM;
	unsigned char *hdr = b->p + b->len;
	if (meta > 0)
		blq__dump_meta_put(hdr + BLQ__DUMP_REC_HEADER, why);
	if (len > 0)
		memcpy(hdr + BLQ__DUMP_REC_HEADER + meta, data, len);
	blq__dump_rec_seal(hdr, (uint32_t)(meta + len), restores);
	b->len += BLQ__DUMP_REC_HEADER + meta + len;
	return 0;
}

int blq__dump_upgrade(blq__buf *b, size_t count)
{
	blq__buf to = {0};

	if (blq__buf_reserve(&to, b->len + count * BLQ__DUMP_META) != 0)
		return BLQ_ENOMEM;
	for (size_t off = 0, k = 0; k < count; k++) {
		uint32_t len = blq__get32(b->p + off);

		/* Room is reserved: this cannot fail. */
		blq__dump_rec_append(&to, 2, b->p + off + BLQ__DUMP_REC_HEADER, len,
				     blq__get32(b->p + off + 4), NULL);
		off += BLQ__DUMP_REC_HEADER + len;
	}
	blq__buf_free(b);
	*b = to;
	return 0;
}

int blq__dump_rec_parse(const unsigned char *p, size_t n, unsigned format, size_t *off,
			blq_dump_record *rec)
{
	size_t at = *off;

	if (at >= n)
		return BLQ__DUMP_END;
	if (n - at < BLQ__DUMP_REC_HEADER)
		return BLQ__DUMP_TRUNCATED;
	uint32_t len = blq__get32(p + at);
	if (len > BLQ_DUMP_RECORD_MAX + (format == 1 ? 0 : BLQ__DUMP_META_MAX))
		return BLQ__DUMP_TOO_LONG;
	if (n - at - BLQ__DUMP_REC_HEADER < len)
		return BLQ__DUMP_TRUNCATED;
	const unsigned char *data = p + at + BLQ__DUMP_REC_HEADER;
	uint32_t crc = blq__crc32c(0, p + at, 8);
	crc = blq__crc32c(crc, data, len);
	if (crc != blq__get32(p + at + 8))
		return BLQ__DUMP_BAD_CRC;
	size_t meta = 0;
	if (format == 1)
		blq__dump_why_clear(&rec->why);
	else if ((meta = meta_get(data, len, &rec->why)) == 0)
		return BLQ__DUMP_BAD_META;
	if (len - meta > BLQ_DUMP_RECORD_MAX)
		return BLQ__DUMP_TOO_LONG;
	rec->data = data + meta;
	rec->len = len - meta;
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

size_t blq__dump_resync(const unsigned char *p, size_t n, unsigned format, size_t at)
{
	size_t limit = BLQ_DUMP_RECORD_MAX + (format == 1 ? 0 : BLQ__DUMP_META_MAX);
	blq_dump_record rec;

	for (size_t off = at + 1; off < n && n - off >= BLQ__DUMP_REC_HEADER; off++) {
		/* What blq__dump_rec_parse rejects before its CRC, checked
		 * here first: most candidates end at their length field. */
		uint32_t len = blq__get32(p + off);
		if (len > limit || n - off - BLQ__DUMP_REC_HEADER < len)
			continue;
		if (format != 1 && (len < BLQ__DUMP_META ||
				    len - BLQ__DUMP_META < p[off + BLQ__DUMP_REC_HEADER + 1]))
			continue;
		size_t k = off;
		if (blq__dump_rec_parse(p, n, format, &k, &rec) == BLQ__DUMP_OK)
			return off;
	}
	return n;
}
