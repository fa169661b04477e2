/*
 * Copies of selected records, for the subcommands that act on what they
 * scanned (redrive appends then deletes them, purge deletes them): a
 * scan's record is valid only during its callback.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int cli_batch_add(void *ctx, const blq_inspect_record *r)
{
	struct cli_batch *b = ctx;
	if (b->n == b->cap) {
		size_t cap = b->cap != 0 ? b->cap * 2 : 64;
		struct cli_rec *v = realloc(b->v, cap * sizeof(*v));
		if (v == NULL) {
			b->nomem = true;
			return 1;
		}
		b->v = v;
		b->cap = cap;
	}
	struct cli_rec *c = &b->v[b->n];
	snprintf(c->loc, sizeof(c->loc), "%s", r->loc);
	c->data = malloc(r->len + 1); /* + 1: an empty payload still has a buffer */
	if (c->data == NULL) {
		b->nomem = true;
		return 1;
	}
	if (r->len > 0)
		memcpy(c->data, r->data, r->len);
	c->len = r->len;
	c->restores = r->restores;
	c->why = r->why;
	b->n++;
	return 0;
}

void cli_batch_clear(struct cli_batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->v[i].data);
	b->n = 0;
	b->nomem = false;
}

const char **cli_batch_locs(const struct cli_batch *b)
{
	const char **locs = malloc((b->n + 1) * sizeof(*locs));
	if (locs != NULL)
		for (size_t i = 0; i < b->n; i++)
			locs[i] = b->v[i].loc;
	return locs;
}
