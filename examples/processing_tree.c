/*
 * processing_tree: a worker built from steps (include/blq/workers.h).
 *
 *   queue "ingest"  worker = chain( parse,
 *                                   async_chain( index, notify ),   <- in parallel
 *                                   transit( queue "store" ) )
 *   queue "store"   worker = store
 *
 * Steps before the last only borrow the document; transit hands it to the
 * "store" queue, which from then on owns it. The index step fails the
 * first time it sees every fifth document (a busy index), so "ingest"
 * retries those. A retry re-runs the whole chain from its first step: parse
 * and notify run again too, though they had succeeded. So every step of a
 * chain must be idempotent (parsing twice is harmless; a notification sent
 * twice may not be), or the steps are joined through queues with transit,
 * each queue retrying only its own step.
 *
 * What to look at: the run counts per step, and that every document was
 * stored exactly once.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <blq/blq.h>

#include "example_util.h"

#define DOCS 1000u
#define BUSY 9 /* the index step's failure code */

typedef struct doc {
	unsigned id;
	/* Each field is written by one step only; the chain orders the steps
	 * (the async chain returns after both of its steps finished). */
	unsigned parsed, indexed, notified;
	bool index_was_busy;
} doc;

static atomic_uint parse_runs, notify_runs, stored, stored_right;

static int parse(void *ctx, void *payload, blq_task *task)
{
	doc *d = payload;

	(void)ctx, (void)task;
	d->parsed++; /* idempotent: it would derive the same fields again */
	atomic_fetch_add(&parse_runs, 1);
	return 0;
}

static int index_doc(void *ctx, void *payload, blq_task *task)
{
	doc *d = payload;

	(void)ctx, (void)task;
	if (d->id % 5 == 0 && !d->index_was_busy) {
		d->index_was_busy = true;
		return BUSY; /* the chain stops here; the queue will retry */
	}
	d->indexed++;
	return 0;
}

static int notify(void *ctx, void *payload, blq_task *task)
{
	doc *d = payload;

	(void)ctx, (void)task;
	d->notified++; /* runs beside index_doc, even when that one fails */
	atomic_fetch_add(&notify_runs, 1);
	return 0;
}

/* The "store" queue's worker: the end of the tree; it owns the document. */
static int store(void *ctx, void *payload, blq_task *task)
{
	doc *d = payload;
	unsigned runs = d->id % 5 == 0 ? 2 : 1; /* the flaky ones ran twice */

	(void)ctx, (void)task;
	atomic_fetch_add(&stored, 1);
	if (d->parsed == runs && d->notified == runs && d->indexed == 1)
		atomic_fetch_add(&stored_right, 1);
	free(d);
	return 0;
}

int main(void)
{
	blq_error err;
	blq_config sc = {.name = "store", .capacity = 256, .workers = 2, .worker = store,
			 .item_free = free};
	blq *storeq = blq_new(&sc, &err);
	if (storeq == NULL) {
		fprintf(stderr, "processing_tree: store: %s\n", err.msg);
		return 1;
	}

	/* Build the tree from its leaves up. */
	blq_worker both[] = {{index_doc, NULL}, {notify, NULL}};
	blq_async_config ac = {.steps = both, .n = 2}; /* no `done`: a later step takes it */
	blq_async_chain *par = blq_async_chain_new(&ac, &err);
	if (par == NULL) {
		fprintf(stderr, "processing_tree: async chain: %s\n", err.msg);
		return 1;
	}
	blq_enqueuer to_store; /* storage for the transit worker's target */
	blq_worker steps[] = {{parse, NULL}, blq_async_chain_worker(par),
			      blq_transit_worker(&to_store, blq_as_enqueuer(storeq))};
	blq_chain *chain = blq_chain_new(steps, 3, &err);
	if (chain == NULL) {
		fprintf(stderr, "processing_tree: chain: %s\n", err.msg);
		return 1;
	}
	/* The chain is a worker like any other: {fn, ctx}. */
	blq_worker top = blq_chain_worker(chain);
	blq_config ic = {.name = "ingest", .capacity = 256, .workers = 2, .worker = top.fn,
			 .worker_ctx = top.ctx, .item_free = free, .max_retries = 3,
			 .retry_interval_ns = 1000000};
	blq *ingest = blq_new(&ic, &err);
	if (ingest == NULL) {
		fprintf(stderr, "processing_tree: ingest: %s\n", err.msg);
		return 1;
	}

	for (unsigned i = 0; i < DOCS; i++) {
		doc *d = calloc(1, sizeof(*d));
		if (d == NULL)
			break;
		d->id = i;
		int rc = blq_enqueue(ingest, d);
		if (rc != 0) {
			fprintf(stderr, "processing_tree: enqueue: %s\n", blq_strerror(rc));
			free(d); /* refused: still ours */
		}
	}
	/* Close from the root: ingest still hands documents to store while it
	 * drains. The chains go after every queue that uses them. */
	blq_close(ingest);
	blq_close(storeq);

	struct blq_stats is;
	blq_stats(ingest, &is);
	printf("documents %u: parse ran %u times, notify %u, ingest retried %llu\n", DOCS,
	       atomic_load(&parse_runs), atomic_load(&notify_runs), (unsigned long long)is.retried);
	printf("checks:\n");
	ex_balanced(ingest);
	ex_balanced(storeq);
	ex_check(is.retried == DOCS / 5, "every fifth document was retried once");
	ex_check(atomic_load(&parse_runs) == DOCS + DOCS / 5 &&
			 atomic_load(&notify_runs) == DOCS + DOCS / 5,
		 "each retry re-ran parse and notify: the chain starts over");
	ex_check(atomic_load(&stored) == DOCS && atomic_load(&stored_right) == DOCS,
		 "every document stored exactly once, with the step counts above");

	blq_free(ingest);
	blq_free(storeq);
	blq_chain_free(chain);
	blq_async_chain_free(par);
	return ex_failures == 0 ? 0 : 1;
}
