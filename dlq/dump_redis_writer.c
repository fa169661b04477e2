/*
 * The Redis writer: one stream entry per record.
 *
 * Design
 * - Why a stream and not a list: a consumer group hands each entry to one
 *   consumer and keeps it pending until acked, so several restorers (on
 *   several machines) share one dump without taking an entry twice, and a
 *   crashed restorer's entries are taken over (XAUTOCLAIM) instead of lost.
 *   A list would need LMOVE into per-consumer lists plus a sweeper for
 *   dead consumers' lists: the same thing built by hand.
 * - Entry: XADD <key> * v <version> r <record>, where <record> is the
 *   record exactly as in a dump file (len, restores, crc32c, bytes), so a
 *   reader checks it the same way. A format-2 record (with why the item
 *   was dead-lettered) goes in field r2 instead: a reader older than
 *   format 2 finds no r and sets the entry aside rather than misreading
 *   the metadata as the item.
 * - Commands are built with redisAppendCommandArgv (binary-safe lengths,
 *   never %s) and pipelined, `pipeline` per round trip; replies come back
 *   in order, so the count of good replies before a failure is the count
 *   of records known durable.
 * - A failure (I/O, timeout, an error reply) drops the connection: the
 *   dump retries the records after the good ones (entries the server
 *   took without our reading the reply become duplicates, never losses),
 *   and the next attempt reconnects after the backoff (redis_conn.c).
 * - The constructor checks the config and does not connect: the first
 *   write does, so a writer made while Redis is down is a writer during an
 *   outage (its batches go to the dump's fallback, or wait and retry)
 *   rather than a service that cannot start.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errorf.h"
#include "dump_format.h"
#include "redis_conn.h"

#define DEFAULT_PIPELINE 1024u

typedef struct redis_writer {
	blq_dump_writer w; /* first */
	blq__redis conn;
	char key[256];
	size_t pipeline;
} redis_writer;

static int rw_write(blq_dump_writer *w, const blq_dump_batch *b, size_t *done, blq_error *err)
{
	redis_writer *rw = (redis_writer *)w;
	char ver[24];
	size_t off = 0, i = 0;

	*done = 0;
	unsigned format = blq__dump_batch_format(b, err);
	if (format == 0)
		return BLQ_EINVAL;
	const char *field = format == 1 ? "r" : "r2";
	if (blq__redis_ready(&rw->conn, err) != 0)
		return BLQ_EIO;
	int vlen = snprintf(ver, sizeof(ver), "%llu", (unsigned long long)b->version);
	while (i < b->count) {
		size_t n = 0;

		for (; i < b->count && n < rw->pipeline; i++, n++) {
			size_t rec = BLQ__DUMP_REC_HEADER + blq__get32(b->data + off);
			const char *argv[7] = {"XADD", rw->key, "*", "v", ver, field,
					       (const char *)b->data + off};
			size_t lens[7] = {4, strlen(rw->key), 1, 1, (size_t)vlen, strlen(field), rec};

			if (redisAppendCommandArgv(rw->conn.c, 7, argv, lens) != REDIS_OK) {
				blq__redis_drop(&rw->conn, err);
				return BLQ_EIO;
			}
			off += rec;
		}
		for (size_t k = 0; k < n; k++) {
			redisReply *rep = NULL;

			if (redisGetReply(rw->conn.c, (void **)&rep) != REDIS_OK) {
				blq__redis_drop(&rw->conn, err);
				return BLQ_EIO;
			}
			if (rep->type == REDIS_REPLY_ERROR) {
				blq__error_set(err, BLQ_EIO, "redis %s: XADD %s: %.*s", rw->conn.addr,
					       rw->key, (int)rep->len, rep->str);
				freeReplyObject(rep);
				/* Later replies are still queued: start clean. */
				redisFree(rw->conn.c);
				rw->conn.c = NULL;
				return BLQ_EIO;
			}
			freeReplyObject(rep);
			(*done)++;
		}
	}
	return 0;
}

static void rw_destroy(blq_dump_writer *w)
{
	redis_writer *rw = (redis_writer *)w;

	blq__redis_close(&rw->conn);
	free(rw);
}

blq_dump_writer *blq_dump_redis_writer_new(const blq_dump_redis_config *cfg, blq_error *err)
{
	if (cfg == NULL) {
		blq__error_set(err, BLQ_EINVAL, "config: NULL");
		return NULL;
	}
	redis_writer *rw = calloc(1, sizeof(*rw));
	if (rw == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "redis writer: out of memory");
		return NULL;
	}
	/* No connection yet: the first write makes it (redis_conn.c), so a
	 * dump starts while Redis is down. */
	if (blq__redis_setup(&rw->conn, cfg, err) != 0) {
		free(rw);
		return NULL;
	}
	snprintf(rw->key, sizeof(rw->key), "%s", cfg->key);
	rw->pipeline = cfg->pipeline ? cfg->pipeline : DEFAULT_PIPELINE;
	rw->w.write = rw_write;
	rw->w.destroy = rw_destroy;
	return &rw->w;
}
