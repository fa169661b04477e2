/*
 * The locations of selected records, for purge, which deletes what it
 * scanned: a scan's record is valid only during its callback. (Redrive
 * is blq_inspect_redrive's, with its own copies.)
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
	snprintf(b->v[b->n].loc, sizeof(b->v[b->n].loc), "%s", r->loc);
	b->n++;
	return 0;
}

void cli_batch_clear(struct cli_batch *b)
{
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
