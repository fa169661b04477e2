/*
 * The Redis reader: stream entries through a consumer group.
 *
 * Design
 * - A dump is one reply of up to read_count entries, taken in this order:
 *   1. this consumer's own pending entries (XREADGROUP ... 0): what a
 *      release or a crash of a restorer with the same consumer name left;
 *   2. entries another consumer left pending longer than claim_idle_ns
 *      (XAUTOCLAIM): that consumer died mid-dump. Looked for at most every
 *      claim_idle_ns / 4 while none turn up: XAUTOCLAIM walks the pending
 *      list, which holds every entry in flight (about 1.2 ms a call with
 *      1,000 of them, on every poll it cost a third of the restore rate),
 *      and no entry can go idle faster than that;
 *   3. new entries (XREADGROUP ... >).
 *   The group hands each entry to one consumer, so restorers sharing the
 *   stream never take the same entry under normal operation. Step 1 runs
 *   only while no dump of this reader is open (our pending entries include
 *   those open dumps' entries).
 * - Entries from steps 1 and 2 are redeliveries: XPENDING gives their
 *   delivery counts (the current delivery included), handed out as
 *   blq_dump_record.deliveries = count - 1.
 * - record() checks each entry: fields v and r (a format-1 record) or r2
 *   (format 2: with why the item was dead-lettered) present, v equal to
 *   the reader's version, the record field exactly one well-formed record
 *   (length, CRC, metadata). A bad entry is copied to "<key>:quarantine"
 *   (with its id and the reason) and acked with the rest: set aside, never
 *   deleted unseen; counted by the restorer through the host it lends
 *   (blq_dump_reader.host), and logged through its logger when the
 *   reader has none of its own. One record per entry: no resync here.
 * - done() queues an entry's ack; sync() (or a full queue of ACK_BATCH
 *   acks) sends XACK and XDEL for them, pipelined. Until then an entry
 *   stays pending, so a crash anywhere before it means it is delivered
 *   again: at least once. commit() syncs; release() syncs what is done
 *   and leaves the rest pending for this consumer (step 1).
 * - refresh() re-claims (XCLAIM ... JUSTID: no delivery counted) the
 *   entries of a dump that are not done, every claim_idle_ns / 4, so a
 *   live restorer whose items wait long in its target keeps them: only a
 *   dead (or cut-off) one's entries go idle long enough to be taken over.
 * - A lapsed claim: when no refresh succeeded for claim_idle_ns (the link
 *   was down), another consumer may own the dump's entries by now. The
 *   dump then hands out no more entries and refreshes nothing: it only
 *   acks what it finished. Entries it had not handed out belong to
 *   whoever claimed them, or stay in our pending list (step 1 takes them
 *   back, as redeliveries). So a consumer cut off for a while adds no
 *   duplicates beyond what it had in flight.
 * - A missing group (a fresh server, a deleted key) is created again
 *   (XGROUP CREATE ... 0 MKSTREAM); I/O errors drop the connection and the
 *   restorer tries again at its next check (redis_conn.c backs off).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errorf.h"
#include "dump_format.h"
#include "dump_util.h"
#include "redis_conn.h"
#include "redis_entry.h"

#define DEFAULT_READ_COUNT 512u
#define DEFAULT_CLAIM_IDLE 60000000000ull
/* Acks queued by done() before they are sent without waiting for sync(). */
#define ACK_BATCH 256u

typedef struct redis_reader {
	blq_dump_reader r; /* first */
	blq__redis conn;
	char key[256], qkey[300], group[128], consumer[128];
	char count[24], idle_ms[24];
	uint64_t version;
	uint64_t claim_idle_ns;
	bool own_pending; /* look at our own pending entries first */
	uint64_t next_claim_ns; /* XAUTOCLAIM not before this (monotonic) */
	unsigned open;    /* dumps handed out, not committed or released */
	char name[BLQ__DUMP_NAME_MAX + 1];
	bool named; /* name configured: else its restorer's (host) */
	const blq_dump_metrics *metrics;
	blq_logger logger;
} redis_reader;

/* The logger and the name of reports: the reader's own, else its
 * restorer's (blq_dump_reader.host). */
static const blq_logger *log_to(const redis_reader *rr)
{
	return blq__reader_logger(&rr->r, &rr->logger);
}

static const char *name_of(const redis_reader *rr)
{
	return blq__reader_name(&rr->r, rr->named, rr->name);
}

typedef struct redis_dump {
	redisReply *reply;
	redisReply *entries; /* inside reply: [[id, [f, v, ...]], ...] */
	size_t next;
	uint32_t *deliveries; /* per entry, earlier deliveries; NULL: all 0 */
	unsigned char *acked; /* per entry: 1 once acked (or being acked) */
	size_t *acks;         /* entries done, ack not sent yet */
	size_t nacks;
	uint64_t refreshed_ns; /* last claim (read or refresh) that succeeded */
	bool lapsed;           /* no more entries handed out (see above) */
} redis_dump;

static int reply_error(redis_reader *rr, const char *cmd, redisReply *rep, blq_error *err)
{
	blq__error_set(err, BLQ_EIO, "redis %s: %s %s: %.*s", rr->conn.addr, cmd, rr->key,
		       (int)rep->len, rep->str);
	freeReplyObject(rep);
	return BLQ_EIO;
}

static int make_group(redis_reader *rr, blq_error *err)
{
	const char *argv[] = {"XGROUP", "CREATE", rr->key, rr->group, "0", "MKSTREAM"};
	size_t lens[] = {6, 6, strlen(rr->key), strlen(rr->group), 1, 8};
	redisReply *rep = blq__redis_call(&rr->conn, 6, argv, lens, err);

	if (rep == NULL)
		return BLQ_EIO;
	if (rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "BUSYGROUP", 9) != 0)
		return reply_error(rr, "XGROUP CREATE", rep, err);
	freeReplyObject(rep);
	return 0;
}

/* XREADGROUP from `from` ("0": own pending, ">": new). Sets *entries
 * (NULL when none). */
static redisReply *read_group(redis_reader *rr, const char *from, redisReply **entries,
			      blq_error *err)
{
	const char *argv[] = {"XREADGROUP", "GROUP", rr->group, rr->consumer, "COUNT",
			      rr->count, "STREAMS", rr->key, from};
	size_t lens[9];
	for (int i = 0; i < 9; i++)
		lens[i] = strlen(argv[i]);
	redisReply *rep = blq__redis_call(&rr->conn, 9, argv, lens, err);

	*entries = NULL;
	if (rep == NULL)
		return NULL;
	if (rep->type == REDIS_REPLY_ERROR) {
		bool nogroup = strncmp(rep->str, "NOGROUP", 7) == 0;
		reply_error(rr, "XREADGROUP", rep, err);
		if (nogroup) /* the server lost the group: make it for next time */
			make_group(rr, err);
		return NULL;
	}
	if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1) {
		redisReply *s = rep->element[0];
		if (s->type == REDIS_REPLY_ARRAY && s->elements == 2 &&
		    s->element[1]->type == REDIS_REPLY_ARRAY && s->element[1]->elements > 0)
			*entries = s->element[1];
	}
	return rep;
}

/* XAUTOCLAIM entries idle longer than claim_idle_ns, following the cursor a
 * few steps. */
static redisReply *claim(redis_reader *rr, redisReply **entries, blq_error *err)
{
	char cursor[64] = "0-0";

	*entries = NULL;
	for (int step = 0; step < 16; step++) {
		const char *argv[] = {"XAUTOCLAIM", rr->key, rr->group, rr->consumer,
				      rr->idle_ms, cursor, "COUNT", rr->count};
		size_t lens[8];
		for (int i = 0; i < 8; i++)
			lens[i] = strlen(argv[i]);
		redisReply *rep = blq__redis_call(&rr->conn, 8, argv, lens, err);
		if (rep == NULL)
			return NULL;
		if (rep->type == REDIS_REPLY_ERROR) {
			bool nogroup = strncmp(rep->str, "NOGROUP", 7) == 0;
			reply_error(rr, "XAUTOCLAIM", rep, err);
			if (nogroup && make_group(rr, err) == 0)
				err->code = 0; /* nothing to claim in a new group: read new entries */
			return NULL;
		}
		if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 2 ||
		    !blq__redis_is_str(rep->element[0]) || rep->element[1]->type != REDIS_REPLY_ARRAY) {
			freeReplyObject(rep);
			blq__error_set(err, BLQ_EIO, "redis %s: XAUTOCLAIM: unexpected reply",
				       rr->conn.addr);
			return NULL;
		}
		if (rep->element[1]->elements > 0) {
			*entries = rep->element[1];
			return rep;
		}
		snprintf(cursor, sizeof(cursor), "%.*s", (int)rep->element[0]->len,
			 rep->element[0]->str);
		freeReplyObject(rep);
		if (strcmp(cursor, "0-0") == 0)
			return NULL;
	}
	return NULL;
}

static const redisReply *entry_id(const redis_dump *d, size_t i)
{
	const redisReply *e = d->entries->element[i];

	return e->type == REDIS_REPLY_ARRAY && e->elements >= 1 && blq__redis_is_str(e->element[0])
		       ? e->element[0]
		       : NULL;
}

/* Fills d->deliveries from XPENDING over the dump's id range (this
 * consumer's entries; both lists are in id order). Best effort: without
 * it every entry of a redelivered dump counts one earlier delivery. */
static void delivery_counts(redis_reader *rr, redis_dump *d)
{
	size_t n = d->entries->elements;
	const redisReply *first = NULL, *last = NULL;

	d->deliveries = malloc(n * sizeof(*d->deliveries));
	if (d->deliveries == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		d->deliveries[i] = 1;
		const redisReply *id = entry_id(d, i);
		if (id != NULL) {
			if (first == NULL)
				first = id;
			last = id;
		}
	}
	if (first == NULL)
		return;
	char cnt[24];
	snprintf(cnt, sizeof(cnt), "%zu", n);
	const char *argv[] = {"XPENDING", rr->key, rr->group, first->str, last->str, cnt,
			      rr->consumer};
	size_t lens[] = {8, strlen(rr->key), strlen(rr->group), first->len, last->len,
			 strlen(cnt), strlen(rr->consumer)};
	blq_error ignored;
	redisReply *rep = blq__redis_call(&rr->conn, 7, argv, lens, &ignored);
	if (rep == NULL)
		return;
	size_t j = 0;
	for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
		const redisReply *p = rep->element[i];
		if (p->type != REDIS_REPLY_ARRAY || p->elements < 4 || !blq__redis_is_str(p->element[0]) ||
		    p->element[3]->type != REDIS_REPLY_INTEGER)
			continue;
		for (; j < n; j++) {
			const redisReply *id = entry_id(d, j);
			if (id != NULL && id->len == p->element[0]->len &&
			    memcmp(id->str, p->element[0]->str, id->len) == 0) {
				long long times = p->element[3]->integer;
				d->deliveries[j] = times > 1 ? (uint32_t)(times - 1) : 0;
				j++;
				break;
			}
		}
	}
	freeReplyObject(rep);
}

static int rr_next(blq_dump_reader *rd, void **dump, blq_error *err)
{
	redis_reader *rr = (redis_reader *)rd;
	redisReply *rep = NULL, *entries = NULL;
	blq_error local;

	if (err == NULL)
		err = &local;
	err->code = 0;
	bool redelivery = true;
	if (rr->own_pending && rr->open == 0) {
		rep = read_group(rr, "0", &entries, err);
		if (rep == NULL)
			return err->code ? err->code : BLQ_EIO;
		if (entries == NULL) {
			freeReplyObject(rep);
			rep = NULL;
			rr->own_pending = false;
		}
	}
	uint64_t now = blq__monotonic_ns();
	if (entries == NULL && now >= rr->next_claim_ns) {
		rep = claim(rr, &entries, err);
		if (rep == NULL && err->code != 0)
			return err->code;
		if (entries == NULL) /* none idle: look again a quarter later */
			rr->next_claim_ns = now + rr->claim_idle_ns / 4;
	}
	if (entries == NULL) {
		redelivery = false;
		rep = read_group(rr, ">", &entries, err);
		if (rep == NULL)
			return err->code ? err->code : BLQ_EIO;
		if (entries == NULL) {
			freeReplyObject(rep);
			return 0;
		}
	}
	redis_dump *d = calloc(1, sizeof(*d));
	size_t n = entries->elements;
	if (d != NULL) {
		d->acked = calloc(n, 1);
		d->acks = calloc(n, sizeof(*d->acks));
	}
	if (d == NULL || d->acked == NULL || d->acks == NULL) {
		if (d != NULL) {
			free(d->acked);
			free(d->acks);
			free(d);
		}
		freeReplyObject(rep);
		rr->own_pending = true; /* they are ours now: read them again */
		return blq__error_set(err, BLQ_ENOMEM, "redis reader: out of memory");
	}
	d->reply = rep;
	d->entries = entries;
	d->refreshed_ns = blq__monotonic_ns();
	if (redelivery)
		delivery_counts(rr, d);
	rr->open++;
	*dump = d;
	return 1;
}

/* Copies a bad entry to the quarantine stream (its record field under
 * its own name, rf). */
static int quarantine(redis_reader *rr, const redisReply *id, const redisReply *v,
		      const char *rf, const redisReply *r, const char *why, blq_error *err)
{
	/* 7 + v + the record: 11 arguments at most. */
	const char *argv[11] = {"XADD", rr->qkey, "*", "id", id->str, "reason", why};
	size_t lens[11] = {4, strlen(rr->qkey), 1, 2, id->len, 6, strlen(why)};
	int argc = 7;

	if (v != NULL) {
		argv[argc] = "v";
		lens[argc++] = 1;
		argv[argc] = v->str;
		lens[argc++] = v->len;
	}
	if (r != NULL) {
		argv[argc] = rf;
		lens[argc++] = strlen(rf);
		argv[argc] = r->str;
		lens[argc++] = r->len;
	}
	redisReply *rep = blq__redis_call(&rr->conn, argc, argv, lens, err);
	if (rep == NULL)
		return BLQ_EIO;
	if (rep->type == REDIS_REPLY_ERROR)
		return reply_error(rr, "XADD (quarantine)", rep, err);
	freeReplyObject(rep);
	blq__dlog(log_to(rr), BLQ_LOG_WARN, "dump %s: redis %s: entry %.*s of %s: %s; moved to %s",
		  name_of(rr), rr->conn.addr, (int)id->len, id->str, rr->key, why, rr->qkey);
	if (rr->metrics != NULL && rr->metrics->quarantined != NULL)
		rr->metrics->quarantined(rr->metrics->ctx, rr->name, 1);
	if (rr->r.host != NULL && rr->r.host->quarantined != NULL)
		rr->r.host->quarantined(rr->r.host->ctx, 1, 0);
	return 0;
}

static void queue_ack(redis_dump *d, size_t i)
{
	if (d->acked[i])
		return;
	d->acked[i] = 1;
	d->acks[d->nacks++] = i;
}

/* True once the dump's claim may belong to another consumer. */
static bool lapsed(redis_reader *rr, redis_dump *d)
{
	if (!d->lapsed && blq__monotonic_ns() - d->refreshed_ns >= rr->claim_idle_ns) {
		d->lapsed = true;
		blq__dlog(log_to(rr), BLQ_LOG_WARN,
			  "dump %s: redis %s: no claim refresh for claim_idle_ns: the rest of a "
			  "batch of %zu entries is left to whoever claims it",
			  name_of(rr), rr->conn.addr, d->entries->elements - d->next);
	}
	return d->lapsed;
}

static int rr_record(blq_dump_reader *rd, void *dump, blq_dump_record *rec, blq_error *err)
{
	redis_reader *rr = (redis_reader *)rd;
	redis_dump *d = dump;

	if (d->next < d->entries->elements && lapsed(rr, d)) {
		rr->own_pending = true; /* what is still ours comes back from step 1 */
		return 0;
	}

	while (d->next < d->entries->elements) {
		size_t i = d->next++;
		const redisReply *e = d->entries->element[i];

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 || !blq__redis_is_str(e->element[0]) ||
		    e->element[1]->type != REDIS_REPLY_ARRAY) {
			/* Deleted meanwhile (nil fields): nothing to restore,
			 * but still pending: ack it. */
			queue_ack(d, i);
			continue;
		}
		const redisReply *v, *r;
		const char *rf;
		const char *why = blq__redis_entry_check(e->element[1], &rr->version, &v, &rf, &r, rec);
		if (why == NULL) {
			rec->index = i;
			rec->deliveries = d->deliveries != NULL ? d->deliveries[i] : 0;
			return 1;
		}
		int rc = quarantine(rr, e->element[0], v, rf, r, why, err);
		if (rc != 0)
			return rc;
		queue_ack(d, i); /* set aside: the copy is in the quarantine */
	}
	return 0;
}

static void dump_free(redis_reader *rr, redis_dump *d)
{
	rr->open--;
	freeReplyObject(d->reply);
	free(d->deliveries);
	free(d->acked);
	free(d->acks);
	free(d);
}

/* Appends `cmd key [group] pre... ids... [post]` for the given entries to
 * the pipeline. 0 or BLQ_EIO / BLQ_ENOMEM. */
static int append_ids(redis_reader *rr, const char *cmd, bool with_group, const char *const *pre,
		      int npre, const char *post, const redis_dump *d, const size_t *idx, size_t n,
		      blq_error *err)
{
	size_t argc = 0, max = n + 8;
	const char **argv = malloc(max * sizeof(*argv));
	size_t *lens = malloc(max * sizeof(*lens));
	int rc = 0;

	if (argv == NULL || lens == NULL) {
		rc = blq__error_set(err, BLQ_ENOMEM, "redis reader: out of memory");
		goto out;
	}
	argv[argc] = cmd;
	lens[argc++] = strlen(cmd);
	argv[argc] = rr->key;
	lens[argc++] = strlen(rr->key);
	if (with_group) {
		argv[argc] = rr->group;
		lens[argc++] = strlen(rr->group);
	}
	for (int k = 0; k < npre; k++) {
		argv[argc] = pre[k];
		lens[argc++] = strlen(pre[k]);
	}
	for (size_t i = 0; i < n; i++) {
		const redisReply *id = entry_id(d, idx[i]);
		if (id != NULL) {
			argv[argc] = id->str;
			lens[argc++] = id->len;
		}
	}
	if (post != NULL) {
		argv[argc] = post;
		lens[argc++] = strlen(post);
	}
	if (redisAppendCommandArgv(rr->conn.c, (int)argc, argv, lens) != REDIS_OK) {
		blq__redis_drop(&rr->conn, err);
		rc = BLQ_EIO;
	}
out:
	free(argv);
	free(lens);
	return rc;
}

/* Reads n pipelined replies; the first error reply becomes the result. */
static int read_replies(redis_reader *rr, int n, const char *const *names, blq_error *err)
{
	int rc = 0;

	for (int k = 0; k < n; k++) {
		redisReply *rep = NULL;
		if (redisGetReply(rr->conn.c, (void **)&rep) != REDIS_OK) {
			blq__redis_drop(&rr->conn, err);
			return BLQ_EIO;
		}
		if (rep->type == REDIS_REPLY_ERROR && rc == 0)
			rc = reply_error(rr, names[k], rep, err);
		else
			freeReplyObject(rep);
	}
	return rc;
}

static int rr_sync(blq_dump_reader *rd, void *dump, blq_error *err)
{
	redis_reader *rr = (redis_reader *)rd;
	redis_dump *d = dump;
	static const char *const names[] = {"XACK", "XDEL"};
	int rc;

	if (d->nacks == 0)
		return 0;
	if ((rc = blq__redis_ready(&rr->conn, err)) != 0)
		return rc;
	/* XACK key group ids..., then XDEL key ids... (same ids, pipelined):
	 * the entry leaves the group's pending list and the stream. */
	if ((rc = append_ids(rr, "XACK", true, NULL, 0, NULL, d, d->acks, d->nacks, err)) != 0 ||
	    (rc = append_ids(rr, "XDEL", false, NULL, 0, NULL, d, d->acks, d->nacks, err)) != 0 ||
	    (rc = read_replies(rr, 2, names, err)) != 0)
		return rc;
	d->nacks = 0;
	return 0;
}

static int rr_done(blq_dump_reader *rd, void *dump, uint64_t index, blq_error *err)
{
	redis_dump *d = dump;

	if (index >= d->next)
		return blq__error_set(err, BLQ_EINVAL, "done: entry %llu was not handed out",
				      (unsigned long long)index);
	queue_ack(d, (size_t)index);
	/* A failed early send is not an error: the acks stay queued for sync. */
	if (d->nacks >= ACK_BATCH) {
		blq_error ignored;
		rr_sync(rd, dump, &ignored);
	}
	return 0;
}

static int rr_commit(blq_dump_reader *rd, void *dump, blq_error *err)
{
	redis_reader *rr = (redis_reader *)rd;
	redis_dump *d = dump;
	int rc = 0;

	for (size_t i = 0; i < d->next; i++)
		if (!d->acked[i]) {
			rc = blq__error_set(err, BLQ_EINVAL, "commit before entry %zu was done", i);
			break;
		}
	if (rc == 0 && d->next < d->entries->elements && !d->lapsed)
		rc = blq__error_set(err, BLQ_EINVAL, "commit before the last entry was read");
	if (rc == 0)
		rc = rr_sync(rd, dump, err);
	if (rc != 0)
		return rc; /* still open: commit or release it again */
	dump_free(rr, d);
	return 0;
}

static void rr_release(blq_dump_reader *rd, void *dump)
{
	redis_reader *rr = (redis_reader *)rd;
	blq_error err = {0, ""};

	if (rr_sync(rd, dump, &err) != 0)
		blq__dlog(log_to(rr), BLQ_LOG_WARN,
			  "dump %s: redis %s: acks of done entries failed (%s); they will come "
			  "again",
			  name_of(rr), rr->conn.addr, err.msg);
	rr->own_pending = true;
	dump_free(rr, dump);
}

static int rr_refresh(blq_dump_reader *rd, void *dump, blq_error *err)
{
	redis_reader *rr = (redis_reader *)rd;
	redis_dump *d = dump;
	uint64_t now = blq__monotonic_ns();
	static const char *const names[] = {"XCLAIM"};

	if (now - d->refreshed_ns < rr->claim_idle_ns / 4 || lapsed(rr, d))
		return 0; /* not due, or not ours to keep any more */
	size_t *idx = malloc((d->entries->elements ? d->entries->elements : 1) * sizeof(*idx)),
	       n = 0;
	if (idx == NULL)
		return blq__error_set(err, BLQ_ENOMEM, "redis reader: out of memory");
	for (size_t i = 0; i < d->next; i++)
		if (!d->acked[i])
			idx[n++] = i;
	/* Entries not handed out yet are ours too: keep them as well. */
	for (size_t i = d->next; i < d->entries->elements; i++)
		idx[n++] = i;
	int rc = 0;
	if (n > 0) {
		/* XCLAIM key group consumer min-idle-time ids... JUSTID */
		const char *pre[] = {rr->consumer, "0"};
		if ((rc = blq__redis_ready(&rr->conn, err)) == 0 &&
		    (rc = append_ids(rr, "XCLAIM", true, pre, 2, "JUSTID", d, idx, n, err)) == 0)
			rc = read_replies(rr, 1, names, err);
	}
	free(idx);
	if (rc == 0)
		d->refreshed_ns = now;
	return rc;
}

static void rr_destroy(blq_dump_reader *rd)
{
	redis_reader *rr = (redis_reader *)rd;

	blq__redis_close(&rr->conn);
	free(rr);
}

static _Atomic unsigned consumer_seq;

blq_dump_reader *blq_dump_redis_reader_new(const blq_dump_redis_config *cfg, blq_error *err)
{
	if (cfg == NULL) {
		blq__error_set(err, BLQ_EINVAL, "config: NULL");
		return NULL;
	}
	const char *group = cfg->group ? cfg->group : "blq";
	if (group[0] == '\0' || strlen(group) >= 128) {
		blq__error_set(err, BLQ_EINVAL, "group: must be 1..127 bytes");
		return NULL;
	}
	if (cfg->consumer != NULL && (cfg->consumer[0] == '\0' || strlen(cfg->consumer) >= 128)) {
		blq__error_set(err, BLQ_EINVAL, "consumer: must be 1..127 bytes");
		return NULL;
	}
	if (blq__dump_check_logger(&cfg->logger, "logger", err) != 0)
		return NULL;
	if (cfg->claim_idle_ns != 0 && cfg->claim_idle_ns < 1000000u) {
		blq__error_set(err, BLQ_EINVAL,
			       "claim_idle_ns: must be at least 1 ms (0: the default 60 s), got %llu",
			       (unsigned long long)cfg->claim_idle_ns);
		return NULL;
	}
	if (cfg->read_count > 100000) {
		blq__error_set(err, BLQ_EINVAL, "read_count: must be <= 100000 entries per dump, got %zu",
			       cfg->read_count);
		return NULL;
	}
	redis_reader *rr = calloc(1, sizeof(*rr));
	if (rr == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "redis reader: out of memory");
		return NULL;
	}
	rr->named = cfg->name != NULL;
	if (blq__dump_name(rr->name, cfg->name, "restorer", err) != 0 ||
	    blq__redis_open(&rr->conn, cfg, err) != 0) {
		free(rr);
		return NULL;
	}
	snprintf(rr->key, sizeof(rr->key), "%s", cfg->key);
	snprintf(rr->qkey, sizeof(rr->qkey), "%s:quarantine", cfg->key);
	snprintf(rr->group, sizeof(rr->group), "%s", group);
	if (cfg->consumer != NULL) {
		snprintf(rr->consumer, sizeof(rr->consumer), "%s", cfg->consumer);
	} else {
		char host[64] = "host";
		gethostname(host, sizeof(host) - 1);
		snprintf(rr->consumer, sizeof(rr->consumer), "%s-%ld-%u", host, (long)getpid(),
			 atomic_fetch_add(&consumer_seq, 1));
	}
	snprintf(rr->count, sizeof(rr->count), "%zu",
		 cfg->read_count ? cfg->read_count : (size_t)DEFAULT_READ_COUNT);
	rr->claim_idle_ns = cfg->claim_idle_ns ? cfg->claim_idle_ns : DEFAULT_CLAIM_IDLE;
	snprintf(rr->idle_ms, sizeof(rr->idle_ms), "%llu",
		 (unsigned long long)(rr->claim_idle_ns / 1000000u));
	rr->version = cfg->version;
	rr->own_pending = true;
	rr->metrics = cfg->metrics;
	rr->logger = cfg->logger;
	if (make_group(rr, err) != 0) {
		blq__redis_close(&rr->conn);
		free(rr);
		if (err != NULL)
			err->code = BLQ_EINVAL;
		return NULL;
	}
	rr->r.next = rr_next;
	rr->r.record = rr_record;
	rr->r.done = rr_done;
	rr->r.sync = rr_sync;
	rr->r.commit = rr_commit;
	rr->r.refresh = rr_refresh;
	rr->r.release = rr_release;
	rr->r.destroy = rr_destroy;
	return &rr->r;
}
