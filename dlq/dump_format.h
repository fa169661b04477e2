/*
 * The dump format, shared by the dump, the writers and the readers. Not
 * installed. All integers little-endian.
 *
 *   file    = header record*
 *   header  = "BLQD" u16 format(=1) u16 flags(=0) u64 version      16 bytes
 *   record  = u32 len u32 restores u32 crc32c byte[len]       12 + len bytes
 *
 * crc32c covers the first 8 header bytes of the record (len, restores) and
 * the data, so a flipped length is caught like a flipped data byte. A
 * Redis entry's "r" field holds exactly one record.
 */
#ifndef BLQ_DLQ_DUMP_FORMAT_H
#define BLQ_DLQ_DUMP_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <blq/dlqdump.h>

#define BLQ__DUMP_MAGIC "BLQD"
#define BLQ__DUMP_FORMAT 1u
#define BLQ__DUMP_HEADER 16u
#define BLQ__DUMP_REC_HEADER 12u

/* Outcomes of parsing: 1 a record, 0 the clean end, negative damage. */
enum blq__dump_parse {
	BLQ__DUMP_OK = 1,
	BLQ__DUMP_END = 0,
	BLQ__DUMP_SHORT_HEADER = -1, /* fewer than 16 bytes */
	BLQ__DUMP_BAD_MAGIC = -2,
	BLQ__DUMP_BAD_FORMAT = -3,   /* format or flags this reader does not know */
	BLQ__DUMP_TRUNCATED = -4,    /* a record cut short by the end */
	BLQ__DUMP_TOO_LONG = -5,     /* a length above BLQ_DUMP_RECORD_MAX */
	BLQ__DUMP_BAD_CRC = -6,
};

/* A words-for-humans name of a parse outcome ("bad checksum"). */
const char *blq__dump_parse_str(int outcome);

static inline void blq__put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static inline uint32_t blq__get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A growable byte buffer. */
typedef struct blq__buf {
	unsigned char *p;
	size_t len, cap;
} blq__buf;

/* Room for `extra` more bytes after len. Returns 0 or BLQ_ENOMEM. */
int blq__buf_reserve(blq__buf *b, size_t extra);
void blq__buf_free(blq__buf *b);

/* Writes the 16-byte file header. */
void blq__dump_header_put(unsigned char out[BLQ__DUMP_HEADER], uint64_t version);

/* Checks a file header in n bytes at p: BLQ__DUMP_OK with *version set, or
 * a damage code. */
int blq__dump_header_check(const unsigned char *p, size_t n, uint64_t *version);

/* Fills the 12-byte record header in front of len data bytes at hdr + 12. */
void blq__dump_rec_seal(unsigned char *hdr, uint32_t len, uint32_t restores);

/* Appends one record (header and data) to b. Returns 0 or BLQ_ENOMEM. */
int blq__dump_rec_append(blq__buf *b, const void *data, size_t len, uint32_t restores);

/* Parses the record at p[*off..n): BLQ__DUMP_OK (rec set, *off advanced),
 * BLQ__DUMP_END when *off == n, or a damage code (*off unchanged). Never
 * reads outside p[0..n), never allocates. */
int blq__dump_rec_parse(const unsigned char *p, size_t n, size_t *off, blq_dump_record *rec);

/* Bytes taken by the first k records of a well-formed batch. */
size_t blq__dump_rec_span(const unsigned char *p, size_t k);

#endif
