/*
 * The built-in codecs and the writer/reader destructors.
 *
 * Two payload kinds come with the library: NUL-terminated strings and
 * blq_bytes (a length, the bytes, and the restore and delivery counts the
 * restorer fills in on the way back). An encoder copies into the caller's
 * buffer only when the record fits and always returns the length it
 * needs, like snprintf, so the dump grows its buffer and calls again
 * instead of failing; records above BLQ_DUMP_RECORD_MAX are refused. A
 * decoder allocates the payload the target queue then owns.
 */
#include <stdlib.h>
#include <string.h>

#include <blq/dlqdump.h>

blq_bytes *blq_bytes_new(const void *data, size_t len)
{
	if (len > SIZE_MAX - sizeof(blq_bytes) || (data == NULL && len > 0))
		return NULL;
	blq_bytes *b = malloc(sizeof(*b) + len);

	if (b == NULL)
		return NULL;
	b->restores = 0;
	b->deliveries = 0;
	b->len = len;
	if (len > 0)
		memcpy(b->data, data, len);
	return b;
}

static long bytes_encode(void *ctx, const void *payload, void *dst, size_t cap)
{
	const blq_bytes *b = payload;

	(void)ctx;
	if (b == NULL)
		return BLQ_EINVAL;
	if (b->len > (size_t)BLQ_DUMP_RECORD_MAX)
		return BLQ_EINVAL;
	if (b->len <= cap && b->len > 0)
		memcpy(dst, b->data, b->len);
	return (long)b->len;
}

static uint32_t bytes_restores(void *ctx, const void *payload)
{
	(void)ctx;
	return ((const blq_bytes *)payload)->restores;
}

static int bytes_decode(void *ctx, const blq_dump_record *rec, void **payload)
{
	blq_bytes *b = blq_bytes_new(rec->data, rec->len);

	(void)ctx;
	if (b == NULL)
		return BLQ_ENOMEM;
	b->restores = rec->restores;
	b->deliveries = rec->deliveries;
	*payload = b;
	return 0;
}

static long string_encode(void *ctx, const void *payload, void *dst, size_t cap)
{
	(void)ctx;
	if (payload == NULL)
		return BLQ_EINVAL;
	size_t n = strlen(payload);
	if (n > (size_t)BLQ_DUMP_RECORD_MAX)
		return BLQ_EINVAL;
	if (n <= cap && n > 0)
		memcpy(dst, payload, n);
	return (long)n;
}

static int string_decode(void *ctx, const blq_dump_record *rec, void **payload)
{
	char *s = malloc(rec->len + 1);

	(void)ctx;
	if (s == NULL)
		return BLQ_ENOMEM;
	if (rec->len > 0)
		memcpy(s, rec->data, rec->len);
	s[rec->len] = '\0';
	*payload = s;
	return 0;
}

blq_dump_encoder blq_dump_bytes_encoder(void)
{
	return (blq_dump_encoder){.encode = bytes_encode, .restores = bytes_restores};
}

blq_dump_decoder blq_dump_bytes_decoder(void)
{
	return (blq_dump_decoder){.decode = bytes_decode};
}

blq_dump_encoder blq_dump_string_encoder(void)
{
	return (blq_dump_encoder){.encode = string_encode};
}

blq_dump_decoder blq_dump_string_decoder(void)
{
	return (blq_dump_decoder){.decode = string_decode};
}

void blq_dump_writer_free(blq_dump_writer *w)
{
	if (w != NULL && w->destroy != NULL)
		w->destroy(w);
}

void blq_dump_reader_free(blq_dump_reader *r)
{
	if (r != NULL && r->destroy != NULL)
		r->destroy(r);
}
