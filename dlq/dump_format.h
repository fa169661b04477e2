/*
 * The dump format, shared by the dump, the writers and the readers. Not
 * installed. All integers little-endian.
 *
 *   file    = header record*
 *   header  = "BLQD" u16 format(1 or 2) u16 flags(=0) u64 version  16 bytes
 *   record  = u32 len u32 restores u32 crc32c byte[len]       12 + len bytes
 *   format 1: byte[len] = data
 *   format 2: byte[len] = meta data
 *   meta    = u8 reason u8 qlen u32 attempts i32 rc u64 time_ns
 *             byte[qlen] queue                              18 + qlen bytes
 *
 * crc32c covers the first 8 header bytes of the record (len, restores) and
 * the len bytes after the header (format 2: the metadata too), so a flipped
 * length or reason is caught like a flipped data byte. The framing is the
 * same in both formats: 12 + len spans a record. meta is blq_dlq_why: the
 * queue name without its NUL (no NUL inside), reason values passed through
 * as stored. BLQ_DUMP_RECORD_MAX bounds the data; format 2's len may exceed
 * it by the metadata's size.
 *
 * A dump writes format 1 (byte for byte what older versions wrote) until
 * an item comes with a why (blq_dump_enqueue_why), then format 2, every
 * record with its metadata (all zero for items without a why). A Redis
 * entry's "r" field holds exactly one format-1 record, its "r2" field one
 * format-2 record (older readers do not know "r2": they set the entry
 * aside, quarantined, instead of misreading it).
 *
 * Damage inside a file (a record that does not parse) does not end it: a
 * reader resynchronises on the next offset where a whole record parses
 * with a valid CRC (blq__dump_resync) and goes on from there; the bytes
 * in between are skipped, reported, and the file is quarantined once its
 * intact records were restored.
 */
#ifndef BLQ_DLQ_DUMP_FORMAT_H
#define BLQ_DLQ_DUMP_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <blq/dlqdump.h>

#define BLQ__DUMP_MAGIC "BLQD"
#define BLQ__DUMP_FORMAT BLQ_DUMP_FORMAT /* the newest this code reads */
#define BLQ__DUMP_HEADER 16u
#define BLQ__DUMP_REC_HEADER 12u
#define BLQ__DUMP_META 18u /* format 2's metadata without the queue name */
#define BLQ__DUMP_META_MAX (BLQ__DUMP_META + BLQ_DLQ_QUEUE_MAX)

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
	BLQ__DUMP_BAD_META = -7,     /* a format-2 record's metadata does not fit it */
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

/* A batch's format (0, from a batch made by hand, is 1), or 0 with a
 * message in err when this code does not write it. */
unsigned blq__dump_batch_format(const blq_dump_batch *b, blq_error *err);

/* Writes the 16-byte file header. */
void blq__dump_header_put(unsigned char out[BLQ__DUMP_HEADER], unsigned format, uint64_t version);

/* Checks a file header in n bytes at p: BLQ__DUMP_OK with *format (1 or 2)
 * and *version set, or a damage code. */
int blq__dump_header_check(const unsigned char *p, size_t n, unsigned *format, uint64_t *version);

/* Makes why say nothing (reason unknown, no queue; the name's tail is not
 * touched), and true when it says nothing: no metadata needed. */
void blq__dump_why_clear(blq_dlq_why *why);
bool blq__dump_why_empty(const blq_dlq_why *why);

/* The metadata's size for why (format 2), and its bytes at p. */
size_t blq__dump_meta_size(const blq_dlq_why *why);
void blq__dump_meta_put(unsigned char *p, const blq_dlq_why *why);

/* Fills the 12-byte record header in front of the len bytes at hdr + 12
 * (format 2: metadata and data). */
void blq__dump_rec_seal(unsigned char *hdr, uint32_t len, uint32_t restores);

/* Appends one record of `format` (1: why is ignored; 2: why's metadata,
 * NULL for none) to b. Returns 0, BLQ_ENOMEM or BLQ_EINVAL (len above
 * BLQ_DUMP_RECORD_MAX). */
int blq__dump_rec_append(blq__buf *b, unsigned format, const void *data, size_t len,
			 uint32_t restores, const blq_dlq_why *why);

/* Rewrites b's `count` format-1 records as format-2 ones (empty metadata),
 * resealed. Returns 0 or BLQ_ENOMEM (b unchanged). */
int blq__dump_upgrade(blq__buf *b, size_t count);

/* Parses the record of `format` at p[*off..n): BLQ__DUMP_OK (rec's data,
 * len, restores and why set, *off advanced), BLQ__DUMP_END when *off == n,
 * or a damage code (*off unchanged). Never reads outside p[0..n), never
 * allocates. */
int blq__dump_rec_parse(const unsigned char *p, size_t n, unsigned format, size_t *off,
			blq_dump_record *rec);

/* After damage at `at` (a parse there gave neither BLQ__DUMP_OK nor
 * BLQ__DUMP_END), the next offset past it, scanning byte by byte, where a
 * record of `format` parses whole (blq__dump_rec_parse: within p[0..n),
 * length within BLQ_DUMP_RECORD_MAX, CRC valid, format 2's metadata
 * valid); n when there is none. The bytes skipped are the result minus
 * at. The CRC covers the length, so a false match is as unlikely as a
 * CRC collision, except for bytes that are a whole record themselves (a
 * payload holding a dump record). Deterministic: the same bytes give the
 * same records, so record indices after a resync are stable (the fs
 * checkpoint and the inspector's locations count on it). Every reader
 * resynchronises here and nowhere else. Never reads outside p[0..n),
 * never allocates; a candidate whose length does not fit the file costs
 * no CRC. */
size_t blq__dump_resync(const unsigned char *p, size_t n, unsigned format, size_t at);

/* Bytes taken by the first k records of a well-formed batch. */
size_t blq__dump_rec_span(const unsigned char *p, size_t k);

#endif
